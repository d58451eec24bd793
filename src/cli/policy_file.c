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
 * The rules, the strict JSON reading and the "egress" object are airlockd's
 * too (src/service/policy_json.c): one implementation, one set of messages.
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
 *    or endless file (a FIFO, /dev/zero) cannot exhaust memory; within it,
 *    lists and strings are not bounded further (svc_egress_limits SIZE_MAX);
 *  - strings with NUL bytes are refused (C would see a shorter string than
 *    the one the author wrote), header values with CR, LF or other control
 *    bytes are refused (they would let a value forge extra header lines or a
 *    second request: request splitting);
 *  - everything the result points to is owned by it (strings pool, arrays)
 *    and freed by one _free, on success and on every error path;
 *  - messages are one line: bytes of the file echoed in them (keys, jansson's
 *    "near '...'") have control characters replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy_file.h"

/* The file's "egress": bounded by the file's size only; "log" is the user's. */
static const svc_egress_limits file_limits = {SIZE_MAX, SIZE_MAX, SIZE_MAX, true};

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
    if (why == svc_oom) {
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
    char *domain = svc_strings_copy(&tmp, v, (size_t)(c1 - v));
    char *name = svc_strings_copy(&tmp, c1 + 1, (size_t)(c2 - c1 - 1));
    const char *why = domain && name ? svc_egress_add_header(e, domain, name, c2 + 1) : svc_oom;
    svc_strings_free(&tmp);
    return why;
}

/* NAME:ADDRESS, split at the first ':' (a name has none; "[::1]" has several). */
static const char *resolve_flag(cli_egress *e, const char *v) {
    const char *colon = strchr(v, ':');
    if (!colon || colon == v || colon[1] == '\0')
        return "expected NAME:ADDRESS (an IPv6 address in brackets: NAME:[::1])";
    cli_strings tmp = {0};
    char *name = svc_strings_copy(&tmp, v, (size_t)(colon - v));
    const char *why = name ? svc_egress_add_host(e, name, colon + 1) : svc_oom;
    svc_strings_free(&tmp);
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
        else if (!(e->log_path = svc_strings_copy(&e->strings, v, strlen(v)))) return svc_oom;
        return NULL;
    }
    uint64_t n = 0, *slot = scalar_slot(e, k);
    if (*slot) {
        *twice = true;
        return NULL;
    }
    if (k == F_CONNECTIONS) {
        if (!cli_parse_count(v, &n, &why)) return why;
        if (n > SVC_EGRESS_MAX_CONNECTIONS) return "at most 65535";
    } else if (k == F_IDLE) {
        if (!cli_parse_duration_ms(v, &n, &why)) return why;
        if (n > SVC_EGRESS_MAX_IDLE_MS) return "at most 4294967295ms (49 days)";
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
    case F_ALLOW_DOMAIN: return svc_egress_add_domain(e, false, v);
    case F_DENY_DOMAIN: return svc_egress_add_domain(e, true, v);
    case F_ALLOW_PORT:
        if (!cli_parse_count(v, &port, &why)) return "not a port (1..65535)";
        return svc_egress_add_port(e, port);
    case F_ALLOW_IP: return svc_egress_add_ip(e, v);
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
        if (!svc_push_str(dst, ndst, src[i])) return false;
    return true;
}

/* Move the strings first, one at a time from the end, so each is owned by
 * exactly one pool at every step (an out-of-memory half way leaks nothing). */
static bool move_strings(cli_strings *dst, cli_strings *src) {
    while (src->n > 0) {
        if (!svc_strings_push(dst, src->items[src->n - 1])) return false;
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
        if (svc_egress_add_port(b, o->allow_ports[i])) return false;
    for (size_t i = 0; i < o->nheaders; i++) {
        if (!svc_grow((void **)&b->headers, b->nheaders, sizeof *b->headers)) return false;
        b->headers[b->nheaders++] = o->headers[i];
    }
    for (size_t i = 0; i < o->nhosts; i++) {
        if (!svc_grow((void **)&b->hosts, b->nhosts, sizeof *b->hosts)) return false;
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

void cli_egress_fill(const cli_egress *e, al_egress *out) { svc_egress_fill(e, out); }

void cli_egress_free(cli_egress *e) { svc_egress_free(e); }

void cli_policy_free(cli_policy *p) {
    svc_strings_free(&p->strings);
    free(p->env);
    for (size_t i = 0; i < p->ndirs; i++) free(p->dirs[i].spec_copy);
    free(p->dirs);
    cli_egress_free(&p->egress);
    memset(p, 0, sizeof *p);
}

/* ---- the JSON document ---------------------------------------------------------------- */

/* A string of the file: bounded by the file's size, not by a length here. */
static bool get_string(svc_json_ctx *c, json_t *v, const char **out) {
    return svc_json_string(c, v, SIZE_MAX, out, NULL);
}

/* "env": {"K": "V"} -> "K=V" entries. A '=' in K would move the split. */
static bool env_field(svc_json_ctx *c, const char *key, json_t *v, void *target) {
    cli_policy *p = target;
    const char *value;
    if (!get_string(c, v, &value)) return false;
    if (!key[0]) return svc_json_fail(c, "empty variable name");
    if (strchr(key, '=')) return svc_json_fail(c, "a variable name cannot contain '='");
    size_t klen = strlen(key), vlen = strlen(value);
    char *entry = svc_strings_alloc(&p->strings, klen + 1 + vlen);
    if (!entry) return svc_json_rule(c, svc_oom);
    memcpy(entry, key, klen);
    entry[klen] = '=';
    memcpy(entry + klen + 1, value, vlen);
    return svc_json_rule(c, svc_push_str(&p->env, &p->nenv, entry) ? NULL : svc_oom);
}

/* {"host": "/p", "guest": "/w", "read_only": true} as a run_dir (the same
 * storage --dir uses): spec_copy holds "host\0guest\0". */
static bool one_dir(svc_json_ctx *c, json_t *d, cli_policy *p) {
    static const char *const names[] = {"host", "guest", "read_only", NULL};
    const char *host, *guest = NULL;
    if (!json_is_object(d))
        return svc_json_fail(c, "expected an object {\"host\", \"guest\", \"read_only\"}");
    if (!svc_json_only_fields(c, d, names) || !svc_json_member(c, d, "host", SIZE_MAX, &host))
        return false;
    if (!host[0]) return svc_json_fail(c, "empty host path");
    if (json_object_get(d, "guest") && !svc_json_member(c, d, "guest", SIZE_MAX, &guest))
        return false;
    if (guest && guest[0] != '/') return svc_json_fail(c, "the guest path must be absolute");
    json_t *ro = json_object_get(d, "read_only");
    if (ro && !json_is_boolean(ro)) return svc_json_fail(c, "read_only: expected true or false");
    size_t hlen = strlen(host), glen = guest ? strlen(guest) : 0;
    if (!svc_grow((void **)&p->dirs, p->ndirs, sizeof *p->dirs)) return svc_json_rule(c, svc_oom);
    char *spec = malloc(hlen + glen + 2);
    if (!spec) return svc_json_rule(c, svc_oom);
    memcpy(spec, host, hlen + 1);
    memcpy(spec + hlen + 1, guest ? guest : "", glen + 1);
    p->dirs[p->ndirs++] = (run_dir){spec, spec, guest ? spec + hlen + 1 : NULL,
                                    !ro || json_is_true(ro)}; /* zero trust: read-only by default */
    return true;
}

static bool dir_list(svc_json_ctx *c, json_t *v, cli_policy *p) {
    if (!json_is_array(v)) return svc_json_fail(c, "expected an array of directory objects");
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t mark = svc_json_path_index(c, i);
        bool ok = one_dir(c, json_array_get(v, i), p);
        svc_json_path_reset(c, mark);
        if (!ok) return false;
    }
    return true;
}

static bool top_field(svc_json_ctx *c, const char *key, json_t *v, void *target) {
    cli_policy *p = target;
    const char *s;
    if (!strcmp(key, "isolation")) {
        if (!get_string(c, v, &s)) return false;
        if (!strcmp(s, "native")) p->isolation = AL_ISOLATION_NATIVE;
        else if (!strcmp(s, "gvisor")) p->isolation = AL_ISOLATION_GVISOR;
        else return svc_json_fail(c, "expected \"native\" or \"gvisor\"");
        p->has_isolation = true;
        return true;
    }
    if (!strcmp(key, "timeout_ms"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_DURATION_MS, &p->timeout_ms);
    if (!strcmp(key, "cpu_time_ms"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_DURATION_MS, &p->cpu_time_ms);
    /* the same bounds as --memory */
    if (!strcmp(key, "memory_bytes"))
        return svc_json_uint(c, v, UINT64_C(65536), UINT64_C(4) << 30, &p->memory_bytes);
    if (!strcmp(key, "max_processes")) return svc_json_uint(c, v, 1, 1000000, &p->max_processes);
    if (!strcmp(key, "max_open_files")) return svc_json_uint(c, v, 1, 1048576, &p->max_open_files);
    if (!strcmp(key, "max_file_size"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_BYTES, &p->max_file_size);
    if (!strcmp(key, "tmpfs_bytes"))
        return svc_json_uint(c, v, 1, SVC_JSON_MAX_BYTES, &p->tmpfs_bytes);
    if (!strcmp(key, "env")) return svc_json_each_field(c, v, env_field, p);
    if (!strcmp(key, "dirs")) return dir_list(c, v, p);
    if (!strcmp(key, "cwd")) {
        if (!get_string(c, v, &s)) return false;
        if (s[0] != '/') return svc_json_fail(c, "must be an absolute path inside the sandbox");
        p->cwd = svc_strings_copy(&p->strings, s, strlen(s));
        return svc_json_rule(c, p->cwd ? NULL : svc_oom);
    }
    if (!strcmp(key, "egress")) return svc_egress_parse(c, v, &file_limits, &p->egress);
    return svc_json_unknown_field(c);
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
    svc_json_ctx c = {.err = err, .errlen = errlen};
    bool ok = json_is_object(root) ? svc_json_each_field(&c, root, top_field, out)
                                   : svc_json_fail(&c, "expected a JSON object");
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
                snprintf(err, errlen, "%s", svc_oom);
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