/*
 * runsc.c — driving the runsc binary: where it is, which platform it uses,
 * its command lines and log files, housekeeping commands, and tearing a
 * sandbox down (starting a client is client.c).
 *
 * Invariants:
 *  - every runsc command line starts with the same --root (<state>/runsc),
 *    --platform, --network=none and --oci-seccomp: a container is only ever
 *    addressed through the root that made it, no sandbox gets a network
 *    device (gVisor then gives it loopback only), and no sandbox boots
 *    without the seccomp filter of its spec (oci.c);
 *  - a command that starts or enters a sandbox (run, create, exec) gets
 *    log files for itself, the sandbox and the gofer (gvisor_logs): no runsc
 *    process ever logs to the stdout/stderr it shares with the program;
 *  - teardown kills before it deletes: the cgroup kill ends the sandbox, the
 *    reaper reaps it at once, and `runsc delete` then has no live (or
 *    zombie) sandbox to poll for (it polls every 100 ms, and a zombie left
 *    to a slow pid 1 kept it waiting over a second).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

/* A regular, executable file. */
static bool executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool gvisor_find_runsc(char *out, size_t outlen) {
    const char *path = getenv("PATH");
    if (path) {
        const char *p = path;
        while (*p) {
            size_t n = strcspn(p, ":");
            /* Only absolute entries: a relative one would make the binary
             * airlock runs as root depend on the caller's cwd. */
            if (n > 0 && p[0] == '/' && n + sizeof "/runsc" < outlen) {
                snprintf(out, outlen, "%.*s/runsc", (int)n, p);
                if (executable(out)) return true;
            }
            p += n;
            if (*p == ':') p++;
        }
    }
    static const char *const fallback[] = {"/usr/bin/runsc", "/usr/sbin/runsc",
                                           "/usr/local/bin/runsc"};
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++) {
        if (executable(fallback[i]) && strlen(fallback[i]) < outlen) {
            snprintf(out, outlen, "%s", fallback[i]);
            return true;
        }
    }
    if (outlen) out[0] = 0;
    return false;
}

bool gvisor_list_platforms(const char *runsc, char *out, size_t outlen) {
    const char *argv[] = {runsc, "help", "platforms", NULL};
    sandbox_capture so;
    capture_init(&so, 4096);
    int status = 0;
    al_error err;
    out[0] = 0;
    bool ok = sandbox_run_helper(argv, -1, 10000, &status, &so, NULL, &err) &&
              WIFEXITED(status) && WEXITSTATUS(status) == 0 && so.data;
    if (ok) {
        size_t used = 0;
        char *save = NULL;
        for (char *line = strtok_r((char *)so.data, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            line += strspn(line, " \t");
            size_t n = strcspn(line, " \t\r");
            if (n == 0 || n >= GVISOR_PLATFORM_MAX || used + n + 2 > outlen) continue;
            used += (size_t)snprintf(out + used, outlen - used, "%s%.*s", used ? " " : "",
                                     (int)n, line);
        }
    }
    capture_free(&so);
    return ok && out[0];
}

static bool word_in(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        size_t m = strcspn(p, " ");
        if (m == n && !strncmp(p, word, n)) return true;
        p += m;
        p += strspn(p, " ");
    }
    return false;
}

void gvisor_default_platform(const char *listed, char *out, size_t outlen) {
    /* systrap is gVisor's successor to ptrace (faster, same host needs);
     * KVM is never a default: on nested or restricted hosts it can hang, so
     * only a probe that saw it run may choose it. */
    snprintf(out, outlen, "%s", word_in(listed, "systrap") ? "systrap" : "ptrace");
}

/* <state>/gvisor-platform holds "platform=NAME\nworking=NAME NAME...\n". */
void gvisor_cached_platform(const char *state, char *out, size_t outlen, char *working,
                            size_t working_len) {
    char path[PATH_MAX], buf[256];
    if (outlen) out[0] = 0;
    if (working && working_len) working[0] = 0;
    snprintf(path, sizeof path, "%s/gvisor-platform", state);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "platform=", 9)) {
            const char *v = line + 9;
            /* Only names runsc could mean: the file sits in our private state
             * dir, but a platform name ends up on runsc's command line. */
            if (!strcmp(v, "ptrace") || !strcmp(v, "systrap") || !strcmp(v, "kvm"))
                snprintf(out, outlen, "%s", v);
        } else if (!strncmp(line, "working=", 8) && working) {
            snprintf(working, working_len, "%s", line + 8);
        }
    }
}

bool gvisor_write_platform_cache(const char *state, const char *chosen, const char *working) {
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/gvisor-platform", state);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f) return false;
    fprintf(f, "platform=%s\nworking=%s\n", chosen, working);
    bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    return ok;
}

bool gvisor_ctx_init(gvisor_ctx *ctx, const char *state_dir, const char *platform,
                     al_error *err) {
    memset(ctx, 0, sizeof *ctx);
    if (!sandbox_state_dir(state_dir, ctx->state, sizeof ctx->state, err)) return false;
    if (!gvisor_find_runsc(ctx->runsc, sizeof ctx->runsc))
        return sandbox_error(err, AL_ERR_UNSUPPORTED,
                             "gvisor: runsc not found (PATH, /usr/bin, /usr/sbin); "
                             "install Debian's runsc package");
    if (snprintf(ctx->root, sizeof ctx->root, "%s/runsc", ctx->state) >= (int)sizeof ctx->root)
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: state dir path too long");
    if (mkdir(ctx->root, 0700) < 0 && errno != EEXIST)
        return sandbox_error_errno(err, "gvisor: runsc root %s", ctx->root);
    if (platform && platform[0]) {
        snprintf(ctx->platform, sizeof ctx->platform, "%s", platform);
        return true;
    }
    gvisor_cached_platform(ctx->state, ctx->platform, sizeof ctx->platform, NULL, 0);
    if (ctx->platform[0]) return true;
    char listed[64];
    gvisor_list_platforms(ctx->runsc, listed, sizeof listed);
    gvisor_default_platform(listed, ctx->platform, sizeof ctx->platform);
    return true;
}

bool gvisor_logs_init(gvisor_logs *l, const char *dir, const char *tag, const char *command) {
    int a = snprintf(l->pattern, sizeof l->pattern, "%s/%s.%%COMMAND%%.log", dir, tag);
    int b = snprintf(l->panic, sizeof l->panic, "%s/%s.panic.log", dir, tag);
    int c = snprintf(l->client, sizeof l->client, "%s/%s.%s.log", dir, tag, command);
    return a > 0 && a < (int)sizeof l->pattern && b > 0 && b < (int)sizeof l->panic && c > 0 &&
           c < (int)sizeof l->client;
}

void gvisor_logs_remove(const gvisor_logs *l) {
    static const char *const commands[] = {"run", "create", "exec", "boot", "gofer"};
    const char *mark = strstr(l->pattern, "%COMMAND%");
    if (!mark) return;
    char path[PATH_MAX + 16];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        snprintf(path, sizeof path, "%.*s%s%s", (int)(mark - l->pattern), l->pattern, commands[i],
                 mark + strlen("%COMMAND%"));
        unlink(path);
    }
    unlink(l->panic);
}

bool gvisor_argv(const gvisor_ctx *ctx, const gvisor_logs *logs, const char *const *sub,
                 const char **argv) {
    /* argv borrows every string: from ctx, logs, the caller, or literals. */
    size_t n = 0;
    argv[n++] = ctx->runsc;
    argv[n++] = "--root";
    argv[n++] = ctx->root;
    argv[n++] = "--platform";
    argv[n++] = ctx->platform;
    /* host: runsc's sandbox joins the namespace config.json names, the
     * egress one (loopback + the proxy's listener, netns.c), and the guest's
     * sockets are that namespace's, with no netstack of gVisor's between. */
    argv[n++] = ctx->network_host ? "--network=host" : "--network=none";
    /* runsc's own cgroup handling would move the sandbox out of ours: with
     * no cgroupsPath it makes "/<container id>" at the root of every
     * hierarchy (escaping airlock's cgroup and its limits). The sandbox must
     * stay where gvisor_spawn put runsc. */
    argv[n++] = "--ignore-cgroups";
    /* Without it this runsc ignores the spec's linux.seccomp (the sentry
     * logs "Seccomp spec is being ignored") and the program runs without
     * the deny-list oci.c puts there. Only run and create use it (the
     * sandbox they boot keeps it); the other commands accept it. */
    argv[n++] = "--oci-seccomp";
    if (logs) {
        /* See gvisor_logs: every runsc process logs to its own file, none
         * to the program's stderr. */
        argv[n++] = "--debug-log";
        argv[n++] = logs->pattern;
        argv[n++] = "--panic-log";
        argv[n++] = logs->panic;
        argv[n++] = "--alsologtostderr=false";
    }
    for (size_t i = 0; sub[i]; i++) {
        if (n + 1 >= GVISOR_ARGV_MAX) return false;
        argv[n++] = sub[i];
    }
    argv[n] = NULL;
    return true;
}

bool gvisor_runsc(const gvisor_ctx *ctx, const char *const *sub, int *status,
                  sandbox_capture *out, al_error *err) {
    const char *argv[GVISOR_ARGV_MAX];
    if (!gvisor_argv(ctx, NULL, sub, argv))
        return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: runsc command line too long");
    sandbox_capture errout;
    capture_init(&errout, 4096);
    bool ok = sandbox_run_helper(argv, -1, GVISOR_HELPER_TIMEOUT_MS, status, out, &errout, err);
    if (ok && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)) {
        /* runsc's message names the failure; keep its first line. */
        const char *msg = errout.data ? (const char *)errout.data : "";
        sandbox_error(err, AL_ERR_SYSTEM, "gvisor: runsc %s failed: %.*s", sub[0],
                      (int)strcspn(msg, "\n"), msg);
    }
    capture_free(&errout);
    return ok;
}

bool gvisor_container_exists(const gvisor_ctx *ctx, const char *id) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s_sandbox:%s.state", ctx->root, id, id);
    return access(path, F_OK) == 0;
}

void gvisor_destroy_container(const gvisor_ctx *ctx, const char *id) {
    int status;
    al_error ignored;
    /* kill --all first: delete --force alone stops the sandbox too, but a
     * sandbox whose controller is wedged still gets its processes signalled. */
    const char *kill_all[] = {"kill", "--all", id, "KILL", NULL};
    gvisor_runsc(ctx, kill_all, &status, NULL, &ignored);
    const char *del[] = {"delete", "--force", id, NULL};
    gvisor_runsc(ctx, del, &status, NULL, &ignored);
}

void gvisor_teardown(const gvisor_ctx *ctx, const char *id, native_cgroup *cg,
                     gvisor_client *reaped) {
    int status;
    al_error ignored;
    bool exists = id[0] && gvisor_container_exists(ctx, id);
    if (cg && cg->version != 0) {
        /* Every process of the sandbox (runsc client, sentry, gofer, ptrace
         * stubs) is in the cgroup: one kill ends them all, and nothing in
         * the sandbox can refuse it. */
        cgroup_destroy(cg);
    } else if (exists) {
        const char *kill_all[] = {"kill", "--all", id, "KILL", NULL};
        gvisor_runsc(ctx, kill_all, &status, NULL, &ignored);
    }
    if (reaped) gvisor_client_finish(reaped, GVISOR_REAP_TIMEOUT_MS);
    if (exists && gvisor_container_exists(ctx, id)) {
        const char *del[] = {"delete", "--force", id, NULL};
        gvisor_runsc(ctx, del, &status, NULL, &ignored);
    }
    if (cg) cgroup_destroy(cg); /* version 0, or already done: a no-op */
}
