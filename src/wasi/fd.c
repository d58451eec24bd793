/*
 * fd.c — the guest's file descriptor table and the descriptor-level WASI
 * functions: fd_read, fd_write, fd_pread, fd_pwrite, fd_seek, fd_tell,
 * fd_close, fd_renumber, fd_fdstat_get, fd_fdstat_set_flags,
 * fd_fdstat_set_rights; plus the host errno -> WASI errno mapping.
 *
 * Invariants:
 *   - A guest fd is an index into ctx->fds; the host never acts on a number
 *     the guest supplied except through wasi_fd_get, so a guest can only
 *     reach host descriptors the context opened for it (no "fd 7 happens to
 *     be the daemon's socket").
 *   - Rights only shrink (fd_fdstat_set_rights refuses to add any, witx) and
 *     every operation checks the right the witx names for it before touching
 *     the host; a missing right is errno::notcapable (witx "Extension:
 *     Capabilities insufficient"). Descriptors beneath a read-only preopen
 *     (read_only) refuse every write even if a right slipped through.
 *   - Every guest pointer is range-checked before use and every out-pointer
 *     before the operation runs, so a failed call has no side effect.
 *   - One read or write moves at most WASI_IO_MAX bytes through at most
 *     WASI_IOV_MAX vectors (Linux's own limits); larger requests are short
 *     reads/writes, which the guest must handle anyway (witx returns a size).
 *   - A read or write that could block (a FIFO or device in a granted
 *     directory) waits in slices that watch the run's deadline, so it cannot
 *     hold the host thread past the timeout. A host-fed stdin
 *     (wasi_config.stdin_read) blocks in the host's callback, which returns
 *     once the store is interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wasi_host.h"

/* Linux's MAX_RW_COUNT (INT_MAX rounded down to a page) and IOV_MAX. */
#define WASI_IO_MAX 0x7ffff000u
#define WASI_IOV_MAX 1024u

/* witx "iovec"/"ciovec": { buf: pointer u8, buf_len: size } = 8 bytes. */
#define WASI_IOVEC_SIZE 8u
/* witx "fdstat": filetype u8 @0, flags u16 @2, rights_base u64 @8,
 * rights_inheriting u64 @16; 24 bytes. */
#define WASI_FDSTAT_SIZE 24u

#define WASI_FDFLAGS_ALL 0x1fu
#define WASI_FDFLAGS_SYNCS (WASI_FDFLAG_DSYNC | WASI_FDFLAG_RSYNC | WASI_FDFLAG_SYNC)

/* ---- errno -------------------------------------------------------------- */

/* Every errno Linux defines, mapped to the WASI errno of the same meaning, or
 * to the nearest one for Linux-only codes. Unknown values become EIO rather
 * than leaking a host number the guest would misread. */
wasi_errno wasi_errno_from_host(int e) {
    switch (e) {
    case 0: return WASI_ESUCCESS;
    case E2BIG: return WASI_E2BIG;
    case EACCES: return WASI_EACCES;
    case EADDRINUSE: return WASI_EADDRINUSE;
    case EADDRNOTAVAIL: return WASI_EADDRNOTAVAIL;
    case EAFNOSUPPORT: return WASI_EAFNOSUPPORT;
    case EAGAIN: return WASI_EAGAIN; /* == EWOULDBLOCK */
    case EALREADY: return WASI_EALREADY;
    case EBADF: return WASI_EBADF;
    case EBADMSG: return WASI_EBADMSG;
    case EBUSY: return WASI_EBUSY;
    case ECANCELED: return WASI_ECANCELED;
    case ECHILD: return WASI_ECHILD;
    case ECONNABORTED: return WASI_ECONNABORTED;
    case ECONNREFUSED: return WASI_ECONNREFUSED;
    case ECONNRESET: return WASI_ECONNRESET;
    case EDEADLK: return WASI_EDEADLK; /* == EDEADLOCK */
    case EDESTADDRREQ: return WASI_EDESTADDRREQ;
    case EDOM: return WASI_EDOM;
    case EDQUOT: return WASI_EDQUOT;
    case EEXIST: return WASI_EEXIST;
    case EFAULT: return WASI_EFAULT;
    case EFBIG: return WASI_EFBIG;
    case EHOSTUNREACH: return WASI_EHOSTUNREACH;
    case EIDRM: return WASI_EIDRM;
    case EILSEQ: return WASI_EILSEQ;
    case EINPROGRESS: return WASI_EINPROGRESS;
    case EINTR: return WASI_EINTR;
    case EINVAL: return WASI_EINVAL;
    case EIO: return WASI_EIO;
    case EISCONN: return WASI_EISCONN;
    case EISDIR: return WASI_EISDIR;
    case ELOOP: return WASI_ELOOP;
    case EMFILE: return WASI_EMFILE;
    case EMLINK: return WASI_EMLINK;
    case EMSGSIZE: return WASI_EMSGSIZE;
    case EMULTIHOP: return WASI_EMULTIHOP;
    case ENAMETOOLONG: return WASI_ENAMETOOLONG;
    case ENETDOWN: return WASI_ENETDOWN;
    case ENETRESET: return WASI_ENETRESET;
    case ENETUNREACH: return WASI_ENETUNREACH;
    case ENFILE: return WASI_ENFILE;
    case ENOBUFS: return WASI_ENOBUFS;
    case ENODEV: return WASI_ENODEV;
    case ENOENT: return WASI_ENOENT;
    case ENOEXEC: return WASI_ENOEXEC;
    case ENOLCK: return WASI_ENOLCK;
    case ENOLINK: return WASI_ENOLINK;
    case ENOMEM: return WASI_ENOMEM;
    case ENOMSG: return WASI_ENOMSG;
    case ENOPROTOOPT: return WASI_ENOPROTOOPT;
    case ENOSPC: return WASI_ENOSPC;
    case ENOSYS: return WASI_ENOSYS;
    case ENOTCONN: return WASI_ENOTCONN;
    case ENOTDIR: return WASI_ENOTDIR;
    case ENOTEMPTY: return WASI_ENOTEMPTY;
    case ENOTRECOVERABLE: return WASI_ENOTRECOVERABLE;
    case ENOTSOCK: return WASI_ENOTSOCK;
    case ENOTSUP: return WASI_ENOTSUP; /* == EOPNOTSUPP on Linux */
#if defined(EOPNOTSUPP) && EOPNOTSUPP != ENOTSUP
    case EOPNOTSUPP: return WASI_ENOTSUP;
#endif
    case ENOTTY: return WASI_ENOTTY;
    case ENXIO: return WASI_ENXIO;
    case EOVERFLOW: return WASI_EOVERFLOW;
    case EOWNERDEAD: return WASI_EOWNERDEAD;
    case EPERM: return WASI_EPERM;
    case EPIPE: return WASI_EPIPE;
    case EPROTO: return WASI_EPROTO;
    case EPROTONOSUPPORT: return WASI_EPROTONOSUPPORT;
    case EPROTOTYPE: return WASI_EPROTOTYPE;
    case ERANGE: return WASI_ERANGE;
    case EROFS: return WASI_EROFS;
    case ESPIPE: return WASI_ESPIPE;
    case ESRCH: return WASI_ESRCH;
    case ESTALE: return WASI_ESTALE;
    case ETIMEDOUT: return WASI_ETIMEDOUT;
    case ETXTBSY: return WASI_ETXTBSY;
    case EXDEV: return WASI_EXDEV;
    /* Linux-only codes: the closest WASI meaning. */
#ifdef EHOSTDOWN
    case EHOSTDOWN: return WASI_EHOSTUNREACH;
#endif
#ifdef ESHUTDOWN
    case ESHUTDOWN: return WASI_EPIPE;
#endif
#ifdef ETOOMANYREFS
    case ETOOMANYREFS: return WASI_EMFILE;
#endif
#ifdef ESOCKTNOSUPPORT
    case ESOCKTNOSUPPORT: return WASI_EPROTONOSUPPORT;
#endif
#ifdef EPFNOSUPPORT
    case EPFNOSUPPORT: return WASI_EAFNOSUPPORT;
#endif
#ifdef ETIME
    case ETIME: return WASI_ETIMEDOUT;
#endif
#ifdef ENOSR
    case ENOSR: return WASI_ENOMEM;
#endif
#ifdef ENOSTR
    case ENOSTR: return WASI_EINVAL;
#endif
#ifdef ENODATA
    case ENODATA: return WASI_ENOMSG;
#endif
#ifdef EBADFD
    case EBADFD: return WASI_EBADF;
#endif
#ifdef ENOTBLK
    case ENOTBLK: return WASI_ENODEV;
#endif
#ifdef ENOMEDIUM
    case ENOMEDIUM: return WASI_ENODEV;
#endif
#ifdef EMEDIUMTYPE
    case EMEDIUMTYPE: return WASI_ENODEV;
#endif
#ifdef ENONET
    case ENONET: return WASI_ENETUNREACH;
#endif
#ifdef ENOPKG
    case ENOPKG: return WASI_ENOSYS;
#endif
#ifdef EUSERS
    case EUSERS: return WASI_EPERM;
#endif
#ifdef ENOTUNIQ
    case ENOTUNIQ: return WASI_EINVAL;
#endif
#ifdef ERESTART
    case ERESTART: return WASI_EINTR;
#endif
#ifdef ESTRPIPE
    case ESTRPIPE: return WASI_EPIPE;
#endif
#ifdef EISNAM
    case EISNAM: return WASI_EISDIR;
#endif
#ifdef ECHRNG
    case ECHRNG: return WASI_ERANGE;
#endif
#ifdef ELIBBAD
    case ELIBBAD: case ELIBACC: case ELIBSCN: case ELIBMAX: case ELIBEXEC:
        return WASI_ENOEXEC;
#endif
#ifdef EKEYEXPIRED
    case ENOKEY: case EKEYEXPIRED: case EKEYREVOKED: case EKEYREJECTED:
        return WASI_EACCES;
#endif
    default:
        /* EREMOTEIO, EUCLEAN, ECOMM, EHWPOISON, ERFKILL, EL2HLT, ... */
        return WASI_EIO;
    }
}

/* ---- the table ------------------------------------------------------------ */

static const wasi_fd free_entry = {.kind = WASI_FD_FREE, .host_fd = -1, .preopen = -1};

wasi_fd *wasi_fd_get(wasi_ctx *ctx, uint32_t fd) {
    if (fd >= ctx->nfds) return NULL;
    wasi_fd *f = &ctx->fds[fd];
    return f->kind == WASI_FD_FREE ? NULL : f;
}

static bool fds_grow(wasi_ctx *ctx) {
    uint32_t cap = ctx->fds_cap ? ctx->fds_cap * 2 : 8;
    if (cap > WASI_MAX_FDS) cap = WASI_MAX_FDS;
    wasi_fd *p = realloc(ctx->fds, cap * sizeof *p);
    if (!p) return false;
    for (uint32_t i = ctx->fds_cap; i < cap; i++) p[i] = free_entry;
    ctx->fds = p;
    ctx->fds_cap = cap;
    return true;
}

/* Lowest free slot, as POSIX open() does. -1 when the table is full (the
 * caller reports EMFILE and still owns entry->host_fd). May move ctx->fds:
 * pointers from wasi_fd_get are stale after it. */
int64_t wasi_fd_install(wasi_ctx *ctx, const wasi_fd *entry) {
    uint32_t slot = 0;
    while (slot < ctx->nfds && ctx->fds[slot].kind != WASI_FD_FREE) slot++;
    if (slot == ctx->nfds) {
        if (ctx->nfds >= WASI_MAX_FDS) return -1;
        if (ctx->nfds == ctx->fds_cap && !fds_grow(ctx)) return -1;
        ctx->nfds++;
    }
    ctx->fds[slot] = *entry;
    return slot;
}

void wasi_fd_release(wasi_fd *fd) {
    if (fd->host_fd >= 0) close(fd->host_fd); /* Linux frees the fd even on EINTR/EIO */
    if (fd->dir_state) fs_dir_state_free(fd->dir_state);
    *fd = free_entry;
}

/* ---- iovec arrays ----------------------------------------------------------- */

typedef struct host_iovs {
    struct iovec v[WASI_IOV_MAX];
    int n;
    size_t total;
} host_iovs;

/* Translate a guest (c)iovec array into host iovecs pointing into guest
 * memory. The array and each of the first WASI_IOV_MAX buffers must lie
 * inside memory (EFAULT otherwise: a buffer past the end would be a host
 * out-of-bounds access); later vectors are ignored and the total is clipped
 * at WASI_IO_MAX, making the call a short read/write. The array length is
 * multiplied in 64 bits: iovs_len * 8 cannot wrap to a small number. */
static wasi_errno iovs_load(guest_mem m, uint32_t iovs, uint32_t iovs_len, host_iovs *out) {
    out->n = 0;
    out->total = 0;
    if (!guest_range(m, iovs, (uint64_t)iovs_len * WASI_IOVEC_SIZE)) return WASI_EFAULT;
    uint32_t count = iovs_len < WASI_IOV_MAX ? iovs_len : WASI_IOV_MAX;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t buf = get_u32(m, iovs + i * WASI_IOVEC_SIZE);
        uint32_t len = get_u32(m, iovs + i * WASI_IOVEC_SIZE + 4);
        if (!guest_range(m, buf, len)) return WASI_EFAULT;
        size_t room = WASI_IO_MAX - out->total;
        size_t take = len < room ? len : room;
        if (take == 0) continue; /* also keeps NULL + 0 off a zero-page memory */
        out->v[out->n].iov_base = m.base + buf;
        out->v[out->n].iov_len = take;
        out->n++;
        out->total += take;
    }
    return WASI_ESUCCESS;
}

/* ---- read and write ---------------------------------------------------------- */

#define WAIT_SLICE_MS 10

/* Regular files and directories never block. Anything else (a FIFO whose
 * writer never writes, a terminal, a device) might block for ever; wait for
 * readiness in slices, and end the run with AL_TRAP_INTERRUPTED once the
 * deadline passed. A guest that set fdflags::nonblock gets EAGAIN instead. */
static al_trap_kind wait_ready(const wasi_ctx *ctx, const wasi_fd *f, bool write) {
    struct stat st;
    if (f->fdflags & WASI_FDFLAG_NONBLOCK) return AL_TRAP_NONE;
    if (fstat(f->host_fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return AL_TRAP_NONE; /* a failing fstat: the read/write reports the error */
    struct pollfd p = {.fd = f->host_fd, .events = write ? POLLOUT : POLLIN};
    for (;;) {
        if (wasi_deadline_passed(ctx)) return AL_TRAP_INTERRUPTED;
        if (poll(&p, 1, WAIT_SLICE_MS) != 0) return AL_TRAP_NONE; /* ready, hangup, error */
    }
}

static bool is_stdio(const wasi_fd *f) {
    return f->kind == WASI_FD_STDIN || f->kind == WASI_FD_STDOUT || f->kind == WASI_FD_STDERR;
}

static bool has_rights(const wasi_fd *f, uint64_t rights) {
    return (f->rights_base & rights) == rights;
}

/* May this descriptor be written? Rights first (witx), and the read_only
 * mark as a second line: a descriptor beneath a read-only grant must never
 * modify the host, whatever rights a bug elsewhere left on it. */
static bool may_write(const wasi_fd *f) {
    return has_rights(f, WASI_RIGHT_FD_WRITE) && !f->read_only;
}

/* The checks shared by fd_read/fd_write/fd_pread/fd_pwrite: descriptor
 * (EBADF), positioning a pipe (ESPIPE, before rights: the stdio pipes have
 * no fd_seek right, and "invalid seek" is the answer POSIX programs expect),
 * rights (witx: fd_pread needs fd_read + fd_seek, fd_pwrite fd_write +
 * fd_seek), then the kind (a directory is not read or written as a file).
 * Guest pointers are checked after these (node checks them first). */
static wasi_errno io_fd(wasi_ctx *ctx, uint32_t fd, bool write, bool positioned, wasi_fd **out) {
    wasi_fd *f = wasi_fd_get(ctx, fd);
    if (!f) return WASI_EBADF;
    if (positioned && is_stdio(f)) return WASI_ESPIPE;
    uint64_t need = (write ? WASI_RIGHT_FD_WRITE : WASI_RIGHT_FD_READ) |
                    (positioned ? WASI_RIGHT_FD_SEEK : 0);
    if (!has_rights(f, need) || (write && !may_write(f))) return WASI_ENOTCAPABLE;
    if (f->kind == WASI_FD_DIR) return WASI_EISDIR;
    *out = f;
    return WASI_ESUCCESS;
}

/* offset is a witx filesize (u64); the host takes a signed off_t. */
static bool offset_ok(uint64_t offset) { return offset <= (uint64_t)INT64_MAX; }

static wasi_errno host_result(ssize_t n, uint32_t *done) {
    if (n < 0) return wasi_errno_from_host(errno);
    *done = (uint32_t)n; /* n <= WASI_IO_MAX < 2^32 */
    return WASI_ESUCCESS;
}

static wasi_errno read_into(wasi_ctx *ctx, wasi_fd *f, const host_iovs *io, bool positioned,
                            uint64_t offset, uint32_t *done) {
    if (f->kind == WASI_FD_STDIN) {
        size_t n = 0;
        for (int i = 0; i < io->n; i++) {
            size_t got = wasi_stdin_read(ctx, io->v[i].iov_base, io->v[i].iov_len);
            n += got;
            if (got < io->v[i].iov_len) break;
        }
        *done = (uint32_t)n;
        return WASI_ESUCCESS;
    }
    if (f->kind != WASI_FD_FILE) return WASI_EBADF;
    if (io->n == 0) {
        *done = 0;
        return WASI_ESUCCESS;
    }
    ssize_t n;
    do {
        n = positioned ? preadv(f->host_fd, io->v, io->n, (off_t)offset)
                       : readv(f->host_fd, io->v, io->n);
    } while (n < 0 && errno == EINTR);
    return host_result(n, done);
}

static wasi_errno write_from(wasi_ctx *ctx, wasi_fd *f, const host_iovs *io, bool positioned,
                             uint64_t offset, uint32_t *done) {
    if (f->kind == WASI_FD_STDOUT || f->kind == WASI_FD_STDERR) {
        wasi_out *out = f->kind == WASI_FD_STDOUT ? &ctx->out : &ctx->err;
        for (int i = 0; i < io->n; i++) wasi_out_append(out, io->v[i].iov_base, io->v[i].iov_len);
        /* Everything "written": dropped bytes are the cap's business, and a
         * short count would make the guest retry forever. */
        *done = (uint32_t)io->total;
        return WASI_ESUCCESS;
    }
    if (f->kind != WASI_FD_FILE) return WASI_EBADF;
    if (io->n == 0) {
        *done = 0;
        return WASI_ESUCCESS;
    }
    ssize_t n;
    do {
        /* writev honours the host fd's O_APPEND (set by path_open or
         * fd_fdstat_set_flags), atomically like POSIX. */
        n = positioned ? pwritev(f->host_fd, io->v, io->n, (off_t)offset)
                       : writev(f->host_fd, io->v, io->n);
    } while (n < 0 && errno == EINTR);
    return host_result(n, done);
}

/* Drop the first n transferred bytes from io; false when nothing is left. */
static bool iovs_advance(host_iovs *io, size_t n) {
    int i = 0;
    while (i < io->n && n >= io->v[i].iov_len) n -= io->v[i++].iov_len;
    if (i == io->n) return false;
    io->v[i].iov_base = (uint8_t *)io->v[i].iov_base + n;
    io->v[i].iov_len -= n;
    memmove(io->v, io->v + i, (size_t)(io->n - i) * sizeof io->v[0]);
    io->n -= i;
    io->total = 0;
    for (int k = 0; k < io->n; k++) io->total += io->v[k].iov_len;
    return true;
}

/* A blocking guest fd on a host file that can block (FIFO, device, socket). */
static bool blocks(const wasi_fd *f) {
    struct stat st;
    if (f->fdflags & WASI_FDFLAG_NONBLOCK) return false;
    return fstat(f->host_fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* I/O on a stream that can block: wait for readiness in slices (deadline
 * checked), then transfer with the host fd non-blocking, so a write larger
 * than the pipe's free space returns short instead of sleeping past the
 * deadline inside the kernel (a reader that never reads must not hang us). */
static wasi_errno stream_io(wasi_ctx *ctx, wasi_fd *f, bool write, host_iovs *io,
                            uint32_t *done, al_trap_kind *trap) {
    *done = 0;
    for (;;) {
        *trap = wait_ready(ctx, f, write);
        if (*trap != AL_TRAP_NONE) return WASI_ESUCCESS;
        int flags = fcntl(f->host_fd, F_GETFL);
        if (flags < 0) return wasi_errno_from_host(errno);
        fcntl(f->host_fd, F_SETFL, flags | O_NONBLOCK);
        uint32_t n = 0;
        wasi_errno e = write ? write_from(ctx, f, io, false, 0, &n)
                             : read_into(ctx, f, io, false, 0, &n);
        fcntl(f->host_fd, F_SETFL, flags);
        if (e == WASI_EAGAIN) continue; /* readiness was lost to a race: wait again */
        if (e) return *done ? WASI_ESUCCESS : e;
        *done += n;
        /* A blocking write completes (POSIX), chunk by chunk as the reader
         * drains, each wait bounded by the deadline; a read returns what came. */
        if (!write || n == 0 || !iovs_advance(io, n)) return WASI_ESUCCESS;
    }
}

/* fd_read on fd 0 when the host feeds stdin (wasi_config.stdin_read): one
 * blocking read into the first buffer, as read(2) on a pipe returns what
 * has arrived. A zero-length read asks the host for nothing (io->n is 0:
 * iovs_load drops empty buffers). */
static uint32_t stdin_stream_read(wasi_ctx *ctx, const host_iovs *io, al_trap_kind *trap) {
    if (io->n == 0) return 0;
    return (uint32_t)wasi_stdin_pull(ctx, io->v[0].iov_base, io->v[0].iov_len, trap);
}

/* fd_read/fd_write/fd_pread/fd_pwrite: (fd, iovs, iovs_len, [offset,] size_ptr). */
static wasi_errno do_io(wasi_ctx *ctx, al_caller *caller, bool write, bool positioned,
                        uint32_t fd, uint32_t iovs, uint32_t iovs_len, uint64_t offset,
                        uint32_t size_ptr, al_trap_kind *trap) {
    wasi_fd *f;
    wasi_errno e = io_fd(ctx, fd, write, positioned, &f);
    if (e) return e;
    if (positioned && !offset_ok(offset)) return WASI_EINVAL;
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, size_ptr, 4)) return WASI_EFAULT;
    host_iovs *io = malloc(sizeof *io); /* 16 KiB: off the host stack */
    if (!io) return WASI_ENOMEM;
    uint32_t done = 0;
    e = iovs_load(m, iovs, iovs_len, io);
    if (!e && !write && f->kind == WASI_FD_STDIN && ctx->stdin_read)
        done = stdin_stream_read(ctx, io, trap);
    else if (!e && f->kind == WASI_FD_FILE && !positioned && io->n > 0 && blocks(f))
        e = stream_io(ctx, f, write, io, &done, trap);
    else if (!e)
        e = write ? write_from(ctx, f, io, positioned, offset, &done)
                  : read_into(ctx, f, io, positioned, offset, &done);
    free(io);
    if (!e && *trap == AL_TRAP_NONE) put_u32(m, size_ptr, done);
    return e;
}

/* The host function's answer: a trap ends the run, else the errno. */
static al_trap_kind io_return(al_value *results, wasi_errno e, al_trap_kind trap) {
    return trap != AL_TRAP_NONE ? trap : wasi_return(results, e);
}

static uint32_t arg_u32(const al_value *args, int i) { return (uint32_t)args[i].of.i32; }
static uint64_t arg_u64(const al_value *args, int i) { return (uint64_t)args[i].of.i64; }

al_trap_kind wasi_fd_read(void *env, al_caller *caller, const al_value *args, al_value *results) {
    al_trap_kind trap = AL_TRAP_NONE;
    wasi_errno e = do_io(env, caller, false, false, arg_u32(args, 0), arg_u32(args, 1),
                         arg_u32(args, 2), 0, arg_u32(args, 3), &trap);
    return io_return(results, e, trap);
}

al_trap_kind wasi_fd_write(void *env, al_caller *caller, const al_value *args, al_value *results) {
    al_trap_kind trap = AL_TRAP_NONE;
    wasi_errno e = do_io(env, caller, true, false, arg_u32(args, 0), arg_u32(args, 1),
                         arg_u32(args, 2), 0, arg_u32(args, 3), &trap);
    return io_return(results, e, trap);
}

al_trap_kind wasi_fd_pread(void *env, al_caller *caller, const al_value *args, al_value *results) {
    al_trap_kind trap = AL_TRAP_NONE;
    wasi_errno e = do_io(env, caller, false, true, arg_u32(args, 0), arg_u32(args, 1),
                         arg_u32(args, 2), arg_u64(args, 3), arg_u32(args, 4), &trap);
    return io_return(results, e, trap);
}

al_trap_kind wasi_fd_pwrite(void *env, al_caller *caller, const al_value *args, al_value *results) {
    al_trap_kind trap = AL_TRAP_NONE;
    wasi_errno e = do_io(env, caller, true, true, arg_u32(args, 0), arg_u32(args, 1),
                         arg_u32(args, 2), arg_u64(args, 3), arg_u32(args, 4), &trap);
    return io_return(results, e, trap);
}

/* ---- seek and tell ------------------------------------------------------------ */

enum { WASI_WHENCE_SET = 0, WASI_WHENCE_CUR = 1, WASI_WHENCE_END = 2 };

/* A descriptor that can be positioned: stdio is a pipe (ESPIPE, as lseek(2)
 * says for pipes); a directory's position belongs to fd_readdir's cursor
 * (fs.c), so moving it behind fs.c's back is refused (EBADF). */
static wasi_errno seekable(const wasi_fd *f) {
    if (is_stdio(f)) return WASI_ESPIPE;
    if (f->kind != WASI_FD_FILE) return WASI_EBADF;
    return WASI_ESUCCESS;
}

static wasi_errno do_seek(wasi_ctx *ctx, al_caller *caller, uint32_t fd, int64_t offset,
                          uint32_t whence, uint32_t out_ptr) {
    wasi_fd *f = wasi_fd_get(ctx, fd);
    if (!f) return WASI_EBADF;
    if (whence > WASI_WHENCE_END) return WASI_EINVAL;
    wasi_errno e = seekable(f);
    if (e) return e;
    /* witx: fd_seek needs rights::fd_seek; fd_tell (or a seek that leaves
     * the offset unaltered: cur + 0) needs only rights::fd_tell. */
    bool tell_only = whence == WASI_WHENCE_CUR && offset == 0;
    if (!has_rights(f, WASI_RIGHT_FD_SEEK) && !(tell_only && has_rights(f, WASI_RIGHT_FD_TELL)))
        return WASI_ENOTCAPABLE;
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, out_ptr, 8)) return WASI_EFAULT;
    static const int host_whence[] = {SEEK_SET, SEEK_CUR, SEEK_END};
    off_t pos = lseek(f->host_fd, (off_t)offset, host_whence[whence]);
    if (pos < 0) return wasi_errno_from_host(errno);
    put_u64(m, out_ptr, (uint64_t)pos);
    return WASI_ESUCCESS;
}

al_trap_kind wasi_fd_seek(void *env, al_caller *caller, const al_value *args, al_value *results) {
    return wasi_return(results, do_seek(env, caller, arg_u32(args, 0), args[1].of.i64,
                                        arg_u32(args, 2), arg_u32(args, 3)));
}

al_trap_kind wasi_fd_tell(void *env, al_caller *caller, const al_value *args, al_value *results) {
    return wasi_return(results, do_seek(env, caller, arg_u32(args, 0), 0, WASI_WHENCE_CUR,
                                        arg_u32(args, 1)));
}

/* ---- close and renumber ----------------------------------------------------------- */

/* Any open descriptor may be closed, preopens and stdio included (witx sets
 * no exception; node allows it too). Closing stdout only stops further
 * writes: what was written stays in the result. */
al_trap_kind wasi_fd_close(void *env, al_caller *caller, const al_value *args, al_value *results) {
    wasi_fd *f = wasi_fd_get(env, arg_u32(args, 0));
    if (!f) return wasi_return(results, WASI_EBADF);
    wasi_fd_release(f);
    return wasi_return(results, WASI_ESUCCESS);
}

/* witx: "Atomically replace a file descriptor by renumbering another". Both
 * must be open (EBADF otherwise, like node): renumbering onto a free number
 * would be dup2 to an arbitrary number, which the witx rules out. The entry
 * moves whole, so a renumbered preopen is still a preopen. */
al_trap_kind wasi_fd_renumber(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    wasi_ctx *ctx = env;
    wasi_fd *from = wasi_fd_get(ctx, arg_u32(args, 0));
    wasi_fd *to = wasi_fd_get(ctx, arg_u32(args, 1));
    if (!from || !to) return wasi_return(results, WASI_EBADF);
    if (from != to) {
        wasi_fd_release(to);
        *to = *from;
        *from = free_entry; /* ownership of host_fd and dir_state moved */
    }
    return wasi_return(results, WASI_ESUCCESS);
}

/* ---- fdstat ------------------------------------------------------------------------- */

static uint8_t filetype_of_mode(mode_t mode) {
    if (S_ISREG(mode)) return WASI_FILETYPE_REGULAR_FILE;
    if (S_ISDIR(mode)) return WASI_FILETYPE_DIRECTORY;
    if (S_ISCHR(mode)) return WASI_FILETYPE_CHARACTER_DEVICE;
    if (S_ISBLK(mode)) return WASI_FILETYPE_BLOCK_DEVICE;
    if (S_ISLNK(mode)) return WASI_FILETYPE_SYMBOLIC_LINK;
    if (S_ISSOCK(mode) || S_ISFIFO(mode)) return WASI_FILETYPE_SOCKET_STREAM; /* as uvwasi */
    return WASI_FILETYPE_UNKNOWN;
}

/* The stdio streams are pipes to the runtime. Like node for piped stdio they
 * are reported as byte-stream sockets, not character devices: wasi-libc's
 * isatty() is "character device without seek/tell rights", and a guest that
 * believed it had a terminal would colour its output or (CPython reading a
 * script from stdin) start an interactive prompt. */
static wasi_errno fd_filetype(const wasi_fd *f, uint8_t *type) {
    switch (f->kind) {
    case WASI_FD_STDIN: case WASI_FD_STDOUT: case WASI_FD_STDERR:
        *type = WASI_FILETYPE_SOCKET_STREAM;
        return WASI_ESUCCESS;
    case WASI_FD_DIR:
        *type = WASI_FILETYPE_DIRECTORY;
        return WASI_ESUCCESS;
    case WASI_FD_FILE: {
        struct stat st;
        if (fstat(f->host_fd, &st) != 0) return wasi_errno_from_host(errno);
        *type = filetype_of_mode(st.st_mode);
        return WASI_ESUCCESS;
    }
    default:
        return WASI_EBADF;
    }
}

/* witx: fd_fdstat_get needs no right; anyone holding the fd may ask. */
al_trap_kind wasi_fd_fdstat_get(void *env, al_caller *caller, const al_value *args,
                                al_value *results) {
    wasi_fd *f = wasi_fd_get(env, arg_u32(args, 0));
    if (!f) return wasi_return(results, WASI_EBADF);
    uint32_t out = arg_u32(args, 1);
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, out, WASI_FDSTAT_SIZE))
        return wasi_return(results, WASI_EFAULT);
    uint8_t type = WASI_FILETYPE_UNKNOWN;
    wasi_errno e = fd_filetype(f, &type);
    if (e) return wasi_return(results, e);
    memset(m.base + out, 0, WASI_FDSTAT_SIZE); /* padding too: no stale guest bytes */
    m.base[out] = type;
    put_u16(m, out + 2, f->fdflags);
    put_u64(m, out + 8, f->rights_base);
    put_u64(m, out + 16, f->rights_inheriting);
    return wasi_return(results, WASI_ESUCCESS);
}

/* Apply APPEND/NONBLOCK to the host descriptor (F_SETFL changes only those
 * on Linux anyway). */
static wasi_errno host_set_flags(int host_fd, uint32_t flags) {
    int fl = fcntl(host_fd, F_GETFL);
    if (fl < 0) return wasi_errno_from_host(errno);
    fl &= ~(O_APPEND | O_NONBLOCK);
    if (flags & WASI_FDFLAG_APPEND) fl |= O_APPEND;
    if (flags & WASI_FDFLAG_NONBLOCK) fl |= O_NONBLOCK;
    if (fcntl(host_fd, F_SETFL, fl) != 0) return wasi_errno_from_host(errno);
    return WASI_ESUCCESS;
}

static wasi_errno set_flags(wasi_fd *f, uint32_t flags) {
    if (!has_rights(f, WASI_RIGHT_FD_FDSTAT_SET_FLAGS)) return WASI_ENOTCAPABLE;
    if (flags & ~WASI_FDFLAGS_ALL) return WASI_EINVAL;
    /* Linux's F_SETFL silently ignores O_DSYNC/O_SYNC: claiming success would
     * be a lie about durability, so say "not supported". */
    if (flags & WASI_FDFLAGS_SYNCS) return WASI_ENOTSUP;
    /* Append mode is a write mode: refused where writing is. */
    if ((flags & WASI_FDFLAG_APPEND) && !may_write(f)) return WASI_ENOTCAPABLE;
    if (f->host_fd >= 0) {
        wasi_errno e = host_set_flags(f->host_fd, flags);
        if (e) return e;
    }
    /* stdio: the buffers always append and never block; only recorded. */
    f->fdflags = (uint16_t)flags;
    return WASI_ESUCCESS;
}

al_trap_kind wasi_fd_fdstat_set_flags(void *env, al_caller *caller, const al_value *args,
                                      al_value *results) {
    wasi_fd *f = wasi_fd_get(env, arg_u32(args, 0));
    if (!f) return wasi_return(results, WASI_EBADF);
    return wasi_return(results, set_flags(f, arg_u32(args, 1)));
}

/* witx: "This can only be used to remove rights, and returns
 * errno::notcapable if called in a way that would attempt to add rights". */
al_trap_kind wasi_fd_fdstat_set_rights(void *env, al_caller *caller, const al_value *args,
                                       al_value *results) {
    wasi_fd *f = wasi_fd_get(env, arg_u32(args, 0));
    if (!f) return wasi_return(results, WASI_EBADF);
    uint64_t base = arg_u64(args, 1), inheriting = arg_u64(args, 2);
    if ((base & ~f->rights_base) || (inheriting & ~f->rights_inheriting))
        return wasi_return(results, WASI_ENOTCAPABLE);
    f->rights_base = base;
    f->rights_inheriting = inheriting;
    return wasi_return(results, WASI_ESUCCESS);
}
