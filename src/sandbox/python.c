/*
 * python.c — al_python_*: CPython compiled to wasm32-wasi (python.wasm, made
 * by tools/build-python.sh), compiled once and run many times.
 *
 *   al_python_open     finds python.wasm and its standard library, reads the
 *                      module and compiles it (al_module_new) once;
 *   al_python_run      one `python -c CODE` (or `python ARGS...`) under a
 *                      policy: a fresh store from the shared module, through
 *                      the wasm backend's runner (sandbox_run_wasm_module);
 *   al_python_session  one interpreter kept alive across executions.
 *
 * A session is a thread running python.wasm with a small driver program
 * (DRIVER below, passed as -c) that loops: read one framed cell from stdin,
 * exec it in __main__'s globals (a traceback on stderr through
 * sys.excepthook when it raises, as the interactive interpreter prints it),
 * flush, write an end trailer, read the next. The WASI host is streamed
 * (src/wasi/wasi.h): fd 0 is fed here (session_stdin blocks until a cell is
 * published), and stdout/stderr come here as written (session_output), are
 * captured per execution under the policy's caps, and are handed on to the
 * policy's on_output.
 *
 * The framing, and why a cell cannot end early or leak into the next one:
 *   - a cell is "AIRLOCK-CELL <10-digit length> <nonce>\n" and the code; the
 *     nonce is 16 fresh random bytes (getrandom), in hex;
 *   - the driver ends a cell by writing exactly "AIRLOCK-END <nonce> ok\n"
 *     (or "error\n" when the code raised) to fd 2 in one write, then reading
 *     fd 0 for the next header. That write is recognised as one whole chunk
 *     with the cell's nonce and never kept or handed on; any other bytes,
 *     a fake trailer included, are output;
 *   - a cell is complete only when the guest, having written the trailer,
 *     asks fd 0 for more with the cell's bytes all read. Code that reads fd
 *     0 itself finds nothing to read until its timeout, and code that prints
 *     a trailer without reading goes on running: either way the cell goes
 *     on, so the next execution's output is its own. (Code in a session can
 *     change the interpreter for later cells — that is what a session is —
 *     but airlock's attribution of output is by time: what the guest wrote
 *     between publishing cell N and completing it is cell N's.)
 *
 * Per execution: the policy's fuel (al_store_set_fuel when the cell is
 * picked up, on the guest's thread), its own timeout (on expiry the store is
 * interrupted: the interpreter dies, the result is TIMEOUT, and the next
 * execution starts a fresh interpreter, its result noting "interpreter
 * restarted"), output caps and wall time. The opener's al_policy.cancel is
 * watched while a cell runs (every SANDBOX_CANCEL_POLL_MS): raised, it ends
 * the interpreter exactly like a timeout, with status CANCELLED; raised
 * before a cell is published, the cell is not run at all.
 *
 * Threads and invariants:
 *  - s->lock guards state, store, memory, closing, execs, the cell being
 *    delivered and run_result. The guest thread appends to the captures
 *    without it (handing output to the caller's on_output under a lock
 *    would let a slow callback delay a timeout): the captures are touched by
 *    the caller's thread only when the guest cannot write — before a cell is
 *    published (the guest is blocked in session_stdin) and after it is
 *    complete or the interpreter is dead — and both hand-overs go through
 *    the lock;
 *  - the store pointer is valid between the started and stopped hooks only,
 *    set and cleared under the lock, so an interrupt never reaches a freed
 *    store;
 *  - every thread started is joined (by the execution that sees it die, or
 *    by close), and close waits for an execution running on another thread
 *    to return first: nothing outlives the session.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

#define STDLIB_GUEST "/usr/local/lib/python3.11"
#define STDLIB_SUBDIR "lib/python3.11"
#define PYTHONHOME_ENTRY "PYTHONHOME=/usr/local"
#define UNBUFFERED_ENTRY "PYTHONUNBUFFERED=1"
#define MAX_PYTHON_WASM_BYTES ((size_t)256 << 20) /* python.wasm is ~7 MiB */

#define MAX_CELL_BYTES ((size_t)16 << 20) /* like `airlock python`'s programs */
#define NONCE_BYTES 16
#define NONCE_HEX (2 * NONCE_BYTES)
#define CELL_HEADER_LEN (13 + 10 + 1 + NONCE_HEX + 1) /* "AIRLOCK-CELL %010zu %s\n" */
#define STARTUP_TIMEOUT_MS 120000 /* python starts in ~0.1 s (seconds under ASan) */
#define SESSION_STACK_BYTES ((size_t)8 << 20) /* the engine's re-entry bound assumes 8 MiB */

struct al_python {
    al_module *module; /* compiled once; only read by runs */
    char *dir;         /* canonical */
    char *stdlib;      /* canonical dir/lib/python3.11 */
};

/* ---- errors ------------------------------------------------------------------------ */

/* al_error_set returning false, for "return py_error(...)". */
static bool py_error(al_error *err, al_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool py_error(al_error *err, al_error_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    al_error_vset(err, kind, fmt, ap);
    va_end(ap);
    return false;
}

/* The wording `airlock python` has always used (tests/cli/test-python.sh). */
static bool python_missing(al_error *err, const char *what, const char *why) {
    return py_error(err, AL_ERR_ARGUMENT,
                    "no CPython for WASI: %s: %s (build it with tools/build-python.sh, or set "
                    "AIRLOCK_PYTHON_DIR to its output directory)",
                    what, why);
}

/* A result that never reached the engine: status ERROR and "" outputs, like
 * every other outcome. */
static void result_refused(al_result *r, const al_error *err) {
    memset(r, 0, sizeof *r);
    snprintf(r->backend, sizeof r->backend, "wasm");
    r->status = AL_STATUS_ERROR;
    r->error = *err;
    r->stdout_data = calloc(1, 1);
    r->stderr_data = calloc(1, 1);
}

/* ---- finding and compiling python.wasm ------------------------------------------------ */

/* "DIR/NAME" in a fresh buffer, or NULL when out of memory. */
static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + 1 + strlen(name) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* "<directory of the running executable>/../python", or NULL. */
static char *python_dir_beside_exe(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof exe - 1) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    return path_join(exe, "../python");
}

/* Why path is not a regular file, or NULL when it is one. */
static const char *not_regular_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return strerror(errno);
    return S_ISREG(st.st_mode) ? NULL : "not a regular file";
}

/* Fill py->dir and py->stdlib from dir, checking python.wasm and the
 * standard library are there. */
static bool use_python_dir(al_python *py, const char *dir, al_error *err) {
    py->dir = realpath(dir, NULL);
    if (!py->dir) return python_missing(err, dir, strerror(errno));
    char *wasm = path_join(py->dir, "python.wasm");
    py->stdlib = path_join(py->dir, STDLIB_SUBDIR);
    char *os_py = py->stdlib ? path_join(py->stdlib, "os.py") : NULL;
    bool ok = true;
    const char *why;
    if (!wasm || !os_py) ok = py_error(err, AL_ERR_NOMEM, "python: out of memory");
    else if ((why = not_regular_file(wasm))) ok = python_missing(err, wasm, why);
    else if (not_regular_file(os_py)) ok = python_missing(err, os_py, "no standard library there");
    free(os_py);
    free(wasm);
    return ok;
}

static bool locate_python(al_python *py, const char *dir, al_error *err) {
    if (dir && dir[0]) return use_python_dir(py, dir, err);
    const char *env = getenv("AIRLOCK_PYTHON_DIR");
    if (env && env[0]) return use_python_dir(py, env, err);
    char *beside = python_dir_beside_exe();
    if (!beside) return python_missing(err, "/proc/self/exe", "cannot find the executable");
    bool ok = use_python_dir(py, beside, err);
    free(beside);
    return ok;
}

/* The whole file, bounded (it was checked to be a regular file). */
static uint8_t *read_file(const char *path, size_t *len, al_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        python_missing(err, path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t n = 0;
    if (!S_ISREG(st.st_mode) || (uintmax_t)st.st_size > MAX_PYTHON_WASM_BYTES)
        py_error(err, AL_ERR_LIMIT, "%s: not a regular file of at most 256 MiB", path);
    else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
        py_error(err, AL_ERR_NOMEM, "python: out of memory reading %s", path);
    while (buf && n < (size_t)st.st_size) {
        ssize_t got = read(fd, buf + n, (size_t)st.st_size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            py_error(err, AL_ERR_SYSTEM, "reading %s: %s", path,
                     got < 0 ? strerror(errno) : "shorter than its size");
            free(buf);
            buf = NULL;
            break;
        }
        n += (size_t)got;
    }
    close(fd);
    *len = n;
    return buf;
}

static bool compile_python(al_python *py, al_error *err) {
    char *wasm = path_join(py->dir, "python.wasm");
    if (!wasm) return py_error(err, AL_ERR_NOMEM, "python: out of memory");
    size_t len = 0;
    uint8_t *bytes = read_file(wasm, &len, err);
    if (bytes) {
        al_error e;
        py->module = al_module_new(bytes, len, &e);
        if (!py->module) py_error(err, e.kind, "%s: %s", wasm, e.message);
    }
    free(bytes);
    free(wasm);
    return py->module != NULL;
}

al_python *al_python_open(const char *python_dir, al_error *error) {
    al_error scratch;
    if (!error) error = &scratch;
    memset(error, 0, sizeof *error);
    al_python *py = calloc(1, sizeof *py);
    if (!py) {
        py_error(error, AL_ERR_NOMEM, "python: out of memory");
        return NULL;
    }
    if (!locate_python(py, python_dir, error) || !compile_python(py, error)) {
        al_python_close(py);
        return NULL;
    }
    return py;
}

void al_python_close(al_python *py) {
    if (!py) return;
    al_module_free(py->module); /* instances still running keep their reference */
    free(py->stdlib);
    free(py->dir);
    free(py);
}

const char *al_python_stdlib_dir(const al_python *py) { return py ? py->stdlib : NULL; }

/* ---- the policy python runs under ---------------------------------------------------- */

/* Two guest paths name the same directory when they differ only in slashes
 * (as sandbox_policy_check compares them). */
static bool same_guest_path(const char *a, const char *b) {
    for (;;) {
        while (*a == '/') a++;
        while (*b == '/') b++;
        size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
        if (na != nb || memcmp(a, b, na) != 0) return false;
        if (na == 0) return true;
        a += na;
        b += nb;
    }
}

static bool has_env(const al_policy *p, const char *entry) {
    size_t key = (size_t)(strchr(entry, '=') - entry) + 1; /* "KEY=" */
    for (size_t i = 0; i < p->nenv; i++)
        if (!strncmp(p->env[i], entry, key)) return true;
    return false;
}

static bool grants_guest(const al_policy *p, const char *guest) {
    for (size_t i = 0; i < p->ndirs; i++)
        if (same_guest_path(p->dirs[i].guest_path, guest)) return true;
    return false;
}

/* A checked policy (base) with python's additions: argv[0], then pre (e.g.
 * "-c", CODE), then base's argv[1..]; PYTHONHOME unless base sets it, and
 * PYTHONUNBUFFERED=1 when output is streamed (Python would otherwise hold
 * it back in 8 KiB blocks) unless base sets it; the standard library,
 * read-only, unless base grants its guest path. The arrays are owned; the
 * strings are borrowed from base, pre and py. */
typedef struct py_policy {
    al_policy policy;
    const char **argv;
    const char **env;
    al_dir_grant *dirs;
} py_policy;

static void py_policy_free(py_policy *pp) {
    free(pp->argv);
    free(pp->env);
    free(pp->dirs);
    memset(pp, 0, sizeof *pp);
}

static bool py_policy_build(py_policy *pp, const al_python *py, const al_policy *base,
                            const char *const *pre, size_t npre) {
    memset(pp, 0, sizeof *pp);
    size_t nargs = 1 + npre + (base->argc > 1 ? base->argc - 1 : 0);
    pp->argv = calloc(nargs, sizeof *pp->argv);
    pp->env = calloc(base->nenv + 2, sizeof *pp->env);
    pp->dirs = calloc(base->ndirs + 1, sizeof *pp->dirs);
    if (!pp->argv || !pp->env || !pp->dirs) {
        py_policy_free(pp);
        return false;
    }
    size_t n = 0;
    pp->argv[n++] = base->argc > 0 ? base->argv[0] : "python";
    for (size_t i = 0; i < npre; i++) pp->argv[n++] = pre[i];
    for (size_t i = 1; i < base->argc; i++) pp->argv[n++] = base->argv[i];
    size_t ne = 0;
    for (size_t i = 0; i < base->nenv; i++) pp->env[ne++] = base->env[i];
    if (!has_env(base, PYTHONHOME_ENTRY)) pp->env[ne++] = PYTHONHOME_ENTRY;
    if (base->on_output && !has_env(base, UNBUFFERED_ENTRY)) pp->env[ne++] = UNBUFFERED_ENTRY;
    size_t nd = 0;
    for (size_t i = 0; i < base->ndirs; i++) pp->dirs[nd++] = base->dirs[i];
    if (!grants_guest(base, STDLIB_GUEST))
        pp->dirs[nd++] = (al_dir_grant){py->stdlib, STDLIB_GUEST, true};
    pp->policy = *base;
    pp->policy.argv = pp->argv;
    pp->policy.argc = n;
    pp->policy.env = pp->env;
    pp->policy.nenv = ne;
    pp->policy.dirs = pp->dirs;
    pp->policy.ndirs = nd;
    return true;
}

/* What every entry point checks first. */
static bool python_policy_ok(const al_python *py, const al_policy *policy, al_error *err) {
    if (!py) return py_error(err, AL_ERR_ARGUMENT, "python: no al_python (al_python_open failed?)");
    if (policy && policy->isolation != AL_ISOLATION_WASM)
        return py_error(err, AL_ERR_ARGUMENT,
                        "python: the policy's isolation must be AL_ISOLATION_WASM (python.wasm "
                        "is a WebAssembly module)");
    return sandbox_policy_check(policy, err) == AL_STATUS_OK;
}

bool al_python_run(al_python *py, const al_policy *policy, const char *code, al_result *result) {
    if (!result) return false;
    al_error err;
    if (!python_policy_ok(py, policy, &err)) {
        result_refused(result, &err);
        return true;
    }
    const char *pre[2] = {"-c", code};
    py_policy pp;
    if (!py_policy_build(&pp, py, policy, pre, code ? 2 : 0)) {
        py_error(&err, AL_ERR_NOMEM, "python: out of memory");
        result_refused(result, &err);
        return true;
    }
    sandbox_run_wasm_module(&pp.policy, py->module, NULL, result);
    py_policy_free(&pp);
    return true;
}

/* ==== sessions ============================================================================ */

/* The driver: see the top of this file. Its names live in a function (and
 * the function's own name is deleted) so that __main__'s globals, where the
 * cells run, hold only what the cells put there. It imports nothing at
 * start-up beyond what python has loaded already (linecache and traceback
 * would cost ~0.2 s): a cell that raises is shown through sys.excepthook,
 * as the interactive interpreter shows it (a hook the cells install is
 * honoured), starting below the driver's own frame (and kept in
 * sys.last_value etc., as there, for pdb.pm()); the cells' sources go
 * into linecache once something has imported it, so traceback.print_exc()
 * in a cell shows their lines. One compile at start-up warms the compiler
 * (~25 ms the first cell would pay). sys.stdin is an empty stream: input()
 * raises EOFError instead of reading the cell channel. SystemExit ends the
 * interpreter (the execution reports its exit code). */
static const char DRIVER[] =
    "def _airlock_session():\n"
    "    import io, os, sys\n"
    "    main = globals()\n"
    "    del main['_airlock_session']\n"
    "    sys.argv[:] = ['']\n"
    "    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BytesIO())\n"
    "    compile(b'pass', '<cell-0>', 'exec')\n"
    "    sources = []\n"
    "    def read_exact(n):\n"
    "        data = b''\n"
    "        while len(data) < n:\n"
    "            more = os.read(0, n - len(data))\n"
    "            if not more:\n"
    "                return None\n"
    "            data += more\n"
    "        return data\n"
    "    count = 0\n"
    "    while True:\n"
    "        header = read_exact(57)\n"
    "        if header is None:\n"
    "            return\n"
    "        size, nonce = header.split()[1:]\n"
    "        code = read_exact(int(size))\n"
    "        if code is None:\n"
    "            return\n"
    "        count += 1\n"
    "        name = '<cell-%d>' % count\n"
    "        outcome = b'ok'\n"
    "        try:\n"
    "            text = code.decode('utf-8', 'replace')\n"
    "            sources.append((name, (len(text), None, text.splitlines(True), name)))\n"
    "            linecache = sys.modules.get('linecache')\n"
    "            if linecache is not None:\n"
    "                linecache.cache.update(sources)\n"
    "                sources.clear()\n"
    "            exec(compile(code, name, 'exec'), main)\n"
    "        except SystemExit:\n"
    "            raise\n"
    "        except BaseException:\n"
    "            outcome = b'error'\n"
    "            try:\n"
    "                kind, value, tb = sys.exc_info()\n"
    "                tb = tb.tb_next\n"
    "                value = value.with_traceback(tb)\n"
    "                sys.last_type, sys.last_value, sys.last_traceback = kind, value, tb\n"
    "                sys.excepthook(kind, value, tb)\n"
    "            except BaseException:\n"
    "                pass\n"
    "            kind = value = tb = None\n"
    "        for stream in (sys.stdout, sys.stderr):\n"
    "            try:\n"
    "                stream.flush()\n"
    "            except BaseException:\n"
    "                pass\n"
    "        os.write(2, b'AIRLOCK-END ' + nonce + b' ' + outcome + b'\\n')\n"
    "_airlock_session()\n";

_Static_assert(CELL_HEADER_LEN == 57, "the driver reads 57-byte headers");

typedef enum interp_state {
    INTERP_NONE,     /* no interpreter thread (never started, or joined) */
    INTERP_STARTING, /* the thread runs; python has not asked for a cell yet */
    INTERP_IDLE,     /* blocked in session_stdin, waiting for a cell */
    INTERP_PENDING,  /* a cell is published, not yet picked up */
    INTERP_RUNNING,  /* the cell is being read and run */
    INTERP_DEAD,     /* the run has ended; the thread must be joined */
} interp_state;

typedef enum cell_outcome { CELL_UNKNOWN, CELL_OK, CELL_RAISED } cell_outcome;

struct al_python_session {
    al_python *py;            /* borrowed */
    al_policy base;           /* the caller's policy; env and dirs are owned copies */
    char **strings;           /* owned: every string base points to */
    size_t nstrings;
    const char **env_copy;    /* owned arrays behind base.env, base.dirs */
    al_dir_grant *dirs_copy;
    py_policy run;            /* python -c DRIVER on top of base */
    sandbox_wasm_hooks hooks;
    uint64_t fuel;            /* per execution (SANDBOX_UNMETERED_FUEL: none) */
    uint64_t default_timeout_ms;
    const int *cancel;        /* the opener's al_policy.cancel (outlives the session) */
    const char *cancel_reason;/* an owned copy, or NULL: "cancelled" */

    pthread_mutex_t lock;
    pthread_cond_t changed;   /* CLOCK_MONOTONIC; broadcast on every change */
    /* under lock */
    interp_state state;
    pthread_t thread;
    al_store *store;          /* between the started and stopped hooks */
    al_memory *memory;
    bool closing;
    unsigned execs;           /* callers inside al_python_session_exec */
    uint8_t *cell;            /* header + code being delivered (owned by the exec) */
    size_t cell_len, cell_pos;
    uint64_t cell_budget;
    al_result run_result;     /* the interpreter's run, once DEAD */
    char ended[128];          /* why the last interpreter ended; "" if none did */
    /* the current cell: see "Threads and invariants" at the top */
    char nonce[NONCE_HEX + 1];
    cell_outcome outcome;
    uint64_t cell_fuel_used, cell_memory;
    sandbox_capture out, err;
};

/* ---- the hooks (on the interpreter's thread) -------------------------------------------- */

/* Under lock, store alive: what the cell has spent so far. */
static void cell_measure(al_python_session *s, al_store *store) {
    uint64_t left = al_store_fuel(store);
    s->cell_fuel_used = s->cell_budget > left ? s->cell_budget - left : 0;
    if (s->memory) s->cell_memory = al_memory_size(s->memory);
}

static void session_started(void *arg, al_store *store, al_instance *instance) {
    al_python_session *s = arg;
    al_extern mem;
    pthread_mutex_lock(&s->lock);
    s->store = store;
    s->memory = al_instance_export(instance, "memory", &mem) && mem.kind == AL_EXTERN_MEMORY
                    ? mem.of.memory : NULL;
    if (s->closing) al_store_interrupt(store); /* closed while starting */
    pthread_mutex_unlock(&s->lock);
}

static void session_stopped(void *arg, al_store *store) {
    al_python_session *s = arg;
    pthread_mutex_lock(&s->lock);
    if (store && s->state == INTERP_RUNNING) cell_measure(s, store);
    s->store = NULL;
    s->memory = NULL;
    pthread_mutex_unlock(&s->lock);
}

/* Is this one write the cell's trailer? The nonce was written before the
 * cell was published, so reading it here without the lock is ordered by
 * the lock session_stdin took to pick the cell up. */
static bool is_trailer(al_python_session *s, const uint8_t *data, size_t len) {
    static const char tag[] = "AIRLOCK-END ";
    size_t tl = sizeof tag - 1;
    if (!s->nonce[0] || len < tl + NONCE_HEX + 1 || memcmp(data, tag, tl) != 0 ||
        memcmp(data + tl, s->nonce, NONCE_HEX) != 0 || data[tl + NONCE_HEX] != ' ')
        return false;
    const uint8_t *word = data + tl + NONCE_HEX + 1;
    size_t wl = len - (tl + NONCE_HEX + 1);
    if (wl == 3 && !memcmp(word, "ok\n", 3)) s->outcome = CELL_OK;
    else if (wl == 6 && !memcmp(word, "error\n", 6)) s->outcome = CELL_RAISED;
    else return false;
    return true;
}

static void session_output(void *arg, int stream, const uint8_t *data, size_t len) {
    al_python_session *s = arg;
    if (stream == 2 && is_trailer(s, data, len)) return;
    capture_append(stream == 1 ? &s->out : &s->err, data, len); /* caps, then on_output */
}

/* fd 0: the published cell's bytes; when they are all read and the trailer
 * was written, the cell is complete and this waits for the next one. */
static size_t session_stdin(void *arg, uint8_t *dst, size_t len, al_trap_kind *trap) {
    al_python_session *s = arg;
    size_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->store && al_store_interrupted(s->store)) {
            *trap = AL_TRAP_INTERRUPTED;
            break;
        }
        if (s->state == INTERP_PENDING) {
            s->state = INTERP_RUNNING;
            if (s->store) al_store_set_fuel(s->store, s->cell_budget);
        }
        if (s->state == INTERP_RUNNING && s->cell_pos < s->cell_len) {
            n = s->cell_len - s->cell_pos < len ? s->cell_len - s->cell_pos : len;
            memcpy(dst, s->cell + s->cell_pos, n);
            s->cell_pos += n;
            break;
        }
        if ((s->state == INTERP_RUNNING && s->outcome != CELL_UNKNOWN) ||
            s->state == INTERP_STARTING) {
            if (s->state == INTERP_RUNNING && s->store) cell_measure(s, s->store);
            s->state = INTERP_IDLE;
            pthread_cond_broadcast(&s->changed);
            continue;
        }
        if (s->closing) break; /* end of input: the driver returns */
        pthread_cond_wait(&s->changed, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void *interpreter_main(void *arg) {
    al_python_session *s = arg;
    al_result r;
    sandbox_run_wasm_module(&s->run.policy, s->py->module, &s->hooks, &r);
    pthread_mutex_lock(&s->lock);
    s->run_result = r;
    s->state = INTERP_DEAD;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- the interpreter's life (under lock) ------------------------------------------------ */

static void captures_reset(al_python_session *s) {
    capture_free(&s->out);
    capture_free(&s->err);
    capture_init(&s->out, s->base.stdout_cap);
    capture_init(&s->err, s->base.stderr_cap);
    capture_stream_to(&s->out, &s->base, 1);
    capture_stream_to(&s->err, &s->base, 2);
}

static bool interpreter_start(al_python_session *s, al_error *err) {
    s->nonce[0] = '\0';
    s->outcome = CELL_UNKNOWN;
    s->state = INTERP_STARTING;
    pthread_attr_t attr;
    bool ok = pthread_attr_init(&attr) == 0;
    if (ok) {
        pthread_attr_setstacksize(&attr, SESSION_STACK_BYTES);
        ok = pthread_create(&s->thread, &attr, interpreter_main, s) == 0;
        pthread_attr_destroy(&attr);
    }
    if (!ok) {
        s->state = INTERP_NONE;
        return py_error(err, AL_ERR_SYSTEM, "python session: cannot start a thread");
    }
    return true;
}

/* The thread has ended (DEAD): join it. The run's result stays for the
 * caller to read until the next start or close frees it. */
static void interpreter_reap(al_python_session *s) {
    pthread_join(s->thread, NULL); /* it only had to return after unlocking */
    s->state = INTERP_NONE;
}

/* Wait (under lock) until pred no longer holds or deadline_ns passes
 * (0: none). False on timeout. */
static bool wait_while(al_python_session *s, bool (*pred)(const al_python_session *),
                       uint64_t deadline_ns) {
    while (pred(s)) {
        if (!deadline_ns) {
            pthread_cond_wait(&s->changed, &s->lock);
            continue;
        }
        struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                              .tv_nsec = (long)(deadline_ns % 1000000000u)};
        if (pthread_cond_timedwait(&s->changed, &s->lock, &ts) == ETIMEDOUT && pred(s))
            return false;
    }
    return true;
}

static bool is_starting(const al_python_session *s) { return s->state == INTERP_STARTING; }
static bool is_alive(const al_python_session *s) {
    return s->state != INTERP_DEAD && s->state != INTERP_NONE;
}
static bool cell_in_progress(const al_python_session *s) {
    return s->state == INTERP_PENDING || s->state == INTERP_RUNNING;
}

static void interrupt(al_python_session *s) {
    if (s->store) al_store_interrupt(s->store);
    pthread_cond_broadcast(&s->changed); /* a session_stdin waiting for a cell */
}

/* Wait for the interpreter to ask for its first cell. False when it died
 * (or did not get there in time): the thread is then joined and err says
 * why, with the first line it wrote on stderr. */
static bool interpreter_ready(al_python_session *s, al_error *err) {
    uint64_t deadline = sandbox_now_ns() + (uint64_t)STARTUP_TIMEOUT_MS * 1000000u;
    bool in_time = wait_while(s, is_starting, deadline);
    if (!in_time) {
        interrupt(s);
        wait_while(s, is_alive, 0);
    }
    if (s->state != INTERP_DEAD) return true;
    interpreter_reap(s);
    const char *line = s->err.data ? (const char *)s->err.data : "";
    py_error(err, s->run_result.error.kind ? s->run_result.error.kind : AL_ERR_SYSTEM,
             "python session: the interpreter did not start (%s)%s%.*s",
             !in_time ? "not ready within 120 s"
             : s->run_result.error.message[0] ? s->run_result.error.message
                                              : al_status_name(s->run_result.status),
             line[0] ? ": " : "", (int)strcspn(line, "\n"), line);
    return false;
}

/* ---- opening and closing ------------------------------------------------------------------- */

static char *keep_string(al_python_session *s, const char *str) {
    char *copy = strdup(str);
    if (copy) s->strings[s->nstrings++] = copy;
    return copy;
}

/* base = the caller's policy with its env and dirs copied; what a WASM
 * session does not use (argv, stdin, cwd, native and gVisor settings,
 * egress — refused for WASM already) is dropped. Fuel and timeout become
 * per execution: the interpreter's own run has neither. */
static bool copy_base(al_python_session *s, const al_policy *p) {
    s->base = *p;
    s->base.argv = NULL;
    s->base.argc = 0;
    s->base.stdin_data = NULL;
    s->base.stdin_len = 0;
    s->base.cwd = s->base.state_dir = s->base.gvisor_platform = NULL;
    memset(&s->base.egress, 0, sizeof s->base.egress);
    s->fuel = p->fuel == 0 || p->fuel > SANDBOX_UNMETERED_FUEL ? SANDBOX_UNMETERED_FUEL : p->fuel;
    s->default_timeout_ms = p->timeout_ms;
    s->base.fuel = 0;
    s->base.timeout_ms = 0;
    /* Cancellation too is per execution (run_cell watches the flag): the
     * interpreter's own run is not cancelled while it idles. */
    s->cancel = p->cancel;
    s->base.cancel = NULL;
    s->base.cancel_reason = NULL;
    s->strings = calloc(p->nenv + 2 * p->ndirs + 2, sizeof *s->strings);
    s->env_copy = calloc(p->nenv + 1, sizeof *s->env_copy);
    s->dirs_copy = calloc(p->ndirs + 1, sizeof *s->dirs_copy);
    if (!s->strings || !s->env_copy || !s->dirs_copy) return false;
    for (size_t i = 0; i < p->nenv; i++)
        if (!(s->env_copy[i] = keep_string(s, p->env[i]))) return false;
    for (size_t i = 0; i < p->ndirs; i++) {
        s->dirs_copy[i].read_only = p->dirs[i].read_only;
        if (!(s->dirs_copy[i].host_path = keep_string(s, p->dirs[i].host_path)) ||
            !(s->dirs_copy[i].guest_path = keep_string(s, p->dirs[i].guest_path)))
            return false;
    }
    s->base.env = s->env_copy;
    s->base.dirs = s->dirs_copy;
    if (p->cancel_reason && !(s->cancel_reason = keep_string(s, p->cancel_reason))) return false;
    return true;
}

static void session_free(al_python_session *s) {
    capture_free(&s->out);
    capture_free(&s->err);
    al_result_free(&s->run_result);
    py_policy_free(&s->run);
    for (size_t i = 0; i < s->nstrings; i++) free(s->strings[i]);
    free(s->strings);
    free(s->env_copy);
    free(s->dirs_copy);
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static bool sync_init(al_python_session *s) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&s->changed, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (ok && pthread_mutex_init(&s->lock, NULL) != 0) {
        pthread_cond_destroy(&s->changed);
        ok = false;
    }
    return ok;
}

static al_python_session *session_new(al_python *py, const al_policy *policy, al_error *err) {
    al_python_session *s = calloc(1, sizeof *s);
    if (!s) {
        py_error(err, AL_ERR_NOMEM, "python session: out of memory");
        return NULL;
    }
    if (!sync_init(s)) {
        free(s);
        py_error(err, AL_ERR_SYSTEM, "python session: cannot make a lock");
        return NULL;
    }
    s->py = py;
    const char *pre[2] = {"-c", DRIVER};
    if (!copy_base(s, policy) || !py_policy_build(&s->run, py, &s->base, pre, 2)) {
        session_free(s);
        py_error(err, AL_ERR_NOMEM, "python session: out of memory");
        return NULL;
    }
    s->hooks = (sandbox_wasm_hooks){
        .stdin_read = session_stdin, .on_output = session_output, .output_unbuffered = true,
        .started = session_started, .stopped = session_stopped, .arg = s,
    };
    captures_reset(s);
    return s;
}

al_python_session *al_python_session_open(al_python *py, const al_policy *policy,
                                          al_error *error) {
    al_error scratch;
    if (!error) error = &scratch;
    memset(error, 0, sizeof *error);
    if (!python_policy_ok(py, policy, error)) return NULL;
    al_python_session *s = session_new(py, policy, error);
    if (!s) return NULL;
    /* Started here, so that a policy python cannot start under (a missing
     * directory, too little memory) fails the open, not the first cell. */
    pthread_mutex_lock(&s->lock);
    bool ok = interpreter_start(s, error) && interpreter_ready(s, error);
    pthread_mutex_unlock(&s->lock);
    if (!ok) {
        session_free(s);
        return NULL;
    }
    return s;
}

void al_python_session_close(al_python_session *s) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->closing = true;
    interrupt(s); /* a running cell stops; an idle interpreter ends */
    while (s->execs > 0) pthread_cond_wait(&s->changed, &s->lock); /* another thread's exec */
    wait_while(s, is_alive, 0);
    if (s->state == INTERP_DEAD) interpreter_reap(s);
    pthread_mutex_unlock(&s->lock);
    session_free(s);
}

/* ---- one execution ------------------------------------------------------------------------- */

/* Append "; note" (or set it on an empty message), as far as it fits. */
static void add_note(al_error *e, const char *note) {
    size_t n = strnlen(e->message, sizeof e->message);
    snprintf(e->message + n, sizeof e->message - n, "%s%s", n ? "; " : "", note);
}

/* "AIRLOCK-CELL <length> <nonce>\n" + code, and the nonce. */
static uint8_t *make_cell(const char *code, size_t len, char nonce[NONCE_HEX + 1], al_error *err) {
    uint8_t raw[NONCE_BYTES];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            py_error(err, AL_ERR_SYSTEM, "python session: getrandom: %s", strerror(errno));
            return NULL;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++) snprintf(nonce + 2 * i, 3, "%02x", raw[i]);
    uint8_t *cell = malloc(CELL_HEADER_LEN + 1 + len);
    if (!cell) {
        py_error(err, AL_ERR_NOMEM, "python session: out of memory");
        return NULL;
    }
    snprintf((char *)cell, CELL_HEADER_LEN + 1, "AIRLOCK-CELL %010zu %s\n", len, nonce);
    memcpy(cell + CELL_HEADER_LEN, code, len);
    return cell;
}

/* The cell completed: the interpreter lives on. */
static void cell_result(al_python_session *s, al_result *r) {
    r->fuel_used = s->cell_fuel_used;
    r->peak_memory_bytes = s->cell_memory;
    if (s->outcome == CELL_RAISED) {
        sandbox_set_status(r, AL_STATUS_EXIT, AL_OK,
                           "the code raised an exception (the traceback is on stderr)");
        r->exit_code = 1;
    } else {
        r->status = AL_STATUS_OK;
    }
}

/* Why run_cell stopped waiting for a cell before it completed. */
typedef enum cell_stop { STOP_NONE, STOP_TIMEOUT, STOP_CANCELLED } cell_stop;

static bool cancel_raised(const al_python_session *s) { return sandbox_flag_raised(s->cancel); }

static const char *cancel_reason(const al_python_session *s) {
    return s->cancel_reason && s->cancel_reason[0] ? s->cancel_reason : "cancelled";
}

/* Under lock, the cell published: wait until it completes (or the
 * interpreter dies), its timeout passes or the session's cancel flag is
 * raised (looked at every SANDBOX_CANCEL_POLL_MS). */
static cell_stop wait_cell(al_python_session *s, uint64_t t0, uint64_t timeout_ms) {
    uint64_t deadline = timeout_ms ? t0 + timeout_ms * 1000000u : 0;
    while (cell_in_progress(s)) {
        if (cancel_raised(s)) return STOP_CANCELLED;
        uint64_t now = sandbox_now_ns(), until = deadline;
        if (deadline && now >= deadline) return STOP_TIMEOUT;
        if (s->cancel) {
            uint64_t poll = now + (uint64_t)SANDBOX_CANCEL_POLL_MS * 1000000u;
            if (!until || poll < until) until = poll;
        }
        wait_while(s, cell_in_progress, until);
    }
    return STOP_NONE;
}

/* The interpreter died during the cell: its run's outcome is the cell's,
 * in the cell's terms (the run had no timeout or budget of its own). */
static void death_result(al_python_session *s, al_result *r, cell_stop stop, uint64_t timeout_ms) {
    const al_result *rr = &s->run_result;
    r->status = rr->status;
    r->exit_code = rr->exit_code;
    r->trap = rr->trap;
    r->error = rr->error;
    r->limits_hit = rr->limits_hit & ~(uint32_t)AL_LIMIT_OUTPUT;
    r->fuel_used = s->cell_fuel_used;
    r->peak_memory_bytes = s->cell_memory ? s->cell_memory : rr->peak_memory_bytes;
    if (s->closing) {
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT,
                           "the session was closed while the code ran");
    } else if (stop == STOP_CANCELLED) {
        sandbox_set_status(r, AL_STATUS_CANCELLED, AL_ERR_TRAP, "%s", cancel_reason(s));
        r->trap = r->error.trap = AL_TRAP_INTERRUPTED;
        r->limits_hit &= ~(uint32_t)AL_LIMIT_WALL; /* the interrupt reads as a timeout to the run */
    } else if (stop == STOP_TIMEOUT) {
        sandbox_set_status(r, AL_STATUS_TIMEOUT, AL_ERR_TRAP, "timed out after %" PRIu64 " ms",
                           timeout_ms);
        r->trap = r->error.trap = AL_TRAP_INTERRUPTED;
        r->limits_hit |= AL_LIMIT_WALL;
    } else if (rr->status == AL_STATUS_FUEL_EXHAUSTED) {
        snprintf(r->error.message, sizeof r->error.message,
                 "fuel exhausted (budget %" PRIu64 " instructions)", s->cell_budget);
    }
    const char *why = r->error.message[0] ? r->error.message : "exited with code 0";
    size_t n = strnlen(why, sizeof s->ended - 1); /* a long message is cut */
    memcpy(s->ended, why, n);
    s->ended[n] = '\0';
    /* A cancelled cell's message is the cancel reason alone, as on every
     * backend; the next execution's "interpreter restarted" tells the rest. */
    if (stop != STOP_CANCELLED)
        add_note(&r->error, "the interpreter ended; the next execution starts a fresh one");
}

/* Under lock: make sure an interpreter is waiting for a cell. *restarted
 * says a fresh one had to be started after one had ended. */
static bool ensure_interpreter(al_python_session *s, bool *restarted, al_error *err) {
    *restarted = false;
    if (s->state == INTERP_DEAD) interpreter_reap(s);
    if (s->state == INTERP_NONE) {
        al_result_free(&s->run_result);
        memset(&s->run_result, 0, sizeof s->run_result);
        *restarted = true;
        if (!interpreter_start(s, err)) return false;
    }
    return interpreter_ready(s, err);
}

/* Under lock, an interpreter IDLE: publish the cell, wait for it to
 * complete, the timeout or the interpreter's end; fill r. */
static void run_cell(al_python_session *s, uint8_t *cell, size_t cell_len, const char *nonce,
                     uint64_t timeout_ms, al_result *r) {
    memcpy(s->nonce, nonce, NONCE_HEX + 1);
    s->cell = cell;
    s->cell_len = cell_len;
    s->cell_pos = 0;
    s->cell_budget = s->fuel;
    s->cell_fuel_used = s->cell_memory = 0;
    s->outcome = CELL_UNKNOWN;
    s->state = INTERP_PENDING;
    pthread_cond_broadcast(&s->changed);
    uint64_t t0 = sandbox_now_ns();
    cell_stop stop = wait_cell(s, t0, timeout_ms);
    if (stop != STOP_NONE) interrupt(s);
    wait_while(s, cell_in_progress, 0); /* after an interrupt: until it has died */
    r->wall_ns = sandbox_now_ns() - t0;
    s->cell = NULL;
    s->cell_len = s->cell_pos = 0;
    if (s->state == INTERP_DEAD) {
        interpreter_reap(s);
        death_result(s, r, stop, timeout_ms);
    } else {
        cell_result(s, r);
    }
}

/* Under lock, after the cell: outputs, truncation, the restart note. */
static void finish_result(al_python_session *s, al_result *r, bool restarted,
                          const char *previous_end) {
    capture_move_to_result(&s->out, &r->stdout_data, &r->stdout_len, &r->stdout_truncated);
    capture_move_to_result(&s->err, &r->stderr_data, &r->stderr_len, &r->stderr_truncated);
    captures_reset(s);
    if (r->stdout_truncated || r->stderr_truncated) {
        r->limits_hit |= AL_LIMIT_OUTPUT;
        if (r->status == AL_STATUS_OK) r->status = AL_STATUS_OUTPUT_TRUNCATED;
    }
    if (restarted && previous_end[0]) {
        char note[sizeof s->ended + 64];
        snprintf(note, sizeof note, "interpreter restarted (the previous one ended: %s)",
                 previous_end);
        add_note(&r->error, note);
    }
}

static void exec_locked(al_python_session *s, uint8_t *cell, size_t cell_len, const char *nonce,
                        uint64_t timeout_ms, al_result *r) {
    char previous_end[sizeof s->ended];
    memcpy(previous_end, s->ended, sizeof previous_end);
    bool restarted = false;
    al_error err;
    if (cancel_raised(s)) {
        /* Nothing was published: the interpreter (if any) lives on. */
        sandbox_set_status(r, AL_STATUS_CANCELLED, AL_OK, "%s", cancel_reason(s));
    } else if (!ensure_interpreter(s, &restarted, &err)) {
        r->status = AL_STATUS_ERROR;
        r->error = err;
        snprintf(s->ended, sizeof s->ended, "it did not start");
    } else {
        s->ended[0] = '\0';
        run_cell(s, cell, cell_len, nonce, timeout_ms, r);
    }
    finish_result(s, r, restarted, previous_end);
}

bool al_python_session_exec(al_python_session *s, const char *code, uint64_t timeout_ms,
                            al_result *result) {
    if (!result) return false;
    al_error err;
    memset(&err, 0, sizeof err);
    if (!s || !code) {
        py_error(&err, AL_ERR_ARGUMENT, "python session: NULL %s", s ? "code" : "session");
        result_refused(result, &err);
        return true;
    }
    size_t len = strlen(code);
    if (len > MAX_CELL_BYTES) {
        py_error(&err, AL_ERR_LIMIT, "python session: the code is larger than 16 MiB");
        result_refused(result, &err);
        return true;
    }
    if (timeout_ms == 0) timeout_ms = s->default_timeout_ms;
    if (timeout_ms > SANDBOX_MAX_TIMEOUT_MS) timeout_ms = SANDBOX_MAX_TIMEOUT_MS;
    char nonce[NONCE_HEX + 1];
    uint8_t *cell = make_cell(code, len, nonce, &err);
    if (!cell) {
        result_refused(result, &err);
        return true;
    }
    pthread_mutex_lock(&s->lock);
    if (s->closing || s->execs > 0) {
        py_error(&err, AL_ERR_ARGUMENT, "python session: %s",
                 s->closing ? "closed" : "another execution is running (one at a time)");
        pthread_mutex_unlock(&s->lock);
        free(cell);
        result_refused(result, &err);
        return true;
    }
    s->execs++;
    memset(result, 0, sizeof *result);
    snprintf(result->backend, sizeof result->backend, "wasm");
    exec_locked(s, cell, CELL_HEADER_LEN + len, nonce, timeout_ms, result);
    s->execs--;
    pthread_cond_broadcast(&s->changed); /* a close waiting for this exec */
    pthread_mutex_unlock(&s->lock);
    free(cell);
    return true;
}
