/*
 * test_manifest.c — unit tests of Extism manifests (src/plugin/manifest.c):
 * al_manifest_parse (every field, nulls, every error with the field it
 * names), al_manifest_options, and al_manifest_load_wasm from data, path and
 * url sources, with and without a SHA-256, against a loopback HTTP server
 * started by the test (a thread on 127.0.0.1, port chosen by the kernel).
 *
 * The url cases include a body that never ends: the fetch must abort as soon
 * as the cap is passed (the server sees its connection closed), not read to
 * the end — a test that would otherwise hang for the fetch timeout. Every
 * manifest and buffer is freed, so LeakSanitizer checks the error paths.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

/* "\0asm" version 1: an empty module, and its SHA-256. */
static const uint8_t empty_module[] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
#define EMPTY_MODULE_B64 "AGFzbQEAAAA="
#define EMPTY_MODULE_SHA "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476"
#define ZERO_SHA "0000000000000000000000000000000000000000000000000000000000000000"

static al_manifest *parse(const char *json, const char *base, al_error *err) {
    return al_manifest_parse(json, strlen(json), base, err);
}

/* Parsing fails with kind and a message containing want (and one line). */
static void expect_error(const char *json, al_error_kind kind, const char *want) {
    al_error err;
    al_manifest *m = parse(json, "/base", &err);
    if (m) {
        al_manifest_free(m);
        fail_msg("accepted: %s", json);
    }
    if (!strstr(err.message, want) || strncmp(err.message, "manifest: ", 10) != 0)
        fail_msg("for %s\n  message: %s\n  want: %s", json, err.message, want);
    assert_int_equal(err.kind, kind);
    assert_null(strchr(err.message, '\n'));
}

/* ---- parsing ------------------------------------------------------------------------ */

static void test_empty_manifest(void **state) {
    (void)state;
    al_error err;
    al_manifest *m = parse("{}", NULL, &err);
    assert_non_null(m);
    al_plugin_options def;
    al_plugin_options_init(&def);
    const al_plugin_options *o = al_manifest_options(m);
    assert_false(o->allow_http);
    assert_int_equal(o->nallowed_hosts, 0);
    assert_int_equal(o->nconfig, 0);
    assert_int_equal(o->ndirs, 0);
    assert_int_equal(o->max_pages, def.max_pages);
    assert_int_equal(o->max_http_response_bytes, def.max_http_response_bytes);
    assert_int_equal(o->max_var_bytes, def.max_var_bytes);
    assert_int_equal(o->timeout_ms, def.timeout_ms);
    uint8_t *wasm = (uint8_t *)"x";
    size_t len = 7;
    assert_false(al_manifest_load_wasm(m, 0, &wasm, &len, &err));
    assert_string_equal(err.message, "manifest: the manifest names no wasm source");
    assert_null(wasm);
    assert_int_equal(len, 0);
    al_manifest_free(m);
    al_manifest_free(NULL);
    assert_null(al_manifest_options(NULL));
}

static void test_every_field(void **state) {
    (void)state;
    const char *json =
        "{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\", \"hash\": \"" EMPTY_MODULE_SHA
        "\", \"name\": \"main\"}],"
        " \"memory\": {\"max_pages\": 17, \"max_http_response_bytes\": 12345,"
        "              \"max_var_bytes\": 0},"
        " \"config\": {\"vowels\": \"aeiou\", \"empty\": \"\", \"k\\u00e9y\": \"v\\u00e9\"},"
        " \"allowed_hosts\": [\"example.com\", \"*.example.org\", \"*\"],"
        " \"allowed_paths\": {\"ro:data\": \"/data\", \"/abs/out\": \"/out\"},"
        " \"timeout_ms\": 1500}";
    al_error err;
    al_manifest *m = parse(json, "/srv/plugins", &err);
    if (!m) fail_msg("%s", err.message);
    const al_plugin_options *o = al_manifest_options(m);
    assert_int_equal(o->max_pages, 17);
    assert_int_equal(o->max_http_response_bytes, 12345);
    assert_int_equal(o->max_var_bytes, 0);
    assert_int_equal(o->timeout_ms, 1500);
    assert_int_equal(o->nconfig, 3);
    bool seen_vowels = false, seen_empty = false, seen_utf8 = false;
    for (size_t i = 0; i < o->nconfig; i++) {
        if (!strcmp(o->config[i].key, "vowels")) seen_vowels = !strcmp(o->config[i].value, "aeiou");
        if (!strcmp(o->config[i].key, "empty")) seen_empty = !strcmp(o->config[i].value, "");
        if (!strcmp(o->config[i].key, "k\xc3\xa9y")) seen_utf8 = !strcmp(o->config[i].value, "v\xc3\xa9");
    }
    assert_true(seen_vowels && seen_empty && seen_utf8);
    assert_true(o->allow_http);
    assert_int_equal(o->nallowed_hosts, 3);
    assert_string_equal(o->allowed_hosts[0], "example.com");
    assert_string_equal(o->allowed_hosts[1], "*.example.org");
    assert_string_equal(o->allowed_hosts[2], "*");
    assert_int_equal(o->ndirs, 2);
    for (size_t i = 0; i < o->ndirs; i++) {
        if (!strcmp(o->dirs[i].guest_path, "/data")) {
            assert_string_equal(o->dirs[i].host_path, "/srv/plugins/data");
            assert_true(o->dirs[i].read_only);
        } else {
            assert_string_equal(o->dirs[i].guest_path, "/out");
            assert_string_equal(o->dirs[i].host_path, "/abs/out");
            assert_false(o->dirs[i].read_only);
        }
    }
    uint8_t *wasm;
    size_t len;
    assert_true(al_manifest_load_wasm(m, 0, &wasm, &len, &err));
    assert_int_equal(len, sizeof empty_module);
    assert_memory_equal(wasm, empty_module, len);
    free(wasm);
    al_manifest_free(m);
}

/* null is "not given" wherever Extism's schema allows it (its SDKs write it). */
static void test_nulls(void **state) {
    (void)state;
    al_error err;
    al_manifest *m = parse("{\"wasm\": [{\"path\": \"m.wasm\", \"hash\": null, \"name\": null}],"
                           " \"memory\": {\"max_pages\": null, \"max_http_response_bytes\": null,"
                           " \"max_var_bytes\": null}, \"allowed_hosts\": null,"
                           " \"allowed_paths\": null, \"timeout_ms\": null}",
                           NULL, &err);
    if (!m) fail_msg("%s", err.message);
    al_plugin_options def;
    al_plugin_options_init(&def);
    const al_plugin_options *o = al_manifest_options(m);
    assert_false(o->allow_http);
    assert_int_equal(o->max_pages, def.max_pages);
    assert_int_equal(o->timeout_ms, def.timeout_ms);
    al_manifest_free(m);
    m = parse("{\"memory\": null, \"wasm\": [{\"url\": \"http://x.test/m\", \"method\": null,"
              " \"headers\": null}]}", NULL, &err);
    if (!m) fail_msg("%s", err.message);
    al_manifest_free(m);
}

static void test_allowed_hosts(void **state) {
    (void)state;
    al_error err;
    /* present but empty: HTTP is on, and no host is allowed */
    al_manifest *m = parse("{\"allowed_hosts\": []}", NULL, &err);
    assert_non_null(m);
    assert_true(al_manifest_options(m)->allow_http);
    assert_int_equal(al_manifest_options(m)->nallowed_hosts, 0);
    al_manifest_free(m);
    m = parse("{\"config\": {}}", NULL, &err);
    assert_non_null(m);
    assert_false(al_manifest_options(m)->allow_http);
    al_manifest_free(m);
}

/* Manifests al_manifest_parse refuses (AL_ERR_ARGUMENT), and what the
 * message must contain. */
static const struct {
    const char *json, *want;
} bad_manifests[] = {
    /* the document */
    {"", "manifest: line 1"},
    {"{", "manifest: line 1"},
    {"{} x", "end of file expected"},
    {"[]", "manifest: expected a JSON object"},
    {"{\"a\": 1, \"a\": 2}", "duplicate"},
    {"{\"config\": {\"k\": \"1\", \"k\": \"2\"}}", "duplicate"},
    {"{\"config\": {\"k\": \"\xff\"}}", "unable to decode byte 0xff"},
    {"{\"config\": {\"k\": \"a\\u0000b\"}}", "manifest: line 1"},
    {"{\"timeout_ms\": 99999999999999999999}", "too big"},
    /* unknown fields, at every level */
    {"{\"alowed_hosts\": []}", "manifest: unknown field \"alowed_hosts\""},
    {"{\"memory\": {\"max\": 1}}", "manifest: unknown field \"memory.max\""},
    {"{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\", \"headers\": {}}]}",
     "manifest: unknown field \"wasm[0].headers\""},
    {"{\"wasm\": [{\"path\": \"m\", \"method\": \"GET\"}]}", "unknown field \"wasm[0].method\""},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"extra\": 1}]}",
     "unknown field \"wasm[0].extra\""},
    /* wrong types */
    {"{\"wasm\": {}}", "manifest: wasm: expected an array"},
    {"{\"wasm\": [\"m.wasm\"]}", "manifest: wasm[0]: expected an object"},
    {"{\"memory\": 5}", "manifest: memory: expected an object"},
    {"{\"memory\": {\"max_pages\": \"4\"}}",
     "manifest: memory.max_pages: expected an integer 1..65536"},
    {"{\"memory\": {\"max_pages\": -1}}", "memory.max_pages: expected an integer"},
    {"{\"memory\": {\"max_pages\": 0}}", "memory.max_pages: expected an integer 1..65536"},
    {"{\"memory\": {\"max_pages\": 65537}}", "memory.max_pages: expected an integer"},
    {"{\"memory\": {\"max_pages\": 4.0}}", "memory.max_pages: expected an integer"},
    {"{\"memory\": {\"max_http_response_bytes\": -5}}",
     "manifest: memory.max_http_response_bytes: expected a non-negative integer"},
    {"{\"memory\": {\"max_var_bytes\": 1.5}}",
     "manifest: memory.max_var_bytes: expected a non-negative integer"},
    {"{\"memory\": {\"max_var_bytes\": true}}", "memory.max_var_bytes"},
    {"{\"timeout_ms\": -1}", "manifest: timeout_ms: expected a non-negative integer"},
    {"{\"timeout_ms\": \"1s\"}", "manifest: timeout_ms: expected a non-negative"},
    {"{\"config\": []}", "manifest: config: expected an object"},
    {"{\"config\": null}", "manifest: config: expected an object"},
    {"{\"config\": {\"n\": 1}}", "manifest: config.n: expected a string"},
    {"{\"config\": {\"n\": null}}", "manifest: config.n: expected a string"},
    {"{\"allowed_hosts\": \"example.com\"}",
     "manifest: allowed_hosts: expected an array of strings"},
    {"{\"allowed_hosts\": [\"a.com\", 7]}", "manifest: allowed_hosts[1]: expected a string"},
    {"{\"allowed_hosts\": [\"\"]}", "manifest: allowed_hosts[0]: must not be empty"},
    {"{\"allowed_hosts\": [\"exa mple.com\"]}",
     "allowed_hosts[0]: \"exa mple.com\" is not a domain name"},
    {"{\"allowed_hosts\": [\"a.*.com\"]}", "allowed_hosts[0]"},
    {"{\"allowed_hosts\": [\"a.com\", \"**\"]}",
     "allowed_hosts[1]: \"**\" is not a domain name, a \"*.domain\" pattern or \"*\""},
    {"{\"allowed_paths\": [\"/tmp\"]}", "manifest: allowed_paths: expected an object"},
    {"{\"allowed_paths\": {\"/tmp\": 1}}", "manifest: allowed_paths./tmp: expected a string"},
    {"{\"allowed_paths\": {\"/tmp\": \"tmp\"}}",
     "manifest: allowed_paths./tmp: the guest path must be absolute"},
    {"{\"allowed_paths\": {\"ro:\": \"/x\"}}", "manifest: allowed_paths: empty host path"},
    {"{\"allowed_paths\": {\"\": \"/x\"}}", "manifest: allowed_paths: empty host path"},
    /* wasm sources */
    {"{\"wasm\": [{}]}", "wasm[0]: expected one of \"data\", \"path\" or \"url\""},
    {"{\"wasm\": [{\"name\": \"main\"}]}", "expected one of"},
    {"{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\", \"path\": \"m\"}]}",
     "wasm[0]: give only one of"},
    {"{\"wasm\": [{\"data\": {\"ptr\": 4096, \"len\": 8}}]}",
     "wasm[0].data: expected a base64 string (a host pointer is never accepted)"},
    {"{\"wasm\": [{\"data\": 5}]}", "wasm[0].data: expected a base64 string"},
    {"{\"wasm\": [{\"data\": \"\"}]}", "wasm[0].data: must not be empty"},
    {"{\"wasm\": [{\"data\": \"AGFzbQEAAAA\"}]}", "wasm[0].data: not canonical base64"},
    {"{\"wasm\": [{\"data\": \"AGFz bQEAAAA=\"}]}", "not canonical base64"},
    {"{\"wasm\": [{\"data\": \"QR==\"}]}", "not canonical base64"}, /* bits set */
    {"{\"wasm\": [{\"data\": \"QUJ=\"}]}", "not canonical base64"},
    {"{\"wasm\": [{\"data\": \"A=B=\"}]}", "not canonical base64"},
    {"{\"wasm\": [{\"data\": \"====\"}]}", "not canonical base64"},
    {"{\"wasm\": [{\"data\": \"AG-z\"}]}", "not canonical base64"}, /* url alphabet */
    {"{\"wasm\": [{\"path\": \"\"}]}", "manifest: wasm[0].path: must not be empty"},
    {"{\"wasm\": [{\"path\": 1}]}", "manifest: wasm[0].path: expected a string"},
    {"{\"wasm\": [{\"path\": \"m\", \"hash\": \"abc\"}]}",
     "manifest: wasm[0].hash: expected a SHA-256 as 64 hex digits"},
    {"{\"wasm\": [{\"path\": \"m\", \"hash\": \"" ZERO_SHA "0\"}]}", "wasm[0].hash"},
    {"{\"wasm\": [{\"path\": \"m\", \"hash\": \"sha256:" ZERO_SHA "\"}]}", "wasm[0].hash"},
    {"{\"wasm\": [{\"path\": \"m\", \"hash\": \"g" ZERO_SHA "\"}]}", "wasm[0].hash"},
    {"{\"wasm\": [{\"path\": \"m\", \"hash\": 5}]}", "wasm[0].hash"},
    {"{\"wasm\": [{\"path\": \"m\", \"name\": 5}]}", "wasm[0].name: expected a string"},
    {"{\"wasm\": [{\"url\": \"ftp://a.test/m\"}]}",
     "wasm[0].url: only http:// and https:// URLs are supported"},
    {"{\"wasm\": [{\"url\": \"file:///etc/passwd\"}]}", "only http:// and https://"},
    {"{\"wasm\": [{\"url\": \"http://a.test/a b\"}]}",
     "wasm[0].url: contains a space or a control character"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\\r\\nX: y\"}]}", "control character"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"headers\": []}]}",
     "wasm[0].headers: expected an object"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"headers\": {\"X\": 1}}]}",
     "wasm[0].headers.X: expected a string"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"headers\": {\"X\": \"a\\r\\nEvil: 1\"}}]}",
     "wasm[0].headers.X: the header value contains CR, LF"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"headers\": {\"X Y\": \"v\"}}]}",
     "the header name is not an HTTP token"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"method\": \"G T\"}]}",
     "wasm[0].method: not an HTTP method token"},
    {"{\"wasm\": [{\"url\": \"http://a.test/\", \"method\": 1}]}",
     "wasm[0].method: expected a string"},
};

static void test_errors(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_manifests / sizeof *bad_manifests; i++)
        expect_error(bad_manifests[i].json, AL_ERR_ARGUMENT, bad_manifests[i].want);
    /* one module only: a second is a feature airlock lacks, not a bad argument */
    expect_error("{\"wasm\": [{\"path\": \"a\"}, {\"path\": \"b\"}]}", AL_ERR_UNSUPPORTED,
                 "manifest: wasm: 2 modules given; airlock runs exactly one module");
}

/* Long keys are cut short in messages; control bytes never reach them. */
static void test_error_messages_are_one_line(void **state) {
    (void)state;
    char json[600];
    snprintf(json, sizeof json, "{\"%s\\n\\u001b[31m%s\": 1}",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    al_error err;
    assert_null(parse(json, NULL, &err));
    assert_non_null(strstr(err.message, "unknown field"));
    for (const char *c = err.message; *c; c++) assert_true((unsigned char)*c >= 0x20);
    assert_null(al_manifest_parse(NULL, 3, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
}

/* ---- loading: data and path --------------------------------------------------------- */

static void expect_load(const char *json, const char *base, size_t max, bool ok,
                        al_error_kind kind, const char *want) {
    al_error err;
    al_manifest *m = parse(json, base, &err);
    if (!m) fail_msg("parse %s: %s", json, err.message);
    uint8_t *wasm = NULL;
    size_t len = 0;
    bool got = al_manifest_load_wasm(m, max, &wasm, &len, &err);
    al_manifest_free(m);
    if (got != ok) fail_msg("load %s: %s", json, got ? "succeeded" : err.message);
    if (ok) {
        assert_int_equal(len, sizeof empty_module);
        assert_memory_equal(wasm, empty_module, len);
        free(wasm);
        return;
    }
    assert_null(wasm);
    assert_int_equal(err.kind, kind);
    if (!strstr(err.message, want)) fail_msg("load %s: %s; want %s", json, err.message, want);
}

static void test_data_source(void **state) {
    (void)state;
    expect_load("{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\"}]}", NULL, 0, true, 0, NULL);
    /* upper-case hex is the same hash */
    char upper[65];
    for (int i = 0; i < 64; i++) upper[i] = (char)(EMPTY_MODULE_SHA[i] >= 'a' ? EMPTY_MODULE_SHA[i] - 32 : EMPTY_MODULE_SHA[i]);
    upper[64] = '\0';
    char json[256];
    snprintf(json, sizeof json, "{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\", \"hash\": \"%s\"}]}", upper);
    expect_load(json, NULL, 0, true, 0, NULL);
    expect_load("{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\", \"hash\": \"" ZERO_SHA "\"}]}", NULL,
                0, false, AL_ERR_ARGUMENT,
                "manifest: wasm[0].hash: SHA-256 mismatch: the module's is " EMPTY_MODULE_SHA
                ", the manifest says " ZERO_SHA);
    expect_load("{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\"}]}", NULL, 7, false, AL_ERR_LIMIT,
                "wasm[0].data: 8 bytes, more than the 7 allowed");
    expect_load("{\"wasm\": [{\"data\": \"" EMPTY_MODULE_B64 "\"}]}", NULL, 8, true, 0, NULL);
    /* every length of padding decodes */
    const char *const samples[][2] = {{"QQ==", "A"}, {"QUI=", "AB"}, {"QUJD", "ABC"},
                                      {"QUJDRA==", "ABCD"}};
    for (size_t i = 0; i < 4; i++) {
        snprintf(json, sizeof json, "{\"wasm\": [{\"data\": \"%s\"}]}", samples[i][0]);
        al_error err;
        al_manifest *m = parse(json, NULL, &err);
        assert_non_null(m);
        uint8_t *w;
        size_t n;
        assert_true(al_manifest_load_wasm(m, 0, &w, &n, &err));
        assert_int_equal(n, strlen(samples[i][1]));
        assert_memory_equal(w, samples[i][1], n);
        free(w);
        al_manifest_free(m);
    }
}

typedef struct tmpdir {
    char path[64];
} tmpdir;

static tmpdir make_tmpdir(void) {
    tmpdir t;
    snprintf(t.path, sizeof t.path, "/tmp/test_manifest.XXXXXX");
    assert_non_null(mkdtemp(t.path));
    return t;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_path_source(void **state) {
    (void)state;
    tmpdir t = make_tmpdir();
    write_file(t.path, "m.wasm", empty_module, sizeof empty_module);
    char big[100];
    memset(big, 0, sizeof big);
    write_file(t.path, "big.wasm", big, sizeof big);
    char p[256], json[512];
    snprintf(p, sizeof p, "%s/fifo", t.path);
    assert_int_equal(mkfifo(p, 0600), 0);
    snprintf(p, sizeof p, "%s/sub", t.path);
    assert_int_equal(mkdir(p, 0700), 0);

    /* relative to base_dir, with and without a trailing slash */
    expect_load("{\"wasm\": [{\"path\": \"m.wasm\", \"hash\": \"" EMPTY_MODULE_SHA "\"}]}", t.path, 0,
                true, 0, NULL);
    snprintf(p, sizeof p, "%s/", t.path);
    expect_load("{\"wasm\": [{\"path\": \"m.wasm\"}]}", p, 0, true, 0, NULL);
    snprintf(p, sizeof p, "%s/sub", t.path);
    expect_load("{\"wasm\": [{\"path\": \"../m.wasm\"}]}", p, 0, true, 0, NULL);
    /* absolute: base_dir does not matter */
    snprintf(json, sizeof json, "{\"wasm\": [{\"path\": \"%s/m.wasm\"}]}", t.path);
    expect_load(json, "/nonexistent", 0, true, 0, NULL);
    expect_load("{\"wasm\": [{\"path\": \"m.wasm\", \"hash\": \"" ZERO_SHA "\"}]}", t.path, 0, false,
                AL_ERR_ARGUMENT, "SHA-256 mismatch");
    expect_load("{\"wasm\": [{\"path\": \"missing.wasm\"}]}", t.path, 0, false, AL_ERR_SYSTEM,
                "missing.wasm: No such file or directory");
    expect_load("{\"wasm\": [{\"path\": \"sub\"}]}", t.path, 0, false, AL_ERR_ARGUMENT,
                "sub: not a regular file");
    /* a FIFO nobody writes to must not hang the load */
    expect_load("{\"wasm\": [{\"path\": \"fifo\"}]}", t.path, 0, false, AL_ERR_ARGUMENT,
                "fifo: not a regular file");
    expect_load("{\"wasm\": [{\"path\": \"big.wasm\"}]}", t.path, 99, false, AL_ERR_LIMIT,
                "100 bytes, more than the 99 allowed");
    expect_load("{\"wasm\": [{\"path\": \"m.wasm\"}]}", t.path, 8, true, 0, NULL);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t.path);
    assert_int_equal(system(cmd), 0);
}

/* ---- loading: url, against a loopback server ---------------------------------------------- */

typedef struct http_server {
    int fd;
    unsigned port;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    char last_head[4096];     /* the last request head received */
    unsigned long long stream_sent; /* bytes of /stream sent before the peer went away */
    bool stream_done;
    unsigned requests;
} http_server;

static bool send_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

static void respond(http_server *s, int c, const char *head) {
    char path[256] = "";
    sscanf(head, "%*s %255s", path);
    char hdr[512];
    if (!strcmp(path, "/module") || !strcmp(path, "/module?x")) {
        snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                 sizeof empty_module);
        if (send_all(c, hdr, strlen(hdr)) && strncmp(head, "HEAD ", 5) != 0)
            send_all(c, empty_module, sizeof empty_module);
    } else if (!strcmp(path, "/stream")) {
        /* no Content-Length: the body ends when the connection does, i.e. never,
         * unless the client gives up */
        const char *h = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
        unsigned long long sent = 0;
        static char chunk[65536];
        if (send_all(c, h, strlen(h)))
            while (sent < (256ull << 20) && send_all(c, chunk, sizeof chunk)) sent += sizeof chunk;
        pthread_mutex_lock(&s->lock);
        s->stream_sent = sent;
        s->stream_done = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
    } else if (!strcmp(path, "/bigcl")) {
        const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n";
        send_all(c, h, strlen(h));
        static char chunk[65536];
        for (int i = 0; i < 16 && send_all(c, chunk, sizeof chunk); i++) {
        }
    } else if (!strcmp(path, "/redir-file")) {
        const char *h = "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n";
        send_all(c, h, strlen(h));
    } else if (!strcmp(path, "/redir-ok")) {
        const char *h = "HTTP/1.1 302 Found\r\nLocation: /module\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        send_all(c, h, strlen(h));
    } else {
        const char *h = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found";
        send_all(c, h, strlen(h));
    }
}

static void serve_one(http_server *s, int c) {
    char head[4096];
    size_t n = 0;
    while (n < sizeof head - 1) {
        struct pollfd pfd = {.fd = c, .events = POLLIN};
        if (poll(&pfd, 1, 5000) <= 0) break;
        ssize_t r = recv(c, head + n, sizeof head - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        head[n] = '\0';
        if (strstr(head, "\r\n\r\n")) break;
    }
    head[n] = '\0';
    pthread_mutex_lock(&s->lock);
    snprintf(s->last_head, sizeof s->last_head, "%s", head);
    s->requests++;
    pthread_mutex_unlock(&s->lock);
    respond(s, c, head);
    close(c);
}

static void *server_main(void *arg) {
    http_server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0) continue;
        int c = accept(s->fd, NULL, NULL);
        if (c >= 0) serve_one(s, c);
    }
    return NULL;
}

static int server_setup(void **state) {
    http_server *s = calloc(1, sizeof *s);
    if (!s) return -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->fd, 8) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    s->port = ntohs(a.sin_port);
    if (pthread_create(&s->thread, NULL, server_main, s) != 0) return -1;
    *state = s;
    return 0;
}

static int server_teardown(void **state) {
    http_server *s = *state;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    close(s->fd);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return 0;
}

static void url_json(char *out, size_t cap, const http_server *s, const char *path,
                     const char *extra) {
    snprintf(out, cap, "{\"wasm\": [{\"url\": \"http://127.0.0.1:%u%s\"%s}]}", s->port, path, extra);
}

static void test_url_source(void **state) {
    http_server *s = *state;
    char json[512];
    url_json(json, sizeof json, s, "/module",
             ", \"hash\": \"" EMPTY_MODULE_SHA "\", \"headers\": {\"X-Token\": \"t0k\"}, "
             "\"method\": \"GET\", \"name\": \"main\"");
    expect_load(json, NULL, 0, true, 0, NULL);
    pthread_mutex_lock(&s->lock);
    assert_non_null(strstr(s->last_head, "GET /module HTTP/1.1\r\n"));
    assert_non_null(strstr(s->last_head, "\r\nX-Token: t0k\r\n"));
    assert_non_null(strstr(s->last_head, "\r\nUser-Agent: airlock\r\n"));
    pthread_mutex_unlock(&s->lock);

    url_json(json, sizeof json, s, "/module", ", \"hash\": \"" ZERO_SHA "\"");
    expect_load(json, NULL, 0, false, AL_ERR_ARGUMENT, "SHA-256 mismatch");
    url_json(json, sizeof json, s, "/module", ", \"method\": \"POST\"");
    expect_load(json, NULL, 0, true, 0, NULL);
    pthread_mutex_lock(&s->lock);
    assert_non_null(strstr(s->last_head, "POST /module HTTP/1.1\r\n"));
    pthread_mutex_unlock(&s->lock);
    /* a redirect to http is followed */
    url_json(json, sizeof json, s, "/redir-ok", "");
    expect_load(json, NULL, 0, true, 0, NULL);
    /* ... one to another scheme is not */
    url_json(json, sizeof json, s, "/redir-file", "");
    expect_load(json, NULL, 0, false, AL_ERR_SYSTEM, "manifest: wasm[0].url: ");
    url_json(json, sizeof json, s, "/missing", "");
    expect_load(json, NULL, 0, false, AL_ERR_SYSTEM, "404");
    /* exactly at the cap is fine, one byte under is not */
    url_json(json, sizeof json, s, "/module", "");
    expect_load(json, NULL, sizeof empty_module, true, 0, NULL);
    expect_load(json, NULL, sizeof empty_module - 1, false, AL_ERR_LIMIT,
                "larger than the 7 bytes allowed");
    /* a Content-Length past the cap is refused before the body */
    url_json(json, sizeof json, s, "/bigcl", "");
    expect_load(json, NULL, 65536, false, AL_ERR_LIMIT, "larger than the 65536 bytes allowed");
}

/* A body that never ends: the fetch aborts once it passes the cap, and the
 * server sees the connection go away long before its 256 MiB. */
static void test_url_aborts_mid_stream(void **state) {
    http_server *s = *state;
    pthread_mutex_lock(&s->lock);
    s->stream_done = false;
    pthread_mutex_unlock(&s->lock);
    char json[256];
    url_json(json, sizeof json, s, "/stream", "");
    expect_load(json, NULL, (size_t)1 << 20, false, AL_ERR_LIMIT,
                "manifest: wasm[0].url: the module is larger than the 1048576 bytes allowed "
                "(transfer aborted)");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&s->lock);
    while (!s->stream_done)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0) break;
    bool done = s->stream_done;
    unsigned long long sent = s->stream_sent;
    pthread_mutex_unlock(&s->lock);
    assert_true(done);
    /* the cap plus what the two sockets' buffers held, far from the whole */
    if (getenv("TEST_MANIFEST_VERBOSE")) print_message("server sent %llu bytes\n", sent);
    if (sent >= (64ull << 20)) fail_msg("the server sent %llu bytes before the abort", sent);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    /* url sources honour the environment's proxy, as curl does: the loopback
     * server must be reached directly */
    static const char *const proxies[] = {"http_proxy", "https_proxy", "HTTP_PROXY",
                                          "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
    for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++) unsetenv(proxies[i]);
    const struct CMUnitTest parsing[] = {
        cmocka_unit_test(test_empty_manifest),
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_nulls),
        cmocka_unit_test(test_allowed_hosts),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_messages_are_one_line),
        cmocka_unit_test(test_data_source),
        cmocka_unit_test(test_path_source),
        cmocka_unit_test(test_url_source),
        cmocka_unit_test(test_url_aborts_mid_stream),
    };
    return cmocka_run_group_tests(parsing, server_setup, server_teardown);
}
