/*
 * run.h — what the files of `airlock run` share (run.c, run_wasi.c,
 * units.c, json_out.c), and what `airlock python` (python.c) reuses of them:
 * the policy options' parser and the WASI runner. Like every CLI file, they
 * see only airlock.h.
 *
 * Two modes:
 *   --invoke NAME [ARGS...]  engine level: instantiate with no imports and
 *                            call one function (run.c; unchanged behaviour);
 *   otherwise                a WASI command under a policy (run_wasi.c),
 *                            through al_run_wasm.
 *
 * Exit codes of the WASI mode (documented in `airlock run --help` and the
 * README); they extend cli.h's 0/1/2.
 */
#ifndef AIRLOCK_CLI_RUN_H
#define AIRLOCK_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

enum {
    CLI_EXIT_INVALID_MODULE = 65, /* sysexits EX_DATAERR */
    CLI_EXIT_TRAP = 70,           /* sysexits EX_SOFTWARE */
    CLI_EXIT_FUEL = 71,
    CLI_EXIT_TIMEOUT = 72,
    CLI_EXIT_MEMORY = 73,
    CLI_EXIT_UNAVAILABLE = 69,    /* sysexits EX_UNAVAILABLE: backend unsupported here (exec) */
    CLI_EXIT_CPU = 74,            /* exec: CPU-time limit */
    CLI_EXIT_CANCELLED = 75,      /* sysexits EX_TEMPFAIL: the embedder cancelled the run */
};

/* Largest --stdin input; the whole of it is held in memory. */
#define CLI_MAX_STDIN_BYTES ((size_t)64 << 20)

/* One --dir as written: HOST[:GUEST][:ro|:rw]. Pointers borrow from argv or
 * from the option's own copy (spec_copy, owned). */
typedef struct run_dir {
    char *spec_copy;    /* owned: HOST and GUEST point into it */
    const char *host;   /* as given */
    const char *guest;  /* NULL: the canonical host path */
    bool read_only;
} run_dir;

typedef struct run_options {
    const char *cmd;      /* "run" or "python": names the command in messages */
    const char *path;     /* MODULE */
    const char *invoke;   /* --invoke NAME; NULL: WASI command mode */
    int nargs;            /* --invoke arguments, or guest arguments after "--" */
    const char **args;    /* owned array; strings borrowed from argv (or the caller) */
    int loose_args;       /* arguments given before "--" (only --invoke takes those) */
    /* WASI command mode */
    run_dir *dirs;        /* owned */
    size_t ndirs;
    const char **env;     /* owned array of pointers into argv; later KEY wins */
    size_t nenv;
    uint64_t fuel;        /* 0: unmetered */
    uint64_t timeout_ms;  /* 0: none */
    uint64_t memory_bytes;/* 0: the policy default */
    const char *stdin_path;
    bool json;
    bool trap_on_memory_limit;
    const char *wasi_option; /* the first WASI-mode-only option seen, for messages */
    /* Set by a command that runs its own program (python.c: al_python_run)
     * instead of reading MODULE and calling al_run_wasm; path then only
     * names the program (the guest's argv[0], messages). */
    bool (*runner)(void *arg, const al_policy *policy, al_result *result);
    void *runner_arg;
} run_options;

/* run.c: the options both `airlock run` and `airlock python` take. */

/* cli_parse_policy_option's answer for a word that is not a policy option. */
enum { CLI_NOT_POLICY_OPTION = -2 };

/* Zero *opt and allocate its arrays for a command line of argc words plus
 * `extra` entries the command adds itself (each array holds at most one entry
 * per word). cmd names the command in messages. False (message printed) when
 * out of memory; cli_run_options_free is safe either way. */
bool cli_run_options_init(run_options *opt, const char *cmd, int argc, size_t extra);
void cli_run_options_free(run_options *opt);

/* Put dirs and env entries (a policy file's) before the ones already parsed,
 * so the command line's come later and win (for --env, the last KEY wins).
 * Each dirs[i].spec_copy moves into opt (set to NULL there); the env strings
 * are borrowed and must outlive opt. The arrays are replaced by ones with no
 * spare room: call it once, after parsing. False (message printed) when out
 * of memory, opt unchanged. */
bool cli_run_options_prepend(run_options *opt, run_dir *dirs, size_t ndirs,
                             const char *const *env, size_t nenv);

/* If argv[*i] is a policy option — --dir, --env, --stdin, --fuel, --timeout,
 * --memory, --trap-on-memory-limit, --json, spelled "--NAME VALUE" or
 * "--NAME=VALUE" — apply it to opt, advancing *i past a separate value.
 * Returns CLI_OK; CLI_USAGE after printing one line ("airlock CMD: ...");
 * or CLI_NOT_POLICY_OPTION, having done nothing. The options only `exec`
 * takes (egress, --policy: policy_file.h) are a usage error with the reason
 * here; exec recognises them before calling this. */
int cli_parse_policy_option(int argc, char **argv, int *i, run_options *opt);

/* python.c: `airlock python` (declared here, not in cli.h, because it is
 * built on run_options). */
int cli_python(int argc, char **argv);

/* exec.c, doctor.c: `airlock exec`, `airlock doctor`, `airlock gc`. */
int cli_exec(int argc, char **argv);
/* exec.c (also cap.c): is argv[*i] option `name`, as "--name VALUE" or
 * "--name=VALUE"? Then *value is its value (*i advanced past a separate
 * one), or NULL when the command line ends without it. */
bool cli_option_value(int argc, char **argv, int *i, const char *name, const char **value);
int cli_doctor(int argc, char **argv);
int cli_gc(int argc, char **argv);

/* mcp.c, audit.c: the service's command-line faces (they link
 * libairlock-service): `airlock mcp` (an MCP server on stdio) and
 * `airlock audit` (query airlockd's audit log). */
int cli_mcp(int argc, char **argv);
int cli_audit(int argc, char **argv);
/* plugin.c: `airlock plugin call` — an Extism-compatible plugin, output to stdout */
int cli_plugin(int argc, char **argv);
/* cap.c: `airlock cap publish|fetch|call|retry` — capabilities in an OCI registry */
int cli_cap(int argc, char **argv);
/* plugin.c: `plugin call`'s options and output for a module already in
 * memory (cap.c's `airlock cap call URN FUNCTION ...`). argv[0] is FUNCTION,
 * the rest are call's options; manifest_json (the capability's plugin
 * manifest, no wasm sources) may be NULL. Returns the exit status. */
int cli_plugin_call_loaded(const uint8_t *wasm, size_t len, const char *manifest_json,
                           int argc, char **argv);

/* run_wasi.c: the exit status of a result (run, python and exec). */
int cli_exit_code(const al_result *r);

/* run_wasi.c: run opt->path as a WASI command; returns the exit code. */
int cli_run_wasi(const run_options *opt);

/* units.c: strict parsers for option values. On failure *why says what is
 * wrong, in a few words. */
bool cli_parse_duration_ms(const char *s, uint64_t *ms, const char **why);
bool cli_parse_size(const char *s, uint64_t *bytes, const char **why);
bool cli_parse_count(const char *s, uint64_t *n, const char **why);
/* A size with K/M/G suffix and no wasm bounds (cli_parse_size adds 64K..4G). */
bool cli_parse_bytes(const char *s, uint64_t *bytes, const char **why);
bool cli_parse_dir(const char *s, run_dir *out, const char **why);
bool cli_parse_env(const char *s, const char **why);

/* json_out.c */
typedef struct cli_json_dir {
    const char *host;   /* canonical; NULL when it could not be resolved */
    const char *guest;
    bool read_only;
} cli_json_dir;

/* A JSON string literal for arbitrary bytes (see json_out.c). */
void cli_json_string(FILE *f, const uint8_t *s, size_t len);
/* The whole result as one JSON object and a newline. */
void cli_json_write_result(FILE *f, const al_result *r, const cli_json_dir *dirs, size_t ndirs);

#endif
