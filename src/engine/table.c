/*
 * table.c — table instances (spec §4.2.7) and table.grow (§4.4.6).
 *
 * Invariants:
 *  - elems holds capacity slots, the first `size` of which are the table's
 *    elements; each is a reference in slot form (funcref: (uintptr_t)al_func*,
 *    externref: the host token), 0 being null. Unlike memories, tables may
 *    move when they grow: the interpreter re-reads table->elems on each access.
 *  - size <= capacity, size <= max (the declared maximum, or UINT32_MAX).
 *  - elems is never NULL, even for an empty table.
 */
#include <stdlib.h>

#include "runtime.h"

al_table *table_create(uint8_t elem_type, uint32_t min, uint32_t max, bool has_max,
                       uint32_t limit_elems, al_error *err) {
    if (min > limit_elems) {
        al_error_set(err, AL_ERR_LIMIT, "table of %u elements exceeds the limit of %u", min,
                     limit_elems);
        return NULL;
    }
    al_table *t = calloc(1, sizeof *t);
    slot_t *elems = calloc(min ? min : 1, sizeof *elems); /* zeroed: all null */
    if (!t || !elems) {
        free(t);
        free(elems);
        al_error_set(err, AL_ERR_NOMEM, "out of memory allocating a table of %u elements", min);
        return NULL;
    }
    t->elem_type = elem_type;
    t->size = min;
    t->max = has_max ? max : UINT32_MAX;
    t->has_max = has_max;
    t->capacity = min ? min : 1;
    t->elems = elems;
    return t;
}

/* New capacity for at least `need` elements: doubling amortises repeated
 * table.grow by 1, but never past what the table may ever hold. */
static uint64_t grown_capacity(const al_table *t, uint64_t need, uint32_t limit_elems) {
    uint64_t cap = (uint64_t)t->capacity * 2;
    uint64_t ceiling = t->max < limit_elems ? t->max : limit_elems;
    if (cap > ceiling) cap = ceiling;
    return cap > need ? cap : need;
}

int64_t table_grow(al_table *t, uint32_t delta, slot_t init, uint32_t limit_elems) {
    uint64_t old = t->size;
    uint64_t need = old + delta; /* 64-bit: cannot wrap */
    if (need > t->max || need > limit_elems) return -1;
    if (need > t->capacity) {
        uint64_t cap = grown_capacity(t, need, limit_elems);
        if (cap > SIZE_MAX / sizeof(slot_t)) return -1;
        slot_t *grown = realloc(t->elems, (size_t)cap * sizeof *grown);
        if (!grown) return -1; /* spec §4.4.6: growth may fail; the table is unchanged */
        t->elems = grown;
        t->capacity = (uint32_t)cap;
    }
    for (uint64_t i = old; i < need; i++) t->elems[i] = init;
    t->size = (uint32_t)need;
    return (int64_t)old;
}

void table_destroy(al_table *t) {
    if (!t) return;
    free(t->elems);
    free(t);
}

/* ---- public API ---------------------------------------------------------- */

al_table *al_table_new(al_store *store, al_valtype elem, uint32_t min, uint32_t max,
                       bool has_max, al_error *err) {
    /* The rules a module's table type obeys (spec §3.2.3). */
    if (!store || !wasm_is_reftype((uint8_t)elem) || (has_max && max < min)) {
        al_error_set(err, AL_ERR_ARGUMENT, "invalid table type");
        return NULL;
    }
    if (!store_has_room(store, 0, 1, 0, err)) return NULL;
    al_table *t = table_create((uint8_t)elem, min, max, has_max,
                               store->limits.max_table_elements, err);
    if (!t) return NULL;
    if (!store_track(store, STORE_TABLE, t)) {
        table_destroy(t);
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return t;
}

uint32_t al_table_size(const al_table *table) { return table ? table->size : 0; }
