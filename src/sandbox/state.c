/*
 * state.c — the state directory and execution ids.
 *
 * The state directory holds what must outlive one call: gVisor bundles and
 * runsc's own state, the shared read-only rootfs and the platform probe's
 * answer. It is private (0700, owned by us): a bundle's config.json decides
 * what a sandbox can see, so another user able to write there could grant
 * themselves the host.
 *
 * Execution ids are "al-<owner pid>-<owner start time>-<counter>": al_gc
 * decides from the id alone whether its owner is alive, and the start time
 * defends against pid reuse (a recycled pid with a different start time is
 * not the owner).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

void sandbox_set_errno(al_result *result, const char *fmt, ...) {
    int saved = errno;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    errno = saved;
    sandbox_error_errno(&result->error, "%s", what);
    result->status = AL_STATUS_ERROR;
}

bool sandbox_error_errno(al_error *err, const char *fmt, ...) {
    int saved = errno;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sandbox_error(err, AL_ERR_SYSTEM, "%s: %s", what, strerror(saved));
}

bool sandbox_error(al_error *err, al_error_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    al_error_vset(err, kind, fmt, ap);
    va_end(ap);
    return false;
}

/* mkdir -p with mode for the missing components. */
static bool make_dirs(const char *path, mode_t mode) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, mode) == 0 || errno == EEXIST;
}

static void default_state_dir(char *out, size_t outlen) {
    const char *env = getenv("AIRLOCK_STATE_DIR");
    if (env && env[0] == '/') {
        snprintf(out, outlen, "%s", env);
        return;
    }
    if (geteuid() == 0) {
        snprintf(out, outlen, "/run/airlock");
        return;
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/')
        snprintf(out, outlen, "%s/airlock", xdg);
    else
        snprintf(out, outlen, "/tmp/airlock-%u", (unsigned)geteuid());
}

bool sandbox_state_dir(const char *requested, char *out, size_t outlen, al_error *err) {
    char path[PATH_MAX];
    if (requested && requested[0]) {
        if (requested[0] != '/')
            return sandbox_error(err, AL_ERR_ARGUMENT, "state dir '%s' is not an absolute path",
                                 requested);
        snprintf(path, sizeof path, "%s", requested);
    } else {
        default_state_dir(path, sizeof path);
    }
    if (!make_dirs(path, 0700)) return sandbox_error_errno(err, "state dir %s", path);
    struct stat st;
    if (lstat(path, &st) < 0) return sandbox_error_errno(err, "state dir %s", path);
    if (!S_ISDIR(st.st_mode))
        return sandbox_error(err, AL_ERR_ARGUMENT, "state dir %s is not a directory", path);
    /* Another user's directory (or a world-writable one) could hold a planted
     * bundle or rootfs: refuse rather than trust it. */
    if (st.st_uid != geteuid())
        return sandbox_error(err, AL_ERR_ARGUMENT, "state dir %s is owned by uid %u, not by us",
                             path, (unsigned)st.st_uid);
    if (st.st_mode & 022) {
        if (chmod(path, st.st_mode & 0700) < 0)
            return sandbox_error_errno(err, "state dir %s: restricting its mode", path);
    }
    if (strlen(path) >= outlen) return sandbox_error(err, AL_ERR_ARGUMENT, "state dir path too long");
    snprintf(out, outlen, "%s", path);
    return true;
}

unsigned long long sandbox_process_start_time(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    /* comm (field 2) may contain spaces and parentheses: count fields after
     * the last ')'. State is field 3; start time is field 22. */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    for (int field = 2; field < 21; field++) {
        p = strchr(p + 1, ' ');
        if (!p) return 0;
    }
    return strtoull(p + 1, NULL, 10);
}

bool sandbox_owner_alive(pid_t pid, unsigned long long start_time) {
    if (pid <= 0) return false;
    if (kill(pid, 0) < 0 && errno == ESRCH) return false;
    unsigned long long now = sandbox_process_start_time(pid);
    if (now == 0) return false;
    return start_time == 0 || now == start_time;
}

void sandbox_new_id(char *out, size_t outlen) {
    static atomic_uint counter;
    unsigned n = atomic_fetch_add(&counter, 1);
    pid_t me = getpid();
    snprintf(out, outlen, "al-%d-%llu-%u", (int)me, sandbox_process_start_time(me), n);
}

static void remove_at(int parent_fd, const char *name, int depth) {
    if (depth > 64) return; /* ours are shallow; a deeper tree is not ours to chase */
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        DIR *d = fdopendir(fd);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                if (unlinkat(dirfd(d), e->d_name, 0) < 0) remove_at(dirfd(d), e->d_name, depth + 1);
            }
            closedir(d);
        } else {
            close(fd);
        }
    }
    if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0) unlinkat(parent_fd, name, 0);
}

void sandbox_remove_tree(const char *path) {
    remove_at(AT_FDCWD, path, 0);
}
