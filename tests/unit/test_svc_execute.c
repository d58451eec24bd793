/*
 * test_svc_execute.c — svc_execute end to end with a real svc (svc_new from
 * a config in a temporary directory: state, audit database, allowed paths),
 * no network: a wasm module from bytes and from an allowed path, Python
 * (skipped when build/python or the al_python runtime is missing), a native
 * `/bin/echo hi` (skipped when this host cannot run the native backend),
 * the per-token Python rate limit (429 with retry_after on the 11th call in
 * a minute), directory grants outside the allowed paths (403), ceilings
 * (400), tokens removed by a reload (401), redaction of an AWS key the
 * program prints — in the result, the stream and the audit row.
 *
 * The wasm program is a 208-byte WASI `cat` (stdin → stdout), so one module
 * prints whatever a test needs: its text is in the comment above cat_wasm.
 * Audit rows come from svc_audit_query, which parses the *_json columns
 * (policy_json → "policy", redaction_kinds_json → "redaction_kinds").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"
#include "unit_helpers.h"

/* (module
 *   (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
 *   (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
 *   (memory (export "memory") 1)
 *   (func (export "_start") (local $n i32)
 *     (loop $again
 *       (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 4096))
 *       (if (i32.ne (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))
 *                   (i32.const 0)) (then (return)))
 *       (local.set $n (i32.load (i32.const 8)))
 *       (if (i32.eqz (local.get $n)) (then (return)))
 *       (i32.store (i32.const 16) (i32.const 64)) (i32.store (i32.const 20) (local.get $n))
 *       (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 24)))
 *       (br $again))))                                         wat2wasm 1.0.32 */
static const uint8_t cat_wasm[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x02, 0x60, 0x04, 0x7f, 0x7f,
    0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x02, 0x44, 0x02, 0x16, 0x77, 0x61, 0x73, 0x69,
    0x5f, 0x73, 0x6e, 0x61, 0x70, 0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69,
    0x65, 0x77, 0x31, 0x07, 0x66, 0x64, 0x5f, 0x72, 0x65, 0x61, 0x64, 0x00, 0x00, 0x16, 0x77,
    0x61, 0x73, 0x69, 0x5f, 0x73, 0x6e, 0x61, 0x70, 0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72,
    0x65, 0x76, 0x69, 0x65, 0x77, 0x31, 0x08, 0x66, 0x64, 0x5f, 0x77, 0x72, 0x69, 0x74, 0x65,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x01, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06,
    0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74,
    0x00, 0x02, 0x0a, 0x54, 0x01, 0x52, 0x01, 0x01, 0x7f, 0x03, 0x40, 0x41, 0x00, 0x41, 0xc0,
    0x00, 0x36, 0x02, 0x00, 0x41, 0x04, 0x41, 0x80, 0x20, 0x36, 0x02, 0x00, 0x41, 0x00, 0x41,
    0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x41, 0x00, 0x47, 0x04, 0x40, 0x0f, 0x0b, 0x41,
    0x08, 0x28, 0x02, 0x00, 0x21, 0x00, 0x20, 0x00, 0x45, 0x04, 0x40, 0x0f, 0x0b, 0x41, 0x10,
    0x41, 0xc0, 0x00, 0x36, 0x02, 0x00, 0x41, 0x14, 0x20, 0x00, 0x36, 0x02, 0x00, 0x41, 0x01,
    0x41, 0x10, 0x41, 0x01, 0x41, 0x18, 0x10, 0x01, 0x1a, 0x0c, 0x00, 0x0b, 0x0b,
};

#define AWS_KEY "AKIAIOSFODNN7EXAMPLE"

typedef struct fixture {
    char root[64];            /* the temporary directory */
    char allowed[128];        /* allowed read-write */
    char ro[128];             /* allowed read-only */
    char outside[128];        /* not allowed */
    svc_config cfg;
    svc *s;
    svc_token alice;          /* the caller's copy of the configured token */
} fixture;

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void make_dir(char out[128], const char *root, const char *name) {
    snprintf(out, 128, "%.60s/%.60s", root, name);
    assert_int_equal(mkdir(out, 0700), 0);
}

/* A config over the defaults: everything under root, no listeners. */
static void fixture_config(fixture *fx, const char *python) {
    svc_config *c = &fx->cfg;
    test_config(c, fx->root);
    c->tcp_host[0] = '\0';
    c->workers = 2;
    snprintf(c->python_dir, sizeof c->python_dir, "%s", python);
    c->allowed_paths = calloc(2, sizeof *c->allowed_paths);
    assert_non_null(c->allowed_paths);
    snprintf(c->allowed_paths[0].path, SVC_PATH_MAX, "%s", fx->allowed);
    snprintf(c->allowed_paths[1].path, SVC_PATH_MAX, "%s", fx->ro);
    c->allowed_paths[1].read_only = true;
    c->nallowed_paths = 2;
    fx->alice = c->tokens[0];
}

static fixture *fixture_new(const char *python) {
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->root, sizeof fx->root, "/tmp/airlock-test-svc-exec-XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    make_dir(fx->allowed, fx->root, "allowed");
    make_dir(fx->ro, fx->root, "ro");
    make_dir(fx->outside, fx->root, "outside");
    fixture_config(fx, python);
    char err[512] = "";
    fx->s = svc_new(&fx->cfg, err, sizeof err);
    if (!fx->s) fail_msg("svc_new: %s", err);
    return fx;
}

static int setup(void **state) {
    char py[PATH_MAX];
    python_dir(py, sizeof py);
    *state = fixture_new(py);
    return 0;
}

/* Python deliberately missing: fast 503s, for the rate limit. */
static int setup_no_python(void **state) {
    *state = fixture_new("/nonexistent/airlock-python");
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    free_service(fx->s, &fx->cfg, fx->root);
    free(fx);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------- */

typedef struct stream_log {
    pthread_mutex_t mu;
    char out[4096];
    size_t len;
} stream_log;

static void on_output(void *ctx, int stream, const uint8_t *data, size_t len) {
    stream_log *l = ctx;
    pthread_mutex_lock(&l->mu);
    if (stream == 1 && l->len + len < sizeof l->out) {
        memcpy(l->out + l->len, data, len);
        l->len += len;
    }
    pthread_mutex_unlock(&l->mu);
}

/* Run a JSON body as alice; the response (caller frees) and its status. */
static json_t *run_as(fixture *fx, const svc_token *token, const char *body_text, int *status,
                      stream_log *log) {
    return execute_json(fx->s, (svc_caller){token, "http", log ? on_output : NULL, log}, body_text,
                        status);
}

static json_t *run(fixture *fx, const char *body_text, int *status) {
    return run_as(fx, &fx->alice, body_text, status, NULL);
}

static const char *error_code(const json_t *out) {
    return json_string_value(json_object_get(json_object_get(out, "error"), "code"));
}

/* {"kind": "wasm", "module_base64": <cat>, "stdin": stdin, <extra>} */
static char *cat_body(const char *stdin_text, const char *extra) {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char b64[400];
    size_t o = 0, n = sizeof cat_wasm;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)cat_wasm[i] << 16;
        if (i + 1 < n) v |= (uint32_t)cat_wasm[i + 1] << 8;
        if (i + 2 < n) v |= cat_wasm[i + 2];
        b64[o++] = alphabet[v >> 18 & 63];
        b64[o++] = alphabet[v >> 12 & 63];
        b64[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        b64[o++] = i + 2 < n ? alphabet[v & 63] : '=';
    }
    b64[o] = '\0';
    char *body = malloc(1024 + strlen(extra) + strlen(stdin_text));
    assert_non_null(body);
    sprintf(body, "{\"kind\": \"wasm\", \"module_base64\": \"%s\", \"stdin\": \"%s\"%s%s}", b64,
            stdin_text, extra[0] ? ", " : "", extra);
    return body;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_wasm_bytes(void **state) {
    fixture *fx = *state;
    char *body = cat_body("hi\\n", "");
    int status = 0;
    json_t *out = run(fx, body, &status);
    free(body);
    assert_int_equal(status, 200);
    assert_string_equal(str(out, "status"), "ok");
    assert_string_equal(str(out, "stdout"), "hi\n");
    assert_string_equal(str(out, "backend"), "wasm");
    assert_int_equal(json_integer_value(json_object_get(out, "redactions")), 0);
    int64_t id = audit_id(out);
    assert_true(id > 0);
    json_t *row = audit_row(fx->cfg.audit_db, id);
    assert_string_equal(str(row, "status"), "ok");
    assert_string_equal(str(row, "token"), "alice");
    assert_string_equal(str(row, "kind"), "wasm");
    assert_int_equal(strlen(str(row, "code_sha256")), 64);
    json_decref(row);
    json_decref(out);
}

static void test_wasm_module_path(void **state) {
    fixture *fx = *state;
    char path[PATH_MAX + 32], body[PATH_MAX + 128];
    int status = 0;
    /* inside a read-only allowed path: fine (a module is only read) */
    snprintf(path, sizeof path, "%s/cat.wasm", fx->ro);
    write_file(path, cat_wasm, sizeof cat_wasm);
    snprintf(body, sizeof body, "{\"kind\": \"wasm\", \"module_path\": \"%s\", \"stdin\": \"x\"}", path);
    json_t *out = run(fx, body, &status);
    assert_int_equal(status, 200);
    assert_string_equal(str(out, "stdout"), "x");
    json_decref(out);
    /* outside: 403, whether or not the file exists */
    snprintf(path, sizeof path, "%s/cat.wasm", fx->outside);
    write_file(path, cat_wasm, sizeof cat_wasm);
    snprintf(body, sizeof body, "{\"kind\": \"wasm\", \"module_path\": \"%s\"}", path);
    out = run(fx, body, &status);
    assert_int_equal(status, 403);
    assert_string_equal(error_code(out), "forbidden");
    json_decref(out);
    snprintf(body, sizeof body, "{\"kind\": \"wasm\", \"module_path\": \"%s/none.wasm\"}", fx->outside);
    out = run(fx, body, &status);
    assert_int_equal(status, 403);
    json_decref(out);
    /* a ".." out of an allowed path is resolved first */
    snprintf(body, sizeof body, "{\"kind\": \"wasm\", \"module_path\": \"%s/../outside/cat.wasm\"}",
             fx->allowed);
    out = run(fx, body, &status);
    assert_int_equal(status, 403);
    json_decref(out);
    /* inside but missing: 400 */
    snprintf(body, sizeof body, "{\"kind\": \"wasm\", \"module_path\": \"%s/none.wasm\"}", fx->allowed);
    out = run(fx, body, &status);
    assert_int_equal(status, 400);
    json_decref(out);
}

static void test_python_print(void **state) {
    fixture *fx = *state;
    const char *why = NULL;
    if (!svc_python_of(fx->s, &why)) {
        fprintf(stderr, "skipped: python unavailable: %s\n", why ? why : "?");
        skip();
    }
    int status = 0;
    json_t *out = run(fx, "{\"kind\": \"python\", \"code\": \"print('hi', 6 * 7)\"}", &status);
    assert_int_equal(status, 200);
    assert_string_equal(str(out, "status"), "ok");
    assert_string_equal(str(out, "stdout"), "hi 42\n");
    assert_true(json_integer_value(json_object_get(out, "fuel_used")) > 0);
    json_decref(out);
}

static void test_native_echo(void **state) {
    fixture *fx = *state;
    int status = 0;
    json_t *out = run(fx, "{\"kind\": \"command\", \"argv\": [\"/bin/echo\", \"hi\"]}", &status);
    assert_int_equal(status, 200);
    if (!strcmp(str(out, "status"), "unsupported")) {
        fprintf(stderr, "skipped: native backend: %s\n", str(out, "error"));
        json_decref(out);
        skip();
    }
    if (strcmp(str(out, "status"), "ok") != 0)
        fail_msg("status %s: %s", str(out, "status"), str(out, "error"));
    assert_string_equal(str(out, "stdout"), "hi\n");
    assert_non_null(strstr(str(out, "backend"), "native"));
    json_t *row = audit_row(fx->cfg.audit_db, audit_id(out));
    assert_string_equal(str(row, "backend"), "native");
    json_decref(row);
    json_decref(out);
}

/* python_per_minute 10 (the default): calls 1..10 pass the limiter (503
 * here: no Python), the 11th is 429 with retry_after; other kinds still
 * have their own (exec_per_minute) budget. */
static void test_python_rate_limit(void **state) {
    fixture *fx = *state;
    int status = 0;
    for (int i = 0; i < 10; i++) {
        json_t *out = run(fx, "{\"kind\": \"python\", \"code\": \"pass\"}", &status);
        assert_int_equal(status, 503);
        assert_string_equal(error_code(out), "unavailable");
        json_decref(out);
    }
    json_t *out = run(fx, "{\"kind\": \"python\", \"code\": \"pass\"}", &status);
    assert_int_equal(status, 429);
    assert_string_equal(error_code(out), "rate_limited");
    json_int_t retry = json_integer_value(json_object_get(json_object_get(out, "error"), "retry_after"));
    assert_true(retry >= 1 && retry <= 60);
    json_decref(out);
    char *body = cat_body("ok", "");
    out = run(fx, body, &status);
    free(body);
    assert_int_equal(status, 200);
    json_decref(out);
}

static void test_dirs(void **state) {
    fixture *fx = *state;
    char body[PATH_MAX * 2], extra[PATH_MAX + 128], link[PATH_MAX + 16];
    int status = 0;
    /* outside every allowed path */
    snprintf(body, sizeof body,
             "{\"kind\": \"command\", \"argv\": [\"/bin/true\"], \"dirs\": [{\"host\": \"%s\"}]}",
             fx->outside);
    json_t *out = run(fx, body, &status);
    assert_int_equal(status, 403);
    assert_string_equal(error_code(out), "forbidden");
    assert_non_null(strstr(str(json_object_get(out, "error"), "message"), "dirs[0].host"));
    json_decref(out);
    /* a symlink inside an allowed path that leads out of it */
    snprintf(link, sizeof link, "%s/escape", fx->allowed);
    assert_int_equal(symlink(fx->outside, link), 0);
    snprintf(extra, sizeof extra, "\"dirs\": [{\"host\": \"%s\", \"guest\": \"/d\"}]", link);
    char *cat = cat_body("x", extra);
    out = run(fx, cat, &status);
    free(cat);
    assert_int_equal(status, 403);
    json_decref(out);
    /* read-write where only read-only is allowed */
    snprintf(extra, sizeof extra, "\"dirs\": [{\"host\": \"%s\", \"guest\": \"/d\", \"read_only\": false}]",
             fx->ro);
    cat = cat_body("x", extra);
    out = run(fx, cat, &status);
    free(cat);
    assert_int_equal(status, 403);
    assert_non_null(strstr(str(json_object_get(out, "error"), "message"), "read-only"));
    json_decref(out);
    /* read-only there, and read-write inside the read-write one: granted */
    snprintf(extra, sizeof extra,
             "\"dirs\": [{\"host\": \"%s\", \"guest\": \"/r\"}, {\"host\": \"%s/\", \"guest\": \"/w\","
             " \"read_only\": false}]",
             fx->ro, fx->allowed);
    cat = cat_body("y", extra);
    out = run(fx, cat, &status);
    free(cat);
    assert_int_equal(status, 200);
    assert_string_equal(str(out, "stdout"), "y");
    json_t *row = audit_row(fx->cfg.audit_db, audit_id(out));
    json_t *policy = json_object_get(row, "policy"); /* policy_json, parsed */
    assert_int_equal(json_array_size(json_object_get(policy, "dirs")), 2);
    json_decref(row);
    json_decref(out);
}

static void test_ceilings(void **state) {
    fixture *fx = *state;
    int status = 0;
    json_t *out = run(fx, "{\"kind\": \"python\", \"code\": \"\", \"timeout_ms\": 60001}", &status);
    assert_int_equal(status, 400);
    assert_string_equal(str(json_object_get(out, "error"), "message"),
                        "timeout_ms: at most 60000 (the daemon's max_timeout_ms)");
    json_decref(out);
    out = run(fx, "{\"kind\": \"python\", \"code\": \"\", \"memory_bytes\": 4294967296}", &status);
    assert_int_equal(status, 400);
    json_decref(out);
    out = run(fx, "{\"kind\": \"python\", \"code\": \"\", \"fuel\": 1000000001}", &status);
    assert_int_equal(status, 400);
    json_decref(out);
}

static void test_tokens_and_reload(void **state) {
    fixture *fx = *state;
    int status = 0;
    svc_token mallory = {.name = "mallory"};
    svc_token_hash("tok-mallory", mallory.sha256);
    char *body = cat_body("x", "");
    json_t *out = run_as(fx, &mallory, body, &status, NULL);
    assert_int_equal(status, 401);
    json_decref(out);
    /* auth off for the listener (no token): runs, as "" */
    out = run_as(fx, NULL, body, &status, NULL);
    assert_int_equal(status, 200);
    json_decref(out);
    /* a reload that removes alice and disables native */
    svc_config next;
    assert_true(svc_config_copy(&next, &fx->cfg));
    next.ntokens = 0;
    next.allow_native = false;
    char err[256] = "";
    assert_true(svc_reload(fx->s, &next, err, sizeof err));
    svc_config_free(&next);
    out = run(fx, body, &status);
    assert_int_equal(status, 401);
    json_decref(out);
    out = run_as(fx, NULL, "{\"kind\": \"command\", \"argv\": [\"/bin/true\"]}", &status, NULL);
    assert_int_equal(status, 403);
    assert_string_equal(error_code(out), "forbidden");
    json_decref(out);
    free(body);
}

static void test_unknown_session(void **state) {
    fixture *fx = *state;
    char *body = cat_body("x", "\"session\": \"0123456789abcdef0123456789abcdef\"");
    int status = 0;
    json_t *out = run(fx, body, &status);
    free(body);
    assert_int_equal(status, 404);
    assert_string_equal(error_code(out), "not_found");
    json_decref(out);
}

/* The program prints an AWS key: the result and the stream carry the
 * redaction, the audit row counts it. */
static void test_redaction(void **state) {
    fixture *fx = *state;
    stream_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char *body = cat_body("key=" AWS_KEY "\\nnext line\\n", "\"stream\": true");
    int status = 0;
    json_t *out = run_as(fx, &fx->alice, body, &status, &log);
    free(body);
    assert_int_equal(status, 200);
    const char *so = str(out, "stdout");
    assert_null(strstr(so, AWS_KEY));
    assert_non_null(strstr(so, "[REDACTED:"));
    assert_non_null(strstr(so, "next line\n"));
    assert_true(json_integer_value(json_object_get(out, "redactions")) >= 1);
    log.out[log.len] = '\0';
    assert_null(strstr(log.out, AWS_KEY));
    assert_non_null(strstr(log.out, "[REDACTED:"));
    assert_non_null(strstr(log.out, "next line\n"));
    json_t *row = audit_row(fx->cfg.audit_db, audit_id(out));
    assert_true(json_integer_value(json_object_get(row, "redactions")) >= 1);
    char *kinds = json_dumps(json_object_get(row, "redaction_kinds"), JSON_COMPACT);
    assert_non_null(kinds);
    assert_non_null(strstr(kinds, "aws_access_key"));
    free(kinds);
    json_decref(row);
    json_decref(out);
}

/* Secrets of the request stay out of the audit log. */
static void test_audit_policy_has_no_secrets(void **state) {
    fixture *fx = *state;
    int status = 0;
    json_t *out = run(fx,
                      "{\"kind\": \"command\", \"argv\": [\"/bin/true\"], \"env\": {\"TOKEN\":"
                      " \"env-secret\"}, \"egress\": {\"allow_domains\": [\"example.com\"],"
                      " \"headers\": [{\"domain\": \"example.com\", \"name\": \"Authorization\","
                      " \"value\": \"header-secret\"}]}}",
                      &status);
    assert_int_equal(status, 200);
    json_t *row = audit_row(fx->cfg.audit_db, audit_id(out));
    char *policy = json_dumps(json_object_get(row, "policy"), JSON_COMPACT);
    assert_non_null(policy);
    assert_non_null(strstr(policy, "Authorization"));
    assert_non_null(strstr(policy, "TOKEN"));
    assert_null(strstr(policy, "header-secret"));
    assert_null(strstr(policy, "env-secret"));
    free(policy);
    json_decref(row);
    json_decref(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wasm_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wasm_module_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_python_print, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_python_rate_limit, setup_no_python, teardown),
        cmocka_unit_test_setup_teardown(test_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ceilings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_and_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_policy_has_no_secrets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
