/*
 * native.c — native_run: the parent side of the native backend (native.h).
 *
 * One run, in order:
 *   1. plan: argv/envp copies (the policy's env plus PATH, HOME, LANG when it
 *      does not set them), cwd, the host ids the guest maps to, one fd per
 *      granted directory opened here as the caller, the limits;
 *   2. channels: stdout/stderr pipes, a sealed memfd holding stdin, the
 *      SOCK_SEQPACKET control pair, the sync socket;
 *   3. a cgroup v2 cgroup (memory, pids, cpu) when v2 has the controllers;
 *   4. clone3 of the sandbox's init into new user, pid, mount, network, ipc
 *      and uts namespaces, fork-like (no shared memory, so init runs on its
 *      own copy of this stack and heap and never calls malloc), straight
 *      into the v2 cgroup; then the uid/gid maps and the sync byte that lets
 *      init go on. While init builds the new root, this process makes the
 *      v1 cgroup when there was no v2 one (or neither: the rlimit
 *      fallbacks) and tells init, which moves itself in before it forks the
 *      program (native.h, "the sync protocol"), then compiles the seccomp
 *      filter to BPF (libseccomp allocates, so never in the child) and sends
 *      it for the program's process to load just before execve. Neither
 *      waits on the other, and every step that makes the sandbox has
 *      happened before the program runs;
 *   5. the event loop: output pipes, control messages, seccomp notifications
 *      (answered EPERM and counted), the wall deadline, the cgroup's CPU
 *      time and the embedder's cancel flag (al_policy.cancel, looked at
 *      every SANDBOX_CANCEL_POLL_MS), until init's pidfd says it exited;
 *   6. reap init (rusage), read the cgroup's figures, map the outcome to a
 *      status, remove the cgroup, close and free everything.
 *
 * Invariants:
 *  - every fd and allocation belongs to the native_run_ctx and is released
 *    by ctx_release on every path; the result owns only its output copies;
 *  - init is cloned with exit_signal 0: no SIGCHLD reaches the embedder, an
 *    embedder's SIGCHLD=SIG_IGN cannot auto-reap it and its waitpid(-1)
 *    loops cannot steal it (they do not see clone children without __WALL);
 *    only this file reaps it, by pid, so there is never a zombie left;
 *  - the loop always ends: when init exits (pidfd), and a wall, CPU or
 *    cancel kill SIGKILLs init, which the kernel turns into the death of the whole pid
 *    namespace; a kill not acted on within KILL_GRACE_NS ends it anyway;
 *  - nothing the sandbox sends is trusted for more than it can say: control
 *    messages must have the exact size and a known kind, only the first of
 *    each is used, stray fds are closed, strings are re-terminated;
 *  - no user namespace, no run: clone failing with EPERM/EINVAL/ENOSPC/
 *    EUSERS is AL_STATUS_UNSUPPORTED, never a weaker sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "native.h"
#include "net.h"

/* The new root's tmpfs is mounted on this host directory, inside init's
 * private mount namespace only. It must exist on every host, be searchable
 * by the guest uid and hold nothing the new root is built from: /usr, /bin,
 * /lib*, /etc and /dev are bound by name, the grants from fds (never by a
 * path that /tmp could shadow), /proc/self/fd must stay visible. /tmp is
 * all of that (FHS-mandated, mode 1777). */
#define NATIVE_ROOT_MOUNT "/tmp"
#define NATIVE_DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin"
#define NATIVE_DEFAULT_HOME "HOME=/tmp"
#define NATIVE_DEFAULT_LANG "LANG=C.UTF-8"
#define NATIVE_ROOT_HOST_ID 1000 /* the host uid/gid of the guest when airlock runs as root */
#define NATIVE_CPU_POLL_NS UINT64_C(50000000)
#define KILL_GRACE_NS UINT64_C(5000000000)
#define NATIVE_NS_FLAGS \
    (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

typedef struct native_run_ctx {
    const al_policy *policy;
    al_result *result;
    native_plan plan;             /* the child's copy is made by clone */
    char **argv, **envp;          /* arrays owned here; strings borrowed from the policy */
    /* the parent's ends */
    int out_r, err_r, ctl, sync_w, notify_fd, pidfd;
    pid_t pid;
    native_cgroup cg;
    bool cg_made;
    char cg_name[96];             /* sandbox_new_id: the cgroup's name, either version */
    cgroup_snapshot cg_snap;      /* where the hierarchies are, for both steps */
    bool cg_have_snap;
    int cg_dir;                   /* v2: the cgroup for CLONE_INTO_CGROUP, -1: none */
    bool cg_joined_at_clone;      /* v2: clone3 put init into the cgroup */
    egress_gateway *egress;       /* NULL: the policy grants no network */
    native_cgroup_stats stats;
    bool stats_read;              /* stats are final (see read_final_stats) */
    sandbox_capture out, err;
    bool out_open, err_open, ctl_open;
    /* what happened */
    bool init_exited, reaped, killed, timed_out, cpu_over, cancelled;
    bool got_exit, got_error, exec_failed;
    int wait_status, exec_errno, init_status;
    native_msg error_msg;
    uint64_t denied, t0, t_end, deadline, killed_at, next_cpu_check;
    struct rusage ru;
} native_run_ctx;

/* ---- 1. the plan ------------------------------------------------------------------ */

static bool env_sets(const al_policy *p, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < p->nenv; i++)
        if (strncmp(p->env[i], key, n) == 0 && p->env[i][n] == '=') return true;
    return false;
}

/* The strings stay the policy's (it outlives the run; nothing writes them):
 * only the NULL-terminated arrays execve needs are made here. */
static bool build_argv_envp(native_run_ctx *ctx) {
    const al_policy *p = ctx->policy;
    if (p->argc == 0) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, AL_ERR_ARGUMENT,
                           "native: argv is empty (argv[0] names the program)");
        return false;
    }
    if (p->argc > NATIVE_MAX_ARGS || p->nenv > NATIVE_MAX_ENV) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, AL_ERR_LIMIT,
                           "native: at most %d arguments and %d environment entries",
                           NATIVE_MAX_ARGS, NATIVE_MAX_ENV);
        return false;
    }
    ctx->argv = calloc(p->argc + 1, sizeof *ctx->argv);
    ctx->envp = calloc(p->nenv + 4 + 4, sizeof *ctx->envp); /* + defaults + proxy */
    if (!ctx->argv || !ctx->envp) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, AL_ERR_NOMEM, "native: out of memory");
        return false;
    }
    for (size_t i = 0; i < p->argc; i++) ctx->argv[i] = (char *)p->argv[i];
    size_t n = 0;
    for (size_t i = 0; i < p->nenv; i++) ctx->envp[n++] = (char *)p->env[i];
    if (!env_sets(p, "PATH")) ctx->envp[n++] = (char *)NATIVE_DEFAULT_PATH;
    if (!env_sets(p, "HOME")) ctx->envp[n++] = (char *)NATIVE_DEFAULT_HOME;
    if (!env_sets(p, "LANG")) ctx->envp[n++] = (char *)NATIVE_DEFAULT_LANG;
    /* After the policy's own: where a name repeats, getenv takes the first,
     * and a policy that set HTTP_PROXY itself wants its value (it can only
     * ever reach the same listener). */
    if (egress_enabled(&p->egress))
        for (size_t i = 0; egress_proxy_env[i] && i < 4; i++)
            ctx->envp[n++] = (char *)egress_proxy_env[i];
    ctx->plan.argv = ctx->argv;
    ctx->plan.envp = ctx->envp;
    return true;
}

/* An absolute guest path without repeated or trailing slashes (the policy
 * check already refused "." and ".." components). */
static void normalise_guest(char *out, const char *in) {
    size_t n = 0;
    for (const char *c = in; *c && n < PATH_MAX - 1; c++) {
        if (*c == '/' && n > 0 && out[n - 1] == '/') continue;
        out[n++] = *c;
    }
    if (n > 1 && out[n - 1] == '/') n--;
    out[n] = 0;
}

/* Open the granted directory as the caller, now: later swaps of the host
 * path (a symlink planted after the check) cannot redirect the bind, and the
 * guest uid needs no search permission on the host path. As root, turn it
 * into a detached copy of the directory and its submounts (open_tree
 * OPEN_TREE_CLONE, recursive like mount.c's bind): the kernel refuses to
 * bind a mount of another mount namespace, and init can attach a detached
 * one into its own (init.c, localise_grants). */
static bool open_grant(native_run_ctx *ctx, size_t i) {
    const al_dir_grant *g = &ctx->policy->dirs[i];
    native_grant *ng = &ctx->plan.grants[i];
    ng->host_fd = -1;
    normalise_guest(ng->guest, g->guest_path);
    if (strcmp(ng->guest, "/") == 0) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, AL_ERR_ARGUMENT,
                           "native: dir %s: cannot be granted as the sandbox's root", g->host_path);
        return false;
    }
    ng->read_only = g->read_only;
    int fd = open(g->host_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        sandbox_set_errno(ctx->result, "native: dir %s", g->host_path);
        return false;
    }
    if (geteuid() == 0) {
        int tree = (int)syscall(SYS_open_tree, fd, "",
                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (tree >= 0) {
            close(fd);
            fd = tree;
        }
        /* else keep the plain fd: init re-opens it by path, as the guest */
    }
    ng->host_fd = fd;
    return true;
}

static bool build_grants(native_run_ctx *ctx) {
    const al_policy *p = ctx->policy;
    if (p->ndirs > NATIVE_MAX_GRANTS) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, AL_ERR_LIMIT,
                           "native: at most %d granted directories", NATIVE_MAX_GRANTS);
        return false;
    }
    for (size_t i = 0; i < p->ndirs; i++) {
        if (!open_grant(ctx, i)) return false;
        ctx->plan.ngrants = i + 1;
    }
    return true;
}

static void build_identity_and_limits(native_run_ctx *ctx) {
    const al_policy *p = ctx->policy;
    native_plan *plan = &ctx->plan;
    if (p->cwd) normalise_guest(plan->cwd, p->cwd);
    else if (plan->ngrants > 0) memcpy(plan->cwd, plan->grants[0].guest, sizeof plan->cwd);
    else memcpy(plan->cwd, "/tmp", 5);
    /* Never host root: as root the guest is host uid/gid 1000 (the identity
     * gVisor's process user has too); otherwise the caller itself, which is
     * also the only mapping an unprivileged caller may write. */
    bool root = geteuid() == 0;
    plan->host_uid = root ? NATIVE_ROOT_HOST_ID : geteuid();
    plan->host_gid = root ? NATIVE_ROOT_HOST_ID : getegid();
    plan->tmpfs_bytes = p->tmpfs_bytes;
    memcpy(plan->root_mount, NATIVE_ROOT_MOUNT, sizeof NATIVE_ROOT_MOUNT);
    plan->cpu_time_ms = p->cpu_time_ms;
    plan->memory_bytes = p->max_memory_bytes;
    /* +1: init is a process of the sandbox too (in the cgroup and under the
     * guest uid), so the program gets the max_processes the policy names. */
    plan->max_processes = p->max_processes ? p->max_processes + 1 : 0;
    plan->max_open_files = p->max_open_files;
    plan->max_file_size = p->max_file_size;
    plan->seccomp_notify = true;
    plan->landlock_abi = landlock_abi_version();
}

/* ---- 2. channels ---------------------------------------------------------------------- */

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* stdin is a memfd (not a pipe): it holds all the bytes at once, so nothing
 * here has to feed a program that may never read, and sealed it cannot be
 * grown or rewritten by the program. */
static int make_stdin(const al_policy *p) {
    int fd = memfd_create("airlock-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < p->stdin_len) {
        ssize_t n = write(fd, p->stdin_data + done, p->stdin_len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int saved = n < 0 ? errno : EIO;
            close(fd);
            errno = saved;
            return -1;
        }
        done += (size_t)n;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
        lseek(fd, 0, SEEK_SET) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static bool set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* The sync channel is a socket, not a pipe, so the parent's one write can
 * use MSG_NOSIGNAL: a dead init must not SIGPIPE the embedder. */
static bool open_channels(native_run_ctx *ctx) {
    native_plan *plan = &ctx->plan;
    int po[2], pe[2], pc[2], ps[2];
    if (pipe2(po, O_CLOEXEC) < 0) goto fail;
    ctx->out_r = po[0];
    plan->stdout_fd = po[1];
    if (pipe2(pe, O_CLOEXEC) < 0) goto fail;
    ctx->err_r = pe[0];
    plan->stderr_fd = pe[1];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pc) < 0) goto fail;
    ctx->ctl = pc[0];
    plan->control_fd = pc[1];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ps) < 0) goto fail;
    ctx->sync_w = ps[0];
    plan->sync_fd = ps[1];
    plan->stdin_fd = make_stdin(ctx->policy);
    if (plan->stdin_fd < 0) goto fail;
    if (!set_nonblock(ctx->out_r) || !set_nonblock(ctx->err_r) || !set_nonblock(ctx->ctl))
        goto fail;
    ctx->out_open = ctx->err_open = ctx->ctl_open = true;
    return true;
fail:
    sandbox_set_errno(ctx->result, "native: pipes and sockets");
    return false;
}

/* ---- 3. the cgroup ------------------------------------------------------------------- */

/* Getting init into the cgroup must not cost a parent's write of its pid to
 * cgroup.procs, which takes the kernel's global threadgroup lock and waits
 * for an RCU grace period (5-20 ms: native.h, cgroup_open_self_join). v2:
 * clone3 makes init there (CLONE_INTO_CGROUP), so the cgroup is made before
 * clone. v1: init moves its own single thread in, so the cgroup is made
 * after clone, while init builds the new root (make_cgroup_late). When the
 * cheap way is refused the parent moves init the slow way: slower, never
 * weaker. */
static bool make_cgroup(native_run_ctx *ctx, int version) {
    al_error e;
    memset(&e, 0, sizeof e);
    if (!cgroup_create_version(ctx->cg_have_snap ? &ctx->cg_snap : NULL, version, &ctx->cg,
                               ctx->cg_name, ctx->policy->max_memory_bytes,
                               ctx->plan.max_processes, &e)) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, e.kind ? e.kind : AL_ERR_SYSTEM,
                           "native: cgroup: %s", e.message);
        return false;
    }
    ctx->cg_made = ctx->cg.version != 0;
    /* Without a controller the rlimit fallbacks apply (rlimit.c): RLIMIT_AS
     * per process instead of the tree's memory, RLIMIT_NPROC for pids. */
    ctx->plan.cgroup_memory = ctx->cg.version != 0 && ctx->cg.has_memory;
    ctx->plan.cgroup_pids = ctx->cg.version != 0 && ctx->cg.has_pids;
    return true;
}

static bool make_cgroup_early(native_run_ctx *ctx) {
    sandbox_new_id(ctx->cg_name, sizeof ctx->cg_name);
    snprintf(ctx->result->execution_id, sizeof ctx->result->execution_id, "%.63s", ctx->cg_name);
    if (cgroup_v1_has_limits()) return true; /* no v2 cgroup can limit: all after clone */
    /* Without a snapshot (out of memory) each lookup reads the files. */
    ctx->cg_have_snap = cgroup_snapshot_take(&ctx->cg_snap);
    if (!make_cgroup(ctx, 2)) return false;
    if (ctx->cg.version == 2) ctx->cg_dir = cgroup_open_dir(&ctx->cg);
    return true;
}

/* ---- 4. starting init -------------------------------------------------------------------- */

static void close_child_ends(native_run_ctx *ctx) {
    native_plan *plan = &ctx->plan;
    close_fd(&plan->stdin_fd);
    close_fd(&plan->stdout_fd);
    close_fd(&plan->stderr_fd);
    close_fd(&plan->control_fd);
    close_fd(&plan->sync_fd);
    for (size_t i = 0; i < plan->ngrants; i++) close_fd(&plan->grants[i].host_fd);
}

/* Fork-like clone into the new namespaces. clone3 first, straight into the
 * v2 cgroup when there is one (*in_cgroup tells whether that happened; when
 * the kernel refuses CLONE_INTO_CGROUP, the caller moves init itself); the
 * legacy clone when clone3 is filtered to ENOSYS (container runtimes do
 * that). */
static pid_t clone_init(int *pidfd, int cgroup_dir, bool *in_cgroup) {
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = NATIVE_NS_FLAGS | CLONE_PIDFD;
    ca.pidfd = (uint64_t)(uintptr_t)pidfd;
    ca.exit_signal = 0;
    long pid = -1;
    *in_cgroup = false;
    if (cgroup_dir >= 0) {
        struct clone_args into = ca;
        into.flags |= CLONE_INTO_CGROUP;
        into.cgroup = (uint64_t)cgroup_dir;
        pid = syscall(SYS_clone3, &into, sizeof into);
        if (pid == 0) return 0;
        *in_cgroup = pid > 0;
    }
    if (pid < 0) pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0 && errno == ENOSYS)
        pid = syscall(SYS_clone, (unsigned long)(NATIVE_NS_FLAGS | CLONE_PIDFD), NULL, pidfd, NULL, 0);
    return (pid_t)pid;
}

static void kill_init(native_run_ctx *ctx) {
    if (ctx->pidfd >= 0 && !ctx->killed) {
        syscall(SYS_pidfd_send_signal, ctx->pidfd, SIGKILL, NULL, 0);
        ctx->killed = true;
        ctx->killed_at = sandbox_now_ns();
    }
}

static bool write_proc(pid_t pid, const char *file, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int saved = errno;
    close(fd);
    errno = saved;
    if (n >= 0 && (size_t)n != len) errno = EIO;
    return n >= 0 && (size_t)n == len;
}

/* Guest 1000 -> plan's host ids, nothing else: every other id (root
 * included) is unmapped inside. "deny" for setgroups is what the kernel
 * requires of an unprivileged writer; as root it is left "allow" so init can
 * drop the supplementary groups it inherited (init.c, become_guest). */
static bool write_id_maps(native_run_ctx *ctx) {
    char map[64];
    if (geteuid() != 0 && !write_proc(ctx->pid, "setgroups", "deny")) {
        sandbox_set_errno(ctx->result, "native: write setgroups");
        return false;
    }
    snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_GUEST_UID, (unsigned)ctx->plan.host_uid);
    if (!write_proc(ctx->pid, "uid_map", map)) {
        sandbox_set_errno(ctx->result, "native: write uid_map");
        return false;
    }
    snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_GUEST_GID, (unsigned)ctx->plan.host_gid);
    if (!write_proc(ctx->pid, "gid_map", map)) {
        sandbox_set_errno(ctx->result, "native: write gid_map");
        return false;
    }
    return true;
}

static bool start_init(native_run_ctx *ctx) {
    ctx->t0 = sandbox_now_ns();
    if (ctx->policy->timeout_ms) ctx->deadline = ctx->t0 + ctx->policy->timeout_ms * 1000000u;
    int pidfd = -1;
    pid_t pid = clone_init(&pidfd, ctx->cg_dir, &ctx->cg_joined_at_clone);
    if (pid == 0) _exit(native_init_main(&ctx->plan));
    if (pid < 0) {
        int e = errno;
        if (e == EPERM || e == EINVAL || e == ENOSPC || e == EUSERS) {
            sandbox_set_status(ctx->result, AL_STATUS_UNSUPPORTED, AL_ERR_UNSUPPORTED,
                               "native: cannot create the sandbox's user namespace (clone: %s); "
                               "user namespaces are disabled or restricted on this host "
                               "(see airlock doctor)", strerror(e));
        } else {
            errno = e;
            sandbox_set_errno(ctx->result, "native: clone the sandbox init");
        }
        return false;
    }
    ctx->pid = pid;
    ctx->pidfd = pidfd;
    close_child_ends(ctx);
    close_fd(&ctx->cg_dir);
    al_error e;
    memset(&e, 0, sizeof e);
    if (!write_id_maps(ctx)) goto fail;
    /* v2 without CLONE_INTO_CGROUP (refused, or no clone3): init is not
     * running anything of the sandbox before the sync byte, so joining here
     * is as early as at clone. (v1 comes later: make_cgroup_late.) */
    if (ctx->cg.version == 2 && !ctx->cg_joined_at_clone &&
        !cgroup_add_process(&ctx->cg, pid, &e)) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, e.kind ? e.kind : AL_ERR_SYSTEM,
                           "native: cgroup: %s", e.message);
        goto fail;
    }
    /* A failed send means init is already gone; the loop sees it exit. */
    while (send(ctx->sync_w, "g", 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {}
    return true;
fail:
    /* init is blocked on the sync socket: kill it, the loop is skipped, and
     * ctx_release reaps it. */
    kill_init(ctx);
    return false;
}

/* Send native_cgroup_msg with fds (n of them). */
static bool send_cgroup_msg(int sock, const native_cgroup_msg *msg, const int *fds, size_t n) {
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(NATIVE_CGROUP_JOIN_MAX * sizeof(int))];
    } cbuf;
    memset(&cbuf, 0, sizeof cbuf);
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = sizeof *msg};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n * sizeof(int));
    }
    ssize_t w;
    do {
        w = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (w < 0 && errno == EINTR);
    return w == (ssize_t)sizeof *msg;
}

/* After the sync byte: the v1 cgroup (when there is no v2 one), then the
 * message init waits for before it forks the program. Any failure kills
 * init: it must not go on without knowing where it belongs. */
static bool make_cgroup_late(native_run_ctx *ctx) {
    int fds[NATIVE_CGROUP_JOIN_MAX];
    for (size_t i = 0; i < NATIVE_CGROUP_JOIN_MAX; i++) fds[i] = -1;
    native_cgroup_msg msg = {.magic = NATIVE_CGROUP_MSG_MAGIC};
    if (ctx->cg.version == 0 && !ctx->cg_have_snap)
        ctx->cg_have_snap = cgroup_snapshot_take(&ctx->cg_snap);
    bool ok = ctx->cg.version != 0 || make_cgroup(ctx, 1);
    if (ok && ctx->cg.version == 1 && !cgroup_open_self_join(&ctx->cg, fds)) {
        al_error e;
        memset(&e, 0, sizeof e);
        ok = cgroup_add_process(&ctx->cg, ctx->pid, &e);
        if (!ok)
            sandbox_set_status(ctx->result, AL_STATUS_ERROR, e.kind ? e.kind : AL_ERR_SYSTEM,
                               "native: cgroup: %s", e.message);
    }
    if (ctx->cg_have_snap) cgroup_snapshot_free(&ctx->cg_snap);
    ctx->cg_have_snap = false;
    size_t n = 0;
    while (n < NATIVE_CGROUP_JOIN_MAX && fds[n] >= 0) n++;
    msg.cgroup_memory = ctx->plan.cgroup_memory;
    msg.cgroup_pids = ctx->plan.cgroup_pids;
    msg.ntasks_fds = (uint8_t)n;
    /* A failed send means init is gone (the loop sees it exit) or cannot
     * be told: either way it must end. */
    if (ok && !send_cgroup_msg(ctx->sync_w, &msg, fds, n)) kill_init(ctx);
    for (size_t i = 0; i < n; i++) close(fds[i]);
    if (!ok) kill_init(ctx);
    return ok;
}

/* The seccomp filter is compiled here, not in the child: libseccomp
 * allocates, and the child is a clone of this possibly multi-threaded
 * process, where an allocator lock held by another thread at clone time
 * would never be released (native.h's child rules). It is compiled after
 * the sync byte, while init builds the new root (which takes longer), into
 * this process's plan (init's copy was made at clone, with an empty filter)
 * and sent after that byte; the program's process reads it just before it
 * loads it. Without it that process cannot go on (seccomp_install refuses
 * an empty filter), so on any failure here init is killed. */
static bool send_seccomp(native_run_ctx *ctx) {
    al_error e;
    memset(&e, 0, sizeof e);
    if (!seccomp_prepare(&ctx->plan.seccomp, ctx->plan.seccomp_notify, &e)) {
        sandbox_set_status(ctx->result, AL_STATUS_ERROR, e.kind ? e.kind : AL_ERR_SYSTEM,
                           "native: %s", e.message);
        kill_init(ctx);
        return false;
    }
    /* A failed send means init is already gone (the loop sees it exit) or
     * cannot get the filter: either way it must end. */
    if (!seccomp_send(ctx->sync_w, &ctx->plan.seccomp)) kill_init(ctx);
    return true;
}

/* ---- 5. the event loop ------------------------------------------------------------------ */

static void take_message(native_run_ctx *ctx, const native_msg *msg, int *fds, size_t nfds) {
    switch (msg->kind) {
    case NATIVE_MSG_ERROR:
        if (!ctx->got_error) {
            ctx->got_error = true;
            ctx->error_msg = *msg;
            ctx->error_msg.step[sizeof ctx->error_msg.step - 1] = 0;
        }
        break;
    case NATIVE_MSG_NOTIFY_FD:
        if (ctx->notify_fd < 0 && nfds == 1) {
            ctx->notify_fd = fds[0];
            fds[0] = -1;
        }
        break;
    case NATIVE_MSG_EXEC_FAILED:
        if (!ctx->exec_failed) {
            ctx->exec_failed = true;
            ctx->exec_errno = msg->err;
        }
        break;
    case NATIVE_MSG_EGRESS_LISTENER:
        if (ctx->egress && nfds == 1) {
            al_error err;
            int fd = fds[0];
            fds[0] = -1; /* the gateway owns it, whatever happens */
            if (!egress_gateway_attach(ctx->egress, fd, &err) && !ctx->got_error) {
                ctx->got_error = true;
                ctx->error_msg.err = errno;
                snprintf(ctx->error_msg.step, sizeof ctx->error_msg.step,
                         "start the egress relay");
                kill_init(ctx);
            }
        }
        break;
    case NATIVE_MSG_EXIT:
        if (!ctx->got_exit) {
            ctx->got_exit = true;
            ctx->wait_status = msg->wait_status;
        }
        break;
    default: break; /* unknown kinds are ignored */
    }
}

/* Read every queued control message; fds that come along and are not the
 * one expected listener are closed. */
static void read_control(native_run_ctx *ctx) {
    while (ctx->ctl_open) {
        native_msg msg;
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } cbuf;
        struct iovec iov = {.iov_base = &msg, .iov_len = sizeof msg};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                            .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf};
        ssize_t n = recvmsg(ctx->ctl, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) {
            ctx->ctl_open = false; /* every sender is gone */
            return;
        }
        int fds[4];
        size_t nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t j = 0; j < k; j++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
                if (nfds < 4) fds[nfds++] = fd;
                else close(fd);
            }
        }
        if ((size_t)n == sizeof msg && !(mh.msg_flags & MSG_TRUNC))
            take_message(ctx, &msg, fds, nfds);
        for (size_t j = 0; j < nfds; j++)
            if (fds[j] >= 0) close(fds[j]);
    }
}

/* The cancel flag, the wall deadline and the tree's CPU time. Once the
 * program's end is reported, only init's own exit is awaited; a deadline
 * passing then still kills init (it should be gone already) but is not the
 * program's outcome, and a cancel changes nothing. */
static void check_limits(native_run_ctx *ctx) {
    if (ctx->killed || ctx->init_exited) return;
    if (!ctx->got_exit && sandbox_cancel_requested(ctx->policy)) {
        ctx->cancelled = true;
        kill_init(ctx); /* the whole pid namespace, as on a timeout */
        return;
    }
    uint64_t now = sandbox_now_ns();
    if (ctx->deadline && now >= ctx->deadline) {
        ctx->timed_out = !ctx->got_exit;
        kill_init(ctx);
        return;
    }
    if (ctx->got_exit) return;
    uint64_t limit_ns = ctx->policy->cpu_time_ms * 1000000u;
    if (limit_ns && ctx->cg.version != 0 && ctx->cg.has_cpu && now >= ctx->next_cpu_check) {
        ctx->next_cpu_check = now + NATIVE_CPU_POLL_NS;
        native_cgroup_stats s;
        memset(&s, 0, sizeof s);
        cgroup_read_stats(&ctx->cg, &s);
        if (s.cpu_ns >= limit_ns) {
            ctx->cpu_over = true;
            kill_init(ctx);
        }
    }
}

/* Milliseconds until the next deadline that needs a look (-1: none). */
static int next_wakeup_ms(const native_run_ctx *ctx) {
    uint64_t now = sandbox_now_ns(), next = UINT64_MAX;
    if (ctx->killed) {
        next = ctx->killed_at + KILL_GRACE_NS;
    } else {
        if (ctx->deadline) next = ctx->deadline;
        if (ctx->policy->cancel && !ctx->got_exit) {
            uint64_t poll = now + (uint64_t)SANDBOX_CANCEL_POLL_MS * 1000000u;
            if (poll < next) next = poll;
        }
        if (ctx->policy->cpu_time_ms && ctx->cg.version != 0 && ctx->cg.has_cpu &&
            ctx->next_cpu_check < next)
            next = ctx->next_cpu_check;
    }
    if (next == UINT64_MAX) return -1;
    if (next <= now) return 0;
    uint64_t ms = (next - now + 999999u) / 1000000u;
    return ms > 60000 ? 60000 : (int)ms;
}

static void read_output(native_run_ctx *ctx, bool is_err) {
    int fd = is_err ? ctx->err_r : ctx->out_r;
    sandbox_capture *c = is_err ? &ctx->err : &ctx->out;
    bool *open_flag = is_err ? &ctx->err_open : &ctx->out_open;
    if (*open_flag && capture_read_fd(c, fd) != 1) *open_flag = false;
}

static void answer_notifications(native_run_ctx *ctx, short revents) {
    if ((revents & POLLIN) && seccomp_answer(ctx->notify_fd, &ctx->denied)) return;
    if (revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) close_fd(&ctx->notify_fd);
}

/* The cgroup's figures, once they are final: when init reports the
 * program's end it has killed and reaped every other process of the
 * sandbox, so nothing is left to use memory or CPU but init itself, which
 * is exiting. Read then, they overlap with that exit (tearing down the
 * namespaces takes a while) instead of following it; otherwise after init
 * is reaped. */
static void read_final_stats(native_run_ctx *ctx) {
    if (ctx->stats_read) return;
    ctx->stats_read = true;
    if (ctx->cg.version != 0) cgroup_read_stats(&ctx->cg, &ctx->stats);
}

/* Once init has reported the program's end, every other process of the
 * sandbox is dead and reaped and init has closed its copies of the pipes:
 * what they hold is final, and drain() reads it after init has exited. So
 * from then on only init's exit is watched — each hang-up would otherwise be
 * one more wakeup before it. */
static void event_loop(native_run_ctx *ctx) {
    while (!ctx->init_exited) {
        struct pollfd p[5];
        int n = 0, i_out = -1, i_err = -1, i_ctl = -1, i_notify = -1;
        bool watch = !ctx->got_exit;
        if (watch && ctx->out_open) { i_out = n; p[n++] = (struct pollfd){.fd = ctx->out_r, .events = POLLIN}; }
        if (watch && ctx->err_open) { i_err = n; p[n++] = (struct pollfd){.fd = ctx->err_r, .events = POLLIN}; }
        if (watch && ctx->ctl_open) { i_ctl = n; p[n++] = (struct pollfd){.fd = ctx->ctl, .events = POLLIN}; }
        if (watch && ctx->notify_fd >= 0) {
            i_notify = n;
            p[n++] = (struct pollfd){.fd = ctx->notify_fd, .events = POLLIN};
        }
        int i_pid = n;
        p[n++] = (struct pollfd){.fd = ctx->pidfd, .events = POLLIN};
        int r = poll(p, (nfds_t)n, next_wakeup_ms(ctx));
        if (r < 0 && errno != EINTR) {
            kill_init(ctx); /* cannot watch it any more: end it */
            break;
        }
        if (r > 0) {
            if (i_notify >= 0 && p[i_notify].revents) answer_notifications(ctx, p[i_notify].revents);
            if (i_out >= 0 && p[i_out].revents) read_output(ctx, false);
            if (i_err >= 0 && p[i_err].revents) read_output(ctx, true);
            if (i_ctl >= 0 && p[i_ctl].revents) read_control(ctx);
            if (p[i_pid].revents) ctx->init_exited = true;
        }
        if (ctx->got_exit) read_final_stats(ctx);
        check_limits(ctx);
        if (ctx->killed && sandbox_now_ns() >= ctx->killed_at + KILL_GRACE_NS) break;
    }
}

/* ---- 6. the outcome ---------------------------------------------------------------------- */

/* Reap init (and only it, by pid). When it has exited, or was killed and
 * the kernel is taking the namespace down, a blocking wait is bounded; when
 * it ignored SIGKILL for the whole grace period, do not hang the caller. */
static void reap_init(native_run_ctx *ctx) {
    if (ctx->pid <= 0 || ctx->reaped) return;
    int flags = __WALL | (ctx->init_exited || ctx->killed ? 0 : WNOHANG);
    if (!ctx->init_exited && ctx->killed && sandbox_now_ns() >= ctx->killed_at + KILL_GRACE_NS)
        flags |= WNOHANG;
    for (;;) {
        pid_t w = wait4(ctx->pid, &ctx->init_status, flags, &ctx->ru);
        if (w < 0 && errno == EINTR) continue;
        ctx->reaped = w == ctx->pid;
        return;
    }
}

/* The last bytes: everything the sandbox wrote is in the pipes by now
 * (the pid namespace is gone once init has exited), so read what is there
 * without waiting for an EOF a leaked fd could withhold forever. */
static void drain(native_run_ctx *ctx) {
    read_output(ctx, false);
    read_output(ctx, true);
    read_control(ctx);
    if (ctx->notify_fd >= 0) close_fd(&ctx->notify_fd);
}

static void set_outcome(al_result *r, al_status status, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_outcome(al_result *r, al_status status, al_error_kind kind, const char *fmt, ...) {
    r->status = status;
    memset(&r->error, 0, sizeof r->error);
    r->error.kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error.message, sizeof r->error.message, fmt, ap);
    va_end(ap);
}

static const char *signal_name(int sig) {
    const char *n = sigabbrev_np(sig);
    return n ? n : "?";
}

/* The program's own end, from the wait status init reported. */
static void classify_wait(native_run_ctx *ctx, uint64_t cpu_ns, uint32_t *hit) {
    al_result *r = ctx->result;
    int st = ctx->wait_status;
    if (WIFEXITED(st)) {
        r->exit_code = WEXITSTATUS(st);
        if (r->exit_code == 0) set_outcome(r, AL_STATUS_OK, AL_OK, "%s", "");
        else set_outcome(r, AL_STATUS_EXIT, AL_OK, "exited with code %d", r->exit_code);
        return;
    }
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
    r->term_signal = sig;
    r->exit_code = 128 + sig;
    uint64_t cpu_limit_ns = ctx->policy->cpu_time_ms * 1000000u;
    if (sig == SIGKILL && ctx->stats.oom_kills > 0) {
        *hit |= AL_LIMIT_MEMORY;
        set_outcome(r, AL_STATUS_MEMORY_LIMIT, AL_ERR_LIMIT,
                    "killed at the memory limit of %" PRIu64 " bytes", ctx->policy->max_memory_bytes);
    } else if (cpu_limit_ns && (sig == SIGXCPU || (sig == SIGKILL && cpu_ns >= cpu_limit_ns))) {
        *hit |= AL_LIMIT_CPU;
        set_outcome(r, AL_STATUS_CPU_LIMIT, AL_ERR_LIMIT, "CPU time limit of %" PRIu64 " ms used up",
                    ctx->policy->cpu_time_ms);
    } else {
        if (sig == SIGXFSZ) *hit |= AL_LIMIT_FILE_SIZE;
        set_outcome(r, AL_STATUS_SIGNALED, AL_OK, "killed by signal %d (SIG%s)", sig, signal_name(sig));
    }
}

static void classify(native_run_ctx *ctx) {
    al_result *r = ctx->result;
    const al_policy *p = ctx->policy;
    uint64_t ru_ns = (uint64_t)ctx->ru.ru_utime.tv_sec * 1000000000u +
                     (uint64_t)ctx->ru.ru_utime.tv_usec * 1000u +
                     (uint64_t)ctx->ru.ru_stime.tv_sec * 1000000000u +
                     (uint64_t)ctx->ru.ru_stime.tv_usec * 1000u;
    r->cpu_ns = ctx->stats.cpu_ns ? ctx->stats.cpu_ns : ru_ns;
    r->peak_memory_bytes = ctx->stats.peak_memory_bytes
                               ? ctx->stats.peak_memory_bytes
                               : (uint64_t)(ctx->ru.ru_maxrss > 0 ? ctx->ru.ru_maxrss : 0) * 1024u;
    r->wall_ns = ctx->t_end - ctx->t0;
    r->denied_syscalls = ctx->denied;
    uint32_t hit = 0;
    if (ctx->stats.oom_kills > 0) hit |= AL_LIMIT_MEMORY;
    if (ctx->stats.pids_refused > 0) hit |= AL_LIMIT_PROCESSES;

    if (ctx->got_error && strstr(ctx->error_msg.step, "host /proc is partly covered")) {
        /* A container runtime masked parts of the host's /proc, so the kernel
         * refuses a fresh proc mount; binding the host's /proc instead would
         * show host processes. Refuse, never run weaker. */
        set_outcome(r, AL_STATUS_UNSUPPORTED, AL_ERR_UNSUPPORTED,
                    "native: cannot mount a private /proc because the host's /proc has "
                    "paths mounted over it (e.g. Docker's masked paths; run the container "
                    "with --security-opt systempaths=unconfined): %s",
                    strerror(ctx->error_msg.err));
    } else if (ctx->got_error) {
        set_outcome(r, AL_STATUS_ERROR, AL_ERR_SYSTEM, "native: %s: %s", ctx->error_msg.step,
                    strerror(ctx->error_msg.err));
    } else if (ctx->exec_failed) {
        r->exit_code = 127;
        set_outcome(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "native: cannot execute '%s': %s",
                    p->argv[0], strerror(ctx->exec_errno));
    } else if (ctx->cancelled) {
        r->term_signal = SIGKILL;
        r->exit_code = 128 + SIGKILL;
        sandbox_set_cancelled(r, p, AL_OK);
    } else if (ctx->timed_out) {
        hit |= AL_LIMIT_WALL;
        r->term_signal = SIGKILL;
        r->exit_code = 128 + SIGKILL;
        set_outcome(r, AL_STATUS_TIMEOUT, AL_ERR_LIMIT, "timed out after %" PRIu64 " ms", p->timeout_ms);
    } else if (ctx->cpu_over) {
        hit |= AL_LIMIT_CPU;
        r->term_signal = SIGKILL;
        r->exit_code = 128 + SIGKILL;
        set_outcome(r, AL_STATUS_CPU_LIMIT, AL_ERR_LIMIT, "CPU time limit of %" PRIu64 " ms used up",
                    p->cpu_time_ms);
    } else if (ctx->got_exit) {
        classify_wait(ctx, r->cpu_ns, &hit);
    } else if (ctx->stats.oom_kills > 0) {
        r->term_signal = SIGKILL;
        r->exit_code = 128 + SIGKILL;
        set_outcome(r, AL_STATUS_MEMORY_LIMIT, AL_ERR_LIMIT,
                    "the sandbox was killed at the memory limit of %" PRIu64 " bytes",
                    p->max_memory_bytes);
    } else if (!ctx->reaped) {
        set_outcome(r, AL_STATUS_ERROR, AL_ERR_SYSTEM,
                    "native: the sandbox did not end after SIGKILL");
    } else {
        set_outcome(r, AL_STATUS_ERROR, AL_ERR_SYSTEM,
                    "native: the sandbox's init ended without reporting (wait status 0x%x)",
                    (unsigned)ctx->init_status);
    }

    capture_move_to_result(&ctx->out, &r->stdout_data, &r->stdout_len, &r->stdout_truncated);
    capture_move_to_result(&ctx->err, &r->stderr_data, &r->stderr_len, &r->stderr_truncated);
    if (r->stdout_truncated || r->stderr_truncated) {
        hit |= AL_LIMIT_OUTPUT;
        if (r->status == AL_STATUS_OK)
            set_outcome(r, AL_STATUS_OUTPUT_TRUNCATED, AL_ERR_LIMIT, "output past the cap was dropped");
    }
    r->limits_hit = hit;
}

/* ---- the run --------------------------------------------------------------------------- */

static native_run_ctx *ctx_new(const al_policy *policy, al_result *result) {
    native_run_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->policy = policy;
    ctx->result = result;
    ctx->out_r = ctx->err_r = ctx->ctl = ctx->sync_w = ctx->notify_fd = ctx->pidfd = -1;
    ctx->cg_dir = -1;
    native_plan *plan = &ctx->plan;
    plan->stdin_fd = plan->stdout_fd = plan->stderr_fd = plan->control_fd = plan->sync_fd = -1;
    /* grants[] is left as calloc made it: it spans 64 pages, and touching
     * them all costs a page fault each on every run; only the first
     * plan->ngrants entries are ever used, and open_grant sets each. */
    capture_init(&ctx->out, policy->stdout_cap);
    capture_init(&ctx->err, policy->stderr_cap);
    /* the event loop's reads hand the output on as it arrives */
    capture_stream_to(&ctx->out, policy, 1);
    capture_stream_to(&ctx->err, policy, 2);
    return ctx;
}

/* The proxy runs before the sandbox exists, so the guest's first
 * connection finds it; it is named after the execution (cg_name). */
static bool start_egress(native_run_ctx *ctx) {
    if (!egress_enabled(&ctx->policy->egress)) return true;
    char state[PATH_MAX];
    al_error err;
    if (!sandbox_state_dir(ctx->policy->state_dir, state, sizeof state, &err) ||
        !egress_gateway_start(ctx->policy, ctx->cg_name, state, &ctx->egress, &err)) {
        ctx->result->status = AL_STATUS_ERROR;
        ctx->result->error = err;
        return false;
    }
    ctx->plan.egress_listener = true;
    return true;
}

static void ctx_release(native_run_ctx *ctx) {
    if (ctx->pid > 0 && !ctx->reaped) {
        kill_init(ctx);
        reap_init(ctx);
    }
    /* after init is gone: the program can open no new connection */
    egress_gateway_stop(ctx->egress, ctx->result);
    ctx->egress = NULL;
    if (ctx->cg_made) cgroup_destroy(&ctx->cg);
    if (ctx->cg_have_snap) cgroup_snapshot_free(&ctx->cg_snap);
    close_child_ends(ctx);
    close_fd(&ctx->cg_dir);
    close_fd(&ctx->out_r);
    close_fd(&ctx->err_r);
    close_fd(&ctx->ctl);
    close_fd(&ctx->sync_w);
    close_fd(&ctx->notify_fd);
    close_fd(&ctx->pidfd);
    capture_free(&ctx->out);
    capture_free(&ctx->err);
    free(ctx->argv);
    free(ctx->envp);
    free(ctx);
}

bool native_run(const al_policy *policy, al_result *result) {
    if (!result) return false;
    snprintf(result->backend, sizeof result->backend, "native");
    native_run_ctx *ctx = ctx_new(policy, result);
    if (!ctx) {
        sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_NOMEM, "native: out of memory");
        return true;
    }
    if (build_argv_envp(ctx) && build_grants(ctx)) {
        build_identity_and_limits(ctx);
        if (open_channels(ctx) && make_cgroup_early(ctx) && start_egress(ctx) && start_init(ctx) &&
            make_cgroup_late(ctx) && send_seccomp(ctx)) {
            event_loop(ctx);
            reap_init(ctx);
            ctx->t_end = sandbox_now_ns();
            drain(ctx);
            read_final_stats(ctx);
            classify(ctx);
        }
    }
    /* Setup failures too get "" rather than NULL outputs, like every other
     * outcome. */
    if (!result->stdout_data)
        capture_move_to_result(&ctx->out, &result->stdout_data, &result->stdout_len,
                               &result->stdout_truncated);
    if (!result->stderr_data)
        capture_move_to_result(&ctx->err, &result->stderr_data, &result->stderr_len,
                               &result->stderr_truncated);
    ctx_release(ctx);
    return true;
}
