# write_outside.py — create and modify files outside the workspace: /usr,
# /usr/bin, /etc, /, /proc and a host directory that was not granted
# (NOT_GRANTED, mode 777 on the host so only the sandbox hides it). Opens for
# writing never write a byte (a hole must not damage the host). The private
# /tmp must be writable (precondition). Env: UNIQUE (a file name), NOT_GRANTED.
U = os.environ["UNIQUE"]
NG = os.environ["NOT_GRANTED"]
REFUSED = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT, errno.ETXTBSY}


def create(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"escaped\n")
    os.close(fd)
    return "created"


def open_for_write(path, flags):
    os.close(os.open(path, flags))
    return "opened for writing"


try:
    create("/tmp/" + U)
    with open("/tmp/" + U) as f:
        if f.read() != "escaped\n":
            wrong("the private /tmp does not read back")
except OSError as e:
    wrong("cannot write the private /tmp: %s" % e)

for d in ["/usr", "/usr/bin", "/usr/lib", "/etc", "", "/proc", NG, "/var", "/home"]:
    attempt("create %s/%s" % (d, U), lambda d=d: create("%s/%s" % (d, U)), REFUSED)
    attempt("mkdir %s/%s.d" % (d, U), lambda d=d: os.mkdir("%s/%s.d" % (d, U)), REFUSED | {errno.EEXIST})
for p, flags in [("/usr/bin/env", os.O_WRONLY), ("/usr/bin/env", os.O_RDWR | os.O_APPEND),
                 ("/etc/passwd", os.O_WRONLY | os.O_APPEND), ("/etc/hosts", os.O_WRONLY)]:
    attempt("open %s for writing" % p, lambda p=p, flags=flags: open_for_write(p, flags), REFUSED)
attempt("chmod /usr/bin/env", lambda: os.chmod("/usr/bin/env", 0o4777), REFUSED)
attempt("rename /usr/bin/env", lambda: os.rename("/usr/bin/env", "/usr/bin/" + U), REFUSED)
attempt("symlink /etc/" + U, lambda: os.symlink("/tmp", "/etc/" + U), REFUSED)
done()
