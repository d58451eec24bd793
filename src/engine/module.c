/*
 * module.c — the module object's lifetime and its public API (airlock.h):
 * al_module_new runs the pipeline decode -> validate -> compile, and the
 * introspection calls read the decoded imports and exports.
 *
 * Invariants: wasm_module_free releases any module that decode.c has started
 * to build, however far it got (decode keeps every count in step with what
 * is allocated and zeroes arrays on allocation); al_module_new returns either
 * a fully validated and compiled module or NULL with err set, never a
 * partial one.
 */
#include <stdlib.h>
#include <string.h>

#include "module.h"

/* Refuse absurd inputs before copying them (the decoder keeps a private copy
 * and stores offsets as uint32_t). 1 GiB is far beyond real modules. */
#define MAX_MODULE_BYTES (1u << 30)

static void free_imports_exports(al_module *m) {
    for (uint32_t i = 0; i < m->nimports; i++) {
        free(m->imports[i].module);
        free(m->imports[i].name);
    }
    free(m->imports);
    for (uint32_t i = 0; i < m->nexports; i++) free(m->exports[i].name);
    free(m->exports);
}

static void free_funcs(al_module *m) {
    /* funcs[] has nfuncs - nfunc_imports entries; decode keeps nfuncs >= nfunc_imports. */
    if (m->funcs && m->nfuncs > m->nfunc_imports) {
        for (uint32_t i = 0; i < m->nfuncs - m->nfunc_imports; i++) {
            free(m->funcs[i].local_types);
            compiled_func_free(m->funcs[i].code);
        }
    }
    free(m->funcs);
    free(m->func_types);
    if (m->func_names) {
        for (uint32_t i = 0; i < m->nfuncs; i++) free(m->func_names[i]);
        free(m->func_names);
    }
    free(m->declared_refs);
}

static void free_segments(al_module *m) {
    for (uint32_t i = 0; i < m->nelems; i++) free(m->elems[i].items);
    free(m->elems);
    free(m->datas);
}

void wasm_module_free(al_module *m) {
    if (m == NULL) return;
    free_imports_exports(m);
    free_funcs(m);
    free_segments(m);
    free(m->types);
    free(m->type_pool);
    free(m->tables);
    free(m->memories);
    free(m->globals);
    free(m->global_inits);
    free(m->bytes);
    free(m);
}

/* Cheap checks before the decoder copies the buffer. */
static bool precheck(const uint8_t *bytes, size_t len, al_error *err) {
    static const uint8_t magic[4] = {0x00, 0x61, 0x73, 0x6D};
    if (bytes == NULL && len > 0) {
        al_error_set(err, AL_ERR_ARGUMENT, "module bytes are NULL");
        return false;
    }
    if (len > MAX_MODULE_BYTES) {
        al_error_set(err, AL_ERR_LIMIT, "module of %zu bytes exceeds the 1 GiB limit", len);
        return false;
    }
    if (len < 4) {
        al_error_set(err, AL_ERR_MALFORMED, "section header at offset 0x0: unexpected end");
        return false;
    }
    if (memcmp(bytes, magic, 4) != 0) {
        al_error_set(err, AL_ERR_MALFORMED,
                     "section header at offset 0x0: magic header not detected");
        return false;
    }
    return true;
}

al_module *al_module_new(const uint8_t *bytes, size_t len, al_error *err) {
    al_error local;
    if (err == NULL) err = &local;
    memset(err, 0, sizeof *err);
    if (!precheck(bytes, len, err)) return NULL;
    al_module *m = wasm_decode(bytes, len, err);
    if (m == NULL) return NULL;
    if (!wasm_validate_module(m, err) || !wasm_compile_module(m, err)) {
        wasm_module_free(m);
        return NULL;
    }
    memset(err, 0, sizeof *err);
    atomic_init(&m->refcount, 1);
    return m;
}

void wasm_module_retain(const al_module *module) {
    atomic_fetch_add(&((al_module *)module)->refcount, 1);
}

void wasm_module_release(const al_module *module) {
    if (module && atomic_fetch_sub(&((al_module *)module)->refcount, 1) == 1)
        wasm_module_free((al_module *)module);
}

void al_module_free(al_module *module) { wasm_module_release(module); }

uint32_t al_module_import_count(const al_module *module) {
    return module ? module->nimports : 0;
}

bool al_module_import(const al_module *module, uint32_t i, const char **module_name,
                      const char **name, al_extern_kind *kind) {
    if (module == NULL || i >= module->nimports) return false;
    const wasm_import *imp = &module->imports[i];
    if (module_name) *module_name = imp->module;
    if (name) *name = imp->name;
    if (kind) *kind = imp->kind;
    return true;
}

uint32_t al_module_export_count(const al_module *module) {
    return module ? module->nexports : 0;
}

bool al_module_export(const al_module *module, uint32_t i, const char **name,
                      al_extern_kind *kind) {
    if (module == NULL || i >= module->nexports) return false;
    const wasm_export *exp = &module->exports[i];
    if (name) *name = exp->name;
    if (kind) *kind = exp->kind;
    return true;
}
