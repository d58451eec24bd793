/*
 * relay.c — the sandbox's end of the egress path. Inside the sandbox's
 * network namespace (loopback only) a TCP listener on 127.0.0.1:3128 is the
 * one thing a guest can connect to; the relay accepts there and hands each
 * connection to the proxy's Unix socket on the host.
 *
 * Why hand over the socket instead of copying bytes: the accepted socket
 * belongs to the sandbox's namespace, but a socket is usable from any
 * namespace once a process holds it, so passing it (SCM_RIGHTS) lets the
 * proxy talk to the guest directly — one copy of every byte instead of two,
 * and no second set of buffers and limits to keep in step.
 *
 * Invariants:
 *  - egress_listen_inside runs in a cloned child of a possibly
 *    multi-threaded process (the native init, the gVisor client): system
 *    calls only, no allocation;
 *  - the listener is created before the guest program exists, so a guest
 *    can never bind 127.0.0.1:3128 itself and pose as the proxy;
 *  - the relay owns the listener and every accepted socket until it has
 *    been sent (then closes its copy); a proxy that went away means the
 *    guest's connection is closed, never left hanging.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net.h"

int egress_listen_inside(unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

struct egress_relay {
    int listen_fd;
    int proxy_fd;     /* a connection to the proxy's Unix socket */
    int stop_fd;      /* eventfd: egress_relay_stop */
    pthread_t thread;
};

static int connect_unix(const char *path) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* One message a socket: one data byte (a message without data is not
 * delivered on a stream socket) and the socket as SCM_RIGHTS. */
static bool send_fd(int via, int fd) { return fdpass_send(via, "c", 1, fd); }

static void *relay_loop(void *arg) {
    egress_relay *r = arg;
    struct pollfd fds[2] = {{.fd = r->listen_fd, .events = POLLIN},
                            {.fd = r->stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[1].revents) break;
        if (!(fds[0].revents & POLLIN)) {
            if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) break;
            continue;
        }
        int client = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) continue; /* ECONNABORTED, EMFILE...: the next one may work */
        /* Whether or not the proxy took it, this copy is done with. */
        send_fd(r->proxy_fd, client);
        close(client);
    }
    return NULL;
}

static egress_relay *relay_error(al_error *err, const char *step) {
    egress_error(err, AL_ERR_SYSTEM, "egress relay: %s: %s", step, strerror(errno));
    return NULL;
}

egress_relay *egress_relay_start(int listen_fd, const char *unix_path, al_error *err) {
    egress_relay *r = calloc(1, sizeof *r);
    if (!r) {
        close(listen_fd);
        return relay_error(err, "allocate");
    }
    r->listen_fd = listen_fd;
    r->proxy_fd = -1;
    r->stop_fd = eventfd(0, EFD_CLOEXEC);
    const char *step = "eventfd";
    if (r->stop_fd >= 0) {
        step = "connect to the proxy";
        r->proxy_fd = connect_unix(unix_path);
    }
    if (r->proxy_fd >= 0) {
        step = "start thread";
        errno = pthread_create(&r->thread, NULL, relay_loop, r);
        if (errno == 0) return r;
    }
    int saved = errno;
    if (r->stop_fd >= 0) close(r->stop_fd);
    if (r->proxy_fd >= 0) close(r->proxy_fd);
    close(listen_fd);
    free(r);
    errno = saved;
    return relay_error(err, step);
}

void egress_relay_stop(egress_relay *r) {
    if (!r) return;
    uint64_t one = 1;
    if (write(r->stop_fd, &one, sizeof one) != sizeof one) {
        /* an eventfd write fails only on overflow, which one write cannot cause */
    }
    pthread_join(r->thread, NULL);
    close(r->listen_fd);
    close(r->proxy_fd);
    close(r->stop_fd);
    free(r);
}
