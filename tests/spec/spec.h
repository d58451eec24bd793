/*
 * spec.h — internals shared by the files of the WebAssembly spec-test runner.
 *
 * The runner is an embedder like any other: it uses only airlock.h. Its files:
 *   runner.c    command line, one .json script at a time, the summary table
 *   script.c    the state of one script: store, imports, modules, instances
 *   commands.c  the meaning of each wast2json command (module, assert_*, ...)
 *   actions.c   "invoke" and "get": calling exports, collecting results
 *   values.c    wast2json values: parsing arguments/expectations, comparing, printing
 *   spectest.c  the standard "spectest" host module every script may import
 *
 * One spec_script holds everything that lives as long as one .json file: its
 * store, import set, instances and the modules they were made from. Modules
 * outlive the store because instances (even ones whose instantiation trapped
 * after writing into an imported table) keep pointing at their module.
 */
#ifndef AIRLOCK_SPEC_H
#define AIRLOCK_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "airlock.h"

typedef enum spec_outcome {
    SPEC_PASS,
    SPEC_FAIL,
    SPEC_SKIP,
} spec_outcome;

typedef struct spec_counts {
    unsigned passed, failed, skipped;
} spec_counts;

typedef struct spec_named_instance {
    char *name;            /* wast "$name" as written by wast2json */
    al_instance *instance; /* NULL when that module failed to load */
} spec_named_instance;

typedef struct spec_script {
    const char *json_path;
    char *dir;             /* directory of json_path: the .wasm files sit there */
    bool verbose;

    al_store *store;
    al_imports *imports;
    al_instance *current;  /* last module defined; NULL if it failed */
    spec_named_instance *named;
    size_t nnamed, named_cap;
    al_module **modules;   /* every module handed to al_instantiate */
    size_t nmodules, modules_cap;

    spec_counts counts;
    char reason[1024];     /* why the current command failed or was skipped */
} spec_script;

/* script.c ------------------------------------------------------------------ */

/* Fresh store and import set holding "spectest"; false (with why) on failure.
 * spec_script_close must be called either way. */
bool spec_script_open(spec_script *script, const char *json_path, bool verbose, char *why,
                      size_t why_size);
void spec_script_close(spec_script *script);

/* Printf into script->reason and return SPEC_FAIL (or SPEC_SKIP). */
spec_outcome spec_fail(spec_script *script, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
spec_outcome spec_skip(spec_script *script, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Decode the command's "filename". False only if the file cannot be read
 * (reason set); otherwise *module and *err are al_module_new's answer. */
bool spec_decode_module_file(spec_script *script, json_t *command, al_module **module,
                             al_error *err);
/* Instantiate with the script's imports; the script keeps the module. */
al_instance *spec_instantiate(spec_script *script, al_module *module, al_error *err);
/* Bind "$name" to an instance (NULL: that module failed); false on OOM. */
bool spec_name_instance(spec_script *script, const char *name, al_instance *instance);
/* The named instance, or the current one if name is NULL; NULL (reason set) if none. */
al_instance *spec_lookup_instance(spec_script *script, const char *name);

/* commands.c ---------------------------------------------------------------- */

/* Run one command object; sets script->reason unless it passed. */
spec_outcome spec_run_command(spec_script *script, json_t *command);

/* actions.c ----------------------------------------------------------------- */

typedef struct spec_action_result {
    bool completed;    /* false: err says how the engine failed */
    al_value *values;  /* count results (owned) */
    uint32_t count;
    al_error err;
} spec_action_result;

/* Perform an "invoke" or "get". False when it could not even be attempted
 * (unknown module or export, bad arguments; reason set). Free the result
 * with spec_action_result_free either way. */
bool spec_perform_action(spec_script *script, json_t *action, spec_action_result *result);
void spec_action_result_free(spec_action_result *result);
/* '$M "add"(i32:1, i32:2)' for failure reports. */
void spec_describe_action(json_t *action, char *buf, size_t size);

/* values.c ------------------------------------------------------------------ */

typedef enum spec_match {
    SPEC_MATCH_BITS,           /* exact bit pattern (refs: null is 0) */
    SPEC_MATCH_NAN_CANONICAL,  /* f32/f64: canonical NaN, either sign */
    SPEC_MATCH_NAN_ARITHMETIC, /* f32/f64: quiet bit set, any payload/sign */
    SPEC_MATCH_NON_NULL,       /* funcref: any non-null reference */
} spec_match;

typedef struct spec_expected {
    al_valtype type;
    spec_match match;
    uint64_t bits; /* for SPEC_MATCH_BITS; externref N is host token N+1 */
} spec_expected;

/* Both return NULL on success, or a short description of what is wrong. */
const char *spec_parse_arg(json_t *json, al_value *out);
const char *spec_parse_expected(json_t *json, spec_expected *out);

bool spec_value_matches(const spec_expected *expected, al_value actual);
const char *spec_valtype_name(al_valtype type);
void spec_format_value(al_value value, char *buf, size_t size);
void spec_format_expected(const spec_expected *expected, char *buf, size_t size);
/* Export names are any UTF-8, NUL and control characters included. */
void spec_format_name(const char *name, size_t len, char *buf, size_t size);

/* spectest.c: define the "spectest" module in imports; false (with a message) on failure. */
bool spec_define_spectest(al_store *store, al_imports *imports, bool verbose,
                          char *why, size_t why_size);

#endif
