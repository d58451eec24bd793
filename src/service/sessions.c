/*
 * sessions.c — airlockd's sessions: a workspace directory and a warm
 * sandbox kept across executions, for one token.
 *
 *   python   an al_python_session: one interpreter kept alive, so
 *            variables and imports persist between executions;
 *   command  an al_session (native or gVisor) with the workspace granted
 *            read-write at /workspace (gVisor keeps one sandbox booted);
 *   wasm     a fresh al_run_wasm per execution over the same workspace.
 *
 * The sandbox of a python or command session is opened by its first
 * execution, with that execution's policy (which execute.c has already
 * clamped to the config's ceilings): memory, fuel, directories and egress
 * are then the session's, as al_session_open documents. Later executions
 * change only the per-run fields (argv, env, stdin, timeout, ...).
 *
 * Invariants:
 *  - the table (list, count, every session's info/busy/refs/gone) is
 *    guarded by svc_sessions.mu; nothing slow (sandboxes, files) runs under
 *    it;
 *  - a session is used only by the token that created it; another token's
 *    session answers exactly like a missing one (ENOENT), so ids cannot be
 *    probed;
 *  - at most one execution per session at a time: a second one fails at
 *    once with EBUSY (the API's 409), it never queues behind the first;
 *  - a session with an execution or a file operation in progress (refs > 0)
 *    is never expired or evicted; deleting it unlinks it from the table at
 *    once and the last reference frees it;
 *  - workspace paths from clients are relative, without "." / ".." or empty
 *    components, and are opened with openat2(RESOLVE_BENEATH |
 *    RESOLVE_NO_SYMLINKS) one component at a time: a symlink a guest made in
 *    its workspace is never followed, out of the workspace or within it;
 *  - workspace directories are <state_dir>/sessions/<id>/workspace, 0700;
 *    as root the workspace is owned by uid/gid 1000, the host identity of
 *    native and gVisor guests, so they can write it;
 *  - sessions do not survive the daemon: svc_sessions_new removes what a
 *    previous daemon left in <state_dir>/sessions, svc_sessions_free
 *    removes everything it made. Removal never follows a symlink.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

#define GUEST_ID 1000           /* native/gVisor guests' host uid/gid when we are root */
#define WORKSPACE_GUEST "/workspace"
#define PATH_COMPONENTS_MAX 32  /* deepest workspace path a client may name */
#define PATH_BYTES_MAX 1024
#define WALK_DEPTH_MAX 64       /* usage walk / removal recursion depth */
#define MODULE_BYTES_DEFAULT ((size_t)50 << 20)

typedef void (*output_fn)(void *ctx, int stream, const uint8_t *data, size_t len);

typedef struct session {
    struct session *next;
    svc_session_info info;
    uint64_t use_seq;             /* LRU order: larger is more recent */
    bool busy;                    /* an execution runs */
    unsigned refs;                /* executions + file operations in progress */
    bool gone;                    /* unlinked from the table; the last ref frees it */
    char dir[SVC_PATH_MAX + 64];  /* <state_dir>/sessions/<id> */
    char workspace[SVC_PATH_MAX + 80];
    pthread_mutex_t files;        /* one upload/download at a time (usage checks) */
    /* the warm sandbox, used only by the execution holding busy */
    al_python_session *py;
    al_session *box;
    /* streaming: the running execution's callback, behind a fixed trampoline
     * (a warm sandbox keeps the policy it was opened with, callback included) */
    output_fn out_fn;
    void *out_ctx;
} session;

struct svc_sessions {
    pthread_mutex_t mu;
    session *head;
    unsigned count;
    uint64_t seq;
    char root[SVC_PATH_MAX + 16]; /* <state_dir>/sessions */
    uint32_t max_sessions, idle_s;
    uint64_t workspace_bytes;
    al_python *py;                /* not owned */
};

/* ---- small helpers ----------------------------------------------------------------- */

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* errno = e, err = message; always false (for "return fail(...)") */
static bool fail(int e, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    errno = e;
    return false;
}

int svc_session_http_status(int e) {
    switch (e) {
    case ENOENT: return 404;
    case EBUSY: return 409;
    case EAGAIN: return 429;
    case EINVAL: return 400;
    case EFBIG: return 413;
    case ENOTSUP: return 503;
    default: return 500;
    }
}

static const char *kind_name(svc_kind k) {
    switch (k) {
    case SVC_PYTHON: return "python";
    case SVC_WASM: return "wasm";
    case SVC_COMMAND: return "command";
    case SVC_PLUGIN: return "plugin";
    }
    return "?";
}

static const char *backend_name(al_isolation b) {
    switch (b) {
    case AL_ISOLATION_WASM: return "wasm";
    case AL_ISOLATION_NATIVE: return "native";
    case AL_ISOLATION_GVISOR: return "gvisor";
    }
    return "?";
}

static bool new_id(char out[33]) {
    uint8_t b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
    return true;
}

/* One path component beneath dfd, never through a symlink (openat2), or
 * -1. Falls back to O_NOFOLLOW on kernels without openat2: the callers pass
 * single, validated components, so that is the same guarantee. */
static int open_beneath(int dfd, const char *name, int flags, mode_t mode) {
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd = syscall(SYS_openat2, dfd, name, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) fd = openat(dfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    return (int)fd;
}

/* ---- removal and usage: never following symlinks ----------------------------------- */

/* Remove what is inside dfd. A directory deeper than WALK_DEPTH_MAX is moved
 * up into top (renamed to a name unique for the whole removal: *seq) and
 * left for the next pass, so no depth of nesting a guest makes costs more
 * than WALK_DEPTH_MAX open descriptors. */
static void rm_contents(int dfd, int top, unsigned depth, unsigned *seq) {
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return;
    }
    rewinddir(d); /* the dup shares dfd's offset: an earlier pass left it at the end */
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
        if (unlinkat(dfd, n, 0) == 0 || errno != EISDIR) continue;
        if (depth >= WALK_DEPTH_MAX) {
            char deep[48];
            snprintf(deep, sizeof deep, ".airlock-deep-%u", (*seq)++);
            renameat(dfd, n, top, deep);
            continue;
        }
        int sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 && errno == EACCES) { /* a guest's chmod 000: we own it */
            fchmodat(dfd, n, 0700, 0);
            sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (sub < 0) continue;
        rm_contents(sub, top, depth + 1, seq);
        close(sub);
        unlinkat(dfd, n, AT_REMOVEDIR);
    }
    closedir(d);
}

static void rm_tree(const char *path) {
    int top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) {
        unlink(path); /* not a directory (or gone): at most a file */
        return;
    }
    /* passes: entries a readdir skipped while we unlinked, and directories
     * moved up from the depth limit (each pass removes WALK_DEPTH_MAX levels) */
    unsigned seq = 0;
    for (int pass = 0; pass < 1024; pass++) {
        rm_contents(top, top, 0, &seq);
        if (rmdir(path) == 0 || errno != ENOTEMPTY) break;
    }
    close(top);
}

/* Bytes in regular files beneath dfd (to WALK_DEPTH_MAX deep). */
static uint64_t usage_of(int dfd, unsigned depth) {
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return 0;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return 0;
    }
    rewinddir(d);
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        struct stat st;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
        if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(st.st_mode)) {
            total += (uint64_t)st.st_size;
        } else if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH_MAX) {
            int sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) continue;
            total += usage_of(sub, depth + 1);
            close(sub);
        }
    }
    closedir(d);
    return total;
}

/* ---- the table --------------------------------------------------------------------- */

svc_sessions *svc_sessions_new(const char *state_dir, uint32_t max_sessions, uint32_t idle_s,
                               uint64_t workspace_bytes) {
    svc_sessions *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    int n = snprintf(s->root, sizeof s->root, "%s/sessions", state_dir ? state_dir : ".");
    if (n < 0 || (size_t)n >= sizeof s->root) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->max_sessions = max_sessions;
    s->idle_s = idle_s;
    s->workspace_bytes = workspace_bytes;
    /* a previous daemon's sessions died with it: start from an empty root */
    rm_tree(s->root);
    if (mkdir(s->root, 0700) != 0 && errno != EEXIST) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    return s;
}

void svc_sessions_set_python(svc_sessions *s, al_python *py) {
    pthread_mutex_lock(&s->mu);
    s->py = py;
    pthread_mutex_unlock(&s->mu);
}

bool svc_sessions_have_python(svc_sessions *s) {
    pthread_mutex_lock(&s->mu);
    bool have = s->py != NULL;
    pthread_mutex_unlock(&s->mu);
    return have;
}

/* Close the sandbox, remove the directory, free. Caller holds no lock and
 * the session is unreachable (unlinked, refs == 0). */
static void session_destroy(session *se) {
    if (se->py) al_python_session_close(se->py);
    if (se->box) al_session_close(se->box);
    rm_tree(se->dir);
    pthread_mutex_destroy(&se->files);
    free(se);
}

void svc_sessions_free(svc_sessions *s) {
    if (!s) return;
    session *se = s->head;
    while (se) {
        session *next = se->next;
        session_destroy(se);
        se = next;
    }
    rmdir(s->root);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void unlink_locked(svc_sessions *s, session *se) {
    for (session **pp = &s->head; *pp; pp = &(*pp)->next) {
        if (*pp == se) {
            *pp = se->next;
            break;
        }
    }
    se->next = NULL;
    se->gone = true;
    s->count--;
}

static session *find_locked(svc_sessions *s, const char *id, const char *token) {
    if (!id) return NULL;
    for (session *se = s->head; se; se = se->next)
        if (strcmp(se->info.id, id) == 0 && strcmp(se->info.token, token ? token : "") == 0)
            return se;
    return NULL;
}

/* Take a reference (exclusive: also the execution slot). NULL + errno. */
static session *acquire(svc_sessions *s, const char *id, const char *token, bool exclusive) {
    pthread_mutex_lock(&s->mu);
    session *se = find_locked(s, id, token);
    if (!se) {
        pthread_mutex_unlock(&s->mu);
        errno = ENOENT;
        return NULL;
    }
    if (exclusive && se->busy) {
        pthread_mutex_unlock(&s->mu);
        errno = EBUSY;
        return NULL;
    }
    if (exclusive) se->busy = true;
    se->refs++;
    se->info.last_used_ms = wall_ms();
    se->use_seq = ++s->seq;
    pthread_mutex_unlock(&s->mu);
    return se;
}

static void release(svc_sessions *s, session *se, bool exclusive) {
    pthread_mutex_lock(&s->mu);
    if (exclusive) {
        se->busy = false;
        se->info.executions++;
    }
    se->info.last_used_ms = wall_ms();
    se->use_seq = ++s->seq;
    bool destroy = --se->refs == 0 && se->gone;
    pthread_mutex_unlock(&s->mu);
    if (destroy) session_destroy(se);
}

/* The least recently used session nobody is using, or NULL. */
static session *lru_victim_locked(svc_sessions *s) {
    session *victim = NULL;
    for (session *se = s->head; se; se = se->next)
        if (!se->busy && se->refs == 0 && (!victim || se->use_seq < victim->use_seq))
            victim = se;
    return victim;
}

/* <root>/<id>/workspace, 0700; owned by the guests' uid when we are root. */
static bool make_dirs(session *se) {
    if (mkdir(se->dir, 0700) != 0) return false;
    if (mkdir(se->workspace, 0700) != 0) return false;
    if (geteuid() == 0 && chown(se->workspace, GUEST_ID, GUEST_ID) != 0) return false;
    return true;
}

static bool template_ok(const svc_exec_request *t, al_isolation *backend, char *err,
                        size_t errlen) {
    switch (t->kind) {
    case SVC_PYTHON:
    case SVC_WASM:
        *backend = AL_ISOLATION_WASM;
        return true;
    case SVC_COMMAND:
        if (t->backend != AL_ISOLATION_NATIVE && t->backend != AL_ISOLATION_GVISOR)
            return fail(EINVAL, err, errlen, "a command session's backend is native or gvisor");
        *backend = t->backend;
        return true;
    case SVC_PLUGIN: /* every plugin call gets a fresh instance */
        return fail(EINVAL, err, errlen, "plugins have no sessions");
    }
    return fail(EINVAL, err, errlen, "unknown session kind");
}

bool svc_session_create(svc_sessions *s, const svc_exec_request *template_req,
                        const char *token, svc_session_info *out, char *err, size_t errlen) {
    al_isolation backend;
    if (!template_ok(template_req, &backend, err, errlen)) return false;
    if (template_req->kind == SVC_PYTHON && !svc_sessions_have_python(s))
        return fail(ENOTSUP, err, errlen, "Python is not available on this daemon");
    session *se = calloc(1, sizeof *se);
    if (!se) return fail(ENOMEM, err, errlen, "out of memory");
    if (!new_id(se->info.id)) {
        free(se);
        return fail(EIO, err, errlen, "no random bytes for a session id");
    }
    se->info.kind = template_req->kind;
    se->info.backend = backend;
    snprintf(se->info.token, sizeof se->info.token, "%s", token ? token : "");
    se->info.created_ms = se->info.last_used_ms = wall_ms();
    snprintf(se->dir, sizeof se->dir, "%s/%s", s->root, se->info.id);
    snprintf(se->workspace, sizeof se->workspace, "%s/workspace", se->dir);
    pthread_mutex_init(&se->files, NULL);
    if (!make_dirs(se)) {
        int e = errno;
        rm_tree(se->dir);
        pthread_mutex_destroy(&se->files);
        free(se);
        snprintf(err, errlen, "cannot make the session workspace: %s", strerror(e));
        errno = EIO;
        return false;
    }
    session *victim = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->count >= s->max_sessions) {
        victim = lru_victim_locked(s);
        if (victim) unlink_locked(s, victim);
    }
    bool room = s->count < s->max_sessions;
    if (room) {
        se->use_seq = ++s->seq;
        se->next = s->head;
        s->head = se;
        s->count++;
        *out = se->info;
    }
    pthread_mutex_unlock(&s->mu);
    if (victim) session_destroy(victim); /* unlinked and unused: ours alone */
    if (!room) {
        session_destroy(se);
        return fail(EAGAIN, err, errlen, "too many sessions, and every one is in use");
    }
    return true;
}

bool svc_session_get(svc_sessions *s, const char *id, const char *token, svc_session_info *out) {
    pthread_mutex_lock(&s->mu);
    session *se = find_locked(s, id, token);
    if (se) *out = se->info;
    pthread_mutex_unlock(&s->mu);
    if (!se) errno = ENOENT;
    return se != NULL;
}

bool svc_session_delete(svc_sessions *s, const char *id, const char *token) {
    pthread_mutex_lock(&s->mu);
    session *se = find_locked(s, id, token);
    bool destroy = false;
    if (se) {
        unlink_locked(s, se);
        destroy = se->refs == 0; /* else the running execution's release frees it */
    }
    pthread_mutex_unlock(&s->mu);
    if (!se) {
        errno = ENOENT;
        return false;
    }
    if (destroy) session_destroy(se);
    return true;
}

json_t *svc_session_info_json(const svc_session_info *i) {
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s}", "id", i->id, "kind",
                     kind_name(i->kind), "backend", backend_name(i->backend), "created_ms",
                     (json_int_t)i->created_ms, "last_used_ms", (json_int_t)i->last_used_ms,
                     "executions", (json_int_t)i->executions, "workspace", WORKSPACE_GUEST);
}

json_t *svc_session_list(svc_sessions *s, const char *token) {
    json_t *arr = json_array();
    if (!arr) return NULL;
    pthread_mutex_lock(&s->mu);
    for (session *se = s->head; se; se = se->next)
        if (strcmp(se->info.token, token ? token : "") == 0)
            json_array_append_new(arr, svc_session_info_json(&se->info));
    pthread_mutex_unlock(&s->mu);
    return arr;
}

unsigned svc_sessions_expire(svc_sessions *s, uint64_t now_ms) {
    session *dead = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&s->mu);
    if (s->idle_s > 0) {
        uint64_t idle_ms = (uint64_t)s->idle_s * 1000u;
        session *se = s->head;
        while (se) {
            session *next = se->next;
            if (!se->busy && se->refs == 0 && se->info.last_used_ms + idle_ms <= now_ms) {
                unlink_locked(s, se);
                se->next = dead;
                dead = se;
                n++;
            }
            se = next;
        }
    }
    pthread_mutex_unlock(&s->mu);
    while (dead) {
        session *next = dead->next;
        session_destroy(dead);
        dead = next;
    }
    return n;
}

unsigned svc_sessions_count(svc_sessions *s) {
    pthread_mutex_lock(&s->mu);
    unsigned n = s->count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- workspace files --------------------------------------------------------------- */

/* Relative, 1..PATH_COMPONENTS_MAX components of 1..255 bytes, none "." or
 * "..": the only paths a client may name. */
static bool path_ok(const char *path) {
    size_t len = path ? strnlen(path, PATH_BYTES_MAX + 1) : 0;
    if (len == 0 || len > PATH_BYTES_MAX || path[0] == '/') return false;
    unsigned comps = 0;
    const char *p = path;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > 255) return false;
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (++comps > PATH_COMPONENTS_MAX) return false;
        p += n;
        if (*p == '/') {
            p++;
            if (!*p) return false; /* a trailing slash names a directory */
        }
    }
    return true;
}

/* Walk the directories of path beneath ws (creating missing ones when
 * create), returning an fd of the last one and *leaf pointing at the file
 * name; -1 + errno on failure. */
static int open_parent(int ws, const char *path, char *buf, size_t buflen, const char **leaf,
                       bool create) {
    snprintf(buf, buflen, "%s", path);
    int dfd = fcntl(ws, F_DUPFD_CLOEXEC, 0);
    char *p = buf;
    char *slash;
    while (dfd >= 0 && (slash = strchr(p, '/'))) {
        *slash = '\0';
        int next = open_beneath(dfd, p, O_PATH | O_DIRECTORY, 0);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(dfd, p, 0755) == 0 && geteuid() == 0)
                fchownat(dfd, p, GUEST_ID, GUEST_ID, AT_SYMLINK_NOFOLLOW);
            next = open_beneath(dfd, p, O_PATH | O_DIRECTORY, 0);
        }
        int e = errno;
        close(dfd);
        errno = e;
        dfd = next;
        p = slash + 1;
    }
    *leaf = p;
    return dfd;
}

static int errno_to_path_error(int e) {
    switch (e) {
    case ENOENT: return ENOENT;
    case EFBIG:
    case ENOSPC:
    case EDQUOT: return EFBIG;
    case ENOMEM: return ENOMEM;
    default: return EINVAL; /* ELOOP (a symlink), ENOTDIR, EISDIR, EXDEV ... */
    }
}

static bool path_fail(int e, const char *path, char *err, size_t errlen) {
    int mapped = errno_to_path_error(e);
    if (mapped == ENOENT) snprintf(err, errlen, "no such file in the workspace: %s", path);
    else if (mapped == EFBIG) snprintf(err, errlen, "the workspace is full");
    else snprintf(err, errlen, "cannot use workspace path %s: %s", path, strerror(e));
    errno = mapped;
    return false;
}

static bool write_all(int fd, const uint8_t *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* Write data as parent/leaf: into a temporary name first, then renamed over
 * the leaf (a symlink there is replaced, never followed). */
static bool put_in(int parent, const char *leaf, const uint8_t *data, size_t len) {
    char tmp[64];
    uint8_t r[8] = {0};
    if (getrandom(r, sizeof r, 0) < 0) return false;
    uint64_t v;
    memcpy(&v, r, sizeof v);
    snprintf(tmp, sizeof tmp, ".airlock-upload-%016" PRIx64, v);
    int fd = open_beneath(parent, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return false;
    bool ok = write_all(fd, data, len);
    if (ok && geteuid() == 0 && fchown(fd, GUEST_ID, GUEST_ID) != 0) ok = false;
    int e = errno;
    if (close(fd) != 0 && ok) {
        e = errno;
        ok = false;
    }
    if (ok && renameat(parent, tmp, parent, leaf) != 0) {
        e = errno;
        ok = false;
    }
    if (!ok) {
        unlinkat(parent, tmp, 0);
        errno = e;
    }
    return ok;
}

static int open_workspace(const session *se) {
    return open(se->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A workspace file transfer in progress: the session acquired with its file
 * lock held, the workspace, and the directory the path's last component
 * (leaf) is in. parent is -1 (errno in e) when the path could not be opened. */
typedef struct file_op {
    session *se;
    int ws, parent, e;
    const char *leaf;
    char buf[PATH_BYTES_MAX + 1];
} file_op;

/* false (err set) for a malformed path or an unknown session: nothing held. */
static bool file_op_begin(svc_sessions *s, const char *id, const char *token, const char *path,
                          bool create_dirs, file_op *op, char *err, size_t errlen) {
    if (!path_ok(path))
        return fail(EINVAL, err, errlen,
                    "a workspace path is relative, without empty, '.' or '..' components");
    op->se = acquire(s, id, token, false);
    if (!op->se) return fail(ENOENT, err, errlen, "no such session");
    pthread_mutex_lock(&op->se->files);
    op->e = 0;
    op->ws = open_workspace(op->se);
    op->parent = op->ws < 0 ? -1
                            : open_parent(op->ws, path, op->buf, sizeof op->buf, &op->leaf,
                                          create_dirs);
    if (op->parent < 0) op->e = errno;
    return true;
}

static void file_op_end(svc_sessions *s, file_op *op) {
    if (op->parent >= 0) close(op->parent);
    if (op->ws >= 0) close(op->ws);
    pthread_mutex_unlock(&op->se->files);
    release(s, op->se, false);
}

bool svc_session_put_file(svc_sessions *s, const char *id, const char *token, const char *path,
                          const uint8_t *data, size_t len, char *err, size_t errlen) {
    file_op op;
    if (!file_op_begin(s, id, token, path, true, &op, err, errlen)) return false;
    bool ok = false;
    if (op.parent >= 0) {
        uint64_t used = usage_of(op.ws, 0);
        struct stat st;
        if (fstatat(op.parent, op.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            used -= (uint64_t)st.st_size < used ? (uint64_t)st.st_size : used;
        if (len > s->workspace_bytes || used > s->workspace_bytes - len) op.e = EFBIG;
        else if (put_in(op.parent, op.leaf, data, len)) ok = true;
        else op.e = errno;
    }
    int e = op.e;
    file_op_end(s, &op);
    return ok || path_fail(e, path, err, errlen);
}

static bool read_all(int fd, size_t size, uint8_t **data, size_t *len) {
    uint8_t *buf = malloc(size + 1);
    if (!buf) return false;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            free(buf);
            return false;
        }
        if (n == 0) break; /* shrank while we read: what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return true;
}

bool svc_session_get_file(svc_sessions *s, const char *id, const char *token, const char *path,
                          uint8_t **data, size_t *len, char *err, size_t errlen) {
    *data = NULL;
    *len = 0;
    file_op op;
    if (!file_op_begin(s, id, token, path, false, &op, err, errlen)) return false;
    bool ok = false;
    if (op.parent >= 0) {
        /* O_NONBLOCK: a FIFO a guest left must not hang the worker */
        int fd = open_beneath(op.parent, op.leaf, O_RDONLY | O_NONBLOCK, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) op.e = errno;
        else if (!S_ISREG(st.st_mode)) op.e = EISDIR;
        else if ((uint64_t)st.st_size > s->workspace_bytes) op.e = EFBIG;
        else if (read_all(fd, (size_t)st.st_size, data, len)) ok = true;
        else op.e = errno;
        if (fd >= 0) close(fd);
    }
    int e = op.e;
    file_op_end(s, &op);
    return ok || path_fail(e, path, err, errlen);
}

/* ---- executions -------------------------------------------------------------------- */

static void output_trampoline(void *ctx, int stream, const uint8_t *data, size_t len) {
    session *se = ctx;
    if (se->out_fn) se->out_fn(se->out_ctx, stream, data, len);
}

/* An al_result for a sandbox that could not be opened (the execution still
 * gets a result, audited like any other). */
static void result_from_error(al_result *r, const al_error *e, al_isolation backend) {
    memset(r, 0, sizeof *r);
    r->status = e->kind == AL_ERR_UNSUPPORTED ? AL_STATUS_UNSUPPORTED : AL_STATUS_ERROR;
    r->error = *e;
    r->stdout_data = calloc(1, 1);
    r->stderr_data = calloc(1, 1);
    snprintf(r->backend, sizeof r->backend, "%s", backend_name(backend));
}

/* The module of a wasm execution: the request's bytes, or the file at
 * module_path (execute.c has checked it is inside allowed_paths). */
static bool module_bytes(const svc_exec_request *req, size_t cap, uint8_t **owned,
                         const uint8_t **bytes, size_t *len, char *err, size_t errlen) {
    *owned = NULL;
    if (req->module) {
        *bytes = req->module;
        *len = req->module_len;
        return true;
    }
    if (!req->module_path) return fail(EINVAL, err, errlen, "a wasm execution needs a module");
    int fd = open(req->module_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > cap ||
        !read_all(fd, (size_t)st.st_size, owned, len)) {
        if (fd >= 0) close(fd);
        return fail(EINVAL, err, errlen, "cannot read the module");
    }
    close(fd);
    *bytes = *owned;
    return true;
}

static bool run_python(svc_sessions *s, session *se, const al_policy *p,
                       const svc_exec_request *req, al_result *result, char *err, size_t errlen) {
    if (!req->code) return fail(EINVAL, err, errlen, "a python execution needs code");
    pthread_mutex_lock(&s->mu);
    al_python *py = s->py;
    pthread_mutex_unlock(&s->mu);
    if (!py) return fail(ENOTSUP, err, errlen, "Python is not available on this daemon");
    if (!se->py) {
        al_error e = {0};
        se->py = al_python_session_open(py, p, &e);
        if (!se->py) {
            result_from_error(result, &e, AL_ISOLATION_WASM);
            return true;
        }
    }
    if (!al_python_session_exec(se->py, req->code, p->timeout_ms, result))
        return fail(EIO, err, errlen, result->error.message[0] ? result->error.message
                                                              : "the interpreter failed");
    return true;
}

static bool run_command(session *se, const al_policy *p, al_result *result, char *err,
                        size_t errlen) {
    if (p->argc == 0 || !p->argv) return fail(EINVAL, err, errlen, "a command needs argv");
    if (!se->box) {
        al_error e = {0};
        se->box = al_session_open(p, &e);
        if (!se->box) {
            result_from_error(result, &e, se->info.backend);
            return true;
        }
    }
    if (!al_session_exec(se->box, p, result))
        return fail(EIO, err, errlen, result->error.message[0] ? result->error.message
                                                              : "the sandbox failed");
    return true;
}

static bool run_wasm(const al_policy *p, const svc_exec_request *req, al_result *result,
                     char *err, size_t errlen) {
    uint8_t *owned;
    const uint8_t *bytes;
    size_t len;
    size_t cap = p->max_module_bytes ? p->max_module_bytes : MODULE_BYTES_DEFAULT;
    if (!module_bytes(req, cap, &owned, &bytes, &len, err, errlen)) return false;
    bool ok = al_run_wasm(p, bytes, len, result);
    free(owned);
    if (!ok)
        return fail(EIO, err, errlen, result->error.message[0] ? result->error.message
                                                              : "the module could not run");
    return true;
}

/* policy + the workspace at /workspace (first, and the default cwd) + the
 * session's isolation and output trampoline. dirs: room for ndirs + 1. */
static bool session_policy(session *se, const al_policy *policy, al_policy *p,
                           al_dir_grant *dirs, char *err, size_t errlen) {
    for (size_t i = 0; i < policy->ndirs; i++) {
        const char *g = policy->dirs[i].guest_path;
        if (g && strncmp(g, WORKSPACE_GUEST, strlen(WORKSPACE_GUEST)) == 0 &&
            (g[strlen(WORKSPACE_GUEST)] == '\0' || g[strlen(WORKSPACE_GUEST)] == '/'))
            return fail(EINVAL, err, errlen, "/workspace is the session's own directory");
    }
    *p = *policy;
    dirs[0] = (al_dir_grant){.host_path = se->workspace, .guest_path = WORKSPACE_GUEST,
                             .read_only = false};
    for (size_t i = 0; i < policy->ndirs; i++) dirs[i + 1] = policy->dirs[i];
    p->dirs = dirs;
    p->ndirs = policy->ndirs + 1;
    if (!p->cwd) p->cwd = WORKSPACE_GUEST;
    p->isolation = se->info.backend;
    se->out_fn = policy->on_output;
    se->out_ctx = policy->on_output_ctx;
    p->on_output = output_trampoline;
    p->on_output_ctx = se;
    return true;
}

bool svc_session_exec(svc_sessions *s, const char *id, const char *token,
                      const al_policy *policy, const svc_exec_request *req, al_result *result,
                      char *err, size_t errlen) {
    memset(result, 0, sizeof *result);
    session *se = acquire(s, id, token, true);
    if (!se) {
        int e = errno;
        return fail(e, err, errlen, e == EBUSY ? "the session is running an execution"
                                               : "no such session");
    }
    bool ok = false;
    al_dir_grant *dirs = calloc(policy->ndirs + 1, sizeof *dirs);
    al_policy p;
    if (!dirs) {
        fail(ENOMEM, err, errlen, "out of memory");
    } else if (req->kind != se->info.kind) {
        snprintf(err, errlen, "this session runs %s executions", kind_name(se->info.kind));
        errno = EINVAL;
    } else if (session_policy(se, policy, &p, dirs, err, errlen)) {
        switch (se->info.kind) {
        case SVC_PYTHON: ok = run_python(s, se, &p, req, result, err, errlen); break;
        case SVC_COMMAND: ok = run_command(se, &p, result, err, errlen); break;
        case SVC_WASM: ok = run_wasm(&p, req, result, err, errlen); break;
        case SVC_PLUGIN: fail(EINVAL, err, errlen, "plugins have no sessions"); break;
        }
    }
    int e = errno;
    if (!ok) { /* no result on failure: nothing for the caller to free */
        al_result_free(result);
        memset(result, 0, sizeof *result);
    }
    se->out_fn = NULL;
    se->out_ctx = NULL;
    free(dirs);
    release(s, se, true);
    errno = e;
    return ok;
}
