/*
 * Case 11: unbounded recursion. The call goes through a volatile function
 * pointer so the compiler can neither inline it nor turn it into a loop, and
 * uses no stack memory (no address-taken locals), so only the engine's call
 * depth limit can stop it: "call stack exhausted".
 *   plain (default)  one i32 argument per frame
 *   wide             many live i64 values per frame (value-stack pressure)
 */
#include "common.h"

static int rec(int n);
static int (*volatile next)(int) = rec;
static int rec(int n) { return next(n + 1) * 3 + n; }

static long long wide(long long a, long long b, long long c, long long d);
static long long (*volatile next_wide)(long long, long long, long long, long long) = wide;
static long long wide(long long a, long long b, long long c, long long d) {
    long long e = a * b, f = b ^ c, g = c + d, h = d - a, i = a | d, j = b & c;
    long long r = next_wide(e + 1, f + 2, g + 3, h + 4);
    return r + a + b + c + d + e + f + g + h + i + j;
}

int main(int argc, char **argv) {
    printf("recursing\n");
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "wide"))
        printf("%lld\n", next_wide(1, 2, 3, argc));
    else
        printf("%d\n", next(argc));
    printf("RETURNED: recursion did not trap\n");
    return 1;
}
