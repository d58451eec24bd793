#!/usr/bin/env bash
# fuel-overhead.sh — what instruction metering costs the interpreter.
#
#   bench/fuel-overhead.sh [BASE_REV] [RUNS]
#
# Fuel accounting is always compiled into the internal code (an unmetered
# store simply starts with a budget it cannot exhaust), so its cost is
# measured against the engine as it was before metering existed: BASE_REV,
# default 1573e6513fd1d8a4d21a2ea551e409e9795f91f5, the last commit without fuel. Both release builds
# run every bench program RUNS times (default 5), interleaved; best times and
# their ratio are printed, then the geometric mean of the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:-1573e6513fd1d8a4d21a2ea551e409e9795f91f5}
runs=${2:-5}

make -s release >/dev/null
make -s -C bench programs >/dev/null
worktree=build/bench/base-src
rm -rf "$worktree"
git worktree add -f --detach "$worktree" "$base_rev" >/dev/null 2>&1
trap 'git worktree remove --force "$worktree" >/dev/null 2>&1 || true' EXIT
make -s -C "$worktree" release >/dev/null

now_ms() { date +%s%N; }
run_once() { # BINARY PROGRAM
    local s e t
    s=$(now_ms); "$1" run "build/bench/$2.wasm" --invoke run >/dev/null; e=$(now_ms)
    t=$(( (e - s) / 100000 ))
    echo "$t"
}

echo "| program | before fuel ms | with fuel ms | ratio |"
echo "|---|---:|---:|---:|"
for p in fib nbody sha256 sort matmul lz; do
    b=999999999 a=999999999
    for _ in $(seq "$runs"); do
        t=$(run_once "$worktree/build/release/airlock" "$p"); [ "$t" -lt "$b" ] && b=$t
        t=$(run_once build/release/airlock "$p"); [ "$t" -lt "$a" ] && a=$t
    done
    echo "$p $b $a"
done | awk '{ r = $3 / $2; g += log(r); n++
              printf "| %s | %.1f | %.1f | %.3f |\n", $1, $2 / 10, $3 / 10, r }
            END { printf "| **geometric mean** | | | **%.3f** |\n", exp(g / n) }'
