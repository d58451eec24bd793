/* random.c — random_get through getentropy and arc4random_buf. Only sizes
 * and "not all zero"/"different" are printed. */
// @exit: 0
#include <sys/random.h>
#include "common.h"

static int nonzero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 1;
    return 0;
}

int main(void) {
    unsigned char a[256], b[256];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    TRY("getentropy(256)", getentropy(a, sizeof a));
    TRY("getentropy(256) again", getentropy(b, sizeof b));
    printf("first not all zero: %s\n", nonzero(a, sizeof a) ? "yes" : "no");
    printf("two draws differ: %s\n", memcmp(a, b, sizeof a) ? "yes" : "no");
    TRY("getentropy(0)", getentropy(a, 0));
    TRY("getentropy(257)", getentropy(a, 257)); /* libc's limit: EIO */

    /* a 1 MiB buffer through arc4random_buf (which calls random_get) */
    size_t n = 1 << 20;
    unsigned char *big = calloc(1, n);
    arc4random_buf(big, n);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) zeros += big[i] == 0;
    /* ~4096 expected; anything near 0 or n means a broken source */
    printf("1 MiB arc4random_buf: zero bytes plausible: %s\n", zeros > 2000 && zeros < 8000 ? "yes" : "no");
    unsigned counts[8] = {0};
    for (size_t i = 0; i < n; i++) counts[big[i] >> 5]++;
    int flat = 1;
    for (int i = 0; i < 8; i++) flat &= counts[i] > n / 8 - n / 64 && counts[i] < n / 8 + n / 64;
    printf("1 MiB arc4random_buf: roughly uniform: %s\n", flat ? "yes" : "no");
    uint32_t x = arc4random(), y = arc4random(), z = arc4random();
    printf("three arc4random() not all equal: %s\n", (x != y || y != z) ? "yes" : "no");
    printf("arc4random_uniform(10) < 10: %s\n", arc4random_uniform(10) < 10 ? "yes" : "no");
    free(big);
    return 0;
}
