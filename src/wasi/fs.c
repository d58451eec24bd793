/*
 * fs.c — the file-system half of the WASI preview1 host: path_*, fd_readdir,
 * fd_filestat_*, fd_prestat_*, fd_advise, fd_allocate, fd_sync, fd_datasync
 * (witx: legacy/preview1/witx/wasi_snapshot_preview1.witx, typenames.witx).
 *
 * Invariants:
 *   - every path is resolved by path.c strictly beneath the directory fd the
 *     guest names (openat2 RESOLVE_BENEATH); this file never builds a host
 *     path string and never calls a path syscall relative to AT_FDCWD (the
 *     one exception, link_followed's /proc/self/fd fallback, names an fd
 *     that was itself resolved beneath);
 *   - every guest pointer is checked with guest_range before the operation
 *     has any effect, so a bad pointer never leaves a half-done mutation;
 *   - an fd opened beneath a read-only preopen is read-only too, and every
 *     mutation through it is refused before the host is asked: its host
 *     open is always O_RDONLY; create, truncate, append, the fd_write and
 *     fd_allocate rights, mkdir, rmdir, unlink, rename, link, symlink and
 *     set-times are EROFS; set-size and allocate EBADF (POSIX: "not open for
 *     writing"); other mutating rights it asks for are silently dropped;
 *   - host fds are opened O_CLOEXEC | O_NOCTTY, and O_NONBLOCK during the
 *     open so that a FIFO cannot hang the host thread; O_PATH fds are only
 *     transient (resolution, stat, readlink) and never reach the fd table;
 *   - rights follow witx: the operation's right on the fd or ENOTCAPABLE; a
 *     new fd gets the requested rights intersected with the directory's
 *     inheriting rights (minus the mutating ones when read-only).
 *
 * Check order of every call: EBADF (no such fd), EROFS (read-only), rights
 * (ENOTCAPABLE), kind (ENOTDIR), guest memory (EFAULT), arguments (EINVAL),
 * then the path (path.c) and the host call.
 *
 * Where this differs from node 20's uvwasi, and why:
 *   - uvwasi resolves paths in user space, and node 20 follows a symlink to
 *     /etc through open ("etc_link/passwd"), mkdir ("etc_link/x" creates
 *     /etc/x), path_link (a hard link to /etc/passwd) and the stat of
 *     "etc_link/". Here every such walk is ENOTCAPABLE.
 *   - requested rights beyond the directory's inheriting rights are dropped
 *     (uvwasi: ENOTCAPABLE); wasi-libc and Go ask for more than they need.
 *   - the host fd is writable only for fd_write/fd_allocate rights (see
 *     RIGHTS_WRITE_INTENT); O_DIRECTORY opens are always read-only.
 *   - fd_readdir lists "." and ".." (as POSIX readdir and wasmtime do) with
 *     real inode numbers; uvwasi gets its entries from libuv, which drops
 *     "." and "..", and reports d_ino 0. Cookies are entry indexes in both.
 *   - path_readlink and fd_prestat_dir_name cut what does not fit (POSIX
 *     readlink); uvwasi returns ENOBUFS.
 *   - fd_prestat_get on an open fd that is not a preopen is EBADF (uvwasi:
 *     EINVAL); an empty path is ENOENT (uvwasi: EINVAL), as POSIX says.
 *   - path_symlink: absolute targets are EPERM as in uvwasi, but a relative
 *     target is judged from the link's own directory ("../x" in a subdir is
 *     fine; uvwasi refuses any target starting with "..").
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "wasi_impl.h"

/* witx "oflags" */
#define WASI_O_CREAT 1u
#define WASI_O_DIRECTORY 2u
#define WASI_O_EXCL 4u
#define WASI_O_TRUNC 8u
#define WASI_O_ALL 15u
#define WASI_FDFLAGS_ALL 31u

/* witx "fstflags" */
#define WASI_FST_ATIM 1u
#define WASI_FST_ATIM_NOW 2u
#define WASI_FST_MTIM 4u
#define WASI_FST_MTIM_NOW 8u

/* witx "advice": normal .. noreuse */
#define WASI_ADVICE_MAX 5u

/* Sizes of witx records in guest memory. */
#define FILESTAT_SIZE 64u
#define PRESTAT_SIZE 8u
#define DIRENT_SIZE 24u

/* Rights that let an fd change the file system; a read-only fd never
 * carries them, so fd_fdstat_get tells the guest the truth. */
#define RIGHTS_MUTATING                                                                 \
    (WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_ALLOCATE | WASI_RIGHT_FD_FILESTAT_SET_SIZE |  \
     WASI_RIGHT_FD_FILESTAT_SET_TIMES | WASI_RIGHT_PATH_CREATE_DIRECTORY |              \
     WASI_RIGHT_PATH_CREATE_FILE | WASI_RIGHT_PATH_LINK_SOURCE |                        \
     WASI_RIGHT_PATH_LINK_TARGET | WASI_RIGHT_PATH_RENAME_SOURCE |                      \
     WASI_RIGHT_PATH_RENAME_TARGET | WASI_RIGHT_PATH_FILESTAT_SET_SIZE |                \
     WASI_RIGHT_PATH_FILESTAT_SET_TIMES | WASI_RIGHT_PATH_SYMLINK |                     \
     WASI_RIGHT_PATH_REMOVE_DIRECTORY | WASI_RIGHT_PATH_UNLINK_FILE)

/* Requested rights that mean "open for writing": the host fd is opened
 * for writing only for these, and on a read-only directory they are refused
 * (EROFS). Every other mutating right is merely dropped there, because
 * common guests ask for them even for O_RDONLY: wasi-libc and Rust's std
 * ask for the path_* and set-times rights, Go's os.Open (syscall/
 * fs_wasip1.go) for fd_filestat_set_size as well. uvwasi and wasmtime also
 * treat fd_datasync and fd_filestat_set_size as write access; then Go's
 * os.Open of a file the host user may not write fails with EACCES. */
#define RIGHTS_WRITE_INTENT (WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_ALLOCATE)
#define RIGHTS_READ (WASI_RIGHT_FD_READ | WASI_RIGHT_FD_READDIR)

#define ARG_U32(i) ((uint32_t)args[i].of.i32)
#define ARG_U64(i) ((uint64_t)args[i].of.i64)

static wasi_errno host_error(void) { return wasi_errno_from_host(errno); }

static bool is_stdio(const wasi_fd *fd) {
    return fd->kind == WASI_FD_STDIN || fd->kind == WASI_FD_STDOUT || fd->kind == WASI_FD_STDERR;
}

/* ---- fd lookup ------------------------------------------------------------ */

/* How a call treats a read-only fd: allowed (READS), or refused with EROFS
 * (path mutations, set-times) or EBADF (set-size, allocate: POSIX's "not
 * open for writing"), whatever the fd's rights say. */
#define READS WASI_ESUCCESS

/* The open fd with `rights`. */
static wasi_errno lookup_fd(wasi_ctx *ctx, uint32_t fd, uint64_t rights, wasi_errno read_only,
                            wasi_fd **out) {
    wasi_fd *entry = wasi_fd_get(ctx, fd);
    if (!entry) return WASI_EBADF;
    if (read_only != READS && entry->read_only) return read_only;
    if ((entry->rights_base & rights) != rights) return WASI_ENOTCAPABLE;
    *out = entry;
    return WASI_ESUCCESS;
}

/* Same, and the fd must be a directory (the base of a path_* call). */
static wasi_errno lookup_dir(wasi_ctx *ctx, uint32_t fd, uint64_t rights, bool mutates,
                             wasi_fd **out) {
    wasi_errno e = lookup_fd(ctx, fd, rights, mutates ? WASI_EROFS : READS, out);
    if (e == WASI_ESUCCESS && (*out)->kind != WASI_FD_DIR) e = WASI_ENOTDIR;
    return e;
}

/* A data fd with a host file behind it (not an in-memory stdio pipe). */
static wasi_errno lookup_host_fd(wasi_ctx *ctx, uint32_t fd, uint64_t rights,
                                 wasi_errno read_only, wasi_errno stdio_errno, wasi_fd **out) {
    wasi_errno e = lookup_fd(ctx, fd, rights, read_only, out);
    if (e == WASI_ESUCCESS && (is_stdio(*out) || (*out)->host_fd < 0)) e = stdio_errno;
    return e;
}

/* ---- filestat ------------------------------------------------------------- */

/* witx "timestamp": u64 nanoseconds since the epoch; earlier times clamp
 * to 0 and far-future ones saturate instead of wrapping. */
static uint64_t to_timestamp(struct timespec ts) {
    if (ts.tv_sec < 0) return 0;
    uint64_t sec = (uint64_t)ts.tv_sec;
    if (sec > (UINT64_MAX - 999999999u) / 1000000000u) return UINT64_MAX;
    return sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* witx "filetype"; FIFOs are reported as stream sockets, as uvwasi does. */
static uint8_t filetype_of_mode(mode_t mode) {
    if (S_ISREG(mode)) return WASI_FILETYPE_REGULAR_FILE;
    if (S_ISDIR(mode)) return WASI_FILETYPE_DIRECTORY;
    if (S_ISCHR(mode)) return WASI_FILETYPE_CHARACTER_DEVICE;
    if (S_ISLNK(mode)) return WASI_FILETYPE_SYMBOLIC_LINK;
    if (S_ISSOCK(mode) || S_ISFIFO(mode)) return WASI_FILETYPE_SOCKET_STREAM;
    if (S_ISBLK(mode)) return WASI_FILETYPE_BLOCK_DEVICE;
    return WASI_FILETYPE_UNKNOWN;
}

/* witx "filestat" (64 bytes): dev u64 @0, ino u64 @8, filetype u8 @16
 * (+7 padding), nlink u64 @24, size u64 @32, atim @40, mtim @48, ctim @56.
 * The padding is zeroed so no stale guest bytes look meaningful. */
static void put_filestat(guest_mem m, uint32_t p, const struct stat *st) {
    memset(m.base + p, 0, FILESTAT_SIZE);
    put_u64(m, p + 0, (uint64_t)st->st_dev);
    put_u64(m, p + 8, (uint64_t)st->st_ino);
    m.base[p + 16] = filetype_of_mode(st->st_mode);
    put_u64(m, p + 24, (uint64_t)st->st_nlink);
    put_u64(m, p + 32, st->st_size < 0 ? 0 : (uint64_t)st->st_size);
    put_u64(m, p + 40, to_timestamp(st->st_atim));
    put_u64(m, p + 48, to_timestamp(st->st_mtim));
    put_u64(m, p + 56, to_timestamp(st->st_ctim));
}

/* The in-memory stdio pipes: one link, no size, no times. */
static void put_stdio_filestat(guest_mem m, uint32_t p) {
    memset(m.base + p, 0, FILESTAT_SIZE);
    /* Same as fd_fdstat_get (fd.c): a stream, so isatty() stays false. */
    m.base[p + 16] = WASI_FILETYPE_SOCKET_STREAM;
    put_u64(m, p + 24, 1);
}

/* fst_flags -> utimensat times. ATIM with ATIM_NOW (or MTIM with
 * MTIM_NOW) is contradictory: EINVAL, like uvwasi; unknown bits too. */
static wasi_errno times_from_flags(uint64_t atim, uint64_t mtim, uint32_t fst,
                                   struct timespec ts[2]) {
    if (fst & ~(WASI_FST_ATIM | WASI_FST_ATIM_NOW | WASI_FST_MTIM | WASI_FST_MTIM_NOW))
        return WASI_EINVAL;
    if ((fst & WASI_FST_ATIM) && (fst & WASI_FST_ATIM_NOW)) return WASI_EINVAL;
    if ((fst & WASI_FST_MTIM) && (fst & WASI_FST_MTIM_NOW)) return WASI_EINVAL;
    const uint64_t stamps[2] = {atim, mtim};
    const uint32_t set[2] = {WASI_FST_ATIM, WASI_FST_MTIM};
    const uint32_t now[2] = {WASI_FST_ATIM_NOW, WASI_FST_MTIM_NOW};
    for (int i = 0; i < 2; i++) {
        ts[i].tv_sec = 0;
        if (fst & now[i]) {
            ts[i].tv_nsec = UTIME_NOW;
        } else if (fst & set[i]) {
            ts[i].tv_sec = (time_t)(stamps[i] / 1000000000u);
            ts[i].tv_nsec = (long)(stamps[i] % 1000000000u);
        } else {
            ts[i].tv_nsec = UTIME_OMIT;
        }
    }
    return WASI_ESUCCESS;
}

/* ---- path_open ------------------------------------------------------------ */

typedef struct open_request {
    uint32_t dirfd, lookup, path_ptr, path_len, oflags, fdflags, fd_ptr;
    uint64_t rights_base, rights_inheriting;
} open_request;

static wasi_errno check_open_flags(const open_request *r) {
    if (r->lookup & ~WASI_LOOKUP_SYMLINK_FOLLOW) return WASI_EINVAL;
    if (r->oflags & ~WASI_O_ALL) return WASI_EINVAL;
    if (r->fdflags & ~WASI_FDFLAGS_ALL) return WASI_EINVAL;
    /* Create-a-directory is path_create_directory; Linux >= 6.4 refuses
     * O_CREAT|O_DIRECTORY too, older kernels would create a regular file. */
    if ((r->oflags & WASI_O_CREAT) && (r->oflags & WASI_O_DIRECTORY)) return WASI_EINVAL;
    return WASI_ESUCCESS;
}

/* Rights on the directory needed for this open (witx path_open). */
static uint64_t open_needed_rights(const open_request *r) {
    uint64_t need = WASI_RIGHT_PATH_OPEN;
    if (r->oflags & WASI_O_CREAT) need |= WASI_RIGHT_PATH_CREATE_FILE;
    if (r->oflags & WASI_O_TRUNC) need |= WASI_RIGHT_PATH_FILESTAT_SET_SIZE;
    return need;
}

/* Would this open modify anything? On a read-only directory it is refused
 * before the host sees it. Linux truncates even with O_RDONLY|O_TRUNC, so
 * TRUNC counts however the file is opened. */
static bool open_mutates(const open_request *r) {
    return (r->oflags & (WASI_O_CREAT | WASI_O_TRUNC)) || (r->fdflags & WASI_FDFLAG_APPEND) ||
           (r->rights_base & RIGHTS_WRITE_INTENT);
}

static int host_open_flags(const open_request *r, uint64_t base, bool read_only) {
    bool write = !read_only && (base & RIGHTS_WRITE_INTENT) && !(r->oflags & WASI_O_DIRECTORY);
    bool read = (base & RIGHTS_READ) || !write;
    /* O_NONBLOCK during the open itself: a FIFO planted in the preopen would
     * otherwise block the host thread in open(2) forever; the flag is
     * cleared again afterwards unless the guest asked for it. */
    int flags = O_NOCTTY | O_NONBLOCK | (read && write ? O_RDWR : write ? O_WRONLY : O_RDONLY);
    if (r->oflags & WASI_O_CREAT) flags |= O_CREAT;
    if (r->oflags & WASI_O_DIRECTORY) flags |= O_DIRECTORY;
    if (r->oflags & WASI_O_EXCL) flags |= O_EXCL;
    if (r->oflags & WASI_O_TRUNC) flags |= O_TRUNC;
    if (r->fdflags & WASI_FDFLAG_APPEND) flags |= O_APPEND;
    if (r->fdflags & WASI_FDFLAG_DSYNC) flags |= O_DSYNC;
    if (r->fdflags & WASI_FDFLAG_RSYNC) flags |= O_RSYNC;
    if (r->fdflags & WASI_FDFLAG_SYNC) flags |= O_SYNC;
    return flags;
}

/* After the open: restore blocking mode and learn what was opened. */
static wasi_errno finish_open(int hfd, const open_request *r, wasi_fd_kind *kind) {
    if (!(r->fdflags & WASI_FDFLAG_NONBLOCK)) {
        int fl = fcntl(hfd, F_GETFL);
        if (fl < 0 || fcntl(hfd, F_SETFL, fl & ~O_NONBLOCK) < 0) return host_error();
    }
    struct stat st;
    if (fstat(hfd, &st) < 0) return host_error();
    *kind = S_ISDIR(st.st_mode) ? WASI_FD_DIR : WASI_FD_FILE;
    return WASI_ESUCCESS;
}

static wasi_errno do_path_open(wasi_ctx *ctx, al_caller *caller, const open_request *r) {
    wasi_fd *dir;
    wasi_errno e = lookup_dir(ctx, r->dirfd, open_needed_rights(r), open_mutates(r), &dir);
    if (e != WASI_ESUCCESS) return e;
    guest_mem mem;
    if (!guest_memory(caller, &mem) || !guest_range(mem, r->fd_ptr, 4)) return WASI_EFAULT;
    if ((e = check_open_flags(r)) != WASI_ESUCCESS) return e;
    wasi_path path;
    if ((e = path_from_guest(mem, r->path_ptr, r->path_len, &path)) != WASI_ESUCCESS) return e;

    wasi_fd entry = {
        .kind = WASI_FD_FILE, .host_fd = -1, .read_only = dir->read_only, .preopen = -1,
        .fdflags = (uint16_t)r->fdflags,
        .rights_base = r->rights_base & dir->rights_inheriting,
        .rights_inheriting = r->rights_inheriting & dir->rights_inheriting,
    };
    if (entry.read_only) {
        entry.rights_base &= ~RIGHTS_MUTATING;
        entry.rights_inheriting &= ~RIGHTS_MUTATING;
    }
    int flags = host_open_flags(r, entry.rights_base, entry.read_only);
    bool follow = r->lookup & WASI_LOOKUP_SYMLINK_FOLLOW;
    e = path_open_beneath(dir->host_fd, path.buf, flags, 0666, follow, &entry.host_fd);
    if (e != WASI_ESUCCESS) return e;
    if ((e = finish_open(entry.host_fd, r, &entry.kind)) != WASI_ESUCCESS) {
        close(entry.host_fd);
        return e;
    }
    int64_t fd = wasi_fd_install(ctx, &entry);
    if (fd < 0) {
        close(entry.host_fd);
        return WASI_EMFILE;
    }
    put_u32(mem, r->fd_ptr, (uint32_t)fd);
    return WASI_ESUCCESS;
}

/* path_open(fd, dirflags, path, path_len, oflags, rights_base: i64,
 *           rights_inheriting: i64, fdflags, opened_fd_ptr) */
al_trap_kind wasi_path_open(void *env, al_caller *caller, const al_value *args, al_value *results) {
    open_request r = {
        .dirfd = ARG_U32(0), .lookup = ARG_U32(1), .path_ptr = ARG_U32(2),
        .path_len = ARG_U32(3), .oflags = ARG_U32(4), .rights_base = ARG_U64(5),
        .rights_inheriting = ARG_U64(6), .fdflags = ARG_U32(7), .fd_ptr = ARG_U32(8),
    };
    return wasi_return(results, do_path_open(env, caller, &r));
}

/* ---- the start of every other path_* call ---------------------------------- */

/* The base directory (EBADF, EROFS, ENOTCAPABLE, ENOTDIR) and the guest
 * memory (EFAULT), in the documented order. */
static wasi_errno begin_path_call(wasi_ctx *ctx, al_caller *caller, uint32_t fd, uint64_t rights,
                                  bool mutates, wasi_fd **dir, guest_mem *mem) {
    wasi_errno e = lookup_dir(ctx, fd, rights, mutates, dir);
    if (e == WASI_ESUCCESS && !guest_memory(caller, mem)) e = WASI_EFAULT;
    return e;
}

/* Copy the guest path and open its parent beneath dir. parent->fd is -1 or
 * owned by the caller (path_parent_close) whatever the result. */
static wasi_errno resolve_target(const wasi_fd *dir, guest_mem mem, uint32_t ptr, uint32_t len,
                                 wasi_path *path, wasi_parent *parent) {
    parent->fd = -1;
    wasi_errno e = path_from_guest(mem, ptr, len, path);
    if (e == WASI_ESUCCESS) e = path_resolve_parent(dir->host_fd, path, parent);
    return e;
}

/* lstat of the final name, never following it. */
static wasi_errno stat_name(const wasi_parent *p, struct stat *st) {
    if (fstatat(p->fd, p->name, st, AT_SYMLINK_NOFOLLOW) < 0) return host_error();
    return WASI_ESUCCESS;
}

/* "name/" as an existing object (unlink, rename and link sources) must be a
 * directory; a symlink is not one here: following it is exactly what
 * stripping the slash avoids. */
static wasi_errno require_dir(const wasi_parent *p) {
    struct stat st;
    wasi_errno e = stat_name(p, &st);
    if (e == WASI_ESUCCESS && !S_ISDIR(st.st_mode)) e = WASI_ENOTDIR;
    return e;
}

/* "name/" as the new name of a link or symlink: Linux says EEXIST when
 * something is there and ENOENT when not (no non-directory can be made). */
static wasi_errno new_name_with_slash(const wasi_parent *p) {
    struct stat st;
    return stat_name(p, &st) == WASI_ESUCCESS ? WASI_EEXIST : WASI_ENOENT;
}

/* ---- mkdir, rmdir, unlink: one name in one directory ----------------------- */

typedef wasi_errno (*name_op)(const wasi_parent *p);

/* (fd, path, path_len) -> op on the path's (parent, name). */
static wasi_errno on_name(wasi_ctx *ctx, al_caller *caller, const al_value *args, uint64_t right,
                          name_op op) {
    wasi_fd *dir;
    guest_mem mem;
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), right, true, &dir, &mem);
    if (e != WASI_ESUCCESS) return e;
    wasi_path path;
    wasi_parent parent;
    e = resolve_target(dir, mem, ARG_U32(1), ARG_U32(2), &path, &parent);
    if (e == WASI_ESUCCESS) e = op(&parent);
    path_parent_close(&parent);
    return e;
}

static wasi_errno make_dir(const wasi_parent *p) {
    return mkdirat(p->fd, p->name, 0777) < 0 ? host_error() : WASI_ESUCCESS;
}

/* A final "." or ".." became name "." (path.c), and rmdir(".") is EINVAL:
 * the directory fd itself, a preopen root in particular, is never removed. */
static wasi_errno remove_dir(const wasi_parent *p) {
    /* rmdir("a/b/..") names a's parent-to-be, which still holds b: POSIX and
     * Linux say ENOTEMPTY (removing "." itself is EINVAL, from the kernel). */
    if (p->final_dotdot) return WASI_ENOTEMPTY;
    return unlinkat(p->fd, p->name, AT_REMOVEDIR) < 0 ? host_error() : WASI_ESUCCESS;
}

/* unlink("x/") is EISDIR for a directory and ENOTDIR for anything else. */
static wasi_errno unlink_file(const wasi_parent *p) {
    if (p->trailing_slash) {
        wasi_errno e = require_dir(p);
        return e == WASI_ESUCCESS ? WASI_EISDIR : e;
    }
    return unlinkat(p->fd, p->name, 0) < 0 ? host_error() : WASI_ESUCCESS;
}

/* path_create_directory(fd, path, path_len) */
al_trap_kind wasi_path_create_directory(void *env, al_caller *caller, const al_value *args,
                                        al_value *results) {
    return wasi_return(results,
                       on_name(env, caller, args, WASI_RIGHT_PATH_CREATE_DIRECTORY, make_dir));
}

/* path_remove_directory(fd, path, path_len) */
al_trap_kind wasi_path_remove_directory(void *env, al_caller *caller, const al_value *args,
                                        al_value *results) {
    return wasi_return(results,
                       on_name(env, caller, args, WASI_RIGHT_PATH_REMOVE_DIRECTORY, remove_dir));
}

/* path_unlink_file(fd, path, path_len) */
al_trap_kind wasi_path_unlink_file(void *env, al_caller *caller, const al_value *args,
                                   al_value *results) {
    return wasi_return(results,
                       on_name(env, caller, args, WASI_RIGHT_PATH_UNLINK_FILE, unlink_file));
}

/* ---- path_rename ----------------------------------------------------------- */

static wasi_errno rename_names(const wasi_parent *from, const wasi_parent *to) {
    if (from->trailing_slash || to->trailing_slash) {
        wasi_errno e = require_dir(from);
        if (e != WASI_ESUCCESS) return e;
    }
    /* renameat never follows either final component. */
    if (renameat(from->fd, from->name, to->fd, to->name) < 0) return host_error();
    return WASI_ESUCCESS;
}

static wasi_errno do_rename(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    wasi_fd *from_dir, *to_dir;
    guest_mem mem;
    /* Both ends must be writable: moving an entry out of (or into) a
     * read-only tree is a mutation of it. */
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), WASI_RIGHT_PATH_RENAME_SOURCE, true,
                                   &from_dir, &mem);
    if (e == WASI_ESUCCESS)
        e = begin_path_call(ctx, caller, ARG_U32(3), WASI_RIGHT_PATH_RENAME_TARGET, true,
                            &to_dir, &mem);
    if (e != WASI_ESUCCESS) return e;
    wasi_path from_path, to_path;
    wasi_parent from, to = {.fd = -1};
    e = resolve_target(from_dir, mem, ARG_U32(1), ARG_U32(2), &from_path, &from);
    if (e == WASI_ESUCCESS) e = resolve_target(to_dir, mem, ARG_U32(4), ARG_U32(5), &to_path, &to);
    if (e == WASI_ESUCCESS) e = rename_names(&from, &to);
    path_parent_close(&from);
    path_parent_close(&to);
    return e;
}

/* path_rename(fd, old_path, old_path_len, new_fd, new_path, new_path_len) */
al_trap_kind wasi_path_rename(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    return wasi_return(results, do_rename(env, caller, args));
}

/* ---- path_symlink ---------------------------------------------------------- */

/* The link's contents are guest data that outlive the run: host tools (an
 * orchestrator collecting outputs, a backup, `cp -r`) may follow the link
 * later without openat2's protection. So an absolute target is refused
 * (EPERM, as node's uvwasi does), and so is a relative one that climbs above
 * the directory fd when read from the link's own place, counted lexically
 * (ENOTCAPABLE). This is defence in depth, not the boundary: a later rename
 * can move a relative link until it points elsewhere. The boundary is that
 * the guest can never follow a link out (RESOLVE_BENEATH), and host
 * consumers must not follow symlinks found in a preopen. */
static wasi_errno check_symlink_target(const wasi_path *link_target, const wasi_path *new_path) {
    if (link_target->len > 0 && link_target->buf[0] == '/') return WASI_EPERM;
    long depth = path_lexical_parent_depth(new_path->buf, new_path->len);
    if (path_target_escapes(link_target->buf, link_target->len, depth)) return WASI_ENOTCAPABLE;
    return WASI_ESUCCESS;
}

static wasi_errno make_symlink(const wasi_path *link_target, const wasi_parent *p) {
    if (p->trailing_slash) return new_name_with_slash(p);
    if (symlinkat(link_target->buf, p->fd, p->name) < 0) return host_error();
    return WASI_ESUCCESS;
}

static wasi_errno do_symlink(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    wasi_fd *dir;
    guest_mem mem;
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(2), WASI_RIGHT_PATH_SYMLINK, true, &dir,
                                   &mem);
    if (e != WASI_ESUCCESS) return e;
    wasi_path link_target, path;
    wasi_parent parent = {.fd = -1};
    e = path_bytes_from_guest(mem, ARG_U32(0), ARG_U32(1), &link_target);
    if (e == WASI_ESUCCESS) e = path_from_guest(mem, ARG_U32(3), ARG_U32(4), &path);
    if (e == WASI_ESUCCESS) e = check_symlink_target(&link_target, &path); /* before the split */
    if (e == WASI_ESUCCESS) e = path_resolve_parent(dir->host_fd, &path, &parent);
    if (e == WASI_ESUCCESS) e = make_symlink(&link_target, &parent);
    path_parent_close(&parent);
    return e;
}

/* path_symlink(old_path, old_path_len, fd, new_path, new_path_len) */
al_trap_kind wasi_path_symlink(void *env, al_caller *caller, const al_value *args,
                               al_value *results) {
    return wasi_return(results, do_symlink(env, caller, args));
}

/* ---- path_link ------------------------------------------------------------- */

/* link with symlink_follow: the kernel's AT_SYMLINK_FOLLOW would follow the
 * final symlink outside RESOLVE_BENEATH (node 20 hard-links /etc/passwd
 * through a symlink to /etc this way). So the source is resolved beneath
 * with openat2(O_PATH), following, and the link made to that exact inode:
 * AT_EMPTY_PATH, or, where that needs CAP_DAC_READ_SEARCH (kernels before
 * 6.10 say ENOENT), the fd's /proc/self/fd magic link, which can only name
 * the same inode. */
static wasi_errno link_followed(int src_dirfd, const char *src, const wasi_parent *to) {
    int sfd;
    wasi_errno e = path_open_beneath(src_dirfd, src, O_PATH, 0, true, &sfd);
    if (e != WASI_ESUCCESS) return e;
    if (linkat(sfd, "", to->fd, to->name, AT_EMPTY_PATH) < 0) {
        int err = errno;
        e = wasi_errno_from_host(err);
        if (err == ENOENT) {
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", sfd);
            e = linkat(AT_FDCWD, proc, to->fd, to->name, AT_SYMLINK_FOLLOW) < 0 ? host_error()
                                                                              : WASI_ESUCCESS;
        }
    }
    close(sfd);
    return e;
}

/* Without symlink_follow: link the final name itself (a symlink stays a
 * symlink); linkat without AT_SYMLINK_FOLLOW never follows it. */
static wasi_errno link_unfollowed(int src_dirfd, wasi_path *src, const wasi_parent *to) {
    wasi_parent from;
    wasi_errno e = path_resolve_parent(src_dirfd, src, &from);
    if (e == WASI_ESUCCESS && from.trailing_slash) {
        e = require_dir(&from);
        if (e == WASI_ESUCCESS) e = WASI_EPERM; /* no hard links to directories */
    } else if (e == WASI_ESUCCESS && linkat(from.fd, from.name, to->fd, to->name, 0) < 0) {
        e = host_error();
    }
    path_parent_close(&from);
    return e;
}

static wasi_errno link_names(int src_dirfd, uint32_t lookup, wasi_path *src,
                             const wasi_parent *to) {
    if (to->trailing_slash) return new_name_with_slash(to);
    if (lookup & WASI_LOOKUP_SYMLINK_FOLLOW) return link_followed(src_dirfd, src->buf, to);
    return link_unfollowed(src_dirfd, src, to);
}

static wasi_errno do_link(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t lookup = ARG_U32(1);
    wasi_fd *src_dir, *dst_dir;
    guest_mem mem;
    /* Both ends must be writable: a hard link from a read-only tree into a
     * writable one would make read-only data writable through the link. */
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), WASI_RIGHT_PATH_LINK_SOURCE, true,
                                   &src_dir, &mem);
    if (e == WASI_ESUCCESS)
        e = begin_path_call(ctx, caller, ARG_U32(4), WASI_RIGHT_PATH_LINK_TARGET, true, &dst_dir,
                            &mem);
    if (e == WASI_ESUCCESS && (lookup & ~WASI_LOOKUP_SYMLINK_FOLLOW)) e = WASI_EINVAL;
    if (e != WASI_ESUCCESS) return e;
    wasi_path src, dst;
    wasi_parent to = {.fd = -1};
    e = path_from_guest(mem, ARG_U32(2), ARG_U32(3), &src);
    if (e == WASI_ESUCCESS) e = resolve_target(dst_dir, mem, ARG_U32(5), ARG_U32(6), &dst, &to);
    if (e == WASI_ESUCCESS) e = link_names(src_dir->host_fd, lookup, &src, &to);
    path_parent_close(&to);
    return e;
}

/* path_link(old_fd, old_flags, old_path, old_path_len, new_fd, new_path,
 *           new_path_len) */
al_trap_kind wasi_path_link(void *env, al_caller *caller, const al_value *args,
                            al_value *results) {
    return wasi_return(results, do_link(env, caller, args));
}

/* ---- stat, set-times, readlink: the object a path names -------------------- */

/* Open the object itself with O_PATH, following the final symlink or not,
 * for fstat/utimensat/readlinkat on the fd: one openat2 walk, no second
 * lookup by name that a swapped-in symlink could redirect. */
static wasi_errno open_object(const wasi_fd *dir, guest_mem mem, uint32_t lookup, uint32_t ptr,
                              uint32_t len, int *out) {
    if (lookup & ~WASI_LOOKUP_SYMLINK_FOLLOW) return WASI_EINVAL;
    wasi_path path;
    wasi_errno e = path_from_guest(mem, ptr, len, &path);
    if (e != WASI_ESUCCESS) return e;
    return path_open_beneath(dir->host_fd, path.buf, O_PATH, 0,
                             lookup & WASI_LOOKUP_SYMLINK_FOLLOW, out);
}

static wasi_errno do_path_filestat_get(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t buf = ARG_U32(4);
    wasi_fd *dir;
    guest_mem mem;
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), WASI_RIGHT_PATH_FILESTAT_GET, false,
                                   &dir, &mem);
    if (e != WASI_ESUCCESS) return e;
    if (!guest_range(mem, buf, FILESTAT_SIZE)) return WASI_EFAULT;
    int ofd;
    if ((e = open_object(dir, mem, ARG_U32(1), ARG_U32(2), ARG_U32(3), &ofd)) != WASI_ESUCCESS)
        return e;
    struct stat st;
    if (fstat(ofd, &st) < 0) e = host_error();
    else put_filestat(mem, buf, &st);
    close(ofd);
    return e;
}

/* path_filestat_get(fd, flags, path, path_len, filestat_ptr) */
al_trap_kind wasi_path_filestat_get(void *env, al_caller *caller, const al_value *args,
                                    al_value *results) {
    return wasi_return(results, do_path_filestat_get(env, caller, args));
}

static wasi_errno do_path_set_times(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    wasi_fd *dir;
    guest_mem mem;
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), WASI_RIGHT_PATH_FILESTAT_SET_TIMES,
                                   true, &dir, &mem);
    struct timespec ts[2];
    if (e == WASI_ESUCCESS) e = times_from_flags(ARG_U64(4), ARG_U64(5), ARG_U32(6), ts);
    int ofd;
    if (e == WASI_ESUCCESS) e = open_object(dir, mem, ARG_U32(1), ARG_U32(2), ARG_U32(3), &ofd);
    if (e != WASI_ESUCCESS) return e;
    /* AT_EMPTY_PATH on the O_PATH fd: exactly the object the walk found,
     * the symlink itself when it was not followed. */
    if (utimensat(ofd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) e = host_error();
    close(ofd);
    return e;
}

/* path_filestat_set_times(fd, flags, path, path_len, atim: i64, mtim: i64,
 *                         fst_flags) */
al_trap_kind wasi_path_filestat_set_times(void *env, al_caller *caller, const al_value *args,
                                          al_value *results) {
    return wasi_return(results, do_path_set_times(env, caller, args));
}

/* readlink into the guest buffer: a target longer than the buffer is cut
 * (POSIX readlink semantics, as the brief asks; uvwasi says ENOBUFS) and
 * bufused tells how much was written, so bufused == buf_len means "maybe
 * cut, retry larger". */
static wasi_errno read_link(int ofd, guest_mem mem, uint32_t buf, uint32_t buf_len,
                            uint32_t bufused_ptr) {
    struct stat st;
    if (fstat(ofd, &st) < 0) return host_error();
    if (!S_ISLNK(st.st_mode)) return WASI_EINVAL;
    char tmp[PATH_MAX];
    ssize_t n = readlinkat(ofd, "", tmp, sizeof tmp);
    if (n < 0) return host_error();
    size_t copy = (size_t)n < buf_len ? (size_t)n : buf_len;
    memcpy(mem.base + buf, tmp, copy);
    put_u32(mem, bufused_ptr, (uint32_t)copy);
    return WASI_ESUCCESS;
}

static wasi_errno do_readlink(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t buf = ARG_U32(3), buf_len = ARG_U32(4), bufused_ptr = ARG_U32(5);
    wasi_fd *dir;
    guest_mem mem;
    wasi_errno e = begin_path_call(ctx, caller, ARG_U32(0), WASI_RIGHT_PATH_READLINK, false,
                                   &dir, &mem);
    if (e != WASI_ESUCCESS) return e;
    if (!guest_range(mem, buf, buf_len) || !guest_range(mem, bufused_ptr, 4)) return WASI_EFAULT;
    int ofd;
    if ((e = open_object(dir, mem, 0, ARG_U32(1), ARG_U32(2), &ofd)) != WASI_ESUCCESS) return e;
    e = read_link(ofd, mem, buf, buf_len, bufused_ptr);
    close(ofd);
    return e;
}

/* path_readlink(fd, path, path_len, buf, buf_len, bufused_ptr) */
al_trap_kind wasi_path_readlink(void *env, al_caller *caller, const al_value *args,
                                al_value *results) {
    return wasi_return(results, do_readlink(env, caller, args));
}

/* ---- fd_readdir ----------------------------------------------------------- */

/* Cookies are entry indexes: cookie n resumes at the n-th entry (0 is the
 * start, witx dircookie), and d_next of entry n is n + 1, as node and
 * wasmtime do. The kernel's own offsets (getdents64 d_off) would be simpler
 * but are 63-bit hashes on ext4, and wasi-libc's telldir/seekdir carry
 * cookies in a 32-bit long: seekdir would land elsewhere.
 *
 * To avoid rescanning from the start on every call, the fd remembers the
 * kernel offsets of the two cookies a guest resumes from after a call: the
 * start of the last entry written (it may have been cut) and the end of it.
 * Any other cookie (seekdir to an old telldir, a made-up number) rescans
 * from the start, skipping that many entries: slower, never wrong. */
typedef struct dir_cursor {
    uint64_t cookie[2];
    off_t offset[2];
} dir_cursor;

/* fs.c owns wasi_fd.dir_state (a dir_cursor, or NULL); fd.c frees it with
 * the fd and moves it with fd_renumber. */
void fs_dir_state_free(void *dir_state) { free(dir_state); }

/* The fd's cursor, created on first use; NULL when out of memory (then
 * every call rescans). */
static dir_cursor *cursor_of(wasi_fd *dir) {
    if (!dir->dir_state) dir->dir_state = calloc(1, sizeof(dir_cursor));
    return dir->dir_state;
}

/* Where to start reading for `cookie`: a remembered offset, else the start
 * of the directory with *skip entries to pass over. */
static off_t cursor_find(const dir_cursor *cur, uint64_t cookie, uint64_t *skip) {
    *skip = 0;
    for (int i = 0; cur && cookie != 0 && i < 2; i++)
        if (cur->cookie[i] == cookie) return cur->offset[i];
    *skip = cookie;
    return 0;
}

static uint8_t filetype_of_dtype(int dirfd, const struct dirent64 *d) {
    switch (d->d_type) {
    case DT_REG: return WASI_FILETYPE_REGULAR_FILE;
    case DT_DIR: return WASI_FILETYPE_DIRECTORY;
    case DT_LNK: return WASI_FILETYPE_SYMBOLIC_LINK;
    case DT_CHR: return WASI_FILETYPE_CHARACTER_DEVICE;
    case DT_BLK: return WASI_FILETYPE_BLOCK_DEVICE;
    case DT_SOCK: case DT_FIFO: return WASI_FILETYPE_SOCKET_STREAM;
    default: break;
    }
    /* DT_UNKNOWN (some file systems): lstat the single name. "." and ".."
     * are directories; ".." of a preopen root is outside, so never stat it. */
    if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) return WASI_FILETYPE_DIRECTORY;
    struct stat st;
    if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) return WASI_FILETYPE_UNKNOWN;
    return filetype_of_mode(st.st_mode);
}

/* Append one witx "dirent" (d_next u64 @0, d_ino u64 @8, d_namlen u32 @16,
 * d_type u8 @20, 3 bytes padding) followed by the name, cut at the end of
 * the buffer: the spec's way of telling the guest to grow its buffer. */
static uint32_t put_dirent(guest_mem mem, uint32_t at, uint32_t room, uint64_t next, int dirfd,
                           const struct dirent64 *d) {
    uint8_t rec[DIRENT_SIZE + sizeof d->d_name];
    size_t namlen = strnlen(d->d_name, sizeof d->d_name);
    uint64_t ino = (uint64_t)d->d_ino;
    uint32_t n32 = (uint32_t)namlen;
    memset(rec, 0, DIRENT_SIZE);
    memcpy(rec + 0, &next, 8);
    memcpy(rec + 8, &ino, 8);
    memcpy(rec + 16, &n32, 4);
    rec[20] = filetype_of_dtype(dirfd, d);
    memcpy(rec + DIRENT_SIZE, d->d_name, namlen);
    size_t total = DIRENT_SIZE + namlen;
    uint32_t copy = total < room ? (uint32_t)total : room;
    memcpy(mem.base + at, rec, copy);
    return copy;
}

/* One fd_readdir call: the guest buffer, how far it is filled, and the
 * entry index and kernel offset reached. */
typedef struct readdir_call {
    int dirfd;
    guest_mem mem;
    uint32_t buf, buf_len, used;
    uint64_t index;  /* cookie of the next kernel entry */
    off_t offset;    /* kernel offset where that entry starts */
    uint64_t skip;   /* entries still to pass over before writing */
    dir_cursor *cur; /* may be NULL */
} readdir_call;

/* Take one kernel entry: pass over it, or write it (cut at the buffer's
 * end) and remember where it starts and ends. */
static void take_entry(readdir_call *c, const struct dirent64 *d) {
    if (c->skip > 0) {
        c->skip--;
    } else {
        c->used += put_dirent(c->mem, c->buf + c->used, c->buf_len - c->used, c->index + 1,
                              c->dirfd, d);
        if (c->cur) *c->cur = (dir_cursor){{c->index, c->index + 1}, {c->offset, d->d_off}};
    }
    c->index++;
    c->offset = d->d_off;
}

/* Fill the guest buffer from the cursor's position on; used < buf_len
 * means the end of the directory was reached (witx fd_readdir). */
static wasi_errno read_entries(readdir_call *c) {
    if (lseek(c->dirfd, c->offset, SEEK_SET) < 0) return host_error();
    _Alignas(struct dirent64) char kbuf[8192];
    while (c->used < c->buf_len) {
        ssize_t n = getdents64(c->dirfd, kbuf, sizeof kbuf);
        if (n < 0) return host_error();
        if (n == 0) break;
        for (ssize_t off = 0; off < n && c->used < c->buf_len;) {
            const struct dirent64 *d = (const struct dirent64 *)(kbuf + off);
            if (d->d_reclen == 0) return WASI_EIO; /* never from Linux; no endless loop */
            take_entry(c, d);
            off += d->d_reclen;
        }
    }
    return WASI_ESUCCESS;
}

static wasi_errno do_readdir(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint64_t cookie = ARG_U64(3);
    uint32_t bufused_ptr = ARG_U32(4);
    wasi_fd *dir;
    wasi_errno e = lookup_dir(ctx, ARG_U32(0), WASI_RIGHT_FD_READDIR, false, &dir);
    if (e != WASI_ESUCCESS) return e;
    readdir_call c = {.dirfd = dir->host_fd, .buf = ARG_U32(1), .buf_len = ARG_U32(2)};
    if (!guest_memory(caller, &c.mem) || !guest_range(c.mem, c.buf, c.buf_len) ||
        !guest_range(c.mem, bufused_ptr, 4))
        return WASI_EFAULT;
    c.cur = cursor_of(dir);
    c.offset = cursor_find(c.cur, cookie, &c.skip);
    c.index = cookie - c.skip;
    if ((e = read_entries(&c)) != WASI_ESUCCESS) return e;
    put_u32(c.mem, bufused_ptr, c.used);
    return WASI_ESUCCESS;
}

/* fd_readdir(fd, buf, buf_len, cookie: i64, bufused_ptr) */
al_trap_kind wasi_fd_readdir(void *env, al_caller *caller, const al_value *args,
                             al_value *results) {
    return wasi_return(results, do_readdir(env, caller, args));
}

/* ---- fd_filestat_* --------------------------------------------------------- */

static wasi_errno do_fd_filestat_get(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t buf = ARG_U32(1);
    wasi_fd *fd;
    wasi_errno e = lookup_fd(ctx, ARG_U32(0), WASI_RIGHT_FD_FILESTAT_GET, READS, &fd);
    if (e != WASI_ESUCCESS) return e;
    guest_mem mem;
    if (!guest_memory(caller, &mem) || !guest_range(mem, buf, FILESTAT_SIZE)) return WASI_EFAULT;
    if (is_stdio(fd) || fd->host_fd < 0) {
        put_stdio_filestat(mem, buf);
        return WASI_ESUCCESS;
    }
    struct stat st;
    if (fstat(fd->host_fd, &st) < 0) return host_error();
    put_filestat(mem, buf, &st);
    return WASI_ESUCCESS;
}

/* fd_filestat_get(fd, filestat_ptr) */
al_trap_kind wasi_fd_filestat_get(void *env, al_caller *caller, const al_value *args,
                                  al_value *results) {
    return wasi_return(results, do_fd_filestat_get(env, caller, args));
}

static wasi_errno do_fd_set_size(wasi_ctx *ctx, const al_value *args) {
    uint64_t size = ARG_U64(1);
    wasi_fd *fd;
    wasi_errno e = lookup_host_fd(ctx, ARG_U32(0), WASI_RIGHT_FD_FILESTAT_SET_SIZE, WASI_EBADF,
                                  WASI_EINVAL /* ftruncate on a pipe */, &fd);
    if (e != WASI_ESUCCESS) return e;
    if (size > (uint64_t)INT64_MAX) return WASI_EFBIG;
    if (ftruncate(fd->host_fd, (off_t)size) < 0) return host_error();
    return WASI_ESUCCESS;
}

/* fd_filestat_set_size(fd, size: i64) */
al_trap_kind wasi_fd_filestat_set_size(void *env, al_caller *caller, const al_value *args,
                                       al_value *results) {
    return wasi_return(results, do_fd_set_size(env, args));
}

static wasi_errno do_fd_set_times(wasi_ctx *ctx, const al_value *args) {
    wasi_fd *fd;
    wasi_errno e = lookup_fd(ctx, ARG_U32(0), WASI_RIGHT_FD_FILESTAT_SET_TIMES, WASI_EROFS, &fd);
    if (e == WASI_ESUCCESS && (is_stdio(fd) || fd->host_fd < 0)) e = WASI_ENOTSUP;
    struct timespec ts[2];
    if (e == WASI_ESUCCESS) e = times_from_flags(ARG_U64(1), ARG_U64(2), ARG_U32(3), ts);
    if (e == WASI_ESUCCESS && futimens(fd->host_fd, ts) < 0) e = host_error();
    return e;
}

/* fd_filestat_set_times(fd, atim: i64, mtim: i64, fst_flags) */
al_trap_kind wasi_fd_filestat_set_times(void *env, al_caller *caller, const al_value *args,
                                        al_value *results) {
    return wasi_return(results, do_fd_set_times(env, args));
}

/* ---- fd_prestat_* ---------------------------------------------------------- */

/* The preopen behind fd, or NULL (EBADF) when fd is not a preopen root:
 * wasi-libc enumerates preopens from fd 3 up until it sees EBADF. */
static const wasi_preopen *preopen_of(wasi_ctx *ctx, uint32_t fd) {
    const wasi_fd *entry = wasi_fd_get(ctx, fd);
    if (!entry || entry->preopen < 0 || (size_t)entry->preopen >= ctx->npreopens) return NULL;
    return &ctx->preopens[entry->preopen];
}

static wasi_errno do_prestat_get(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t buf = ARG_U32(1);
    const wasi_preopen *pre = preopen_of(ctx, ARG_U32(0));
    if (!pre) return WASI_EBADF;
    guest_mem mem;
    if (!guest_memory(caller, &mem) || !guest_range(mem, buf, PRESTAT_SIZE)) return WASI_EFAULT;
    /* witx "prestat": u8 tag (0 = dir) @0, padding, u32 pr_name_len @4. */
    memset(mem.base + buf, 0, PRESTAT_SIZE);
    put_u32(mem, buf + 4, (uint32_t)strlen(pre->guest_path));
    return WASI_ESUCCESS;
}

/* fd_prestat_get(fd, prestat_ptr) */
al_trap_kind wasi_fd_prestat_get(void *env, al_caller *caller, const al_value *args,
                                 al_value *results) {
    return wasi_return(results, do_prestat_get(env, caller, args));
}

static wasi_errno do_prestat_dir_name(wasi_ctx *ctx, al_caller *caller, const al_value *args) {
    uint32_t path = ARG_U32(1), path_len = ARG_U32(2);
    const wasi_preopen *pre = preopen_of(ctx, ARG_U32(0));
    if (!pre) return WASI_EBADF;
    guest_mem mem;
    if (!guest_memory(caller, &mem) || !guest_range(mem, path, path_len)) return WASI_EFAULT;
    size_t name_len = strlen(pre->guest_path);
    memcpy(mem.base + path, pre->guest_path, name_len < path_len ? name_len : path_len);
    return WASI_ESUCCESS;
}

/* fd_prestat_dir_name(fd, path, path_len) */
al_trap_kind wasi_fd_prestat_dir_name(void *env, al_caller *caller, const al_value *args,
                                      al_value *results) {
    return wasi_return(results, do_prestat_dir_name(env, caller, args));
}

/* ---- fd_advise, fd_allocate, fd_sync, fd_datasync -------------------------- */

/* offset/len are u64 in witx, off_t is signed. */
static bool fits_off_t(uint64_t offset, uint64_t len) {
    return offset <= (uint64_t)INT64_MAX && len <= (uint64_t)INT64_MAX;
}

static wasi_errno do_advise(wasi_ctx *ctx, const al_value *args) {
    uint64_t offset = ARG_U64(1), len = ARG_U64(2);
    uint32_t advice = ARG_U32(3);
    wasi_fd *fd;
    wasi_errno e = lookup_host_fd(ctx, ARG_U32(0), WASI_RIGHT_FD_ADVISE, READS,
                                  WASI_ESPIPE /* posix_fadvise on a pipe */, &fd);
    if (e != WASI_ESUCCESS) return e;
    static const int host_advice[WASI_ADVICE_MAX + 1] = {
        POSIX_FADV_NORMAL, POSIX_FADV_SEQUENTIAL, POSIX_FADV_RANDOM,
        POSIX_FADV_WILLNEED, POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE,
    };
    if (advice > WASI_ADVICE_MAX || !fits_off_t(offset, len)) return WASI_EINVAL;
    int rc = posix_fadvise(fd->host_fd, (off_t)offset, (off_t)len, host_advice[advice]);
    return rc ? wasi_errno_from_host(rc) : WASI_ESUCCESS;
}

/* fd_advise(fd, offset: i64, len: i64, advice) */
al_trap_kind wasi_fd_advise(void *env, al_caller *caller, const al_value *args,
                            al_value *results) {
    return wasi_return(results, do_advise(env, args));
}

static wasi_errno do_allocate(wasi_ctx *ctx, const al_value *args) {
    uint64_t offset = ARG_U64(1), len = ARG_U64(2);
    wasi_fd *fd;
    wasi_errno e = lookup_host_fd(ctx, ARG_U32(0), WASI_RIGHT_FD_ALLOCATE, WASI_EBADF,
                                  WASI_ESPIPE /* fallocate on a pipe */, &fd);
    if (e != WASI_ESUCCESS) return e;
    if (!fits_off_t(offset, len)) return WASI_EINVAL;
    if (offset + len > (uint64_t)INT64_MAX) return WASI_EFBIG;
    /* fallocate(2), not posix_fallocate(3): where the file system lacks
     * fallocate, glibc's emulation writes a byte per block over the whole
     * range in a loop the run's deadline cannot interrupt. */
    if (fallocate(fd->host_fd, 0, (off_t)offset, (off_t)len) < 0) return host_error();
    return WASI_ESUCCESS;
}

/* fd_allocate(fd, offset: i64, len: i64) */
al_trap_kind wasi_fd_allocate(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    return wasi_return(results, do_allocate(env, args));
}

static wasi_errno do_sync(wasi_ctx *ctx, uint32_t fdnum, uint64_t right, int (*sync_fn)(int)) {
    wasi_fd *fd;
    wasi_errno e = lookup_host_fd(ctx, fdnum, right, READS, WASI_EINVAL /* fsync on a pipe */, &fd);
    if (e != WASI_ESUCCESS) return e;
    if (sync_fn(fd->host_fd) < 0) return host_error();
    return WASI_ESUCCESS;
}

/* fd_sync(fd) */
al_trap_kind wasi_fd_sync(void *env, al_caller *caller, const al_value *args, al_value *results) {
    return wasi_return(results, do_sync(env, ARG_U32(0), WASI_RIGHT_FD_SYNC, fsync));
}

/* fd_datasync(fd) */
al_trap_kind wasi_fd_datasync(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    return wasi_return(results, do_sync(env, ARG_U32(0), WASI_RIGHT_FD_DATASYNC, fdatasync));
}
