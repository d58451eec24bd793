/*
 * http.c — the http_request host function: a plugin's HTTP request, let
 * through only where the options allow it, performed with libcurl.
 *
 * One request, in order:
 *   1. the request JSON {"url", "method", "headers"} (unknown fields are
 *      ignored, as Extism does) and the optional body handle, both checked
 *      blocks of the kernel;
 *   2. refused unless options.allow_http; the URL parsed once with curl's
 *      URL parser and that same parse handed to the transfer (CURLOPT_CURLU),
 *      so the host checked is the host connected to; http and https only;
 *   3. the host against allowed_hosts through the egress policy
 *      (egress_check_name: exact names and "*.x.y" wildcards; "*" alone is
 *      Extism's "any host"; a literal IP only when allow_ips covers it).
 *      Ports are not restricted (Extism's allowed_hosts grant hosts), so
 *      the name is checked with its scheme's default port;
 *   4. the name resolved once: the static hosts map first, else a literal,
 *      else getaddrinfo; every address checked with egress_check_address
 *      (the deny-list: loopback, private, link-local, metadata, the host's
 *      own addresses — unless allow_ips grants it); one denied address
 *      refuses the request;
 *   5. the transfer pinned to exactly the checked addresses (CURLOPT_RESOLVE)
 *      and, belt and braces, every socket curl opens checked against them
 *      (CURLOPT_OPENSOCKETFUNCTION): a second DNS answer (rebinding) cannot
 *      move the connection. No proxy (the environment's *_proxy variables
 *      are ignored), no redirects, the call's deadline as the timeout, the
 *      store's interrupt flag (timeout, cancel) polled by the progress
 *      callback, the body aborted as soon as it passes
 *      max_http_response_bytes, response headers capped and kept as JSON for
 *      http_headers.
 *
 * A refused or failed request traps the plugin with a message ("HTTP
 * request to URL is not allowed: why"), which is what Extism does (its host
 * function returns an error). A response with any status code is a success;
 * http_status_code reports it.
 *
 * Invariants:
 *  - nothing here keeps a pointer into the kernel across a kernel
 *    allocation; the request body is read in place during the transfer,
 *    when nothing allocates in the kernel;
 *  - URLs echoed into messages are sanitised (control bytes become '?'), so
 *    a plugin cannot inject terminal escapes into the embedder's logs;
 *  - every curl and jansson object is released on every path.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <jansson.h>

#include "plugin.h"

#define MAX_RESPONSE_HEADER_BYTES (256u * 1024u)
#define MAX_METHOD_LEN 32
#define NO_DEADLINE_CONNECT_TIMEOUT_MS 30000L

/* ---- policy ---------------------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;
static void curl_init_once(void) { curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* A literal address (no DNS) into out. */
static bool parse_literal(const char *text, struct sockaddr_storage *out, socklen_t *len) {
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_NUMERICHOST;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(text, NULL, &hints, &ai) != 0 || !ai) return false;
    bool ok = ai->ai_addrlen <= sizeof *out;
    if (ok) {
        memset(out, 0, sizeof *out);
        memcpy(out, ai->ai_addr, ai->ai_addrlen);
        *len = ai->ai_addrlen;
    }
    freeaddrinfo(ai);
    return ok;
}

bool plugin_http_validate(const plugin_settings *s, al_error *err) {
    egress_policy pol;
    egress_policy_init(&pol);
    bool ok = true;
    for (size_t i = 0; ok && i < s->nallowed_hosts; i++) {
        if (strcmp(s->allowed_hosts[i], "*") == 0) continue;
        if (!egress_policy_allow_domain(&pol, s->allowed_hosts[i])) {
            snprintf(err->message, sizeof err->message,
                     "allowed_hosts: '%.80s' is not a host name or a \"*.domain.tld\" pattern "
                     "(literal IP addresses go in allow_ips)",
                     s->allowed_hosts[i]);
            ok = false;
        }
    }
    for (size_t i = 0; ok && i < s->nallow_ips; i++) {
        if (!egress_policy_allow_ip(&pol, s->allow_ips[i])) {
            snprintf(err->message, sizeof err->message, "allow_ips: '%.80s' is not a CIDR",
                     s->allow_ips[i]);
            ok = false;
        }
    }
    for (size_t i = 0; ok && i < s->nhosts; i++) {
        char name[EGRESS_MAX_NAME + 1];
        struct sockaddr_storage ss;
        socklen_t sl;
        if (!egress_normalise_name(s->hosts[i].name, name) ||
            !parse_literal(s->hosts[i].address, &ss, &sl)) {
            snprintf(err->message, sizeof err->message,
                     "hosts: '%.80s' -> '%.60s' is not a host name and a literal address",
                     s->hosts[i].name, s->hosts[i].address);
            ok = false;
        }
    }
    egress_policy_free(&pol);
    if (!ok) err->kind = AL_ERR_ARGUMENT;
    return ok;
}

bool plugin_http_policy_init(al_plugin *p, al_error *err) {
    if (p->policy_ready) return true;
    egress_policy_init(&p->policy);
    const plugin_settings *s = &p->set;
    for (size_t i = 0; i < s->nallowed_hosts; i++)
        if (strcmp(s->allowed_hosts[i], "*") != 0 &&
            !egress_policy_allow_domain(&p->policy, s->allowed_hosts[i]))
            goto fail;
    for (size_t i = 0; i < s->nallow_ips; i++)
        if (!egress_policy_allow_ip(&p->policy, s->allow_ips[i])) goto fail;
    p->policy_ready = true;
    return true;
fail:
    egress_policy_free(&p->policy);
    snprintf(err->message, sizeof err->message, "cannot build the plugin's egress policy");
    err->kind = AL_ERR_ARGUMENT;
    return false;
}

void plugin_http_free(al_plugin *p) {
    if (p->policy_ready) egress_policy_free(&p->policy);
    p->policy_ready = false;
    free(p->http_headers);
    p->http_headers = NULL;
    p->http_headers_len = 0;
}

/* ---- one transfer ------------------------------------------------------------------------- */

typedef struct http_xfer {
    al_plugin *p;
    const char *shown;                 /* the sanitised URL for messages */
    uint8_t *body;
    size_t len, cap;
    uint64_t max;
    bool too_big;
    json_t *headers;
    size_t header_bytes;
    bool headers_too_big;
    struct sockaddr_storage addrs[EGRESS_MAX_ADDRS];
    socklen_t addr_lens[EGRESS_MAX_ADDRS];
    size_t naddrs;
    unsigned port;
    bool literal;                      /* the URL's host was an IP literal: no DNS, no pin */
    bool refused_socket;
} http_xfer;

static void sanitise(const char *in, char *out, size_t cap) {
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[i] = '\0';
    if (in[i] && cap > 4) memcpy(out + cap - 4, "...", 4);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg) {
    http_xfer *x = arg;
    size_t n = size * nmemb; /* curl guarantees size == 1 */
    if (n > x->max || x->len > x->max - n) {
        x->too_big = true;
        return 0; /* abort the transfer: never buffer past the cap */
    }
    if (x->len + n > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16384;
        if (cap < x->len + n) cap = x->len + n;
        if (cap > x->max) cap = (size_t)x->max;
        uint8_t *grown = realloc(x->body, cap);
        if (!grown) return 0;
        x->body = grown;
        x->cap = cap;
    }
    memcpy(x->body + x->len, data, n);
    x->len += n;
    return n;
}

static void trim(const char **s, size_t *n) {
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && strchr(" \t\r\n", (*s)[*n - 1])) (*n)--;
}

/* One response header line: kept in x->headers (names lower-cased, repeated
 * names joined with ", "); a status line starts a new response (after a
 * 1xx), so only the final response's headers remain. */
static size_t on_header(char *line, size_t size, size_t nitems, void *arg) {
    http_xfer *x = arg;
    size_t n = size * nitems;
    x->header_bytes += n;
    if (x->header_bytes > MAX_RESPONSE_HEADER_BYTES) {
        x->headers_too_big = true;
        return 0;
    }
    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        json_object_clear(x->headers);
        return n;
    }
    const char *colon = memchr(line, ':', n);
    if (!colon) return n; /* the blank line that ends the head */
    const char *name = line, *value = colon + 1;
    size_t nl = (size_t)(colon - line), vl = n - nl - 1;
    trim(&name, &nl);
    trim(&value, &vl);
    if (nl == 0 || nl > 256) return n;
    char key[257];
    for (size_t i = 0; i < nl; i++) key[i] = (char)tolower((unsigned char)name[i]);
    key[nl] = '\0';
    if (memchr(key, '\0', nl)) return n;
    json_t *prev = json_object_get(x->headers, key);
    json_t *v;
    if (prev) {
        size_t pl = json_string_length(prev);
        char *joined = malloc(pl + 2 + vl + 1);
        if (!joined) return n;
        memcpy(joined, json_string_value(prev), pl);
        memcpy(joined + pl, ", ", 2);
        memcpy(joined + pl + 2, value, vl);
        v = json_stringn(joined, pl + 2 + vl);
        free(joined);
    } else {
        v = json_stringn(value, vl);
    }
    /* Not UTF-8 (json_stringn refuses it): the header is left out rather
     * than handing the plugin invalid JSON. */
    if (v) json_object_set_new(x->headers, key, v);
    return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    http_xfer *x = arg;
    return al_store_interrupted(x->p->inst.store) ? 1 : 0;
}

static bool same_address(const struct sockaddr *a, const struct sockaddr_storage *b) {
    if (a->sa_family != b->ss_family) return false;
    if (a->sa_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)(const void *)a)->sin_addr,
                      &((const struct sockaddr_in *)(const void *)b)->sin_addr, 4) == 0;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr, 16) == 0;
    return false;
}

/* Every socket curl opens must go to an address this request checked. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a) {
    http_xfer *x = arg;
    const struct sockaddr *sa = &a->addr;
    bool known = false;
    for (size_t i = 0; i < x->naddrs && !known; i++) known = same_address(sa, &x->addrs[i]);
    if (!known || purpose != CURLSOCKTYPE_IPCXN) {
        x->refused_socket = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- the request ---------------------------------------------------------------------------- */

typedef struct http_req {
    const char *url;
    const char *method;
    json_t *headers;                  /* object of strings, or NULL */
} http_req;

static bool is_token(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(c > 0x20 && c < 0x7f) || strchr("\"(),/:;<=>?@[\\]{}", c)) return false;
    }
    return true;
}

/* A header value fit to send: no CR, LF, NUL or other control byte (header
 * injection: "x\r\nHost: other" would smuggle a second header). */
static bool is_field_value(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
    }
    return true;
}

/* A JSON string without embedded NUL bytes, or NULL. */
static const char *plain_string(json_t *v) {
    if (!json_is_string(v)) return NULL;
    const char *s = json_string_value(v);
    return strlen(s) == json_string_length(v) ? s : NULL;
}

static al_trap_kind parse_request(al_plugin *p, json_t *root, http_req *r) {
    if (!json_is_object(root))
        return plugin_trap(p, "http_request: the request must be a JSON object");
    r->url = plain_string(json_object_get(root, "url"));
    if (!r->url) return plugin_trap(p, "http_request: the request has no \"url\" string");
    json_t *m = json_object_get(root, "method");
    r->method = "GET";
    if (m && !json_is_null(m)) {
        r->method = plain_string(m);
        if (!r->method || !is_token(r->method, strlen(r->method)) ||
            strlen(r->method) > MAX_METHOD_LEN)
            return plugin_trap(p, "http_request: \"method\" is not an HTTP method token");
    }
    json_t *h = json_object_get(root, "headers");
    r->headers = NULL;
    if (h && !json_is_null(h)) {
        if (!json_is_object(h))
            return plugin_trap(p, "http_request: \"headers\" must be an object of strings");
        const char *k;
        json_t *v;
        json_object_foreach(h, k, v) {
            const char *s = plain_string(v);
            if (!s || !is_token(k, strlen(k)) || !is_field_value(s, strlen(s)))
                return plugin_trap(p, "http_request: header '%.40s' has an invalid name or value",
                                   k); /* scrubbed by plugin_trap */
        }
        r->headers = h;
    }
    return AL_TRAP_NONE;
}

static struct curl_slist *build_headers(const http_req *r, bool *ok) {
    struct curl_slist *list = NULL;
    bool has_expect = false;
    *ok = true;
    if (r->headers) {
        const char *k;
        json_t *v;
        json_object_foreach(r->headers, k, v) {
            const char *s = json_string_value(v);
            size_t need = strlen(k) + strlen(s) + 3;
            char *line = malloc(need);
            if (!line) {
                *ok = false;
                break;
            }
            /* "Name;" is curl's way to send a header with an empty value. */
            if (*s) snprintf(line, need, "%s: %s", k, s);
            else snprintf(line, need, "%s;", k);
            struct curl_slist *grown = curl_slist_append(list, line);
            free(line);
            if (!grown) {
                *ok = false;
                break;
            }
            list = grown;
            if (strcasecmp(k, "expect") == 0) has_expect = true;
        }
    }
    if (*ok && !has_expect) {
        /* No "Expect: 100-continue" round trip for larger bodies. */
        struct curl_slist *grown = curl_slist_append(list, "Expect:");
        if (grown) list = grown;
        else *ok = false;
    }
    return list;
}

/* ---- destination checks ------------------------------------------------------------------- */

static bool ensure_policy(al_plugin *p) {
    al_error err;
    memset(&err, 0, sizeof err);
    if (!plugin_http_policy_init(p, &err)) return false;
    if (!p->host_addrs_ready) {
        /* The host's own addresses are denied: a plugin reaching them reaches
         * every service the host listens on. Collected at the first request,
         * not at instantiate (getifaddrs is not free). */
        if (!egress_host_addresses(&p->policy)) return false;
        p->host_addrs_ready = true;
    }
    return true;
}

static const char *static_host(const al_plugin *p, const char *name) {
    for (size_t i = 0; i < p->set.nhosts; i++) {
        char norm[EGRESS_MAX_NAME + 1];
        if (egress_normalise_name(p->set.hosts[i].name, norm) && strcmp(norm, name) == 0)
            return p->set.hosts[i].address;
    }
    return NULL;
}

/* Resolve host into x->addrs; false with a reason on failure. */
static bool resolve(al_plugin *p, const char *host, http_xfer *x, const char **why) {
    char literal[INET6_ADDRSTRLEN + 2];
    size_t hl = strlen(host);
    if (host[0] == '[' && hl >= 2 && hl - 2 < sizeof literal) {
        memcpy(literal, host + 1, hl - 2);
        literal[hl - 2] = '\0';
        host = literal;
    }
    if (parse_literal(host, &x->addrs[0], &x->addr_lens[0])) {
        x->naddrs = 1;
        x->literal = true;
        return true;
    }
    char name[EGRESS_MAX_NAME + 1];
    if (!egress_normalise_name(host, name)) {
        *why = "the host is not a valid domain name";
        return false;
    }
    const char *mapped = static_host(p, name);
    if (mapped) {
        if (!parse_literal(mapped, &x->addrs[0], &x->addr_lens[0])) {
            *why = "the hosts map gives an invalid address";
            return false;
        }
        x->naddrs = 1;
        return true;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(name, NULL, &hints, &res) != 0 || !res) {
        *why = "the host name does not resolve";
        return false;
    }
    for (struct addrinfo *ai = res; ai && x->naddrs < EGRESS_MAX_ADDRS; ai = ai->ai_next) {
        if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
            ai->ai_addrlen > sizeof x->addrs[0])
            continue;
        memcpy(&x->addrs[x->naddrs], ai->ai_addr, ai->ai_addrlen);
        x->addr_lens[x->naddrs++] = ai->ai_addrlen;
    }
    freeaddrinfo(res);
    if (x->naddrs == 0) {
        *why = "the host name has no IPv4 or IPv6 address";
        return false;
    }
    return true;
}

/* "host:port:addr,addr" for CURLOPT_RESOLVE. */
static struct curl_slist *pin_list(const char *host, const http_xfer *x) {
    char line[EGRESS_MAX_NAME + 16 + EGRESS_MAX_ADDRS * (INET6_ADDRSTRLEN + 3)];
    int n = snprintf(line, sizeof line, "%s:%u:", host, x->port);
    for (size_t i = 0; i < x->naddrs && n > 0 && (size_t)n < sizeof line; i++) {
        char a[INET6_ADDRSTRLEN];
        const struct sockaddr_storage *ss = &x->addrs[i];
        if (ss->ss_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ss)->sin_addr, a,
                      sizeof a);
        else
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr, a,
                      sizeof a);
        n += snprintf(line + n, sizeof line - (size_t)n, ss->ss_family == AF_INET6 ? "%s[%s]" : "%s%s",
                      i ? "," : "", a);
    }
    if (n <= 0 || (size_t)n >= sizeof line) return NULL;
    return curl_slist_append(NULL, line);
}

/* ---- the whole request ---------------------------------------------------------------------- */

typedef struct http_call {
    json_t *root;
    CURLU *url;
    CURL *curl;
    char *scheme, *host, *port;
    struct curl_slist *headers, *pins;
    http_xfer x;
    char shown[120];
} http_call;

static void call_release(http_call *c) {
    json_decref(c->root);
    json_decref(c->x.headers);
    curl_free(c->scheme);
    curl_free(c->host);
    curl_free(c->port);
    if (c->curl) curl_easy_cleanup(c->curl);
    curl_url_cleanup(c->url);
    curl_slist_free_all(c->headers);
    curl_slist_free_all(c->pins);
    free(c->x.body);
}

static al_trap_kind not_allowed(al_plugin *p, const http_call *c, const char *why) {
    return plugin_trap(p, "HTTP request to %s is not allowed: %s", c->shown, why);
}

/* Steps 2-4: may this URL be fetched, and from which addresses? */
static al_trap_kind check_destination(al_plugin *p, http_call *c, const http_req *r) {
    if (!p->set.allow_http)
        return not_allowed(p, c, "this plugin may not make HTTP requests (no allowed_hosts)");
    c->url = curl_url();
    if (!c->url) return plugin_trap(p, "http_request: out of memory");
    if (curl_url_set(c->url, CURLUPART_URL, r->url, 0) != CURLUE_OK ||
        curl_url_get(c->url, CURLUPART_SCHEME, &c->scheme, 0) != CURLUE_OK)
        return plugin_trap(p, "http_request: '%s' is not a valid URL", c->shown);
    bool https = strcasecmp(c->scheme, "https") == 0;
    if (!https && strcasecmp(c->scheme, "http") != 0)
        return not_allowed(p, c, "only http and https URLs are allowed");
    if (curl_url_get(c->url, CURLUPART_HOST, &c->host, 0) != CURLUE_OK ||
        curl_url_get(c->url, CURLUPART_PORT, &c->port, CURLU_DEFAULT_PORT) != CURLUE_OK)
        return plugin_trap(p, "http_request: '%s' is not a valid URL", c->shown);
    long port = strtol(c->port, NULL, 10);
    if (port < 1 || port > 65535) return not_allowed(p, c, "the port is invalid");
    c->x.port = (unsigned)port;
    if (!ensure_policy(p)) return plugin_trap(p, "http_request: cannot build the egress policy");
    egress_verdict v = egress_check_name(&p->policy, c->host, https ? 443 : 80);
    if (v == EGRESS_DENY_NOT_ALLOWED && p->set.allow_any_host) v = EGRESS_ALLOW;
    if (v != EGRESS_ALLOW) return not_allowed(p, c, egress_verdict_reason(v));
    const char *why = NULL;
    if (!resolve(p, c->host, &c->x, &why)) return not_allowed(p, c, why);
    for (size_t i = 0; i < c->x.naddrs; i++) {
        v = egress_check_address(&p->policy, (const struct sockaddr *)&c->x.addrs[i],
                                 c->x.addr_lens[i]);
        if (v != EGRESS_ALLOW) return not_allowed(p, c, egress_verdict_reason(v));
    }
    return AL_TRAP_NONE;
}

#define SETOPT(c, opt, val) (ok = ok && curl_easy_setopt((c), (opt), (val)) == CURLE_OK)

/* Step 5: the transfer's options. */
static bool configure(al_plugin *p, http_call *c, const http_req *r, const uint8_t *body,
                      uint64_t body_len, char *errbuf) {
    bool ok = true, headers_ok;
    c->headers = build_headers(r, &headers_ok);
    if (!c->x.literal) c->pins = pin_list(c->host, &c->x);
    if (!headers_ok || (!c->x.literal && !c->pins)) return false;
    CURL *h = c->curl;
    SETOPT(h, CURLOPT_CURLU, c->url);
    SETOPT(h, CURLOPT_ERRORBUFFER, errbuf);
    SETOPT(h, CURLOPT_NOSIGNAL, 1L);
    SETOPT(h, CURLOPT_PROXY, "");             /* never the environment's proxy */
    SETOPT(h, CURLOPT_FOLLOWLOCATION, 0L);
    SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    if (c->pins) SETOPT(h, CURLOPT_RESOLVE, c->pins);
    SETOPT(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    SETOPT(h, CURLOPT_OPENSOCKETDATA, &c->x);
    SETOPT(h, CURLOPT_HTTPHEADER, c->headers);
    SETOPT(h, CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(h, CURLOPT_WRITEDATA, &c->x);
    SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(h, CURLOPT_HEADERDATA, &c->x);
    SETOPT(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    SETOPT(h, CURLOPT_XFERINFODATA, &c->x);
    SETOPT(h, CURLOPT_NOPROGRESS, 0L);
    if (p->deadline_ns) {
        uint64_t now = plugin_now_ns();
        long ms = now >= p->deadline_ns ? 1 : (long)((p->deadline_ns - now) / 1000000u) + 1;
        SETOPT(h, CURLOPT_TIMEOUT_MS, ms);
    } else {
        SETOPT(h, CURLOPT_CONNECTTIMEOUT_MS, NO_DEADLINE_CONNECT_TIMEOUT_MS);
    }
    if (strcmp(r->method, "HEAD") == 0) {
        SETOPT(h, CURLOPT_NOBODY, 1L);
    } else {
        SETOPT(h, CURLOPT_CUSTOMREQUEST, r->method);
        bool wants_body = body || strcmp(r->method, "POST") == 0 ||
                          strcmp(r->method, "PUT") == 0 || strcmp(r->method, "PATCH") == 0;
        if (wants_body) {
            SETOPT(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
            SETOPT(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        }
    }
    return ok;
}

/* After the transfer: a trap, or the response handed to the plugin. */
static al_trap_kind finish(al_plugin *p, http_call *c, CURLcode rc, const char *errbuf,
                           uint64_t *response) {
    if (c->x.too_big)
        return plugin_trap(p, "HTTP response from %s exceeds max_http_response_bytes (%llu bytes)",
                           c->shown, (unsigned long long)c->x.max);
    if (c->x.headers_too_big)
        return plugin_trap(p, "HTTP response from %s has more than %u bytes of headers", c->shown,
                           MAX_RESPONSE_HEADER_BYTES);
    /* Curl's timeout is only ever the call's deadline (configure), so a
     * curl timeout is the call timing out, whichever of the two fired first. */
    if (rc == CURLE_ABORTED_BY_CALLBACK || (rc == CURLE_OPERATION_TIMEDOUT && p->deadline_ns)) {
        plugin_trap(p, "HTTP request to %s was interrupted (timeout or cancel)", c->shown);
        return AL_TRAP_INTERRUPTED;
    }
    if (c->x.refused_socket)
        return not_allowed(p, c, "curl tried to connect to an address that was not checked");
    if (rc != CURLE_OK)
        return plugin_trap(p, "HTTP request to %s failed: %s", c->shown,
                           errbuf[0] ? errbuf : curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    p->http_status = (int32_t)status;
    char *json = json_dumps(c->x.headers, JSON_COMPACT);
    if (!json) return plugin_trap(p, "http_request: out of memory");
    free(p->http_headers);
    p->http_headers = json;
    p->http_headers_len = strlen(json);
    if (!kernel_alloc_copy(&p->kernel, c->x.body, c->x.len, response))
        return plugin_trap(p, "http_request: no room for the %zu-byte response in the plugin's memory",
                           c->x.len);
    return AL_TRAP_NONE;
}

al_trap_kind plugin_http_request(al_plugin *p, uint64_t req, uint64_t body, uint64_t *response) {
    *response = 0;
    uint64_t rlen = kernel_length(&p->kernel, req), blen = 0;
    if (rlen == 0)
        return plugin_trap(p, "http_request: request handle %llu is not an allocated block",
                           (unsigned long long)req);
    if (body != 0 && (blen = kernel_length(&p->kernel, body)) == 0)
        return plugin_trap(p, "http_request: body handle %llu is not an allocated block",
                           (unsigned long long)body);
    http_call c;
    memset(&c, 0, sizeof c);
    c.x.p = p;
    c.x.shown = c.shown;
    c.x.max = p->set.max_http_response_bytes;
    json_error_t jerr;
    c.root = json_loadb((const char *)p->kernel.mem + req, rlen, 0, &jerr);
    if (!c.root) return plugin_trap(p, "http_request: the request is not valid JSON: %s", jerr.text);
    http_req r;
    memset(&r, 0, sizeof r);
    al_trap_kind t = parse_request(p, c.root, &r);
    if (t == AL_TRAP_NONE) {
        sanitise(r.url, c.shown, sizeof c.shown);
        t = check_destination(p, &c, &r);
    }
    if (t != AL_TRAP_NONE) {
        call_release(&c);
        return t;
    }
    char errbuf[CURL_ERROR_SIZE];
    errbuf[0] = '\0';
    pthread_once(&curl_once, curl_init_once);
    c.x.headers = json_object();
    c.curl = curl_init_result == CURLE_OK ? curl_easy_init() : NULL;
    const uint8_t *b = body ? p->kernel.mem + body : NULL;
    if (!c.x.headers || !c.curl || !configure(p, &c, &r, b, blen, errbuf)) {
        call_release(&c);
        return plugin_trap(p, "http_request: cannot set up the transfer");
    }
    errbuf[0] = '\0';
    CURLcode rc = curl_easy_perform(c.curl);
    t = finish(p, &c, rc, errbuf, response);
    call_release(&c);
    return t;
}
