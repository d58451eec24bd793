/*
 * doctor.c — `airlock doctor` (what this host supports, by trying it) and
 * `airlock gc` (remove what dead airlock processes left behind).
 *
 * Both are thin callers of al_probe_host and al_gc. doctor's exit status says
 * whether every backend is available (0), or which are not (1), so scripts
 * and CI can gate on it.
 */
#include <stdio.h>
#include <string.h>

#include "run.h"

static const char doctor_usage[] =
    "usage: airlock doctor [--json] [--quick] [--state-dir DIR]\n"
    "\n"
    "Try every isolation mechanism on this host and print which work: user\n"
    "namespaces, the other namespaces, pivot_root, seccomp (and its user\n"
    "notification, used to count denied calls), the Landlock ABI, writable\n"
    "cgroup v1/v2 controllers, runsc and the gVisor platforms that actually run\n"
    "a program; then which backends are available. airlock refuses a backend\n"
    "the host cannot support rather than running it weaker.\n"
    "  --quick   do not start gVisor on each platform (faster; trusts runsc --version)\n"
    "  --json    one JSON object\n"
    "exit status: 0 every backend available, 1 some unavailable, 2 usage\n";

static const char gc_usage[] =
    "usage: airlock gc [--state-dir DIR]\n"
    "\n"
    "Remove the gVisor containers, bundles and cgroups of airlock processes that\n"
    "died without cleaning up (killed, crashed). Those of live processes stay.\n";

static const char *yes(bool b) { return b ? "yes" : "no"; }

static void json_bool(const char *key, bool v, bool comma) {
    printf("\"%s\": %s%s", key, v ? "true" : "false", comma ? ", " : "");
}

static void json_str(const char *key, const char *v, bool comma) {
    printf("\"%s\": ", key);
    cli_json_string(stdout, (const uint8_t *)v, strlen(v));
    fputs(comma ? ", " : "", stdout);
}

static void print_json(const al_host_report *r) {
    fputs("{", stdout);
    json_bool("user_namespaces", r->user_namespaces, true);
    json_bool("namespaces", r->pid_mount_net_namespaces, true);
    json_bool("pivot_root", r->pivot_root, true);
    json_bool("seccomp", r->seccomp, true);
    json_bool("seccomp_notify", r->seccomp_notify, true);
    printf("\"landlock_abi\": %d, ", r->landlock_abi);
    json_bool("cgroup_v1_writable", r->cgroup_v1_writable, true);
    json_str("cgroup_v1_controllers", r->cgroup_v1_controllers, true);
    json_bool("cgroup_v2_writable", r->cgroup_v2_writable, true);
    json_str("cgroup_v2_controllers", r->cgroup_v2_controllers, true);
    json_bool("runsc", r->runsc, true);
    json_str("runsc_path", r->runsc_path, true);
    json_str("runsc_version", r->runsc_version, true);
    json_str("gvisor_platforms", r->gvisor_platforms, true);
    json_str("gvisor_platform", r->gvisor_platform, true);
    printf("\"backends\": {\"wasm\": {\"available\": true, \"reason\": \"\"}, ");
    printf("\"native\": {");
    json_bool("available", r->native_available, true);
    json_str("reason", r->native_reason, false);
    printf("}, \"gvisor\": {");
    json_bool("available", r->gvisor_available, true);
    json_str("reason", r->gvisor_reason, false);
    printf("}}}\n");
}

static void print_text(const al_host_report *r) {
    printf("mechanisms\n");
    printf("  user namespaces (unprivileged uid)  %s\n", yes(r->user_namespaces));
    printf("  pid/mount/net/ipc/uts/cgroup ns     %s\n", yes(r->pid_mount_net_namespaces));
    printf("  pivot_root                          %s\n", yes(r->pivot_root));
    printf("  seccomp-bpf                         %s\n", yes(r->seccomp));
    printf("  seccomp user notification           %s%s\n", yes(r->seccomp_notify),
           r->seccomp_notify ? "" : " (denied calls return EPERM but are not counted)");
    if (r->landlock_abi) printf("  Landlock                            ABI %d\n", r->landlock_abi);
    else printf("  Landlock                            no\n");
    printf("  cgroup v1 writable                  %s%s%s\n", yes(r->cgroup_v1_writable),
           r->cgroup_v1_writable ? ": " : "", r->cgroup_v1_controllers);
    printf("  cgroup v2 writable                  %s%s%s\n", yes(r->cgroup_v2_writable),
           r->cgroup_v2_writable ? ": " : "", r->cgroup_v2_controllers);
    if (!r->cgroup_v1_writable && !r->cgroup_v2_writable)
        printf("    (memory and process limits fall back to RLIMIT_AS / RLIMIT_NPROC)\n");
    printf("  runsc                               %s%s%s %s\n", yes(r->runsc),
           r->runsc ? ": " : "", r->runsc_path, r->runsc_version);
    printf("  gVisor platforms that run           %s\n",
           r->gvisor_platforms[0] ? r->gvisor_platforms : "(not probed or none)");
    printf("backends\n");
    printf("  wasm    available\n");
    printf("  native  %s%s%s\n", r->native_available ? "available" : "UNAVAILABLE",
           r->native_reason[0] ? ": " : "", r->native_reason);
    printf("  gvisor  %s%s%s%s%s\n", r->gvisor_available ? "available" : "UNAVAILABLE",
           r->gvisor_available && r->gvisor_platform[0] ? " (platform " : "",
           r->gvisor_available ? r->gvisor_platform : "",
           r->gvisor_available && r->gvisor_platform[0] ? ")" : "",
           r->gvisor_available ? "" : r->gvisor_reason);
    if (!r->gvisor_available && r->gvisor_reason[0]) {} /* reason printed above */
}

/* --state-dir DIR / --state-dir=DIR at argv[*i]; 1 taken, 0 not this option,
 * -1 usage error (printed). */
static int state_dir_option(int argc, char **argv, int *i, const char *cmd, const char **dir) {
    const char *a = argv[*i];
    if (!strncmp(a, "--state-dir=", 12)) {
        *dir = a + 12;
    } else if (!strcmp(a, "--state-dir")) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "airlock %s: --state-dir needs a directory\n", cmd);
            return -1;
        }
        *dir = argv[++*i];
    } else {
        return 0;
    }
    if ((*dir)[0] != '/') {
        fprintf(stderr, "airlock %s: --state-dir '%s': must be an absolute path\n", cmd, *dir);
        return -1;
    }
    return 1;
}

int cli_doctor(int argc, char **argv) {
    bool json = false, quick = false;
    const char *state_dir = NULL;
    for (int i = 1; i < argc; i++) {
        int sd = state_dir_option(argc, argv, &i, "doctor", &state_dir);
        if (sd < 0) return CLI_USAGE;
        if (sd > 0) continue;
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(doctor_usage, stdout);
            return CLI_OK;
        } else {
            fprintf(stderr, "airlock doctor: unknown option '%s' (see 'airlock doctor --help')\n", argv[i]);
            return CLI_USAGE;
        }
    }
    al_host_report report;
    al_probe_host(&report, state_dir, !quick);
    if (json) print_json(&report);
    else print_text(&report);
    return report.native_available && report.gvisor_available ? CLI_OK : CLI_FAIL;
}

int cli_gc(int argc, char **argv) {
    const char *state_dir = NULL;
    for (int i = 1; i < argc; i++) {
        int sd = state_dir_option(argc, argv, &i, "gc", &state_dir);
        if (sd < 0) return CLI_USAGE;
        if (sd > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(gc_usage, stdout);
            return CLI_OK;
        }
        fprintf(stderr, "airlock gc: unknown option '%s' (see 'airlock gc --help')\n", argv[i]);
        return CLI_USAGE;
    }
    al_gc_report report;
    al_error err;
    if (!al_gc(state_dir, &report, &err)) {
        fprintf(stderr, "airlock gc: %s\n", err.message);
        return CLI_FAIL;
    }
    printf("removed %u container(s), %u bundle(s), %u cgroup(s)\n", report.containers,
           report.bundles, report.cgroups);
    return CLI_OK;
}
