#!/usr/bin/env bash
# tests/sandbox/run.sh — the escape battery of the native and gVisor backends
# (`airlock exec`), with real programs: Debian's python3 and /bin/sh inside.
# Every case is an attack by the sandboxed program and FAILS if the attack
# worked, if the sandbox did not report sanely (one JSON object with every
# field, exit status = status, backend named, no host secret anywhere in the
# output), if airlock itself was harmed (sanitizer report, hang), or if a
# sandboxed process outlived its run. Then a few good programs must work.
#
#   tests/sandbox/run.sh [PATTERN]   cases whose "backend/name" matches PATTERN
#                                    (a bash regex; default: all)
#   AIRLOCK=build/asan/airlock       the binary under test (default; a copy is
#                                    tested, so a concurrent rebuild cannot
#                                    change it mid-run); may be a command
#   SANDBOX_BACKENDS="native gvisor" the backends to try (default both; gvisor
#                                    runs only when `airlock doctor --json`
#                                    says it is available, else "SKIP gvisor:
#                                    reason" and nothing is counted)
#
# The guests are tests/sandbox/guests/*.py (each run as `python3 -c
# "$(cat common.py NAME.py)" TAG`, see common.py for their DENIED/LEAK/WRONG
# protocol); tests/sandbox/check.py judges each result; tests/sandbox/
# listener.py is the host's loopback server the network case tries to reach.
#
# Host fixtures, all in one temp dir (removed on exit, with every helper
# process): a secret file outside every grant (world-readable, so only the
# sandbox's view of the file system hides it), a not-granted directory (mode
# 777), a read-only grant owned by the sandbox's uid (so only :ro protects
# it), a setuid-root copy of `id` (as root), a `sleep` of the sandbox's own
# host uid (so only the pid namespace protects it from signals and ptrace),
# the loopback listener, and two secrets in airlock's own environment.
#
# Output: "PASS backend/name" or "FAIL backend/name: why" per case, then the
# last line "N passed, N failed" (summed by tests/run-all.sh); exit status 1
# if anything failed. Needs bash, python3 (host side: /usr/bin/python3),
# coreutils timeout, procps pgrep, util-linux setpriv (as root).
set -u

cd "$(dirname "$0")/../.." || exit 2
HERE=tests/sandbox
FILTER=${1:-}
read -r -a AIRLOCK_CMD <<<"${AIRLOCK:-build/asan/airlock}"
BACKENDS=${SANDBOX_BACKENDS:-native gvisor}

# shellcheck source=tests/lib/cases.bash
source tests/lib/cases.bash

# ---- fixtures ------------------------------------------------------------------

T=$(mktemp -d /tmp/airlock-sandbox.XXXXXX) || exit 2
chmod 755 "$T" # the sandbox's uid must be able to reach the grants under it
STATE=$T/state
HELPERS=()
cleanup() {
    local pid id
    for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null; done
    # containers a failed case left under our own state directory
    if [ -d "$STATE/runsc" ] && command -v runsc >/dev/null; then
        for id in $(runsc --root "$STATE/runsc" list -quiet 2>/dev/null); do
            runsc --root "$STATE/runsc" kill "$id" KILL >/dev/null 2>&1
            runsc --root "$STATE/runsc" delete -force "$id" >/dev/null 2>&1
        done
    fi
    for pid in "${HELPERS[@]}"; do wait "$pid" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/run" "$T/bin" "$STATE"

if [ "${#AIRLOCK_CMD[@]}" -eq 1 ] && [ -f "${AIRLOCK_CMD[0]}" ]; then
    cp "${AIRLOCK_CMD[0]}" "$T/bin/airlock" && AIRLOCK_CMD=("$T/bin/airlock")
elif ! command -v "${AIRLOCK_CMD[0]}" >/dev/null 2>&1; then
    fail setup "airlock binary ${AIRLOCK_CMD[0]} not found (make asan)"
    finish
fi

IS_ROOT=0
[ "$(id -u)" -eq 0 ] && IS_ROOT=1
# as_guest_owner PATH...: owned by the host uid the sandbox's uid 1000 maps to
as_guest_owner() { [ $IS_ROOT -eq 0 ] || chown -R 1000:1000 "$@"; }

# Unique names: no other run (or anything else on the host) shares them.
GUEST_TAG=airlock-sbx-guest-$$
SLEEP_HOST=71$$3  # the host's sleep
SLEEP_T=72$$3     # background children of the timeout case
SLEEP_K=73$$3     # the program of the killed-airlock case
UNIX_NAME=airlock-sbx-$$

# Two host secrets: a file outside every grant and a variable in airlock's
# own environment. check.py fails any run whose output contains either.
SECRET_TOKEN=airlock-file-secret-$RANDOM$RANDOM$$
mkdir -p "$T/secret"
printf '%s\n' "$SECRET_TOKEN" >"$T/secret/key"
chmod 755 "$T/secret"
chmod 644 "$T/secret/key"
SECRET_FILE=$T/secret/key
export AIRLOCK_TEST_SECRET=airlock-env-secret-$RANDOM$RANDOM$$
export SANDBOX_SECRETS="$SECRET_TOKEN $AIRLOCK_TEST_SECRET"

# A host process of the sandbox's own host uid: only the pid namespace keeps
# it out of reach.
if [ $IS_ROOT -eq 1 ]; then
    setpriv --reuid=1000 --regid=1000 --clear-groups -- sleep "$SLEEP_HOST" &
else
    sleep "$SLEEP_HOST" &
fi
HOST_PID=$!
HELPERS+=("$HOST_PID")

"$HOST_PY" "$HERE/listener.py" "$T/ports" "$T/listener.log" "$UNIX_NAME" &
HELPERS+=("$!")
for _ in $(seq 50); do [ -s "$T/ports" ] && break; sleep 0.1; done
read -r TCP_PORT UDP_PORT <"$T/ports" 2>/dev/null || { fail setup "the loopback listener did not start"; finish; }

# ---- running airlock -------------------------------------------------------------

# run_exec TIMEOUT_S ARGS...: `airlock exec --json --isolation $B --state-dir
# $STATE ARGS...` under the harness's own timeout; stdin from $STDIN_F
# (default /dev/null). Sets RC, OUT_F, ERR_F, WALL_MS, LIMIT_MS.
RUN_N=0
run_exec() {
    local t=$1 start end
    shift
    RUN_N=$((RUN_N + 1))
    OUT_F=$T/run/$RUN_N.out
    ERR_F=$T/run/$RUN_N.err
    LIMIT_MS=$((t * 1000))
    start=$(date +%s%N)
    timeout -k 5 "$t" "${AIRLOCK_CMD[@]}" exec --json --isolation "$B" --state-dir "$STATE" "$@" \
        <"${STDIN_F:-/dev/null}" >"$OUT_F" 2>"$ERR_F"
    RC=$?
    end=$(date +%s%N)
    WALL_MS=$(((end - start) / 1000000))
}

# py TIMEOUT_S NAME [OPTIONS...]: guest NAME.py (after common.py) in python3
py() {
    local t=$1 name=$2
    shift 2
    run_exec "$t" --env "BACKEND=$B" "$@" -- python3 -c \
        "$(cat "$HERE/guests/common.py" "$HERE/guests/$name.py")" "$GUEST_TAG"
}

# survivors: host processes of sandboxes that should have ended: anything
# carrying the guest tag, the timeout case's sleeps, runsc processes of our
# state directory. Checked at once (airlock returns after its whole tree is
# gone); prints what is there, and whether it was still there 2 s later.
survivors() {
    local pattern="$GUEST_TAG|sleep $SLEEP_T|$STATE" left later
    left=$(pgrep -a -f -- "$pattern" | cut -c1-160)
    [ -z "$left" ] && return 0
    sleep 2
    later=$(pgrep -a -f -- "$pattern" | cut -c1-160)
    printf 'processes outlived the run%s:\n%s\n' \
        "$([ -z "$later" ] && echo ' (gone 2 s later)')" "$left"
}

# sane [check.py OPTIONS]: the last run was sane and matched; prints why not
sane() {
    local why left
    if [ "$WALL_MS" -ge "$LIMIT_MS" ] && { [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; }; then
        why="airlock did not finish within the harness's $((LIMIT_MS / 1000)) s (rc $RC); stderr: $(head -c 300 "$ERR_F")"
    else
        why=$("$HOST_PY" "$HERE/check.py" --out "$OUT_F" --err "$ERR_F" --rc "$RC" --backend "$B" "$@")
    fi
    left=$(survivors)
    why=$(printf '%s\n%s' "$why" "$left" | sed '/^$/d')
    [ -z "$why" ] || { echo "$why"; return 1; }
}

field() { "$HOST_PY" "$HERE/check.py" --get "$1" --out "$OUT_F"; }
# snapshot DIR: names, types, modes, owners, sizes, mtimes, link targets, checksums
snapshot() {
    (
        cd "$1" || exit 1
        find . -printf '%p|%y|%m|%U|%s|%T@|%l\n' | LC_ALL=C sort
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    )
}
file_id() { stat -c '%s %Y %Z %h %i %a %U' "$1"; sha256sum "$1"; }
host_sleep_ok() {
    if ! kill -0 "$HOST_PID" 2>/dev/null; then
        echo "the host's sleep (pid $HOST_PID) is dead"
    elif [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$HOST_PID/status")" != 0 ]; then
        echo "the host's sleep (pid $HOST_PID) is being traced"
    fi
}
native_denied() { # the seccomp filter counted the refusals (native only)
    if [ "$B" = native ]; then echo "--expr=d['denied_syscalls'] >= $1"; else echo "--expr=True"; fi
}

# ---- the attacks -----------------------------------------------------------------

case_read_secrets() {
    local n=$B/read_secrets why
    py 60 secrets --env "SECRET_FILE=$SECRET_FILE" --env "HOST_TMP=$T"
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    run_exec 60 -- /bin/sh -c 'cat /etc/shadow "$1"; echo "rc=$?"' "$GUEST_TAG" "$SECRET_FILE"
    why=$(sane --expr 'lines == ["rc=1"]') || { fail "$n" "(sh) $why"; return; }
    pass "$n"
}

case_write_outside() {
    local n=$B/write_outside why u=airlock-escape-$$-$B ng=$T/notgranted-$B before env_before p leaked=""
    mkdir -p "$ng"
    echo keep >"$ng/existing"
    chmod 777 "$ng"
    chmod 666 "$ng/existing"
    before=$(snapshot "$ng")
    env_before=$(file_id /usr/bin/env)
    py 60 write_outside --env "UNIQUE=$u" --env "NOT_GRANTED=$ng"
    why=$(sane --protocol)
    for p in /usr /usr/bin /usr/lib /etc "" /var /home /tmp "$ng"; do
        # a hole's probe files carry our unique name: report, then remove them
        if [ -e "$p/$u" ] || [ -L "$p/$u" ]; then leaked+=" $p/$u"; rm -f "$p/$u"; fi
        if [ -d "$p/$u.d" ]; then leaked+=" $p/$u.d"; rmdir "$p/$u.d"; fi
    done
    [ -z "$leaked" ] || why+=$'\n'"files appeared on the host:$leaked"
    [ "$(snapshot "$ng")" = "$before" ] || why+=$'\n'"the not-granted host directory changed"
    [ "$(file_id /usr/bin/env)" = "$env_before" ] || why+=$'\n'"the host's /usr/bin/env changed"
    why=$(sed '/^$/d' <<<"$why")
    if [ -n "$why" ]; then fail "$n" "$why"; else pass "$n"; fi
}

case_readonly_grant() {
    local n=$B/readonly_grant why d=$T/ro-$B before
    mkdir -p "$d/emptydir" "$d/sub"
    printf RO-CONTENT >"$d/file.txt"
    echo inner >"$d/sub/inner.txt"
    chmod -R a+rwX "$d"
    as_guest_owner "$d"
    touch -d '2001-02-03 04:05:06' "$d/file.txt" "$d/sub/inner.txt" "$d/sub" "$d/emptydir" "$d"
    before=$(snapshot "$d")
    py 60 ro_grant --dir "$d:/data:ro"
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    [ "$(snapshot "$d")" = "$before" ] || { fail "$n" "the read-only grant changed on the host"; return; }
    pass "$n"
}

case_network() {
    local n=$B/loopback_connect why
    : >"$T/listener.log"
    py 60 net --env "TCP_PORT=$TCP_PORT" --env "UDP_PORT=$UDP_PORT" --env "UNIX_NAME=$UNIX_NAME"
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    run_exec 60 -- /usr/bin/bash -c 'echo ESCAPED >/dev/tcp/127.0.0.1/$1; echo "rc=$?"' "$GUEST_TAG" "$TCP_PORT"
    why=$(sane --expr 'len(lines) == 1 and lines[0] != "rc=0"') || { fail "$n" "(bash /dev/tcp) $why"; return; }
    sleep 0.2
    if [ -s "$T/listener.log" ]; then
        fail "$n" "the host's loopback listener heard: $(head -c 300 "$T/listener.log")"
        return
    fi
    pass "$n"
}

case_fork_bomb() {
    local n=$B/fork_bomb why forks reported='"processes" in d["limits_hit"]' note=""
    # A refused fork is reported (limits_hit "processes") when a pids cgroup
    # refused it; RLIMIT_NPROC (native without cgroups, gVisor's rlimits)
    # refuses silently: there only containment is checked.
    if [ "$B" != native ] || [ "$CGROUPS" != yes ]; then reported=True note="; refused by an rlimit: "; fi
    py 60 forkbomb --processes 16 --timeout 3s
    why=$(sane --status timeout --expr 're.fullmatch(r"FORKS \d+ errno 11", lines[0])' \
        --expr 'int(lines[0].split()[1]) < 16' --expr "$reported")
    [ -z "$why" ] || { fail "$n" "(python os.fork) $why"; return; }
    forks=$(field stdout | head -n 1)
    [ -z "$note" ] || note+="limits_hit $(field limits_hit)"
    # dash gives up ("Cannot fork", exit 2) when its own fork is refused, so
    # the tree may end before the timeout: either way, refused and all gone
    run_exec 60 --processes 32 --timeout 2s -- /bin/sh -c 'b() { b | b & }; b; while :; do :; done' "$GUEST_TAG"
    why=$(sane --status 'timeout|exit' --expr "$reported")
    [ -z "$why" ] || { fail "$n" "(sh) $why"; return; }
    /bin/true || { fail "$n" "the host cannot start a process afterwards"; return; }
    pass "$n (python: ${forks:-?}; sh: $(field status) after $(field wall_ms) ms$note)"
}

case_memory_bomb() {
    local n=$B/memory_bomb why status
    py 60 membomb --memory 64M --timeout 30s
    local no_escape='not any(l.startswith("ESCAPED") for l in lines)'
    local bounded='max([int(l.split()[1]) for l in lines if l.startswith("ALLOC ")] + [0]) <= 96'
    if [ "$B" = native ] && [ "$CGROUPS" = yes ]; then
        why=$(sane --status memory_limit --expr "$no_escape" --expr "$bounded" \
            --expr 'd["peak_memory_bytes"] <= 96 << 20' --expr 'd["peak_memory_bytes"] >= 32 << 20')
    else # RLIMIT_AS (MemoryError, which the guest catches) or the backend's own limit
        why=$(sane --status 'memory_limit|ok|exit|signaled' --expr "$no_escape" --expr "$bounded" \
            --expr 'd["status"] == "memory_limit" or any(l.startswith("MEMERR") for l in lines)')
    fi
    [ -z "$why" ] || { fail "$n" "$why"; return; }
    status=$(field status)
    pass "$n ($status, peak $(($(field peak_memory_bytes) >> 20)) MiB, last: $(field stdout | tail -n 1))"
}

case_ptrace() {
    local n=$B/ptrace why
    py 60 ptrace --env "HOST_PID=$HOST_PID"
    why=$(sane --protocol "$(native_denied 4)") || { fail "$n" "$why"; return; }
    why=$(host_sleep_ok)
    [ -z "$why" ] || { fail "$n" "$why"; return; }
    pass "$n (denied_syscalls $(field denied_syscalls))"
}

case_mount() {
    local n=$B/mount why
    py 60 mount
    why=$(sane --protocol "$(native_denied 7)") || { fail "$n" "$why"; return; }
    pass "$n (denied_syscalls $(field denied_syscalls))"
}

case_unshare() {
    local n=$B/unshare why expr
    py 60 unshare
    why=$(sane --protocol "$(native_denied 13)") || { fail "$n" "$why"; return; }
    run_exec 60 -- /bin/sh -c 'unshare -U true; echo "U=$?"; unshare -n true; echo "N=$?"; unshare -m true; echo "M=$?"' "$GUEST_TAG"
    expr='len(lines) == 3 and all(l[2:] != "0" for l in lines)'
    # gVisor's own kernel has user namespaces: only the others must fail there
    [ "$B" = native ] || expr='len(lines) == 3 and lines[1] != "N=0" and lines[2] != "M=0"'
    why=$(sane --expr "$expr") || { fail "$n" "(unshare(1)) $why"; return; }
    pass "$n"
}

case_raw_sockets() {
    local n=$B/raw_sockets why
    py 60 rawsock
    why=$(sane --protocol "$(native_denied 10)") || { fail "$n" "$why"; return; }
    pass "$n (denied_syscalls $(field denied_syscalls))"
}

case_seccomp_list() { # native only: gVisor's kernel is its boundary
    local n=$B/seccomp_deny_list why
    py 60 syscalls
    why=$(sane --protocol "$(native_denied 15)") || { fail "$n" "$why"; return; }
    pass "$n (denied_syscalls $(field denied_syscalls))"
}

case_proc() {
    local n=$B/proc_host why
    py 60 proc --env "TEST_PID=$$" --env "HOST_PID=$HOST_PID" --env "MARKER=$SLEEP_HOST" --env "SECRET_FILE=$SECRET_FILE"
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    pass "$n ($(field stdout | grep -m1 '^INFO pids' | cut -c6-80))"
}

case_setuid() {
    local n=$B/setuid why suid=0 opts=()
    if [ $IS_ROOT -eq 1 ]; then # a setuid-root binary inside a grant
        mkdir -p "$T/suid"
        cp /usr/bin/id "$T/suid/id"
        chown root:root "$T/suid/id"
        chmod 4755 "$T/suid/id"
        suid=1
        opts=(--dir "$T/suid:/suid:ro")
    fi
    py 60 identity --env "SUID=$suid" "${opts[@]}"
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    pass "$n$([ $suid = 1 ] || echo ' (no setuid-root fixture: not root)')"
}

case_uid() {
    local n=$B/uid why
    run_exec 60 -- /bin/sh -c 'id -u; id -g; id -G' "$GUEST_TAG"
    why=$(sane --expr 'lines == ["1000", "1000", "1000"]') || { fail "$n" "$why"; return; }
    pass "$n"
}

case_signals() {
    local n=$B/signal_host why
    py 60 signals --env "HOST_PID=$HOST_PID" --env "TEST_PID=$$"
    why=$(sane --protocol)
    why+=$(host_sleep_ok)
    [ -z "$why" ] || { fail "$n" "$why"; return; }
    pass "$n"
}

case_devices() {
    local n=$B/devices why
    py 60 devices
    why=$(sane --protocol) || { fail "$n" "$why"; return; }
    pass "$n"
}

case_timeout_children() {
    local n=$B/timeout_children why max_ms=6000
    [ "$B" = gvisor ] && max_ms=12000
    run_exec 30 --timeout 1s -- /bin/sh -c \
        'sleep $1 & sleep $1 & (setsid sleep $1 &); nohup sleep $1 >/dev/null 2>&1 & echo started; while :; do :; done' \
        "$GUEST_TAG" "$SLEEP_T"
    why=$(sane --status timeout --expr 'out == "started\n"' --expr 'd["wall_ms"] >= 900') || { fail "$n" "$why"; return; }
    [ "$WALL_MS" -lt "$max_ms" ] || { fail "$n" "took $WALL_MS ms for a 1 s timeout (bound $max_ms)"; return; }
    pass "$n ($WALL_MS ms)"
}

case_env() {
    local n=$B/clean_env why
    run_exec 60 --env GRANTED=yes -- /usr/bin/env
    why=$(sane --expr '{l.split("=", 1)[0] for l in lines} <= {"GRANTED", "PATH", "HOME", "LANG"}' \
        --expr '"GRANTED=yes" in lines' --expr 'any(l.startswith("PATH=") for l in lines)') || { fail "$n" "$why"; return; }
    py 60 procdump --env GRANTED=yes
    why=$(sane --protocol) || { fail "$n" "(/proc/*/environ) $why"; return; }
    pass "$n"
}

case_hostname() {
    local n=$B/hostname why host
    host=$(uname -n)
    run_exec 60 -- /bin/sh -c 'uname -n; hostname' "$GUEST_TAG"
    why=$(sane --expr "len(lines) == 2 and lines[0] == lines[1] and lines[0] not in ('', '$host')") || { fail "$n" "$why"; return; }
    pass "$n ($(field stdout | head -n 1))"
}

case_killed_airlock() { # SIGKILL airlock mid-run: nothing of the sandbox survives
    local n=$B/killed_airlock apid running="" why left
    "${AIRLOCK_CMD[@]}" exec --isolation "$B" --state-dir "$STATE" -- /bin/sh -c 'sleep $1; :' "$GUEST_TAG" "$SLEEP_K" \
        </dev/null >"$T/run/killed.out" 2>&1 &
    apid=$!
    for _ in $(seq 100); do
        if [ "$B" = native ]; then
            running=$(pgrep -f -- "sleep $SLEEP_K")
        else
            running=$(runsc --root "$STATE/runsc" list 2>/dev/null | grep -w running)
        fi
        [ -n "$running" ] && break
        sleep 0.1
    done
    if [ -z "$running" ]; then
        kill -9 "$apid" 2>/dev/null
        wait "$apid" 2>/dev/null
        fail "$n" "the program never started: $(head -c 300 "$T/run/killed.out")"
        return
    fi
    kill -9 "$apid"
    wait "$apid" 2>/dev/null
    if [ "$B" = native ]; then # the sandbox dies with its airlock (no gc needed)
        for _ in $(seq 30); do
            left=$(pgrep -a -f -- "sleep $SLEEP_K|$GUEST_TAG")
            [ -z "$left" ] && break
            sleep 0.1
        done
        if [ -n "$left" ]; then
            fail "$n" "3 s after airlock's SIGKILL the sandbox still runs: $left"
            return
        fi
    fi
    "${AIRLOCK_CMD[@]}" gc --state-dir "$STATE" >"$T/run/gc.out" 2>&1 || {
        fail "$n" "airlock gc failed: $(head -c 300 "$T/run/gc.out")"
        return
    }
    why=$(leftover_state)
    [ -z "$why" ] || { fail "$n" "after airlock gc: $why"; return; }
    pass "$n (gc: $(head -n 1 "$T/run/gc.out" | cut -c1-80))"
}

# what remains in our state directory of finished sandboxes
leftover_state() {
    local ids left
    for _ in $(seq 30); do
        ids=$(runsc --root "$STATE/runsc" list -quiet 2>/dev/null | tr '\n' ' ')
        left=$(pgrep -a -f -- "$STATE|$GUEST_TAG" | cut -c1-160)
        [ -z "$ids$left" ] && break
        sleep 0.1
    done
    [ -z "$ids" ] || echo "runsc containers remain: $ids"
    [ -z "$left" ] || echo "processes remain: $left"
    if [ -d "$STATE/bundles" ] && [ -n "$(ls -A "$STATE/bundles")" ]; then
        echo "bundles remain: $(ls -A "$STATE/bundles" | head -n 5 | tr '\n' ' ')"
    fi
}

case_no_leftovers() {
    local n=$B/no_leftovers why
    why=$(leftover_state)
    [ -z "$why" ] || { fail "$n" "$why"; return; }
    pass "$n"
}

# ---- limits ------------------------------------------------------------------------

case_cpu_limit() {
    local n=$B/cpu_limit why
    run_exec 60 --cpu-time 1s --timeout 20s -- /bin/sh -c 'while :; do :; done' "$GUEST_TAG"
    why=$(sane --status cpu_limit --expr 'd["cpu_ms"] >= 900' --expr 'd["wall_ms"] < 10000') || { fail "$n" "$why"; return; }
    pass "$n (cpu $(field cpu_ms) ms, wall $(field wall_ms) ms)"
}

case_tmpfs_limit() {
    local n=$B/tmpfs_limit why
    py 60 fill --tmpfs 8M --env PATH_TO_FILL=/tmp/fill
    why=$(sane --expr 're.fullmatch(r"WROTE \d+ errno 28", lines[-1])' \
        --expr 'int(lines[-1].split()[1]) <= 8 << 20') || { fail "$n" "$why"; return; }
    pass "$n ($(field stdout | tail -n 1))"
}

case_file_size_limit() {
    local n=$B/file_size_limit why ws=$T/ws-fsize-$B size
    mkdir -p "$ws"
    as_guest_owner "$ws"
    py 60 fill --dir "$ws:/workspace:rw" --file-size 1M --env PATH_TO_FILL=/workspace/big
    why=$(sane --expr 're.fullmatch(r"WROTE \d+ errno 27", lines[-1])' \
        --expr 'int(lines[-1].split()[1]) <= 1 << 20') || { fail "$n" "$why"; return; }
    size=$(stat -c %s "$ws/big" 2>/dev/null || echo missing)
    [ "$size" != missing ] && [ "$size" -le 1048576 ] || { fail "$n" "the host file is $size bytes"; return; }
    pass "$n ($(field stdout | tail -n 1), limits_hit $(field limits_hit))"
}

case_output_flood() {
    local n=$B/output_flood why
    run_exec 60 -- /bin/sh -c 'yes | head -c 3000000' "$GUEST_TAG"
    why=$(sane --status output_truncated --expr 'd["stdout_truncated"] and len(out) == 1 << 20' \
        --expr 'out == "y\n" * (1 << 19)') || { fail "$n" "$why"; return; }
    pass "$n"
}

# ---- good programs -------------------------------------------------------------------

case_compute() {
    local n=$B/python_workspace why ws=$T/ws-$B owner
    mkdir -p "$ws"
    as_guest_owner "$ws"
    py 60 compute --dir "$ws:/workspace:rw"
    why=$(sane --expr 'out == "333833500\n"') || { fail "$n" "$why"; return; }
    [ "$(cat "$ws/result.txt" 2>/dev/null)" = 333833500 ] || { fail "$n" "the host reads \"$(head -c 80 "$ws/result.txt" 2>&1)\""; return; }
    cmp -s "$ws/out/deep/data.bin" <("$HOST_PY" -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 64)') ||
        { fail "$n" "out/deep/data.bin differs on the host"; return; }
    owner=$(stat -c %u "$ws/result.txt")
    if [ $IS_ROOT -eq 1 ] && [ "$owner" != 1000 ]; then fail "$n" "result.txt is owned by host uid $owner, want 1000"; return; fi
    pass "$n"
}

case_pipeline() {
    local n=$B/shell_pipeline why
    run_exec 60 -- /bin/sh -c "printf 'b\\na\\n' | sort | tr a-z A-Z" "$GUEST_TAG"
    why=$(sane --expr 'out == "A\nB\n"' --expr 'd["stderr"] == ""') || { fail "$n" "$why"; return; }
    pass "$n"
}

case_stdin() {
    local n=$B/stdin why
    printf 'hello stdin\nsecond line\n' >"$T/stdin.txt"
    run_exec 60 --stdin "$T/stdin.txt" -- cat
    why=$(sane --expr 'out == "hello stdin\nsecond line\n"') || { fail "$n" "$why"; return; }
    # airlock's own stdin is not the program's
    printf 'AIRLOCK-OWN-STDIN\n' >"$T/own-stdin.txt"
    STDIN_F=$T/own-stdin.txt run_exec 60 -- cat
    why=$(sane --expr 'out == ""') || { fail "$n" "(airlock's own stdin) $why"; return; }
    pass "$n"
}

case_exit_code() {
    local n=$B/exit_code why
    run_exec 60 -- /bin/sh -c 'echo out; echo err >&2; exit 7' "$GUEST_TAG"
    why=$(sane --status exit --expr 'd["exit_code"] == 7 and out == "out\n" and d["stderr"] == "err\n"') || { fail "$n" "$why"; return; }
    # a real fault (not kill(2): a pid 1 ignores signals it has no handler for)
    run_exec 60 -- python3 -c 'import ctypes; ctypes.string_at(0)' "$GUEST_TAG"
    why=$(sane --status signaled --expr 'd["signal"] == 11') || { fail "$n" "(SIGSEGV) $why"; return; }
    # without --json: airlock's exit status is the program's, its output the program's
    timeout -k 5 60 "${AIRLOCK_CMD[@]}" exec --isolation "$B" --state-dir "$STATE" -- /bin/sh -c 'echo plain; exit 3' "$GUEST_TAG" \
        </dev/null >"$T/run/plain.out" 2>"$T/run/plain.err"
    RC=$?
    [ "$RC" -eq 3 ] && [ "$(cat "$T/run/plain.out")" = plain ] ||
        { fail "$n" "(plain) rc $RC, stdout \"$(head -c 100 "$T/run/plain.out")\", stderr \"$(head -c 200 "$T/run/plain.err")\""; return; }
    pass "$n"
}

case_cwd() {
    local n=$B/cwd why ws=$T/ws-cwd-$B
    mkdir -p "$ws/sub"
    as_guest_owner "$ws"
    run_exec 60 --dir "$ws:/workspace:rw" --cwd /workspace/sub -- /usr/bin/pwd
    why=$(sane --expr 'out == "/workspace/sub\n"') || { fail "$n" "$why"; return; }
    run_exec 60 --dir "$ws:/workspace:rw" -- pwd
    why=$(sane --expr 'out == "/workspace\n"') || { fail "$n" "(default: the first grant) $why"; return; }
    pass "$n"
}

# ---- main ----------------------------------------------------------------------------

"${AIRLOCK_CMD[@]}" doctor --json >"$T/doctor.json" 2>"$T/doctor.err"
CGROUPS=no
if [ "$(doctor cgroup_v1_writable)" = true ] || [ "$(doctor cgroup_v2_writable)" = true ]; then CGROUPS=yes; fi

run_backend() {
    B=$1
    want "$B/read_secrets" && case_read_secrets
    want "$B/write_outside" && case_write_outside
    want "$B/readonly_grant" && case_readonly_grant
    want "$B/loopback_connect" && case_network
    want "$B/fork_bomb" && case_fork_bomb
    want "$B/memory_bomb" && case_memory_bomb
    want "$B/ptrace" && case_ptrace
    want "$B/mount" && case_mount
    want "$B/unshare" && case_unshare
    want "$B/raw_sockets" && case_raw_sockets
    [ "$B" = native ] && want "$B/seccomp_deny_list" && case_seccomp_list
    want "$B/proc_host" && case_proc
    want "$B/setuid" && case_setuid
    want "$B/uid" && case_uid
    want "$B/signal_host" && case_signals
    want "$B/devices" && case_devices
    want "$B/timeout_children" && case_timeout_children
    want "$B/clean_env" && case_env
    want "$B/hostname" && case_hostname
    want "$B/cpu_limit" && case_cpu_limit
    want "$B/tmpfs_limit" && case_tmpfs_limit
    want "$B/file_size_limit" && case_file_size_limit
    want "$B/output_flood" && case_output_flood
    want "$B/python_workspace" && case_compute
    want "$B/shell_pipeline" && case_pipeline
    want "$B/stdin" && case_stdin
    want "$B/exit_code" && case_exit_code
    want "$B/cwd" && case_cwd
    want "$B/killed_airlock" && case_killed_airlock
    want "$B/no_leftovers" && case_no_leftovers
}

for backend in $BACKENDS; do
    if [ "$backend" = gvisor ]; then
        avail=$(doctor backends.gvisor.available)
        if [ "$avail" != true ]; then
            reason=$(doctor backends.gvisor.reason)
            [ -n "$reason" ] || reason="airlock doctor --json does not report backends.gvisor.available: $(head -c 200 "$T/doctor.json" "$T/doctor.err" | tr '\n' ' ')"
            echo "SKIP gvisor: $reason"
            continue
        fi
        echo "(gvisor platform: $(doctor gvisor_platform))"
    fi
    run_backend "$backend"
done
finish
