/*
 * config.c — the public al_egress (strings from the embedder, the CLI or a
 * policy file) turned into the egress_config the proxy works from.
 *
 * Invariants:
 *  - everything is validated here, once, before a sandbox starts: a rule
 *    the proxy could misread later (a domain with a space, a header value
 *    with CR/LF that would split a request, an address that is not an IP
 *    literal) fails the execution with a message naming the field;
 *  - egress_config owns every string and the log fd; egress_config_free
 *    releases them and leaves an empty config (safe to free again);
 *  - limits are never zero where zero would mean "nothing works"
 *    (max_connections, idle_timeout_ms take their defaults instead).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "net.h"

const char *const egress_proxy_env[] = {
    "HTTP_PROXY=http://127.0.0.1:3128",
    "HTTPS_PROXY=http://127.0.0.1:3128",
    "http_proxy=http://127.0.0.1:3128",
    "https_proxy=http://127.0.0.1:3128",
    NULL,
};

bool egress_enabled(const al_egress *e) {
    return e && (e->nallow_domains > 0 || e->nallow_ips > 0);
}

static bool refuse(al_error *err, const char *field, size_t i, const char *why,
                   const char *value) {
    return egress_error(err, AL_ERR_ARGUMENT, "policy: egress.%s[%zu]: %s: \"%.80s\"",
                        field, i, why, value ? value : "(null)");
}

static bool out_of_memory(al_error *err) {
    return egress_error(err, AL_ERR_NOMEM, "egress: out of memory");
}

static bool add_rules(const char *const *v, size_t n, const char *field,
                      bool (*add)(egress_policy *, const char *), egress_policy *p,
                      al_error *err) {
    if (n > EGRESS_MAX_RULES) return refuse(err, field, n, "too many entries", "");
    for (size_t i = 0; i < n; i++) {
        if (!v || !v[i]) return refuse(err, field, i, "missing", NULL);
        if (!add(p, v[i])) {
            if (errno == ENOMEM) return out_of_memory(err);
            return refuse(err, field, i, "not a domain name or *.domain rule", v[i]);
        }
    }
    return true;
}

static bool add_ports(const al_egress *e, egress_policy *p, al_error *err) {
    if (e->nallow_ports > 0 && !e->allow_ports)
        return refuse(err, "allow_ports", 0, "missing", NULL);
    for (size_t i = 0; i < e->nallow_ports; i++) {
        if (e->allow_ports[i] == 0) return refuse(err, "allow_ports", i, "port 0", "0");
        if (!egress_policy_allow_port(p, e->allow_ports[i])) return out_of_memory(err);
    }
    return true;
}

static bool add_ips(const al_egress *e, egress_policy *p, al_error *err) {
    if (e->nallow_ips > EGRESS_MAX_RULES)
        return refuse(err, "allow_ips", e->nallow_ips, "too many entries", "");
    for (size_t i = 0; i < e->nallow_ips; i++) {
        if (!e->allow_ips || !e->allow_ips[i]) return refuse(err, "allow_ips", i, "missing", NULL);
        if (!egress_policy_allow_ip(p, e->allow_ips[i])) {
            if (errno == ENOMEM) return out_of_memory(err);
            return refuse(err, "allow_ips", i, "not an address or CIDR", e->allow_ips[i]);
        }
    }
    return true;
}

/* A domain rule in its normal form, validated by the same code as the
 * allow-list (a scratch policy), so a header grant matches exactly the
 * names an allow rule of the same spelling would. */
static char *normal_rule(const char *rule) {
    egress_policy scratch;
    memset(&scratch, 0, sizeof scratch);
    char *out = NULL;
    if (egress_policy_allow_domain(&scratch, rule) && scratch.nallow == 1) {
        out = scratch.allow_domains[0];
        scratch.allow_domains[0] = NULL;
    }
    egress_policy_free(&scratch);
    return out;
}

/* RFC 9110 token characters: a header name with anything else (':', space,
 * CR, LF) could end the header early or start a new one. */
static bool header_name_ok(const char *s) {
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (!s || !*s || strlen(s) > 256) return false;
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        bool alnum = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
        if (!alnum && !strchr(extra, u)) return false;
    }
    return true;
}

/* Header splitting: CR, LF or NUL in a value would let the value carry a
 * second header or a second request. */
static bool header_value_ok(const char *s) {
    if (!s || strlen(s) > 8192) return false;
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u == '\r' || u == '\n' || (u < 0x20 && u != '\t') || u == 0x7f) return false;
    }
    return true;
}

static bool add_headers(const al_egress *e, egress_config *c, al_error *err) {
    if (e->nheaders == 0) return true;
    if (e->nheaders > EGRESS_MAX_HEADER_GRANTS)
        return refuse(err, "headers", e->nheaders, "too many entries", "");
    if (!e->headers) return refuse(err, "headers", 0, "missing", NULL);
    c->headers = calloc(e->nheaders, sizeof *c->headers);
    if (!c->headers) return out_of_memory(err);
    for (size_t i = 0; i < e->nheaders; i++) {
        const al_header_grant *g = &e->headers[i];
        if (!header_name_ok(g->name))
            return refuse(err, "headers", i, "not a header name", g->name);
        if (!header_value_ok(g->value))
            return refuse(err, "headers", i, "value has control characters or is too long", "");
        egress_header_grant *h = &c->headers[c->nheaders];
        h->domain = g->domain ? normal_rule(g->domain) : NULL;
        if (!h->domain)
            return refuse(err, "headers", i, "not a domain name or *.domain rule", g->domain);
        c->nheaders++;
        h->name = strdup(g->name);
        h->value = strdup(g->value);
        if (!h->name || !h->value) return out_of_memory(err);
    }
    return true;
}

/* An IP literal, IPv6 with or without brackets. */
static bool parse_address(const char *text, struct sockaddr_storage *ss, socklen_t *len) {
    memset(ss, 0, sizeof *ss);
    char buf[INET6_ADDRSTRLEN + 2];
    size_t n = text ? strnlen(text, sizeof buf) : sizeof buf;
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, text, n + 1);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, buf, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        *len = sizeof *v4;
        return true;
    }
    char *inner = buf;
    if (buf[0] == '[' && buf[n - 1] == ']') {
        buf[n - 1] = '\0';
        inner = buf + 1;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET6, inner, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        *len = sizeof *v6;
        return true;
    }
    return false;
}

static bool add_hosts(const al_egress *e, egress_config *c, al_error *err) {
    if (e->nhosts == 0) return true;
    if (e->nhosts > EGRESS_MAX_HOST_ENTRIES)
        return refuse(err, "hosts", e->nhosts, "too many entries", "");
    if (!e->hosts) return refuse(err, "hosts", 0, "missing", NULL);
    c->hosts = calloc(e->nhosts, sizeof *c->hosts);
    if (!c->hosts) return out_of_memory(err);
    for (size_t i = 0; i < e->nhosts; i++) {
        const al_host_entry *h = &e->hosts[i];
        char name[EGRESS_MAX_NAME + 1];
        if (!h->name || !egress_normalise_name(h->name, name))
            return refuse(err, "hosts", i, "not a domain name", h->name);
        egress_host_entry *out = &c->hosts[c->nhosts];
        if (!parse_address(h->address, &out->addr, &out->addr_len))
            return refuse(err, "hosts", i, "not an IPv4 or IPv6 address", h->address);
        out->name = strdup(name);
        if (!out->name) return out_of_memory(err);
        c->nhosts++;
    }
    return true;
}

static bool open_log(const char *path, egress_config *c, al_error *err) {
    if (!path) return true;
    c->log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (c->log_fd >= 0) return true;
    return egress_error(err, AL_ERR_SYSTEM, "egress: open log %.160s: %s", path,
                        strerror(errno));
}

static void set_limits(const al_egress *e, egress_config *c) {
    c->max_connections = e->max_connections ? e->max_connections : EGRESS_DEFAULT_MAX_CONNECTIONS;
    c->max_bytes_per_connection = e->max_bytes_per_connection;
    c->max_bytes = e->max_bytes;
    c->idle_timeout_ms = e->idle_timeout_ms ? e->idle_timeout_ms : EGRESS_DEFAULT_IDLE_TIMEOUT_MS;
}

static bool build(const al_egress *e, egress_config *c, al_error *err) {
    egress_policy *p = &c->policy;
    if (!add_rules(e->allow_domains, e->nallow_domains, "allow_domains",
                   egress_policy_allow_domain, p, err) ||
        !add_rules(e->deny_domains, e->ndeny_domains, "deny_domains", egress_policy_deny_domain,
                   p, err) ||
        !add_ports(e, p, err) || !add_ips(e, p, err) || !add_headers(e, c, err) ||
        !add_hosts(e, c, err))
        return false;
    if (!egress_host_addresses(p)) {
        return egress_error(err, AL_ERR_SYSTEM,
                            "egress: the host's own addresses (getifaddrs): %s", strerror(errno));
    }
    set_limits(e, c);
    return open_log(e->log_path, c, err);
}

bool egress_config_from_policy(const al_egress *e, const char *execution_id, egress_config *out,
                               al_error *err) {
    memset(out, 0, sizeof *out);
    out->log_fd = -1;
    egress_policy_init(&out->policy);
    if (!out->policy.ports) return out_of_memory(err);
    snprintf(out->execution_id, sizeof out->execution_id, "%s", execution_id ? execution_id : "");
    if (build(e, out, err)) return true;
    egress_config_free(out);
    return false;
}

void egress_config_free(egress_config *c) {
    if (!c) return;
    egress_policy_free(&c->policy);
    for (size_t i = 0; i < c->nheaders; i++) {
        free(c->headers[i].domain);
        free(c->headers[i].name);
        if (c->headers[i].value) {
            /* the secret should not linger in freed heap memory */
            explicit_bzero(c->headers[i].value, strlen(c->headers[i].value));
            free(c->headers[i].value);
        }
    }
    free(c->headers);
    for (size_t i = 0; i < c->nhosts; i++) free(c->hosts[i].name);
    free(c->hosts);
    if (c->log_fd >= 0) close(c->log_fd);
    memset(c, 0, sizeof *c);
    c->log_fd = -1;
}

size_t egress_headers_for(const egress_config *c, const char *host, http_added_header *out,
                          size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < c->nheaders && n < cap; i++) {
        if (!egress_domain_matches(c->headers[i].domain, host)) continue;
        out[n].name = c->headers[i].name;
        out[n].value = c->headers[i].value;
        n++;
    }
    return n;
}

const egress_host_entry *egress_host_lookup(const egress_config *c, const char *name) {
    for (size_t i = 0; i < c->nhosts; i++)
        if (strcmp(c->hosts[i].name, name) == 0) return &c->hosts[i];
    return NULL;
}
