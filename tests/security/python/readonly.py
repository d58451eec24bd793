# Case 5 in Python: writes into a read-only grant (--dir HOST/ro:/data:ro):
# file.txt "RO-CONTENT", emptydir/, sub/.
import os, sys

denied = leaks = wrong = 0

def deny(what, fn):
    global denied, leaks
    try:
        fn()
    except OSError as e:
        print("DENIED %d %s: %s" % (e.errno or 0, what, e.strerror))
        denied += 1
    else:
        print("LEAK %s: succeeded" % what)
        leaks += 1

try:
    with open("/data/file.txt", "rb") as f:
        if f.read() != b"RO-CONTENT":
            raise OSError(0, "wrong content")
except OSError as e:
    print("WRONG sanity: cannot read /data/file.txt: %s" % e); wrong += 1

def write(path, mode):
    with open(path, mode) as f:
        f.write(b"PWNED")

deny('open("/data/new.txt", "wb")', lambda: write("/data/new.txt", "wb"))
deny('open("/data/file.txt", "wb")', lambda: write("/data/file.txt", "wb"))
deny('open("/data/file.txt", "ab")', lambda: write("/data/file.txt", "ab"))
deny('open("/data/file.txt", "r+b")', lambda: write("/data/file.txt", "r+b"))
deny('os.truncate("/data/file.txt", 0)', lambda: os.truncate("/data/file.txt", 0))
deny('os.rename(file.txt -> renamed.txt)', lambda: os.rename("/data/file.txt", "/data/renamed.txt"))
deny('os.unlink("/data/file.txt")', lambda: os.unlink("/data/file.txt"))
deny('os.mkdir("/data/newdir")', lambda: os.mkdir("/data/newdir"))
deny('os.rmdir("/data/emptydir")', lambda: os.rmdir("/data/emptydir"))
deny('os.symlink(file.txt, /data/newlink)', lambda: os.symlink("file.txt", "/data/newlink"))
deny('os.link(file.txt, /data/hardlink)', lambda: os.link("/data/file.txt", "/data/hardlink"))
deny('os.utime("/data/file.txt")', lambda: os.utime("/data/file.txt", (1, 1)))
def fd_write():
    fd = os.open("/data/file.txt", os.O_RDONLY)
    try:
        os.write(fd, b"PWNED")
    finally:
        os.close(fd)
deny('os.write(read-only fd)', fd_write)
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
