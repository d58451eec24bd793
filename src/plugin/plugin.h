/*
 * plugin.h — the plugin layer's internals: the host side of the Extism
 * plugin ABI behind airlock.h's "plugins" section.
 *
 * Which file holds which concern:
 *   kernel.c    the host-owned memory the guest addresses by u64 handles
 *               (0 is null): one growable buffer plus a block table;
 *               alloc/free/length, the input, output and error slots,
 *               reset, the per-call and per-allocation budgets.
 *   vars.c      vars: a host-side key -> bytes map with the max_var_bytes
 *               budget; it lives in the al_plugin, so it outlives calls and
 *               instance restarts.
 *   host_env.c  the "extism:host/env" functions (signatures as in Extism's
 *               runtime and PDKs) and the table the linker looks names up in.
 *   http.c      http_request: the request JSON, the allow-list and egress
 *               policy (src/net), the libcurl transfer pinned to the checked
 *               address, the response caps, the headers for http_headers.
 *   plugin.c    the public API: options, compile/instantiate/free, the
 *               per-plugin watchdog (timeout, cancel), the call and how every
 *               outcome becomes an al_result status.
 *   manifest.c  Extism manifests (JSON) -> al_plugin_options and the wasm
 *               source (data, path, or url with a size cap; SHA-256 checked);
 *               it uses only airlock.h and the egress rules of src/net.
 *
 * Trust: everything the guest passes (handles, offsets, lengths, JSON) is
 * hostile. Every guest value is checked against the kernel's bounds with
 * overflow-safe comparisons before host memory is indexed with it; a bad
 * value traps the plugin (AL_TRAP_HOST with plugin->trap_msg), never the host.
 *
 * Threading: one al_plugin runs one call at a time (airlock.h). The only
 * other thread that touches a plugin is its watchdog, and it touches only
 * the watchdog struct (under its lock) and the store's interrupt flag.
 */
#ifndef AIRLOCK_PLUGIN_H
#define AIRLOCK_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"
#include "net.h"
#include "wasi.h"

#define PLUGIN_CONFORMANCE "manifest conformance error: "
#define PLUGIN_ENV_MODULE "extism:host/env"
#define PLUGIN_WASI_MODULE "wasi_snapshot_preview1"

#define PLUGIN_DEFAULT_MAX_PAGES 1024u
#define PLUGIN_DEFAULT_MAX_HTTP_RESPONSE (UINT64_C(50) << 20)
#define PLUGIN_DEFAULT_MAX_VAR_BYTES (UINT64_C(1) << 20)
#define PLUGIN_DEFAULT_MAX_OUTPUT (UINT64_C(10) << 20)
#define PLUGIN_PAGE_SIZE 65536u
#define PLUGIN_MAX_PAGES 65536u

/* ---- kernel.c --------------------------------------------------------------------
 * Address space: [0, KERNEL_BASE) is never valid (0 is null), blocks are laid
 * out upwards from KERNEL_BASE, 8-byte aligned, and [KERNEL_BASE, top) is what
 * load/store may touch. A handle is the offset of a block's first byte. */
#define KERNEL_BASE 8u
#define KERNEL_BLOCK_OVERHEAD 32u /* charged per block: the table entry's size */

typedef struct kernel_block {
    uint64_t off;  /* handle */
    uint64_t cap;  /* bytes reserved at off */
    uint64_t len;  /* bytes in use (what length returns) */
    bool active;
} kernel_block;

typedef struct plugin_kernel {
    uint8_t *mem;            /* [0, cap) owned; realloc'd, so only offsets are kept */
    uint64_t cap;
    uint64_t top;            /* end of the highest block; KERNEL_BASE when empty */
    uint64_t limit;          /* bytes (with overhead) allocations may take per call */
    uint64_t charged;        /* bytes charged against limit since the last reset */
    uint64_t max_alloc;      /* the largest single allocation the guest may ask for */
    kernel_block *blocks;    /* sorted by off (allocation only appends at top) */
    size_t nblocks, blocks_cap;
    size_t *free_list;       /* indexes of inactive blocks, most recent last */
    size_t nfree, free_cap;
    uint64_t input_off, input_len;
    uint64_t output_off, output_len;
    uint64_t error_off, error_len; /* error_off 0: no error */
} plugin_kernel;

void kernel_init(plugin_kernel *k, uint64_t limit, uint64_t max_alloc);
void kernel_free(plugin_kernel *k);
/* Forget every block and the input/output/error slots (memory is kept for
 * the next call unless it grew large). */
void kernel_reset(plugin_kernel *k);
/* The guest's alloc: n bytes, zeroed; 0 when n is 0, over max_alloc or over
 * the per-call limit (Extism's failed allocation). */
uint64_t kernel_alloc_guest(plugin_kernel *k, uint64_t n);
/* A block the host fills with data[0..n) (n > 0), within the per-call limit
 * but not max_alloc (the host's own caps apply: max_http_response_bytes,
 * max_var_bytes). false when it does not fit. */
bool kernel_alloc_copy(plugin_kernel *k, const void *data, uint64_t n, uint64_t *handle);
/* Reset, then copy the call's input into one block (input is never charged
 * against the limit: its size is the embedder's decision). false: no memory. */
bool kernel_set_input(plugin_kernel *k, const uint8_t *data, size_t len);
/* Length of the active block at handle h; 0 when h is not one. */
uint64_t kernel_length(const plugin_kernel *k, uint64_t h);
/* Mark the block at h free (no effect when h is not an active block). */
void kernel_free_block(plugin_kernel *k, uint64_t h);
/* Bytes of the address space in use (top - KERNEL_BASE). */
uint64_t kernel_memory_bytes(const plugin_kernel *k);

/* Is [p, p + n) inside [KERNEL_BASE, top)? Overflow-safe for any p and n:
 * no sum is formed that could wrap (a guest passing p = 2^64 - 1 must not
 * pass the check by wrapping around to a small address). */
static inline bool kernel_in_range(const plugin_kernel *k, uint64_t p, uint64_t n) {
    return p >= KERNEL_BASE && p <= k->top && n <= k->top - p;
}

/* ---- vars.c ----------------------------------------------------------------------- */
#define VAR_OVERHEAD 48u /* charged per entry, as Extism charges its String + Vec */

typedef struct plugin_var {
    uint8_t *key;
    size_t key_len;
    uint8_t *value;
    size_t value_len;
} plugin_var;

typedef struct plugin_vars {
    plugin_var *v;
    size_t n, cap;
    uint64_t bytes;      /* sum of key + value + VAR_OVERHEAD over entries */
    uint64_t max_bytes;  /* 0: vars disabled (Extism's max_var_bytes: 0) */
} plugin_vars;

typedef enum vars_status {
    VARS_OK = 0,
    VARS_DISABLED,
    VARS_FULL,
    VARS_NOMEM,
} vars_status;

void vars_init(plugin_vars *vs, uint64_t max_bytes);
void vars_free(plugin_vars *vs);
const plugin_var *vars_get(const plugin_vars *vs, const uint8_t *key, size_t key_len);
/* Insert or replace; the budget is checked with the old value already gone. */
vars_status vars_set(plugin_vars *vs, const uint8_t *key, size_t key_len, const uint8_t *value,
                     size_t value_len);
void vars_remove(plugin_vars *vs, const uint8_t *key, size_t key_len);

/* ---- the plugin ------------------------------------------------------------------- */

/* One "extism:host/env" function (host_env.c). */
typedef struct plugin_host_def {
    const char *name;
    al_functype type;
    al_host_fn fn;
} plugin_host_def;

/* The definition named name (length len), or NULL: Extism has no such function
 * (or airlock does not provide it). */
const plugin_host_def *plugin_host_lookup(const char *name, size_t len);

/* A compiled module and what instantiating it needs, shared read-only by
 * every plugin made from it (refcounted: each plugin holds a reference). */
struct al_plugin_module {
    al_module *module;
    int refs;                        /* __atomic */
    uint32_t nenv;                   /* env imports, each with its definition */
    const char **env_names;          /* point into module (owned by the engine) */
    const plugin_host_def **env_defs;
    bool needs_wasi;
    /* Callable exports (no params, one i32 result), learned from the first
     * instance (the engine gives types only for instances). */
    pthread_mutex_t lock;
    bool exports_known;
    char **callable;
    size_t ncallable;
};

/* The options, deep-copied so the caller may free theirs. */
typedef struct plugin_settings {
    al_kv *config;
    size_t nconfig;
    bool allow_http;
    bool allow_any_host;             /* allowed_hosts held "*" (Extism: any host) */
    char **allowed_hosts;
    size_t nallowed_hosts;
    char **allow_ips;
    size_t nallow_ips;
    al_host_entry *hosts;
    size_t nhosts;
    wasi_preopen_config *dirs;
    size_t ndirs;
    uint32_t max_pages;
    uint64_t max_http_response_bytes;
    uint64_t max_var_bytes;
    uint64_t max_output_bytes;
    uint64_t timeout_ms;
    uint64_t fuel;
    int log_level;
    void (*on_log)(void *ctx, int level, const char *msg, size_t len);
    void *on_log_ctx;
    const int *cancel;
} plugin_settings;

/* What the watchdog saw fire during the armed span. */
enum { WATCHDOG_NONE = 0, WATCHDOG_TIMEOUT, WATCHDOG_CANCEL };

/* A per-plugin thread, started the first time a call has a deadline or a
 * cancel flag: it sleeps on a condvar until the current call's deadline
 * (or 50 ms while a cancel flag is watched) and interrupts the store. No
 * thread is made per call. */
typedef struct plugin_watchdog {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, quit;
    bool idle;                       /* waiting with no timeout (nothing armed) */
    uint64_t planned_ns;             /* when a timed wait ends (0: none) */
    al_store *watched;               /* armed and not yet fired; NULL otherwise */
    al_store *armed;                 /* armed (fired or not); cleared by disarm */
    uint64_t deadline_ns;            /* CLOCK_MONOTONIC; 0 = none */
    const int *cancel;
    int fired;
} plugin_watchdog;

/* One instance: its store owns every engine object of it. */
typedef struct plugin_instance {
    al_store *store;
    al_imports *imports;
    wasi_ctx *wasi;
    al_instance *instance;
    al_memory *memory;               /* the "memory" export, or NULL */
    char *last_name;                 /* one-entry cache of the function looked up last */
    al_func *last_func;
} plugin_instance;

struct al_plugin {
    al_plugin_module *module;        /* one reference */
    plugin_settings set;
    plugin_kernel kernel;
    plugin_vars vars;
    plugin_instance inst;
    bool live;                       /* inst holds a working instance */
    plugin_watchdog dog;
    uint64_t deadline_ns;            /* of the current call (0: none) */
    char trap_msg[224];              /* why a host function trapped */
    /* http.c state */
    egress_policy policy;
    bool policy_ready;               /* allow-list and allow_ips parsed */
    bool host_addrs_ready;           /* the host's own addresses collected */
    int32_t http_status;             /* of the last response (0: none yet) */
    char *http_headers;              /* JSON object of its headers, owned; NULL: none */
    size_t http_headers_len;
};

/* Replace control bytes (terminal escapes, CR/LF) with '?': messages quote
 * plugin-controlled text and embedders print them. */
void plugin_scrub(char *s);
/* Record why a host function fails (scrubbed) and return AL_TRAP_HOST. */
al_trap_kind plugin_trap(al_plugin *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Deliver a log line at level (filtered by log_level; NULL on_log drops it). */
void plugin_log(al_plugin *p, int level, const uint8_t *msg, size_t len);
uint64_t plugin_now_ns(void);

/* ---- http.c ----------------------------------------------------------------------- */
/* Check the settings' allow-list, allow_ips and hosts map (at instantiate, so
 * a malformed pattern is an error before any call). */
bool plugin_http_validate(const plugin_settings *s, al_error *err);
/* Build p->policy (once per plugin). */
bool plugin_http_policy_init(al_plugin *p, al_error *err);
void plugin_http_free(al_plugin *p);
/* http_request(req, body) -> *response (0: empty body). A refused or failed
 * request traps with a message (Extism's behaviour: the host function
 * returns an error, which traps the guest). */
al_trap_kind plugin_http_request(al_plugin *p, uint64_t req, uint64_t body, uint64_t *response);

#endif
