/*
 * orphans.c — what gVisor executions leave when their airlock process dies
 * mid-run (SIGKILL, crash, power cut): running sandboxes, runsc state and
 * bundle directories. gvisor_run and gvisor_session_open sweep bundles on
 * every start (cheap: one readdir, plus work only when something is
 * orphaned); al_gc also sweeps containers that runsc lists without a bundle.
 *
 * Ownership: a bundle or container id is "al-<pid>-<start time>-<n>"
 * (sandbox_new_id). It is an orphan when that process is dead, or the pid now
 * belongs to a process with another start time (pid reuse). Anything of a
 * live airlock is left alone, and so is anything whose name we cannot parse
 * (not ours to delete). The owner file in the bundle repeats the same pair;
 * the id is authoritative because it exists before the bundle is written.
 *
 * Cgroups of dead owners belong to cgroup_collect_orphans (native/); the
 * start-up sweep calls it only when it found an orphan, al_gc always does.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

/* "al-<pid>-<start>-<n>" -> pid, start. False for any other name. */
static bool parse_id(const char *id, pid_t *pid, unsigned long long *start) {
    if (strncmp(id, "al-", 3) != 0) return false;
    char *end;
    long p = strtol(id + 3, &end, 10);
    if (end == id + 3 || *end != '-' || p <= 0) return false;
    const char *s = end + 1;
    unsigned long long st = strtoull(s, &end, 10);
    if (end == s || *end != '-') return false;
    *pid = (pid_t)p;
    *start = st;
    return true;
}

static bool orphaned(const char *id) {
    pid_t pid;
    unsigned long long start;
    if (!parse_id(id, &pid, &start)) return false;
    return !sandbox_owner_alive(pid, start);
}

static void sweep_bundles(const gvisor_ctx *ctx, unsigned *containers, unsigned *bundles) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/bundles", ctx->state) >= (int)sizeof dir) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !orphaned(e->d_name)) continue;
        if (ctx->runsc[0] && gvisor_container_exists(ctx, e->d_name)) {
            gvisor_destroy_container(ctx, e->d_name);
            (*containers)++;
        }
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sandbox_remove_tree(path);
        (*bundles)++;
    }
    closedir(d);
}

/* Containers in runsc's root whose bundle is gone and whose owner is dead. */
static void sweep_containers(const gvisor_ctx *ctx, unsigned *containers) {
    const char *sub[] = {"list", "--quiet", NULL};
    sandbox_capture out;
    capture_init(&out, 1 << 20);
    int status;
    al_error err;
    if (gvisor_runsc(ctx, sub, &status, &out, &err) && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0 && out.data) {
        char *save = NULL;
        for (char *id = strtok_r((char *)out.data, "\n", &save); id;
             id = strtok_r(NULL, "\n", &save)) {
            if (!orphaned(id)) continue;
            gvisor_destroy_container(ctx, id);
            (*containers)++;
        }
    }
    capture_free(&out);
}

void gvisor_collect(const gvisor_ctx *ctx, bool thorough, unsigned *containers,
                    unsigned *bundles) {
    unsigned c = 0, b = 0;
    sweep_bundles(ctx, &c, &b);
    if (thorough && ctx->runsc[0]) sweep_containers(ctx, &c);
    else if (b) cgroup_collect_orphans();
    if (containers) *containers += c;
    if (bundles) *bundles += b;
}

void gvisor_collect_orphans(const char *state_dir, unsigned *containers, unsigned *bundles) {
    gvisor_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    al_error err;
    if (!sandbox_state_dir(state_dir, ctx.state, sizeof ctx.state, &err)) return;
    if (snprintf(ctx.root, sizeof ctx.root, "%s/runsc", ctx.state) >= (int)sizeof ctx.root) return;
    snprintf(ctx.platform, sizeof ctx.platform, "ptrace"); /* unused by kill/delete/list */
    /* Without runsc there is no container to stop, but bundles still go. */
    gvisor_find_runsc(ctx.runsc, sizeof ctx.runsc);
    gvisor_collect(&ctx, true, containers, bundles);
}
