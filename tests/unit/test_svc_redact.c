/*
 * test_svc_redact.c — unit tests of src/service/redact.c: secrets in
 * execution output replaced by "[REDACTED:<kind>]".
 *
 * Each built-in kind is checked on a realistic line (exact output: what is
 * kept around the secret matters as much as what goes), with near misses
 * that must stay; then configured regexes, binary data with NUL bytes,
 * overlapping matches, the kinds list, and the work caps (many matches, a
 * growth-heavy pattern). Every input is a heap copy of exactly len + 1 bytes
 * (NUL-terminated, as svc_redact requires), so ASan sees any overread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

/* ---- helpers ---------------------------------------------------------------------- */

typedef struct out {
    uint8_t *data;
    size_t len;
    size_t count;
    json_t *kinds;
} out;

static out run_n(const svc_redactor *r, const void *in, size_t len) {
    out o = {malloc(len + 1), len, 0, json_array()};
    assert_non_null(o.data);
    memcpy(o.data, in, len);
    o.data[len] = '\0';
    o.count = svc_redact(r, &o.data, &o.len, o.kinds);
    assert_int_equal(o.data[o.len], '\0');
    return o;
}

static out run(const svc_redactor *r, const char *in) { return run_n(r, in, strlen(in)); }

static void done(out *o) {
    free(o->data);
    json_decref(o->kinds);
}

/* in → want with count replacements. */
static void expect(const svc_redactor *r, const char *in, const char *want, size_t count) {
    out o = run(r, in);
    if (o.len != strlen(want) || memcmp(o.data, want, o.len) != 0)
        fail_msg("input:\n%s\ngot:\n%.*s\nwant:\n%s", in, (int)o.len, (const char *)o.data, want);
    assert_int_equal(o.count, count);
    done(&o);
}

static void expect_same(const svc_redactor *r, const char *in) { expect(r, in, in, 0); }

static bool has_kind(const json_t *kinds, const char *kind) {
    size_t i;
    json_t *v;
    json_array_foreach(kinds, i, v) {
        if (strcmp(json_string_value(v), kind) == 0) return true;
    }
    return false;
}

static svc_redactor *builtin(void) {
    char err[256];
    svc_redactor *r = svc_redactor_new(true, NULL, 0, err, sizeof err);
    assert_non_null(r);
    return r;
}

static svc_redactor *with_patterns(bool b, char *const *p, size_t n) {
    char err[256];
    svc_redactor *r = svc_redactor_new(b, p, n, err, sizeof err);
    if (!r) fail_msg("%s", err);
    return r;
}

/* ---- built-in kinds ---------------------------------------------------------------------- */

static void test_private_keys(void **state) {
    (void)state;
    svc_redactor *r = builtin();
    expect(r,
           "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx\nabc+/=\n"
           "-----END RSA PRIVATE KEY-----\ndone\n",
           "key:\n[REDACTED:private_key]\ndone\n", 1);
    expect(r, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
           "[REDACTED:private_key]", 1);
    expect(r, "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY----- y",
           "x [REDACTED:private_key] y", 1);
    expect(r, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nQQ\n-----END ENCRYPTED PRIVATE KEY-----\n",
           "[REDACTED:private_key]\n", 1);
    expect(r, "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
           "[REDACTED:private_key]", 1);
    /* cut off by the output cap: everything to the end goes */
    expect(r, "ok\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI", "ok\n[REDACTED:private_key]", 1);
    /* two keys */
    expect(r,
           "-----BEGIN PRIVATE KEY-----\nA\n-----END PRIVATE KEY-----\n"
           "-----BEGIN PRIVATE KEY-----\nB\n-----END PRIVATE KEY-----\n",
           "[REDACTED:private_key]\n[REDACTED:private_key]\n", 2);
    /* public material stays */
    expect_same(r, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    expect_same(r, "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n");
    expect_same(r, "-----BEGIN ");
    expect_same(r, "-----BEGIN PRIVATE KEY");
    svc_redactor_free(r);
}

static void test_aws(void **state) {
    (void)state;
    svc_redactor *r = builtin();
    expect(r, "id=AKIAIOSFODNN7EXAMPLE\n", "id=[REDACTED:aws_access_key]\n", 1);
    expect(r, "ASIAY34FZKBOKMUTVV7A,AKIAIOSFODNN7EXAMPLE",
           "[REDACTED:aws_access_key],[REDACTED:aws_access_key]", 2);
    expect_same(r, "XAKIAIOSFODNN7EXAMPLE");   /* inside a word */
    expect_same(r, "AKIAIOSFODNN7EXAMPLEX");   /* 17 characters */
    expect_same(r, "AKIAIOSFODNN7EXAMPL");     /* 15 */
    expect_same(r, "AKIAiosfodnn7example");    /* lower case */
    expect(r, "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
           "aws_secret_access_key = [REDACTED:aws_secret_key]\n", 1);
    expect(r, "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
           "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]", 1);
    expect(r, "{\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\"}",
           "{\"SecretAccessKey\": \"[REDACTED:aws_secret_key]\"}", 1);
    expect(r, "aws_secret_key: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
           "aws_secret_key: '[REDACTED:aws_secret_key]'", 1);
    expect_same(r, "aws_secret_access_key = short");
    expect_same(r, "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYX"); /* 41 */
    expect_same(r, "aws_secret_access_key");
    svc_redactor_free(r);
}

static void test_bearer_github_sk(void **state) {
    (void)state;
    svc_redactor *r = builtin();
    expect(r, "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc-_\n",
           "Authorization: Bearer [REDACTED:bearer_token]\n", 1);
    expect(r, "authorization: bearer   abcdefgh==", "authorization: bearer   [REDACTED:bearer_token]", 1);
    expect_same(r, "Bearer abc1234");       /* 7: too short */
    expect_same(r, "Bearer");
    expect_same(r, "Bearer ");
    expect_same(r, "xBearer abcdefghijk");  /* not a word of its own */
    expect(r, "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok",
           "token [REDACTED:github_token] ok", 1);
    expect_same(r, "ghp_abcdefghijklmnopqrstuvwxyz012345678"); /* 35 */
    expect(r, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
           "[REDACTED:github_token]", 1);
    expect(r, "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrst123\n",
           "OPENAI_API_KEY=[REDACTED:api_key]\n", 1);
    expect(r, "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "[REDACTED:api_key]", 1);
    expect_same(r, "task-abcdefghijklmnopqrstuvwxyz");
    expect_same(r, "sk-short");
    svc_redactor_free(r);
}

static void test_nothing_to_redact(void **state) {
    (void)state;
    svc_redactor *r = builtin();
    const char *text = "hello, world\nno secrets here: AKIA, Bearer, sk-, -----BEGIN\n";
    out o = {malloc(strlen(text) + 1), strlen(text), 0, json_array()};
    memcpy(o.data, text, o.len + 1);
    uint8_t *before = o.data;
    assert_int_equal(svc_redact(r, &o.data, &o.len, o.kinds), 0);
    assert_ptr_equal(o.data, before); /* same buffer */
    assert_int_equal(o.len, strlen(text));
    assert_memory_equal(o.data, text, o.len + 1);
    assert_int_equal(json_array_size(o.kinds), 0);
    done(&o);
    /* empty data, NULL redactor, NULL kinds */
    uint8_t *empty = calloc(1, 1);
    size_t zero = 0;
    assert_int_equal(svc_redact(r, &empty, &zero, NULL), 0);
    free(empty);
    uint8_t *d = (uint8_t *)strdup("AKIAIOSFODNN7EXAMPLE");
    size_t n = 20;
    assert_int_equal(svc_redact(NULL, &d, &n, NULL), 0);
    assert_int_equal(svc_redact(r, &d, &n, NULL), 1);
    assert_string_equal((char *)d, "[REDACTED:aws_access_key]");
    free(d);
    svc_redactor_free(r);
    /* builtin off: nothing */
    r = with_patterns(false, NULL, 0);
    expect_same(r, "AKIAIOSFODNN7EXAMPLE Bearer abcdefghijkl");
    svc_redactor_free(r);
}

/* ---- configured patterns ------------------------------------------------------------------ */

static void test_patterns(void **state) {
    (void)state;
    char *pats[] = {"secret-[0-9]+", "^password=.*$", "tok_[a-z]{4}"};
    svc_redactor *r = with_patterns(false, pats, 3);
    expect(r, "a secret-123 b secret-9", "a [REDACTED:pattern:0] b [REDACTED:pattern:0]", 2);
    /* REG_NEWLINE: ^ and $ at line boundaries, . stays on its line */
    expect(r, "user=x\npassword=hunter2\nnext\n", "user=x\n[REDACTED:pattern:1]\nnext\n", 1);
    expect_same(r, "my password=x");
    expect(r, "tok_abcd tok_ab", "[REDACTED:pattern:2] tok_ab", 1);
    out o = run(r, "secret-1 tok_wxyz");
    assert_int_equal(json_array_size(o.kinds), 2);
    assert_true(has_kind(o.kinds, "pattern:0"));
    assert_true(has_kind(o.kinds, "pattern:2"));
    done(&o);
    svc_redactor_free(r);
}

static void test_bad_patterns(void **state) {
    (void)state;
    char err[256];
    char *bad1[] = {"ok", "a("};
    assert_null(svc_redactor_new(true, bad1, 2, err, sizeof err));
    assert_non_null(strstr(err, "pattern 1: not a POSIX extended regex: "));
    char *bad2[] = {"x*"};
    assert_null(svc_redactor_new(true, bad2, 1, err, sizeof err));
    assert_string_equal(err, "pattern 0: matches the empty string");
    assert_false(svc_redact_pattern_check("(a|)", err, sizeof err));
    assert_string_equal(err, "matches the empty string");
    assert_false(svc_redact_pattern_check("[z-a]", err, sizeof err));
    assert_true(svc_redact_pattern_check("corp-[0-9a-f]{32}", err, sizeof err));
}

/* A pattern that can match empty at some places (\< never matches "")
 * must not loop or replace anything there. */
static void test_empty_matches(void **state) {
    (void)state;
    char *pats[] = {"\\<"};
    svc_redactor *r = with_patterns(false, pats, 1);
    expect_same(r, "several words in a line\nand another");
    svc_redactor_free(r);
}

/* ---- binary, overlaps, caps ------------------------------------------------------------------ */

static void test_binary_with_nul(void **state) {
    (void)state;
    char *pats[] = {"secret-[0-9]+"};
    svc_redactor *r = with_patterns(true, pats, 1);
    static const char in[] = "\x00\x01secret-42\x00\xff\xfe AKIAIOSFODNN7EXAMPLE\x00tail secret-7";
    static const char want[] = "\x00\x01[REDACTED:pattern:0]\x00\xff\xfe [REDACTED:aws_access_key]"
                               "\x00tail [REDACTED:pattern:0]";
    out o = run_n(r, in, sizeof in - 1);
    assert_int_equal(o.len, sizeof want - 1);
    assert_memory_equal(o.data, want, sizeof want - 1);
    assert_int_equal(o.count, 3);
    done(&o);
    /* a PEM key after a NUL, and a NUL inside "Bearer" */
    static const char in2[] = "\x00-----BEGIN PRIVATE KEY-----\nA\x00" "B\n-----END PRIVATE KEY-----\x00"
                              "Bea\x00rer abcdefghijk";
    out o2 = run_n(r, in2, sizeof in2 - 1);
    static const char want2[] = "\x00[REDACTED:private_key]\x00" "Bea\x00rer abcdefghijk";
    assert_int_equal(o2.len, sizeof want2 - 1);
    assert_memory_equal(o2.data, want2, sizeof want2 - 1);
    done(&o2);
    svc_redactor_free(r);
}

static void test_overlaps(void **state) {
    (void)state;
    char *pats[] = {"abc", "bcd", "AKIA[A-Z0-9]+"};
    svc_redactor *r = with_patterns(true, pats, 3);
    /* partial overlap: one replacement, the earlier kind shown, both reported */
    out o = run(r, "xabcdx");
    assert_string_equal((char *)o.data, "x[REDACTED:pattern:0]x");
    assert_int_equal(o.count, 1);
    assert_true(has_kind(o.kinds, "pattern:0"));
    assert_true(has_kind(o.kinds, "pattern:1"));
    done(&o);
    /* the same secret seen by a built-in and a pattern */
    o = run(r, "k=AKIAIOSFODNN7EXAMPLE;");
    assert_int_equal(o.count, 1);
    assert_int_equal(json_array_size(o.kinds), 2);
    assert_non_null(strstr((char *)o.data, "k=[REDACTED:"));
    assert_null(strstr((char *)o.data, "EXAMPLE"));
    done(&o);
    /* a bearer token inside a private key: the key wins, once */
    expect(r, "-----BEGIN PRIVATE KEY-----\nBearer abcdefghijkl\n-----END PRIVATE KEY-----",
           "[REDACTED:private_key]", 1);
    /* adjacent, not overlapping: two */
    expect(r, "abcabc", "[REDACTED:pattern:0][REDACTED:pattern:0]", 2);
    svc_redactor_free(r);
}

static void test_kinds_once(void **state) {
    (void)state;
    svc_redactor *r = builtin();
    out o = run(r, "AKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPL2 Bearer abcdefghij");
    assert_int_equal(o.count, 3);
    assert_int_equal(json_array_size(o.kinds), 2);
    assert_true(has_kind(o.kinds, "aws_access_key"));
    assert_true(has_kind(o.kinds, "bearer_token"));
    done(&o);
    /* kinds already present are not repeated; a non-array is ignored */
    json_t *kinds = json_pack("[s]", "aws_access_key");
    uint8_t *d = (uint8_t *)strdup("AKIAIOSFODNN7EXAMPLE");
    size_t n = 20;
    assert_int_equal(svc_redact(r, &d, &n, kinds), 1);
    assert_int_equal(json_array_size(kinds), 1);
    free(d);
    json_decref(kinds);
    json_t *obj = json_object();
    d = (uint8_t *)strdup("AKIAIOSFODNN7EXAMPLE");
    n = 20;
    assert_int_equal(svc_redact(r, &d, &n, obj), 1);
    assert_int_equal(json_object_size(obj), 0);
    free(d);
    json_decref(obj);
    svc_redactor_free(r);
}

/* 1 MiB of one-byte matches would become 20 MiB: the growth cap (1 MiB)
 * stops it, and the rest is redacted whole (nothing leaks past the cap). */
static void test_growth_cap(void **state) {
    (void)state;
    char *pats[] = {"x"};
    svc_redactor *r = with_patterns(false, pats, 1);
    size_t n = 1u << 20;
    char *in = malloc(n);
    assert_non_null(in);
    memset(in, 'x', n);
    out o = run_n(r, in, n);
    assert_true(o.len <= n + (1u << 20) + 64);
    for (size_t i = 0; i < o.len; i++)
        if (o.data[i] == 'x') fail_msg("an unredacted byte at %zu", i);
    const char *tail = "[REDACTED:pattern:0]";
    assert_memory_equal(o.data + o.len - strlen(tail), tail, strlen(tail));
    assert_true(o.count > 50000 && o.count < 60000);
    done(&o);
    free(in);
    svc_redactor_free(r);
}

/* More matches than are kept (2^17): the rest is redacted as
 * too_many_matches. The matches shrink the data, so growth is no issue. */
static void test_match_cap(void **state) {
    (void)state;
    char *pats[] = {"abcdefghijklmnopqrstuvwxyz[0-9]+"};
    svc_redactor *r = with_patterns(false, pats, 1);
    const char *unit = "abcdefghijklmnopqrstuvwxyz0123456789 ";
    size_t ul = strlen(unit), reps = 140000, n = reps * ul;
    char *in = malloc(n);
    assert_non_null(in);
    for (size_t i = 0; i < reps; i++) {
        memcpy(in + ul * i, unit, ul);
        if (i % 1000 == 999) in[ul * i + ul - 1] = '\n'; /* some lines */
    }
    out o = run_n(r, in, n);
    assert_null(strstr((char *)o.data, "abcdefghijklmnopqrstuvwxyz"));
    const char *tail = "[REDACTED:too_many_matches]";
    assert_memory_equal(o.data + o.len - strlen(tail), tail, strlen(tail));
    assert_true(has_kind(o.kinds, "too_many_matches"));
    assert_int_equal(o.count, (1u << 17) + 1);
    done(&o);
    free(in);
    svc_redactor_free(r);
}

/* Many lines, many matches, several patterns: linear enough under ASan. */
static void test_many_lines(void **state) {
    (void)state;
    char *pats[] = {"tok_[a-z]{6}", "^secret$", "zz[[:space:]]zz"};
    svc_redactor *r = with_patterns(true, pats, 3);
    size_t lines = 50000;
    char *in = malloc(lines * 32);
    assert_non_null(in);
    size_t n = 0;
    for (size_t i = 0; i < lines; i++)
        n += (size_t)sprintf(in + n, i % 2 ? "a tok_abcdef b\n" : "secret\nzz\nzz\n");
    out o = run_n(r, in, n);
    assert_int_equal(o.count, lines);
    assert_null(strstr((char *)o.data, "tok_"));
    assert_non_null(strstr((char *)o.data, "zz\nzz")); /* never across a line */
    done(&o);
    free(in);
    svc_redactor_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_private_keys),
        cmocka_unit_test(test_aws),
        cmocka_unit_test(test_bearer_github_sk),
        cmocka_unit_test(test_nothing_to_redact),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_bad_patterns),
        cmocka_unit_test(test_empty_matches),
        cmocka_unit_test(test_binary_with_nul),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_kinds_once),
        cmocka_unit_test(test_growth_cap),
        cmocka_unit_test(test_match_cap),
        cmocka_unit_test(test_many_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
