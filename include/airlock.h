/*
 * airlock.h — the embedding API of airlock.
 *
 * This header is the whole public surface: the CLI, the daemon and the test
 * runners use nothing else. It exposes a WebAssembly 2.0 engine:
 *
 *   bytes --al_module_new--> module --al_instantiate(imports)--> instance
 *   instance --al_instance_export--> extern --al_call--> results | trap
 *
 * Ownership: every runtime object (functions, tables, memories, globals,
 * instances) belongs to an al_store and lives until al_store_free(). Modules
 * and import sets are owned by the caller and freed with their own _free.
 * Errors are values (al_error), never printed from inside the library.
 */
#ifndef AIRLOCK_H
#define AIRLOCK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- values ------------------------------------------------------------ */

typedef enum al_valtype {
    AL_I32 = 0x7F,
    AL_I64 = 0x7E,
    AL_F32 = 0x7D,
    AL_F64 = 0x7C,
    AL_FUNCREF = 0x70,
    AL_EXTERNREF = 0x6F,
} al_valtype;

typedef struct al_func al_func;

/* Floats are carried as raw IEEE-754 bits so NaN payloads survive intact. */
typedef struct al_value {
    al_valtype type;
    union {
        int32_t i32;
        int64_t i64;
        uint32_t f32_bits;
        uint64_t f64_bits;
        al_func *funcref;   /* NULL is ref.null func */
        uintptr_t externref; /* 0 is ref.null extern; hosts use non-zero tokens */
    } of;
} al_value;

al_value al_i32(int32_t v);
al_value al_i64(int64_t v);
al_value al_f32(float v);
al_value al_f64(double v);
float al_value_f32(al_value v);
double al_value_f64(al_value v);

/* ---- errors and traps --------------------------------------------------- */

typedef enum al_error_kind {
    AL_OK = 0,
    AL_ERR_MALFORMED,     /* bytes are not a well-formed binary module */
    AL_ERR_INVALID,       /* well-formed but fails validation */
    AL_ERR_LINK,          /* imports missing or of the wrong type */
    AL_ERR_TRAP,          /* a trap at run time (or during instantiation) */
    AL_ERR_LIMIT,         /* an embedder limit refused the request */
    AL_ERR_ARGUMENT,      /* the embedder passed bad arguments */
    AL_ERR_NOMEM,         /* the host ran out of memory */
    AL_ERR_SYSTEM,        /* a host system call failed (message names it and errno) */
    AL_ERR_UNSUPPORTED,   /* the host lacks a mechanism the request needs */
} al_error_kind;

typedef enum al_trap_kind {
    AL_TRAP_NONE = 0,
    AL_TRAP_UNREACHABLE,
    AL_TRAP_INT_DIV_ZERO,
    AL_TRAP_INT_OVERFLOW,
    AL_TRAP_INVALID_CONVERSION,
    AL_TRAP_MEMORY_OOB,
    AL_TRAP_TABLE_OOB,
    AL_TRAP_INDIRECT_TYPE_MISMATCH,
    AL_TRAP_UNINITIALIZED_ELEMENT,
    AL_TRAP_NULL_REFERENCE,
    AL_TRAP_STACK_EXHAUSTED,
    AL_TRAP_INTERRUPTED,
    AL_TRAP_FUEL_EXHAUSTED,
    AL_TRAP_HOST,          /* a host function reported failure */
    AL_TRAP_UNDEFINED_ELEMENT, /* call_indirect index past the table's end */
    AL_TRAP_MEMORY_LIMIT,  /* memory.grow past max_memory_bytes with trap_on_memory_limit */
    AL_TRAP_EXIT,          /* a host function ended the run on purpose (WASI proc_exit) */
} al_trap_kind;

/* Spec wording of a trap kind, e.g. "integer divide by zero". */
const char *al_trap_message(al_trap_kind kind);

/* One guest frame of a trap backtrace. */
typedef struct al_frame_info {
    uint32_t func_index;      /* in its module's function index space */
    uint32_t code_offset;     /* byte offset of the instruction in the module */
    char func_name[48];       /* from the name section, or "" */
} al_frame_info;

#define AL_BACKTRACE_MAX 16

typedef struct al_error {
    al_error_kind kind;
    al_trap_kind trap;        /* when kind == AL_ERR_TRAP */
    uint32_t func_index;      /* trap location: function index in its module */
    uint32_t code_offset;     /* trap location: byte offset in the module */
    char func_name[64];       /* from the name section, or "" */
    char message[256];        /* human-readable, includes section/offset for decode errors */
    /* Guest frames at the trap, innermost first (backtrace[0] is the trap
     * location); at most AL_BACKTRACE_MAX, then backtrace_truncated is set.
     * backtrace_len == 0: the trap has no guest location (a segment during
     * instantiation, or a host function called directly); message says more. */
    uint32_t backtrace_len;
    bool backtrace_truncated;
    al_frame_info backtrace[AL_BACKTRACE_MAX];
} al_error;

/* Fill *err: kind, a printf-style message, everything else zeroed (no trap
 * location, no backtrace). err may be NULL (the caller does not want the
 * details); the message is truncated to fit and always NUL-terminated.
 * al_error_vset is the same with a va_list, for wrappers of their own. */
void al_error_set(al_error *err, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void al_error_vset(al_error *err, al_error_kind kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* ---- types --------------------------------------------------------------- */

/* A function signature; types are al_valtype values stored as bytes. */
typedef struct al_functype {
    uint32_t nparams, nresults;
    const uint8_t *params;
    const uint8_t *results;
} al_functype;

/* ---- store, modules ------------------------------------------------------ */

typedef struct al_store al_store;
typedef struct al_module al_module;
typedef struct al_instance al_instance;
typedef struct al_table al_table;
typedef struct al_memory al_memory;
typedef struct al_global al_global;
typedef struct al_imports al_imports;

typedef struct al_limits {
    uint32_t max_call_depth;     /* guest frames; exceeding it traps "call stack exhausted" */
    uint32_t max_value_stack;    /* 64-bit slots shared by all frames */
    uint64_t max_memory_bytes;   /* per linear memory */
    uint32_t max_table_elements; /* per table */
    uint32_t max_instances;      /* per store */
    uint32_t max_tables;         /* per store, imported host tables included */
    uint32_t max_memories;       /* per store, imported host memories included */
    /* memory.grow past max_memory_bytes: false returns -1 (the spec's
     * failure), true traps AL_TRAP_MEMORY_LIMIT. */
    bool trap_on_memory_limit;
} al_limits;

/* Defaults: 10000 frames, 1M slots, 4 GiB memory, 10M table elements,
 * 10000 instances, 100000 tables, 10000 memories, grow failure returns -1.
 * A module whose declared minimum already exceeds a limit is refused by
 * al_instantiate (AL_ERR_LIMIT) before anything is allocated. */
al_limits al_limits_default(void);

al_store *al_store_new(const al_limits *limits /* NULL: defaults */);
void al_store_free(al_store *store);

/* Raise from any thread: running guest code traps AL_TRAP_INTERRUPTED at the
 * next loop header or call. Cleared by al_store_clear_interrupt. */
void al_store_interrupt(al_store *store);
void al_store_clear_interrupt(al_store *store);
/* Has al_store_interrupt been raised? Blocking host functions poll this. */
bool al_store_interrupted(const al_store *store);

/* Fuel: a budget of guest instructions. Each straight-line run of
 * instructions is charged when it ends, bulk memory/table operations one unit
 * per byte/element; loop headers and calls check the budget, and running out
 * traps AL_TRAP_FUEL_EXHAUSTED. Without al_store_set_fuel nothing is metered.
 * The budget is shared by every call in the store, re-entry included. */
void al_store_set_fuel(al_store *store, uint64_t fuel);
uint64_t al_store_fuel(const al_store *store); /* remaining; 0 when unmetered */

/* Decode and validate; the buffer is copied, so the caller may free it.
 * al_module_free may be called while instances of the module are alive: they
 * keep the module's code until their store is freed. */
al_module *al_module_new(const uint8_t *bytes, size_t len, al_error *err);
void al_module_free(al_module *module);

typedef enum al_extern_kind {
    AL_EXTERN_FUNC = 0,
    AL_EXTERN_TABLE = 1,
    AL_EXTERN_MEMORY = 2,
    AL_EXTERN_GLOBAL = 3,
} al_extern_kind;

typedef struct al_extern {
    al_extern_kind kind;
    union {
        al_func *func;
        al_table *table;
        al_memory *memory;
        al_global *global;
    } of;
} al_extern;

/* Module introspection: imports and exports by position. */
uint32_t al_module_import_count(const al_module *module);
bool al_module_import(const al_module *module, uint32_t i, const char **module_name,
                      const char **name, al_extern_kind *kind);
uint32_t al_module_export_count(const al_module *module);
bool al_module_export(const al_module *module, uint32_t i, const char **name,
                      al_extern_kind *kind);

/* ---- host objects -------------------------------------------------------- */

typedef struct al_caller al_caller;

/* A host function: read args, write results, return AL_TRAP_NONE or a trap. */
typedef al_trap_kind (*al_host_fn)(void *env, al_caller *caller, const al_value *args,
                                   al_value *results);

/* The signature is copied. */
al_func *al_func_new_host(al_store *store, const al_functype *type, al_host_fn fn,
                          void *env);
/* The memory exported as "memory" by the calling instance, or NULL. */
al_memory *al_caller_memory(al_caller *caller);

al_table *al_table_new(al_store *store, al_valtype elem, uint32_t min, uint32_t max,
                       bool has_max, al_error *err);
al_memory *al_memory_new(al_store *store, uint32_t min_pages, uint32_t max_pages,
                         bool has_max, al_error *err);
al_global *al_global_new(al_store *store, al_value value, bool is_mutable, al_error *err);

uint8_t *al_memory_data(al_memory *memory);
uint64_t al_memory_size(const al_memory *memory); /* bytes */
/* Did memory.grow in this store fail because of max_memory_bytes? */
bool al_store_memory_limit_hit(const al_store *store);
al_value al_global_get(const al_global *global);
uint32_t al_table_size(const al_table *table);

/* ---- imports and instances ----------------------------------------------- */

al_imports *al_imports_new(void);
void al_imports_free(al_imports *imports);
/* Define (module, name) -> extern. A later definition replaces an earlier one. */
bool al_imports_define(al_imports *imports, const char *module, const char *name,
                       al_extern ext);
/* Define every export of an instance under a module name (the spec's "register"). */
bool al_imports_define_instance(al_imports *imports, const char *module,
                                al_instance *instance);

/* Link, initialise segments, run start. On failure nothing is registered; a
 * trap in start or a segment may leave writes in imported memories/tables, as
 * the spec requires. */
al_instance *al_instantiate(al_store *store, const al_module *module,
                            const al_imports *imports, al_error *err);

bool al_instance_export(const al_instance *instance, const char *name, al_extern *out);
/* Same, for names that may hold NUL bytes (wasm names are any UTF-8). */
bool al_instance_export_n(const al_instance *instance, const char *name, size_t len,
                          al_extern *out);

/* Signature of a function (imported, defined or host). */
const al_functype *al_func_type(const al_func *func);

/* Call with typed args; results must have room for type->nresults values. */
bool al_call(al_store *store, al_func *func, const al_value *args, uint32_t nargs,
             al_value *results, uint32_t nresults, al_error *err);


/* ==== running code under a policy ==========================================
 * One policy in, one result out, for every isolation backend. Everything is
 * denied unless the policy grants it: no directories, no environment, empty
 * stdin, no network. */

typedef enum al_isolation {
    AL_ISOLATION_WASM = 0, /* the WebAssembly engine + WASI preview1 host */
    AL_ISOLATION_NATIVE,   /* a Linux program: namespaces, pivot_root, seccomp, Landlock, cgroups */
    AL_ISOLATION_GVISOR,   /* a Linux program inside gVisor (runsc), through an OCI bundle */
} al_isolation;

typedef struct al_dir_grant {
    const char *host_path;  /* canonicalised when granted; the result reports it */
    const char *guest_path; /* absolute path inside the sandbox */
    bool read_only;
} al_dir_grant;

/* ---- network egress (native and gvisor) ---------------------------------------
 * No network unless allow_domains or allow_ips grant something. Then the
 * sandbox (still a network namespace with loopback only) reaches airlock's
 * egress proxy at 127.0.0.1:3128 (HTTP_PROXY, HTTPS_PROXY, http_proxy,
 * https_proxy point there) and nothing else: plain HTTP in absolute form and
 * CONNECT tunnels to allowed names and ports, each name resolved once by the
 * proxy, every address checked against the deny-list (loopback, private,
 * link-local, metadata, multicast, the host's own) and then connected to
 * exactly. CONNECT tunnels are opaque: headers are injected into plain HTTP
 * only. */
typedef struct al_header_grant {
    const char *domain;     /* a name (or "*.x.y") the header is added for */
    const char *name;       /* e.g. "Authorization"; replaces any the guest sent */
    const char *value;      /* never enters the sandbox */
} al_header_grant;

typedef struct al_host_entry {
    const char *name;       /* answered from here instead of DNS (tests, pinning) */
    const char *address;    /* a literal IPv4 or IPv6 address */
} al_host_entry;

typedef struct al_egress {
    const char *const *allow_domains;  /* "example.com", "*.example.com" */
    size_t nallow_domains;
    const char *const *deny_domains;   /* deny wins over allow */
    size_t ndeny_domains;
    const uint16_t *allow_ports;       /* none: 80 and 443; else these too */
    size_t nallow_ports;
    const char *const *allow_ips;      /* CIDRs a destination may be in although the
                                          deny-list (or being a literal IP) refuses it */
    size_t nallow_ips;
    const al_header_grant *headers;
    size_t nheaders;
    const al_host_entry *hosts;
    size_t nhosts;
    uint32_t max_connections;          /* open at once (default 16) */
    uint64_t max_bytes_per_connection; /* both directions (default 64 MiB; 0: none) */
    uint64_t max_bytes;                /* per execution, both directions (default 256 MiB; 0: none) */
    uint32_t idle_timeout_ms;          /* a connection silent this long is closed (default 30000) */
    const char *log_path;              /* every decision as a JSON line, appended; NULL: none */
} al_egress;

typedef struct al_policy {
    al_isolation isolation;
    const char *const *argv;      /* argv[0] is the program name shown to the guest */
    size_t argc;
    const char *const *env;       /* "KEY=VALUE"; the host environment is never inherited */
    size_t nenv;
    const al_dir_grant *dirs;
    size_t ndirs;
    const uint8_t *stdin_data;    /* NULL: empty stdin */
    size_t stdin_len;
    uint64_t fuel;                /* instruction budget; 0 = unmetered */
    uint64_t timeout_ms;          /* wall clock; 0 = none */
    uint64_t max_memory_bytes;    /* per linear memory (default 256 MiB) */
    bool trap_on_memory_limit;    /* memory.grow past the limit traps instead of returning -1 */
    uint32_t max_table_elements;  /* default 10000 */
    uint32_t max_tables, max_memories, max_instances;
    size_t max_module_bytes;      /* default 50 MiB */
    size_t stdout_cap, stderr_cap;/* default 1 MiB each; output past it is dropped */
    /* native and gvisor only (a Linux program; argv[0] is its path inside the
     * sandbox, looked up in PATH when it has no '/'). max_memory_bytes is the
     * memory limit of the whole process tree. 0 means "no limit" for each. */
    uint64_t cpu_time_ms;         /* CPU time of the whole tree (default 0: none) */
    uint32_t max_processes;       /* processes + threads at once (default 64) */
    uint32_t max_open_files;      /* per process (default 256) */
    uint64_t max_file_size;       /* largest file a process may write (default 64 MiB) */
    uint64_t tmpfs_bytes;         /* size of the private /tmp (default 64 MiB) */
    const char *cwd;              /* guest working directory; NULL: the first granted
                                     directory, else "/tmp" */
    const char *state_dir;        /* where gvisor bundles, runsc state and locks live;
                                     NULL: $AIRLOCK_STATE_DIR, else /run/airlock as root,
                                     else $XDG_RUNTIME_DIR/airlock or /tmp/airlock-UID */
    const char *gvisor_platform;  /* NULL: the best that works (see al_probe_host) */
    al_egress egress;             /* native and gvisor; granting any to wasm is an error */
    /* Output as it is produced (every backend): called on the executing
     * thread (wasm) or airlock's event loop thread (native, gvisor) with
     * stream 1 (stdout) or 2 (stderr), before the bytes are appended to the
     * result. Only bytes within the caps are passed. NULL: none. */
    void (*on_output)(void *ctx, int stream, const uint8_t *data, size_t len);
    void *on_output_ctx;
    /* Cancellation from another thread: when *cancel becomes non-zero (the
     * embedder stores it with __atomic_store_n), the run is stopped within
     * about 100 ms, its sandbox torn down, and the result is
     * AL_STATUS_CANCELLED with cancel_reason in error.message. Read with
     * __atomic_load_n; must outlive the run. NULL: not cancellable. */
    const int *cancel;
    const char *cancel_reason;    /* NULL: "cancelled" */
} al_policy;

/* Fill with the defaults above (zero trust: nothing granted). */
void al_policy_init(al_policy *policy);

typedef enum al_status {
    AL_STATUS_OK = 0,            /* returned normally (or exit code 0) */
    AL_STATUS_EXIT,              /* exited with a non-zero code */
    AL_STATUS_TRAP,              /* trapped (see trap) */
    AL_STATUS_FUEL_EXHAUSTED,
    AL_STATUS_TIMEOUT,
    AL_STATUS_MEMORY_LIMIT,      /* refused at instantiation or trapped growing memory */
    AL_STATUS_OUTPUT_TRUNCATED,  /* otherwise OK, but output was dropped at a cap */
    AL_STATUS_INVALID_MODULE,    /* malformed, invalid, too large or not wasm */
    AL_STATUS_ERROR,             /* anything else: bad policy, link error, host failure */
    AL_STATUS_SIGNALED,          /* native/gvisor: ended by a signal (term_signal) */
    AL_STATUS_CPU_LIMIT,         /* native/gvisor: cpu_time_ms used up */
    AL_STATUS_UNSUPPORTED,       /* the host cannot provide this backend (see al_probe_host) */
    AL_STATUS_CANCELLED,         /* policy->cancel was raised; error.message has the reason */
} al_status;

/* Limits that took effect during a run (al_result.limits_hit), whether or not
 * they ended it: a fork refused at max_processes sets AL_LIMIT_PROCESSES even
 * if the program then exits normally — where the refusal can be seen from
 * outside (the native backend with a cgroup pids controller; inside gVisor,
 * or with the RLIMIT_NPROC fallback, forks are refused but not reported). */
enum {
    AL_LIMIT_WALL = 1u << 0,
    AL_LIMIT_CPU = 1u << 1,
    AL_LIMIT_MEMORY = 1u << 2,
    AL_LIMIT_PROCESSES = 1u << 3,
    AL_LIMIT_FILE_SIZE = 1u << 4,
    AL_LIMIT_OUTPUT = 1u << 5,
    AL_LIMIT_FUEL = 1u << 6,
};

const char *al_status_name(al_status status); /* "ok", "exit", "trap", ... */

typedef struct al_result {
    al_status status;
    int exit_code;                /* the guest's exit code (0 when it returned normally) */
    al_trap_kind trap;            /* when status is TRAP (or the trap behind another status) */
    uint64_t fuel_used;
    uint64_t wall_ns;
    uint64_t peak_memory_bytes;   /* linear memory size at the end (memories only grow) */
    uint8_t *stdout_data;         /* owned by the result; NUL-terminated for convenience */
    size_t stdout_len;
    bool stdout_truncated;
    uint8_t *stderr_data;
    size_t stderr_len;
    bool stderr_truncated;
    al_error error;               /* details: trap location/backtrace, decode error, ... */
    /* native/gvisor (zero for wasm, but limits_hit and backend) */
    int term_signal;              /* the signal that ended the program, 0 if none */
    uint64_t cpu_ns;              /* user + system CPU time of the whole tree */
    uint64_t denied_syscalls;     /* calls the seccomp filter refused with EPERM */
    uint32_t limits_hit;          /* AL_LIMIT_* */
    char backend[48];             /* "wasm", "native", "gvisor (ptrace)", ... */
    char execution_id[64];        /* native/gvisor: "al-<pid>-<start>-<n>", as in the
                                     egress log, cgroup and bundle names; "" for wasm */
    /* egress (zero when the policy granted no network) */
    uint32_t egress_allowed;      /* connections the proxy let through */
    uint32_t egress_denied;       /* requests it refused (each answered 403 or closed) */
    uint64_t egress_bytes;        /* bytes relayed, both directions */
} al_result;

/* Run a WASI command module (its _start) under the policy. Returns false only
 * when no result could be produced at all (result->error says why); every
 * guest outcome, including traps and timeouts, is a true return. */
bool al_run_wasm(const al_policy *policy, const uint8_t *module, size_t len, al_result *result);
void al_result_free(al_result *result);

/* Run policy->argv under policy->isolation: NATIVE and GVISOR start the
 * program argv[0] inside the sandbox; WASM reads argv[0] as a module file on
 * the host and runs it like al_run_wasm. A backend this host cannot provide
 * is refused (AL_STATUS_UNSUPPORTED, error.message says why), never run
 * weaker. Returns false only when no result could be produced. */
bool al_exec(const al_policy *policy, al_result *result);

/* ---- sessions: one sandbox kept warm across executions ---------------------- *
 * For GVISOR the sandbox boots once (runsc create + start) and each
 * al_session_exec is a `runsc exec` inside it: state in the sandbox (/tmp,
 * the workspace, background processes) persists until al_session_close.
 * NATIVE and WASM sessions run each execution in a fresh sandbox over the same
 * granted directories. */
typedef struct al_session al_session;

/* The policy (and everything it points to) is copied. NULL on failure. */
al_session *al_session_open(const al_policy *policy, al_error *error);
/* Run one program in the session. From `request` only argv, env, stdin,
 * timeout_ms, cpu_time_ms, stdout_cap, stderr_cap, cwd, on_output and
 * cancel/cancel_reason are used (a GVISOR session's cancelled execution has
 * its process group killed; the sandbox lives on); the sandbox itself
 * (directories, memory, processes) is the session's. */
bool al_session_exec(al_session *session, const al_policy *request, al_result *result);
void al_session_close(al_session *session);

/* ---- Python: CPython compiled to wasm32-wasi (tools/build-python.sh) ---------
 * python.wasm is decoded and validated once per al_python and shared by every
 * run (thread-safe); the standard library is granted read-only at
 * /usr/local/lib/python3.11 and PYTHONHOME=/usr/local is set unless the
 * policy's env sets it. The policy's isolation must be WASM. */
typedef struct al_python al_python;
/* python_dir holds python.wasm and lib/python3.11; NULL: $AIRLOCK_PYTHON_DIR,
 * else ../python beside the running executable. */
al_python *al_python_open(const char *python_dir, al_error *error);
/* After every run and session that uses py has ended. */
void al_python_close(al_python *py);
/* The canonical host path of the standard library granted to the guest. */
const char *al_python_stdlib_dir(const al_python *py);
/* Run code as `python -c CODE` (argv after it: policy->argv[1..]); code
 * NULL: `python ARGS...` with policy->argv[1..] as python's own arguments
 * (e.g. a script in a directory the policy grants). */
bool al_python_run(al_python *py, const al_policy *policy, const char *code, al_result *result);

/* One interpreter kept alive across executions: variables, imports and
 * files in the directories the policy grants persist (`x = 41`, then
 * `print(x + 1)` prints 42). Each execution gets policy's fuel and its own
 * timeout (0: policy->timeout_ms); its stdout/stderr are that execution's
 * only. A timeout, a trap, fuel running out or sys.exit ends the
 * interpreter: the result says so and the next execution starts a fresh
 * one (result->error.message notes "interpreter restarted"). An exception
 * is status EXIT, exit_code 1, traceback on stderr; the session goes on.
 * Not thread-safe: one execution at a time per session (a concurrent one
 * is refused); close may be called while one runs on another thread (it
 * returns ERROR). The open policy's cancel flag (which must then outlive
 * the session) applies to every execution: raised while a cell runs, it
 * ends the interpreter like a timeout, status CANCELLED; raised before,
 * the cell is not run (status CANCELLED, the interpreter lives on). See
 * docs/api.md, "Python". */
typedef struct al_python_session al_python_session;
al_python_session *al_python_session_open(al_python *py, const al_policy *policy,
                                          al_error *error);
bool al_python_session_exec(al_python_session *s, const char *code, uint64_t timeout_ms,
                            al_result *result);
void al_python_session_close(al_python_session *s);

/* ---- plugins: the host side of the Extism plugin ABI -------------------------
 * A plugin is a wasm module that imports "extism:host/env" (and, optionally,
 * wasi_snapshot_preview1: the same capability host as al_run_wasm, with only
 * the directories the options grant). Every export that takes no parameters
 * and returns i32 is a callable function: input bytes in, output bytes out,
 * 0 = success; an error the plugin sets wins over its return code. Memory
 * handles are u64 offsets into a host-owned buffer (0 is null); the guest
 * never sees a host pointer. One al_plugin is one instance: vars persist
 * across calls; calls on one plugin must not overlap (not thread-safe). */
typedef struct al_kv {
    const char *key;
    const char *value;
} al_kv;

enum { AL_LOG_TRACE = 0, AL_LOG_DEBUG, AL_LOG_INFO, AL_LOG_WARN, AL_LOG_ERROR };

typedef struct al_plugin_options {
    const al_kv *config;              /* config_get; copied */
    size_t nconfig;
    /* HTTP (http_request): refused unless allow_http; then only to these
     * names ("example.com", "*.example.com"), through the egress policy code:
     * every resolved address is checked against the deny-list (loopback,
     * private, metadata, ...) unless allow_ips grants it. */
    bool allow_http;
    const char *const *allowed_hosts;
    size_t nallowed_hosts;
    const char *const *allow_ips;     /* CIDRs, as al_egress.allow_ips */
    size_t nallow_ips;
    const al_host_entry *hosts;       /* static name -> address map (tests, pinning) */
    size_t nhosts;
    const al_dir_grant *dirs;         /* WASI preopens (allowed_paths) */
    size_t ndirs;
    uint32_t max_pages;               /* linear memory, 64 KiB pages (default 1024 = 64 MiB) */
    uint64_t max_http_response_bytes; /* default 50 MiB */
    uint64_t max_var_bytes;           /* all vars together (default 1 MiB; 0: vars disabled,
                                         as in Extism) */
    uint64_t max_output_bytes;        /* MAX_ALLOCATION_BYTES: output, error and any one
                                         allocation (default 10 MiB) */
    uint64_t timeout_ms;              /* per call; 0 = none */
    uint64_t fuel;                    /* per call; 0 = unmetered */
    int log_level;                    /* least AL_LOG_* delivered (default AL_LOG_INFO) */
    /* log_* from the plugin (and a WASI plugin's stdout at INFO, stderr at
     * ERROR), at or above log_level; msg is a NUL-terminated copy of len
     * bytes. NULL: dropped. */
    void (*on_log)(void *ctx, int level, const char *msg, size_t len);
    void *on_log_ctx;
    const int *cancel;                /* as al_policy.cancel */
} al_plugin_options;

/* Defaults above; nothing granted (no HTTP, no paths, no config). */
void al_plugin_options_init(al_plugin_options *options);

typedef struct al_plugin al_plugin;

/* Decode, validate, link and instantiate (running _initialize or
 * __wasm_call_ctors once). The bytes and options are copied. NULL with err
 * set on failure (malformed module, unknown import, limits). */
al_plugin *al_plugin_new(const uint8_t *wasm, size_t len, const al_plugin_options *options,
                         al_error *err);
void al_plugin_free(al_plugin *plugin);

/* The same in two steps, so that many instances share one decoded module
 * (a cache of plugins): compile once (thread-safe to share), instantiate
 * cheaply. A module is freed after every plugin made from it. */
typedef struct al_plugin_module al_plugin_module;
al_plugin_module *al_plugin_compile(const uint8_t *wasm, size_t len, al_error *err);
void al_plugin_module_free(al_plugin_module *module);
al_plugin *al_plugin_instantiate(const al_plugin_module *module,
                                 const al_plugin_options *options, al_error *err);
/* Does the plugin export a callable function (no params, i32 result) of this name? */
bool al_plugin_has_function(const al_plugin *plugin, const char *function);

/* Call one function. result->stdout_data holds the output bytes, and
 * result->status says how it ended:
 *   OK                 returned 0 and set no error;
 *   EXIT               returned non-zero or set an error: exit_code is the
 *                      return code, error.message (and stderr_data, whole)
 *                      the plugin's error text;
 *   TRAP, FUEL_EXHAUSTED, TIMEOUT, MEMORY_LIMIT, CANCELLED, OUTPUT_TRUNCATED
 *                      (output or error longer than max_output_bytes: nothing
 *                      of it is copied), ERROR (no such function, ...):
 *                      error.message starts "manifest conformance error: "
 *                      and gives the reason.
 * After a trap, timeout or exhaustion the instance is discarded and the next
 * call gets a fresh one (vars are kept: they live in the host). Returns
 * false only when no result could be produced at all. */
bool al_plugin_call(al_plugin *plugin, const char *function, const uint8_t *input,
                    size_t input_len, al_result *result);

/* An Extism manifest (JSON): {"wasm": [{"data"|"path"|"url", "hash", "name"}],
 * "memory": {"max_pages", "max_http_response_bytes", "max_var_bytes"},
 * "config": {}, "allowed_hosts": [], "allowed_paths": {"[ro:]HOST": "GUEST"},
 * "timeout_ms"}. Unknown fields are an error. Relative paths are resolved
 * against base_dir (NULL: the current directory). */
typedef struct al_manifest al_manifest;
al_manifest *al_manifest_parse(const char *json, size_t len, const char *base_dir,
                               al_error *err);
void al_manifest_free(al_manifest *manifest);
/* The manifest's settings as options (defaults where it is silent); the
 * arrays belong to the manifest. */
const al_plugin_options *al_manifest_options(const al_manifest *manifest);
/* Read the module the manifest names (data, path, or url fetched with a
 * size cap), refuse more than max_bytes (0: 50 MiB) and a SHA-256 mismatch
 * when a hash is given. *wasm is malloc'ed; the caller frees it. */
bool al_manifest_load_wasm(const al_manifest *manifest, size_t max_bytes, uint8_t **wasm,
                           size_t *len, al_error *err);

/* ---- capabilities: plugins in an OCI distribution registry -------------------
 * A capability is an OCI artifact: the plugin manifest (JSON) as its config
 * blob (media type application/vnd.airlock.capability.config.v1+json) and the
 * wasm module as its one layer (application/wasm). The URN
 * urn:airlock:cap:NAME:VERSION resolves to REGISTRY/NAME:VERSION, and
 * urn:airlock:cap:NAME@sha256:HEX to that manifest digest. */
typedef struct al_registry {
    const char *url;          /* "http://127.0.0.1:5000" (https: verified with ca_file) */
    const char *ca_file;      /* NULL: the system's */
    const char *auth_token;   /* sent as "Authorization: Bearer"; NULL: none */
    size_t max_blob_bytes;    /* default 10 MiB: a larger blob is aborted mid-stream */
    uint64_t timeout_ms;      /* per request (default 30000) */
    const char *cache_dir;    /* content-addressed cache of verified blobs; NULL: none */
} al_registry;

typedef struct al_capability {
    char name[128];
    char version[128];
    char digest[80];          /* "sha256:HEX" of the OCI manifest */
    char wasm_digest[80];     /* "sha256:HEX" of the module, verified */
    uint8_t *wasm;            /* owned */
    size_t wasm_len;
    char *manifest_json;      /* the plugin manifest (config blob), NUL-terminated, owned */
    size_t manifest_len;
    uint64_t bytes_read;      /* bytes received for the module (<= max_blob_bytes + one buffer) */
    bool from_cache;
} al_capability;

/* Resolve and fetch: stream the blobs (aborting past max_blob_bytes), verify
 * every SHA-256, keep the bytes in memory. */
bool al_cap_fetch(const al_registry *registry, const char *urn, al_capability *out,
                  al_error *err);
void al_capability_free(al_capability *cap);

/* Publication: a promotion event (name, version, digests, time) is stored
 * durably in a SQLite outbox before any push, then pushed; when the registry
 * cannot be reached it stays queued and al_publisher_retry pushes it later
 * (with backoff). The same digest published twice is one event. */
typedef struct al_publisher al_publisher;
/* db_path's directory is created (0700) when missing. */
al_publisher *al_publisher_open(const char *db_path, const al_registry *registry,
                                al_error *err);
void al_publisher_close(al_publisher *publisher);

typedef struct al_publish_request {
    const char *name;             /* [a-z0-9]+([._-][a-z0-9]+)*(/...)* */
    const char *version;          /* a tag: [A-Za-z0-9_][A-Za-z0-9._-]{0,127} */
    const uint8_t *wasm;          /* a module, or NULL for a composite capability */
    size_t wasm_len;
    const char *manifest_json;    /* plugin manifest to store as config; NULL: "{}" */
    const char *dag_json;         /* composite: the DAG of component URNs; else NULL */
} al_publish_request;

typedef struct al_publish_receipt {
    char urn[320];                /* urn:airlock:cap:NAME:VERSION */
    char digest[80];              /* sha256 of the module (or of the DAG description) */
    char manifest_digest[80];     /* the OCI manifest's, once pushed */
    int64_t event_id;
    bool pushed;                  /* false: queued, will be retried */
    bool duplicate;               /* this digest was already published under this name:version */
    char last_error[256];
} al_publish_receipt;

bool al_publish(al_publisher *publisher, const al_publish_request *request,
                al_publish_receipt *receipt, al_error *err);
/* Push every queued event that is due (backoff doubles from 1 s to 5 min);
 * with force, ignore the backoff. Counts what was pushed and what is still queued. */
bool al_publisher_retry(al_publisher *publisher, bool force, unsigned *pushed,
                        unsigned *pending, al_error *err);

/* ---- the host: what works here ----------------------------------------------- */
typedef struct al_host_report {
    bool user_namespaces;          /* an unprivileged-uid user namespace can be made */
    bool pid_mount_net_namespaces; /* pid, mount, network, ipc, uts, cgroup inside it */
    bool pivot_root;               /* pivot_root into a tmpfs worked in that namespace */
    bool seccomp;                  /* seccomp-bpf filters load */
    bool seccomp_notify;           /* user notification: denied calls can be counted */
    int landlock_abi;              /* 0: Landlock unavailable */
    bool cgroup_v1_writable;       /* a child cgroup can be made in the v1 memory+pids hierarchies */
    bool cgroup_v2_writable;       /* ... in the v2 hierarchy, with memory and pids enabled */
    char cgroup_v1_controllers[96];/* writable v1 controllers, space-separated */
    char cgroup_v2_controllers[96];/* controllers enabled for a v2 child */
    bool runsc;                    /* runsc found and runnable */
    char runsc_path[128];
    char runsc_version[64];
    char gvisor_platforms[64];     /* platforms that ran a program, space-separated */
    char gvisor_platform[16];      /* the one airlock uses */
    bool native_available;
    bool gvisor_available;
    char native_reason[160];       /* why not, when unavailable */
    char gvisor_reason[160];
} al_host_report;

/* Probe every mechanism by trying it (in a child process; nothing on the host
 * changes). probe_gvisor_platforms: also run a program under each gVisor
 * platform (seconds; a hanging platform is given up on after a few seconds)
 * and remember the working ones in the state directory for al_exec. */
void al_probe_host(al_host_report *report, const char *state_dir, bool probe_gvisor_platforms);

/* Remove what executions left behind after their airlock process died
 * (SIGKILL, crash): gVisor containers and bundles, cgroups. Entries of a live
 * airlock are kept. Counts what was removed. */
typedef struct al_gc_report {
    unsigned containers, bundles, cgroups;
} al_gc_report;
bool al_gc(const char *state_dir, al_gc_report *report, al_error *error);

#ifdef __cplusplus
}
#endif
#endif
