/* stdin_read.c — reading stdin (fd_read on fd 0) in odd-sized pieces, then
 * through stdio, then past the end. */
// @stdin: stdin.txt
// @exit: 0
#include <sys/uio.h>
#include "common.h"

static uint32_t fnv(uint32_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

int main(void) {
    unsigned char buf[5000];
    uint32_t h = 2166136261u;
    size_t total = 0;

    /* odd-sized raw reads */
    size_t sizes[] = {1, 7, 13, 64, 100};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        errno = 0;
        ssize_t n = read(0, buf, sizes[i]);
        printf("read(0, %zu): %zd \"", sizes[i], n);
        if (n > 0) {
            put_escaped(buf, (size_t)n);
            h = fnv(h, buf, (size_t)n);
            total += (size_t)n;
        }
        printf("\"\n");
    }
    /* zero-length read */
    TRY("read(0, 0)", read(0, buf, 0));

    /* readv into three buffers */
    {
        char a[3], b[0 + 1], c[10];
        struct iovec iov[3] = {{a, sizeof a}, {b, 0}, {c, sizeof c}};
        ssize_t n = readv(0, iov, 3);
        printf("readv(3+0+10): %zd \"", n);
        put_escaped(a, n < 3 ? (size_t)(n > 0 ? n : 0) : 3);
        if (n > 3) put_escaped(c, (size_t)n - 3);
        printf("\"\n");
        if (n > 0) {
            h = fnv(h, (unsigned char *)a, n < 3 ? (size_t)n : 3);
            if (n > 3) h = fnv(h, (unsigned char *)c, (size_t)n - 3);
            total += (size_t)n;
        }
    }

    /* the next lines through stdio */
    char line[256];
    for (int i = 0; i < 3 && fgets(line, sizeof line, stdin); i++) {
        printf("fgets: \"");
        put_escaped(line, strlen(line));
        printf("\"\n");
        h = fnv(h, (unsigned char *)line, strlen(line));
        total += strlen(line);
    }
    /* the rest in big chunks (stdio has buffered some: drain it first) */
    size_t chunks = 0;
    for (;;) {
        size_t n = fread(buf, 1, sizeof buf, stdin);
        if (n == 0) break;
        chunks++;
        h = fnv(h, buf, n);
        total += n;
        if (n < sizeof buf) {
            printf("last chunk ends with: \"");
            put_escaped(buf + (n > 25 ? n - 25 : 0), n > 25 ? 25 : n);
            printf("\"\n");
        }
    }
    printf("feof: %d ferror: %d\n", feof(stdin) != 0, ferror(stdin) != 0);
    printf("total bytes: %zu fnv1a: %08x\n", total, h);
    /* past the end, twice */
    TRY("read(0) at EOF", read(0, buf, sizeof buf));
    TRY("read(0) at EOF again", read(0, buf, 1));
    return 0;
}
