/*
 * test_http_head.c — unit tests of src/net/http_head.c: HTTP/1.x request
 * heads parsed from hostile bytes (http_parse_request), the Host check
 * (http_host_matches), the head rewritten for the origin
 * (http_rewrite_request) and the end of a chunked body (http_chunked_scan).
 *
 * Every input is copied to an exactly-sized heap block before it is parsed,
 * so AddressSanitizer reports any read past its end. The smuggling cases
 * (CL+TE, duplicate CL, transfer codings, bare LF, obs-fold, whitespace
 * before ':', NUL in a value) each change one thing in an otherwise good
 * request, so a MALFORMED verdict is about that one thing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

/* ---- helpers ------------------------------------------------------------------ */

/* A parsed request and the heap copy its pointers point into. */
typedef struct parsed {
    char *copy;
    http_request req;
    const char *why;
    http_head_result result;
} parsed;

static char *dup_bytes(const char *s, size_t n)
{
    char *c = malloc(n ? n : 1);
    assert_non_null(c);
    memcpy(c, s, n);
    return c;
}

static parsed *parse_n(const char *s, size_t n)
{
    parsed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->copy = dup_bytes(s, n);
    p->result = http_parse_request(p->copy, n, &p->req, &p->why);
    if (p->result == HTTP_HEAD_MALFORMED)
        assert_non_null(p->why);
    return p;
}

static parsed *parse(const char *s) { return parse_n(s, strlen(s)); }

static void done(parsed *p)
{
    free(p->copy);
    free(p);
}

static http_head_result verdict_n(const char *s, size_t n)
{
    parsed *p = parse_n(s, n);
    http_head_result r = p->result;
    done(p);
    return r;
}

static http_head_result verdict(const char *s) { return verdict_n(s, strlen(s)); }

#define EXPECT_MALFORMED(s) assert_int_equal(verdict(s), HTTP_HEAD_MALFORMED)
#define EXPECT_OK(s) assert_int_equal(verdict(s), HTTP_HEAD_OK)

/* A good request with one header line (CRLF included) put in. */
static http_head_result with_header(const char *line)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\n%s"
                     "Accept: */*\r\n\r\n", line);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    return verdict_n(buf, (size_t)n);
}

/* Every prefix of s gives NEED_MORE or the verdict of the whole. */
static void check_prefixes(const char *s)
{
    size_t n = strlen(s);
    http_head_result whole = verdict_n(s, n);
    for (size_t i = 0; i < n; i++) {
        http_head_result r = verdict_n(s, i);
        if (r != HTTP_HEAD_NEED_MORE)
            assert_int_equal(r, whole);
    }
}

/* Rewrite into a large buffer, as a NUL-terminated string (caller frees). */
static char *rewrite(const http_request *req, const http_added_header *add, size_t nadd)
{
    char *out = malloc(HTTP_HEAD_MAX + 1);
    assert_non_null(out);
    size_t n = http_rewrite_request(req, add, nadd, out, HTTP_HEAD_MAX);
    out[n] = '\0';
    return out;
}

/* ---- good requests ------------------------------------------------------------- */

static void test_get_absolute(void **state)
{
    static const char get[] = "GET http://Example.COM./a/b?c=1&d HTTP/1.1\r\n"
                              "Host: EXAMPLE.com\r\nUser-Agent: curl/7.88\r\n"
                              "Accept:\t*/* \r\n\r\nBODY";
    parsed *p = parse(get);
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_null(p->why);
    assert_string_equal(p->req.method, "GET");
    assert_false(p->req.is_connect);
    assert_string_equal(p->req.host, "example.com");
    assert_int_equal(p->req.port, 80);
    assert_int_equal(p->req.path_len, strlen("/a/b?c=1&d"));
    assert_memory_equal(p->req.path, "/a/b?c=1&d", p->req.path_len);
    assert_int_equal(p->req.version_minor, 1);
    assert_int_equal(p->req.head_len, strlen(get) - 4);
    assert_int_equal(p->req.nheaders, 3);
    assert_int_equal(p->req.headers[2].value_len, 3); /* blanks trimmed */
    assert_memory_equal(p->req.headers[2].value, "*/*", 3);
    assert_true(p->req.has_host_header);
    assert_string_equal(p->req.host_header, "example.com");
    assert_int_equal(p->req.host_header_port, 80);
    assert_false(p->req.has_content_length);
    assert_false(p->req.chunked);
    assert_true(http_host_matches(&p->req));
    done(p);
    EXPECT_OK("GET hTTp://a.b HTTP/1.1\r\n\r\n");        /* scheme case-insensitive */
    EXPECT_OK("GET http://under_score.example/ HTTP/1.1\r\n\r\n");
}

static void test_post_content_length(void **state)
{
    static const char post[] = "POST http://api.example.com:8080/v1 HTTP/1.1\r\n"
                               "Host: api.example.com:8080\r\nContent-Length: 5\r\n\r\nhello";
    parsed *p = parse(post);
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_int_equal(p->req.port, 8080);
    assert_true(p->req.has_content_length);
    assert_int_equal(p->req.content_length, 5);
    assert_int_equal(p->req.head_len, strlen(post) - 5);
    assert_true(http_host_matches(&p->req));
    done(p);
    p = parse("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding:  Chunked \r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_true(p->req.chunked);
    assert_false(p->req.has_content_length);
    done(p);
}

static void test_connect(void **state)
{
    parsed *p = parse("CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
                      "Proxy-Authorization: Basic eDp5\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_true(p->req.is_connect);
    assert_string_equal(p->req.host, "example.com");
    assert_int_equal(p->req.port, 443);
    assert_int_equal(p->req.path_len, 0);
    assert_true(http_host_matches(&p->req));
    char out[256];
    assert_int_equal(http_rewrite_request(&p->req, NULL, 0, out, sizeof out), 0);
    done(p);
    /* Host without a port on CONNECT: the CONNECT port */
    p = parse("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_true(http_host_matches(&p->req));
    done(p);
    EXPECT_MALFORMED("CONNECT example.com HTTP/1.1\r\n\r\n");         /* port required */
    EXPECT_MALFORMED("CONNECT example.com:443/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("CONNECT http://example.com:443 HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("CONNECT u@example.com:443 HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("CONNECT example.com:0 HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("CONNECT example.com: HTTP/1.1\r\n\r\n");
    /* no body on CONNECT */
    EXPECT_OK("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    EXPECT_MALFORMED("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n");
    EXPECT_MALFORMED("CONNECT a.example:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    /* the method is case-sensitive: "connect" is some other method, which
     * needs an absolute URL */
    EXPECT_MALFORMED("connect example.com:443 HTTP/1.1\r\n\r\n");
}

static void test_ipv6(void **state)
{
    parsed *p = parse("GET http://[2001:DB8:0::1]:8080/x HTTP/1.1\r\n"
                      "Host: [2001:db8::0:1]:8080\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_string_equal(p->req.host, "2001:db8::1");
    assert_int_equal(p->req.port, 8080);
    assert_string_equal(p->req.host_header, "2001:db8::1");
    assert_true(http_host_matches(&p->req));
    char *out = rewrite(&p->req, NULL, 0);
    assert_string_equal(out, "GET /x HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n"
                             "Connection: close\r\n\r\n");
    free(out);
    done(p);
    p = parse("CONNECT [::1]:443 HTTP/1.1\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_string_equal(p->req.host, "::1");
    done(p);
    EXPECT_MALFORMED("GET http://[::1/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://[::g]/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://[fe80::1%25eth0]/ HTTP/1.1\r\n\r\n"); /* zone */
    EXPECT_MALFORMED("GET http://[1.2.3.4]/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://[::1]x/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://::1/ HTTP/1.1\r\n\r\n");
}

static void test_ipv4_forms(void **state)
{
    parsed *p = parse("GET http://192.0.2.1:81/ HTTP/1.1\r\nHost: 192.0.2.1:81\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_string_equal(p->req.host, "192.0.2.1");
    assert_true(http_host_matches(&p->req));
    done(p);
    /* forms inet_aton (and so getaddrinfo) reads as 127.0.0.1 */
    EXPECT_MALFORMED("GET http://127.1/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://2130706433/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://0x7f.0.0.1/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://0x7f000001/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://0177.0.0.1/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://256.1.1.1/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://1.2.3.4.5/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://example.com/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n");
}

static void test_http10(void **state)
{
    parsed *p = parse("GET http://example.com/ HTTP/1.0\r\nUser-Agent: old\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_int_equal(p->req.version_minor, 0);
    assert_false(p->req.has_host_header);
    assert_true(http_host_matches(&p->req));
    char *out = rewrite(&p->req, NULL, 0);
    /* the client's version is kept: a 1.0 client cannot read chunked */
    assert_string_equal(out, "GET / HTTP/1.0\r\nHost: example.com\r\nUser-Agent: old\r\n"
                             "Connection: close\r\n\r\n");
    free(out);
    done(p);
    EXPECT_MALFORMED("POST http://a.example/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.2\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/2.0\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ http/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1 \r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/\r\n\r\n");           /* HTTP/0.9 */
    EXPECT_MALFORMED("GET  http://a.example/ HTTP/1.1\r\n\r\n");  /* two spaces */
    EXPECT_MALFORMED("GET http://a.example/ x HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET\thttp://a.example/ HTTP/1.1\r\n\r\n");
}

static void test_methods(void **state)
{
    EXPECT_OK("PATCH http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_OK("M-SEARCH http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_OK("ABCDEFGHIJKLMNOPQRSTUVW http://a.example/ HTTP/1.1\r\n\r\n"); /* 23 */
    EXPECT_MALFORMED("ABCDEFGHIJKLMNOPQRSTUVWX http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GE(T http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED(" GET http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("\r\nGET http://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("\r\n\r\n");
}

/* ---- targets and host names ------------------------------------------------------- */

static void test_bad_targets(void **state)
{
    EXPECT_MALFORMED("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n");      /* origin-form */
    EXPECT_MALFORMED("GET https://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET ftp://a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("OPTIONS * HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://user:pw@a.example/ HTTP/1.1\r\n\r\n");  /* userinfo */
    EXPECT_MALFORMED("GET http://allowed.example@evil.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/#frag HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http:///x HTTP/1.1\r\n\r\n");                  /* empty host */
    EXPECT_MALFORMED("GET http:// HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:0/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:65536/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:+80/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:123456/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example:80:80/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a%2eexample/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/\x80 HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/\x01 HTTP/1.1\r\n\r\n");
    EXPECT_OK("GET http://a.example:65535/ HTTP/1.1\r\n\r\n");
    EXPECT_OK("GET http://a.example:1 HTTP/1.1\r\n\r\n");
}

static void test_host_names(void **state)
{
    char label63[64], label64[65];
    memset(label63, 'a', 63);
    label63[63] = '\0';
    memset(label64, 'a', 64);
    label64[64] = '\0';
    char buf[1024];
    snprintf(buf, sizeof buf, "GET http://%s.example/ HTTP/1.1\r\n\r\n", label63);
    EXPECT_OK(buf);
    snprintf(buf, sizeof buf, "GET http://%s.example/ HTTP/1.1\r\n\r\n", label64);
    EXPECT_MALFORMED(buf);
    /* 253 bytes in all: four labels of 63 and one "b" (63*4 + 3 dots = 255:
     * too long); 3 * 63 + "x" * 61 + 3 dots = 253 */
    char name[300];
    snprintf(name, sizeof name, "%s.%s.%s.", label63, label63, label63);
    size_t n = strlen(name);
    memset(name + n, 'x', 61);
    name[n + 61] = '\0';
    assert_int_equal(strlen(name), 253);
    snprintf(buf, sizeof buf, "GET http://%s./ HTTP/1.1\r\n\r\n", name); /* trailing dot */
    parsed *p = parse(buf);
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_string_equal(p->req.host, name);
    done(p);
    snprintf(buf, sizeof buf, "GET http://%sx/ HTTP/1.1\r\n\r\n", name);    /* 254 */
    EXPECT_MALFORMED(buf);
    EXPECT_MALFORMED("GET http://a..example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://.a.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example../ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://./ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a!b.example/ HTTP/1.1\r\n\r\n");
    EXPECT_MALFORMED("GET http://a\\b.example/ HTTP/1.1\r\n\r\n");
}

/* ---- smuggling ----------------------------------------------------------------- */

static void test_smuggle_cl_te(void **state)
{
    assert_int_equal(with_header("Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n"),
                     HTTP_HEAD_MALFORMED);
    parsed *p = parse("POST http://a.example/ HTTP/1.1\r\nContent-Length: 4\r\n"
                      "transfer-encoding: chunked\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_MALFORMED);
    assert_string_equal(p->why, "both Content-Length and Transfer-Encoding");
    done(p);
}

static void test_smuggle_duplicate_cl(void **state)
{
    assert_int_equal(with_header("Content-Length: 4\r\nContent-Length: 4\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: 4\r\ncontent-length: 5\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: 4, 4\r\n"), HTTP_HEAD_MALFORMED);
}

static void test_bad_content_length(void **state)
{
    assert_int_equal(with_header("Content-Length: 0\r\n"), HTTP_HEAD_OK);
    assert_int_equal(with_header("Content-Length: 9007199254740992\r\n"), HTTP_HEAD_OK);
    assert_int_equal(with_header("Content-Length: 9007199254740993\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: 99999999999999999999999\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: -1\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: +5\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: 0x10\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length: 5 5\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Content-Length:\r\n"), HTTP_HEAD_MALFORMED);
    parsed *p = parse("POST http://a.example/ HTTP/1.1\r\nContent-Length:  0042 \r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_int_equal(p->req.content_length, 42);
    done(p);
}

static void test_smuggle_transfer_codings(void **state)
{
    assert_int_equal(with_header("Transfer-Encoding: gzip\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: gzip, chunked\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: chunked, chunked\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: identity\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: xchunked\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
                     HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding:\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding: \tCHUNKED\t\r\n"), HTTP_HEAD_OK);
}

static void test_smuggle_bare_lf(void **state)
{
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\nHost: a.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\n\n");
    /* refused as soon as seen, without waiting for a CRLFCRLF */
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nX: 1\nContent-Length: 5");
    /* bare CR */
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nX: a\rb\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\r\n\r\n");
    /* a CR at the very end may still be followed by its LF */
    assert_int_equal(verdict("GET http://a.example/ HTTP/1.1\r"), HTTP_HEAD_NEED_MORE);
}

static void test_smuggle_obs_fold(void **state)
{
    assert_int_equal(with_header("X-A: one\r\n two\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-A: one\r\n\ttwo\r\n"), HTTP_HEAD_MALFORMED);
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\n Host: b.example\r\n\r\n");
}

static void test_smuggle_space_before_colon(void **state)
{
    assert_int_equal(with_header("Content-Length : 5\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("Transfer-Encoding\t: chunked\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X Y: 1\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header(": 1\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("NoColon\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X\"Y: 1\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-Y:1\r\n"), HTTP_HEAD_OK);
    assert_int_equal(with_header("X-Y:\r\n"), HTTP_HEAD_OK); /* empty value */
}

static void test_smuggle_control_in_value(void **state)
{
    static const char nul[] = "POST http://a.example/ HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
    assert_int_equal(verdict_n(nul, sizeof nul - 1), HTTP_HEAD_MALFORMED);
    static const char nul_name[] = "POST http://a.example/ HTTP/1.1\r\nX\0A: ab\r\n\r\n";
    assert_int_equal(verdict_n(nul_name, sizeof nul_name - 1), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-A: a\x01" "b\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-A: a\x7f" "b\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-A: a\x1b[31m\r\n"), HTTP_HEAD_MALFORMED);
    assert_int_equal(with_header("X-A: a\tb\r\n"), HTTP_HEAD_OK);
    assert_int_equal(with_header("X-A: caf\xc3\xa9\r\n"), HTTP_HEAD_OK); /* obs-text */
}

/* ---- Host header ------------------------------------------------------------------ */

static void test_host_mismatch_name(void **state)
{
    parsed *p = parse("GET http://allowed.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_false(http_host_matches(&p->req));
    done(p);
    p = parse("GET http://allowed.example/ HTTP/1.1\r\nHost: Allowed.Example.\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_true(http_host_matches(&p->req));
    done(p);
    p = parse("GET http://[::1]/ HTTP/1.1\r\nHost: [::2]\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_false(http_host_matches(&p->req));
    done(p);
}

static void test_host_mismatch_port(void **state)
{
    parsed *p = parse("GET http://a.example:8080/ HTTP/1.1\r\nHost: a.example\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_int_equal(p->req.host_header_port, 80);
    assert_false(http_host_matches(&p->req));
    done(p);
    p = parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example:81\r\n\r\n");
    assert_false(http_host_matches(&p->req));
    done(p);
    p = parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example:80\r\n\r\n");
    assert_true(http_host_matches(&p->req));
    done(p);
    p = parse("GET http://a.example:80/ HTTP/1.1\r\nHost: a.example\r\n\r\n");
    assert_true(http_host_matches(&p->req));
    done(p);
}

static void test_host_header_malformed(void **state)
{
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost:\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example:0\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: u@a.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example/x\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example b.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: a.example, b.example\r\n\r\n");
    EXPECT_MALFORMED("GET http://a.example/ HTTP/1.1\r\nHost: [::1\r\n\r\n");
}

/* ---- limits ------------------------------------------------------------------------ */

static void test_too_many_headers(void **state)
{
    char *buf = malloc(HTTP_HEAD_MAX);
    assert_non_null(buf);
    for (size_t count = HTTP_MAX_HEADERS; count <= HTTP_MAX_HEADERS + 1; count++) {
        size_t n = (size_t)sprintf(buf, "GET http://a.example/ HTTP/1.1\r\n");
        for (size_t i = 0; i < count; i++)
            n += (size_t)sprintf(buf + n, "X-%zu: v\r\n", i);
        n += (size_t)sprintf(buf + n, "\r\n");
        parsed *p = parse_n(buf, n);
        if (count == HTTP_MAX_HEADERS) {
            assert_int_equal(p->result, HTTP_HEAD_OK);
            assert_int_equal(p->req.nheaders, HTTP_MAX_HEADERS);
        } else {
            assert_int_equal(p->result, HTTP_HEAD_MALFORMED);
        }
        done(p);
    }
    free(buf);
}

/* A request of exactly total bytes (head end included) with a padding header. */
static char *sized_request(size_t total, bool with_end)
{
    static const char start[] = "GET http://a.example/ HTTP/1.1\r\nX-Pad: ";
    size_t s = sizeof start - 1;
    char *buf = malloc(total);
    assert_non_null(buf);
    memcpy(buf, start, s);
    memset(buf + s, 'p', total - s);
    if (with_end)
        memcpy(buf + total - 4, "\r\n\r\n", 4);
    return buf;
}

static void test_head_size_boundary(void **state)
{
    /* exactly HTTP_HEAD_MAX bytes with the CRLFCRLF: OK */
    char *buf = sized_request(HTTP_HEAD_MAX, true);
    parsed *p = parse_n(buf, HTTP_HEAD_MAX);
    assert_int_equal(p->result, HTTP_HEAD_OK);
    assert_int_equal(p->req.head_len, HTTP_HEAD_MAX);
    done(p);
    free(buf);
    /* one byte more: the end is out of reach */
    buf = sized_request(HTTP_HEAD_MAX + 1, true);
    assert_int_equal(verdict_n(buf, HTTP_HEAD_MAX + 1), HTTP_HEAD_TOO_LARGE);
    free(buf);
    /* no end yet: NEED_MORE below the limit, TOO_LARGE at it and past it */
    buf = sized_request(HTTP_HEAD_MAX + 10, false);
    assert_int_equal(verdict_n(buf, HTTP_HEAD_MAX - 1), HTTP_HEAD_NEED_MORE);
    assert_int_equal(verdict_n(buf, HTTP_HEAD_MAX), HTTP_HEAD_TOO_LARGE);
    assert_int_equal(verdict_n(buf, HTTP_HEAD_MAX + 10), HTTP_HEAD_TOO_LARGE);
    free(buf);
    assert_int_equal(verdict_n("", 0), HTTP_HEAD_NEED_MORE);
    assert_int_equal(verdict("GET http://a.example/ HTTP/1.1\r\n\r"), HTTP_HEAD_NEED_MORE);
    const char *why = "x";
    http_request req;
    assert_int_equal(http_parse_request(NULL, 0, &req, &why), HTTP_HEAD_NEED_MORE);
    assert_null(why);
    assert_int_equal(http_parse_request("GET\n", 4, &req, NULL), HTTP_HEAD_MALFORMED);
}

static void test_prefix_stability(void **state)
{
    check_prefixes("GET http://a.example/x HTTP/1.1\r\nHost: a.example\r\n\r\nbody");
    check_prefixes("POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n");
    check_prefixes("GET http://a.example/ HTTP/1.1\r\nX: 1\nY: 2\r\n\r\n");
    check_prefixes("GET http://a.example/ HTTP/1.1\r\nX: 1\rY: 2\r\n\r\n");
    check_prefixes("CONNECT a.example:443 HTTP/1.1\r\n\r\n");
}

/* ---- rewrite ------------------------------------------------------------------------ */

static const char hop_request[] =
    "POST http://api.example.com/v1/x?y=1 HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "User-Agent: test\r\n"
    "Proxy-Authorization: Basic c2VjcmV0\r\n"
    "Proxy-Connection: keep-alive\r\n"
    "Proxy: http://evil.example:1/\r\n"
    "authorization: Bearer from-the-sandbox\r\n"
    "Connection: keep-alive, X-Hop , upgrade\r\n"
    "Keep-Alive: timeout=5\r\n"
    "X-Hop: 1\r\n"
    "TE: trailers\r\n"
    "Upgrade: websocket\r\n"
    "Trailer: X-Sum\r\n"
    "Content-Length: 3\r\n"
    "Accept: */*\r\n"
    "\r\n";

static void test_rewrite_basic(void **state)
{
    parsed *p = parse("GET http://Example.com/index.html HTTP/1.1\r\nHost: example.com\r\n"
                      "User-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    char *out = rewrite(&p->req, NULL, 0);
    assert_string_equal(out, "GET /index.html HTTP/1.1\r\n"
                             "Host: example.com\r\n"
                             "User-Agent: curl/7.88.1\r\n"
                             "Accept: */*\r\n"
                             "Connection: close\r\n\r\n");
    free(out);
    done(p);
}

static void test_rewrite_headers(void **state)
{
    parsed *p = parse(hop_request);
    assert_int_equal(p->result, HTTP_HEAD_OK);
    const http_added_header add[] = {
        { "Authorization", "Bearer granted-token" },
        { "X-Api-Key", "k1" },
    };
    char *out = rewrite(&p->req, add, 2);
    assert_string_equal(out, "POST /v1/x?y=1 HTTP/1.1\r\n"
                             "Host: api.example.com\r\n"
                             "User-Agent: test\r\n"
                             "Trailer: X-Sum\r\n"
                             "Content-Length: 3\r\n"
                             "Accept: */*\r\n"
                             "Authorization: Bearer granted-token\r\n"
                             "X-Api-Key: k1\r\n"
                             "Connection: close\r\n\r\n");
    assert_null(strstr(out, "c2VjcmV0"));
    assert_null(strstr(out, "evil"));
    assert_null(strstr(out, "from-the-sandbox"));
    free(out);
    done(p);
}

static void test_rewrite_keeps_framing(void **state)
{
    /* "Connection: Content-Length" must not strip the body's framing */
    parsed *p = parse("POST http://a.example:8080/ HTTP/1.1\r\n"
                      "Connection: Content-Length, Transfer-Encoding, X-A\r\n"
                      "Content-Length: 2\r\nX-A: 1\r\nX-B: 2\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    char *out = rewrite(&p->req, NULL, 0);
    assert_string_equal(out, "POST / HTTP/1.1\r\n"
                             "Host: a.example:8080\r\n"
                             "Content-Length: 2\r\n"
                             "X-B: 2\r\n"
                             "Connection: close\r\n\r\n");
    free(out);
    done(p);
}

static void test_rewrite_query_only(void **state)
{
    parsed *p = parse("GET http://a.example?q=1 HTTP/1.1\r\n\r\n");
    assert_int_equal(p->result, HTTP_HEAD_OK);
    char *out = rewrite(&p->req, NULL, 0);
    assert_string_equal(out, "GET /?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n");
    free(out);
    done(p);
    p = parse("GET http://a.example HTTP/1.1\r\n\r\n");
    assert_int_equal(p->req.path_len, 1);
    assert_memory_equal(p->req.path, "/", 1);
    done(p);
}

static void test_rewrite_small_cap(void **state)
{
    parsed *p = parse(hop_request);
    const http_added_header add[] = { { "X-Api-Key", "k1" } };
    char full[1024];
    size_t n = http_rewrite_request(&p->req, add, 1, full, sizeof full);
    assert_true(n > 0);
    for (size_t cap = 0; cap <= n; cap++) {
        char *out = malloc(cap + 8);
        assert_non_null(out);
        memset(out, '#', cap + 8);
        size_t r = http_rewrite_request(&p->req, add, 1, out, cap);
        if (cap < n) {
            assert_int_equal(r, 0);
        } else {
            assert_int_equal(r, n);
            assert_memory_equal(out, full, n);
        }
        for (size_t i = cap; i < cap + 8; i++)
            assert_int_equal(out[i], '#'); /* nothing written past cap */
        free(out);
    }
    done(p);
}

static void test_rewrite_bad_added(void **state)
{
    parsed *p = parse("GET http://a.example/ HTTP/1.1\r\n\r\n");
    char out[512];
    const http_added_header crlf[] = { { "X-A", "v\r\nX-Evil: 1" } };
    assert_int_equal(http_rewrite_request(&p->req, crlf, 1, out, sizeof out), 0);
    const http_added_header lf[] = { { "X-A", "v\n" } };
    assert_int_equal(http_rewrite_request(&p->req, lf, 1, out, sizeof out), 0);
    const http_added_header name_crlf[] = { { "X-A\r\nX-B", "v" } };
    assert_int_equal(http_rewrite_request(&p->req, name_crlf, 1, out, sizeof out), 0);
    const http_added_header empty[] = { { "", "v" } };
    assert_int_equal(http_rewrite_request(&p->req, empty, 1, out, sizeof out), 0);
    const http_added_header host[] = { { "host", "evil.example" } };
    assert_int_equal(http_rewrite_request(&p->req, host, 1, out, sizeof out), 0);
    const http_added_header cl[] = { { "Content-Length", "0" } };
    assert_int_equal(http_rewrite_request(&p->req, cl, 1, out, sizeof out), 0);
    const http_added_header ok[] = { { "X-A", "v\tw" } };
    assert_true(http_rewrite_request(&p->req, ok, 1, out, sizeof out) > 0);
    done(p);
}

/* ---- chunked -------------------------------------------------------------------------- */

/* Scan s[0..n) in pieces of the given sizes (cycled; 0 means all at once). */
typedef struct scan_result {
    size_t consumed;
    bool done, error;
} scan_result;

static scan_result scan_split(const char *s, size_t n, size_t piece)
{
    http_chunked c;
    http_chunked_init(&c);
    scan_result r = { 0, false, false };
    uint8_t *copy = (uint8_t *)dup_bytes(s, n);
    size_t pos = 0;
    do {
        size_t take = piece == 0 ? n - pos : (n - pos < piece ? n - pos : piece);
        uint8_t *exact = malloc(take ? take : 1);
        assert_non_null(exact);
        memcpy(exact, copy + pos, take);
        size_t got = http_chunked_scan(&c, exact, take);
        free(exact);
        assert_true(got <= take);
        r.consumed += got;
        if (c.done || c.error)
            break;
        assert_int_equal(got, take); /* everything until the end */
        pos += take;
    } while (pos < n);
    r.done = c.done;
    r.error = c.error;
    assert_false(r.done && r.error);
    free(copy);
    return r;
}

/* The same answer whatever the split. */
static scan_result scan_all_ways(const char *s, size_t n)
{
    scan_result one = scan_split(s, n, 0);
    for (size_t piece = 1; piece <= 7; piece++) {
        scan_result r = scan_split(s, n, piece);
        assert_int_equal(r.consumed, one.consumed);
        assert_int_equal(r.done, one.done);
        assert_int_equal(r.error, one.error);
    }
    return one;
}

#define BODY_OK(s, body_len)                                                  \
    do {                                                                      \
        scan_result r_ = scan_all_ways(s, sizeof(s) - 1);                     \
        assert_true(r_.done);                                                 \
        assert_int_equal(r_.consumed, body_len);                              \
    } while (0)

#define BODY_ERROR(s)                                                         \
    do {                                                                      \
        scan_result r_ = scan_all_ways(s, sizeof(s) - 1);                     \
        assert_true(r_.error);                                                \
    } while (0)

static void test_chunked_basic(void **state)
{
    static const char body[] = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    static const char more[] = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET http://x/ HTTP/1.1";
    BODY_OK(body, sizeof body - 1);
    BODY_OK(more, sizeof body - 1); /* stops exactly at the end */
    static const char hex[] = "A\r\n0123456789\r\nfF\r\n"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"
        "\r\n000\r\n\r\n";
    BODY_OK(hex, sizeof hex - 1);
    static const char empty[] = "0\r\n\r\n";
    BODY_OK(empty, 5);
    /* incomplete: everything consumed, not done */
    scan_result r = scan_all_ways("5\r\nhel", 6);
    assert_false(r.done);
    assert_false(r.error);
    assert_int_equal(r.consumed, 6);
    /* once done, nothing more */
    http_chunked c;
    http_chunked_init(&c);
    assert_int_equal(http_chunked_scan(&c, (const uint8_t *)"0\r\n\r\n", 5), 5);
    assert_true(c.done);
    assert_int_equal(http_chunked_scan(&c, (const uint8_t *)"1\r\nx\r\n", 6), 0);
    assert_int_equal(http_chunked_scan(&c, NULL, 0), 0);
}

static void test_chunked_extensions_trailers(void **state)
{
    static const char ext[] = "5;name=value;x=\"q s\"\r\nhello\r\n0;last\r\n\r\n";
    BODY_OK(ext, sizeof ext - 1);
    static const char trailers[] = "3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Other:\tv v\r\n\r\nNEXT";
    BODY_OK(trailers, sizeof trailers - 5);
}

static void test_chunked_errors(void **state)
{
    BODY_ERROR("\r\n");                          /* empty size */
    BODY_ERROR("g\r\n");                         /* not hex */
    BODY_ERROR("0x5\r\nhello\r\n0\r\n\r\n");
    BODY_ERROR("-1\r\n");
    BODY_ERROR("5 \r\nhello\r\n0\r\n\r\n");      /* blank after the size */
    BODY_ERROR(" 5\r\nhello\r\n0\r\n\r\n");
    BODY_ERROR(";x\r\n");                        /* extension without size */
    BODY_ERROR("5\nhello\r\n0\r\n\r\n");         /* bare LF */
    BODY_ERROR("5\rhello\r\n0\r\n\r\n");         /* bare CR */
    BODY_ERROR("5\r\nhelloX\r\n0\r\n\r\n");      /* data longer than its size */
    BODY_ERROR("5\r\nhello\n0\r\n\r\n");
    BODY_ERROR("5;a\x01\r\nhello\r\n0\r\n\r\n"); /* control in an extension */
    BODY_ERROR("5;a\nb\r\nhello\r\n0\r\n\r\n");
    BODY_ERROR("0\r\n X: 1\r\n\r\n");            /* obs-fold in trailers */
    BODY_ERROR("0\r\nX : 1\r\n\r\n");
    BODY_ERROR("0\r\nX: 1\n\r\n");
    BODY_ERROR("0\r\nX: 1\r\n\n");
    BODY_ERROR("0\r\n\rX");
    BODY_ERROR("0\r\nX: a\0b\r\n\r\n");
    /* 16 digits up to 2^60 are fine; more digits or more value are not */
    scan_result r = scan_all_ways("1000000000000000\r\n", 18);
    assert_false(r.error);
    static const char padded[] = "0000000000000005\r\nhello\r\n0\r\n\r\n";
    r = scan_all_ways(padded, sizeof padded - 1);
    assert_true(r.done);
    BODY_ERROR("00000000000000005\r\n");
    BODY_ERROR("1000000000000001\r\n");
    BODY_ERROR("ffffffffffffffff\r\n");
    BODY_ERROR("10000000000000000\r\n");
    /* the error is at the offending byte: bytes before it were counted */
    http_chunked c;
    http_chunked_init(&c);
    assert_int_equal(http_chunked_scan(&c, (const uint8_t *)"5\r\nhelloX", 9), 8);
    assert_true(c.error);
    assert_int_equal(http_chunked_scan(&c, (const uint8_t *)"\r\n", 2), 0);
}

static void test_chunked_limits(void **state)
{
    /* a size line of 4096 bytes is fine, 4097 is not */
    size_t n = 4096 + 2 + 5 + 2 + 5;
    char *buf = malloc(n + 1);
    assert_non_null(buf);
    buf[0] = '5';
    buf[1] = ';';
    memset(buf + 2, 'e', 4094);
    memcpy(buf + 4096, "\r\nhello\r\n0\r\n\r\n", 14);
    scan_result r = scan_split(buf, 4096 + 14, 0);
    assert_true(r.done);
    assert_int_equal(r.consumed, 4096 + 14);
    r = scan_split(buf, 4096 + 14, 1);
    assert_true(r.done);
    buf[4096] = 'e';
    memcpy(buf + 4097, "\r\nhello\r\n0\r\n\r\n", 14);
    r = scan_split(buf, 4097 + 14, 0);
    assert_true(r.error);
    free(buf);

    /* trailers: HTTP_HEAD_MAX bytes in all (final CRLF included) fine, one more not */
    for (size_t total = HTTP_HEAD_MAX; total <= HTTP_HEAD_MAX + 1; total++) {
        buf = malloc(3 + total);
        assert_non_null(buf);
        memcpy(buf, "0\r\n", 3);
        memcpy(buf + 3, "X-Pad: ", 7);
        memset(buf + 10, 'p', total - 7 - 4);
        memcpy(buf + 3 + total - 4, "\r\n\r\n", 4);
        r = scan_split(buf, 3 + total, 0);
        if (total == HTTP_HEAD_MAX) {
            assert_true(r.done);
            assert_int_equal(r.consumed, 3 + total);
        } else {
            assert_true(r.error);
        }
        r = scan_split(buf, 3 + total, 1000);
        assert_int_equal(r.done, total == HTTP_HEAD_MAX);
        free(buf);
    }
}

/* Every split point of a body with extensions and trailers. */
static void test_chunked_every_split(void **state)
{
    static const char body[] = "4;e=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n"
                               "0\r\nExpires: never\r\n\r\ntail";
    size_t n = sizeof body - 1, want = n - 4;
    for (size_t cut = 0; cut <= n; cut++) {
        http_chunked c;
        http_chunked_init(&c);
        size_t a = http_chunked_scan(&c, (const uint8_t *)body, cut);
        size_t b = c.done ? 0 : http_chunked_scan(&c, (const uint8_t *)body + cut, n - cut);
        assert_true(c.done);
        assert_false(c.error);
        assert_int_equal(a + b, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_absolute),
        cmocka_unit_test(test_post_content_length),
        cmocka_unit_test(test_connect),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_ipv4_forms),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_host_names),
        cmocka_unit_test(test_smuggle_cl_te),
        cmocka_unit_test(test_smuggle_duplicate_cl),
        cmocka_unit_test(test_bad_content_length),
        cmocka_unit_test(test_smuggle_transfer_codings),
        cmocka_unit_test(test_smuggle_bare_lf),
        cmocka_unit_test(test_smuggle_obs_fold),
        cmocka_unit_test(test_smuggle_space_before_colon),
        cmocka_unit_test(test_smuggle_control_in_value),
        cmocka_unit_test(test_host_mismatch_name),
        cmocka_unit_test(test_host_mismatch_port),
        cmocka_unit_test(test_host_header_malformed),
        cmocka_unit_test(test_too_many_headers),
        cmocka_unit_test(test_head_size_boundary),
        cmocka_unit_test(test_prefix_stability),
        cmocka_unit_test(test_rewrite_basic),
        cmocka_unit_test(test_rewrite_headers),
        cmocka_unit_test(test_rewrite_keeps_framing),
        cmocka_unit_test(test_rewrite_query_only),
        cmocka_unit_test(test_rewrite_small_cap),
        cmocka_unit_test(test_rewrite_bad_added),
        cmocka_unit_test(test_chunked_basic),
        cmocka_unit_test(test_chunked_extensions_trailers),
        cmocka_unit_test(test_chunked_errors),
        cmocka_unit_test(test_chunked_limits),
        cmocka_unit_test(test_chunked_every_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
