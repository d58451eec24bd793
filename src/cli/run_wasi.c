/*
 * run_wasi.c — `airlock run` without --invoke: run MODULE as a WASI command
 * under a policy built from the command line, through al_run_wasm (or the
 * command's own runner: `airlock python` runs al_python_run this way).
 *
 * The command line grants; nothing is inherited: the guest's argv is the
 * module's file name then the words after "--", its environment is exactly
 * the --env entries, its stdin is the --stdin file (empty otherwise), and it
 * sees only the --dir directories (read-only unless ":rw").
 *
 * Outcome, in both output modes:
 *   plain   the guest's stdout and stderr bytes go to the real stdout and
 *           stderr (after the run: output is captured, capped at 1 MiB per
 *           stream), then at most a few airlock lines on stderr;
 *   --json  one JSON object on stdout (json_out.c), nothing on stderr; every
 *           failure after the command line was accepted — an unreadable file,
 *           a missing --dir — is reported that way too.
 * The exit code is the same in both modes (cli_exit_code).
 *
 * Ownership: a wasi_run owns the module and stdin buffers, the canonical
 * host paths, the policy's arrays and the result; wasi_run_free releases
 * them on every path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

typedef struct wasi_run {
    const run_options *opt;
    al_policy policy;
    al_result result;
    uint8_t *module;         /* owned */
    size_t module_len;
    uint8_t *stdin_data;     /* owned */
    size_t stdin_len;
    const char **argv;       /* owned array; strings borrowed from opt/argv */
    al_dir_grant *grants;    /* owned array */
    cli_json_dir *report;    /* owned array: what --json shows for each --dir */
    char **canonical;        /* owned: canonical host path per --dir (or NULL) */
    char **guest_copies;     /* owned: guest paths derived from the host path */
    size_t ndirs;
    bool loaded;             /* the program was there to run (module read, or opt->runner) */
} wasi_run;

static void wasi_run_free(wasi_run *w) {
    al_result_free(&w->result);
    for (size_t i = 0; i < w->ndirs; i++) {
        if (w->canonical) free(w->canonical[i]);
        if (w->guest_copies) free(w->guest_copies[i]);
    }
    free(w->canonical);
    free(w->guest_copies);
    free(w->report);
    free(w->grants);
    free(w->argv);
    free(w->stdin_data);
    free(w->module);
}

/* A failure before the guest ran: the result carries only status + message. */
__attribute__((format(printf, 3, 4)))
static void fail(wasi_run *w, al_status status, const char *fmt, ...) {
    memset(&w->result.error, 0, sizeof w->result.error);
    w->result.status = status;
    w->result.error.kind = status == AL_STATUS_INVALID_MODULE ? AL_ERR_MALFORMED : AL_ERR_ARGUMENT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->result.error.message, sizeof w->result.error.message, fmt, ap);
    va_end(ap);
}

/* ---- reading files ---------------------------------------------------------------- */

typedef enum read_outcome { READ_OK, READ_FAILED, READ_TOO_LARGE } read_outcome;

/* Read all of fd, refusing more than limit bytes. Works for regular files,
 * pipes and terminals alike; never holds more than limit + 1 bytes, the one
 * extra byte being how "too large" is noticed. */
static read_outcome read_fd_bounded(int fd, size_t limit, uint8_t **out, size_t *len) {
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    read_outcome outcome = READ_OK;
    for (;;) {
        if (n == cap) {
            if (cap == limit + 1) {
                outcome = READ_TOO_LARGE;
                break;
            }
            size_t grown = cap ? cap * 2 : 65536;
            if (grown > limit + 1 || grown < cap) grown = limit + 1;
            uint8_t *nb = realloc(buf, grown);
            if (!nb) {
                errno = ENOMEM;
                outcome = READ_FAILED;
                break;
            }
            buf = nb;
            cap = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            outcome = READ_FAILED;
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (outcome != READ_OK) {
        int e = errno;
        free(buf);
        errno = e;
        return outcome;
    }
    *out = buf; /* never NULL: the first round allocates */
    *len = n;
    return READ_OK;
}

/* The module: a regular file (a FIFO or device could block or stream without
 * end) whose size is checked before reading, so a huge file costs nothing. */
static bool read_module(wasi_run *w) {
    const char *path = w->opt->path;
    int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fail(w, AL_STATUS_ERROR, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return false;
    }
    read_outcome r = READ_FAILED;
    if (!S_ISREG(st.st_mode)) {
        fail(w, AL_STATUS_ERROR, "%s: not a regular file", path);
    } else if ((uintmax_t)st.st_size > w->policy.max_module_bytes) {
        fail(w, AL_STATUS_INVALID_MODULE, "%s: module is too large (%jd bytes; the limit is %zu bytes)",
             path, (intmax_t)st.st_size, w->policy.max_module_bytes);
    } else {
        r = read_fd_bounded(fd, w->policy.max_module_bytes, &w->module, &w->module_len);
        if (r == READ_FAILED) fail(w, AL_STATUS_ERROR, "%s: %s", path, strerror(errno));
        if (r == READ_TOO_LARGE) fail(w, AL_STATUS_INVALID_MODULE, "%s: module is too large", path);
    }
    close(fd);
    return r == READ_OK;
}

/* --stdin FILE ("-" is airlock's own stdin): anything readable, bounded. */
static bool read_stdin(wasi_run *w) {
    const char *path = w->opt->stdin_path;
    if (!path) return true;
    bool own = !strcmp(path, "-");
    int fd = own ? STDIN_FILENO : open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fail(w, AL_STATUS_ERROR, "--stdin %s: %s", path, strerror(errno));
        if (fd >= 0 && !own) close(fd);
        return false;
    }
    read_outcome r = READ_FAILED;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
    } else {
        r = read_fd_bounded(fd, CLI_MAX_STDIN_BYTES, &w->stdin_data, &w->stdin_len);
    }
    if (r == READ_TOO_LARGE)
        fail(w, AL_STATUS_ERROR, "--stdin %s: more than the 64 MiB limit", path);
    else if (r != READ_OK)
        fail(w, AL_STATUS_ERROR, "--stdin %s: %s", path, strerror(errno));
    if (!own) close(fd);
    return r == READ_OK;
}

/* ---- the policy ----------------------------------------------------------------------- */

/* Trailing slashes off a guest path ("/data/" -> "/data"); "/" stays "/". */
static void trim_slashes(char *p) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
}

/* Resolve each --dir: the host path is canonicalised here, once, so the
 * path the policy grants is the path --json reports; a missing host
 * directory is refused before the module is read. */
static bool resolve_dirs(wasi_run *w) {
    size_t n = w->opt->ndirs;
    w->ndirs = n;
    if (n == 0) return true;
    w->canonical = calloc(n, sizeof *w->canonical);
    w->guest_copies = calloc(n, sizeof *w->guest_copies);
    w->grants = calloc(n, sizeof *w->grants);
    w->report = calloc(n, sizeof *w->report);
    if (!w->canonical || !w->guest_copies || !w->grants || !w->report) {
        fail(w, AL_STATUS_ERROR, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const run_dir *d = &w->opt->dirs[i];
        w->report[i].guest = d->guest ? d->guest : d->host;
        w->report[i].read_only = d->read_only;
    }
    for (size_t i = 0; i < n; i++) {
        const run_dir *d = &w->opt->dirs[i];
        struct stat st;
        w->canonical[i] = realpath(d->host, NULL);
        if (!w->canonical[i] || stat(w->canonical[i], &st) != 0) {
            fail(w, AL_STATUS_ERROR, "--dir %s: %s", d->host, strerror(errno));
            return false;
        }
        if (!S_ISDIR(st.st_mode)) {
            fail(w, AL_STATUS_ERROR, "--dir %s: not a directory", d->host);
            return false;
        }
        w->guest_copies[i] = strdup(d->guest ? d->guest : w->canonical[i]);
        if (!w->guest_copies[i]) {
            fail(w, AL_STATUS_ERROR, "out of memory");
            return false;
        }
        trim_slashes(w->guest_copies[i]);
        w->grants[i] = (al_dir_grant){w->canonical[i], w->guest_copies[i], d->read_only};
        w->report[i] = (cli_json_dir){w->canonical[i], w->guest_copies[i], d->read_only};
    }
    return true;
}

/* The guest's argv[0] is the module's file name, not the host path to it. */
static bool build_argv(wasi_run *w) {
    const run_options *o = w->opt;
    w->argv = calloc((size_t)o->nargs + 1, sizeof *w->argv);
    if (!w->argv) {
        fail(w, AL_STATUS_ERROR, "out of memory");
        return false;
    }
    const char *slash = strrchr(o->path, '/');
    w->argv[0] = slash && slash[1] ? slash + 1 : o->path;
    for (int i = 0; i < o->nargs; i++) w->argv[i + 1] = o->args[i];
    return true;
}

static void build_policy(wasi_run *w) {
    const run_options *o = w->opt;
    al_policy *p = &w->policy;
    al_policy_init(p);
    p->argv = w->argv;
    p->argc = (size_t)o->nargs + 1;
    p->env = o->env;
    p->nenv = o->nenv;
    p->dirs = w->grants;
    p->ndirs = w->ndirs;
    p->stdin_data = w->stdin_data;
    p->stdin_len = w->stdin_len;
    p->fuel = o->fuel;
    p->timeout_ms = o->timeout_ms;
    if (o->memory_bytes) p->max_memory_bytes = o->memory_bytes;
    p->trap_on_memory_limit = o->trap_on_memory_limit;
}

/* ---- reporting ----------------------------------------------------------------------- */

/* The exit status for each outcome (see `airlock run --help` and `airlock
 * exec --help`). A guest code that does not fit in 8 bits keeps its low
 * byte, and becomes 1 if that byte is 0: a failing guest never looks like a
 * success to the shell. Shared by `run`, `python` and `exec`. */
int cli_exit_code(const al_result *r) {
    switch (r->status) {
    case AL_STATUS_OK:
    case AL_STATUS_OUTPUT_TRUNCATED: return CLI_OK;
    case AL_STATUS_EXIT: {
        int code = r->exit_code & 0xff;
        return code ? code : 1;
    }
    case AL_STATUS_SIGNALED: return 128 + (r->term_signal & 0x7f);
    case AL_STATUS_TRAP: return CLI_EXIT_TRAP;
    case AL_STATUS_FUEL_EXHAUSTED: return CLI_EXIT_FUEL;
    case AL_STATUS_TIMEOUT: return CLI_EXIT_TIMEOUT;
    case AL_STATUS_MEMORY_LIMIT: return CLI_EXIT_MEMORY;
    case AL_STATUS_CPU_LIMIT: return CLI_EXIT_CPU;
    case AL_STATUS_INVALID_MODULE: return CLI_EXIT_INVALID_MODULE;
    case AL_STATUS_UNSUPPORTED: return CLI_EXIT_UNAVAILABLE;
    case AL_STATUS_CANCELLED: return CLI_EXIT_CANCELLED;
    case AL_STATUS_ERROR: return CLI_FAIL;
    }
    return CLI_FAIL;
}

static bool write_all(FILE *f, const uint8_t *data, size_t len) {
    if (len && fwrite(data, 1, len, f) != len) return false;
    return fflush(f) == 0;
}

/* " in function 3 (spin) at offset 0x2a", or "" when the trap has no guest
 * location. */
static void print_location(const al_error *e) {
    if (e->kind != AL_ERR_TRAP || e->backtrace_len == 0) return;
    int n = (int)strnlen(e->func_name, sizeof e->func_name);
    fprintf(stderr, " in function %" PRIu32, e->func_index);
    if (n > 0) fprintf(stderr, " (%.*s)", n, e->func_name);
    fprintf(stderr, " at offset 0x%" PRIx32, e->code_offset);
}

static void print_plain_status(const wasi_run *w) {
    const al_result *r = &w->result;
    const run_options *o = w->opt;
    int msglen = (int)strnlen(r->error.message, sizeof r->error.message);
    switch (r->status) {
    case AL_STATUS_OK:
    case AL_STATUS_EXIT:
    case AL_STATUS_OUTPUT_TRUNCATED:
        return;
    case AL_STATUS_TRAP:
        cli_print_error(NULL, &r->error); /* the trap line and its backtrace */
        return;
    case AL_STATUS_FUEL_EXHAUSTED:
        fprintf(stderr, "airlock: fuel exhausted: the budget of %" PRIu64 " instructions is spent",
                o->fuel);
        break;
    case AL_STATUS_TIMEOUT:
        fprintf(stderr, "airlock: timeout: still running after %" PRIu64 " ms", o->timeout_ms);
        break;
    case AL_STATUS_MEMORY_LIMIT:
        fprintf(stderr, "airlock: memory limit (%" PRIu64 " bytes): %.*s", w->policy.max_memory_bytes,
                msglen, r->error.message);
        break;
    case AL_STATUS_INVALID_MODULE:
        /* Failures found before the engine saw the file already name it. */
        if (!w->loaded)
            fprintf(stderr, "airlock: invalid module: %.*s\n", msglen, r->error.message);
        else
            fprintf(stderr, "airlock: %s: %s: %.*s\n", o->path,
                    r->error.kind == AL_ERR_LIMIT ? "invalid module"
                                                  : cli_error_kind_name(r->error.kind),
                    msglen, r->error.message);
        return;
    case AL_STATUS_ERROR:
    case AL_STATUS_SIGNALED:
    case AL_STATUS_CPU_LIMIT:
    case AL_STATUS_UNSUPPORTED:
    case AL_STATUS_CANCELLED:
        if (!w->loaded) fprintf(stderr, "airlock: %.*s\n", msglen, r->error.message);
        else cli_print_error(o->path, &r->error);
        return;
    }
    print_location(&r->error);
    fputc('\n', stderr);
}

static void print_truncation_warnings(const wasi_run *w) {
    const al_result *r = &w->result;
    if (r->stdout_truncated)
        fprintf(stderr, "airlock: warning: the guest's stdout was cut at %zu bytes\n",
                w->policy.stdout_cap);
    if (r->stderr_truncated)
        fprintf(stderr, "airlock: warning: the guest's stderr was cut at %zu bytes\n",
                w->policy.stderr_cap);
}

static int report(const wasi_run *w) {
    const al_result *r = &w->result;
    int code = cli_exit_code(r);
    if (w->opt->json) {
        cli_json_write_result(stdout, r, w->report, w->ndirs);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            perror("airlock: writing the result");
            return CLI_FAIL;
        }
        return code;
    }
    bool out_ok = write_all(stdout, r->stdout_data, r->stdout_len);
    write_all(stderr, r->stderr_data, r->stderr_len);
    print_plain_status(w);
    print_truncation_warnings(w);
    if (!out_ok) {
        perror("airlock: writing the guest's stdout");
        return code == CLI_OK ? CLI_FAIL : code;
    }
    return code;
}

int cli_run_wasi(const run_options *opt) {
    wasi_run w;
    memset(&w, 0, sizeof w);
    w.opt = opt;
    al_policy_init(&w.policy); /* for max_module_bytes before the real build */
    if (resolve_dirs(&w) && build_argv(&w) && read_stdin(&w) && (opt->runner || read_module(&w))) {
        w.loaded = true;
        build_policy(&w);
        if (opt->runner) {
            if (!opt->runner(opt->runner_arg, &w.policy, &w.result))
                fail(&w, AL_STATUS_ERROR, "no result from the runner");
        } else if (!al_run_wasm(&w.policy, w.module, w.module_len, &w.result)) {
            fail(&w, AL_STATUS_ERROR, "no result from al_run_wasm");
        }
    }
    int code = report(&w);
    wasi_run_free(&w);
    return code;
}
