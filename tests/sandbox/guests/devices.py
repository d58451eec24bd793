# devices.py — devices: disks, physical memory, the kernel log, KVM, loop
# devices must not exist; mknod must fail; the minimal /dev must work
# (null, zero, full, random, urandom). Env: none.
GONE = ["/dev/sda", "/dev/vda", "/dev/xvda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port",
        "/dev/kmsg", "/dev/kvm", "/dev/loop0", "/dev/loop-control", "/dev/mapper/control",
        "/dev/cpu/0/msr", "/dev/hpet", "/dev/rtc0", "/dev/snd", "/dev/dri", "/dev/vhost-net",
        "/dev/watchdog", "/dev/uinput", "/dev/input"]
info("/dev: %s" % " ".join(sorted(os.listdir("/dev"))))
for p in GONE:
    if os.path.lexists(p):
        leak("device exists", p)
    attempt("open " + p, lambda p=p: os.close(os.open(p, os.O_RDONLY)) or "opened",
            {errno.ENOENT, errno.EACCES, errno.EPERM})
# mknod of a device needs CAP_MKNOD on Linux (and Landlock refuses
# make_char/make_block on native); gVisor would let an unprivileged task make
# device nodes in its own tmpfs and open those it emulates (e.g. /dev/fuse),
# so airlock's seccomp spec refuses device mknod there. Both: EPERM/EACCES.
for i, (what, mode, dev) in enumerate([("char 1:1 (mem)", 0o020600, (1, 1)),
                                       ("block 8:0 (sda)", 0o060600, (8, 0)),
                                       ("char 10:232 (kvm)", 0o020600, (10, 232)),
                                       ("char 10:229 (fuse)", 0o020600, (10, 229))]):
    node = "/tmp/dev-node-%d" % i
    attempt("mknod " + what, lambda mode=mode, dev=dev: os.mknod(node, mode, os.makedev(*dev)) or "made",
            {errno.EPERM, errno.EACCES})
try:
    with open("/dev/null", "r+b", buffering=0) as f:
        if f.write(b"x") != 1 or f.read(1) != b"":
            wrong("/dev/null misbehaves")
    with open("/dev/zero", "rb") as f:
        if f.read(16) != bytes(16):
            wrong("/dev/zero misbehaves")
    for p in ["/dev/urandom", "/dev/random"]:
        with open(p, "rb") as f:
            if len(f.read(16)) != 16:
                wrong(p + " misbehaves")
except OSError as e:
    wrong("the minimal /dev does not work: %s" % e)
try:
    with open("/dev/full", "wb", buffering=0) as f:
        f.write(b"x")
    wrong("/dev/full accepted a write")
except OSError as e:
    if e.errno != errno.ENOSPC:
        wrong("/dev/full: %s" % e)
done()
