/*
 * test_svc_audit.c — unit tests of the audit log (src/service/audit.c):
 * creating the database (0600, WAL, schema version), begin/end/abort and
 * what each row holds, marking a dead daemon's running rows aborted on
 * reopen, the query filters, hostile text stored literally, reading while a
 * writer holds the database, refusing a database from a newer airlock or
 * another program, and concurrent writers.
 *
 * Every test works in its own temporary directory, removed afterwards. A
 * second, raw sqlite3 connection plays the other party (an inspector, a
 * concurrent writer, a newer airlock) so the tests see the file itself, not
 * only what audit.c says about it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "service.h"

typedef struct fixture {
    char dir[64];
    char db[128];
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/airlock-audit-test-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->db, sizeof fx->db, "%s/audit.db", fx->dir);
    *state = fx;
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    return remove(path);
}

static int teardown(void **state) {
    fixture *fx = *state;
    nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

/* ---- helpers -------------------------------------------------------------------------- */

static svc_audit *open_ok(const char *path, unsigned *aborted) {
    char err[256] = "";
    svc_audit *a = svc_audit_open(path, aborted, err, sizeof err);
    if (!a) fail_msg("svc_audit_open: %s", err);
    return a;
}

static int64_t begin(svc_audit *a, const char *token, const char *session, const char *kind) {
    svc_audit_start s = {
        .token = token,
        .session = session,
        .kind = kind,
        .backend = "wasm",
        .policy_json = "{\"fuel\":1000}",
        .code_sha256 = "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
        .limits_json = "{\"timeout_ms\":30000}",
        .source = "http",
    };
    int64_t id = svc_audit_begin(a, &s);
    assert_true(id > 0);
    return id;
}

static bool end_with(svc_audit *a, int64_t id, al_status status, int exit_code) {
    al_result r = {.status = status, .exit_code = exit_code, .wall_ns = 12500000,
                   .cpu_ns = 3000000, .peak_memory_bytes = 65536, .fuel_used = 777,
                   .denied_syscalls = 2, .limits_hit = AL_LIMIT_WALL | AL_LIMIT_FUEL};
    svc_audit_finish f = {.result = &r, .redactions = 1,
                          .redaction_kinds_json = "[\"aws_access_key\"]", .egress_json = NULL};
    return svc_audit_end(a, id, &f);
}

static json_t *query(const char *path, const svc_audit_filter *f) {
    char err[256] = "";
    json_t *rows = svc_audit_query(path, f, err, sizeof err);
    if (!rows) fail_msg("svc_audit_query: %s", err);
    assert_true(json_is_array(rows));
    return rows;
}

static const char *str(const json_t *row, const char *key) {
    return json_string_value(json_object_get(row, key));
}

static json_int_t num(const json_t *row, const char *key) {
    const json_t *v = json_object_get(row, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

/* A raw connection to the same file, for what audit.c does not expose. */
static sqlite3 *raw(const char *path) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static void raw_exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
}

static void raw_text(sqlite3 *db, const char *sql, char *out, size_t n) {
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* ---- creating ------------------------------------------------------------------------- */

static void test_open_creates_private_wal_db(void **state) {
    fixture *fx = *state;
    mode_t old = umask(022); /* sqlite alone would make it 0644 */
    unsigned aborted = 99;
    svc_audit *a = open_ok(fx->db, &aborted);
    umask(old);
    assert_int_equal(aborted, 0);
    struct stat sb;
    assert_int_equal(stat(fx->db, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    sqlite3 *db = raw(fx->db);
    char v[32];
    raw_text(db, "PRAGMA journal_mode", v, sizeof v);
    assert_string_equal(v, "wal");
    raw_text(db, "PRAGMA user_version", v, sizeof v);
    assert_string_equal(v, "1");
    raw_text(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                 "name IN ('executions_started', 'executions_token', 'executions_status')",
             v, sizeof v);
    assert_string_equal(v, "3");
    sqlite3_close(db);
    svc_audit_close(a);

    /* reopening an existing database is no migration and no abort */
    a = open_ok(fx->db, &aborted);
    assert_int_equal(aborted, 0);
    svc_audit_close(a);
}

static void test_open_needs_existing_directory(void **state) {
    fixture *fx = *state;
    char path[192], err[256] = "";
    snprintf(path, sizeof path, "%s/missing/audit.db", fx->dir);
    assert_null(svc_audit_open(path, NULL, err, sizeof err));
    assert_non_null(strstr(err, "directory does not exist"));
    assert_null(svc_audit_open("", NULL, err, sizeof err));
}

static void test_open_refuses_newer_schema(void **state) {
    fixture *fx = *state;
    svc_audit_close(open_ok(fx->db, NULL));
    sqlite3 *db = raw(fx->db);
    raw_exec(db, "PRAGMA user_version = 99");
    sqlite3_close(db);

    char err[256] = "";
    assert_null(svc_audit_open(fx->db, NULL, err, sizeof err));
    assert_non_null(strstr(err, "schema version 99 is newer"));
    err[0] = 0;
    assert_null(svc_audit_query(fx->db, NULL, err, sizeof err));
    assert_non_null(strstr(err, "schema version 99 is newer"));

    /* and it was not touched: still version 99 */
    db = raw(fx->db);
    char v[32];
    raw_text(db, "PRAGMA user_version", v, sizeof v);
    assert_string_equal(v, "99");
    sqlite3_close(db);
}

static void test_open_refuses_foreign_files(void **state) {
    fixture *fx = *state;
    sqlite3 *db = raw(fx->db);
    raw_exec(db, "CREATE TABLE notes (x TEXT)");
    sqlite3_close(db);
    char err[256] = "";
    assert_null(svc_audit_open(fx->db, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not an airlock audit database"));
    assert_null(svc_audit_query(fx->db, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not an airlock audit database"));

    char junk[192];
    snprintf(junk, sizeof junk, "%s/junk.db", fx->dir);
    FILE *fp = fopen(junk, "w");
    assert_non_null(fp);
    for (int i = 0; i < 64; i++) fputs("this is not sqlite ", fp);
    fclose(fp);
    assert_null(svc_audit_open(junk, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not a database"));

    char link[192];
    snprintf(link, sizeof link, "%s/link.db", fx->dir);
    assert_int_equal(symlink(fx->db, link), 0);
    assert_null(svc_audit_open(link, NULL, err, sizeof err));
    assert_non_null(strstr(err, "symbolic link"));
}

/* ---- writing -------------------------------------------------------------------------- */

static void test_begin_end_row(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t id = begin(a, "alice", "s1", "python");

    json_t *rows = query(fx->db, NULL);
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(num(row, "id"), id);
    assert_string_equal(str(row, "status"), "running");
    assert_true(json_is_null(json_object_get(row, "finished_ms")));
    assert_true(json_is_null(json_object_get(row, "wall_ms")));
    json_decref(rows);

    assert_true(end_with(a, id, AL_STATUS_EXIT, 3));
    assert_false(end_with(a, id, AL_STATUS_OK, 0)); /* finished once only */
    char err[256];
    svc_audit_last_error(a, err, sizeof err);
    assert_non_null(strstr(err, "no unfinished execution"));

    rows = query(fx->db, NULL);
    row = json_array_get(rows, 0);
    assert_string_equal(str(row, "status"), "exit");
    assert_string_equal(str(row, "token"), "alice");
    assert_string_equal(str(row, "session"), "s1");
    assert_string_equal(str(row, "source"), "http");
    assert_string_equal(str(row, "kind"), "python");
    assert_string_equal(str(row, "backend"), "wasm");
    assert_int_equal(strlen(str(row, "code_sha256")), 64);
    assert_int_equal(num(row, "exit_code"), 3);
    assert_int_equal(num(row, "signal"), 0);
    assert_int_equal(num(row, "wall_ms"), 12);
    assert_int_equal(num(row, "cpu_ms"), 3);
    assert_int_equal(num(row, "peak_memory_bytes"), 65536);
    assert_int_equal(num(row, "fuel_used"), 777);
    assert_int_equal(num(row, "denied_syscalls"), 2);
    assert_int_equal(num(row, "redactions"), 1);
    assert_true(num(row, "finished_ms") >= num(row, "started_ms"));
    /* the JSON columns come back parsed */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(row, "policy"), "fuel")),
                     1000);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(row, "limits"), "timeout_ms")), 30000);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(row, "egress"), "denied")),
                     0);
    json_t *hit = json_object_get(row, "limits_hit");
    assert_int_equal(json_array_size(hit), 2);
    assert_string_equal(json_string_value(json_array_get(hit, 0)), "wall");
    assert_string_equal(json_string_value(json_array_get(hit, 1)), "fuel");
    json_t *kinds = json_object_get(row, "redaction_kinds");
    assert_string_equal(json_string_value(json_array_get(kinds, 0)), "aws_access_key");
    assert_true(json_is_null(json_object_get(row, "abort_reason")));
    assert_true(json_is_null(json_object_get(row, "error_message")));
    json_decref(rows);
    svc_audit_close(a);
}

static void test_error_message_and_null_fields(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    svc_audit_start s = {.kind = "command", .backend = "native", .policy_json = "{not json"};
    int64_t id = svc_audit_begin(a, &s);
    assert_true(id > 0);
    al_result r = {.status = AL_STATUS_SIGNALED, .term_signal = 9, .egress_denied = 4};
    snprintf(r.error.message, sizeof r.error.message, "killed by signal 9");
    snprintf(r.execution_id, sizeof r.execution_id, "al-1-2-3");
    svc_audit_finish f = {.result = &r};
    assert_true(svc_audit_end(a, id, &f));
    assert_false(svc_audit_end(a, id, NULL));
    assert_false(svc_audit_end(a, 424242, &f));

    json_t *rows = query(fx->db, NULL);
    json_t *row = json_array_get(rows, 0);
    assert_string_equal(str(row, "status"), "signaled");
    assert_int_equal(num(row, "signal"), 9);
    assert_string_equal(str(row, "token"), ""); /* NULL strings are stored as "" */
    assert_string_equal(str(row, "policy"), "{not json"); /* unparsable: kept as text */
    assert_true(json_is_null(json_object_get(row, "limits")));
    assert_string_equal(str(row, "error_message"), "killed by signal 9");
    assert_string_equal(str(row, "execution_id"), "al-1-2-3");
    /* without egress_json, the result's own counts */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(row, "egress"), "denied")),
                     4);
    assert_int_equal(json_array_size(json_object_get(row, "limits_hit")), 0);
    assert_int_equal(json_array_size(json_object_get(row, "redaction_kinds")), 0);
    json_decref(rows);
    svc_audit_close(a);
}

static void test_abort(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t done = begin(a, "t", "", "python");
    assert_true(end_with(a, done, AL_STATUS_OK, 0));
    assert_false(svc_audit_abort(a, done, "shutdown")); /* already finished */
    assert_false(svc_audit_abort(a, 999, "shutdown"));  /* no such row */

    int64_t id = begin(a, "t", "", "python");
    assert_true(svc_audit_abort(a, id, "airlockd shutting down: drain deadline passed"));
    assert_false(svc_audit_abort(a, id, "again"));
    /* the cancelled execution still reports: its figures are kept, the status stays */
    assert_true(end_with(a, id, AL_STATUS_TIMEOUT, 0));

    svc_audit_filter f = {.status = "aborted"};
    json_t *rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(num(row, "id"), id);
    assert_string_equal(str(row, "abort_reason"), "airlockd shutting down: drain deadline passed");
    assert_int_equal(num(row, "wall_ms"), 12);
    assert_true(json_is_integer(json_object_get(row, "finished_ms")));
    json_decref(rows);
    svc_audit_close(a);
}

/* kill -9 of the daemon: rows it left running are aborted by the next open. */
static void test_reopen_aborts_running(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t finished = begin(a, "t", "", "python");
    assert_true(end_with(a, finished, AL_STATUS_OK, 0));
    int64_t running = begin(a, "t", "", "python");
    svc_audit_close(a); /* no end: as if the daemon died */

    unsigned aborted = 0;
    a = open_ok(fx->db, &aborted);
    assert_int_equal(aborted, 1);
    svc_audit_filter f = {.status = "aborted"};
    json_t *rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(num(row, "id"), running);
    assert_string_equal(str(row, "abort_reason"),
                        "airlockd stopped before the execution finished (crash or kill)");
    assert_true(num(row, "finished_ms") >= num(row, "started_ms"));
    json_decref(rows);
    f.status = "ok";
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1); /* the finished one is untouched */
    json_decref(rows);
    svc_audit_close(a);

    a = open_ok(fx->db, &aborted);
    assert_int_equal(aborted, 0);
    svc_audit_close(a);
}

/* audit.retention: finished rows before the cut-off go, running ones stay. */
static void test_prune(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t old_done = begin(a, "t", "", "python");
    assert_true(end_with(a, old_done, AL_STATUS_OK, 0));
    int64_t old_running = begin(a, "t", "", "python");
    int64_t recent = begin(a, "t", "", "python");
    assert_true(end_with(a, recent, AL_STATUS_OK, 0));
    sqlite3 *db = raw(fx->db);
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE executions SET started_ms = 1000 WHERE id IN (%lld, %lld)",
             (long long)old_done, (long long)old_running);
    raw_exec(db, sql);
    sqlite3_close(db);

    assert_int_equal(svc_audit_prune(a, 0), 0);      /* no cut-off: nothing */
    assert_int_equal(svc_audit_prune(a, 2000), 1);   /* the old finished row only */
    assert_int_equal(svc_audit_prune(a, 2000), 0);   /* idempotent */
    svc_audit_filter f = {.limit = 100};
    json_t *rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 2);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) assert_true(num(row, "id") != old_done);
    json_decref(rows);
    svc_audit_close(a);
}

/* ---- reading -------------------------------------------------------------------------- */

static void test_query_filters(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t ids[5];
    ids[0] = begin(a, "alice", "s1", "python");
    ids[1] = begin(a, "bob", "", "command");
    ids[2] = begin(a, "alice", "s2", "python");
    ids[3] = begin(a, "alice", "s1", "wasm");
    ids[4] = begin(a, "carol", "", "python");
    assert_true(end_with(a, ids[0], AL_STATUS_OK, 0));
    assert_true(end_with(a, ids[1], AL_STATUS_TIMEOUT, 0));
    assert_true(end_with(a, ids[2], AL_STATUS_OK, 0));
    /* started_ms 1000, 2000, ... 5000 */
    sqlite3 *db = raw(fx->db);
    raw_exec(db, "UPDATE executions SET started_ms = id * 1000");
    sqlite3_close(db);

    json_t *rows = query(fx->db, NULL); /* newest first */
    assert_int_equal(json_array_size(rows), 5);
    for (size_t i = 0; i < 5; i++) assert_int_equal(num(json_array_get(rows, i), "id"), ids[4 - i]);
    json_decref(rows);

    svc_audit_filter f = {.token = "alice"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 3);
    json_decref(rows);

    f = (svc_audit_filter){.token = "alice", .session = "s1"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 2);
    assert_int_equal(num(json_array_get(rows, 0), "id"), ids[3]);
    json_decref(rows);

    f = (svc_audit_filter){.status = "running"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 2);
    json_decref(rows);

    f = (svc_audit_filter){.status = "timeout", .token = "bob"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);

    f = (svc_audit_filter){.since_unix_ms = 2000, .until_unix_ms = 4000}; /* inclusive */
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 3);
    assert_int_equal(num(json_array_get(rows, 0), "started_ms"), 4000);
    assert_int_equal(num(json_array_get(rows, 2), "started_ms"), 2000);
    json_decref(rows);

    f = (svc_audit_filter){.since_unix_ms = 4001};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);

    f = (svc_audit_filter){.limit = 2};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 2);
    assert_int_equal(num(json_array_get(rows, 1), "id"), ids[3]);
    json_decref(rows);

    f = (svc_audit_filter){.token = "nobody"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 0);
    json_decref(rows);
    svc_audit_close(a);
}

static void test_query_default_and_max_limit(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    sqlite3 *db = raw(fx->db);
    raw_exec(db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10050)"
                 " INSERT INTO executions (started_ms, status) SELECT i, 'ok' FROM n");
    sqlite3_close(db);
    json_t *rows = query(fx->db, NULL);
    assert_int_equal(json_array_size(rows), 100);
    json_decref(rows);
    svc_audit_filter f = {.limit = 50000};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 10000);
    json_decref(rows);
    svc_audit_close(a);
}

static void test_injection_stored_literally(void **state) {
    fixture *fx = *state;
    static const char evil[] = "x'); DROP TABLE executions; --";
    static const char evil2[] = "\" OR 1=1 --";
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t id = begin(a, evil, evil2, "python");
    begin(a, "honest", "", "python");
    assert_true(end_with(a, id, AL_STATUS_OK, 0));
    assert_true(svc_audit_abort(a, id + 1, evil));

    svc_audit_filter f = {.token = evil};
    json_t *rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    assert_string_equal(str(json_array_get(rows, 0), "token"), evil);
    assert_string_equal(str(json_array_get(rows, 0), "session"), evil2);
    json_decref(rows);
    f = (svc_audit_filter){.session = evil2};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    f = (svc_audit_filter){.token = "' OR '1'='1"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 0);
    json_decref(rows);
    rows = query(fx->db, NULL); /* the table is still there, with both rows */
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(str(json_array_get(rows, 0), "abort_reason"), evil);
    json_decref(rows);
    svc_audit_close(a);
}

/* A reader is never blocked by a writer in WAL mode: it sees what is committed. */
static void test_query_while_writer_holds_db(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    int64_t id = begin(a, "t", "", "python");

    sqlite3 *writer = raw(fx->db);
    raw_exec(writer, "BEGIN IMMEDIATE");
    raw_exec(writer, "INSERT INTO executions (started_ms, status) VALUES (1, 'ok')");
    json_t *rows = query(fx->db, NULL); /* mid-transaction */
    assert_int_equal(json_array_size(rows), 1);
    assert_int_equal(num(json_array_get(rows, 0), "id"), id);
    json_decref(rows);
    raw_exec(writer, "COMMIT");
    sqlite3_close(writer);

    rows = query(fx->db, NULL);
    assert_int_equal(json_array_size(rows), 2);
    json_decref(rows);

    /* the reader changes nothing: the running row stays running */
    svc_audit_filter f = {.status = "running"};
    rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    svc_audit_close(a);
}

static void test_query_missing_db(void **state) {
    fixture *fx = *state;
    char path[192], err[256] = "";
    snprintf(path, sizeof path, "%s/nope.db", fx->dir);
    assert_null(svc_audit_query(path, NULL, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(access(path, F_OK), -1); /* and not created */
    /* an empty file is not an audit database either */
    FILE *fp = fopen(path, "w");
    fclose(fp);
    assert_null(svc_audit_query(path, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not an airlock audit database"));
}

/* ---- threads -------------------------------------------------------------------------- */

typedef struct worker_arg {
    svc_audit *a;
    int failures;
} worker_arg;

static void *worker(void *p) {
    worker_arg *w = p;
    for (int i = 0; i < 50; i++) {
        svc_audit_start s = {.token = "w", .kind = "python", .backend = "wasm"};
        int64_t id = svc_audit_begin(w->a, &s);
        al_result r = {.status = AL_STATUS_OK};
        svc_audit_finish f = {.result = &r};
        if (id <= 0 || !svc_audit_end(w->a, id, &f)) w->failures++;
    }
    return NULL;
}

static void test_concurrent_writers(void **state) {
    fixture *fx = *state;
    svc_audit *a = open_ok(fx->db, NULL);
    pthread_t t[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){.a = a};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    svc_audit_filter f = {.status = "ok", .limit = 1000};
    json_t *rows = query(fx->db, &f);
    assert_int_equal(json_array_size(rows), 200);
    json_decref(rows);
    svc_audit_close(a);
}

/* ---- the default state directory ------------------------------------------------------ */

static void test_default_state_dir(void **state) {
    char dir[256];
    char *saved = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
    setenv("XDG_STATE_HOME", "/srv/state", 1);
    assert_true(svc_default_state_dir(dir, sizeof dir));
    if (geteuid() == 0) assert_string_equal(dir, "/var/lib/airlock");
    else assert_string_equal(dir, "/srv/state/airlock");
    setenv("XDG_STATE_HOME", "relative/ignored", 1);
    assert_true(svc_default_state_dir(dir, sizeof dir));
    if (geteuid() != 0) assert_non_null(strstr(dir, "/.local/state/airlock"));
    assert_false(svc_default_state_dir(dir, 4)); /* does not fit */
    if (saved) setenv("XDG_STATE_HOME", saved, 1);
    else unsetenv("XDG_STATE_HOME");
    free(saved);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_private_wal_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_needs_existing_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_foreign_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_begin_end_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_message_and_null_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_aborts_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_default_and_max_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_injection_stored_literally, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_while_writer_holds_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_missing_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
        cmocka_unit_test(test_default_state_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
