/*
 * wasm_backend.c — al_run_wasm: run a WASI command module under a policy with
 * the WebAssembly engine and the WASI preview1 host (src/wasi/); and
 * sandbox_run_wasm_module, the same run for a module compiled already
 * (python.c compiles python.wasm once and runs it many times).
 *
 * One run, in order:
 *   1. validate the policy; check the size and the "\0asm" magic before any
 *      parsing, so a huge or foreign file costs nothing;
 *   2. decode+validate the module (al_run_wasm only: sandbox_run_wasm_module
 *      is given it compiled); make a store whose al_limits come from the
 *      policy and whose fuel budget is the policy's (or a huge one, so
 *      fuel_used is always reported);
 *   3. make the WASI context (argv, env, preopens, stdin, output caps and
 *      on_output, the deadline) and define its imports;
 *   4. start the wall-clock timer, instantiate, call "_start", stop the timer
 *      (wall_ns and the timeout both count from just before step 3); the
 *      same timer thread watches al_policy.cancel (every 50 ms) and
 *      interrupts the store when it is raised: status CANCELLED;
 *   5. classify the outcome, copy the outputs into the result, free everything.
 * Steps 2 (the store) to 5 are run_compiled, shared by both entry points.
 *
 * Invariants:
 *  - every object made for the run is owned by the run_ctx and released by
 *    run_release on every path; the result owns only its two output copies;
 *  - a module given compiled is only read (the engine's instances never
 *    write to their module, and hold a reference on it), so one module may
 *    run in many stores on many threads at once;
 *  - the timer thread is joined before al_run_wasm returns, and once
 *    timer_stop has taken the lock it can no longer interrupt the store: a
 *    timeout or a cancellation never fires into a later run or a freed
 *    store; a cancel raised after the guest ended changes nothing;
 *  - al_run_wasm returns false only when result is NULL; every other outcome,
 *    including a bad policy, is a status in the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"
#include "wasi.h"

#define UNMETERED_FUEL SANDBOX_UNMETERED_FUEL

/* ---- wall-clock timer and cancellation ------------------------------------------- */

/* A thread that sleeps until the deadline (CLOCK_MONOTONIC) and then
 * interrupts the store, unless the run ended first. With a cancel flag it
 * also wakes every SANDBOX_CANCEL_POLL_MS to look at the flag, and a raised
 * flag interrupts the store the same way (then `cancelled` says why). */
typedef struct run_timer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t deadline_ns;   /* CLOCK_MONOTONIC; 0 = none */
    const int *cancel;      /* al_policy.cancel; NULL = none */
    al_store *store;
    bool done;      /* under lock: the run is over, never interrupt */
    bool running;   /* the thread exists and must be joined */
    bool cancelled; /* under lock: the interrupt was a cancellation */
} run_timer;

static struct timespec ns_to_timespec(uint64_t ns) {
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                             .tv_nsec = (long)(ns % 1000000000u)};
}

/* When the timer must look again: the deadline, or sooner the next poll of
 * the cancel flag. */
static uint64_t timer_next_ns(const run_timer *t) {
    uint64_t next = t->deadline_ns;
    if (t->cancel) {
        uint64_t poll = sandbox_now_ns() + (uint64_t)SANDBOX_CANCEL_POLL_MS * 1000000u;
        if (!next || poll < next) next = poll;
    }
    return next;
}

static void *timer_main(void *arg) {
    run_timer *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->done) {
        /* the interrupts happen under the lock: timer_stop cannot overtake them */
        if (sandbox_flag_raised(t->cancel)) {
            t->cancelled = true;
            al_store_interrupt(t->store);
            break;
        }
        if (t->deadline_ns && sandbox_now_ns() >= t->deadline_ns) {
            al_store_interrupt(t->store);
            break;
        }
        struct timespec until = ns_to_timespec(timer_next_ns(t));
        pthread_cond_timedwait(&t->wake, &t->lock, &until);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static bool timer_start(run_timer *t, al_store *store, uint64_t deadline_ns, const int *cancel) {
    memset(t, 0, sizeof *t);
    t->store = store;
    t->deadline_ns = deadline_ns;
    t->cancel = cancel;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&t->wake, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok) return false;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        pthread_cond_destroy(&t->wake);
        return false;
    }
    if (pthread_create(&t->thread, NULL, timer_main, t) != 0) {
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->wake);
        return false;
    }
    t->running = true;
    return true;
}

/* Joins the thread; afterwards t->cancelled may be read without the lock. */
static void timer_stop(run_timer *t) {
    if (!t->running) return;
    pthread_mutex_lock(&t->lock);
    t->done = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    t->running = false;
}

/* ---- the run ----------------------------------------------------------------------- */

/* Everything one run owns; run_release frees whatever was made. */
typedef struct run_ctx {
    const al_policy *policy;
    al_result *result;
    const al_module *module;
    al_module *owned_module;   /* al_run_wasm's own compile; NULL when borrowed */
    const sandbox_wasm_hooks *hooks; /* NULL: none */
    al_store *store;
    al_imports *imports;
    wasi_ctx *wasi;
    wasi_preopen_config *preopens;
    al_instance *instance; /* owned by the store */
    uint64_t fuel_budget;  /* what the store was given */
    uint64_t deadline_ns;  /* CLOCK_MONOTONIC; 0 = none */
} run_ctx;

/* The guest has stopped and the timer is joined, so nothing can call into
 * the WASI context or the store any more: the order below is free. */
static void run_release(run_ctx *rc) {
    al_imports_free(rc->imports);
    wasi_ctx_free(rc->wasi);
    al_store_free(rc->store); /* the instance, memories and host functions */
    al_module_free(rc->owned_module);
    free(rc->preopens);
}

/* Step 1b: size and magic, before the engine sees a byte. */
static bool check_module_bytes(run_ctx *rc, const uint8_t *bytes, size_t len) {
    static const uint8_t magic[4] = {0x00, 0x61, 0x73, 0x6d}; /* "\0asm" */
    if (len > rc->policy->max_module_bytes) {
        sandbox_set_status(rc->result, AL_STATUS_INVALID_MODULE, AL_ERR_LIMIT,
                           "module is too large (%zu bytes; the limit is %zu bytes)", len,
                           rc->policy->max_module_bytes);
        return false;
    }
    if (!bytes || len < sizeof magic || memcmp(bytes, magic, sizeof magic) != 0) {
        sandbox_set_status(rc->result, AL_STATUS_INVALID_MODULE, AL_ERR_MALFORMED,
                           "not a wasm module (no \\0asm magic at the start)");
        return false;
    }
    return true;
}

static bool load_module(run_ctx *rc, const uint8_t *bytes, size_t len) {
    al_error err;
    memset(&err, 0, sizeof err);
    rc->module = rc->owned_module = al_module_new(bytes, len, &err);
    if (rc->module) return true;
    rc->result->status = err.kind == AL_ERR_NOMEM ? AL_STATUS_ERROR : AL_STATUS_INVALID_MODULE;
    rc->result->error = err;
    return false;
}

static bool make_store(run_ctx *rc) {
    const al_policy *p = rc->policy;
    al_limits limits = al_limits_default();
    limits.max_memory_bytes = p->max_memory_bytes;
    limits.trap_on_memory_limit = p->trap_on_memory_limit;
    limits.max_table_elements = p->max_table_elements;
    limits.max_tables = p->max_tables;
    limits.max_memories = p->max_memories;
    limits.max_instances = p->max_instances;
    rc->store = al_store_new(&limits);
    rc->imports = al_imports_new();
    if (!rc->store || !rc->imports) {
        sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    rc->fuel_budget = p->fuel == 0 || p->fuel > UNMETERED_FUEL ? UNMETERED_FUEL : p->fuel;
    al_store_set_fuel(rc->store, rc->fuel_budget);
    return true;
}

static bool make_wasi(run_ctx *rc) {
    const al_policy *p = rc->policy;
    if (p->ndirs > 0) {
        rc->preopens = calloc(p->ndirs, sizeof *rc->preopens);
        if (!rc->preopens) {
            sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory");
            return false;
        }
    }
    for (size_t i = 0; i < p->ndirs; i++) {
        rc->preopens[i].host_path = p->dirs[i].host_path;
        rc->preopens[i].guest_path = p->dirs[i].guest_path;
        rc->preopens[i].read_only = p->dirs[i].read_only;
    }
    wasi_config cfg = {
        .argv = p->argv, .argc = p->argc, .env = p->env, .nenv = p->nenv,
        .preopens = rc->preopens, .npreopens = p->ndirs,
        .stdin_data = p->stdin_data, .stdin_len = p->stdin_len,
        .stdout_cap = p->stdout_cap, .stderr_cap = p->stderr_cap,
        .deadline_ns = rc->deadline_ns, .store = rc->store,
        .on_output = p->on_output, .on_output_arg = p->on_output_ctx,
    };
    const sandbox_wasm_hooks *h = rc->hooks;
    if (h && h->on_output) {
        cfg.on_output = h->on_output;
        cfg.on_output_arg = h->arg;
    }
    if (h && h->stdin_read) {
        cfg.stdin_read = h->stdin_read;
        cfg.stdin_arg = h->arg;
    }
    cfg.output_unbuffered = h && h->output_unbuffered;
    al_error err;
    memset(&err, 0, sizeof err);
    rc->wasi = wasi_ctx_new(&cfg, &err);
    if (rc->wasi && wasi_define_imports_for(rc->wasi, rc->store, rc->imports, rc->module, &err))
        return true;
    rc->result->status = AL_STATUS_ERROR;
    rc->result->error = err;
    if (err.kind == AL_OK) rc->result->error.kind = AL_ERR_ARGUMENT;
    return false;
}

/* Append " (...)" to an error message when it fits. */
static void append_note(al_error *err, const char *note) {
    size_t n = strnlen(err->message, sizeof err->message);
    if (n + strlen(note) < sizeof err->message) memcpy(err->message + n, note, strlen(note) + 1);
}

/* al_instantiate failed without a trap: a link error, a limit, no memory. */
static void classify_instantiate_error(run_ctx *rc, const al_error *err) {
    al_result *r = rc->result;
    r->error = *err;
    /* The engine words every memory limit refusal "memory ..."; tables and
     * object counts are other limits (see src/engine/instance.c). */
    if (err->kind == AL_ERR_LIMIT && strncmp(err->message, "memory", 6) == 0) {
        r->status = AL_STATUS_MEMORY_LIMIT;
        return;
    }
    r->status = AL_STATUS_ERROR;
    if (err->kind == AL_ERR_LINK)
        append_note(&r->error, " (airlock provides only wasi_snapshot_preview1)");
}

/* The guest ended with a trap (proc_exit included): turn it into a status.
 * Precedence: the run's own bounds (timeout, fuel) first, then the memory
 * limit, which explains any trap or failing exit that follows it. */
static void classify_trap(run_ctx *rc, const al_error *err) {
    al_result *r = rc->result;
    bool limit_hit = al_store_memory_limit_hit(rc->store);
    int code = 0;
    r->error = *err;
    r->trap = err->trap;
    if (err->trap == AL_TRAP_EXIT && wasi_exited(rc->wasi, &code)) {
        /* An exit is not a fault: where proc_exit was called says nothing. */
        memset(&r->error, 0, sizeof r->error);
        r->exit_code = code;
        if (code == 0) {
            r->status = AL_STATUS_OK;
            r->trap = AL_TRAP_NONE;
        } else if (limit_hit) {
            r->status = AL_STATUS_MEMORY_LIMIT;
            snprintf(r->error.message, sizeof r->error.message,
                     "memory.grow refused at the limit of %" PRIu64
                     " bytes, then the guest exited with code %d",
                     rc->policy->max_memory_bytes, code);
        } else {
            r->status = AL_STATUS_EXIT;
            snprintf(r->error.message, sizeof r->error.message, "exited with code %d", code);
        }
        if (code != 0) {
            r->error.kind = AL_ERR_TRAP;
            r->error.trap = AL_TRAP_EXIT;
        }
        return;
    }
    switch (err->trap) {
    case AL_TRAP_INTERRUPTED:
        r->status = AL_STATUS_TIMEOUT;
        snprintf(r->error.message, sizeof r->error.message, "timed out after %" PRIu64 " ms",
                 rc->policy->timeout_ms);
        return;
    case AL_TRAP_FUEL_EXHAUSTED:
        r->status = AL_STATUS_FUEL_EXHAUSTED;
        snprintf(r->error.message, sizeof r->error.message,
                 "fuel exhausted (budget %" PRIu64 " instructions)", rc->fuel_budget);
        return;
    case AL_TRAP_MEMORY_LIMIT:
        r->status = AL_STATUS_MEMORY_LIMIT;
        return;
    default:
        r->status = limit_hit ? AL_STATUS_MEMORY_LIMIT : AL_STATUS_TRAP;
        if (limit_hit)
            append_note(&r->error, " (after memory.grow was refused at the memory limit)");
        return;
    }
}

static void classify_failure(run_ctx *rc, const al_error *err) {
    if (err->kind == AL_ERR_TRAP) {
        classify_trap(rc, err);
    } else {
        rc->result->status = AL_STATUS_ERROR;
        rc->result->error = *err;
    }
}

/* Find _start and check it is a WASI command entry point: () -> (). */
static al_func *find_start(run_ctx *rc) {
    al_extern ext;
    if (!al_instance_export(rc->instance, "_start", &ext)) {
        sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_LINK,
                           "no export named '_start': not a WASI command module");
        return NULL;
    }
    if (ext.kind != AL_EXTERN_FUNC) {
        sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_LINK,
                           "export '_start' is not a function");
        return NULL;
    }
    const al_functype *t = al_func_type(ext.of.func);
    if (t->nparams != 0 || t->nresults != 0) {
        sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_LINK,
                           "export '_start' takes %" PRIu32 " parameters and returns %" PRIu32
                           " results; a WASI command's _start takes and returns nothing",
                           t->nparams, t->nresults);
        return NULL;
    }
    return ext.of.func;
}

/* Step 4 without the timer: instantiate and call _start. */
static void instantiate_and_call(run_ctx *rc) {
    al_error err;
    memset(&err, 0, sizeof err);
    rc->instance = al_instantiate(rc->store, rc->module, rc->imports, &err);
    if (!rc->instance) {
        if (err.kind == AL_ERR_TRAP) classify_trap(rc, &err); /* a start function */
        else classify_instantiate_error(rc, &err);
        return;
    }
    al_func *start = find_start(rc);
    if (!start) return;
    if (rc->hooks && rc->hooks->started)
        rc->hooks->started(rc->hooks->arg, rc->store, rc->instance);
    if (!al_call(rc->store, start, NULL, 0, NULL, 0, &err)) {
        classify_failure(rc, &err);
        return;
    }
    rc->result->status = AL_STATUS_OK;
}

/* An interrupt the timer made for a cancellation reads as a timeout to
 * classify_trap (the engine and the WASI host know only "interrupted"). */
static void reclassify_cancelled(run_ctx *rc) {
    al_result *r = rc->result;
    if (r->status != AL_STATUS_TIMEOUT) return; /* it ended on its own first */
    sandbox_set_cancelled(r, rc->policy, AL_ERR_TRAP);
    r->trap = r->error.trap = AL_TRAP_INTERRUPTED;
}

/* Step 4: the guest runs between timer_start and timer_stop. t0 is when the
 * clock started (the deadline is t0 + timeout), so a timed-out run always
 * reports wall_ns >= timeout. The timer runs when there is a deadline or a
 * cancel flag to watch. */
static void run_guest(run_ctx *rc, uint64_t t0) {
    run_timer timer;
    memset(&timer, 0, sizeof timer);
    if ((rc->deadline_ns || rc->policy->cancel) &&
        !timer_start(&timer, rc->store, rc->deadline_ns, rc->policy->cancel)) {
        /* Never run without the bound the policy asked for. */
        sandbox_set_status(rc->result, AL_STATUS_ERROR, AL_ERR_NOMEM,
                           "could not start the timeout timer");
        return;
    }
    instantiate_and_call(rc);
    rc->result->wall_ns = sandbox_now_ns() - t0;
    timer_stop(&timer);
    if (timer.cancelled) reclassify_cancelled(rc);
}

/* A NUL-terminated copy the result owns; NULL only when out of memory. */
static uint8_t *copy_bytes(const uint8_t *data, size_t len) {
    uint8_t *copy = malloc(len + 1);
    if (!copy) return NULL;
    if (len) memcpy(copy, data, len);
    copy[len] = 0;
    return copy;
}

/* Step 5: measurements and outputs, after the guest has stopped. */
static void collect(run_ctx *rc) {
    al_result *r = rc->result;
    if (rc->store) r->fuel_used = rc->fuel_budget - al_store_fuel(rc->store);
    al_extern mem;
    if (rc->instance && al_instance_export(rc->instance, "memory", &mem) &&
        mem.kind == AL_EXTERN_MEMORY)
        r->peak_memory_bytes = al_memory_size(mem.of.memory);

    const uint8_t *out = NULL, *errb = NULL;
    size_t out_len = 0, err_len = 0;
    if (rc->wasi) {
        out = wasi_stdout(rc->wasi, &out_len, &r->stdout_truncated);
        errb = wasi_stderr(rc->wasi, &err_len, &r->stderr_truncated);
    }
    r->stdout_data = copy_bytes(out, out ? out_len : 0);
    r->stderr_data = copy_bytes(errb, errb ? err_len : 0);
    if (!r->stdout_data || !r->stderr_data) {
        al_result_free(r);
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory copying output");
        return;
    }
    r->stdout_len = out ? out_len : 0;
    r->stderr_len = errb ? err_len : 0;
    if (r->status == AL_STATUS_OK && (r->stdout_truncated || r->stderr_truncated))
        r->status = AL_STATUS_OUTPUT_TRUNCATED;
}

/* The limits behind the outcome, in the same flags the other backends use. */
static uint32_t wasm_limits_hit(const al_result *r) {
    uint32_t hit = 0;
    if (r->status == AL_STATUS_FUEL_EXHAUSTED) hit |= AL_LIMIT_FUEL;
    if (r->status == AL_STATUS_TIMEOUT) hit |= AL_LIMIT_WALL;
    if (r->status == AL_STATUS_MEMORY_LIMIT) hit |= AL_LIMIT_MEMORY;
    if (r->stdout_truncated || r->stderr_truncated) hit |= AL_LIMIT_OUTPUT;
    return hit;
}

/* Step 5, on every path (a run that never reached the engine too: ""
 * outputs, like every other outcome). */
static void run_finish(run_ctx *rc) {
    collect(rc);
    run_release(rc);
    rc->result->limits_hit = wasm_limits_hit(rc->result);
}

/* Steps 2 (the store) to 5, for rc->module. */
static void run_compiled(run_ctx *rc) {
    if (make_store(rc)) {
        /* The clock starts before the WASI context, which needs the deadline;
         * setting it up (copying stdin, opening the preopens) is part of the
         * run's time. */
        uint64_t t0 = sandbox_now_ns();
        if (rc->policy->timeout_ms) rc->deadline_ns = t0 + rc->policy->timeout_ms * 1000000u;
        if (make_wasi(rc)) run_guest(rc, t0);
    }
    if (rc->hooks && rc->hooks->stopped) rc->hooks->stopped(rc->hooks->arg, rc->store);
    run_finish(rc);
}

/* A fresh result and context; false when the policy cannot run (the result
 * says why). */
static bool run_begin(run_ctx *rc, const al_policy *policy, al_result *result) {
    memset(result, 0, sizeof *result);
    snprintf(result->backend, sizeof result->backend, "wasm");
    memset(rc, 0, sizeof *rc);
    rc->policy = policy;
    rc->result = result;
    result->status = sandbox_policy_check(policy, &result->error);
    return result->status == AL_STATUS_OK;
}

bool al_run_wasm(const al_policy *policy, const uint8_t *module, size_t len,
                 al_result *result) {
    if (!result) return false;
    run_ctx rc;
    if (run_begin(&rc, policy, result) && check_module_bytes(&rc, module, len) &&
        load_module(&rc, module, len))
        run_compiled(&rc);
    else
        run_finish(&rc);
    return true;
}

bool sandbox_run_wasm_module(const al_policy *policy, const al_module *module,
                             const sandbox_wasm_hooks *hooks, al_result *result) {
    if (!result) return false;
    run_ctx rc;
    if (!run_begin(&rc, policy, result)) {
        run_finish(&rc);
        return true;
    }
    if (!module) {
        sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "no module to run");
        run_finish(&rc);
        return true;
    }
    rc.module = module;
    rc.hooks = hooks;
    run_compiled(&rc);
    return true;
}
