/*
 * mcp.c — `airlock mcp [--config FILE]`: the Model Context Protocol server
 * on stdio (MCP's stdio transport), for agents that start airlock as a
 * subprocess.
 *
 * A thin loop over the service layer: the config is loaded like airlockd's
 * (svc_config_load; defaults without --config), one svc object is built
 * (svc_new: no HTTP listener, no pool use), and every line read from stdin
 * is one JSON-RPC message handed to svc_mcp_handle, whose answer is written
 * to stdout as one line. Executions run inline, one at a time, with the
 * caller {no token, source "mcp-stdio"}: whoever can start this process
 * already runs as our user, so there is nothing to authenticate.
 *
 * Invariants:
 *   - stdout carries nothing but MCP messages, each one line (jansson
 *     escapes newlines inside strings, and compact output has no others);
 *     diagnostics go to stderr;
 *   - a line is read with a bound (the config's max_body_bytes): a longer
 *     one is skipped to its newline and answered with a parse error, so a
 *     hostile client cannot make us buffer without limit;
 *   - bytes that are not one JSON value (invalid UTF-8, NUL escapes,
 *     duplicate keys, trailing text) get -32700 with id null;
 *   - end of input, or an output error (the client went away: SIGPIPE is
 *     ignored by main, so writes fail with EPIPE), ends the loop cleanly:
 *     everything is freed and the exit status is 0 (1 when writing failed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "service.h"

static const char mcp_usage[] =
    "usage: airlock mcp [--config FILE]\n"
    "\n"
    "Serve the Model Context Protocol (revision 2025-11-25; 2025-06-18 and\n"
    "2025-03-26 accepted) on stdin/stdout: one JSON-RPC message per line.\n"
    "Tools: run_python, run_command, run_wasm, with airlockd's limits, allowed\n"
    "paths, audit log and output redaction, taken from FILE (airlockd's YAML\n"
    "configuration; without it, the defaults). Logs go to stderr.\n"
    "  --config FILE   airlockd's configuration file\n"
    "exit status: 0 input ended, 1 setup or output failed, 2 usage\n";

typedef enum line_status { LINE_OK, LINE_EOF, LINE_TOO_LONG, LINE_NOMEM } line_status;

/* One line of at most max bytes (without its '\n', '\r' before it dropped)
 * into *buf (grown as needed, owned by the caller). A longer line is read
 * to its end and dropped. A last line without '\n' still counts. */
static line_status read_line(FILE *in, char **buf, size_t *cap, size_t max, size_t *len) {
    size_t n = 0;
    bool too_long = false;
    int c;
    if (!*buf) {
        *cap = max + 1 < 4096 ? max + 1 : 4096;
        if (!(*buf = malloc(*cap))) return LINE_NOMEM;
    }
    while ((c = getc_unlocked(in)) != EOF && c != '\n') {
        if (too_long) continue;
        if (n == max) {
            too_long = true;
            continue;
        }
        if (n + 1 >= *cap) {
            size_t want = *cap * 2;
            if (want > max + 1) want = max + 1;
            char *p = realloc(*buf, want);
            if (!p) return LINE_NOMEM;
            *buf = p;
            *cap = want;
        }
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && n == 0 && !too_long) return LINE_EOF;
    if (too_long) return LINE_TOO_LONG;
    if (n > 0 && (*buf)[n - 1] == '\r') n--;
    (*buf)[n] = 0;
    *len = n;
    return LINE_OK;
}

/* One message, one line; false when stdout is gone. Reals with 15
 * significant digits (what a double holds exactly): wall_ms reads 12.342,
 * not 12.342000000000001. */
static bool write_message(const json_t *msg) {
    if (!msg) return true;
    size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(15);
    if (json_dumpf(msg, stdout, flags) != 0 || fputc('\n', stdout) == EOF ||
        fflush(stdout) != 0) {
        fprintf(stderr, "airlock mcp: writing to stdout: %s\n", strerror(errno));
        return false;
    }
    return true;
}

static bool blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t') return false;
    return true;
}

/* Parse one line and answer it; false when stdout is gone. */
static bool serve_line(svc *s, svc_mcp_state *st, const char *line, size_t len,
                       const svc_caller *caller) {
    if (blank(line, len)) return true;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *response;
    if (!msg) {
        char detail[200];
        snprintf(detail, sizeof detail, "%s (column %d)", jerr.text, jerr.column);
        response = svc_mcp_parse_error(detail);
    } else {
        response = svc_mcp_handle(s, st, msg, caller);
        json_decref(msg);
    }
    bool ok = write_message(response);
    json_decref(response);
    return ok;
}

/* The loop: until end of input or a dead stdout. */
static int serve(svc *s, size_t max_line) {
    svc_mcp_state *st = svc_mcp_state_new();
    if (!st) {
        fputs("airlock mcp: out of memory\n", stderr);
        return CLI_FAIL;
    }
    svc_caller caller = {.token = NULL, .source = "mcp-stdio"};
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = CLI_OK;
    for (;;) {
        line_status ls = read_line(stdin, &buf, &cap, max_line, &len);
        if (ls == LINE_EOF) break;
        if (ls == LINE_NOMEM) {
            fputs("airlock mcp: out of memory reading a message\n", stderr);
            rc = CLI_FAIL;
            break;
        }
        bool ok;
        if (ls == LINE_TOO_LONG) {
            char detail[96];
            snprintf(detail, sizeof detail, "message longer than %zu bytes", max_line);
            json_t *response = svc_mcp_parse_error(detail);
            ok = write_message(response);
            json_decref(response);
        } else {
            ok = serve_line(s, st, buf, len, &caller);
        }
        if (!ok) {
            rc = CLI_FAIL;
            break;
        }
    }
    free(buf);
    svc_mcp_state_free(st);
    return rc;
}

/* --config FILE or --config=FILE; *path NULL when not given. CLI_OK,
 * CLI_USAGE (message printed), or -1 for --help (printed). */
static int parse_args(int argc, char **argv, const char **path) {
    *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(mcp_usage, stdout);
            return -1;
        }
        if (!strcmp(a, "--config") && i + 1 < argc) {
            *path = argv[++i];
        } else if (!strncmp(a, "--config=", 9) && a[9]) {
            *path = a + 9;
        } else {
            fprintf(stderr, "airlock mcp: unexpected argument '%s'\n", a);
            fputs(mcp_usage, stderr);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

int cli_mcp(int argc, char **argv) {
    const char *path;
    int rc = parse_args(argc, argv, &path);
    if (rc == -1) return CLI_OK;
    if (rc != CLI_OK) return rc;

    svc_config cfg;
    char err[512];
    svc_config_defaults(&cfg);
    if (path && !svc_config_load(path, &cfg, err, sizeof err)) {
        fprintf(stderr, "airlock mcp: %s: %s\n", path, err);
        svc_config_free(&cfg);
        return CLI_FAIL;
    }
    size_t max_line = cfg.max_body_bytes ? cfg.max_body_bytes : (size_t)16 << 20;
    svc *s = svc_new(&cfg, err, sizeof err);
    svc_config_free(&cfg);
    if (!s) {
        fprintf(stderr, "airlock mcp: %s\n", err);
        return CLI_FAIL;
    }
    fprintf(stderr, "airlock mcp: serving MCP on stdio (airlock %s)\n", AIRLOCK_VERSION);
    rc = serve(s, max_line);
    svc_free(s);
    return rc;
}
