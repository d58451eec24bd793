/*
 * proxy.c — the egress proxy (issue 5): one thread, one epoll loop, fed
 * client sockets over a Unix socket by the relay, serving each as an
 * HTTP/1.1 forward proxy (absolute-form requests) or a CONNECT tunnel, with
 * every decision logged as one JSON line.
 *
 * A client connection goes through these states:
 *
 *   HEAD     read the request head (at most HTTP_HEAD_MAX bytes, within the
 *            idle timeout counted from accept: a slowloris client cannot
 *            hold a slot by trickling bytes); malformed -> 400, too large
 *            -> 431; then the name and port are checked (egress_check_name)
 *            and, for plain HTTP, the Host header against the URL (a
 *            request for an allowed URL must not carry "Host: internal" to
 *            a shared origin);
 *   RESOLVE  the static host map, an IP literal, or the resolver's worker
 *            threads; the answer comes back through an eventfd with a token
 *            (slot + generation), so a connection closed meanwhile (and its
 *            slot reused) is never touched by a stale answer;
 *            every address is checked (egress_check_address): one denied
 *            address refuses the request, so a name cannot mix a public
 *            and a private address and win a race;
 *   CONNECT  a non-blocking connect to exactly one checked address (no
 *            second lookup: no DNS rebinding), the next checked one on
 *            failure;
 *   PEEK     CONNECT only: "200 Connection established" is sent and the
 *            client's first bytes are held until sni_parse decides; the SNI
 *            must name the CONNECT host (domain fronting: an allowed name's
 *            IP used to reach another name on the same CDN); on 443 the
 *            bytes must be TLS with an SNI;
 *   TUNNEL   bytes both ways through two fixed buffers, interest toggled
 *            for backpressure, half-closes propagated; plain HTTP forwards
 *            the rewritten head (origin-form, Proxy-* removed, injected
 *            headers, Connection: close) and exactly the request body
 *            (Content-Length or chunked framing): bytes after it are never
 *            forwarded, so a second, unchecked request cannot be smuggled
 *            behind the first;
 *   REFUSE   an HTTP error response with a text body a model can read;
 *   DRAIN    after the response: our side shut for writing, the client's
 *            remaining bytes read and dropped for a short while, so closing
 *            with unread data does not reset the connection and destroy the
 *            response before the client reads it.
 *
 * Invariants:
 *  - the loop never blocks: every socket is non-blocking, DNS runs on the
 *    resolver's threads, the log is one write(2) per line to a file;
 *  - everything a connection allocates is owned by its conn and released
 *    by conn_close; every fd is closed exactly once; no globals;
 *  - sizes coming from peers are never trusted: reads are bounded by the
 *    buffers and by the remaining byte allowance, the head by
 *    HTTP_HEAD_MAX, the TLS peek by PEEK_MAX, the body by its framing;
 *  - at most cfg.max_connections client sockets are served (from receipt
 *    to close); more get a 503 through at most MAX_REFUSING extra slots
 *    that only answer and drain, past that the 503 is sent and the socket
 *    closed at once;
 *  - limits: bytes relayed per connection and per proxy (both directions;
 *    exceeding one closes the connection, "byte limit"), idle timeout;
 *  - stats are written only by the proxy thread, under stats_lock, so
 *    egress_proxy_stats may read them from any thread while it runs; the
 *    proxy thread reads its own counters without the lock (no other thread
 *    writes them).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

#define BUF_SIZE 65536                      /* per direction, per connection */
#define PEEK_MAX (16384 + 5)                /* a ClientHello record, header included */
#define DRAIN_MS 2000                       /* how long a refused client is drained */
#define DRAIN_MAX (1u << 20)                /* and how many bytes at most */
#define MAX_RELAYS 16                       /* Unix connections from relays */
#define MAX_REFUSING 16                     /* over-limit clients answered 503 at once */
#define MAX_EVENTS 64
#define MAX_FDS_PER_MSG 8                   /* SCM_RIGHTS room; extras are closed */
#define RECV_PER_WAKEUP 64                  /* fairness: messages per readiness */
#define PUMP_ROUNDS 8                       /* fairness: transfers per readiness */
#define SLOT_LIMIT (1u << 27)               /* fits the epoll tag */

/* epoll tags: kind in the top 4 bits; for connections, the side, the slot
 * and the slot's generation (a stale event for a reused slot is dropped). */
enum tag_kind { TAG_STOP = 1, TAG_LISTEN, TAG_RESOLVER, TAG_RELAY, TAG_CLIENT, TAG_ORIGIN };

enum conn_state { ST_HEAD, ST_RESOLVE, ST_CONNECT, ST_PEEK, ST_TUNNEL, ST_REFUSE, ST_DRAIN };

typedef struct buffer {
    uint8_t *data;
    size_t start, end; /* bytes [start, end) are pending */
} buffer;

typedef struct side {
    int fd;
    bool registered;
    uint32_t events;
} side;

typedef struct conn {
    uint32_t slot, gen;
    enum conn_state state;
    side client, origin;
    int64_t deadline_ms;      /* monotonic; the state's timeout */

    /* the request */
    char method[24];
    char host[EGRESS_MAX_NAME + 1];
    unsigned port;
    bool is_connect;
    bool host_is_name;        /* not an IP literal */
    char address[INET6_ADDRSTRLEN]; /* the address connected to / refused */

    /* plain HTTP: the rewritten head, then the body's framing */
    uint8_t *pre;
    size_t pre_len, pre_off;
    bool chunked;
    http_chunked chunk;
    uint64_t body_left;       /* Content-Length framing */
    bool body_done;           /* the whole body has been read: stop reading */

    /* candidate addresses, all checked */
    struct sockaddr_storage addrs[EGRESS_MAX_ADDRS];
    socklen_t addr_lens[EGRESS_MAX_ADDRS];
    size_t naddrs, next_addr;

    buffer up, down;          /* client -> origin, origin -> client */
    bool client_eof, origin_eof, client_shut, origin_shut;
    bool allowed;             /* an origin connection was made ("allow" logged) */
    bool over_limit;          /* a refusing slot (not counted in nconns) */
    bool failed;              /* set by a transfer step: close now */
    const char *fail_reason;
    uint64_t bytes_up, bytes_down;
    uint64_t drained;
} conn;

struct egress_proxy {
    egress_config cfg;
    char *path;
    int listen_fd, epoll_fd, stop_fd, resolver_fd;
    egress_resolver *resolver;
    pthread_t thread;
    bool thread_started;

    conn **slots;
    uint32_t *slot_gens;      /* survives the conn, so generations never repeat */
    uint32_t nslots;
    uint32_t nconns;          /* served connections, against max_connections */
    uint32_t nrefusing;       /* over-limit connections being answered */

    int relays[MAX_RELAYS];
    size_t nrelays;

    egress_resolution resolution; /* scratch for drain_resolver (~1 KiB) */
    pthread_mutex_t stats_lock;
    egress_stats stats;
};

/* ---- small helpers ----------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t tag_of(enum tag_kind kind, uint32_t slot, uint32_t gen) {
    return (uint64_t)kind << 60 | (uint64_t)(slot & (SLOT_LIMIT - 1)) << 32 | gen;
}

static bool set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

static void close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Is host (as http_parse_request normalised it) an IP literal? Into ss when
 * it is. IPv4 in every form inet_aton takes ("127.1", "0x7f.1"), because the
 * policy treats those as literals too (see policy.c). */
static bool parse_literal(const char *host, struct sockaddr_storage *ss, socklen_t *len) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)(void *)ss;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        *len = sizeof *v6;
        return true;
    }
    if (!*host || strspn(host, "0123456789abcdefxABCDEFX.") != strlen(host))
        return false;
    struct sockaddr_in *v4 = (struct sockaddr_in *)(void *)ss;
    if (inet_aton(host, &v4->sin_addr) == 0)
        return false;
    v4->sin_family = AF_INET;
    *len = sizeof *v4;
    return true;
}

static void address_text(const struct sockaddr_storage *ss, char *out, size_t cap) {
    const void *a = ss->ss_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)(const void *)ss)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;
    if (!inet_ntop(ss->ss_family, a, out, (socklen_t)cap))
        snprintf(out, cap, "?");
}

static void set_port(struct sockaddr_storage *ss, unsigned port) {
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)(void *)ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons((uint16_t)port);
}

/* ---- the decision log ----------------------------------------------------------- */

/* c may be NULL (a refusal before any request was read). */
static void log_decision(egress_proxy *p, const conn *c, const char *decision,
                         const char *reason) {
    egress_log_entry e = {
        .execution = p->cfg.execution_id,
        .decision = decision,
        .reason = reason,
        .method = c ? c->method : "",
        .host = c ? c->host : "",
        .address = c ? c->address : "",
        .port = c ? c->port : 0,
        .bytes_up = c ? c->bytes_up : 0,
        .bytes_down = c ? c->bytes_down : 0,
    };
    egress_log_write(p->cfg.log_fd, &e);
}

/* ---- epoll interest --------------------------------------------------------- */

/* Watch s for events. Interest 0 removes the fd from the set unless
 * keep_for_hangup: a level-triggered EPOLLHUP cannot be masked, so an fd we
 * want nothing from would otherwise wake the loop forever. */
static void watch(egress_proxy *p, conn *c, side *s, enum tag_kind kind, uint32_t events,
                  bool keep_for_hangup) {
    if (s->fd < 0)
        return;
    if (events == 0 && !keep_for_hangup) {
        if (s->registered)
            epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
        s->registered = false;
        s->events = 0;
        return;
    }
    if (s->registered && s->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.u64 = tag_of(kind, c->slot, c->gen)};
    int op = s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(p->epoll_fd, op, s->fd, &ev) == 0) {
        s->registered = true;
        s->events = events;
    } else {
        /* ENOMEM in the kernel: nothing will ever wake this connection
         * but its deadline, which then closes it. */
        c->failed = true;
        c->fail_reason = "internal error (epoll)";
    }
}

static void unwatch(egress_proxy *p, side *s) {
    if (s->fd >= 0 && s->registered)
        epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
    s->registered = false;
    s->events = 0;
}

/* ---- connections: create / close ----------------------------------------- */

static conn *conn_new(egress_proxy *p, int fd, bool over_limit) {
    uint32_t slot = 0;
    while (slot < p->nslots && p->slots[slot])
        slot++;
    if (slot == p->nslots) {
        if (p->nslots >= SLOT_LIMIT)
            return NULL;
        uint32_t n = p->nslots ? p->nslots * 2 : 16;
        if (n > SLOT_LIMIT)
            n = SLOT_LIMIT;
        conn **slots = realloc(p->slots, n * sizeof *slots);
        if (!slots)
            return NULL;
        p->slots = slots;
        uint32_t *gens = realloc(p->slot_gens, n * sizeof *gens);
        if (!gens)
            return NULL;
        p->slot_gens = gens;
        for (uint32_t i = p->nslots; i < n; i++) {
            p->slots[i] = NULL;
            p->slot_gens[i] = 0;
        }
        p->nslots = n;
    }
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->up.data = malloc(BUF_SIZE);
    c->down.data = malloc(BUF_SIZE);
    if (!c->up.data || !c->down.data) {
        free(c->up.data);
        free(c->down.data);
        free(c);
        return NULL;
    }
    c->slot = slot;
    c->gen = ++p->slot_gens[slot];
    c->client.fd = fd;
    c->origin.fd = -1;
    c->state = ST_HEAD;
    c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
    p->slots[slot] = c;
    c->over_limit = over_limit;
    if (over_limit)
        p->nrefusing++;
    else
        p->nconns++;
    return c;
}

/* Release everything the connection owns. reason: when the connection was
 * allowed, the "close" line's reason; NULL logs nothing. */
static void conn_close(egress_proxy *p, conn *c, const char *reason) {
    if (c->allowed && reason)
        log_decision(p, c, "close", reason);
    unwatch(p, &c->client);
    unwatch(p, &c->origin);
    close_fd(&c->client.fd);
    close_fd(&c->origin.fd);
    free(c->pre);
    free(c->up.data);
    free(c->down.data);
    p->slots[c->slot] = NULL;
    if (c->over_limit)
        p->nrefusing--;
    else
        p->nconns--;
    free(c);
}

/* ---- refusals ---------------------------------------------------------------- */

static void count_denied(egress_proxy *p) {
    pthread_mutex_lock(&p->stats_lock);
    p->stats.denied++;
    pthread_mutex_unlock(&p->stats_lock);
}

/* Answer with an HTTP error and a text/plain body "airlock: <text>\n"
 * (the log's reason is <text>), then drain and close. */
static void refuse(egress_proxy *p, conn *c, int status, const char *status_text,
                   const char *fmt, ...) {
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);

    count_denied(p);
    log_decision(p, c, "deny", text);

    unwatch(p, &c->origin);
    close_fd(&c->origin.fd);
    free(c->pre);
    c->pre = NULL;
    c->pre_len = c->pre_off = 0;
    int n = snprintf((char *)c->down.data, BUF_SIZE,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\nairlock: %s\n",
                     status, status_text, strlen(text) + strlen("airlock: \n"), text);
    c->down.start = 0;
    c->down.end = n > 0 && n < BUF_SIZE ? (size_t)n : 0;
    c->state = ST_REFUSE;
    c->deadline_ms = now_ms() + (p->cfg.idle_timeout_ms < DRAIN_MS ? p->cfg.idle_timeout_ms
                                                                     : DRAIN_MS);
    watch(p, c, &c->client, TAG_CLIENT, EPOLLOUT, true);
}

/* A refusal inside a tunnel, where no HTTP response can be sent any more. */
static void deny_and_close(egress_proxy *p, conn *c, const char *reason) {
    count_denied(p);
    log_decision(p, c, "deny", reason);
    conn_close(p, c, NULL);
}

static void refuse_verdict(egress_proxy *p, conn *c, egress_verdict v) {
    switch (v) {
    case EGRESS_DENY_NOT_ALLOWED:
        refuse(p, c, 403, "Forbidden", "domain %s is not in the allow-list", c->host);
        break;
    case EGRESS_DENY_DENIED:
        refuse(p, c, 403, "Forbidden", "domain %s is in the deny-list", c->host);
        break;
    case EGRESS_DENY_PORT:
        refuse(p, c, 403, "Forbidden", "port %u is not in the list of allowed ports (%s:%u)",
               c->port, c->host, c->port);
        break;
    default:
        refuse(p, c, 403, "Forbidden", "%s:%u refused: %s", c->host, c->port,
               egress_verdict_reason(v));
        break;
    }
}

/* ---- transfers ----------------------------------------------------------------- */

/* How many more bytes this connection may relay (per connection and per
 * proxy), UINT64_MAX when unlimited. */
static uint64_t allowance(const egress_proxy *p, const conn *c) {
    uint64_t left = UINT64_MAX;
    uint64_t used = c->bytes_up + c->bytes_down;
    if (p->cfg.max_bytes_per_connection)
        left = used >= p->cfg.max_bytes_per_connection ? 0
                                                       : p->cfg.max_bytes_per_connection - used;
    if (p->cfg.max_bytes) {
        uint64_t total = p->stats.bytes >= p->cfg.max_bytes ? 0 : p->cfg.max_bytes - p->stats.bytes;
        if (total < left)
            left = total;
    }
    return left;
}

static void count(egress_proxy *p, conn *c, bool up, size_t n) {
    if (up)
        c->bytes_up += n;
    else
        c->bytes_down += n;
    pthread_mutex_lock(&p->stats_lock);
    p->stats.bytes += n;
    pthread_mutex_unlock(&p->stats_lock);
}

static void fail(conn *c, const char *reason) {
    if (!c->failed) {
        c->failed = true;
        c->fail_reason = reason;
    }
}

/* Make room at the end of b (moving pending bytes to the front). */
static size_t room(buffer *b, size_t cap) {
    if (b->start == b->end)
        b->start = b->end = 0;
    else if (b->end == cap && b->start > 0) {
        memmove(b->data, b->data + b->start, b->end - b->start);
        b->end -= b->start;
        b->start = 0;
    }
    return cap - b->end;
}

/* Read from fd into b, at most max bytes. With max == 0 (the byte
 * allowance is used up) one byte is read into a scratch: EOF is still
 * told apart from "the peer wants to send more than it may". Returns
 * bytes read (> 0), 0 on EAGAIN; sets *eof on EOF; fails c on error. */
static size_t read_into(conn *c, int fd, buffer *b, size_t max, bool *eof, bool limited) {
    if (limited && max == 0) {
        uint8_t one;
        ssize_t n = recv(fd, &one, 1, MSG_PEEK);
        if (n == 0)
            *eof = true;
        else if (n > 0)
            fail(c, "byte limit");
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            fail(c, "connection reset");
        return 0;
    }
    ssize_t n = recv(fd, b->data + b->end, max, 0);
    if (n > 0) {
        b->end += (size_t)n;
        return (size_t)n;
    }
    if (n == 0)
        *eof = true;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        fail(c, "connection reset");
    return 0;
}

static size_t write_from(conn *c, int fd, const uint8_t *data, size_t len) {
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n > 0)
        return (size_t)n;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        fail(c, "connection reset");
    return 0;
}

/* Of the n bytes just appended to c->up (plain HTTP), keep those that belong
 * to the body; drop the rest. Returns how many were kept. */
static size_t keep_body(conn *c, size_t n) {
    uint8_t *fresh = c->up.data + c->up.end - n;
    size_t keep;
    if (c->body_done) {
        keep = 0;
    } else if (c->chunked) {
        keep = http_chunked_scan(&c->chunk, fresh, n);
        if (c->chunk.error) {
            fail(c, "malformed chunked request body");
            keep = 0;
        }
        if (keep > n)
            keep = n; /* never trust a count from elsewhere either */
        c->body_done = c->chunk.done;
    } else {
        keep = c->body_left < n ? (size_t)c->body_left : n;
        c->body_left -= keep;
        c->body_done = c->body_left == 0;
    }
    c->up.end -= n - keep;
    return keep;
}

static bool want_read_client(const conn *c) {
    if (c->client_eof || c->failed)
        return false;
    if (c->state == ST_PEEK)
        return c->up.end - c->up.start < PEEK_MAX;
    return c->state == ST_TUNNEL && !c->body_done;
}

static bool want_read_origin(const conn *c) {
    return (c->state == ST_PEEK || c->state == ST_TUNNEL) && !c->origin_eof && !c->failed &&
           c->origin.fd >= 0;
}

/* One round of client -> origin. */
static bool pump_up(egress_proxy *p, conn *c) {
    bool progress = false;
    if (want_read_client(c) && room(&c->up, BUF_SIZE) > 0) {
        size_t max = BUF_SIZE - c->up.end;
        bool limited = c->state == ST_TUNNEL;
        if (c->state == ST_PEEK) {
            size_t have = c->up.end - c->up.start;
            if (max > PEEK_MAX - have)
                max = PEEK_MAX - have;
        } else {
            uint64_t a = allowance(p, c);
            if (a < max)
                max = (size_t)a;
        }
        size_t n = read_into(c, c->client.fd, &c->up, max, &c->client_eof, limited);
        if (n > 0) {
            progress = true;
            if (c->state == ST_TUNNEL) {
                if (c->pre)
                    n = keep_body(c, n);
                count(p, c, true, n);
            }
        }
        progress |= c->client_eof;
    }
    if (c->state == ST_TUNNEL && c->origin.fd >= 0 && !c->failed) {
        if (c->pre && c->pre_off < c->pre_len) {
            size_t n = write_from(c, c->origin.fd, c->pre + c->pre_off, c->pre_len - c->pre_off);
            c->pre_off += n;
            progress |= n > 0;
        }
        if ((!c->pre || c->pre_off == c->pre_len) && c->up.end > c->up.start) {
            size_t n = write_from(c, c->origin.fd, c->up.data + c->up.start,
                                  c->up.end - c->up.start);
            c->up.start += n;
            progress |= n > 0;
        }
    }
    return progress;
}

/* One round of origin -> client. */
static bool pump_down(egress_proxy *p, conn *c) {
    bool progress = false;
    if (want_read_origin(c) && room(&c->down, BUF_SIZE) > 0) {
        size_t max = BUF_SIZE - c->down.end;
        uint64_t a = allowance(p, c);
        if (a < max)
            max = (size_t)a;
        size_t n = read_into(c, c->origin.fd, &c->down, max, &c->origin_eof, true);
        if (n > 0) {
            count(p, c, false, n);
            progress = true;
        }
        progress |= c->origin_eof;
    }
    if (c->down.end > c->down.start && !c->failed) {
        size_t n = write_from(c, c->client.fd, c->down.data + c->down.start,
                              c->down.end - c->down.start);
        c->down.start += n;
        progress |= n > 0;
    }
    return progress;
}

/* ---- the TLS peek ---------------------------------------------------------------- */

static void start_tunnel(egress_proxy *p, conn *c);

/* Decide on the bytes held so far; true when the connection was closed. */
static bool peek_decide(egress_proxy *p, conn *c) {
    size_t have = c->up.end - c->up.start;
    if (have == 0)
        return false;
    char sni[EGRESS_MAX_NAME + 1];
    sni_result r = sni_parse(c->up.data + c->up.start, have, sni);
    if (r == SNI_NEED_MORE) {
        if (have < PEEK_MAX && !c->client_eof)
            return false;
        deny_and_close(p, c, "TLS ClientHello too large or incomplete");
        return true;
    }
    if (r == SNI_FOUND) {
        if (c->host_is_name && strcasecmp(sni, c->host) != 0) {
            char why[EGRESS_MAX_NAME * 2 + 96];
            snprintf(why, sizeof why, "TLS server name %s does not match the CONNECT host %s",
                     sni, c->host);
            deny_and_close(p, c, why);
            return true;
        }
        /* CONNECT to an allowed IP with a server name: the name is what
         * the origin serves, so it must pass the name rules too, or a
         * denied domain on an allowed address is reached by its IP. */
        if (!c->host_is_name && egress_check_name(&p->cfg.policy, sni, c->port) != EGRESS_ALLOW) {
            char why[EGRESS_MAX_NAME + 96];
            snprintf(why, sizeof why, "TLS server name %s is not allowed by the egress policy",
                     sni);
            deny_and_close(p, c, why);
            return true;
        }
    } else if (r == SNI_ABSENT && !c->host_is_name) {
        /* RFC 6066 forbids IP literals in SNI: a hello to an allowed IP
         * (allow_ips) has none, and there is no name to front. */
    } else if (c->port == 443 || r != SNI_NOT_TLS) {
        /* 443 must be TLS with a server name; elsewhere plain bytes may
         * pass, but a TLS hello must still name the host. */
        deny_and_close(p, c, "TLS ClientHello missing or without a matching server name");
        return true;
    }
    start_tunnel(p, c); /* may fail (byte limit): the caller closes */
    return false;
}

/* ---- the tunnel ---------------------------------------------------------------- */

static void update_interest(egress_proxy *p, conn *c) {
    uint32_t cev = 0, oev = 0;
    if (want_read_client(c) && (c->state == ST_PEEK || c->up.end < BUF_SIZE || c->up.start > 0))
        cev |= EPOLLIN;
    if (c->down.end > c->down.start)
        cev |= EPOLLOUT;
    if (want_read_origin(c) && (c->down.end < BUF_SIZE || c->down.start > 0))
        oev |= EPOLLIN;
    if (c->state == ST_TUNNEL &&
        ((c->pre && c->pre_off < c->pre_len) || c->up.end > c->up.start))
        oev |= EPOLLOUT;
    watch(p, c, &c->client, TAG_CLIENT, cev, false);
    watch(p, c, &c->origin, TAG_ORIGIN, oev, false);
}

/* Half-closes and the end. true when the connection was closed. */
static bool settle(egress_proxy *p, conn *c) {
    bool pre_flushed = !c->pre || c->pre_off == c->pre_len;
    bool up_flushed = pre_flushed && c->up.end == c->up.start;
    if (c->state == ST_TUNNEL && c->client_eof && !c->body_done && up_flushed &&
        !c->origin_shut) {
        shutdown(c->origin.fd, SHUT_WR);
        c->origin_shut = true;
    }
    bool down_done = c->origin_eof && c->down.end == c->down.start;
    if (down_done && !c->client_shut) {
        shutdown(c->client.fd, SHUT_WR);
        c->client_shut = true;
    }
    /* Plain HTTP ends with the response (Connection: close was sent);
     * a tunnel when both directions have ended. */
    bool up_done = up_flushed && (c->client_eof || c->body_done);
    if (down_done && (c->pre || up_done)) {
        conn_close(p, c, "done");
        return true;
    }
    if (c->state == ST_PEEK && c->client_eof && c->up.end == c->up.start) {
        /* the client closed before sending anything: nothing to check */
        conn_close(p, c, "client closed before sending data");
        return true;
    }
    return false;
}

/* Move bytes until nothing moves (or PUMP_ROUNDS), then settle. */
static void pump(egress_proxy *p, conn *c) {
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        bool progress = pump_up(p, c);
        if (c->failed)
            break;
        if (c->state == ST_PEEK) {
            if (peek_decide(p, c))
                return;
            if (c->failed)
                break;
            progress |= c->state == ST_TUNNEL; /* the held bytes can go now */
        }
        progress |= pump_down(p, c);
        if (c->failed || !progress)
            break;
        if (c->state == ST_TUNNEL)
            c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
    }
    if (c->failed) {
        conn_close(p, c, c->fail_reason);
        return;
    }
    if (settle(p, c))
        return;
    update_interest(p, c);
    if (c->failed)
        conn_close(p, c, c->fail_reason);
}

static void start_tunnel(egress_proxy *p, conn *c) {
    /* What was read before the origin was reached counts now: the
     * rewritten head and body bytes (HTTP), or the checked hello (CONNECT). */
    uint64_t held = (uint64_t)(c->up.end - c->up.start) + (c->pre ? c->pre_len : 0);
    if (held > allowance(p, c)) {
        fail(c, "byte limit");
        return;
    }
    count(p, c, true, (size_t)held);
    c->state = ST_TUNNEL;
    c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
}

/* ---- connecting ------------------------------------------------------------------- */

static void connected(egress_proxy *p, conn *c) {
    int one = 1;
    setsockopt(c->origin.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->allowed = true;
    pthread_mutex_lock(&p->stats_lock);
    p->stats.allowed++;
    pthread_mutex_unlock(&p->stats_lock);
    log_decision(p, c, "allow", "allowed by the egress policy");
    if (c->is_connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        memcpy(c->down.data, ok, sizeof ok - 1);
        c->down.start = 0;
        c->down.end = sizeof ok - 1;
        c->state = ST_PEEK;
        c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
    } else {
        start_tunnel(p, c);
    }
    pump(p, c);
}

/* Connect to the next checked address; 502 when none is left. */
static void try_connect(egress_proxy *p, conn *c) {
    unwatch(p, &c->origin);
    close_fd(&c->origin.fd);
    while (c->next_addr < c->naddrs) {
        size_t i = c->next_addr++;
        struct sockaddr_storage *ss = &c->addrs[i];
        set_port(ss, c->port);
        address_text(ss, c->address, sizeof c->address);
        int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        /* Non-blocking: EINTR, like EINPROGRESS, means the connection
         * goes on in the background (retrying would get EALREADY). */
        int rc = connect(fd, (struct sockaddr *)ss, c->addr_lens[i]);
        if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
            close(fd);
            continue;
        }
        c->origin.fd = fd;
        if (rc == 0) {
            connected(p, c);
            return;
        }
        c->state = ST_CONNECT;
        c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
        watch(p, c, &c->origin, TAG_ORIGIN, EPOLLOUT, true);
        watch(p, c, &c->client, TAG_CLIENT, 0, true);
        if (c->failed)
            conn_close(p, c, NULL);
        return;
    }
    refuse(p, c, 502, "Bad Gateway", "could not connect to %s:%u", c->host, c->port);
}

static void on_connect_ready(egress_proxy *p, conn *c) {
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(c->origin.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        soerr = errno;
    if (soerr == 0) {
        unwatch(p, &c->origin);
        connected(p, c);
    } else {
        try_connect(p, c);
    }
}

/* Every address must pass: one private address among public ones refuses
 * the name (otherwise which one gets used would decide the check). */
static void check_addresses(egress_proxy *p, conn *c) {
    if (c->naddrs == 0) {
        refuse(p, c, 502, "Bad Gateway", "could not resolve %s", c->host);
        return;
    }
    for (size_t i = 0; i < c->naddrs; i++) {
        egress_verdict v =
            egress_check_address(&p->cfg.policy, (struct sockaddr *)&c->addrs[i], c->addr_lens[i]);
        if (v != EGRESS_ALLOW) {
            address_text(&c->addrs[i], c->address, sizeof c->address);
            refuse_verdict(p, c, v);
            return;
        }
    }
    c->next_addr = 0;
    try_connect(p, c);
}

static void add_address(conn *c, const struct sockaddr_storage *ss, socklen_t len) {
    if (c->naddrs >= EGRESS_MAX_ADDRS || len > sizeof *ss)
        return;
    memset(&c->addrs[c->naddrs], 0, sizeof c->addrs[c->naddrs]);
    memcpy(&c->addrs[c->naddrs], ss, len);
    c->addr_lens[c->naddrs++] = len;
}

static void resolve(egress_proxy *p, conn *c) {
    c->naddrs = 0;
    const egress_host_entry *e = egress_host_lookup(&p->cfg, c->host);
    struct sockaddr_storage ss;
    socklen_t len;
    if (e) {
        add_address(c, &e->addr, e->addr_len);
        check_addresses(p, c);
        return;
    }
    if (parse_literal(c->host, &ss, &len)) {
        add_address(c, &ss, len);
        check_addresses(p, c);
        return;
    }
    uint64_t token = (uint64_t)c->slot << 32 | c->gen;
    if (!egress_resolver_submit(p->resolver, token, c->host)) {
        refuse(p, c, 503, "Service Unavailable", "too many DNS lookups in progress");
        return;
    }
    c->state = ST_RESOLVE;
    c->deadline_ms = now_ms() + p->cfg.idle_timeout_ms;
    watch(p, c, &c->client, TAG_CLIENT, 0, true);
    if (c->failed)
        conn_close(p, c, NULL);
}

static void on_resolved(egress_proxy *p, const egress_resolution *r) {
    uint32_t slot = (uint32_t)(r->token >> 32), gen = (uint32_t)r->token;
    if (slot >= p->nslots || !p->slots[slot])
        return;
    conn *c = p->slots[slot];
    if (c->gen != gen || c->state != ST_RESOLVE)
        return; /* the connection this was for is gone */
    if (r->gai_error != 0) {
        refuse(p, c, 502, "Bad Gateway", "could not resolve %s", c->host);
        return;
    }
    c->naddrs = 0;
    size_t n = r->naddrs < EGRESS_MAX_ADDRS ? r->naddrs : EGRESS_MAX_ADDRS;
    for (size_t i = 0; i < n; i++)
        add_address(c, &r->addrs[i], r->addr_lens[i]);
    check_addresses(p, c);
}

static void drain_resolver(egress_proxy *p) {
    uint64_t v;
    while (read(p->resolver_fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    /* Reset first, take after: a result posted in between makes the
     * eventfd readable again, so none is left behind. */
    while (egress_resolver_take(p->resolver, &p->resolution))
        on_resolved(p, &p->resolution);
}

/* ---- the request head ------------------------------------------------------------ */

/* The head is complete and parsed: record it, check it, prepare the
 * rewritten head and the body framing, and go on to resolving. */
static void accept_request(egress_proxy *p, conn *c, const http_request *req) {
    snprintf(c->method, sizeof c->method, "%s", req->method);
    snprintf(c->host, sizeof c->host, "%s", req->host);
    c->port = req->port;
    c->is_connect = req->is_connect;
    struct sockaddr_storage ss;
    socklen_t len;
    c->host_is_name = !parse_literal(c->host, &ss, &len);

    egress_verdict v = egress_check_name(&p->cfg.policy, c->host, c->port);
    if (v != EGRESS_ALLOW) {
        refuse_verdict(p, c, v);
        return;
    }
    if (p->cfg.max_bytes && p->stats.bytes >= p->cfg.max_bytes) {
        /* said in words rather than by a connection cut right after "allow" */
        refuse(p, c, 403, "Forbidden",
               "the egress byte limit of this execution (%llu bytes) is used up",
               (unsigned long long)p->cfg.max_bytes);
        return;
    }
    if (c->is_connect) {
        c->up.start = req->head_len; /* what follows is the start of the tunnel */
        resolve(p, c);
        return;
    }
    if (!http_host_matches(req)) {
        refuse(p, c, 403, "Forbidden", "the Host header does not match the request URL");
        return;
    }
    http_added_header add[EGRESS_MAX_HEADER_GRANTS];
    size_t nadd = egress_headers_for(&p->cfg, c->host, add, EGRESS_MAX_HEADER_GRANTS);
    size_t cap = req->head_len + 1024;
    for (size_t i = 0; i < nadd; i++)
        cap += strlen(add[i].name) + strlen(add[i].value) + 4;
    c->pre = malloc(cap);
    if (!c->pre) {
        refuse(p, c, 503, "Service Unavailable", "out of memory");
        return;
    }
    c->pre_len = http_rewrite_request(req, add, nadd, (char *)c->pre, cap);
    if (c->pre_len == 0 || c->pre_len > cap) {
        /* Either the head does not fit, or a grant is one the rewrite
         * refuses (a Host or framing header): tell which. */
        if (http_rewrite_request(req, NULL, 0, (char *)c->pre, cap) == 0)
            refuse(p, c, 431, "Request Header Fields Too Large",
                   "the request head is too large once rewritten");
        else
            refuse(p, c, 500, "Internal Server Error",
                   "the headers the egress policy injects for %s are invalid", c->host);
        return;
    }
    /* The body bytes that came with the head; the rest is dropped. */
    size_t extra = c->up.end - req->head_len;
    c->up.start = req->head_len;
    if (req->chunked) {
        c->chunked = true;
        http_chunked_init(&c->chunk);
    } else {
        c->body_left = req->has_content_length ? req->content_length : 0;
        c->body_done = c->body_left == 0;
    }
    keep_body(c, extra);
    if (c->failed) {
        c->failed = false;
        refuse(p, c, 400, "Bad Request", "malformed request: malformed chunked body");
        return;
    }
    resolve(p, c);
}

static void read_head(egress_proxy *p, conn *c) {
    size_t have = c->up.end;
    if (have >= HTTP_HEAD_MAX) { /* refused already; a 0-byte read would look like EOF */
        conn_close(p, c, NULL);
        return;
    }
    bool eof = false;
    size_t n = read_into(c, c->client.fd, &c->up, HTTP_HEAD_MAX - have, &eof, false);
    if (c->failed || (eof && n == 0)) {
        conn_close(p, c, NULL); /* gone before a complete request: nothing to decide */
        return;
    }
    if (n == 0)
        return;
    http_request *req = malloc(sizeof *req);
    if (!req) {
        conn_close(p, c, NULL);
        return;
    }
    const char *why = NULL;
    http_head_result r = http_parse_request((const char *)c->up.data, c->up.end, req, &why);
    switch (r) {
    case HTTP_HEAD_NEED_MORE:
        if (c->up.end >= HTTP_HEAD_MAX) /* never trust the parser to notice */
            refuse(p, c, 431, "Request Header Fields Too Large",
                   "the request head is larger than %d bytes", HTTP_HEAD_MAX);
        break;
    case HTTP_HEAD_TOO_LARGE:
        refuse(p, c, 431, "Request Header Fields Too Large",
               "the request head is larger than %d bytes", HTTP_HEAD_MAX);
        break;
    case HTTP_HEAD_MALFORMED:
        refuse(p, c, 400, "Bad Request", "malformed request: %s", why ? why : "unknown");
        break;
    case HTTP_HEAD_OK:
        if (req->head_len == 0 || req->head_len > c->up.end)
            refuse(p, c, 400, "Bad Request", "malformed request: bad head length");
        else
            accept_request(p, c, req);
        break;
    }
    free(req);
}

/* ---- refusing and draining ------------------------------------------------------ */

static void on_refuse_writable(egress_proxy *p, conn *c) {
    if (c->down.end > c->down.start) {
        size_t n = write_from(c, c->client.fd, c->down.data + c->down.start,
                              c->down.end - c->down.start);
        c->down.start += n;
    }
    if (c->failed) {
        conn_close(p, c, NULL);
        return;
    }
    if (c->down.end > c->down.start)
        return;
    shutdown(c->client.fd, SHUT_WR);
    c->state = ST_DRAIN;
    watch(p, c, &c->client, TAG_CLIENT, EPOLLIN, true);
    if (c->failed)
        conn_close(p, c, NULL);
}

static void on_drain_readable(egress_proxy *p, conn *c) {
    uint8_t scratch[4096];
    ssize_t n = recv(c->client.fd, scratch, sizeof scratch, 0);
    if (n > 0) {
        c->drained += (uint64_t)n;
        if (c->drained <= DRAIN_MAX)
            return;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return;
    }
    conn_close(p, c, NULL);
}

/* ---- events --------------------------------------------------------------------- */

static void on_conn_event(egress_proxy *p, conn *c, bool client_side, uint32_t events) {
    bool hangup = events & (EPOLLHUP | EPOLLERR);
    switch (c->state) {
    case ST_HEAD:
        read_head(p, c);
        break;
    case ST_RESOLVE:
        if (hangup)
            conn_close(p, c, NULL); /* the client is gone */
        break;
    case ST_CONNECT:
        if (client_side) {
            if (hangup) {
                conn_close(p, c, NULL);
            }
        } else {
            on_connect_ready(p, c);
        }
        break;
    case ST_PEEK:
    case ST_TUNNEL:
        pump(p, c);
        break;
    case ST_REFUSE:
        on_refuse_writable(p, c);
        break;
    case ST_DRAIN:
        on_drain_readable(p, c);
        break;
    }
}

/* Over max_connections and out of refusing slots: answer 503 at once,
 * without keeping the socket. What the client already sent is read first
 * (bounded), so the close is less likely to turn into a reset that hides
 * the answer. */
static void refuse_over_limit(egress_proxy *p, int fd) {
    uint8_t scratch[4096];
    for (int i = 0; i < 4 && recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0; i++)
        ;
    char text[128], resp[512];
    snprintf(text, sizeof text, "too many connections (limit %u)", p->cfg.max_connections);
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; "
                     "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n"
                     "airlock: %s\n",
                     strlen(text) + strlen("airlock: \n"), text);
    if (n > 0 && (size_t)n < sizeof resp) {
        ssize_t w = send(fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w; /* a fresh socket's send buffer holds it; if not, the close says enough */
    }
    shutdown(fd, SHUT_WR);
    close(fd);
    count_denied(p);
    log_decision(p, NULL, "deny", text);
}

/* A client socket arrived from the relay. */
static void take_client(egress_proxy *p, int fd) {
    struct stat st;
    int type = 0;
    socklen_t len = sizeof type;
    if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
        !set_nonblocking(fd)) {
        close(fd);
        return;
    }
    bool over = p->nconns >= p->cfg.max_connections;
    conn *c = NULL;
    if (!over || p->nrefusing < MAX_REFUSING)
        c = conn_new(p, fd, over);
    if (!c) {
        refuse_over_limit(p, fd);
        return;
    }
    if (over) {
        /* answered like any refusal: written, half-closed, drained, so a
         * client that sends its request after the answer still reads it */
        refuse(p, c, 503, "Service Unavailable", "too many connections (limit %u)",
               p->cfg.max_connections);
        if (c->failed)
            conn_close(p, c, NULL);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails on AF_UNIX: fine */
    watch(p, c, &c->client, TAG_CLIENT, EPOLLIN, true);
    if (c->failed)
        conn_close(p, c, NULL);
}

static void close_relay(egress_proxy *p, size_t i) {
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->relays[i], NULL);
    close(p->relays[i]);
    p->relays[i] = p->relays[--p->nrelays];
}

/* Messages from a relay: one byte + one fd each. A message without an fd
 * is ignored; extra fds are closed; EOF or an error closes the relay's
 * connection. */
static void on_relay(egress_proxy *p, int fd) {
    size_t idx = 0;
    while (idx < p->nrelays && p->relays[idx] != fd)
        idx++;
    if (idx == p->nrelays)
        return;
    for (int m = 0; m < RECV_PER_WAKEUP; m++) {
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
            char buf[CMSG_SPACE(sizeof(int) * MAX_FDS_PER_MSG)];
            struct cmsghdr align;
        } u;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = u.buf, .msg_controllen = sizeof u.buf};
        ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        int client = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
                cm->cmsg_len < CMSG_LEN(0))
                continue;
            size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < nfds; i++) {
                int got;
                memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof got);
                if (client < 0 && n > 0)
                    client = got;
                else
                    close(got);
            }
        }
        if (client >= 0)
            take_client(p, client);
        if (n <= 0) {
            close_relay(p, idx);
            return;
        }
    }
}

static void on_listen(egress_proxy *p) {
    for (int i = 0; i < RECV_PER_WAKEUP; i++) {
        int fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag_of(TAG_RELAY, 0, (uint32_t)fd)};
        if (p->nrelays >= MAX_RELAYS || epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            continue;
        }
        p->relays[p->nrelays++] = fd;
    }
}

/* ---- timeouts ----------------------------------------------------------------------- */

static void on_timeout(egress_proxy *p, conn *c) {
    switch (c->state) {
    case ST_HEAD:
    case ST_REFUSE:
    case ST_DRAIN:
        conn_close(p, c, NULL);
        break;
    case ST_RESOLVE:
        refuse(p, c, 502, "Bad Gateway", "could not resolve %s (timed out)", c->host);
        break;
    case ST_CONNECT:
        try_connect(p, c);
        break;
    case ST_PEEK:
        deny_and_close(p, c, "no TLS ClientHello within the idle timeout");
        break;
    case ST_TUNNEL:
        conn_close(p, c, "idle timeout");
        break;
    }
}

/* Close what is past its deadline; return the epoll timeout until the next. */
static int sweep(egress_proxy *p) {
    int64_t now = now_ms();
    for (uint32_t i = 0; i < p->nslots; i++) {
        conn *c = p->slots[i];
        if (c && c->deadline_ms <= now)
            on_timeout(p, c);
    }
    int64_t next = INT64_MAX;
    for (uint32_t i = 0; i < p->nslots; i++)
        if (p->slots[i] && p->slots[i]->deadline_ms < next)
            next = p->slots[i]->deadline_ms;
    if (next == INT64_MAX)
        return -1;
    int64_t wait = next - now_ms();
    if (wait < 0)
        return 0;
    return wait > INT_MAX ? INT_MAX : (int)wait;
}

/* ---- the loop ----------------------------------------------------------------------- */

static void dispatch(egress_proxy *p, const struct epoll_event *ev, bool *stop) {
    enum tag_kind kind = (enum tag_kind)(ev->data.u64 >> 60);
    uint32_t slot = (uint32_t)(ev->data.u64 >> 32) & (SLOT_LIMIT - 1);
    uint32_t low = (uint32_t)ev->data.u64;
    switch (kind) {
    case TAG_STOP:
        *stop = true;
        break;
    case TAG_LISTEN:
        on_listen(p);
        break;
    case TAG_RESOLVER:
        drain_resolver(p);
        break;
    case TAG_RELAY:
        on_relay(p, (int)low);
        break;
    case TAG_CLIENT:
    case TAG_ORIGIN:
        if (slot < p->nslots && p->slots[slot] && p->slots[slot]->gen == low)
            on_conn_event(p, p->slots[slot], kind == TAG_CLIENT, ev->events);
        break;
    }
}

static void *loop(void *arg) {
    egress_proxy *p = arg;
    struct epoll_event events[MAX_EVENTS];
    bool stop = false;
    int timeout = -1;
    while (!stop) {
        int n = epoll_wait(p->epoll_fd, events, MAX_EVENTS, timeout);
        if (n < 0 && errno != EINTR)
            break; /* cannot happen with a valid epoll fd; the stop still joins */
        for (int i = 0; i < n && !stop; i++)
            dispatch(p, &events[i], &stop);
        timeout = sweep(p);
    }
    for (uint32_t i = 0; i < p->nslots; i++)
        if (p->slots[i])
            conn_close(p, p->slots[i], "proxy stopped");
    while (p->nrelays > 0)
        close_relay(p, p->nrelays - 1);
    return NULL;
}

/* ---- start / stop ---------------------------------------------------------------------- */

static bool add_fd(egress_proxy *p, int fd, enum tag_kind kind) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag_of(kind, 0, 0)};
    return epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

/* The Unix socket: a stale socket file (a crashed earlier run) is
 * replaced, anything else at the path is an error, never deleted. The
 * directory is expected to be private (0700): between bind and chmod the
 * socket has the umask's mode. */
static bool listen_unix(egress_proxy *p, const char *path, al_error *err) {
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof sun.sun_path)
        return egress_error(err, AL_ERR_ARGUMENT, "egress: socket path too long: %.120s", path);
    memcpy(sun.sun_path, path, len + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return egress_error(err, AL_ERR_SYSTEM, "egress: %.160s exists and is not a socket",
                             path);
        unlink(path);
    }
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0)
        return egress_error(err, AL_ERR_SYSTEM, "egress: socket: %s", strerror(errno));
    if (bind(p->listen_fd, (struct sockaddr *)&sun, sizeof sun) < 0)
        return egress_error(err, AL_ERR_SYSTEM, "egress: bind %.160s: %s", path, strerror(errno));
    p->path = strdup(path);
    if (!p->path)
        return egress_error(err, AL_ERR_NOMEM, "egress: out of memory");
    if (chmod(path, 0600) < 0 || listen(p->listen_fd, 64) < 0)
        return egress_error(err, AL_ERR_SYSTEM, "egress: listen %.160s: %s", path, strerror(errno));
    return true;
}

static bool setup(egress_proxy *p, const char *path, al_error *err) {
    if (!listen_unix(p, path, err))
        return false;
    p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    p->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->epoll_fd < 0 || p->stop_fd < 0)
        return egress_error(err, AL_ERR_SYSTEM, "egress: epoll/eventfd: %s", strerror(errno));
    p->resolver = egress_resolver_new(2, &p->resolver_fd);
    if (!p->resolver)
        return egress_error(err, AL_ERR_SYSTEM, "egress: resolver threads: %s", strerror(errno));
    if (!add_fd(p, p->stop_fd, TAG_STOP) || !add_fd(p, p->listen_fd, TAG_LISTEN) ||
        !add_fd(p, p->resolver_fd, TAG_RESOLVER))
        return egress_error(err, AL_ERR_SYSTEM, "egress: epoll_ctl: %s", strerror(errno));
    /* The proxy thread takes no signals: they belong to the embedder. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, loop, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return egress_error(err, AL_ERR_SYSTEM, "egress: proxy thread: %s", strerror(rc));
    p->thread_started = true;
    return true;
}

static void teardown(egress_proxy *p) {
    egress_resolver_free(p->resolver); /* closes resolver_fd */
    close_fd(&p->listen_fd);
    close_fd(&p->epoll_fd);
    close_fd(&p->stop_fd);
    if (p->path)
        unlink(p->path);
    free(p->path);
    free(p->slots);
    free(p->slot_gens);
    egress_config_free(&p->cfg);
    pthread_mutex_destroy(&p->stats_lock);
    free(p);
}

void egress_proxy_stats(egress_proxy *p, egress_stats *out) {
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    pthread_mutex_lock(&p->stats_lock);
    *out = p->stats;
    pthread_mutex_unlock(&p->stats_lock);
}

egress_proxy *egress_proxy_start(egress_config *cfg, const char *unix_path, al_error *err) {
    if (!cfg || !unix_path) {
        if (cfg)
            egress_config_free(cfg);
        egress_error(err, AL_ERR_ARGUMENT, "egress: no configuration or socket path");
        return NULL;
    }
    egress_proxy *p = calloc(1, sizeof *p);
    if (!p) {
        egress_config_free(cfg);
        egress_error(err, AL_ERR_NOMEM, "egress: out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    cfg->log_fd = -1;
    if (p->cfg.max_connections == 0)
        p->cfg.max_connections = EGRESS_DEFAULT_MAX_CONNECTIONS;
    if (p->cfg.idle_timeout_ms == 0)
        p->cfg.idle_timeout_ms = EGRESS_DEFAULT_IDLE_TIMEOUT_MS;
    p->listen_fd = p->epoll_fd = p->stop_fd = p->resolver_fd = -1;
    pthread_mutex_init(&p->stats_lock, NULL);
    if (!setup(p, unix_path, err)) {
        teardown(p);
        return NULL;
    }
    return p;
}

void egress_proxy_stop(egress_proxy *p, egress_stats *stats) {
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!p)
        return;
    uint64_t one = 1;
    ssize_t w;
    do
        w = write(p->stop_fd, &one, sizeof one);
    while (w < 0 && errno == EINTR);
    if (p->thread_started)
        pthread_join(p->thread, NULL);
    if (stats)
        *stats = p->stats;
    teardown(p);
}
