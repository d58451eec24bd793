/*
 * fuzz_http_head.c — libFuzzer target for src/net/http_head.c, whose input
 * (a request head, a chunked body) comes straight from a sandboxed program.
 * Built by tests/fuzz/build.sh into build/fuzz/fuzz_http_head with ASan +
 * UBSan; run by tests/fuzz/short.sh.
 *
 * Besides memory safety (every buffer is exactly sized, so ASan sees a read
 * or write one byte past it) it checks the contracts the proxy relies on:
 *   - parse: MALFORMED always comes with a reason and nothing else does; an
 *     OK request has a head ending in CRLFCRLF within the input and
 *     HTTP_HEAD_MAX, a host of 1..253 bytes, a port 1..65535, headers inside
 *     the head, an origin-form path, never both Content-Length and chunked;
 *   - verdicts are stable: a prefix gives NEED_MORE or the whole's verdict
 *     (the proxy reads more only on NEED_MORE);
 *   - rewrite: the output fits exactly in its own length and not in one
 *     byte less, ends with its only CRLFCRLF (one head, nothing smuggled
 *     behind it), and carries no Proxy-* header;
 *   - chunked scan: the same bytes consumed and the same done/error state
 *     whatever the split of the input into calls.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net.h"

static bool inside(const char *p, size_t n, const uint8_t *data, size_t size)
{
    const char *base = (const char *)data;
    return p >= base && n <= size && (size_t)(p - base) <= size - n;
}

static void check_ok(const http_request *req, const uint8_t *data, size_t size)
{
    size_t hl = req->head_len;
    if (hl < 4 || hl > size || hl > HTTP_HEAD_MAX || memcmp(data + hl - 4, "\r\n\r\n", 4) != 0)
        abort();
    size_t ml = strnlen(req->method, sizeof req->method);
    size_t nl = strnlen(req->host, sizeof req->host);
    if (ml == 0 || ml >= sizeof req->method || nl == 0 || nl > EGRESS_MAX_NAME)
        abort();
    if (req->port < 1 || req->port > 65535 || req->version_minor > 1)
        abort();
    if (req->nheaders > HTTP_MAX_HEADERS || (req->has_content_length && req->chunked))
        abort();
    for (size_t i = 0; i < req->nheaders; i++) {
        const http_header *h = &req->headers[i];
        if (h->name_len == 0 || !inside(h->name, h->name_len, data, hl) ||
            !inside(h->value, h->value_len, data, hl))
            abort();
    }
    if (req->has_host_header) {
        size_t hn = strnlen(req->host_header, sizeof req->host_header);
        if (hn == 0 || hn > EGRESS_MAX_NAME || req->host_header_port < 1 ||
            req->host_header_port > 65535)
            abort();
    }
    if (!req->is_connect) {
        if (req->path_len == 0 || (req->path[0] != '/' && req->path[0] != '?'))
            abort();
        if (req->path_len > 1 && !inside(req->path, req->path_len, data, hl))
            abort();
    }
}

static void check_rewrite(const http_request *req)
{
    static const http_added_header add[] = {
        { "Authorization", "Bearer token" },
        { "X-Api-Key", "k" },
    };
    const size_t big = 2 * HTTP_HEAD_MAX;
    char *out = malloc(big);
    if (!out)
        abort();
    size_t n = http_rewrite_request(req, add, 2, out, big);
    if (req->is_connect) {
        if (n != 0)
            abort();
        free(out);
        return;
    }
    if (n < 4 || n > big)
        abort();
    /* exactly one head: the first CRLFCRLF is at the end */
    for (size_t i = 0; i + 4 <= n; i++)
        if (memcmp(out + i, "\r\n\r\n", 4) == 0 && i + 4 != n)
            abort();
    if (memcmp(out + n - 4, "\r\n\r\n", 4) != 0)
        abort();
    for (size_t i = 0; i + 8 <= n; i++)
        if (memcmp(out + i, "\r\n", 2) == 0 && strncasecmp(out + i + 2, "Proxy-", 6) == 0)
            abort();

    /* fits in exactly n bytes, not in n - 1 (ASan watches both blocks) */
    char *exact = malloc(n);
    char *short_buf = malloc(n - 1);
    if (!exact || !short_buf)
        abort();
    if (http_rewrite_request(req, add, 2, exact, n) != n || memcmp(exact, out, n) != 0)
        abort();
    if (http_rewrite_request(req, add, 2, short_buf, n - 1) != 0)
        abort();
    free(short_buf);
    free(exact);
    free(out);
}

static void check_parse(const uint8_t *data, size_t size)
{
    http_request *req = malloc(sizeof *req);
    if (!req)
        abort();
    const char *why = NULL;
    http_head_result whole = http_parse_request((const char *)data, size, req, &why);
    if ((int)whole < HTTP_HEAD_OK || whole > HTTP_HEAD_MALFORMED)
        abort();
    if ((whole == HTTP_HEAD_MALFORMED) != (why != NULL))
        abort();
    if (whole == HTTP_HEAD_OK) {
        check_ok(req, data, size);
        (void)http_host_matches(req);
        check_rewrite(req);
    }

    size_t cuts[] = { size / 2, size ? size - 1 : 0, size / 3 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        http_head_result r = http_parse_request((const char *)data, cuts[i], req, &why);
        if (r != HTTP_HEAD_NEED_MORE && r != whole)
            abort();
    }
    free(req);
}

typedef struct scan_state {
    size_t consumed;
    bool done, error;
} scan_state;

/* Scan data in pieces of piece bytes (0: all at once), each piece copied to
 * an exactly-sized block. */
static scan_state scan(const uint8_t *data, size_t size, size_t piece)
{
    http_chunked c;
    http_chunked_init(&c);
    scan_state s = { 0, false, false };
    size_t pos = 0;
    do {
        size_t take = size - pos;
        if (piece && take > piece)
            take = piece;
        uint8_t *block = malloc(take ? take : 1);
        if (!block)
            abort();
        memcpy(block, data + pos, take);
        size_t got = http_chunked_scan(&c, block, take);
        free(block);
        if (got > take || (got < take && !c.done && !c.error))
            abort();
        s.consumed += got;
        pos += take;
        if (c.done || c.error)
            break;
    } while (pos < size);
    if (c.done && c.error)
        abort();
    s.done = c.done;
    s.error = c.error;
    return s;
}

static void check_chunked(const uint8_t *data, size_t size)
{
    scan_state one = scan(data, size, 0);
    size_t pieces[] = { 1, size ? (size_t)data[0] % 17 + 2 : 3 };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        scan_state s = scan(data, size, pieces[i]);
        if (s.consumed != one.consumed || s.done != one.done || s.error != one.error)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_parse(data, size);

    /* the body after a complete head, and the whole input, as chunked data */
    http_request *req = malloc(sizeof *req);
    if (!req)
        abort();
    if (http_parse_request((const char *)data, size, req, NULL) == HTTP_HEAD_OK)
        check_chunked(data + req->head_len, size - req->head_len);
    free(req);
    check_chunked(data, size);
    return 0;
}
