#!/usr/bin/env python3
"""tests/sandbox/check.py — judges one `airlock exec --json` run for tests/sandbox/run.sh.

    check.py --out OUT --err ERR --rc RC --backend native|gvisor
             [--status REGEX] [--protocol] [--expr PYTHON_EXPR]...
    check.py --get FIELD --out OUT        print one field of the result

Prints one problem per line and exits 1 when the run was not sane; prints
nothing and exits 0 otherwise. Sane means, for every run:
  - airlock was not harmed: no sanitizer report or crash on its stderr;
  - stdout is exactly one JSON object with every field of the CLI's contract,
    each of the right type, limits_hit only known names;
  - the exit status agrees with the status (ok 0, exit = exit_code,
    signaled 128+signal, timeout 72, memory_limit 73, cpu_limit 74,
    unsupported 69, error 1, output_truncated = the program's code), and the
    status agrees with limits_hit (timeout names "wall", ...);
  - backend names the backend asked for;
  - no host secret (the words in $SANDBOX_SECRETS) appears anywhere in the
    output: a guest that printed one has read something it must not see.
Then per case: the status matches --status (a full-match regex; default
"ok"), every --expr holds (evaluated with d = the result, out = its stdout,
lines = stdout's lines), and with --protocol the guest followed the
DENIED/LEAK/WRONG protocol of tests/sandbox/guests/common.py cleanly: no
LEAK or WRONG line, last line "DONE denied=N leaks=0 wrong=0".
"""
import argparse
import json
import os
import re
import sys

FIELDS = {
    "status": str, "exit_code": int, "signal": int, "limits_hit": list,
    "cpu_ms": (int, float), "wall_ms": (int, float), "peak_memory_bytes": int,
    "denied_syscalls": int, "backend": str, "stdout": str, "stderr": str,
    "stdout_truncated": bool, "stderr_truncated": bool, "error": (str, type(None)),
}
LIMITS = {"wall", "cpu", "memory", "processes", "file_size", "output", "fuel"}
FIXED_RC = {"ok": 0, "timeout": 72, "memory_limit": 73, "cpu_limit": 74,
            "unsupported": 69, "error": 1}
STATUS_LIMIT = {"timeout": "wall", "memory_limit": "memory", "cpu_limit": "cpu",
                "output_truncated": "output"}
# runsc's own log lines (glog format: "I1121 09:04:54.025764  32687 file.go:36] ...")
RUNSC_LOG = re.compile(r"(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.-]+\.go:\d+\] ")
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       r"runtime error:|SUMMARY: \w*Sanitizer|Segmentation fault|core dumped")


def brief(d):
    """A short description of a result, for failure messages."""
    return ("status=%s exit_code=%s signal=%s limits_hit=%s denied=%s backend=%r "
            "stdout=%r stderr=%r error=%r" % (
                d.get("status"), d.get("exit_code"), d.get("signal"), d.get("limits_hit"),
                d.get("denied_syscalls"), d.get("backend"), str(d.get("stdout"))[-400:],
                str(d.get("stderr"))[-300:], str(d.get("error"))[:300]))


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", "replace")
    return text, json.loads(text)


def contract_problems(d, rc, backend):
    """Everything every result must satisfy, whatever the case."""
    problems = []
    for key, kind in FIELDS.items():
        if key not in d:
            problems.append("missing field %r" % key)
        elif not isinstance(d[key], kind) or (kind is int and isinstance(d[key], bool)):
            problems.append("field %r has type %s" % (key, type(d[key]).__name__))
    if problems:
        return problems
    status = d["status"]
    unknown = set(d["limits_hit"]) - LIMITS
    if unknown:
        problems.append("unknown limits_hit %s" % sorted(unknown))
    if status in FIXED_RC:
        want = FIXED_RC[status]
    elif status == "exit":
        want = d["exit_code"] & 255
        if d["exit_code"] == 0:
            problems.append("status exit with exit_code 0")
    elif status == "signaled":
        want = 128 + d["signal"]
        if d["signal"] <= 0:
            problems.append("status signaled without a signal")
    elif status == "output_truncated":
        want = d["exit_code"] & 255
        if not (d["stdout_truncated"] or d["stderr_truncated"]):
            problems.append("status output_truncated but neither stream truncated")
    else:
        problems.append("unknown status %r" % status)
        want = None
    if want is not None and rc != want:
        problems.append("exit status %d does not match status %s (want %d)" % (rc, status, want))
    if status in STATUS_LIMIT and STATUS_LIMIT[status] not in d["limits_hit"]:
        problems.append("status %s but limits_hit %s lacks %r" % (status, d["limits_hit"], STATUS_LIMIT[status]))
    if status == "ok" and d["exit_code"] != 0:
        problems.append("status ok with exit_code %d" % d["exit_code"])
    if status not in ("unsupported", "error") and not d["backend"].startswith(backend):
        problems.append("backend %r, asked for %s" % (d["backend"], backend))
    if RUNSC_LOG.search(d["stderr"]):
        problems.append("the program's stderr holds runsc's own log: %r"
                        % RUNSC_LOG.search(d["stderr"]).group(0))
    if d["wall_ms"] < 0 or d["cpu_ms"] < 0 or d["peak_memory_bytes"] < 0 or d["denied_syscalls"] < 0:
        problems.append("negative figures")
    return problems


def protocol_problems(out):
    lines = out.splitlines()
    problems = [l[:300] for l in lines if l.startswith(("LEAK ", "WRONG "))][:6]
    last = lines[-1] if lines else ""
    if not re.fullmatch(r"DONE denied=\d+ leaks=0 wrong=0", last):
        problems.append("guest did not finish cleanly: last line %r" % last[:200])
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--err")
    ap.add_argument("--rc", type=int)
    ap.add_argument("--backend")
    ap.add_argument("--status", default="ok")
    ap.add_argument("--protocol", action="store_true")
    ap.add_argument("--expr", action="append", default=[])
    ap.add_argument("--get")
    a = ap.parse_args()

    if a.get:
        try:
            _, d = load(a.out)
            v = d.get(a.get)
        except (OSError, ValueError):
            return 1
        try:  # strings as they are (stdout keeps its own last newline)
            sys.stdout.write(v if isinstance(v, str) else json.dumps(v) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `| head -n 1` stops reading
            sys.stdout = None
        return 0

    problems = []
    err = ""
    if a.err and os.path.exists(a.err):
        with open(a.err, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        m = SANITIZER.search(err)
        if m:
            line = err[err.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0]
            problems.append("airlock harmed: %s" % line[:240])
    try:
        text, d = load(a.out)
    except (OSError, ValueError) as e:
        with open(a.out, "rb") as f:
            head = f.read(300)
        problems.append("stdout is not one JSON object (%s), rc %s: %r; stderr: %r"
                        % (e, a.rc, head, err[:300]))
        print("\n".join(problems))
        return 1
    if not isinstance(d, dict):
        print("stdout is JSON but not an object")
        return 1
    for word in os.environ.get("SANDBOX_SECRETS", "").split():
        if word in text or word in err:
            problems.append("a host secret (%s...) appears in the output" % word[:12])
    problems += contract_problems(d, a.rc, a.backend)
    if problems:
        print("\n".join(problems + ["  result: " + brief(d)]))
        return 1

    if not re.fullmatch(a.status, d["status"]):
        problems.append("status %s, want %s" % (d["status"], a.status))
    out = d["stdout"]
    if a.protocol:
        problems += protocol_problems(out)
    env = {"d": d, "out": out, "lines": out.splitlines(), "re": re}
    for expr in a.expr:
        try:
            ok = eval(expr, env)  # the harness's own expressions, never the guest's
        except Exception as e:  # a missing key or bad value is a failed condition
            ok = False
            expr += "  (%s: %s)" % (type(e).__name__, e)
        if not ok:
            problems.append("not true: " + expr)
    if problems:
        print("\n".join(problems + ["  result: " + brief(d)]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
