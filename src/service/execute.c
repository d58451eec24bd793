/*
 * execute.c — one execution from a parsed request (service.h, svc_execute),
 * shared by the HTTP API and MCP:
 *
 *   authorise → rate limit → policy within the config's ceilings → audit
 *   begin → run (python / wasm / command, or in a session) → redact →
 *   audit end → metrics → the result JSON (with its audit id).
 *
 * Invariants:
 *  - the request never widens the config: timeout <= max_timeout_ms, memory
 *    and fuel <= the config's, output caps are the config's; a directory or
 *    module path is used only when its realpath lies inside an allowed path
 *    (component-wise), and a read-only allowed path is never granted
 *    read-write; a command backend the config disables is refused (403);
 *  - the config and redactor used are one svc_view, held for the whole
 *    execution: a reload (SIGHUP) mid-run changes nothing under it;
 *  - the token is looked up again (by hash) in that view's config: a token
 *    removed by a reload is refused, and its current per-token limits apply;
 *  - nothing a client wrote reaches the audit log unhashed except what the
 *    policy JSON shows: header values and environment values are left out
 *    (they are where secrets live); the code/module/argv is a SHA-256;
 *  - secrets are redacted from stdout/stderr before the result leaves, and
 *    from streamed output line by line (a line is held until its newline,
 *    or 64 KiB; a private-key block from its BEGIN line to its END line),
 *    so a streamed secret is caught when the pattern fits one line or is a
 *    PEM key — the final result is redacted as a whole;
 *  - every failure is a value: an error body and a 4xx/5xx status, never a
 *    crash; every allocation is freed on every path (exec_ctx_free);
 *  - a fresh command execution with network grants logs every egress
 *    decision to a file of the daemon's choosing (state_dir/egress-*.jsonl,
 *    removed afterwards), and the audit row keeps them (at most 1000; the
 *    counts are always exact);
 *  - every policy carries the daemon's cancel flag (svc_cancel_flag, reason
 *    "shutdown"): a cancelled execution is a result like any other (200,
 *    status "cancelled"), audited and counted as such.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "service.h"

#define DEFAULT_FUEL UINT64_C(1000000000)
#define MAX_MODULE ((size_t)50 << 20)
#define STREAM_HOLD ((size_t)64 << 10) /* longest line held back for redaction */

static const char *const kind_names[] = {"python", "wasm", "command", "plugin"};

/* ---- streaming through the redactor ------------------------------------------------- */

typedef struct streamer {
    pthread_mutex_t mu;
    const svc_redactor *redactor;
    svc_output_fn fn;
    void *ctx;
    uint8_t *held[3]; /* [1] stdout, [2] stderr: the unfinished line */
    size_t len[3];
} streamer;

/* Redact data[0..len) (a copy) and pass it on. */
static void emit(streamer *st, int stream, const uint8_t *data, size_t len) {
    if (len == 0) return;
    uint8_t *copy = malloc(len + 1);
    if (!copy) return; /* the final result still carries the output */
    memcpy(copy, data, len);
    copy[len] = '\0';
    size_t n = len;
    if (st->redactor) svc_redact(st->redactor, &copy, &n, NULL);
    st->fn(st->ctx, stream, copy, n);
    free(copy);
}

static void stream_chunk(void *ctx, int stream, const uint8_t *data, size_t len) {
    streamer *st = ctx;
    if (stream != 1 && stream != 2) return;
    pthread_mutex_lock(&st->mu);
    uint8_t *grown = realloc(st->held[stream], st->len[stream] + len + 1);
    if (!grown) {
        pthread_mutex_unlock(&st->mu);
        return;
    }
    memcpy(grown + st->len[stream], data, len);
    st->held[stream] = grown;
    st->len[stream] += len;
    /* pass on every complete line; hold the rest unless it grew too long.
     * A private-key block is held from its BEGIN line until its END line
     * (or the hold limit: then it goes out whole, and the redactor, finding
     * no END, redacts from BEGIN to the end), so no line of a key leaks. */
    size_t cut = st->len[stream];
    while (cut > 0 && grown[cut - 1] != '\n') cut--;
    if (st->redactor) {
        size_t open = svc_redact_open_block(grown, cut);
        if (open < cut) cut = open;
    }
    if (cut == 0 && st->len[stream] >= STREAM_HOLD) cut = st->len[stream];
    if (cut > 0) {
        emit(st, stream, grown, cut);
        memmove(grown, grown + cut, st->len[stream] - cut);
        st->len[stream] -= cut;
    }
    pthread_mutex_unlock(&st->mu);
}

static void stream_flush(streamer *st) {
    for (int k = 1; k <= 2; k++) {
        emit(st, k, st->held[k], st->len[k]);
        free(st->held[k]);
        st->held[k] = NULL;
        st->len[k] = 0;
    }
}

/* ---- the execution's state ---------------------------------------------------------- */

typedef struct exec_ctx {
    svc *s;
    const svc_view *view;
    const svc_config *cfg;
    const svc_exec_request *req;
    const svc_caller *caller;
    const svc_token *token;   /* the current config's entry; NULL with auth off */
    const char *token_name;   /* "" with auth off */
    const char *backend;      /* "wasm", "native", "gvisor" */
    al_policy policy;
    const char **argv;        /* built for python and wasm */
    al_dir_grant *dirs;
    char **resolved;          /* realpaths of the granted directories */
    svc_cap *cap;             /* SVC_PLUGIN: the installed capability (a reference) */
    char egress_log[SVC_PATH_MAX + 64]; /* the daemon's per-execution decision log, or "" */
    uint8_t *module;          /* read from module_path */
    size_t module_len;
    char code_sha256[65];
    bool streaming;
    streamer stream;
    /* the answer */
    int status;
    json_t *response;
} exec_ctx;

static void exec_ctx_free(exec_ctx *x) {
    if (x->resolved)
        for (size_t i = 0; i < x->req->ndirs; i++) free(x->resolved[i]);
    free(x->resolved);
    free(x->dirs);
    free(x->argv);
    free(x->module);
    svc_cap_release(x->cap);
    if (x->egress_log[0]) unlink(x->egress_log);
    if (x->streaming) pthread_mutex_destroy(&x->stream.mu);
    if (x->view) svc_view_release(x->s, x->view);
}

/* Set the error answer; always false, for `return refuse(...)`. metric is
 * the airlock_denied_total reason (NULL: none). */
__attribute__((format(printf, 5, 6))) static bool refuse(exec_ctx *x, int status,
                                                         const char *metric, const char *code,
                                                         const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    x->status = status;
    x->response = svc_error_json(code, "%s", msg);
    if (metric) svc_metrics_denied(svc_metrics_of(x->s), metric, 1);
    return false;
}

static uint64_t monotonic_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* ---- authorise and rate limit ------------------------------------------------------- */

static bool authorise(exec_ctx *x) {
    x->token_name = "";
    if (!x->caller->token) return true; /* auth is off for this listener */
    for (size_t i = 0; i < x->cfg->ntokens; i++) {
        if (memcmp(x->cfg->tokens[i].sha256, x->caller->token->sha256, 32) == 0) {
            x->token = &x->cfg->tokens[i];
            x->token_name = x->token->name;
            return true;
        }
    }
    return refuse(x, 401, "auth", "unauthorized", "the token is no longer configured");
}

/* Take one from bucket "<class>:<token>"; per_minute 0 means no limit. */
static bool take(exec_ctx *x, const char *class, uint32_t per_minute) {
    if (per_minute == 0) return true;
    char key[SVC_NAME_MAX + 16];
    snprintf(key, sizeof key, "%s:%s", class, x->token_name);
    uint32_t retry = 0;
    if (svc_ratelimit_take(svc_ratelimit_of(x->s), key, per_minute, monotonic_ms(), &retry))
        return true;
    if (retry == 0) retry = 1;
    refuse(x, 429, "rate_limit", "rate_limited",
           "rate limit: %" PRIu32 " %s executions per minute%s%s%s; retry in %" PRIu32 " s",
           per_minute, strcmp(class, "python") ? "" : "python", x->token ? " for token \"" : "",
           x->token_name, x->token ? "\"" : "", retry);
    json_t *e = json_object_get(x->response, "error");
    if (e) json_object_set_new(e, "retry_after", json_integer(retry));
    return false;
}

static bool rate_limit(exec_ctx *x) {
    uint32_t py = x->token && x->token->python_per_minute ? x->token->python_per_minute
                                                          : x->cfg->python_per_minute;
    uint32_t all = x->token && x->token->exec_per_minute ? x->token->exec_per_minute
                                                         : x->cfg->exec_per_minute;
    if (x->req->kind == SVC_PYTHON && !take(x, "python", py)) return false;
    return take(x, "exec", all);
}

/* ---- limits ------------------------------------------------------------------------------ */

static bool limits(exec_ctx *x) {
    const svc_config *c = x->cfg;
    const svc_exec_request *r = x->req;
    al_policy *p = &x->policy;
    uint64_t max_timeout = c->max_timeout_ms ? c->max_timeout_ms : c->timeout_ms;
    if (r->timeout_ms && max_timeout && r->timeout_ms > max_timeout)
        return refuse(x, 400, "bad_request", "limit",
                      "timeout_ms: at most %" PRIu64 " (the daemon's max_timeout_ms)", max_timeout);
    p->timeout_ms = r->timeout_ms ? r->timeout_ms : c->timeout_ms;
    if (max_timeout && p->timeout_ms > max_timeout) p->timeout_ms = max_timeout;
    if (r->memory_bytes && c->memory_bytes && r->memory_bytes > c->memory_bytes)
        return refuse(x, 400, "bad_request", "limit",
                      "memory_bytes: at most %" PRIu64 " (the daemon's memory limit)",
                      c->memory_bytes);
    if (r->memory_bytes) p->max_memory_bytes = r->memory_bytes;
    else if (c->memory_bytes) p->max_memory_bytes = c->memory_bytes;
    if (r->kind != SVC_COMMAND) {
        uint64_t ceiling = c->fuel ? c->fuel : DEFAULT_FUEL;
        if (r->fuel > ceiling)
            return refuse(x, 400, "bad_request", "limit",
                          "fuel: at most %" PRIu64 " (the daemon's fuel limit)", ceiling);
        p->fuel = r->fuel ? r->fuel : ceiling;
    }
    if (c->output_bytes) p->stdout_cap = p->stderr_cap = c->output_bytes;
    return true;
}

/* ---- paths inside allowed_paths ----------------------------------------------------------- */

/* Is path (canonical) base itself or beneath it? */
static bool path_within(const char *path, const char *base) {
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') n--; /* "/data/" as "/data"; "/" stays */
    if (n == 1 && base[0] == '/') return path[0] == '/';
    return strncmp(path, base, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The realpath of a request's path when it lies inside an allowed path that
 * permits the access (want_rw: a read-write grant). NULL with the answer
 * set otherwise. what names the request field for the message. Whether a
 * path outside every allowed path exists is not told (403 either way). */
static char *allowed_realpath(exec_ctx *x, const char *path, bool want_rw, const char *what) {
    const svc_config *c = x->cfg;
    bool lexically_inside = false;
    for (size_t i = 0; i < c->nallowed_paths; i++)
        lexically_inside |= path_within(path, c->allowed_paths[i].path);
    char *real = realpath(path, NULL);
    if (!real) {
        if (lexically_inside && errno != ENOMEM)
            refuse(x, 400, "bad_request", "bad_path", "%s: %s", what, strerror(errno));
        else if (errno == ENOMEM)
            refuse(x, 500, NULL, "internal", "out of memory");
        else
            refuse(x, 403, "bad_request", "forbidden",
                   "%s: not inside a path the daemon allows (allowed_paths)", what);
        return NULL;
    }
    bool inside = false, writable = false;
    for (size_t i = 0; i < c->nallowed_paths; i++) {
        if (!path_within(real, c->allowed_paths[i].path)) continue;
        inside = true;
        writable |= !c->allowed_paths[i].read_only;
    }
    if (!inside) {
        refuse(x, 403, "bad_request", "forbidden",
               "%s: not inside a path the daemon allows (allowed_paths)", what);
    } else if (want_rw && !writable) {
        refuse(x, 403, "bad_request", "forbidden",
               "%s: the daemon allows this path read-only (set \"read_only\": true)", what);
    } else {
        return real;
    }
    free(real);
    return NULL;
}

static bool grant_dirs(exec_ctx *x) {
    const svc_exec_request *r = x->req;
    if (r->ndirs == 0) return true;
    x->dirs = calloc(r->ndirs, sizeof *x->dirs);
    x->resolved = calloc(r->ndirs, sizeof *x->resolved);
    if (!x->dirs || !x->resolved) return refuse(x, 500, NULL, "internal", "out of memory");
    for (size_t i = 0; i < r->ndirs; i++) {
        char what[32];
        snprintf(what, sizeof what, "dirs[%zu].host", i);
        x->resolved[i] = allowed_realpath(x, r->dirs[i].host_path, !r->dirs[i].read_only, what);
        if (!x->resolved[i]) return false;
        struct stat st;
        if (stat(x->resolved[i], &st) != 0 || !S_ISDIR(st.st_mode))
            return refuse(x, 400, "bad_request", "bad_path", "%s: not a directory", what);
        x->dirs[i] = (al_dir_grant){x->resolved[i], r->dirs[i].guest_path, r->dirs[i].read_only};
    }
    x->policy.dirs = x->dirs;
    x->policy.ndirs = r->ndirs;
    return true;
}

/* module_path: read the (allowed, regular) file here, once, so what is
 * hashed is exactly what runs. */
static bool read_module(exec_ctx *x) {
    char *real = allowed_realpath(x, x->req->module_path, false, "module_path");
    if (!real) return false;
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    free(real);
    struct stat st;
    if (fd < 0) return refuse(x, 400, "bad_request", "bad_path", "module_path: %s", strerror(errno));
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!ok) refuse(x, 400, "bad_request", "bad_path", "module_path: not a regular file");
    else if ((uint64_t)st.st_size > MAX_MODULE)
        ok = refuse(x, 400, "bad_request", "too_large", "module_path: larger than 50 MiB");
    size_t len = ok ? (size_t)st.st_size : 0, got = 0;
    if (ok && !(x->module = malloc(len ? len : 1))) ok = refuse(x, 500, NULL, "internal", "out of memory");
    while (ok && got < len) {
        ssize_t n = read(fd, x->module + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ok = refuse(x, 400, "bad_request", "bad_path", "module_path: read failed");
        else got += (size_t)n;
    }
    close(fd);
    x->module_len = got;
    return ok;
}

/* ---- the policy --------------------------------------------------------------------------- */

static void fill_egress(al_egress *out, const al_egress *in) {
    out->allow_domains = in->allow_domains;
    out->nallow_domains = in->nallow_domains;
    out->deny_domains = in->deny_domains;
    out->ndeny_domains = in->ndeny_domains;
    out->allow_ports = in->allow_ports;
    out->nallow_ports = in->nallow_ports;
    out->allow_ips = in->allow_ips;
    out->nallow_ips = in->nallow_ips;
    out->headers = in->headers;
    out->nheaders = in->nheaders;
    out->hosts = in->hosts;
    out->nhosts = in->nhosts;
    /* request scalars are 0 when not given: the library's defaults stay */
    if (in->max_connections) out->max_connections = in->max_connections;
    if (in->max_bytes_per_connection) out->max_bytes_per_connection = in->max_bytes_per_connection;
    if (in->max_bytes) out->max_bytes = in->max_bytes;
    if (in->idle_timeout_ms) out->idle_timeout_ms = in->idle_timeout_ms;
    out->log_path = NULL; /* never a client's choice */
}

/* ---- egress decisions for the audit log ---------------------------------------------------- */

#define EGRESS_DECISIONS_MAX 1000             /* per audit row; the counts stay exact */
#define EGRESS_LOG_MAX ((size_t)1 << 20)      /* bytes of decision log read back */

/* A fresh execution with network grants logs its proxy decisions to a file
 * of the daemon's (never a client's choice), read back into the audit row. */
static void egress_log_path(exec_ctx *x) {
    const al_egress *e = &x->policy.egress;
    if (x->req->session || !x->cfg->state_dir[0] || (!e->nallow_domains && !e->nallow_ips)) return;
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) return;
    snprintf(x->egress_log, sizeof x->egress_log, "%s/egress-%016" PRIx64 ".jsonl",
             x->cfg->state_dir, nonce);
    x->policy.egress.log_path = x->egress_log;
}

/* The decisions (JSON lines) as an array, at most EGRESS_DECISIONS_MAX;
 * NULL when there is no log. A malformed line is skipped, never trusted. */
static json_t *egress_decisions(const exec_ctx *x, bool *truncated) {
    *truncated = false;
    if (!x->egress_log[0]) return NULL;
    FILE *f = fopen(x->egress_log, "re");
    if (!f) return json_array(); /* no connection was ever made */
    json_t *list = json_array();
    char *line = NULL;
    size_t cap = 0, total = 0;
    ssize_t n;
    while (list && (n = getline(&line, &cap, f)) > 0) {
        total += (size_t)n;
        if (total > EGRESS_LOG_MAX || json_array_size(list) == EGRESS_DECISIONS_MAX) {
            *truncated = true;
            break;
        }
        json_error_t je;
        json_t *d = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &je);
        if (json_is_object(d)) json_array_append(list, d);
        json_decref(d);
    }
    free(line);
    fclose(f);
    return list;
}

/* argv for python ("python", args...) and wasm (the module's name, args...). */
static bool guest_argv(exec_ctx *x, const char *argv0) {
    const svc_exec_request *r = x->req;
    x->argv = calloc(r->argc + 2, sizeof *x->argv);
    if (!x->argv) return refuse(x, 500, NULL, "internal", "out of memory");
    x->argv[0] = argv0;
    for (size_t i = 0; i < r->argc; i++) x->argv[i + 1] = r->argv[i];
    x->policy.argv = x->argv;
    x->policy.argc = r->argc + 1;
    return true;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : "module.wasm";
}

static bool backend_allowed(exec_ctx *x) {
    bool gvisor = x->req->backend == AL_ISOLATION_GVISOR;
    x->backend = gvisor ? "gvisor" : "native";
    if (gvisor ? x->cfg->allow_gvisor : x->cfg->allow_native) return true;
    return refuse(x, 403, "bad_request", "forbidden",
                  "backend: \"%s\" is disabled in the daemon's configuration", x->backend);
}

static bool build_policy(exec_ctx *x) {
    const svc_exec_request *r = x->req;
    al_policy *p = &x->policy;
    al_policy_init(p);
    /* every execution (and every session's) stops when the daemon cancels */
    p->cancel = svc_cancel_flag(x->s);
    p->cancel_reason = SVC_CANCEL_REASON;
    if (!limits(x) || !grant_dirs(x)) return false;
    p->env = (const char *const *)r->env;
    p->nenv = r->nenv;
    p->stdin_data = r->stdin_data;
    p->stdin_len = r->stdin_len;
    switch (r->kind) {
    case SVC_PYTHON:
        x->backend = "wasm";
        return guest_argv(x, "python");
    case SVC_WASM:
        x->backend = "wasm";
        if (r->module_path && !read_module(x)) return false;
        return guest_argv(x, r->module_path ? base_name(r->module_path) : "module.wasm");
    case SVC_PLUGIN:
        x->backend = "plugin";
        x->cap = svc_caps_get(svc_caps_of(x->s), r->capability);
        if (!x->cap)
            return refuse(x, 404, "bad_request", "not_found",
                          "capability: no capability \"%s\" is installed", r->capability);
        return true;
    case SVC_COMMAND:
        if (!backend_allowed(x)) return false;
        p->isolation = r->backend;
        p->argv = (const char *const *)r->argv;
        p->argc = r->argc;
        fill_egress(&p->egress, &r->egress);
        if (x->cfg->state_dir[0]) p->state_dir = x->cfg->state_dir;
        egress_log_path(x);
        return true;
    }
    return refuse(x, 400, "bad_request", "bad_request", "unknown kind");
}

/* ---- the audit row ------------------------------------------------------------------------ */

static void sha256_hex(exec_ctx *x) {
    const svc_exec_request *r = x->req;
    uint8_t md[32];
    unsigned mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    if (ok && r->kind == SVC_PLUGIN) { /* the module's digest is the capability's */
        EVP_MD_CTX_free(ctx);
        const char *d = svc_cap_digest(x->cap);
        snprintf(x->code_sha256, sizeof x->code_sha256, "%s", strncmp(d, "sha256:", 7) ? "" : d + 7);
        return;
    }
    if (ok && r->kind == SVC_PYTHON) ok = EVP_DigestUpdate(ctx, r->code, strlen(r->code)) == 1;
    else if (ok && r->kind == SVC_WASM)
        ok = r->module ? EVP_DigestUpdate(ctx, r->module, r->module_len) == 1
                       : EVP_DigestUpdate(ctx, x->module, x->module_len) == 1;
    else if (ok) /* argv: each argument with its NUL, so ["ab"] != ["a", "b"] */
        for (size_t i = 0; ok && i < r->argc; i++)
            ok = EVP_DigestUpdate(ctx, r->argv[i], strlen(r->argv[i]) + 1) == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;
    EVP_MD_CTX_free(ctx);
    if (ok) svc_hex(md, 32, x->code_sha256);
    else x->code_sha256[0] = '\0';
}

static json_t *string_array(const char *const *items, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_string(items[i]));
    return a;
}

/* The egress grant without the header values (secrets). */
static json_t *egress_json(const al_egress *e) {
    json_t *headers = json_array(), *hosts = json_object(), *ports = json_array();
    for (size_t i = 0; headers && i < e->nheaders; i++)
        json_array_append_new(headers, json_pack("{s:s, s:s}", "domain", e->headers[i].domain,
                                                 "name", e->headers[i].name));
    for (size_t i = 0; hosts && i < e->nhosts; i++)
        json_object_set_new(hosts, e->hosts[i].name, json_string(e->hosts[i].address));
    for (size_t i = 0; ports && i < e->nallow_ports; i++)
        json_array_append_new(ports, json_integer(e->allow_ports[i]));
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I}", "allow_domains",
                     string_array(e->allow_domains, e->nallow_domains), "deny_domains",
                     string_array(e->deny_domains, e->ndeny_domains), "allow_ports", ports,
                     "allow_ips", string_array(e->allow_ips, e->nallow_ips), "headers", headers,
                     "hosts", hosts, "max_connections", (json_int_t)e->max_connections,
                     "max_bytes_per_connection", (json_int_t)e->max_bytes_per_connection,
                     "max_bytes", (json_int_t)e->max_bytes, "idle_timeout_ms",
                     (json_int_t)e->idle_timeout_ms);
}

/* The effective policy: environment names only (values are secrets). */
static json_t *policy_json(const exec_ctx *x) {
    const al_policy *p = &x->policy;
    json_t *env = json_array(), *dirs = json_array();
    for (size_t i = 0; env && i < p->nenv; i++) {
        const char *eq = strchr(p->env[i], '=');
        json_array_append_new(env, json_stringn(p->env[i], eq ? (size_t)(eq - p->env[i])
                                                             : strlen(p->env[i])));
    }
    for (size_t i = 0; dirs && i < p->ndirs; i++)
        json_array_append_new(dirs, json_pack("{s:s, s:s, s:b}", "host", p->dirs[i].host_path,
                                              "guest", p->dirs[i].guest_path, "read_only",
                                              p->dirs[i].read_only));
    json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:I, s:b}", "kind", kind_names[x->req->kind],
                          "backend", x->backend, "env", env, "dirs", dirs, "stdin_bytes",
                          (json_int_t)p->stdin_len, "stream", x->streaming);
    if (j && x->req->kind == SVC_COMMAND) json_object_set_new(j, "egress", egress_json(&p->egress));
    if (j && x->req->kind == SVC_PLUGIN) {
        json_object_set_new(j, "capability", json_string(x->req->capability));
        json_object_set_new(j, "function", json_string(x->req->function));
    }
    if (j && x->req->kind == SVC_WASM && x->req->module_path)
        json_object_set_new(j, "module_path", json_string(x->req->module_path));
    return j;
}

static json_t *limits_json(const al_policy *p) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "timeout_ms", (json_int_t)p->timeout_ms,
                     "memory_bytes", (json_int_t)p->max_memory_bytes, "fuel",
                     (json_int_t)p->fuel, "stdout_bytes", (json_int_t)p->stdout_cap,
                     "stderr_bytes", (json_int_t)p->stderr_cap);
}

/* A compact JSON text, or a placeholder (the row is written regardless). */
static char *dump(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(j);
    return s;
}

static int64_t audit_begin(exec_ctx *x) {
    sha256_hex(x);
    char *policy = dump(policy_json(x)), *lim = dump(limits_json(&x->policy));
    svc_audit_start st = {
        .token = x->token_name,
        .session = x->req->session ? x->req->session : "",
        .kind = kind_names[x->req->kind],
        .backend = x->backend,
        .policy_json = policy ? policy : "{}",
        .code_sha256 = x->code_sha256,
        .limits_json = lim ? lim : "{}",
        .source = x->caller->source ? x->caller->source : "http",
    };
    int64_t id = svc_audit_begin(svc_audit_of(x->s), &st);
    free(policy);
    free(lim);
    if (id < 0) {
        char why[256] = "";
        svc_audit_last_error(svc_audit_of(x->s), why, sizeof why);
        svc_log(x->s, SVC_LOG_ERROR, "audit: could not record an execution: %s", why);
    }
    return id;
}

static void audit_end(exec_ctx *x, int64_t id, const al_result *res, unsigned redactions,
                      json_t *kinds) {
    if (id < 0) return;
    char *kinds_text = dump(json_incref(kinds));
    json_t *eg = json_pack("{s:I, s:I, s:I}", "allowed", (json_int_t)res->egress_allowed,
                           "denied", (json_int_t)res->egress_denied, "bytes",
                           (json_int_t)res->egress_bytes);
    bool truncated = false;
    json_t *decisions = egress_decisions(x, &truncated);
    if (eg && decisions) {
        json_object_set_new(eg, "decisions", decisions);
        if (truncated) json_object_set_new(eg, "decisions_truncated", json_true());
    } else {
        json_decref(decisions);
    }
    char *egress = dump(eg);
    svc_audit_finish f = {res, redactions, kinds_text ? kinds_text : "[]",
                          egress ? egress : "{}"};
    if (!svc_audit_end(svc_audit_of(x->s), id, &f)) {
        char why[256] = "";
        svc_audit_last_error(svc_audit_of(x->s), why, sizeof why);
        svc_log(x->s, SVC_LOG_ERROR, "audit: could not finish execution %" PRId64 ": %s", id, why);
    }
    free(kinds_text);
    free(egress);
}

/* ---- running ------------------------------------------------------------------------------ */

/* Before the audit row: what can refuse without running anything. */
static bool runnable(exec_ctx *x) {
    if (x->req->session) {
        svc_session_info info;
        if (!svc_session_get(svc_sessions_of(x->s), x->req->session, x->token_name, &info))
            return refuse(x, 404, "bad_request", "not_found", "session: no such session");
        if (info.kind != x->req->kind)
            return refuse(x, 400, "bad_request", "bad_request",
                          "session: this session runs %s executions", kind_names[info.kind]);
        return true;
    }
    const char *why = NULL;
    if (x->req->kind == SVC_PYTHON && !svc_python_of(x->s, &why))
        return refuse(x, 503, NULL, "unavailable", "python is unavailable: %s",
                      why ? why : "not configured");
    return true;
}

static const char *status_code_name(int status) {
    switch (status) {
    case 400: return "bad_request";
    case 404: return "not_found";
    case 409: return "busy";
    case 413: return "too_large";
    case 429: return "rate_limited";
    case 503: return "unavailable";
    default: return "internal";
    }
}

/* Run; false (with the answer set) when no result could be produced. */
static bool run(exec_ctx *x, al_result *res) {
    const svc_exec_request *r = x->req;
    memset(res, 0, sizeof *res);
    if (r->session) {
        char err[256] = "";
        svc_exec_request copy = *r;
        if (x->module) { /* what was checked and hashed, not the path again */
            copy.module = x->module;
            copy.module_len = x->module_len;
            copy.module_path = NULL;
        }
        errno = 0;
        if (svc_session_exec(svc_sessions_of(x->s), r->session, x->token_name, &x->policy, &copy,
                             res, err, sizeof err))
            return true;
        int status = svc_session_http_status(errno);
        return refuse(x, status, status < 500 ? "bad_request" : NULL, status_code_name(status),
                      "session: %s", err[0] ? err : "the execution failed");
    }
    bool ok = false;
    switch (r->kind) {
    case SVC_PYTHON: ok = al_python_run(svc_python_of(x->s, NULL), &x->policy, r->code, res); break;
    case SVC_WASM:
        ok = r->module ? al_run_wasm(&x->policy, r->module, r->module_len, res)
                       : al_run_wasm(&x->policy, x->module, x->module_len, res);
        break;
    case SVC_COMMAND: ok = al_exec(&x->policy, res); break;
    case SVC_PLUGIN: {
        const al_policy *p = &x->policy;
        svc_cap_limits lim = {p->timeout_ms, p->fuel, p->max_memory_bytes, p->stdout_cap,
                              p->cancel};
        ok = svc_cap_call(x->cap, r->function, r->stdin_data, r->stdin_len, &lim, res);
        break;
    }
    }
    if (ok) return true;
    return refuse(x, 500, NULL, "execution_failed", "the execution could not run: %s",
                  res->error.message[0] ? res->error.message : "unknown error");
}

static unsigned redact(exec_ctx *x, al_result *res, json_t *kinds) {
    const svc_redactor *rd = x->view->redactor;
    if (!rd) return 0;
    size_t n = 0;
    if (res->stdout_data) n += svc_redact(rd, &res->stdout_data, &res->stdout_len, kinds);
    if (res->stderr_data) n += svc_redact(rd, &res->stderr_data, &res->stderr_len, kinds);
    return n > UINT_MAX ? UINT_MAX : (unsigned)n;
}

static void count(exec_ctx *x, const al_result *res, unsigned redactions) {
    svc_metrics *m = svc_metrics_of(x->s);
    svc_metrics_execution(m, x->backend, al_status_name(res->status), (double)res->wall_ns / 1e9);
    if (res->denied_syscalls) svc_metrics_denied(m, "syscall", res->denied_syscalls);
    if (res->egress_denied) svc_metrics_denied(m, "egress", res->egress_denied);
    if (redactions) svc_metrics_denied(m, "redaction", redactions);
}

static void execute(exec_ctx *x) {
    if (!authorise(x) || !rate_limit(x) || !build_policy(x) || !runnable(x)) return;
    if (x->caller->on_output) {
        x->streaming = true;
        pthread_mutex_init(&x->stream.mu, NULL);
        x->stream.redactor = x->view->redactor;
        x->stream.fn = x->caller->on_output;
        x->stream.ctx = x->caller->output_ctx;
        x->policy.on_output = stream_chunk;
        x->policy.on_output_ctx = &x->stream;
    }
    int64_t audit_id = audit_begin(x);
    al_result res;
    bool ran = run(x, &res);
    if (x->streaming) stream_flush(&x->stream);
    json_t *kinds = json_array();
    unsigned redactions = ran ? redact(x, &res, kinds) : 0;
    if (!ran) { /* the row says why, as the error answer does */
        res.status = AL_STATUS_ERROR;
        const char *why = json_string_value(
            json_object_get(json_object_get(x->response, "error"), "message"));
        snprintf(res.error.message, sizeof res.error.message, "%s", why ? why : "failed");
    }
    audit_end(x, audit_id, &res, redactions, kinds);
    json_decref(kinds);
    count(x, &res, redactions);
    if (ran) {
        x->status = 200;
        x->response = svc_result_json(&res, redactions, audit_id);
        if (!x->response) refuse(x, 500, NULL, "internal", "out of memory");
    }
    svc_log(x->s, SVC_LOG_DEBUG, "execution %" PRId64 ": %s %s by \"%s\": %s", audit_id,
            kind_names[x->req->kind], x->backend, x->token_name, al_status_name(res.status));
    al_result_free(&res);
}

json_t *svc_execute(svc *s, const svc_exec_request *req, const svc_caller *caller,
                    int *status_code) {
    static const svc_caller anonymous = {NULL, "http", NULL, NULL};
    exec_ctx x = {.s = s, .req = req, .caller = caller ? caller : &anonymous, .status = 500};
    x.view = svc_view_acquire(s);
    x.cfg = x.view->config;
    execute(&x);
    exec_ctx_free(&x);
    if (!x.response) {
        x.status = 500;
        x.response = svc_error_json("internal", "out of memory");
    }
    if (status_code) *status_code = x.status;
    return x.response;
}
