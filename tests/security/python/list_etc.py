# Case 2 in Python: list /etc (and /, /proc) with no directory granted.
# The interpreter's own stdlib grant may be visible; /etc and /proc must not.
import os, sys, glob

denied = leaks = wrong = 0

def deny(what, fn):
    global denied, leaks
    try:
        data = fn()
    except OSError as e:
        print("DENIED %d %s: %s" % (e.errno or 0, what, e.strerror))
        denied += 1
    else:
        print("LEAK %s: %r" % (what, data[:16]))
        leaks += 1

deny('os.listdir("/etc")', lambda: os.listdir("/etc"))
deny('os.scandir("/etc")', lambda: [e.name for e in os.scandir("/etc")])
deny('os.listdir("/proc")', lambda: os.listdir("/proc"))
deny('os.listdir("/tmp")', lambda: os.listdir("/tmp"))
g = glob.glob("/etc/*")
if g:
    print("LEAK glob(/etc/*): %r" % g[:8]); leaks += 1
else:
    print("DENIED 0 glob(/etc/*): empty"); denied += 1
# Whatever "/" shows, it must not be the host's root.
try:
    top = os.listdir("/")
except OSError as e:
    print("DENIED %d os.listdir(\"/\"): %s" % (e.errno or 0, e.strerror)); denied += 1
else:
    host = {"etc", "proc", "bin", "root", "home", "var", "boot"}
    if host & set(top):
        print("LEAK os.listdir(\"/\"): %r" % sorted(top)[:16]); leaks += 1
    else:
        print("INFO os.listdir(\"/\") = %r" % sorted(top))
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
