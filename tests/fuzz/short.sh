#!/usr/bin/env bash
# short.sh — a short libFuzzer run of tests/fuzz/fuzz_module.c.
#
#   tests/fuzz/short.sh [SECONDS]        (default 30)
#
# Builds build/fuzz/fuzz_module (tests/fuzz/build.sh), makes a seed corpus
# from the spec test suite's modules — build/spec/*/*.wasm when the spec
# runner has produced them, else wast2json over the .wast files of
# WASM_TESTSUITE (default: ../shared/wasm-testsuite beside the repository;
# SIMD files skipped: airlock implements WebAssembly 2.0 without SIMD) — and
# fuzzes for SECONDS. New inputs accumulate in build/fuzz/corpus across runs;
# a crashing input is saved under build/fuzz/artifacts/ and the libFuzzer log
# is kept in build/fuzz/short.log. The last line is the usual summary:
# "1 passed, 0 failed" when nothing crashed, "0 passed, 1 failed" otherwise.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SECONDS_TO_RUN=${1:-30}
OUT=build/fuzz
TESTSUITE=${WASM_TESTSUITE:-$ROOT/../shared/wasm-testsuite}

if ! tests/fuzz/build.sh; then
    echo "fuzz target failed to build"
    echo "0 passed, 1 failed"
    exit 1
fi

seeds=$OUT/seeds
mkdir -p "$seeds" "$OUT/corpus" "$OUT/artifacts"
if compgen -G "build/spec/*/*.wasm" >/dev/null; then
    cp -f build/spec/*/*.wasm "$seeds"/ 2>/dev/null || true
elif [ -z "$(ls -A "$seeds")" ]; then
    if [ -d "$TESTSUITE" ] && command -v wast2json >/dev/null; then
        tmp=$(mktemp -d)
        for wast in "$TESTSUITE"/*.wast; do
            base=$(basename "$wast" .wast)
            case $base in simd_*) continue ;; esac
            wast2json --enable-all "$wast" -o "$tmp/$base.json" >/dev/null 2>&1 ||
                wast2json "$wast" -o "$tmp/$base.json" >/dev/null 2>&1 || true
        done
        for m in "$tmp"/*.wasm; do [ -e "$m" ] && cp "$m" "$seeds/"; done
        rm -rf "$tmp"
    else
        echo "no spec modules found (build/spec/*/*.wasm or $TESTSUITE): starting from an empty corpus" >&2
    fi
fi
echo "seed corpus: $(ls "$seeds" | wc -l) modules; fuzzing for ${SECONDS_TO_RUN}s" >&2

"$OUT/fuzz_module" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2560 \
    -max_len=65536 -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 \
    "$OUT/corpus" "$seeds" >"$OUT/short.log" 2>&1
status=$?
grep -E '^(#[0-9]+[[:space:]]+(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss_mb)' "$OUT/short.log" | tail -n 4 >&2
if [ $status -eq 0 ]; then
    echo "1 passed, 0 failed"
    exit 0
fi
echo "fuzzer found a problem (exit $status); log: $OUT/short.log" >&2
grep -E 'ERROR|SUMMARY|runtime error|fuzz_module:|Test unit written' "$OUT/short.log" | head -n 20 >&2
echo "0 passed, 1 failed"
exit 1
