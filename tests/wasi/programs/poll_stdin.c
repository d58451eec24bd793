/* poll_stdin.c — poll_oneoff with fd_read/fd_write subscriptions, through
 * select() and poll(): stdin (a file given with --stdin) is readable,
 * stdout/stderr are writable, a clock timeout alongside, and what is left
 * after stdin is drained. */
// @stdin: stdin.txt
// @exit: 0
// @known: KD-NODE-POLL stdout s/^select(stdin readable, timeout 0): 0, stdin set: 0$/select(stdin readable, timeout 0): 1, stdin set: 1/
// @known: KD-NODE-POLL stdout s/^poll(regular file, IN|OUT): -1 EPERM, IN:0 OUT:0$/poll(regular file, IN|OUT): 1 , IN:1 OUT:1/
// @known: KD-NODE-POLL stdout s/^poll(fd 42, not open): 0  revents POLLNVAL:0$/poll(fd 42, not open): 1  revents POLLNVAL:1/
// @known: KD-NODE-POLL stdout s/^select(fd 42, not open): 0 $/select(fd 42, not open): -1 EBADF/
#include <poll.h>
#include <sys/select.h>
#include "common.h"

int main(void) {
    fd_set r, w;
    struct timeval tv;

    FD_ZERO(&r);
    FD_SET(0, &r);
    tv = (struct timeval){1, 0};
    /* first with a timeout, then without: once readable, stdin stays so */
    int n = select(1, &r, NULL, NULL, &tv);
    printf("select(stdin readable, timeout 1 s): %d, stdin set: %d\n", n, FD_ISSET(0, &r) ? 1 : 0);

    FD_ZERO(&r);
    FD_SET(0, &r);
    tv = (struct timeval){0, 0};
    n = select(1, &r, NULL, NULL, &tv);
    printf("select(stdin readable, timeout 0): %d, stdin set: %d\n", n, FD_ISSET(0, &r) ? 1 : 0);

    FD_ZERO(&w);
    FD_SET(1, &w);
    FD_SET(2, &w);
    tv = (struct timeval){1, 0};
    n = select(3, NULL, &w, NULL, &tv);
    printf("select(stdout+stderr writable): %d, set: %d %d\n", n, FD_ISSET(1, &w) ? 1 : 0, FD_ISSET(2, &w) ? 1 : 0);

    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(0, &r);
    FD_SET(1, &w);
    n = select(2, &r, &w, NULL, NULL);
    printf("select(stdin r + stdout w, no timeout): %d, set: %d %d\n", n, FD_ISSET(0, &r) ? 1 : 0, FD_ISSET(1, &w) ? 1 : 0);

    struct pollfd p[3] = {{0, POLLIN, 0}, {1, POLLOUT, 0}, {2, POLLOUT, 0}};
    n = poll(p, 3, 1000);
    printf("poll(0 IN, 1 OUT, 2 OUT): %d, revents IN:%d OUT:%d OUT:%d\n", n, !!(p[0].revents & POLLIN),
           !!(p[1].revents & POLLOUT), !!(p[2].revents & POLLOUT));

    /* drain stdin, then poll again: a file at EOF is still "readable"
     * (a read returns 0 at once) */
    char buf[4096];
    size_t total = 0;
    ssize_t got;
    while ((got = read(0, buf, sizeof buf)) > 0) total += (size_t)got;
    printf("drained %zu bytes\n", total);
    struct pollfd q = {0, POLLIN, 0};
    n = poll(&q, 1, 1000);
    printf("poll(stdin at EOF): %d, POLLIN: %d\n", n, !!(q.revents & POLLIN));

    /* a regular file in the sandbox */
    int fd = open(SANDBOX "/hello.txt", O_RDWR);
    struct pollfd f = {fd, POLLIN | POLLOUT, 0};
    errno = 0;
    n = poll(&f, 1, 1000);
    printf("poll(regular file, IN|OUT): %d %s, IN:%d OUT:%d\n", n, n < 0 ? errname(errno) : "", !!(f.revents & POLLIN), !!(f.revents & POLLOUT));
    close(fd);

    /* a closed descriptor */
    struct pollfd bad = {42, POLLIN, 0};
    errno = 0;
    n = poll(&bad, 1, 0);
    printf("poll(fd 42, not open): %d %s revents POLLNVAL:%d\n", n, n < 0 ? errname(errno) : "",
           !!(bad.revents & POLLNVAL));
    FD_ZERO(&r);
    FD_SET(42, &r);
    tv = (struct timeval){0, 0};
    errno = 0;
    n = select(43, &r, NULL, NULL, &tv);
    printf("select(fd 42, not open): %d %s\n", n, n < 0 ? errname(errno) : "");
    return 0;
}
