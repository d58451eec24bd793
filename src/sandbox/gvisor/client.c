/*
 * client.c — starting one runsc command (a "client": run, create, exec) and,
 * for the commands that start a sandbox, the reaper that adopts it.
 *
 * Why a reaper. `runsc create` forks the sandbox (sentry) and the gofer and
 * exits; `runsc run` is their parent but may be SIGKILLed at a limit. Either
 * way the sandbox processes are orphaned and, when they die, they are
 * zombies of whoever adopts them. Left to pid 1 they stay zombies until it
 * gets round to reaping — on this host (a firecracker VM whose pid 1 is a
 * process manager) 1.1-1.5 s — and `runsc delete` polls kill(pid, 0) every
 * 100 ms until the zombie is gone: that was nearly all of
 * al_session_close's time. So the client is started under a reaper: a
 * fork-like clone of this process that sets PR_SET_CHILD_SUBREAPER, forks
 * the client, reports the client's pid and wait status on a pipe, and reaps
 * every process that is reparented to it (the sandbox, the gofer, the
 * ptrace stubs) the moment it dies, until it has no child left; then it
 * exits. Teardown (gvisor_teardown) kills the sandbox through the cgroup,
 * waits for the reaper, and only then runs `runsc delete`, which finds
 * nothing alive to wait for.
 *
 * Invariants:
 *  - the reaper and the client's pre-exec code are clones of a possibly
 *    multi-threaded embedder: they call only async-signal-safe functions,
 *    never allocate, and fork with the raw system call (no atfork handlers
 *    of the embedder run there);
 *  - the reaper is cloned with exit_signal 0: no SIGCHLD reaches the
 *    embedder and its waitpid(-1) loops cannot steal it (they do not see
 *    clone children without __WALL); only gvisor_client_finish reaps it,
 *    through its pidfd, so no pid is ever reused under us;
 *  - the reaper is outside the sandbox's cgroup (killing the cgroup must not
 *    kill the one process that reaps what it kills); the client is put in
 *    the cgroup before it executes a single instruction of runsc, so the
 *    sandbox and everything it forks are born inside it;
 *  - the reaper keeps no fd but its report pipe (stdio is /dev/null): a
 *    reaper outliving a crashed airlock holds none of the embedder's files
 *    or pipes open;
 *  - the client is always signalled through its pidfd: once it exits the
 *    reaper reaps it at once and its pid may be reused.
 * The reaper is a copy-on-write image of the embedder that never execs (as
 * the native backend's init is); it lives as long as the sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

/* How long a reported status may take to arrive after the client ended
 * (the reaper writes it as soon as it reaped the client). */
#define STATUS_WAIT_MS 5000

static const char *const client_envp[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static bool write_full(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Read exactly len bytes, waiting at most timeout_ms (-1: no limit). */
static bool read_full(int fd, void *buf, size_t len, int timeout_ms) {
    char *p = buf;
    while (len > 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static int pidfd_open_(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

static void pidfd_kill(int pidfd) {
    if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* Every signal back to its default, nothing blocked. Blocked while the
 * dispositions change, so an embedder's handler never runs in this copy. */
static void reset_signals(void) {
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* How the client enters the sandbox's cgroup. Moving another process (a
 * pid written to cgroup.procs) takes the kernel's global threadgroup lock,
 * an RCU grace period of 5-20 ms per run; a single-threaded process moving
 * itself through a v1 "tasks" fd opened by the parent does not (see
 * cgroup_open_self_join in native.h). */
typedef struct client_join {
    int fds[NATIVE_CGROUP_JOIN_MAX];
    bool self; /* the client writes "0" to fds; else the parent moves it */
} client_join;

static void join_open(client_join *j, const native_cgroup *cg) {
    for (int i = 0; i < NATIVE_CGROUP_JOIN_MAX; i++) j->fds[i] = -1;
    j->self = cg && cg->version == 1 && cgroup_open_self_join(cg, j->fds);
}

static void join_close(client_join *j) {
    for (int i = 0; i < NATIVE_CGROUP_JOIN_MAX; i++)
        if (j->fds[i] >= 0) close(j->fds[i]);
}

/* The client, in its own process: wait until the parent lets us go (and, on
 * cgroup v1, move ourselves into the cgroup), then exec. Async-signal-safe
 * calls only. */
static _Noreturn void client_main(const char *const *argv, int in_fd, int out_fd, int err_fd,
                                  int sync_fd, const client_join *join) {
    char go = 0;
    ssize_t n;
    do n = read(sync_fd, &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(126); /* the parent gave up: never run outside the cgroup */
    for (int i = 0; join->self && i < NATIVE_CGROUP_JOIN_MAX; i++)
        if (join->fds[i] >= 0 && write(join->fds[i], "0", 1) != 1) _exit(126);
    /* Move the three out of 0..2 first: an embedder that closed its own
     * stdio may have handed us fds 0-2, which a dup2 would clobber. */
    int in = fcntl(in_fd, F_DUPFD, 3), out = fcntl(out_fd, F_DUPFD, 3),
        err = fcntl(err_fd, F_DUPFD, 3);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
    /* Nothing else of ours reaches runsc or the sandbox. */
    syscall(SYS_close_range, 3u, ~0u, 0u);
    reset_signals();
    execve(argv[0], (char *const *)argv, (char *const *)client_envp);
    _exit(127);
}

/* The reaper (see the top of the file). report_fd gets the client's pid,
 * then its wait status, as int32 each. */
static _Noreturn void reaper_main(const char *const *argv, int in_fd, int out_fd, int err_fd,
                                  int sync_fd, int report_fd, const client_join *join) {
    reset_signals();
    prctl(PR_SET_NAME, "airlock-reaper", 0, 0, 0);
    int32_t msg = -1;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        write_full(report_fd, &msg, sizeof msg);
        _exit(125);
    }
    /* Fork-like raw clone: the embedder's atfork handlers must not run in
     * this copy of it. */
    pid_t client = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0);
    if (client == 0) client_main(argv, in_fd, out_fd, err_fd, sync_fd, join);
    msg = client > 0 ? client : -1;
    write_full(report_fd, &msg, sizeof msg);
    if (client < 0) _exit(126);
    /* Keep only the report pipe: stdio on /dev/null, everything else shut
     * (the program's pipes must reach EOF when the sandbox is gone). */
    int report = fcntl(report_fd, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (report < 0 || null < 0) _exit(126);
    for (int fd = 0; fd < 3; fd++) dup2(null, fd);
    if (report > 3) syscall(SYS_close_range, 3u, (unsigned)report - 1, 0u);
    syscall(SYS_close_range, (unsigned)report + 1, ~0u, 0u);
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) _exit(0); /* ECHILD: the sandbox and all it started are gone */
        if (pid == client) {
            msg = status;
            write_full(report, &msg, sizeof msg);
            close(report);
        }
    }
}

/* Fork-like clone with exit_signal 0 and a pidfd. clone3 first; the legacy
 * clone when clone3 is filtered to ENOSYS (container runtimes do that). */
static pid_t clone_reaper(int *pidfd) {
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_PIDFD;
    ca.pidfd = (uint64_t)(uintptr_t)pidfd;
    ca.exit_signal = 0;
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0 && errno == ENOSYS)
        pid = syscall(SYS_clone, (unsigned long)CLONE_PIDFD, NULL, pidfd, NULL, 0);
    return (pid_t)pid;
}

void gvisor_client_init(gvisor_client *c) {
    memset(c, 0, sizeof *c);
    c->pidfd = c->status_fd = c->reaper_pidfd = -1;
}

/* Release the client's start: put it in the cgroup, then let it exec.
 * False (the client exits without running runsc) when it cannot be placed. */
static bool release_client(gvisor_client *c, const native_cgroup *cg, const client_join *join,
                           int *sync_w, al_error *err) {
    c->pidfd = pidfd_open_(c->pid);
    if (c->pidfd < 0) {
        sandbox_error_errno(err, "gvisor: pidfd_open");
    } else if (join->self || !cg || cg->version == 0 || cgroup_add_process(cg, c->pid, err)) {
        bool ok = write_full(*sync_w, "g", 1);
        close_fd(sync_w);
        if (ok) return true;
        sandbox_error_errno(err, "gvisor: starting runsc");
    }
    close_fd(sync_w); /* EOF: the client exits with 126 */
    return false;
}

static bool spawn_reaped(const char *const *argv, int in_fd, int out_fd, int err_fd,
                         const native_cgroup *cg, gvisor_client *c, al_error *err) {
    int sync[2], report[2];
    if (pipe2(sync, O_CLOEXEC) < 0) return sandbox_error_errno(err, "gvisor: pipe");
    if (pipe2(report, O_CLOEXEC) < 0) {
        close(sync[0]);
        close(sync[1]);
        return sandbox_error_errno(err, "gvisor: pipe");
    }
    client_join join;
    join_open(&join, cg);
    pid_t reaper = clone_reaper(&c->reaper_pidfd);
    if (reaper == 0) {
        close(sync[1]); /* so the client sees EOF if we give up */
        close(report[0]);
        reaper_main(argv, in_fd, out_fd, err_fd, sync[0], report[1], &join);
    }
    join_close(&join); /* the copies in the reaper and the client remain */
    close(sync[0]);
    close(report[1]);
    if (reaper < 0) {
        sandbox_error_errno(err, "gvisor: clone");
        close(sync[1]);
        close(report[0]);
        c->reaper_pidfd = -1;
        return false;
    }
    c->reaper = reaper;
    c->status_fd = report[0];
    int32_t pid = -1;
    if (!read_full(c->status_fd, &pid, sizeof pid, -1) || pid <= 0) {
        sandbox_error(err, AL_ERR_SYSTEM, "gvisor: the reaper could not start runsc");
        close(sync[1]);
        gvisor_client_finish(c, GVISOR_REAP_TIMEOUT_MS);
        return false;
    }
    c->pid = pid;
    if (release_client(c, cg, &join, &sync[1], err)) return true;
    gvisor_client_finish(c, GVISOR_REAP_TIMEOUT_MS);
    return false;
}

static bool spawn_direct(const char *const *argv, int in_fd, int out_fd, int err_fd,
                         const native_cgroup *cg, gvisor_client *c, al_error *err) {
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) < 0) return sandbox_error_errno(err, "gvisor: pipe");
    client_join join;
    join_open(&join, cg);
    pid_t pid = fork();
    if (pid < 0) {
        join_close(&join);
        close(sync[0]);
        close(sync[1]);
        return sandbox_error_errno(err, "gvisor: fork");
    }
    if (pid == 0) {
        close(sync[1]);
        client_main(argv, in_fd, out_fd, err_fd, sync[0], &join);
    }
    join_close(&join);
    close(sync[0]);
    c->pid = pid;
    if (release_client(c, cg, &join, &sync[1], err)) return true;
    gvisor_client_finish(c, GVISOR_REAP_TIMEOUT_MS);
    return false;
}

bool gvisor_spawn(const char *const *argv, int in_fd, int out_fd, int err_fd,
                  const native_cgroup *cg, bool reaped, gvisor_client *c, al_error *err) {
    gvisor_client_init(c);
    return reaped ? spawn_reaped(argv, in_fd, out_fd, err_fd, cg, c, err)
                  : spawn_direct(argv, in_fd, out_fd, err_fd, cg, c, err);
}

void gvisor_client_kill(const gvisor_client *c) { pidfd_kill(c->pidfd); }

int gvisor_client_status(gvisor_client *c) {
    if (c->status_known) return c->status;
    int status = -1;
    if (c->reaper) {
        int32_t s;
        if (c->status_fd >= 0 && read_full(c->status_fd, &s, sizeof s, STATUS_WAIT_MS)) status = s;
        close_fd(&c->status_fd);
    } else if (c->pid > 0) {
        pid_t r;
        while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR) {}
        if (r != c->pid) status = -1;
    }
    c->status = status;
    c->status_known = true;
    return status;
}

void gvisor_client_finish(gvisor_client *c, int timeout_ms) {
    if (!c->reaper && c->pid > 0 && !c->status_known) {
        /* Our own child still unreaped: it must not become a zombie. */
        pidfd_kill(c->pidfd);
        gvisor_client_status(c);
    }
    close_fd(&c->pidfd);
    close_fd(&c->status_fd);
    if (c->reaper_pidfd >= 0) {
        /* The reaper exits once everything it adopted is gone; whoever
         * kills the sandbox does so before this. */
        struct pollfd pfd = {.fd = c->reaper_pidfd, .events = POLLIN};
        int r;
        while ((r = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {}
        if (r == 0) pidfd_kill(c->reaper_pidfd); /* its orphans go to pid 1 */
        siginfo_t info;
        while (waitid((idtype_t)P_PIDFD, (id_t)c->reaper_pidfd, &info, WEXITED | __WALL) < 0 &&
               errno == EINTR) {}
        close_fd(&c->reaper_pidfd);
    }
    c->reaper = 0;
    c->pid = 0;
}
