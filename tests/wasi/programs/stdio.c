/* stdio.c — what the guest can learn about its stdio descriptors: isatty,
 * fstat/fdstat file types, access modes, seeking; and what happens after
 * closing one. airlock's stdio are pipes to the runtime, reported as
 * SOCKET_STREAM; node's are whatever node's own are, and compare-node.sh
 * gives it pipes (KD-STDIO-FILETYPE). */
// @stdin: stdin.txt
// @exit: 0
// @known: KD-STDIO-RIGHTS stdout s/^fcntl(0, F_GETFL): O_RDWR$/fcntl(0, F_GETFL): O_RDONLY/
// @known: KD-STDIO-RIGHTS stdout s/^fcntl(\([12]\), F_GETFL): O_RDWR$/fcntl(\1, F_GETFL): O_WRONLY/
#include "common.h"

int main(void) {
    char buf[64];
    for (int fd = 0; fd <= 2; fd++) {
        errno = 0;
        int t = isatty(fd);
        printf("isatty(%d): %d %s\n", fd, t, t ? "" : errname(errno));
    }
    errno = 0;
    printf("isatty(99): %d %s\n", isatty(99), errname(errno));
    for (int fd = 0; fd <= 2; fd++) {
        char label[32];
        snprintf(label, sizeof label, "fstat(%d)", fd);
        FSTAT(label, fd);
    }
    /* O_ACCMODE of the stdio descriptors (from their rights) */
    for (int fd = 0; fd <= 2; fd++) {
        int fl = fcntl(fd, F_GETFL);
        const char *mode = "?";
        if (fl >= 0) {
            switch (fl & O_ACCMODE) {
            case O_RDONLY: mode = "O_RDONLY"; break;
            case O_WRONLY: mode = "O_WRONLY"; break;
            case O_RDWR: mode = "O_RDWR"; break;
            }
        }
        printf("fcntl(%d, F_GETFL): %s\n", fd, fl < 0 ? errname(errno) : mode);
    }
    /* seeking a stream */
    TRY("lseek(0, 0, SEEK_CUR)", lseek(0, 0, SEEK_CUR));
    TRY("lseek(1, 0, SEEK_CUR)", lseek(1, 0, SEEK_CUR));
    TRY("lseek(2, 0, SEEK_CUR)", lseek(2, 0, SEEK_CUR));
    TRY("lseek(0, 5, SEEK_SET)", lseek(0, 5, SEEK_SET));
    {
        errno = 0;
        ssize_t n = pread(0, buf, 4, 0);
        if (n < 0) report("pread(0, 4 @ 0)", -1);
        else printf("pread(0, 4 @ 0): %zd \"%.*s\"\n", n, (int)n, buf);
    }
    {
        ssize_t n = read(0, buf, 6);
        printf("first read after the seek: \"");
        put_escaped(buf, n > 0 ? (size_t)n : 0);
        printf("\"\n");
    }
    TRY("write(0) (stdin)", write(0, "x", 1));
    TRY("read(1) (stdout)", read(1, buf, 1));
    TRY("read(2) (stderr)", read(2, buf, 1));

    /* closing stdin: reads fail afterwards, the number is free */
    TRY("close(0)", close(0));
    TRY("read(0) after close", read(0, buf, 1));
    TRY("close(0) again", close(0));
    /* stderr still works after closing... stderr itself is not closed: the
     * comparison wants its bytes */
    fprintf(stderr, "stderr line before closing stdout\n");
    fflush(stdout);
    printf("last stdout line before close(1)\n");
    fflush(stdout);
    TRY("close(1)", close(1));
    errno = 0;
    ssize_t w = write(1, "lost\n", 5);
    fprintf(stderr, "write(1) after close(1): %zd %s\n", w, errname(w < 0 ? errno : 0));
    fprintf(stderr, "stderr still works\n");
    return 0;
}
