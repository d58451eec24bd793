/*
 * Case 3: "../" traversal out of a read-write preopen.
 *
 * The test grants HOST/root as /work (rw). On the host, next to root, is
 * outside/secret.txt ("OUTSIDE-SECRET"); argv[1] is the absolute host path of
 * the directory holding both (an attacker who knows the host layout).
 *
 *   HOST/root/inside.txt         "INSIDE"   (must be readable: sanity)
 *   HOST/root/sub/deeper/
 *   HOST/outside/secret.txt      "OUTSIDE-SECRET"
 *
 * Every path below leaves /work at some point and must be refused: reads,
 * stats, directory listings, and mutations (create, mkdir, rename, link,
 * symlink, unlink, rmdir, utimes) aimed at or drawing from outside the
 * preopen. The harness also checks HOST for anything created or changed.
 */
#include "common.h"

static int pfd = -1;

static void deny_raw_both(__wasi_fd_t dirfd, const char *path) {
    deny_path_open(dirfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, path, 0, RIGHTS_READ);
    deny_path_open(dirfd, 0, path, 0, RIGHTS_READ);
}

int main(int argc, char **argv) {
    const char *host = argc > 1 ? argv[1] : "/nonexistent";
    char buf[256], path[1024];

    /* Sanity: the grant works, so the denials below mean something. */
    if (slurp("/work/inside.txt", buf, sizeof buf) < 0 || strcmp(buf, "INSIDE") != 0)
        wrong("sanity: cannot read /work/inside.txt (errno %d): the grant does not work", errno);
    pfd = find_preopen("/work");
    if (pfd < 0) {
        wrong("sanity: no preopen named /work");
        return finish();
    }
    info("preopen /work is fd %d", pfd);
    const __wasi_rights_t R = rights_of((__wasi_fd_t)pfd), RD = dir_rights_of((__wasi_fd_t)pfd);

    /* ---- libc paths ---- */
    static const char *const libc_paths[] = {
        "/work/../etc/passwd",
        "/work/./../../etc/passwd",
        "/work/../../../../../../../../etc/passwd",
        "/work/../outside/secret.txt",
        "/work//..//outside/secret.txt",
        "/work/sub/../../outside/secret.txt",
        "/work/sub/deeper/../../../outside/secret.txt",
        "/work/./sub/./../.././outside/secret.txt",
    };
    for (size_t i = 0; i < sizeof libc_paths / sizeof libc_paths[0]; i++)
        deny_open(libc_paths[i], O_RDONLY);
    deny_opendir("/work/..");
    deny_opendir("/work/../..");
    deny_stat("/work/../outside/secret.txt");
    if (chdir("/work") == 0) {
        deny_open("../../../../etc/passwd", O_RDONLY);
        deny_open("../outside/secret.txt", O_RDONLY);
        deny_open("sub/../../outside/secret.txt", O_RDONLY);
        deny_opendir("..");
        if (chdir("/work/sub") == 0) {
            deny_open("../../outside/secret.txt", O_RDONLY);
            deny_open("../../../../../etc/passwd", O_RDONLY);
        } else {
            wrong("chdir(/work/sub) failed: errno %d", errno);
        }
    } else {
        wrong("chdir(/work) failed: errno %d", errno);
    }

    /* ---- raw path_open relative to the preopen fd ---- */
    static const char *const raw_paths[] = {
        "..", "../", "../.", "./..", "sub/../..", "sub/deeper/../../..",
        "../outside/secret.txt", "./../outside/secret.txt", "../../../../../../../../etc/passwd",
        "sub/../../outside/secret.txt", "sub/deeper/../../../outside/secret.txt",
        "sub//..//..//outside/secret.txt", "inside.txt/../../outside/secret.txt",
        "../root/inside.txt", "/etc/passwd", "//etc/passwd", "/../outside/secret.txt",
        "/..", "/",
    };
    for (size_t i = 0; i < sizeof raw_paths / sizeof raw_paths[0]; i++)
        deny_raw_both((__wasi_fd_t)pfd, raw_paths[i]);
    snprintf(path, sizeof path, "%s/outside/secret.txt", host);
    deny_raw_both((__wasi_fd_t)pfd, path);
    for (int dots = 1; dots <= 64; dots *= 2) {
        size_t len = 0;
        for (int k = 0; k < dots; k++)
            len += (size_t)snprintf(path + len, sizeof path - len, "../");
        snprintf(path + len, sizeof path - len, "etc/passwd");
        deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, path, 0, RIGHTS_READ);
    }
    /* A very long path: 2000 "../" then etc/passwd. Must fail, not crash. */
    {
        size_t n = 2000 * 3 + 16;
        char *p = malloc(n);
        size_t len = 0;
        for (int k = 0; k < 2000; k++) {
            memcpy(p + len, "../", 3);
            len += 3;
        }
        strcpy(p + len, "etc/passwd");
        __wasi_fd_t fd;
        __wasi_errno_t e = __wasi_path_open((__wasi_fd_t)pfd, 0, p, 0, RIGHTS_READ, 0, 0, &fd);
        if (e)
            denied(e, "path_open(2000 x \"../\" + etc/passwd)");
        else
            leak_fd(fd, "path_open(2000 x \"../\" + etc/passwd)");
        free(p);
    }
    /* An embedded NUL: the host must not see "inside.txt" and nothing else,
     * nor anything past it. */
    {
        static const char nul_path[] = "inside.txt\0/../../outside/secret.txt";
        __wasi_fd_t fd = 0;
        int32_t e = raw_path_open(pfd, 1, (int32_t)(uintptr_t)nul_path, (int32_t)(sizeof nul_path - 1),
                                  0, RIGHTS_READ, 0, 0, (int32_t)(uintptr_t)&fd);
        if (e != 0) {
            denied(e, "path_open(\"inside.txt\\0/../../outside/secret.txt\")");
        } else {
            char b[64];
            __wasi_iovec_t iov = {(uint8_t *)b, sizeof b - 1};
            __wasi_size_t n = 0;
            (void)__wasi_fd_read(fd, &iov, 1, &n);
            if (n >= 7 && !memcmp(b, "OUTSIDE", 7))
                leak(b, n, "path_open(\"inside.txt\\0/../../outside/secret.txt\")");
            else
                wrong("path_open of a path with an embedded NUL succeeded (read \"%.*s\")", (int)n, b);
            (void)__wasi_fd_close(fd);
        }
    }

    /* ---- relative to a subdirectory fd ---- */
    __wasi_fd_t subfd;
    if (__wasi_path_open((__wasi_fd_t)pfd, 0, "sub", __WASI_OFLAGS_DIRECTORY, RD, R, 0, &subfd) != 0) {
        wrong("sanity: cannot open /work/sub as a directory (errno %d)",
              __wasi_path_open((__wasi_fd_t)pfd, 0, "sub", __WASI_OFLAGS_DIRECTORY, RD, R, 0, &subfd));
    } else {
        deny_raw_both(subfd, "../../outside/secret.txt");
        deny_raw_both(subfd, "../../../../../../etc/passwd");
        deny_raw_both(subfd, "../..");
        deny_raw_both(subfd, "deeper/../../../outside/secret.txt");
        /* sub/.. is the root itself: allowed or not, it must not reach above. */
        __wasi_fd_t upfd;
        __wasi_errno_t e = __wasi_path_open(subfd, 0, "..", __WASI_OFLAGS_DIRECTORY, RD, R, 0, &upfd);
        if (e == 0) {
            info("sub/.. opened (the preopen root)");
            deny_raw_both(upfd, "../outside/secret.txt");
            deny_raw_both(upfd, "..");
            (void)__wasi_fd_close(upfd);
        } else {
            info("sub/.. refused (errno %d)", e);
        }
        (void)__wasi_fd_close(subfd);
    }

    /* ---- metadata oracles ---- */
    {
        __wasi_filestat_t st;
        deny_errno(__wasi_path_filestat_get((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW,
                                            "../outside/secret.txt", &st),
                   "path_filestat_get(\"../outside/secret.txt\")");
        deny_errno(__wasi_path_filestat_get((__wasi_fd_t)pfd, 0, "..", &st),
                   "path_filestat_get(\"..\")");
        char lbuf[64];
        __wasi_size_t ln;
        deny_errno(__wasi_path_readlink((__wasi_fd_t)pfd, "../outside/secret.txt", (uint8_t *)lbuf,
                                        sizeof lbuf, &ln),
                   "path_readlink(\"../outside/secret.txt\")");
    }

    /* ---- mutations across the boundary ---- */
    static const char *const create_paths[] = {
        "../escape_created", "sub/../../escape_created2", "../outside/escape_created3",
        "/escape_abs_root",
    };
    for (size_t i = 0; i < sizeof create_paths / sizeof create_paths[0]; i++) {
        deny_path_open((__wasi_fd_t)pfd, 0, create_paths[i], __WASI_OFLAGS_CREAT, R);
    }
    snprintf(path, sizeof path, "%s/escape_abs", host);
    deny_path_open((__wasi_fd_t)pfd, 0, path, __WASI_OFLAGS_CREAT, R);
    deny_path_open((__wasi_fd_t)pfd, 0, "../outside/secret.txt", __WASI_OFLAGS_TRUNC, R);
    deny_open("/work/../escape_libc", O_CREAT | O_WRONLY);
    deny_errno(__wasi_path_create_directory((__wasi_fd_t)pfd, "../escape_dir"),
               "path_create_directory(\"../escape_dir\")");
    deny_errno(__wasi_path_create_directory((__wasi_fd_t)pfd, "sub/../../escape_dir2"),
               "path_create_directory(\"sub/../../escape_dir2\")");

    /* A file of our own, to move out. */
    int cfd = open("/work/inside_copy.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (cfd < 0) {
        wrong("sanity: cannot create /work/inside_copy.txt in the rw preopen (errno %d)", errno);
    } else {
        if (write(cfd, "COPY", 4) != 4)
            wrong("sanity: cannot write /work/inside_copy.txt (errno %d)", errno);
        close(cfd);
    }
    deny_errno(__wasi_path_rename((__wasi_fd_t)pfd, "inside_copy.txt", (__wasi_fd_t)pfd,
                                  "../escaped.txt"),
               "path_rename(\"inside_copy.txt\" -> \"../escaped.txt\")");
    deny_errno(__wasi_path_rename((__wasi_fd_t)pfd, "../outside/secret.txt", (__wasi_fd_t)pfd,
                                  "stolen_by_rename.txt"),
               "path_rename(\"../outside/secret.txt\" -> \"stolen_by_rename.txt\")");
    deny_errno(__wasi_path_rename((__wasi_fd_t)pfd, "../outside", (__wasi_fd_t)pfd, "stolen_dir"),
               "path_rename(\"../outside\" -> \"stolen_dir\")");
    deny_errno(__wasi_path_link((__wasi_fd_t)pfd, 0, "inside.txt", (__wasi_fd_t)pfd, "../hardlink"),
               "path_link(\"inside.txt\" -> \"../hardlink\")");
    deny_errno(__wasi_path_link((__wasi_fd_t)pfd, 0, "../outside/secret.txt", (__wasi_fd_t)pfd,
                                "stolen_by_link.txt"),
               "path_link(\"../outside/secret.txt\" -> \"stolen_by_link.txt\")");
    deny_errno(__wasi_path_symlink("inside.txt", (__wasi_fd_t)pfd, "../escape_symlink"),
               "path_symlink(\"inside.txt\", \"../escape_symlink\")");
    deny_errno(__wasi_path_unlink_file((__wasi_fd_t)pfd, "../outside/secret.txt"),
               "path_unlink_file(\"../outside/secret.txt\")");
    deny_errno(__wasi_path_remove_directory((__wasi_fd_t)pfd, "../outside"),
               "path_remove_directory(\"../outside\")");
    deny_errno(__wasi_path_remove_directory((__wasi_fd_t)pfd, "sub/../../outside"),
               "path_remove_directory(\"sub/../../outside\")");
    deny_errno(__wasi_path_filestat_set_times((__wasi_fd_t)pfd, 0, "../outside/secret.txt", 1, 1,
                                              __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               "path_filestat_set_times(\"../outside/secret.txt\")");
    deny_rc(unlink("/work/../outside/secret.txt"), "unlink(\"/work/../outside/secret.txt\")");
    deny_rc(rename("/work/inside.txt", "/work/../renamed.txt"),
            "rename(\"/work/inside.txt\", \"/work/../renamed.txt\")");
    return finish();
}
