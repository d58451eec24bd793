/*
 * rlimit.c — the policy's per-process limits, set with setrlimit in the
 * program's process before execve.
 *
 * Invariants:
 *  - soft == hard for every limit but RLIMIT_CPU, so the program cannot
 *    raise any of them (raising a hard limit needs CAP_SYS_RESOURCE, which
 *    it no longer has); RLIMIT_CPU's hard limit is one second above the
 *    soft one, so the program first gets SIGXCPU, then SIGKILL;
 *  - a limit never goes above the hard limit the process already has: the
 *    caller's stricter limit wins (and raising it would fail anyway);
 *  - memory and process counts are rlimits only when the cgroup does not
 *    enforce them (RLIMIT_AS is per process and counts mappings, a poorer
 *    measure than the cgroup's charge of the whole tree);
 *  - core dumps are off (a dump could land in a writable grant, carrying
 *    whatever was in memory), memory locking, POSIX message queues,
 *    real-time priority and raised nice are kept at (next to) nothing: each
 *    is a way to take memory or CPU from the host outside the cgroup.
 * Runs in the child after clone: no malloc, no stdio.
 */
#include <errno.h>
#include <sys/resource.h>

#include "native.h"

#define DEFAULT_OPEN_FILES 256
#define MEMLOCK_BYTES (64 * 1024)

static bool set_limit(int resource, rlim_t soft, rlim_t hard, const char *what,
                      const char **step) {
    struct rlimit current;
    if (getrlimit(resource, &current) != 0) {
        *step = what;
        return false;
    }
    if (hard > current.rlim_max)
        hard = current.rlim_max;
    if (soft > hard)
        soft = hard;
    struct rlimit limit = {.rlim_cur = soft, .rlim_max = hard};
    if (setrlimit(resource, &limit) != 0) {
        *step = what;
        return false;
    }
    return true;
}

static bool set_fixed(int resource, rlim_t value, const char *what, const char **step) {
    return set_limit(resource, value, value, what, step);
}

/* Whole seconds, rounded up: a budget of 1500 ms allows 2 s per process
 * (the parent measures the tree's total precisely). */
static rlim_t cpu_seconds(uint64_t ms) {
    uint64_t seconds = ms / 1000 + (ms % 1000 != 0);
    if (seconds >= (uint64_t)RLIM_INFINITY - 1)
        return RLIM_INFINITY - 2;
    return (rlim_t)seconds;
}

static bool apply_cpu(uint64_t cpu_time_ms, const char **step) {
    if (cpu_time_ms == 0)
        return true;
    rlim_t seconds = cpu_seconds(cpu_time_ms);
    return set_limit(RLIMIT_CPU, seconds, seconds + 1, "setrlimit(RLIMIT_CPU)", step);
}

bool rlimit_apply(const native_plan *plan, const char **step) {
    rlim_t open_files = plan->max_open_files ? plan->max_open_files : DEFAULT_OPEN_FILES;
    rlim_t file_size = plan->max_file_size ? (rlim_t)plan->max_file_size : RLIM_INFINITY;
    if (!set_fixed(RLIMIT_NOFILE, open_files, "setrlimit(RLIMIT_NOFILE)", step) ||
        !set_fixed(RLIMIT_FSIZE, file_size, "setrlimit(RLIMIT_FSIZE)", step) ||
        !apply_cpu(plan->cpu_time_ms, step))
        return false;
    if (!plan->cgroup_memory && plan->memory_bytes != 0 &&
        !set_fixed(RLIMIT_AS, (rlim_t)plan->memory_bytes, "setrlimit(RLIMIT_AS)", step))
        return false;
    if (!plan->cgroup_pids && plan->max_processes != 0 &&
        !set_fixed(RLIMIT_NPROC, plan->max_processes, "setrlimit(RLIMIT_NPROC)", step))
        return false;
    return set_fixed(RLIMIT_CORE, 0, "setrlimit(RLIMIT_CORE)", step) &&
           set_fixed(RLIMIT_MEMLOCK, MEMLOCK_BYTES, "setrlimit(RLIMIT_MEMLOCK)", step) &&
           set_fixed(RLIMIT_MSGQUEUE, 0, "setrlimit(RLIMIT_MSGQUEUE)", step) &&
           set_fixed(RLIMIT_RTPRIO, 0, "setrlimit(RLIMIT_RTPRIO)", step) &&
           set_fixed(RLIMIT_NICE, 0, "setrlimit(RLIMIT_NICE)", step);
}
