# mount.py — change the sandbox's mounts: mount a tmpfs, remount the
# read-only /usr writable, detach /, chroot, pivot_root, the new mount API
# (open_tree, fsopen), and the setuid-root /usr/bin/mount. Native: seccomp
# answers EPERM; gVisor: no capability, EPERM (or ENOSYS). Env: none.
import subprocess

MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
MNT_DETACH = 2
E = {errno.EPERM} if NATIVE else {errno.EPERM, errno.ENOSYS, errno.EACCES}
os.makedirs("/tmp/mnt", exist_ok=True)

attempt("mount tmpfs on /tmp/mnt", lambda: syscall(165, b"none", b"/tmp/mnt", b"tmpfs", 0, None), E)
attempt("remount /usr read-write", lambda: syscall(165, None, b"/usr", None, MS_REMOUNT | MS_BIND, None), E)
attempt("bind / onto /tmp/mnt", lambda: syscall(165, b"/", b"/tmp/mnt", None, MS_BIND, None), E)
attempt("umount2(/, MNT_DETACH)", lambda: syscall(166, b"/", MNT_DETACH), E)
attempt("umount2(/proc, MNT_DETACH)", lambda: syscall(166, b"/proc", MNT_DETACH), E)
attempt("chroot(/tmp)", lambda: syscall(161, b"/tmp"), E)
attempt("pivot_root(/tmp, /tmp/mnt)", lambda: syscall(155, b"/tmp", b"/tmp/mnt"), E if NATIVE else E | {errno.EINVAL})
attempt("open_tree(/)", lambda: syscall(428, -100, b"/", 1), E | {errno.ENOSYS})
attempt("fsopen(tmpfs)", lambda: syscall(430, b"tmpfs", 0), E | {errno.ENOSYS})
p = subprocess.run(["/usr/bin/mount", "-t", "tmpfs", "none", "/tmp/mnt"], capture_output=True, text=True)
if p.returncode == 0:
    leak("/usr/bin/mount -t tmpfs worked", p.stdout)
else:
    denied("/usr/bin/mount -t tmpfs (exit %d: %s)" % (p.returncode, " ".join(p.stderr.split())[:80]), errno.EPERM)
done()
