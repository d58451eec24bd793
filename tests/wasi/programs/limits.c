/* limits.c — sizes and counts: many descriptors at once, many iovecs,
 * offsets past 4 GiB, huge offsets and lengths, long paths and symlink
 * targets. */
// @exit: 0
// @known: KD-IOV-MAX stdout s/^\(fd_write(\(1025\|2048\) one-byte iovecs): errno 0, wrote\) [0-9]*$/\1 1024/
// @known: KD-IOV-MAX stdout s/^\(writev(IOV_MAX + 1) through libc (no check there)\): 1025$/\1: 1024/
// @known: KD-IOV-MAX stdout s/^fstat(iov\.txt): regular size=5122 nlink=1$/fstat(iov.txt): regular size=4096 nlink=1/
#include <limits.h>
#include <sys/uio.h>
#include <wasi/api.h>
#include "common.h"

int main(void) {
    /* 300 descriptors open at once */
    mkdir(SANDBOX "/fds", 0755);
    static int fds[300];
    int opened = 0, distinct = 1;
    for (int i = 0; i < 300; i++) {
        char p[64];
        snprintf(p, sizeof p, SANDBOX "/fds/f%03d", i);
        fds[i] = open(p, O_RDWR | O_CREAT, 0644);
        if (fds[i] >= 0) opened++;
        for (int j = 0; j < i && distinct; j++) distinct &= fds[j] != fds[i] || fds[i] < 0;
    }
    printf("300 files open at once: %d opened, all numbers distinct: %s\n", opened, distinct ? "yes" : "no");
    int writes_ok = 0;
    for (int i = 0; i < 300; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "file %d\n", i);
        writes_ok += write(fds[i], line, (size_t)n) == n;
    }
    printf("a write through each: %d ok\n", writes_ok);
    int closed = 0;
    for (int i = 0; i < 300; i++) closed += close(fds[i]) == 0;
    printf("closed: %d\n", closed);
    show_file("fds/f123", SANDBOX "/fds/f123");
    for (int i = 0; i < 300; i++) {
        char p[64];
        snprintf(p, sizeof p, SANDBOX "/fds/f%03d", i);
        unlink(p);
    }
    TRY("rmdir(fds)", rmdir(SANDBOX "/fds"));

    /* many iovecs, raw (wasi-libc's writev would refuse > IOV_MAX itself) */
    int fd = open(SANDBOX "/iov.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    static __wasi_ciovec_t civ[2048];
    static char letters[2048];
    for (int i = 0; i < 2048; i++) {
        letters[i] = (char)('a' + i % 26);
        civ[i] = (__wasi_ciovec_t){(const uint8_t *)&letters[i], 1};
    }
    size_t counts[] = {1024, 1025, 2048};
    for (size_t k = 0; k < 3; k++) {
        __wasi_size_t n = 0;
        __wasi_errno_t e = __wasi_fd_write(fd, civ, counts[k], &n);
        printf("fd_write(%zu one-byte iovecs): errno %d, wrote %lu\n", counts[k], e, (unsigned long)(e ? 0 : n));
    }
    errno = 0;
    TRY("writev(IOV_MAX + 1) through libc (no check there)", writev(fd, (struct iovec *)civ, IOV_MAX + 1));
    lseek(fd, 0, SEEK_SET);
    static __wasi_iovec_t iv[2048];
    static char in[2048];
    for (int i = 0; i < 2048; i++) iv[i] = (__wasi_iovec_t){(uint8_t *)&in[i], 1};
    __wasi_size_t got = 0;
    __wasi_errno_t e = __wasi_fd_read(fd, iv, 2048, &got);
    printf("fd_read(2048 one-byte iovecs): errno %d, read %lu, first %.5s, byte 2000 '%c'\n", e,
           (unsigned long)(e ? 0 : got), in, e || got <= 2000 ? '?' : in[2000]);
    FSTAT("fstat(iov.txt)", fd);
    close(fd);
    TRY("unlink(iov.txt)", unlink(SANDBOX "/iov.txt"));

    /* offsets past 4 GiB (sparse), then back to nothing */
    fd = open(SANDBOX "/sparse.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    const off_t big = 5000000000LL;
    TRY("pwrite(@ 5e9)", pwrite(fd, "far", 3, big));
    FSTAT("fstat(sparse.bin)", fd);
    TRY("lseek(0, SEEK_END)", lseek(fd, 0, SEEK_END));
    TRY("lseek(-3, SEEK_CUR)", lseek(fd, -3, SEEK_CUR));
    char buf[8] = {0};
    TRY("read(3)", read(fd, buf, 3));
    printf("  got \"%.3s\"\n", buf);
    TRY("pread(4 @ 4999999999)", pread(fd, buf, 4, big - 1));
    printf("  got %02x %.3s\n", (unsigned char)buf[0], buf + 1);
    TRY("lseek(INT64_MAX, SEEK_SET)", lseek(fd, INT64_MAX, SEEK_SET));
    TRY("lseek(1, SEEK_END) after that", lseek(fd, 1, SEEK_END));
    TRY("lseek(INT64_MAX, SEEK_CUR) (overflows)", lseek(fd, INT64_MAX, SEEK_CUR));
    TRY("pwrite(@ INT64_MAX - 1)", pwrite(fd, "xy", 2, INT64_MAX - 1));
    TRY("ftruncate(INT64_MAX)", ftruncate(fd, INT64_MAX));
    TRY("ftruncate(0)", ftruncate(fd, 0));
    FSTAT("fstat(sparse.bin) after ftruncate(0)", fd);
    close(fd);
    TRY("unlink(sparse.bin)", unlink(SANDBOX "/sparse.bin"));

    /* long paths: 3000 bytes below the preopen (node builds host paths
     * from the host directory's path plus the guest's, so near PATH_MAX it
     * fails earlier than the guest path says — KD-NODE-PATH-LENGTH;
     * airlock_only.c goes up to 4086 bytes) */
    TRY("chdir(/sandbox)", chdir(SANDBOX));
    int depth = 0, ok = 1;
    for (; depth < 333 && ok; depth++) ok = mkdir("dddddddd", 0755) == 0 && chdir("dddddddd") == 0;
    printf("nested dirs made: %d, all ok: %s\n", depth, ok ? "yes" : "no");
    put_file("deep.txt", "at the bottom\n");
    chdir("/");
    static char path[8192];
    strcpy(path, SANDBOX);
    for (int i = 0; i < depth; i++) strcat(path, "/dddddddd");
    printf("absolute path of the deepest dir: %zu bytes\n", strlen(path));
    STAT("stat(deepest)", path);
    strcat(path, "/deep.txt");
    show_file("deepest/deep.txt", path);
    while (strlen(path) < 4200) strcat(path, "/dddddddd");
    TRY("stat(path longer than PATH_MAX)", stat(path, &(struct stat){0}));
    /* a 300-byte component */
    char comp[400];
    memset(comp, 'c', 300);
    comp[300] = '\0';
    char cp[500];
    snprintf(cp, sizeof cp, SANDBOX "/%s", comp);
    TRY("mkdir(300-byte name)", mkdir(cp, 0755));
    /* a long symlink target (4000 bytes, dangling) */
    static char target[4200];
    memset(target, 't', 4000);
    target[4000] = '\0';
    TRY("symlink(4000-byte target, longlink)", symlink(target, SANDBOX "/longlink"));
    static char back[4200];
    ssize_t n = readlink(SANDBOX "/longlink", back, sizeof back);
    printf("readlink(longlink): %zd, same: %s\n", n, n == 4000 && !memcmp(back, target, 4000) ? "yes" : "no");
    TRY("unlink(longlink)", unlink(SANDBOX "/longlink"));
    return 0;
}
