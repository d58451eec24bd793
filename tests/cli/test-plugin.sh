#!/usr/bin/env bash
# tests/cli/test-plugin.sh — end-to-end tests of `airlock plugin call`
# (src/cli/plugin.c -> al_plugin_* / al_manifest_*, issue 7).
#
# Builds the example plugins (examples/plugins/*.c) and the hostile one
# (tests/plugin/hostile.c) with examples/plugins/build.sh into a private
# temporary directory, then runs $AIRLOCK (default build/asan/airlock) on
# them: count_vowels (output, --config, --repeat with vars growing, input
# from a file and stdin), json_transform (results and malformed input),
# mcp_servlet (describe, call), http_fetch against a python3 http.server on
# 127.0.0.1 (allowed with --allow-host + --resolve + --allow-ip; denied
# without each), the manifest form (data in base64, a path with its hash, a
# hash mismatch, unknown fields, flags over the manifest), every function of
# hostile.c (a clear one-line error, the documented exit status, no crash,
# well within the time limit), --json, and bad flags (one line, exit 2).
#
# Each check looks at the exit status, stdout (exactly) and stderr (by
# pattern); a sanitizer report on stderr fails it. Prints one line per check
# and ends with "N passed, N failed"; exits non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=tests/cli/lib/exec-setup.bash
source tests/cli/lib/exec-setup.bash
SUBCOMMAND=plugin
RUN_TIMEOUT=20
SERVER_PID=
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# ---- the plugins -------------------------------------------------------------------------
P=$TMP/plugins
if examples/plugins/build.sh "$P" >"$TMP/build.log" 2>&1 &&
    examples/plugins/build.sh "$P" tests/plugin/hostile.c tests/plugin/files.c >>"$TMP/build.log" 2>&1; then
    pass "build the example plugins, hostile.c and files.c"
else
    fail "build the example plugins, hostile.c and files.c" "$(tail -n 20 "$TMP/build.log")"
    finish
fi
CV=$P/count_vowels.wasm
JT=$P/json_transform.wasm
HF=$P/http_fetch.wasm
MS=$P/mcp_servlet.wasm
H=$P/hostile.wasm

# ---- count_vowels: output, config, vars across --repeat ---------------------------------------
expect "count vowels" 0 '{"count":3,"total":3,"vowels":"aeiouAEIOU"}' "" -- \
    "$A" plugin call "$CV" count_vowels --input "Hello World"
expect "count vowels: --config vowels" 0 '{"count":6,"total":6,"vowels":"lo\""}' "" -- \
    "$A" plugin call "$CV" count_vowels --input 'Hello "World' --config 'vowels=lo"'
expect "count vowels: a later --config wins" 0 '{"count":1,"total":1,"vowels":"H"}' "" -- \
    "$A" plugin call "$CV" count_vowels --input "Hello" --config vowels=x --config=vowels=H
expect "count vowels: --repeat 3, the total grows (vars persist)" 0 \
    $'{"count":2,"total":2,"vowels":"aeiouAEIOU"}\n{"count":2,"total":4,"vowels":"aeiouAEIOU"}\n{"count":2,"total":6,"vowels":"aeiouAEIOU"}' \
    "" -- "$A" plugin call "$CV" count_vowels --input hello --repeat 3
printf 'banana' >"$TMP/input.txt"
expect "count vowels: --input-file" 0 '{"count":3,"total":3,"vowels":"aeiouAEIOU"}' "" -- \
    "$A" plugin call "$CV" count_vowels --input-file "$TMP/input.txt"
STDIN=$TMP/input.txt expect "count vowels: --input-file - (stdin)" 0 \
    '{"count":3,"total":3,"vowels":"aeiouAEIOU"}' "" -- "$A" plugin call "$CV" count_vowels --input-file -
expect "count vowels: empty input" 0 '{"count":0,"total":0,"vowels":"aeiouAEIOU"}' "" -- \
    "$A" plugin call "$CV" count_vowels
expect "options before the positionals" 0 '{"count":1,"total":1,"vowels":"aeiouAEIOU"}' "" -- \
    "$A" plugin call --input=x.a "$CV" count_vowels

# ---- json_transform ------------------------------------------------------------------------------
expect "transform: sum" 0 '{"op":"sum","result":6}' "" -- \
    "$A" plugin call "$JT" transform --input '{"op": "sum", "values": [1, 2, 3]}'
expect "transform: max" 0 '{"op":"max","result":9}' "" -- \
    "$A" plugin call "$JT" transform --input '{"op":"max","values":[4,-1,9]}'
expect "transform: upper" 0 '{"op":"upper","result":"HELLO \"X\""}' "" -- \
    "$A" plugin call "$JT" transform --input '{"op":"upper","text":"hello \"x\""}'
expect "transform: malformed JSON is a plugin error" 1 "" \
    '^airlock plugin call: transform: plugin error: transform: the input is not valid JSON$' -- \
    "$A" plugin call "$JT" transform --input '{"op": "sum", "values": [1, 2'
expect "transform: unknown op" 1 "" 'plugin error: transform: unknown "op"' -- \
    "$A" plugin call "$JT" transform --input '{"op":"div","values":[1]}'
expect "transform: overflow" 1 "" 'the sum overflows a 64-bit integer' -- \
    "$A" plugin call "$JT" transform --input '{"op":"sum","values":[9223372036854775807,1]}'

# ---- mcp_servlet ------------------------------------------------------------------------------------
run_airlock "$A" plugin call "$MS" describe
why=$(node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const names = d.tools.map(t => t.name).sort().join(",");
    if (names !== "count_vowels,reverse") throw new Error("tools: " + names);
    for (const t of d.tools)
        if (typeof t.description !== "string" || t.inputSchema.type !== "object")
            throw new Error("tool " + t.name + " lacks description/inputSchema");
' "$OUT" 2>&1 | tail -n 1)
check "mcp servlet: describe lists two tools" "$([[ $RC -eq 0 ]] || echo "exit $RC")" "$why"
expect "mcp servlet: call reverse" 0 '{"content":[{"type":"text","text":"cba"}],"isError":false}' "" -- \
    "$A" plugin call "$MS" call --input '{"params":{"name":"reverse","arguments":{"text":"abc"}}}'
expect "mcp servlet: call count_vowels" 0 '{"content":[{"type":"text","text":"5"}],"isError":false}' "" -- \
    "$A" plugin call "$MS" call --input '{"params":{"name":"count_vowels","arguments":{"text":"Education"}}}'
expect "mcp servlet: unknown tool is isError" 0 \
    '{"content":[{"type":"text","text":"unknown tool (this servlet has count_vowels and reverse)"}],"isError":true}' "" -- \
    "$A" plugin call "$MS" call --input '{"params":{"name":"nope","arguments":{}}}'

# ---- http_fetch against a loopback server ---------------------------------------------------------------
mkdir -p "$TMP/www"
printf 'hello from loopback' >"$TMP/www/hello.txt"
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$TMP/www" >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
PORT=
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$TMP/server.log" | head -n 1)
    [[ -n $PORT ]] && break
    sleep 0.1
done
if [[ -z $PORT ]]; then
    fail "loopback HTTP server started" "$(cat "$TMP/server.log")"
else
    URL="http://files.test:$PORT/hello.txt"
    ALLOW=(--allow-host files.test --resolve files.test:127.0.0.1 --allow-ip 127.0.0.1/32)
    expect "http fetch: allowed" 0 "hello from loopback" "^info: fetch: GET $URL -> 200$" -- \
        "$A" plugin call "$HF" fetch --input "$URL" "${ALLOW[@]}"
    expect "http fetch: --log-level warn hides the info line" 0 "hello from loopback" "" -- \
        "$A" plugin call "$HF" fetch --input "$URL" "${ALLOW[@]}" --log-level warn
    expect "http fetch: a 404 is the plugin's error" 1 "" "HTTP status 404" -- \
        "$A" plugin call "$HF" fetch --input "http://files.test:$PORT/missing" "${ALLOW[@]}"
    expect "http fetch: denied without --allow-host" 70 "" "no allowed_hosts" -- \
        "$A" plugin call "$HF" fetch --input "$URL" --resolve files.test:127.0.0.1 --allow-ip 127.0.0.1/32
    expect "http fetch: denied without --allow-ip (loopback)" 70 "" "may not reach" -- \
        "$A" plugin call "$HF" fetch --input "$URL" --allow-host files.test --resolve files.test:127.0.0.1
    expect "http fetch: denied for another host" 70 "" "not allowed" -- \
        "$A" plugin call "$HF" fetch --input "http://other.test:$PORT/hello.txt" \
        --allow-host files.test --resolve other.test:127.0.0.1 --allow-ip 127.0.0.1/32
    printf '{"wasm": [{"path": "http_fetch.wasm"}], "allowed_hosts": ["example.org", "files.test"]}' >"$P/fetch.json"
    expect "http fetch: allowed_hosts from a manifest" 0 "hello from loopback" "-> 200" -- \
        "$A" plugin call "$P/fetch.json" fetch --input "$URL" --resolve files.test:127.0.0.1 \
        --allow-ip 127.0.0.1/32
fi

# ---- the manifest form ----------------------------------------------------------------------------------
B64=$(base64 -w0 "$CV")
SHA=$(sha256sum "$CV" | cut -d' ' -f1)
printf '{"wasm": [{"data": "%s"}], "config": {"vowels": "xyz"}}' "$B64" >"$TMP/data.json"
expect "manifest: data (base64) and config" 0 '{"count":5,"total":5,"vowels":"xyz"}' "" -- \
    "$A" plugin call "$TMP/data.json" count_vowels --input "xyzzy"
expect "manifest: --config overrides the manifest's" 0 '{"count":1,"total":1,"vowels":"q"}' "" -- \
    "$A" plugin call "$TMP/data.json" count_vowels --input "xyzzyq" --config vowels=q
printf '{"wasm": [{"path": "count_vowels.wasm", "hash": "%s", "name": "main"}], "memory": {"max_pages": 64}, "timeout_ms": 5000}' \
    "$SHA" >"$P/path.json"
expect "manifest: path relative to the manifest, hash checked" 0 \
    '{"count":2,"total":2,"vowels":"aeiouAEIOU"}' "" -- \
    "$A" plugin call "$P/path.json" count_vowels --input "aXe"
printf '{"wasm": [{"path": "count_vowels.wasm", "hash": "%s"}]}' \
    "0000000000000000000000000000000000000000000000000000000000000000" >"$P/badhash.json"
expect "manifest: hash mismatch" 1 "" "badhash.json: manifest: wasm\[0\].hash: SHA-256 mismatch: the module's is $SHA" -- \
    "$A" plugin call "$P/badhash.json" count_vowels --input a
printf '{"wasm": [{"path": "count_vowels.wasm"}], "memory": {"max": 4}}' >"$P/unknown.json"
expect "manifest: unknown field" 1 "" 'unknown.json: manifest: unknown field "memory.max"$' -- \
    "$A" plugin call "$P/unknown.json" count_vowels
printf '{"wasm": [{"path": "count_vowels.wasm"}], "timeout_ms": -5}' >"$P/negative.json"
expect "manifest: negative number" 1 "" 'manifest: timeout_ms: expected a non-negative integer' -- \
    "$A" plugin call "$P/negative.json" count_vowels
printf '{"config": {"a": "b"}}' >"$P/nowasm.json"
expect "manifest: no wasm source" 1 "" 'manifest: the manifest names no wasm source' -- \
    "$A" plugin call "$P/nowasm.json" count_vowels
printf '{"wasm": [{"path": "hostile.wasm"}], "timeout_ms": 300}' >"$P/hostile.json"
expect "manifest: timeout_ms applies" 72 "" "timed out" -- "$A" plugin call "$P/hostile.json" loop
expect "manifest: missing manifest file" 1 "" "nothere.json: No such file or directory" -- \
    "$A" plugin call "$P/nothere.json" count_vowels

# ---- WASI files: only the directories granted (--allow-path, manifest allowed_paths) -----------------
FP=$P/files.wasm
mkdir -p "$TMP/data"
echo secret-data >"$TMP/data/a.txt"
expect "files: a granted file is read" 0 "secret-data" "" -- \
    "$A" plugin call "$FP" read_file --input /data/a.txt --allow-path "$TMP/data:/data"
expect "files: no grant, no file" 1 "" "open /data/a.txt: Capabilities insufficient" -- \
    "$A" plugin call "$FP" read_file --input /data/a.txt
expect "files: .. cannot leave the grant" 1 "" "Capabilities insufficient" -- \
    "$A" plugin call "$FP" read_file --input /data/../../etc/passwd --allow-path "$TMP/data:/data"
expect "files: a read-only grant refuses writes" 1 "" "Read-only file system" -- \
    "$A" plugin call "$FP" write_file --input $'/data/b.txt\nhello' --allow-path "$TMP/data:/data"
expect "files: :rw allows writes" 0 "ok" "" -- \
    "$A" plugin call "$FP" write_file --input $'/data/b.txt\nhello' --allow-path "$TMP/data:/data:rw"
check "files: the write reached the host directory" \
    "$([[ $(cat "$TMP/data/b.txt" 2>/dev/null) == hello ]] || echo "b.txt: $(cat "$TMP/data/b.txt" 2>&1)")"
printf '{"wasm": [{"path": "files.wasm"}], "allowed_paths": {"ro:%s": "/data"}}' "$TMP/data" >"$P/files.json"
expect "files: manifest allowed_paths with ro: reads" 0 "secret-data" "" -- \
    "$A" plugin call "$P/files.json" read_file --input /data/a.txt
expect "files: manifest ro: refuses writes" 1 "" "Read-only file system" -- \
    "$A" plugin call "$P/files.json" write_file --input $'/data/c.txt\nx'

# ---- hostile plugins: one clear line, the documented status, quickly ------------------------------------------
# hostile NAME RC STDERR_REGEX [OPTIONS...]
hostile() {
    local fn=$1 rc=$2 re=$3
    shift 3
    expect "hostile: $fn" "$rc" "" "$re" -- "$A" plugin call "$H" "$fn" --timeout-ms 2000 "$@"
    local lines
    lines=$(wc -l <"$ERR")
    [[ $lines -eq 1 ]] && pass "hostile: $fn: one line on stderr" ||
        fail "hostile: $fn: one line on stderr" "$lines lines: $(head -c 300 "$ERR")"
    ((ELAPSED_MS < 10000)) && pass "hostile: $fn: within 10 s" ||
        fail "hostile: $fn: within 10 s" "took $ELAPSED_MS ms"
}
hostile trap 70 "^airlock plugin call: trap: manifest conformance error: .*unreachable"
hostile loop 72 "^airlock plugin call: loop: manifest conformance error: .*timed out"
hostile loop 71 "manifest conformance error: .*fuel" --fuel 1000000
hostile oom 73 "^airlock plugin call: oom: manifest conformance error: .*memory" --max-pages 64
hostile big_output 76 "^airlock plugin call: big_output: manifest conformance error: .*output.*max_output_bytes"
# an 11 MiB error either never exists (the host refuses the block: the
# plugin's own error) or is cut off at the cap (76)
run_airlock "$A" plugin call "$H" big_error --timeout-ms 2000
check "hostile: big_error" "$([[ $RC -eq 1 || $RC -eq 76 ]] || echo "exit $RC, want 1 or 76")" \
    "$([[ ! -s $OUT ]] || echo "unexpected stdout")" \
    "$(grep -Eq '^airlock plugin call: big_error: (plugin error: big_error: the host refused|manifest conformance error: .*error)' "$ERR" ||
        echo "stderr: $(head -c 300 "$ERR")")" \
    "$([[ $(wc -l <"$ERR") -eq 1 ]] || echo "stderr is not one line")"
hostile bad_handle 70 "^airlock plugin call: bad_handle: manifest conformance error: output_set: .*outside"
hostile bad_offset 70 "^airlock plugin call: bad_offset: manifest conformance error: output_set: .*outside"
hostile bad_load 70 "^airlock plugin call: bad_load: manifest conformance error: load_u64: .*outside"
hostile error_wins 1 "^airlock plugin call: error_wins: plugin error: error_wins: this error must win over the return code 0$"
# a plugin's log and error text reach the terminal without control bytes
expect "hostile: escapes are neutralised" 1 "" \
    "^warn: log:\?\[31mred\?\?2J\?2J\?\?forged line	café\$" -- "$A" plugin call "$H" escapes
check "hostile: no control bytes on stderr" \
    "$(! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$ERR" || echo "control bytes: $(od -c "$ERR" | head -5)")" \
    "$(grep -q '^airlock plugin call: escapes: plugin error: error:?\]0;title??second line$' "$ERR" ||
        echo "stderr: $(cat -v "$ERR")")"

# with a larger cap the same 11 MiB output is delivered whole
run_airlock "$A" plugin call "$H" big_output --max-output 12M
check "hostile: big_output under --max-output 12M" "$([[ $RC -eq 0 ]] || echo "exit $RC: $(head -c 300 "$ERR")")" \
    "$([[ $(stat -c %s "$OUT") -eq 11534336 ]] || echo "stdout is $(stat -c %s "$OUT") bytes, want 11534336")"
expect "hostile: the output of a working function" 0 "ok" "" -- "$A" plugin call "$H" ok

# ---- --json ---------------------------------------------------------------------------------------------------
# json_lines NAME RC JS_CONDITION(lines) -- COMMAND...
json_lines() {
    local name=$1 want_rc=$2 cond=$3
    shift 4
    run_airlock "$@"
    local why
    why=$(node -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(l => JSON.parse(l));
        const keys = ["function","call","status","exit_code","output","error","trap","wall_ms","fuel_used"];
        for (const d of lines) for (const k of keys) if (!(k in d)) throw new Error("missing " + k);
        if (!('"$cond"')) throw new Error("condition failed: " + JSON.stringify(lines).slice(0, 400));
    ' "$OUT" 2>&1 | tail -n 1)
    check "json: $name" "$([[ $RC -eq $want_rc ]] || echo "exit $RC, want $want_rc")" "$why"
}
json_lines "two calls" 0 'lines.length === 2 && lines[1].call === 2 && JSON.parse(lines[1].output).total === 4 && lines[0].status === "ok" && lines[0].error === null' -- \
    "$A" plugin call "$CV" count_vowels --input ae --repeat 2 --json
json_lines "a trap" 70 'lines.length === 1 && lines[0].status === "trap" && lines[0].trap === "unreachable" && lines[0].output === null && /conformance/.test(lines[0].error)' -- \
    "$A" plugin call "$H" trap --json
json_lines "a plugin error" 1 'lines.length === 1 && lines[0].status === "exit" && lines[0].exit_code === 1 && /not valid JSON/.test(lines[0].error)' -- \
    "$A" plugin call "$JT" transform --input '{' --json

# ---- loading errors ----------------------------------------------------------------------------------------------
printf 'not wasm' >"$TMP/garbage.wasm"
expect "not a wasm module" 65 "" "garbage.wasm: " -- "$A" plugin call "$TMP/garbage.wasm" f
expect "missing module file" 1 "" "nothere.wasm: No such file or directory" -- \
    "$A" plugin call "$TMP/nothere.wasm" f
expect "no such function" 1 "" "no function 'nope'" -- "$A" plugin call "$CV" nope

# ---- usage ----------------------------------------------------------------------------------------------------------
expect "plugin --help" 0 "*" "" -- "$A" plugin --help
missing=""
for flag in --input --input-file --config --allow-host --allow-ip --resolve --allow-path \
    --timeout-ms --fuel --max-pages --max-output --repeat --log-level --json; do
    grep -q -- "$flag" "$OUT" || missing+=" $flag"
done
[[ -z $missing ]] && pass "help lists every option" || fail "help lists every option" "missing:$missing"
expect "plugin call --help" 0 "*" "" -- "$A" plugin call --help

usage_error "no subcommand" "expected a subcommand: call"
usage_error "unknown subcommand" "unknown subcommand 'run'" run x.wasm f
usage_error "no arguments" "expected PLUGIN and FUNCTION" call
usage_error "no FUNCTION" "expected FUNCTION" call "$CV"
usage_error "extra argument" "unexpected argument 'extra'" call "$CV" f extra
usage_error "unknown option" "unknown option '--bogus'" call "$CV" f --bogus
usage_error "missing value" "--input: needs a value" call "$CV" f --input
usage_error "input twice" "the input is given twice" call "$CV" f --input a --input-file b
usage_error "repeat 0" "--repeat: must be greater than zero" call "$CV" f --repeat 0
usage_error "repeat not a number" "--repeat: not a" call "$CV" f --repeat x
usage_error "max-pages too large" "--max-pages: at most 65536" call "$CV" f --max-pages 70000
usage_error "timeout not a number" "--timeout-ms: not a" call "$CV" f --timeout-ms 1s
usage_error "fuel negative" "--fuel: not a number" call "$CV" f --fuel -5
usage_error "max-output" "--max-output '12Q'" call "$CV" f --max-output 12Q
usage_error "config without =" "--config 'novalue': expected KEY=VALUE" call "$CV" f --config novalue
usage_error "config empty key" "--config '=v': expected KEY=VALUE" call "$CV" f --config =v
usage_error "allow-host with a space" "--allow-host 'exa mple.com': not a host name" call "$CV" f --allow-host 'exa mple.com'
usage_error "allow-ip bad prefix" "--allow-ip '10.0.0.0/33': not a CIDR" call "$CV" f --allow-ip 10.0.0.0/33
usage_error "allow-ip not an address" "--allow-ip 'x': not a CIDR" call "$CV" f --allow-ip x
usage_error "resolve without address" "--resolve 'a.test': expected NAME:ADDRESS" call "$CV" f --resolve a.test
usage_error "resolve bad address" "--resolve 'a.test:999.1.1.1': not an IP address" call "$CV" f --resolve a.test:999.1.1.1
usage_error "log level" "--log-level 'loud'" call "$CV" f --log-level loud
usage_error "allow-path relative without guest" "--allow-path 'data': give GUEST" call "$CV" f --allow-path data
usage_error "allow-path relative guest" "--allow-path '/tmp:tmp': the guest path must be absolute" call "$CV" f --allow-path /tmp:tmp

finish
