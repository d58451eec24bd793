#!/usr/bin/env bash
# tests/service/run.sh — airlockd end to end, through curl, on loopback only.
#
#   tests/service/run.sh [REGEX]     run the cases whose name matches REGEX
#
# Starts $AIRLOCK_DAEMON (default build/asan/airlockd) with temporary
# configs (state dir, audit db, Unix socket, a free TCP port, hashed tokens)
# and checks the HTTP API: auth, executions of every kind, bad input (400,
# 413, 415, 404, 405), sessions (Python state, workspace files, 409 while
# busy), rate limits and a full queue (429 + Retry-After), SSE streaming,
# /metrics, MCP over HTTP, SIGHUP reload, graceful shutdown and the drain
# deadline (running executions cancelled: every client gets its "cancelled"
# result, audit rows cancelled/shutdown, no sandbox left), kill -9 and restart
# (aborted audit rows, no orphan sandbox), and that no file descriptor leaks. A sanitizer report in any daemon's log fails the
# run. Python cases are skipped when build/python is missing, native and
# gVisor ones when /healthz says the host lacks them.
# Prints "PASS name" / "FAIL name: why", last line "N passed, N failed";
# bounded: every request has a timeout and a watchdog ends the run at 170 s.
set -u
cd "$(dirname "$0")/../.." || exit 2
FILTER=${1:-}
. tests/lib/cases.bash
. tests/service/lib.bash # DAEMON, CLI and the helpers
if [ ! -x "$DAEMON" ]; then
    echo "FAIL setup: $DAEMON is not built"
    echo "0 passed, 1 failed"
    exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:log_path=stderr
service_tmp airlockd-test
# the watchdog's sleep must not hold our stdout open once we are done
watchdog() {
    local main=$1 s
    sleep 170 </dev/null >/dev/null 2>&1 &
    s=$!
    trap 'kill $s 2>/dev/null; exit 0' TERM
    wait "$s"
    echo "FAIL watchdog: the run took longer than 170 s"
    kill -TERM "$main"
}
watchdog $$ &
WATCHDOG=$!

# ---- helpers ---------------------------------------------------------------------------

hash() { "$DAEMON" hash-token "$1"; }

TOK=alpha-$RANDOM$RANDOM
TOK_LIMITED=limited-$RANDOM$RANDOM
TOK_BETA=beta-$RANDOM$RANDOM
H_TOK=$(hash "$TOK")
H_LIMITED=$(hash "$TOK_LIMITED")
H_BETA=$(hash "$TOK_BETA")

# config DIR PORT [WORKERS QUEUE] [EXTRA_TOKENS_YAML]: a config for a daemon in DIR
config() {
    local dir=$1 port=$2 workers=${3:-4} queue=${4:-64} extra=${5:-}
    mkdir -p "$dir"
    cat >"$dir/airlockd.yaml" <<EOF
listen:
  unix_socket: $dir/d.sock
  tcp_host: 127.0.0.1
  tcp_port: $port
  unix_requires_token: true
limits:
  max_body: 1M
paths:
  state_dir: $dir
workers:
  count: $workers
  queue: $queue
rate_limits:
  python_per_minute: 1000
  exec_per_minute: 1000
mcp:
  allowed_origins: ["http://localhost:6274"]
tokens:
  - name: alpha
    sha256: $H_TOK
  - name: limited
    sha256: $H_LIMITED
    exec_per_minute: 2
$extra
EOF
}

# start, call, jb, header, show, api, post: tests/service/lib.bash
J=(-H 'Content-Type: application/json')
A=(-H "Authorization: Bearer $TOK")
count_fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
audit_rows() { # DB STATUS -> JSON array (airlock audit, else sqlite3 through python)
    local out
    if [ -x "$CLI" ] && "$CLI" audit --help >/dev/null 2>&1 &&
        out=$("$CLI" audit --db "$1" --status "$2" --json 2>/dev/null); then
        printf '%s\n' "$out"
    else
        "$HOST_PY" - "$1" "$2" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.row_factory = sqlite3.Row
print(json.dumps([dict(r) for r in db.execute(
    "SELECT * FROM executions WHERE status = ?", (sys.argv[2],))]))
EOF
    fi
}

# ---- fixtures ----------------------------------------------------------------------------

HELLO_B64=
if command -v wat2wasm >/dev/null && wat2wasm tests/service/hello.wat -o "$T/hello.wasm" 2>/dev/null; then
    HELLO_B64=$(base64 -w0 "$T/hello.wasm")
fi
SPIN_B64=
if command -v wat2wasm >/dev/null; then
    echo '(module (func (export "_start") (loop (br 0))))' >"$T/spin.wat"
    wat2wasm "$T/spin.wat" -o "$T/spin.wasm" 2>/dev/null && SPIN_B64=$(base64 -w0 "$T/spin.wasm")
fi
spin() { echo "{\"kind\":\"wasm\",\"module_base64\":\"$SPIN_B64\",\"timeout_ms\":$1}"; }

# ---- daemon 1 -------------------------------------------------------------------------------

start_daemon1

call "$U/healthz"
HAVE_PY=$(jb .python)
HAVE_NATIVE=$(jb .native)
HAVE_GVISOR=$(jb .gvisor)
if want healthz; then
    if [ "$CODE" = 200 ] && [ "$(jb .status)" = ok ] && [ -n "$(jb .version)" ]; then pass healthz
    else fail healthz "$(show)"; fi
fi

if want auth; then
    call -X GET "$U/v1/sessions"
    if [ "$CODE" = 401 ] && [ "$(header WWW-Authenticate)" = Bearer ] && [ "$(jb .error.code)" = unauthorized ]
    then pass auth/missing_token; else fail auth/missing_token "$(show)"; fi
    call -H "Authorization: Bearer nope" "$U/v1/sessions"
    if [ "$CODE" = 401 ]; then pass auth/bad_token; else fail auth/bad_token "$(show)"; fi
    call --unix-socket "$D1/d.sock" http://x/v1/sessions
    if [ "$CODE" = 401 ]; then pass auth/unix_requires_token; else fail auth/unix_requires_token "$(show)"; fi
fi

# FD baseline once the daemon has served a request of each kind (lazy opens)
if want exec; then
    if [ "$HAVE_PY" = true ]; then
        post /v1/executions '{"kind":"python","code":"print(1)"}'
        if [ "$CODE" = 200 ] && [ "$(jb .stdout)" = 1 ] && [ "$(jb .status)" = ok ]
        then pass exec/python_print; else fail exec/python_print "$(show)"; fi
    else
        echo "SKIP exec/python_print: no build/python"
    fi
    if [ "$HAVE_NATIVE" = true ]; then
        call --unix-socket "$D1/d.sock" "${A[@]}" "${J[@]}" \
            -d '{"kind":"command","argv":["/bin/echo","hi","there"]}' http://x/v1/executions
        if [ "$CODE" = 200 ] && [ "$(jb .stdout)" = "hi there" ] && [ "$(jb .backend)" = native ]
        then pass exec/native_command_unix_socket; else fail exec/native_command_unix_socket "$(show)"; fi
    else
        echo "SKIP exec/native_command_unix_socket: native backend unavailable"
    fi
    if [ -n "$HELLO_B64" ]; then
        post /v1/executions "{\"kind\":\"wasm\",\"module_base64\":\"$HELLO_B64\"}"
        if [ "$CODE" = 200 ] && [ "$(jb .stdout)" = "hello from wasm" ]
        then pass exec/wasm_module; else fail exec/wasm_module "$(show)"; fi
    else
        post /v1/executions "{\"kind\":\"wasm\",\"module_base64\":\"$(base64 -w0 samples/fib.wasm)\"}"
        if [ "$CODE" = 200 ] && [ "$(jb .status)" = ok ]; then pass exec/wasm_module
        else fail exec/wasm_module "$(show)"; fi
    fi
fi

if want errors; then
    post /v1/executions '{"kind": "python", "code": '
    [ "$CODE" = 400 ] && [ "$(jb .error.code)" = bad_request ] && pass errors/malformed_json ||
        fail errors/malformed_json "$(show)"
    post /v1/executions '{"kind":"python","code":"1","colour":"blue"}'
    [ "$CODE" = 400 ] && jb .error.message | grep -q colour && pass errors/unknown_field ||
        fail errors/unknown_field "$(show)"
    post /v1/executions '{"kind":"python","code":42}'
    [ "$CODE" = 400 ] && pass errors/wrong_type || fail errors/wrong_type "$(show)"
    post /v1/executions '{"kind":"python","code":"1","code":"2"}'
    [ "$CODE" = 400 ] && pass errors/duplicate_key || fail errors/duplicate_key "$(show)"
    post /v1/executions '[]'
    [ "$CODE" = 400 ] && pass errors/not_an_object || fail errors/not_an_object "$(show)"
    api POST /v1/executions -H 'Content-Type: text/plain' -d '{"kind":"python","code":"1"}'
    [ "$CODE" = 415 ] && pass errors/content_type || fail errors/content_type "$(show)"
    head -c 1500000 /dev/zero | tr '\0' ' ' >"$T/big"
    api POST /v1/executions "${J[@]}" --data-binary @"$T/big"
    [ "$CODE" = 413 ] && [ "$(jb .error.code)" = payload_too_large ] && pass errors/body_too_large ||
        fail errors/body_too_large "$(show)"
    api POST /v1/executions "${J[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$T/big"
    [ "$CODE" = 413 ] && pass errors/body_too_large_chunked || fail errors/body_too_large_chunked "$(show)"
    api GET /v1/sessions/0123456789abcdef0123456789abcdef
    [ "$CODE" = 404 ] && pass errors/unknown_session || fail errors/unknown_session "$(show)"
    post /v1/sessions/0123456789abcdef0123456789abcdef/executions '{"code":"print(1)"}'
    [ "$CODE" = 404 ] && pass errors/unknown_session_exec || fail errors/unknown_session_exec "$(show)"
    api GET /v2/nothing
    [ "$CODE" = 404 ] && pass errors/unknown_route || fail errors/unknown_route "$(show)"
    api DELETE /v1/executions
    [ "$CODE" = 405 ] && [ -n "$(header Allow)" ] && pass errors/method || fail errors/method "$(show)"
    post /v1/sessions '{"kind":"command","backend":"firecracker"}'
    [ "$CODE" = 400 ] && pass errors/bad_session_body || fail errors/bad_session_body "$(show)"
    kill -0 "$D1_PID" 2>/dev/null && pass errors/daemon_alive || fail errors/daemon_alive "the daemon died"
fi

if want session/python && [ "$HAVE_PY" = true ]; then
    post /v1/sessions '{"kind":"python"}'
    SID=$(jb .id)
    if [ "$CODE" = 201 ] && [ ${#SID} = 32 ]; then
        post "/v1/sessions/$SID/executions" '{"code":"x = 41"}'
        post "/v1/sessions/$SID/executions" '{"code":"print(x + 1)"}'
        [ "$CODE" = 200 ] && [ "$(jb .stdout)" = 42 ] && pass session/python_keeps_state ||
            fail session/python_keeps_state "$(show)"
        api DELETE "/v1/sessions/$SID"
    else
        fail session/python_keeps_state "create: $(show)"
    fi
fi

if want session/command && [ "$HAVE_NATIVE" = true ]; then
    post /v1/sessions '{"kind":"command","backend":"native"}'
    SID=$(jb .id)
    api PUT "/v1/sessions/$SID/files/data/in.txt" --data-binary 'uploaded bytes'
    if [ "$CODE" = 201 ]; then
        post "/v1/sessions/$SID/executions" \
            '{"argv":["/bin/sh","-c","cat /workspace/data/in.txt; pwd; echo made > out.txt"]}'
        if [ "$CODE" = 200 ] && [ "$(jb .stdout)" = "uploaded bytes/workspace" ]; then
            api GET "/v1/sessions/$SID/files/out.txt"
            [ "$CODE" = 200 ] && [ "$(cat "$T/body")" = made ] &&
                [ "$(header Content-Type)" = application/octet-stream ] &&
                pass session/files_round_trip || fail session/files_round_trip "download: $(show)"
        else
            fail session/files_round_trip "exec: $(show)"
        fi
    else
        fail session/files_round_trip "upload: $(show)"
    fi
    api GET "/v1/sessions/$SID/files/../../../etc/passwd" --path-as-is
    [ "$CODE" = 400 ] || [ "$CODE" = 404 ] && ! grep -q root: "$T/body" &&
        pass session/path_traversal || fail session/path_traversal "$(show)"
    # busy: a second execution while one runs is 409
    curl -s --max-time 30 -o /dev/null "${A[@]}" "${J[@]}" \
        -d '{"argv":["/bin/sleep","2"]}' "$U/v1/sessions/$SID/executions" &
    BG=$!
    sleep 0.7
    post "/v1/sessions/$SID/executions" '{"argv":["/bin/true"]}'
    [ "$CODE" = 409 ] && pass session/busy_409 || fail session/busy_409 "$(show)"
    wait "$BG"
    api GET /v1/sessions
    [ "$CODE" = 200 ] && jq -e --arg id "$SID" '.sessions | map(.id) | index($id)' "$T/body" >/dev/null &&
        pass session/list || fail session/list "$(show)"
    api DELETE "/v1/sessions/$SID"
    C1=$CODE
    api GET "/v1/sessions/$SID"
    [ "$C1" = 204 ] && [ "$CODE" = 404 ] && [ ! -e "$D1/sessions/$SID" ] && pass session/delete ||
        fail session/delete "delete $C1, then $(show)"
    # another token cannot see it (it is gone anyway: check a live one)
    post /v1/sessions '{"kind":"wasm"}'
    SID=$(jb .id)
    call -H "Authorization: Bearer $TOK_LIMITED" "$U/v1/sessions/$SID"
    [ "$CODE" = 404 ] && pass session/other_token_404 || fail session/other_token_404 "$(show)"
    api DELETE "/v1/sessions/$SID"
fi

if want session/gvisor && [ "$HAVE_GVISOR" = true ]; then
    # one gVisor sandbox kept across executions: /tmp persists, the workspace is shared
    post /v1/sessions '{"kind":"command","backend":"gvisor"}'
    SID=$(jb .id)
    api PUT "/v1/sessions/$SID/files/in.txt" --data-binary 'to gvisor'
    post "/v1/sessions/$SID/executions" '{"argv":["/bin/sh","-c","cat /workspace/in.txt; echo kept > /tmp/p"]}'
    out1=$(jb .stdout)
    post "/v1/sessions/$SID/executions" '{"argv":["/bin/cat","/tmp/p"]}'
    [ "$out1" = "to gvisor" ] && [ "$(jb .stdout)" = kept ] && jb .backend | grep -q gvisor &&
        pass session/gvisor_keeps_sandbox || fail session/gvisor_keeps_sandbox "first: $out1; $(show)"
    api DELETE "/v1/sessions/$SID"
fi

if want ratelimit; then
    codes=
    for i in 1 2 3; do
        call -H "Authorization: Bearer $TOK_LIMITED" "${J[@]}" \
            -d "{\"kind\":\"wasm\",\"module_base64\":\"$(base64 -w0 samples/fib.wasm)\"}" "$U/v1/executions"
        codes="$codes $CODE"
    done
    [ "$codes" = " 200 200 429" ] && [ -n "$(header Retry-After)" ] && pass ratelimit/429_retry_after ||
        fail ratelimit/429_retry_after "codes:$codes; $(show)"
fi

if want stream && [ "$HAVE_NATIVE" = true ]; then
    curl -sN --max-time 30 "${A[@]}" "${J[@]}" \
        -d '{"kind":"command","argv":["/bin/sh","-c","echo first; sleep 1; echo second >&2; sleep 1; echo third"],"stream":true}' \
        "$U/v1/executions" | while IFS= read -r line; do echo "$(date +%s%3N) $line"; done >"$T/sse"
    t_first=$(grep -m1 'event: stdout' "$T/sse" | cut -d' ' -f1)
    t_result=$(grep -m1 'event: result' "$T/sse" | cut -d' ' -f1)
    if [ -n "$t_first" ] && [ -n "$t_result" ] && [ $((t_result - t_first)) -ge 1500 ] &&
        grep -q 'data: "first\\n"' "$T/sse" && grep -q 'event: stderr' "$T/sse" &&
        grep -A1 'event: result' "$T/sse" | grep -q '"status":"ok"'; then
        pass stream/sse_before_result
    else
        fail stream/sse_before_result "$(cut -c1-120 "$T/sse")"
    fi
    # a private key printed line by line, with pauses: no line of it may be streamed
    curl -sN --max-time 30 "${A[@]}" "${J[@]}" \
        -d '{"kind":"command","argv":["/bin/sh","-c","echo before; echo -----BEGIN PRIVATE KEY-----; sleep 0.3; echo MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7; sleep 0.3; echo c2VjcmV0LWtleS1saW5lLXR3bw; echo -----END PRIVATE KEY-----; echo after"],"stream":true}' \
        "$U/v1/executions" >"$T/sse-key"
    if grep -q 'before' "$T/sse-key" && grep -q 'after' "$T/sse-key" &&
        grep -q 'REDACTED:private_key' "$T/sse-key" &&
        ! grep -q 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\|c2VjcmV0LWtleS1saW5lLXR3bw' "$T/sse-key"
    then pass stream/private_key_never_streamed
    else fail stream/private_key_never_streamed "$(head -c 600 "$T/sse-key")"; fi
fi

# every egress decision of an execution lands in its audit row (not only the counts)
if want egress && [ "$HAVE_NATIVE" = true ] && command -v curl >/dev/null; then
    mkdir -p "$T/origin"
    echo hello-from-origin >"$T/origin/index.html"
    OPORT=$(free_port)
    "$HOST_PY" -m http.server "$OPORT" --bind 127.0.0.1 --directory "$T/origin" >/dev/null 2>&1 &
    ORIGIN_PID=$!
    PIDS+=("$ORIGIN_PID")
    for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$OPORT/" && break; sleep 0.1; done
    post /v1/executions "{\"kind\":\"command\",\"argv\":[\"/bin/sh\",\"-c\",
        \"curl -s http://origin.test:$OPORT/; curl -s -o /dev/null http://denied.test:$OPORT/; true\"],
        \"egress\":{\"allow_domains\":[\"origin.test\"],\"allow_ports\":[$OPORT],
        \"allow_ips\":[\"127.0.0.1/32\"],\"hosts\":{\"origin.test\":\"127.0.0.1\",\"denied.test\":\"127.0.0.1\"}}}"
    id=$(jb .audit_id)
    out=$(jb .stdout)
    row=$("$CLI" audit --db "$D1/audit.db" --json --limit 20 2>/dev/null | jq -c ".[] | select(.id == $id) | .egress")
    decisions=$(echo "$row" | jq -r '[.decisions[] | .decision + ":" + .host] | join(",")' 2>/dev/null)
    if [ "$out" = hello-from-origin ] && [[ "$decisions" == *"allow:origin.test"* ]] &&
        [[ "$decisions" == *"deny:denied.test"* ]] && [ "$(echo "$row" | jq .denied)" = 1 ]
    then pass egress/decisions_in_audit_row
    else fail egress/decisions_in_audit_row "stdout=$out decisions=$decisions row=$(echo "$row" | head -c 300)"; fi
    if ls "$D1"/egress-*.jsonl >/dev/null 2>&1; then fail egress/log_removed "$(ls "$D1"/egress-*)"
    else pass egress/log_removed; fi
    kill "$ORIGIN_PID" 2>/dev/null
fi

if want metrics; then
    api GET /metrics
    grep -q '^airlock_executions_total{' "$T/body" && [ "$CODE" = 200 ] && pass metrics/executions_total ||
        fail metrics/executions_total "$(show)"
    call "$U/metrics"
    [ "$CODE" = 401 ] && pass metrics/needs_token || fail metrics/needs_token "$(show)"
fi

if want mcp; then
    MJ=(-H 'Accept: application/json, text/event-stream' "${J[@]}")
    INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"run.sh","version":"1"}}}'
    api POST /mcp "${MJ[@]}" -d "$INIT"
    MSID=$(header Mcp-Session-Id)
    if [ "$CODE" = 200 ] && [ -n "$MSID" ] && [ "$(jb .result.protocolVersion)" = 2025-11-25 ]; then
        pass mcp/initialize
        api POST /mcp "${MJ[@]}" -H "Mcp-Session-Id: $MSID" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
        [ "$CODE" = 202 ] && pass mcp/notification_202 || fail mcp/notification_202 "$(show)"
        api POST /mcp "${MJ[@]}" -H "Mcp-Session-Id: $MSID" -H 'MCP-Protocol-Version: 2025-11-25' \
            -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
        [ "$CODE" = 200 ] && jb '.result.tools[].name' | grep -q run_python && pass mcp/tools_list ||
            fail mcp/tools_list "$(show)"
        api POST /mcp "${MJ[@]}" -H "Mcp-Session-Id: $MSID" -H 'MCP-Protocol-Version: 1999-01-01' \
            -d '{"jsonrpc":"2.0","id":3,"method":"ping"}'
        [ "$CODE" = 400 ] && pass mcp/bad_protocol_version || fail mcp/bad_protocol_version "$(show)"
        api POST /mcp "${MJ[@]}" -H "Mcp-Session-Id: $MSID" -H 'Origin: http://evil.example' \
            -d '{"jsonrpc":"2.0","id":4,"method":"ping"}'
        [ "$CODE" = 403 ] && pass mcp/origin_403 || fail mcp/origin_403 "$(show)"
        api POST /mcp "${MJ[@]}" -d '{"jsonrpc":"2.0","id":5,"method":"ping"}'
        [ "$CODE" = 400 ] && pass mcp/session_required || fail mcp/session_required "$(show)"
        api GET /mcp -H "Mcp-Session-Id: $MSID"
        [ "$CODE" = 405 ] && pass mcp/get_405 || fail mcp/get_405 "$(show)"
        api DELETE /mcp -H "Mcp-Session-Id: $MSID"
        C1=$CODE
        api POST /mcp "${MJ[@]}" -H "Mcp-Session-Id: $MSID" -d '{"jsonrpc":"2.0","id":6,"method":"ping"}'
        [ "$C1" = 204 ] && [ "$CODE" = 404 ] && pass mcp/delete || fail mcp/delete "delete $C1, then $(show)"
    else
        fail mcp/initialize "$(show)"
    fi
fi

if want fds; then
    # the same mix again must not hold more descriptors than after the first time
    mix() {
        post /v1/executions "{\"kind\":\"wasm\",\"module_base64\":\"$(base64 -w0 samples/fib.wasm)\"}"
        [ "$HAVE_NATIVE" = true ] && post /v1/executions '{"kind":"command","argv":["/bin/true"]}'
        post /v1/sessions '{"kind":"wasm"}'
        local sid
        sid=$(jb .id)
        api PUT "/v1/sessions/$sid/files/f" --data-binary x
        api GET "/v1/sessions/$sid/files/f"
        api DELETE "/v1/sessions/$sid"
        curl -s --max-time 10 -o /dev/null "$U/v1/sessions"
        api POST /v1/executions "${J[@]}" --data-binary @"$T/big"
        curl -sN --max-time 10 -o /dev/null "${A[@]}" "${J[@]}" \
            -d "{\"kind\":\"wasm\",\"module_base64\":\"$(base64 -w0 samples/fib.wasm)\",\"stream\":true}" "$U/v1/executions"
    }
    mix
    sleep 0.5
    before=$(count_fds "$D1_PID")
    for i in 1 2 3; do mix; done
    sleep 0.5
    after=$(count_fds "$D1_PID")
    [ "$before" -gt 0 ] && [ "$after" -le "$before" ] && pass fds/no_leak ||
        fail fds/no_leak "$before descriptors before, $after after"
fi

if want reload; then
    call -H "Authorization: Bearer $TOK_BETA" "$U/v1/sessions"
    c0=$CODE
    config "$D1" "$PORT1" 4 64 "  - name: beta
    sha256: $H_BETA"
    kill -HUP "$D1_PID"
    for i in $(seq 1 50); do grep -q 'reloaded' "$T/d1.log" && break; sleep 0.1; done
    call -H "Authorization: Bearer $TOK_BETA" "$U/v1/sessions"
    [ "$c0" = 401 ] && [ "$CODE" = 200 ] && pass reload/new_token || fail reload/new_token "before $c0, after $(show)"
    echo 'limits: {memory: lots}' >"$D1/airlockd.yaml"
    kill -HUP "$D1_PID"
    sleep 1
    call -H "Authorization: Bearer $TOK_BETA" "$U/v1/sessions"
    [ "$CODE" = 200 ] && grep -q 'running config stays' "$T/d1.log" && pass reload/bad_config_keeps_old ||
        fail reload/bad_config_keeps_old "$(show); $(tail -n 2 "$T/d1.log")"
fi

if want shutdown; then
    kill -TERM "$D1_PID"
    rc=0
    wait "$D1_PID" || rc=$?
    [ "$rc" = 0 ] && grep -q stopped "$T/d1.log" && [ ! -e "$D1/d.sock" ] && pass shutdown/clean_exit ||
        fail shutdown/clean_exit "exit $rc: $(tail -n 3 "$T/d1.log")"
else
    kill -TERM "$D1_PID"
    wait "$D1_PID"
fi

# ---- daemon 2: one worker, a queue of one -----------------------------------------------------

if want 'queue|drain' && [ -n "$SPIN_B64" ]; then
    D2=$T/d2
    PORT2=$(free_port)
    config "$D2" "$PORT2" 1 1
    if start d2 "$D2" --drain-timeout 20; then
        D2_PID=$PID
        U2=http://127.0.0.1:$PORT2
        for i in 1 2 3 4; do
            curl -s --max-time 30 -o "$T/q$i.body" -D "$T/q$i.headers" -w '%{http_code}' "${A[@]}" "${J[@]}" \
                -d "$(spin 1500)" "$U2/v1/executions" >"$T/q$i.code" &
            sleep 0.2
        done
        wait_for() { local i; for i in $(seq 1 100); do [ -s "$1" ] && return; sleep 0.1; done; }
        for i in 1 2 3 4; do wait_for "$T/q$i.code"; done
        n200=0 n429=0 retry=1
        for i in 1 2 3 4; do
            case $(cat "$T/q$i.code") in
            200) n200=$((n200 + 1)) ;;
            429) n429=$((n429 + 1)); grep -qi '^retry-after:' "$T/q$i.headers" || retry=0 ;;
            esac
        done
        [ $n429 -ge 1 ] && [ $((n200 + n429)) = 4 ] && [ $retry = 1 ] && pass queue/full_429 ||
            fail queue/full_429 "200: $n200, 429: $n429, retry-after on all 429s: $retry"
        # graceful: a running execution finishes after SIGTERM
        curl -s --max-time 30 -o "$T/g.body" -w '%{http_code}' "${A[@]}" "${J[@]}" \
            -d "$(spin 2000)" "$U2/v1/executions" >"$T/g.code" &
        BG=$!
        sleep 0.7
        kill -TERM "$D2_PID"
        wait "$BG"
        rc=0
        wait "$D2_PID" || rc=$?
        [ "$(cat "$T/g.code")" = 200 ] && [ "$(jq -r .status "$T/g.body")" = timeout ] && [ $rc = 0 ] &&
            pass drain/running_execution_finishes ||
            fail drain/running_execution_finishes "HTTP $(cat "$T/g.code"), exit $rc: $(head -c 200 "$T/g.body")"
    else
        fail queue/full_429 "daemon 2 did not start: $(tail -n 3 "$T/d2.log")"
    fi
fi

# ---- daemon 3: kill -9, restart, then a drain deadline ----------------------------------------

# sandboxes_left_in_d3 SLEEP_REGEX TRIES PAUSE: the processes (pgrep -af
# lines) still matching SLEEP_REGEX or a runsc of daemon 3 after waiting up to
# TRIES x PAUSE seconds for them to go; empty when none is left.
sandboxes_left_in_d3() {
    local left= i
    for i in $(seq 1 "$2"); do
        left=$(pgrep -af "$1" | grep -v pgrep)
        left="$left$(pgrep -af "runsc.*$D3" | grep -v pgrep)"
        [ -z "$left" ] && break
        sleep "$3"
    done
    printf '%s' "$left"
}

# One long execution per kind the daemon can run (a spinning wasm module, its
# streamed twin, Python sleeping 60 s, native and gVisor `sleep 60.x`), then
# SIGTERM with --drain-timeout 1: past the deadline airlockd cancels them, and
# every client gets its result (HTTP 200, status "cancelled", error
# "shutdown"; the stream its "result" event) within a few seconds, the audit
# rows say cancelled / shutdown, airlockd exits 0 and no sandbox is left.
deadline_cancel() {
    local names=() pids=() n name i
    dl_start() { # NAME BODY [CURL ARGS]: one client in the background
        local name=$1 body=$2
        shift 2
        curl -s --max-time 30 -o "$T/dl-$name.body" -w '%{http_code}' "${A[@]}" "${J[@]}" "$@" \
            -d "$body" "$U3/v1/executions" >"$T/dl-$name.code" &
        pids+=($!)
        names+=("$name")
    }
    [ -n "$SPIN_B64" ] && dl_start wasm "$(spin 25000)"
    [ -n "$SPIN_B64" ] && dl_start stream \
        "{\"kind\":\"wasm\",\"module_base64\":\"$SPIN_B64\",\"timeout_ms\":25000,\"stream\":true}" -N
    [ "$HAVE_PY" = true ] &&
        dl_start python '{"kind":"python","code":"import time\ntime.sleep(60)","timeout_ms":60000}'
    [ "$HAVE_NATIVE" = true ] &&
        dl_start native '{"kind":"command","argv":["/bin/sleep","60.25"],"timeout_ms":60000}'
    [ "$HAVE_GVISOR" = true ] &&
        dl_start gvisor '{"kind":"command","backend":"gvisor","argv":["/bin/sleep","60.5"],"timeout_ms":60000}'
    n=${#names[@]}
    if [ "$n" = 0 ]; then
        kill -TERM "$D3_PID"
        wait "$D3_PID"
        return
    fi
    sleep 2.5 # every one is running (gVisor boots, an ASan Python starts)
    local t0 t1 rc=0
    t0=$(date +%s%N)
    kill -TERM "$D3_PID"
    wait "$D3_PID" || rc=$?
    t1=$(date +%s%N)
    wait "${pids[@]}" # (not a bare wait: the watchdog is a child too)
    local took_ms=$(((t1 - t0) / 1000000)) bad=
    for name in "${names[@]}"; do
        local code body
        code=$(cat "$T/dl-$name.code" 2>/dev/null)
        body=$T/dl-$name.body
        if [ "$name" = stream ]; then # the last event's data
            body=$T/dl-stream.result
            grep -A1 '^event: result' "$T/dl-stream.body" | sed -n 's/^data: //p' >"$body"
        fi
        [ "$code" = 200 ] && [ "$(jq -r .status "$body" 2>/dev/null)" = cancelled ] &&
            [ "$(jq -r .error "$body" 2>/dev/null)" = shutdown ] ||
            bad="$bad $name: HTTP $code $(head -c 160 "$body");"
    done
    [ -z "$bad" ] && [ $rc = 0 ] && [ $took_ms -le 8000 ] &&
        pass "deadline/cancelled_results ($n clients: ${names[*]}; exit after ${took_ms} ms)" ||
        fail deadline/cancelled_results "exit $rc after ${took_ms} ms:$bad $(grep -i cancel "$T/d3b.log" | tail -n 3)"
    local rows cancelled running
    rows=$(audit_rows "$D3/audit.db" cancelled)
    cancelled=$(jq '[.[] | select(.abort_reason == "shutdown" and .error_message == "shutdown")] | length' <<<"$rows")
    running=$(jq 'length' <<<"$(audit_rows "$D3/audit.db" running)")
    [ "$cancelled" = "$n" ] && [ "$running" = 0 ] && pass deadline/audit_cancelled_shutdown ||
        fail deadline/audit_cancelled_shutdown "cancelled/shutdown rows: $cancelled of $n, running: $running"
    local left
    left=$(sandboxes_left_in_d3 'sleep 60\.(25|5)' 20 0.1)
    [ -z "$left" ] && pass deadline/no_orphan_sandboxes || fail deadline/no_orphan_sandboxes "$left"
}

if want 'crash|deadline'; then
    D3=$T/d3
    PORT3=$(free_port)
    config "$D3" "$PORT3" 8 64 # a worker for each execution of deadline_cancel
    U3=http://127.0.0.1:$PORT3
    if start d3 "$D3"; then
        D3_PID=$PID
        [ -n "$SPIN_B64" ] && curl -s --max-time 30 -o /dev/null "${A[@]}" "${J[@]}" -d "$(spin 20000)" "$U3/v1/executions" &
        if [ "$HAVE_NATIVE" = true ]; then
            curl -s --max-time 30 -o /dev/null "${A[@]}" "${J[@]}" \
                -d '{"kind":"command","argv":["/bin/sleep","7.25"]}' "$U3/v1/executions" &
        fi
        if [ "$HAVE_GVISOR" = true ]; then
            curl -s --max-time 30 -o /dev/null "${A[@]}" "${J[@]}" \
                -d '{"kind":"command","backend":"gvisor","argv":["/bin/sleep","7.5"]}' "$U3/v1/executions" &
        fi
        sleep 4
        kill -9 "$D3_PID"
        wait "$D3_PID" 2>/dev/null
        running=$(jq 'length' <<<"$(audit_rows "$D3/audit.db" running)")
        if start d3b "$D3" --drain-timeout 1; then
            D3_PID=$PID
            aborted=$(jq 'length' <<<"$(audit_rows "$D3/audit.db" aborted)")
            [ "${running:-0}" -ge 1 ] && [ "$aborted" = "$running" ] && pass crash/kill9_marks_aborted ||
                fail crash/kill9_marks_aborted "running before restart: $running, aborted after: $aborted"
            orphans=$(sandboxes_left_in_d3 'sleep 7\.25|sleep 7\.5' 30 0.2)
            [ -z "$orphans" ] && pass crash/no_orphan_sandboxes || fail crash/no_orphan_sandboxes "$orphans"
            # a drain deadline: what still runs is cancelled; every client gets its result
            deadline_cancel
        else
            fail crash/kill9_marks_aborted "restart failed: $(tail -n 3 "$T/d3b.log")"
        fi
    else
        fail crash/kill9_marks_aborted "daemon 3 did not start: $(tail -n 3 "$T/d3.log")"
    fi
fi

# ---- everything ------------------------------------------------------------------------------

if want sanitizer; then
    sanitizer_check sanitizer/clean_logs "$T"/*.log
fi
if want orphans; then
    sleep 0.3
    left=$(pgrep -af "$T" | grep -v -e pgrep)
    [ -z "$left" ] && pass orphans/none_left || fail orphans/none_left "$left"
fi
finish
