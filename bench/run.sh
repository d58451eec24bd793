#!/usr/bin/env bash
# run.sh — airlock's benchmark: six compute programs, each run natively
# (gcc -O2), in airlock (the CLI) and in node 20 (V8), plus the
# load+validate+translate throughput of `airlock validate` on a large module.
#
#   bench/run.sh                 from anywhere; builds what it needs
#   RUNS=5 bench/run.sh          best of 5 instead of 3
#   PROGRAMS="fib sort" bench/run.sh
#   AIRLOCK=path/to/airlock bench/run.sh
#
# Writes markdown to stdout (paste into docs/benchmarks.md); progress and
# tool chatter go to stderr. Timings are the best (minimum) of RUNS runs,
# measured by hyperfine after one warm-up run:
#   native ms   whole process of build/bench/NAME.native
#   airlock ms  whole process of `airlock run NAME.wasm --invoke run`
#               (start-up, load, validate, translate, instantiate and the call)
#   node ms     the run() call alone, timed inside node with performance.now()
#               (best of NODE_CALLS calls in one instance, so after V8 tier-up);
#               node's whole process time is reported beside it for context.
# Every runner's checksum must equal native's; a mismatch is flagged in the
# table and that program is left out of the geometric means.
# Exit status: 0 when every checksum matched (or airlock is missing), 1 otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=build/bench
RUNS=${RUNS:-3}
NODE_CALLS=${NODE_CALLS:-5}
AIRLOCK=${AIRLOCK:-build/release/airlock}
PROGRAMS=${PROGRAMS:-"fib nbody sha256 sort matmul lz"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

log() { printf '%s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { log "run.sh: '$1' not found (apt-get install $2)"; exit 2; }; }
need hyperfine hyperfine
need node nodejs
need clang-14 clang-14
need wat2wasm wabt

log "== building benchmark inputs"
make -s -f bench/Makefile >&2

if [ "$AIRLOCK" = build/release/airlock ]; then
    log "== make release"
    make -s release >&2 || log "== 'make release' failed: using the existing binary, if any"
fi
have_airlock=0
if [ -x "$AIRLOCK" ]; then have_airlock=1; else log "== no airlock binary at $AIRLOCK: its columns will be empty"; fi

# The first integer in a runner's output that is not part of a word: accepts
# "123", "123 : i32", "i32:123", "run() = 123" alike.
checksum_of() {
    grep -oE '(^|[^A-Za-z0-9_.])-?[0-9]+' | head -n 1 | tr -cd '0-9-' || true
}

# best_ms NAME -- CMD...: minimum wall time in ms over RUNS runs (hyperfine).
best_ms() {
    local name=$1
    shift 2
    local csv="$TMP/$name.csv"
    if ! hyperfine --shell=none --style none --warmup 1 --runs "$RUNS" \
        --export-csv "$csv" -- "$(printf '%q ' "$@")" >&2 2>&1; then
        echo ""
        return
    fi
    # columns: command,mean,stddev,median,user,system,min,max (seconds)
    awk -F, 'NR == 2 { printf "%.1f", $7 * 1000 }' "$csv"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.2f", a / b }'; }
geomean() { awk '{ if ($1 != "") { s += log($1); n++ } } END { if (n) printf "%.2f", exp(s / n); else print "" }'; }
dash() { if [ -n "$1" ]; then printf '%s' "$1"; else printf '—'; fi; }

failures=0
rows=()
: > "$TMP/r_native"
: > "$TMP/r_node"

for p in $PROGRAMS; do
    wasm=$OUT/$p.wasm
    log "== $p"
    native_sum=$("$OUT/$p.native" | checksum_of)
    node_out=$(node bench/node-runner.mjs "$wasm" "$NODE_CALLS")
    node_sum=$(printf '%s\n' "$node_out" | head -n 1 | checksum_of)
    node_call=$(printf '%s\n' "$node_out" | sed -n 's/.*best=\([0-9.]*\).*/\1/p')
    node_call=$(awk -v v="$node_call" 'BEGIN { printf "%.1f", v }')
    native_ms=$(best_ms "$p-native" -- "$OUT/$p.native")
    node_proc=$(best_ms "$p-node" -- node bench/node-runner.mjs "$wasm" 1)

    note=""
    [ "$node_sum" = "$native_sum" ] || { note="node checksum $node_sum ≠ $native_sum"; failures=$((failures + 1)); }

    al_ms=""
    if [ $have_airlock = 1 ]; then
        al_status=0
        al_out=$("$AIRLOCK" run "$wasm" --invoke run 2>"$TMP/al.err") || al_status=$?
        al_sum=$(printf '%s\n' "$al_out" | checksum_of)
        if [ $al_status -ne 0 ]; then
            note="${note:+$note; }airlock failed (exit $al_status): $(head -c 200 "$TMP/al.err" | tr '\n' ' ')"
            failures=$((failures + 1))
        elif [ "$al_sum" != "$native_sum" ]; then
            note="${note:+$note; }airlock checksum '$al_sum' ≠ $native_sum (output: $(printf '%s' "$al_out" | head -c 80 | tr '\n' ' '))"
            failures=$((failures + 1))
        else
            al_ms=$(best_ms "$p-airlock" -- "$AIRLOCK" run "$wasm" --invoke run)
            ratio "$al_ms" "$native_ms" >> "$TMP/r_native"; echo >> "$TMP/r_native"
            ratio "$al_ms" "$node_call" >> "$TMP/r_node"; echo >> "$TMP/r_node"
        fi
    fi
    rows+=("| $p | $(dash "$native_ms") | $(dash "$al_ms") | $(dash "$node_call") | $(dash "$node_proc") | $(dash "$(ratio "$al_ms" "$native_ms")") | $(dash "$(ratio "$al_ms" "$node_call")") | $native_sum${note:+ ⚠ $note} |")
done

# ---- load + validate + translate throughput -----------------------------------
log "== throughput"
big=$OUT/big.wasm
tiny=$OUT/tiny.wasm
big_bytes=$(stat -c %s "$big")
big_mb=$(awk -v b="$big_bytes" 'BEGIN { printf "%.2f", b / 1048576 }')
mbps() { awk -v mb="$big_mb" -v t="$1" -v t0="$2" 'BEGIN { d = t - t0; if (t == "" || d <= 0) print ""; else printf "%.1f", mb / (d / 1000) }'; }

al_tiny="" al_big="" al_note=""
if [ $have_airlock = 1 ]; then
    if "$AIRLOCK" validate "$big" >"$TMP/v.out" 2>&1 && "$AIRLOCK" validate "$tiny" >/dev/null 2>&1; then
        al_tiny=$(best_ms al-tiny -- "$AIRLOCK" validate "$tiny")
        al_big=$(best_ms al-big -- "$AIRLOCK" validate "$big")
    else
        al_note="airlock validate failed: $(head -c 200 "$TMP/v.out" | tr '\n' ' ')"
        failures=$((failures + 1))
    fi
fi
wabt_tiny=$(best_ms wabt-tiny -- wasm-validate "$tiny")
wabt_big=$(best_ms wabt-big -- wasm-validate "$big")
# node: the first `new WebAssembly.Module` in a fresh process (V8 caches
# compiled modules by their bytes, so a second compile in one process is not a
# measurement), best of RUNS processes. Default flags: functions are validated
# up front (on background threads) but compiled lazily on first call. With
# --no-wasm-lazy-compilation --single-threaded every function is validated
# and compiled by Liftoff on the main thread, the closest match to airlock.
node_compile() {
    local best="" t
    for _ in $(seq "$RUNS"); do
        t=$(node "$@" -e '
const b = require("fs").readFileSync(process.argv[1]);
const t = performance.now(); new WebAssembly.Module(b);
console.log((performance.now() - t).toFixed(1));' "$big") || return 0
        best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
    done
    echo "$best"
}
node_lazy=$(node_compile)
node_eager=$(node_compile --no-wasm-lazy-compilation --single-threaded)

# ---- report ------------------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
al_version=""
[ $have_airlock = 1 ] && al_version=$("$AIRLOCK" --version 2>/dev/null | head -n 1 || true)

cat <<EOF
## Compute benchmarks

Measured $(date -u +%Y-%m-%d) on ${cpu:-unknown CPU} ($(nproc) cores), best of $RUNS runs after one warm-up.
Native: gcc $(gcc -dumpversion) -O2. Wasm: clang-14 -O2, freestanding, no imports. Node: $(node --version) (V8).${al_version:+ airlock: $al_version.}

- **native ms**, **airlock ms**: whole process (\`NAME.native\`, \`airlock run NAME.wasm --invoke run\`), so airlock's
  figure includes start-up, decoding, validation, translation and instantiation.
- **node ms (call)**: the \`run()\` call alone, best of $NODE_CALLS calls in one instance (after V8 tiers up to TurboFan);
  **node ms (process)**: the whole \`node bench/node-runner.mjs NAME.wasm 1\` process, for context.
- Ratios divide airlock's time by native's and by node's call time; lower is better.

| program | native ms | airlock ms | node ms (call) | node ms (process) | airlock/native | airlock/node | checksum |
|---|---:|---:|---:|---:|---:|---:|---|
EOF
for r in "${rows[@]}"; do printf '%s\n' "$r"; done
printf '| **geometric mean** | | | | | **%s** | **%s** | |\n' \
    "$(dash "$(geomean < "$TMP/r_native")")" "$(dash "$(geomean < "$TMP/r_node")")"

cat <<EOF

## Load, validate and translate throughput

\`$big\`: a generated module (bench/gen-big.sh) of $big_bytes bytes ($big_mb MiB), 20000 functions with loops,
branches, br_table, calls, call_indirect, memory and float traffic. \`airlock validate\` decodes, validates and
translates every function; the process start cost is measured on the empty module \`$tiny\` and subtracted.

| tool | empty module ms | big module ms | net ms | MiB/s |
|---|---:|---:|---:|---:|
| airlock validate | $(dash "$al_tiny") | $(dash "$al_big") | $(dash "$(awk -v a="$al_big" -v b="$al_tiny" 'BEGIN { if (a != "" && b != "") printf "%.1f", a - b }')") | $(dash "$(mbps "$al_big" "$al_tiny")")${al_note:+ ⚠ $al_note} |
| wasm-validate (wabt $(wasm-validate --version 2>/dev/null)) | $(dash "$wabt_tiny") | $(dash "$wabt_big") | $(dash "$(awk -v a="$wabt_big" -v b="$wabt_tiny" 'BEGIN { if (a != "" && b != "") printf "%.1f", a - b }')") | $(dash "$(mbps "$wabt_big" "$wabt_tiny")") |
| node \`new WebAssembly.Module\`, default flags (validate; compile lazily) | | | $(dash "$node_lazy") | $(dash "$(mbps "$node_lazy" 0)") |
| node \`new WebAssembly.Module\`, \`--no-wasm-lazy-compilation --single-threaded\` (validate + Liftoff) | | | $(dash "$node_eager") | $(dash "$(mbps "$node_eager" 0)") |
EOF

if [ $failures -gt 0 ]; then
    log "run.sh: $failures checksum or validation failure(s), see the ⚠ notes"
    exit 1
fi
exit 0
