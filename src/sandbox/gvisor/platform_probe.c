/*
 * platform_probe.c — gvisor_probe, the gVisor half of al_probe_host (airlock
 * doctor): is runsc there, which version, and which platforms really run a
 * program here.
 *
 * Without platform probing, gVisor counts as available when `runsc
 * --version` runs (cheap; the platform is then the cached probe answer or
 * the default). With probing, each platform runsc lists runs /bin/true in a
 * real sandbox through gvisor_run, so the probe exercises exactly what an
 * execution does; a platform that hangs (KVM on hosts without working
 * nested virtualisation) is given up on after PROBE_TIMEOUT_MS and cleaned
 * up like any timed-out execution. The answer is cached in
 * <state>/gvisor-platform for later executions.
 *
 * Preference: systrap, then ptrace, then KVM; KVM only ever when it ran.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "gvisor.h"

#define PROBE_TIMEOUT_MS 5000

static bool runsc_version(const char *runsc, char *out, size_t outlen, char *why, size_t whylen) {
    const char *argv[] = {runsc, "--version", NULL};
    sandbox_capture so;
    capture_init(&so, 4096);
    int status = 0;
    al_error err;
    bool ok = sandbox_run_helper(argv, -1, 10000, &status, &so, NULL, &err);
    if (!ok) snprintf(why, whylen, "%.120s", err.message);
    else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        snprintf(why, whylen, "%s --version failed", runsc);
        ok = false;
    }
    if (ok) {
        const char *line = so.data ? (const char *)so.data : "";
        const char *prefix = "runsc version ";
        if (!strncmp(line, prefix, strlen(prefix))) line += strlen(prefix);
        snprintf(out, outlen, "%.*s", (int)strcspn(line, "\n"), line);
    }
    capture_free(&so);
    return ok;
}

/* Run /bin/true under one platform; *why gets the failure. */
static bool platform_runs(const char *state_dir, const char *platform, char *why, size_t whylen) {
    static const char *const argv[] = {"/bin/true"};
    al_policy p;
    al_policy_init(&p);
    p.isolation = AL_ISOLATION_GVISOR;
    p.argv = argv;
    p.argc = 1;
    p.timeout_ms = PROBE_TIMEOUT_MS;
    p.max_memory_bytes = 0; /* the probe asks whether it boots, not whether cgroups work */
    p.state_dir = state_dir;
    p.gvisor_platform = platform;
    al_result r;
    memset(&r, 0, sizeof r);
    gvisor_run(&p, &r);
    bool ok = r.status == AL_STATUS_OK;
    if (!ok)
        snprintf(why, whylen, "%s: %.120s", platform,
                 r.status == AL_STATUS_TIMEOUT ? "hung (no exit within 5 s)" : r.error.message);
    al_result_free(&r);
    return ok;
}

static void choose(const char *working, char *out, size_t outlen) {
    static const char *const order[] = {"systrap", "ptrace", "kvm"};
    out[0] = 0;
    for (size_t i = 0; i < 3 && !out[0]; i++) {
        size_t n = strlen(order[i]);
        for (const char *p = working; *p;) {
            size_t m = strcspn(p, " ");
            if (m == n && !strncmp(p, order[i], n)) {
                snprintf(out, outlen, "%s", order[i]);
                break;
            }
            p += m;
            p += strspn(p, " ");
        }
    }
}

static void probe_platforms(al_host_report *rep, const char *state_dir, const char *listed) {
    char working[64] = "", why[160] = "", list[64];
    snprintf(list, sizeof list, "%s", listed);
    for (char *save = NULL, *name = strtok_r(list, " ", &save); name;
         name = strtok_r(NULL, " ", &save)) {
        char one[160];
        if (platform_runs(state_dir, name, one, sizeof one)) {
            size_t len = strlen(working);
            snprintf(working + len, sizeof working - len, "%s%s", len ? " " : "", name);
        } else if (!why[0]) {
            snprintf(why, sizeof why, "%.120s", one);
        }
    }
    snprintf(rep->gvisor_platforms, sizeof rep->gvisor_platforms, "%s", working);
    choose(working, rep->gvisor_platform, sizeof rep->gvisor_platform);
    if (!rep->gvisor_platform[0]) {
        rep->gvisor_available = false;
        snprintf(rep->gvisor_reason, sizeof rep->gvisor_reason,
                 "no gVisor platform ran a program here (%.100s)", why[0] ? why : "none listed");
        return;
    }
    char state[PATH_MAX];
    al_error err;
    if (sandbox_state_dir(state_dir, state, sizeof state, &err))
        gvisor_write_platform_cache(state, rep->gvisor_platform, working);
}

void gvisor_probe(al_host_report *rep, const char *state_dir, bool probe) {
    rep->runsc = false;
    rep->gvisor_available = false;
    rep->gvisor_platforms[0] = rep->gvisor_platform[0] = 0;
    if (!gvisor_find_runsc(rep->runsc_path, sizeof rep->runsc_path)) {
        snprintf(rep->gvisor_reason, sizeof rep->gvisor_reason,
                 "runsc not found (PATH, /usr/bin, /usr/sbin): install Debian's runsc package");
        return;
    }
    char why[160] = "";
    if (!runsc_version(rep->runsc_path, rep->runsc_version, sizeof rep->runsc_version, why,
                       sizeof why)) {
        snprintf(rep->gvisor_reason, sizeof rep->gvisor_reason, "runsc does not run: %.120s", why);
        return;
    }
    rep->runsc = true;
    char listed[64] = "";
    gvisor_list_platforms(rep->runsc_path, listed, sizeof listed);
    rep->gvisor_available = true;
    rep->gvisor_reason[0] = 0;
    if (probe) {
        probe_platforms(rep, state_dir, listed);
        return;
    }
    /* Not probing: report the cached answer, or what would be used. */
    char state[PATH_MAX];
    al_error err;
    if (sandbox_state_dir(state_dir, state, sizeof state, &err))
        gvisor_cached_platform(state, rep->gvisor_platform, sizeof rep->gvisor_platform,
                               rep->gvisor_platforms, sizeof rep->gvisor_platforms);
    if (!rep->gvisor_platform[0])
        gvisor_default_platform(listed, rep->gvisor_platform, sizeof rep->gvisor_platform);
}
