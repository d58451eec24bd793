/*
 * Case 19: open the same granted file over and over without closing it.
 * The host must cap the guest's fd table (or pass on the host's EMFILE)
 * without harm to itself: the guest sees an error after N opens, can close
 * them all, and then open files again. argv[1]: the limit of attempts.
 */
#include "common.h"

int main(int argc, char **argv) {
    long limit = argc > 1 ? atol(argv[1]) : 200000;
    int pfd = find_preopen("/work");
    if (pfd < 0) {
        wrong("sanity: no preopen named /work");
        return finish();
    }
    static __wasi_fd_t fds[200000];
    long n = 0;
    __wasi_errno_t e = 0;
    for (; n < limit && n < 200000; n++) {
        e = __wasi_path_open((__wasi_fd_t)pfd, 0, "f.txt", 0, __WASI_RIGHTS_FD_READ, 0, 0, &fds[n]);
        if (e != 0)
            break;
    }
    if (e != 0)
        denied(e, "path_open number %ld", n + 1);
    else
        info("all %ld opens succeeded", n);
    /* stdio still works while the table is full */
    printf("opened %ld fds\n", n);
    fflush(stdout);
    for (long i = 0; i < n; i++)
        if (__wasi_fd_close(fds[i]) != 0) {
            wrong("fd_close(%u) failed", fds[i]);
            break;
        }
    char buf[64];
    if (slurp("/work/f.txt", buf, sizeof buf) < 0 || strcmp(buf, "F") != 0)
        wrong("cannot open /work/f.txt again after closing everything (errno %d)", errno);
    return finish();
}
