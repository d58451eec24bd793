/*
 * manifest.c — Extism plugin manifests (JSON) for al_plugin: al_manifest_parse,
 * al_manifest_options, al_manifest_load_wasm, al_manifest_free.
 *
 * The format is Extism's (the extism-manifest crate's schema):
 *
 *   {"wasm": [{"data": "BASE64"} | {"path": "m.wasm"}
 *             | {"url": "https://...", "headers": {"K": "V"}, "method": "GET"},
 *             each with optional "hash" (SHA-256, hex) and "name"],
 *    "memory": {"max_pages": N, "max_http_response_bytes": N, "max_var_bytes": N},
 *    "config": {"K": "V"},
 *    "allowed_hosts": ["example.com", "*.example.com"],
 *    "allowed_paths": {"[ro:]HOST_PATH": "/guest/path"},
 *    "timeout_ms": N}
 *
 * Every field is optional; null is accepted wherever Extism's schema allows it
 * (its SDKs serialise an unset option as null) and means "not given".
 *
 * Invariants:
 *  - strict: an unknown field at any level, a wrong type, a negative, fractional
 *    or out-of-range number, a duplicate key (JSON_REJECT_DUPLICATES) or bytes
 *    that are not UTF-8 are errors naming the field ("manifest:
 *    memory.max_pages: ..."). A typo such as "alowed_hosts" must never turn
 *    into a silently different grant, and two parsers of one document must
 *    not disagree on which duplicate wins (policy smuggling);
 *  - "allowed_hosts" absent (or null) means no HTTP at all; present, HTTP to
 *    those names only ("*": any name, as in Extism; addresses are still
 *    checked by http_request). Each name is checked by the egress policy
 *    code, the same rules http_request enforces later;
 *  - Extism also accepts {"data": {"ptr", "len"}} (a raw host pointer): that is
 *    refused — a manifest must never make the host read its own memory;
 *  - strings with NUL bytes are refused by jansson (no JSON_ALLOW_NUL), so C
 *    never sees a shorter string than the one written; header names are HTTP
 *    tokens and values carry no CR/LF (header injection into the url fetch);
 *  - one wasm source at most: airlock links no module to another;
 *  - loading is bounded: a data source is checked against max_bytes, a path
 *    must be a regular file (a FIFO would block, /dev/zero never end) and is
 *    read up to max_bytes + 1 bytes and no further (it may grow), a url is streamed and the transfer aborted as soon as
 *    the body passes max_bytes; only http and https, also across redirects
 *    (no file://, no gopher:// through a Location header). The url is the
 *    manifest author's (the operator's), not a plugin's: it is fetched like
 *    curl would, the environment's proxy settings included, without the
 *    egress deny-list that guards http_request;
 *  - the manifest owns every string and array its options point to; one
 *    al_manifest_free releases all of it, on success and on every error path;
 *  - errors are values (al_error), never printed; messages are one line, and
 *    bytes of the document echoed in them have control characters replaced.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock.h"
#include "net.h"

#define DEFAULT_MAX_WASM_BYTES ((size_t)50 << 20)
#define MAX_WASM_PAGES 65536u       /* 4 GiB: all a wasm32 memory can address */
#define FETCH_CONNECT_TIMEOUT_MS 10000L
#define FETCH_TIMEOUT_MS 120000L
#define FETCH_MAX_REDIRECTS 5L

typedef enum source_kind { SRC_NONE = 0, SRC_DATA, SRC_PATH, SRC_URL } source_kind;

/* The one wasm source a manifest may name. */
typedef struct manifest_source {
    source_kind kind;
    uint8_t *data;            /* SRC_DATA: decoded bytes, owned */
    size_t data_len;
    char *path;               /* SRC_PATH: resolved against base_dir, owned */
    char *url;                /* SRC_URL, owned */
    char *method;             /* SRC_URL: NULL means GET, owned */
    char **headers;           /* SRC_URL: "Name: value" lines, owned */
    size_t nheaders;
    bool has_hash;
    uint8_t hash[32];         /* expected SHA-256 */
    char *name;               /* informational, owned */
} manifest_source;

struct al_manifest {
    al_plugin_options options; /* its arrays point at the ones below */
    manifest_source source;
    al_kv *config;             /* keys and values owned */
    size_t nconfig;
    char **hosts;              /* owned */
    size_t nhosts;
    al_dir_grant *dirs;        /* host_path and guest_path owned */
    size_t ndirs;
};

/* ---- errors -------------------------------------------------------------------- */

static void set_error(al_error *err, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(al_error *err, al_error_kind kind, const char *fmt, ...) {
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    al_error_vset(err, kind, fmt, ap);
    va_end(ap);
    /* Keys, URLs and jansson's "near '...'" come from the document: keep the
     * message one printable line whatever they hold. */
    for (char *c = err->message; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

/* A JSON path for messages: "memory.max_pages", "wasm[0].hash". Keys from the
 * document are cut short so the field name cannot crowd the reason out. */
typedef struct field_path {
    char text[96];
} field_path;

static field_path path_key(const char *parent, const char *key) {
    field_path p;
    if (parent && parent[0])
        snprintf(p.text, sizeof p.text, "%s.%.48s", parent, key);
    else
        snprintf(p.text, sizeof p.text, "%.48s", key);
    return p;
}

static bool nomem(al_error *err) {
    set_error(err, AL_ERR_NOMEM, "manifest: out of memory");
    return false;
}

/* ---- typed readers ------------------------------------------------------------------ */

/* Is v absent or null ("not given", as Extism's SDKs serialise None)? */
static bool is_unset(const json_t *v) {
    return v == NULL || json_is_null(v);
}

/* An integer min..max ("expected a non-negative integer" when unbounded). */
static bool read_u64(const json_t *v, const char *field, uint64_t min, uint64_t max,
                     uint64_t *out, al_error *err) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max) {
        if (min == 0 && max == UINT64_MAX)
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected a non-negative integer",
                      field);
        else
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected an integer %llu..%llu",
                      field, (unsigned long long)min, (unsigned long long)max);
        return false;
    }
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* A non-empty string, copied. */
static bool read_string(const json_t *v, const char *field, char **out, al_error *err) {
    if (!json_is_string(v)) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected a string", field);
        return false;
    }
    if (json_string_length(v) == 0) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: %s: must not be empty", field);
        return false;
    }
    *out = strdup(json_string_value(v));
    return *out ? true : nomem(err);
}

static bool check_object(const json_t *v, const char *field, al_error *err) {
    if (json_is_object(v)) return true;
    set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected an object", field);
    return false;
}

/* Refuse any key of obj not in allowed (NULL-terminated). */
static bool check_fields(const json_t *obj, const char *parent, const char *const *allowed,
                         al_error *err) {
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++) known = strcmp(key, allowed[i]) == 0;
        if (!known) {
            field_path p = path_key(parent, key);
            set_error(err, AL_ERR_ARGUMENT, "manifest: unknown field \"%s\"", p.text);
            return false;
        }
    }
    return true;
}

/* ---- base64 and hex ---------------------------------------------------------------- */

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Standard base64 with padding, canonical (as Rust's base64 STANDARD engine
 * that Extism uses): no whitespace, '=' only at the end, unused bits zero.
 * One spelling per byte string, so a hash over the text and one over the
 * bytes cannot be made to disagree. Returns 1, 0 (not base64) or -1 (no
 * memory). */
static int base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (n == 0 || n % 4 != 0) return 0;
    size_t pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    size_t len = n / 4 * 3 - pad;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        for (size_t k = 0; k < 4; k++) {
            if (last && k >= 4 - pad) {
                v[k] = 0; /* the padding checked above */
                continue;
            }
            v[k] = b64_value((unsigned char)s[i + k]);
            if (v[k] < 0) goto bad;
        }
        /* the bits a padded group does not use must be zero (canonical) */
        if (last && pad == 2 && (v[1] & 0x0f)) goto bad;
        if (last && pad == 1 && (v[2] & 0x03)) goto bad;
        uint32_t triple = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                          (uint32_t)v[3];
        buf[o++] = (uint8_t)(triple >> 16);
        if (o < len) buf[o++] = (uint8_t)(triple >> 8);
        if (o < len) buf[o++] = (uint8_t)triple;
    }
    *out = buf;
    *out_len = len;
    return 1;
bad:
    free(buf);
    return 0;
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool parse_sha256_hex(const char *s, size_t n, uint8_t out[32]) {
    if (n != 64) return false;
    for (size_t i = 0; i < 32; i++) {
        int hi = hex_value((unsigned char)s[2 * i]), lo = hex_value((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static void hex_encode(const uint8_t *in, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0x0f];
    }
    out[2 * n] = '\0';
}

/* ---- paths ---------------------------------------------------------------------------- */

/* path as is when absolute, else base_dir/path (NULL base: the current
 * directory, i.e. path as is). The host resolves ".." when it opens the file:
 * the manifest's author is the operator, not the plugin. */
static char *resolve_path(const char *base_dir, const char *path) {
    if (path[0] == '/' || !base_dir || !base_dir[0]) return strdup(path);
    size_t nb = strlen(base_dir), np = strlen(path);
    bool slash = base_dir[nb - 1] == '/';
    char *out = malloc(nb + np + 2);
    if (!out) return NULL;
    memcpy(out, base_dir, nb);
    size_t o = nb;
    if (!slash) out[o++] = '/';
    memcpy(out + o, path, np + 1);
    return out;
}

/* ---- the wasm source ------------------------------------------------------------------ */

static bool is_token_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!is_token_char((unsigned char)*s)) return false;
    return true;
}

/* A header value may hold tabs and visible bytes, never CR, LF or other
 * control bytes: they would forge extra header lines (request splitting). */
static bool is_header_value(const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
    }
    return true;
}

static bool read_headers(const json_t *v, manifest_source *src, al_error *err) {
    if (is_unset(v)) return true;
    if (!check_object(v, "wasm[0].headers", err)) return false;
    size_t n = json_object_size(v);
    src->headers = calloc(n ? n : 1, sizeof *src->headers);
    if (!src->headers) return nomem(err);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        field_path p = path_key("wasm[0].headers", key);
        if (!is_token(key)) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: the header name is not an HTTP token",
                      p.text);
            return false;
        }
        if (!json_is_string(value)) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected a string", p.text);
            return false;
        }
        if (!is_header_value(json_string_value(value))) {
            set_error(err, AL_ERR_ARGUMENT,
                      "manifest: %s: the header value contains CR, LF or another control "
                      "character", p.text);
            return false;
        }
        size_t len = strlen(key) + 2 + strlen(json_string_value(value)) + 1;
        char *line = malloc(len);
        if (!line) return nomem(err);
        snprintf(line, len, "%s: %s", key, json_string_value(value));
        src->headers[src->nheaders++] = line;
    }
    return true;
}

static bool read_url(const json_t *v, manifest_source *src, al_error *err) {
    if (!read_string(v, "wasm[0].url", &src->url, err)) return false;
    const char *u = src->url;
    if (strncasecmp(u, "http://", 7) != 0 && strncasecmp(u, "https://", 8) != 0) {
        set_error(err, AL_ERR_ARGUMENT,
                  "manifest: wasm[0].url: only http:// and https:// URLs are supported");
        return false;
    }
    for (const char *c = u; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
            set_error(err, AL_ERR_ARGUMENT,
                      "manifest: wasm[0].url: contains a space or a control character");
            return false;
        }
    return true;
}

static bool read_source(const json_t *w, const char *base_dir, manifest_source *src,
                        al_error *err) {
    static const char *const data_fields[] = {"data", "hash", "name", NULL};
    static const char *const path_fields[] = {"path", "hash", "name", NULL};
    static const char *const url_fields[] = {"url", "headers", "method", "hash", "name", NULL};
    if (!check_object(w, "wasm[0]", err)) return false;
    const json_t *data = json_object_get(w, "data"), *path = json_object_get(w, "path"),
                 *url = json_object_get(w, "url");
    int given = (data != NULL) + (path != NULL) + (url != NULL);
    if (given != 1) {
        set_error(err, AL_ERR_ARGUMENT, given == 0
                      ? "manifest: wasm[0]: expected one of \"data\", \"path\" or \"url\""
                      : "manifest: wasm[0]: give only one of \"data\", \"path\" and \"url\"");
        return false;
    }
    if (data) {
        src->kind = SRC_DATA;
        if (!check_fields(w, "wasm[0]", data_fields, err)) return false;
        if (!json_is_string(data)) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: wasm[0].data: expected a base64 string%s",
                      json_is_object(data) ? " (a host pointer is never accepted)" : "");
            return false;
        }
        if (json_string_length(data) == 0) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: wasm[0].data: must not be empty");
            return false;
        }
        int r = base64_decode(json_string_value(data), json_string_length(data), &src->data,
                              &src->data_len);
        if (r < 0) return nomem(err);
        if (r == 0) {
            set_error(err, AL_ERR_ARGUMENT,
                      "manifest: wasm[0].data: not canonical base64 (standard alphabet, "
                      "padded, no whitespace)");
            return false;
        }
    } else if (path) {
        src->kind = SRC_PATH;
        if (!check_fields(w, "wasm[0]", path_fields, err)) return false;
        char *raw;
        if (!read_string(path, "wasm[0].path", &raw, err)) return false;
        src->path = resolve_path(base_dir, raw);
        free(raw);
        if (!src->path) return nomem(err);
    } else {
        src->kind = SRC_URL;
        if (!check_fields(w, "wasm[0]", url_fields, err) || !read_url(url, src, err) ||
            !read_headers(json_object_get(w, "headers"), src, err))
            return false;
        const json_t *method = json_object_get(w, "method");
        if (!is_unset(method)) {
            if (!read_string(method, "wasm[0].method", &src->method, err)) return false;
            if (!is_token(src->method)) {
                set_error(err, AL_ERR_ARGUMENT,
                          "manifest: wasm[0].method: not an HTTP method token");
                return false;
            }
        }
    }
    const json_t *hash = json_object_get(w, "hash"), *name = json_object_get(w, "name");
    if (!is_unset(hash)) {
        if (!json_is_string(hash) ||
            !parse_sha256_hex(json_string_value(hash), json_string_length(hash), src->hash)) {
            set_error(err, AL_ERR_ARGUMENT,
                      "manifest: wasm[0].hash: expected a SHA-256 as 64 hex digits");
            return false;
        }
        src->has_hash = true;
    }
    if (!is_unset(name) && !read_string(name, "wasm[0].name", &src->name, err)) return false;
    return true;
}

static bool read_wasm(const json_t *v, const char *base_dir, al_manifest *m, al_error *err) {
    if (!json_is_array(v)) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: wasm: expected an array");
        return false;
    }
    size_t n = json_array_size(v);
    if (n == 0) return true; /* Extism's default: no module named here */
    if (n > 1) {
        set_error(err, AL_ERR_UNSUPPORTED,
                  "manifest: wasm: %zu modules given; airlock runs exactly one module per "
                  "plugin (no linking between modules)", n);
        return false;
    }
    return read_source(json_array_get(v, 0), base_dir, &m->source, err);
}

/* ---- the other fields -------------------------------------------------------------------- */

static bool read_memory(const json_t *v, al_manifest *m, al_error *err) {
    static const char *const fields[] = {"max_pages", "max_http_response_bytes",
                                         "max_var_bytes", NULL};
    if (is_unset(v)) return true;
    if (!check_object(v, "memory", err) || !check_fields(v, "memory", fields, err)) return false;
    const json_t *pages = json_object_get(v, "max_pages"),
                 *http = json_object_get(v, "max_http_response_bytes"),
                 *vars = json_object_get(v, "max_var_bytes");
    uint64_t n;
    if (!is_unset(pages)) {
        if (!read_u64(pages, "memory.max_pages", 1, MAX_WASM_PAGES, &n, err)) return false;
        m->options.max_pages = (uint32_t)n;
    }
    if (!is_unset(http)) {
        if (!read_u64(http, "memory.max_http_response_bytes", 0, UINT64_MAX, &n, err))
            return false;
        m->options.max_http_response_bytes = n;
    }
    if (!is_unset(vars)) {
        if (!read_u64(vars, "memory.max_var_bytes", 0, UINT64_MAX, &n, err)) return false;
        m->options.max_var_bytes = n;
    }
    return true;
}

static bool read_config(const json_t *v, al_manifest *m, al_error *err) {
    if (!check_object(v, "config", err)) return false;
    size_t n = json_object_size(v);
    m->config = calloc(n ? n : 1, sizeof *m->config);
    if (!m->config) return nomem(err);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        if (!json_is_string(value)) {
            field_path p = path_key("config", key);
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected a string", p.text);
            return false;
        }
        char *k = strdup(key), *val = strdup(json_string_value(value));
        if (!k || !val) {
            free(k);
            free(val);
            return nomem(err);
        }
        m->config[m->nconfig].key = k;
        m->config[m->nconfig].value = val;
        m->nconfig++;
    }
    return true;
}

/* Each name must be one the egress policy accepts ("example.com",
 * "*.example.com") or "*" alone (Extism's "any host": every address is still
 * checked against the deny-list): refused here, with its index, rather than
 * at the first request. */
static bool check_host_pattern(const char *host, size_t i, al_error *err) {
    if (strcmp(host, "*") == 0) return true;
    egress_policy p;
    egress_policy_init(&p);
    bool ok = egress_policy_allow_domain(&p, host);
    egress_policy_free(&p);
    if (ok) return true;
    set_error(err, AL_ERR_ARGUMENT,
              "manifest: allowed_hosts[%zu]: \"%.64s\" is not a domain name, a "
              "\"*.domain\" pattern or \"*\"", i, host);
    return false;
}

static bool read_hosts(const json_t *v, al_manifest *m, al_error *err) {
    if (is_unset(v)) return true; /* absent: no HTTP at all */
    if (!json_is_array(v)) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: allowed_hosts: expected an array of strings");
        return false;
    }
    size_t n = json_array_size(v);
    m->hosts = calloc(n ? n : 1, sizeof *m->hosts);
    if (!m->hosts) return nomem(err);
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(v, i);
        char field[40];
        snprintf(field, sizeof field, "allowed_hosts[%zu]", i);
        if (!read_string(h, field, &m->hosts[m->nhosts], err)) return false;
        m->nhosts++;
        if (!check_host_pattern(m->hosts[m->nhosts - 1], i, err)) return false;
    }
    m->options.allow_http = true;
    return true;
}

static bool read_paths(const json_t *v, const char *base_dir, al_manifest *m, al_error *err) {
    if (is_unset(v)) return true;
    if (!check_object(v, "allowed_paths", err)) return false;
    size_t n = json_object_size(v);
    m->dirs = calloc(n ? n : 1, sizeof *m->dirs);
    if (!m->dirs) return nomem(err);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        field_path p = path_key("allowed_paths", key);
        bool ro = strncmp(key, "ro:", 3) == 0;
        const char *host = ro ? key + 3 : key;
        if (!host[0]) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: allowed_paths: empty host path");
            return false;
        }
        if (!json_is_string(value)) {
            set_error(err, AL_ERR_ARGUMENT, "manifest: %s: expected a string", p.text);
            return false;
        }
        if (json_string_value(value)[0] != '/') {
            set_error(err, AL_ERR_ARGUMENT,
                      "manifest: %s: the guest path must be absolute", p.text);
            return false;
        }
        char *h = resolve_path(base_dir, host), *g = strdup(json_string_value(value));
        if (!h || !g) {
            free(h);
            free(g);
            return nomem(err);
        }
        m->dirs[m->ndirs].host_path = h;
        m->dirs[m->ndirs].guest_path = g;
        m->dirs[m->ndirs].read_only = ro;
        m->ndirs++;
    }
    return true;
}

/* ---- parse / free -------------------------------------------------------------------------- */

void al_manifest_free(al_manifest *m) {
    if (!m) return;
    manifest_source *s = &m->source;
    free(s->data);
    free(s->path);
    free(s->url);
    free(s->method);
    for (size_t i = 0; i < s->nheaders; i++) free(s->headers[i]);
    free(s->headers);
    free(s->name);
    for (size_t i = 0; i < m->nconfig; i++) {
        free((char *)m->config[i].key);
        free((char *)m->config[i].value);
    }
    free(m->config);
    for (size_t i = 0; i < m->nhosts; i++) free(m->hosts[i]);
    free(m->hosts);
    for (size_t i = 0; i < m->ndirs; i++) {
        free((char *)m->dirs[i].host_path);
        free((char *)m->dirs[i].guest_path);
    }
    free(m->dirs);
    free(m);
}

static bool read_root(const json_t *root, const char *base_dir, al_manifest *m,
                      al_error *err) {
    static const char *const fields[] = {"wasm", "memory", "config", "allowed_hosts",
                                         "allowed_paths", "timeout_ms", NULL};
    if (!json_is_object(root)) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: expected a JSON object");
        return false;
    }
    if (!check_fields(root, "", fields, err)) return false;
    const json_t *v;
    if ((v = json_object_get(root, "wasm")) && !read_wasm(v, base_dir, m, err)) return false;
    if (!read_memory(json_object_get(root, "memory"), m, err)) return false;
    if ((v = json_object_get(root, "config")) && !read_config(v, m, err)) return false;
    if (!read_hosts(json_object_get(root, "allowed_hosts"), m, err)) return false;
    if (!read_paths(json_object_get(root, "allowed_paths"), base_dir, m, err)) return false;
    v = json_object_get(root, "timeout_ms");
    if (!is_unset(v) && !read_u64(v, "timeout_ms", 0, UINT64_MAX, &m->options.timeout_ms, err))
        return false;
    m->options.config = m->config;
    m->options.nconfig = m->nconfig;
    m->options.allowed_hosts = (const char *const *)m->hosts;
    m->options.nallowed_hosts = m->nhosts;
    m->options.dirs = m->dirs;
    m->options.ndirs = m->ndirs;
    return true;
}

al_manifest *al_manifest_parse(const char *json, size_t len, const char *base_dir,
                               al_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!json && len) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: no document");
        return NULL;
    }
    al_manifest *m = calloc(1, sizeof *m);
    if (!m) {
        nomem(err);
        return NULL;
    }
    al_plugin_options_init(&m->options);
    json_error_t jerr;
    json_t *root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: line %d column %d: %s", jerr.line,
                  jerr.column, jerr.text);
        al_manifest_free(m);
        return NULL;
    }
    bool ok = read_root(root, base_dir, m, err);
    json_decref(root);
    if (!ok) {
        al_manifest_free(m);
        return NULL;
    }
    return m;
}

const al_plugin_options *al_manifest_options(const al_manifest *manifest) {
    return manifest ? &manifest->options : NULL;
}

/* ---- loading the module ------------------------------------------------------------------------ */

static bool load_file(const char *path, size_t max, uint8_t **out, size_t *out_len,
                      al_error *err) {
    /* O_NONBLOCK: opening a FIFO must not hang; it is then refused as not a
     * regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].path: %.160s: %s", path,
                  strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: wasm[0].path: %.160s: not a regular file",
                  path);
        close(fd);
        return false;
    }
    if ((uint64_t)st.st_size > max) {
        set_error(err, AL_ERR_LIMIT,
                  "manifest: wasm[0].path: %.120s: %lld bytes, more than the %zu allowed", path,
                  (long long)st.st_size, max);
        close(fd);
        return false;
    }
    /* The file may grow between fstat and read: read at most max + 1 bytes. */
    size_t cap = (size_t)st.st_size + 1, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return nomem(err);
    }
    for (;;) {
        if (len == cap) {
            if (cap > max) break;
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                close(fd);
                return nomem(err);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].path: %.160s: %s", path,
                      strerror(errno));
            free(buf);
            close(fd);
            return false;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    if (len > max) {
        set_error(err, AL_ERR_LIMIT, "manifest: wasm[0].path: %.160s: more than the %zu bytes "
                  "allowed", path, max);
        free(buf);
        return false;
    }
    *out = buf;
    *out_len = len;
    return true;
}

/* The body of a url fetch, capped: more than max bytes aborts the transfer
 * from inside the write callback, before the excess is stored. */
typedef struct fetch_body {
    uint8_t *data;
    size_t len, cap, max;
    bool too_big, nomem;
} fetch_body;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ctx) {
    fetch_body *b = ctx;
    size_t n = size * nmemb; /* libcurl: size is always 1 */
    if (n > b->max - b->len) {
        b->too_big = true;
        return 0; /* CURLE_WRITE_ERROR: the transfer stops here */
    }
    if (n > b->cap - b->len) {
        size_t ncap = b->cap ? b->cap : (b->max < 65536 ? b->max : 65536);
        while (ncap - b->len < n) ncap = ncap > b->max / 2 ? b->max : ncap * 2;
        uint8_t *nd = realloc(b->data, ncap ? ncap : 1);
        if (!nd) {
            b->nomem = true;
            return 0;
        }
        b->data = nd;
        b->cap = ncap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    return n;
}

static bool setup_fetch(CURL *h, const manifest_source *s, struct curl_slist **hdrs,
                        fetch_body *body, char *errbuf) {
    for (size_t i = 0; i < s->nheaders; i++) {
        struct curl_slist *n = curl_slist_append(*hdrs, s->headers[i]);
        if (!n) return false;
        *hdrs = n;
    }
    bool head = s->method && strcmp(s->method, "HEAD") == 0;
    bool ok =
        curl_easy_setopt(h, CURLOPT_URL, s->url) == CURLE_OK &&
        /* only http and https, on the first request and on every redirect */
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, FETCH_MAX_REDIRECTS) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, FETCH_CONNECT_TIMEOUT_MS) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS) == CURLE_OK &&
        /* refused before the body when the Content-Length already says too much */
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body->max) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_WRITEDATA, body) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_USERAGENT, "airlock") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs) == CURLE_OK;
    if (ok && head)
        ok = curl_easy_setopt(h, CURLOPT_NOBODY, 1L) == CURLE_OK;
    else if (ok && s->method && strcmp(s->method, "GET") != 0)
        ok = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, s->method) == CURLE_OK;
    return ok;
}

static bool load_url(const manifest_source *s, size_t max, uint8_t **out, size_t *out_len,
                     al_error *err) {
    CURL *h = curl_easy_init();
    if (!h) {
        set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].url: cannot start libcurl");
        return false;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    fetch_body body = {.max = max};
    bool ok = false;
    if (!setup_fetch(h, s, &hdrs, &body, errbuf)) {
        set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].url: cannot configure libcurl");
        goto done;
    }
    CURLcode rc = curl_easy_perform(h);
    if (body.nomem) {
        nomem(err);
    } else if (body.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
        set_error(err, AL_ERR_LIMIT,
                  "manifest: wasm[0].url: the module is larger than the %zu bytes allowed "
                  "(transfer aborted)", max);
    } else if (rc != CURLE_OK) {
        set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].url: %.60s: %.150s",
                  curl_easy_strerror(rc), errbuf[0] ? errbuf : "fetch failed");
    } else {
        ok = true;
    }
done:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    if (!ok) {
        free(body.data);
        return false;
    }
    *out = body.data ? body.data : malloc(1);
    if (!*out) return nomem(err);
    *out_len = body.len;
    return true;
}

static bool check_hash(const manifest_source *s, const uint8_t *wasm, size_t len,
                       al_error *err) {
    if (!s->has_hash) return true;
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(wasm, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
        set_error(err, AL_ERR_SYSTEM, "manifest: wasm[0].hash: SHA-256 failed (OpenSSL)");
        return false;
    }
    if (memcmp(md, s->hash, 32) == 0) return true;
    char got[65], want[65];
    hex_encode(md, 32, got);
    hex_encode(s->hash, 32, want);
    set_error(err, AL_ERR_ARGUMENT,
              "manifest: wasm[0].hash: SHA-256 mismatch: the module's is %s, the manifest "
              "says %s", got, want);
    return false;
}

bool al_manifest_load_wasm(const al_manifest *manifest, size_t max_bytes, uint8_t **wasm,
                           size_t *len, al_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!manifest || !wasm || !len) {
        set_error(err, AL_ERR_ARGUMENT, "manifest: al_manifest_load_wasm: NULL argument");
        return false;
    }
    *wasm = NULL;
    *len = 0;
    size_t max = max_bytes ? max_bytes : DEFAULT_MAX_WASM_BYTES;
    const manifest_source *s = &manifest->source;
    uint8_t *buf = NULL;
    size_t n = 0;
    switch (s->kind) {
    case SRC_NONE:
        set_error(err, AL_ERR_ARGUMENT, "manifest: the manifest names no wasm source");
        return false;
    case SRC_DATA:
        if (s->data_len > max) {
            set_error(err, AL_ERR_LIMIT,
                      "manifest: wasm[0].data: %zu bytes, more than the %zu allowed",
                      s->data_len, max);
            return false;
        }
        buf = malloc(s->data_len ? s->data_len : 1);
        if (!buf) return nomem(err);
        memcpy(buf, s->data, s->data_len);
        n = s->data_len;
        break;
    case SRC_PATH:
        if (!load_file(s->path, max, &buf, &n, err)) return false;
        break;
    case SRC_URL:
        if (!load_url(s, max, &buf, &n, err)) return false;
        break;
    }
    if (!check_hash(s, buf, n, err)) {
        free(buf);
        return false;
    }
    *wasm = buf;
    *len = n;
    return true;
}
