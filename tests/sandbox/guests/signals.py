# signals.py — signal host processes: the test's `sleep` (HOST_PID, same host
# uid as the sandbox, so only the pid namespace protects it) and the test's
# shell (TEST_PID), with signal 0, SIGTERM and SIGKILL, by pid and as a
# process group. Every call must fail with ESRCH (the pid does not exist
# here); the host checks that the sleep is still alive. Env: HOST_PID,
# TEST_PID.
import signal

GONE = {errno.ESRCH} | (set() if NATIVE else {errno.ENOSYS})  # gVisor has no pidfd_open

for pid in [int(os.environ["HOST_PID"]), int(os.environ["TEST_PID"])]:
    for sig in [0, signal.SIGTERM, signal.SIGKILL]:
        attempt("kill(%d, %d)" % (pid, sig), lambda pid=pid, sig=sig: os.kill(pid, sig) or "delivered", {errno.ESRCH})
    attempt("killpg(%d, SIGKILL)" % pid, lambda pid=pid: os.killpg(pid, signal.SIGKILL) or "delivered", {errno.ESRCH})
    attempt("tgkill(%d, %d, SIGKILL)" % (pid, pid), lambda pid=pid: syscall(234, pid, pid, 9), {errno.ESRCH})
    attempt("pidfd_open(%d)" % pid, lambda pid=pid: syscall(434, pid, 0), GONE)
done()
