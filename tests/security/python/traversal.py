# Case 3 in Python: "../" out of a read-write grant (--dir HOST/root:/work:rw);
# HOST/outside/secret.txt holds "OUTSIDE-SECRET", /work/inside.txt "INSIDE".
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

try:
    if read("/work/inside.txt") != b"INSIDE":
        raise OSError(0, "wrong content")
except OSError as e:
    print("WRONG sanity: cannot read /work/inside.txt: %s" % e); wrong += 1

for p in ["/work/../etc/passwd", "/work/./../../etc/passwd", "/work/../outside/secret.txt",
          "/work/sub/../../outside/secret.txt", "/work/../../../../../../etc/passwd"]:
    deny('open("%s")' % p, lambda p=p: read(p))
deny('os.listdir("/work/..")', lambda: os.listdir("/work/.."))
deny('os.stat("/work/../outside/secret.txt")', lambda: str(os.stat("/work/../outside/secret.txt")))
try:
    os.chdir("/work")
    deny('open("../outside/secret.txt") from /work', lambda: read("../outside/secret.txt"))
    deny('open("../../../../etc/passwd") from /work', lambda: read("../../../../etc/passwd"))
except OSError as e:
    print("WRONG chdir(/work): %s" % e); wrong += 1
# Writes across the boundary.
def create(path):
    with open(path, "wb") as f:
        f.write(b"ESCAPED")
    return b"created"
deny('create("/work/../escape_py")', lambda: create("/work/../escape_py"))
deny('mkdir("/work/../escape_py_dir")', lambda: os.mkdir("/work/../escape_py_dir") or b"made")
deny('rename(inside.txt -> ../escaped_py)', lambda: os.rename("/work/inside.txt", "/work/../escaped_py") or b"moved")
deny('link(../outside/secret.txt -> stolen)', lambda: os.link("/work/../outside/secret.txt", "/work/stolen") or b"linked")
deny('unlink("/work/../outside/secret.txt")', lambda: os.unlink("/work/../outside/secret.txt") or b"removed")
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
