/*
 * common.h — shared by the differential WASI programs (tests/wasi/programs).
 *
 * Every program prints only deterministic lines: results, errno NAMES (with
 * the libc's strerror text, the same bytes in both runtimes since it comes
 * from the guest's own libc), sizes, and booleans for anything that depends
 * on time or randomness. Never inode numbers, times (unless the program set
 * them), addresses or fd numbers the host picked.
 *
 * The preopened read-write directory is /sandbox; its initial contents are
 * made by tests/wasi/compare-node.sh (make_fixture):
 *   hello.txt ("hello, sandbox\n"), data.bin (bytes 0..255), sub/nested.txt,
 *   sub/deeper/leaf.txt, empty/, link-to-hello -> hello.txt,
 *   link-to-sub -> sub, dangling -> missing.txt, escape -> ../outside
 *   (a directory beside the preopen, holding secret.txt).
 */
#ifndef WASI_COMPARE_COMMON_H
#define WASI_COMPARE_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma clang diagnostic ignored "-Wunused-function"

#define SANDBOX "/sandbox"

static const char *errname(int e) {
    switch (e) {
#define E(x) case x: return #x;
    E(E2BIG) E(EACCES) E(EADDRINUSE) E(EADDRNOTAVAIL) E(EAFNOSUPPORT) E(EAGAIN) E(EALREADY)
    E(EBADF) E(EBADMSG) E(EBUSY) E(ECANCELED) E(ECHILD) E(ECONNABORTED) E(ECONNREFUSED)
    E(ECONNRESET) E(EDEADLK) E(EDESTADDRREQ) E(EDOM) E(EDQUOT) E(EEXIST) E(EFAULT) E(EFBIG)
    E(EHOSTUNREACH) E(EIDRM) E(EILSEQ) E(EINPROGRESS) E(EINTR) E(EINVAL) E(EIO) E(EISCONN)
    E(EISDIR) E(ELOOP) E(EMFILE) E(EMLINK) E(EMSGSIZE) E(EMULTIHOP) E(ENAMETOOLONG)
    E(ENETDOWN) E(ENETRESET) E(ENETUNREACH) E(ENFILE) E(ENOBUFS) E(ENODEV) E(ENOENT)
    E(ENOEXEC) E(ENOLCK) E(ENOLINK) E(ENOMEM) E(ENOMSG) E(ENOPROTOOPT) E(ENOSPC) E(ENOSYS)
    E(ENOTCONN) E(ENOTDIR) E(ENOTEMPTY) E(ENOTRECOVERABLE) E(ENOTSOCK) E(ENOTSUP) E(ENOTTY)
    E(ENXIO) E(EOVERFLOW) E(EOWNERDEAD) E(EPERM) E(EPIPE) E(EPROTO) E(EPROTONOSUPPORT)
    E(EPROTOTYPE) E(ERANGE) E(EROFS) E(ESPIPE) E(ESRCH) E(ESTALE) E(ETIMEDOUT) E(ETXTBSY)
    E(EXDEV) E(ENOTCAPABLE)
#undef E
    case 0: return "0";
    default: return "E???";
    }
}

/* "LABEL: RESULT" for a call returning >= 0 on success, or
 * "LABEL: -1 ENAME (strerror)" on failure. Returns the call's result. */
static long report(const char *label, long r) {
    int e = errno;
    if (r < 0)
        printf("%s: -1 %s (%s)\n", label, errname(e), strerror(e));
    else
        printf("%s: %ld\n", label, r);
    errno = e;
    return r;
}
#define TRY(label, expr) (errno = 0, report((label), (long)(expr)))

/* For calls returning a pointer (NULL on failure). */
static void *report_ptr(const char *label, void *p) {
    int e = errno;
    if (!p)
        printf("%s: NULL %s (%s)\n", label, errname(e), strerror(e));
    else
        printf("%s: ok\n", label);
    errno = e;
    return p;
}
#define TRYP(label, expr) (errno = 0, report_ptr((label), (void *)(expr)))

static void put_escaped(const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
            putchar(s[i]);
        else
            printf("\\x%02x", s[i]);
    }
}

static const char *type_name(mode_t m) {
    if (S_ISREG(m)) return "regular";
    if (S_ISDIR(m)) return "directory";
    if (S_ISLNK(m)) return "symlink";
    if (S_ISCHR(m)) return "chardev";
    if (S_ISBLK(m)) return "blockdev";
    if (S_ISFIFO(m)) return "fifo";
    if (S_ISSOCK(m)) return "socket";
    return "unknown";
}

/* "LABEL: TYPE size=N" from stat/lstat/fstat (size only for regular files
 * and symlinks: a directory's size is the host file system's business). */
static void show_stat(const char *label, int r, const struct stat *st) {
    int e = errno;
    if (r != 0) {
        printf("%s: -1 %s (%s)\n", label, errname(e), strerror(e));
        return;
    }
    printf("%s: %s", label, type_name(st->st_mode));
    if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) printf(" size=%lld", (long long)st->st_size);
    if (S_ISREG(st->st_mode)) printf(" nlink=%llu", (unsigned long long)st->st_nlink);
    putchar('\n');
}
#define STAT(label, path) do { struct stat st_; errno = 0; int r_ = stat((path), &st_); show_stat((label), r_, &st_); } while (0)
#define LSTAT(label, path) do { struct stat st_; errno = 0; int r_ = lstat((path), &st_); show_stat((label), r_, &st_); } while (0)
#define FSTAT(label, fd) do { struct stat st_; errno = 0; int r_ = fstat((fd), &st_); show_stat((label), r_, &st_); } while (0)

/* Print a whole file ("LABEL: <escaped bytes>") or its open error. */
static void show_file(const char *label, const char *path) {
    errno = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        report(label, -1);
        return;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        report(label, -1);
        return;
    }
    printf("%s: \"", label);
    put_escaped(buf, (size_t)n);
    printf("\"\n");
}

/* Create PATH with TEXT (truncating); reports only failures. */
static int put_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        int e = errno;
        printf("put_file %s: -1 %s\n", path, errname(e));
        return -1;
    }
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    if (w != (ssize_t)len) printf("put_file %s: short write %zd\n", path, w);
    close(fd);
    return 0;
}

#endif
