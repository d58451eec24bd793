/*
 * test_egress.c — unit tests of the egress policy (src/net/policy.c, issue 5):
 * rule validation and normalisation, name checks (deny wins, wildcards, ports,
 * literal IPs) and the address deny-list (every range, embedded IPv4 in IPv6
 * forms, allow_ips overrides, the host's own addresses).
 *
 * Pure computation except egress_host_addresses; every test frees its policy
 * so LeakSanitizer checks the ownership rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net.h"

/* ---- helpers ------------------------------------------------------------- */

/* Check a textual address with egress_check_address. */
static egress_verdict check_text(const egress_policy *p, const char *text) {
    struct sockaddr_in s4;
    struct sockaddr_in6 s6;
    memset(&s4, 0, sizeof s4);
    memset(&s6, 0, sizeof s6);
    if (inet_pton(AF_INET, text, &s4.sin_addr) == 1) {
        s4.sin_family = AF_INET;
        return egress_check_address(p, (const struct sockaddr *)&s4, sizeof s4);
    }
    if (inet_pton(AF_INET6, text, &s6.sin6_addr) == 1) {
        s6.sin6_family = AF_INET6;
        return egress_check_address(p, (const struct sockaddr *)&s6, sizeof s6);
    }
    fail_msg("bad test address %s", text);
    return EGRESS_ALLOW;
}

/* prefix followed by labels of 'a' of the given lengths, joined by dots */
static const char *labels(char *out, const char *prefix, const int *lens, size_t n) {
    size_t k = strlen(prefix);
    memcpy(out, prefix, k);
    for (size_t i = 0; i < n; i++) {
        if (i)
            out[k++] = '.';
        memset(out + k, 'a', (size_t)lens[i]);
        k += (size_t)lens[i];
    }
    out[k] = '\0';
    return out;
}
#define LABELS(out, prefix, ...) \
    labels(out, prefix, (const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

/* ---- tests --------------------------------------------------------------- */

static void test_init_free(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_int_equal(p.nports, 2);
    assert_int_equal(p.ports[0], 80);
    assert_int_equal(p.ports[1], 443);
    assert_int_equal(p.nallow, 0);
    assert_int_equal(p.ndeny, 0);
    assert_int_equal(p.nallow_ips, 0);
    egress_policy_free(&p);
    egress_policy_free(&p); /* zeroed: a second free is harmless */
    egress_policy_free(NULL);
    egress_policy_init(NULL);
}

static void test_reasons(void **state) {
    (void)state;
    for (int v = EGRESS_ALLOW; v <= EGRESS_DENY_ADDRESS; v++) {
        const char *r = egress_verdict_reason((egress_verdict)v);
        assert_non_null(r);
        assert_true(strlen(r) > 10);
    }
    assert_string_equal(egress_verdict_reason(EGRESS_DENY_NOT_ALLOWED),
                        "the domain is not in the allow-list");
    assert_non_null(egress_verdict_reason((egress_verdict)99));
}

static void test_domain_validation(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    char buf[400], name[400];

    static const char *good[] = {
        "example.com", "a", "localhost", "x-y.example", "a1.b2.c3", "xn--bcher-kva.example",
        "*.example.com", "*.a.b.c", "0day.example", "1.2.3.4.5",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (!egress_policy_allow_domain(&p, good[i]))
            fail_msg("refused good domain %s", good[i]);
    }
    static const char *bad[] = {
        "", ".", "..", ".example.com", "example..com", "-a.com", "a-.com", "a.-b.com",
        "a.b-.com", "exa mple.com", "exa_mple.com", "example.com:443", "ex%41mple.com",
        "ex/ample.com", "bücher.example", "example.com..", "*", "*.", "*.com", "*.com.",
        "a.*.com", "*a.example.com", "**.example.com", "*.*.example.com", "*example.com",
        "example.*", "1.2.3.4", "127.1", "2130706433", "0x7f.1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        if (egress_policy_allow_domain(&p, bad[i]))
            fail_msg("accepted bad domain \"%s\"", bad[i]);
        assert_int_equal(errno, EINVAL);
        if (egress_policy_deny_domain(&p, bad[i]))
            fail_msg("accepted bad deny domain \"%s\"", bad[i]);
    }
    assert_false(egress_policy_allow_domain(&p, NULL));
    assert_false(egress_policy_allow_domain(NULL, "example.com"));

    /* label lengths: 63 ok, 64 not */
    assert_true(egress_policy_allow_domain(&p, LABELS(name, "", 63, 3)));
    assert_false(egress_policy_allow_domain(&p, LABELS(name, "", 64, 3)));
    assert_false(egress_policy_allow_domain(&p, LABELS(name, "", 3, 64)));

    /* total length: 253 ok (with or without trailing dot), 254 not */
    LABELS(name, "", 63, 63, 63, 61);
    assert_int_equal(strlen(name), 253);
    assert_true(egress_policy_allow_domain(&p, name));
    strcat(name, ".");
    assert_true(egress_policy_allow_domain(&p, name));
    LABELS(name, "", 63, 63, 63, 62);
    assert_false(egress_policy_allow_domain(&p, name));
    strcat(name, ".");
    assert_false(egress_policy_allow_domain(&p, name));
    /* a wildcard counts its "*." too */
    LABELS(name, "*.", 63, 63, 63, 59);
    assert_int_equal(strlen(name), 253);
    assert_true(egress_policy_allow_domain(&p, name));
    LABELS(name, "*.", 63, 63, 63, 60);
    assert_false(egress_policy_allow_domain(&p, name));
    (void)buf;

    /* a huge input is refused without being read past the bound */
    static char huge[100000];
    memset(huge, 'a', sizeof huge - 1);
    assert_false(egress_policy_allow_domain(&p, huge));
    assert_int_equal(egress_check_name(&p, huge, 443), EGRESS_DENY_NAME_INVALID);

    egress_policy_free(&p);
}

static void test_domain_normalisation(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "Example.COM."));
    assert_true(egress_policy_allow_domain(&p, "*.API.Example.Org."));
    assert_true(egress_policy_allow_domain(&p, "example.com")); /* duplicate: kept once */
    assert_int_equal(p.nallow, 2);
    assert_string_equal(p.allow_domains[0], "example.com");
    assert_string_equal(p.allow_domains[1], "*.api.example.org");

    assert_int_equal(egress_check_name(&p, "example.com", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "EXAMPLE.com.", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "v1.Api.Example.org", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com..", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "exa mple.com", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "example.com:443", 443),
                     EGRESS_DENY_NAME_INVALID);
    egress_policy_free(&p);
}

static void test_rule_limit(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    char name[32];
    for (int i = 0; i < EGRESS_MAX_RULES; i++) {
        snprintf(name, sizeof name, "h%d.example", i);
        assert_true(egress_policy_allow_domain(&p, name));
    }
    errno = 0;
    assert_false(egress_policy_allow_domain(&p, "one-more.example"));
    assert_int_equal(errno, ENOSPC);
    assert_true(egress_policy_allow_domain(&p, "h0.example")); /* duplicate still fine */
    egress_policy_free(&p);
}

static void test_domain_matches(void **state) {
    (void)state;
    assert_true(egress_domain_matches("example.com", "example.com"));
    assert_false(egress_domain_matches("example.com", "www.example.com"));
    assert_false(egress_domain_matches("example.com", "example.co"));
    assert_true(egress_domain_matches("*.example.com", "www.example.com"));
    assert_true(egress_domain_matches("*.example.com", "a.b.example.com"));
    assert_false(egress_domain_matches("*.example.com", "example.com"));     /* apex */
    assert_false(egress_domain_matches("*.example.com", "badexample.com"));  /* suffix */
    assert_false(egress_domain_matches("*.example.com", ".example.com"));
    assert_false(egress_domain_matches("*.example.com", "example.com.evil"));
    assert_false(egress_domain_matches("*.example.com", "www.example.com.evil.net"));
    assert_false(egress_domain_matches(NULL, "example.com"));
    assert_false(egress_domain_matches("example.com", NULL));
    assert_false(egress_domain_matches("", ""));
}

static void test_deny_wins(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "*.example.com"));
    assert_true(egress_policy_allow_domain(&p, "example.com"));
    assert_true(egress_policy_allow_domain(&p, "other.org"));
    assert_true(egress_policy_deny_domain(&p, "internal.example.com"));
    assert_true(egress_policy_deny_domain(&p, "*.corp.example.com"));
    assert_true(egress_policy_deny_domain(&p, "other.org")); /* denied and allowed */

    assert_int_equal(egress_check_name(&p, "www.example.com", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "internal.example.com", 443), EGRESS_DENY_DENIED);
    assert_int_equal(egress_check_name(&p, "Internal.Example.com.", 443),
                     EGRESS_DENY_DENIED);
    assert_int_equal(egress_check_name(&p, "a.corp.example.com", 443), EGRESS_DENY_DENIED);
    assert_int_equal(egress_check_name(&p, "corp.example.com", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "other.org", 443), EGRESS_DENY_DENIED);
    /* deny is reported even on a refused port */
    assert_int_equal(egress_check_name(&p, "other.org", 22), EGRESS_DENY_DENIED);
    assert_int_equal(egress_check_name(&p, "badexample.com", 443), EGRESS_DENY_NOT_ALLOWED);
    assert_int_equal(egress_check_name(&p, "unlisted.net", 443), EGRESS_DENY_NOT_ALLOWED);
    egress_policy_free(&p);
}

static void test_wildcard_not_apex(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "*.example.com"));
    assert_int_equal(egress_check_name(&p, "example.com", 443), EGRESS_DENY_NOT_ALLOWED);
    assert_int_equal(egress_check_name(&p, "badexample.com", 443), EGRESS_DENY_NOT_ALLOWED);
    assert_int_equal(egress_check_name(&p, "a.example.com", 443), EGRESS_ALLOW);
    egress_policy_free(&p);
}

static void test_ports(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "example.com"));
    assert_int_equal(egress_check_name(&p, "example.com", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 8080), EGRESS_DENY_PORT);
    assert_int_equal(egress_check_name(&p, "example.com", 0), EGRESS_DENY_PORT);
    assert_int_equal(egress_check_name(&p, "example.com", 65536), EGRESS_DENY_PORT);
    assert_int_equal(egress_check_name(&p, "example.com", 65536 + 443), EGRESS_DENY_PORT);

    errno = 0;
    assert_false(egress_policy_allow_port(&p, 0));
    assert_int_equal(errno, EINVAL);
    assert_false(egress_policy_allow_port(&p, 65536));
    assert_false(egress_policy_allow_port(&p, 65536 + 8080)); /* no truncation to uint16 */
    assert_false(egress_policy_allow_port(&p, (unsigned)-1));
    assert_false(egress_policy_allow_port(NULL, 8080));
    assert_true(egress_policy_allow_port(&p, 1));
    assert_true(egress_policy_allow_port(&p, 65535));
    assert_true(egress_policy_allow_port(&p, 8080));
    assert_true(egress_policy_allow_port(&p, 8080)); /* duplicate */
    assert_int_equal(p.nports, 5);
    assert_int_equal(egress_check_name(&p, "example.com", 8080), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 65535), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 1), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "example.com", 443), EGRESS_ALLOW);
    egress_policy_free(&p);
}

static void test_cidr_parse(void **state) {
    (void)state;
    egress_cidr c;
    assert_true(egress_parse_cidr("10.1.2.3/8", &c));
    assert_int_equal(c.family, AF_INET);
    assert_int_equal(c.prefix, 8);
    assert_memory_equal(c.addr, ((uint8_t[16]){10, 0, 0, 0}), 16); /* host bits zeroed */

    assert_true(egress_parse_cidr("192.0.2.1", &c));
    assert_int_equal(c.prefix, 32);
    assert_memory_equal(c.addr, ((uint8_t[4]){192, 0, 2, 1}), 4);

    assert_true(egress_parse_cidr("172.31.255.255/12", &c));
    assert_memory_equal(c.addr, ((uint8_t[4]){172, 16, 0, 0}), 4);
    assert_true(egress_parse_cidr("1.2.3.4/0", &c));
    assert_memory_equal(c.addr, ((uint8_t[4]){0, 0, 0, 0}), 4);
    assert_int_equal(c.prefix, 0);
    assert_true(egress_parse_cidr("1.2.3.255/31", &c));
    assert_memory_equal(c.addr, ((uint8_t[4]){1, 2, 3, 254}), 4);
    assert_true(egress_parse_cidr("1.2.3.4/32", &c));
    assert_int_equal(c.prefix, 32);

    assert_true(egress_parse_cidr("::1", &c));
    assert_int_equal(c.family, AF_INET6);
    assert_int_equal(c.prefix, 128);
    assert_int_equal(c.addr[15], 1);
    assert_true(egress_parse_cidr("2001:db8:ffff::1/33", &c));
    assert_int_equal(c.prefix, 33);
    uint8_t want[16] = {0x20, 0x01, 0x0d, 0xb8, 0x80};
    assert_memory_equal(c.addr, want, 16);
    assert_true(egress_parse_cidr("::/0", &c));
    assert_true(egress_parse_cidr("fe80::1/128", &c));

    static const char *bad[] = {
        "", "/", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8",
        "10.0.0.0/ 8", "10.0.0.0/8 ", "10.0.0.0/8/8", "10.0.0.0/0x8", "10.0.0.0/1000",
        "10.1", "10.0.0.256", "010.0.0.1x", "2130706433", "::1/129", "[::1]", "fe80::1%eth0",
        "example.com", "1.2.3.4/8a", "::1/", "1.2.3.4/99999999999999999999",
        "0000000000000000000000000000000000000000000000000000000000000000000000001.2.3.4",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        if (egress_parse_cidr(bad[i], &c))
            fail_msg("accepted bad CIDR \"%s\"", bad[i]);
        assert_int_equal(errno, EINVAL);
    }
    assert_false(egress_parse_cidr(NULL, &c));
    assert_false(egress_parse_cidr("10.0.0.0/8", NULL));

    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_ip(&p, "10.0.0.0/8"));
    assert_false(egress_policy_allow_ip(&p, "10.0.0.0/40"));
    assert_false(egress_policy_allow_ip(&p, NULL));
    assert_false(egress_policy_allow_ip(NULL, "10.0.0.0/8"));
    assert_int_equal(p.nallow_ips, 1);
    egress_policy_free(&p);
}

static void test_literal_ips(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "*.example.com"));
    static const char *literals[] = {
        "93.184.216.34", "127.0.0.1", "169.254.169.254", "127.0.0.1.", "127.1",
        "2130706433", "0x7f000001", "0x7f.1", "017700000001", "::1", "[::1]",
        "2606:2800:220:1::1", "[2606:2800:220:1::1]", "::ffff:127.0.0.1", "[::ffff:7f00:1]",
        "::", "[::]", "0.0.0.0", "0",
    };
    for (size_t i = 0; i < sizeof literals / sizeof literals[0]; i++) {
        egress_verdict v = egress_check_name(&p, literals[i], 443);
        if (v != EGRESS_DENY_LITERAL_IP)
            fail_msg("literal %s: verdict %d", literals[i], v);
    }
    /* brackets only around IPv6 */
    assert_int_equal(egress_check_name(&p, "[1.2.3.4]", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "[example.com]", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "[::1", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "::1]", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "[]", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "[", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "fe80::1%eth0", 443), EGRESS_DENY_NAME_INVALID);

    /* allowed by address: then only the port matters */
    assert_true(egress_policy_allow_ip(&p, "93.184.216.0/24"));
    assert_true(egress_policy_allow_ip(&p, "2606:2800:220:1::/64"));
    assert_true(egress_policy_allow_ip(&p, "127.0.0.1"));
    assert_int_equal(egress_check_name(&p, "93.184.216.34", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "93.184.216.34", 22), EGRESS_DENY_PORT);
    assert_int_equal(egress_check_name(&p, "93.184.217.34", 443), EGRESS_DENY_LITERAL_IP);
    assert_int_equal(egress_check_name(&p, "[2606:2800:220:1::1]", 443), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "2606:2800:220:1::1", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "2606:2800:220:2::1", 80), EGRESS_DENY_LITERAL_IP);
    assert_int_equal(egress_check_name(&p, "127.0.0.1", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "127.1", 80), EGRESS_ALLOW); /* same address */
    assert_int_equal(egress_check_name(&p, "::ffff:127.0.0.1", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&p, "127.0.0.2", 80), EGRESS_DENY_LITERAL_IP);
    egress_policy_free(&p);
}

static void test_deny_list_ipv4(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    static const char *denied[] = {
        "0.0.0.0", "0.255.255.255", "10.0.0.0", "10.255.255.255", "100.64.0.0",
        "100.127.255.255", "127.0.0.1", "127.255.255.254", "169.254.0.1", "169.254.169.254",
        "172.16.0.0", "172.31.255.255", "192.0.0.1", "192.0.2.1", "192.168.0.1",
        "192.168.255.255", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
        "224.0.0.1", "239.255.255.255", "240.0.0.1", "254.1.2.3", "255.255.255.255",
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        if (check_text(&p, denied[i]) != EGRESS_DENY_ADDRESS)
            fail_msg("%s not denied", denied[i]);
    }
    static const char *allowed[] = {
        "93.184.216.34", "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255",
        "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0",
        "172.15.255.255", "172.32.0.0", "192.0.1.1", "192.0.3.1", "192.167.255.255",
        "192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.101.1", "203.0.114.1",
        "223.255.255.255",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        if (check_text(&p, allowed[i]) != EGRESS_ALLOW)
            fail_msg("%s not allowed", allowed[i]);
    }
    egress_policy_free(&p);
}

static void test_deny_list_ipv6(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    static const char *denied[] = {
        "::", "::1", "::2", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "ff02::1",
        "ff0e::1", "2001:db8::1", "2001:db8:ffff::1", "100::1", "2001:0:4136:e378::1",
        "64:ff9b:1::1",
        /* IPv4-mapped, IPv4-translated, IPv4-compatible: the mapped-address bypass */
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::ffff:0.0.0.0",
        "::ffff:0:127.0.0.1", "::127.0.0.1", "::169.254.169.254",
        /* NAT64 well-known prefix reaching private IPv4 */
        "64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::192.168.1.1",
        /* 6to4 tunnels to private IPv4 */
        "2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:0a00:0001:ffff::1", "2002::1",
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        if (check_text(&p, denied[i]) != EGRESS_DENY_ADDRESS)
            fail_msg("%s not denied", denied[i]);
    }
    static const char *allowed[] = {
        "2606:2800:220:1::1", "2a00:1450:4001::1", "fbff::1", "2001:4860::1",
        "::ffff:93.184.216.34", "64:ff9b::93.184.216.34", "2002:5db8:d822::1",
        "2001:db9::1", "2001:1::1",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        if (check_text(&p, allowed[i]) != EGRESS_ALLOW)
            fail_msg("%s not allowed", allowed[i]);
    }
    egress_policy_free(&p);
}

static void test_allow_ips_override(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_int_equal(check_text(&p, "127.0.0.5"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "10.1.2.3"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "fd00::5"), EGRESS_DENY_ADDRESS);
    assert_true(egress_policy_allow_ip(&p, "127.0.0.5"));
    assert_true(egress_policy_allow_ip(&p, "10.1.0.0/16"));
    assert_true(egress_policy_allow_ip(&p, "fd00::/120"));
    assert_int_equal(check_text(&p, "127.0.0.5"), EGRESS_ALLOW);
    assert_int_equal(check_text(&p, "127.0.0.6"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "10.1.2.3"), EGRESS_ALLOW);
    assert_int_equal(check_text(&p, "10.2.0.1"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "fd00::5"), EGRESS_ALLOW);
    assert_int_equal(check_text(&p, "fd00::1:5"), EGRESS_DENY_ADDRESS);
    /* the IPv6 spellings of an allowed IPv4 address reach the same place */
    assert_int_equal(check_text(&p, "::ffff:127.0.0.5"), EGRESS_ALLOW);
    assert_int_equal(check_text(&p, "::ffff:127.0.0.6"), EGRESS_DENY_ADDRESS);
    /* families do not mix: 10/8 does not cover an IPv6 address with 0a in front */
    assert_int_equal(check_text(&p, "a01::1"), EGRESS_ALLOW); /* public anyway */
    egress_policy_free(&p);
}

static void test_host_addresses(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    /* a "host address" that is otherwise public is refused */
    egress_cidr c;
    assert_true(egress_parse_cidr("93.184.216.34", &c));
    assert_true(egress_host_addresses(&p));
    assert_true(egress_host_addresses(&p)); /* a second call replaces, no leak */

    /* every address getifaddrs reports is denied, also one outside the ranges */
    struct ifaddrs *ifs;
    assert_int_equal(getifaddrs(&ifs), 0);
    size_t seen = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            assert_int_equal(egress_check_address(&p, i->ifa_addr, sizeof(struct sockaddr_in)),
                             EGRESS_DENY_ADDRESS);
            seen++;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            assert_int_equal(egress_check_address(&p, i->ifa_addr, sizeof(struct sockaddr_in6)),
                             EGRESS_DENY_ADDRESS);
            seen++;
        }
    }
    freeifaddrs(ifs);
    assert_int_equal(seen, p.nhost_addrs);

    /* a public address among the host's is refused */
    size_t n = p.nhost_addrs;
    egress_cidr *grown = realloc(p.host_addrs, (n + 1) * sizeof *grown);
    assert_non_null(grown);
    grown[n] = c;
    p.host_addrs = grown;
    p.nhost_addrs = n + 1;
    assert_int_equal(check_text(&p, "93.184.216.34"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "::ffff:93.184.216.34"), EGRESS_DENY_ADDRESS);
    assert_int_equal(check_text(&p, "93.184.216.35"), EGRESS_ALLOW);
    assert_true(egress_policy_allow_ip(&p, "93.184.216.34")); /* unless allowed */
    assert_int_equal(check_text(&p, "93.184.216.34"), EGRESS_ALLOW);
    assert_false(egress_host_addresses(NULL));
    egress_policy_free(&p);
}

static void test_bad_inputs(void **state) {
    (void)state;
    egress_policy p;
    egress_policy_init(&p);
    assert_true(egress_policy_allow_domain(&p, "example.com"));

    assert_int_equal(egress_check_name(&p, NULL, 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(NULL, "example.com", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, ".", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "\xff\xfe", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "example.com\n", 443), EGRESS_DENY_NAME_INVALID);
    assert_int_equal(egress_check_name(&p, "1.2.3.4 junk", 443), EGRESS_DENY_NAME_INVALID);

    /* lengths around the bound, with and without brackets and dots */
    char buf[600];
    for (size_t n = 250; n < sizeof buf; n++) {
        memset(buf, 'a', n);
        buf[n] = '\0';
        assert_int_not_equal(egress_check_name(&p, buf, 443), EGRESS_ALLOW);
        buf[0] = '[';
        buf[n - 1] = ']';
        assert_int_equal(egress_check_name(&p, buf, 443), EGRESS_DENY_NAME_INVALID);
        memset(buf, '.', n);
        assert_int_equal(egress_check_name(&p, buf, 443), EGRESS_DENY_NAME_INVALID);
        memset(buf, ':', n);
        assert_int_equal(egress_check_name(&p, buf, 443), EGRESS_DENY_NAME_INVALID);
    }

    /* addresses: NULL, short, unknown family */
    struct sockaddr_in s4;
    memset(&s4, 0, sizeof s4);
    s4.sin_family = AF_INET;
    inet_pton(AF_INET, "93.184.216.34", &s4.sin_addr);
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s4, sizeof s4), EGRESS_ALLOW);
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s4, sizeof s4 - 1),
                     EGRESS_DENY_ADDRESS);
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s4, 0), EGRESS_DENY_ADDRESS);
    assert_int_equal(egress_check_address(&p, NULL, sizeof s4), EGRESS_DENY_ADDRESS);
    assert_int_equal(egress_check_address(NULL, (struct sockaddr *)&s4, sizeof s4),
                     EGRESS_DENY_ADDRESS);
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof s6);
    s6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "2606:2800:220:1::1", &s6.sin6_addr);
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s6, sizeof s6), EGRESS_ALLOW);
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s6, sizeof s4),
                     EGRESS_DENY_ADDRESS);
    s6.sin6_family = AF_UNIX;
    assert_int_equal(egress_check_address(&p, (struct sockaddr *)&s6, sizeof s6),
                     EGRESS_DENY_ADDRESS);
    egress_policy_free(&p);
}


/* ---- config.c, relay.c, netns.c ------------------------------------------------ */

static al_egress base_egress(void) {
    al_policy p;
    al_policy_init(&p);
    return p.egress;
}

static void test_config_good(void **state) {
    (void)state;
    static const char *const allow[] = {"Example.COM.", "*.api.test"};
    static const char *const ips[] = {"127.0.0.2/32"};
    static const uint16_t ports[] = {8080};
    static const al_header_grant headers[] = {{"*.api.test", "Authorization", "Bearer s3cret"},
                                              {"example.com", "X-Key", "k"}};
    static const al_host_entry hosts[] = {{"Good.Test", "127.0.0.2"}, {"six.test", "[::1]"}};
    al_egress e = base_egress();
    e.allow_domains = allow;
    e.nallow_domains = 2;
    e.allow_ips = ips;
    e.nallow_ips = 1;
    e.allow_ports = ports;
    e.nallow_ports = 1;
    e.headers = headers;
    e.nheaders = 2;
    e.hosts = hosts;
    e.nhosts = 2;
    e.max_connections = 0; /* 0: the default */
    e.idle_timeout_ms = 0;
    assert_true(egress_enabled(&e));
    egress_config c;
    al_error err;
    assert_true(egress_config_from_policy(&e, "al-1-2-3", &c, &err));
    assert_string_equal(c.execution_id, "al-1-2-3");
    assert_int_equal(c.max_connections, EGRESS_DEFAULT_MAX_CONNECTIONS);
    assert_int_equal(c.idle_timeout_ms, EGRESS_DEFAULT_IDLE_TIMEOUT_MS);
    assert_int_equal(c.max_bytes_per_connection, UINT64_C(64) << 20);
    assert_int_equal(egress_check_name(&c.policy, "example.com", 80), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&c.policy, "x.api.test", 8080), EGRESS_ALLOW);
    assert_int_equal(egress_check_name(&c.policy, "x.api.test", 8081), EGRESS_DENY_PORT);
    http_added_header out[4];
    assert_int_equal(egress_headers_for(&c, "v1.api.test", out, 4), 1);
    assert_string_equal(out[0].name, "Authorization");
    assert_string_equal(out[0].value, "Bearer s3cret");
    assert_int_equal(egress_headers_for(&c, "api.test", out, 4), 0); /* wildcard: not the apex */
    assert_int_equal(egress_headers_for(&c, "example.com", out, 4), 1);
    const egress_host_entry *h = egress_host_lookup(&c, "good.test");
    assert_non_null(h);
    assert_int_equal(h->addr.ss_family, AF_INET);
    h = egress_host_lookup(&c, "six.test");
    assert_non_null(h);
    assert_int_equal(h->addr.ss_family, AF_INET6);
    assert_null(egress_host_lookup(&c, "other.test"));
    assert_true(c.log_fd < 0);
    egress_config_free(&c);
    egress_config_free(&c); /* twice is harmless */
}

static void expect_refused(al_egress e, const char *needle) {
    egress_config c;
    al_error err;
    assert_false(egress_config_from_policy(&e, "id", &c, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    if (!strstr(err.message, needle)) fail_msg("'%s' not in '%s'", needle, err.message);
    assert_null(c.headers);
    assert_int_equal(c.log_fd, -1);
}

static void test_config_refusals(void **state) {
    (void)state;
    static const char *const allow[] = {"ok.test"};
    static const char *const bad_domain[] = {"bad domain.test"};
    static const char *const bad_ip[] = {"10.0.0.0/33"};
    static const al_header_grant crlf[] = {{"ok.test", "X-A", "v\r\nX-Injected: 1"}};
    static const al_header_grant bad_name[] = {{"ok.test", "X A", "v"}};
    static const al_header_grant bad_grant_domain[] = {{"*", "X-A", "v"}};
    static const al_host_entry bad_addr[] = {{"ok.test", "not-an-ip"}};
    static const al_host_entry bad_host[] = {{"-bad.test", "127.0.0.1"}};
    static const uint16_t zero_port[] = {0};
    al_egress e = base_egress();
    e.allow_domains = bad_domain;
    e.nallow_domains = 1;
    expect_refused(e, "egress.allow_domains[0]");
    e.allow_domains = allow;
    e.allow_ips = bad_ip;
    e.nallow_ips = 1;
    expect_refused(e, "egress.allow_ips[0]");
    e.nallow_ips = 0;
    e.headers = crlf;
    e.nheaders = 1;
    expect_refused(e, "control characters");
    e.headers = bad_name;
    expect_refused(e, "not a header name");
    e.headers = bad_grant_domain;
    expect_refused(e, "egress.headers[0]");
    e.nheaders = 0;
    e.hosts = bad_addr;
    e.nhosts = 1;
    expect_refused(e, "not an IPv4 or IPv6 address");
    e.hosts = bad_host;
    expect_refused(e, "egress.hosts[0]");
    e.nhosts = 0;
    e.allow_ports = zero_port;
    e.nallow_ports = 1;
    expect_refused(e, "port 0");
}

static void test_config_log_file(void **state) {
    (void)state;
    char dir[] = "/tmp/airlock-egress-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    static const char *const allow[] = {"ok.test"};
    al_egress e = base_egress();
    e.allow_domains = allow;
    e.nallow_domains = 1;
    e.log_path = path;
    egress_config c;
    al_error err;
    assert_true(egress_config_from_policy(&e, "id", &c, &err));
    assert_true(c.log_fd >= 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    egress_config_free(&c);
    unlink(path);
    snprintf(path, sizeof path, "%s/missing/log.jsonl", dir);
    assert_false(egress_config_from_policy(&e, "id", &c, &err));
    assert_int_equal(err.kind, AL_ERR_SYSTEM);
    rmdir(dir);
}

static void test_enabled_and_env(void **state) {
    (void)state;
    al_egress e = base_egress();
    assert_false(egress_enabled(&e));
    static const char *const deny[] = {"x.test"};
    e.deny_domains = deny;
    e.ndeny_domains = 1;
    assert_false(egress_enabled(&e)); /* deny rules alone grant nothing */
    static const char *const ips[] = {"192.0.2.0/24"};
    e.allow_ips = ips;
    e.nallow_ips = 1;
    assert_true(egress_enabled(&e));
    size_t n = 0;
    while (egress_proxy_env[n]) {
        assert_non_null(strstr(egress_proxy_env[n], "=http://127.0.0.1:3128"));
        n++;
    }
    assert_int_equal(n, 4);
}

static void test_listen_inside(void **state) {
    (void)state;
    int fd = egress_listen_inside(0); /* any free port: the host's loopback here */
    assert_true(fd >= 0);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(ntohl(sa.sin_addr.s_addr), INADDR_LOOPBACK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

/* As root: the holder's namespace has its own loopback with the listener
 * on 3128, and closing lets the holder go (reaped, nothing left). */
static void test_netns_holder(void **state) {
    (void)state;
    if (geteuid() != 0) skip();
    egress_netns ns;
    int listen_fd;
    al_error err;
    assert_true(egress_netns_open(&ns, &listen_fd, &err));
    assert_true(listen_fd >= 0);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(listen_fd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(ntohs(sa.sin_port), EGRESS_PROXY_PORT);
    struct stat ours, theirs;
    assert_int_equal(stat("/proc/self/ns/net", &ours), 0);
    assert_int_equal(stat(ns.path, &theirs), 0);
    assert_true(ours.st_ino != theirs.st_ino); /* a different namespace */
    pid_t pid = ns.pid;
    close(listen_fd);
    egress_netns_close(&ns);
    assert_int_equal(kill(pid, 0), -1); /* reaped: the pid no longer exists */
    assert_int_equal(ns.pidfd, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_free),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_domain_validation),
        cmocka_unit_test(test_domain_normalisation),
        cmocka_unit_test(test_rule_limit),
        cmocka_unit_test(test_domain_matches),
        cmocka_unit_test(test_deny_wins),
        cmocka_unit_test(test_wildcard_not_apex),
        cmocka_unit_test(test_ports),
        cmocka_unit_test(test_cidr_parse),
        cmocka_unit_test(test_literal_ips),
        cmocka_unit_test(test_deny_list_ipv4),
        cmocka_unit_test(test_deny_list_ipv6),
        cmocka_unit_test(test_allow_ips_override),
        cmocka_unit_test(test_host_addresses),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_config_good),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_config_log_file),
        cmocka_unit_test(test_enabled_and_env),
        cmocka_unit_test(test_listen_inside),
        cmocka_unit_test(test_netns_holder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
