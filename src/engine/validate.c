/*
 * validate.c — module-level validation (spec §3.4): everything except
 * function bodies, which compile.c validates while translating them.
 *
 * Input: a module accepted by decode.c (well-formed, const-expr extents
 * recorded). Output on success:
 *  - every type, function, table, memory and global index stored in the
 *    module is in range for its index space (module.h's invariant);
 *  - every wasm_const_expr has op/value filled with its single constant
 *    instruction, of the type its context requires;
 *  - declared_refs holds C.refs (§3.4.10).
 * Errors are AL_ERR_INVALID with the spec test suite's wording. Nothing here
 * allocates except declared_refs and a temporary array for export names.
 */
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "reader.h"

#define OP_END 0x0B
#define OP_GLOBAL_GET 0x23
#define OP_I32_CONST 0x41
#define OP_I64_CONST 0x42
#define OP_F32_CONST 0x43
#define OP_F64_CONST 0x44
#define OP_REF_NULL 0xD0
#define OP_REF_FUNC 0xD2

static const char *const extern_names[] = {"function", "table", "memory", "global"};

static bool invalid(al_error *err, const char *what, uint32_t index, const char *reason) {
    al_error_set(err, AL_ERR_INVALID, "%s %u: %s", what, index, reason);
    return false;
}

/* ---- constant expressions (§3.3.10) -------------------------------------- */

static bool is_constant_op(uint32_t op) {
    switch (op) {
    case OP_I32_CONST: case OP_I64_CONST: case OP_F32_CONST: case OP_F64_CONST:
    case OP_GLOBAL_GET: case OP_REF_NULL: case OP_REF_FUNC:
        return true;
    default:
        return false;
    }
}

static uint8_t const_type(const al_module *m, const wasm_instr *in) {
    switch (in->op) {
    case OP_I32_CONST: return AL_I32;
    case OP_I64_CONST: return AL_I64;
    case OP_F32_CONST: return AL_F32;
    case OP_F64_CONST: return AL_F64;
    case OP_GLOBAL_GET: return m->globals[in->idx].type;
    case OP_REF_NULL: return in->reftype;
    default: return AL_FUNCREF; /* ref.func */
    }
}

static uint64_t const_value(const wasm_instr *in) {
    switch (in->op) {
    case OP_GLOBAL_GET: case OP_REF_FUNC: return in->idx;
    case OP_REF_NULL: return in->reftype;
    default: return in->imm; /* i32 already sign-extended, floats as raw bits */
    }
}

/* One instruction's context rules. In WebAssembly 2.0 constant expressions
 * see only imported globals (§3.4.10, C'), which must be immutable: a
 * mutable or module-defined global would make initialisation order-dependent. */
static const char *check_const_instr(const al_module *m, const wasm_instr *in) {
    if (!is_constant_op(in->op)) return "constant expression required";
    if (in->op == OP_GLOBAL_GET) {
        if (in->idx >= m->nglobal_imports) return "unknown global";
        if (m->globals[in->idx].is_mutable) return "constant expression required";
    }
    if (in->op == OP_REF_FUNC && in->idx >= m->nfuncs) return "unknown function";
    return NULL;
}

/*
 * Check e is exactly one constant instruction of type `expected` followed by
 * the final `end`, and record it in e->op/e->value. Returns NULL or the
 * reason. Every instruction is checked for constness before the count and
 * type, matching the reference interpreter's order of errors.
 */
static const char *check_const_expr(const al_module *m, wasm_const_expr *e, uint8_t expected) {
    if (e->size == 0) { /* synthesised ref.func from a vec(funcidx) segment */
        if (e->value >= m->nfuncs) return "unknown function";
        return expected == AL_FUNCREF ? NULL : "type mismatch";
    }
    if ((uint64_t)e->offset + e->size > m->len) return "constant expression out of bounds";
    wasm_reader r = {m->bytes, m->bytes + e->offset, m->bytes + e->offset + e->size, NULL};
    wasm_instr first;
    memset(&first, 0, sizeof first);
    uint32_t nvalues = 0;
    for (;;) {
        wasm_instr in;
        if (!rd_instr(&r, &in)) return r.error; /* decode.c already read these bytes */
        if (in.op == OP_END && rd_eof(&r)) break;
        const char *why = check_const_instr(m, &in);
        if (why) return why;
        if (nvalues++ == 0) first = in;
    }
    if (nvalues != 1) return "type mismatch"; /* empty, or leaves several values */
    if (const_type(m, &first) != expected) return "type mismatch";
    e->op = (uint8_t)first.op;
    e->value = const_value(&first);
    return NULL;
}

/* ---- types of imports and definitions (§3.2) ----------------------------- */

static bool check_table_limits(al_error *err, uint32_t i, const wasm_limits *l) {
    if (l->has_max && l->min > l->max)
        return invalid(err, "table", i, "size minimum must not be greater than maximum");
    return true;
}

/* Memory limits are in pages; 65536 pages is the whole 32-bit address space. */
static bool check_memory_limits(al_error *err, uint32_t i, const wasm_limits *l) {
    static const char too_big[] = "memory size must be at most 65536 pages (4GiB)";
    if (l->min > WASM_MAX_PAGES) return invalid(err, "memory", i, too_big);
    if (l->has_max && l->max > WASM_MAX_PAGES) return invalid(err, "memory", i, too_big);
    if (l->has_max && l->min > l->max)
        return invalid(err, "memory", i, "size minimum must not be greater than maximum");
    return true;
}

static bool check_func_types(const al_module *m, al_error *err) {
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (m->func_types[i] >= m->ntypes) return invalid(err, "function", i, "unknown type");
    return true;
}

static bool check_tables_memories(const al_module *m, al_error *err) {
    for (uint32_t i = 0; i < m->ntables; i++)
        if (!check_table_limits(err, i, &m->tables[i].limits)) return false;
    /* WebAssembly 2.0 allows one memory, imported or defined (§3.4.10). */
    if (m->nmemories > WASM_MAX_MEMORIES) return invalid(err, "memory", 1, "multiple memories");
    for (uint32_t i = 0; i < m->nmemories; i++)
        if (!check_memory_limits(err, i, &m->memories[i])) return false;
    return true;
}

static bool check_globals(al_module *m, al_error *err) {
    for (uint32_t i = m->nglobal_imports; i < m->nglobals; i++) {
        wasm_const_expr *init = &m->global_inits[i - m->nglobal_imports];
        const char *why = check_const_expr(m, init, m->globals[i].type);
        if (why) return invalid(err, "global", i, why);
    }
    return true;
}

/* ---- exports and start (§3.4.8, §3.4.9) ---------------------------------- */

static int compare_export_names(const void *a, const void *b) {
    const wasm_export *x = *(const wasm_export *const *)a;
    const wasm_export *y = *(const wasm_export *const *)b;
    if (x->name_len != y->name_len) return x->name_len < y->name_len ? -1 : 1;
    return memcmp(x->name, y->name, x->name_len);
}

/* Names must be unique. Sorting keeps this O(n log n): a pairwise check over
 * 100000 hostile exports would be a cheap denial of service. */
static bool check_export_names(const al_module *m, al_error *err) {
    if (m->nexports < 2) return true;
    const wasm_export **sorted = malloc(m->nexports * sizeof *sorted);
    if (sorted == NULL) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < m->nexports; i++) sorted[i] = &m->exports[i];
    qsort(sorted, m->nexports, sizeof *sorted, compare_export_names);
    bool ok = true;
    for (uint32_t i = 1; i < m->nexports && ok; i++)
        if (compare_export_names(&sorted[i - 1], &sorted[i]) == 0)
            ok = invalid(err, "export", (uint32_t)(sorted[i] - m->exports), "duplicate export name");
    free(sorted);
    return ok;
}

static uint32_t index_space_size(const al_module *m, al_extern_kind kind) {
    switch (kind) {
    case AL_EXTERN_FUNC: return m->nfuncs;
    case AL_EXTERN_TABLE: return m->ntables;
    case AL_EXTERN_MEMORY: return m->nmemories;
    default: return m->nglobals;
    }
}

static bool check_exports(const al_module *m, al_error *err) {
    static const char *const unknown[] = {"unknown function", "unknown table",
                                          "unknown memory", "unknown global"};
    for (uint32_t i = 0; i < m->nexports; i++) {
        const wasm_export *e = &m->exports[i];
        if (e->index >= index_space_size(m, e->kind))
            return invalid(err, extern_names[e->kind], e->index, unknown[e->kind]);
    }
    return check_export_names(m, err);
}

static bool check_start(const al_module *m, al_error *err) {
    if (!m->has_start) return true;
    if (m->start >= m->nfuncs) return invalid(err, "start", m->start, "unknown function");
    const al_functype *ft = wasm_func_type(m, m->start);
    if (ft->nparams != 0 || ft->nresults != 0) return invalid(err, "start", m->start, "start function");
    return true;
}

/* ---- element and data segments (§3.4.6, §3.4.7) -------------------------- */

static bool check_elem(al_module *m, al_error *err, uint32_t i) {
    wasm_elem *e = &m->elems[i];
    for (uint32_t k = 0; k < e->count; k++) {
        const char *why = check_const_expr(m, &e->items[k], e->elem_type);
        if (why) return invalid(err, "element segment", i, why);
    }
    if (e->mode != WASM_SEGMENT_ACTIVE) return true;
    if (e->table >= m->ntables) return invalid(err, "element segment", i, "unknown table");
    const char *why = check_const_expr(m, &e->offset, AL_I32);
    if (why) return invalid(err, "element segment", i, why);
    if (m->tables[e->table].elem_type != e->elem_type)
        return invalid(err, "element segment", i, "type mismatch");
    return true;
}

static bool check_data(al_module *m, al_error *err, uint32_t i) {
    wasm_data *d = &m->datas[i];
    if (d->mode != WASM_SEGMENT_ACTIVE) return true;
    if (d->memory >= m->nmemories) return invalid(err, "data segment", i, "unknown memory");
    const char *why = check_const_expr(m, &d->offset, AL_I32);
    if (why) return invalid(err, "data segment", i, why);
    return true;
}

static bool check_segments(al_module *m, al_error *err) {
    for (uint32_t i = 0; i < m->nelems; i++)
        if (!check_elem(m, err, i)) return false;
    for (uint32_t i = 0; i < m->ndatas; i++)
        if (!check_data(m, err, i)) return false;
    return true;
}

/* ---- C.refs (§3.4.10) ----------------------------------------------------- */

/* Functions that ref.func may name inside function bodies: those referenced
 * anywhere in the module outside function bodies and the start section —
 * global initialisers, element items, and exports. Const exprs have been
 * checked, so every index here is in range. */
static bool compute_declared_refs(al_module *m, al_error *err) {
    if (m->nfuncs == 0) return true;
    m->declared_refs = calloc(m->nfuncs, sizeof *m->declared_refs);
    if (m->declared_refs == NULL) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i + m->nglobal_imports < m->nglobals; i++)
        if (m->global_inits[i].op == OP_REF_FUNC) m->declared_refs[m->global_inits[i].value] = true;
    for (uint32_t i = 0; i < m->nelems; i++)
        for (uint32_t k = 0; k < m->elems[i].count; k++)
            if (m->elems[i].items[k].op == OP_REF_FUNC)
                m->declared_refs[m->elems[i].items[k].value] = true;
    for (uint32_t i = 0; i < m->nexports; i++)
        if (m->exports[i].kind == AL_EXTERN_FUNC) m->declared_refs[m->exports[i].index] = true;
    return true;
}

bool wasm_validate_module(al_module *m, al_error *err) {
    return check_func_types(m, err) && check_tables_memories(m, err) &&
           check_globals(m, err) && check_exports(m, err) && check_start(m, err) &&
           check_segments(m, err) && compute_declared_refs(m, err);
}
