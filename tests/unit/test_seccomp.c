/*
 * test_seccomp.c — unit tests of the native backend's last steps before
 * execve: the seccomp filter and its user-notification answers (seccomp.c),
 * the capability drop (caps.c) and the rlimits (rlimit.c).
 *
 * Everything that installs a filter, drops capabilities or lowers a limit
 * runs in a forked child, so this process stays unrestricted (the last test
 * checks that). A child reports a failed check on stderr and exits 1; every
 * child ends with _exit, because LeakSanitizer's exit-time scan ptraces the
 * process, which the filter refuses.
 *
 * The filters are compiled once in this process (seccomp_prepare, as
 * native.c does before clone) and only loaded in the children
 * (seccomp_install, as the sandbox's program process does). Two tests check
 * that loading never allocates: with the sanitizer's allocator hooks where
 * the build has them, and by loading in raw clones of this process while
 * another thread allocates (a child that needed an allocator lock that
 * thread held at clone time would hang).
 *
 * The checks are chosen so that the filter, not a missing capability, is
 * what refuses: where the kernel would also say EPERM for lack of a
 * capability, the notify test counts the call, and a count only moves when
 * the filter matched. Calls that would do something if the filter let them
 * through are made with arguments that make them fail harmlessly (NULL
 * pointers, bad sizes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "native.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* ---- running checks in a child ------------------------------------------- */

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond))                                                                   \
            child_fail(__LINE__, #cond, "");                                           \
    } while (0)
#define CHECK_WHAT(cond, what)                                                         \
    do {                                                                               \
        if (!(cond))                                                                   \
            child_fail(__LINE__, #cond, what);                                         \
    } while (0)
/* r is the return of a call that must fail with err. */
#define CHECK_ERRNO(r, err) CHECK_WHAT((r) == -1 && errno == (err), strerror(errno))

static _Noreturn void child_fail(int line, const char *cond, const char *what) {
    int saved = errno;
    fprintf(stderr, "test_seccomp.c:%d: child check failed: %s %s (errno %d)\n", line, cond,
            what, saved);
    _exit(1);
}

/* Fork, run fn in the child, return its wait status. */
static int run_child(void (*fn)(void *), void *arg) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void expect_child_ok(void (*fn)(void *), void *arg) {
    int status = run_child(fn, arg);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A crash must not leave a core file behind (SIGSYS, SIGXCPU dump core). */
static void no_core_dumps(void) {
    struct rlimit zero = {0, 0};
    setrlimit(RLIMIT_CORE, &zero);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Not root: a user namespace gives the capabilities caps_drop_all needs
 * to empty the bounding set, as in the native backend. */
static void gain_caps_if_unprivileged(void) {
    if (geteuid() != 0)
        CHECK_WHAT(unshare(CLONE_NEWUSER) == 0, strerror(errno));
}

/* The two filters, compiled in this (parent) process by the group setup
 * and inherited by every forked child. */
static struct {
    native_seccomp_filter deny;   /* denied calls fail with EPERM */
    native_seccomp_filter notify; /* denied calls go to a listener */
} filters;

static const native_seccomp_filter *filter_for(bool notify) {
    return notify ? &filters.notify : &filters.deny;
}

/* In a child: what the program's process does last before execve. */
static int sandbox_self(bool notify) {
    const char *step = "";
    no_core_dumps();
    gain_caps_if_unprivileged();
    CHECK_WHAT(caps_drop_all(&step), step);
    int fd = 12345;
    CHECK_WHAT(seccomp_install(filter_for(notify), &fd, &step), step);
    CHECK(notify ? fd >= 0 : fd == -1);
    return fd;
}

/* The number seccomp.c uses for a name (open_tree_attr is newer than
 * Debian's libseccomp; its number is the same on every architecture). */
static long denied_nr(const char *name) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR && strcmp(name, "open_tree_attr") == 0)
        return 467;
    return nr;
}

static size_t denied_count(void) {
    size_t n = 0;
    for (size_t i = 0; seccomp_denied_syscalls[i]; i++)
        n += denied_nr(seccomp_denied_syscalls[i]) >= 0;
    return n;
}

/* ---- fd passing (the listener goes to the parent like in native.c) --------- */

static bool send_fd(int sock, int fd) {
    char byte = 'F';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr header;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &msg, 0) == 1;
}

static int recv_fd(int sock) {
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr header;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* ---- calls the filter refuses ------------------------------------------------ */

/* Every name of the deny-list, all arguments 0 (NULL pointers, fd 0, no
 * flags: harmless if one got through). Returns how many were made; each
 * must fail with EPERM. */
static unsigned call_deny_list(void) {
    unsigned made = 0;
    for (size_t i = 0; seccomp_denied_syscalls[i]; i++) {
        long nr = denied_nr(seccomp_denied_syscalls[i]);
        if (nr < 0)
            continue;
        errno = 0;
        long r = syscall(nr, 0, 0, 0, 0, 0, 0);
        CHECK_WHAT(r == -1 && errno == EPERM, seccomp_denied_syscalls[i]);
        made++;
    }
    return made;
}

/* clone(2) as the kernel sees it, with a harmless fallback in case the
 * filter let it through: the new process exits at once. */
static long raw_clone(unsigned long flags) {
    long r = syscall(SYS_clone, flags, 0, 0, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0)
        waitpid((pid_t)r, NULL, __WALL);
    return r;
}

static const unsigned long namespace_flags[] = {
    CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
};
#define NAMESPACE_FLAGS (sizeof namespace_flags / sizeof namespace_flags[0])

/* One call the filter must refuse with EPERM, counted in `made`. */
#define DENIED(call)                                                                   \
    do {                                                                               \
        CHECK_ERRNO(call, EPERM);                                                      \
        made++;                                                                        \
    } while (0)

/* The conditional rules: each call must fail with EPERM. Returns how many. */
static unsigned call_conditional_denials(void) {
    unsigned made = 0;
    char c = 'x';
    /* a pipe, not a terminal: TIOCSTI would be ENOTTY if it got through */
    int tty[2];
    CHECK(pipe(tty) == 0);
    /* socket families other than unix/inet/inet6 */
    DENIED(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
    DENIED(socket(AF_PACKET, SOCK_RAW, 0));
    DENIED(socket(AF_VSOCK, SOCK_STREAM, 0));
    DENIED(socket(AF_UNSPEC, SOCK_STREAM, 0));
    DENIED(socketpair(AF_NETLINK, SOCK_RAW, 0, (int[2]){0, 0}));
    /* upper bits of the int family are ignored by the kernel: refused */
    DENIED(syscall(SYS_socket, (1UL << 32) | AF_NETLINK, SOCK_RAW, 0));
    /* raw and packet sockets of inet and inet6, flags do not hide the type */
    DENIED(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
    DENIED(socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 58));
    DENIED(socket(AF_INET, SOCK_PACKET, 0));
    /* namespaces through clone: one rule per flag */
    for (size_t i = 0; i < NAMESPACE_FLAGS; i++) {
        unsigned long sig = namespace_flags[i] == CLONE_NEWTIME ? 0 : SIGCHLD;
        DENIED(raw_clone(namespace_flags[i] | sig));
    }
    /* terminal injection, also with upper bits in the request */
    DENIED(ioctl(tty[0], TIOCSTI, &c));
    DENIED(syscall(SYS_ioctl, tty[0], (1UL << 32) | TIOCSTI, &c));
    DENIED(ioctl(tty[0], TIOCLINUX, &c));
    close(tty[0]);
    close(tty[1]);
    /* personality flags */
    DENIED(syscall(SYS_personality, ADDR_NO_RANDOMIZE));
    DENIED(syscall(SYS_personality, READ_IMPLIES_EXEC));
    /* the brief's three, with arguments that fail harmlessly otherwise */
    DENIED(unshare(CLONE_NEWUSER));
    DENIED(mount("none", NULL, "tmpfs", 0, NULL));
    DENIED(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    return made;
}
#define CONDITIONAL_DENIALS (17u + NAMESPACE_FLAGS)

static void *thread_main(void *arg) {
    return arg;
}

/* Calls the filter must let through (clone3 fails with ENOSYS, uncounted). */
static void call_allowed(void) {
    CHECK(syscall(SYS_getpid) == getpid());
    /* clone3's flags are out of BPF's reach: ENOSYS, so glibc uses clone */
    CHECK_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, thread_main, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(7);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 7);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_WHAT(fd >= 0, strerror(errno));
    close(fd);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CHECK_WHAT(fd >= 0, strerror(errno));
    close(fd);
    fd = socket(AF_INET6, SOCK_STREAM, 0);
    CHECK_WHAT(fd >= 0 || errno == EAFNOSUPPORT, strerror(errno));
    if (fd >= 0)
        close(fd);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_WHAT(fd >= 0, strerror(errno));
    close(fd);
    int pair[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) == 0);
    close(pair[0]);
    close(pair[1]);

    CHECK(syscall(SYS_personality, 0xffffffffUL) >= 0);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    int avail = -1;
    CHECK(ioctl(pipefd[0], FIONREAD, &avail) == 0 && avail == 0);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_deny_list_names(void **state) {
    size_t n = 0;
    bool ptrace_seen = false, mount_seen = false, bpf_seen = false;
    for (; seccomp_denied_syscalls[n]; n++) {
        const char *name = seccomp_denied_syscalls[n];
        ptrace_seen |= strcmp(name, "ptrace") == 0;
        mount_seen |= strcmp(name, "mount") == 0;
        bpf_seen |= strcmp(name, "bpf") == 0;
        /* every name means a real syscall of this ABI */
        assert_true(denied_nr(name) >= 0);
    }
    assert_true(n >= 50);
    assert_true(ptrace_seen && mount_seen && bpf_seen);
    assert_int_equal(denied_count(), n);
}

static void filter_errno_child(void *arg) {
    sandbox_self(false);
    CHECK(call_deny_list() == denied_count());
    CHECK(call_conditional_denials() == CONDITIONAL_DENIALS);
    call_allowed();
}

static void test_filter_errno(void **state) {
    expect_child_ok(filter_errno_child, NULL);
}

/* personality: exactly 0, 8, 0x20000, 0x20008 and 0xffffffff pass, judged
 * on the low 32 bits like the kernel. */
static bool personality_allowed(uint32_t v) {
    return v == 0 || v == PER_LINUX32 || v == UNAME26 || v == (UNAME26 | PER_LINUX32) ||
           v == 0xffffffffu;
}

static void personality_child(void *arg) {
    sandbox_self(false);
    static const uint64_t allowed[] = {
        0, PER_LINUX32, UNAME26, UNAME26 | PER_LINUX32, 0xffffffffu,
        /* upper bits are ignored by the kernel, and by the filter */
        UINT64_C(1) << 32, (UINT64_C(0xdead) << 32) | PER_LINUX32,
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        CHECK(syscall(SYS_personality, allowed[i]) >= 0);
        CHECK(syscall(SYS_personality, 0UL) >= 0);
    }
    static const uint64_t denied[] = {
        1, 0x10, ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, 0x0fffffff,
        0xfffffff7, 0xfffdffff, 0xfffdfff7, 0xfffffffe, 0x7fffffff, 0x80000000,
        (UINT64_C(1) << 32) | ADDR_NO_RANDOMIZE, UINT64_C(0xffffffffffffffff) - 1,
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
        CHECK_ERRNO(syscall(SYS_personality, denied[i]), EPERM);
    /* and many random values: refused unless the low 32 bits are allowed */
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* mostly few bits set, sometimes many: both halves of the rules */
        uint64_t v = (i & 1) ? x : (x & (x >> 11) & (x >> 23));
        long r = syscall(SYS_personality, v);
        if (personality_allowed((uint32_t)v)) {
            CHECK(r >= 0);
            CHECK(syscall(SYS_personality, 0UL) >= 0);
        } else {
            CHECK_ERRNO(r, EPERM);
        }
    }
}

static void test_personality(void **state) {
    expect_child_ok(personality_child, NULL);
}

#if defined(__x86_64__)
/* getpid through the i386 entry point (the 32-bit number is 20). */
static long int80_getpid(void) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
    return ret;
}

static void int80_plain_child(void *arg) {
    _exit(int80_getpid() == getpid() ? 0 : 3);
}

static void int80_filtered_child(void *arg) {
    sandbox_self(false);
    int80_getpid();
    _exit(0);
}

static void x32_filtered_child(void *arg) {
    sandbox_self(false);
    syscall(SYS_getpid | 0x40000000L);
    _exit(0);
}

/* Other ABIs would walk around a deny-list in native numbers: the process
 * is killed (SIGSYS) at its first such call. */
static void test_other_abis_killed(void **state) {
    int status = run_child(x32_filtered_child, NULL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSYS);

    status = run_child(int80_plain_child, NULL);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* no i386 emulation here: nothing to bypass with */
        print_message("int 0x80 unavailable on this kernel; i386 check skipped\n");
        return;
    }
    status = run_child(int80_filtered_child, NULL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSYS);
}
#endif

/* ---- user notification ---------------------------------------------------------- */

typedef struct notify_report {
    unsigned made;  /* denied calls made */
    unsigned eperm; /* of which failed with EPERM */
} notify_report;

typedef struct notify_child_arg {
    int sock;
    bool block_once; /* only make one denied call (ptrace) and never report */
} notify_child_arg;

static void notify_child(void *p) {
    notify_child_arg *arg = p;
    int fd = sandbox_self(true);
    /* O_CLOEXEC from the kernel: an execve can never hand it to the program */
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CHECK(send_fd(arg->sock, fd));
    close(fd);
    if (arg->block_once) {
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        _exit(0);
    }
    notify_report report = {0, 0};
    report.made = call_deny_list();
    report.made += call_conditional_denials();
    report.eperm = report.made; /* each call above checked its EPERM */
    call_allowed();
    CHECK(write(arg->sock, &report, sizeof report) == (ssize_t)sizeof report);
}

/* Answer notifications until the child is reaped and the listener reports
 * that nobody uses the filter any more. Returns the count. */
static uint64_t answer_until_gone(int fd, pid_t pid, int *status) {
    uint64_t denied = 0;
    bool reaped = false;
    time_t deadline = time(NULL) + 10;
    for (;;) {
        assert_true(time(NULL) < deadline);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, 50);
        assert_true(n >= 0);
        bool alive = seccomp_answer(fd, &denied);
        if (!reaped) {
            pid_t r = waitpid(pid, status, WNOHANG);
            assert_true(r >= 0);
            reaped = r == pid;
        } else if (!alive) {
            return denied;
        }
    }
}

static void test_notify_counts(void **state) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    notify_child_arg arg = {.sock = sv[1], .block_once = false};
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        notify_child(&arg);
        _exit(0);
    }
    close(sv[1]);
    int fd = recv_fd(sv[0]);
    assert_true(fd >= 0);
    int status;
    uint64_t denied = answer_until_gone(fd, pid, &status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    notify_report report;
    assert_int_equal(read(sv[0], &report, sizeof report), sizeof report);
    /* every denied call reached the parent once, none of the allowed ones */
    assert_int_equal(report.made, denied_count() + CONDITIONAL_DENIALS);
    assert_int_equal(report.eperm, report.made);
    assert_int_equal(denied, report.made);
    /* the listener stays "gone" */
    assert_false(seccomp_answer(fd, &denied));
    assert_int_equal(denied, report.made);
    close(fd);
    close(sv[0]);
}

/* The caller is killed while its call waits for an answer: answering must
 * neither block nor count, nor report an error while the process is dying. */
static void test_notify_caller_killed(void **state) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    notify_child_arg arg = {.sock = sv[1], .block_once = true};
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        notify_child(&arg);
        _exit(0);
    }
    close(sv[1]);
    int fd = recv_fd(sv[0]);
    assert_true(fd >= 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_true(p.revents & POLLIN);

    assert_int_equal(kill(pid, SIGKILL), 0);
    siginfo_t info;
    assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
    uint64_t denied = 0;
    alarm(10); /* a blocking answer would hang the test */
    seccomp_answer(fd, &denied);
    assert_int_equal(denied, 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_false(seccomp_answer(fd, &denied));
    alarm(0);
    assert_int_equal(denied, 0);
    close(fd);
    close(sv[0]);
}

/* Not a listener: false, never a block. */
static void test_answer_bad_fds(void **state) {
    uint64_t denied = 0;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    /* nothing to read: nothing to do yet */
    assert_true(seccomp_answer(pipefd[0], &denied));
    /* readable, but the RECV ioctl fails */
    assert_int_equal(write(pipefd[1], "x", 1), 1);
    assert_false(seccomp_answer(pipefd[0], &denied));
    close(pipefd[0]);
    close(pipefd[1]);
    /* closed */
    assert_false(seccomp_answer(pipefd[0], &denied));
    assert_int_equal(denied, 0);
}

static void test_probe(void **state) {
    bool notify = false;
    assert_true(seccomp_probe(&notify));
    assert_true(notify);
    notify = false;
    assert_true(seccomp_probe(&notify));
    assert_true(notify);
}

/* ---- capabilities ------------------------------------------------------------------ */

/* The value of a "Name:\t..." line of /proc/self/status. */
static bool status_field(const char *name, char *value, size_t size) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return false;
    char line[256];
    size_t len = strlen(name);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            const char *v = line + len + 1;
            while (*v == '\t' || *v == ' ')
                v++;
            snprintf(value, size, "%.*s", (int)strcspn(v, "\n"), v);
            found = true;
        }
    }
    fclose(f);
    return found;
}

static void check_no_caps(void) {
    static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    char value[64];
    for (size_t i = 0; i < 5; i++) {
        CHECK_WHAT(status_field(sets[i], value, sizeof value), sets[i]);
        CHECK_WHAT(strcmp(value, "0000000000000000") == 0, sets[i]);
    }
    CHECK(status_field("NoNewPrivs", value, sizeof value));
    CHECK(strcmp(value, "1") == 0);
    CHECK(prctl(PR_CAPBSET_READ, 21 /* CAP_SYS_ADMIN */, 0, 0, 0) == 0);
    CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
}

/* The capget/capset ABI (version 3: two 32-bit words per set, the data
 * words being effective, permitted, inheritable for caps 0-31, then 32-63). */
struct cap_header {
    uint32_t version;
    int pid;
};
#define CAP_VERSION_3 0x20080522
#define CAP_NET_BIND_SERVICE_BIT 10

/* Put a capability in the ambient set, so there is one to clear. */
static void raise_ambient(void) {
    struct cap_header header = {CAP_VERSION_3, 0};
    uint32_t data[6];
    CHECK(syscall(SYS_capget, &header, data) == 0);
    data[2] |= 1u << CAP_NET_BIND_SERVICE_BIT;
    CHECK(syscall(SYS_capset, &header, data) == 0);
    CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE_BIT, 0, 0) == 0);
    char value[64];
    CHECK(status_field("CapAmb", value, sizeof value));
    CHECK(strcmp(value, "0000000000000400") == 0);
}

static void caps_child(void *arg) {
    const char *file = arg;
    const char *step = "";
    /* as root: every capability to lose */
    CHECK(geteuid() == 0);
    raise_ambient();
    CHECK_WHAT(caps_drop_all(&step), step);
    check_no_caps();
    /* locked: uid 0 no longer means capabilities, even across execve */
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    CHECK(bits >= 0 && (bits & 0x3) == 0x3); /* SECBIT_NOROOT and its lock */
    /* root without CAP_CHOWN: a root-owned file cannot be given away */
    CHECK_ERRNO(chown(file, 1, 1), EPERM);
    /* and no way back */
    struct cap_header header = {CAP_VERSION_3, 0};
    uint32_t data[6] = {~0u, ~0u, ~0u, ~0u, ~0u, ~0u};
    CHECK_ERRNO(syscall(SYS_capset, &header, data), EPERM);
}

/* Inside a fresh user namespace, where the native backend runs it. */
static void caps_userns_child(void *arg) {
    if (unshare(CLONE_NEWUSER) != 0) {
        fprintf(stderr, "no user namespace (%s): skipped\n", strerror(errno));
        return;
    }
    const char *step = "";
    CHECK_WHAT(caps_drop_all(&step), step);
    check_no_caps();
}

/* Without CAP_SETPCAP the bounding set cannot be emptied: refuse. */
static void caps_unprivileged_child(void *arg) {
    CHECK(setresgid(65534, 65534, 65534) == 0);
    CHECK(setresuid(65534, 65534, 65534) == 0);
    const char *step = "";
    CHECK(!caps_drop_all(&step));
    CHECK_WHAT(strcmp(step, "prctl(PR_CAPBSET_DROP)") == 0, step);
}

static void test_caps(void **state) {
    if (geteuid() != 0) {
        print_message("not root: the root-only capability checks are skipped\n");
    } else {
        char file[] = "/tmp/test_seccomp_XXXXXX";
        int fd = mkstemp(file);
        assert_true(fd >= 0);
        close(fd);
        int status = run_child(caps_child, file);
        unlink(file);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        expect_child_ok(caps_unprivileged_child, NULL);
    }
    expect_child_ok(caps_userns_child, NULL);
}

/* ---- preparing in the parent, installing in the child --------------------------- */

static int prepare_filters(void **state) {
    al_error err;
    memset(&err, 0, sizeof err);
    if (!seccomp_prepare(&filters.deny, false, &err) ||
        !seccomp_prepare(&filters.notify, true, &err)) {
        print_error("seccomp_prepare: %s\n", err.message);
        return -1;
    }
    return 0;
}

/* Whether some instruction of the program returns `ret`. */
static bool returns(const native_seccomp_filter *f, uint32_t ret) {
    for (unsigned i = 0; i < f->len; i++)
        if (f->code[i].code == (BPF_RET | BPF_K) && f->code[i].k == ret)
            return true;
    return false;
}

static void check_filter(const native_seccomp_filter *f, bool notify) {
    assert_true(f->len > 0 && f->len <= BPF_MAXINSNS);
    assert_int_equal(f->use_notify, notify);
    /* the architecture is checked first: other ABIs are killed */
    assert_int_equal(f->code[0].code, BPF_LD | BPF_W | BPF_ABS);
    assert_int_equal(f->code[0].k, offsetof(struct seccomp_data, arch));
    assert_true(returns(f, SECCOMP_RET_KILL_PROCESS));
    assert_true(returns(f, SECCOMP_RET_ALLOW));
    assert_true(returns(f, SECCOMP_RET_ERRNO | ENOSYS)); /* clone3 */
    /* a denial is either a notification or EPERM, never both */
    assert_int_equal(returns(f, SECCOMP_RET_USER_NOTIF), notify);
    assert_int_equal(returns(f, SECCOMP_RET_ERRNO | EPERM), !notify);
}

/* Prepare both filters again and again; each must come out identical to
 * the group setup's. Returns the number of differences. */
static void *prepare_repeatedly(void *arg) {
    native_seccomp_filter *f = malloc(sizeof *f);
    uintptr_t bad = f == NULL;
    for (int i = 0; f != NULL && i < 10; i++) {
        bool notify = i & 1;
        const native_seccomp_filter *want = filter_for(notify);
        al_error err;
        if (!seccomp_prepare(f, notify, &err) || f->len != want->len ||
            f->use_notify != notify ||
            memcmp(f->code, want->code, f->len * sizeof f->code[0]) != 0)
            bad++;
    }
    free(f);
    return (void *)bad;
}

static void test_prepare(void **state) {
    check_filter(&filters.deny, false);
    check_filter(&filters.notify, true);
    /* the same program every time, also from several threads at once
     * (seccomp_prepare runs in embedders' threads, concurrently) */
    pthread_t threads[4];
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, prepare_repeatedly, NULL), 0);
    uintptr_t bad = 0;
    for (size_t i = 0; i < 4; i++) {
        void *r;
        assert_int_equal(pthread_join(threads[i], &r), 0);
        bad += (uintptr_t)r;
    }
    assert_int_equal(bad, 0);
}

/* A filter that was never prepared is refused, and nothing is loaded: the
 * program must never run without the filter it was promised. */
static void unprepared_child(void *arg) {
    static const native_seccomp_filter none;
    const char *step = "";
    no_core_dumps();
    gain_caps_if_unprivileged();
    CHECK_WHAT(caps_drop_all(&step), step);
    int fd = 12345;
    errno = 0;
    CHECK(!seccomp_install(&none, &fd, &step));
    CHECK(errno == EINVAL && fd == -1);
    CHECK_WHAT(strcmp(step, "seccomp filter not prepared") == 0, step);
    char value[64];
    CHECK(status_field("Seccomp", value, sizeof value));
    CHECK_WHAT(strcmp(value, "0") == 0, value);
}

static void test_install_unprepared(void **state) {
    expect_child_ok(unprepared_child, NULL);
}

/* The sanitizer's allocator hooks, when this build has them (weak: NULL
 * without ASan). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *))
    __attribute__((weak));

/* Allocations seen since the hooks were installed (in a child only). */
static volatile unsigned long allocations;

static void count_malloc(const volatile void *p, size_t size) {
    allocations++;
}

static void ignore_free(const volatile void *p) {
}

static void no_malloc_child(void *arg) {
    const bool *notify = arg;
    const char *step = "";
    no_core_dumps();
    gain_caps_if_unprivileged();
    CHECK_WHAT(caps_drop_all(&step), step);
    CHECK(__sanitizer_install_malloc_and_free_hooks(count_malloc, ignore_free) != 0);
    /* the hooks do see an allocation */
    void *volatile probe = malloc(16);
    free(probe);
    CHECK(allocations >= 1);
    allocations = 0;
    int fd = 12345;
    bool ok = seccomp_install(filter_for(*notify), &fd, &step);
    unsigned long seen = allocations;
    CHECK_WHAT(ok, step);
    CHECK_WHAT(seen == 0, "seccomp_install allocated");
    CHECK(*notify ? fd >= 0 : fd == -1);
    char value[64];
    CHECK(status_field("Seccomp", value, sizeof value));
    CHECK_WHAT(strcmp(value, "2") == 0, value); /* filter mode */
}

static void test_install_no_malloc(void **state) {
    if (__sanitizer_install_malloc_and_free_hooks == NULL) {
        print_message("no allocator hooks in this build; test_install_stress covers it\n");
        return;
    }
    bool notify = false;
    expect_child_ok(no_malloc_child, &notify);
    notify = true;
    expect_child_ok(no_malloc_child, &notify);
}

/* ---- the child of a threaded parent ------------------------------------------------ */

static atomic_bool churn_stop;

/* Allocate and free all the time, so the allocator's locks are often held
 * at the moment of a clone. */
static void *churn(void *arg) {
    uint32_t x = (uint32_t)(uintptr_t)arg;
    while (!atomic_load(&churn_stop)) {
        x = x * 1103515245u + 12345u;
        void *volatile p = malloc((x >> 8) % 512 + 1);
        free(p);
    }
    return NULL;
}

/* Fork-like clone by system call, as native.c starts init: unlike fork(),
 * glibc's atfork handlers do not take the allocator's locks first, so the
 * child inherits them as the other threads left them. */
static pid_t raw_fork(void) {
    return (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0);
}

static _Noreturn void install_and_exit(void) {
    const char *step = "";
    int fd = -1;
    gain_caps_if_unprivileged();
    if (!caps_drop_all(&step) || !seccomp_install(&filters.notify, &fd, &step))
        _exit(1);
    _exit(fd >= 0 ? 0 : 2);
}

/* waitpid with a deadline. False if pid is still running after ms. */
static bool wait_within(pid_t pid, long ms, int *status) {
    struct timespec start, now, nap = {0, 200000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed > ms)
            return false;
        nanosleep(&nap, NULL);
    }
}

/* 200 children cloned while another thread allocates: each loads the
 * filter within 2 s (an allocation in seccomp_install would sooner or later
 * wait forever on a lock the churning thread held at clone time). Small
 * sizes and one thread keep it quick under ASan, whose quarantine makes
 * every clone copy more page tables the more is freed. */
static void test_install_stress(void **state) {
    pthread_t churner;
    atomic_store(&churn_stop, false);
    assert_int_equal(pthread_create(&churner, NULL, churn, (void *)1), 0);
    unsigned hung = 0, failed = 0, made = 0;
    fflush(NULL);
    for (int i = 0; i < 200; i++) {
        pid_t pid = raw_fork();
        if (pid < 0)
            break;
        if (pid == 0)
            install_and_exit();
        made++;
        int status = 0;
        if (!wait_within(pid, 2000, &status)) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed++;
        }
    }
    atomic_store(&churn_stop, true);
    assert_int_equal(pthread_join(churner, NULL), 0);
    assert_int_equal(made, 200);
    assert_int_equal(hung, 0);
    assert_int_equal(failed, 0);
}

/* ---- rlimits --------------------------------------------------------------------- */

static native_plan *new_plan(void) {
    native_plan *plan = calloc(1, sizeof *plan);
    CHECK(plan != NULL);
    return plan;
}

static void check_limit(int resource, rlim_t soft, rlim_t hard, const char *name) {
    struct rlimit r;
    CHECK(getrlimit(resource, &r) == 0);
    CHECK_WHAT(r.rlim_cur == soft && r.rlim_max == hard, name);
}

static void rlimit_child(void *arg) {
    native_plan *plan = new_plan();
    plan->cpu_time_ms = 1500;
    plan->memory_bytes = 512u << 20;
    plan->max_processes = 50;
    plan->max_open_files = 0;
    plan->max_file_size = 1u << 20;
    const char *step = "";
    CHECK_WHAT(rlimit_apply(plan, &step), step);
    check_limit(RLIMIT_NOFILE, 256, 256, "NOFILE");
    check_limit(RLIMIT_FSIZE, 1u << 20, 1u << 20, "FSIZE");
    check_limit(RLIMIT_CPU, 2, 3, "CPU");
    check_limit(RLIMIT_AS, 512u << 20, 512u << 20, "AS");
    check_limit(RLIMIT_NPROC, 50, 50, "NPROC");
    check_limit(RLIMIT_CORE, 0, 0, "CORE");
    check_limit(RLIMIT_MEMLOCK, 65536, 65536, "MEMLOCK");
    check_limit(RLIMIT_MSGQUEUE, 0, 0, "MSGQUEUE");
    check_limit(RLIMIT_RTPRIO, 0, 0, "RTPRIO");
    check_limit(RLIMIT_NICE, 0, 0, "NICE");
    free(plan);
    /* once the capabilities are gone, no limit can be raised again */
    gain_caps_if_unprivileged();
    CHECK_WHAT(caps_drop_all(&step), step);
    struct rlimit more = {512, 512};
    CHECK_ERRNO(setrlimit(RLIMIT_NOFILE, &more), EPERM);
}

/* With a cgroup: no RLIMIT_AS / RLIMIT_NPROC; 0 means no CPU or file limit;
 * a limit never rises above what the process already had. */
static void rlimit_cgroup_child(void *arg) {
    struct rlimit as_before, nproc_before, cpu_before, fsize_before;
    CHECK(getrlimit(RLIMIT_AS, &as_before) == 0);
    CHECK(getrlimit(RLIMIT_NPROC, &nproc_before) == 0);
    CHECK(getrlimit(RLIMIT_CPU, &cpu_before) == 0);
    CHECK(getrlimit(RLIMIT_FSIZE, &fsize_before) == 0);
    struct rlimit low = {100, 100};
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    native_plan *plan = new_plan();
    plan->memory_bytes = 1u << 20;
    plan->max_processes = 1;
    plan->cgroup_memory = true;
    plan->cgroup_pids = true;
    plan->max_open_files = 1000;
    const char *step = "";
    CHECK_WHAT(rlimit_apply(plan, &step), step);
    free(plan);
    check_limit(RLIMIT_AS, as_before.rlim_cur, as_before.rlim_max, "AS");
    check_limit(RLIMIT_NPROC, nproc_before.rlim_cur, nproc_before.rlim_max, "NPROC");
    check_limit(RLIMIT_CPU, cpu_before.rlim_cur, cpu_before.rlim_max, "CPU");
    check_limit(RLIMIT_FSIZE, fsize_before.rlim_max, fsize_before.rlim_max, "FSIZE");
    check_limit(RLIMIT_NOFILE, 100, 100, "NOFILE");
}

/* The limits bite: file size, open files. */
static void rlimit_enforced_child(void *arg) {
    const char *dir = arg;
    native_plan *plan = new_plan();
    plan->max_file_size = 4096;
    plan->max_open_files = 16;
    const char *step = "";
    CHECK_WHAT(rlimit_apply(plan, &step), step);
    free(plan);
    signal(SIGXFSZ, SIG_IGN);
    char path[4096];
    snprintf(path, sizeof path, "%s/big", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    static char block[8192];
    CHECK(write(fd, block, sizeof block) == 4096);
    CHECK_ERRNO(write(fd, block, 1), EFBIG);
    close(fd);
    unlink(path);
    int last = -1;
    for (int i = 0; i < 32; i++) {
        int d = dup(0);
        if (d < 0) {
            CHECK(errno == EMFILE);
            break;
        }
        last = d;
    }
    CHECK(last >= 0 && last < 16);
}

/* RLIMIT_CPU: soft limit first (SIGXCPU), the hard one a second later. */
static void rlimit_cpu_child(void *arg) {
    no_core_dumps();
    native_plan *plan = new_plan();
    plan->cpu_time_ms = 1;
    const char *step = "";
    CHECK_WHAT(rlimit_apply(plan, &step), step);
    free(plan);
    check_limit(RLIMIT_CPU, 1, 2, "CPU");
    for (volatile unsigned long i = 0;; i++) {
    }
}

static void test_rlimits(void **state) {
    expect_child_ok(rlimit_child, NULL);
    expect_child_ok(rlimit_cgroup_child, NULL);
    char dir[] = "/tmp/test_seccomp_XXXXXX";
    assert_non_null(mkdtemp(dir));
    int status = run_child(rlimit_enforced_child, dir);
    char big[sizeof dir + 8];
    snprintf(big, sizeof big, "%s/big", dir);
    unlink(big);
    rmdir(dir);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    status = run_child(rlimit_cpu_child, NULL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGXCPU);
}

/* All of the above happened in children. */
static void test_parent_unrestricted(void **state) {
    char value[64];
    assert_true(status_field("Seccomp", value, sizeof value));
    assert_string_equal(value, "0");
    assert_int_equal(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deny_list_names),
        cmocka_unit_test(test_filter_errno),
        cmocka_unit_test(test_personality),
#if defined(__x86_64__)
        cmocka_unit_test(test_other_abis_killed),
#endif
        cmocka_unit_test(test_notify_counts),
        cmocka_unit_test(test_notify_caller_killed),
        cmocka_unit_test(test_answer_bad_fds),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_install_unprepared),
        cmocka_unit_test(test_install_no_malloc),
        cmocka_unit_test(test_install_stress),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_rlimits),
        cmocka_unit_test(test_parent_unrestricted),
    };
    return cmocka_run_group_tests(tests, prepare_filters, NULL);
}
