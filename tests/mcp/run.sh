#!/usr/bin/env bash
# tests/mcp/run.sh — airlock's MCP server against the official client from
# npm, over both transports:
#
#   1. `npm ci` here (skipped when node_modules already matches
#      package-lock.json, so the script runs offline once installed);
#   2. stdio: client.mjs (@modelcontextprotocol/sdk's Client over
#      StdioClientTransport) spawns `$AIRLOCK mcp --config CFG`, plus raw
#      byte-level checks of the stdio framing;
#   3. Streamable HTTP: airlockd ($AIRLOCKD) is started on a free loopback
#      port with a test token, and client.mjs connects with
#      StreamableHTTPClientTransport to http://127.0.0.1:PORT/mcp
#      (skipped, and said so, while $AIRLOCKD is not built);
#   4. @modelcontextprotocol/inspector-cli: tools/list and a tools/call over
#      stdio (and HTTP when the daemon runs).
#
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why" per check, then
# "N passed, N failed" last. Everything lives in a fresh temporary directory
# (config, state, audit database); the daemon listens on 127.0.0.1 only and
# is stopped by its pid.
#
# Environment: AIRLOCK (default build/asan/airlock), AIRLOCKD (default
# build/asan/airlockd), AIRLOCK_PYTHON_DIR (default build/python).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FILTER=
# shellcheck source=../lib/cases.bash
. "$ROOT/tests/lib/cases.bash"
SKIPPED=0
skip() { echo "SKIP $1: $2"; SKIPPED=$((SKIPPED + 1)); }
finish_mcp() {
    [ "$SKIPPED" -gt 0 ] && echo "skipped: $SKIPPED"
    finish
}

AIRLOCK=${AIRLOCK:-$ROOT/build/asan/airlock}
AIRLOCKD=${AIRLOCKD:-$ROOT/build/asan/airlockd}
PYDIR=${AIRLOCK_PYTHON_DIR:-$ROOT/build/python}
case $AIRLOCK in /*) ;; *) AIRLOCK=$ROOT/$AIRLOCK ;; esac
case $AIRLOCKD in /*) ;; *) AIRLOCKD=$ROOT/$AIRLOCKD ;; esac
# The inspector reads its package.json relative to the working directory
# (inspector-cli 1.0.3: fs.existsSync("../package.json")), so it runs from
# its own build directory.
INSPECTOR_DIR=$HERE/node_modules/@modelcontextprotocol/inspector-cli/build

T=$(mktemp -d /tmp/airlock-mcp-test.XXXXXX)
DAEMON_PID=
cleanup() {
    if [ -n "$DAEMON_PID" ]; then
        kill "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
    fi
    rm -rf "$T"
}
trap cleanup EXIT

# ---- 1. the client packages ----------------------------------------------------------
install_deps() {
    cd "$HERE" || return 1
    # npm writes node_modules/.package-lock.json after every install: newer
    # than the lockfile means nothing changed since.
    if [ -f node_modules/.package-lock.json ] &&
        [ node_modules/.package-lock.json -nt package-lock.json ] &&
        [ -d node_modules/@modelcontextprotocol/sdk ] &&
        [ -d node_modules/@modelcontextprotocol/inspector-cli ]; then
        return 0
    fi
    npm ci --no-audit --no-fund --loglevel=error >"$T/npm.log" 2>&1
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    fail "setup" "node and npm are needed (tools/setup.sh installs them)"
    finish_mcp
fi
if install_deps; then
    pass "npm ci (@modelcontextprotocol/sdk, @modelcontextprotocol/inspector-cli)"
else
    fail "npm ci" "$(tail -n 20 "$T/npm.log")"
    finish_mcp
fi
if [ ! -x "$AIRLOCK" ]; then
    fail "setup" "$AIRLOCK not built (make asan)"
    finish_mcp
fi

# ---- an MCP servlet (issue 7): examples/plugins/mcp_servlet.c as capability "textkit" ----
SERVLET=0
mkdir -p "$T/caps"
if "$ROOT/examples/plugins/build.sh" "$T/plugins" >"$T/plugins.log" 2>&1; then
    cp "$T/plugins/mcp_servlet.wasm" "$T/caps/textkit.wasm" && SERVLET=1
else
    fail "setup: example plugins" "$(tail -n 5 "$T/plugins.log")"
fi
export AIRLOCK_MCP_SERVLET=$SERVLET
if [ "$SERVLET" = 1 ]; then
    TOOLS="run_command,run_python,run_wasm,textkit_count_vowels,textkit_reverse"
else
    TOOLS="run_command,run_python,run_wasm"
fi

# ---- the configuration ---------------------------------------------------------------
PYTHON=1
[ -r "$PYDIR/python.wasm" ] || PYTHON=0
free_port() {
    node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => {
        console.log(s.address().port); s.close(); });'
}
PORT=$(free_port)
TOKEN=mcp-test-token-$RANDOM$RANDOM
TOKEN_SHA=$(printf '%s' "$TOKEN" | sha256sum | cut -d' ' -f1)
mkdir -p "$T/state"
{
    echo "listen:"
    echo "  unix_socket: \"$T/airlockd.sock\""
    echo "  tcp_host: \"127.0.0.1\""
    echo "  tcp_port: $PORT"
    echo "paths:"
    echo "  state_dir: \"$T/state\""
    [ "$PYTHON" = 1 ] && echo "  python_dir: \"$PYDIR\""
    echo "rate_limits:"
    echo "  python_per_minute: 1000"
    echo "  exec_per_minute: 1000"
    echo "tokens:"
    echo "  - name: mcp-test"
    echo "    sha256: \"$TOKEN_SHA\""
    echo "capabilities:"
    echo "  dir: \"$T/caps\""
} >"$T/airlockd.yaml"
export AIRLOCK_MCP_PYTHON=$PYTHON
[ "$PYTHON" = 1 ] || echo "note: no $PYDIR/python.wasm (tools/build-python.sh): Python checks skip"

# count_client LOG: the PASS/FAIL/SKIP lines of one client.mjs run
count_client() {
    local line
    while IFS= read -r line; do
        case $line in
        "PASS "*) echo "$line"; PASSED=$((PASSED + 1)) ;;
        "FAIL "*) echo "$line"; FAILED=$((FAILED + 1)) ;;
        "SKIP "*) echo "$line"; SKIPPED=$((SKIPPED + 1)) ;;
        esac
    done <"$1"
}

SANITIZER='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'

# run_client NAME ARGS...: client.mjs, bounded in time; a run that ends
# without reporting a failure but exits non-zero counts as one. Over stdio
# the servers client.mjs spawns write their stderr to its stderr: a
# sanitizer report there is a failure too (airlockd's log is checked when
# it stops).
run_client() {
    local name=$1 rc=0 before=$FAILED
    shift
    (cd "$HERE" && timeout 300 node client.mjs "$@") >"$T/client.log" 2>"$T/client.err" || rc=$?
    count_client "$T/client.log"
    if [ "$rc" -ne 0 ] && [ "$FAILED" -eq "$before" ]; then
        fail "$name: client.mjs" "exit status $rc
$(tail -n 15 "$T/client.err")"
    fi
    [ "$name" = stdio ] || return 0
    if grep -Eq "$SANITIZER" "$T/client.err"; then
        fail "$name: no sanitizer report" "$(grep -E -A 12 "$SANITIZER" "$T/client.err" | head -n 30)"
    else
        pass "$name: no sanitizer report"
    fi
}

# inspector NAME CHECK-JS ARGS...: inspector-cli --cli; CHECK-JS reads its
# JSON output as `out` and must be true
inspector() {
    local name=$1 check=$2 rc=0
    shift 2
    (cd "$INSPECTOR_DIR" && timeout 120 node cli.js --cli "$@") >"$T/insp.out" 2>"$T/insp.err" ||
        rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name" "inspector-cli exit status $rc
$(grep -v 'nodedir\|deprecated\|Upgrade:\|security fixes' "$T/insp.err" | tail -n 10)"
    elif node -e "const out = JSON.parse(require('fs').readFileSync('$T/insp.out', 'utf8'));
                  process.exit(($check) ? 0 : 1)" 2>>"$T/insp.err"; then
        pass "$name"
    else
        fail "$name" "unexpected output: $(head -c 400 "$T/insp.out")"
    fi
}

# ---- 2. stdio ----------------------------------------------------------------------------
run_client stdio stdio "$AIRLOCK" "$T/airlockd.yaml"

cat >"$T/inspector-stdio.json" <<EOF
{"mcpServers": {"airlock": {"type": "stdio", "command": "$AIRLOCK",
  "args": ["mcp", "--config", "$T/airlockd.yaml"]}}}
EOF
inspector "inspector-cli stdio: tools/list" \
    "out.tools.map((t) => t.name).sort().join() === '$TOOLS'" \
    --config "$T/inspector-stdio.json" --server airlock --method tools/list
if [ "$SERVLET" = 1 ]; then
    inspector "inspector-cli stdio: tools/call of a servlet's tool" \
        'out.isError === false && out.content[0].text === "olleh"' \
        --config "$T/inspector-stdio.json" --server airlock --method tools/call \
        --tool-name textkit_reverse --tool-arg 'text=hello'
fi
if [ "$PYTHON" = 1 ]; then
    inspector "inspector-cli stdio: tools/call run_python" \
        'out.structuredContent.stdout === "7\n" && out.isError === false' \
        --config "$T/inspector-stdio.json" --server airlock --method tools/call \
        --tool-name run_python --tool-arg 'code=print(3 + 4)'
else
    skip "inspector-cli stdio: tools/call run_python" "python.wasm not built"
fi

# ---- 3. Streamable HTTP against airlockd ------------------------------------------------
start_daemon() {
    "$AIRLOCKD" --config "$T/airlockd.yaml" >"$T/daemon.log" 2>&1 &
    DAEMON_PID=$!
    local i
    for i in $(seq 1 100); do
        if node -e "fetch('http://127.0.0.1:$PORT/healthz').then((r) => process.exit(r.ok ? 0 : 1),
                    () => process.exit(1))" 2>/dev/null; then
            return 0
        fi
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

if [ ! -x "$AIRLOCKD" ]; then
    skip "http" "$AIRLOCKD not built: Streamable HTTP not checked"
elif ! start_daemon; then
    fail "http: airlockd starts and answers /healthz" "$(tail -n 15 "$T/daemon.log")"
else
    pass "http: airlockd starts and answers /healthz"
    URL=http://127.0.0.1:$PORT/mcp
    run_client http http "$URL" "$TOKEN"
    cat >"$T/inspector-http.json" <<EOF
{"mcpServers": {"airlock": {"type": "streamable-http", "url": "$URL"}}}
EOF
    inspector "inspector-cli http: tools/list" \
        "out.tools.map((t) => t.name).sort().join() === '$TOOLS'" \
        --config "$T/inspector-http.json" --server airlock \
        --header "Authorization: Bearer $TOKEN" --method tools/list
    if [ "$SERVLET" = 1 ]; then
        inspector "inspector-cli http: tools/call of a servlet's tool" \
            'out.isError === false && out.content[0].text === "olleh"' \
            --config "$T/inspector-http.json" --server airlock \
            --header "Authorization: Bearer $TOKEN" --method tools/call \
            --tool-name textkit_reverse --tool-arg 'text=hello'
    fi
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        pass "http: airlockd still running after the checks"
    else
        fail "http: airlockd still running after the checks" "$(tail -n 15 "$T/daemon.log")"
    fi
    # SIGTERM: a graceful shutdown, after which ASan's leak check runs
    rc=0
    kill -TERM "$DAEMON_PID" 2>/dev/null
    wait "$DAEMON_PID" 2>/dev/null || rc=$?
    DAEMON_PID=
    if [ "$rc" -eq 0 ] && ! grep -Eq "$SANITIZER" "$T/daemon.log"; then
        pass "http: airlockd exits 0 on SIGTERM, no sanitizer report"
    else
        fail "http: airlockd exits 0 on SIGTERM, no sanitizer report" "exit status $rc
$(grep -E -A 12 "$SANITIZER" "$T/daemon.log" | head -n 30)"
    fi
fi

finish_mcp
