/*
 * wasi.h — airlock's WASI preview1 host ("wasi_snapshot_preview1"), as the
 * wasm backend (src/sandbox/wasm_backend.c) sees it.
 *
 * The host is a set of host functions registered through airlock.h, exactly
 * as any embedder would do it: the engine knows nothing about WASI.
 * Capability model: a context starts with no preopens, no environment, no
 * arguments beyond argv[0], empty stdin; everything else is granted by the
 * config. Output goes to capped in-memory buffers.
 *
 * Streaming (optional; a zeroed config keeps the buffers): the host may see
 * output as it is written (on_output), keep none of it (output_unbuffered:
 * a consumer with its own caps, such as a Python session, per execution),
 * and feed stdin as it goes (stdin_read: fd 0 blocks until the host has
 * bytes). Both callbacks run on the thread running the guest.
 */
#ifndef AIRLOCK_WASI_H
#define AIRLOCK_WASI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

typedef struct wasi_ctx wasi_ctx;

typedef struct wasi_preopen_config {
    const char *host_path;  /* canonicalised by wasi_ctx_new (symlinks resolved, reported) */
    const char *guest_path; /* absolute guest path, e.g. "/work" */
    bool read_only;
} wasi_preopen_config;

typedef struct wasi_config {
    const char *const *argv; /* argv[0] is the program name */
    size_t argc;
    const char *const *env;  /* "KEY=VALUE" strings; nothing is inherited */
    size_t nenv;
    const wasi_preopen_config *preopens;
    size_t npreopens;
    const uint8_t *stdin_data; /* copied; empty when NULL */
    size_t stdin_len;
    size_t stdout_cap; /* bytes kept; more output is dropped and flagged */
    size_t stderr_cap;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC deadline for blocking calls; 0 = none */
    al_store *store;      /* its interrupt flag is honoured by blocking calls */
    /* Every chunk the guest writes to fd 1 (stream 1) or fd 2 (stream 2),
     * before it is kept: the part within the cap, or with output_unbuffered
     * all of it (nothing is then kept, the caps do not apply and
     * wasi_stdout/wasi_stderr return nothing). NULL: none. */
    void (*on_output)(void *arg, int stream, const uint8_t *data, size_t len);
    void *on_output_arg;
    bool output_unbuffered;
    /* fd 0 reads from the host instead of stdin_data: called with room for
     * len > 0 bytes, it blocks until it has some, copies them to dst and
     * returns how many; 0 is end of input. Once the store is interrupted it
     * must return promptly with *trap = AL_TRAP_INTERRUPTED (the run ends).
     * NULL: the stdin_data buffer. */
    size_t (*stdin_read)(void *arg, uint8_t *dst, size_t len, al_trap_kind *trap);
    void *stdin_arg;
} wasi_config;

/* NULL with err->message set when a preopen cannot be granted (missing,
 * not a directory, ...). */
wasi_ctx *wasi_ctx_new(const wasi_config *config, al_error *err);
void wasi_ctx_free(wasi_ctx *ctx);

/* Define every wasi_snapshot_preview1 function in imports (host functions
 * created in store). */
bool wasi_define_imports(wasi_ctx *ctx, al_store *store, al_imports *imports, al_error *err);
/* The same, but only the functions module imports (NULL: all of them). */
bool wasi_define_imports_for(wasi_ctx *ctx, al_store *store, al_imports *imports,
                             const al_module *module, al_error *err);

/* After the run. */
bool wasi_exited(const wasi_ctx *ctx, int *exit_code);   /* proc_exit was called */
const uint8_t *wasi_stdout(const wasi_ctx *ctx, size_t *len, bool *truncated);
const uint8_t *wasi_stderr(const wasi_ctx *ctx, size_t *len, bool *truncated);
/* Canonical host path of preopen i (after symlink resolution). */
const char *wasi_preopen_host_path(const wasi_ctx *ctx, size_t i);

#endif
