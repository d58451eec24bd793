/*
 * unit_helpers.h — helpers several cmocka unit tests share (each test binary
 * is one tests/unit/test_NAME.c file, so these are static inline, not a library).
 *
 *   now_ns, now_ms, ms_since, sleep_ms   the monotonic clock, for timings;
 *   canceller                            a thread that raises an al_policy.cancel
 *                                        flag after a delay (the embedder's
 *                                        side of a cancellation), optionally
 *                                        only once the guest printed something;
 *   service helpers (only after service.h): python_dir, test_config,
 *                                        free_service, execute_json, str,
 *                                        audit_id, audit_row.
 *
 * Invariants: nothing here keeps state between calls; every json_t returned
 * is owned by the caller; a failure fails the running test (cmocka), never
 * returns a half-made value. Include it after <cmocka.h> (it uses cmocka's
 * assertions) and, for the service helpers, after "service.h".
 */
#ifndef AIRLOCK_UNIT_HELPERS_H
#define AIRLOCK_UNIT_HELPERS_H

#ifndef CMOCKA_H_
#error "include <cmocka.h> before unit_helpers.h"
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- the clock --------------------------------------------------------------------- */

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ms(void) {
    return now_ns() / 1000000u;
}

/* Milliseconds since t0_ns (a now_ns() reading), with the fraction. */
static inline double ms_since(uint64_t t0_ns) {
    return (double)(now_ns() - t0_ns) / 1e6;
}

static inline void sleep_ms(unsigned ms) {
    struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

/* ---- cancellation ------------------------------------------------------------------ */

/* A thread that raises flag delay_ms after it started (the embedder's side).
 * With wait_for_output, the delay counts from the guest's first output
 * (canceller_note_output, as the policy's on_output, sets started), so the
 * flag reaches a program that runs rather than a sandbox still booting.
 * raised_ns is the now_ns() reading just before the flag went up. */
typedef struct canceller {
    pthread_t thread;
    int flag;
    int started;
    bool wait_for_output;
    unsigned delay_ms;
    uint64_t raised_ns;
} canceller;

static inline void canceller_note_output(void *ctx, int stream, const uint8_t *data, size_t len) {
    canceller *c = ctx;
    __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
}

static inline void *canceller_main(void *arg) {
    canceller *c = arg;
    for (int i = 0; c->wait_for_output && i < 4000; i++) { /* at most 20 s */
        if (__atomic_load_n(&c->started, __ATOMIC_ACQUIRE)) break;
        sleep_ms(5);
    }
    sleep_ms(c->delay_ms);
    c->raised_ns = now_ns();
    __atomic_store_n(&c->flag, 1, __ATOMIC_RELEASE);
    return NULL;
}

static inline void canceller_begin(canceller *c, unsigned delay_ms, bool wait_for_output) {
    memset(c, 0, sizeof *c);
    c->delay_ms = delay_ms;
    c->wait_for_output = wait_for_output;
    assert_int_equal(pthread_create(&c->thread, NULL, canceller_main, c), 0);
}

/* The flag goes up delay_ms from now. */
static inline void canceller_start(canceller *c, unsigned delay_ms) {
    canceller_begin(c, delay_ms, false);
}

/* The flag goes up delay_ms after the guest's first output: set the policy's
 * on_output to canceller_note_output and on_output_ctx to c. */
static inline void canceller_start_after_output(canceller *c, unsigned delay_ms) {
    canceller_begin(c, delay_ms, true);
}

/* When the flag went up, in now_ms() units. */
static inline uint64_t canceller_raised_ms(const canceller *c) {
    return c->raised_ns / 1000000u;
}

/* ---- airlockd's service layer (needs service.h) ------------------------------------ */

#ifdef AIRLOCK_SERVICE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* build/python (the tests run from the repository root), or
 * $AIRLOCK_PYTHON_DIR; "" when neither holds python.wasm. */
static inline void python_dir(char *out, size_t len) {
    const char *env = getenv("AIRLOCK_PYTHON_DIR");
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/python.wasm", env ? env : "build/python");
    char *real = access(probe, R_OK) == 0 ? realpath(env ? env : "build/python", NULL) : NULL;
    snprintf(out, len, "%s", real ? real : "");
    free(real);
}

/* A config over the defaults with its state (and audit database) under root,
 * no Unix socket, generous timeouts and one token, alice ("tok-alice").
 * The caller sets listeners, workers, the Python directory and the rest. */
static inline void test_config(svc_config *c, const char *root) {
    svc_config_defaults(c);
    snprintf(c->state_dir, sizeof c->state_dir, "%s/state", root);
    snprintf(c->audit_db, sizeof c->audit_db, "%s/state/audit.db", root);
    c->unix_socket[0] = '\0';
    c->queue_max = 4;
    c->timeout_ms = 20000;
    c->max_timeout_ms = 60000;
    c->tokens = calloc(1, sizeof *c->tokens);
    assert_non_null(c->tokens);
    snprintf(c->tokens[0].name, SVC_NAME_MAX, "alice");
    svc_token_hash("tok-alice", c->tokens[0].sha256);
    c->ntokens = 1;
}

/* Frees s and cfg, then removes root and everything below it. */
static inline void free_service(svc *s, svc_config *cfg, const char *root) {
    svc_free(s);
    svc_config_free(cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* Runs a JSON request body as caller; the response (caller frees) and its
 * HTTP status. */
static inline json_t *execute_json(svc *s, svc_caller caller, const char *body_text, int *status) {
    json_error_t jerr;
    json_t *body = json_loads(body_text, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) fail_msg("bad test JSON: %s", jerr.text);
    svc_exec_request req;
    char err[256];
    if (!svc_request_parse(body, &req, err, sizeof err)) fail_msg("parse: %s", err);
    json_decref(body);
    json_t *out = svc_execute(s, &req, &caller, status);
    svc_request_free(&req);
    assert_non_null(out);
    return out;
}

static inline const char *str(const json_t *j, const char *key) {
    return json_string_value(json_object_get(j, key));
}

/* The audit id a result (svc_execute's response) names. */
static inline int64_t audit_id(const json_t *result) {
    return json_integer_value(json_object_get(result, "audit_id"));
}

/* The row of audit_db with this id (the caller frees it). */
static inline json_t *audit_row(const char *audit_db, int64_t id) {
    svc_audit_filter f = {.limit = 1000};
    char err[256] = "";
    json_t *rows = svc_audit_query(audit_db, &f, err, sizeof err);
    if (!rows) fail_msg("audit query: %s", err);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (json_integer_value(json_object_get(row, "id")) == id) {
            json_incref(row);
            json_decref(rows);
            return row;
        }
    }
    json_decref(rows);
    fail_msg("no audit row %lld", (long long)id);
    return NULL;
}

#endif /* AIRLOCK_SERVICE_H */

#endif /* AIRLOCK_UNIT_HELPERS_H */
