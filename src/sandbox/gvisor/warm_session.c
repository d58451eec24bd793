/*
 * warm_session.c — a warm gVisor sandbox: booted once (`runsc create` + `start`),
 * then each execution is one `runsc exec` into it, skipping the boot.
 *
 * The container's own process is an idle init:
 *     /bin/sh -c 'while :; do /bin/sleep 3600 & wait; done'
 * Executions are not its children, but their orphans (a program's
 * background processes whose parent exited) are reparented to it. dash's
 * `wait` reaps with waitpid(-1), so it also reaps those orphans; with
 * `sleep infinity` as init they would stay zombies and count against the
 * session's RLIMIT_NPROC until fork failed.
 *
 * Each `runsc exec` puts the program in a new session and process group
 * (pgid = its pid, which --internal-pid-file reports). A timeout or CPU
 * limit kills that process group from inside (a second exec running
 * `kill -s KILL -- -PGID` as the sandbox user), so state the session built
 * up (files in /tmp, earlier background processes) survives. A program that
 * deliberately leaves its process group (setsid) escapes that kill but not
 * the sandbox: it lives, contained by the session's limits, until
 * al_session_close. If the process group cannot be killed, the whole
 * sandbox is destroyed and the session is dead: later executions report
 * AL_STATUS_ERROR saying so.
 *
 * `runsc create` runs under a reaper (client.c), which adopts the sandbox
 * and gofer when create exits and reaps them the moment they die. Closing
 * (or a session found dead) is gvisor_teardown: one cgroup kill, the reaper
 * exits, then `runsc delete` has nothing left to wait for — about 30 ms,
 * where delete alone spent 1.2-1.9 s polling for a zombie that pid 1 was
 * slow to reap.
 *
 * Per-execution figures: cpu_ns is the cgroup's CPU time during the
 * execution (every process of the session and the sentry's own work);
 * peak_memory_bytes is the session's peak so far.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

struct gvisor_sandbox {
    gvisor_ctx ctx;
    gvisor_bundle bundle;
    native_cgroup cg;
    bool have_cgroup;
    gvisor_client create;     /* `runsc create`; its reaper adopts the sandbox */
    bool dead;                /* the sandbox is gone; executions are refused */
    char dead_reason[160];
    unsigned execs;           /* numbers the per-exec files in the bundle */
    uint64_t oom_base;        /* OOM kills seen before the current execution */
    gvisor_egress egress;     /* the session's proxy and network namespace, if granted */
};

static const char *const idle_init[] = {"/bin/sh", "-c",
                                        "while :; do /bin/sleep 3600 & wait; done"};

/* The sandbox and every process of it, gone (gvisor_teardown: cgroup
 * kill, the reaper reaps, then runsc delete finds nothing to wait for). */
static void sandbox_end(gvisor_sandbox *sb) {
    gvisor_teardown(&sb->ctx, sb->bundle.id, sb->have_cgroup ? &sb->cg : NULL, &sb->create);
    sb->have_cgroup = false;
}

static void mark_dead(gvisor_sandbox *sb, const char *why) {
    if (sb->dead) return;
    sb->dead = true;
    snprintf(sb->dead_reason, sizeof sb->dead_reason, "%s", why);
    sandbox_end(sb);
}

static void session_free(gvisor_sandbox *sb) {
    if (!sb->dead) sandbox_end(sb);
    gvisor_egress_stop(&sb->egress, NULL);
    gvisor_bundle_remove(&sb->bundle);
    free(sb);
}

static void stop_client(void *arg) { gvisor_client_kill(arg); }

/* runsc's complaint on the memfd that was its stderr: the first line, past
 * its log prefix. */
static void first_error_line(int fd, char *out, size_t outlen) {
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return;
    buf[n] = 0;
    const char *msg = buf;
    const char *fatal = strstr(msg, "FATAL ERROR: ");
    if (fatal) msg = fatal + strlen("FATAL ERROR: ");
    snprintf(out, outlen, "%.*s", (int)strcspn(msg, "\n"), msg);
}

/* `runsc create`: boots the sandbox (the sandbox and gofer processes are
 * born inside the cgroup). Its stdin/stdout are /dev/null: the idle init
 * reads and writes nothing, and a pipe would be held open by the sandbox for
 * its lifetime. Its stderr is a memfd, for runsc's own error message. */
static bool session_create(gvisor_sandbox *sb, al_error *err) {
    char why[200] = "";
    gvisor_logs logs;
    if (!gvisor_logs_init(&logs, sb->bundle.dir, "create", "create"))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    const char *sub[] = {"create", "--bundle", sb->bundle.dir, sb->bundle.id, NULL};
    const char *argv[GVISOR_ARGV_MAX];
    if (!gvisor_argv(&sb->ctx, &logs, sub, argv))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: runsc command line too long");
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) return sandbox_error_errno(err, "gvisor: /dev/null");
    int errfd = memfd_create("airlock-runsc-create", MFD_CLOEXEC);
    if (errfd < 0) {
        close(null);
        return sandbox_error_errno(err, "gvisor: memfd_create");
    }
    gvisor_watch w;
    memset(&w, 0, sizeof w);
    w.out_fd = w.err_fd = -1;
    w.start_ns = sandbox_now_ns();
    w.timeout_ms = GVISOR_HELPER_TIMEOUT_MS;
    w.client = &sb->create;
    w.stop = stop_client;
    w.stop_arg = &sb->create;
    bool spawned = gvisor_spawn(argv, null, null, errfd, sb->have_cgroup ? &sb->cg : NULL, true,
                                &sb->create, err);
    close(null);
    if (!spawned) {
        close(errfd);
        return false;
    }
    gvisor_watch_run(&w);
    if (WIFEXITED(w.client_status) && WEXITSTATUS(w.client_status) == 0 && !w.fired) {
        close(errfd);
        return true;
    }
    if (gvisor_log_status(logs.client, why, sizeof why) == GVISOR_NO_LOG)
        first_error_line(errfd, why, sizeof why);
    close(errfd);
    return sandbox_error(err, AL_ERR_SYSTEM, "gvisor: runsc create: %s",
                         w.fired ? "timed out" : why);
}

gvisor_sandbox *gvisor_session_open(const al_policy *policy, al_error *err) {
    gvisor_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb) {
        sandbox_error(err, AL_ERR_NOMEM, "gvisor: out of memory");
        return NULL;
    }
    gvisor_client_init(&sb->create);
    char rootfs[PATH_MAX];
    if (!gvisor_ctx_init(&sb->ctx, policy->state_dir, policy->gvisor_platform, err)) {
        free(sb);
        return NULL;
    }
    gvisor_collect(&sb->ctx, false, NULL, NULL);
    if (!gvisor_rootfs_ensure(sb->ctx.state, rootfs, sizeof rootfs, err) ||
        !gvisor_bundle_create(&sb->ctx, &sb->bundle, err)) {
        free(sb);
        return NULL;
    }
    bool ok = gvisor_egress_start(&sb->egress, &sb->ctx, policy, sb->bundle.id, err) &&
              gvisor_write_config(sb->bundle.dir, rootfs, policy, idle_init, 3,
                                  gvisor_egress_netns(&sb->egress), err) &&
              gvisor_cgroup_create(&sb->cg, &sb->bundle, policy, err);
    sb->have_cgroup = ok;
    ok = ok && session_create(sb, err);
    if (ok) {
        const char *start[] = {"start", sb->bundle.id, NULL};
        int status;
        ok = gvisor_runsc(&sb->ctx, start, &status, NULL, err) && WIFEXITED(status) &&
             WEXITSTATUS(status) == 0;
        if (!ok && !err->message[0]) sandbox_error(err, AL_ERR_SYSTEM, "gvisor: runsc start failed");
    }
    if (!ok) {
        session_free(sb);
        return NULL;
    }
    return sb;
}

/* What stop() needs to kill one execution's process group. */
typedef struct exec_stop {
    gvisor_sandbox *sb;
    const al_policy *policy;
    char pid_file[PATH_MAX + 32];
    char kill_json[PATH_MAX + 32];
    gvisor_client *client;
} exec_stop;

static int read_pid(const char *path) {
    char buf[32] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    char *end;
    long pid = strtol(buf, &end, 10);
    return end != buf && pid > 1 && pid < (1L << 22) ? (int)pid : -1;
}

/* Kill the execution's process group from inside the sandbox. */
static bool kill_group(exec_stop *s) {
    int pid = read_pid(s->pid_file);
    if (pid < 0) return false; /* not started yet, or runsc wrote nothing */
    char cmd[64];
    /* "-s KILL --": the form dash (Debian's /bin/sh) accepts for a group. */
    snprintf(cmd, sizeof cmd, "kill -s KILL -- -%d", pid);
    const char *argv[] = {"/bin/sh", "-c", cmd};
    al_error err;
    if (!gvisor_write_process(s->kill_json, s->policy, argv, 3, &err)) return false;
    const char *sub[] = {"exec", "--process", s->kill_json, s->sb->bundle.id, NULL};
    int status;
    return gvisor_runsc(&s->sb->ctx, sub, &status, NULL, &err) && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

static void stop_exec(void *arg) {
    exec_stop *s = arg;
    if (kill_group(s)) return;
    /* Could not reach the process group: the only sure kill is the sandbox. */
    mark_dead(s->sb, "an execution hit a limit and its processes could not be killed alone");
    gvisor_client_kill(s->client);
}

/* The sandbox is still running? (After runsc failed to report a status.) */
static bool still_running(gvisor_sandbox *sb) {
    const char *sub[] = {"state", sb->bundle.id, NULL};
    sandbox_capture out;
    capture_init(&out, 4096);
    int status;
    al_error err;
    bool running = gvisor_runsc(&sb->ctx, sub, &status, &out, &err) && WIFEXITED(status) &&
                   WEXITSTATUS(status) == 0 && out.data &&
                   strstr((const char *)out.data, "\"running\"");
    capture_free(&out);
    return running;
}

static bool exec_spawn(gvisor_sandbox *sb, const al_policy *p, gvisor_watch *w,
                       const gvisor_logs *logs, exec_stop *stop, const char *process_json,
                       al_error *err) {
    const char *sub[] = {"exec", "--internal-pid-file", stop->pid_file, "--process",
                         process_json, sb->bundle.id, NULL};
    const char *argv[GVISOR_ARGV_MAX];
    if (!gvisor_argv(&sb->ctx, logs, sub, argv))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: runsc command line too long");
    int in = memfd_create("airlock-stdin", MFD_CLOEXEC);
    if (in < 0) return sandbox_error_errno(err, "gvisor: memfd_create");
    size_t done = 0;
    while (done < p->stdin_len) {
        ssize_t n = write(in, p->stdin_data + done, p->stdin_len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(in);
            return sandbox_error_errno(err, "gvisor: writing stdin");
        }
        done += (size_t)n;
    }
    lseek(in, 0, SEEK_SET);
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        sandbox_error_errno(err, "gvisor: pipe");
        close(in);
        for (int i = 0; i < 2; i++) {
            if (po[i] >= 0) close(po[i]);
            if (pe[i] >= 0) close(pe[i]);
        }
        return false;
    }
    w->start_ns = sandbox_now_ns();
    /* The exec client is only an RPC client: the program runs in the
     * sandbox (already in the cgroup, already reaped by the session's
     * reaper), so the client is our plain child outside the cgroup and its
     * own memory is not charged to the session. */
    bool ok = gvisor_spawn(argv, in, po[1], pe[1], NULL, false, w->client, err);
    close(in);
    close(po[1]);
    close(pe[1]);
    w->out_fd = po[0];
    w->err_fd = pe[0];
    if (!ok) {
        close(po[0]);
        close(pe[0]);
        w->out_fd = w->err_fd = -1;
    }
    return ok;
}

/* Run one execution; false with err set when it could not be started. */
static bool exec_one(gvisor_sandbox *sb, const al_policy *p, al_result *r, al_error *err) {
    unsigned n = ++sb->execs;
    char process_json[PATH_MAX + 32], tag[32], why[200];
    exec_stop stop = {.sb = sb, .policy = p};
    gvisor_logs logs;
    snprintf(tag, sizeof tag, "exec-%u", n);
    if (!gvisor_logs_init(&logs, sb->bundle.dir, tag, "exec"))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    snprintf(process_json, sizeof process_json, "%s/exec-%u.json", sb->bundle.dir, n);
    snprintf(stop.pid_file, sizeof stop.pid_file, "%s/exec-%u.pid", sb->bundle.dir, n);
    snprintf(stop.kill_json, sizeof stop.kill_json, "%s/exec-%u-kill.json", sb->bundle.dir, n);
    if (!gvisor_write_process(process_json, p, p->argv, p->argc, err)) return false;

    native_cgroup_stats before = {0}, after = {0};
    if (sb->have_cgroup) cgroup_read_stats(&sb->cg, &before);
    gvisor_client client;
    gvisor_client_init(&client);
    gvisor_watch w;
    memset(&w, 0, sizeof w);
    w.out_fd = w.err_fd = -1;
    w.client = &client;
    capture_init(&w.out, p->stdout_cap);
    capture_init(&w.err, p->stderr_cap);
    capture_stream_to(&w.out, p, 1); /* wait.c's reads hand the output on */
    capture_stream_to(&w.err, p, 2);
    bool ok = exec_spawn(sb, p, &w, &logs, &stop, process_json, err);
    if (ok) {
        stop.client = &client;
        w.timeout_ms = p->timeout_ms;
        w.cpu_limit_ns = p->cpu_time_ms * 1000000u;
        w.cancel = p->cancel;
        w.cancel_reason = sandbox_cancel_reason(p);
        w.cg = sb->have_cgroup ? &sb->cg : NULL;
        w.cpu_base_ns = before.cpu_ns;
        w.stop = stop_exec;
        w.stop_arg = &stop;
        gvisor_watch_run(&w);
        gvisor_client_finish(&client, GVISOR_REAP_TIMEOUT_MS);
        int status = gvisor_log_status(logs.client, why, sizeof why);
        if (status < 0) gvisor_strip_runsc_error(&w.err, logs.client);
        if (sb->have_cgroup) cgroup_read_stats(&sb->cg, &after);
        after.oom_kills = after.oom_kills > before.oom_kills ? after.oom_kills - before.oom_kills : 0;
        after.pids_refused = after.pids_refused > before.pids_refused
                                 ? after.pids_refused - before.pids_refused : 0;
        gvisor_fill_result(r, &w, status, why, &after);
        /* The OOM killer ends the sentry, so the whole sandbox; runsc
         * failing to report a status may mean the same. */
        if (after.oom_kills) mark_dead(sb, "the session's memory limit ended its sandbox");
        else if (status < 0 && !sb->dead && !still_running(sb))
            mark_dead(sb, "the session's sandbox stopped");
    } else {
        capture_free(&w.out);
        capture_free(&w.err);
    }
    unlink(process_json);
    gvisor_logs_remove(&logs);
    unlink(stop.pid_file);
    unlink(stop.kill_json);
    return ok;
}

bool gvisor_session_exec(gvisor_sandbox *sb, const al_policy *request, al_result *result) {
    gvisor_set_backend(result, sb->ctx.platform);
    snprintf(result->execution_id, sizeof result->execution_id, "%.63s", sb->bundle.id);
    if (sb->dead) {
        sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_SYSTEM,
                           "gvisor: the session's sandbox is gone: %s", sb->dead_reason);
        return true;
    }
    al_error err = {0};
    gvisor_egress_stats before, after;
    gvisor_egress_read(&sb->egress, &before);
    bool ran = exec_one(sb, request, result, &err);
    /* The session's proxy counts for the whole session: this execution's
     * share is what changed while it ran. */
    gvisor_egress_read(&sb->egress, &after);
    result->egress_allowed = after.allowed - before.allowed;
    result->egress_denied = after.denied - before.denied;
    result->egress_bytes = after.bytes - before.bytes;
    if (!ran)
        sandbox_set_status(result, AL_STATUS_ERROR, err.kind, "%s", err.message);
    else if (sb->dead && result->status != AL_STATUS_MEMORY_LIMIT) {
        /* Say so alongside the execution's own status. */
        size_t len = strlen(result->error.message);
        snprintf(result->error.message + len, sizeof result->error.message - len,
                 "%s(session ended: %s)", len ? " " : "", sb->dead_reason);
    }
    return true;
}

void gvisor_session_close(gvisor_sandbox *sb) {
    if (sb) session_free(sb);
}
