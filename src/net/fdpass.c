/*
 * fdpass.c — small shared pieces of the egress layer: sending a file
 * descriptor over a Unix socket (the sandbox's listener to its parent, each
 * guest connection from the relay to the proxy) and filling an al_error.
 *
 * Invariants:
 *  - fdpass_send is async-signal-safe (the native init and the namespace
 *    holder call it after clone from a multi-threaded process): the caller's
 *    stack only, one sendmsg, MSG_NOSIGNAL so a vanished reader is an error
 *    and never a SIGPIPE.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "net.h"

bool fdpass_send(int via, const void *data, size_t len, int fd) {
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        mh.msg_control = control.buf;
        mh.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    for (;;) {
        ssize_t n = sendmsg(via, &mh, MSG_NOSIGNAL);
        if (n >= 0 && (size_t)n == len) return true;
        if (n < 0 && errno == EINTR) continue;
        return false;
    }
}

bool egress_error(al_error *err, al_error_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    al_error_vset(err, kind, fmt, ap);
    va_end(ap);
    return false;
}
