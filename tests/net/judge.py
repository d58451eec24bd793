#!/usr/bin/env python3
"""tests/net/judge.py — judges one `airlock exec --json` run of tests/net/run.sh.

    judge.py --out OUT --err ERR --rc RC [--status REGEX] [--origin LOG --origin-from N]
             [--egress-log FILE] [--secret S]... [EXPR]...
    judge.py --get FIELD --out OUT           print one field (dotted path) of the result

Prints nothing and exits 0 when the run is sane and every EXPR is true;
else exits 1 after printing what was wrong (first line: the reason) with
the run's stdout/stderr and what the origin saw, for the FAIL line. Sane:
OUT is one JSON object, its status matches --status (default "ok"),
airlock's exit status is not a usage or setup error (1, 2, 69), ERR has no
sanitizer report, and no --secret appears anywhere in OUT or ERR (airlock's
whole output, which includes everything the guest printed).

EXPR is Python, evaluated with:
  d        the result object          out, err   the guest's stdout / stderr
  lines    out.splitlines()           rc         airlock's exit status
  origin   the origin log's entries (tests/net/servers.py) from line N on
  reqs     those of them that are HTTP requests (have "path")
  tls      those that are TLS handshakes
  path(p)  the requests whose path starts with p
  hdrs(e, name)  the values of header name (case-insensitive) in request e
  elog     the egress decision log's entries (--egress-log), [] if absent
  reply(prefix)  the fields of the first stdout line starting with prefix
                 (split on blanks), or [] if none
  req(tag)  the line "REQ TAG CODE CONNECT SIZE rc=RC BODY" printed by run.sh's
            in-sandbox req() (curl): {"code", "connect", "size", "rc",
            "body"}; {} if there is none
  re, json
"""
import argparse
import json
import re
import sys


def load_lines(path, start=0):
    entries = []
    try:
        with open(path, errors="replace") as f:
            for i, line in enumerate(f):
                if i < start or not line.strip():
                    continue
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    entries.append({"unparsable": line[:200]})
    except OSError:
        pass
    return entries


def get(d, dotted):
    for key in dotted.split("."):
        d = d[key]
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--err")
    ap.add_argument("--rc", type=int, default=0)
    ap.add_argument("--status", default="ok")
    ap.add_argument("--origin")
    ap.add_argument("--origin-from", type=int, default=0)
    ap.add_argument("--egress-log")
    ap.add_argument("--secret", action="append", default=[])
    ap.add_argument("--get")
    ap.add_argument("exprs", nargs="*")
    a = ap.parse_args()

    raw = open(a.out, errors="replace").read()
    raw_err = open(a.err, errors="replace").read() if a.err else ""
    try:
        d = json.loads(raw)
        if not isinstance(d, dict):
            raise ValueError("not an object")
    except ValueError as e:
        if a.get:
            return
        print("airlock's stdout is not one JSON object (%s; rc %d): %r\nstderr: %r"
              % (e, a.rc, raw[:300], raw_err[:300]))
        return 1
    if a.get:
        try:
            v = get(d, a.get)
        except (KeyError, TypeError):
            return
        print(v if isinstance(v, str) else json.dumps(v))
        return

    out = d.get("stdout") or ""
    err = d.get("stderr") or ""
    origin = load_lines(a.origin, a.origin_from) if a.origin else []
    elog = load_lines(a.egress_log) if a.egress_log else []
    context = "stdout: %r\nstderr: %r\nairlock stderr: %r\norigin: %s" % (
        out[:600], err[:300], raw_err[:300],
        json.dumps([{k: e.get(k) for k in ("addr", "path", "tls", "sni")} for e in origin])[:500])

    # airlock itself harmed (an ASan/UBSan build): a report on its stderr
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ThreadSanitizer", "MemorySanitizer"):
        if marker in raw_err:
            i = raw_err.index(marker)
            print("sanitizer report from airlock: %s" % raw_err[i:i + 1500])
            return 1
    for s in a.secret:
        if s and (s in raw or s in raw_err):
            print("the secret %r is visible in airlock's output\n%s" % (s[:8] + "...", context))
            return 1
    if a.rc in (1, 2, 69) or not re.fullmatch(a.status, str(d.get("status"))):
        print("status %s (want %s), rc %d, error %r\n%s"
              % (d.get("status"), a.status, a.rc, d.get("error"), context))
        return 1

    lines = out.splitlines()
    reqs = [e for e in origin if "path" in e]
    tls = [e for e in origin if "tls" in e]

    def path(p):
        return [e for e in reqs if e["path"].startswith(p)]

    def hdrs(e, name):
        return [v for k, v in e.get("headers", []) if k.lower() == name.lower()]

    def reply(prefix):
        for line in lines:
            if line.startswith(prefix):
                return line.split()
        return []

    def req(tag):
        for line in lines:
            parts = line.split(" ", 6)
            if len(parts) >= 6 and parts[0] == "REQ" and parts[1] == tag:
                return {"code": int(parts[2]), "connect": int(parts[3]), "size": int(parts[4]),
                        "rc": int(parts[5][3:]), "body": parts[6] if len(parts) > 6 else ""}
        return {}

    env = {"d": d, "req": req, "out": out, "err": err, "lines": lines, "rc": a.rc, "origin": origin,
           "reqs": reqs, "tls": tls, "path": path, "hdrs": hdrs, "elog": elog, "reply": reply,
           "re": re, "json": json}
    for expr in a.exprs:
        try:
            ok = eval(expr, env)
        except Exception as e:  # a malformed answer is a failure, not a crash
            print("%s raised %s: %s\n%s" % (expr, type(e).__name__, e, context))
            return 1
        if not ok:
            extra = ""
            if a.egress_log:
                extra = "\negress log: %s" % json.dumps(elog)[:600]
            print("not: %s\n%s%s" % (expr, context, extra))
            return 1


if __name__ == "__main__":
    sys.exit(main())
