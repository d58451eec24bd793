/*
 * poll.c — poll_oneoff(in, out, nsubscriptions, nevents_ptr).
 *
 * Subscriptions are clocks (relative, or absolute with
 * subscription_clock_abstime, on any of the four witx clocks) and
 * fd_read/fd_write readiness. In this host no descriptor ever blocks: stdin
 * is a buffer (readable, nbytes = what is left, hangup at its end; a
 * host-fed stdin is reported readable and blocks in fd_read), stdout
 * and stderr are buffers (always writable), files are "ready immediately"
 * (witx eventtype: "This event always triggers for regular files"). So a
 * call either reports ready descriptors and expired clocks at once, or only
 * has clocks to wait for and sleeps until the earliest one.
 *
 * Invariants:
 *   - nsubscriptions == 0 is errno::inval (witx). The subscription array,
 *     the event array (both nsubscriptions long, 64-bit sizes) and
 *     nevents_ptr are range-checked, and every subscription is validated,
 *     before any event is written.
 *   - Nothing is copied to the host per subscription: host memory stays
 *     O(1) however many subscriptions the guest passes.
 *   - Sleeping honours the run's deadline: the host sleeps in slices of at
 *     most 10 ms and never past the deadline, and returns
 *     AL_TRAP_INTERRUPTED once it passed, so poll_oneoff cannot hold a
 *     timed-out run hostage (a guest "sleep(10**9)").
 *   - Every clock deadline is converted to CLOCK_MONOTONIC at entry (the
 *     other clocks do not advance at wall speed while the host sleeps: CPU
 *     clocks stand still), so a timeout of d ns waits d ns of wall time.
 */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wasi_host.h"

/* witx subscription: userdata u64 @0, u.tag u8 @8, u.clock { id u32 @16,
 * timeout u64 @24, precision u64 @32, flags u16 @40 } or u.fd_readwrite
 * { file_descriptor u32 @16 }; 48 bytes. */
#define SUB_SIZE 48u
/* witx event: userdata u64 @0, error u16 @8, type u8 @10, fd_readwrite
 * { nbytes u64 @16, flags u16 @24 }; 32 bytes. */
#define EVENT_SIZE 32u

enum { EVENTTYPE_CLOCK = 0, EVENTTYPE_FD_READ = 1, EVENTTYPE_FD_WRITE = 2 };
enum { SUBCLOCK_ABSTIME = 1, EVENTRW_HANGUP = 1 };
enum { NCLOCKS = 4 };

#define SLEEP_SLICE_NS 10000000ull

typedef struct poll_sub {
    uint64_t userdata;
    uint8_t type;
    uint32_t clock_id, fd;
    uint64_t timeout;
    uint16_t clock_flags;
} poll_sub;

/* Every clock read once at entry, so both passes compute the same wake
 * times. */
typedef struct poll_start {
    uint64_t mono;
    uint64_t clock[NCLOCKS];
    wasi_errno clock_err[NCLOCKS];
} poll_start;

typedef struct poll_event {
    wasi_errno error;
    uint64_t nbytes;
    uint16_t flags;
} poll_event;

static poll_sub read_sub(guest_mem m, uint32_t at) {
    poll_sub s = {.userdata = get_u64(m, at), .type = m.base[at + 8]};
    s.clock_id = s.fd = get_u32(m, at + 16);
    s.timeout = get_u64(m, at + 24);
    uint16_t flags;
    memcpy(&flags, m.base + at + 40, 2);
    s.clock_flags = flags;
    return s;
}

static void poll_start_now(poll_start *t0) {
    t0->mono = wasi_monotonic_ns();
    for (uint32_t id = 0; id < NCLOCKS; id++) t0->clock_err[id] = wasi_clock_now(id, &t0->clock[id]);
}

/* The CLOCK_MONOTONIC time at which a clock subscription fires. */
static wasi_errno clock_wake(const poll_sub *s, const poll_start *t0, uint64_t *wake) {
    if (s->clock_id >= NCLOCKS) return WASI_EINVAL;
    if (t0->clock_err[s->clock_id]) return t0->clock_err[s->clock_id];
    uint64_t now = t0->clock[s->clock_id], wait = s->timeout;
    if (s->clock_flags & SUBCLOCK_ABSTIME) wait = s->timeout > now ? s->timeout - now : 0;
    *wake = wait > UINT64_MAX - t0->mono ? UINT64_MAX : t0->mono + wait;
    return WASI_ESUCCESS;
}

/* Readiness of an fd subscription. witx rights: poll_fd_readwrite together
 * with fd_read (for fd_read events) or fd_write (for fd_write events). */
static poll_event fd_readiness(wasi_ctx *ctx, const poll_sub *s) {
    poll_event ev = {0};
    wasi_fd *f = wasi_fd_get(ctx, s->fd);
    if (!f) return (poll_event){.error = WASI_EBADF};
    bool rd = s->type == EVENTTYPE_FD_READ;
    uint64_t need = WASI_RIGHT_POLL_FD_READWRITE | (rd ? WASI_RIGHT_FD_READ : WASI_RIGHT_FD_WRITE);
    if ((f->rights_base & need) != need || (!rd && f->read_only))
        return (poll_event){.error = WASI_ENOTCAPABLE};
    switch (f->kind) {
    case WASI_FD_STDIN:
        /* A host-fed stdin cannot say how much will come: reported ready
         * with nbytes 0, and the fd_read that follows blocks (interruptibly). */
        if (ctx->stdin_read) return ev;
        ev.nbytes = wasi_stdin_remaining(ctx);
        if (ev.nbytes == 0) ev.flags = EVENTRW_HANGUP; /* end of input, like a closed pipe */
        return ev;
    case WASI_FD_STDOUT: case WASI_FD_STDERR:
        return ev;
    case WASI_FD_FILE: {
        struct stat st;
        off_t pos;
        if (rd && fstat(f->host_fd, &st) == 0 && S_ISREG(st.st_mode) &&
            (pos = lseek(f->host_fd, 0, SEEK_CUR)) >= 0 && st.st_size > pos)
            ev.nbytes = (uint64_t)(st.st_size - pos);
        return ev;
    }
    default:
        return (poll_event){.error = WASI_EBADF};
    }
}

static void write_event(guest_mem m, uint32_t at, const poll_sub *s, const poll_event *ev) {
    memset(m.base + at, 0, EVENT_SIZE);
    put_u64(m, at, s->userdata);
    put_u16(m, at + 8, (uint16_t)ev->error);
    m.base[at + 10] = s->type;
    put_u64(m, at + 16, ev->nbytes);
    put_u16(m, at + 24, ev->flags);
}

/* Pass 1: validate every subscription; is anything ready without waiting,
 * and if not, when does the first clock fire? */
static wasi_errno scan(guest_mem m, uint32_t in, uint32_t n, const poll_start *t0, bool *ready,
                       uint64_t *first_wake) {
    *ready = false;
    *first_wake = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        poll_sub s = read_sub(m, in + i * SUB_SIZE);
        uint64_t wake = 0;
        switch (s.type) {
        case EVENTTYPE_CLOCK:
            if (clock_wake(&s, t0, &wake) || wake <= t0->mono) *ready = true;
            else if (wake < *first_wake) *first_wake = wake;
            break;
        case EVENTTYPE_FD_READ: case EVENTTYPE_FD_WRITE:
            *ready = true;
            break;
        default:
            return WASI_EINVAL; /* not a witx eventtype */
        }
    }
    return WASI_ESUCCESS;
}

/* Sleep until wake (CLOCK_MONOTONIC ns) in slices, watching the deadline. */
static al_trap_kind sleep_until(const wasi_ctx *ctx, uint64_t wake) {
    for (;;) {
        if (wasi_deadline_passed(ctx)) return AL_TRAP_INTERRUPTED;
        uint64_t now = wasi_monotonic_ns();
        if (now >= wake) return AL_TRAP_NONE;
        uint64_t until = wake - now > SLEEP_SLICE_NS ? now + SLEEP_SLICE_NS : wake;
        if (ctx->deadline_ns && until > ctx->deadline_ns) until = ctx->deadline_ns;
        struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                              .tv_nsec = (long)(until % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); /* EINTR: loop */
    }
}

/* Pass 2: an event for every ready descriptor and every clock due by now.
 * Each subscription is read whole before its event is written, so even
 * out == in works (event k <= i never reaches subscription i + 1). */
static uint32_t emit(wasi_ctx *ctx, guest_mem m, uint32_t in, uint32_t out, uint32_t n,
                     const poll_start *t0, uint64_t now) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++) {
        poll_sub s = read_sub(m, in + i * SUB_SIZE);
        poll_event ev = {0};
        if (s.type == EVENTTYPE_CLOCK) {
            uint64_t wake = 0;
            ev.error = clock_wake(&s, t0, &wake);
            if (!ev.error && wake > now) continue;
        } else {
            ev = fd_readiness(ctx, &s);
        }
        write_event(m, out + count * EVENT_SIZE, &s, &ev);
        count++;
    }
    return count;
}

al_trap_kind wasi_poll_oneoff(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    wasi_ctx *ctx = env;
    uint32_t in = (uint32_t)args[0].of.i32, out = (uint32_t)args[1].of.i32;
    uint32_t n = (uint32_t)args[2].of.i32, nevents_ptr = (uint32_t)args[3].of.i32;
    if (n == 0) return wasi_return(results, WASI_EINVAL);
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, in, (uint64_t)n * SUB_SIZE) ||
        !guest_range(m, out, (uint64_t)n * EVENT_SIZE) || !guest_range(m, nevents_ptr, 4))
        return wasi_return(results, WASI_EFAULT);
    poll_start t0;
    poll_start_now(&t0);
    bool ready;
    uint64_t first_wake;
    wasi_errno e = scan(m, in, n, &t0, &ready, &first_wake);
    if (e) return wasi_return(results, e);
    if (!ready) {
        al_trap_kind trap = sleep_until(ctx, first_wake);
        if (trap != AL_TRAP_NONE) return trap;
    }
    uint32_t count = emit(ctx, m, in, out, n, &t0, wasi_monotonic_ns());
    put_u32(m, nevents_ptr, count);
    return wasi_return(results, WASI_ESUCCESS);
}
