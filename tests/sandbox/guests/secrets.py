# secrets.py — read files the sandbox must not show: the shadow files and a
# host secret outside every grant (SECRET_FILE, world-readable on the host so
# only the sandbox's file-system view can hide it), directly and through
# /proc/1/root and /proc/self/root. Env: SECRET_FILE, HOST_TMP.
SECRET = os.environ["SECRET_FILE"]
HOST_TMP = os.environ["HOST_TMP"]
GONE = {errno.ENOENT, errno.EACCES, errno.ENOTDIR, errno.EPERM}


def read(path):
    with open(path, "rb") as f:
        return f.read(200)


# precondition: reading works at all, so the denials below mean something
try:
    read("/usr/bin/env")
except OSError as e:
    wrong("cannot read /usr/bin/env: %s" % e)

for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/root/.bashrc", "/root/.ssh/id_rsa",
          "/proc/1/root/etc/shadow", SECRET, "/proc/1/root" + SECRET, "/proc/self/root" + SECRET,
          "/proc/1/cwd" + SECRET, "/proc/self/cwd/../../../../../.." + SECRET]:
    attempt("read " + p, lambda p=p: read(p), GONE)

for p in [SECRET, os.path.dirname(SECRET), HOST_TMP, "/proc/1/root" + SECRET]:
    try:
        visible = os.path.lexists(p)
    except OSError:
        visible = False
    if visible:
        leak("host path is visible", p)
    else:
        denied("lexists " + p, errno.ENOENT)
done()
