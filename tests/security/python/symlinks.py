# Case 4 in Python: symlinks out of the grant (--dir HOST/root:/work:rw):
# etclink -> /etc, outlink -> ../outside, loop1 <-> loop2,
# dangling -> ../outside/created.
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
        print("LEAK %s: %r" % (what, data[:64] if isinstance(data, (bytes, str, list)) else data))
        leaks += 1

def read(path):
    with open(path, "rb") as f:
        return f.read(64)

def create(path):
    with open(path, "wb") as f:
        f.write(b"ESCAPED")
    return b"created"

deny('open("/work/etclink/passwd")', lambda: read("/work/etclink/passwd"))
deny('open("/work/outlink/secret.txt")', lambda: read("/work/outlink/secret.txt"))
deny('os.listdir("/work/etclink")', lambda: os.listdir("/work/etclink"))
deny('open("/work/loop1")', lambda: read("/work/loop1"))
deny('create("/work/dangling")', lambda: create("/work/dangling"))
deny('create("/work/outlink/new.txt")', lambda: create("/work/outlink/new.txt"))
for target, link, probe in [("/etc", "/work/g_etc", "/work/g_etc/passwd"),
                            ("../outside", "/work/g_out", "/work/g_out/secret.txt"),
                            ("../../../../../../etc/passwd", "/work/g_up", "/work/g_up")]:
    try:
        os.symlink(target, link)
        print("INFO symlink(%s, %s) created" % (target, link))
    except OSError as e:
        print("INFO symlink(%s, %s) refused: %s" % (target, link, e))
    deny('open("%s")' % probe, lambda probe=probe: read(probe))
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
