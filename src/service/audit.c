/*
 * audit.c — the audit log (service.h, "audit.c"): every execution airlockd
 * runs is a row in an SQLite 3 database, written when it starts ("running")
 * and again when it ends (its outcome; "cancelled" with the reason in
 * abort_reason when the daemon cancelled it) or when the daemon gives up on
 * it ("aborted"); `airlock audit` reads it back with svc_audit_query.
 *
 * Invariants:
 * - One writer connection per svc_audit, guarded by a.mu: the prepared
 *   statements are shared, and bind → step → reset must not interleave
 *   between workers (SQLITE_OPEN_FULLMUTEX alone only serialises single
 *   calls). sqlite3_errmsg is read under the same lock.
 * - No SQL text ever contains a value: every value is a bound parameter.
 *   The only SQL assembled at run time is svc_audit_query's WHERE clause,
 *   made of constant fragments chosen by which filters are set.
 * - Durability: WAL with synchronous=FULL. WAL + NORMAL survives a process
 *   crash (kill -9) but may lose the last commits on power loss; FULL fsyncs
 *   the WAL at every commit, so a row the daemon wrote is on disk. Two
 *   fsyncs per execution (begin, end) cost little next to running it.
 * - A new database file is created 0600 (it names tokens and holds policies);
 *   an existing file keeps its mode, so an administrator may open it to an
 *   auditors' group. SQLite gives the -wal and -shm files the database's mode.
 * - The schema has a version (PRAGMA user_version). Opening applies the
 *   migrations from the file's version to SCHEMA_VERSION in one transaction;
 *   a version newer than this build knows is refused, never written to; a
 *   version-0 file that already has tables is someone else's database.
 * - A row still "running" when a writer opens the file belongs to a daemon
 *   that died (kill -9, crash, power loss): open marks it "aborted". One
 *   daemon per database is assumed (the state directory is the daemon's).
 * - Readers open the file read-only and never change it. A reader that
 *   cannot create the -shm file (no write access to the directory) reads
 *   the file as immutable, but only when no -wal file exists, i.e. when no
 *   writer has it open.
 * - Failing to write is never fatal: begin returns -1, end/abort false, and
 *   svc_audit_last_error says why for the caller's log.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "service.h"

#define BUSY_TIMEOUT_MS 5000
#define QUERY_DEFAULT_LIMIT 100u
#define QUERY_MAX_LIMIT 10000u
#define CRASH_REASON "airlockd stopped before the execution finished (crash or kill)"

/* migrations[k] takes a database from version k to k + 1 (and says so in
 * user_version, so no version number is ever formatted into SQL). Append,
 * never edit: a released database may be at any of them. */
static const char *const migrations[] = {
    "CREATE TABLE executions ("
    " id INTEGER PRIMARY KEY,"
    " started_ms INTEGER NOT NULL,"        /* unix ms */
    " finished_ms INTEGER,"                /* NULL while running */
    " token TEXT NOT NULL DEFAULT '',"     /* token name, '' without auth */
    " session TEXT NOT NULL DEFAULT '',"
    " source TEXT NOT NULL DEFAULT '',"    /* http, mcp-http, mcp-stdio */
    " kind TEXT NOT NULL DEFAULT '',"      /* python, wasm, command */
    " backend TEXT NOT NULL DEFAULT '',"   /* wasm, native, gvisor */
    " policy_json TEXT,"
    " code_sha256 TEXT,"
    " limits_json TEXT,"
    " status TEXT NOT NULL,"               /* running, aborted, al_status_name() */
    " exit_code INTEGER,"
    " signal INTEGER,"
    " wall_ms INTEGER,"
    " cpu_ms INTEGER,"
    " peak_memory_bytes INTEGER,"
    " fuel_used INTEGER,"
    " denied_syscalls INTEGER,"
    " limits_hit TEXT,"                    /* JSON array of limit names */
    " egress_json TEXT,"
    " redactions INTEGER,"
    " redaction_kinds_json TEXT,"
    " error_message TEXT,"
    " abort_reason TEXT,"
    " execution_id TEXT"                   /* al_result.execution_id: egress log, cgroups */
    ");"
    "CREATE INDEX executions_started ON executions(started_ms);"
    "CREATE INDEX executions_token ON executions(token);"
    "CREATE INDEX executions_status ON executions(status);"
    "PRAGMA user_version = 1;",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

static const char sql_begin[] =
    "INSERT INTO executions (started_ms, token, session, source, kind, backend,"
    " policy_json, code_sha256, limits_json, status)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')";

/* A row aborted while its execution still ran (shutdown) keeps "aborted" and
 * its reason, and gains the outcome's figures. A cancelled execution
 * ("cancelled") gets its cancel reason as abort_reason (SET expressions read
 * the row as it was, so "status" there is the old one). */
static const char sql_end[] =
    "UPDATE executions SET finished_ms = ?,"
    " status = CASE status WHEN 'aborted' THEN 'aborted' ELSE ? END,"
    " exit_code = ?, signal = ?, wall_ms = ?, cpu_ms = ?, peak_memory_bytes = ?,"
    " fuel_used = ?, denied_syscalls = ?, limits_hit = ?, egress_json = ?,"
    " redactions = ?, redaction_kinds_json = ?, error_message = ?, execution_id = ?,"
    " abort_reason = CASE status WHEN 'aborted' THEN abort_reason ELSE ? END"
    " WHERE id = ? AND status IN ('running', 'aborted') AND wall_ms IS NULL";

static const char sql_abort[] =
    "UPDATE executions SET status = 'aborted', abort_reason = ?, finished_ms = ?"
    " WHERE id = ? AND status = 'running'";

static const char sql_abort_running[] =
    "UPDATE executions SET status = 'aborted', abort_reason = ?, finished_ms = ?"
    " WHERE status = 'running'";

struct svc_audit {
    pthread_mutex_t mu;           /* guards everything below */
    sqlite3 *db;
    sqlite3_stmt *begin, *end, *abort;
    char last_error[256];
};

/* ---- small helpers ------------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SQLite integers are signed 64-bit; our counters are unsigned. */
static sqlite3_int64 clamp_i64(uint64_t v) {
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

static int bind_text(sqlite3_stmt *st, int i, const char *s) {
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

/* Text that is never NULL in the table ('' when the caller has none). */
static int bind_text0(sqlite3_stmt *st, int i, const char *s) {
    return sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_TRANSIENT);
}

/* Run a shared statement whose binding returned rc, then reset it for the
 * next caller. SQLITE_DONE, or the error. */
static int run_stmt(sqlite3_stmt *st, int rc) {
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

/* Called with a->mu held. */
static void remember_error(svc_audit *a, const char *what) {
    snprintf(a->last_error, sizeof a->last_error, "audit %s: %s", what, sqlite3_errmsg(a->db));
}

/* One integer from a constant query ("PRAGMA user_version", ...). */
static bool query_int(sqlite3 *db, const char *sql, int64_t *out) {
    sqlite3_stmt *st = NULL;
    bool ok = false;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        ok = true;
    }
    sqlite3_finalize(st);
    return ok;
}

/* ---- the default state directory (shared with config.c) ------------------------------ */

bool svc_default_state_dir(char *out, size_t outlen) {
    int n;
    if (geteuid() == 0) {
        n = snprintf(out, outlen, "/var/lib/airlock");
    } else {
        /* XDG Base Directory: a relative $XDG_STATE_HOME is invalid, ignore it. */
        const char *xdg = getenv("XDG_STATE_HOME");
        if (xdg && xdg[0] == '/') {
            n = snprintf(out, outlen, "%s/airlock", xdg);
        } else {
            const char *home = getenv("HOME");
            if (!home || home[0] != '/') {
                struct passwd *pw = getpwuid(geteuid());
                home = pw ? pw->pw_dir : NULL;
            }
            if (!home || home[0] != '/') return false;
            n = snprintf(out, outlen, "%s/.local/state/airlock", home);
        }
    }
    return n > 0 && (size_t)n < outlen;
}

/* ---- opening the writer --------------------------------------------------------------- */

/* Create path 0600 if it does not exist (sqlite would use 0644 minus the
 * umask); a directory, a device or a symlink there is refused. */
static bool create_file(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (errno == ENOENT)
            set_err(err, errlen, "audit db %s: its directory does not exist", path);
        else if (errno == ELOOP)
            set_err(err, errlen, "audit db %s: is a symbolic link", path);
        else
            set_err(err, errlen, "audit db %s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    if (!ok) set_err(err, errlen, "audit db %s: not a regular file", path);
    return ok;
}

static bool exec_sql(sqlite3 *db, const char *sql, const char *path, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return true;
    set_err(err, errlen, "audit db %s: %s", path, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return false;
}

/* The file's schema version, refusing what this build cannot read or write. */
static bool check_version(sqlite3 *db, const char *path, int64_t *version, char *err,
                          size_t errlen) {
    if (!query_int(db, "PRAGMA user_version", version)) {
        set_err(err, errlen, "audit db %s: %s", path, sqlite3_errmsg(db));
        return false;
    }
    if (*version > SCHEMA_VERSION) {
        set_err(err, errlen,
                "audit db %s: schema version %lld is newer than this airlock's (%d); "
                "use a newer airlock",
                path, (long long)*version, SCHEMA_VERSION);
        return false;
    }
    if (*version < 0) {
        set_err(err, errlen, "audit db %s: invalid schema version %lld", path,
                (long long)*version);
        return false;
    }
    return true;
}

/* A version-0 file with tables was not made by us: do not add ours to it. */
static bool foreign_database(sqlite3 *db) {
    int64_t tables = 0;
    return !query_int(db, "SELECT count(*) FROM sqlite_master", &tables) || tables > 0;
}

/* Bring the schema to SCHEMA_VERSION in one transaction. BEGIN IMMEDIATE
 * takes the write lock first, so two processes opening a fresh file at once
 * cannot both create the table. */
static bool migrate(sqlite3 *db, const char *path, char *err, size_t errlen) {
    if (!exec_sql(db, "BEGIN IMMEDIATE", path, err, errlen)) return false;
    int64_t version = 0;
    bool ok = check_version(db, path, &version, err, errlen);
    if (ok && version == 0 && foreign_database(db)) {
        set_err(err, errlen, "audit db %s: not an airlock audit database (has other tables)",
                path);
        ok = false;
    }
    for (int64_t v = version; ok && v < SCHEMA_VERSION; v++)
        ok = exec_sql(db, migrations[v], path, err, errlen);
    if (ok) return exec_sql(db, "COMMIT", path, err, errlen);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return false;
}

static bool enable_wal(sqlite3 *db, const char *path, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    char mode[16] = "";
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (strcmp(mode, "wal") != 0) {
        set_err(err, errlen, "audit db %s: cannot use WAL mode (%s)", path,
                mode[0] ? mode : sqlite3_errmsg(db));
        return false;
    }
    return exec_sql(db, "PRAGMA synchronous = FULL", path, err, errlen);
}

/* Rows a dead daemon left "running" become "aborted"; how many. */
static bool abort_leftovers(sqlite3 *db, const char *path, unsigned *count, char *err,
                            size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql_abort_running, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, CRASH_REASON, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now_ms());
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        set_err(err, errlen, "audit db %s: %s", path, sqlite3_errmsg(db));
        return false;
    }
    int changed = sqlite3_changes(db);
    *count = changed > 0 ? (unsigned)changed : 0;
    return true;
}

static bool prepare_all(svc_audit *a, const char *path, char *err, size_t errlen) {
    if (sqlite3_prepare_v3(a->db, sql_begin, -1, SQLITE_PREPARE_PERSISTENT, &a->begin, NULL) ==
            SQLITE_OK &&
        sqlite3_prepare_v3(a->db, sql_end, -1, SQLITE_PREPARE_PERSISTENT, &a->end, NULL) ==
            SQLITE_OK &&
        sqlite3_prepare_v3(a->db, sql_abort, -1, SQLITE_PREPARE_PERSISTENT, &a->abort, NULL) ==
            SQLITE_OK)
        return true;
    set_err(err, errlen, "audit db %s: %s", path, sqlite3_errmsg(a->db));
    return false;
}

svc_audit *svc_audit_open(const char *path, unsigned *aborted, char *err, size_t errlen) {
    unsigned count = 0;
    if (aborted) *aborted = 0;
    if (!path || !path[0]) {
        set_err(err, errlen, "audit db: no path");
        return NULL;
    }
    if (!create_file(path, err, errlen)) return NULL;
    svc_audit *a = calloc(1, sizeof *a);
    if (!a) {
        set_err(err, errlen, "audit db %s: out of memory", path);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    int64_t version = 0;
    if (sqlite3_open_v2(path, &a->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        set_err(err, errlen, "audit db %s: %s", path,
                a->db ? sqlite3_errmsg(a->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(a->db, BUSY_TIMEOUT_MS);
    /* The version first: a newer schema is not touched at all, not even its
     * journal mode. */
    if (!check_version(a->db, path, &version, err, errlen) ||
        !enable_wal(a->db, path, err, errlen) || !migrate(a->db, path, err, errlen) ||
        !abort_leftovers(a->db, path, &count, err, errlen) || !prepare_all(a, path, err, errlen))
        goto fail;
    if (aborted) *aborted = count;
    return a;
fail:
    svc_audit_close(a);
    return NULL;
}

void svc_audit_close(svc_audit *a) {
    if (!a) return;
    sqlite3_finalize(a->begin);
    sqlite3_finalize(a->end);
    sqlite3_finalize(a->abort);
    sqlite3_close(a->db); /* the last connection checkpoints and removes the WAL */
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void svc_audit_last_error(svc_audit *a, char *out, size_t outlen) {
    if (!out || !outlen) return;
    if (!a) {
        snprintf(out, outlen, "audit: not open");
        return;
    }
    pthread_mutex_lock(&a->mu);
    snprintf(out, outlen, "%s", a->last_error);
    pthread_mutex_unlock(&a->mu);
}

/* ---- writing -------------------------------------------------------------------------- */

int64_t svc_audit_begin(svc_audit *a, const svc_audit_start *s) {
    if (!a || !s) return -1;
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *st = a->begin;
    int rc = sqlite3_bind_int64(st, 1, now_ms());
    if (rc == SQLITE_OK) rc = bind_text0(st, 2, s->token);
    if (rc == SQLITE_OK) rc = bind_text0(st, 3, s->session);
    if (rc == SQLITE_OK) rc = bind_text0(st, 4, s->source);
    if (rc == SQLITE_OK) rc = bind_text0(st, 5, s->kind);
    if (rc == SQLITE_OK) rc = bind_text0(st, 6, s->backend);
    if (rc == SQLITE_OK) rc = bind_text(st, 7, s->policy_json);
    if (rc == SQLITE_OK) rc = bind_text(st, 8, s->code_sha256);
    if (rc == SQLITE_OK) rc = bind_text(st, 9, s->limits_json);
    rc = run_stmt(st, rc);
    int64_t id = -1;
    if (rc == SQLITE_DONE) id = sqlite3_last_insert_rowid(a->db);
    else remember_error(a, "begin");
    pthread_mutex_unlock(&a->mu);
    return id;
}

static const struct {
    uint32_t flag;
    const char *name;
} limit_names[] = {
    {AL_LIMIT_WALL, "wall"},
    {AL_LIMIT_CPU, "cpu"},
    {AL_LIMIT_MEMORY, "memory"},
    {AL_LIMIT_PROCESSES, "processes"},
    {AL_LIMIT_FILE_SIZE, "file_size"},
    {AL_LIMIT_OUTPUT, "output"},
    {AL_LIMIT_FUEL, "fuel"},
};

/* limits_hit as a JSON array of names, e.g. ["wall","memory"] (fits easily:
 * every name once, plus quotes and commas). */
static void limits_json(uint32_t flags, char out[128]) {
    size_t n = 0;
    out[n++] = '[';
    for (size_t i = 0; i < sizeof limit_names / sizeof limit_names[0]; i++) {
        if (!(flags & limit_names[i].flag)) continue;
        n += (size_t)snprintf(out + n, 128 - n, "%s\"%s\"", n > 1 ? "," : "",
                              limit_names[i].name);
    }
    snprintf(out + n, 128 - n, "]");
}

/* The result's own egress counts, when the caller gave no egress_json. */
static void egress_counts_json(const al_result *r, char out[96]) {
    snprintf(out, 96, "{\"allowed\":%u,\"denied\":%u,\"bytes\":%llu}", r->egress_allowed,
             r->egress_denied, (unsigned long long)r->egress_bytes);
}

static int bind_end(sqlite3_stmt *st, int64_t id, const svc_audit_finish *f) {
    const al_result *r = f->result;
    char limits[128], egress[96];
    char message[sizeof r->error.message + 1], exec_id[sizeof r->execution_id + 1];
    limits_json(r->limits_hit, limits);
    egress_counts_json(r, egress);
    /* the result's fixed buffers, bounded even if a writer left them unterminated */
    snprintf(message, sizeof message, "%.*s", (int)sizeof r->error.message, r->error.message);
    snprintf(exec_id, sizeof exec_id, "%.*s", (int)sizeof r->execution_id, r->execution_id);
    int rc = sqlite3_bind_int64(st, 1, now_ms());
    if (rc == SQLITE_OK) rc = bind_text(st, 2, al_status_name(r->status));
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, r->exit_code);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 4, r->term_signal);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 5, clamp_i64(r->wall_ns / 1000000));
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 6, clamp_i64(r->cpu_ns / 1000000));
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 7, clamp_i64(r->peak_memory_bytes));
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 8, clamp_i64(r->fuel_used));
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 9, clamp_i64(r->denied_syscalls));
    if (rc == SQLITE_OK) rc = bind_text(st, 10, limits);
    if (rc == SQLITE_OK) rc = bind_text(st, 11, f->egress_json ? f->egress_json : egress);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 12, f->redactions);
    if (rc == SQLITE_OK)
        rc = bind_text(st, 13, f->redaction_kinds_json ? f->redaction_kinds_json : "[]");
    if (rc == SQLITE_OK) rc = bind_text(st, 14, message[0] ? message : NULL);
    if (rc == SQLITE_OK) rc = bind_text(st, 15, exec_id[0] ? exec_id : NULL);
    /* a cancellation's reason is its error message ("shutdown") */
    if (rc == SQLITE_OK)
        rc = bind_text(st, 16, r->status == AL_STATUS_CANCELLED && message[0] ? message : NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 17, id);
    return rc;
}

/* True when one row was updated: a running (or shutdown-aborted) row that
 * has not been finished before. */
bool svc_audit_end(svc_audit *a, int64_t id, const svc_audit_finish *f) {
    if (!a || !f || !f->result || id <= 0) return false;
    pthread_mutex_lock(&a->mu);
    int rc = run_stmt(a->end, bind_end(a->end, id, f));
    bool ok = rc == SQLITE_DONE && sqlite3_changes(a->db) == 1;
    if (rc != SQLITE_DONE) remember_error(a, "end");
    else if (!ok)
        snprintf(a->last_error, sizeof a->last_error,
                 "audit end: no unfinished execution %lld", (long long)id);
    pthread_mutex_unlock(&a->mu);
    return ok;
}

/* True when a running row became aborted; false for an unknown or already
 * finished one. */
bool svc_audit_abort(svc_audit *a, int64_t id, const char *reason) {
    if (!a || id <= 0) return false;
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *st = a->abort;
    int rc = bind_text(st, 1, reason && reason[0] ? reason : "aborted");
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 2, now_ms());
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 3, id);
    rc = run_stmt(st, rc);
    bool ok = rc == SQLITE_DONE && sqlite3_changes(a->db) == 1;
    if (rc != SQLITE_DONE) remember_error(a, "abort");
    else if (!ok)
        snprintf(a->last_error, sizeof a->last_error, "audit abort: no running execution %lld",
                 (long long)id);
    pthread_mutex_unlock(&a->mu);
    return ok;
}

/* Retention: finished rows (never "running" ones: their daemon may still
 * finish them) that started before the cut-off. One statement, so a prune
 * is atomic; prepared per call (it runs at most once a minute). */
int64_t svc_audit_prune(svc_audit *a, int64_t before_unix_ms) {
    if (!a || before_unix_ms <= 0) return 0;
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(a->db,
                                "DELETE FROM executions WHERE started_ms < ? AND status != 'running'",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 1, before_unix_ms);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    int64_t n = rc == SQLITE_DONE ? sqlite3_changes(a->db) : -1;
    if (rc != SQLITE_DONE) remember_error(a, "prune");
    sqlite3_finalize(st);
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* ---- reading -------------------------------------------------------------------------- */

/* A JSON string of SQLite text. jansson wants valid UTF-8; anything else
 * (only a hand-edited file would have it) keeps its ASCII and shows '?' for
 * the rest, rather than failing the whole query. */
static json_t *text_json(const unsigned char *s, int n) {
    json_t *j = json_stringn((const char *)s, (size_t)n);
    if (j) return j;
    char *copy = malloc((size_t)n + 1);
    if (!copy) return NULL;
    for (int i = 0; i < n; i++) copy[i] = s[i] && s[i] < 0x80 ? (char)s[i] : '?';
    j = json_stringn(copy, (size_t)n);
    free(copy);
    return j;
}

/* Columns holding JSON text come back parsed, under their name without
 * "_json" (policy_json → "policy"); text that does not parse stays a string. */
static void put_column(json_t *row, sqlite3_stmt *st, int i) {
    const char *name = sqlite3_column_name(st, i);
    size_t len = strlen(name);
    bool suffixed = len > 5 && !strcmp(name + len - 5, "_json");
    bool is_json = suffixed || !strcmp(name, "limits_hit");
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(suffixed ? len - 5 : len), name);
    json_t *v = NULL;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: v = json_integer(sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: v = json_real(sqlite3_column_double(st, i)); break;
    case SQLITE_NULL: v = json_null(); break;
    default: {
        const unsigned char *text = sqlite3_column_text(st, i);
        int n = sqlite3_column_bytes(st, i);
        if (is_json && text)
            v = json_loadb((const char *)text, (size_t)n, JSON_DECODE_ANY, NULL);
        if (!v) v = text ? text_json(text, n) : json_null();
    }
    }
    json_object_set_new(row, key, v ? v : json_null());
}

/* The WHERE clause's fragments, in the order their values are bound. Only
 * these constants ever reach the SQL text. */
static const char *const filter_sql[] = {
    " AND started_ms >= ?", " AND started_ms <= ?", " AND token = ?", " AND status = ?",
    " AND session = ?",
};

static sqlite3_stmt *prepare_query(sqlite3 *db, const svc_audit_filter *f) {
    bool on[5] = {f->since_unix_ms != 0, f->until_unix_ms != 0, f->token != NULL,
                  f->status != NULL, f->session != NULL};
    char sql[512] = "SELECT * FROM executions WHERE 1";
    for (int k = 0; k < 5; k++)
        if (on[k]) strcat(sql, filter_sql[k]);
    strcat(sql, " ORDER BY started_ms DESC, id DESC LIMIT ?");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    int i = 1;
    if (on[0]) sqlite3_bind_int64(st, i++, f->since_unix_ms);
    if (on[1]) sqlite3_bind_int64(st, i++, f->until_unix_ms);
    if (on[2]) sqlite3_bind_text(st, i++, f->token, -1, SQLITE_STATIC);
    if (on[3]) sqlite3_bind_text(st, i++, f->status, -1, SQLITE_STATIC);
    if (on[4]) sqlite3_bind_text(st, i++, f->session, -1, SQLITE_STATIC);
    unsigned limit = f->limit ? f->limit : QUERY_DEFAULT_LIMIT;
    sqlite3_bind_int64(st, i, limit > QUERY_MAX_LIMIT ? QUERY_MAX_LIMIT : limit);
    return st;
}

static json_t *read_rows(sqlite3 *db, const svc_audit_filter *f, const char *path, char *err,
                         size_t errlen) {
    sqlite3_stmt *st = prepare_query(db, f);
    if (!st) {
        set_err(err, errlen, "audit db %s: %s", path, sqlite3_errmsg(db));
        return NULL;
    }
    json_t *rows = json_array();
    int rc = rows ? SQLITE_ROW : SQLITE_NOMEM;
    while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = json_object();
        if (!row || json_array_append_new(rows, row) != 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        for (int i = 0; i < sqlite3_column_count(st); i++) put_column(row, st, i);
    }
    if (rc != SQLITE_DONE) {
        set_err(err, errlen, "audit db %s: %s", path,
                rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
        json_decref(rows);
        rows = NULL;
    }
    sqlite3_finalize(st);
    return rows;
}

/* "file:PATH?immutable=1" with PATH percent-encoded (a '?', '#' or '%' in a
 * file name would otherwise end or change the URI). */
static char *immutable_uri(const char *path) {
    static const char hex[] = "0123456789ABCDEF";
    char *uri = malloc(strlen(path) * 3 + sizeof "file:?immutable=1");
    if (!uri) return NULL;
    char *o = uri + sprintf(uri, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/-._~", *p)) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    strcpy(o, "?immutable=1");
    return uri;
}

/* One read-only pass over the file; *code is SQLite's primary error code
 * when it failed on SQLite's side (0 when the file was read but refused). */
static json_t *query_file(const char *path, bool immutable, const svc_audit_filter *f,
                          int *code, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    json_t *rows = NULL;
    char *uri = immutable ? immutable_uri(path) : NULL;
    int flags = SQLITE_OPEN_READONLY | (immutable ? SQLITE_OPEN_URI : 0);
    int64_t version = 0;
    if ((immutable && !uri) || sqlite3_open_v2(uri ? uri : path, &db, flags, NULL) != SQLITE_OK) {
        set_err(err, errlen, "audit db %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    if (!check_version(db, path, &version, err, errlen)) goto out;
    if (version == 0) {
        set_err(err, errlen, "audit db %s: not an airlock audit database (no schema version)",
                path);
        goto out;
    }
    rows = read_rows(db, f, path, err, errlen);
out:
    *code = rows || !db ? 0 : sqlite3_errcode(db) & 0xff;
    sqlite3_close(db);
    free(uri);
    return rows;
}

/* Is there a PATH-wal file? A WAL writer keeps one while it has the file open. */
static bool wal_exists(const char *path) {
    char wal[PATH_MAX];
    struct stat sb;
    return (size_t)snprintf(wal, sizeof wal, "%s-wal", path) >= sizeof wal || stat(wal, &sb) == 0;
}

json_t *svc_audit_query(const char *path, const svc_audit_filter *f, char *err, size_t errlen) {
    static const svc_audit_filter none = {0};
    if (!f) f = &none;
    if (!path || !path[0]) {
        set_err(err, errlen, "audit db: no path");
        return NULL;
    }
    /* sqlite's own message for a missing file is "unable to open database file" */
    struct stat sb;
    if (stat(path, &sb) != 0) {
        set_err(err, errlen, "audit db %s: %s", path, strerror(errno));
        return NULL;
    }
    int code = 0;
    json_t *rows = query_file(path, false, f, &code, err, errlen);
    /* A WAL database needs its -shm file, which a reader without write access
     * to the directory (an auditor, a read-only mount or copy) cannot create.
     * With no -wal file no writer has the database open and every row is in
     * the main file: read it as immutable, which needs no -shm. */
    if (!rows && (code == SQLITE_READONLY || code == SQLITE_CANTOPEN) && !wal_exists(path))
        rows = query_file(path, true, f, &code, err, errlen);
    return rows;
}
