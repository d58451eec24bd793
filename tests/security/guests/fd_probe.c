/*
 * Case 16: no host file descriptor is visible. With no --dir the guest's fd
 * table must hold exactly 0, 1 and 2: the host's own descriptors (the module
 * file, a log, the terminal, inherited pipes) must not be reachable through
 * any fd number, whatever call is used. The harness runs airlock with extra
 * host fds open (3..9 on a host file holding "HOST-FD-SECRET").
 */
#include "common.h"

int main(void) {
    int valid = 0;
    for (uint32_t fd = 0; fd < 4200; fd++) {
        __wasi_fdstat_t st;
        __wasi_errno_t e = __wasi_fd_fdstat_get(fd, &st);
        if (e == 0 && fd <= 2) {
            valid++;
            continue;
        }
        if (e == 0) {
            leak("", 0, "fd_fdstat_get(%u) found an open fd (filetype %u)", fd, st.fs_filetype);
            continue;
        }
        /* Other calls on the same number: none may succeed either. */
        uint8_t buf[64];
        __wasi_iovec_t iov = {buf, sizeof buf};
        __wasi_size_t n = 0;
        if (__wasi_fd_read(fd, &iov, 1, &n) == 0)
            leak(buf, n, "fd_read(%u)", fd);
        if (__wasi_fd_pread(fd, &iov, 1, 0, &n) == 0)
            leak(buf, n, "fd_pread(%u)", fd);
        __wasi_filestat_t fst;
        if (__wasi_fd_filestat_get(fd, &fst) == 0)
            leak("", 0, "fd_filestat_get(%u): size %llu", fd, (unsigned long long)fst.size);
        if (fd < 16 || fd == 4199)
            denied(e, "fd_fdstat_get(%u)", fd);
    }
    if (valid != 3)
        wrong("expected fds 0, 1, 2 to be open, found %d of them", valid);
    /* stdio must be what the policy says, not the host's: reading stdin gives
     * nothing (empty unless --stdin), and stdio is not seekable into the
     * host's files. */
    uint8_t buf[64];
    __wasi_iovec_t iov = {buf, sizeof buf};
    __wasi_size_t n = 0;
    __wasi_errno_t e = __wasi_fd_read(0, &iov, 1, &n);
    if (e == 0 && n > 0)
        leak(buf, n, "fd_read(0) without --stdin");
    else
        info("fd_read(0): errno %d, %u bytes", e, (unsigned)n);
    /* Renumbering stdio away and back must not expose a host fd. */
    e = __wasi_fd_renumber(2, 7);
    info("fd_renumber(2, 7): errno %d", e);
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(7, &st) == 0 && e != 0)
        leak("", 0, "fd 7 is open after a failed renumber");
    return finish();
}
