/*
 * test_svc_pool.c — the service's worker pool (src/service/pool.c): FIFO
 * order, the bound on waiting jobs (submit refuses past it), counts, drain
 * on shutdown, the deadline after which queued jobs are cancelled, and free
 * joining workers. Jobs block on a gate the test opens, so every check is
 * deterministic (no sleeps standing in for synchronisation).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    unsigned waiting; /* jobs blocked on the gate */
} gate;

static void gate_init(gate *g) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = false;
    g->waiting = 0;
}

static void gate_destroy(gate *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_pass(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->waiting++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    g->waiting--;
    pthread_mutex_unlock(&g->mu);
}

/* Wait until n jobs block on the gate (they are running, not queued). */
static void gate_wait_for(gate *g, unsigned n) {
    pthread_mutex_lock(&g->mu);
    while (g->waiting < n) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* A log of job ids, in the order they ran or were cancelled. */
typedef struct record {
    pthread_mutex_t mu;
    int ran[64];
    unsigned nran;
    int cancelled[64];
    unsigned ncancelled;
} record;

typedef struct job {
    record *rec;
    gate *g; /* NULL: do not block */
    int id;
    svc_pool *pool; /* for the job that submits another */
    struct job *child;
    bool child_accepted;
} job;

static void run_job(void *arg) {
    job *j = arg;
    if (j->g) gate_pass(j->g);
    pthread_mutex_lock(&j->rec->mu);
    j->rec->ran[j->rec->nran++] = j->id;
    pthread_mutex_unlock(&j->rec->mu);
}

static void cancel_job(void *arg) {
    job *j = arg;
    pthread_mutex_lock(&j->rec->mu);
    j->rec->cancelled[j->rec->ncancelled++] = j->id;
    pthread_mutex_unlock(&j->rec->mu);
}

static void submitting_job(void *arg) {
    job *j = arg;
    j->child_accepted = svc_pool_submit(j->pool, run_job, j->child);
    run_job(j);
}

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Poll (1 ms steps, at most 10 s) until n jobs have run. */
static void wait_for_runs(record *rec, unsigned n) {
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&rec->mu);
        unsigned ran = rec->nran;
        pthread_mutex_unlock(&rec->mu);
        if (ran >= n) return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("only some of %u jobs ran", n);
}

static void record_init(record *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

static void test_new_refuses_bad_sizes(void **state) {
    assert_null(svc_pool_new(0, 4));
    svc_pool *p = svc_pool_new(1, 0);
    assert_non_null(p);
    unsigned q = 9, r = 9;
    svc_pool_counts(p, &q, &r);
    assert_int_equal(q, 0);
    assert_int_equal(r, 0);
    svc_pool_free(p);
}

/* One worker blocked on the gate; ten jobs queue behind it and run in
 * submission order once it opens. */
static void test_fifo_order(void **state) {
    record rec;
    record_init(&rec);
    gate g;
    gate_init(&g);
    svc_pool *p = svc_pool_new(1, 16);
    assert_non_null(p);
    job first = {&rec, &g, -1, NULL, NULL, false};
    assert_true(svc_pool_submit(p, run_job, &first));
    gate_wait_for(&g, 1);
    job jobs[10];
    for (int i = 0; i < 10; i++) {
        jobs[i] = (job){&rec, NULL, i, NULL, NULL, false};
        assert_true(svc_pool_submit(p, run_job, &jobs[i]));
    }
    unsigned q, r;
    svc_pool_counts(p, &q, &r);
    assert_int_equal(q, 10);
    assert_int_equal(r, 1);
    gate_open(&g);
    svc_pool_shutdown(p, 10000, cancel_job);
    assert_int_equal(rec.nran, 11);
    assert_int_equal(rec.ncancelled, 0);
    assert_int_equal(rec.ran[0], -1);
    for (int i = 0; i < 10; i++) assert_int_equal(rec.ran[i + 1], i);
    svc_pool_free(p);
    gate_destroy(&g);
}

/* workers 2 + queue_max 3: five jobs are in, the sixth is refused; once
 * they finish there is room again. */
static void test_full_queue(void **state) {
    record rec;
    record_init(&rec);
    gate g;
    gate_init(&g);
    svc_pool *p = svc_pool_new(2, 3);
    assert_non_null(p);
    job jobs[7];
    for (int i = 0; i < 7; i++) jobs[i] = (job){&rec, &g, i, NULL, NULL, false};
    for (int i = 0; i < 5; i++) assert_true(svc_pool_submit(p, run_job, &jobs[i]));
    assert_false(svc_pool_submit(p, run_job, &jobs[5]));
    gate_wait_for(&g, 2);
    unsigned q, r;
    svc_pool_counts(p, &q, &r);
    assert_int_equal(r, 2);
    assert_int_equal(q, 3);
    assert_false(svc_pool_submit(p, run_job, &jobs[5])); /* still full */
    gate_open(&g);
    wait_for_runs(&rec, 5); /* then there is room again */
    assert_true(svc_pool_submit(p, run_job, &jobs[6]));
    svc_pool_shutdown(p, 10000, cancel_job);
    assert_int_equal(rec.nran, 6);
    svc_pool_free(p);
    gate_destroy(&g);
}

/* The running job outlives the deadline: shutdown returns after it, the
 * three queued jobs are cancelled (in order) and never run; nothing new is
 * accepted; free waits for the running job. */
static void test_shutdown_deadline_cancels(void **state) {
    record rec;
    record_init(&rec);
    gate g;
    gate_init(&g);
    svc_pool *p = svc_pool_new(1, 4);
    assert_non_null(p);
    job blocker = {&rec, &g, 100, NULL, NULL, false};
    job queued[3];
    assert_true(svc_pool_submit(p, run_job, &blocker));
    gate_wait_for(&g, 1);
    for (int i = 0; i < 3; i++) {
        queued[i] = (job){&rec, NULL, i, NULL, NULL, false};
        assert_true(svc_pool_submit(p, run_job, &queued[i]));
    }
    uint64_t t0 = now_ms();
    svc_pool_shutdown(p, 150, cancel_job);
    uint64_t waited = now_ms() - t0;
    assert_true(waited >= 140);
    assert_true(waited < 5000);
    assert_int_equal(rec.ncancelled, 3);
    for (int i = 0; i < 3; i++) assert_int_equal(rec.cancelled[i], i);
    assert_int_equal(rec.nran, 0);
    job late = {&rec, NULL, 7, NULL, NULL, false};
    assert_false(svc_pool_submit(p, run_job, &late));
    unsigned q, r;
    svc_pool_counts(p, &q, &r);
    assert_int_equal(q, 0);
    assert_int_equal(r, 1);
    gate_open(&g);
    svc_pool_free(p); /* joins the blocked worker */
    assert_int_equal(rec.nran, 1);
    assert_int_equal(rec.ran[0], 100);
    gate_destroy(&g);
}

/* Within the deadline, shutdown drains: queued jobs run, none cancelled. */
static void test_shutdown_drains(void **state) {
    record rec;
    record_init(&rec);
    svc_pool *p = svc_pool_new(2, 32);
    assert_non_null(p);
    job jobs[20];
    for (int i = 0; i < 20; i++) {
        jobs[i] = (job){&rec, NULL, i, NULL, NULL, false};
        assert_true(svc_pool_submit(p, run_job, &jobs[i]));
    }
    svc_pool_shutdown(p, 10000, cancel_job);
    assert_int_equal(rec.nran, 20);
    assert_int_equal(rec.ncancelled, 0);
    svc_pool_free(p);
}

/* A job may submit to its own pool (no lock held while jobs run). */
static void test_job_submits(void **state) {
    record rec;
    record_init(&rec);
    svc_pool *p = svc_pool_new(1, 2);
    assert_non_null(p);
    job child = {&rec, NULL, 2, NULL, NULL, false};
    job parent = {&rec, NULL, 1, p, &child, false};
    assert_true(svc_pool_submit(p, submitting_job, &parent));
    wait_for_runs(&rec, 2); /* a shutdown now would refuse the child */
    svc_pool_shutdown(p, 10000, cancel_job);
    assert_true(parent.child_accepted);
    assert_int_equal(rec.nran, 2);
    svc_pool_free(p);
}

/* Free without shutdown still runs what was queued before joining. */
static void test_free_drains(void **state) {
    record rec;
    record_init(&rec);
    svc_pool *p = svc_pool_new(3, 8);
    assert_non_null(p);
    job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (job){&rec, NULL, i, NULL, NULL, false};
        assert_true(svc_pool_submit(p, run_job, &jobs[i]));
    }
    svc_pool_free(p);
    assert_int_equal(rec.nran, 8);
}

/* A zero deadline does not wait: everything queued is cancelled at once. */
static void test_shutdown_zero_deadline(void **state) {
    record rec;
    record_init(&rec);
    gate g;
    gate_init(&g);
    svc_pool *p = svc_pool_new(1, 4);
    job blocker = {&rec, &g, 9, NULL, NULL, false}, a = {&rec, NULL, 1, NULL, NULL, false};
    assert_true(svc_pool_submit(p, run_job, &blocker));
    gate_wait_for(&g, 1);
    assert_true(svc_pool_submit(p, run_job, &a));
    uint64_t t0 = now_ms();
    svc_pool_shutdown(p, 0, cancel_job);
    assert_true(now_ms() - t0 < 1000);
    assert_int_equal(rec.ncancelled, 1);
    gate_open(&g);
    svc_pool_free(p);
    assert_int_equal(rec.nran, 1);
    gate_destroy(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_bad_sizes),
        cmocka_unit_test(test_fifo_order),
        cmocka_unit_test(test_full_queue),
        cmocka_unit_test(test_shutdown_deadline_cancels),
        cmocka_unit_test(test_shutdown_drains),
        cmocka_unit_test(test_job_submits),
        cmocka_unit_test(test_free_drains),
        cmocka_unit_test(test_shutdown_zero_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
