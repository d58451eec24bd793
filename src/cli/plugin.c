/*
 * plugin.c — `airlock plugin call`: run one function of an Extism-compatible
 * plugin (al_plugin_*, airlock.h) and print its output bytes; and
 * cli_plugin_call_loaded, the same for a module already in memory (`airlock
 * cap call`, cap.c).
 *
 *   airlock plugin call PLUGIN.wasm|MANIFEST.json FUNCTION [options]
 *
 * A PLUGIN ending in ".json" is an Extism manifest (its wasm source is loaded
 * by al_manifest_load_wasm, relative paths against the manifest's directory);
 * the command line's options then override its scalars and extend its lists
 * (a --config key replaces the manifest's value for that key).
 *
 * Output: the output bytes, as they are, on stdout; with --repeat N the same
 * instance is called N times (vars persist) and each output is followed by a
 * newline; with --json one JSON object per call instead. The plugin's logs go
 * to stderr, one line each, prefixed with their level.
 *
 * Exit status: 0 success; 1 the plugin failed (it set an error or returned
 * non-zero), or the plugin could not be loaded; 2 usage; otherwise the
 * conformance error's status, as `airlock run` numbers them: 70 trap,
 * 71 fuel, 72 timeout, 73 memory, 65 invalid module, and 76 (EX_PROTOCOL)
 * for an output or error past the output cap.
 *
 * Invariants:
 *  - everything the plugin produces is hostile: log lines and error text are
 *    printed with control characters (C0, DEL, C1) and invalid UTF-8
 *    replaced (no terminal escape sequences from a plugin), error text is
 *    bounded on stderr; only the output bytes
 *    themselves go to stdout unchanged (they are the product asked for);
 *  - a capability's manifest (cli_plugin_call_loaded) comes from a registry:
 *    it may not grant host paths (refused, as airlockd refuses it);
 *  - usage errors are one line on stderr, exit 2, before anything is loaded;
 *  - every allocation is owned by the call_args / plugin_run structs and
 *    released on every path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define PLUGIN_EXIT_OUTPUT 76             /* sysexits EX_PROTOCOL */
#define MAX_MANIFEST_BYTES ((size_t)64 << 20) /* a manifest may embed its module */
#define MAX_REPEAT UINT64_C(1000000)
#define MAX_ERROR_PRINT 4096              /* bytes of a plugin's error shown on stderr */

static const char plugin_help[] =
    "usage: airlock plugin call PLUGIN.wasm|MANIFEST.json FUNCTION [options]\n"
    "\n"
    "Call FUNCTION of an Extism-compatible plugin (a wasm module importing\n"
    "\"extism:host/env\") and print its output bytes on stdout. A PLUGIN ending in\n"
    ".json is an Extism manifest: its wasm source (data, path or url), memory limits,\n"
    "config, allowed_hosts, allowed_paths and timeout_ms apply, and the options\n"
    "below override or extend them. Nothing is granted unless asked for: no HTTP,\n"
    "no directories, no config.\n"
    "\n"
    "options:\n"
    "  --input STR           the input bytes (default: empty)\n"
    "  --input-file FILE     the input read from FILE ('-': stdin)\n"
    "  --config KEY=VALUE    a config value the plugin reads with config_get (repeatable)\n"
    "  --allow-host PATTERN  allow HTTP requests to this host: \"example.com\",\n"
    "                        \"*.example.com\" or \"*\" (repeatable); every resolved\n"
    "                        address must still pass the deny-list (loopback,\n"
    "                        private, link-local, metadata) unless --allow-ip grants it\n"
    "  --allow-ip CIDR       addresses HTTP may reach despite the deny-list (repeatable)\n"
    "  --resolve NAME:ADDR   answer NAME with ADDR instead of DNS (repeatable)\n"
    "  --allow-path HOST[:GUEST][:ro|:rw]\n"
    "                        a WASI directory for the plugin (read-only unless :rw;\n"
    "                        GUEST defaults to HOST) (repeatable)\n"
    "  --timeout-ms N        wall-clock limit per call, in milliseconds\n"
    "  --fuel N              instruction budget per call\n"
    "  --max-pages N         linear memory limit in 64 KiB pages (1..65536, default 1024)\n"
    "  --max-output BYTES    the output/error cap (default 10M; K, M, G suffixes)\n"
    "  --repeat N            call the same instance N times (vars persist), each\n"
    "                        output followed by a newline\n"
    "  --log-level LEVEL     trace, debug, info (default), warn, error or off: the\n"
    "                        plugin's logs at or above LEVEL go to stderr as\n"
    "                        \"LEVEL: message\"\n"
    "  --json                one JSON object per call on stdout instead of the raw output\n"
    "                        ({\"function\", \"call\", \"status\", \"exit_code\", \"output\",\n"
    "                        \"error\", \"trap\", \"wall_ms\", \"fuel_used\"})\n"
    "  -h, --help            this text\n"
    "\n"
    "exit status: 0 success; 1 the plugin failed (it set an error or returned\n"
    "non-zero) or could not be loaded; 2 usage error; 65 invalid module; 70 trap;\n"
    "71 fuel exhausted; 72 timeout; 73 memory limit; 76 output or error larger\n"
    "than the output cap. Errors are printed on stderr.\n";

/* ---- the options ------------------------------------------------------------------ */

typedef struct call_args {
    const char *cmd;              /* "airlock plugin call" or "airlock cap call" */
    const char *plugin_path;      /* NULL: the module was given in memory */
    const char *function;
    const char *input;            /* --input (borrowed) */
    const char *input_file;       /* --input-file */
    al_kv *config;                /* owned array; strings in config_copies */
    char **config_copies;         /* owned: "KEY\0VALUE" per --config */
    size_t nconfig;
    const char **hosts;           /* owned array of argv pointers */
    size_t nhosts;
    const char **ips;
    size_t nips;
    al_host_entry *resolve;       /* owned array; strings in resolve_copies */
    char **resolve_copies;
    size_t nresolve;
    run_dir *dirs;                /* owned; each spec_copy owned */
    size_t ndirs;
    bool has_timeout, has_fuel, has_max_pages, has_max_output;
    uint64_t timeout_ms, fuel, max_pages, max_output;
    uint64_t repeat;
    int log_level;                /* AL_LOG_*, or -1: off */
    bool json;
    bool help;
} call_args;

static void call_args_free(call_args *a) {
    for (size_t i = 0; i < a->nconfig; i++) free(a->config_copies[i]);
    for (size_t i = 0; i < a->nresolve; i++) free(a->resolve_copies[i]);
    for (size_t i = 0; i < a->ndirs; i++) free(a->dirs[i].spec_copy);
    free(a->config);
    free(a->config_copies);
    free(a->hosts);
    free(a->ips);
    free(a->resolve);
    free(a->resolve_copies);
    free(a->dirs);
    memset(a, 0, sizeof *a);
}

/* Arrays for at most one entry per word of the command line. */
static bool call_args_init(call_args *a, const char *cmd, int argc) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->repeat = 1;
    a->log_level = AL_LOG_INFO;
    size_t n = (size_t)argc + 1;
    a->config = calloc(n, sizeof *a->config);
    a->config_copies = calloc(n, sizeof *a->config_copies);
    a->hosts = calloc(n, sizeof *a->hosts);
    a->ips = calloc(n, sizeof *a->ips);
    a->resolve = calloc(n, sizeof *a->resolve);
    a->resolve_copies = calloc(n, sizeof *a->resolve_copies);
    a->dirs = calloc(n, sizeof *a->dirs);
    if (a->config && a->config_copies && a->hosts && a->ips && a->resolve &&
        a->resolve_copies && a->dirs)
        return true;
    fprintf(stderr, "%s: out of memory\n", cmd);
    call_args_free(a);
    return false;
}

/* One line on stderr, "CMD: ...", and the usage exit status. */
static int usage(const call_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage(const call_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", a->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_USAGE;
}

/* Is argv[*i] option `name` ("--name VALUE" or "--name=VALUE")? Then *value
 * is its value (NULL and *rc = CLI_USAGE when it is missing). */
static bool take_option(const call_args *a, int argc, char **argv, int *i, const char *name,
                        const char **value, int *rc) {
    const char *w = argv[*i];
    size_t n = strlen(name);
    if (strncmp(w, name, n) != 0 || (w[n] != '\0' && w[n] != '=')) return false;
    if (w[n] == '=') {
        *value = w + n + 1;
    } else if (*i + 1 < argc) {
        *value = argv[++*i];
    } else {
        *value = NULL;
        *rc = usage(a, "%s: needs a value", name);
    }
    return true;
}

/* A host pattern as the egress rules take it: "*", "*.a.b" or a name of
 * letters, digits, '-' and dots (the library checks it again). */
static bool valid_host_pattern(const char *s) {
    if (!strcmp(s, "*")) return true;
    if (!strncmp(s, "*.", 2)) s += 2;
    size_t n = strlen(s);
    if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-' || strstr(s, "..")) return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '-' || *c == '.'))
            return false;
    return true;
}

static bool valid_address(const char *s) {
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* ADDRESS[/PREFIX], PREFIX at most 32 (IPv4) or 128 (IPv6). */
static bool valid_cidr(const char *s) {
    char addr[64];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof addr) return false;
    memcpy(addr, s, n);
    addr[n] = '\0';
    if (!valid_address(addr)) return false;
    if (!slash) return true;
    uint64_t prefix;
    const char *why;
    if (!strcmp(slash + 1, "0")) return true;
    if (!cli_parse_count(slash + 1, &prefix, &why)) return false;
    return prefix <= (strchr(addr, ':') ? 128u : 32u);
}

static int parse_level(const char *s) {
    static const char *const names[] = {"trace", "debug", "info", "warn", "error"};
    for (int i = 0; i < 5; i++)
        if (!strcasecmp(s, names[i])) return i;
    if (!strcasecmp(s, "off")) return -1;
    return -2;
}

static int add_config(call_args *a, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return usage(a, "--config '%s': expected KEY=VALUE", kv);
    char *copy = strdup(kv);
    if (!copy) return usage(a, "out of memory");
    copy[eq - kv] = '\0';
    /* a later --config KEY replaces an earlier one */
    for (size_t i = 0; i < a->nconfig; i++)
        if (!strcmp(a->config[i].key, copy)) {
            free(a->config_copies[i]);
            a->config_copies[i] = copy;
            a->config[i].key = copy;
            a->config[i].value = copy + (eq - kv) + 1;
            return CLI_OK;
        }
    a->config_copies[a->nconfig] = copy;
    a->config[a->nconfig].key = copy;
    a->config[a->nconfig].value = copy + (eq - kv) + 1;
    a->nconfig++;
    return CLI_OK;
}

static int add_resolve(call_args *a, const char *spec) {
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return usage(a, "--resolve '%s': expected NAME:ADDRESS", spec);
    char *copy = strdup(spec);
    if (!copy) return usage(a, "out of memory");
    copy[colon - spec] = '\0';
    const char *name = copy, *addr = copy + (colon - spec) + 1;
    if (!valid_host_pattern(name) || name[0] == '*') {
        free(copy);
        return usage(a, "--resolve '%s': not a domain name", spec);
    }
    if (!valid_address(addr)) {
        free(copy);
        return usage(a, "--resolve '%s': not an IP address", spec);
    }
    a->resolve_copies[a->nresolve] = copy;
    a->resolve[a->nresolve].name = name;
    a->resolve[a->nresolve].address = addr;
    a->nresolve++;
    return CLI_OK;
}

static int add_dir(call_args *a, const char *spec) {
    const char *why;
    run_dir *d = &a->dirs[a->ndirs];
    if (!cli_parse_dir(spec, d, &why)) return usage(a, "--allow-path '%s': %s", spec, why);
    a->ndirs++;
    if (!d->guest && d->host[0] != '/')
        return usage(a, "--allow-path '%s': give GUEST for a relative HOST path", spec);
    return CLI_OK;
}

/* A number option: "--NAME N" within [1, max]. */
static int number(const call_args *a, const char *name, const char *v, uint64_t max,
                  uint64_t *out, bool *given) {
    const char *why;
    if (!cli_parse_count(v, out, &why)) return usage(a, "%s: %s", name, why);
    if (*out > max) {
        return usage(a, "%s: at most %" PRIu64, name, max);
    }
    if (given) *given = true;
    return CLI_OK;
}

/* One option at argv[*i]; CLI_NOT_POLICY_OPTION when argv[*i] is not one. */
static int parse_option(call_args *a, int argc, char **argv, int *i) {
    const char *v = NULL;
    int rc = CLI_OK;
    const char *w = argv[*i];
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
        a->help = true;
        return CLI_OK;
    }
    if (!strcmp(w, "--json")) {
        a->json = true;
        return CLI_OK;
    }
#define OPTION(name) take_option(a, argc, argv, i, name, &v, &rc)
    if (OPTION("--input")) {
        if (rc) return rc;
        if (a->input || a->input_file) return usage(a, "--input: the input is given twice");
        a->input = v;
    } else if (OPTION("--input-file")) {
        if (rc) return rc;
        if (a->input || a->input_file)
            return usage(a, "--input-file: the input is given twice");
        if (!v[0]) return usage(a, "--input-file: empty file name");
        a->input_file = v;
    } else if (OPTION("--config")) {
        return rc ? rc : add_config(a, v);
    } else if (OPTION("--allow-host")) {
        if (rc) return rc;
        if (!valid_host_pattern(v))
            return usage(a, "--allow-host '%s': not a host name, \"*.domain\" or \"*\"", v);
        a->hosts[a->nhosts++] = v;
    } else if (OPTION("--allow-ip")) {
        if (rc) return rc;
        if (!valid_cidr(v)) return usage(a, "--allow-ip '%s': not a CIDR", v);
        a->ips[a->nips++] = v;
    } else if (OPTION("--resolve")) {
        return rc ? rc : add_resolve(a, v);
    } else if (OPTION("--allow-path")) {
        return rc ? rc : add_dir(a, v);
    } else if (OPTION("--timeout-ms")) {
        return rc ? rc : number(a, "--timeout-ms", v, UINT64_C(1000000000000), &a->timeout_ms,
                                &a->has_timeout);
    } else if (OPTION("--fuel")) {
        return rc ? rc : number(a, "--fuel", v, UINT64_MAX, &a->fuel, &a->has_fuel);
    } else if (OPTION("--max-pages")) {
        return rc ? rc : number(a, "--max-pages", v, 65536, &a->max_pages, &a->has_max_pages);
    } else if (OPTION("--max-output")) {
        if (rc) return rc;
        const char *why;
        if (!cli_parse_bytes(v, &a->max_output, &why))
            return usage(a, "--max-output '%s': %s", v, why);
        a->has_max_output = true;
    } else if (OPTION("--repeat")) {
        return rc ? rc : number(a, "--repeat", v, MAX_REPEAT, &a->repeat, NULL);
    } else if (OPTION("--log-level")) {
        if (rc) return rc;
        int level = parse_level(v);
        if (level == -2)
            return usage(a, "--log-level '%s': expected trace, debug, info, warn, error or off",
                         v);
        a->log_level = level;
    } else {
        return CLI_NOT_POLICY_OPTION;
    }
#undef OPTION
    return rc;
}

/* Options anywhere; the first `npos` other words are the positionals. */
static int parse_args(call_args *a, int argc, char **argv, const char **pos, int npos) {
    int got = 0;
    bool dashdash = false;
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (!dashdash && !strcmp(w, "--")) {
            dashdash = true;
            continue;
        }
        if (!dashdash && w[0] == '-' && w[1] != '\0') {
            int rc = parse_option(a, argc, argv, &i);
            if (rc == CLI_NOT_POLICY_OPTION) return usage(a, "unknown option '%s'", w);
            if (rc != CLI_OK) return rc;
            if (a->help) return CLI_OK;
            continue;
        }
        if (got == npos) return usage(a, "unexpected argument '%s'", w);
        pos[got++] = w;
    }
    if (got < npos)
        return usage(a, "expected %s (see --help)",
                     npos == 2 && got == 0 ? "PLUGIN and FUNCTION" : "FUNCTION");
    if (!pos[npos - 1][0]) return usage(a, "FUNCTION is empty");
    return CLI_OK;
}

/* ---- input ----------------------------------------------------------------------------- */

/* Read fd to its end, at most max bytes (more is an error, reported). */
static uint8_t *read_fd(const call_args *a, int fd, const char *name, size_t max, size_t *len) {
    size_t cap = 65536, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", a->cmd);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            if (cap > max) break;
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                fprintf(stderr, "%s: out of memory\n", a->cmd);
                free(buf);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fprintf(stderr, "%s: %s: %s\n", a->cmd, name, strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    if (n > max) {
        fprintf(stderr, "%s: %s: larger than %zu bytes\n", a->cmd, name, max);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static uint8_t *read_path(const call_args *a, const char *path, size_t max, size_t *len) {
    if (!strcmp(path, "-")) return read_fd(a, STDIN_FILENO, "stdin", max, len);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s: %s\n", a->cmd, path, strerror(errno));
        return NULL;
    }
    uint8_t *data = read_fd(a, fd, path, max, len);
    close(fd);
    return data;
}

/* ---- the run --------------------------------------------------------------------------- */

typedef struct plugin_run {
    const call_args *args;
    al_manifest *manifest;        /* owned, or NULL */
    uint8_t *wasm;                /* owned: the module when read here */
    size_t wasm_len;
    const uint8_t *module;        /* the module: wasm, or the caller's bytes */
    size_t module_len;
    uint8_t *input;               /* owned */
    size_t input_len;
    al_plugin_options options;
    al_kv *config;                /* owned: manifest config + --config */
    const char **hosts;           /* owned array */
    al_dir_grant *dirs;           /* owned array (strings borrowed) */
    al_plugin *plugin;
} plugin_run;

static void plugin_run_free(plugin_run *r) {
    al_plugin_free(r->plugin);
    al_manifest_free(r->manifest);
    free(r->wasm);
    free(r->input);
    free(r->config);
    free(r->hosts);
    free(r->dirs);
}

/* Length of the valid UTF-8 sequence at s (not a C0/C1 control, DEL, an
 * overlong form or a surrogate), or 0. */
static size_t printable_utf8(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c >= 0x20 && c < 0x7f) return 1;
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (c == 0xc2 && s[1] < 0xa0) return 0;                  /* C1 controls: 0x9b is CSI */
    if (c == 0xe0 && s[1] < 0xa0) return 0;                  /* overlong */
    if (c == 0xed && s[1] >= 0xa0) return 0;                 /* surrogates */
    if (c == 0xf0 && s[1] < 0x90) return 0;                  /* overlong */
    if (c == 0xf4 && s[1] >= 0x90) return 0;                 /* past U+10FFFF */
    return len;
}

/* Print bytes from the plugin on stderr: anything a terminal could take as
 * a control (C0, DEL, C1, invalid UTF-8) becomes '?', so a plugin cannot
 * send escape sequences to the user's terminal through a log or an error. */
static void print_untrusted(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = s[i] == '\t' ? 1 : printable_utf8(s + i, n - i);
        if (k == 0) {
            fputc('?', stderr);
            i++;
        } else {
            fwrite(s + i, 1, k, stderr);
            i += k;
        }
    }
}

static void on_log(void *ctx, int level, const char *msg, size_t len) {
    static const char *const names[] = {"trace", "debug", "info", "warn", "error"};
    (void)ctx;
    fprintf(stderr, "%s: ", level >= 0 && level <= 4 ? names[level] : "log");
    print_untrusted((const uint8_t *)msg, len);
    fputc('\n', stderr);
}

/* The manifest's options with the command line on top. */
static bool build_options(plugin_run *r) {
    const call_args *a = r->args;
    al_plugin_options *o = &r->options;
    if (r->manifest)
        *o = *al_manifest_options(r->manifest);
    else
        al_plugin_options_init(o);

    r->config = calloc(o->nconfig + a->nconfig + 1, sizeof *r->config);
    r->hosts = calloc(o->nallowed_hosts + a->nhosts + 1, sizeof *r->hosts);
    r->dirs = calloc(o->ndirs + a->ndirs + 1, sizeof *r->dirs);
    if (!r->config || !r->hosts || !r->dirs) {
        fprintf(stderr, "%s: out of memory\n", a->cmd);
        return false;
    }
    size_t nc = 0;
    for (size_t i = 0; i < o->nconfig; i++) r->config[nc++] = o->config[i];
    for (size_t i = 0; i < a->nconfig; i++) {
        size_t k = 0;
        while (k < nc && strcmp(r->config[k].key, a->config[i].key) != 0) k++;
        r->config[k] = a->config[i]; /* replaces the manifest's value, or appends */
        if (k == nc) nc++;
    }
    o->config = r->config;
    o->nconfig = nc;

    size_t nh = 0;
    for (size_t i = 0; i < o->nallowed_hosts; i++) r->hosts[nh++] = o->allowed_hosts[i];
    for (size_t i = 0; i < a->nhosts; i++) r->hosts[nh++] = a->hosts[i];
    o->allowed_hosts = r->hosts;
    o->nallowed_hosts = nh;
    if (a->nhosts) o->allow_http = true;
    o->allow_ips = a->ips;
    o->nallow_ips = a->nips;
    o->hosts = a->resolve;
    o->nhosts = a->nresolve;

    size_t nd = 0;
    for (size_t i = 0; i < o->ndirs; i++) r->dirs[nd++] = o->dirs[i];
    for (size_t i = 0; i < a->ndirs; i++) {
        r->dirs[nd].host_path = a->dirs[i].host;
        r->dirs[nd].guest_path = a->dirs[i].guest ? a->dirs[i].guest : a->dirs[i].host;
        r->dirs[nd].read_only = a->dirs[i].read_only;
        nd++;
    }
    o->dirs = r->dirs;
    o->ndirs = nd;

    if (a->has_timeout) o->timeout_ms = a->timeout_ms;
    if (a->has_fuel) o->fuel = a->fuel;
    if (a->has_max_pages) o->max_pages = (uint32_t)a->max_pages;
    if (a->has_max_output) o->max_output_bytes = a->max_output;
    if (a->log_level < 0) {
        o->on_log = NULL;
    } else {
        o->log_level = a->log_level;
        o->on_log = on_log;
        o->on_log_ctx = NULL;
    }
    return true;
}

static int load_error_code(const al_error *e) {
    return e->kind == AL_ERR_MALFORMED || e->kind == AL_ERR_INVALID ? CLI_EXIT_INVALID_MODULE
           : e->kind == AL_ERR_LIMIT                                ? CLI_EXIT_MEMORY
                                                                    : CLI_FAIL;
}

/* The exit status of one call's result. */
static int call_exit_code(const al_result *res) {
    switch (res->status) {
    case AL_STATUS_OK: return CLI_OK;
    case AL_STATUS_EXIT: return CLI_FAIL;
    case AL_STATUS_OUTPUT_TRUNCATED: return PLUGIN_EXIT_OUTPUT;
    default: {
        int code = cli_exit_code(res);
        return code == CLI_OK ? CLI_FAIL : code;
    }
    }
}

/* The plugin's error text: stderr_data (whole) or error.message. */
static void error_text(const al_result *res, const uint8_t **s, size_t *n) {
    if (res->status == AL_STATUS_EXIT && res->stderr_len) {
        *s = res->stderr_data;
        *n = res->stderr_len;
    } else {
        *s = (const uint8_t *)res->error.message;
        *n = strnlen(res->error.message, sizeof res->error.message);
    }
}

static void print_failure(const plugin_run *r, const al_result *res) {
    const call_args *a = r->args;
    const uint8_t *s;
    size_t n;
    error_text(res, &s, &n);
    fprintf(stderr, "%s: %s: ", a->cmd, a->function);
    if (res->status == AL_STATUS_EXIT) {
        if (n == 0) {
            fprintf(stderr, "plugin error: the function returned %d\n", res->exit_code);
            return;
        }
        fputs("plugin error: ", stderr);
    }
    print_untrusted(s, n < MAX_ERROR_PRINT ? n : MAX_ERROR_PRINT);
    if (n > MAX_ERROR_PRINT) fprintf(stderr, "... (%zu bytes)", n);
    fputc('\n', stderr);
}

static void print_json(const plugin_run *r, const al_result *res, uint64_t call) {
    const call_args *a = r->args;
    FILE *f = stdout;
    fputs("{\"function\": ", f);
    cli_json_string(f, (const uint8_t *)a->function, strlen(a->function));
    fprintf(f, ", \"call\": %" PRIu64 ", \"status\": ", call);
    const char *status = al_status_name(res->status);
    cli_json_string(f, (const uint8_t *)status, strlen(status));
    fprintf(f, ", \"exit_code\": %d, \"output\": ", call_exit_code(res));
    if (res->status == AL_STATUS_OK)
        cli_json_string(f, res->stdout_data, res->stdout_len);
    else
        fputs("null", f);
    fputs(", \"error\": ", f);
    if (res->status == AL_STATUS_OK) {
        fputs("null", f);
    } else {
        const uint8_t *s;
        size_t n;
        error_text(res, &s, &n);
        cli_json_string(f, s, n);
    }
    fputs(", \"trap\": ", f);
    if (res->status == AL_STATUS_TRAP && res->trap != AL_TRAP_NONE) {
        const char *t = al_trap_message(res->trap);
        cli_json_string(f, (const uint8_t *)t, strlen(t));
    } else {
        fputs("null", f);
    }
    fprintf(f, ", \"wall_ms\": %.3f, \"fuel_used\": %" PRIu64 "}\n", (double)res->wall_ns / 1e6,
            res->fuel_used);
}

/* Call the function args->repeat times; the exit status of the run. */
static int run_calls(plugin_run *r) {
    const call_args *a = r->args;
    for (uint64_t i = 0; i < a->repeat; i++) {
        al_result res;
        memset(&res, 0, sizeof res);
        if (!al_plugin_call(r->plugin, a->function, r->input, r->input_len, &res)) {
            fprintf(stderr, "%s: %s: the call produced no result: %s\n", a->cmd, a->function,
                    res.error.message[0] ? res.error.message : "(no reason given)");
            al_result_free(&res);
            return CLI_FAIL;
        }
        int code = call_exit_code(&res);
        if (a->json) {
            print_json(r, &res, i + 1);
        } else if (code == CLI_OK) {
            if (res.stdout_len) fwrite(res.stdout_data, 1, res.stdout_len, stdout);
            if (a->repeat > 1) fputc('\n', stdout);
        } else {
            fflush(stdout);
            print_failure(r, &res);
        }
        al_result_free(&res);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "%s: writing the output: %s\n", a->cmd, strerror(errno));
            return CLI_FAIL;
        }
        if (code != CLI_OK) return code;
    }
    return CLI_OK;
}

/* Everything after the module and manifest are known: input, options,
 * instance, calls. */
static int run_plugin(plugin_run *r) {
    const call_args *a = r->args;
    if (a->input_file) {
        r->input = read_path(a, a->input_file, CLI_MAX_STDIN_BYTES, &r->input_len);
        if (!r->input) return CLI_FAIL;
    } else if (a->input) {
        r->input_len = strlen(a->input);
        r->input = malloc(r->input_len + 1);
        if (!r->input) {
            fprintf(stderr, "%s: out of memory\n", a->cmd);
            return CLI_FAIL;
        }
        memcpy(r->input, a->input, r->input_len + 1);
    }
    if (!build_options(r)) return CLI_FAIL;
    const char *what = a->plugin_path ? a->plugin_path : "the capability's module";
    al_error err;
    memset(&err, 0, sizeof err);
    r->plugin = al_plugin_new(r->module, r->module_len, &r->options, &err);
    if (!r->plugin) {
        fprintf(stderr, "%s: %s: %s\n", a->cmd, what,
                err.message[0] ? err.message : "cannot instantiate the plugin");
        return load_error_code(&err);
    }
    if (!al_plugin_has_function(r->plugin, a->function)) {
        fprintf(stderr,
                "%s: %s: no function '%s' (a callable function is an export with no "
                "parameters returning i32)\n",
                a->cmd, what, a->function);
        return CLI_FAIL;
    }
    return run_calls(r);
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

/* The directory of path, for the manifest's relative paths (owned). */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static bool load_manifest(plugin_run *r, const char *path) {
    const call_args *a = r->args;
    size_t len;
    uint8_t *json = read_path(a, path, MAX_MANIFEST_BYTES, &len);
    if (!json) return false;
    char *base = dir_of(path);
    if (!base) {
        free(json);
        fprintf(stderr, "%s: out of memory\n", a->cmd);
        return false;
    }
    al_error err;
    memset(&err, 0, sizeof err);
    r->manifest = al_manifest_parse((const char *)json, len, base, &err);
    free(json);
    free(base);
    if (!r->manifest) {
        fprintf(stderr, "%s: %s: %s\n", a->cmd, path, err.message);
        return false;
    }
    if (!al_manifest_load_wasm(r->manifest, CLI_MAX_MODULE_BYTES, &r->wasm, &r->wasm_len, &err)) {
        fprintf(stderr, "%s: %s: %s\n", a->cmd, path, err.message);
        return false;
    }
    return true;
}

static int plugin_call(int argc, char **argv) {
    call_args a;
    if (!call_args_init(&a, "airlock plugin call", argc)) return CLI_FAIL;
    const char *pos[2] = {NULL, NULL};
    int rc = parse_args(&a, argc, argv, pos, 2);
    if (rc != CLI_OK || a.help) {
        if (a.help) fputs(plugin_help, stdout);
        call_args_free(&a);
        return rc;
    }
    a.plugin_path = pos[0];
    a.function = pos[1];
    plugin_run r;
    memset(&r, 0, sizeof r);
    r.args = &a;
    if (has_suffix(a.plugin_path, ".json")) {
        rc = load_manifest(&r, a.plugin_path) ? CLI_OK : CLI_FAIL;
    } else {
        r.wasm = cli_read_module_file(a.plugin_path, &r.wasm_len);
        rc = r.wasm ? CLI_OK : CLI_FAIL;
    }
    r.module = r.wasm;
    r.module_len = r.wasm_len;
    if (rc == CLI_OK) rc = run_plugin(&r);
    plugin_run_free(&r);
    call_args_free(&a);
    return rc;
}

int cli_plugin(int argc, char **argv) {
    /* argv[0] is "plugin" */
    if (argc < 2) {
        fputs("airlock plugin: expected a subcommand: call (see airlock plugin --help)\n", stderr);
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
        fputs(plugin_help, stdout);
        return CLI_OK;
    }
    if (!strcmp(sub, "call")) return plugin_call(argc - 2, argv + 2);
    fprintf(stderr, "airlock plugin: unknown subcommand '%s' (expected: call)\n", sub);
    return CLI_USAGE;
}

int cli_plugin_call_loaded(const uint8_t *wasm, size_t len, const char *manifest_json,
                           int argc, char **argv) {
    call_args a;
    if (!call_args_init(&a, "airlock cap call", argc)) return CLI_FAIL;
    const char *pos[1] = {NULL};
    int rc = parse_args(&a, argc, argv, pos, 1);
    if (rc != CLI_OK || a.help) {
        if (a.help) fputs(plugin_help, stdout);
        call_args_free(&a);
        return rc;
    }
    a.function = pos[0];
    plugin_run r;
    memset(&r, 0, sizeof r);
    r.args = &a;
    if (manifest_json && manifest_json[0]) {
        al_error err;
        memset(&err, 0, sizeof err);
        r.manifest = al_manifest_parse(manifest_json, strlen(manifest_json), NULL, &err);
        if (!r.manifest) {
            fprintf(stderr, "%s: the capability's %s\n", a.cmd, err.message);
            rc = CLI_FAIL;
        } else if (al_manifest_options(r.manifest)->ndirs > 0) {
            /* a registry must not be able to hand a plugin the caller's files */
            fprintf(stderr,
                    "%s: the capability's manifest asks for host paths (allowed_paths): "
                    "refused; grant directories with --allow-path\n", a.cmd);
            rc = CLI_FAIL;
        }
    }
    r.module = wasm;
    r.module_len = len;
    if (rc == CLI_OK) rc = run_plugin(&r);
    plugin_run_free(&r);
    call_args_free(&a);
    return rc;
}
