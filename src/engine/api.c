/*
 * api.c — small pieces of the public API: value constructors, trap messages,
 * host functions, globals and al_call (the embedder's "invoke", spec §4.5.5
 * / appendix A.3 func_invoke).
 *
 * Invariants:
 *  - floats cross the API as raw bits (memcpy, never a numeric conversion),
 *    so NaN payloads survive;
 *  - a host function owns a copy of its signature (params then results,
 *    right after the al_func in the same allocation) and carries the
 *    store-interned sig_id, so call_indirect compares it like any wasm
 *    function;
 *  - al_call type-checks every argument before anything runs (spec A.3: an
 *    invocation with mismatched arguments is an embedder error, not a trap).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* ---- values ---------------------------------------------------------------- */

al_value al_i32(int32_t v) {
    al_value r = {.type = AL_I32};
    r.of.i64 = 0;
    r.of.i32 = v;
    return r;
}

al_value al_i64(int64_t v) {
    al_value r = {.type = AL_I64};
    r.of.i64 = v;
    return r;
}

al_value al_f32(float v) {
    al_value r = {.type = AL_F32};
    r.of.i64 = 0;
    memcpy(&r.of.f32_bits, &v, sizeof v);
    return r;
}

al_value al_f64(double v) {
    al_value r = {.type = AL_F64};
    memcpy(&r.of.f64_bits, &v, sizeof v);
    return r;
}

float al_value_f32(al_value v) {
    float f;
    memcpy(&f, &v.of.f32_bits, sizeof f);
    return f;
}

double al_value_f64(al_value v) {
    double d;
    memcpy(&d, &v.of.f64_bits, sizeof d);
    return d;
}

/* ---- traps ----------------------------------------------------------------- */

/* The wording of the spec test suite's assert_trap / assert_exhaustion. */
const char *al_trap_message(al_trap_kind kind) {
    switch (kind) {
    case AL_TRAP_NONE: return "no trap";
    case AL_TRAP_UNREACHABLE: return "unreachable";
    case AL_TRAP_INT_DIV_ZERO: return "integer divide by zero";
    case AL_TRAP_INT_OVERFLOW: return "integer overflow";
    case AL_TRAP_INVALID_CONVERSION: return "invalid conversion to integer";
    case AL_TRAP_MEMORY_OOB: return "out of bounds memory access";
    case AL_TRAP_TABLE_OOB: return "out of bounds table access";
    case AL_TRAP_INDIRECT_TYPE_MISMATCH: return "indirect call type mismatch";
    case AL_TRAP_UNINITIALIZED_ELEMENT: return "uninitialized element"; /* call_indirect on null */
    case AL_TRAP_NULL_REFERENCE: return "null reference";
    case AL_TRAP_STACK_EXHAUSTED: return "call stack exhausted";
    case AL_TRAP_INTERRUPTED: return "interrupted";
    case AL_TRAP_FUEL_EXHAUSTED: return "fuel exhausted";
    case AL_TRAP_HOST: return "host function trapped";
    case AL_TRAP_UNDEFINED_ELEMENT: return "undefined element"; /* call_indirect past the end */
    case AL_TRAP_MEMORY_LIMIT: return "memory limit exceeded";
    case AL_TRAP_EXIT: return "exit";
    }
    return "unknown trap";
}

/* ---- host objects ---------------------------------------------------------- */

static bool types_valid(const uint8_t *types, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (!wasm_is_valtype(types[i])) return false;
    return true;
}

al_func *al_func_new_host(al_store *store, const al_functype *type, al_host_fn fn,
                          void *env) {
    if (!store || !type || !fn || (type->nparams && !type->params) ||
        (type->nresults && !type->results) || !types_valid(type->params, type->nparams) ||
        !types_valid(type->results, type->nresults))
        return NULL;
    /* One allocation: the function, then its params and results (a plugin
     * store defines dozens of host functions per instance). */
    size_t n = (size_t)type->nparams + type->nresults;
    al_func *f = calloc(1, sizeof *f + n);
    if (!f) return NULL;
    uint8_t *buf = (uint8_t *)(f + 1);
    if (type->nparams) memcpy(buf, type->params, type->nparams);
    if (type->nresults) memcpy(buf + type->nparams, type->results, type->nresults);
    f->type.nparams = type->nparams;
    f->type.nresults = type->nresults;
    f->type.params = buf;
    f->type.results = buf + type->nparams;
    f->sig_id = store_intern_sig(store, &f->type);
    f->is_host = true;
    f->host_slots = type->nparams > type->nresults ? type->nparams : type->nresults;
    f->host_fn = fn;
    f->host_env = env;
    if (f->sig_id == UINT32_MAX || !store_track(store, STORE_FUNC, f)) {
        free(f);
        return NULL;
    }
    return f;
}

al_global *al_global_new(al_store *store, al_value value, bool is_mutable, al_error *err) {
    if (!store || !wasm_is_valtype((uint8_t)value.type)) {
        al_error_set(err, AL_ERR_ARGUMENT, "invalid global type");
        return NULL;
    }
    al_global *g = calloc(1, sizeof *g);
    if (!g || !store_track(store, STORE_GLOBAL, g)) {
        free(g);
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->type.type = (uint8_t)value.type;
    g->type.is_mutable = is_mutable;
    g->value = value_to_slot(value);
    return g;
}

al_value al_global_get(const al_global *global) {
    if (!global) return al_i32(0);
    return slot_to_value(global->value, global->type.type);
}

/* ---- calls ----------------------------------------------------------------- */

static bool check_call(const al_func *func, const al_value *args, uint32_t nargs,
                       const al_value *results, uint32_t nresults, al_error *err) {
    if (!func) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_call: NULL function");
        return false;
    }
    const al_functype *t = &func->type;
    if (nargs != t->nparams || nresults != t->nresults) {
        al_error_set(err, AL_ERR_ARGUMENT,
                     "al_call: the function takes %u arguments and %u results, not %u and %u",
                     t->nparams, t->nresults, nargs, nresults);
        return false;
    }
    if ((nargs && !args) || (nresults && !results)) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_call: NULL argument or result array");
        return false;
    }
    for (uint32_t i = 0; i < nargs; i++) {
        if ((uint8_t)args[i].type != t->params[i]) {
            al_error_set(err, AL_ERR_ARGUMENT, "al_call: argument %u has the wrong type", i);
            return false;
        }
    }
    return true;
}

static bool call_trapped(al_error *err, al_trap_kind kind) {
    al_error_set(err, AL_ERR_TRAP, "%s", al_trap_message(kind));
    if (err) {
        err->trap = kind;
        err->func_index = UINT32_MAX; /* a host function, not a wasm one */
    }
    return false;
}

/* Called from the embedder there is no calling instance. Results start as
 * zeros of the right type, so a host that forgets one leaves no garbage. */
static bool call_host(al_func *func, const al_value *args, al_value *results, al_error *err) {
    for (uint32_t i = 0; i < func->type.nresults; i++)
        results[i] = slot_to_value(0, func->type.results[i]);
    al_caller caller = {.instance = NULL};
    al_trap_kind trap = func->host_fn(func->host_env, &caller, args, results);
    return trap == AL_TRAP_NONE || call_trapped(err, trap);
}

static bool call_wasm(al_store *store, al_func *func, const al_value *args, al_value *results,
                      al_error *err) {
    const al_functype *t = &func->type;
    size_t n = t->nparams > t->nresults ? t->nparams : t->nresults;
    slot_t *slots = calloc(n ? n : 1, sizeof *slots);
    if (!slots) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < t->nparams; i++) slots[i] = value_to_slot(args[i]);
    bool ok = exec_invoke(store, func, slots, err);
    if (ok)
        for (uint32_t i = 0; i < t->nresults; i++)
            results[i] = slot_to_value(slots[i], t->results[i]);
    free(slots);
    return ok;
}

bool al_call(al_store *store, al_func *func, const al_value *args, uint32_t nargs,
             al_value *results, uint32_t nresults, al_error *err) {
    if (!store) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_call: NULL store");
        return false;
    }
    if (!check_call(func, args, nargs, results, nresults, err)) return false;
    bool ok = func->is_host ? call_host(func, args, results, err)
                            : call_wasm(store, func, args, results, err);
    if (ok && err) err->kind = AL_OK;
    return ok;
}
