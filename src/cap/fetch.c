/*
 * fetch.c — al_cap_fetch / al_capability_free: resolve a capability URN
 * against a registry, fetch its OCI manifest, config (the plugin manifest)
 * and wasm layer into memory, and the optional content-addressed cache.
 *
 * Invariants:
 * - Nothing is handed out unverified: the manifest hashes to the digest
 *   asked for (digest URNs) or to the one the registry announces, the
 *   config and the module hash to their descriptors' digests and have their
 *   sizes. The module is at most max_blob_bytes (aborted mid-stream past
 *   that, oci.c), the config at most CAP_MAX_CONFIG_BYTES.
 * - The module stays in memory: no file is written for it except, when a
 *   cache is asked for, the cache entry itself.
 * - The cache is never trusted: an entry is a file DIR/sha256/HEX opened
 *   without following symlinks, which must be a regular file of the expected
 *   size whose SHA-256 is HEX; anything else is deleted and fetched again
 *   from the registry (a corrupted or planted entry costs one download,
 *   never a wrong module). Entries are written to a temporary file in the
 *   same directory, fsync'ed, then renamed: a reader never sees half a file.
 *   Cache failures (read-only directory, disk full) never fail a fetch.
 * - Manifests are cached only under their digest, and only read from the
 *   cache for digest URNs: a tag is always resolved by the registry.
 * - A composite capability (a DAG layer) is refused by al_cap_fetch: it has
 *   no module to run (al_capability has no place for a DAG).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cap.h"

#define CACHE_PATH_MAX 4096

/* ---- the content-addressed cache ------------------------------------------------------------- */

static bool cache_path(char *out, size_t outlen, const char *dir, const char *digest) {
    /* digest is "sha256:HEX" (grammar-checked): the file is DIR/sha256/HEX */
    int n = snprintf(out, outlen, "%s/sha256/%s", dir, digest + 7);
    return n >= 0 && (size_t)n < outlen;
}

/* mkdir -p, each new directory 0700 (the cache may hold private modules,
 * the outbox unpublished ones). */
bool cap_make_dirs(const char *path) {
    char tmp[CACHE_PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) return false;
    memcpy(tmp, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
        tmp[i] = saved;
    }
    return true;
}

/* Read the whole of an open regular file of at most max bytes. */
static bool read_file_fd(int fd, size_t max, cap_buf *out) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
        (uint64_t)st.st_size > max)
        return false;
    size_t size = (size_t)st.st_size;
    out->data = malloc(size ? size : 1);
    if (!out->data) return false;
    out->cap = size;
    while (out->len < size) {
        ssize_t n = read(fd, out->data + out->len, size - out->len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out->len += (size_t)n;
    }
    /* the file must not have changed size under us */
    char extra;
    return out->len == size && read(fd, &extra, 1) == 0;
}

/* A verified cache hit, or false (miss). A bad entry is deleted. */
static bool cache_read(const char *dir, const char *digest, bool size_known, uint64_t size,
                       size_t max, cap_buf *out) {
    char path[CACHE_PATH_MAX];
    memset(out, 0, sizeof *out);
    if (!cache_path(path, sizeof path, dir, digest)) return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        /* ELOOP: a symlink planted in place of an entry; remove it */
        if (errno == ELOOP) unlink(path);
        return false;
    }
    bool ok = read_file_fd(fd, max, out) && (!size_known || out->len == size);
    close(fd);
    char got[CAP_DIGEST_SIZE];
    if (ok) ok = cap_sha256_digest(out->data, out->len, got) && !strcmp(got, digest);
    if (!ok) {
        cap_buf_free(out);
        unlink(path);
    }
    return ok;
}

static bool write_all(int fd, const uint8_t *p, size_t len) {
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Best effort: a failure leaves no entry and no temporary file. */
static void cache_write(const char *dir, const char *digest, const uint8_t *data, size_t len) {
    char sub[CACHE_PATH_MAX], tmp[CACHE_PATH_MAX], path[CACHE_PATH_MAX];
    int n = snprintf(sub, sizeof sub, "%s/sha256", dir);
    if (n < 0 || (size_t)n >= sizeof sub || !cap_make_dirs(sub)) return;
    n = snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", sub);
    if (n < 0 || (size_t)n >= sizeof tmp || !cache_path(path, sizeof path, dir, digest)) return;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return;
    bool ok = write_all(fd, data, len) && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

/* A blob from the cache (verified) or the registry (verified, then cached). */
static bool get_blob(const cap_client *c, const char *cache, const char *name,
                     const cap_descriptor *d, size_t max, cap_buf *out, uint64_t *bytes_read,
                     bool *from_cache, al_error *err) {
    *bytes_read = 0;
    *from_cache = false;
    if (cache && d->size <= max && cache_read(cache, d->digest, true, d->size, max, out)) {
        *from_cache = true;
        return true;
    }
    if (!cap_oci_get_blob(c, name, d, max, out, bytes_read, err)) return false;
    if (cache) cache_write(cache, d->digest, out->data, out->len);
    return true;
}

/* ---- al_cap_fetch ---------------------------------------------------------------------------- */

static bool get_manifest(const cap_client *c, const char *cache, const cap_ref *ref, cap_buf *out,
                         char digest[CAP_DIGEST_SIZE], al_error *err) {
    if (cache && ref->digest[0] &&
        cache_read(cache, ref->digest, false, 0, CAP_MAX_MANIFEST_BYTES, out)) {
        memcpy(digest, ref->digest, CAP_DIGEST_SIZE);
        return true;
    }
    const char *reference = ref->digest[0] ? ref->digest : ref->tag;
    if (!cap_oci_get_manifest(c, ref->name, reference, out, digest, err)) return false;
    if (cache) cache_write(cache, digest, out->data, out->len);
    return true;
}

/* The plugin manifest must be a JSON object without NUL bytes: it is handed
 * out as a C string, and a NUL would let a verifier and a runner see two
 * different documents. */
static bool check_config(const cap_buf *b, al_error *err) {
    if (memchr(b->data, '\0', b->len)) {
        al_error_set(err, AL_ERR_MALFORMED, "capability config contains a NUL byte");
        return false;
    }
    json_error_t jerr;
    json_t *root = json_loadb((const char *)b->data, b->len, JSON_REJECT_DUPLICATES, &jerr);
    bool ok = json_is_object(root);
    json_decref(root);
    if (!ok) al_error_set(err, AL_ERR_MALFORMED, "capability config is not a JSON object");
    return ok;
}

static bool check_module(const cap_buf *b, al_error *err) {
    static const uint8_t magic[4] = {0, 'a', 's', 'm'};
    if (b->len < 8 || memcmp(b->data, magic, 4) != 0) {
        al_error_set(err, AL_ERR_MALFORMED, "capability layer is not a wasm module (no \\0asm header)");
        return false;
    }
    return true;
}

static bool fetch(const cap_client *c, const cap_ref *ref, const char *cache, al_capability *out,
                  al_error *err) {
    cap_buf mbuf = {0}, cbuf = {0}, wbuf = {0};
    cap_manifest m = {0};
    uint64_t config_read = 0;
    bool config_cached = false;
    char digest[CAP_DIGEST_SIZE];
    bool ok = get_manifest(c, cache, ref, &mbuf, digest, err) &&
              cap_manifest_parse((const char *)mbuf.data, mbuf.len, &m, err);
    if (ok && m.kind != CAP_LAYER_WASM) {
        al_error_set(err, AL_ERR_UNSUPPORTED,
                     "%s is a composite capability (a DAG of capabilities), not a module", ref->name);
        ok = false;
    }
    ok = ok && get_blob(c, cache, ref->name, &m.config, CAP_MAX_CONFIG_BYTES, &cbuf, &config_read,
                        &config_cached, err) &&
         check_config(&cbuf, err);
    ok = ok && get_blob(c, cache, ref->name, &m.layer, c->max_blob_bytes, &wbuf, &out->bytes_read,
                        &out->from_cache, err) &&
         check_module(&wbuf, err);
    char *json = NULL;
    if (ok && !(json = malloc(cbuf.len + 1))) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        ok = false;
    }
    if (ok) {
        memcpy(json, cbuf.data, cbuf.len);
        json[cbuf.len] = '\0';
        memcpy(out->name, ref->name, sizeof ref->name);
        memcpy(out->version, ref->tag, sizeof ref->tag);
        memcpy(out->digest, digest, sizeof digest);
        memcpy(out->wasm_digest, m.layer.digest, sizeof m.layer.digest);
        out->manifest_json = json;
        out->manifest_len = cbuf.len;
        out->wasm = wbuf.data;
        out->wasm_len = wbuf.len;
        memset(&wbuf, 0, sizeof wbuf);
    }
    cap_buf_free(&mbuf);
    cap_buf_free(&cbuf);
    cap_buf_free(&wbuf);
    return ok;
}

bool al_cap_fetch(const al_registry *registry, const char *urn, al_capability *out,
                  al_error *err) {
    if (!out) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_cap_fetch: no capability to fill");
        return false;
    }
    memset(out, 0, sizeof *out);
    if (!registry || !urn) {
        al_error_set(err, AL_ERR_ARGUMENT, "al_cap_fetch: no registry or URN");
        return false;
    }
    cap_ref ref;
    cap_client c;
    if (!cap_urn_parse(urn, strlen(urn), &ref, err)) return false;
    if (!cap_client_init(&c, registry, err)) return false;
    const char *cache = registry->cache_dir && registry->cache_dir[0] ? registry->cache_dir : NULL;
    if (cache && strlen(cache) > CACHE_PATH_MAX - 128) {
        al_error_set(err, AL_ERR_ARGUMENT, "cache directory path too long");
        cap_client_fini(&c);
        return false;
    }
    bool ok = fetch(&c, &ref, cache, out, err);
    cap_client_fini(&c);
    if (!ok) {
        /* keep the diagnostic (bytes received) but nothing else */
        uint64_t bytes_read = out->bytes_read;
        al_capability_free(out);
        out->bytes_read = bytes_read;
    } else if (err) {
        memset(err, 0, sizeof *err);
    }
    return ok;
}

void al_capability_free(al_capability *cap) {
    if (!cap) return;
    free(cap->wasm);
    free(cap->manifest_json);
    memset(cap, 0, sizeof *cap);
}
