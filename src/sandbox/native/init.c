/*
 * init.c — the native sandbox's pid 1 and the program's last steps before
 * execve (native.h, "init.c").
 *
 * native_init_main runs in the child that native.c cloned into fresh user,
 * pid, mount, network, ipc and uts namespaces. In order it:
 *   1. resets every signal disposition and the signal mask (inherited from
 *      the parent thread: an inherited handler would make pid 1 signalable
 *      from inside the sandbox, an inherited SIG_IGN for SIGCHLD would make
 *      the program's wait status vanish) and closes every fd it was not
 *      given in the plan (the embedder's files, sockets, pipes);
 *   2. waits for the parent's sync byte: the uid/gid maps are written (EOF:
 *      the parent gave up, exit quietly);
 *   3. becomes guest uid/gid 1000 with no supplementary groups — the maps
 *      only say how ids are seen; without setresuid the process would keep
 *      the caller's kuid (root's, when airlock runs as root) on host files;
 *   4. arms PR_SET_PDEATHSIG (after the id change, which clears it) and
 *      checks the parent is still there, makes itself non-dumpable;
 *   5. sets the hostname, brings up loopback;
 *   6. moves the granted directories into its own mount namespace (see
 *      localise_grants) and builds the new root (mount_build_root);
 *      meanwhile the parent makes the cgroup; init then learns from the
 *      parent which limits it enforces, moves itself into it (v1: through
 *      the tasks files the parent opened; otherwise the parent placed it)
 *      and enters a new cgroup namespace, whose root that cgroup becomes;
 *   7. forks the program, then reaps every process of the pid namespace;
 *      when the program ends it SIGKILLs everything left (kill(-1) from pid
 *      1 reaches exactly the namespace), reaps it, reports the program's
 *      wait status (NATIVE_MSG_EXIT) and exits 0.
 * The program's process (program_main) wires stdio, closes everything else,
 * applies rlimits, chdir, Landlock, drops capabilities, reads the seccomp
 * filter the parent compiled meanwhile from the sync socket and loads it,
 * hands the listener to the parent and execs, looking argv[0] up in the
 * sandbox's PATH itself.
 *
 * Invariants (native.h's child rules): no malloc, no stdio, no locks — the
 * parent may have had other threads at clone time, whose locks are frozen
 * in this copy. Credential changes use raw syscalls because glibc's
 * setresuid would try to broadcast the change to those phantom threads. The
 * seccomp filter arrives compiled (seccomp_prepare runs in the parent) over
 * the sync socket, into the plan's own buffer, so loading it is a read and
 * one system call. Every failure is a
 * NATIVE_MSG_ERROR naming the step; nothing is printed. Only pid 1 and the
 * program's process before execve hold the control socket; it is
 * close-on-exec, so the untrusted program never can forge a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "native.h"
#include "net.h"

#define INIT_MAX_KEEP (NATIVE_MAX_GRANTS + 8)

/* ---- small async-signal-safe helpers ------------------------------------------ */

/* SIG_DFL for every signal and an empty mask, through the raw syscalls so
 * glibc's reserved signals (32, 33) are reset too. */
static void reset_signals(void) {
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        unsigned long mask;
    } dfl = {0}; /* SIG_DFL is 0 */
    for (int sig = 1; sig <= 64; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
    }
    unsigned long none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
}

/* Close every fd except the n in keep (unordered, may repeat, may be < 0). */
static void close_fds_except(const int *keep, size_t n) {
    int sorted[INIT_MAX_KEEP];
    size_t m = 0;
    for (size_t i = 0; i < n && m < INIT_MAX_KEEP; i++) {
        if (keep[i] < 0) continue;
        size_t j = m;
        while (j > 0 && sorted[j - 1] > keep[i]) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = keep[i];
        m++;
    }
    unsigned int next = 0;
    for (size_t i = 0; i < m; i++) {
        unsigned int fd = (unsigned int)sorted[i];
        if (fd > next) syscall(SYS_close_range, next, fd - 1, 0);
        if (fd + 1 > next) next = fd + 1;
    }
    syscall(SYS_close_range, next, ~0u, 0);
}

/* Decimal digits of v into buf (at least 11 bytes); returns the length. */
static size_t put_uint(char *buf, unsigned v) {
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return n;
}

/* dir + "/" + name into out (size PATH_MAX); false when it does not fit. */
static bool join_path(char *out, const char *dir, size_t dlen, const char *name) {
    size_t nlen = strlen(name);
    if (dlen + 1 + nlen + 1 > PATH_MAX) return false;
    memcpy(out, dir, dlen);
    out[dlen] = '/';
    memcpy(out + dlen + 1, name, nlen + 1);
    return true;
}

/* ---- pid 1's setup steps --------------------------------------------------------- */

/* Until the sync socket has something to read (or the parent hung up).
 * The parent's messages usually arrive before init asks for them, so the
 * first tries do not wait: for up to SYNC_SPIN_NS this process keeps asking
 * (yielding the CPU between tries) instead of sleeping. A sleeping process
 * is woken by the parent's send as a "sync" wakeup, which queues it on the
 * parent's CPU — behind the parent, which goes on making the cgroup and
 * compiling the seccomp filter — while the CPU it ran on stays idle; that
 * delay would add to every run. */
#define SYNC_SPIN_NS 200000
static void wait_readable(int fd) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 0);
        if (r != 0) return; /* readable, hung up, or an error: the read says which */
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t spent = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000 +
                        (now.tv_nsec - start.tv_nsec);
        if (spent >= SYNC_SPIN_NS) break;
        sched_yield();
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
}

/* One byte from the parent, or EOF when it gave up (then exit quietly: there
 * is nobody to report to). */
static void wait_for_parent(const native_plan *plan) {
    char byte;
    wait_readable(plan->sync_fd);
    for (;;) {
        ssize_t n = read(plan->sync_fd, &byte, 1);
        if (n == 1) return;
        if (n < 0 && errno == EINTR) continue;
        _exit(1);
    }
}

/* The parent's native_cgroup_msg and the fds that ride along (at most
 * NATIVE_CGROUP_JOIN_MAX); false (errno set) unless it is whole and
 * well-formed. Only the first segment carries fds, so the rest of a split
 * message is read plainly. */
static bool receive_cgroup_msg(int sock, native_cgroup_msg *msg, int *fds, size_t *nfds) {
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(NATIVE_CGROUP_JOIN_MAX * sizeof(int))];
    } cbuf;
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof *msg};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf};
    *nfds = 0;
    ssize_t n;
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        if (n == 0) errno = EPIPE;
        return false;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t j = 0; j < k; j++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
            if (*nfds < NATIVE_CGROUP_JOIN_MAX) fds[(*nfds)++] = fd;
            else close(fd);
        }
    }
    size_t got = (size_t)n;
    while (got < sizeof *msg) {
        ssize_t r = read(sock, (char *)msg + got, sizeof *msg - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EPIPE;
            return false;
        }
        got += (size_t)r;
    }
    if (msg->magic != NATIVE_CGROUP_MSG_MAGIC || msg->ntasks_fds != *nfds ||
        (mh.msg_flags & MSG_CTRUNC)) {
        errno = EPROTO;
        return false;
    }
    return true;
}

/* Learn which limits the cgroup enforces and move this process (its only
 * thread: "0" in a v1 tasks file is the writer's own thread) into the
 * sandbox's cgroup, before the program exists: every process it starts
 * inherits the cgroup, so the memory and pids limits hold for the whole
 * tree. The tasks files were opened by the parent, whose credentials the
 * kernel checks. Without fds the parent did the move (cgroup_add_process,
 * or clone3 into a v2 cgroup) or there is no cgroup. Then a new cgroup
 * namespace: this cgroup becomes its root, so the sandbox does not see
 * where on the host it lives. */
static void join_cgroup(native_plan *plan) {
    int ctl = plan->control_fd;
    native_cgroup_msg msg;
    int fds[NATIVE_CGROUP_JOIN_MAX];
    size_t nfds = 0;
    wait_readable(plan->sync_fd);
    if (!receive_cgroup_msg(plan->sync_fd, &msg, fds, &nfds)) {
        for (size_t i = 0; i < nfds; i++) close(fds[i]);
        native_child_fail(ctl, "receive the cgroup");
    }
    plan->cgroup_memory = msg.cgroup_memory != 0;
    plan->cgroup_pids = msg.cgroup_pids != 0;
    for (size_t i = 0; i < nfds; i++) {
        ssize_t n;
        do {
            n = write(fds[i], "0", 1);
        } while (n < 0 && errno == EINTR);
        if (n != 1) {
            if (n >= 0) errno = EIO;
            native_child_fail(ctl, "join the cgroup");
        }
        close(fds[i]);
    }
    if (unshare(CLONE_NEWCGROUP) < 0) native_child_fail(ctl, "unshare cgroup namespace");
}

/* Become the guest identity. Raw syscalls: see the file comment. setgroups
 * drops the supplementary groups inherited from the caller (root's group 0
 * would otherwise still count on host files); it is refused (EPERM) when an
 * unprivileged caller had to write "deny" to setgroups, and then the groups
 * are the caller's own anyway. */
static void become_guest(const native_plan *plan) {
    if (syscall(SYS_setgroups, 0, NULL) < 0 && errno != EPERM)
        native_child_fail(plan->control_fd, "setgroups");
    if (syscall(SYS_setresgid, SANDBOX_GUEST_GID, SANDBOX_GUEST_GID, SANDBOX_GUEST_GID) < 0)
        native_child_fail(plan->control_fd, "setresgid");
    if (syscall(SYS_setresuid, SANDBOX_GUEST_UID, SANDBOX_GUEST_UID, SANDBOX_GUEST_UID) < 0)
        native_child_fail(plan->control_fd, "setresuid");
}

/* Die with the parent. The id change above clears the death signal, so it
 * is armed after it; the parent keeps its end of the sync socket open for
 * the whole run, so a hang-up seen after arming means it died before. */
static void tie_to_parent(const native_plan *plan) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        native_child_fail(plan->control_fd, "prctl PDEATHSIG");
    /* Only the hang-up counts: the parent's next messages (the cgroup, the
     * seccomp filter) may already be waiting to be read. */
    struct pollfd p = {.fd = plan->sync_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 0) _exit(1);
    /* Non-dumpable: the program (same uid) cannot ptrace pid 1 or read its
     * memory through /proc, which holds a copy of the parent's. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        native_child_fail(plan->control_fd, "prctl DUMPABLE");
}

/* The proxy's door into this network namespace, made before the program
 * exists so that the program cannot take the port first and pose as the
 * proxy. Init keeps no copy: the parent serves it. */
static void send_egress_listener(const native_plan *plan) {
    int fd = egress_listen_inside(EGRESS_PROXY_PORT);
    if (fd < 0) native_child_fail(plan->control_fd, "listen on 127.0.0.1:3128 (egress)");
    native_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = NATIVE_MSG_EGRESS_LISTENER;
    if (!native_send(plan->control_fd, &msg, fd))
        native_child_fail(plan->control_fd, "send the egress listener");
    close(fd);
}

/* The network namespace starts with lo down; programs expect 127.0.0.1. */
static void loopback_up(const native_plan *plan) {
    if (egress_loopback_up() < 0) native_child_fail(plan->control_fd, "bring up lo");
}

/* Re-open a grant fd by its path inside this mount namespace, as the guest,
 * and check it is the same directory (a swap on the host between the
 * parent's open and here is refused, not followed). -1 with errno when the
 * path cannot be resolved here or names something else. */
static int reopen_by_path(int fd) {
    char link[32] = "/proc/self/fd/";
    put_uint(link + 14, (unsigned)fd);
    char path[PATH_MAX];
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0 || path[0] != '/') {
        if (n >= 0) errno = ENOENT;
        return -1;
    }
    path[n] = 0;
    int local = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (local < 0) return -1;
    struct stat a, b;
    if (fstat(fd, &a) < 0 || fstat(local, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        close(local);
        errno = ESTALE;
        return -1;
    }
    return local;
}

/* Replace the grant's fd number by local (an fd of a mount in this
 * namespace). */
static void adopt_grant_fd(const native_plan *plan, size_t i, int local) {
    if (dup3(local, plan->grants[i].host_fd, O_CLOEXEC) < 0)
        native_child_fail(plan->control_fd, "dup3 granted directory");
    close(local);
}

/* Attach the detached copy grants[i] (open_tree) under the staging tmpfs. */
static void attach_detached_grant(const native_plan *plan, size_t i, int reopen_errno) {
    int ctl = plan->control_fd;
    char name[16], stage[PATH_MAX];
    put_uint(name, (unsigned)i);
    if (!join_path(stage, plan->root_mount, strlen(plan->root_mount), name)) {
        errno = ENAMETOOLONG;
        native_child_fail(ctl, "grant staging path");
    }
    if (mkdir(stage, 0700) < 0) native_child_fail(ctl, "mkdir grant staging");
    if (syscall(SYS_move_mount, plan->grants[i].host_fd, "", AT_FDCWD, stage,
                MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        /* EINVAL: not a detached mount but a plain fd whose path did not
         * resolve; that first failure is the one worth reporting. */
        if (errno == EINVAL) {
            errno = reopen_errno;
            native_child_fail(ctl, "open granted directory in the sandbox");
        }
        native_child_fail(ctl, "move_mount granted directory");
    }
    int local = open(stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (local < 0) native_child_fail(ctl, "open staged grant");
    adopt_grant_fd(plan, i, local);
}

/* The parent's grant fds point into the parent's mount namespace, and the
 * kernel refuses to bind-mount a source from another namespace (EINVAL).
 * native.c hands over either a plain O_PATH fd (an unprivileged caller: this
 * process has the caller's own kuid, so it resolves the path exactly as the
 * caller could) or, when the caller is root, a detached copy of the
 * directory (open_tree OPEN_TREE_CLONE), which needs no search permission on
 * the host path for the guest uid. Pass 1 re-opens every grant by path here
 * (same directory, checked by dev/ino); pass 2 attaches the detached copies
 * that could not be reached that way under a private staging tmpfs on
 * root_mount — mounted only after pass 1, as it shadows host paths below
 * root_mount — which the new root later covers and pivot_root discards.
 * Either way grants[i].host_fd ends up an O_PATH fd of a mount in *this*
 * namespace, at the same number, so mount.c binds /proc/self/fd/N as
 * native.h says. */
static void localise_grants(const native_plan *plan) {
    if (plan->ngrants == 0) return;
    int ctl = plan->control_fd;
    /* Nothing done here may propagate to the host's mount namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) native_child_fail(ctl, "make / private");
    int reopen_errno[NATIVE_MAX_GRANTS];
    size_t pending = 0;
    for (size_t i = 0; i < plan->ngrants; i++) {
        int local = reopen_by_path(plan->grants[i].host_fd);
        reopen_errno[i] = local < 0 ? errno : 0;
        if (local >= 0) adopt_grant_fd(plan, i, local);
        else pending++;
    }
    if (pending == 0) return;
    if (mount("airlock-grants", plan->root_mount, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=64k,mode=0700") < 0)
        native_child_fail(ctl, "mount grant staging tmpfs");
    for (size_t i = 0; i < plan->ngrants; i++)
        if (reopen_errno[i]) attach_detached_grant(plan, i, reopen_errno[i]);
}

/* ---- the program's process ------------------------------------------------------------ */

/* PATH from the sandbox's environment (the parent always puts one there). */
static const char *sandbox_path(const native_plan *plan) {
    for (char *const *e = plan->envp; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0) return *e + 5;
    return "/usr/local/bin:/usr/bin:/bin";
}

/* execve argv[0], looking it up in PATH when it has no '/', like execvpe
 * but without malloc and without the /bin/sh fallback for ENOEXEC. Returns
 * only on failure, with errno: EACCES if some candidate existed but was
 * refused, ENOENT if none existed, else the error of the first candidate
 * that existed but could not run (ENOEXEC, E2BIG, ...). */
static void exec_program(const native_plan *plan) {
    const char *name = plan->program[0] ? plan->program : plan->argv[0];
    if (!name[0]) {
        errno = ENOENT;
        return;
    }
    if (strchr(name, '/')) {
        execve(name, plan->argv, plan->envp);
        return;
    }
    bool refused = false;
    const char *p = sandbox_path(plan);
    for (;;) {
        size_t len = strcspn(p, ":");
        char full[PATH_MAX];
        const char *dir = len ? p : ".";
        if (join_path(full, dir, len ? len : 1, name)) {
            execve(full, plan->argv, plan->envp);
            switch (errno) {
            case EACCES: refused = true; break;
            case ENOENT: case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT:
            case ELOOP: case ENAMETOOLONG: break;
            default: return; /* e.g. ENOEXEC, E2BIG, ENOMEM: the file is there */
            }
        }
        if (!p[len]) break;
        p += len + 1;
    }
    errno = refused ? EACCES : ENOENT;
}

/* A copy of fd at 3 or above (so the dup2s onto 0..2 below never collide
 * with a source that happens to be 0..2). */
static int lift_fd(int ctl, int fd) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) native_child_fail(ctl, "dup stdio");
    return copy;
}

/* The program's process: a fresh fork of pid 1. Everything here is trusted
 * code until execve; the control fd and the sync socket (which brings the
 * seccomp filter) are close-on-exec, and the sync socket is closed once the
 * filter is read. */
static _Noreturn void program_main(native_plan *plan) {
    int ctl = fcntl(plan->control_fd, F_DUPFD_CLOEXEC, 3);
    if (ctl < 0) native_child_fail(plan->control_fd, "dup control socket");
    if (setsid() < 0) native_child_fail(ctl, "setsid");
    int in = lift_fd(ctl, plan->stdin_fd), out = lift_fd(ctl, plan->stdout_fd),
        err = lift_fd(ctl, plan->stderr_fd), sync = lift_fd(ctl, plan->sync_fd);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) native_child_fail(ctl, "dup2 stdio");
    int keep[] = {0, 1, 2, ctl, sync};
    close_fds_except(keep, sizeof keep / sizeof keep[0]);

    /* Best effort: make the program's tree, not pid 1, the memory-limit
     * OOM killer's first choice (raising one's own score needs no
     * privilege; descendants inherit it). Failing only loses the
     * preference, so it is not an error. The non-dumpable flag inherited
     * from pid 1 makes our own /proc files root's, so it is lifted first:
     * nothing untrusted runs in the sandbox yet, and execve decides the
     * flag for the program's image anew. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        ssize_t ignored = write(oom, "1000", 4);
        (void)ignored;
        close(oom);
    }

    const char *step = "rlimits";
    if (!rlimit_apply(plan, &step)) native_child_fail(ctl, step);
    if (chdir(plan->cwd) < 0) native_child_fail(ctl, "chdir to the working directory");
    step = "landlock";
    if (!landlock_restrict(plan, &step)) native_child_fail(ctl, step);
    step = "drop capabilities";
    if (!caps_drop_all(&step)) native_child_fail(ctl, step);
    if (!seccomp_receive(sync, &plan->seccomp, &step)) native_child_fail(ctl, step);
    close(sync);
    int notify_fd = -1;
    step = "seccomp";
    if (!seccomp_install(&plan->seccomp, &notify_fd, &step)) native_child_fail(ctl, step);
    if (notify_fd >= 0) {
        native_msg msg;
        memset(&msg, 0, sizeof msg);
        msg.kind = NATIVE_MSG_NOTIFY_FD;
        if (!native_send(ctl, &msg, notify_fd)) native_child_fail(ctl, "send seccomp listener");
        close(notify_fd); /* the parent's copy is the only listener now */
    }

    exec_program(plan);
    native_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = NATIVE_MSG_EXEC_FAILED;
    msg.err = errno;
    native_send(ctl, &msg, -1);
    _exit(127);
}

/* ---- pid 1 ----------------------------------------------------------------------- */

/* Reap until no child is left. When the program ends, everything else in
 * the namespace is killed (background daemons must not outlive the run);
 * anything reaped after that gets another kill(-1) in case it forked while
 * the first one was being delivered. Returns the program's wait status. */
static int reap_all(pid_t program) {
    int program_status = 0;
    bool program_done = false;
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, __WALL);
        if (w < 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD: nobody left */
        }
        if (w == program) {
            program_status = st;
            program_done = true;
        }
        if (program_done) kill(-1, SIGKILL);
    }
    return program_status;
}

int native_init_main(native_plan *plan) {
    reset_signals();
    int keep[INIT_MAX_KEEP];
    size_t nkeep = 0;
    keep[nkeep++] = plan->stdin_fd;
    keep[nkeep++] = plan->stdout_fd;
    keep[nkeep++] = plan->stderr_fd;
    keep[nkeep++] = plan->control_fd;
    keep[nkeep++] = plan->sync_fd;
    for (size_t i = 0; i < plan->ngrants && i < NATIVE_MAX_GRANTS; i++)
        keep[nkeep++] = plan->grants[i].host_fd;
    close_fds_except(keep, nkeep);

    wait_for_parent(plan);
    become_guest(plan);
    tie_to_parent(plan);
    int ctl = plan->control_fd;
    if (sethostname("airlock", 7) < 0) native_child_fail(ctl, "sethostname");
    loopback_up(plan);
    if (plan->egress_listener) send_egress_listener(plan);
    localise_grants(plan);
    const char *step = "mount the new root";
    if (!mount_build_root(plan, &step)) native_child_fail(ctl, step);
    for (size_t i = 0; i < plan->ngrants; i++) close(plan->grants[i].host_fd);
    join_cgroup(plan); /* meanwhile the parent made it */

    pid_t program = _Fork(); /* not fork(): no atfork handlers, whose locks may be frozen */
    if (program < 0) native_child_fail(ctl, "fork the program");
    if (program == 0) program_main(plan);
    close(plan->stdin_fd);
    close(plan->stdout_fd);
    close(plan->stderr_fd);
    close(plan->sync_fd);

    native_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = NATIVE_MSG_EXIT;
    msg.wait_status = reap_all(program);
    native_send(ctl, &msg, -1);
    return 0;
}
