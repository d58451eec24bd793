/*
 * ratelimit.c — per-key token buckets ("<token>:python", "<token>:exec", as
 * execute.c names them): a bucket holds per_minute executions, starts full,
 * and refills continuously at per_minute per minute.
 *
 * Invariants:
 *   - Integer arithmetic only: one execution is UNIT (60000) units, and a
 *     bucket gains per_minute units per millisecond, so refills are exact.
 *   - The clock is the caller's (now_ms, monotonic); a clock that steps back
 *     refills nothing.
 *   - A changed per_minute (config reload) applies at once: the bucket is
 *     clamped to the new capacity.
 *   - per_minute 0 admits nothing (retry after 60 s): the config never
 *     produces it, so reaching it is a caller's bug and must fail closed.
 *   - At most MAX_KEYS buckets (a sorted array, binary search). A new key
 *     beyond that evicts the fullest bucket: a full bucket is the same as a
 *     fresh one, so eviction costs nothing unless more than MAX_KEYS keys
 *     are all partly drained at once.
 *   - Keys longer than MAX_KEY_LEN bytes share the bucket of their prefix
 *     (fails closed: shared buckets only admit less).
 *   - One mutex guards everything; no call blocks while holding it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define UNIT UINT64_C(60000)
#define MAX_KEYS 10000
#define MAX_KEY_LEN 255

typedef struct bucket {
    char key[MAX_KEY_LEN + 1];
    uint64_t units;               /* UNIT per execution available */
    uint64_t last_ms;             /* when units was last brought up to date */
    uint32_t per_minute;
} bucket;

struct svc_ratelimit {
    pthread_mutex_t mu;
    bucket **v;                   /* sorted by key */
    size_t n;
};

svc_ratelimit *svc_ratelimit_new(void) {
    svc_ratelimit *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void svc_ratelimit_free(svc_ratelimit *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->v[i]);
    free(r->v);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Bring b up to now at its current rate, clamped to capacity. */
static void refill(bucket *b, uint32_t per_minute, uint64_t now_ms) {
    uint64_t cap = (uint64_t)per_minute * UNIT;
    if (now_ms > b->last_ms) {
        uint64_t elapsed = now_ms - b->last_ms;
        if (elapsed > UNIT) elapsed = UNIT; /* a minute fills any bucket */
        b->units += elapsed * per_minute;
        b->last_ms = now_ms;
    }
    if (b->units > cap) b->units = cap;
    b->per_minute = per_minute;
}

/* Index of key, or where it would go (*found false). */
static size_t lookup(const svc_ratelimit *r, const char *key, bool *found) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(r->v[mid]->key, key);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = false;
    return lo;
}

static void remove_at(svc_ratelimit *r, size_t i) {
    free(r->v[i]);
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof *r->v);
    r->n--;
}

/* Make room for one more key by dropping the fullest bucket (as of now). */
static void evict_one(svc_ratelimit *r, uint64_t now_ms) {
    size_t best = 0;
    double best_fill = -1; /* units / capacity */
    for (size_t i = 0; i < r->n; i++) {
        bucket *b = r->v[i];
        refill(b, b->per_minute, now_ms);
        double fill = (double)b->units / ((double)b->per_minute * (double)UNIT);
        if (fill > best_fill) {
            best = i;
            best_fill = fill;
        }
    }
    remove_at(r, best);
}

/* The bucket of key, created full when new; NULL when out of memory. */
static bucket *get_bucket(svc_ratelimit *r, const char *key, uint32_t per_minute,
                          uint64_t now_ms) {
    char k[MAX_KEY_LEN + 1];
    size_t kl = strnlen(key, MAX_KEY_LEN);
    memcpy(k, key, kl);
    k[kl] = '\0';
    bool found;
    size_t i = lookup(r, k, &found);
    if (found) return r->v[i];
    if (r->n >= MAX_KEYS) {
        evict_one(r, now_ms);
        i = lookup(r, k, &found);
    }
    bucket *b = calloc(1, sizeof *b);
    bucket **v = b ? realloc(r->v, (r->n + 1) * sizeof *v) : NULL;
    if (!v) {
        free(b);
        return NULL;
    }
    r->v = v;
    memcpy(b->key, k, kl + 1);
    b->units = (uint64_t)per_minute * UNIT;
    b->last_ms = now_ms;
    b->per_minute = per_minute;
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
    r->v[i] = b;
    r->n++;
    return b;
}

/* Whole seconds (at least 1) until b holds one execution at per_minute. */
static uint32_t seconds_until_one(const bucket *b, uint32_t per_minute) {
    uint64_t need = UNIT - b->units;                       /* units < UNIT here */
    uint64_t ms = (need + per_minute - 1) / per_minute;    /* per_minute units per ms */
    uint64_t s = (ms + 999) / 1000;
    return s ? (uint32_t)s : 1;
}

bool svc_ratelimit_take(svc_ratelimit *r, const char *key, uint32_t per_minute, uint64_t now_ms,
                        uint32_t *retry_after_s) {
    uint32_t retry = 60;
    bool ok = false;
    if (r && key && per_minute > 0) {
        pthread_mutex_lock(&r->mu);
        bucket *b = get_bucket(r, key, per_minute, now_ms);
        if (b) {
            refill(b, per_minute, now_ms);
            if (b->units >= UNIT) {
                b->units -= UNIT;
                ok = true;
            } else {
                retry = seconds_until_one(b, per_minute);
            }
        } else {
            retry = 1; /* out of memory: refuse, briefly */
        }
        pthread_mutex_unlock(&r->mu);
    }
    if (!ok && retry_after_s) *retry_after_s = retry;
    return ok;
}
