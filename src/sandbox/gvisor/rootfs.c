/*
 * rootfs.c — the root filesystem every gVisor sandbox of a state directory
 * shares, read-only: a skeleton of mountpoints, the merged-/usr symlinks of
 * the host, and a minimal /etc. The programs themselves come from the host's
 * /usr, bind-mounted read-only by config.json (oci.c).
 *
 * Invariants:
 *  - the rootfs holds nothing secret: /etc has only the sandbox user (uid
 *    1000), no shadow, no host name, no resolver (the sandbox has no network);
 *  - it is complete or absent: it is built in a temporary directory and
 *    renamed into place, so a crash or a concurrent airlock never leaves a
 *    half-built root that a sandbox would then boot on;
 *  - it is versioned by a marker file; a root without the current marker is
 *    replaced, never patched in place;
 *  - it is owned by root (or the state dir's owner) and 0755/0644: the guest
 *    can read it but, being read-only in the sandbox too, never change it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gvisor.h"

#define ROOTFS_MARKER ".airlock-rootfs"
#define ROOTFS_VERSION "airlock rootfs 2\n"

const char *const gvisor_top_dirs[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL};

int gvisor_top_dir_kind(const char *name) {
    char host[64], target[PATH_MAX];
    snprintf(host, sizeof host, "/%s", name);
    struct stat st;
    if (lstat(host, &st) < 0) return 0;
    if (S_ISDIR(st.st_mode)) return 2;
    if (!S_ISLNK(st.st_mode)) return 0;
    ssize_t n = readlink(host, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = 0;
    /* Only the merged-/usr shape ("usr/bin" or "/usr/bin") is mirrored; any
     * other link target would point the guest somewhere we do not mount. */
    const char *t = target[0] == '/' ? target + 1 : target;
    char want[64];
    snprintf(want, sizeof want, "usr/%s", name);
    return strcmp(t, want) == 0 ? 1 : 0;
}

/* Files of the skeleton beyond the guest's /etc (sandbox_guest_etc). */
static const char *const etc_files[][2] = {
    {"etc/ld.so.cache", ""},
    {ROOTFS_MARKER, ROOTFS_VERSION},
};

/* Mountpoints and plain directories of the skeleton. */
static const char *const skeleton_dirs[] = {
    "usr", "proc", "dev", "sys", "tmp", "run", "workspace", "etc", "etc/ssl",
    "etc/ssl/certs", "etc/alternatives", "var", "var/tmp", NULL,
};

static bool write_file_at(int dirfd, const char *name, const char *text) {
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok;
}

static bool build_at(int dirfd) {
    for (size_t i = 0; skeleton_dirs[i]; i++)
        if (mkdirat(dirfd, skeleton_dirs[i], 0755) < 0) return false;
    /* /tmp and /var/tmp are tmpfs or unused; sticky like the real ones. */
    if (fchmodat(dirfd, "tmp", 01777, 0) < 0 || fchmodat(dirfd, "var/tmp", 01777, 0) < 0)
        return false;
    for (size_t i = 0; gvisor_top_dirs[i]; i++) {
        const char *name = gvisor_top_dirs[i];
        char target[64];
        snprintf(target, sizeof target, "usr/%s", name);
        switch (gvisor_top_dir_kind(name)) {
        case 1:
            if (symlinkat(target, dirfd, name) < 0) return false;
            break;
        case 2:
            if (mkdirat(dirfd, name, 0755) < 0) return false; /* bound by oci.c */
            break;
        default: break;
        }
    }
    for (const sandbox_etc_file *f = sandbox_guest_etc; f->rel; f++)
        if (!write_file_at(dirfd, f->rel, f->content)) return false;
    for (size_t i = 0; i < sizeof etc_files / sizeof etc_files[0]; i++)
        if (!write_file_at(dirfd, etc_files[i][0], etc_files[i][1])) return false;
    return true;
}

static bool current(const char *rootfs) {
    char path[PATH_MAX], buf[64];
    snprintf(path, sizeof path, "%s/" ROOTFS_MARKER, rootfs);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) return false;
    buf[n] = 0;
    return strcmp(buf, ROOTFS_VERSION) == 0;
}

bool gvisor_rootfs_ensure(const char *state, char *out, size_t outlen, al_error *err) {
    char rootfs[PATH_MAX], tmp[PATH_MAX + 64], old[PATH_MAX + 64];
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", state);
    if (strlen(rootfs) >= outlen) return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: path too long");
    snprintf(out, outlen, "%s", rootfs);
    if (current(rootfs)) return true;

    snprintf(tmp, sizeof tmp, "%s/rootfs.tmp-%d-%llu", state, (int)getpid(),
             (unsigned long long)sandbox_now_ns());
    if (mkdir(tmp, 0755) < 0) return sandbox_error_errno(err, "gvisor: rootfs %s", tmp);
    /* mkdir's mode is filtered by the umask; the guest needs to traverse. */
    int dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    bool built = dirfd >= 0 && fchmod(dirfd, 0755) == 0 && build_at(dirfd);
    if (!built) {
        sandbox_error_errno(err, "gvisor: building rootfs in %s", tmp);
        if (dirfd >= 0) close(dirfd);
        sandbox_remove_tree(tmp);
        return false;
    }
    close(dirfd);
    if (rename(tmp, rootfs) == 0) return true;
    if (errno == EEXIST || errno == ENOTEMPTY) {
        if (current(rootfs)) { /* a concurrent airlock won the race */
            sandbox_remove_tree(tmp);
            return true;
        }
        /* An older layout: move it aside, then put ours in its place. */
        snprintf(old, sizeof old, "%s/rootfs.old-%d-%llu", state, (int)getpid(),
                 (unsigned long long)sandbox_now_ns());
        if (rename(rootfs, old) == 0) sandbox_remove_tree(old);
        if (rename(tmp, rootfs) == 0 || current(rootfs)) {
            sandbox_remove_tree(tmp);
            return true;
        }
    }
    sandbox_error_errno(err, "gvisor: installing rootfs %s", rootfs);
    sandbox_remove_tree(tmp);
    return false;
}
