/*
 * redact.c — output auditing: secrets in a sandbox's stdout/stderr are
 * replaced by "[REDACTED:<kind>]" before a result leaves the daemon.
 *
 * Built-in detectors (kinds), each a hand-written scanner over raw bytes:
 *   private_key     "-----BEGIN <...>PRIVATE KEY[ BLOCK]-----" through the
 *                   matching "-----END ...-----" line, or to the end of the
 *                   data when there is none (a key cut off by the output cap
 *                   is still a key);
 *   aws_access_key  AKIA / ASIA + 16 upper-case letters or digits, not inside
 *                   a longer alphanumeric word;
 *   aws_secret_key  the 40-character value of an assignment to
 *                   aws_secret_access_key / secret_access_key /
 *                   SecretAccessKey / aws_secret_key (any case; "=" or ":",
 *                   optional quotes and blanks);
 *   bearer_token    the token after "Bearer " (any case), at least 8 RFC 6750
 *                   token characters; "Bearer " itself is kept;
 *   github_token    ghp_/gho_/ghu_/ghs_/ghr_ + 36 or more alphanumerics,
 *                   github_pat_ + 22 or more [A-Za-z0-9_];
 *   api_key         "sk-" + 20 or more [A-Za-z0-9_-] (OpenAI / Anthropic
 *                   style keys), not preceded by a word character.
 * Configured patterns are POSIX extended regexes (REG_EXTENDED|REG_NEWLINE)
 * matched against each line separately: a match never spans a newline, ^ and
 * $ match at the start and end of every line. They run with REG_STARTEND, so
 * NUL bytes inside a line are searched like any other byte. Their kind is
 * "pattern:N", N the pattern's 0-based index in the configuration.
 *
 * Invariants:
 *   - The redactor is immutable after creation: svc_redact may run on many
 *     threads at once (regexec on a shared regex_t is thread-safe in glibc).
 *   - Overlapping matches are merged into one replacement (the kind of the
 *     earliest-starting match is shown; every kind involved is reported).
 *   - Bounded work: every scanner advances at least one byte per step; an
 *     empty regex match is skipped, never replaced; at most MAX_SPANS matches
 *     are kept — past that, everything from the first unkept match to the end
 *     is redacted as one "[REDACTED:too_many_matches]"; the output grows by at
 *     most MAX_GROWTH bytes — past that, the rest of the data from the match
 *     that would overflow is redacted as one. Failing closed: when memory runs
 *     out, the whole data is replaced.
 *   - Nothing to redact leaves *data and *len untouched (same bytes, same
 *     buffer).
 */
#include <ctype.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "service.h"

#define MAX_SPANS (1u << 17)
#define MAX_GROWTH ((size_t)1 << 20)
#define REGEX_FLAGS (REG_EXTENDED | REG_NEWLINE)

struct svc_redactor {
    bool builtin;
    size_t n;
    regex_t *res;
    char (*kinds)[32];            /* "pattern:N" */
};

/* ---- patterns ------------------------------------------------------------------- */

/* Compile pattern into *re; false + err when it is not a usable regex
 * (syntax, or it matches the empty string and would match everywhere). */
static bool compile(const char *pattern, regex_t *re, char *err, size_t errlen) {
    int rc = regcomp(re, pattern, REGEX_FLAGS);
    if (rc != 0) {
        char why[160];
        regerror(rc, re, why, sizeof why);
        snprintf(err, errlen, "not a POSIX extended regex: %s", why);
        return false;
    }
    if (regexec(re, "", 0, NULL, 0) == 0) {
        regfree(re);
        snprintf(err, errlen, "matches the empty string");
        return false;
    }
    return true;
}

bool svc_redact_pattern_check(const char *pattern, char *err, size_t errlen) {
    regex_t re;
    if (!compile(pattern, &re, err, errlen)) return false;
    regfree(&re);
    return true;
}

void svc_redactor_free(svc_redactor *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) regfree(&r->res[i]);
    free(r->res);
    free(r->kinds);
    free(r);
}

svc_redactor *svc_redactor_new(bool builtin, char *const *patterns, size_t n, char *err,
                               size_t errlen) {
    svc_redactor *r = calloc(1, sizeof *r);
    if (!r || (n && (!(r->res = calloc(n, sizeof *r->res)) ||
                     !(r->kinds = calloc(n, sizeof *r->kinds))))) {
        snprintf(err, errlen, "out of memory");
        svc_redactor_free(r);
        return NULL;
    }
    r->builtin = builtin;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        if (!compile(patterns[i], &r->res[i], why, sizeof why)) {
            snprintf(err, errlen, "pattern %zu: %s", i, why);
            svc_redactor_free(r);
            return NULL;
        }
        r->n = i + 1;
        snprintf(r->kinds[i], sizeof r->kinds[i], "pattern:%zu", i);
    }
    return r;
}

/* ---- matches ---------------------------------------------------------------------- */

typedef struct span {
    size_t start, end;            /* [start, end), end > start */
    const char *kind;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
    size_t clip;                  /* redact [clip, len) whole; SIZE_MAX: no */
    const char *clip_kind;
} spans;

/* Record a match. When the list is full (or memory runs out) the data from
 * this match on is redacted whole instead; false tells the scanner to stop. */
static bool add_span(spans *s, size_t start, size_t end, const char *kind) {
    if (s->n == s->cap) {
        size_t want = s->cap ? 2 * s->cap : 16;
        span *v = s->n < MAX_SPANS ? realloc(s->v, want * sizeof *v) : NULL;
        if (!v) {
            if (start < s->clip) {
                s->clip = start;
                s->clip_kind = "too_many_matches";
            }
            return false;
        }
        s->v = v;
        s->cap = want;
    }
    s->v[s->n++] = (span){start, end, kind};
    return true;
}

static bool is_alnum(uint8_t ch) { return isalnum(ch) && ch < 0x80; }
static bool is_upper_alnum(uint8_t ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}
static bool is_word(uint8_t ch) { return is_alnum(ch) || ch == '_'; }

/* RFC 6750 b64token characters (without the trailing '='s). */
static bool is_token68(uint8_t ch) { return is_alnum(ch) || (ch && strchr("-._~+/", ch)); }
static bool is_base64(uint8_t ch) { return is_alnum(ch) || ch == '/' || ch == '+'; }

static size_t run_of(const uint8_t *d, size_t len, size_t pos, bool (*ok)(uint8_t)) {
    size_t i = pos;
    while (i < len && ok(d[i])) i++;
    return i - pos;
}

/* First occurrence of needle at or after from, ignoring ASCII case; len if none. */
static size_t find_ci(const uint8_t *d, size_t len, size_t from, const char *needle) {
    size_t m = strlen(needle);
    if (m == 0 || len < m) return len;
    uint8_t lo = (uint8_t)tolower((unsigned char)needle[0]);
    uint8_t up = (uint8_t)toupper((unsigned char)needle[0]);
    for (size_t i = from; i + m <= len; i++) {
        if (d[i] != lo && d[i] != up) continue;
        if (strncasecmp((const char *)d + i, needle, m) == 0) return i;
    }
    return len;
}

/* First occurrence of a literal at or after from; len if none. */
static size_t find(const uint8_t *d, size_t len, size_t from, const char *lit) {
    if (from >= len) return len;
    const uint8_t *p = memmem(d + from, len - from, lit, strlen(lit));
    return p ? (size_t)(p - d) : len;
}

/* ---- private keys -------------------------------------------------------------------- */

static bool is_label_char(uint8_t ch) { return is_upper_alnum(ch) || ch == ' '; }

static bool ends_with(const uint8_t *s, size_t n, const char *suffix) {
    size_t m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* After "-----BEGIN " or "-----END " at pos: the label and its closing
 * "-----". *after is past the closing dashes (or past the label when they
 * are missing). True when the label names a private key. */
static bool pem_label(const uint8_t *d, size_t len, size_t pos, size_t *after) {
    size_t n = run_of(d, len, pos, is_label_char);
    if (n > 64) n = 64;
    *after = pos + n;
    bool closed = *after + 5 <= len && memcmp(d + *after, "-----", 5) == 0;
    if (closed) *after += 5;
    return closed &&
           (ends_with(d + pos, n, "PRIVATE KEY") || ends_with(d + pos, n, "PRIVATE KEY BLOCK"));
}

/* The next private-key block at or after from: true with its start and end
 * (past its END line's closing dashes; len, and *unterminated set, when its
 * END has not arrived); false when there is none. One scanner for redaction
 * and for svc_redact_open_block, so a block the stream holds back is exactly
 * one the redaction would cover. */
static bool next_private_key(const uint8_t *d, size_t len, size_t from, size_t *start,
                             size_t *end, bool *unterminated) {
    for (size_t pos = from; (pos = find(d, len, pos, "-----BEGIN ")) < len; pos++) {
        size_t label_end;
        if (!pem_label(d, len, pos + 11, &label_end)) continue;
        *start = pos;
        *end = find(d, len, label_end, "-----END ");
        *unterminated = *end >= len;
        if (!*unterminated) pem_label(d, len, *end + 9, end);
        return true;
    }
    return false;
}

static void find_private_keys(const uint8_t *d, size_t len, spans *s) {
    size_t start, end;
    bool unterminated;
    for (size_t pos = 0; next_private_key(d, len, pos, &start, &end, &unterminated); pos = end)
        if (!add_span(s, start, end, "private_key")) return;
}

size_t svc_redact_open_block(const uint8_t *d, size_t len) {
    size_t start, end;
    bool unterminated;
    for (size_t pos = 0; next_private_key(d, len, pos, &start, &end, &unterminated); pos = end)
        if (unterminated) return start; /* still open: its END has not arrived yet */
    return len;
}

/* ---- AWS ----------------------------------------------------------------------------- */

static void find_aws_access_keys(const uint8_t *d, size_t len, spans *s) {
    static const char *const prefixes[] = {"AKIA", "ASIA"};
    for (size_t k = 0; k < 2; k++)
        for (size_t pos = 0; (pos = find(d, len, pos, prefixes[k])) < len; pos++) {
            if (pos > 0 && is_alnum(d[pos - 1])) continue;
            if (run_of(d, len, pos + 4, is_upper_alnum) != 16) continue;
            if (!add_span(s, pos, pos + 20, "aws_access_key")) return;
        }
}

static bool is_blank(uint8_t ch) { return ch == ' ' || ch == '\t'; }

/* After a secret-key keyword at pos: [quote] blanks ("=" | ":" | "=>") blanks
 * [quote] VALUE(40 base64 chars). The value's start, or len. */
static size_t secret_value_at(const uint8_t *d, size_t len, size_t pos) {
    size_t i = pos;
    if (i < len && (d[i] == '"' || d[i] == '\'')) i++;
    i += run_of(d, len, i, is_blank);
    if (i >= len || (d[i] != '=' && d[i] != ':')) return len;
    i++;
    if (i < len && d[i] == '>') i++;
    i += run_of(d, len, i, is_blank);
    if (i < len && (d[i] == '"' || d[i] == '\'')) i++;
    return run_of(d, len, i, is_base64) == 40 && !(i + 40 < len && d[i + 40] == '=') ? i : len;
}

static void find_aws_secret_keys(const uint8_t *d, size_t len, spans *s) {
    static const char *const keywords[] = {"secret_access_key", "secretaccesskey",
                                           "aws_secret_key"};
    for (size_t k = 0; k < 3; k++) {
        size_t m = strlen(keywords[k]);
        for (size_t pos = 0; (pos = find_ci(d, len, pos, keywords[k])) < len; pos++) {
            size_t v = secret_value_at(d, len, pos + m);
            if (v == len) continue;
            if (!add_span(s, v, v + 40, "aws_secret_key")) return;
        }
    }
}

/* ---- bearer tokens, GitHub tokens, sk- keys --------------------------------------------- */

static void find_bearer_tokens(const uint8_t *d, size_t len, spans *s) {
    for (size_t pos = 0; (pos = find_ci(d, len, pos, "bearer")) < len; pos++) {
        if (pos > 0 && is_word(d[pos - 1])) continue;
        size_t blanks = run_of(d, len, pos + 6, is_blank);
        if (blanks == 0) continue;
        size_t t = pos + 6 + blanks;
        size_t n = run_of(d, len, t, is_token68);
        if (n < 8) continue;
        while (t + n < len && d[t + n] == '=') n++;
        if (!add_span(s, t, t + n, "bearer_token")) return;
        pos = t + n - 1;
    }
}

static bool is_pat_char(uint8_t ch) { return is_word(ch); }

static void find_github_tokens(const uint8_t *d, size_t len, spans *s) {
    static const char *const prefixes[] = {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"};
    for (size_t k = 0; k < 5; k++)
        for (size_t pos = 0; (pos = find(d, len, pos, prefixes[k])) < len; pos++) {
            if (pos > 0 && is_word(d[pos - 1])) continue;
            size_t n = run_of(d, len, pos + 4, is_alnum);
            if (n < 36) continue;
            if (!add_span(s, pos, pos + 4 + n, "github_token")) return;
        }
    for (size_t pos = 0; (pos = find(d, len, pos, "github_pat_")) < len; pos++) {
        if (pos > 0 && is_word(d[pos - 1])) continue;
        size_t n = run_of(d, len, pos + 11, is_pat_char);
        if (n < 22) continue;
        if (!add_span(s, pos, pos + 11 + n, "github_token")) return;
    }
}

static bool is_key_char(uint8_t ch) { return is_word(ch) || ch == '-'; }

static void find_api_keys(const uint8_t *d, size_t len, spans *s) {
    for (size_t pos = 0; (pos = find(d, len, pos, "sk-")) < len; pos++) {
        if (pos > 0 && is_key_char(d[pos - 1])) continue;
        size_t n = run_of(d, len, pos + 3, is_key_char);
        if (n < 20) continue;
        if (!add_span(s, pos, pos + 3 + n, "api_key")) return;
        pos += 2 + n;
    }
}

/* ---- configured patterns ------------------------------------------------------------------ */

/* Every match of re in one line (n bytes at line, in the scratch copy whose
 * newlines are NULs), offsets recorded relative to the data (base).
 * Why the string handed to regexec starts one byte before pos, with that
 * byte NUL for the call: regexec's callers' strlen — ASan's interceptor
 * scans the whole string on every call — then costs nothing, where passing
 * the line would make a long line with many matches quadratic. REG_STARTEND
 * makes glibc ignore the NUL; the byte only gives the context of pos, which
 * is never a line start there (^ cannot match), and a word-boundary
 * operator (\<, \b) may see a boundary at pos: at worst more is redacted. */
static bool match_line(const regex_t *re, const char *kind, char *line, size_t n, size_t base,
                       spans *s) {
    for (size_t pos = 0; pos < n;) {
        size_t off = pos ? pos - 1 : 0;
        char saved = line[off];
        if (pos) line[off] = '\0';
        regmatch_t m[1];
        m[0].rm_so = (regoff_t)(pos - off);
        m[0].rm_eo = (regoff_t)(n - off);
        int rc = regexec(re, line + off, 1, m, REG_STARTEND);
        line[off] = saved;
        if (rc != 0) return true;
        size_t start = off + (size_t)m[0].rm_so, end = off + (size_t)m[0].rm_eo;
        if (end > start) {
            if (!add_span(s, base + start, base + end, kind)) return false;
            pos = end;
        } else {
            pos = start + 1; /* an empty match (\<, \b): step over, never replace */
        }
    }
    return true;
}

/* A pattern, line by line from the line of its first match in the whole
 * data (one regexec over everything finds whether there is any). lines is
 * the data with every '\n' turned into NUL. */
static void find_pattern(const regex_t *re, const char *kind, const uint8_t *d, char *lines,
                         size_t len, spans *s) {
    regmatch_t m[1];
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)len;
    if (regexec(re, (const char *)d, 1, m, REG_STARTEND) != 0) return;
    size_t ls = (size_t)m[0].rm_so;
    while (ls > 0 && d[ls - 1] != '\n') ls--;
    while (ls < len) {
        const uint8_t *nl = memchr(d + ls, '\n', len - ls);
        size_t le = nl ? (size_t)(nl - d) : len;
        if (le > ls && !match_line(re, kind, lines + ls, le - ls, ls, s)) return;
        ls = le + 1;
    }
}

/* All configured patterns; false when out of memory. */
static bool find_patterns(const svc_redactor *r, const uint8_t *d, size_t len, spans *s) {
    char *lines = malloc(len + 1);
    if (!lines) return false;
    for (size_t i = 0; i < len; i++) lines[i] = d[i] == '\n' ? '\0' : (char)d[i];
    lines[len] = '\0';
    for (size_t i = 0; i < r->n; i++) find_pattern(&r->res[i], r->kinds[i], d, lines, len, s);
    free(lines);
    return true;
}

/* ---- replacement ------------------------------------------------------------------------- */

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1; /* longest first */
    return 0;
}

static void note_kind(json_t *kinds, const char *kind) {
    if (!json_is_array(kinds)) return;
    size_t i;
    json_t *v;
    json_array_foreach(kinds, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), kind) == 0) return;
    }
    json_array_append_new(kinds, json_string(kind));
}

/* Sort, apply the clip, merge overlapping spans in place; returns the count.
 * Every kind involved is noted. */
static size_t merge(spans *s, size_t len, json_t *kinds) {
    if (s->n > 1) qsort(s->v, s->n, sizeof *s->v, by_start);
    size_t out = 0;
    for (size_t i = 0; i < s->n; i++) {
        span sp = s->v[i];
        if (sp.start >= s->clip) break;
        note_kind(kinds, sp.kind);
        if (out > 0 && sp.start < s->v[out - 1].end) {
            if (sp.end > s->v[out - 1].end) s->v[out - 1].end = sp.end;
        } else {
            s->v[out++] = sp;
        }
    }
    if (s->clip < len) {
        note_kind(kinds, s->clip_kind);
        if (out > 0 && s->v[out - 1].end > s->clip) s->v[out - 1].end = len;
        else s->v[out++] = (span){s->clip, len, s->clip_kind}; /* out <= n < cap */
    }
    s->n = out;
    return out;
}

/* Write (or, with out NULL, size) the redacted data. Past MAX_GROWTH the
 * rest is redacted whole from the span that would overflow; *count is the
 * number of replacements made. */
static size_t emit(const spans *s, const uint8_t *d, size_t len, uint8_t *out, size_t *count) {
    size_t o = 0, pos = 0;
    *count = 0;
    for (size_t i = 0; i < s->n; i++) {
        const span *sp = &s->v[i];
        char repl[48];
        size_t rl = (size_t)snprintf(repl, sizeof repl, "[REDACTED:%s]", sp->kind);
        size_t end = sp->end;
        /* the output if this were the last replacement, against the cap */
        if (o + (sp->start - pos) + rl + (len - end) > len + MAX_GROWTH) end = len;
        if (out) {
            memcpy(out + o, d + pos, sp->start - pos);
            memcpy(out + o + (sp->start - pos), repl, rl);
        }
        o += sp->start - pos + rl;
        pos = end;
        (*count)++;
        if (end == len) break;
    }
    if (out) memcpy(out + o, d + pos, len - pos);
    o += len - pos;
    if (out) out[o] = '\0';
    return o;
}

/* Out of memory while redacting: replace everything (fail closed). */
static size_t redact_all(uint8_t **data, size_t *len, json_t *kinds) {
    static const char marker[] = "[REDACTED:out_of_memory]";
    size_t n = sizeof marker - 1 < *len ? sizeof marker - 1 : *len;
    memcpy(*data, marker, n);
    (*data)[n] = '\0';
    *len = n;
    note_kind(kinds, "out_of_memory");
    return 1;
}

size_t svc_redact(const svc_redactor *r, uint8_t **data, size_t *len, json_t *kinds) {
    if (!r || !data || !*data || !len || *len == 0) return 0;
    const uint8_t *d = *data;
    size_t n = *len;
    spans s = {NULL, 0, 0, SIZE_MAX, NULL};
    if (r->builtin) {
        find_private_keys(d, n, &s);
        find_aws_access_keys(d, n, &s);
        find_aws_secret_keys(d, n, &s);
        find_bearer_tokens(d, n, &s);
        find_github_tokens(d, n, &s);
        find_api_keys(d, n, &s);
    }
    /* regoff_t is an int: data beyond INT_MAX cannot be searched, so it
     * cannot be returned either (the daemon's output caps are far below). */
    if (r->n > 0 && (n > (size_t)INT_MAX || !find_patterns(r, d, n, &s))) {
        free(s.v);
        return redact_all(data, len, kinds);
    }
    if (s.n == 0 && s.clip == SIZE_MAX) return 0;
    /* merge() may append the clip span: make room for it. */
    if (s.n == s.cap) {
        span *v = realloc(s.v, (s.cap + 1) * sizeof *v);
        if (!v) {
            free(s.v);
            return redact_all(data, len, kinds);
        }
        s.v = v;
        s.cap++;
    }
    merge(&s, n, kinds);
    size_t count;
    size_t out_len = emit(&s, d, n, NULL, &count);
    uint8_t *out = malloc(out_len + 1);
    if (!out) {
        free(s.v);
        return redact_all(data, len, kinds);
    }
    emit(&s, d, n, out, &count);
    free(s.v);
    free(*data);
    *data = out;
    *len = out_len;
    return count;
}
