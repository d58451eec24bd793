# tests/sandbox/guests/common.py — the prelude of every Python guest
# (run.sh runs `python3 -c "$(cat common.py NAME.py)"` inside the sandbox).
#
# The reporting protocol of tests/security: one line per attempt,
#   DENIED <errno> <what>: <strerror>    the attack failed (as it must)
#   LEAK <what>: <detail>                the attack worked: a sandbox hole
#   WRONG <what>                         a broken precondition or an
#                                        unexpected way of failing
#   INFO <what>                          context, judged by nobody
# and a last line "DONE denied=N leaks=N wrong=N"; exit 0 clean, 1 on a
# leak, 2 on WRONG. BACKEND (native|gvisor, from --env) lets a guest expect
# the backend's own mechanism (seccomp's EPERM on native; gVisor's kernel
# implements some calls itself, inside its own sandbox).
import ctypes
import errno
import os
import platform
import sys

BACKEND = os.environ.get("BACKEND", "")
NATIVE = BACKEND == "native"
_count = {"denied": 0, "leaks": 0, "wrong": 0}


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def denied(what, err):
    _count["denied"] += 1
    say("DENIED %d %s: %s" % (err, what, os.strerror(err) if err else "timed out"))


def leak(what, detail=""):
    _count["leaks"] += 1
    say("LEAK %s: %r" % (what, str(detail)[:200]))


def wrong(what):
    _count["wrong"] += 1
    say("WRONG " + what)


def info(what):
    say("INFO " + what)


def attempt(what, fn, errnos=None):
    """Run the attack fn: success is a leak; an OSError is the expected
    outcome, with an errno in errnos (None: any errno)."""
    try:
        r = fn()
    except OSError as e:  # socket.timeout too (errno None)
        if errnos is not None and e.errno not in errnos:
            wrong("%s: errno %s (%s), expected one of %s"
                  % (what, e.errno, e.strerror, sorted(errno.errorcode.get(n, n) for n in errnos)))
        else:
            denied(what, e.errno or 0)
        return False
    leak(what, r)
    return True


def probe(what, fn):
    """Run fn and only report what happened (for calls a backend may allow
    because they stay inside its own kernel)."""
    try:
        info("%s -> %r" % (what, fn()))
    except OSError as e:
        info("%s -> errno %s (%s)" % (what, e.errno, e.strerror))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _arg(a):
    if isinstance(a, int):
        return ctypes.c_long(a)
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    if a is None:
        return ctypes.c_void_p(0)
    return a


def syscall(nr, *args):
    """A raw system call (x86_64 numbers); raises OSError like os.* does."""
    ctypes.set_errno(0)
    r = _libc.syscall(ctypes.c_long(nr), *[_arg(a) for a in args])
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def done():
    say("DONE denied=%d leaks=%d wrong=%d" % (_count["denied"], _count["leaks"], _count["wrong"]))
    sys.stdout.flush()
    os._exit(1 if _count["leaks"] else 2 if _count["wrong"] else 0)


if platform.machine() != "x86_64":
    wrong("the raw syscall numbers here are x86_64's, this is " + platform.machine())
