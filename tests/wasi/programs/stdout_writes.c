/* stdout_writes.c — fd_write on stdout and stderr: empty, small and large
 * writes, writev with empty and NULL iovecs, and stdio buffering modes.
 * stdout gets the data, stderr the log of every return value (each stream
 * is compared separately, so their interleaving does not matter). */
// @exit: 0
#include <sys/uio.h>
#include "common.h"

static char big[300001];

static void fill(size_t n, char c0) {
    /* lines of 64 bytes: position and a rotating letter, so a diff points at
     * the byte that went wrong */
    for (size_t i = 0; i < n; i++) big[i] = (char)(c0 + (i / 64) % 26);
    for (size_t i = 63; i < n; i += 64) big[i] = '\n';
}

static void logw(const char *what, ssize_t r) {
    int e = errno;
    if (r < 0)
        fprintf(stderr, "%s: -1 %s\n", what, errname(e));
    else
        fprintf(stderr, "%s: %zd\n", what, r);
}

int main(void) {
    setvbuf(stderr, NULL, _IONBF, 0);
    logw("write(1, 0 bytes)", write(1, "", 0));
    logw("write(1, NULL, 0)", write(1, NULL, 0));
    logw("write(1, 1 byte)", write(1, "\n", 1));
    size_t sizes[] = {1, 63, 64, 65, 4095, 4096, 4097, 65535, 65536, 65537, 300000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        fill(sizes[i], 'A' + (char)i);
        char what[64];
        snprintf(what, sizeof what, "write(1, %zu)", sizes[i]);
        ssize_t r = write(1, big, sizes[i]);
        logw(what, r);
        write(1, "|\n", 2);
    }

    /* writev: empty iovecs in the middle, at the start and at the end */
    fill(10000, 'a');
    struct iovec iov[] = {
        {NULL, 0}, {"one ", 4}, {NULL, 0}, {"two ", 4}, {big, 10000}, {"three\n", 6}, {"", 0},
    };
    logw("writev(1, 7 iovecs)", writev(1, iov, 7));
    logw("writev(1, 0 iovecs)", writev(1, iov, 0));
    struct iovec only_empty[] = {{NULL, 0}, {"", 0}};
    logw("writev(1, only empty)", writev(1, only_empty, 2));
    struct iovec many[64];
    for (int i = 0; i < 64; i++) many[i] = (struct iovec){&"0123456789abcdef"[i % 16], 1};
    logw("writev(1, 64 x 1 byte)", writev(1, many, 64));
    write(1, "\n", 1);

    /* stderr: sizes too */
    fill(70000, 'k');
    logw("write(2, 70000)", write(2, big, 70000));
    logw("writev(2, 3)", writev(2, (struct iovec[]){{"x", 1}, {NULL, 0}, {"y\n", 2}}, 3));

    /* stdio: full buffering, line buffering, unbuffered, and raw writes
     * between them (fflush decides the order) */
    static char fullbuf[100];
    setvbuf(stdout, fullbuf, _IOFBF, sizeof fullbuf);
    printf("full-buffered 1, ");
    write(1, "[raw A]\n", 8);
    printf("full-buffered 2\n");
    fflush(stdout);
    write(1, "[raw B]\n", 8);
    for (int i = 0; i < 30; i++) printf("%d,", i); /* crosses the 100-byte buffer */
    printf("\n");
    fflush(stdout);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("line-buffered: ");
    write(1, "[raw C]\n", 8);
    printf("done\n");
    write(1, "[raw D]\n", 8);
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("unbuffered ");
    write(1, "[raw E] ", 8);
    printf("end\n");
    fill(200000, 'Q');
    logw("fwrite(stdout, 200000)", (ssize_t)fwrite(big, 1, 200000, stdout));
    for (int i = 0; i < 5; i++) fputc('*', stdout);
    puts("");
    fprintf(stderr, "stderr: the end, no newline");
    return 0;
}
