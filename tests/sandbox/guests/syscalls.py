# syscalls.py — the rest of the native seccomp filter's deny list, each with
# arguments that do nothing even if a call were let through (an invalid
# reboot magic, NULL images): keyctl, add_key, bpf, perf_event_open,
# userfaultfd, io_uring_setup, kexec_load, init_module, finit_module,
# delete_module, reboot, swapon, swapoff, personality, acct, quotactl.
# Each must fail with EPERM (counted in denied_syscalls). Native only: in
# gVisor its own kernel is the boundary. Env: none.
E = {errno.EPERM}
calls = [
    ("keyctl(GET_KEYRING_ID)", 250, (0, -3, 0)),
    ("add_key(user)", 248, (b"user", b"airlock", b"x", 1, -3)),
    ("bpf(BPF_PROG_LOAD, NULL)", 321, (5, None, 0)),
    ("perf_event_open(NULL)", 298, (None, 0, -1, -1, 0)),
    ("userfaultfd(0)", 323, (0,)),
    ("io_uring_setup(1, NULL)", 425, (1, None)),
    ("kexec_load(NULL)", 246, (0, 0, None, 0)),
    ("init_module(NULL)", 175, (None, 0, b"")),
    ("finit_module(-1)", 313, (-1, b"", 0)),
    ("delete_module(nonexistent)", 176, (b"airlock_none", 0)),
    ("reboot(bad magic)", 169, (0, 0, 0, None)),
    ("swapon(/tmp/none)", 167, (b"/tmp/none", 0)),
    ("swapoff(/tmp/none)", 168, (b"/tmp/none",)),
    ("personality(ADDR_NO_RANDOMIZE)", 135, (0x0040000,)),
    ("acct(NULL)", 163, (None,)),
]
for what, nr, args in calls:
    attempt(what, lambda nr=nr, args=args: syscall(nr, *args), E)
done()
