/*
 * Case 1: read /etc/passwd with no directory granted.
 *
 * First line: the libc open(), as "DENIED <errno> ..." or "LEAK ...". Then
 * the same file asked of the host directly, through path_open on every fd
 * number a host might have left open (and a few absurd ones), by absolute,
 * relative and traversing paths. With no --dir there is no preopen, so every
 * one of these must fail. Exit 0 when all were denied, 1 on any leak.
 */
#include "common.h"

int main(void) {
    deny_open("/etc/passwd", O_RDONLY);
    FILE *f = fopen("/etc/passwd", "r");
    if (f) {
        char buf[64];
        size_t n = fread(buf, 1, sizeof buf, f);
        leak(buf, n, "fopen(\"/etc/passwd\")");
        fclose(f);
    } else {
        denied(errno, "fopen(\"/etc/passwd\")");
    }
    deny_open("etc/passwd", O_RDONLY);
    deny_open("../../../../../../etc/passwd", O_RDONLY);
    deny_open("/proc/self/environ", O_RDONLY);
    deny_open("/proc/self/cmdline", O_RDONLY);
    deny_stat("/etc/passwd");

    static const char *const paths[] = {
        "/etc/passwd", "etc/passwd", "../etc/passwd", "../../../../../../../../etc/passwd",
        "./../etc/passwd", "//etc/passwd", "/proc/self/environ", "/proc/self/mem", ".", "..", "/",
    };
    static const uint32_t fds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 31, 32, 63, 64,
                                   100, 255, 256, 1023, 1024, 4096, 65535, 0x7fffffffu,
                                   0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        for (size_t j = 0; j < sizeof paths / sizeof paths[0]; j++)
            deny_path_open(fds[i], __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, paths[j], 0, RIGHTS_READ);

    /* No preopen may exist at all. */
    for (__wasi_fd_t fd = 0; fd < 1100; fd++) {
        __wasi_prestat_t ps;
        __wasi_errno_t e = __wasi_fd_prestat_get(fd, &ps);
        if (e == 0)
            leak("", 0, "fd_prestat_get(%u): a preopen exists (name length %u)", fd,
                 (unsigned)ps.u.dir.pr_name_len);
    }
    return finish();
}
