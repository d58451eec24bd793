/*
 * control.c — the child -> parent half of the native backend's control
 * protocol (native.h, "the control protocol"): fixed-size native_msg records
 * on a SOCK_SEQPACKET socket, optionally carrying one fd (SCM_RIGHTS).
 *
 * Invariants:
 *  - both functions run in the sandbox's init or in the program's process
 *    before execve, i.e. after clone from a possibly multi-threaded parent:
 *    they are async-signal-safe (no malloc, no stdio, no locks) and use only
 *    the caller's stack;
 *  - one message is one sendmsg of exactly sizeof(native_msg) bytes, so the
 *    parent can reject anything of another size (SEQPACKET keeps records);
 *  - sends use MSG_NOSIGNAL: a parent that went away must not turn into a
 *    SIGPIPE in the sandbox's init.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "native.h"

bool native_send(int control_fd, const native_msg *msg, int fd) {
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = sizeof *msg};
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
        ssize_t n = sendmsg(control_fd, &mh, MSG_NOSIGNAL);
        if (n == (ssize_t)sizeof *msg) return true;
        if (n < 0 && errno == EINTR) continue;
        return false;
    }
}

_Noreturn void native_child_fail(int control_fd, const char *step) {
    native_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = NATIVE_MSG_ERROR;
    msg.err = errno;
    if (!step) step = "setup";
    size_t n = strlen(step);
    if (n >= sizeof msg.step) n = sizeof msg.step - 1;
    memcpy(msg.step, step, n);
    native_send(control_fd, &msg, -1);
    _exit(127);
}
