/*
 * seccomp.c — the native backend's seccomp-bpf filter (libseccomp) and the
 * parent's side of user notification.
 *
 * Two halves. seccomp_prepare runs in the parent (native.c runs it after
 * clone, while the sandbox's init builds the new root): libseccomp
 * builds the filter and compiles it to BPF, which is exported (through a
 * memfd: libseccomp 2.5 has no in-memory export) into the plan's
 * native_seccomp_filter; seccomp_send passes that to the program's process
 * over the sync socket, where seccomp_receive reads it into the process's
 * own copy of the plan. seccomp_install runs in the program's process just
 * before execve and hands that BPF to the kernel with one seccomp(2) call.
 * The split is what keeps the child from allocating: libseccomp mallocs
 * throughout, and the child is a clone of a possibly multi-threaded
 * embedder — an allocator lock another thread held at clone time is held
 * forever in the child's copy, so a malloc there hangs the run until its
 * timeout.
 *
 * The filter is a deny-list: the default action is ALLOW, and it refuses the
 * kernel interfaces an unprivileged program never needs but kernel exploits
 * and sandbox escapes live on (namespaces, mounts, ptrace, keyrings, bpf,
 * perf, userfaultfd, io_uring, module and kexec loading, clock setting, raw
 * and exotic sockets, TIOCSTI, personality flags). A refused call either
 * fails with EPERM in the program (use_notify false), or goes to the parent
 * as a user notification that seccomp_answer answers with EPERM and counts
 * (use_notify true), so the result can report how many calls were refused.
 *
 * Invariants:
 *  - only the native ABI is filtered; a syscall made through any other ABI
 *    (i386 via int 0x80 on x86_64, x32, arm32 compat on arm64) kills the
 *    process. The deny-list is written in native numbers, so another ABI's
 *    table would walk around it; i386 additionally multiplexes every socket
 *    call through socketcall(2), whose arguments sit in memory where BPF
 *    cannot read them, so "same rules for i386" could not filter families
 *    at all. No 64-bit program the sandbox runs uses those entries.
 *  - every argument comparison is made on the bits the kernel actually reads:
 *    int and unsigned int arguments are compared through a 32-bit mask (or
 *    with upper bits treated as a denial), because the kernel ignores the
 *    upper half of the register and a filter that looked at all 64 bits
 *    would let 0x1_0000_0000|value through.
 *  - a syscall name this libseccomp does not know is skipped (it may be newer
 *    than the library), except for the few recent ones listed with their
 *    number, which is the same on every architecture since 424.
 *  - seccomp_install (and seccomp_receive before it) does nothing but
 *    system calls on the plan's memory: no malloc, no locks, no libseccomp.
 *    It refuses a filter that was never prepared or not received whole
 *    (len 0) rather than run the program unfiltered.
 *  - libseccomp caches what the kernel supports in process-wide variables
 *    it fills lazily and without locks. seccomp_prepare serialises its use
 *    of libseccomp (libseccomp_lock) and fills the cache first; native.c
 *    calls seccomp_answer only after a seccomp_prepare in the same thread,
 *    so by then the cache is only read. Concurrent al_exec calls never race
 *    on it — a torn cache could make notification rules fail, or make
 *    seccomp_answer report a live listener as gone.
 *  - the listener fd never reaches the program: the kernel opens it
 *    O_CLOEXEC and the caller closes it before execve. Holding it, a program
 *    could answer its own notifications (SECCOMP_USER_NOTIF_FLAG_CONTINUE
 *    would even let the denied call run).
 *  - seccomp_answer never blocks (the kernel's RECV sleeps until a
 *    notification arrives, so it polls first) and never lets a denied call
 *    run: the only answer it sends is -EPERM.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "native.h"

#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
/* CLONE_BACKWARDS2: clone's flags are its second argument there. */
#error "seccomp.c filters clone's flags as argument 0; adapt it for this architecture"
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

/* Refused whatever their arguments (a name this libseccomp does not know
 * and recent_syscall_number does not either is skipped). socket, socketpair,
 * clone, ioctl and personality are refused for some arguments only, and
 * clone3 fails with ENOSYS; see the add_*_rules below. */
const char *const seccomp_denied_syscalls[] = {
    /* reading or steering other processes */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    /* the filesystem view: mounts and roots (the sandbox's is final) */
    "mount", "umount2", "move_mount", "open_tree", "open_tree_attr", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "pivot_root", "chroot",
    "name_to_handle_at", "open_by_handle_at",
    /* new namespaces (user namespaces expose root-only kernel code) */
    "unshare", "setns",
    /* large kernel attack surfaces with a history of exploits */
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "uselib",
    /* the machine: kernels, modules, power, swap, accounting, quotas, logs */
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "quotactl_fd", "syslog", "iopl", "ioperm", "lookup_dcookie", "vhangup",
    /* the clock every other process reads */
    "clock_settime", "settimeofday", "adjtimex", "clock_adjtime",
    NULL,
};

/* Numbers for deny-list names newer than Debian's libseccomp. Only numbers
 * from 424 on, which are the same on every architecture but alpha. */
static int recent_syscall_number(const char *name) {
    if (strcmp(name, "open_tree_attr") == 0)
        return 467;
    return -1;
}

/* libseccomp returns -errno; keep it in errno for seccomp_prepare's message. */
static bool fail(int rc, const char *what, const char **step) {
    errno = rc < 0 ? -rc : EINVAL;
    *step = what;
    return false;
}

/* One argument comparison. (libseccomp's SCMP_A* macros leave datum_b out
 * for two-operand forms, which clang's -Wmissing-field-initializers flags.) */
static struct scmp_arg_cmp cmp_arg(unsigned arg, enum scmp_compare op, uint64_t a, uint64_t b) {
    return (struct scmp_arg_cmp){.arg = arg, .op = op, .datum_a = a, .datum_b = b};
}

static bool add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned ncmp,
                     const struct scmp_arg_cmp *cmp, const char **step) {
    int rc = seccomp_rule_add_array(ctx, action, nr, ncmp, cmp);
    return rc == 0 || fail(rc, "seccomp rule", step);
}

/* The unconditional part of the deny-list. */
static bool add_deny_list(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    for (size_t i = 0; seccomp_denied_syscalls[i]; i++) {
        int nr = seccomp_syscall_resolve_name(seccomp_denied_syscalls[i]);
        if (nr == __NR_SCMP_ERROR)
            nr = recent_syscall_number(seccomp_denied_syscalls[i]);
        /* Unknown, or a pseudo number: the call does not exist on this ABI. */
        if (nr < 0)
            continue;
        if (!add_rule(ctx, deny, nr, 0, NULL, step))
            return false;
    }
    return true;
}

/* socket(2) and socketpair(2): only AF_UNIX, AF_INET and AF_INET6. Every
 * other family (netlink, packet, vsock, bluetooth, rds, tipc, ...) makes the
 * kernel load and run a protocol module an unprivileged program has no need
 * for — the classic route to a kernel exploit from a sandbox. socketpair is
 * covered too: it creates the family's sockets before failing. The family is
 * an int: the GT rule compares all 64 bits, so any upper bit counts as a
 * denial and the EQ rules only need to cover 0..10. */
static bool add_family_rules(scmp_filter_ctx ctx, uint32_t deny, const char *name,
                             const char **step) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr < 0)
        return true;
    struct scmp_arg_cmp above = cmp_arg(0, SCMP_CMP_GT, AF_INET6, 0);
    if (!add_rule(ctx, deny, nr, 1, &above, step))
        return false;
    for (uint64_t family = 0; family < AF_INET6; family++) {
        if (family == AF_UNIX || family == AF_INET)
            continue;
        struct scmp_arg_cmp eq = cmp_arg(0, SCMP_CMP_EQ, family, 0);
        if (!add_rule(ctx, deny, nr, 1, &eq, step))
            return false;
    }
    return true;
}

/* socket(AF_INET or AF_INET6, SOCK_RAW or SOCK_PACKET): raw packets let a
 * program forge any source address or protocol on the sandbox's network.
 * The type's low 4 bits are the type (SOCK_TYPE_MASK); the rest are
 * SOCK_NONBLOCK/SOCK_CLOEXEC, which must not hide it. */
static bool add_raw_socket_rules(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    static const uint64_t families[] = {AF_INET, AF_INET6};
    static const uint64_t types[] = {SOCK_RAW, SOCK_PACKET};
    int nr = seccomp_syscall_resolve_name("socket");
    if (nr < 0)
        return true;
    for (size_t f = 0; f < 2; f++) {
        for (size_t t = 0; t < 2; t++) {
            struct scmp_arg_cmp cmp[2] = {
                cmp_arg(0, SCMP_CMP_EQ, families[f], 0),
                cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xf, types[t]),
            };
            if (!add_rule(ctx, deny, nr, 2, cmp, step))
                return false;
        }
    }
    return true;
}

/* clone(2) with any namespace flag: the same doors as unshare(2). One rule
 * per flag, since a rule can test an argument only once. (CLONE_NEWTIME
 * shares its bit with the exit signal for clone(2): valid signals never set
 * it.) clone3(2) passes its flags in memory where BPF cannot see them, so it
 * fails with ENOSYS, uncounted: glibc then falls back to clone(2). */
static bool add_clone_rules(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    static const uint64_t flags[] = {
        CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
        CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
    };
    int nr = seccomp_syscall_resolve_name("clone");
    if (nr >= 0) {
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
            struct scmp_arg_cmp cmp = cmp_arg(0, SCMP_CMP_MASKED_EQ, flags[i], flags[i]);
            if (!add_rule(ctx, deny, nr, 1, &cmp, step))
                return false;
        }
    }
    nr = seccomp_syscall_resolve_name("clone3");
    if (nr >= 0 && !add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL, step))
        return false;
    return true;
}

/* ioctl TIOCSTI pushes bytes into a terminal's input queue (typed as if by
 * the user, after the sandbox exits: CVE-2017-5226); TIOCLINUX can do the
 * same through the console's selection. The request is an unsigned int. */
static bool add_ioctl_rules(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    static const uint64_t requests[] = {TIOCSTI, TIOCLINUX};
    int nr = seccomp_syscall_resolve_name("ioctl");
    if (nr < 0)
        return true;
    for (size_t i = 0; i < 2; i++) {
        struct scmp_arg_cmp cmp = cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, requests[i]);
        if (!add_rule(ctx, deny, nr, 1, &cmp, step))
            return false;
    }
    return true;
}

/* personality(2): only the values Docker's profile allows — PER_LINUX (0),
 * PER_LINUX32 (8), UNAME26 (0x20000), both (0x20008), and the query
 * 0xffffffff. Everything else (ADDR_NO_RANDOMIZE turns off ASLR for what the
 * program executes next, READ_IMPLIES_EXEC makes its data executable,
 * MMAP_PAGE_ZERO maps page 0) is refused.
 *
 * The kernel reads the low 32 bits. libseccomp cannot test one argument
 * twice in a rule, so "not one of five values" is written as a union of
 * masked equalities, none of which contains an allowed value. With O the 30
 * bits other than 3 and 17 (those two are the allowed flag bits):
 *  - if some bit of O is set and some bit of O is clear, then going round O
 *    in a circle there is a set bit followed by a clear one: 30 rules
 *    "bit b set and the next bit of O clear";
 *  - if every bit of O is set, only 0xffffffff is allowed: 2 rules "O all
 *    set and bit 3 clear", "O all set and bit 17 clear".
 * Values with no bit of O set are exactly the four allowed flag values. */
static bool add_personality_rules(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    const uint32_t allowed_bits = PER_LINUX32 | UNAME26; /* bits 3 and 17 */
    const uint32_t others = ~allowed_bits;
    int nr = seccomp_syscall_resolve_name("personality");
    if (nr < 0)
        return true;
    int bits[32], nbits = 0;
    for (int b = 0; b < 32; b++)
        if (others & (UINT32_C(1) << b))
            bits[nbits++] = b;
    for (int i = 0; i < nbits; i++) {
        uint64_t set = UINT64_C(1) << bits[i];
        uint64_t clear = UINT64_C(1) << bits[(i + 1) % nbits];
        struct scmp_arg_cmp cmp = cmp_arg(0, SCMP_CMP_MASKED_EQ, set | clear, set);
        if (!add_rule(ctx, deny, nr, 1, &cmp, step))
            return false;
    }
    static const uint32_t one_clear[] = {PER_LINUX32, UNAME26};
    for (size_t i = 0; i < 2; i++) {
        uint64_t mask = others | one_clear[i];
        struct scmp_arg_cmp cmp = cmp_arg(0, SCMP_CMP_MASKED_EQ, mask, others);
        if (!add_rule(ctx, deny, nr, 1, &cmp, step))
            return false;
    }
    return true;
}

static bool build_filter(scmp_filter_ctx ctx, uint32_t deny, const char **step) {
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc != 0)
        return fail(rc, "seccomp bad-arch action", step);
    /* Real errnos from libseccomp instead of ECANCELED. */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
    if (rc != 0)
        return fail(rc, "seccomp attribute", step);
    /* A binary search over syscall numbers instead of a linear list: the
     * filter runs on every syscall the program makes. Optional. */
    (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    return add_deny_list(ctx, deny, step) && add_family_rules(ctx, deny, "socket", step) &&
           add_family_rules(ctx, deny, "socketpair", step) &&
           add_raw_socket_rules(ctx, deny, step) && add_clone_rules(ctx, deny, step) &&
           add_ioctl_rules(ctx, deny, step) && add_personality_rules(ctx, deny, step);
}

/* ---- the parent: building the filter ---------------------------------------- */

/* Serialises libseccomp in this process, and records whether its lazily
 * filled kernel-support cache has been filled yet (under the lock). */
static pthread_mutex_t libseccomp_lock = PTHREAD_MUTEX_INITIALIZER;
static bool libseccomp_warm;

/* Fill libseccomp's cache once, under libseccomp_lock: the API level probe
 * checks every flag and action the filter uses, and a notification buffer
 * pair sizes the cache seccomp_answer's allocations read. After this, the
 * other threads' seccomp_answer only read it. */
static void warm_libseccomp(void) {
    if (libseccomp_warm)
        return;
    if (seccomp_api_get() >= 5) {
        struct seccomp_notif *req = NULL;
        struct seccomp_notif_resp *resp = NULL;
        if (seccomp_notify_alloc(&req, &resp) == 0)
            seccomp_notify_free(req, resp);
    }
    libseccomp_warm = true;
}

/* The compiled program, read back from the memfd libseccomp wrote it to.
 * Refused unless it is a whole number of instructions the kernel accepts
 * (at most BPF_MAXINSNS): a truncated program would be a different filter. */
static bool read_program(int fd, native_seccomp_filter *f, al_error *err) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return sandbox_error_errno(err, "seccomp: fstat of the exported filter");
    size_t size = (size_t)st.st_size;
    if (st.st_size <= 0 || size % sizeof(struct sock_filter) != 0)
        return sandbox_error(err, AL_ERR_SYSTEM, "seccomp: the exported filter has %lld bytes, "
                             "not whole BPF instructions", (long long)st.st_size);
    if (size > sizeof f->code)
        return sandbox_error(err, AL_ERR_LIMIT, "seccomp: the filter has %zu instructions, "
                             "more than the kernel's %d", size / sizeof(struct sock_filter),
                             BPF_MAXINSNS);
    size_t done = 0;
    unsigned char *dst = (unsigned char *)f->code;
    while (done < size) {
        ssize_t n = pread(fd, dst + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return sandbox_error_errno(err, "seccomp: read the exported filter");
        }
        done += (size_t)n;
    }
    f->len = (unsigned short)(size / sizeof(struct sock_filter));
    return true;
}

static bool export_program(scmp_filter_ctx ctx, native_seccomp_filter *f, al_error *err) {
    int fd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return sandbox_error_errno(err, "seccomp: memfd_create");
    int rc = seccomp_export_bpf(ctx, fd);
    bool ok;
    if (rc != 0) {
        errno = rc < 0 ? -rc : EINVAL;
        ok = sandbox_error_errno(err, "seccomp_export_bpf");
    } else {
        ok = read_program(fd, f, err);
    }
    close(fd);
    return ok;
}

/* Build and compile under libseccomp_lock (see the invariants). */
static bool build_locked(native_seccomp_filter *f, bool use_notify, al_error *err) {
    warm_libseccomp();
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        return sandbox_error(err, AL_ERR_NOMEM, "seccomp_init failed");
    uint32_t deny = use_notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
    const char *step = "";
    bool ok = build_filter(ctx, deny, &step);
    if (!ok)
        sandbox_error_errno(err, "seccomp: %s", step);
    else
        ok = export_program(ctx, f, err);
    seccomp_release(ctx);
    return ok;
}

bool seccomp_prepare(native_seccomp_filter *f, bool use_notify, al_error *err) {
    f->len = 0;
    f->use_notify = use_notify;
    pthread_mutex_lock(&libseccomp_lock);
    bool ok = build_locked(f, use_notify, err);
    pthread_mutex_unlock(&libseccomp_lock);
    if (!ok)
        f->len = 0;
    return ok;
}

/* ---- handing it over ---------------------------------------------------------- */

/* The filter on the wire (parent -> program process, over native_plan's
 * sync socket): this header, then len instructions. The parent is trusted;
 * the checks only make sure a broken transfer is refused, never loaded. */
typedef struct seccomp_wire {
    uint32_t magic;
    uint16_t len;
    uint8_t use_notify;
    uint8_t pad;
} seccomp_wire;
#define SECCOMP_WIRE_MAGIC 0x53434d50u /* "SCMP" */

static bool send_all(int fd, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool seccomp_send(int fd, const native_seccomp_filter *f) {
    if (f->len == 0 || f->len > BPF_MAXINSNS) {
        errno = EINVAL;
        return false;
    }
    seccomp_wire w = {.magic = SECCOMP_WIRE_MAGIC, .len = f->len, .use_notify = f->use_notify};
    return send_all(fd, &w, sizeof w) && send_all(fd, f->code, f->len * sizeof f->code[0]);
}

/* Exactly n bytes, or false (EOF: the parent gave up, or an error). */
static bool recv_all(int fd, void *bytes, size_t n) {
    unsigned char *p = bytes;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EPIPE;
            return false;
        }
        p += r;
        n -= (size_t)r;
    }
    return true;
}

bool seccomp_receive(int fd, native_seccomp_filter *f, const char **step) {
    seccomp_wire w;
    f->len = 0;
    *step = "receive the seccomp filter";
    if (!recv_all(fd, &w, sizeof w)) return false;
    if (w.magic != SECCOMP_WIRE_MAGIC || w.len == 0 || w.len > BPF_MAXINSNS) {
        errno = EPROTO;
        return false;
    }
    if (!recv_all(fd, f->code, w.len * sizeof f->code[0])) return false;
    f->use_notify = w.use_notify != 0;
    f->len = w.len;
    return true;
}

/* ---- the child: loading it ------------------------------------------------------ */

bool seccomp_install(const native_seccomp_filter *f, int *notify_fd, const char **step) {
    *notify_fd = -1;
    if (f->len == 0 || f->len > BPF_MAXINSNS) {
        /* Never run the program without the filter it was promised. */
        errno = EINVAL;
        *step = "seccomp filter not prepared";
        return false;
    }
    /* The kernel copies the program and never writes through the pointer;
     * sock_fprog just has no const. */
    struct sock_fprog prog = {.len = f->len, .filter = (struct sock_filter *)f->code};
    /* No TSYNC: this process has one thread. Without no_new_privs (or
     * CAP_SYS_ADMIN) the kernel refuses the filter; caps_drop_all set it.
     * The listener NEW_LISTENER asks for is opened O_CLOEXEC. */
    unsigned long flags = f->use_notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    if (rc < 0) {
        *step = "seccomp(SECCOMP_SET_MODE_FILTER)";
        return false;
    }
    /* With NEW_LISTENER success is the listener (a filter that loaded
     * without one is impossible: the kernel fails the whole call). */
    if (f->use_notify)
        *notify_fd = (int)rc;
    return true;
}

/* ---- the parent: answering notifications ------------------------------------ */

/* Send the answer, retrying when a signal interrupts the ioctl: a received
 * notification that is never answered leaves the program blocked for good. */
static int respond_eperm(int notify_fd, struct seccomp_notif_resp *resp) {
    int rc;
    do {
        errno = 0;
        rc = seccomp_notify_respond(notify_fd, resp);
    } while (rc != 0 && errno == EINTR);
    return rc;
}

bool seccomp_answer(int notify_fd, uint64_t *denied) {
    /* The RECV ioctl sleeps until a notification arrives; look first. */
    struct pollfd p = {.fd = notify_fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    if (n < 0)
        return errno == EINTR;
    if (n == 0)
        return true;
    if (!(p.revents & POLLIN))
        /* POLLHUP: no process uses the filter any more; POLLNVAL: bad fd. */
        return (p.revents & (POLLHUP | POLLERR | POLLNVAL)) == 0;

    struct seccomp_notif *req = NULL;
    struct seccomp_notif_resp *resp = NULL;
    /* Fresh zeroed buffers each time: the kernel refuses a RECV buffer that
     * is not zero, and sizes them by its own struct sizes. */
    if (seccomp_notify_alloc(&req, &resp) != 0)
        return false; /* out of memory: this parent can no longer serve it */
    bool alive = true;
    errno = 0;
    if (seccomp_notify_receive(notify_fd, req) != 0) {
        /* ENOENT: the caller got a fatal signal between poll and RECV, its
         * notification is gone. EINTR: try again on the next poll. Anything
         * else means this is not a usable listener. */
        alive = errno == ENOENT || errno == EINTR;
    } else {
        /* No seccomp_notify_id_valid check: that guards supervisors that
         * read the caller's memory or act on its pid between RECV and SEND
         * (the pid may be reused). This one looks at nothing and only ever
         * refuses; SEND itself fails with ENOENT if the caller is gone. */
        resp->id = req->id;
        resp->val = 0;
        resp->error = -EPERM;
        resp->flags = 0;
        if (respond_eperm(notify_fd, resp) == 0) {
            /* Counted when answered, so a call interrupted by a signal and
             * restarted (a second notification) counts once. */
            if (denied)
                (*denied)++;
        } else {
            alive = errno == ENOENT;
        }
    }
    seccomp_notify_free(req, resp);
    return alive;
}

/* ---- probe ------------------------------------------------------------------ */

/* A filter: syscall nr gets `action`, everything else is allowed. Written
 * as raw BPF so the probe does not depend on libseccomp's process state and
 * stays async-signal-safe in a child of a threaded parent. No arch check:
 * the probe process makes no other-ABI calls and exits at once. */
static long load_filter(int nr, uint32_t action, unsigned flags) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static bool wait_child(pid_t pid, int *status) {
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR)
            return false;
    }
    return true;
}

/* In the probe process: a notified getpgid in a grandchild, answered here
 * with EPERM. True if the grandchild saw exactly that. */
static bool probe_notify(void) {
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
        return false;
    union {
        struct seccomp_notif notif;
        unsigned char bytes[512];
    } req = {0};
    union {
        struct seccomp_notif_resp resp;
        unsigned char bytes[128];
    } resp = {0};
    if (sizes.seccomp_notif > sizeof req || sizes.seccomp_notif_resp > sizeof resp)
        return false;
    long fd = load_filter(SYS_getpgid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER);
    if (fd < 0)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        long r = syscall(SYS_getpgid, 0);
        _exit(r == -1 && errno == EPERM ? 0 : 1);
    }
    bool answered = false;
    struct pollfd p = {.fd = (int)fd, .events = POLLIN};
    if (poll(&p, 1, 2000) == 1 && (p.revents & POLLIN) &&
        ioctl((int)fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        resp.resp.id = req.notif.id;
        resp.resp.error = -EPERM;
        answered = ioctl((int)fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
    }
    if (!answered)
        kill(pid, SIGKILL);
    int status;
    return wait_child(pid, &status) && answered && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

enum { PROBE_RAN = 0x10, PROBE_FILTER = 0x1, PROBE_NOTIFY = 0x2 };

static int probe_child(void) {
    int result = PROBE_RAN;
    /* The caller may ignore SIGCHLD, which would reap the grandchild. */
    signal(SIGCHLD, SIG_DFL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return result;
    if (load_filter(SYS_getppid, SECCOMP_RET_ERRNO | EPERM, 0) != 0)
        return result;
    errno = 0;
    if (syscall(SYS_getppid) != -1 || errno != EPERM)
        return result;
    result |= PROBE_FILTER;
    if (probe_notify())
        result |= PROBE_NOTIFY;
    return result;
}

bool seccomp_probe(bool *notify) {
    *notify = false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0)
        _exit(probe_child());
    int status;
    if (!wait_child(pid, &status) || !WIFEXITED(status) || !(WEXITSTATUS(status) & PROBE_RAN))
        return false;
    *notify = (WEXITSTATUS(status) & PROBE_NOTIFY) != 0;
    return (WEXITSTATUS(status) & PROBE_FILTER) != 0;
}
