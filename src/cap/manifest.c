/*
 * manifest.c — OCI image manifests of capabilities: the strict parser of
 * what a registry returns, and the builder of what airlock pushes.
 *
 * A capability manifest (OCI image spec v1.1):
 *   {"schemaVersion": 2,
 *    "mediaType": "application/vnd.oci.image.manifest.v1+json",
 *    "artifactType": "application/vnd.airlock.capability.v1",
 *    "config": {"mediaType": "application/vnd.airlock.capability.config.v1+json",
 *               "digest": "sha256:...", "size": N},      <- the plugin manifest
 *    "layers": [{"mediaType": "application/wasm", "digest": ..., "size": N}],
 *    "annotations": {"org.opencontainers.image.created": ..., ...}}
 * A composite capability has one layer of CAP_MEDIA_DAG instead.
 *
 * Invariants:
 * - Pure (jansson only), so the fuzzer and the unit tests drive it directly.
 * - Duplicate keys are refused (JSON_REJECT_DUPLICATES): two "layers" keys
 *   read differently by two parsers is the classic way to show a verifier
 *   one artifact and a runner another.
 * - Every field airlock uses is type-checked and grammar-checked before it
 *   is copied into a fixed buffer; sizes must be non-negative integers.
 * - Descriptors carrying "urls" are refused: a manifest must not make the
 *   client fetch from hosts it names (SSRF through a registry).
 * - Unknown fields are ignored, as the image spec requires of readers; the
 *   fields airlock relies on are all checked.
 * - The builder emits sorted, compact JSON: one event gives one byte string.
 */
#include <string.h>

#include <jansson.h>

#include "cap.h"

/* A required string member with a length cap and a grammar check. */
static bool get_string(const json_t *obj, const char *key, bool required, const char **out,
                       size_t *len, const char *where, al_error *err) {
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    *len = 0;
    if (!v) {
        if (required) al_error_set(err, AL_ERR_MALFORMED, "manifest: %s has no \"%s\"", where, key);
        return !required;
    }
    if (!json_is_string(v)) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: %s \"%s\" is not a string", where, key);
        return false;
    }
    *out = json_string_value(v);
    *len = json_string_length(v);
    return true;
}

static bool parse_descriptor(const json_t *d, const char *where, cap_descriptor *out,
                             al_error *err) {
    const char *s;
    size_t len;
    char q[64];
    if (!json_is_object(d)) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: %s is not an object", where);
        return false;
    }
    if (!get_string(d, "mediaType", true, &s, &len, where, err)) return false;
    if (!cap_media_type_valid(s, len)) {
        cap_quote(q, sizeof q, s, len);
        al_error_set(err, AL_ERR_MALFORMED, "manifest: %s media type %s is not a media type",
                     where, q);
        return false;
    }
    memcpy(out->media_type, s, len);
    out->media_type[len] = '\0';

    if (!get_string(d, "digest", true, &s, &len, where, err)) return false;
    if (!cap_digest_valid(s, len)) {
        cap_quote(q, sizeof q, s, len);
        al_error_set(err, AL_ERR_MALFORMED,
                     "manifest: %s digest %s is not sha256:<64 lowercase hex digits>", where, q);
        return false;
    }
    memcpy(out->digest, s, len);
    out->digest[len] = '\0';

    json_t *size = json_object_get(d, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: %s size is not a non-negative integer",
                     where);
        return false;
    }
    out->size = (uint64_t)json_integer_value(size);

    if (json_object_get(d, "urls")) {
        al_error_set(err, AL_ERR_MALFORMED,
                     "manifest: %s has \"urls\" (foreign locations are never fetched)", where);
        return false;
    }
    return true;
}

/* An annotation copied when it is a string that fits and is printable;
 * else left "" (annotations are informative, never trusted). */
static void copy_annotation(const json_t *ann, const char *key, char *out, size_t outlen) {
    json_t *v = json_object_get(ann, key);
    out[0] = '\0';
    if (!json_is_string(v)) return;
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (len >= outlen) return;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f) return;
    memcpy(out, s, len);
    out[len] = '\0';
}

static bool check_manifest(const json_t *root, cap_manifest *out, al_error *err) {
    const char *s;
    size_t len;
    char q[64];
    if (!json_is_object(root)) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: not a JSON object");
        return false;
    }
    json_t *version = json_object_get(root, "schemaVersion");
    if (!json_is_integer(version) || json_integer_value(version) != 2) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: schemaVersion is not 2");
        return false;
    }
    if (!get_string(root, "mediaType", true, &s, &len, "the manifest", err)) return false;
    if (len != strlen(CAP_MEDIA_MANIFEST) || memcmp(s, CAP_MEDIA_MANIFEST, len) != 0) {
        cap_quote(q, sizeof q, s, len);
        al_error_set(err, AL_ERR_MALFORMED, "manifest: media type %s is not %s", q,
                     CAP_MEDIA_MANIFEST);
        return false;
    }
    if (!get_string(root, "artifactType", false, &s, &len, "the manifest", err)) return false;
    if (s) {
        if (!cap_media_type_valid(s, len)) {
            al_error_set(err, AL_ERR_MALFORMED, "manifest: artifactType is not a media type");
            return false;
        }
        memcpy(out->artifact_type, s, len);
        out->artifact_type[len] = '\0';
    }

    if (!parse_descriptor(json_object_get(root, "config"), "config", &out->config, err))
        return false;
    if (strcmp(out->config.media_type, CAP_MEDIA_CONFIG) != 0) {
        al_error_set(err, AL_ERR_MALFORMED,
                     "manifest: config media type \"%s\" is not %s (not an airlock capability)",
                     out->config.media_type, CAP_MEDIA_CONFIG);
        return false;
    }

    json_t *layers = json_object_get(root, "layers");
    if (!json_is_array(layers)) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: layers is not an array");
        return false;
    }
    if (json_array_size(layers) != 1) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: %zu layers, a capability has exactly one",
                     json_array_size(layers));
        return false;
    }
    if (!parse_descriptor(json_array_get(layers, 0), "layer", &out->layer, err)) return false;
    if (!strcmp(out->layer.media_type, CAP_MEDIA_WASM)) {
        out->kind = CAP_LAYER_WASM;
    } else if (!strcmp(out->layer.media_type, CAP_MEDIA_DAG)) {
        out->kind = CAP_LAYER_DAG;
    } else {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: layer media type \"%s\" is not %s",
                     out->layer.media_type, CAP_MEDIA_WASM);
        return false;
    }

    json_t *ann = json_object_get(root, "annotations");
    if (ann && !json_is_object(ann)) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: annotations is not an object");
        return false;
    }
    if (ann) {
        copy_annotation(ann, CAP_ANNOTATION_EVENT, out->event, sizeof out->event);
        copy_annotation(ann, CAP_ANNOTATION_CREATED, out->created, sizeof out->created);
    }
    return true;
}

bool cap_manifest_parse(const char *json, size_t len, cap_manifest *out, al_error *err) {
    memset(out, 0, sizeof *out);
    if (!json || len == 0) {
        al_error_set(err, AL_ERR_MALFORMED, "manifest: empty");
        return false;
    }
    if (len > CAP_MAX_MANIFEST_BYTES) {
        al_error_set(err, AL_ERR_LIMIT, "manifest: %zu bytes, more than the %zu allowed", len,
                     CAP_MAX_MANIFEST_BYTES);
        return false;
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char q[64];
        cap_quote(q, sizeof q, jerr.text, strlen(jerr.text));
        al_error_set(err, AL_ERR_MALFORMED, "manifest: not JSON (%s at byte %d)", q, jerr.position);
        return false;
    }
    bool ok = check_manifest(root, out, err);
    json_decref(root);
    if (!ok) memset(out, 0, sizeof *out);
    return ok;
}

static json_t *descriptor_json(const cap_descriptor *d) {
    return json_pack("{s:s, s:s, s:I}", "mediaType", d->media_type, "digest", d->digest, "size",
                     (json_int_t)d->size);
}

char *cap_manifest_build(const cap_manifest_spec *spec, size_t *len, al_error *err) {
    *len = 0;
    if (spec->config.size > (uint64_t)INT64_MAX || spec->layer.size > (uint64_t)INT64_MAX) {
        al_error_set(err, AL_ERR_ARGUMENT, "manifest: size out of range");
        return NULL;
    }
    json_t *config = descriptor_json(&spec->config);
    json_t *layer = descriptor_json(&spec->layer);
    json_t *root = NULL;
    if (config && layer) {
        /* json_pack's "o" steals the references, also on failure */
        root = json_pack("{s:i, s:s, s:s, s:o, s:[o], s:{s:s, s:s, s:s, s:s, s:s}}",
                         "schemaVersion", 2, "mediaType", CAP_MEDIA_MANIFEST, "artifactType",
                         CAP_ARTIFACT_TYPE, "config", config, "layers", layer, "annotations",
                         CAP_ANNOTATION_CREATED, spec->created, CAP_ANNOTATION_TITLE, spec->name,
                         CAP_ANNOTATION_VERSION, spec->version, CAP_ANNOTATION_EVENT, spec->event,
                         CAP_ANNOTATION_DIGEST, spec->digest);
    } else {
        json_decref(config);
        json_decref(layer);
    }
    char *out = root ? json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(root);
    if (!out) {
        al_error_set(err, AL_ERR_NOMEM, "manifest: out of memory building the OCI manifest");
        return NULL;
    }
    *len = strlen(out);
    return out;
}
