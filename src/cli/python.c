/*
 * python.c — `airlock python`: run Python code in CPython compiled to
 * wasm32-wasi (python.wasm, made by tools/build-python.sh) with
 * al_python_run, the library's one way to run Python, under the same policy
 * options, limits, exit codes and --json result as `airlock run`: run.c
 * parses the shared options, run_wasi.c builds the policy and reports, and
 * calls back here (run_options.runner) to run.
 *
 *   airlock python [OPTIONS] -c CODE [-- ARGS...]
 *   airlock python [OPTIONS] FILE [-- ARGS...]
 *   airlock python [OPTIONS] [-] [-- ARGS...]      the program from stdin
 *
 * What the guest gets on top of what the options grant:
 *   - the standard library, read-only, at /usr/local/lib/python3.11 (granted
 *     here, so that --json lists it; al_python_run would add it otherwise),
 *     and PYTHONHOME=/usr/local (al_python_run; a --env PYTHONHOME=...
 *     replaces it);
 *   - FILE: a copy of it, never its directory (which may hold anything), in
 *     a private temporary directory granted read-only at /script, run as
 *     /script/NAME so __file__ and tracebacks show a real path. The copy is
 *     removed when airlock ends, on every path, fatal signals included;
 *   - code from stdin: read in full here and passed as -c CODE, so the
 *     guest's stdin is empty unless --stdin FILE gives it one.
 * The guest paths /script and /usr/local/lib/python3.11 are reserved: a --dir
 * there would hide the script or the standard library.
 *
 * python.wasm is looked up (al_python_open) in $AIRLOCK_PYTHON_DIR, else in
 * ../python beside the airlock executable (build/release/airlock ->
 * build/python).
 *
 * Ownership: a py_run owns the run_options' arrays, the al_python, the
 * program read from stdin and the script's guest path; the temporary
 * directory lives in static storage (a signal handler must find it) and is
 * removed by tmp_remove. py_run_free releases all of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

#define STDLIB_GUEST "/usr/local/lib/python3.11"
#define SCRIPT_GUEST "/script"
/* The guest's argv[0], as when python.wasm was run as a module file. */
#define PROGRAM_NAME "python.wasm"

/* Largest program, a FILE or code on stdin: held in memory while copied. */
#define MAX_PROGRAM_BYTES ((size_t)16 << 20)

/* Entries python adds to the run_options arrays beyond one per word of the
 * command line: the stdlib and /script grants. */
#define EXTRA_ENTRIES 2

static const char python_usage[] =
    "usage: airlock python [OPTIONS] -c CODE [-- ARGS...]\n"
    "       airlock python [OPTIONS] FILE [-- ARGS...]\n"
    "       airlock python [OPTIONS] [-] [-- ARGS...]\n"
    "\n"
    "Run Python code in CPython 3.11 compiled to WebAssembly (python.wasm, built\n"
    "by tools/build-python.sh) the way `airlock run` runs a WASI command: same\n"
    "zero-trust policy, options, limits, output capture, exit status and --json.\n"
    "The guest gets the standard library, read-only, at /usr/local/lib/python3.11\n"
    "and the environment PYTHONHOME=/usr/local; nothing else of the host unless\n"
    "an option grants it.\n"
    "\n"
    "the program:\n"
    "  -c CODE        run CODE (sys.argv[0] is \"-c\")\n"
    "  FILE           run a copy of FILE (a regular file, at most 16 MiB) that\n"
    "                 sits alone in a private read-only directory: the guest sees\n"
    "                 /script/NAME, never FILE's own directory\n"
    "  -, or neither  read the program from stdin until EOF (at most 16 MiB)\n"
    "                 and run it as -c; the guest's stdin is then empty unless\n"
    "                 --stdin FILE gives it one\n"
    "ARGS after \"--\" are the program's sys.argv[1:].\n"
    "\n"
    "options (before \"--\"; --NAME=VALUE works too; details in `airlock run --help`):\n"
    "  --dir HOST[:GUEST][:ro|:rw]\n"
    "                 grant a host directory, read-only unless \":rw\"; GUEST may\n"
    "                 not be /script or /usr/local/lib/python3.11 (repeatable)\n"
    "  --env KEY=VALUE\n"
    "                 add a variable (repeatable; may replace PYTHONHOME)\n"
    "  --stdin FILE   the program's stdin (\"-\": airlock's own). Default: empty\n"
    "  --fuel N       stop after about N wasm instructions; Python's start-up\n"
    "                 alone takes about 80 million. Default: unmetered\n"
    "  --timeout T    stop after T of wall-clock time (500ms, 30s, 2m). Default: none\n"
    "  --memory SIZE  the most linear memory may grow to (64K..4G). Default: 256M;\n"
    "                 past it Python raises MemoryError\n"
    "  --trap-on-memory-limit\n"
    "                 growing memory past --memory stops the program instead\n"
    "  --json         print one JSON object instead of the program's output\n"
    "\n"
    "python.wasm is looked for in $AIRLOCK_PYTHON_DIR, else in ../python beside\n"
    "the airlock executable (build/release/airlock -> build/python).\n"
    "\n"
    "exit status:\n"
    "  0..255  the program's: 0 ok, 1 an uncaught exception (traceback on\n"
    "          stderr), N for sys.exit(N)\n"
    "  1       error: python.wasm or FILE missing, unreadable or too large\n"
    "  2       usage error\n"
    "  70      trap (e.g. C recursion deeper than the engine allows)\n"
    "  71      fuel exhausted   72  timeout\n"
    "  73      memory limit: an exception or trap after memory.grow was refused\n";

typedef struct py_run {
    run_options opt;       /* owned arrays: cli_run_options_free */
    const char *code;      /* -c CODE (from argv) or stdin_code */
    const char *file;      /* FILE as given; "-": stdin; NULL: none given */
    int first_arg;         /* argv index of the program's first argument */
    al_python *py;         /* owned */
    char *stdin_code;      /* owned: the program read from stdin, NUL-terminated */
    char *script_guest;    /* owned: "/script/NAME" */
    char failure[PATH_MAX + 256]; /* a failure before the run, or "" */
} py_run;

/* ---- the temporary directory ------------------------------------------------ */

/* Static because a signal handler must be able to remove it; one airlock
 * process runs one script. tmp_armed says tmp_dir exists. */
static char tmp_dir[PATH_MAX];
static char tmp_file[PATH_MAX]; /* "" until the copy's name is known */
static volatile sig_atomic_t tmp_armed;

static const int fatal_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};
#define NSIGNALS (sizeof fatal_signals / sizeof *fatal_signals)
static struct sigaction saved_actions[NSIGNALS];
static bool handler_installed[NSIGNALS];

/* Async-signal-safe: unlink, rmdir and a sig_atomic_t only. */
static void tmp_remove(void) {
    if (!tmp_armed) return;
    tmp_armed = 0;
    if (tmp_file[0]) unlink(tmp_file);
    rmdir(tmp_dir);
}

/* SA_RESETHAND has restored the default action, and the signal is blocked
 * while this runs: once it returns, the re-raised signal ends the process
 * exactly as it would have without the handler. */
static void on_fatal_signal(int sig) {
    int saved_errno = errno;
    tmp_remove();
    raise(sig);
    errno = saved_errno;
}

/* A signal the parent set to be ignored (nohup, a background job) stays
 * ignored: the handler must not make airlock killable where it was not. */
static void install_cleanup_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSIGNALS; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        if (sigaction(fatal_signals[i], &sa, &saved_actions[i]) == 0) handler_installed[i] = true;
    }
}

static void restore_signal_handlers(void) {
    for (size_t i = 0; i < NSIGNALS; i++) {
        if (handler_installed[i]) sigaction(fatal_signals[i], &saved_actions[i], NULL);
        handler_installed[i] = false;
    }
}

/* mkdtemp under $TMPDIR (if absolute) or /tmp, mode 0700. The fatal signals
 * are blocked between creating and arming, so no signal can leave the
 * directory behind unnoticed. */
static bool tmp_create(void) {
    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/') base = "/tmp";
    int n = snprintf(tmp_dir, sizeof tmp_dir, "%s/airlock-python.XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof tmp_dir) {
        errno = ENAMETOOLONG;
        return false;
    }
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < NSIGNALS; i++) sigaddset(&block, fatal_signals[i]);
    install_cleanup_handlers();
    pthread_sigmask(SIG_BLOCK, &block, &old);
    bool ok = mkdtemp(tmp_dir) != NULL;
    int e = errno;
    tmp_file[0] = '\0';
    if (ok) tmp_armed = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return ok;
}

/* ---- failures before the run ---------------------------------------------------- */

/* Record why the run cannot start; always false, for `return fail(...)`. */
__attribute__((format(printf, 2, 3)))
static bool fail(py_run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof r->failure, fmt, ap);
    va_end(ap);
    return false;
}

/* As run_wasi.c reports its own early failures: one line, or with --json the
 * usual object with status "error" (and nothing on stderr). */
static int report_failure(const py_run *r) {
    if (!r->opt.json) {
        fprintf(stderr, "airlock python: %s\n", r->failure);
        return CLI_FAIL;
    }
    al_result res;
    memset(&res, 0, sizeof res);
    res.status = AL_STATUS_ERROR;
    res.error.kind = AL_ERR_ARGUMENT;
    /* The engine's message field is shorter: a long path is cut. */
    size_t n = strnlen(r->failure, sizeof res.error.message - 1);
    memcpy(res.error.message, r->failure, n);
    cli_json_write_result(stdout, &res, NULL, 0);
    if (fflush(stdout) != 0 || ferror(stdout)) perror("airlock: writing the result");
    return CLI_FAIL;
}

/* ---- the command line ---------------------------------------------------------- */

static int py_usage(const char *fmt, const char *arg) {
    fputs("airlock python: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return CLI_USAGE;
}

/* The program given as a word: FILE, or "-" for stdin. */
static int set_file(py_run *r, const char *a) {
    if (r->code) return py_usage("give either -c CODE or a FILE, not both (found '%s')", a);
    if (r->file)
        return py_usage("unexpected argument '%s' (the program's arguments go after '--')", a);
    r->file = a;
    return CLI_OK;
}

static int set_code(py_run *r, int argc, char **argv, int *i) {
    if (r->code) return py_usage("%s given twice", "-c");
    if (r->file) return py_usage("give either -c CODE or a FILE, not both (found '%s')", r->file);
    if (*i + 1 >= argc) return py_usage("%s needs the code to run", "-c");
    r->code = argv[++*i];
    return CLI_OK;
}

/* Trailing slashes do not make a different guest path. */
static bool same_guest_path(const char *p, const char *reserved) {
    size_t n = strlen(reserved);
    if (strncmp(p, reserved, n) != 0) return false;
    return p[n + strspn(p + n, "/")] == '\0';
}

static bool under_guest_path(const char *p, const char *dir) {
    size_t n = strlen(dir);
    return !strncmp(p, dir, n) && (p[n] == '\0' || p[n] == '/');
}

/* A --dir at a reserved guest path would shadow the script or the stdlib
 * (the guest's libc prefers the later of two equal preopens). */
static int check_reserved_dirs(const run_options *opt) {
    for (size_t i = 0; i < opt->ndirs; i++) {
        const run_dir *d = &opt->dirs[i];
        const char *guest = d->guest ? d->guest : d->host;
        if (under_guest_path(guest, SCRIPT_GUEST) || same_guest_path(guest, STDLIB_GUEST)) {
            fprintf(stderr,
                    "airlock python: --dir: the guest path '%s' is reserved for the %s "
                    "(give another GUEST)\n",
                    guest, under_guest_path(guest, SCRIPT_GUEST) ? "script" : "standard library");
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

/* The rules that need the whole line. */
static int check_command_line(const py_run *r) {
    bool program_on_stdin = !r->code && (!r->file || !strcmp(r->file, "-"));
    if (program_on_stdin && r->opt.stdin_path && !strcmp(r->opt.stdin_path, "-")) {
        fputs("airlock python: --stdin - cannot be used when the program itself is read "
              "from stdin\n",
              stderr);
        return CLI_USAGE;
    }
    return check_reserved_dirs(&r->opt);
}

/* One word before "--". */
static int parse_word(py_run *r, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (!strcmp(a, "-c")) return set_code(r, argc, argv, i);
    if (a[0] == '-' && a[1] == '-') {
        int rc = cli_parse_policy_option(argc, argv, i, &r->opt);
        if (rc != CLI_NOT_POLICY_OPTION) return rc;
    }
    if (a[0] == '-' && a[1] != '\0')
        return py_usage("unknown option '%s' (see 'airlock python --help')", a);
    return set_file(r, a);
}

/* CLI_OK, CLI_USAGE, CLI_FAIL (out of memory) or -1 after --help. */
static int parse_command_line(py_run *r, int argc, char **argv) {
    if (!cli_run_options_init(&r->opt, "python", argc, EXTRA_ENTRIES)) return CLI_FAIL;
    r->first_arg = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            r->first_arg = i + 1;
            break;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(python_usage, stdout);
            return -1;
        }
        int rc = parse_word(r, argc, argv, &i);
        if (rc != CLI_OK) return rc;
    }
    return check_command_line(r);
}

/* ---- finding python.wasm ------------------------------------------------------- */

/* "DIR/NAME" in a fresh buffer (free() it), or NULL when out of memory.
 * Not asprintf: its pointer is undefined after a failure. */
static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + 1 + strlen(name) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* python.wasm and its standard library, compiled by the library; its
 * message says what is missing and how to build it. */
static bool open_python(py_run *r) {
    al_error err;
    r->py = al_python_open(NULL, &err);
    if (!r->py) return fail(r, "%.*s", (int)strnlen(err.message, sizeof err.message), err.message);
    return true;
}

/* ---- the program ------------------------------------------------------------------ */

typedef enum read_outcome { READ_OK, READ_FAILED, READ_TOO_LARGE } read_outcome;

/* Read all of fd, refusing more than limit bytes, into a NUL-terminated
 * buffer. Holds at most limit + 1 bytes: the extra one is how "too large" is
 * noticed, and on success it leaves room for the NUL. */
static read_outcome read_bounded(int fd, size_t limit, char **out, size_t *len) {
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap == limit + 1) {
                free(buf);
                return READ_TOO_LARGE;
            }
            size_t grown = cap ? cap * 2 : 65536;
            if (grown > limit + 1) grown = limit + 1;
            char *nb = realloc(buf, grown);
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return READ_FAILED;
            }
            buf = nb;
            cap = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return READ_FAILED;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    buf[n] = '\0'; /* n < cap: the last read had room and returned 0 */
    *out = buf;
    *len = n;
    return READ_OK;
}

/* The program on stdin becomes -c CODE; CPython cannot take a NUL in it. */
static bool read_stdin_program(py_run *r) {
    size_t len = 0;
    read_outcome o = read_bounded(STDIN_FILENO, MAX_PROGRAM_BYTES, &r->stdin_code, &len);
    if (o == READ_TOO_LARGE) return fail(r, "the program on stdin is larger than 16 MiB");
    if (o == READ_FAILED) return fail(r, "reading the program from stdin: %s", strerror(errno));
    if (memchr(r->stdin_code, '\0', len))
        return fail(r, "the program on stdin contains a NUL byte");
    r->code = r->stdin_code;
    return true;
}

/* FILE's contents: a regular file (a FIFO or device could block or never
 * end), its size checked before reading and again while reading. */
static bool read_script(py_run *r, char **data, size_t *len) {
    int fd = open(r->file, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fail(r, "%s: %s", r->file, strerror(errno));
        if (fd >= 0) close(fd);
        return false;
    }
    read_outcome o = READ_FAILED;
    if (!S_ISREG(st.st_mode)) fail(r, "%s: not a regular file", r->file);
    else if ((uintmax_t)st.st_size > MAX_PROGRAM_BYTES) o = READ_TOO_LARGE;
    else o = read_bounded(fd, MAX_PROGRAM_BYTES, data, len);
    if (o == READ_TOO_LARGE) fail(r, "%s: larger than the 16 MiB limit", r->file);
    else if (o == READ_FAILED && S_ISREG(st.st_mode)) fail(r, "%s: %s", r->file, strerror(errno));
    close(fd);
    return o == READ_OK;
}

static bool write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t put = write(fd, data, len);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) return false;
        data += put;
        len -= (size_t)put;
    }
    return true;
}

/* Write the copy as tmp_dir/NAME. O_EXCL|O_NOFOLLOW: the directory is fresh
 * and private, so anything already there is not ours. */
static bool write_copy(py_run *r, const char *name, const char *data, size_t len) {
    int n = snprintf(tmp_file, sizeof tmp_file, "%s/%s", tmp_dir, name);
    if (n < 0 || (size_t)n >= sizeof tmp_file) {
        tmp_file[0] = '\0'; /* a cut name is not a file of ours */
        return fail(r, "%s: name too long", r->file);
    }
    int fd = open(tmp_file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write_all(fd, data, len);
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) return fail(r, "copying %s to %s: %s", r->file, tmp_dir, strerror(e));
    return true;
}

/* FILE is copied, alone, into a fresh directory granted at /script. */
static bool stage_script(py_run *r) {
    const char *slash = strrchr(r->file, '/');
    const char *name = slash ? slash + 1 : r->file;
    char *data = NULL;
    size_t len = 0;
    if (!read_script(r, &data, &len)) return false;
    bool ok = tmp_create() && (r->script_guest = path_join(SCRIPT_GUEST, name)) != NULL;
    if (!ok) fail(r, "creating a temporary directory: %s", strerror(errno));
    else ok = write_copy(r, name, data, len);
    free(data);
    return ok;
}

static bool load_program(py_run *r) {
    if (r->code) return true;
    if (!r->file || !strcmp(r->file, "-")) return read_stdin_program(r);
    return stage_script(r);
}

/* ---- the run ------------------------------------------------------------------------ */

static void add_read_only_grant(run_options *opt, const char *host, const char *guest) {
    opt->dirs[opt->ndirs++] = (run_dir){.host = host, .guest = guest, .read_only = true};
}

/* The policy's arguments after argv[0]: the script for FILE (al_python_run
 * then runs `python /script/NAME ARGS`), then the words after "--"; for -c
 * al_python_run puts "-c CODE" before them. */
static void set_guest_args(py_run *r, int argc, char **argv) {
    run_options *opt = &r->opt;
    opt->nargs = 0;
    if (r->script_guest) opt->args[opt->nargs++] = r->script_guest;
    for (int i = r->first_arg; i < argc; i++) opt->args[opt->nargs++] = argv[i];
}

/* run_options.runner: cli_run_wasi built the policy; run it. */
static bool run_with_python(void *arg, const al_policy *policy, al_result *result) {
    py_run *r = arg;
    return al_python_run(r->py, policy, r->script_guest ? NULL : r->code, result);
}

static int run_python(py_run *r, int argc, char **argv) {
    if (!open_python(r) || !load_program(r)) return report_failure(r);
    run_options *opt = &r->opt;
    opt->path = PROGRAM_NAME;
    opt->runner = run_with_python;
    opt->runner_arg = r;
    add_read_only_grant(opt, al_python_stdlib_dir(r->py), STDLIB_GUEST);
    if (r->script_guest) add_read_only_grant(opt, tmp_dir, SCRIPT_GUEST);
    set_guest_args(r, argc, argv);
    return cli_run_wasi(opt);
}

static void py_run_free(py_run *r) {
    tmp_remove();
    restore_signal_handlers();
    cli_run_options_free(&r->opt);
    free(r->script_guest);
    free(r->stdin_code);
    al_python_close(r->py);
}

int cli_python(int argc, char **argv) {
    py_run r;
    memset(&r, 0, sizeof r);
    int rc = parse_command_line(&r, argc, argv);
    if (rc == CLI_OK) rc = run_python(&r, argc, argv);
    else if (rc < 0) rc = CLI_OK; /* --help */
    py_run_free(&r);
    return rc;
}
