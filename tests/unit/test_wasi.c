/*
 * test_wasi.c — the WASI preview1 host (src/wasi/) driven from a guest.
 *
 * fixtures/wasi.wat imports all 46 wasi_snapshot_preview1 functions with the
 * witx signatures (so instantiating it checks wasi_define_imports' table)
 * and exports a forwarding function for each: a test writes arguments into
 * the guest's memory, calls the forwarder with al_call, and reads results
 * back. The host functions thus run exactly as under a real guest, with
 * that module's memory as the caller's memory.
 *
 * wasi_impl.h is included for white-box checks (the output buffer never
 * allocates past its cap) and to install a host file as a guest fd while the
 * path_* functions are elsewhere.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"
#include "../../src/wasi/wasi_impl.h"
#include "fixtures/wasi_wasm.h"

#define PAGE 65536u
#define MiB (1024u * 1024u)

typedef struct fx {
    al_store *store;
    al_module *module;
    al_imports *imports;
    al_instance *instance;
    wasi_ctx *ctx;
} fx;

static fx *fx_open(const wasi_config *cfg) {
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    al_error err;
    f->ctx = wasi_ctx_new(cfg, &err);
    assert_non_null(f->ctx);
    f->store = al_store_new(NULL);
    f->module = al_module_new(wasi_wasm, sizeof wasi_wasm, &err);
    assert_non_null(f->module);
    f->imports = al_imports_new();
    assert_true(wasi_define_imports(f->ctx, f->store, f->imports, &err));
    f->instance = al_instantiate(f->store, f->module, f->imports, &err);
    if (!f->instance) fail_msg("instantiate: %s", err.message);
    return f;
}

static fx *fx_default(void) {
    static const char *const argv[] = {"prog"};
    wasi_config cfg = {.argv = argv, .argc = 1, .stdout_cap = MiB, .stderr_cap = MiB};
    return fx_open(&cfg);
}

static void fx_close(fx *f) {
    al_imports_free(f->imports);
    al_store_free(f->store);
    al_module_free(f->module);
    wasi_ctx_free(f->ctx);
    free(f);
}

static uint8_t *mem(fx *f) {
    al_extern ext;
    assert_true(al_instance_export(f->instance, "memory", &ext));
    return al_memory_data(ext.of.memory);
}

static uint64_t mem_size(fx *f) {
    al_extern ext;
    assert_true(al_instance_export(f->instance, "memory", &ext));
    return al_memory_size(ext.of.memory);
}

static void grow_to(fx *f, uint64_t bytes) {
    uint64_t size = mem_size(f);
    if (size >= bytes) return;
    al_extern ext;
    assert_true(al_instance_export(f->instance, "grow", &ext));
    al_value arg = al_i32((int32_t)((bytes - size + PAGE - 1) / PAGE)), res;
    al_error err;
    assert_true(al_call(f->store, ext.of.func, &arg, 1, &res, 1, &err));
    assert_int_not_equal(res.of.i32, -1);
}

static al_value I(uint32_t v) { return al_i32((int32_t)v); }
static al_value L(uint64_t v) { return al_i64((int64_t)v); }

/* Call forwarder `name`; true with *errno_out on return, false on a trap. */
static bool try_call(fx *f, const char *name, const al_value *args, uint32_t n, int32_t *errno_out,
                     al_error *err) {
    al_extern ext;
    if (!al_instance_export(f->instance, name, &ext)) fail_msg("no export %s", name);
    al_value res = al_i32(-1);
    uint32_t nres = al_func_type(ext.of.func)->nresults;
    if (!al_call(f->store, ext.of.func, args, n, &res, nres, err)) return false;
    if (errno_out) *errno_out = res.of.i32;
    return true;
}

#define CALL(f, name, ...) call_(f, name, (al_value[]){__VA_ARGS__}, \
                                 sizeof((al_value[]){__VA_ARGS__}) / sizeof(al_value))
static int32_t call_(fx *f, const char *name, const al_value *args, uint32_t n) {
    int32_t e = -1;
    al_error err;
    if (!try_call(f, name, args, n, &e, &err)) fail_msg("%s trapped: %s", name, err.message);
    return e;
}

static void put32(fx *f, uint32_t at, uint32_t v) { memcpy(mem(f) + at, &v, 4); }
static uint32_t get32(fx *f, uint32_t at) { uint32_t v; memcpy(&v, mem(f) + at, 4); return v; }
static uint64_t get64(fx *f, uint32_t at) { uint64_t v; memcpy(&v, mem(f) + at, 8); return v; }
static void put64(fx *f, uint32_t at, uint64_t v) { memcpy(mem(f) + at, &v, 8); }

static void iovec(fx *f, uint32_t at, uint32_t buf, uint32_t len) {
    put32(f, at, buf);
    put32(f, at + 4, len);
}

static void assert_stdout(fx *f, const char *want) {
    size_t len;
    bool trunc;
    const uint8_t *d = wasi_stdout(f->ctx, &len, &trunc);
    assert_int_equal(len, strlen(want));
    if (len) assert_memory_equal(d, want, len);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- fd_write / output ---------------------------------------------------- */

static void test_fd_write_iovecs(void **state) {
    fx *f = fx_default();
    memcpy(mem(f) + 100, "hello, ", 7);
    memcpy(mem(f) + 200, "world\n", 6);
    iovec(f, 0, 100, 7);
    iovec(f, 8, 300, 0); /* an empty vector in the middle */
    iovec(f, 16, 200, 6);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(3), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 13);
    assert_stdout(f, "hello, world\n");
    assert_int_equal(CALL(f, "fd_write", I(2), I(16), I(1), I(40)), WASI_ESUCCESS);
    size_t len;
    const uint8_t *e = wasi_stderr(f->ctx, &len, NULL);
    assert_int_equal(len, 6);
    assert_memory_equal(e, "world\n", 6);
    /* zero vectors: nothing written, success */
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(0), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 0);
    fx_close(f);
}

/* 3 MiB into a 1 MiB cap: the guest is told everything was written, the
 * host keeps exactly the first MiB and never allocates more than the cap. */
static void test_output_cap(void **state) {
    fx *f = fx_default();
    grow_to(f, 4 * MiB);
    uint32_t buf = PAGE, n = 3 * MiB;
    uint8_t *m = mem(f);
    for (uint32_t i = 0; i < n; i++) m[buf + i] = (uint8_t)(i * 7);
    iovec(f, 0, buf, n);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), n);
    size_t len;
    bool trunc;
    const uint8_t *d = wasi_stdout(f->ctx, &len, &trunc);
    assert_int_equal(len, MiB);
    assert_true(trunc);
    assert_memory_equal(d, mem(f) + buf, MiB);
    assert_true(f->ctx->out.alloc <= f->ctx->out.cap);
    /* more small writes past the cap: still "written", still bounded */
    iovec(f, 0, buf, 4096);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
        assert_int_equal(get32(f, 40), 4096);
    }
    wasi_stdout(f->ctx, &len, &trunc);
    assert_int_equal(len, MiB);
    assert_true(f->ctx->out.alloc <= MiB);
    /* stderr is untouched and not truncated */
    wasi_stderr(f->ctx, &len, &trunc);
    assert_int_equal(len, 0);
    assert_false(trunc);
    fx_close(f);
}

/* Small writes grow the buffer geometrically up to, never past, the cap. */
static void test_output_small_cap(void **state) {
    wasi_config cfg = {.stdout_cap = 10, .stderr_cap = 0};
    fx *f = fx_open(&cfg);
    memcpy(mem(f) + 100, "0123456789abcdef", 16);
    iovec(f, 0, 100, 6);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 6);
    assert_stdout(f, "0123450123");
    assert_true(f->ctx->out.alloc <= 10);
    bool trunc;
    size_t len;
    wasi_stdout(f->ctx, &len, &trunc);
    assert_true(trunc);
    /* a zero cap keeps nothing */
    assert_int_equal(CALL(f, "fd_write", I(2), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 6);
    wasi_stderr(f->ctx, &len, &trunc);
    assert_int_equal(len, 0);
    assert_true(trunc);
    fx_close(f);
}

/* Every way a guest can point outside its memory is EFAULT, never a host
 * access, and nothing is written. */
static void test_bad_pointers(void **state) {
    fx *f = fx_default();
    uint32_t end = (uint32_t)mem_size(f);
    memset(mem(f), 0, 16384); /* vectors past the first read as empty */
    memset(mem(f) + 9000, 'x', 16);
    iovec(f, 0, end - 10, 100); /* buffer runs past the end */
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_EFAULT);
    iovec(f, 0, 0xfffffff0u, 0x20); /* buf + len wraps in 32 bits */
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_EFAULT);
    iovec(f, 0, 9000, 4);
    assert_int_equal(CALL(f, "fd_write", I(1), I(end - 4), I(1), I(40)), WASI_EFAULT); /* array */
    /* iovs_len * 8 wraps to 0 and to 8 in 32 bits: must still be EFAULT */
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(0x20000000u), I(40)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(0x20000001u), I(40)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(end - 2)), WASI_EFAULT); /* nwritten */
    /* the second vector is bad: the first must not have been written either */
    iovec(f, 8, end, 1);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(2), I(40)), WASI_EFAULT);
    assert_stdout(f, "");
    /* a zero-length buffer exactly at the end is inside */
    iovec(f, 8, end, 0);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(2), I(40)), WASI_ESUCCESS);
    assert_stdout(f, "xxxx");

    assert_int_equal(CALL(f, "fd_read", I(0), I(0), I(1), I(end)), WASI_EFAULT);
    assert_int_equal(CALL(f, "clock_time_get", I(1), L(0), I(end - 4)), WASI_EFAULT);
    assert_int_equal(CALL(f, "clock_res_get", I(1), I(0xffffffffu)), WASI_EFAULT);
    memset(mem(f) + end - 16, 0, 16);
    assert_int_equal(CALL(f, "random_get", I(end - 16), I(17)), WASI_EFAULT);
    for (uint32_t i = end - 16; i < end; i++) assert_int_equal(mem(f)[i], 0); /* nothing written */
    assert_int_equal(CALL(f, "random_get", I(0xffffffffu), I(2)), WASI_EFAULT);
    assert_int_equal(CALL(f, "args_sizes_get", I(end), I(0)), WASI_EFAULT);
    memset(mem(f), 0xAA, 64);
    assert_int_equal(CALL(f, "args_get", I(0), I(end - 2)), WASI_EFAULT); /* "prog\0" needs 5 */
    assert_int_equal(get32(f, 0), 0xAAAAAAAAu); /* pointer array untouched */
    assert_int_equal(CALL(f, "fd_fdstat_get", I(1), I(end - 23)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_seek", I(1), L(0), I(0), I(end)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "poll_oneoff", I(end - 47), I(0), I(1), I(40)), WASI_EFAULT);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(end - 31), I(1), I(40)), WASI_EFAULT);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(0), I(0x10000000u), I(40)), WASI_EFAULT);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(64), I(1), I(end - 3)), WASI_EFAULT);

    /* called with no guest frame at all (no caller memory): EFAULT */
    al_value args[4] = {I(1), I(0), I(1), I(40)}, res;
    assert_int_equal(wasi_fd_write(f->ctx, NULL, args, &res), AL_TRAP_NONE);
    assert_int_equal(res.of.i32, WASI_EFAULT);
    fx_close(f);
}

/* ---- stdin, seek, fd table ---------------------------------------------------- */

static void test_stdin(void **state) {
    wasi_config cfg = {.stdin_data = (const uint8_t *)"hello world", .stdin_len = 11};
    fx *f = fx_open(&cfg);
    iovec(f, 0, 100, 5);
    iovec(f, 8, 200, 100);
    assert_int_equal(CALL(f, "fd_read", I(0), I(0), I(2), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 11);
    assert_memory_equal(mem(f) + 100, "hello", 5);
    assert_memory_equal(mem(f) + 200, " world", 6);
    assert_int_equal(CALL(f, "fd_read", I(0), I(0), I(2), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 0); /* end of file */
    /* stdin is read-only, stdout write-only */
    assert_int_equal(CALL(f, "fd_write", I(0), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_read", I(1), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    fx_close(f);

    /* no stdin configured: immediate end of file */
    f = fx_default();
    iovec(f, 0, 100, 5);
    assert_int_equal(CALL(f, "fd_read", I(0), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 0);
    fx_close(f);
}

static void test_seek_stdio(void **state) {
    fx *f = fx_default();
    assert_int_equal(CALL(f, "fd_seek", I(1), L(0), I(1), I(40)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "fd_seek", I(0), L(5), I(0), I(40)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "fd_tell", I(2), I(40)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "fd_seek", I(1), L(0), I(3), I(40)), WASI_EINVAL); /* whence */
    assert_int_equal(CALL(f, "fd_pread", I(0), I(0), I(0), L(0), I(40)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "fd_pwrite", I(1), I(0), I(0), L(0), I(40)), WASI_ESPIPE);
    assert_int_equal(CALL(f, "fd_seek", I(9), L(0), I(0), I(40)), WASI_EBADF);
    fx_close(f);
}

static void test_fd_close(void **state) {
    fx *f = fx_default();
    iovec(f, 0, 100, 1);
    assert_int_equal(CALL(f, "fd_close", I(1)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_close", I(1)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(1), I(64)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_close", I(3)), WASI_EBADF); /* no preopens granted */
    assert_int_equal(CALL(f, "fd_close", I(0xffffffffu)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_close", I(0)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_close", I(2)), WASI_ESUCCESS);
    fx_close(f);
}

static void test_fd_renumber(void **state) {
    fx *f = fx_default();
    memcpy(mem(f) + 100, "E", 1);
    iovec(f, 0, 100, 1);
    assert_int_equal(CALL(f, "fd_renumber", I(2), I(1)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(2), I(0), I(1), I(40)), WASI_EBADF);
    size_t len;
    wasi_stderr(f->ctx, &len, NULL);
    assert_int_equal(len, 1); /* fd 1 is now the old stderr */
    assert_stdout(f, "");
    assert_int_equal(CALL(f, "fd_renumber", I(1), I(50)), WASI_EBADF); /* to not open */
    assert_int_equal(CALL(f, "fd_renumber", I(50), I(1)), WASI_EBADF); /* from not open */
    assert_int_equal(CALL(f, "fd_renumber", I(1), I(2)), WASI_EBADF);  /* 2 was moved away */
    assert_int_equal(CALL(f, "fd_renumber", I(1), I(1)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ESUCCESS);
    fx_close(f);
}

static void test_fdstat(void **state) {
    fx *f = fx_default();
    assert_int_equal(CALL(f, "fd_fdstat_get", I(1), I(64)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[64], WASI_FILETYPE_SOCKET_STREAM);
    uint64_t base = get64(f, 72);
    assert_true(base & WASI_RIGHT_FD_WRITE);
    assert_false(base & (WASI_RIGHT_FD_READ | WASI_RIGHT_FD_SEEK | WASI_RIGHT_FD_TELL));
    assert_int_equal(get64(f, 80), 0);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(0), I(64)), WASI_ESUCCESS);
    assert_true(get64(f, 72) & WASI_RIGHT_FD_READ);
    assert_false(get64(f, 72) & WASI_RIGHT_FD_WRITE);

    /* rights only shrink */
    assert_int_equal(CALL(f, "fd_fdstat_set_rights", I(1), L(base | WASI_RIGHT_FD_READ), L(0)),
                     WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_fdstat_set_rights", I(1), L(base), L(1)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_fdstat_set_rights", I(1), L(base & ~WASI_RIGHT_FD_WRITE), L(0)),
                     WASI_ESUCCESS);
    iovec(f, 0, 100, 1);
    assert_int_equal(CALL(f, "fd_write", I(1), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_fdstat_set_rights", I(1), L(base), L(0)), WASI_ENOTCAPABLE);

    /* flags */
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(2), I(WASI_FDFLAG_APPEND)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(2), I(64)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[66], WASI_FDFLAG_APPEND);
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(2), I(WASI_FDFLAG_SYNC)), WASI_ENOTSUP);
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(2), I(0x100)), WASI_EINVAL);
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(0), I(WASI_FDFLAG_APPEND)),
                     WASI_ENOTCAPABLE); /* append on a read-only stream */
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(0), I(WASI_FDFLAG_NONBLOCK)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(7), I(0)), WASI_EBADF);
    fx_close(f);
}

/* ---- files and preopens ----------------------------------------------------------- */

static void make_tmpdir(char *dir, size_t len) {
    snprintf(dir, len, "/tmp/airlock-wasi-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

/* A host file installed as a guest fd (path_open's job, done by hand). */
static uint32_t install_file(fx *f, const char *path, bool read_only) {
    int hfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(hfd >= 0);
    wasi_fd e = {.kind = WASI_FD_FILE, .host_fd = hfd, .preopen = -1, .read_only = read_only,
                 .rights_base = WASI_RIGHT_FD_READ | WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_SEEK |
                                WASI_RIGHT_FD_TELL | WASI_RIGHT_FD_FDSTAT_SET_FLAGS |
                                WASI_RIGHT_POLL_FD_READWRITE};
    int64_t fd = wasi_fd_install(f->ctx, &e);
    assert_true(fd >= 3);
    return (uint32_t)fd;
}

static void test_file_io(void **state) {
    char dir[64], path[96];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f", dir);
    fx *f = fx_default();
    uint32_t fd = install_file(f, path, false);
    memcpy(mem(f) + 100, "abcdefgh", 8);
    iovec(f, 0, 100, 4);
    iovec(f, 8, 104, 4);
    assert_int_equal(CALL(f, "fd_write", I(fd), I(0), I(2), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 8);
    assert_int_equal(CALL(f, "fd_tell", I(fd), I(48)), WASI_ESUCCESS);
    assert_int_equal(get64(f, 48), 8);
    assert_int_equal(CALL(f, "fd_seek", I(fd), L((uint64_t)-3), I(2), I(48)), WASI_ESUCCESS);
    assert_int_equal(get64(f, 48), 5);
    assert_int_equal(CALL(f, "fd_seek", I(fd), L(0), I(0), I(48)), WASI_ESUCCESS);
    iovec(f, 16, 200, 3);
    iovec(f, 24, 300, 10);
    assert_int_equal(CALL(f, "fd_read", I(fd), I(16), I(2), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 8);
    assert_memory_equal(mem(f) + 200, "abc", 3);
    assert_memory_equal(mem(f) + 300, "defgh", 5);
    /* positioned I/O leaves the offset alone */
    memcpy(mem(f) + 120, "XY", 2);
    iovec(f, 32, 120, 2);
    assert_int_equal(CALL(f, "fd_pwrite", I(fd), I(32), I(1), L(2), I(40)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_pread", I(fd), I(16), I(1), L(1), I(40)), WASI_ESUCCESS);
    assert_memory_equal(mem(f) + 200, "bXY", 3);
    assert_int_equal(CALL(f, "fd_tell", I(fd), I(48)), WASI_ESUCCESS);
    assert_int_equal(get64(f, 48), 8);
    assert_int_equal(CALL(f, "fd_pread", I(fd), I(16), I(1), L(1ull << 63), I(40)), WASI_EINVAL);
    /* append mode: writes go to the end whatever the offset */
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(fd), I(WASI_FDFLAG_APPEND)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_seek", I(fd), L(0), I(0), I(48)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_write", I(fd), I(32), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_tell", I(fd), I(48)), WASI_ESUCCESS);
    assert_int_equal(get64(f, 48), 10);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(fd), I(64)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[64], WASI_FILETYPE_REGULAR_FILE);
    assert_int_equal(mem(f)[66], WASI_FDFLAG_APPEND);
    /* poll: a file is readable at once with what is left to read */
    assert_int_equal(CALL(f, "fd_seek", I(fd), L(4), I(0), I(48)), WASI_ESUCCESS);
    memset(mem(f) + 1024, 0, 48);
    put64(f, 1024, 99);
    mem(f)[1032] = 1; /* fd_read */
    put32(f, 1040, fd);
    assert_int_equal(CALL(f, "poll_oneoff", I(1024), I(2048), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 1);
    assert_int_equal(get64(f, 2048 + 16), 6);
    /* renumber a file over stdout: stdout is gone, the file answers on 1 */
    assert_int_equal(CALL(f, "fd_renumber", I(fd), I(1)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_tell", I(1), I(48)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_close", I(fd)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_close", I(1)), WASI_ESUCCESS);
    fx_close(f);
    unlink(path);
    rmdir(dir);
}

/* A descriptor beneath a read-only grant refuses writes even if it was
 * (wrongly) given the right. */
static void test_read_only_fd(void **state) {
    char dir[64], path[96];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ro", dir);
    fx *f = fx_default();
    uint32_t fd = install_file(f, path, true);
    iovec(f, 0, 100, 4);
    assert_int_equal(CALL(f, "fd_write", I(fd), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_pwrite", I(fd), I(0), I(1), L(0), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(fd), I(WASI_FDFLAG_APPEND)),
                     WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_read", I(fd), I(0), I(1), I(40)), WASI_ESUCCESS);
    fx_close(f);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    unlink(path);
    rmdir(dir);
}

/* A FIFO in a granted directory whose writer never writes: fd_read must not
 * hold the host thread past the deadline. */
static void test_fifo_deadline(void **state) {
    char dir[64], path[96];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    fx *f = fx_default();
    int hfd = open(path, O_RDWR | O_CLOEXEC); /* we are the silent writer */
    assert_true(hfd >= 0);
    wasi_fd e = {.kind = WASI_FD_FILE, .host_fd = hfd, .preopen = -1,
                 .rights_base = WASI_RIGHT_FD_READ | WASI_RIGHT_FD_WRITE |
                                WASI_RIGHT_FD_FDSTAT_SET_FLAGS};
    uint32_t fd = (uint32_t)wasi_fd_install(f->ctx, &e);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(fd), I(64)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[64], WASI_FILETYPE_SOCKET_STREAM);
    /* data waiting: read at once */
    assert_int_equal(write(hfd, "hi", 2), 2);
    iovec(f, 0, 100, 16);
    assert_int_equal(CALL(f, "fd_read", I(fd), I(0), I(1), I(40)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 40), 2);
    /* nothing to read: the deadline ends the wait */
    al_error err;
    al_value args[4] = {I(fd), I(0), I(1), I(40)};
    uint64_t t0 = now_ns();
    f->ctx->deadline_ns = t0 + 50000000u;
    assert_false(try_call(f, "fd_read", args, 4, NULL, &err));
    assert_int_equal(err.trap, AL_TRAP_INTERRUPTED);
    uint64_t took = now_ns() - t0;
    assert_true(took >= 40000000u && took < 1000000000u);
    /* a non-blocking guest gets EAGAIN instead */
    f->ctx->deadline_ns = 0;
    assert_int_equal(CALL(f, "fd_fdstat_set_flags", I(fd), I(WASI_FDFLAG_NONBLOCK)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_read", I(fd), I(0), I(1), I(40)), WASI_EAGAIN);
    fx_close(f);
    unlink(path);
    rmdir(dir);
}

static void test_preopens(void **state) {
    char dir[64], link[96], file[96];
    make_tmpdir(dir, sizeof dir);
    snprintf(link, sizeof link, "%s-link", dir);
    snprintf(file, sizeof file, "%s/plain", dir);
    assert_int_equal(symlink(dir, link), 0);
    fclose(fopen(file, "w"));

    wasi_preopen_config pre[2] = {{link, "/work", false}, {dir, "/ro", true}};
    wasi_config cfg = {.preopens = pre, .npreopens = 2};
    fx *f = fx_open(&cfg);
    char *canon = realpath(dir, NULL);
    assert_string_equal(wasi_preopen_host_path(f->ctx, 0), canon); /* the link is resolved */
    assert_string_equal(wasi_preopen_host_path(f->ctx, 1), canon);
    assert_null(wasi_preopen_host_path(f->ctx, 2));
    free(canon);

    assert_int_equal(CALL(f, "fd_fdstat_get", I(3), I(64)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[64], WASI_FILETYPE_DIRECTORY);
    uint64_t rw_base = get64(f, 72), rw_inh = get64(f, 80);
    assert_true(rw_base & WASI_RIGHT_PATH_OPEN);
    assert_true(rw_base & WASI_RIGHT_PATH_CREATE_FILE);
    assert_true(rw_inh & WASI_RIGHT_FD_WRITE);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(4), I(64)), WASI_ESUCCESS);
    uint64_t ro_base = get64(f, 72), ro_inh = get64(f, 80);
    const uint64_t modify = WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_ALLOCATE |
                            WASI_RIGHT_PATH_CREATE_DIRECTORY | WASI_RIGHT_PATH_CREATE_FILE |
                            WASI_RIGHT_PATH_LINK_TARGET | WASI_RIGHT_PATH_RENAME_SOURCE |
                            WASI_RIGHT_PATH_RENAME_TARGET | WASI_RIGHT_PATH_FILESTAT_SET_SIZE |
                            WASI_RIGHT_PATH_FILESTAT_SET_TIMES | WASI_RIGHT_FD_FILESTAT_SET_SIZE |
                            WASI_RIGHT_FD_FILESTAT_SET_TIMES | WASI_RIGHT_PATH_SYMLINK |
                            WASI_RIGHT_PATH_REMOVE_DIRECTORY | WASI_RIGHT_PATH_UNLINK_FILE;
    assert_int_equal(ro_base & modify, 0);
    assert_int_equal(ro_inh & modify, 0);
    assert_true(ro_base & WASI_RIGHT_PATH_OPEN);
    assert_true(ro_inh & WASI_RIGHT_FD_READ);
    assert_true(f->ctx->fds[4].read_only);
    assert_int_equal(f->ctx->fds[4].preopen, 1);

    /* a directory is neither read, written nor seeked as a file */
    iovec(f, 0, 100, 4);
    assert_int_equal(CALL(f, "fd_read", I(3), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_write", I(3), I(0), I(1), I(40)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_seek", I(3), L(0), I(0), I(40)), WASI_EBADF);
    /* preopens may be closed (witx; node does the same) and the slot reused */
    assert_int_equal(CALL(f, "fd_close", I(3)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_fdstat_get", I(3), I(64)), WASI_EBADF);
    wasi_fd e = {.kind = WASI_FD_FILE, .host_fd = -1, .preopen = -1};
    assert_int_equal(wasi_fd_install(f->ctx, &e), 3);
    fx_close(f);

    /* refused grants name the path */
    al_error err;
    wasi_preopen_config missing = {"/nonexistent/airlock-wasi", "/x", false};
    cfg = (wasi_config){.preopens = &missing, .npreopens = 1};
    assert_null(wasi_ctx_new(&cfg, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "/nonexistent/airlock-wasi"));
    wasi_preopen_config plain = {file, "/x", false};
    cfg.preopens = &plain;
    assert_null(wasi_ctx_new(&cfg, &err));
    assert_non_null(strstr(err.message, file));
    assert_non_null(strstr(err.message, "not a directory"));
    /* the good one before a bad one is released (LSan checks) */
    wasi_preopen_config two[2] = {{dir, "/a", false}, {file, "/b", false}};
    cfg.preopens = two;
    cfg.npreopens = 2;
    assert_null(wasi_ctx_new(&cfg, &err));

    unlink(file);
    unlink(link);
    rmdir(dir);
}

static void test_fd_table_limit(void **state) {
    fx *f = fx_default();
    wasi_fd e = {.kind = WASI_FD_FILE, .host_fd = -1, .preopen = -1};
    uint32_t n = 3;
    while (wasi_fd_install(f->ctx, &e) >= 0) n++;
    assert_int_equal(n, WASI_MAX_FDS);
    assert_int_equal(CALL(f, "fd_close", I(500)), WASI_ESUCCESS);
    assert_int_equal(wasi_fd_install(f->ctx, &e), 500);
    assert_int_equal(wasi_fd_install(f->ctx, &e), -1);
    fx_close(f);
}

/* ---- args, environ ----------------------------------------------------------------- */

static void test_args_environ(void **state) {
    static const char *const argv[] = {"prog", "a b", "", "\xc3\xbc"};
    static const char *const env[] = {"A=1", "PATH=/bin"};
    wasi_config cfg = {.argv = argv, .argc = 4, .env = env, .nenv = 2};
    fx *f = fx_open(&cfg);
    assert_int_equal(CALL(f, "args_sizes_get", I(0), I(4)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 0), 4);
    assert_int_equal(get32(f, 4), 5 + 4 + 1 + 3);
    assert_int_equal(CALL(f, "args_get", I(100), I(200)), WASI_ESUCCESS);
    for (int i = 0; i < 4; i++) assert_string_equal((char *)mem(f) + get32(f, 100 + 4 * i), argv[i]);
    assert_int_equal(get32(f, 100), 200);
    assert_int_equal(CALL(f, "environ_sizes_get", I(0), I(4)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 0), 2);
    assert_int_equal(get32(f, 4), 4 + 10);
    assert_int_equal(CALL(f, "environ_get", I(300), I(400)), WASI_ESUCCESS);
    assert_string_equal((char *)mem(f) + get32(f, 300), "A=1");
    assert_string_equal((char *)mem(f) + get32(f, 304), "PATH=/bin");
    fx_close(f);

    /* the host environment is never inherited: nothing by default */
    f = fx_default();
    put32(f, 0, 77);
    put32(f, 4, 77);
    assert_int_equal(CALL(f, "environ_sizes_get", I(0), I(4)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 0), 0);
    assert_int_equal(get32(f, 4), 0);
    assert_int_equal(CALL(f, "environ_get", I(300), I(400)), WASI_ESUCCESS);
    fx_close(f);

    /* the config is copied */
    char name[] = "mutable";
    const char *argv2[] = {name};
    cfg = (wasi_config){.argv = argv2, .argc = 1};
    f = fx_open(&cfg);
    name[0] = 'X';
    assert_int_equal(CALL(f, "args_get", I(100), I(200)), WASI_ESUCCESS);
    assert_string_equal((char *)mem(f) + 200, "mutable");
    fx_close(f);

    al_error err;
    static const char *const bad_env[] = {"NOEQUALS"};
    cfg = (wasi_config){.env = bad_env, .nenv = 1};
    assert_null(wasi_ctx_new(&cfg, &err));
    assert_non_null(strstr(err.message, "NOEQUALS"));
    cfg = (wasi_config){.stdin_len = 5};
    assert_null(wasi_ctx_new(&cfg, &err));
}

/* ---- clocks, random, proc, sockets ------------------------------------------------------ */

static void test_clocks(void **state) {
    fx *f = fx_default();
    assert_int_equal(CALL(f, "clock_time_get", I(1), L(0), I(0)), WASI_ESUCCESS);
    uint64_t a = get64(f, 0);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    assert_int_equal(CALL(f, "clock_time_get", I(1), L(1), I(0)), WASI_ESUCCESS);
    uint64_t b = get64(f, 0);
    assert_true(b >= a + 2000000);
    assert_int_equal(CALL(f, "clock_time_get", I(0), L(0), I(0)), WASI_ESUCCESS);
    uint64_t real = get64(f, 0);
    uint64_t host = (uint64_t)time(NULL) * 1000000000u;
    assert_true(real + 5000000000u > host && real < host + 5000000000u);
    for (uint32_t id = 0; id < 4; id++) {
        assert_int_equal(CALL(f, "clock_res_get", I(id), I(8)), WASI_ESUCCESS);
        assert_true(get64(f, 8) > 0);
        assert_int_equal(CALL(f, "clock_time_get", I(id), L(0), I(8)), WASI_ESUCCESS);
    }
    assert_int_equal(CALL(f, "clock_time_get", I(4), L(0), I(0)), WASI_EINVAL);
    assert_int_equal(CALL(f, "clock_res_get", I(0xffffffffu), I(0)), WASI_EINVAL);
    fx_close(f);
}

static void test_random(void **state) {
    fx *f = fx_default();
    grow_to(f, 4 * PAGE);
    memset(mem(f), 0, 4 * PAGE);
    assert_int_equal(CALL(f, "random_get", I(PAGE), I(2 * PAGE)), WASI_ESUCCESS);
    size_t zeros = 0;
    for (uint32_t i = PAGE; i < 3 * PAGE; i++) zeros += mem(f)[i] == 0;
    assert_true(zeros < 2 * PAGE / 128); /* ~1/256 expected */
    for (uint32_t i = 0; i < PAGE; i++) assert_int_equal(mem(f)[i], 0);        /* before */
    for (uint32_t i = 3 * PAGE; i < 4 * PAGE; i++) assert_int_equal(mem(f)[i], 0); /* after */
    assert_int_equal(CALL(f, "random_get", I(0), I(32)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "random_get", I(32), I(32)), WASI_ESUCCESS);
    assert_memory_not_equal(mem(f), mem(f) + 32, 32);
    assert_int_equal(CALL(f, "random_get", I(4 * PAGE), I(0)), WASI_ESUCCESS);
    fx_close(f);
}

static void test_proc_exit(void **state) {
    fx *f = fx_default();
    al_error err;
    int code = -1;
    assert_false(wasi_exited(f->ctx, &code));
    assert_false(try_call(f, "hello", NULL, 0, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_EXIT);
    assert_true(wasi_exited(f->ctx, &code));
    assert_int_equal(code, 3);
    assert_stdout(f, "hello\n");
    fx_close(f);

    f = fx_default();
    al_value arg = I(0xffffffffu);
    assert_false(try_call(f, "proc_exit", &arg, 1, NULL, &err));
    assert_int_equal(err.trap, AL_TRAP_EXIT);
    assert_true(wasi_exited(f->ctx, &code));
    assert_int_equal(code, -1);
    fx_close(f);
}

static void test_no_signals_no_sockets(void **state) {
    fx *f = fx_default();
    assert_int_equal(CALL(f, "proc_raise", I(9)), WASI_ENOSYS);
    int32_t e = -1;
    assert_true(try_call(f, "sched_yield", NULL, 0, &e, NULL));
    assert_int_equal(e, WASI_ESUCCESS);
    assert_int_equal(CALL(f, "sock_accept", I(1), I(0), I(0)), WASI_ENOTSUP);
    assert_int_equal(CALL(f, "sock_recv", I(0), I(0), I(0), I(0), I(0), I(4)), WASI_ENOTSUP);
    assert_int_equal(CALL(f, "sock_send", I(1), I(0), I(0), I(0), I(0)), WASI_ENOTSUP);
    assert_int_equal(CALL(f, "sock_shutdown", I(1), I(3)), WASI_ENOTSUP);
    fx_close(f);
}

static void test_errno_map(void **state) {
    assert_int_equal(wasi_errno_from_host(0), WASI_ESUCCESS);
    assert_int_equal(wasi_errno_from_host(ENOENT), WASI_ENOENT);
    assert_int_equal(wasi_errno_from_host(EAGAIN), WASI_EAGAIN);
    assert_int_equal(wasi_errno_from_host(EWOULDBLOCK), WASI_EAGAIN);
    assert_int_equal(wasi_errno_from_host(EOPNOTSUPP), WASI_ENOTSUP);
    assert_int_equal(wasi_errno_from_host(EXDEV), WASI_EXDEV);
    assert_int_equal(wasi_errno_from_host(ELOOP), WASI_ELOOP);
    assert_int_equal(wasi_errno_from_host(ENOTEMPTY), WASI_ENOTEMPTY);
    assert_int_equal(wasi_errno_from_host(EDQUOT), WASI_EDQUOT);
    assert_int_equal(wasi_errno_from_host(EHOSTDOWN), WASI_EHOSTUNREACH);
    assert_int_equal(wasi_errno_from_host(EREMOTEIO), WASI_EIO);
    assert_int_equal(wasi_errno_from_host(99999), WASI_EIO);
    /* every host errno maps to a defined WASI errno */
    for (int e = 0; e < 4096; e++) assert_true(wasi_errno_from_host(e) <= WASI_ENOTCAPABLE);
}

/* ---- poll_oneoff -------------------------------------------------------------------------- */

static void sub_clock(fx *f, uint32_t at, uint64_t userdata, uint32_t id, uint64_t timeout,
                      uint16_t flags) {
    memset(mem(f) + at, 0, 48);
    put64(f, at, userdata);
    mem(f)[at + 8] = 0;
    put32(f, at + 16, id);
    put64(f, at + 24, timeout);
    memcpy(mem(f) + at + 40, &flags, 2);
}

static void sub_fd(fx *f, uint32_t at, uint64_t userdata, uint8_t type, uint32_t fd) {
    memset(mem(f) + at, 0, 48);
    put64(f, at, userdata);
    mem(f)[at + 8] = type;
    put32(f, at + 16, fd);
}

static void test_poll_sleep(void **state) {
    fx *f = fx_default();
    sub_clock(f, 0, 0x1122334455667788ull, 1, 20000000, 0); /* 20 ms relative */
    uint64_t t0 = now_ns();
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(512), I(1), I(1000)), WASI_ESUCCESS);
    assert_true(now_ns() - t0 >= 20000000);
    assert_int_equal(get32(f, 1000), 1);
    assert_int_equal(get64(f, 512), 0x1122334455667788ull);
    assert_int_equal(mem(f)[512 + 8] | mem(f)[512 + 9] << 8, 0);
    assert_int_equal(mem(f)[512 + 10], 0); /* clock */

    /* absolute on the monotonic clock; a later relative one does not fire */
    assert_int_equal(CALL(f, "clock_time_get", I(1), L(0), I(1008)), WASI_ESUCCESS);
    sub_clock(f, 0, 1, 1, get64(f, 1008) + 15000000, 1);
    sub_clock(f, 48, 2, 1, 10000000000ull, 0);
    t0 = now_ns();
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(512), I(2), I(1000)), WASI_ESUCCESS);
    uint64_t took = now_ns() - t0;
    assert_true(took >= 10000000 && took < 2000000000u);
    assert_int_equal(get32(f, 1000), 1);
    assert_int_equal(get64(f, 512), 1);

    /* an absolute time in the past, and a CPU-time clock: no wait */
    sub_clock(f, 0, 5, 0, 1, 1);
    sub_clock(f, 48, 6, 2, 0, 0);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(512), I(2), I(1000)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 1000), 2);
    /* an unknown clock is that event's error */
    sub_clock(f, 0, 7, 9, 0, 0);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(512), I(1), I(1000)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 1000), 1);
    assert_int_equal(mem(f)[512 + 8], WASI_EINVAL);
    /* out == in */
    sub_clock(f, 0, 8, 1, 0, 0);
    sub_clock(f, 48, 9, 1, 0, 0);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(0), I(2), I(1000)), WASI_ESUCCESS);
    assert_int_equal(get32(f, 1000), 2);
    assert_int_equal(get64(f, 0), 8);
    assert_int_equal(get64(f, 32), 9);
    fx_close(f);
}

static void test_poll_fds(void **state) {
    wasi_config cfg = {.stdin_data = (const uint8_t *)"abc", .stdin_len = 3, .stdout_cap = 10};
    fx *f = fx_open(&cfg);
    sub_fd(f, 0, 10, 1, 0);   /* stdin readable */
    sub_fd(f, 48, 11, 2, 1);  /* stdout writable */
    sub_fd(f, 96, 12, 1, 77); /* not open */
    sub_fd(f, 144, 13, 2, 0); /* stdin is not writable */
    sub_clock(f, 192, 14, 1, 10000000000ull, 0); /* 10 s: not due */
    uint64_t t0 = now_ns();
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(1024), I(5), I(2048)), WASI_ESUCCESS);
    assert_true(now_ns() - t0 < 1000000000u);
    assert_int_equal(get32(f, 2048), 4);
    uint32_t ev = 1024;
    assert_int_equal(get64(f, ev), 10);
    assert_int_equal(mem(f)[ev + 8], 0);
    assert_int_equal(mem(f)[ev + 10], 1);
    assert_int_equal(get64(f, ev + 16), 3); /* bytes left on stdin */
    assert_int_equal(get64(f, ev + 32), 11);
    assert_int_equal(mem(f)[ev + 32 + 10], 2);
    assert_int_equal(get64(f, ev + 64), 12);
    assert_int_equal(mem(f)[ev + 64 + 8], WASI_EBADF);
    assert_int_equal(get64(f, ev + 96), 13);
    assert_int_equal(mem(f)[ev + 96 + 8], WASI_ENOTCAPABLE);

    /* stdin at its end: readable, 0 bytes, hangup */
    iovec(f, 4000, 3000, 16);
    assert_int_equal(CALL(f, "fd_read", I(0), I(4000), I(1), I(2048)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(1024), I(1), I(2048)), WASI_ESUCCESS);
    assert_int_equal(get64(f, 1024 + 16), 0);
    assert_int_equal(mem(f)[1024 + 24], 1);

    /* malformed calls write nothing */
    put32(f, 2048, 0xdead);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(1024), I(0), I(2048)), WASI_EINVAL);
    mem(f)[48 + 8] = 3; /* no such eventtype */
    memset(mem(f) + 1024, 0xEE, 64);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(1024), I(2), I(2048)), WASI_EINVAL);
    assert_int_equal(get32(f, 2048), 0xdead);
    assert_int_equal(mem(f)[1024], 0xEE);
    fx_close(f);
}

/* A sleeping guest cannot outlive the run's deadline. */
static void test_poll_deadline(void **state) {
    wasi_config cfg = {.deadline_ns = 1}; /* long past */
    fx *f = fx_open(&cfg);
    sub_clock(f, 0, 1, 1, 1000000000ull, 0); /* 1 s */
    al_error err;
    al_value args[4] = {I(0), I(512), I(1), I(1000)};
    uint64_t t0 = now_ns();
    assert_false(try_call(f, "poll_oneoff", args, 4, NULL, &err));
    assert_int_equal(err.trap, AL_TRAP_INTERRUPTED);
    assert_true(now_ns() - t0 < 500000000u);
    /* not blocking (timeout 0): answers even past the deadline */
    sub_clock(f, 0, 1, 1, 0, 0);
    assert_int_equal(CALL(f, "poll_oneoff", I(0), I(512), I(1), I(1000)), WASI_ESUCCESS);
    fx_close(f);

    /* a deadline 50 ms ahead ends a 1-hour sleep after ~50 ms (set after
     * setup, so a slow instantiation cannot eat into it) */
    cfg.deadline_ns = 0;
    f = fx_open(&cfg);
    sub_clock(f, 0, 1, 1, 3600000000000ull, 0);
    t0 = now_ns();
    f->ctx->deadline_ns = t0 + 50000000u;
    assert_false(try_call(f, "poll_oneoff", args, 4, NULL, &err));
    assert_int_equal(err.trap, AL_TRAP_INTERRUPTED);
    uint64_t took = now_ns() - t0;
    assert_true(took >= 40000000u && took < 1000000000u);
    fx_close(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_write_iovecs),
        cmocka_unit_test(test_output_cap),
        cmocka_unit_test(test_output_small_cap),
        cmocka_unit_test(test_bad_pointers),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_seek_stdio),
        cmocka_unit_test(test_fd_close),
        cmocka_unit_test(test_fd_renumber),
        cmocka_unit_test(test_fdstat),
        cmocka_unit_test(test_file_io),
        cmocka_unit_test(test_read_only_fd),
        cmocka_unit_test(test_fifo_deadline),
        cmocka_unit_test(test_preopens),
        cmocka_unit_test(test_fd_table_limit),
        cmocka_unit_test(test_args_environ),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_proc_exit),
        cmocka_unit_test(test_no_signals_no_sockets),
        cmocka_unit_test(test_errno_map),
        cmocka_unit_test(test_poll_sleep),
        cmocka_unit_test(test_poll_fds),
        cmocka_unit_test(test_poll_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
