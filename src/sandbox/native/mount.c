/*
 * mount.c — the sandbox's filesystem: a new root built on a tmpfs and entered
 * with pivot_root (see native.h, "mount.c").
 *
 * The new root, and nothing else of the host:
 *   /             tmpfs (nosuid nodev noexec), read-only once built
 *   /usr          the host's /usr: recursive bind, read-only nosuid nodev
 *   /bin /sbin /lib /lib64 /lib32 /libx32
 *                 the host's: a symlink is copied as a symlink (merged /usr:
 *                 /bin -> usr/bin), a directory is bound like /usr
 *   /etc          passwd group hosts hostname nsswitch.conf resolv.conf
 *                 written here; read-only binds of the host's ld.so.cache,
 *                 alternatives/, ssl/certs/ (public CA certificates) and
 *                 localtime. Never shadow, sudoers, ssh keys or anything else
 *   /proc         a fresh procfs of the sandbox's pid namespace, hidepid
 *   /dev          read-only tmpfs: null zero full random urandom (binds of the
 *                 host's nodes), fd stdin stdout stderr symlinks, shm tmpfs
 *   /tmp          tmpfs of plan->tmpfs_bytes, mode 1777, nosuid nodev
 *   grants        binds of the host directories, nosuid nodev, ro or rw
 *
 * Invariants:
 *  - Runs in the sandbox init (pid 1 of the new pid namespace, in new user and
 *    mount namespaces, already switched to the guest uid/gid): no malloc, no
 *    stdio, no locks; only system calls and bounded string building on the
 *    stack (about 10 KiB of it at the deepest). The guest uid/gid must be
 *    in effect already: files made in our tmpfs need a mapped fsuid
 *    (EOVERFLOW otherwise), and they then belong to the guest — which is why
 *    / and /dev are remounted read-only.
 *  - Kernel 5.12+ (mount_setattr) for recursive flags; older kernels fall
 *    back to bind remounts of the top mount only (AIRLOCK_TEST_NO_MOUNT_SETATTR
 *    forces that path in tests).
 *  - Every host mount bound here only gains restrictions (ro, nosuid, nodev,
 *    noexec); flags the host locked on it are kept, never cleared.
 *  - A grant's mount point never traverses a symlink and never lands in the
 *    system directories; a missing mount point is created only on a tmpfs
 *    made here (never in a host directory of another grant).
 *  - On failure: false, *step names the step (a static string shorter than
 *    native_msg.step), errno is the step's errno.
 *    The caller (init) reports it and exits; a half-built root dies with the
 *    mount namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

#define MIB (UINT64_C(1) << 20)
#define DEFAULT_TMP_BYTES (64 * MIB)
#define SHM_MAX_BYTES (16 * MIB)

/* ---- bounded string building (no snprintf: it may allocate) ----------------- */

typedef struct strbuf {
    char *p;
    size_t cap, len;
    bool ok; /* false once something did not fit */
} strbuf;

static void sb_init(strbuf *b, char *p, size_t cap)
{
    b->p = p;
    b->cap = cap;
    b->len = 0;
    b->ok = cap > 0;
    if (cap > 0)
        p[0] = '\0';
}

static void sb_str(strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (!b->ok || n >= b->cap - b->len) {
        b->ok = false;
        return;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

static void sb_uint(strbuf *b, uint64_t v)
{
    char digits[24];
    size_t i = sizeof digits;
    digits[--i] = '\0';
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    sb_str(b, digits + i);
}

/* "/proc/self/fd/N": how a mount(2) path names an fd we hold. */
static void fd_path(char out[32], int fd)
{
    strbuf b;
    sb_init(&b, out, 32);
    sb_str(&b, "/proc/self/fd/");
    sb_uint(&b, (uint64_t)fd);
}

static bool fail(const char **step, const char *what)
{
    *step = what;
    return false;
}

static void close_keep_errno(int fd)
{
    int saved = errno;
    if (fd >= 0)
        close(fd);
    errno = saved;
}

/* ---- mount attributes ------------------------------------------------------ */

/* mount_setattr(2) (Linux 5.12), spelled out so that older libc headers do. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#define ATTR_RDONLY 0x1u
#define ATTR_NOSUID 0x2u
#define ATTR_NODEV 0x4u
#define ATTR_NOEXEC 0x8u

typedef struct mount_attr_args {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
} mount_attr_args;

static unsigned long attr_to_ms(unsigned attrs)
{
    unsigned long ms = 0;
    if (attrs & ATTR_RDONLY)
        ms |= MS_RDONLY;
    if (attrs & ATTR_NOSUID)
        ms |= MS_NOSUID;
    if (attrs & ATTR_NODEV)
        ms |= MS_NODEV;
    if (attrs & ATTR_NOEXEC)
        ms |= MS_NOEXEC;
    return ms;
}

/* Remount (MS_BIND|MS_REMOUNT) the mount at path with attrs added to the
 * flags it has. A bind remount replaces the per-mount flags, and inside a
 * user namespace the kernel refuses (EPERM) to clear flags the host locked
 * on the mount (a nosuid or nodev /home stays so): they are read back from
 * statfs and kept. Only the top mount changes: the fallback for kernels
 * before 5.12. */
static bool remount_adding(const char *path, unsigned attrs)
{
    struct statfs sf;
    if (statfs(path, &sf) != 0)
        return false;
    unsigned long flags = MS_BIND | MS_REMOUNT | attr_to_ms(attrs);
    if (sf.f_flags & ST_RDONLY)
        flags |= MS_RDONLY;
    if (sf.f_flags & ST_NOSUID)
        flags |= MS_NOSUID;
    if (sf.f_flags & ST_NODEV)
        flags |= MS_NODEV;
    if (sf.f_flags & ST_NOEXEC)
        flags |= MS_NOEXEC;
    if (sf.f_flags & ST_NOATIME)
        flags |= MS_NOATIME;
    if (sf.f_flags & ST_NODIRATIME)
        flags |= MS_NODIRATIME;
    if (sf.f_flags & ST_RELATIME)
        flags |= MS_RELATIME;
    return mount(NULL, path, NULL, flags, NULL) == 0;
}

static int set_attrs(int dfd, const char *path, unsigned at_flags, unsigned attrs)
{
#ifdef AIRLOCK_TEST_NO_MOUNT_SETATTR
    (void)dfd, (void)path, (void)at_flags, (void)attrs;
    errno = ENOSYS;
    return -1;
#else
    mount_attr_args a = {.attr_set = attrs};
    return (int)syscall(SYS_mount_setattr, dfd, path, at_flags, &a, sizeof a);
#endif
}

/* Add attrs to the mount at path (relative to the new root, or an fd path) and
 * to every mount below it. mount_setattr only sets the given bits, so locked
 * host flags are kept by construction, and AT_RECURSIVE also covers the
 * host's submounts of a recursive bind (a writable /usr/local mount under a
 * read-only /usr would otherwise stay writable). */
static bool seal(const char *path, unsigned attrs)
{
    if (set_attrs(AT_FDCWD, path, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, attrs) == 0)
        return true;
    if (errno != ENOSYS)
        return false;
    return remount_adding(path, attrs);
}

/* Bind host path src onto dst (a mount point already made in the new root),
 * then add attrs. The host's system paths are root's: no unprivileged user
 * can swap them for a symlink between the lstat and here. */
static bool bind_sealed(const char *src, const char *dst, unsigned attrs)
{
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
        return false;
    return seal(dst, attrs);
}

/* ---- files in the new root --------------------------------------------------- */

static bool make_file(const char *rel, const char *content)
{
    int fd = open(rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    size_t len = strlen(content), done = 0;
    while (done < len) {
        ssize_t n = write(fd, content + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close_keep_errno(fd);
            return false;
        }
        done += (size_t)n;
    }
    return close(fd) == 0;
}

static bool make_dir(const char *rel)
{
    return mkdir(rel, 0755) == 0 || errno == EEXIST;
}

/* A host path mirrored into the new root. */
typedef struct mirror {
    const char *host;  /* absolute host path */
    const char *rel;   /* the same path relative to the new root */
    const char *step;  /* named in errors */
} mirror;

/* Make rel like the host's path: a symlink is copied (its target then
 * resolves inside the new root, so /bin -> usr/bin reaches the bound /usr and
 * a link to anywhere else dangles), a directory or regular file is bound
 * read-only nosuid nodev. Absent or any other type: nothing. */
static bool mirror_host(const mirror *m)
{
    struct stat st;
    if (lstat(m->host, &st) != 0)
        return errno == ENOENT;
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(m->host, target, sizeof target - 1);
        if (n <= 0)
            return false;
        target[n] = '\0';
        return symlink(target, m->rel) == 0;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!make_dir(m->rel))
            return false;
    } else if (S_ISREG(st.st_mode)) {
        if (!make_file(m->rel, ""))
            return false;
    } else {
        return true;
    }
    return bind_sealed(m->host, m->rel, ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV);
}

/* ---- the parts of the new root ---------------------------------------------- */

/* The program's code and libraries. /usr first: the merged-/usr symlinks
 * point into it. */
static bool build_system(const char **step)
{
    static const mirror dirs[] = {
        {"/usr", "usr", "bind /usr"},       {"/bin", "bin", "bind /bin"},
        {"/sbin", "sbin", "bind /sbin"},    {"/lib", "lib", "bind /lib"},
        {"/lib64", "lib64", "bind /lib64"}, {"/lib32", "lib32", "bind /lib32"},
        {"/libx32", "libx32", "bind /libx32"},
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (!mirror_host(&dirs[i]))
            return fail(step, dirs[i].step);
    return true;
}

/* A minimal /etc: the guest's own identity and name service, nothing of the
 * host's accounts or secrets (no shadow, gshadow, sudoers, ssh keys,
 * machine-id). The host's dynamic linker cache, alternatives symlinks, public
 * CA certificates and time zone are public and needed by ordinary programs. */
static bool build_etc(const char **step)
{
    static const mirror binds[] = {
        {"/etc/ld.so.cache", "etc/ld.so.cache", "bind /etc/ld.so.cache"},
        {"/etc/alternatives", "etc/alternatives", "bind /etc/alternatives"},
        {"/etc/ssl/certs", "etc/ssl/certs", "bind /etc/ssl/certs"},
        {"/etc/localtime", "etc/localtime", "bind /etc/localtime"},
    };
    if (!make_dir("etc") || !make_dir("etc/ssl"))
        return fail(step, "mkdir /etc");
    for (const sandbox_etc_file *f = sandbox_guest_etc; f->rel; f++)
        if (!make_file(f->rel, f->content))
            return fail(step, "write /etc");
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++)
        if (!mirror_host(&binds[i]))
            return fail(step, binds[i].step);
    return true;
}

/* The device nodes a program may need, all harmless: the host's nodes bound
 * onto empty files (a user namespace cannot mknod, and a bind of the host's
 * devtmpfs node is the only way a device works there). No tty, no ptmx/pts
 * (stdio are pipes), no block devices, no /dev/kmsg or /dev/mem. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};

static bool unseal_dev_fallback(void)
{
    char rel[32];
    for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
        strbuf b;
        sb_init(&b, rel, sizeof rel);
        sb_str(&b, "dev/");
        sb_str(&b, dev_nodes[i]);
        if (!remount_adding(rel, ATTR_RDONLY | ATTR_NOSUID | ATTR_NOEXEC))
            return false;
    }
    return remount_adding("dev", ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV | ATTR_NOEXEC);
}

static bool build_dev(uint64_t shm_bytes, const char **step)
{
    static const struct {
        const char *target, *rel;
    } links[] = {
        {"/proc/self/fd", "dev/fd"},
        {"/proc/self/fd/0", "dev/stdin"},
        {"/proc/self/fd/1", "dev/stdout"},
        {"/proc/self/fd/2", "dev/stderr"},
    };
    if (!make_dir("dev"))
        return fail(step, "mkdir /dev");
    if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64k,nr_inodes=64") != 0)
        return fail(step, "mount /dev tmpfs");
    for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
        char host[32], rel[32];
        strbuf h, r;
        sb_init(&h, host, sizeof host);
        sb_str(&h, "/dev/");
        sb_str(&h, dev_nodes[i]);
        sb_init(&r, rel, sizeof rel);
        sb_str(&r, "dev/");
        sb_str(&r, dev_nodes[i]);
        struct stat st;
        /* Only a character device: a host whose /dev/null was replaced by a
         * file would otherwise hand its contents to every sandbox. */
        if (lstat(host, &st) != 0)
            return fail(step, "bind /dev nodes");
        if (!S_ISCHR(st.st_mode)) {
            errno = ENODEV;
            return fail(step, "bind /dev nodes");
        }
        if (!make_file(rel, "") || mount(host, rel, NULL, MS_BIND, NULL) != 0)
            return fail(step, "bind /dev nodes");
    }
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        if (symlink(links[i].target, links[i].rel) != 0)
            return fail(step, "symlink /dev/fd");
    if (!make_dir("dev/shm"))
        return fail(step, "mkdir /dev/shm");
    /* One call makes /dev and the node binds read-only (a write to a device
     * needs no writable mount, but touch/utimensat on a writable bind would
     * change the host's /dev/null). nodev must stay off the node binds. */
    if (set_attrs(AT_FDCWD, "dev", AT_RECURSIVE | AT_SYMLINK_NOFOLLOW,
                  ATTR_RDONLY | ATTR_NOSUID | ATTR_NOEXEC) != 0) {
        if (errno != ENOSYS || !unseal_dev_fallback())
            return fail(step, "remount /dev read-only");
    }
    /* POSIX shared memory and semaphores (python multiprocessing) live here;
     * a separate small tmpfs, charged like /tmp to the memory cgroup. */
    char opts[96];
    strbuf o;
    sb_init(&o, opts, sizeof opts);
    sb_str(&o, "mode=1777,size=");
    sb_uint(&o, shm_bytes);
    sb_str(&o, ",nr_inodes=1024");
    if (!o.ok || mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) != 0)
        return fail(step, "mount /dev/shm");
    return true;
}

static bool build_tmp(uint64_t bytes, const char **step)
{
    /* size= caps the bytes; nr_inodes caps the files, whose kernel memory
     * size= does not count (a guest creating millions of empty files). */
    uint64_t inodes = bytes / 4096;
    if (inodes < 4096)
        inodes = 4096;
    char opts[96];
    strbuf o;
    sb_init(&o, opts, sizeof opts);
    sb_str(&o, "mode=1777,size=");
    sb_uint(&o, bytes);
    sb_str(&o, ",nr_inodes=");
    sb_uint(&o, inodes);
    if (!o.ok)
        return fail(step, "mount /tmp");
    if (!make_dir("tmp"))
        return fail(step, "mkdir /tmp");
    if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        return fail(step, "mount /tmp");
    return true;
}

/* A procfs of this pid namespace (we are its pid 1), so only sandbox
 * processes appear. hidepid=invisible also hides processes of other uids
 * (5.8+; "2" is the older spelling of the same). The mount must happen before
 * the pivot: the kernel allows a new procfs in a user namespace only while a
 * fully visible one is mounted in the same mount namespace. When the host's
 * /proc has paths covered by other mounts (Docker and Kubernetes mask
 * /proc/kcore and friends, systemd's ProtectKernelTunables= ...), the kernel
 * refuses with EPERM (mount_too_revealing): we fail then, rather than bind the
 * host's /proc, which would show the host's processes. */
static bool build_proc(const char **step)
{
    if (!make_dir("proc"))
        return fail(step, "mkdir /proc");
    unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (mount("proc", "proc", "proc", flags, "hidepid=invisible") == 0)
        return true;
    if (errno == EINVAL && mount("proc", "proc", "proc", flags, "hidepid=2") == 0)
        return true;
    if (errno == EPERM)
        return fail(step, "mount /proc (host /proc is partly covered)");
    return fail(step, "mount /proc");
}

/* ---- granted directories --------------------------------------------------- */

/* Paths a grant may not be mounted on or under. Overmounting them would
 * replace what every program trusts (libraries, the loader cache, passwd and
 * nsswitch.conf, the /dev nodes) with directory contents a previous sandbox
 * may have written, or hide /proc's protections. "/" is refused too. */
static const char *const reserved_paths[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
    "/etc", "/proc", "/dev", "/sys",
};

static bool path_is_or_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Absolute, normalised (no empty, "." or ".." component, no trailing '/'),
 * not "/", not reserved, short enough. */
static bool guest_path_ok(const char *p)
{
    size_t len = strnlen(p, PATH_MAX);
    if (len < 2 || len >= PATH_MAX - 64 || p[0] != '/' || p[len - 1] == '/')
        return false;
    for (const char *c = p; *c != '\0';) {
        const char *end = strchr(c + 1, '/');
        size_t n = end ? (size_t)(end - c - 1) : strlen(c + 1);
        if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
            return false;
        c = end ? end : c + 1 + n;
    }
    for (size_t i = 0; i < sizeof reserved_paths / sizeof reserved_paths[0]; i++)
        if (path_is_or_under(p, reserved_paths[i]))
            return false;
    return true;
}

static size_t path_depth(const char *p)
{
    size_t d = 0;
    for (; *p != '\0'; p++)
        d += *p == '/';
    return d;
}

/* Where a walk may create missing directories: the tmpfs mounts made here. */
typedef struct own_fs {
    dev_t dev[2];
} own_fs;

static bool on_own_fs(int fd, const own_fs *own)
{
    struct stat st;
    return own != NULL && fstat(fd, &st) == 0 &&
           (st.st_dev == own->dev[0] || st.st_dev == own->dev[1]);
}

/* Open path (absolute, or relative to start) one component at a time with
 * O_NOFOLLOW: a symlink anywhere (one a hostile program planted in a :rw
 * workspace on an earlier run, say) fails the walk with ENOTDIR instead of
 * redirecting it. A missing component is created when own says the
 * directory holding it is a tmpfs of ours. *parent_out (may be NULL) gets the
 * directory holding the last component, *last_out its name inside path_buf. */
static int walk(char *path_buf, int start, const own_fs *own, int *parent_out,
                const char **last_out)
{
    int cur = dup(start);
    if (cur < 0)
        return -1;
    char *c = path_buf;
    while (*c == '/')
        c++;
    const char *last = ".";
    int parent = -1;
    while (*c != '\0') {
        char *end = strchr(c, '/');
        if (end != NULL)
            *end = '\0';
        int next = openat(cur, c, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && on_own_fs(cur, own)) {
            if (mkdirat(cur, c, 0755) != 0 && errno != EEXIST) {
                close_keep_errno(cur);
                close_keep_errno(parent);
                return -1;
            }
            next = openat(cur, c, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        }
        struct stat st;
        if (next >= 0 && (fstat(next, &st) != 0 || !S_ISDIR(st.st_mode))) {
            close(next);
            next = -1;
            errno = ENOTDIR;
        }
        if (next < 0) {
            close_keep_errno(cur);
            close_keep_errno(parent);
            return -1;
        }
        if (parent >= 0)
            close(parent);
        parent = cur;
        cur = next;
        last = c;
        if (end == NULL)
            break;
        c = end + 1;
    }
    if (parent_out != NULL)
        *parent_out = parent;
    else if (parent >= 0)
        close(parent);
    if (last_out != NULL)
        *last_out = last;
    return cur;
}

/* The grant's host directory as an fd of *this* mount namespace, for when
 * host_fd still names a mount of the parent's namespace: mount(MS_BIND)
 * refuses a source outside the caller's namespace (EINVAL, check_mnt).
 * (init.c normally localises the fds first, see localise_grants; this keeps
 * mount_build_root correct without it.) The fd's path is read back and
 * walked again here without following symlinks, and the result must be the
 * very same directory (device and inode): a rename or symlink swap between
 * the parent's check and now fails instead of binding something else. The
 * walk runs as the guest uid, so it needs search permission on the path. */
static int reopen_host_dir(int host_fd)
{
    struct stat want, got;
    if (fstat(host_fd, &want) != 0)
        return -1;
    if (!S_ISDIR(want.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    char link[32], path[PATH_MAX];
    fd_path(link, host_fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return -1;
    if (n == 0 || n >= (ssize_t)sizeof path - 1 || path[0] != '/') {
        errno = n >= (ssize_t)sizeof path - 1 ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    path[n] = '\0';
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return -1;
    int fd = walk(path, root, NULL, NULL, NULL);
    close_keep_errno(root);
    if (fd < 0)
        return -1;
    if (fstat(fd, &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    return fd;
}

/* Bind the grant's directory (recursively: its submounts come along) onto
 * the mount point target. */
static bool bind_grant(int host_fd, int target, const char **step)
{
    char from[32], to[32];
    fd_path(from, host_fd);
    fd_path(to, target);
    if (mount(from, to, NULL, MS_BIND | MS_REC, NULL) == 0)
        return true;
    if (errno != EINVAL)
        return fail(step, "bind grant");
    int local = reopen_host_dir(host_fd);
    if (local < 0)
        return fail(step, "open granted host directory");
    fd_path(from, local);
    bool ok = mount(from, to, NULL, MS_BIND | MS_REC, NULL) == 0;
    close_keep_errno(local);
    return ok ? true : fail(step, "bind grant");
}

static bool mount_grant(const native_grant *g, int root_fd, const own_fs *own, const char **step)
{
    char guest[PATH_MAX];
    memcpy(guest, g->guest, strlen(g->guest) + 1);
    int parent = -1;
    const char *last = NULL;
    int target = walk(guest, root_fd, own, &parent, &last);
    if (target < 0)
        return fail(step, "grant mount point");
    bool ok = bind_grant(g->host_fd, target, step);
    close_keep_errno(target);
    if (!ok) {
        close_keep_errno(parent);
        return false;
    }
    /* The lookup of the last component crosses into the new mount. */
    int mounted = openat(parent, last, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
    close_keep_errno(parent);
    if (mounted < 0)
        return fail(step, "seal grant");
    char at[32];
    fd_path(at, mounted);
    unsigned attrs = ATTR_NOSUID | ATTR_NODEV | (g->read_only ? ATTR_RDONLY : 0u);
    ok = set_attrs(mounted, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs) == 0 ||
         (errno == ENOSYS && remount_adding(at, attrs));
    close_keep_errno(mounted);
    return ok ? true : fail(step, "seal grant");
}

/* Parents before children (a grant at /work/data goes inside the one at
 * /work), each path checked, no path twice. */
static bool mount_grants(const native_plan *plan, const char **step)
{
    size_t n = plan->ngrants, order[NATIVE_MAX_GRANTS];
    if (n > NATIVE_MAX_GRANTS) {
        errno = E2BIG;
        return fail(step, "too many grants");
    }
    for (size_t i = 0; i < n; i++) {
        const char *p = plan->grants[i].guest;
        if (!guest_path_ok(p)) {
            errno = EINVAL;
            return fail(step, "grant path refused");
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(p, plan->grants[j].guest) == 0) {
                errno = EEXIST;
                return fail(step, "grant path given twice");
            }
        size_t k = i;
        for (; k > 0 && path_depth(plan->grants[order[k - 1]].guest) > path_depth(p); k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    struct stat root_st, tmp_st;
    if (stat(".", &root_st) != 0 || stat("tmp", &tmp_st) != 0)
        return fail(step, "stat new root");
    own_fs own = {{root_st.st_dev, tmp_st.st_dev}};
    int root_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return fail(step, "open new root");
    for (size_t i = 0; i < n; i++)
        if (!mount_grant(&plan->grants[order[i]], root_fd, &own, step)) {
            close_keep_errno(root_fd);
            return false;
        }
    close(root_fd);
    return true;
}

/* ---- the pivot -------------------------------------------------------------- */

/* pivot_root(".", ".") stacks the old root on the new one at "/"; detaching
 * it leaves only the new root, with no old-root directory the program could
 * reach (nothing to umount back into, no /proc/1/root to the host). */
static bool enter_root(const char **step)
{
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        return fail(step, "pivot_root");
    if (umount2(".", MNT_DETACH) != 0)
        return fail(step, "detach old root");
    if (chdir("/") != 0)
        return fail(step, "chdir /");
    /* The root tmpfs belongs to the guest uid (it made it): read-only from now. */
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
        return fail(step, "remount / read-only");
    return true;
}

bool mount_build_root(const native_plan *plan, const char **step)
{
    const char *root = plan->root_mount;
    if (root[0] != '/') {
        errno = EINVAL;
        return fail(step, "root mount path");
    }
    uint64_t tmp_bytes = plan->tmpfs_bytes ? plan->tmpfs_bytes : DEFAULT_TMP_BYTES;
    uint64_t shm_bytes = tmp_bytes < SHM_MAX_BYTES ? tmp_bytes : SHM_MAX_BYTES;

    /* Nothing mounted here may propagate to the host's namespace (and
     * nothing the host mounts later may appear inside). */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail(step, "make / rprivate");
    if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=1m,nr_inodes=4096") != 0)
        return fail(step, "mount root tmpfs");
    /* From here on every path is relative to the new root. */
    if (chdir(root) != 0)
        return fail(step, "chdir new root");
    return build_system(step) && build_etc(step) && build_dev(shm_bytes, step) &&
           build_tmp(tmp_bytes, step) && build_proc(step) && mount_grants(plan, step) &&
           enter_root(step);
}
