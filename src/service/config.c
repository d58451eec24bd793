/*
 * config.c — airlockd's configuration (svc_config) from a YAML file, read
 * with libyaml's event API; token hashing (SHA-256) and hex.
 *
 * Invariants:
 *   - Every field has a safe default (svc_config_defaults); a file only
 *     overrides what it names. docs/daemon-config.md and dist/airlockd.yaml
 *     describe every key; the tables below are the single list of them.
 *   - Strict: an unknown key, a duplicate key, a value of the wrong YAML type
 *     (a quoted "10" where an integer is expected, 1.5 or -1 for a count,
 *     `yes` for a boolean), an out-of-range value, a second document, an
 *     anchor, alias or tag is an error naming FILE:LINE:COLUMN and the key's
 *     path ("limits.memory"), e.g.  airlockd.yaml:3:11: limits.memory: not
 *     a size: "abc". Nothing half-loaded is ever returned: the file is parsed
 *     into a private svc_config that replaces *c only on success.
 *   - The input is hostile-safe: at most CONFIG_MAX_BYTES, no aliases (so no
 *     "billion laughs"), the parser never skips or recurses into an unknown
 *     subtree (it stops at the first unexpected event), every list has a cap.
 *   - Paths in paths.allowed are canonicalised with realpath(3) at load time
 *     (they must exist and be directories), so a later symlink swap cannot
 *     widen a grant that was checked against the canonical path.
 *   - Bearer tokens are never stored: only their SHA-256 (tokens[].sha256).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yaml.h>

#include "service.h"

#define CONFIG_MAX_BYTES (1u << 20)

/* List caps: far above any sane configuration, low enough that a hostile
 * file cannot make the daemon allocate much. */
#define MAX_ALLOWED_PATHS 64
#define MAX_TOKENS 1024
#define MAX_PATTERNS 64
#define MAX_PATTERN_BYTES 1024
#define MAX_ORIGINS 64
#define MAX_ORIGIN_BYTES 255

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)
#define SECOND_MS UINT64_C(1000)
#define MINUTE_MS (60 * SECOND_MS)
#define HOUR_MS (60 * MINUTE_MS)
#define DAY_MS (24 * HOUR_MS)

/* ---- hashing ---------------------------------------------------------------------- */

void svc_token_hash(const char *token, uint8_t out[32]) {
    unsigned int n = 32;
    if (!EVP_Digest(token, strlen(token), out, &n, EVP_sha256(), NULL)) {
        /* libcrypto cannot fail here short of memory exhaustion; an all-ones
         * digest matches no configured token (a config hash is 64 hex of a
         * real digest, and this value is not one anyone can present). */
        memset(out, 0xff, 32);
    }
}

void svc_hex(const uint8_t *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---- defaults --------------------------------------------------------------------- */

/* dst = a + b when it fits in cap bytes (with the NUL); else dst = "". */
static bool join_into(char *dst, size_t cap, const char *a, const char *b) {
    int n = snprintf(dst, cap, "%s%s", a, b);
    if (n < 0 || (size_t)n >= cap) {
        dst[0] = '\0';
        return false;
    }
    return true;
}

/* The home directory: $HOME when absolute, else the password database. */
static bool home_dir(char *out, size_t cap) {
    const char *home = getenv("HOME");
    if (home && home[0] == '/') return join_into(out, cap, home, "");
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) != 0 || !res || !pw.pw_dir ||
        pw.pw_dir[0] != '/')
        return false;
    return join_into(out, cap, pw.pw_dir, "");
}

/* /var/lib/airlock as root, else $XDG_STATE_HOME/airlock, else
 * ~/.local/state/airlock; "" when none of these can be formed (the daemon
 * then refuses to start until paths.state_dir is set). */
static void default_state_dir(char *out, size_t cap) {
    if (geteuid() == 0) {
        join_into(out, cap, "/var/lib/airlock", "");
        return;
    }
    const char *xdg = getenv("XDG_STATE_HOME");
    if (xdg && xdg[0] == '/') {
        join_into(out, cap, xdg, "/airlock");
        return;
    }
    char home[SVC_PATH_MAX];
    if (home_dir(home, sizeof home)) join_into(out, cap, home, "/.local/state/airlock");
    else out[0] = '\0';
}

/* unix_socket and audit_db follow state_dir unless set explicitly. */
static bool derive_socket(svc_config *c) {
    return join_into(c->unix_socket, sizeof c->unix_socket, c->state_dir, "/airlockd.sock");
}
static bool derive_audit_db(svc_config *c) {
    return join_into(c->audit_db, sizeof c->audit_db, c->state_dir, "/audit.db");
}

void svc_config_defaults(svc_config *c) {
    memset(c, 0, sizeof *c);
    default_state_dir(c->state_dir, sizeof c->state_dir);
    if (c->state_dir[0]) {
        derive_socket(c);
        derive_audit_db(c);
    }
    join_into(c->tcp_host, sizeof c->tcp_host, "127.0.0.1", "");
    c->tcp_port = 7878;
    c->unix_requires_token = true;
    c->memory_bytes = 256 * MIB;
    c->fuel = UINT64_C(1000000000);
    c->timeout_ms = 30 * SECOND_MS;
    c->max_timeout_ms = 300 * SECOND_MS;
    c->output_bytes = (size_t)MIB;
    c->max_body_bytes = (size_t)(16 * MIB);
    c->allow_native = true;
    c->allow_gvisor = true;
    c->session_idle_s = 3600;
    c->max_sessions = 100;
    c->session_workspace_bytes = 64 * MIB;
    c->workers = 4;
    c->queue_max = 64;
    c->python_per_minute = 10;
    c->exec_per_minute = 60;
    c->redact_builtin = true;
    c->cap_max_blob_bytes = 10 * MIB;
    /* python_dir "": al_python_open(NULL) — $AIRLOCK_PYTHON_DIR, else
     * ../python beside the executable. */
}

static void free_strings(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

void svc_config_free(svc_config *c) {
    if (!c) return;
    free(c->allowed_paths);
    free(c->tokens);
    free_strings(c->redact_patterns, c->nredact_patterns);
    free_strings(c->allowed_origins, c->nallowed_origins);
    free_strings(c->cap_install, c->ncap_install);
    c->cap_install = NULL;
    c->ncap_install = 0;
    c->allowed_paths = NULL;
    c->nallowed_paths = 0;
    c->tokens = NULL;
    c->ntokens = 0;
    c->redact_patterns = NULL;
    c->nredact_patterns = 0;
    c->allowed_origins = NULL;
    c->nallowed_origins = 0;
}

/* A copy of n strings, or NULL (with *ok false) when out of memory. */
static char **copy_strings(char *const *v, size_t n, bool *ok) {
    if (n == 0) return NULL;
    char **out = calloc(n, sizeof *out);
    if (!out) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(out[i] = strdup(v[i]))) {
            free_strings(out, i);
            *ok = false;
            return NULL;
        }
    }
    return out;
}

static void *copy_array(const void *v, size_t n, size_t sz, bool *ok) {
    if (n == 0) return NULL;
    void *out = malloc(n * sz);
    if (!out) *ok = false;
    else memcpy(out, v, n * sz);
    return out;
}

bool svc_config_copy(svc_config *dst, const svc_config *src) {
    bool ok = true;
    *dst = *src;
    dst->allowed_paths = copy_array(src->allowed_paths, src->nallowed_paths,
                                    sizeof *src->allowed_paths, &ok);
    if (!dst->allowed_paths) dst->nallowed_paths = 0;
    dst->tokens = copy_array(src->tokens, src->ntokens, sizeof *src->tokens, &ok);
    if (!dst->tokens) dst->ntokens = 0;
    dst->redact_patterns = copy_strings(src->redact_patterns, src->nredact_patterns, &ok);
    if (!dst->redact_patterns) dst->nredact_patterns = 0;
    dst->allowed_origins = copy_strings(src->allowed_origins, src->nallowed_origins, &ok);
    if (!dst->allowed_origins) dst->nallowed_origins = 0;
    dst->cap_install = copy_strings(src->cap_install, src->ncap_install, &ok);
    if (!dst->cap_install) dst->ncap_install = 0;
    if (!ok) {
        svc_config_free(dst);
        svc_config_defaults(dst);
    }
    return ok;
}

/* ---- the parser's state and its errors -------------------------------------------- */

/* Keys whose position is remembered for checks made after the whole file. */
enum { T_NONE, T_UNIX_SOCKET, T_AUDIT_DB, T_STATE_DIR, T_TIMEOUT, T_MAX_TIMEOUT, T_COUNT };

typedef struct cfg_parser {
    yaml_parser_t yaml;
    yaml_event_t ev;              /* the current event, when have_ev */
    bool have_ev;
    const char *file;             /* for messages */
    const char *text;             /* the input, to place reader errors */
    size_t len;
    char *err;
    size_t errlen;
    svc_config *c;                /* being filled (private until success) */
    bool set[T_COUNT];            /* the file named this key ... */
    yaml_mark_t mark[T_COUNT];    /* ... at this position */
} cfg_parser;

/* "FILE:LINE:COL: WHERE: message" (WHERE omitted when NULL or ""). Returns false. */
static bool failf(cfg_parser *p, yaml_mark_t m, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool failf(cfg_parser *p, yaml_mark_t m, const char *where, const char *fmt, ...) {
    if (!p->err || p->errlen == 0) return false;
    bool named = where && where[0];
    int n = snprintf(p->err, p->errlen, "%s:%zu:%zu: %s%s", p->file, m.line + 1, m.column + 1,
                     named ? where : "", named ? ": " : "");
    if (n < 0 || (size_t)n >= p->errlen) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* A scalar's text for a message: quoted, escaped, at most ~60 bytes. */
static void quote_value(const char *s, size_t len, char *out, size_t cap) {
    size_t o = 0;
    if (cap < 8) {
        if (cap) out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i >= 60 || o + 8 >= cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

static const char *event_text(const cfg_parser *p) { return (const char *)p->ev.data.scalar.value; }
static size_t event_len(const cfg_parser *p) { return p->ev.data.scalar.length; }

/* The line and column of a byte offset (reader errors carry no mark). */
static yaml_mark_t mark_at(const cfg_parser *p, size_t offset) {
    yaml_mark_t m = {offset, 0, 0};
    for (size_t i = 0; i < offset && i < p->len; i++) {
        if (p->text[i] == '\n') {
            m.line++;
            m.column = 0;
        } else {
            m.column++;
        }
    }
    return m;
}

/* Fetch the next event; syntax errors and the YAML features the config does
 * not use (anchors, aliases, tags) are errors. */
static bool next_event(cfg_parser *p) {
    if (p->have_ev) yaml_event_delete(&p->ev);
    p->have_ev = false;
    if (!yaml_parser_parse(&p->yaml, &p->ev)) {
        const char *problem = p->yaml.problem ? p->yaml.problem : "malformed YAML";
        if (p->yaml.error == YAML_READER_ERROR) /* bad bytes: only an offset is known */
            return failf(p, mark_at(p, p->yaml.problem_offset), NULL, "syntax error: %s",
                         problem);
        if (p->yaml.context)
            return failf(p, p->yaml.problem_mark, NULL, "syntax error: %s %s", problem,
                         p->yaml.context);
        return failf(p, p->yaml.problem_mark, NULL, "syntax error: %s", problem);
    }
    p->have_ev = true;
    const yaml_event_t *e = &p->ev;
    const yaml_char_t *anchor = NULL, *tag = NULL;
    switch (e->type) {
    case YAML_ALIAS_EVENT:
        return failf(p, e->start_mark, NULL, "aliases (*name) are not supported");
    case YAML_SCALAR_EVENT:
        anchor = e->data.scalar.anchor;
        tag = e->data.scalar.tag;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = e->data.sequence_start.anchor;
        tag = e->data.sequence_start.tag;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = e->data.mapping_start.anchor;
        tag = e->data.mapping_start.tag;
        break;
    default:
        break;
    }
    if (anchor) return failf(p, e->start_mark, NULL, "anchors (&name) are not supported");
    if (tag) return failf(p, e->start_mark, NULL, "tags (!tag) are not supported");
    return true;
}

/* ---- scalar types (the YAML 1.2 core schema, for plain scalars) -------------------- */

typedef enum scalar_kind { S_NULL, S_BOOL, S_INT, S_FLOAT, S_STRING } scalar_kind;

static bool all_digits(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

static bool is_one_of(const char *s, size_t n, const char *const *words) {
    for (; *words; words++)
        if (strlen(*words) == n && memcmp(s, *words, n) == 0) return true;
    return false;
}

/* [-+]? ( . digits | digits [. digits*] ) ([eE] [-+]? digits)?  or .inf / .nan */
static bool looks_float(const char *s, size_t n) {
    static const char *const special[] = {".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF",
                                          "+.inf", "+.Inf", "+.INF", ".nan", ".NaN", ".NAN",
                                          NULL};
    if (is_one_of(s, n, special)) return true;
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) digits++;
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) digits++;
    }
    if (digits == 0) return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) i++;
        size_t exp = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) exp++;
        if (exp == 0) return false;
    }
    return i == n;
}

static scalar_kind classify(const yaml_event_t *e) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE", NULL};
    if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return S_STRING;
    const char *s = (const char *)e->data.scalar.value;
    size_t n = e->data.scalar.length;
    if (is_one_of(s, n, nulls)) return S_NULL;
    if (is_one_of(s, n, bools)) return S_BOOL;
    if (n > 0 && (s[0] == '-' || s[0] == '+') && all_digits(s + 1, n - 1)) return S_INT;
    if (all_digits(s, n)) return S_INT;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) return S_INT;
    if (looks_float(s, n)) return S_FLOAT;
    return S_STRING;
}

/* "a mapping", "an integer", ... for "expected X, got Y". */
static const char *describe(const yaml_event_t *e) {
    switch (e->type) {
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_SCALAR_EVENT: break;
    default: return "nothing";
    }
    switch (classify(e)) {
    case S_NULL: return "null";
    case S_BOOL: return "a boolean";
    case S_INT: return "an integer";
    case S_FLOAT: return "a float";
    case S_STRING: break;
    }
    return "a string";
}

static bool expected(cfg_parser *p, const char *where, const char *what) {
    return failf(p, p->ev.start_mark, where, "expected %s, got %s", what, describe(&p->ev));
}

/* The current event as a string (quoted, or a plain scalar that is not null,
 * a boolean or a number) without NUL or control bytes. */
static bool want_string(cfg_parser *p, const char *where, const char **s, size_t *len) {
    *s = "";
    *len = 0;
    if (p->ev.type != YAML_SCALAR_EVENT || classify(&p->ev) != S_STRING)
        return expected(p, where, "a string");
    *s = event_text(p);
    *len = event_len(p);
    for (size_t i = 0; i < *len; i++) {
        unsigned char ch = (unsigned char)(*s)[i];
        if (ch < 0x20 || ch == 0x7f)
            return failf(p, p->ev.start_mark, where, "control character 0x%02x in a string", ch);
    }
    return true;
}

/* A string into a fixed buffer (cap with the NUL). */
static bool want_string_into(cfg_parser *p, const char *where, char *dst, size_t cap) {
    const char *s;
    size_t n;
    if (!want_string(p, where, &s, &n)) return false;
    if (n >= cap)
        return failf(p, p->ev.start_mark, where, "too long (%zu bytes, at most %zu)", n, cap - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

/* ---- numbers, sizes, durations ---------------------------------------------------- */

/* Decimal digits (no sign, no leading zero but "0") into *v; false on overflow
 * or anything else. */
static bool decimal(const char *s, size_t n, uint64_t *v) {
    if (!all_digits(s, n) || (n > 1 && s[0] == '0')) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

/* Split "256MiB" into its number and its unit. */
static bool number_and_unit(const char *s, size_t n, uint64_t *v, const char **unit,
                            size_t *unit_len) {
    size_t d = 0;
    while (d < n && s[d] >= '0' && s[d] <= '9') d++;
    if (!decimal(s, d, v)) return false;
    *unit = s + d;
    *unit_len = n - d;
    return true;
}

static bool unit_is(const char *u, size_t n, const char *name) {
    return strlen(name) == n && strncasecmp(u, name, n) == 0;
}

/* Bytes: an integer, or a number with K, M, G or T (binary; "KiB" and "KB"
 * too, any case). */
static bool parse_size(const char *s, size_t n, uint64_t *out) {
    static const struct { const char *names[3]; uint64_t mult; } units[] = {
        {{"", "B", NULL}, 1},
        {{"K", "KB", "KiB"}, KIB},
        {{"M", "MB", "MiB"}, MIB},
        {{"G", "GB", "GiB"}, GIB},
        {{"T", "TB", "TiB"}, TIB},
    };
    uint64_t v;
    const char *u;
    size_t ul;
    if (!number_and_unit(s, n, &v, &u, &ul)) return false;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        for (size_t k = 0; k < 3 && units[i].names[k]; k++) {
            if (!unit_is(u, ul, units[i].names[k])) continue;
            if (v > UINT64_MAX / units[i].mult) return false;
            *out = v * units[i].mult;
            return true;
        }
    return false;
}

/* Milliseconds: a number with a unit — ms, s, m, h or d (lower case). A bare
 * number is refused: "30" could mean seconds or milliseconds. */
static bool parse_duration(const char *s, size_t n, uint64_t *out) {
    static const struct { const char *name; uint64_t ms; } units[] = {
        {"ms", 1}, {"s", SECOND_MS}, {"m", MINUTE_MS}, {"h", HOUR_MS}, {"d", DAY_MS},
    };
    uint64_t v;
    const char *u;
    size_t ul;
    if (!number_and_unit(s, n, &v, &u, &ul)) return false;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strlen(units[i].name) != ul || memcmp(u, units[i].name, ul) != 0) continue;
        if (v > UINT64_MAX / units[i].ms) return false;
        *out = v * units[i].ms;
        return true;
    }
    return false;
}

/* Human forms of range bounds for messages: "64K", "4G", "30s", "24h". */
static void size_text(uint64_t v, char *out, size_t cap) {
    static const char letters[] = "TGMK";
    static const uint64_t mults[] = {TIB, GIB, MIB, KIB};
    for (size_t i = 0; i < 4; i++)
        if (v >= mults[i] && v % mults[i] == 0) {
            snprintf(out, cap, "%llu%c", (unsigned long long)(v / mults[i]), letters[i]);
            return;
        }
    snprintf(out, cap, "%llu", (unsigned long long)v);
}

static void duration_text(uint64_t ms, char *out, size_t cap) {
    if (ms >= HOUR_MS && ms % HOUR_MS == 0)
        snprintf(out, cap, "%lluh", (unsigned long long)(ms / HOUR_MS));
    else if (ms >= MINUTE_MS && ms % MINUTE_MS == 0)
        snprintf(out, cap, "%llum", (unsigned long long)(ms / MINUTE_MS));
    else if (ms >= SECOND_MS && ms % SECOND_MS == 0)
        snprintf(out, cap, "%llus", (unsigned long long)(ms / SECOND_MS));
    else
        snprintf(out, cap, "%llums", (unsigned long long)ms);
}

/* ---- the schema -------------------------------------------------------------------- */

typedef enum field_kind {
    K_SECTION,   /* a nested mapping (sub) */
    K_BOOL,
    K_INT,       /* a plain decimal integer in [min, max] */
    K_SIZE,      /* bytes: integer or "256M" */
    K_MS,        /* duration, stored in milliseconds */
    K_SECONDS,   /* duration in whole seconds */
    K_CUSTOM,    /* fn parses (and consumes) the value */
} field_kind;

struct field;
typedef bool (*field_fn)(cfg_parser *p, const char *where, void *base);

typedef struct field {
    const char *key;
    field_kind kind;
    size_t offset, width;         /* where the value goes in base (K_BOOL..K_SECONDS) */
    uint64_t min, max;            /* inclusive range (K_INT..K_SECONDS) */
    field_fn fn;                  /* K_CUSTOM */
    const struct field *sub;      /* K_SECTION */
    size_t nsub;
    int track;                    /* T_*: remember the position */
} field;

/* Store v into an unsigned integer of width bytes at base+offset. */
static void store_uint(void *base, const field *f, uint64_t v) {
    unsigned char *dst = (unsigned char *)base + f->offset;
    if (f->width == 2) {
        uint16_t x = (uint16_t)v;
        memcpy(dst, &x, 2);
    } else if (f->width == 4) {
        uint32_t x = (uint32_t)v;
        memcpy(dst, &x, 4);
    } else {
        memcpy(dst, &v, 8);
    }
}

static bool range_error(cfg_parser *p, const char *where, const field *f, const char *quoted) {
    char lo[32], hi[32];
    if (f->kind == K_SIZE) {
        size_text(f->min, lo, sizeof lo);
        size_text(f->max, hi, sizeof hi);
    } else if (f->kind == K_MS || f->kind == K_SECONDS) {
        uint64_t mult = f->kind == K_SECONDS ? SECOND_MS : 1;
        duration_text(f->min * mult, lo, sizeof lo);
        duration_text(f->max * mult, hi, sizeof hi);
    } else {
        snprintf(lo, sizeof lo, "%llu", (unsigned long long)f->min);
        snprintf(hi, sizeof hi, "%llu", (unsigned long long)f->max);
    }
    return failf(p, p->ev.start_mark, where, "out of range: %s (%s to %s)", quoted, lo, hi);
}

static bool parse_int_field(cfg_parser *p, const char *where, const field *f, uint64_t *v,
                            const char *quoted) {
    if (p->ev.type != YAML_SCALAR_EVENT) return expected(p, where, "an integer");
    scalar_kind k = classify(&p->ev);
    const char *s = event_text(p);
    size_t n = event_len(p);
    if (k == S_FLOAT) return failf(p, p->ev.start_mark, where, "not an integer: %s", quoted);
    if (k != S_INT) return expected(p, where, "an integer");
    if (s[0] == '-') return failf(p, p->ev.start_mark, where, "must not be negative: %s", quoted);
    if (!decimal(s, n, v)) {
        if (all_digits(s, n) && !(n > 1 && s[0] == '0')) return range_error(p, where, f, quoted);
        return failf(p, p->ev.start_mark, where, "not a plain decimal integer: %s", quoted);
    }
    return true;
}

/* A size: an integer (bytes) or a string with a unit. */
static bool parse_size_field(cfg_parser *p, const char *where, uint64_t *v, const char *quoted) {
    if (p->ev.type != YAML_SCALAR_EVENT) return expected(p, where, "a size");
    scalar_kind k = classify(&p->ev);
    if (k != S_INT && k != S_STRING && k != S_FLOAT) return expected(p, where, "a size");
    if (event_len(p) > 0 && event_text(p)[0] == '-')
        return failf(p, p->ev.start_mark, where, "must not be negative: %s", quoted);
    if (!parse_size(event_text(p), event_len(p), v))
        return failf(p, p->ev.start_mark, where,
                     "not a size: %s (bytes, or a number with K, M, G or T: 256M)", quoted);
    return true;
}

static bool parse_duration_field(cfg_parser *p, const char *where, uint64_t *v,
                                 const char *quoted) {
    if (p->ev.type != YAML_SCALAR_EVENT) return expected(p, where, "a duration");
    scalar_kind k = classify(&p->ev);
    if (k != S_INT && k != S_STRING && k != S_FLOAT) return expected(p, where, "a duration");
    if (event_len(p) > 0 && event_text(p)[0] == '-')
        return failf(p, p->ev.start_mark, where, "must not be negative: %s", quoted);
    if (!parse_duration(event_text(p), event_len(p), v))
        return failf(p, p->ev.start_mark, where,
                     "not a duration: %s (a number with a unit: 500ms, 30s, 5m, 1h, 7d)", quoted);
    return true;
}

/* A K_INT, K_SIZE, K_MS or K_SECONDS value, range-checked and stored. */
static bool parse_number(cfg_parser *p, const char *where, const field *f, void *base) {
    char quoted[96];
    quote_value(p->ev.type == YAML_SCALAR_EVENT ? event_text(p) : "",
                p->ev.type == YAML_SCALAR_EVENT ? event_len(p) : 0, quoted, sizeof quoted);
    uint64_t v = 0;
    bool ok;
    if (f->kind == K_INT) ok = parse_int_field(p, where, f, &v, quoted);
    else if (f->kind == K_SIZE) ok = parse_size_field(p, where, &v, quoted);
    else ok = parse_duration_field(p, where, &v, quoted);
    if (!ok) return false;
    if (f->kind == K_SECONDS) {
        if (v % SECOND_MS != 0)
            return failf(p, p->ev.start_mark, where, "not a whole number of seconds: %s",
                         quoted);
        v /= SECOND_MS;
    }
    if (v < f->min || v > f->max) return range_error(p, where, f, quoted);
    store_uint(base, f, v);
    return true;
}

static bool parse_bool(cfg_parser *p, const char *where, const field *f, void *base) {
    if (p->ev.type != YAML_SCALAR_EVENT || classify(&p->ev) != S_BOOL)
        return expected(p, where, "true or false");
    bool v = event_text(p)[0] == 't' || event_text(p)[0] == 'T';
    memcpy((unsigned char *)base + f->offset, &v, sizeof v);
    return true;
}

static bool parse_mapping(cfg_parser *p, const char *where, const field *fields, size_t n,
                          void *base);

/* A section: a mapping, or null / nothing (then it keeps its defaults). */
static bool parse_section(cfg_parser *p, const char *where, const field *f, void *base) {
    if (p->ev.type == YAML_SCALAR_EVENT && classify(&p->ev) == S_NULL) return true;
    if (p->ev.type != YAML_MAPPING_START_EVENT) return expected(p, where, "a mapping");
    return parse_mapping(p, where, f->sub, f->nsub, base);
}

static bool parse_value(cfg_parser *p, const char *where, const field *f, void *base) {
    switch (f->kind) {
    case K_SECTION: return parse_section(p, where, f, base);
    case K_BOOL: return parse_bool(p, where, f, base);
    case K_INT:
    case K_SIZE:
    case K_MS:
    case K_SECONDS: return parse_number(p, where, f, base);
    case K_CUSTOM: return f->fn(p, where, base);
    }
    return false;
}

static void key_list(const field *fields, size_t n, char *out, size_t cap) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++) {
        int w = snprintf(out + o, cap - o, "%s%s", i ? ", " : "", fields[i].key);
        if (w < 0) break;
        o += (size_t)w;
    }
}

/* The mapping whose MAPPING_START is the current event, through its
 * MAPPING_END: every key must be in fields, at most once. */
static bool parse_mapping(cfg_parser *p, const char *where, const field *fields, size_t n,
                          void *base) {
    bool seen[32] = {false};
    if (n > sizeof seen / sizeof *seen) return false; /* a table bigger than the check */
    for (;;) {
        if (!next_event(p)) return false;
        if (p->ev.type == YAML_MAPPING_END_EVENT) return true;
        if (p->ev.type != YAML_SCALAR_EVENT || classify(&p->ev) == S_NULL)
            return failf(p, p->ev.start_mark, where, "a key must be a string, got %s",
                         describe(&p->ev));
        const char *key = event_text(p);
        size_t klen = event_len(p);
        yaml_mark_t key_mark = p->ev.start_mark;
        size_t i = 0;
        while (i < n && !(strlen(fields[i].key) == klen && memcmp(fields[i].key, key, klen) == 0))
            i++;
        char path[256], quoted[96];
        quote_value(key, klen, quoted, sizeof quoted);
        if (i == n) {
            char keys[400];
            key_list(fields, n, keys, sizeof keys);
            return failf(p, key_mark, where, "unknown key %s (expected one of: %s)", quoted, keys);
        }
        snprintf(path, sizeof path, "%.200s%s%.40s", where, where[0] ? "." : "", fields[i].key);
        if (seen[i]) return failf(p, key_mark, path, "duplicate key");
        seen[i] = true;
        if (!next_event(p)) return false;
        if (fields[i].track) {
            p->set[fields[i].track] = true;
            p->mark[fields[i].track] = p->ev.start_mark;
        }
        if (!parse_value(p, path, &fields[i], base)) return false;
    }
}

/* ---- lists -------------------------------------------------------------------------- */

/* Grow *v (elements of size sz) to hold n + 1; cap elements at most. One
 * realloc per item: the lists are short and parsed once. */
static bool grow(cfg_parser *p, const char *where, void **v, size_t n, size_t sz, size_t cap) {
    if (n >= cap) return failf(p, p->ev.start_mark, where, "too many entries (at most %zu)", cap);
    void *nv = realloc(*v, (n + 1) * sz);
    if (!nv) return failf(p, p->ev.start_mark, where, "out of memory");
    *v = nv;
    return true;
}

typedef bool (*item_fn)(cfg_parser *p, const char *where, void *base);

/* A list (or null: empty) whose items item() parses, one call per item with
 * the item's first event current. */
static bool parse_list(cfg_parser *p, const char *where, item_fn item, void *base) {
    if (p->ev.type == YAML_SCALAR_EVENT && classify(&p->ev) == S_NULL) return true;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) return expected(p, where, "a list");
    for (size_t i = 0;; i++) {
        if (!next_event(p)) return false;
        if (p->ev.type == YAML_SEQUENCE_END_EVENT) return true;
        char path[256];
        snprintf(path, sizeof path, "%.200s[%zu]", where, i);
        if (!item(p, path, base)) return false;
    }
}

/* ---- listen ------------------------------------------------------------------------- */

static bool absolute_path_into(cfg_parser *p, const char *where, char *dst, size_t cap,
                               bool empty_ok) {
    if (!want_string_into(p, where, dst, cap)) return false;
    if (dst[0] == '\0' && empty_ok) return true;
    char quoted[96];
    quote_value(dst, strlen(dst), quoted, sizeof quoted);
    if (dst[0] != '/')
        return failf(p, p->ev.start_mark, where, "not an absolute path: %s", quoted);
    return true;
}

static bool parse_unix_socket(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->unix_socket, sizeof c->unix_socket, true);
}

/* An IPv4 or IPv6 literal, "localhost", or "" (no TCP listener). */
static bool parse_tcp_host(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    if (!want_string_into(p, where, c->tcp_host, sizeof c->tcp_host)) return false;
    unsigned char addr[16];
    if (c->tcp_host[0] == '\0' || strcmp(c->tcp_host, "localhost") == 0 ||
        inet_pton(AF_INET, c->tcp_host, addr) == 1 || inet_pton(AF_INET6, c->tcp_host, addr) == 1)
        return true;
    char quoted[96];
    quote_value(c->tcp_host, strlen(c->tcp_host), quoted, sizeof quoted);
    return failf(p, p->ev.start_mark, where,
                 "not an IP address: %s (an IPv4 or IPv6 literal, \"localhost\", or \"\")",
                 quoted);
}

/* ---- paths -------------------------------------------------------------------------- */

/* "[ro:|rw:]/absolute/dir": canonicalised, must exist and be a directory. */
static bool parse_allowed_item(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    const char *s;
    size_t n;
    if (!want_string(p, where, &s, &n)) return false;
    char raw[PATH_MAX], quoted[96];
    bool ro = false;
    if (n >= 3 && (memcmp(s, "ro:", 3) == 0 || memcmp(s, "rw:", 3) == 0)) {
        ro = s[1] == 'o';
        s += 3;
        n -= 3;
    }
    quote_value(s, n, quoted, sizeof quoted);
    if (n >= sizeof raw) return failf(p, p->ev.start_mark, where, "path too long");
    memcpy(raw, s, n);
    raw[n] = '\0';
    if (raw[0] != '/')
        return failf(p, p->ev.start_mark, where,
                     "not an absolute path: %s (\"/dir\", \"ro:/dir\" or \"rw:/dir\")", quoted);
    char canon[PATH_MAX];
    struct stat st;
    if (!realpath(raw, canon))
        return failf(p, p->ev.start_mark, where, "%s: %s", quoted, strerror(errno));
    if (stat(canon, &st) != 0 || !S_ISDIR(st.st_mode))
        return failf(p, p->ev.start_mark, where, "%s: not a directory", quoted);
    if (strlen(canon) >= SVC_PATH_MAX)
        return failf(p, p->ev.start_mark, where, "%s: canonical path longer than %d bytes",
                     quoted, SVC_PATH_MAX - 1);
    void *v = c->allowed_paths;
    if (!grow(p, where, &v, c->nallowed_paths, sizeof *c->allowed_paths, MAX_ALLOWED_PATHS))
        return false;
    c->allowed_paths = v;
    svc_path_grant *g = &c->allowed_paths[c->nallowed_paths++];
    memset(g, 0, sizeof *g);
    memcpy(g->path, canon, strlen(canon) + 1);
    g->read_only = ro;
    return true;
}

static bool parse_allowed(cfg_parser *p, const char *where, void *base) {
    return parse_list(p, where, parse_allowed_item, base);
}

static bool parse_state_dir(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->state_dir, sizeof c->state_dir, false);
}

static bool parse_audit_db(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->audit_db, sizeof c->audit_db, false);
}

static bool parse_python_dir(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->python_dir, sizeof c->python_dir, true);
}

/* ---- tokens ------------------------------------------------------------------------- */

static bool token_name_ok(const char *s) {
    if (!s[0]) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

static bool parse_token_name(cfg_parser *p, const char *where, void *base) {
    svc_token *t = base;
    if (!want_string_into(p, where, t->name, sizeof t->name)) return false;
    if (token_name_ok(t->name)) return true;
    char quoted[96];
    quote_value(t->name, strlen(t->name), quoted, sizeof quoted);
    return failf(p, p->ev.start_mark, where,
                 "not a token name: %s (letters, digits, '.', '_', '-')", quoted);
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool parse_token_sha256(cfg_parser *p, const char *where, void *base) {
    svc_token *t = base;
    const char *s;
    size_t n;
    if (!want_string(p, where, &s, &n)) return false;
    char quoted[96];
    quote_value(s, n, quoted, sizeof quoted);
    bool ok = n == 64;
    for (size_t i = 0; ok && i < 32; i++) {
        int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0) ok = false;
        else t->sha256[i] = (uint8_t)(hi << 4 | lo);
    }
    if (!ok)
        return failf(p, p->ev.start_mark, where,
                     "not a SHA-256: %s (64 hex digits; `airlockd hash-token` prints it)", quoted);
    return true;
}

#define TOKEN_FIELD(k, m, lo, hi) \
    {k, K_INT, offsetof(svc_token, m), sizeof(((svc_token *)0)->m), lo, hi, NULL, NULL, 0, 0}
static const field token_fields[] = {
    {"name", K_CUSTOM, 0, 0, 0, 0, parse_token_name, NULL, 0, 0},
    {"sha256", K_CUSTOM, 0, 0, 0, 0, parse_token_sha256, NULL, 0, 0},
    TOKEN_FIELD("python_per_minute", python_per_minute, 0, 1000000),
    TOKEN_FIELD("exec_per_minute", exec_per_minute, 0, 1000000),
};

static const uint8_t zero_hash[32];

static bool parse_token_item(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    svc_token t;
    memset(&t, 0, sizeof t);
    yaml_mark_t start = p->ev.start_mark;
    if (p->ev.type != YAML_MAPPING_START_EVENT)
        return expected(p, where, "a mapping (name, sha256, ...)");
    if (!parse_mapping(p, where, token_fields, sizeof token_fields / sizeof *token_fields, &t))
        return false;
    if (!t.name[0]) return failf(p, start, where, "missing name");
    /* All-zero is no digest anyone can find a token for; it marks "unset". */
    if (memcmp(t.sha256, zero_hash, 32) == 0) return failf(p, start, where, "missing sha256");
    for (size_t i = 0; i < c->ntokens; i++) {
        if (strcmp(c->tokens[i].name, t.name) == 0)
            return failf(p, start, where, "duplicate token name \"%s\" (also tokens[%zu])",
                         t.name, i);
        if (memcmp(c->tokens[i].sha256, t.sha256, 32) == 0)
            return failf(p, start, where, "the same sha256 as tokens[%zu]", i);
    }
    void *v = c->tokens;
    if (!grow(p, where, &v, c->ntokens, sizeof *c->tokens, MAX_TOKENS)) return false;
    c->tokens = v;
    c->tokens[c->ntokens++] = t;
    return true;
}

static bool parse_tokens(cfg_parser *p, const char *where, void *base) {
    return parse_list(p, where, parse_token_item, base);
}

/* ---- string lists: redaction patterns, MCP origins ------------------------------------ */

static bool push_string(cfg_parser *p, const char *where, char ***v, size_t *n, size_t cap,
                        const char *s, size_t len) {
    void *vv = *v;
    if (!grow(p, where, &vv, *n, sizeof **v, cap)) return false;
    *v = vv;
    char *copy = strndup(s, len);
    if (!copy) return failf(p, p->ev.start_mark, where, "out of memory");
    (*v)[(*n)++] = copy;
    return true;
}

/* A POSIX extended regex, checked by redact.c, so the config accepts
 * exactly what the redactor can use. NUL-free (a quoted "\0"
 * would cut it short) and at most MAX_PATTERN_BYTES; tabs are allowed. */
static bool parse_pattern_item(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    if (p->ev.type != YAML_SCALAR_EVENT || classify(&p->ev) != S_STRING)
        return expected(p, where, "a string (quote regexes: '[0-9]+')");
    const char *s = event_text(p);
    size_t n = event_len(p);
    if (n == 0) return failf(p, p->ev.start_mark, where, "empty pattern");
    if (n > MAX_PATTERN_BYTES)
        return failf(p, p->ev.start_mark, where, "too long (%zu bytes, at most %d)", n,
                     MAX_PATTERN_BYTES);
    if (memchr(s, '\0', n)) return failf(p, p->ev.start_mark, where, "NUL byte in the pattern");
    char why[256];
    if (!svc_redact_pattern_check(s, why, sizeof why))
        return failf(p, p->ev.start_mark, where, "%s", why);
    return push_string(p, where, &c->redact_patterns, &c->nredact_patterns, MAX_PATTERNS, s, n);
}

static bool parse_patterns(cfg_parser *p, const char *where, void *base) {
    return parse_list(p, where, parse_pattern_item, base);
}

/* An Origin header value: "null" or scheme "://" host [":" port], nothing else
 * (no path, no trailing slash: browsers never send one). */
static bool origin_ok(const char *s) {
    if (strcmp(s, "null") == 0) return true;
    const char *rest;
    if (strncmp(s, "http://", 7) == 0) rest = s + 7;
    else if (strncmp(s, "https://", 8) == 0) rest = s + 8;
    else return false;
    if (!*rest) return false;
    for (; *rest; rest++)
        if (!((*rest >= 'a' && *rest <= 'z') || (*rest >= 'A' && *rest <= 'Z') ||
              (*rest >= '0' && *rest <= '9') || strchr(".-:[]_", *rest)))
            return false;
    return true;
}

static bool parse_origin_item(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    const char *s;
    size_t n;
    if (!want_string(p, where, &s, &n)) return false;
    char buf[MAX_ORIGIN_BYTES + 1], quoted[96];
    quote_value(s, n, quoted, sizeof quoted);
    if (n > MAX_ORIGIN_BYTES) return failf(p, p->ev.start_mark, where, "too long: %s", quoted);
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!origin_ok(buf))
        return failf(p, p->ev.start_mark, where,
                     "not an origin: %s (scheme://host[:port], e.g. \"http://localhost:6274\")",
                     quoted);
    return push_string(p, where, &c->allowed_origins, &c->nallowed_origins, MAX_ORIGINS, s, n);
}

static bool parse_origins(cfg_parser *p, const char *where, void *base) {
    return parse_list(p, where, parse_origin_item, base);
}

/* ---- capabilities ------------------------------------------------------------------ */

static bool parse_cap_dir(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->cap_dir, sizeof c->cap_dir, true);
}

static bool parse_cap_cache(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->cap_cache, sizeof c->cap_cache, true);
}

static bool parse_cap_outbox(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    return absolute_path_into(p, where, c->cap_outbox, sizeof c->cap_outbox, true);
}

/* http:// or https:// and a host: the registry client refuses anything else. */
static bool parse_cap_registry(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    if (!want_string_into(p, where, c->cap_registry, sizeof c->cap_registry)) return false;
    const char *r = c->cap_registry;
    if (!r[0]) return true;
    const char *rest = !strncmp(r, "http://", 7) ? r + 7 : !strncmp(r, "https://", 8) ? r + 8 : NULL;
    char quoted[96];
    quote_value(r, strlen(r), quoted, sizeof quoted);
    if (!rest || !*rest || strpbrk(r, " \t\r\n"))
        return failf(p, p->ev.start_mark, where,
                     "not a registry URL: %s (http://host:port or https://host)", quoted);
    return true;
}

static bool parse_cap_install_item(cfg_parser *p, const char *where, void *base) {
    svc_config *c = base;
    const char *s;
    size_t n;
    if (!want_string(p, where, &s, &n)) return false;
    char quoted[96];
    quote_value(s, n, quoted, sizeof quoted);
    if (n < 16 || n > 300 || strncmp(s, "urn:airlock:cap:", 16) || memchr(s, '\0', n))
        return failf(p, p->ev.start_mark, where,
                     "not a capability URN: %s (urn:airlock:cap:NAME:VERSION)", quoted);
    return push_string(p, where, &c->cap_install, &c->ncap_install, MAX_ORIGINS, s, n);
}

static bool parse_cap_install(cfg_parser *p, const char *where, void *base) {
    return parse_list(p, where, parse_cap_install_item, base);
}

/* ---- the tables ------------------------------------------------------------------------ */

#define CFG(m) offsetof(svc_config, m), sizeof(((svc_config *)0)->m)
#define NUM(k, kind, m, lo, hi, t) {k, kind, CFG(m), lo, hi, NULL, NULL, 0, t}
#define FLAG(k, m) {k, K_BOOL, CFG(m), 0, 0, NULL, NULL, 0, 0}
#define CUSTOM(k, fn, t) {k, K_CUSTOM, 0, 0, 0, 0, fn, NULL, 0, t}
#define SECTION(k, sub) {k, K_SECTION, 0, 0, 0, 0, NULL, sub, sizeof sub / sizeof *sub, 0}

static const field listen_fields[] = {
    CUSTOM("unix_socket", parse_unix_socket, T_UNIX_SOCKET),
    CUSTOM("tcp_host", parse_tcp_host, 0),
    NUM("tcp_port", K_INT, tcp_port, 1, 65535, 0),
    FLAG("unix_requires_token", unix_requires_token),
};

static const field limits_fields[] = {
    NUM("memory", K_SIZE, memory_bytes, 64 * KIB, 4 * GIB, 0),
    NUM("fuel", K_INT, fuel, 1, UINT64_C(1000000000000000), 0),
    NUM("timeout", K_MS, timeout_ms, 1, DAY_MS, T_TIMEOUT),
    NUM("max_timeout", K_MS, max_timeout_ms, 1, DAY_MS, T_MAX_TIMEOUT),
    NUM("output", K_SIZE, output_bytes, KIB, 256 * MIB, 0),
    NUM("max_body", K_SIZE, max_body_bytes, KIB, GIB, 0),
};

static const field paths_fields[] = {
    CUSTOM("allowed", parse_allowed, 0),
    CUSTOM("state_dir", parse_state_dir, T_STATE_DIR),
    CUSTOM("audit_db", parse_audit_db, T_AUDIT_DB),
    CUSTOM("python_dir", parse_python_dir, 0),
};

static const field backends_fields[] = {
    FLAG("native", allow_native),
    FLAG("gvisor", allow_gvisor),
};

static const field sessions_fields[] = {
    NUM("idle_timeout", K_SECONDS, session_idle_s, 1, 30 * 24 * 3600, 0),
    NUM("max", K_INT, max_sessions, 1, 10000, 0),
    NUM("workspace_bytes", K_SIZE, session_workspace_bytes, MIB, TIB, 0),
};

static const field workers_fields[] = {
    NUM("count", K_INT, workers, 1, 256, 0),
    NUM("queue", K_INT, queue_max, 0, 100000, 0),
};

static const field rate_fields[] = {
    NUM("python_per_minute", K_INT, python_per_minute, 1, 1000000, 0),
    NUM("exec_per_minute", K_INT, exec_per_minute, 1, 1000000, 0),
};

static const field redaction_fields[] = {
    FLAG("builtin", redact_builtin),
    CUSTOM("patterns", parse_patterns, 0),
};

static const field mcp_fields[] = {
    CUSTOM("allowed_origins", parse_origins, 0),
};

static const field audit_fields[] = {
    NUM("retention", K_MS, audit_retention_ms, 0, 3650 * DAY_MS, 0),
};

static const field capabilities_fields[] = {
    CUSTOM("dir", parse_cap_dir, 0),
    CUSTOM("registry", parse_cap_registry, 0),
    CUSTOM("install", parse_cap_install, 0),
    NUM("max_blob", K_SIZE, cap_max_blob_bytes, KIB, GIB, 0),
    CUSTOM("outbox", parse_cap_outbox, 0),
    CUSTOM("cache", parse_cap_cache, 0),
};

static const field top_fields[] = {
    SECTION("listen", listen_fields),       SECTION("limits", limits_fields),
    SECTION("paths", paths_fields),         SECTION("backends", backends_fields),
    SECTION("sessions", sessions_fields),   SECTION("workers", workers_fields),
    SECTION("rate_limits", rate_fields),    CUSTOM("tokens", parse_tokens, 0),
    SECTION("redaction", redaction_fields), SECTION("mcp", mcp_fields),
    SECTION("capabilities", capabilities_fields), SECTION("audit", audit_fields),
};

/* ---- the document ---------------------------------------------------------------------- */

/* Checks across keys, and paths that follow state_dir unless set. */
static bool finish(cfg_parser *p) {
    svc_config *c = p->c;
    if (c->timeout_ms > c->max_timeout_ms) {
        int t = p->set[T_MAX_TIMEOUT] ? T_MAX_TIMEOUT : T_TIMEOUT;
        char a[32], b[32];
        duration_text(c->timeout_ms, a, sizeof a);
        duration_text(c->max_timeout_ms, b, sizeof b);
        return failf(p, p->mark[t], t == T_TIMEOUT ? "limits.timeout" : "limits.max_timeout",
                     "limits.timeout (%s) is above limits.max_timeout (%s)", a, b);
    }
    if (c->ncap_install && !c->cap_registry[0])
        return failf(p, p->ev.start_mark, "capabilities.install",
                     "capabilities.install needs capabilities.registry");
    if (p->set[T_STATE_DIR] && !p->set[T_UNIX_SOCKET] && !derive_socket(c))
        return failf(p, p->mark[T_STATE_DIR], "paths.state_dir",
                     "too long for the default listen.unix_socket (<state_dir>/airlockd.sock "
                     "must fit in %zu bytes): set listen.unix_socket",
                     sizeof c->unix_socket - 1);
    if (p->set[T_STATE_DIR] && !p->set[T_AUDIT_DB] && !derive_audit_db(c))
        return failf(p, p->mark[T_STATE_DIR], "paths.state_dir",
                     "too long for the default paths.audit_db: set paths.audit_db");
    return true;
}

/* The stream: nothing (an empty or comment-only file: all defaults) or one
 * document whose root is a mapping. */
static bool parse_stream(cfg_parser *p) {
    if (!next_event(p)) return false;
    if (p->ev.type != YAML_STREAM_START_EVENT) return failf(p, p->ev.start_mark, NULL, "no YAML");
    if (!next_event(p)) return false;
    if (p->ev.type == YAML_STREAM_END_EVENT) return finish(p);
    if (!next_event(p)) return false; /* past DOCUMENT_START */
    if (p->ev.type == YAML_SCALAR_EVENT && classify(&p->ev) == S_NULL) {
        /* an empty document ("---" alone) */
    } else if (p->ev.type != YAML_MAPPING_START_EVENT) {
        return failf(p, p->ev.start_mark, NULL, "the configuration must be a mapping, got %s",
                     describe(&p->ev));
    } else if (!parse_mapping(p, "", top_fields, sizeof top_fields / sizeof *top_fields, p->c)) {
        return false;
    }
    if (!next_event(p)) return false; /* DOCUMENT_END */
    if (!next_event(p)) return false;
    if (p->ev.type != YAML_STREAM_END_EVENT)
        return failf(p, p->ev.start_mark, NULL, "only one YAML document is allowed");
    return finish(p);
}

static bool load_named(const char *name, const char *yaml, size_t len, svc_config *c, char *err,
                       size_t errlen) {
    svc_config fresh;
    svc_config_defaults(&fresh);
    cfg_parser p;
    memset(&p, 0, sizeof p);
    p.file = name;
    p.text = yaml;
    p.len = len;
    p.err = err;
    p.errlen = errlen;
    p.c = &fresh;
    bool ok;
    if (len > CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %u bytes", name, CONFIG_MAX_BYTES);
        ok = false;
    } else if (!yaml_parser_initialize(&p.yaml)) {
        snprintf(err, errlen, "%s: out of memory", name);
        ok = false;
    } else {
        yaml_parser_set_input_string(&p.yaml, (const unsigned char *)yaml, len);
        yaml_parser_set_encoding(&p.yaml, YAML_UTF8_ENCODING);
        ok = parse_stream(&p);
        if (p.have_ev) yaml_event_delete(&p.ev);
        yaml_parser_delete(&p.yaml);
    }
    if (!ok) {
        svc_config_free(&fresh);
        svc_config_defaults(c);
        return false;
    }
    *c = fresh;
    return true;
}

bool svc_config_load_buffer(const char *yaml, size_t len, svc_config *c, char *err,
                            size_t errlen) {
    return load_named("<config>", yaml, len, c, err, errlen);
}

/* The whole file, at most CONFIG_MAX_BYTES; must be a regular file. */
static char *read_config_file(const char *path, size_t *len, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
    } else if (st.st_size > (off_t)CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %u bytes", path, CONFIG_MAX_BYTES);
    } else if (!(buf = malloc(CONFIG_MAX_BYTES + 1))) {
        snprintf(err, errlen, "%s: out of memory", path);
    } else {
        size_t n = 0;
        for (;;) { /* read to EOF: the file may have grown since fstat */
            ssize_t r = read(fd, buf + n, CONFIG_MAX_BYTES + 1 - n);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                free(buf);
                buf = NULL;
                break;
            }
            if (r == 0) break;
            n += (size_t)r;
            if (n > CONFIG_MAX_BYTES) {
                snprintf(err, errlen, "%s: larger than %u bytes", path, CONFIG_MAX_BYTES);
                free(buf);
                buf = NULL;
                break;
            }
        }
        *len = n;
    }
    close(fd);
    return buf;
}

bool svc_config_load(const char *path, svc_config *c, char *err, size_t errlen) {
    size_t len = 0;
    char *yaml = read_config_file(path, &len, err, errlen);
    if (!yaml) {
        svc_config_defaults(c);
        return false;
    }
    bool ok = load_named(path, yaml, len, c, err, errlen);
    free(yaml);
    return ok;
}
