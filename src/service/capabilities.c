/*
 * capabilities.c — the capabilities airlockd has installed (issue 7): Extism
 * plugins, each compiled once and instantiated afresh for every call, and
 * the MCP tools of the ones that are servlets.
 *
 * A capability comes from a directory (NAME.wasm + optional NAME.json, the
 * plugin manifest), from the registry by URN (al_cap_fetch), or from an
 * upload. Installing one compiles it, instantiates it once and, when it
 * exports both `describe` and `call`, asks `describe` for its tools
 * ({"tools": [{name, description, inputSchema}]}); those become MCP tools
 * named "<capability>_<tool>".
 *
 * Invariants:
 *  - a capability's manifest is the installer's grant, but never of host
 *    paths: a manifest with allowed_paths is refused (a registry must not be
 *    able to hand a plugin the daemon's files);
 *  - every call gets a fresh instance (no state leaks between callers or
 *    tokens) with the manifest's limits narrowed to the daemon's: timeout,
 *    fuel and memory never exceed the request's effective policy;
 *  - what `describe` returns is hostile: names are checked against the MCP
 *    tool-name grammar, sizes are bounded, and a clash with another tool
 *    refuses the install instead of shadowing it;
 *  - svc_caps is guarded by one mutex; an installed capability is reference
 *    counted, so a removal or a replacement never frees one a call is using.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "service.h"

#define MAX_CAPS 256
#define MAX_TOOLS_PER_CAP 64
#define MAX_DESCRIBE_BYTES ((size_t)1 << 20)
#define MAX_FILE_BYTES ((size_t)10 << 20)
#define PAGE_BYTES UINT64_C(65536)

struct svc_cap {
    atomic_uint refs;
    char name[SVC_CAP_NAME_MAX];
    char source[320];              /* path or URN it was installed from */
    char digest[72];               /* sha256:HEX of the module */
    al_plugin_module *module;
    al_manifest *manifest;         /* NULL: defaults */
    json_t *tools;                 /* servlet tools as describe gave them, or NULL */
};

struct svc_caps {
    pthread_mutex_t mu;
    svc_cap *caps[MAX_CAPS];
    size_t n;
};

/* ---- one capability --------------------------------------------------------------------- */

static void cap_free(svc_cap *c) {
    if (c->module) al_plugin_module_free(c->module);
    if (c->manifest) al_manifest_free(c->manifest);
    json_decref(c->tools);
    free(c);
}

void svc_cap_release(svc_cap *c) {
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) cap_free(c);
}

const char *svc_cap_name(const svc_cap *c) { return c->name; }
const char *svc_cap_digest(const svc_cap *c) { return c->digest; }

/* MCP tool names: 1..128 of [A-Za-z0-9_.-]; we keep tools to 64 of [A-Za-z0-9_-]. */
static bool tool_name_valid(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '_' || ch == '-';
        if (!ok) return false;
    }
    return true;
}

/* A tool's MCP name, "<capability>_<tool>": it always fits (tool names are
 * checked to at most 64 characters, capability names to SVC_CAP_NAME_MAX). */
#define MCP_NAME_MAX (SVC_CAP_NAME_MAX + 70)
static void mcp_tool_name(const svc_cap *c, const json_t *tool, char out[MCP_NAME_MAX]) {
    snprintf(out, MCP_NAME_MAX, "%s_%s", c->name, json_string_value(json_object_get(tool, "name")));
}

static void digest_of(const uint8_t *wasm, size_t len, char out[72]) {
    uint8_t md[32];
    unsigned n = 0;
    if (!EVP_Digest(wasm, len, md, &n, EVP_sha256(), NULL) || n != 32) {
        snprintf(out, 72, "sha256:?");
        return;
    }
    memcpy(out, "sha256:", 7);
    svc_hex(md, 32, out + 7);
}

/* The options a call runs with: the manifest's, narrowed by lim. */
static void call_options(const svc_cap *c, const svc_cap_limits *lim, al_plugin_options *o) {
    if (c->manifest) *o = *al_manifest_options(c->manifest);
    else al_plugin_options_init(o);
    if (lim->timeout_ms && (!o->timeout_ms || o->timeout_ms > lim->timeout_ms))
        o->timeout_ms = lim->timeout_ms;
    if (lim->fuel && (!o->fuel || o->fuel > lim->fuel)) o->fuel = lim->fuel;
    if (lim->memory_bytes) {
        uint64_t pages = lim->memory_bytes / PAGE_BYTES;
        if (pages == 0) pages = 1;
        if (pages > UINT32_MAX) pages = UINT32_MAX;
        if (!o->max_pages || o->max_pages > pages) o->max_pages = (uint32_t)pages;
    }
    if (lim->output_bytes && (!o->max_output_bytes || o->max_output_bytes > lim->output_bytes))
        o->max_output_bytes = lim->output_bytes;
    o->cancel = lim->cancel;
    o->on_log = NULL; /* plugin logs are not the caller's output */
}

bool svc_cap_call(svc_cap *c, const char *function, const uint8_t *input, size_t len,
                  const svc_cap_limits *lim, al_result *res) {
    memset(res, 0, sizeof *res);
    al_plugin_options o;
    call_options(c, lim, &o);
    al_error err;
    memset(&err, 0, sizeof err);
    al_plugin *p = al_plugin_instantiate(c->module, &o, &err);
    if (!p) {
        res->status = AL_STATUS_ERROR;
        res->error = err;
        snprintf(res->backend, sizeof res->backend, "plugin");
        return true; /* a result: the capability could not start */
    }
    bool ok = al_plugin_call(p, function, input, len, res);
    al_plugin_free(p);
    snprintf(res->backend, sizeof res->backend, "plugin");
    return ok;
}

/* ---- describe: the servlet's tools --------------------------------------------------- */

static bool check_tools(const json_t *tools, char *err, size_t errlen) {
    if (!json_is_array(tools) || json_array_size(tools) == 0 ||
        json_array_size(tools) > MAX_TOOLS_PER_CAP) {
        snprintf(err, errlen, "describe: \"tools\" must be an array of 1..%d tools",
                 MAX_TOOLS_PER_CAP);
        return false;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const json_t *name = json_object_get(t, "name");
        const json_t *schema = json_object_get(t, "inputSchema");
        const json_t *desc = json_object_get(t, "description");
        if (!json_is_object(t) || !json_is_string(name) ||
            !tool_name_valid(json_string_value(name))) {
            snprintf(err, errlen, "describe: tools[%zu].name must be 1..64 of [A-Za-z0-9_-]", i);
            return false;
        }
        if (desc && !json_is_string(desc)) {
            snprintf(err, errlen, "describe: tools[%zu].description must be a string", i);
            return false;
        }
        const json_t *type = json_object_get(schema, "type");
        if (!json_is_object(schema) || !json_is_string(type) ||
            strcmp(json_string_value(type), "object")) {
            snprintf(err, errlen,
                     "describe: tools[%zu].inputSchema must be an object schema (type \"object\")",
                     i);
            return false;
        }
        for (size_t k = 0; k < i; k++) {
            if (!strcmp(json_string_value(json_object_get(json_array_get(tools, k), "name")),
                        json_string_value(name))) {
                snprintf(err, errlen, "describe: tool \"%s\" is listed twice",
                         json_string_value(name));
                return false;
            }
        }
    }
    return true;
}

/* A servlet exports describe and call: ask for its tools once. */
static bool describe(svc_cap *c, char *err, size_t errlen) {
    al_plugin_options o;
    svc_cap_limits lim = {.timeout_ms = 5000, .fuel = UINT64_C(1000000000)};
    call_options(c, &lim, &o);
    al_error e;
    memset(&e, 0, sizeof e);
    al_plugin *p = al_plugin_instantiate(c->module, &o, &e);
    if (!p) {
        snprintf(err, errlen, "cannot instantiate: %s", e.message);
        return false;
    }
    bool servlet = al_plugin_has_function(p, "describe") && al_plugin_has_function(p, "call");
    if (!servlet) {
        al_plugin_free(p);
        return true; /* a plain plugin: callable through the API, no MCP tools */
    }
    al_result r;
    bool ok = al_plugin_call(p, "describe", NULL, 0, &r);
    al_plugin_free(p);
    if (!ok || r.status != AL_STATUS_OK) {
        snprintf(err, errlen, "describe failed: %s", ok ? r.error.message : "no result");
        if (ok) al_result_free(&r);
        return false;
    }
    json_error_t je;
    json_t *doc = r.stdout_len <= MAX_DESCRIBE_BYTES
                      ? json_loadb((const char *)r.stdout_data, r.stdout_len,
                                   JSON_REJECT_DUPLICATES, &je)
                      : NULL;
    al_result_free(&r);
    const json_t *tools = json_object_get(doc, "tools");
    if (!doc || !check_tools(tools, err, errlen)) {
        if (!doc) snprintf(err, errlen, "describe: the output is not a JSON object under 1 MiB");
        json_decref(doc);
        return false;
    }
    c->tools = json_incref((json_t *)tools);
    json_decref(doc);
    return true;
}

/* ---- the set --------------------------------------------------------------------------- */

svc_caps *svc_caps_new(void) {
    svc_caps *c = calloc(1, sizeof *c);
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
}

void svc_caps_free(svc_caps *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) svc_cap_release(c->caps[i]);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static bool manifest_for(svc_cap *c, const char *manifest_json, char *err, size_t errlen) {
    if (!manifest_json || !manifest_json[0]) return true;
    al_error e;
    memset(&e, 0, sizeof e);
    c->manifest = al_manifest_parse(manifest_json, strlen(manifest_json), NULL, &e);
    if (!c->manifest) {
        snprintf(err, errlen, "%s", e.message); /* already says "manifest: ..." */
        return false;
    }
    if (al_manifest_options(c->manifest)->ndirs > 0) {
        snprintf(err, errlen,
                 "manifest: allowed_paths is refused: installed capabilities get no host paths");
        return false;
    }
    return true;
}

/* Would one of c's MCP tool names clash with one installed (but `replacing`)? */
static bool clashes(svc_caps *set, const svc_cap *c, const svc_cap *replacing, char *err,
                    size_t errlen) {
    if (!c->tools) return false;
    for (size_t i = 0; i < set->n; i++) {
        const svc_cap *o = set->caps[i];
        if (o == replacing || !o->tools) continue;
        size_t a, b;
        const json_t *ta, *tb;
        json_array_foreach(c->tools, a, ta) {
            json_array_foreach(o->tools, b, tb) {
                char x[MCP_NAME_MAX], y[MCP_NAME_MAX];
                mcp_tool_name(c, ta, x);
                mcp_tool_name(o, tb, y);
                if (!strcmp(x, y)) {
                    snprintf(err, errlen, "MCP tool %s is already provided by capability %s", x,
                             o->name);
                    return true;
                }
            }
        }
    }
    return false;
}

bool svc_caps_install(svc_caps *set, const char *name, const uint8_t *wasm, size_t len,
                      const char *manifest_json, const char *source, char *err, size_t errlen) {
    if (!svc_cap_name_valid(name)) {
        snprintf(err, errlen, "name: 1..%d of [a-z0-9-], starting with a letter or digit",
                 SVC_CAP_NAME_MAX - 1);
        return false;
    }
    svc_cap *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    atomic_init(&c->refs, 1);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->source, sizeof c->source, "%s", source ? source : "upload");
    digest_of(wasm, len, c->digest);
    al_error e;
    memset(&e, 0, sizeof e);
    if (!manifest_for(c, manifest_json, err, errlen)) goto fail;
    c->module = al_plugin_compile(wasm, len, &e);
    if (!c->module) {
        snprintf(err, errlen, "module: %s", e.message);
        goto fail;
    }
    if (!describe(c, err, errlen)) goto fail;

    pthread_mutex_lock(&set->mu);
    size_t slot = set->n;
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->caps[i]->name, name)) slot = i;
    svc_cap *old = slot < set->n ? set->caps[slot] : NULL;
    if (clashes(set, c, old, err, errlen) || (!old && set->n == MAX_CAPS)) {
        if (!old && set->n == MAX_CAPS) snprintf(err, errlen, "at most %d capabilities", MAX_CAPS);
        pthread_mutex_unlock(&set->mu);
        goto fail;
    }
    set->caps[slot] = c;
    if (!old) set->n++;
    pthread_mutex_unlock(&set->mu);
    svc_cap_release(old);
    return true;
fail:
    cap_free(c);
    return false;
}

bool svc_caps_remove(svc_caps *set, const char *name) {
    svc_cap *gone = NULL;
    pthread_mutex_lock(&set->mu);
    for (size_t i = 0; i < set->n && !gone; i++) {
        if (strcmp(set->caps[i]->name, name)) continue;
        gone = set->caps[i];
        set->caps[i] = set->caps[--set->n];
    }
    pthread_mutex_unlock(&set->mu);
    svc_cap_release(gone);
    return gone != NULL;
}

svc_cap *svc_caps_get(svc_caps *set, const char *name) {
    svc_cap *found = NULL;
    pthread_mutex_lock(&set->mu);
    for (size_t i = 0; i < set->n && !found; i++) {
        if (strcmp(set->caps[i]->name, name)) continue;
        found = set->caps[i];
        atomic_fetch_add(&found->refs, 1);
    }
    pthread_mutex_unlock(&set->mu);
    return found;
}

svc_cap *svc_caps_find_tool(svc_caps *set, const char *mcp_name, char *tool, size_t toollen) {
    svc_cap *found = NULL;
    pthread_mutex_lock(&set->mu);
    for (size_t i = 0; i < set->n && !found; i++) {
        svc_cap *c = set->caps[i];
        size_t n = strlen(c->name);
        if (!c->tools || strncmp(mcp_name, c->name, n) || mcp_name[n] != '_') continue;
        size_t k;
        const json_t *t;
        json_array_foreach(c->tools, k, t) {
            const char *tn = json_string_value(json_object_get(t, "name"));
            if (strcmp(mcp_name + n + 1, tn)) continue;
            snprintf(tool, toollen, "%s", tn);
            found = c;
            atomic_fetch_add(&c->refs, 1);
            break;
        }
    }
    pthread_mutex_unlock(&set->mu);
    return found;
}

json_t *svc_caps_mcp_tools(svc_caps *set) {
    json_t *list = json_array();
    pthread_mutex_lock(&set->mu);
    for (size_t i = 0; list && i < set->n; i++) {
        const svc_cap *c = set->caps[i];
        size_t k;
        const json_t *t;
        json_array_foreach(c->tools, k, t) {
            char name[MCP_NAME_MAX];
            mcp_tool_name(c, t, name);
            const json_t *desc = json_object_get(t, "description");
            json_array_append_new(
                list, json_pack("{s:s, s:s, s:O, s:{s:b, s:b}}", "name", name, "description",
                                desc ? json_string_value(desc) : "", "inputSchema",
                                json_object_get(t, "inputSchema"), "annotations",
                                "destructiveHint", 0, "openWorldHint",
                                c->manifest && al_manifest_options(c->manifest)->allow_http));
        }
    }
    pthread_mutex_unlock(&set->mu);
    return list;
}

json_t *svc_caps_list(svc_caps *set) {
    json_t *list = json_array();
    pthread_mutex_lock(&set->mu);
    for (size_t i = 0; list && i < set->n; i++) {
        const svc_cap *c = set->caps[i];
        json_t *tools = json_array();
        size_t k;
        const json_t *t;
        json_array_foreach(c->tools, k, t) {
            char name[MCP_NAME_MAX];
            mcp_tool_name(c, t, name);
            json_array_append_new(tools, json_string(name));
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:b, s:o}", "name", c->name,
                                              "source", c->source, "digest", c->digest,
                                              "servlet", c->tools != NULL, "mcp_tools", tools));
    }
    pthread_mutex_unlock(&set->mu);
    return list;
}

/* ---- from the registry ---------------------------------------------------------------- */

/* The name a repository suggests: its last path component, '_' and '.'
 * made '-' (OCI names allow them; capability names do not). */
static void name_from(const char *repo, char *out, size_t len) {
    const char *slash = strrchr(repo, '/');
    const char *last = slash ? slash + 1 : repo;
    size_t n = strlen(last);
    out[0] = '\0';
    if (n >= len) return; /* too long: "" fails the name check, with its message */
    memcpy(out, last, n + 1);
    for (char *p = out; *p; p++)
        if (*p == '_' || *p == '.') *p = '-';
}

int svc_caps_install_urn(svc_caps *set, const al_registry *reg, const char *urn,
                         const char *name, char *installed, size_t installed_len, char *err,
                         size_t errlen) {
    al_capability cap;
    al_error e;
    memset(&e, 0, sizeof e);
    if (!al_cap_fetch(reg, urn, &cap, &e)) {
        snprintf(err, errlen, "fetch %s: %s", urn, e.message);
        return e.kind == AL_ERR_ARGUMENT ? 400 : 502;
    }
    char derived[SVC_CAP_NAME_MAX];
    if (!name) name_from(cap.name, derived, sizeof derived);
    const char *chosen = name ? name : derived;
    bool ok = svc_caps_install(set, chosen, cap.wasm, cap.wasm_len, cap.manifest_json, urn, err,
                               errlen);
    al_capability_free(&cap);
    if (ok) snprintf(installed, installed_len, "%s", chosen);
    return ok ? 201 : 400;
}

/* ---- a directory of NAME.wasm (+ NAME.json) ------------------------------------------- */

static uint8_t *read_file(const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    fclose(f);
    if (!buf || n > max) {
        free(buf);
        errno = EFBIG;
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

unsigned svc_caps_load_dir(svc_caps *set, svc *s, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        svc_log(s, SVC_LOG_WARN, "capabilities: cannot open %s: %s", dir, strerror(errno));
        return 0;
    }
    unsigned installed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".wasm")) continue;
        char name[SVC_CAP_NAME_MAX];
        if (n - 5 >= sizeof name) continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), e->d_name);
        char path[SVC_PATH_MAX + 80], mpath[SVC_PATH_MAX + 80], err[400] = "";
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(mpath, sizeof mpath, "%s/%s.json", dir, name);
        size_t len = 0, mlen = 0;
        uint8_t *wasm = read_file(path, MAX_FILE_BYTES, &len);
        uint8_t *manifest = read_file(mpath, 1 << 20, &mlen);
        if (!wasm) snprintf(err, sizeof err, "cannot read it: %s", strerror(errno));
        else if (svc_caps_install(set, name, wasm, len, (const char *)manifest, path, err,
                                  sizeof err))
            installed++;
        if (err[0]) svc_log(s, SVC_LOG_WARN, "capabilities: %s: %s", path, err);
        free(wasm);
        free(manifest);
    }
    closedir(d);
    return installed;
}
