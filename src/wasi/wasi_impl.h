/*
 * wasi_impl.h — shared internals of the WASI preview1 host (src/wasi/).
 *
 * Files and what they own:
 *   wasi.c    context lifecycle, the import table (name + signature of every
 *             wasi_snapshot_preview1 function), result accessors
 *   fd.c      the fd table; fd_read/write/pread/pwrite/seek/tell/close/
 *             renumber/fdstat_get/fdstat_set_flags/fdstat_set_rights for
 *             stdio pipes, files and directories
 *   stdio.c   stdin (a buffer, or the host's stdin_read) and the capped
 *             stdout/stderr buffers with their on_output callback
 *   args.c    args_* and environ_*
 *   clock.c   clock_res_get, clock_time_get, sched_yield, proc_raise, proc_exit
 *   random.c  random_get
 *   poll.c    poll_oneoff (clock and fd subscriptions; honours the deadline)
 *   sock.c    sock_* (no network capability: always an error)
 *   path.c    resolving guest paths strictly beneath a preopen
 *   fs.c      path_*, fd_readdir, fd_filestat_*, fd_prestat_*, fd_advise,
 *             fd_allocate, fd_sync, fd_datasync
 *
 * Every guest pointer/length is checked against the current size of the
 * guest memory before use (guest_range); nothing indexes host memory with an
 * unchecked guest value. Errors go back to the guest as WASI errno values;
 * only proc_exit (AL_TRAP_EXIT) and a passed deadline (AL_TRAP_INTERRUPTED)
 * end the run from inside a WASI call.
 */
#ifndef AIRLOCK_WASI_IMPL_H
#define AIRLOCK_WASI_IMPL_H

#include <string.h>

#include "wasi.h"

/* WASI preview1 errno (witx "errno"). */
typedef enum wasi_errno {
    WASI_ESUCCESS = 0, WASI_E2BIG = 1, WASI_EACCES = 2, WASI_EADDRINUSE = 3,
    WASI_EADDRNOTAVAIL = 4, WASI_EAFNOSUPPORT = 5, WASI_EAGAIN = 6, WASI_EALREADY = 7,
    WASI_EBADF = 8, WASI_EBADMSG = 9, WASI_EBUSY = 10, WASI_ECANCELED = 11, WASI_ECHILD = 12,
    WASI_ECONNABORTED = 13, WASI_ECONNREFUSED = 14, WASI_ECONNRESET = 15, WASI_EDEADLK = 16,
    WASI_EDESTADDRREQ = 17, WASI_EDOM = 18, WASI_EDQUOT = 19, WASI_EEXIST = 20,
    WASI_EFAULT = 21, WASI_EFBIG = 22, WASI_EHOSTUNREACH = 23, WASI_EIDRM = 24,
    WASI_EILSEQ = 25, WASI_EINPROGRESS = 26, WASI_EINTR = 27, WASI_EINVAL = 28, WASI_EIO = 29,
    WASI_EISCONN = 30, WASI_EISDIR = 31, WASI_ELOOP = 32, WASI_EMFILE = 33, WASI_EMLINK = 34,
    WASI_EMSGSIZE = 35, WASI_EMULTIHOP = 36, WASI_ENAMETOOLONG = 37, WASI_ENETDOWN = 38,
    WASI_ENETRESET = 39, WASI_ENETUNREACH = 40, WASI_ENFILE = 41, WASI_ENOBUFS = 42,
    WASI_ENODEV = 43, WASI_ENOENT = 44, WASI_ENOEXEC = 45, WASI_ENOLCK = 46,
    WASI_ENOLINK = 47, WASI_ENOMEM = 48, WASI_ENOMSG = 49, WASI_ENOPROTOOPT = 50,
    WASI_ENOSPC = 51, WASI_ENOSYS = 52, WASI_ENOTCONN = 53, WASI_ENOTDIR = 54,
    WASI_ENOTEMPTY = 55, WASI_ENOTRECOVERABLE = 56, WASI_ENOTSOCK = 57, WASI_ENOTSUP = 58,
    WASI_ENOTTY = 59, WASI_ENXIO = 60, WASI_EOVERFLOW = 61, WASI_EOWNERDEAD = 62,
    WASI_EPERM = 63, WASI_EPIPE = 64, WASI_EPROTO = 65, WASI_EPROTONOSUPPORT = 66,
    WASI_EPROTOTYPE = 67, WASI_ERANGE = 68, WASI_EROFS = 69, WASI_ESPIPE = 70,
    WASI_ESRCH = 71, WASI_ESTALE = 72, WASI_ETIMEDOUT = 73, WASI_ETXTBSY = 74,
    WASI_EXDEV = 75, WASI_ENOTCAPABLE = 76,
} wasi_errno;

/* witx "filetype" */
enum {
    WASI_FILETYPE_UNKNOWN = 0, WASI_FILETYPE_BLOCK_DEVICE = 1,
    WASI_FILETYPE_CHARACTER_DEVICE = 2, WASI_FILETYPE_DIRECTORY = 3,
    WASI_FILETYPE_REGULAR_FILE = 4, WASI_FILETYPE_SOCKET_DGRAM = 5,
    WASI_FILETYPE_SOCKET_STREAM = 6, WASI_FILETYPE_SYMBOLIC_LINK = 7,
};

/* witx "fdflags" */
enum {
    WASI_FDFLAG_APPEND = 1 << 0, WASI_FDFLAG_DSYNC = 1 << 1, WASI_FDFLAG_NONBLOCK = 1 << 2,
    WASI_FDFLAG_RSYNC = 1 << 3, WASI_FDFLAG_SYNC = 1 << 4,
};

/* witx "rights" */
#define WASI_RIGHT_FD_DATASYNC (1ull << 0)
#define WASI_RIGHT_FD_READ (1ull << 1)
#define WASI_RIGHT_FD_SEEK (1ull << 2)
#define WASI_RIGHT_FD_FDSTAT_SET_FLAGS (1ull << 3)
#define WASI_RIGHT_FD_SYNC (1ull << 4)
#define WASI_RIGHT_FD_TELL (1ull << 5)
#define WASI_RIGHT_FD_WRITE (1ull << 6)
#define WASI_RIGHT_FD_ADVISE (1ull << 7)
#define WASI_RIGHT_FD_ALLOCATE (1ull << 8)
#define WASI_RIGHT_PATH_CREATE_DIRECTORY (1ull << 9)
#define WASI_RIGHT_PATH_CREATE_FILE (1ull << 10)
#define WASI_RIGHT_PATH_LINK_SOURCE (1ull << 11)
#define WASI_RIGHT_PATH_LINK_TARGET (1ull << 12)
#define WASI_RIGHT_PATH_OPEN (1ull << 13)
#define WASI_RIGHT_FD_READDIR (1ull << 14)
#define WASI_RIGHT_PATH_READLINK (1ull << 15)
#define WASI_RIGHT_PATH_RENAME_SOURCE (1ull << 16)
#define WASI_RIGHT_PATH_RENAME_TARGET (1ull << 17)
#define WASI_RIGHT_PATH_FILESTAT_GET (1ull << 18)
#define WASI_RIGHT_PATH_FILESTAT_SET_SIZE (1ull << 19)
#define WASI_RIGHT_PATH_FILESTAT_SET_TIMES (1ull << 20)
#define WASI_RIGHT_FD_FILESTAT_GET (1ull << 21)
#define WASI_RIGHT_FD_FILESTAT_SET_SIZE (1ull << 22)
#define WASI_RIGHT_FD_FILESTAT_SET_TIMES (1ull << 23)
#define WASI_RIGHT_PATH_SYMLINK (1ull << 24)
#define WASI_RIGHT_PATH_REMOVE_DIRECTORY (1ull << 25)
#define WASI_RIGHT_PATH_UNLINK_FILE (1ull << 26)
#define WASI_RIGHT_POLL_FD_READWRITE (1ull << 27)
#define WASI_RIGHT_SOCK_SHUTDOWN (1ull << 28)
#define WASI_RIGHT_SOCK_ACCEPT (1ull << 29)
#define WASI_RIGHTS_ALL ((1ull << 30) - 1)

typedef enum wasi_fd_kind {
    WASI_FD_FREE = 0,
    WASI_FD_STDIN,  /* reads the context's stdin buffer (or its stdin_read) */
    WASI_FD_STDOUT, /* appends to the capped stdout buffer */
    WASI_FD_STDERR,
    WASI_FD_FILE,   /* host_fd is a regular (or other non-directory) file */
    WASI_FD_DIR,    /* host_fd is a directory (O_DIRECTORY) */
} wasi_fd_kind;

typedef struct wasi_fd {
    wasi_fd_kind kind;
    int host_fd;          /* -1 for the stdio pipes */
    bool read_only;       /* opened beneath a read-only preopen: no writes of any kind */
    int preopen;          /* index into ctx->preopens when this fd is a preopen root, else -1 */
    uint16_t fdflags;
    uint64_t rights_base;
    uint64_t rights_inheriting;
    void *dir_state;      /* fs.c: readdir cursor state, freed by wasi_fd_release */
} wasi_fd;

typedef struct wasi_preopen {
    char *host_path;  /* canonical (realpath) */
    char *guest_path;
    bool read_only;
} wasi_preopen;

typedef struct wasi_out {
    uint8_t *data;   /* grows on demand, never past cap */
    size_t len;
    size_t cap;      /* the policy's byte cap */
    size_t alloc;
    bool truncated;
    /* wasi_config.on_output for this stream (1 or 2), and whether nothing
     * is kept (output_unbuffered: data stays NULL, len 0) */
    void (*on_output)(void *arg, int stream, const uint8_t *data, size_t len);
    void *on_output_arg;
    int stream;
    bool unbuffered;
} wasi_out;

struct wasi_ctx {
    char **argv;
    size_t argc;
    char **env;
    size_t nenv;
    wasi_preopen *preopens;
    size_t npreopens;
    wasi_fd *fds;
    uint32_t nfds;        /* entries in use or free, fds[0..nfds) */
    uint32_t fds_cap;
    uint8_t *stdin_data;
    size_t stdin_len, stdin_pos;
    /* wasi_config.stdin_read: when set, fd 0 reads from it, not stdin_data */
    size_t (*stdin_read)(void *arg, uint8_t *dst, size_t len, al_trap_kind *trap);
    void *stdin_arg;
    wasi_out out, err;
    bool exited;
    int exit_code;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
    al_store *store;
};

#define WASI_MAX_FDS 1024u /* open descriptors per context */

/* ---- guest memory ---------------------------------------------------------- */

typedef struct guest_mem {
    uint8_t *base;
    uint64_t size;
} guest_mem;

/* The caller's linear memory; false (and the call returns EFAULT... or traps)
 * when the module has none. */
static inline bool guest_memory(al_caller *caller, guest_mem *out) {
    al_memory *m = al_caller_memory(caller);
    if (!m) return false;
    out->base = al_memory_data(m);
    out->size = al_memory_size(m);
    return true;
}

/* Is [ptr, ptr+len) inside guest memory? 64-bit math: cannot wrap. */
static inline bool guest_range(guest_mem m, uint32_t ptr, uint64_t len) {
    return (uint64_t)ptr + len <= m.size;
}

static inline void put_u16(guest_mem m, uint32_t p, uint16_t v) { memcpy(m.base + p, &v, 2); }
static inline void put_u32(guest_mem m, uint32_t p, uint32_t v) { memcpy(m.base + p, &v, 4); }
static inline void put_u64(guest_mem m, uint32_t p, uint64_t v) { memcpy(m.base + p, &v, 8); }
static inline uint32_t get_u32(guest_mem m, uint32_t p) { uint32_t v; memcpy(&v, m.base + p, 4); return v; }
static inline uint64_t get_u64(guest_mem m, uint32_t p) { uint64_t v; memcpy(&v, m.base + p, 8); return v; }

/* Host function results: every WASI function returns one i32 errno. */
static inline al_trap_kind wasi_return(al_value *results, wasi_errno e) {
    results[0] = al_i32((int32_t)e);
    return AL_TRAP_NONE;
}

/* ---- shared helpers ---------------------------------------------------------- */

wasi_errno wasi_errno_from_host(int host_errno);            /* fd.c */
wasi_fd *wasi_fd_get(wasi_ctx *ctx, uint32_t fd);            /* fd.c: NULL if not open */
/* fd.c: install entry in the lowest free slot; returns the fd or -1 (EMFILE). */
int64_t wasi_fd_install(wasi_ctx *ctx, const wasi_fd *entry);
void wasi_fd_release(wasi_fd *fd);                           /* fd.c: close + free dir state */
bool wasi_out_append(wasi_out *out, const uint8_t *data, size_t len); /* stdio.c */
void fs_dir_state_free(void *dir_state);                     /* fs.c */
/* poll.c/clock.c: past the context's deadline, or the store interrupted? */
bool wasi_deadline_passed(const wasi_ctx *ctx);

/* ---- the host functions ------------------------------------------------------- */
/* Each is an al_host_fn with env = wasi_ctx*. Signatures (i32 unless noted)
 * are in wasi.c's import table, which follows the witx definitions. */
#define WASI_FUNCTIONS(X) \
    X(args_get) X(args_sizes_get) X(environ_get) X(environ_sizes_get) \
    X(clock_res_get) X(clock_time_get) \
    X(fd_advise) X(fd_allocate) X(fd_close) X(fd_datasync) X(fd_fdstat_get) \
    X(fd_fdstat_set_flags) X(fd_fdstat_set_rights) X(fd_filestat_get) \
    X(fd_filestat_set_size) X(fd_filestat_set_times) X(fd_pread) X(fd_prestat_get) \
    X(fd_prestat_dir_name) X(fd_pwrite) X(fd_read) X(fd_readdir) X(fd_renumber) \
    X(fd_seek) X(fd_sync) X(fd_tell) X(fd_write) \
    X(path_create_directory) X(path_filestat_get) X(path_filestat_set_times) \
    X(path_link) X(path_open) X(path_readlink) X(path_remove_directory) \
    X(path_rename) X(path_symlink) X(path_unlink_file) \
    X(poll_oneoff) X(proc_exit) X(proc_raise) X(sched_yield) X(random_get) \
    X(sock_accept) X(sock_recv) X(sock_send) X(sock_shutdown)

#define WASI_DECLARE(name) \
    al_trap_kind wasi_##name(void *env, al_caller *caller, const al_value *args, al_value *results);
WASI_FUNCTIONS(WASI_DECLARE)
#undef WASI_DECLARE

#endif
