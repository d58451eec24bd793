#!/usr/bin/env bash
# load.sh — airlockd under load (issue 6, reliability): 16 concurrent
# clients over loopback TCP run 1,000 small Python executions (each result
# checked); 3 rounds of 16 Python sessions do 10 stateful steps each and are
# deleted; the daemon's memory, fds, threads and child processes are watched
# in /proc throughout. The reference, measured in the same run and
# interleaved with the load in 4 slices: the same executions through the
# CLI, one `airlock python -c` process each, as many at a time as the daemon
# has workers.
#
#   bench/load.sh                       from anywhere; builds what it needs
#   CLIENTS=16 EXECS=1000 SESSIONS=16 STEPS=10 SESSION_ROUNDS=3 REF_RUNS=200 \
#       bench/load.sh
#   WORKERS=4 QUEUE=64 bench/load.sh    workers default: the number of cores
#   AIRLOCKD=build/asan/airlockd bench/load.sh
#                                       another daemon build (the reference
#                                       is AIRLOCK, default
#                                       build/release/airlock)
#
# Writes a markdown report to stdout, progress to stderr; about 2 minutes on
# 2 idle cores. The reference's throughput is runs / wall time, so 200 runs
# measure it as well as 1,000 would (which would add about 2 minutes).
#
# The daemon is a private copy of AIRLOCKD (a concurrent rebuild must not
# change it mid-run) with a config written here: a mktemp state_dir, no Unix
# socket, TCP on a free loopback port, one random token (hashed by
# `airlockd hash-token` from stdin, passed to the client in the environment:
# never on a command line), workers = WORKERS, queue = QUEUE, rate limits
# 1,000,000 a minute. It is stopped with SIGTERM and must exit 0 and log
# no sanitizer report. The checks themselves, and what counts as a failure
# or a leak, are described in bench/load-client.py.
#
# Exit status: 0 when no request failed, nothing leaked and the daemon
# stopped cleanly; 1 otherwise; 2 when something needed is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
NAME=load.sh
CLIENTS=${CLIENTS:-16}
EXECS=${EXECS:-1000}
SESSIONS=${SESSIONS:-16}
STEPS=${STEPS:-10}
SESSION_ROUNDS=${SESSION_ROUNDS:-3}
REF_RUNS=${REF_RUNS:-200}
WORKERS=${WORKERS:-$(nproc)}
QUEUE=${QUEUE:-64}
AIRLOCKD=${AIRLOCKD:-build/release/airlockd}
AIRLOCK=${AIRLOCK:-build/release/airlock}
PYDIR=$ROOT/build/python
TMP=$(mktemp -d /tmp/airlock-load.XXXXXX)
DPID=

log() { printf '%s\n' "$*" >&2; }

# Stop the daemon if it still runs (an error path), then remove TMP.
cleanup() {
    if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
        kill -TERM "$DPID" 2>/dev/null || true
        wait "$DPID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

command -v python3 >/dev/null || { log "$NAME: python3 not found (apt-get install python3)"; exit 2; }
[ -f "$PYDIR/python.wasm" ] || { log "$NAME: no $PYDIR/python.wasm: run tools/build-python.sh"; exit 2; }
if [ ! -x "$AIRLOCKD" ] || [ ! -x "$AIRLOCK" ]; then
    log "== building the release airlockd and airlock"
    flock /tmp/airlock-build.lock make -s -j2 >&2
fi
[ -x "$AIRLOCKD" ] && [ -x "$AIRLOCK" ] || { log "$NAME: no $AIRLOCKD or $AIRLOCK"; exit 2; }
mkdir -p "$TMP/bin" "$TMP/state"
cp "$AIRLOCKD" "$TMP/bin/airlockd"
cp "$AIRLOCK" "$TMP/bin/airlock"
# the copies are not beside build/python: name it for both
export AIRLOCK_PYTHON_DIR=$PYDIR

TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
HASH=$(printf '%s\n' "$TOKEN" | "$TMP/bin/airlockd" hash-token)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/airlockd.yaml" <<EOF
listen:
  unix_socket: ""
  tcp_host: 127.0.0.1
  tcp_port: $PORT
paths:
  state_dir: $TMP/state
  python_dir: $PYDIR
workers:
  count: $WORKERS
  queue: $QUEUE
rate_limits:
  python_per_minute: 1000000
  exec_per_minute: 1000000
tokens:
  - name: load
    sha256: $HASH
EOF

log "== starting airlockd on 127.0.0.1:$PORT ($WORKERS workers)"
"$TMP/bin/airlockd" --config "$TMP/airlockd.yaml" </dev/null >"$TMP/airlockd.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do
    grep -q ' ready ' "$TMP/airlockd.log" && break
    kill -0 "$DPID" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q ' ready ' "$TMP/airlockd.log"; then
    log "$NAME: airlockd did not start:"
    cat "$TMP/airlockd.log" >&2
    exit 1
fi

rc=0
AIRLOCK_TOKEN=$TOKEN timeout 900 python3 -B bench/load-client.py \
    --url "http://127.0.0.1:$PORT" --pid "$DPID" --state-dir "$TMP/state" \
    --airlock "$TMP/bin/airlock" --clients "$CLIENTS" --execs "$EXECS" \
    --sessions "$SESSIONS" --steps "$STEPS" --session-rounds "$SESSION_ROUNDS" \
    --ref-runs "$REF_RUNS" \
    --ref-parallel "$WORKERS" --workers "$WORKERS" --queue "$QUEUE" || rc=1

log "== stopping airlockd"
t0=$(date +%s%N)
drc=0
kill -TERM "$DPID" 2>/dev/null || true
wait "$DPID" || drc=$?
t1=$(date +%s%N)
DPID=
echo
if [ "$drc" -ne 0 ]; then
    echo "**airlockd exit status: $drc (0 expected after SIGTERM).**"
    rc=1
else
    echo "airlockd stopped on SIGTERM in $(((t1 - t0) / 1000000)) ms, exit status 0."
fi
# anything the daemon logged beyond its start and stop lines
if grep -vE 'info: (listening on|airlockd .* ready|.*shutting down|stopped)' "$TMP/airlockd.log" >"$TMP/extra.log"; then
    echo
    echo "airlockd's log, other lines (first 20):"
    echo
    sed -n '1,20s/^/    /p' "$TMP/extra.log"
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error|error:' "$TMP/extra.log"; then rc=1; fi
fi
exit "$rc"
