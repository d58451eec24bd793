/*
 * decode.c — the binary format of a WebAssembly 2.0 module (spec §5.5):
 * bytes -> al_module, rejecting malformed input (AL_ERR_MALFORMED).
 *
 * The input is hostile. Invariants this file maintains:
 *  - every read goes through a wasm_reader bounded to the current section
 *    (or function body), so no length in the input can make us read past it;
 *  - every count read from the input is checked against the bytes that could
 *    possibly encode that many entries, and against the WASM_MAX_* limits,
 *    BEFORE anything is allocated (a 10-byte module claiming 2^32 entries
 *    must fail, not ask for gigabytes);
 *  - everything allocated is hung on the module at once, with counts that
 *    describe exactly what is initialised, so wasm_module_free() can release
 *    a half-decoded module on every error path;
 *  - offsets stored in the module (const exprs, bodies, data) index
 *    module->bytes, a private copy, so they stay valid after the caller frees
 *    its buffer.
 * Decoding checks only well-formedness; index ranges and typing are left to
 * validate.c (module level) and compile.c (function bodies).
 */
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "reader.h"

/* Section ids (§5.5.2). */
enum {
    SEC_CUSTOM = 0, SEC_TYPE, SEC_IMPORT, SEC_FUNCTION, SEC_TABLE, SEC_MEMORY,
    SEC_GLOBAL, SEC_EXPORT, SEC_START, SEC_ELEMENT, SEC_CODE, SEC_DATA,
    SEC_DATA_COUNT, SEC_COUNT
};

static const char *const section_names[SEC_COUNT] = {
    "custom", "type", "import", "function", "table", "memory", "global",
    "export", "start", "element", "code", "data", "data count",
};

/* Position of each section id in the required order (§5.5.2): data count
 * sits between element and code. Custom sections (rank 0) may go anywhere. */
static const unsigned section_rank[SEC_COUNT] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 10,
};

/* Several memories are a validation error ("multiple memories"), not a
 * malformed module, so the decoder accepts more than WASM_MAX_MEMORIES and
 * only bounds the count like any other. */
#define DECODE_MAX_MEMORIES WASM_MAX_TABLES

#define OP_BLOCK 0x02
#define OP_LOOP 0x03
#define OP_IF 0x04
#define OP_END 0x0B
#define OP_REF_FUNC 0xD2

typedef struct decoder {
    al_module *m;
    al_error *err;
    const char *section;    /* name of the section being decoded, for messages */
    uint32_t nfunc_decls;   /* entries of the function section */
    uint32_t ncode;         /* entries of the code section */
    uint64_t total_locals;  /* over all bodies, against WASM_MAX_MODULE_LOCALS */
    uint64_t total_items;   /* over all elem segments, against WASM_MAX_ELEM_ITEMS */
    bool uses_data_index;   /* some body has memory.init or data.drop ... */
    uint32_t data_index_at; /* ... first one at this offset */
    bool have_data_section;
    const uint8_t *names;   /* payload of the first "name" custom section, or NULL */
    const uint8_t *names_end;
} decoder;

/* ---- errors ------------------------------------------------------------- */

static bool fail_kind(decoder *d, al_error_kind kind, uint32_t offset, const char *reason) {
    al_error_set(d->err, kind, "section %s at offset 0x%x: %s", d->section, offset, reason);
    return false;
}

static bool fail_at(decoder *d, uint32_t offset, const char *reason) {
    return fail_kind(d, AL_ERR_MALFORMED, offset, reason);
}

/* A reader failed: report its reason at its position. */
static bool fail_rd(decoder *d, const wasm_reader *r) {
    return fail_at(d, rd_offset(r), r->error ? r->error : "unexpected end");
}

static bool fail_nomem(decoder *d, const wasm_reader *r) {
    return fail_kind(d, AL_ERR_NOMEM, rd_offset(r), "out of memory");
}

static size_t rd_remaining(const wasm_reader *r) {
    return r->p < r->end ? (size_t)(r->end - r->p) : 0;
}

/* calloc that never returns NULL for n == 0, so NULL always means failure. */
static void *alloc_array(size_t n, size_t size) { return calloc(n ? n : 1, size); }

/* NUL-terminated copy of a wasm name (which may itself contain NULs). */
static char *copy_name(const uint8_t *s, uint32_t len) {
    char *out = malloc((size_t)len + 1);
    if (out == NULL) return NULL;
    memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

/*
 * Read a vector length (§5.1.3) and refuse it unless the rest of the section
 * could hold that many entries of at least min_size bytes each, and it is
 * within the implementation limit. Both checks happen before the caller
 * allocates, which is what stops a tiny module from requesting huge arrays.
 */
static bool read_count(decoder *d, wasm_reader *r, size_t min_size, uint32_t limit,
                       uint32_t *out) {
    uint32_t start = rd_offset(r);
    uint32_t n;
    *out = 0;
    if (!rd_u32(r, &n)) return fail_rd(d, r);
    if ((uint64_t)n * min_size > rd_remaining(r)) return fail_at(d, start, "length out of bounds");
    if (n > limit) return fail_kind(d, AL_ERR_LIMIT, start, "too many entries");
    *out = n;
    return true;
}

/* ---- shared pieces (§5.3 types, §5.4.9 expressions) --------------------- */

static bool read_valtype(decoder *d, wasm_reader *r, uint8_t *out) {
    uint8_t t;
    if (!rd_u8(r, &t)) return fail_rd(d, r);
    /* 0x7B (v128) is SIMD, outside this engine's WebAssembly 2.0 subset. */
    if (!wasm_is_valtype(t)) return fail_at(d, rd_offset(r) - 1, "malformed value type");
    *out = t;
    return true;
}

static bool read_reftype(decoder *d, wasm_reader *r, uint8_t *out) {
    uint8_t t;
    if (!rd_u8(r, &t)) return fail_rd(d, r);
    if (!wasm_is_reftype(t)) return fail_at(d, rd_offset(r) - 1, "malformed reference type");
    *out = t;
    return true;
}

/* Limits (§5.3.7): flag 0x00 min, or 0x01 min max. The flag is a byte; the
 * reference interpreter reads it as a LEB, hence its wording for bad flags. */
static bool read_limits(decoder *d, wasm_reader *r, wasm_limits *out) {
    uint8_t flag;
    if (!rd_u8(r, &flag)) return fail_rd(d, r);
    if (flag > 1)
        return fail_at(d, rd_offset(r) - 1,
                       (flag & 0x80) ? "integer representation too long" : "integer too large");
    out->has_max = flag == 1;
    out->max = 0;
    if (!rd_u32(r, &out->min)) return fail_rd(d, r);
    if (out->has_max && !rd_u32(r, &out->max)) return fail_rd(d, r);
    return true;
}

static bool read_tabletype(decoder *d, wasm_reader *r, wasm_tabletype *out) {
    return read_reftype(d, r, &out->elem_type) && read_limits(d, r, &out->limits);
}

static bool read_globaltype(decoder *d, wasm_reader *r, wasm_globaltype *out) {
    if (!read_valtype(d, r, &out->type)) return false;
    uint8_t mut;
    if (!rd_u8(r, &mut)) return fail_rd(d, r);
    if (mut > 1) return fail_at(d, rd_offset(r) - 1, "malformed mutability");
    out->is_mutable = mut == 1;
    return true;
}

static bool is_block_start(uint32_t op) { return op == OP_BLOCK || op == OP_LOOP || op == OP_IF; }

/*
 * A constant expression (§5.4.9): any instruction sequence up to the `end`
 * that closes it. Only its extent is recorded here (op = 0); validate.c
 * decides whether it is constant and well-typed. Nested blocks are followed
 * so the right `end` is found, as the reference interpreter does.
 */
static bool read_const_expr(decoder *d, wasm_reader *r, wasm_const_expr *out) {
    out->offset = rd_offset(r);
    out->op = 0;
    out->value = 0;
    uint32_t depth = 0; /* cannot overflow: each level costs >= 2 input bytes */
    for (;;) {
        wasm_instr in;
        if (!rd_instr(r, &in)) return fail_rd(d, r);
        if (is_block_start(in.op)) {
            depth++;
        } else if (in.op == OP_END) {
            if (depth == 0) break;
            depth--;
        }
    }
    out->size = rd_offset(r) - out->offset;
    return true;
}

/* ---- type section (§5.5.4) ---------------------------------------------- */

/* vec(valtype) copied into the type pool. The pool is as large as the whole
 * section, so it cannot overflow: every value type is one section byte. */
static bool read_result_type(decoder *d, wasm_reader *r, uint32_t limit, uint32_t *count,
                             const uint8_t **types, size_t *pool_used) {
    uint32_t start = rd_offset(r);
    uint32_t n;
    if (!rd_u32(r, &n)) return fail_rd(d, r);
    if (n > rd_remaining(r)) return fail_at(d, start, "length out of bounds");
    if (n > limit) return fail_kind(d, AL_ERR_LIMIT, start, "too many parameters or results");
    uint8_t *dst = d->m->type_pool + *pool_used;
    for (uint32_t i = 0; i < n; i++)
        if (!read_valtype(d, r, &dst[i])) return false;
    *count = n;
    *types = dst;
    *pool_used += n;
    return true;
}

static bool decode_type_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 3, WASM_MAX_TYPES, &n)) return false;
    m->type_pool = alloc_array(rd_remaining(r), 1);
    m->types = alloc_array(n, sizeof *m->types);
    if (m->type_pool == NULL || m->types == NULL) return fail_nomem(d, r);
    m->ntypes = n;
    size_t used = 0;
    for (uint32_t i = 0; i < n; i++) {
        al_functype *ft = &m->types[i];
        uint8_t form;
        if (!rd_u8(r, &form)) return fail_rd(d, r);
        if (form != 0x60)
            return fail_at(d, rd_offset(r) - 1,
                           (form & 0x80) ? "integer representation too long"
                                         : "malformed function type");
        if (!read_result_type(d, r, WASM_MAX_FUNC_PARAMS, &ft->nparams, &ft->params, &used) ||
            !read_result_type(d, r, WASM_MAX_FUNC_RESULTS, &ft->nresults, &ft->results, &used))
            return false;
    }
    return true;
}

/* ---- import section (§5.5.5) -------------------------------------------- */

static bool read_owned_name(decoder *d, wasm_reader *r, char **out, uint32_t *len) {
    const uint8_t *s;
    if (!rd_name(r, &s, len)) return fail_rd(d, r);
    *out = copy_name(s, *len);
    if (*out == NULL) return fail_nomem(d, r);
    return true;
}

static bool read_import_desc(decoder *d, wasm_reader *r, wasm_import *imp) {
    al_module *m = d->m;
    uint8_t kind;
    if (!rd_u8(r, &kind)) return fail_rd(d, r);
    switch (kind) {
    case AL_EXTERN_FUNC:
        if (!rd_u32(r, &imp->desc.func_type)) return fail_rd(d, r);
        m->nfunc_imports++;
        m->nfuncs++; /* keep nfuncs >= nfunc_imports for wasm_module_free */
        break;
    case AL_EXTERN_TABLE:
        if (!read_tabletype(d, r, &imp->desc.table)) return false;
        m->ntable_imports++;
        break;
    case AL_EXTERN_MEMORY:
        if (!read_limits(d, r, &imp->desc.memory)) return false;
        m->nmemory_imports++;
        break;
    case AL_EXTERN_GLOBAL:
        if (!read_globaltype(d, r, &imp->desc.global)) return false;
        m->nglobal_imports++;
        break;
    default:
        return fail_at(d, rd_offset(r) - 1, "malformed import kind");
    }
    imp->kind = (al_extern_kind)kind;
    return true;
}

static bool decode_import_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    /* Two name lengths and the kind byte: 3 bytes at least. (The descriptor
     * adds one more, but counting it would report "length out of bounds"
     * where the reference interpreter says "malformed import kind".) */
    if (!read_count(d, r, 3, WASM_MAX_IMPORTS, &n)) return false;
    m->imports = alloc_array(n, sizeof *m->imports);
    if (m->imports == NULL) return fail_nomem(d, r);
    m->nimports = n; /* entries are zeroed: names NULL until read */
    for (uint32_t i = 0; i < n; i++) {
        wasm_import *imp = &m->imports[i];
        if (!read_owned_name(d, r, &imp->module, &imp->module_len) ||
            !read_owned_name(d, r, &imp->name, &imp->name_len) ||
            !read_import_desc(d, r, imp))
            return false;
    }
    return true;
}

/* ---- function, table, memory, global sections (§5.5.6-§5.5.9) ----------- */

static bool decode_function_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 1, WASM_MAX_FUNCTIONS - m->nfunc_imports, &n)) return false;
    m->funcs = alloc_array(n, sizeof *m->funcs);
    if (m->funcs == NULL) return fail_nomem(d, r);
    m->nfuncs = m->nfunc_imports + n;
    d->nfunc_decls = n;
    for (uint32_t i = 0; i < n; i++)
        if (!rd_u32(r, &m->funcs[i].type)) return fail_rd(d, r);
    return true;
}

/* Copy the imported entries of one kind, in import order, to the front of
 * an index space (§2.5.1: imports come first in every index space). */
static void copy_imported_tables(al_module *m) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nimports; i++)
        if (m->imports[i].kind == AL_EXTERN_TABLE) m->tables[k++] = m->imports[i].desc.table;
}

static void copy_imported_memories(al_module *m) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nimports; i++)
        if (m->imports[i].kind == AL_EXTERN_MEMORY) m->memories[k++] = m->imports[i].desc.memory;
}

static void copy_imported_globals(al_module *m) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nimports; i++)
        if (m->imports[i].kind == AL_EXTERN_GLOBAL) m->globals[k++] = m->imports[i].desc.global;
}

static bool decode_table_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    /* Minimum entry sizes here count only the bytes before the limits flag,
     * so a bad flag is reported as such (the reference interpreter's wording). */
    if (!read_count(d, r, 2, WASM_MAX_TABLES - m->ntable_imports, &n)) return false;
    m->tables = alloc_array((size_t)m->ntable_imports + n, sizeof *m->tables);
    if (m->tables == NULL) return fail_nomem(d, r);
    m->ntables = m->ntable_imports + n;
    copy_imported_tables(m);
    for (uint32_t i = 0; i < n; i++)
        if (!read_tabletype(d, r, &m->tables[m->ntable_imports + i])) return false;
    return true;
}

static bool decode_memory_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 1, DECODE_MAX_MEMORIES - m->nmemory_imports, &n)) return false;
    m->memories = alloc_array((size_t)m->nmemory_imports + n, sizeof *m->memories);
    if (m->memories == NULL) return fail_nomem(d, r);
    m->nmemories = m->nmemory_imports + n;
    copy_imported_memories(m);
    for (uint32_t i = 0; i < n; i++)
        if (!read_limits(d, r, &m->memories[m->nmemory_imports + i])) return false;
    return true;
}

static bool decode_global_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 3, WASM_MAX_GLOBALS - m->nglobal_imports, &n)) return false;
    m->globals = alloc_array((size_t)m->nglobal_imports + n, sizeof *m->globals);
    m->global_inits = alloc_array(n, sizeof *m->global_inits);
    if (m->globals == NULL || m->global_inits == NULL) return fail_nomem(d, r);
    m->nglobals = m->nglobal_imports + n;
    copy_imported_globals(m);
    for (uint32_t i = 0; i < n; i++) {
        if (!read_globaltype(d, r, &m->globals[m->nglobal_imports + i]) ||
            !read_const_expr(d, r, &m->global_inits[i]))
            return false;
    }
    return true;
}

/* ---- export and start sections (§5.5.10, §5.5.11) ----------------------- */

static bool decode_export_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 3, WASM_MAX_EXPORTS, &n)) return false;
    m->exports = alloc_array(n, sizeof *m->exports);
    if (m->exports == NULL) return fail_nomem(d, r);
    m->nexports = n;
    for (uint32_t i = 0; i < n; i++) {
        wasm_export *e = &m->exports[i];
        if (!read_owned_name(d, r, &e->name, &e->name_len)) return false;
        uint8_t kind;
        if (!rd_u8(r, &kind)) return fail_rd(d, r);
        if (kind > AL_EXTERN_GLOBAL) return fail_at(d, rd_offset(r) - 1, "malformed export kind");
        e->kind = (al_extern_kind)kind;
        if (!rd_u32(r, &e->index)) return fail_rd(d, r);
    }
    return true;
}

static bool decode_start_section(decoder *d, wasm_reader *r) {
    if (!rd_u32(r, &d->m->start)) return fail_rd(d, r);
    d->m->has_start = true;
    return true;
}

/* ---- element section (§5.5.12) ------------------------------------------ */

/* Allocate a segment's items, charging them to the module-wide budget. */
static bool alloc_items(decoder *d, wasm_reader *r, wasm_elem *e, uint32_t n) {
    d->total_items += n;
    if (d->total_items > WASM_MAX_ELEM_ITEMS)
        return fail_kind(d, AL_ERR_LIMIT, rd_offset(r), "too many element segment items");
    e->items = alloc_array(n, sizeof *e->items);
    if (e->items == NULL) return fail_nomem(d, r);
    e->count = n;
    return true;
}

/* Flags 0-3: vec(funcidx). Synthesise `ref.func x` items (size 0, op set)
 * so later stages see one representation for both encodings. */
static bool read_elem_funcidxs(decoder *d, wasm_reader *r, wasm_elem *e) {
    uint32_t n;
    if (!read_count(d, r, 1, UINT32_MAX, &n) || !alloc_items(d, r, e, n)) return false;
    for (uint32_t i = 0; i < n; i++) {
        wasm_const_expr *it = &e->items[i];
        it->offset = rd_offset(r);
        it->size = 0;
        it->op = OP_REF_FUNC;
        uint32_t x;
        if (!rd_u32(r, &x)) return fail_rd(d, r);
        it->value = x;
    }
    return true;
}

/* Flags 4-7: vec(expr). */
static bool read_elem_exprs(decoder *d, wasm_reader *r, wasm_elem *e) {
    uint32_t n;
    if (!read_count(d, r, 2, UINT32_MAX, &n) || !alloc_items(d, r, e, n)) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!read_const_expr(d, r, &e->items[i])) return false;
    return true;
}

/*
 * One segment. The flag's three bits (§5.5.12): bit 0 passive/declarative,
 * bit 1 explicit table index (active) or declarative (otherwise), bit 2
 * items as expressions instead of function indices.
 */
static bool read_elem(decoder *d, wasm_reader *r, wasm_elem *e) {
    uint32_t start = rd_offset(r);
    uint32_t flags;
    if (!rd_u32(r, &flags)) return fail_rd(d, r);
    if (flags > 7) return fail_at(d, start, "malformed elements segment kind");
    bool active = !(flags & 1), explicit_type = (flags & 3) != 0, exprs = (flags & 4) != 0;
    e->elem_type = AL_FUNCREF;
    e->table = 0;
    if (active) {
        e->mode = WASM_SEGMENT_ACTIVE;
        if ((flags & 2) && !rd_u32(r, &e->table)) return fail_rd(d, r);
        if (!read_const_expr(d, r, &e->offset)) return false;
    } else {
        e->mode = (flags & 2) ? WASM_SEGMENT_DECLARATIVE : WASM_SEGMENT_PASSIVE;
    }
    if (explicit_type) {
        if (exprs) {
            if (!read_reftype(d, r, &e->elem_type)) return false;
        } else {
            uint8_t kind;
            if (!rd_u8(r, &kind)) return fail_rd(d, r);
            if (kind != 0x00) return fail_at(d, rd_offset(r) - 1, "malformed element kind");
        }
    }
    return exprs ? read_elem_exprs(d, r, e) : read_elem_funcidxs(d, r, e);
}

static bool decode_element_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    if (!read_count(d, r, 3, WASM_MAX_SEGMENTS, &n)) return false;
    m->elems = alloc_array(n, sizeof *m->elems);
    if (m->elems == NULL) return fail_nomem(d, r);
    m->nelems = n; /* zeroed: items NULL until allocated */
    for (uint32_t i = 0; i < n; i++)
        if (!read_elem(d, r, &m->elems[i])) return false;
    return true;
}

/* ---- code section (§5.5.13) --------------------------------------------- */

/*
 * Locals: vec(count valtype). The total is summed in 64 bits: the spec caps
 * it at 2^32-1 (malformed beyond), and it must not wrap before our own,
 * much lower, WASM_MAX_LOCALS is applied. Two passes: check and sum first,
 * then allocate exactly nlocals bytes and expand.
 */
static bool decode_locals(decoder *d, wasm_reader *r, wasm_func *f) {
    al_module *m = d->m;
    uint32_t start = rd_offset(r);
    uint32_t ngroups;
    if (!read_count(d, r, 2, UINT32_MAX, &ngroups)) return false;
    const uint8_t *groups = r->p;
    uint64_t total = 0;
    for (uint32_t i = 0; i < ngroups; i++) {
        uint32_t cnt;
        uint8_t t;
        if (!rd_u32(r, &cnt)) return fail_rd(d, r);
        if (!read_valtype(d, r, &t)) return false;
        total += cnt;
    }
    uint64_t params = f->type < m->ntypes ? m->types[f->type].nparams : 0;
    if (total + params > UINT32_MAX) return fail_at(d, start, "too many locals");
    if (total + params > WASM_MAX_LOCALS)
        return fail_kind(d, AL_ERR_LIMIT, start, "too many locals");
    d->total_locals += total;
    if (d->total_locals > WASM_MAX_MODULE_LOCALS)
        return fail_kind(d, AL_ERR_LIMIT, start, "too many locals in module");
    f->local_types = alloc_array((size_t)total, 1);
    if (f->local_types == NULL) return fail_nomem(d, r);
    f->nlocals = (uint32_t)total;
    /* Second pass over bytes already checked above: cannot fail. */
    wasm_reader again = {r->base, groups, r->p, NULL};
    uint32_t k = 0;
    for (uint32_t i = 0; i < ngroups; i++) {
        uint32_t cnt;
        uint8_t t;
        (void)rd_u32(&again, &cnt);
        (void)rd_u8(&again, &t);
        memset(f->local_types + k, t, cnt);
        k += cnt;
    }
    return true;
}

/*
 * Walk the body instruction by instruction, following block nesting, so
 * the body ends exactly with the `end` that closes the function (§5.5.13).
 * This also rejects unknown opcodes and bad immediates up front, and notes
 * uses of memory.init/data.drop for the data count rule (finish_module).
 */
static bool scan_body(decoder *d, wasm_reader *r, wasm_func *f) {
    uint64_t depth = 1; /* the function's own block */
    f->nconst_instrs = 0;
    while (depth > 0) {
        if (rd_eof(r)) return fail_at(d, rd_offset(r), "END opcode expected");
        wasm_instr in;
        if (!rd_instr(r, &in)) return fail_rd(d, r);
        if (is_block_start(in.op)) depth++;
        else if (in.op == OP_END) depth--;
        else if ((in.op >= 0x41 && in.op <= 0x44) || in.op == 0xD0)
            f->nconst_instrs++; /* lets compile.c size the const area without a rescan */
        else if (wasm_op_uses_data_index(in.op) && !d->uses_data_index) {
            d->uses_data_index = true;
            d->data_index_at = in.offset;
        }
    }
    if (!rd_eof(r)) return fail_at(d, rd_offset(r), "section size mismatch");
    return true;
}

static bool read_code_entry(decoder *d, wasm_reader *r, wasm_func *f) {
    uint32_t start = rd_offset(r);
    uint32_t size;
    if (!rd_u32(r, &size)) return fail_rd(d, r);
    if (size > rd_remaining(r)) return fail_at(d, start, "length out of bounds");
    if (size > WASM_MAX_FUNCTION_SIZE) return fail_kind(d, AL_ERR_LIMIT, start, "function too large");
    wasm_reader body = {r->base, r->p, r->p + size, NULL};
    r->p += size;
    if (!decode_locals(d, &body, f)) return false;
    f->body_offset = rd_offset(&body);
    if (!scan_body(d, &body, f)) return false;
    f->body_size = rd_offset(&body) - f->body_offset;
    return true;
}

static bool decode_code_section(decoder *d, wasm_reader *r) {
    uint32_t start = rd_offset(r);
    uint32_t n;
    if (!rd_u32(r, &n)) return fail_rd(d, r);
    /* Checked before anything else: funcs[] was sized by the function section. */
    if (n != d->nfunc_decls)
        return fail_at(d, start, "function and code section have inconsistent lengths");
    d->ncode = n;
    for (uint32_t i = 0; i < n; i++)
        if (!read_code_entry(d, r, &d->m->funcs[i])) return false;
    return true;
}

/* ---- data and data count sections (§5.5.14, §5.5.15) -------------------- */

static bool read_data(decoder *d, wasm_reader *r, wasm_data *seg) {
    uint32_t start = rd_offset(r);
    uint32_t flags;
    if (!rd_u32(r, &flags)) return fail_rd(d, r);
    if (flags > 2) return fail_at(d, start, "malformed data segment kind");
    seg->memory = 0;
    seg->mode = flags == 1 ? WASM_SEGMENT_PASSIVE : WASM_SEGMENT_ACTIVE;
    if (flags == 2 && !rd_u32(r, &seg->memory)) return fail_rd(d, r);
    if (flags != 1 && !read_const_expr(d, r, &seg->offset)) return false;
    uint32_t size;
    const uint8_t *bytes;
    if (!rd_u32(r, &size)) return fail_rd(d, r);
    if (!rd_bytes(r, size, &bytes)) return fail_rd(d, r);
    seg->data_offset = (uint32_t)(bytes - r->base);
    seg->data_size = size;
    return true;
}

static bool decode_data_section(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    uint32_t n;
    d->have_data_section = true;
    if (!read_count(d, r, 2, WASM_MAX_SEGMENTS, &n)) return false;
    m->datas = alloc_array(n, sizeof *m->datas);
    if (m->datas == NULL) return fail_nomem(d, r);
    m->ndatas = n;
    for (uint32_t i = 0; i < n; i++)
        if (!read_data(d, r, &m->datas[i])) return false;
    return true;
}

static bool decode_data_count_section(decoder *d, wasm_reader *r) {
    if (!rd_u32(r, &d->m->data_count)) return fail_rd(d, r);
    d->m->has_data_count = true;
    return true;
}

/* ---- custom sections (§5.5.3) and the name section (appendix 7.4) -------- */

static bool decode_custom_section(decoder *d, wasm_reader *r) {
    const uint8_t *name;
    uint32_t len;
    if (!rd_name(r, &name, &len)) return fail_rd(d, r);
    if (len == 4 && memcmp(name, "name", 4) == 0 && d->names == NULL) {
        d->names = r->p;
        d->names_end = r->end;
    }
    r->p = r->end; /* the payload is opaque */
    return true;
}

static void free_names(char **names, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Function names subsection: vec(funcidx name), indices strictly increasing
 * and in range. Returns NULL when ill-formed (or on OOM: names are optional). */
static char **parse_function_names(wasm_reader *r, uint32_t nfuncs) {
    uint32_t n;
    if (nfuncs == 0 || !rd_u32(r, &n) || n > rd_remaining(r)) return NULL;
    char **names = calloc(nfuncs, sizeof *names);
    if (names == NULL) return NULL;
    int64_t prev = -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx, len;
        const uint8_t *s;
        if (!rd_u32(r, &idx) || idx >= nfuncs || (int64_t)idx <= prev || !rd_name(r, &s, &len))
            goto bad;
        names[idx] = copy_name(s, len);
        if (names[idx] == NULL) goto bad;
        prev = idx;
    }
    if (!rd_eof(r)) goto bad;
    return names;
bad:
    free_names(names, nfuncs);
    return NULL;
}

/* The name section is debugging information: a bad one is ignored, never
 * an error (appendix 7.4). It is parsed last because it may precede the
 * sections that define how many functions there are. */
static void decode_name_section(decoder *d) {
    if (d->names == NULL) return;
    wasm_reader r = {d->m->bytes, d->names, d->names_end, NULL};
    while (!rd_eof(&r)) {
        uint8_t id;
        uint32_t size;
        if (!rd_u8(&r, &id) || !rd_u32(&r, &size) || size > rd_remaining(&r)) return;
        wasm_reader sub = {r.base, r.p, r.p + size, NULL};
        r.p += size;
        if (id == 1) {
            d->m->func_names = parse_function_names(&sub, d->m->nfuncs);
            return;
        }
    }
}

/* ---- module structure ----------------------------------------------------- */

static bool decode_section_body(decoder *d, uint8_t id, wasm_reader *r) {
    switch (id) {
    case SEC_CUSTOM: return decode_custom_section(d, r);
    case SEC_TYPE: return decode_type_section(d, r);
    case SEC_IMPORT: return decode_import_section(d, r);
    case SEC_FUNCTION: return decode_function_section(d, r);
    case SEC_TABLE: return decode_table_section(d, r);
    case SEC_MEMORY: return decode_memory_section(d, r);
    case SEC_GLOBAL: return decode_global_section(d, r);
    case SEC_EXPORT: return decode_export_section(d, r);
    case SEC_START: return decode_start_section(d, r);
    case SEC_ELEMENT: return decode_element_section(d, r);
    case SEC_CODE: return decode_code_section(d, r);
    case SEC_DATA: return decode_data_section(d, r);
    default: return decode_data_count_section(d, r);
    }
}

/* One section: id, size, contents that must fill exactly `size` bytes. */
static bool decode_section(decoder *d, wasm_reader *r, unsigned *last_rank) {
    uint32_t start = rd_offset(r);
    uint8_t id;
    d->section = "module";
    if (!rd_u8(r, &id)) return fail_rd(d, r);
    if (id >= SEC_COUNT) return fail_at(d, start, "malformed section id");
    d->section = section_names[id];
    /* Non-custom sections appear at most once, in order (§5.5.2). */
    if (id != SEC_CUSTOM) {
        if (section_rank[id] <= *last_rank)
            return fail_at(d, start, "unexpected content after last section");
        *last_rank = section_rank[id];
    }
    uint32_t size;
    if (!rd_u32(r, &size)) return fail_rd(d, r);
    if (size > rd_remaining(r)) return fail_at(d, start, "length out of bounds");
    wasm_reader sec = {r->base, r->p, r->p + size, NULL};
    r->p += size;
    if (!decode_section_body(d, id, &sec)) return false;
    if (!rd_eof(&sec)) return fail_at(d, rd_offset(&sec), "section size mismatch");
    return true;
}

static bool decode_header(decoder *d, wasm_reader *r) {
    static const uint8_t magic[4] = {0x00, 0x61, 0x73, 0x6D};
    static const uint8_t version[4] = {0x01, 0x00, 0x00, 0x00};
    const uint8_t *p;
    if (!rd_bytes(r, 4, &p)) return fail_rd(d, r);
    if (memcmp(p, magic, 4) != 0) return fail_at(d, 0, "magic header not detected");
    if (!rd_bytes(r, 4, &p)) return fail_rd(d, r);
    if (memcmp(p, version, 4) != 0) return fail_at(d, 4, "unknown binary version");
    return true;
}

/* Index spaces whose defining section was absent still hold the imports. */
static bool finish_index_spaces(decoder *d) {
    al_module *m = d->m;
    if (m->tables == NULL && m->ntable_imports) {
        m->tables = alloc_array(m->ntable_imports, sizeof *m->tables);
        if (m->tables == NULL) return false;
        m->ntables = m->ntable_imports;
        copy_imported_tables(m);
    }
    if (m->memories == NULL && m->nmemory_imports) {
        m->memories = alloc_array(m->nmemory_imports, sizeof *m->memories);
        if (m->memories == NULL) return false;
        m->nmemories = m->nmemory_imports;
        copy_imported_memories(m);
    }
    if (m->globals == NULL && m->nglobal_imports) {
        m->globals = alloc_array(m->nglobal_imports, sizeof *m->globals);
        if (m->globals == NULL) return false;
        m->nglobals = m->nglobal_imports;
        copy_imported_globals(m);
    }
    m->func_types = alloc_array(m->nfuncs, sizeof *m->func_types);
    if (m->func_types == NULL) return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nimports; i++)
        if (m->imports[i].kind == AL_EXTERN_FUNC) m->func_types[k++] = m->imports[i].desc.func_type;
    for (uint32_t i = 0; i < d->nfunc_decls; i++) m->func_types[k++] = m->funcs[i].type;
    return true;
}

/*
 * §5.5.16: memory.init and data.drop require a data count section (it lets
 * a one-pass compiler check data indices before the data section arrives).
 * The check waits until the end so a module with no data section at all is
 * left to validation, where any data index is out of range ("unknown data
 * segment", AL_ERR_INVALID): wabt encodes the spec's assert_invalid modules
 * of that shape without a data count section. Either way it is rejected.
 */
static bool check_data_count_required(decoder *d) {
    if (d->uses_data_index && !d->m->has_data_count && d->have_data_section) {
        d->section = "code";
        return fail_at(d, d->data_index_at, "data count section required");
    }
    return true;
}

/* Cross-section rules that can only be checked once every section is seen. */
static bool finish_module(decoder *d, wasm_reader *r) {
    al_module *m = d->m;
    d->section = "module";
    if (d->ncode != d->nfunc_decls)
        return fail_at(d, rd_offset(r), "function and code section have inconsistent lengths");
    if (!check_data_count_required(d)) return false;
    d->section = "module";
    if (m->has_data_count && m->data_count != m->ndatas)
        return fail_at(d, rd_offset(r), "data count and data section have inconsistent lengths");
    if (!finish_index_spaces(d)) return fail_nomem(d, r);
    decode_name_section(d);
    return true;
}

al_module *wasm_decode(const uint8_t *bytes, size_t len, al_error *err) {
    decoder d;
    memset(&d, 0, sizeof d);
    d.err = err;
    d.section = "header";
    /* Offsets are stored as uint32_t; al_module_new caps len far lower. */
    if (len > UINT32_MAX) {
        fail_kind(&d, AL_ERR_LIMIT, 0, "module too large");
        return NULL;
    }
    if (bytes == NULL && len > 0) {
        fail_kind(&d, AL_ERR_ARGUMENT, 0, "NULL module bytes");
        return NULL;
    }
    al_module *m = calloc(1, sizeof *m);
    if (m == NULL || (m->bytes = malloc(len ? len : 1)) == NULL) {
        free(m);
        fail_kind(&d, AL_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    if (len) memcpy(m->bytes, bytes, len);
    m->len = len;
    d.m = m;

    wasm_reader r = {m->bytes, m->bytes, m->bytes + len, NULL};
    bool ok = decode_header(&d, &r);
    unsigned last_rank = 0;
    while (ok && !rd_eof(&r)) ok = decode_section(&d, &r, &last_rank);
    if (ok) ok = finish_module(&d, &r);
    if (!ok) {
        wasm_module_free(m);
        return NULL;
    }
    return m;
}
