/*
 * probe.c — al_probe_host (airlock.h): what this host can isolate, found by
 * trying each mechanism the way the native backend uses it.
 *
 *   user namespace   clone(CLONE_NEWUSER) a child; the parent writes its maps
 *                    "1000 <uid> 1" (uid: ours, or 1000 when we are root: the
 *                    guest is never host root) and the child checks it is 1000
 *   namespaces       in it: unshare pid, mount, net, ipc, uts and cgroup, then
 *                    a grandchild must be pid 1 of the new pid namespace
 *   pivot_root       the grandchild makes / rprivate, mounts a tmpfs on /tmp of
 *                    its own mount namespace and pivot_roots into it
 *   seccomp          seccomp_probe (seccomp.c), with user notification
 *   Landlock         landlock_abi_version (landlock.c)
 *   cgroups          cgroup_probe (cgroup.c)
 *   gVisor           gvisor_probe (gvisor/): runsc, its platforms, the verdict
 *
 * Invariants: nothing on the host changes — every namespace, mount and
 * pivot_root happens in children that exit (the cgroup probe makes and
 * removes empty cgroups only). Each child is killed after PROBE_TIMEOUT_MS
 * at the latest (and dies with us: PR_SET_PDEATHSIG), so a probe never
 * hangs. Children run only system calls (no malloc, no stdio): the caller
 * may be multi-threaded. Only the probe's own children are waited for.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "native/native.h"
#include "sandbox.h"

#define PROBE_TIMEOUT_MS 5000

enum { STAGE_USERNS = 1, STAGE_NAMESPACES = 2, STAGE_PIVOT = 3 };

/* One report from a probe child; smaller than PIPE_BUF, so written whole. */
typedef struct probe_msg {
    int32_t stage;
    int32_t ok;
    int32_t err;
    char step[52];
} probe_msg;

/* ---- in the children: system calls only ---------------------------------------- */

static void send_msg(int fd, int stage, bool ok, const char *step, int err) {
    probe_msg m;
    memset(&m, 0, sizeof m);
    m.stage = stage;
    m.ok = ok;
    m.err = err;
    for (size_t i = 0; step && step[i] && i + 1 < sizeof m.step; i++) m.step[i] = step[i];
    ssize_t n;
    do {
        n = write(fd, &m, sizeof m);
    } while (n < 0 && errno == EINTR);
}

static _Noreturn void fail(int fd, int stage, const char *step) {
    send_msg(fd, stage, false, step, errno);
    _exit(1);
}

/* fork()/clone() without glibc's wrappers, for children of children. */
static pid_t raw_clone(unsigned long flags) {
    return (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
}

/* pid 1 of the new pid namespace, in the new mount namespace. */
static _Noreturn void probe_grandchild(int out) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getpid() != 1) {
        errno = EINVAL;
        fail(out, STAGE_NAMESPACES, "pid namespace: not pid 1");
    }
    send_msg(out, STAGE_NAMESPACES, true, NULL, 0);
    /* Private first: without it the tmpfs below could propagate to the
     * host's mount namespace through a shared mount. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        fail(out, STAGE_PIVOT, "mount / rprivate");
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
        fail(out, STAGE_PIVOT, "mount tmpfs");
    if (chdir("/tmp") < 0) fail(out, STAGE_PIVOT, "chdir tmpfs");
    /* pivot_root(".", "."): the old root ends up on top of the new one and
     * is detached right away (no directory needed for it). */
    if (syscall(SYS_pivot_root, ".", ".") < 0) fail(out, STAGE_PIVOT, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0) fail(out, STAGE_PIVOT, "umount old root");
    if (chdir("/") < 0) fail(out, STAGE_PIVOT, "chdir /");
    struct statfs sfs;
    if (statfs("/", &sfs) < 0) fail(out, STAGE_PIVOT, "statfs new root");
    if ((unsigned long)sfs.f_type != (unsigned long)TMPFS_MAGIC) {
        errno = EINVAL;
        fail(out, STAGE_PIVOT, "new root is not the tmpfs");
    }
    send_msg(out, STAGE_PIVOT, true, NULL, 0);
    _exit(0);
}

/* The clone(CLONE_NEWUSER) child: waits for its maps, then goes deeper. */
static _Noreturn void probe_child(int sync_fd, int out) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char byte;
    ssize_t n;
    do {
        n = read(sync_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(1); /* the parent could not write the maps: it says why */
    /* Become the guest as init.c does. The maps only say how ids are seen:
     * when root made the namespace our kernel uid is still 0, unmapped
     * inside. Raw syscalls: glibc's setresuid would broadcast to threads
     * that exist only in the parent. setgroups is refused (EPERM) after an
     * unprivileged parent wrote "deny", and then there are none to drop. */
    if (syscall(SYS_setgroups, 0, NULL) < 0 && errno != EPERM)
        fail(out, STAGE_USERNS, "setgroups");
    if (syscall(SYS_setresgid, SANDBOX_GUEST_GID, SANDBOX_GUEST_GID, SANDBOX_GUEST_GID) < 0)
        fail(out, STAGE_USERNS, "setresgid");
    if (syscall(SYS_setresuid, SANDBOX_GUEST_UID, SANDBOX_GUEST_UID, SANDBOX_GUEST_UID) < 0)
        fail(out, STAGE_USERNS, "setresuid");
    if (getuid() != SANDBOX_GUEST_UID || getgid() != SANDBOX_GUEST_GID) {
        errno = EPERM;
        fail(out, STAGE_USERNS, "uid map not in effect");
    }
    send_msg(out, STAGE_USERNS, true, NULL, 0);
    if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_NEWCGROUP) < 0)
        fail(out, STAGE_NAMESPACES, "unshare pid,mount,net,ipc,uts,cgroup");
    pid_t pid = raw_clone(SIGCHLD);
    if (pid < 0) fail(out, STAGE_NAMESPACES, "fork into the pid namespace");
    if (pid == 0) probe_grandchild(out);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    _exit(0);
}

/* ---- in the parent ------------------------------------------------------------------ */

static bool write_proc(pid_t pid, const char *file, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text);
}

/* Guest 1000 -> host: our own ids, or 1000 when we are root (never host
 * root, so a guest that escapes the namespace is still nobody special). */
static bool write_maps(pid_t pid, char *why, size_t why_len) {
    char map[64];
    unsigned uid = geteuid() == 0 ? 1000u : (unsigned)geteuid();
    unsigned gid = geteuid() == 0 ? 1000u : (unsigned)getegid();
    /* Unprivileged, setgroups must be denied before gid_map is accepted
     * (otherwise the child could drop supplementary groups that host files
     * use as deny rules). As root, like native.c, it stays allowed so the
     * child can clear root's groups. */
    if (geteuid() != 0 && !write_proc(pid, "setgroups", "deny") && errno != ENOENT) {
        snprintf(why, why_len, "user namespace: writing setgroups: %s", strerror(errno));
        return false;
    }
    snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_GUEST_UID, uid);
    if (!write_proc(pid, "uid_map", map)) {
        snprintf(why, why_len, "user namespace: writing uid_map: %s", strerror(errno));
        return false;
    }
    snprintf(map, sizeof map, "%d %u 1\n", SANDBOX_GUEST_GID, gid);
    if (!write_proc(pid, "gid_map", map)) {
        snprintf(why, why_len, "user namespace: writing gid_map: %s", strerror(errno));
        return false;
    }
    return true;
}

static int ms_left(uint64_t deadline_ns) {
    uint64_t now = sandbox_now_ns();
    if (now >= deadline_ns) return 0;
    return (int)((deadline_ns - now + 999999) / 1000000);
}

/* Wait for exactly this child, SIGKILLing it at the deadline. */
static void reap(pid_t pid, uint64_t deadline_ns) {
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return;
        if (r == 0 && ms_left(deadline_ns) == 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return;
        }
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static const char *stage_name(int stage) {
    switch (stage) {
    case STAGE_USERNS: return "user namespace";
    case STAGE_NAMESPACES: return "namespaces";
    default: return "pivot_root";
    }
}

/* Read the children's reports until they are all gone or time is up. */
static void collect(int fd, uint64_t deadline_ns, al_host_report *r, char *why, size_t why_len) {
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = ms_left(deadline_ns);
        if (left == 0) {
            if (!why[0]) snprintf(why, why_len, "namespace probe timed out");
            return;
        }
        int ready = poll(&p, 1, left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue; /* the deadline check above ends it */
        probe_msg m;
        ssize_t n = read(fd, &m, sizeof m);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m) return; /* EOF: every child is gone */
        m.step[sizeof m.step - 1] = '\0';
        if (!m.ok) {
            if (!why[0])
                snprintf(why, why_len, "%s: %s: %s", stage_name(m.stage), m.step, strerror(m.err));
            continue;
        }
        if (m.stage == STAGE_USERNS) r->user_namespaces = true;
        if (m.stage == STAGE_NAMESPACES) r->pid_mount_net_namespaces = true;
        if (m.stage == STAGE_PIVOT) r->pivot_root = true;
    }
}

static void close_pair(int p[2]) {
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
}

/* user namespace, the other namespaces and pivot_root; why gets the first
 * failure. */
static void probe_namespaces(al_host_report *r, char *why, size_t why_len) {
    int sync[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        snprintf(why, why_len, "namespace probe: pipe: %s", strerror(errno));
        close_pair(sync);
        close_pair(out);
        return;
    }
    uint64_t deadline = sandbox_now_ns() + (uint64_t)PROBE_TIMEOUT_MS * 1000000u;
    pid_t pid = raw_clone(CLONE_NEWUSER | SIGCHLD);
    if (pid == 0) {
        close(sync[1]);
        close(out[0]);
        probe_child(sync[0], out[1]);
    }
    close(sync[0]);
    close(out[1]);
    if (pid < 0) {
        snprintf(why, why_len, "user namespace: clone(CLONE_NEWUSER): %s", strerror(errno));
        close(sync[1]);
        close(out[0]);
        return;
    }
    if (write_maps(pid, why, why_len)) {
        ssize_t n;
        do {
            n = write(sync[1], "1", 1);
        } while (n < 0 && errno == EINTR);
    }
    close(sync[1]); /* EOF without the byte: the child gives up */
    collect(out[0], deadline, r, why, why_len);
    close(out[0]);
    reap(pid, deadline);
}

/* Appends ", what" (or "what") to a reason within its size. */
static void append(char *s, size_t len, const char *what) {
    size_t used = strlen(s);
    if (used + 1 < len) snprintf(s + used, len - used, "%s%s", used ? "; " : "", what);
}

static void explain_native(al_host_report *r, const char *ns_why) {
    char *s = r->native_reason;
    size_t len = sizeof r->native_reason;
    s[0] = '\0';
    if (!r->user_namespaces || !r->pid_mount_net_namespaces || !r->pivot_root)
        append(s, len, ns_why[0] ? ns_why : "namespaces unavailable");
    if (!r->seccomp) append(s, len, "seccomp filters cannot be loaded");
    /* Not required, but said, so that doctor shows what is weaker. */
    if (r->native_available && r->seccomp && !r->seccomp_notify)
        append(s, len, "no seccomp notification: denied calls are not counted");
    if (!r->landlock_abi) append(s, len, "no Landlock (optional: defence in depth)");
    if (!r->cgroup_v1_writable && !r->cgroup_v2_writable)
        append(s, len, "no writable cgroup (optional: limits use rlimits per process)");
}

void al_probe_host(al_host_report *report, const char *state_dir, bool probe_gvisor_platforms) {
    char ns_why[160] = "";
    memset(report, 0, sizeof *report);
    probe_namespaces(report, ns_why, sizeof ns_why);
    report->seccomp = seccomp_probe(&report->seccomp_notify);
    if (!report->seccomp) report->seccomp_notify = false;
    report->landlock_abi = landlock_abi_version();
    cgroup_probe(&report->cgroup_v1_writable, report->cgroup_v1_controllers,
                 sizeof report->cgroup_v1_controllers, &report->cgroup_v2_writable,
                 report->cgroup_v2_controllers, sizeof report->cgroup_v2_controllers);
    report->native_available = report->user_namespaces && report->pid_mount_net_namespaces &&
                               report->pivot_root && report->seccomp;
    explain_native(report, ns_why);
    gvisor_probe(report, state_dir, probe_gvisor_platforms);
}
