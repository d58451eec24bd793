/* poll_raw.c — poll_oneoff called directly: no subscriptions, two clocks
 * (the earlier one fires), an unknown clock, a closed descriptor next to a
 * clock, stdin/stdout readiness with nbytes, and a regular file. Events are
 * printed sorted by userdata. */
// @stdin: stdin.txt
// @exit: 0
// @known: KD-NODE-POLL stdout s/^\(clock id 99: errno 0, 1 event(s) \[userdata 4 type 0 error\) 0\]$/\1 28]/
// @known: KD-NODE-POLL stdout s/^\(stdin read, nbytes: .* nbytes\) 0 hangup 0\]$/\1 8981 hangup 0]/
// @known: KD-NODE-POLL stdout s/^\(fd 42 (not open) + 10 ms clock: errno 0, 1 event(s)\) \[userdata 31 type 0 error 0\]$/\1 [userdata 30 type 1 error 8]/
// @known: KD-STDIO-RIGHTS stdout s/^\(stdin for writing: errno 0, 1 event(s) \[userdata 32 type 2\) error 0 hangup 1\]$/\1 error 76]/
#include <wasi/api.h>
#include "common.h"

static __wasi_subscription_t clock_sub(uint64_t ud, __wasi_clockid_t id, uint64_t ns) {
    __wasi_subscription_t s;
    memset(&s, 0, sizeof s);
    s.userdata = ud;
    s.u.tag = __WASI_EVENTTYPE_CLOCK;
    s.u.u.clock.id = id;
    s.u.u.clock.timeout = ns;
    return s;
}

static __wasi_subscription_t fd_sub(uint64_t ud, __wasi_eventtype_t type, int fd) {
    __wasi_subscription_t s;
    memset(&s, 0, sizeof s);
    s.userdata = ud;
    s.u.tag = type;
    s.u.u.fd_read.file_descriptor = (__wasi_fd_t)fd;
    return s;
}

static int by_userdata(const void *a, const void *b) {
    const __wasi_event_t *x = a, *y = b;
    return x->userdata < y->userdata ? -1 : x->userdata > y->userdata;
}

static void run(const char *label, __wasi_subscription_t *subs, size_t n, int show_nbytes) {
    __wasi_event_t ev[8];
    memset(ev, 0xee, sizeof ev);
    __wasi_size_t got = 99;
    __wasi_errno_t e = __wasi_poll_oneoff(subs, ev, n, &got);
    printf("%s: errno %d", label, e);
    if (e == 0) {
        printf(", %lu event(s)", (unsigned long)got);
        if (got <= 8) {
            qsort(ev, got, sizeof *ev, by_userdata);
            for (size_t i = 0; i < got; i++) {
                printf(" [userdata %llu type %d error %d", (unsigned long long)ev[i].userdata, ev[i].type, ev[i].error);
                if (ev[i].type != __WASI_EVENTTYPE_CLOCK && ev[i].error == 0) {
                    if (show_nbytes) printf(" nbytes %llu", (unsigned long long)ev[i].fd_readwrite.nbytes);
                    printf(" hangup %d", !!(ev[i].fd_readwrite.flags & __WASI_EVENTRWFLAGS_FD_READWRITE_HANGUP));
                }
                printf("]");
            }
        }
    }
    printf("\n");
}

int main(void) {
    __wasi_subscription_t s[4];
    run("no subscriptions", s, 0, 0);
    s[0] = clock_sub(1, __WASI_CLOCKID_MONOTONIC, 2000000000);
    s[1] = clock_sub(2, __WASI_CLOCKID_MONOTONIC, 1000000);
    run("clocks 2 s (1) and 1 ms (2)", s, 2, 0);
    s[0] = clock_sub(3, __WASI_CLOCKID_REALTIME, 1000000);
    run("realtime 1 ms", s, 1, 0);
    s[0] = clock_sub(4, 99, 1000000);
    run("clock id 99", s, 1, 0);
    s[0] = clock_sub(5, __WASI_CLOCKID_MONOTONIC, 0);
    run("monotonic 0 ns", s, 1, 0);

    /* stdin is readable (a 2 s clock beside, in case it is not) */
    s[0] = fd_sub(10, __WASI_EVENTTYPE_FD_READ, 0);
    s[1] = clock_sub(11, __WASI_CLOCKID_MONOTONIC, 2000000000);
    run("stdin readable (2 s clock beside)", s, 2, 0);
    s[0] = clock_sub(12, __WASI_CLOCKID_MONOTONIC, 200000000);
    run("(200 ms pause)", s, 1, 0);
    s[0] = fd_sub(20, __WASI_EVENTTYPE_FD_READ, 0);
    s[1] = fd_sub(21, __WASI_EVENTTYPE_FD_WRITE, 1);
    s[2] = fd_sub(22, __WASI_EVENTTYPE_FD_WRITE, 2);
    run("stdin read + stdout/stderr write", s, 3, 0);
    s[0] = fd_sub(25, __WASI_EVENTTYPE_FD_READ, 0);
    run("stdin read, nbytes", s, 1, 1);

    s[0] = fd_sub(30, __WASI_EVENTTYPE_FD_READ, 42);
    s[1] = clock_sub(31, __WASI_CLOCKID_MONOTONIC, 10000000);
    run("fd 42 (not open) + 10 ms clock", s, 2, 0);
    s[0] = fd_sub(32, __WASI_EVENTTYPE_FD_WRITE, 0);
    run("stdin for writing", s, 1, 0);
    /* (stdout for reading: airlock_only.c — node waits forever on it) */
    s[0] = fd_sub(34, 7, 0);
    run("event type 7", s, 1, 0);

    /* drain stdin: at EOF it is readable with nbytes 0 */
    char buf[4096];
    while (read(0, buf, sizeof buf) > 0) {
    }
    s[0] = fd_sub(40, __WASI_EVENTTYPE_FD_READ, 0);
    run("stdin at EOF", s, 1, 1);
    return 0;
}
