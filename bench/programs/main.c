/*
 * main.c — native driver for the benchmark programs: calls run() and prints
 * its checksum on stdout, the way `airlock run X.wasm --invoke run` does.
 *
 * With an argument N it calls run() N times and reports the best wall time of
 * one call on stderr (the process-level time is measured by bench/run.sh).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    if (reps < 1)
        reps = 1;
    double best = 0;
    int32_t sum = 0;
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        int32_t r = run();
        double t = now_ms() - t0;
        if (i == 0 || t < best)
            best = t;
        if (i > 0 && r != sum) {
            fprintf(stderr, "checksum changed between calls: %d then %d\n", (int)sum, (int)r);
            return 1;
        }
        sum = r;
    }
    printf("%d\n", (int)sum);
    if (argc > 1)
        fprintf(stderr, "run: %.3f ms\n", best);
    return 0;
}
