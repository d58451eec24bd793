# unshare.py — new namespaces (the way to regain capabilities, and the root
# of many kernel exploits): unshare(2), clone(2) and clone3(2) with
# CLONE_NEWUSER, setns. Native: seccomp refuses every one with EPERM
# (clone3 may answer ENOSYS: its flags cannot be inspected by a filter).
# gVisor implements namespaces in its own kernel and (release 20221219) lets
# an unprivileged task make user, mount and cgroup namespaces there: those
# are only reported (identity.py checks that no capability exists); the
# network, pid, uts and ipc ones need a capability and must fail. Env: none.
import signal

NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP = (
    0x20000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000, 0x2000000)
E = {errno.EPERM} if NATIVE else None


def unshare(flags):
    return syscall(272, flags)


def raw_clone(flags):
    r = syscall(56, flags | signal.SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    os.waitpid(r, 0)
    return "child %d" % r


def clone3(flags):
    args = (ctypes.c_uint64 * 11)(flags, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)
    r = syscall(435, ctypes.byref(args), ctypes.sizeof(args))
    if r == 0:
        os._exit(0)
    os.waitpid(r, 0)
    return "child %d" % r


if NATIVE:
    attempt("unshare(CLONE_NEWUSER)", lambda: unshare(NEWUSER), E)
    attempt("unshare(CLONE_NEWUSER|CLONE_NEWNS)", lambda: unshare(NEWUSER | NEWNS), E)
    attempt("clone(CLONE_NEWUSER)", lambda: raw_clone(NEWUSER), E)
    attempt("clone3(CLONE_NEWUSER)", lambda: clone3(NEWUSER), {errno.EPERM, errno.ENOSYS})
    for name, flag in [("NEWNS", NEWNS), ("NEWCGROUP", NEWCGROUP)]:
        attempt("unshare(CLONE_%s)" % name, lambda flag=flag: unshare(flag), E)
else:
    for name, flag in [("NEWUSER", NEWUSER), ("NEWNS", NEWNS), ("NEWCGROUP", NEWCGROUP)]:
        child = os.fork()
        if child == 0:  # in a child: the rest of the guest stays where it was
            try:
                unshare(flag)
                os._exit(0)
            except OSError as e:
                os._exit(e.errno)
        _, st = os.waitpid(child, 0)
        code = os.WEXITSTATUS(st)
        info("unshare(CLONE_%s) inside gVisor -> %s"
             % (name, "allowed (a namespace of gVisor's own kernel)" if code == 0 else "errno %d" % code))
for name, flag in [("NEWNET", NEWNET), ("NEWPID", NEWPID), ("NEWUTS", NEWUTS), ("NEWIPC", NEWIPC)]:
    attempt("unshare(CLONE_%s)" % name, lambda flag=flag: unshare(flag), E if NATIVE else {errno.EPERM, errno.EINVAL})
for ns in ["user", "mnt", "net", "pid"]:
    # its own namespaces (pid 1 is hidden on native): native's filter refuses
    # setns itself; gVisor may allow joining what it is already in
    def setns(ns=ns):
        fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
        try:
            return syscall(308, fd, 0)
        finally:
            os.close(fd)
    if NATIVE:
        attempt("setns(/proc/self/ns/%s)" % ns, setns, E)
    else:
        probe("setns(/proc/self/ns/%s)" % ns, setns)
done()
