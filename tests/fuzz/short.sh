#!/usr/bin/env bash
# short.sh — a short libFuzzer run of tests/fuzz/fuzz_module.c, then of
# tests/fuzz/fuzz_sni.c (the TLS SNI parser, issue 5) and of
# tests/fuzz/fuzz_http_head.c (HTTP request heads and chunked bodies, issue 5)
# and tests/fuzz/fuzz_policy_file.c (the CLI's JSON policy file).
#
#   tests/fuzz/short.sh [SECONDS [SNI_SECONDS [HTTP_SECONDS [POLICY_SECONDS]]]]
#   (defaults 30, 5, 5 and 5)
#
# Builds build/fuzz/fuzz_module (tests/fuzz/build.sh), makes a seed corpus
# from the spec test suite's modules — build/spec/*/*.wasm when the spec
# runner has produced them, else wast2json over the .wast files of
# WASM_TESTSUITE (default: ../shared/wasm-testsuite beside the repository;
# SIMD files skipped: airlock implements WebAssembly 2.0 without SIMD) — and
# fuzzes for SECONDS. New inputs accumulate in build/fuzz/corpus across runs;
# a crashing input is saved under build/fuzz/artifacts/ and the libFuzzer log
# is kept in build/fuzz/short.log. fuzz_sni then runs for SNI_SECONDS from
# seeds made by python3's ssl module (real ClientHellos, no network), with
# its corpus in build/fuzz/sni-corpus and its log in build/fuzz/short-sni.log.
# fuzz_http_head runs for HTTP_SECONDS from a few hand-written requests and
# chunked bodies (build/fuzz/http-seeds) with a dictionary of HTTP tokens
# (build/fuzz/http_head.dict), its corpus in build/fuzz/http-corpus and its
# log in build/fuzz/short-http.log. fuzz_policy_file runs for POLICY_SECONDS
# from tests/fuzz/seeds/policy_file with tests/fuzz/policy_file.dict.
# fuzz_svc_request (airlockd's request bodies) runs for 3 s from seeds
# written to build/fuzz/svc-request-seeds, with the policy file dictionary
# plus the request's own words (build/fuzz/svc_request.dict).
# fuzz_svc_config (airlockd's YAML config) runs for 3 s from
# dist/airlockd.yaml and a few hand-written files (build/fuzz/svc-config-seeds)
# with a dictionary of its keys (build/fuzz/svc_config.dict).
# fuzz_manifest (Extism plugin manifests, issue 7) runs for 3 s from
# tests/fuzz/seeds/manifest with tests/fuzz/manifest.dict, and fuzz_cap
# (capability URNs and OCI manifests) for 3 s from tests/fuzz/seeds/cap.
# The last line is the usual summary, one test per target: "8 passed,
# 0 failed" when nothing crashed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SECONDS_TO_RUN=${1:-30}
SNI_SECONDS=${2:-5}
HTTP_SECONDS=${3:-5}
POLICY_SECONDS=${4:-5}
OUT=build/fuzz
TESTSUITE=${WASM_TESTSUITE:-$ROOT/../shared/wasm-testsuite}

if ! tests/fuzz/build.sh; then
    echo "fuzz targets failed to build"
    echo "0 passed, 8 failed"
    exit 1
fi

seeds=$OUT/seeds
mkdir -p "$seeds" "$OUT/corpus" "$OUT/artifacts"
if compgen -G "build/spec/*/*.wasm" >/dev/null; then
    cp -f build/spec/*/*.wasm "$seeds"/ 2>/dev/null || true
elif [ -z "$(ls -A "$seeds")" ]; then
    if [ -d "$TESTSUITE" ] && command -v wast2json >/dev/null; then
        tmp=$(mktemp -d)
        for wast in "$TESTSUITE"/*.wast; do
            base=$(basename "$wast" .wast)
            case $base in simd_*) continue ;; esac
            wast2json --enable-all "$wast" -o "$tmp/$base.json" >/dev/null 2>&1 ||
                wast2json "$wast" -o "$tmp/$base.json" >/dev/null 2>&1 || true
        done
        for m in "$tmp"/*.wasm; do [ -e "$m" ] && cp "$m" "$seeds/"; done
        rm -rf "$tmp"
    else
        echo "no spec modules found (build/spec/*/*.wasm or $TESTSUITE): starting from an empty corpus" >&2
    fi
fi
echo "seed corpus: $(ls "$seeds" | wc -l) modules; fuzzing for ${SECONDS_TO_RUN}s" >&2

passed=0 failed=0
# fuzz_for NAME SECONDS LOG [libFuzzer options and corpus dirs...]: run one
# target, print its last statistics, and count it passed or failed.
fuzz_for() {
    local name=$1 seconds=$2 log=$3
    shift 3
    "$OUT/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 \
        -print_final_stats=1 "$@" >"$log" 2>&1
    local status=$?
    grep -E '^(#[0-9]+[[:space:]]+(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss_mb)' \
        "$log" | tail -n 3 >&2
    if [ $status -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "$name found a problem (exit $status); log: $log" >&2
        grep -E "ERROR|SUMMARY|runtime error|$name:|Test unit written" "$log" | head -n 20 >&2
    fi
}

fuzz_for fuzz_module "$SECONDS_TO_RUN" "$OUT/short.log" -max_len=65536 \
    -artifact_prefix="$OUT/artifacts/" "$OUT/corpus" "$seeds"

# ---- fuzz_sni ----
sni_seeds=$OUT/sni-seeds
mkdir -p "$sni_seeds" "$OUT/sni-corpus"
if [ -z "$(ls -A "$sni_seeds")" ] && command -v python3 >/dev/null; then
    python3 - "$sni_seeds" <<'PY' || echo "could not make ClientHello seeds" >&2
import ssl, sys
for ver in ("TLSv1_2", "TLSv1_3"):
    for sni in ("example.com", None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, ver)
        i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(i, o, server_hostname=sni)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        with open("%s/hello-%s-%s" % (sys.argv[1], ver, sni or "nosni"), "wb") as f:
            f.write(o.read())
PY
fi
echo "fuzz_sni: $(ls "$sni_seeds" | wc -l) seeds; fuzzing for ${SNI_SECONDS}s" >&2
fuzz_for fuzz_sni "$SNI_SECONDS" "$OUT/short-sni.log" -max_len=20000 \
    -artifact_prefix="$OUT/artifacts/sni-" "$OUT/sni-corpus" "$sni_seeds"

# ---- fuzz_http_head ----
http_seeds=$OUT/http-seeds
mkdir -p "$http_seeds" "$OUT/http-corpus"
if [ -z "$(ls -A "$http_seeds")" ]; then
    printf 'GET http://example.com/a?b=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\nProxy-Connection: Keep-Alive\r\n\r\n' >"$http_seeds/get"
    printf 'POST http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 5\r\nConnection: X-A, close\r\nX-A: 1\r\nAuthorization: Basic eDp5\r\n\r\nhello' >"$http_seeds/post"
    printf 'POST http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5;e=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Sum: 1\r\n\r\nGET http://b/ HTTP/1.1\r\n\r\n' >"$http_seeds/chunked"
    printf 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic eDp5\r\n\r\n\x16\x03\x01' >"$http_seeds/connect"
    printf 'GET http://192.0.2.1?q HTTP/1.0\r\n\r\n' >"$http_seeds/http10"
    printf '4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n' >"$http_seeds/body"
fi
cat >"$OUT/http_head.dict" <<'DICT'
"\x0d\x0a"
"\x0d\x0a\x0d\x0a"
"GET "
"CONNECT "
"http://"
"HTTP/1.1"
"HTTP/1.0"
"Host:"
"Content-Length:"
"Transfer-Encoding:"
"chunked"
"Connection:"
"Proxy-"
"Keep-Alive"
"Upgrade"
":443"
"[::1]"
";ext="
"0\x0d\x0a\x0d\x0a"
DICT
echo "fuzz_http_head: $(ls "$http_seeds" | wc -l) seeds; fuzzing for ${HTTP_SECONDS}s" >&2
fuzz_for fuzz_http_head "$HTTP_SECONDS" "$OUT/short-http.log" -max_len=20000 \
    -dict="$OUT/http_head.dict" -artifact_prefix="$OUT/artifacts/http-" \
    "$OUT/http-corpus" "$http_seeds"

# ---- fuzz_policy_file ----
mkdir -p "$OUT/policy-corpus"
echo "fuzz_policy_file: fuzzing for ${POLICY_SECONDS}s" >&2
fuzz_for fuzz_policy_file "$POLICY_SECONDS" "$OUT/short-policy.log" -max_len=65536 \
    -dict=tests/fuzz/policy_file.dict -artifact_prefix="$OUT/artifacts/policy-" \
    "$OUT/policy-corpus" tests/fuzz/seeds/policy_file
# ---- fuzz_svc_request (issue 6): airlockd's execution request bodies, 3 s ----
svc_seeds=$OUT/svc-request-seeds
mkdir -p "$svc_seeds" "$OUT/svc-request-corpus"
if [ -z "$(ls -A "$svc_seeds")" ]; then
    printf '{"kind": "python", "code": "print(1)", "args": ["a"], "timeout_ms": 1000, "memory_bytes": 65536, "fuel": 5, "session": "ab12", "stream": true, "env": {"K": "V"}, "stdin": "x"}' >"$svc_seeds/python"
    printf '{"kind": "wasm", "module_base64": "AGFzbQEAAAA=", "args": ["-v"], "stdin_base64": "AAE=", "dirs": [{"host": "/data", "guest": "/d", "read_only": false}]}' >"$svc_seeds/wasm"
    printf '{"kind": "wasm", "module_path": "/srv/m.wasm"}' >"$svc_seeds/wasm-path"
    printf '{"kind": "command", "argv": ["/bin/echo", "hi"], "backend": "gvisor", "egress": {"allow_domains": ["example.com", "*.x.org"], "deny_domains": ["b.example.com"], "allow_ports": [8080], "allow_ips": ["10.0.0.0/8"], "headers": [{"domain": "x.org", "name": "Authorization", "value": "Bearer t"}], "hosts": {"a.test": "[::1]"}, "max_connections": 4, "max_bytes_per_connection": 9, "max_bytes": 99, "idle_timeout_ms": 5}}' >"$svc_seeds/command"
fi
{
    cat tests/fuzz/policy_file.dict
    for w in kind python wasm command code module_base64 module_path args argv backend stdin \
        stdin_base64 fuel session stream '\\u0000' '=='; do
        printf '"%s"\n' "$w"
    done
} >"$OUT/svc_request.dict"
echo "fuzz_svc_request: $(ls "$svc_seeds" | wc -l) seeds; fuzzing for 3s" >&2
fuzz_for fuzz_svc_request 3 "$OUT/short-svc-request.log" -max_len=65536 \
    -dict="$OUT/svc_request.dict" -artifact_prefix="$OUT/artifacts/svc-request-" \
    "$OUT/svc-request-corpus" "$svc_seeds"
# ---- fuzz_svc_config (issue 6): airlockd's YAML configuration, 3 s ----
cfg_seeds=$OUT/svc-config-seeds
mkdir -p "$cfg_seeds" "$OUT/svc-config-corpus"
cp -f dist/airlockd.yaml "$cfg_seeds/dist.yaml" 2>/dev/null || true
printf 'listen: {tcp_port: 9000, unix_socket: ""}\nlimits:\n  memory: 512M\n  timeout: 500ms\n' >"$cfg_seeds/small.yaml"
printf 'tokens:\n  - name: ci\n    sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n    python_per_minute: 5\nredaction:\n  patterns: ["secret-[0-9]+", "^pw=.*$"]\n' >"$cfg_seeds/tokens.yaml"
printf 'paths:\n  allowed: ["/tmp", "ro:/"]\n  state_dir: /tmp/x\nmcp: {allowed_origins: ["http://localhost:6274"]}\n' >"$cfg_seeds/paths.yaml"
printf 'AKIAIOSFODNN7EXAMPLE Bearer abcdefghijkl\n-----BEGIN RSA PRIVATE KEY-----\nMII\n' >"$cfg_seeds/secrets.txt"
cat >"$OUT/svc_config.dict" <<'DICT'
"listen:"
"unix_socket:"
"tcp_host:"
"tcp_port:"
"unix_requires_token:"
"limits:"
"memory:"
"fuel:"
"timeout:"
"max_timeout:"
"output:"
"max_body:"
"paths:"
"allowed:"
"state_dir:"
"audit_db:"
"python_dir:"
"backends:"
"native:"
"gvisor:"
"sessions:"
"idle_timeout:"
"max:"
"workspace_bytes:"
"workers:"
"count:"
"queue:"
"rate_limits:"
"python_per_minute:"
"exec_per_minute:"
"tokens:"
"name:"
"sha256:"
"redaction:"
"builtin:"
"patterns:"
"mcp:"
"allowed_origins:"
"\x0a  "
"\x0a    - "
"true"
"false"
"256M"
"30s"
"500ms"
"ro:/"
"---"
"&a"
"*a"
"!!str"
"AKIA"
"Bearer "
"-----BEGIN PRIVATE KEY-----"
DICT
echo "fuzz_svc_config: $(ls "$cfg_seeds" | wc -l) seeds; fuzzing for 3s" >&2
fuzz_for fuzz_svc_config 3 "$OUT/short-svc-config.log" -max_len=65536 \
    -dict="$OUT/svc_config.dict" -artifact_prefix="$OUT/artifacts/svc-config-" \
    "$OUT/svc-config-corpus" "$cfg_seeds"
# ---- fuzz_manifest (issue 7): Extism plugin manifests, 3 s ----
mkdir -p "$OUT/manifest-corpus"
echo "fuzz_manifest: $(ls tests/fuzz/seeds/manifest | wc -l) seeds; fuzzing for 3s" >&2
fuzz_for fuzz_manifest 3 "$OUT/short-manifest.log" -max_len=65536 \
    -dict=tests/fuzz/manifest.dict -artifact_prefix="$OUT/artifacts/manifest-" \
    "$OUT/manifest-corpus" tests/fuzz/seeds/manifest
# ---- fuzz_cap (issue 7): capability URNs and OCI manifests, 3 s ----
mkdir -p "$OUT/cap-corpus"
echo "fuzz_cap: $(ls tests/fuzz/seeds/cap | wc -l) seeds; fuzzing for 3s" >&2
fuzz_for fuzz_cap 3 "$OUT/short-cap.log" -max_len=8192 \
    -dict=tests/fuzz/cap.dict -artifact_prefix="$OUT/artifacts/cap-" \
    "$OUT/cap-corpus" tests/fuzz/seeds/cap
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
