/*
 * common.h — shared by the security-battery guests (tests/security/guests/).
 *
 * Every guest is an attack that the sandbox must refuse. Guests report each
 * attempt on its own stdout line, so the harness (tests/security/run.sh) can
 * show exactly what leaked:
 *
 *   DENIED <errno> <what>: <strerror>   the attempt failed, as it must
 *   LEAK <what>: <first bytes>          the attempt succeeded: a sandbox escape
 *   WRONG <what>                        not an escape, but the sandbox did not
 *                                       behave as specified (or the test's own
 *                                       precondition failed, making it vacuous)
 *   INFO <what>                         informational, never judged
 *   DONE denied=N leaks=N wrong=N       last line, printed by finish()
 *
 * finish() returns the exit status: 0 when nothing leaked and nothing was
 * wrong, 1 on any leak, 2 on a WRONG without a leak.
 *
 * libc-level attacks (open("/etc/passwd")) are mostly refused by wasi-libc
 * itself, before the host sees them (no preopen matches the path), so every
 * guest also issues the raw WASI calls (__wasi_path_open on any fd number)
 * which do reach the host. raw_* below are the same imports declared with
 * plain i32 "pointers", so a guest can hand the host any address/length.
 */
#ifndef SEC_COMMON_H
#define SEC_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

#pragma clang diagnostic ignored "-Wunused-function"

static int n_denied, n_leak, n_wrong;

static void put_escaped(const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
            putchar(s[i]);
        else
            printf("\\x%02x", s[i]);
    }
}

static void vline(const char *tag, const char *fmt, va_list ap) {
    fputs(tag, stdout);
    vprintf(fmt, ap);
}

__attribute__((format(printf, 2, 3))) static void denied(int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("DENIED %d ", err);
    vprintf(fmt, ap);
    va_end(ap);
    printf(": %s\n", strerror(err));
    n_denied++;
}

__attribute__((format(printf, 3, 4))) static void leak(const void *bytes, size_t n,
                                                       const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline("LEAK ", fmt, ap);
    va_end(ap);
    fputs(": ", stdout);
    put_escaped(bytes, n > 64 ? 64 : n);
    putchar('\n');
    n_leak++;
}

__attribute__((format(printf, 1, 2))) static void wrong(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline("WRONG ", fmt, ap);
    va_end(ap);
    putchar('\n');
    n_wrong++;
}

__attribute__((format(printf, 1, 2))) static void info(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline("INFO ", fmt, ap);
    va_end(ap);
    putchar('\n');
}

static int finish(void) {
    printf("DONE denied=%d leaks=%d wrong=%d\n", n_denied, n_leak, n_wrong);
    fflush(stdout);
    return n_leak ? 1 : n_wrong ? 2 : 0;
}

/* ---- raw imports: any i32 as a pointer -------------------------------- */

#define WASI_IMPORT(name) \
    __attribute__((import_module("wasi_snapshot_preview1"), import_name(#name)))

int32_t raw_path_open(int32_t fd, int32_t dirflags, int32_t path, int32_t path_len,
                      int32_t oflags, int64_t rights_base, int64_t rights_inheriting,
                      int32_t fdflags, int32_t retfd) WASI_IMPORT(path_open);

/* ---- helpers -------------------------------------------------------------- */

#define RIGHTS_READ (__WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_READDIR | __WASI_RIGHTS_FD_SEEK | \
                     __WASI_RIGHTS_FD_FILESTAT_GET | __WASI_RIGHTS_PATH_OPEN)
#define RIGHTS_ALL ((__wasi_rights_t)0x1fffffff)

/* Print the directory entries behind an open fd as the content of a leak. */
static size_t readdir_names(__wasi_fd_t fd, char *out, size_t cap) {
    static uint8_t buf[4096];
    __wasi_size_t used = 0;
    size_t len = 0;
    out[0] = '\0';
    if (__wasi_fd_readdir(fd, buf, sizeof buf, 0, &used) != 0)
        return 0;
    for (size_t off = 0; off + sizeof(__wasi_dirent_t) <= used;) {
        __wasi_dirent_t d;
        memcpy(&d, buf + off, sizeof d);
        off += sizeof d;
        size_t n = d.d_namlen;
        if (off + n > used)
            n = used - off;
        if (len + n + 2 < cap) {
            memcpy(out + len, buf + off, n);
            len += n;
            out[len++] = ' ';
            out[len] = '\0';
        }
        off += d.d_namlen;
    }
    return len;
}

/* Whatever an fd that should never have been opened gives away. */
static void leak_fd(__wasi_fd_t fd, const char *what) {
    uint8_t buf[64];
    __wasi_iovec_t iov = {buf, sizeof buf};
    __wasi_size_t n = 0;
    __wasi_errno_t e = __wasi_fd_read(fd, &iov, 1, &n);
    if (e == 0) {
        leak(buf, n, "%s (read %u bytes)", what, (unsigned)n);
        return;
    }
    char names[512];
    size_t len = readdir_names(fd, names, sizeof names);
    if (len > 0) {
        leak(names, len, "%s (directory listing)", what);
        return;
    }
    leak("", 0, "%s (opened; fd %u, read errno %d)", what, fd, e);
}

/* Raw path_open that must fail; success is a leak. */
static void deny_path_open(__wasi_fd_t dirfd, __wasi_lookupflags_t lookup, const char *path,
                           __wasi_oflags_t oflags, __wasi_rights_t rights) {
    __wasi_fd_t fd = 0;
    __wasi_errno_t e = __wasi_path_open(dirfd, lookup, path, oflags, rights, rights, 0, &fd);
    if (e != 0) {
        denied(e, "path_open(fd %u, \"%s\", oflags %#x)", dirfd, path, oflags);
        return;
    }
    char what[300];
    snprintf(what, sizeof what, "path_open(fd %u, \"%s\", oflags %#x)", dirfd, path, oflags);
    leak_fd(fd, what);
    (void)__wasi_fd_close(fd);
}

/* libc open() that must fail; success is a leak. */
static void deny_open(const char *path, int flags) {
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        denied(errno, "open(\"%s\", %#x)", path, flags);
        return;
    }
    char what[300];
    snprintf(what, sizeof what, "open(\"%s\", %#x)", path, flags);
    leak_fd((__wasi_fd_t)fd, what);
    close(fd);
}

/* libc opendir() that must fail; success is a leak. */
static void deny_opendir(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        denied(errno, "opendir(\"%s\")", path);
        return;
    }
    char names[512];
    size_t len = 0;
    names[0] = '\0';
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL && len < 400) {
        len += (size_t)snprintf(names + len, sizeof names - len, "%s ", ent->d_name);
    }
    leak(names, len, "opendir(\"%s\")", path);
    closedir(d);
}

/* libc stat() that must fail; success is a leak (existence + metadata). */
static void deny_stat(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        denied(errno, "stat(\"%s\")", path);
        return;
    }
    char what[300];
    snprintf(what, sizeof what, "stat(\"%s\") size=%lld mode=%o", path, (long long)st.st_size,
             (unsigned)st.st_mode);
    leak("", 0, "%s", what);
}

/* A mutation (libc return value, -1 = failure) that must fail. */
static void deny_rc(int rc, const char *what) {
    if (rc < 0)
        denied(errno, "%s", what);
    else
        leak("", 0, "%s succeeded (rc %d)", what, rc);
}

/* A raw WASI call result that must be an error. */
static void deny_errno(__wasi_errno_t e, const char *what) {
    if (e != 0)
        denied(e, "%s", what);
    else
        leak("", 0, "%s succeeded", what);
}

/* The rights a directory fd passes on to what is opened beneath it: asking
 * for exactly those gets past the host's rights check, so an attack is judged
 * on its path, not refused for asking too much. */
static __wasi_rights_t rights_of(__wasi_fd_t fd) {
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(fd, &st) != 0)
        return RIGHTS_READ;
    return st.fs_rights_inheriting;
}

/* The rights of a directory fd itself: what to ask for when opening another
 * directory beneath it. */
static __wasi_rights_t dir_rights_of(__wasi_fd_t fd) {
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(fd, &st) != 0)
        return RIGHTS_READ;
    return st.fs_rights_base;
}

/* The fd of the preopen named guest_path, or -1. */
static int find_preopen(const char *guest_path) {
    for (__wasi_fd_t fd = 3; fd < 64; fd++) {
        __wasi_prestat_t ps;
        if (__wasi_fd_prestat_get(fd, &ps) != 0)
            continue;
        if (ps.tag != __WASI_PREOPENTYPE_DIR || ps.u.dir.pr_name_len >= 256)
            continue;
        char name[256];
        if (__wasi_fd_prestat_dir_name(fd, (uint8_t *)name, ps.u.dir.pr_name_len) != 0)
            continue;
        name[ps.u.dir.pr_name_len] = '\0';
        if (!strcmp(name, guest_path))
            return (int)fd;
    }
    return -1;
}

/* Read a whole small file through libc; returns bytes read or -1 (errno). */
static long slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long n = (long)read(fd, buf, cap - 1);
    int saved = errno;
    close(fd);
    errno = saved;
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

#endif
