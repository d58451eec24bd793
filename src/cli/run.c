/*
 * run.c — `airlock run MODULE.wasm [--invoke NAME [ARGS...]]`.
 *
 * Reads the module, instantiates it in a fresh store with default limits and
 * no imports, calls one exported function (NAME, or "_start" without
 * --invoke) and prints each result on its own line:
 *   i32, i64   signed decimal
 *   f32        "%.9g"  (9 significant digits: enough to round-trip any f32)
 *   f64        "%.17g" (17 significant digits: enough to round-trip any f64)
 *              NaN prints as "nan" or "-nan" by its sign bit, infinities as
 *              "inf" / "-inf"
 *   funcref, externref   "null" or "ref"
 *
 * ARGS come from the command line and are parsed strictly against the
 * function's parameter types: a wrong count, trailing junk or an out-of-range
 * value is a usage error (exit 2) and the function is not called. Integers
 * are decimal and may be given signed or unsigned (an i32 accepts
 * -2147483648..4294967295, so 4294967295 and -1 are the same bits); floats are
 * decimal (with optional exponent) or nan, inf, -inf.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static const char run_usage[] =
    "usage: airlock run MODULE.wasm [--invoke NAME [ARGS...]]\n"
    "\n"
    "Instantiate MODULE (with no imports) and call its exported function NAME,\n"
    "or \"_start\" when --invoke is not given. --invoke may come before or after\n"
    "MODULE; use --invoke=NAME for names that start with '-'.\n"
    "\n"
    "ARGS are parsed by the function's parameter types:\n"
    "  i32, i64   decimal integer, signed or unsigned (e.g. -1, 4294967295)\n"
    "  f32, f64   decimal number (e.g. 1.5, -2e-3), nan, -nan, inf, -inf\n"
    "  externref  null, or a non-zero decimal token\n"
    "  funcref    null\n"
    "Each result is printed on its own line (f32 as %.9g, f64 as %.17g).\n"
    "\n"
    "exit status: 0 ok, 1 module error or trap, 2 usage or argument error\n";

typedef struct run_options {
    const char *path;
    const char *invoke; /* NULL: _start */
    int nargs;
    char **args;
} run_options;

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

/* ---- command line ---------------------------------------------------------- */

/* Options are recognised anywhere; every other word is MODULE (the first) or
 * an argument. Words like "-5", "-inf" or "-nan" are arguments, so only the
 * exact option spellings below are taken as options. */
static int parse_options(int argc, char **argv, run_options *opt) {
    memset(opt, 0, sizeof *opt);
    /* Arguments are collected in place: argv[i] is moved down to argv[nargs]
     * of a scratch array; at most argc - 1 of them. */
    opt->args = calloc((size_t)argc, sizeof *opt->args);
    if (!opt->args) {
        fputs("airlock: out of memory\n", stderr);
        return CLI_FAIL;
    }
    bool options_done = false;
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
            if (!strcmp(a, "--invoke") || !strncmp(a, "--invoke=", 9)) {
                const char *name = a[8] == '=' ? a + 9 : NULL;
                if (!name) {
                    if (i + 1 >= argc) {
                        fputs("airlock run: --invoke needs a function name\n", stderr);
                        return CLI_USAGE;
                    }
                    name = argv[++i];
                }
                if (opt->invoke) {
                    fputs("airlock run: --invoke given twice\n", stderr);
                    return CLI_USAGE;
                }
                opt->invoke = name;
                continue;
            }
            if (a[0] == '-' && a[1] == '-') {
                fprintf(stderr, "airlock run: unknown option '%s'\n", a);
                fputs(run_usage, stderr);
                return CLI_USAGE;
            }
        }
        if (!opt->path)
            opt->path = a;
        else
            opt->args[opt->nargs++] = argv[i];
    }
    if (!opt->path) {
        fputs(run_usage, stderr);
        return CLI_USAGE;
    }
    return CLI_OK;
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

int cli_run(int argc, char **argv) {
    run_options opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc != CLI_OK) {
        free(opt.args);
        return rc < 0 ? CLI_OK : rc;
    }
    const char *fname = opt.invoke ? opt.invoke : "_start";

    al_module *module = NULL;
    al_store *store = NULL;
    al_imports *imports = NULL;
    al_value *vals = NULL, *results = NULL;
    al_error err;
    memset(&err, 0, sizeof err);
    rc = CLI_FAIL;

    module = cli_load_module(opt.path);
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
        cli_print_error(opt.path, &err);
        uint32_t nimports = al_module_import_count(module);
        if (err.kind == AL_ERR_LINK && nimports > 0)
            fprintf(stderr,
                    "airlock: note: `airlock run` provides no imports, and this module "
                    "needs %" PRIu32 "\n",
                    nimports);
        goto out;
    }

    al_extern ext;
    if (!al_instance_export(instance, fname, &ext)) {
        fprintf(stderr, "airlock: %s: no export named '%s'%s\n", opt.path, fname,
                opt.invoke ? "" : " (use --invoke NAME to call another function)");
        list_function_exports(module);
        goto out;
    }
    if (ext.kind != AL_EXTERN_FUNC) {
        fprintf(stderr, "airlock: %s: export '%s' is not a function\n", opt.path, fname);
        goto out;
    }
    const al_functype *type = al_func_type(ext.of.func);
    vals = calloc(type->nparams ? type->nparams : 1, sizeof *vals);
    results = calloc(type->nresults ? type->nresults : 1, sizeof *results);
    if (!vals || !results) {
        fputs("airlock: out of memory\n", stderr);
        goto out;
    }
    if (!convert_args(fname, type, &opt, vals)) {
        rc = CLI_USAGE;
        goto out;
    }

    if (!al_call(store, ext.of.func, vals, type->nparams, results, type->nresults, &err)) {
        cli_print_error(err.kind == AL_ERR_TRAP ? NULL : opt.path, &err);
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
    free(opt.args);
    return rc;
}
