/*
 * Case 2: list /etc (and /, ., ..) with no directory granted: opendir() and
 * the raw equivalents (path_open with O_DIRECTORY on any fd number, then
 * fd_readdir on every fd number directly). All must fail.
 */
#include "common.h"

int main(void) {
    deny_opendir("/etc");
    deny_opendir("/");
    deny_opendir(".");
    deny_opendir("..");
    deny_opendir("/proc/self/fd");
    deny_opendir("/tmp");

    static const char *const paths[] = {"/etc", "etc", ".", "..", "/", "../../../../etc", ""};
    for (__wasi_fd_t fd = 0; fd < 40; fd++)
        for (size_t j = 0; j < sizeof paths / sizeof paths[0]; j++)
            deny_path_open(fd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, paths[j],
                           __WASI_OFLAGS_DIRECTORY, RIGHTS_READ);

    /* fd_readdir straight on fd numbers: stdio must not be a directory and no
     * other fd may exist. */
    static uint8_t buf[4096];
    for (__wasi_fd_t fd = 0; fd < 1100; fd++) {
        __wasi_size_t used = 0;
        __wasi_errno_t e = __wasi_fd_readdir(fd, buf, sizeof buf, 0, &used);
        if (e == 0) {
            char what[64];
            snprintf(what, sizeof what, "fd_readdir(%u)", fd);
            leak(buf, used, "%s returned %u bytes", what, (unsigned)used);
        } else if (fd < 4 || fd == 1099) {
            denied(e, "fd_readdir(%u)", fd);
        }
    }
    return finish();
}
