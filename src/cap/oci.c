/*
 * oci.c — the OCI distribution client of capabilities, on libcurl:
 * manifests (GET, HEAD, PUT by tag), blobs (GET streamed, HEAD, monolithic
 * upload POST + PUT), registry URLs and the SHA-256 helpers (OpenSSL EVP).
 *
 * Invariants:
 * - The registry is hostile. Its answers are read through one write
 *   callback that never buffers more than the request's cap: a body that
 *   announces more (Content-Length) is refused before the first byte, one
 *   that sends more is aborted on the chunk that crosses the cap (so at most
 *   cap + one libcurl buffer, CURL_MAX_WRITE_SIZE = 16 KiB, is ever read).
 *   Announced sizes are never trusted beyond refusing early.
 * - Blob digests are computed while streaming and compared before the bytes
 *   are handed out; a manifest fetched by digest must hash to it.
 * - No compression is negotiated (no Accept-Encoding): the byte count is the
 *   wire count, and a decompression bomb cannot inflate past the cap.
 * - Only http and https, also on redirects (blob GETs follow at most 3;
 *   from an https registry only to https). libcurl (>= 7.58) does not send
 *   our Authorization header to another host on a redirect; upload
 *   Locations must stay on the registry's origin, so the token and the
 *   uploaded bytes never go elsewhere.
 * - Every request is bounded in time (timeout_ms), and each URL is built
 *   only from the checked base URL and grammar-checked names, tags and
 *   digests (cap.h): no escaping needed, no injection possible.
 * - Header values are copied only when they fit and are printable ASCII; a
 *   malformed Docker-Content-Digest or Location is treated as absent or
 *   refused, never truncated into something else.
 * - libcurl's global initialisation is done once (pthread_once): the only
 *   process-wide state, required by libcurl before any handle exists.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "cap.h"

/* The start of an error body kept for the message; more than
 * CAP_MAX_ERROR_BODY bytes of it aborts the transfer. */
#define ERROR_KEEP 2048
#define CAP_MAX_ERROR_BODY ((size_t)64 << 10)
#define MAX_REDIRECTS 3
#define MAX_TOKEN 4096
#define REQ_URL_MAX (CAP_URL_MAX + 512)

/* ---- buffers and digests -------------------------------------------------------------------- */

void cap_buf_free(cap_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* Make room for want more bytes, never beyond limit in total. */
static bool buf_reserve(cap_buf *b, size_t want, size_t limit) {
    if (want <= b->cap - b->len) return true;
    if (want > limit - b->len) return false;
    size_t need = b->len + want;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > limit) cap = limit;
    uint8_t *p = realloc(b->data, cap ? cap : 1);
    if (!p) return false;
    b->data = p;
    b->cap = cap;
    return true;
}

static void hex_digest(const unsigned char md[32], char out[CAP_DIGEST_SIZE]) {
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < 32; i++) {
        out[7 + 2 * i] = hex[md[i] >> 4];
        out[8 + 2 * i] = hex[md[i] & 15];
    }
    out[71] = '\0';
}

bool cap_sha256_digest(const uint8_t *data, size_t len, char out[CAP_DIGEST_SIZE]) {
    unsigned char md[32];
    unsigned int mdlen = 0;
    out[0] = '\0';
    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) return false;
    hex_digest(md, out);
    return true;
}

/* ---- registry settings -------------------------------------------------------------------- */

static bool host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-';
}

/* HOST[:PORT] or [IPV6][:PORT], exactly len bytes. */
static bool authority_valid(const char *s, size_t len) {
    size_t i = 0;
    if (len == 0) return false;
    if (s[0] == '[') {
        for (i = 1; i < len && s[i] != ']'; i++)
            if (!strchr("0123456789abcdefABCDEF:.", s[i])) return false;
        if (i == len || i == 1) return false;
        i++;
    } else {
        while (i < len && host_char(s[i])) i++;
        if (i == 0) return false;
    }
    if (i == len) return true;
    if (s[i] != ':' || i + 1 == len || len - i - 1 > 5) return false;
    unsigned port = 0;
    for (i++; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        port = port * 10 + (unsigned)(s[i] - '0');
    }
    return port >= 1 && port <= 65535;
}

void cap_client_fini(cap_client *c) {
    free(c->ca_file);
    if (c->auth_header) {
        /* the token is a credential: do not leave it in freed memory */
        memset(c->auth_header, 0, strlen(c->auth_header));
        free(c->auth_header);
    }
    memset(c, 0, sizeof *c);
}

bool cap_client_init(cap_client *c, const al_registry *r, al_error *err) {
    memset(c, 0, sizeof *c);
    if (!r || !r->url || !r->url[0]) {
        al_error_set(err, AL_ERR_ARGUMENT, "no registry URL given");
        return false;
    }
    const char *url = r->url;
    size_t len = strlen(url);
    char q[64];
    cap_quote(q, sizeof q, url, len);
    size_t skip;
    if (!strncmp(url, "https://", 8)) {
        c->https = true;
        skip = 8;
    } else if (!strncmp(url, "http://", 7)) {
        skip = 7;
    } else {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL %s is not http:// or https://", q);
        return false;
    }
    size_t end = len;
    if (end > skip && url[end - 1] == '/') end--;
    if (end >= 256 || !authority_valid(url + skip, end - skip)) {
        al_error_set(err, AL_ERR_ARGUMENT,
                     "registry URL %s must be http(s)://HOST[:PORT] (no user, path, query or "
                     "fragment)",
                     q);
        return false;
    }
    memcpy(c->base, url, end);
    c->base[end] = '\0';
    c->origin_len = end;
    c->max_blob_bytes = r->max_blob_bytes ? r->max_blob_bytes : CAP_DEFAULT_MAX_BLOB_BYTES;
    c->timeout_ms = r->timeout_ms ? r->timeout_ms : CAP_DEFAULT_TIMEOUT_MS;
    if (r->ca_file && !(c->ca_file = strdup(r->ca_file))) goto nomem;
    if (r->auth_token) {
        size_t tlen = strlen(r->auth_token);
        if (tlen == 0 || tlen > MAX_TOKEN) {
            al_error_set(err, AL_ERR_ARGUMENT, "registry token is empty or longer than %d bytes",
                         MAX_TOKEN);
            cap_client_fini(c);
            return false;
        }
        /* header splitting: a CR/LF in the token would add headers */
        for (size_t i = 0; i < tlen; i++) {
            unsigned char ch = (unsigned char)r->auth_token[i];
            if (ch <= 0x20 || ch >= 0x7f) {
                al_error_set(err, AL_ERR_ARGUMENT,
                             "registry token contains a space or a non-printable byte");
                cap_client_fini(c);
                return false;
            }
        }
        if (asprintf(&c->auth_header, "Authorization: Bearer %s", r->auth_token) < 0) {
            c->auth_header = NULL;
            goto nomem;
        }
    }
    return true;
nomem:
    cap_client_fini(c);
    al_error_set(err, AL_ERR_NOMEM, "out of memory");
    return false;
}

/* ---- one HTTP exchange ----------------------------------------------------------------------- */

typedef struct http_call {
    /* the request */
    const char *method;          /* GET, HEAD, POST, PUT */
    char url[REQ_URL_MAX];
    const char *path;            /* url without the origin, for messages */
    const char *accept;
    const char *content_type;
    const uint8_t *body;
    size_t body_len;
    bool follow;                 /* follow redirects (blob GETs) */
    bool nobody;                 /* HEAD: no body expected */
    size_t max_body;             /* a 2xx body beyond this is refused */
    /* the response (of the last response received, after redirects) */
    long status;
    int64_t content_length;      /* -1: not announced */
    cap_buf data;                /* a 2xx body */
    char errbody[ERROR_KEEP];    /* the start of a non-2xx body, NUL-terminated */
    size_t errlen;
    uint64_t received;           /* body bytes received, the refused chunk included */
    bool announced_too_big;      /* Content-Length over max_body: refused before the body */
    bool too_big;                /* the body crossed max_body: aborted */
    bool error_body_cut;         /* an error body over CAP_MAX_ERROR_BODY: aborted */
    bool confused;               /* a new response after body bytes: aborted */
    bool nomem;
    char docker_digest[CAP_DIGEST_SIZE]; /* "" when absent or malformed */
    char location[CAP_URL_MAX];  /* "" when absent */
    bool location_bad;           /* present but too long or not printable */
    EVP_MD_CTX *md;              /* SHA-256 of the 2xx body, when not NULL */
} http_call;

static bool status_ok(long s) { return s >= 200 && s <= 299; }

/* Header value of line if its name is `name` (case-insensitive): trimmed. */
static bool header_value(const char *line, size_t len, const char *name, const char **v,
                         size_t *vlen) {
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':') return false;
    size_t i = n + 1, end = len;
    while (i < end && (line[i] == ' ' || line[i] == '\t')) i++;
    while (end > i && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' ' ||
                       line[end - 1] == '\t'))
        end--;
    *v = line + i;
    *vlen = end - i;
    return true;
}

static bool printable_token(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud) {
    http_call *h = ud;
    size_t len = size * nitems; /* libcurl: size is always 1 */
    const char *v;
    size_t vlen;
    if (len >= 5 && !memcmp(line, "HTTP/", 5)) {
        /* a new response (redirect, 100 Continue): its headers replace the last's */
        if (h->data.len || h->errlen) {
            h->confused = true;
            return 0;
        }
        const char *sp = memchr(line, ' ', len);
        long status = 0;
        if (sp && (size_t)(sp - line) + 4 <= len) {
            for (int i = 1; i <= 3; i++) {
                char ch = sp[i];
                if (ch < '0' || ch > '9') return 0;
                status = status * 10 + (ch - '0');
            }
        }
        h->status = status;
        h->content_length = -1;
        h->docker_digest[0] = '\0';
        h->location[0] = '\0';
        h->location_bad = false;
        return len;
    }
    bool redirect = h->follow && h->status >= 300 && h->status <= 399;
    if (header_value(line, len, "content-length", &v, &vlen)) {
        uint64_t n = 0;
        if (vlen == 0 || vlen > 18) return 0; /* fits int64_t */
        for (size_t i = 0; i < vlen; i++) {
            if (v[i] < '0' || v[i] > '9') return 0; /* a malformed length: abort */
            n = n * 10 + (uint64_t)(v[i] - '0');
        }
        h->content_length = (int64_t)n;
        /* refuse early: nothing of a body announced too big is read (a HEAD
         * has no body: its length is the resource's, not a transfer) */
        if (!redirect && !h->nobody && status_ok(h->status) && n > h->max_body) {
            h->announced_too_big = true;
            return 0;
        }
    } else if (header_value(line, len, "docker-content-digest", &v, &vlen)) {
        if (cap_digest_valid(v, vlen)) {
            memcpy(h->docker_digest, v, vlen);
            h->docker_digest[vlen] = '\0';
        }
    } else if (header_value(line, len, "location", &v, &vlen)) {
        if (vlen == 0 || vlen >= sizeof h->location || !printable_token(v, vlen)) {
            h->location_bad = true;
        } else {
            memcpy(h->location, v, vlen);
            h->location[vlen] = '\0';
        }
    }
    return len;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud) {
    http_call *h = ud;
    size_t n = size * nmemb; /* at most CURL_MAX_WRITE_SIZE */
    h->received += n;
    if (!status_ok(h->status)) {
        if (h->received > CAP_MAX_ERROR_BODY) {
            h->error_body_cut = true;
            return 0;
        }
        size_t room = sizeof h->errbody - 1 - h->errlen;
        size_t take = n < room ? n : room;
        memcpy(h->errbody + h->errlen, ptr, take);
        h->errlen += take;
        h->errbody[h->errlen] = '\0';
        return n;
    }
    if (n > h->max_body - h->data.len) {
        /* the chunk that crosses the cap is counted but never kept */
        h->too_big = true;
        return 0;
    }
    if (!buf_reserve(&h->data, n, h->max_body)) {
        h->nomem = true;
        return 0;
    }
    memcpy(h->data.data + h->data.len, ptr, n);
    h->data.len += n;
    if (h->md && !EVP_DigestUpdate(h->md, ptr, n)) {
        h->nomem = true;
        return 0;
    }
    return n;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;
static void curl_init_once(void) { curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

static bool add_header(struct curl_slist **list, const char *line) {
    struct curl_slist *n = curl_slist_append(*list, line);
    if (!n) return false;
    *list = n;
    return true;
}

static bool set_request_url(http_call *h, const cap_client *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool set_request_url(http_call *h, const cap_client *c, const char *fmt, ...) {
    size_t o = c->origin_len;
    memcpy(h->url, c->base, o);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(h->url + o, sizeof h->url - o, fmt, ap);
    va_end(ap);
    h->path = h->url + o;
    return n >= 0 && (size_t)n < sizeof h->url - o;
}

static void http_init(http_call *h, const char *method) {
    memset(h, 0, sizeof *h);
    h->method = method;
    h->nobody = !strcmp(method, "HEAD");
    h->content_length = -1;
    h->max_body = CAP_MAX_ERROR_BODY;
}

static void http_fini(http_call *h) {
    cap_buf_free(&h->data);
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
}

/* The SHA-256 of the body an http_run with hash received, as "sha256:HEX". */
static bool body_digest(http_call *h, char out[CAP_DIGEST_SIZE], al_error *err) {
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_DigestFinal_ex(h->md, md, &mdlen) || mdlen != 32) {
        al_error_set(err, AL_ERR_SYSTEM, "SHA-256 failed");
        return false;
    }
    hex_digest(md, out);
    return true;
}

/* Moves h's body into out: never NULL, also when empty (callers may memchr
 * it); the caller owns it, h no longer does. */
static bool take_body(http_call *h, cap_buf *out, al_error *err) {
    if (!h->data.data && !buf_reserve(&h->data, 1, 1)) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return false;
    }
    *out = h->data;
    memset(&h->data, 0, sizeof h->data);
    return true;
}

/* Run the exchange. True when a response arrived (any status, or a refusal
 * by our caps: the flags say which); false with err set when the registry
 * could not be reached or libcurl failed. */
static bool http_run(const cap_client *c, http_call *h, bool hash, al_error *err) {
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_result != CURLE_OK) {
        al_error_set(err, AL_ERR_SYSTEM, "libcurl initialisation failed");
        return false;
    }
    if (hash) {
        h->md = EVP_MD_CTX_new();
        if (!h->md || !EVP_DigestInit_ex(h->md, EVP_sha256(), NULL)) {
            al_error_set(err, AL_ERR_NOMEM, "out of memory (SHA-256 context)");
            return false;
        }
    }
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = NULL;
    char accept[CAP_MEDIA_TYPE_MAX + 16], ctype[CAP_MEDIA_TYPE_MAX + 16];
    bool ok = curl != NULL && add_header(&headers, "Expect:");
    if (ok && h->accept) {
        snprintf(accept, sizeof accept, "Accept: %s", h->accept);
        ok = add_header(&headers, accept);
    }
    if (ok && h->content_type) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", h->content_type);
        ok = add_header(&headers, ctype);
    }
    if (ok && c->auth_header) ok = add_header(&headers, c->auth_header);
    if (!ok) {
        curl_slist_free_all(headers);
        if (curl) curl_easy_cleanup(curl);
        al_error_set(err, AL_ERR_NOMEM, "out of memory (HTTP request)");
        return false;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    const char *protocols = c->https ? "https" : "http,https";
    curl_easy_setopt(curl, CURLOPT_URL, h->url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ms > (uint64_t)LONG_MAX ? LONG_MAX : (long)c->timeout_ms));
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "airlock-cap/1");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, h);
    if (h->follow) {
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
    }
    if (c->ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, c->ca_file);
    if (h->nobody) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(h->method, "POST") || !strcmp(h->method, "PUT")) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, h->body ? (const char *)h->body : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->body_len);
        if (!strcmp(h->method, "PUT")) curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    CURLcode res = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);

    if (h->nomem) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory reading %s", h->path);
        return false;
    }
    if (h->confused) {
        al_error_set(err, AL_ERR_INVALID, "registry sent a second response after a body on %s %s",
                     h->method, h->path);
        return false;
    }
    if (res == CURLE_OK || h->announced_too_big || h->too_big || h->error_body_cut) return true;
    al_error_set(err, AL_ERR_SYSTEM, "registry %s unreachable (%s %s): %s", c->base, h->method,
                 h->path, errbuf[0] ? errbuf : curl_easy_strerror(res));
    return false;
}

/* "CODE: message" of an OCI error body ({"errors":[{"code","message"}]}),
 * printable and bounded; "" when there is none. */
static void oci_error_detail(const http_call *h, char *out, size_t outlen) {
    out[0] = '\0';
    if (!h->errlen) return;
    json_t *root = json_loadb(h->errbody, h->errlen, 0, NULL);
    json_t *first = json_array_get(json_object_get(root, "errors"), 0);
    const char *code = json_string_value(json_object_get(first, "code"));
    const char *msg = json_string_value(json_object_get(first, "message"));
    if (code || msg) {
        char qc[64], qm[64];
        cap_quote(qc, sizeof qc, code ? code : "", code ? strlen(code) : 0);
        cap_quote(qm, sizeof qm, msg ? msg : "", msg ? strlen(msg) : 0);
        snprintf(out, outlen, ": %s %s", qc, qm);
    }
    json_decref(root);
}

static void status_error(const cap_client *c, const http_call *h, al_error *err) {
    char detail[160];
    oci_error_detail(h, detail, sizeof detail);
    const char *hint = "";
    if (h->status == 401) hint = " (authentication required: set a token)";
    if (h->status == 403) hint = " (access denied)";
    al_error_set(err, AL_ERR_SYSTEM, "registry %s answered %ld to %s %s%s%s", c->base, h->status,
                 h->method, h->path, hint, detail);
}

/* ---- manifests ------------------------------------------------------------------------------------ */

bool cap_oci_get_manifest(const cap_client *c, const char *name, const char *ref, cap_buf *out,
                          char digest[CAP_DIGEST_SIZE], al_error *err) {
    http_call h;
    memset(out, 0, sizeof *out);
    digest[0] = '\0';
    http_init(&h, "GET");
    h.accept = CAP_MEDIA_MANIFEST;
    h.max_body = CAP_MAX_MANIFEST_BYTES;
    if (!set_request_url(&h, c, "/v2/%s/manifests/%s", name, ref)) {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
        return false;
    }
    if (!http_run(c, &h, true, err)) goto fail;
    if (h.announced_too_big || h.too_big) {
        al_error_set(err, AL_ERR_LIMIT,
                     "manifest %s:%s is larger than %zu bytes: refused after %llu bytes read", name,
                     ref, CAP_MAX_MANIFEST_BYTES, (unsigned long long)h.received);
        goto fail;
    }
    if (h.status == 404) {
        al_error_set(err, AL_ERR_ARGUMENT, "no such capability: %s%s%s in registry %s", name,
                     cap_digest_valid(ref, strlen(ref)) ? "@" : ":", ref, c->base);
        goto fail;
    }
    if (h.status != 200 || h.error_body_cut) {
        status_error(c, &h, err);
        goto fail;
    }
    if (!body_digest(&h, digest, err)) goto fail;
    if (cap_digest_valid(ref, strlen(ref)) && strcmp(ref, digest) != 0) {
        al_error_set(err, AL_ERR_INVALID,
                     "manifest digest mismatch: asked for %s, the registry's bytes hash to %s", ref,
                     digest);
        goto fail;
    }
    if (h.docker_digest[0] && strcmp(h.docker_digest, digest) != 0) {
        al_error_set(err, AL_ERR_INVALID,
                     "manifest digest mismatch: the registry says %s, its bytes hash to %s",
                     h.docker_digest, digest);
        goto fail;
    }
    if (!take_body(&h, out, err)) goto fail;
    http_fini(&h);
    return true;
fail:
    digest[0] = '\0';
    http_fini(&h);
    return false;
}

bool cap_oci_head_manifest(const cap_client *c, const char *name, const char *tag, bool *exists,
                           char digest[CAP_DIGEST_SIZE], al_error *err) {
    http_call h;
    *exists = false;
    digest[0] = '\0';
    http_init(&h, "HEAD");
    h.accept = CAP_MEDIA_MANIFEST;
    if (!set_request_url(&h, c, "/v2/%s/manifests/%s", name, tag)) {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
        return false;
    }
    bool ok = http_run(c, &h, false, err);
    if (ok && h.status == 200) {
        *exists = true;
        memcpy(digest, h.docker_digest, sizeof h.docker_digest);
    } else if (ok && h.status != 404) {
        status_error(c, &h, err);
        ok = false;
    }
    http_fini(&h);
    return ok;
}

bool cap_oci_put_manifest(const cap_client *c, const char *name, const char *tag,
                          const char *manifest, size_t len, char digest_out[CAP_DIGEST_SIZE],
                          al_error *err) {
    http_call h;
    digest_out[0] = '\0';
    http_init(&h, "PUT");
    h.content_type = CAP_MEDIA_MANIFEST;
    h.body = (const uint8_t *)manifest;
    h.body_len = len;
    if (!set_request_url(&h, c, "/v2/%s/manifests/%s", name, tag)) {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
        return false;
    }
    bool ok = http_run(c, &h, false, err);
    if (ok && (!status_ok(h.status) || h.error_body_cut)) {
        status_error(c, &h, err);
        ok = false;
    }
    if (ok) memcpy(digest_out, h.docker_digest, sizeof h.docker_digest);
    http_fini(&h);
    return ok;
}

/* ---- blobs ------------------------------------------------------------------------------------------ */

bool cap_oci_get_blob(const cap_client *c, const char *name, const cap_descriptor *d, size_t max,
                      cap_buf *out, uint64_t *bytes_read, al_error *err) {
    http_call h;
    memset(out, 0, sizeof *out);
    *bytes_read = 0;
    if (d->size > max) {
        al_error_set(err, AL_ERR_LIMIT,
                     "blob %s declares %llu bytes, more than the limit of %zu: refused before "
                     "reading (0 bytes read)",
                     d->digest, (unsigned long long)d->size, max);
        return false;
    }
    http_init(&h, "GET");
    h.follow = true;
    /* the descriptor's size is at most max: data beyond it is already wrong */
    h.max_body = (size_t)d->size;
    if (!set_request_url(&h, c, "/v2/%s/blobs/%s", name, d->digest)) {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
        return false;
    }
    bool ok = http_run(c, &h, true, err);
    *bytes_read = h.received;
    if (!ok) goto fail;
    if (h.announced_too_big) {
        al_error_set(err, h.content_length > (int64_t)max ? AL_ERR_LIMIT : AL_ERR_INVALID,
                     "blob %s: the registry announces %lld bytes, more than %s %llu: refused "
                     "before the body (%llu bytes read)",
                     d->digest, (long long)h.content_length,
                     h.content_length > (int64_t)max ? "the limit of" : "the descriptor's",
                     (unsigned long long)(h.content_length > (int64_t)max ? max : d->size),
                     (unsigned long long)h.received);
        goto fail;
    }
    if (h.too_big) {
        bool limit = d->size >= max;
        al_error_set(err, limit ? AL_ERR_LIMIT : AL_ERR_INVALID,
                     "blob %s: more than %s %llu bytes arrived: transfer aborted after %llu bytes "
                     "read",
                     d->digest, limit ? "the limit of" : "the descriptor's",
                     (unsigned long long)d->size, (unsigned long long)h.received);
        goto fail;
    }
    if (h.status == 404) {
        al_error_set(err, AL_ERR_INVALID, "blob %s is missing from %s/%s", d->digest, c->base, name);
        goto fail;
    }
    if (h.status != 200 || h.error_body_cut) {
        status_error(c, &h, err);
        goto fail;
    }
    if (h.data.len != d->size) {
        al_error_set(err, AL_ERR_INVALID, "blob %s: %zu bytes arrived, its descriptor says %llu",
                     d->digest, h.data.len, (unsigned long long)d->size);
        goto fail;
    }
    char got[CAP_DIGEST_SIZE];
    if (!body_digest(&h, got, err)) goto fail;
    if (strcmp(got, d->digest) != 0) {
        al_error_set(err, AL_ERR_INVALID, "digest mismatch: blob %s hashes to %s (%zu bytes)",
                     d->digest, got, h.data.len);
        goto fail;
    }
    if (!take_body(&h, out, err)) goto fail;
    http_fini(&h);
    return true;
fail:
    http_fini(&h);
    return false;
}

/* HEAD /v2/NAME/blobs/DIGEST */
static bool blob_exists(const cap_client *c, const char *name, const char *digest, bool *exists,
                        al_error *err) {
    http_call h;
    *exists = false;
    http_init(&h, "HEAD");
    if (!set_request_url(&h, c, "/v2/%s/blobs/%s", name, digest)) {
        al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
        return false;
    }
    bool ok = http_run(c, &h, false, err);
    if (ok && h.status == 200) {
        *exists = true;
    } else if (ok && h.status != 404) {
        status_error(c, &h, err);
        ok = false;
    }
    http_fini(&h);
    return ok;
}

/* The URL to PUT the upload to: Location resolved against the registry,
 * refused unless it stays on the registry's origin (the upload and the
 * token must not be sent to a host the registry names). */
static bool upload_url(const cap_client *c, const http_call *post, const char *digest,
                       http_call *put, al_error *err) {
    const char *loc = post->location;
    char q[64];
    cap_quote(q, sizeof q, loc, strlen(loc));
    if (post->location_bad || !loc[0]) {
        al_error_set(err, AL_ERR_INVALID, "registry %s started an upload without a usable Location",
                     c->base);
        return false;
    }
    if (strchr(loc, '#')) {
        al_error_set(err, AL_ERR_INVALID, "upload location %s has a fragment", q);
        return false;
    }
    const char *sep = strchr(loc, '?') ? "&" : "?";
    int n;
    if (loc[0] == '/' && loc[1] != '/') {
        n = snprintf(put->url, sizeof put->url, "%s%s%sdigest=%s", c->base, loc, sep, digest);
    } else if (!strncmp(loc, c->base, c->origin_len) && loc[c->origin_len] == '/') {
        n = snprintf(put->url, sizeof put->url, "%s%sdigest=%s", loc, sep, digest);
    } else {
        al_error_set(err, AL_ERR_INVALID, "upload location %s is not on the registry's origin %s",
                     q, c->base);
        return false;
    }
    if (n < 0 || (size_t)n >= sizeof put->url) {
        al_error_set(err, AL_ERR_INVALID, "upload location %s is too long", q);
        return false;
    }
    put->path = put->url + c->origin_len;
    return true;
}

bool cap_oci_push_blob(const cap_client *c, const char *name, const char *digest,
                       const uint8_t *data, size_t len, al_error *err) {
    bool exists;
    if (!blob_exists(c, name, digest, &exists, err)) return false;
    if (exists) return true;

    http_call post, put;
    http_init(&post, "POST");
    http_init(&put, "PUT");
    bool ok = set_request_url(&post, c, "/v2/%s/blobs/uploads/", name);
    if (!ok) al_error_set(err, AL_ERR_ARGUMENT, "registry URL too long");
    ok = ok && http_run(c, &post, false, err);
    if (ok && (post.status != 202 || post.error_body_cut)) {
        status_error(c, &post, err);
        ok = false;
    }
    ok = ok && upload_url(c, &post, digest, &put, err);
    if (ok) {
        put.content_type = "application/octet-stream";
        put.body = data;
        put.body_len = len;
        ok = http_run(c, &put, false, err);
    }
    if (ok && (!status_ok(put.status) || put.error_body_cut)) {
        status_error(c, &put, err);
        ok = false;
    }
    if (ok && put.docker_digest[0] && strcmp(put.docker_digest, digest) != 0) {
        al_error_set(err, AL_ERR_INVALID, "registry stored blob %s as %s", digest,
                     put.docker_digest);
        ok = false;
    }
    http_fini(&post);
    http_fini(&put);
    return ok;
}
