/*
 * test_wasi_fs.c — the WASI file-system host (src/wasi/path.c, fs.c) driven
 * from a guest, with a focus on the sandbox boundary.
 *
 * fixtures/wasi_fs.wat imports the file-system functions with their witx
 * signatures and exports a forwarder for each; a test writes arguments into
 * the guest's memory and al_calls the forwarder, so every host function runs
 * exactly as under a real guest. Each test gets a fresh tree from mkdtemp:
 *
 *   <root>/outside.txt, <root>/outside_dir/secret.txt   never reachable
 *   <root>/rw   preopen "/rw" (fd 3), read-write:
 *       file.txt "hello", sub/inner.txt "inner",
 *       etc_link -> /etc, escape_link -> ../outside_dir,
 *       deep_escape -> ../../../../../../../../../etc, dangle -> ../outside_new.txt,
 *       loop_a -> loop_b -> loop_a, self_loop -> self_loop,
 *       passwd_link -> /etc/passwd, inside_link -> sub/inner.txt, dir_link -> sub
 *   <root>/ro   preopen "/ro" (fd 4), read-only: data.txt "data", rsub/, rlink -> data.txt
 *   /proc       preopen "/proc" (fd 5), read-only: for the magic-link checks
 *
 * Every escape attempt asserts its exact WASI errno, and every teardown
 * asserts the host is untouched: <root>'s entries, outside_dir, the
 * read-only tree, /etc (no probe file, same mtime, /etc/passwd's link
 * count) and /tmp (no probe file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "airlock.h"
#include "../../src/wasi/wasi_impl.h"
#include "fixtures/wasi_fs_wasm.h"

/* witx constants, spelled out here so the test checks the host's values. */
enum { FOLLOW = 1 };
enum { O_CREAT_W = 1, O_DIR_W = 2, O_EXCL_W = 4, O_TRUNC_W = 8 };
enum { FST_ATIM = 1, FST_ATIM_NOW = 2, FST_MTIM = 4, FST_MTIM_NOW = 8 };
enum { FD_RW = 3, FD_RO = 4, FD_PROC = 5 };
#define R_READ (WASI_RIGHT_FD_READ | WASI_RIGHT_FD_SEEK | WASI_RIGHT_FD_FILESTAT_GET | \
                WASI_RIGHT_FD_READDIR)
#define R_WRITE (WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_FILESTAT_SET_SIZE | WASI_RIGHT_FD_ALLOCATE)
#define R_ALL WASI_RIGHTS_ALL
/* What Go's os.Open asks for with O_RDONLY (syscall/fs_wasip1.go: fileRights
 * minus writeRights): everything a file can do except fd_write, datasync,
 * allocate and path_filestat_set_size, so fd_filestat_set_size included. */
#define R_GO_RDONLY                                                                        \
    (R_ALL & ~(WASI_RIGHT_SOCK_SHUTDOWN | WASI_RIGHT_SOCK_ACCEPT | WASI_RIGHT_FD_DATASYNC | \
               WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_ALLOCATE | WASI_RIGHT_PATH_FILESTAT_SET_SIZE))

/* Guest memory layout (one 64 KiB page). */
enum { P1 = 1024, P2 = 4096, OUT = 8192, BIG = 16384, RD = 32768, RD_MAX = 16384 };

/* A name no test may ever create outside the tree. */
#define PROBE "airlock-wasi-fs-probe-5e1f"

typedef struct host_state {
    struct timespec etc_mtime;
    nlink_t passwd_nlink;
    struct timespec ro_data_mtime;
} host_state;

typedef struct fs {
    char root[64];
    char paths[4][PATH_MAX]; /* rotating buffers for hp() */
    int next_path;
    al_store *store;
    al_module *module;
    al_imports *imports;
    al_instance *instance;
    wasi_ctx *ctx;
    host_state before;
} fs;

/* ---- host side ------------------------------------------------------------- */

/* <root>/rel, in one of four rotating buffers. */
static const char *hp(fs *f, const char *rel) {
    char tmp[PATH_MAX]; /* rel may itself be an older hp() result */
    snprintf(tmp, sizeof tmp, "%s/%s", f->root, rel);
    char *p = f->paths[f->next_path++ % 4];
    memcpy(p, tmp, sizeof tmp);
    return p;
}

static void write_file(const char *path, const char *content) {
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(content, fp);
    assert_int_equal(fclose(fp), 0);
}

/* The whole file, NUL-terminated, in buf; false when unreadable. */
static bool read_file(const char *path, char *buf, size_t cap) {
    FILE *fp = fopen(path, "r");
    if (!fp) return false;
    size_t n = fread(buf, 1, cap - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return true;
}

static void assert_file(const char *path, const char *want) {
    char buf[256];
    assert_true(read_file(path, buf, sizeof buf));
    assert_string_equal(buf, want);
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static void make_dir(const char *path) { assert_int_equal(mkdir(path, 0755), 0); }
static void make_link(const char *target, const char *path) {
    assert_int_equal(symlink(target, path), 0);
}

/* Sorted, comma-joined names of a directory (without . and ..). */
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static void listing(const char *dir, char *out, size_t cap) {
    char names[64][NAME_MAX + 1];
    const char *ptrs[64];
    size_t n = 0;
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(out, cap, "(cannot open: %s)", strerror(errno));
        return;
    }
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(names[n], sizeof names[n], "%s", e->d_name);
        ptrs[n] = names[n];
        n++;
    }
    closedir(d);
    qsort(ptrs, n, sizeof *ptrs, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (i) strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, ptrs[i], cap - strlen(out) - 1);
    }
}

/* The first difference from the expected host state, written to why;
 * false when there is none. Does not assert, so that teardown can remove
 * the tree before reporting. */
typedef struct check {
    char why[512];
} check;

static bool differs(check *c, const char *what, const char *got, const char *want) {
    if (!strcmp(got, want)) return false;
    snprintf(c->why, sizeof c->why, "%s: \"%s\", want \"%s\"", what, got, want);
    return true;
}

static bool listing_differs(check *c, const char *dir, const char *want) {
    char got[2048];
    listing(dir, got, sizeof got);
    return differs(c, dir, got, want);
}

static bool content_differs(check *c, const char *path, const char *want) {
    char got[256];
    if (!read_file(path, got, sizeof got)) snprintf(got, sizeof got, "(unreadable)");
    return differs(c, path, got, want);
}

static bool state_differs(check *c, fs *f) {
    struct stat st;
    const char *probes[] = {"/etc/" PROBE, "/tmp/" PROBE, hp(f, PROBE), hp(f, "outside_new.txt")};
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
        if (exists(probes[i])) return differs(c, probes[i], "exists", "absent");
    if (stat("/etc", &st) < 0 || memcmp(&st.st_mtim, &f->before.etc_mtime, sizeof st.st_mtim))
        return differs(c, "/etc", "mtime changed", "untouched");
    if (stat("/etc/passwd", &st) < 0 || st.st_nlink != f->before.passwd_nlink)
        return differs(c, "/etc/passwd", "link count changed", "untouched");
    if (stat(hp(f, "ro/data.txt"), &st) < 0 ||
        memcmp(&st.st_mtim, &f->before.ro_data_mtime, sizeof st.st_mtim))
        return differs(c, "ro/data.txt", "mtime changed", "untouched");
    return false;
}

/* Nothing outside rw/ changed: the sandbox boundary held. */
static bool host_changed(fs *f, check *c) {
    return listing_differs(c, f->root, "outside.txt,outside_dir,ro,rw") ||
           listing_differs(c, hp(f, "outside_dir"), "secret.txt") ||
           content_differs(c, hp(f, "outside.txt"), "outside") ||
           content_differs(c, hp(f, "outside_dir/secret.txt"), "secret") ||
           listing_differs(c, hp(f, "ro"), "data.txt,rlink,rsub") ||
           listing_differs(c, hp(f, "ro/rsub"), "") ||
           content_differs(c, hp(f, "ro/data.txt"), "data") || state_differs(c, f);
}

static host_state host_snapshot(fs *f) {
    host_state s;
    struct stat st;
    assert_int_equal(stat("/etc", &st), 0);
    s.etc_mtime = st.st_mtim;
    assert_int_equal(stat("/etc/passwd", &st), 0);
    s.passwd_nlink = st.st_nlink;
    assert_int_equal(stat(hp(f, "ro/data.txt"), &st), 0);
    s.ro_data_mtime = st.st_mtim;
    return s;
}

static void make_tree(fs *f) {
    snprintf(f->root, sizeof f->root, "/tmp/airlock-wasi-fs-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    write_file(hp(f, "outside.txt"), "outside");
    make_dir(hp(f, "outside_dir"));
    write_file(hp(f, "outside_dir/secret.txt"), "secret");
    make_dir(hp(f, "rw"));
    write_file(hp(f, "rw/file.txt"), "hello");
    make_dir(hp(f, "rw/sub"));
    write_file(hp(f, "rw/sub/inner.txt"), "inner");
    make_link("/etc", hp(f, "rw/etc_link"));
    make_link("/etc/passwd", hp(f, "rw/passwd_link"));
    make_link("../outside_dir", hp(f, "rw/escape_link"));
    make_link("../../../../../../../../../etc", hp(f, "rw/deep_escape"));
    make_link("../outside_new.txt", hp(f, "rw/dangle"));
    make_link("loop_b", hp(f, "rw/loop_a"));
    make_link("loop_a", hp(f, "rw/loop_b"));
    make_link("self_loop", hp(f, "rw/self_loop"));
    make_link("sub/inner.txt", hp(f, "rw/inside_link"));
    make_link("sub", hp(f, "rw/dir_link"));
    make_dir(hp(f, "ro"));
    write_file(hp(f, "ro/data.txt"), "data");
    make_dir(hp(f, "ro/rsub"));
    make_link("data.txt", hp(f, "ro/rlink"));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static int fs_setup(void **state) {
    fs *f = calloc(1, sizeof *f);
    assert_non_null(f);
    make_tree(f);
    f->before = host_snapshot(f);
    char rw[PATH_MAX], ro[PATH_MAX];
    snprintf(rw, sizeof rw, "%s/rw", f->root);
    snprintf(ro, sizeof ro, "%s/ro", f->root);
    const wasi_preopen_config pre[] = {
        {.host_path = rw, .guest_path = "/rw", .read_only = false},
        {.host_path = ro, .guest_path = "/ro", .read_only = true},
        {.host_path = "/proc", .guest_path = "/proc", .read_only = true},
    };
    static const char *const argv[] = {"test"};
    f->store = al_store_new(NULL);
    wasi_config cfg = {.argv = argv, .argc = 1, .preopens = pre, .npreopens = 3,
                       .stdout_cap = 4096, .stderr_cap = 4096, .store = f->store};
    al_error err;
    f->ctx = wasi_ctx_new(&cfg, &err);
    if (!f->ctx) fail_msg("wasi_ctx_new: %s", err.message);
    f->module = al_module_new(wasi_fs_wasm, wasi_fs_wasm_len, &err);
    assert_non_null(f->module);
    f->imports = al_imports_new();
    assert_true(wasi_define_imports(f->ctx, f->store, f->imports, &err));
    f->instance = al_instantiate(f->store, f->module, f->imports, &err);
    if (!f->instance) fail_msg("instantiate: %s", err.message);
    *state = f;
    return 0;
}

static int fs_teardown(void **state) {
    fs *f = *state;
    al_imports_free(f->imports);
    al_store_free(f->store);
    al_module_free(f->module);
    wasi_ctx_free(f->ctx);
    check c;
    bool changed = host_changed(f, &c);
    /* FTW_PHYS: never follow etc_link & co. while deleting. */
    int rc = nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    if (changed) fail_msg("the host file system changed: %s", c.why);
    assert_int_equal(rc, 0);
    return 0;
}

/* ---- guest side -------------------------------------------------------------- */

static uint8_t *mem(fs *f) {
    al_extern ext;
    assert_true(al_instance_export(f->instance, "memory", &ext));
    return al_memory_data(ext.of.memory);
}

static al_value I(uint32_t v) { return al_i32((int32_t)v); }
static al_value L(uint64_t v) { return al_i64((int64_t)v); }

#define CALL(f, name, ...) call_(f, name, (al_value[]){__VA_ARGS__}, \
                                 sizeof((al_value[]){__VA_ARGS__}) / sizeof(al_value))
static int32_t call_(fs *f, const char *name, const al_value *args, uint32_t n) {
    al_extern ext;
    if (!al_instance_export(f->instance, name, &ext)) fail_msg("no export %s", name);
    al_value res = al_i32(-1);
    al_error err;
    if (!al_call(f->store, ext.of.func, args, n, &res, 1, &err))
        fail_msg("%s trapped: %s", name, err.message);
    return res.of.i32;
}

static uint32_t get32(fs *f, uint32_t at) { uint32_t v; memcpy(&v, mem(f) + at, 4); return v; }
static uint64_t get64(fs *f, uint32_t at) { uint64_t v; memcpy(&v, mem(f) + at, 8); return v; }
static void put32(fs *f, uint32_t at, uint32_t v) { memcpy(mem(f) + at, &v, 4); }

/* Guest bytes of s at `at` (no NUL); returns the length. */
static uint32_t put_str(fs *f, uint32_t at, const char *s) {
    size_t n = strlen(s);
    memcpy(mem(f) + at, s, n);
    return (uint32_t)n;
}

static int32_t g_open(fs *f, uint32_t dirfd, uint32_t lookup, const char *path, uint32_t oflags,
                      uint64_t base, uint64_t inheriting, uint32_t fdflags, uint32_t *fd) {
    uint32_t n = put_str(f, P1, path);
    put32(f, OUT, UINT32_MAX);
    int32_t e = CALL(f, "path_open", I(dirfd), I(lookup), I(P1), I(n), I(oflags), L(base),
                     L(inheriting), I(fdflags), I(OUT));
    if (fd) *fd = get32(f, OUT);
    return e;
}

/* Open for reading, following symlinks: the plain "open(path, O_RDONLY)". */
static int32_t g_open_r(fs *f, uint32_t dirfd, const char *path, uint32_t *fd) {
    return g_open(f, dirfd, FOLLOW, path, 0, R_READ, R_ALL, 0, fd);
}

static int32_t g_close(fs *f, uint32_t fd) { return CALL(f, "fd_close", I(fd)); }

/* (fd, path, len) functions: mkdir, rmdir, unlink. */
static int32_t g_path(fs *f, const char *fn, uint32_t fd, const char *path) {
    uint32_t n = put_str(f, P1, path);
    return CALL(f, fn, I(fd), I(P1), I(n));
}

static int32_t g_rename(fs *f, uint32_t ofd, const char *old, uint32_t nfd, const char *new_) {
    uint32_t a = put_str(f, P1, old), b = put_str(f, P2, new_);
    return CALL(f, "path_rename", I(ofd), I(P1), I(a), I(nfd), I(P2), I(b));
}

static int32_t g_symlink(fs *f, const char *target, uint32_t fd, const char *path) {
    uint32_t a = put_str(f, P1, target), b = put_str(f, P2, path);
    return CALL(f, "path_symlink", I(P1), I(a), I(fd), I(P2), I(b));
}

static int32_t g_link(fs *f, uint32_t ofd, uint32_t lookup, const char *old, uint32_t nfd,
                      const char *new_) {
    uint32_t a = put_str(f, P1, old), b = put_str(f, P2, new_);
    return CALL(f, "path_link", I(ofd), I(lookup), I(P1), I(a), I(nfd), I(P2), I(b));
}

/* readlink into a guest buffer of buf_len; the bytes come back in out. */
static int32_t g_readlink(fs *f, uint32_t fd, const char *path, uint32_t buf_len, char *out,
                          uint32_t *used) {
    uint32_t n = put_str(f, P1, path);
    memset(mem(f) + OUT, '#', 512);
    int32_t e = CALL(f, "path_readlink", I(fd), I(P1), I(n), I(OUT), I(buf_len), I(OUT + 1024));
    *used = get32(f, OUT + 1024);
    if (e == 0) {
        memcpy(out, mem(f) + OUT, *used);
        out[*used] = '\0';
    }
    return e;
}

typedef struct wstat {
    uint64_t dev, ino, nlink, size, atim, mtim, ctim;
    uint8_t type;
} wstat;

static wstat read_wstat(fs *f, uint32_t at) {
    wstat s = {
        .dev = get64(f, at), .ino = get64(f, at + 8), .type = mem(f)[at + 16],
        .nlink = get64(f, at + 24), .size = get64(f, at + 32), .atim = get64(f, at + 40),
        .mtim = get64(f, at + 48), .ctim = get64(f, at + 56),
    };
    return s;
}

static int32_t g_stat(fs *f, uint32_t fd, uint32_t lookup, const char *path, wstat *out) {
    uint32_t n = put_str(f, P1, path);
    int32_t e = CALL(f, "path_filestat_get", I(fd), I(lookup), I(P1), I(n), I(OUT));
    if (e == 0 && out) *out = read_wstat(f, OUT);
    return e;
}

static int32_t g_fstat(fs *f, uint32_t fd, wstat *out) {
    int32_t e = CALL(f, "fd_filestat_get", I(fd), I(OUT));
    if (e == 0 && out) *out = read_wstat(f, OUT);
    return e;
}

static int32_t g_set_times(fs *f, uint32_t fd, uint32_t lookup, const char *path, uint64_t atim,
                           uint64_t mtim, uint32_t fst) {
    uint32_t n = put_str(f, P1, path);
    return CALL(f, "path_filestat_set_times", I(fd), I(lookup), I(P1), I(n), L(atim), L(mtim),
                I(fst));
}

/* fd_read of up to cap-1 bytes into out (NUL-terminated). */
static int32_t g_read(fs *f, uint32_t fd, char *out, uint32_t cap) {
    put32(f, OUT, OUT + 64);
    put32(f, OUT + 4, cap - 1);
    int32_t e = CALL(f, "fd_read", I(fd), I(OUT), I(1), I(OUT + 32));
    uint32_t n = e == 0 ? get32(f, OUT + 32) : 0;
    memcpy(out, mem(f) + OUT + 64, n);
    out[n] = '\0';
    return e;
}

static int32_t g_write(fs *f, uint32_t fd, const char *data) {
    uint32_t n = put_str(f, OUT + 64, data);
    put32(f, OUT, OUT + 64);
    put32(f, OUT + 4, n);
    return CALL(f, "fd_write", I(fd), I(OUT), I(1), I(OUT + 32));
}

/* fd_fdstat_get: filetype and rights_base. */
static uint64_t g_rights(fs *f, uint32_t fd, uint8_t *type) {
    assert_int_equal(CALL(f, "fd_fdstat_get", I(fd), I(OUT)), WASI_ESUCCESS);
    if (type) *type = mem(f)[OUT];
    return get64(f, OUT + 8);
}

/* Open path and expect its content. */
static void assert_guest_file(fs *f, uint32_t dirfd, const char *path, const char *want) {
    uint32_t fd;
    assert_int_equal(g_open_r(f, dirfd, path, &fd), WASI_ESUCCESS);
    char buf[256];
    assert_int_equal(g_read(f, fd, buf, sizeof buf), WASI_ESUCCESS);
    assert_string_equal(buf, want);
    assert_int_equal(g_close(f, fd), WASI_ESUCCESS);
}

/* ---- fd_prestat_* -------------------------------------------------------------- */

static void test_prestat(void **state) {
    fs *f = *state;
    assert_int_equal(CALL(f, "fd_prestat_get", I(FD_RW), I(OUT)), WASI_ESUCCESS);
    assert_int_equal(mem(f)[OUT], 0); /* tag: dir */
    assert_int_equal(get32(f, OUT + 4), 3);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(FD_RW), I(OUT), I(3)), WASI_ESUCCESS);
    assert_memory_equal(mem(f) + OUT, "/rw", 3);
    assert_int_equal(CALL(f, "fd_prestat_get", I(FD_PROC), I(OUT)), WASI_ESUCCESS);
    assert_int_equal(get32(f, OUT + 4), 5);
    /* a short buffer gets a prefix; a long one exactly the name */
    memset(mem(f) + OUT, '#', 16);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(FD_RO), I(OUT), I(2)), WASI_ESUCCESS);
    assert_memory_equal(mem(f) + OUT, "/r##", 4);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(FD_RO), I(OUT), I(16)), WASI_ESUCCESS);
    assert_memory_equal(mem(f) + OUT, "/ro#", 4);
    /* stdio, free slots and opened (non-preopen) fds are not preopens */
    for (uint32_t fd = 0; fd < 3; fd++)
        assert_int_equal(CALL(f, "fd_prestat_get", I(fd), I(OUT)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_prestat_get", I(6), I(OUT)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_prestat_get", I(UINT32_MAX), I(OUT)), WASI_EBADF);
    uint32_t fd;
    assert_int_equal(g_open_r(f, FD_RW, "file.txt", &fd), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_prestat_get", I(fd), I(OUT)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(fd), I(OUT), I(8)), WASI_EBADF);
    /* guest pointers past memory */
    assert_int_equal(CALL(f, "fd_prestat_get", I(FD_RW), I(65536 - 4)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(FD_RW), I(65535), I(2)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_prestat_dir_name", I(FD_RW), I(UINT32_MAX), I(2)), WASI_EFAULT);
}

/* ---- path_open -------------------------------------------------------------------- */

static void test_open_basic(void **state) {
    fs *f = *state;
    assert_guest_file(f, FD_RW, "file.txt", "hello");
    assert_guest_file(f, FD_RW, "sub/inner.txt", "inner");
    assert_guest_file(f, FD_RW, "./sub/../file.txt", "hello"); /* `..` that stays inside */
    assert_guest_file(f, FD_RW, "sub//inner.txt", "inner");
    assert_guest_file(f, FD_RO, "data.txt", "data");
    uint32_t fd;
    uint8_t type;
    /* a directory, with and without oflags::directory */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "sub", O_DIR_W, R_ALL, R_ALL, 0, &fd), 0);
    g_rights(f, fd, &type);
    assert_int_equal(type, WASI_FILETYPE_DIRECTORY);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open_r(f, FD_RW, "sub", &fd), 0);
    g_rights(f, fd, &type);
    assert_int_equal(type, WASI_FILETYPE_DIRECTORY);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open_r(f, FD_RW, ".", &fd), 0);
    assert_int_equal(g_close(f, fd), 0);
    /* a file where a directory is required, and the reverse */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", O_DIR_W, R_READ, 0, 0, NULL),
                     WASI_ENOTDIR);
    assert_int_equal(g_open_r(f, FD_RW, "file.txt/", NULL), WASI_ENOTDIR);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "sub", 0, R_READ | R_WRITE, 0, 0, NULL),
                     WASI_EISDIR);
    assert_int_equal(g_open_r(f, FD_RW, "missing", NULL), WASI_ENOENT);
    /* the new fd is installed in the lowest free slot and closes */
    assert_int_equal(g_open_r(f, FD_RW, "file.txt", &fd), 0);
    assert_int_equal(fd, 6);
    assert_int_equal(g_close(f, fd), 0);
}

static void test_open_create(void **state) {
    fs *f = *state;
    uint32_t fd;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "new.txt", O_CREAT_W, R_READ | R_WRITE, 0, 0, &fd),
                     0);
    assert_int_equal(g_write(f, fd, "written"), 0);
    assert_int_equal(g_close(f, fd), 0);
    assert_file(hp(f, "rw/new.txt"), "written");
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "new.txt", O_CREAT_W | O_EXCL_W, R_WRITE, 0, 0,
                            NULL), WASI_EEXIST);
    /* EXCL refuses a symlink even when it dangles or points inside */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "inside_link", O_CREAT_W | O_EXCL_W, R_WRITE, 0,
                            0, NULL), WASI_EEXIST);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "new.txt", O_TRUNC_W, R_WRITE, 0, 0, &fd), 0);
    assert_int_equal(g_close(f, fd), 0);
    assert_file(hp(f, "rw/new.txt"), "");
    /* append */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_WRITE, 0, WASI_FDFLAG_APPEND,
                            &fd), 0);
    assert_int_equal(g_write(f, fd, " world"), 0);
    assert_int_equal(g_close(f, fd), 0);
    assert_file(hp(f, "rw/file.txt"), "hello world");
    /* create through an inside symlink to a dir */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "dir_link/made.txt", O_CREAT_W, R_WRITE, 0, 0,
                            &fd), 0);
    assert_int_equal(g_close(f, fd), 0);
    assert_true(exists(hp(f, "rw/sub/made.txt")));
}

static void test_open_flags_invalid(void **state) {
    fs *f = *state;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "x", O_CREAT_W | O_DIR_W, R_ALL, 0, 0, NULL),
                     WASI_EINVAL);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 16, R_READ, 0, 0, NULL), WASI_EINVAL);
    assert_int_equal(g_open(f, FD_RW, 2, "file.txt", 0, R_READ, 0, 0, NULL), WASI_EINVAL);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_READ, 0, 32, NULL), WASI_EINVAL);
    assert_false(exists(hp(f, "rw/x")));
}

/* new rights = requested ∩ the directory's inheriting rights, and a
 * directory fd is a capability for its own subtree only. */
static void test_open_rights(void **state) {
    fs *f = *state;
    uint32_t sub, fd;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "sub", O_DIR_W,
                            WASI_RIGHT_PATH_OPEN | WASI_RIGHT_FD_READDIR, WASI_RIGHT_FD_READ, 0,
                            &sub), 0);
    assert_int_equal(g_rights(f, sub, NULL), WASI_RIGHT_PATH_OPEN | WASI_RIGHT_FD_READDIR);
    assert_int_equal(g_open(f, sub, FOLLOW, "inner.txt", 0, R_READ | R_WRITE, R_ALL, 0, &fd), 0);
    assert_int_equal(g_rights(f, fd, NULL), WASI_RIGHT_FD_READ);
    assert_int_not_equal(g_write(f, fd, "x"), WASI_ESUCCESS);
    assert_int_equal(g_close(f, fd), 0);
    assert_file(hp(f, "rw/sub/inner.txt"), "inner");
    /* no path_create_file right on sub: no O_CREAT */
    assert_int_equal(g_open(f, sub, FOLLOW, "new", O_CREAT_W, R_READ, 0, 0, NULL),
                     WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "path_create_directory", I(sub), I(P1), I(1)), WASI_ENOTCAPABLE);
    /* beneath sub, not merely beneath the preopen */
    assert_int_equal(g_open_r(f, sub, "../file.txt", NULL), WASI_ENOTCAPABLE);
    assert_int_equal(g_close(f, sub), 0);
    /* path_open on a file (with every right) or a stdio fd */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_ALL, R_ALL, 0, &fd), 0);
    assert_int_equal(g_open_r(f, fd, "x", NULL), WASI_ENOTDIR);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open_r(f, 1, "file.txt", NULL), WASI_ENOTCAPABLE);
    assert_int_equal(g_open_r(f, 99, "file.txt", NULL), WASI_EBADF);
}

/* Every way out of the preopen: ENOTCAPABLE, and nothing created outside. */
static void test_open_escapes(void **state) {
    fs *f = *state;
    static const char *const escapes[] = {
        "..", "../", "../outside.txt", "sub/../../outside.txt", "./../rw/file.txt",
        "etc_link", "etc_link/passwd", "etc_link/", "escape_link/secret.txt", "escape_link",
        "deep_escape/passwd", "dir_link/../../outside.txt", "sub/../..", "dangle",
        "passwd_link", "dir_link/../passwd_link",
    };
    for (size_t i = 0; i < sizeof escapes / sizeof *escapes; i++) {
        int32_t e = g_open_r(f, FD_RW, escapes[i], NULL);
        if (e != WASI_ENOTCAPABLE)
            fail_msg("open \"%s\": errno %d, want ENOTCAPABLE", escapes[i], e);
    }
    /* absolute paths, even the guest's own name for the preopen */
    assert_int_equal(g_open_r(f, FD_RW, "/etc/passwd", NULL), WASI_ENOTCAPABLE);
    assert_int_equal(g_open_r(f, FD_RW, "/rw/file.txt", NULL), WASI_ENOTCAPABLE);
    assert_int_equal(g_open_r(f, FD_RW, "/", NULL), WASI_ENOTCAPABLE);
    /* creating through an escape: refused, nothing appears outside */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "etc_link/" PROBE, O_CREAT_W, R_WRITE, 0, 0, NULL),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "../" PROBE, O_CREAT_W, R_WRITE, 0, 0, NULL),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "escape_link/" PROBE, O_CREAT_W, R_WRITE, 0, 0,
                            NULL), WASI_ENOTCAPABLE);
    /* a dangling symlink whose target is outside: O_CREAT would create it */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "dangle", O_CREAT_W, R_WRITE, 0, 0, NULL),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "deep_escape/" PROBE, O_CREAT_W | O_TRUNC_W,
                            R_WRITE, 0, 0, NULL), WASI_ENOTCAPABLE);
    /* from the read-only preopen too */
    assert_int_equal(g_open_r(f, FD_RO, "../rw/file.txt", NULL), WASI_ENOTCAPABLE);
}

static void test_open_loops_and_nofollow(void **state) {
    fs *f = *state;
    assert_int_equal(g_open_r(f, FD_RW, "loop_a", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_RW, "self_loop", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_RW, "loop_b/x", NULL), WASI_ELOOP);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "loop_a", O_CREAT_W, R_WRITE, 0, 0, NULL),
                     WASI_ELOOP);
    /* without symlink_follow the final symlink is not followed: ELOOP,
     * wherever it points (an escaping one is never even looked at) */
    assert_int_equal(g_open(f, FD_RW, 0, "inside_link", 0, R_READ, 0, 0, NULL), WASI_ELOOP);
    assert_int_equal(g_open(f, FD_RW, 0, "etc_link", 0, R_READ, 0, 0, NULL), WASI_ELOOP);
    assert_int_equal(g_open(f, FD_RW, 0, "loop_a", 0, R_READ, 0, 0, NULL), WASI_ELOOP);
    /* ...but intermediate symlinks are always followed (beneath) */
    uint32_t fd;
    assert_int_equal(g_open(f, FD_RW, 0, "dir_link/inner.txt", 0, R_READ, 0, 0, &fd), 0);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open(f, FD_RW, 0, "etc_link/passwd", 0, R_READ, 0, 0, NULL),
                     WASI_ENOTCAPABLE);
    /* following an inside symlink reads its target */
    assert_guest_file(f, FD_RW, "inside_link", "inner");
}

static void test_path_validation(void **state) {
    fs *f = *state;
    uint32_t out = OUT;
    /* empty */
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(P1), I(0), I(0), L(R_READ),
                          L(0), I(0), I(out)), WASI_ENOENT);
    /* an embedded NUL: "file.txt\0../../x" must not become "file.txt" */
    memcpy(mem(f) + P1, "file.txt\0/etc", 13);
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(P1), I(13), I(0), L(R_READ),
                          L(0), I(0), I(out)), WASI_EINVAL);
    assert_int_equal(CALL(f, "path_create_directory", I(FD_RW), I(P1), I(13)), WASI_EINVAL);
    /* PATH_MAX (4096 with its NUL) and a 300-byte component */
    memset(mem(f) + BIG, 'a', 5000);
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(BIG), I(4096), I(0),
                          L(R_READ), L(0), I(0), I(out)), WASI_ENAMETOOLONG);
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(BIG), I(300), I(0),
                          L(R_READ), L(0), I(0), I(out)), WASI_ENAMETOOLONG);
    /* out of guest memory, and ptr + len wrapping 32 bits */
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(65530), I(8), I(0), L(R_READ),
                          L(0), I(0), I(out)), WASI_EFAULT);
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(0xFFFFFFF0u), I(0x20), I(0),
                          L(R_READ), L(0), I(0), I(out)), WASI_EFAULT);
    assert_int_equal(CALL(f, "path_unlink_file", I(FD_RW), I(UINT32_MAX), I(UINT32_MAX)),
                     WASI_EFAULT);
    /* a bad out-pointer is caught before anything is created */
    uint32_t n = put_str(f, P1, "created.txt");
    assert_int_equal(CALL(f, "path_open", I(FD_RW), I(FOLLOW), I(P1), I(n), I(O_CREAT_W),
                          L(R_WRITE), L(0), I(0), I(65534)), WASI_EFAULT);
    assert_false(exists(hp(f, "rw/created.txt")));
}

/* Magic links (/proc/self/root, /proc/self/fd/N, ...) jump anywhere; with a
 * preopen that contains /proc they are ELOOP (RESOLVE_NO_MAGICLINKS). */
static void test_magic_links(void **state) {
    fs *f = *state;
    assert_int_equal(g_open_r(f, FD_PROC, "self/root/etc/passwd", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_PROC, "self/root", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_PROC, "self/cwd", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_PROC, "self/fd/0", NULL), WASI_ELOOP);
    assert_int_equal(g_open_r(f, FD_PROC, "thread-self/root/etc", NULL), WASI_ELOOP);
    assert_int_equal(g_stat(f, FD_PROC, FOLLOW, "self/exe", NULL), WASI_ELOOP);
    /* ordinary files of the preopen still work ("self" is a plain symlink) */
    uint32_t fd;
    assert_int_equal(g_open_r(f, FD_PROC, "self/status", &fd), WASI_ESUCCESS);
    assert_int_equal(g_close(f, fd), 0);
    /* a magic link is a symlink to stat without following */
    wstat st;
    assert_int_equal(g_stat(f, FD_PROC, 0, "self/root", &st), WASI_ESUCCESS);
    assert_int_equal(st.type, WASI_FILETYPE_SYMBOLIC_LINK);
}

/* A host process swapping a symlink in and out while the guest resolves
 * through it: openat2 resolves atomically, so the guest either opens the
 * inside file or gets ENOTCAPABLE, never /etc/passwd. */
typedef struct swapper {
    const char *a, *b;
    atomic_bool stop;
    long swaps;
} swapper;

static void *swap_loop(void *arg) {
    swapper *s = arg;
    while (!atomic_load(&s->stop)) {
        if (renameat2(AT_FDCWD, s->a, AT_FDCWD, s->b, RENAME_EXCHANGE) == 0) s->swaps++;
    }
    return NULL;
}

static void test_symlink_swap_race(void **state) {
    fs *f = *state;
    make_dir(hp(f, "rw/race"));
    write_file(hp(f, "rw/race/passwd"), "inside");
    make_link("/etc", hp(f, "rw/race_alt"));
    swapper s = {.a = hp(f, "rw/race"), .b = hp(f, "rw/race_alt")};
    atomic_init(&s.stop, false);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, swap_loop, &s), 0);
    int opened = 0, refused = 0;
    for (int i = 0; i < 3000; i++) {
        uint32_t fd;
        int32_t e = g_open_r(f, FD_RW, "race/passwd", &fd);
        if (e == WASI_ESUCCESS) {
            char buf[64];
            assert_int_equal(g_read(f, fd, buf, sizeof buf), 0);
            assert_string_equal(buf, "inside");
            assert_int_equal(g_close(f, fd), 0);
            opened++;
        } else {
            assert_int_equal(e, WASI_ENOTCAPABLE);
            refused++;
        }
    }
    atomic_store(&s.stop, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(opened + refused == 3000);
    assert_true(s.swaps > 0);
}

/* The host fd behind a guest fd (white box, through wasi_impl.h). */
static int host_fd_of(fs *f, uint32_t fd) {
    assert_true(fd < f->ctx->nfds);
    return f->ctx->fds[fd].host_fd;
}

/* How the host file is opened: write access only for fd_write/fd_allocate,
 * close-on-exec always, and never blocking in open(2) on a FIFO. */
static void test_open_host_mode(void **state) {
    fs *f = *state;
    uint32_t fd;
    assert_int_equal(chmod(hp(f, "rw/file.txt"), 0444), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_GO_RDONLY, R_ALL, 0, &fd), 0);
    int fl = fcntl(host_fd_of(f, fd), F_GETFL);
    assert_int_equal(fl & O_ACCMODE, O_RDONLY);
    assert_int_equal(fl & O_NONBLOCK, 0);
    assert_int_equal(fcntl(host_fd_of(f, fd), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(chmod(hp(f, "rw/file.txt"), 0644), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_READ | WASI_RIGHT_FD_WRITE, 0, 0,
                            &fd), 0);
    assert_int_equal(fcntl(host_fd_of(f, fd), F_GETFL) & O_ACCMODE, O_RDWR);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, WASI_RIGHT_FD_WRITE, 0, 0, &fd), 0);
    assert_int_equal(fcntl(host_fd_of(f, fd), F_GETFL) & O_ACCMODE, O_WRONLY);
    assert_int_equal(g_close(f, fd), 0);
    /* a FIFO planted in the tree: open(2) would block the host thread until
     * a writer appears; here it returns at once, blocking mode restored */
    assert_int_equal(mkfifo(hp(f, "rw/fifo"), 0644), 0);
    assert_int_equal(g_open_r(f, FD_RW, "fifo", &fd), 0);
    assert_int_equal(fcntl(host_fd_of(f, fd), F_GETFL) & O_NONBLOCK, 0);
    wstat w;
    assert_int_equal(g_fstat(f, fd, &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_SOCKET_STREAM); /* as uvwasi reports a FIFO */
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "fifo", 0, R_READ, 0, WASI_FDFLAG_NONBLOCK, &fd), 0);
    assert_int_equal(fcntl(host_fd_of(f, fd), F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    assert_int_equal(g_close(f, fd), 0);
    /* write-only with no reader: ENXIO instead of blocking */
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "fifo", 0, WASI_RIGHT_FD_WRITE, 0, 0, NULL),
                     WASI_ENXIO);
}

/* A kernel without openat2 (< 5.6, or a seccomp policy that hides it): no
 * fallback resolver, every path call fails closed with ENOTSUP. Simulated
 * in a child whose seccomp filter answers openat2 with ENOSYS. */
static int without_openat2(fs *f) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof *code, .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return 2;
    int bad = 0;
    bad |= g_open_r(f, FD_RW, "file.txt", NULL) != WASI_ENOTSUP;
    bad |= g_open(f, FD_RW, FOLLOW, "x", O_CREAT_W, R_WRITE, 0, 0, NULL) != WASI_ENOTSUP;
    bad |= g_path(f, "path_create_directory", FD_RW, "x") != WASI_ENOTSUP;
    bad |= g_path(f, "path_unlink_file", FD_RW, "file.txt") != WASI_ENOTSUP;
    bad |= g_stat(f, FD_RW, 0, "file.txt", NULL) != WASI_ENOTSUP;
    bad |= g_symlink(f, "file.txt", FD_RW, "x") != WASI_ENOTSUP;
    return bad;
}

static void test_no_openat2_fails_closed(void **state) {
    fs *f = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(without_openat2(f)); /* _exit: no cmocka, no LSan in the child */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(exists(hp(f, "rw/x")));
    assert_true(exists(hp(f, "rw/file.txt")));
}

/* ---- read-only preopens ---------------------------------------------------------- */

static void test_read_only(void **state) {
    fs *f = *state;
    uint32_t fd, dir;
    /* reading works; the fd carries no mutating right */
    assert_guest_file(f, FD_RO, "data.txt", "data");
    assert_guest_file(f, FD_RO, "rlink", "data");
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", 0, R_ALL & ~R_WRITE, R_ALL, 0, &fd), 0);
    uint64_t rights = g_rights(f, fd, NULL);
    assert_int_equal(rights & (R_WRITE | WASI_RIGHT_FD_FILESTAT_SET_TIMES), 0);
    assert_int_not_equal(g_write(f, fd, "x"), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(fd), L(0)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_allocate", I(fd), L(0), L(100)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_filestat_set_times", I(fd), L(0), L(0), I(FST_MTIM_NOW)),
                     WASI_EROFS);
    assert_int_equal(CALL(f, "fd_advise", I(fd), L(0), L(0), I(1)), WASI_ESUCCESS);
    assert_int_equal(CALL(f, "fd_sync", I(fd)), WASI_ESUCCESS);
    assert_int_equal(g_close(f, fd), 0);
    /* Go's O_RDONLY rights: not a write, the mutating ones are dropped */
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", 0, R_GO_RDONLY, R_ALL, 0, &fd), 0);
    assert_int_equal(g_rights(f, fd, NULL) & WASI_RIGHT_FD_FILESTAT_SET_SIZE, 0);
    assert_int_equal(g_close(f, fd), 0);
    /* opens that would write */
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", 0, R_READ | WASI_RIGHT_FD_WRITE, 0, 0,
                            NULL), WASI_EROFS);
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", 0, WASI_RIGHT_FD_ALLOCATE, 0, 0, NULL),
                     WASI_EROFS);
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", O_TRUNC_W, R_READ, 0, 0, NULL),
                     WASI_EROFS);
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "data.txt", 0, R_READ, 0, WASI_FDFLAG_APPEND,
                            NULL), WASI_EROFS);
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "new", O_CREAT_W, R_READ, 0, 0, NULL), WASI_EROFS);
    /* every path mutation */
    assert_int_equal(g_path(f, "path_create_directory", FD_RO, "newdir"), WASI_EROFS);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RO, "rsub"), WASI_EROFS);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RO, "data.txt"), WASI_EROFS);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RO, "rlink"), WASI_EROFS);
    assert_int_equal(g_rename(f, FD_RO, "data.txt", FD_RO, "moved"), WASI_EROFS);
    assert_int_equal(g_rename(f, FD_RO, "data.txt", FD_RW, "stolen"), WASI_EROFS);
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RO, "planted"), WASI_EROFS);
    assert_int_equal(g_symlink(f, "data.txt", FD_RO, "l2"), WASI_EROFS);
    assert_int_equal(g_link(f, FD_RO, 0, "data.txt", FD_RW, "hard"), WASI_EROFS);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RO, "hard"), WASI_EROFS);
    assert_int_equal(g_set_times(f, FD_RO, FOLLOW, "data.txt", 0, 0, FST_ATIM | FST_MTIM),
                     WASI_EROFS);
    assert_int_equal(g_set_times(f, FD_RO, 0, "rlink", 0, 0, FST_MTIM_NOW), WASI_EROFS);
    /* a directory opened beneath it is read-only too, whatever it asks for */
    assert_int_equal(g_open(f, FD_RO, FOLLOW, "rsub", O_DIR_W, R_ALL & ~R_WRITE, R_ALL, 0, &dir),
                     0);
    assert_int_equal(g_rights(f, dir, NULL) & WASI_RIGHT_PATH_CREATE_DIRECTORY, 0);
    assert_int_equal(g_path(f, "path_create_directory", dir, "x"), WASI_EROFS);
    assert_int_equal(g_open(f, dir, FOLLOW, "x", O_CREAT_W, R_READ, 0, 0, NULL), WASI_EROFS);
    assert_int_equal(g_symlink(f, "x", dir, "y"), WASI_EROFS);
    assert_int_equal(g_close(f, dir), 0);
    assert_false(exists(hp(f, "rw/stolen")));
    assert_false(exists(hp(f, "rw/hard")));
    /* reads through the read-only tree still work */
    wstat st;
    assert_int_equal(g_stat(f, FD_RO, 0, "rlink", &st), 0);
    assert_int_equal(st.type, WASI_FILETYPE_SYMBOLIC_LINK);
    char buf[64];
    uint32_t used;
    assert_int_equal(g_readlink(f, FD_RO, "rlink", 64, buf, &used), 0);
    assert_string_equal(buf, "data.txt");
}

/* ---- mkdir, rmdir, unlink, rename -------------------------------------------------- */

static void test_mkdir_rmdir_unlink(void **state) {
    fs *f = *state;
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "newdir"), 0);
    assert_true(exists(hp(f, "rw/newdir")));
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "newdir"), WASI_EEXIST);
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "dir_link/made/"), 0);
    assert_true(exists(hp(f, "rw/sub/made")));
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "missing/x"), WASI_ENOENT);
    /* escapes (node 20 creates /etc/<name> for "etc_link/<name>") */
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "etc_link/" PROBE),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "../" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "/tmp/" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_create_directory", FD_RW, "deep_escape/" PROBE),
                     WASI_ENOTCAPABLE);
    /* rmdir */
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "newdir/"), 0);
    assert_false(exists(hp(f, "rw/newdir")));
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "."), WASI_EINVAL);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "sub/.."), WASI_ENOTEMPTY); /* rmdir(2): ".." as the final component */
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, ".."), WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "../outside_dir"),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "file.txt"), WASI_ENOTDIR);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "dir_link"), WASI_ENOTDIR);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "sub"), WASI_ENOTEMPTY);
    assert_int_equal(g_path(f, "path_remove_directory", FD_RW, "escape_link/"), WASI_ENOTDIR);
    /* unlink */
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "sub"), WASI_EISDIR);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "sub/"), WASI_EISDIR);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "file.txt/"), WASI_ENOTDIR);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "dir_link/"), WASI_ENOTDIR);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "etc_link/passwd"), WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "escape_link/secret.txt"),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "../outside.txt"), WASI_ENOTCAPABLE);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "."), WASI_EISDIR);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "dir_link/inner.txt"), 0);
    assert_false(exists(hp(f, "rw/sub/inner.txt")));
    /* unlinking a symlink removes the link, never its target */
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "etc_link"), 0);
    assert_false(exists(hp(f, "rw/etc_link")));
    assert_true(exists("/etc/passwd"));
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "escape_link"), 0);
    assert_int_equal(g_path(f, "path_unlink_file", FD_RW, "missing"), WASI_ENOENT);
}

static void test_rename(void **state) {
    fs *f = *state;
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RW, "sub/moved.txt"), 0);
    assert_file(hp(f, "rw/sub/moved.txt"), "hello");
    assert_int_equal(g_rename(f, FD_RW, "sub/moved.txt", FD_RW, "dir_link/../file.txt"), 0);
    assert_file(hp(f, "rw/file.txt"), "hello");
    /* a symlink is renamed as itself */
    assert_int_equal(g_rename(f, FD_RW, "etc_link", FD_RW, "etc_link2"), 0);
    struct stat st;
    assert_int_equal(lstat(hp(f, "rw/etc_link2"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* out of, into and through escapes */
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RW, "../" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RW, "etc_link2/" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_rename(f, FD_RW, "../outside.txt", FD_RW, "got.txt"), WASI_ENOTCAPABLE);
    assert_int_equal(g_rename(f, FD_RW, "escape_link/secret.txt", FD_RW, "got.txt"),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_rename(f, FD_RW, "etc_link2/passwd", FD_RW, "got.txt"), WASI_ENOTCAPABLE);
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RW, "/tmp/" PROBE), WASI_ENOTCAPABLE);
    /* trailing slashes: the source must be a directory */
    assert_int_equal(g_rename(f, FD_RW, "file.txt/", FD_RW, "x"), WASI_ENOTDIR);
    assert_int_equal(g_rename(f, FD_RW, "file.txt", FD_RW, "x/"), WASI_ENOTDIR);
    assert_int_equal(g_rename(f, FD_RW, "dir_link/", FD_RW, "x"), WASI_ENOTDIR);
    assert_int_equal(g_rename(f, FD_RW, "sub/", FD_RW, "sub2/"), 0);
    assert_true(exists(hp(f, "rw/sub2/inner.txt")));
    /* the preopen root itself cannot be renamed away */
    assert_int_equal(g_rename(f, FD_RW, ".", FD_RW, "x"), WASI_EBUSY);
    assert_int_equal(g_rename(f, FD_RW, "missing", FD_RW, "x"), WASI_ENOENT);
    assert_int_equal(g_rename(f, 99, "file.txt", FD_RW, "x"), WASI_EBADF);
    assert_int_equal(g_rename(f, FD_RW, "file.txt", 99, "x"), WASI_EBADF);
}

/* ---- symlink, readlink, link ---------------------------------------------------- */

static void test_symlink(void **state) {
    fs *f = *state;
    assert_int_equal(g_symlink(f, "sub/inner.txt", FD_RW, "rel_ok"), 0);
    assert_guest_file(f, FD_RW, "rel_ok", "inner");
    /* "../" from a subdirectory that stays inside is fine (node refuses it) */
    assert_int_equal(g_symlink(f, "../file.txt", FD_RW, "sub/up"), 0);
    assert_guest_file(f, FD_RW, "sub/up", "hello");
    assert_int_equal(g_symlink(f, "a/../b/./c", FD_RW, "odd"), 0);
    /* targets that are absolute or climb out of the fd: refused, like node */
    assert_int_equal(g_symlink(f, "/etc/passwd", FD_RW, "abs"), WASI_EPERM);
    assert_int_equal(g_symlink(f, "/", FD_RW, "abs"), WASI_EPERM);
    assert_int_equal(g_symlink(f, "../outside.txt", FD_RW, "esc"), WASI_ENOTCAPABLE);
    assert_int_equal(g_symlink(f, "..", FD_RW, "esc"), WASI_ENOTCAPABLE);
    assert_int_equal(g_symlink(f, "sub/../../x", FD_RW, "esc"), WASI_ENOTCAPABLE);
    assert_int_equal(g_symlink(f, "../../x", FD_RW, "sub/esc"), WASI_ENOTCAPABLE);
    assert_false(exists(hp(f, "rw/abs")));
    assert_false(exists(hp(f, "rw/esc")));
    assert_false(exists(hp(f, "rw/sub/esc")));
    /* the link's own path must be beneath */
    assert_int_equal(g_symlink(f, "x", FD_RW, "../" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_symlink(f, "x", FD_RW, "etc_link/" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_symlink(f, "x", FD_RW, "/tmp/" PROBE), WASI_ENOTCAPABLE);
    /* existing names, trailing slashes, bad target bytes */
    assert_int_equal(g_symlink(f, "x", FD_RW, "file.txt"), WASI_EEXIST);
    assert_int_equal(g_symlink(f, "x", FD_RW, "etc_link"), WASI_EEXIST);
    assert_int_equal(g_symlink(f, "x", FD_RW, "new/"), WASI_ENOENT);
    assert_int_equal(g_symlink(f, "x", FD_RW, "sub/"), WASI_EEXIST);
    assert_int_equal(g_symlink(f, "", FD_RW, "empty"), WASI_ENOENT);
    memcpy(mem(f) + P1, "ok\0/etc", 7);
    uint32_t n = put_str(f, P2, "nul");
    assert_int_equal(CALL(f, "path_symlink", I(P1), I(7), I(FD_RW), I(P2), I(n)), WASI_EINVAL);
    assert_false(exists(hp(f, "rw/nul")));
}

static void test_readlink(void **state) {
    fs *f = *state;
    char buf[PATH_MAX];
    uint32_t used;
    assert_int_equal(g_readlink(f, FD_RW, "inside_link", 256, buf, &used), 0);
    assert_string_equal(buf, "sub/inner.txt");
    assert_int_equal(used, 13);
    /* a short buffer gets the prefix (bufused == buf_len: "maybe cut") */
    assert_int_equal(g_readlink(f, FD_RW, "inside_link", 4, buf, &used), 0);
    assert_int_equal(used, 4);
    assert_string_equal(buf, "sub/");
    assert_int_equal(mem(f)[OUT + 4], '#');
    assert_int_equal(g_readlink(f, FD_RW, "inside_link", 0, buf, &used), 0);
    assert_int_equal(used, 0);
    /* an escaping link's contents are data, readable; following it is not */
    assert_int_equal(g_readlink(f, FD_RW, "etc_link", 256, buf, &used), 0);
    assert_string_equal(buf, "/etc");
    assert_int_equal(g_readlink(f, FD_RW, "dir_link/../escape_link", 256, buf, &used), 0);
    assert_string_equal(buf, "../outside_dir");
    assert_int_equal(g_readlink(f, FD_RW, "etc_link/", 256, buf, &used), WASI_ENOTCAPABLE);
    assert_int_equal(g_readlink(f, FD_RW, "etc_link/X11", 256, buf, &used), WASI_ENOTCAPABLE);
    assert_int_equal(g_readlink(f, FD_RW, "../rw/inside_link", 256, buf, &used),
                     WASI_ENOTCAPABLE);
    /* not a symlink */
    assert_int_equal(g_readlink(f, FD_RW, "file.txt", 256, buf, &used), WASI_EINVAL);
    assert_int_equal(g_readlink(f, FD_RW, "sub", 256, buf, &used), WASI_EINVAL);
    assert_int_equal(g_readlink(f, FD_RW, "dir_link/", 256, buf, &used), WASI_EINVAL);
    assert_int_equal(g_readlink(f, FD_RW, "missing", 256, buf, &used), WASI_ENOENT);
    /* the guest buffer must be inside memory */
    uint32_t n = put_str(f, P1, "inside_link");
    assert_int_equal(CALL(f, "path_readlink", I(FD_RW), I(P1), I(n), I(65530), I(16), I(OUT)),
                     WASI_EFAULT);
    assert_int_equal(CALL(f, "path_readlink", I(FD_RW), I(P1), I(n), I(OUT), I(16), I(65534)),
                     WASI_EFAULT);
}

static void test_link(void **state) {
    fs *f = *state;
    struct stat a, b;
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RW, "hard.txt"), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &a), 0);
    assert_int_equal(stat(hp(f, "rw/hard.txt"), &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);
    assert_int_equal(a.st_nlink, 2);
    /* without symlink_follow the link itself is linked */
    assert_int_equal(g_link(f, FD_RW, 0, "inside_link", FD_RW, "hl_nofollow"), 0);
    assert_int_equal(lstat(hp(f, "rw/hl_nofollow"), &b), 0);
    assert_true(S_ISLNK(b.st_mode));
    /* with it, the target (resolved beneath) */
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "inside_link", FD_RW, "hl_follow"), 0);
    assert_int_equal(lstat(hp(f, "rw/hl_follow"), &b), 0);
    assert_int_equal(stat(hp(f, "rw/sub/inner.txt"), &a), 0);
    assert_true(S_ISREG(b.st_mode));
    assert_int_equal(a.st_ino, b.st_ino);
    /* a hard link to a host file through an escaping symlink (node 20 makes
     * one to /etc/passwd): refused, whether followed or not */
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "etc_link/passwd", FD_RW, "pw"), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "passwd_link", FD_RW, "pw"), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, 0, "etc_link/passwd", FD_RW, "pw"), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "escape_link/secret.txt", FD_RW, "s"),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "dangle", FD_RW, "d"), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, 0, "../outside.txt", FD_RW, "o"), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RW, "../" PROBE), WASI_ENOTCAPABLE);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RW, "etc_link/" PROBE), WASI_ENOTCAPABLE);
    assert_false(exists(hp(f, "rw/pw")));
    assert_false(exists(hp(f, "rw/s")));
    /* linking the escaping symlink itself is harmless: still a symlink */
    assert_int_equal(g_link(f, FD_RW, 0, "passwd_link", FD_RW, "pw_link2"), 0);
    assert_int_equal(lstat(hp(f, "rw/pw_link2"), &b), 0);
    assert_true(S_ISLNK(b.st_mode));
    /* directories, existing names, loops, bad flags */
    assert_int_equal(g_link(f, FD_RW, 0, "sub", FD_RW, "sub_hard"), WASI_EPERM);
    assert_int_equal(g_link(f, FD_RW, 0, "sub/", FD_RW, "sub_hard"), WASI_EPERM);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt/", FD_RW, "x"), WASI_ENOTDIR);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RW, "hard.txt"), WASI_EEXIST);
    assert_int_equal(g_link(f, FD_RW, 0, "file.txt", FD_RW, "new/"), WASI_ENOENT);
    assert_int_equal(g_link(f, FD_RW, FOLLOW, "loop_a", FD_RW, "x"), WASI_ELOOP);
    assert_int_equal(g_link(f, FD_RW, 2, "file.txt", FD_RW, "x"), WASI_EINVAL);
}

/* ---- filestat, times, size ---------------------------------------------------- */

static void test_filestat(void **state) {
    fs *f = *state;
    wstat w;
    struct stat st;
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "file.txt", &w), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(w.type, WASI_FILETYPE_REGULAR_FILE);
    assert_int_equal(w.size, 5);
    assert_int_equal(w.nlink, 1);
    assert_int_equal(w.ino, st.st_ino);
    assert_int_equal(w.dev, st.st_dev);
    assert_int_equal(w.mtim, (uint64_t)st.st_mtim.tv_sec * 1000000000u + st.st_mtim.tv_nsec);
    assert_int_equal(mem(f)[OUT + 17], 0); /* padding zeroed */
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "sub", &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_DIRECTORY);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "inside_link", &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_REGULAR_FILE);
    assert_int_equal(w.size, 5);
    assert_int_equal(g_stat(f, FD_RW, 0, "inside_link", &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_SYMBOLIC_LINK);
    assert_int_equal(w.size, 13);
    /* stat of an escaping link: the link itself yes, its target no */
    assert_int_equal(g_stat(f, FD_RW, 0, "etc_link", &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_SYMBOLIC_LINK);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "etc_link", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "passwd_link", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, 0, "etc_link/", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, 0, "etc_link/passwd", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "..", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "/etc", &w), WASI_ENOTCAPABLE);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "self_loop", &w), WASI_ELOOP);
    assert_int_equal(g_stat(f, FD_RW, 0, "self_loop", &w), 0);
    assert_int_equal(g_stat(f, FD_RW, FOLLOW, "missing", &w), WASI_ENOENT);
    uint32_t n = put_str(f, P1, "file.txt");
    assert_int_equal(CALL(f, "path_filestat_get", I(FD_RW), I(FOLLOW), I(P1), I(n), I(65500)),
                     WASI_EFAULT);
    /* fd_filestat_get: preopen, file, stdio */
    assert_int_equal(g_fstat(f, FD_RW, &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_DIRECTORY);
    uint32_t fd;
    assert_int_equal(g_open_r(f, FD_RW, "sub/inner.txt", &fd), 0);
    assert_int_equal(g_fstat(f, fd, &w), 0);
    assert_int_equal(w.type, WASI_FILETYPE_REGULAR_FILE);
    assert_int_equal(w.size, 5);
    assert_int_equal(g_close(f, fd), 0);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(g_fstat(f, i, &w), 0);
        assert_int_equal(w.type, WASI_FILETYPE_SOCKET_STREAM); /* as fd_fdstat_get says */
    }
    assert_int_equal(g_fstat(f, 77, &w), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_filestat_get", I(FD_RW), I(65530)), WASI_EFAULT);
}

static void test_set_times(void **state) {
    fs *f = *state;
    struct stat st;
    const uint64_t atim = 1000000000ull * 1000000 + 123, mtim = 1000000000ull * 2000000 + 456;
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "file.txt", atim, mtim, FST_ATIM | FST_MTIM),
                     0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(st.st_atim.tv_sec, 1000000);
    assert_int_equal(st.st_atim.tv_nsec, 123);
    assert_int_equal(st.st_mtim.tv_sec, 2000000);
    assert_int_equal(st.st_mtim.tv_nsec, 456);
    /* only mtime: atime stays */
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "file.txt", 0, 5000000000ull, FST_MTIM), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(st.st_atim.tv_sec, 1000000);
    assert_int_equal(st.st_mtim.tv_sec, 5);
    /* contradictory or unknown flags */
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "file.txt", 0, 0, FST_ATIM | FST_ATIM_NOW),
                     WASI_EINVAL);
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "file.txt", 0, 0, FST_MTIM | FST_MTIM_NOW),
                     WASI_EINVAL);
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "file.txt", 0, 0, 16), WASI_EINVAL);
    /* without symlink_follow, the link's own times */
    struct stat target_before;
    assert_int_equal(stat(hp(f, "rw/sub/inner.txt"), &target_before), 0);
    assert_int_equal(g_set_times(f, FD_RW, 0, "inside_link", 0, 7000000000ull, FST_MTIM), 0);
    assert_int_equal(lstat(hp(f, "rw/inside_link"), &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, 7);
    assert_int_equal(stat(hp(f, "rw/sub/inner.txt"), &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, target_before.st_mtim.tv_sec);
    /* never through an escape (teardown checks /etc's mtime) */
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "etc_link", 0, 0, FST_MTIM), WASI_ENOTCAPABLE);
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "passwd_link", 0, 0, FST_MTIM),
                     WASI_ENOTCAPABLE);
    assert_int_equal(g_set_times(f, FD_RW, 0, "etc_link/", 0, 0, FST_MTIM), WASI_ENOTCAPABLE);
    assert_int_equal(g_set_times(f, FD_RW, FOLLOW, "escape_link/secret.txt", 0, 0, FST_MTIM),
                     WASI_ENOTCAPABLE);
    /* fd_filestat_set_times */
    uint32_t fd;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_ALL, 0, 0, &fd), 0);
    assert_int_equal(CALL(f, "fd_filestat_set_times", I(fd), L(0), L(9000000000ull),
                          I(FST_MTIM)), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, 9);
    assert_int_equal(CALL(f, "fd_filestat_set_times", I(fd), L(0), L(0), I(FST_ATIM_NOW |
                                                                            FST_ATIM)),
                     WASI_EINVAL);
    assert_int_equal(g_close(f, fd), 0);
}

static void test_size_allocate_advise_sync(void **state) {
    fs *f = *state;
    uint32_t fd;
    struct stat st;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_ALL, 0, 0, &fd), 0);
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(fd), L(2)), 0);
    assert_file(hp(f, "rw/file.txt"), "he");
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(fd), L(4096)), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(st.st_size, 4096);
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(fd), L(UINT64_MAX)), WASI_EFBIG);
    assert_int_equal(CALL(f, "fd_allocate", I(fd), L(0), L(8192)), 0);
    assert_int_equal(stat(hp(f, "rw/file.txt"), &st), 0);
    assert_int_equal(st.st_size, 8192);
    assert_int_equal(CALL(f, "fd_allocate", I(fd), L(UINT64_MAX), L(1)), WASI_EINVAL);
    assert_int_equal(CALL(f, "fd_allocate", I(fd), L(INT64_MAX), L(INT64_MAX)), WASI_EFBIG);
    for (uint32_t advice = 0; advice <= 5; advice++)
        assert_int_equal(CALL(f, "fd_advise", I(fd), L(0), L(100), I(advice)), 0);
    assert_int_equal(CALL(f, "fd_advise", I(fd), L(0), L(100), I(6)), WASI_EINVAL);
    assert_int_equal(CALL(f, "fd_advise", I(fd), L(UINT64_MAX), L(1), I(0)), WASI_EINVAL);
    assert_int_equal(CALL(f, "fd_sync", I(fd)), 0);
    assert_int_equal(CALL(f, "fd_datasync", I(fd)), 0);
    assert_int_equal(g_close(f, fd), 0);
    /* without the rights */
    assert_int_equal(g_open_r(f, FD_RW, "file.txt", &fd), 0);
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(fd), L(0)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_allocate", I(fd), L(0), L(1)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_sync", I(fd)), WASI_ENOTCAPABLE);
    assert_int_equal(g_close(f, fd), 0);
    /* stdio pipes (wasi.c gives them none of these rights) and bad fds */
    assert_int_equal(CALL(f, "fd_filestat_set_size", I(1), L(0)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_sync", I(1)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_advise", I(0), L(0), L(0), I(0)), WASI_ENOTCAPABLE);
    assert_int_equal(CALL(f, "fd_sync", I(40)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_datasync", I(40)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_allocate", I(40), L(0), L(1)), WASI_EBADF);
    assert_int_equal(CALL(f, "fd_advise", I(40), L(0), L(0), I(0)), WASI_EBADF);
    /* a directory can be synced */
    assert_int_equal(CALL(f, "fd_sync", I(FD_RW)), 0);
}

/* ---- fd_readdir --------------------------------------------------------------------- */

typedef struct dirent_w {
    uint64_t next, ino;
    uint32_t namlen;
    uint8_t type;
    char name[NAME_MAX + 1];
} dirent_w;

/* Read the whole directory the way wasi-libc does, with a guest buffer of
 * buf_len bytes: parse the complete entries, resume from the last one's
 * d_next, stop at a short read. Returns the entry count. */
static size_t read_dir(fs *f, uint32_t fd, uint32_t buf_len, dirent_w *out, size_t cap) {
    uint64_t cookie = 0;
    size_t n = 0;
    for (int rounds = 0; rounds < 10000; rounds++) {
        assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(buf_len), L(cookie), I(OUT)), 0);
        uint32_t used = get32(f, OUT), off = 0, complete = 0;
        assert_true(used <= buf_len);
        while (off + 24 <= used) {
            dirent_w d = {.next = get64(f, RD + off), .ino = get64(f, RD + off + 8),
                          .namlen = get32(f, RD + off + 16), .type = mem(f)[RD + off + 20]};
            assert_true(d.namlen <= NAME_MAX);
            if (off + 24 + d.namlen > used) break; /* cut: read again from cookie */
            assert_int_equal(mem(f)[RD + off + 21] | mem(f)[RD + off + 22] | mem(f)[RD + off + 23],
                             0);
            memcpy(d.name, mem(f) + RD + off + 24, d.namlen);
            d.name[d.namlen] = '\0';
            assert_true(n < cap);
            assert_int_equal(d.next, cookie + 1); /* entry indexes, also after a resume */
            out[n++] = d;
            cookie = d.next;
            off += 24 + d.namlen;
            complete++;
        }
        if (used < buf_len) return n;
        if (complete == 0) fail_msg("a %u-byte buffer holds no whole entry", buf_len);
    }
    fail_msg("readdir did not end");
    return 0;
}

static const dirent_w *find_entry(const dirent_w *d, size_t n, const char *name) {
    const dirent_w *hit = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(d[i].name, name) == 0) {
            if (hit) fail_msg("entry %s listed twice", name);
            hit = &d[i];
        }
    }
    return hit;
}

static void test_readdir(void **state) {
    fs *f = *state;
    make_dir(hp(f, "rw/many"));
    char rel[64];
    for (int i = 0; i < 40; i++) {
        snprintf(rel, sizeof rel, "rw/many/file-%02d", i);
        write_file(hp(f, rel), "x");
    }
    make_dir(hp(f, "rw/many/d"));
    make_link("/etc", hp(f, "rw/many/l"));
    uint32_t fd;
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "many", O_DIR_W, R_READ, 0, 0, &fd), 0);
    static dirent_w ents[128];
    const uint32_t sizes[] = {64, 100, 333, 4096, RD_MAX};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = read_dir(f, fd, sizes[s], ents, 128);
        assert_int_equal(n, 44); /* 40 files, d, l, ".", ".." */
        for (int i = 0; i < 40; i++) {
            snprintf(rel, sizeof rel, "file-%02d", i);
            const dirent_w *e = find_entry(ents, n, rel);
            assert_non_null(e);
            assert_int_equal(e->type, WASI_FILETYPE_REGULAR_FILE);
            assert_int_equal(e->namlen, 7);
        }
        struct stat st;
        const dirent_w *e = find_entry(ents, n, "d");
        assert_non_null(e);
        assert_int_equal(e->type, WASI_FILETYPE_DIRECTORY);
        assert_int_equal(lstat(hp(f, "rw/many/d"), &st), 0);
        assert_int_equal(e->ino, st.st_ino);
        e = find_entry(ents, n, "l");
        assert_non_null(e);
        assert_int_equal(e->type, WASI_FILETYPE_SYMBOLIC_LINK);
        assert_non_null(find_entry(ents, n, "."));
        assert_non_null(find_entry(ents, n, ".."));
    }
    /* cookies are entry indexes (wasi-libc keeps them in a 32-bit long for
     * telldir/seekdir): d_next of entry i is i + 1, and resuming from any
     * earlier cookie, remembered or not, gives the same entry again */
    size_t all = read_dir(f, fd, RD_MAX, ents, 128);
    for (size_t i = 0; i < all; i++) assert_int_equal(ents[i].next, i + 1);
    const uint64_t cookies[] = {10, 3, 43, 0, 17, 18};
    for (size_t i = 0; i < sizeof cookies / sizeof *cookies; i++) {
        assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(64), L(cookies[i]), I(OUT)), 0);
        assert_true(get32(f, OUT) >= 24);
        assert_int_equal(get64(f, RD), cookies[i] + 1);
        uint32_t namlen = get32(f, RD + 16);
        assert_int_equal(namlen, strlen(ents[cookies[i]].name));
        assert_memory_equal(mem(f) + RD + 24, ents[cookies[i]].name, namlen);
    }
    /* a buffer smaller than one entry is filled completely, the entry cut */
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(30), L(0), I(OUT)), 0);
    assert_int_equal(get32(f, OUT), 30);
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(0), L(0), I(OUT)), 0);
    assert_int_equal(get32(f, OUT), 0);
    /* resuming from the last entry's d_next gives nothing more */
    size_t n = read_dir(f, fd, RD_MAX, ents, 128);
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(RD_MAX), L(ents[n - 1].next), I(OUT)),
                     0);
    assert_int_equal(get32(f, OUT), 0);
    /* a cookie past the end is the end */
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(16), L(UINT64_MAX), I(OUT)), 0);
    assert_int_equal(get32(f, OUT), 0);
    /* bad pointers, a file, no right */
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(65000), I(1000), L(0), I(OUT)), WASI_EFAULT);
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(16), L(0), I(65535)), WASI_EFAULT);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "file.txt", 0, R_READ, 0, 0, &fd), 0);
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(100), L(0), I(OUT)), WASI_ENOTDIR);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(g_open(f, FD_RW, FOLLOW, "many", O_DIR_W, WASI_RIGHT_FD_READ, 0, 0, &fd), 0);
    assert_int_equal(CALL(f, "fd_readdir", I(fd), I(RD), I(100), L(0), I(OUT)), WASI_ENOTCAPABLE);
    assert_int_equal(g_close(f, fd), 0);
    assert_int_equal(CALL(f, "fd_readdir", I(1), I(RD), I(100), L(0), I(OUT)), WASI_ENOTCAPABLE);
    /* the preopens list fine, the read-only one too */
    assert_int_equal(read_dir(f, FD_RO, 4096, ents, 128), 5);
    assert_non_null(find_entry(ents, 5, "rlink"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fs_setup, fs_teardown)
        T(test_prestat),
        T(test_open_basic),
        T(test_open_create),
        T(test_open_flags_invalid),
        T(test_open_rights),
        T(test_open_host_mode),
        T(test_open_escapes),
        T(test_open_loops_and_nofollow),
        T(test_path_validation),
        T(test_magic_links),
        T(test_symlink_swap_race),
        T(test_no_openat2_fails_closed),
        T(test_read_only),
        T(test_mkdir_rmdir_unlink),
        T(test_rename),
        T(test_symlink),
        T(test_readlink),
        T(test_link),
        T(test_filestat),
        T(test_set_times),
        T(test_size_allocate_advise_sync),
        T(test_readdir),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
