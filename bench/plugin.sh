#!/usr/bin/env bash
# bench/plugin.sh — speed of airlock's Extism-compatible plugin host (issue 7):
# calls per second of a small plugin function on one core, and the time to
# instantiate a cached (already compiled) plugin, against a native reference
# measured in the same run.
#
#   bench/plugin.sh                    from anywhere
#   SECONDS_EACH=5 INPUT=1024 bench/plugin.sh
#
# The plugin is examples/plugins/count_vowels.c (built here with
# examples/plugins/build.sh, clang-14 for wasm32): its `count_vowels` reads
# the input through the Extism ABI, counts the vowels, keeps a running total
# in a var (var_get + var_set per call) and writes a JSON answer. The driver
# is bench/plugin-calls.c (gcc -O2, linked with the release libairlock.a),
# so what is measured is the library call: input copied in, the guest run,
# the output copied out. The reference is the same count in native C in the
# same process (no JSON, no var): the ratio is the whole cost of the sandbox
# and the ABI per call.
#
# A second plugin, tests/plugin/files.c, imports WASI (wasi-libc's stdio):
# its instantiate time shows what a WASI plugin adds per instance.
# Targets from the issue: 100,000 calls/s, under 50 µs per fresh instance.
# Writes markdown to stdout (paste into docs/benchmarks.md); progress to
# stderr. Exit status: 0 when the measurements ran, 1 if the driver failed,
# 2 when a tool is missing. Not part of the test suite.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${SECONDS_EACH:-3}
INPUT=${INPUT:-1024}
TMP=$(mktemp -d /tmp/airlock-plugin-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
log() { printf '%s\n' "$*" >&2; }
command -v gcc >/dev/null || { log "plugin.sh: gcc not found"; exit 2; }
command -v clang-14 >/dev/null || { log "plugin.sh: clang-14 not found (apt-get install clang-14)"; exit 2; }

log "== building the release library"
flock /tmp/airlock-build.lock make -s -j2 build/release/libairlock.a >&2
log "== building the example plugins"
examples/plugins/build.sh "$TMP/plugins" >&2
examples/plugins/build.sh "$TMP/plugins" tests/plugin/files.c >&2   # imports WASI (fopen, fread)
log "== building bench/plugin-calls.c"
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude bench/plugin-calls.c \
    build/release/libairlock.a $(pkg-config --libs jansson) -lcurl -lsqlite3 -lcrypto \
    -lseccomp -lcap -lpthread -lm -o "$TMP/plugin-calls"

log "== running ($SECONDS_EACH s per measurement, $INPUT-byte input)"
"$TMP/plugin-calls" "$TMP/plugins/count_vowels.wasm" count_vowels "$INPUT" "$SECONDS_EACH" \
    "$TMP/plugins/files.wasm" >"$TMP/out" || { log "plugin.sh: the driver failed"; exit 1; }
sed 's/^/    /' "$TMP/out" >&2
val() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/out"; }

calls=$(val calls_per_s)
call_us=$(val call_us)
native=$(val native_calls_per_s)
native_us=$(val native_call_us)
ratio=$(awk -v a="$call_us" -v b="$native_us" 'BEGIN { printf "%.1f", a / b }')
cat <<EOF
| Measurement (\`bench/plugin.sh\`, $INPUT-byte input, one thread) | airlock | native C reference | ratio |
| --- | ---: | ---: | ---: |
| count_vowels calls per second | $calls | $native | |
| time per call (µs) | $call_us | $native_us | ${ratio}x |
| fresh instance of a cached plugin: mean / median / p99 (µs) | $(val instantiate_mean_us) / $(val instantiate_median_us) / $(val instantiate_p99_us) | | |
| fresh instance of a cached plugin that imports WASI (tests/plugin/files.c): mean / median / p99 (µs) | $(val wasi_instantiate_mean_us) / $(val wasi_instantiate_median_us) / $(val wasi_instantiate_p99_us) | | |

Targets: 100,000 calls/s; under 50 µs per fresh instance.
EOF
