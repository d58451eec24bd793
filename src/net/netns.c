/*
 * netns.c — a network namespace with loopback only and the egress listener
 * in it, for sandboxes whose runtime joins a namespace by path (gVisor:
 * `runsc --network=host` inside it, as the gVisor design suggests — the
 * outer namespace isolates, and gVisor's own netstack is not in the way).
 *
 * A namespace lives as long as something holds it, so a small holder
 * process (a clone of this one with CLONE_NEWNET) makes it, brings lo up,
 * creates the 127.0.0.1:3128 listener there, sends it to us, and then waits
 * for us to hang up. Its /proc/PID/ns/net is the path runsc joins.
 *
 * Invariants:
 *  - the holder is a clone of a possibly multi-threaded process (the proxy
 *    thread already runs): system calls only, no allocation, no stdio;
 *  - it is cloned with exit_signal 0 and a pidfd (as the gVisor reaper is):
 *    no SIGCHLD reaches the embedder and nobody else's waitpid reaps it, so
 *    its pid — which is in the path runsc opens — cannot be reused while we
 *    hold the pidfd;
 *  - it dies with us (PDEATHSIG) and when we hang up; egress_netns_close
 *    reaps it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sched.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"

int egress_loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, "lo", 3);
    int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    int saved = errno;
    close(s);
    errno = saved;
    return rc < 0 ? -1 : 0;
}

/* 'l' + the listener, or 'e' alone when it could not be made. */
static bool send_one_fd(int via, int fd) { return fdpass_send(via, fd >= 0 ? "l" : "e", 1, fd); }

static _Noreturn void holder_main(int sock) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prctl(PR_SET_NAME, "airlock-netns", 0, 0, 0);
    int listen_fd = -1;
    if (egress_loopback_up() == 0) listen_fd = egress_listen_inside(EGRESS_PROXY_PORT);
    if (!send_one_fd(sock, listen_fd)) _exit(1);
    if (listen_fd >= 0) close(listen_fd);
    char byte;
    while (read(sock, &byte, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
}

static pid_t clone_holder(int *pidfd) {
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_PIDFD | CLONE_NEWNET;
    ca.pidfd = (uint64_t)(uintptr_t)pidfd;
    ca.exit_signal = 0;
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0 && errno == ENOSYS)
        pid = syscall(SYS_clone, (unsigned long)(CLONE_PIDFD | CLONE_NEWNET), NULL, pidfd, NULL,
                      0);
    return (pid_t)pid;
}

static int receive_fd(int sock) {
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf};
    ssize_t n;
    do n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&mh) : NULL;
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int))) {
        errno = n == 1 ? EPROTO : (n == 0 ? ECHILD : errno);
        return -1;
    }
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static bool netns_error(al_error *err, const char *step) {
    return egress_error(err, AL_ERR_SYSTEM, "egress: network namespace: %s: %s", step,
                        strerror(errno));
}

bool egress_netns_open(egress_netns *ns, int *listen_fd, al_error *err) {
    memset(ns, 0, sizeof *ns);
    ns->pidfd = ns->hold_fd = -1;
    *listen_fd = -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return netns_error(err, "socketpair");
    pid_t pid = clone_holder(&ns->pidfd);
    if (pid == 0) {
        close(sv[0]);
        holder_main(sv[1]);
    }
    close(sv[1]);
    ns->hold_fd = sv[0];
    if (pid < 0) {
        ns->pidfd = -1;
        egress_netns_close(ns);
        return netns_error(err, "clone (CLONE_NEWNET needs root)");
    }
    ns->pid = pid;
    *listen_fd = receive_fd(ns->hold_fd);
    if (*listen_fd < 0) {
        egress_netns_close(ns);
        return netns_error(err, "listen on 127.0.0.1:3128 inside it");
    }
    snprintf(ns->path, sizeof ns->path, "/proc/%d/ns/net", (int)pid);
    return true;
}

void egress_netns_close(egress_netns *ns) {
    if (ns->hold_fd >= 0) close(ns->hold_fd); /* the holder's read returns 0: it exits */
    ns->hold_fd = -1;
    if (ns->pidfd >= 0) {
        siginfo_t info;
        /* P_PIDFD (3): this pid cannot have been reused, we hold its pidfd */
        while (waitid((idtype_t)3, (id_t)ns->pidfd, &info, WEXITED | __WALL) < 0 &&
               errno == EINTR) {
        }
        close(ns->pidfd);
    }
    ns->pidfd = -1;
    ns->pid = 0;
}
