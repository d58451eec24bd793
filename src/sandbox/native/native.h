/*
 * native.h — the native backend: any Linux program in its own namespaces,
 * behind pivot_root, seccomp-bpf, Landlock, dropped capabilities, cgroups and
 * rlimits. One file per kernel mechanism (after nsjail); each exposes the
 * verbs "prepare in the parent" and/or "apply in the child".
 *
 *   native.c   native_run: the parent side. Builds a native_plan from the
 *              policy, clones the sandbox init with
 *              CLONE_NEWUSER|NEWPID|NEWNS|NEWNET|NEWIPC|NEWUTS, writes its
 *              uid/gid maps, makes the cgroup and compiles the seccomp filter
 *              while init builds the new root (v2 cgroups: before clone),
 *              hands both over (the sync protocol below), then runs the
 *              event loop (stdout/stderr pipes, seccomp notifications,
 *              control messages, the wall and CPU deadlines) and fills the
 *              al_result.
 *   init.c     the sandbox's pid 1: mounts the new root (mount.c), joins the
 *              cgroup, forks the program, reaps every process, and when the
 *              program ends kills whatever is left and reports the wait
 *              status to the parent.
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
 * parent, or comes from the parent ready to use (the seccomp filter, as raw
 * BPF over the sync socket). Failures are reported as a
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
#define NATIVE_CGROUP_JOIN_MAX 3 /* v1 hierarchies a sandbox uses: memory, pids, cpuacct */

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

/* Everything the child needs, built by the parent before clone (but the
 * seccomp filter, which follows over sync_fd). */
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
    int sync_fd;              /* the parent's messages, in order (see "the sync
                                 protocol" below); EOF if the parent gave up */
    bool seccomp_notify;      /* use user notification (else plain EPERM, uncounted) */
    native_seccomp_filter seccomp; /* the program's process receives the filter
                                 (compiled by the parent from seccomp_notify)
                                 here from sync_fd; len 0 until then */
    int landlock_abi;         /* 0: skip Landlock */
    bool egress_listener;     /* init listens on 127.0.0.1:EGRESS_PROXY_PORT in the
                                 sandbox's network namespace and sends the socket
                                 to the parent (NATIVE_MSG_EGRESS_LISTENER) */
} native_plan;

/* ---- the sync protocol: parent -> child over plan.sync_fd ------------------
 * A SOCK_STREAM socket, so the parent's sends never block on a slow reader
 * and init sees EOF (and the hang-up) when the parent dies. In order:
 *  1. one byte: the uid/gid maps are written (init may become the guest);
 *  2. a native_cgroup_msg, with the fds it announces (SCM_RIGHTS): which
 *     limits the cgroup enforces (the rest fall back to rlimits) and, on
 *     cgroup v1, the "tasks" files through which init moves itself into the
 *     cgroup (cgroup_open_self_join) before it forks the program. It comes
 *     after the byte because on v1 the parent makes the cgroup while init
 *     builds the new root;
 *  3. the seccomp filter (seccomp_send), read by the program's process just
 *     before it loads it: the parent compiles it meanwhile. */
#define NATIVE_CGROUP_MSG_MAGIC 0x4347524fu /* "CGRO" */
typedef struct native_cgroup_msg {
    uint32_t magic;
    uint8_t cgroup_memory;    /* native_plan.cgroup_memory */
    uint8_t cgroup_pids;      /* native_plan.cgroup_pids */
    uint8_t ntasks_fds;       /* fds riding along: <= NATIVE_CGROUP_JOIN_MAX */
    uint8_t pad;
} native_cgroup_msg;

/* ---- the control protocol: child -> parent over plan.control_fd ------------- */
typedef enum native_msg_kind {
    NATIVE_MSG_ERROR = 1,     /* setup failed: step + errno; no program ran */
    NATIVE_MSG_NOTIFY_FD,     /* the seccomp listener fd rides along (SCM_RIGHTS) */
    NATIVE_MSG_EXEC_FAILED,   /* execve of the program failed: errno */
    NATIVE_MSG_EXIT,          /* the program ended: wait_status */
    NATIVE_MSG_EGRESS_LISTENER, /* the egress listener rides along (SCM_RIGHTS) */
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
/* In the parent (native.c: after clone, while init builds the new root):
 * build the deny-list filter with libseccomp (deny -> user notification
 * when use_notify, else EPERM; other ABIs killed) and store it in *f as raw
 * BPF. libseccomp allocates, so this must never run in the child. False +
 * err on failure (f->len is then 0). Thread-safe. */
bool seccomp_prepare(native_seccomp_filter *f, bool use_notify, al_error *err);
/* The compiled filter travels from the parent to the program's process
 * over the sync socket (native_plan.sync_fd), so that the parent need not
 * compile it before clone. seccomp_send (parent; MSG_NOSIGNAL) writes it;
 * seccomp_receive (the program's process: system calls on the plan's memory
 * only) reads it whole into *f, or leaves f->len 0 (which seccomp_install
 * refuses) and sets *step. */
bool seccomp_send(int fd, const native_seccomp_filter *f);
bool seccomp_receive(int fd, native_seccomp_filter *f, const char **step);
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
/* /proc/self/mountinfo and /proc/self/cgroup, read once: the kernel
 * generates mountinfo anew on every read (tens of microseconds each), and
 * making one sandbox's cgroup looks up four hierarchies. Owned text; a NULL
 * snapshot in the functions below means "read the files now". */
typedef struct cgroup_snapshot {
    char *mountinfo;
    char *self_cgroup;
} cgroup_snapshot;
bool cgroup_snapshot_take(cgroup_snapshot *snap);
void cgroup_snapshot_free(cgroup_snapshot *snap);
/* cgroup_create with one version only (2 or 1), for a caller that makes
 * them at different times (native.c: v2 before clone, v1 after). True with
 * cg->version = version when made, true with version 0 when that version is
 * not usable here; false (err set) when the name is bad or a directory of
 * that name exists already (someone else's: never adopted). */
bool cgroup_create_version(const cgroup_snapshot *snap, int version, native_cgroup *cg,
                           const char *name, uint64_t memory_bytes, uint32_t max_processes,
                           al_error *err);
/* Whether /proc/self/cgroup shows memory or pids bound to a v1 hierarchy:
 * then v2 cannot have it (a controller lives in one hierarchy only), so
 * cgroup_create_version(.., 2, ..) would find nothing usable. One small
 * file, cheaper than finding that out by trying. */
bool cgroup_v1_has_limits(void);
bool cgroup_add_process(const native_cgroup *cg, pid_t pid, al_error *err);
/* The cheap way in, for a process that is about to start: moving another
 * process (cgroup_add_process, a pid written to cgroup.procs) takes the
 * kernel's global threadgroup lock for writing, which waits for an RCU grace
 * period (5-20 ms on an idle host); a process moving its own single thread
 * does not take it, and neither does a clone3 made straight into a cgroup.
 * v1: open <dir>/tasks of each distinct hierarchy directory of cg for
 * writing into fds (the rest -1); the process then writes "0" (itself) to
 * each. The kernel checks the permission with the opener's credentials, so
 * the fds may be handed to a child. v2 and version 0: nothing to open.
 * False with errno (and every fd closed) on failure. */
bool cgroup_open_self_join(const native_cgroup *cg, int fds[NATIVE_CGROUP_JOIN_MAX]);
/* v2: an O_DIRECTORY fd of the cgroup for clone3's CLONE_INTO_CGROUP; -1
 * (errno set) otherwise. */
int cgroup_open_dir(const native_cgroup *cg);
void cgroup_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
/* Kill whatever is left in it, then remove it. Safe on version 0. */
void cgroup_destroy(native_cgroup *cg);
/* For doctor: which versions/controllers are writable (by trying). */
void cgroup_probe(bool *v1_writable, char *v1_controllers, size_t v1_len,
                  bool *v2_writable, char *v2_controllers, size_t v2_len);
/* For al_gc: remove airlock cgroups whose owner pid is dead. Returns count. */
unsigned cgroup_collect_orphans(void);

/* internal to cgroup*.c (the file helpers are in cgroup.c; paths are
 * PATH_MAX buffers) */
#define CGROUP_DIR_PREFIX "airlock."
bool cgroup_find(const cgroup_snapshot *snap, const char *controller, char *root, char *current);
bool cgroup_join(char *out, const char *dir, const char *name);
bool cgroup_write(const char *dir, const char *file, const char *text);
bool cgroup_write_u64(const char *dir, const char *file, uint64_t value);
bool cgroup_read(const char *dir, const char *file, char *buf, size_t len);
bool cgroup_read_u64(const char *dir, const char *file, uint64_t *value);
bool cgroup_read_key(const char *dir, const char *file, const char *key, uint64_t *value);
bool cgroup_has_word(const char *list, const char *word);
bool cgroup_remove(const char *dir);
size_t cgroup_v1_parents(const cgroup_snapshot *snap, char (*out)[PATH_MAX], size_t max);
/* Append dir to out[0..*n) unless it is there already or out is full
 * (max entries); true when it was added. */
bool cgroup_add_unique(char (*out)[PATH_MAX], size_t *n, size_t max, const char *dir);
size_t cgroup_v2_parents(const cgroup_snapshot *snap, char (*out)[PATH_MAX], size_t max);
void cgroup_v1_probe(const char *name, bool *writable, char *controllers, size_t len);
void cgroup_v2_probe(const char *name, bool *writable, char *controllers, size_t len);
bool cgroup_v1_create(const cgroup_snapshot *snap, native_cgroup *cg, const char *name,
                      uint64_t memory_bytes, uint32_t max_processes);
bool cgroup_v2_create(const cgroup_snapshot *snap, native_cgroup *cg, const char *name,
                      uint64_t memory_bytes, uint32_t max_processes);
void cgroup_v1_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
void cgroup_v2_read_stats(const native_cgroup *cg, native_cgroup_stats *stats);
void cgroup_v1_destroy(native_cgroup *cg);
void cgroup_v2_destroy(native_cgroup *cg);

#endif
