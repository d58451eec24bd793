/*
 * gvisor.c — gvisor_run: one program, one fresh gVisor sandbox.
 *
 *   bundle <state>/bundles/<id>/ (config.json, owner) + cgroup <id>
 *   runsc run --bundle B ID   (stdin: a memfd of the policy's stdin,
 *                              stdout/stderr: our pipes; runsc hands its
 *                              stdio to the container's process)
 *   wait.c watches it: output caps, wall and CPU limits, the cancel flag
 *   runsc runs under a reaper (client.c) that reaps the sandbox, gofer and
 *             ptrace stubs the moment they die
 *   teardown: cgroup_destroy (kills whatever is still in it), wait for the
 *             reaper, delete --force if runsc left the container, remove
 *             the bundle (gvisor_teardown)
 *
 * `runsc run` rather than create + start + wait: one runsc process instead
 * of three (the cold start is dominated by runsc invocations), and the
 * sandbox is its child, so its exit status cannot be lost the way `runsc
 * wait` loses it when the sandbox ends before wait connects.
 *
 * Invariants:
 *  - nothing of an execution survives gvisor_run, whatever happened: the
 *    container is deleted, every process in its cgroup killed, the bundle
 *    removed. If airlock itself dies mid-run, the bundle's owner file and
 *    the id let gvisor_collect_orphans and cgroup_collect_orphans finish
 *    the job;
 *  - a memory limit that cannot be enforced (no writable cgroup) refuses
 *    the run (AL_STATUS_UNSUPPORTED); it never runs without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

void gvisor_set_backend(al_result *result, const char *platform) {
    snprintf(result->backend, sizeof result->backend, "gvisor (%s)", platform);
}

bool gvisor_bundle_create(const gvisor_ctx *ctx, gvisor_bundle *b, al_error *err) {
    char parent[PATH_MAX];
    if (snprintf(parent, sizeof parent, "%s/bundles", ctx->state) >= (int)sizeof parent)
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    if (mkdir(parent, 0700) < 0 && errno != EEXIST)
        return sandbox_error_errno(err, "gvisor: %s", parent);
    sandbox_new_id(b->id, sizeof b->id);
    if (snprintf(b->dir, sizeof b->dir, "%s/%s", parent, b->id) >= (int)sizeof b->dir)
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    if (mkdir(b->dir, 0700) < 0) return sandbox_error_errno(err, "gvisor: bundle %s", b->dir);
    char owner[PATH_MAX + 8];
    snprintf(owner, sizeof owner, "%s/owner", b->dir);
    FILE *f = fopen(owner, "wxe");
    if (!f) {
        sandbox_error_errno(err, "gvisor: %s", owner);
        sandbox_remove_tree(b->dir);
        return false;
    }
    pid_t me = getpid();
    fprintf(f, "%d %llu\n", (int)me, sandbox_process_start_time(me));
    if (fclose(f) != 0) {
        sandbox_error_errno(err, "gvisor: %s", owner);
        sandbox_remove_tree(b->dir);
        return false;
    }
    return true;
}

void gvisor_bundle_remove(const gvisor_bundle *b) {
    if (b->dir[0]) sandbox_remove_tree(b->dir);
}

bool gvisor_cgroup_create(native_cgroup *cg, const gvisor_bundle *b, const al_policy *p,
                          al_error *err) {
    memset(cg, 0, sizeof *cg);
    /* No pids limit on the host cgroup: the sentry's own threads count
     * there. The guest's limit is RLIMIT_NPROC inside gVisor (oci.c). */
    if (!cgroup_create(cg, b->id, p->max_memory_bytes, 0, err)) return false;
    if (p->max_memory_bytes && (cg->version == 0 || !cg->has_memory)) {
        cgroup_destroy(cg);
        return sandbox_error(err, AL_ERR_UNSUPPORTED,
                             "gvisor: no writable cgroup memory controller to enforce the "
                             "memory limit (see airlock doctor)");
    }
    return true;
}

/* A memfd holding the policy's stdin, at offset 0. */
static int stdin_memfd(const al_policy *p, al_error *err) {
    int fd = memfd_create("airlock-stdin", MFD_CLOEXEC);
    if (fd < 0) {
        sandbox_error_errno(err, "gvisor: memfd_create");
        return -1;
    }
    size_t done = 0;
    while (done < p->stdin_len) {
        ssize_t n = write(fd, p->stdin_data + done, p->stdin_len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            sandbox_error_errno(err, "gvisor: writing stdin");
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* Everything one execution holds; torn down by run_teardown. */
typedef struct gvisor_one {
    gvisor_ctx ctx;
    gvisor_bundle bundle;
    native_cgroup cg;
    bool have_bundle, have_cgroup;
    gvisor_client client;     /* `runsc run` and its reaper */
    gvisor_egress egress;     /* the proxy and the namespace runsc joins, if granted */
} gvisor_one;

/* stop(): end the container's init, which ends the sandbox. If runsc cannot
 * (the container is not created yet, or runsc is wedged), end the client:
 * teardown then kills the rest through the cgroup. */
static void stop_one(void *arg) {
    gvisor_one *one = arg;
    const char *kill_init[] = {"kill", one->bundle.id, "KILL", NULL};
    int status;
    al_error ignored;
    if (!gvisor_runsc(&one->ctx, kill_init, &status, NULL, &ignored) ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        gvisor_client_kill(&one->client);
}

static void run_teardown(gvisor_one *one) {
    gvisor_teardown(&one->ctx, one->have_bundle ? one->bundle.id : "",
                    one->have_cgroup ? &one->cg : NULL, &one->client);
    one->have_cgroup = false;
    if (one->have_bundle) gvisor_bundle_remove(&one->bundle);
}

/* Bundle, rootfs, config.json and cgroup. False with err set. */
static bool run_prepare(gvisor_one *one, const al_policy *p, al_error *err) {
    gvisor_collect(&one->ctx, false, NULL, NULL); /* cheap: only bundles of dead owners */
    char rootfs[PATH_MAX];
    if (!gvisor_rootfs_ensure(one->ctx.state, rootfs, sizeof rootfs, err)) return false;
    if (!gvisor_bundle_create(&one->ctx, &one->bundle, err)) return false;
    one->have_bundle = true;
    if (!gvisor_egress_start(&one->egress, &one->ctx, p, one->bundle.id, err)) return false;
    if (!gvisor_write_config(one->bundle.dir, rootfs, p, NULL, 0, gvisor_egress_netns(&one->egress),
                             err))
        return false;
    if (!gvisor_cgroup_create(&one->cg, &one->bundle, p, err)) return false;
    one->have_cgroup = true;
    return true;
}

/* Start `runsc run` with the program's stdio and watch it. */
static bool run_watch(gvisor_one *one, const al_policy *p, gvisor_watch *w,
                      const gvisor_logs *logs, al_error *err) {
    const char *sub[] = {"run", "--bundle", one->bundle.dir, one->bundle.id, NULL};
    const char *argv[GVISOR_ARGV_MAX];
    if (!gvisor_argv(&one->ctx, logs, sub, argv))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: runsc command line too long");
    int in = stdin_memfd(p, err);
    if (in < 0) return false;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0) {
        close(in);
        return sandbox_error_errno(err, "gvisor: pipe");
    }
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(in);
        close(po[0]);
        close(po[1]);
        return sandbox_error_errno(err, "gvisor: pipe");
    }
    capture_init(&w->out, p->stdout_cap);
    capture_init(&w->err, p->stderr_cap);
    capture_stream_to(&w->out, p, 1); /* wait.c's reads hand the output on */
    capture_stream_to(&w->err, p, 2);
    w->start_ns = sandbox_now_ns();
    bool ok = gvisor_spawn(argv, in, po[1], pe[1], &one->cg, true, &one->client, err);
    close(in);
    close(po[1]);
    close(pe[1]);
    w->out_fd = po[0];
    w->err_fd = pe[0];
    if (!ok) {
        close(po[0]);
        close(pe[0]);
        capture_free(&w->out);
        capture_free(&w->err);
        return false;
    }
    w->client = &one->client;
    w->timeout_ms = p->timeout_ms;
    w->cpu_limit_ns = p->cpu_time_ms * 1000000u;
    w->cancel = p->cancel;
    w->cancel_reason = sandbox_cancel_reason(p);
    w->cg = &one->cg;
    w->stop = stop_one;
    w->stop_arg = one;
    gvisor_watch_run(w);
    return true;
}

bool gvisor_run(const al_policy *policy, al_result *result) {
    gvisor_one one;
    memset(&one, 0, sizeof one);
    gvisor_client_init(&one.client);
    al_error err = {0};
    if (!gvisor_ctx_init(&one.ctx, policy->state_dir, policy->gvisor_platform, &err)) {
        sandbox_set_status(result, err.kind == AL_ERR_UNSUPPORTED ? AL_STATUS_UNSUPPORTED
                                                                  : AL_STATUS_ERROR,
                           err.kind, "%s", err.message);
        return true;
    }
    gvisor_set_backend(result, one.ctx.platform);
    gvisor_watch w;
    memset(&w, 0, sizeof w);
    w.out_fd = w.err_fd = -1;
    gvisor_logs logs;
    bool ok = run_prepare(&one, policy, &err);
    if (one.have_bundle)
        snprintf(result->execution_id, sizeof result->execution_id, "%.63s", one.bundle.id);
    if (ok && !gvisor_logs_init(&logs, one.bundle.dir, "run", "run"))
        ok = sandbox_error(&err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    if (ok) ok = run_watch(&one, policy, &w, &logs, &err);
    if (!ok) {
        run_teardown(&one);
        gvisor_egress_stop(&one.egress, result);
        sandbox_set_status(result, err.kind == AL_ERR_UNSUPPORTED ? AL_STATUS_UNSUPPORTED
                                                                  : AL_STATUS_ERROR,
                           err.kind, "%s", err.message);
        return true;
    }
    char why[200];
    int status = gvisor_log_status(logs.client, why, sizeof why);
    if (status < 0) gvisor_strip_runsc_error(&w.err, logs.client);
    native_cgroup_stats stats = {0};
    if (one.have_cgroup) cgroup_read_stats(&one.cg, &stats);
    run_teardown(&one);
    gvisor_fill_result(result, &w, status, why, &stats);
    gvisor_egress_stop(&one.egress, result);
    return true;
}
