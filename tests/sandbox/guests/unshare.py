# unshare.py — new namespaces (the way to regain capabilities, and the root
# of many kernel exploits): unshare(2), clone(2) and clone3(2) with
# CLONE_NEWUSER, setns. Both backends refuse every one with EPERM: native
# through its seccomp filter, gVisor through the same deny list applied by
# the sentry (the container's linux.seccomp; without it gVisor 20221219 would
# let an unprivileged task make user, mount and cgroup namespaces in its own
# kernel). clone3 may answer ENOSYS: its flags cannot be inspected by a
# filter, and gVisor does not implement it. Env: none.
import signal

NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP = (
    0x20000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000, 0x2000000)
E = {errno.EPERM}


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


attempt("unshare(CLONE_NEWUSER)", lambda: unshare(NEWUSER), E)
attempt("unshare(CLONE_NEWUSER|CLONE_NEWNS)", lambda: unshare(NEWUSER | NEWNS), E)
attempt("clone(CLONE_NEWUSER)", lambda: raw_clone(NEWUSER), E)
attempt("clone3(CLONE_NEWUSER)", lambda: clone3(NEWUSER), {errno.EPERM, errno.ENOSYS})
for name, flag in [("NEWNS", NEWNS), ("NEWCGROUP", NEWCGROUP)]:
    attempt("unshare(CLONE_%s)" % name, lambda flag=flag: unshare(flag), E)
for name, flag in [("NEWNET", NEWNET), ("NEWPID", NEWPID), ("NEWUTS", NEWUTS), ("NEWIPC", NEWIPC)]:
    attempt("unshare(CLONE_%s)" % name, lambda flag=flag: unshare(flag), E)
for ns in ["user", "mnt", "net", "pid"]:
    # its own namespaces (pid 1 is hidden on native): the filter refuses
    # setns itself, whatever the target
    def setns(ns=ns):
        fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
        try:
            return syscall(308, fd, 0)
        finally:
            os.close(fd)
    # (gVisor has no /proc/self/ns/mnt: nothing to join is a refusal too)
    attempt("setns(/proc/self/ns/%s)" % ns, setns, E if NATIVE else {errno.EPERM, errno.ENOENT})
done()
