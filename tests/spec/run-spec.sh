#!/usr/bin/env bash
# run-spec.sh — run the WebAssembly spec test suite against airlock.
#
#   tests/spec/run-spec.sh [--verbose] [RUNNER] [NAME...]
#
# Converts every <spec>/*.wast with wabt's wast2json into build/spec/<name>/
# at test time and runs RUNNER (default build/asan/spec-runner) on each
# script in its own process, so that an engine crash or hang costs one file,
# not the whole run. NAME... restricts the run to those scripts (e.g. i32 call).
#
# <spec> is $AIRLOCK_SPEC_DIR if set (the directory holding the .wast files,
# or a shared/ directory containing wasm-testsuite/), otherwise
# $(git rev-parse --show-toplevel)/../shared/wasm-testsuite.
# simd_*.wast are listed as not yet supported; proposals/ is not read.
#
# Counting: a script counts its commands (see spec-runner). A .wast that
# wast2json cannot convert, a runner that crashes, times out
# ($AIRLOCK_SPEC_TIMEOUT seconds, default 600) or exits non-zero without
# reporting a failure (e.g. a LeakSanitizer report) adds one failure to that
# file. Each file's full runner output is kept in build/spec/<name>/runner.log.
#
# Output: a per-file table, the skipped count, and last "N passed, N failed".
# Exit status is non-zero if anything failed. $AIRLOCK_SPEC_JOBS sets the
# number of scripts run at once (default: number of CPUs).
set -u

verbose=0
if [ "${1:-}" = "--verbose" ] || [ "${1:-}" = "-v" ]; then
    verbose=1
    shift
fi

repo_root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null) ||
    repo_root=$(cd "$(dirname "$0")/../.." && pwd)

runner=${1:-build/asan/spec-runner}
[ $# -gt 0 ] && shift
# Resolve the runner before changing directory.
case $runner in
/*) ;;
*) [ -e "$runner" ] && runner="$(pwd)/$runner" || runner="$repo_root/$runner" ;;
esac

if [ -n "${AIRLOCK_SPEC_DIR:-}" ]; then
    spec_dir=$AIRLOCK_SPEC_DIR
    [ -d "$spec_dir/wasm-testsuite" ] && spec_dir=$spec_dir/wasm-testsuite
else
    spec_dir=$repo_root/../shared/wasm-testsuite
fi

cd "$repo_root" || exit 2
out_root=build/spec
timeout_seconds=${AIRLOCK_SPEC_TIMEOUT:-600}
jobs=${AIRLOCK_SPEC_JOBS:-$(nproc 2>/dev/null || echo 4)}

die() {
    echo "run-spec.sh: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

[ -d "$spec_dir" ] || die "spec test directory not found: $spec_dir (set AIRLOCK_SPEC_DIR)"
spec_dir=$(cd "$spec_dir" && pwd)
[ -x "$runner" ] || die "runner not found or not executable: $runner"
command -v wast2json >/dev/null || die "wast2json not found (apt-get install wabt)"

# ---- which scripts -----------------------------------------------------------

if [ $# -gt 0 ]; then
    candidates=("$@") # a name without a .wast fails in wast2json, visibly
else
    candidates=()
    for wast in "$spec_dir"/*.wast; do
        [ -e "$wast" ] && candidates+=("$(basename "$wast" .wast)")
    done
fi
names=()
simd_names=()
for name in "${candidates[@]}"; do
    case $name in
    simd_*) simd_names+=("$name") ;;
    *) names+=("$name") ;;
    esac
done
[ ${#names[@]} -gt 0 ] || [ ${#simd_names[@]} -gt 0 ] || die "no .wast files selected in $spec_dir"

# ---- one script: convert, run, write build/spec/<name>/result --------------------
# result holds: passed failed skipped note

run_one() {
    local name=$1 dir=$out_root/$1
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! wast2json "$spec_dir/$name.wast" -o "$dir/$name.json" >"$dir/wast2json.log" 2>&1; then
        echo "0 1 0 wast2json failed: $(head -n 1 "$dir/wast2json.log")" >"$dir/result"
        return
    fi
    local rc=0
    timeout "$timeout_seconds" "$runner" --verbose "$dir/$name.json" >"$dir/runner.log" 2>&1 || rc=$?
    local counts
    counts=$(sed -n "s/^  $name \([0-9]*\) passed \([0-9]*\) failed \([0-9]*\) skipped\$/\1 \2 \3/p" \
        "$dir/runner.log" | tail -n 1)
    if [ -z "$counts" ]; then
        if [ $rc -eq 124 ]; then
            echo "0 1 0 timed out after ${timeout_seconds}s" >"$dir/result"
        else
            echo "0 1 0 runner crashed (exit status $rc)" >"$dir/result"
        fi
        return
    fi
    local passed failed skipped
    read -r passed failed skipped <<<"$counts"
    if [ $rc -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "$passed 1 $skipped runner exited with status $rc (sanitizer report?)" >"$dir/result"
    else
        echo "$passed $failed $skipped" >"$dir/result"
    fi
}

echo "spec tests: ${#names[@]} scripts from $spec_dir, $jobs at a time"
running=0
for name in "${names[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$name" &
    running=$((running + 1))
done
wait

# ---- report ------------------------------------------------------------------

show_failures() { # NAME: failure lines of its log (all with --verbose, else a few)
    local log=$out_root/$1/runner.log limit=3
    [ -f "$log" ] || log=$out_root/$1/wast2json.log
    [ $verbose -eq 1 ] && limit=1000000
    grep -E 'FAILED|ERROR|runtime error|^    #[0-3] ' "$log" | head -n "$limit" | sed 's/^ */      /'
    [ $verbose -eq 1 ] || echo "      (all of it: $log)"
}

total_passed=0 total_failed=0 total_skipped=0
printf '\n%-32s %8s %8s %8s\n' "script" "passed" "failed" "skipped"
for name in "${names[@]}"; do
    passed=0 failed=1 skipped=0 note="no result recorded"
    [ -f "$out_root/$name/result" ] && read -r passed failed skipped note <"$out_root/$name/result"
    printf '%-32s %8d %8d %8d%s\n' "$name" "$passed" "$failed" "$skipped" "${note:+  $note}"
    [ "$failed" -gt 0 ] && show_failures "$name"
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    total_skipped=$((total_skipped + skipped))
done
printf '%-32s %8d %8d %8d\n' "total" "$total_passed" "$total_failed" "$total_skipped"

if [ ${#simd_names[@]} -gt 0 ]; then
    echo
    echo "not yet supported (SIMD): ${#simd_names[@]} scripts"
    echo "${simd_names[*]}" | fmt -w 96 | sed 's/^/  /'
fi

echo "$total_skipped skipped (text-format modules)"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
