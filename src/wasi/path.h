/*
 * path.h — resolving guest paths strictly beneath a directory fd (path.c).
 *
 * Every path a guest hands to a path_* function is resolved by the kernel
 * with openat2(2) and RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS relative to the
 * directory fd it names, so the whole walk (every `..`, every symlink, every
 * intermediate component) happens atomically inside the kernel and can never
 * leave that directory. No user-space resolver exists as a fallback: without
 * openat2 every path operation fails with ENOTSUP.
 *
 * Operations that have no openat2 form (mkdir, unlink, rename, link, symlink)
 * work on a `wasi_parent`: the parent directory of the final component,
 * opened beneath the fd, plus that component as a single name that contains
 * no '/' and is never "..". The *at() syscall on (parent fd, name) cannot
 * walk anywhere, and never follows the name when it is a symlink.
 */
#ifndef AIRLOCK_WASI_PATH_H
#define AIRLOCK_WASI_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "wasi_impl.h"

/* witx "lookupflags" */
#define WASI_LOOKUP_SYMLINK_FOLLOW 1u

/* A guest path copied out of guest memory: NUL-terminated, no embedded NUL,
 * shorter than PATH_MAX. Lives on the caller's stack. */
typedef struct wasi_path {
    char buf[PATH_MAX];
    size_t len;
} wasi_path;

/* Copy the guest bytes [ptr, ptr+len) into out and check them as a path
 * relative to a directory fd:
 *   EFAULT        range outside guest memory
 *   ENAMETOOLONG  len >= PATH_MAX
 *   EINVAL        an embedded NUL byte
 *   ENOENT        empty
 *   ENOTCAPABLE   absolute ("/..."): a capability is a directory fd, never
 *                 the host root */
wasi_errno path_from_guest(guest_mem mem, uint32_t ptr, uint32_t len, wasi_path *out);

/* Same copy for data that is stored rather than resolved (a symlink
 * target): only EFAULT, ENAMETOOLONG and EINVAL apply. */
wasi_errno path_bytes_from_guest(guest_mem mem, uint32_t ptr, uint32_t len, wasi_path *out);

/* openat2(dirfd, path, flags | O_CLOEXEC, mode) beneath dirfd. With follow
 * false the final component is not followed (O_NOFOLLOW: ELOOP for a symlink
 * unless O_PATH is also given, which opens the link itself). On success
 * *out_fd is a new host fd owned by the caller. Errors: an escape attempt
 * (`..` above dirfd, an absolute or escaping symlink) is ENOTCAPABLE, a
 * symlink loop or magic link ELOOP, a kernel without openat2 ENOTSUP. */
wasi_errno path_open_beneath(int dirfd, const char *path, int flags, mode_t mode, bool follow,
                             int *out_fd);

/* The parent directory of a path's final component, for the *at() calls. */
typedef struct wasi_parent {
    int fd;              /* O_PATH directory fd beneath dirfd; owned; -1 when closed */
    const char *name;    /* single component inside wasi_path.buf: no '/', never ".." */
    bool trailing_slash; /* the guest wrote "name/": it must be a directory */
    bool final_dotdot;   /* the guest's last component was ".." (name is then ".") */
} wasi_parent;

/* Split path (in place) and open its parent beneath dirfd. A final "." or
 * ".." is resolved as part of the parent, which then is the directory the
 * whole path names, and name becomes ".". On success the caller must call
 * path_parent_close. */
wasi_errno path_resolve_parent(int dirfd, wasi_path *path, wasi_parent *out);
void path_parent_close(wasi_parent *parent);

/* How many directories below dirfd the parent of `path`'s final component
 * lies, counted lexically (".." subtracts, "." is skipped); negative when
 * the path itself climbs above dirfd. Used by path_symlink's target check. */
long path_lexical_parent_depth(const char *path, size_t len);

/* Does the relative symlink target, placed `depth` directories below the
 * directory fd, climb above that fd when read lexically? */
bool path_target_escapes(const char *target, size_t len, long depth);

#endif
