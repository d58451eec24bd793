#!/usr/bin/env bash
# python-startup.sh — wall time of `print(1)` in CPython for WASI: airlock's
# interpreter (`airlock python`) against node 20's V8 running the same
# python.wasm through node:wasi (tools/python-wasi/run-node.mjs).
#
#   bench/python-startup.sh [RUNS]
#
# Both run the same build/python/python.wasm with the same guest layout (the
# stdlib preopened at /usr/local/lib/python3.11, PYTHONHOME=/usr/local, no
# other preopen). Each time is a whole process, start to exit, as a user sees
# it: reading and compiling (node) or decoding and validating (airlock)
# python.wasm, CPython's start-up, print(1). The runs are interleaved,
# RUNS times each (default 5); the best and the median are printed as a
# markdown table, with the ratio of the bests.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
py=build/python/python.wasm
airlock=build/release/airlock

if [[ ! -f $py ]]; then
    echo "python-startup: no $py; run tools/build-python.sh first" >&2
    exit 1
fi
make -s release >/dev/null

airlock_cmd=("$airlock" python -c 'print(1)')
node_cmd=(node tools/python-wasi/run-node.mjs --no-map "$py" -c 'print(1)')

# Wall time of one run in tenths of a millisecond; the output must be "1".
run_once() {
    local s e out
    s=$(date +%s%N)
    out=$("$@")
    e=$(date +%s%N)
    if [[ $out != 1 ]]; then
        echo "python-startup: '$*' printed '$out', not 1" >&2
        exit 1
    fi
    echo $(((e - s) / 100000))
}

best() { sort -n | head -n 1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ms() { printf '%d.%d' $(($1 / 10)) $(($1 % 10)); } # tenths of a ms -> "12.3"

a_times=() n_times=()
for _ in $(seq "$runs"); do
    a_times+=("$(run_once "${airlock_cmd[@]}")")
    n_times+=("$(run_once "${node_cmd[@]}")")
done
a_best=$(printf '%s\n' "${a_times[@]}" | best)
n_best=$(printf '%s\n' "${n_times[@]}" | best)
a_med=$(printf '%s\n' "${a_times[@]}" | median)
n_med=$(printf '%s\n' "${n_times[@]}" | median)

echo "python.wasm: $(stat -c %s "$py") bytes; $runs runs each, interleaved;" \
    "$(node --version) on $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo
echo "| runner | best ms | median ms |"
echo "|---|---:|---:|"
echo "| \`airlock python -c 'print(1)'\` (interpreter) | $(ms "$a_best") | $(ms "$a_med") |"
echo "| node $(node --version) node:wasi (V8: Liftoff + TurboFan) | $(ms "$n_best") | $(ms "$n_med") |"
echo
awk -v a="$a_best" -v n="$n_best" 'BEGIN { printf "airlock / node (best): %.2fx\n", a / n }'
