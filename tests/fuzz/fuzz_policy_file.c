/*
 * fuzz_policy_file.c — libFuzzer target for cli_policy_parse
 * (src/cli/policy_file.c): the JSON policy file of `airlock exec --policy`.
 * Built by tests/fuzz/build.sh into build/fuzz/fuzz_policy_file with ASan +
 * UBSan (+ LeakSanitizer: every path must free what it allocated).
 *
 * Besides memory safety it checks the contract exec.c relies on:
 *   - failure leaves *out empty and a one-line, NUL-terminated message
 *     without control bytes (it is printed to a terminal as is);
 *   - success gives rules that passed the syntactic checks: ports 1..65535,
 *     header values without CR/LF, env entries "KEY=VALUE" with a non-empty
 *     KEY, guest paths absolute, every string NUL-terminated;
 *   - merging a second parse of the same input (the command line on top of
 *     the file) adds the lists up and frees cleanly, and the rules can be
 *     handed to an al_egress.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy_file.h"

static void check_error(const cli_policy *p, const char *err, size_t cap) {
    static const cli_policy empty;
    size_t n = strnlen(err, cap);
    if (n == 0 || n == cap || memcmp(p, &empty, sizeof empty) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f) abort();
}

static void check_strings(const char *const *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !s[i][0]) abort();
}

static void check_policy(const cli_policy *p) {
    const cli_egress *e = &p->egress;
    for (size_t i = 0; i < p->nenv; i++) {
        const char *eq = strchr(p->env[i], '=');
        if (!eq || eq == p->env[i]) abort();
    }
    for (size_t i = 0; i < p->ndirs; i++)
        if (!p->dirs[i].host[0] || (p->dirs[i].guest && p->dirs[i].guest[0] != '/')) abort();
    if (p->cwd && p->cwd[0] != '/') abort();
    check_strings(e->allow_domains, e->nallow_domains);
    check_strings(e->deny_domains, e->ndeny_domains);
    check_strings(e->allow_ips, e->nallow_ips);
    for (size_t i = 0; i < e->nallow_ports; i++)
        if (e->allow_ports[i] == 0) abort();
    for (size_t i = 0; i < e->nheaders; i++)
        if (strpbrk(e->headers[i].value, "\r\n") || !e->headers[i].name[0]) abort();
    for (size_t i = 0; i < e->nhosts; i++)
        if (!e->hosts[i].name[0] || strchr(e->hosts[i].address, '[')) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > CLI_POLICY_MAX_BYTES) return 0; /* cli_policy_load never passes more */
    cli_policy p, q;
    char err[512];
    memset(err, 'X', sizeof err);
    if (!cli_policy_parse((const char *)data, size, &p, err, sizeof err)) {
        check_error(&p, err, sizeof err);
        cli_policy_free(&p);
        return 0;
    }
    check_policy(&p);
    if (!cli_policy_parse((const char *)data, size, &q, err, sizeof err)) abort();
    size_t nallow = p.egress.nallow_domains, nheaders = p.egress.nheaders;
    if (!cli_egress_merge(&p.egress, &q.egress)) abort();
    if (p.egress.nallow_domains != 2 * nallow || p.egress.nheaders != 2 * nheaders) abort();
    if (cli_egress_given(&q.egress)) abort(); /* merged means emptied */
    check_policy(&p);
    al_egress out;
    memset(&out, 0, sizeof out);
    cli_egress_fill(&p.egress, &out);
    if (out.nallow_domains != p.egress.nallow_domains) abort();
    cli_policy_free(&q);
    cli_policy_free(&p);
    return 0;
}
