# identity.py — privilege: the program is uid/gid 1000 with no supplementary
# root group, no capabilities (effective, permitted, inheritable, ambient;
# bounding too on native), no_new_privs on native; setuid binaries do not
# raise it: a setuid-root copy of `id` in a grant (/suid/id, when SUID=1),
# /usr/bin/su, the setuid-root /usr/bin/mount; set*id(0) fail. Env: SUID.
import subprocess


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=20)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
if ids != (1000, 1000, 1000, 1000):
    leak("uid/euid/gid/egid are not 1000", ids)
if 0 in os.getgroups():
    leak("supplementary group 0", os.getgroups())
info("groups %s" % os.getgroups())

status = {}
with open("/proc/self/status") as f:
    for line in f:
        k, _, v = line.partition(":")
        status[k] = v.strip()
for cap in ["CapEff", "CapPrm", "CapInh", "CapAmb"] + (["CapBnd"] if NATIVE else []):
    if cap not in status:
        if NATIVE or cap != "CapAmb":  # gVisor's status has no CapAmb line
            wrong("no %s in /proc/self/status" % cap)
    elif int(status[cap], 16) != 0:
        leak("%s is %s" % (cap, status[cap]))
info("CapBnd %s NoNewPrivs %s Seccomp %s" % (status.get("CapBnd"), status.get("NoNewPrivs"), status.get("Seccomp")))
if NATIVE and status.get("NoNewPrivs") != "1":
    leak("NoNewPrivs is not 1", status.get("NoNewPrivs"))
if NATIVE and status.get("Seccomp") != "2":
    leak("no seccomp filter (Seccomp: %s)" % status.get("Seccomp"))

if os.environ.get("SUID") == "1":
    try:
        st = os.stat("/suid/id")
        info("/suid/id mode %o uid %d" % (st.st_mode, st.st_uid))
        rc, out, err = run(["/suid/id", "-u"])
        if out != "1000":
            leak("the setuid-root /suid/id ran with euid %r (rc %d, %s)" % (out, rc, err))
        else:
            denied("setuid-root /suid/id: euid stays 1000", errno.EPERM)
    except OSError as e:
        wrong("cannot run /suid/id: %s" % e)
rc, out, err = run(["/usr/bin/su", "-c", "id -u", "root"])
if rc == 0 or out == "0":
    leak("su root worked", out)
else:
    denied("su root (exit %d: %s)" % (rc, " ".join(err.split())[:60]), errno.EPERM)
rc, out, err = run(["/usr/bin/mount", "-t", "tmpfs", "none", "/tmp"])
if rc == 0:
    leak("the setuid-root mount worked", out)
else:
    denied("setuid-root /usr/bin/mount (exit %d)" % rc, errno.EPERM)
for what, fn in [("setuid(0)", lambda: os.setuid(0)), ("setgid(0)", lambda: os.setgid(0)),
                 ("setresuid(0,0,0)", lambda: os.setresuid(0, 0, 0)),
                 ("setgroups([0])", lambda: os.setgroups([0]))]:
    attempt(what, lambda fn=fn: fn() or "succeeded", {errno.EPERM, errno.EINVAL})  # EINVAL: 0 is not mapped
done()
