/*
 * cap.c — `airlock cap`: capabilities (Extism-compatible plugins) in an OCI
 * registry, by URN. A thin caller of airlock.h's "capabilities" section:
 *   publish NAME:VERSION (MODULE.wasm [--manifest F] | --dag FILE.json)
 *                      store a promotion event in the outbox, push it;
 *   fetch URN          resolve, stream, verify; write the module (-o);
 *   call URN FUNCTION  fetch, then `plugin call` on the bytes in memory
 *                      (cli_plugin_call_loaded, plugin.c);
 *   retry              push the outbox's due events.
 *
 * Invariants:
 * - The registry token comes only from $AIRLOCK_REGISTRY_TOKEN, never from
 *   the command line (which other users can read in /proc).
 * - Every argument is checked before the outbox or the network is touched;
 *   usage errors are exit 2 with one line on stderr.
 * - Exit status says what happened to a publication: 0 pushed, 75
 *   (EX_TEMPFAIL) stored in the outbox but not pushed (it will be retried),
 *   1 refused or failed. `cap retry`: 0 when nothing is pending any more.
 * - The default outbox is $AIRLOCK_STATE_DIR/outbox.db, else
 *   $XDG_STATE_HOME/airlock/outbox.db, else ~/.local/state/airlock/outbox.db
 *   (its directory created 0700).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "run.h"

enum { CLI_EXIT_QUEUED = 75 }; /* sysexits EX_TEMPFAIL */

#define CAP_URN_PREFIX "urn:airlock:cap:"
#define MAX_MANIFEST_FILE ((size_t)1 << 20)

static const char cap_usage[] =
    "usage: airlock cap publish NAME:VERSION (MODULE.wasm [--manifest FILE] | --dag FILE.json)\n"
    "                           [--outbox DB] [REGISTRY OPTIONS]\n"
    "       airlock cap fetch URN [-o FILE] [--cache DIR] [--max-bytes SIZE] [REGISTRY OPTIONS]\n"
    "       airlock cap call URN FUNCTION [--cache DIR] [--max-bytes SIZE] [REGISTRY OPTIONS]\n"
    "                        [PLUGIN CALL OPTIONS]\n"
    "       airlock cap retry [--outbox DB] [--force] [REGISTRY OPTIONS]\n"
    "\n"
    "Capabilities are Extism-compatible wasm plugins stored in an OCI registry: the\n"
    "module is the artifact's one layer (application/wasm), the plugin manifest its\n"
    "config. A URN names one:\n"
    "  urn:airlock:cap:NAME:VERSION        NAME an OCI repository name (lowercase,\n"
    "                                      [a-z0-9] joined by . _ __ -, / between parts,\n"
    "                                      at most 127 characters), VERSION a tag\n"
    "                                      ([A-Za-z0-9_][A-Za-z0-9._-]*, at most 127)\n"
    "  urn:airlock:cap:NAME@sha256:HEX     a manifest digest (immutable)\n"
    "\n"
    "publish   computes the SHA-256 of the module (or of the DAG JSON, canonicalised),\n"
    "          stores a promotion event durably in the outbox, then pushes it and\n"
    "          prints the URN and `pushed ...` or `queued ...`. A queued event is\n"
    "          pushed by `cap retry` (backoff 1 s doubling to 5 min; --force ignores\n"
    "          it). Publishing the same digest again is idempotent; a published\n"
    "          NAME:VERSION never changes (another digest is refused).\n"
    "          --manifest FILE  the plugin manifest (Extism JSON) stored as config;\n"
    "                           its \"wasm\" sources are dropped (the layer is the module)\n"
    "          --dag FILE.json  a composite capability: a JSON object (its DAG)\n"
    "fetch     resolves the URN, streams the module (refused past --max-bytes, default\n"
    "          10M, without reading further), verifies every SHA-256, prints what it\n"
    "          got and writes the module to -o FILE (- for stdout; the summary then\n"
    "          goes to stderr).\n"
    "          --cache DIR      a content-addressed cache (entries re-verified on read)\n"
    "call      fetches, then calls FUNCTION like `airlock plugin call` (its options:\n"
    "          --input, --input-file, --config, --allow-host, --timeout-ms, ...).\n"
    "\n"
    "Registry options:\n"
    "  --registry URL         http(s)://HOST[:PORT] (default: $AIRLOCK_REGISTRY)\n"
    "  --ca-file FILE         CA certificates for an https registry\n"
    "  --registry-timeout T   per request (default 30s)\n"
    "  --outbox DB            the outbox (default: $AIRLOCK_STATE_DIR/outbox.db, else\n"
    "                         $XDG_STATE_HOME/airlock/outbox.db or\n"
    "                         ~/.local/state/airlock/outbox.db)\n"
    "  $AIRLOCK_REGISTRY_TOKEN is sent as \"Authorization: Bearer\" when set.\n"
    "\n"
    "exit status: 0 ok, 1 refused or failed, 2 usage error, 75 publish: stored but\n"
    "not pushed yet (registry unreachable) / retry: events still pending;\n"
    "cap call: as `airlock plugin call`\n";

/* What the subcommands' options set. */
typedef struct cap_args {
    const char *sub;          /* "publish", "fetch", "call", "retry" */
    const char *registry;
    const char *ca_file;
    uint64_t timeout_ms;
    const char *outbox;
    const char *cache;
    uint64_t max_bytes;
    const char *out_file;     /* fetch -o */
    const char *manifest;     /* publish --manifest */
    const char *dag;          /* publish --dag */
    bool force;
    const char *pos[2];       /* positional arguments */
    int npos;
    /* cap call: FUNCTION then the plugin call options, in order */
    char **rest;
    int nrest;
} cap_args;

static int usage_error(const char *sub, const char *fmt, const char *arg) {
    fprintf(stderr, "airlock cap%s%s: ", sub ? " " : "", sub ? sub : "");
    fprintf(stderr, fmt, arg);
    fputs(" (see `airlock cap --help`)\n", stderr);
    return CLI_USAGE;
}

/* The options of `plugin call` that take a value: cap call passes them and
 * their values through untouched (a value like "--cache" is the plugin's). */
static bool plugin_option_with_value(const char *a) {
    static const char *const names[] = {
        "--input",      "--input-file", "--config",    "--allow-host", "--allow-ip",
        "--allow-path", "--timeout-ms", "--max-pages", "--max-output", "--repeat",
        "--fuel",       "--log-level",  "--resolve"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i])) return true;
    return false;
}

/* One option of cap's own; returns CLI_OK, CLI_USAGE, or -1 (not ours). */
static int parse_cap_option(int argc, char **argv, int *i, cap_args *a) {
    const char *v = NULL, *why = NULL;
    const char *arg = argv[*i];
#define VALUE(name, field)                                                                   \
    if (cli_option_value(argc, argv, i, name, &v)) {                                         \
        if (!v) return usage_error(a->sub, "%s needs a value", name);                        \
        a->field = v;                                                                        \
        return CLI_OK;                                                                       \
    }
    VALUE("--registry", registry)
    VALUE("--ca-file", ca_file)
    VALUE("--outbox", outbox)
    VALUE("--cache", cache)
    VALUE("--manifest", manifest)
    VALUE("--dag", dag)
    VALUE("-o", out_file)
#undef VALUE
    if (cli_option_value(argc, argv, i, "--registry-timeout", &v)) {
        if (!v) return usage_error(a->sub, "%s needs a value", "--registry-timeout");
        if (!cli_parse_duration_ms(v, &a->timeout_ms, &why))
            return usage_error(a->sub, "--registry-timeout: %s", why);
        return CLI_OK;
    }
    if (cli_option_value(argc, argv, i, "--max-bytes", &v)) {
        if (!v) return usage_error(a->sub, "%s needs a value", "--max-bytes");
        if (!cli_parse_bytes(v, &a->max_bytes, &why))
            return usage_error(a->sub, "--max-bytes: %s", why);
        if (a->max_bytes > SIZE_MAX / 2) return usage_error(a->sub, "--max-bytes: %s", "too large");
        return CLI_OK;
    }
    if (!strcmp(arg, "--force")) {
        a->force = true;
        return CLI_OK;
    }
    return -1;
}

/* Which of cap's options each subcommand takes. */
static bool option_allowed(const char *sub, const char *arg) {
    static const struct { const char *sub; const char *opts; } table[] = {
        {"publish", " --registry --ca-file --registry-timeout --outbox --manifest --dag "},
        {"fetch", " --registry --ca-file --registry-timeout --cache --max-bytes -o "},
        {"call", " --registry --ca-file --registry-timeout --cache --max-bytes "},
        {"retry", " --registry --ca-file --registry-timeout --outbox --force "},
    };
    char name[32];
    size_t n = strcspn(arg, "=");
    if (n + 3 > sizeof name) return false;
    snprintf(name, sizeof name, " %.*s ", (int)n, arg);
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(table[i].sub, sub)) return strstr(table[i].opts, name) != NULL;
    return false;
}

static int parse_args(int argc, char **argv, cap_args *a) {
    int max_pos = !strcmp(a->sub, "retry") ? 0 : !strcmp(a->sub, "fetch") ? 1 : 2;
    bool call = !strcmp(a->sub, "call");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (call && a->npos == 2) {
            /* after FUNCTION: cap's own options, or the plugin's (passed on);
             * after "--", everything is the plugin's */
            if (!strcmp(arg, "--")) {
                while (i < argc) a->rest[a->nrest++] = argv[i++];
                break;
            }
            if (plugin_option_with_value(arg) && i + 1 < argc) {
                a->rest[a->nrest++] = argv[i++];
                a->rest[a->nrest++] = argv[i];
                continue;
            }
            if (option_allowed(a->sub, arg)) {
                int rc = parse_cap_option(argc, argv, &i, a);
                if (rc != CLI_OK) return rc == -1 ? usage_error(a->sub, "unknown option %s", arg) : rc;
                continue;
            }
            a->rest[a->nrest++] = argv[i];
            continue;
        }
        if (arg[0] == '-' && arg[1] != '\0') {
            if (!option_allowed(a->sub, arg))
                return usage_error(a->sub, "unknown option %s", arg);
            int rc = parse_cap_option(argc, argv, &i, a);
            if (rc != CLI_OK) return rc == -1 ? usage_error(a->sub, "unknown option %s", arg) : rc;
            continue;
        }
        if (a->npos >= max_pos) return usage_error(a->sub, "unexpected argument %s", arg);
        a->pos[a->npos++] = arg;
        if (call && a->npos == 2) a->rest[a->nrest++] = argv[i]; /* FUNCTION is argv[0] */
    }
    if (a->npos < max_pos && !(!strcmp(a->sub, "publish") && a->npos == 1 && a->dag))
        return usage_error(a->sub, "%s", "missing arguments");
    if (!a->registry) a->registry = getenv("AIRLOCK_REGISTRY");
    if (!a->registry || !a->registry[0])
        return usage_error(a->sub, "%s", "no registry: give --registry URL or set $AIRLOCK_REGISTRY");
    return CLI_OK;
}

static void registry_from(const cap_args *a, al_registry *r) {
    memset(r, 0, sizeof *r);
    r->url = a->registry;
    r->ca_file = a->ca_file;
    const char *token = getenv("AIRLOCK_REGISTRY_TOKEN");
    r->auth_token = token && token[0] ? token : NULL;
    r->max_blob_bytes = (size_t)a->max_bytes;
    r->timeout_ms = a->timeout_ms;
    r->cache_dir = a->cache;
}

/* ---- the outbox's path ------------------------------------------------------------------------- */

/* The default outbox path into out (al_publisher_open creates its directory). */
static bool default_outbox(char *out, size_t outlen) {
    char dir[PATH_MAX];
    const char *state = getenv("AIRLOCK_STATE_DIR");
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (state && state[0]) n = snprintf(dir, sizeof dir, "%s", state);
    else if (xdg && xdg[0] == '/') n = snprintf(dir, sizeof dir, "%s/airlock", xdg);
    else if (home && home[0] == '/') n = snprintf(dir, sizeof dir, "%s/.local/state/airlock", home);
    else return false;
    if (n < 0 || (size_t)n >= sizeof dir) return false;
    n = snprintf(out, outlen, "%s/outbox.db", dir);
    return n >= 0 && (size_t)n < outlen;
}

static al_publisher *open_outbox(const cap_args *a, const al_registry *r, char *path,
                                 size_t pathlen) {
    if (a->outbox) {
        snprintf(path, pathlen, "%s", a->outbox);
    } else if (!default_outbox(path, pathlen)) {
        fputs("airlock cap: no outbox: give --outbox DB or set $AIRLOCK_STATE_DIR\n", stderr);
        return NULL;
    }
    al_error err;
    al_publisher *p = al_publisher_open(path, r, &err);
    if (!p) fprintf(stderr, "airlock cap %s: %s\n", a->sub, err.message);
    return p;
}

/* ---- publish ------------------------------------------------------------------------------------- */

/* A text file of at most max bytes without NUL, NUL-terminated (free()). */
static char *read_text(const char *path, size_t max) {
    size_t len;
    uint8_t *bytes = cli_read_module_file(path, &len);
    if (!bytes) return NULL;
    char *text = NULL;
    if (len > max) {
        fprintf(stderr, "airlock: %s: larger than %zu bytes\n", path, max);
    } else if (memchr(bytes, '\0', len)) {
        fprintf(stderr, "airlock: %s: contains a NUL byte\n", path);
    } else if ((text = malloc(len + 1))) {
        memcpy(text, bytes, len);
        text[len] = '\0';
    }
    free(bytes);
    return text;
}

/* The plugin manifest to store as config: FILE without its "wasm" sources
 * (the capability's module is its layer), as compact JSON. */
static char *config_from_manifest(const char *path) {
    char *text = read_text(path, MAX_MANIFEST_FILE);
    if (!text) return NULL;
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!json_is_object(root)) {
        fprintf(stderr, "airlock cap publish: %s: not a JSON object%s%s\n", path,
                root ? "" : ": ", root ? "" : jerr.text);
        json_decref(root);
        return NULL;
    }
    json_object_del(root, "wasm");
    char *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}

/* NAME:VERSION (or the URN of it) split into name and version. */
static bool split_ref(const char *ref, char *name, size_t nlen, char *version, size_t vlen) {
    if (!strncmp(ref, CAP_URN_PREFIX, sizeof CAP_URN_PREFIX - 1)) ref += sizeof CAP_URN_PREFIX - 1;
    const char *colon = strchr(ref, ':');
    if (!colon || colon == ref || !colon[1]) return false;
    size_t n = (size_t)(colon - ref);
    if (n >= nlen || strlen(colon + 1) >= vlen) return false;
    memcpy(name, ref, n);
    name[n] = '\0';
    snprintf(version, vlen, "%s", colon + 1);
    return true;
}

static int cap_publish(const cap_args *a) {
    char name[256], version[256], outbox[PATH_MAX];
    if (!split_ref(a->pos[0], name, sizeof name, version, sizeof version))
        return usage_error(a->sub, "%s is not NAME:VERSION", a->pos[0]);
    if (a->dag && (a->npos == 2 || a->manifest))
        return usage_error(a->sub, "%s", "give MODULE.wasm [--manifest F] or --dag FILE, not both");
    if (!a->dag && a->npos != 2) return usage_error(a->sub, "%s", "missing MODULE.wasm");

    al_publish_request rq;
    memset(&rq, 0, sizeof rq);
    rq.name = name;
    rq.version = version;
    uint8_t *wasm = NULL;
    char *config = NULL, *dag = NULL;
    int rc = CLI_FAIL;
    if (a->dag) {
        if (!(dag = read_text(a->dag, CLI_MAX_MODULE_BYTES))) goto out;
        rq.dag_json = dag;
    } else {
        if (!(wasm = cli_read_module_file(a->pos[1], &rq.wasm_len))) goto out;
        rq.wasm = wasm;
    }
    if (a->manifest && !(config = config_from_manifest(a->manifest))) goto out;
    rq.manifest_json = config;

    al_registry r;
    registry_from(a, &r);
    al_publisher *p = open_outbox(a, &r, outbox, sizeof outbox);
    if (!p) goto out;
    al_publish_receipt rc_;
    al_error err;
    bool ok = al_publish(p, &rq, &rc_, &err);
    al_publisher_close(p);
    if (!ok) {
        fprintf(stderr, "airlock cap publish: %s\n", err.message);
        goto out;
    }
    printf("%s\n", rc_.urn);
    if (rc_.pushed) {
        printf("pushed%s: manifest %s, %s %s (event %" PRId64 ")\n",
               rc_.duplicate ? " (duplicate: same digest, same event)" : "", rc_.manifest_digest,
               a->dag ? "dag" : "module", rc_.digest, rc_.event_id);
        rc = CLI_OK;
    } else {
        printf("queued: event %" PRId64 " (%s %s) stored in %s; not pushed: %s\n"
               "`airlock cap retry` pushes it\n",
               rc_.event_id, a->dag ? "dag" : "module", rc_.digest, outbox, rc_.last_error);
        rc = CLI_EXIT_QUEUED;
    }
out:
    free(wasm);
    free(config);
    free(dag);
    return rc;
}

/* ---- retry ------------------------------------------------------------------------------------- */

static int cap_retry(const cap_args *a) {
    char outbox[PATH_MAX];
    al_registry r;
    registry_from(a, &r);
    al_publisher *p = open_outbox(a, &r, outbox, sizeof outbox);
    if (!p) return CLI_FAIL;
    unsigned pushed = 0, pending = 0;
    al_error err;
    bool ok = al_publisher_retry(p, a->force, &pushed, &pending, &err);
    al_publisher_close(p);
    printf("pushed %u, pending %u\n", pushed, pending);
    if (!ok) {
        fprintf(stderr, "airlock cap retry: %s\n", err.message);
        return CLI_FAIL;
    }
    return pending ? CLI_EXIT_QUEUED : CLI_OK;
}

/* ---- fetch and call --------------------------------------------------------------------------------- */

static bool fetch_cap(const cap_args *a, al_capability *cap) {
    al_registry r;
    al_error err;
    registry_from(a, &r);
    if (al_cap_fetch(&r, a->pos[0], cap, &err)) return true;
    /* the message names the capability (quoted when it is hostile); the
     * raw URN is not echoed: it may carry terminal escapes */
    fprintf(stderr, "airlock cap %s: %s\n", a->sub, err.message);
    if (cap->bytes_read)
        fprintf(stderr, "airlock cap %s: bytes read: %" PRIu64 "\n", a->sub, cap->bytes_read);
    return false;
}

static bool write_file(const char *path, const uint8_t *data, size_t len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "airlock cap fetch: %s: %s\n", path, strerror(errno));
        return false;
    }
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (f == stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
    if (!ok) fprintf(stderr, "airlock cap fetch: %s: write failed\n", path);
    return ok;
}

static int cap_fetch(const cap_args *a) {
    al_capability cap;
    if (!fetch_cap(a, &cap)) return CLI_FAIL;
    FILE *info = a->out_file && !strcmp(a->out_file, "-") ? stderr : stdout;
    fprintf(info,
            "urn: %s%s@%s\nname: %s\nversion: %s\ndigest: %s\nwasm_digest: %s\n"
            "size: %zu\nbytes_read: %" PRIu64 "\nfrom_cache: %s\n",
            CAP_URN_PREFIX, cap.name, cap.digest, cap.name, cap.version[0] ? cap.version : "-",
            cap.digest, cap.wasm_digest, cap.wasm_len, cap.bytes_read,
            cap.from_cache ? "yes" : "no");
    bool ok = !a->out_file || write_file(a->out_file, cap.wasm, cap.wasm_len);
    al_capability_free(&cap);
    return ok ? CLI_OK : CLI_FAIL;
}

static int cap_call(const cap_args *a) {
    al_capability cap;
    if (!fetch_cap(a, &cap)) return CLI_FAIL;
    fflush(stdout);
    int rc = cli_plugin_call_loaded(cap.wasm, cap.wasm_len, cap.manifest_json, a->nrest, a->rest);
    al_capability_free(&cap);
    return rc;
}

int cli_cap(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(cap_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    cap_args a;
    memset(&a, 0, sizeof a);
    a.sub = argv[1];
    if (strcmp(a.sub, "publish") && strcmp(a.sub, "fetch") && strcmp(a.sub, "call") &&
        strcmp(a.sub, "retry"))
        return usage_error(NULL, "unknown subcommand %s", a.sub);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(cap_usage, stdout);
            return CLI_OK;
        }
    }
    a.rest = calloc((size_t)argc + 1, sizeof *a.rest);
    if (!a.rest) {
        fputs("airlock cap: out of memory\n", stderr);
        return CLI_FAIL;
    }
    int rc = parse_args(argc - 1, argv + 1, &a);
    if (rc == CLI_OK) {
        if (!strcmp(a.sub, "publish")) rc = cap_publish(&a);
        else if (!strcmp(a.sub, "fetch")) rc = cap_fetch(&a);
        else if (!strcmp(a.sub, "call")) rc = cap_call(&a);
        else rc = cap_retry(&a);
    }
    free(a.rest);
    return rc;
}
