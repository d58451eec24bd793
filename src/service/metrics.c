/*
 * metrics.c — the daemon's counters, gauges and latency histograms, rendered
 * in the Prometheus text exposition format, version 0.0.4 (GET /metrics).
 *
 *   airlock_executions_total{backend,status}   counter
 *   airlock_execution_seconds{backend}         histogram (BUCKETS below)
 *   airlock_denied_total{reason}               counter
 *   airlock_sessions_active                    gauge
 *   airlock_jobs_queued, airlock_jobs_running  gauges (the worker pool)
 *
 * Invariants:
 *   - Thread-safe: one mutex around every update and the render.
 *   - Bounded: at most MAX_SERIES label combinations per family; further
 *     ones are counted under the value "other" (a label value never comes
 *     from a client, but a bug must not grow memory without bound).
 *   - Label values are sanitised when stored (at most MAX_LABEL bytes,
 *     printable ASCII, anything else becomes '_') so two distinct inputs that
 *     would render alike share one series, and escaped (\\, \", \n) when
 *     rendered: the output is always valid exposition text.
 *   - Every family has its # HELP and # TYPE lines even with no samples yet.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define MAX_SERIES 256
#define MAX_LABEL 64
#define NBOUNDS 13

static const double bounds[NBOUNDS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                       1,     2.5,  5,     10,   30,  60};
static const char *const bound_text[NBOUNDS] = {"0.005", "0.01", "0.025", "0.05", "0.1",
                                                "0.25",  "0.5",  "1",     "2.5",  "5",
                                                "10",    "30",   "60"};

typedef struct series {
    char label[2][MAX_LABEL + 1];
    uint64_t value;               /* counters; the histogram's count */
    uint64_t buckets[NBOUNDS];    /* histogram: observations <= bounds[i] (not cumulative) */
    double sum;
} series;

typedef struct family {
    const char *name, *help, *type;
    const char *label_names[2];   /* NULL: fewer labels */
    series *v;
    size_t n;
} family;

struct svc_metrics {
    pthread_mutex_t mu;
    family executions, latency, denied;
    unsigned sessions, queued, running;
};

svc_metrics *svc_metrics_new(void) {
    svc_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return NULL;
    }
    m->executions = (family){"airlock_executions_total",
                             "Executions finished, by backend and result status.",
                             "counter", {"backend", "status"}, NULL, 0};
    m->latency = (family){"airlock_execution_seconds",
                          "Wall-clock time of executions, by backend.", "histogram",
                          {"backend", NULL}, NULL, 0};
    m->denied = (family){"airlock_denied_total",
                         "Operations denied, by reason (auth, rate_limit, queue_full, "
                         "bad_request, syscall, egress, redaction).",
                         "counter", {"reason", NULL}, NULL, 0};
    return m;
}

void svc_metrics_free(svc_metrics *m) {
    if (!m) return;
    free(m->executions.v);
    free(m->latency.v);
    free(m->denied.v);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static void sanitize(const char *in, char out[MAX_LABEL + 1]) {
    size_t i = 0;
    for (; in && in[i] && i < MAX_LABEL; i++) {
        unsigned char ch = (unsigned char)in[i];
        out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '_';
    }
    out[i] = '\0';
}

/* The series of (a, b) in f, created at zero when new; NULL when out of
 * memory. Past MAX_SERIES, new combinations go to ("other", "other"). */
static series *find_series(family *f, const char *a, const char *b) {
    char la[MAX_LABEL + 1], lb[MAX_LABEL + 1];
    sanitize(a, la);
    sanitize(b, lb);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < f->n; i++)
            if (strcmp(f->v[i].label[0], la) == 0 && strcmp(f->v[i].label[1], lb) == 0)
                return &f->v[i];
        if (f->n < MAX_SERIES) break;
        strcpy(la, "other");
        strcpy(lb, f->label_names[1] ? "other" : "");
    }
    series *v = realloc(f->v, (f->n + 1) * sizeof *v);
    if (!v) return NULL;
    f->v = v;
    series *s = &f->v[f->n++];
    memset(s, 0, sizeof *s);
    memcpy(s->label[0], la, sizeof la);
    memcpy(s->label[1], lb, sizeof lb);
    return s;
}

void svc_metrics_execution(svc_metrics *m, const char *backend, const char *status,
                           double seconds) {
    if (!m) return;
    if (!(seconds >= 0) || isinf(seconds)) seconds = 0; /* NaN, negative, infinite */
    pthread_mutex_lock(&m->mu);
    series *c = find_series(&m->executions, backend, status);
    if (c) c->value++;
    series *h = find_series(&m->latency, backend, NULL);
    if (h) {
        h->value++;
        h->sum += seconds;
        for (size_t i = 0; i < NBOUNDS; i++)
            if (seconds <= bounds[i]) {
                h->buckets[i]++;
                break;
            }
    }
    pthread_mutex_unlock(&m->mu);
}

void svc_metrics_denied(svc_metrics *m, const char *reason, uint64_t n) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(&m->denied, reason, NULL);
    if (s) s->value += n;
    pthread_mutex_unlock(&m->mu);
}

void svc_metrics_set_sessions(svc_metrics *m, unsigned active) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->sessions = active;
    pthread_mutex_unlock(&m->mu);
}

void svc_metrics_set_queue(svc_metrics *m, unsigned queued, unsigned running) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->queued = queued;
    m->running = running;
    pthread_mutex_unlock(&m->mu);
}

/* ---- rendering ------------------------------------------------------------------ */

static void put_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\') fputs("\\\\", f);
        else if (*s == '"') fputs("\\\"", f);
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

/* {a="x",b="y"[,le="..."]} */
static void put_labels(FILE *f, const family *fam, const series *s, const char *le) {
    fputc('{', f);
    for (int i = 0; i < 2 && fam->label_names[i]; i++) {
        fprintf(f, "%s%s=\"", i ? "," : "", fam->label_names[i]);
        put_escaped(f, s->label[i]);
        fputc('"', f);
    }
    if (le) fprintf(f, ",le=\"%s\"", le);
    fputc('}', f);
}

static void put_header(FILE *f, const char *name, const char *help, const char *type) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_counter(FILE *f, const family *fam) {
    put_header(f, fam->name, fam->help, fam->type);
    for (size_t i = 0; i < fam->n; i++) {
        fputs(fam->name, f);
        put_labels(f, fam, &fam->v[i], NULL);
        fprintf(f, " %llu\n", (unsigned long long)fam->v[i].value);
    }
}

/* " <v>\n" in the shortest %g form that reads back as the same double. */
static void put_double(FILE *f, double v) {
    char buf[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    fprintf(f, " %s\n", buf);
}

static void put_histogram(FILE *f, const family *fam) {
    put_header(f, fam->name, fam->help, fam->type);
    for (size_t i = 0; i < fam->n; i++) {
        const series *s = &fam->v[i];
        uint64_t cumulative = 0;
        for (size_t b = 0; b < NBOUNDS; b++) {
            cumulative += s->buckets[b];
            fprintf(f, "%s_bucket", fam->name);
            put_labels(f, fam, s, bound_text[b]);
            fprintf(f, " %llu\n", (unsigned long long)cumulative);
        }
        fprintf(f, "%s_bucket", fam->name);
        put_labels(f, fam, s, "+Inf");
        fprintf(f, " %llu\n", (unsigned long long)s->value);
        fprintf(f, "%s_sum", fam->name);
        put_labels(f, fam, s, NULL);
        put_double(f, s->sum);
        fprintf(f, "%s_count", fam->name);
        put_labels(f, fam, s, NULL);
        fprintf(f, " %llu\n", (unsigned long long)s->value);
    }
}

static void put_gauge(FILE *f, const char *name, const char *help, unsigned v) {
    put_header(f, name, help, "gauge");
    fprintf(f, "%s %u\n", name, v);
}

char *svc_metrics_render(svc_metrics *m) {
    if (!m) return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&m->mu);
    put_counter(f, &m->executions);
    put_histogram(f, &m->latency);
    put_counter(f, &m->denied);
    put_gauge(f, "airlock_sessions_active", "Sessions open now.", m->sessions);
    put_gauge(f, "airlock_jobs_queued", "Executions waiting for a worker.", m->queued);
    put_gauge(f, "airlock_jobs_running", "Executions running on a worker.", m->running);
    pthread_mutex_unlock(&m->mu);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}
