# ro_grant.py — every way of changing a read-only grant mounted at /data.
# On the host the tree belongs to the sandbox's uid and is mode 777/666, so
# only the read-only grant can stop these. Env: none.
D = "/data"
RO = {errno.EROFS, errno.EACCES, errno.EPERM}

try:
    with open(D + "/file.txt") as f:
        if f.read() != "RO-CONTENT":
            wrong("/data/file.txt does not hold RO-CONTENT")
    if "emptydir" not in os.listdir(D):
        wrong("/data cannot be listed")
except OSError as e:
    wrong("cannot read the grant: %s" % e)


def create(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    return "created"


def reopen_for_write(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.close(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY))
    finally:
        os.close(fd)
    return "reopened for writing through /proc/self/fd"


F = D + "/file.txt"
attempt("create", lambda: create(D + "/new.txt"), RO)
attempt("create in a sub-directory", lambda: create(D + "/sub/new.txt"), RO)
for name, flags in [("O_WRONLY", os.O_WRONLY), ("O_RDWR", os.O_RDWR), ("O_APPEND", os.O_WRONLY | os.O_APPEND),
                    ("O_TRUNC", os.O_WRONLY | os.O_TRUNC)]:
    attempt("open " + name, lambda flags=flags: os.close(os.open(F, flags)), RO)
attempt("reopen through /proc/self/fd", lambda: reopen_for_write(F), RO)
attempt("unlink", lambda: os.unlink(F), RO)
attempt("rename", lambda: os.rename(F, D + "/moved.txt"), RO)
attempt("rename a directory", lambda: os.rename(D + "/sub", D + "/sub2"), RO)
attempt("mkdir", lambda: os.mkdir(D + "/newdir"), RO)
attempt("rmdir", lambda: os.rmdir(D + "/emptydir"), RO)
attempt("chmod", lambda: os.chmod(F, 0o777), RO)
attempt("chown", lambda: os.chown(F, 1000, 1000), RO)
attempt("utime", lambda: os.utime(F, (0, 0)), RO)
attempt("truncate", lambda: os.truncate(F, 0), RO)
attempt("symlink", lambda: os.symlink("/etc", D + "/link"), RO)
attempt("link", lambda: os.link(F, D + "/hard"), RO)
attempt("mkfifo", lambda: os.mkfifo(D + "/fifo"), RO)
attempt("setxattr", lambda: os.setxattr(F, "user.airlock", b"1"), RO | {errno.ENOTSUP})
done()
