/*
 * policy_json.c — the strict JSON reading, egress rules and UTF-8 decoding
 * that `airlock exec --policy` (src/cli/policy_file.c) and airlockd's
 * request bodies (request.c) share (policy_json.h).
 *
 * Invariants:
 *  - strict: a field the reader does not know, a wrong type, a number out of
 *    its range (never negative, never 0, never a fraction) or a string with
 *    a NUL byte is an error naming the JSON path. A typo such as
 *    "alow_domains" must not silently become "no rule";
 *  - rules are checked syntactically before they are stored: header values
 *    with CR, LF or other control bytes are refused (they would let a value
 *    forge extra header lines or a second request: request splitting);
 *    header values are never echoed in a message (they are secrets);
 *  - every string a svc_egress_rules points to is in its pool, every array
 *    is its own; svc_egress_free releases all of it, after success or after
 *    any failure half way (nothing is ever owned twice);
 *  - messages are one printable line: keys echoed in them have control
 *    bytes and quotes replaced, and they are truncated, never overflowed;
 *  - bounds are the caller's (svc_egress_limits): airlockd bounds every
 *    list and string of a hostile body, the CLI's file is bounded by its
 *    size (1 MiB) and reads with SIZE_MAX.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_json.h"

#define MAX_HEADER_NAME 256
#define MAX_HEADER_VALUE 8192 /* the proxy's whole request head is 16 KiB */

const char svc_oom[] = "out of memory";

/* ---- owned storage ------------------------------------------------------------------ */

/* The capacity is implicit: always n rounded up to a power of two, so it
 * grows exactly when n is 0 or a power of two. Elements are only ever added
 * one at a time through here, which keeps that true. */
bool svc_grow(void **items, size_t n, size_t size) {
    if (n != 0 && (n & (n - 1)) != 0) return true;
    size_t cap = n ? n * 2 : 1;
    if (cap > SIZE_MAX / size) return false;
    void *grown = realloc(*items, cap * size);
    if (!grown) return false;
    *items = grown;
    return true;
}

bool svc_strings_push(svc_strings *s, char *owned) {
    if (!svc_grow((void **)&s->items, s->n, sizeof *s->items)) return false;
    s->items[s->n++] = owned;
    return true;
}

char *svc_strings_alloc(svc_strings *s, size_t len) {
    if (len == SIZE_MAX) return NULL;
    char *buf = calloc(len + 1, 1);
    if (!buf) return NULL;
    if (svc_strings_push(s, buf)) return buf;
    free(buf);
    return NULL;
}

char *svc_strings_copy(svc_strings *s, const char *text, size_t len) {
    char *copy = svc_strings_alloc(s, len);
    if (copy) memcpy(copy, text, len);
    return copy;
}

void svc_strings_free(svc_strings *s) {
    for (size_t i = 0; i < s->n; i++) free(s->items[i]);
    free(s->items);
    s->items = NULL;
    s->n = 0;
}

bool svc_push_str(const char ***list, size_t *n, const char *s) {
    if (!svc_grow((void **)list, *n, sizeof **list)) return false;
    (*list)[(*n)++] = s;
    return true;
}

/* ---- syntax of the rules ------------------------------------------------------------- */

static bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A DNS name: labels of letters, digits and '-' (1..63 bytes), at most 253
 * bytes, one trailing dot allowed; with wildcard_ok a leading "*." too. The
 * proxy compares names byte for byte after normalising, so anything else
 * (spaces, '_', '%', a second '*') could never match — or match something
 * unintended after another program's normalisation. */
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

/* ADDRESS[/PREFIX] with an IPv4 or IPv6 address and a decimal prefix that
 * fits its family. */
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

/* An RFC 9110 token: what a header name may be. A name with ':' or a space
 * would let the grant write a different header than the one it names. */
static const char *header_name_problem(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return "empty header name";
    if (n > MAX_HEADER_NAME) return "header name too long";
    for (; *s; s++)
        if (!is_alnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return "the header name is not an HTTP token (letters, digits, !#$%&'*+-.^_`|~)";
    return NULL;
}

/* Visible bytes, space, tab and non-ASCII (obs-text) only: CR or LF would end
 * the header line early and let the value add headers or a whole request. */
static const char *header_value_problem(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return "empty header value";
    if (n > MAX_HEADER_VALUE) return "header value too long (at most 8192 bytes)";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return "the header value contains CR, LF or another control character";
    }
    return NULL;
}

/* A literal address for the static host map: IPv4, or IPv6 in brackets (or
 * bare). The brackets are dropped: start and len give the address itself. */
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

/* ---- adding rules ---------------------------------------------------------------------- */

const char *svc_egress_add_domain(svc_egress_rules *e, bool deny, const char *s) {
    const char *why = domain_problem(s, true);
    if (why) return why;
    const char *copy = svc_strings_copy(&e->strings, s, strlen(s));
    if (!copy) return svc_oom;
    bool ok = deny ? svc_push_str(&e->deny_domains, &e->ndeny_domains, copy)
                   : svc_push_str(&e->allow_domains, &e->nallow_domains, copy);
    return ok ? NULL : svc_oom;
}

const char *svc_egress_add_port(svc_egress_rules *e, uint64_t port) {
    if (port < 1 || port > 65535) return "not a port (1..65535)";
    if (!svc_grow((void **)&e->allow_ports, e->nallow_ports, sizeof *e->allow_ports))
        return svc_oom;
    e->allow_ports[e->nallow_ports++] = (uint16_t)port;
    return NULL;
}

const char *svc_egress_add_ip(svc_egress_rules *e, const char *s) {
    const char *why = cidr_problem(s);
    if (why) return why;
    const char *copy = svc_strings_copy(&e->strings, s, strlen(s));
    if (!copy) return svc_oom;
    return svc_push_str(&e->allow_ips, &e->nallow_ips, copy) ? NULL : svc_oom;
}

const char *svc_egress_add_header(svc_egress_rules *e, const char *domain, const char *name,
                                  const char *value) {
    const char *why = domain_problem(domain, true);
    if (!why) why = header_name_problem(name);
    if (!why) why = header_value_problem(value); /* names the problem, never the value */
    if (why) return why;
    al_header_grant g = {svc_strings_copy(&e->strings, domain, strlen(domain)),
                         svc_strings_copy(&e->strings, name, strlen(name)),
                         svc_strings_copy(&e->strings, value, strlen(value))};
    if (!g.domain || !g.name || !g.value) return svc_oom;
    if (!svc_grow((void **)&e->headers, e->nheaders, sizeof *e->headers)) return svc_oom;
    e->headers[e->nheaders++] = g;
    return NULL;
}

const char *svc_egress_add_host(svc_egress_rules *e, const char *name, const char *address) {
    const char *start = NULL, *why = domain_problem(name, false);
    size_t len = 0;
    if (!why) why = host_address_problem(address, &start, &len);
    if (why) return why;
    al_host_entry h = {svc_strings_copy(&e->strings, name, strlen(name)),
                       svc_strings_copy(&e->strings, start, len)};
    if (!h.name || !h.address) return svc_oom;
    if (!svc_grow((void **)&e->hosts, e->nhosts, sizeof *e->hosts)) return svc_oom;
    e->hosts[e->nhosts++] = h;
    return NULL;
}

void svc_egress_fill(const svc_egress_rules *e, al_egress *out) {
    out->allow_domains = e->allow_domains;
    out->nallow_domains = e->nallow_domains;
    out->deny_domains = e->deny_domains;
    out->ndeny_domains = e->ndeny_domains;
    out->allow_ports = e->allow_ports;
    out->nallow_ports = e->nallow_ports;
    out->allow_ips = e->allow_ips;
    out->nallow_ips = e->nallow_ips;
    out->headers = e->headers;
    out->nheaders = e->nheaders;
    out->hosts = e->hosts;
    out->nhosts = e->nhosts;
    /* bounded when added: connections <= 65535, idle <= UINT32_MAX */
    if (e->max_connections) out->max_connections = (uint32_t)e->max_connections;
    if (e->max_bytes_per_connection) out->max_bytes_per_connection = e->max_bytes_per_connection;
    if (e->max_bytes) out->max_bytes = e->max_bytes;
    if (e->idle_timeout_ms) out->idle_timeout_ms = (uint32_t)e->idle_timeout_ms;
    if (e->log_path) out->log_path = e->log_path;
}

void svc_egress_free(svc_egress_rules *e) {
    svc_strings_free(&e->strings);
    free(e->allow_domains);
    free(e->deny_domains);
    free(e->allow_ports);
    free(e->allow_ips);
    free(e->headers);
    free(e->hosts);
    memset(e, 0, sizeof *e);
}

/* ---- strict JSON reading ------------------------------------------------------------ */

size_t svc_json_path_key(svc_json_ctx *c, const char *key) {
    size_t mark = c->pathlen;
    if (c->pathlen && c->pathlen < sizeof c->path - 1) c->path[c->pathlen++] = '.';
    for (const char *k = key; *k && c->pathlen < sizeof c->path - 1; k++) {
        unsigned char ch = (unsigned char)*k;
        c->path[c->pathlen++] = ch < 0x20 || ch == 0x7f || ch == '"' ? '?' : (char)ch;
    }
    c->path[c->pathlen] = '\0';
    return mark;
}

size_t svc_json_path_index(svc_json_ctx *c, size_t i) {
    size_t mark = c->pathlen, room = sizeof c->path - c->pathlen;
    int n = snprintf(c->path + c->pathlen, room, "[%zu]", i);
    if (n > 0) c->pathlen += (size_t)n < room ? (size_t)n : room - 1;
    return mark;
}

void svc_json_path_reset(svc_json_ctx *c, size_t mark) {
    c->pathlen = mark;
    c->path[mark] = '\0';
}

bool svc_json_fail(svc_json_ctx *c, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->pathlen) snprintf(c->err, c->errlen, "%s: %s", c->path, msg);
    else snprintf(c->err, c->errlen, "%s", msg);
    return false;
}

bool svc_json_unknown_field(svc_json_ctx *c) {
    snprintf(c->err, c->errlen, "unknown field \"%s\"", c->path);
    return false;
}

bool svc_json_rule(svc_json_ctx *c, const char *why) {
    if (!why) return true;
    if (why == svc_oom) snprintf(c->err, c->errlen, "%s", svc_oom);
    else svc_json_fail(c, "%s", why);
    return false;
}

bool svc_json_uint(svc_json_ctx *c, json_t *v, uint64_t min, uint64_t max, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
        return svc_json_fail(c, "expected an integer %" PRIu64 "..%" PRIu64, min, max);
    *out = (uint64_t)json_integer_value(v);
    return true;
}

bool svc_json_string(svc_json_ctx *c, json_t *v, size_t max, const char **out, size_t *len) {
    if (!json_is_string(v)) return svc_json_fail(c, "expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (memchr(s, '\0', n)) return svc_json_fail(c, "the string contains a NUL byte");
    if (n > max) return svc_json_fail(c, "longer than %zu bytes", max);
    *out = s;
    if (len) *len = n;
    return true;
}

bool svc_json_array(svc_json_ctx *c, json_t *v, size_t max, const char *what) {
    if (!json_is_array(v)) return svc_json_fail(c, "expected an array of %s", what);
    if (json_array_size(v) > max) return svc_json_fail(c, "at most %zu entries", max);
    return true;
}

bool svc_json_member(svc_json_ctx *c, json_t *obj, const char *key, size_t max,
                     const char **out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return svc_json_fail(c, "missing field \"%s\"", key);
    size_t mark = svc_json_path_key(c, key);
    bool ok = svc_json_string(c, v, max, out, NULL);
    svc_json_path_reset(c, mark);
    return ok;
}

bool svc_json_only_fields(svc_json_ctx *c, json_t *obj, const char *const *names) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t k = 0;
        while (names[k] && strcmp(names[k], key) != 0) k++;
        if (!names[k]) {
            svc_json_path_key(c, key);
            return svc_json_unknown_field(c);
        }
    }
    return true;
}

bool svc_json_each_field(svc_json_ctx *c, json_t *obj, svc_json_field_fn field, void *target) {
    if (!json_is_object(obj)) return svc_json_fail(c, "expected an object");
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t mark = svc_json_path_key(c, key);
        bool ok = field(c, key, v, target);
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

/* ---- the "egress" object ------------------------------------------------------------- */

typedef struct egress_target {
    svc_egress_rules *rules;
    const svc_egress_limits *limits;
} egress_target;

/* Each element of an array of strings through add(rules, flag, s). */
typedef const char *(*string_rule)(svc_egress_rules *e, bool flag, const char *s);

static const char *ip_rule(svc_egress_rules *e, bool unused, const char *s) {
    return svc_egress_add_ip(e, s);
}

static bool string_list(svc_json_ctx *c, json_t *v, egress_target *t, string_rule add,
                        bool flag) {
    if (!svc_json_array(c, v, t->limits->max_entries, "strings")) return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = svc_json_path_index(c, i);
        const char *s;
        bool ok = svc_json_string(c, json_array_get(v, i), t->limits->max_string, &s, NULL) &&
                  svc_json_rule(c, add(t->rules, flag, s));
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool port_list(svc_json_ctx *c, json_t *v, egress_target *t) {
    if (!svc_json_array(c, v, t->limits->max_entries, "port numbers")) return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = svc_json_path_index(c, i);
        uint64_t port;
        bool ok = svc_json_uint(c, json_array_get(v, i), 1, 65535, &port) &&
                  svc_json_rule(c, svc_egress_add_port(t->rules, port));
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool one_header(svc_json_ctx *c, json_t *h, egress_target *t) {
    static const char *const names[] = {"domain", "name", "value", NULL};
    const svc_egress_limits *lim = t->limits;
    const char *domain, *name, *value;
    if (!json_is_object(h))
        return svc_json_fail(c, "expected an object {\"domain\", \"name\", \"value\"}");
    return svc_json_only_fields(c, h, names) &&
           svc_json_member(c, h, "domain", lim->max_string, &domain) &&
           svc_json_member(c, h, "name", lim->max_string, &name) &&
           svc_json_member(c, h, "value", lim->max_header_value, &value) &&
           svc_json_rule(c, svc_egress_add_header(t->rules, domain, name, value));
}

static bool header_list(svc_json_ctx *c, json_t *v, egress_target *t) {
    if (!svc_json_array(c, v, t->limits->max_entries, "header objects")) return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = svc_json_path_index(c, i);
        bool ok = one_header(c, json_array_get(v, i), t);
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool host_map(svc_json_ctx *c, json_t *v, egress_target *t) {
    if (!json_is_object(v)) return svc_json_fail(c, "expected an object {\"name\": \"address\"}");
    if (json_object_size(v) > t->limits->max_entries)
        return svc_json_fail(c, "at most %zu entries", t->limits->max_entries);
    const char *key;
    json_t *addr;
    json_object_foreach(v, key, addr) {
        size_t mark = svc_json_path_key(c, key);
        const char *s;
        bool ok = svc_json_string(c, addr, t->limits->max_string, &s, NULL) &&
                  svc_json_rule(c, svc_egress_add_host(t->rules, key, s));
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool log_field(svc_json_ctx *c, json_t *v, egress_target *t) {
    const char *s;
    if (!svc_json_string(c, v, t->limits->max_string, &s, NULL)) return false;
    if (!s[0]) return svc_json_fail(c, "empty file name");
    t->rules->log_path = svc_strings_copy(&t->rules->strings, s, strlen(s));
    return svc_json_rule(c, t->rules->log_path ? NULL : svc_oom);
}

static bool egress_field(svc_json_ctx *c, const char *key, json_t *v, void *target) {
    egress_target *t = target;
    svc_egress_rules *e = t->rules;
    if (!strcmp(key, "allow_domains")) return string_list(c, v, t, svc_egress_add_domain, false);
    if (!strcmp(key, "deny_domains")) return string_list(c, v, t, svc_egress_add_domain, true);
    if (!strcmp(key, "allow_ports")) return port_list(c, v, t);
    if (!strcmp(key, "allow_ips")) return string_list(c, v, t, ip_rule, false);
    if (!strcmp(key, "headers")) return header_list(c, v, t);
    if (!strcmp(key, "hosts")) return host_map(c, v, t);
    if (!strcmp(key, "max_connections"))
        return svc_json_uint(c, v, 1, SVC_EGRESS_MAX_CONNECTIONS, &e->max_connections);
    if (!strcmp(key, "max_bytes_per_connection"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_BYTES, &e->max_bytes_per_connection);
    if (!strcmp(key, "max_bytes")) return svc_json_uint(c, v, 1, SVC_JSON_MAX_BYTES, &e->max_bytes);
    if (!strcmp(key, "idle_timeout_ms"))
        return svc_json_uint(c, v, 1, SVC_EGRESS_MAX_IDLE_MS, &e->idle_timeout_ms);
    if (!strcmp(key, "log") && t->limits->allow_log) return log_field(c, v, t);
    return svc_json_unknown_field(c);
}

bool svc_egress_parse(svc_json_ctx *c, json_t *v, const svc_egress_limits *limits,
                      svc_egress_rules *e) {
    egress_target t = {e, limits};
    return svc_json_each_field(c, v, egress_field, &t);
}

/* ---- UTF-8 -------------------------------------------------------------------------- */

size_t svc_utf8_sequence(const uint8_t *s, size_t avail, size_t *bad) {
    uint8_t b = s[0];
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
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
        uint8_t c = s[i];
        if (i == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
    }
    if (i == need) return need;
    *bad = i;
    return 0;
}
