/*
 * sandbox.h — internals shared by the files of src/sandbox/, the layer that
 * turns one al_policy into one al_result (airlock.h, "running code under a
 * policy").
 *
 *   policy.c        defaults, status names, policy validation, result helpers
 *   wasm_backend.c  al_run_wasm: the WebAssembly engine + the WASI host
 *
 * Backends validate the policy first (sandbox_policy_check) and report every
 * failure through the result (sandbox_set_status), never by printing.
 */
#ifndef AIRLOCK_SANDBOX_H
#define AIRLOCK_SANDBOX_H

#include <stdarg.h>

#include "airlock.h"

/* Largest values a policy may ask for. Beyond these a request is a mistake
 * (or an attack on the host), not a workload. */
#define SANDBOX_MAX_MODULE_BYTES ((size_t)1 << 30)   /* the engine refuses more anyway */
#define SANDBOX_MAX_OUTPUT_CAP ((size_t)1 << 30)     /* per stream; copied into the result */
#define SANDBOX_MAX_TIMEOUT_MS UINT64_C(1000000000000) /* ~31 years; keeps ns math in range */
#define SANDBOX_MAX_GUEST_PATH 4096

/* AL_STATUS_OK when the policy can be run; otherwise the status to report
 * (AL_STATUS_ERROR) with err->message saying which field is wrong. */
al_status sandbox_policy_check(const al_policy *policy, al_error *err);

/* Set result->status and replace result->error with (kind, message).
 * Keeps nothing of the previous error. */
void sandbox_set_status(al_result *result, al_status status, al_error_kind kind,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t sandbox_now_ns(void);

#endif
