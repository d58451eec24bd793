/*
 * policy_json.h — what `airlock exec --policy FILE` (src/cli/policy_file.c)
 * and airlockd's request bodies (request.c) share, so that a policy means
 * the same thing, and is refused with the same words, whichever door it
 * comes in by:
 *
 *   - svc_strings: a pool of owned allocations, freed together;
 *   - svc_egress_rules: egress rules as both collect them, each rule checked
 *     syntactically as it is added (the CLI's flags add them one by one);
 *   - svc_json_*: strict reading of a jansson value with the JSON path of
 *     the value in every message (`egress.allow_ports[1]: expected an
 *     integer 1..65535`, `unknown field "egress.foo"`);
 *   - svc_egress_parse: the "egress" object of both formats;
 *   - svc_utf8_sequence: the UTF-8 decoding behind the result JSON of both
 *     (`airlock exec --json` and the API), so they agree byte for byte.
 *
 * Ownership: a svc_egress_rules owns every string (its pool) and array it
 * points to; svc_egress_free releases all of it. Rules and pools grow one
 * element at a time through svc_grow (capacity implicit: n rounded up to a
 * power of two).
 *
 * The CLI includes this header by its path (policy_file.h, json_out.c), so
 * its files need no -Isrc/service: the CLI sees airlock.h and its own
 * headers only, this one being the exception.
 */
#ifndef AIRLOCK_SVC_POLICY_JSON_H
#define AIRLOCK_SVC_POLICY_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "airlock.h"

/* Byte counts beyond 2^53 are not exact in most JSON producers (doubles):
 * such a value is a rounding accident, not a limit anyone chose. */
#define SVC_JSON_MAX_BYTES (UINT64_C(1) << 53)
/* Durations in milliseconds: as the CLI's --timeout, ~31 years. */
#define SVC_JSON_MAX_DURATION_MS UINT64_C(1000000000000)
/* The egress scalars' ceilings: al_egress.max_connections is a count of
 * sockets, idle_timeout_ms is 32-bit. */
#define SVC_EGRESS_MAX_CONNECTIONS 65535
#define SVC_EGRESS_MAX_IDLE_MS UINT64_C(4294967295)

/* "out of memory": the reason the functions below give when allocation
 * fails, compared by address (svc_json_rule prints it without a path). */
extern const char svc_oom[];

/* ---- owned storage ------------------------------------------------------------------ */

typedef struct svc_strings {
    char **items;
    size_t n;
} svc_strings;

/* Make room for element n of *items (elements of size bytes), growing when n
 * is 0 or a power of two. false when out of memory (*items unchanged). */
bool svc_grow(void **items, size_t n, size_t size);
/* Take owned (malloc'd) into the pool; false when out of memory (owned is
 * then still the caller's). */
bool svc_strings_push(svc_strings *s, char *owned);
/* A zeroed buffer of len + 1 bytes owned by the pool; NULL when out of memory. */
char *svc_strings_alloc(svc_strings *s, size_t len);
/* A NUL-terminated copy of text[0..len) owned by the pool. */
char *svc_strings_copy(svc_strings *s, const char *text, size_t len);
void svc_strings_free(svc_strings *s);
/* Append s (not copied) to a growing list. */
bool svc_push_str(const char ***list, size_t *n, const char *s);

/* ---- egress rules ------------------------------------------------------------------- */

/* Scalars are 0 (or NULL) when not given, so al_policy_init's defaults stay.
 * max_connections <= 65535 and idle_timeout_ms <= UINT32_MAX when parsed. */
typedef struct svc_egress_rules {
    svc_strings strings;                 /* owns every string below */
    const char **allow_domains;
    size_t nallow_domains;
    const char **deny_domains;
    size_t ndeny_domains;
    uint16_t *allow_ports;
    size_t nallow_ports;
    const char **allow_ips;
    size_t nallow_ips;
    al_header_grant *headers;
    size_t nheaders;
    al_host_entry *hosts;                /* addresses without brackets */
    size_t nhosts;
    uint64_t max_connections;
    uint64_t max_bytes_per_connection;
    uint64_t max_bytes;
    uint64_t idle_timeout_ms;
    const char *log_path;
} svc_egress_rules;

/* Add one rule after its syntactic check. Each returns NULL, or why the
 * value is refused (svc_oom when out of memory). The checks: a domain is
 * letters, digits, '-' and dots (a rule may start with "*."), an IP rule is
 * ADDRESS[/PREFIX], a header has an HTTP-token name and a value without
 * control bytes (request splitting), a host maps a plain domain to an IPv4
 * or (bracketed) IPv6 address. The library checks every rule again. */
const char *svc_egress_add_domain(svc_egress_rules *e, bool deny, const char *s);
const char *svc_egress_add_port(svc_egress_rules *e, uint64_t port);
const char *svc_egress_add_ip(svc_egress_rules *e, const char *s);
const char *svc_egress_add_header(svc_egress_rules *e, const char *domain, const char *name,
                                  const char *value);
const char *svc_egress_add_host(svc_egress_rules *e, const char *name, const char *address);
/* Point out at e's rules (borrowed) and set the scalars e gives. */
void svc_egress_fill(const svc_egress_rules *e, al_egress *out);
void svc_egress_free(svc_egress_rules *e);

/* ---- strict JSON reading ------------------------------------------------------------ */

/* Where the reader is and where its message goes. Messages are one line:
 * control bytes and quotes of keys become '?' in the path. */
typedef struct svc_json_ctx {
    char *err;
    size_t errlen;
    char path[192];       /* the JSON path of the value being read, e.g. egress.headers[0] */
    size_t pathlen;
} svc_json_ctx;

/* Append ".key" or "[i]" to the path (truncating, never overflowing);
 * each returns the mark svc_json_path_reset restores. */
size_t svc_json_path_key(svc_json_ctx *c, const char *key);
size_t svc_json_path_index(svc_json_ctx *c, size_t i);
void svc_json_path_reset(svc_json_ctx *c, size_t mark);

/* "PATH: message" into err (just the message at the top); always false,
 * for `return svc_json_fail(...)`. */
bool svc_json_fail(svc_json_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `unknown field "PATH"`; always false. */
bool svc_json_unknown_field(svc_json_ctx *c);
/* A check's answer (NULL: fine) as an error at the path; svc_oom is
 * "out of memory" without one. */
bool svc_json_rule(svc_json_ctx *c, const char *why);

/* An integer min..max ("expected an integer MIN..MAX"). */
bool svc_json_uint(svc_json_ctx *c, json_t *v, uint64_t min, uint64_t max, uint64_t *out);
/* A string without NUL bytes (C would see only its first part) of at most
 * max bytes (SIZE_MAX: any); borrowed from v. len may be NULL. */
bool svc_json_string(svc_json_ctx *c, json_t *v, size_t max, const char **out, size_t *len);
/* An array of at most max entries ("expected an array of WHAT"). */
bool svc_json_array(svc_json_ctx *c, json_t *v, size_t max, const char *what);
/* A required string member of obj (svc_json_string at PATH.key). */
bool svc_json_member(svc_json_ctx *c, json_t *obj, const char *key, size_t max,
                     const char **out);
/* Every key of obj is one of the NULL-terminated names, else unknown field. */
bool svc_json_only_fields(svc_json_ctx *c, json_t *obj, const char *const *names);

/* Call field(c, key, value, target) for each member of obj, with the path
 * at the member ("expected an object" when obj is none). Stops at the
 * first false. */
typedef bool (*svc_json_field_fn)(svc_json_ctx *c, const char *key, json_t *v, void *target);
bool svc_json_each_field(svc_json_ctx *c, json_t *obj, svc_json_field_fn field, void *target);

/* ---- the "egress" object ------------------------------------------------------------- */

/* What a format allows beyond the rules' syntax: SIZE_MAX for no bound. */
typedef struct svc_egress_limits {
    size_t max_entries;       /* per list and for "hosts" */
    size_t max_string;        /* rules, header domains and names, host addresses, log */
    size_t max_header_value;
    bool allow_log;           /* "log": a file the caller's process writes */
} svc_egress_limits;

/* {"allow_domains": [..], "deny_domains": [..], "allow_ports": [..],
 *  "allow_ips": [..], "headers": [{"domain", "name", "value"}],
 *  "hosts": {"name": "address"}, "max_connections": N,
 *  "max_bytes_per_connection": N, "max_bytes": N, "idle_timeout_ms": N,
 *  "log": "path" (only with allow_log)} added to e. false + err on the first
 * problem (e then holds what was added before it, for svc_egress_free). */
bool svc_egress_parse(svc_json_ctx *c, json_t *v, const svc_egress_limits *limits,
                      svc_egress_rules *e);

/* ---- UTF-8 -------------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (1..4; avail >= 1 bytes
 * there), or 0 when ill-formed; *bad is then the length of the maximal
 * ill-formed subpart (at least 1), which the JSON writers replace by one
 * U+FFFD (the WHATWG/Unicode "best practice"). */
size_t svc_utf8_sequence(const uint8_t *s, size_t avail, size_t *bad);

#endif
