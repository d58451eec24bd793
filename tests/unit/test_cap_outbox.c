/*
 * test_cap_outbox.c — unit tests of the publication outbox
 * (src/cap/publisher.c) with a registry that cannot be reached (a closed
 * port on loopback: connection refused at once, no timing involved):
 * events are stored before any push and stay queued with their error,
 * duplicates are one event, tags are immutable, a composite's DAG is
 * canonicalised before hashing, backoff doubles, a claimed event is left
 * alone, and the database is private and survives reopening.
 * The real registry is exercised end to end by tests/cap/run.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cap.h"

#define CLOSED "http://127.0.0.1:1"

static const uint8_t wasm_a[] = {0, 'a', 's', 'm', 1, 0, 0, 0};
static const uint8_t wasm_b[] = {0, 'a', 's', 'm', 1, 0, 0, 0, 0, 0};

typedef struct fixture {
    char dir[64];
    char db[128];
    al_publisher *p;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    strcpy(f->dir, "/tmp/test_cap_outbox.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/outbox.db", f->dir);
    al_registry r = {.url = CLOSED, .timeout_ms = 5000};
    al_error err;
    f->p = al_publisher_open(f->db, &r, &err);
    if (!f->p) fail_msg("open: %s", err.message);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    al_publisher_close(f->p);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One integer from the outbox, read with a connection of our own. */
static int64_t query_int(const fixture *f, const char *sql) {
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static bool publish(fixture *f, const char *name, const char *version, const uint8_t *wasm,
                    size_t len, const char *manifest, const char *dag, al_publish_receipt *rc,
                    al_error *err) {
    al_publish_request rq = {.name = name, .version = version, .wasm = wasm, .wasm_len = len,
                             .manifest_json = manifest, .dag_json = dag};
    return al_publish(f->p, &rq, rc, err);
}

static void test_queued_when_unreachable(void **state) {
    fixture *f = *state;
    al_publish_receipt rc;
    al_error err;
    int64_t before = now_ms();
    assert_true(publish(f, "acme/count", "1.0", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(rc.pushed);
    assert_false(rc.duplicate);
    assert_string_equal(rc.urn, "urn:airlock:cap:acme/count:1.0");
    char d[CAP_DIGEST_SIZE];
    assert_true(cap_sha256_digest(wasm_a, sizeof wasm_a, d));
    assert_string_equal(rc.digest, d);
    assert_string_equal(rc.manifest_digest, "");
    assert_true(rc.event_id > 0);
    assert_non_null(strstr(rc.last_error, "unreachable"));
    /* stored, with the attempt counted and the next one a second later */
    assert_int_equal(query_int(f, "SELECT COUNT(*) FROM promotion_events WHERE state='pending'"), 1);
    assert_int_equal(query_int(f, "SELECT attempts FROM promotion_events"), 1);
    int64_t next = query_int(f, "SELECT next_attempt_at FROM promotion_events");
    assert_true(next >= before + 1000 && next <= now_ms() + 1000);
    assert_int_equal(query_int(f, "SELECT length(payload) FROM promotion_events"), sizeof wasm_a);
}

static void test_duplicate_and_immutable(void **state) {
    fixture *f = *state;
    al_publish_receipt rc1, rc2;
    al_error err;
    assert_true(publish(f, "acme/count", "1.0", wasm_a, sizeof wasm_a, NULL, NULL, &rc1, &err));
    assert_true(publish(f, "acme/count", "1.0", wasm_a, sizeof wasm_a, NULL, NULL, &rc2, &err));
    assert_true(rc2.duplicate);
    assert_int_equal(rc1.event_id, rc2.event_id);
    assert_int_equal(query_int(f, "SELECT COUNT(*) FROM promotion_events"), 1);
    /* another digest under the same tag: refused, nothing stored */
    assert_false(publish(f, "acme/count", "1.0", wasm_b, sizeof wasm_b, NULL, NULL, &rc2, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "immutable"));
    /* the same module with another manifest: refused too */
    assert_false(publish(f, "acme/count", "1.0", wasm_a, sizeof wasm_a, "{\"config\":{}}", NULL,
                         &rc2, &err));
    assert_int_equal(query_int(f, "SELECT COUNT(*) FROM promotion_events"), 1);
    /* a new version is a new event */
    assert_true(publish(f, "acme/count", "1.1", wasm_b, sizeof wasm_b, NULL, NULL, &rc2, &err));
    assert_false(rc2.duplicate);
    assert_true(rc2.event_id != rc1.event_id);
}

static void test_dag_canonical(void **state) {
    fixture *f = *state;
    al_publish_receipt rc1, rc2;
    al_error err;
    const char *dag1 = "{\"nodes\": [\"urn:airlock:cap:a:1\", \"urn:airlock:cap:b:1\"],\n"
                       " \"edges\": [[0, 1]]}";
    const char *dag2 = "{\"edges\":[[0,1]],\"nodes\":[\"urn:airlock:cap:a:1\","
                       "\"urn:airlock:cap:b:1\"]}";
    assert_true(publish(f, "acme/pipeline", "1", NULL, 0, NULL, dag1, &rc1, &err));
    assert_true(publish(f, "acme/pipeline", "1", NULL, 0, NULL, dag2, &rc2, &err));
    assert_true(rc2.duplicate);
    char d[CAP_DIGEST_SIZE];
    assert_true(cap_sha256_digest((const uint8_t *)dag2, strlen(dag2), d));
    assert_string_equal(rc1.digest, d); /* the digest of the canonical form */
    assert_int_equal(query_int(f, "SELECT kind = 'composite' FROM promotion_events"), 1);
}

static void test_refused_requests(void **state) {
    fixture *f = *state;
    al_publish_receipt rc;
    al_error err;
    static const uint8_t not_wasm[] = "#!/bin/sh\necho hi\n";
    assert_false(publish(f, "Acme", "1", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(publish(f, "../x", "1", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", "1/2", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", "", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", NULL, wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", "1", NULL, 0, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", "1", wasm_a, sizeof wasm_a, NULL, "{}", &rc, &err));
    assert_false(publish(f, "a", "1", not_wasm, sizeof not_wasm, NULL, NULL, &rc, &err));
    assert_false(publish(f, "a", "1", wasm_a, sizeof wasm_a, "[1]", NULL, &rc, &err));
    assert_false(publish(f, "a", "1", wasm_a, sizeof wasm_a, "{\"a\":1,\"a\":2}", NULL, &rc,
                         &err));
    assert_false(publish(f, "a", "1", NULL, 0, NULL, "[\"not an object\"]", &rc, &err));
    assert_false(publish(f, "a", "1", NULL, 0, NULL, "{", &rc, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_int_equal(query_int(f, "SELECT COUNT(*) FROM promotion_events"), 0);
}

static void test_backoff_doubles(void **state) {
    fixture *f = *state;
    al_publish_receipt rc;
    al_error err;
    unsigned pushed = 9, pending = 9;
    assert_true(publish(f, "a", "1", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    /* not due yet: nothing attempted */
    assert_true(al_publisher_retry(f->p, false, &pushed, &pending, &err));
    assert_int_equal(pushed, 0);
    assert_int_equal(pending, 1);
    assert_int_equal(query_int(f, "SELECT attempts FROM promotion_events"), 1);
    for (int64_t attempt = 2; attempt <= 4; attempt++) {
        int64_t before = now_ms();
        assert_true(al_publisher_retry(f->p, true, &pushed, &pending, &err));
        assert_int_equal(pushed, 0);
        assert_int_equal(pending, 1);
        assert_int_equal(query_int(f, "SELECT attempts FROM promotion_events"), attempt);
        int64_t delay = query_int(f, "SELECT next_attempt_at FROM promotion_events") - before;
        int64_t want = INT64_C(1000) << (attempt - 1);
        assert_true(delay >= want && delay <= want + 1000);
    }
}

static void test_claimed_event_left_alone(void **state) {
    fixture *f = *state;
    al_publish_receipt rc;
    al_error err;
    assert_true(publish(f, "a", "1", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    /* another pusher holds the claim on this event */
    char claims[160];
    snprintf(claims, sizeof claims, "%s-claims", f->db);
    int fd = open(claims, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = rc.event_id,
                       .l_len = 1};
    assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
    unsigned pushed, pending;
    assert_true(al_publisher_retry(f->p, true, &pushed, &pending, &err));
    assert_int_equal(pending, 1);
    assert_int_equal(query_int(f, "SELECT attempts FROM promotion_events"), 1);
    /* released (as the kernel does when the holder dies): attempted again */
    close(fd);
    assert_true(al_publisher_retry(f->p, true, &pushed, &pending, &err));
    assert_int_equal(query_int(f, "SELECT attempts FROM promotion_events"), 2);
}

static void test_durable_and_private(void **state) {
    fixture *f = *state;
    al_publish_receipt rc;
    al_error err;
    assert_true(publish(f, "a", "1", wasm_a, sizeof wasm_a, NULL, NULL, &rc, &err));
    al_publisher_close(f->p);
    struct stat st;
    assert_int_equal(stat(f->db, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(query_int(f, "SELECT COUNT(*) FROM promotion_events"), 1);
    al_registry r = {.url = CLOSED "/"}; /* the same registry, spelt with a slash */
    f->p = al_publisher_open(f->db, &r, &err);
    assert_non_null(f->p);
    unsigned pushed, pending;
    assert_true(al_publisher_retry(f->p, false, &pushed, &pending, &err));
    assert_int_equal(pending, 1);
    /* another registry has its own events */
    al_publisher *other;
    al_registry r2 = {.url = "http://127.0.0.1:2"};
    other = al_publisher_open(f->db, &r2, &err);
    assert_non_null(other);
    assert_true(al_publisher_retry(other, true, &pushed, &pending, &err));
    assert_int_equal(pending, 0);
    al_publisher_close(other);
    /* a WAL database */
    sqlite3 *db;
    sqlite3_stmt *st2;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st2, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st2), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st2, 0), "wal");
    sqlite3_finalize(st2);
    sqlite3_close(db);
}

static void test_newer_schema_refused(void **state) {
    fixture *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/newer.db", f->dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    al_registry r = {.url = CLOSED};
    al_error err;
    assert_null(al_publisher_open(path, &r, &err));
    assert_int_equal(err.kind, AL_ERR_UNSUPPORTED);
    assert_null(al_publisher_open(NULL, &r, &err));
    al_registry bad = {.url = "http://x/path"};
    assert_null(al_publisher_open(path, &bad, &err));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queued_when_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_and_immutable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dag_canonical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff_doubles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claimed_event_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable_and_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
