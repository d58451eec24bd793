#!/usr/bin/env bash
# build.sh — build the libFuzzer target tests/fuzz/fuzz_module.c into
# build/fuzz/fuzz_module, with the engine (src/engine/*.c) compiled in and
# instrumented: coverage for libFuzzer, AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer, which aborts on the first report. Also
# builds tests/fuzz/fuzz_sni.c + src/net/sni.c (the TLS ClientHello SNI
# parser, issue 5) into build/fuzz/fuzz_sni the same way.
#
#   tests/fuzz/build.sh            (CC=clang-14 by default)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CC=${CC:-clang-14}
command -v "$CC" >/dev/null || CC=clang
OUT=build/fuzz
OBJ=$OUT/obj
mkdir -p "$OBJ"

CFLAGS=(-std=c17 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -Iinclude -Isrc/engine
        -fsanitize=address,undefined -fno-sanitize-recover=undefined)

objs=()
for src in src/engine/*.c tests/fuzz/fuzz_module.c; do
    obj=$OBJ/$(basename "${src%.c}").o
    # rebuild when the source or any engine header is newer than the object
    if [ ! -f "$obj" ] || [ -n "$(find "$src" include/airlock.h src/engine -name '*.[ch]' -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_module" "${objs[@]}" -lm -lpthread
echo "built $OUT/fuzz_module" >&2

# fuzz_sni: only sni.c is needed (pure, no library dependencies)
sni_objs=()
for src in src/net/sni.c tests/fuzz/fuzz_sni.c; do
    obj=$OBJ/$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/net/net.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/net -Iinclude -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    sni_objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_sni" "${sni_objs[@]}"
echo "built $OUT/fuzz_sni" >&2
