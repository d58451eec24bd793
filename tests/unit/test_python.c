/*
 * test_python.c — al_python_* (src/sandbox/python.c) and al_policy.on_output
 * (every backend's output streaming), through the public API.
 *
 * What it pins down:
 *  - al_python_open compiles python.wasm once and al_python_run runs it,
 *    from several threads at once (one module, many stores); code NULL runs
 *    python with the policy's own arguments; a missing directory is a clear
 *    error;
 *  - on_output sees exactly the bytes the result keeps, stream by stream,
 *    nothing past the caps; for a native or gVisor program, while it runs
 *    (chunks separated by sleeps arrive before the run ends);
 *  - a Python session keeps state across executions (`x = 41`, then
 *    `print(x + 1)` prints 42), survives an exception, cannot be ended early
 *    by a fake end marker or by reading the cell channel, keeps each
 *    execution's output (and caps) its own, gives each its own fuel and
 *    timeout, restarts a fresh interpreter after a timeout, fuel or exit
 *    ("interpreter restarted"), and closes cleanly with a cell running on
 *    another thread;
 *  - al_policy.cancel raised from another thread ends a run (a busy loop,
 *    or a sleep inside a WASI call) and a session's running cell within
 *    ~100 ms as CANCELLED with the reason; the cancelled cell's interpreter
 *    is replaced like a timed-out one, and a cell whose flag was raised
 *    before it was published is not run (the interpreter and its state
 *    live on). LeakSanitizer (make asan) checks no thread, store or
 *    buffer outlives al_python_session_close.
 *
 * python.wasm comes from tools/build-python.sh (build/python, found beside
 * this binary as ../../python, or at $AIRLOCK_PYTHON_DIR). Without it every
 * Python test is skipped with a note; the native and gVisor tests skip
 * themselves when the host cannot run that backend.
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
#include <time.h>
#include <unistd.h>

#include "airlock.h"
#include "unit_helpers.h"

static al_python *py; /* opened once by the group setup; NULL: no python.wasm */

/* $AIRLOCK_PYTHON_DIR, else build/python seen from build/<variant>/tests. */
static bool python_dir(char *out, size_t n) {
    const char *env = getenv("AIRLOCK_PYTHON_DIR");
    if (env && env[0]) return snprintf(out, n, "%s", env) < (int)n;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = '\0';
    return snprintf(out, n, "%s/../../python", exe) < (int)n;
}

static int group_setup(void **state) {
    char dir[PATH_MAX], wasm[PATH_MAX + 16];
    if (!python_dir(dir, sizeof dir)) return 0;
    snprintf(wasm, sizeof wasm, "%s/python.wasm", dir);
    if (access(wasm, R_OK) != 0) {
        printf("skip: no %s; run tools/build-python.sh to test the Python API\n", wasm);
        return 0;
    }
    al_error err;
    uint64_t t0 = now_ns();
    py = al_python_open(dir, &err);
    if (!py) {
        printf("al_python_open(%s): %s\n", dir, err.message);
        return -1;
    }
    printf("al_python_open (decode+validate+compile): %.1f ms\n", (double)(now_ns() - t0) / 1e6);
    return 0;
}

static int group_teardown(void **state) {
    al_python_close(py);
    py = NULL;
    return 0;
}

#define SKIP_UNLESS_PYTHON() \
    do {                     \
        if (!py) skip();     \
    } while (0)

static al_policy wasm_policy(void) {
    al_policy p;
    al_policy_init(&p);
    p.timeout_ms = 60000; /* a safety net: no test may hang */
    return p;
}

/* ---- output streaming: what on_output saw ------------------------------------------ */

typedef struct recorder {
    pthread_mutex_t lock;
    char data[2][1 << 16]; /* by stream - 1 */
    size_t len[2];
    unsigned chunks[2];
    unsigned bad_stream;
    uint64_t first_ns, last_ns;
} recorder;

static void record(void *ctx, int stream, const uint8_t *bytes, size_t len) {
    recorder *r = ctx;
    pthread_mutex_lock(&r->lock);
    if (stream != 1 && stream != 2) {
        r->bad_stream++;
    } else {
        size_t i = (size_t)stream - 1, room = sizeof r->data[i] - r->len[i];
        memcpy(r->data[i] + r->len[i], bytes, len < room ? len : room);
        r->len[i] += len < room ? len : room;
        r->chunks[i]++;
    }
    if (!r->first_ns) r->first_ns = now_ns();
    r->last_ns = now_ns();
    pthread_mutex_unlock(&r->lock);
}

static recorder *recorder_new(void) {
    recorder *r = calloc(1, sizeof *r);
    assert_non_null(r);
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

static size_t recorder_len(recorder *r, int stream) {
    pthread_mutex_lock(&r->lock);
    size_t n = r->len[stream - 1];
    pthread_mutex_unlock(&r->lock);
    return n;
}

static void recorder_free(recorder *r) {
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* The recorder saw exactly what the result kept. */
static void assert_saw_result(const recorder *rec, const al_result *r) {
    assert_int_equal(rec->bad_stream, 0);
    assert_int_equal(rec->len[0], r->stdout_len);
    assert_int_equal(rec->len[1], r->stderr_len);
    assert_memory_equal(rec->data[0], r->stdout_data, r->stdout_len);
    assert_memory_equal(rec->data[1], r->stderr_data, r->stderr_len);
}

/* ---- al_python_run ---------------------------------------------------------------------- */

static al_result run_code(const al_policy *p, const char *code) {
    al_result r;
    memset(&r, 0xAB, sizeof r); /* al_python_run must initialise everything */
    assert_true(al_python_run(py, p, code, &r));
    assert_string_equal(r.backend, "wasm");
    return r;
}

static void test_run_print(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_result r = run_code(&p, "print(1)");
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "1\n");
    assert_int_equal(r.stderr_len, 0);
    assert_true(r.fuel_used > 1000000);
    al_result_free(&r);
    /* The standard library and PYTHONHOME come with it. */
    r = run_code(&p, "import os, json; print(json.dumps(dict(os.environ)))");
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "{\"PYTHONHOME\": \"/usr/local\"}\n");
    al_result_free(&r);
}

static void test_run_exception_and_exit(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_result r = run_code(&p, "1/0");
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr((char *)r.stderr_data, "ZeroDivisionError"));
    al_result_free(&r);
    r = run_code(&p, "import sys; sys.exit(5)");
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 5);
    al_result_free(&r);
}

/* code NULL: python's own arguments come from the policy. */
static void test_run_with_arguments(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    const char *argv[] = {"python", "-c", "import sys; print(sys.argv)", "a b"};
    p.argv = argv;
    p.argc = 4;
    al_result r = run_code(&p, NULL);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "['-c', 'a b']\n");
    al_result_free(&r);
    /* With code, argv[1..] are the program's arguments after it. */
    const char *args[] = {"python", "x", "y"};
    p.argv = args;
    p.argc = 3;
    r = run_code(&p, "import sys; print(sys.argv)");
    assert_string_equal((char *)r.stdout_data, "['-c', 'x', 'y']\n");
    al_result_free(&r);
}

static void test_run_refusals(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    p.isolation = AL_ISOLATION_NATIVE;
    const char *argv[] = {"/bin/true"};
    p.argv = argv;
    p.argc = 1;
    al_result r = run_code(&p, "print(1)");
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_non_null(strstr(r.error.message, "AL_ISOLATION_WASM"));
    assert_non_null(r.stdout_data);
    assert_non_null(r.stderr_data);
    al_result_free(&r);
    assert_false(al_python_run(py, &p, "print(1)", NULL));
    /* A bad policy is the policy checker's message. */
    p = wasm_policy();
    p.ndirs = 1;
    r = run_code(&p, "print(1)");
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_non_null(strstr(r.error.message, "policy: dirs"));
    al_result_free(&r);
}

static void test_open_missing(void **state) {
    al_error err;
    assert_null(al_python_open("/nonexistent/airlock-python", &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "no CPython for WASI"));
    assert_non_null(strstr(err.message, "tools/build-python.sh"));
    char tmp[] = "/tmp/airlock-test-python.XXXXXX";
    assert_non_null(mkdtemp(tmp));
    assert_null(al_python_open(tmp, &err));
    assert_non_null(strstr(err.message, "python.wasm"));
    rmdir(tmp);
    al_python_close(NULL);
    assert_null(al_python_stdlib_dir(NULL));
}

/* One compiled module, several runs at once on several threads. */
typedef struct par_run {
    pthread_t thread;
    int n;
    al_result r;
} par_run;

static void *par_main(void *arg) {
    par_run *pr = arg;
    al_policy p = wasm_policy();
    char code[64];
    snprintf(code, sizeof code, "print(sum(range(%d)))", pr->n);
    al_python_run(py, &p, code, &pr->r);
    return NULL;
}

static void test_run_threads_share_the_module(void **state) {
    SKIP_UNLESS_PYTHON();
    par_run runs[3];
    for (int i = 0; i < 3; i++) {
        memset(&runs[i], 0, sizeof runs[i]);
        runs[i].n = 1000 * (i + 1);
        assert_int_equal(pthread_create(&runs[i].thread, NULL, par_main, &runs[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(runs[i].thread, NULL);
        char want[32];
        snprintf(want, sizeof want, "%d\n", runs[i].n * (runs[i].n - 1) / 2);
        assert_int_equal(runs[i].r.status, AL_STATUS_OK);
        assert_string_equal((char *)runs[i].r.stdout_data, want);
        al_result_free(&runs[i].r);
    }
}

/* ---- on_output: wasm ---------------------------------------------------------------------- */

static void test_on_output_wasm(void **state) {
    SKIP_UNLESS_PYTHON();
    recorder *rec = recorder_new();
    al_policy p = wasm_policy();
    p.on_output = record;
    p.on_output_ctx = rec;
    al_result r = run_code(&p, "import sys\n"
                               "for i in range(3): print('line', i)\n"
                               "print('oops', file=sys.stderr)\n");
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "line 0\nline 1\nline 2\n");
    assert_saw_result(rec, &r);
    /* PYTHONUNBUFFERED: each print is handed on as it happens. */
    assert_true(rec->chunks[0] >= 3);
    al_result_free(&r);
    recorder_free(rec);

    /* Past the cap nothing is handed on either. */
    rec = recorder_new();
    p.on_output_ctx = rec;
    p.stdout_cap = 10;
    r = run_code(&p, "print('x' * 100)");
    assert_int_equal(r.status, AL_STATUS_OUTPUT_TRUNCATED);
    assert_int_equal(r.stdout_len, 10);
    assert_saw_result(rec, &r);
    al_result_free(&r);
    recorder_free(rec);
}

/* ---- on_output: native and gVisor, while the program runs ------------------------------- */

static void expect_streaming(al_isolation isolation) {
    recorder *rec = recorder_new();
    al_policy p;
    al_policy_init(&p);
    p.isolation = isolation;
    const char *argv[] = {"/bin/sh", "-c",
                          "echo one; sleep 0.4; echo two >&2; sleep 0.4; echo three"};
    p.argv = argv;
    p.argc = 3;
    p.timeout_ms = 30000;
    p.on_output = record;
    p.on_output_ctx = rec;
    al_result r;
    assert_true(al_exec(&p, &r));
    uint64_t end = now_ns();
    if (r.status == AL_STATUS_UNSUPPORTED) {
        al_result_free(&r);
        recorder_free(rec);
        skip();
    }
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "one\nthree\n");
    assert_string_equal((char *)r.stderr_data, "two\n");
    assert_saw_result(rec, &r);
    assert_true(rec->chunks[0] >= 2);
    assert_int_equal(rec->chunks[1], 1);
    /* "one" arrived while the program still had 0.8 s of sleeping to do. */
    assert_true(end - rec->first_ns >= 500000000u);
    al_result_free(&r);
    recorder_free(rec);
}

static void test_on_output_native_streams(void **state) { expect_streaming(AL_ISOLATION_NATIVE); }
static void test_on_output_gvisor_streams(void **state) { expect_streaming(AL_ISOLATION_GVISOR); }

/* ---- sessions ------------------------------------------------------------------------------ */

static al_python_session *session_open(const al_policy *p) {
    al_error err;
    al_python_session *s = al_python_session_open(py, p, &err);
    if (!s) fail_msg("al_python_session_open: %s", err.message);
    return s;
}

static al_result exec_cell(al_python_session *s, const char *code, uint64_t timeout_ms) {
    al_result r;
    memset(&r, 0xAB, sizeof r);
    assert_true(al_python_session_exec(s, code, timeout_ms, &r));
    assert_non_null(r.stdout_data);
    assert_non_null(r.stderr_data);
    return r;
}

/* Run code and check status and stdout (exactly) and stderr (empty). */
static void expect_cell(al_python_session *s, const char *code, al_status status,
                        const char *out) {
    al_result r = exec_cell(s, code, 30000);
    if (r.status != status)
        fail_msg("'%s': status %s (%s), stderr %s", code, al_status_name(r.status),
                 r.error.message, (char *)r.stderr_data);
    assert_string_equal((char *)r.stdout_data, out);
    if (status == AL_STATUS_OK) assert_string_equal((char *)r.stderr_data, "");
    al_result_free(&r);
}

/* ---- cancellation ------------------------------------------------------------------ */

/* A busy loop and a sleep (poll_oneoff, in WASI) under al_python_run. */
static void test_run_cancelled(void **state) {
    SKIP_UNLESS_PYTHON();
    static const char *const codes[] = {"while True: pass", "import time; time.sleep(60)"};
    for (size_t i = 0; i < 2; i++) {
        al_policy p = wasm_policy();
        canceller c;
        canceller_start(&c, 200);
        p.cancel = &c.flag;
        p.cancel_reason = "shutdown";
        uint64_t t0 = now_ns();
        al_result r = run_code(&p, codes[i]);
        uint64_t end = now_ns();
        pthread_join(c.thread, NULL);
        printf("python run (%s): cancelled %.1f ms after the flag was raised\n", codes[i],
               (double)(end - c.raised_ns) / 1e6);
        assert_int_equal(r.status, AL_STATUS_CANCELLED);
        assert_string_equal(r.error.message, "shutdown");
        assert_true(end - t0 < 2000000000u);
        assert_true(end - c.raised_ns < 1000000000u);
        al_result_free(&r);
    }
}

/* A cell that never ends: the flag ends it (and its interpreter) like a
 * timeout; the next execution gets a fresh interpreter. A flag raised
 * before the cell runs nothing and keeps the interpreter. */
static void test_session_cancelled(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    canceller c;
    memset(&c, 0, sizeof c);
    p.cancel = &c.flag;
    p.cancel_reason = "shutdown";
    al_python_session *s = session_open(&p);
    expect_cell(s, "x = 41", AL_STATUS_OK, "");

    __atomic_store_n(&c.flag, 1, __ATOMIC_RELEASE);
    al_result r = exec_cell(s, "print('ran')", 30000);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_string_equal(r.error.message, "shutdown");
    assert_string_equal((char *)r.stdout_data, "");
    al_result_free(&r);
    __atomic_store_n(&c.flag, 0, __ATOMIC_RELEASE);
    expect_cell(s, "print(x + 1)", AL_STATUS_OK, "42\n"); /* same interpreter */

    canceller_start(&c, 200);
    uint64_t t0 = now_ns();
    r = exec_cell(s, "print('started', flush=True)\nwhile True: pass", 30000);
    uint64_t end = now_ns();
    pthread_join(c.thread, NULL);
    printf("python session: cancelled %.1f ms after the flag was raised\n",
           (double)(end - c.raised_ns) / 1e6);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_int_equal(r.trap, AL_TRAP_INTERRUPTED);
    assert_int_equal(r.limits_hit & AL_LIMIT_WALL, 0);
    assert_string_equal((char *)r.stdout_data, "started\n");
    assert_string_equal(r.error.message, "shutdown");
    assert_true(end - t0 < 10000000000u); /* an ASan interpreter start included */
    assert_true(end - c.raised_ns < 1000000000u);
    al_result_free(&r);

    __atomic_store_n(&c.flag, 0, __ATOMIC_RELEASE);
    r = exec_cell(s, "print('x' in globals())", 30000);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "False\n");
    assert_non_null(strstr(r.error.message, "interpreter restarted"));
    assert_non_null(strstr(r.error.message, "shutdown"));
    al_result_free(&r);
    al_python_session_close(s);
}

static void test_session_keeps_state(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    expect_cell(s, "x = 41", AL_STATUS_OK, "");
    expect_cell(s, "print(x + 1)", AL_STATUS_OK, "42\n");
    expect_cell(s, "import math\ndef area(r):\n    return math.pi * r * r\n", AL_STATUS_OK, "");
    expect_cell(s, "print(round(area(2), 3), math.floor(2.5))", AL_STATUS_OK, "12.566 2\n");
    expect_cell(s, "print(__name__)", AL_STATUS_OK, "__main__\n");
    /* the driver leaves nothing of its own in the globals */
    expect_cell(s, "print(sorted(k for k in globals() if not k.startswith('__')))", AL_STATUS_OK,
                "['area', 'math', 'x']\n");
    expect_cell(s, "", AL_STATUS_OK, "");
    al_python_session_close(s);
}

static void test_session_exception_keeps_session(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    expect_cell(s, "y = 'kept'", AL_STATUS_OK, "");
    al_result r = exec_cell(s, "print('before')\n1/0", 30000);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 1);
    assert_string_equal((char *)r.stdout_data, "before\n");
    assert_non_null(strstr((char *)r.stderr_data, "Traceback (most recent call last):\n"
                                                  "  File \"<cell-2>\", line 2, in <module>\n"));
    assert_non_null(strstr((char *)r.stderr_data, "ZeroDivisionError: division by zero\n"));
    assert_null(strstr((char *)r.stderr_data, "_airlock_session")); /* the driver's frame */
    assert_null(strstr((char *)r.stderr_data, "AIRLOCK-END"));
    al_result_free(&r);
    r = exec_cell(s, "x = = 1", 30000);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_non_null(strstr((char *)r.stderr_data, "SyntaxError"));
    al_result_free(&r);
    expect_cell(s, "print(y)", AL_STATUS_OK, "kept\n");
    /* input() finds an empty stdin, not the cell channel */
    r = exec_cell(s, "input()", 30000);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_non_null(strstr((char *)r.stderr_data, "EOFError"));
    al_result_free(&r);
    expect_cell(s, "print(y)", AL_STATUS_OK, "kept\n");
    al_python_session_close(s);
}

/* Printing a trailer (with a made-up nonce, or a well-formed one on
 * stderr) is output like any other; the cell goes on. */
static void test_session_fake_end_marker(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    const char *code = "import os, sys\n"
                       "fake = b'AIRLOCK-END ' + b'0' * 32 + b' ok\\n'\n"
                       "os.write(2, fake)\n"
                       "os.write(1, fake)\n"
                       "print('AIRLOCK-CELL 0000000005 ' + 'f' * 32)\n"
                       "sys.stdout.flush()\n"
                       "print('after the fakes')\n";
    al_result r = exec_cell(s, code, 30000);
    assert_int_equal(r.status, AL_STATUS_OK);
    char want_out[256];
    snprintf(want_out, sizeof want_out,
             "AIRLOCK-END %032d ok\nAIRLOCK-CELL 0000000005 %s\nafter the fakes\n", 0,
             "ffffffffffffffffffffffffffffffff");
    assert_string_equal((char *)r.stdout_data, want_out);
    char want_err[128];
    snprintf(want_err, sizeof want_err, "AIRLOCK-END %032d ok\n", 0);
    assert_string_equal((char *)r.stderr_data, want_err);
    al_result_free(&r);
    expect_cell(s, "print('next')", AL_STATUS_OK, "next\n");
    al_python_session_close(s);
}

/* A cell that reads the channel itself gets nothing until its timeout: it
 * cannot swallow the next cell, and its output stays its own. */
static void test_session_reading_stdin_times_out(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    al_result r = exec_cell(
        s, "import os\nprint('reading', flush=True)\nos.read(0, 100)\nprint('read')", 500);
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_string_equal((char *)r.stdout_data, "reading\n");
    al_result_free(&r);
    expect_cell(s, "print('fresh')", AL_STATUS_OK, "fresh\n");
    al_python_session_close(s);
}

static void test_session_timeout_restarts(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    expect_cell(s, "x = 1", AL_STATUS_OK, "");
    uint64_t t0 = now_ns();
    al_result r = exec_cell(s, "import sys\nprint('partial', end='')\nsys.stdout.flush()\n"
                               "print('err', file=sys.stderr, end='', flush=True)\n"
                               "print('lost', end='')\n" /* still in python's buffer */
                               "while True: pass", 300);
    uint64_t took = now_ns() - t0;
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_int_equal(r.trap, AL_TRAP_INTERRUPTED);
    assert_true(r.limits_hit & AL_LIMIT_WALL);
    assert_true(r.wall_ns >= 300000000u);
    assert_true(took < 10000000000u);
    assert_string_equal((char *)r.stdout_data, "partial");
    assert_string_equal((char *)r.stderr_data, "err");
    assert_non_null(strstr(r.error.message, "timed out after 300 ms"));
    assert_non_null(strstr(r.error.message, "next execution starts a fresh one"));
    al_result_free(&r);
    /* A fresh interpreter: x is gone, and nothing of the last cell is here. */
    r = exec_cell(s, "print('x' in globals())", 30000);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((char *)r.stdout_data, "False\n");
    assert_string_equal((char *)r.stderr_data, "");
    assert_non_null(strstr(r.error.message, "interpreter restarted"));
    assert_non_null(strstr(r.error.message, "timed out"));
    al_result_free(&r);
    /* and only once */
    r = exec_cell(s, "print(2)", 30000);
    assert_string_equal(r.error.message, "");
    al_result_free(&r);
    al_python_session_close(s);
}

/* A policy's timeout_ms is the default per execution. */
static void test_session_default_timeout(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    p.timeout_ms = 300;
    al_python_session *s = session_open(&p); /* start-up is not bound by it */
    al_result r = exec_cell(s, "import time\ntime.sleep(30)", 0);
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_true(r.wall_ns < 10000000000u);
    al_result_free(&r);
    expect_cell(s, "print(3)", AL_STATUS_OK, "3\n");
    al_python_session_close(s);
}

static void test_session_output_is_per_execution(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    p.stdout_cap = 1000;
    al_python_session *s = session_open(&p);
    /* unflushed at the end of the cell: still this cell's */
    expect_cell(s, "import sys\nsys.stdout.write('a' * 10)", AL_STATUS_OK, "aaaaaaaaaa");
    al_result r = exec_cell(s, "print('b' * 5000)", 30000);
    assert_int_equal(r.status, AL_STATUS_OUTPUT_TRUNCATED);
    assert_true(r.stdout_truncated);
    assert_true(r.limits_hit & AL_LIMIT_OUTPUT);
    assert_int_equal(r.stdout_len, 1000);
    al_result_free(&r);
    /* the cap is per execution */
    char cs[1000];
    memset(cs, 'c', 999);
    cs[999] = '\0';
    expect_cell(s, "print('c' * 999, end='')", AL_STATUS_OK, cs);
    expect_cell(s, "print('d')", AL_STATUS_OK, "d\n");
    /* a large cell arrives whole (several reads of the channel) */
    size_t n = 200000;
    char *big = malloc(n + 64);
    assert_non_null(big);
    strcpy(big, "s = '");
    memset(big + 5, 'z', n);
    strcpy(big + 5 + n, "'\nprint(len(s))");
    expect_cell(s, big, AL_STATUS_OK, "200000\n");
    free(big);
    al_python_session_close(s);
}

static void test_session_fuel_per_execution(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    p.fuel = 20000000; /* far below python's start-up (~80M): that is not charged */
    al_python_session *s = session_open(&p);
    al_result r = exec_cell(s, "print(1)", 30000);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_true(r.fuel_used > 0 && r.fuel_used < 20000000);
    assert_true(r.peak_memory_bytes > 0);
    al_result_free(&r);
    r = exec_cell(s, "while True: pass", 30000);
    assert_int_equal(r.status, AL_STATUS_FUEL_EXHAUSTED);
    assert_int_equal(r.fuel_used, 20000000);
    assert_non_null(strstr(r.error.message, "budget 20000000"));
    al_result_free(&r);
    r = exec_cell(s, "print(1)", 30000);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_non_null(strstr(r.error.message, "interpreter restarted"));
    al_result_free(&r);
    /* each execution has the whole budget again */
    for (int i = 0; i < 3; i++) expect_cell(s, "for i in range(10000): pass", AL_STATUS_OK, "");
    al_python_session_close(s);
}

static void test_session_exit_restarts(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    al_python_session *s = session_open(&p);
    expect_cell(s, "z = 1", AL_STATUS_OK, "");
    al_result r = exec_cell(s, "import sys\nprint('bye')\nsys.exit(3)", 30000);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal((char *)r.stdout_data, "bye\n");
    al_result_free(&r);
    expect_cell(s, "print('z' in globals())", AL_STATUS_OK, "False\n");
    al_python_session_close(s);
}

static void test_session_on_output(void **state) {
    SKIP_UNLESS_PYTHON();
    recorder *rec = recorder_new();
    al_policy p = wasm_policy();
    p.on_output = record;
    p.on_output_ctx = rec;
    p.stderr_cap = 4;
    al_python_session *s = session_open(&p);
    al_result r = exec_cell(
        s, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\n1/0", 30000);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_string_equal((char *)r.stderr_data, "to e");
    assert_saw_result(rec, &r); /* the trailer was never handed on */
    al_result_free(&r);
    al_python_session_close(s);
    recorder_free(rec);
}

static void test_session_grants(void **state) {
    SKIP_UNLESS_PYTHON();
    char dir[] = "/tmp/airlock-test-session.XXXXXX";
    assert_non_null(mkdtemp(dir));
    al_policy p = wasm_policy();
    char host[sizeof dir];
    memcpy(host, dir, sizeof dir);
    al_dir_grant grant = {host, "/work", false};
    const char *env[] = {"GREETING=hi"};
    p.dirs = &grant;
    p.ndirs = 1;
    p.env = env;
    p.nenv = 1;
    al_python_session *s = session_open(&p);
    memset(host, 'x', sizeof host - 1); /* the session has its own copy */
    expect_cell(s, "open('/work/f.txt', 'w').write('kept')", AL_STATUS_OK, "");
    expect_cell(s, "import os\nprint(open('/work/f.txt').read(), os.environ['GREETING'])",
                AL_STATUS_OK, "kept hi\n");
    al_python_session_close(s);
    char f[sizeof dir + 8];
    snprintf(f, sizeof f, "%s/f.txt", dir);
    assert_int_equal(unlink(f), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_session_refusals(void **state) {
    SKIP_UNLESS_PYTHON();
    al_error err;
    al_policy p = wasm_policy();
    p.isolation = AL_ISOLATION_GVISOR;
    assert_null(al_python_session_open(py, &p, &err));
    assert_non_null(strstr(err.message, "AL_ISOLATION_WASM"));
    p = wasm_policy();
    al_dir_grant missing = {"/nonexistent/airlock", "/data", true};
    p.dirs = &missing;
    p.ndirs = 1;
    assert_null(al_python_session_open(py, &p, &err));
    assert_non_null(strstr(err.message, "did not start"));
    assert_null(al_python_session_open(NULL, &p, &err));
    al_result r;
    assert_true(al_python_session_exec(NULL, "1", 0, &r));
    assert_int_equal(r.status, AL_STATUS_ERROR);
    al_result_free(&r);
    al_python_session_close(NULL);
}

/* Close from another thread while a cell runs: the execution returns, the
 * interpreter ends, nothing is left (LeakSanitizer). */
typedef struct bg_exec {
    al_python_session *s;
    al_result r;
} bg_exec;

static void *bg_main(void *arg) {
    bg_exec *b = arg;
    al_python_session_exec(b->s, "print('spinning', flush=True)\nwhile True: pass", 0, &b->r);
    return NULL;
}

static void test_session_close_while_running(void **state) {
    SKIP_UNLESS_PYTHON();
    recorder *rec = recorder_new();
    al_policy p = wasm_policy();
    p.timeout_ms = 0;
    p.on_output = record;
    p.on_output_ctx = rec;
    al_python_session *s = session_open(&p);
    bg_exec b = {.s = s};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_main, &b), 0);
    for (int i = 0; i < 2000 && recorder_len(rec, 1) < 9; i++) usleep(5000); /* it spins */
    assert_int_equal(recorder_len(rec, 1), 9);
    al_python_session_close(s);
    pthread_join(t, NULL);
    assert_int_equal(b.r.status, AL_STATUS_ERROR);
    assert_non_null(strstr(b.r.error.message, "closed"));
    assert_string_equal((char *)b.r.stdout_data, "spinning\n");
    al_result_free(&b.r);
    recorder_free(rec);
    /* and an idle session closes at once */
    s = session_open(&p);
    al_python_session_close(s);
}

/* Not an assertion: the figure the README quotes. */
static void test_session_latency(void **state) {
    SKIP_UNLESS_PYTHON();
    al_policy p = wasm_policy();
    uint64_t t0 = now_ns();
    al_python_session *s = session_open(&p);
    double open_ms = (double)(now_ns() - t0) / 1e6;
    enum { N = 20 };
    double ms[N];
    for (int i = 0; i < N; i++) {
        t0 = now_ns();
        expect_cell(s, "print(1)", AL_STATUS_OK, "1\n");
        ms[i] = (double)(now_ns() - t0) / 1e6;
    }
    for (int i = 1; i < N; i++)
        for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
            double x = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = x;
        }
    al_python_session_close(s);
    t0 = now_ns();
    al_result r = run_code(&p, "pass");
    double run_ms = (double)(now_ns() - t0) / 1e6;
    al_result_free(&r);
    printf("python: session open %.1f ms; exec print(1) median %.2f ms (min %.2f, max %.2f); "
           "al_python_run('pass') %.1f ms\n",
           open_ms, ms[N / 2], ms[0], ms[N - 1], run_ms);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_missing),
        cmocka_unit_test(test_run_print),
        cmocka_unit_test(test_run_exception_and_exit),
        cmocka_unit_test(test_run_with_arguments),
        cmocka_unit_test(test_run_refusals),
        cmocka_unit_test(test_run_threads_share_the_module),
        cmocka_unit_test(test_on_output_wasm),
        cmocka_unit_test(test_on_output_native_streams),
        cmocka_unit_test(test_on_output_gvisor_streams),
        cmocka_unit_test(test_session_keeps_state),
        cmocka_unit_test(test_session_exception_keeps_session),
        cmocka_unit_test(test_session_fake_end_marker),
        cmocka_unit_test(test_session_reading_stdin_times_out),
        cmocka_unit_test(test_session_timeout_restarts),
        cmocka_unit_test(test_run_cancelled),
        cmocka_unit_test(test_session_cancelled),
        cmocka_unit_test(test_session_default_timeout),
        cmocka_unit_test(test_session_output_is_per_execution),
        cmocka_unit_test(test_session_fuel_per_execution),
        cmocka_unit_test(test_session_exit_restarts),
        cmocka_unit_test(test_session_on_output),
        cmocka_unit_test(test_session_grants),
        cmocka_unit_test(test_session_refusals),
        cmocka_unit_test(test_session_close_while_running),
        cmocka_unit_test(test_session_latency),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
