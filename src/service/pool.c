/*
 * pool.c — the bounded worker pool executions run on (service.h).
 *
 * N worker threads take jobs from one FIFO ring. The HTTP loop only ever
 * submits, so an execution never blocks accepting or reading requests.
 *
 * Invariants (all under `mu`):
 *  - capacity: queued + running <= workers + queue_max. A job waits only
 *    when every worker is busy, so "queue_max jobs already wait" is exactly
 *    queued + running - workers >= queue_max; counting both (not queued
 *    alone) keeps the answer the same whether or not an idle worker has
 *    woken up to take the previous job yet;
 *  - the ring holds `queued` jobs starting at `head`; its size is
 *    workers + queue_max, which the capacity rule never exceeds;
 *  - once `stopping` is set nothing is accepted again; workers keep taking
 *    queued jobs (draining) until the queue is empty, then exit;
 *  - nobody spins: workers sleep on `work`, shutdown sleeps on `idle` with a
 *    deadline on CLOCK_MONOTONIC (wall-clock jumps do not shorten or stretch
 *    the drain);
 *  - cancel_fn and job functions are called without the mutex held, so a
 *    job may submit to (or query) the pool itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"

typedef struct job {
    svc_job_fn fn;
    void *arg;
} job;

struct svc_pool {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was queued, or stopping was set */
    pthread_cond_t idle; /* a job finished or was taken: shutdown re-checks */
    pthread_t *threads;
    unsigned nthreads;   /* started (== workers unless creation failed) */
    unsigned workers, queue_max;
    job *ring;
    size_t ring_size, head, queued;
    unsigned running;
    bool stopping;
    bool joined;
};

static bool take_job(svc_pool *p, job *out) {
    if (p->queued == 0) return false;
    *out = p->ring[p->head];
    p->head = (p->head + 1) % p->ring_size;
    p->queued--;
    return true;
}

static void *worker_main(void *arg) {
    svc_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        job j;
        while (!take_job(p, &j)) {
            if (p->stopping) {
                pthread_cond_broadcast(&p->idle);
                pthread_mutex_unlock(&p->mu);
                return NULL;
            }
            pthread_cond_wait(&p->work, &p->mu);
        }
        p->running++;
        pthread_mutex_unlock(&p->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&p->mu);
        p->running--;
        pthread_cond_broadcast(&p->idle);
    }
}

static bool init_sync(svc_pool *p) {
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return false;
    bool ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
              pthread_mutex_init(&p->mu, NULL) == 0;
    if (ok && pthread_cond_init(&p->work, &ca) != 0) {
        pthread_mutex_destroy(&p->mu);
        ok = false;
    }
    if (ok && pthread_cond_init(&p->idle, &ca) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        ok = false;
    }
    pthread_condattr_destroy(&ca);
    return ok;
}

/* Stop and join whatever threads were started (creation failure or free). */
static void join_all(svc_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    bool already = p->joined;
    p->joined = true;
    pthread_mutex_unlock(&p->mu);
    if (already) return;
    for (unsigned i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
}

svc_pool *svc_pool_new(unsigned workers, unsigned queue_max) {
    if (workers == 0 || workers > 1024 || queue_max > 1000000) return NULL;
    svc_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->workers = workers;
    p->queue_max = queue_max;
    p->ring_size = (size_t)workers + queue_max;
    p->ring = calloc(p->ring_size, sizeof *p->ring);
    p->threads = calloc(workers, sizeof *p->threads);
    if (!p->ring || !p->threads || !init_sync(p)) {
        free(p->ring);
        free(p->threads);
        free(p);
        return NULL;
    }
    for (; p->nthreads < workers; p->nthreads++)
        if (pthread_create(&p->threads[p->nthreads], NULL, worker_main, p) != 0) break;
    if (p->nthreads < workers) {
        svc_pool_free(p);
        return NULL;
    }
    return p;
}

bool svc_pool_submit(svc_pool *p, svc_job_fn fn, void *arg) {
    if (!p || !fn) return false;
    pthread_mutex_lock(&p->mu);
    bool ok = !p->stopping && p->queued + p->running < p->ring_size;
    if (ok) {
        p->ring[(p->head + p->queued) % p->ring_size] = (job){fn, arg};
        p->queued++;
        pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void svc_pool_counts(svc_pool *p, unsigned *queued, unsigned *running) {
    pthread_mutex_lock(&p->mu);
    /* queued <= ring_size <= 1024 + 1000000: fits */
    if (queued) *queued = (unsigned)p->queued;
    if (running) *running = p->running;
    pthread_mutex_unlock(&p->mu);
}

static struct timespec deadline_after(uint64_t ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t ns = (uint64_t)t.tv_nsec + (ms % 1000) * 1000000u;
    t.tv_sec += (time_t)(ms / 1000 + ns / 1000000000u);
    t.tv_nsec = (long)(ns % 1000000000u);
    return t;
}

void svc_pool_shutdown(svc_pool *p, uint64_t deadline_ms, svc_job_fn cancel_fn) {
    if (!p) return;
    /* clamp so the seconds cannot overflow time_t: a day is "forever" here */
    if (deadline_ms > UINT64_C(86400000)) deadline_ms = UINT64_C(86400000);
    struct timespec until = deadline_after(deadline_ms);
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    int rc = 0;
    while ((p->queued > 0 || p->running > 0) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&p->idle, &p->mu, &until);
    /* past the deadline: whatever still waits is taken out and cancelled */
    size_t n = p->queued;
    job *left = n ? malloc(n * sizeof *left) : NULL;
    size_t taken = 0;
    job j;
    while (take_job(p, &j)) {
        if (left) left[taken++] = j;
        else if (cancel_fn) {
            /* no memory for the list: cancel one at a time, unlocked */
            pthread_mutex_unlock(&p->mu);
            cancel_fn(j.arg);
            pthread_mutex_lock(&p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < taken; i++)
        if (cancel_fn) cancel_fn(left[i].arg);
    free(left);
}

void svc_pool_free(svc_pool *p) {
    if (!p) return;
    /* without a shutdown first, queued jobs still run (drain) before the
     * workers exit: a job is never silently dropped */
    join_all(p);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    free(p->ring);
    free(p->threads);
    free(p);
}
