/*
 * publisher.c — publication of capabilities with no data loss:
 * al_publisher_open/close, al_publish, al_publisher_retry.
 *
 * A promotion event (registry, name, version, kind, digest of the payload,
 * the payload — the module, or the composite's DAG as canonical JSON —,
 * the plugin manifest stored as OCI config, a random event id, the time) is
 * a row of a SQLite outbox. Its life: pending -> pushed, or pending ->
 * conflict (the registry's tag carries another capability; never retried).
 *
 * Invariants:
 * - Store before send: the row is committed (WAL, synchronous=FULL: the
 *   commit is on disk; a new outbox's directory is fsync'ed once too)
 *   before the first byte goes to the registry, so a
 *   crash or kill -9 at any later point loses nothing; the next
 *   al_publisher_retry (or the same al_publish) pushes it.
 * - Tags are immutable: (registry, name, version) is unique. Publishing
 *   the same digest and manifest again returns the same event (duplicate);
 *   a different digest or manifest under a published name:version is
 *   refused (publish a new version instead). Rationale: a URN by tag must
 *   keep meaning what an agent reviewed.
 * - Exactly once towards the registry: the manifest airlock pushes is a pure
 *   function of the event (canonical JSON, manifest.c), so before pushing
 *   the tag is looked up (HEAD): if it already carries this manifest — the
 *   crash after the push and before the row was marked — or a manifest with
 *   the same layer and config, the row is marked pushed with no new PUT. If
 *   it carries anything else, the event is a conflict and nothing is
 *   overwritten.
 * - One pusher per event, across threads and processes: before pushing,
 *   a publisher takes an open-file-description lock (F_OFD_SETLK) on byte
 *   <id> of DB-claims and then, in an IMMEDIATE transaction, re-reads the
 *   row (still pending?) and counts the attempt. The kernel drops the lock
 *   when its holder dies, so a kill -9 never leaves an event claimed (no
 *   lease to expire, no pid to guess). An event claimed elsewhere is skipped.
 * - Backoff: after a failed attempt n, next_attempt_at = now + min(2^(n-1) s,
 *   5 min); al_publisher_retry takes only due events unless forced.
 * - The outbox is local state (0600) but still read defensively: names,
 *   tags and digests read back are grammar-checked again before they reach
 *   a URL, text columns are copied with bounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "cap.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 10000
#define BACKOFF_MIN_MS INT64_C(1000)
#define BACKOFF_MAX_MS INT64_C(300000)
#define PATH_MAX_LEN 4096

struct al_publisher {
    sqlite3 *db;
    int claims_fd;      /* DB-claims: byte <id> locked while event id is being pushed */
    cap_client client;
};

static const char schema_sql[] =
    "CREATE TABLE promotion_events ("
    " id INTEGER PRIMARY KEY,"
    " event TEXT NOT NULL UNIQUE,"
    " registry TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " version TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('module', 'composite')),"
    " digest TEXT NOT NULL,"
    " payload BLOB NOT NULL,"
    " config BLOB NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " created TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('pending', 'pushed', 'conflict')),"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " next_attempt_at INTEGER NOT NULL,"
    " last_error TEXT NOT NULL DEFAULT '',"
    " manifest_digest TEXT NOT NULL DEFAULT '',"
    " pushed_at INTEGER,"
    " UNIQUE (registry, name, version));"
    "CREATE INDEX promotion_events_due ON promotion_events (registry, state, next_attempt_at);"
    "PRAGMA user_version = 1;";

/* One event as read back from the outbox; payload and config owned. */
typedef struct event_row {
    int64_t id;
    char event[40];
    char name[CAP_NAME_MAX + 1];
    char version[CAP_TAG_MAX + 1];
    bool composite;
    char digest[CAP_DIGEST_SIZE];
    uint8_t *payload;
    size_t payload_len;
    uint8_t *config;
    size_t config_len;
    char created[40];
    char state[16];
    int64_t attempts;
    char last_error[256];
    char manifest_digest[CAP_DIGEST_SIZE];
} event_row;

static void row_free(event_row *r) {
    free(r->payload);
    free(r->config);
    r->payload = r->config = NULL;
}

/* ---- small helpers ------------------------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void rfc3339(int64_t ms, char out[40]) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool random_event_id(char out[40]) {
    uint8_t b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof b; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
    return true;
}

static int64_t backoff_ms(int64_t attempts) {
    if (attempts < 1) attempts = 1;
    if (attempts > 20) return BACKOFF_MAX_MS;
    int64_t d = BACKOFF_MIN_MS << (attempts - 1);
    return d > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d;
}

static void db_error(al_error *err, sqlite3 *db, const char *what) {
    al_error_set(err, AL_ERR_SYSTEM, "outbox: %s: %s", what, db ? sqlite3_errmsg(db) : "no database");
}

static bool exec_sql(sqlite3 *db, const char *sql, al_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return true;
    al_error_set(err, AL_ERR_SYSTEM, "outbox: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return false;
}

static void rollback(sqlite3 *db) { sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); }

/* Copy a text column into out; false when NULL-less length does not fit. */
static bool col_text(sqlite3_stmt *st, int col, char *out, size_t outlen) {
    const unsigned char *s = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);
    out[0] = '\0';
    if (!s) return n == 0;
    if (n < 0 || (size_t)n >= outlen || memchr(s, '\0', (size_t)n)) return false;
    memcpy(out, s, (size_t)n);
    out[n] = '\0';
    return true;
}

static bool col_blob(sqlite3_stmt *st, int col, uint8_t **out, size_t *len) {
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    *out = NULL;
    *len = 0;
    if (n < 0) return false;
    *out = malloc(n ? (size_t)n : 1);
    if (!*out) return false;
    if (n) memcpy(*out, p, (size_t)n);
    *len = (size_t)n;
    return true;
}

/* ---- open / close --------------------------------------------------------------------------------- */

/* Create the file 0600 ourselves (SQLite would follow the umask): it holds
 * unpublished modules. O_NOFOLLOW: a symlink planted at the path must not
 * redirect the outbox. */
static int open_private(const char *path) {
    return open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* After the outbox was created: make its directory entries (database, WAL,
 * shared memory) durable too, so a power loss cannot lose the whole file.
 * Best effort: the commits themselves are already synced. */
static void sync_parent_dir(const char *path) {
    char dir[PATH_MAX_LEN];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

static bool init_schema(sqlite3 *db, al_error *err) {
    if (!exec_sql(db, "BEGIN IMMEDIATE", err)) return false;
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    bool ok = true;
    if (version == 0) {
        ok = exec_sql(db, schema_sql, err);
    } else if (version != SCHEMA_VERSION) {
        al_error_set(err, AL_ERR_UNSUPPORTED, "outbox: schema version %d, this airlock knows %d",
                     version, SCHEMA_VERSION);
        ok = false;
    }
    if (ok) return exec_sql(db, "COMMIT", err);
    rollback(db);
    return false;
}

static bool configure_db(sqlite3 *db, al_error *err) {
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_stmt *st = NULL;
    bool wal = false;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *mode = sqlite3_column_text(st, 0);
        wal = mode && !strcmp((const char *)mode, "wal");
    }
    sqlite3_finalize(st);
    if (!wal) {
        db_error(err, db, "cannot switch to WAL mode");
        return false;
    }
    return exec_sql(db, "PRAGMA synchronous=FULL", err) && init_schema(db, err);
}

al_publisher *al_publisher_open(const char *db_path, const al_registry *registry, al_error *err) {
    if (!db_path || !db_path[0] || strlen(db_path) > PATH_MAX_LEN - 16) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_publisher_open: no (or too long a) database path");
        return NULL;
    }
    al_publisher *p = calloc(1, sizeof *p);
    if (!p) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    p->claims_fd = -1;
    char dir[PATH_MAX_LEN];
    snprintf(dir, sizeof dir, "%s", db_path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (!cap_make_dirs(dir)) {
            al_error_set(err, AL_ERR_SYSTEM, "outbox directory %s: %s", dir, strerror(errno));
            free(p);
            return NULL;
        }
    }
    if (!cap_client_init(&p->client, registry, err)) {
        free(p);
        return NULL;
    }
    char claims[PATH_MAX_LEN];
    snprintf(claims, sizeof claims, "%s-claims", db_path);
    int fd = open_private(db_path);
    if (fd < 0 || (p->claims_fd = open_private(claims)) < 0) {
        al_error_set(err, AL_ERR_SYSTEM, "outbox %s: %s", fd < 0 ? db_path : claims,
                     strerror(errno));
        if (fd >= 0) close(fd);
        al_publisher_close(p);
        return NULL;
    }
    struct stat st;
    bool created = fstat(fd, &st) == 0 && st.st_size == 0;
    close(fd);
    if (sqlite3_open_v2(db_path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        db_error(err, p->db, db_path);
        al_publisher_close(p);
        return NULL;
    }
    if (!configure_db(p->db, err)) {
        al_publisher_close(p);
        return NULL;
    }
    if (created) sync_parent_dir(db_path);
    return p;
}

void al_publisher_close(al_publisher *p) {
    if (!p) return;
    if (p->db) sqlite3_close(p->db);
    if (p->claims_fd >= 0) close(p->claims_fd);
    cap_client_fini(&p->client);
    free(p);
}

/* ---- claims --------------------------------------------------------------------------------------- */

static bool claim_lock(const al_publisher *p, int64_t id, bool lock) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = lock ? F_WRLCK : F_UNLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)id;
    fl.l_len = 1;
    return fcntl(p->claims_fd, F_OFD_SETLK, &fl) == 0;
}

/* ---- rows ------------------------------------------------------------------------------------------ */

static const char row_columns[] =
    "id, event, name, version, kind, digest, payload, config, created, state, attempts, "
    "last_error, manifest_digest";

static bool read_row(sqlite3_stmt *st, event_row *r) {
    char kind[16];
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    bool ok = col_text(st, 1, r->event, sizeof r->event) &&
              col_text(st, 2, r->name, sizeof r->name) &&
              col_text(st, 3, r->version, sizeof r->version) && col_text(st, 4, kind, sizeof kind) &&
              col_text(st, 5, r->digest, sizeof r->digest) &&
              col_blob(st, 6, &r->payload, &r->payload_len) &&
              col_blob(st, 7, &r->config, &r->config_len) &&
              col_text(st, 8, r->created, sizeof r->created) &&
              col_text(st, 9, r->state, sizeof r->state) &&
              col_text(st, 11, r->last_error, sizeof r->last_error) &&
              col_text(st, 12, r->manifest_digest, sizeof r->manifest_digest);
    r->attempts = sqlite3_column_int64(st, 10);
    r->composite = !strcmp(kind, "composite");
    /* these reach URLs: check them again, whoever wrote the file */
    ok = ok && cap_name_valid(r->name, strlen(r->name)) &&
         cap_tag_valid(r->version, strlen(r->version)) &&
         cap_digest_valid(r->digest, strlen(r->digest));
    if (!ok) row_free(r);
    return ok;
}

/* The row with this id; *found false when there is none. */
static bool load_row(sqlite3 *db, int64_t id, event_row *r, bool *found, al_error *err) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM promotion_events WHERE id = ?", row_columns);
    sqlite3_stmt *st = NULL;
    *found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(err, db, "prepare");
        return false;
    }
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    if (rc == SQLITE_ROW) {
        *found = true;
        ok = read_row(st, r);
        if (!ok) al_error_set(err, AL_ERR_SYSTEM, "outbox: event %lld is unreadable", (long long)id);
    } else if (!ok) {
        db_error(err, db, "read event");
    }
    sqlite3_finalize(st);
    return ok;
}

/* ---- one push --------------------------------------------------------------------------------------- */

typedef enum push_result { PUSH_FAILED, PUSH_DONE, PUSH_CONFLICT } push_result;

/* The tag exists and is not byte-for-byte our manifest: is it the same
 * capability (same layer and config), pushed by another publisher? */
static push_result compare_existing(const cap_client *c, const event_row *r,
                                    const char *our_manifest_digest, const cap_descriptor *config,
                                    char manifest_digest[CAP_DIGEST_SIZE], al_error *err) {
    cap_buf buf;
    char digest[CAP_DIGEST_SIZE];
    if (!cap_oci_get_manifest(c, r->name, r->version, &buf, digest, err)) return PUSH_FAILED;
    cap_manifest m;
    al_error perr;
    bool same = !strcmp(digest, our_manifest_digest);
    if (!same && cap_manifest_parse((const char *)buf.data, buf.len, &m, &perr))
        same = !strcmp(m.layer.digest, r->digest) && !strcmp(m.config.digest, config->digest) &&
               m.kind == (r->composite ? CAP_LAYER_DAG : CAP_LAYER_WASM);
    cap_buf_free(&buf);
    if (same) {
        memcpy(manifest_digest, digest, CAP_DIGEST_SIZE);
        return PUSH_DONE;
    }
    al_error_set(err, AL_ERR_ARGUMENT,
                 "%s:%s already carries another capability in %s (manifest %s); tags are "
                 "immutable: publish a new version",
                 r->name, r->version, c->base, digest);
    return PUSH_CONFLICT;
}

static push_result push_event(const cap_client *c, const event_row *r,
                              char manifest_digest[CAP_DIGEST_SIZE], al_error *err) {
    cap_manifest_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.config.media_type, sizeof spec.config.media_type, "%s", CAP_MEDIA_CONFIG);
    snprintf(spec.layer.media_type, sizeof spec.layer.media_type, "%s",
             r->composite ? CAP_MEDIA_DAG : CAP_MEDIA_WASM);
    spec.config.size = r->config_len;
    spec.layer.size = r->payload_len;
    memcpy(spec.layer.digest, r->digest, sizeof r->digest);
    if (!cap_sha256_digest(r->config, r->config_len, spec.config.digest)) {
        al_error_set(err, AL_ERR_SYSTEM, "SHA-256 failed");
        return PUSH_FAILED;
    }
    spec.name = r->name;
    spec.version = r->version;
    spec.event = r->event;
    spec.created = r->created;
    spec.digest = r->digest;
    size_t mlen;
    char *manifest = cap_manifest_build(&spec, &mlen, err);
    if (!manifest) return PUSH_FAILED;
    char ours[CAP_DIGEST_SIZE], theirs[CAP_DIGEST_SIZE];
    push_result res = PUSH_FAILED;
    bool exists;
    if (!cap_sha256_digest((const uint8_t *)manifest, mlen, ours)) {
        al_error_set(err, AL_ERR_SYSTEM, "SHA-256 failed");
    } else if (!cap_oci_head_manifest(c, r->name, r->version, &exists, theirs, err)) {
        /* unreachable or refused: stays pending */
    } else if (exists && !strcmp(theirs, ours)) {
        /* pushed before, but the row was not marked (crash): nothing to send */
        memcpy(manifest_digest, ours, sizeof ours);
        res = PUSH_DONE;
    } else if (exists) {
        res = compare_existing(c, r, ours, &spec.config, manifest_digest, err);
    } else if (cap_oci_push_blob(c, r->name, spec.config.digest, r->config, r->config_len, err) &&
               cap_oci_push_blob(c, r->name, r->digest, r->payload, r->payload_len, err) &&
               cap_oci_put_manifest(c, r->name, r->version, manifest, mlen, theirs, err)) {
        if (theirs[0] && strcmp(theirs, ours) != 0) {
            al_error_set(err, AL_ERR_INVALID, "registry stored manifest %s as %s", ours, theirs);
        } else {
            memcpy(manifest_digest, ours, sizeof ours);
            res = PUSH_DONE;
        }
    }
    free(manifest);
    return res;
}

/* ---- claim, push, record ------------------------------------------------------------------------------ */

typedef enum push_outcome {
    OUT_PUSHED,     /* pushed (or found already there) by this call */
    OUT_QUEUED,     /* attempt failed; retried later */
    OUT_CONFLICT,   /* the registry's tag carries another capability */
    OUT_BUSY,       /* another publisher is pushing it right now */
    OUT_SETTLED,    /* no longer pending: done by someone else */
} push_outcome;

static bool record_result(sqlite3 *db, int64_t id, push_result res, int64_t attempts,
                          const char *manifest_digest, const char *msg, al_error *err) {
    const char *sql =
        res == PUSH_DONE
            ? "UPDATE promotion_events SET state = 'pushed', manifest_digest = ?2,"
              " last_error = '', pushed_at = ?3 WHERE id = ?1 AND state = 'pending'"
        : res == PUSH_CONFLICT
            ? "UPDATE promotion_events SET state = 'conflict', last_error = ?4"
              " WHERE id = ?1 AND state = 'pending'"
            : "UPDATE promotion_events SET next_attempt_at = ?5, last_error = ?4"
              " WHERE id = ?1 AND state = 'pending'";
    sqlite3_stmt *st = NULL;
    int64_t now = now_ms();
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(err, db, "prepare");
        return false;
    }
    sqlite3_bind_int64(st, 1, id);
    if (res == PUSH_DONE) {
        sqlite3_bind_text(st, 2, manifest_digest, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
    } else {
        sqlite3_bind_text(st, 4, msg, -1, SQLITE_STATIC);
        if (res == PUSH_FAILED) sqlite3_bind_int64(st, 5, now + backoff_ms(attempts));
    }
    bool ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok) db_error(err, db, "record the push");
    return ok;
}

/* Under the claim lock: re-read the row; if still pending, count the
 * attempt. *r is loaded (owned by the caller) when *pending. */
static bool begin_attempt(sqlite3 *db, int64_t id, event_row *r, bool *pending, al_error *err) {
    bool found = false;
    *pending = false;
    if (!exec_sql(db, "BEGIN IMMEDIATE", err)) return false;
    if (!load_row(db, id, r, &found, err)) {
        rollback(db);
        return false;
    }
    if (found && !strcmp(r->state, "pending")) {
        char sql[128];
        snprintf(sql, sizeof sql,
                 "UPDATE promotion_events SET attempts = attempts + 1 WHERE id = %lld",
                 (long long)id);
        if (!exec_sql(db, sql, err)) {
            row_free(r);
            rollback(db);
            return false;
        }
        r->attempts++;
        *pending = true;
    } else if (found) {
        row_free(r);
    }
    if (!exec_sql(db, "COMMIT", err)) {
        if (*pending) row_free(r);
        *pending = false;
        rollback(db);
        return false;
    }
    return true;
}

/* Claim event id, push it, record what happened. push_err gets the
 * push's failure (for receipts). False only on an outbox failure. */
static bool push_one(al_publisher *p, int64_t id, push_outcome *outcome, al_error *push_err,
                     al_error *err) {
    event_row r;
    bool pending;
    memset(push_err, 0, sizeof *push_err);
    if (!claim_lock(p, id, true)) {
        *outcome = OUT_BUSY;
        return true;
    }
    bool ok = begin_attempt(p->db, id, &r, &pending, err);
    if (ok && !pending) *outcome = OUT_SETTLED;
    if (ok && pending) {
        char manifest_digest[CAP_DIGEST_SIZE] = "";
        push_result res = push_event(&p->client, &r, manifest_digest, push_err);
        ok = record_result(p->db, id, res, r.attempts, manifest_digest, push_err->message, err);
        *outcome = res == PUSH_DONE ? OUT_PUSHED : res == PUSH_CONFLICT ? OUT_CONFLICT : OUT_QUEUED;
        row_free(&r);
    }
    claim_lock(p, id, false);
    return ok;
}

/* ---- al_publish --------------------------------------------------------------------------------------- */

/* A JSON object (duplicate keys refused), no NUL, at most max bytes. */
static json_t *load_object(const char *json, size_t max, const char *what, al_error *err) {
    size_t len = strnlen(json, max + 1);
    if (len > max) {
        al_error_set(err, AL_ERR_LIMIT, "%s is larger than %zu bytes", what, max);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(root)) {
        al_error_set(err, AL_ERR_ARGUMENT, "%s is not a JSON object%s%s", what,
                     root ? "" : ": ", root ? "" : jerr.text);
        json_decref(root);
        return NULL;
    }
    return root;
}

/* The payload of an event: the module as given, or the DAG as canonical
 * JSON (sorted keys, compact) so that equal DAGs have equal digests. */
static bool make_payload(const al_publisher *p, const al_publish_request *rq, uint8_t **owned,
                         const uint8_t **payload, size_t *len, al_error *err) {
    static const uint8_t magic[4] = {0, 'a', 's', 'm'};
    *owned = NULL;
    if ((rq->wasm != NULL) == (rq->dag_json != NULL)) {
        al_error_set(err, AL_ERR_ARGUMENT, "publish: give exactly one of a module and a DAG");
        return false;
    }
    if (rq->wasm) {
        if (rq->wasm_len < 8 || memcmp(rq->wasm, magic, 4) != 0) {
            al_error_set(err, AL_ERR_ARGUMENT, "publish: not a wasm module (no \\0asm header)");
            return false;
        }
        *payload = rq->wasm;
        *len = rq->wasm_len;
    } else {
        json_t *dag = load_object(rq->dag_json, p->client.max_blob_bytes, "the DAG", err);
        if (!dag) return false;
        char *canon = json_dumps(dag, JSON_SORT_KEYS | JSON_COMPACT);
        json_decref(dag);
        if (!canon) {
            al_error_set(err, AL_ERR_NOMEM, "out of memory");
            return false;
        }
        *owned = (uint8_t *)canon;
        *payload = *owned;
        *len = strlen(canon);
    }
    if (*len > p->client.max_blob_bytes) {
        al_error_set(err, AL_ERR_LIMIT,
                     "publish: %zu bytes, more than the %zu a fetch accepts (max_blob_bytes)", *len,
                     p->client.max_blob_bytes);
        free(*owned);
        *owned = NULL;
        return false;
    }
    return true;
}

/* What the event to store is made of. */
typedef struct new_event {
    const char *name, *version;
    bool composite;
    char digest[CAP_DIGEST_SIZE];
    const uint8_t *payload;
    size_t payload_len;
    const char *config;
    size_t config_len;
} new_event;

static bool insert_event(sqlite3 *db, const cap_client *c, const new_event *e, int64_t *id,
                         al_error *err) {
    char event[40], created[40];
    int64_t now = now_ms();
    if (!random_event_id(event)) {
        al_error_set(err, AL_ERR_SYSTEM, "getrandom: %s", strerror(errno));
        return false;
    }
    rfc3339(now, created);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO promotion_events (event, registry, name, version, kind,"
                           " digest, payload, config, created_at, created, state, next_attempt_at)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        db_error(err, db, "prepare");
        return false;
    }
    sqlite3_bind_text(st, 1, event, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->base, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, e->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, e->composite ? "composite" : "module", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, e->digest, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 7, e->payload, e->payload_len, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 8, e->config, e->config_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, now);
    sqlite3_bind_text(st, 10, created, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 11, now);
    bool ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok) {
        db_error(err, db, "store the event");
        return false;
    }
    *id = sqlite3_last_insert_rowid(db);
    return true;
}

/* Store the event, or find the one already stored for (registry, name,
 * version): *duplicate when it has the same digest and config; refused when
 * not. Committed (durably) when this returns true. */
static bool store_event(al_publisher *p, const new_event *e, int64_t *id, bool *duplicate,
                        al_error *err) {
    *duplicate = false;
    if (!exec_sql(p->db, "BEGIN IMMEDIATE", err)) return false;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db,
                           "SELECT id, digest, config FROM promotion_events"
                           " WHERE registry = ? AND name = ? AND version = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        db_error(err, p->db, "prepare");
        rollback(p->db);
        return false;
    }
    sqlite3_bind_text(st, 1, p->client.base, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->version, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    bool ok = true;
    if (rc == SQLITE_ROW) {
        char digest[CAP_DIGEST_SIZE];
        const void *config = sqlite3_column_blob(st, 2);
        int config_len = sqlite3_column_bytes(st, 2);
        *id = sqlite3_column_int64(st, 0);
        if (!col_text(st, 1, digest, sizeof digest) || strcmp(digest, e->digest) != 0) {
            al_error_set(err, AL_ERR_ARGUMENT,
                         "%s:%s was already published with %s; tags are immutable: publish a new "
                         "version",
                         e->name, e->version, digest);
            ok = false;
        } else if ((size_t)config_len != e->config_len ||
                   (config_len && memcmp(config, e->config, e->config_len) != 0)) {
            al_error_set(err, AL_ERR_ARGUMENT,
                         "%s:%s was already published with the same module but another manifest; "
                         "publish a new version",
                         e->name, e->version);
            ok = false;
        } else {
            *duplicate = true;
        }
    } else if (rc != SQLITE_DONE) {
        db_error(err, p->db, "look up the event");
        ok = false;
    }
    sqlite3_finalize(st);
    ok = ok && (*duplicate || insert_event(p->db, &p->client, e, id, err));
    if (ok) return exec_sql(p->db, "COMMIT", err);
    rollback(p->db);
    return false;
}

static void fill_receipt(al_publisher *p, int64_t id, al_publish_receipt *rc) {
    event_row r;
    bool found = false;
    al_error ignored;
    if (!load_row(p->db, id, &r, &found, &ignored) || !found) return;
    rc->pushed = !strcmp(r.state, "pushed");
    snprintf(rc->manifest_digest, sizeof rc->manifest_digest, "%s", r.manifest_digest);
    snprintf(rc->last_error, sizeof rc->last_error, "%s", r.last_error);
    row_free(&r);
}

static bool check_request(const al_publish_request *rq, al_error *err) {
    if (!rq->name || !cap_name_valid(rq->name, strlen(rq->name))) {
        char q[64];
        cap_quote(q, sizeof q, rq->name ? rq->name : "", rq->name ? strlen(rq->name) : 0);
        al_error_set(err, AL_ERR_ARGUMENT, "publish: %s is not a valid capability name", q);
        return false;
    }
    if (!rq->version || !cap_tag_valid(rq->version, strlen(rq->version))) {
        char q[64];
        cap_quote(q, sizeof q, rq->version ? rq->version : "",
                  rq->version ? strlen(rq->version) : 0);
        al_error_set(err, AL_ERR_ARGUMENT, "publish: %s is not a valid version (an OCI tag)", q);
        return false;
    }
    return true;
}

bool al_publish(al_publisher *p, const al_publish_request *rq, al_publish_receipt *rc,
                al_error *err) {
    if (!p || !rq || !rc) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_publish: missing argument");
        return false;
    }
    memset(rc, 0, sizeof *rc);
    if (!check_request(rq, err)) return false;
    uint8_t *owned = NULL;
    new_event e;
    memset(&e, 0, sizeof e);
    e.name = rq->name;
    e.version = rq->version;
    e.composite = rq->wasm == NULL;
    e.config = rq->manifest_json ? rq->manifest_json : "{}";
    json_t *config = load_object(e.config, CAP_MAX_CONFIG_BYTES, "the plugin manifest", err);
    if (!config) return false;
    json_decref(config);
    e.config_len = strlen(e.config);
    if (!make_payload(p, rq, &owned, &e.payload, &e.payload_len, err)) return false;
    bool ok = cap_sha256_digest(e.payload, e.payload_len, e.digest);
    if (!ok) al_error_set(err, AL_ERR_SYSTEM, "SHA-256 failed");
    int64_t id = 0;
    bool duplicate = false;
    ok = ok && store_event(p, &e, &id, &duplicate, err);
    free(owned);
    if (!ok) return false;

    cap_urn_format_tag(rc->urn, sizeof rc->urn, rq->name, rq->version);
    memcpy(rc->digest, e.digest, sizeof e.digest);
    rc->event_id = id;
    rc->duplicate = duplicate;

    /* stored: from here on nothing is lost whatever happens */
    push_outcome outcome;
    al_error push_err;
    if (!push_one(p, id, &outcome, &push_err, err)) return false;
    fill_receipt(p, id, rc);
    if (outcome == OUT_QUEUED && !rc->last_error[0])
        snprintf(rc->last_error, sizeof rc->last_error, "%s", push_err.message);
    if (outcome == OUT_BUSY)
        snprintf(rc->last_error, sizeof rc->last_error,
                 "another publisher is pushing this event now");
    if (outcome == OUT_CONFLICT || (!rc->pushed && outcome == OUT_SETTLED)) {
        /* OUT_SETTLED and not pushed: a conflict recorded earlier */
        al_error_set(err, AL_ERR_ARGUMENT, "%s", rc->last_error);
        return false;
    }
    if (err) memset(err, 0, sizeof *err);
    return true;
}

/* ---- al_publisher_retry ------------------------------------------------------------------------------ */

/* The ids of this registry's pending events that are due. *ids malloc'ed. */
static bool due_events(al_publisher *p, bool force, int64_t **ids, size_t *n, al_error *err) {
    sqlite3_stmt *st = NULL;
    *ids = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(p->db,
                           "SELECT id FROM promotion_events WHERE registry = ? AND state = "
                           "'pending' AND (? OR next_attempt_at <= ?) ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        db_error(err, p->db, "prepare");
        return false;
    }
    sqlite3_bind_text(st, 1, p->client.base, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, force ? 1 : 0);
    sqlite3_bind_int64(st, 3, now_ms());
    size_t cap = 0;
    int rc;
    bool ok = true;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            int64_t *grown = realloc(*ids, ncap * sizeof **ids);
            if (!grown) {
                al_error_set(err, AL_ERR_NOMEM, "out of memory");
                ok = false;
                break;
            }
            *ids = grown;
            cap = ncap;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    if (ok && rc != SQLITE_DONE) {
        db_error(err, p->db, "list due events");
        ok = false;
    }
    sqlite3_finalize(st);
    if (!ok) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return ok;
}

static bool count_pending(al_publisher *p, unsigned *pending, al_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db,
                           "SELECT COUNT(*) FROM promotion_events WHERE registry = ? AND state = "
                           "'pending'",
                           -1, &st, NULL) != SQLITE_OK) {
        db_error(err, p->db, "prepare");
        return false;
    }
    sqlite3_bind_text(st, 1, p->client.base, -1, SQLITE_STATIC);
    bool ok = sqlite3_step(st) == SQLITE_ROW;
    if (ok) *pending = (unsigned)sqlite3_column_int64(st, 0);
    else db_error(err, p->db, "count pending events");
    sqlite3_finalize(st);
    return ok;
}

bool al_publisher_retry(al_publisher *p, bool force, unsigned *pushed, unsigned *pending,
                        al_error *err) {
    unsigned done = 0, still = 0;
    if (pushed) *pushed = 0;
    if (pending) *pending = 0;
    if (!p) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_publisher_retry: no publisher");
        return false;
    }
    int64_t *ids;
    size_t n;
    if (!due_events(p, force, &ids, &n, err)) return false;
    bool ok = true;
    al_error conflict;
    memset(&conflict, 0, sizeof conflict);
    for (size_t i = 0; ok && i < n; i++) {
        push_outcome outcome;
        al_error push_err;
        ok = push_one(p, ids[i], &outcome, &push_err, err);
        if (ok && outcome == OUT_PUSHED) done++;
        if (ok && outcome == OUT_CONFLICT && conflict.kind == AL_OK) conflict = push_err;
    }
    free(ids);
    ok = ok && count_pending(p, &still, err);
    if (pushed) *pushed = done;
    if (pending) *pending = still;
    if (!ok) return false;
    if (conflict.kind != AL_OK) {
        /* every other event was still pushed; the conflict is reported */
        if (err) *err = conflict;
        return false;
    }
    if (err) memset(err, 0, sizeof *err);
    return true;
}
