/*
 * gvisor.h — the gVisor backend: a Linux program inside gVisor's user-space
 * kernel (runsc), described by an OCI bundle. One file per concern:
 *
 *   gvisor.c   gvisor_run: one execution = one `runsc run` of a fresh bundle
 *   warm_session.c  gvisor_session_*: `runsc create` + `start` of an idle init
 *              once, then one `runsc exec` per execution
 *   oci.c      the bundle's config.json (and exec's process.json), with jansson
 *   rootfs.c   the read-only root shared by every sandbox of a state dir
 *   runsc.c    locating runsc, the platform, its command lines and log
 *              files, housekeeping commands, tearing a sandbox down
 *   client.c   starting a runsc command inside airlock's cgroup, under a
 *              subreaper that reaps the sandbox it starts
 *   wait.c     the event loop of one runsc client: output pipes, wall and CPU
 *              deadlines, the exit status from runsc's log, the al_result
 *   orphans.c  gvisor_collect_orphans: what dead airlock processes left
 *   platform_probe.c  gvisor_probe: runsc, its version and the platforms that work
 *
 * Layout of the state directory (sandbox_state_dir, private 0700):
 *   <state>/runsc/                runsc --root: runsc's own container state
 *   <state>/rootfs/               the shared read-only rootfs (rootfs.c)
 *   <state>/gvisor-platform       the platform choice (platform_probe.c, runsc.c)
 *   <state>/bundles/<id>/         one per execution or session:
 *        config.json, owner ("<pid> <start time>"), exec files, and the
 *        logs of every runsc process: <tag>.<command>.log (run.run.log,
 *        run.boot.log, run.gofer.log, create.*.log, exec-N.exec.log) and
 *        <tag>.panic.log. runsc's, the sentry's and the gofer's log lines
 *        never reach the program's stdout/stderr (see gvisor_logs).
 * The id is sandbox_new_id()'s "al-<pid>-<start>-<n>", which is also the
 * runsc container id and the name of the cgroup, so al_gc can tie all three
 * to their (dead) owner.
 *
 * Resource limits. gVisor is the isolation boundary; limits are enforced in
 * two places because this runsc (0.0~20221219) enforces only some of the
 * rlimits it is given:
 *   - inside gVisor: RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_NPROC (verified),
 *     the /tmp tmpfs size (verified). RLIMIT_CPU is passed but this gVisor
 *     does not enforce it.
 *   - on the host: runsc itself is started inside a cgroup airlock makes
 *     (native/cgroup.c), so the sandbox, its gofer and every stub process it
 *     forks are in it: the memory limit (the host OOM killer ends the whole
 *     sandbox), the CPU-time limit (cpuacct, polled by wait.c), and the
 *     guarantee that nothing survives (cgroup_destroy kills what is left).
 *   runsc runs with --ignore-cgroups: left to itself this runsc moves the
 *   sandbox into "/<container id>" at the root of every v1 hierarchy when the
 *   spec has no cgroupsPath (out of airlock's cgroup and its limits).
 *   We do not hand linux.resources + cgroupsPath to runsc either: it would apply
 *   pids.max to the host cgroup, where the sentry's own Go threads count (a
 *   sandbox of one program already has ~60 host threads, so a limit of 64
 *   kills the sentry), and it removes the cgroups it made before we could
 *   read the OOM count, peak memory and CPU time.
 *
 * System calls. The spec carries the native backend's seccomp deny-list
 * (oci.c, seccomp_json), which the sentry enforces inside the sandbox
 * (runsc --oci-seccomp): refused calls fail with EPERM (uncounted: the
 * result's denied_syscalls stays 0). This runsc loads it only into the
 * container's own process and its descendants: an al_exec program is
 * covered; in a session only the idle init is, and every execution, started
 * by `runsc exec`, runs without it (a known gap of runsc before
 * google/gvisor#12692, 2026; test_gvisor.c reports which it is).
 */
#ifndef AIRLOCK_GVISOR_H
#define AIRLOCK_GVISOR_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "native/native.h"
#include "sandbox.h"

#define GVISOR_ID_MAX 96
#define GVISOR_PLATFORM_MAX 16
/* How long a runsc housekeeping command (kill, delete, start, list) may take. */
#define GVISOR_HELPER_TIMEOUT_MS 30000
/* How long a reaper may take to exit once its sandbox was killed (it reaps
 * each process the moment it dies; this only bounds a wedged teardown). */
#define GVISOR_REAP_TIMEOUT_MS 3000
/* After a limit fired and the container was told to die: how long the runsc
 * client gets to notice before it is SIGKILLed and the cgroup emptied. */
#define GVISOR_GRACE_MS 5000
/* How often the CPU-time limit is checked against the cgroup. */
#define GVISOR_CPU_POLL_MS 50

/* What every runsc command of one sandbox needs. */
typedef struct gvisor_ctx {
    char state[PATH_MAX];     /* the state directory */
    char runsc[PATH_MAX];     /* the runsc binary */
    char root[PATH_MAX];      /* <state>/runsc, runsc's --root */
    char platform[GVISOR_PLATFORM_MAX];
    bool network_host;        /* --network=host: the sandbox joins the egress network
                                 namespace named in config.json (else --network=none) */
} gvisor_ctx;

/* One bundle directory and the container id it belongs to. */
typedef struct gvisor_bundle {
    char id[GVISOR_ID_MAX];
    char dir[PATH_MAX];       /* <state>/bundles/<id> */
} gvisor_bundle;

/* ---- runsc.c ----------------------------------------------------------------- */
/* Locate runsc: $PATH, then /usr/bin, /usr/sbin. False if none is executable. */
bool gvisor_find_runsc(char *out, size_t outlen);
/* State dir, runsc and platform for a policy (policy->gvisor_platform, else
 * the probe's cached choice, else the best platform runsc lists). A missing
 * runsc is AL_ERR_UNSUPPORTED. */
bool gvisor_ctx_init(gvisor_ctx *ctx, const char *state_dir, const char *platform,
                     al_error *err);
/* The platforms `runsc help platforms` names, space-separated. */
bool gvisor_list_platforms(const char *runsc, char *out, size_t outlen);
/* The platform to use without probing: systrap when runsc has it, else ptrace. */
void gvisor_default_platform(const char *listed, char *out, size_t outlen);
/* The cached choice in <state>/gvisor-platform ("" when there is none). */
void gvisor_cached_platform(const char *state, char *out, size_t outlen,
                            char *working, size_t working_len);
bool gvisor_write_platform_cache(const char *state, const char *chosen, const char *working);

/* Where one runsc command and every process it starts log. Without these
 * flags runsc hands the sandbox (sentry) its own stdout/stderr, which are
 * the program's: the sentry's log lines ("rate_limited.go:36] A process
 * tried to create a raw socket...") would land in the program's stderr.
 * --debug-log with %COMMAND% gives the client, the sandbox ("boot") and the
 * gofer a file each, and runsc then points the sandbox's and the gofer's own
 * stderr at that file (so Go runtime messages go there too); --panic-log
 * catches the sentry's panics. No --debug: info level already has the
 * "Exiting with status" line wait.c reads, and debug level costs the
 * sentry hundreds of KiB of log per run. */
typedef struct gvisor_logs {
    char pattern[PATH_MAX];   /* <dir>/<tag>.%COMMAND%.log, for --debug-log */
    char panic[PATH_MAX];     /* <dir>/<tag>.panic.log */
    char client[PATH_MAX];    /* <dir>/<tag>.<command>.log: the client's own */
} gvisor_logs;
/* False when the paths do not fit. tag: [a-z0-9-], command: runsc's
 * subcommand (run, create, exec). */
bool gvisor_logs_init(gvisor_logs *l, const char *dir, const char *tag, const char *command);
/* Unlink every log file of l (the client's, boot, gofer, panic). */
void gvisor_logs_remove(const gvisor_logs *l);

/* Fill argv with "runsc --root R --platform P --network=none --ignore-cgroups
 * --oci-seccomp [log flags]" (log flags when logs: --debug-log=PATTERN --panic-log=PANIC
 * --alsologtostderr=false), then the subcommand words in sub
 * (NULL-terminated). argv borrows every string. argv has room for
 * GVISOR_ARGV_MAX entries and is NULL-terminated. False when it would not fit. */
#define GVISOR_ARGV_MAX 32
bool gvisor_argv(const gvisor_ctx *ctx, const gvisor_logs *logs, const char *const *sub,
                 const char **argv);
/* Run a housekeeping runsc command; *status as from waitpid (-1 on timeout). */
bool gvisor_runsc(const gvisor_ctx *ctx, const char *const *sub, int *status,
                  sandbox_capture *out, al_error *err);
/* Does runsc have state for this container (its state file in --root)? */
bool gvisor_container_exists(const gvisor_ctx *ctx, const char *id);
/* Best effort, ignores errors: `kill --all ID KILL`, then `delete --force ID`.
 * For containers of other (dead) processes: al_gc. */
void gvisor_destroy_container(const gvisor_ctx *ctx, const char *id);

/* ---- client.c ---------------------------------------------------------------- */
/* One runsc command we started, and possibly the reaper it runs under. */
typedef struct gvisor_client {
    pid_t pid;                /* the runsc command */
    int pidfd;                /* poll for its end, signal it (never a reused pid) */
    pid_t reaper;             /* its parent, a subreaper (0: the client is our child) */
    int reaper_pidfd;
    int status_fd;            /* from the reaper: the client's wait status */
    bool status_known;
    int status;               /* the client's wait status once known (-1: unknown) */
} gvisor_client;

void gvisor_client_init(gvisor_client *c);
/* Start argv with stdin/stdout/stderr on the given fds, in cg (when cg &&
 * cg->version != 0) before it runs a single instruction of runsc, every other
 * fd closed, a minimal environment. reaped: under a reaper (for run and
 * create, which start a sandbox; see client.c), else as our own child. On
 * failure nothing is left running. */
bool gvisor_spawn(const char *const *argv, int in_fd, int out_fd, int err_fd,
                  const native_cgroup *cg, bool reaped, gvisor_client *c, al_error *err);
/* SIGKILL the client (through its pidfd). */
void gvisor_client_kill(const gvisor_client *c);
/* The client's wait status, waiting for it to end; -1 when unknowable. */
int gvisor_client_status(gvisor_client *c);
/* Release everything of c: reap the client if it is our child (killing it
 * first if it still runs), wait up to timeout_ms for the reaper to exit
 * (it does once all it adopted are dead; else it is SIGKILLed), close fds. */
void gvisor_client_finish(gvisor_client *c, int timeout_ms);

/* End a sandbox, leaving nothing: every process in cg killed (cg may be NULL
 * or version 0: then `runsc kill --all`), the reaper waited for (it reaps
 * them as they die), then `runsc delete --force` when runsc still has the
 * container (it finds no process to wait for), cg removed. Idempotent. */
void gvisor_teardown(const gvisor_ctx *ctx, const char *id, native_cgroup *cg,
                     gvisor_client *reaped);

/* ---- bundles (gvisor.c) ------------------------------------------------------ */
/* Make <state>/bundles/<new id>/ (0700) with its owner file. */
bool gvisor_bundle_create(const gvisor_ctx *ctx, gvisor_bundle *b, al_error *err);
void gvisor_bundle_remove(const gvisor_bundle *b);
/* The cgroup for a bundle (memory limit from the policy, no pids limit: see
 * above). cg->version == 0 when none is writable; then a memory limit cannot
 * be enforced and that is an error (AL_ERR_UNSUPPORTED), never a weaker run. */
bool gvisor_cgroup_create(native_cgroup *cg, const gvisor_bundle *b, const al_policy *p,
                          al_error *err);
/* "gvisor (ptrace)" into result->backend. */
void gvisor_set_backend(al_result *result, const char *platform);

/* ---- rootfs.c ---------------------------------------------------------------- */
/* <state>/rootfs, built once (in a temporary directory, then renamed into
 * place so a concurrent builder or a crash never leaves a half-built root). */
bool gvisor_rootfs_ensure(const char *state, char *out, size_t outlen, al_error *err);
/* Top-level directories of the host that live under /usr on a merged-/usr
 * system (bin, sbin, lib, lib32, lib64, libx32). */
extern const char *const gvisor_top_dirs[];
/* How the host has /NAME: 0 absent, 1 a symlink into /usr (the rootfs gets
 * the same symlink), 2 a real directory (bind-mounted read-only). */
int gvisor_top_dir_kind(const char *name);

/* ---- egress.c ---------------------------------------------------------------- */
/* A sandbox's egress (issue 5): the proxy for this execution and the network
 * namespace (loopback + the proxy's listener) runsc joins with
 * --network=host. Empty when the policy grants no network. */
typedef struct gvisor_egress {
    struct egress_gateway *gateway;
    struct egress_netns *netns;
} gvisor_egress;
/* Start both (sets ctx->network_host) when the policy grants egress. */
bool gvisor_egress_start(gvisor_egress *e, gvisor_ctx *ctx, const al_policy *p, const char *id,
                         al_error *err);
/* The proxy's counters so far (zero without egress). */
typedef struct gvisor_egress_stats {
    uint32_t allowed, denied;
    uint64_t bytes;
} gvisor_egress_stats;
void gvisor_egress_read(const gvisor_egress *e, gvisor_egress_stats *out);
/* The namespace's path for config.json, or NULL. */
const char *gvisor_egress_netns(const gvisor_egress *e);
/* After the sandbox is gone: stop the proxy (counters into result, may be
 * NULL) and let the namespace go. */
void gvisor_egress_stop(gvisor_egress *e, al_result *result);

/* ---- oci.c ------------------------------------------------------------------- */
/* The guest working directory: policy->cwd, else the first grant, else /tmp. */
const char *gvisor_guest_cwd(const al_policy *p);
/* <bundle>/config.json: the container runs argv (policy->argv when NULL). */
bool gvisor_write_config(const char *bundle_dir, const char *rootfs, const al_policy *p,
                         const char *const *argv, size_t argc, const char *netns_path,
                         al_error *err);
/* A process.json for `runsc exec --process`: policy argv, env, cwd. */
bool gvisor_write_process(const char *path, const al_policy *p, const char *const *argv,
                          size_t argc, al_error *err);

/* ---- wait.c ------------------------------------------------------------------ */
typedef enum gvisor_stop_reason {
    GVISOR_STOP_NONE = 0,
    GVISOR_STOP_WALL,
    GVISOR_STOP_CPU,
    GVISOR_STOP_CANCEL,       /* the embedder raised al_policy.cancel */
} gvisor_stop_reason;

/* One runsc client (run or exec) being watched. */
typedef struct gvisor_watch {
    gvisor_client *client;    /* borrowed: the runsc client (run or exec) */
    int out_fd, err_fd;       /* read ends of the program's stdout/stderr */
    sandbox_capture out, err;
    uint64_t start_ns;
    uint64_t timeout_ms;      /* 0: none */
    uint64_t cpu_limit_ns;    /* 0: none */
    const native_cgroup *cg;  /* CPU usage source (may be version 0) */
    uint64_t cpu_base_ns;     /* cgroup CPU usage when the execution started */
    const int *cancel;        /* al_policy.cancel (polled every SANDBOX_CANCEL_POLL_MS); NULL: none */
    const char *cancel_reason;/* the result's error.message when it fires */
    /* Called once when a limit (or the cancel flag) fires: make the
     * container's program die. */
    void (*stop)(void *arg);
    void *stop_arg;
    /* out */
    gvisor_stop_reason fired;
    int client_status;        /* waitpid status of the runsc client */
    uint64_t end_ns;
} gvisor_watch;

/* Watch until the client exits (calling stop and, after GVISOR_GRACE_MS,
 * SIGKILLing the client when a limit fires). Closes out_fd and err_fd; the
 * client stays the caller's (its status is in client_status). */
void gvisor_watch_run(gvisor_watch *w);
/* The wait status runsc logged ("Exiting with status: N"), or -1 when runsc
 * failed before the program ended (then *why gets runsc's own message), or
 * GVISOR_NO_LOG when runsc wrote no log at all. */
#define GVISOR_NO_LOG (-2)
int gvisor_log_status(const char *log_path, char *why, size_t whylen);
/* runsc prints its fatal error on its stderr, which is the program's: when
 * the client's log says runsc failed ("FATAL ERROR: MSG"), drop a trailing
 * "MSG\n" from err (the message is in the result's error instead). */
void gvisor_strip_runsc_error(sandbox_capture *err, const char *log_path);
/* Fill result from the watch, the logged status and the cgroup's stats. */
void gvisor_fill_result(al_result *result, gvisor_watch *w, int wait_status,
                        const char *runsc_error, const native_cgroup_stats *stats);

/* ---- orphans.c --------------------------------------------------------------- */
/* Bundles whose owner is dead: their containers killed and deleted, the
 * bundle removed. thorough: also containers runsc lists that have no bundle
 * (costs one `runsc list`). */
void gvisor_collect(const gvisor_ctx *ctx, bool thorough, unsigned *containers,
                    unsigned *bundles);

#endif
