/*
 * test_svc_config.c — unit tests of src/service/config.c: airlockd's YAML
 * configuration (svc_config_load / svc_config_load_buffer), the defaults,
 * svc_config_copy, token hashing and hex.
 *
 * The bad cases are a table: each changes one thing in an otherwise valid
 * file and names the exact message part expected, position included
 * ("<config>:LINE:COL: key.path: why"), so a message that drifts or points
 * at the wrong place fails here. After every failure the config must hold
 * the defaults and nothing allocated (LeakSanitizer checks the rest).
 * Directories for paths.allowed are made in a fresh temporary directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"

/* ---- helpers ------------------------------------------------------------------ */

static char tmpdir[64];

static int make_tmpdir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_svc_config.XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/data", tmpdir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/models", tmpdir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/file", tmpdir);
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
    char target[256];
    snprintf(target, sizeof target, "%s/models", tmpdir);
    snprintf(p, sizeof p, "%s/link", tmpdir);
    if (symlink(target, p) != 0) return -1;
    return 0;
}

static int remove_tmpdir(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Load text (copied to an exactly-sized heap block, so ASan sees overreads). */
static bool load(const char *text, svc_config *c, char *err, size_t errlen) {
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, text, n);
    err[0] = '\0';
    bool ok = svc_config_load_buffer(copy, n, c, err, errlen);
    free(copy);
    return ok;
}

static void load_ok(const char *text, svc_config *c) {
    char err[512];
    bool ok = load(text, c, err, sizeof err);
    if (!ok) fail_msg("unexpected error: %s", err);
}

/* Field by field (struct padding is not compared). */
static void assert_config_equal(const svc_config *a, const svc_config *b) {
    assert_string_equal(a->unix_socket, b->unix_socket);
    assert_string_equal(a->tcp_host, b->tcp_host);
    assert_int_equal(a->tcp_port, b->tcp_port);
    assert_int_equal(a->unix_requires_token, b->unix_requires_token);
    assert_int_equal(a->memory_bytes, b->memory_bytes);
    assert_int_equal(a->fuel, b->fuel);
    assert_int_equal(a->timeout_ms, b->timeout_ms);
    assert_int_equal(a->max_timeout_ms, b->max_timeout_ms);
    assert_int_equal(a->output_bytes, b->output_bytes);
    assert_int_equal(a->max_body_bytes, b->max_body_bytes);
    assert_int_equal(a->nallowed_paths, b->nallowed_paths);
    for (size_t i = 0; i < a->nallowed_paths; i++) {
        assert_string_equal(a->allowed_paths[i].path, b->allowed_paths[i].path);
        assert_int_equal(a->allowed_paths[i].read_only, b->allowed_paths[i].read_only);
    }
    assert_int_equal(a->allow_native, b->allow_native);
    assert_int_equal(a->allow_gvisor, b->allow_gvisor);
    assert_int_equal(a->session_idle_s, b->session_idle_s);
    assert_int_equal(a->max_sessions, b->max_sessions);
    assert_int_equal(a->session_workspace_bytes, b->session_workspace_bytes);
    assert_int_equal(a->workers, b->workers);
    assert_int_equal(a->queue_max, b->queue_max);
    assert_int_equal(a->python_per_minute, b->python_per_minute);
    assert_int_equal(a->exec_per_minute, b->exec_per_minute);
    assert_int_equal(a->ntokens, b->ntokens);
    for (size_t i = 0; i < a->ntokens; i++) {
        assert_string_equal(a->tokens[i].name, b->tokens[i].name);
        assert_memory_equal(a->tokens[i].sha256, b->tokens[i].sha256, 32);
        assert_int_equal(a->tokens[i].python_per_minute, b->tokens[i].python_per_minute);
        assert_int_equal(a->tokens[i].exec_per_minute, b->tokens[i].exec_per_minute);
    }
    assert_string_equal(a->state_dir, b->state_dir);
    assert_string_equal(a->audit_db, b->audit_db);
    assert_string_equal(a->python_dir, b->python_dir);
    assert_int_equal(a->redact_builtin, b->redact_builtin);
    assert_int_equal(a->nredact_patterns, b->nredact_patterns);
    for (size_t i = 0; i < a->nredact_patterns; i++)
        assert_string_equal(a->redact_patterns[i], b->redact_patterns[i]);
    assert_int_equal(a->nallowed_origins, b->nallowed_origins);
    for (size_t i = 0; i < a->nallowed_origins; i++)
        assert_string_equal(a->allowed_origins[i], b->allowed_origins[i]);
}

/* The config equals the defaults and owns nothing. */
static void assert_defaults(const svc_config *c) {
    svc_config d;
    svc_config_defaults(&d);
    assert_config_equal(c, &d);
    assert_null(c->allowed_paths);
    assert_null(c->tokens);
    assert_null(c->redact_patterns);
    assert_null(c->allowed_origins);
}

static const char *sha_a = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/* ---- defaults, hashing ------------------------------------------------------------ */

static void test_defaults(void **state) {
    (void)state;
    svc_config c;
    svc_config_defaults(&c);
    assert_int_equal(c.memory_bytes, 256u << 20);
    assert_int_equal(c.fuel, 1000000000u);
    assert_int_equal(c.timeout_ms, 30000);
    assert_int_equal(c.max_timeout_ms, 300000);
    assert_int_equal(c.output_bytes, 1u << 20);
    assert_int_equal(c.max_body_bytes, 16u << 20);
    assert_int_equal(c.session_idle_s, 3600);
    assert_int_equal(c.max_sessions, 100);
    assert_int_equal(c.session_workspace_bytes, 64u << 20);
    assert_int_equal(c.workers, 4);
    assert_int_equal(c.queue_max, 64);
    assert_int_equal(c.python_per_minute, 10);
    assert_int_equal(c.exec_per_minute, 60);
    assert_int_equal(c.tcp_port, 7878);
    assert_string_equal(c.tcp_host, "127.0.0.1");
    assert_true(c.unix_requires_token);
    assert_true(c.allow_native);
    assert_true(c.allow_gvisor);
    assert_true(c.redact_builtin);
    assert_null(c.tokens);
    assert_null(c.allowed_paths);
    assert_string_equal(c.python_dir, "");
    assert_true(c.state_dir[0] == '/');
    char want[400];
    snprintf(want, sizeof want, "%s/airlockd.sock", c.state_dir);
    assert_string_equal(c.unix_socket, want);
    snprintf(want, sizeof want, "%s/audit.db", c.state_dir);
    assert_string_equal(c.audit_db, want);
    if (geteuid() == 0) assert_string_equal(c.state_dir, "/var/lib/airlock");
    svc_config_free(&c);
}

static void test_token_hash_hex(void **state) {
    (void)state;
    uint8_t h[32];
    char hex[65];
    svc_token_hash("abc", h);
    svc_hex(h, 32, hex);
    assert_string_equal(hex, sha_a);
    svc_token_hash("", h);
    svc_hex(h, 32, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    svc_hex((const uint8_t *)"\x00\xff", 2, hex);
    assert_string_equal(hex, "00ff");
}

/* ---- good files ---------------------------------------------------------------- */

static void test_empty_and_comments(void **state) {
    (void)state;
    svc_config c;
    load_ok("", &c);
    assert_defaults(&c);
    load_ok("# nothing here\n\n   # at all\n", &c);
    assert_defaults(&c);
    load_ok("---\n", &c);
    assert_defaults(&c);
    load_ok("listen:\nlimits:\ntokens:\n", &c); /* empty sections and lists */
    assert_defaults(&c);
}

static void test_full_file(void **state) {
    (void)state;
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "listen:\n"
             "  unix_socket: /run/airlock/airlockd.sock\n"
             "  tcp_host: \"::1\"\n"
             "  tcp_port: 9000\n"
             "  unix_requires_token: false\n"
             "limits:\n"
             "  memory: 512MiB\n"
             "  fuel: 2000000000\n"
             "  timeout: 1500ms\n"
             "  max_timeout: 10m\n"
             "  output: 2M\n"
             "  max_body: 1048576\n"
             "paths:\n"
             "  allowed:\n"
             "    - %s/data\n"
             "    - \"ro:%s/link\"\n"
             "    - rw:%s/models/../data\n"
             "  state_dir: /srv/airlock-state\n"
             "  python_dir: /opt/airlock/python\n"
             "backends: {native: false, gvisor: true}\n"
             "sessions:\n"
             "  idle_timeout: 2h\n"
             "  max: 7\n"
             "  workspace_bytes: 1G\n"
             "workers:\n"
             "  count: 8\n"
             "  queue: 0\n"
             "rate_limits:\n"
             "  python_per_minute: 30\n"
             "  exec_per_minute: 120\n"
             "tokens:\n"
             "  - name: ci-bot\n"
             "    sha256: %s\n"
             "    python_per_minute: 100\n"
             "  - {name: alice, sha256: \"%s\"}\n"
             "redaction:\n"
             "  builtin: false\n"
             "  patterns: ['secret-[0-9]+', \"tok_[a-z]{8}\"]\n"
             "mcp:\n"
             "  allowed_origins: [\"http://localhost:6274\", \"https://[::1]:8443\"]\n",
             tmpdir, tmpdir, tmpdir, sha_a,
             "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855");
    svc_config c;
    load_ok(yaml, &c);
    assert_string_equal(c.unix_socket, "/run/airlock/airlockd.sock");
    assert_string_equal(c.tcp_host, "::1");
    assert_int_equal(c.tcp_port, 9000);
    assert_false(c.unix_requires_token);
    assert_int_equal(c.memory_bytes, 512u << 20);
    assert_int_equal(c.fuel, 2000000000u);
    assert_int_equal(c.timeout_ms, 1500);
    assert_int_equal(c.max_timeout_ms, 600000);
    assert_int_equal(c.output_bytes, 2u << 20);
    assert_int_equal(c.max_body_bytes, 1048576);
    assert_int_equal(c.nallowed_paths, 3);
    char want[300];
    char *canon = realpath(tmpdir, NULL); /* /tmp may itself be a symlink */
    assert_non_null(canon);
    snprintf(want, sizeof want, "%s/data", canon);
    assert_string_equal(c.allowed_paths[0].path, want);
    assert_false(c.allowed_paths[0].read_only);
    snprintf(want, sizeof want, "%s/models", canon); /* the link, resolved */
    assert_string_equal(c.allowed_paths[1].path, want);
    assert_true(c.allowed_paths[1].read_only);
    snprintf(want, sizeof want, "%s/data", canon);
    assert_string_equal(c.allowed_paths[2].path, want);
    assert_false(c.allowed_paths[2].read_only);
    free(canon);
    assert_string_equal(c.state_dir, "/srv/airlock-state");
    assert_string_equal(c.audit_db, "/srv/airlock-state/audit.db"); /* follows state_dir */
    assert_string_equal(c.python_dir, "/opt/airlock/python");
    assert_false(c.allow_native);
    assert_true(c.allow_gvisor);
    assert_int_equal(c.session_idle_s, 7200);
    assert_int_equal(c.max_sessions, 7);
    assert_int_equal(c.session_workspace_bytes, 1u << 30);
    assert_int_equal(c.workers, 8);
    assert_int_equal(c.queue_max, 0);
    assert_int_equal(c.python_per_minute, 30);
    assert_int_equal(c.exec_per_minute, 120);
    assert_int_equal(c.ntokens, 2);
    assert_string_equal(c.tokens[0].name, "ci-bot");
    char hex[65];
    svc_hex(c.tokens[0].sha256, 32, hex);
    assert_string_equal(hex, sha_a);
    assert_int_equal(c.tokens[0].python_per_minute, 100);
    assert_int_equal(c.tokens[0].exec_per_minute, 0);
    assert_string_equal(c.tokens[1].name, "alice");
    svc_hex(c.tokens[1].sha256, 32, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_false(c.redact_builtin);
    assert_int_equal(c.nredact_patterns, 2);
    assert_string_equal(c.redact_patterns[0], "secret-[0-9]+");
    assert_string_equal(c.redact_patterns[1], "tok_[a-z]{8}");
    assert_int_equal(c.nallowed_origins, 2);
    assert_string_equal(c.allowed_origins[1], "https://[::1]:8443");

    /* a deep copy owns its own arrays */
    svc_config d;
    assert_true(svc_config_copy(&d, &c));
    assert_ptr_not_equal(d.tokens, c.tokens);
    assert_ptr_not_equal(d.redact_patterns[0], c.redact_patterns[0]);
    svc_config_free(&c);
    assert_string_equal(d.tokens[1].name, "alice");
    assert_string_equal(d.redact_patterns[1], "tok_[a-z]{8}");
    assert_string_equal(d.allowed_origins[0], "http://localhost:6274");
    assert_int_equal(d.nallowed_paths, 3);
    svc_config_free(&d);
}

static void test_units(void **state) {
    (void)state;
    static const struct { const char *yaml; uint64_t memory; } sizes[] = {
        {"limits: {memory: 268435456}", 256u << 20}, {"limits: {memory: 256M}", 256u << 20},
        {"limits: {memory: 256mb}", 256u << 20},     {"limits: {memory: \"256MiB\"}", 256u << 20},
        {"limits: {memory: 4G}", 4ull << 30},        {"limits: {memory: 65536B}", 65536},
        {"limits: {memory: 64k}", 65536},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        svc_config c;
        load_ok(sizes[i].yaml, &c);
        assert_int_equal(c.memory_bytes, sizes[i].memory);
        svc_config_free(&c);
    }
    static const struct { const char *yaml; uint64_t ms; } durations[] = {
        {"limits: {timeout: 500ms}", 500}, {"limits: {timeout: 30s}", 30000},
        {"limits: {timeout: 2m}", 120000}, {"limits: {timeout: \"5m\"}", 300000},
        {"limits: {timeout: 1h, max_timeout: 2h}", 3600000},
    };
    for (size_t i = 0; i < sizeof durations / sizeof *durations; i++) {
        svc_config c;
        load_ok(durations[i].yaml, &c);
        assert_int_equal(c.timeout_ms, durations[i].ms);
        svc_config_free(&c);
    }
    svc_config c;
    load_ok("sessions: {idle_timeout: 90m}\n", &c);
    assert_int_equal(c.session_idle_s, 5400);
    load_ok("sessions: {idle_timeout: 2000ms}\n", &c);
    assert_int_equal(c.session_idle_s, 2);
    load_ok("audit: {retention: 30d}\n", &c);
    assert_true(c.audit_retention_ms == UINT64_C(30) * 24 * 3600 * 1000);
    svc_config_free(&c);
    load_ok("capabilities:\n  dir: /tmp\n  registry: \"http://127.0.0.1:5000\"\n"
            "  install: [\"urn:airlock:cap:tools/x:1\"]\n  max_blob: 2M\n", &c);
    assert_string_equal(c.cap_dir, "/tmp");
    assert_string_equal(c.cap_registry, "http://127.0.0.1:5000");
    assert_int_equal(c.ncap_install, 1);
    assert_string_equal(c.cap_install[0], "urn:airlock:cap:tools/x:1");
    assert_int_equal(c.cap_max_blob_bytes, 2u << 20);
    svc_config copy;
    assert_true(svc_config_copy(&copy, &c));
    assert_string_equal(copy.cap_install[0], "urn:airlock:cap:tools/x:1");
    svc_config_free(&copy);
    svc_config_free(&c);
}

static void test_listeners_off_and_state_dir(void **state) {
    (void)state;
    svc_config c;
    load_ok("listen:\n  unix_socket: \"\"\n  tcp_host: ''\n", &c);
    assert_string_equal(c.unix_socket, "");
    assert_string_equal(c.tcp_host, "");
    load_ok("paths:\n  state_dir: /var/tmp/al\n", &c);
    assert_string_equal(c.unix_socket, "/var/tmp/al/airlockd.sock");
    assert_string_equal(c.audit_db, "/var/tmp/al/audit.db");
    load_ok("paths: {state_dir: /x, audit_db: /y/a.db}\nlisten: {unix_socket: /z.sock}\n", &c);
    assert_string_equal(c.unix_socket, "/z.sock");
    assert_string_equal(c.audit_db, "/y/a.db");
    load_ok("listen: {tcp_host: localhost}\n", &c);
    assert_string_equal(c.tcp_host, "localhost");
}

static void test_load_file(void **state) {
    (void)state;
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/airlockd.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("workers:\n  count: 2\n", f);
    fclose(f);
    svc_config c;
    assert_true(svc_config_load(path, &c, err, sizeof err));
    assert_int_equal(c.workers, 2);
    svc_config_free(&c);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("workers:\n  count: many\n", f);
    fclose(f);
    assert_false(svc_config_load(path, &c, err, sizeof err));
    char want[400];
    snprintf(want, sizeof want, "%s:2:10: workers.count: expected an integer, got a string", path);
    assert_string_equal(err, want);
    assert_defaults(&c);

    snprintf(path, sizeof path, "%s/missing.yaml", tmpdir);
    assert_false(svc_config_load(path, &c, err, sizeof err));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_false(svc_config_load(tmpdir, &c, err, sizeof err));
    assert_non_null(strstr(err, "not a regular file"));
    assert_defaults(&c);
}

/* The shipped example must load and hold exactly the defaults (the
 * state_dir-derived paths as for root). Run from the repository root. */
static void test_dist_example(void **state) {
    (void)state;
    char err[512];
    svc_config c, d;
    if (access("dist/airlockd.yaml", R_OK) != 0) {
        fail_msg("dist/airlockd.yaml not found (run from the repository root)");
    }
    bool ok = svc_config_load("dist/airlockd.yaml", &c, err, sizeof err);
    if (!ok) fail_msg("%s", err);
    svc_config_defaults(&d);
    strcpy(d.state_dir, "/var/lib/airlock");
    strcpy(d.unix_socket, "/var/lib/airlock/airlockd.sock");
    strcpy(d.audit_db, "/var/lib/airlock/audit.db");
    assert_config_equal(&c, &d);
    svc_config_free(&c);
}

/* ---- bad files ------------------------------------------------------------------- */

typedef struct bad_case {
    const char *yaml;
    const char *message;          /* must appear in the error */
} bad_case;

static const bad_case bad_cases[] = {
    {"limits:\n  memory: abc\n",
     "<config>:2:11: limits.memory: not a size: \"abc\" (bytes, or a number with K, M, G or T"},
    {"listn:\n  tcp_port: 1\n", "<config>:1:1: unknown key \"listn\" (expected one of: listen, "},
    {"limits:\n  memroy: 1G\n", "<config>:2:3: limits: unknown key \"memroy\" (expected one of: "
                                "memory, fuel, timeout, max_timeout, output, max_body)"},
    {"limits:\n  fuel: 1\n  fuel: 2\n", "<config>:3:3: limits.fuel: duplicate key"},
    {"limits: {}\nworkers: {}\nlimits: {}\n", "<config>:3:1: limits: duplicate key"},
    {"workers:\n  count: \"4\"\n", "<config>:2:10: workers.count: expected an integer, got a string"},
    {"workers:\n  count: -1\n", "<config>:2:10: workers.count: must not be negative: \"-1\""},
    {"limits:\n  fuel: 1e9\n", "<config>:2:9: limits.fuel: not an integer: \"1e9\""},
    {"workers: {count: 1.5}\n", "<config>:1:18: workers.count: not an integer: \"1.5\""},
    {"listen:\n  tcp_port: 70000\n",
     "<config>:2:13: listen.tcp_port: out of range: \"70000\" (1 to 65535)"},
    {"workers:\n  count: 0\n", "<config>:2:10: workers.count: out of range: \"0\" (1 to 256)"},
    {"limits:\n  memory: 8G\n", "<config>:2:11: limits.memory: out of range: \"8G\" (64K to 4G)"},
    {"limits:\n  memory: -5M\n", "limits.memory: must not be negative: \"-5M\""},
    {"limits:\n  memory: 1.5G\n", "limits.memory: not a size: \"1.5G\""},
    {"limits:\n  timeout: 30\n",
     "<config>:2:12: limits.timeout: not a duration: \"30\" (a number with a unit: 500ms, 30s"},
    {"limits:\n  timeout: 0ms\n", "limits.timeout: out of range: \"0ms\" (1ms to 24h)"},
    {"limits:\n  timeout: 10m\n",
     "<config>:2:12: limits.timeout: limits.timeout (10m) is above limits.max_timeout (5m)"},
    {"limits:\n  max_timeout: 10s\n",
     "<config>:2:16: limits.max_timeout: limits.timeout (30s) is above limits.max_timeout (10s)"},
    {"backends:\n  native: yes\n",
     "<config>:2:11: backends.native: expected true or false, got a string"},
    {"backends:\n  native: \"true\"\n", "backends.native: expected true or false, got a string"},
    {"limits: 5\n", "<config>:1:9: limits: expected a mapping, got an integer"},
    {"paths:\n  allowed: /srv\n", "<config>:2:12: paths.allowed: expected a list, got a string"},
    {"paths:\n  allowed: [srv]\n", "<config>:2:13: paths.allowed[0]: not an absolute path: \"srv\""},
    {"paths:\n  allowed:\n    - /\n    - ro:/nonexistent-airlock-dir\n",
     "<config>:4:7: paths.allowed[1]: \"/nonexistent-airlock-dir\": No such file or directory"},
    {"paths:\n  allowed: [/etc/passwd]\n", "paths.allowed[0]: \"/etc/passwd\": not a directory"},
    {"paths:\n  state_dir: var/lib\n", "<config>:2:14: paths.state_dir: not an absolute path"},
    {"paths:\n  state_dir: \"/a\\tb\"\n", "paths.state_dir: control character 0x09 in a string"},
    {"tokens:\n  - name: a\n    sha256: abc\n",
     "<config>:3:13: tokens[0].sha256: not a SHA-256: \"abc\" (64 hex digits"},
    {"tokens:\n  - name: a\n", "<config>:2:5: tokens[0]: missing sha256"},
    {"tokens:\n  - sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
     "<config>:2:5: tokens[0]: missing name"},
    {"tokens:\n"
     "  - {name: a, sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad}\n"
     "  - {name: a, sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855}\n",
     "<config>:3:5: tokens[1]: duplicate token name \"a\" (also tokens[0])"},
    {"tokens:\n"
     "  - {name: a, sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad}\n"
     "  - {name: b, sha256: BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD}\n",
     "tokens[1]: the same sha256 as tokens[0]"},
    {"tokens:\n  - {name: \"a b\", sha256: x}\n", "tokens[0].name: not a token name: \"a b\""},
    {"tokens:\n  - {name: a, sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad, "
     "python_per_minute: 2000000}\n",
     "tokens[0].python_per_minute: out of range: \"2000000\" (0 to 1000000)"},
    {"tokens:\n  - {name: a, token: secret}\n", "tokens[0]: unknown key \"token\""},
    {"tokens: {name: a}\n", "<config>:1:9: tokens: expected a list, got a mapping"},
    {"tokens: [5]\n", "tokens[0]: expected a mapping (name, sha256, ...), got an integer"},
    {"redaction:\n  patterns: ['a(']\n",
     "<config>:2:14: redaction.patterns[0]: not a POSIX extended regex: "},
    {"redaction:\n  patterns: ['x*']\n", "redaction.patterns[0]: matches the empty string"},
    {"redaction:\n  patterns:\n    - [0-9]+\n",
     "redaction.patterns[0]: expected a string (quote regexes: '[0-9]+'), got a list"},
    {"mcp:\n  allowed_origins: [\"localhost:3000\"]\n",
     "<config>:2:21: mcp.allowed_origins[0]: not an origin: \"localhost:3000\""},
    {"mcp:\n  allowed_origins: [\"http://a/path\"]\n", "not an origin: \"http://a/path\""},
    {"listen:\n  tcp_host: example.com\n",
     "<config>:2:13: listen.tcp_host: not an IP address: \"example.com\""},
    {"listen:\n  unix_socket: /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
     "listen.unix_socket: too long (125 bytes, at most 107)"},
    {"sessions:\n  idle_timeout: 1500ms\n",
     "sessions.idle_timeout: not a whole number of seconds: \"1500ms\""},
    {"workers:\n  count:\n", "<config>:2:9: workers.count: expected an integer, got null"},
    {"limits:\n  fuel: 99999999999999999999999\n",
     "limits.fuel: out of range: \"99999999999999999999999\" (1 to 1000000000000000)"},
    {"workers:\n  count: 010\n", "workers.count: not a plain decimal integer: \"010\""},
    {"workers:\n  count: 0x10\n", "workers.count: not a plain decimal integer: \"0x10\""},
    {"workers: {count: 2\n", "<config>:2:1: syntax error: did not find expected ',' or '}'"},
    {"a: \"\x01\"\n", "<config>:1:5: syntax error: control characters are not allowed"},
    {"workers: {count: 2}\n\xff\n", "<config>:2:1: syntax error: invalid leading UTF-8 octet"},
    {"limits:\n  fuel: 1\n fuel: 2\n", "<config>:3:2: syntax error: "},
    {"workers: &w {count: 2}\n", "<config>:1:10: anchors (&name) are not supported"},
    {"limits: {fuel: !!int 5}\n", "<config>:1:16: tags (!tag) are not supported"},
    {"---\nlimits: {}\n---\nlimits: {}\n", "<config>:3:1: only one YAML document is allowed"},
    {"- a\n", "<config>:1:1: the configuration must be a mapping, got a list"},
    {"42\n", "the configuration must be a mapping, got an integer"},
    {"? [a]\n: 1\n", "<config>:1:3: a key must be a string, got a list"},
    {"workers:\n  ~: 1\n", "<config>:2:3: workers: a key must be a string, got null"},
    {"capabilities:\n  install: [\"urn:airlock:cap:x:1\"]\n",
     "capabilities.install: capabilities.install needs capabilities.registry"},
    {"capabilities:\n  registry: \"ftp://x\"\n", "capabilities.registry: not a registry URL: \"ftp://x\""},
    {"capabilities:\n  install: [\"x:1\"]\n", "capabilities.install[0]: not a capability URN"},
    {"capabilities:\n  dir: relative\n", "capabilities.dir: not an absolute path"},
    {"audit:\n  retention: 30\n", "audit.retention: not a duration"},
};

static void test_bad_cases(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        svc_config c;
        char err[512];
        memset(&c, 0x5a, sizeof c); /* load must not read (or free) what was there */
        bool ok = load(bad_cases[i].yaml, &c, err, sizeof err);
        if (ok) fail_msg("case %zu loaded: %s", i, bad_cases[i].yaml);
        if (!strstr(err, bad_cases[i].message))
            fail_msg("case %zu:\n  got:  %s\n  want: %s", i, err, bad_cases[i].message);
        assert_null(strchr(err, '\n'));
        assert_defaults(&c);
    }
}

static void test_alias_and_limits(void **state) {
    (void)state;
    svc_config c;
    char err[512];
    /* an alias (the "billion laughs" building block) */
    assert_false(load("workers: {count: 2}\nsessions: *w\n", &c, err, sizeof err));
    assert_non_null(strstr(err, "aliases (*name) are not supported"));
    /* more than 1 MiB */
    size_t n = (1u << 20) + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, '#', n);
    assert_false(svc_config_load_buffer(big, n, &c, err, sizeof err));
    assert_string_equal(err, "<config>: larger than 1048576 bytes");
    free(big);
    /* too many list entries */
    char *many = malloc(65 * 16 + 64);
    assert_non_null(many);
    strcpy(many, "paths:\n  allowed:\n");
    for (int i = 0; i < 65; i++) strcat(many, "    - /\n");
    assert_false(load(many, &c, err, sizeof err));
    assert_non_null(strstr(err, "paths.allowed[64]: too many entries (at most 64)"));
    free(many);
    /* a NUL inside the input */
    assert_false(svc_config_load_buffer("workers:\0 {}", 12, &c, err, sizeof err));
    assert_non_null(strstr(err, "syntax error"));
    /* a tiny error buffer is still NUL-terminated */
    char small[12];
    assert_false(load("limits: 5\n", &c, small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_defaults(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_token_hash_hex),
        cmocka_unit_test(test_empty_and_comments),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_listeners_off_and_state_dir),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_dist_example),
        cmocka_unit_test(test_bad_cases),
        cmocka_unit_test(test_alias_and_limits),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
