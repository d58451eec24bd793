/*
 * test_svc_metrics.c — unit tests of src/service/metrics.c: counters,
 * gauges and the latency histogram, rendered in the Prometheus text format
 * 0.0.4.
 *
 * Every rendering is parsed by a small checker that enforces the format:
 * "# HELP name text" and "# TYPE name counter|gauge|histogram" before a
 * family's samples, each sample "name{label="value",...} number" with a
 * valid metric name, properly escaped label values and a family that has
 * been declared; histogram buckets cumulative, ending with le="+Inf" equal
 * to _count. Specific lines are then looked up verbatim.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

/* ---- a strict reader of the exposition format -------------------------------------- */

static bool name_char(char ch, bool first) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
           (!first && ch >= '0' && ch <= '9');
}

/* The metric or label name at *p; advances past it. */
static size_t read_name(const char **p) {
    size_t n = 0;
    while (name_char((*p)[n], n == 0)) n++;
    *p += n;
    return n;
}

/* {a="x",b="y"}: checks the escapes (only \\, \" and \n). */
static void read_labels(const char **p, const char *line) {
    if (**p != '{') return;
    (*p)++;
    for (;;) {
        if (read_name(p) == 0) fail_msg("bad label name: %s", line);
        if (*(*p)++ != '=' || *(*p)++ != '"') fail_msg("bad label: %s", line);
        while (**p != '"') {
            if (**p == '\0' || **p == '\n') fail_msg("unterminated label value: %s", line);
            if (**p == '\\') {
                (*p)++;
                if (**p != '\\' && **p != '"' && **p != 'n') fail_msg("bad escape: %s", line);
            }
            (*p)++;
        }
        (*p)++;
        if (**p == '}') {
            (*p)++;
            return;
        }
        if (*(*p)++ != ',') fail_msg("bad label separator: %s", line);
    }
}

typedef struct family_seen {
    char name[64];
    char type[16];
    bool help;
} family_seen;

/* The family a sample name belongs to (histograms: _bucket/_sum/_count). */
static const family_seen *family_of(const family_seen *f, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++) {
        size_t fl = strlen(f[i].name);
        if (len < fl || strncmp(name, f[i].name, fl) != 0) continue;
        if (len == fl && strcmp(f[i].type, "histogram") != 0) return &f[i];
        if (strcmp(f[i].type, "histogram") == 0) {
            const char *suffix = name + fl;
            size_t sl = len - fl;
            if ((sl == 7 && !strncmp(suffix, "_bucket", 7)) || (sl == 4 && !strncmp(suffix, "_sum", 4)) ||
                (sl == 6 && !strncmp(suffix, "_count", 6)))
                return &f[i];
        }
    }
    return NULL;
}

/* Check the whole text; returns the number of samples. */
static size_t check_format(const char *text) {
    family_seen fams[16];
    size_t nfams = 0, samples = 0;
    assert_true(strlen(text) > 0);
    assert_int_equal(text[strlen(text) - 1], '\n');
    char *copy = strdup(text);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *p = line;
        if (strncmp(line, "# HELP ", 7) == 0) {
            p += 7;
            const char *name = p;
            size_t n = read_name(&p);
            assert_true(n > 0 && n < 64 && *p == ' ');
            assert_true(nfams < 16);
            memset(&fams[nfams], 0, sizeof fams[nfams]);
            memcpy(fams[nfams].name, name, n);
            fams[nfams].help = true;
            nfams++;
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            p += 7;
            const char *name = p;
            size_t n = read_name(&p);
            assert_true(nfams > 0);
            family_seen *f = &fams[nfams - 1];
            if (strlen(f->name) != n || strncmp(f->name, name, n) != 0)
                fail_msg("TYPE without its HELP: %s", line);
            assert_int_equal(*p++, ' ');
            if (strcmp(p, "counter") && strcmp(p, "gauge") && strcmp(p, "histogram"))
                fail_msg("bad type: %s", line);
            snprintf(f->type, sizeof f->type, "%s", p);
            continue;
        }
        if (line[0] == '#') fail_msg("unexpected comment: %s", line);
        const char *name = p;
        size_t n = read_name(&p);
        if (n == 0) fail_msg("bad sample: %s", line);
        const family_seen *f = family_of(fams, nfams, name, n);
        if (!f || !f->type[0]) fail_msg("sample of an undeclared family: %s", line);
        read_labels(&p, line);
        if (*p++ != ' ') fail_msg("no space before the value: %s", line);
        char *end;
        double v = strtod(p, &end);
        if (end == p || *end != '\0' || isnan(v)) fail_msg("bad value: %s", line);
        samples++;
    }
    free(copy);
    return samples;
}

static bool has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return true;
    return false;
}

static void expect_line(const char *text, const char *line) {
    if (!has_line(text, line)) fail_msg("missing line:\n%s\nin:\n%s", line, text);
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_empty(void **state) {
    (void)state;
    svc_metrics *m = svc_metrics_new();
    assert_non_null(m);
    char *t = svc_metrics_render(m);
    assert_non_null(t);
    assert_int_equal(check_format(t), 3);
    expect_line(t, "# TYPE airlock_executions_total counter");
    expect_line(t, "# TYPE airlock_execution_seconds histogram");
    expect_line(t, "# TYPE airlock_denied_total counter");
    expect_line(t, "# TYPE airlock_sessions_active gauge");
    expect_line(t, "airlock_sessions_active 0");
    expect_line(t, "airlock_jobs_queued 0");
    expect_line(t, "airlock_jobs_running 0");
    free(t);
    svc_metrics_free(m);
}

static void test_counts_and_histogram(void **state) {
    (void)state;
    svc_metrics *m = svc_metrics_new();
    svc_metrics_execution(m, "wasm", "ok", 0.003);
    svc_metrics_execution(m, "wasm", "ok", 0.2);
    svc_metrics_execution(m, "wasm", "timeout", 100);
    svc_metrics_execution(m, "native", "ok", 0.005); /* on a bound: in it */
    svc_metrics_denied(m, "auth", 1);
    svc_metrics_denied(m, "syscall", 5);
    svc_metrics_denied(m, "syscall", 2);
    svc_metrics_denied(m, "egress", 0);
    svc_metrics_set_sessions(m, 3);
    svc_metrics_set_queue(m, 2, 4);
    char *t = svc_metrics_render(m);
    assert_non_null(t);
    size_t samples = check_format(t);
    /* 3 counter series + 2 histograms x 16 lines (13 bounds, +Inf, _sum, _count)
     * + 3 denied + 3 gauges */
    assert_int_equal(samples, 3 + 2 * 16 + 3 + 3);
    expect_line(t, "airlock_executions_total{backend=\"wasm\",status=\"ok\"} 2");
    expect_line(t, "airlock_executions_total{backend=\"wasm\",status=\"timeout\"} 1");
    expect_line(t, "airlock_executions_total{backend=\"native\",status=\"ok\"} 1");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"0.005\"} 1");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"0.1\"} 1");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"0.25\"} 2");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"60\"} 2");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"+Inf\"} 3");
    expect_line(t, "airlock_execution_seconds_count{backend=\"wasm\"} 3");
    const char *sum = "\nairlock_execution_seconds_sum{backend=\"wasm\"} ";
    const char *p = strstr(t, sum);
    assert_non_null(p);
    assert_true(fabs(strtod(p + strlen(sum), NULL) - 100.203) < 1e-9);
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"native\",le=\"0.005\"} 1");
    expect_line(t, "airlock_denied_total{reason=\"auth\"} 1");
    expect_line(t, "airlock_denied_total{reason=\"syscall\"} 7");
    expect_line(t, "airlock_denied_total{reason=\"egress\"} 0");
    expect_line(t, "airlock_sessions_active 3");
    expect_line(t, "airlock_jobs_queued 2");
    expect_line(t, "airlock_jobs_running 4");
    /* every bucket list is cumulative */
    static const char *const les[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
                                      "1",     "2.5",  "5",     "10",   "30",  "60",  "+Inf"};
    long prev = -1;
    for (size_t i = 0; i < 14; i++) {
        char want[128];
        snprintf(want, sizeof want, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"%s\"} ",
                 les[i]);
        const char *q = strstr(t, want);
        assert_non_null(q);
        long v = strtol(q + strlen(want), NULL, 10);
        assert_true(v >= prev);
        prev = v;
    }
    free(t);
    svc_metrics_free(m);
}

static void test_escaping_and_odd_values(void **state) {
    (void)state;
    svc_metrics *m = svc_metrics_new();
    svc_metrics_execution(m, "a\"b\\c", "line\nbreak\x01\xc3\xa9", NAN);
    svc_metrics_execution(m, NULL, NULL, -1);
    svc_metrics_execution(m, "inf", "x", INFINITY);
    svc_metrics_denied(m, "", 1);
    char *t = svc_metrics_render(m);
    check_format(t);
    expect_line(t, "airlock_executions_total{backend=\"a\\\"b\\\\c\",status=\"line_break___\"} 1");
    expect_line(t, "airlock_executions_total{backend=\"\",status=\"\"} 1");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"\",le=\"0.005\"} 1");
    expect_line(t, "airlock_execution_seconds_sum{backend=\"inf\"} 0");
    expect_line(t, "airlock_denied_total{reason=\"\"} 1");
    free(t);
    svc_metrics_free(m);
}

/* At most 256 series per family; the rest are counted as "other". */
static void test_series_cap(void **state) {
    (void)state;
    svc_metrics *m = svc_metrics_new();
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "reason%d", i);
        svc_metrics_denied(m, name, 1);
    }
    char *t = svc_metrics_render(m);
    check_format(t);
    expect_line(t, "airlock_denied_total{reason=\"reason255\"} 1");
    expect_line(t, "airlock_denied_total{reason=\"other\"} 44");
    assert_false(has_line(t, "airlock_denied_total{reason=\"reason299\"} 1"));
    free(t);
    svc_metrics_free(m);
}

static void *record(void *arg) {
    svc_metrics *m = arg;
    for (int i = 0; i < 5000; i++) {
        svc_metrics_execution(m, "wasm", "ok", 0.01);
        svc_metrics_denied(m, "rate_limit", 1);
        if (i % 500 == 0) free(svc_metrics_render(m));
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    svc_metrics *m = svc_metrics_new();
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, record, m), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    char *t = svc_metrics_render(m);
    check_format(t);
    expect_line(t, "airlock_executions_total{backend=\"wasm\",status=\"ok\"} 20000");
    expect_line(t, "airlock_execution_seconds_bucket{backend=\"wasm\",le=\"0.01\"} 20000");
    expect_line(t, "airlock_denied_total{reason=\"rate_limit\"} 20000");
    free(t);
    svc_metrics_free(m);
    svc_metrics_free(NULL);
    assert_null(svc_metrics_render(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_counts_and_histogram),
        cmocka_unit_test(test_escaping_and_odd_values),
        cmocka_unit_test(test_series_cap),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
