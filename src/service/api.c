/*
 * api.c — airlockd's routes, independent of the HTTP library: a
 * svc_http_request in, a svc_http_response out (http.c moves the bytes).
 *
 *   GET    /healthz                         no auth; status, version, backends
 *   GET    /metrics                         Prometheus text
 *   POST   /v1/executions                   run one execution (svc_execute)
 *   POST   /v1/sessions                     {"kind", "backend"} -> 201 the session
 *   GET    /v1/sessions                     the caller's sessions
 *   GET    /v1/sessions/{id}                one
 *   DELETE /v1/sessions/{id}                204
 *   POST   /v1/sessions/{id}/executions     an execution in the session
 *   PUT    /v1/sessions/{id}/files/{path}   raw body -> 201
 *   GET    /v1/sessions/{id}/files/{path}   the bytes
 *   GET    /v1/capabilities                 the installed capabilities
 *   POST   /v1/capabilities                 {"urn"} or {"name", "module_base64"[, "manifest"]}
 *                                           -> 201: install (servlets become MCP tools)
 *   DELETE /v1/capabilities/{name}          204
 *   POST   /v1/capabilities/publish         {"name", "version", "module_base64"[, "manifest"]}
 *                                           or {"name", "version", "dag"} -> 202 the receipt
 *   POST   /mcp                             one JSON-RPC message (MCP Streamable HTTP)
 *   GET    /mcp                             405: no server-initiated stream
 *   DELETE /mcp                             ends the MCP session
 *
 * Invariants:
 *  - every route but /healthz needs a configured bearer token, except on the
 *    Unix socket when the config says unix_requires_token: false (then a
 *    token, if sent and valid, still names the caller);
 *  - the token the caller presented is copied out of the config under
 *    svc_lock: a SIGHUP reload may free the config while an execution runs;
 *  - a session or MCP session belongs to the token that made it; another
 *    token gets 404, as for an id that does not exist;
 *  - every error is {"error": {"code", "message"}} with a 4xx/5xx status
 *    (JSON-RPC error objects on /mcp, where MCP clients expect them); JSON
 *    bodies are parsed with JSON_REJECT_DUPLICATES, unknown fields and
 *    wrong types are 400s (svc_request_parse, and here for session bodies);
 *  - /mcp checks Origin against allowed_origins (a browser page on another
 *    origin must not drive the daemon: DNS rebinding) and the
 *    MCP-Protocol-Version header against the versions we speak.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "service.h"

#ifndef AIRLOCK_VERSION
#define AIRLOCK_VERSION "0.0.0"
#endif

#define MCP_SESSIONS_MAX 256
#define SESSION_ID_LEN 32

static const char *const mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

/* ---- state kept between requests ---------------------------------------------------- */

typedef struct mcp_entry {
    struct mcp_entry *next;
    char id[SESSION_ID_LEN + 1];
    char token[SVC_NAME_MAX];
    svc_mcp_state *state;         /* thread-safe itself (mcp.c): concurrent
                                     messages of one session run in parallel */
    unsigned refs;
    bool gone;                    /* deleted; the last ref frees it */
    uint64_t last_used_ms;
} mcp_entry;

struct svc_api_state {
    pthread_mutex_t mu;
    mcp_entry *head;
    unsigned count;
    bool probed;
    al_host_report host;
};

svc_api_state *svc_api_state_new(void) {
    svc_api_state *st = calloc(1, sizeof *st);
    if (st) pthread_mutex_init(&st->mu, NULL);
    return st;
}

static void mcp_entry_free(mcp_entry *e) {
    svc_mcp_state_free(e->state);
    free(e);
}

void svc_api_state_free(svc_api_state *st) {
    if (!st) return;
    for (mcp_entry *e = st->head, *next; e; e = next) {
        next = e->next;
        mcp_entry_free(e);
    }
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- responses ----------------------------------------------------------------------- */

void svc_http_response_free(svc_http_response *resp) {
    if (!resp) return;
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}

static void set_body(svc_http_response *r, const char *type, uint8_t *body, size_t len) {
    free(r->body);
    r->body = body;
    r->body_len = len;
    snprintf(r->content_type, sizeof r->content_type, "%s", type);
}

/* body is consumed; NULL (out of memory) becomes a 500. */
static void respond_json(svc_http_response *r, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(body);
    if (!text) {
        static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
        text = strdup(oom);
        status = 500;
        if (!text) {
            r->status = 500;
            return;
        }
    }
    r->status = status;
    set_body(r, "application/json", (uint8_t *)text, strlen(text));
}

static const char *code_of(int status) {
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 409: return "conflict";
    case 413: return "payload_too_large";
    case 415: return "unsupported_media_type";
    case 429: return "rate_limited";
    case 503: return "unavailable";
    default: return "internal";
    }
}

static void respond_error(svc_http_response *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void respond_error(svc_http_response *r, int status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    respond_json(r, status, svc_error_json(code_of(status), "%s", msg));
}

static void method_not_allowed(svc_http_response *r, const char *allow) {
    snprintf(r->allow, sizeof r->allow, "%s", allow);
    respond_error(r, 405, "method not allowed; allowed: %s", allow);
}

/* ---- auth ---------------------------------------------------------------------------- */

typedef struct who {
    bool named;                   /* a valid token was presented */
    svc_token token;              /* copy: the config may be reloaded meanwhile */
} who;

static const char *who_name(const who *w) { return w->named ? w->token.name : ""; }
static const svc_token *who_token(const who *w) { return w->named ? &w->token : NULL; }

/* false (with a 401 in r) when the listener needs a token and none valid came. */
static bool authorize(svc *s, const svc_http_request *req, who *w, svc_http_response *r) {
    memset(w, 0, sizeof *w);
    svc_lock(s);
    const svc_config *cfg = svc_config_of(s);
    bool needed = !(req->via_unix && !cfg->unix_requires_token);
    const svc_token *t = svc_auth(cfg, req->authorization);
    if (t) {
        w->named = true;
        w->token = *t;
    }
    svc_unlock(s);
    if (w->named || !needed) return true;
    svc_metrics_denied(svc_metrics_of(s), "auth", 1);
    respond_error(r, 401, req->authorization ? "invalid bearer token" : "a bearer token is required");
    return false;
}

/* ---- request bodies ------------------------------------------------------------------ */

static bool is_json_type(const char *ct) {
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t');
}

/* The body as a JSON object, or NULL with a 415/400 in r. */
static json_t *json_body(const svc_http_request *req, svc_http_response *r) {
    if (!is_json_type(req->content_type)) {
        respond_error(r, 415, "the body must be application/json");
        return NULL;
    }
    json_error_t je;
    json_t *body = json_loadb((const char *)req->body, req->body_len,
                              JSON_REJECT_DUPLICATES, &je);
    if (!body) {
        respond_error(r, 400, "malformed JSON at line %d column %d: %s", je.line, je.column,
                      je.text);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        respond_error(r, 400, "the body must be a JSON object");
        return NULL;
    }
    return body;
}

/* ---- /healthz, /metrics -------------------------------------------------------------- */

static void healthz(svc *s, const svc_http_request *req, svc_http_response *r) {
    bool native = false, gvisor = false;
    svc_lock(s);
    const svc_config *cfg = svc_config_of(s);
    bool allow_native = cfg->allow_native, allow_gvisor = cfg->allow_gvisor;
    svc_unlock(s);
    if (req->state) {
        /* probed once (about 0.1 s: no gVisor platform runs), then cached */
        pthread_mutex_lock(&req->state->mu);
        if (!req->state->probed) {
            al_probe_host(&req->state->host, NULL, false);
            req->state->probed = true;
        }
        native = req->state->host.native_available;
        gvisor = req->state->host.gvisor_available;
        pthread_mutex_unlock(&req->state->mu);
    }
    respond_json(r, 200,
                 json_pack("{s:s, s:s, s:b, s:b, s:b, s:b}", "status", "ok", "version",
                           AIRLOCK_VERSION, "python", svc_sessions_have_python(svc_sessions_of(s)),
                           "wasm", 1, "native", native && allow_native, "gvisor",
                           gvisor && allow_gvisor));
}

static void metrics(svc *s, svc_http_response *r) {
    unsigned queued = 0, running = 0;
    svc_pool_counts(svc_pool_of(s), &queued, &running);
    svc_metrics_set_queue(svc_metrics_of(s), queued, running);
    svc_metrics_set_sessions(svc_metrics_of(s), svc_sessions_count(svc_sessions_of(s)));
    char *text = svc_metrics_render(svc_metrics_of(s));
    if (!text) {
        respond_error(r, 500, "out of memory");
        return;
    }
    r->status = 200;
    set_body(r, "text/plain; version=0.0.4; charset=utf-8", (uint8_t *)text, strlen(text));
}

/* ---- executions ---------------------------------------------------------------------- */

/* svc_execute's 429s carry {"error": {"retry_after": N}} when it knows N. */
static void retry_after_from(const json_t *out, svc_http_response *r) {
    json_t *e = json_object_get(out, "error");
    json_t *ra = e ? json_object_get(e, "retry_after") : NULL;
    json_int_t secs = json_is_integer(ra) ? json_integer_value(ra) : 1;
    if (secs < 1) secs = 1;
    if (secs > 86400) secs = 86400;
    snprintf(r->retry_after, sizeof r->retry_after, "%u", (unsigned)secs);
}

/* Parse body and run it, in session_id when not NULL. body is borrowed. */
static void run_execution(svc *s, const svc_http_request *req, const who *w, json_t *body,
                          const char *session_id, svc_http_response *r) {
    svc_exec_request er;
    char err[256] = "";
    memset(&er, 0, sizeof er);
    if (!svc_request_parse(body, &er, err, sizeof err)) {
        svc_metrics_denied(svc_metrics_of(s), "bad_request", 1);
        respond_error(r, 400, "%s", err[0] ? err : "invalid execution request");
        return;
    }
    if (er.kind == SVC_PYTHON && !svc_sessions_have_python(svc_sessions_of(s))) {
        svc_request_free(&er);
        respond_error(r, 503, "Python is not available on this daemon");
        return;
    }
    /* the route's session id wins; request.c's own string is put back
     * before svc_request_free, whoever owns it */
    char *parsed_session = er.session;
    if (session_id) er.session = (char *)session_id;
    svc_caller caller = {
        .token = who_token(w),
        .source = "http",
        .on_output = er.stream ? req->on_output : NULL,
        .output_ctx = req->output_ctx,
    };
    int status = 500;
    json_t *out = svc_execute(s, &er, &caller, &status);
    er.session = parsed_session;
    svc_request_free(&er);
    if (status == 429) retry_after_from(out, r);
    if (!out) {
        respond_error(r, 500, "the execution produced no response");
        return;
    }
    respond_json(r, status, out);
}

static void post_execution(svc *s, const svc_http_request *req, const who *w,
                           svc_http_response *r) {
    json_t *body = json_body(req, r);
    if (!body) return;
    run_execution(s, req, w, body, NULL, r);
    json_decref(body);
}

static const char *kind_name(svc_kind k) {
    return k == SVC_PYTHON ? "python" : k == SVC_WASM ? "wasm" : "command";
}

/* POST /v1/sessions/{id}/executions: the session's kind is the default
 * "kind"; a "session" field naming another session is refused. */
static void post_session_execution(svc *s, const svc_http_request *req, const who *w,
                                   const char *id, svc_http_response *r) {
    svc_session_info info;
    if (!svc_session_get(svc_sessions_of(s), id, who_name(w), &info)) {
        respond_error(r, 404, "no such session: %s", id);
        return;
    }
    json_t *body = json_body(req, r);
    if (!body) return;
    json_t *named = json_object_get(body, "session");
    if (named && (!json_is_string(named) || strcmp(json_string_value(named), id) != 0)) {
        json_decref(body);
        respond_error(r, 400, "\"session\" names another session than the URL");
        return;
    }
    if (!json_object_get(body, "kind"))
        json_object_set_new(body, "kind", json_string(kind_name(info.kind)));
    run_execution(s, req, w, body, id, r);
    json_decref(body);
}

/* ---- sessions ------------------------------------------------------------------------ */

static bool backend_of(const char *name, al_isolation *out) {
    if (strcmp(name, "native") == 0) *out = AL_ISOLATION_NATIVE;
    else if (strcmp(name, "gvisor") == 0) *out = AL_ISOLATION_GVISOR;
    else if (strcmp(name, "wasm") == 0) *out = AL_ISOLATION_WASM;
    else return false;
    return true;
}

/* {"kind": "python"|"command"|"wasm", "backend": "native"|"gvisor"|"wasm"},
 * strictly: anything else is a 400 (message in err). */
static bool parse_session_body(const json_t *body, svc_exec_request *t, char *err,
                               size_t errlen) {
    memset(t, 0, sizeof *t);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        if (strcmp(key, "kind") != 0 && strcmp(key, "backend") != 0) {
            snprintf(err, errlen, "unknown field \"%s\"", key);
            return false;
        }
        if (!json_is_string(v)) {
            snprintf(err, errlen, "\"%s\" must be a string", key);
            return false;
        }
    }
    const char *kind = json_string_value(json_object_get(body, "kind"));
    const char *backend = json_string_value(json_object_get(body, "backend"));
    if (!kind) {
        snprintf(err, errlen, "\"kind\" is required: python, command or wasm");
        return false;
    }
    if (strcmp(kind, "python") == 0) t->kind = SVC_PYTHON;
    else if (strcmp(kind, "wasm") == 0) t->kind = SVC_WASM;
    else if (strcmp(kind, "command") == 0) t->kind = SVC_COMMAND;
    else {
        snprintf(err, errlen, "\"kind\" is python, command or wasm");
        return false;
    }
    t->backend = t->kind == SVC_COMMAND ? AL_ISOLATION_NATIVE : AL_ISOLATION_WASM;
    if (backend && !backend_of(backend, &t->backend)) {
        snprintf(err, errlen, "\"backend\" is native, gvisor or wasm");
        return false;
    }
    if ((t->kind == SVC_COMMAND) != (t->backend != AL_ISOLATION_WASM)) {
        snprintf(err, errlen, "a command runs on native or gvisor; python and wasm on wasm");
        return false;
    }
    return true;
}

static bool backend_allowed(svc *s, al_isolation b) {
    svc_lock(s);
    const svc_config *cfg = svc_config_of(s);
    bool ok = b == AL_ISOLATION_WASM || (b == AL_ISOLATION_NATIVE && cfg->allow_native) ||
              (b == AL_ISOLATION_GVISOR && cfg->allow_gvisor);
    svc_unlock(s);
    return ok;
}

static void count_sessions(svc *s) {
    svc_metrics_set_sessions(svc_metrics_of(s), svc_sessions_count(svc_sessions_of(s)));
}

static void create_session(svc *s, const svc_http_request *req, const who *w,
                           svc_http_response *r) {
    json_t *body = json_body(req, r);
    if (!body) return;
    svc_exec_request t;
    char err[256] = "";
    bool ok = parse_session_body(body, &t, err, sizeof err);
    json_decref(body);
    if (!ok) {
        respond_error(r, 400, "%s", err);
        return;
    }
    if (!backend_allowed(s, t.backend)) {
        respond_error(r, 403, "this backend is disabled in the daemon's config");
        return;
    }
    svc_session_info info;
    if (!svc_session_create(svc_sessions_of(s), &t, who_name(w), &info, err, sizeof err)) {
        int status = svc_session_http_status(errno);
        if (status == 429) snprintf(r->retry_after, sizeof r->retry_after, "5");
        respond_error(r, status, "%s", err);
        return;
    }
    count_sessions(s);
    respond_json(r, 201, svc_session_info_json(&info));
}

static void list_sessions(svc *s, const who *w, svc_http_response *r) {
    json_t *arr = svc_session_list(svc_sessions_of(s), who_name(w));
    respond_json(r, 200, arr ? json_pack("{s:o}", "sessions", arr) : NULL);
}

static void get_session(svc *s, const who *w, const char *id, svc_http_response *r) {
    svc_session_info info;
    if (!svc_session_get(svc_sessions_of(s), id, who_name(w), &info)) {
        respond_error(r, 404, "no such session: %s", id);
        return;
    }
    respond_json(r, 200, svc_session_info_json(&info));
}

static void delete_session(svc *s, const who *w, const char *id, svc_http_response *r) {
    if (!svc_session_delete(svc_sessions_of(s), id, who_name(w))) {
        respond_error(r, 404, "no such session: %s", id);
        return;
    }
    count_sessions(s);
    r->status = 204;
}

static void put_file(svc *s, const svc_http_request *req, const who *w, const char *id,
                     const char *path, svc_http_response *r) {
    char err[256] = "";
    if (!svc_session_put_file(svc_sessions_of(s), id, who_name(w), path, req->body,
                              req->body_len, err, sizeof err)) {
        respond_error(r, svc_session_http_status(errno), "%s", err);
        return;
    }
    respond_json(r, 201, json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)req->body_len));
}

static void get_file(svc *s, const who *w, const char *id, const char *path,
                     svc_http_response *r) {
    char err[256] = "";
    uint8_t *data;
    size_t len;
    if (!svc_session_get_file(svc_sessions_of(s), id, who_name(w), path, &data, &len, err,
                              sizeof err)) {
        respond_error(r, svc_session_http_status(errno), "%s", err);
        return;
    }
    r->status = 200;
    set_body(r, "application/octet-stream", data, len);
}

/* ---- /mcp (Streamable HTTP) ---------------------------------------------------------- */

static json_t *rpc_error(int code, const char *message) {
    return json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", code,
                     "message", message);
}

static bool origin_allowed(svc *s, const char *origin) {
    if (!origin) return true; /* not from a browser */
    svc_lock(s);
    const svc_config *cfg = svc_config_of(s);
    bool ok = false;
    for (size_t i = 0; i < cfg->nallowed_origins && !ok; i++)
        ok = strcmp(cfg->allowed_origins[i], origin) == 0;
    svc_unlock(s);
    return ok;
}

static bool protocol_known(const char *v) {
    if (!v) return true; /* absent: the client speaks 2025-03-26, which we accept */
    for (size_t i = 0; i < sizeof mcp_versions / sizeof mcp_versions[0]; i++)
        if (strcmp(v, mcp_versions[i]) == 0) return true;
    return false;
}

/* The entry for id and token, with a reference taken; NULL when unknown. */
static mcp_entry *mcp_acquire(svc_api_state *st, const char *id, const char *token) {
    pthread_mutex_lock(&st->mu);
    mcp_entry *e = st->head;
    while (e && !(strcmp(e->id, id) == 0 && strcmp(e->token, token) == 0)) e = e->next;
    if (e) {
        e->refs++;
        e->last_used_ms = now_ms();
    }
    pthread_mutex_unlock(&st->mu);
    return e;
}

static void mcp_release(svc_api_state *st, mcp_entry *e) {
    pthread_mutex_lock(&st->mu);
    bool destroy = --e->refs == 0 && e->gone;
    pthread_mutex_unlock(&st->mu);
    if (destroy) mcp_entry_free(e);
}

static void mcp_unlink_locked(svc_api_state *st, mcp_entry *e) {
    for (mcp_entry **pp = &st->head; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    e->next = NULL;
    e->gone = true;
    st->count--;
}

/* Room for one more: MCP sessions idle past idle_ms go, then (at the bound)
 * the least recently used idle one. The caller frees *dead outside the lock. */
static bool mcp_make_room_locked(svc_api_state *st, uint64_t idle_ms, mcp_entry **dead) {
    uint64_t now = now_ms();
    mcp_entry *oldest = NULL;
    for (mcp_entry *e = st->head, *next; e; e = next) {
        next = e->next;
        if (e->refs) continue;
        if (idle_ms && e->last_used_ms + idle_ms <= now) {
            mcp_unlink_locked(st, e);
            e->next = *dead;
            *dead = e;
        } else if (!oldest || e->last_used_ms < oldest->last_used_ms) {
            oldest = e;
        }
    }
    if (st->count >= MCP_SESSIONS_MAX && oldest) {
        mcp_unlink_locked(st, oldest);
        oldest->next = *dead;
        *dead = oldest;
    }
    return st->count < MCP_SESSIONS_MAX;
}

static bool random_hex_id(char out[SESSION_ID_LEN + 1]) {
    uint8_t b[SESSION_ID_LEN / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return false;
    svc_hex(b, sizeof b, out);
    return true;
}

/* Keep st as a new MCP session of token; its id in id_out. false: no room. */
static bool mcp_register(svc *s, svc_api_state *st, svc_mcp_state *state, const char *token,
                         char id_out[SESSION_ID_LEN + 1]) {
    mcp_entry *e = calloc(1, sizeof *e);
    if (!e || !random_hex_id(e->id)) {
        free(e);
        return false;
    }
    svc_lock(s);
    uint64_t idle_ms = (uint64_t)svc_config_of(s)->session_idle_s * 1000u;
    svc_unlock(s);
    snprintf(e->token, sizeof e->token, "%s", token);
    e->state = state;
    e->last_used_ms = now_ms();
    mcp_entry *dead = NULL;
    pthread_mutex_lock(&st->mu);
    bool room = mcp_make_room_locked(st, idle_ms, &dead);
    if (room) {
        e->next = st->head;
        st->head = e;
        st->count++;
    }
    pthread_mutex_unlock(&st->mu);
    while (dead) {
        mcp_entry *next = dead->next;
        mcp_entry_free(dead);
        dead = next;
    }
    if (!room) {
        free(e);
        return false;
    }
    memcpy(id_out, e->id, SESSION_ID_LEN + 1);
    return true;
}

static void mcp_answer(svc_http_response *r, json_t *response) {
    if (!response) {
        r->status = 202; /* a notification or a response: accepted, no body */
        return;
    }
    respond_json(r, 200, response);
}

static bool is_initialize(const json_t *msg) {
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && strcmp(m, "initialize") == 0 && json_object_get(msg, "id");
}

/* initialize: a fresh state; kept (and its id sent) only if it succeeded. */
static void mcp_initialize(svc *s, const svc_http_request *req, const svc_caller *caller,
                           const char *token, const json_t *msg, svc_http_response *r) {
    svc_mcp_state *state = svc_mcp_state_new();
    if (!state) {
        respond_json(r, 500, rpc_error(-32603, "out of memory"));
        return;
    }
    json_t *response = svc_mcp_handle(s, state, msg, caller);
    char id[SESSION_ID_LEN + 1];
    if (!response || !json_object_get(response, "result")) {
        svc_mcp_state_free(state);
        mcp_answer(r, response);
        return;
    }
    if (!mcp_register(s, req->state, state, token, id)) {
        svc_mcp_state_free(state);
        json_decref(response);
        snprintf(r->retry_after, sizeof r->retry_after, "5");
        respond_json(r, 429, rpc_error(-32000, "too many MCP sessions"));
        return;
    }
    snprintf(r->mcp_session, sizeof r->mcp_session, "%s", id);
    mcp_answer(r, response);
}

static void mcp_post(svc *s, const svc_http_request *req, const who *w, svc_http_response *r) {
    if (!is_json_type(req->content_type)) {
        respond_json(r, 415, rpc_error(-32700, "the body must be application/json"));
        return;
    }
    json_error_t je;
    json_t *msg = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!msg) {
        respond_json(r, 400, rpc_error(-32700, "Parse error: malformed JSON"));
        return;
    }
    if (!json_is_object(msg)) {
        json_decref(msg);
        respond_json(r, 400, rpc_error(-32600, "Invalid Request: one JSON-RPC object per POST"));
        return;
    }
    svc_caller caller = {.token = who_token(w), .source = "mcp-http"};
    if (is_initialize(msg)) {
        if (req->mcp_session)
            respond_json(r, 400, rpc_error(-32600, "initialize must not carry Mcp-Session-Id"));
        else
            mcp_initialize(s, req, &caller, who_name(w), msg, r);
        json_decref(msg);
        return;
    }
    if (!req->mcp_session) {
        json_decref(msg);
        respond_json(r, 400, rpc_error(-32000, "Bad Request: Mcp-Session-Id header is required"));
        return;
    }
    mcp_entry *e = mcp_acquire(req->state, req->mcp_session, who_name(w));
    if (!e) {
        json_decref(msg);
        respond_json(r, 404, rpc_error(-32001, "Session not found"));
        return;
    }
    json_t *response = svc_mcp_handle(s, e->state, msg, &caller);
    mcp_release(req->state, e);
    json_decref(msg);
    mcp_answer(r, response);
}

static void mcp_delete(const svc_http_request *req, const who *w, svc_http_response *r) {
    if (!req->mcp_session) {
        respond_json(r, 400, rpc_error(-32000, "Bad Request: Mcp-Session-Id header is required"));
        return;
    }
    svc_api_state *st = req->state;
    pthread_mutex_lock(&st->mu);
    mcp_entry *e = st->head;
    while (e && !(strcmp(e->id, req->mcp_session) == 0 && strcmp(e->token, who_name(w)) == 0))
        e = e->next;
    bool destroy = false;
    if (e) {
        mcp_unlink_locked(st, e);
        destroy = e->refs == 0;
    }
    pthread_mutex_unlock(&st->mu);
    if (!e) {
        respond_json(r, 404, rpc_error(-32001, "Session not found"));
        return;
    }
    if (destroy) mcp_entry_free(e);
    r->status = 204;
}

static void mcp_route(svc *s, const svc_http_request *req, svc_http_response *r) {
    if (!origin_allowed(s, req->origin)) {
        respond_json(r, 403, rpc_error(-32000, "Forbidden: Origin not allowed"));
        return;
    }
    who w;
    if (!authorize(s, req, &w, r)) return;
    if (!req->state) {
        respond_json(r, 503, rpc_error(-32000, "MCP over HTTP is not available"));
        return;
    }
    if (!protocol_known(req->mcp_protocol)) {
        respond_json(r, 400, rpc_error(-32000, "Bad Request: unsupported MCP-Protocol-Version"));
        return;
    }
    if (strcmp(req->method, "POST") == 0) mcp_post(s, req, &w, r);
    else if (strcmp(req->method, "DELETE") == 0) mcp_delete(req, &w, r);
    else {
        /* GET would open a server-initiated SSE stream: we send none */
        snprintf(r->allow, sizeof r->allow, "POST, DELETE");
        respond_json(r, 405, rpc_error(-32000, "Method not allowed: no server-initiated stream"));
    }
}

/* ---- capabilities -------------------------------------------------------------------- */

#define CAP_MODULE_MAX ((size_t)10 << 20)

/* Only these keys: a typo must not silently install something else. */
static bool only_keys(const json_t *body, const char *const *keys, char *bad, size_t badlen) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i] && !known; i++) known = !strcmp(k, keys[i]);
        if (!known) {
            snprintf(bad, badlen, "%.64s", k);
            return false;
        }
    }
    return true;
}

static void list_capabilities(svc *s, svc_http_response *r) {
    respond_json(r, 200, json_pack("{s:o}", "capabilities", svc_caps_list(svc_caps_of(s))));
}

/* The registry settings of the current config (strings copied: a reload
 * may free the config while a fetch runs). */
typedef struct registry_copy {
    char url[256];
    char cache[SVC_PATH_MAX];
    al_registry reg;
} registry_copy;

static bool registry_of(svc *s, registry_copy *rc) {
    memset(rc, 0, sizeof *rc);
    svc_lock(s);
    const svc_config *c = svc_config_of(s);
    snprintf(rc->url, sizeof rc->url, "%s", c->cap_registry);
    snprintf(rc->cache, sizeof rc->cache, "%s", c->cap_cache);
    rc->reg.max_blob_bytes = (size_t)c->cap_max_blob_bytes;
    svc_unlock(s);
    rc->reg.url = rc->url;
    rc->reg.cache_dir = rc->cache[0] ? rc->cache : NULL;
    rc->reg.timeout_ms = 30000;
    return rc->url[0] != '\0';
}

/* 201 with what was installed: {"name", "digest", "source", "mcp_tools", ...}. */
static void respond_installed(svc *s, const char *name, const char *source,
                              svc_http_response *r) {
    json_t *list = svc_caps_list(svc_caps_of(s));
    json_t *found = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (!found && !strcmp(json_string_value(json_object_get(item, "name")), name))
            found = json_incref(item);
    }
    json_decref(list);
    if (found) json_object_set_new(found, "source", json_string(source));
    else found = svc_error_json("conflict", "capability %s was removed meanwhile", name);
    respond_json(r, found && json_object_get(found, "error") ? 409 : 201, found);
}

static void install_from_urn(svc *s, const char *urn, const char *name, svc_http_response *r) {
    registry_copy rc;
    if (!registry_of(s, &rc)) {
        respond_error(r, 409, "no registry is configured (capabilities.registry)");
        return;
    }
    char installed[SVC_CAP_NAME_MAX] = "", why[400] = "";
    int status = svc_caps_install_urn(svc_caps_of(s), &rc.reg, urn, name, installed,
                                      sizeof installed, why, sizeof why);
    if (status == 201) respond_installed(s, installed, urn, r);
    else respond_error(r, status, "%s", why);
}

/* The "manifest" field: an object, kept as compact JSON text; NULL if absent. */
static bool manifest_text(const json_t *body, char **out, svc_http_response *r) {
    const json_t *m = json_object_get(body, "manifest");
    *out = NULL;
    if (!m) return true;
    if (!json_is_object(m)) {
        respond_error(r, 400, "manifest: expected an object (an Extism manifest)");
        return false;
    }
    *out = json_dumps(m, JSON_COMPACT);
    if (!*out) respond_error(r, 500, "out of memory");
    return *out != NULL;
}

static uint8_t *module_field(const json_t *body, size_t *len, svc_http_response *r) {
    const json_t *m = json_object_get(body, "module_base64");
    if (!json_is_string(m)) {
        respond_error(r, 400, "module_base64: expected a base64 string");
        return NULL;
    }
    const char *why = NULL;
    uint8_t *wasm = svc_base64_decode(json_string_value(m), json_string_length(m),
                                      CAP_MODULE_MAX, len, &why);
    if (!wasm) respond_error(r, why && !strncmp(why, "too large", 9) ? 413 : 400,
                             "module_base64: %s", why ? why : "invalid");
    return wasm;
}

static void install_capability(svc *s, const svc_http_request *req, svc_http_response *r) {
    json_t *body = json_body(req, r);
    if (!body) return;
    static const char *const keys[] = {"name", "urn", "module_base64", "manifest", NULL};
    char bad[80];
    const json_t *name = json_object_get(body, "name"), *urn = json_object_get(body, "urn");
    if (!only_keys(body, keys, bad, sizeof bad)) {
        respond_error(r, 400, "unknown field \"%s\"", bad);
    } else if ((name && !json_is_string(name)) || (urn && !json_is_string(urn))) {
        respond_error(r, 400, "name, urn: expected strings");
    } else if (name && !svc_cap_name_valid(json_string_value(name))) {
        respond_error(r, 400, "name: 1..32 of [a-z0-9-], starting with a letter or digit");
    } else if (urn && json_object_get(body, "module_base64")) {
        respond_error(r, 400, "give \"urn\" or \"module_base64\", not both");
    } else if (urn) {
        install_from_urn(s, json_string_value(urn), name ? json_string_value(name) : NULL, r);
    } else if (!name) {
        respond_error(r, 400, "missing field \"name\" (with module_base64)");
    } else {
        size_t len = 0;
        char *manifest = NULL;
        uint8_t *wasm = manifest_text(body, &manifest, r) ? module_field(body, &len, r) : NULL;
        char why[400] = "";
        if (wasm && svc_caps_install(svc_caps_of(s), json_string_value(name), wasm, len, manifest,
                                     "upload", why, sizeof why))
            respond_installed(s, json_string_value(name), "upload", r);
        else if (wasm)
            respond_error(r, 400, "install: %s", why);
        free(wasm);
        free(manifest);
    }
    json_decref(body);
}

static void delete_capability(svc *s, const char *name, svc_http_response *r) {
    if (!svc_caps_remove(svc_caps_of(s), name)) {
        respond_error(r, 404, "no such capability");
        return;
    }
    r->status = 204;
}

static void publish_capability(svc *s, const svc_http_request *req, svc_http_response *r) {
    al_publisher *pub = svc_publisher_of(s);
    if (!pub) {
        respond_error(r, 409, "no registry is configured (capabilities.registry)");
        return;
    }
    json_t *body = json_body(req, r);
    if (!body) return;
    static const char *const keys[] = {"name", "version", "module_base64", "manifest", "dag",
                                       NULL};
    char bad[80];
    const json_t *name = json_object_get(body, "name"), *version = json_object_get(body, "version");
    const json_t *dag = json_object_get(body, "dag");
    bool has_module = json_object_get(body, "module_base64") != NULL;
    uint8_t *wasm = NULL;
    char *manifest = NULL, *dag_text = NULL;
    size_t len = 0;
    if (!only_keys(body, keys, bad, sizeof bad)) {
        respond_error(r, 400, "unknown field \"%s\"", bad);
    } else if (!json_is_string(name) || !json_is_string(version)) {
        respond_error(r, 400, "name, version: required strings");
    } else if (has_module == (dag != NULL)) {
        respond_error(r, 400, "give \"module_base64\" or \"dag\" (a composite), exactly one");
    } else if (dag && !json_is_object(dag)) {
        respond_error(r, 400, "dag: expected an object");
    } else if (manifest_text(body, &manifest, r) &&
               (dag ? (dag_text = json_dumps(dag, JSON_COMPACT | JSON_SORT_KEYS)) != NULL
                    : (wasm = module_field(body, &len, r)) != NULL)) {
        al_publish_request pr = {json_string_value(name), json_string_value(version), wasm, len,
                                 manifest, dag_text};
        al_publish_receipt rec;
        al_error err;
        memset(&err, 0, sizeof err);
        memset(&rec, 0, sizeof rec);
        if (!al_publish(pub, &pr, &rec, &err))
            respond_error(r, err.kind == AL_ERR_ARGUMENT ? 400 : 500, "publish: %s", err.message);
        else
            respond_json(r, rec.pushed ? 201 : 202,
                         json_pack("{s:s, s:s, s:s, s:I, s:b, s:b, s:s}", "urn", rec.urn, "digest",
                                   rec.digest, "manifest_digest", rec.manifest_digest, "event_id",
                                   (json_int_t)rec.event_id, "pushed", rec.pushed, "duplicate",
                                   rec.duplicate, "last_error", rec.last_error));
    }
    free(wasm);
    free(manifest);
    free(dag_text);
    json_decref(body);
}

/* ---- routing ------------------------------------------------------------------------- */

typedef struct route {
    enum { R_NONE, R_HEALTHZ, R_METRICS, R_MCP, R_EXECUTIONS, R_SESSIONS, R_SESSION,
           R_SESSION_EXEC, R_SESSION_FILE, R_CAPS, R_CAP, R_CAP_PUBLISH } kind;
    char id[SESSION_ID_LEN + 1];
    const char *file;             /* R_SESSION_FILE: the path after /files/ */
    char cap[SVC_CAP_NAME_MAX];   /* R_CAP */
} route;

/* A session id as the API hands them out: 32 lowercase hex digits. */
static bool take_id(const char *p, route *rt) {
    for (size_t i = 0; i < SESSION_ID_LEN; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return false;
    memcpy(rt->id, p, SESSION_ID_LEN);
    rt->id[SESSION_ID_LEN] = '\0';
    return true;
}

static route route_of(const char *path) {
    route rt = {.kind = R_NONE};
    if (!path) return rt;
    if (strcmp(path, "/healthz") == 0) rt.kind = R_HEALTHZ;
    else if (strcmp(path, "/metrics") == 0) rt.kind = R_METRICS;
    else if (strcmp(path, "/mcp") == 0) rt.kind = R_MCP;
    else if (strcmp(path, "/v1/executions") == 0) rt.kind = R_EXECUTIONS;
    else if (strcmp(path, "/v1/sessions") == 0) rt.kind = R_SESSIONS;
    else if (strcmp(path, "/v1/capabilities") == 0) rt.kind = R_CAPS;
    else if (strcmp(path, "/v1/capabilities/publish") == 0) rt.kind = R_CAP_PUBLISH;
    else if (strncmp(path, "/v1/capabilities/", 17) == 0 && svc_cap_name_valid(path + 17)) {
        rt.kind = R_CAP;
        snprintf(rt.cap, sizeof rt.cap, "%s", path + 17);
    }
    else if (strncmp(path, "/v1/sessions/", 13) == 0 && strlen(path + 13) >= SESSION_ID_LEN &&
             take_id(path + 13, &rt)) {
        const char *rest = path + 13 + SESSION_ID_LEN;
        if (*rest == '\0') rt.kind = R_SESSION;
        else if (strcmp(rest, "/executions") == 0) rt.kind = R_SESSION_EXEC;
        else if (strncmp(rest, "/files/", 7) == 0 && rest[7]) {
            rt.kind = R_SESSION_FILE;
            rt.file = rest + 7;
        }
    }
    return rt;
}

static bool is_method(const svc_http_request *req, const char *m) {
    return req->method && strcmp(req->method, m) == 0;
}

bool svc_api_is_execution(const svc_http_request *req) {
    route rt = route_of(req->path);
    switch (rt.kind) {
    case R_EXECUTIONS:
    case R_SESSION_EXEC:
    case R_MCP: return is_method(req, "POST");
    case R_SESSIONS: return is_method(req, "POST"); /* may evict (close) another session */
    case R_SESSION: return is_method(req, "DELETE");
    case R_SESSION_FILE: return is_method(req, "PUT") || is_method(req, "GET");
    case R_CAPS: /* fetches from the registry, compiles */
    case R_CAP_PUBLISH: return is_method(req, "POST");
    default: return false;
    }
}

static void v1_route(svc *s, const svc_http_request *req, const route *rt, const who *w,
                     svc_http_response *r) {
    switch (rt->kind) {
    case R_EXECUTIONS:
        if (is_method(req, "POST")) post_execution(s, req, w, r);
        else method_not_allowed(r, "POST");
        return;
    case R_SESSIONS:
        if (is_method(req, "POST")) create_session(s, req, w, r);
        else if (is_method(req, "GET")) list_sessions(s, w, r);
        else method_not_allowed(r, "GET, POST");
        return;
    case R_SESSION:
        if (is_method(req, "GET")) get_session(s, w, rt->id, r);
        else if (is_method(req, "DELETE")) delete_session(s, w, rt->id, r);
        else method_not_allowed(r, "GET, DELETE");
        return;
    case R_SESSION_EXEC:
        if (is_method(req, "POST")) post_session_execution(s, req, w, rt->id, r);
        else method_not_allowed(r, "POST");
        return;
    case R_SESSION_FILE:
        if (is_method(req, "PUT")) put_file(s, req, w, rt->id, rt->file, r);
        else if (is_method(req, "GET")) get_file(s, w, rt->id, rt->file, r);
        else method_not_allowed(r, "GET, PUT");
        return;
    case R_CAPS:
        if (is_method(req, "GET")) list_capabilities(s, r);
        else if (is_method(req, "POST")) install_capability(s, req, r);
        else method_not_allowed(r, "GET, POST");
        return;
    case R_CAP:
        if (is_method(req, "DELETE")) delete_capability(s, rt->cap, r);
        else method_not_allowed(r, "DELETE");
        return;
    case R_CAP_PUBLISH:
        if (is_method(req, "POST")) publish_capability(s, req, r);
        else method_not_allowed(r, "POST");
        return;
    default:
        respond_error(r, 404, "no such route: %s", req->path);
        return;
    }
}

void svc_api_handle(svc *s, const svc_http_request *req, svc_http_response *resp) {
    memset(resp, 0, sizeof *resp);
    resp->status = 500;
    route rt = route_of(req->path);
    if (rt.kind == R_HEALTHZ) {
        if (is_method(req, "GET") || is_method(req, "HEAD")) healthz(s, req, resp);
        else method_not_allowed(resp, "GET");
        return;
    }
    if (rt.kind == R_MCP) {
        mcp_route(s, req, resp);
        return;
    }
    who w;
    if (!authorize(s, req, &w, resp)) return;
    if (rt.kind == R_METRICS) {
        if (is_method(req, "GET") || is_method(req, "HEAD")) metrics(s, resp);
        else method_not_allowed(resp, "GET");
        return;
    }
    v1_route(s, req, &rt, &w, resp);
}
