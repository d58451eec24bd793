# proc.py — the host through /proc: /proc/1/root and /proc/1/cwd (the
# root and directory of pid 1 — on the host, the host's /), every visible
# pid (only the sandbox's may exist: not the test's shell TEST_PID nor the
# host `sleep` HOST_PID, whose command line is "sleep MARKER"), writes to
# /proc/sysrq-trigger and /proc/sys (opened, never written), /proc/kcore.
# Env: TEST_PID, HOST_PID, MARKER, SECRET_FILE.
HOST_PIDS = {int(os.environ["TEST_PID"]), int(os.environ["HOST_PID"])}
MARKER = b"sleep\0" + os.environ["MARKER"].encode()  # the host sleep's whole argv
SECRET = os.environ["SECRET_FILE"]

root = sorted(os.listdir("/"))
for link in ["/proc/1/root", "/proc/1/cwd"]:
    try:
        target = os.readlink(link)
        entries = sorted(os.listdir(link))
    except OSError as e:
        denied("list " + link, e.errno)
        continue
    info("%s -> %s: %s" % (link, target, " ".join(entries)))
    if link.endswith("root") and entries != root:
        leak("%s is not the sandbox's root" % link, entries)
    for probe_path in [link + "/etc/shadow", link + SECRET, link + "/../../../etc/shadow"]:
        if os.path.lexists(probe_path):
            leak("visible through " + link, probe_path)

pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
info("pids: %s" % pids)
if len(pids) > 40:
    leak("%d pids visible: the host's?" % len(pids), pids[:40])
for pid in pids:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
    except OSError:
        continue
    if MARKER in cmdline:
        leak("a host process is visible as pid %d" % pid, cmdline)
    if pid in HOST_PIDS and b"python3" not in cmdline:
        info("pid %d (a host pid number) is %r here" % (pid, cmdline[:60]))

for p in HOST_PIDS:
    try:
        os.kill(p, 0)
        info("pid %d exists here" % p)
    except OSError as e:
        denied("kill(%d, 0) of a host pid" % p, e.errno)

W = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT}
# pid 1 is airlock's init on native: its memory and attributes must be out
# of reach (write access to /proc/1/mem is control of init). In gVisor the
# program itself may be pid 1, and then these are its own.
targets = ["/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
           "/proc/sys/kernel/core_pattern", "/sys/kernel/uevent_helper"]
if os.getpid() != 1:
    targets += ["/proc/1/mem", "/proc/1/attr/current", "/proc/1/oom_score_adj"]
for p in targets:
    def open_w(p=p):
        os.close(os.open(p, os.O_WRONLY))
        return "opened for writing"
    attempt("open %s for writing" % p, open_w, W)
if NATIVE:  # lowering it needs CAP_SYS_RESOURCE (gVisor keeps its own score)
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")
        leak("lowered its own oom_score_adj to -1000")
    except OSError as e:
        denied("write -1000 to /proc/self/oom_score_adj", e.errno)
for p in ["/proc/kcore", "/proc/kmsg"] + (["/proc/1/mem"] if os.getpid() != 1 else []):
    attempt("read " + p, lambda p=p: open(p, "rb").read(16) or "opened", W | {errno.EIO, errno.EINVAL, errno.ESRCH})
done()
