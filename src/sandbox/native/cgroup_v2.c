/*
 * cgroup_v2.c — the cgroup v2 (unified hierarchy) side of native.h's cgroup
 * interface: a leaf cgroup per sandbox with memory.max, memory.swap.max = 0
 * and pids.max, its statistics, and its removal (cgroup.kill).
 *
 * Where the leaf goes. v2's "no internal processes" rule: a non-root cgroup
 * that has processes cannot enable controllers for its children, and one
 * with controllers enabled for children cannot take processes. airlock's
 * own cgroup always holds airlock, so it can be the parent only when it is
 * the hierarchy's true root (exempt from the rule) or already has memory and
 * pids in cgroup.subtree_control. Moving airlock itself into a new leaf to
 * free its cgroup would also work, but it would change the caller's own
 * cgroup placement (its accounting, its service manager's view) behind its
 * back, so we do not. The parent of airlock's cgroup, and the root, are used
 * only when they *already* delegate memory and pids to their children:
 * enabling controllers there would change the resource control of every
 * sibling. Candidates in order (cgroup_v2_parents): own cgroup, its parent,
 * the root. Each candidate must also let us write its cgroup.procs, because
 * moving a process between two cgroups needs write access to the
 * cgroup.procs of their common ancestor — the candidate itself.
 *
 * Invariants: a cgroup is reported usable (version 2) only with memory and
 * pids present in its cgroup.controllers and every requested limit written;
 * otherwise it is removed again. memory.oom.group stays 0: at the limit the
 * kernel kills the largest process (the program), not the sandbox's init,
 * which must survive to report how the program ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"


#define CONTROLLERS_LEN 512

static bool has_memory_and_pids(const char *list) {
    return cgroup_has_word(list, "memory") && cgroup_has_word(list, "pids");
}

static bool writable_procs(const char *dir) {
    char path[PATH_MAX];
    return cgroup_join(path, dir, "cgroup.procs") && faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
}

/* Where airlock may make v2 cgroups: its own cgroup, that cgroup's parent,
 * the hierarchy root (see the file comment for which is used when). */
size_t cgroup_v2_parents(const cgroup_snapshot *snap, char (*out)[PATH_MAX], size_t max) {
    char root[PATH_MAX], current[PATH_MAX];
    size_t n = 0;
    if (!cgroup_find(snap, NULL, root, current)) return 0;
    cgroup_add_unique(out, &n, max, current);
    char *slash = strrchr(current, '/');
    if (strcmp(current, root) != 0 && slash && (size_t)(slash - current) >= strlen(root)) {
        *slash = '\0';
        cgroup_add_unique(out, &n, max, current);
    }
    cgroup_add_unique(out, &n, max, root);
    return n;
}

/* Can children of dir get memory and pids? Only our own cgroup (own == true)
 * may have them enabled here, and the kernel refuses that (EBUSY) unless the
 * no-internal-processes rule allows it. */
static bool parent_ready(const char *dir, bool own) {
    char list[CONTROLLERS_LEN];
    if (!writable_procs(dir)) {
        errno = EACCES;
        return false;
    }
    if (!cgroup_read(dir, "cgroup.subtree_control", list, sizeof list)) return false;
    if (has_memory_and_pids(list)) return true;
    if (!own) {
        errno = ENOTSUP;
        return false;
    }
    if (!cgroup_read(dir, "cgroup.controllers", list, sizeof list)) return false;
    if (!has_memory_and_pids(list)) {
        errno = ENOTSUP; /* bound to v1 (hybrid mode) or not delegated to us */
        return false;
    }
    return cgroup_write(dir, "cgroup.subtree_control", "+memory +pids");
}

static bool write_limit(const char *dir, const char *file, uint64_t value) {
    return value ? cgroup_write_u64(dir, file, value) : cgroup_write(dir, file, "max");
}

static bool set_limits(const char *dir, uint64_t memory_bytes, uint32_t max_processes) {
    if (!write_limit(dir, "memory.max", memory_bytes)) return false;
    /* Swap would let the tree keep memory.max in RAM and more on disk. The
     * file is absent when the kernel does not account swap: nothing to do. */
    if (!cgroup_write(dir, "memory.swap.max", "0") && errno != ENOENT) return false;
    return write_limit(dir, "pids.max", max_processes);
}

static bool make_child(native_cgroup *cg, const char *parent, const char *name,
                       uint64_t memory_bytes, uint32_t max_processes) {
    char leaf[NAME_MAX + 1], path[PATH_MAX], list[CONTROLLERS_LEN];
    snprintf(leaf, sizeof leaf, CGROUP_DIR_PREFIX "%s", name);
    if (!cgroup_join(path, parent, leaf)) return false;
    if (mkdir(path, 0755) < 0) return false;
    if (!cgroup_read(path, "cgroup.controllers", list, sizeof list) || !has_memory_and_pids(list) ||
        !set_limits(path, memory_bytes, max_processes)) {
        int saved = errno ? errno : ENOTSUP;
        cgroup_remove(path);
        errno = saved;
        return false;
    }
    char stat_path[PATH_MAX];
    cg->version = 2;
    snprintf(cg->path, sizeof cg->path, "%s", path);
    cg->has_memory = cg->has_pids = true;
    cg->has_cpu = cgroup_join(stat_path, path, "cpu.stat") && access(stat_path, R_OK) == 0;
    return true;
}

bool cgroup_v2_create(const cgroup_snapshot *snap, native_cgroup *cg, const char *name,
                      uint64_t memory_bytes, uint32_t max_processes) {
    char parents[3][PATH_MAX];
    size_t n = cgroup_v2_parents(snap, parents, 3);
    int last = ENOENT;
    for (size_t i = 0; i < n; i++) {
        errno = 0;
        if (parent_ready(parents[i], i == 0) &&
            make_child(cg, parents[i], name, memory_bytes, max_processes))
            return true;
        last = errno ? errno : ENOTSUP;
        if (last == EEXIST) break;
    }
    errno = last;
    return false;
}

void cgroup_v2_read_stats(const native_cgroup *cg, native_cgroup_stats *stats) {
    uint64_t v;
    if (cgroup_read_u64(cg->path, "memory.peak", &v)) stats->peak_memory_bytes = v; /* >= 5.19 */
    if (cgroup_read_key(cg->path, "cpu.stat", "usage_usec", &v))
        stats->cpu_ns = v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000;
    if (cgroup_read_key(cg->path, "memory.events", "oom_kill", &v)) stats->oom_kills = v;
    if (cgroup_read_key(cg->path, "pids.events", "max", &v)) stats->pids_refused = v;
}

void cgroup_v2_destroy(native_cgroup *cg) {
    /* cgroup.kill (>= 5.14) kills every member at once, also ones forking
     * right now; without it cgroup_remove signals them one by one. */
    cgroup_write(cg->path, "cgroup.kill", "1");
    cgroup_remove(cg->path);
}

/* Which controllers a leaf would get, without changing any existing
 * cgroup: a candidate that already delegates memory and pids is proven by
 * making (and removing) an empty leaf; enabling them in our own cgroup is
 * not done here, only judged: it works at the true root (no cgroup.type
 * file) when memory and pids are available and subtree_control is writable. */
void cgroup_v2_probe(const char *name, bool *writable, char *controllers, size_t len) {
    char parents[3][PATH_MAX], list[CONTROLLERS_LEN], path[PATH_MAX];
    size_t n = cgroup_v2_parents(NULL, parents, 3);
    *writable = false;
    if (len) controllers[0] = '\0';
    for (size_t i = 0; i < n && !*writable; i++) {
        const char *dir = parents[i];
        if (!writable_procs(dir) || !cgroup_read(dir, "cgroup.subtree_control", list, sizeof list))
            continue;
        if (has_memory_and_pids(list)) {
            native_cgroup cg = {0};
            if (!make_child(&cg, dir, name, 0, 0)) continue;
            if (cgroup_read(cg.path, "cgroup.controllers", list, sizeof list)) {
                *writable = true;
                snprintf(controllers, len, "%s", list);
            }
            cgroup_remove(cg.path);
            continue;
        }
        char available[CONTROLLERS_LEN];
        bool true_root = cgroup_join(path, dir, "cgroup.type") && access(path, F_OK) != 0;
        if (i != 0 || !true_root ||
            !cgroup_read(dir, "cgroup.controllers", available, sizeof available) ||
            !has_memory_and_pids(available) || !cgroup_join(path, dir, "cgroup.subtree_control") ||
            faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0)
            continue;
        *writable = true;
        size_t used = (size_t)snprintf(controllers, len, "%s", list);
        const char *extra[] = {"memory", "pids"};
        for (size_t k = 0; k < 2 && used < len; k++)
            if (!cgroup_has_word(list, extra[k]))
                used += (size_t)snprintf(controllers + used, len - used, " %s", extra[k]);
    }
    /* one line, space-separated, no trailing newline */
    for (char *p = controllers; len && *p; p++)
        if (*p == '\n') *p = ' ';
    size_t l = len ? strlen(controllers) : 0;
    while (l > 0 && controllers[l - 1] == ' ') controllers[--l] = '\0';
    while (len && controllers[0] == ' ') memmove(controllers, controllers + 1, strlen(controllers));
}
