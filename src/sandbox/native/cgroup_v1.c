/*
 * cgroup_v1.c — the cgroup v1 side of native.h's cgroup interface: one
 * directory per controller hierarchy (memory, pids, cpuacct) for a sandbox,
 * with memory.limit_in_bytes (+ memsw, swappiness 0, OOM killer on) and
 * pids.max, its statistics and its removal.
 *
 * Where: under airlock's own cgroup in each hierarchy (/proc/self/cgroup),
 * else at the hierarchy's root when that is where we may write (v1 has no
 * "no internal processes" rule, so either works). Hierarchies may combine
 * controllers ("cpu,cpuacct", even "memory,pids"): a directory already made
 * for one controller is reused for another in the same hierarchy.
 *
 * Invariants: the cgroup counts as usable (version 1) when memory or pids
 * could be set up; each controller is reported (has_memory, has_pids) only
 * with its limit written, otherwise its directory is removed again and the
 * caller falls back to the rlimit for that one.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"


/* The controllers a sandbox uses, in the order they are set up. */
static const char *const used_controllers[] = {"memory", "pids", "cpuacct"};
#define NUSED (sizeof used_controllers / sizeof used_controllers[0])

/* Where airlock may make v1 cgroups: its own cgroup and the root, in each
 * hierarchy it uses. */
size_t cgroup_v1_parents(const cgroup_snapshot *snap, char (*out)[PATH_MAX], size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < NUSED; i++) {
        char root[PATH_MAX], current[PATH_MAX];
        if (!cgroup_find(snap, used_controllers[i], root, current)) continue;
        cgroup_add_unique(out, &n, max, current);
        cgroup_add_unique(out, &n, max, root);
    }
    return n;
}

/* Make (or reuse, same hierarchy) the directory for controller into out.
 * *made tells whether this call created it. */
static bool make_dir(const cgroup_snapshot *snap, const native_cgroup *cg, const char *controller,
                     const char *name, char *out, bool *made) {
    char root[PATH_MAX], current[PATH_MAX], leaf[NAME_MAX + 1];
    *made = false;
    if (!cgroup_find(snap, controller, root, current)) return false;
    snprintf(leaf, sizeof leaf, CGROUP_DIR_PREFIX "%s", name);
    const char *bases[] = {current, root};
    int last = EACCES;
    for (size_t i = 0; i < 2; i++) {
        if (i == 1 && strcmp(root, current) == 0) break;
        char path[PATH_MAX];
        if (!cgroup_join(path, bases[i], leaf)) return false;
        const char *ours[] = {cg->memory, cg->pids, cg->cpuacct};
        for (size_t k = 0; k < 3; k++) {
            if (ours[k][0] && strcmp(ours[k], path) == 0) {
                snprintf(out, PATH_MAX, "%s", path);
                return true;
            }
        }
        if (mkdir(path, 0755) == 0) {
            snprintf(out, PATH_MAX, "%s", path);
            *made = true;
            return true;
        }
        last = errno;
        if (last == EEXIST) break; /* someone else's: never adopt it */
    }
    errno = last;
    return false;
}

static bool memory_limits(const char *dir, uint64_t memory_bytes) {
    /* oom_kill_disable is inherited from the parent: with it set a tree at
     * its limit would hang instead of losing its largest process. */
    cgroup_write(dir, "memory.oom_control", "0");
    /* Keep the tree's pages in RAM, where the limit counts them (refused in
     * some setups, e.g. a root cgroup; harmless then). */
    cgroup_write(dir, "memory.swappiness", "0");
    if (memory_bytes == 0) return true;
    if (!cgroup_write_u64(dir, "memory.limit_in_bytes", memory_bytes)) return false;
    /* memory+swap = memory, so swap cannot extend the limit. Written after
     * limit_in_bytes (the kernel wants memsw >= memory); absent without swap
     * accounting. */
    if (!cgroup_write_u64(dir, "memory.memsw.limit_in_bytes", memory_bytes) && errno != ENOENT)
        return false;
    return true;
}

static bool pids_limit(const char *dir, uint32_t max_processes) {
    return max_processes ? cgroup_write_u64(dir, "pids.max", max_processes)
                         : cgroup_write(dir, "pids.max", "max");
}

/* Undo a directory made for a controller whose limit could not be set,
 * unless another controller of the same hierarchy still uses it. */
static void drop_dir(char *dir, bool made) {
    if (made) cgroup_remove(dir);
    dir[0] = '\0';
}

bool cgroup_v1_create(const cgroup_snapshot *snap, native_cgroup *cg, const char *name,
                      uint64_t memory_bytes, uint32_t max_processes) {
    bool made;
    int first_errno = 0;
    if (make_dir(snap, cg, "memory", name, cg->memory, &made)) {
        cg->has_memory = memory_limits(cg->memory, memory_bytes);
        if (!cg->has_memory) drop_dir(cg->memory, made);
    } else {
        first_errno = errno;
    }
    if (first_errno != EEXIST && make_dir(snap, cg, "pids", name, cg->pids, &made)) {
        cg->has_pids = pids_limit(cg->pids, max_processes);
        if (!cg->has_pids) drop_dir(cg->pids, made);
    } else if (!first_errno) {
        first_errno = errno;
    }
    if (!cg->has_memory && !cg->has_pids) {
        errno = first_errno ? first_errno : EACCES;
        return false;
    }
    /* CPU accounting only: without it cpu_ns comes from the wait status. */
    cg->has_cpu = first_errno != EEXIST && make_dir(snap, cg, "cpuacct", name, cg->cpuacct, &made);
    if (!cg->has_cpu) cg->cpuacct[0] = '\0';
    if (first_errno == EEXIST) {
        cgroup_v1_destroy(cg);
        errno = EEXIST;
        return false;
    }
    cg->version = 1;
    return true;
}

void cgroup_v1_read_stats(const native_cgroup *cg, native_cgroup_stats *stats) {
    uint64_t v;
    if (cg->memory[0]) {
        if (cgroup_read_u64(cg->memory, "memory.max_usage_in_bytes", &v)) stats->peak_memory_bytes = v;
        if (cgroup_read_key(cg->memory, "memory.oom_control", "oom_kill", &v)) stats->oom_kills = v;
    }
    if (cg->pids[0] && cgroup_read_key(cg->pids, "pids.events", "max", &v)) stats->pids_refused = v;
    if (cg->cpuacct[0] && cgroup_read_u64(cg->cpuacct, "cpuacct.usage", &v)) stats->cpu_ns = v;
}

void cgroup_v1_destroy(native_cgroup *cg) {
    /* Killing through the first directory ends the processes in all of
     * them (the same tasks are in each hierarchy); a directory shared by
     * two controllers is gone (ENOENT) the second time, which is success. */
    char *dirs[] = {cg->memory, cg->pids, cg->cpuacct};
    for (size_t i = 0; i < 3; i++) {
        if (dirs[i][0]) cgroup_remove(dirs[i]);
        dirs[i][0] = '\0';
    }
    cg->has_memory = cg->has_pids = cg->has_cpu = false;
}

/* Which v1 controllers a child cgroup can be made in (by making and
 * removing an empty one, which changes nothing else). */
void cgroup_v1_probe(const char *name, bool *writable, char *controllers, size_t len) {
    static const char *const probed[] = {"memory", "pids", "cpu", "cpuacct"};
    bool memory = false, pids = false;
    size_t used = 0;
    if (len) controllers[0] = '\0';
    for (size_t i = 0; i < sizeof probed / sizeof probed[0]; i++) {
        native_cgroup cg = {0};
        char dir[PATH_MAX];
        bool made;
        if (!make_dir(NULL, &cg, probed[i], name, dir, &made)) continue;
        if (made) cgroup_remove(dir);
        if (!strcmp(probed[i], "memory")) memory = true;
        if (!strcmp(probed[i], "pids")) pids = true;
        if (used < len)
            used += (size_t)snprintf(controllers + used, len - used, "%s%s", used ? " " : "",
                                     probed[i]);
    }
    *writable = memory && pids;
}
