/*
 * request.c — execution request bodies (JSON) → svc_exec_request, and
 * results / errors → JSON (service.h).
 *
 * The body (every field but "kind" optional; which ones a kind takes below):
 *
 *   {"kind": "python" | "wasm" | "command" | "plugin",
 *    "code": "print(1)",                     python (required)
 *    "module_base64": "AGFzbQ..." |         wasm: exactly one of the two
 *    "module_path": "/allowed/dir/m.wasm",
 *    "args": ["a", "b"],                     python, wasm: argv after argv[0]
 *    "argv": ["/bin/echo", "hi"],            command (required, non-empty)
 *    "backend": "native" | "gvisor",         command (default "native")
 *    "env": {"K": "V"},
 *    "stdin": "text" | "stdin_base64": "..", at most one of the two
 *    "timeout_ms": N, "memory_bytes": N,
 *    "fuel": N,                              python, wasm
 *    "session": "id",
 *    "dirs": [{"host": "/abs", "guest": "/abs", "read_only": true}],
 *    "egress": {"allow_domains": [..], "deny_domains": [..],
 *               "allow_ports": [..], "allow_ips": [..],
 *               "headers": [{"domain": "d", "name": "N", "value": "V"}],
 *               "hosts": {"name": "addr"}, "max_connections": N,
 *               "max_bytes_per_connection": N, "max_bytes": N,
 *               "idle_timeout_ms": N},     command
 *    "stream": true,
 *    "capability": "textkit",                plugin (required): an installed capability
 *    "function": "count_vowels",             plugin (required): its function
 *    "input": "text" | "input_base64": ".."} plugin: the call's input (at most one)
 *
 * Invariants (the rules, the strict reading and the "egress" object are
 * policy_json.c's, shared with `airlock exec --policy`, so both say the same
 * things in the same words):
 *  - strict: an unknown field, a field the kind does not take, a wrong type,
 *    a number out of range (never negative, never 0, never a fraction), a
 *    string with a NUL byte, bad base64 is a false return with one line
 *    naming the JSON path (`unknown field "egress.foo"`,
 *    `egress.allow_ports[1]: expected an integer 1..65535`). Duplicate keys
 *    are the caller's to refuse: json_loadb(..., JSON_REJECT_DUPLICATES)
 *    (by the time a json_t exists, one of the two values is gone);
 *  - bounded: code <= 1 MiB, module <= 50 MiB decoded, stdin <= 16 MiB
 *    decoded, argv <= 4096 entries, env <= 1024, dirs <= 64, each egress
 *    list <= 1024 — checked before anything of that size is allocated;
 *  - egress has no "log" here: a client must not name files the daemon
 *    writes to;
 *  - every allocation of a request is in its `owned` pool (or its egress
 *    rules) and freed by svc_request_free, on success and on every error
 *    path (a failed parse leaves *out zeroed);
 *  - messages are one printable line (keys echoed in them have control
 *    bytes and quotes replaced); header values are never echoed;
 *  - result JSON is always valid: output bytes that are not well-formed
 *    UTF-8 become U+FFFD, one per maximal ill-formed subpart, by the same
 *    decoder (svc_utf8_sequence) as src/cli/json_out.c's for
 *    `airlock exec --json`.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_json.h"
#include "service.h"

#define MAX_CODE ((size_t)1 << 20)
#define MAX_MODULE ((size_t)50 << 20)
#define MAX_STDIN ((size_t)16 << 20)
#define MAX_ARGV 4096
#define MAX_ENV 1024
#define MAX_DIRS 64
#define MAX_PATH 4095                           /* PATH_MAX - 1 */
#define MAX_ARG ((size_t)128 << 10)             /* Linux MAX_ARG_STRLEN */
#define MAX_SESSION_ID 64
#define MIN_MEMORY UINT64_C(65536)              /* one wasm page, as --memory */
#define MAX_MEMORY (UINT64_C(4) << 30)

/* "egress": at most 1024 entries per list, rules (and header domains and
 * names, host addresses) of at most 4096 bytes, header values of at most
 * 64 KiB before the rule's own 8 KiB check; no "log" (a client must not
 * name files the daemon writes to). */
static const svc_egress_limits egress_limits = {1024, 4096, 65536, false};

/* ---- ownership: every allocation of one request ---------------------------------- */

/* What svc_exec_request.owned points to: the request's strings and arrays,
 * and the egress rules its al_egress borrows. */
typedef struct request_owned {
    svc_strings pool;
    svc_egress_rules egress;
} request_owned;

/* n zeroed elements of size bytes owned by the pool (never NULL for n = 0:
 * the pool adds a byte). */
static void *own_array(request_owned *o, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return svc_strings_alloc(&o->pool, n * size);
}

static void owned_free(request_owned *o) {
    if (!o) return;
    svc_strings_free(&o->pool);
    svc_egress_free(&o->egress);
    free(o);
}

void svc_request_free(svc_exec_request *r) {
    if (!r) return;
    owned_free(r->owned);
    memset(r, 0, sizeof *r);
}

/* An owned copy of a string value of at most max bytes. */
static bool copy_string(svc_json_ctx *c, request_owned *o, json_t *v, size_t max, char **out) {
    const char *s;
    size_t n;
    if (!svc_json_string(c, v, max, &s, &n)) return false;
    *out = svc_strings_copy(&o->pool, s, n);
    return svc_json_rule(c, *out ? NULL : svc_oom);
}

/* ---- base64 (RFC 4648, standard alphabet, padded; nothing else) -------------------- */

static int b64_value(unsigned char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

/* Decode s[0..n) into out (room for n / 4 * 3 bytes). Strict: a length that
 * is not a multiple of 4, a byte outside the alphabet (whitespace included),
 * '=' anywhere but the last one or two places, or non-zero bits under the
 * padding is refused: one text, one meaning. */
static const char *b64_decode(const char *s, size_t n, uint8_t *out, size_t *outlen) {
    static const char bad[] = "not base64 (RFC 4648: A-Z a-z 0-9 + /, padded with '=')";
    if (n % 4) return bad;
    size_t pad = 0;
    if (n && s[n - 1] == '=') pad = s[n - 2] == '=' ? 2 : 1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        for (int k = 0; k < 4; k++) {
            bool padded = last && k >= 4 - (int)pad;
            v[k] = padded ? 0 : b64_value((unsigned char)s[i + (size_t)k]);
            if (v[k] < 0) return bad;
        }
        uint32_t bits = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        size_t keep = last ? 3 - pad : 3;
        if (last && pad && (bits & (pad == 1 ? 0xFFu : 0xFFFFu))) return bad;
        for (size_t k = 0; k < keep; k++) out[o++] = (uint8_t)(bits >> (16 - 8 * k));
    }
    *outlen = o;
    return NULL;
}

uint8_t *svc_base64_decode(const char *s, size_t n, size_t max, size_t *len, const char **why) {
    *why = NULL;
    if (n > (max + 2) / 3 * 4) {
        *why = "too large once decoded";
        return NULL;
    }
    uint8_t *buf = malloc(n / 4 * 3 + 1);
    if (!buf) {
        *why = svc_oom;
        return NULL;
    }
    *why = b64_decode(s, n, buf, len);
    if (!*why && *len > max) *why = "too large once decoded";
    if (*why) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A base64 string decoded into owned bytes, at most max of them. */
static bool get_base64(svc_json_ctx *c, request_owned *o, json_t *v, size_t max, uint8_t **out,
                       size_t *outlen) {
    const char *s;
    size_t n;
    /* 4 characters per 3 bytes: refuse what cannot fit before decoding */
    if (!svc_json_string(c, v, (max + 2) / 3 * 4, &s, &n)) {
        if (json_is_string(v) && json_string_length(v) > (max + 2) / 3 * 4)
            return svc_json_fail(c, "more than %zu bytes once decoded", max);
        return false;
    }
    uint8_t *buf = own_array(o, n / 4 * 3 + 1, 1);
    if (!buf) return svc_json_rule(c, svc_oom);
    size_t len = 0;
    if (!svc_json_rule(c, b64_decode(s, n, buf, &len))) return false;
    if (len > max) return svc_json_fail(c, "more than %zu bytes once decoded", max);
    *out = buf;
    *outlen = len;
    return true;
}

/* ---- the top level ---------------------------------------------------------------------- */

/* "env": {"K": "V"} -> "K=V"; a '=' in K would move the split. */
static bool env_map(svc_json_ctx *c, json_t *v, svc_exec_request *r) {
    request_owned *o = r->owned;
    if (!json_is_object(v)) return svc_json_fail(c, "expected an object {\"NAME\": \"value\"}");
    if (json_object_size(v) > MAX_ENV) return svc_json_fail(c, "at most %d variables", MAX_ENV);
    r->env = own_array(o, json_object_size(v), sizeof *r->env);
    if (!r->env) return svc_json_rule(c, svc_oom);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        if (!key[0]) return svc_json_fail(c, "empty variable name"); /* no "env." path */
        size_t mark = svc_json_path_key(c, key), klen = strlen(key), vlen = 0;
        const char *value;
        bool ok = svc_json_string(c, val, MAX_ARG, &value, &vlen);
        if (ok && strchr(key, '=')) ok = svc_json_fail(c, "a variable name cannot contain '='");
        if (ok && klen > 4096) ok = svc_json_fail(c, "variable name longer than 4096 bytes");
        char *entry = ok ? own_array(o, klen + vlen + 2, 1) : NULL;
        if (ok && !entry) ok = svc_json_rule(c, svc_oom);
        svc_json_path_reset(c, mark);
        if (!ok) return false;
        memcpy(entry, key, klen);
        entry[klen] = '=';
        memcpy(entry + klen + 1, value, vlen);
        r->env[r->nenv++] = entry;
    }
    return true;
}

/* An array of strings as owned, NULL-terminated entries; is_argv: a non-empty
 * array whose first entry (the program) is non-empty. */
static bool string_array(svc_json_ctx *c, request_owned *o, json_t *v, bool is_argv, char ***out,
                         size_t *n) {
    if (!svc_json_array(c, v, MAX_ARGV, "strings")) return false;
    size_t count = json_array_size(v);
    if (is_argv && count == 0) return svc_json_fail(c, "expected at least the program (argv[0])");
    char **list = own_array(o, count + 1, sizeof *list); /* NULL-terminated too */
    if (!list) return svc_json_rule(c, svc_oom);
    for (size_t i = 0; i < count; i++) {
        size_t mark = svc_json_path_index(c, i);
        bool ok = copy_string(c, o, json_array_get(v, i), MAX_ARG, &list[i]);
        if (ok && is_argv && i == 0 && !list[0][0]) ok = svc_json_fail(c, "empty program name");
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    *out = list;
    *n = count;
    return true;
}

static bool absolute_path(svc_json_ctx *c, request_owned *o, json_t *v, char **out) {
    if (!copy_string(c, o, v, MAX_PATH, out)) return false;
    if ((*out)[0] != '/') return svc_json_fail(c, "expected an absolute path");
    return true;
}

static bool one_dir(svc_json_ctx *c, request_owned *o, json_t *d, al_dir_grant *g) {
    static const char *const names[] = {"host", "guest", "read_only", NULL};
    if (!json_is_object(d))
        return svc_json_fail(c, "expected an object {\"host\", \"guest\", \"read_only\"}");
    if (!svc_json_only_fields(c, d, names)) return false;
    json_t *host = json_object_get(d, "host"), *guest = json_object_get(d, "guest");
    json_t *ro = json_object_get(d, "read_only");
    if (!host) return svc_json_fail(c, "missing field \"host\"");
    char *h = NULL, *gp = NULL;
    size_t mark = svc_json_path_key(c, "host");
    bool ok = absolute_path(c, o, host, &h);
    svc_json_path_reset(c, mark);
    if (ok && guest) {
        mark = svc_json_path_key(c, "guest");
        ok = absolute_path(c, o, guest, &gp);
        svc_json_path_reset(c, mark);
    }
    if (ok && ro && !json_is_boolean(ro))
        ok = svc_json_fail(c, "read_only: expected true or false");
    if (!ok) return false;
    /* the guest path defaults to the host path; zero trust: read-only by default */
    *g = (al_dir_grant){h, gp ? gp : h, !ro || json_is_true(ro)};
    return true;
}

static bool dir_list(svc_json_ctx *c, json_t *v, svc_exec_request *r) {
    request_owned *o = r->owned;
    if (!svc_json_array(c, v, MAX_DIRS, "directory objects")) return false;
    size_t count = json_array_size(v);
    r->dirs = own_array(o, count, sizeof *r->dirs);
    if (!r->dirs) return svc_json_rule(c, svc_oom);
    for (size_t i = 0; i < count; i++) {
        size_t mark = svc_json_path_index(c, i);
        bool ok = one_dir(c, o, json_array_get(v, i), &r->dirs[i]);
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    r->ndirs = count;
    return true;
}

static bool session_id(svc_json_ctx *c, request_owned *o, json_t *v, char **out) {
    static const char allowed[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                  "0123456789-_";
    if (!copy_string(c, o, v, MAX_SESSION_ID, out)) return false;
    if (!(*out)[0]) return svc_json_fail(c, "empty session id");
    if ((*out)[strspn(*out, allowed)] != '\0')
        return svc_json_fail(c, "a session id is letters, digits, '-' and '_'");
    return true;
}

static const char *const kind_names[] = {"python", "wasm", "command", "plugin"};
#define N_KINDS (sizeof kind_names / sizeof kind_names[0])

/* Which kinds take a field: bit 1 << svc_kind. */
#define K_PY (1u << SVC_PYTHON)
#define K_WASM (1u << SVC_WASM)
#define K_CMD (1u << SVC_COMMAND)
#define K_PLUG (1u << SVC_PLUGIN)
#define K_ALL (K_PY | K_WASM | K_CMD)

static const struct {
    const char *name;
    unsigned kinds;
} fields[] = {
    {"kind", K_ALL | K_PLUG},  {"code", K_PY},           {"module_base64", K_WASM},
    {"module_path", K_WASM},   {"args", K_PY | K_WASM},  {"argv", K_CMD},
    {"backend", K_CMD},        {"env", K_ALL},           {"stdin", K_ALL},
    {"stdin_base64", K_ALL},   {"timeout_ms", K_ALL | K_PLUG},
    {"memory_bytes", K_ALL | K_PLUG},                    {"fuel", K_PY | K_WASM | K_PLUG},
    {"session", K_ALL},        {"dirs", K_ALL},          {"egress", K_CMD},
    {"stream", K_ALL},         {"capability", K_PLUG},   {"function", K_PLUG},
    {"input", K_PLUG},         {"input_base64", K_PLUG},
};

/* true when the request's kind takes the field; false with the reason in
 * err when another kind does, or with *known false when no kind does (the
 * caller reports an unknown field). */
static bool field_allowed(svc_json_ctx *c, svc_kind kind, const char *key, bool *known) {
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, key) != 0) continue;
        *known = true;
        if (fields[i].kinds & (1u << kind)) return true;
        char kinds[64] = "";
        for (unsigned k = 0; k < N_KINDS; k++) {
            if (!(fields[i].kinds & (1u << k))) continue;
            size_t used = strlen(kinds);
            snprintf(kinds + used, sizeof kinds - used, "%s\"%s\"", used ? " or " : "",
                     kind_names[k]);
        }
        return svc_json_fail(c, "not for kind \"%s\" (only %s)", kind_names[kind], kinds);
    }
    *known = false;
    return false;
}

static bool stdin_text(svc_json_ctx *c, json_t *v, svc_exec_request *r) {
    request_owned *o = r->owned;
    const char *s;
    size_t n;
    if (!svc_json_string(c, v, MAX_STDIN, &s, &n)) return false;
    /* JSON strings are UTF-8 already; NUL bytes were refused above (use
     * stdin_base64 for binary input) */
    r->stdin_data = (uint8_t *)svc_strings_copy(&o->pool, s, n);
    r->stdin_len = n;
    return r->stdin_data ? true : svc_json_rule(c, svc_oom);
}

static bool backend_field(svc_json_ctx *c, json_t *v, svc_exec_request *r) {
    const char *s;
    if (!svc_json_string(c, v, 16, &s, NULL))
        return svc_json_fail(c, "expected \"native\" or \"gvisor\"");
    if (!strcmp(s, "native")) r->backend = AL_ISOLATION_NATIVE;
    else if (!strcmp(s, "gvisor")) r->backend = AL_ISOLATION_GVISOR;
    else return svc_json_fail(c, "expected \"native\" or \"gvisor\"");
    return true;
}

/* The egress rules live in the request's owned part; r->egress borrows them. */
static bool egress_field(svc_json_ctx *c, json_t *v, svc_exec_request *r) {
    request_owned *o = r->owned;
    if (!svc_egress_parse(c, v, &egress_limits, &o->egress)) return false;
    svc_egress_fill(&o->egress, &r->egress);
    return true;
}

/* The capability name grammar (capabilities.c installs by it, requests name by it). */
bool svc_cap_name_valid(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= SVC_CAP_NAME_MAX) return false;
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'))) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
        if (!ok) return false; /* '_' separates capability and tool in MCP names */
    }
    return true;
}

static bool capability_name(svc_json_ctx *c, request_owned *o, json_t *v, char **out) {
    if (!copy_string(c, o, v, SVC_CAP_NAME_MAX - 1, out)) return false;
    if (!svc_cap_name_valid(*out))
        return svc_json_fail(c, "a capability name is 1..32 of [a-z0-9-]");
    return true;
}

/* An export name: printable ASCII without spaces, at most 128 bytes. */
static bool function_name(svc_json_ctx *c, request_owned *o, json_t *v, char **out) {
    if (!copy_string(c, o, v, 128, out)) return false;
    for (const char *p = *out; *p; p++)
        if (*p <= ' ' || *p > '~') return svc_json_fail(c, "a function name is printable ASCII");
    if (!**out) return svc_json_fail(c, "empty function name");
    return true;
}

static bool top_field(svc_json_ctx *c, const char *key, json_t *v, void *target) {
    svc_exec_request *r = target;
    request_owned *o = r->owned;
    bool known = false;
    if (!field_allowed(c, r->kind, key, &known)) return known ? false : svc_json_unknown_field(c);
    if (!strcmp(key, "kind")) return true; /* read before the loop */
    if (!strcmp(key, "code")) return copy_string(c, o, v, MAX_CODE, &r->code);
    if (!strcmp(key, "module_base64"))
        return get_base64(c, o, v, MAX_MODULE, &r->module, &r->module_len);
    if (!strcmp(key, "module_path")) return absolute_path(c, o, v, &r->module_path);
    if (!strcmp(key, "args")) return string_array(c, o, v, false, &r->argv, &r->argc);
    if (!strcmp(key, "argv")) return string_array(c, o, v, true, &r->argv, &r->argc);
    if (!strcmp(key, "backend")) return backend_field(c, v, r);
    if (!strcmp(key, "env")) return env_map(c, v, r);
    if (!strcmp(key, "stdin")) return stdin_text(c, v, r);
    if (!strcmp(key, "stdin_base64"))
        return get_base64(c, o, v, MAX_STDIN, &r->stdin_data, &r->stdin_len);
    if (!strcmp(key, "timeout_ms"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_DURATION_MS, &r->timeout_ms);
    if (!strcmp(key, "memory_bytes"))
        return svc_json_uint(c, v, MIN_MEMORY, MAX_MEMORY, &r->memory_bytes);
    if (!strcmp(key, "fuel")) return svc_json_uint(c, v, 1, SVC_JSON_MAX_BYTES, &r->fuel);
    if (!strcmp(key, "session")) return session_id(c, o, v, &r->session);
    if (!strcmp(key, "dirs")) return dir_list(c, v, r);
    if (!strcmp(key, "egress")) return egress_field(c, v, r);
    if (!strcmp(key, "capability")) return capability_name(c, o, v, &r->capability);
    if (!strcmp(key, "function")) return function_name(c, o, v, &r->function);
    if (!strcmp(key, "input")) return stdin_text(c, v, r);
    if (!strcmp(key, "input_base64"))
        return get_base64(c, o, v, MAX_STDIN, &r->stdin_data, &r->stdin_len);
    if (!strcmp(key, "stream")) {
        if (!json_is_boolean(v)) return svc_json_fail(c, "expected true or false");
        r->stream = json_is_true(v);
        return true;
    }
    return svc_json_unknown_field(c);
}

static bool read_kind(svc_json_ctx *c, const json_t *body, svc_exec_request *r) {
    json_t *v = json_object_get(body, "kind");
    if (!v)
        return svc_json_fail(
            c, "missing field \"kind\" (\"python\", \"wasm\", \"command\" or \"plugin\")");
    size_t mark = svc_json_path_key(c, "kind");
    const char *s = NULL;
    bool ok = svc_json_string(c, v, 16, &s, NULL);
    if (ok) {
        unsigned k = 0;
        while (k < N_KINDS && strcmp(s, kind_names[k]) != 0) k++;
        if (k < N_KINDS) r->kind = (svc_kind)k;
        else ok = svc_json_fail(c, "expected \"python\", \"wasm\", \"command\" or \"plugin\"");
    } else {
        svc_json_fail(c, "expected \"python\", \"wasm\", \"command\" or \"plugin\"");
    }
    svc_json_path_reset(c, mark);
    return ok;
}

/* What a kind requires, once every field is read. */
static bool complete(svc_json_ctx *c, const json_t *body, svc_exec_request *r) {
    if (json_object_get(body, "stdin") && json_object_get(body, "stdin_base64"))
        return svc_json_fail(c, "give \"stdin\" or \"stdin_base64\", not both");
    switch (r->kind) {
    case SVC_PYTHON:
        if (!r->code) return svc_json_fail(c, "missing field \"code\" (kind \"python\")");
        break;
    case SVC_WASM:
        if (!r->module && !r->module_path)
            return svc_json_fail(c, "missing field \"module_base64\" or \"module_path\" "
                                    "(kind \"wasm\")");
        if (r->module && r->module_path)
            return svc_json_fail(c, "give \"module_base64\" or \"module_path\", not both");
        break;
    case SVC_COMMAND:
        if (!r->argv) return svc_json_fail(c, "missing field \"argv\" (kind \"command\")");
        break;
    case SVC_PLUGIN:
        if (!r->capability)
            return svc_json_fail(c, "missing field \"capability\" (kind \"plugin\")");
        if (!r->function) return svc_json_fail(c, "missing field \"function\" (kind \"plugin\")");
        if (json_object_get(body, "input") && json_object_get(body, "input_base64"))
            return svc_json_fail(c, "give \"input\" or \"input_base64\", not both");
        break;
    }
    return true;
}

bool svc_request_parse(const json_t *body, svc_exec_request *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (errlen) err[0] = '\0';
    request_owned *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "%s", svc_oom);
        return false;
    }
    out->owned = o;
    out->backend = AL_ISOLATION_NATIVE;
    svc_json_ctx c = {.err = err, .errlen = errlen};
    bool ok = json_is_object(body) ? read_kind(&c, body, out)
                                   : svc_json_fail(&c, "expected a JSON object");
    /* json_object_foreach takes a non-const object; it only reads */
    ok = ok && svc_json_each_field(&c, (json_t *)body, top_field, out) && complete(&c, body, out);
    if (!ok) svc_request_free(out);
    return ok;
}

/* ---- JSON out ------------------------------------------------------------------------ */

/* A JSON string of arbitrary bytes: ill-formed UTF-8 becomes U+FFFD, one per
 * maximal ill-formed subpart (svc_utf8_sequence, as json_out.c's writer for
 * the CLI, so the API and the CLI agree byte for byte). NULL only when out
 * of memory. */
static json_t *json_bytes(const uint8_t *s, size_t len) {
    if (!s) return json_string("");
    if (len > (SIZE_MAX - 1) / 3) return NULL;
    uint8_t *buf = malloc(len * 3 + 1); /* each bad byte may become 3 */
    if (!buf) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t bad = 0, n = svc_utf8_sequence(s + i, len - i, &bad);
        if (n) {
            memcpy(buf + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += bad;
        }
    }
    json_t *j = json_stringn_nocheck((const char *)buf, o);
    free(buf);
    return j;
}

/* A fixed char array from the engine, bounded; "" is null. */
static json_t *json_name(const char *name, size_t cap) {
    size_t n = strnlen(name, cap);
    return n ? json_bytes((const uint8_t *)name, n) : json_null();
}

static json_t *json_frame(uint32_t func_index, const char *name, size_t cap, uint32_t offset) {
    return json_pack("{s:I, s:o, s:I}", "func_index", (json_int_t)func_index, "func_name",
                     json_name(name, cap), "code_offset", (json_int_t)offset);
}

static json_t *trap_location(const al_error *e) {
    if (e->kind != AL_ERR_TRAP || e->backtrace_len == 0) return json_null();
    json_t *bt = json_array();
    uint32_t n = e->backtrace_len < AL_BACKTRACE_MAX ? e->backtrace_len : AL_BACKTRACE_MAX;
    for (uint32_t i = 0; bt && i < n; i++) {
        const al_frame_info *f = &e->backtrace[i];
        json_array_append_new(bt, json_frame(f->func_index, f->func_name, sizeof f->func_name,
                                             f->code_offset));
    }
    return json_pack("{s:I, s:o, s:I, s:o, s:b}", "func_index", (json_int_t)e->func_index,
                     "func_name", json_name(e->func_name, sizeof e->func_name), "code_offset",
                     (json_int_t)e->code_offset, "backtrace", bt, "backtrace_truncated",
                     e->backtrace_truncated);
}

static const struct {
    uint32_t flag;
    const char *name;
} limit_names[] = {
    {AL_LIMIT_WALL, "wall"},           {AL_LIMIT_CPU, "cpu"},       {AL_LIMIT_MEMORY, "memory"},
    {AL_LIMIT_PROCESSES, "processes"}, {AL_LIMIT_FILE_SIZE, "file_size"},
    {AL_LIMIT_OUTPUT, "output"},       {AL_LIMIT_FUEL, "fuel"},
};

static json_t *limits_hit(uint32_t bits) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < sizeof limit_names / sizeof limit_names[0]; i++)
        if (bits & limit_names[i].flag) json_array_append_new(a, json_string(limit_names[i].name));
    return a;
}

/* Milliseconds with 3 decimals, as json_out.c prints them. */
static json_t *json_ms(uint64_t ns) { return json_real(round((double)ns / 1e3) / 1e3); }

static bool status_has_error(al_status s) {
    return s != AL_STATUS_OK && s != AL_STATUS_EXIT && s != AL_STATUS_OUTPUT_TRUNCATED;
}

static json_t *trap_field(const al_result *r) {
    if (r->trap == AL_TRAP_NONE || r->trap == AL_TRAP_EXIT) return json_null();
    return json_string(al_trap_message(r->trap));
}

json_t *svc_result_json(const al_result *r, unsigned redactions, int64_t audit_id) {
    /* json_pack steals every "o" value and fails as a whole (freeing them)
     * if any is NULL: one check covers every allocation */
    json_t *j = json_pack(
        "{s:s, s:i, s:o, s:o, s:I, s:o, s:I, s:o, s:b, s:o, s:b}", "status",
        al_status_name(r->status), "exit_code", r->exit_code, "trap", trap_field(r),
        "trap_location", trap_location(&r->error), "fuel_used", (json_int_t)r->fuel_used,
        "wall_ms", json_ms(r->wall_ns), "peak_memory_bytes", (json_int_t)r->peak_memory_bytes,
        "stdout", json_bytes(r->stdout_data, r->stdout_len), "stdout_truncated",
        r->stdout_truncated, "stderr", json_bytes(r->stderr_data, r->stderr_len),
        "stderr_truncated", r->stderr_truncated);
    if (!j) return NULL;
    json_t *more = json_pack(
        "{s:i, s:o, s:o, s:I, s:o, s:o, s:{s:I, s:I, s:I}, s:o, s:I, s:o}", "signal",
        r->term_signal, "limits_hit", limits_hit(r->limits_hit), "cpu_ms", json_ms(r->cpu_ns),
        "denied_syscalls", (json_int_t)r->denied_syscalls, "backend",
        json_name(r->backend, sizeof r->backend), "execution",
        json_name(r->execution_id, sizeof r->execution_id), "egress", "allowed",
        (json_int_t)r->egress_allowed, "denied", (json_int_t)r->egress_denied, "bytes",
        (json_int_t)r->egress_bytes, "error",
        status_has_error(r->status) ? json_name(r->error.message, sizeof r->error.message)
                                    : json_null(),
        "redactions", (json_int_t)redactions, "audit_id",
        audit_id >= 0 ? json_integer(audit_id) : json_null());
    if (!more || json_object_update(j, more) != 0) {
        json_decref(more);
        json_decref(j);
        return NULL;
    }
    json_decref(more);
    return j;
}

json_t *svc_error_json(const char *code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    /* a message may quote client bytes (or be cut inside a character) */
    return json_pack("{s:{s:s, s:o}}", "error", "code", code ? code : "error", "message",
                     json_bytes((const uint8_t *)msg, len));
}
