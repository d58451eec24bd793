#!/usr/bin/env bash
# differential.sh — differential fuzzing of airlock against node (V8).
#
#   tests/fuzz/differential.sh [SECONDS]      (default 180)
#   ASAN=1 tests/fuzz/differential.sh 60      airlock built with ASan+UBSan
#
# Loop until SECONDS have passed: take 4 KiB from /dev/urandom, let binaryen
# turn it into a random valid module (`wasm-opt -ttf`, restricted to
# WebAssembly 2.0 features: MVP + mutable globals, sign extension,
# non-trapping float-to-int, bulk memory, multi-value, reference types — no
# SIMD, threads, tail calls, exceptions or GC), run it in node
# (tests/fuzz/ref-node.mjs) and in airlock (tests/fuzz/diff_driver.c, linked
# against build/release/libairlock.a), and compare the two traces line by
# line. A mismatch keeps the module and both traces as
# build/fuzz/mismatch-N.{wasm,node.txt,airlock.txt}.
#
# The module is passed through binaryen's --denan first: NaN bit patterns are
# nondeterministic in the spec, and without it a NaN stored to memory and
# read back as an integer could differ between two correct engines.
#
# Modules are skipped (not counted) when binaryen fails or emits a module node
# rejects: binaryen 108 sometimes writes typed-function-reference types when
# reference types are enabled, which is not WebAssembly 2.0.
# The last line is "N passed, N failed" over the modules compared.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DURATION=${1:-180}
OUT=build/fuzz
WORK=$OUT/diff-work
mkdir -p "$OUT" "$WORK"

for tool in wasm-opt node; do
    command -v $tool >/dev/null || { echo "$tool not found (apt-get install binaryen nodejs)"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- build the airlock side ----------------------------------------------------
if [ "${ASAN:-0}" = 1 ]; then
    LIB=build/asan/libairlock.a
    DRIVER_FLAGS=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined)
    target=asan
else
    LIB=build/release/libairlock.a
    DRIVER_FLAGS=(-O2 -g)
    target=release
fi
make -s "$LIB" >&2 || true
if [ ! -f "$LIB" ]; then
    echo "no $LIB: the engine does not build yet"
    echo "0 passed, 1 failed"
    exit 1
fi
DRIVER=$OUT/diff_driver-$target
if ! ${CC:-gcc} -std=c17 -Wall -Wextra "${DRIVER_FLAGS[@]}" -Iinclude tests/fuzz/diff_driver.c "$LIB" -lm \
    -o "$DRIVER"; then
    echo "diff_driver failed to build"
    echo "0 passed, 1 failed"
    exit 1
fi

BASE=(--mvp-features --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
      --enable-bulk-memory)
NODE=(node --experimental-wasm-type-reflection tests/fuzz/ref-node.mjs)

passed=0 failed=0 skipped=0 generated=0
have_wabt=0
command -v wasm-validate >/dev/null && have_wabt=1
next_mismatch() {
    local n=1
    while [ -e "$OUT/mismatch-$n.wasm" ]; do n=$((n + 1)); done
    echo $n
}

end=$((SECONDS + DURATION))
i=0
while [ $SECONDS -lt $end ]; do
    i=$((i + 1))
    case $((i % 4)) in
        0) features=(--enable-reference-types) ;;                      # ~20% usable with binaryen 108
        1|2) features=(--enable-multivalue) ;;
        3) features=(--enable-multivalue --enable-reference-types) ;;  # mostly unusable, but cheap
    esac
    head -c 4096 /dev/urandom > "$WORK/in.bin"
    if ! wasm-opt -ttf "$WORK/in.bin" "${BASE[@]}" "${features[@]}" --denan -o "$WORK/m.wasm" >/dev/null 2>&1; then
        skipped=$((skipped + 1))
        continue
    fi
    generated=$((generated + 1))
    # wabt's validator starts faster than node: weed out binaryen's invalid output
    if [ $have_wabt = 1 ] && ! wasm-validate "$WORK/m.wasm" >/dev/null 2>&1; then
        skipped=$((skipped + 1))
        continue
    fi
    timeout 30 "${NODE[@]}" "$WORK/m.wasm" > "$WORK/node.txt" 2>"$WORK/node.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        skipped=$((skipped + 1))   # 3: node rejects binaryen's output; 4: odd imports; 124: node hung
        continue
    fi
    timeout 30 "$DRIVER" "$WORK/m.wasm" > "$WORK/airlock.txt" 2>"$WORK/airlock.err"
    arc=$?
    if [ $arc -eq 0 ] && cmp -s "$WORK/node.txt" "$WORK/airlock.txt"; then
        passed=$((passed + 1))
        continue
    fi
    failed=$((failed + 1))
    n=$(next_mismatch)
    cp "$WORK/m.wasm" "$OUT/mismatch-$n.wasm"
    cp "$WORK/node.txt" "$OUT/mismatch-$n.node.txt"
    cp "$WORK/airlock.txt" "$OUT/mismatch-$n.airlock.txt"
    cp "$WORK/airlock.err" "$OUT/mismatch-$n.airlock.err"
    case $arc in
        0) why="traces differ" ;;
        3) why="airlock rejected a module node accepts" ;;
        124) why="airlock timed out (30 s)" ;;
        *) why="diff_driver exited with status $arc" ;;
    esac
    echo "MISMATCH $OUT/mismatch-$n.wasm: $why"
    diff "$OUT/mismatch-$n.node.txt" "$OUT/mismatch-$n.airlock.txt" | head -n 8 | sed 's/^/    /'
    head -n 3 "$WORK/airlock.err" | sed 's/^/    airlock stderr: /'
done

echo "differential fuzzing for ${DURATION}s: $generated modules generated, $((passed + failed)) compared," \
     "$skipped skipped (binaryen failed or node rejected the module)"
[ $failed -eq 0 ] || echo "mismatching modules and traces: $OUT/mismatch-*.wasm / .node.txt / .airlock.txt"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
