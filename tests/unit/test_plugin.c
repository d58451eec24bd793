/*
 * test_plugin.c — the host side of the Extism plugin ABI (src/plugin/)
 * through airlock.h: every "extism:host/env" function, the call convention,
 * the output guillotine, and every way a plugin can misbehave (traps,
 * endless loops, memory exhaustion, oversized output, hostile handles).
 *
 * The plugins are WAT sources in tests/plugin/wat/, assembled at run time
 * with wabt's wat2wasm into a temporary directory (the group setup). HTTP
 * tests use a small HTTP/1.1 server this file starts on 127.0.0.1 (port 0),
 * reached through the plugin options' static hosts map and allow_ips.
 * Nothing here depends on timing luck: timeouts and cancels are asserted as
 * outcomes with generous upper bounds, and the speed figures are printed,
 * not asserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#define BIG_BODY (11u * 1024u * 1024u) /* 11 MiB: over the 10 MiB guillotine */

/* ---- modules -------------------------------------------------------------------------- */

typedef struct wasm_file {
    uint8_t *bytes;
    size_t len;
} wasm_file;

/* ---- a loopback HTTP server ------------------------------------------------------------ */

typedef struct http_server {
    int fd;
    unsigned port;
    pthread_t thread;
    int hits; /* connections accepted (__atomic) */
} http_server;

typedef struct fixture {
    char tmpdir[64];
    char watdir[PATH_MAX];
    wasm_file abi, init, wasi, bad_import, other_module, bad_signature, big_memory;
    http_server srv;
} fixture;

static void send_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0) return; /* the client gave up (e.g. aborted a too-large body) */
        p += n;
        len -= (size_t)n;
    }
}

static void respond(int fd, const char *status, const char *extra, const char *body, size_t len) {
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n%sContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, extra, len);
    send_all(fd, head, (size_t)n);
    send_all(fd, body, len);
}

/* One request per connection: read the head (and a Content-Length body),
 * answer by path. */
static void serve(int fd) {
    char buf[65536];
    size_t got = 0;
    char *end = NULL;
    buf[0] = '\0';
    while (got < sizeof buf - 1 && !(end = strstr(buf, "\r\n\r\n"))) {
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n <= 0) return;
        got += (size_t)n;
        buf[got] = '\0';
    }
    if (!end) return;
    char method[16] = "", path[256] = "";
    if (sscanf(buf, "%15s %255s", method, path) != 2) return;
    size_t clen = 0;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl) clen = strtoul(cl + 17, NULL, 10);
    size_t have = got - (size_t)(end + 4 - buf);
    char body[1024];
    if (clen >= sizeof body) clen = sizeof body - 1;
    memcpy(body, end + 4, have < clen ? have : clen);
    while (have < clen) {
        ssize_t n = recv(fd, body + have, clen - have, 0);
        if (n <= 0) return;
        have += (size_t)n;
    }
    body[clen] = '\0';

    if (strcmp(path, "/hello") == 0) {
        respond(fd, "200 OK", "X-Test: yes\r\nX-Multi: a\r\nX-Multi: b\r\n", "hello world", 11);
    } else if (strcmp(path, "/echo") == 0) {
        char out[1100];
        int n = snprintf(out, sizeof out, "%s %s", method, body);
        respond(fd, "200 OK", "", out, (size_t)n);
    } else if (strcmp(path, "/redirect") == 0) {
        respond(fd, "302 Found", "Location: http://169.254.169.254/latest/\r\n", "moved", 5);
    } else if (strcmp(path, "/big") == 0) {
        char head[256];
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 200 OK\r\nContent-Length: %u\r\nConnection: close\r\n\r\n",
                         BIG_BODY);
        send_all(fd, head, (size_t)n);
        static char chunk[65536];
        memset(chunk, 'x', sizeof chunk);
        for (size_t sent = 0; sent < BIG_BODY; sent += sizeof chunk) send_all(fd, chunk, sizeof chunk);
    } else if (strcmp(path, "/slow") == 0) {
        /* Never answers; returns as soon as the client goes away. */
        struct pollfd pfd = {fd, POLLIN, 0};
        poll(&pfd, 1, 10000);
    } else {
        respond(fd, "404 Not Found", "", "nope", 4);
    }
}

static void *server_main(void *arg) {
    http_server *s = arg;
    for (;;) {
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) continue;
            break; /* shutdown() of the listener ends the loop */
        }
        __atomic_add_fetch(&s->hits, 1, __ATOMIC_SEQ_CST);
        serve(c);
        shutdown(c, SHUT_WR);
        close(c);
    }
    return NULL;
}

static bool server_start(http_server *s) {
    memset(s, 0, sizeof *s);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->fd, 16) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &al) != 0)
        return false;
    s->port = ntohs(a.sin_port);
    return pthread_create(&s->thread, NULL, server_main, s) == 0;
}

static void server_stop(http_server *s) {
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->fd);
}

static int server_hits(fixture *fx) { return __atomic_load_n(&fx->srv.hits, __ATOMIC_SEQ_CST); }

/* ---- assembling the WAT plugins ------------------------------------------------------------ */

/* tests/plugin/wat: from the current directory (the repository root, as
 * tests/run-all.sh runs us), else relative to this binary
 * (build/<variant>/tests/test_plugin). */
static bool find_watdir(char *out, size_t cap) {
    struct stat st;
    if (stat("tests/plugin/wat/abi.wat", &st) == 0) {
        snprintf(out, cap, "tests/plugin/wat");
        return true;
    }
    char exe[PATH_MAX / 2]; /* room for the suffix in out */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = '\0';
    snprintf(out, cap, "%s/../../../tests/plugin/wat", exe);
    char probe[PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/abi.wat", out);
    return stat(probe, &st) == 0;
}

static bool read_file(const char *path, wasm_file *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    out->bytes = malloc(n > 0 ? (size_t)n : 1);
    out->len = n > 0 ? (size_t)n : 0;
    bool ok = out->bytes && fread(out->bytes, 1, out->len, f) == out->len;
    fclose(f);
    return ok;
}

static bool assemble(fixture *fx, const char *name, wasm_file *out) {
    char src[PATH_MAX + 64], dst[128];
    snprintf(src, sizeof src, "%s/%s.wat", fx->watdir, name);
    snprintf(dst, sizeof dst, "%s/%s.wasm", fx->tmpdir, name);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        execlp("wat2wasm", "wat2wasm", src, "-o", dst, (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "wat2wasm %s failed\n", src);
        return false;
    }
    return read_file(dst, out);
}

static int group_setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->tmpdir, sizeof fx->tmpdir, "/tmp/test_plugin.XXXXXX");
    if (!mkdtemp(fx->tmpdir) || !find_watdir(fx->watdir, sizeof fx->watdir)) {
        fprintf(stderr, "cannot find tests/plugin/wat or make a temporary directory\n");
        return -1;
    }
    if (!assemble(fx, "abi", &fx->abi) || !assemble(fx, "init", &fx->init) ||
        !assemble(fx, "wasi", &fx->wasi) || !assemble(fx, "bad_import", &fx->bad_import) ||
        !assemble(fx, "other_module", &fx->other_module) ||
        !assemble(fx, "bad_signature", &fx->bad_signature) ||
        !assemble(fx, "big_memory", &fx->big_memory))
        return -1;
    if (!server_start(&fx->srv)) return -1;
    *state = fx;
    return 0;
}

static void free_wasm(wasm_file *w) { free(w->bytes); }

static int group_teardown(void **state) {
    fixture *fx = *state;
    if (!fx) return 0;
    server_stop(&fx->srv);
    const char *names[] = {"abi", "init", "wasi", "bad_import", "other_module", "bad_signature",
                           "big_memory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s.wasm", fx->tmpdir, names[i]);
        unlink(path);
    }
    rmdir(fx->tmpdir);
    free_wasm(&fx->abi);
    free_wasm(&fx->init);
    free_wasm(&fx->wasi);
    free_wasm(&fx->bad_import);
    free_wasm(&fx->other_module);
    free_wasm(&fx->bad_signature);
    free_wasm(&fx->big_memory);
    free(fx);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static al_plugin *make_plugin(const wasm_file *w, const al_plugin_options *o) {
    al_error err;
    al_plugin *p = al_plugin_new(w->bytes, w->len, o, &err);
    if (!p) print_message("al_plugin_new: %s\n", err.message);
    assert_non_null(p);
    return p;
}

static al_plugin *abi_plugin(fixture *fx, const al_plugin_options *o) {
    return make_plugin(&fx->abi, o);
}

static void call_str(al_plugin *p, const char *fn, const char *input, al_result *r) {
    assert_true(al_plugin_call(p, fn, (const uint8_t *)input, input ? strlen(input) : 0, r));
    assert_non_null(r->stdout_data);
    assert_non_null(r->stderr_data);
}

static void assert_contains(const char *haystack, const char *needle) {
    if (!strstr(haystack, needle)) {
        print_message("expected \"%s\" in \"%s\"\n", needle, haystack);
        fail();
    }
}

static void assert_status(const al_result *r, al_status want) {
    if (r->status != want) {
        print_message("status %s (want %s): %s\n", al_status_name(r->status), al_status_name(want),
                      r->error.message);
        fail();
    }
}

/* A call that must end with this status and, when fragment is not NULL, an
 * error message containing it. The caller frees *r. */
static void call_expect(al_plugin *p, const char *fn, const char *input, al_status status,
                        const char *fragment, al_result *r) {
    call_str(p, fn, input, r);
    assert_status(r, status);
    if (fragment) assert_contains(r->error.message, fragment);
}

/* A call that must succeed with exactly this output. */
static void expect_output(al_plugin *p, const char *fn, const char *input, const char *want) {
    al_result r;
    call_expect(p, fn, input, AL_STATUS_OK, NULL, &r);
    assert_int_equal(r.stdout_len, strlen(want));
    assert_memory_equal(r.stdout_data, want, strlen(want));
    al_result_free(&r);
}

/* A call that must fail with this status and a conformance error saying why. */
static void expect_failure(al_plugin *p, const char *fn, const char *input, al_status status,
                           const char *fragment) {
    al_result r;
    call_expect(p, fn, input, status, fragment, &r);
    assert_int_equal(strncmp(r.error.message, "manifest conformance error: ", 28), 0);
    assert_int_equal(r.stdout_len, 0);
    al_result_free(&r);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- loading -------------------------------------------------------------------------------- */

static void test_import_errors_name_the_import(void **state) {
    fixture *fx = *state;
    al_error err;
    al_plugin_module *m = al_plugin_compile(fx->bad_import.bytes, fx->bad_import.len, &err);
    assert_null(m);
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_contains(err.message, "extism:host/env.nonexistent_fn");

    assert_null(al_plugin_new(fx->other_module.bytes, fx->other_module.len, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_contains(err.message, "env.foo");

    /* load_u8 declared with an i32 handle: the engine's import type check */
    assert_null(al_plugin_new(fx->bad_signature.bytes, fx->bad_signature.len, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_contains(err.message, "load_u8");

    static const uint8_t junk[] = {0x00, 0x61, 0x73, 0x6d, 0x02, 0, 0, 0};
    assert_null(al_plugin_new(junk, sizeof junk, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_MALFORMED);
}

static void test_declared_memory_over_max_pages_is_refused(void **state) {
    fixture *fx = *state;
    al_error err;
    assert_null(al_plugin_new(fx->big_memory.bytes, fx->big_memory.len, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    /* with room for it, the same module loads */
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.max_pages = 2000;
    al_plugin *p = make_plugin(&fx->big_memory, &o);
    expect_output(p, "run", NULL, "");
    al_plugin_free(p);
}

static void test_has_function(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    assert_true(al_plugin_has_function(p, "echo"));
    assert_true(al_plugin_has_function(p, "count_vowels"));
    assert_false(al_plugin_has_function(p, "with_params"));
    assert_false(al_plugin_has_function(p, "no_result"));
    assert_false(al_plugin_has_function(p, "memory"));
    assert_false(al_plugin_has_function(p, "nope"));
    assert_false(al_plugin_has_function(p, NULL));
    al_plugin_free(p);
}

/* ---- input and output ----------------------------------------------------------------------- */

static void test_input_output(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    expect_output(p, "count_vowels", "Hello, World! AEIOU", "8");
    expect_output(p, "count_vowels64", "Hello, World! AEIOU", "8");
    expect_output(p, "echo", "abc", "abc");
    expect_output(p, "echo", "", "");
    expect_output(p, "input_set_half", "0123456789", "56789");
    expect_output(p, "output_query", NULL, "boom");

    /* every byte value through input_load_u64/u8, store_u64/u8, load_u64/u8 */
    uint8_t in[1003];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (uint8_t)(i * 37 + 11);
    al_result r;
    assert_true(al_plugin_call(p, "copy", in, sizeof in, &r));
    assert_status(&r, AL_STATUS_OK);
    assert_int_equal(r.stdout_len, sizeof in);
    assert_memory_equal(r.stdout_data, in, sizeof in);
    assert_int_equal(r.stdout_data[sizeof in], 0); /* NUL-terminated for convenience */
    al_result_free(&r);

    /* a 1 KiB input with a known count */
    char kib[1025];
    for (size_t i = 0; i < 1024; i++) kib[i] = "abcdefgh"[i % 8]; /* a and e: 2 per 8 */
    kib[1024] = '\0';
    expect_output(p, "count_vowels", kib, "256");
    expect_output(p, "count_vowels64", kib, "256");
    al_plugin_free(p);
}

static void test_alloc_length_free(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    expect_output(p, "alloc_length", NULL, "ok");
    /* free/length of non-handles are harmless; absurd allocations return 0 */
    expect_output(p, "hostile_ok", NULL, "ok");
    expect_output(p, "reset_test", "some input", "ok");
    expect_output(p, "memory_bytes_test", NULL, "ok");
    al_plugin_free(p);
}

/* Every out-of-range handle, offset or length traps the plugin with a
 * message naming the host function; the host survives and the next call
 * gets a fresh instance. */
static void test_out_of_range_traps_the_plugin(void **state) {
    fixture *fx = *state;
    static const struct {
        const char *fn, *input, *fragment;
    } cases[] = {
        {"oob_load_zero", NULL, "load_u8: 1 bytes at address 0"},
        {"oob_load_u8_end", NULL, "load_u8"},
        {"oob_load_end", NULL, "load_u64"},
        {"oob_load_huge", NULL, "load_u64: 8 bytes at address 18446744073709551615"},
        {"oob_load_wrap", NULL, "load_u64: 8 bytes at address 18446744073709551612"},
        {"oob_store", NULL, "store_u8"},
        {"oob_store_wrap", NULL, "store_u64"},
        {"oob_output", NULL, "output_set"},
        {"oob_output_wrap", NULL, "output_set"},
        {"oob_input_u8", "abcdefghij", "input_load_u8: offset 10"},
        {"oob_input_u64", "abcdefghij", "input_load_u64: 8 bytes at offset 6"},
        {"oob_input_u64", "", "input_load_u64"},
        {"oob_input_u64_huge", "abcdefghij", "input_load_u64"},
        {"oob_input_set", NULL, "input_set"},
        {"bad_error_handle", NULL, "error_set: error handle 123456"},
        {"bad_config_key", NULL, "config_get: key handle 0"},
        {"bad_var_key", NULL, "var_get: key handle"},
        {"bad_var_value", NULL, "var_set: value handle 99999"},
        {"bad_log", NULL, "log_info: message handle 5"},
        {"bad_http_handle", NULL, "http_request: request handle 77777"},
    };
    al_plugin *p = abi_plugin(fx, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        al_result r;
        call_expect(p, cases[i].fn, cases[i].input, AL_STATUS_TRAP, cases[i].fragment, &r);
        assert_int_equal(r.trap, AL_TRAP_HOST);
        assert_int_equal(strncmp(r.error.message, "manifest conformance error: ", 28), 0);
        al_result_free(&r);
        expect_output(p, "echo", "alive", "alive");
    }
    al_plugin_free(p);
}

/* ---- errors ----------------------------------------------------------------------------------- */

static void test_error_wins_over_return_code_zero(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    al_result r;
    call_expect(p, "error_wins", NULL, AL_STATUS_EXIT, NULL, &r);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.error.message, "boom");
    assert_int_equal(r.stderr_len, 4);
    assert_memory_equal(r.stderr_data, "boom", 4);
    al_result_free(&r);

    call_expect(p, "fail_code", NULL, AL_STATUS_EXIT, "returned 3", &r);
    assert_int_equal(r.exit_code, 3);
    al_result_free(&r);

    /* error_set(0) clears it; error_get reports it */
    expect_output(p, "error_get_test", NULL, "ok");
    al_plugin_free(p);
}

/* ---- config and vars ---------------------------------------------------------------------------- */

static void test_config_get(void **state) {
    fixture *fx = *state;
    al_kv config[] = {{"greeting", "hello"}, {"empty", ""}};
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.config = config;
    o.nconfig = 2;
    al_plugin *p = abi_plugin(fx, &o);
    config[0].value = "changed after new"; /* the options are copied */
    expect_output(p, "config", "greeting", "hello");
    expect_output(p, "config", "missing", "absent");
    expect_output(p, "config", "greetin", "absent");
    /* an empty value is handle 0, as Extism's alloc(0): it reads as absent */
    expect_output(p, "config", "empty", "absent");
    al_plugin_free(p);

    p = abi_plugin(fx, NULL);
    expect_output(p, "config", "greeting", "absent");
    al_plugin_free(p);
}

static void test_vars_persist_across_calls_and_restarts(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    expect_output(p, "var_count", NULL, "1");
    expect_output(p, "var_count", NULL, "2");
    /* a trap discards the instance, not the vars */
    expect_failure(p, "trap", NULL, AL_STATUS_TRAP, "unreachable");
    expect_output(p, "var_count", NULL, "3");
    expect_failure(p, "spin_nope", NULL, AL_STATUS_ERROR, "no function");
    expect_output(p, "var_count", NULL, "4");
    expect_output(p, "var_delete", NULL, "ok");
    expect_output(p, "var_count", NULL, "1");
    al_plugin_free(p);

    /* vars belong to one plugin */
    p = abi_plugin(fx, NULL);
    expect_output(p, "var_count", NULL, "1");
    al_plugin_free(p);
}

static void test_var_budget(void **state) {
    fixture *fx = *state;
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.max_var_bytes = 100; /* 3 + value + 48 bytes of overhead per entry */
    al_plugin *p = abi_plugin(fx, &o);
    expect_output(p, "var_big", "0123456789", "ok");
    expect_output(p, "var_big", "0123456789012345678901234567890123456789", "ok");
    char big[201];
    memset(big, 'v', 200);
    big[200] = '\0';
    expect_failure(p, "var_big", big, AL_STATUS_TRAP, "variable store is full");
    /* the failed set left the earlier value (and room for small vars) */
    expect_output(p, "var_big", "0123456789", "ok");
    al_plugin_free(p);

    o.max_var_bytes = 0; /* Extism: vars disabled */
    p = abi_plugin(fx, &o);
    expect_failure(p, "var_count", NULL, AL_STATUS_TRAP, "vars are disabled");
    al_plugin_free(p);
}

/* ---- logging ------------------------------------------------------------------------------------ */

typedef struct log_capture {
    int n;
    int levels[8];
    char msgs[8][64];
} log_capture;

static void capture_log(void *ctx, int level, const char *msg, size_t len) {
    log_capture *c = ctx;
    if (c->n >= 8) return;
    assert_int_equal(msg[len], '\0'); /* NUL-terminated */
    c->levels[c->n] = level;
    snprintf(c->msgs[c->n], sizeof c->msgs[0], "%s", msg);
    c->n++;
}

/* Options that send the plugin's log lines to cap (emptied first). */
static void log_options(al_plugin_options *o, log_capture *cap) {
    memset(cap, 0, sizeof *cap);
    al_plugin_options_init(o);
    o->on_log = capture_log;
    o->on_log_ctx = cap;
}

/* Log line i was logged at this level with exactly this text. */
static void expect_log(const log_capture *cap, int i, int level, const char *msg) {
    assert_int_equal(cap->levels[i], level);
    assert_string_equal(cap->msgs[i], msg);
}

static void test_logging_levels(void **state) {
    fixture *fx = *state;
    log_capture cap;
    al_plugin_options o;
    log_options(&o, &cap);
    al_plugin *p = abi_plugin(fx, &o);
    expect_output(p, "log_all", NULL, "2"); /* get_log_level: info */
    assert_int_equal(cap.n, 3);
    expect_log(&cap, 0, AL_LOG_INFO, "info message");
    expect_log(&cap, 1, AL_LOG_WARN, "warn message");
    expect_log(&cap, 2, AL_LOG_ERROR, "error message");
    al_plugin_free(p);

    memset(&cap, 0, sizeof cap);
    o.log_level = AL_LOG_TRACE;
    p = abi_plugin(fx, &o);
    expect_output(p, "log_all", NULL, "0");
    assert_int_equal(cap.n, 5);
    expect_log(&cap, 0, AL_LOG_TRACE, "trace message");
    expect_log(&cap, 1, AL_LOG_DEBUG, "debug message");
    al_plugin_free(p);

    memset(&cap, 0, sizeof cap);
    o.log_level = AL_LOG_ERROR;
    p = abi_plugin(fx, &o);
    expect_output(p, "log_all", NULL, "4");
    assert_int_equal(cap.n, 1);
    assert_string_equal(cap.msgs[0], "error message");
    al_plugin_free(p);

    /* no callback: dropped */
    p = abi_plugin(fx, NULL);
    expect_output(p, "log_all", NULL, "2");
    al_plugin_free(p);
}

/* ---- HTTP ----------------------------------------------------------------------------------------- */

static const char *const test_hosts_allowed[] = {"*.test.example"};
static const char *const loopback_only[] = {"127.0.0.1/32"};
static const al_host_entry test_hosts[] = {{"api.test.example", "127.0.0.1"},
                                           {"other.example", "127.0.0.1"}};

static void http_options(al_plugin_options *o) {
    al_plugin_options_init(o);
    o->allow_http = true;
    o->allowed_hosts = test_hosts_allowed;
    o->nallowed_hosts = 1;
    o->allow_ips = loopback_only;
    o->nallow_ips = 1;
    o->hosts = test_hosts;
    o->nhosts = 2;
}

static void request_json(char *out, size_t cap, const char *method, const char *url) {
    snprintf(out, cap, "{\"url\":\"%s\",\"method\":\"%s\",\"headers\":{\"X-Req\":\"1\"}}", url,
             method);
}

/* request_json for http://host:port/path. */
static void request_at(char *out, size_t cap, const char *method, const char *host, unsigned port,
                       const char *path) {
    char url[128];
    snprintf(url, sizeof url, "http://%s:%u%s", host, port, path);
    request_json(out, cap, method, url);
}

static void test_http_allowed(void **state) {
    fixture *fx = *state;
    al_plugin_options o;
    http_options(&o);
    al_plugin *p = abi_plugin(fx, &o);
    expect_output(p, "http_headers", NULL, "none"); /* no request yet */
    expect_output(p, "http_status", NULL, "0");

    char req[256];
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/hello");
    int before = server_hits(fx);
    expect_output(p, "http", req, "hello world");
    assert_int_equal(server_hits(fx), before + 1);
    expect_output(p, "http_status", NULL, "200");
    al_result r;
    call_expect(p, "http_headers", NULL, AL_STATUS_OK, NULL, &r);
    assert_contains((const char *)r.stdout_data, "\"x-test\":\"yes\"");
    assert_contains((const char *)r.stdout_data, "\"x-multi\":\"a, b\"");
    assert_contains((const char *)r.stdout_data, "\"content-length\":\"11\"");
    al_result_free(&r);

    /* a body and a method */
    request_at(req, sizeof req, "POST", "api.test.example", fx->srv.port, "/echo");
    expect_output(p, "http_post", req, "POST hello body");
    request_at(req, sizeof req, "PUT", "api.test.example", fx->srv.port, "/echo");
    expect_output(p, "http_post", req, "PUT hello body");

    /* any status is a response, and a redirect is not followed */
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/missing");
    expect_output(p, "http", req, "nope");
    expect_output(p, "http_status", NULL, "404");
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/redirect");
    expect_output(p, "http", req, "moved");
    expect_output(p, "http_status", NULL, "302");

    /* method defaults to GET; unknown fields are ignored (as Extism's serde) */
    snprintf(req, sizeof req, "{\"url\":\"http://api.test.example:%u/echo\",\"extra\":1}",
             fx->srv.port);
    expect_output(p, "http", req, "GET ");
    al_plugin_free(p);
}

static void test_http_denied(void **state) {
    fixture *fx = *state;
    char req[256];
    int before = server_hits(fx);

    /* no allowed_hosts at all: HTTP is off */
    al_plugin *p = abi_plugin(fx, NULL);
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/hello");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "is not allowed");
    al_plugin_free(p);

    al_plugin_options o;
    http_options(&o);
    p = abi_plugin(fx, &o);
    /* a host the allow-list does not name (the hosts map knows it) */
    request_at(req, sizeof req, "GET", "other.example", fx->srv.port, "/hello");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "not in the allow-list");
    /* a literal IP is not a name in the allow-list */
    request_at(req, sizeof req, "GET", "127.0.0.2", fx->srv.port, "/hello");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "literal IP");
    /* schemes other than http(s) */
    request_json(req, sizeof req, "GET", "file:///etc/passwd");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "only http and https");
    /* header injection */
    snprintf(req, sizeof req,
             "{\"url\":\"http://api.test.example:%u/hello\",\"headers\":{\"X\":\"a\\r\\nHost: x\"}}",
             fx->srv.port);
    expect_failure(p, "http", req, AL_STATUS_TRAP, "invalid name or value");
    expect_failure(p, "http", "not json", AL_STATUS_TRAP, "not valid JSON");
    al_plugin_free(p);

    /* an allowed name resolving to loopback, without allow_ips granting it */
    o.allow_ips = NULL;
    o.nallow_ips = 0;
    p = abi_plugin(fx, &o);
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/hello");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "resolves to an address the sandbox may not reach");
    /* and the same address as a literal */
    request_at(req, sizeof req, "GET", "127.0.0.1", fx->srv.port, "/hello");
    expect_failure(p, "http", req, AL_STATUS_TRAP, "literal IP");
    al_plugin_free(p);

    /* none of them reached the server */
    assert_int_equal(server_hits(fx), before);

    /* a malformed pattern is refused when the plugin is made */
    static const char *const bad[] = {"*"};
    static const char *const bad2[] = {"a.*.example"};
    http_options(&o);
    o.allowed_hosts = bad; /* "*" is Extism's "any host": allowed */
    p = abi_plugin(fx, &o);
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/hello");
    expect_output(p, "http", req, "hello world");
    al_plugin_free(p);
    o.allowed_hosts = bad2;
    al_error err;
    assert_null(al_plugin_new(fx->abi.bytes, fx->abi.len, &o, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_contains(err.message, "allowed_hosts");
}

static void test_http_response_caps(void **state) {
    fixture *fx = *state;
    char req[256];
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/big");

    al_plugin_options o;
    http_options(&o);
    o.max_http_response_bytes = 1000;
    al_plugin *p = abi_plugin(fx, &o);
    expect_failure(p, "http", req, AL_STATUS_TRAP, "exceeds max_http_response_bytes (1000 bytes)");
    al_plugin_free(p);

    /* 11 MiB fits the HTTP cap (50 MiB) but not the output guillotine (10 MiB) */
    http_options(&o);
    p = abi_plugin(fx, &o);
    expect_failure(p, "http", req, AL_STATUS_OUTPUT_TRUNCATED,
                   "output is 11534336 bytes, over max_output_bytes (10485760)");
    al_result r;
    /* an 11 MiB error */
    call_expect(p, "http_error", req, AL_STATUS_OUTPUT_TRUNCATED, "error is 11534336 bytes", &r);
    assert_int_equal(r.stderr_len, 0);
    assert_int_equal(r.stdout_len, 0);
    al_result_free(&r);
    expect_output(p, "echo", "still here", "still here");
    al_plugin_free(p);
}

static void test_http_interrupted_by_timeout(void **state) {
    fixture *fx = *state;
    char req[256];
    request_at(req, sizeof req, "GET", "api.test.example", fx->srv.port, "/slow");
    al_plugin_options o;
    http_options(&o);
    o.timeout_ms = 300;
    al_plugin *p = abi_plugin(fx, &o);
    uint64_t t0 = now_ns();
    expect_failure(p, "http", req, AL_STATUS_TIMEOUT, "timed out after 300 ms");
    assert_true(now_ns() - t0 < 5000000000u);
    al_plugin_free(p);
}

/* ---- misbehaving plugins -------------------------------------------------------------------------- */

static void test_traps_discard_the_instance(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    al_result r;
    call_expect(p, "trap", NULL, AL_STATUS_TRAP,
                "manifest conformance error: the plugin trapped: unreachable", &r);
    assert_int_equal(r.trap, AL_TRAP_UNREACHABLE);
    assert_int_equal(r.error.kind, AL_ERR_TRAP);
    assert_true(r.error.backtrace_len >= 1);
    al_result_free(&r);
    expect_failure(p, "div0", NULL, AL_STATUS_TRAP, "divide by zero");
    expect_output(p, "echo", "fresh", "fresh");
    al_plugin_free(p);
}

static void test_endless_loop_timeout(void **state) {
    fixture *fx = *state;
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.timeout_ms = 200;
    o.fuel = 1000000000; /* a backstop: a broken watchdog fails the test, never hangs it */
    al_plugin *p = abi_plugin(fx, &o);
    uint64_t t0 = now_ns();
    al_result r;
    call_str(p, "spin", NULL, &r);
    uint64_t took = now_ns() - t0;
    assert_status(&r, AL_STATUS_TIMEOUT);
    assert_int_equal(r.trap, AL_TRAP_INTERRUPTED);
    assert_true(r.limits_hit & AL_LIMIT_WALL);
    assert_contains(r.error.message, "timed out after 200 ms");
    assert_true(took >= 200000000u && took < 5000000000u);
    al_result_free(&r);
    /* the deadline is per call: quick calls keep working, a later spin times out again */
    for (int i = 0; i < 3; i++) expect_output(p, "echo", "ok", "ok");
    expect_failure(p, "spin", NULL, AL_STATUS_TIMEOUT, "timed out");
    expect_output(p, "echo", "ok", "ok");
    al_plugin_free(p);
}

static void test_endless_loop_fuel(void **state) {
    fixture *fx = *state;
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.fuel = 100000;
    al_plugin *p = abi_plugin(fx, &o);
    al_result r;
    call_expect(p, "spin", NULL, AL_STATUS_FUEL_EXHAUSTED, "fuel exhausted (budget 100000", &r);
    assert_true(r.limits_hit & AL_LIMIT_FUEL);
    al_result_free(&r);
    /* fuel is per call: the next one has a full budget */
    call_expect(p, "count_vowels", "aaaa", AL_STATUS_OK, NULL, &r);
    assert_true(r.fuel_used > 0 && r.fuel_used < 100000);
    al_result_free(&r);
    al_plugin_free(p);
}

static void test_memory_exhaustion(void **state) {
    fixture *fx = *state;
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.max_pages = 64;
    al_plugin *p = abi_plugin(fx, &o);
    al_result r;
    call_expect(p, "grow", NULL, AL_STATUS_MEMORY_LIMIT, "limit of 64 pages", &r);
    assert_true(r.limits_hit & AL_LIMIT_MEMORY);
    assert_true(r.peak_memory_bytes <= 64u * 65536u);
    al_result_free(&r);
    expect_output(p, "echo", "ok", "ok");
    al_plugin_free(p);
}

static void test_output_guillotine(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    al_result r;
    call_expect(p, "big_output", NULL, AL_STATUS_OUTPUT_TRUNCATED,
                "output is 11534336 bytes, over max_output_bytes (10485760)", &r);
    assert_true(r.limits_hit & AL_LIMIT_OUTPUT);
    assert_int_equal(r.stdout_len, 0);
    al_result_free(&r);
    al_plugin_free(p);

    /* the limit is configurable: 20 MiB lets the same output through */
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.max_output_bytes = 20u << 20;
    p = abi_plugin(fx, &o);
    call_expect(p, "big_output", NULL, AL_STATUS_OK, NULL, &r);
    assert_int_equal(r.stdout_len, 11534336);
    al_result_free(&r);
    /* and a small one refuses a small output */
    al_plugin_free(p);
    o.max_output_bytes = 4;
    p = abi_plugin(fx, &o);
    expect_failure(p, "echo", "12345", AL_STATUS_OUTPUT_TRUNCATED, "output is 5 bytes");
    expect_output(p, "echo", "1234", "1234");
    al_plugin_free(p);
}

static void test_missing_function_and_wrong_types(void **state) {
    fixture *fx = *state;
    al_plugin *p = abi_plugin(fx, NULL);
    expect_failure(p, "nope", NULL, AL_STATUS_ERROR, "no function named 'nope'");
    expect_failure(p, "memory", NULL, AL_STATUS_ERROR, "no function named 'memory'");
    expect_failure(p, "with_params", NULL, AL_STATUS_ERROR, "takes 1 parameters");
    expect_failure(p, "no_result", NULL, AL_STATUS_ERROR, "returns 0 results");
    expect_output(p, "echo", "x", "x");
    al_result r;
    assert_true(al_plugin_call(p, NULL, NULL, 0, &r));
    assert_status(&r, AL_STATUS_ERROR);
    al_result_free(&r);
    assert_true(al_plugin_call(p, "echo", NULL, 5, &r)); /* length without bytes */
    assert_status(&r, AL_STATUS_ERROR);
    al_result_free(&r);
    assert_false(al_plugin_call(p, "echo", NULL, 0, NULL));
    al_plugin_free(p);
}

static void test_initialize_runs_once_per_instance(void **state) {
    fixture *fx = *state;
    al_plugin *p = make_plugin(&fx->init, NULL);
    expect_output(p, "inits", NULL, "1");
    expect_output(p, "inits", NULL, "1");
    expect_output(p, "runs", NULL, "1");
    expect_failure(p, "trap", NULL, AL_STATUS_TRAP, "unreachable");
    /* the new instance ran _initialize once more; the var survived, the global did not */
    expect_output(p, "inits", NULL, "2");
    expect_output(p, "runs", NULL, "1");
    al_plugin_free(p);
}

typedef struct canceller {
    int flag;
    unsigned delay_ms;
} canceller;

static void *cancel_later(void *arg) {
    canceller *c = arg;
    struct timespec ts = {0, (long)c->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    __atomic_store_n(&c->flag, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_cancel(void **state) {
    fixture *fx = *state;
    canceller c = {0, 100};
    al_plugin_options o;
    al_plugin_options_init(&o);
    o.cancel = &c.flag;
    o.fuel = 1000000000; /* a backstop: a broken cancel fails the test, never hangs it */
    al_plugin *p = abi_plugin(fx, &o);
    expect_output(p, "echo", "ok", "ok");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, cancel_later, &c), 0);
    uint64_t t0 = now_ns();
    expect_failure(p, "spin", NULL, AL_STATUS_CANCELLED, "cancelled");
    assert_true(now_ns() - t0 < 5000000000u);
    pthread_join(t, NULL);
    /* still raised: the next call does not start */
    expect_failure(p, "echo", "x", AL_STATUS_CANCELLED, "before it started");
    __atomic_store_n(&c.flag, 0, __ATOMIC_RELEASE);
    expect_output(p, "echo", "back", "back");
    al_plugin_free(p);
}

/* ---- WASI ------------------------------------------------------------------------------------------- */

static void test_wasi_plugin(void **state) {
    fixture *fx = *state;
    log_capture cap;
    al_plugin_options o;
    log_options(&o, &cap);
    al_plugin *p = make_plugin(&fx->wasi, &o);
    expect_output(p, "hello", NULL, "");
    assert_int_equal(cap.n, 2);
    expect_log(&cap, 0, AL_LOG_INFO, "hello from wasi\n");
    expect_log(&cap, 1, AL_LOG_ERROR, "oops\n");
    al_result r;
    call_expect(p, "exit3", NULL, AL_STATUS_EXIT, NULL, &r);
    assert_int_equal(r.exit_code, 3);
    al_result_free(&r);
    expect_output(p, "exit0", NULL, "");
    expect_output(p, "hello", NULL, "");
    al_plugin_free(p);

    /* options.dirs are the WASI preopens: one that does not exist is refused */
    al_dir_grant dir = {"/nonexistent/airlock-test-dir", "/data", true};
    o.dirs = &dir;
    o.ndirs = 1;
    al_error err;
    assert_null(al_plugin_new(fx->wasi.bytes, fx->wasi.len, &o, &err));
    assert_contains(err.message, "airlock-test-dir");
    dir.host_path = fx->tmpdir;
    p = make_plugin(&fx->wasi, &o);
    expect_output(p, "hello", NULL, "");
    al_plugin_free(p);
}

/* ---- modules and speed --------------------------------------------------------------------------------- */

static void test_module_shared_by_plugins(void **state) {
    fixture *fx = *state;
    al_error err;
    al_plugin_module *m = al_plugin_compile(fx->abi.bytes, fx->abi.len, &err);
    assert_non_null(m);
    al_plugin *a = al_plugin_instantiate(m, NULL, &err);
    al_plugin *b = al_plugin_instantiate(m, NULL, &err);
    assert_non_null(a);
    assert_non_null(b);
    al_plugin_module_free(m); /* the plugins keep it alive */
    expect_output(a, "var_count", NULL, "1");
    expect_output(a, "var_count", NULL, "2");
    expect_output(b, "var_count", NULL, "1"); /* separate vars */
    expect_failure(b, "trap", NULL, AL_STATUS_TRAP, "unreachable");
    expect_output(b, "echo", "re-instantiated", "re-instantiated"); /* from the freed-by-caller module */
    al_plugin_free(a);
    al_plugin_free(b);
}

/* Figures, printed (an ASan build is several times slower than release). */
static void test_speed_figures(void **state) {
    fixture *fx = *state;
    al_error err;
    al_plugin_module *m = al_plugin_compile(fx->abi.bytes, fx->abi.len, &err);
    assert_non_null(m);
    enum { INSTANCES = 200 };
    const uint64_t budget_ns = 200000000u; /* per function: stays fast under ASan */
    uint64_t t0 = now_ns();
    for (int i = 0; i < INSTANCES; i++) {
        al_plugin *p = al_plugin_instantiate(m, NULL, &err);
        assert_non_null(p);
        al_plugin_free(p);
    }
    double inst_us = (double)(now_ns() - t0) / INSTANCES / 1000.0;

    al_plugin *p = al_plugin_instantiate(m, NULL, &err);
    assert_non_null(p);
    char kib[1024];
    for (size_t i = 0; i < sizeof kib; i++) kib[i] = "abcdefgh"[i % 8];
    /* noop: the fixed cost of a call (input copied in, result out); echo:
     * plus a 1 KiB output copied out; load_all: plus 128 input_load_u64
     * host calls; count_vowels*: plus the guest's own work (interpreted). */
    const char *fns[] = {"noop", "echo", "load_all", "count_vowels64", "count_vowels"};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        t0 = now_ns();
        unsigned calls = 0;
        do {
            for (int i = 0; i < 10; i++, calls++) {
                al_result r;
                assert_true(al_plugin_call(p, fns[f], (const uint8_t *)kib, sizeof kib, &r));
                assert_int_equal(r.status, AL_STATUS_OK);
                al_result_free(&r);
            }
        } while (now_ns() - t0 < budget_ns);
        double per = (double)(now_ns() - t0) / calls;
        print_message("%-15s on 1 KiB: %.2f us/call, %.0f calls/s\n", fns[f], per / 1000.0,
                      1e9 / per);
    }
    print_message("instantiate + free (from a compiled module): %.1f us\n", inst_us);
    al_plugin_free(p);
    al_plugin_module_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_errors_name_the_import),
        cmocka_unit_test(test_declared_memory_over_max_pages_is_refused),
        cmocka_unit_test(test_has_function),
        cmocka_unit_test(test_input_output),
        cmocka_unit_test(test_alloc_length_free),
        cmocka_unit_test(test_out_of_range_traps_the_plugin),
        cmocka_unit_test(test_error_wins_over_return_code_zero),
        cmocka_unit_test(test_config_get),
        cmocka_unit_test(test_vars_persist_across_calls_and_restarts),
        cmocka_unit_test(test_var_budget),
        cmocka_unit_test(test_logging_levels),
        cmocka_unit_test(test_http_allowed),
        cmocka_unit_test(test_http_denied),
        cmocka_unit_test(test_http_response_caps),
        cmocka_unit_test(test_http_interrupted_by_timeout),
        cmocka_unit_test(test_traps_discard_the_instance),
        cmocka_unit_test(test_endless_loop_timeout),
        cmocka_unit_test(test_endless_loop_fuel),
        cmocka_unit_test(test_memory_exhaustion),
        cmocka_unit_test(test_output_guillotine),
        cmocka_unit_test(test_missing_function_and_wrong_types),
        cmocka_unit_test(test_initialize_runs_once_per_instance),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_wasi_plugin),
        cmocka_unit_test(test_module_shared_by_plugins),
        cmocka_unit_test(test_speed_figures),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
