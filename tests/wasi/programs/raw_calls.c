/* raw_calls.c — WASI calls made directly (not through wasi-libc), where the
 * libc would hide the host's answer or refuse the call itself: empty paths,
 * fd_prestat_* on odd descriptors, fdstat of stdio, proc_raise,
 * invalid clock ids, and guest pointers outside memory. Each call prints the
 * raw WASI errno (number and name). Most lines are where airlock and node
 * deliberately differ: see the @known lines and known-differences.md. */
// @exit: 0
// @known: KD-EMPTY-PATH stdout s/^\(path_[a-z_]*(3, "")\): 28 EINVAL$/\1: 44 ENOENT/
// @known: KD-PRESTAT-NOT-PREOPEN stdout s/^\(fd_prestat_get([0-9]*) (not a preopen)\): 28 EINVAL$/\1: 8 EBADF/
// @known: KD-PRESTAT-NAME-TRUNCATED stdout s/^fd_prestat_dir_name(3, 4-byte buffer): 42 ENOBUFS ""$/fd_prestat_dir_name(3, 4-byte buffer): 0 ESUCCESS "\/san"/
// @known: KD-READLINK-TRUNCATED stdout s/^path_readlink(link-to-hello, 4-byte buffer): 42 ENOBUFS, used 0 ""$/path_readlink(link-to-hello, 4-byte buffer): 0 ESUCCESS, used 4 "hell"/
// @known: KD-PROC-RAISE stdout s/^proc_raise(URG): 0 ESUCCESS$/proc_raise(URG): 52 ENOSYS/
// @known: KD-FDSTAT-FLAGS stdout s/^\(fd_fdstat_get([0-2]): 0 ESUCCESS, filetype SOCKET_STREAM, flags\) 0x[0-9a-f]*,/\1 0x0,/
// @known: KD-STDIO-RIGHTS stdout s/^\(fd_fdstat_get(0): .* rights_base\) 0x3820004a$/\1 0x820000a/
// @known: KD-STDIO-RIGHTS stdout s/^\(fd_fdstat_get([12]): .* rights_base\) 0x3820004a$/\1 0x8200048/
// @known: KD-BAD-POINTER stdout s/^\(bad pointer: .*\): 61 EOVERFLOW$/\1: 21 EFAULT/
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "common.h"

#define IMPORT(name) __attribute__((import_module("wasi_snapshot_preview1"), import_name(#name)))
/* Plain i32 "pointers", so any address can be handed to the host. */
IMPORT(path_open) int raw_path_open(int fd, int dirflags, uint32_t path, uint32_t len, int oflags,
                                    int64_t rights, int64_t inheriting, int fdflags, uint32_t out);
IMPORT(path_filestat_get) int raw_path_filestat_get(int fd, int flags, uint32_t path, uint32_t len, uint32_t out);
IMPORT(path_create_directory) int raw_path_create_directory(int fd, uint32_t path, uint32_t len);
IMPORT(path_unlink_file) int raw_path_unlink_file(int fd, uint32_t path, uint32_t len);
IMPORT(path_readlink) int raw_path_readlink(int fd, uint32_t path, uint32_t len, uint32_t buf, uint32_t buflen, uint32_t out);
IMPORT(fd_prestat_get) int raw_fd_prestat_get(int fd, uint32_t out);
IMPORT(fd_prestat_dir_name) int raw_fd_prestat_dir_name(int fd, uint32_t buf, uint32_t len);
IMPORT(fd_fdstat_get) int raw_fd_fdstat_get(int fd, uint32_t out);
IMPORT(fd_write) int raw_fd_write(int fd, uint32_t iovs, uint32_t n, uint32_t out);
IMPORT(fd_read) int raw_fd_read(int fd, uint32_t iovs, uint32_t n, uint32_t out);
IMPORT(clock_time_get) int raw_clock_time_get(int id, int64_t precision, uint32_t out);
IMPORT(clock_res_get) int raw_clock_res_get(int id, uint32_t out);
IMPORT(random_get) int raw_random_get(uint32_t buf, uint32_t len);
IMPORT(args_sizes_get) int raw_args_sizes_get(uint32_t argc, uint32_t size);
IMPORT(proc_raise) int raw_proc_raise(int sig);
IMPORT(path_symlink) int raw_path_symlink(uint32_t old, uint32_t oldlen, int fd, uint32_t path, uint32_t len);
IMPORT(fd_filestat_set_times) int raw_fd_filestat_set_times(int fd, int64_t atim, int64_t mtim, int flags);

#define P(x) ((uint32_t)(uintptr_t)(x))
#define WASI_URG 22

static const char *wname(int e) {
    static const char *names[] = {
        "ESUCCESS", "E2BIG", "EACCES", "EADDRINUSE", "EADDRNOTAVAIL", "EAFNOSUPPORT", "EAGAIN",
        "EALREADY", "EBADF", "EBADMSG", "EBUSY", "ECANCELED", "ECHILD", "ECONNABORTED",
        "ECONNREFUSED", "ECONNRESET", "EDEADLK", "EDESTADDRREQ", "EDOM", "EDQUOT", "EEXIST",
        "EFAULT", "EFBIG", "EHOSTUNREACH", "EIDRM", "EILSEQ", "EINPROGRESS", "EINTR", "EINVAL",
        "EIO", "EISCONN", "EISDIR", "ELOOP", "EMFILE", "EMLINK", "EMSGSIZE", "EMULTIHOP",
        "ENAMETOOLONG", "ENETDOWN", "ENETRESET", "ENETUNREACH", "ENFILE", "ENOBUFS", "ENODEV",
        "ENOENT", "ENOEXEC", "ENOLCK", "ENOLINK", "ENOMEM", "ENOMSG", "ENOPROTOOPT", "ENOSPC",
        "ENOSYS", "ENOTCONN", "ENOTDIR", "ENOTEMPTY", "ENOTRECOVERABLE", "ENOTSOCK", "ENOTSUP",
        "ENOTTY", "ENXIO", "EOVERFLOW", "EOWNERDEAD", "EPERM", "EPIPE", "EPROTO",
        "EPROTONOSUPPORT", "EPROTOTYPE", "ERANGE", "EROFS", "ESPIPE", "ESRCH", "ESTALE",
        "ETIMEDOUT", "ETXTBSY", "EXDEV", "ENOTCAPABLE",
    };
    return e >= 0 && e < (int)(sizeof names / sizeof *names) ? names[e] : "E???";
}

static void show(const char *what, int e) { printf("%s: %d %s\n", what, e, wname(e)); }

/* The preopen's fd: wasi-libc numbers preopens from 3 in --dir order. */
#define PRE 3

int main(void) {
    static uint8_t out[64];
    static char buf[64];
    static const char *types[] = {"UNKNOWN", "BLOCK_DEVICE", "CHARACTER_DEVICE", "DIRECTORY",
                                  "REGULAR_FILE", "SOCKET_DGRAM", "SOCKET_STREAM", "SYMBOLIC_LINK"};

    /* fd 3 is the preopen */
    memset(out, 0xaa, sizeof out);
    int e = raw_fd_prestat_get(PRE, P(out));
    printf("fd_prestat_get(3): %d %s, tag %u, name length %u\n", e, wname(e), out[0],
           (unsigned)(out[4] | out[5] << 8 | out[6] << 16 | out[7] << 24));
    memset(buf, 0, sizeof buf);
    e = raw_fd_prestat_dir_name(PRE, P(buf), 8);
    printf("fd_prestat_dir_name(3, 8-byte buffer): %d %s \"%.8s\"\n", e, wname(e), buf);
    memset(buf, 0, sizeof buf);
    e = raw_fd_prestat_dir_name(PRE, P(buf), 4);
    printf("fd_prestat_dir_name(3, 4-byte buffer): %d %s \"%.4s\"\n", e, wname(e), buf);
    show("fd_prestat_get(4) (not open)", raw_fd_prestat_get(4, P(out)));
    show("fd_prestat_get(0) (not a preopen)", raw_fd_prestat_get(0, P(out)));
    int fd = open(SANDBOX "/hello.txt", O_RDONLY);
    char what[64];
    snprintf(what, sizeof what, "fd_prestat_get(%d) (not a preopen)", fd);
    show(what, raw_fd_prestat_get(fd, P(out)));
    close(fd);

    /* empty paths */
    uint32_t newfd = 0;
    show("path_open(3, \"\")", raw_path_open(PRE, 0, P(""), 0, 0, 2 /* fd_read */, 0, 0, P(&newfd)));
    show("path_filestat_get(3, \"\")", raw_path_filestat_get(PRE, 1, P(""), 0, P(out)));
    show("path_create_directory(3, \"\")", raw_path_create_directory(PRE, P(""), 0));
    show("path_unlink_file(3, \"\")", raw_path_unlink_file(PRE, P(""), 0));

    /* readlink into a buffer too small for the target ("hello.txt") */
    uint32_t used = 99;
    memset(buf, 0, sizeof buf);
    e = raw_path_readlink(PRE, P("link-to-hello"), 13, P(buf), 4, P(&used));
    printf("path_readlink(link-to-hello, 4-byte buffer): %d %s, used %u \"%.*s\"\n", e, wname(e),
           e ? 0u : used, e ? 0 : (int)used, buf);
    used = 99;
    e = raw_path_readlink(PRE, P("link-to-hello"), 13, P(buf), 64, P(&used));
    printf("path_readlink(link-to-hello, 64-byte buffer): %d %s, used %u \"%.*s\"\n", e, wname(e),
           used, (int)used, buf);

    /* absolute symlink targets are refused by both */
    show("path_symlink(\"/etc/passwd\", abs-link)", raw_path_symlink(P("/etc/passwd"), 11, PRE, P("abs-link"), 8));

    /* stdio descriptors, as the guest sees them */
    for (int i = 0; i <= 2; i++) {
        memset(out, 0, sizeof out);
        e = raw_fd_fdstat_get(i, P(out));
        uint64_t rb, ri;
        memcpy(&rb, out + 8, 8);
        memcpy(&ri, out + 16, 8);
        printf("fd_fdstat_get(%d): %d %s, filetype %s, flags 0x%x, rights_base 0x%llx\n", i, e, wname(e),
               out[0] < 8 ? types[out[0]] : "?", out[2] | out[3] << 8, (unsigned long long)rb);
        (void)ri;
    }

    /* (sock_*: airlock_only.c; node 20 crashes on them, see
     * KD-SOCK-NOTSUP) */

    /* signals do not exist in airlock; node raises them in its own process
     * (SIGURG: ignored by default, so harmless there) */
    show("proc_raise(URG)", raw_proc_raise(WASI_URG));

    /* clocks */
    show("clock_time_get(99) (no such clock)", raw_clock_time_get(99, 0, P(out)));
    show("clock_res_get(99) (no such clock)", raw_clock_res_get(99, P(out)));
    show("clock_time_get(process cputime)", raw_clock_time_get(2, 0, P(out)));
    show("clock_res_get(thread cputime)", raw_clock_res_get(3, P(out)));

    /* only one of the two times */
    fd = open(SANDBOX "/hello.txt", O_RDWR);
    show("fd_filestat_set_times(atim only)", raw_fd_filestat_set_times(fd, 1100000000LL * 1000000000LL, 0, 1));
    show("fd_filestat_set_times(atim and atim_now)", raw_fd_filestat_set_times(fd, 1, 0, 1 | 2));
    close(fd);

    /* guest pointers outside linear memory */
    const uint32_t bad = 0xfffffff0u;
    uint32_t iov[2] = {P(buf), 4};
    uint32_t n = 0;
    show("bad pointer: fd_write(1, iovs)", raw_fd_write(1, bad, 1, P(&n)));
    uint32_t bad_iov[2] = {bad, 8};
    show("bad pointer: fd_write(1, iov buffer)", raw_fd_write(1, P(bad_iov), 1, P(&n)));
    show("bad pointer: fd_write(1, result)", raw_fd_write(1, P(iov), 0, bad));
    show("bad pointer: fd_read(0, iov buffer)", raw_fd_read(0, P(bad_iov), 1, P(&n)));
    show("bad pointer: clock_time_get result", raw_clock_time_get(1, 0, bad));
    show("bad pointer: random_get buffer", raw_random_get(bad, 64));
    show("bad pointer: args_sizes_get", raw_args_sizes_get(bad, P(&n)));
    show("bad pointer: path_open path", raw_path_open(PRE, 0, bad, 8, 0, 2 /* fd_read */, 0, 0, P(&newfd)));
    show("bad pointer: fd_prestat_get result", raw_fd_prestat_get(PRE, bad));
    return 0;
}
