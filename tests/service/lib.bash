# tests/service/lib.bash — what airlockd's end-to-end batteries share
# (tests/service/run.sh, tests/service/capabilities.sh): a temporary
# directory whose daemons die with the run, free loopback ports, starting a
# daemon and waiting for it, curl with the answer in $CODE / $T/body, and
# the sanitizer check of the daemons' logs. Each script keeps its own
# config DIR PORT [...] (the daemons' YAML differs); start_daemon1 calls it.
#
# The sourcing script sources tests/lib/cases.bash first (pass, fail,
# HOST_PY); it sets TOK (the bearer token api() sends) and U (the daemon
# api() talks to, http://127.0.0.1:PORT) before calling api or post.
# Network: loopback only.

# the daemon under test and the CLI built beside it
DAEMON=${AIRLOCK_DAEMON:-build/asan/airlockd}
CLI=${AIRLOCK_CLI:-$(dirname "$DAEMON")/airlock}

# service_tmp PREFIX: a fresh directory $T (/tmp/PREFIX.XXXXXX, readable by
# the sandboxes' uids), removed at exit with every process in PIDS (and the
# $WATCHDOG, if any) killed first, so no daemon outlives a failed run.
service_tmp() {
    T=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 755 "$T"
    PIDS=()
    trap service_cleanup EXIT
}
service_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -n "${WATCHDOG:-}" ] && kill "$WATCHDOG" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$T"
}

# a loopback TCP port nothing listens on right now (the kernel's pick)
free_port() {
    "$HOST_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start NAME DIR [ARGS...]: start a daemon on DIR's config; its pid in $PID,
# its stderr in $T/NAME.log; waits (30 s at most) for /healthz on its socket
start() {
    local name=$1 dir=$2 i
    shift 2
    "$DAEMON" --config "$dir/airlockd.yaml" "$@" 2>>"$T/$name.log" &
    PID=$!
    PIDS+=("$PID")
    for i in $(seq 1 300); do
        curl -s --max-time 2 --unix-socket "$dir/d.sock" -o /dev/null http://x/healthz && return 0
        kill -0 "$PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# start_daemon1: daemon 1, on the script's config DIR PORT in $T/d1 with a
# free port; D1, PORT1, U (its URL) and D1_PID set. A daemon that does not
# come up ends the run (there is nothing to test without it).
start_daemon1() {
    D1=$T/d1
    PORT1=$(free_port)
    config "$D1" "$PORT1"
    U=http://127.0.0.1:$PORT1
    if ! start d1 "$D1"; then
        fail setup "airlockd did not come up: $(tail -n 5 "$T/d1.log")"
        finish
    fi
    D1_PID=$PID
}

# call ARGS...: curl; the status in $CODE, the body in $T/body, headers in
# $T/headers (unless ARGS has its own -D)
call() {
    CODE=$(curl -sS --max-time 60 -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@" 2>"$T/curl.err")
}
jb() { jq -r "$1" "$T/body" 2>/dev/null; }
header() { grep -i "^$1:" "$T/headers" | head -n 1 | cut -d: -f2- | tr -d ' \r'; }
show() { echo "HTTP $CODE: $(head -c 400 "$T/body")"; }

# api METHOD PATH [ARGS...]: a request with $TOK to the daemon at $U
api() {
    local m=$1 p=$2
    shift 2
    call -X "$m" -H "Authorization: Bearer $TOK" "$@" "$U$p"
}
post() { api POST "$1" -H 'Content-Type: application/json' -d "$2"; }

# sanitizer_check NAME LOG...: one case; fails with the first lines of each
# log where ASan, LSan or UBSan reported something
sanitizer_check() {
    local name=$1 reports
    shift
    reports=$(grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$@" 2>/dev/null)
    if [ -z "$reports" ]; then
        pass "$name"
    else
        fail "$name" "$(for f in $reports; do echo "$f:"; grep -m3 -E 'Sanitizer|runtime error' "$f"; done)"
    fi
}
