#!/usr/bin/env bash
# bench/egress.sh — throughput and added latency of airlock's egress proxy
# (issue 5) against direct connections to the same loopback origin, in one run.
#
#   bench/egress.sh                                   from anywhere
#   DURATION=10 CONNS=16 THREADS=2 N=2000 bench/egress.sh
#   AIRLOCK=path/to/airlock bench/egress.sh
#
# The origin: bench/egress-origin.c (built here with gcc -O2), one epoll
# thread on 127.0.0.2, a fixed 2-byte answer, keep-alive unless asked to
# close. Fast enough (>100k req/s keep-alive on one core) that the figures
# measure the proxy, not the origin.
#
# Throughput (wrk, THREADS threads, CONNS connections, DURATION seconds):
#   direct, keep-alive          wrk on the host, connections reused;
#   direct, new connection      wrk on the host with "Connection: close": one
#                               TCP connection per request, like the proxy;
#   via the proxy               wrk INSIDE `airlock exec --allow-domain
#                               bench.test ...` (native backend), sending
#                               absolute-form "GET http://bench.test:PORT/"
#                               to 127.0.0.1:3128 (a wrk Lua script sets the
#                               path and Host). Each request is a new client
#                               connection (accepted in the sandbox's
#                               namespace, handed to the proxy over its Unix
#                               socket), a policy check, a static-map lookup,
#                               a new connection to the origin and a relay:
#                               the fair baseline is "direct, new connection".
# Latency: N sequential requests, each on a new connection (egress-origin
# get, after N/10 warm-ups), directly from the host and through the proxy
# from inside the sandbox; the difference of the means and medians is the
# latency the proxy adds per request.
#
# Writes markdown to stdout (paste into docs/benchmarks.md); progress to
# stderr. Everything (wrk, origin, airlock's proxy thread) shares this
# machine's cores, so the absolute figures are this host's, not the proxy's
# limits. Exit status: 0 when every measurement ran without errors, 1 if a
# run failed or a run through the proxy got errors or non-2xx answers, 2 when
# a tool is missing. Not part of the test suite.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
AIRLOCK=${AIRLOCK:-build/release/airlock}
DURATION=${DURATION:-10}
[ "$DURATION" -ge 3 ] || { echo "egress.sh: DURATION must be at least 3 (seconds)" >&2; exit 2; }
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
N=${N:-2000}
ADDR=127.0.0.2
TMP=$(mktemp -d /tmp/airlock-egress-bench.XXXXXX)
chmod 755 "$TMP"
STATE=$TMP/state
ORIGIN_PID=""

log() { printf '%s\n' "$*" >&2; }
cleanup() {
    [ -z "$ORIGIN_PID" ] || kill "$ORIGIN_PID" 2>/dev/null || true
    [ -z "$ORIGIN_PID" ] || wait "$ORIGIN_PID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
NAME=egress.sh
# shellcheck source=bench/lib.bash
source bench/lib.bash
need wrk wrk
need gcc gcc
need python3 python3

copy_airlock
failures=0

# ---- the origin ------------------------------------------------------------------
mkdir -p "$TMP/guest" "$STATE"
log "== building bench/egress-origin.c"
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
    bench/egress-origin.c -o "$TMP/guest/egress-origin"
"$TMP/guest/egress-origin" serve "$ADDR" 0 "$TMP/port" &
ORIGIN_PID=$!
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT=$(cat "$TMP/port")
log "== origin on $ADDR:$PORT"

cat >"$TMP/guest/proxy.lua" <<EOF
-- absolute-form requests to the forward proxy wrk connects to
wrk.method = "GET"
wrk.path = "http://bench.test:$PORT/"
wrk.headers["Host"] = "bench.test:$PORT"
EOF

# the sandbox: network only to bench.test (static map to the origin), limits
# out of the way of the measurement
SANDBOX=("$AL" exec --state-dir "$STATE" --timeout "$((DURATION + 60))s" --dir "$TMP/guest:/bench:ro"
    --allow-domain bench.test --resolve "bench.test:$ADDR" --allow-ip "$ADDR/32" --allow-port "$PORT"
    --egress-connections "$((CONNS * 4))" --egress-bytes 64G --egress-connection-bytes 1G --)

cpu_ticks() { # PID: utime + stime in clock ticks, empty if gone
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}
CLK_TCK=$(getconf CLK_TCK)

# wrk_run NAME CMD...: runs wrk (the whole command), keeps its output in
# $TMP/NAME.wrk and prints "req/s p50 p99 errors non2xx" (latencies in µs);
# req/s is "failed" when the command failed (run in $(...): the caller counts)
wrk_run() {
    local name=$1
    shift
    log "== wrk: $name"
    "$@" >"$TMP/$name.wrk" 2>"$TMP/$name.err" &
    local pid=$! t1 t2 rc=0
    # the CPU time of the process started (for the proxy row: airlock, whose
    # threads are the proxy and the relay; the sandbox's processes are its
    # children and not counted) from 1 s to DURATION-1 s into the run, while
    # wrk is surely running
    sleep 1
    t1=$(cpu_ticks "$pid")
    sleep "$((DURATION - 2))"
    t2=$(cpu_ticks "$pid")
    wait "$pid" || rc=$?
    if [ -n "$t1" ] && [ -n "$t2" ]; then echo "$((t2 - t1)) $((DURATION - 2))" >"$TMP/$name.cpu"; fi
    if [ "$rc" -ne 0 ]; then
        log "$name failed: $(head -c 300 "$TMP/$name.err" "$TMP/$name.wrk")"
        echo "failed - - - -"
        return
    fi
    sed 's/^/    /' "$TMP/$name.wrk" >&2
    python3 - "$TMP/$name.wrk" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
def us(v):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", v)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[m.group(2)] if m else float("nan")
rps = re.search(r"Requests/sec:\s+([\d.]+)", t)
p50 = re.search(r"^\s+50%\s+(\S+)", t, re.M)
p99 = re.search(r"^\s+99%\s+(\S+)", t, re.M)
errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
print("%.0f" % float(rps.group(1)) if rps else "failed", "%.0f" % us(p50.group(1)) if p50 else "-",
      "%.0f" % us(p99.group(1)) if p99 else "-",
      sum(int(x) for x in errs.groups()) if errs else 0, non2xx.group(1) if non2xx else 0)
EOF
}

WRK=(wrk "-t$THREADS" "-c$CONNS" "-d${DURATION}s" --latency)
read -r ka_rps ka_p50 ka_p99 ka_err ka_non <<<"$(wrk_run direct-keepalive "${WRK[@]}" "http://$ADDR:$PORT/")"
read -r nc_rps nc_p50 nc_p99 nc_err nc_non <<<"$(wrk_run direct-close "${WRK[@]}" -H 'Connection: close' "http://$ADDR:$PORT/")"
read -r px_rps px_p50 px_p99 px_err px_non <<<"$(wrk_run proxy "${SANDBOX[@]}" "${WRK[@]}" -s /bench/proxy.lua http://127.0.0.1:3128/)"
for r in "$ka_rps" "$nc_rps" "$px_rps"; do [ "$r" != failed ] || failures=$((failures + 1)); done
# any socket error or refusal through the proxy is a failure here
if [ "$px_err" != 0 ] || [ "$px_non" != 0 ]; then
    log "through the proxy: $px_err socket errors, $px_non non-2xx answers"
    failures=$((failures + 1))
fi

# airlock's CPU per request through the proxy (µs), from the proxy row's sample
px_cpu="—"
if [ -s "$TMP/proxy.cpu" ] && [[ $px_rps =~ ^[0-9]+$ ]]; then
    read -r ticks window <"$TMP/proxy.cpu"
    px_cpu=$(awk -v t="$ticks" -v hz="$CLK_TCK" -v w="$window" -v r="$px_rps" 'BEGIN { printf "%.0f", t / hz * 1e6 / (w * r) }')
    px_cores=$(awk -v t="$ticks" -v hz="$CLK_TCK" -v w="$window" 'BEGIN { printf "%.2f", t / hz / w }')
fi

# ---- sequential latency --------------------------------------------------------------
lat_run() { # NAME CMD...: "mean p50 p90 p99" in µs; mean "failed" if it failed
    local name=$1
    shift
    log "== latency: $name ($N sequential requests)"
    if ! "$@" >"$TMP/$name.lat" 2>"$TMP/$name.err"; then
        log "$name failed: $(head -c 300 "$TMP/$name.err" "$TMP/$name.lat")"
        echo "failed - - -"
        return
    fi
    log "    $(cat "$TMP/$name.lat")"
    awk '{ print $4, $6, $8, $10 }' "$TMP/$name.lat"
}
read -r d_mean d_p50 d_p90 d_p99 <<<"$(lat_run direct "$TMP/guest/egress-origin" get "$ADDR" "$PORT" "$N")"
read -r p_mean p_p50 p_p90 p_p99 <<<"$(lat_run proxy "${SANDBOX[@]}" /bench/egress-origin get "$ADDR" "$PORT" "$N" 127.0.0.1 3128 bench.test)"
for r in "$d_mean" "$p_mean"; do [ "$r" != failed ] || failures=$((failures + 1)); done

# ---- report --------------------------------------------------------------------------
num() { [[ $1 =~ ^[0-9.]+$ ]]; }
ratio() { if num "$1" && num "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "—"; fi; }
diff_us() { if num "$1" && num "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.0f", a - b }'; else echo "—"; fi; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)

cat <<EOF
Measured $(date -u +%Y-%m-%d) on ${cpu:-unknown CPU} ($(nproc) cores), kernel $(uname -r), $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2);
\`$(basename "$AIRLOCK")\` $("$AL" --version 2>/dev/null | head -n 1 || true). wrk: $THREADS threads, $CONNS connections, ${DURATION} s per row;
origin: bench/egress-origin.c on $ADDR (2-byte body). Latencies in µs.

| mode | req/s | p50 µs | p99 µs | errors / non-2xx | req/s vs direct new conn | req/s vs direct keep-alive |
|---|---:|---:|---:|---:|---:|---:|
| direct, keep-alive (host) | $ka_rps | $ka_p50 | $ka_p99 | $ka_err / $ka_non | $(ratio "$ka_rps" "$nc_rps") | 1.00 |
| direct, new connection per request (host) | $nc_rps | $nc_p50 | $nc_p99 | $nc_err / $nc_non | 1.00 | $(ratio "$nc_rps" "$ka_rps") |
| **via the egress proxy** (wrk in \`airlock exec\`) | **$px_rps** | $px_p50 | $px_p99 | $px_err / $px_non | **$(ratio "$px_rps" "$nc_rps")** | $(ratio "$px_rps" "$ka_rps") |

airlock's own CPU time during the proxy row (its proxy and relay threads): ${px_cores:-?} cores busy,
**$px_cpu µs of CPU per proxied request** (both threads, user + system).

$N sequential requests, each on a new connection (after $((N / 10)) warm-ups):

| path | mean µs | p50 µs | p90 µs | p99 µs |
|---|---:|---:|---:|---:|
| direct (host) | $d_mean | $d_p50 | $d_p90 | $d_p99 |
| via the egress proxy (client in \`airlock exec\`) | $p_mean | $p_p50 | $p_p90 | $p_p99 |
| **added by the proxy** | **$(diff_us "$p_mean" "$d_mean")** | **$(diff_us "$p_p50" "$d_p50")** | $(diff_us "$p_p90" "$d_p90") | $(diff_us "$p_p99" "$d_p99") |
EOF

if [ "$failures" -gt 0 ]; then
    log "egress.sh: $failures measurement(s) failed or had errors"
    exit 1
fi
exit 0
