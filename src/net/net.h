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
 *
 * Everything here is pure computation over its arguments (no I/O but
 * egress_host_addresses), so the proxy, the CLI and capabilities share it
 * and it can be fuzzed.
 */
#ifndef AIRLOCK_NET_H
#define AIRLOCK_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

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

#endif
