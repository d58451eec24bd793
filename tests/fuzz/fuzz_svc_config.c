/*
 * fuzz_svc_config.c — libFuzzer target for airlockd's YAML configuration
 * parser, svc_config_load_buffer (src/service/config.c, issue 6). Built by
 * tests/fuzz/build.sh into build/fuzz/fuzz_svc_config with ASan + UBSan
 * (+ LeakSanitizer: every error path must free what it allocated); libyaml
 * itself is the system's, uninstrumented.
 *
 * Besides memory safety it checks the contract svc.c and airlockd rely on:
 *   - failure: a one-line, NUL-terminated message "<config>:LINE:COL: ..."
 *     (or "<config>: ..." for the size cap) without control bytes, and the
 *     config left at the defaults, owning nothing;
 *   - success: every value within its documented range (timeout <=
 *     max_timeout, memory 64K..4G, port >= 1, counts >= 1), token names
 *     valid and unique, allowed paths absolute, every redaction pattern
 *     accepted by svc_redactor_new, origins non-empty; svc_config_copy
 *     gives an equal, independently freed copy.
 * The same input is then used as hostile data for the neighbours the config
 * feeds: redacted with the built-in detectors (and the loaded patterns, when
 * it loaded) — output NUL-terminated, untouched when nothing matched, within
 * the growth cap — and presented as an Authorization header to svc_auth.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define MAX_INPUT (1u << 20)

static void check_error(const svc_config *c, const char *err, size_t cap) {
    size_t n = strnlen(err, cap);
    if (n == 0 || n == cap) abort();
    if (strncmp(err, "<config>:", 9) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f) abort();
    svc_config d;
    svc_config_defaults(&d);
    if (c->allowed_paths || c->tokens || c->redact_patterns || c->allowed_origins) abort();
    if (c->memory_bytes != d.memory_bytes || c->timeout_ms != d.timeout_ms ||
        c->workers != d.workers || strcmp(c->state_dir, d.state_dir) != 0 ||
        strcmp(c->unix_socket, d.unix_socket) != 0)
        abort();
}

static void check_config(const svc_config *c) {
    if (c->timeout_ms == 0 || c->timeout_ms > c->max_timeout_ms) abort();
    if (c->memory_bytes < 65536 || c->memory_bytes > (UINT64_C(4) << 30)) abort();
    if (c->fuel == 0 || c->workers == 0 || c->max_sessions == 0 || c->session_idle_s == 0) abort();
    if (c->tcp_port == 0 || c->python_per_minute == 0 || c->exec_per_minute == 0) abort();
    if (c->unix_socket[0] && c->unix_socket[0] != '/') abort();
    if (c->state_dir[0] && c->state_dir[0] != '/') abort();
    for (size_t i = 0; i < c->nallowed_paths; i++)
        if (c->allowed_paths[i].path[0] != '/') abort();
    for (size_t i = 0; i < c->ntokens; i++) {
        if (!c->tokens[i].name[0]) abort();
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->tokens[i].name, c->tokens[j].name) ||
                !memcmp(c->tokens[i].sha256, c->tokens[j].sha256, 32))
                abort();
    }
    for (size_t i = 0; i < c->nallowed_origins; i++)
        if (!c->allowed_origins[i][0]) abort();
    svc_config d;
    if (!svc_config_copy(&d, c)) abort();
    if (d.ntokens != c->ntokens || d.nredact_patterns != c->nredact_patterns ||
        (d.ntokens && d.tokens == c->tokens))
        abort();
    for (size_t i = 0; i < d.nredact_patterns; i++)
        if (strcmp(d.redact_patterns[i], c->redact_patterns[i]) != 0) abort();
    svc_config_free(&d);
}

/* Redact a NUL-terminated copy of the input; check the output contract. */
static void redact_input(const svc_redactor *r, const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size + 1);
    if (!buf) return;
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t len = size;
    json_t *kinds = json_array();
    size_t n = svc_redact(r, &buf, &len, kinds);
    if (buf[len] != '\0') abort();
    if (n == 0 && (len != size || memcmp(buf, data, size) != 0)) abort();
    if (n > 0 && json_array_size(kinds) == 0) abort();
    if (len > size + (1u << 20) + 64) abort();
    json_decref(kinds);
    free(buf);
}

static void auth_input(const svc_config *c, const uint8_t *data, size_t size) {
    char *h = malloc(size + 1);
    if (!h) return;
    memcpy(h, data, size);
    h[size] = '\0';
    const svc_token *t = svc_auth(c, h);
    if (t && (t < c->tokens || t >= c->tokens + c->ntokens)) abort();
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT + 1) return 0; /* past the cap the parser only says so */
    svc_config c;
    char err[512];
    memset(err, 'X', sizeof err);
    memset(&c, 0x5a, sizeof c); /* the loader must not read or free what was there */
    char err2[256];
    svc_redactor *r;
    if (svc_config_load_buffer((const char *)data, size, &c, err, sizeof err)) {
        check_config(&c);
        r = svc_redactor_new(true, c.redact_patterns, c.nredact_patterns, err2, sizeof err2);
        if (!r) abort(); /* the config accepted these patterns */
    } else {
        check_error(&c, err, sizeof err);
        r = svc_redactor_new(true, NULL, 0, err2, sizeof err2);
        if (!r) abort();
    }
    redact_input(r, data, size);
    svc_redactor_free(r);
    auth_input(&c, data, size);
    svc_config_free(&c);
    return 0;
}
