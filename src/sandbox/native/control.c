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
#include "net.h"

bool native_send(int control_fd, const native_msg *msg, int fd) {
    return fdpass_send(control_fd, msg, sizeof *msg, fd);
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
