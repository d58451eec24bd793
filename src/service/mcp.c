/*
 * mcp.c — the Model Context Protocol server (JSON-RPC 2.0), independent of
 * its transport: `airlock mcp` feeds it lines from stdin, the daemon's /mcp
 * route feeds it POST bodies (Streamable HTTP). One call handles one message.
 *
 * What it speaks:
 *   - protocol revisions 2025-11-25 (ours), 2025-06-18 and 2025-03-26: the
 *     server answers initialize with the client's revision when it is one of
 *     these, else with ours (the client then decides whether to go on);
 *   - lifecycle: initialize, notifications/initialized, ping; every other
 *     request before a successful initialize is refused (-32600), ping is
 *     allowed (the spec lets a client ping at any time);
 *   - tools (capability tools.listChanged false): run_python, run_command,
 *     run_wasm, each with a full JSON Schema inputSchema and an outputSchema
 *     describing the result object (svc_result_json) returned as
 *     structuredContent.
 *
 * Invariants:
 *   - every message is hostile: a non-object, a batch array (JSON-RPC batches
 *     were removed in 2025-06-18), a bad id, a wrong "jsonrpc" or a method of
 *     the wrong type is answered with a JSON-RPC error, never a crash;
 *     well-formed notifications (no id) and responses (no method) are never
 *     answered;
 *   - ids are echoed exactly (string or integer); when the id cannot be
 *     trusted the error carries id null, as JSON-RPC 2.0 §5 says;
 *   - tool arguments are checked against the very inputSchema tools/list
 *     publishes (one small validator below), so the schema a model sees and
 *     the check it meets cannot drift apart; the checked arguments are then
 *     turned into the HTTP API's request body and go through
 *     svc_request_parse and svc_execute — the one validation and execution
 *     path the API has (limits, allowed paths, auth, audit, redaction);
 *   - argument errors are reported the way the negotiated revision asks:
 *     2025-11-25 lists input validation errors as tool execution errors (a
 *     result with isError, so a model can correct itself), 2025-06-18 and
 *     2025-03-26 list invalid arguments as protocol errors (-32602). The
 *     message always names the argument. An unknown tool or malformed
 *     tools/call params are -32602 in every revision;
 *   - an execution that ran but did not succeed (status other than ok or
 *     output_truncated) is a result with isError true and its
 *     structuredContent; a refused one (unknown session, rate limit, ...)
 *     is isError with the reason as text;
 *   - svc_mcp_state is shared by the HTTP requests of one MCP session, which
 *     may run on different threads: it is guarded by its own mutex and only
 *     holds the negotiated revision.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#ifndef AIRLOCK_VERSION
#define AIRLOCK_VERSION "dev"
#endif

/* JSON-RPC 2.0 error codes (§5.1). */
enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
};

/* Newest first: the first is the one we offer. */
static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
#define N_VERSIONS (sizeof supported_versions / sizeof supported_versions[0])

#define MCP_VERSION_MAX 16

struct svc_mcp_state {
    pthread_mutex_t mu;
    bool initialized;
    char version[MCP_VERSION_MAX]; /* negotiated, "" before initialize */
};

svc_mcp_state *svc_mcp_state_new(void) {
    svc_mcp_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    if (pthread_mutex_init(&st->mu, NULL) != 0) {
        free(st);
        return NULL;
    }
    return st;
}

void svc_mcp_state_free(svc_mcp_state *st) {
    if (!st) return;
    pthread_mutex_destroy(&st->mu);
    free(st);
}

bool svc_mcp_version_supported(const char *version) {
    for (size_t i = 0; version && i < N_VERSIONS; i++)
        if (!strcmp(version, supported_versions[i])) return true;
    return false;
}

/* The negotiated revision copied out (out[0] == 0: not initialized). */
static void state_version(svc_mcp_state *st, char out[MCP_VERSION_MAX]) {
    pthread_mutex_lock(&st->mu);
    snprintf(out, MCP_VERSION_MAX, "%s", st->initialized ? st->version : "");
    pthread_mutex_unlock(&st->mu);
}

bool svc_mcp_initialized(svc_mcp_state *st, char *version, size_t len) {
    char v[MCP_VERSION_MAX];
    state_version(st, v);
    if (version && len) snprintf(version, len, "%s", v);
    return v[0] != 0;
}

/* ---- JSON-RPC envelopes ------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s, or 0 (RFC 3629: no
 * overlongs, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *s) {
    unsigned char b = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) need = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0) lo = 0xA0;
        else if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0) lo = 0x90;
        else if (b == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t i = 1; i < need; i++) {
        unsigned char c = s[i]; /* a NUL ends the check: it is no continuation byte */
        if (i == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
    }
    return need;
}

/* Messages quote client strings cut to a length ("%.64s"), which may split
 * a character; jansson refuses such a string, and the answer would be lost.
 * Every byte of a broken sequence becomes '?'. */
static void utf8_scrub(char *s) {
    for (unsigned char *p = (unsigned char *)s; *p;) {
        size_t n = utf8_len(p);
        if (n) p += n;
        else *p++ = '?';
    }
}

/* id is the request's (borrowed; NULL → null). */
static json_t *rpc_result(const json_t *id, json_t *result /* stolen */) {
    if (!result) return NULL;
    return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id",
                     id ? json_deep_copy(id) : json_null(), "result", result);
}

static json_t *rpc_error_data(const json_t *id, int code, json_t *data /* stolen or NULL */,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static json_t *rpc_error_data(const json_t *id, int code, json_t *data, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_scrub(msg);
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg);
    if (err && data) json_object_set_new(err, "data", data);
    else json_decref(data);
    if (!err) return NULL;
    return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id",
                     id ? json_deep_copy(id) : json_null(), "error", err);
}

#define rpc_error(id, code, ...) rpc_error_data((id), (code), NULL, __VA_ARGS__)

json_t *svc_mcp_parse_error(const char *detail) {
    return rpc_error(NULL, RPC_PARSE_ERROR, "parse error: %s", detail ? detail : "invalid JSON");
}

/* JSON-RPC ids MCP allows: a string or an integer (never null). */
static bool valid_id(const json_t *id) {
    return json_is_string(id) || json_is_integer(id);
}

/* ---- a JSON Schema subset: the keywords the tool schemas below use ----------------- *
 * type (one name or a list), enum (strings), minLength/maxLength (code
 * points), minimum/maximum (integers), items, minItems/maxItems, properties,
 * required, additionalProperties false. A schema using anything else is a
 * bug here, not the client's problem: the keywords are checked by the unit
 * test through tools/list. */

static bool type_matches(const char *type, const json_t *v) {
    if (!strcmp(type, "string")) return json_is_string(v);
    if (!strcmp(type, "integer")) return json_is_integer(v);
    if (!strcmp(type, "number")) return json_is_number(v);
    if (!strcmp(type, "boolean")) return json_is_boolean(v);
    if (!strcmp(type, "array")) return json_is_array(v);
    if (!strcmp(type, "object")) return json_is_object(v);
    if (!strcmp(type, "null")) return json_is_null(v);
    return false;
}

static const char *an(const char *type) {
    return (type[0] == 'a' || type[0] == 'i' || type[0] == 'o') ? "an" : "a";
}

static bool check_type(const json_t *schema, const json_t *v, const char *path, char *err,
                       size_t errlen) {
    const json_t *type = json_object_get(schema, "type");
    if (json_is_string(type)) {
        const char *t = json_string_value(type);
        if (type_matches(t, v)) return true;
        snprintf(err, errlen, "%s: must be %s %s", path, an(t), t);
        return false;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(type, i, t) {
        if (json_is_string(t) && type_matches(json_string_value(t), v)) return true;
    }
    if (!json_is_array(type)) return true;
    snprintf(err, errlen, "%s: has the wrong type", path);
    return false;
}

static size_t utf8_code_points(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
    return n;
}

static bool check_string(const json_t *schema, const json_t *v, const char *path, char *err,
                         size_t errlen) {
    const json_t *choices = json_object_get(schema, "enum");
    if (json_is_array(choices)) {
        size_t i;
        const json_t *c;
        json_array_foreach(choices, i, c) {
            if (json_equal(c, v)) return true;
        }
        char list[160] = "";
        json_array_foreach(choices, i, c) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                     json_string_value(c) ? json_string_value(c) : "?");
        }
        snprintf(err, errlen, "%s: must be one of %s", path, list);
        return false;
    }
    size_t n = utf8_code_points(json_string_value(v), json_string_length(v));
    json_int_t min = json_integer_value(json_object_get(schema, "minLength"));
    const json_t *max = json_object_get(schema, "maxLength");
    if ((json_int_t)n < min) {
        snprintf(err, errlen, "%s: must not be empty", path);
        return false;
    }
    if (max && (json_int_t)n > json_integer_value(max)) {
        snprintf(err, errlen, "%s: longer than %" JSON_INTEGER_FORMAT " characters", path,
                 json_integer_value(max));
        return false;
    }
    return true;
}

static bool check_integer(const json_t *schema, const json_t *v, const char *path, char *err,
                          size_t errlen) {
    json_int_t x = json_integer_value(v);
    const json_t *min = json_object_get(schema, "minimum");
    const json_t *max = json_object_get(schema, "maximum");
    if (min && x < json_integer_value(min)) {
        snprintf(err, errlen, "%s: must be at least %" JSON_INTEGER_FORMAT, path,
                 json_integer_value(min));
        return false;
    }
    if (max && x > json_integer_value(max)) {
        snprintf(err, errlen, "%s: must be at most %" JSON_INTEGER_FORMAT, path,
                 json_integer_value(max));
        return false;
    }
    return true;
}

static bool schema_check(const json_t *schema, const json_t *v, const char *path, char *err,
                         size_t errlen);

static bool check_array(const json_t *schema, const json_t *v, const char *path, char *err,
                        size_t errlen) {
    size_t n = json_array_size(v);
    const json_t *min = json_object_get(schema, "minItems");
    const json_t *max = json_object_get(schema, "maxItems");
    if (min && (json_int_t)n < json_integer_value(min)) {
        snprintf(err, errlen, "%s: needs at least %" JSON_INTEGER_FORMAT " item(s)", path,
                 json_integer_value(min));
        return false;
    }
    if (max && (json_int_t)n > json_integer_value(max)) {
        snprintf(err, errlen, "%s: more than %" JSON_INTEGER_FORMAT " items", path,
                 json_integer_value(max));
        return false;
    }
    const json_t *items = json_object_get(schema, "items");
    if (!items) return true;
    for (size_t i = 0; i < n; i++) {
        char sub[128];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        if (!schema_check(items, json_array_get(v, i), sub, err, errlen)) return false;
    }
    return true;
}

/* Names the known properties, for "unknown argument" messages. */
static void property_names(const json_t *props, char *out, size_t len) {
    const char *key;
    const json_t *sub;
    out[0] = 0;
    json_object_foreach((json_t *)props, key, sub) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? ", " : "", key);
    }
}

static bool check_object(const json_t *schema, const json_t *v, const char *path, char *err,
                         size_t errlen) {
    const json_t *props = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required");
    size_t i;
    const json_t *name;
    json_array_foreach(required, i, name) {
        if (!json_object_get(v, json_string_value(name))) {
            snprintf(err, errlen, "%s%s%s: required argument missing", path, *path ? "." : "",
                     json_string_value(name));
            return false;
        }
    }
    bool closed = json_is_false(json_object_get(schema, "additionalProperties"));
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        char sub[128];
        snprintf(sub, sizeof sub, "%s%s%.64s", path, *path ? "." : "", key);
        const json_t *ps = json_object_get(props, key);
        if (ps) {
            if (!schema_check(ps, value, sub, err, errlen)) return false;
        } else if (closed) {
            char names[200];
            property_names(props, names, sizeof names);
            snprintf(err, errlen, "%s: unknown argument (expected: %s)", sub, names);
            return false;
        }
    }
    return true;
}

/* Check v against schema; false + "path: why" in err. */
static bool schema_check(const json_t *schema, const json_t *v, const char *path, char *err,
                         size_t errlen) {
    if (!check_type(schema, v, path, err, errlen)) return false;
    if (json_is_string(v)) return check_string(schema, v, path, err, errlen);
    if (json_is_integer(v)) return check_integer(schema, v, path, err, errlen);
    if (json_is_array(v)) return check_array(schema, v, path, err, errlen);
    if (json_is_object(v)) return check_object(schema, v, path, err, errlen);
    return true;
}

/* ---- the tools ------------------------------------------------------------------------ */

/* Largest timeout a schema admits; the config's max_timeout_ms (checked by
 * svc_execute) is the real ceiling. One day, so the number is never absurd. */
#define SCHEMA_MAX_TIMEOUT_MS 86400000
/* argv and wasm args: far more than any real command line, few enough that
 * a hostile list cannot make the checks expensive. */
#define SCHEMA_MAX_ARGS 4096

static json_t *prop(const char *type, const char *description) {
    return json_pack("{s:s, s:s}", "type", type, "description", description);
}

static json_t *timeout_prop(void) {
    return json_pack("{s:s, s:i, s:i, s:s}", "type", "integer", "minimum", 1, "maximum",
                     SCHEMA_MAX_TIMEOUT_MS, "description",
                     "Wall-clock limit in milliseconds (default: the server's, capped by its "
                     "max_timeout_ms).");
}

static json_t *string_list_prop(int min_items, const char *description) {
    json_t *p = json_pack("{s:s, s:{s:s}, s:i, s:s}", "type", "array", "items", "type", "string",
                          "maxItems", SCHEMA_MAX_ARGS, "description", description);
    if (p && min_items > 0) json_object_set_new(p, "minItems", json_integer(min_items));
    return p;
}

static json_t *object_schema(json_t *props /* stolen */, json_t *required /* stolen */) {
    return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required",
                     required, "additionalProperties", 0);
}

static json_t *run_python_input(void) {
    json_t *props = json_pack(
        "{s:o, s:o, s:o}", "code",
        json_pack("{s:s, s:i, s:s}", "type", "string", "minLength", 1, "description",
                  "Python 3 source, run as `python -c CODE` in a WebAssembly sandbox: no "
                  "network, no host files, bounded memory and CPU."),
        "session_id",
        prop("string", "A Python session (created through the HTTP API) whose interpreter "
                       "keeps variables and imports between calls."),
        "timeout_ms", timeout_prop());
    return object_schema(props, json_pack("[s]", "code"));
}

static json_t *run_command_input(void) {
    json_t *props = json_pack(
        "{s:o, s:o, s:o, s:o}", "argv",
        string_list_prop(1, "The program and its arguments; argv[0] is looked up in PATH inside "
                            "the sandbox when it has no '/'."),
        "backend",
        json_pack("{s:s, s:[s,s], s:s, s:s}", "type", "string", "enum", "native", "gvisor",
                  "default", "native", "description",
                  "native: Linux namespaces, seccomp, Landlock and cgroups; gvisor: the same "
                  "program inside gVisor's user-space kernel."),
        "workspace",
        prop("string", "The id of a session whose workspace directory is mounted for the "
                       "command (created through the HTTP API)."),
        "timeout_ms", timeout_prop());
    return object_schema(props, json_pack("[s]", "argv"));
}

static json_t *run_wasm_input(void) {
    json_t *props = json_pack(
        "{s:o, s:o, s:o, s:o}", "module_base64",
        json_pack("{s:s, s:i, s:s}", "type", "string", "minLength", 1, "description",
                  "A WASI preview1 command module (its _start is run), base64-encoded. "
                  "Give exactly one of module_base64 and module_path."),
        "module_path",
        json_pack("{s:s, s:i, s:s}", "type", "string", "minLength", 1, "description",
                  "Path of a .wasm file on the server, inside a directory its configuration "
                  "allows. Give exactly one of module_base64 and module_path."),
        "args", string_list_prop(0, "Arguments after argv[0]."), "timeout_ms", timeout_prop());
    /* "exactly one of" is enforced in code, not with a top-level oneOf: some
     * model APIs refuse tool schemas with oneOf/anyOf at the top level. */
    return object_schema(props, json_array());
}

/* The result object (svc_result_json: the fields of `airlock exec --json`
 * but dirs, plus redactions and audit_id). Open (no additionalProperties:
 * false) so a field added later does not break a validating client. */
static const struct result_field {
    const char *name;
    const char *type, *or_null; /* or_null: the second type, "null", or NULL */
    const char *description;
} result_fields[] = {
    {"exit_code", "integer", NULL, "The program's exit code (0 when it returned normally)."},
    {"trap", "string", "null", "The WebAssembly trap (spec wording), or null."},
    {"trap_location", "object", "null", "Where the wasm trap happened, with a backtrace."},
    {"fuel_used", "integer", NULL, "WebAssembly instructions spent (0 for native programs)."},
    {"wall_ms", "number", NULL, "Wall-clock time in milliseconds."},
    {"peak_memory_bytes", "integer", NULL, "Linear memory at the end (wasm)."},
    {"stdout", "string", NULL, "Standard output (secrets redacted; lossy for non-UTF-8)."},
    {"stdout_truncated", "boolean", NULL, "Output past the cap was dropped."},
    {"stderr", "string", NULL, "Standard error (secrets redacted; lossy for non-UTF-8)."},
    {"stderr_truncated", "boolean", NULL, "Output past the cap was dropped."},
    {"signal", "integer", NULL, "The signal that ended the program, 0 if none."},
    {"cpu_ms", "number", NULL, "CPU time of the whole process tree (native, gvisor)."},
    {"denied_syscalls", "integer", NULL, "System calls the seccomp filter refused."},
    {"backend", "string", "null", "What ran it: wasm, native, gvisor (platform)."},
    {"execution", "string", "null", "The execution's id in egress logs (native, gvisor)."},
    {"error", "string", "null", "Why it failed; null when status is ok, exit or "
                                "output_truncated."},
    {"redactions", "integer", NULL, "Secrets replaced in the output."},
    {"audit_id", "integer", "null", "The execution's row in the audit log."},
};

static json_t *result_output_schema(void) {
    json_t *props = json_pack(
        "{s:{s:s, s:[s,s,s,s,s,s,s,s,s,s,s,s], s:s}, s:{s:s, s:{s:s}, s:s}, "
        "s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:s}}",
        "status", "type", "string", "enum", "ok", "exit", "trap", "fuel_exhausted", "timeout",
        "memory_limit", "output_truncated", "invalid_module", "error", "signaled", "cpu_limit",
        "unsupported", "description", "How the execution ended.", "limits_hit", "type", "array",
        "items", "type", "string", "description",
        "Limits that took effect: wall, cpu, memory, processes, file_size, output, fuel.",
        "egress", "type", "object", "properties", "allowed", "type", "integer", "denied", "type",
        "integer", "bytes", "type", "integer", "description",
        "Network egress through the proxy: connections allowed, requests denied, bytes.");
    for (size_t i = 0; props && i < sizeof result_fields / sizeof result_fields[0]; i++) {
        const struct result_field *f = &result_fields[i];
        json_t *p = f->or_null ? json_pack("{s:[s,s], s:s}", "type", f->type, f->or_null,
                                           "description", f->description)
                               : prop(f->type, f->description);
        if (!p || json_object_set_new(props, f->name, p) != 0) {
            json_decref(props);
            props = NULL;
        }
    }
    if (!props) return NULL;
    return json_pack("{s:s, s:o, s:[s,s,s,s]}", "type", "object", "properties", props, "required",
                     "status", "exit_code", "stdout", "stderr");
}

typedef struct arg_map {
    const char *arg;   /* the tool's argument */
    const char *field; /* the request body's field (svc_request_parse) */
} arg_map;

typedef struct tool_def {
    const char *name, *title, *description;
    const char *kind; /* the request body's "kind" */
    json_t *(*input)(void);
    arg_map args[4];
} tool_def;

static const tool_def tools[] = {
    {"run_python", "Run Python",
     "Run Python 3 code in airlock's WebAssembly sandbox (CPython on WASI) and return its "
     "output and exit status.",
     "python",
     run_python_input,
     {{"code", "code"}, {"session_id", "session"}, {"timeout_ms", "timeout_ms"}, {0}}},
    {"run_command", "Run a command",
     "Run a Linux program in an isolated sandbox (native namespaces or gVisor) with no network "
     "and return its output and exit status.",
     "command",
     run_command_input,
     {{"argv", "argv"}, {"backend", "backend"}, {"workspace", "session"}, {"timeout_ms",
                                                                          "timeout_ms"}}},
    {"run_wasm", "Run a WebAssembly module",
     "Run a WASI preview1 command module in airlock's WebAssembly sandbox and return its output "
     "and exit status.",
     "wasm",
     run_wasm_input,
     {{"module_base64", "module_base64"}, {"module_path", "module_path"}, {"args", "args"},
      {"timeout_ms", "timeout_ms"}}},
};
#define N_TOOLS (sizeof tools / sizeof tools[0])

static const tool_def *find_tool(const char *name) {
    for (size_t i = 0; name && i < N_TOOLS; i++)
        if (!strcmp(tools[i].name, name)) return &tools[i];
    return NULL;
}

static json_t *tool_json(const tool_def *t) {
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b}}", "name", t->name, "title",
                     t->title, "description", t->description, "inputSchema", t->input(),
                     "outputSchema", result_output_schema(), "annotations", "readOnlyHint", 0,
                     "destructiveHint", 0, "openWorldHint", 0);
}

/* ---- methods ------------------------------------------------------------------------- */

static const char instructions[] =
    "airlock runs untrusted code in sandboxes. run_python runs Python 3 (WebAssembly, no "
    "network, no host files); run_command runs a Linux program isolated with namespaces "
    "(backend native) or gVisor (backend gvisor); run_wasm runs a WASI module. Every result "
    "has status, exit_code, stdout and stderr; isError is set when the code did not succeed. "
    "Limits (time, memory, fuel) are the server's unless a smaller timeout_ms is given.";

static json_t *do_initialize(svc_mcp_state *st, const json_t *id, const json_t *params) {
    const json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_string(pv))
        return rpc_error(id, RPC_INVALID_PARAMS, "protocolVersion: must be a string");
    const char *asked = json_string_value(pv);
    const char *answer = svc_mcp_version_supported(asked) ? asked : supported_versions[0];

    pthread_mutex_lock(&st->mu);
    bool again = st->initialized;
    if (!again) {
        st->initialized = true;
        snprintf(st->version, sizeof st->version, "%s", answer);
    }
    pthread_mutex_unlock(&st->mu);
    if (again) return rpc_error(id, RPC_INVALID_REQUEST, "already initialized");

    return rpc_result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
                                    "protocolVersion", answer, "capabilities", "tools",
                                    "listChanged", 0, "serverInfo", "name", "airlock", "title",
                                    "airlock sandbox", "version", AIRLOCK_VERSION,
                                    "instructions", instructions));
}

/* The built-in tools, then every installed servlet's (capabilities.c). */
static json_t *do_tools_list(svc *s, const json_t *id) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < N_TOOLS; i++)
        json_array_append_new(list, tool_json(&tools[i]));
    json_t *servlets = s ? svc_caps_mcp_tools(svc_caps_of(s)) : NULL;
    if (list && servlets) json_array_extend(list, servlets);
    json_decref(servlets);
    return rpc_result(id, json_pack("{s:o}", "tools", list));
}

/* An argument the client got wrong, reported as the negotiated revision
 * wants it (see the top of the file). */
static json_t *invalid_argument(const json_t *id, const char *version, const char *tool,
                                const char *why) {
    if (strcmp(version, "2025-11-25") >= 0) {
        char text[600];
        snprintf(text, sizeof text, "invalid arguments for %s: %s", tool, why);
        utf8_scrub(text);
        return rpc_result(id, json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                                        "text", text, "isError", 1));
    }
    char argument[128];
    size_t n = strcspn(why, ":.[ ,");
    snprintf(argument, sizeof argument, "%.*s", (int)(n < 127 ? n : 127), why);
    utf8_scrub(argument);
    return rpc_error_data(id, RPC_INVALID_PARAMS,
                          json_pack("{s:s, s:s}", "tool", tool, "argument", argument),
                          "invalid arguments for %s: %s", tool, why);
}

/* Checks the schema does not express (they span arguments). */
static bool check_tool_rules(const tool_def *t, const json_t *args, char *err, size_t errlen) {
    if (!strcmp(t->name, "run_wasm")) {
        bool b64 = json_object_get(args, "module_base64") != NULL;
        bool path = json_object_get(args, "module_path") != NULL;
        if (b64 == path) {
            snprintf(err, errlen, "module_base64, module_path: give exactly one of them");
            return false;
        }
    }
    return true;
}

/* svc_request_parse names the body's fields ("session: unknown ..."):
 * say the tool's argument instead ("session_id: unknown ..."). */
static void in_tool_terms(const tool_def *t, const char *err, char *out, size_t len) {
    for (size_t i = 0; i < sizeof t->args / sizeof t->args[0] && t->args[i].arg; i++) {
        size_t n = strlen(t->args[i].field);
        if (strncmp(err, t->args[i].field, n) || !strchr(":[. ", err[n]) || !err[n]) continue;
        snprintf(out, len, "%s%s", t->args[i].arg, err + n);
        return;
    }
    snprintf(out, len, "%s", err);
}

/* The HTTP API's request body for checked arguments. */
static json_t *request_body(const tool_def *t, const json_t *args) {
    json_t *body = json_pack("{s:s}", "kind", t->kind);
    for (size_t i = 0; body && i < sizeof t->args / sizeof t->args[0] && t->args[i].arg; i++) {
        const json_t *v = json_object_get(args, t->args[i].arg);
        if (v) json_object_set_new(body, t->args[i].field, json_deep_copy(v));
    }
    return body;
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (!*buf) return;
    if (*len + n + 1 > *cap) {
        size_t want = (*len + n + 1) * 2;
        char *p = realloc(*buf, want);
        if (!p) {
            free(*buf);
            *buf = NULL;
            return;
        }
        *buf = p;
        *cap = want;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
}

/* What a model reads: stdout, then stderr, then one line of outcome. */
static json_t *result_text(const json_t *result) {
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = 0;
    const json_t *out = json_object_get(result, "stdout");
    const json_t *errs = json_object_get(result, "stderr");
    if (json_string_length(out)) {
        append(&buf, &len, &cap, json_string_value(out), json_string_length(out));
        if (buf && buf[len - 1] != '\n') append(&buf, &len, &cap, "\n", 1);
    }
    if (json_string_length(errs)) {
        append(&buf, &len, &cap, "--- stderr ---\n", 15);
        append(&buf, &len, &cap, json_string_value(errs), json_string_length(errs));
        if (buf && buf[len - 1] != '\n') append(&buf, &len, &cap, "\n", 1);
    }
    char line[400];
    const char *status = json_string_value(json_object_get(result, "status"));
    const char *error = json_string_value(json_object_get(result, "error"));
    int n = snprintf(line, sizeof line, "[status: %s, exit code %" JSON_INTEGER_FORMAT "%s%.300s]",
                     status ? status : "?",
                     json_integer_value(json_object_get(result, "exit_code")),
                     error ? ", error: " : "", error ? error : "");
    utf8_scrub(line); /* in place, so n stays the length */
    n = n < 0 ? 0 : n < (int)sizeof line ? n : (int)sizeof line - 1;
    append(&buf, &len, &cap, line, (size_t)n);
    if (!buf) return NULL;
    json_t *text = json_stringn(buf, len);
    free(buf);
    return text;
}

static bool status_is_success(const json_t *result) {
    const char *status = json_string_value(json_object_get(result, "status"));
    return status && (!strcmp(status, "ok") || !strcmp(status, "output_truncated"));
}

static json_t *tool_result(const json_t *id, json_t *result /* stolen */) {
    json_t *text = result_text(result);
    if (!text) {
        json_decref(result);
        return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    }
    bool failed = !status_is_success(result);
    return rpc_result(id, json_pack("{s:[{s:s, s:o}], s:o, s:b}", "content", "type", "text",
                                    "text", text, "structuredContent", result, "isError",
                                    failed));
}

/* svc_execute refused the request: say why, as a tool execution error. */
static json_t *tool_refused(const json_t *id, const tool_def *t, json_t *response /* stolen */) {
    const json_t *e = json_object_get(response, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    char why[400], text[600];
    in_tool_terms(t, message ? message : "the request was refused", why, sizeof why);
    snprintf(text, sizeof text, "refused (%s): %s", code ? code : "error", why);
    utf8_scrub(text);
    json_decref(response);
    return rpc_result(id, json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                                    text, "isError", 1));
}

static json_t *run_tool(svc *s, const json_t *id, const char *version, const tool_def *t,
                        const json_t *args, const svc_caller *caller) {
    char err[400];
    json_t *schema = t->input();
    if (!schema) return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    bool ok = schema_check(schema, args, "", err, sizeof err) &&
              check_tool_rules(t, args, err, sizeof err);
    json_decref(schema);
    if (!ok) return invalid_argument(id, version, t->name, err);

    json_t *body = request_body(t, args);
    if (!body) return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    svc_exec_request req;
    memset(&req, 0, sizeof req);
    ok = svc_request_parse(body, &req, err, sizeof err);
    json_decref(body);
    if (!ok) {
        svc_request_free(&req);
        char renamed[sizeof err];
        in_tool_terms(t, err, renamed, sizeof renamed);
        return invalid_argument(id, version, t->name, renamed);
    }
    int status_code = 500;
    json_t *response = svc_execute(s, &req, caller, &status_code);
    svc_request_free(&req);
    if (!response) return rpc_error(id, RPC_INTERNAL_ERROR, "the execution produced no result");
    if (status_code == 200) return tool_result(id, response);
    if (status_code == 400) { /* beyond the config's limits, a bad path: the arguments */
        const char *message =
            json_string_value(json_object_get(json_object_get(response, "error"), "message"));
        in_tool_terms(t, message ? message : "bad request", err, sizeof err);
        json_decref(response);
        return invalid_argument(id, version, t->name, err);
    }
    return tool_refused(id, t, response);
}

/* ---- servlet tools: a capability's `call` --------------------------------------------- */

/* The servlet's answer ({"content": [...], "isError": bool}) is hostile
 * bytes: it is passed on only when it has that shape. */
static json_t *servlet_answer(const json_t *id, json_t *result /* stolen */) {
    const json_t *out = json_object_get(result, "stdout");
    json_error_t je;
    json_t *doc = status_is_success(result) && json_is_string(out)
                      ? json_loadb(json_string_value(out), json_string_length(out),
                                   JSON_REJECT_DUPLICATES, &je)
                      : NULL;
    const json_t *content = json_object_get(doc, "content");
    const json_t *is_error = json_object_get(doc, "isError");
    bool shaped = json_is_array(content) && (!is_error || json_is_boolean(is_error));
    for (size_t i = 0; shaped && i < json_array_size(content); i++) {
        const json_t *item = json_array_get(content, i);
        shaped = json_is_object(item) && json_is_string(json_object_get(item, "type"));
    }
    if (!shaped) {
        json_decref(doc);
        if (status_is_success(result)) {
            json_object_set_new(result, "status", json_string("error"));
            json_object_set_new(result, "error",
                                json_string("manifest conformance error: the servlet's output "
                                            "is not {\"content\": [...], \"isError\": bool}"));
        }
        return tool_result(id, result);
    }
    json_t *answer = json_pack("{s:O, s:b}", "content", content, "isError", json_is_true(is_error));
    json_decref(doc);
    json_decref(result);
    return rpc_result(id, answer);
}

/* {"params": {"name": tool, "arguments": args}} to the capability's `call`,
 * through svc_execute (auth, rate limits, audit, redaction) like any tool. */
static json_t *run_servlet_tool(svc *s, const json_t *id, svc_cap *cap, const char *tool,
                                const json_t *args, const svc_caller *caller) {
    json_t *input = json_pack("{s:{s:s, s:O}}", "params", "name", tool, "arguments", args);
    char *text = input ? json_dumps(input, JSON_COMPACT) : NULL;
    json_decref(input);
    if (!text) return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    json_t *body = json_pack("{s:s, s:s, s:s, s:s}", "kind", "plugin", "capability",
                             svc_cap_name(cap), "function", "call", "input", text);
    free(text);
    if (!body) return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    svc_exec_request req;
    char err[400];
    bool ok = svc_request_parse(body, &req, err, sizeof err);
    json_decref(body);
    if (!ok) return rpc_error(id, RPC_INTERNAL_ERROR, "servlet request: %s", err);
    int status_code = 500;
    json_t *response = svc_execute(s, &req, caller, &status_code);
    svc_request_free(&req);
    if (!response) return rpc_error(id, RPC_INTERNAL_ERROR, "the execution produced no result");
    if (status_code == 200) return servlet_answer(id, response);
    static const tool_def servlet = {"servlet", "", "", "plugin", NULL, {{0}}};
    return tool_refused(id, &servlet, response);
}

static json_t *do_tools_call(svc *s, const json_t *id, const char *version, const json_t *params,
                             const svc_caller *caller) {
    const json_t *name = json_object_get(params, "name");
    if (!json_is_string(name)) return rpc_error(id, RPC_INVALID_PARAMS, "name: must be a string");
    const tool_def *t = find_tool(json_string_value(name));
    char servlet_tool[80];
    svc_cap *cap = t || !s ? NULL
                           : svc_caps_find_tool(svc_caps_of(s), json_string_value(name),
                                                servlet_tool, sizeof servlet_tool);
    if (!t && !cap)
        return rpc_error(id, RPC_INVALID_PARAMS, "unknown tool: %.64s", json_string_value(name));
    const json_t *args = json_object_get(params, "arguments");
    json_t *empty = NULL;
    if (!args) args = empty = json_object();
    if (!json_is_object(args)) {
        json_decref(empty);
        svc_cap_release(cap);
        return rpc_error_data(id, RPC_INVALID_PARAMS, json_pack("{s:s}", "argument", "arguments"),
                              "arguments: must be an object");
    }
    json_t *response = cap ? run_servlet_tool(s, id, cap, servlet_tool, args, caller)
                           : run_tool(s, id, version, t, args, caller);
    svc_cap_release(cap);
    json_decref(empty);
    return response;
}

/* ---- dispatch ------------------------------------------------------------------------- */

static void handle_notification(svc_mcp_state *st, const char *method) {
    /* notifications/initialized completes the handshake; nothing here
     * depends on it (requests are served once initialize has been
     * answered). notifications/cancelled cannot stop an inline execution;
     * the execution's own timeout bounds it. Others are ignored, as the
     * spec asks of unknown notifications. */
    (void)st;
    (void)method;
}

static json_t *handle_request(svc *s, svc_mcp_state *st, const json_t *id, const char *method,
                              const json_t *params, const svc_caller *caller) {
    if (!strcmp(method, "ping")) return rpc_result(id, json_object());
    if (!strcmp(method, "initialize")) return do_initialize(st, id, params);

    char version[MCP_VERSION_MAX];
    state_version(st, version);
    bool known = !strcmp(method, "tools/list") || !strcmp(method, "tools/call");
    if (!known) return rpc_error(id, RPC_METHOD_NOT_FOUND, "method not found: %.64s", method);
    if (!version[0])
        return rpc_error(id, RPC_INVALID_REQUEST, "not initialized: send initialize first");
    if (!strcmp(method, "tools/list")) return do_tools_list(s, id);
    return do_tools_call(s, id, version, params, caller);
}

json_t *svc_mcp_handle(svc *s, svc_mcp_state *st, const json_t *message,
                       const svc_caller *caller) {
    if (json_is_array(message))
        return rpc_error(NULL, RPC_INVALID_REQUEST,
                         "batch requests are not supported (removed in MCP 2025-06-18)");
    if (!json_is_object(message))
        return rpc_error(NULL, RPC_INVALID_REQUEST, "a message must be a JSON object");

    const json_t *id = json_object_get(message, "id");
    const json_t *method = json_object_get(message, "method");
    bool is_response = !method && (json_object_get(message, "result") ||
                                   json_object_get(message, "error"));
    if (is_response) return NULL; /* we send no requests: nothing to match it to */
    if (id && !valid_id(id))
        return rpc_error(NULL, RPC_INVALID_REQUEST, "id: must be a string or an integer");
    const json_t *jsonrpc = json_object_get(message, "jsonrpc");
    if (!json_is_string(jsonrpc) || strcmp(json_string_value(jsonrpc), "2.0"))
        return rpc_error(id, RPC_INVALID_REQUEST, "jsonrpc: must be \"2.0\"");
    if (!json_is_string(method))
        return rpc_error(id, RPC_INVALID_REQUEST, "method: must be a string");
    if (!id) { /* a notification: never answered */
        handle_notification(st, json_string_value(method));
        return NULL;
    }
    const json_t *params = json_object_get(message, "params");
    json_t *empty = NULL;
    if (!params) params = empty = json_object();
    if (!json_is_object(params)) {
        json_decref(empty);
        return rpc_error(id, RPC_INVALID_PARAMS, "params: must be an object");
    }
    json_t *response = handle_request(s, st, id, json_string_value(method), params, caller);
    json_decref(empty);
    if (!response) response = rpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
    return response;
}
