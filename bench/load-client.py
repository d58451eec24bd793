#!/usr/bin/env python3
"""load-client.py — the client half of bench/load.sh: drives a running
airlockd over loopback TCP with concurrent clients, watches the daemon's
process in /proc, runs the CLI reference, and prints a markdown report.

    AIRLOCK_TOKEN=... bench/load-client.py --url http://127.0.0.1:PORT \
        --pid PID --state-dir DIR --airlock PATH [--clients 16] [--execs 1000]
        [--warmup 64] [--sessions 16] [--steps 10] [--session-rounds 3]
        [--ref-runs 200] [--ref-parallel 2] [--slices 4] [--workers 2]
        [--queue 64] [--ceiling 4000] [--rss-growth-mib 32]

Phases, in order (each client is a thread with its own keep-alive
HTTP/1.1 connection; http.client, python3 stdlib only):
  1. ceiling:  --ceiling GET /healthz from every client, to show that this
               client process issues far more requests per second than the
               executions need (it is not the bottleneck);
  2. warm-up:  --warmup executions, then the "after warm-up" sample;
  3. load and reference, alternating in --slices slices (a shared
               machine's background load then weighs on both alike):
               load:      --execs stateless Python executions through the
                          daemon from --clients clients; request k runs
                          print(sum(range(100 + k))) and must print exactly
                          that sum; latency = request sent to response read;
               reference: --ref-runs `airlock python -c` processes (same
                          code and checks), --ref-parallel at a time: the
                          CLI path, one process and interpreter start per
                          execution, in the same run as the bench rule asks;
               then the "after load" sample;
  4. sessions: --session-rounds rounds; in each, --sessions Python
               sessions in parallel, each created (201), --steps times
               `x = <i>` then `print(x)` (must print i), listed (all of
               them), deleted (204), then GET must be 404 and the list
               empty; RSS is sampled after each round (a leak per session
               shows as growth from round to round);
  5. the "end" sample, once the client's connections are closed.

Invariants:
  - a request fails when it gets no response, a status other than the
    expected one, or a result whose status/exit code/stdout is wrong; a 429
    is retried after its Retry-After (counted as a retry, not a failure),
    at most MAX_RETRIES times per request;
  - the token comes from the environment, never the command line (ps);
  - leaks: the daemon's fd count, thread count and children must come back
    to their "after warm-up" values (with a short settle wait, since the
    daemon closes a connection after the client does), no session
    workspace may remain under state_dir/sessions, and RSS may grow by at
    most --rss-growth-mib between "after warm-up" and "end";
  - exit status 0 only when no request failed and nothing leaked.
"""

import argparse
import http.client
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
import urllib.parse

MAX_RETRIES = 20
HTTP_TIMEOUT_S = 120


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- the daemon's process, from /proc ----------------------------------------------------

def proc_sample(pid):
    """CPU seconds, VmRSS/VmHWM (KiB), threads, open fds and children of
    pid; None if it is gone."""
    try:
        status = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                status[k] = v.strip()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        children = set()
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    children.update(f.read().split())
            except FileNotFoundError:
                pass  # the thread exited meanwhile
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return {
            "cpu_s": (int(fields[11]) + int(fields[12])) / ticks,  # utime + stime
            "rss_kib": int(status["VmRSS"].split()[0]),
            "hwm_kib": int(status["VmHWM"].split()[0]),
            "threads": int(status["Threads"]),
            "fds": fds,
            "children": sorted(children, key=int),
        }
    except (FileNotFoundError, ProcessLookupError):
        return None


class Sampler(threading.Thread):
    """Polls the daemon every 50 ms: the highest RSS, thread and child
    counts seen, and whether the daemon disappeared."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.peak_rss = 0
        self.peak_threads = 0
        self.peak_children = 0
        self.gone = False

    def run(self):
        while not self.stop.is_set():
            s = proc_sample(self.pid)
            if s is None:
                self.gone = True
                return
            self.peak_rss = max(self.peak_rss, s["rss_kib"])
            self.peak_threads = max(self.peak_threads, s["threads"])
            self.peak_children = max(self.peak_children, len(s["children"]))
            self.stop.wait(0.05)

    def take_peak_children(self):
        """The most children seen since the last call."""
        n, self.peak_children = self.peak_children, 0
        return n


# ---- HTTP ---------------------------------------------------------------------------------

class Client:
    """One keep-alive connection. request() returns (status, body bytes,
    retries) or raises OSError/HTTPException after a broken connection
    (which is closed so that the next request reconnects)."""

    def __init__(self, host, port, token):
        self.host, self.port = host, port
        self.headers = {"Authorization": f"Bearer {token}"}
        self.conn = None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def once(self, method, path, body):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=HTTP_TIMEOUT_S)
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            payload = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if resp.will_close:
            self.close()
        return resp.status, payload, resp.getheader("Retry-After")

    def request(self, method, path, body=None):
        retries = 0
        while True:
            status, payload, retry_after = self.once(method, path, body)
            if status != 429 or retries >= MAX_RETRIES:
                return status, payload, retries
            retries += 1
            try:
                wait = max(1, int(retry_after or "1"))
            except ValueError:
                wait = 1
            time.sleep(min(wait, 30))


class Tally:
    """Thread-safe counts of one phase, and the latency of every request."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.failed = 0
        self.retries = 0
        self.latencies = []
        self.errors = []  # the first few failures, for the report
        self.exec_ms = []  # the daemon's own "wall_ms" of each execution

    def record(self, ok, latency, retries, why=None):
        with self.lock:
            self.retries += retries
            self.latencies.append(latency)
            if ok:
                self.ok += 1
            else:
                self.failed += 1
                if len(self.errors) < 5:
                    self.errors.append(why)


def check_result(status, payload, want_stdout, tally=None):
    """None when payload is a successful execution printing want_stdout,
    else why not (one line). Its wall_ms goes to tally.exec_ms."""
    if status != 200:
        return f"HTTP {status}: {payload[:200]!r}"
    try:
        r = json.loads(payload)
    except ValueError:
        return f"not JSON: {payload[:200]!r}"
    if r.get("status") != "ok" or r.get("exit_code") != 0:
        return f"status {r.get('status')!r} exit {r.get('exit_code')!r} error {r.get('error')!r}"
    if r.get("stdout") != want_stdout:
        return f"stdout {r.get('stdout')!r}, want {want_stdout!r}"
    if tally is not None and isinstance(r.get("wall_ms"), (int, float)):
        with tally.lock:
            tally.exec_ms.append(r["wall_ms"] / 1000)
    return None


def timed(tally, fn):
    """Run fn() -> (why or None, retries); record its outcome and latency."""
    t0 = time.perf_counter()
    try:
        why, retries = fn()
    except (OSError, http.client.HTTPException, ValueError) as e:
        why, retries = f"{type(e).__name__}: {e}", 0
    tally.record(why is None, time.perf_counter() - t0, retries, why)
    return why


def run_clients(n_clients, target):
    """Start n_clients threads running target(index); wait for them all."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def execution_phase(args, n, first, tally):
    """n stateless executions from args.clients clients; request k (from
    first) prints sum(range(100 + k))."""
    counter = iter(range(first, first + n))
    lock = threading.Lock()

    def worker(_):
        c = Client(args.host, args.port, args.token)
        while True:
            with lock:
                k = next(counter, None)
            if k is None:
                break
            code = f"print(sum(range({100 + k})))"
            want = f"{(100 + k) * (99 + k) // 2}\n"

            def one():
                st, body, retries = c.request("POST", "/v1/executions",
                                              {"kind": "python", "code": code})
                return check_result(st, body, want, tally), retries
            timed(tally, one)
        c.close()

    t0 = time.perf_counter()
    run_clients(args.clients, worker)
    return time.perf_counter() - t0


def ceiling_phase(args, n):
    """n GET /healthz from args.clients clients: requests/s this client
    process reaches when the daemon answers at once."""
    tally = Tally()
    per = n // args.clients

    def worker(_):
        c = Client(args.host, args.port, args.token)
        for _ in range(per):
            def one():
                st, body, retries = c.request("GET", "/healthz")
                return (None if st == 200 else f"healthz HTTP {st}"), retries
            timed(tally, one)
        c.close()

    t0 = time.perf_counter()
    run_clients(args.clients, worker)
    return tally, time.perf_counter() - t0


def session_phase(args, tally, lifecycle, open_sample):
    """One round: args.sessions sessions in parallel (see the module
    comment); executions go to tally, create / delete / get-after-delete to
    lifecycle. open_sample() is called once while every session is open.
    Returns (seconds, how many GET /v1/sessions listed then)."""
    barrier = threading.Barrier(args.sessions + 1)

    def worker(_):
        c = Client(args.host, args.port, args.token)
        sid = None

        def create():
            nonlocal sid
            st, body, retries = c.request("POST", "/v1/sessions", {"kind": "python"})
            if st != 201:
                return f"create: HTTP {st}: {body[:200]!r}", retries
            sid = json.loads(body).get("id")
            return (None if isinstance(sid, str) else f"create: no id in {body[:200]!r}"), retries

        timed(lifecycle, create)
        if sid:
            path = f"/v1/sessions/{sid}/executions"
            for i in range(args.steps):
                def assign(i=i):
                    st, body, retries = c.request("POST", path, {"code": f"x = {i}"})
                    return check_result(st, body, "", tally), retries

                def show(i=i):
                    st, body, retries = c.request("POST", path, {"code": "print(x)"})
                    return check_result(st, body, f"{i}\n", tally), retries
                timed(tally, assign)
                timed(tally, show)
        try:
            barrier.wait(timeout=HTTP_TIMEOUT_S)
            barrier.wait(timeout=HTTP_TIMEOUT_S)  # the sample is taken between the two
        except threading.BrokenBarrierError:
            pass
        if sid:
            def delete():
                st, body, retries = c.request("DELETE", f"/v1/sessions/{sid}")
                return (None if st == 204 else f"delete: HTTP {st}: {body[:200]!r}"), retries

            def gone():
                st, body, retries = c.request("GET", f"/v1/sessions/{sid}")
                return (None if st == 404 else f"get after delete: HTTP {st}"), retries
            timed(lifecycle, delete)
            timed(lifecycle, gone)
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.sessions)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    listed = None
    try:
        barrier.wait(timeout=HTTP_TIMEOUT_S)
        open_sample()
        listed = count_sessions(args)
        barrier.wait(timeout=HTTP_TIMEOUT_S)
    except threading.BrokenBarrierError:
        barrier.abort()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, listed


def count_sessions(args):
    """How many sessions GET /v1/sessions lists (None when it fails)."""
    c = Client(args.host, args.port, args.token)
    try:
        st, body, _ = c.request("GET", "/v1/sessions")
        if st != 200:
            return None
        v = json.loads(body)
        if isinstance(v, dict):
            v = v.get("sessions", [])
        return len(v)
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        c.close()


# ---- the CLI reference ---------------------------------------------------------------------

def reference_phase(args, n, first, tally):
    """n `airlock python -c` processes, args.ref_parallel at once; run k
    (from first) prints sum(range(100 + k)). Returns (wall seconds, CPU
    seconds of the processes)."""
    counter = iter(range(first, first + n))
    lock = threading.Lock()

    def worker(_):
        while True:
            with lock:
                k = next(counter, None)
            if k is None:
                return
            code = f"print(sum(range({100 + k})))"
            want = f"{(100 + k) * (99 + k) // 2}\n"

            def one():
                p = subprocess.run([args.airlock, "python", "-c", code],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
                if p.returncode != 0 or p.stdout.decode(errors="replace") != want:
                    return f"exit {p.returncode}, stdout {p.stdout[:100]!r}", 0
                return None, 0
            try:
                timed(tally, one)
            except subprocess.TimeoutExpired:
                tally.record(False, 120.0, 0, "timeout")

    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run_clients(args.ref_parallel, worker)
    secs = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    return secs, cpu


# ---- the report ----------------------------------------------------------------------------

def pct(sorted_values, p):
    """The p-th percentile (nearest rank) of sorted values, in ms."""
    if not sorted_values:
        return float("nan")
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[k - 1] * 1000


def latency_cells(values):
    """p50 | p90 | p99 | max of values (seconds), in ms."""
    v = sorted(values)
    if not v:
        return " |  |  | "
    return " | ".join(f"{pct(v, p):.1f}" for p in (50, 90, 99, 100))


def mib(kib):
    return f"{kib / 1024:.1f}"


def settle(pid, want, keys=("fds", "threads"), seconds=5.0):
    """Sample pid until fds/threads are back to want's, for up to seconds
    (the daemon closes a connection shortly after the client does)."""
    deadline = time.monotonic() + seconds
    while True:
        s = proc_sample(pid)
        if s is None or all(s[k] <= want[k] for k in keys) and not s["children"]:
            return s
        if time.monotonic() >= deadline:
            return s
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--airlock", required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--execs", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=64)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--session-rounds", type=int, default=3)
    ap.add_argument("--ceiling", type=int, default=4000)
    ap.add_argument("--ref-runs", type=int, default=200)
    ap.add_argument("--ref-parallel", type=int, default=2)
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queue", type=int, default=64)
    ap.add_argument("--rss-growth-mib", type=float, default=32)
    args = ap.parse_args()
    if min(args.clients, args.execs, args.sessions, args.session_rounds, args.ref_runs,
           args.ref_parallel, args.ceiling, args.slices) < 1:
        sys.exit("load-client: every count must be at least 1")
    args.token = os.environ.get("AIRLOCK_TOKEN", "")
    if not args.token:
        sys.exit("load-client: set AIRLOCK_TOKEN")
    u = urllib.parse.urlsplit(args.url)
    args.host, args.port = u.hostname, u.port
    pid = args.pid
    problems = []

    load_avg = os.getloadavg()[0]
    start = proc_sample(pid)
    if start is None:
        sys.exit(f"load-client: no process {pid}")
    sampler = Sampler(pid)
    sampler.start()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)

    log(f"== ceiling: {args.ceiling} GET /healthz, {args.clients} clients")
    ceil_tally, ceil_s = ceiling_phase(args, args.ceiling)
    ceil_children = sampler.take_peak_children()

    log(f"== warm-up: {args.warmup} executions")
    warm_tally = Tally()
    execution_phase(args, args.warmup, 0, warm_tally)
    warm = settle(pid, start)
    sampler.take_peak_children()

    # The load and the reference alternate in slices, so that a change in
    # the machine's background load (it is shared) weighs on both alike.
    load_tally, ref_tally = Tally(), Tally()
    load_s = ref_s = ref_cpu = d_cpu = client_cpu = 0.0
    slice_ratios = []
    for i in range(args.slices):
        n = args.execs * (i + 1) // args.slices - args.execs * i // args.slices
        m = args.ref_runs * (i + 1) // args.slices - args.ref_runs * i // args.slices
        log(f"== slice {i + 1} of {args.slices}: {n} executions through airlockd "
            f"({args.clients} clients), {m} `airlock python -c` ({args.ref_parallel} at a time)")
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        d1 = proc_sample(pid)
        secs = execution_phase(args, n, args.warmup + args.execs * i // args.slices, load_tally)
        d2 = proc_sample(pid)
        cpu2 = resource.getrusage(resource.RUSAGE_SELF)
        load_s += secs
        client_cpu += (cpu2.ru_utime + cpu2.ru_stime) - (cpu1.ru_utime + cpu1.ru_stime)
        d_cpu += (d2["cpu_s"] - d1["cpu_s"]) if d1 and d2 else float("nan")
        rsecs, rcpu = reference_phase(args, m, args.ref_runs * i // args.slices, ref_tally)
        ref_s += rsecs
        ref_cpu += rcpu
        if n and m:
            slice_ratios.append((n / secs) / (m / rsecs))
    after_load = settle(pid, warm)
    load_children = sampler.take_peak_children()

    sess_tally, life_tally = Tally(), Tally()
    open_state = {}
    sess_s = 0.0
    round_rss = []  # VmRSS MiB after each round
    for r in range(args.session_rounds):
        log(f"== sessions, round {r + 1} of {args.session_rounds}: "
            f"{args.sessions} x {args.steps} x 2 executions")

        def open_sample():
            open_state.setdefault("sample", proc_sample(pid))
        secs, listed = session_phase(args, sess_tally, life_tally, open_sample)
        sess_s += secs
        listed_after = count_sessions(args)
        end = settle(pid, warm)
        round_rss.append(end["rss_kib"] / 1024 if end else float("nan"))
        if listed != args.sessions:
            problems.append(f"round {r + 1}: GET /v1/sessions listed {listed} of "
                            f"{args.sessions} open sessions")
        if listed_after != 0:
            problems.append(f"round {r + 1}: GET /v1/sessions lists {listed_after} after "
                            "every delete")
    sampler.stop.set()
    sampler.join()
    sess_children = sampler.take_peak_children()
    sessions_dir = os.path.join(args.state_dir, "sessions")
    left_dirs = sorted(os.listdir(sessions_dir)) if os.path.isdir(sessions_dir) else []


    # ---- verdicts
    if sampler.gone or end is None:
        problems.append("the daemon exited during the run")
        end = end or {"rss_kib": 0, "hwm_kib": 0, "threads": 0, "fds": 0, "children": []}
    tallies = [("ceiling", ceil_tally), ("warm-up", warm_tally), ("load", load_tally),
               ("session executions", sess_tally), ("session lifecycle", life_tally),
               ("reference", ref_tally)]
    failed = sum(t.failed for _, t in tallies)
    for name, t in tallies:
        for why in t.errors:
            problems.append(f"{name}: {why}")
    if failed:
        problems.append(f"{failed} requests failed")
    if end["fds"] > warm["fds"]:
        problems.append(f"fds: {warm['fds']} after warm-up, {end['fds']} at the end")
    if end["threads"] > warm["threads"]:
        problems.append(f"threads: {warm['threads']} after warm-up, {end['threads']} at the end")
    if end["children"]:
        problems.append(f"children left: {end['children']}")
    if left_dirs:
        problems.append(f"session workspaces left: {left_dirs[:5]}")
    growth = (end["rss_kib"] - warm["rss_kib"]) / 1024
    if growth > args.rss_growth_mib:
        problems.append(f"RSS grew {growth:.1f} MiB after warm-up (limit {args.rss_growth_mib})")

    # ---- report
    tput = args.execs / load_s
    ref_tput = args.ref_runs / ref_s
    sess_n = args.sessions * args.steps * 2 * args.session_rounds
    open_s = open_state.get("sample") or {}
    cpu_model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    total = time.perf_counter() - start_time
    print(f"airlockd load test, {time.strftime('%Y-%m-%d')}: {cpu_model}, {os.cpu_count()} cores; "
          f"workers {args.workers}, queue {args.queue}; {args.clients} clients over loopback TCP "
          f"(keep-alive); client and reference {total:.0f} s in all; load average "
          f"{load_avg:.2f} before the run.")
    print()
    print("| phase | requests | failed | 429 retries | wall s | per s | p50 ms | p90 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def row(name, t, secs, n=None):
        rate = f"{n / secs:.1f}" if n else ""
        print(f"| {name} | {len(t.latencies)} | {t.failed} | {t.retries} | {secs:.1f} | "
              f"{rate} | {latency_cells(t.latencies)} |")
    row(f"`GET /healthz`, {args.clients} clients (the client's own ceiling)", ceil_tally, ceil_s,
        len(ceil_tally.latencies))
    row(f"**airlockd: Python executions**, {args.clients} clients", load_tally, load_s, args.execs)
    print(f"| (the same, the daemon's `wall_ms` of each execution: no queueing, no HTTP) | | | | | | "
          f"{latency_cells(load_tally.exec_ms)} |")
    row(f"airlockd: session executions, {args.session_rounds} rounds x {args.sessions} "
        f"sessions x {args.steps} x (`x = i`, `print(x)`)", sess_tally, sess_s, sess_n)
    row("airlockd: session create, delete, get after delete (404)", life_tally, sess_s)
    row(f"reference: `airlock python -c` processes, {args.ref_parallel} at a time", ref_tally,
        ref_s, args.ref_runs)
    print()
    print(f"**airlockd / CLI throughput: {tput / ref_tput:.2f}x** ({tput:.1f} vs "
          f"{ref_tput:.1f} executions/s; per slice "
          f"{', '.join(f'{x:.2f}' for x in slice_ratios)}). "
          f"CPU per execution: airlockd {d_cpu / args.execs * 1000:.0f} ms, "
          f"CLI {ref_cpu / args.ref_runs * 1000:.0f} ms "
          f"(CLI / airlockd: **{ref_cpu / args.ref_runs / (d_cpu / args.execs):.2f}x**). "
          "Warm-up before the load phase: "
          f"{args.warmup} executions, {warm_tally.failed} failed. This client's CPU during the "
          f"load phase: {client_cpu:.1f} s in {load_s:.1f} s ({client_cpu / load_s * 100:.0f}% of a core).")
    print()
    print("| daemon (/proc) | start | after warm-up | after load | sessions open (round 1) | end | peak |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def cell(s, k, f=str):
        return f(s[k]) if s and k in s else ""

    def nkids(s):
        return str(len(s["children"])) if s else ""
    print(f"| VmRSS MiB | {mib(start['rss_kib'])} | {mib(warm['rss_kib'])} | "
          f"{cell(after_load, 'rss_kib', mib)} | {cell(open_s, 'rss_kib', mib)} | "
          f"{mib(end['rss_kib'])} | {mib(max(sampler.peak_rss, end['hwm_kib']))} (VmHWM) |")
    print(f"| threads | {start['threads']} | {warm['threads']} | {cell(after_load, 'threads')} | "
          f"{cell(open_s, 'threads')} | {end['threads']} | {sampler.peak_threads} |")
    print(f"| open fds | {start['fds']} | {warm['fds']} | {cell(after_load, 'fds')} | "
          f"{cell(open_s, 'fds')} | {end['fds']} | |")
    print(f"| child processes | {nkids(start)} | {nkids(warm)} | {nkids(after_load)} | "
          f"{nkids(open_s)} | {nkids(end)} | {ceil_children} in `/healthz`'s host probe, "
          f"{load_children} in the load phase, {sess_children} in the sessions phase |")
    print(f"| sessions listed by `GET /v1/sessions` (last round) | | | | {listed} | {listed_after} | |")
    print(f"| VmRSS MiB after each sessions round | | | | | "
          f"{', '.join(f'{x:.1f}' for x in round_rss)} | |")
    print(f"| workspaces in state_dir/sessions | | | | | {len(left_dirs)} | |")
    print()
    print(f"RSS from after warm-up to the end: {growth:+.1f} MiB (limit +{args.rss_growth_mib:g}).")
    print()
    if problems:
        print("**FAILED:**")
        for p in problems:
            print(f"- {p}")
        return 1
    print("**PASS:** no failed request; no leaked fd, thread, process, session or workspace.")
    return 0

start_time = time.perf_counter()
if __name__ == "__main__":
    sys.exit(main())
