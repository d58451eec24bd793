#!/usr/bin/env bash
# tests/cli/test-egress-flags.sh — the network-egress options of `airlock
# exec` and its JSON policy file (--policy FILE): src/cli/policy_file.c and
# exec.c. Bad flags and bad policy files are one-line usage errors (exit 2)
# that name the flag or the JSON path; a valid file and flags together are
# accepted, the command line on top of the file (scalars replace, lists add);
# --json always has "egress": {allowed, denied, bytes}. What the proxy then
# does with the rules is tests/net/'s subject, not this file's.
#
# Runs $AIRLOCK (default build/asan/airlock); a sanitizer report on stderr
# fails the check. The cases that run a program need the native backend:
# when `airlock doctor` says it is unavailable they are skipped with the
# reason. Prints one line per check and ends with "N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=tests/cli/lib/exec-setup.bash
source tests/cli/lib/exec-setup.bash

# ---- flags: exit 2, one line naming the flag ------------------------------------------
usage_error "bad CIDR prefix" "--allow-ip '10.0.0.0/33': not a CIDR" --allow-ip 10.0.0.0/33 -- /bin/true
usage_error "CIDR not an address" "--allow-ip 'x': not a CIDR" --allow-ip x -- /bin/true
usage_error "IPv6 prefix too long" "--allow-ip '::1/129': not a CIDR" --allow-ip ::1/129 -- /bin/true
usage_error "CIDR empty prefix" "not a CIDR" --allow-ip 10.0.0.0/ -- /bin/true
usage_error "port 0" "--allow-port '0': not a port \(1..65535\)" --allow-port 0 -- /bin/true
usage_error "port 70000" "--allow-port '70000': not a port \(1..65535\)" --allow-port 70000 -- /bin/true
usage_error "port not a number" "--allow-port 'http': not a port" --allow-port http -- /bin/true
usage_error "domain with a space" "--allow-domain 'exa mple.com': not a domain name" --allow-domain 'exa mple.com' -- /bin/true
usage_error "domain empty label" "--deny-domain 'a..b': not a domain name" --deny-domain a..b -- /bin/true
usage_error "bare star" "--allow-domain '\*': not a domain name" --allow-domain '*' -- /bin/true
usage_error "star inside a name" "not a domain name" --allow-domain 'a.*.com' -- /bin/true
usage_error "domain without value" "--allow-domain: needs a value" --allow-domain
usage_error "inject-header one part" "--inject-header: expected DOMAIN:NAME:VALUE" --inject-header example.com -- /bin/true
usage_error "inject-header two parts" "--inject-header: expected DOMAIN:NAME:VALUE" --inject-header example.com:X-Token -- /bin/true
usage_error "inject-header empty domain" "--inject-header: empty domain" --inject-header :X-Token:v -- /bin/true
usage_error "inject-header empty name" "--inject-header: empty header name" --inject-header example.com::v -- /bin/true
usage_error "inject-header empty value" "--inject-header: empty header value" --inject-header example.com:X-Token: -- /bin/true
usage_error "inject-header bad name" "--inject-header: the header name is not an HTTP token" --inject-header 'example.com:X Token:v' -- /bin/true
usage_error "inject-header bad domain" "--inject-header: not a domain name" --inject-header 'exa_mple.com:X:v' -- /bin/true
usage_error "inject-header CR LF" "--inject-header: the header value contains CR, LF" --inject-header $'example.com:X:secret-value\r\nEvil: 1' -- /bin/true
grep -q secret-value "$ERR" && fail "inject-header value not echoed" "$(cat "$ERR")" || pass "inject-header value not echoed"
usage_error "inject-header LF" "control character" --inject-header $'example.com:X:a\nb' -- /bin/true
usage_error "resolve without ':'" "--resolve 'example.com': expected NAME:ADDRESS" --resolve example.com -- /bin/true
usage_error "resolve empty address" "expected NAME:ADDRESS" --resolve example.com: -- /bin/true
usage_error "resolve bad address" "--resolve 'example.com:999.1.1.1': not an IP address" --resolve example.com:999.1.1.1 -- /bin/true
usage_error "resolve open bracket" "not an IP address" --resolve 'example.com:[::1' -- /bin/true
usage_error "resolve wildcard name" "not a domain name" --resolve '*.example.com:127.0.0.1' -- /bin/true
usage_error "connections 0" "--egress-connections '0': must be greater than zero" --egress-connections 0 -- /bin/true
usage_error "connections too many" "--egress-connections '70000': at most 65535" --egress-connections 70000 -- /bin/true
usage_error "egress bytes" "--egress-bytes '12Q'" --egress-bytes 12Q -- /bin/true
usage_error "connection bytes 0" "--egress-connection-bytes '0': must be greater than zero" --egress-connection-bytes 0 -- /bin/true
usage_error "idle" "--egress-idle 'soon'" --egress-idle soon -- /bin/true
usage_error "empty log" "--egress-log '': empty file name" --egress-log= -- /bin/true
usage_error "egress bytes twice" "--egress-bytes given twice" --egress-bytes 1M --egress-bytes 2M -- /bin/true
usage_error "policy twice" "--policy: given twice" --policy a.json --policy b.json -- /bin/true
usage_error "egress on wasm" "network egress needs --isolation native or gvisor" --isolation wasm --allow-domain example.com -- x.wasm
expect "run refuses egress" 2 "" "airlock run: --allow-domain: only 'airlock exec' takes this option" -- "$A" run --allow-domain example.com x.wasm
expect "python refuses --policy" 2 "" "airlock python: --policy: only 'airlock exec' takes this option" -- "$A" python --policy p.json -c 1

expect "help" 0 "*" "" -- "$A" exec --help
missing=""
for flag in --allow-domain --deny-domain --allow-port --allow-ip --inject-header --resolve \
    --egress-connections --egress-bytes --egress-connection-bytes --egress-idle --egress-log "--policy FILE"; do
    grep -q -- "$flag" "$OUT" || missing+=" $flag"
done
[[ -z $missing ]] && pass "help lists the egress options" || fail "help lists the egress options" "missing:$missing"

# ---- policy file errors: exit 2, one line naming the JSON path -------------------------------
# policy_error NAME STDERR_REGEX JSON
policy_error() {
    local name=$1 re=$2
    printf '%s' "$3" >"$TMP/p.json"
    usage_error "policy: $name" "--policy $TMP/p.json: $re" --policy "$TMP/p.json" -- /bin/true
}
policy_error "unknown field" 'unknown field "timeout"$' '{"timeout": 5}'
policy_error "unknown egress field" 'unknown field "egress.alow_domains"' '{"egress": {"alow_domains": ["a.com"]}}'
policy_error "unknown header field" 'unknown field "egress.headers\[0\].extra"' \
    '{"egress": {"headers": [{"domain": "a.com", "name": "X", "value": "v", "extra": 1}]}}'
policy_error "unknown dir field" 'unknown field "dirs\[0\].mode"' '{"dirs": [{"host": "/tmp", "mode": "rw"}]}'
policy_error "string for a number" 'timeout_ms: expected an integer 1\.\.' '{"timeout_ms": "5s"}'
policy_error "negative number" 'timeout_ms: expected an integer' '{"timeout_ms": -1}'
policy_error "fraction" 'cpu_time_ms: expected an integer' '{"cpu_time_ms": 1.5}'
policy_error "zero" 'max_processes: expected an integer 1\.\.1000000' '{"max_processes": 0}'
policy_error "huge count" 'max_processes: expected an integer 1\.\.1000000' '{"max_processes": 99999999}'
policy_error "past 2^53" 'egress.max_bytes: expected an integer' '{"egress": {"max_bytes": 9007199254740993}}'
policy_error "past 64 bits" 'not JSON: .*too big' '{"egress": {"max_bytes": 100000000000000000000000}}'
policy_error "list not an array" 'egress.allow_domains: expected an array of strings' '{"egress": {"allow_domains": "a.com"}}'
policy_error "non-string item" 'egress.allow_domains\[1\]: expected a string' '{"egress": {"allow_domains": ["a.com", 5]}}'
policy_error "bad domain" 'egress.deny_domains\[0\]: not a domain name' '{"egress": {"deny_domains": ["a b"]}}'
policy_error "port 0" 'egress.allow_ports\[0\]: expected an integer 1\.\.65535' '{"egress": {"allow_ports": [0]}}'
policy_error "port 70000" 'egress.allow_ports\[1\]: expected an integer 1\.\.65535' '{"egress": {"allow_ports": [8080, 70000]}}'
policy_error "port as string" 'egress.allow_ports\[0\]: expected an integer' '{"egress": {"allow_ports": ["80"]}}'
policy_error "bad CIDR" 'egress.allow_ips\[0\]: not a CIDR' '{"egress": {"allow_ips": ["10.0.0.0/40"]}}'
policy_error "header missing value" 'egress.headers\[0\]: missing field "value"' '{"egress": {"headers": [{"domain": "a.com", "name": "X"}]}}'
policy_error "header CR LF" 'egress.headers\[0\]: the header value contains CR, LF' \
    '{"egress": {"headers": [{"domain": "a.com", "name": "X", "value": "a\r\nEvil: 1"}]}}'
policy_error "header not an object" 'egress.headers\[0\]: expected an object' '{"egress": {"headers": ["Authorization: x"]}}'
policy_error "host bad address" 'egress.hosts.example.com: not an IP address' '{"egress": {"hosts": {"example.com": "localhost"}}}'
policy_error "host wildcard" 'egress.hosts.\*.example.com: not a domain name' '{"egress": {"hosts": {"*.example.com": "127.0.0.1"}}}'
policy_error "connections" 'egress.max_connections: expected an integer 1\.\.65535' '{"egress": {"max_connections": 100000}}'
policy_error "idle" 'egress.idle_timeout_ms: expected an integer 1\.\.4294967295' '{"egress": {"idle_timeout_ms": 4294967296}}'
policy_error "empty log" 'egress.log: empty file name' '{"egress": {"log": ""}}'
policy_error "isolation wasm" 'isolation: expected "native" or "gvisor"' '{"isolation": "wasm"}'
policy_error "relative guest" 'dirs\[0\]: the guest path must be absolute' '{"dirs": [{"host": "/tmp", "guest": "w"}]}'
policy_error "read_only type" 'dirs\[0\]: read_only: expected true or false' '{"dirs": [{"host": "/tmp", "read_only": "yes"}]}'
policy_error "env value type" 'env.N: expected a string' '{"env": {"N": 1}}'
policy_error "env name with =" "env.A=B: a variable name cannot contain '='" '{"env": {"A=B": "1"}}'
policy_error "relative cwd" 'cwd: must be an absolute path' '{"cwd": "w"}'
policy_error "egress not an object" 'egress: expected an object' '{"egress": []}'
policy_error "not JSON" 'not JSON: line 1' '{not json'
policy_error "trailing garbage" 'not JSON' '{} {}'
policy_error "empty file" 'not JSON' ''
policy_error "not an object" 'expected a JSON object' '["a.com"]'
policy_error "duplicate key" 'not JSON: .*duplicate' '{"timeout_ms": 1000, "timeout_ms": 2000}'
policy_error "NUL in a string" 'not JSON' '{"cwd": "/w\u0000x"}'
usage_error "policy: missing file" "--policy $TMP/nope.json: No such file or directory" --policy "$TMP/nope.json" -- /bin/true
usage_error "policy: a directory" "--policy $TMP: Is a directory" --policy "$TMP" -- /bin/true
head -c 2097152 /dev/zero | tr '\0' ' ' >"$TMP/big.json"
usage_error "policy: 2 MiB file" "--policy $TMP/big.json: larger than 1 MiB" --policy "$TMP/big.json" -- /bin/true
usage_error "policy: endless device" "--policy /dev/zero: larger than 1 MiB" --policy /dev/zero -- /bin/true
# exactly 1 MiB is read (and then judged as JSON)
{ printf '{"x": 1}'; head -c $((1048576 - 8)) /dev/zero | tr '\0' ' '; } >"$TMP/cap.json"
usage_error "policy: a 1 MiB file is read" "--policy $TMP/cap.json: unknown field \"x\"" --policy "$TMP/cap.json" -- /bin/true

# ---- running with a policy -------------------------------------------------------------------
run_airlock "$A" doctor --json --quick --state-dir "$TMP/state"
native_ok=$(node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    console.log(d.backends.native.available ? "yes" : "no: " + d.backends.native.reason);
' "$OUT" 2>&1)
if [[ $native_ok != yes ]]; then
    echo "SKIP native cases: $native_ok"
    finish
fi

mkdir -p "$TMP/ws"
chmod 0777 "$TMP/ws" # the program runs as uid 1000
cat >"$TMP/nonet.json" <<EOF
{"isolation": "native", "timeout_ms": 20000, "max_processes": 32, "tmpfs_bytes": 8388608,
 "env": {"FROM_FILE": "1", "OVER": "file"},
 "dirs": [{"host": "$TMP/ws", "guest": "/w", "read_only": false}], "cwd": "/w"}
EOF
expect "policy file: env, dirs, cwd; --env replaces the file's" 0 "1 flag /w" "" \
    -- "$A" exec --policy "$TMP/nonet.json" --env OVER=flag -- /bin/sh -c 'echo "$FROM_FILE $OVER $(pwd)"; echo hi >/w/made'
[[ -f $TMP/ws/made ]] && pass "policy file: read_only false grants writing" || fail "policy file: read_only false grants writing"
expect "--policy=FILE after other flags" 0 "1 file" "" \
    -- "$A" exec --env X=1 --policy="$TMP/nonet.json" -- /bin/sh -c 'echo "$FROM_FILE $OVER"'
printf '{"dirs": [{"host": "%s", "guest": "/w"}]}' "$TMP/ws" >"$TMP/ro.json"
expect "policy file: dirs read-only by default" 0 "read-only" "" \
    -- "$A" exec --policy "$TMP/ro.json" -- /bin/sh -c 'if (echo x >/w/other) 2>/dev/null; then echo writable; else echo read-only; fi'
expect "policy file + --dir: lists add" 0 "/w /x" "" \
    -- "$A" exec --policy "$TMP/ro.json" --dir "$TMP/ws:/x" -- /bin/sh -c 'test -d /w && test -d /x && echo /w /x'
printf '{"timeout_ms": 200}' >"$TMP/short.json"
expect "policy file timeout applies" 72 "" "timeout: still running after 200 ms" \
    -- "$A" exec --policy "$TMP/short.json" -- /bin/sh -c 'sleep 5'
expect "--timeout replaces the file's" 0 "done" "" \
    -- "$A" exec --policy "$TMP/short.json" --timeout 10s -- /bin/sh -c 'sleep 0.5; echo done'
json "egress counts present without egress" 0 \
    'd.status === "ok" && d.egress && d.egress.allowed === 0 && d.egress.denied === 0 && d.egress.bytes === 0' \
    -- "$A" exec --json --policy "$TMP/nonet.json" -- /bin/true
expect "failed bad dir from the file is exit 1" 1 "" "--dir $TMP/none: No such file or directory" \
    -- "$A" exec --policy <(printf '{"dirs": [{"host": "%s"}]}' "$TMP/none") -- /bin/true

# A policy granting egress, plus flags on top: accepted (the program makes no
# request; the proxy starts and stops around it).
cat >"$TMP/egress.json" <<'EOF'
{"isolation": "native", "timeout_ms": 20000,
 "egress": {"allow_domains": ["example.com", "*.example.org"], "deny_domains": ["bad.example.org"],
            "allow_ports": [8080], "allow_ips": ["127.0.0.0/8", "::1"],
            "headers": [{"domain": "example.com", "name": "Authorization", "value": "Basic dXNlcjpwYXNz"}],
            "hosts": {"example.com": "127.0.0.1", "v6.example.com": "[::1]"},
            "max_connections": 4, "max_bytes_per_connection": 1048576, "max_bytes": 4194304,
            "idle_timeout_ms": 5000}}
EOF
json "policy file with egress + egress flags" 0 \
    'd.status === "ok" && d.egress && d.egress.allowed === 0 && d.egress.denied === 0 && d.egress.bytes === 0' \
    -- "$A" exec --json --policy "$TMP/egress.json" --allow-domain api.example.net --allow-port 8443 \
    --inject-header 'api.example.net:X-Key:a:b:c' --resolve 'api.example.net:[::1]' \
    --egress-connections 8 --egress-bytes 16M --egress-connection-bytes 1M --egress-idle 10s \
    --egress-log "$TMP/egress.log" -- /bin/true
json "--allow-domain alone" 0 'd.status === "ok" && "egress" in d' \
    -- "$A" exec --isolation native --allow-domain example.com --json -- /bin/true

finish
