/*
 * cap.h — the internals of capabilities (plugins in an OCI distribution
 * registry, fetched by URN, published through a durable outbox). Only the
 * files of src/cap/ and their tests include it; everyone else uses the
 * "capabilities" section of airlock.h.
 *
 * Which file holds which concern:
 *   urn.c        the URN grammar (urn:airlock:cap:NAME:TAG and
 *                urn:airlock:cap:NAME@sha256:HEX) and the strict OCI
 *                name / tag / digest / media type grammar;
 *                cap_quote (errors: al_error_set). Pure: libc only.
 *   manifest.c   OCI image manifests: the strict parser (schemaVersion 2,
 *                one config, exactly one layer) and the builder of the
 *                manifests airlock pushes. Pure: jansson only.
 *   oci.c        the OCI distribution client on libcurl: registry URLs,
 *                manifests and blobs (GET streamed through a capped write
 *                callback, SHA-256 computed while streaming), uploads (HEAD,
 *                POST, PUT), manifest PUT; SHA-256 helpers (OpenSSL EVP).
 *   fetch.c      al_cap_fetch / al_capability_free and the optional
 *                content-addressed cache (every read re-verified).
 *   publisher.c  al_publisher_open/close, al_publish, al_publisher_retry:
 *                the SQLite outbox of promotion events and its pushes.
 *
 * Invariants shared by all of them:
 * - Every byte that comes from a registry (manifests, headers, blobs, error
 *   bodies) or from a URN is hostile: lengths are checked before copying,
 *   digests are recomputed, sizes announced by the peer are only used to
 *   refuse early, never to size a buffer beyond the caller's cap.
 * - Errors are values (al_error); nothing here prints.
 * - Names, tags and digests that reach a URL have passed the grammar
 *   below, so they never need escaping and cannot smuggle "/../", "?", "#",
 *   CR/LF or spaces into a request line.
 */
#ifndef AIRLOCK_CAP_H
#define AIRLOCK_CAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

/* ---- limits and media types ------------------------------------------------------ */

#define CAP_URN_PREFIX "urn:airlock:cap:"
/* A repository name fits al_capability.name (128 with its NUL); OCI itself
 * sets no hard limit (clients keep host + "/" + name under 255). */
#define CAP_NAME_MAX 127
/* OCI allows 128-character tags; airlock keeps one less so that a tag fits
 * al_capability.version (128 with its NUL). Documented in `cap --help`. */
#define CAP_TAG_MAX 127
/* "sha256:" + 64 lowercase hex digits + NUL */
#define CAP_DIGEST_SIZE 72
/* the tag form is the longer one (a tag of 127 > a digest of 71) */
#define CAP_URN_MAX (sizeof CAP_URN_PREFIX - 1 + CAP_NAME_MAX + 1 + CAP_TAG_MAX)
/* RFC 6838: type and subtype are at most 127 characters each. */
#define CAP_MEDIA_TYPE_MAX 255

#define CAP_MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define CAP_MEDIA_CONFIG "application/vnd.airlock.capability.config.v1+json"
#define CAP_MEDIA_WASM "application/wasm"
#define CAP_MEDIA_DAG "application/vnd.airlock.capability.dag.v1+json"
#define CAP_ARTIFACT_TYPE "application/vnd.airlock.capability.v1"

#define CAP_ANNOTATION_CREATED "org.opencontainers.image.created"
#define CAP_ANNOTATION_TITLE "org.opencontainers.image.title"
#define CAP_ANNOTATION_VERSION "org.opencontainers.image.version"
#define CAP_ANNOTATION_EVENT "dev.airlock.capability.event"
#define CAP_ANNOTATION_DIGEST "dev.airlock.capability.digest"

/* A manifest larger than this is refused mid-stream (distribution itself
 * refuses manifests over 4 MiB). */
#define CAP_MAX_MANIFEST_BYTES ((size_t)4 << 20)
/* The config blob is the plugin manifest (JSON): small. */
#define CAP_MAX_CONFIG_BYTES ((size_t)1 << 20)
#define CAP_DEFAULT_MAX_BLOB_BYTES ((size_t)10 << 20)
#define CAP_DEFAULT_TIMEOUT_MS 30000
/* Registry base URLs ("https://host:port") and upload Locations. */
#define CAP_URL_MAX 2048

/* ---- urn.c: grammar ------------------------------------------------------------------ */

/* A printable, quoted excerpt of hostile bytes for messages: at most ~40
 * bytes, non-printable ones as \xNN, "..." when cut. Never fails. */
void cap_quote(char *out, size_t outlen, const char *s, size_t len);

/* OCI distribution spec grammar, on exactly len bytes (no NUL inside):
 *   name    [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*
 *           at most CAP_NAME_MAX characters
 *   tag     [A-Za-z0-9_][A-Za-z0-9._-]{0,CAP_TAG_MAX-1}
 *   digest  sha256:[a-f0-9]{64} (the only algorithm airlock accepts)
 *   media type  RFC 6838 type "/" subtype, restricted-name characters,
 *           at most 127 each, plus an optional "+suffix" inside subtype */
bool cap_name_valid(const char *s, size_t len);
bool cap_tag_valid(const char *s, size_t len);
bool cap_digest_valid(const char *s, size_t len);
bool cap_media_type_valid(const char *s, size_t len);

/* A parsed URN: exactly one of tag and digest is set (the other is ""). */
typedef struct cap_ref {
    char name[CAP_NAME_MAX + 1];
    char tag[CAP_TAG_MAX + 1];
    char digest[CAP_DIGEST_SIZE];
} cap_ref;

/* urn:airlock:cap:NAME:TAG or urn:airlock:cap:NAME@sha256:HEX, exactly
 * (lowercase prefix, nothing before or after, no NUL in the len bytes).
 * AL_ERR_ARGUMENT with the reason otherwise. */
bool cap_urn_parse(const char *urn, size_t len, cap_ref *out, al_error *err);

/* "urn:airlock:cap:NAME:TAG" into out; false when it does not fit. */
bool cap_urn_format_tag(char *out, size_t outlen, const char *name, const char *tag);

/* ---- manifest.c: OCI image manifests ---------------------------------------------------- */

typedef struct cap_descriptor {
    char media_type[CAP_MEDIA_TYPE_MAX + 1];
    char digest[CAP_DIGEST_SIZE];
    uint64_t size; /* as announced: only used to refuse early and to compare */
} cap_descriptor;

typedef enum cap_layer_kind {
    CAP_LAYER_WASM = 1,     /* application/wasm: a plugin module */
    CAP_LAYER_DAG,          /* a composite capability's DAG description (JSON) */
} cap_layer_kind;

typedef struct cap_manifest {
    cap_descriptor config;  /* media type CAP_MEDIA_CONFIG */
    cap_descriptor layer;   /* the one layer */
    cap_layer_kind kind;
    char artifact_type[CAP_MEDIA_TYPE_MAX + 1]; /* "" when absent */
    char event[72];         /* CAP_ANNOTATION_EVENT, "" when absent or unusable */
    char created[40];       /* CAP_ANNOTATION_CREATED, "" when absent or unusable */
} cap_manifest;

/* Strict parse of the bytes a registry returned for a manifest: JSON
 * object (duplicate keys refused), schemaVersion 2, mediaType the OCI image
 * manifest's, config a descriptor of media type CAP_MEDIA_CONFIG, layers an
 * array of exactly one descriptor of media type CAP_MEDIA_WASM or
 * CAP_MEDIA_DAG; descriptors with "urls" are refused (airlock never fetches
 * from addresses a manifest names). Unknown fields are ignored, as the OCI
 * image spec requires of readers. AL_ERR_MALFORMED with the reason. */
bool cap_manifest_parse(const char *json, size_t len, cap_manifest *out, al_error *err);

/* What airlock pushes for one promotion event. */
typedef struct cap_manifest_spec {
    cap_descriptor config;
    cap_descriptor layer;
    const char *name, *version;
    const char *event;    /* the promotion event's id */
    const char *created;  /* RFC 3339 UTC */
    const char *digest;   /* the event's digest (the layer's) */
} cap_manifest_spec;

/* The manifest as canonical JSON (sorted keys, compact): the same event
 * always gives the same bytes, hence the same manifest digest — what makes
 * "is this tag already our push?" answerable after a crash. malloc'ed,
 * NUL-terminated; NULL (err set) on failure. */
char *cap_manifest_build(const cap_manifest_spec *spec, size_t *len, al_error *err);

/* ---- oci.c: the registry client ----------------------------------------------------------- */

/* A growing byte buffer; data is owned. */
typedef struct cap_buf {
    uint8_t *data;
    size_t len, cap;
} cap_buf;
void cap_buf_free(cap_buf *b);

/* "sha256:" + lowercase hex of data into out[CAP_DIGEST_SIZE]. */
bool cap_sha256_digest(const uint8_t *data, size_t len, char out[CAP_DIGEST_SIZE]);

typedef struct cap_client {
    char base[CAP_URL_MAX];   /* "scheme://authority", no trailing slash */
    size_t origin_len;        /* == strlen(base): a registry URL has no path */
    bool https;
    char *ca_file;            /* owned copy, NULL: the system's store */
    char *auth_header;        /* owned "Authorization: Bearer ...", NULL: none */
    size_t max_blob_bytes;
    uint64_t timeout_ms;
} cap_client;

/* Check and copy the registry settings: url must be http:// or https://
 * HOST[:PORT] with no user info, path, query or fragment (a trailing "/"
 * is dropped); the token must be printable ASCII without spaces (it goes
 * into a header line). AL_ERR_ARGUMENT with the reason. */
bool cap_client_init(cap_client *c, const al_registry *registry, al_error *err);
void cap_client_fini(cap_client *c);

/* GET /v2/NAME/manifests/REF (a tag or a digest) into out (at most
 * CAP_MAX_MANIFEST_BYTES, or refused mid-stream), with the SHA-256 of the
 * bytes received in digest. When REF is a digest the bytes must hash to it;
 * when the registry sends Docker-Content-Digest it must match too. A
 * missing manifest is AL_ERR_ARGUMENT ("no such capability"). */
bool cap_oci_get_manifest(const cap_client *c, const char *name, const char *ref, cap_buf *out,
                          char digest[CAP_DIGEST_SIZE], al_error *err);

/* HEAD /v2/NAME/manifests/TAG: *exists, and the registry's
 * Docker-Content-Digest in digest ("" when it sent none or a malformed one). */
bool cap_oci_head_manifest(const cap_client *c, const char *name, const char *tag, bool *exists,
                           char digest[CAP_DIGEST_SIZE], al_error *err);

/* GET /v2/NAME/blobs/DIGEST streamed into out. The transfer is refused
 * before the body when the descriptor or Content-Length announce more than
 * min(max, d->size), and aborted as soon as more than that has arrived
 * (nothing beyond it is ever buffered). The SHA-256 computed while streaming
 * must equal d->digest and the length d->size. *bytes_read: body bytes
 * received, including the chunk that crossed the cap. AL_ERR_LIMIT when too
 * big, AL_ERR_INVALID on a digest or size mismatch. */
bool cap_oci_get_blob(const cap_client *c, const char *name, const cap_descriptor *d, size_t max,
                      cap_buf *out, uint64_t *bytes_read, al_error *err);

/* Upload a blob unless the registry already has it: HEAD, then POST
 * /v2/NAME/blobs/uploads/ and PUT Location?digest=DIGEST (monolithic). The
 * Location must stay on the registry's origin (the token is never sent
 * elsewhere). */
bool cap_oci_push_blob(const cap_client *c, const char *name, const char *digest,
                       const uint8_t *data, size_t len, al_error *err);

/* PUT /v2/NAME/manifests/TAG with the OCI manifest media type. *digest_out
 * gets the registry's Docker-Content-Digest ("" when none was sent). */
bool cap_oci_put_manifest(const cap_client *c, const char *name, const char *tag,
                          const char *manifest, size_t len, char digest_out[CAP_DIGEST_SIZE],
                          al_error *err);

/* fetch.c: mkdir -p with every new directory 0700 (the cache, the outbox's). */
bool cap_make_dirs(const char *path);

#endif
