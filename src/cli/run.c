/*
 * run.c — `airlock run`: the command line, and the engine-level mode.
 *
 *   airlock run [OPTIONS] MODULE.wasm [-- ARGS...]
 *       run MODULE as a WASI command under a policy (run_wasi.c);
 *   airlock run MODULE.wasm --invoke NAME [ARGS...]
 *       the engine-level mode, here: instantiate MODULE in a fresh store with
 *       default limits and no imports, call one exported function and print
 *       each result on its own line:
 *   i32, i64   signed decimal
 *   f32        "%.9g"  (9 significant digits: enough to round-trip any f32)
 *   f64        "%.17g" (17 significant digits: enough to round-trip any f64)
 *              NaN prints as "nan" or "-nan" by its sign bit, infinities as
 *              "inf" / "-inf"
 *   funcref, externref   "null" or "ref"
 *
 * ARGS of --invoke come from the command line and are parsed strictly against
 * the function's parameter types: a wrong count, trailing junk or an
 * out-of-range value is a usage error (exit 2) and the function is not
 * called. Integers are decimal and may be given signed or unsigned (an i32
 * accepts -2147483648..4294967295, so 4294967295 and -1 are the same bits);
 * floats are decimal (with optional exponent) or nan, inf, -inf.
 *
 * Command line: options are recognised anywhere before "--" (so --invoke may
 * follow MODULE, as it always could); only the exact option spellings are
 * options, so words like "-5" or "-nan" are arguments. Every usage error is
 * one line on stderr and exit status 2, before any file is touched. The WASI
 * options cannot be combined with --invoke, and without --invoke the guest's
 * arguments must follow "--" (a stray word is a usage error, not a guess).
 * The policy options (everything but --invoke) are parsed by
 * cli_parse_policy_option, which `airlock python` shares, so both commands
 * take the same spellings, values and messages.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy_file.h"
#include "run.h"

static const char run_usage[] =
    "usage: airlock run [OPTIONS] MODULE.wasm [-- ARGS...]\n"
    "       airlock run MODULE.wasm --invoke NAME [ARGS...]\n"
    "\n"
    "Run MODULE as a WASI command: its \"_start\" is called with the\n"
    "wasi_snapshot_preview1 imports and nothing else. Zero trust: the guest gets\n"
    "no files, no environment, no network and an empty stdin unless an option\n"
    "below grants them. Its stdout and stderr are captured (1 MiB each; the rest\n"
    "is dropped) and written to airlock's own stdout and stderr when it ends.\n"
    "ARGS after \"--\" are the guest's arguments; its argv[0] is MODULE's file name.\n"
    "\n"
    "options (before \"--\"; --NAME=VALUE works too):\n"
    "  --dir HOST[:GUEST][:ro|:rw]\n"
    "                 let the guest use the host directory HOST as GUEST, an\n"
    "                 absolute path (default: HOST's canonical path). Read-only\n"
    "                 unless \":rw\" is given. \"HOST::rw\" keeps the default GUEST;\n"
    "                 HOST may contain ':' only when GUEST is given. Repeatable.\n"
    "  --env KEY=VALUE\n"
    "                 set an environment variable (repeatable; the last KEY\n"
    "                 wins). airlock's own environment is never passed on.\n"
    "  --stdin FILE   the guest reads FILE as its stdin (\"-\": airlock's own\n"
    "                 stdin; at most 64 MiB). Default: empty.\n"
    "  --fuel N       stop the guest after about N wasm instructions (bulk\n"
    "                 memory operations: one per byte). Default: unmetered.\n"
    "  --timeout T    stop the guest after T of wall-clock time: 500ms, 30s, 2m,\n"
    "                 1h; a plain number is seconds. Default: none.\n"
    "  --memory SIZE  the most each linear memory may grow to, 64K..4G: 64K, 16M,\n"
    "                 1G (binary units); a plain number is bytes. Default: 256M.\n"
    "                 memory.grow past it returns -1, as if memory were full.\n"
    "  --trap-on-memory-limit\n"
    "                 memory.grow past --memory stops the guest instead\n"
    "  --json         print one JSON object on stdout instead of the guest's\n"
    "                 output: status, exit_code, trap, trap_location (with\n"
    "                 backtrace), fuel_used, wall_ms, peak_memory_bytes, stdout,\n"
    "                 stdout_truncated, stderr, stderr_truncated, dirs (canonical\n"
    "                 host paths), error. Output bytes that are not UTF-8 become\n"
    "                 U+FFFD. Nothing is printed on stderr.\n"
    "\n"
    "exit status:\n"
    "  0..255  the guest's exit code (0 when _start returns); also when output\n"
    "          was cut at its cap, with a warning on stderr\n"
    "  1       error: unreadable file, bad --dir, link error (an import that is\n"
    "          not WASI), no _start\n"
    "  2       usage error\n"
    "  65      invalid module: not wasm, malformed, invalid, or over 50 MiB\n"
    "  70      trap          71  fuel exhausted\n"
    "  72      timeout       73  memory limit\n"
    "A guest exit code equal to one of these is told apart only by --json.\n"
    "\n"
    "--invoke NAME [ARGS...]: the engine-level mode. Instantiate MODULE with no\n"
    "imports and call its exported function NAME with ARGS, which may come before\n"
    "or after MODULE; use --invoke=NAME for names that start with '-'. ARGS are\n"
    "parsed by the function's parameter types:\n"
    "  i32, i64   decimal integer, signed or unsigned (e.g. -1, 4294967295)\n"
    "  f32, f64   decimal number (e.g. 1.5, -2e-3), nan, -nan, inf, -inf\n"
    "  externref  null, or a non-zero decimal token\n"
    "  funcref    null\n"
    "Each result is printed on its own line (f32 as %.9g, f64 as %.17g).\n"
    "exit status: 0 ok, 1 module error or trap, 2 usage or argument error\n";

/* ---- argument parsing ----------------------------------------------------- */

static const char *valtype_name(uint8_t t) {
    switch (t) {
    case AL_I32: return "i32";
    case AL_I64: return "i64";
    case AL_F32: return "f32";
    case AL_F64: return "f64";
    case AL_FUNCREF: return "funcref";
    case AL_EXTERNREF: return "externref";
    }
    return "unknown";
}

/* A decimal integer: optional sign, then one or more digits, nothing else
 * (no whitespace, no hex: strtoll would accept both silently). The magnitude
 * must fit in 64 bits. */
static bool parse_decimal(const char *s, bool *neg, uint64_t *mag) {
    *neg = false;
    if (*s == '+' || *s == '-')
        *neg = *s++ == '-';
    if (*s == '\0')
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *mag = v;
    return true;
}

/* A decimal float: [+-] (digits [. digits] | . digits) [(e|E) [+-] digits].
 * Checked by hand because strtod also takes hex floats, "nan(...)",
 * "infinity" and leading whitespace. */
static bool is_decimal_float(const char *s) {
    if (*s == '+' || *s == '-')
        s++;
    size_t int_digits = strspn(s, "0123456789");
    s += int_digits;
    size_t frac_digits = 0;
    if (*s == '.') {
        s++;
        frac_digits = strspn(s, "0123456789");
        s += frac_digits;
    }
    if (int_digits + frac_digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        size_t exp_digits = strspn(s, "0123456789");
        if (exp_digits == 0)
            return false;
        s += exp_digits;
    }
    return *s == '\0';
}

/* nan, inf and their signed forms. Returns 'n' or 'i' (sign in *neg), or 0. */
static char float_special(const char *s, bool *neg) {
    *neg = false;
    if (*s == '+' || *s == '-')
        *neg = *s++ == '-';
    if (!strcasecmp(s, "nan"))
        return 'n';
    if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity"))
        return 'i';
    return 0;
}

static bool parse_f32(const char *s, uint32_t *bits, const char **why) {
    bool neg;
    char special = float_special(s, &neg);
    if (special == 'n') {
        *bits = (neg ? 0x80000000u : 0) | 0x7fc00000u; /* canonical NaN */
        return true;
    }
    if (special == 'i') {
        *bits = (neg ? 0x80000000u : 0) | 0x7f800000u;
        return true;
    }
    if (!is_decimal_float(s)) {
        *why = "not a decimal number, nan, inf or -inf";
        return false;
    }
    errno = 0;
    float f = strtof(s, NULL); /* rounds once, straight to binary32 */
    if (isinf(f)) {
        *why = "out of range for f32";
        return false;
    }
    memcpy(bits, &f, sizeof f);
    return true;
}

static bool parse_f64(const char *s, uint64_t *bits, const char **why) {
    bool neg;
    char special = float_special(s, &neg);
    if (special == 'n') {
        *bits = (neg ? UINT64_C(0x8000000000000000) : 0) | UINT64_C(0x7ff8000000000000);
        return true;
    }
    if (special == 'i') {
        *bits = (neg ? UINT64_C(0x8000000000000000) : 0) | UINT64_C(0x7ff0000000000000);
        return true;
    }
    if (!is_decimal_float(s)) {
        *why = "not a decimal number, nan, inf or -inf";
        return false;
    }
    errno = 0;
    double d = strtod(s, NULL);
    if (isinf(d)) {
        *why = "out of range for f64";
        return false;
    }
    memcpy(bits, &d, sizeof d);
    return true;
}

/* Parse one command-line argument as a value of type t. */
static bool parse_value(const char *s, uint8_t t, al_value *out, const char **why) {
    bool neg;
    uint64_t mag;
    memset(out, 0, sizeof *out);
    out->type = (al_valtype)t;
    switch (t) {
    case AL_I32:
        if (!parse_decimal(s, &neg, &mag)) {
            *why = "not a decimal integer";
            return false;
        }
        if (neg ? mag > UINT64_C(0x80000000) : mag > UINT32_MAX) {
            *why = "out of range for i32 (-2147483648..4294967295)";
            return false;
        }
        /* Two's complement wrap, spelled without implementation-defined casts. */
        out->of.i32 = neg ? (mag == UINT64_C(0x80000000) ? INT32_MIN : -(int32_t)mag)
                          : (mag > INT32_MAX ? (int32_t)((int64_t)mag - INT64_C(0x100000000))
                                             : (int32_t)mag);
        return true;
    case AL_I64:
        if (!parse_decimal(s, &neg, &mag)) {
            *why = "not a decimal integer in i64 range";
            return false;
        }
        if (neg && mag > UINT64_C(0x8000000000000000)) {
            *why = "out of range for i64 (-9223372036854775808..18446744073709551615)";
            return false;
        }
        if (neg)
            out->of.i64 = mag == UINT64_C(0x8000000000000000) ? INT64_MIN : -(int64_t)mag;
        else
            out->of.i64 = mag > INT64_MAX ? (int64_t)(mag - INT64_MAX - 1) + INT64_MIN
                                          : (int64_t)mag;
        return true;
    case AL_F32:
        return parse_f32(s, &out->of.f32_bits, why);
    case AL_F64:
        return parse_f64(s, &out->of.f64_bits, why);
    case AL_FUNCREF:
        if (strcmp(s, "null") != 0) {
            *why = "only null can be passed as a funcref";
            return false;
        }
        out->of.funcref = NULL;
        return true;
    case AL_EXTERNREF:
        if (!strcmp(s, "null")) {
            out->of.externref = 0;
            return true;
        }
        if (!parse_decimal(s, &neg, &mag) || neg || mag == 0 || mag > UINTPTR_MAX) {
            *why = "expected null or a non-zero decimal token";
            return false;
        }
        out->of.externref = (uintptr_t)mag;
        return true;
    }
    *why = "parameter type not supported by the CLI";
    return false;
}

static void print_signature(FILE *f, const al_functype *type) {
    fputc('(', f);
    for (uint32_t i = 0; i < type->nparams; i++)
        fprintf(f, "%s%s", i ? ", " : "", valtype_name(type->params[i]));
    fputs(") -> (", f);
    for (uint32_t i = 0; i < type->nresults; i++)
        fprintf(f, "%s%s", i ? ", " : "", valtype_name(type->results[i]));
    fputc(')', f);
}

/* ---- result printing ------------------------------------------------------ */

static void print_value(const al_value *v) {
    switch (v->type) {
    case AL_I32:
        printf("%" PRId32 "\n", v->of.i32);
        return;
    case AL_I64:
        printf("%" PRId64 "\n", v->of.i64);
        return;
    case AL_F32: {
        uint32_t b = v->of.f32_bits;
        if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu)) {
            puts(b >> 31 ? "-nan" : "nan");
            return;
        }
        float f;
        memcpy(&f, &b, sizeof f);
        printf("%.9g\n", (double)f);
        return;
    }
    case AL_F64: {
        uint64_t b = v->of.f64_bits;
        if ((b & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000) &&
            (b & UINT64_C(0x000fffffffffffff))) {
            puts(b >> 63 ? "-nan" : "nan");
            return;
        }
        double d;
        memcpy(&d, &b, sizeof d);
        printf("%.17g\n", d);
        return;
    }
    case AL_FUNCREF:
        puts(v->of.funcref ? "ref" : "null");
        return;
    case AL_EXTERNREF:
        puts(v->of.externref ? "ref" : "null");
        return;
    }
    puts("?");
}

/* ---- the policy options (shared with `airlock python`) ---------------------- */

typedef enum policy_opt_id {
    OPT_DIR, OPT_ENV, OPT_FUEL, OPT_TIMEOUT, OPT_MEMORY, OPT_STDIN, OPT_JSON,
    OPT_TRAP_ON_MEMORY_LIMIT,
} policy_opt_id;

/* The options, by their exact spelling. */
static const struct policy_opt {
    const char *name;
    policy_opt_id id;
    bool takes_value;
} policy_opts[] = {
    {"--dir", OPT_DIR, true},         {"--env", OPT_ENV, true},
    {"--fuel", OPT_FUEL, true},       {"--timeout", OPT_TIMEOUT, true},
    {"--memory", OPT_MEMORY, true},   {"--stdin", OPT_STDIN, true},
    {"--json", OPT_JSON, false},
    {"--trap-on-memory-limit", OPT_TRAP_ON_MEMORY_LIMIT, false},
};

/* Is a the option name, alone ("--name") or with a value ("--name=value")? */
static bool option_word(const char *a, const char *name, const char **inline_value) {
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] != '\0' && a[n] != '=') return false;
    *inline_value = a[n] == '=' ? a + n + 1 : NULL;
    return true;
}

static const struct policy_opt *find_policy_option(const char *a, const char **inline_value) {
    for (size_t i = 0; i < sizeof policy_opts / sizeof *policy_opts; i++)
        if (option_word(a, policy_opts[i].name, inline_value)) return &policy_opts[i];
    return NULL;
}

bool cli_run_options_init(run_options *opt, const char *cmd, int argc, size_t extra) {
    memset(opt, 0, sizeof *opt);
    opt->cmd = cmd;
    size_t n = (size_t)argc + extra;
    opt->args = calloc(n, sizeof *opt->args);
    opt->env = calloc(n, sizeof *opt->env);
    opt->dirs = calloc(n, sizeof *opt->dirs);
    if (opt->args && opt->env && opt->dirs) return true;
    fputs("airlock: out of memory\n", stderr);
    return false;
}

void cli_run_options_free(run_options *opt) {
    for (size_t i = 0; i < opt->ndirs; i++) free(opt->dirs[i].spec_copy);
    free(opt->dirs);
    free(opt->env);
    free(opt->args);
}

static int usage_error(const run_options *opt, const char *name, const char *value,
                       const char *why) {
    if (value)
        fprintf(stderr, "airlock %s: %s '%s': %s\n", opt->cmd, name, value, why);
    else
        fprintf(stderr, "airlock %s: %s: %s\n", opt->cmd, name, why);
    return CLI_USAGE;
}

/* --env KEY=VALUE: a later entry for the same KEY replaces the earlier one. */
static void add_env(run_options *opt, const char *entry) {
    size_t keylen = (size_t)(strchr(entry, '=') - entry) + 1; /* with the '=' */
    for (size_t i = 0; i < opt->nenv; i++) {
        if (!strncmp(opt->env[i], entry, keylen)) {
            opt->env[i] = entry;
            return;
        }
    }
    opt->env[opt->nenv++] = entry;
}

bool cli_run_options_prepend(run_options *opt, run_dir *dirs, size_t ndirs,
                             const char *const *env, size_t nenv) {
    run_dir *all_dirs = calloc(ndirs + opt->ndirs + 1, sizeof *all_dirs);
    const char **all_env = calloc(nenv + opt->nenv + 1, sizeof *all_env);
    if (!all_dirs || !all_env) {
        free(all_dirs);
        free(all_env);
        fputs("airlock: out of memory\n", stderr);
        return false;
    }
    for (size_t i = 0; i < ndirs; i++) {
        all_dirs[i] = dirs[i];
        dirs[i].spec_copy = NULL; /* moved: opt frees it now */
    }
    if (opt->ndirs) memcpy(all_dirs + ndirs, opt->dirs, opt->ndirs * sizeof *all_dirs);
    free(opt->dirs);
    opt->dirs = all_dirs;
    opt->ndirs += ndirs;
    /* the file's entries first, then the command line's: a later KEY wins */
    const char **flags_env = opt->env;
    size_t nflags_env = opt->nenv;
    opt->env = all_env;
    opt->nenv = 0;
    for (size_t i = 0; i < nenv; i++) add_env(opt, env[i]);
    for (size_t i = 0; i < nflags_env; i++) add_env(opt, flags_env[i]);
    free(flags_env);
    return true;
}

/* A scalar option may be given once: a second value is more likely a mistake
 * (two scripts' flags concatenated) than a wish to override. */
static int once(const run_options *opt, bool already, const char *name) {
    if (!already) return CLI_OK;
    fprintf(stderr, "airlock %s: %s given twice\n", opt->cmd, name);
    return CLI_USAGE;
}

/* Apply one option and its value; CLI_OK or CLI_USAGE (message printed). */
static int apply_policy_option(run_options *opt, const struct policy_opt *o, const char *v) {
    const char *why = NULL;
    switch (o->id) {
    case OPT_DIR:
        if (!cli_parse_dir(v, &opt->dirs[opt->ndirs], &why))
            return usage_error(opt, o->name, v, why);
        opt->ndirs++;
        return CLI_OK;
    case OPT_ENV:
        if (!cli_parse_env(v, &why)) return usage_error(opt, o->name, v, why);
        add_env(opt, v);
        return CLI_OK;
    case OPT_FUEL:
        if (once(opt, opt->fuel != 0, o->name)) return CLI_USAGE;
        return cli_parse_count(v, &opt->fuel, &why) ? CLI_OK : usage_error(opt, o->name, v, why);
    case OPT_TIMEOUT:
        if (once(opt, opt->timeout_ms != 0, o->name)) return CLI_USAGE;
        return cli_parse_duration_ms(v, &opt->timeout_ms, &why) ? CLI_OK
                                                                : usage_error(opt, o->name, v, why);
    case OPT_MEMORY:
        if (once(opt, opt->memory_bytes != 0, o->name)) return CLI_USAGE;
        return cli_parse_size(v, &opt->memory_bytes, &why) ? CLI_OK
                                                           : usage_error(opt, o->name, v, why);
    case OPT_STDIN:
        if (once(opt, opt->stdin_path != NULL, o->name)) return CLI_USAGE;
        if (!v[0]) return usage_error(opt, o->name, v, "empty file name");
        opt->stdin_path = v;
        return CLI_OK;
    case OPT_JSON:
        opt->json = true;
        return CLI_OK;
    case OPT_TRAP_ON_MEMORY_LIMIT:
        opt->trap_on_memory_limit = true;
        return CLI_OK;
    }
    return CLI_USAGE;
}

/* The egress options and --policy belong to `airlock exec`: a WebAssembly
 * guest has no sockets, so a grant here could only be a misunderstanding,
 * answered with a reason rather than "unknown option". */
static int exec_only(const run_options *opt, const char *name) {
    fprintf(stderr, "airlock %s: %s: only 'airlock exec' takes this option%s\n", opt->cmd, name,
            strcmp(name, "--policy") ? " (network egress is for native and gVisor sandboxes; "
                                       "a WebAssembly guest has no sockets)"
                                     : "");
    return CLI_USAGE;
}

int cli_parse_policy_option(int argc, char **argv, int *i, run_options *opt) {
    const char *value = NULL;
    const struct policy_opt *o = find_policy_option(argv[*i], &value);
    if (!o) {
        const char *only = cli_exec_only_option(argv[*i]);
        return only ? exec_only(opt, only) : CLI_NOT_POLICY_OPTION;
    }
    if (!o->takes_value && value) return usage_error(opt, o->name, NULL, "takes no value");
    if (o->takes_value && !value) {
        if (*i + 1 >= argc) return usage_error(opt, o->name, NULL, "needs a value");
        value = argv[++*i];
    }
    if (!opt->wasi_option) opt->wasi_option = o->name;
    return apply_policy_option(opt, o, value);
}

/* ---- the command line of `airlock run` ---------------------------------------- */

/* --invoke NAME, its value inline ("--invoke=NAME") or the next word. */
static int parse_invoke(int argc, char **argv, int *i, const char *value, run_options *opt) {
    if (!value) {
        if (*i + 1 >= argc) {
            fputs("airlock run: --invoke needs a function name\n", stderr);
            return CLI_USAGE;
        }
        value = argv[++*i];
    }
    if (once(opt, opt->invoke != NULL, "--invoke")) return CLI_USAGE;
    opt->invoke = value;
    return CLI_OK;
}

/* One word before "--" that starts with "--": --invoke or a policy option.
 * *i is advanced past a consumed value. */
static int parse_one_option(int argc, char **argv, int *i, run_options *opt) {
    const char *value = NULL;
    if (option_word(argv[*i], "--invoke", &value)) return parse_invoke(argc, argv, i, value, opt);
    int rc = cli_parse_policy_option(argc, argv, i, opt);
    if (rc != CLI_NOT_POLICY_OPTION) return rc;
    fprintf(stderr, "airlock run: unknown option '%s' (see 'airlock run --help')\n", argv[*i]);
    return CLI_USAGE;
}

/* After the whole line is read: the modes' rules. */
static int check_mode(const run_options *opt, const char *first_loose) {
    if (!opt->path) {
        fputs("airlock run: missing MODULE.wasm (usage: airlock run [OPTIONS] MODULE.wasm "
              "[-- ARGS...]; see 'airlock run --help')\n",
              stderr);
        return CLI_USAGE;
    }
    if (opt->invoke && opt->wasi_option) {
        fprintf(stderr,
                "airlock run: %s cannot be used with --invoke, which calls one function "
                "with no imports\n",
                opt->wasi_option);
        return CLI_USAGE;
    }
    if (!opt->invoke && first_loose) {
        fprintf(stderr,
                "airlock run: unexpected argument '%s' (the guest's arguments go after '--')\n",
                first_loose);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Returns CLI_OK, CLI_USAGE, CLI_FAIL (out of memory) or -1 after --help.
 * Every word that is not an option is MODULE (the first) or an argument. */
static int parse_options(int argc, char **argv, run_options *opt) {
    if (!cli_run_options_init(opt, "run", argc, 0)) return CLI_FAIL;
    bool options_done = false;
    const char *first_loose = NULL; /* first argument given before "--" */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done) {
            if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                fputs(run_usage, stdout);
                return -1;
            }
            if (!strcmp(a, "--")) {
                options_done = true;
                continue;
            }
            if (a[0] == '-' && a[1] == '-') {
                int rc = parse_one_option(argc, argv, &i, opt);
                if (rc != CLI_OK) return rc;
                continue;
            }
        }
        if (!opt->path) {
            opt->path = a;
            continue;
        }
        if (!options_done && !first_loose) first_loose = a;
        opt->args[opt->nargs++] = argv[i];
    }
    return check_mode(opt, first_loose);
}

static void list_function_exports(const al_module *module) {
    uint32_t n = al_module_export_count(module);
    int shown = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        al_extern_kind kind;
        if (al_module_export(module, i, &name, &kind) && kind == AL_EXTERN_FUNC) {
            if (shown == 0)
                fputs("airlock: exported functions:", stderr);
            if (shown == 20) {
                fputs(" ...", stderr);
                break;
            }
            fprintf(stderr, " %s", name);
            shown++;
        }
    }
    if (shown)
        fputc('\n', stderr);
    else
        fputs("airlock: the module exports no functions\n", stderr);
}

/* Convert the command-line arguments; prints the reason and returns false on
 * a wrong count or a value that does not parse. */
static bool convert_args(const char *fname, const al_functype *type, const run_options *opt,
                         al_value *vals) {
    if ((uint32_t)opt->nargs != type->nparams) {
        fprintf(stderr, "airlock run: %s expects %" PRIu32 " argument%s, got %d; its type is ",
                fname, type->nparams, type->nparams == 1 ? "" : "s", opt->nargs);
        print_signature(stderr, type);
        fputc('\n', stderr);
        return false;
    }
    for (uint32_t i = 0; i < type->nparams; i++) {
        const char *why = "invalid value";
        if (!parse_value(opt->args[i], type->params[i], &vals[i], &why)) {
            fprintf(stderr, "airlock run: argument %" PRIu32 " of %s ('%s'): %s: %s\n", i + 1,
                    fname, opt->args[i], valtype_name(type->params[i]), why);
            return false;
        }
    }
    return true;
}

/* The engine-level mode: --invoke NAME [ARGS...] with no imports. */
static int run_invoke(const run_options *opt) {
    const char *fname = opt->invoke;
    al_module *module = NULL;
    al_store *store = NULL;
    al_imports *imports = NULL;
    al_value *vals = NULL, *results = NULL;
    al_error err;
    memset(&err, 0, sizeof err);
    int rc = CLI_FAIL;

    module = cli_load_module(opt->path);
    if (!module)
        goto out;
    store = al_store_new(NULL);
    imports = al_imports_new();
    if (!store || !imports) {
        fputs("airlock: out of memory\n", stderr);
        goto out;
    }
    al_instance *instance = al_instantiate(store, module, imports, &err);
    if (!instance) {
        cli_print_error(opt->path, &err);
        uint32_t nimports = al_module_import_count(module);
        if (err.kind == AL_ERR_LINK && nimports > 0)
            fprintf(stderr,
                    "airlock: note: `airlock run --invoke` provides no imports, and this module "
                    "needs %" PRIu32 "\n",
                    nimports);
        goto out;
    }

    al_extern ext;
    if (!al_instance_export(instance, fname, &ext)) {
        fprintf(stderr, "airlock: %s: no export named '%s'\n", opt->path, fname);
        list_function_exports(module);
        goto out;
    }
    if (ext.kind != AL_EXTERN_FUNC) {
        fprintf(stderr, "airlock: %s: export '%s' is not a function\n", opt->path, fname);
        goto out;
    }
    const al_functype *type = al_func_type(ext.of.func);
    vals = calloc(type->nparams ? type->nparams : 1, sizeof *vals);
    results = calloc(type->nresults ? type->nresults : 1, sizeof *results);
    if (!vals || !results) {
        fputs("airlock: out of memory\n", stderr);
        goto out;
    }
    if (!convert_args(fname, type, opt, vals)) {
        rc = CLI_USAGE;
        goto out;
    }

    if (!al_call(store, ext.of.func, vals, type->nparams, results, type->nresults, &err)) {
        cli_print_error(err.kind == AL_ERR_TRAP ? NULL : opt->path, &err);
        goto out;
    }
    for (uint32_t i = 0; i < type->nresults; i++)
        print_value(&results[i]);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("airlock: writing results");
        goto out;
    }
    rc = CLI_OK;

out:
    free(results);
    free(vals);
    al_imports_free(imports);
    al_store_free(store); /* frees the instance and everything it made */
    al_module_free(module);
    return rc;
}

int cli_run(int argc, char **argv) {
    run_options opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc == CLI_OK) rc = opt.invoke ? run_invoke(&opt) : cli_run_wasi(&opt);
    else if (rc < 0) rc = CLI_OK; /* --help */
    cli_run_options_free(&opt);
    return rc;
}
