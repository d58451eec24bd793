/*
 * test_svc_auth.c — unit tests of src/service/auth.c (bearer tokens checked
 * against the configured SHA-256s) and src/service/ratelimit.c (per-key
 * token buckets).
 *
 * Auth: the right token of several, wrong ones, and every malformed header
 * shape (other schemes, no token, bad characters, tabs, overlong) must give
 * NULL, never a token. Rate limits run on a fake clock (now_ms is the
 * caller's), so bursts, refills and Retry-After values are exact; a threaded
 * case checks that the mutex keeps the count exact under contention.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

/* ---- auth -------------------------------------------------------------------------- */

static void config_with_tokens(svc_config *c) {
    static const char *const names[] = {"alpha", "beta", "gamma"};
    static const char *const secrets[] = {"alpha-secret-token-1", "beta.Secret~token/2+",
                                          "Z2FtbWEtdG9rZW4=="};
    svc_config_defaults(c);
    c->ntokens = 3;
    c->tokens = calloc(3, sizeof *c->tokens);
    assert_non_null(c->tokens);
    for (size_t i = 0; i < 3; i++) {
        snprintf(c->tokens[i].name, sizeof c->tokens[i].name, "%s", names[i]);
        svc_token_hash(secrets[i], c->tokens[i].sha256);
    }
}

static void test_auth_right_tokens(void **state) {
    (void)state;
    svc_config c;
    config_with_tokens(&c);
    const svc_token *t = svc_auth(&c, "Bearer alpha-secret-token-1");
    assert_non_null(t);
    assert_string_equal(t->name, "alpha");
    t = svc_auth(&c, "bearer beta.Secret~token/2+");
    assert_non_null(t);
    assert_string_equal(t->name, "beta");
    t = svc_auth(&c, "BEARER    Z2FtbWEtdG9rZW4==");
    assert_non_null(t);
    assert_string_equal(t->name, "gamma");
    t = svc_auth(&c, "Bearer alpha-secret-token-1  \t"); /* trailing blanks */
    assert_non_null(t);
    assert_ptr_equal(t, &c.tokens[0]);
    svc_config_free(&c);
}

static void test_auth_wrong_and_malformed(void **state) {
    (void)state;
    svc_config c;
    config_with_tokens(&c);
    static const char *const bad[] = {
        "",
        "Bearer",
        "Bearer ",
        "Bearer    ",
        "Bearer alpha-secret-token-2",       /* wrong token */
        "Bearer alpha-secret-token-",         /* a prefix */
        "Bearer alpha-secret-token-11",       /* an extension */
        "Bearer ALPHA-SECRET-TOKEN-1",        /* tokens are case-sensitive */
        "Basic YWxwaGE6c2VjcmV0",
        "Token alpha-secret-token-1",
        "Bearer\talpha-secret-token-1",       /* SP only between scheme and token */
        "Beareralpha-secret-token-1",
        " Bearer alpha-secret-token-1",
        "Bearer alpha-secret-token-1 extra",
        "Bearer alpha-secret-token-1,",
        "Bearer alpha secret",
        "Bearer alpha-secret-token-1\r\n",
        "Bearer =alpha",                      /* '=' only at the end */
        "Bearer Z2FtbWEtdG9rZW4==x",
        "Bearer tok@n",
        "Bearer \"alpha-secret-token-1\"",
        "Bearer alpha-secret-token-1\x80",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (svc_auth(&c, bad[i])) fail_msg("accepted header %zu: \"%s\"", i, bad[i]);
    assert_null(svc_auth(&c, NULL));
    assert_null(svc_auth(NULL, "Bearer alpha-secret-token-1"));

    /* overlong: 4096 token bytes is the cap, whatever the token */
    char *h = malloc(8 + 5000);
    assert_non_null(h);
    strcpy(h, "Bearer ");
    memset(h + 7, 'a', 5000);
    h[7 + 5000] = '\0';
    assert_null(svc_auth(&c, h));
    svc_token_hash(h + 7, c.tokens[0].sha256); /* even when it is configured */
    assert_null(svc_auth(&c, h));
    h[7 + 4096] = '\0'; /* exactly at the cap: accepted when configured */
    svc_token_hash(h + 7, c.tokens[0].sha256);
    const svc_token *t = svc_auth(&c, h);
    assert_non_null(t);
    assert_string_equal(t->name, "alpha");
    free(h);
    svc_config_free(&c);
}

static void test_auth_no_tokens(void **state) {
    (void)state;
    svc_config c;
    svc_config_defaults(&c);
    assert_null(svc_auth(&c, "Bearer anything-at-all"));
    /* a token whose hash is zeroes is no back door */
    c.tokens = calloc(1, sizeof *c.tokens);
    assert_non_null(c.tokens);
    c.ntokens = 1;
    strcpy(c.tokens[0].name, "zero");
    assert_null(svc_auth(&c, "Bearer anything-at-all"));
    svc_config_free(&c);
}

/* The first of two entries with the same hash wins (config.c refuses
 * duplicates; the scan still must not stop early or pick the last). */
static void test_auth_first_match(void **state) {
    (void)state;
    svc_config c;
    config_with_tokens(&c);
    memcpy(c.tokens[2].sha256, c.tokens[1].sha256, 32);
    const svc_token *t = svc_auth(&c, "Bearer beta.Secret~token/2+");
    assert_ptr_equal(t, &c.tokens[1]);
    svc_config_free(&c);
}

/* ---- rate limits --------------------------------------------------------------------- */

static void test_burst_then_refill(void **state) {
    (void)state;
    svc_ratelimit *r = svc_ratelimit_new();
    assert_non_null(r);
    uint32_t retry = 0;
    uint64_t t0 = 1000000;
    for (int i = 0; i < 10; i++) assert_true(svc_ratelimit_take(r, "alpha:python", 10, t0, &retry));
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t0, &retry));
    assert_int_equal(retry, 6); /* one per 6 s */
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t0 + 3000, &retry));
    assert_int_equal(retry, 3);
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t0 + 5001, &retry));
    assert_int_equal(retry, 1); /* 999 ms, rounded up */
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t0 + 5999, &retry));
    assert_int_equal(retry, 1);
    assert_true(svc_ratelimit_take(r, "alpha:python", 10, t0 + 6000, &retry));
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t0 + 6000, &retry));
    assert_int_equal(retry, 6);
    /* an hour later the bucket is full, not overfull */
    uint64_t t1 = t0 + 3600 * 1000;
    for (int i = 0; i < 10; i++) assert_true(svc_ratelimit_take(r, "alpha:python", 10, t1, &retry));
    assert_false(svc_ratelimit_take(r, "alpha:python", 10, t1, &retry));
    svc_ratelimit_free(r);
}

static void test_keys_are_independent(void **state) {
    (void)state;
    svc_ratelimit *r = svc_ratelimit_new();
    uint32_t retry;
    assert_true(svc_ratelimit_take(r, "a", 1, 0, &retry));
    assert_false(svc_ratelimit_take(r, "a", 1, 0, &retry));
    assert_int_equal(retry, 60);
    assert_true(svc_ratelimit_take(r, "b", 1, 0, &retry));
    assert_true(svc_ratelimit_take(r, "a:", 1, 0, &retry));
    assert_false(svc_ratelimit_take(r, "a", 1, 59999, &retry));
    assert_int_equal(retry, 1);
    assert_true(svc_ratelimit_take(r, "a", 1, 60000, &retry));
    svc_ratelimit_free(r);
}

static void test_rate_change_and_edges(void **state) {
    (void)state;
    svc_ratelimit *r = svc_ratelimit_new();
    uint32_t retry = 7;
    /* a lower rate after a reload clamps the bucket */
    assert_true(svc_ratelimit_take(r, "k", 100, 0, &retry));
    assert_true(svc_ratelimit_take(r, "k", 2, 0, &retry));
    assert_true(svc_ratelimit_take(r, "k", 2, 0, &retry));
    assert_false(svc_ratelimit_take(r, "k", 2, 0, &retry));
    assert_int_equal(retry, 30);
    /* a clock stepping back refills nothing and breaks nothing */
    assert_true(svc_ratelimit_take(r, "k2", 1, 5000, &retry));
    assert_false(svc_ratelimit_take(r, "k2", 1, 1000, &retry));
    assert_false(svc_ratelimit_take(r, "k2", 1, 64999, &retry));
    assert_true(svc_ratelimit_take(r, "k2", 1, 65000, &retry));
    /* per_minute 0 admits nothing */
    assert_false(svc_ratelimit_take(r, "zero", 0, 0, &retry));
    assert_int_equal(retry, 60);
    /* a huge rate */
    for (int i = 0; i < 1000; i++) assert_true(svc_ratelimit_take(r, "fast", UINT32_MAX, 0, &retry));
    /* a NULL retry pointer is allowed */
    assert_false(svc_ratelimit_take(r, "zero", 0, 0, NULL));
    svc_ratelimit_free(r);
}

/* 10,000 keys at most: new keys evict full buckets first, so a drained
 * bucket survives a flood of fresh keys. */
static void test_eviction_keeps_drained(void **state) {
    (void)state;
    svc_ratelimit *r = svc_ratelimit_new();
    uint32_t retry;
    assert_true(svc_ratelimit_take(r, "hot", 1, 0, &retry));
    assert_false(svc_ratelimit_take(r, "hot", 1, 0, &retry));
    char key[32];
    for (int i = 0; i < 12000; i++) {
        snprintf(key, sizeof key, "k%05d", i);
        /* per_minute 2: one taken, half full — fuller than "hot" */
        assert_true(svc_ratelimit_take(r, key, 2, 0, &retry));
    }
    assert_false(svc_ratelimit_take(r, "hot", 1, 0, &retry));
    assert_int_equal(retry, 60);
    svc_ratelimit_free(r);
}

typedef struct taker {
    svc_ratelimit *r;
    int ok;
} taker;

static void *take_many(void *arg) {
    taker *t = arg;
    uint32_t retry;
    for (int i = 0; i < 1000; i++)
        if (svc_ratelimit_take(t->r, "shared", 2000, 42, &retry)) t->ok++;
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    svc_ratelimit *r = svc_ratelimit_new();
    pthread_t th[4];
    taker tk[4];
    for (int i = 0; i < 4; i++) {
        tk[i] = (taker){r, 0};
        assert_int_equal(pthread_create(&th[i], NULL, take_many, &tk[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += tk[i].ok;
    }
    assert_int_equal(total, 2000);
    svc_ratelimit_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_right_tokens),
        cmocka_unit_test(test_auth_wrong_and_malformed),
        cmocka_unit_test(test_auth_no_tokens),
        cmocka_unit_test(test_auth_first_match),
        cmocka_unit_test(test_burst_then_refill),
        cmocka_unit_test(test_keys_are_independent),
        cmocka_unit_test(test_rate_change_and_edges),
        cmocka_unit_test(test_eviction_keeps_drained),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
