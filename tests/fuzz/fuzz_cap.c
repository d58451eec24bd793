/*
 * fuzz_cap.c — libFuzzer target for the pure parsers of capabilities:
 * cap_urn_parse (src/cap/urn.c) and cap_manifest_parse (src/cap/manifest.c),
 * the two places where bytes chosen by someone else (an agent's URN, a
 * registry's manifest) are read first.
 *
 * The input's first byte picks the parser (even: URN, odd: manifest); the
 * rest is copied into an exactly-sized heap block so AddressSanitizer sees
 * any read past it. Beyond "no crash", each accepted input is checked
 * against the grammar it claims to satisfy: a parsed URN's parts pass the
 * validators again and format back to a URN that parses to the same parts;
 * a parsed manifest's descriptors are valid and its layer kind matches its
 * media type; a manifest rebuilt from them parses back to the same
 * descriptors. Any violation aborts (a finding).
 *
 * Built by tests/fuzz/build.sh with urn.c and manifest.c (jansson, the
 * system's, not instrumented).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"

static void check(bool ok) {
    if (!ok) abort();
}

static void fuzz_urn(const char *s, size_t len) {
    cap_ref r;
    al_error err;
    if (!cap_urn_parse(s, len, &r, &err)) {
        check(err.kind == AL_ERR_ARGUMENT && err.message[0] != '\0');
        check(r.name[0] == '\0');
        return;
    }
    check(cap_name_valid(r.name, strlen(r.name)));
    check((r.tag[0] != '\0') != (r.digest[0] != '\0'));
    if (r.tag[0]) {
        check(cap_tag_valid(r.tag, strlen(r.tag)));
        char again[CAP_URN_MAX + 1];
        check(cap_urn_format_tag(again, sizeof again, r.name, r.tag));
        check(strlen(again) == len && memcmp(again, s, len) == 0);
    } else {
        check(cap_digest_valid(r.digest, strlen(r.digest)));
    }
    /* nothing that could steer a URL: no '?', '#', '%', "..", spaces */
    check(!strpbrk(r.name, "?#% \r\n:@") && !strstr(r.name, ".."));
    check(!strpbrk(r.tag, "?#%/ \r\n:@"));
}

static bool same_descriptor(const cap_descriptor *a, const cap_descriptor *b) {
    return !strcmp(a->media_type, b->media_type) && !strcmp(a->digest, b->digest) &&
           a->size == b->size;
}

static void fuzz_manifest(const char *s, size_t len) {
    cap_manifest m;
    al_error err;
    if (!cap_manifest_parse(s, len, &m, &err)) {
        check(err.kind != AL_OK && err.message[0] != '\0');
        return;
    }
    check(cap_digest_valid(m.config.digest, strlen(m.config.digest)));
    check(cap_digest_valid(m.layer.digest, strlen(m.layer.digest)));
    check(!strcmp(m.config.media_type, CAP_MEDIA_CONFIG));
    check(m.kind == (strcmp(m.layer.media_type, CAP_MEDIA_WASM) ? CAP_LAYER_DAG : CAP_LAYER_WASM));
    for (const char *p = m.event; *p; p++) check((unsigned char)*p >= 0x20 && *p != 0x7f);

    cap_manifest_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = m.config;
    spec.layer = m.layer;
    spec.name = "fuzz";
    spec.version = "1";
    spec.event = m.event;
    spec.created = m.created;
    spec.digest = m.layer.digest;
    size_t blen;
    char *built = cap_manifest_build(&spec, &blen, &err);
    if (!built) return; /* out of memory only */
    cap_manifest back;
    check(cap_manifest_parse(built, blen, &back, &err));
    check(same_descriptor(&back.config, &m.config) && same_descriptor(&back.layer, &m.layer));
    check(!strcmp(back.event, m.event) && !strcmp(back.created, m.created));
    free(built);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t len = size - 1;
    char *copy = malloc(len ? len : 1);
    if (!copy) return 0;
    memcpy(copy, data + 1, len);
    if (data[0] & 1) fuzz_manifest(copy, len);
    else fuzz_urn(copy, len);
    free(copy);
    return 0;
}
