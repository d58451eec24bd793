/*
 * actions.c — the "invoke" and "get" actions of spec scripts: find the
 * instance and export, convert the arguments, call through al_call (or read
 * the global), and hand back results or the engine's error.
 *
 * An action the runner cannot even attempt (unknown module or export, wrong
 * argument count or types) is reported as such, separately from engine
 * errors, so that a missing export is not mistaken for a trap.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

static const char *string_field(json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

void spec_action_result_free(spec_action_result *result)
{
    free(result->values);
    result->values = NULL;
}

static bool parse_args(spec_script *script, json_t *args, const al_functype *type,
                       al_value *values)
{
    for (uint32_t i = 0; i < type->nparams; i++) {
        const char *problem = spec_parse_arg(json_array_get(args, i), &values[i]);
        if (problem != NULL) {
            spec_fail(script, "argument %u: %s", i, problem);
            return false;
        }
        if (values[i].type != (al_valtype)type->params[i]) {
            spec_fail(script, "argument %u is %s, the function takes %s", i,
                      spec_valtype_name(values[i].type),
                      spec_valtype_name((al_valtype)type->params[i]));
            return false;
        }
    }
    return true;
}

static bool invoke_function(spec_script *script, al_func *func, json_t *args,
                            spec_action_result *result)
{
    const al_functype *type = al_func_type(func);
    if (type == NULL) {
        spec_fail(script, "al_func_type returned NULL");
        return false;
    }
    if (json_array_size(args) != type->nparams) {
        spec_fail(script, "%zu arguments given, the function takes %u",
                  json_array_size(args), type->nparams);
        return false;
    }
    al_value *arg_values = calloc(type->nparams + 1, sizeof *arg_values);
    result->values = calloc(type->nresults + 1, sizeof *result->values);
    if (arg_values == NULL || result->values == NULL) {
        free(arg_values);
        spec_fail(script, "out of memory");
        return false;
    }
    bool parsed = parse_args(script, args, type, arg_values);
    if (parsed) {
        result->count = type->nresults;
        result->completed = al_call(script->store, func, arg_values, type->nparams,
                                    result->values, type->nresults, &result->err);
    }
    free(arg_values);
    return parsed;
}

static bool read_global(spec_script *script, al_extern ext, spec_action_result *result)
{
    if (ext.kind != AL_EXTERN_GLOBAL) {
        spec_fail(script, "export is not a global (kind %d)", (int)ext.kind);
        return false;
    }
    result->values = calloc(1, sizeof *result->values);
    if (result->values == NULL) {
        spec_fail(script, "out of memory");
        return false;
    }
    result->values[0] = al_global_get(ext.of.global);
    result->count = 1;
    result->completed = true;
    return true;
}

/* The export the action names ("module" and "field"); false (reason set) if none. */
static bool find_export(spec_script *script, json_t *action, al_extern *ext)
{
    json_t *field = json_object_get(action, "field");
    if (!json_is_string(field)) {
        spec_fail(script, "action without a field");
        return false;
    }
    al_instance *instance = spec_lookup_instance(script, string_field(action, "module"));
    if (instance == NULL)
        return false;
    memset(ext, 0, sizeof *ext);
    if (al_instance_export_n(instance, json_string_value(field), json_string_length(field),
                             ext))
        return true;
    char name[256];
    spec_format_name(json_string_value(field), json_string_length(field), name, sizeof name);
    spec_fail(script, "no export \"%s\"", name);
    return false;
}

bool spec_perform_action(spec_script *script, json_t *action, spec_action_result *result)
{
    memset(result, 0, sizeof *result);
    const char *type = string_field(action, "type");
    bool is_get = type != NULL && strcmp(type, "get") == 0;
    bool is_invoke = type != NULL && strcmp(type, "invoke") == 0;
    if (!is_get && !is_invoke) {
        spec_fail(script, "unknown action type \"%s\"", type ? type : "");
        return false;
    }
    al_extern ext;
    if (!find_export(script, action, &ext))
        return false;
    if (is_get)
        return read_global(script, ext, result);
    if (ext.kind != AL_EXTERN_FUNC) {
        spec_fail(script, "export is not a function (kind %d)", (int)ext.kind);
        return false;
    }
    return invoke_function(script, ext.of.func, json_object_get(action, "args"), result);
}

/* Append to buf, which already holds *used bytes; stops quietly when full. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    *used = n < 0 ? size : *used + (size_t)n;
}

/* '$M "add"(i32:1, i32:2)' (or '$M "glob"' for a get) for failure reports. */
void spec_describe_action(json_t *action, char *buf, size_t size)
{
    json_t *field = json_object_get(action, "field");
    const char *module = string_field(action, "module");
    const char *type = string_field(action, "type");
    char name[256];
    spec_format_name(json_is_string(field) ? json_string_value(field) : "?",
                     json_is_string(field) ? json_string_length(field) : 1, name, sizeof name);
    size_t used = 0;
    buf[0] = '\0';
    append(buf, size, &used, "%s%s\"%s\"", module ? module : "", module ? " " : "", name);
    if (type == NULL || strcmp(type, "invoke") != 0)
        return;
    json_t *args = json_object_get(action, "args");
    size_t i;
    json_t *arg;
    append(buf, size, &used, "(");
    json_array_foreach(args, i, arg) {
        const char *arg_type = string_field(arg, "type");
        const char *value = string_field(arg, "value");
        append(buf, size, &used, "%s%s:%s", i == 0 ? "" : ", ", arg_type ? arg_type : "?",
               value ? value : "?");
    }
    append(buf, size, &used, ")");
}
