/*
 * spectest.c — the "spectest" host module the spec test scripts import
 * (as defined by the reference interpreter's spectest.ml):
 *
 *   func   print, print_i32 (i32), print_i64 (i64), print_f32 (f32),
 *          print_f64 (f64), print_i32_f32 (i32 f32), print_f64_f64 (f64 f64)
 *   table  "table"  funcref, min 10, max 20
 *   memory "memory" min 1, max 2 pages
 *   global global_i32 = 666, global_i64 = 666, global_f32 = 666.6,
 *          global_f64 = 666.6 (all immutable)
 *
 * The print functions return nothing; with --verbose they echo their
 * arguments so a script's output can be followed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec.h"

typedef struct spectest_print {
    const char *name;
    uint32_t nparams;
    uint8_t params[2];
} spectest_print;

static const spectest_print spectest_prints[] = {
    {"print", 0, {0}},
    {"print_i32", 1, {AL_I32}},
    {"print_i64", 1, {AL_I64}},
    {"print_f32", 1, {AL_F32}},
    {"print_f64", 1, {AL_F64}},
    {"print_i32_f32", 2, {AL_I32, AL_F32}},
    {"print_f64_f64", 2, {AL_F64, AL_F64}},
};

static al_trap_kind print_quietly(void *env, al_caller *caller, const al_value *args,
                                  al_value *results)
{
    return AL_TRAP_NONE;
}

static al_trap_kind print_verbosely(void *env, al_caller *caller, const al_value *args,
                                    al_value *results)
{
    const spectest_print *print = env;
    printf("    spectest.%s(", print->name);
    for (uint32_t i = 0; i < print->nparams; i++) {
        char text[96];
        spec_format_value(args[i], text, sizeof text);
        printf("%s%s", i > 0 ? ", " : "", text);
    }
    printf(")\n");
    return AL_TRAP_NONE;
}

static bool define_extern(al_imports *imports, const char *name, al_extern ext,
                          char *why, size_t why_size)
{
    if (al_imports_define(imports, "spectest", name, ext))
        return true;
    snprintf(why, why_size, "al_imports_define(spectest.%s) failed", name);
    return false;
}

static bool define_prints(al_store *store, al_imports *imports, bool verbose,
                          char *why, size_t why_size)
{
    size_t count = sizeof spectest_prints / sizeof spectest_prints[0];
    for (size_t i = 0; i < count; i++) {
        const spectest_print *print = &spectest_prints[i];
        al_functype type = {print->nparams, 0, print->params, NULL};
        al_host_fn fn = verbose ? print_verbosely : print_quietly;
        al_extern ext = {.kind = AL_EXTERN_FUNC};
        ext.of.func = al_func_new_host(store, &type, fn, (void *)print);
        if (ext.of.func == NULL) {
            snprintf(why, why_size, "al_func_new_host(spectest.%s) failed", print->name);
            return false;
        }
        if (!define_extern(imports, print->name, ext, why, why_size))
            return false;
    }
    return true;
}

static bool define_table_and_memory(al_store *store, al_imports *imports,
                                    char *why, size_t why_size)
{
    al_error err;
    memset(&err, 0, sizeof err);
    al_extern table = {.kind = AL_EXTERN_TABLE};
    table.of.table = al_table_new(store, AL_FUNCREF, 10, 20, true, &err);
    if (table.of.table == NULL) {
        snprintf(why, why_size, "al_table_new(spectest.table): %s", err.message);
        return false;
    }
    al_extern memory = {.kind = AL_EXTERN_MEMORY};
    memory.of.memory = al_memory_new(store, 1, 2, true, &err);
    if (memory.of.memory == NULL) {
        snprintf(why, why_size, "al_memory_new(spectest.memory): %s", err.message);
        return false;
    }
    return define_extern(imports, "table", table, why, why_size) &&
           define_extern(imports, "memory", memory, why, why_size);
}

static bool define_global(al_store *store, al_imports *imports, const char *name,
                          al_value value, char *why, size_t why_size)
{
    al_error err;
    memset(&err, 0, sizeof err);
    al_extern global = {.kind = AL_EXTERN_GLOBAL};
    global.of.global = al_global_new(store, value, false, &err);
    if (global.of.global == NULL) {
        snprintf(why, why_size, "al_global_new(spectest.%s): %s", name, err.message);
        return false;
    }
    return define_extern(imports, name, global, why, why_size);
}

static bool define_globals(al_store *store, al_imports *imports, char *why, size_t why_size)
{
    return define_global(store, imports, "global_i32", al_i32(666), why, why_size) &&
           define_global(store, imports, "global_i64", al_i64(666), why, why_size) &&
           define_global(store, imports, "global_f32", al_f32(666.6f), why, why_size) &&
           define_global(store, imports, "global_f64", al_f64(666.6), why, why_size);
}

bool spec_define_spectest(al_store *store, al_imports *imports, bool verbose,
                          char *why, size_t why_size)
{
    return define_prints(store, imports, verbose, why, why_size) &&
           define_table_and_memory(store, imports, why, why_size) &&
           define_globals(store, imports, why, why_size);
}
