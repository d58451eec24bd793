/*
 * http_head.c — HTTP/1.x request heads read from hostile bytes (issue 5):
 * the forward proxy's view of what a sandboxed program asked for, the head
 * rewritten for the origin, and the end of a chunked request body.
 *
 * Everything here is pure computation over the arguments: no allocation,
 * no globals, no I/O, so the proxy, tests and the fuzzer share it.
 *
 * Invariants the proxy relies on:
 *   - http_parse_request never reads past buf[len) nor past the first
 *     HTTP_HEAD_MAX bytes; it returns OK only for a complete head, and its
 *     verdict for a prefix is NEED_MORE or the verdict for the whole input
 *     (a bare CR/LF is refused as soon as it is seen, everything else once
 *     the head is complete), so how the sandbox splits its writes cannot
 *     steer a check.
 *   - A request the origin could frame differently from the proxy is
 *     refused (request smuggling): only CRLF line ends, no obs-fold, no
 *     whitespace before ':', at most one Content-Length (digits only, even
 *     two equal ones are refused: the simplest rule with no ambiguity), no
 *     Content-Length together with Transfer-Encoding, no transfer coding but
 *     exactly "chunked", none at all in HTTP/1.0 or CONNECT.
 *   - The host the policy checks is the host the proxy connects to and the
 *     Host the origin sees: one spelling only (lower case, no trailing dot,
 *     IPv4 as a strict dotted quad, IPv6 in inet_ntop's canonical form), no
 *     userinfo, no percent-encoding, no numeric forms inet_aton would read
 *     differently ("0x7f.1", "2130706433").
 *   - http_rewrite_request writes at most cap bytes and 0 when the head does
 *     not fit; framing headers (Content-Length, Transfer-Encoding) always
 *     reach the origin unchanged, since the proxy forwards exactly the body
 *     they describe.
 *   - http_chunked_scan consumes bytes exactly up to the end of the chunked
 *     body, whatever the split of its input into calls.
 */
#include "net.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define HTTP_MAX_CONTENT_LENGTH (UINT64_C(1) << 53)
#define DNS_MAX_LABEL 63
#define PORT_MAX_DIGITS 5

/* ---- bytes and names ------------------------------------------------------ */

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* RFC 9110 5.6.2 tchar: what a method or a field name may contain. */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field-value byte (RFC 9110 5.5): HTAB, SP, visible ASCII, obs-text.
 * NUL, CR, LF, DEL and the other controls are refused: some servers end a
 * value at NUL or treat a bare CR as a line end, and the proxy would then
 * disagree with the origin on where headers begin. */
static bool is_value_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_blank(unsigned char c) { return c == ' ' || c == '\t'; }

/* Case-insensitive: does a[0..n) equal the NUL-terminated b? */
static bool name_is(const char *a, size_t n, const char *b)
{
    size_t i = 0;
    for (; i < n; i++)
        if (b[i] == '\0' || lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return b[i] == '\0';
}

static bool has_prefix(const char *a, size_t n, const char *prefix)
{
    size_t p = strlen(prefix);
    return n >= p && name_is(a, p, prefix);
}

static bool names_equal(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

static void trim(const char **p, size_t *n)
{
    while (*n > 0 && is_blank((unsigned char)(*p)[0])) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((unsigned char)(*p)[*n - 1]))
        (*n)--;
}

/* ---- hosts and ports ------------------------------------------------------ */

/* 1..65535, 1..5 decimal digits: no sign, no spaces, no hex. */
static bool parse_port(const char *p, size_t n, unsigned *port)
{
    if (n == 0 || n > PORT_MAX_DIGITS)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)p[i]))
            return false;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return false;
    *port = v;
    return true;
}

/* A bracketed IPv6 literal's inside, stored in inet_ntop's canonical form so
 * "[::1]" and "[0:0::1]" compare equal and the policy sees one spelling.
 * Zone identifiers ("fe80::1%25eth0") are refused by inet_pton: a zone would
 * pick an interface on the host. */
static bool normalise_ipv6(const char *p, size_t n, char *out)
{
    char text[INET6_ADDRSTRLEN];
    struct in6_addr a;
    if (n == 0 || n >= sizeof text)
        return false;
    memcpy(text, p, n);
    text[n] = '\0';
    if (inet_pton(AF_INET6, text, &a) != 1)
        return false;
    return inet_ntop(AF_INET6, &a, out, EGRESS_MAX_NAME + 1) != NULL;
}

/* A DNS name or an IPv4 dotted quad into out (EGRESS_MAX_NAME + 1 bytes):
 * letters, digits, '-', '_' and '.', lower-cased, one trailing dot stripped,
 * labels of 1..63 bytes, 1..253 bytes in all. The policy applies the
 * stricter host-name rules ('_' and edge hyphens refused there, with a
 * reason a model can read); here only what could make two parsers disagree
 * is refused. A host that the C library would read as an IPv4 address
 * (inet_aton: "127.1", "0x7f.0.0.1", "2130706433", "0177.0.0.1") must be a
 * strict dotted quad, or getaddrinfo would connect to an address the name
 * rules never saw. */
static bool normalise_name(const char *p, size_t n, char *out)
{
    if (n > 0 && p[n - 1] == '.')
        n--;
    if (n == 0 || n > EGRESS_MAX_NAME)
        return false;
    size_t label = 0;
    bool numeric = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = lower((unsigned char)p[i]);
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_') {
            if (++label > DNS_MAX_LABEL)
                return false;
            if (!is_digit(c))
                numeric = false;
        } else {
            return false;
        }
        out[i] = (char)c;
    }
    if (label == 0)
        return false;
    out[n] = '\0';
    struct in_addr a;
    if (numeric || inet_aton(out, &a) != 0)
        return inet_pton(AF_INET, out, &a) == 1;
    return true;
}

/* "host", "host:port", "[v6]" or "[v6]:port" (a URL authority without
 * userinfo, a CONNECT target, a Host header value). *has_port tells whether
 * a port was given; *port is left alone when not. */
static bool parse_authority(const char *p, size_t n, char *host, unsigned *port,
                            bool *has_port)
{
    size_t host_end;
    *has_port = false;
    if (n > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close)
            return false;
        host_end = (size_t)(close - p) + 1;
        if (!normalise_ipv6(p + 1, host_end - 2, host))
            return false;
    } else {
        const char *colon = memchr(p, ':', n);
        host_end = colon ? (size_t)(colon - p) : n;
        if (!normalise_name(p, host_end, host))
            return false;
    }
    if (host_end == n)
        return true;
    if (p[host_end] != ':')
        return false; /* "[::1]x" */
    *has_port = true;
    return parse_port(p + host_end + 1, n - host_end - 1, port);
}

/* ---- the head ------------------------------------------------------------- */

/* The first CRLFCRLF within the first HTTP_HEAD_MAX bytes. A LF without CR
 * before it, or a CR without LF after it, is refused as soon as it is seen:
 * servers differ on whether a bare LF ends a line, which is how a header
 * hidden from one side reaches the other (request smuggling). */
static http_head_result find_head_end(const char *buf, size_t len, size_t *head_len,
                                      const char **why)
{
    size_t limit = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
    for (size_t i = 0; i < limit; i++) {
        bool after_cr = i > 0 && buf[i - 1] == '\r';
        if (buf[i] == '\n') {
            if (!after_cr) {
                *why = "bare LF in the request head (lines must end with CRLF)";
                return HTTP_HEAD_MALFORMED;
            }
            if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                *head_len = i + 1;
                return HTTP_HEAD_OK;
            }
        } else if (after_cr) {
            *why = "bare CR in the request head (lines must end with CRLF)";
            return HTTP_HEAD_MALFORMED;
        }
    }
    return len >= HTTP_HEAD_MAX ? HTTP_HEAD_TOO_LARGE : HTTP_HEAD_NEED_MORE;
}

/* The line starting at *pos (which ends with CRLF: find_head_end checked
 * every line end) as [line, line + n); *pos moves past its CRLF. */
static void next_line(const char *buf, size_t head_len, size_t *pos, const char **line,
                      size_t *n)
{
    const char *start = buf + *pos;
    const char *cr = memchr(start, '\r', head_len - *pos);
    *line = start;
    *n = (size_t)(cr - start);
    *pos += *n + 2;
}

/* The absolute-form target of a plain request: "http://" authority, then
 * the path and query (kept as sent; "/" when absent; a target of only
 * "?query" keeps its '?' first and the rewrite adds the '/'). */
static bool parse_absolute_target(const char *t, size_t n, http_request *req,
                                  const char **why)
{
    static const char scheme[] = "http://";
    size_t s = sizeof scheme - 1;
    if (n > 0 && t[0] == '/') {
        *why = "origin-form request target (a proxy needs an absolute http:// URL)";
        return false;
    }
    if (!has_prefix(t, n, scheme)) {
        *why = has_prefix(t, n, "https://")
                   ? "https:// URL in a plain request (use CONNECT for HTTPS)"
                   : "request target is not an http:// URL";
        return false;
    }
    size_t end = s;
    while (end < n && t[end] != '/' && t[end] != '?')
        end++;
    /* userinfo: "http://allowed.com@evil.com/" names evil.com to some
     * parsers and allowed.com to others */
    if (memchr(t + s, '@', end - s)) {
        *why = "userinfo ('@') in the URL";
        return false;
    }
    bool has_port;
    req->port = 80;
    if (!parse_authority(t + s, end - s, req->host, &req->port, &has_port)) {
        *why = "invalid host or port in the URL";
        return false;
    }
    if (end == n) {
        req->path = "/";
        req->path_len = 1;
    } else {
        req->path = t + end;
        req->path_len = n - end;
    }
    return true;
}

/* CONNECT's authority-form target: host:port, port required. */
static bool parse_connect_target(const char *t, size_t n, http_request *req,
                                 const char **why)
{
    bool has_port;
    if (memchr(t, '@', n) || memchr(t, '/', n)) {
        *why = "CONNECT target must be host:port";
        return false;
    }
    if (!parse_authority(t, n, req->host, &req->port, &has_port) || !has_port) {
        *why = "invalid CONNECT target (host:port with a port 1..65535)";
        return false;
    }
    req->path = "";
    req->path_len = 0;
    return true;
}

/* Target bytes: visible ASCII only. No '#': a fragment is never sent, and
 * one in a proxy request is a confusion attempt; no raw non-ASCII or
 * controls, which origins decode in different ways. */
static bool valid_target_bytes(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c < 0x21 || c > 0x7e || c == '#')
            return false;
    }
    return n > 0;
}

/* "METHOD SP target SP HTTP/1.x": single spaces, nothing else. */
static bool parse_request_line(const char *line, size_t n, http_request *req,
                               const char **why)
{
    const char *sp1 = memchr(line, ' ', n);
    size_t mlen = sp1 ? (size_t)(sp1 - line) : 0;
    if (!sp1 || mlen == 0 || mlen >= sizeof req->method) {
        *why = "invalid request line (method)";
        return false;
    }
    for (size_t i = 0; i < mlen; i++)
        if (!is_tchar((unsigned char)line[i])) {
            *why = "invalid character in the method";
            return false;
        }
    memcpy(req->method, line, mlen);
    req->method[mlen] = '\0';
    req->is_connect = strcmp(req->method, "CONNECT") == 0;

    const char *t = sp1 + 1;
    size_t rest = n - mlen - 1;
    const char *sp2 = memchr(t, ' ', rest);
    if (!sp2) {
        *why = "invalid request line (no HTTP version)";
        return false;
    }
    size_t tlen = (size_t)(sp2 - t);
    const char *v = sp2 + 1;
    size_t vlen = rest - tlen - 1;
    if (vlen == 8 && memcmp(v, "HTTP/1.1", 8) == 0) {
        req->version_minor = 1;
    } else if (vlen == 8 && memcmp(v, "HTTP/1.0", 8) == 0) {
        req->version_minor = 0;
    } else {
        *why = "unsupported HTTP version (HTTP/1.0 or HTTP/1.1 only)";
        return false;
    }
    if (!valid_target_bytes(t, tlen)) {
        *why = "invalid character in the request target";
        return false;
    }
    return req->is_connect ? parse_connect_target(t, tlen, req, why)
                           : parse_absolute_target(t, tlen, req, why);
}

/* "name: value" into h: a token name right before ':' (no whitespace: "Host :"
 * or "Content-Length :" is read as that header by some servers and ignored
 * by others), no obs-fold, value bytes checked and blanks trimmed. */
static bool parse_header_line(const char *line, size_t n, http_header *h, const char **why)
{
    if (n > 0 && is_blank((unsigned char)line[0])) {
        *why = "obs-fold (a header line starting with whitespace)";
        return false;
    }
    const char *colon = memchr(line, ':', n);
    if (!colon) {
        *why = "header line without ':'";
        return false;
    }
    size_t nlen = (size_t)(colon - line);
    if (nlen == 0) {
        *why = "empty header name";
        return false;
    }
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)line[i];
        if (is_blank(c)) {
            *why = "whitespace between a header name and ':'";
            return false;
        }
        if (!is_tchar(c)) {
            *why = "invalid character in a header name";
            return false;
        }
    }
    const char *v = colon + 1;
    size_t vlen = n - nlen - 1;
    for (size_t i = 0; i < vlen; i++)
        if (!is_value_byte((unsigned char)v[i])) {
            *why = "control character in a header value";
            return false;
        }
    trim(&v, &vlen);
    h->name = line;
    h->name_len = nlen;
    h->value = v;
    h->value_len = vlen;
    return true;
}

/* Digits only, at most 2^53: no sign, no list ("5, 5"), no blanks inside. */
static bool parse_content_length(const char *p, size_t n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)p[i]))
            return false;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (HTTP_MAX_CONTENT_LENGTH - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* What the proxy itself needs from a header: Host, Content-Length,
 * Transfer-Encoding. Duplicates of any of them are refused. */
static bool apply_header(http_request *req, const http_header *h, bool *has_te,
                         const char **why)
{
    if (name_is(h->name, h->name_len, "Host")) {
        bool has_port;
        if (req->has_host_header) {
            *why = "two Host headers";
            return false;
        }
        req->has_host_header = true;
        if (!parse_authority(h->value, h->value_len, req->host_header,
                             &req->host_header_port, &has_port)) {
            *why = "invalid Host header";
            return false;
        }
    } else if (name_is(h->name, h->name_len, "Content-Length")) {
        if (req->has_content_length) {
            *why = "two Content-Length headers";
            return false;
        }
        req->has_content_length = true;
        if (!parse_content_length(h->value, h->value_len, &req->content_length)) {
            *why = "invalid Content-Length (digits only, at most 2^53)";
            return false;
        }
    } else if (name_is(h->name, h->name_len, "Transfer-Encoding")) {
        if (*has_te) {
            *why = "two Transfer-Encoding headers";
            return false;
        }
        *has_te = true;
        if (!name_is(h->value, h->value_len, "chunked")) {
            *why = "unsupported Transfer-Encoding (only \"chunked\")";
            return false;
        }
        req->chunked = true;
    }
    return true;
}

/* Framing rules over the whole head (RFC 9112 6.1-6.3, strictest reading). */
static bool check_framing(const http_request *req, bool has_te, const char **why)
{
    if (has_te && req->has_content_length) {
        *why = "both Content-Length and Transfer-Encoding";
        return false;
    }
    if (has_te && req->version_minor == 0) {
        *why = "Transfer-Encoding in an HTTP/1.0 request";
        return false;
    }
    if (req->is_connect && (has_te || req->content_length != 0)) {
        *why = "CONNECT request with a body";
        return false;
    }
    return true;
}

static bool parse_headers(const char *buf, size_t head_len, size_t pos, http_request *req,
                          const char **why)
{
    bool has_te = false;
    /* a Host header without a port means the scheme's default; CONNECT has
     * no scheme, so its own port */
    req->host_header_port = req->is_connect ? req->port : 80;
    for (;;) {
        const char *line;
        size_t n;
        next_line(buf, head_len, &pos, &line, &n);
        if (n == 0)
            break; /* the empty line: end of the head */
        if (req->nheaders == HTTP_MAX_HEADERS) {
            *why = "too many headers";
            return false;
        }
        http_header *h = &req->headers[req->nheaders];
        if (!parse_header_line(line, n, h, why) || !apply_header(req, h, &has_te, why))
            return false;
        req->nheaders++;
    }
    return check_framing(req, has_te, why);
}

http_head_result http_parse_request(const char *buf, size_t len, http_request *req,
                                    const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = NULL;
    memset(req, 0, sizeof *req);
    req->path = "";
    if (!buf)
        len = 0;

    size_t head_len = 0;
    http_head_result r = find_head_end(buf, len, &head_len, why);
    if (r != HTTP_HEAD_OK)
        return r;
    req->head_len = head_len;

    size_t pos = 0;
    const char *line;
    size_t n;
    next_line(buf, head_len, &pos, &line, &n);
    if (!parse_request_line(line, n, req, why) || !parse_headers(buf, head_len, pos, req, why))
        return HTTP_HEAD_MALFORMED;
    return HTTP_HEAD_OK;
}

bool http_host_matches(const http_request *req)
{
    if (!req->has_host_header)
        return true;
    return strcmp(req->host_header, req->host) == 0 && req->host_header_port == req->port;
}

/* ---- the rewritten head ----------------------------------------------------- */

/* Appends to out[0..cap); once something does not fit, nothing more is
 * written and the result is 0. */
typedef struct writer {
    char *out;
    size_t cap, len;
    bool full;
} writer;

static void put(writer *w, const char *s, size_t n)
{
    if (w->full || n > w->cap - w->len) {
        w->full = true;
        return;
    }
    memcpy(w->out + w->len, s, n);
    w->len += n;
}

static void put_str(writer *w, const char *s) { put(w, s, strlen(s)); }

/* Is name one of the tokens of the client's Connection headers? Those are
 * hop-by-hop by the client's own declaration (RFC 9110 7.6.1). */
static bool named_in_connection(const http_request *req, const char *name, size_t n)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        const http_header *h = &req->headers[i];
        if (!name_is(h->name, h->name_len, "Connection"))
            continue;
        const char *p = h->value, *end = h->value + h->value_len;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *tok_end = comma ? comma : end;
            const char *tok = p;
            size_t tlen = (size_t)(tok_end - p);
            trim(&tok, &tlen);
            if (names_equal(tok, tlen, name, n))
                return true;
            p = comma ? comma + 1 : end;
        }
    }
    return false;
}

static bool is_framing(const char *name, size_t n)
{
    return name_is(name, n, "Content-Length") || name_is(name, n, "Transfer-Encoding");
}

/* Headers that concern only the client-proxy hop, or that the proxy sets
 * itself: Proxy-Authorization in particular must never reach an origin.
 * "Proxy" alone too: CGI origins turn it into HTTP_PROXY (httpoxy,
 * CVE-2016-5385). */
static bool is_hop_by_hop(const char *name, size_t n)
{
    return name_is(name, n, "Host") || name_is(name, n, "Connection") ||
           name_is(name, n, "Keep-Alive") || name_is(name, n, "TE") ||
           name_is(name, n, "Upgrade") || name_is(name, n, "Proxy") ||
           has_prefix(name, n, "Proxy-");
}

static bool dropped(const http_request *req, const http_header *h,
                    const http_added_header *add, size_t nadd)
{
    /* Content-Length/Transfer-Encoding describe the body the proxy forwards;
     * a "Connection: Content-Length" must not make the origin frame it
     * differently (smuggling the body as a second request). */
    if (is_framing(h->name, h->name_len))
        return false;
    if (is_hop_by_hop(h->name, h->name_len))
        return true;
    for (size_t i = 0; i < nadd; i++)
        if (name_is(h->name, h->name_len, add[i].name))
            return true; /* replaced by the policy's value */
    return named_in_connection(req, h->name, h->name_len);
}

/* The policy's headers are trusted (config.c validates them) but still
 * checked: a CR or LF would split the head, and a Host, Connection or
 * framing header from the policy would contradict the proxy's own. */
static bool valid_added(const http_added_header *add, size_t nadd)
{
    for (size_t i = 0; i < nadd; i++) {
        const char *name = add[i].name, *value = add[i].value;
        if (!name || !value || name[0] == '\0')
            return false;
        size_t n = strlen(name);
        for (size_t j = 0; j < n; j++)
            if (!is_tchar((unsigned char)name[j]))
                return false;
        if (is_framing(name, n) || name_is(name, n, "Host") || name_is(name, n, "Connection"))
            return false;
        if (strpbrk(value, "\r\n"))
            return false;
    }
    return true;
}

static void put_host_line(writer *w, const http_request *req)
{
    bool ipv6 = strchr(req->host, ':') != NULL;
    put_str(w, "Host: ");
    if (ipv6)
        put_str(w, "[");
    put_str(w, req->host);
    if (ipv6)
        put_str(w, "]");
    if (req->port != 80) {
        char port[16];
        int n = snprintf(port, sizeof port, ":%u", req->port);
        put(w, port, (size_t)n);
    }
    put_str(w, "\r\n");
}

size_t http_rewrite_request(const http_request *req, const http_added_header *add, size_t nadd,
                            char *out, size_t cap)
{
    /* a CONNECT head is answered by the proxy, never forwarded */
    if (!req || req->is_connect || req->path_len == 0 || !out || (nadd > 0 && !add))
        return 0;
    if (!valid_added(add, nadd))
        return 0;
    writer w = { .out = out, .cap = cap };
    put_str(&w, req->method);
    put_str(&w, " ");
    if (req->path[0] != '/')
        put_str(&w, "/"); /* "http://host?q" asks for "/?q" */
    put(&w, req->path, req->path_len);
    /* the client's version: an HTTP/1.0 client cannot read a chunked
     * response, which an origin may send to an HTTP/1.1 request */
    put_str(&w, req->version_minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
    put_host_line(&w, req);
    for (size_t i = 0; i < req->nheaders; i++) {
        const http_header *h = &req->headers[i];
        if (dropped(req, h, add, nadd))
            continue;
        put(&w, h->name, h->name_len);
        put_str(&w, ": ");
        put(&w, h->value, h->value_len);
        put_str(&w, "\r\n");
    }
    for (size_t i = 0; i < nadd; i++) {
        put_str(&w, add[i].name);
        put_str(&w, ": ");
        put_str(&w, add[i].value);
        put_str(&w, "\r\n");
    }
    put_str(&w, "Connection: close\r\n\r\n");
    return w.full ? 0 : w.len;
}

/* ---- chunked bodies ---------------------------------------------------------- */

enum chunked_state {
    CH_SIZE,            /* hex digits of a chunk-size */
    CH_EXT,             /* after ';': chunk extensions up to CR */
    CH_SIZE_LF,         /* the LF ending the size line */
    CH_DATA,            /* remaining bytes of chunk data */
    CH_DATA_CR,         /* the CRLF after chunk data */
    CH_DATA_LF,
    CH_TRAILER_START,   /* start of a trailer line, or the final CRLF */
    CH_TRAILER_NAME,
    CH_TRAILER_VALUE,
    CH_TRAILER_LF,
    CH_FINAL_LF,
};

#define CHUNK_MAX_DIGITS 16
#define CHUNK_MAX_SIZE (UINT64_C(1) << 60)
#define CHUNK_MAX_LINE 4096

void http_chunked_init(http_chunked *c)
{
    memset(c, 0, sizeof *c);
    c->state = CH_SIZE;
}

static int hex_value(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* One byte of a size line: 1..16 hex digits (at most 2^60), then ';' and
 * extensions or CR. No blanks: parsers that skip "5 " or "0x5" and parsers
 * that refuse them would frame the body differently. */
static bool size_byte(http_chunked *c, unsigned char b)
{
    if (++c->line_len > CHUNK_MAX_LINE)
        return false;
    int d = hex_value(b);
    if (d >= 0) {
        if (++c->digits > CHUNK_MAX_DIGITS)
            return false;
        c->remaining = c->remaining * 16 + (uint64_t)d;
        return c->remaining <= CHUNK_MAX_SIZE;
    }
    if (c->digits == 0)
        return false;
    if (b == ';')
        c->state = CH_EXT;
    else if (b == '\r')
        c->state = CH_SIZE_LF;
    else
        return false;
    return true;
}

static bool ext_byte(http_chunked *c, unsigned char b)
{
    if (b == '\r') {
        c->state = CH_SIZE_LF;
        return true;
    }
    if (++c->line_len > CHUNK_MAX_LINE)
        return false;
    return is_value_byte(b);
}

/* Trailer lines "name: value" CRLF, then CRLF; bare CR/LF, obs-fold and
 * controls refused, like in the head. */
static bool trailer_byte(http_chunked *c, unsigned char b)
{
    if (++c->trailer_bytes > HTTP_HEAD_MAX)
        return false;
    switch (c->state) {
    case CH_TRAILER_START:
        if (b == '\r') {
            c->state = CH_FINAL_LF;
            return true;
        }
        c->state = CH_TRAILER_NAME;
        return is_tchar(b);
    case CH_TRAILER_NAME:
        if (b == ':')
            c->state = CH_TRAILER_VALUE;
        return b == ':' || is_tchar(b);
    case CH_TRAILER_VALUE:
        if (b == '\r')
            c->state = CH_TRAILER_LF;
        return b == '\r' || is_value_byte(b);
    case CH_TRAILER_LF:
        c->state = CH_TRAILER_START;
        return b == '\n';
    case CH_FINAL_LF:
        if (b != '\n')
            return false;
        c->done = true;
        return true;
    default:
        return false;
    }
}

/* One framing byte (anything but chunk data); false on an error. */
static bool framing_byte(http_chunked *c, unsigned char b)
{
    switch (c->state) {
    case CH_SIZE:
        return size_byte(c, b);
    case CH_EXT:
        return ext_byte(c, b);
    case CH_SIZE_LF:
        if (b != '\n')
            return false;
        c->state = c->remaining == 0 ? CH_TRAILER_START : CH_DATA;
        return true;
    case CH_DATA_CR:
        c->state = CH_DATA_LF;
        return b == '\r';
    case CH_DATA_LF:
        c->state = CH_SIZE;
        c->digits = 0;
        c->line_len = 0;
        return b == '\n';
    default:
        return trailer_byte(c, b);
    }
}

size_t http_chunked_scan(http_chunked *c, const uint8_t *bytes, size_t len)
{
    size_t i = 0;
    while (i < len && !c->done && !c->error) {
        if (c->state == CH_DATA) {
            size_t take = len - i;
            if ((uint64_t)take > c->remaining)
                take = (size_t)c->remaining;
            c->remaining -= take;
            i += take;
            if (c->remaining == 0)
                c->state = CH_DATA_CR;
            continue;
        }
        if (!framing_byte(c, bytes[i])) {
            c->error = true;
            break;
        }
        i++;
    }
    return i;
}
