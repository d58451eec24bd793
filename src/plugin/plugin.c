/*
 * plugin.c — airlock.h's plugin API (al_plugin_*): Extism-compatible plugins
 * compiled once, instantiated cheaply, called many times.
 *
 * A call, in order:
 *   1. a cancel flag already raised ends it (CANCELLED) before anything runs;
 *   2. if the previous instance was discarded (or never made): a new store
 *      (al_limits.max_memory_bytes = max_pages pages), the imported
 *      "extism:host/env" functions only, WASI when the module imports it;
 *   3. the watchdog is armed with the call's deadline and cancel flag, the
 *      store gets the call's fuel; the new instance (if any) is linked and
 *      its _initialize (else __wasm_call_ctors) runs once, inside the call's
 *      bounds;
 *   4. the kernel is reset and the input copied into it once; the function
 *      (an export taking nothing and returning i32) is called;
 *   5. the watchdog is disarmed and the outcome classified: the error slot
 *      and the output slot are measured against max_output_bytes before a
 *      byte of either is copied (the guillotine), then copied once.
 * Every trap, fuel or memory exhaustion, timeout, cancel and oversized
 * output discards the instance (the next call makes a fresh one); vars and
 * the kernel live in the al_plugin and survive. A missing function or one of
 * the wrong type is an ERROR that leaves the instance alone.
 *
 * WASI plugins: argv is just "plugin", no environment, empty stdin, the
 * options' dirs as preopens; what the guest writes to stdout goes to on_log
 * at AL_LOG_INFO and stderr at AL_LOG_ERROR (one log line per write, after
 * the log_level filter). proc_exit(n) ends the call as if the function had
 * returned n, and discards the instance (a WASI program that exited is
 * done).
 *
 * Options: max_pages, max_output_bytes and max_http_response_bytes of 0 mean
 * their defaults (a zeroed struct behaves like al_plugin_options_init's);
 * max_var_bytes is taken literally, 0 disabling vars as in Extism.
 *
 * Invariants:
 *  - no thread is created per call: the watchdog thread is started by the
 *    first call (or instantiation) that has a deadline or a cancel flag and
 *    lives until al_plugin_free; it interrupts a store only while that store
 *    is armed (under its lock), so an interrupt never lands in a later call;
 *  - the plugin owns deep copies of everything in the options; a module is
 *    refcounted, so freeing it while plugins live is safe;
 *  - every al_result from al_plugin_call has non-NULL, NUL-terminated
 *    stdout_data and stderr_data (possibly empty) unless it is ERROR for
 *    want of memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin.h"

#define CANCEL_POLL_NS (50u * 1000000u)

uint64_t plugin_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void al_plugin_options_init(al_plugin_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->max_pages = PLUGIN_DEFAULT_MAX_PAGES;
    o->max_http_response_bytes = PLUGIN_DEFAULT_MAX_HTTP_RESPONSE;
    o->max_var_bytes = PLUGIN_DEFAULT_MAX_VAR_BYTES;
    o->max_output_bytes = PLUGIN_DEFAULT_MAX_OUTPUT;
    o->log_level = AL_LOG_INFO;
}

/* ---- modules ------------------------------------------------------------------------------ */

static void module_release(al_plugin_module *m) {
    if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    al_module_free(m->module);
    free(m->env_defs);
    for (size_t i = 0; i < m->ncallable; i++) free(m->callable[i]);
    free(m->callable);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void al_plugin_module_free(al_plugin_module *module) { module_release(module); }

/* Map every import to what provides it; anything else is a link error
 * naming the import, before any instance is made. */
static bool module_scan_imports(al_plugin_module *m, al_error *err) {
    uint32_t n = al_module_import_count(m->module);
    m->env_defs = calloc(n ? n : 1, sizeof *m->env_defs);
    if (!m->env_defs) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const char *mod = NULL, *name = NULL;
        al_extern_kind kind;
        if (!al_module_import(m->module, i, &mod, &name, &kind) || !mod || !name) continue;
        if (strcmp(mod, PLUGIN_ENV_MODULE) == 0) {
            const plugin_host_def *d = plugin_host_lookup(name, strlen(name));
            if (kind != AL_EXTERN_FUNC || !d) {
                al_error_set(err, AL_ERR_LINK,
                             PLUGIN_CONFORMANCE "the plugin imports %s.%.64s, which airlock does not "
                                           "provide",
                             PLUGIN_ENV_MODULE, name);
                plugin_scrub(err->message);
                return false;
            }
            m->env_defs[m->nenv++] = d;
        } else if (strcmp(mod, PLUGIN_WASI_MODULE) == 0) {
            m->needs_wasi = true;
        } else {
            al_error_set(err, AL_ERR_LINK,
                         PLUGIN_CONFORMANCE "the plugin imports %.64s.%.64s; a plugin may import only "
                                       "from %s and %s",
                         mod, name, PLUGIN_ENV_MODULE, PLUGIN_WASI_MODULE);
            plugin_scrub(err->message);
            return false;
        }
    }
    return true;
}

al_plugin_module *al_plugin_compile(const uint8_t *wasm, size_t len, al_error *err) {
    al_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    if (!wasm && len) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_plugin_compile: NULL bytes");
        return NULL;
    }
    al_module *mod = al_module_new(wasm, len, err);
    if (!mod) return NULL;
    al_plugin_module *m = calloc(1, sizeof *m);
    if (!m) {
        al_module_free(mod);
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->module = mod;
    m->refs = 1;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        al_module_free(mod);
        free(m);
        al_error_set(err, AL_ERR_SYSTEM, "pthread_mutex_init failed");
        return NULL;
    }
    if (!module_scan_imports(m, err)) {
        module_release(m);
        return NULL;
    }
    return m;
}

static bool is_callable_type(const al_functype *t) {
    return t && t->nparams == 0 && t->nresults == 1 && t->results[0] == AL_I32;
}

/* The callable exports, from the first instance of the module (types are
 * only known for instances). */
static void module_learn_exports(al_plugin_module *m, const al_instance *inst) {
    pthread_mutex_lock(&m->lock);
    if (!m->exports_known) {
        uint32_t n = al_module_export_count(m->module);
        m->callable = calloc(n ? n : 1, sizeof *m->callable);
        for (uint32_t i = 0; m->callable && i < n; i++) {
            const char *name = NULL;
            al_extern_kind kind;
            al_extern ext;
            if (!al_module_export(m->module, i, &name, &kind) || kind != AL_EXTERN_FUNC ||
                !name || !al_instance_export(inst, name, &ext) ||
                !is_callable_type(al_func_type(ext.of.func)))
                continue;
            char *copy = strdup(name);
            if (copy) m->callable[m->ncallable++] = copy;
        }
        m->exports_known = m->callable != NULL;
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- settings --------------------------------------------------------------------------- */

static void free_strings(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

static void settings_free(plugin_settings *s) {
    for (size_t i = 0; s->config && i < s->nconfig; i++) {
        free((char *)s->config[i].key);
        free((char *)s->config[i].value);
    }
    free(s->config);
    free_strings(s->allowed_hosts, s->nallowed_hosts);
    free_strings(s->allow_ips, s->nallow_ips);
    for (size_t i = 0; s->hosts && i < s->nhosts; i++) {
        free((char *)s->hosts[i].name);
        free((char *)s->hosts[i].address);
    }
    free(s->hosts);
    for (size_t i = 0; s->dirs && i < s->ndirs; i++) {
        free((char *)s->dirs[i].host_path);
        free((char *)s->dirs[i].guest_path);
    }
    free(s->dirs);
    memset(s, 0, sizeof *s);
}

/* An array of n copies of strings; NULL entries are refused. */
static bool copy_strings(char ***out, const char *const *in, size_t n) {
    *out = NULL;
    if (n == 0) return true;
    if (!in || !(*out = calloc(n, sizeof **out))) return false;
    for (size_t i = 0; i < n; i++)
        if (!in[i] || !((*out)[i] = strdup(in[i]))) return false;
    return true;
}

/* Fills s; on failure s holds what was copied so far (settings_free frees it). */
static bool settings_copy(plugin_settings *s, const al_plugin_options *o, al_error *err) {
    memset(s, 0, sizeof *s);
    s->allow_http = o->allow_http;
    s->max_pages = o->max_pages ? o->max_pages : PLUGIN_DEFAULT_MAX_PAGES;
    if (s->max_pages > PLUGIN_MAX_PAGES) s->max_pages = PLUGIN_MAX_PAGES;
    s->max_http_response_bytes =
        o->max_http_response_bytes ? o->max_http_response_bytes : PLUGIN_DEFAULT_MAX_HTTP_RESPONSE;
    s->max_var_bytes = o->max_var_bytes;
    s->max_output_bytes = o->max_output_bytes ? o->max_output_bytes : PLUGIN_DEFAULT_MAX_OUTPUT;
    s->timeout_ms = o->timeout_ms;
    s->fuel = o->fuel;
    s->log_level = o->log_level;
    s->on_log = o->on_log;
    s->on_log_ctx = o->on_log_ctx;
    s->cancel = o->cancel;

    bool ok = true;
    if (o->nconfig) {
        ok = o->config && (s->config = calloc(o->nconfig, sizeof *s->config));
        for (size_t i = 0; ok && i < o->nconfig; i++) {
            s->nconfig = i + 1;
            ok = o->config[i].key && o->config[i].value &&
                 (s->config[i].key = strdup(o->config[i].key)) &&
                 (s->config[i].value = strdup(o->config[i].value));
        }
    }
    if (ok) {
        s->nallowed_hosts = o->nallowed_hosts;
        ok = copy_strings(&s->allowed_hosts, o->allowed_hosts, o->nallowed_hosts);
    }
    for (size_t i = 0; ok && i < s->nallowed_hosts; i++)
        if (strcmp(s->allowed_hosts[i], "*") == 0) s->allow_any_host = true;
    if (ok) {
        s->nallow_ips = o->nallow_ips;
        ok = copy_strings(&s->allow_ips, o->allow_ips, o->nallow_ips);
    }
    if (ok && o->nhosts) {
        ok = o->hosts && (s->hosts = calloc(o->nhosts, sizeof *s->hosts));
        for (size_t i = 0; ok && i < o->nhosts; i++) {
            s->nhosts = i + 1;
            ok = o->hosts[i].name && o->hosts[i].address &&
                 (s->hosts[i].name = strdup(o->hosts[i].name)) &&
                 (s->hosts[i].address = strdup(o->hosts[i].address));
        }
    }
    if (ok && o->ndirs) {
        ok = o->dirs && (s->dirs = calloc(o->ndirs, sizeof *s->dirs));
        for (size_t i = 0; ok && i < o->ndirs; i++) {
            s->ndirs = i + 1;
            s->dirs[i].read_only = o->dirs[i].read_only;
            ok = o->dirs[i].host_path && o->dirs[i].guest_path &&
                 (s->dirs[i].host_path = strdup(o->dirs[i].host_path)) &&
                 (s->dirs[i].guest_path = strdup(o->dirs[i].guest_path));
        }
    }
    if (!ok)
        al_error_set(err, AL_ERR_ARGUMENT,
                     "invalid plugin options (a NULL string or array) or out of memory");
    return ok;
}

/* ---- the watchdog ------------------------------------------------------------------------ */

static bool watchdog_init(plugin_watchdog *w) {
    memset(w, 0, sizeof *w);
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&w->wake, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok) return false;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        pthread_cond_destroy(&w->wake);
        return false;
    }
    return true;
}

/* Under the lock: interrupt the watched store and stop watching it. */
static void watchdog_fire(plugin_watchdog *w, int why) {
    al_store_interrupt(w->watched);
    w->fired = why;
    w->watched = NULL;
}

static void *watchdog_main(void *arg) {
    plugin_watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->quit) {
        if (!w->watched) {
            w->idle = true;
            pthread_cond_wait(&w->wake, &w->lock);
            w->idle = false;
            continue;
        }
        uint64_t now = plugin_now_ns();
        if (w->deadline_ns && now >= w->deadline_ns) {
            watchdog_fire(w, WATCHDOG_TIMEOUT);
        } else if (w->cancel && __atomic_load_n(w->cancel, __ATOMIC_ACQUIRE)) {
            watchdog_fire(w, WATCHDOG_CANCEL);
        } else {
            uint64_t until = w->deadline_ns ? w->deadline_ns : UINT64_MAX;
            if (w->cancel && until - now > CANCEL_POLL_NS) until = now + CANCEL_POLL_NS;
            w->planned_ns = until;
            struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
            pthread_cond_timedwait(&w->wake, &w->lock, &ts);
            w->planned_ns = 0;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Watch store until watchdog_disarm. Without a deadline or a cancel flag
 * there is nothing to watch and no thread is involved at all. */
static bool watchdog_arm(al_plugin *p, al_store *store) {
    plugin_watchdog *w = &p->dog;
    if (!p->deadline_ns && !p->set.cancel) return true;
    pthread_mutex_lock(&w->lock);
    if (!w->started) {
        pthread_attr_t attr;
        bool ok = pthread_attr_init(&attr) == 0;
        if (ok) {
            pthread_attr_setstacksize(&attr, 64 * 1024);
            ok = pthread_create(&w->thread, &attr, watchdog_main, w) == 0;
            pthread_attr_destroy(&attr);
        }
        if (!ok) {
            pthread_mutex_unlock(&w->lock);
            return false;
        }
        w->started = true;
    }
    w->watched = w->armed = store;
    w->deadline_ns = p->deadline_ns;
    w->cancel = p->set.cancel;
    w->fired = WATCHDOG_NONE;
    /* Wake the thread only when it would otherwise sleep past what it must
     * see: it is idle, or its planned wake-up is later than this deadline.
     * With a fixed timeout each deadline is later than the last, so a busy
     * plugin costs the thread one wake-up per timeout, not one per call. */
    if (w->idle || w->planned_ns == 0 || (p->deadline_ns && p->deadline_ns < w->planned_ns))
        pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    return true;
}

/* What fired while armed; the store's interrupt flag is cleared so a call
 * that finished just before the deadline leaves no interrupt behind. */
static int watchdog_disarm(al_plugin *p) {
    plugin_watchdog *w = &p->dog;
    if (!w->started) return WATCHDOG_NONE;
    pthread_mutex_lock(&w->lock);
    int fired = w->fired;
    al_store *store = w->armed;
    w->watched = w->armed = NULL;
    w->fired = WATCHDOG_NONE;
    pthread_mutex_unlock(&w->lock);
    if (fired && store) al_store_clear_interrupt(store);
    return fired;
}

static void watchdog_stop(plugin_watchdog *w) {
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        w->quit = true;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
}

/* ---- instances --------------------------------------------------------------------------- */

static void instance_release(al_plugin *p) {
    plugin_instance *in = &p->inst;
    al_imports_free(in->imports);
    wasi_ctx_free(in->wasi);
    al_store_free(in->store);
    free(in->last_name);
    memset(in, 0, sizeof *in);
    p->live = false;
}

static void wasi_to_log(void *arg, int stream, const uint8_t *data, size_t len) {
    plugin_log(arg, stream == 2 ? AL_LOG_ERROR : AL_LOG_INFO, data, len);
}

static bool define_wasi(al_plugin *p, al_error *err) {
    static const char *const argv[] = {"plugin"};
    wasi_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.argv = argv;
    cfg.argc = 1;
    cfg.preopens = p->set.dirs;
    cfg.npreopens = p->set.ndirs;
    cfg.store = p->inst.store;
    cfg.on_output = wasi_to_log;
    cfg.on_output_arg = p;
    cfg.output_unbuffered = true;
    p->inst.wasi = wasi_ctx_new(&cfg, err);
    return p->inst.wasi && wasi_define_imports_for(p->inst.wasi, p->inst.store, p->inst.imports,
                                                   p->module->module, err);
}

/* Step 2: the store and the imports (no guest code runs yet). */
static bool instance_prepare(al_plugin *p, al_error *err) {
    plugin_instance *in = &p->inst;
    al_limits lim = al_limits_default();
    lim.max_memory_bytes = (uint64_t)p->set.max_pages * PLUGIN_PAGE_SIZE;
    in->store = al_store_new(&lim);
    in->imports = al_imports_new();
    if (!in->store || !in->imports) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    const al_plugin_module *m = p->module;
    for (uint32_t i = 0; i < m->nenv; i++) {
        const plugin_host_def *d = m->env_defs[i];
        al_extern ext;
        ext.kind = AL_EXTERN_FUNC;
        ext.of.func = al_func_new_host(in->store, &d->type, d->fn, p);
        if (!ext.of.func || !al_imports_define(in->imports, PLUGIN_ENV_MODULE, d->name, ext)) {
            al_error_set(err, AL_ERR_NOMEM, "out of memory");
            return false;
        }
    }
    if (m->needs_wasi && !define_wasi(p, err)) {
        if (err->kind == AL_OK) err->kind = AL_ERR_ARGUMENT;
        return false;
    }
    return true;
}

/* An exported function of type () -> (), or NULL; *bad when it has another type. */
static al_func *init_export(const al_instance *inst, const char *name, bool *bad) {
    al_extern ext;
    if (!al_instance_export(inst, name, &ext) || ext.kind != AL_EXTERN_FUNC) return NULL;
    const al_functype *t = al_func_type(ext.of.func);
    if (t->nparams != 0 || t->nresults != 0) *bad = true;
    return ext.of.func;
}

/* Step 3 for a new instance: link (the start function runs here) and run
 * _initialize, else __wasm_call_ctors, once. Guest code runs: the caller
 * has armed the watchdog. */
static bool instance_link(al_plugin *p, al_error *err) {
    plugin_instance *in = &p->inst;
    in->instance = al_instantiate(in->store, p->module->module, in->imports, err);
    if (!in->instance) return false;
    al_extern ext;
    if (al_instance_export(in->instance, "memory", &ext) && ext.kind == AL_EXTERN_MEMORY)
        in->memory = ext.of.memory;
    module_learn_exports(p->module, in->instance);
    bool bad = false;
    const char *name = "_initialize";
    al_func *init = init_export(in->instance, name, &bad);
    if (!init) init = init_export(in->instance, name = "__wasm_call_ctors", &bad);
    if (!init) return true;
    if (bad) {
        al_error_set(err, AL_ERR_LINK, "export %s must take no parameters and return nothing", name);
        return false;
    }
    kernel_reset(&p->kernel);
    return al_call(in->store, init, NULL, 0, NULL, 0, err);
}

/* ---- outcomes ------------------------------------------------------------------------------ */

static void fail(al_result *r, al_status status, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(al_result *r, al_status status, al_error_kind kind, const char *fmt, ...) {
    r->status = status;
    r->error.kind = kind;
    size_t n = strlen(PLUGIN_CONFORMANCE);
    memcpy(r->error.message, PLUGIN_CONFORMANCE, n + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error.message + n, sizeof r->error.message - n, fmt, ap);
    va_end(ap);
    plugin_scrub(r->error.message); /* names from the module's name section, ... */
}

/* A failure of instantiation, _initialize or the function: its status and
 * reason. The engine's error (trap kind, location, backtrace) is kept. */
static void classify_failure(al_plugin *p, al_result *r, const al_error *err, int fired,
                             const char *phase) {
    r->error = *err;
    if (err->kind != AL_ERR_TRAP) {
        /* The engine words every memory-limit refusal "memory ..." */
        bool mem = err->kind == AL_ERR_LIMIT && strncmp(err->message, "memory", 6) == 0;
        char msg[sizeof err->message];
        memcpy(msg, err->message, sizeof msg);
        fail(r, mem ? AL_STATUS_MEMORY_LIMIT : AL_STATUS_ERROR, err->kind, "%s%s", phase, msg);
        return;
    }
    r->trap = err->trap;
    char where[120] = "";
    if (err->backtrace_len && err->func_name[0])
        snprintf(where, sizeof where, " (in '%.60s' at code offset %" PRIu32 ")", err->func_name,
                 err->code_offset);
    else if (err->backtrace_len)
        snprintf(where, sizeof where, " (at code offset %" PRIu32 ")", err->code_offset);
    uint64_t limit = (uint64_t)p->set.max_pages * PLUGIN_PAGE_SIZE;
    switch (err->trap) {
    case AL_TRAP_INTERRUPTED:
        if (fired == WATCHDOG_CANCEL)
            fail(r, AL_STATUS_CANCELLED, AL_ERR_TRAP, "%sthe call was cancelled", phase);
        else
            fail(r, AL_STATUS_TIMEOUT, AL_ERR_TRAP, "%sthe call timed out after %" PRIu64 " ms",
                 phase, p->set.timeout_ms);
        break;
    case AL_TRAP_FUEL_EXHAUSTED:
        fail(r, AL_STATUS_FUEL_EXHAUSTED, AL_ERR_TRAP,
             "%sfuel exhausted (budget %" PRIu64 " instructions per call)", phase, p->set.fuel);
        break;
    case AL_TRAP_MEMORY_LIMIT:
        fail(r, AL_STATUS_MEMORY_LIMIT, AL_ERR_TRAP,
             "%sthe plugin reached its memory limit of %" PRIu32 " pages (%" PRIu64 " bytes)",
             phase, p->set.max_pages, limit);
        break;
    case AL_TRAP_HOST:
        fail(r, AL_STATUS_TRAP, AL_ERR_TRAP, "%s%s%s", phase,
             p->trap_msg[0] ? p->trap_msg : "a host function failed", where);
        break;
    default:
        if (al_store_memory_limit_hit(p->inst.store))
            fail(r, AL_STATUS_MEMORY_LIMIT, AL_ERR_TRAP,
                 "%sthe plugin trapped (%s)%s after memory.grow was refused at its limit of "
                 "%" PRIu32 " pages",
                 phase, al_trap_message(err->trap), where, p->set.max_pages);
        else
            fail(r, AL_STATUS_TRAP, AL_ERR_TRAP, "%sthe plugin trapped: %s%s", phase,
                 al_trap_message(err->trap), where);
        break;
    }
    r->error.trap = err->trap;
}

/* A NUL-terminated copy of data[0..len) into *out. */
static bool copy_out(uint8_t **out, const uint8_t *data, uint64_t len) {
    if (len > SIZE_MAX - 1) return false;
    *out = malloc((size_t)len + 1);
    if (!*out) return false;
    if (len) memcpy(*out, data, (size_t)len);
    (*out)[len] = 0;
    return true;
}

/* The function returned rc: the guillotine, then the outputs. false when
 * the instance must be discarded (oversized output or error). */
static bool finish_returned(al_plugin *p, al_result *r, int32_t rc, const char *function) {
    const plugin_kernel *k = &p->kernel;
    uint64_t max = p->set.max_output_bytes;
    bool has_error = k->error_off != 0;
    /* Measured before anything is copied, decoded or parsed. */
    if (has_error && k->error_len > max) {
        fail(r, AL_STATUS_OUTPUT_TRUNCATED, AL_ERR_LIMIT,
             "the plugin's error is %" PRIu64 " bytes, over max_output_bytes (%" PRIu64
             "); nothing of it was copied",
             k->error_len, max);
        return false;
    }
    if (k->output_len > max) {
        fail(r, AL_STATUS_OUTPUT_TRUNCATED, AL_ERR_LIMIT,
             "the plugin's output is %" PRIu64 " bytes, over max_output_bytes (%" PRIu64
             "); nothing of it was copied",
             k->output_len, max);
        return false;
    }
    /* The slots were checked when set and only reset moves top down (and
     * clears them), so these hold; checked again because a wrong slot here
     * would read host memory. */
    if ((k->output_len && !kernel_in_range(k, k->output_off, k->output_len)) ||
        (has_error && !kernel_in_range(k, k->error_off, k->error_len))) {
        fail(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "the output or error slot is out of range");
        return false;
    }
    if (!copy_out(&r->stdout_data, k->mem + k->output_off, k->output_len) ||
        (has_error && !copy_out(&r->stderr_data, k->mem + k->error_off, k->error_len))) {
        fail(r, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory copying the output");
        return true;
    }
    r->stdout_len = (size_t)k->output_len;
    r->exit_code = rc;
    if (has_error) {
        r->stderr_len = (size_t)k->error_len;
        r->status = AL_STATUS_EXIT;
        /* error.message is for people: control bytes (terminal escapes)
         * become '?'; stderr_data keeps the plugin's bytes as they are. */
        size_t n = k->error_len < sizeof r->error.message - 1 ? (size_t)k->error_len
                                                               : sizeof r->error.message - 1;
        for (size_t i = 0; i < n; i++) {
            uint8_t c = r->stderr_data[i];
            r->error.message[i] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : (char)c;
        }
        r->error.message[n] = '\0';
    } else if (rc != 0) {
        r->status = AL_STATUS_EXIT;
        snprintf(r->error.message, sizeof r->error.message, "plugin function '%.64s' returned %d",
                 function, (int)rc);
    } else {
        r->status = AL_STATUS_OK;
    }
    return true;
}

/* The function to call: an export taking nothing and returning i32. */
static al_func *find_function(al_plugin *p, const char *name, al_result *r) {
    plugin_instance *in = &p->inst;
    if (in->last_name && strcmp(in->last_name, name) == 0) return in->last_func;
    al_extern ext;
    if (!al_instance_export(in->instance, name, &ext) || ext.kind != AL_EXTERN_FUNC) {
        fail(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "the plugin has no function named '%.64s'",
             name);
        return NULL;
    }
    const al_functype *t = al_func_type(ext.of.func);
    if (!is_callable_type(t)) {
        fail(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT,
             "'%.64s' takes %" PRIu32 " parameters and returns %" PRIu32
             " results; a plugin function takes none and returns one i32",
             name, t->nparams, t->nresults);
        return NULL;
    }
    char *copy = strdup(name);
    if (copy) {
        free(in->last_name);
        in->last_name = copy;
        in->last_func = ext.of.func;
    }
    return ext.of.func;
}

/* Steps 2-5 of a call. */
static void run_call(al_plugin *p, const char *function, const uint8_t *input, size_t len,
                     al_result *r) {
    al_error err;
    memset(&err, 0, sizeof err);
    bool fresh = !p->live;
    if (fresh && !instance_prepare(p, &err)) {
        classify_failure(p, r, &err, WATCHDOG_NONE, "cannot instantiate the plugin: ");
        instance_release(p);
        return;
    }
    al_store *store = p->inst.store;
    if (!watchdog_arm(p, store)) {
        fail(r, AL_STATUS_ERROR, AL_ERR_SYSTEM, "cannot start the watchdog thread");
        if (fresh) instance_release(p);
        return;
    }
    if (p->set.fuel) al_store_set_fuel(store, p->set.fuel);
    bool ok = true, in_init = fresh;
    if (fresh) ok = p->live = instance_link(p, &err);
    al_func *f = NULL;
    if (ok) {
        in_init = false;
        f = find_function(p, function, r);
        if (!f) {
            watchdog_disarm(p);
            return;
        }
        if (!kernel_set_input(&p->kernel, input, len)) {
            watchdog_disarm(p);
            fail(r, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory copying the input");
            return;
        }
    }
    int32_t rc = 0;
    if (ok) {
        al_value res;
        ok = al_call(store, f, NULL, 0, &res, 1, &err);
        if (ok) rc = res.of.i32;
    }
    int fired = watchdog_disarm(p);
    if (p->set.fuel) r->fuel_used = p->set.fuel - al_store_fuel(store);
    if (p->inst.memory) r->peak_memory_bytes = al_memory_size(p->inst.memory);
    bool keep = ok;
    int code = 0;
    if (!ok && !in_init && err.kind == AL_ERR_TRAP && err.trap == AL_TRAP_EXIT &&
        p->inst.wasi && wasi_exited(p->inst.wasi, &code)) {
        ok = true; /* proc_exit(code): as if the function returned code */
        rc = code;
    }
    if (ok) keep = finish_returned(p, r, rc, function) && keep;
    else classify_failure(p, r, &err, fired, in_init ? "while instantiating the plugin: " : "");
    if (!keep) instance_release(p);
}

bool al_plugin_call(al_plugin *p, const char *function, const uint8_t *input, size_t input_len,
                    al_result *r) {
    if (!r) return false;
    memset(r, 0, sizeof *r);
    snprintf(r->backend, sizeof r->backend, "plugin");
    uint64_t t0 = plugin_now_ns();
    if (!p || !function || (input_len && !input)) {
        fail(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "al_plugin_call: NULL plugin, function or input");
    } else if (p->set.cancel && __atomic_load_n(p->set.cancel, __ATOMIC_ACQUIRE)) {
        fail(r, AL_STATUS_CANCELLED, AL_ERR_ARGUMENT, "the call was cancelled before it started");
    } else {
        p->deadline_ns = p->set.timeout_ms ? t0 + p->set.timeout_ms * 1000000u : 0;
        p->trap_msg[0] = '\0';
        run_call(p, function, input, input_len, r);
    }
    r->wall_ns = plugin_now_ns() - t0;
    switch (r->status) {
    case AL_STATUS_TIMEOUT: r->limits_hit |= AL_LIMIT_WALL; break;
    case AL_STATUS_FUEL_EXHAUSTED: r->limits_hit |= AL_LIMIT_FUEL; break;
    case AL_STATUS_MEMORY_LIMIT: r->limits_hit |= AL_LIMIT_MEMORY; break;
    case AL_STATUS_OUTPUT_TRUNCATED: r->limits_hit |= AL_LIMIT_OUTPUT; break;
    default: break;
    }
    if ((!r->stdout_data && !copy_out(&r->stdout_data, NULL, 0)) ||
        (!r->stderr_data && !copy_out(&r->stderr_data, NULL, 0))) {
        al_result_free(r);
        fail(r, AL_STATUS_ERROR, AL_ERR_NOMEM, "out of memory");
    }
    return true;
}

/* ---- plugins ----------------------------------------------------------------------------------- */

void al_plugin_free(al_plugin *p) {
    if (!p) return;
    watchdog_stop(&p->dog);
    instance_release(p);
    kernel_free(&p->kernel);
    vars_free(&p->vars);
    plugin_http_free(p);
    settings_free(&p->set);
    module_release(p->module);
    free(p);
}

/* The first instance, outside any call: the same bounds as a call. */
static bool first_instance(al_plugin *p, al_error *err) {
    p->deadline_ns = p->set.timeout_ms ? plugin_now_ns() + p->set.timeout_ms * 1000000u : 0;
    if (!instance_prepare(p, err)) return false;
    if (!watchdog_arm(p, p->inst.store)) {
        al_error_set(err, AL_ERR_SYSTEM, "cannot start the watchdog thread");
        return false;
    }
    if (p->set.fuel) al_store_set_fuel(p->inst.store, p->set.fuel);
    al_error e;
    memset(&e, 0, sizeof e);
    bool ok = instance_link(p, &e);
    int fired = watchdog_disarm(p);
    if (ok) {
        p->live = true;
        return true;
    }
    al_result r;
    memset(&r, 0, sizeof r);
    classify_failure(p, &r, &e, fired, "while instantiating the plugin: ");
    *err = r.error;
    return false;
}

al_plugin *al_plugin_instantiate(const al_plugin_module *module, const al_plugin_options *options,
                                 al_error *err) {
    al_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    if (!module) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_plugin_instantiate: NULL module");
        return NULL;
    }
    al_plugin_options defaults;
    if (!options) {
        al_plugin_options_init(&defaults);
        options = &defaults;
    }
    al_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    /* The plugin holds its own reference: the module may be freed first. */
    al_plugin_module *m = (al_plugin_module *)module;
    __atomic_add_fetch(&m->refs, 1, __ATOMIC_ACQ_REL);
    p->module = m;
    if (!watchdog_init(&p->dog)) {
        al_error_set(err, AL_ERR_SYSTEM, "cannot initialise the watchdog's lock");
        module_release(m);
        free(p);
        return NULL;
    }
    if (!settings_copy(&p->set, options, err) ||
        (p->set.allow_http && (!plugin_http_validate(&p->set, err) ||
                               !plugin_http_policy_init(p, err)))) {
        al_plugin_free(p);
        return NULL;
    }
    kernel_init(&p->kernel, (uint64_t)p->set.max_pages * PLUGIN_PAGE_SIZE, p->set.max_output_bytes);
    vars_init(&p->vars, p->set.max_var_bytes);
    if (!first_instance(p, err)) {
        al_plugin_free(p);
        return NULL;
    }
    return p;
}

al_plugin *al_plugin_new(const uint8_t *wasm, size_t len, const al_plugin_options *options,
                         al_error *err) {
    al_plugin_module *m = al_plugin_compile(wasm, len, err);
    if (!m) return NULL;
    al_plugin *p = al_plugin_instantiate(m, options, err);
    module_release(m); /* p holds its own reference */
    return p;
}

bool al_plugin_has_function(const al_plugin *p, const char *function) {
    if (!p || !function) return false;
    al_plugin_module *m = p->module;
    bool found = false;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->ncallable && !found; i++) found = strcmp(m->callable[i], function) == 0;
    pthread_mutex_unlock(&m->lock);
    return found;
}
