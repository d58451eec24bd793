/*
 * fuzz_module.c — libFuzzer target for the whole engine pipeline.
 *
 * Each input is treated as a module binary: al_module_new (decode, validate,
 * translate); if that succeeds, al_instantiate with no imports in a store with
 * small limits; if that succeeds too, every exported function is called with
 * all-zero arguments, and those with parameters once more with arguments
 * derived from a hash of the input (deterministic, as libFuzzer requires).
 * Calling functions with parameters too reaches far more of the interpreter:
 * most spec-suite exports take arguments. Everything is freed, so LeakSanitizer checks the
 * engine's ownership rules on every path, including traps.
 *
 * Bounding run time: guest code may loop forever (in a start function or an
 * export). Every store gets a fuel budget (deterministic: the same input
 * always stops at the same instruction); as a second line, a watchdog thread calls
 * al_store_interrupt() when the current instantiation or call has run for
 * WATCHDOG_MS; the engine checks the flag at loop headers and calls, so the
 * guest traps with AL_TRAP_INTERRUPTED. arm()/disarm() hand the store to the
 * watchdog under a mutex, so the watchdog never touches a freed store.
 *
 * Bounding memory: the store allows at most 16 MiB per memory, 1000 frames,
 * 64 Ki value-stack slots and 10000 table elements, so a module asking for
 * more fails to instantiate (AL_ERR_LIMIT) instead of exhausting the fuzzer.
 *
 * The engine must never crash, leak, or hit a sanitizer report; any error it
 * returns as a value is fine. Two consistency checks are asserted:
 * a failed call sets err.kind != AL_OK, and a trap names a trap kind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"

#define WATCHDOG_MS 50
#define MAX_CALLS 32 /* calls per input, to bound the time one input takes */

/* ---- watchdog ------------------------------------------------------------- */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond = PTHREAD_COND_INITIALIZER;
static al_store *wd_store;          /* store being watched, or NULL */
static uint64_t wd_generation;      /* bumped on every arm */
static struct timespec wd_deadline;

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_lock);
    for (;;) {
        while (wd_store == NULL)
            pthread_cond_wait(&wd_cond, &wd_lock);
        uint64_t gen = wd_generation;
        struct timespec deadline = wd_deadline;
        int rc = 0;
        while (wd_store != NULL && wd_generation == gen && rc == 0)
            rc = pthread_cond_timedwait(&wd_cond, &wd_lock, &deadline);
        /* Still the same arming and the deadline passed: stop the guest. The
         * store cannot be freed meanwhile: disarm() needs the lock we hold. */
        if (wd_store != NULL && wd_generation == gen)
            al_store_interrupt(wd_store);
        /* wait for the next arm so one arming interrupts at most once */
        while (wd_store != NULL && wd_generation == gen)
            pthread_cond_wait(&wd_cond, &wd_lock);
    }
    return NULL;
}

static void arm(al_store *store)
{
    pthread_mutex_lock(&wd_lock);
    clock_gettime(CLOCK_REALTIME, &wd_deadline); /* pthread_cond_timedwait's clock */
    wd_deadline.tv_nsec += WATCHDOG_MS * 1000000L;
    if (wd_deadline.tv_nsec >= 1000000000L) {
        wd_deadline.tv_sec += 1;
        wd_deadline.tv_nsec -= 1000000000L;
    }
    wd_store = store;
    wd_generation++;
    pthread_cond_broadcast(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
}

static void disarm(al_store *store)
{
    pthread_mutex_lock(&wd_lock);
    wd_store = NULL;
    pthread_cond_broadcast(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
    /* the watchdog may have fired just as the guest finished */
    al_store_clear_interrupt(store);
}

static void start_watchdog(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "fuzz_module: cannot start the watchdog thread\n");
        abort();
    }
    pthread_detach(t);
}

static void start_watchdog_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, start_watchdog);
}

/* ---- checks ------------------------------------------------------------- */

static void check_error(const al_error *err, const char *what)
{
    if (err->kind == AL_OK) {
        fprintf(stderr, "fuzz_module: %s failed but err.kind == AL_OK\n", what);
        abort();
    }
    if (err->kind == AL_ERR_TRAP && err->trap == AL_TRAP_NONE) {
        fprintf(stderr, "fuzz_module: %s trapped without a trap kind\n", what);
        abort();
    }
    if (memchr(err->message, '\0', sizeof err->message) == NULL ||
        memchr(err->func_name, '\0', sizeof err->func_name) == NULL) {
        fprintf(stderr, "fuzz_module: %s left an unterminated error string\n", what);
        abort();
    }
    if (err->kind == AL_ERR_TRAP && al_trap_message(err->trap) == NULL) {
        fprintf(stderr, "fuzz_module: trap kind %d has no message\n", err->trap);
        abort();
    }
#ifdef AL_BACKTRACE_MAX
    if (err->backtrace_len > AL_BACKTRACE_MAX) {
        fprintf(stderr, "fuzz_module: %s: backtrace_len %u > %d\n", what, err->backtrace_len,
                AL_BACKTRACE_MAX);
        abort();
    }
    for (uint32_t i = 0; i < err->backtrace_len; i++)
        if (memchr(err->backtrace[i].func_name, '\0', sizeof err->backtrace[i].func_name) == NULL) {
            fprintf(stderr, "fuzz_module: %s: unterminated backtrace name\n", what);
            abort();
        }
#endif
}

/* ---- calls ------------------------------------------------------------------ */

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* Call fn with zero arguments (seed == NULL) or pseudo-random ones, under the
 * watchdog, and check what comes back. */
static void call_export(al_store *store, al_func *fn, const al_functype *type, uint64_t *seed)
{
    al_value *args = calloc(type->nparams + 1, sizeof *args);
    al_value *results = calloc(type->nresults + 1, sizeof *results);
    if (args == NULL || results == NULL)
        abort();
    for (uint32_t p = 0; p < type->nparams; p++) {
        args[p].type = (al_valtype)type->params[p];
        if (seed == NULL)
            continue; /* zero bits: 0, +0.0, null reference */
        uint64_t r = next_random(seed);
        switch (type->params[p]) {
        case AL_I32: args[p].of.i32 = (int32_t)(r & 0xff) - 16; break;  /* small, often negative */
        case AL_I64: args[p].of.i64 = (int64_t)r; break;
        case AL_F32: args[p].of.f32_bits = (uint32_t)r; break;          /* NaNs and infinities too */
        case AL_F64: args[p].of.f64_bits = r; break;
        case AL_EXTERNREF: args[p].of.externref = (uintptr_t)(r & 0xffff); break;
        default: break; /* funcref: no way to name a function here; stay null */
        }
    }
    al_error err;
    memset(&err, 0, sizeof err);
    arm(store);
    bool ok = al_call(store, fn, args, type->nparams, results, type->nresults, &err);
    disarm(store);
    if (!ok) {
        check_error(&err, "al_call");
    } else {
        for (uint32_t r = 0; r < type->nresults; r++)
            if (results[r].type != (al_valtype)type->results[r]) {
                fprintf(stderr, "fuzz_module: result %u has type 0x%x, expected 0x%x\n", r,
                        results[r].type, type->results[r]);
                abort();
            }
    }
    free(args);
    free(results);
}

/* ---- the target ----------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    start_watchdog_once();

    al_error err;
    memset(&err, 0, sizeof err);
    al_module *module = al_module_new(data, size, &err);
    if (module == NULL) {
        check_error(&err, "al_module_new");
        return 0;
    }

    /* exercise introspection on every valid module */
    uint32_t nimports = al_module_import_count(module);
    for (uint32_t i = 0; i < nimports; i++) {
        const char *mod = NULL, *name = NULL;
        al_extern_kind kind;
        if (!al_module_import(module, i, &mod, &name, &kind) || mod == NULL || name == NULL)
            abort();
    }
    uint32_t nexports = al_module_export_count(module);
    for (uint32_t i = 0; i < nexports; i++) {
        const char *name = NULL;
        al_extern_kind kind;
        if (!al_module_export(module, i, &name, &kind) || name == NULL)
            abort();
    }

    al_limits limits = al_limits_default();
    limits.max_call_depth = 1000;
    limits.max_value_stack = 1u << 16;
    limits.max_memory_bytes = 16u << 20;
    limits.max_table_elements = 10000;
    al_store *store = al_store_new(&limits);
    if (store) al_store_set_fuel(store, 2000000);
    if (store == NULL) {
        al_module_free(module);
        return 0;
    }
    al_imports *imports = al_imports_new();

    arm(store);
    memset(&err, 0, sizeof err);
    al_instance *inst = al_instantiate(store, module, imports, &err);
    disarm(store);
    if (inst == NULL) {
        check_error(&err, "al_instantiate");
        if (nimports == 0 && err.kind == AL_ERR_LINK) {
            fprintf(stderr, "fuzz_module: link error on a module without imports: %s\n",
                    err.message);
            abort();
        }
    } else {
        uint32_t calls = 0;
        uint64_t seed = 0x9e3779b97f4a7c15ull ^ size;
        for (size_t i = 0; i < size; i++)
            seed = (seed ^ data[i]) * 0x100000001b3ull;
        for (uint32_t i = 0; i < nexports && calls < MAX_CALLS; i++) {
            const char *name = NULL;
            al_extern_kind kind;
            al_extern ext;
            if (!al_module_export(module, i, &name, &kind) || kind != AL_EXTERN_FUNC)
                continue;
            if (!al_instance_export(inst, name, &ext) || ext.kind != AL_EXTERN_FUNC) {
                /* names with NUL bytes need the _n variant; skip them */
                continue;
            }
            const al_functype *type = al_func_type(ext.of.func);
            if (type == NULL)
                abort();
            /* all-zero arguments first; a function with parameters is called
             * a second time with arguments derived from the input's hash */
            for (int round = 0; round < (type->nparams ? 2 : 1) && calls < MAX_CALLS; round++) {
                calls++;
                call_export(store, ext.of.func, type, round ? &seed : NULL);
            }
        }
    }

    al_imports_free(imports);
    al_store_free(store);
    al_module_free(module);
    return 0;
}
