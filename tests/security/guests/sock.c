/*
 * Case 6: sockets, with the standard wasi_snapshot_preview1 calls.
 *
 * wasi-libc has no socket()/connect() (WASI preview1 cannot create sockets),
 * so the only ways in are sock_accept/recv/send/shutdown on an fd the host
 * handed over. No fd is a socket in airlock: every call on every fd number
 * must fail, and nothing may reach the listener the test runs on loopback.
 */
#include <sys/socket.h>

#include "common.h"

int main(void) {
    static const uint32_t fds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16, 32, 63, 64, 100, 1023,
                                   1024, 65535, 0x7fffffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        __wasi_fd_t fd = fds[i], nfd = 0;
        char what[64];
        snprintf(what, sizeof what, "sock_accept(%u)", fd);
        __wasi_errno_t e = __wasi_sock_accept(fd, 0, &nfd);
        if (e)
            denied(e, "%s", what);
        else if (fd <= 2)
            wrong("%s returned connection fd %u (stdio is not a socket)", what, nfd);
        else
            leak("", 0, "%s returned connection fd %u", what, nfd);

        uint8_t buf[64];
        __wasi_iovec_t riov = {buf, sizeof buf};
        __wasi_size_t n = 0;
        __wasi_roflags_t rf = 0;
        snprintf(what, sizeof what, "sock_recv(%u)", fd);
        e = __wasi_sock_recv(fd, &riov, 1, 0, &n, &rf);
        if (e)
            denied(e, "%s", what);
        else if (fd <= 2)
            wrong("%s on stdio succeeded (%u bytes): stdio is not a socket", what, (unsigned)n);
        else
            leak(buf, n, "%s received %u bytes", what, (unsigned)n);

        static const char req[] = "GET /airlock-leak HTTP/1.0\r\n\r\n";
        __wasi_ciovec_t siov = {(const uint8_t *)req, sizeof req - 1};
        snprintf(what, sizeof what, "sock_send(%u)", fd);
        e = __wasi_sock_send(fd, &siov, 1, 0, &n);
        if (e)
            denied(e, "%s", what);
        else if (fd <= 2)
            wrong("%s on stdio succeeded: stdio is not a socket", what);
        else
            leak("", 0, "%s sent %u bytes", what, (unsigned)n);

        /* On stdio these would be harmless, but they must still fail (stdio
         * is not a socket): WRONG there, LEAK on any other fd. */
        snprintf(what, sizeof what, "sock_shutdown(%u)", fd);
        e = __wasi_sock_shutdown(fd, __WASI_SDFLAGS_RD | __WASI_SDFLAGS_WR);
        if (e)
            denied(e, "%s", what);
        else if (fd <= 2)
            wrong("%s on stdio succeeded", what);
        else
            leak("", 0, "%s succeeded", what);
    }
    /* libc's view: recv/send/shutdown on stdio. */
    char b[8];
    if (recv(0, b, sizeof b, 0) < 0)
        denied(errno, "recv(0)");
    else
        wrong("recv(0) on stdin succeeded");
    if (send(1, "x", 1, 0) < 0)
        denied(errno, "send(1)");
    else
        wrong("send(1) on stdout succeeded");
    return finish();
}
