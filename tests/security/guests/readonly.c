/*
 * Case 5: writes into a read-only preopen.
 *
 * The test grants HOST/ro as /data:ro, holding
 *   file.txt "RO-CONTENT", sub/inner.txt "INNER", emptydir/
 * Reading must work (sanity); every mutation must fail: create, open for
 * write/append/truncate, write through a read-only fd, truncate, rename,
 * unlink, mkdir, rmdir, symlink, link, utimes, allocate, and regaining rights
 * with fd_fdstat_set_rights. The harness compares a listing with sizes,
 * modes, mtimes and checksums of HOST/ro before and after.
 */
#include <sys/time.h>

#include "common.h"

static int pfd;

/* Try to write through fd by every means; each must fail. */
static void deny_writes_on(__wasi_fd_t fd, const char *name) {
    char what[128];
    const __wasi_ciovec_t iov = {(const uint8_t *)"PWNED", 5};
    __wasi_size_t n;
    snprintf(what, sizeof what, "fd_write(%s)", name);
    deny_errno(__wasi_fd_write(fd, &iov, 1, &n), what);
    snprintf(what, sizeof what, "fd_pwrite(%s, 0)", name);
    deny_errno(__wasi_fd_pwrite(fd, &iov, 1, 0, &n), what);
    snprintf(what, sizeof what, "fd_filestat_set_size(%s, 0)", name);
    deny_errno(__wasi_fd_filestat_set_size(fd, 0), what);
    snprintf(what, sizeof what, "fd_filestat_set_size(%s, 1M)", name);
    deny_errno(__wasi_fd_filestat_set_size(fd, 1 << 20), what);
    snprintf(what, sizeof what, "fd_allocate(%s, 0, 1M)", name);
    deny_errno(__wasi_fd_allocate(fd, 0, 1 << 20), what);
    snprintf(what, sizeof what, "fd_filestat_set_times(%s)", name);
    deny_errno(__wasi_fd_filestat_set_times(fd, 1, 1, __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               what);
}

/* An open asking to write. It should fail (EROFS); wasi-libc, though, asks
 * the host only for the rights the directory can pass on, and a read-only
 * preopen passes on no write rights, so the host may never see the intent
 * and hand out a read-only fd instead. That is not an escape as long as
 * nothing can be written through it: judged on the writes. */
static void deny_write_open(const char *path, int flags) {
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        denied(errno, "open(\"%s\", %#x)", path, flags);
        return;
    }
    char what[128];
    snprintf(what, sizeof what, "open(\"%s\", %#x)", path, flags);
    int wrote = (int)write(fd, "PWNED", 5);
    int werr = errno;
    int trunc = ftruncate(fd, 0);
    int terr = errno;
    if (wrote >= 0 || trunc == 0) {
        leak("", 0, "%s: write returned %d, ftruncate %d", what, wrote, trunc);
    } else {
        info("%s opened a read-only fd (write errno %d, ftruncate errno %d)", what, werr, terr);
        denied(werr, "write through %s", what);
    }
    close(fd);
}

int main(void) {
    char buf[256] = "";

    /* Sanity: the grant is readable. */
    if (slurp("/data/file.txt", buf, sizeof buf) < 0 || strcmp(buf, "RO-CONTENT") != 0)
        wrong("sanity: cannot read /data/file.txt (errno %d)", errno);
    DIR *d = opendir("/data");
    if (!d)
        wrong("sanity: cannot list /data (errno %d)", errno);
    else
        closedir(d);
    pfd = find_preopen("/data");
    if (pfd < 0) {
        wrong("sanity: no preopen named /data");
        return finish();
    }

    /* ---- libc opens for writing ---- */
    deny_open("/data/new.txt", O_CREAT | O_WRONLY);
    deny_open("/data/new2.txt", O_CREAT | O_EXCL | O_RDWR);
    deny_open("/data/sub/new.txt", O_CREAT | O_WRONLY);
    deny_write_open("/data/file.txt", O_WRONLY);
    deny_write_open("/data/file.txt", O_RDWR);
    deny_open("/data/file.txt", O_WRONLY | O_TRUNC);
    deny_open("/data/file.txt", O_RDONLY | O_TRUNC);
    deny_open("/data/file.txt", O_WRONLY | O_APPEND);
    deny_write_open("/data/sub/inner.txt", O_RDWR);
    FILE *f = fopen("/data/file.txt", "a");
    if (f) {
        leak("", 0, "fopen(\"/data/file.txt\", \"a\") succeeded");
        fclose(f);
    } else {
        denied(errno, "fopen(\"/data/file.txt\", \"a\")");
    }

    /* ---- writes through a read-only fd ---- */
    int fd = open("/data/file.txt", O_RDONLY);
    if (fd < 0) {
        wrong("sanity: cannot open /data/file.txt read-only (errno %d)", errno);
    } else {
        deny_rc((int)write(fd, "PWNED", 5), "write(read-only fd)");
        deny_rc(ftruncate(fd, 0), "ftruncate(read-only fd, 0)");
        struct timespec ts[2] = {{1, 0}, {1, 0}};
        deny_rc(futimens(fd, ts), "futimens(read-only fd)");
        deny_writes_on((__wasi_fd_t)fd, "read-only fd");
        /* Rights can only be dropped: asking for all of them back must fail,
         * and must not make writing possible. */
        __wasi_errno_t e = __wasi_fd_fdstat_set_rights((__wasi_fd_t)fd, RIGHTS_ALL, RIGHTS_ALL);
        if (e)
            denied(e, "fd_fdstat_set_rights(read-only fd, all)");
        else
            info("fd_fdstat_set_rights(read-only fd, all) returned success");
        deny_writes_on((__wasi_fd_t)fd, "read-only fd after set_rights");
        close(fd);
    }

    /* ---- raw opens asking for every right ---- */
    static const char *const files[] = {"file.txt", "sub/inner.txt"};
    for (size_t i = 0; i < 2; i++) {
        __wasi_fd_t wfd;
        __wasi_errno_t e = __wasi_path_open((__wasi_fd_t)pfd, 0, files[i], 0, RIGHTS_ALL,
                                            RIGHTS_ALL, 0, &wfd);
        if (e) {
            denied(e, "path_open(\"%s\", all rights)", files[i]);
        } else {
            info("path_open(\"%s\", all rights) opened fd %u; writing must still fail", files[i],
                 wfd);
            deny_writes_on(wfd, files[i]);
            (void)__wasi_fd_close(wfd);
        }
        e = __wasi_path_open((__wasi_fd_t)pfd, 0, files[i], 0, RIGHTS_ALL, RIGHTS_ALL,
                             __WASI_FDFLAGS_APPEND, &wfd);
        if (e) {
            denied(e, "path_open(\"%s\", all rights, append)", files[i]);
        } else {
            deny_writes_on(wfd, files[i]);
            (void)__wasi_fd_close(wfd);
        }
    }
    deny_path_open((__wasi_fd_t)pfd, 0, "new_raw.txt", __WASI_OFLAGS_CREAT, RIGHTS_ALL);
    deny_path_open((__wasi_fd_t)pfd, 0, "new_raw2.txt", __WASI_OFLAGS_CREAT | __WASI_OFLAGS_EXCL,
                   RIGHTS_ALL);
    deny_path_open((__wasi_fd_t)pfd, 0, "file.txt", __WASI_OFLAGS_TRUNC, RIGHTS_ALL);
    deny_path_open((__wasi_fd_t)pfd, 0, "file.txt", __WASI_OFLAGS_TRUNC, RIGHTS_READ);
    deny_path_open((__wasi_fd_t)pfd, 0, "file.txt", __WASI_OFLAGS_CREAT | __WASI_OFLAGS_TRUNC,
                   RIGHTS_ALL);

    /* ---- path operations ---- */
    deny_rc(rename("/data/file.txt", "/data/renamed.txt"), "rename(file.txt -> renamed.txt)");
    deny_rc(rename("/data/file.txt", "/data/sub/file.txt"), "rename(file.txt -> sub/file.txt)");
    deny_rc(rename("/data/sub/inner.txt", "/data/file.txt"), "rename(sub/inner.txt -> file.txt)");
    deny_rc(rename("/data/emptydir", "/data/moved_dir"), "rename(emptydir -> moved_dir)");
    deny_rc(unlink("/data/file.txt"), "unlink(file.txt)");
    deny_rc(unlink("/data/sub/inner.txt"), "unlink(sub/inner.txt)");
    deny_rc(mkdir("/data/newdir", 0755), "mkdir(newdir)");
    deny_rc(mkdir("/data/sub/newdir", 0755), "mkdir(sub/newdir)");
    deny_rc(rmdir("/data/emptydir"), "rmdir(emptydir)");
    deny_rc(symlink("file.txt", "/data/newlink"), "symlink(file.txt, newlink)");
    deny_rc(link("/data/file.txt", "/data/hardlink"), "link(file.txt, hardlink)");
    deny_rc(truncate("/data/file.txt", 0), "truncate(file.txt, 0)");
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    deny_rc(utimensat(AT_FDCWD, "/data/file.txt", ts, 0), "utimensat(file.txt)");
    deny_rc(utimensat(AT_FDCWD, "/data/emptydir", ts, 0), "utimensat(emptydir)");
    deny_rc(utimensat(AT_FDCWD, "/data", ts, 0), "utimensat(/data)");
    struct timeval tv[2] = {{1, 0}, {1, 0}};
    deny_rc(utimes("/data/file.txt", tv), "utimes(file.txt)");

    __wasi_fd_t P = (__wasi_fd_t)pfd;
    deny_errno(__wasi_path_create_directory(P, "rawdir"), "path_create_directory(rawdir)");
    deny_errno(__wasi_path_remove_directory(P, "emptydir"), "path_remove_directory(emptydir)");
    deny_errno(__wasi_path_unlink_file(P, "file.txt"), "path_unlink_file(file.txt)");
    deny_errno(__wasi_path_rename(P, "file.txt", P, "raw_renamed.txt"), "path_rename(file.txt)");
    deny_errno(__wasi_path_symlink("file.txt", P, "rawlink"), "path_symlink(rawlink)");
    deny_errno(__wasi_path_link(P, 0, "file.txt", P, "rawhard"), "path_link(rawhard)");
    deny_errno(__wasi_path_filestat_set_times(P, 0, "file.txt", 1, 1,
                                              __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               "path_filestat_set_times(file.txt)");
    deny_errno(__wasi_path_filestat_set_times(P, 0, "sub", 1, 1,
                                              __WASI_FSTFLAGS_ATIM_NOW | __WASI_FSTFLAGS_MTIM_NOW),
               "path_filestat_set_times(sub, now)");
    deny_errno(__wasi_fd_filestat_set_times(P, 1, 1, __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               "fd_filestat_set_times(preopen)");

    /* The preopen fd and a subdirectory opened with every right asked for. */
    __wasi_errno_t e = __wasi_fd_fdstat_set_rights(P, RIGHTS_ALL, RIGHTS_ALL);
    if (e)
        denied(e, "fd_fdstat_set_rights(preopen, all)");
    else
        info("fd_fdstat_set_rights(preopen, all) returned success");
    deny_errno(__wasi_path_create_directory(P, "rawdir2"), "path_create_directory(rawdir2) after set_rights");
    deny_path_open(P, 0, "new_after_rights.txt", __WASI_OFLAGS_CREAT, RIGHTS_ALL);
    __wasi_fd_t sfd;
    e = __wasi_path_open(P, 0, "sub", __WASI_OFLAGS_DIRECTORY, RIGHTS_ALL, RIGHTS_ALL, 0, &sfd);
    if (e == 0) {
        deny_path_open(sfd, 0, "new_in_sub.txt", __WASI_OFLAGS_CREAT, RIGHTS_ALL);
        deny_errno(__wasi_path_unlink_file(sfd, "inner.txt"), "path_unlink_file(sub fd, inner.txt)");
        deny_errno(__wasi_path_create_directory(sfd, "d"), "path_create_directory(sub fd, d)");
        deny_errno(__wasi_path_rename(sfd, "inner.txt", P, "x.txt"), "path_rename(sub fd inner.txt -> x.txt)");
        (void)__wasi_fd_close(sfd);
    } else {
        denied(e, "path_open(\"sub\", directory, all rights)");
    }
    /* After all that, the file must still read the same. */
    if (slurp("/data/file.txt", buf, sizeof buf) < 0 || strcmp(buf, "RO-CONTENT") != 0)
        leak(buf, strlen(buf), "/data/file.txt changed");
    return finish();
}
