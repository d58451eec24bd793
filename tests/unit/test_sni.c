/*
 * test_sni.c — unit tests of sni_parse (src/net/sni.c): the server name of a
 * TLS ClientHello read from hostile bytes.
 *
 * The real hellos below were produced by CPython's ssl module (OpenSSL
 * 3.0) with ssl.MemoryBIO + SSLObject.do_handshake — no network — and are
 * embedded as they came out (record header included). The others are built
 * by small helpers (hs_build, sni_ext, wrap) so that each malformation
 * changes exactly one field. Inputs are copied to exactly-sized heap blocks
 * (dup) so AddressSanitizer reports any read past the end.
 *
 * Generator (python3):
 *   ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname = False
 *   ctx.verify_mode = ssl.CERT_NONE; ctx.minimum_version =
 *   ctx.maximum_version = ssl.TLSVersion.TLSv1_3   (or TLSv1_2)
 *   i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
 *   obj = ctx.wrap_bio(i, o, server_hostname="example.com")  (or None)
 *   try: obj.do_handshake()
 *   except ssl.SSLWantReadError: pass
 *   hello = o.read()
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net.h"

/* ---- real ClientHellos ---------------------------------------------------- */

/* python3 ssl, TLS 1.3 only, server_hostname='example.com' (245 bytes) */
static const uint8_t hello13_sni[] = {
    0x16, 0x03, 0x01, 0x00, 0xf0, 0x01, 0x00, 0x00, 0xec, 0x03, 0x03, 0x43,
    0xba, 0xed, 0x48, 0x17, 0xab, 0x1a, 0x5e, 0x76, 0x0a, 0xa8, 0xb2, 0xc3,
    0x9a, 0xf4, 0x11, 0x11, 0x3f, 0xb5, 0xef, 0xc2, 0xab, 0x8e, 0x15, 0xb2,
    0x6d, 0x21, 0x39, 0x30, 0x6d, 0xf7, 0xe1, 0x20, 0x7b, 0x18, 0x5d, 0x0b,
    0xa3, 0x87, 0x7a, 0x73, 0x47, 0x55, 0xf2, 0x4c, 0xc2, 0x2b, 0xc9, 0x46,
    0x92, 0xe3, 0x2b, 0x65, 0xab, 0xce, 0x8a, 0x15, 0x8e, 0xbe, 0x68, 0x6f,
    0x86, 0x45, 0xdd, 0x8a, 0x00, 0x08, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01,
    0x00, 0xff, 0x01, 0x00, 0x00, 0x9b, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0e,
    0x00, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x63,
    0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a,
    0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19,
    0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04,
    0x00, 0x23, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00,
    0x00, 0x0d, 0x00, 0x1e, 0x00, 0x1c, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03,
    0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04,
    0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x00, 0x2b,
    0x00, 0x03, 0x02, 0x03, 0x04, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01, 0x00,
    0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x22, 0x1c, 0x1f,
    0x81, 0x7a, 0xca, 0x9e, 0x81, 0x08, 0x9d, 0x37, 0xbf, 0x83, 0x9c, 0xa5,
    0xff, 0x60, 0x26, 0x9c, 0x2b, 0xc3, 0x74, 0xe6, 0xbd, 0x87, 0x03, 0xe2,
    0xbe, 0x7c, 0xa5, 0x94, 0x4d,
};

/* python3 ssl, TLS 1.2 only, server_hostname='Api.Example.COM' (186 bytes) */
static const uint8_t hello12_sni[] = {
    0x16, 0x03, 0x01, 0x00, 0xb5, 0x01, 0x00, 0x00, 0xb1, 0x03, 0x03, 0x49,
    0xe5, 0xfc, 0xb7, 0xb5, 0x85, 0x8a, 0x3e, 0xe9, 0xfd, 0x7a, 0xa8, 0x2b,
    0xed, 0x54, 0x6d, 0xa8, 0x4b, 0x41, 0x18, 0xcb, 0x24, 0x91, 0x2e, 0xef,
    0x5b, 0x49, 0x0d, 0x56, 0x0f, 0x0b, 0xd8, 0x00, 0x00, 0x1e, 0xc0, 0x2c,
    0xc0, 0x30, 0xc0, 0x2b, 0xc0, 0x2f, 0xcc, 0xa9, 0xcc, 0xa8, 0xc0, 0x24,
    0xc0, 0x28, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x9f, 0x00, 0x9e, 0x00, 0x6b,
    0x00, 0x67, 0x00, 0xff, 0x01, 0x00, 0x00, 0x6a, 0x00, 0x00, 0x00, 0x14,
    0x00, 0x12, 0x00, 0x00, 0x0f, 0x41, 0x70, 0x69, 0x2e, 0x45, 0x78, 0x61,
    0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x43, 0x4f, 0x4d, 0x00, 0x0b, 0x00, 0x04,
    0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x1d,
    0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x00, 0x23, 0x00, 0x00,
    0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a,
    0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08,
    0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06,
    0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02,
    0x04, 0x02, 0x05, 0x02, 0x06, 0x02,
};

/* python3 ssl, TLS 1.3 only, no server_hostname (225 bytes) */
static const uint8_t hello13_nosni[] = {
    0x16, 0x03, 0x01, 0x00, 0xdc, 0x01, 0x00, 0x00, 0xd8, 0x03, 0x03, 0x81,
    0x12, 0x8f, 0x0c, 0x09, 0xa3, 0xde, 0xa2, 0x25, 0x26, 0x2f, 0xc7, 0x95,
    0x73, 0x23, 0x63, 0xf8, 0x62, 0x6f, 0xa6, 0xcc, 0xda, 0xd9, 0xd1, 0xc2,
    0xb8, 0xd9, 0x42, 0x9c, 0x0c, 0x48, 0x78, 0x20, 0xc5, 0x88, 0xbb, 0xee,
    0x3f, 0x35, 0x7e, 0xa4, 0x36, 0xa1, 0xae, 0xf1, 0x49, 0xe9, 0x07, 0x78,
    0x57, 0x35, 0xe0, 0x0b, 0xbb, 0xba, 0xd6, 0xf8, 0xca, 0xba, 0xac, 0x34,
    0x35, 0xeb, 0x63, 0x4c, 0x00, 0x08, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01,
    0x00, 0xff, 0x01, 0x00, 0x00, 0x87, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00,
    0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17,
    0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02,
    0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00,
    0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x1e, 0x00, 0x1c, 0x04, 0x03,
    0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a,
    0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01,
    0x06, 0x01, 0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04, 0x00, 0x2d, 0x00,
    0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00,
    0x20, 0xa4, 0x08, 0x83, 0xf3, 0x9c, 0x4a, 0x80, 0x0f, 0xa3, 0x1c, 0x6f,
    0x78, 0xa8, 0x77, 0x71, 0xb7, 0xe6, 0x30, 0xbb, 0xd7, 0x05, 0xa0, 0xe4,
    0x15, 0xee, 0x2d, 0x6d, 0x97, 0x51, 0xa1, 0xea, 0x78,
};

/* python3 ssl, TLS 1.2 only, no server_hostname (162 bytes) */
static const uint8_t hello12_nosni[] = {
    0x16, 0x03, 0x01, 0x00, 0x9d, 0x01, 0x00, 0x00, 0x99, 0x03, 0x03, 0x07,
    0xe3, 0x67, 0x21, 0xf8, 0x2d, 0xef, 0xff, 0x05, 0x32, 0x7c, 0x49, 0x27,
    0x8b, 0x9e, 0xe1, 0x09, 0x0a, 0x0c, 0x5d, 0x75, 0x4d, 0x99, 0xb8, 0x6f,
    0x99, 0xa3, 0x5c, 0xd9, 0x42, 0xf7, 0x66, 0x00, 0x00, 0x1e, 0xc0, 0x2c,
    0xc0, 0x30, 0xc0, 0x2b, 0xc0, 0x2f, 0xcc, 0xa9, 0xcc, 0xa8, 0xc0, 0x24,
    0xc0, 0x28, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x9f, 0x00, 0x9e, 0x00, 0x6b,
    0x00, 0x67, 0x00, 0xff, 0x01, 0x00, 0x00, 0x52, 0x00, 0x0b, 0x00, 0x04,
    0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x1d,
    0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x00, 0x23, 0x00, 0x00,
    0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a,
    0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08,
    0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06,
    0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02,
    0x04, 0x02, 0x05, 0x02, 0x06, 0x02,
};

/* ---- helpers -------------------------------------------------------------- */

/* sni_parse on an exactly-sized heap copy, so ASan sees any overread. */
static sni_result parse(const uint8_t *b, size_t n, char *name)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, b, n);
    sni_result r = sni_parse(copy, n, name);
    free(copy);
    return r;
}

static void put16(uint8_t *p, size_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* A server_name extension holding one host_name entry of n bytes. */
static size_t sni_ext(uint8_t *out, const char *host, size_t n)
{
    put16(out, 0);             /* extension type server_name */
    put16(out + 2, n + 5);     /* extension length */
    put16(out + 4, n + 3);     /* server_name_list length */
    out[6] = 0;                /* host_name */
    put16(out + 7, n);
    memcpy(out + 9, host, n);
    return n + 9;
}

/* A ClientHello handshake message (header included) with the given
 * extensions block (ext == NULL: no extensions field at all). */
static size_t hs_build(uint8_t *out, const uint8_t *ext, size_t extlen)
{
    size_t p = 4;
    out[p++] = 3; out[p++] = 3;                    /* client_version */
    memset(out + p, 0xab, 32); p += 32;            /* random */
    out[p++] = 0;                                  /* session_id */
    put16(out + p, 4); p += 2;                     /* cipher_suites */
    out[p++] = 0x13; out[p++] = 0x01; out[p++] = 0xc0; out[p++] = 0x2f;
    out[p++] = 1; out[p++] = 0;                    /* compression: null */
    if (ext) {
        put16(out + p, extlen); p += 2;
        memcpy(out + p, ext, extlen); p += extlen;
    }
    out[0] = 1;
    out[1] = (uint8_t)((p - 4) >> 16); out[2] = (uint8_t)((p - 4) >> 8); out[3] = (uint8_t)(p - 4);
    return p;
}

/* Wrap a handshake message into handshake records of at most frag bytes. */
static size_t wrap(uint8_t *out, const uint8_t *hs, size_t n, size_t frag)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += frag) {
        size_t k = n - i < frag ? n - i : frag;
        out[o++] = 22; out[o++] = 3; out[o++] = 1;
        put16(out + o, k); o += 2;
        memcpy(out + o, hs + i, k); o += k;
    }
    return o;
}

/* A whole record holding a ClientHello whose only extension is server_name
 * with this host (n bytes). */
static size_t hello_with_host(uint8_t *out, const char *host, size_t n)
{
    uint8_t ext[600], hs[800];
    size_t e = sni_ext(ext, host, n);
    size_t h = hs_build(hs, ext, e);
    return wrap(out, hs, h, 16384);
}

static sni_result parse_host(const char *host, size_t n, char *name)
{
    uint8_t rec[1000];
    return parse(rec, hello_with_host(rec, host, n), name);
}

#define EXPECT_FOUND(buf, n, host) do { \
        char nm_[EGRESS_MAX_NAME + 1]; \
        assert_int_equal(parse((buf), (n), nm_), SNI_FOUND); \
        assert_string_equal(nm_, (host)); \
    } while (0)

/* ---- real hellos ---------------------------------------------------------- */

static void test_real_hellos(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    EXPECT_FOUND(hello13_sni, sizeof hello13_sni, "example.com");
    /* lower-cased */
    EXPECT_FOUND(hello12_sni, sizeof hello12_sni, "api.example.com");
    assert_int_equal(parse(hello13_nosni, sizeof hello13_nosni, name), SNI_ABSENT);
    assert_string_equal(name, "");
    assert_int_equal(parse(hello12_nosni, sizeof hello12_nosni, name), SNI_ABSENT);
}

/* Bytes after the ClientHello (the client's next flight, pipelined) do not
 * change the answer. */
static void test_trailing_bytes(void **state)
{
    (void)state;
    uint8_t buf[sizeof hello13_sni + 7];
    memcpy(buf, hello13_sni, sizeof hello13_sni);
    memcpy(buf + sizeof hello13_sni, "\x14\x03\x03\x00\x01\x01\x17", 7);
    EXPECT_FOUND(buf, sizeof buf, "example.com");
}

static void check_prefixes(const uint8_t *b, size_t n)
{
    char name[EGRESS_MAX_NAME + 1];
    for (size_t k = 0; k < n; k++) {
        sni_result r = parse(b, k, name);
        if (r != SNI_NEED_MORE)
            fail_msg("prefix of %zu/%zu bytes: result %d, want NEED_MORE", k, n, r);
    }
}

static void test_truncations(void **state)
{
    (void)state;
    check_prefixes(hello13_sni, sizeof hello13_sni);
    check_prefixes(hello12_sni, sizeof hello12_sni);
    check_prefixes(hello13_nosni, sizeof hello13_nosni);
    check_prefixes(hello12_nosni, sizeof hello12_nosni);
    /* and of a hello fragmented into 7-byte records */
    uint8_t rec[2000];
    size_t n = wrap(rec, hello13_sni + 5, sizeof hello13_sni - 5, 7);
    EXPECT_FOUND(rec, n, "example.com");
    check_prefixes(rec, n);
}

static void check_corruptions(const uint8_t *b, size_t n)
{
    static const uint8_t xors[] = { 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff };
    uint8_t *m = malloc(n);
    assert_non_null(m);
    char name[EGRESS_MAX_NAME + 1];
    for (size_t i = 0; i < n; i++) {
        for (size_t x = 0; x < sizeof xors + 2; x++) {
            memcpy(m, b, n);
            m[i] = x < sizeof xors ? (uint8_t)(m[i] ^ xors[x]) : x == sizeof xors ? 0x00 : 0xff;
            memset(name, 'X', sizeof name);
            sni_result r = sni_parse(m, n, name);
            assert_in_range(r, SNI_FOUND, SNI_MALFORMED);
            if (r == SNI_FOUND) {
                size_t len = strnlen(name, sizeof name);
                assert_true(len >= 1 && len <= EGRESS_MAX_NAME);
                for (size_t j = 0; j < len; j++)
                    assert_true(strchr("abcdefghijklmnopqrstuvwxyz0123456789-.", name[j]));
            } else {
                assert_int_equal(name[0], '\0');
            }
        }
    }
    free(m);
}

static void test_corruptions(void **state)
{
    (void)state;
    check_corruptions(hello13_sni, sizeof hello13_sni);
    check_corruptions(hello12_sni, sizeof hello12_sni);
    check_corruptions(hello12_nosni, sizeof hello12_nosni);
}

/* One hello split into two records at every possible point, and into 1-byte
 * records (header split across records too). */
static void test_split_records(void **state)
{
    (void)state;
    const uint8_t *hs = hello13_sni + 5;
    size_t n = sizeof hello13_sni - 5;
    uint8_t rec[4000];
    for (size_t k = 1; k < n; k++) {
        size_t o = wrap(rec, hs, k, k);
        o += wrap(rec + o, hs + k, n - k, n);
        EXPECT_FOUND(rec, o, "example.com");
    }
    size_t o = wrap(rec, hs, n, 1);
    EXPECT_FOUND(rec, o, "example.com");
}

/* The largest accepted message (16 KiB body) over two records; one byte more
 * is refused. */
static void test_size_limit(void **state)
{
    (void)state;
    static uint8_t ext[16384], hs[16384 + 4 + 100], rec[16384 + 200];
    size_t e = sni_ext(ext, "big.example", 11);
    size_t base = hs_build(hs, ext, e + 4) - 4;      /* body size with a 0-byte padding ext */
    size_t pad = 16384 - base;
    put16(ext + e, 21);                               /* padding extension */
    put16(ext + e + 2, pad);
    memset(ext + e + 4, 0, pad);
    size_t h = hs_build(hs, ext, e + 4 + pad);
    assert_int_equal(h, 16384 + 4);
    size_t o = wrap(rec, hs, h, 10000);
    EXPECT_FOUND(rec, o, "big.example");

    put16(ext + e + 2, pad + 1);
    h = hs_build(hs, ext, e + 4 + pad + 1);
    o = wrap(rec, hs, h, 10000);
    char name[EGRESS_MAX_NAME + 1];
    assert_int_equal(parse(rec, o, name), SNI_MALFORMED);
    /* decided from the handshake header alone */
    assert_int_equal(parse(rec, 9, name), SNI_MALFORMED);
}

static void test_not_tls(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    const char *get = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
    assert_int_equal(parse((const uint8_t *)get, strlen(get), name), SNI_NOT_TLS);
    assert_int_equal(parse((const uint8_t *)get, 1, name), SNI_NOT_TLS);
    /* SSL 2 style / wrong version */
    assert_int_equal(parse((const uint8_t *)"\x16\x02", 2, name), SNI_NOT_TLS);
    assert_int_equal(parse((const uint8_t *)"\x16\x03\x05", 3, name), SNI_NOT_TLS);
    assert_int_equal(parse((const uint8_t *)"\x16\x03\x00", 3, name), SNI_NOT_TLS);
    /* a handshake record holding a ServerHello */
    uint8_t m[sizeof hello12_sni];
    memcpy(m, hello12_sni, sizeof m);
    m[5] = 2;
    assert_int_equal(parse(m, sizeof m, name), SNI_NOT_TLS);
    assert_int_equal(parse(m, 6, name), SNI_NOT_TLS);
    /* an alert record */
    memcpy(m, hello12_sni, sizeof m);
    m[0] = 21;
    assert_int_equal(parse(m, sizeof m, name), SNI_NOT_TLS);
}

/* Every length one larger than its parent allows, in the built hello. */
static void test_lengths_beyond_parent(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    uint8_t ext[64], hs[256], rec[300], m[300];
    size_t e = sni_ext(ext, "example.com", 11);
    size_t h = hs_build(hs, ext, e);
    size_t n = wrap(rec, hs, h, 16384);
    EXPECT_FOUND(rec, n, "example.com");
    /* offsets in rec: 5 record header, 4 hs header, 2 version, 32 random */
    size_t sid = 5 + 4 + 2 + 32, cs = sid + 1, comp = cs + 2 + 4, exts = comp + 2;
    size_t e0 = exts + 2, list = e0 + 4, entry = list + 2;
    struct { size_t at; size_t width; size_t value; } cases[] = {
        { 3, 2, h + 1 },               /* record longer than the hello: decided by the hello */
        { 6, 3, h - 4 + 1 },           /* message longer than its fields */
        { sid, 1, 33 },                /* session_id over 32 */
        { sid, 1, 32 },                /* session_id beyond the message */
        { cs, 2, 3 },                  /* odd cipher_suites */
        { cs, 2, 0 },                  /* no cipher suites */
        { cs, 2, 0x200 },              /* cipher_suites beyond the message */
        { comp, 1, 0 },                /* no compression method */
        { comp, 1, 200 },              /* compression beyond the message */
        { exts, 2, e + 1 },            /* extensions beyond the message */
        { exts, 2, e - 1 },            /* extensions short of the message */
        { e0 + 2, 2, 16 + 1 },         /* extension beyond the block */
        { list, 2, 14 + 1 },           /* list beyond the extension */
        { list, 2, 14 - 1 },           /* list short of the extension */
        { list, 2, 0 },                /* empty list */
        { entry + 1, 2, 11 + 1 },      /* host_name beyond the list */
        { entry + 1, 2, 0 },           /* empty host_name */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(m, rec, n);
        if (cases[i].width == 1)
            m[cases[i].at] = (uint8_t)cases[i].value;
        else if (cases[i].width == 2)
            put16(m + cases[i].at, cases[i].value);
        else {
            m[cases[i].at] = (uint8_t)(cases[i].value >> 16);
            put16(m + cases[i].at + 1, cases[i].value);
        }
        sni_result r = parse(m, n, name);
        sni_result want = i == 0 ? SNI_FOUND : SNI_MALFORMED;
        if (r != want)
            fail_msg("case %zu: result %d, want %d", i, r, want);
    }
}

static void test_two_server_names(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    uint8_t ext[128], hs[256], rec[300];
    size_t e = sni_ext(ext, "allowed.com", 11);
    e += sni_ext(ext + e, "evil.com", 8);
    size_t n = wrap(rec, hs, hs_build(hs, ext, e), 16384);
    assert_int_equal(parse(rec, n, name), SNI_MALFORMED);
    assert_string_equal(name, "");

    /* two host_name entries in one list */
    e = 0;
    put16(ext, 0); put16(ext + 2, 2 + 3 + 11 + 3 + 8); put16(ext + 4, 3 + 11 + 3 + 8);
    ext[6] = 0; put16(ext + 7, 11); memcpy(ext + 9, "allowed.com", 11);
    ext[20] = 0; put16(ext + 21, 8); memcpy(ext + 23, "evil.com", 8);
    n = wrap(rec, hs, hs_build(hs, ext, 31), 16384);
    assert_int_equal(parse(rec, n, name), SNI_MALFORMED);

    /* an entry of another name type is skipped */
    ext[6] = 7;
    n = wrap(rec, hs, hs_build(hs, ext, 31), 16384);
    EXPECT_FOUND(rec, n, "evil.com");
}

static void test_host_names(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    static const struct { const char *in; const char *out; } good[] = {
        { "example.com", "example.com" },
        { "EXAMPLE.Com.", "example.com" },     /* one trailing dot stripped */
        { "a", "a" },
        { "xn--bcher-kva.example", "xn--bcher-kva.example" },
        { "10.0.0.1", "10.0.0.1" },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(parse_host(good[i].in, strlen(good[i].in), name), SNI_FOUND);
        assert_string_equal(name, good[i].out);
    }
    static const char *bad[] = {
        ".", "..", "a..", "a..b", ".a", "a b", "a_b.com", "a%2e.com", "é.com",
        "a.com/", "a:443", "*.a.com",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse_host(bad[i], strlen(bad[i]), name) != SNI_MALFORMED)
            fail_msg("host \"%s\" accepted", bad[i]);
    }
    /* NUL inside and at the end */
    assert_int_equal(parse_host("evil.com\0.allowed.com", 21, name), SNI_MALFORMED);
    assert_int_equal(parse_host("allowed.com\0", 12, name), SNI_MALFORMED);

    /* 253 bytes is the limit; labels of 63 at most */
    char h[300];
    memset(h, 'a', sizeof h);
    for (size_t i = 63; i < sizeof h; i += 64)
        h[i] = '.';
    assert_int_equal(parse_host(h, 253, name), SNI_FOUND);
    assert_int_equal(strlen(name), 253);
    assert_memory_equal(name, h, 253);
    assert_int_equal(parse_host(h, 254, name), SNI_MALFORMED);
    memset(h, 'a', 64);
    assert_int_equal(parse_host(h, 63, name), SNI_FOUND);
    assert_int_equal(parse_host(h, 64, name), SNI_MALFORMED);
}

static void test_records(void **state)
{
    (void)state;
    char name[EGRESS_MAX_NAME + 1];
    uint8_t m[sizeof hello12_sni + 64];
    /* oversized record */
    memcpy(m, hello12_sni, sizeof hello12_sni);
    put16(m + 3, 16384 + 256 + 1);
    assert_int_equal(parse(m, sizeof hello12_sni, name), SNI_MALFORMED);
    assert_int_equal(parse(m, 5, name), SNI_MALFORMED);
    /* the largest allowed record: the hello inside it is complete, and the
     * record's remaining bytes are not the hello's business */
    put16(m + 3, 16384 + 256);
    EXPECT_FOUND(m, sizeof hello12_sni, "api.example.com");
    assert_int_equal(parse(m, 5, name), SNI_NEED_MORE);
    /* zero-length record */
    put16(m + 3, 0);
    assert_int_equal(parse(m, 5, name), SNI_MALFORMED);
    /* second record of another content type, or bad version */
    const uint8_t *hs = hello12_sni + 5;
    size_t n = sizeof hello12_sni - 5;
    size_t o = wrap(m, hs, 50, 50);
    size_t second = o;
    o += wrap(m + o, hs + 50, n - 50, n);
    EXPECT_FOUND(m, o, "api.example.com");
    m[second] = 23;                            /* application data */
    assert_int_equal(parse(m, o, name), SNI_MALFORMED);
    assert_int_equal(parse(m, second + 1, name), SNI_MALFORMED);
    m[second] = 22;
    m[second + 2] = 9;
    assert_int_equal(parse(m, o, name), SNI_MALFORMED);
    /* no extensions at all: ABSENT */
    uint8_t hs2[100], rec[120];
    o = wrap(rec, hs2, hs_build(hs2, NULL, 0), 16384);
    assert_int_equal(parse(rec, o, name), SNI_ABSENT);
    check_prefixes(rec, o);
    /* empty extensions block: ABSENT */
    o = wrap(rec, hs2, hs_build(hs2, (const uint8_t *)"", 0), 16384);
    assert_int_equal(parse(rec, o, name), SNI_ABSENT);
    /* empty input */
    assert_int_equal(sni_parse((const uint8_t *)"", 0, name), SNI_NEED_MORE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_hellos),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_split_records),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_not_tls),
        cmocka_unit_test(test_lengths_beyond_parent),
        cmocka_unit_test(test_two_server_names),
        cmocka_unit_test(test_host_names),
        cmocka_unit_test(test_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
