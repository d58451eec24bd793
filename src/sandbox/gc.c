/*
 * gc.c — al_gc (airlock.h): remove what executions left behind after their
 * airlock process died without cleaning up (SIGKILL, crash, power loss of
 * the process): gVisor containers and bundles (gvisor_collect_orphans) and
 * native sandbox cgroups (cgroup_collect_orphans).
 *
 * Invariants: only entries whose owner pid (recorded in their id,
 * "al-<pid>-...") is dead are touched, so running concurrently with live
 * airlock processes is safe; nothing is printed; the report is optional.
 */
#include <limits.h>
#include <string.h>

#include "native/native.h"
#include "sandbox.h"

bool al_gc(const char *state_dir, al_gc_report *report, al_error *error) {
    char dir[PATH_MAX];
    al_error local;
    if (report) memset(report, 0, sizeof *report);
    if (!sandbox_state_dir(state_dir, dir, sizeof dir, error ? error : &local)) return false;
    unsigned containers = 0, bundles = 0;
    /* Containers first: their sandboxes hold processes and mounts that the
     * rest of the cleanup would otherwise wait for. */
    gvisor_collect_orphans(dir, &containers, &bundles);
    unsigned cgroups = cgroup_collect_orphans();
    if (report) {
        report->containers = containers;
        report->bundles = bundles;
        report->cgroups = cgroups;
    }
    return true;
}
