#!/usr/bin/env bash
# tests/cli/test-exec.sh — the command line of `airlock exec`, `airlock doctor`
# and `airlock gc` (src/cli/exec.c, doctor.c): bad flags are one-line usage
# errors (exit 2), bad grants and missing programs are clear errors (exit 1),
# and each outcome has its documented exit status and --json fields. The
# escape battery itself is tests/sandbox/run.sh; this file is about the CLI.
#
# Runs $AIRLOCK (default build/asan/airlock); a sanitizer report on stderr
# fails the check. The native cases need user namespaces: when `airlock
# doctor` says native is unavailable they are skipped with the reason.
# Prints one line per check and ends with "N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=tests/cli/lib/exec-setup.bash
source tests/cli/lib/exec-setup.bash

# ---- usage errors: exit 2, one line, nothing on stdout --------------------------
usage_error "no program" "missing PROGRAM"
usage_error "only --" "missing PROGRAM" --
usage_error "unknown option" "unknown option '--frobnicate'" --frobnicate -- /bin/true
usage_error "bad isolation" "--isolation 'vm': expected native, gvisor or wasm" --isolation vm -- /bin/true
usage_error "isolation without value" "--isolation: needs a value" --isolation
usage_error "bad memory" "--memory '12Q'" --memory 12Q -- /bin/true
usage_error "bad timeout" "--timeout 'soon'" --timeout soon -- /bin/true
usage_error "bad cpu time" "--cpu-time 'x'" --cpu-time x -- /bin/true
usage_error "zero processes" "--processes '0': must be greater than zero" --processes 0 -- /bin/true
usage_error "huge open files" "--open-files '99999999': at most 1048576" --open-files 99999999 -- /bin/true
usage_error "relative cwd" "--cwd 'work': must be an absolute path" --cwd work -- /bin/true
usage_error "relative state dir" "--state-dir 'st': must be an absolute path" --state-dir st -- /bin/true
usage_error "fuel on native" "--fuel and --trap-on-memory-limit apply to --isolation wasm only" --fuel 100 -- /bin/true
usage_error "bad env" "--env 'NOEQUALS'" --env NOEQUALS -- /bin/true
usage_error "bad dir mode" "--dir" --dir /tmp:/x:rx -- /bin/true
usage_error "timeout twice" "--timeout given twice" --timeout 1s --timeout 2s -- /bin/true

expect "help" 0 "*" "" -- "$A" exec --help
grep -q 'airlock exec \[OPTIONS\]' "$OUT" || fail "help text" "no usage line in --help"
expect "doctor help" 0 "*" "" -- "$A" doctor --help
expect "doctor unknown option" 2 "" "unknown option '--nope'" -- "$A" doctor --nope
expect "gc unknown option" 2 "" "unknown option '--nope'" -- "$A" gc --nope
expect "gc relative state dir" 2 "" "must be an absolute path" -- "$A" gc --state-dir rel

# ---- doctor ------------------------------------------------------------------------
run_airlock "$A" doctor --json --quick --state-dir "$TMP/state"
native_ok=$(node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const k of ["user_namespaces","seccomp","landlock_abi","backends","gvisor_platform"])
        if (!(k in d)) { console.log("missing " + k); process.exit(1); }
    console.log(d.backends.native.available ? "yes" : "no: " + d.backends.native.reason);
' "$OUT" 2>&1)
case $native_ok in
yes | no:*) pass "doctor --json is one object with the backends" ;;
*) fail "doctor --json" "$native_ok" "$(head -c 300 "$OUT")" ;;
esac
# doctor's exit status is 0 only when every backend is available: the text is checked
run_airlock "$A" doctor --quick --state-dir "$TMP/state"
grep -q '^backends' "$OUT" && grep -q '^  native ' "$OUT" && grep -q '^  gvisor ' "$OUT" &&
    pass "doctor text lists the backends" || fail "doctor text" "$(head -c 300 "$OUT")"

if [[ $native_ok != yes ]]; then
    echo "SKIP native exec cases: $native_ok"
    finish
fi

# ---- errors: exit 1 with a clear message -------------------------------------------
expect "missing dir" 1 "" "--dir $TMP/nope: No such file or directory" -- "$A" exec --dir "$TMP/nope" -- /bin/true
touch "$TMP/afile"
expect "dir is a file" 1 "" "not a directory" -- "$A" exec --dir "$TMP/afile" -- /bin/true
expect "program not found" 1 "" "cannot execute 'no-such-program-xyz': No such file or directory" -- "$A" exec -- no-such-program-xyz
expect "grant on /usr refused" 1 "" "grant" -- "$A" exec --dir "$TMP:/usr/lib" -- /bin/true
expect "stdin file missing" 1 "" "--stdin $TMP/none" -- "$A" exec --stdin "$TMP/none" -- /bin/true

# ---- outcomes and exit statuses ---------------------------------------------------------
expect "plain output" 0 "hello" "" -- "$A" exec -- /bin/echo hello
expect "exit code" 7 "" "" -- "$A" exec -- /bin/sh -c 'exit 7'
expect "signal is 128+N" 137 "" "killed by signal 9" -- "$A" exec -- /bin/sh -c 'kill -9 $$'
expect "stderr passes through" 0 "" "^oops$" -- "$A" exec -- /bin/sh -c 'echo oops >&2'
printf 'b\na\n' >"$TMP/in"
expect "stdin file" 0 "$(printf 'A\nB')" "" -- "$A" exec --stdin "$TMP/in" -- /bin/sh -c 'sort | tr a-z A-Z'
expect "timeout exits 72" 72 "" "timeout: still running after 300 ms" -- "$A" exec --timeout 300ms -- /bin/sh -c 'while :; do :; done'
expect "cpu limit exits 74" 74 "" "CPU-time limit" -- "$A" exec --cpu-time 300ms -- /bin/sh -c 'while :; do :; done'
expect "cwd" 0 "/tmp" "" -- "$A" exec --cwd /tmp -- /bin/sh -c pwd
expect "env granted, host env not" 0 "x=1 home=/tmp" "" -- env SECRET_HOST_VAR=leak "$A" exec --env x=1 -- /bin/sh -c 'echo "x=$x home=$HOME$SECRET_HOST_VAR"'
run_airlock "$A" exec -- /bin/sh -c 'head -c 2000000 /dev/zero'
[[ $(wc -c <"$OUT") -eq 1048576 ]] && grep -q "stdout was cut at 1048576 bytes" "$ERR" &&
    pass "stdout cut at 1 MiB with a warning" || fail "stdout cap" "$(wc -c <"$OUT") bytes; $(head -c 200 "$ERR")"

JSON_FIELDS='["status","exit_code","signal","limits_hit","cpu_ms","wall_ms","peak_memory_bytes",
  "denied_syscalls","backend","stdout","stderr","stdout_truncated","stderr_truncated","dirs","error"]'
json "ok" 0 'd.status === "ok" && d.backend === "native" && d.stdout === "hi\n" && d.signal === 0' \
    -- "$A" exec --json -- /bin/echo hi
json "exit" 3 'd.status === "exit" && d.exit_code === 3' -- "$A" exec --json -- /bin/sh -c 'exit 3'
json "signaled" 137 'd.status === "signaled" && d.signal === 9' -- "$A" exec --json -- /bin/sh -c 'kill -9 $$'
json "timeout" 72 'd.status === "timeout" && d.limits_hit.includes("wall")' \
    -- "$A" exec --json --timeout 200ms -- /bin/sh -c 'sleep 5'
json "denied syscall counted" 1 'd.status === "exit" && d.denied_syscalls >= 1' \
    -- "$A" exec --json -- /usr/bin/unshare -U /bin/true
json "file size limit" 153 'd.status === "signaled" && d.signal === 25 && d.limits_hit.includes("file_size")' \
    -- "$A" exec --json --file-size 64K -- /bin/sh -c 'exec head -c 1000000 /dev/zero > /tmp/big'
json "setup error is error" 1 'd.status === "error" && /cannot execute/.test(d.error)' \
    -- "$A" exec --json -- /nonexistent
if command -v wat2wasm >/dev/null; then
    echo '(module (func (export "_start")))' >"$TMP/start.wat"
    wat2wasm "$TMP/start.wat" -o "$TMP/start.wasm"
    json "wasm through exec" 0 'd.status === "ok" && d.backend === "wasm"' \
        -- "$A" exec --isolation wasm --json -- "$TMP/start.wasm"
fi

# ---- gc ------------------------------------------------------------------------------
expect "gc" 0 "*" "" -- "$A" gc --state-dir "$TMP/state"
grep -Eq '^removed [0-9]+ container\(s\), [0-9]+ bundle\(s\), [0-9]+ cgroup\(s\)$' "$OUT" &&
    pass "gc reports what it removed" || fail "gc output" "$(cat "$OUT")"

finish
