/*
 * module.h — the decoded form of a WebAssembly 2.0 module (spec §2.5, §5.5).
 *
 * Produced by decode.c (bytes -> structure, malformed input rejected),
 * checked by validate.c (module-level rules) and compile.c (function bodies,
 * which are also translated to internal code there).
 *
 * Invariants after a successful al_module_new():
 *  - every index stored here is in range for its index space;
 *  - func_types[] covers imported functions first, then defined ones; the same
 *    ordering holds for tables, memories and globals;
 *  - every defined function has compiled code (funcs[i].code != NULL).
 * All strings are copies (NUL-terminated, with explicit length because wasm
 * names may contain NUL). The module owns everything it points to.
 */
#ifndef AIRLOCK_ENGINE_MODULE_H
#define AIRLOCK_ENGINE_MODULE_H

#include <stdatomic.h>

#include "airlock.h"

/* Implementation limits (spec appendix A.2 allows embedders to set these). */
#define WASM_MAX_LOCALS 50000u         /* params + locals of one function */
#define WASM_MAX_FUNCTION_SIZE (8u << 20)
#define WASM_MAX_TYPES 1000000u
#define WASM_MAX_FUNCTIONS 1000000u
#define WASM_MAX_IMPORTS 100000u
#define WASM_MAX_EXPORTS 100000u
#define WASM_MAX_GLOBALS 1000000u
#define WASM_MAX_SEGMENTS 100000u
#define WASM_MAX_TABLES 100000u
#define WASM_MAX_MEMORIES 1u           /* WebAssembly 2.0: at most one memory */
#define WASM_MAX_BR_TABLE 65520u
#define WASM_MAX_FUNC_PARAMS 1000u
#define WASM_MAX_FUNC_RESULTS 1000u
#define WASM_PAGE_SIZE 65536u
#define WASM_MAX_PAGES 65536u
/* Added (decode.c): module-wide budgets against memory amplification. A few
 * input bytes can declare 50000 locals or one element item, which the
 * decoder expands (1 byte per local, one wasm_const_expr per item); without
 * a module-wide cap a 6 MB module could demand ~50 GB. */
#define WASM_MAX_MODULE_LOCALS (64u << 20) /* sum of nlocals over all functions */
#define WASM_MAX_ELEM_ITEMS 10000000u      /* sum of items over all elem segments */

/* Value types use the binary encoding (al_valtype). 0x40 is the empty block type. */
#define WASM_BLOCKTYPE_EMPTY 0x40

typedef struct wasm_limits {
    uint32_t min;
    uint32_t max;
    bool has_max;
} wasm_limits;

typedef struct wasm_tabletype {
    uint8_t elem_type; /* AL_FUNCREF or AL_EXTERNREF */
    wasm_limits limits;
} wasm_tabletype;

typedef struct wasm_globaltype {
    uint8_t type;
    bool is_mutable;
} wasm_globaltype;

/*
 * A constant expression (spec §3.3.10). The decoder records where its bytes
 * are (offset/size into module->bytes, the final `end` included); validate.c
 * checks it is exactly one constant instruction of the right type and stores
 * that instruction in op/value. size == 0 means the decoder synthesised it
 * (element segments given as a vector of function indices) and op/value are
 * already set.
 */
typedef struct wasm_const_expr {
    uint32_t offset;
    uint32_t size;
    uint8_t op;     /* 0x41 i32.const, 0x42 i64.const, 0x43 f32.const, 0x44 f64.const,
                       0x23 global.get, 0xD0 ref.null, 0xD2 ref.func */
    uint64_t value; /* const bits (i32 sign-extended to 64), global/func index, or reftype */
} wasm_const_expr;

typedef struct wasm_import {
    char *module;
    uint32_t module_len;
    char *name;
    uint32_t name_len;
    al_extern_kind kind;
    union {
        uint32_t func_type; /* type index */
        wasm_tabletype table;
        wasm_limits memory;
        wasm_globaltype global;
    } desc;
} wasm_import;

typedef struct wasm_export {
    char *name;
    uint32_t name_len;
    al_extern_kind kind;
    uint32_t index;
} wasm_export;

typedef enum wasm_segment_mode {
    WASM_SEGMENT_ACTIVE,
    WASM_SEGMENT_PASSIVE,
    WASM_SEGMENT_DECLARATIVE, /* element segments only */
} wasm_segment_mode;

typedef struct wasm_elem {
    wasm_segment_mode mode;
    uint8_t elem_type;  /* AL_FUNCREF or AL_EXTERNREF */
    uint32_t table;     /* active only */
    wasm_const_expr offset; /* active only */
    uint32_t count;
    wasm_const_expr *items; /* count entries */
} wasm_elem;

typedef struct wasm_data {
    wasm_segment_mode mode;
    uint32_t memory;        /* active only */
    wasm_const_expr offset; /* active only */
    uint32_t data_offset;   /* into module->bytes */
    uint32_t data_size;
} wasm_data;

struct compiled_func; /* code.h */

typedef struct wasm_func {
    uint32_t type;        /* type index */
    uint32_t nlocals;     /* declared locals, params excluded */
    uint8_t *local_types; /* nlocals entries */
    uint32_t body_offset; /* first instruction byte (after the locals) in module->bytes */
    uint32_t body_size;   /* bytes up to and including the final `end` */
    uint32_t nconst_instrs; /* constant-pushing instructions in the body (decoder's count) */
    struct compiled_func *code; /* set by compile.c */
} wasm_func;

struct al_module {
    uint8_t *bytes; /* private copy of the binary */
    size_t len;

    uint32_t ntypes;
    al_functype *types; /* params/results point into type_pool */
    uint8_t *type_pool;

    uint32_t nimports;
    wasm_import *imports;

    uint32_t nfuncs;         /* imported + defined */
    uint32_t nfunc_imports;
    uint32_t *func_types;    /* nfuncs entries: type index of every function */
    wasm_func *funcs;        /* nfuncs - nfunc_imports defined functions */

    uint32_t ntables, ntable_imports;
    wasm_tabletype *tables;  /* ntables entries, imported first */

    uint32_t nmemories, nmemory_imports;
    wasm_limits *memories;

    uint32_t nglobals, nglobal_imports;
    wasm_globaltype *globals;      /* nglobals entries */
    wasm_const_expr *global_inits; /* nglobals - nglobal_imports entries */

    uint32_t nexports;
    wasm_export *exports;

    bool has_start;
    uint32_t start;

    uint32_t nelems;
    wasm_elem *elems;

    uint32_t ndatas;
    wasm_data *datas;
    bool has_data_count;
    uint32_t data_count;

    /* From the custom "name" section (function names subsection), when present
     * and well-formed; a broken name section is ignored, as the spec says. */
    char **func_names; /* nfuncs entries or NULL; each entry may be NULL */

    /* C.refs (spec §3.4.10): functions that may appear in ref.func inside
     * function bodies. Set by validate.c; nfuncs entries. */
    bool *declared_refs;

    /* Owners: the embedder's handle plus one per instance made from it, so an
     * embedder may free its module while instances still run its code. */
    atomic_uint refcount;
};

/* decode.c: bytes -> module. On failure returns NULL and sets err (kind
 * AL_ERR_MALFORMED, message "section <name> at offset 0x..: <reason>"). */
al_module *wasm_decode(const uint8_t *bytes, size_t len, al_error *err);

/* validate.c: module-level validation (everything except function bodies),
 * fills const expr op/value and declared_refs. err kind AL_ERR_INVALID. */
bool wasm_validate_module(al_module *module, al_error *err);

/* compile.c: validate each function body and translate it to internal code. */
bool wasm_compile_module(al_module *module, al_error *err);

/* compile.c: frees one function's internal code (NULL is fine). */
void compiled_func_free(struct compiled_func *code);

/* module.c: frees everything, including compiled code. NULL is fine. */
void wasm_module_free(al_module *module);
/* module.c: reference counting for instances (see al_module.refcount). */
void wasm_module_retain(const al_module *module);
void wasm_module_release(const al_module *module);

/* Helpers shared by all stages. */
static inline const al_functype *wasm_func_type(const al_module *m, uint32_t func_index) {
    return &m->types[m->func_types[func_index]];
}
static inline bool wasm_is_reftype(uint8_t t) { return t == AL_FUNCREF || t == AL_EXTERNREF; }
static inline bool wasm_is_valtype(uint8_t t) {
    return t == AL_I32 || t == AL_I64 || t == AL_F32 || t == AL_F64 || wasm_is_reftype(t);
}

#endif
