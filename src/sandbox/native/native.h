/*
 * native.h — the native backend: any Linux program in its own namespaces,
 * behind pivot_root, seccomp-bpf, Landlock, dropped capabilities, cgroups and
 * rlimits. One file per kernel mechanism (after nsjail); each exposes the
 * verbs "prepare in the parent" and/or "apply in the child".
 *
 *   native.c   native_run: the parent side. Builds a native_plan from the
 *              policy, makes the cgroup, clones the sandbox init with
 *              CLONE_NEWUSER|NEWPID|NEWNS|NEWNET|NEWIPC|NEWUTS, writes its
 *              uid/gid maps, then runs the event loop (stdout/stderr pipes,
 *              seccomp notifications, control messages, the wall and CPU
 *              deadlines) and fills the al_result.
 *   init.c     the sandbox's pid 1: mounts the new root (mount.c), forks the
 *              program, reaps every process, and when the program ends kills
 *              whatever is left and reports the wait status to the parent.
 *   mount.c    the new root: tmpfs, read-only binds of /usr /bin /lib* /sbin,
 *              a minimal /etc, fresh /proc (hidepid), minimal /dev, the /tmp
 *              tmpfs, the granted directories; pivot_root.
 *   landlock.c the Landlock ruleset limited to those paths.
 *   seccomp.c  the libseccomp filter; denied calls go to the parent through a
 *              user-notification fd, which answers EPERM and counts them.
 *   caps.c     no_new_privs and every capability set emptied.
 *   rlimit.c   setrlimit for the policy's per-process limits.
 *   cgroup.c   the cgroup interface; cgroup_v1.c and cgroup_v2.c behind it.
 *
 * Process tree (host view):
 *   airlock (parent) ── init (pid 1 in the new pid ns) ── program ── ...
 * Killing init kills every process of the pid namespace (the kernel's rule),
 * so a timeout SIGKILLs init and nothing survives.
 *
 * Rules for everything that runs in the child after clone (init.c, mount.c,
 * landlock.c, seccomp.c's install, caps.c, rlimit.c): no malloc, no stdio, no
 * locks — the parent may be multi-threaded, and clone copies another
 * thread's held allocator lock into the child, where nobody will ever
 * release it. Everything they need is in the native_plan, prepared by the
 * parent (the seccomp filter included, as raw BPF). Failures are reported as a
 * native_child_error (errno + a static string naming the step) written to the
 * control socket, never printed.
 */
#ifndef AIRLOCK_NATIVE_H
#define AIRLOCK_NATIVE_H

#include <limits.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox.h"

#define NATIVE_MAX_GRANTS 64
#define NATIVE_MAX_ARGS 4096
#define NATIVE_MAX_ENV 1024

typedef struct native_grant {
    int host_fd;              /* O_PATH|O_DIRECTORY fd opened by the parent as the
                                 caller (so hostile symlink swaps after the check do
                                 not matter and the sandbox uid needs no search
                                 permission on the host path); bound from
                                 /proc/self/fd/N */
    char guest[PATH_MAX];     /* absolute, normalised (no //, ., ..) */
    bool read_only;
} native_grant;

/* The seccomp filter as the kernel takes it (seccomp.c): built and
 * compiled by libseccomp in the parent (seccomp_prepare), loaded by the
 * child with one system call (seccomp_install). Held inline, so the plan
 * owns it and nothing has to be freed; the kernel's own limit bounds it. */
typedef struct native_seccomp_filter {
    struct sock_filter code[BPF_MAXINSNS];
    unsigned short len;       /* instructions in code; 0: not prepared (install refuses) */
    bool use_notify;          /* denials are SECCOMP_RET_USER_NOTIF: ask for a listener */
} native_seccomp_filter;

/* Everything the child needs, built by the parent before clone. */
typedef struct native_plan {
    /* execution */
    char *const *argv;        /* NULL-terminated, owned by native.c */
    char *const *envp;        /* NULL-terminated: the policy's env + safe PATH, HOME, LANG */
    char program[PATH_MAX];   /* argv[0] resolved against PATH *inside* the new root
                                 by init (empty: init resolves); see init.c */
    char cwd[PATH_MAX];       /* inside the sandbox */
    /* identity */
    uid_t host_uid;           /* the host uid the guest uid maps to */
    gid_t host_gid;
    /* filesystem */
    native_grant grants[NATIVE_MAX_GRANTS];
    size_t ngrants;
    uint64_t tmpfs_bytes;     /* size of /tmp (0: 64 MiB) */
    char root_mount[PATH_MAX];/* a host directory to mount the new root's tmpfs on
                                 (inside the private mount namespace only) */
    /* limits applied in the program (rlimit.c) */
    uint64_t cpu_time_ms;     /* RLIMIT_CPU per process, rounded up to seconds (0: none) */
    uint64_t memory_bytes;    /* RLIMIT_AS only when !cgroup_memory (0: none) */
    uint32_t max_processes;   /* RLIMIT_NPROC only when !cgroup_pids (0: none) */
    uint32_t max_open_files;  /* RLIMIT_NOFILE (0: 256) */
    uint64_t max_file_size;   /* RLIMIT_FSIZE (0: none) */
    bool cgroup_memory;       /* the cgroup enforces memory_bytes */
    bool cgroup_pids;         /* the cgroup enforces max_processes */
    /* fds the child uses (all opened by the parent) */
    int stdin_fd;             /* a memfd holding the policy's stdin */
    int stdout_fd, stderr_fd; /* write ends of the output pipes */
    int control_fd;           /* the child's end of the SOCK_SEQPACKET control pair */
    int sync_fd;              /* read end: one byte once the uid/gid maps and the
                                 cgroup are in place, EOF if the parent gave up */
    bool seccomp_notify;      /* use user notification (else plain EPERM, uncounted) */
    native_seccomp_filter seccomp; /* built from seccomp_notify by seccomp_prepare */
    int landlock_abi;         /* 0: skip Landlock */
} native_plan;

/* ---- the control protocol: child -> parent over plan.control_fd ------------- */
typedef enum native_msg_kind {
    NATIVE_MSG_ERROR = 1,     /* setup failed: step + errno; no program ran */
    NATIVE_MSG_NOTIFY_FD,     /* the seccomp listener fd rides along (SCM_RIGHTS) */
    NATIVE_MSG_EXEC_FAILED,   /* execve of the program failed: errno */
    NATIVE_MSG_EXIT,          /* the program ended: wait_status */
} native_msg_kind;

typedef struct native_msg {
    int32_t kind;             /* native_msg_kind */
    int32_t err;              /* errno for ERROR / EXEC_FAILED */
    int32_t wait_status;      /* for EXIT, as from waitpid */
    char step[64];            /* for ERROR: "mount /proc", "pivot_root", ... */
} native_msg;

/* Send a message (and an fd when fd >= 0). Async-signal-safe. */
bool native_send(int control_fd, const native_msg *msg, int fd);
/* Report a failed setup step with errno and _exit(127). Never returns. */
_Noreturn void native_child_fail(int control_fd, const char *step);

/* ---- init.c ----------------------------------------------------------------- */
/* The body of the cloned child. Returns the exit code of init. */
int native_init_main(native_plan *plan);

/* ---- mount.c ---------------------------------------------------------------- */
/* In the new user+mount namespace (before the program is forked): build the
 * new root on plan->root_mount and pivot_root into it, then mount /proc
 * (this process is pid 1 of the new pid namespace). On failure: false and
 * *step names what failed (errno set). */
bool mount_build_root(const native_plan *plan, const char **step);

/* ---- landlock.c ------------------------------------------------------------- */
/* In the program, after pivot_root: restrict the filesystem to the sandbox's
 * own paths (read+exec: /usr /bin /lib* /sbin /etc; read: /proc;
 * read+write: /dev/null,... /tmp and :rw grants; read: :ro grants) and, where
 * the ABI has scopes (6+), signals and abstract unix sockets to the sandbox.
 * abi 0 does nothing. False + *step on failure. */
bool landlock_restrict(const native_plan *plan, const char **step);
/* The Landlock ABI version of this kernel (0: none). */
int landlock_abi_version(void);

/* ---- caps.c ----------------------------------------------------------------- */
/* no_new_privs, then empty the bounding, ambient, inheritable, permitted and
 * effective sets. The last step before seccomp. */
bool caps_drop_all(const char **step);

/* ---- rlimit.c --------------------------------------------------------------- */
bool rlimit_apply(const native_plan *plan, const char **step);

/* ---- seccomp.c -------------------------------------------------------------- */
/* In the parent, before clone: build the deny-list filter with libseccomp
 * (deny -> user notification when use_notify, else EPERM; other ABIs
 * killed) and store it in *f as raw BPF. libseccomp allocates, so this must
 * never run in the child. False + err on failure (f->len is then 0).
 * Thread-safe. */
bool seccomp_prepare(native_seccomp_filter *f, bool use_notify, al_error *err);
/* In the program, last step before execve (after caps_drop_all has set
 * no_new_privs): load *f with the seccomp system call. *notify_fd gets the
 * listener (-1 without notify). No allocation, no locks, no libseccomp:
 * safe in a clone of a multi-threaded parent. False + *step (errno set). */
bool seccomp_install(const native_seccomp_filter *f, int *notify_fd, const char **step);
/* In the parent: answer one pending notification with EPERM and count it.
 * Returns false when the listener is gone (the sandbox ended). */
bool seccomp_answer(int notify_fd, uint64_t *denied);
/* Whether filters and user notification work (probe, in a child process). */
bool seccomp_probe(bool *notify);
/* The names of the denied syscalls, for docs and tests (NULL-terminated). */
extern const char *const seccomp_denied_syscalls[];

/* ---- cgroup.c (+ cgroup_v1.c, cgroup_v2.c) ----------------------------------- */
typedef struct native_cgroup {
    int version;              /* 0: none usable (rlimits only), 1 or 2 */
    char path[PATH_MAX];      /* v2: the cgroup; v1: unused */
    char memory[PATH_MAX];    /* v1: per-controller directories ("" if absent) */
    char pids[PATH_MAX];
    char cpuacct[PATH_MAX];
    bool has_memory, has_pids, has_cpu;
} native_cgroup;

typedef struct native_cgroup_stats {
    uint64_t peak_memory_bytes; /* 0 if unknown */
    uint64_t cpu_ns;            /* 0 if unknown */
    uint64_t oom_kills;         /* processes the memory limit killed */
    uint64_t pids_refused;      /* forks refused at pids.max */
} native_cgroup_stats;

/* Make a cgroup named name (under airlock's own cgroup; the name starts
 * with the owner pid for al_gc) with memory.max / pids.max from the plan's
 * limits. When no hierarchy is writable: true with cg->version = 0 (the
 * caller falls back to rlimits). False only on an unexpected error. */
bool cgroup_create(native_cgroup *cg, const char *name, uint64_t memory_bytes,
                   uint32_t max_processes, al_error *err);
bool cgroup_add_process(const native_cgroup *cg, pid_t pid, al_error *err);
void cgroup_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
/* Kill whatever is left in it, then remove it. Safe on version 0. */
void cgroup_destroy(native_cgroup *cg);
/* For doctor: which versions/controllers are writable (by trying). */
void cgroup_probe(bool *v1_writable, char *v1_controllers, size_t v1_len,
                  bool *v2_writable, char *v2_controllers, size_t v2_len);
/* For al_gc: remove airlock cgroups whose owner pid is dead. Returns count. */
unsigned cgroup_collect_orphans(void);

/* internal to cgroup*.c */
bool cgroup_v1_create(native_cgroup *cg, const char *name, uint64_t memory_bytes,
                      uint32_t max_processes);
bool cgroup_v2_create(native_cgroup *cg, const char *name, uint64_t memory_bytes,
                      uint32_t max_processes);
void cgroup_v1_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
void cgroup_v2_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
void cgroup_v1_destroy(native_cgroup *cg);
void cgroup_v2_destroy(native_cgroup *cg);

#endif
