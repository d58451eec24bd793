/*
 * units.c — strict parsers for the values of `airlock run`'s options:
 * durations (--timeout), sizes (--memory), counts (--fuel), directory grants
 * (--dir) and environment entries (--env).
 *
 * Every parser takes the whole string or nothing: no leading or trailing
 * space, no sign, no hex, no fractions, no zero, no overflow (strtoull would
 * accept most of these silently). A value the sandbox cannot honour is a
 * usage error here, before anything is read or run.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "run.h"

/* Upper bounds: beyond these a value is a typo, not a request. */
#define MAX_TIMEOUT_MS UINT64_C(1000000000000) /* ~31 years, the library's own bound */
#define MIN_MEMORY_BYTES UINT64_C(65536)       /* one wasm page */
#define MAX_MEMORY_BYTES (UINT64_C(4) << 30)   /* the wasm32 maximum */

/* Leading decimal digits of s into *v; *end is the first non-digit. False
 * when there are no digits or the value does not fit in 64 bits. */
static bool leading_number(const char *s, uint64_t *v, const char **end, const char **why) {
    uint64_t n = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10) {
            *why = "too large";
            return false;
        }
        n = n * 10 + d;
    }
    if (p == s) {
        *why = "not a number";
        return false;
    }
    *v = n;
    *end = p;
    return true;
}

static bool scale(uint64_t n, uint64_t unit, uint64_t *out, const char **why) {
    if (n > UINT64_MAX / unit) {
        *why = "too large";
        return false;
    }
    *out = n * unit;
    return true;
}

bool cli_parse_duration_ms(const char *s, uint64_t *ms, const char **why) {
    static const struct { const char *suffix; uint64_t ms; } units[] = {
        {"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"h", 3600000},
    };
    uint64_t n;
    const char *end;
    if (!leading_number(s, &n, &end, why)) return false;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].suffix) != 0) continue;
        if (!scale(n, units[i].ms, ms, why)) return false;
        if (*ms == 0) {
            *why = "must be greater than zero";
            return false;
        }
        if (*ms > MAX_TIMEOUT_MS) {
            *why = "too large";
            return false;
        }
        return true;
    }
    *why = "expected a number with an optional unit: ms, s, m or h (e.g. 500ms, 30s, 2m)";
    return false;
}

/* K, M, G, T (binary), optionally followed by "iB" or "B", any case. */
static bool size_unit(const char *suffix, uint64_t *unit) {
    static const char letters[] = "KMGT";
    if (*suffix == '\0' || !strcasecmp(suffix, "B")) {
        *unit = 1;
        return true;
    }
    /* ASCII upper case; a space would become NUL, which strchr would "find". */
    const char *l = strchr(letters, suffix[0] & ~0x20);
    if (!l || *l == '\0') return false;
    if (suffix[1] != '\0' && strcasecmp(suffix + 1, "B") != 0 && strcasecmp(suffix + 1, "iB") != 0)
        return false;
    *unit = UINT64_C(1) << (10 * (l - letters + 1));
    return true;
}

bool cli_parse_bytes(const char *s, uint64_t *bytes, const char **why) {
    uint64_t n, unit;
    const char *end;
    if (!leading_number(s, &n, &end, why)) return false;
    if (!size_unit(end, &unit)) {
        *why = "expected a number of bytes with an optional K, M or G suffix (e.g. 64K, 256M, 1G)";
        return false;
    }
    if (!scale(n, unit, bytes, why)) return false;
    if (*bytes == 0) {
        *why = "must be greater than zero";
        return false;
    }
    return true;
}

bool cli_parse_size(const char *s, uint64_t *bytes, const char **why) {
    if (!cli_parse_bytes(s, bytes, why)) return false;
    if (*bytes < MIN_MEMORY_BYTES) {
        *why = *bytes == 0 ? "must be greater than zero" : "must be at least 64K (one wasm page)";
        return false;
    }
    if (*bytes > MAX_MEMORY_BYTES) {
        *why = "must be at most 4G (the wasm32 maximum)";
        return false;
    }
    return true;
}

bool cli_parse_count(const char *s, uint64_t *n, const char **why) {
    const char *end;
    if (!leading_number(s, n, &end, why)) return false;
    if (*end != '\0') {
        *why = "not a decimal number";
        return false;
    }
    if (*n == 0) {
        *why = "must be greater than zero";
        return false;
    }
    return true;
}

/* HOST[:GUEST][:ro|:rw]. The mode is peeled off the end first; then the last
 * ':' separates HOST from GUEST, so HOST may itself contain ':' when GUEST is
 * given. An empty GUEST ("HOST::rw") means "the same path as HOST". */
bool cli_parse_dir(const char *s, run_dir *out, const char **why) {
    memset(out, 0, sizeof *out);
    out->spec_copy = strdup(s);
    if (!out->spec_copy) {
        *why = "out of memory";
        return false;
    }
    char *spec = out->spec_copy;
    size_t len = strlen(spec);
    out->read_only = true; /* zero trust: writable only when asked for */
    if (len >= 3 && (!strcmp(spec + len - 3, ":ro") || !strcmp(spec + len - 3, ":rw"))) {
        out->read_only = spec[len - 1] == 'o';
        spec[len - 3] = '\0';
    }
    char *colon = strrchr(spec, ':');
    if (colon) {
        *colon = '\0';
        if (colon[1] != '\0') out->guest = colon + 1;
    }
    out->host = spec;
    if (out->host[0] == '\0') {
        *why = "empty host path (expected HOST[:GUEST][:ro|:rw])";
        goto fail;
    }
    if (out->guest && out->guest[0] != '/') {
        *why = "the guest path must be absolute (expected HOST[:GUEST][:ro|:rw])";
        goto fail;
    }
    return true;
fail:
    free(out->spec_copy);
    memset(out, 0, sizeof *out);
    return false;
}

bool cli_parse_env(const char *s, const char **why) {
    const char *eq = strchr(s, '=');
    if (!eq) {
        *why = "expected KEY=VALUE";
        return false;
    }
    if (eq == s) {
        *why = "empty variable name";
        return false;
    }
    return true;
}
