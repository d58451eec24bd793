/*
 * policy_file.c — the egress flags of `airlock exec` and the JSON policy file
 * (--policy FILE), parsed into cli_egress / cli_policy (policy_file.h).
 *
 * The file format (every field optional; unknown fields are errors):
 *
 *   {"isolation": "native"|"gvisor", "timeout_ms": N, "cpu_time_ms": N,
 *    "memory_bytes": N, "max_processes": N, "max_open_files": N,
 *    "max_file_size": N, "tmpfs_bytes": N, "env": {"K": "V"},
 *    "dirs": [{"host": "/p", "guest": "/w", "read_only": true}], "cwd": "/w",
 *    "egress": {"allow_domains": [..], "deny_domains": [..],
 *               "allow_ports": [..], "allow_ips": [..],
 *               "headers": [{"domain": "d", "name": "N", "value": "V"}],
 *               "hosts": {"name": "addr"}, "max_connections": N,
 *               "max_bytes_per_connection": N, "max_bytes": N,
 *               "idle_timeout_ms": N, "log": "path"}}
 *
 * Invariants:
 *  - strict: a field this parser does not know, a wrong type, a number out of
 *    its range (never negative, never 0, never a fraction) or a duplicate key
 *    is an error naming the JSON path. A typo such as "alow_domains" must not
 *    silently become "no rule" — in a policy that fails open or closed in
 *    ways the author did not choose;
 *  - duplicate keys are refused (JSON_REJECT_DUPLICATES): two parsers of one
 *    file disagreeing on which value wins is how policies get smuggled;
 *  - the file is read up to CLI_POLICY_MAX_BYTES and no further, so a huge
 *    or endless file (a FIFO, /dev/zero) cannot exhaust memory;
 *  - strings with NUL bytes are refused (C would see a shorter string than
 *    the one the author wrote), header values with CR, LF or other control
 *    bytes are refused (they would let a value forge extra header lines or a
 *    second request: request splitting);
 *  - everything the result points to is owned by it (strings pool, arrays)
 *    and freed by one _free, on success and on every error path;
 *  - messages are one line: bytes of the file echoed in them (keys, jansson's
 *    "near '...'") have control characters replaced.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy_file.h"

#define MAX_DURATION_MS UINT64_C(1000000000000) /* as --timeout: ~31 years */
#define MAX_IDLE_MS UINT64_C(4294967295)        /* al_egress.idle_timeout_ms is 32-bit */
/* Byte counts beyond 2^53 are not exact in most JSON producers (doubles):
 * such a value is a rounding accident, not a limit anyone chose. */
#define MAX_BYTES (UINT64_C(1) << 53)
#define MAX_CONNECTIONS 65535
#define MAX_HEADER_NAME 256
#define MAX_HEADER_VALUE 8192   /* the proxy's whole request head is 16 KiB */

static const char oom[] = "out of memory";

/* ---- owned storage ------------------------------------------------------------ */

/* Make room for element n of *items (elements of `size` bytes). The capacity
 * is implicit: always n rounded up to a power of two, so it grows exactly
 * when n is 0 or a power of two. Elements are only ever added one at a time
 * through here, which keeps that true. */
static bool room_for(void **items, size_t n, size_t size) {
    if (n != 0 && (n & (n - 1)) != 0) return true;
    size_t cap = n ? n * 2 : 1;
    if (cap > SIZE_MAX / size) return false;
    void *grown = realloc(*items, cap * size);
    if (!grown) return false;
    *items = grown;
    return true;
}

static bool strings_push(cli_strings *s, char *owned) {
    if (!room_for((void **)&s->items, s->n, sizeof *s->items)) return false;
    s->items[s->n++] = owned;
    return true;
}

/* A zeroed buffer of len + 1 bytes owned by the pool; NULL when out of memory. */
static char *strings_alloc(cli_strings *s, size_t len) {
    if (len == SIZE_MAX) return NULL;
    char *buf = calloc(len + 1, 1);
    if (!buf) return NULL;
    if (strings_push(s, buf)) return buf;
    free(buf);
    return NULL;
}

/* A NUL-terminated copy of text[0..len) owned by the pool. */
static char *strings_copy(cli_strings *s, const char *text, size_t len) {
    char *copy = strings_alloc(s, len);
    if (copy) memcpy(copy, text, len);
    return copy;
}

static void strings_free(cli_strings *s) {
    for (size_t i = 0; i < s->n; i++) free(s->items[i]);
    free(s->items);
    s->items = NULL;
    s->n = 0;
}

static bool push_str(const char ***list, size_t *n, const char *s) {
    if (!room_for((void **)list, *n, sizeof **list)) return false;
    (*list)[(*n)++] = s;
    return true;
}

/* ---- syntax of the rules ----------------------------------------------------------- */

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

/* ---- adding rules (flags and file alike) --------------------------------------------
 * Each returns NULL, or why the value is refused (`oom` when out of memory). */

static const char *add_domain(cli_egress *e, bool deny, const char *s) {
    const char *why = domain_problem(s, true);
    if (why) return why;
    const char *copy = strings_copy(&e->strings, s, strlen(s));
    if (!copy) return oom;
    bool ok = deny ? push_str(&e->deny_domains, &e->ndeny_domains, copy)
                   : push_str(&e->allow_domains, &e->nallow_domains, copy);
    return ok ? NULL : oom;
}

static const char *add_port(cli_egress *e, uint64_t port) {
    if (port < 1 || port > 65535) return "not a port (1..65535)";
    if (!room_for((void **)&e->allow_ports, e->nallow_ports, sizeof *e->allow_ports)) return oom;
    e->allow_ports[e->nallow_ports++] = (uint16_t)port;
    return NULL;
}

static const char *add_ip(cli_egress *e, const char *s) {
    const char *why = cidr_problem(s);
    if (why) return why;
    const char *copy = strings_copy(&e->strings, s, strlen(s));
    if (!copy) return oom;
    return push_str(&e->allow_ips, &e->nallow_ips, copy) ? NULL : oom;
}

static const char *add_header(cli_egress *e, const char *domain, const char *name,
                              const char *value) {
    const char *why = domain_problem(domain, true);
    if (!why) why = header_name_problem(name);
    if (!why) why = header_value_problem(value);
    if (why) return why;
    al_header_grant g = {strings_copy(&e->strings, domain, strlen(domain)),
                         strings_copy(&e->strings, name, strlen(name)),
                         strings_copy(&e->strings, value, strlen(value))};
    if (!g.domain || !g.name || !g.value) return oom;
    if (!room_for((void **)&e->headers, e->nheaders, sizeof *e->headers)) return oom;
    e->headers[e->nheaders++] = g;
    return NULL;
}

static const char *add_host(cli_egress *e, const char *name, const char *address) {
    const char *start = NULL, *why = domain_problem(name, false);
    size_t len = 0;
    if (!why) why = host_address_problem(address, &start, &len);
    if (why) return why;
    al_host_entry h = {strings_copy(&e->strings, name, strlen(name)),
                       strings_copy(&e->strings, start, len)};
    if (!h.name || !h.address) return oom;
    if (!room_for((void **)&e->hosts, e->nhosts, sizeof *e->hosts)) return oom;
    e->hosts[e->nhosts++] = h;
    return NULL;
}

/* ---- the flags ---------------------------------------------------------------------- */

typedef enum egress_flag {
    F_ALLOW_DOMAIN, F_DENY_DOMAIN, F_ALLOW_PORT, F_ALLOW_IP, F_INJECT_HEADER, F_RESOLVE,
    F_CONNECTIONS, F_BYTES, F_CONNECTION_BYTES, F_IDLE, F_LOG, F_COUNT
} egress_flag;

static const char *const flag_names[F_COUNT] = {
    "--allow-domain", "--deny-domain", "--allow-port", "--allow-ip", "--inject-header",
    "--resolve", "--egress-connections", "--egress-bytes", "--egress-connection-bytes",
    "--egress-idle", "--egress-log",
};

/* Is a the option name, alone or as "--name=value"? */
static bool is_option(const char *a, const char *name, const char **inline_value) {
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '=')) return false;
    *inline_value = a[n] == '=' ? a + n + 1 : NULL;
    return true;
}

const char *cli_exec_only_option(const char *word) {
    const char *v;
    for (size_t k = 0; k < F_COUNT; k++)
        if (is_option(word, flag_names[k], &v)) return flag_names[k];
    return is_option(word, "--policy", &v) ? "--policy" : NULL;
}

/* One line: control bytes of the value are shown as '?'. The value of
 * --inject-header is never echoed: it is a secret (a token) that belongs in
 * no terminal or log. */
static int flag_error(egress_flag k, const char *value, const char *why) {
    if (why == oom) {
        fputs("airlock: out of memory\n", stderr);
        return CLI_FAIL;
    }
    if (k == F_INJECT_HEADER) {
        fprintf(stderr, "airlock exec: %s: %s\n", flag_names[k], why);
        return CLI_USAGE;
    }
    fprintf(stderr, "airlock exec: %s '", flag_names[k]);
    for (const char *p = value; *p; p++)
        fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
    fprintf(stderr, "': %s\n", why);
    return CLI_USAGE;
}

/* DOMAIN:NAME:VALUE, split at the first two ':' (VALUE may hold more). */
static const char *inject_header_flag(cli_egress *e, const char *v) {
    const char *c1 = strchr(v, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) return "expected DOMAIN:NAME:VALUE";
    if (c1 == v) return "empty domain (expected DOMAIN:NAME:VALUE)";
    if (c2 == c1 + 1) return "empty header name (expected DOMAIN:NAME:VALUE)";
    if (c2[1] == '\0') return "empty header value (expected DOMAIN:NAME:VALUE)";
    cli_strings tmp = {0};
    char *domain = strings_copy(&tmp, v, (size_t)(c1 - v));
    char *name = strings_copy(&tmp, c1 + 1, (size_t)(c2 - c1 - 1));
    const char *why = domain && name ? add_header(e, domain, name, c2 + 1) : oom;
    strings_free(&tmp);
    return why;
}

/* NAME:ADDRESS, split at the first ':' (a name has none; "[::1]" has several). */
static const char *resolve_flag(cli_egress *e, const char *v) {
    const char *colon = strchr(v, ':');
    if (!colon || colon == v || colon[1] == '\0')
        return "expected NAME:ADDRESS (an IPv6 address in brackets: NAME:[::1])";
    cli_strings tmp = {0};
    char *name = strings_copy(&tmp, v, (size_t)(colon - v));
    const char *why = name ? add_host(e, name, colon + 1) : oom;
    strings_free(&tmp);
    return why;
}

static uint64_t *scalar_slot(cli_egress *e, egress_flag k) {
    switch (k) {
    case F_CONNECTIONS: return &e->max_connections;
    case F_BYTES: return &e->max_bytes;
    case F_CONNECTION_BYTES: return &e->max_bytes_per_connection;
    default: return &e->idle_timeout_ms;
    }
}

/* A number-valued scalar, or the log path. Each may be given once: a second
 * value is more likely two scripts' flags run together than a wish to
 * override (the policy file's values are overridden, not doubled). */
static const char *scalar_flag(cli_egress *e, egress_flag k, const char *v, bool *twice) {
    const char *why = NULL;
    if (k == F_LOG) {
        if (e->log_path) *twice = true;
        else if (!v[0]) return "empty file name";
        else if (!(e->log_path = strings_copy(&e->strings, v, strlen(v)))) return oom;
        return NULL;
    }
    uint64_t n = 0, *slot = scalar_slot(e, k);
    if (*slot) {
        *twice = true;
        return NULL;
    }
    if (k == F_CONNECTIONS) {
        if (!cli_parse_count(v, &n, &why)) return why;
        if (n > MAX_CONNECTIONS) return "at most 65535";
    } else if (k == F_IDLE) {
        if (!cli_parse_duration_ms(v, &n, &why)) return why;
        if (n > MAX_IDLE_MS) return "at most 4294967295ms (49 days)";
    } else if (!cli_parse_bytes(v, &n, &why)) {
        return why;
    }
    *slot = n;
    return NULL;
}

static const char *apply_flag(cli_egress *e, egress_flag k, const char *v, bool *twice) {
    const char *why = NULL;
    uint64_t port;
    switch (k) {
    case F_ALLOW_DOMAIN: return add_domain(e, false, v);
    case F_DENY_DOMAIN: return add_domain(e, true, v);
    case F_ALLOW_PORT:
        if (!cli_parse_count(v, &port, &why)) return "not a port (1..65535)";
        return add_port(e, port);
    case F_ALLOW_IP: return add_ip(e, v);
    case F_INJECT_HEADER: return inject_header_flag(e, v);
    case F_RESOLVE: return resolve_flag(e, v);
    default: return scalar_flag(e, k, v, twice);
    }
}

int cli_egress_option(int argc, char **argv, int *i, cli_egress *e) {
    const char *v = NULL;
    size_t k = 0;
    while (k < F_COUNT && !is_option(argv[*i], flag_names[k], &v)) k++;
    if (k == F_COUNT) return CLI_NOT_POLICY_OPTION;
    const char *name = flag_names[k];
    if (!v) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "airlock exec: %s: needs a value\n", name);
            return CLI_USAGE;
        }
        v = argv[++*i];
    }
    bool twice = false;
    const char *why = apply_flag(e, (egress_flag)k, v, &twice);
    if (twice) {
        fprintf(stderr, "airlock exec: %s given twice\n", name);
        return CLI_USAGE;
    }
    return why ? flag_error((egress_flag)k, v, why) : CLI_OK;
}

/* ---- merging and handing over ---------------------------------------------------------- */

bool cli_egress_given(const cli_egress *e) {
    return e->nallow_domains || e->ndeny_domains || e->nallow_ports || e->nallow_ips ||
           e->nheaders || e->nhosts || e->max_connections || e->max_bytes_per_connection ||
           e->max_bytes || e->idle_timeout_ms || e->log_path;
}

static bool append_strs(const char ***dst, size_t *ndst, const char *const *src, size_t nsrc) {
    for (size_t i = 0; i < nsrc; i++)
        if (!push_str(dst, ndst, src[i])) return false;
    return true;
}

/* Move the strings first, one at a time from the end, so each is owned by
 * exactly one pool at every step (an out-of-memory half way leaks nothing). */
static bool move_strings(cli_strings *dst, cli_strings *src) {
    while (src->n > 0) {
        if (!strings_push(dst, src->items[src->n - 1])) return false;
        src->n--;
    }
    return true;
}

static bool append_lists(cli_egress *b, const cli_egress *o) {
    if (!append_strs(&b->allow_domains, &b->nallow_domains, o->allow_domains, o->nallow_domains) ||
        !append_strs(&b->deny_domains, &b->ndeny_domains, o->deny_domains, o->ndeny_domains) ||
        !append_strs(&b->allow_ips, &b->nallow_ips, o->allow_ips, o->nallow_ips))
        return false;
    for (size_t i = 0; i < o->nallow_ports; i++)
        if (add_port(b, o->allow_ports[i])) return false;
    for (size_t i = 0; i < o->nheaders; i++) {
        if (!room_for((void **)&b->headers, b->nheaders, sizeof *b->headers)) return false;
        b->headers[b->nheaders++] = o->headers[i];
    }
    for (size_t i = 0; i < o->nhosts; i++) {
        if (!room_for((void **)&b->hosts, b->nhosts, sizeof *b->hosts)) return false;
        b->hosts[b->nhosts++] = o->hosts[i];
    }
    return true;
}

bool cli_egress_merge(cli_egress *base, cli_egress *over) {
    if (!move_strings(&base->strings, &over->strings) || !append_lists(base, over)) return false;
    if (over->max_connections) base->max_connections = over->max_connections;
    if (over->max_bytes_per_connection) base->max_bytes_per_connection = over->max_bytes_per_connection;
    if (over->max_bytes) base->max_bytes = over->max_bytes;
    if (over->idle_timeout_ms) base->idle_timeout_ms = over->idle_timeout_ms;
    if (over->log_path) base->log_path = over->log_path;
    cli_egress_free(over); /* its strings now belong to base */
    return true;
}

void cli_egress_fill(const cli_egress *e, al_egress *out) {
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
    /* bounded when parsed: connections <= 65535, idle <= UINT32_MAX */
    if (e->max_connections) out->max_connections = (uint32_t)e->max_connections;
    if (e->max_bytes_per_connection) out->max_bytes_per_connection = e->max_bytes_per_connection;
    if (e->max_bytes) out->max_bytes = e->max_bytes;
    if (e->idle_timeout_ms) out->idle_timeout_ms = (uint32_t)e->idle_timeout_ms;
    if (e->log_path) out->log_path = e->log_path;
}

void cli_egress_free(cli_egress *e) {
    strings_free(&e->strings);
    free(e->allow_domains);
    free(e->deny_domains);
    free(e->allow_ports);
    free(e->allow_ips);
    free(e->headers);
    free(e->hosts);
    memset(e, 0, sizeof *e);
}

void cli_policy_free(cli_policy *p) {
    strings_free(&p->strings);
    free(p->env);
    for (size_t i = 0; i < p->ndirs; i++) free(p->dirs[i].spec_copy);
    free(p->dirs);
    cli_egress_free(&p->egress);
    memset(p, 0, sizeof *p);
}

/* ---- the JSON document ---------------------------------------------------------------- */

typedef struct parse_ctx {
    char *err;
    size_t errlen;
    char path[192];       /* the JSON path of the value being parsed, e.g. egress.headers[0] */
    size_t pathlen;
} parse_ctx;

/* Append to the path, truncating (never overflowing) when it is too long;
 * returns the length to restore afterwards. Control bytes and quotes of keys
 * become '?' so a message stays one readable line. */
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
    size_t mark = c->pathlen;
    int n = snprintf(c->path + c->pathlen, sizeof c->path - c->pathlen, "[%zu]", i);
    if (n > 0) c->pathlen += (size_t)n < sizeof c->path - c->pathlen ? (size_t)n
                                                                     : sizeof c->path - c->pathlen - 1;
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

static bool get_uint(parse_ctx *c, json_t *v, uint64_t min, uint64_t max, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
        return fail(c, "expected an integer %" PRIu64 "..%" PRIu64, min, max);
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* A string without NUL bytes (C would see only its first part). */
static bool get_string(parse_ctx *c, json_t *v, const char **out) {
    if (!json_is_string(v)) return fail(c, "expected a string");
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v)) return fail(c, "the string contains a NUL byte");
    *out = s;
    return true;
}

/* A rule check's answer as an error at the current path. */
static bool rule(parse_ctx *c, const char *why) {
    if (!why) return true;
    if (why == oom) snprintf(c->err, c->errlen, "%s", oom);
    else fail(c, "%s", why);
    return false;
}

/* Each element of an array of strings through add(e, flag, s). */
typedef const char *(*string_rule)(cli_egress *e, bool flag, const char *s);

static const char *ip_rule(cli_egress *e, bool unused, const char *s) { return add_ip(e, s); }

static bool string_list(parse_ctx *c, json_t *v, cli_egress *e, string_rule add, bool flag) {
    if (!json_is_array(v)) return fail(c, "expected an array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = path_index(c, i);
        const char *s;
        bool ok = get_string(c, json_array_get(v, i), &s) && rule(c, add(e, flag, s));
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool port_list(parse_ctx *c, json_t *v, cli_egress *e) {
    if (!json_is_array(v)) return fail(c, "expected an array of port numbers");
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = path_index(c, i);
        uint64_t port;
        bool ok = get_uint(c, json_array_get(v, i), 1, 65535, &port) && rule(c, add_port(e, port));
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

/* A required string member of an object element. */
static bool member(parse_ctx *c, json_t *obj, const char *key, const char **out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return fail(c, "missing field \"%s\"", key);
    size_t mark = path_key(c, key);
    bool ok = get_string(c, v, out);
    path_reset(c, mark);
    return ok;
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

static bool one_header(parse_ctx *c, json_t *h, cli_egress *e) {
    static const char *const names[] = {"domain", "name", "value", NULL};
    const char *domain, *name, *value;
    if (!json_is_object(h)) return fail(c, "expected an object {\"domain\", \"name\", \"value\"}");
    return only_fields(c, h, names) && member(c, h, "domain", &domain) &&
           member(c, h, "name", &name) && member(c, h, "value", &value) &&
           rule(c, add_header(e, domain, name, value));
}

static bool header_list(parse_ctx *c, json_t *v, cli_egress *e) {
    if (!json_is_array(v)) return fail(c, "expected an array of header objects");
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = path_index(c, i);
        bool ok = one_header(c, json_array_get(v, i), e);
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool host_map(parse_ctx *c, json_t *v, cli_egress *e) {
    if (!json_is_object(v)) return fail(c, "expected an object {\"name\": \"address\"}");
    const char *key;
    json_t *addr;
    json_object_foreach(v, key, addr) {
        size_t mark = path_key(c, key);
        const char *s;
        bool ok = get_string(c, addr, &s) && rule(c, add_host(e, key, s));
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool egress_field(parse_ctx *c, const char *key, json_t *v, cli_egress *e) {
    if (!strcmp(key, "allow_domains")) return string_list(c, v, e, add_domain, false);
    if (!strcmp(key, "deny_domains")) return string_list(c, v, e, add_domain, true);
    if (!strcmp(key, "allow_ports")) return port_list(c, v, e);
    if (!strcmp(key, "allow_ips")) return string_list(c, v, e, ip_rule, false);
    if (!strcmp(key, "headers")) return header_list(c, v, e);
    if (!strcmp(key, "hosts")) return host_map(c, v, e);
    if (!strcmp(key, "max_connections")) return get_uint(c, v, 1, MAX_CONNECTIONS, &e->max_connections);
    if (!strcmp(key, "max_bytes_per_connection"))
        return get_uint(c, v, 1, MAX_BYTES, &e->max_bytes_per_connection);
    if (!strcmp(key, "max_bytes")) return get_uint(c, v, 1, MAX_BYTES, &e->max_bytes);
    if (!strcmp(key, "idle_timeout_ms")) return get_uint(c, v, 1, MAX_IDLE_MS, &e->idle_timeout_ms);
    if (!strcmp(key, "log")) {
        const char *s;
        if (!get_string(c, v, &s)) return false;
        if (!s[0]) return fail(c, "empty file name");
        e->log_path = strings_copy(&e->strings, s, strlen(s));
        return rule(c, e->log_path ? NULL : oom);
    }
    return unknown_field(c);
}

/* Iterate an object's members through field(c, key, value, target). */
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

static bool egress_field_fn(parse_ctx *c, const char *key, json_t *v, void *target) {
    return egress_field(c, key, v, target);
}

/* "env": {"K": "V"} -> "K=V" entries. A '=' in K would move the split. */
static bool env_field(parse_ctx *c, const char *key, json_t *v, void *target) {
    cli_policy *p = target;
    const char *value;
    if (!get_string(c, v, &value)) return false;
    if (!key[0]) return fail(c, "empty variable name");
    if (strchr(key, '=')) return fail(c, "a variable name cannot contain '='");
    size_t klen = strlen(key), vlen = strlen(value);
    char *entry = strings_alloc(&p->strings, klen + 1 + vlen);
    if (!entry) return rule(c, oom);
    memcpy(entry, key, klen);
    entry[klen] = '=';
    memcpy(entry + klen + 1, value, vlen);
    return rule(c, push_str(&p->env, &p->nenv, entry) ? NULL : oom);
}

/* {"host": "/p", "guest": "/w", "read_only": true} as a run_dir (the same
 * storage --dir uses): spec_copy holds "host\0guest\0". */
static bool one_dir(parse_ctx *c, json_t *d, cli_policy *p) {
    static const char *const names[] = {"host", "guest", "read_only", NULL};
    const char *host, *guest = NULL;
    if (!json_is_object(d)) return fail(c, "expected an object {\"host\", \"guest\", \"read_only\"}");
    if (!only_fields(c, d, names) || !member(c, d, "host", &host)) return false;
    if (!host[0]) return fail(c, "empty host path");
    if (json_object_get(d, "guest") && !member(c, d, "guest", &guest)) return false;
    if (guest && guest[0] != '/') return fail(c, "the guest path must be absolute");
    json_t *ro = json_object_get(d, "read_only");
    if (ro && !json_is_boolean(ro)) return fail(c, "read_only: expected true or false");
    size_t hlen = strlen(host), glen = guest ? strlen(guest) : 0;
    if (!room_for((void **)&p->dirs, p->ndirs, sizeof *p->dirs)) return rule(c, oom);
    char *spec = malloc(hlen + glen + 2);
    if (!spec) return rule(c, oom);
    memcpy(spec, host, hlen + 1);
    memcpy(spec + hlen + 1, guest ? guest : "", glen + 1);
    p->dirs[p->ndirs++] = (run_dir){spec, spec, guest ? spec + hlen + 1 : NULL,
                                    !ro || json_is_true(ro)}; /* zero trust: read-only by default */
    return true;
}

static bool dir_list(parse_ctx *c, json_t *v, cli_policy *p) {
    if (!json_is_array(v)) return fail(c, "expected an array of directory objects");
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = path_index(c, i);
        bool ok = one_dir(c, json_array_get(v, i), p);
        path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool top_field(parse_ctx *c, const char *key, json_t *v, void *target) {
    cli_policy *p = target;
    const char *s;
    if (!strcmp(key, "isolation")) {
        if (!get_string(c, v, &s)) return false;
        if (!strcmp(s, "native")) p->isolation = AL_ISOLATION_NATIVE;
        else if (!strcmp(s, "gvisor")) p->isolation = AL_ISOLATION_GVISOR;
        else return fail(c, "expected \"native\" or \"gvisor\"");
        p->has_isolation = true;
        return true;
    }
    if (!strcmp(key, "timeout_ms")) return get_uint(c, v, 1, MAX_DURATION_MS, &p->timeout_ms);
    if (!strcmp(key, "cpu_time_ms")) return get_uint(c, v, 1, MAX_DURATION_MS, &p->cpu_time_ms);
    /* the same bounds as --memory */
    if (!strcmp(key, "memory_bytes"))
        return get_uint(c, v, UINT64_C(65536), UINT64_C(4) << 30, &p->memory_bytes);
    if (!strcmp(key, "max_processes")) return get_uint(c, v, 1, 1000000, &p->max_processes);
    if (!strcmp(key, "max_open_files")) return get_uint(c, v, 1, 1048576, &p->max_open_files);
    if (!strcmp(key, "max_file_size")) return get_uint(c, v, 1, MAX_BYTES, &p->max_file_size);
    if (!strcmp(key, "tmpfs_bytes")) return get_uint(c, v, 1, MAX_BYTES, &p->tmpfs_bytes);
    if (!strcmp(key, "env")) return each_field(c, v, env_field, p);
    if (!strcmp(key, "dirs")) return dir_list(c, v, p);
    if (!strcmp(key, "cwd")) {
        if (!get_string(c, v, &s)) return false;
        if (s[0] != '/') return fail(c, "must be an absolute path inside the sandbox");
        p->cwd = strings_copy(&p->strings, s, strlen(s));
        return rule(c, p->cwd ? NULL : oom);
    }
    if (!strcmp(key, "egress")) return each_field(c, v, egress_field_fn, &p->egress);
    return unknown_field(c);
}

/* jansson's message may quote the offending bytes: keep it one printable line. */
static void printable(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

bool cli_policy_parse(const char *json, size_t len, cli_policy *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        printable(jerr.text);
        snprintf(err, errlen, "not JSON: line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
        return false;
    }
    parse_ctx c = {.err = err, .errlen = errlen};
    bool ok = json_is_object(root) ? each_field(&c, root, top_field, out)
                                   : fail(&c, "expected a JSON object");
    json_decref(root);
    if (!ok) cli_policy_free(out);
    return ok;
}

/* ---- the file ------------------------------------------------------------------------ */

/* Read at most CLI_POLICY_MAX_BYTES + 1 bytes (one more tells "too large"). */
static char *read_capped(int fd, size_t *len, char *err, size_t errlen) {
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap > CLI_POLICY_MAX_BYTES) break;
            cap = cap ? cap * 2 : 4096;
            if (cap > CLI_POLICY_MAX_BYTES + 1) cap = CLI_POLICY_MAX_BYTES + 1;
            char *grown = realloc(buf, cap);
            if (!grown) {
                snprintf(err, errlen, "%s", oom);
                free(buf);
                return NULL;
            }
            buf = grown;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "%s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    if (n > CLI_POLICY_MAX_BYTES) {
        snprintf(err, errlen, "larger than 1 MiB, the limit for a policy file");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

bool cli_policy_load(const char *path, cli_policy *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return false;
    }
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > CLI_POLICY_MAX_BYTES)
        snprintf(err, errlen, "larger than 1 MiB, the limit for a policy file");
    else
        buf = read_capped(fd, &len, err, errlen);
    close(fd);
    if (!buf) return false;
    bool ok = cli_policy_parse(buf, len, out, err, errlen);
    free(buf);
    return ok;
}
