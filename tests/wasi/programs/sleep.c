/* sleep.c — poll_oneoff clock subscriptions through nanosleep,
 * clock_nanosleep (relative), usleep, sleep(0), and poll/select
 * with no descriptors. Prints only "long enough" booleans. */
// @exit: 0
#include <poll.h>
#include <sched.h>
#include <sys/select.h>
#include <time.h>
#include "common.h"

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#define YESNO(b) ((b) ? "yes" : "no")

/* node's sleeps can end up to 1 ms early (libuv timers count whole
 * milliseconds from a truncated start: KD-NODE-SLEEP-SHORT), so "long
 * enough" here allows 1 ms; airlock_only.c checks airlock without it. */
#define SLACK 1000000

int main(void) {
    int64_t t0 = now_ns();
    struct timespec req = {0, 20 * 1000000}, rem = {7, 7};
    int r = nanosleep(&req, &rem);
    int64_t dt = now_ns() - t0;
    printf("nanosleep(20 ms): %d, slept >= 20 ms: %s, < 5 s: %s\n", r, YESNO(dt >= 20000000 - SLACK), YESNO(dt < 5000000000));

    t0 = now_ns();
    r = nanosleep(&(struct timespec){0, 0}, NULL);
    printf("nanosleep(0): %d\n", r);

    errno = 0;
    r = nanosleep(&(struct timespec){0, 1000000000}, NULL);
    printf("nanosleep(tv_nsec = 1e9): %d %s\n", r, errname(r ? errno : 0));
    errno = 0;
    r = nanosleep(&(struct timespec){-1, 0}, NULL); /* wasi-libc clamps it to 0 */
    printf("nanosleep(tv_sec = -1): %d %s\n", r, errname(r ? errno : 0));

    t0 = now_ns();
    r = clock_nanosleep(CLOCK_MONOTONIC, 0, &(struct timespec){0, 15000000}, NULL);
    dt = now_ns() - t0;
    printf("clock_nanosleep(monotonic, 15 ms): %d, long enough: %s\n", r, YESNO(dt >= 15000000 - SLACK));

    /* Not tried here: absolute deadlines (TIMER_ABSTIME). node 20 gets them
     * wrong (known-differences.md, KD-NODE-ABSTIME: a monotonic or past one
     * sleeps practically forever, a future realtime one returns early);
     * airlock_only.c checks airlock on them. */
    t0 = now_ns();
    r = usleep(12000);
    printf("usleep(12000): %d, long enough: %s\n", r, YESNO(now_ns() - t0 >= 12000000 - SLACK));
    printf("sleep(0): %u\n", sleep(0));

    t0 = now_ns();
    r = poll(NULL, 0, 10);
    printf("poll(no fds, 10 ms): %d, long enough: %s\n", r, YESNO(now_ns() - t0 >= 10000000 - SLACK));
    t0 = now_ns();
    r = poll(NULL, 0, 0);
    printf("poll(no fds, 0 ms): %d\n", r);
    t0 = now_ns();
    struct timeval tv = {0, 10000};
    r = select(0, NULL, NULL, NULL, &tv);
    printf("select(no fds, 10 ms): %d, long enough: %s\n", r, YESNO(now_ns() - t0 >= 10000000 - SLACK));
    printf("sched_yield: %d\n", sched_yield());
    return 0;
}
