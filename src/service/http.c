/*
 * http.c — airlockd's HTTP listeners (libmicrohttpd): a Unix socket and a
 * loopback TCP port, each an MHD daemon with its own internal polling
 * thread (epoll), requests handed to api.c.
 *
 * Request path:
 *   1. headers: the body cap (max_body_bytes) is checked against
 *      Content-Length at once (413 before any body is read), and the body
 *      is accumulated only up to it: past the cap nothing more is kept and
 *      the request is answered 413 (see take_body);
 *   2. routes that cannot block (health, metrics, session create/list/get)
 *      are answered on the MHD thread;
 *   3. routes that may block (svc_api_is_execution) become a job: the
 *      connection is suspended, the job submitted to the worker pool, and
 *      the worker queues the response and resumes the connection. A full
 *      pool answers 429 with Retry-After at once: the MHD thread never
 *      waits for a worker;
 *   4. an execution whose body says "stream": true is answered at once
 *      with text/event-stream; the worker's output goes through a bounded
 *      buffer (SSE_BUFFER_MAX) to a content reader that suspends the
 *      connection while the buffer is empty, and the worker resumes it. A
 *      slow client makes the worker wait for room, up to SSE_STALL_MS per
 *      chunk; past that the client is considered gone and further output
 *      events are dropped (the final "result" event still carries the whole
 *      output). Events: "stdout", "stderr" (data: a JSON string), then one
 *      "result" (data: the result JSON) or "error" (an error body).
 *
 * Invariants:
 *  - a job owns copies of everything it reads (headers, body): a stopping
 *    daemon may answer its client before the worker is done with it;
 *  - exactly one response per job: whoever wins the job's `answered` flag
 *    (the worker, the pool's cancel, or svc_http_stop at the end of the
 *    cancel wait) queues it and resumes the connection; nobody touches the
 *    connection after that;
 *  - shutdown (svc_http_stop): stop accepting, drain until the deadline,
 *    then cancel the running executions (svc_cancel_all) and wait for them
 *    with the listeners still serving, so a cancelled execution's client
 *    gets its result (200, status "cancelled"; a stream its "result"
 *    event) rather than a 503; only a job still running after
 *    SVC_CANCEL_WAIT_MS is answered 503;
 *  - MHD functions are never called with h->mu held (MHD calls back into us
 *    from its own locks);
 *  - MHD_suspend_connection is called only from MHD's own callbacks, and
 *    before the job that will resume the connection can see it suspended;
 *  - the svc_http object lives until svc_http_stop and every job is done
 *    (reference counted): a worker past the deadline still finds it.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "service.h"

#define SSE_BUFFER_MAX ((size_t)256 << 10) /* output waiting for a slow client */
#define SSE_STALL_MS 10000                 /* how long a worker waits for room */
#define CONNECTION_LIMIT 512               /* per listener */
#define CONNECTION_TIMEOUT_S 120           /* idle or slow clients */
#define RETRY_AFTER_FULL "2"               /* seconds, when the pool is full */
#define STOP_FLUSH_MS 2000                 /* answered clients may finish reading */
#define DISCARD_MAX ((size_t)64 << 20)     /* oversized body read and dropped, at most */

typedef struct svc_http svc_http;

typedef struct listener {
    svc_http *h;
    bool via_unix;
    int fd;                       /* our listening socket (MHD uses it) */
    struct MHD_Daemon *d;
} listener;

struct svc_http {
    svc *s;
    svc_api_state *state;
    listener unix_l, tcp_l;
    char unix_path[sizeof ((struct sockaddr_un *)0)->sun_path];
    pthread_mutex_t mu;           /* jobs, conns, stopping, refs */
    pthread_cond_t changed;       /* a connection ended */
    struct job *jobs;             /* submitted, not yet finished */
    unsigned conns;               /* requests MHD has not completed */
    unsigned refs;                /* 1 (svc_http_start .. stop) + live jobs */
    bool stopping;
};

/* ---- the streamed response ---------------------------------------------------------- */

typedef struct sse {
    pthread_mutex_t mu;
    pthread_cond_t room;          /* the reader took bytes, or the client went */
    struct MHD_Connection *conn;
    uint8_t *buf;
    size_t len, cap, off;         /* unread bytes: buf[off .. len) */
    bool suspended;               /* the reader suspended conn and waits for us */
    bool finished;                /* the last event is in buf */
    bool closed;                  /* MHD freed the response: nobody reads */
    bool stalled;                 /* the client stopped reading; output dropped */
    uint8_t pending[3][4];        /* per stream: a UTF-8 sequence cut by a chunk */
    size_t npending[3];
    unsigned refs;                /* the response + the job */
} sse;

static sse *sse_new(struct MHD_Connection *conn) {
    sse *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    pthread_mutex_init(&x->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->room, &ca);
    pthread_condattr_destroy(&ca);
    x->conn = conn;
    x->refs = 2;
    return x;
}

static void sse_unref(sse *x) {
    pthread_mutex_lock(&x->mu);
    bool last = --x->refs == 0;
    pthread_mutex_unlock(&x->mu);
    if (!last) return;
    pthread_cond_destroy(&x->room);
    pthread_mutex_destroy(&x->mu);
    free(x->buf);
    free(x);
}

static bool sse_reserve(sse *x, size_t more) {
    if (x->off > 0 && x->off == x->len) x->off = x->len = 0;
    if (x->len + more <= x->cap) return true;
    if (x->off > 0) { /* compact before growing */
        memmove(x->buf, x->buf + x->off, x->len - x->off);
        x->len -= x->off;
        x->off = 0;
        if (x->len + more <= x->cap) return true;
    }
    size_t cap = x->cap ? x->cap : 4096;
    while (cap < x->len + more) cap *= 2;
    uint8_t *b = realloc(x->buf, cap);
    if (!b) return false;
    x->buf = b;
    x->cap = cap;
    return true;
}

static void put(sse *x, const void *p, size_t n) {
    if (!sse_reserve(x, n)) return;
    memcpy(x->buf + x->len, p, n);
    x->len += n;
}

/* Length of the well-formed UTF-8 sequence at s (1..4); 0: ill-formed;
 * -1: a well-formed prefix cut short by the end of the data. */
static int utf8_len(const uint8_t *s, size_t avail) {
    uint8_t b = s[0], lo = 0x80, hi = 0xBF;
    int need;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) need = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else return 0;
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= avail) return -1;
        uint8_t c = s[i];
        if (i == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
    }
    return need;
}

/* data as the body of a JSON string: escapes, U+FFFD for ill-formed bytes.
 * A sequence cut at the end is kept in pending (unless final). */
static void put_json_text(sse *x, int stream, const uint8_t *data, size_t len, bool final) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < len) {
        int n = utf8_len(data + i, len - i);
        if (n == -1 && !final && len - i < 4) {
            memcpy(x->pending[stream], data + i, len - i);
            x->npending[stream] = len - i;
            return;
        }
        uint8_t c = data[i];
        if (n <= 0) {
            put(x, "\\ufffd", 6);
            i++;
        } else if (n > 1) {
            put(x, data + i, (size_t)n);
            i += (size_t)n;
        } else if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(x, e, 2);
            i++;
        } else if (c == '\n') {
            put(x, "\\n", 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(x, e, 6);
            i++;
        } else {
            put(x, &c, 1);
            i++;
        }
    }
}

/* One output event; with the pending bytes of its stream in front. */
static void put_output_event(sse *x, int stream, const uint8_t *data, size_t len) {
    uint8_t joined[4 + 64];
    put(x, stream == 1 ? "event: stdout\ndata: \"" : "event: stderr\ndata: \"", 21);
    size_t np = x->npending[stream];
    x->npending[stream] = 0;
    if (np) { /* complete the cut sequence from the new data's first bytes */
        size_t take = len < 3 ? len : 3;
        memcpy(joined, x->pending[stream], np);
        memcpy(joined + np, data, take);
        int n = utf8_len(joined, np + take);
        size_t used = n > 0 && (size_t)n > np ? (size_t)n - np : 0;
        put_json_text(x, stream, joined, n > 0 ? (size_t)n : np, true);
        data += used;
        len -= used;
    }
    put_json_text(x, stream, data, len, false);
    put(x, "\"\n\n", 3);
}

static uint64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Wait (x->mu held) until the buffer has room or the client is gone. */
static void wait_for_room(sse *x) {
    uint64_t until = mono_ms() + SSE_STALL_MS;
    struct timespec ts = {.tv_sec = (time_t)(until / 1000), .tv_nsec = (long)(until % 1000) * 1000000L};
    while (!x->closed && !x->stalled && x->len - x->off >= SSE_BUFFER_MAX)
        if (pthread_cond_timedwait(&x->room, &x->mu, &ts) == ETIMEDOUT) x->stalled = true;
}

/* After appending (x->mu held): whether the reader must be resumed. */
static bool take_resume(sse *x) {
    bool resume = x->suspended && !x->closed;
    x->suspended = false;
    return resume;
}

/* svc_output_fn: the worker's output, as events. */
static void sse_output(void *ctx, int stream, const uint8_t *data, size_t len) {
    sse *x = ctx;
    if (stream != 1 && stream != 2) return;
    pthread_mutex_lock(&x->mu);
    wait_for_room(x);
    bool resume = false;
    if (!x->closed && !x->stalled && !x->finished) {
        put_output_event(x, stream, data, len);
        resume = take_resume(x);
    }
    pthread_mutex_unlock(&x->mu);
    if (resume) MHD_resume_connection(x->conn);
}

/* The last event: "result" for a 200, else "error" (same JSON body). */
static void sse_finish(sse *x, const svc_http_response *r) {
    pthread_mutex_lock(&x->mu);
    bool resume = false;
    if (!x->finished) {
        for (int s = 1; s <= 2; s++) /* a sequence cut at the very end */
            if (x->npending[s]) {
                size_t np = x->npending[s];
                x->npending[s] = 0;
                put(x, s == 1 ? "event: stdout\ndata: \"" : "event: stderr\ndata: \"", 21);
                put_json_text(x, s, x->pending[s], np, true);
                put(x, "\"\n\n", 3);
            }
        put(x, r->status == 200 ? "event: result\ndata: " : "event: error\ndata: ", r->status == 200 ? 20 : 19);
        if (r->body_len) put(x, r->body, r->body_len);
        else put(x, "{}", 2);
        put(x, "\n\n", 2);
        x->finished = true;
        resume = take_resume(x);
    }
    pthread_mutex_unlock(&x->mu);
    if (resume) MHD_resume_connection(x->conn);
}

/* MHD's content reader (MHD thread): bytes, end of stream, or suspend. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    sse *x = cls;
    pthread_mutex_lock(&x->mu);
    ssize_t n = 0;
    size_t have = x->len - x->off;
    if (have > 0) {
        size_t take = have < max ? have : max;
        memcpy(buf, x->buf + x->off, take);
        x->off += take;
        n = (ssize_t)take;
        pthread_cond_broadcast(&x->room);
    } else if (x->finished) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* nothing yet: sleep until the worker resumes us (under x->mu, so
         * the worker cannot resume before we are suspended) */
        x->suspended = true;
        MHD_suspend_connection(x->conn);
    }
    pthread_mutex_unlock(&x->mu);
    return n;
}

static void sse_response_freed(void *cls) {
    sse *x = cls;
    pthread_mutex_lock(&x->mu);
    x->closed = true;
    pthread_cond_broadcast(&x->room);
    pthread_mutex_unlock(&x->mu);
    sse_unref(x);
}

/* ---- jobs ---------------------------------------------------------------------------- */

typedef struct job {
    struct job *next, *prev;
    svc_http *h;
    struct MHD_Connection *conn;  /* suspended until answered (non-streamed) */
    sse *stream;                  /* or the streamed response */
    atomic_bool answered;
    atomic_uint refs;             /* the worker (or canceller) + svc_http_stop's look */
    svc_http_request req;         /* points into the copies below */
    char *strings[9];
    uint8_t *body;
} job;

static void http_unref(svc_http *h);

static void job_free(job *j) {
    for (size_t i = 0; i < sizeof j->strings / sizeof j->strings[0]; i++) free(j->strings[i]);
    free(j->body);
    if (j->stream) sse_unref(j->stream);
    free(j);
}

static void job_unref(job *j) {
    if (atomic_fetch_sub(&j->refs, 1) == 1) job_free(j);
}

static void job_unlink(job *j) {
    svc_http *h = j->h;
    pthread_mutex_lock(&h->mu);
    if (j->prev) j->prev->next = j->next;
    else h->jobs = j->next;
    if (j->next) j->next->prev = j->prev;
    j->next = j->prev = NULL;
    pthread_mutex_unlock(&h->mu);
    http_unref(h);
}

static void add_header(struct MHD_Response *m, const char *name, const char *value) {
    if (value && value[0]) MHD_add_response_header(m, name, value);
}

/* The MHD response for r (its body moves into it). */
static struct MHD_Response *mhd_response(svc_http_response *r) {
    struct MHD_Response *m;
    if (r->body && r->body_len) {
        m = MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
        if (m) r->body = NULL;
    } else {
        m = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!m) return NULL;
    add_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, r->body_len ? r->content_type : NULL);
    add_header(m, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
    add_header(m, "Mcp-Session-Id", r->mcp_session);
    add_header(m, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->status == 401) add_header(m, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    add_header(m, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    add_header(m, "X-Content-Type-Options", "nosniff");
    return m;
}

static bool queue(struct MHD_Connection *conn, svc_http_response *r) {
    struct MHD_Response *m = mhd_response(r);
    svc_http_response_free(r);
    if (!m) return false;
    bool ok = MHD_queue_response(conn, (unsigned)r->status, m) == MHD_YES;
    MHD_destroy_response(m);
    return ok;
}

static void error_response(svc_http_response *r, int status, const char *code,
                           const char *message) {
    memset(r, 0, sizeof *r);
    r->status = status;
    json_t *e = svc_error_json(code, "%s", message);
    char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    if (text) {
        r->body = (uint8_t *)text;
        r->body_len = strlen(text);
        snprintf(r->content_type, sizeof r->content_type, "application/json");
    }
}

/* Answer j's client with r, unless someone already did. */
static void answer(job *j, svc_http_response *r) {
    if (atomic_exchange(&j->answered, true)) return;
    if (j->stream) {
        sse_finish(j->stream, r);
        return;
    }
    queue(j->conn, r);
    MHD_resume_connection(j->conn);
}

/* svc_job_fn: the worker's side. */
static void job_run(void *arg) {
    job *j = arg;
    svc_http_response r;
    svc_api_handle(j->h->s, &j->req, &r);
    answer(j, &r);
    svc_http_response_free(&r);
    job_unlink(j);
    job_unref(j);
}

/* svc_job_fn: a queued job the pool gave up on at the shutdown deadline. */
static void job_cancel(void *arg) {
    job *j = arg;
    svc_http_response r;
    error_response(&r, 503, "unavailable", "the daemon is shutting down");
    snprintf(r.retry_after, sizeof r.retry_after, "5");
    answer(j, &r);
    svc_http_response_free(&r);
    job_unlink(j);
    job_unref(j);
}

/* ---- connections --------------------------------------------------------------------- */

typedef struct conn_req {
    listener *l;
    uint8_t *body;
    size_t len, cap, max;         /* max: the body cap for this request */
    bool responded;               /* a response is queued (413, 503, ...) */
    bool too_large;               /* the body passed max: 413 at its end */
    size_t discarded;             /* bytes dropped since */
    bool dispatched;              /* a job owns the rest */
} conn_req;

static char *dup_opt(const char *s) { return s ? strdup(s) : NULL; }

static const char *header(struct MHD_Connection *c, const char *name) {
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* A job holding copies of the request; NULL when out of memory. */
static job *job_new(svc_http *h, struct MHD_Connection *conn, conn_req *cr, const char *method,
                    const char *url) {
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    const char *src[9] = {method, url, NULL, header(conn, MHD_HTTP_HEADER_AUTHORIZATION),
                          header(conn, "Origin"), header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
                          header(conn, "Mcp-Session-Id"), header(conn, "MCP-Protocol-Version"),
                          NULL};
    bool ok = true;
    for (int i = 0; i < 9; i++) {
        j->strings[i] = dup_opt(src[i]);
        if (src[i] && !j->strings[i]) ok = false;
    }
    if (!ok) {
        job_free(j);
        return NULL;
    }
    j->h = h;
    j->conn = conn;
    atomic_init(&j->answered, false);
    atomic_init(&j->refs, 1);
    j->body = cr->body; /* moved */
    cr->body = NULL;
    j->req = (svc_http_request){
        .method = j->strings[0], .path = j->strings[1], .query = NULL,
        .authorization = j->strings[3], .origin = j->strings[4], .content_type = j->strings[5],
        .mcp_session = j->strings[6], .mcp_protocol = j->strings[7], .body = j->body,
        .body_len = cr->len, .via_unix = cr->l->via_unix, .state = h->state,
    };
    return j;
}

static enum MHD_Result respond_now(struct MHD_Connection *conn, conn_req *cr,
                                   svc_http_response *r) {
    cr->responded = true;
    return queue(conn, r) ? MHD_YES : MHD_NO;
}

static enum MHD_Result respond_error_now(struct MHD_Connection *conn, conn_req *cr, int status,
                                         const char *code, const char *msg,
                                         const char *retry_after) {
    svc_http_response r;
    error_response(&r, status, code, msg);
    if (retry_after) snprintf(r.retry_after, sizeof r.retry_after, "%s", retry_after);
    return respond_now(conn, cr, &r);
}

/* Does this execution's body ask for streaming? (a well-formed JSON object
 * with "stream": true; anything else is for api.c to judge) */
static bool wants_stream(const svc_http_request *req) {
    if (!req->method || strcmp(req->method, "POST") != 0) return false;
    size_t n = strlen(req->path);
    if (n < 11 || strcmp(req->path + n - 11, "/executions") != 0) return false;
    if (!req->body || !memmem(req->body, req->body_len, "\"stream\"", 8)) return false;
    json_t *b = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES, NULL);
    bool yes = json_is_object(b) && json_is_true(json_object_get(b, "stream"));
    json_decref(b);
    return yes;
}

static void job_register(svc_http *h, job *j) {
    pthread_mutex_lock(&h->mu);
    j->next = h->jobs;
    if (h->jobs) h->jobs->prev = j;
    h->jobs = j;
    h->refs++;
    pthread_mutex_unlock(&h->mu);
}

static bool stopping(svc_http *h) {
    pthread_mutex_lock(&h->mu);
    bool yes = h->stopping;
    pthread_mutex_unlock(&h->mu);
    return yes;
}

/* The pool refused a job: full (429), or shutting down (503). */
static void refused_response(svc_http *h, svc_http_response *r) {
    if (stopping(h)) {
        error_response(r, 503, "unavailable", "the daemon is shutting down");
        snprintf(r->retry_after, sizeof r->retry_after, "5");
        return;
    }
    svc_metrics_denied(svc_metrics_of(h->s), "queue_full", 1);
    error_response(r, 429, "queue_full", "every worker is busy and the queue is full; retry later");
    snprintf(r->retry_after, sizeof r->retry_after, RETRY_AFTER_FULL);
}

static enum MHD_Result pool_full(struct MHD_Connection *conn, conn_req *cr, svc_http *h) {
    svc_http_response r;
    refused_response(h, &r);
    return respond_now(conn, cr, &r);
}

/* Hand the request to the pool, streamed: the SSE response goes out now. */
static enum MHD_Result dispatch_streamed(struct MHD_Connection *conn, conn_req *cr, job *j) {
    svc_http *h = cr->l->h;
    sse *x = sse_new(conn);
    struct MHD_Response *m = x ? MHD_create_response_from_callback(
                                     MHD_SIZE_UNKNOWN, 4096, sse_read, x, sse_response_freed)
                               : NULL;
    if (!m) {
        if (x) {
            sse_unref(x);
            sse_unref(x);
        }
        job_free(j);
        return respond_error_now(conn, cr, 500, "internal", "out of memory", NULL);
    }
    j->stream = x;
    j->req.on_output = sse_output;
    j->req.output_ctx = x;
    job_register(h, j);
    if (!svc_pool_submit(svc_pool_of(h->s), job_run, j)) {
        MHD_destroy_response(m); /* frees the response's reference to x */
        job_unlink(j);
        job_unref(j);
        return pool_full(conn, cr, h);
    }
    cr->dispatched = true;
    MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(m, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(m, "X-Accel-Buffering", "no");
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, m);
    MHD_destroy_response(m);
    return rc;
}

/* Hand the request to the pool: suspend first, so the worker's resume
 * always finds the connection suspended. */
static enum MHD_Result dispatch(struct MHD_Connection *conn, conn_req *cr, const char *method,
                                const char *url) {
    svc_http *h = cr->l->h;
    job *j = job_new(h, conn, cr, method, url);
    if (!j) return respond_error_now(conn, cr, 500, "internal", "out of memory", NULL);
    if (wants_stream(&j->req)) return dispatch_streamed(conn, cr, j);
    job_register(h, j);
    cr->dispatched = true;
    MHD_suspend_connection(conn);
    if (!svc_pool_submit(svc_pool_of(h->s), job_run, j)) {
        job_unlink(j);
        job_free(j);
        cr->dispatched = false;
        svc_http_response r;
        refused_response(h, &r);
        cr->responded = true;
        queue(conn, &r); /* allowed on a suspended connection */
        MHD_resume_connection(conn);
    }
    return MHD_YES;
}

/* The whole request is in: answer here or hand to the pool. */
static enum MHD_Result complete(struct MHD_Connection *conn, conn_req *cr, const char *method,
                                const char *url) {
    svc_http *h = cr->l->h;
    svc_http_request req = {
        .method = method, .path = url,
        .authorization = header(conn, MHD_HTTP_HEADER_AUTHORIZATION),
        .origin = header(conn, "Origin"),
        .content_type = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
        .mcp_session = header(conn, "Mcp-Session-Id"),
        .mcp_protocol = header(conn, "MCP-Protocol-Version"),
        .body = cr->body, .body_len = cr->len, .via_unix = cr->l->via_unix,
        .state = h->state,
    };
    if (svc_api_is_execution(&req)) return dispatch(conn, cr, method, url);
    svc_http_response r;
    svc_api_handle(h->s, &req, &r);
    return respond_now(conn, cr, &r);
}

/* First call of a request: the body cap, and no new work once stopping. */
static enum MHD_Result begin(listener *l, struct MHD_Connection *conn, void **req_cls) {
    svc_http *h = l->h;
    conn_req *cr = calloc(1, sizeof *cr);
    if (!cr) return MHD_NO;
    cr->l = l;
    svc_lock(h->s);
    cr->max = svc_config_of(h->s)->max_body_bytes;
    svc_unlock(h->s);
    *req_cls = cr;
    pthread_mutex_lock(&h->mu);
    h->conns++;
    bool stop = h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (stop)
        return respond_error_now(conn, cr, 503, "unavailable", "the daemon is shutting down", "5");
    const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || *end || end == cl || n > cr->max)
            return respond_error_now(conn, cr, 413, "payload_too_large",
                                     "the body is larger than max_body_bytes", NULL);
    }
    return MHD_YES;
}

/* Body bytes as they arrive. Past the cap nothing more is kept: MHD lets a
 * response be queued only before the body or after all of it, so the rest
 * of an oversized (chunked) body is read and dropped, up to DISCARD_MAX,
 * and answered 413 when it ends; beyond DISCARD_MAX the connection is
 * closed. (A Content-Length over the cap is answered 413 before any body.) */
static enum MHD_Result take_body(struct MHD_Connection *conn, conn_req *cr, const char *data,
                                 size_t *size) {
    size_t n = *size;
    *size = 0; /* consumed (or dropped) */
    if (cr->responded) return MHD_YES;
    if (cr->too_large || n > cr->max - cr->len) {
        free(cr->body);
        cr->body = NULL;
        cr->len = 0;
        cr->too_large = true;
        cr->discarded += n;
        return cr->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (cr->len + n > cr->cap) {
        size_t cap = cr->cap ? cr->cap : 4096;
        while (cap < cr->len + n) cap *= 2;
        if (cap > cr->max) cap = cr->max;
        uint8_t *b = realloc(cr->body, cap + 1);
        if (!b) return respond_error_now(conn, cr, 500, "internal", "out of memory", NULL);
        cr->body = b;
        cr->cap = cap;
    }
    memcpy(cr->body + cr->len, data, n);
    cr->len += n;
    cr->body[cr->len] = '\0';
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    listener *l = cls;
    conn_req *cr = *req_cls;
    if (!cr) return begin(l, conn, req_cls);
    if (*upload_data_size) return take_body(conn, cr, upload_data, upload_data_size);
    if (cr->responded || cr->dispatched) return MHD_YES;
    if (cr->too_large)
        return respond_error_now(conn, cr, 413, "payload_too_large",
                                 "the body is larger than max_body_bytes", NULL);
    return complete(conn, cr, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    listener *l = cls;
    conn_req *cr = *req_cls;
    if (!cr) return;
    *req_cls = NULL;
    free(cr->body);
    free(cr);
    pthread_mutex_lock(&l->h->mu);
    l->h->conns--;
    pthread_cond_broadcast(&l->h->changed);
    pthread_mutex_unlock(&l->h->mu);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    svc_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    svc_log(h->s, SVC_LOG_DEBUG, "http: %s", msg);
}

/* ---- listeners ----------------------------------------------------------------------- */

/* Bind the Unix socket: a stale socket file is replaced, any other file is
 * an error (never unlink what is not ours); 0660, so the group may connect. */
static int unix_listen(const char *path, char *err, size_t errlen) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(err, errlen, "unix_socket: path too long: %s", path);
        return -1;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "unix_socket: %s exists and is not a socket", path);
            return -1;
        }
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, 0660) != 0 ||
        listen(fd, 128) != 0) {
        snprintf(err, errlen, "unix_socket %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

static int tcp_listen(const char *host, uint16_t port, char *err, size_t errlen) {
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "tcp_host %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) snprintf(err, errlen, "tcp %s:%u: %s", host, (unsigned)port, strerror(e));
    return fd;
}

static bool start_daemon(svc_http *h, listener *l, char *err, size_t errlen) {
    l->h = h;
    l->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
            MHD_USE_ERROR_LOG,
        0, NULL, NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, l->fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_END);
    if (!l->d) snprintf(err, errlen, "libmicrohttpd could not start a listener");
    return l->d != NULL;
}

static void http_free(svc_http *h) {
    svc_api_state_free(h->state);
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static void http_unref(svc_http *h) {
    pthread_mutex_lock(&h->mu);
    bool last = --h->refs == 0;
    pthread_mutex_unlock(&h->mu);
    if (last) http_free(h);
}

/* A running daemon owns its listening socket (MHD_stop_daemon closes it);
 * a quiesced one gave it back (closed in quiesce); one that failed to start
 * may or may not have closed it, so it is left alone: the process is about
 * to exit with the error. */
static void stop_listener(listener *l) {
    if (l->d) {
        MHD_stop_daemon(l->d);
        l->fd = -1;
    }
    l->d = NULL;
}

svc_http *svc_http_start(svc *s, char *err, size_t errlen) {
    svc_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->s = s;
    h->refs = 1;
    h->unix_l.fd = h->tcp_l.fd = -1;
    h->tcp_l.via_unix = false;
    h->unix_l.via_unix = true;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->changed, &ca);
    pthread_condattr_destroy(&ca);
    h->state = svc_api_state_new();
    svc_lock(s);
    const svc_config *cfg = svc_config_of(s);
    char unix_path[sizeof h->unix_path], tcp_host[sizeof cfg->tcp_host];
    snprintf(unix_path, sizeof unix_path, "%s", cfg->unix_socket);
    snprintf(tcp_host, sizeof tcp_host, "%s", cfg->tcp_host);
    uint16_t port = cfg->tcp_port;
    svc_unlock(s);
    bool ok = h->state != NULL;
    if (!ok) snprintf(err, errlen, "out of memory");
    if (ok && !unix_path[0] && !tcp_host[0]) {
        snprintf(err, errlen, "no listener: unix_socket and tcp_host are both empty");
        ok = false;
    }
    if (ok && unix_path[0]) {
        h->unix_l.fd = unix_listen(unix_path, err, errlen);
        ok = h->unix_l.fd >= 0 && start_daemon(h, &h->unix_l, err, errlen);
        if (h->unix_l.fd >= 0) snprintf(h->unix_path, sizeof h->unix_path, "%s", unix_path);
    }
    if (ok && tcp_host[0]) {
        h->tcp_l.fd = tcp_listen(tcp_host, port, err, errlen);
        ok = h->tcp_l.fd >= 0 && start_daemon(h, &h->tcp_l, err, errlen);
    }
    if (!ok) {
        stop_listener(&h->unix_l);
        stop_listener(&h->tcp_l);
        if (h->unix_path[0]) unlink(h->unix_path);
        http_free(h);
        return NULL;
    }
    if (unix_path[0]) svc_log(s, SVC_LOG_INFO, "listening on unix:%s", unix_path);
    if (tcp_host[0]) svc_log(s, SVC_LOG_INFO, "listening on http://%s:%u", tcp_host, (unsigned)port);
    return h;
}

/* Stop accepting: the listening sockets go (MHD keeps serving the
 * connections it has; new requests on them get 503). */
static void quiesce(listener *l) {
    if (!l->d) return;
    MHD_quiesce_daemon(l->d); /* returns l->fd, which is ours to close */
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
}

/* Past the drain deadline: cancel what still runs and wait (bounded) for the
 * workers to finish, each answering its client with the cancelled result as
 * it would any result. The listeners are still up, so those answers go out. */
static void cancel_running(svc_http *h) {
    svc_pool *pool = svc_pool_of(h->s);
    unsigned running = 0;
    svc_pool_counts(pool, NULL, &running);
    if (running == 0) return;
    svc_log(h->s, SVC_LOG_WARN,
            "drain deadline passed: cancelling %u running execution%s (reason \"%s\")", running,
            running == 1 ? "" : "s", SVC_CANCEL_REASON);
    uint64_t t0 = mono_ms();
    svc_cancel_all(h->s);
    /* the pool is stopping and its queue empty: this only waits for idle */
    svc_pool_shutdown(pool, SVC_CANCEL_WAIT_MS, job_cancel);
    unsigned left = 0;
    svc_pool_counts(pool, NULL, &left);
    svc_log(h->s, left ? SVC_LOG_WARN : SVC_LOG_INFO,
            "%u of %u cancelled execution%s ended in %" PRIu64 " ms", running - left, running,
            running == 1 ? "" : "s", mono_ms() - t0);
}

/* After the cancel wait: every job still running is answered 503 (its
 * execution goes on in its worker; its answer is dropped). */
static unsigned answer_running(svc_http *h) {
    pthread_mutex_lock(&h->mu);
    unsigned n = 0;
    for (job *j = h->jobs; j; j = j->next) n++;
    job **list = n ? calloc(n, sizeof *list) : NULL;
    unsigned k = 0;
    for (job *j = h->jobs; j && list; j = j->next) {
        atomic_fetch_add(&j->refs, 1);
        list[k++] = j;
    }
    pthread_mutex_unlock(&h->mu);
    for (unsigned i = 0; i < k; i++) {
        svc_http_response r;
        error_response(&r, 503, "unavailable",
                       "the daemon shut down before the execution finished");
        answer(list[i], &r);
        svc_http_response_free(&r);
        job_unref(list[i]);
    }
    free(list);
    return k;
}

/* Let answered clients read their responses (bounded), so no connection
 * is suspended when MHD stops. */
static void wait_connections(svc_http *h, uint64_t ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t ns = (uint64_t)t.tv_nsec + (ms % 1000) * 1000000u;
    t.tv_sec += (time_t)(ms / 1000 + ns / 1000000000u);
    t.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&h->mu);
    while (h->conns > 0)
        if (pthread_cond_timedwait(&h->changed, &h->mu, &t) == ETIMEDOUT) break;
    pthread_mutex_unlock(&h->mu);
}

void svc_http_stop(svc_http *h, uint64_t deadline_ms) {
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    pthread_mutex_unlock(&h->mu);
    quiesce(&h->unix_l);
    quiesce(&h->tcp_l);
    if (h->unix_path[0]) unlink(h->unix_path);
    svc_pool_shutdown(svc_pool_of(h->s), deadline_ms, job_cancel);
    cancel_running(h);
    unsigned late = answer_running(h);
    if (late)
        svc_log(h->s, SVC_LOG_WARN, "%u execution%s still running after being cancelled", late,
                late == 1 ? "" : "s");
    wait_connections(h, STOP_FLUSH_MS);
    stop_listener(&h->unix_l);
    stop_listener(&h->tcp_l);
    http_unref(h);
}
