/* rights_flags.c — rights and fdflags through raw calls: shrinking rights
 * with fd_fdstat_set_rights and what stops working, trying to grow them,
 * fdflags (append, nonblock, the sync flags), fd_advise, fd_allocate, and
 * odd names (NUL inside, invalid UTF-8). */
// @exit: 0
// @known: KD-SEEK-TELL-RIGHT stdout s/^\(fd_seek(0, CUR) (a tell) without fd_seek\): errno 76$/\1: errno 0/
// @known: KD-EXCESS-RIGHTS stdout s/^\(path_open(nested\.txt, asking fd_read|fd_write) beneath it\): errno 76$/\1: errno 0, child fd_write: 0, fd_write: errno 76/
// @known: KD-UNDEFINED-FLAG-BITS stdout s/^\(fdstat_set_flags(0x20) (undefined bit)\): errno 0$/\1: errno 28/
// @known: KD-UNDEFINED-FLAG-BITS stdout s/^\(path_open([a-z]* 0x[0-9]*, undefined)\): errno 0$/\1: errno 28/
// @known: KD-NODE-ALLOCATE-ZERO stdout s/^fd_allocate(0, 0): errno 0$/fd_allocate(0, 0): errno 28/
#include <wasi/api.h>
#include "common.h"

#define IMPORT(name) __attribute__((import_module("wasi_snapshot_preview1"), import_name(#name)))
IMPORT(path_open) int raw_path_open(int fd, int dirflags, uint32_t path, uint32_t len, int oflags,
                                    int64_t rights, int64_t inheriting, int fdflags, uint32_t out);
#define P(x) ((uint32_t)(uintptr_t)(x))

static void show(const char *what, int e) { printf("%s: errno %d\n", what, e); }

static uint64_t rights_of(int fd) {
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(fd, &st)) return 0;
    return st.fs_rights_base;
}

static uint64_t inheriting_of(int fd) {
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(fd, &st)) return 0;
    return st.fs_rights_inheriting;
}

int main(void) {
    int fd = open(SANDBOX "/r.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    uint64_t r = rights_of(fd);
    printf("O_RDWR file has fd_read, fd_write, fd_seek, fd_tell: %d %d %d %d\n",
           !!(r & __WASI_RIGHTS_FD_READ), !!(r & __WASI_RIGHTS_FD_WRITE), !!(r & __WASI_RIGHTS_FD_SEEK),
           !!(r & __WASI_RIGHTS_FD_TELL));

    /* drop fd_write */
    show("set_rights(without fd_write)", __wasi_fd_fdstat_set_rights(fd, r & ~__WASI_RIGHTS_FD_WRITE, 0));
    __wasi_size_t n = 0;
    __wasi_ciovec_t cv = {(const uint8_t *)"x", 1};
    show("fd_write after dropping fd_write", __wasi_fd_write(fd, &cv, 1, &n));
    show("fd_pwrite after dropping fd_write", __wasi_fd_pwrite(fd, &cv, 1, 0, &n));
    show("set_rights(with fd_write again)", __wasi_fd_fdstat_set_rights(fd, r, 0));
    show("set_rights(inheriting grows)", __wasi_fd_fdstat_set_rights(fd, r & ~__WASI_RIGHTS_FD_WRITE, ~0ull));
    /* drop fd_seek but keep fd_tell */
    uint64_t r2 = rights_of(fd) & ~__WASI_RIGHTS_FD_SEEK;
    show("set_rights(without fd_seek)", __wasi_fd_fdstat_set_rights(fd, r2, 0));
    __wasi_filesize_t pos = 99;
    show("fd_seek(0, SET) without fd_seek", __wasi_fd_seek(fd, 0, __WASI_WHENCE_SET, &pos));
    show("fd_seek(0, CUR) (a tell) without fd_seek", __wasi_fd_seek(fd, 0, __WASI_WHENCE_CUR, &pos));
    show("fd_tell without fd_seek", __wasi_fd_tell(fd, &pos));
    printf("  position: %llu\n", (unsigned long long)pos);
    /* drop fd_read and fd_filestat_get */
    show("set_rights(only fd_tell)", __wasi_fd_fdstat_set_rights(fd, __WASI_RIGHTS_FD_TELL, 0));
    __wasi_iovec_t iv = {(uint8_t *)&(char[4]){0}, 4};
    show("fd_read with only fd_tell", __wasi_fd_read(fd, &iv, 1, &n));
    __wasi_filestat_t fst;
    show("fd_filestat_get with only fd_tell", __wasi_fd_filestat_get(fd, &fst));
    __wasi_fdstat_t fds;
    show("fd_fdstat_get with only fd_tell (needs no right)", __wasi_fd_fdstat_get(fd, &fds));
    printf("  rights now fd_tell only: %s\n", fds.fs_rights_base == __WASI_RIGHTS_FD_TELL ? "yes" : "no");
    show("set_rights(no rights at all)", __wasi_fd_fdstat_set_rights(fd, 0, 0));
    show("fd_close with no rights", __wasi_fd_close(fd));

    /* a directory fd without path_create_file cannot create */
    int dfd = open(SANDBOX "/sub", O_RDONLY | O_DIRECTORY);
    uint64_t dr = rights_of(dfd);
    printf("dir fd has path_open, path_create_file, fd_readdir: %d %d %d\n", !!(dr & __WASI_RIGHTS_PATH_OPEN),
           !!(dr & __WASI_RIGHTS_PATH_CREATE_FILE), !!(dr & __WASI_RIGHTS_FD_READDIR));
    show("set_rights(dir without path_create_file)",
         __wasi_fd_fdstat_set_rights(dfd, dr & ~__WASI_RIGHTS_PATH_CREATE_FILE, inheriting_of(dfd)));
    TRY("openat(dir, new.txt, O_CREAT) without path_create_file", openat(dfd, "new.txt", O_WRONLY | O_CREAT, 0644));
    TRY("openat(dir, nested.txt, O_RDONLY) still fine", openat(dfd, "nested.txt", O_RDONLY) >= 0 ? 0 : -1);
    /* inheriting rights: a child cannot get fd_write if the dir's inheriting lacks it */
    show("set_rights(dir inheriting without fd_write)",
         __wasi_fd_fdstat_set_rights(dfd, rights_of(dfd), inheriting_of(dfd) & ~__WASI_RIGHTS_FD_WRITE));
    uint32_t nfd = 0;
    int e = raw_path_open(dfd, 0, P("nested.txt"), 10, 0, __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_WRITE, 0, 0, P(&nfd));
    printf("path_open(nested.txt, asking fd_read|fd_write) beneath it: errno %d", e);
    /* (uvwasi refuses rights beyond the inheriting ones; airlock drops
     * them, KD-EXCESS-RIGHTS) */
    if (e == 0) {
        uint64_t cr = rights_of((int)nfd);
        printf(", child fd_write: %d", !!(cr & __WASI_RIGHTS_FD_WRITE));
        n = 0;
        printf(", fd_write: errno %d", __wasi_fd_write((int)nfd, &cv, 1, &n));
        (void)!__wasi_fd_close((int)nfd);
    }
    printf("\n");
    close(dfd);
    show_file("sub/nested.txt unchanged", SANDBOX "/sub/nested.txt");

    /* fdflags */
    fd = open(SANDBOX "/flags.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    show("fdstat_set_flags(NONBLOCK)", __wasi_fd_fdstat_set_flags(fd, __WASI_FDFLAGS_NONBLOCK));
    TRY("write with NONBLOCK", write(fd, "nb\n", 3));
    show("fdstat_set_flags(APPEND|NONBLOCK)", __wasi_fd_fdstat_set_flags(fd, __WASI_FDFLAGS_APPEND | __WASI_FDFLAGS_NONBLOCK));
    show("fdstat_set_flags(0)", __wasi_fd_fdstat_set_flags(fd, 0));
    show("fdstat_set_flags(0x20) (undefined bit)", __wasi_fd_fdstat_set_flags(fd, 0x20));
    show("fd_advise(0, 10, NORMAL)", __wasi_fd_advise(fd, 0, 10, __WASI_ADVICE_NORMAL));
    show("fd_advise(0, 10, DONTNEED)", __wasi_fd_advise(fd, 0, 10, __WASI_ADVICE_DONTNEED));
    show("fd_advise(0, 10, advice 9)", __wasi_fd_advise(fd, 0, 10, 9));
    show("fd_allocate(0, 100)", __wasi_fd_allocate(fd, 0, 100));
    FSTAT("fstat after fd_allocate(0, 100)", fd);
    show("fd_allocate(0, 0)", __wasi_fd_allocate(fd, 0, 0));
    show("fd_sync", __wasi_fd_sync(fd));
    show("fd_datasync", __wasi_fd_datasync(fd));
    close(fd);
    dfd = open(SANDBOX "/sub", O_RDONLY | O_DIRECTORY);
    show("fd_sync(dir)", __wasi_fd_sync(dfd));
    show("fd_allocate(dir)", __wasi_fd_allocate(dfd, 0, 10));
    close(dfd);
    show("fd_sync(stdout)", __wasi_fd_sync(1));

    /* pwrite on an append-mode fd: Linux appends, whatever the offset */
    fd = open(SANDBOX "/append.txt", O_RDWR | O_CREAT | O_APPEND, 0644);
    write(fd, "abc\n", 4);
    TRY("pwrite(X @ 0) on O_APPEND", pwrite(fd, "X", 1, 0));
    close(fd);
    show_file("append.txt", SANDBOX "/append.txt");

    /* odd names */
    e = raw_path_open(3, 0, P("nul\0inside"), 10, __WASI_OFLAGS_CREAT, __WASI_RIGHTS_FD_WRITE, 0, 0, P(&nfd));
    printf("path_open(\"nul\\0inside\", CREAT): errno %d\n", e);
    if (e == 0) (void)!__wasi_fd_close((int)nfd);
    LSTAT("lstat(nul)", SANDBOX "/nul");
    e = raw_path_open(3, 0, P("\xff\xfe-invalid-utf8"), 15, __WASI_OFLAGS_CREAT, __WASI_RIGHTS_FD_WRITE, 0, 0, P(&nfd));
    printf("path_open(invalid UTF-8 name, CREAT): errno %d\n", e);
    if (e == 0) {
        (void)!__wasi_fd_close((int)nfd);
        (void)!__wasi_path_unlink_file(3, "\xff\xfe-invalid-utf8");
    }
    e = raw_path_open(3, 0, P("newdir-creat"), 12, __WASI_OFLAGS_CREAT | __WASI_OFLAGS_DIRECTORY, 0, 0, 0, P(&nfd));
    printf("path_open(CREAT|DIRECTORY): errno %d\n", e);
    LSTAT("lstat(newdir-creat)", SANDBOX "/newdir-creat");
    e = raw_path_open(3, 0, P("hello.txt"), 9, 0x10, __WASI_RIGHTS_FD_READ, 0, 0, P(&nfd));
    printf("path_open(oflags 0x10, undefined): errno %d\n", e);
    e = raw_path_open(3, 0, P("hello.txt"), 9, 0, __WASI_RIGHTS_FD_READ, 0, 0x20, P(&nfd));
    printf("path_open(fdflags 0x20, undefined): errno %d\n", e);
    e = raw_path_open(3, 0, P("hello.txt"), 9, __WASI_OFLAGS_DIRECTORY, __WASI_RIGHTS_FD_READ, 0, 0, P(&nfd));
    printf("path_open(hello.txt, DIRECTORY): errno %d\n", e);
    e = raw_path_open(3, 0, P("."), 1, __WASI_OFLAGS_DIRECTORY,
                      __WASI_RIGHTS_FD_READDIR | __WASI_RIGHTS_FD_FILESTAT_GET, 0, 0, P(&nfd));
    printf("path_open(\".\", DIRECTORY): errno %d\n", e);
    if (e == 0) {
        __wasi_filestat_t fs = {0};
        int fe = __wasi_fd_filestat_get((int)nfd, &fs);
        printf("  fd_filestat_get: errno %d, filetype %d\n", fe, fs.filetype);
        (void)!__wasi_fd_close((int)nfd);
    }
    return 0;
}
