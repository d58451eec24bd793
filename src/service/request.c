/*
 * request.c — execution request bodies (JSON) → svc_exec_request, and
 * results / errors → JSON (service.h).
 *
 * The body (every field but "kind" optional; which ones a kind takes below):
 *
 *   {"kind": "python" | "wasm" | "command",
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
 *    "stream": true}
 *
 * Invariants (the rules and messages of src/cli/policy_file.c, which the
 * service cannot link, so its checks are repeated here):
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
 *  - every allocation of a request is listed in its `owned` list and freed
 *    by svc_request_free, on success and on every error path (a failed parse
 *    leaves *out zeroed);
 *  - messages are one printable line (keys echoed in them have control
 *    bytes and quotes replaced); header values are never echoed;
 *  - result JSON is always valid: output bytes that are not well-formed
 *    UTF-8 become U+FFFD, one per maximal ill-formed subpart, exactly as
 *    src/cli/json_out.c does for `airlock exec --json`.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define MAX_CODE ((size_t)1 << 20)
#define MAX_MODULE ((size_t)50 << 20)
#define MAX_STDIN ((size_t)16 << 20)
#define MAX_ARGV 4096
#define MAX_ENV 1024
#define MAX_DIRS 64
#define MAX_RULES 1024                          /* per egress list */
#define MAX_PATH 4095                           /* PATH_MAX - 1 */
#define MAX_ARG ((size_t)128 << 10)             /* Linux MAX_ARG_STRLEN */
#define MAX_SESSION_ID 64
#define MAX_DURATION_MS UINT64_C(1000000000000) /* as the CLI's --timeout */
#define MAX_IDLE_MS UINT64_C(4294967295)        /* al_egress.idle_timeout_ms is 32-bit */
#define MAX_BYTES (UINT64_C(1) << 53)           /* exact in every JSON producer */
#define MIN_MEMORY UINT64_C(65536)              /* one wasm page, as --memory */
#define MAX_MEMORY (UINT64_C(4) << 30)
#define MAX_CONNECTIONS 65535
#define MAX_HEADER_NAME 256
#define MAX_HEADER_VALUE 8192

static const char oom[] = "out of memory";

/* ---- ownership: every allocation of one request ---------------------------------- */

typedef struct owned_list {
    void **items;
    size_t n, cap;
} owned_list;

/* Take ownership of p (NULL stays NULL); on failure p is freed. */
static void *own(owned_list *o, void *p) {
    if (!p) return NULL;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        void **grown = realloc(o->items, cap * sizeof *grown);
        if (!grown) {
            free(p);
            return NULL;
        }
        o->items = grown;
        o->cap = cap;
    }
    o->items[o->n++] = p;
    return p;
}

/* n zeroed elements of size bytes (at least one byte, so never NULL for 0). */
static void *own_array(owned_list *o, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return own(o, calloc(n ? n : 1, size));
}

static char *own_copy(owned_list *o, const char *s, size_t len) {
    char *copy = own_array(o, len + 1, 1);
    if (copy) memcpy(copy, s, len);
    return copy;
}

static void owned_free(owned_list *o) {
    if (!o) return;
    for (size_t i = 0; i < o->n; i++) free(o->items[i]);
    free(o->items);
    free(o);
}

void svc_request_free(svc_exec_request *r) {
    if (!r) return;
    owned_free(r->owned);
    memset(r, 0, sizeof *r);
}

/* ---- parse context: the JSON path and the message ----------------------------------- */

typedef struct parse_ctx {
    char *err;
    size_t errlen;
    char path[192]; /* the JSON path being parsed, e.g. egress.headers[0] */
    size_t pathlen;
    owned_list *own;
    svc_exec_request *req;
} parse_ctx;

/* Append to the path, truncating (never overflowing); returns the length to
 * restore. Control bytes and quotes of keys become '?' (one printable line). */
static size_t path_key(parse_ctx *c, const char *key) {
    size_t mark = c->pathlen;
    if (c->pathlen && c->pathlen < sizeof c->path - 1) c->path[c->pathlen++] = '.';
    for (const char *k = key; *k && c->pathlen < sizeof c->path - 1; k++) {
        unsigned char ch = (unsigned char)*k;
        c->path[c->pathlen++] = ch < 0x20 || ch == 0x7f || ch == '"' ? '?' : (char)ch;
    }
    c->path[c->pathlen] = '\0';
    return mark;
}

static size_t path_index(parse_ctx *c, size_t i) {
    size_t mark = c->pathlen, room = sizeof c->path - c->pathlen;
    int n = snprintf(c->path + c->pathlen, room, "[%zu]", i);
    if (n > 0) c->pathlen += (size_t)n < room ? (size_t)n : room - 1;
    return mark;
}

static void path_reset(parse_ctx *c, size_t mark) {
    c->pathlen = mark;
    c->path[mark] = '\0';
}

/* "PATH: message" into err; always false, for `return fail(...)`. */
__attribute__((format(printf, 2, 3))) static bool fail(parse_ctx *c, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->pathlen) snprintf(c->err, c->errlen, "%s: %s", c->path, msg);
    else snprintf(c->err, c->errlen, "%s", msg);
    return false;
}

static bool unknown_field(parse_ctx *c) {
    snprintf(c->err, c->errlen, "unknown field \"%s\"", c->path);
    return false;
}

static bool out_of_memory(parse_ctx *c) {
    snprintf(c->err, c->errlen, "%s", oom);
    return false;
}

/* A rule check's answer (NULL: fine) as an error at the current path. */
static bool rule(parse_ctx *c, const char *why) {
    if (!why) return true;
    if (why == oom) return out_of_memory(c);
    return fail(c, "%s", why);
}

static bool get_uint(parse_ctx *c, json_t *v, uint64_t min, uint64_t max, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
        return fail(c, "expected an integer %" PRIu64 "..%" PRIu64, min, max);
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* A string without NUL bytes (C would see only its first part), at most max
 * bytes; *len is its length. */
static bool get_string(parse_ctx *c, json_t *v, size_t max, const char **out, size_t *len) {
    if (!json_is_string(v)) return fail(c, "expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (memchr(s, '\0', n)) return fail(c, "the string contains a NUL byte");
    if (n > max) return fail(c, "longer than %zu bytes", max);
    *out = s;
    if (len) *len = n;
    return true;
}

/* An owned copy of a string value. */
static bool copy_string(parse_ctx *c, json_t *v, size_t max, char **out) {
    const char *s;
    size_t n;
    if (!get_string(c, v, max, &s, &n)) return false;
    *out = own_copy(c->own, s, n);
    return *out ? true : out_of_memory(c);
}

static bool get_array(parse_ctx *c, json_t *v, size_t max, const char *what) {
    if (!json_is_array(v)) return fail(c, "expected an array of %s", what);
    if (json_array_size(v) > max) return fail(c, "at most %zu entries", max);
    return true;
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

/* A base64 string decoded into owned bytes, at most max of them. */
static bool get_base64(parse_ctx *c, json_t *v, size_t max, uint8_t **out, size_t *outlen) {
    const char *s;
    size_t n;
    /* 4 characters per 3 bytes: refuse what cannot fit before decoding */
    if (!get_string(c, v, (max + 2) / 3 * 4, &s, &n)) {
        if (json_is_string(v) && json_string_length(v) > (max + 2) / 3 * 4)
            return fail(c, "more than %zu bytes once decoded", max);
        return false;
    }
    uint8_t *buf = own_array(c->own, n / 4 * 3 + 1, 1);
    if (!buf) return out_of_memory(c);
    size_t len = 0;
    if (!rule(c, b64_decode(s, n, buf, &len))) return false;
    if (len > max) return fail(c, "more than %zu bytes once decoded", max);
    *out = buf;
    *outlen = len;
    return true;
}

/* ---- syntax of the egress rules (as src/cli/policy_file.c) -------------------------- */

static bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A DNS name: labels of letters, digits and '-' (1..63 bytes), at most 253
 * bytes, one trailing dot allowed; with wildcard_ok a leading "*." too. */
static const char *domain_problem(const char *s, bool wildcard_ok) {
    static const char bad[] = "not a domain name (letters, digits, '-' and dots; a rule may "
                              "start with \"*.\")";
    static const char bad_host[] = "not a domain name (letters, digits, '-' and dots)";
    const char *why = wildcard_ok ? bad : bad_host;
    if (wildcard_ok && s[0] == '*' && s[1] == '.') s += 2;
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == '.') len--;
    if (len == 0 || len > 253) return why;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (label == 0) return why;
            label = 0;
            continue;
        }
        if (!is_alnum(s[i]) && s[i] != '-') return why;
        if (++label > 63) return why;
    }
    return label ? NULL : why;
}

/* ADDRESS[/PREFIX] with an IPv4 or IPv6 address and a prefix that fits. */
static const char *cidr_problem(const char *s) {
    static const char bad[] = "not a CIDR (expected ADDRESS[/PREFIX], e.g. 10.0.0.0/8, "
                              "192.0.2.7 or fd00::/8)";
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    char addr[INET6_ADDRSTRLEN];
    unsigned char bin[16];
    if (alen == 0 || alen >= sizeof addr) return bad;
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    unsigned max;
    if (inet_pton(AF_INET, addr, bin) == 1) max = 32;
    else if (inet_pton(AF_INET6, addr, bin) == 1) max = 128;
    else return bad;
    if (!slash) return NULL;
    const char *p = slash + 1;
    size_t digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 3 || p[digits] != '\0') return bad;
    if ((unsigned)atoi(p) > max) return bad;
    return NULL;
}

/* An RFC 9110 token: a name with ':' or a space would write another header. */
static const char *header_name_problem(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return "empty header name";
    if (n > MAX_HEADER_NAME) return "header name too long";
    for (; *s; s++)
        if (!is_alnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return "the header name is not an HTTP token (letters, digits, !#$%&'*+-.^_`|~)";
    return NULL;
}

/* CR or LF would end the header line early: request splitting. */
static const char *header_value_problem(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return "empty header value";
    if (n > MAX_HEADER_VALUE) return "header value too long (at most 8192 bytes)";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return "the header value contains CR, LF or another control character";
    }
    return NULL;
}

/* IPv4, or IPv6 bare or in brackets; start/len give the address itself. */
static const char *host_address_problem(const char *s, const char **start, size_t *len) {
    static const char bad[] = "not an IP address (expected e.g. 192.0.2.7 or [2001:db8::7])";
    char addr[INET6_ADDRSTRLEN];
    unsigned char bin[16];
    size_t n = strlen(s);
    bool bracketed = n >= 2 && s[0] == '[' && s[n - 1] == ']';
    if (bracketed) {
        s++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof addr) return bad;
    memcpy(addr, s, n);
    addr[n] = '\0';
    bool v4 = !bracketed && inet_pton(AF_INET, addr, bin) == 1;
    if (!v4 && inet_pton(AF_INET6, addr, bin) != 1) return bad;
    *start = s;
    *len = n;
    return NULL;
}

/* ---- egress ---------------------------------------------------------------------------- */

typedef const char *(*string_rule)(const char *s);
static const char *allow_domain_rule(const char *s) { return domain_problem(s, true); }

/* An array of strings, each checked by check, as an owned const char *[]. */
static bool rule_list(parse_ctx *c, json_t *v, string_rule check, const char *const **out,
                      size_t *n) {
    if (!get_array(c, v, MAX_RULES, "strings")) return false;
    size_t count = json_array_size(v);
    const char **list = own_array(c->own, count, sizeof *list);
    if (!list) return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        size_t mark = path_index(c, i);
        char *s = NULL;
        bool ok = copy_string(c, json_array_get(v, i), 4096, &s) && rule(c, check(s));
        path_reset(c, mark);
        if (!ok) return false;
        list[i] = s;
    }
    *out = list;
    *n = count;
    return true;
}

static bool port_list(parse_ctx *c, json_t *v, al_egress *e) {
    if (!get_array(c, v, MAX_RULES, "port numbers")) return false;
    size_t count = json_array_size(v);
    uint16_t *ports = own_array(c->own, count, sizeof *ports);
    if (!ports) return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        size_t mark = path_index(c, i);
        uint64_t port = 0;
        bool ok = get_uint(c, json_array_get(v, i), 1, 65535, &port);
        path_reset(c, mark);
        if (!ok) return false;
        ports[i] = (uint16_t)port;
    }
    e->allow_ports = ports;
    e->nallow_ports = count;
    return true;
}

/* Every key of obj must be one of the NULL-terminated names. */
static bool only_fields(parse_ctx *c, json_t *obj, const char *const *names) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t k = 0;
        while (names[k] && strcmp(names[k], key) != 0) k++;
        if (!names[k]) {
            path_key(c, key);
            return unknown_field(c);
        }
    }
    return true;
}

/* A required string member of an object element (owned copy). */
static bool member(parse_ctx *c, json_t *obj, const char *key, size_t max, char **out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return fail(c, "missing field \"%s\"", key);
    size_t mark = path_key(c, key);
    bool ok = copy_string(c, v, max, out);
    path_reset(c, mark);
    return ok;
}

static bool one_header(parse_ctx *c, json_t *h, al_header_grant *g) {
    static const char *const names[] = {"domain", "name", "value", NULL};
    char *domain, *name, *value;
    if (!json_is_object(h)) return fail(c, "expected an object {\"domain\", \"name\", \"value\"}");
    if (!only_fields(c, h, names) || !member(c, h, "domain", 4096, &domain) ||
        !member(c, h, "name", 4096, &name) || !member(c, h, "value", 65536, &value))
        return false;
    const char *why = domain_problem(domain, true);
    if (!why) why = header_name_problem(name);
    if (!why) why = header_value_problem(value); /* names the problem, never the value */
    if (why) return rule(c, why);
    *g = (al_header_grant){domain, name, value};
    return true;
}

static bool header_list(parse_ctx *c, json_t *v, al_egress *e) {
    if (!get_array(c, v, MAX_RULES, "header objects")) return false;
    size_t count = json_array_size(v);
    al_header_grant *headers = own_array(c->own, count, sizeof *headers);
    if (!headers) return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        size_t mark = path_index(c, i);
        bool ok = one_header(c, json_array_get(v, i), &headers[i]);
        path_reset(c, mark);
        if (!ok) return false;
    }
    e->headers = headers;
    e->nheaders = count;
    return true;
}

static bool host_map(parse_ctx *c, json_t *v, al_egress *e) {
    if (!json_is_object(v)) return fail(c, "expected an object {\"name\": \"address\"}");
    if (json_object_size(v) > MAX_RULES) return fail(c, "at most %d entries", MAX_RULES);
    al_host_entry *hosts = own_array(c->own, json_object_size(v), sizeof *hosts);
    if (!hosts) return out_of_memory(c);
    size_t n = 0;
    const char *key;
    json_t *addr;
    json_object_foreach(v, key, addr) {
        size_t mark = path_key(c, key);
        const char *s, *start = NULL;
        size_t len = 0;
        const char *why = domain_problem(key, false);
        bool ok = rule(c, why) && get_string(c, addr, 4096, &s, NULL) &&
                  rule(c, host_address_problem(s, &start, &len));
        if (ok) {
            hosts[n].name = own_copy(c->own, key, strlen(key));
            hosts[n].address = own_copy(c->own, start, len);
            ok = (hosts[n].name && hosts[n].address) || out_of_memory(c);
        }
        path_reset(c, mark);
        if (!ok) return false;
        n++;
    }
    e->hosts = hosts;
    e->nhosts = n;
    return true;
}

static bool egress_scalar(parse_ctx *c, const char *key, json_t *v, al_egress *e, bool *known) {
    uint64_t n = 0;
    *known = true;
    if (!strcmp(key, "max_connections")) {
        if (!get_uint(c, v, 1, MAX_CONNECTIONS, &n)) return false;
        e->max_connections = (uint32_t)n;
    } else if (!strcmp(key, "max_bytes_per_connection")) {
        if (!get_uint(c, v, 1, MAX_BYTES, &e->max_bytes_per_connection)) return false;
    } else if (!strcmp(key, "max_bytes")) {
        if (!get_uint(c, v, 1, MAX_BYTES, &e->max_bytes)) return false;
    } else if (!strcmp(key, "idle_timeout_ms")) {
        if (!get_uint(c, v, 1, MAX_IDLE_MS, &n)) return false;
        e->idle_timeout_ms = (uint32_t)n;
    } else {
        *known = false;
    }
    return true;
}

static bool egress_field(parse_ctx *c, const char *key, json_t *v, void *target) {
    al_egress *e = target;
    if (!strcmp(key, "allow_domains"))
        return rule_list(c, v, allow_domain_rule, &e->allow_domains, &e->nallow_domains);
    if (!strcmp(key, "deny_domains"))
        return rule_list(c, v, allow_domain_rule, &e->deny_domains, &e->ndeny_domains);
    if (!strcmp(key, "allow_ips")) return rule_list(c, v, cidr_problem, &e->allow_ips, &e->nallow_ips);
    if (!strcmp(key, "allow_ports")) return port_list(c, v, e);
    if (!strcmp(key, "headers")) return header_list(c, v, e);
    if (!strcmp(key, "hosts")) return host_map(c, v, e);
    bool known = false;
    bool ok = egress_scalar(c, key, v, e, &known);
    return known ? ok : unknown_field(c);
}

/* ---- the top level ---------------------------------------------------------------------- */

typedef bool (*field_fn)(parse_ctx *c, const char *key, json_t *v, void *target);

static bool each_field(parse_ctx *c, json_t *obj, field_fn field, void *target) {
    if (!json_is_object(obj)) return fail(c, "expected an object");
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t mark = path_key(c, key);
        bool ok = field(c, key, v, target);
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

/* "env": {"K": "V"} -> "K=V"; a '=' in K would move the split. */
static bool env_map(parse_ctx *c, json_t *v, svc_exec_request *r) {
    if (!json_is_object(v)) return fail(c, "expected an object {\"NAME\": \"value\"}");
    if (json_object_size(v) > MAX_ENV) return fail(c, "at most %d variables", MAX_ENV);
    r->env = own_array(c->own, json_object_size(v), sizeof *r->env);
    if (!r->env) return out_of_memory(c);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        if (!key[0]) return fail(c, "empty variable name"); /* no "env." path */
        size_t mark = path_key(c, key), klen = strlen(key), vlen = 0;
        const char *value;
        bool ok = get_string(c, val, MAX_ARG, &value, &vlen);
        if (ok && strchr(key, '=')) ok = fail(c, "a variable name cannot contain '='");
        if (ok && klen > 4096) ok = fail(c, "variable name longer than 4096 bytes");
        char *entry = ok ? own_array(c->own, klen + vlen + 2, 1) : NULL;
        if (ok && !entry) ok = out_of_memory(c);
        path_reset(c, mark);
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
static bool string_array(parse_ctx *c, json_t *v, bool is_argv, char ***out, size_t *n) {
    if (!get_array(c, v, MAX_ARGV, "strings")) return false;
    size_t count = json_array_size(v);
    if (is_argv && count == 0) return fail(c, "expected at least the program (argv[0])");
    char **list = own_array(c->own, count + 1, sizeof *list); /* NULL-terminated too */
    if (!list) return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        size_t mark = path_index(c, i);
        bool ok = copy_string(c, json_array_get(v, i), MAX_ARG, &list[i]);
        if (ok && is_argv && i == 0 && !list[0][0]) ok = fail(c, "empty program name");
        path_reset(c, mark);
        if (!ok) return false;
    }
    *out = list;
    *n = count;
    return true;
}

static bool absolute_path(parse_ctx *c, json_t *v, char **out) {
    if (!copy_string(c, v, MAX_PATH, out)) return false;
    if ((*out)[0] != '/') return fail(c, "expected an absolute path");
    return true;
}

static bool one_dir(parse_ctx *c, json_t *d, al_dir_grant *g) {
    static const char *const names[] = {"host", "guest", "read_only", NULL};
    if (!json_is_object(d)) return fail(c, "expected an object {\"host\", \"guest\", \"read_only\"}");
    if (!only_fields(c, d, names)) return false;
    json_t *host = json_object_get(d, "host"), *guest = json_object_get(d, "guest");
    json_t *ro = json_object_get(d, "read_only");
    if (!host) return fail(c, "missing field \"host\"");
    char *h = NULL, *gp = NULL;
    size_t mark = path_key(c, "host");
    bool ok = absolute_path(c, host, &h);
    path_reset(c, mark);
    if (ok && guest) {
        mark = path_key(c, "guest");
        ok = absolute_path(c, guest, &gp);
        path_reset(c, mark);
    }
    if (ok && ro && !json_is_boolean(ro)) ok = fail(c, "read_only: expected true or false");
    if (!ok) return false;
    /* the guest path defaults to the host path; zero trust: read-only by default */
    *g = (al_dir_grant){h, gp ? gp : h, !ro || json_is_true(ro)};
    return true;
}

static bool dir_list(parse_ctx *c, json_t *v, svc_exec_request *r) {
    if (!get_array(c, v, MAX_DIRS, "directory objects")) return false;
    size_t count = json_array_size(v);
    r->dirs = own_array(c->own, count, sizeof *r->dirs);
    if (!r->dirs) return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        size_t mark = path_index(c, i);
        bool ok = one_dir(c, json_array_get(v, i), &r->dirs[i]);
        path_reset(c, mark);
        if (!ok) return false;
    }
    r->ndirs = count;
    return true;
}

static bool session_id(parse_ctx *c, json_t *v, char **out) {
    if (!copy_string(c, v, MAX_SESSION_ID, out)) return false;
    if (!(*out)[0]) return fail(c, "empty session id");
    for (const char *p = *out; *p; p++)
        if (!is_alnum(*p) && *p != '-' && *p != '_')
            return fail(c, "a session id is letters, digits, '-' and '_'");
    return true;
}

static const char *const kind_names[] = {"python", "wasm", "command"};

/* Which kinds take a field: bit 1 << svc_kind. */
#define K_PY (1u << SVC_PYTHON)
#define K_WASM (1u << SVC_WASM)
#define K_CMD (1u << SVC_COMMAND)
#define K_ALL (K_PY | K_WASM | K_CMD)

static const struct {
    const char *name;
    unsigned kinds;
} fields[] = {
    {"kind", K_ALL},           {"code", K_PY},           {"module_base64", K_WASM},
    {"module_path", K_WASM},   {"args", K_PY | K_WASM},  {"argv", K_CMD},
    {"backend", K_CMD},        {"env", K_ALL},           {"stdin", K_ALL},
    {"stdin_base64", K_ALL},   {"timeout_ms", K_ALL},    {"memory_bytes", K_ALL},
    {"fuel", K_PY | K_WASM},   {"session", K_ALL},       {"dirs", K_ALL},
    {"egress", K_CMD},         {"stream", K_ALL},
};

/* true when the request's kind takes the field; false with the reason in
 * err when another kind does, or with *known false when no kind does (the
 * caller reports an unknown field). */
static bool field_allowed(parse_ctx *c, const char *key, bool *known) {
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, key) != 0) continue;
        *known = true;
        if (fields[i].kinds & (1u << c->req->kind)) return true;
        char kinds[64] = "";
        for (unsigned k = 0; k < 3; k++) {
            if (!(fields[i].kinds & (1u << k))) continue;
            size_t used = strlen(kinds);
            snprintf(kinds + used, sizeof kinds - used, "%s\"%s\"", used ? " or " : "",
                     kind_names[k]);
        }
        return fail(c, "not for kind \"%s\" (only %s)", kind_names[c->req->kind], kinds);
    }
    *known = false;
    return false;
}

static bool stdin_text(parse_ctx *c, json_t *v, svc_exec_request *r) {
    const char *s;
    size_t n;
    if (!get_string(c, v, MAX_STDIN, &s, &n)) return false;
    /* JSON strings are UTF-8 already; NUL bytes were refused above (use
     * stdin_base64 for binary input) */
    r->stdin_data = (uint8_t *)own_copy(c->own, s, n);
    r->stdin_len = n;
    return r->stdin_data ? true : out_of_memory(c);
}

static bool backend_field(parse_ctx *c, json_t *v, svc_exec_request *r) {
    const char *s;
    if (!get_string(c, v, 16, &s, NULL)) return fail(c, "expected \"native\" or \"gvisor\"");
    if (!strcmp(s, "native")) r->backend = AL_ISOLATION_NATIVE;
    else if (!strcmp(s, "gvisor")) r->backend = AL_ISOLATION_GVISOR;
    else return fail(c, "expected \"native\" or \"gvisor\"");
    return true;
}

static bool top_field(parse_ctx *c, const char *key, json_t *v, void *target) {
    svc_exec_request *r = target;
    bool known = false;
    if (!field_allowed(c, key, &known)) return known ? false : unknown_field(c);
    if (!strcmp(key, "kind")) return true; /* read before the loop */
    if (!strcmp(key, "code")) return copy_string(c, v, MAX_CODE, &r->code);
    if (!strcmp(key, "module_base64")) return get_base64(c, v, MAX_MODULE, &r->module, &r->module_len);
    if (!strcmp(key, "module_path")) return absolute_path(c, v, &r->module_path);
    if (!strcmp(key, "args")) return string_array(c, v, false, &r->argv, &r->argc);
    if (!strcmp(key, "argv")) return string_array(c, v, true, &r->argv, &r->argc);
    if (!strcmp(key, "backend")) return backend_field(c, v, r);
    if (!strcmp(key, "env")) return env_map(c, v, r);
    if (!strcmp(key, "stdin")) return stdin_text(c, v, r);
    if (!strcmp(key, "stdin_base64")) return get_base64(c, v, MAX_STDIN, &r->stdin_data, &r->stdin_len);
    if (!strcmp(key, "timeout_ms")) return get_uint(c, v, 1, MAX_DURATION_MS, &r->timeout_ms);
    if (!strcmp(key, "memory_bytes")) return get_uint(c, v, MIN_MEMORY, MAX_MEMORY, &r->memory_bytes);
    if (!strcmp(key, "fuel")) return get_uint(c, v, 1, MAX_BYTES, &r->fuel);
    if (!strcmp(key, "session")) return session_id(c, v, &r->session);
    if (!strcmp(key, "dirs")) return dir_list(c, v, r);
    if (!strcmp(key, "egress")) return each_field(c, v, egress_field, &r->egress);
    if (!strcmp(key, "stream")) {
        if (!json_is_boolean(v)) return fail(c, "expected true or false");
        r->stream = json_is_true(v);
        return true;
    }
    return unknown_field(c);
}

static bool read_kind(parse_ctx *c, const json_t *body, svc_exec_request *r) {
    json_t *v = json_object_get(body, "kind");
    if (!v) return fail(c, "missing field \"kind\" (\"python\", \"wasm\" or \"command\")");
    size_t mark = path_key(c, "kind");
    const char *s = NULL;
    bool ok = get_string(c, v, 16, &s, NULL);
    if (ok) {
        unsigned k = 0;
        while (k < 3 && strcmp(s, kind_names[k]) != 0) k++;
        if (k < 3) r->kind = (svc_kind)k;
        else ok = fail(c, "expected \"python\", \"wasm\" or \"command\"");
    } else {
        fail(c, "expected \"python\", \"wasm\" or \"command\"");
    }
    path_reset(c, mark);
    return ok;
}

/* What a kind requires, once every field is read. */
static bool complete(parse_ctx *c, const json_t *body, svc_exec_request *r) {
    if (json_object_get(body, "stdin") && json_object_get(body, "stdin_base64"))
        return fail(c, "give \"stdin\" or \"stdin_base64\", not both");
    switch (r->kind) {
    case SVC_PYTHON:
        if (!r->code) return fail(c, "missing field \"code\" (kind \"python\")");
        break;
    case SVC_WASM:
        if (!r->module && !r->module_path)
            return fail(c, "missing field \"module_base64\" or \"module_path\" (kind \"wasm\")");
        if (r->module && r->module_path)
            return fail(c, "give \"module_base64\" or \"module_path\", not both");
        break;
    case SVC_COMMAND:
        if (!r->argv) return fail(c, "missing field \"argv\" (kind \"command\")");
        break;
    }
    return true;
}

bool svc_request_parse(const json_t *body, svc_exec_request *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (errlen) err[0] = '\0';
    owned_list *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "%s", oom);
        return false;
    }
    out->owned = o;
    out->backend = AL_ISOLATION_NATIVE;
    parse_ctx c = {.err = err, .errlen = errlen, .own = o, .req = out};
    bool ok = json_is_object(body) ? read_kind(&c, body, out) : fail(&c, "expected a JSON object");
    /* json_object_foreach takes a non-const object; it only reads */
    ok = ok && each_field(&c, (json_t *)body, top_field, out) && complete(&c, body, out);
    if (!ok) svc_request_free(out);
    return ok;
}

/* ---- JSON out ------------------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 when ill-formed;
 * *bad is then the length of the maximal ill-formed subpart (at least 1).
 * The same as json_out.c's, so the API and the CLI agree byte for byte. */
static size_t utf8_sequence(const uint8_t *s, size_t avail, size_t *bad) {
    uint8_t b = s[0];
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) need = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0) lo = 0xA0;      /* no overlongs */
        else if (b == 0xED) hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0) lo = 0x90;      /* no overlongs */
        else if (b == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        *bad = 1;
        return 0;
    }
    size_t i = 1;
    for (; i < need && i < avail; i++) {
        uint8_t ch = s[i];
        if (i == 1 ? (ch < lo || ch > hi) : (ch < 0x80 || ch > 0xBF)) break;
    }
    if (i == need) return need;
    *bad = i;
    return 0;
}

/* A JSON string of arbitrary bytes: ill-formed UTF-8 becomes U+FFFD. NULL
 * only when out of memory. */
static json_t *json_bytes(const uint8_t *s, size_t len) {
    if (!s) return json_string("");
    if (len > (SIZE_MAX - 1) / 3) return NULL;
    uint8_t *buf = malloc(len * 3 + 1); /* each bad byte may become 3 */
    if (!buf) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t bad = 0, n = utf8_sequence(s + i, len - i, &bad);
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
