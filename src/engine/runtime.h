/*
 * runtime.h — run-time objects of the engine (spec §4.2): store, function,
 * table, memory, global and module instances.
 *
 * Ownership: the store owns every object created in it (kept in store->objects
 * and freed by al_store_free); instances only point at them, so a funcref in
 * one instance's table may safely name another instance's function.
 *
 * Value representation, shared with the interpreter: every wasm value is one
 * 64-bit slot. i32 is stored zero-extended in the low 32 bits, f32/f64 as raw
 * bits, funcref as (uintptr_t)al_func*, externref as the host token; null
 * references are 0.
 */
#ifndef AIRLOCK_ENGINE_RUNTIME_H
#define AIRLOCK_ENGINE_RUNTIME_H

#include <stdatomic.h>

#include "module.h"

typedef uint64_t slot_t;

struct al_func {
    al_functype type;   /* host: arrays follow the al_func in its allocation */
    uint32_t sig_id;    /* interned in the store: equal ids <=> equal signatures */
    bool is_host;
    uint32_t host_slots; /* host: max(nparams, nresults), the slots a call uses */
    /* wasm functions */
    al_instance *instance;
    const struct compiled_func *code;
    uint32_t index;     /* in its module's function index space */
    /* host functions */
    al_host_fn host_fn;
    void *host_env;
};

struct al_memory {
    uint8_t *data;      /* mmap'd reservation; stable for the memory's lifetime */
    uint64_t size;      /* accessible bytes, a multiple of WASM_PAGE_SIZE */
    uint64_t reserved;  /* bytes reserved (PROT_NONE past size) */
    uint32_t max_pages; /* declared maximum or WASM_MAX_PAGES */
    bool has_max;
};

struct al_table {
    uint8_t elem_type;
    uint32_t size;
    uint32_t max;       /* declared maximum or UINT32_MAX */
    bool has_max;
    uint32_t capacity;
    slot_t *elems;
};

struct al_global {
    wasm_globaltype type;
    slot_t value;
};

struct al_instance {
    al_store *store;
    const al_module *module;
    al_func **funcs;       /* module->nfuncs */
    al_table **tables;     /* module->ntables */
    al_memory **memories;  /* module->nmemories */
    al_memory *memory0;    /* memories[0], or NULL without one: what exec.c addresses */
    al_global **globals;   /* module->nglobals */
    uint32_t *sig_ids;     /* module->ntypes: interned id of each type */
    bool *elem_dropped;    /* module->nelems */
    bool *data_dropped;    /* module->ndatas */
};

/* Passed to host functions so they can reach the calling instance. */
struct al_caller {
    al_instance *instance;
};

typedef enum store_object_kind {
    STORE_FUNC, STORE_TABLE, STORE_MEMORY, STORE_GLOBAL, STORE_INSTANCE,
} store_object_kind;

typedef struct store_object {
    store_object_kind kind;
    void *ptr;
} store_object;

struct exec_stack; /* exec.c: value stack and call frames */

struct al_store {
    al_limits limits;
    atomic_int interrupt;
    store_object *objects;
    size_t nobjects, objects_cap;
    al_functype *sigs;     /* interned signatures (owning copies) */
    uint32_t nsigs, sigs_cap;
    uint32_t ninstances, ntables, nmemories; /* live counts, for the limits */
    bool memory_limit_hit;    /* a memory.grow failed on max_memory_bytes */
    bool fuel_enabled;        /* al_store_set_fuel was called */
    uint64_t fuel;            /* remaining budget while fuel_enabled */
    struct exec_stack *stack; /* created on first call */
    uint32_t *sig_index;      /* store.c: hash of sig ids (id + 1, 0 = empty) */
    uint32_t sig_index_cap;   /* power of two, at least twice nsigs */
};

/* store.c */
bool store_track(al_store *store, store_object_kind kind, void *ptr); /* false: OOM (object not tracked) */
uint32_t store_intern_sig(al_store *store, const al_functype *type); /* UINT32_MAX on OOM */
/* Would adding these objects stay within the store's limits? (AL_ERR_LIMIT if not) */
bool store_has_room(const al_store *store, uint32_t instances, uint32_t tables,
                    uint32_t memories, al_error *err);
bool store_sig_equal(const al_functype *a, const al_functype *b); /* structural equality */

/* memory.c — grow returns the old size in pages, or -1 (spec memory.grow). */
al_memory *memory_create(uint32_t min_pages, uint32_t max_pages, bool has_max,
                         uint64_t limit_bytes, al_error *err);
int64_t memory_grow(al_memory *mem, uint32_t delta_pages, uint64_t limit_bytes);
void memory_destroy(al_memory *mem);

/* table.c */
al_table *table_create(uint8_t elem_type, uint32_t min, uint32_t max, bool has_max,
                       uint32_t limit_elems, al_error *err);
int64_t table_grow(al_table *table, uint32_t delta, slot_t init, uint32_t limit_elems);
void table_destroy(al_table *table);

/* exec.c — run func with args in slots[0..nparams); results land in
 * slots[0..nresults). slots must hold max(nparams, nresults) entries. On a
 * trap returns false with err->kind AL_ERR_TRAP, trap kind and location. */
bool exec_invoke(al_store *store, al_func *func, slot_t *slots, al_error *err);
void exec_stack_free(struct exec_stack *stack);

/* Conversions between the public al_value and the slot representation. */
static inline slot_t value_to_slot(al_value v) {
    switch (v.type) {
    case AL_I32: return (uint32_t)v.of.i32;
    case AL_I64: return (uint64_t)v.of.i64;
    case AL_F32: return v.of.f32_bits;
    case AL_F64: return v.of.f64_bits;
    case AL_FUNCREF: return (uintptr_t)v.of.funcref;
    case AL_EXTERNREF: return v.of.externref;
    }
    return 0;
}

static inline al_value slot_to_value(slot_t s, uint8_t type) {
    al_value v;
    v.type = (al_valtype)type;
    v.of.i64 = 0;
    switch (type) {
    case AL_I32: v.of.i32 = (int32_t)(uint32_t)s; break;
    case AL_I64: v.of.i64 = (int64_t)s; break;
    case AL_F32: v.of.f32_bits = (uint32_t)s; break;
    case AL_F64: v.of.f64_bits = s; break;
    case AL_FUNCREF: v.of.funcref = (al_func *)(uintptr_t)s; break;
    case AL_EXTERNREF: v.of.externref = (uintptr_t)s; break;
    default: break;
    }
    return v;
}

#endif
