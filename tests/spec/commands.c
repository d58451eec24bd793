/*
 * commands.c — what each command of a wast2json script means, checked
 * against airlock (see the spec's interpreter/README.md, "Scripts").
 *
 *   module                define a module (optionally named) and make it current
 *   register              make an instance's exports importable under a name
 *   action                invoke an export / read a global; must not trap
 *   assert_return         the action's results match the expectations
 *   assert_trap           the action traps with the expected message
 *   assert_exhaustion     the action runs out of call stack
 *   assert_malformed      decoding fails as malformed (text-format ones are skipped:
 *                         airlock only reads the binary format)
 *   assert_invalid        decoding fails validation
 *   assert_unlinkable     instantiation fails to link
 *   assert_uninstantiable instantiation traps (in a segment or the start function)
 *
 * Every handler returns one outcome and, unless it passed, leaves the reason
 * in script->reason. Engine errors are reported, never fatal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* ---- small helpers ----------------------------------------------------------- */

static const char *string_field(json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

static const char *error_kind_name(al_error_kind kind)
{
    switch (kind) {
    case AL_OK: return "success";
    case AL_ERR_MALFORMED: return "malformed";
    case AL_ERR_INVALID: return "invalid";
    case AL_ERR_LINK: return "unlinkable";
    case AL_ERR_TRAP: return "trap";
    case AL_ERR_LIMIT: return "limit";
    case AL_ERR_ARGUMENT: return "bad argument";
    case AL_ERR_NOMEM: return "out of memory";
    case AL_ERR_SYSTEM: return "system error";
    case AL_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown error kind";
}

static const char *trap_message(al_trap_kind kind)
{
    const char *message = al_trap_message(kind);
    return message != NULL ? message : "(no message)";
}

/* 'trap "integer divide by zero" (kind 2) [detail]': everything the engine said. */
static void describe_error(const al_error *err, char *buf, size_t size)
{
    char detail[sizeof err->message + 4] = "";
    bool message_is_trap_text = err->kind == AL_ERR_TRAP &&
                                strncmp(err->message, trap_message(err->trap),
                                        sizeof err->message) == 0;
    if (err->message[0] != '\0' && !message_is_trap_text)
        snprintf(detail, sizeof detail, " [%.*s]", (int)sizeof err->message - 1, err->message);
    if (err->kind == AL_ERR_TRAP)
        snprintf(buf, size, "trap \"%s\" (kind %d)%s", trap_message(err->trap),
                 (int)err->trap, detail);
    else
        snprintf(buf, size, "%s%s", error_kind_name(err->kind), detail);
}

static bool starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/*
 * Trap messages are compared by prefix, as the reference interpreter does:
 * the expected text is a prefix of the engine's message. The reference
 * interpreter also adds details the engine need not ("uninitialized element 2"),
 * so the engine's message followed by a space-separated detail matches too.
 */
static bool trap_text_matches(al_trap_kind kind, const char *expected)
{
    const char *actual = al_trap_message(kind);
    if (actual == NULL || actual[0] == '\0')
        return false;
    if (starts_with(actual, expected))
        return true;
    return starts_with(expected, actual) && expected[strlen(actual)] == ' ';
}

/* ---- commands ------------------------------------------------------------ */

static spec_outcome run_module(spec_script *script, json_t *command)
{
    const char *name = string_field(command, "name");
    al_module *module;
    al_error err;
    char what[512];
    script->current = NULL;
    if (name != NULL && !spec_name_instance(script, name, NULL))
        return spec_fail(script, "out of memory");
    if (!spec_decode_module_file(script, command, &module, &err))
        return SPEC_FAIL;
    if (module == NULL) {
        describe_error(&err, what, sizeof what);
        return spec_fail(script, "module failed to decode: %s", what);
    }
    al_instance *instance = spec_instantiate(script, module, &err);
    if (instance == NULL) {
        describe_error(&err, what, sizeof what);
        return spec_fail(script, "module failed to instantiate: %s", what);
    }
    script->current = instance;
    if (name != NULL && !spec_name_instance(script, name, instance))
        return spec_fail(script, "out of memory");
    return SPEC_PASS;
}

static spec_outcome run_register(spec_script *script, json_t *command)
{
    const char *as = string_field(command, "as");
    if (as == NULL)
        return spec_fail(script, "register without \"as\"");
    al_instance *instance = spec_lookup_instance(script, string_field(command, "name"));
    if (instance == NULL)
        return SPEC_FAIL;
    if (!al_imports_define_instance(script->imports, as, instance))
        return spec_fail(script, "al_imports_define_instance(\"%s\") failed", as);
    return SPEC_PASS;
}

static spec_outcome unexpected_error(spec_script *script, const al_error *err)
{
    char what[512];
    describe_error(err, what, sizeof what);
    return spec_fail(script, "unexpected %s", what);
}

static spec_outcome run_action(spec_script *script, json_t *command)
{
    spec_action_result result;
    spec_outcome outcome = SPEC_PASS;
    if (!spec_perform_action(script, json_object_get(command, "action"), &result))
        outcome = SPEC_FAIL;
    else if (!result.completed)
        outcome = unexpected_error(script, &result.err);
    spec_action_result_free(&result);
    return outcome;
}

static spec_outcome check_results(spec_script *script, json_t *expected,
                                  const spec_action_result *result)
{
    if (!result->completed)
        return unexpected_error(script, &result->err);
    if (json_array_size(expected) != result->count)
        return spec_fail(script, "%u results, expected %zu", result->count,
                         json_array_size(expected));
    for (uint32_t i = 0; i < result->count; i++) {
        spec_expected want;
        json_t *json = json_array_get(expected, i);
        const char *problem = spec_parse_expected(json, &want);
        if (problem != NULL) {
            const char *type = string_field(json, "type");
            const char *value = string_field(json, "value");
            return spec_fail(script, "expected result %u (%s:%s): %s", i, type ? type : "?",
                             value ? value : "?", problem);
        }
        if (!spec_value_matches(&want, result->values[i])) {
            char want_text[128], got_text[128];
            spec_format_expected(&want, want_text, sizeof want_text);
            spec_format_value(result->values[i], got_text, sizeof got_text);
            return spec_fail(script, "result %u: expected %s, got %s", i, want_text,
                             got_text);
        }
    }
    return SPEC_PASS;
}

static spec_outcome run_assert_return(spec_script *script, json_t *command)
{
    spec_action_result result;
    spec_outcome outcome = SPEC_FAIL;
    if (spec_perform_action(script, json_object_get(command, "action"), &result))
        outcome = check_results(script, json_object_get(command, "expected"), &result);
    spec_action_result_free(&result);
    return outcome;
}

/* The action or instantiation must have failed with a trap saying `text`. */
static spec_outcome check_trap(spec_script *script, const al_error *err, const char *text)
{
    char what[512];
    describe_error(err, what, sizeof what);
    if (err->kind != AL_ERR_TRAP)
        return spec_fail(script, "expected trap \"%s\", got %s", text, what);
    if (!trap_text_matches(err->trap, text))
        return spec_fail(script, "expected trap \"%s\", got %s", text, what);
    return SPEC_PASS;
}

static spec_outcome run_assert_uninstantiable(spec_script *script, json_t *command);

static spec_outcome run_assert_trap(spec_script *script, json_t *command)
{
    const char *text = string_field(command, "text");
    if (text == NULL)
        return spec_fail(script, "assert_trap without \"text\"");
    if (json_object_get(command, "action") == NULL)
        return run_assert_uninstantiable(script, command); /* (assert_trap (module ...)) */
    spec_action_result result;
    spec_outcome outcome = SPEC_FAIL;
    if (spec_perform_action(script, json_object_get(command, "action"), &result)) {
        if (result.completed)
            outcome = spec_fail(script, "returned normally, expected trap \"%s\"", text);
        else
            outcome = check_trap(script, &result.err, text);
    }
    spec_action_result_free(&result);
    return outcome;
}

static spec_outcome run_assert_exhaustion(spec_script *script, json_t *command)
{
    spec_action_result result;
    spec_outcome outcome = SPEC_FAIL;
    if (spec_perform_action(script, json_object_get(command, "action"), &result)) {
        char what[512];
        describe_error(&result.err, what, sizeof what);
        if (result.completed)
            outcome = spec_fail(script, "returned normally, expected stack exhaustion");
        else if (result.err.kind != AL_ERR_TRAP || result.err.trap != AL_TRAP_STACK_EXHAUSTED)
            outcome = spec_fail(script, "expected stack exhaustion, got %s", what);
        else
            outcome = SPEC_PASS;
    }
    spec_action_result_free(&result);
    return outcome;
}

/* Only binary modules are read by airlock; text ones test the wast parser. */
static bool is_text_module(spec_script *script, json_t *command, spec_outcome *outcome)
{
    const char *module_type = string_field(command, "module_type");
    if (module_type == NULL || strcmp(module_type, "binary") == 0)
        return false;
    if (strcmp(module_type, "text") == 0)
        *outcome = spec_skip(script, "text-format module");
    else
        *outcome = spec_fail(script, "unknown module_type \"%s\"", module_type);
    return true;
}

/* assert_malformed / assert_invalid: al_module_new must fail with `kind`. */
static spec_outcome expect_decode_error(spec_script *script, json_t *command,
                                        al_error_kind kind)
{
    spec_outcome outcome;
    if (is_text_module(script, command, &outcome))
        return outcome;
    const char *text = string_field(command, "text");
    al_module *module;
    al_error err;
    if (!spec_decode_module_file(script, command, &module, &err))
        return SPEC_FAIL;
    if (module != NULL) {
        al_module_free(module);
        return spec_fail(script, "module accepted, expected %s (\"%s\")",
                         error_kind_name(kind), text ? text : "");
    }
    if (err.kind != kind) {
        char what[512];
        describe_error(&err, what, sizeof what);
        return spec_fail(script, "expected %s (\"%s\"), got %s", error_kind_name(kind),
                         text ? text : "", what);
    }
    return SPEC_PASS;
}

static spec_outcome run_assert_malformed(spec_script *script, json_t *command)
{
    return expect_decode_error(script, command, AL_ERR_MALFORMED);
}

static spec_outcome run_assert_invalid(spec_script *script, json_t *command)
{
    return expect_decode_error(script, command, AL_ERR_INVALID);
}

/* Decode (must succeed) and instantiate (must fail); err gets the failure. */
static bool expect_instantiation_failure(spec_script *script, json_t *command, al_error *err)
{
    spec_outcome outcome;
    if (is_text_module(script, command, &outcome)) {
        if (outcome == SPEC_SKIP)
            spec_fail(script, "text-format module cannot be instantiated");
        return false;
    }
    al_module *module;
    if (!spec_decode_module_file(script, command, &module, err))
        return false;
    if (module == NULL) {
        char what[512];
        describe_error(err, what, sizeof what);
        spec_fail(script, "module failed to decode: %s", what);
        return false;
    }
    if (spec_instantiate(script, module, err) != NULL) {
        spec_fail(script, "module instantiated, expected it to fail");
        return false;
    }
    return true;
}

static spec_outcome run_assert_unlinkable(spec_script *script, json_t *command)
{
    al_error err;
    if (!expect_instantiation_failure(script, command, &err))
        return SPEC_FAIL;
    if (err.kind != AL_ERR_LINK) {
        char what[512];
        describe_error(&err, what, sizeof what);
        const char *text = string_field(command, "text");
        return spec_fail(script, "expected unlinkable (\"%s\"), got %s", text ? text : "",
                         what);
    }
    return SPEC_PASS;
}

static spec_outcome run_assert_uninstantiable(spec_script *script, json_t *command)
{
    const char *text = string_field(command, "text");
    if (text == NULL)
        return spec_fail(script, "command without \"text\"");
    al_error err;
    if (!expect_instantiation_failure(script, command, &err))
        return SPEC_FAIL;
    return check_trap(script, &err, text);
}

/* ---- dispatch ------------------------------------------------------------ */

typedef spec_outcome (*command_handler)(spec_script *script, json_t *command);

static const struct {
    const char *type;
    command_handler run;
} command_handlers[] = {
    {"module", run_module},
    {"register", run_register},
    {"action", run_action},
    {"assert_return", run_assert_return},
    {"assert_trap", run_assert_trap},
    {"assert_exhaustion", run_assert_exhaustion},
    {"assert_malformed", run_assert_malformed},
    {"assert_invalid", run_assert_invalid},
    {"assert_unlinkable", run_assert_unlinkable},
    {"assert_uninstantiable", run_assert_uninstantiable},
};

/* Put "what the action was: " in front of the reason. */
static void prefix_reason_with_action(spec_script *script, json_t *action)
{
    char description[512], reason[sizeof script->reason];
    spec_describe_action(action, description, sizeof description);
    /* A too-long reason is cut short, which is fine for a report. */
    if (snprintf(reason, sizeof reason, "%s: %s", description, script->reason) > 0)
        memcpy(script->reason, reason, sizeof reason);
}

spec_outcome spec_run_command(spec_script *script, json_t *command)
{
    script->reason[0] = '\0';
    const char *type = string_field(command, "type");
    if (type == NULL)
        return spec_fail(script, "command without a type");
    size_t count = sizeof command_handlers / sizeof command_handlers[0];
    for (size_t i = 0; i < count; i++) {
        if (strcmp(type, command_handlers[i].type) != 0)
            continue;
        spec_outcome outcome = command_handlers[i].run(script, command);
        json_t *action = json_object_get(command, "action");
        if (outcome != SPEC_PASS && json_is_object(action))
            prefix_reason_with_action(script, action);
        return outcome;
    }
    return spec_fail(script, "unknown command type \"%s\"", type);
}
