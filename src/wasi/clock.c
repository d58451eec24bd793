/*
 * clock.c — clock_res_get, clock_time_get, sched_yield, proc_raise,
 * proc_exit, and the run's deadline.
 *
 * Invariants:
 *   - Only the four witx clocks exist (realtime, monotonic, process and
 *     thread CPU time); any other id is errno::inval, as the witx requires
 *     for unsupported clocks, so a guest cannot name an arbitrary host
 *     clockid_t (CLOCK_BOOTTIME, a CPU clock of another pid, ...).
 *   - proc_exit records the code and ends the run with AL_TRAP_EXIT: the
 *     engine unwinds every guest frame; nothing of the host process exits.
 *   - Signals do not exist in the sandbox: proc_raise never reaches the host
 *     (node's uvwasi raises the signal in the host process; we must not).
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "wasi_host.h"

static bool host_clock(uint32_t id, clockid_t *out) {
    switch (id) {
    case WASI_CLOCK_REALTIME: *out = CLOCK_REALTIME; return true;
    case WASI_CLOCK_MONOTONIC: *out = CLOCK_MONOTONIC; return true;
    case WASI_CLOCK_PROCESS_CPUTIME_ID: *out = CLOCK_PROCESS_CPUTIME_ID; return true;
    case WASI_CLOCK_THREAD_CPUTIME_ID: *out = CLOCK_THREAD_CPUTIME_ID; return true;
    default: return false;
    }
}

/* witx timestamps are u64 nanoseconds; times before the epoch read as 0. */
static uint64_t timespec_ns(struct timespec ts) {
    if (ts.tv_sec < 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

wasi_errno wasi_clock_now(uint32_t id, uint64_t *ns) {
    clockid_t c;
    if (!host_clock(id, &c)) return WASI_EINVAL;
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) return wasi_errno_from_host(errno);
    *ns = timespec_ns(ts);
    return WASI_ESUCCESS;
}

uint64_t wasi_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail for CLOCK_MONOTONIC */
    return timespec_ns(ts);
}

/* Only the deadline: airlock.h has no getter for the store's interrupt flag,
 * so a WASI call cannot see al_store_interrupt; the guest sees it at its
 * next loop header or call after the WASI call returns. */
bool wasi_deadline_passed(const wasi_ctx *ctx) {
    if (ctx->store && al_store_interrupted(ctx->store)) return true; /* embedder said stop */
    return ctx->deadline_ns != 0 && wasi_monotonic_ns() >= ctx->deadline_ns;
}

/* clock_res_get(id, resolution_ptr). witx: "Implementations are required
 * to provide a non-zero value for supported clocks". */
al_trap_kind wasi_clock_res_get(void *env, al_caller *caller, const al_value *args,
                                al_value *results) {
    clockid_t c;
    if (!host_clock((uint32_t)args[0].of.i32, &c)) return wasi_return(results, WASI_EINVAL);
    uint32_t out = (uint32_t)args[1].of.i32;
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, out, 8))
        return wasi_return(results, WASI_EFAULT);
    struct timespec ts;
    if (clock_getres(c, &ts) != 0) return wasi_return(results, wasi_errno_from_host(errno));
    uint64_t res = timespec_ns(ts);
    put_u64(m, out, res ? res : 1);
    return wasi_return(results, WASI_ESUCCESS);
}

/* clock_time_get(id, precision, time_ptr). The precision is a hint ("the
 * maximum lag") that an exact reading always satisfies. */
al_trap_kind wasi_clock_time_get(void *env, al_caller *caller, const al_value *args,
                                 al_value *results) {
    uint64_t now = 0;
    wasi_errno e = wasi_clock_now((uint32_t)args[0].of.i32, &now);
    if (e) return wasi_return(results, e);
    uint32_t out = (uint32_t)args[2].of.i32;
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, out, 8))
        return wasi_return(results, WASI_EFAULT);
    put_u64(m, out, now);
    return wasi_return(results, WASI_ESUCCESS);
}

al_trap_kind wasi_sched_yield(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    sched_yield();
    return wasi_return(results, WASI_ESUCCESS);
}

/* No signals in the sandbox: raising one is "function not supported". */
al_trap_kind wasi_proc_raise(void *env, al_caller *caller, const al_value *args,
                             al_value *results) {
    return wasi_return(results, WASI_ENOSYS);
}

/* proc_exit(rval) is noreturn in the witx: record the code (a u32 exitcode,
 * kept bit for bit) and unwind the whole run with AL_TRAP_EXIT. */
al_trap_kind wasi_proc_exit(void *env, al_caller *caller, const al_value *args,
                            al_value *results) {
    wasi_ctx *ctx = env;
    ctx->exited = true;
    ctx->exit_code = args[0].of.i32;
    return AL_TRAP_EXIT;
}
