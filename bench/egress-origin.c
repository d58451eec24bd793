/*
 * bench/egress-origin.c — the fast loopback origin and the sequential client
 * of bench/egress.sh (the egress proxy's throughput and added latency).
 *
 *   egress-origin serve ADDR PORT READY_FILE
 *       An HTTP/1.1 server on ADDR:PORT (PORT 0: the kernel picks; the port
 *       is written to READY_FILE once listening). One thread, one epoll loop,
 *       non-blocking sockets. Every request head (up to CRLFCRLF; bodies are
 *       not expected: a request with a non-zero Content-Length or any
 *       Transfer-Encoding closes the connection) gets a fixed 2-byte answer
 *       "ok" with Content-Length; keep-alive unless the request says
 *       "Connection: close", then the connection is closed after the answer
 *       (what the proxy always asks for). Pipelined requests are answered in
 *       order. Runs until killed.
 *
 *   egress-origin get HOST PORT N [PROXY_HOST PROXY_PORT NAME]
 *       N sequential requests (after N/10 warm-ups), each on a new TCP
 *       connection with "Connection: close": to HOST:PORT directly, or
 *       through the forward proxy at PROXY_HOST:PROXY_PORT as an
 *       absolute-form "GET http://NAME:PORT/". Each must return status 200
 *       and the body "ok", else the client fails. Prints one line:
 *       "n N mean_us M p50_us A p90_us B p99_us C max_us D".
 *
 * Invariants: every buffer length is checked before use (a connection that
 * sends a head over 8 KiB is closed); the server never blocks on one client;
 * the client's per-request timeout (5 s, SO_RCVTIMEO/SO_SNDTIMEO) bounds a
 * stuck request. A benchmark tool, not part of libairlock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX 8192
#define MAX_EVENTS 256

static const char ANSWER[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
static const char ANSWER_CLOSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

typedef struct conn {
    int fd;
    char in[HEAD_MAX];
    size_t in_len;
    char out[4096];
    size_t out_len, out_off;
    bool close_after;   /* close once out is written */
} conn;

/* ---- server ----------------------------------------------------------------------- */

/* Does the head (NUL-free bytes [0, len)) contain header NAME with a value
 * starting with VALUE (both case-insensitive)? */
static bool head_has(const char *head, size_t len, const char *name, const char *value)
{
    size_t nlen = strlen(name), vlen = strlen(value);
    for (size_t i = 0; i + 2 + nlen < len; i++) {
        if (head[i] != '\n' || strncasecmp(head + i + 1, name, nlen) != 0 || head[i + 1 + nlen] != ':')
            continue;
        size_t v = i + 2 + nlen;
        while (v < len && (head[v] == ' ' || head[v] == '\t'))
            v++;
        if (vlen == 0 || (len - v >= vlen && strncasecmp(head + v, value, vlen) == 0))
            return true;
    }
    return false;
}

static void conn_free(int ep, conn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

/* Answer every complete head in c->in; false when the connection must close now. */
static bool serve_heads(conn *c)
{
    for (;;) {
        char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
        if (end == NULL)
            return c->in_len < sizeof c->in; /* a head this long: a bad client */
        size_t head_len = (size_t)(end - c->in) + 4;
        /* no bodies: anything with one would desynchronise the stream */
        if (head_has(c->in, head_len, "Transfer-Encoding", "") ||
            (head_has(c->in, head_len, "Content-Length", "") &&
             !head_has(c->in, head_len, "Content-Length", "0\r")))
            return false;
        bool close_req = head_has(c->in, head_len, "Connection", "close") ||
                         memmem(c->in, head_len, " HTTP/1.0\r\n", 11) != NULL;
        const char *ans = close_req ? ANSWER_CLOSE : ANSWER;
        size_t alen = strlen(ans);
        if (c->out_len + alen > sizeof c->out)
            return false;
        memcpy(c->out + c->out_len, ans, alen);
        c->out_len += alen;
        memmove(c->in, c->in + head_len, c->in_len - head_len);
        c->in_len -= head_len;
        if (close_req) {
            c->close_after = true;
            c->in_len = 0; /* nothing after a close is answered */
            return true;
        }
    }
}

/* Write what is pending; false on error or when done with a closing connection. */
static bool flush_out(conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        c->out_off += (size_t)n;
    }
    c->out_len = c->out_off = 0;
    return !c->close_after;
}

static void on_readable(int ep, conn *c)
{
    for (;;) {
        if (c->in_len == sizeof c->in) {
            conn_free(ep, c);
            return;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            conn_free(ep, c);
            return;
        }
        if (n < 0)
            break;
        c->in_len += (size_t)n;
        if (!serve_heads(c)) {
            conn_free(ep, c);
            return;
        }
        if (c->close_after)
            break;
    }
    if (!flush_out(c)) {
        conn_free(ep, c);
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | (c->out_len ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void on_accept(int ep, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            free(c);
        }
    }
}

static int listen_on(const char *addr, unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (port > 65535 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "egress-origin: bad address %s:%u\n", addr, port);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0) {
        perror("egress-origin: listen");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int write_ready(const char *path, int lfd)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    char tmp[4096];
    if (getsockname(lfd, (struct sockaddr *)&sa, &len) != 0 ||
        snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%u\n", ntohs(sa.sin_port));
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

static int serve(const char *addr, const char *port, const char *ready)
{
    int lfd = listen_on(addr, (unsigned)strtoul(port, NULL, 10));
    if (lfd < 0)
        return 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0 || write_ready(ready, lfd) != 0) {
        perror("egress-origin: setup");
        return 1;
    }
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            conn *c = events[i].data.ptr;
            if (c == NULL) {
                on_accept(ep, lfd);
            } else if (events[i].events & EPOLLOUT) {
                if (!flush_out(c)) {
                    conn_free(ep, c);
                    continue;
                }
                struct epoll_event in = {.events = EPOLLIN | (c->out_len ? EPOLLOUT : 0), .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &in);
            } else {
                on_readable(ep, c);
            }
        }
    }
}

/* ---- client ----------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One request on a new connection to sa; true when it got "200" and "ok". */
static bool one_request(const struct sockaddr_in *sa, const char *req, size_t req_len)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct timeval tv = {.tv_sec = 5};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[4096];
    size_t len = 0;
    bool ok = connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0 &&
              send(fd, req, req_len, MSG_NOSIGNAL) == (ssize_t)req_len;
    while (ok && len < sizeof buf - 1) {
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return ok && strncmp(buf, "HTTP/1.1 200 ", 13) == 0 && len >= 6 &&
           strcmp(buf + len - 6, "\r\n\r\nok") == 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int get(int argc, char **argv)
{
    if (argc != 5 && argc != 8) {
        fprintf(stderr, "usage: egress-origin get HOST PORT N [PROXY_HOST PROXY_PORT NAME]\n");
        return 2;
    }
    long n = strtol(argv[4], NULL, 10);
    unsigned port = (unsigned)strtoul(argv[3], NULL, 10);
    bool proxied = argc == 8;
    const char *conn_host = proxied ? argv[5] : argv[2];
    unsigned conn_port = proxied ? (unsigned)strtoul(argv[6], NULL, 10) : port;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)conn_port)};
    if (n < 1 || n > 10000000 || port > 65535 || conn_port > 65535 ||
        inet_pton(AF_INET, conn_host, &sa.sin_addr) != 1) {
        fprintf(stderr, "egress-origin get: bad arguments\n");
        return 2;
    }
    char req[1024];
    int req_len = proxied ? snprintf(req, sizeof req,
                                     "GET http://%s:%u/ HTTP/1.1\r\nHost: %s:%u\r\nConnection: close\r\n\r\n",
                                     argv[7], port, argv[7], port)
                          : snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s:%u\r\nConnection: close\r\n\r\n",
                                     argv[2], port);
    if (req_len < 0 || req_len >= (int)sizeof req)
        return 2;
    uint64_t *t = calloc((size_t)n, sizeof *t);
    if (t == NULL)
        return 1;
    for (long i = 0; i < n / 10; i++) /* warm-up: caches, the proxy's first connections */
        if (!one_request(&sa, req, (size_t)req_len)) {
            fprintf(stderr, "egress-origin get: warm-up request %ld failed\n", i);
            free(t);
            return 1;
        }
    uint64_t sum = 0;
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        if (!one_request(&sa, req, (size_t)req_len)) {
            fprintf(stderr, "egress-origin get: request %ld failed\n", i);
            free(t);
            return 1;
        }
        t[i] = now_ns() - t0;
        sum += t[i];
    }
    qsort(t, (size_t)n, sizeof *t, cmp_u64);
    printf("n %ld mean_us %.1f p50_us %.1f p90_us %.1f p99_us %.1f max_us %.1f\n", n,
           (double)sum / (double)n / 1e3, (double)t[n / 2] / 1e3, (double)t[n * 9 / 10] / 1e3,
           (double)t[n * 99 / 100] / 1e3, (double)t[n - 1] / 1e3);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2], argv[3], argv[4]);
    if (argc >= 2 && strcmp(argv[1], "get") == 0)
        return get(argc, argv);
    fprintf(stderr, "usage: egress-origin serve ADDR PORT READY_FILE\n"
                    "       egress-origin get HOST PORT N [PROXY_HOST PROXY_PORT NAME]\n");
    return 2;
}
