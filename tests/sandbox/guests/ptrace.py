# ptrace.py — debug other processes: the sandbox's pid 1, a child of its
# own, and a host process (HOST_PID, a `sleep` of the test running as the
# sandbox's host uid, so only the pid namespace and the seccomp filter stand
# in the way). Native: every ptrace is refused by seccomp with EPERM.
# gVisor implements ptrace inside its own kernel, so there only reaching the
# host process must fail. Env: HOST_PID.
import time

HOST_PID = int(os.environ["HOST_PID"])
TRACEME, ATTACH, SEIZE = 0, 16, 0x4206
# the host pid does not exist here (or is refused); gVisor lacks some calls
HOSTE = {errno.ESRCH, errno.EPERM} | (set() if NATIVE else {errno.ENOSYS})


def ptrace(req, pid):
    return syscall(101, req, pid, 0, 0)


def vm_read(pid):
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    return syscall(310, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)


attempt("ptrace(ATTACH, host pid %d)" % HOST_PID, lambda: ptrace(ATTACH, HOST_PID), HOSTE)
attempt("ptrace(SEIZE, host pid %d)" % HOST_PID, lambda: ptrace(SEIZE, HOST_PID), HOSTE)
attempt("process_vm_readv(host pid %d)" % HOST_PID, lambda: vm_read(HOST_PID), HOSTE)
attempt("pidfd_open(host pid %d)" % HOST_PID, lambda: syscall(434, HOST_PID, 0), HOSTE)
if NATIVE:
    attempt("ptrace(ATTACH, 1)", lambda: ptrace(ATTACH, 1), {errno.EPERM})
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    attempt("ptrace(ATTACH, own child)", lambda: ptrace(ATTACH, child), {errno.EPERM})
    attempt("ptrace(SEIZE, own child)", lambda: ptrace(SEIZE, child), {errno.EPERM})
    os.kill(child, 9)
    os.waitpid(child, 0)
    # last: if it worked, this process would stop at its next signal
    attempt("ptrace(TRACEME)", lambda: ptrace(TRACEME, 0), {errno.EPERM})
else:
    probe("ptrace(ATTACH, 1) inside gVisor", lambda: ptrace(ATTACH, 1))
done()
