/*
 * script.c — the state of one running spec script (struct spec_script): its
 * store and import set, the modules it decoded from files beside the .json,
 * its current and named instances, and the reason a command did not pass.
 *
 * Ownership: every module handed to al_instantiate is kept until the end,
 * because instances point at their module, including instances whose
 * instantiation trapped after their functions were written into an imported
 * table (linking.wast calls those afterwards). spec_script_close frees the
 * import set, then the store, then the modules.
 */
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* ---- lifetime -------------------------------------------------------------- */

bool spec_script_open(spec_script *script, const char *path, bool verbose, char *why,
                      size_t why_size)
{
    memset(script, 0, sizeof *script);
    script->json_path = path;
    script->verbose = verbose;
    char *path_copy = strdup(path);
    if (path_copy != NULL)
        script->dir = strdup(dirname(path_copy));
    free(path_copy);
    script->store = al_store_new(NULL);
    script->imports = al_imports_new();
    if (script->dir == NULL || script->store == NULL || script->imports == NULL) {
        snprintf(why, why_size, "cannot create the store or import set");
        return false;
    }
    return spec_define_spectest(script->store, script->imports, verbose, why, why_size);
}

/* Imports and store go first: instances in the store point at the modules. */
void spec_script_close(spec_script *script)
{
    if (script->imports != NULL)
        al_imports_free(script->imports);
    if (script->store != NULL)
        al_store_free(script->store);
    for (size_t i = 0; i < script->nmodules; i++)
        al_module_free(script->modules[i]);
    free(script->modules);
    for (size_t i = 0; i < script->nnamed; i++)
        free(script->named[i].name);
    free(script->named);
    free(script->dir);
}

/* ---- outcomes ------------------------------------------------------------- */

static spec_outcome set_reason(spec_script *script, spec_outcome outcome, const char *fmt,
                               va_list ap)
{
    vsnprintf(script->reason, sizeof script->reason, fmt, ap);
    return outcome;
}

spec_outcome spec_fail(spec_script *script, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spec_outcome outcome = set_reason(script, SPEC_FAIL, fmt, ap);
    va_end(ap);
    return outcome;
}

spec_outcome spec_skip(spec_script *script, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spec_outcome outcome = set_reason(script, SPEC_SKIP, fmt, ap);
    va_end(ap);
    return outcome;
}

/* ---- files and modules ----------------------------------------------------- */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    uint8_t *bytes = NULL;
    long size = -1;
    if (fseek(file, 0, SEEK_END) == 0)
        size = ftell(file);
    if (size >= 0 && fseek(file, 0, SEEK_SET) == 0) {
        bytes = malloc(size > 0 ? (size_t)size : 1);
        if (bytes != NULL && fread(bytes, 1, (size_t)size, file) != (size_t)size) {
            free(bytes);
            bytes = NULL;
        }
    }
    fclose(file);
    *len = size > 0 ? (size_t)size : 0;
    return bytes;
}

/* "filename" is relative to the directory of the .json. */
bool spec_decode_module_file(spec_script *script, json_t *command, al_module **module,
                             al_error *err)
{
    const char *filename = json_string_value(json_object_get(command, "filename"));
    if (filename == NULL) {
        spec_fail(script, "command has no \"filename\"");
        return false;
    }
    char *path;
    if (asprintf(&path, "%s/%s", script->dir, filename) < 0) {
        spec_fail(script, "out of memory");
        return false;
    }
    size_t len;
    uint8_t *bytes = read_file(path, &len);
    if (bytes == NULL) {
        spec_fail(script, "cannot read %s", path);
        free(path);
        return false;
    }
    memset(err, 0, sizeof *err);
    *module = al_module_new(bytes, len, err);
    free(bytes);
    free(path);
    return true;
}

/* Keeps the module alive until the store is gone, then instantiates it. */
al_instance *spec_instantiate(spec_script *script, al_module *module, al_error *err)
{
    if (script->nmodules == script->modules_cap) {
        size_t cap = script->modules_cap ? 2 * script->modules_cap : 16;
        al_module **modules = realloc(script->modules, cap * sizeof *modules);
        if (modules == NULL) {
            al_module_free(module);
            memset(err, 0, sizeof *err);
            err->kind = AL_ERR_NOMEM;
            snprintf(err->message, sizeof err->message, "runner: out of memory");
            return NULL;
        }
        script->modules = modules;
        script->modules_cap = cap;
    }
    script->modules[script->nmodules++] = module;
    memset(err, 0, sizeof *err);
    return al_instantiate(script->store, module, script->imports, err);
}

/* ---- instances by name ------------------------------------------------------ */

static spec_named_instance *find_named(spec_script *script, const char *name)
{
    for (size_t i = 0; i < script->nnamed; i++)
        if (strcmp(script->named[i].name, name) == 0)
            return &script->named[i];
    return NULL;
}

bool spec_name_instance(spec_script *script, const char *name, al_instance *instance)
{
    spec_named_instance *entry = find_named(script, name);
    if (entry != NULL) {
        entry->instance = instance;
        return true;
    }
    if (script->nnamed == script->named_cap) {
        size_t cap = script->named_cap ? 2 * script->named_cap : 8;
        spec_named_instance *named = realloc(script->named, cap * sizeof *named);
        if (named == NULL)
            return false;
        script->named = named;
        script->named_cap = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL)
        return false;
    script->named[script->nnamed++] = (spec_named_instance){copy, instance};
    return true;
}

/* The instance a command refers to: by "$name", or the current one. */
al_instance *spec_lookup_instance(spec_script *script, const char *name)
{
    if (name == NULL) {
        if (script->current == NULL)
            spec_fail(script, "no current module (the last module failed to load)");
        return script->current;
    }
    spec_named_instance *entry = find_named(script, name);
    if (entry == NULL)
        spec_fail(script, "unknown module %s", name);
    else if (entry->instance == NULL)
        spec_fail(script, "module %s failed to load", name);
    return entry != NULL ? entry->instance : NULL;
}
