# Case 1 in Python: read /etc/passwd with no directory granted.
# Protocol (as the C guests): "DENIED <errno> <what>" / "LEAK <what>: <bytes>",
# last line "DONE denied=N leaks=N wrong=N"; exit 0 when nothing leaked.
import os, sys

denied = leaks = wrong = 0

def deny(what, fn):
    global denied, leaks
    try:
        data = fn()
    except OSError as e:
        print("DENIED %d %s: %s" % (e.errno or 0, what, e.strerror))
        denied += 1
    else:
        print("LEAK %s: %r" % (what, data[:64] if data is not None else data))
        leaks += 1

def read(path):
    with open(path, "rb") as f:
        return f.read(64)

deny('open("/etc/passwd")', lambda: read("/etc/passwd"))
deny('os.open("/etc/passwd")', lambda: os.read(os.open("/etc/passwd", os.O_RDONLY), 64))
deny('open("../../../../etc/passwd")', lambda: read("../../../../etc/passwd"))
deny('open("/proc/self/environ")', lambda: read("/proc/self/environ"))
deny('os.stat("/etc/passwd")', lambda: str(os.stat("/etc/passwd")))
import pathlib
deny('pathlib read_text("/etc/passwd")', lambda: pathlib.Path("/etc/passwd").read_text())
import io
deny('io.open("/etc/shadow")', lambda: io.open("/etc/shadow", "rb").read(64))
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
