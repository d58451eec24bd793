#!/usr/bin/env bash
# tests/security/run.sh — the security battery: every case is an attack by
# untrusted guest code, and FAILS if the sandbox leaks, if the outcome is not
# exactly the expected one, or if the airlock process itself is harmed (killed
# by a signal, hung, or a sanitizer report on its stderr).
#
#   tests/security/run.sh [PATTERN]     run the cases whose name matches PATTERN
#                                       (a bash regex; default: all)
#   AIRLOCK=build/asan/airlock          the binary under test (default); may be
#                                       a command with arguments
#   AIRLOCK_SECURITY_CORRUPT=N          byte-flip variants in case 14 (default 300)
#   AIRLOCK_SECURITY_JOBS=N             parallel runs for cases 14 and 15
#                                       (default: nproc)
#
# Cases (see tests/security/README.md for what each asserts):
#   1 read_passwd  2 list_etc  3 traversal  4 symlinks, symlink_race
#   5 readonly_preopen  6 sockets_wasi, sockets_wasmedge, sockets_wasix
#   7 env_not_inherited  8 timeout_spin, timeout_sleep
#   9 fuel_exhausted, fuel_sufficient
#  10 memory_limit_malloc, memory_limit_trap, memory_limit_grow,
#     memory_limit_declared
#  11 stack_exhausted, stack_exhausted_wide
#  12 output_flood_stdout, output_flood_stderr, output_flood_plain
#  13 huge_module, huge_module_file  14 corrupt_truncated, corrupt_flipped
#  15 wasi_bad_pointers  16 host_fds_hidden  17 stdin_not_inherited,
#     stdin_granted  18 fifo_blocking_read, fifo_blocking_write
#  19 fd_exhaustion  20 proc_raise  21 table_limit
#  python_* : the same attacks in Python
#
# The guests (tests/security/guests/*.c) are compiled here, at test time, with
# Debian's clang-14 for wasm32-wasi against the wasi-libc sysroot, into
# build/security/. Scratch directories live under build/security/tmp (wiped at
# the start of every run). The Python versions of the cases
# (tests/security/python/*.py) run with `airlock python FILE.py` once
# build/python/python.wasm exists; until then each is reported as skipped.
#
# Output: one line per case, "ok - NAME", "FAIL - NAME: reason" or
# "skip - NAME: reason"; then "N skipped"; the last line is exactly
# "N passed, N failed". Exit status 1 if anything failed.
set -u

cd "$(dirname "$0")/../.." || exit 2
SEC=tests/security
OUT=build/security
TMPD=$OUT/tmp
FILTER=${1:-}

read -r -a AIRLOCK_CMD <<<"${AIRLOCK:-build/asan/airlock}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# A host secret in airlock's environment for every run: no guest may ever
# print it (check_protocol looks in every protocol guest's output).
export AIRLOCK_SECRET=hunter2

PASSED=0
FAILED=0
SKIPPED=0
ok() { echo "ok - $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL - $1: $2"; FAILED=$((FAILED + 1)); }
skip() { echo "skip - $1: $2"; SKIPPED=$((SKIPPED + 1)); }
want() { [ -z "$FILTER" ] || [[ $1 =~ $FILTER ]]; }

rm -rf "$TMPD"
mkdir -p "$TMPD" "$OUT"

# ---- building the guests -------------------------------------------------------

GUEST_CC=${GUEST_CC:-clang-14}
find_sysroot() {
    local inc
    inc=$(dpkg -L wasi-libc 2>/dev/null | grep -m1 '/include/wasm32-wasi$')
    if [ -n "$inc" ]; then
        echo "${inc%/include/wasm32-wasi}"
    elif [ -d /usr/include/wasm32-wasi ]; then
        echo /usr
    fi
}
SYSROOT=$(find_sysroot)
declare -A GUEST_ERR=()

build_guests() {
    local src name wasm log
    if ! command -v "$GUEST_CC" >/dev/null; then
        for src in "$SEC"/guests/*.c; do
            GUEST_ERR[$(basename "$src" .c)]="$GUEST_CC not found"
        done
        return
    fi
    if [ -z "$SYSROOT" ]; then
        for src in "$SEC"/guests/*.c; do
            GUEST_ERR[$(basename "$src" .c)]="no wasi-libc sysroot (dpkg -L wasi-libc)"
        done
        return
    fi
    for src in "$SEC"/guests/*.c; do
        name=$(basename "$src" .c)
        wasm=$OUT/$name.wasm
        if [ -f "$wasm" ] && [ "$wasm" -nt "$src" ] && [ "$wasm" -nt "$SEC/guests/common.h" ]; then
            continue
        fi
        log=$OUT/$name.build.log
        if ! "$GUEST_CC" --target=wasm32-wasi --sysroot="$SYSROOT" -O2 -Wall -Wextra \
            -Wl,--strip-debug -o "$wasm" "$src" >"$log" 2>&1; then
            rm -f "$wasm"
            GUEST_ERR[$name]="guest did not compile: $(head -n 3 "$log" | tr '\n' ' ')"
        fi
    done
}

# guest NAME: the path of its module in GUEST_M; fails with the reason in
# GUEST_WHY when it was not built. (Not for $(...): it sets variables.)
GUEST_M=
GUEST_WHY=
guest() {
    GUEST_M=$OUT/$1.wasm
    GUEST_WHY=${GUEST_ERR[$1]:-}
    if [ -z "$GUEST_WHY" ] && [ ! -f "$GUEST_M" ]; then
        GUEST_WHY="guest $1 was not built"
    fi
    [ -z "$GUEST_WHY" ]
}

# ---- running airlock -------------------------------------------------------------

# run_air TIMEOUT_S ARGS...: run airlock under timeout and /usr/bin/time.
# Sets RC, OUT_F, ERR_F, WALL_MS, RSS_KB. Stdin is $STDIN_F (default /dev/null).
RUN_N=0
run_air() {
    local t=$1 start end
    shift
    RUN_N=$((RUN_N + 1))
    OUT_F=$TMPD/run${RUN_TAG:-}$RUN_N.out
    ERR_F=$TMPD/run${RUN_TAG:-}$RUN_N.err
    TIME_F=$TMPD/run${RUN_TAG:-}$RUN_N.time
    start=$(date +%s%N)
    timeout -k 5 "$t" /usr/bin/time -f '%M' -o "$TIME_F" \
        "${AIRLOCK_CMD[@]}" "$@" <"${STDIN_F:-/dev/null}" >"$OUT_F" 2>"$ERR_F"
    RC=$?
    end=$(date +%s%N)
    WALL_MS=$(((end - start) / 1000000))
    RSS_KB=$(tail -n 1 "$TIME_F" 2>/dev/null)
    [[ $RSS_KB =~ ^[0-9]+$ ]] || RSS_KB=0
}

SAN_RE='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|MemorySanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer|Segmentation fault|core dumped|stack smashing'

# harm: print why the airlock process was harmed by the last run, or nothing.
harm() {
    if [ "$RC" -eq 126 ] || [ "$RC" -eq 127 ]; then
        echo "airlock could not be executed (rc $RC): $(head -c 200 "$ERR_F")"
    elif [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        echo "airlock did not finish (killed by the harness's timeout after ${WALL_MS} ms)"
    elif grep -q 'terminated by signal' "$TIME_F" 2>/dev/null; then
        echo "airlock $(grep -m1 'terminated by signal' "$TIME_F" | sed 's/^Command //')"
    elif grep -qE "$SAN_RE" "$ERR_F"; then
        echo "sanitizer report: $(grep -m1 -E "$SAN_RE" "$ERR_F" | cut -c1-200)"
    elif [ "$RC" -ge 128 ]; then
        echo "airlock exited with status $RC"
    fi
}

is_json() { jq -e 'type == "object"' "$OUT_F" >/dev/null 2>&1; }

# for_each_parallel LIST FUNC: FUNC LINE for every line of the file LIST, in
# $JOBS background shards (each with its own RUN_TAG and SHARD number); FUNC
# writes its results to files of its own, per shard.
JOBS=${AIRLOCK_SECURITY_JOBS:-$(nproc 2>/dev/null || echo 2)}
for_each_parallel() {
    local list=$1 func=$2 j pids=()
    for ((j = 0; j < JOBS; j++)); do
        (
            RUN_TAG=s$j-
            SHARD=$j
            awk -v j="$j" -v n="$JOBS" 'NR % n == j' "$list" | while read -r line; do "$func" "$line"; done
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
}
J() { jq -r "$1" "$OUT_F" 2>/dev/null; }
# The guest's stdout from the JSON result, into a file (byte-exact).
guest_stdout() { jq -j '.stdout // ""' "$OUT_F" 2>/dev/null; }

# The status expected with each exit code (the CLI's contract).
declare -A CODE_OF=([ok]=0 [trap]=70 [fuel_exhausted]=71 [timeout]=72 [memory_limit]=73
    [invalid_module]=65 [error]=1)

# short description of the last run, for failure messages
brief() {
    local s
    if is_json; then
        s="rc $RC, status $(J .status), exit_code $(J .exit_code), trap $(J .trap), error: $(J .error | head -c 160)"
    else
        s="rc $RC, stdout: $(head -c 160 "$OUT_F" | tr '\n' ' '), stderr: $(head -c 200 "$ERR_F" | tr '\n' ' ')"
    fi
    echo "$s"
}

# expect_status RC STATUS: checks the host was unharmed, the JSON object,
# the exit code and the status. Prints the reason on failure.
expect_status() {
    local want_rc=$1 want_status=$2 why
    why=$(harm)
    if [ -n "$why" ]; then echo "$why"; return 1; fi
    if ! is_json; then echo "no JSON object on stdout ($(brief))"; return 1; fi
    if [ "$RC" -ne "$want_rc" ] || [ "$(J .status)" != "$want_status" ]; then
        echo "expected rc $want_rc status $want_status, got $(brief)"
        return 1
    fi
    return 0
}

# check_protocol: a guest of the DENIED/LEAK protocol (guests/common.h) must
# have exited 0 with status ok (or $PROTO_STATUS, a regex), its last line
# "DONE ... leaks=0 wrong=0" and no LEAK or WRONG line. Prints the reason on
# failure.
check_protocol() {
    local why so bad
    why=$(harm)
    if [ -n "$why" ]; then echo "$why"; return 1; fi
    if ! is_json; then echo "no JSON object on stdout ($(brief))"; return 1; fi
    so=$(guest_stdout)
    bad=$(grep -E '^(LEAK|WRONG) ' <<<"$so" | head -n 4 | cut -c1-220 | paste -sd '|')
    if [ -n "$bad" ]; then echo "$bad"; return 1; fi
    if grep -q hunter2 "$OUT_F"; then echo "the host's AIRLOCK_SECRET reached the guest"; return 1; fi
    if [ "$RC" -ne 0 ] || ! [[ $(J .status) =~ ^(${PROTO_STATUS:-ok})$ ]] || [ "$(J .exit_code)" != 0 ]; then
        echo "expected rc 0 status ${PROTO_STATUS:-ok}, got $(brief)"
        return 1
    fi
    if ! tail -n 1 <<<"$so" | grep -qE '^DONE denied=[0-9]+ leaks=0 wrong=0$'; then
        echo "guest did not finish: last line \"$(tail -n 1 <<<"$so" | cut -c1-120)\""
        return 1
    fi
    return 0
}

# snapshot DIR: names, types, modes, sizes, mtimes, link targets, checksums.
snapshot() {
    (
        cd "$1" || exit 1
        find . -printf '%p|%y|%m|%s|%T@|%l|%n\n' | LC_ALL=C sort
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    )
}
# identity of a host file that must never change (content, times, links)
file_id() { stat -c '%s %Y %Z %h %i' "$1" 2>/dev/null; sha256sum "$1" 2>/dev/null; }

# ---- the cases --------------------------------------------------------------------

case_read_passwd() {
    local n=read_passwd m why first
    guest read_passwd && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 120 run --json "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    first=$(guest_stdout | head -n 1)
    if ! [[ $first =~ ^DENIED\ [0-9]+\ open\(\"/etc/passwd\" ]]; then
        fail $n "first line is not the DENIED line of open(/etc/passwd): $first"
        return
    fi
    # The same guest without --json: its stdout is airlock's, exit code its own.
    run_air 120 run "$m"
    why=$(harm)
    if [ -n "$why" ]; then fail $n "(plain run) $why"; return; fi
    if [ "$RC" -ne 0 ] || [ "$(head -n 1 "$OUT_F")" != "$first" ] || grep -q '^LEAK' "$OUT_F"; then
        fail $n "(plain run) expected rc 0 and the same DENIED line, got $(brief)"
        return
    fi
    ok "$n (${first%%:*})"
}

case_list_etc() {
    local n=list_etc m why
    guest list_etc && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 120 run --json "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    if ! guest_stdout | grep -q '^DENIED [0-9]* opendir("/etc")'; then
        fail $n "no DENIED line for opendir(\"/etc\")"
        return
    fi
    ok $n
}

# A scratch tree for the traversal and symlink cases: D/root (granted), D/outside.
make_tree() { # DIR
    rm -rf "$1"
    mkdir -p "$1/root/sub/deeper" "$1/outside"
    printf INSIDE >"$1/root/inside.txt"
    printf OUTSIDE-SECRET >"$1/outside/secret.txt"
}

# check_outside D BEFORE_SNAPSHOT -> reason if D/outside, D itself or / changed
check_outside() {
    local d=$1 before=$2 extra
    if [ "$(snapshot "$d/outside")" != "$before" ]; then
        echo "the host directory outside the grant changed: $(diff <(echo "$before") <(snapshot "$d/outside") | grep '^[<>]' | head -n 3 | paste -sd '|')"
        return 1
    fi
    extra=$(cd "$d" && ls -A | grep -vxE 'root|outside' | paste -sd ' ')
    if [ -n "$extra" ]; then
        echo "created next to the grant, on the host: $extra"
        return 1
    fi
    for extra in /escape_abs_root /escape_abs /g_created /created_abs; do
        if [ -e "$extra" ] && ! grep -qx "$extra" "$TMPD/preexisting"; then
            echo "created on the host: $extra"
            return 1
        fi
    done
    if [ -n "$(find "$d/root" -samefile "$d/outside/secret.txt" 2>/dev/null)" ]; then
        echo "a hard link to outside/secret.txt appeared inside the grant"
        return 1
    fi
    if [ -n "$(find "$d/root" -samefile /etc/passwd 2>/dev/null)" ]; then
        echo "a hard link to /etc/passwd appeared inside the grant"
        return 1
    fi
    return 0
}

case_traversal() {
    local n=traversal m why d=$TMPD/traversal before
    guest traversal && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    make_tree "$d"
    before=$(snapshot "$d/outside")
    run_air 120 run --json --dir "$d/root:/work:rw" "$m" -- "$(realpath "$d")"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    if ! why=$(check_outside "$d" "$before"); then fail $n "$why"; return; fi
    ok "$n ($(guest_stdout | grep -c '^DENIED') attempts denied)"
}

case_symlinks() {
    local n=symlinks m why d=$TMPD/symlinks before passwd_before P i
    guest symlinks && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    make_tree "$d"
    P=$(realpath "$d")
    (
        cd "$d/root" || exit 1
        ln -s /etc etclink
        ln -s /etc/passwd passwdlink
        ln -s ../outside outlink
        ln -s ../../../../../../../.. uplink
        ln -s ../.. sub/up2
        ln -s loop2 loop1
        ln -s loop1 loop2
        ln -s self self
        for i in 0 1 2 3 4 5 6; do ln -s "chain$((i + 1))" "chain$i"; done
        ln -s ../outside/secret.txt chain7
        ln -s "$P/outside/created_abs" dangling_abs
        ln -s ../outside/created_rel dangling_rel
        ln -s inside.txt inlink
        ln -s ../inside.txt sub/inlink_up
    )
    before=$(snapshot "$d/outside")
    passwd_before=$(file_id /etc/passwd)
    run_air 120 run --json --dir "$d/root:/work:rw" "$m" -- "$P"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    if ! why=$(check_outside "$d" "$before"); then fail $n "$why"; return; fi
    if [ "$(file_id /etc/passwd)" != "$passwd_before" ]; then
        fail $n "/etc/passwd changed on the host (times, links or content)"
        return
    fi
    if ! guest_stdout | grep -qE '^DENIED 32 open\("/work/loop1"'; then
        fail $n "opening a symlink loop did not fail with ELOOP (32): $(guest_stdout | grep 'open("/work/loop1"' | head -n 1)"
        return
    fi
    ok "$n ($(guest_stdout | grep -c '^DENIED') attempts denied)"
}

case_symlink_race() {
    local n=symlink_race m why d=$TMPD/race before racer
    guest symlink_race && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    make_tree "$d"
    mkdir -p "$d/root/real"
    printf INSIDE-DECOY >"$d/root/real/secret.txt"
    : >"$d/outside/outside_marker"
    ln -s real "$d/root/race"
    # The racer swaps root/race between "real" and "../outside", atomically.
    python3 - "$d/root" 60 >/dev/null 2>&1 <<'EOF' &
import os, sys, time
os.chdir(sys.argv[1])
stop = time.time() + float(sys.argv[2])
i = 0
while time.time() < stop:
    try:
        os.symlink("real" if i % 2 else "../outside", ".race_tmp")
    except FileExistsError:
        os.unlink(".race_tmp")
        continue
    os.replace(".race_tmp", "race")
    i += 1
EOF
    racer=$!
    sleep 0.2
    before=$(snapshot "$d/outside")
    run_air 120 run --json --dir "$d/root:/work:rw" "$m" -- 3000
    kill "$racer" 2>/dev/null
    wait "$racer" 2>/dev/null
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    if ! why=$(check_outside "$d" "$before"); then fail $n "$why"; return; fi
    ok "$n ($(guest_stdout | grep '^INFO' | sed 's/^INFO //' | head -n 1))"
}

case_readonly() {
    local n=readonly_preopen m why d=$TMPD/ro before after
    guest readonly && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    rm -rf "$d"
    mkdir -p "$d/ro/sub" "$d/ro/emptydir"
    printf RO-CONTENT >"$d/ro/file.txt"
    printf INNER >"$d/ro/sub/inner.txt"
    touch -d '2001-02-03 04:05:06' "$d/ro/file.txt" "$d/ro/sub/inner.txt" "$d/ro/sub" "$d/ro/emptydir" "$d/ro"
    before=$(snapshot "$d")
    run_air 120 run --json --dir "$d/ro:/data:ro" "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    after=$(snapshot "$d")
    if [ "$after" != "$before" ]; then
        fail $n "the read-only host directory changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 4 | paste -sd '|')"
        return
    fi
    ok "$n ($(guest_stdout | grep -c '^DENIED') mutations denied, directory unchanged)"
}

# ---- sockets: a loopback listener that must never hear from a guest ----

LISTENER_PID=
LISTENER_PORT=
LISTENER_LOG=$TMPD/listener.log
start_listener() {
    rm -f "$TMPD/listener.port" "$LISTENER_LOG"
    : >"$LISTENER_LOG"
    python3 - "$TMPD/listener.port" "$LISTENER_LOG" >/dev/null 2>&1 <<'EOF' &
import socket, sys, time
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", 0))
tcp.listen(16)
port = tcp.getsockname()[1]
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", port))
tcp.settimeout(0.05)
udp.settimeout(0.05)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(port))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
log = open(sys.argv[2], "a")
stop = time.time() + 900
while time.time() < stop:
    try:
        c, addr = tcp.accept()
        c.settimeout(0.5)
        try:
            data = c.recv(4096)
        except Exception:
            data = b""
        log.write("tcp connection from %r: %r\n" % (addr, data))
        log.flush()
        c.close()
    except socket.timeout:
        pass
    try:
        data, addr = udp.recvfrom(4096)
        log.write("udp datagram from %r: %r\n" % (addr, data))
        log.flush()
    except socket.timeout:
        pass
EOF
    LISTENER_PID=$!
    local i
    for i in $(seq 100); do
        [ -f "$TMPD/listener.port" ] && break
        sleep 0.05
    done
    LISTENER_PORT=$(cat "$TMPD/listener.port" 2>/dev/null)
}
stop_listener() {
    [ -n "$LISTENER_PID" ] && kill "$LISTENER_PID" 2>/dev/null && wait "$LISTENER_PID" 2>/dev/null
    LISTENER_PID=
}
listener_heard() { [ -s "$LISTENER_LOG" ] && head -n 2 "$LISTENER_LOG" | paste -sd '|'; }

case_sockets() {
    local n=sockets_wasi m why heard
    guest sock && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    if [ -z "$LISTENER_PORT" ]; then fail $n "could not start the loopback listener"; return; fi
    run_air 120 run --json "$m" -- "$LISTENER_PORT"
    if heard=$(listener_heard); then fail $n "the listener received: $heard"; return; fi
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    ok "$n ($(guest_stdout | grep -c '^DENIED') calls denied, listener heard nothing)"
}

# Imports airlock does not provide: a link refusal (status error, rc 1,
# naming the import) or an errno from the guest's call; never a connection.
case_sockets_ext() { # NAME GUEST
    local n=$1 m why heard
    guest "$2" && m=$GUEST_M || { fail "$n" "$GUEST_WHY"; return; }
    if [ -z "$LISTENER_PORT" ]; then fail "$n" "could not start the loopback listener"; return; fi
    run_air 120 run --json "$m" -- "$LISTENER_PORT"
    if heard=$(listener_heard); then fail "$n" "the listener received: $heard"; return; fi
    why=$(harm)
    if [ -n "$why" ]; then fail "$n" "$why"; return; fi
    if is_json && [ "$(J .status)" = error ] && [ "$RC" -eq 1 ] && J .error | grep -qi 'sock_open\|sock_connect\|import'; then
        ok "$n (refused at link time: $(J .error | head -c 100))"
        return
    fi
    if ! why=$(check_protocol); then fail "$n" "$why"; return; fi
    ok "$n (calls returned errors, listener heard nothing)"
}

case_env() {
    local n=env_not_inherited m why so envs
    guest env && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    AIRLOCK_SECRET=hunter2 run_air 120 run --json --env GRANTED=yes "$m" -- first-arg
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    so=$(guest_stdout)
    if grep -q hunter2 "$OUT_F" "$ERR_F"; then
        fail $n "the host's AIRLOCK_SECRET value appears in the output: $(grep -h hunter2 "$OUT_F" "$ERR_F" | head -c 200)"
        return
    fi
    envs=$(grep '^ENV ' <<<"$so" | paste -sd '|')
    if [ "$envs" != "ENV GRANTED=yes" ]; then
        fail $n "expected the environment to be exactly GRANTED=yes, got: $envs"
        return
    fi
    if ! grep -qx 'ENVIRON_SIZES errno=0 count=1 bytes=12' <<<"$so"; then
        fail $n "environ_sizes_get: $(grep '^ENVIRON_SIZES' <<<"$so")"
        return
    fi
    if [ "$(grep '^ARG ' <<<"$so" | sed -n '2,$p' | paste -sd '|')" != "ARG 1 first-arg" ]; then
        fail $n "arguments: $(grep '^ARG ' <<<"$so" | paste -sd '|')"
        return
    fi
    ok $n
}

case_timeout() {
    local n=timeout_spin m why
    guest spin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 30 run --json --timeout 1s "$m"
    if ! why=$(expect_status 72 timeout); then fail $n "$why"; return; fi
    if [ "$WALL_MS" -ge 3000 ]; then fail $n "took $WALL_MS ms (bound: 3000)"; return; fi
    if [ "$(guest_stdout)" != spinning ]; then
        fail $n "the output before the timeout was not kept: \"$(guest_stdout | head -c 80)\""
        return
    fi
    ok "$n ($WALL_MS ms, wall_ms $(J .wall_ms))"
}

case_timeout_sleep() {
    local n=timeout_sleep m why
    guest spin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 30 run --json --timeout 1s "$m" -- sleep 100
    if ! why=$(expect_status 72 timeout); then fail $n "$why"; return; fi
    if [ "$WALL_MS" -ge 3000 ]; then fail $n "took $WALL_MS ms (bound: 3000)"; return; fi
    ok "$n ($WALL_MS ms)"
}

case_fuel() {
    local n=fuel_exhausted m why used
    guest spin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 60 run --json --fuel 1000000 "$m" -- count 1000000000
    if ! why=$(expect_status 71 fuel_exhausted); then fail $n "$why"; return; fi
    used=$(J .fuel_used)
    if ! [[ $used =~ ^[0-9]+$ ]] || [ "$used" -lt 1000000 ] || [ "$used" -gt 2000000 ]; then
        fail $n "fuel_used $used, expected the budget (1000000, at most 2000000)"
        return
    fi
    if guest_stdout | grep -q counted; then fail $n "the loop finished"; return; fi
    # the endless loop is stopped by fuel too
    run_air 60 run --json --fuel 1000000 "$m"
    if ! why=$(expect_status 71 fuel_exhausted); then fail $n "(endless loop) $why"; return; fi
    ok "$n (fuel_used $used)"
}

case_fuel_enough() {
    local n=fuel_sufficient m why used
    guest spin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 60 run --json --fuel 50000000 "$m" -- count 1000
    if ! why=$(expect_status 0 ok); then fail $n "$why"; return; fi
    used=$(J .fuel_used)
    if [ "$(guest_stdout)" != "counted 1000" ]; then fail $n "stdout: $(guest_stdout | head -c 80)"; return; fi
    if ! [[ $used =~ ^[0-9]+$ ]] || [ "$used" -eq 0 ] || [ "$used" -ge 50000000 ]; then
        fail $n "fuel_used $used, expected between 1 and the budget"
        return
    fi
    ok "$n (fuel_used $used)"
}

LIMIT32=$((32 << 20))

# --memory 32M: memory.grow past it returns -1 (airlock's default), so the
# guest's malloc fails and it exits cleanly; peak memory stays within the limit.
case_memory() {
    local n=memory_limit_malloc m why peak so
    guest memhog && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 120 run --json --memory 32M "$m"
    if ! why=$(expect_status 0 ok); then fail $n "$why"; return; fi
    so=$(guest_stdout)
    if ! grep -q '^MALLOC_FAILED after' <<<"$so"; then fail $n "stdout: $(tail -n 1 <<<"$so")"; return; fi
    peak=$(J .peak_memory_bytes)
    if ! [[ $peak =~ ^[0-9]+$ ]] || [ "$peak" -gt "$LIMIT32" ] || [ "$peak" -lt $((24 << 20)) ]; then
        fail $n "peak_memory_bytes $peak, expected between 24 MiB and the 32 MiB limit"
        return
    fi
    ok "$n ($(grep '^MALLOC_FAILED' <<<"$so"), peak $peak bytes)"
}

# --trap-on-memory-limit: the same guest is stopped with memory_limit (73).
case_memory_trap() {
    local n=memory_limit_trap m why peak
    guest memhog && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 120 run --json --memory 32M --trap-on-memory-limit "$m"
    if ! why=$(expect_status 73 memory_limit); then fail $n "$why"; return; fi
    peak=$(J .peak_memory_bytes)
    if ! [[ $peak =~ ^[0-9]+$ ]] || [ "$peak" -gt "$LIMIT32" ]; then
        fail $n "peak_memory_bytes $peak, over the 32 MiB limit"
        return
    fi
    if guest_stdout | grep -q MALLOC_FAILED; then fail $n "the guest saw malloc fail: the grow did not trap"; return; fi
    ok "$n (peak $peak bytes)"
}

# memory.grow a page at a time: fails at exactly 512 pages (32 MiB); one
# 4 GiB grow fails outright and leaves the memory as it was.
case_memory_grow() {
    local n=memory_limit_grow m why peak so
    guest memhog && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 120 run --json --memory 32M "$m" -- grow
    if ! why=$(expect_status 0 ok); then fail $n "$why"; return; fi
    so=$(guest_stdout)
    if ! grep -qx 'GROW_FAILED at 512 pages (32 MiB)' <<<"$so"; then
        fail $n "expected memory.grow to fail at exactly 512 pages, got: $(tail -n 1 <<<"$so")"
        return
    fi
    peak=$(J .peak_memory_bytes)
    if [ "$peak" != "$LIMIT32" ]; then
        fail $n "peak_memory_bytes $peak, expected exactly the limit $LIMIT32"
        return
    fi
    run_air 120 run --json --memory 32M "$m" -- huge
    if ! why=$(expect_status 0 ok); then fail $n "(huge) $why"; return; fi
    so=$(guest_stdout)
    if ! grep -q '^GROW_FAILED huge' <<<"$so"; then fail $n "(huge) $so"; return; fi
    if [ "$(J .peak_memory_bytes)" -gt "$LIMIT32" ] 2>/dev/null; then
        fail $n "(huge) peak_memory_bytes $(J .peak_memory_bytes) over the limit"
        return
    fi
    ok "$n (peak $peak bytes)"
}

# A module declaring a 64 MiB minimum memory under --memory 32M: refused at
# instantiation, before anything is allocated.
case_memory_declared() {
    local n=memory_limit_declared why f=$OUT/mem-min-64m.wasm
    python3 - "$f" <<'EOF'
import sys
def sec(i, b): return bytes([i, len(b)]) + b
m = b"\0asm\1\0\0\0"
m += sec(1, bytes([1, 0x60, 0, 0]))                # type: [] -> []
m += sec(3, bytes([1, 0]))                         # func 0: type 0
m += sec(5, bytes([1, 0, 0x80, 0x08]))             # memory: min 1024 pages
m += sec(7, bytes([1, 6]) + b"_start" + bytes([0, 0]))
m += sec(10, bytes([1, 2, 0, 0x0b]))               # code: empty body
open(sys.argv[1], "wb").write(m)
EOF
    run_air 60 run --json --memory 32M "$f"
    if ! why=$(expect_status 73 memory_limit); then fail $n "$why"; return; fi
    if [ "$RSS_KB" -gt 200000 ]; then fail $n "airlock max RSS $RSS_KB KiB"; return; fi
    ok $n
}

# Tables: a module declaring 1000000 elements (the policy allows 10000) is
# refused at instantiation (status error, rc 1) without allocating them; a
# table.grow by 1000000 returns -1 (the guest traps "unreachable" otherwise).
case_table_limit() {
    local n=table_limit why declared
    python3 - "$OUT/table-min-1m.wasm" "$OUT/table-grow-1m.wasm" <<'EOF'
import sys
def leb(v, signed=False):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        done = (v == 0 and not (b & 0x40)) or (v == -1 and (b & 0x40)) if signed else v == 0
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)
def sec(i, b): return bytes([i]) + leb(len(b)) + b
def module(table_min, body):
    m = b"\0asm\1\0\0\0"
    m += sec(1, bytes([1, 0x60, 0, 0]))
    m += sec(3, bytes([1, 0]))
    m += sec(4, bytes([1, 0x70, 0]) + leb(table_min))
    m += sec(7, bytes([1, 6]) + b"_start" + bytes([0, 0]))
    code = bytes([0]) + body + bytes([0x0b])
    m += sec(10, bytes([1]) + leb(len(code)) + code)
    return m
open(sys.argv[1], "wb").write(module(1000000, b""))
grow = bytes([0xd0, 0x70, 0x41]) + leb(1000000, True) + bytes([0xfc, 0x0f, 0x00])
grow += bytes([0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b])   # != -1: unreachable
open(sys.argv[2], "wb").write(module(1, grow))
EOF
    run_air 60 run --json "$OUT/table-min-1m.wasm"
    if ! why=$(expect_status 1 error); then fail $n "(declared) $why"; return; fi
    if ! J .error | grep -qi table; then fail $n "(declared) the error does not name the table: $(J .error)"; return; fi
    if [ "$RSS_KB" -ge 100000 ]; then fail $n "(declared) airlock max RSS $RSS_KB KiB"; return; fi
    declared=$(J .error | head -c 70)
    run_air 60 run --json "$OUT/table-grow-1m.wasm"
    if ! why=$(expect_status 0 ok); then fail $n "(table.grow) $why"; return; fi
    ok "$n ($declared; table.grow refused)"
}

case_recursion() { # NAME ARG
    local n=$1 m why
    guest recurse && m=$GUEST_M || { fail "$n" "$GUEST_WHY"; return; }
    run_air 120 run --json "$m" ${2:+-- "$2"}
    if ! why=$(expect_status 70 trap); then fail "$n" "$why"; return; fi
    if ! { J .trap; J .error; } | grep -qi 'call stack exhausted'; then
        fail "$n" "trap is not \"call stack exhausted\": trap $(J .trap), error $(J .error | head -c 120)"
        return
    fi
    if [ "$(guest_stdout)" != recursing ]; then fail "$n" "stdout: $(guest_stdout | head -c 80)"; return; fi
    ok "$n ($WALL_MS ms)"
}

CAP=$((1 << 20))
expected_flood() { # N -> the first N bytes of flood.c's stream
    python3 -c '
import sys
n = int(sys.argv[1])
period = bytes((10 if i % 64 == 63 else 65 + (i // 64) % 26) for i in range(64 * 26))
sys.stdout.buffer.write((period * (n // len(period) + 1))[:n])' "$1"
}

case_flood() { # NAME STREAM
    local n=$1 stream=$2 m why field len status
    guest flood && m=$GUEST_M || { fail "$n" "$GUEST_WHY"; return; }
    run_air 300 run --json "$m" -- "$stream" 100
    why=$(harm)
    if [ -n "$why" ]; then fail "$n" "$why"; return; fi
    if ! is_json; then fail "$n" "no JSON ($(brief))"; return; fi
    status=$(J .status)
    if [ "$RC" -ne 0 ] || [ "$(J .exit_code)" != 0 ] || [ "$status" != output_truncated ]; then
        fail "$n" "expected rc 0 (the guest's own) and status output_truncated, got $(brief)"
        return
    fi
    if [ "$(J ".${stream}_truncated")" != true ]; then fail "$n" "${stream}_truncated is $(J ".${stream}_truncated")"; return; fi
    len=$(jq -j ".$stream" "$OUT_F" | wc -c)
    if [ "$len" -ne "$CAP" ]; then fail "$n" "$stream is $len bytes, expected exactly $CAP"; return; fi
    if ! cmp -s <(jq -j ".$stream" "$OUT_F") <(expected_flood $CAP); then
        fail "$n" "$stream is not the first $CAP bytes of what the guest wrote"
        return
    fi
    if [ "$RSS_KB" -ge 200000 ]; then fail "$n" "airlock max RSS $RSS_KB KiB (bound 200000)"; return; fi
    ok "$n (status $status, max RSS $((RSS_KB / 1024)) MiB, $WALL_MS ms)"
}

case_flood_plain() {
    local n=output_flood_plain m why
    guest flood && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 300 run "$m" -- stdout 100
    why=$(harm)
    if [ -n "$why" ]; then fail $n "$why"; return; fi
    if [ "$RC" -ne 0 ]; then fail $n "expected rc 0, got $(brief)"; return; fi
    if ! cmp -s "$OUT_F" <(expected_flood $CAP); then
        fail $n "airlock's stdout is $(wc -c <"$OUT_F") bytes, expected exactly the first $CAP of the guest's"
        return
    fi
    if [ "$RSS_KB" -ge 200000 ]; then fail $n "airlock max RSS $RSS_KB KiB (bound 200000)"; return; fi
    ok "$n (max RSS $((RSS_KB / 1024)) MiB)"
}

# 60 MiB: a valid header and one custom section; over the 50 MiB module cap.
case_huge_module() {
    local n=huge_module why f=$OUT/huge-60m.wasm
    if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" -lt $((60 << 20)) ]; then
        python3 - "$f" <<'EOF'
import sys
size = 60 << 20
body = bytes([1]) + b"x"
payload = size - len(body)
def leb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
with open(sys.argv[1], "wb") as f:
    f.write(b"\0asm\1\0\0\0" + bytes([0]) + leb(len(body) + payload) + body)
    chunk = bytes(1 << 20)
    left = payload
    while left:
        k = min(left, len(chunk))
        f.write(chunk[:k])
        left -= k
EOF
    fi
    run_air 60 run --json "$f"
    if ! why=$(expect_status 65 invalid_module); then fail $n "$why"; return; fi
    if [ "$WALL_MS" -ge 3000 ]; then fail $n "took $WALL_MS ms (bound: 3000)"; return; fi
    if ! J .error | grep -qiE 'large|size|limit|cap|exceed'; then
        fail $n "the error does not say the module is too large: $(J .error | head -c 160)"
        return
    fi
    ok "$n ($WALL_MS ms: $(J .error | head -c 80))"
}

# 300 MiB sparse file: refused from its size, without reading it.
case_huge_file() {
    local n=huge_module_file why f=$TMPD/huge-300m.wasm
    printf '\0asm\1\0\0\0' >"$f"
    truncate -s 300M "$f"
    run_air 60 run --json "$f"
    if ! why=$(expect_status 65 invalid_module); then fail $n "$why"; return; fi
    if [ "$WALL_MS" -ge 3000 ]; then fail $n "took $WALL_MS ms (bound: 3000)"; return; fi
    if [ "$RSS_KB" -ge 150000 ]; then fail $n "airlock max RSS $RSS_KB KiB: it read the file"; return; fi
    ok "$n ($WALL_MS ms, max RSS $((RSS_KB / 1024)) MiB)"
}

# Truncated and byte-flipped variants of a real guest: any clean outcome,
# never a crash, hang or sanitizer report; exit code consistent with status.
# corrupt_one FILE appends "NAME RC STATUS|REASON" to $TMPD/corrupt-$CORRUPT_KIND.$SHARD
# (REASON empty when the outcome was clean).
corrupt_one() {
    local f=$1 why= st ec out
    run_air 30 run --json --fuel 50000000 --timeout 5s --memory 64M "$f" -- a b
    why=$(harm)
    st=$(jq -r '.status' "$OUT_F" 2>/dev/null)
    if [ -z "$why" ]; then
        if ! is_json; then
            why="no JSON ($(brief))"
        elif [ "$st" = exit ]; then
            ec=$(($(J .exit_code) & 255))
            [ "$ec" -eq 0 ] && ec=1
            [ "$RC" -eq "$ec" ] || why="status exit but rc $RC, exit_code $(J .exit_code)"
        elif [ "$st" = output_truncated ]; then
            [ "$RC" -eq 0 ] || why="status output_truncated but rc $RC"
        else
            ec=
            [ -n "$st" ] && ec=${CODE_OF[$st]:-}
            if [ -z "$ec" ]; then
                why="unknown status \"$st\" (rc $RC)"
            elif [ "$RC" -ne "$ec" ]; then
                why="status $st but rc $RC (expected $ec)"
            fi
        fi
    fi
    if [ -n "$why" ]; then
        mkdir -p "$OUT/corrupt-failures"
        cp "$f" "$OUT/corrupt-failures/"
    fi
    echo "$(basename "$f") $RC ${st:-none}|$why" >>"$TMPD/corrupt-$CORRUPT_KIND.$SHARD"
}

case_corrupt() {
    local m dir=$TMPD/corrupt nf total summary kind why
    guest hello && m=$GUEST_M || { fail corrupt_truncated "$GUEST_WHY"; fail corrupt_flipped "$GUEST_WHY"; return; }
    # The unmodified module must run: otherwise the variants prove nothing.
    run_air 60 run --json "$m"
    if ! why=$(expect_status 0 ok) || ! guest_stdout | grep -q '^hello from'; then
        fail corrupt_truncated "the unmodified hello.wasm does not run: ${why:-$(brief)}"
        fail corrupt_flipped "the unmodified hello.wasm does not run: ${why:-$(brief)}"
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 - "$m" "$dir" "${AIRLOCK_SECURITY_CORRUPT:-300}" <<'EOF'
import os, random, sys
src, out, nflip = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
rng = random.Random(20240611)
# Section boundaries, to cut right at, before and after them.
cuts = set(range(0, 12))
pos = 8
while pos < len(data):
    sid, pos0 = data[pos], pos
    pos += 1
    size = shift = 0
    while True:
        b = data[pos]; pos += 1
        size |= (b & 0x7f) << shift; shift += 7
        if not b & 0x80: break
    for d in (-1, 0, 1, 2):
        cuts.add(pos0 + d); cuts.add(pos + d)
    pos += size
cuts |= {rng.randrange(len(data)) for _ in range(40)}
cuts = sorted(c for c in cuts if 0 <= c < len(data))
with open(os.path.join(out, "truncated.list"), "w") as lst:
    for c in cuts:
        p = os.path.join(out, "trunc-%06d.wasm" % c)
        open(p, "wb").write(data[:c])
        lst.write(p + "\n")
specials = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x0b, 0x40, 0x41, 0x10, 0x11, 0xfc, 0xfd]
with open(os.path.join(out, "flipped.list"), "w") as lst:
    for i in range(nflip):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 3, 4))):
            k = rng.randrange(8, len(b))
            op = rng.randrange(5)
            if op == 0: b[k] ^= 1 << rng.randrange(8)
            elif op == 1: b[k] = rng.randrange(256)
            elif op == 2: b[k] = rng.choice(specials)
            elif op == 3: del b[k]
            else: b.insert(k, rng.randrange(256))
        p = os.path.join(out, "flip-%04d.wasm" % i)
        open(p, "wb").write(bytes(b))
        lst.write(p + "\n")
EOF
    rm -rf "$OUT/corrupt-failures"
    for kind in truncated flipped; do
        want "corrupt_$kind" || continue
        rm -f "$TMPD/corrupt-$kind".*
        CORRUPT_KIND=$kind for_each_parallel "$dir/$kind.list" corrupt_one
        cat "$TMPD/corrupt-$kind".[0-9]* >"$TMPD/corrupt-$kind.all" 2>/dev/null
        total=$(wc -l <"$TMPD/corrupt-$kind.all")
        nf=$(grep -c '|.' "$TMPD/corrupt-$kind.all")
        summary=$(cut -d'|' -f1 "$TMPD/corrupt-$kind.all" | awk '{print $3}' | sort | uniq -c |
            awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
        if [ "$total" -ne "$(wc -l <"$dir/$kind.list")" ]; then
            fail "corrupt_$kind" "only $total of $(wc -l <"$dir/$kind.list") variants reported"
        elif [ "$nf" -eq 0 ]; then
            ok "corrupt_$kind ($total variants: $summary)"
        else
            fail "corrupt_$kind" "$nf of $total variants (kept in $OUT/corrupt-failures): $(grep '|.' "$TMPD/corrupt-$kind.all" | head -n 3 | sed 's/ [^|]*|/: /' | paste -sd '|')"
        fi
    done
}

# badptr_one I: attack I in a fresh HOST/bp; appends "I|REASON" to
# $TMPD/badptr.$SHARD (REASON empty when clean).
badptr_one() {
    local i=$1 d=$TMPD/bp-$SHARD why so
    rm -rf "$d"
    mkdir -p "$d"
    printf 'F-CONTENT' >"$d/f.txt"
    ln -s f.txt "$d/lnk_in"
    run_air 60 run --json --env A=B --dir "$d:/sandbox:rw" "$BADPTR" -- "$i"
    # the fd_write attacks may fill stderr past its cap
    why=$(PROTO_STATUS='ok|output_truncated' check_protocol)
    so=$(guest_stdout)
    echo "$i $(grep -m1 '^RET' <<<"$so" | cut -d' ' -f3- | cut -c1-60)|$why" >>"$TMPD/badptr.$SHARD"
}

case_badptr() {
    local n=wasi_bad_pointers count nf
    guest badptr && BADPTR=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 60 run --json "$BADPTR" -- count
    count=$(guest_stdout | sed -n 's/^COUNT \([0-9]*\)$/\1/p')
    if [ -z "$count" ]; then fail $n "could not list the attacks ($(brief))"; return; fi
    seq 0 $((count - 1)) >"$TMPD/badptr.list"
    rm -f "$TMPD"/badptr.[0-9]*
    for_each_parallel "$TMPD/badptr.list" badptr_one
    cat "$TMPD"/badptr.[0-9]* >"$TMPD/badptr.all" 2>/dev/null
    nf=$(grep -c '|.' "$TMPD/badptr.all")
    if [ "$(wc -l <"$TMPD/badptr.all")" -ne "$count" ]; then
        fail $n "only $(wc -l <"$TMPD/badptr.all") of $count attacks reported"
    elif [ "$nf" -eq 0 ]; then
        ok "$n ($count attacks, each refused with an errno or harmless)"
    else
        fail $n "$nf of $count attacks: $(grep '|.' "$TMPD/badptr.all" | sort -n | head -n 4 | paste -sd ';')"
    fi
}

case_fd_probe() {
    local n=host_fds_hidden m why f=$TMPD/hostfd.txt
    guest fd_probe && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    printf HOST-FD-SECRET >"$f"
    {
        run_air 120 run --json "$m"
    } 3<"$f" 4<"$f" 5<"$f" 6<>"$TMPD/hostfd-rw.txt" 7<"$f" 9<"$f" 10<"$f"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    if grep -q HOST-FD-SECRET "$OUT_F"; then fail $n "the host file's content reached the guest"; return; fi
    ok $n
}

# A FIFO in the grant, held open by a host peer that never writes (or never
# reads): the guest's read (or 1 MiB write) blocks inside the host, and
# --timeout 2s must still end the run (72) on time.
case_fifo() { # NAME read|write
    local n=$1 dir=$2 m why d=$TMPD/fifo-$2 holder
    guest fifo && m=$GUEST_M || { fail "$n" "$GUEST_WHY"; return; }
    rm -rf "$d"
    mkdir -p "$d"
    mkfifo "$d/fifo"
    # the peer opens the FIFO the other way (blocking until the guest opens
    # it) and sleeps
    if [ "$dir" = read ]; then
        ( exec 3>"$d/fifo"; exec sleep 60 ) >/dev/null 2>&1 &
    else
        ( exec 3<"$d/fifo"; exec sleep 60 ) >/dev/null 2>&1 &
    fi
    holder=$!
    run_air 8 run --json --timeout 2s --dir "$d:/work:rw" "$m" -- /work/fifo "$dir"
    # (a peer still blocked in its open dies of the signal too)
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    if ! why=$(expect_status 72 timeout); then fail "$n" "$why"; return; fi
    if [ "$WALL_MS" -ge 5000 ]; then fail "$n" "took $WALL_MS ms (bound: 5000)"; return; fi
    local doing=reading
    [ "$dir" = write ] && doing=writing
    if [ "$(guest_stdout | tail -n 1)" != "$doing" ]; then
        fail "$n" "the guest did not block in $dir: $(guest_stdout | tail -n 1)"
        return
    fi
    ok "$n ($WALL_MS ms)"
}

# Opening a granted file 200000 times: an error after some N, no harm to
# airlock (which still writes its JSON), and the guest recovers after closing.
case_fd_flood() {
    local n=fd_exhaustion m why d=$TMPD/fdflood
    guest fd_flood && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    rm -rf "$d"
    mkdir -p "$d"
    printf F >"$d/f.txt"
    run_air 120 run --json --dir "$d:/work" "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    ok "$n ($(guest_stdout | grep -m1 '^DENIED' | cut -c1-60))"
}

case_raise() {
    local n=proc_raise m why
    guest raise && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    run_air 30 run --json "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    ok "$n ($(guest_stdout | grep -m1 '^DENIED' | cut -d' ' -f2- | cut -c1-50))"
}

case_stdin() {
    local n=stdin_not_inherited m why so
    guest stdin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    printf 'HOST-STDIN-SECRET\n' >"$TMPD/host-stdin.txt"
    STDIN_F=$TMPD/host-stdin.txt run_air 60 run --json "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    so=$(guest_stdout)
    if ! grep -qx 'STDIN 0 bytes: ' <<<"$so"; then fail $n "$(grep '^STDIN' <<<"$so" | head -c 120)"; return; fi
    ok $n
}

case_stdin_granted() {
    local n=stdin_granted m why so
    guest stdin && m=$GUEST_M || { fail $n "$GUEST_WHY"; return; }
    printf 'HOST-STDIN-SECRET\n' >"$TMPD/host-stdin.txt"
    printf 'GRANTED-STDIN' >"$TMPD/granted-stdin.txt"
    STDIN_F=$TMPD/host-stdin.txt run_air 60 run --json --stdin "$TMPD/granted-stdin.txt" "$m"
    if ! why=$(check_protocol); then fail $n "$why"; return; fi
    so=$(guest_stdout)
    if ! grep -qx 'STDIN 13 bytes: GRANTED-STDIN' <<<"$so"; then fail $n "$(grep '^STDIN' <<<"$so" | head -c 120)"; return; fi
    ok $n
}

# ---- Python versions (airlock python FILE.py) ------------------------------------

PYTHON_WASM=build/python/python.wasm

# py_case NAME FILE EXPECT [FLAGS...]: run `airlock python --json FLAGS FILE`.
#   EXPECT: protocol        the snippet's DENIED/LEAK protocol: rc 0, status ok
#           timeout, fuel_exhausted, ...   exactly that status and its rc
#           recursion       RecursionError/MemoryError caught (protocol), a
#                           trap (70) or, for heap-bound recursion, the
#                           memory limit (73)
#           memory          MemoryError caught (protocol) or memory_limit (73),
#                           peak_memory_bytes within --memory 64M
#           flood           stdout exactly the 1 MiB cap, stdout_truncated
# Returns 1 (after reporting) when the case did not pass or was skipped.
py_case() {
    local n=$1 file=$SEC/python/$2 expect=$3 why peak
    shift 3
    if [ ! -f "$PYTHON_WASM" ]; then
        skip "$n" "$PYTHON_WASM not built yet (the Python executor comes later)"
        return 1
    fi
    if [ -z "${PYTHON_CLI:-}" ]; then
        # python.wasm may be built before the CLI learns `airlock python`.
        run_air 60 python --help
        if [ "$RC" -eq 2 ] && grep -qi 'unknown command' "$ERR_F"; then PYTHON_CLI=no; else PYTHON_CLI=yes; fi
    fi
    if [ "$PYTHON_CLI" = no ]; then
        skip "$n" "airlock has no \`python\` subcommand yet"
        return 1
    fi
    run_air 300 python --json "$@" "$file"
    case $expect in
    protocol)
        why=$(check_protocol) ;;
    recursion)
        if ! why=$(check_protocol) && [ -z "$(harm)" ]; then
            why=$(expect_status 70 trap) || why=$(expect_status 73 memory_limit) ||
                why="expected a caught RecursionError/MemoryError, a trap or memory_limit, got $(brief)"
        fi ;;
    memory)
        if ! why=$(check_protocol) && [ -z "$(harm)" ]; then
            why=$(expect_status 73 memory_limit)
        fi
        peak=$(J .peak_memory_bytes)
        if [ -z "$why" ] && { ! [[ $peak =~ ^[0-9]+$ ]] || [ "$peak" -gt $((64 << 20)) ]; }; then
            why="peak_memory_bytes $peak over the 64 MiB limit"
        fi ;;
    flood)
        why=$(harm)
        if [ -z "$why" ]; then
            if ! is_json || [ "$RC" -ne 0 ] || [ "$(J .stdout_truncated)" != true ]; then
                why="expected rc 0 and stdout_truncated, got $(brief)"
            elif [ "$(jq -j .stdout "$OUT_F" | wc -c)" -ne "$CAP" ]; then
                why="stdout is $(jq -j .stdout "$OUT_F" | wc -c) bytes, expected exactly $CAP"
            elif [ "$RSS_KB" -ge 400000 ]; then
                why="airlock max RSS $RSS_KB KiB"
            fi
        fi ;;
    *)
        why=$(expect_status "${CODE_OF[$expect]}" "$expect") ;;
    esac
    if [ -n "$why" ]; then
        fail "$n" "$why"
        return 1
    fi
    return 0
}

python_cases() {
    local d before why heard
    if want python_read_passwd; then
        py_case python_read_passwd read_passwd.py protocol && ok python_read_passwd
    fi
    if want python_list_etc; then
        py_case python_list_etc list_etc.py protocol && ok python_list_etc
    fi
    if want python_traversal; then
        d=$TMPD/py-traversal
        make_tree "$d"
        before=$(snapshot "$d/outside")
        if py_case python_traversal traversal.py protocol --dir "$d/root:/work:rw"; then
            if why=$(check_outside "$d" "$before"); then ok python_traversal; else fail python_traversal "$why"; fi
        fi
    fi
    if want python_symlinks; then
        d=$TMPD/py-symlinks
        make_tree "$d"
        ln -s /etc "$d/root/etclink"
        ln -s ../outside "$d/root/outlink"
        ln -s loop2 "$d/root/loop1"
        ln -s loop1 "$d/root/loop2"
        ln -s ../outside/created "$d/root/dangling"
        before=$(snapshot "$d/outside")
        if py_case python_symlinks symlinks.py protocol --dir "$d/root:/work:rw"; then
            if why=$(check_outside "$d" "$before"); then ok python_symlinks; else fail python_symlinks "$why"; fi
        fi
    fi
    if want python_readonly; then
        d=$TMPD/py-ro
        rm -rf "$d"
        mkdir -p "$d/ro/emptydir" "$d/ro/sub"
        printf RO-CONTENT >"$d/ro/file.txt"
        touch -d '2001-02-03 04:05:06' "$d/ro/file.txt" "$d/ro/emptydir" "$d/ro/sub" "$d/ro"
        before=$(snapshot "$d")
        if py_case python_readonly readonly.py protocol --dir "$d/ro:/data:ro"; then
            if [ "$(snapshot "$d")" = "$before" ]; then ok python_readonly; else fail python_readonly "the read-only host directory changed"; fi
        fi
    fi
    if want python_socket; then
        if py_case python_socket socket_connect.py protocol --env "PORT=${LISTENER_PORT:-9}"; then
            if heard=$(listener_heard); then fail python_socket "the listener received: $heard"; else ok python_socket; fi
        fi
    fi
    if want python_env; then
        if AIRLOCK_SECRET=hunter2 py_case python_env env.py protocol --env GRANTED=yes; then
            if grep -q hunter2 "$OUT_F" "$ERR_F"; then fail python_env "hunter2 appears in the output"; else ok python_env; fi
        fi
    fi
    if want python_timeout; then
        if py_case python_timeout spin.py timeout --timeout 1s; then
            if [ "$(guest_stdout)" != spinning ]; then
                fail python_timeout "the loop was never reached: stdout \"$(guest_stdout | head -c 80)\""
            elif [ "$WALL_MS" -ge 4000 ]; then
                fail python_timeout "took $WALL_MS ms (bound 4000)"
            else
                ok "python_timeout ($WALL_MS ms)"
            fi
        fi
    fi
    if want python_fuel; then
        # start-up costs about 80 million instructions: 300 million reach the loop
        if py_case python_fuel spin.py fuel_exhausted --fuel 300000000; then
            if [ "$(guest_stdout)" != spinning ]; then
                fail python_fuel "the loop was never reached: stdout \"$(guest_stdout | head -c 80)\""
            elif [ "$(J .fuel_used)" -lt 300000000 ] || [ "$(J .fuel_used)" -gt 600000000 ]; then
                fail python_fuel "fuel_used $(J .fuel_used), expected the budget of 300000000"
            else
                ok "python_fuel (fuel_used $(J .fuel_used))"
            fi
        fi
    fi
    if want python_memory; then
        py_case python_memory memhog.py memory --memory 64M && ok "python_memory ($(J .status))"
    fi
    if want python_recursion; then
        py_case python_recursion recursion.py recursion --memory 32M && ok "python_recursion ($(J .status): $(guest_stdout | grep -m1 '^DENIED' | cut -c10-60)$(J .trap | grep -v null))"
    fi
    if want python_recursion_c; then
        py_case python_recursion_c recursion_c.py recursion && ok "python_recursion_c ($(J .status): $(guest_stdout | grep -m1 '^DENIED' | cut -c10-60)$(J .trap | grep -v null))"
    fi
    if want python_output_flood; then
        py_case python_output_flood flood.py flood && ok python_output_flood
    fi
    if want python_stdin; then
        printf 'HOST-STDIN-SECRET\n' >"$TMPD/host-stdin.txt"
        STDIN_F=$TMPD/host-stdin.txt py_case python_stdin stdin.py protocol && ok python_stdin
    fi
    if want python_host_fds; then
        printf HOST-FD-SECRET >"$TMPD/hostfd.txt"
        { py_case python_host_fds fd_probe.py protocol && ok python_host_fds; } 3<"$TMPD/hostfd.txt" 7<"$TMPD/hostfd.txt"
    fi
}

# ---- main -------------------------------------------------------------------------

if ! command -v "${AIRLOCK_CMD[0]}" >/dev/null 2>&1 && [ ! -x "${AIRLOCK_CMD[0]}" ]; then
    echo "FAIL - setup: airlock binary ${AIRLOCK_CMD[0]} not found (make asan)"
    echo "0 skipped"
    echo "0 passed, 1 failed"
    exit 1
fi
ls -d /escape_abs_root /escape_abs /g_created /created_abs 2>/dev/null >"$TMPD/preexisting"
# Test a snapshot of the binary: other people may rebuild build/asan while
# this runs.
if [ "${#AIRLOCK_CMD[@]}" -eq 1 ] && [ -f "${AIRLOCK_CMD[0]}" ]; then
    cp "${AIRLOCK_CMD[0]}" "$OUT/airlock-under-test" && AIRLOCK_CMD=("$OUT/airlock-under-test")
fi
build_guests

want read_passwd && case_read_passwd
want list_etc && case_list_etc
want traversal && case_traversal
want symlinks && case_symlinks
want symlink_race && case_symlink_race
want readonly_preopen && case_readonly
if want sockets_wasi || want sockets_wasmedge || want sockets_wasix || want python_socket; then
    start_listener
fi
want sockets_wasi && case_sockets
want sockets_wasmedge && case_sockets_ext sockets_wasmedge sock_ext
want sockets_wasix && case_sockets_ext sockets_wasix sock_wasix
want env_not_inherited && case_env
want timeout_spin && case_timeout
want timeout_sleep && case_timeout_sleep
want fuel_exhausted && case_fuel
want fuel_sufficient && case_fuel_enough
want memory_limit_malloc && case_memory
want memory_limit_trap && case_memory_trap
want memory_limit_grow && case_memory_grow
want memory_limit_declared && case_memory_declared
want table_limit && case_table_limit
want stack_exhausted && case_recursion stack_exhausted
want stack_exhausted_wide && case_recursion stack_exhausted_wide wide
want output_flood_stdout && case_flood output_flood_stdout stdout
want output_flood_stderr && case_flood output_flood_stderr stderr
want output_flood_plain && case_flood_plain
want huge_module && case_huge_module
want huge_module_file && case_huge_file
{ want corrupt_truncated || want corrupt_flipped; } && case_corrupt
want wasi_bad_pointers && case_badptr
want host_fds_hidden && case_fd_probe
want fifo_blocking_read && case_fifo fifo_blocking_read read
want fifo_blocking_write && case_fifo fifo_blocking_write write
want fd_exhaustion && case_fd_flood
want proc_raise && case_raise
want stdin_not_inherited && case_stdin
want stdin_granted && case_stdin_granted
python_cases
stop_listener

echo "$SKIPPED skipped"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
