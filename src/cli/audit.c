/*
 * audit.c — `airlock audit`: query airlockd's audit log (src/service/audit.c)
 * by time, token, status and session; a table for people, --json for
 * programs (the rows exactly as svc_audit_query returns them).
 *
 * Invariants:
 * - Read-only: the database is opened with SQLITE_OPEN_READONLY by
 *   svc_audit_query, so it can be used while the daemon writes, and never
 *   changes a row (running rows stay running; only the daemon aborts them).
 * - Every argument is checked before the database is touched; a bad one is
 *   exit 2 with one line on stderr and nothing on stdout. A database that is
 *   not there is exit 2 too (almost always a wrong --db); one that is there
 *   but cannot be read (not an audit log, a newer schema, I/O) is exit 1.
 * - The table shows only printable ASCII: the log holds text that came from
 *   clients (session ids, reasons), and a terminal must not interpret it.
 *   --json is exact (jansson escapes control characters).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "run.h"
#include "service.h"

static const char audit_usage[] =
    "usage: airlock audit [--db FILE] [--since T] [--until T] [--token NAME]\n"
    "                     [--status S] [--session ID] [--limit N] [--json]\n"
    "\n"
    "Show the executions airlockd recorded in its audit log, newest first.\n"
    "  --db FILE      the audit database (default: $AIRLOCK_AUDIT_DB, else\n"
    "                 /var/lib/airlock/audit.db as root, else\n"
    "                 $XDG_STATE_HOME/airlock/audit.db or ~/.local/state/airlock/audit.db)\n"
    "  --since T      executions started at or after T\n"
    "  --until T      executions started at or before T\n"
    "                 T: an RFC 3339 time (2026-11-21T10:00:00Z, 2026-11-21T12:00:00+02:00,\n"
    "                 2026-11-21), a unix time in milliseconds, or a duration ago\n"
    "                 (30s, 10m, 2h, 1d, 1w)\n"
    "  --token NAME   executions by this token\n"
    "  --status S     running, aborted, ok, exit, trap, fuel_exhausted, timeout,\n"
    "                 memory_limit, output_truncated, invalid_module, error,\n"
    "                 signaled, cpu_limit, unsupported or cancelled\n"
    "  --session ID   executions in this session\n"
    "  --limit N      at most N rows, 1..10000 (default 100)\n"
    "  --json         a JSON array of the rows, every column\n"
    "exit status: 0 ok, 1 the database cannot be read, 2 usage error or no database\n";

#define MAX_LIMIT 10000
#define MAX_MS INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

typedef struct audit_args {
    const char *db;
    const char *since, *until;
    svc_audit_filter filter;
    bool json;
} audit_args;

/* ---- argument parsing ---------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg) {
    fputs("airlock audit: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return CLI_USAGE;
}

/* n decimal digits at s; false unless they are all digits. */
static bool digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), independent of the local time zone. */
static int64_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* "HH:MM:SS[.fff…](Z|±HH:MM)" after the date; *ms is the time of day
 * shifted to UTC (may leave the day: the caller adds it to the date). */
static bool parse_clock(const char *s, int64_t *ms) {
    int h, mi, sec;
    if (!digits(s, 2, &h) || s[2] != ':' || !digits(s + 3, 2, &mi) || s[5] != ':' ||
        !digits(s + 6, 2, &sec) || h > 23 || mi > 59 || sec > 60)
        return false;
    s += 8;
    int frac = 0, scale = 100;
    if (*s == '.') {
        if (s[1] < '0' || s[1] > '9') return false;
        for (s++; *s >= '0' && *s <= '9'; s++, scale /= 10)
            if (scale) frac += (*s - '0') * scale; /* beyond milliseconds: ignored */
    }
    int64_t offset_min = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int oh, om;
        if (!digits(s + 1, 2, &oh) || s[3] != ':' || !digits(s + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        offset_min = (*s == '-' ? -1 : 1) * (oh * 60 + om);
        s += 6;
    } else {
        return false; /* RFC 3339 requires the offset */
    }
    if (*s) return false;
    *ms = ((int64_t)h * 3600 + mi * 60 + sec - offset_min * 60) * 1000 + frac;
    return true;
}

/* RFC 3339 ("2026-11-21T10:00:00Z", "...T12:00:00.5+02:00") or a date
 * alone (midnight UTC). */
static bool parse_rfc3339(const char *s, int64_t *out) {
    int y, m, d;
    if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &m) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
        return false;
    int64_t day_ms = 0;
    if (s[10] != '\0') {
        if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return false;
        if (!parse_clock(s + 11, &day_ms)) return false;
    }
    *out = days_from_civil(y, m, d) * 86400000 + day_ms;
    return true;
}

/* "10m": that long before now_ms. */
static bool parse_ago(const char *s, int64_t now_ms, int64_t *out) {
    char *end = NULL;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || end == s || !end[0] || end[1]) return false;
    int64_t unit;
    switch (*end) {
    case 's': unit = 1000; break;
    case 'm': unit = 60 * 1000; break;
    case 'h': unit = 3600 * 1000; break;
    case 'd': unit = 86400 * 1000; break;
    case 'w': unit = 7 * 86400 * 1000; break;
    default: return false;
    }
    if (n > (unsigned long long)(now_ms / unit)) return false; /* before 1970 */
    *out = now_ms - (int64_t)n * unit;
    return true;
}

static bool parse_unix_ms(const char *s, int64_t *out) {
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (!*s || errno || v > (unsigned long long)MAX_MS) return false;
    *out = (int64_t)v;
    return true;
}

/* A time as --since/--until take it, in unix ms. The filter reads 0 as
 * "unbounded", so the result is at least 1 (nothing ran in 1970's first ms). */
static bool parse_time(const char *s, int64_t now_ms, int64_t *out) {
    bool ok = parse_unix_ms(s, out) || parse_ago(s, now_ms, out) || parse_rfc3339(s, out);
    if (!ok || *out > MAX_MS || *out < 0) return false;
    if (*out == 0) *out = 1;
    return true;
}

static bool known_status(const char *s) {
    if (!strcmp(s, "running") || !strcmp(s, "aborted")) return true;
    for (int st = AL_STATUS_OK; st <= AL_STATUS_CANCELLED; st++)
        if (!strcmp(s, al_status_name((al_status)st))) return true;
    return false;
}

static bool parse_limit(const char *s, unsigned *out) {
    unsigned v = 0;
    if (!*s || strlen(s) > 5) return false;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v < 1 || v > MAX_LIMIT) return false;
    *out = v;
    return true;
}

/* --name VALUE or --name=VALUE at argv[*i]: 1 taken (*value set), 0 not
 * this option, -1 usage error (printed). */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) {
        usage_error("%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

/* 0: parsed; else the exit code (help printed: -1 → 0). */
static int parse_args(int argc, char **argv, audit_args *a) {
    static const char *const names[] = {"--db", "--since", "--until", "--token",
                                        "--status", "--session", "--limit"};
    const char *limit = NULL;
    const char **slots[] = {&a->db, &a->since, &a->until, &a->filter.token,
                            &a->filter.status, &a->filter.session, &limit};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs(audit_usage, stdout);
            return -1;
        }
        if (!strcmp(arg, "--json")) {
            a->json = true;
            continue;
        }
        int taken = 0;
        for (size_t k = 0; k < sizeof names / sizeof names[0] && !taken; k++)
            taken = option_value(argc, argv, &i, names[k], slots[k]);
        if (taken < 0) return CLI_USAGE;
        if (!taken)
            return usage_error(arg[0] == '-' ? "unknown option '%s' (see --help)"
                                             : "unexpected argument '%s' (see --help)",
                               arg);
    }
    if (limit && !parse_limit(limit, &a->filter.limit))
        return usage_error("--limit '%s': want a number from 1 to 10000", limit);
    if (a->filter.status && !known_status(a->filter.status))
        return usage_error("--status '%s': not a status (see --help)", a->filter.status);
    return 0;
}

static int parse_times(audit_args *a) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    const char *t[2] = {a->since, a->until};
    int64_t *out[2] = {&a->filter.since_unix_ms, &a->filter.until_unix_ms};
    for (int k = 0; k < 2; k++)
        if (t[k] && !parse_time(t[k], now, out[k]))
            return usage_error(k == 0 ? "--since '%s': want an RFC 3339 time, unix ms or a "
                                        "duration ago like 10m, 2h, 1d"
                                      : "--until '%s': want an RFC 3339 time, unix ms or a "
                                        "duration ago like 10m, 2h, 1d",
                               t[k]);
    return 0;
}

/* --db, else $AIRLOCK_AUDIT_DB, else <the daemon's default state dir>/audit.db. */
static int resolve_db(audit_args *a, char *buf, size_t n) {
    if (a->db) {
        if (!a->db[0]) return usage_error("%s", "--db needs a file");
        return 0;
    }
    const char *env = getenv("AIRLOCK_AUDIT_DB");
    char dir[SVC_PATH_MAX];
    if (env && env[0]) {
        snprintf(buf, n, "%s", env);
    } else if (!svc_default_state_dir(dir, sizeof dir) ||
               (size_t)snprintf(buf, n, "%s/audit.db", dir) >= n) {
        return usage_error("%s", "no default audit database (no home directory): use --db");
    }
    a->db = buf;
    return 0;
}

/* ---- output -------------------------------------------------------------------------- */

enum { COL_ID, COL_STARTED, COL_TOKEN, COL_KIND, COL_BACKEND, COL_STATUS, COL_EXIT, COL_WALL,
       COL_REDACT, COL_SHA, NCOLS };
static const char *const headers[NCOLS] = {"ID", "STARTED (UTC)", "TOKEN", "KIND", "BACKEND",
                                           "STATUS", "EXIT", "WALL MS", "REDACTIONS", "SHA256"};

/* Printable ASCII of s, at most n - 1 bytes; '-' for nothing. */
static void safe_text(const char *s, char *out, size_t n) {
    size_t j = 0;
    for (; s && s[0] && j + 1 < n; s++)
        out[j++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
    if (j == 0 && n > 1) out[j++] = '-';
    out[j] = '\0';
}

static void int_text(const json_t *v, char *out, size_t n) {
    if (json_is_integer(v)) snprintf(out, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else snprintf(out, n, "-");
}

static void time_text(const json_t *v, char *out, size_t n) {
    if (!json_is_integer(v)) {
        snprintf(out, n, "-");
        return;
    }
    time_t secs = (time_t)(json_integer_value(v) / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, n, "?");
}

static void cell(const json_t *row, int col, char *out, size_t n) {
    const json_t *sig = json_object_get(row, "signal");
    switch (col) {
    case COL_ID: int_text(json_object_get(row, "id"), out, n); break;
    case COL_STARTED: time_text(json_object_get(row, "started_ms"), out, n); break;
    case COL_TOKEN: safe_text(json_string_value(json_object_get(row, "token")), out, n); break;
    case COL_KIND: safe_text(json_string_value(json_object_get(row, "kind")), out, n); break;
    case COL_BACKEND: safe_text(json_string_value(json_object_get(row, "backend")), out, n); break;
    case COL_STATUS: safe_text(json_string_value(json_object_get(row, "status")), out, n); break;
    case COL_EXIT:
        if (json_integer_value(sig) > 0)
            snprintf(out, n, "sig %" JSON_INTEGER_FORMAT, json_integer_value(sig));
        else int_text(json_object_get(row, "exit_code"), out, n);
        break;
    case COL_WALL: int_text(json_object_get(row, "wall_ms"), out, n); break;
    case COL_REDACT: int_text(json_object_get(row, "redactions"), out, n); break;
    default: {
        char sha[13]; /* a prefix is enough to tell executions apart */
        safe_text(json_string_value(json_object_get(row, "code_sha256")), sha, sizeof sha);
        snprintf(out, n, "%s", sha);
    }
    }
}

static void print_table(const json_t *rows) {
    if (json_array_size(rows) == 0) {
        puts("no executions match");
        return;
    }
    int width[NCOLS];
    char buf[80];
    for (int c = 0; c < NCOLS; c++) width[c] = (int)strlen(headers[c]);
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        for (int c = 0; c < NCOLS; c++) {
            cell(row, c, buf, sizeof buf);
            if ((int)strlen(buf) > width[c]) width[c] = (int)strlen(buf);
        }
    }
    for (int c = 0; c < NCOLS; c++)
        printf("%-*s%s", c == NCOLS - 1 ? 0 : width[c], headers[c], c == NCOLS - 1 ? "\n" : "  ");
    json_array_foreach(rows, i, row) {
        for (int c = 0; c < NCOLS; c++) {
            cell(row, c, buf, sizeof buf);
            printf("%-*s%s", c == NCOLS - 1 ? 0 : width[c], buf, c == NCOLS - 1 ? "\n" : "  ");
        }
    }
}

/* ---- the command ------------------------------------------------------------------- */

int cli_audit(int argc, char **argv) {
    audit_args a = {0};
    char dbbuf[SVC_PATH_MAX + 16], err[512] = "", safe[512];
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if ((rc = parse_times(&a)) || (rc = resolve_db(&a, dbbuf, sizeof dbbuf))) return rc;
    struct stat sb;
    if (stat(a.db, &sb) != 0) {
        safe_text(a.db, safe, sizeof safe);
        fprintf(stderr, "airlock audit: %s: %s (use --db or $AIRLOCK_AUDIT_DB)\n", safe,
                strerror(errno));
        return CLI_USAGE;
    }
    json_t *rows = svc_audit_query(a.db, &a.filter, err, sizeof err);
    if (!rows) {
        safe_text(err, safe, sizeof safe);
        fprintf(stderr, "airlock audit: %s\n", safe);
        return CLI_FAIL;
    }
    if (a.json) {
        json_dumpf(rows, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        print_table(rows);
    }
    json_decref(rows);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "airlock audit: writing the output: %s\n", strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}
