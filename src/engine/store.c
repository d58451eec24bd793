/*
 * store.c — the store (spec §4.2.3): owner of every run-time object, plus
 * embedder limits, the interrupt flag and the table of interned signatures.
 *
 * Invariants:
 *  - every object created in a store is in store->objects exactly once, from
 *    right after its creation until al_store_free(); nothing else frees it.
 *    Instances only point at objects, so references across instances (a
 *    funcref in another instance's table) stay valid as long as the store.
 *  - store->sigs[id] is an owning copy of a function signature (params and
 *    results share one allocation starting at params); two ids are equal iff
 *    the signatures are structurally equal (spec §4.5.1 function types match
 *    only when equal), so call_indirect can compare ids instead of types.
 *  - store->sig_index is an open-addressing hash of sig ids (id + 1; 0 marks an
 *    empty slot) with a power-of-two capacity kept at most half full, so
 *    interning stays O(1) even for modules declaring huge numbers of types.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

al_limits al_limits_default(void) {
    al_limits l;
    l.max_call_depth = 10000;
    l.max_value_stack = 1u << 20;
    l.max_memory_bytes = 4ull << 30;
    l.max_table_elements = 10000000;
    l.max_instances = 10000;
    l.max_tables = 100000;
    l.max_memories = 10000;
    l.trap_on_memory_limit = false;
    return l;
}

al_store *al_store_new(const al_limits *limits) {
    al_store *store = calloc(1, sizeof *store);
    if (!store) return NULL;
    store->limits = limits ? *limits : al_limits_default();
    atomic_init(&store->interrupt, 0);
    return store;
}

/* Instances own only their index-space arrays; the objects in them belong to
 * the store. Arrays may be partly allocated if instantiation ran out of
 * memory, hence free(NULL) being fine matters here. */
static void instance_release(al_instance *inst) {
    wasm_module_release(inst->module);
    free(inst->funcs);
    free(inst->tables);
    free(inst->memories);
    free(inst->globals);
    free(inst->sig_ids);
    free(inst->elem_dropped);
    free(inst->data_dropped);
    free(inst);
}

static void object_release(store_object *obj) {
    switch (obj->kind) {
    case STORE_FUNC: free(obj->ptr); break; /* a host function's types share its block */
    case STORE_TABLE: table_destroy(obj->ptr); break;
    case STORE_MEMORY: memory_destroy(obj->ptr); break;
    case STORE_GLOBAL: free(obj->ptr); break;
    case STORE_INSTANCE: instance_release(obj->ptr); break;
    }
}

void al_store_free(al_store *store) {
    if (!store) return;
    for (size_t i = 0; i < store->nobjects; i++) object_release(&store->objects[i]);
    free(store->objects);
    if (store->stack) exec_stack_free(store->stack);
    for (uint32_t i = 0; i < store->nsigs; i++) free((void *)store->sigs[i].params);
    free(store->sigs);
    free(store->sig_index);
    free(store);
}

/* Interruption may come from another thread while guest code runs; exec.c
 * polls the flag at loop headers and calls (see airlock.h). */
void al_store_interrupt(al_store *store) {
    if (store) atomic_store(&store->interrupt, 1);
}

void al_store_clear_interrupt(al_store *store) {
    if (store) atomic_store(&store->interrupt, 0);
}

bool al_store_interrupted(const al_store *store) {
    return store && atomic_load(&((al_store *)store)->interrupt) != 0;
}

bool store_track(al_store *store, store_object_kind kind, void *ptr) {
    if (store->nobjects == store->objects_cap) {
        size_t cap = store->objects_cap ? store->objects_cap * 2 : 64;
        store_object *grown = realloc(store->objects, cap * sizeof *grown);
        if (!grown) return false;
        store->objects = grown;
        store->objects_cap = cap;
    }
    store->objects[store->nobjects].kind = kind;
    store->objects[store->nobjects].ptr = ptr;
    store->nobjects++;
    if (kind == STORE_INSTANCE) store->ninstances++;
    if (kind == STORE_TABLE) store->ntables++;
    if (kind == STORE_MEMORY) store->nmemories++;
    return true;
}

bool store_has_room(const al_store *store, uint32_t instances, uint32_t tables,
                    uint32_t memories, al_error *err) {
    const al_limits *l = &store->limits;
    const char *what = NULL;
    if ((uint64_t)store->ninstances + instances > l->max_instances) what = "instances";
    else if ((uint64_t)store->ntables + tables > l->max_tables) what = "tables";
    else if ((uint64_t)store->nmemories + memories > l->max_memories) what = "memories";
    if (!what) return true;
    al_error_set(err, AL_ERR_LIMIT, "limit reached: too many %s in this store", what);
    return false;
}

bool al_store_memory_limit_hit(const al_store *store) {
    return store && store->memory_limit_hit;
}

/* ---- signature interning ------------------------------------------------ */

bool store_sig_equal(const al_functype *a, const al_functype *b) {
    return a->nparams == b->nparams && a->nresults == b->nresults &&
           (a->nparams == 0 || memcmp(a->params, b->params, a->nparams) == 0) &&
           (a->nresults == 0 || memcmp(a->results, b->results, a->nresults) == 0);
}

/* FNV-1a over the value-type bytes, seeded with both counts at once (every
 * host function of a new store is interned: byte-wise over the counts too
 * cost more than the rest of the look-up). */
static uint32_t sig_hash(const al_functype *t) {
    uint64_t seed = ((uint64_t)t->nparams << 32 | t->nresults) * 0x9E3779B97F4A7C15ull;
    uint32_t h = 2166136261u ^ (uint32_t)(seed >> 32);
    for (uint32_t i = 0; i < t->nparams; i++) h = (h ^ t->params[i]) * 16777619u;
    for (uint32_t i = 0; i < t->nresults; i++) h = (h ^ t->results[i]) * 16777619u;
    return h;
}

/* Slot of the index where `type` is, or the empty slot where it would go. */
static uint32_t sig_slot(const al_store *store, const al_functype *type, uint32_t hash) {
    uint32_t mask = store->sig_index_cap - 1;
    uint32_t i = hash & mask;
    while (store->sig_index[i] != 0 &&
           !store_sig_equal(&store->sigs[store->sig_index[i] - 1], type))
        i = (i + 1) & mask;
    return i;
}

static bool sig_index_rebuild(al_store *store, uint32_t cap) {
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index) return false;
    free(store->sig_index);
    store->sig_index = index;
    store->sig_index_cap = cap;
    for (uint32_t id = 0; id < store->nsigs; id++) {
        const al_functype *t = &store->sigs[id];
        store->sig_index[sig_slot(store, t, sig_hash(t))] = id + 1;
    }
    return true;
}

/* Make room for one more signature in both the array and the index. */
static bool sig_reserve(al_store *store) {
    if (store->nsigs >= UINT32_MAX / 4) return false; /* keeps the ids below UINT32_MAX */
    if (store->nsigs == store->sigs_cap) {
        uint32_t cap = store->sigs_cap ? store->sigs_cap * 2 : 16;
        al_functype *grown = realloc(store->sigs, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        store->sigs = grown;
        store->sigs_cap = cap;
    }
    if ((uint64_t)(store->nsigs + 1) * 2 > store->sig_index_cap)
        return sig_index_rebuild(store, store->sig_index_cap ? store->sig_index_cap * 2 : 32);
    return true;
}

uint32_t store_intern_sig(al_store *store, const al_functype *type) {
    uint32_t hash = sig_hash(type);
    if (store->sig_index_cap) {
        uint32_t slot = sig_slot(store, type, hash);
        if (store->sig_index[slot]) return store->sig_index[slot] - 1;
    }
    if (!sig_reserve(store)) return UINT32_MAX;
    /* One buffer for params then results; never empty, so params owns it. */
    size_t n = (size_t)type->nparams + type->nresults;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return UINT32_MAX;
    if (type->nparams) memcpy(buf, type->params, type->nparams);
    if (type->nresults) memcpy(buf + type->nparams, type->results, type->nresults);
    uint32_t id = store->nsigs++;
    store->sigs[id].nparams = type->nparams;
    store->sigs[id].nresults = type->nresults;
    store->sigs[id].params = buf;
    store->sigs[id].results = buf + type->nparams;
    store->sig_index[sig_slot(store, type, hash)] = id + 1;
    return id;
}

void al_store_set_fuel(al_store *store, uint64_t fuel) {
    if (!store) return;
    store->fuel_enabled = true;
    store->fuel = fuel;
}

uint64_t al_store_fuel(const al_store *store) {
    return store && store->fuel_enabled ? store->fuel : 0;
}
