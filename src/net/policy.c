/*
 * policy.c — the egress policy (issue 5): which names, ports and addresses a
 * sandboxed program may reach through the proxy.
 *
 * Two questions are asked per connection, in this order:
 *   1. egress_check_name: may host:port be attempted at all? (the allow- and
 *      deny-lists of domains, the ports, literal IPs) — before any DNS.
 *   2. egress_check_address: may this resolved address be connected to? —
 *      after the single lookup, for every address it returned. The proxy then
 *      connects to exactly the checked address, so a name cannot resolve to
 *      a public address at check time and to 127.0.0.1 at connect time (DNS
 *      rebinding).
 *
 * Invariants:
 *  - every string and array is owned by the policy and freed by
 *    egress_policy_free; there are no globals;
 *  - stored domain rules are normalised (lower case, no trailing dot, valid
 *    labels), so matching is a plain comparison;
 *  - every input is untrusted text: lengths are bounded with strnlen before
 *    anything is copied, and a malformed input is refused, never guessed at.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net.h"

/* ---- verdicts -------------------------------------------------------------- */

const char *egress_verdict_reason(egress_verdict v) {
    switch (v) {
    case EGRESS_ALLOW:
        return "the connection is allowed by the egress policy";
    case EGRESS_DENY_NAME_INVALID:
        return "the host is not a valid domain name";
    case EGRESS_DENY_NOT_ALLOWED:
        return "the domain is not in the allow-list";
    case EGRESS_DENY_DENIED:
        return "the domain is in the deny-list";
    case EGRESS_DENY_PORT:
        return "the port is not in the list of allowed ports";
    case EGRESS_DENY_LITERAL_IP:
        return "connections to literal IP addresses are not allowed; use a domain name "
               "from the allow-list";
    case EGRESS_DENY_ADDRESS:
        return "the domain resolves to an address the sandbox may not reach (loopback, "
               "private, link-local, multicast, cloud metadata or the host's own address)";
    }
    return "the connection is refused by the egress policy";
}

/* ---- init / free ----------------------------------------------------------- */

void egress_policy_init(egress_policy *p) {
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    /* If this allocation fails the policy allows no port at all: failing
     * closed is the only safe default for a void function. */
    p->ports = malloc(2 * sizeof *p->ports);
    if (p->ports) {
        p->ports[0] = 80;
        p->ports[1] = 443;
        p->nports = 2;
    }
}

static void free_strings(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void egress_policy_free(egress_policy *p) {
    if (!p)
        return;
    free_strings(p->allow_domains, p->nallow);
    free_strings(p->deny_domains, p->ndeny);
    free(p->ports);
    free(p->allow_ips);
    free(p->host_addrs);
    /* Zeroed, so a second free (or a use after free) finds an empty policy
     * that allows nothing rather than dangling pointers. */
    memset(p, 0, sizeof *p);
}

/* ---- names ----------------------------------------------------------------- */

/* Normalise a DNS name into out (EGRESS_MAX_NAME + 1 bytes): one trailing dot
 * stripped, lower case, 1..253 characters, labels of 1..63 characters of
 * [a-z0-9-] not starting or ending with '-'. Anything else (spaces, '_', '%',
 * ':', non-ASCII, empty labels) is refused: the name the policy checks must
 * be exactly the name the resolver will look up, or a check can be passed by
 * one spelling and the connection made to another. IDNs must come in their
 * punycode ("xn--") form. */
bool egress_normalise_name(const char *in, char *out) {
    if (!in)
        return false;
    size_t len = strnlen(in, EGRESS_MAX_NAME + 2);
    if (len > EGRESS_MAX_NAME + 1)
        return false;
    if (len > 0 && in[len - 1] == '.')
        len--;
    if (len == 0 || len > EGRESS_MAX_NAME)
        return false;

    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c == '.') {
            if (label == 0 || out[i - 1] == '-')
                return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
            if (c == '-' && label == 0)
                return false;
            if (++label > 63)
                return false;
        } else {
            return false;
        }
        out[i] = (char)c;
    }
    if (label == 0 || out[len - 1] == '-')
        return false; /* "a.b.." (an empty last label) or "a.b-" */
    out[len] = '\0';
    return true;
}

/* A numeric host the C library would take as an IPv4 address: not only
 * "127.0.0.1" but "127.1", "0x7f.1", "017700000001" and "2130706433"
 * (inet_aton's forms, which getaddrinfo accepts too). Treating them as names
 * would let "http://2130706433/" reach 127.0.0.1 past the literal-IP rule. */
static bool parse_ipv4_literal(const char *s, uint8_t addr[4]) {
    for (const char *c = s; *c; c++)
        if (!strchr("0123456789abcdefxABCDEFX.", *c))
            return false; /* inet_aton would accept trailing " junk" */
    struct in_addr a;
    if (inet_aton(s, &a) == 0)
        return false;
    memcpy(addr, &a, 4);
    return true;
}

/* Normalise a domain rule: a name, or "*." followed by a name of at least two
 * labels ("*.com" would allow a whole top-level domain; "a.*.com" and "*a.com"
 * are not DNS wildcards and are refused rather than guessed at). A rule that is
 * a numeric IPv4 address is refused: literal IPs are never matched against
 * domain rules (egress_check_name), so such a rule would silently do nothing —
 * egress_policy_allow_ip is the way to allow an address. */
static bool normalise_rule(const char *in, char *out) {
    if (!in)
        return false;
    if (in[0] == '*') {
        if (in[1] != '.')
            return false;
        char rest[EGRESS_MAX_NAME + 1];
        if (!egress_normalise_name(in + 2, rest) || !strchr(rest, '.'))
            return false;
        size_t n = strlen(rest);
        if (n + 2 > EGRESS_MAX_NAME)
            return false;
        out[0] = '*';
        out[1] = '.';
        memcpy(out + 2, rest, n + 1);
        return true;
    }
    uint8_t a4[4];
    if (!egress_normalise_name(in, out) || parse_ipv4_literal(out, a4))
        return false;
    return true;
}

static bool add_rule(char ***list, size_t *n, const char *domain) {
    char norm[EGRESS_MAX_NAME + 1];
    if (!normalise_rule(domain, norm)) {
        errno = EINVAL;
        return false;
    }
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i], norm) == 0)
            return true; /* already there */
    if (*n >= EGRESS_MAX_RULES) {
        errno = ENOSPC;
        return false;
    }
    char *copy = strdup(norm);
    if (!copy) {
        errno = ENOMEM;
        return false;
    }
    char **grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown) {
        free(copy);
        errno = ENOMEM;
        return false;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return true;
}

bool egress_policy_allow_domain(egress_policy *p, const char *domain) {
    if (!p) {
        errno = EINVAL;
        return false;
    }
    return add_rule(&p->allow_domains, &p->nallow, domain);
}

bool egress_policy_deny_domain(egress_policy *p, const char *domain) {
    if (!p) {
        errno = EINVAL;
        return false;
    }
    return add_rule(&p->deny_domains, &p->ndeny, domain);
}

bool egress_domain_matches(const char *rule, const char *name) {
    if (!rule || !name || !*rule || !*name)
        return false;
    if (rule[0] == '*' && rule[1] == '.') {
        /* "*.example.com" matches "a.example.com" and "a.b.example.com", but
         * not the apex "example.com" (a wildcard grants subdomains only) and
         * not "badexample.com": the suffix compared includes its leading dot,
         * so a registrable name cannot pose as a subdomain. */
        const char *suffix = rule + 1; /* ".example.com" */
        size_t ns = strlen(suffix), nn = strlen(name);
        return nn > ns && strcasecmp(name + nn - ns, suffix) == 0;
    }
    return strcasecmp(rule, name) == 0;
}

/* ---- ports ----------------------------------------------------------------- */

/* Adds to the allowed ports (the defaults 80 and 443 stay). */
bool egress_policy_allow_port(egress_policy *p, unsigned port) {
    if (!p || port < 1 || port > 65535) {
        errno = EINVAL;
        return false;
    }
    for (size_t i = 0; i < p->nports; i++)
        if (p->ports[i] == port)
            return true;
    if (p->nports >= EGRESS_MAX_RULES) {
        errno = ENOSPC;
        return false;
    }
    uint16_t *grown = realloc(p->ports, (p->nports + 1) * sizeof *grown);
    if (!grown) {
        errno = ENOMEM;
        return false;
    }
    grown[p->nports++] = (uint16_t)port;
    p->ports = grown;
    return true;
}

static bool port_allowed(const egress_policy *p, unsigned port) {
    if (port < 1 || port > 65535)
        return false;
    for (size_t i = 0; i < p->nports; i++)
        if (p->ports && p->ports[i] == port)
            return true;
    return false;
}

/* ---- addresses and CIDRs --------------------------------------------------- */

/* Zero the bits past the prefix, so "10.1.2.3/8" is stored as 10.0.0.0/8 and
 * containment is a comparison of the first prefix bits. */
static void mask_host_bits(uint8_t *addr, size_t nbytes, unsigned prefix) {
    for (size_t i = 0; i < nbytes; i++) {
        unsigned bit = (unsigned)i * 8;
        if (bit >= prefix)
            addr[i] = 0;
        else if (prefix - bit < 8)
            addr[i] &= (uint8_t)(0xff << (8 - (prefix - bit)));
    }
}

bool egress_parse_cidr(const char *text, egress_cidr *out) {
    if (!text || !out) {
        errno = EINVAL;
        return false;
    }
    char buf[INET6_ADDRSTRLEN + 8];
    size_t len = strnlen(text, sizeof buf);
    if (len == 0 || len >= sizeof buf) {
        errno = EINVAL;
        return false;
    }
    memcpy(buf, text, len + 1);

    char *slash = strchr(buf, '/');
    long prefix = -1;
    if (slash) {
        *slash = '\0';
        const char *d = slash + 1;
        size_t nd = strlen(d);
        /* 1..3 decimal digits only: no sign, no spaces, no "0x" */
        if (nd == 0 || nd > 3 || strspn(d, "0123456789") != nd) {
            errno = EINVAL;
            return false;
        }
        prefix = strtol(d, NULL, 10);
    }

    egress_cidr c;
    memset(&c, 0, sizeof c);
    /* inet_pton, not inet_aton: a rule must be written in the one canonical
     * dotted-quad form, so "10.1" is an error rather than 10.0.0.1. */
    if (inet_pton(AF_INET, buf, c.addr) == 1) {
        c.family = AF_INET;
        if (prefix > 32) {
            errno = EINVAL;
            return false;
        }
        c.prefix = prefix < 0 ? 32 : (unsigned)prefix;
        mask_host_bits(c.addr, 4, c.prefix);
    } else if (inet_pton(AF_INET6, buf, c.addr) == 1) {
        c.family = AF_INET6;
        if (prefix > 128) {
            errno = EINVAL;
            return false;
        }
        c.prefix = prefix < 0 ? 128 : (unsigned)prefix;
        mask_host_bits(c.addr, 16, c.prefix);
    } else {
        errno = EINVAL;
        return false;
    }
    *out = c;
    return true;
}

static bool append_cidr(egress_cidr **list, size_t *n, const egress_cidr *c, size_t max) {
    if (*n >= max) {
        errno = ENOSPC;
        return false;
    }
    egress_cidr *grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown) {
        errno = ENOMEM;
        return false;
    }
    grown[(*n)++] = *c;
    *list = grown;
    return true;
}

bool egress_policy_allow_ip(egress_policy *p, const char *cidr) {
    egress_cidr c;
    if (!p || !egress_parse_cidr(cidr, &c)) {
        errno = EINVAL;
        return false;
    }
    return append_cidr(&p->allow_ips, &p->nallow_ips, &c, EGRESS_MAX_RULES);
}

/* The host's own addresses are denied because a sandbox that reaches them
 * reaches every service the host listens on — including a public address of
 * the host (a cloud VM's), which no private-range rule covers. Replaces any
 * list from an earlier call. */
bool egress_host_addresses(egress_policy *p) {
    if (!p) {
        errno = EINVAL;
        return false;
    }
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0)
        return false;
    egress_cidr *list = NULL;
    size_t n = 0;
    bool ok = true;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        egress_cidr c;
        memset(&c, 0, sizeof c);
        if (i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)i->ifa_addr;
            c.family = AF_INET;
            c.prefix = 32;
            memcpy(c.addr, &s->sin_addr, 4);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)i->ifa_addr;
            c.family = AF_INET6;
            c.prefix = 128;
            memcpy(c.addr, &s->sin6_addr, 16);
        } else {
            continue;
        }
        if (!append_cidr(&list, &n, &c, (size_t)1 << 16)) {
            ok = false;
            break;
        }
    }
    freeifaddrs(ifs);
    if (!ok) {
        int e = errno;
        free(list);
        errno = e;
        return false;
    }
    free(p->host_addrs);
    p->host_addrs = list;
    p->nhost_addrs = n;
    return true;
}

/* Is addr (family's length) inside c? */
static bool cidr_contains(const egress_cidr *c, int family, const uint8_t *addr) {
    if (c->family != family)
        return false;
    unsigned max = family == AF_INET ? 32 : 128;
    unsigned prefix = c->prefix > max ? max : c->prefix;
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(c->addr, addr, full) != 0)
        return false;
    if (rest) {
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        if ((c->addr[full] & mask) != (addr[full] & mask))
            return false;
    }
    return true;
}

static bool in_list(const egress_cidr *list, size_t n, int family, const uint8_t *addr) {
    for (size_t i = 0; list && i < n; i++)
        if (cidr_contains(&list[i], family, addr))
            return true;
    return false;
}

/* Addresses a sandbox must never reach by default. Each is a way out of the
 * sandbox's box onto the host or its network (SSRF): */
static const egress_cidr v4_deny[] = {
    /* "this network": connecting to 0.0.0.0 reaches the host's own
     * listeners on Linux, a loopback bypass */
    {AF_INET, {0, 0, 0, 0}, 8},
    {AF_INET, {10, 0, 0, 0}, 8},        /* private (RFC 1918): the host's LAN */
    {AF_INET, {100, 64, 0, 0}, 10},     /* CGNAT shared space: provider-internal */
    {AF_INET, {127, 0, 0, 0}, 8},       /* loopback: the host's own services */
    /* link-local, including 169.254.169.254, the cloud metadata service that
     * hands out the host's credentials (metadata SSRF) */
    {AF_INET, {169, 254, 0, 0}, 16},
    {AF_INET, {172, 16, 0, 0}, 12},     /* private (RFC 1918) */
    {AF_INET, {192, 0, 0, 0}, 24},      /* IETF protocol assignments */
    {AF_INET, {192, 0, 2, 0}, 24},      /* TEST-NET-1 */
    {AF_INET, {192, 168, 0, 0}, 16},    /* private (RFC 1918) */
    {AF_INET, {198, 18, 0, 0}, 15},     /* benchmarking */
    {AF_INET, {198, 51, 100, 0}, 24},   /* TEST-NET-2 */
    {AF_INET, {203, 0, 113, 0}, 24},    /* TEST-NET-3 */
    {AF_INET, {224, 0, 0, 0}, 4},       /* multicast */
    {AF_INET, {240, 0, 0, 0}, 4},       /* reserved */
    {AF_INET, {255, 255, 255, 255}, 32}, /* limited broadcast */
};

static const egress_cidr v6_deny[] = {
    /* ::/96 holds :: (unspecified — like 0.0.0.0, reaches the host's own
     * listeners), ::1 (loopback) and the deprecated IPv4-compatible
     * addresses ::a.b.c.d, which nothing legitimate uses */
    {AF_INET6, {0}, 96},
    {AF_INET6, {0x01, 0x00}, 64},                   /* 100::/64 discard-only */
    {AF_INET6, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48}, /* 64:ff9b:1::/48 local NAT64 */
    /* Teredo: a tunnel to an IPv4 endpoint chosen by whoever built the
     * address; what it reaches cannot be checked here */
    {AF_INET6, {0x20, 0x01, 0x00, 0x00}, 32},
    {AF_INET6, {0x20, 0x01, 0x0d, 0xb8}, 32},      /* 2001:db8::/32 documentation */
    {AF_INET6, {0xfc}, 7},                          /* unique local: private networks */
    {AF_INET6, {0xfe, 0x80}, 10},                   /* link-local */
    {AF_INET6, {0xfe, 0xc0}, 10},                   /* deprecated site-local */
    {AF_INET6, {0xff}, 8},                          /* multicast */
};

/* The IPv4 address an IPv6 address stands for, when it stands for one. Each
 * of these is a classic bypass of a deny-list that only looks at IPv4:
 *  - ::ffff:a.b.c.d (IPv4-mapped): a dual-stack socket connecting to
 *    ::ffff:127.0.0.1 connects to 127.0.0.1;
 *  - ::ffff:0:a.b.c.d (IPv4-translated, SIIT);
 *  - 64:ff9b::a.b.c.d (NAT64 well-known prefix): on a host behind NAT64 the
 *    translator connects to a.b.c.d on the IPv4 side — which may be the
 *    host's own network or 169.254.169.254;
 *  - 2002:aabb:ccdd::/48 (6to4): the tunnel is addressed to aa.bb.cc.dd. */
static bool embedded_ipv4(const uint8_t a[16], uint8_t v4[4]) {
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t translated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, translated, 12) == 0 ||
        memcmp(a, nat64, 12) == 0) {
        memcpy(v4, a + 12, 4);
        return true;
    }
    if (a[0] == 0x20 && a[1] == 0x02) {
        memcpy(v4, a + 2, 4);
        return true;
    }
    return false;
}

/* allow_ips overrides everything after it: the operator said this exact
 * address (or range) is reachable. An IPv6 form of an allowed IPv4 address
 * is allowed too, since it reaches the same place. */
static bool ip_allowed(const egress_policy *p, int family, const uint8_t *addr) {
    if (in_list(p->allow_ips, p->nallow_ips, family, addr))
        return true;
    uint8_t v4[4];
    return family == AF_INET6 && embedded_ipv4(addr, v4) &&
           in_list(p->allow_ips, p->nallow_ips, AF_INET, v4);
}

static egress_verdict check_ipv4(const egress_policy *p, const uint8_t a[4]) {
    if (in_list(p->allow_ips, p->nallow_ips, AF_INET, a))
        return EGRESS_ALLOW;
    if (in_list(v4_deny, sizeof v4_deny / sizeof v4_deny[0], AF_INET, a) ||
        in_list(p->host_addrs, p->nhost_addrs, AF_INET, a))
        return EGRESS_DENY_ADDRESS;
    return EGRESS_ALLOW;
}

static egress_verdict check_ipv6(const egress_policy *p, const uint8_t a[16]) {
    if (in_list(p->allow_ips, p->nallow_ips, AF_INET6, a))
        return EGRESS_ALLOW;
    if (in_list(p->host_addrs, p->nhost_addrs, AF_INET6, a))
        return EGRESS_DENY_ADDRESS;
    uint8_t v4[4];
    if (embedded_ipv4(a, v4))
        return check_ipv4(p, v4);
    if (in_list(v6_deny, sizeof v6_deny / sizeof v6_deny[0], AF_INET6, a))
        return EGRESS_DENY_ADDRESS;
    return EGRESS_ALLOW;
}

egress_verdict egress_check_address(const egress_policy *p, const struct sockaddr *addr,
                                    socklen_t len) {
    if (!p || !addr || len < (socklen_t)sizeof(sa_family_t))
        return EGRESS_DENY_ADDRESS;
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)addr;
        uint8_t a[4];
        memcpy(a, &s->sin_addr, 4);
        return check_ipv4(p, a);
    }
    if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)addr;
        uint8_t a[16];
        memcpy(a, &s->sin6_addr, 16);
        return check_ipv6(p, a);
    }
    return EGRESS_DENY_ADDRESS; /* unknown family or truncated: fail closed */
}

/* ---- names at connect time ------------------------------------------------- */

egress_verdict egress_check_name(const egress_policy *p, const char *host, unsigned port) {
    if (!p || !host)
        return EGRESS_DENY_NAME_INVALID;
    size_t len = strnlen(host, EGRESS_MAX_NAME + 2);
    if (len == 0 || len > EGRESS_MAX_NAME + 1)
        return EGRESS_DENY_NAME_INVALID;

    /* Literal IPs: refused unless allowed by address. A literal skips DNS
     * and with it the domain rules, so "allowed domains only" would mean
     * nothing if 169.254.169.254 or 10.0.0.1 could be named directly. */
    char buf[EGRESS_MAX_NAME + 2];
    memcpy(buf, host, len);
    buf[len] = '\0';
    uint8_t a[16];
    int family = 0;
    if (buf[0] == '[') {
        /* "[v6]" is only ever an IPv6 literal */
        if (len < 3 || buf[len - 1] != ']')
            return EGRESS_DENY_NAME_INVALID;
        buf[len - 1] = '\0';
        if (inet_pton(AF_INET6, buf + 1, a) != 1)
            return EGRESS_DENY_NAME_INVALID;
        family = AF_INET6;
    } else if (inet_pton(AF_INET6, buf, a) == 1) {
        family = AF_INET6;
    } else {
        if (buf[len - 1] == '.')
            buf[len - 1] = '\0'; /* "127.0.0.1." is the same literal */
        if (parse_ipv4_literal(buf, a))
            family = AF_INET;
    }
    if (family) {
        if (!ip_allowed(p, family, a))
            return EGRESS_DENY_LITERAL_IP;
        return port_allowed(p, port) ? EGRESS_ALLOW : EGRESS_DENY_PORT;
    }

    char name[EGRESS_MAX_NAME + 1];
    if (!egress_normalise_name(host, name))
        return EGRESS_DENY_NAME_INVALID;
    /* Deny rules first: a deny always wins, so "*.example.com" allowed with
     * "internal.example.com" denied keeps the latter out. */
    for (size_t i = 0; i < p->ndeny; i++)
        if (egress_domain_matches(p->deny_domains[i], name))
            return EGRESS_DENY_DENIED;
    bool allowed = false;
    for (size_t i = 0; i < p->nallow && !allowed; i++)
        allowed = egress_domain_matches(p->allow_domains[i], name);
    if (!allowed)
        return EGRESS_DENY_NOT_ALLOWED;
    return port_allowed(p, port) ? EGRESS_ALLOW : EGRESS_DENY_PORT;
}
