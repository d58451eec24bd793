/*
 * instance.c — import sets, module instantiation (spec §4.5.4) and export
 * look-up.
 *
 * Instantiation follows the spec's steps in order:
 *   1. resolve every import by (module, name) and check it matches the
 *      declared external type (§4.5.2 "import matching"), before allocating;
 *   2. allocate the instance (§4.5.3): functions, tables, memories, globals
 *      (whose initialisers may read imported globals and name functions);
 *   3. run the element segments, then the data segments, in order (active
 *      ones are table.init/memory.init followed by a drop; declarative element
 *      segments are only dropped);
 *   4. invoke the start function.
 *
 * Invariants:
 *  - every object is tracked by the store right after its creation, so a
 *    failure at any step leaks nothing: the store frees it all later;
 *  - on failure the instance pointer is never returned. Objects written into
 *    imported tables/memories before a failing segment or start stay there
 *    (spec 2.0 semantics); they refer to a fully allocated instance because
 *    segments only run once allocation is complete;
 *  - the instance holds a reference on its module (released when the store
 *    frees the instance): defined functions point at its compiled code and
 *    types, exports are looked up in module->exports.
 *
 * An import set maps (module, name) -> extern. Names are kept with explicit
 * lengths because names copied from exports may contain NUL bytes. It is an
 * open-addressing hash (power-of-two capacity, at most half full) over an
 * entry array; a later definition of the same key replaces the earlier one.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* ---- import sets ---------------------------------------------------------- */

typedef struct import_entry {
    char *module;       /* one allocation: module, NUL, name, NUL */
    size_t module_len;
    char *name;
    size_t name_len;
    uint64_t hash;      /* key_hash of (module, name), kept for rehashing */
    al_extern ext;
} import_entry;

struct al_imports {
    import_entry *entries;
    size_t n, cap;
    size_t *index; /* entry position + 1; 0 = empty */
    size_t index_cap;
};

al_imports *al_imports_new(void) { return calloc(1, sizeof(al_imports)); }

void al_imports_free(al_imports *imports) {
    if (!imports) return;
    for (size_t i = 0; i < imports->n; i++) free(imports->entries[i].module);
    free(imports->entries);
    free(imports->index);
    free(imports);
}

/* Eight bytes per step (a multiply-xor mix): an embedder defines every WASI
 * function for each new store (a plugin instance), so hashing its ~45
 * names byte by byte showed up in instantiation time. Names come from the
 * embedder (definitions) or a module (look-ups only), so a crafted name can
 * at worst lengthen its own probe, bounded by the table's size. */
static uint64_t mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t n) {
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = mix(h, w);
    }
    w = 0;
    memcpy(&w, p, n);
    return mix(h, w ^ ((uint64_t)n << 56));
}

static uint64_t key_hash(const char *module, size_t module_len, const char *name,
                         size_t name_len) {
    return hash_bytes(hash_bytes(module_len, module, module_len), name, name_len);
}

static bool key_equal(const import_entry *e, uint64_t hash, const char *module,
                      size_t module_len, const char *name, size_t name_len) {
    return e->hash == hash && e->module_len == module_len && e->name_len == name_len &&
           memcmp(e->module, module, module_len) == 0 && memcmp(e->name, name, name_len) == 0;
}

/* Index slot holding the key, or the empty slot where it would go. */
static size_t index_slot(const al_imports *im, uint64_t hash, const char *module,
                         size_t module_len, const char *name, size_t name_len) {
    size_t mask = im->index_cap - 1;
    size_t i = (size_t)hash & mask;
    while (im->index[i] &&
           !key_equal(&im->entries[im->index[i] - 1], hash, module, module_len, name, name_len))
        i = (i + 1) & mask;
    return i;
}

static const al_extern *imports_find(const al_imports *im, const char *module,
                                     size_t module_len, const char *name, size_t name_len) {
    if (!im || im->index_cap == 0) return NULL;
    size_t slot = index_slot(im, key_hash(module, module_len, name, name_len), module,
                             module_len, name, name_len);
    return im->index[slot] ? &im->entries[im->index[slot] - 1].ext : NULL;
}

/* Entries are distinct keys: each goes in the first empty slot of its probe. */
static bool imports_rehash(al_imports *im, size_t cap) {
    size_t *index = calloc(cap, sizeof *index);
    if (!index) return false;
    free(im->index);
    im->index = index;
    im->index_cap = cap;
    for (size_t k = 0; k < im->n; k++) {
        size_t i = (size_t)im->entries[k].hash & (cap - 1);
        while (im->index[i]) i = (i + 1) & (cap - 1);
        im->index[i] = k + 1;
    }
    return true;
}

/* Room for one more entry in both the array and the index. */
static bool imports_reserve(al_imports *im) {
    if (im->n == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 16;
        import_entry *grown = realloc(im->entries, cap * sizeof *grown);
        if (!grown) return false;
        im->entries = grown;
        im->cap = cap;
    }
    if ((im->n + 1) * 2 > im->index_cap)
        return imports_rehash(im, im->index_cap ? im->index_cap * 2 : 64);
    return true;
}

/* module, NUL, name, NUL in one allocation (names may hold NUL bytes: the
 * lengths are what count). */
static char *copy_key(const char *module, size_t module_len, const char *name, size_t name_len) {
    if (module_len > SIZE_MAX / 2 - 2 || name_len > SIZE_MAX / 2 - 2) return NULL;
    char *c = malloc(module_len + name_len + 2);
    if (!c) return NULL;
    memcpy(c, module, module_len);
    c[module_len] = '\0';
    memcpy(c + module_len + 1, name, name_len);
    c[module_len + 1 + name_len] = '\0';
    return c;
}

static bool extern_is_valid(al_extern ext) {
    switch (ext.kind) {
    case AL_EXTERN_FUNC: return ext.of.func != NULL;
    case AL_EXTERN_TABLE: return ext.of.table != NULL;
    case AL_EXTERN_MEMORY: return ext.of.memory != NULL;
    case AL_EXTERN_GLOBAL: return ext.of.global != NULL;
    }
    return false;
}

static bool imports_define_n(al_imports *im, const char *module, size_t module_len,
                             const char *name, size_t name_len, al_extern ext) {
    if (!im || !module || !name || !extern_is_valid(ext)) return false;
    uint64_t hash = key_hash(module, module_len, name, name_len);
    if (im->index_cap) {
        size_t slot = index_slot(im, hash, module, module_len, name, name_len);
        if (im->index[slot]) {
            im->entries[im->index[slot] - 1].ext = ext;
            return true;
        }
    }
    if (!imports_reserve(im)) return false;
    char *key = copy_key(module, module_len, name, name_len);
    if (!key) return false;
    im->entries[im->n] = (import_entry){key, module_len, key + module_len + 1, name_len, hash, ext};
    im->index[index_slot(im, hash, module, module_len, name, name_len)] = im->n + 1;
    im->n++;
    return true;
}

bool al_imports_define(al_imports *imports, const char *module, const char *name,
                       al_extern ext) {
    if (!module || !name) return false;
    return imports_define_n(imports, module, strlen(module), name, strlen(name), ext);
}

static al_extern export_extern(const al_instance *inst, const wasm_export *ex) {
    al_extern ext;
    ext.kind = ex->kind;
    switch (ex->kind) {
    case AL_EXTERN_FUNC: ext.of.func = inst->funcs[ex->index]; break;
    case AL_EXTERN_TABLE: ext.of.table = inst->tables[ex->index]; break;
    case AL_EXTERN_MEMORY: ext.of.memory = inst->memories[ex->index]; break;
    case AL_EXTERN_GLOBAL: ext.of.global = inst->globals[ex->index]; break;
    }
    return ext;
}

bool al_imports_define_instance(al_imports *imports, const char *module,
                                al_instance *instance) {
    if (!imports || !module || !instance) return false;
    size_t module_len = strlen(module);
    const al_module *m = instance->module;
    for (uint32_t i = 0; i < m->nexports; i++) {
        const wasm_export *ex = &m->exports[i];
        if (!imports_define_n(imports, module, module_len, ex->name, ex->name_len,
                              export_extern(instance, ex)))
            return false;
    }
    return true;
}

/* ---- step 1: import resolution and matching (spec §4.5.2) ---------------- */

/* Limits subtyping (§4.5.2.3): the actual limits, with the current size as
 * min, must lie within the declared ones. */
static bool limits_match(uint64_t actual_min, bool actual_has_max, uint64_t actual_max,
                         const wasm_limits *declared) {
    if (actual_min < declared->min) return false;
    return !declared->has_max || (actual_has_max && actual_max <= declared->max);
}

static bool extern_matches(const al_module *m, const wasm_import *imp, al_extern ext) {
    if (ext.kind != imp->kind) return false;
    switch (imp->kind) {
    case AL_EXTERN_FUNC:
        return store_sig_equal(&ext.of.func->type, &m->types[imp->desc.func_type]);
    case AL_EXTERN_TABLE: {
        const al_table *t = ext.of.table;
        return t->elem_type == imp->desc.table.elem_type &&
               limits_match(t->size, t->has_max, t->max, &imp->desc.table.limits);
    }
    case AL_EXTERN_MEMORY: {
        const al_memory *mem = ext.of.memory;
        return limits_match(mem->size / WASM_PAGE_SIZE, mem->has_max, mem->max_pages,
                            &imp->desc.memory);
    }
    case AL_EXTERN_GLOBAL: {
        const al_global *g = ext.of.global;
        return g->type.type == imp->desc.global.type &&
               g->type.is_mutable == imp->desc.global.is_mutable;
    }
    }
    return false;
}

static bool resolve_imports(const al_module *m, const al_imports *imports, al_extern *out,
                            al_error *err) {
    for (uint32_t i = 0; i < m->nimports; i++) {
        const wasm_import *imp = &m->imports[i];
        const al_extern *ext =
            imports_find(imports, imp->module, imp->module_len, imp->name, imp->name_len);
        if (!ext) {
            al_error_set(err, AL_ERR_LINK, "unknown import: \"%.*s\" \"%.*s\"",
                         (int)imp->module_len, imp->module, (int)imp->name_len, imp->name);
            return false;
        }
        if (!extern_matches(m, imp, *ext)) {
            al_error_set(err, AL_ERR_LINK, "incompatible import type: \"%.*s\" \"%.*s\"",
                         (int)imp->module_len, imp->module, (int)imp->name_len, imp->name);
            return false;
        }
        out[i] = *ext;
    }
    return true;
}

/* ---- step 2: allocation (spec §4.5.3) ------------------------------------- */

static bool nomem(al_error *err) {
    al_error_set(err, AL_ERR_NOMEM, "out of memory during instantiation");
    return false;
}

/* The instance and its index-space arrays. The instance is tracked before
 * the arrays are allocated, so the store frees whatever part exists. */
static al_instance *instance_alloc(al_store *store, const al_module *m, al_error *err) {
    al_instance *inst = calloc(1, sizeof *inst);
    if (!inst || !store_track(store, STORE_INSTANCE, inst)) {
        free(inst);
        nomem(err);
        return NULL;
    }
    inst->store = store;
    inst->module = m;
    wasm_module_retain(m);
    /* calloc(0) may return NULL; one spare entry keeps NULL meaning "failed". */
    inst->funcs = calloc(m->nfuncs + 1ull, sizeof *inst->funcs);
    inst->tables = calloc(m->ntables + 1ull, sizeof *inst->tables);
    inst->memories = calloc(m->nmemories + 1ull, sizeof *inst->memories);
    inst->globals = calloc(m->nglobals + 1ull, sizeof *inst->globals);
    inst->sig_ids = calloc(m->ntypes + 1ull, sizeof *inst->sig_ids);
    inst->elem_dropped = calloc(m->nelems + 1ull, sizeof *inst->elem_dropped);
    inst->data_dropped = calloc(m->ndatas + 1ull, sizeof *inst->data_dropped);
    if (!inst->funcs || !inst->tables || !inst->memories || !inst->globals || !inst->sig_ids ||
        !inst->elem_dropped || !inst->data_dropped) {
        nomem(err);
        return NULL;
    }
    return inst;
}

/* Imports fill the front of each index space, in import order (§2.5.1). */
static void link_imports(al_instance *inst, const al_module *m, const al_extern *resolved) {
    uint32_t nf = 0, nt = 0, nm = 0, ng = 0;
    for (uint32_t i = 0; i < m->nimports; i++) {
        switch (resolved[i].kind) {
        case AL_EXTERN_FUNC: inst->funcs[nf++] = resolved[i].of.func; break;
        case AL_EXTERN_TABLE: inst->tables[nt++] = resolved[i].of.table; break;
        case AL_EXTERN_MEMORY: inst->memories[nm++] = resolved[i].of.memory; break;
        case AL_EXTERN_GLOBAL: inst->globals[ng++] = resolved[i].of.global; break;
        }
    }
}

static bool intern_types(al_instance *inst, const al_module *m, al_error *err) {
    for (uint32_t i = 0; i < m->ntypes; i++) {
        inst->sig_ids[i] = store_intern_sig(inst->store, &m->types[i]);
        if (inst->sig_ids[i] == UINT32_MAX) return nomem(err);
    }
    return true;
}

static bool alloc_funcs(al_instance *inst, const al_module *m, al_error *err) {
    for (uint32_t i = m->nfunc_imports; i < m->nfuncs; i++) {
        al_func *f = calloc(1, sizeof *f);
        if (!f) return nomem(err);
        if (!store_track(inst->store, STORE_FUNC, f)) {
            free(f);
            return nomem(err);
        }
        uint32_t type = m->func_types[i];
        f->type = m->types[type]; /* arrays stay owned by the module */
        f->sig_id = inst->sig_ids[type];
        f->instance = inst;
        f->code = m->funcs[i - m->nfunc_imports].code;
        f->index = i;
        inst->funcs[i] = f;
    }
    return true;
}

static bool alloc_tables(al_instance *inst, const al_module *m, al_error *err) {
    uint32_t limit = inst->store->limits.max_table_elements;
    for (uint32_t i = m->ntable_imports; i < m->ntables; i++) {
        const wasm_tabletype *tt = &m->tables[i];
        al_table *t = table_create(tt->elem_type, tt->limits.min, tt->limits.max,
                                   tt->limits.has_max, limit, err);
        if (!t) return false;
        if (!store_track(inst->store, STORE_TABLE, t)) {
            table_destroy(t);
            return nomem(err);
        }
        inst->tables[i] = t;
    }
    return true;
}

static bool alloc_memories(al_instance *inst, const al_module *m, al_error *err) {
    uint64_t limit = inst->store->limits.max_memory_bytes;
    for (uint32_t i = m->nmemory_imports; i < m->nmemories; i++) {
        const wasm_limits *l = &m->memories[i];
        al_memory *mem = memory_create(l->min, l->max, l->has_max, limit, err);
        if (!mem) return false;
        if (!store_track(inst->store, STORE_MEMORY, mem)) {
            memory_destroy(mem);
            return nomem(err);
        }
        inst->memories[i] = mem;
    }
    return true;
}

/* A validated constant expression (§3.3.10, §4.5.4 step "evaluate"): one
 * instruction, already decoded into op/value by validate.c. global.get only
 * names imported (hence already linked) globals in WebAssembly 2.0. */
static slot_t eval_const(const al_instance *inst, const wasm_const_expr *e) {
    switch (e->op) {
    case 0x41: return (uint32_t)e->value; /* i32.const: slots hold i32 zero-extended */
    case 0x42: return e->value;           /* i64.const */
    case 0x43: return (uint32_t)e->value; /* f32.const: raw bits */
    case 0x44: return e->value;           /* f64.const: raw bits */
    case 0x23: return inst->globals[e->value]->value;
    case 0xD0: return 0;                  /* ref.null */
    case 0xD2: return (uintptr_t)inst->funcs[e->value];
    }
    return 0;
}

static bool alloc_globals(al_instance *inst, const al_module *m, al_error *err) {
    for (uint32_t i = m->nglobal_imports; i < m->nglobals; i++) {
        al_global *g = calloc(1, sizeof *g);
        if (!g) return nomem(err);
        if (!store_track(inst->store, STORE_GLOBAL, g)) {
            free(g);
            return nomem(err);
        }
        g->type = m->globals[i];
        g->value = eval_const(inst, &m->global_inits[i - m->nglobal_imports]);
        inst->globals[i] = g;
    }
    return true;
}

/* ---- step 3: segments (spec §4.5.4, steps 12–13) ------------------------- */

/* A segment that does not fit traps; there is no guest frame, so the message
 * names the segment instead (backtrace_len stays 0). */
static bool segment_trap(al_error *err, al_trap_kind kind, const char *what, uint32_t index,
                         uint64_t offset, uint64_t count, uint64_t size) {
    al_error_set(err, AL_ERR_TRAP, "%s: %s segment %u at %llu with %llu entries exceeds size %llu",
                 al_trap_message(kind), what, index, (unsigned long long)offset,
                 (unsigned long long)count, (unsigned long long)size);
    if (err) {
        err->trap = kind;
        err->func_index = UINT32_MAX; /* not inside any function */
    }
    return false;
}

/* table.init t i (0, n) at offset d, then elem.drop i (§4.4.6). The check
 * d + n > size uses 64-bit math, so it cannot wrap; it traps even for n == 0
 * when d > size, as table.init does. */
static bool init_elem(al_instance *inst, const al_module *m, uint32_t i, al_error *err) {
    const wasm_elem *seg = &m->elems[i];
    if (seg->mode == WASM_SEGMENT_ACTIVE) {
        al_table *t = inst->tables[seg->table];
        uint64_t d = (uint32_t)eval_const(inst, &seg->offset);
        if (d + seg->count > t->size)
            return segment_trap(err, AL_TRAP_TABLE_OOB, "element", i, d, seg->count, t->size);
        for (uint32_t k = 0; k < seg->count; k++)
            t->elems[d + k] = eval_const(inst, &seg->items[k]);
    }
    if (seg->mode != WASM_SEGMENT_PASSIVE) inst->elem_dropped[i] = true;
    return true;
}

/* memory.init i (0, n) at offset d, then data.drop i (§4.4.7). */
static bool init_data(al_instance *inst, const al_module *m, uint32_t i, al_error *err) {
    const wasm_data *seg = &m->datas[i];
    if (seg->mode != WASM_SEGMENT_ACTIVE) return true;
    al_memory *mem = inst->memories[seg->memory];
    uint64_t d = (uint32_t)eval_const(inst, &seg->offset);
    if (d + seg->data_size > mem->size)
        return segment_trap(err, AL_TRAP_MEMORY_OOB, "data", i, d, seg->data_size, mem->size);
    if (seg->data_size) memcpy(mem->data + d, m->bytes + seg->data_offset, seg->data_size);
    inst->data_dropped[i] = true;
    return true;
}

static bool init_segments(al_instance *inst, const al_module *m, al_error *err) {
    for (uint32_t i = 0; i < m->nelems; i++)
        if (!init_elem(inst, m, i, err)) return false;
    for (uint32_t i = 0; i < m->ndatas; i++)
        if (!init_data(inst, m, i, err)) return false;
    return true;
}

/* ---- instantiation --------------------------------------------------------- */

static al_instance *instantiate(al_store *store, const al_module *m, const al_extern *resolved,
                                al_error *err) {
    al_instance *inst = instance_alloc(store, m, err);
    if (!inst) return NULL;
    link_imports(inst, m, resolved);
    if (!intern_types(inst, m, err) || !alloc_funcs(inst, m, err) ||
        !alloc_tables(inst, m, err) || !alloc_memories(inst, m, err))
        return NULL;
    inst->memory0 = m->nmemories ? inst->memories[0] : NULL;
    if (!alloc_globals(inst, m, err) || !init_segments(inst, m, err)) return NULL;
    /* Step 15: the start function; al_call handles host and wasm functions
     * alike and fills err on a trap. */
    if (m->has_start && !al_call(store, inst->funcs[m->start], NULL, 0, NULL, 0, err))
        return NULL;
    return inst;
}

/* Refuse, before anything is allocated, a module whose declarations alone
 * exceed the store's limits: its memory or table minimum, or the counts. */
static bool within_limits(const al_store *store, const al_module *m, al_error *err) {
    const al_limits *l = &store->limits;
    for (uint32_t i = m->nmemory_imports; i < m->nmemories; i++) {
        if ((uint64_t)m->memories[i].min * WASM_PAGE_SIZE > l->max_memory_bytes) {
            al_error_set(err, AL_ERR_LIMIT,
                         "memory %u declares a minimum of %u pages, over the limit of %llu bytes",
                         i, m->memories[i].min, (unsigned long long)l->max_memory_bytes);
            return false;
        }
    }
    for (uint32_t i = m->ntable_imports; i < m->ntables; i++) {
        if (m->tables[i].limits.min > l->max_table_elements) {
            al_error_set(err, AL_ERR_LIMIT,
                         "table %u declares a minimum of %u elements, over the limit of %u", i,
                         m->tables[i].limits.min, l->max_table_elements);
            return false;
        }
    }
    return store_has_room(store, 1, m->ntables - m->ntable_imports,
                          m->nmemories - m->nmemory_imports, err);
}

al_instance *al_instantiate(al_store *store, const al_module *module,
                            const al_imports *imports, al_error *err) {
    if (!store || !module) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_instantiate: NULL store or module");
        return NULL;
    }
    al_extern *resolved = calloc(module->nimports + 1ull, sizeof *resolved);
    if (!resolved) {
        nomem(err);
        return NULL;
    }
    al_instance *inst = NULL;
    if (resolve_imports(module, imports, resolved, err) && within_limits(store, module, err))
        inst = instantiate(store, module, resolved, err);
    free(resolved);
    if (inst && err) err->kind = AL_OK;
    return inst;
}

/* ---- exports ------------------------------------------------------------- */

bool al_instance_export_n(const al_instance *instance, const char *name, size_t len,
                          al_extern *out) {
    if (!instance || (!name && len)) return false;
    const al_module *m = instance->module;
    for (uint32_t i = 0; i < m->nexports; i++) {
        const wasm_export *ex = &m->exports[i];
        if (ex->name_len == len && (len == 0 || memcmp(ex->name, name, len) == 0)) {
            if (out) *out = export_extern(instance, ex);
            return true;
        }
    }
    return false;
}

bool al_instance_export(const al_instance *instance, const char *name, al_extern *out) {
    return name && al_instance_export_n(instance, name, strlen(name), out);
}

const al_functype *al_func_type(const al_func *func) { return func ? &func->type : NULL; }

al_memory *al_caller_memory(al_caller *caller) {
    if (!caller || !caller->instance) return NULL;
    al_extern ext;
    if (al_instance_export(caller->instance, "memory", &ext) && ext.kind == AL_EXTERN_MEMORY)
        return ext.of.memory;
    return caller->instance->module->nmemories ? caller->instance->memories[0] : NULL;
}
