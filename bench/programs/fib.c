/*
 * fib.c — recursive Fibonacci: measures call/return overhead and the
 * interpreter's handling of small frames. fib(FIB_N) makes ~2*fib(N) calls.
 */
#include "bench.h"

#ifndef FIB_N
#define FIB_N 35
#endif

/* volatile: keep the argument opaque so no compiler folds the recursion. */
static volatile int32_t fib_n = FIB_N;

static int32_t fib(int32_t n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

int32_t run(void)
{
    return BENCH_CHECKSUM(fib(fib_n));
}
