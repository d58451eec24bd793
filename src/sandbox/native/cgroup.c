/*
 * cgroup.c — the cgroup interface of the native backend (native.h): picks
 * cgroup v2 or v1 for a sandbox, adds processes, reads the statistics,
 * destroys, collects the cgroups of dead airlock processes (al_gc) and probes
 * what is writable (airlock doctor). cgroup_v2.c and cgroup_v1.c hold the
 * version-specific parts; the file helpers they share are defined here.
 *
 * Invariants:
 * - Every cgroup airlock makes is a directory "airlock.al-<ownerpid>-..."
 *   directly under one of the parent directories that cgroup_v2_parents and
 *   cgroup_v1_parents list, and nowhere else: al_gc looks exactly there.
 * - Hierarchies are found from /proc/self/mountinfo (checked with statfs'
 *   magic) and this process's place in them from /proc/self/cgroup, never
 *   from fixed paths.
 * - Files are read and written with open/read/write into bounded buffers;
 *   numbers are parsed strictly (digits only, no sign, no overflow). Values in
 *   a cgroup the sandbox lives in are treated as attacker-influenced.
 * - A pid is signalled only when it was listed in the cgroup both before and
 *   after a pidfd for it was opened, so a pid the kernel reused for an
 *   unrelated host process in between is never killed.
 * - Nothing here runs in the sandbox child (it allocates, e.g. opendir).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "native.h"

#define NAME_MAX_LEN 200           /* "airlock." + name stays far below NAME_MAX */
#define REMOVE_ROUNDS 200          /* rmdir attempts (5 ms apart: ~1 s) */
#define KILL_BATCH 256             /* pids signalled per round */
#define MAX_PARENTS 12             /* directories cgroups may be made in */
#define MAX_DEPTH 8                /* sub-cgroups followed when removing */

/* ---- reading lines with a bounded buffer ------------------------------------ */

/* Lines longer than the buffer are skipped whole: no caller needs one (a
 * mountinfo line that long is not a cgroup mount we could use anyway). A
 * reader reads a file, or walks text already in memory (a snapshot), copying
 * each line into buf so the caller may cut it up. */
typedef struct line_reader {
    int fd;
    const char *text;   /* memory mode: the rest of the text (NULL: file mode) */
    size_t start, end;
    bool eof, error, overlong;
    char buf[8192];
} line_reader;

static bool reader_open(line_reader *r, const char *path) {
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    r->text = NULL;
    r->start = r->end = 0;
    r->eof = r->error = r->overlong = false;
    return r->fd >= 0;
}

static void reader_open_text(line_reader *r, const char *text) {
    r->fd = -1;
    r->text = text;
    r->start = r->end = 0;
    r->eof = r->error = r->overlong = false;
}

static void reader_close(line_reader *r) {
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
}

static void reader_fill(line_reader *r) {
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == sizeof r->buf - 1) { /* one line fills the buffer: drop it */
        r->overlong = true;
        r->end = 0;
    }
    ssize_t n = read(r->fd, r->buf + r->end, sizeof r->buf - 1 - r->end);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
        r->eof = true;
        r->error = n < 0;
        return;
    }
    r->end += (size_t)n;
}

static char *text_next(line_reader *r) {
    while (*r->text) {
        const char *nl = strchr(r->text, '\n');
        size_t len = nl ? (size_t)(nl - r->text) : strlen(r->text);
        const char *line = r->text;
        r->text += len + (nl ? 1 : 0);
        if (len >= sizeof r->buf) continue; /* overlong: skipped, like a file's */
        memcpy(r->buf, line, len);
        r->buf[len] = '\0';
        return r->buf;
    }
    return NULL;
}

/* The next line without its '\n' (NUL-terminated, valid until the next
 * call), or NULL at the end. */
static char *reader_next(line_reader *r) {
    if (r->text) return text_next(r);
    for (;;) {
        char *base = r->buf + r->start;
        char *nl = memchr(base, '\n', r->end - r->start);
        if (nl || (r->eof && r->start < r->end)) {
            char *stop = nl ? nl : r->buf + r->end;
            *stop = '\0';
            r->start = (size_t)(stop - r->buf) + (nl ? 1 : 0);
            if (r->overlong) { /* the tail of a dropped line */
                r->overlong = false;
                continue;
            }
            return base;
        }
        if (r->eof) return NULL;
        reader_fill(r);
    }
}

/* A whole proc file as a NUL-terminated heap string (NULL with errno). */
static char *read_whole(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return NULL;
    size_t len = 0, cap = 8192;
    char *text = malloc(cap);
    while (text) {
        if (len + 1 == cap) {
            char *grown = cap < (64u << 20) ? realloc(text, cap * 2) : NULL;
            if (!grown) {
                free(text);
                text = NULL;
                errno = ENOMEM;
                break;
            }
            text = grown;
            cap *= 2;
        }
        ssize_t n = read(fd, text + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            free(text);
            text = NULL;
            break;
        }
        if (n == 0) {
            text[len] = '\0';
            break;
        }
        len += (size_t)n;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return text;
}

bool cgroup_snapshot_take(cgroup_snapshot *snap) {
    snap->mountinfo = read_whole("/proc/self/mountinfo");
    snap->self_cgroup = snap->mountinfo ? read_whole("/proc/self/cgroup") : NULL;
    if (snap->self_cgroup) return true;
    int saved = errno;
    cgroup_snapshot_free(snap);
    errno = saved;
    return false;
}

void cgroup_snapshot_free(cgroup_snapshot *snap) {
    free(snap->mountinfo);
    free(snap->self_cgroup);
    snap->mountinfo = snap->self_cgroup = NULL;
}

/* A reader over the snapshot's copy of path's text, or over the file. */
static bool reader_open_from(line_reader *r, const cgroup_snapshot *snap, const char *path) {
    const char *text = !snap ? NULL
                       : strcmp(path, "/proc/self/mountinfo") == 0 ? snap->mountinfo
                                                                   : snap->self_cgroup;
    if (!text) return reader_open(r, path);
    reader_open_text(r, text);
    return true;
}

/* ---- strict numbers and words ------------------------------------------------- */

/* A decimal u64: digits only, optionally one trailing newline. */
static bool parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s)) return false;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (*s == '\n') s++;
    if (*s) return false;
    *out = v;
    return true;
}

/* A pid: 1..INT_MAX. 0 (a process of another pid namespace, as cgroup v2
 * shows them) and anything else are refused, so it can never reach kill()
 * as 0 or -1, which would signal a whole process group or every process. */
static bool parse_pid(const char *s, pid_t *out) {
    uint64_t v;
    if (!parse_u64(s, &v) || v == 0 || v > INT_MAX) return false;
    *out = (pid_t)v;
    return true;
}

bool cgroup_has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\n' || *p == ',') p++;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\n' && *end != ',') end++;
        if ((size_t)(end - p) == n && !memcmp(p, word, n)) return true;
        p = end;
    }
    return false;
}

/* ---- files in a cgroup directory ------------------------------------------- */

bool cgroup_join(char *out, const char *dir, const char *name) {
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return false;
    }
    return true;
}

/* One write(2) of the whole text: cgroup files take one value per write. */
bool cgroup_write(const char *dir, const char *file, const char *text) {
    char path[PATH_MAX];
    if (!cgroup_join(path, dir, file)) return false;
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    size_t len = strlen(text);
    ssize_t n;
    do {
        n = write(fd, text, len);
    } while (n < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (n == (ssize_t)len) return true;
    errno = n < 0 ? saved : EIO;
    return false;
}

bool cgroup_write_u64(const char *dir, const char *file, uint64_t value) {
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    return cgroup_write(dir, file, text);
}

/* The whole file, NUL-terminated; false (EFBIG) when it does not fit. */
bool cgroup_read(const char *dir, const char *file, char *buf, size_t len) {
    char path[PATH_MAX];
    if (len == 0 || !cgroup_join(path, dir, file)) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    size_t used = 0;
    for (;;) {
        if (used == len - 1) {
            char extra;
            ssize_t more = read(fd, &extra, 1);
            close(fd);
            if (more == 0) break;
            errno = EFBIG;
            return false;
        }
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return false;
        }
        if (n == 0) {
            close(fd);
            break;
        }
        used += (size_t)n;
    }
    buf[used] = '\0';
    return true;
}

bool cgroup_read_u64(const char *dir, const char *file, uint64_t *value) {
    char buf[32];
    if (!cgroup_read(dir, file, buf, sizeof buf)) return false;
    if (parse_u64(buf, value)) return true;
    errno = EINVAL;
    return false;
}

/* The value of a "key N" line (memory.events, pids.events, cpu.stat,
 * memory.oom_control). */
bool cgroup_read_key(const char *dir, const char *file, const char *key, uint64_t *value) {
    char path[PATH_MAX];
    line_reader r;
    if (!cgroup_join(path, dir, file) || !reader_open(&r, path)) return false;
    size_t klen = strlen(key);
    bool found = false;
    for (char *line; !found && (line = reader_next(&r));) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            found = parse_u64(line + klen + 1, value);
    }
    reader_close(&r);
    if (!found) errno = ENOENT;
    return found;
}

/* ---- finding the hierarchies ------------------------------------------------ */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s) {
    char *out = s;
    for (char *in = s; *in;) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
            in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 4;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
}

/* Split a mountinfo line into its fields; returns how many (at most max). */
static size_t split_fields(char *line, char **fields, size_t max) {
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(line, " ", &save); tok && n < max;
         tok = strtok_r(NULL, " ", &save))
        fields[n++] = tok;
    return n;
}

/* The mount point and mount root of the hierarchy holding controller
 * (NULL: the cgroup2 hierarchy). */
static bool find_mount(const cgroup_snapshot *snap, const char *controller, char *mountpoint,
                       char *mount_root) {
    line_reader r;
    if (!reader_open_from(&r, snap, "/proc/self/mountinfo")) return false;
    bool found = false;
    for (char *line; !found && (line = reader_next(&r));) {
        char *f[64];
        size_t n = split_fields(line, f, 64);
        /* id parent maj:min root mountpoint options [optional...] - fstype
         * source superoptions */
        size_t dash = 6;
        while (dash < n && strcmp(f[dash], "-") != 0) dash++;
        if (dash + 3 >= n) continue;
        const char *fstype = f[dash + 1], *super = f[dash + 3];
        if (controller ? strcmp(fstype, "cgroup") != 0 || !cgroup_has_word(super, controller)
                       : strcmp(fstype, "cgroup2") != 0)
            continue;
        unescape_octal(f[3]);
        unescape_octal(f[4]);
        if (strlen(f[3]) >= PATH_MAX || strlen(f[4]) >= PATH_MAX) continue;
        struct statfs sfs;
        if (statfs(f[4], &sfs) < 0) continue;
        if ((unsigned long)sfs.f_type !=
            (controller ? (unsigned long)CGROUP_SUPER_MAGIC : (unsigned long)CGROUP2_SUPER_MAGIC))
            continue;
        snprintf(mountpoint, PATH_MAX, "%s", f[4]);
        snprintf(mount_root, PATH_MAX, "%s", f[3]);
        found = true;
    }
    reader_close(&r);
    return found;
}

/* This process's cgroup path in the hierarchy of controller (NULL: v2). */
static bool find_own_path(const cgroup_snapshot *snap, const char *controller, char *path) {
    line_reader r;
    if (!reader_open_from(&r, snap, "/proc/self/cgroup")) return false;
    bool found = false;
    for (char *line; !found && (line = reader_next(&r));) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        const char *list = c1 + 1, *p = c2 + 1;
        bool match = controller ? cgroup_has_word(list, controller)
                                : (strncmp(line, "0:", 2) == 0 && *list == '\0');
        if (!match || *p != '/' || strlen(p) >= PATH_MAX) continue;
        snprintf(path, PATH_MAX, "%s", p);
        found = true;
    }
    reader_close(&r);
    return found;
}

bool cgroup_v1_has_limits(void) {
    line_reader r;
    if (!reader_open(&r, "/proc/self/cgroup")) return false;
    bool bound = false;
    for (char *line; !bound && (line = reader_next(&r));) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || strncmp(line, "0:", 2) == 0) continue; /* "0::" is v2 */
        *c2 = '\0';
        bound = cgroup_has_word(c1 + 1, "memory") || cgroup_has_word(c1 + 1, "pids");
    }
    reader_close(&r);
    return bound;
}

/* A path that climbs ("/.." appears when our cgroup lies outside the
 * cgroup namespace's root) does not name a directory under the mount. */
static bool path_climbs(const char *p) {
    for (const char *s = strstr(p, "/.."); s; s = strstr(s + 1, "/.."))
        if (s[3] == '\0' || s[3] == '/') return true;
    return false;
}

/* root: the hierarchy's mount point; current: this process's cgroup in it
 * (the mount point when it cannot be placed under the mount). */
bool cgroup_find(const cgroup_snapshot *snap, const char *controller, char *root, char *current) {
    char mount_root[PATH_MAX], own[PATH_MAX];
    if (!find_mount(snap, controller, root, mount_root)) {
        errno = ENOENT;
        return false;
    }
    snprintf(current, PATH_MAX, "%s", root);
    if (!find_own_path(snap, controller, own) || path_climbs(own)) return true;
    const char *rel = own;
    if (strcmp(mount_root, "/") != 0) {
        size_t n = strlen(mount_root);
        if (strncmp(own, mount_root, n) != 0 || (own[n] != '/' && own[n] != '\0')) return true;
        rel = own + n;
    }
    while (*rel == '/') rel++;
    if (*rel == '\0') return true;
    if (!cgroup_join(current, root, rel)) {
        snprintf(current, PATH_MAX, "%s", root);
        return true;
    }
    size_t len = strlen(current);
    while (len > 1 && current[len - 1] == '/') current[--len] = '\0';
    return true;
}

/* ---- killing and removing --------------------------------------------------- */

static int pidfd_open_(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_kill(int pidfd) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* Calls fn for each pid listed in dir/cgroup.procs; *invisible counts
 * entries that are not a pid of our namespace (v2 shows those as 0). */
static void each_member(const char *dir, void (*fn)(pid_t, void *), void *ctx,
                        size_t *invisible) {
    char path[PATH_MAX];
    line_reader r;
    if (!cgroup_join(path, dir, "cgroup.procs") || !reader_open(&r, path)) return;
    for (char *line; (line = reader_next(&r));) {
        pid_t pid;
        if (parse_pid(line, &pid))
            fn(pid, ctx);
        else if (invisible && *line)
            (*invisible)++;
    }
    reader_close(&r);
}

typedef struct kill_batch {
    pid_t pid[KILL_BATCH];
    int fd[KILL_BATCH];
    bool again[KILL_BATCH];
    size_t n;
    size_t listed;     /* members seen in the first listing */
} kill_batch;

static void batch_add(pid_t pid, void *ctx) {
    kill_batch *b = ctx;
    b->listed++;
    if (b->n == KILL_BATCH) return; /* the rest is signalled next round */
    b->pid[b->n] = pid;
    b->fd[b->n] = -1;
    b->again[b->n] = false;
    b->n++;
}

static void batch_confirm(pid_t pid, void *ctx) {
    kill_batch *b = ctx;
    for (size_t i = 0; i < b->n; i++)
        if (b->pid[i] == pid) b->again[i] = true;
}

/* SIGKILL every member once; returns how many were listed. */
static size_t kill_members(const char *dir) {
    kill_batch batch, *b = &batch;
    b->n = b->listed = 0;
    each_member(dir, batch_add, b, NULL);
    bool have_pidfd = true;
    for (size_t i = 0; i < b->n; i++) {
        b->fd[i] = pidfd_open_(b->pid[i]);
        if (b->fd[i] < 0 && errno == ENOSYS) have_pidfd = false;
    }
    /* Listed again after the pidfds exist: a pidfd whose pid is still a
     * member is that member (a reused pid would not be listed here). */
    each_member(dir, batch_confirm, b, NULL);
    for (size_t i = 0; i < b->n; i++) {
        if (b->again[i]) {
            if (b->fd[i] >= 0)
                pidfd_kill(b->fd[i]);
            else if (!have_pidfd) /* kernel < 5.3: the re-listing is all we have */
                kill(b->pid[i], SIGKILL);
        }
        if (b->fd[i] >= 0) close(b->fd[i]);
    }
    return b->listed;
}

static void pause_ms(long ms) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static bool remove_tree(const char *dir, int depth);

/* Sub-cgroups first: rmdir refuses a cgroup that has children. */
static void remove_children(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[PATH_MAX];
        if (cgroup_join(child, dir, e->d_name)) remove_tree(child, depth + 1);
    }
    closedir(d);
}

static bool remove_tree(const char *dir, int depth) {
    if (depth > MAX_DEPTH) return false;
    /* The common case first: a sandbox whose processes are all gone and
     * that made no sub-cgroups is one rmdir, with no directory listing. */
    if (rmdir(dir) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY && errno != ENOTEMPTY) return false;
    remove_children(dir, depth); /* rmdir refuses a cgroup with children (EBUSY) */
    for (int round = 0; round < REMOVE_ROUNDS; round++) {
        if (rmdir(dir) == 0 || errno == ENOENT) return true;
        if (errno != EBUSY && errno != ENOTEMPTY) return false;
        /* EBUSY: tasks are still in it (or still exiting). */
        kill_members(dir);
        if (round > 0) pause_ms(5);
        if (round % 20 == 19) remove_children(dir, depth); /* one appeared meanwhile */
    }
    errno = EBUSY;
    return false;
}

/* Kill whatever is in dir (and below), then rmdir it. Only a directory
 * airlock names ("airlock.*"): a damaged native_cgroup must never turn this
 * into SIGKILL for every member of a parent cgroup (or of the root). */
bool cgroup_remove(const char *dir) {
    const char *base = strrchr(dir, '/');
    if (!base || strncmp(base + 1, CGROUP_DIR_PREFIX, strlen(CGROUP_DIR_PREFIX)) != 0) {
        errno = EINVAL;
        return false;
    }
    return remove_tree(dir, 0);
}

/* ---- the interface ------------------------------------------------------------ */

/* "al-<pid>-" then [A-Za-z0-9._-]: nothing that could climb out of the
 * parent directory, and the owner pid al_gc needs. */
static bool valid_name(const char *name, pid_t *owner) {
    size_t len = strnlen(name, NAME_MAX_LEN + 1);
    if (len > NAME_MAX_LEN || strncmp(name, "al-", 3) != 0) return false;
    const char *p = name + 3;
    uint64_t pid = 0;
    size_t digits = 0;
    for (; isdigit((unsigned char)*p) && digits < 10; p++, digits++) pid = pid * 10 + (uint64_t)(*p - '0');
    if (digits == 0 || *p != '-' || pid == 0 || pid > INT_MAX) return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.') return false;
    if (owner) *owner = (pid_t)pid;
    return true;
}

bool cgroup_create(native_cgroup *cg, const char *name, uint64_t memory_bytes,
                   uint32_t max_processes, al_error *err) {
    memset(cg, 0, sizeof *cg);
    if (!name || !valid_name(name, NULL))
        return sandbox_error(err, AL_ERR_ARGUMENT, "cgroup name '%.64s' is not al-<pid>-...",
                             name ? name : "(null)");
    /* Without a snapshot (out of memory) each lookup reads the files. */
    cgroup_snapshot snap;
    const cgroup_snapshot *use = cgroup_snapshot_take(&snap) ? &snap : NULL;
    bool made = cgroup_v2_create(use, cg, name, memory_bytes, max_processes);
    int v2_errno = made ? 0 : errno, v1_errno = 0;
    if (!made) {
        memset(cg, 0, sizeof *cg);
        made = cgroup_v1_create(use, cg, name, memory_bytes, max_processes);
        v1_errno = made ? 0 : errno;
    }
    if (use) cgroup_snapshot_free(&snap);
    if (made) return true;
    memset(cg, 0, sizeof *cg);
    /* Ids are unique, so an existing directory is someone else's: its limits
     * (and its other members) are not ours to trust or to share. */
    if (v2_errno == EEXIST || v1_errno == EEXIST) {
        errno = EEXIST;
        return sandbox_error_errno(err, "cgroup " CGROUP_DIR_PREFIX "%s", name);
    }
    return true; /* version 0: nothing writable, the caller uses rlimits */
}

bool cgroup_create_version(const cgroup_snapshot *snap, int version, native_cgroup *cg,
                           const char *name, uint64_t memory_bytes, uint32_t max_processes,
                           al_error *err) {
    memset(cg, 0, sizeof *cg);
    if (!name || !valid_name(name, NULL))
        return sandbox_error(err, AL_ERR_ARGUMENT, "cgroup name '%.64s' is not al-<pid>-...",
                             name ? name : "(null)");
    errno = EINVAL;
    bool made = version == 2   ? cgroup_v2_create(snap, cg, name, memory_bytes, max_processes)
                : version == 1 ? cgroup_v1_create(snap, cg, name, memory_bytes, max_processes)
                               : false;
    if (made) return true;
    int saved = errno;
    memset(cg, 0, sizeof *cg);
    if (saved == EEXIST) { /* ids are unique: see cgroup_create */
        errno = EEXIST;
        return sandbox_error_errno(err, "cgroup " CGROUP_DIR_PREFIX "%s", name);
    }
    return true;
}

bool cgroup_add_process(const native_cgroup *cg, pid_t pid, al_error *err) {
    char text[16];
    snprintf(text, sizeof text, "%d", (int)pid);
    if (cg->version == 2) {
        if (!cgroup_write(cg->path, "cgroup.procs", text))
            return sandbox_error_errno(err, "moving pid %d into cgroup %s", (int)pid, cg->path);
        return true;
    }
    if (cg->version == 1) {
        const char *dirs[] = {cg->memory, cg->pids, cg->cpuacct};
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
            if (dirs[i][0] && !cgroup_write(dirs[i], "cgroup.procs", text))
                return sandbox_error_errno(err, "moving pid %d into cgroup %s", (int)pid, dirs[i]);
        }
    }
    return true;
}

bool cgroup_open_self_join(const native_cgroup *cg, int fds[NATIVE_CGROUP_JOIN_MAX]) {
    for (size_t i = 0; i < NATIVE_CGROUP_JOIN_MAX; i++) fds[i] = -1;
    if (cg->version != 1) return true;
    const char *dirs[NATIVE_CGROUP_JOIN_MAX] = {cg->memory, cg->pids, cg->cpuacct};
    size_t n = 0;
    for (size_t i = 0; i < NATIVE_CGROUP_JOIN_MAX; i++) {
        bool seen = !dirs[i][0];
        for (size_t k = 0; k < i && !seen; k++) seen = strcmp(dirs[k], dirs[i]) == 0;
        if (seen) continue; /* a hierarchy holding two of the controllers */
        char path[PATH_MAX];
        int fd = cgroup_join(path, dirs[i], "tasks")
                     ? open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
                     : -1;
        if (fd < 0) {
            int saved = errno;
            for (size_t k = 0; k < n; k++) close(fds[k]);
            for (size_t k = 0; k < NATIVE_CGROUP_JOIN_MAX; k++) fds[k] = -1;
            errno = saved;
            return false;
        }
        fds[n++] = fd;
    }
    return true;
}

int cgroup_open_dir(const native_cgroup *cg) {
    if (cg->version != 2) {
        errno = EINVAL;
        return -1;
    }
    return open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

void cgroup_read_stats(const native_cgroup *cg, native_cgroup_stats *stats) {
    memset(stats, 0, sizeof *stats);
    if (cg->version == 2) cgroup_v2_read_stats(cg, stats);
    if (cg->version == 1) cgroup_v1_read_stats(cg, stats);
}

void cgroup_destroy(native_cgroup *cg) {
    if (cg->version == 2) cgroup_v2_destroy(cg);
    if (cg->version == 1) cgroup_v1_destroy(cg);
    memset(cg, 0, sizeof *cg);
}

void cgroup_probe(bool *v1_writable, char *v1_controllers, size_t v1_len, bool *v2_writable,
                  char *v2_controllers, size_t v2_len) {
    char name[64];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* An owner-pid name, so a probe cut short by a crash is collected. */
    snprintf(name, sizeof name, "al-%d-probe-%lld%09ld", (int)getpid(), (long long)now.tv_sec,
             now.tv_nsec);
    cgroup_v1_probe(name, v1_writable, v1_controllers, v1_len);
    cgroup_v2_probe(name, v2_writable, v2_controllers, v2_len);
}

/* ---- orphans ---------------------------------------------------------------- */

/* Are pid's processes ours to judge? The owner pid in a name is a pid of
 * the namespace the owner ran in. Sandbox processes live in that namespace
 * or in a pid namespace the owner made (its direct child), so a member whose
 * namespace is neither ours nor a child of ours belongs to an airlock of
 * another container, whose pid numbers mean nothing here. */
static bool pid_ns_is_ours_or_child(pid_t pid, const struct stat *ours) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT; /* gone meanwhile: nothing to protect */
    struct stat st;
    bool ok = false;
    if (fstat(fd, &st) == 0) {
        if (st.st_dev == ours->st_dev && st.st_ino == ours->st_ino) {
            ok = true;
        } else {
            int parent = ioctl(fd, NS_GET_PARENT);
            if (parent >= 0) {
                ok = fstat(parent, &st) == 0 && st.st_dev == ours->st_dev &&
                     st.st_ino == ours->st_ino;
                close(parent);
            }
        }
    }
    close(fd);
    return ok;
}

typedef struct member_check {
    struct stat ours;
    bool foreign;
    size_t seen;
} member_check;

static void check_member(pid_t pid, void *ctx) {
    member_check *m = ctx;
    m->seen++;
    if (!pid_ns_is_ours_or_child(pid, &m->ours)) m->foreign = true;
}

/* Removes dir when it is provably an orphan of our pid namespace. */
static bool collect_one(const char *dir) {
    member_check m = {.foreign = false, .seen = 0};
    size_t invisible = 0;
    if (stat("/proc/self/ns/pid", &m.ours) < 0) return false;
    each_member(dir, check_member, &m, &invisible);
    if (m.foreign || invisible > 0) return false;
    if (m.seen == 0) {
        /* Empty to our eyes. EBUSY now means members we cannot see (another
         * pid namespace): not ours, leave it. */
        remove_children(dir, 0);
        return rmdir(dir) == 0;
    }
    return cgroup_remove(dir);
}

/* The owner pid (and start time, when the id records it as sandbox_new_id
 * does: "al-<pid>-<start time>-<counter>") of an entry name; false when the
 * name is not one of ours. */
static bool orphan_owner(const char *entry, pid_t *pid, unsigned long long *start) {
    size_t plen = strlen(CGROUP_DIR_PREFIX);
    if (strncmp(entry, CGROUP_DIR_PREFIX, plen) != 0) return false;
    const char *name = entry + plen;
    if (!valid_name(name, pid)) return false;
    const char *p = strchr(name + 3, '-') + 1;
    *start = 0;
    uint64_t v = 0;
    const char *q = p;
    for (; isdigit((unsigned char)*q) && q - p < 20; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - d) / 10) return true;
        v = v * 10 + d;
    }
    if (q > p && *q == '-') *start = v;
    return true;
}

/* A tiny set of names already counted: one sandbox has a directory in each
 * v1 hierarchy, but is one cgroup for the report. */
typedef struct name_set {
    uint64_t hash[256];
    size_t n;
} name_set;

static bool name_set_add(name_set *s, const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211ull;
    for (size_t i = 0; i < s->n; i++)
        if (s->hash[i] == h) return false;
    if (s->n < sizeof s->hash / sizeof s->hash[0]) s->hash[s->n++] = h;
    return true;
}

static unsigned scan_parent(const char *parent, name_set *counted) {
    DIR *d = opendir(parent);
    if (!d) return 0;
    unsigned removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid;
        unsigned long long start;
        char path[PATH_MAX];
        if (e->d_type != DT_DIR || !orphan_owner(e->d_name, &pid, &start)) continue;
        if (sandbox_owner_alive(pid, start)) continue;
        if (!cgroup_join(path, parent, e->d_name) || !collect_one(path)) continue;
        if (name_set_add(counted, e->d_name)) removed++;
    }
    closedir(d);
    return removed;
}

unsigned cgroup_collect_orphans(void) {
    char (*parents)[PATH_MAX] = calloc(MAX_PARENTS, PATH_MAX);
    name_set *counted = calloc(1, sizeof *counted);
    unsigned removed = 0;
    if (parents && counted) {
        size_t n = cgroup_v2_parents(NULL, parents, MAX_PARENTS);
        n += cgroup_v1_parents(NULL, parents + n, MAX_PARENTS - n);
        for (size_t i = 0; i < n; i++) removed += scan_parent(parents[i], counted);
    }
    free(parents);
    free(counted);
    return removed;
}

bool cgroup_add_unique(char (*out)[PATH_MAX], size_t *n, size_t max, const char *dir) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp(out[i], dir) == 0) return false;
    if (*n == max) return false;
    snprintf(out[*n], PATH_MAX, "%s", dir);
    (*n)++;
    return true;
}
