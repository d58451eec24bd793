/*
 * fuzz_manifest.c — libFuzzer target for al_manifest_parse
 * (src/plugin/manifest.c): Extism plugin manifests, which arrive from users
 * and, as capability configs, from registries. Built by tests/fuzz/build.sh
 * into build/fuzz/fuzz_manifest with ASan + UBSan (+ LeakSanitizer: every
 * error path must free what it allocated).
 *
 * Only parsing is fuzzed: al_manifest_load_wasm would open files and URLs the
 * input names. Besides memory safety it checks the contract callers rely on:
 *   - failure returns NULL with a kind and a one-line, NUL-terminated
 *     message starting "manifest: " (it is printed to a terminal as is);
 *   - success gives options within their documented ranges: max_pages
 *     1..65536, allowed hosts non-empty (and allow_http whenever there are
 *     any), guest paths absolute, every string NUL-terminated.
 *
 * al_plugin_options_init lives in src/plugin/plugin.c with the whole plugin
 * host; this target defines the documented defaults itself so that only the
 * parser (and the egress rule checks of src/net/policy.c) is linked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"

void al_plugin_options_init(al_plugin_options *options) {
    memset(options, 0, sizeof *options);
    options->max_pages = 1024;
    options->max_http_response_bytes = (uint64_t)50 << 20;
    options->max_var_bytes = (uint64_t)1 << 20;
    options->max_output_bytes = (uint64_t)10 << 20;
    options->log_level = AL_LOG_INFO;
}

static void check_error(const al_error *err) {
    size_t n = strnlen(err->message, sizeof err->message);
    if (err->kind == AL_OK || n == 0 || n == sizeof err->message) abort();
    if (strncmp(err->message, "manifest: ", 10) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)err->message[i] < 0x20 || err->message[i] == 0x7f) abort();
}

static void check_options(const al_plugin_options *o) {
    if (o->max_pages < 1 || o->max_pages > 65536) abort();
    if (o->nallowed_hosts && !o->allow_http) abort();
    for (size_t i = 0; i < o->nallowed_hosts; i++)
        if (!o->allowed_hosts[i] || !o->allowed_hosts[i][0]) abort();
    for (size_t i = 0; i < o->nconfig; i++)
        if (!o->config[i].key || !o->config[i].value) abort();
    for (size_t i = 0; i < o->ndirs; i++)
        if (!o->dirs[i].host_path[0] || o->dirs[i].guest_path[0] != '/') abort();
    /* every string is readable to its NUL */
    size_t total = 0;
    for (size_t i = 0; i < o->nconfig; i++) total += strlen(o->config[i].key) + strlen(o->config[i].value);
    for (size_t i = 0; i < o->ndirs; i++) total += strlen(o->dirs[i].host_path);
    if (total == SIZE_MAX) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    al_error err;
    memset(&err, 'X', sizeof err);
    al_manifest *m = al_manifest_parse((const char *)data, size, "/fuzz-base", &err);
    if (!m) {
        check_error(&err);
        return 0;
    }
    if (err.kind != AL_OK) abort();
    const al_plugin_options *o = al_manifest_options(m);
    if (!o) abort();
    check_options(o);
    al_manifest_free(m);
    return 0;
}
