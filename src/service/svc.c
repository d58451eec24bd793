/*
 * svc.c — the daemon object (service.h, "svc.c"): owns the config (a deep
 * copy), the redactor, the audit log, metrics, rate limits, sessions, the
 * worker pool and the Python runtime; reloads on SIGHUP; logs.
 *
 * Invariants:
 *  - the config and the redactor built from it form one svc_view,
 *    reference-counted: s->view is the current one (it holds one reference
 *    itself); svc_reload builds the next one completely before taking the
 *    write lock, swaps the pointer and drops the old one's reference, so a
 *    failed reload changes nothing and a running execution (which holds its
 *    own reference) keeps reading the view it started with;
 *  - svc_lock/svc_unlock are the read side of the same rwlock: a
 *    svc_config_of() pointer is valid while it is held;
 *  - everything else is created once by svc_new and never replaced: the
 *    pool, listeners' limits, sessions and state_dir keep their values until
 *    a restart (svc_reload logs which of those changed);
 *  - teardown order is the reverse of use: the pool first (its jobs use
 *    everything else), then sessions (they hold Python interpreters), the
 *    Python runtime, the audit log, rate limits, metrics, the view;
 *  - a Python runtime that cannot be opened is not fatal: executions of
 *    kind "python" get a 503 with the reason kept here;
 *  - the cancel flag is part of the object, so it outlives every execution
 *    and session that points at it; it only ever goes from 0 to 1;
 *  - capabilities (issue 7) are installed from the config at svc_new and
 *    again at every reload (a failed one is logged, never fatal); with a
 *    registry configured, the publication outbox is opened and one thread
 *    retries it every few seconds until svc_free.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

typedef struct view_impl {
    svc_view pub; /* first: a const svc_view * is a view_impl * */
    svc_config config;
    svc_redactor *redactor;
    atomic_uint refs;
} view_impl;

struct svc {
    pthread_rwlock_t lock; /* guards `view` (the pointer) */
    view_impl *view;
    svc_log_level log_level;
    svc_audit *audit;
    svc_metrics *metrics;
    svc_ratelimit *ratelimit;
    svc_sessions *sessions;
    svc_pool *pool;
    al_python *python;
    char python_why[300];  /* why python is NULL */
    int cancel;            /* svc_cancel_flag: raised once (atomic stores/loads) */
    svc_caps *caps;        /* installed capabilities (capabilities.c) */
    /* publication: the outbox and the thread that retries it */
    al_publisher *publisher;
    char registry_url[256];  /* al_registry points here: lives as long as the publisher */
    al_registry registry;
    pthread_t retrier;
    bool retrier_running;
    pthread_mutex_t retry_mu;
    pthread_cond_t retry_cv;
    bool stopping;         /* under retry_mu */
};

/* ---- logging ------------------------------------------------------------------------ */

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static svc_log_level level_from_env(void) {
    const char *v = getenv("AIRLOCKD_LOG");
    for (unsigned i = 0; v && i < 4; i++)
        if (!strcmp(v, level_names[i])) return (svc_log_level)i;
    return SVC_LOG_INFO;
}

void svc_log(svc *s, svc_log_level level, const char *fmt, ...) {
    svc_log_level max = s ? s->log_level : SVC_LOG_INFO;
    if ((unsigned)level > (unsigned)max || (unsigned)level > SVC_LOG_DEBUG) return;
    char line[1024];
    int head = snprintf(line, sizeof line, "airlockd: %s: ", level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + head, sizeof line - (size_t)head - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)head + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2) len = sizeof line - 2;
    /* one line, whatever a message quotes */
    for (size_t i = (size_t)head; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) line[i] = '?';
    line[len++] = '\n';
    /* one write(2): concurrent lines never interleave */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

/* ---- views ------------------------------------------------------------------------------ */

static void view_unref(view_impl *v) {
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1) return;
    svc_redactor_free(v->redactor);
    svc_config_free(&v->config);
    free(v);
}

static view_impl *view_new(const svc_config *cfg, char *err, size_t errlen) {
    view_impl *v = calloc(1, sizeof *v);
    if (!v || !svc_config_copy(&v->config, cfg)) {
        snprintf(err, errlen, "out of memory");
        free(v);
        return NULL;
    }
    char why[256] = "";
    v->redactor = svc_redactor_new(cfg->redact_builtin, cfg->redact_patterns,
                                   cfg->nredact_patterns, why, sizeof why);
    if (!v->redactor) {
        snprintf(err, errlen, "redaction: %s", why[0] ? why : "could not be set up");
        svc_config_free(&v->config);
        free(v);
        return NULL;
    }
    v->pub.config = &v->config;
    v->pub.redactor = v->redactor;
    atomic_init(&v->refs, 1);
    return v;
}

const svc_view *svc_view_acquire(svc *s) {
    pthread_rwlock_rdlock(&s->lock);
    view_impl *v = s->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_rwlock_unlock(&s->lock);
    return &v->pub;
}

void svc_view_release(svc *s, const svc_view *v) {
    /* pub is the first member: the cast recovers the view_impl */
    view_unref((view_impl *)(uintptr_t)v);
}

/* ---- creation ------------------------------------------------------------------------- */

/* mkdir -p, each new directory 0700 (the state holds the audit log). */
static bool make_dirs(const char *path, char *err, size_t errlen) {
    char buf[SVC_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, errlen, "state_dir: path too long");
        return false;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char was = *p;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "state_dir: cannot create %s: %s", buf, strerror(errno));
            return false;
        }
        *p = was;
        if (was == '\0') return true;
    }
}

static void open_python(svc *s, const svc_config *cfg) {
    al_error e;
    memset(&e, 0, sizeof e);
    s->python = al_python_open(cfg->python_dir[0] ? cfg->python_dir : NULL, &e);
    if (s->python) return;
    snprintf(s->python_why, sizeof s->python_why, "%s",
             e.message[0] ? e.message : "python.wasm could not be opened");
    svc_log(s, SVC_LOG_WARN, "python unavailable: %s", s->python_why);
}

/* ---- capabilities: installed at start and reload; publications retried --------------- */

static void install_capabilities(svc *s, const svc_config *cfg) {
    if (cfg->cap_dir[0]) {
        unsigned n = svc_caps_load_dir(s->caps, s, cfg->cap_dir);
        svc_log(s, SVC_LOG_INFO, "capabilities: %u installed from %s", n, cfg->cap_dir);
    }
    al_registry reg = {.url = cfg->cap_registry, .max_blob_bytes = (size_t)cfg->cap_max_blob_bytes,
                       .timeout_ms = 30000, .cache_dir = cfg->cap_cache[0] ? cfg->cap_cache : NULL};
    for (size_t i = 0; i < cfg->ncap_install; i++) {
        char name[SVC_CAP_NAME_MAX] = "", why[400] = "";
        if (svc_caps_install_urn(s->caps, &reg, cfg->cap_install[i], NULL, name, sizeof name, why,
                                 sizeof why) == 201)
            svc_log(s, SVC_LOG_INFO, "capabilities: %s installed as %s", cfg->cap_install[i], name);
        else
            svc_log(s, SVC_LOG_WARN, "capabilities: %s", why);
    }
}

#define RETRY_PERIOD_S 2

/* Push what the outbox holds until svc_free: the publisher's own backoff
 * decides what is due; this only wakes it. */
static void *retry_main(void *arg) {
    svc *s = arg;
    pthread_mutex_lock(&s->retry_mu);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += RETRY_PERIOD_S;
        pthread_cond_timedwait(&s->retry_cv, &s->retry_mu, &until);
        if (s->stopping) break;
        pthread_mutex_unlock(&s->retry_mu);
        unsigned pushed = 0, pending = 0;
        al_error e;
        memset(&e, 0, sizeof e);
        if (!al_publisher_retry(s->publisher, false, &pushed, &pending, &e))
            svc_log(s, SVC_LOG_WARN, "publish: retry: %s", e.message);
        else if (pushed)
            svc_log(s, SVC_LOG_INFO, "publish: %u pushed from the outbox, %u pending", pushed,
                    pending);
        pthread_mutex_lock(&s->retry_mu);
    }
    pthread_mutex_unlock(&s->retry_mu);
    return NULL;
}

static bool open_publisher(svc *s, const svc_config *cfg, char *err, size_t errlen) {
    if (!cfg->cap_registry[0]) return true;
    char outbox[SVC_PATH_MAX + 16];
    if (cfg->cap_outbox[0]) snprintf(outbox, sizeof outbox, "%s", cfg->cap_outbox);
    else snprintf(outbox, sizeof outbox, "%s/outbox.db", cfg->state_dir);
    snprintf(s->registry_url, sizeof s->registry_url, "%s", cfg->cap_registry);
    s->registry = (al_registry){.url = s->registry_url,
                                .max_blob_bytes = (size_t)cfg->cap_max_blob_bytes,
                                .timeout_ms = 30000};
    al_error e;
    memset(&e, 0, sizeof e);
    s->publisher = al_publisher_open(outbox, &s->registry, &e);
    if (!s->publisher) {
        snprintf(err, errlen, "capabilities: outbox %s: %s", outbox, e.message);
        return false;
    }
    s->retrier_running = pthread_create(&s->retrier, NULL, retry_main, s) == 0;
    if (!s->retrier_running) {
        snprintf(err, errlen, "capabilities: cannot start the outbox thread");
        return false;
    }
    return true;
}

static void close_publisher(svc *s) {
    if (s->retrier_running) {
        pthread_mutex_lock(&s->retry_mu);
        s->stopping = true;
        pthread_cond_signal(&s->retry_cv);
        pthread_mutex_unlock(&s->retry_mu);
        pthread_join(s->retrier, NULL);
        s->retrier_running = false;
    }
    if (s->publisher) al_publisher_close(s->publisher);
    s->publisher = NULL;
}

static bool open_parts(svc *s, const svc_config *cfg, char *err, size_t errlen) {
    if (cfg->state_dir[0] && !make_dirs(cfg->state_dir, err, errlen)) return false;
    unsigned aborted = 0;
    char why[256] = "";
    s->audit = svc_audit_open(cfg->audit_db, &aborted, why, sizeof why);
    if (!s->audit) {
        snprintf(err, errlen, "audit log %s: %s", cfg->audit_db, why);
        return false;
    }
    if (aborted)
        svc_log(s, SVC_LOG_WARN, "audit: %u execution%s of a previous daemon marked aborted",
                aborted, aborted == 1 ? "" : "s");
    s->metrics = svc_metrics_new();
    s->ratelimit = svc_ratelimit_new();
    if (!s->metrics || !s->ratelimit) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    open_python(s, cfg);
    s->sessions = svc_sessions_new(cfg->state_dir, cfg->max_sessions, cfg->session_idle_s,
                                   cfg->session_workspace_bytes);
    if (!s->sessions) {
        snprintf(err, errlen, "sessions: cannot set up under %s", cfg->state_dir);
        return false;
    }
    if (s->python) svc_sessions_set_python(s->sessions, s->python);
    s->pool = svc_pool_new(cfg->workers, cfg->queue_max);
    if (!s->pool) {
        snprintf(err, errlen, "worker pool: cannot start %u workers", cfg->workers);
        return false;
    }
    s->caps = svc_caps_new();
    if (!s->caps) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    install_capabilities(s, cfg);
    return open_publisher(s, cfg, err, errlen);
}

svc *svc_new(const svc_config *cfg, char *err, size_t errlen) {
    svc *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->log_level = level_from_env();
    pthread_mutex_init(&s->retry_mu, NULL);
    pthread_cond_init(&s->retry_cv, NULL);
    if (pthread_rwlock_init(&s->lock, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        free(s);
        return NULL;
    }
    s->view = view_new(cfg, err, errlen);
    if (!s->view || !open_parts(s, cfg, err, errlen)) {
        svc_free(s);
        return NULL;
    }
    return s;
}

/* What a reload cannot change (the objects holding them live on). */
static void log_fixed(svc *s, const svc_config *old, const svc_config *cfg) {
    if (old->workers != cfg->workers || old->queue_max != cfg->queue_max)
        svc_log(s, SVC_LOG_WARN, "reload: workers and queue_max apply after a restart");
    if (strcmp(old->unix_socket, cfg->unix_socket) || strcmp(old->tcp_host, cfg->tcp_host) ||
        old->tcp_port != cfg->tcp_port)
        svc_log(s, SVC_LOG_WARN, "reload: listen addresses apply after a restart");
    if (strcmp(old->state_dir, cfg->state_dir) || strcmp(old->audit_db, cfg->audit_db) ||
        strcmp(old->python_dir, cfg->python_dir))
        svc_log(s, SVC_LOG_WARN, "reload: state_dir, audit_db and python_dir apply after a restart");
    if (old->max_sessions != cfg->max_sessions || old->session_idle_s != cfg->session_idle_s ||
        old->session_workspace_bytes != cfg->session_workspace_bytes)
        svc_log(s, SVC_LOG_WARN, "reload: session limits apply after a restart");
}

bool svc_reload(svc *s, const svc_config *cfg, char *err, size_t errlen) {
    view_impl *next = view_new(cfg, err, errlen);
    if (!next) return false;
    pthread_rwlock_wrlock(&s->lock);
    view_impl *old = s->view;
    s->view = next;
    pthread_rwlock_unlock(&s->lock);
    log_fixed(s, &old->config, cfg);
    if (strcmp(old->config.cap_registry, cfg->cap_registry) ||
        strcmp(old->config.cap_outbox, cfg->cap_outbox))
        svc_log(s, SVC_LOG_WARN, "reload: capabilities.registry for publishing and "
                                 "capabilities.outbox apply after a restart");
    view_unref(old);
    install_capabilities(s, cfg);
    svc_log(s, SVC_LOG_INFO, "configuration reloaded (%zu token%s)", cfg->ntokens,
            cfg->ntokens == 1 ? "" : "s");
    return true;
}

void svc_free(svc *s) {
    if (!s) return;
    /* parts may be missing when svc_new failed half way */
    if (s->pool) svc_pool_free(s->pool);
    close_publisher(s);
    if (s->caps) svc_caps_free(s->caps);
    if (s->sessions) svc_sessions_free(s->sessions);
    if (s->python) al_python_close(s->python);
    if (s->audit) svc_audit_close(s->audit);
    if (s->ratelimit) svc_ratelimit_free(s->ratelimit);
    if (s->metrics) svc_metrics_free(s->metrics);
    view_unref(s->view);
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->retry_mu);
    pthread_cond_destroy(&s->retry_cv);
    free(s);
}

/* ---- accessors ------------------------------------------------------------------------- */

const svc_config *svc_config_of(svc *s) { return &s->view->config; }
void svc_lock(svc *s) { pthread_rwlock_rdlock(&s->lock); }
void svc_unlock(svc *s) { pthread_rwlock_unlock(&s->lock); }
svc_metrics *svc_metrics_of(svc *s) { return s->metrics; }
svc_sessions *svc_sessions_of(svc *s) { return s->sessions; }
svc_pool *svc_pool_of(svc *s) { return s->pool; }
svc_audit *svc_audit_of(svc *s) { return s->audit; }
svc_ratelimit *svc_ratelimit_of(svc *s) { return s->ratelimit; }
svc_caps *svc_caps_of(svc *s) { return s->caps; }
al_publisher *svc_publisher_of(svc *s) { return s->publisher; }

al_python *svc_python_of(svc *s, const char **why) {
    if (why) *why = s->python ? NULL : s->python_why;
    return s->python;
}

const int *svc_cancel_flag(svc *s) { return &s->cancel; }
void svc_cancel_all(svc *s) { __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE); }
bool svc_cancelling(svc *s) { return __atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE) != 0; }
