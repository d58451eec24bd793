/*
 * test_svc_cancel.c — cancelling executions in airlockd's service layer:
 * svc_cancel_all and the flag execute.c gives every policy, and
 * svc_http_stop's shutdown (drain, then cancel, then close).
 *
 * What it pins down:
 *  - svc_cancel_all raised while executions run (a spinning wasm module,
 *    Python `time.sleep(60)`, a native `sleep 60`, and the same in a
 *    Python and a native session) ends each within ~100 ms: svc_execute
 *    answers 200 with the result, status "cancelled", error "shutdown"; the
 *    audit row says status "cancelled", abort_reason "shutdown"; the
 *    metrics count airlock_executions_total{status="cancelled"}; an
 *    execution started after the flag is cancelled at once;
 *  - svc_http_stop with a short drain deadline: a client whose execution
 *    is still running when the deadline passes gets that execution's
 *    cancelled result (HTTP 200; a streamed one its SSE "result" event),
 *    not a 503, and stop returns within a few seconds.
 *
 * Python runs when build/python (or $AIRLOCK_PYTHON_DIR) holds python.wasm,
 * native when the host can run the native backend; otherwise those parts
 * are skipped with a note. Network: loopback only, on a port the kernel
 * picked as free.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service.h"
#include "unit_helpers.h"

/* (module (func (export "_start") (loop $l (br $l)))), base64 */
#define SPIN_WASM_B64 "AGFzbQEAAAABBAFgAAADAgEABwoBBl9zdGFydAAACgkBBwADQAwACwsACgRuYW1lAgMBAAA="
#define SPIN_BODY "{\"kind\": \"wasm\", \"module_base64\": \"" SPIN_WASM_B64 "\"}"
/* Python sleeps rather than spins: a busy loop would spend the daemon's
 * fuel ceiling (1e9) within the second the test waits. */
#define PY_SLEEP_CODE "import time\\ntime.sleep(60)"
#define PY_SLEEP_BODY "{\"kind\": \"python\", \"code\": \"" PY_SLEEP_CODE "\"}"
#define SLEEP_BODY "{\"kind\": \"command\", \"argv\": [\"/bin/sleep\", \"60\"]}"

typedef struct fixture {
    char root[64];
    svc_config cfg;
    svc *s;
    svc_token alice;
    bool python, native;
} fixture;

/* A loopback port nothing listens on right now. */
static uint16_t free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t n = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static json_t *run_body(fixture *fx, const char *body_text, int *status);

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->root, sizeof fx->root, "/tmp/airlock-test-svc-cancel-XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    svc_config *c = &fx->cfg;
    test_config(c, fx->root);
    snprintf(c->tcp_host, sizeof c->tcp_host, "127.0.0.1");
    c->tcp_port = free_port();
    c->workers = 4;
    python_dir(c->python_dir, sizeof c->python_dir);
    if (!c->python_dir[0]) snprintf(c->python_dir, sizeof c->python_dir, "/nonexistent/python");
    fx->alice = c->tokens[0];
    char err[512] = "";
    fx->s = svc_new(c, err, sizeof err);
    if (!fx->s) fail_msg("svc_new: %s", err);
    fx->python = svc_python_of(fx->s, NULL) != NULL;
    int status = 0;
    json_t *out = run_body(fx, "{\"kind\": \"command\", \"argv\": [\"/bin/true\"]}", &status);
    const char *st = json_string_value(json_object_get(out, "status"));
    fx->native = status == 200 && st && !strcmp(st, "ok");
    json_decref(out);
    if (!fx->python) fprintf(stderr, "note: no python.wasm: the Python parts are skipped\n");
    if (!fx->native) fprintf(stderr, "note: no native backend: the native parts are skipped\n");
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    free_service(fx->s, &fx->cfg, fx->root);
    free(fx);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------- */

static json_t *run_body(fixture *fx, const char *body_text, int *status) {
    return execute_json(fx->s, (svc_caller){&fx->alice, "http", NULL, NULL}, body_text, status);
}

/* One execution on its own thread. */
typedef struct runner {
    pthread_t thread;
    fixture *fx;
    char body[512];
    int status;
    json_t *out;
    uint64_t end_ms;
} runner;

static void *runner_main(void *arg) {
    runner *r = arg;
    r->out = run_body(r->fx, r->body, &r->status);
    r->end_ms = now_ms();
    return NULL;
}

static void runner_start(runner *r, fixture *fx, const char *body) {
    memset(r, 0, sizeof *r);
    r->fx = fx;
    snprintf(r->body, sizeof r->body, "%s", body);
    assert_int_equal(pthread_create(&r->thread, NULL, runner_main, r), 0);
}

/* Joined; a cancelled result, audited as one, that ended soon after the
 * flag went up at raised_ms. */
static void assert_cancelled(runner *r, uint64_t raised_ms, const char *what) {
    pthread_join(r->thread, NULL);
    assert_int_equal(r->status, 200);
    if (strcmp(str(r->out, "status"), "cancelled") != 0)
        fail_msg("%s: status %s (%s)", what, str(r->out, "status"), str(r->out, "error"));
    assert_string_equal(str(r->out, "error"), "shutdown");
    printf("%s: answered %llu ms after svc_cancel_all\n", what,
           (unsigned long long)(r->end_ms - raised_ms));
    assert_true(r->end_ms - raised_ms < 2000);
    json_t *row = audit_row(r->fx->cfg.audit_db, audit_id(r->out));
    assert_string_equal(str(row, "status"), "cancelled");
    assert_string_equal(str(row, "abort_reason"), "shutdown");
    json_decref(row);
    json_decref(r->out);
    r->out = NULL;
}

/* A session of kind (and backend) for alice; its id into id. */
static void make_session(fixture *fx, svc_kind kind, char id[33]) {
    svc_exec_request t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.backend = AL_ISOLATION_NATIVE;
    svc_session_info info;
    char err[256] = "";
    if (!svc_session_create(svc_sessions_of(fx->s), &t, "alice", &info, err, sizeof err))
        fail_msg("session: %s", err);
    memcpy(id, info.id, 33);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_cancel_all(void **state) {
    fixture *fx = *state;
    char py_session[33] = "", native_session[33] = "", body[512];
    runner runs[5];
    const char *names[5] = {"wasm spin", "python sleep 60", "native sleep 60", "python session",
                            "native session"};
    bool used[5] = {true, fx->python, fx->native, fx->python, fx->native};
    if (fx->python) { /* a session whose interpreter holds state before the cancel */
        make_session(fx, SVC_PYTHON, py_session);
        snprintf(body, sizeof body, "{\"kind\": \"python\", \"code\": \"x = 1\", \"session\": \"%s\"}",
                 py_session);
        int status = 0;
        json_t *out = run_body(fx, body, &status);
        assert_int_equal(status, 200);
        assert_string_equal(str(out, "status"), "ok");
        json_decref(out);
    }
    if (fx->native) make_session(fx, SVC_COMMAND, native_session);
    runner_start(&runs[0], fx, SPIN_BODY);
    if (used[1]) runner_start(&runs[1], fx, PY_SLEEP_BODY);
    if (used[2]) runner_start(&runs[2], fx, SLEEP_BODY);
    if (used[3]) {
        snprintf(body, sizeof body,
                 "{\"kind\": \"python\", \"code\": \"" PY_SLEEP_CODE "\", \"session\": \"%s\"}",
                 py_session);
        runner_start(&runs[3], fx, body);
    }
    if (used[4]) {
        snprintf(body, sizeof body,
                 "{\"kind\": \"command\", \"argv\": [\"/bin/sleep\", \"60\"], \"session\": \"%s\"}",
                 native_session);
        runner_start(&runs[4], fx, body);
    }
    sleep_ms(1000); /* every one is running (an ASan Python start included) */
    assert_false(svc_cancelling(fx->s));
    uint64_t raised = now_ms();
    svc_cancel_all(fx->s);
    assert_true(svc_cancelling(fx->s));
    for (int i = 0; i < 5; i++)
        if (used[i]) assert_cancelled(&runs[i], raised, names[i]);

    /* After the flag, a new execution is cancelled before it starts. */
    int status = 0;
    uint64_t t0 = now_ms();
    json_t *out = run_body(fx, SPIN_BODY, &status);
    assert_int_equal(status, 200);
    assert_string_equal(str(out, "status"), "cancelled");
    assert_true(now_ms() - t0 < 1000);
    json_decref(out);

    char *text = svc_metrics_render(svc_metrics_of(fx->s));
    assert_non_null(text);
    if (!strstr(text, "airlock_executions_total{backend=\"wasm\",status=\"cancelled\"}"))
        fail_msg("no cancelled series in:\n%s", text);
    free(text);
}

/* ---- svc_http_stop ------------------------------------------------------------------- */

/* One HTTP request over loopback; everything the server sent, until it
 * closed the connection. */
typedef struct client {
    pthread_t thread;
    uint16_t port;
    char request[1024];
    char response[16384];
    size_t len;
    uint64_t end_ms;
} client;

static void *client_main(void *arg) {
    client *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(c->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        size_t n = strlen(c->request), off = 0;
        while (off < n) {
            ssize_t w = send(fd, c->request + off, n - off, MSG_NOSIGNAL);
            if (w <= 0) break;
            off += (size_t)w;
        }
        struct timeval tv = {30, 0}; /* never hang the test */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        for (;;) {
            ssize_t got = recv(fd, c->response + c->len, sizeof c->response - 1 - c->len, 0);
            if (got <= 0) break;
            c->len += (size_t)got;
            /* a complete non-streamed answer, or the stream's last event */
            if (strstr(c->response, "event: result") && strstr(c->response, "}\n\n")) break;
        }
    }
    if (fd >= 0) close(fd);
    c->response[c->len] = '\0';
    c->end_ms = now_ms();
    return NULL;
}

static void client_start(client *c, uint16_t port, const char *body) {
    memset(c, 0, sizeof *c);
    c->port = port;
    snprintf(c->request, sizeof c->request,
             "POST /v1/executions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok-alice\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    assert_int_equal(pthread_create(&c->thread, NULL, client_main, c), 0);
}

/* Past the drain deadline, the running executions are cancelled and their
 * clients get the cancelled result before the listener closes. */
static void test_http_stop_delivers_cancelled(void **state) {
    fixture *fx = *state;
    char err[256] = "";
    svc_http *h = svc_http_start(fx->s, err, sizeof err);
    if (!h) fail_msg("svc_http_start: %s", err);
    client plain, streamed;
    client_start(&plain, fx->cfg.tcp_port, SPIN_BODY);
    client_start(&streamed, fx->cfg.tcp_port,
                 "{\"kind\": \"wasm\", \"module_base64\": \"" SPIN_WASM_B64 "\", \"stream\": true}");
    sleep_ms(300); /* both are running */
    uint64_t t0 = now_ms();
    svc_http_stop(h, 200);
    uint64_t took = now_ms() - t0;
    pthread_join(plain.thread, NULL);
    pthread_join(streamed.thread, NULL);
    printf("svc_http_stop (drain 200 ms): %llu ms; clients answered after %llu / %llu ms\n",
           (unsigned long long)took, (unsigned long long)(plain.end_ms - t0),
           (unsigned long long)(streamed.end_ms - t0));
    unsigned queued = 9, running = 9;
    svc_pool_counts(svc_pool_of(fx->s), &queued, &running);
    assert_int_equal(running, 0);
    assert_true(took < 5000);
    if (strncmp(plain.response, "HTTP/1.1 200", 12) != 0)
        fail_msg("plain: %s", plain.response);
    assert_non_null(strstr(plain.response, "\"status\":\"cancelled\""));
    assert_non_null(strstr(plain.response, "\"error\":\"shutdown\""));
    if (strncmp(streamed.response, "HTTP/1.1 200", 12) != 0)
        fail_msg("streamed: %s", streamed.response);
    const char *ev = strstr(streamed.response, "event: result\ndata: ");
    if (!ev) fail_msg("streamed: no result event: %s", streamed.response);
    assert_non_null(strstr(ev, "\"status\":\"cancelled\""));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cancel_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_stop_delivers_cancelled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
