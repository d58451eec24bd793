#!/usr/bin/env bash
# tests/service/capabilities.sh — airlockd's capabilities end to end (issue 7),
# through curl on loopback, with Debian's real OCI registry:
#
#   tests/service/capabilities.sh [REGEX]     the cases whose name matches REGEX
#
# Builds the example plugins (examples/plugins/build.sh, clang-14 for
# wasm32), starts airlockd ($AIRLOCK_DAEMON, default build/asan/airlockd)
# with capabilities.dir holding them and checks: the list (servlet or not,
# MCP tool names), a hostile directory entry refused without stopping the
# daemon (garbage bytes, a manifest asking for host paths), kind "plugin"
# executions (output, plugin error, unknown capability, bad fields), the
# audit rows, MCP tools/list + tools/call of the servlet's tools, install by
# upload and uninstall; then with `docker-registry` on a free loopback port:
# publish through the API, install by URN and call; publish while the
# registry is down (202, queued), then the registry up: the daemon's retry
# thread pushes it, exactly once (one manifest PUT in the registry's log);
# kill -9 of the daemon with a queued publication, restart: nothing lost.
# A sanitizer report in a daemon's log fails the run.
# Prints "PASS name" / "FAIL name: why", last line "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
FILTER=${1:-}
. tests/lib/cases.bash
. tests/service/lib.bash # DAEMON, CLI and the helpers
REGISTRY_BIN=${REGISTRY_BIN:-/usr/bin/docker-registry}
for need in "$DAEMON" "$CLI"; do
    if [ ! -x "$need" ]; then
        fail setup "$need is not built"
        finish
    fi
done
service_tmp airlock-caps-test

TOK=caps-$RANDOM$RANDOM
H_TOK=$("$DAEMON" hash-token "$TOK")

# ---- fixtures: the example plugins --------------------------------------------------------
if ! examples/plugins/build.sh "$T/plugins" >"$T/build.log" 2>&1; then
    fail setup "examples/plugins/build.sh failed: $(tail -n 5 "$T/build.log")"
    finish
fi
mkdir -p "$T/caps"
cp "$T/plugins/mcp_servlet.wasm" "$T/caps/textkit.wasm"
cp "$T/plugins/count_vowels.wasm" "$T/caps/vowels.wasm"
cp "$T/plugins/json_transform.wasm" "$T/caps/transform.wasm"
echo '{"config": {"vowels": "aeiouy"}}' >"$T/caps/vowels.json"
printf 'not wasm at all' >"$T/caps/garbage.wasm"
cp "$T/plugins/count_vowels.wasm" "$T/caps/greedy.wasm"
echo "{\"allowed_paths\": {\"/etc\": \"/etc\"}}" >"$T/caps/greedy.json"

# config DIR PORT [REGISTRY]: a daemon config in DIR
config() {
    local dir=$1 port=$2 registry=${3:-}
    mkdir -p "$dir"
    cat >"$dir/airlockd.yaml" <<EOF
listen:
  unix_socket: $dir/d.sock
  tcp_host: 127.0.0.1
  tcp_port: $port
paths:
  state_dir: $dir
rate_limits:
  exec_per_minute: 1000
tokens:
  - name: caps
    sha256: $H_TOK
capabilities:
  dir: $T/caps
  registry: "$registry"
  cache: "$dir/cache"
EOF
    mkdir -p "$dir/cache"
}

# start, call, jb, show, api, post: tests/service/lib.bash
plugin() { post /v1/executions "{\"kind\":\"plugin\",\"capability\":\"$1\",\"function\":\"$2\",\"input\":$3}"; }
mcp() { # METHOD PARAMS-JSON: one JSON-RPC request in the MCP session $MCP_SID
    api POST /mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $MCP_SID" -H 'MCP-Protocol-Version: 2025-11-25' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"$1\",\"params\":$2}"
}

# ---- the registry -----------------------------------------------------------------------------
# start_registry DIR PORT: Debian's docker-registry on 127.0.0.1:PORT, storage and log in DIR
start_registry() {
    local dir=$1 port=$2 i
    mkdir -p "$dir/storage"
    cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: $dir/storage
http:
  addr: 127.0.0.1:$port
EOF
    "$REGISTRY_BIN" serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 &
    REG_PID=$!
    PIDS+=("$REG_PID")
    for i in $(seq 1 100); do
        curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$port/v2/" && return 0
        sleep 0.1
    done
    return 1
}
manifest_puts() { # LOG NAME TAG: manifest PUTs the registry logged for NAME:TAG
    grep -c "PUT /v2/$2/manifests/$3 " "$1" 2>/dev/null || true
}
manifest_resolves() { # NAME TAG: true once the registry on $REG_PORT serves NAME:TAG (20 s at most)
    local i
    for i in $(seq 1 100); do
        curl -sf -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
            "http://127.0.0.1:$REG_PORT/v2/$1/manifests/$2" && return 0
        sleep 0.2
    done
    return 1
}

# ---- daemon 1: capabilities from a directory --------------------------------------------------
start_daemon1

if want list; then
    api GET /v1/capabilities
    names=$(jb '[.capabilities[].name] | sort | join(",")')
    if [ "$CODE" = 200 ] && [ "$names" = "textkit,transform,vowels" ]; then pass list/installed_from_dir
    else fail list/installed_from_dir "$(show)"; fi
    tools=$(jb '.capabilities[] | select(.name == "textkit") | .mcp_tools | sort | join(",")')
    servlet=$(jb '.capabilities[] | select(.name == "vowels") | .servlet')
    if [ "$tools" = "textkit_count_vowels,textkit_reverse" ] && [ "$servlet" = false ]
    then pass list/servlet_tools; else fail list/servlet_tools "tools=$tools vowels.servlet=$servlet"; fi
    digest=$(jb '.capabilities[] | select(.name == "vowels") | .digest')
    want_digest="sha256:$(sha256sum "$T/caps/vowels.wasm" | cut -d' ' -f1)"
    if [ "$digest" = "$want_digest" ]; then pass list/digest; else fail list/digest "$digest != $want_digest"; fi
    if grep -q "garbage.wasm" "$T/d1.log" && grep -q "greedy.wasm.*allowed_paths" "$T/d1.log"
    then pass list/hostile_entries_refused_and_logged
    else fail list/hostile_entries_refused_and_logged "$(grep capabilities "$T/d1.log" | head -n 5)"; fi
fi

if want exec; then
    plugin vowels count_vowels '"hello world, yay"'
    if [ "$CODE" = 200 ] && [ "$(jb .status)" = ok ] && [ "$(jb .backend)" = plugin ] &&
        [ "$(jb .stdout | jq -r .count)" = 6 ]
    then pass exec/plugin_ok_with_manifest_config; else fail exec/plugin_ok_with_manifest_config "$(show)"; fi
    plugin transform transform '"{not json"'
    if [ "$CODE" = 200 ] && [ "$(jb .status)" = exit ] && [ -n "$(jb .stderr)" ]
    then pass exec/plugin_error_is_exit; else fail exec/plugin_error_is_exit "$(show)"; fi
    plugin nosuch count_vowels '"x"'
    if [ "$CODE" = 404 ]; then pass exec/unknown_capability_404; else fail exec/unknown_capability_404 "$(show)"; fi
    plugin vowels no_such_function '"x"'
    if [ "$CODE" = 200 ] && [ "$(jb .status)" != ok ] && [[ "$(jb .error)" == *"manifest conformance error"* ]]
    then pass exec/unknown_function; else fail exec/unknown_function "$(show)"; fi
    post /v1/executions '{"kind":"plugin","capability":"vowels","function":"count_vowels","stdin":"x"}'
    if [ "$CODE" = 400 ] && [[ "$(jb .error.message)" == *stdin* ]]
    then pass exec/field_not_for_plugin; else fail exec/field_not_for_plugin "$(show)"; fi
    post /v1/executions '{"kind":"plugin","capability":"../etc","function":"f"}'
    if [ "$CODE" = 400 ]; then pass exec/bad_capability_name; else fail exec/bad_capability_name "$(show)"; fi
    rows=$("$CLI" audit --db "$D1/audit.db" --json --limit 50 2>/dev/null |
        jq '[.[] | select(.kind == "plugin")] | length')
    if [ "${rows:-0}" -ge 3 ]; then pass exec/audited; else fail exec/audited "plugin rows: ${rows:-none}"; fi
fi

if want mcp; then
    api POST /mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -D "$T/mcp.headers" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    MCP_SID=$(grep -i '^mcp-session-id:' "$T/mcp.headers" | cut -d: -f2 | tr -d ' \r')
    mcp tools/list '{}'
    names=$(jb '[.result.tools[].name] | sort | join(",")')
    if [ "$names" = "run_command,run_python,run_wasm,textkit_count_vowels,textkit_reverse" ] &&
        [ "$(jb '.result.tools[] | select(.name == "textkit_reverse") | .inputSchema.type')" = object ]
    then pass mcp/tools_list_has_servlet_tools; else fail mcp/tools_list_has_servlet_tools "$(show)"; fi
    mcp tools/call '{"name":"textkit_reverse","arguments":{"text":"airlock"}}'
    if [ "$(jb .result.isError)" = false ] && [ "$(jb '.result.content[0].text')" = kcolria ]
    then pass mcp/servlet_call; else fail mcp/servlet_call "$(show)"; fi
    mcp tools/call '{"name":"textkit_nosuch","arguments":{}}'
    if [ "$(jb .error.code)" = -32602 ]; then pass mcp/unknown_servlet_tool; else fail mcp/unknown_servlet_tool "$(show)"; fi
fi

if want install; then
    B64=$(base64 -w0 "$T/plugins/count_vowels.wasm")
    post /v1/capabilities "{\"name\":\"uploaded\",\"module_base64\":\"$B64\"}"
    if [ "$CODE" = 201 ] && [ "$(jb .name)" = uploaded ]; then pass install/upload; else fail install/upload "$(show)"; fi
    plugin uploaded count_vowels '"aaa"'
    if [ "$(jb .stdout | jq -r .count)" = 3 ]; then pass install/upload_callable; else fail install/upload_callable "$(show)"; fi
    post /v1/capabilities '{"name":"junk","module_base64":"AGFzbQEAAAAF"}'
    if [ "$CODE" = 400 ]; then pass install/malformed_module_400; else fail install/malformed_module_400 "$(show)"; fi
    post /v1/capabilities "{\"name\":\"x\",\"module_base64\":\"$B64\",\"bogus\":1}"
    if [ "$CODE" = 400 ]; then pass install/unknown_field_400; else fail install/unknown_field_400 "$(show)"; fi
    post /v1/capabilities "{\"name\":\"pathy\",\"module_base64\":\"$B64\",\"manifest\":{\"allowed_paths\":{\"/\":\"/host\"}}}"
    if [ "$CODE" = 400 ] && [[ "$(jb .error.message)" == *allowed_paths* ]]
    then pass install/host_paths_refused; else fail install/host_paths_refused "$(show)"; fi
    post /v1/capabilities '{"urn":"urn:airlock:cap:x:1"}'
    if [ "$CODE" = 409 ]; then pass install/urn_without_registry_409; else fail install/urn_without_registry_409 "$(show)"; fi
    api DELETE /v1/capabilities/uploaded
    first=$CODE
    plugin uploaded count_vowels '"aaa"'
    if [ "$first" = 204 ] && [ "$CODE" = 404 ]; then pass install/delete; else fail install/delete "delete $first, then call $CODE"; fi
fi

kill -TERM "$D1_PID"
wait "$D1_PID" 2>/dev/null

# ---- daemon 2: a registry; publish, install by URN, retry -------------------------------------
if [ ! -x "$REGISTRY_BIN" ]; then
    fail registry "no $REGISTRY_BIN (apt-get install docker-registry)"
else
    REG_PORT=$(free_port)
    D2=$T/d2
    PORT2=$(free_port)
    config "$D2" "$PORT2" "http://127.0.0.1:$REG_PORT"
    U=http://127.0.0.1:$PORT2
    if ! start_registry "$T/reg" "$REG_PORT"; then
        fail registry/start "$(tail -n 5 "$T/reg/registry.log")"
    elif ! start d2 "$D2"; then
        fail registry/daemon "$(tail -n 5 "$T/d2.log")"
    else
        D2_PID=$PID
        B64=$(base64 -w0 "$T/plugins/count_vowels.wasm")
        DIGEST=$(sha256sum "$T/plugins/count_vowels.wasm" | cut -d' ' -f1)
        if want publish; then
            post /v1/capabilities/publish "{\"name\":\"tools/vowels\",\"version\":\"1.0.0\",\"module_base64\":\"$B64\",\"manifest\":{\"config\":{\"vowels\":\"ou\"}}}"
            if [ "$CODE" = 201 ] && [ "$(jb .urn)" = "urn:airlock:cap:tools/vowels:1.0.0" ] &&
                [ "$(jb .pushed)" = true ] && [ "$(jb .digest)" = "sha256:$DIGEST" ]
            then pass publish/pushed; else fail publish/pushed "$(show)"; fi
            post /v1/capabilities/publish "{\"name\":\"tools/vowels\",\"version\":\"1.0.0\",\"module_base64\":\"$B64\",\"manifest\":{\"config\":{\"vowels\":\"ou\"}}}"
            if [ "$(jb .duplicate)" = true ] && [ "$(manifest_puts "$T/reg/registry.log" tools/vowels 1.0.0)" = 1 ]
            then pass publish/idempotent; else fail publish/idempotent "$(show); PUTs $(manifest_puts "$T/reg/registry.log" tools/vowels 1.0.0)"; fi
            post /v1/capabilities/publish "{\"name\":\"tools/vowels\",\"version\":\"1.0.0\",\"module_base64\":\"$B64\"}"
            if [ "$CODE" = 400 ] && [[ "$(jb .error.message)" == *"publish a new version"* ]]
            then pass publish/tag_is_immutable; else fail publish/tag_is_immutable "$(show)"; fi
            post /v1/capabilities '{"urn":"urn:airlock:cap:tools/vowels:1.0.0"}'
            if [ "$CODE" = 201 ] && [ "$(jb .name)" = vowels ] && [ "$(jb .digest)" = "sha256:$DIGEST" ]
            then pass publish/install_by_urn; else fail publish/install_by_urn "$(show)"; fi
            cached=$(find "$D2/cache" -type f -print0 | xargs -0 -r sha256sum 2>/dev/null | grep -c "$DIGEST")
            if [ "${cached:-0}" -ge 1 ]; then pass publish/module_in_cache
            else fail publish/module_in_cache "$(find "$D2/cache" -type f | head)"; fi
            plugin vowels count_vowels '"hello you"'
            if [ "$(jb .stdout | jq -r .count)" = 3 ]
            then pass publish/call_uses_published_manifest; else fail publish/call_uses_published_manifest "$(show)"; fi
        fi
        if want retry; then
            kill "$REG_PID"
            wait "$REG_PID" 2>/dev/null
            post /v1/capabilities/publish "{\"name\":\"tools/later\",\"version\":\"2\",\"module_base64\":\"$B64\"}"
            if [ "$CODE" = 202 ] && [ "$(jb .pushed)" = false ] && [ -n "$(jb .last_error)" ]
            then pass retry/queued_while_registry_down; else fail retry/queued_while_registry_down "$(show)"; fi
            start_registry "$T/reg" "$REG_PORT"
            ok=
            manifest_resolves tools/later 2 && ok=1
            sleep 3 # one more retry period: a second push would show now
            puts=$(manifest_puts "$T/reg/registry.log" tools/later 2)
            if [ -n "$ok" ] && [ "$puts" = 1 ]; then pass retry/pushed_once_when_back
            else fail retry/pushed_once_when_back "resolved=${ok:-no} manifest PUTs=$puts"; fi
        fi
        if want kill9; then
            kill "$REG_PID"
            wait "$REG_PID" 2>/dev/null
            post /v1/capabilities/publish "{\"name\":\"tools/survivor\",\"version\":\"3\",\"module_base64\":\"$B64\"}"
            queued=$CODE
            kill -9 "$D2_PID"
            wait "$D2_PID" 2>/dev/null
            start_registry "$T/reg" "$REG_PORT"
            start d2b "$D2"
            D2_PID=$PID
            ok=
            manifest_resolves tools/survivor 3 && ok=1
            if [ "$queued" = 202 ] && [ -n "$ok" ] &&
                [ "$(manifest_puts "$T/reg/registry.log" tools/survivor 3)" = 1 ]
            then pass kill9/queued_publication_survives
            else fail kill9/queued_publication_survives "queued=$queued resolved=${ok:-no}"; fi
        fi
        kill -TERM "$D2_PID"
        wait "$D2_PID" 2>/dev/null
    fi
fi

sanitizer_check no_sanitizer_report "$T"/d*.log
finish
