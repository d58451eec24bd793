/*
 * path.c — resolving guest paths strictly beneath a directory fd.
 *
 * Invariants (see path.h):
 *   - every guest path is copied out of guest memory once, after a
 *     guest_range check, into a NUL-terminated host buffer; nothing reads the
 *     guest bytes again (no TOCTOU through guest memory);
 *   - every host path resolution goes through openat2(2) with RESOLVE_BENEATH
 *     and RESOLVE_NO_MAGICLINKS relative to the guest's directory fd, so the
 *     kernel refuses, atomically and race-free, anything that would leave
 *     that directory: `..` above it, absolute symlinks, relative symlinks
 *     that climb out, /proc magic links; a symlink swapped in by another
 *     process during the walk is resolved under the same rules;
 *   - the names handed to non-openat2 syscalls (mkdirat, unlinkat, renameat,
 *     linkat, symlinkat) are single components: no '/', never "..". A
 *     trailing slash is stripped and reported instead, because with "name/"
 *     the kernel would follow a symlink `name` from inside the *at() call,
 *     outside openat2's protection;
 *   - no fallback resolver: a kernel without openat2 (ENOSYS, < 5.6) makes
 *     every path operation fail with ENOTSUP (fail closed).
 *
 * WASI semantics (witx "lookupflags"): intermediate symlinks are always
 * followed (beneath); only the final component depends on symlink_follow.
 * RESOLVE_NO_SYMLINKS would apply to every component, so it is not used: the
 * final component is handled with O_NOFOLLOW (openat2 honours it for the last
 * component only) or by operating on (parent fd, name) with the *at() call's
 * own no-follow semantics.
 */
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* RESOLVE_BENEATH may return EAGAIN when a concurrent rename or mount raced
 * a `..` step (openat2(2)); the walk is simply retried, a bounded number of
 * times so that a hostile host process cannot pin us in a loop. */
#define OPENAT2_RETRIES 16

static wasi_errno copy_guest_bytes(guest_mem mem, uint32_t ptr, uint32_t len, wasi_path *out) {
    if (!guest_range(mem, ptr, len)) return WASI_EFAULT;
    /* PATH_MAX counts the terminating NUL, as the kernel does. */
    if (len >= sizeof out->buf) return WASI_ENAMETOOLONG;
    memcpy(out->buf, mem.base + ptr, len);
    out->buf[len] = '\0';
    out->len = len;
    /* A NUL inside the guest's string would silently cut the path the kernel
     * sees short of the path the guest (and any policy check) sees. */
    if (memchr(out->buf, '\0', len)) return WASI_EINVAL;
    return WASI_ESUCCESS;
}

wasi_errno path_bytes_from_guest(guest_mem mem, uint32_t ptr, uint32_t len, wasi_path *out) {
    return copy_guest_bytes(mem, ptr, len, out);
}

wasi_errno path_from_guest(guest_mem mem, uint32_t ptr, uint32_t len, wasi_path *out) {
    wasi_errno e = copy_guest_bytes(mem, ptr, len, out);
    if (e != WASI_ESUCCESS) return e;
    /* POSIX: the empty path names nothing (open("") is ENOENT). */
    if (len == 0) return WASI_ENOENT;
    /* An absolute path would be resolved from the host root: refuse it
     * before the kernel sees it (RESOLVE_BENEATH would give EXDEV too). */
    if (out->buf[0] == '/') return WASI_ENOTCAPABLE;
    return WASI_ESUCCESS;
}

/* Host errno of a resolution -> WASI errno. EXDEV is the only way
 * RESOLVE_BENEATH reports an escape attempt; the guest sees the WASI
 * capability error for it, like node's uvwasi. */
static wasi_errno resolve_errno(int host_errno) {
    switch (host_errno) {
    case EXDEV: return WASI_ENOTCAPABLE;
    case ENOSYS: return WASI_ENOTSUP; /* no openat2: fail closed */
    default: return wasi_errno_from_host(host_errno);
    }
}

wasi_errno path_open_beneath(int dirfd, const char *path, int flags, mode_t mode, bool follow,
                             int *out_fd) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    /* openat2 rejects a mode without O_CREAT (O_TMPFILE is never used). */
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0; attempt < OPENAT2_RETRIES; attempt++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0) {
            *out_fd = (int)fd;
            return WASI_ESUCCESS;
        }
        if (errno != EAGAIN && errno != EINTR) return resolve_errno(errno);
    }
    return WASI_EAGAIN;
}

/* Is the component [s, s+n) "." or ".."? */
static bool is_dot_component(const char *s, size_t n) {
    return (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
}

wasi_errno path_resolve_parent(int dirfd, wasi_path *path, wasi_parent *out) {
    out->fd = -1;
    out->name = ".";
    out->trailing_slash = false;
    out->final_dotdot = false;

    /* Strip trailing slashes ("a/b//" -> "a/b"); path is relative and
     * non-empty, so at least one other byte remains. */
    size_t len = path->len;
    while (len > 1 && path->buf[len - 1] == '/') {
        len--;
        out->trailing_slash = true;
    }
    path->buf[len] = '\0';
    path->len = len;

    const char *slash = memrchr(path->buf, '/', len);
    size_t start = slash ? (size_t)(slash - path->buf) + 1 : 0;
    const int flags = O_PATH | O_DIRECTORY;

    if (is_dot_component(path->buf + start, len - start)) {
        /* "x/.." must not become (parent "x", name ".."): the *at() call
         * would then step out of whatever "x" is. The whole path names a
         * directory; resolve all of it beneath dirfd and use ".". */
        out->final_dotdot = len - start == 2;
        return path_open_beneath(dirfd, path->buf, flags, 0, true, &out->fd);
    }
    if (!slash) {
        out->name = path->buf;
        return path_open_beneath(dirfd, ".", flags, 0, true, &out->fd);
    }
    path->buf[start - 1] = '\0'; /* parent "a/b" of "a/b/c" ("a//c" -> "a/") */
    out->name = path->buf + start;
    return path_open_beneath(dirfd, path->buf, flags, 0, true, &out->fd);
}

void path_parent_close(wasi_parent *parent) {
    if (parent->fd >= 0) close(parent->fd);
    parent->fd = -1;
}

/* Walk the components of [s, s+len), adding +1 for a name and -1 for "..";
 * stop early (returning the depth reached) once it drops below zero. The
 * last component is included only when count_last is set. */
static long lexical_walk(const char *s, size_t len, long depth, bool count_last) {
    size_t i = 0;
    while (i < len) {
        while (i < len && s[i] == '/') i++;
        size_t j = i;
        while (j < len && s[j] != '/') j++;
        if (j == i) break;
        bool last = true;
        for (size_t k = j; k < len; k++) {
            if (s[k] != '/') { last = false; break; }
        }
        if (last && !count_last) break;
        if (j - i == 2 && s[i] == '.' && s[i + 1] == '.') depth--;
        else if (!(j - i == 1 && s[i] == '.')) depth++;
        if (depth < 0) return depth;
        i = j;
    }
    return depth;
}

long path_lexical_parent_depth(const char *path, size_t len) {
    return lexical_walk(path, len, 0, false);
}

bool path_target_escapes(const char *target, size_t len, long depth) {
    if (depth < 0) return true;
    return lexical_walk(target, len, depth, true) < 0;
}
