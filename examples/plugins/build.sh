#!/usr/bin/env bash
# examples/plugins/build.sh — compile C plugins (pdk/airlock_pdk.h) to wasm32
# with Debian's clang-14 and wasi-libc, one OUT_DIR/NAME.wasm per NAME.c.
#
#   examples/plugins/build.sh OUT_DIR            every examples/plugins/*.c
#   examples/plugins/build.sh OUT_DIR FILE.c...  just these (tests/plugin/hostile.c)
#
# The flags: --target=wasm32-wasi against wasi-libc (the sysroot is the
# directory holding lib/wasm32-wasi, /usr on Debian, found with dpkg -L);
# -mexec-model=reactor links wasi-libc's reactor start file (no main; an
# exported _initialize that runs constructors, which the host calls once),
# and PDK_EXPORT marks the plugin's functions for export. Compiling (-O2) and
# linking are two steps: clang runs binaryen's wasm-opt after an optimised
# link when it is installed, which drops the name section (traps would name
# no function) and makes the output depend on what the machine has.
# --strip-debug keeps the modules small (the name section stays).
#
# CLANG overrides the compiler (default clang-14, else clang). Each module is
# written to a temporary name and renamed into place, so a reader never sees
# a half-written file. Any failed compile stops the script with its compiler
# messages and a non-zero exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ $# -lt 1 || -z $1 ]]; then
    echo "usage: $0 OUT_DIR [FILE.c...]" >&2
    exit 2
fi
OUT=$1
shift
CLANG=${CLANG:-$(command -v clang-14 || command -v clang || true)}
if [[ -z $CLANG ]]; then
    echo "build.sh: clang-14 not found (apt-get install clang-14 lld-14 wasi-libc)" >&2
    exit 1
fi
CRT=$(dpkg -L wasi-libc 2>/dev/null | grep -m1 '/wasm32-wasi/crt1-reactor\.o$' || true)
if [[ -z $CRT ]]; then
    echo "build.sh: wasi-libc not found (apt-get install wasi-libc)" >&2
    exit 1
fi
SYSROOT=${CRT%/lib/wasm32-wasi/crt1-reactor.o}
if [[ $# -eq 0 ]]; then
    set -- "$ROOT"/examples/plugins/*.c
fi
mkdir -p "$OUT"
for src in "$@"; do
    name=$(basename "$src" .c)
    tmp=$(mktemp "$OUT/.$name.XXXXXX")
    if ! "$CLANG" --target=wasm32-wasi --sysroot="$SYSROOT" -std=c17 -O2 -Wall -Wextra -Werror \
        -I"$ROOT/pdk" -c -o "$tmp.o" "$src" ||
        ! "$CLANG" --target=wasm32-wasi --sysroot="$SYSROOT" -mexec-model=reactor \
            -Wl,--strip-debug -o "$tmp" "$tmp.o"; then
        rm -f "$tmp" "$tmp.o"
        echo "build.sh: failed to compile $src" >&2
        exit 1
    fi
    rm -f "$tmp.o"
    chmod 644 "$tmp"
    mv -f "$tmp" "$OUT/$name.wasm"
    echo "built $OUT/$name.wasm" >&2
done
