/* clocks.c — clock_time_get and clock_res_get through clock_gettime,
 * clock_getres, time, gettimeofday. Only booleans: the values themselves are
 * the host's business. */
// @exit: 0
#include <sys/time.h>
#include <time.h>
#include "common.h"

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

#define YESNO(b) ((b) ? "yes" : "no")

int main(void) {
    struct timespec a, b, r;
    /* monotonic: never goes back over many reads, and moves forward */
    int ok = clock_gettime(CLOCK_MONOTONIC, &a) == 0;
    int nondecreasing = 1;
    struct timespec prev = a;
    for (int i = 0; i < 10000; i++) {
        struct timespec t;
        ok &= clock_gettime(CLOCK_MONOTONIC, &t) == 0;
        if (ns(t) < ns(prev)) nondecreasing = 0;
        prev = t;
    }
    struct timespec ten_ms = {0, 10000000};
    nanosleep(&ten_ms, NULL);
    ok &= clock_gettime(CLOCK_MONOTONIC, &b) == 0;
    printf("monotonic: calls succeed: %s\n", YESNO(ok));
    printf("monotonic: never decreases: %s\n", YESNO(nondecreasing));
    /* (>= 9 ms: node's sleeps may end 1 ms early, KD-NODE-SLEEP-SHORT) */
    printf("monotonic: increases across a 10 ms sleep by >= 9 ms: %s\n", YESNO(ns(b) - ns(a) >= 9000000));
    printf("monotonic: tv_nsec in range: %s\n", YESNO(b.tv_nsec >= 0 && b.tv_nsec < 1000000000));

    /* realtime: after 2020-01-01, before 2100, consistent with time() and
     * gettimeofday() */
    ok = clock_gettime(CLOCK_REALTIME, &a) == 0;
    time_t t = time(NULL);
    struct timeval tv;
    int g = gettimeofday(&tv, NULL);
    printf("realtime: call succeeds: %s\n", YESNO(ok));
    printf("realtime: after 2020 and before 2100: %s\n", YESNO(a.tv_sec > 1577836800 && a.tv_sec < 4102444800));
    printf("realtime: time() within 2 s: %s\n", YESNO(t >= a.tv_sec - 2 && t <= a.tv_sec + 2));
    printf("realtime: gettimeofday ok and within 2 s: %s\n", YESNO(g == 0 && tv.tv_sec >= a.tv_sec - 2 && tv.tv_sec <= a.tv_sec + 2));
    printf("realtime: tv_usec in range: %s\n", YESNO(tv.tv_usec >= 0 && tv.tv_usec < 1000000));

    /* resolutions: positive and at most one second */
    struct { const char *name; clockid_t id; } clocks[] = {
        {"realtime", CLOCK_REALTIME},
        {"monotonic", CLOCK_MONOTONIC},
    };
    for (size_t i = 0; i < sizeof clocks / sizeof *clocks; i++) {
        errno = 0;
        int rc = clock_getres(clocks[i].id, &r);
        printf("%s: clock_getres: %d %s, in (0, 1 s]: %s\n", clocks[i].name, rc, errname(rc ? errno : 0),
               YESNO(rc == 0 && ns(r) > 0 && ns(r) <= 1000000000));
    }
    errno = 0;
    printf("clock_getres(NULL result): %d\n", clock_getres(CLOCK_MONOTONIC, NULL));

    /* the CPU-time clocks: they exist and move forward (raw_calls.c tries
     * an id that does not exist) */
    struct timespec c0, c1;
    int ok0 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0) == 0;
    volatile unsigned spin = 0;
    for (unsigned i = 0; i < 20000000; i++) spin += i;
    (void)spin;
    int ok1 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1) == 0;
    printf("process cputime: calls succeed: %s, never decreases: %s\n", YESNO(ok0 && ok1), YESNO(ns(c1) >= ns(c0)));
    ok0 = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0) == 0;
    printf("thread cputime: call succeeds: %s\n", YESNO(ok0));
    return 0;
}
