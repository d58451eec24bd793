/*
 * sandbox.h — internals shared by the files of src/sandbox/, the layer that
 * turns one al_policy into one al_result (airlock.h, "running code under a
 * policy").
 *
 *   policy.c        defaults, status names, policy validation, result helpers
 *   wasm_backend.c  al_run_wasm: the WebAssembly engine + the WASI host
 *   python.c        al_python_*: CPython for WASI, compiled once, runs and sessions
 *   exec.c          al_exec: the dispatcher over the three backends
 *   session.c       al_session_*: one sandbox kept across executions
 *   capture.c       capped output buffers and running helper programs
 *   state.c         the state directory (gVisor bundles, runsc state, probe cache)
 *   probe.c         al_probe_host: what this host supports (airlock doctor)
 *   gc.c            al_gc: what dead airlock processes left behind
 *   native/         the native backend (native.h): namespaces, mounts, seccomp,
 *                   Landlock, capabilities, rlimits, cgroups v1/v2, init
 *   gvisor/         the gVisor backend (gvisor.h): OCI bundle, runsc driver
 *
 * Backends validate the policy first (sandbox_policy_check) and report every
 * failure through the result (sandbox_set_status), never by printing.
 */
#ifndef AIRLOCK_SANDBOX_H
#define AIRLOCK_SANDBOX_H

#include <stdarg.h>
#include <sys/types.h>

#include "airlock.h"

/* Largest values a policy may ask for. Beyond these a request is a mistake
 * (or an attack on the host), not a workload. */
#define SANDBOX_MAX_MODULE_BYTES ((size_t)1 << 30)   /* the engine refuses more anyway */
#define SANDBOX_MAX_OUTPUT_CAP ((size_t)1 << 30)     /* per stream; copied into the result */
#define SANDBOX_MAX_TIMEOUT_MS UINT64_C(1000000000000) /* ~31 years; keeps ns math in range */
#define SANDBOX_MAX_GUEST_PATH 4096
#define SANDBOX_MAX_ARGS 4096      /* native/gvisor: argv entries */
#define SANDBOX_MAX_ENV 1024       /* native/gvisor: environment entries */
#define SANDBOX_MAX_DIRS 64        /* native/gvisor: granted directories */

/* AL_STATUS_OK when the policy can be run; otherwise the status to report
 * (AL_STATUS_ERROR) with err->message saying which field is wrong. */
al_status sandbox_policy_check(const al_policy *policy, al_error *err);

/* Set result->status and replace result->error with (kind, message).
 * Keeps nothing of the previous error. */
void sandbox_set_status(al_result *result, al_status status, al_error_kind kind,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Cancellation (al_policy.cancel): every backend looks at the flag at least
 * this often while its guest runs, so a raised flag stops a run within about
 * 100 ms (plus the teardown). */
#define SANDBOX_CANCEL_POLL_MS 50
/* Is *flag non-zero (an acquire load; false for NULL)? */
bool sandbox_flag_raised(const int *flag);
/* Has the embedder raised policy->cancel? (false without a flag) */
bool sandbox_cancel_requested(const al_policy *policy);
/* policy->cancel_reason, or "cancelled" when it is NULL or empty. */
const char *sandbox_cancel_reason(const al_policy *policy);
/* sandbox_set_status(result, AL_STATUS_CANCELLED, kind, <the reason>). */
void sandbox_set_cancelled(al_result *result, const al_policy *policy, al_error_kind kind);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t sandbox_now_ns(void);

/* The uid and gid a native or gvisor program runs as inside its sandbox. */
#define SANDBOX_GUEST_UID 1000
#define SANDBOX_GUEST_GID 1000

/* guest_etc.c: the files of the guest's minimal /etc, for every backend;
 * rel is relative to the root ("etc/passwd"). Ends with {NULL, NULL}. */
typedef struct sandbox_etc_file {
    const char *rel, *content;
} sandbox_etc_file;
extern const sandbox_etc_file sandbox_guest_etc[];

/* Like sandbox_set_status with kind AL_ERR_SYSTEM and ": strerror(errno)"
 * appended (errno read on entry). */
void sandbox_set_errno(al_result *result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for an al_error alone. Always returns false. */
bool sandbox_error_errno(al_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool sandbox_error(al_error *err, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- capture.c: one output stream with a cap ------------------------------------ */
typedef struct sandbox_capture {
    uint8_t *data;     /* owned; NUL-terminated when non-NULL */
    size_t len, cap;   /* cap: the most kept; the rest is read and dropped */
    size_t alloc;
    bool truncated;
    /* al_policy.on_output for this stream (1 stdout, 2 stderr), or NULL */
    void (*on_output)(void *ctx, int stream, const uint8_t *data, size_t len);
    void *on_output_ctx;
    int stream;
} sandbox_capture;

void capture_init(sandbox_capture *c, size_t cap);
/* From now on hand every byte kept to policy->on_output as `stream` (1 or
 * 2), just before it is kept; nothing when the policy has no on_output.
 * Call after capture_init. */
void capture_stream_to(sandbox_capture *c, const al_policy *policy, int stream);
/* Keep what fits under the cap, drop the rest (setting truncated). False only
 * when out of memory (the bytes are then dropped and truncated is set). */
bool capture_append(sandbox_capture *c, const void *bytes, size_t n);
/* Read what fd has now (non-blocking fd) into c. Returns 1 while open, 0 at
 * EOF, -1 on a read error (errno set). */
int capture_read_fd(sandbox_capture *c, int fd);
/* Move the bytes into result->stdout_* or stderr_* (never NULL afterwards:
 * an empty stream is ""), and free nothing else. */
void capture_move_to_result(sandbox_capture *c, uint8_t **data, size_t *len, bool *truncated);
void capture_free(sandbox_capture *c);

/* Run a helper program on the host (runsc) with argv (argv[0] a path),
 * stdin from /dev/null unless stdin_fd >= 0, collect up to 1 MiB of its stdout
 * and stderr, wait at most timeout_ms (then SIGKILL its process group).
 * *wait_status as from waitpid (or -1 on timeout). False when it could not be
 * started (err says why). out/errout may be NULL. */
bool sandbox_run_helper(const char *const *argv, int stdin_fd, uint64_t timeout_ms,
                        int *wait_status, sandbox_capture *out, sandbox_capture *errout,
                        al_error *err);

/* ---- wasm_backend.c: a compiled module under a policy ------------------------------ */

/* The fuel budget of an "unmetered" wasm run: metering is always on so that
 * fuel_used is reported, but with a budget no run can spend (the engine keeps
 * fuel in an int64_t, so this is also the largest budget it can represent). */
#define SANDBOX_UNMETERED_FUEL (UINT64_MAX / 2)

/* What a caller of sandbox_run_wasm_module may add to a run (python.c's
 * sessions). Every callback gets arg and runs on the thread running the
 * guest. */
typedef struct sandbox_wasm_hooks {
    /* src/wasi/wasi.h, wasi_config: fd 0 fed by the host, and output handed
     * over as written (instead of policy->on_output) and, with
     * output_unbuffered, not kept (the result's outputs are then empty and
     * the policy's caps do not apply: the callback applies its own). */
    size_t (*stdin_read)(void *arg, uint8_t *dst, size_t len, al_trap_kind *trap);
    void (*on_output)(void *arg, int stream, const uint8_t *data, size_t len);
    bool output_unbuffered;
    /* The instance exists and _start is about to be called: from here until
     * stopped, store may be interrupted (from any thread) and its fuel set
     * (from these callbacks). */
    void (*started)(void *arg, al_store *store, al_instance *instance);
    /* The guest has stopped; store (NULL if none was made) is still alive
     * and is freed right after this returns. */
    void (*stopped)(void *arg, al_store *store);
    void *arg;
} sandbox_wasm_hooks;

/* al_run_wasm for a module compiled already: the module is only read, so one
 * module may run in any number of stores on any threads at once. hooks may
 * be NULL. Returns false only when result is NULL. */
bool sandbox_run_wasm_module(const al_policy *policy, const al_module *module,
                             const sandbox_wasm_hooks *hooks, al_result *result);

/* ---- state.c ------------------------------------------------------------------ */
/* The state directory (see al_policy.state_dir), created 0700 if missing and
 * refused if another user owns it. */
bool sandbox_state_dir(const char *requested, char *out, size_t outlen, al_error *err);
/* A new unique execution id "al-<pid>-<start time>-<counter>": the owner's
 * pid and its start time (sandbox_process_start_time, against pid reuse) are
 * in it so al_gc can tell a dead owner from the id alone. */
void sandbox_new_id(char *out, size_t outlen);
/* True when the process that made id (its pid, and its start time when
 * recorded) is still alive. */
bool sandbox_owner_alive(pid_t pid, unsigned long long start_time);
/* This process's start time (field 22 of /proc/self/stat); 0 if unknown. */
unsigned long long sandbox_process_start_time(pid_t pid);
/* rm -rf of a directory we created, not following symlinks; best effort. */
void sandbox_remove_tree(const char *path);

/* The backends (native/native.c, gvisor/gvisor.c); the policy is checked.
 * Both fill result->backend and report AL_STATUS_UNSUPPORTED (with the
 * reason) when the host lacks what they need. */
bool native_run(const al_policy *policy, al_result *result);
bool gvisor_run(const al_policy *policy, al_result *result);

/* A warm gVisor sandbox (gvisor/warm_session.c): runsc create + start of an idle
 * init once, then one `runsc exec` per execution. */
typedef struct gvisor_sandbox gvisor_sandbox;
gvisor_sandbox *gvisor_session_open(const al_policy *policy, al_error *err);
bool gvisor_session_exec(gvisor_sandbox *sb, const al_policy *request, al_result *result);
void gvisor_session_close(gvisor_sandbox *sb);

/* For al_probe_host and al_gc (gvisor/). */
void gvisor_probe(al_host_report *report, const char *state_dir, bool probe_platforms);
/* Kill and delete containers, and remove bundles, whose owner is dead. */
void gvisor_collect_orphans(const char *state_dir, unsigned *containers, unsigned *bundles);

#endif
