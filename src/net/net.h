/*
 * net.h — the egress layer's internals (issue 5): what an allow-listed
 * connection may reach, decided before any byte leaves the host.
 *
 *   policy.c   egress_policy: allowed/denied domains (exact and "*.x.y"
 *              wildcards; deny wins), allowed ports, allowed IPs/CIDRs; and
 *              the address deny-list (loopback, link-local, private ranges,
 *              multicast, the cloud metadata address, the host's own
 *              addresses) every resolved address is checked against.
 *   sni.c      the server name of a TLS ClientHello, from hostile bytes, so a
 *              CONNECT tunnel cannot front one domain with another.
 *   http_head.c an HTTP/1.x request head from hostile bytes (absolute-form
 *              requests and CONNECT), the head rewritten for the origin
 *              (origin-form, Host from the URL, Proxy-* dropped, injected
 *              headers, Connection: close), and the end of a chunked body.
 *   config.c   egress_config: the public al_egress turned into what the
 *              proxy uses (parsed policy, header grants, static host map,
 *              limits, decision log).
 *   resolver.c getaddrinfo on worker threads, so the proxy loop never blocks.
 *   proxy.c    the proxy: one thread, one epoll loop, fed client sockets
 *              over its Unix socket; every decision logged.
 *   relay.c    the sandbox side: a listener on 127.0.0.1:3128 inside the
 *              sandbox's network namespace whose connections are handed to
 *              the proxy's Unix socket (SCM_RIGHTS: the socket itself moves,
 *              no byte is copied twice).
 *   gateway.c  what a backend calls: proxy + relay for one execution.
 *
 * policy.c, sni.c and http_head.c are pure computation over their arguments
 * (no I/O but egress_host_addresses), so the proxy, the CLI and
 * capabilities share them and they can be fuzzed.
 */
#ifndef AIRLOCK_NET_H
#define AIRLOCK_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "airlock.h"

#define EGRESS_MAX_NAME 253     /* a DNS name, without the trailing dot */
#define EGRESS_MAX_RULES 256

/* An address range: family AF_INET or AF_INET6, prefix length in bits. */
typedef struct egress_cidr {
    int family;
    uint8_t addr[16];         /* network byte order; first 4 bytes for AF_INET */
    unsigned prefix;
} egress_cidr;

typedef struct egress_policy {
    char **allow_domains;     /* "example.com" or "*.example.com"; lower case */
    size_t nallow;
    char **deny_domains;
    size_t ndeny;
    uint16_t *ports;          /* allowed destination ports; default {80, 443} */
    size_t nports;
    egress_cidr *allow_ips;   /* addresses a destination may have although the
                                 deny-list (or being a literal IP) refuses it */
    size_t nallow_ips;
    egress_cidr *host_addrs;  /* the host's own addresses (egress_host_addresses) */
    size_t nhost_addrs;
} egress_policy;

typedef enum egress_verdict {
    EGRESS_ALLOW = 0,
    EGRESS_DENY_NAME_INVALID,   /* not a valid DNS name */
    EGRESS_DENY_NOT_ALLOWED,    /* in no allow rule */
    EGRESS_DENY_DENIED,         /* matched a deny rule */
    EGRESS_DENY_PORT,           /* port not allowed */
    EGRESS_DENY_LITERAL_IP,     /* a literal IP not allowed by allow_ips */
    EGRESS_DENY_ADDRESS,        /* resolved to a deny-listed address */
} egress_verdict;

/* A sentence a model can read: "domain x is not in the allow-list". */
const char *egress_verdict_reason(egress_verdict v);

/* Initialise empty (ports 80 and 443); free everything it owns. */
void egress_policy_init(egress_policy *p);
void egress_policy_free(egress_policy *p);
/* Add rules; false (errno EINVAL / ENOMEM) on a malformed rule. Domains are
 * normalised to lower case without a trailing dot; "*.x" needs at least one
 * dot after the star's label and no other '*'. */
bool egress_policy_allow_domain(egress_policy *p, const char *domain);
bool egress_policy_deny_domain(egress_policy *p, const char *domain);
bool egress_policy_allow_port(egress_policy *p, unsigned port);
bool egress_policy_allow_ip(egress_policy *p, const char *cidr);
/* Parse "10.0.0.0/8", "::1", "192.0.2.1" (a host: full prefix). */
bool egress_parse_cidr(const char *text, egress_cidr *out);
/* The host's own addresses (getifaddrs) into p->host_addrs. */
bool egress_host_addresses(egress_policy *p);

/* May a connection to host:port be attempted at all? host is a name or a
 * literal IP (IPv6 with or without brackets). */
egress_verdict egress_check_name(const egress_policy *p, const char *host, unsigned port);
/* May this resolved address be connected to? (deny-list unless allow_ips) */
egress_verdict egress_check_address(const egress_policy *p, const struct sockaddr *addr,
                                    socklen_t len);
/* A DNS name as the policy compares it, into out (EGRESS_MAX_NAME + 1
 * bytes): lower case, one trailing dot stripped, labels of [a-z0-9-]. */
bool egress_normalise_name(const char *in, char *out);
/* Does name match the rule ("a.b" exactly, or "*.b" for any name ending in
 * ".b" with at least one more label)? Both already normalised. */
bool egress_domain_matches(const char *rule, const char *name);

/* ---- sni.c -------------------------------------------------------------------- */
typedef enum sni_result {
    SNI_FOUND = 0,      /* *name holds the server name (lower case) */
    SNI_NEED_MORE,      /* a valid prefix of a ClientHello: read more bytes */
    SNI_ABSENT,         /* a complete ClientHello without server_name */
    SNI_NOT_TLS,        /* not a TLS handshake record / not a ClientHello */
    SNI_MALFORMED,      /* lengths or fields inconsistent */
} sni_result;

/* The SNI host_name of the ClientHello at the start of bytes[0..len),
 * which may span several TLS records (at most 16 KiB of handshake).
 * name must hold EGRESS_MAX_NAME + 1 bytes. */
sni_result sni_parse(const uint8_t *bytes, size_t len, char *name);

/* ---- http_head.c ---------------------------------------------------------------- */
#define HTTP_HEAD_MAX 16384     /* request line + headers, CRLFCRLF included */
#define HTTP_MAX_HEADERS 100

typedef enum http_head_result {
    HTTP_HEAD_OK = 0,
    HTTP_HEAD_NEED_MORE,        /* no CRLFCRLF yet and fewer than HTTP_HEAD_MAX bytes */
    HTTP_HEAD_TOO_LARGE,        /* HTTP_HEAD_MAX bytes without the end of the head */
    HTTP_HEAD_MALFORMED,        /* *why says what (a fixed string) */
} http_head_result;

typedef struct http_header {
    const char *name;           /* points into the parsed buffer; not NUL-terminated */
    size_t name_len;
    const char *value;          /* leading/trailing blanks trimmed */
    size_t value_len;
} http_header;

typedef struct http_request {
    char method[24];            /* as sent (tokens are case-sensitive) */
    bool is_connect;            /* CONNECT host:port */
    char host[EGRESS_MAX_NAME + 1]; /* from the URL / CONNECT authority: a name in
                                   lower case without a trailing dot, or an IP
                                   literal (IPv6 without brackets) */
    unsigned port;              /* explicit, else 80 for http:// (CONNECT needs one) */
    const char *path;           /* origin-form target ("/" when the URL had none;
                                   "?q" when it had a query but no path: the
                                   rewrite writes "/?q"); "" for CONNECT */
    size_t path_len;
    unsigned version_minor;     /* HTTP/1.0 or HTTP/1.1 */
    size_t head_len;            /* bytes of the head, CRLFCRLF included */
    http_header headers[HTTP_MAX_HEADERS];
    size_t nheaders;
    bool has_host_header;
    char host_header[EGRESS_MAX_NAME + 1]; /* its host part, normalised like host */
    unsigned host_header_port;  /* its port, else the URL's default (80; for
                                   CONNECT, the CONNECT port) */
    bool has_content_length;
    uint64_t content_length;
    bool chunked;               /* Transfer-Encoding: chunked (and nothing else) */
} http_request;

/* Parse the head at the start of buf[0..len). Only "http://" absolute-form
 * targets and CONNECT authority-form are accepted (a forward proxy sees
 * nothing else); https:// in absolute form is refused (clients use CONNECT).
 * Refused as MALFORMED (request smuggling and confusion): bare LF line ends,
 * obs-fold, whitespace before ':', control bytes, duplicate or non-numeric
 * Content-Length, Content-Length with Transfer-Encoding, any transfer coding
 * but "chunked", userinfo in the URL, a host that is neither a DNS name nor an
 * IP literal, port 0 or > 65535. *why is set for MALFORMED. */
http_head_result http_parse_request(const char *buf, size_t len, http_request *req,
                                    const char **why);

/* Does the Host header (if any) name the URL's host and port? */
bool http_host_matches(const http_request *req);

/* A header to add for the origin (the policy's injected headers). */
typedef struct http_added_header {
    const char *name;
    const char *value;
} http_added_header;

/* The head as the origin gets it: "METHOD path HTTP/1.x" (the client's
 * version: an HTTP/1.0 client cannot read a chunked response), Host from the
 * URL, the client's headers minus Host, Connection, Keep-Alive, Proxy and
 * Proxy-*, TE, Upgrade, those named in the client's Connection header and
 * any named in add (replaced, case-insensitively), then add, then
 * "Connection: close". Content-Length and Transfer-Encoding are always kept
 * (the origin must frame the body as the proxy did). Returns the length
 * written to out (no NUL), or 0 when it does not fit in cap, for CONNECT,
 * and when an added header has a non-token name, CR/LF in its value, or is
 * Host, Connection, Content-Length or Transfer-Encoding. */
size_t http_rewrite_request(const http_request *req, const http_added_header *add, size_t nadd,
                            char *out, size_t cap);

/* Where a chunked body ends: feed the bytes after the head in order; each call
 * returns how many of them belong to the body (all of len until the end is
 * found). done is set once the final chunk and trailers are complete; error
 * on malformed framing (sizes past 2^60, bad hex, missing CRLF, a trailer
 * section over HTTP_HEAD_MAX). */
typedef struct http_chunked {
    int state;
    uint64_t remaining;         /* bytes left in the current chunk's data */
    size_t line_len;            /* length of the size/trailer line so far */
    size_t trailer_bytes;
    unsigned digits;
    bool done, error;
} http_chunked;
void http_chunked_init(http_chunked *c);
size_t http_chunked_scan(http_chunked *c, const uint8_t *bytes, size_t len);

/* ---- config.c -------------------------------------------------------------------- */
#define EGRESS_PROXY_PORT 3128
#define EGRESS_DEFAULT_MAX_CONNECTIONS 16
#define EGRESS_DEFAULT_MAX_BYTES_PER_CONNECTION (UINT64_C(64) << 20)
#define EGRESS_DEFAULT_MAX_BYTES (UINT64_C(256) << 20)
#define EGRESS_DEFAULT_IDLE_TIMEOUT_MS 30000
#define EGRESS_MAX_HEADER_GRANTS 64
#define EGRESS_MAX_HOST_ENTRIES 256
#define EGRESS_EXECUTION_ID_MAX 64

typedef struct egress_header_grant {
    char *domain;               /* normalised like an allow rule */
    char *name;
    char *value;
} egress_header_grant;

typedef struct egress_host_entry {
    char *name;                 /* normalised: lower case, no trailing dot */
    struct sockaddr_storage addr; /* port 0 */
    socklen_t addr_len;
} egress_host_entry;

typedef struct egress_config {
    egress_policy policy;
    egress_header_grant *headers;
    size_t nheaders;
    egress_host_entry *hosts;
    size_t nhosts;
    uint32_t max_connections;   /* 0 in al_egress means the default; here always >= 1 */
    uint64_t max_bytes_per_connection; /* 0: no limit */
    uint64_t max_bytes;         /* 0: no limit */
    uint32_t idle_timeout_ms;   /* always >= 1 */
    char execution_id[EGRESS_EXECUTION_ID_MAX];
    int log_fd;                 /* O_APPEND; -1: no log. Owned. */
} egress_config;

/* Does the policy grant any network at all? */
bool egress_enabled(const al_egress *e);
/* Build from the public policy (names validated, CIDRs and host addresses
 * parsed, header names/values checked for CR/LF/NUL, the log file opened,
 * the host's own addresses collected). false + err (AL_ERR_ARGUMENT or
 * AL_ERR_SYSTEM) on anything malformed; *out is then empty. */
bool egress_config_from_policy(const al_egress *e, const char *execution_id,
                               egress_config *out, al_error *err);
void egress_config_free(egress_config *c);
/* The headers granted for host (every grant whose domain rule matches). */
size_t egress_headers_for(const egress_config *c, const char *host, http_added_header *out,
                          size_t cap);
/* The static map's answer for name, or NULL. */
const egress_host_entry *egress_host_lookup(const egress_config *c, const char *name);

/* The variables that point a guest at the proxy ("HTTP_PROXY=http://127.0.0.1:3128", ...),
 * NULL-terminated. */
extern const char *const egress_proxy_env[];

/* ---- resolver.c ------------------------------------------------------------------ */
typedef struct egress_resolver egress_resolver;
#define EGRESS_MAX_ADDRS 8

typedef struct egress_resolution {
    uint64_t token;             /* the caller's, echoed */
    int gai_error;              /* 0 or an EAI_* code */
    size_t naddrs;
    struct sockaddr_storage addrs[EGRESS_MAX_ADDRS];
    socklen_t addr_lens[EGRESS_MAX_ADDRS];
} egress_resolution;

/* threads workers; *notify_fd becomes readable (an eventfd) when results
 * are ready. */
egress_resolver *egress_resolver_new(unsigned threads, int *notify_fd);
/* Queue a lookup (name is copied). false when the queue is full (64). */
bool egress_resolver_submit(egress_resolver *r, uint64_t token, const char *name);
/* Take one finished lookup; false when none is ready. */
bool egress_resolver_take(egress_resolver *r, egress_resolution *out);
/* Stops the workers (a getaddrinfo in progress is waited for) and frees. */
void egress_resolver_free(egress_resolver *r);

/* ---- proxy.c --------------------------------------------------------------------- */
typedef struct egress_stats {
    uint32_t allowed;           /* connections made to an origin */
    uint32_t denied;            /* requests refused */
    uint64_t bytes;             /* relayed, both directions, all connections */
} egress_stats;

typedef struct egress_proxy egress_proxy;

/* Listen on a new Unix socket at unix_path (mode 0600, replaced if stale)
 * and start the proxy thread. Each message on a connection to that socket
 * carries one client socket (SCM_RIGHTS), which the proxy then serves.
 * Takes ownership of *cfg's contents (left empty) on success and failure. */
egress_proxy *egress_proxy_start(egress_config *cfg, const char *unix_path,
                                 al_error *err);
/* The counters so far, while the proxy runs (safe from any thread). */
void egress_proxy_stats(egress_proxy *p, egress_stats *out);
/* Close every connection, stop the thread, unlink the socket, free. */
void egress_proxy_stop(egress_proxy *p, egress_stats *stats);

/* ---- relay.c --------------------------------------------------------------------- */
/* In the sandbox's network namespace: a TCP listener on 127.0.0.1:port,
 * close-on-exec. Async-signal-safe (runs in a cloned child). -1 + errno. */
int egress_listen_inside(unsigned port);

typedef struct egress_relay egress_relay;
/* Take ownership of listen_fd and hand each connection accepted on it to
 * the proxy at unix_path. */
egress_relay *egress_relay_start(int listen_fd, const char *unix_path, al_error *err);
void egress_relay_stop(egress_relay *r);

/* ---- netns.c --------------------------------------------------------------------- */
/* Bring lo up in the caller's network namespace. 0, or -1 + errno.
 * Async-signal-safe. */
int egress_loopback_up(void);

/* A network namespace with loopback only, held by a small process, for a
 * runtime that joins one by path (runsc). Needs root (CLONE_NEWNET). */
typedef struct egress_netns {
    pid_t pid;                  /* the holder */
    int pidfd;
    int hold_fd;                /* closing it lets the holder exit */
    char path[64];              /* "/proc/PID/ns/net" */
} egress_netns;
/* Make one; *listen_fd gets the 127.0.0.1:3128 listener inside it. */
bool egress_netns_open(egress_netns *ns, int *listen_fd, al_error *err);
void egress_netns_close(egress_netns *ns);

/* ---- log.c ------------------------------------------------------------------------ */
typedef struct egress_log_entry {
    const char *execution;
    const char *decision;       /* "allow", "deny", "close" */
    const char *reason;
    const char *method, *host, *address;
    unsigned port;
    uint64_t bytes_up, bytes_down;
} egress_log_entry;
/* Append e as one JSON line to fd (-1: nothing). */
void egress_log_write(int fd, const egress_log_entry *e);

/* ---- fdpass.c -------------------------------------------------------------------- */
/* Send data[0..len) with fd (SCM_RIGHTS; none when fd < 0) in one message.
 * Async-signal-safe. */
bool fdpass_send(int via, const void *data, size_t len, int fd);
/* Fill err (kind + printf-style message); returns false for "return egress_error(...)". */
bool egress_error(al_error *err, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- gateway.c ------------------------------------------------------------------- */
typedef struct egress_gateway egress_gateway;
/* When policy->egress grants network: start the proxy for this execution
 * (socket in state_dir) and set *out; else *out = NULL and true. */
bool egress_gateway_start(const al_policy *policy, const char *execution_id,
                          const char *state_dir, egress_gateway **out, al_error *err);
/* The listener the sandbox's init made inside its network namespace. */
bool egress_gateway_attach(egress_gateway *g, int listen_fd, al_error *err);
/* The proxy's counters so far. */
void egress_gateway_stats(const egress_gateway *g, egress_stats *out);
/* Stop relay and proxy; add the counters to the result (NULL g: nothing). */
void egress_gateway_stop(egress_gateway *g, al_result *result);

#endif
