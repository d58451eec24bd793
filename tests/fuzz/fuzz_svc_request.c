/*
 * fuzz_svc_request.c — libFuzzer target for airlockd's execution request
 * parser (src/service/request.c): bytes → json_loadb (as the HTTP layer
 * loads bodies: JSON_REJECT_DUPLICATES; JSON_ALLOW_NUL too, so NUL escapes
 * reach the parser's own check) → svc_request_parse → svc_request_free.
 * Built by tests/fuzz/build.sh into build/fuzz/fuzz_svc_request with ASan +
 * UBSan (+ LeakSanitizer: every path must free what it allocated).
 *
 * Besides memory safety it checks the contract execute.c relies on:
 *   - failure leaves *out zeroed and a non-empty, one-line message without
 *     control bytes, which svc_error_json turns into a valid JSON body;
 *   - success gives a request whose kind has what it needs (code, a module
 *     or its path, argv with a non-empty argv[0]), NUL-terminated argv, env
 *     entries "K=V" with a non-empty K, absolute directory paths, header
 *     values without CR/LF, ports 1..65535, no egress log path;
 *   - the input bytes as a result's stdout always give JSON that dumps
 *     (ill-formed UTF-8 replaced, never refused).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

static void check_error(const svc_exec_request *r, const char *err, size_t cap) {
    static const svc_exec_request zero;
    size_t n = strnlen(err, cap);
    if (n == 0 || n == cap || memcmp(r, &zero, sizeof zero) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f) abort();
    json_t *body = svc_error_json("bad_request", "%s", err);
    if (!body) abort();
    char *text = json_dumps(body, JSON_COMPACT);
    if (!text) abort();
    free(text);
    json_decref(body);
}

static void check_strings(const char *const *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !s[i][0]) abort();
}

static void check_request(const svc_exec_request *r) {
    switch (r->kind) {
    case SVC_PYTHON:
        if (!r->code) abort();
        break;
    case SVC_WASM:
        if (!r->module == !r->module_path) abort();
        if (r->module_path && r->module_path[0] != '/') abort();
        break;
    case SVC_COMMAND:
        if (!r->argv || r->argc == 0 || !r->argv[0][0]) abort();
        break;
    default: abort();
    }
    if (r->argv && r->argv[r->argc]) abort();
    for (size_t i = 0; i < r->nenv; i++) {
        const char *eq = strchr(r->env[i], '=');
        if (!eq || eq == r->env[i]) abort();
    }
    for (size_t i = 0; i < r->ndirs; i++)
        if (r->dirs[i].host_path[0] != '/' || r->dirs[i].guest_path[0] != '/') abort();
    const al_egress *e = &r->egress;
    check_strings(e->allow_domains, e->nallow_domains);
    check_strings(e->deny_domains, e->ndeny_domains);
    check_strings(e->allow_ips, e->nallow_ips);
    for (size_t i = 0; i < e->nallow_ports; i++)
        if (e->allow_ports[i] == 0) abort();
    for (size_t i = 0; i < e->nheaders; i++)
        if (strpbrk(e->headers[i].value, "\r\n") || !e->headers[i].name[0]) abort();
    for (size_t i = 0; i < e->nhosts; i++)
        if (!e->hosts[i].name[0] || strchr(e->hosts[i].address, '[')) abort();
    if (e->log_path) abort();
    if (r->stdin_len && !r->stdin_data) abort();
}

static void check_output(const uint8_t *data, size_t size) {
    al_result res;
    memset(&res, 0, sizeof res);
    res.stdout_data = (uint8_t *)data;
    res.stdout_len = size;
    json_t *j = svc_result_json(&res, 0, -1);
    if (!j) abort();
    char *text = json_dumps(j, JSON_COMPACT);
    if (!text) abort();
    free(text);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > ((size_t)1 << 20)) return 0;
    check_output(data, size);
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                              &jerr);
    if (!body) return 0;
    svc_exec_request r;
    char err[512];
    memset(err, 'X', sizeof err);
    if (svc_request_parse(body, &r, err, sizeof err)) check_request(&r);
    else check_error(&r, err, sizeof err);
    svc_request_free(&r);
    json_decref(body);
    return 0;
}
