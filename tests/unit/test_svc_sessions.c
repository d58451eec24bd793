/*
 * test_svc_sessions.c — sessions.c: the table (ids, tokens, LRU eviction,
 * idle expiry, one execution at a time), workspace files (paths beneath the
 * workspace only, symlinks never followed, FIFOs never opened blocking, the
 * size cap) and executions in wasm, Python and native sessions.
 *
 * Every test works in its own temporary state directory. The wasm modules
 * are tiny WATs assembled by hand (wat2wasm output, bytes below). Python
 * runs when build/python (or $AIRLOCK_PYTHON_DIR) holds python.wasm; the
 * native session when the host supports the native backend.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

/* (module (import "wasi_snapshot_preview1" "fd_write" ...) (memory 1)
 *   (data (i32.const 16) "hello from wasm\n")
 *   (func (export "_start") iovec {16, 16} at 0; fd_write(1, 0, 1, 8))) */
static const uint8_t hello_wasm[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x02, 0x60, 0x04, 0x7f, 0x7f,
    0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x02, 0x23, 0x01, 0x16, 0x77, 0x61, 0x73, 0x69,
    0x5f, 0x73, 0x6e, 0x61, 0x70, 0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69,
    0x65, 0x77, 0x31, 0x08, 0x66, 0x64, 0x5f, 0x77, 0x72, 0x69, 0x74, 0x65, 0x00, 0x00, 0x03,
    0x02, 0x01, 0x01, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d,
    0x6f, 0x72, 0x79, 0x02, 0x00, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x01, 0x0a,
    0x1d, 0x01, 0x1b, 0x00, 0x41, 0x00, 0x41, 0x10, 0x36, 0x02, 0x00, 0x41, 0x04, 0x41, 0x10,
    0x36, 0x02, 0x00, 0x41, 0x01, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, 0x0b,
    0x0b, 0x16, 0x01, 0x00, 0x41, 0x10, 0x0b, 0x10, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x66,
    0x72, 0x6f, 0x6d, 0x20, 0x77, 0x61, 0x73, 0x6d, 0x0a,
};

/* (module (func (export "_start") (loop (br 0)))) */
static const uint8_t spin_wasm[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
    0x03, 0x02, 0x01, 0x00, 0x07, 0x0a, 0x01, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74,
    0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b,
};

#define MiB ((uint64_t)1 << 20)

typedef struct fx {
    char dir[64];                 /* the state directory */
    svc_sessions *s;
} fx;

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static fx *fx_new(uint32_t max, uint32_t idle_s, uint64_t ws_bytes) {
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_svc_sessions.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->s = svc_sessions_new(f->dir, max, idle_s, ws_bytes);
    assert_non_null(f->s);
    return f;
}

static void fx_free(fx *f) {
    svc_sessions_free(f->s);
    char sessions[96];
    snprintf(sessions, sizeof sessions, "%s/sessions", f->dir);
    struct stat st;
    assert_int_not_equal(stat(sessions, &st), 0); /* everything it made is gone */
    assert_int_equal(rmdir(f->dir), 0);
    free(f);
}

static svc_exec_request kind_req(svc_kind k, al_isolation b) {
    svc_exec_request r;
    memset(&r, 0, sizeof r);
    r.kind = k;
    r.backend = b;
    return r;
}

static void create(fx *f, svc_kind k, const char *token, svc_session_info *info) {
    svc_exec_request t = kind_req(k, k == SVC_COMMAND ? AL_ISOLATION_NATIVE : AL_ISOLATION_WASM);
    char err[256] = "";
    assert_true(svc_session_create(f->s, &t, token, info, err, sizeof err));
}

static void workspace_of(const fx *f, const char *id, char *out, size_t n) {
    snprintf(out, n, "%s/sessions/%s/workspace", f->dir, id);
}

/* ---- the table ------------------------------------------------------------------------- */

static void test_create_get_list_delete(void **state) {
    fx *f = fx_new(10, 3600, 4 * MiB);
    svc_session_info a, b, got;
    create(f, SVC_WASM, "alice", &a);
    create(f, SVC_WASM, "bob", &b);
    assert_int_equal(strlen(a.id), 32);
    assert_int_equal(strspn(a.id, "0123456789abcdef"), 32);
    assert_string_not_equal(a.id, b.id);
    assert_string_equal(a.token, "alice");
    assert_int_equal(svc_sessions_count(f->s), 2);

    char ws[160];
    struct stat st;
    workspace_of(f, a.id, ws, sizeof ws);
    assert_int_equal(stat(ws, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    if (geteuid() == 0) assert_int_equal(st.st_uid, 1000); /* the guests' identity */

    assert_true(svc_session_get(f->s, a.id, "alice", &got));
    assert_string_equal(got.id, a.id);
    /* another token's session looks exactly like a missing one */
    errno = 0;
    assert_false(svc_session_get(f->s, a.id, "bob", &got));
    assert_int_equal(errno, ENOENT);
    assert_false(svc_session_delete(f->s, a.id, "bob"));
    assert_int_equal(errno, ENOENT);

    json_t *list = svc_session_list(f->s, "alice");
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")), a.id);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "kind")), "wasm");
    json_decref(list);

    assert_true(svc_session_delete(f->s, a.id, "alice"));
    assert_int_not_equal(stat(ws, &st), 0);
    assert_false(svc_session_get(f->s, a.id, "alice", &got));
    assert_int_equal(svc_sessions_count(f->s), 1);
    fx_free(f);
}

static void test_bad_templates_are_refused(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info info;
    char err[256];
    svc_exec_request t = kind_req(SVC_COMMAND, AL_ISOLATION_WASM);
    errno = 0;
    assert_false(svc_session_create(f->s, &t, "t", &info, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    t = kind_req((svc_kind)42, AL_ISOLATION_WASM);
    assert_false(svc_session_create(f->s, &t, "t", &info, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    /* no al_python set: Python sessions are unavailable, not broken */
    t = kind_req(SVC_PYTHON, AL_ISOLATION_WASM);
    assert_false(svc_session_create(f->s, &t, "t", &info, err, sizeof err));
    assert_int_equal(errno, ENOTSUP);
    assert_int_equal(svc_sessions_count(f->s), 0);
    fx_free(f);
}

static void test_lru_eviction(void **state) {
    fx *f = fx_new(2, 3600, MiB);
    svc_session_info a, b, c, got;
    char err[256];
    create(f, SVC_WASM, "t", &a);
    create(f, SVC_WASM, "t", &b);
    /* touch a: b becomes the least recently used */
    assert_true(svc_session_put_file(f->s, a.id, "t", "x", (const uint8_t *)"1", 1, err, sizeof err));
    create(f, SVC_WASM, "t", &c);
    assert_int_equal(svc_sessions_count(f->s), 2);
    assert_true(svc_session_get(f->s, a.id, "t", &got));
    assert_false(svc_session_get(f->s, b.id, "t", &got));
    assert_true(svc_session_get(f->s, c.id, "t", &got));
    fx_free(f);
}

static void test_idle_expiry(void **state) {
    fx *f = fx_new(10, 60, MiB);
    svc_session_info a;
    create(f, SVC_WASM, "t", &a);
    assert_int_equal(svc_sessions_expire(f->s, now_ms()), 0);
    assert_int_equal(svc_sessions_expire(f->s, now_ms() + 61 * 1000), 1);
    assert_int_equal(svc_sessions_count(f->s), 0);
    char ws[160];
    struct stat st;
    workspace_of(f, a.id, ws, sizeof ws);
    assert_int_not_equal(stat(ws, &st), 0);
    fx_free(f);
}

static void test_stale_sessions_are_removed_at_start(void **state) {
    fx *f = fx_new(10, 60, MiB);
    svc_sessions_free(f->s);
    char p[160];
    snprintf(p, sizeof p, "%s/sessions", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/sessions/dead", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/sessions/dead/file", f->dir);
    int fd = open(p, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    f->s = svc_sessions_new(f->dir, 10, 60, MiB);
    assert_non_null(f->s);
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0);
    fx_free(f);
}

/* ---- workspace files --------------------------------------------------------------------- */

static void test_files_round_trip(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256];
    uint8_t *data;
    size_t len;
    create(f, SVC_WASM, "t", &a);
    assert_true(svc_session_put_file(f->s, a.id, "t", "d1/d2/f.txt", (const uint8_t *)"abc", 3,
                                     err, sizeof err));
    assert_true(svc_session_get_file(f->s, a.id, "t", "d1/d2/f.txt", &data, &len, err, sizeof err));
    assert_int_equal(len, 3);
    assert_memory_equal(data, "abc", 3);
    free(data);
    /* replaced, not appended */
    assert_true(svc_session_put_file(f->s, a.id, "t", "d1/d2/f.txt", (const uint8_t *)"z", 1, err,
                                     sizeof err));
    assert_true(svc_session_get_file(f->s, a.id, "t", "d1/d2/f.txt", &data, &len, err, sizeof err));
    assert_int_equal(len, 1);
    free(data);
    /* empty files are files */
    assert_true(svc_session_put_file(f->s, a.id, "t", "empty", NULL, 0, err, sizeof err));
    assert_true(svc_session_get_file(f->s, a.id, "t", "empty", &data, &len, err, sizeof err));
    assert_int_equal(len, 0);
    free(data);
    errno = 0;
    assert_false(svc_session_get_file(f->s, a.id, "t", "missing", &data, &len, err, sizeof err));
    assert_int_equal(errno, ENOENT);
    assert_false(svc_session_get_file(f->s, a.id, "other", "empty", &data, &len, err, sizeof err));
    assert_int_equal(errno, ENOENT);
    /* a directory is not a file */
    assert_false(svc_session_get_file(f->s, a.id, "t", "d1", &data, &len, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    fx_free(f);
}

static void test_bad_paths_are_refused(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256];
    create(f, SVC_WASM, "t", &a);
    static const char *const bad[] = {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a",
                                      "a/.", "a/", "..", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        assert_false(svc_session_put_file(f->s, a.id, "t", bad[i], (const uint8_t *)"x", 1, err,
                                          sizeof err));
        assert_int_equal(errno, EINVAL);
    }
    char deep[2048];
    memset(deep, 'a', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    assert_false(svc_session_put_file(f->s, a.id, "t", deep, (const uint8_t *)"x", 1, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    fx_free(f);
}

static void test_symlinks_are_never_followed(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256], ws[160], p[256], secret[160];
    uint8_t *data;
    size_t len;
    create(f, SVC_WASM, "t", &a);
    workspace_of(f, a.id, ws, sizeof ws);
    /* a file outside the workspace, and a guest's links to it and its dir */
    snprintf(secret, sizeof secret, "%s/secret", f->dir);
    int fd = open(secret, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cr3t", 6), 6);
    close(fd);
    snprintf(p, sizeof p, "%s/link", ws);
    assert_int_equal(symlink(secret, p), 0);
    snprintf(p, sizeof p, "%s/dirlink", ws);
    assert_int_equal(symlink(f->dir, p), 0);

    errno = 0;
    assert_false(svc_session_get_file(f->s, a.id, "t", "link", &data, &len, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    assert_false(svc_session_get_file(f->s, a.id, "t", "dirlink/secret", &data, &len, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    assert_false(svc_session_put_file(f->s, a.id, "t", "dirlink/new", (const uint8_t *)"x", 1, err,
                                      sizeof err));
    assert_int_equal(errno, EINVAL);
    /* a put over the link replaces the link itself */
    assert_true(svc_session_put_file(f->s, a.id, "t", "link", (const uint8_t *)"mine", 4, err, sizeof err));
    struct stat st;
    assert_int_equal(stat(secret, &st), 0);
    assert_int_equal(st.st_size, 6);
    snprintf(p, sizeof p, "%s/new", f->dir);
    assert_int_not_equal(stat(p, &st), 0);
    svc_sessions_free(f->s); /* removal does not follow dirlink either */
    f->s = NULL;
    assert_int_equal(stat(secret, &st), 0);
    unlink(secret);
    f->s = svc_sessions_new(f->dir, 10, 3600, MiB);
    fx_free(f);
}

static void test_fifo_does_not_block(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256], ws[160], p[256];
    uint8_t *data;
    size_t len;
    create(f, SVC_WASM, "t", &a);
    workspace_of(f, a.id, ws, sizeof ws);
    snprintf(p, sizeof p, "%s/fifo", ws);
    assert_int_equal(mkfifo(p, 0600), 0);
    errno = 0;
    assert_false(svc_session_get_file(f->s, a.id, "t", "fifo", &data, &len, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    fx_free(f);
}

static void test_workspace_cap(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256];
    size_t n = 600 * 1024;
    uint8_t *big = calloc(1, n);
    assert_non_null(big);
    create(f, SVC_WASM, "t", &a);
    assert_true(svc_session_put_file(f->s, a.id, "t", "one", big, n, err, sizeof err));
    errno = 0;
    assert_false(svc_session_put_file(f->s, a.id, "t", "two", big, n, err, sizeof err));
    assert_int_equal(errno, EFBIG);
    /* replacing a file counts the new size only */
    assert_true(svc_session_put_file(f->s, a.id, "t", "one", big, n, err, sizeof err));
    free(big);
    fx_free(f);
}

static void test_deep_trees_are_removed(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char ws[160];
    create(f, SVC_WASM, "t", &a);
    workspace_of(f, a.id, ws, sizeof ws);
    int d = open(ws, O_RDONLY | O_DIRECTORY);
    assert_true(d >= 0);
    for (int i = 0; i < 300; i++) { /* deeper than the removal's recursion limit */
        assert_int_equal(mkdirat(d, "d", 0700), 0);
        int next = openat(d, "d", O_RDONLY | O_DIRECTORY);
        close(d);
        assert_true(next >= 0);
        d = next;
    }
    close(d);
    assert_true(svc_session_delete(f->s, a.id, "t"));
    struct stat st;
    assert_int_not_equal(stat(ws, &st), 0);
    fx_free(f);
}

/* ---- executions -------------------------------------------------------------------------- */

typedef struct captured {
    char out[256];
    size_t len;
} captured;

static void capture(void *ctx, int stream, const uint8_t *data, size_t len) {
    captured *c = ctx;
    if (stream == 1 && c->len + len < sizeof c->out) {
        memcpy(c->out + c->len, data, len);
        c->len += len;
    }
}

static void test_wasm_session_exec_and_stream(void **state) {
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a, got;
    char err[256];
    create(f, SVC_WASM, "t", &a);
    svc_exec_request req = kind_req(SVC_WASM, AL_ISOLATION_WASM);
    req.module = (uint8_t *)hello_wasm;
    req.module_len = sizeof hello_wasm;
    al_policy p;
    al_policy_init(&p);
    static const char *const argv[] = {"hello"};
    p.argv = argv;
    p.argc = 1;
    captured c = {0};
    p.on_output = capture;
    p.on_output_ctx = &c;
    al_result r;
    assert_true(svc_session_exec(f->s, a.id, "t", &p, &req, &r, err, sizeof err));
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "hello from wasm\n");
    assert_string_equal(c.out, "hello from wasm\n");
    al_result_free(&r);
    assert_true(svc_session_get(f->s, a.id, "t", &got));
    assert_int_equal(got.executions, 1);
    /* the wrong kind, and /workspace granted twice, are refused */
    req.kind = SVC_COMMAND;
    errno = 0;
    assert_false(svc_session_exec(f->s, a.id, "t", &p, &req, &r, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    req.kind = SVC_WASM;
    al_dir_grant g = {.host_path = "/tmp", .guest_path = "/workspace/x"};
    p.dirs = &g;
    p.ndirs = 1;
    assert_false(svc_session_exec(f->s, a.id, "t", &p, &req, &r, err, sizeof err));
    assert_int_equal(errno, EINVAL);
    /* another token's */
    p.ndirs = 0;
    assert_false(svc_session_exec(f->s, a.id, "u", &p, &req, &r, err, sizeof err));
    assert_int_equal(errno, ENOENT);
    fx_free(f);
}

typedef struct spin_arg {
    fx *f;
    const char *id;
    bool ok;
    al_status status;
} spin_arg;

static void *spin_thread(void *arg) {
    spin_arg *a = arg;
    svc_exec_request req = kind_req(SVC_WASM, AL_ISOLATION_WASM);
    req.module = (uint8_t *)spin_wasm;
    req.module_len = sizeof spin_wasm;
    al_policy p;
    al_policy_init(&p);
    static const char *const argv[] = {"spin"};
    p.argv = argv;
    p.argc = 1;
    p.timeout_ms = 1500;
    al_result r;
    char err[256];
    a->ok = svc_session_exec(a->f->s, a->id, "t", &p, &req, &r, err, sizeof err);
    if (a->ok) {
        a->status = r.status;
        al_result_free(&r);
    }
    return NULL;
}

static void test_busy_session_is_409_and_never_evicted(void **state) {
    fx *f = fx_new(1, 1, MiB);
    svc_session_info a, b;
    char err[256];
    create(f, SVC_WASM, "t", &a);
    spin_arg arg = {.f = f, .id = a.id};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_thread, &arg), 0);
    usleep(300 * 1000);
    svc_exec_request req = kind_req(SVC_WASM, AL_ISOLATION_WASM);
    req.module = (uint8_t *)hello_wasm;
    req.module_len = sizeof hello_wasm;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    errno = 0;
    assert_false(svc_session_exec(f->s, a.id, "t", &p, &req, &r, err, sizeof err));
    assert_int_equal(errno, EBUSY);
    /* at the maximum, with the only session executing: nothing to evict */
    svc_exec_request t = kind_req(SVC_WASM, AL_ISOLATION_WASM);
    assert_false(svc_session_create(f->s, &t, "t", &b, err, sizeof err));
    assert_int_equal(errno, EAGAIN);
    /* nor expired, however idle the clock says it is */
    assert_int_equal(svc_sessions_expire(f->s, now_ms() + 3600 * 1000), 0);
    /* deleting it mid-run unlinks it now; the run's end frees it */
    assert_true(svc_session_delete(f->s, a.id, "t"));
    assert_int_equal(svc_sessions_count(f->s), 0);
    pthread_join(th, NULL);
    assert_true(arg.ok);
    assert_int_equal(arg.status, AL_STATUS_TIMEOUT);
    fx_free(f);
}

static al_python *python_or_skip(void) {
    const char *dir = getenv("AIRLOCK_PYTHON_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/python.wasm", dir ? dir : "build/python");
    if (access(path, R_OK) != 0) return NULL;
    al_error e;
    return al_python_open(dir ? dir : "build/python", &e);
}

static void python_cell(fx *f, const char *id, const char *code, al_result *r) {
    svc_exec_request req = kind_req(SVC_PYTHON, AL_ISOLATION_WASM);
    req.code = (char *)code;
    al_policy p;
    al_policy_init(&p);
    static const char *const argv[] = {"python"};
    p.argv = argv;
    p.argc = 1;
    p.fuel = 2000000000;
    p.timeout_ms = 60000;
    char err[256] = "";
    assert_true(svc_session_exec(f->s, id, "t", &p, &req, r, err, sizeof err));
}

static void test_python_session_keeps_variables(void **state) {
    al_python *py = python_or_skip();
    if (!py) {
        skip();
        return;
    }
    fx *f = fx_new(10, 3600, MiB);
    svc_sessions_set_python(f->s, py);
    assert_true(svc_sessions_have_python(f->s));
    svc_session_info a;
    create(f, SVC_PYTHON, "t", &a);
    al_result r;
    python_cell(f, a.id, "x = 41", &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    al_result_free(&r);
    python_cell(f, a.id, "print(x + 1)", &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "42\n");
    al_result_free(&r);
    /* the workspace is there, at /workspace */
    char err[256];
    assert_true(svc_session_put_file(f->s, a.id, "t", "in.txt", (const uint8_t *)"from host", 9,
                                     err, sizeof err));
    python_cell(f, a.id, "print(open('/workspace/in.txt').read())", &r);
    assert_string_equal((const char *)r.stdout_data, "from host\n");
    al_result_free(&r);
    fx_free(f);
    al_python_close(py);
}

static void test_native_session_sees_workspace(void **state) {
    al_host_report host;
    al_probe_host(&host, NULL, false);
    if (!host.native_available) {
        skip();
        return;
    }
    fx *f = fx_new(10, 3600, MiB);
    svc_session_info a;
    char err[256];
    create(f, SVC_COMMAND, "t", &a);
    assert_true(svc_session_put_file(f->s, a.id, "t", "in.txt", (const uint8_t *)"hi\n", 3, err,
                                     sizeof err));
    svc_exec_request req = kind_req(SVC_COMMAND, AL_ISOLATION_NATIVE);
    al_policy p;
    al_policy_init(&p);
    static const char *const argv[] = {"/bin/sh", "-c", "cat in.txt; echo out > out.txt"};
    p.argv = argv;
    p.argc = 3;
    p.timeout_ms = 20000;
    al_result r;
    assert_true(svc_session_exec(f->s, a.id, "t", &p, &req, &r, err, sizeof err));
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "hi\n");
    al_result_free(&r);
    uint8_t *data;
    size_t len;
    assert_true(svc_session_get_file(f->s, a.id, "t", "out.txt", &data, &len, err, sizeof err));
    assert_int_equal(len, 4);
    assert_memory_equal(data, "out\n", 4);
    free(data);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_list_delete),
        cmocka_unit_test(test_bad_templates_are_refused),
        cmocka_unit_test(test_lru_eviction),
        cmocka_unit_test(test_idle_expiry),
        cmocka_unit_test(test_stale_sessions_are_removed_at_start),
        cmocka_unit_test(test_files_round_trip),
        cmocka_unit_test(test_bad_paths_are_refused),
        cmocka_unit_test(test_symlinks_are_never_followed),
        cmocka_unit_test(test_fifo_does_not_block),
        cmocka_unit_test(test_workspace_cap),
        cmocka_unit_test(test_deep_trees_are_removed),
        cmocka_unit_test(test_wasm_session_exec_and_stream),
        cmocka_unit_test(test_busy_session_is_409_and_never_evicted),
        cmocka_unit_test(test_python_session_keeps_variables),
        cmocka_unit_test(test_native_session_sees_workspace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
