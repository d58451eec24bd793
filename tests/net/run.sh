#!/usr/bin/env bash
# tests/net/run.sh — end-to-end tests of the egress proxy (issue 5): real
# programs (curl, python3) inside `airlock exec` sandboxes reach real HTTP and
# HTTPS origins on the host's loopback only through airlock's proxy, and only
# as the policy says. Every case is checked on the host, from what the guest
# printed AND from what the origin server really received (its log is
# outside the sandbox), so a check cannot pass because the guest lied.
#
#   tests/net/run.sh [PATTERN]      cases whose "backend/name" matches PATTERN
#                                   (a bash regex; default: all)
#   AIRLOCK=build/asan/airlock      the binary under test (default
#                                   build/release/airlock; a copy is tested)
#   NET_BACKENDS="native gvisor"    the backends (default both; gvisor runs a
#                                   subset, only when `airlock doctor --json`
#                                   says it is available, else "SKIP gvisor: why")
#   NET_KEEP=1                      keep the temp dir (every run's output, the
#                                   origin and decision logs) for debugging
#
# Fixtures, in one temp dir (removed on exit with every helper process):
#   - a CA and a server certificate made for this run (tests/net/make-ca.sh);
#     the sandbox gets only the CA certificate, through a read-only grant;
#   - tests/net/servers.py: HTTP and HTTPS origins on 127.0.0.2 (the allowed
#     address: --allow-ip 127.0.0.2/32, since 127.0.0.0/8 is deny-listed) and
#     the same ports on 127.0.0.1 (the forbidden host loopback: anything
#     logged there is a hole), with /big?mib=N and /slow?ms=N endpoints;
#   - a static name map (--resolve): good.test, other.test, a.wild.test,
#     wild.test, open.corp.test, secret.corp.test, unlisted.test -> 127.0.0.2;
#     evil.test -> 127.0.0.1; meta.test -> 169.254.169.254; under *.wild.test:
#     ::1, ::ffff:127.0.0.1, ::ffff:169.254.169.254, 10.1.2.3 and the host's
#     own address (all must be refused).
# The guests: tests/net/guest.py (python3) and req(), a curl wrapper (REQ
# below); tests/net/judge.py judges each run.
#
# The cases (gVisor: the first ten and no_leftovers; the proxy is the same
# code, only the plumbing differs):
#   proxy_env, curl_http, curl_https, python_urllib   the allowed path works
#     (proxy variables set, only "lo" in the namespace, Proxy-* headers not
#     forwarded, "Connection: close" to the origin);
#   denied_domain, unlisted_domain, wildcard, port_not_allowed   403 bodies a
#     model can read, nothing reaches the origin;
#   direct_bypass     curl --noproxy, unset proxy variables, python sockets to
#     127.0.0.2, 127.0.0.1, ::1, 1.1.1.1, 8.8.8.8, 10.0.0.1: all fail;
#   literal_ip, loopback_metadata_names   literal IPs outside --allow-ip and
#     names that resolve to loopback, link-local/metadata, private, IPv4-mapped
#     IPv6 or the host's own address are refused (SSRF, DNS-based bypass);
#   sni_mismatch, sni_denied_name_via_ip   domain fronting: a TLS server name
#     other than the CONNECT host (or a denied name behind an allowed IP);
#   host_header       Host/URL mismatch, Content-Length + chunked (smuggling),
#     a pipelined second request never reaches an origin;
#   header_injection  the granted header reaches the origin, replaces the
#     guest's own, is not added for other domains or inside a CONNECT tunnel,
#     and the secret appears nowhere the guest can see (env, /proc, output)
#     nor in the decision log;
#   post_body, connection_byte_limit, execution_byte_limit, connection_limit,
#   idle_timeout      bodies and the limits;
#   decision_log_and_stats, no_egress_by_default, no_leftovers.
#
# Output: "PASS backend/name" or "FAIL backend/name: why" per case, then the
# last line "N passed, N failed"; exit status 1 if anything failed. Needs
# bash, /usr/bin/python3, curl and the openssl CLI on the host (curl and
# python3 are also what runs inside the sandbox), coreutils timeout.
set -u

cd "$(dirname "$0")/../.." || exit 2
HERE=tests/net
FILTER=${1:-}
read -r -a AIRLOCK_CMD <<<"${AIRLOCK:-build/release/airlock}"
BACKENDS=${NET_BACKENDS:-native gvisor}

# shellcheck source=tests/lib/cases.bash
source tests/lib/cases.bash

# ---- fixtures ------------------------------------------------------------------

T=$(mktemp -d /tmp/airlock-net.XXXXXX) || exit 2
chmod 755 "$T" # the sandbox's uid must reach the CA grant under it
STATE=$T/state
HELPERS=()
cleanup() {
    local pid id
    for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null; done
    if [ -d "$STATE/runsc" ] && command -v runsc >/dev/null; then
        for id in $(runsc --root "$STATE/runsc" list -quiet 2>/dev/null); do
            runsc --root "$STATE/runsc" kill "$id" KILL >/dev/null 2>&1
            runsc --root "$STATE/runsc" delete -force "$id" >/dev/null 2>&1
        done
    fi
    for pid in "${HELPERS[@]}"; do wait "$pid" 2>/dev/null; done
    if [ "${NET_KEEP:-0}" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/run" "$T/bin" "$STATE"

for tool in curl openssl; do
    command -v "$tool" >/dev/null || { fail setup "$tool not found on the host (apt-get install $tool)"; finish; }
done
if [ "${#AIRLOCK_CMD[@]}" -eq 1 ] && [ -f "${AIRLOCK_CMD[0]}" ]; then
    cp "${AIRLOCK_CMD[0]}" "$T/bin/airlock" && AIRLOCK_CMD=("$T/bin/airlock")
elif ! command -v "${AIRLOCK_CMD[0]}" >/dev/null 2>&1; then
    fail setup "airlock binary ${AIRLOCK_CMD[0]} not found (make release)"
    finish
fi

"$HERE/make-ca.sh" "$T/tls" >"$T/make-ca.log" 2>&1 || { fail setup "make-ca.sh: $(head -c 300 "$T/make-ca.log")"; finish; }
ORIGIN_LOG=$T/origin.log
: >"$ORIGIN_LOG"
"$HOST_PY" "$HERE/servers.py" "$T/ready" "$ORIGIN_LOG" "$T/tls/private/server.pem" "$T/tls/private/server.key" \
    2>"$T/servers.err" &
HELPERS+=("$!")
for _ in $(seq 100); do [ -s "$T/ready" ] && break; sleep 0.1; done
read -r HP SP <"$T/ready" 2>/dev/null || { fail setup "the origin servers did not start: $(head -c 300 "$T/servers.err")"; finish; }
# a port nothing is allowed to reach (the policy does not list it)
BADPORT=$((HP + 1))
[ "$BADPORT" -ne "$SP" ] || BADPORT=$((HP + 2))

# One secret per run: the injected header's value. It must reach the origin
# and never be visible to the guest.
SECRET=airlock-net-secret-$RANDOM$RANDOM$$

GUEST_PY=$(cat "$HERE/guest.py")
# req TAG CURL-ARGS...: one curl through the proxy (from the environment),
# trusting only the test CA; prints "REQ TAG HTTP-CODE CONNECT-CODE SIZE rc=RC
# BODY" (the body's first 120 bytes, newlines as |), and "REQERR TAG curl's
# error" when curl failed. judge.py's req(TAG) reads it back.
REQ='req() {
    tag=$1; shift; rc=0
    w=$(curl -sS --max-time 20 --cacert /ca/ca.pem -o /tmp/req.$tag.body -w "%{http_code} %{http_connect} %{size_download}" "$@" 2>/tmp/req.$tag.err) || rc=$?
    printf "REQ %s %s rc=%s %s\n" "$tag" "$w" "$rc" "$(head -c 120 /tmp/req.$tag.body 2>/dev/null | tr "\n" "|")"
    [ "$rc" -eq 0 ] || printf "REQERR %s %s\n" "$tag" "$(head -c 200 /tmp/req.$tag.err | tr "\n" " ")"
    rm -f /tmp/req.$tag.body /tmp/req.$tag.err
}'

RESOLVE=(--resolve good.test:127.0.0.2 --resolve other.test:127.0.0.2 --resolve a.wild.test:127.0.0.2
    --resolve wild.test:127.0.0.2 --resolve open.corp.test:127.0.0.2 --resolve secret.corp.test:127.0.0.2
    --resolve unlisted.test:127.0.0.2 --resolve evil.test:127.0.0.1 --resolve meta.test:169.254.169.254
    --resolve 'v6.wild.test:[::1]' --resolve 'mapped.wild.test:[::ffff:127.0.0.1]'
    --resolve 'meta6.wild.test:[::ffff:169.254.169.254]' --resolve private.wild.test:10.1.2.3)
# The host's own (non-loopback) IPv4 address, if it has one: a name that
# resolves to it must be refused too (services bound to 0.0.0.0)
HOST_ADDR=$("$HOST_PY" - <<'EOF'
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _, name in socket.if_nameindex():
    try:
        packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
    except OSError:
        continue
    addr = socket.inet_ntoa(packed[20:24])
    if not addr.startswith("127."):
        print(addr)
        break
EOF
)
[ -z "$HOST_ADDR" ] || RESOLVE+=(--resolve "self.wild.test:$HOST_ADDR")
# The policy of most cases; NET_NOIP is the same without --allow-ip.
NET_NOIP=(--allow-domain good.test --allow-domain other.test --allow-domain '*.wild.test'
    --allow-domain evil.test --allow-domain meta.test --allow-domain '*.corp.test'
    --deny-domain secret.corp.test "${RESOLVE[@]}" --allow-port "$HP" --allow-port "$SP"
    --dir "$T/tls/ca:/ca:ro")
NET=("${NET_NOIP[@]}" --allow-ip 127.0.0.2/32)

# ---- running airlock -------------------------------------------------------------

# run_exec TIMEOUT_S ARGS...: `airlock exec --json --isolation $B --state-dir
# $STATE ARGS...` under the harness's own timeout. Sets RC, OUT_F, ERR_F and
# MARK (the origin log's length before the run: what the run caused follows).
RUN_N=0
run_exec() {
    local t=$1
    shift
    RUN_N=$((RUN_N + 1))
    OUT_F=$T/run/$RUN_N.out
    ERR_F=$T/run/$RUN_N.err
    MARK=$(wc -l <"$ORIGIN_LOG")
    timeout -k 5 "$t" "${AIRLOCK_CMD[@]}" exec --json --isolation "$B" --state-dir "$STATE" "$@" \
        </dev/null >"$OUT_F" 2>"$ERR_F"
    RC=$?
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        printf '{"status": "harness-timeout", "error": "airlock did not finish within %s s"}' "$t" >"$OUT_F"
    fi
    sleep 0.05 # the origin's handler threads log after answering
}

# sh_exec OPTIONS... -- 'SHELL CODE': /bin/sh -c with req() defined
sh_exec() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    run_exec 60 "${opts[@]}" -- /bin/sh -c "$REQ
$1"
}

# py_exec OPTIONS... -- GUEST-COMMAND ARGS...: tests/net/guest.py
py_exec() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    run_exec 60 "${opts[@]}" -- python3 -c "$GUEST_PY" "$@"
}

# judge [judge.py OPTIONS] [EXPR...]: the last run; prints why it failed
judge() {
    "$HOST_PY" "$HERE/judge.py" --out "$OUT_F" --err "$ERR_F" --rc "$RC" \
        --origin "$ORIGIN_LOG" --origin-from "$MARK" --secret "$SECRET" "$@"
}
field() { "$HOST_PY" "$HERE/judge.py" --get "$1" --out "$OUT_F"; }

# Nothing that came from the sandbox reached the host's own loopback.
NO_HOST_LOOPBACK='not [e for e in origin if e.get("addr") == "127.0.0.1"]'

# ---- the cases -------------------------------------------------------------------

case_proxy_env() {
    local n=$B/proxy_env why p='http://127.0.0.1:3128'
    py_exec "${NET[@]}" -- env --then ifaces
    why=$(judge "sorted(l for l in lines if l.startswith('ENV ')) == sorted('ENV %s=$p' % k for k in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'))" \
        "reply('IFACES') == ['IFACES', 'lo']") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_curl_http() {
    local n=$B/curl_http why
    sh_exec "${NET[@]}" -- "req c1 http://good.test:$HP/curl-http"
    why=$(judge "req('c1')['code'] == 200 and req('c1')['body'] == 'hello from 127.0.0.2|'" \
        "len(reqs) == 1 and reqs[0]['path'] == '/curl-http' and reqs[0]['addr'] == '127.0.0.2'" \
        "hdrs(reqs[0], 'Host') == ['good.test:$HP']" \
        "hdrs(reqs[0], 'Connection') == ['close']" \
        "not [k for k, v in reqs[0]['headers'] if k.lower().startswith('proxy-')]") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_curl_https() {
    local n=$B/curl_https why
    sh_exec "${NET[@]}" -- "req c2 https://good.test:$SP/curl-https"
    why=$(judge "req('c2')['code'] == 200 and req('c2')['connect'] == 200 and req('c2')['body'] == 'hello over tls|'" \
        "[e['sni'] for e in tls] == ['good.test'] and tls[0]['tls'] == 'ok'" \
        "[e['path'] for e in reqs] == ['/curl-https']") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_python() {
    local n=$B/python_urllib why
    py_exec "${NET[@]}" -- get "http://good.test:$HP/py-http" --then get "https://good.test:$SP/py-https" /ca/ca.pem
    why=$(judge "lines == ['STATUS 200', \"BODY 'hello from 127.0.0.2\\\\n'\", 'STATUS 200', \"BODY 'hello over tls\\\\n'\"]" \
        "[e['path'] for e in reqs] == ['/py-http', '/py-https']" \
        "[e['sni'] for e in tls] == ['good.test']") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_wildcard() {
    local n=$B/wildcard why
    sh_exec "${NET[@]}" -- "req w1 http://a.wild.test:$HP/w1; req w2 http://wild.test:$HP/w2; req w3 http://open.corp.test:$HP/w3"
    why=$(judge "req('w1')['code'] == 200 and req('w3')['code'] == 200" \
        "req('w2')['code'] == 403 and 'not in the allow-list' in req('w2')['body']" \
        "[e['path'] for e in reqs] == ['/w1', '/w3']") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_denied() {
    local n=$B/denied_domain why
    sh_exec "${NET[@]}" -- "req d1 http://secret.corp.test:$HP/d1; req d2 https://secret.corp.test:$SP/d2"
    why=$(judge "req('d1')['code'] == 403 and req('d1')['body'].startswith('airlock:') and 'secret.corp.test' in req('d1')['body']" \
        "req('d2')['connect'] == 403 and req('d2')['rc'] != 0" \
        "not origin") || { fail "$n" "$why"; return; }
    pass "$n ($(sed -n 's/^REQ d1 [0-9 ]*rc=0 //p' <<<"$(field stdout)" | tr -d '|'))"
}

case_unlisted() {
    local n=$B/unlisted_domain why
    sh_exec "${NET[@]}" -- "req u1 http://unlisted.test:$HP/u1; req u2 https://unlisted.test:$SP/u2"
    why=$(judge "req('u1')['code'] == 403 and req('u1')['body'].startswith('airlock:')" \
        "'unlisted.test' in req('u1')['body'] and 'not in the allow-list' in req('u1')['body']" \
        "req('u2')['connect'] == 403 and req('u2')['rc'] != 0" \
        "not origin") || { fail "$n" "$why"; return; }
    # python sees the same
    py_exec "${NET[@]}" -- get "http://unlisted.test:$HP/u3"
    why=$(judge "lines[0] == 'STATUS 403' and 'not in the allow-list' in lines[1]" "not origin") ||
        { fail "$n" "(python) $why"; return; }
    pass "$n"
}

case_port() {
    local n=$B/port_not_allowed why
    sh_exec "${NET[@]}" -- "req p1 http://good.test:$BADPORT/p1; req p2 https://good.test:$BADPORT/p2"
    why=$(judge "req('p1')['code'] == 403 and req('p1')['body'].startswith('airlock:')" \
        "req('p2')['connect'] == 403" "not origin") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_direct() {
    local n=$B/direct_bypass why
    sh_exec "${NET[@]}" -- "req x1 --noproxy '*' http://127.0.0.2:$HP/x1
        req x2 --noproxy '*' http://good.test:$HP/x2
        unset http_proxy HTTP_PROXY; req x3 http://127.0.0.2:$HP/x3"
    why=$(judge "all(req(t)['rc'] != 0 and req(t)['code'] == 0 for t in ('x1', 'x2', 'x3'))" \
        "not origin") || { fail "$n" "(curl --noproxy) $why"; return; }
    py_exec "${NET[@]}" -- direct "127.0.0.2:$HP" "127.0.0.2:$SP" "127.0.0.1:$HP" 1.1.1.1:80 8.8.8.8:53 "[::1]:$HP" 10.0.0.1:80
    why=$(judge "len(lines) == 7 and all(' refused: ' in l for l in lines)" "not origin") ||
        { fail "$n" "(python socket) $why"; return; }
    pass "$n"
}

case_literal_ip() {
    local n=$B/literal_ip why
    sh_exec "${NET[@]}" -- "req l1 http://127.0.0.3:$HP/l1; req l2 https://127.0.0.3:$SP/l2
        req l3 http://169.254.169.254/l3; req l4 'http://[::1]:$HP/l4'; req l5 http://127.0.0.2:$HP/l5"
    why=$(judge "all(req(t)['code'] == 403 and req(t)['body'].startswith('airlock:') for t in ('l1', 'l3', 'l4'))" \
        "req('l2')['connect'] == 403" \
        "req('l5')['code'] == 200" \
        "[e['path'] for e in reqs] == ['/l5'] and not tls") || { fail "$n" "(--allow-ip 127.0.0.2/32) $why"; return; }
    # without --allow-ip, 127.0.0.2 is loopback: refused as a literal and as
    # the address a name resolves to
    sh_exec "${NET_NOIP[@]}" -- "req l6 http://127.0.0.2:$HP/l6; req l7 http://good.test:$HP/l7; req l8 https://good.test:$SP/l8"
    why=$(judge "all(req(t)['code'] == 403 and req(t)['body'].startswith('airlock:') for t in ('l6', 'l7'))" \
        "req('l8')['connect'] == 403" "not origin") || { fail "$n" "(no --allow-ip) $why"; return; }
    pass "$n"
}

case_forbidden_names() {
    local n=$B/loopback_metadata_names why
    sh_exec "${NET[@]}" -- "req e1 http://evil.test:$HP/e1; req e2 https://evil.test:$SP/e2
        req m1 http://meta.test/m1; req m2 http://meta.test:$HP/m2
        req v1 http://v6.wild.test:$HP/v1; req v2 http://mapped.wild.test:$HP/v2
        req v3 http://meta6.wild.test:$HP/v3; req v4 http://private.wild.test:$HP/v4
        req v5 http://${HOST_ADDR:+self.wild.test}${HOST_ADDR:-v6.wild.test}:$HP/v5"
    why=$(judge "all(req(t)['code'] == 403 and req(t)['body'].startswith('airlock:') for t in ('e1', 'm1', 'm2', 'v1', 'v2', 'v3', 'v4', 'v5'))" \
        "req('e2')['connect'] == 403" "not origin" "$NO_HOST_LOOPBACK") || { fail "$n" "$why"; return; }
    pass "$n (::1, ::ffff:127.0.0.1, 10.1.2.3${HOST_ADDR:+, the host address $HOST_ADDR} too; $(sed -n 's/^REQ e1 [0-9 ]*rc=0 //p' <<<"$(field stdout)" | tr -d '|'))"
}

case_sni() {
    local n=$B/sni_mismatch why
    py_exec "${NET[@]}" -- tunnel good.test "$SP" other.test /ca/ca.pem --then tunnel other.test "$SP" good.test /ca/ca.pem \
        --then tunnel good.test "$SP" good.test /ca/ca.pem
    why=$(judge "[l.split()[0] for l in lines] == ['CONNECT', 'TLS', 'CONNECT', 'TLS', 'CONNECT', 'TLS']" \
        "all(' 200 ' in l for l in lines if l.startswith('CONNECT'))" \
        "lines[1].startswith('TLS closed') and lines[3].startswith('TLS closed')" \
        "lines[5] == \"TLS ok BODY 'hello over tls\\\\n'\"" \
        "[e['sni'] for e in tls if e['tls'] == 'ok'] == ['good.test']" \
        "[e['path'] for e in reqs] == ['/tunnel']") || { fail "$n" "$why"; return; }
    pass "$n ($(field stdout | sed -n 2p))"
}

# CONNECT to an allowed IP literal (--allow-ip) with a denied name as the
# TLS server name: the deny-list must still win (domain fronting through an
# allowed address).
case_sni_ip() {
    local n=$B/sni_denied_name_via_ip why
    py_exec "${NET[@]}" -- tunnel 127.0.0.2 "$SP" secret.corp.test /ca/ca.pem
    why=$(judge "' 200 ' not in lines[0] or lines[1].startswith('TLS closed')" \
        "'secret.corp.test' not in [e['sni'] for e in tls]" "not reqs") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_idle() {
    local n=$B/idle_timeout why
    py_exec "${NET[@]}" --egress-idle 1s -- idle --then idle "good.test:$HP"
    why=$(judge "len(lines) == 3 and lines[1].startswith('CONNECT HTTP/1.1 200')" \
        "all(l.startswith('IDLE closed after ') and 0.5 <= float(l.split()[3]) <= 5 for l in (lines[0], lines[2]))") ||
        { fail "$n" "$why"; return; }
    pass "$n (head: $(field stdout | sed -n 1p | cut -d' ' -f4-5); tunnel: $(field stdout | sed -n 3p | cut -d' ' -f4-5))"
}

case_host_header() {
    local n=$B/host_header why h1 h2 h3 h4
    hex() { printf '%b' "$1" | od -An -v -tx1 | tr -d ' \n'; }
    h1=$(hex "GET http://good.test:$HP/h1 HTTP/1.1\r\nHost: evil.test:$HP\r\n\r\n")
    h2=$(hex "GET http://good.test:$HP/h2 HTTP/1.1\r\nHost: good.test:$HP\r\n\r\n")
    h3=$(hex "POST http://good.test:$HP/h3 HTTP/1.1\r\nHost: good.test:$HP\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    # a second request pipelined after the first: must never reach an origin
    h4=$(hex "GET http://good.test:$HP/h4 HTTP/1.1\r\nHost: good.test:$HP\r\n\r\nGET http://evil.test:$HP/h5 HTTP/1.1\r\nHost: evil.test:$HP\r\n\r\nGET /h6 HTTP/1.1\r\nHost: good.test\r\n\r\n")
    py_exec "${NET[@]}" -- raw "$h1" --then raw "$h2" --then raw "$h3" --then raw "$h4"
    why=$(judge "len(lines) == 8 and [l.split()[0] for l in lines] == ['REPLY', 'BODY'] * 4" \
        "lines[0].split()[2] in ('400', '403') and lines[4].split()[2] in ('400', '403')" \
        "lines[2] == 'REPLY HTTP/1.1 200 OK' and lines[6] == 'REPLY HTTP/1.1 200 OK'" \
        "[e['path'] for e in reqs] == ['/h2', '/h4']" "$NO_HOST_LOOPBACK") || { fail "$n" "$why"; return; }
    pass "$n (Host mismatch: $(field stdout | sed -n 1p | cut -c7-40); CL+TE: $(field stdout | sed -n 5p | cut -c7-40))"
}

case_post() {
    local n=$B/post_body why
    sh_exec "${NET[@]}" -- "head -c 100000 /dev/zero >/tmp/body
        req b1 --data-binary @/tmp/body http://good.test:$HP/b1
        req b2 -H 'Transfer-Encoding: chunked' --data-binary @/tmp/body http://good.test:$HP/b2"
    why=$(judge "req('b1')['code'] == 200 and req('b2')['code'] == 200" \
        "[(e['path'], e['method'], e['body_len']) for e in reqs] == [('/b1', 'POST', 100000), ('/b2', 'POST', 100000)]") ||
        { fail "$n" "$why"; return; }
    pass "$n"
}

case_inject() {
    local n=$B/header_injection why elog=$T/inject-$B.log
    sh_exec "${NET[@]}" --inject-header "good.test:Authorization:Bearer-$SECRET" --egress-log "$elog" -- \
        "req i1 -H 'Authorization: Bearer-GUEST' http://good.test:$HP/i1
        req i2 http://good.test:$HP/i2
        req i3 http://other.test:$HP/i3
        req i4 https://good.test:$SP/i4
        env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n'
        grep -rs Bearer /etc /tmp /ca 2>/dev/null; true"
    why=$(judge --egress-log "$elog" "all(req(t)['code'] == 200 for t in ('i1', 'i2', 'i3', 'i4'))" \
        "[e['path'] for e in reqs] == ['/i1', '/i2', '/i3', '/i4']" \
        "hdrs(path('/i1')[0], 'Authorization') == ['Bearer-$SECRET']" \
        "hdrs(path('/i2')[0], 'Authorization') == ['Bearer-$SECRET']" \
        "hdrs(path('/i3')[0], 'Authorization') == []" \
        "hdrs(path('/i4')[0], 'Authorization') == []" \
        "'Bearer-GUEST' not in json.dumps(reqs)") || { fail "$n" "$why"; return; }
    if grep -q "$SECRET" "$elog" 2>/dev/null; then fail "$n" "the secret is in the decision log $elog"; return; fi
    pass "$n (replaces the guest's header; not added in a CONNECT tunnel or for other.test)"
}

case_connection_bytes() {
    local n=$B/connection_byte_limit why elog=$T/connbytes-$B.log
    sh_exec "${NET[@]}" --egress-connection-bytes 1M --egress-log "$elog" -- \
        "req k1 'http://good.test:$HP/big?mib=4'; req k2 http://good.test:$HP/k2"
    why=$(judge --egress-log "$elog" "req('k1')['rc'] != 0 and req('k1')['size'] <= 1 << 20" \
        "req('k2')['code'] == 200" \
        "any('byte limit' in (e.get('reason') or '') for e in elog)") || { fail "$n" "$why"; return; }
    pass "$n (got $(field stdout | sed -n 's/^REQ k1 [0-9]* [0-9]* \([0-9]*\) .*/\1/p') of 4194304 bytes)"
}

case_total_bytes() {
    local n=$B/execution_byte_limit why
    sh_exec "${NET[@]}" --egress-bytes 2M -- \
        "for i in 1 2 3 4; do req t\$i 'http://good.test:$HP/big?mib=1'; done; req t5 http://good.test:$HP/t5"
    why=$(judge "req('t1')['code'] == 200 and req('t1')['size'] == 1 << 20 and req('t1')['rc'] == 0" \
        "sum(req('t%d' % i)['size'] for i in range(1, 5)) <= 2 << 20" \
        "req('t3')['rc'] != 0 or req('t3')['code'] != 200" \
        "req('t4')['rc'] != 0 or req('t4')['code'] != 200" \
        "req('t5')['body'] != 'hello from 127.0.0.2|'" \
        "d['egress']['bytes'] <= (2 << 20) + 65536") || { fail "$n" "$why"; return; }
    pass "$n (sizes $(field stdout | awk '$1 == "REQ" { printf "%s ", $5 }')bytes $(field egress.bytes))"
}

case_connections() {
    local n=$B/connection_limit why
    sh_exec "${NET[@]}" --egress-connections 2 -- \
        "for i in 1 2 3 4 5; do req s\$i 'http://good.test:$HP/slow?ms=1500' >/tmp/out\$i & done; wait
        cat /tmp/out1 /tmp/out2 /tmp/out3 /tmp/out4 /tmp/out5; req s6 http://good.test:$HP/s6"
    why=$(judge "sorted(req('s%d' % i)['code'] for i in range(1, 6)) in ([200, 200, 503, 503, 503], [200, 503, 503, 503, 503])" \
        "all('too many connections' in req('s%d' % i)['body'] for i in range(1, 6) if req('s%d' % i)['code'] == 503)" \
        "req('s6')['code'] == 200") || { fail "$n" "$why"; return; }
    pass "$n ($(field stdout | awk '$1 == "REQ" && $2 != "s6" { printf "%s ", $3 }'))"
}

case_log_and_stats() {
    local n=$B/decision_log_and_stats why elog=$T/decisions-$B.log
    sh_exec "${NET[@]}" --egress-log "$elog" -- \
        "req g1 http://good.test:$HP/g1; req g2 http://unlisted.test:$HP/g2; req g3 https://good.test:$SP/g3"
    why=$(judge --egress-log "$elog" "[req(t)['code'] for t in ('g1', 'g2', 'g3')] == [200, 403, 200]" \
        "d['egress']['allowed'] == 2 and d['egress']['denied'] == 1" \
        "300 <= d['egress']['bytes'] <= 20000" \
        "len(elog) >= 3 and all(isinstance(e, dict) and 'unparsable' not in e for e in elog)" \
        "all(re.fullmatch(r'\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z', e['time']) for e in elog)" \
        "len({e['execution'] for e in elog}) == 1 and elog[0]['execution']" \
        "{e['decision'] for e in elog} <= {'allow', 'deny', 'close'}" \
        "all(k in e for e in elog for k in ('reason', 'method', 'host', 'port', 'address', 'bytes_up', 'bytes_down'))" \
        "any(e['decision'] == 'allow' and e['host'] == 'good.test' and e['port'] == $HP and e['method'] == 'GET' for e in elog)" \
        "any(e['decision'] == 'allow' and e['host'] == 'good.test' and e['port'] == $SP and e['method'] == 'CONNECT' for e in elog)" \
        "any(e['decision'] == 'deny' and e['host'] == 'unlisted.test' and 'allow-list' in e['reason'] for e in elog)" \
        "'127.0.0.2' in json.dumps([e['address'] for e in elog])" \
        "sum(e['bytes_down'] or 0 for e in elog) >= 30 and sum(e['bytes_up'] or 0 for e in elog) >= 30") ||
        { fail "$n" "$why"; return; }
    pass "$n (egress $(field egress); $(wc -l <"$elog") log lines)"
}

case_no_egress() {
    local n=$B/no_egress_by_default why
    py_exec --dir "$T/tls/ca:/ca:ro" -- env --then ifaces --then direct 127.0.0.1:3128 "127.0.0.2:$HP"
    why=$(judge "lines == ['IFACES lo'] + [l for l in lines if l.startswith('DIRECT')]" \
        "len(lines) == 3 and all(' refused: ' in l for l in lines[1:])" \
        "not d.get('egress') or (d['egress']['allowed'], d['egress']['denied']) == (0, 0)" \
        "not origin") || { fail "$n" "$why"; return; }
    pass "$n"
}

case_no_leftovers() {
    local n=$B/no_leftovers left
    left=$(find "$STATE" -type s 2>/dev/null | head -n 5)
    [ -z "$left" ] || { fail "$n" "proxy sockets remain in the state dir: $left"; return; }
    left=$(pgrep -a -f -- "$STATE" | cut -c1-160)
    [ -z "$left" ] || { fail "$n" "processes remain: $left"; return; }
    pass "$n"
}

# ---- main ----------------------------------------------------------------------------

"${AIRLOCK_CMD[@]}" doctor --json >"$T/doctor.json" 2>"$T/doctor.err"

run_backend() {
    B=$1
    # the gVisor subset: the plumbing (proxy env, the listener inside, no
    # other way out) and one of each kind of decision
    want "$B/proxy_env" && case_proxy_env
    want "$B/curl_http" && case_curl_http
    want "$B/curl_https" && case_curl_https
    want "$B/python_urllib" && case_python
    want "$B/denied_domain" && case_denied
    want "$B/direct_bypass" && case_direct
    want "$B/sni_mismatch" && case_sni
    want "$B/header_injection" && case_inject
    want "$B/decision_log_and_stats" && case_log_and_stats
    want "$B/no_egress_by_default" && case_no_egress
    if [ "$B" = native ]; then
        want "$B/wildcard" && case_wildcard
        want "$B/unlisted_domain" && case_unlisted
        want "$B/port_not_allowed" && case_port
        want "$B/literal_ip" && case_literal_ip
        want "$B/loopback_metadata_names" && case_forbidden_names
        want "$B/sni_denied_name_via_ip" && case_sni_ip
        want "$B/idle_timeout" && case_idle
        want "$B/host_header" && case_host_header
        want "$B/post_body" && case_post
        want "$B/connection_byte_limit" && case_connection_bytes
        want "$B/execution_byte_limit" && case_total_bytes
        want "$B/connection_limit" && case_connections
    fi
    want "$B/no_leftovers" && case_no_leftovers
}

for backend in $BACKENDS; do
    if [ "$backend" = gvisor ]; then
        if [ "$(doctor backends.gvisor.available)" != true ]; then
            reason=$(doctor backends.gvisor.reason)
            echo "SKIP gvisor: ${reason:-airlock doctor --json does not report backends.gvisor.available}"
            continue
        fi
    fi
    run_backend "$backend"
done
finish
