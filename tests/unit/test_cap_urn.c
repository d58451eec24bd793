/*
 * test_cap_urn.c — unit tests of the pure parsers of capabilities
 * (src/cap/urn.c, src/cap/manifest.c): the URN grammar
 * (urn:airlock:cap:NAME:VERSION, urn:airlock:cap:NAME@sha256:HEX) with the
 * OCI name / tag / digest rules, media types, the strict OCI manifest
 * parser fed hostile manifests, and the manifest builder (deterministic,
 * round-trips through the parser). Also the argument checks of
 * al_cap_fetch that happen before any network I/O.
 *
 * Inputs are copied into exactly-sized heap blocks (dup) so that
 * AddressSanitizer reports any read past the length the parser was given.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"

static char *dup_exact(const char *s, size_t len) {
    char *p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, s, len);
    return p;
}

static bool urn_ok(const char *urn, cap_ref *ref) {
    size_t len = strlen(urn);
    char *p = dup_exact(urn, len);
    al_error err;
    bool ok = cap_urn_parse(p, len, ref, &err);
    if (!ok) {
        assert_int_equal(err.kind, AL_ERR_ARGUMENT);
        assert_true(err.message[0] != '\0');
    }
    free(p);
    return ok;
}

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- URNs ------------------------------------------------------------------------------ */

static void test_urn_tag(void **state) {
    (void)state;
    cap_ref r;
    assert_true(urn_ok("urn:airlock:cap:count-vowels:1.0.0", &r));
    assert_string_equal(r.name, "count-vowels");
    assert_string_equal(r.tag, "1.0.0");
    assert_string_equal(r.digest, "");
    assert_true(urn_ok("urn:airlock:cap:acme/tools/fetch_url:v2_RC-1", &r));
    assert_string_equal(r.name, "acme/tools/fetch_url");
    assert_string_equal(r.tag, "v2_RC-1");
    assert_true(urn_ok("urn:airlock:cap:a__b.c--d/e:_latest", &r));
    assert_string_equal(r.tag, "_latest");
}

static void test_urn_digest(void **state) {
    (void)state;
    cap_ref r;
    assert_true(urn_ok("urn:airlock:cap:acme/x@sha256:" HEX64, &r));
    assert_string_equal(r.name, "acme/x");
    assert_string_equal(r.tag, "");
    assert_string_equal(r.digest, "sha256:" HEX64);
}

static void test_urn_refused(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "urn:airlock:cap:",
        "urn:airlock:cap:name",                 /* no version */
        "urn:airlock:cap:name:",                /* empty tag */
        "urn:airlock:cap::1.0",                 /* empty name */
        "URN:airlock:cap:name:1.0",             /* the prefix is exact */
        "urn:airlock:capx:name:1.0",
        " urn:airlock:cap:name:1.0",
        "urn:airlock:cap:name:1.0 ",
        "urn:airlock:cap:name:1.0\n",
        "urn:airlock:cap:Name:1.0",             /* uppercase name */
        "urn:airlock:cap:na..me:1.0",
        "urn:airlock:cap:na___me:1.0",
        "urn:airlock:cap:na_.me:1.0",
        "urn:airlock:cap:-name:1.0",
        "urn:airlock:cap:name-:1.0",
        "urn:airlock:cap:/name:1.0",
        "urn:airlock:cap:name/:1.0",
        "urn:airlock:cap:a//b:1.0",
        "urn:airlock:cap:../../v2/x:1.0",       /* path traversal */
        "urn:airlock:cap:a/./b:1.0",
        "urn:airlock:cap:a%2fb:1.0",
        "urn:airlock:cap:name:.1",              /* tag starts with '.' */
        "urn:airlock:cap:name:-1",
        "urn:airlock:cap:name:1.0?x=1",         /* query injection */
        "urn:airlock:cap:name:1.0#f",
        "urn:airlock:cap:name:1/0",
        "urn:airlock:cap:name:1:0",
        "urn:airlock:cap:name:1.0\r\nX-Evil: 1",/* header splitting */
        "urn:airlock:cap:name@sha256:" HEX64 "0",
        "urn:airlock:cap:name@sha256:0123",
        "urn:airlock:cap:name@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "urn:airlock:cap:name@sha512:" HEX64,
        "urn:airlock:cap:name@" HEX64,
        "urn:airlock:cap:name:1.0@sha256:" HEX64, /* both forms */
        "urn:airlock:cap:name@sha256:" HEX64 ":1.0",
        "urn:airlock:cap:name@",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cap_ref r;
        if (urn_ok(bad[i], &r)) fail_msg("accepted: %s", bad[i]);
        assert_string_equal(r.name, "");
    }
}

static void test_urn_nul_inside(void **state) {
    (void)state;
    static const char urn[] = "urn:airlock:cap:name:1.0\0evil";
    char *p = dup_exact(urn, sizeof urn - 1);
    cap_ref r;
    al_error err;
    assert_false(cap_urn_parse(p, sizeof urn - 1, &r, &err));
    assert_non_null(strstr(err.message, "NUL"));
    /* the message quotes hostile bytes escaped, never raw */
    assert_null(strchr(err.message, '\n'));
    free(p);
}

static void test_urn_lengths(void **state) {
    (void)state;
    char name[CAP_NAME_MAX + 2], tag[CAP_TAG_MAX + 2], urn[1024];
    cap_ref r;
    memset(name, 'a', sizeof name);
    memset(tag, '1', sizeof tag);
    /* the longest name and tag airlock accepts */
    snprintf(urn, sizeof urn, "urn:airlock:cap:%.*s:%.*s", CAP_NAME_MAX, name, CAP_TAG_MAX, tag);
    assert_true(urn_ok(urn, &r));
    assert_int_equal(strlen(r.name), CAP_NAME_MAX);
    assert_int_equal(strlen(r.tag), CAP_TAG_MAX);
    snprintf(urn, sizeof urn, "urn:airlock:cap:%.*s:1", CAP_NAME_MAX + 1, name);
    assert_false(urn_ok(urn, &r));
    snprintf(urn, sizeof urn, "urn:airlock:cap:a:%.*s", CAP_TAG_MAX + 1, tag);
    assert_false(urn_ok(urn, &r));
    /* a very long URN is refused on its length, quoted briefly */
    char big[8192];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, CAP_URN_PREFIX, sizeof CAP_URN_PREFIX - 1);
    al_error err;
    assert_false(cap_urn_parse(big, strlen(big), &r, &err));
    assert_true(strlen(err.message) < 200);
}

static void test_urn_format(void **state) {
    (void)state;
    char out[64];
    assert_true(cap_urn_format_tag(out, sizeof out, "a/b", "1.0"));
    assert_string_equal(out, "urn:airlock:cap:a/b:1.0");
    assert_false(cap_urn_format_tag(out, 10, "a/b", "1.0"));
}

/* The OCI grammar checks, each on a string of a given length. */
static const struct {
    bool (*valid)(const char *s, size_t len);
    const char *s;
    size_t len;
    bool ok;
} grammar[] = {
    {cap_name_valid, "a", 1, true},
    {cap_name_valid, "a0/b-c/d.e_f", 12, true},
    {cap_name_valid, "a---b", 5, true},
    {cap_name_valid, "a-_b", 4, false},
    {cap_name_valid, "a b", 3, false},
    {cap_name_valid, "", 0, false},
    {cap_tag_valid, "A", 1, true},
    {cap_tag_valid, "_", 1, true},
    {cap_tag_valid, "a b", 3, false},
    {cap_digest_valid, "sha256:" HEX64, 71, true},
    {cap_digest_valid, "sha256:" HEX64, 70, false}, /* one digit short */
    {cap_media_type_valid, "application/wasm", 16, true},
    {cap_media_type_valid, CAP_MEDIA_CONFIG, sizeof CAP_MEDIA_CONFIG - 1, true},
    {cap_media_type_valid, "application", 11, false},
    {cap_media_type_valid, "application/", 12, false},
    {cap_media_type_valid, "/wasm", 5, false},
    {cap_media_type_valid, "app lication/wasm", 17, false},
    {cap_media_type_valid, "application/wasm\r\n", 18, false},
    {cap_media_type_valid, "a/b/c", 5, false},
};

static void test_grammar(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof grammar / sizeof *grammar; i++)
        if (grammar[i].valid(grammar[i].s, grammar[i].len) != grammar[i].ok)
            fail_msg("grammar case %zu (\"%.*s\"): expected %s", i, (int)grammar[i].len,
                     grammar[i].s, grammar[i].ok ? "valid" : "invalid");
}

static void test_quote(void **state) {
    (void)state;
    char out[64];
    cap_quote(out, sizeof out, "a\"b\\\n\x01", 6);
    assert_string_equal(out, "\"a\\x22b\\x5c\\x0a\\x01\"");
    char long_in[100];
    memset(long_in, 'x', sizeof long_in);
    cap_quote(out, sizeof out, long_in, sizeof long_in);
    assert_non_null(strstr(out, "...\""));
    char tiny[4];
    cap_quote(tiny, sizeof tiny, "abc", 3);
    assert_string_equal(tiny, "");
}

/* ---- manifests ------------------------------------------------------------------------- */

#define CFG_D "sha256:" HEX64
#define WASM_D "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const char good_manifest[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"artifactType\":\"application/vnd.airlock.capability.v1\","
    "\"config\":{\"mediaType\":\"application/vnd.airlock.capability.config.v1+json\","
    "\"digest\":\"" CFG_D "\",\"size\":2},"
    "\"layers\":[{\"mediaType\":\"application/wasm\",\"digest\":\"" WASM_D "\",\"size\":1234}],"
    "\"annotations\":{\"dev.airlock.capability.event\":\"e1\","
    "\"org.opencontainers.image.created\":\"2026-01-01T00:00:00Z\"},"
    "\"subject\":{\"unknown\":true},\"x-extension\":[1,2,3]}";

static bool manifest_ok(const char *json, size_t len, cap_manifest *m, al_error *err) {
    char *p = dup_exact(json, len);
    bool ok = cap_manifest_parse(p, len, m, err);
    free(p);
    return ok;
}

static void test_manifest_good(void **state) {
    (void)state;
    cap_manifest m;
    al_error err;
    assert_true(manifest_ok(good_manifest, strlen(good_manifest), &m, &err));
    assert_int_equal(m.kind, CAP_LAYER_WASM);
    assert_string_equal(m.config.digest, CFG_D);
    assert_int_equal(m.config.size, 2);
    assert_string_equal(m.layer.digest, WASM_D);
    assert_int_equal(m.layer.size, 1234);
    assert_string_equal(m.artifact_type, CAP_ARTIFACT_TYPE);
    assert_string_equal(m.event, "e1");
    assert_string_equal(m.created, "2026-01-01T00:00:00Z");
}

/* good_manifest with the first occurrence of `from` replaced by `to`. */
static char *mutate(const char *from, const char *to) {
    const char *at = strstr(good_manifest, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - good_manifest);
    size_t len = strlen(good_manifest) - strlen(from) + strlen(to);
    char *out = malloc(len + 1);
    assert_non_null(out);
    memcpy(out, good_manifest, pre);
    memcpy(out + pre, to, strlen(to));
    strcpy(out + pre + strlen(to), at + strlen(from));
    return out;
}

/* good_manifest's one layer, as written there */
#define ONE_LAYER \
    "\"layers\":[{\"mediaType\":\"application/wasm\",\"digest\":\"" WASM_D "\",\"size\":1234}]"

/* Hostile edits of good_manifest: `from` replaced in turn by each of `to`
 * (up to four; "" deletes it); the refusal's message must contain `why`. */
static const struct {
    const char *from, *why;
    const char *to[4];
} hostile_edits[] = {
    {"\"schemaVersion\":2", "schemaVersion",
     {"\"schemaVersion\":1", "\"schemaVersion\":\"2\"", "\"schemaVersion\":2.0"}},
    {"\"schemaVersion\":2,", "schemaVersion", {""}},
    {"\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",", "mediaType", {""}},
    {"application/vnd.oci.image.manifest.v1+json", "media type",
     {"application/vnd.docker.distribution.manifest.v2+json",
      "application/vnd.oci.image.index.v1+json"}},
    {"application/vnd.airlock.capability.config.v1+json", "config media type",
     {"application/vnd.oci.image.config.v1+json"}},
    {"\"mediaType\":\"application/wasm\"", "layer media type",
     {"\"mediaType\":\"application/octet-stream\""}},
    {"\"mediaType\":\"application/wasm\"", "not a media type",
     {"\"mediaType\":\"application/wasm\\r\\nX: y\""}},
    {"\"size\":1234", "size",
     {"\"size\":-1", "\"size\":1e3", "\"size\":\"1234\"", "\"size\":null"}},
    {"\"size\":1234", "not JSON", {"\"size\":99999999999999999999999"}},
    {"\"size\":1234", "urls", {"\"size\":1234,\"urls\":[\"http://169.254.169.254/\"]"}},
    {"\"digest\":\"" WASM_D "\"", "digest",
     {"\"digest\":\"sha256:../../etc/passwd\"", "\"digest\":\"sha512:" HEX64 HEX64 "\"",
      "\"digest\":7"}},
    {"\"digest\":\"" CFG_D "\",", "digest", {""}},
    {"\"layers\":[{", "exactly one",
     {"\"layers\":[{\"mediaType\":\"application/wasm\",\"digest\":\"" WASM_D "\",\"size\":1},{"}},
    {ONE_LAYER, "exactly one", {"\"layers\":[]"}},
    {ONE_LAYER, "layers", {"\"layers\":{}"}},
    {ONE_LAYER, "not an object", {"\"layers\":[\"x\"]"}},
    {"\"config\":{", "config", {"\"config\":[],\"c\":{"}},
    {"\"annotations\":{", "annotations", {"\"annotations\":[],\"a\":{"}},
    {"\"artifactType\":\"application/vnd.airlock.capability.v1\"", "artifactType",
     {"\"artifactType\":\"x\"", "\"artifactType\":1"}},
    /* the parser differential attack: two keys, two readings */
    {"\"schemaVersion\":2,", "not JSON", {"\"schemaVersion\":2,\"schemaVersion\":2,"}},
    {"\"x-extension\":[1,2,3]", "not JSON", {"\"x-extension\":\"a\\u0000b\""}},
    {"\"x-extension\":[1,2,3]}", "not JSON", {"\"x-extension\":[1,2,3]}x"}},
};

static void test_manifest_hostile(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof hostile_edits / sizeof *hostile_edits; i++) {
        for (size_t j = 0; j < 4 && hostile_edits[i].to[j]; j++) {
            char *json = mutate(hostile_edits[i].from, hostile_edits[i].to[j]);
            cap_manifest m;
            al_error err;
            if (manifest_ok(json, strlen(json), &m, &err))
                fail_msg("edit %zu.%zu accepted: %s", i, j, json);
            if (!strstr(err.message, hostile_edits[i].why))
                fail_msg("edit %zu.%zu: message \"%s\" lacks \"%s\"", i, j, err.message,
                         hostile_edits[i].why);
            assert_string_equal(m.layer.digest, "");
            free(json);
        }
    }
}

static void test_manifest_not_objects(void **state) {
    (void)state;
    static const char *const bad[] = {"", "[]", "null", "2", "\"x\"", "{", "{}", "\xff\xfe{}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cap_manifest m;
        al_error err;
        assert_false(manifest_ok(bad[i], strlen(bad[i]), &m, &err));
        assert_true(err.kind == AL_ERR_MALFORMED);
    }
    cap_manifest m;
    al_error err;
    assert_false(cap_manifest_parse(NULL, 0, &m, &err));
    /* too large: refused before parsing */
    size_t big = CAP_MAX_MANIFEST_BYTES + 1;
    char *p = malloc(big);
    assert_non_null(p);
    memset(p, ' ', big);
    assert_false(cap_manifest_parse(p, big, &m, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    free(p);
}

static void test_manifest_annotations_untrusted(void **state) {
    (void)state;
    char *json = mutate("\"dev.airlock.capability.event\":\"e1\"",
                        "\"dev.airlock.capability.event\":\"e\\u001b[31m\"");
    cap_manifest m;
    al_error err;
    assert_true(manifest_ok(json, strlen(json), &m, &err));
    assert_string_equal(m.event, ""); /* control characters: dropped, not copied */
    free(json);
    json = mutate("\"dev.airlock.capability.event\":\"e1\"", "\"dev.airlock.capability.event\":5");
    assert_true(manifest_ok(json, strlen(json), &m, &err));
    assert_string_equal(m.event, "");
    free(json);
}

static void test_manifest_dag_layer(void **state) {
    (void)state;
    char *json = mutate("\"mediaType\":\"application/wasm\"",
                        "\"mediaType\":\"" CAP_MEDIA_DAG "\"");
    cap_manifest m;
    al_error err;
    assert_true(manifest_ok(json, strlen(json), &m, &err));
    assert_int_equal(m.kind, CAP_LAYER_DAG);
    free(json);
}

static void test_manifest_build_roundtrip(void **state) {
    (void)state;
    cap_manifest_spec spec;
    memset(&spec, 0, sizeof spec);
    strcpy(spec.config.media_type, CAP_MEDIA_CONFIG);
    strcpy(spec.config.digest, CFG_D);
    spec.config.size = 2;
    strcpy(spec.layer.media_type, CAP_MEDIA_WASM);
    strcpy(spec.layer.digest, WASM_D);
    spec.layer.size = 99;
    spec.name = "acme/x";
    spec.version = "1.0";
    spec.event = "0123abcd";
    spec.created = "2026-11-21T10:00:00Z";
    spec.digest = WASM_D;
    size_t len1, len2;
    al_error err;
    char *a = cap_manifest_build(&spec, &len1, &err);
    char *b = cap_manifest_build(&spec, &len2, &err);
    assert_non_null(a);
    assert_non_null(b);
    /* one event, one byte string: what makes the tag check after a crash work */
    assert_int_equal(len1, len2);
    assert_memory_equal(a, b, len1);
    cap_manifest m;
    assert_true(cap_manifest_parse(a, len1, &m, &err));
    assert_string_equal(m.layer.digest, WASM_D);
    assert_int_equal(m.layer.size, 99);
    assert_string_equal(m.config.digest, CFG_D);
    assert_string_equal(m.event, "0123abcd");
    assert_string_equal(m.created, "2026-11-21T10:00:00Z");
    assert_string_equal(m.artifact_type, CAP_ARTIFACT_TYPE);
    assert_non_null(strstr(a, "\"org.opencontainers.image.created\":\"2026-11-21T10:00:00Z\""));
    /* another event id, another manifest */
    spec.event = "ffff";
    char *c = cap_manifest_build(&spec, &len2, &err);
    assert_non_null(c);
    assert_true(len1 != len2 || memcmp(a, c, len1) != 0);
    free(a);
    free(b);
    free(c);
}

static void test_sha256(void **state) {
    (void)state;
    char d[CAP_DIGEST_SIZE];
    assert_true(cap_sha256_digest((const uint8_t *)"abc", 3, d));
    assert_string_equal(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* ---- registry settings and al_cap_fetch's refusals before any I/O ----------------------- */

static void test_client_urls(void **state) {
    (void)state;
    static const char *const good[] = {"http://127.0.0.1:5000", "https://registry.example.com/",
                                       "http://[::1]:5000", "http://localhost"};
    static const char *const bad[] = {"ftp://x", "http://", "http://user:pw@host",
                                      "http://host/path", "http://host:0", "http://host:99999",
                                      "http://host?x", "http://host#f", "http://ho st",
                                      "file:///etc/passwd", "http://host:5000/v2/", "HTTP://host"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        al_registry r = {.url = good[i]};
        cap_client c;
        al_error err;
        if (!cap_client_init(&c, &r, &err)) fail_msg("refused %s: %s", good[i], err.message);
        assert_int_equal(c.max_blob_bytes, CAP_DEFAULT_MAX_BLOB_BYTES);
        assert_int_equal(c.timeout_ms, CAP_DEFAULT_TIMEOUT_MS);
        assert_true(c.base[strlen(c.base) - 1] != '/');
        cap_client_fini(&c);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        al_registry r = {.url = bad[i]};
        cap_client c;
        al_error err;
        if (cap_client_init(&c, &r, &err)) fail_msg("accepted %s", bad[i]);
        assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    }
    /* a token with CR/LF would add headers */
    al_registry r = {.url = "http://127.0.0.1:5000", .auth_token = "abc\r\nX-Evil: 1"};
    cap_client c;
    al_error err;
    assert_false(cap_client_init(&c, &r, &err));
    r.auth_token = "abc.def-ghi";
    assert_true(cap_client_init(&c, &r, &err));
    assert_string_equal(c.auth_header, "Authorization: Bearer abc.def-ghi");
    cap_client_fini(&c);
}

static void test_fetch_refuses_early(void **state) {
    (void)state;
    al_registry r = {.url = "http://127.0.0.1:1"};
    al_capability cap;
    al_error err;
    assert_false(al_cap_fetch(&r, "urn:airlock:cap:../x:1", &cap, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_null(cap.wasm);
    al_registry bad = {.url = "gopher://x"};
    assert_false(al_cap_fetch(&bad, "urn:airlock:cap:x:1", &cap, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    /* a closed port: the registry is unreachable, reported as a system error */
    assert_false(al_cap_fetch(&r, "urn:airlock:cap:x:1", &cap, &err));
    assert_int_equal(err.kind, AL_ERR_SYSTEM);
    assert_non_null(strstr(err.message, "unreachable"));
    assert_int_equal(cap.bytes_read, 0);
    al_capability_free(&cap);
    al_capability_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urn_tag),
        cmocka_unit_test(test_urn_digest),
        cmocka_unit_test(test_urn_refused),
        cmocka_unit_test(test_urn_nul_inside),
        cmocka_unit_test(test_urn_lengths),
        cmocka_unit_test(test_urn_format),
        cmocka_unit_test(test_grammar),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_manifest_good),
        cmocka_unit_test(test_manifest_hostile),
        cmocka_unit_test(test_manifest_not_objects),
        cmocka_unit_test(test_manifest_annotations_untrusted),
        cmocka_unit_test(test_manifest_dag_layer),
        cmocka_unit_test(test_manifest_build_roundtrip),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_client_urls),
        cmocka_unit_test(test_fetch_refuses_early),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
