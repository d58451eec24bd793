#!/usr/bin/env bash
# tests/cli/test-run-wasi.sh — end-to-end tests of `airlock run` running WASI
# commands under a policy (src/cli/run_wasi.c -> al_run_wasm -> the WASI host).
#
# The guests are small C programs, tests/cli/wasi-fixtures/*.c, compiled here
# with clang-14 --target=wasm32-wasi against Debian's wasi-libc (found with
# dpkg -L) into $BUILD_DIR (default build/cli-fixtures-wasi). Each check runs
# $AIRLOCK (default build/asan/airlock) and looks at the exit status, stdout
# (exactly) and stderr (by pattern); --json output is parsed with node. A
# sanitizer report on stderr always fails the check. Prints one line per
# check and ends with "N passed, N failed"; exits non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
AIRLOCK=${AIRLOCK:-build/asan/airlock}
BUILD_DIR=${BUILD_DIR:-build/cli-fixtures-wasi}
SRC=tests/cli/wasi-fixtures

# shellcheck source=tests/cli/lib/report.bash
source tests/cli/lib/report.bash

# ---- toolchain and fixtures ------------------------------------------------------
if [[ ! -x $AIRLOCK ]]; then
    fail "airlock binary exists" "not found or not executable: $AIRLOCK (run make asan)"
    finish
fi
CLANG=$(command -v clang-14 || command -v clang || true)
# The sysroot is the directory holding lib/wasm32-wasi/ (Debian: /usr).
CRT=$(dpkg -L wasi-libc 2>/dev/null | grep -m1 '/wasm32-wasi/crt1-command\.o$' || true)
SYSROOT=${CRT%/lib/wasm32-wasi/crt1-command.o}
for tool in "$CLANG" "$SYSROOT" "$(command -v node || true)" "$(command -v wat2wasm || true)"; do
    if [[ -z $tool ]]; then
        fail "toolchain available" "need clang-14, wasi-libc, node and wat2wasm (run tools/setup.sh)"
        finish
    fi
done

# Everything this run writes goes under its own directory, so two runs at
# once (make check in two shells) cannot see each other's files; fixtures are
# compiled to a temporary name and renamed into place, atomically.
mkdir -p "$BUILD_DIR"
RUN_DIR=$(mktemp -d "$BUILD_DIR/run.XXXXXX") || exit 2
trap 'rm -rf "$RUN_DIR"' EXIT
OUT=$RUN_DIR/stdout
ERR=$RUN_DIR/stderr
for c in "$SRC"/*.c; do
    base=$(basename "$c" .c)
    if ! "$CLANG" --target=wasm32-wasi --sysroot="$SYSROOT" -O2 "$c" -o "$RUN_DIR/$base.wasm" 2>"$ERR" ||
        ! mv -f "$RUN_DIR/$base.wasm" "$BUILD_DIR/$base.wasm"; then
        fail "compile fixture $base" "$(cat "$ERR")"
        finish
    fi
done
for wat in needs-import values; do
    { wat2wasm tests/cli/fixtures/$wat.wat -o "$RUN_DIR/$wat.wasm" 2>"$ERR" &&
        mv -f "$RUN_DIR/$wat.wasm" "$BUILD_DIR/$wat.wasm"; } ||
        fail "compile fixture $wat" "$(cat "$ERR")"
done
W=$BUILD_DIR
A=$AIRLOCK

# A scratch directory for --dir, with a symlink to it to check canonical paths.
SCRATCH=$RUN_DIR/scratch
mkdir -p "$SCRATCH"
printf 'from the host\n' >"$SCRATCH/in.txt"
ln -s scratch "$RUN_DIR/scratch-link"
CANON=$(cd "$SCRATCH" && pwd -P)

# ---- helpers: run_airlock, check, expect, usage_error, json (lib/expect.bash) -----------------
SUBCOMMAND=run
RUN_TIMEOUT=60
# shellcheck source=lib/expect.bash
source "$(dirname "$0")/lib/expect.bash"


# ---- a WASI command ---------------------------------------------------------------------
expect "hello world" 0 "hello, world" "" -- "$A" run "$W/hello.wasm"
expect "options after MODULE" 0 "hello, world" "" -- "$A" run "$W/hello.wasm" --fuel 100000000
expect "exit code passthrough" 3 "" "^exiting with 3$" -- "$A" run "$W/exit.wasm" -- 3
expect "exit 0" 0 "" "exiting with 0" -- "$A" run "$W/exit.wasm" -- 0
expect "exit 255" 255 "" "exiting with 255" -- "$A" run "$W/exit.wasm" -- 255
expect "exit 256 is not success" 1 "" "exiting with 256" -- "$A" run "$W/exit.wasm" -- 256
expect "args after --" 0 $'argc=5\n[args.wasm]\n[a]\n[b c]\n[--x]\n[-5]' "" \
    -- "$A" run "$W/args.wasm" -- a "b c" --x -5
expect "no args" 0 $'argc=1\n[args.wasm]' "" -- "$A" run "$W/args.wasm"

# ---- environment: only --env, never the host's ----------------------------------------------
expect "--env visible, host env not" 0 $'FOO=bar\nEMPTY=' "" \
    -- env HOME=/root PATH=/usr/bin:/bin SECRET=x "$A" run --env FOO=bar --env EMPTY= "$W/env.wasm"
expect "empty environment by default" 0 "" "" -- env SECRET=x "$A" run "$W/env.wasm"
expect "--env: the last KEY wins" 0 "K=2" "" -- "$A" run --env K=1 --env=K=2 "$W/env.wasm"
expect "--env value with '='" 0 "K=a=b" "" -- "$A" run --env K=a=b "$W/env.wasm"

# ---- stdin ------------------------------------------------------------------------------------
expect "stdin empty by default" 0 "" "^0 bytes$" -- "$A" run "$W/cat.wasm"
expect "--stdin FILE" 0 "from the host" "^14 bytes$" -- "$A" run --stdin "$SCRATCH/in.txt" "$W/cat.wasm"
STDIN=$SCRATCH/in.txt expect "--stdin - reads airlock's stdin" 0 "from the host" "^14 bytes$" \
    -- "$A" run --stdin - "$W/cat.wasm"
STDIN=$SCRATCH/in.txt expect "airlock's stdin is not inherited" 0 "" "^0 bytes$" -- "$A" run "$W/cat.wasm"
expect "--stdin missing file" 1 "" "^airlock: --stdin .*no-such: No such file or directory$" \
    -- "$A" run --stdin "$RUN_DIR/no-such" "$W/cat.wasm"

# ---- directories ------------------------------------------------------------------------------
rm -f "$SCRATCH/out.txt"
expect "--dir read-only: read" 0 "from the host" "" -- "$A" run --dir "$SCRATCH:/data" "$W/files.wasm" -- read /data/in.txt
expect "--dir read-only: write refused" 1 "" "^open /data/out.txt: " \
    -- "$A" run --dir "$SCRATCH:/data" "$W/files.wasm" -- write /data/out.txt nope
check "--dir read-only: nothing written on the host" "$([[ -e $SCRATCH/out.txt ]] && echo "out.txt was created")"
expect "--dir :ro: write refused" 1 "" "^open /data/out.txt: " \
    -- "$A" run --dir "$SCRATCH:/data:ro" "$W/files.wasm" -- write /data/out.txt nope
expect "--dir :rw: write works" 0 "written" "" \
    -- "$A" run --dir "$SCRATCH:/data:rw" "$W/files.wasm" -- write /data/out.txt "from the guest"
check "--dir :rw: the file appears on the host" \
    "$([[ $(cat "$SCRATCH/out.txt" 2>/dev/null) == "from the guest" ]] || echo "out.txt missing or wrong")"
expect "--dir HOST: guest path is the canonical host path" 0 "from the host" "" \
    -- "$A" run --dir "$RUN_DIR/scratch-link" "$W/files.wasm" -- read "$CANON/in.txt"
expect "--dir HOST::rw keeps the default guest path" 0 "written" "" \
    -- "$A" run --dir "$RUN_DIR/scratch-link::rw" "$W/files.wasm" -- write "$CANON/out2.txt" x
expect "no --dir: no files" 1 "" "^open /data/in.txt: " -- "$A" run "$W/files.wasm" -- read /data/in.txt
expect "outside the grant: refused" 1 "" "^open /etc/passwd: " \
    -- "$A" run --dir "$SCRATCH:/data" "$W/files.wasm" -- read /etc/passwd
expect "escape with .. refused" 1 "" "^open /data/../../etc/passwd: " \
    -- "$A" run --dir "$SCRATCH:/data" "$W/files.wasm" -- read /data/../../etc/passwd
expect "--dir missing host directory" 1 "" "^airlock: --dir .*no-such-dir: No such file or directory$" \
    -- "$A" run --dir "$RUN_DIR/no-such-dir" "$W/hello.wasm"
expect "--dir on a file" 1 "" "^airlock: --dir .*in.txt: not a directory$" \
    -- "$A" run --dir "$SCRATCH/in.txt:/x" "$W/hello.wasm"

# ---- fuel, timeout, memory ----------------------------------------------------------------------
expect "--fuel stops an infinite loop" 71 "" "^airlock: fuel exhausted" -- "$A" run --fuel 1000000 "$W/spin.wasm"
if ((ELAPSED_MS < 5000)); then pass "--fuel: quick (${ELAPSED_MS} ms)"; else fail "--fuel: quick" "took ${ELAPSED_MS} ms"; fi
expect "enough --fuel" 0 "hello, world" "" -- "$A" run --fuel 100000000 "$W/hello.wasm"
expect "--timeout 1s stops an infinite loop" 72 "" "^airlock: timeout" -- "$A" run --timeout 1s "$W/spin.wasm"
if ((ELAPSED_MS >= 1000 && ELAPSED_MS < 1500)); then pass "--timeout 1s: 1.0..1.5 s (${ELAPSED_MS} ms)"
else fail "--timeout 1s: 1.0..1.5 s" "took ${ELAPSED_MS} ms"; fi
expect "--timeout 1s stops a blocking sleep" 72 "" "^airlock: timeout" -- "$A" run --timeout 1 "$W/sleep.wasm"
if ((ELAPSED_MS >= 1000 && ELAPSED_MS < 1500)); then pass "--timeout in a host call: 1.0..1.5 s (${ELAPSED_MS} ms)"
else fail "--timeout in a host call: 1.0..1.5 s" "took ${ELAPSED_MS} ms"; fi
expect "--timeout 300ms" 72 "" "^airlock: timeout: still running after 300 ms" -- "$A" run --timeout 300ms "$W/spin.wasm"
expect "--timeout does not delay a quick guest" 0 "hello, world" "" -- "$A" run --timeout 1m "$W/hello.wasm"
if ((ELAPSED_MS < 5000)); then pass "--timeout 1m: returns at once (${ELAPSED_MS} ms)"; else fail "--timeout 1m: returns at once" "took ${ELAPSED_MS} ms"; fi
expect "--memory 16M: malloc fails, memory_limit" 73 "" "malloc failed after 1[0-9] MiB" \
    -- "$A" run --memory 16M "$W/memhog.wasm"
expect "--memory: airlock's line" 73 "" "^airlock: memory limit" -- "$A" run --memory 16M "$W/memhog.wasm"
expect "--trap-on-memory-limit" 73 "" "^airlock: memory limit .*memory limit exceeded" \
    -- "$A" run --memory 16M --trap-on-memory-limit "$W/memhog.wasm"
expect "default memory limit (256M)" 73 "" "malloc failed after 2[0-9][0-9] MiB" -- "$A" run "$W/memhog.wasm"

# ---- output cap ------------------------------------------------------------------------------------
run_airlock "$A" run "$W/flood.wasm"
size=$(stat -c %s "$OUT")
check "2 MiB of output: stdout is exactly 1 MiB, exit 0, a warning" \
    "$([[ $RC -eq 0 ]] || echo "exit status $RC")" \
    "$([[ $size -eq 1048576 ]] || echo "stdout has $size bytes")" \
    "$(grep -q "^airlock: warning: the guest's stdout was cut at 1048576 bytes$" "$ERR" || echo "no warning")" \
    "$(grep -q "^flooded$" "$ERR" || echo "guest stderr missing")"

# ---- traps ---------------------------------------------------------------------------------------------
expect "trap: exit 70, stdout kept" 70 "about to trap" "^airlock: trap: unreachable in function [0-9]+ at offset 0x" \
    -- "$A" run "$W/trap.wasm"

# ---- --json ----------------------------------------------------------------------------------------------
json "hello" 0 'd.status === "ok" && d.exit_code === 0 && d.stdout === "hello, world\n" &&
    d.stderr === "" && d.trap === null && d.trap_location === null && d.error === null &&
    d.fuel_used > 0 && d.wall_ms >= 0 && d.peak_memory_bytes >= 65536 &&
    d.stdout_truncated === false && d.stderr_truncated === false && d.dirs.length === 0' \
    -- "$A" run --json "$W/hello.wasm"
json "exit 3" 3 'd.status === "exit" && d.exit_code === 3 && d.stderr === "exiting with 3\n" && d.trap === null' \
    -- "$A" run --json "$W/exit.wasm" -- 3
json "dirs report canonical host paths" 0 'd.dirs.length === 2 &&
    d.dirs[0].host === '"\"$CANON\""' && d.dirs[0].guest === "/data" && d.dirs[0].read_only === true &&
    d.dirs[1].host === '"\"$CANON\""' && d.dirs[1].guest === '"\"$CANON\""' && d.dirs[1].read_only === false' \
    -- "$A" run --json --dir "$RUN_DIR/scratch-link:/data" --dir "$RUN_DIR/scratch-link::rw" "$W/hello.wasm"
json "fuel_exhausted" 71 'd.status === "fuel_exhausted" && d.fuel_used >= 1000000 && d.trap === "fuel exhausted" &&
    d.trap_location !== null && typeof d.error === "string"' -- "$A" run --json --fuel 1000000 "$W/spin.wasm"
json "timeout" 72 'd.status === "timeout" && d.wall_ms >= 500 && d.trap === "interrupted"' \
    -- "$A" run --json --timeout 500ms "$W/spin.wasm"
json "memory_limit" 73 'd.status === "memory_limit" && d.exit_code === 1 && d.peak_memory_bytes <= 16 * 1048576 &&
    d.stderr.startsWith("malloc failed")' -- "$A" run --json --memory 16M "$W/memhog.wasm"
json "output_truncated" 0 'd.status === "output_truncated" && d.stdout.length === 1048576 &&
    d.stdout_truncated === true && d.stderr === "flooded\n" && d.error === null' -- "$A" run --json "$W/flood.wasm"
json "trap with location" 70 'd.status === "trap" && d.trap === "unreachable" && d.stdout === "about to trap\n" &&
    Number.isInteger(d.trap_location.func_index) && d.trap_location.backtrace.length >= 1 &&
    d.trap_location.backtrace[0].code_offset === d.trap_location.code_offset' -- "$A" run --json "$W/trap.wasm"
json "bytes escaped: invalid UTF-8 as U+FFFD, controls, quotes" 0 \
    'd.stdout === "a\ufffdb\u00e9\"\\\n\u0001\ufffd\u0000z\ufffd\ufffd\ufffd"' -- "$A" run --json "$W/bytes.wasm"
# Random byte soup (ill-formed UTF-8 of every kind) must decode exactly as
# the WHATWG TextDecoder does: one U+FFFD per maximal ill-formed subpart.
soup_problems=()
for seed in $(seq 1 20); do
    node -e '
        let x = Number(process.argv[1]) * 2654435761 % 4294967296;
        const rnd = n => (x = (x * 1103515245 + 12345) % 2147483648) % n;
        const pool = [[0xc3, 0xa9], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xed, 0xa0, 0x80],
                      [0xf4, 0x90, 0x80, 0x80], [0xe0, 0x80], [0xf0, 0x90], [0], [0x7f], [0x22], [0x5c]];
        const out = [];
        for (let n = 1 + rnd(300); n > 0; n--)
            out.push(...(rnd(2) ? [rnd(256)] : pool[rnd(pool.length)]));
        require("fs").writeFileSync(process.argv[2], Buffer.from(out));
    ' "$seed" "$RUN_DIR/soup.bin"
    run_airlock "$A" run --json --stdin "$RUN_DIR/soup.bin" "$W/cat.wasm"
    node -e '
        const fs = require("fs");
        const d = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        process.exit(d.stdout === new TextDecoder().decode(fs.readFileSync(process.argv[2])) ? 0 : 1);
    ' "$OUT" "$RUN_DIR/soup.bin" 2>/dev/null || soup_problems+=("seed $seed: stdout differs from TextDecoder")
done
check "json: 20 random byte soups decode like TextDecoder" "${soup_problems[@]}"
json "error: missing --dir" 1 'd.status === "error" && /No such file/.test(d.error) && d.dirs[0].host === null' \
    -- "$A" run --json --dir "$RUN_DIR/no-such-dir" "$W/hello.wasm"
printf 'print("hi")\n' >"$RUN_DIR/script.py"
json "invalid_module" 65 'd.status === "invalid_module" && /not a wasm module/.test(d.error)' \
    -- "$A" run --json "$RUN_DIR/script.py"

# ---- bad modules ------------------------------------------------------------------------------------------
rm -f "$RUN_DIR/huge.wasm"
printf '\0asm\1\0\0\0' >"$RUN_DIR/huge.wasm"
truncate -s 60M "$RUN_DIR/huge.wasm" # sparse: costs no disk
expect "60 MiB module: too large, before parsing" 65 "" "too large \(62914560 bytes; the limit is 52428800 bytes\)" \
    -- "$A" run "$RUN_DIR/huge.wasm"
if ((ELAPSED_MS < 1000)); then pass "60 MiB module refused at once (${ELAPSED_MS} ms)"; else fail "60 MiB module refused at once" "took ${ELAPSED_MS} ms"; fi
rm -f "$RUN_DIR/huge.wasm"
expect "not wasm" 65 "" "^airlock: .*script.py: malformed module: not a wasm module" -- "$A" run "$RUN_DIR/script.py"
: >"$RUN_DIR/empty.wasm"
expect "empty file" 65 "" "not a wasm module" -- "$A" run "$RUN_DIR/empty.wasm"
printf '\0asm\1\0\0\0\1\377\377\377\377\17' >"$RUN_DIR/hugesection.wasm"
expect "malformed module" 65 "" "^airlock: .*hugesection.wasm: malformed module: " -- "$A" run "$RUN_DIR/hugesection.wasm"
expect "missing module file" 1 "" "^airlock: .*no-such.wasm: No such file or directory$" -- "$A" run "$RUN_DIR/no-such.wasm"
expect "module is a directory" 1 "" "not a regular file" -- "$A" run "$RUN_DIR"
expect "non-WASI import: link error naming it" 1 "" "link error: .*\"env\" \"log\"" -- "$A" run "$W/needs-import.wasm"
expect "no _start" 1 "" "no export named '_start'" -- "$A" run "$W/values.wasm"
expect "_start with a result is not a command" 1 "" "_start' takes 0 parameters and returns 1" -- "$A" run samples/fib.wasm

# ---- command line ------------------------------------------------------------------------------------------
usage_error "unknown option" "unknown option '--frob'" --frob "$W/hello.wasm"
usage_error "no module" "missing MODULE" --json
usage_error "stray argument" "unexpected argument 'x'.*after '--'" "$W/hello.wasm" x
usage_error "--fuel 0" "--fuel '0': must be greater than zero" --fuel 0 "$W/hello.wasm"
usage_error "--fuel junk" "--fuel '12x'" --fuel 12x "$W/hello.wasm"
usage_error "--fuel overflow" "--fuel '99999999999999999999': too large" --fuel 99999999999999999999 "$W/hello.wasm"
usage_error "--fuel twice" "--fuel given twice" --fuel 5 --fuel 6 "$W/hello.wasm"
usage_error "--fuel without a value" "--fuel: needs a value" "$W/hello.wasm" --fuel
usage_error "--timeout junk" "--timeout '10x'" --timeout 10x "$W/hello.wasm"
usage_error "--timeout fraction" "--timeout '1.5s'" --timeout 1.5s "$W/hello.wasm"
usage_error "--timeout 0" "must be greater than zero" --timeout 0s "$W/hello.wasm"
usage_error "--timeout overflow" "too large" --timeout 99999999999999999h "$W/hello.wasm"
usage_error "--memory junk" "--memory '12Q'" --memory 12Q "$W/hello.wasm"
usage_error "--memory 0" "must be greater than zero" --memory 0 "$W/hello.wasm"
usage_error "--memory under a page" "at least 64K" --memory 1K "$W/hello.wasm"
usage_error "--memory over 4G" "at most 4G" --memory 5G "$W/hello.wasm"
usage_error "--memory overflow" "too large" --memory 99999999999999999999G "$W/hello.wasm"
usage_error "--dir relative guest" "guest path must be absolute" --dir "$SCRATCH:data" "$W/hello.wasm"
usage_error "--dir empty host" "empty host path" --dir ":/data" "$W/hello.wasm"
usage_error "--env without =" "--env 'FOO': expected KEY=VALUE" --env FOO "$W/hello.wasm"
usage_error "--env empty name" "empty variable name" --env =x "$W/hello.wasm"
usage_error "--json=1" "--json: takes no value" --json=1 "$W/hello.wasm"
usage_error "--invoke with --dir" "--dir cannot be used with --invoke" --invoke f --dir "$SCRATCH" samples/fib.wasm
expect "--invoke still works" 0 "6765" "" -- "$A" run samples/fib.wasm --invoke fib 20
expect "--invoke _start" 0 "6765" "" -- "$A" run samples/fib.wasm --invoke _start
expect "run --help documents the options and exit codes" 0 "*" "" -- "$A" run --help
for word in --dir --env --stdin --fuel --timeout --memory --trap-on-memory-limit --json \
    ":ro" ":rw" "65 " "70 " "71 " "72 " "73 " "--invoke"; do
    grep -qF -- "$word" "$OUT" || fail "run --help mentions $word"
done

rm -rf "$SCRATCH" "$RUN_DIR/scratch-link"
finish
