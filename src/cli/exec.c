/*
 * exec.c — `airlock exec`: run any Linux program under a policy, in the
 * native sandbox (namespaces, seccomp, Landlock, cgroups) or in gVisor, with
 * the same options, result and exit codes as `airlock run`.
 *
 * A thin caller of al_exec: the options become one al_policy, the al_result
 * becomes output, a status line and an exit code. The policy options shared
 * with `run` (--dir, --env, --stdin, --timeout, --memory, --json) go through
 * run.c's parser so the spellings and messages are the same.
 *
 * Network egress (--allow-domain, --deny-domain, --allow-port, --allow-ip,
 * --inject-header, --resolve, --egress-*) and --policy FILE are parsed by
 * policy_file.c, which also reads the JSON policy file. The file is applied
 * first and the command line after it, wherever --policy appears: a scalar
 * flag replaces the file's value, a list flag (--dir, --env, the egress
 * rules) adds to the file's list. Everything the al_policy points to is owned
 * by exec_options, exec_job or the parsed file, all alive until al_exec has
 * returned and freed after the report.
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

#include "policy_file.h"
#include "run.h"

static const char exec_usage[] =
    "usage: airlock exec [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Run a Linux program (python3, sh, git, a compiler...) in a sandbox. Zero\n"
    "trust: it sees a read-only /usr, a minimal /etc, its own /proc, /dev and\n"
    "/tmp, no network but loopback, no environment but PATH, HOME and LANG, and\n"
    "only the directories granted with --dir. It runs as uid 1000 with no\n"
    "capabilities, no new privileges, a seccomp filter and a Landlock ruleset.\n"
    "PROGRAM is looked up in the sandbox's PATH when it has no '/'.\n"
    "\n"
    "options (before PROGRAM; --NAME=VALUE works too):\n"
    "  --isolation native|gvisor|wasm\n"
    "                   native (default): namespaces + seccomp + Landlock + cgroups;\n"
    "                   gvisor: inside gVisor (runsc); wasm: PROGRAM is a .wasm file\n"
    "  --dir HOST[:GUEST][:ro|:rw]   grant a host directory (read-only unless :rw)\n"
    "  --env KEY=VALUE  set a variable (repeatable)\n"
    "  --stdin FILE     the program's stdin (\"-\": airlock's own; at most 64 MiB)\n"
    "  --cwd PATH       working directory inside (default: the first --dir, else /tmp)\n"
    "  --timeout T      wall-clock limit (500ms, 30s, 2m); kills the whole process tree\n"
    "  --cpu-time T     CPU time of the whole tree\n"
    "  --memory SIZE    memory of the whole tree (default 256M; K/M/G suffixes)\n"
    "  --processes N    processes and threads at once (default 64)\n"
    "  --open-files N   open files per process (default 256)\n"
    "  --file-size SIZE largest file the program may write (default 64M)\n"
    "  --tmpfs SIZE     size of the private /tmp (default 64M)\n"
    "  --state-dir DIR  where gVisor bundles and state live (default /run/airlock\n"
    "                   as root, else $XDG_RUNTIME_DIR/airlock)\n"
    "  --gvisor-platform ptrace|systrap|kvm   (default: the best that works here)\n"
    "  --policy FILE    a JSON policy file (format: docs/api.md); the options\n"
    "                   given on the command line replace its values or add to its lists\n"
    "  --json           print one JSON object: status, exit_code, signal, limits_hit,\n"
    "                   cpu_ms, wall_ms, peak_memory_bytes, denied_syscalls, backend,\n"
    "                   stdout, stderr, *_truncated, dirs, egress, error\n"
    "\n"
    "network egress (native and gvisor; none unless a domain or IP is allowed): the\n"
    "program reaches only airlock's proxy (HTTP_PROXY=http://127.0.0.1:3128), which\n"
    "lets through HTTP and HTTPS (CONNECT) to what these options allow:\n"
    "  --allow-domain NAME     allow a domain, or \"*.example.com\" (repeatable)\n"
    "  --deny-domain NAME      refuse a domain even if allowed (repeatable)\n"
    "  --allow-port N          allow a port besides 80 and 443 (repeatable)\n"
    "  --allow-ip CIDR         allow addresses the deny-list refuses, or literal IPs\n"
    "  --inject-header DOMAIN:NAME:VALUE\n"
    "                          the proxy adds this header to plain-HTTP requests to\n"
    "                          DOMAIN; VALUE never enters the sandbox (not in HTTPS)\n"
    "  --resolve NAME:ADDRESS  answer NAME with ADDRESS instead of DNS ([::1] for IPv6)\n"
    "  --egress-connections N  connections open at once (default 16)\n"
    "  --egress-bytes SIZE     bytes per execution, both directions (default 256M)\n"
    "  --egress-connection-bytes SIZE   bytes per connection (default 64M)\n"
    "  --egress-idle T         close a connection silent this long (default 30s)\n"
    "  --egress-log FILE       append every proxy decision to FILE as a JSON line\n"
    "\n"
    "exit status:\n"
    "  0..255  the program's exit code      128+N  killed by signal N\n"
    "  1  error (bad --dir, program not found, setup failed)   2  usage error\n"
    "  69 the backend is not available on this host (see `airlock doctor`)\n"
    "  72 timeout   73 memory limit   74 CPU-time limit\n";

typedef struct exec_options {
    run_options run;          /* --dir, --env, --stdin, --timeout, --memory, --json */
    al_isolation isolation;
    bool isolation_given;     /* --isolation was on the command line */
    uint64_t cpu_time_ms, processes, open_files, file_size, tmpfs;
    const char *cwd, *state_dir, *platform;
    const char *policy_path;  /* --policy FILE */
    cli_egress egress;        /* owned: the egress flags, then merged with the file's */
} exec_options;

typedef struct exec_job {
    const exec_options *opt;
    al_policy policy;
    char **canonical;         /* owned, one per --dir */
    char **guests;            /* owned */
    al_dir_grant *grants;     /* owned */
    cli_json_dir *report;     /* owned */
    uint8_t *stdin_data;      /* owned */
    size_t stdin_len;
    al_result result;
} exec_job;

/* ---- options ------------------------------------------------------------------ */

/* run.h; cap.c parses its options with it too. */
bool cli_option_value(int argc, char **argv, int *i, const char *name, const char **value) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *value = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    *value = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

static int bad_value(const char *name, const char *value, const char *why) {
    if (value) fprintf(stderr, "airlock exec: %s '%s': %s\n", name, value, why);
    else fprintf(stderr, "airlock exec: %s: %s\n", name, why);
    return CLI_USAGE;
}

static int parse_isolation(const char *v, exec_options *o) {
    o->isolation_given = true;
    if (!strcmp(v, "native")) o->isolation = AL_ISOLATION_NATIVE;
    else if (!strcmp(v, "gvisor")) o->isolation = AL_ISOLATION_GVISOR;
    else if (!strcmp(v, "wasm")) o->isolation = AL_ISOLATION_WASM;
    else return bad_value("--isolation", v, "expected native, gvisor or wasm");
    return CLI_OK;
}

/* The options only `exec` has. CLI_NOT_POLICY_OPTION when argv[*i] is none. */
static int parse_exec_option(int argc, char **argv, int *i, exec_options *o) {
    const char *v = NULL, *why = NULL;
    static const char *const names[] = {"--isolation", "--cpu-time", "--processes",
                                        "--open-files", "--file-size", "--tmpfs",
                                        "--cwd", "--state-dir", "--gvisor-platform",
                                        "--policy"};
    size_t k = 0;
    for (; k < sizeof names / sizeof *names; k++)
        if (cli_option_value(argc, argv, i, names[k], &v)) break;
    if (k == sizeof names / sizeof *names) return CLI_NOT_POLICY_OPTION;
    const char *name = names[k];
    if (!v) return bad_value(name, NULL, "needs a value");
    bool ok = true;
    switch (k) {
    case 0: return parse_isolation(v, o);
    case 1: ok = cli_parse_duration_ms(v, &o->cpu_time_ms, &why); break;
    case 2: ok = cli_parse_count(v, &o->processes, &why) && (o->processes <= 1000000 || !(why = "at most 1000000")); break;
    case 3: ok = cli_parse_count(v, &o->open_files, &why) && (o->open_files <= 1048576 || !(why = "at most 1048576")); break;
    case 4: ok = cli_parse_bytes(v, &o->file_size, &why); break;
    case 5: ok = cli_parse_bytes(v, &o->tmpfs, &why); break;
    case 6: o->cwd = v; ok = v[0] == '/' || !(why = "must be an absolute path inside the sandbox"); break;
    case 7: o->state_dir = v; ok = v[0] == '/' || !(why = "must be an absolute path"); break;
    case 8: o->platform = v; break;
    case 9:
        if (o->policy_path) return bad_value(name, NULL, "given twice");
        o->policy_path = v;
        ok = v[0] != '\0' || !(why = "empty file name");
        break;
    }
    return ok ? CLI_OK : bad_value(name, v, why);
}

/* Returns CLI_OK with *first at PROGRAM's index, CLI_USAGE, CLI_FAIL, or -1
 * after --help. */
static int parse_command_line(int argc, char **argv, exec_options *o, int *first) {
    o->isolation = AL_ISOLATION_NATIVE;
    if (!cli_run_options_init(&o->run, "exec", argc, 0)) return CLI_FAIL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(exec_usage, stdout);
            return -1;
        }
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-') break;
        int rc = parse_exec_option(argc, argv, &i, o);
        if (rc == CLI_NOT_POLICY_OPTION) rc = cli_egress_option(argc, argv, &i, &o->egress);
        if (rc == CLI_NOT_POLICY_OPTION) rc = cli_parse_policy_option(argc, argv, &i, &o->run);
        if (rc == CLI_NOT_POLICY_OPTION) {
            fprintf(stderr, "airlock exec: unknown option '%s' (see 'airlock exec --help')\n", a);
            return CLI_USAGE;
        }
        if (rc != CLI_OK) return rc;
    }
    if (i >= argc) {
        fputs("airlock exec: missing PROGRAM (usage: airlock exec [OPTIONS] -- PROGRAM [ARGS...])\n",
              stderr);
        return CLI_USAGE;
    }
    if (o->isolation != AL_ISOLATION_WASM && (o->run.fuel || o->run.trap_on_memory_limit)) {
        fputs("airlock exec: --fuel and --trap-on-memory-limit apply to --isolation wasm only\n",
              stderr);
        return CLI_USAGE;
    }
    *first = i;
    return CLI_OK;
}

/* ---- the policy file ------------------------------------------------------------ */

/* The file's scalars where the command line gave none. */
static void file_scalars(exec_options *o, const cli_policy *f) {
    if (!o->isolation_given && f->has_isolation) o->isolation = f->isolation;
    if (!o->run.timeout_ms) o->run.timeout_ms = f->timeout_ms;
    if (!o->run.memory_bytes) o->run.memory_bytes = f->memory_bytes;
    if (!o->cpu_time_ms) o->cpu_time_ms = f->cpu_time_ms;
    if (!o->processes) o->processes = f->max_processes;
    if (!o->open_files) o->open_files = f->max_open_files;
    if (!o->file_size) o->file_size = f->max_file_size;
    if (!o->tmpfs) o->tmpfs = f->tmpfs_bytes;
    if (!o->cwd) o->cwd = f->cwd;
}

/* Read --policy FILE into *f and put the command line on top of it: f keeps
 * owning the strings the options now point to. Returns CLI_OK, CLI_USAGE (a
 * bad file, message printed) or CLI_FAIL (out of memory). */
static int apply_policy_file(exec_options *o, cli_policy *f) {
    char err[512];
    if (o->policy_path && !cli_policy_load(o->policy_path, f, err, sizeof err)) {
        fprintf(stderr, "airlock exec: --policy %s: %s\n", o->policy_path, err);
        return strcmp(err, "out of memory") ? CLI_USAGE : CLI_FAIL;
    }
    file_scalars(o, f);
    if (!cli_run_options_prepend(&o->run, f->dirs, f->ndirs, f->env, f->nenv)) return CLI_FAIL;
    if (!cli_egress_merge(&f->egress, &o->egress)) {
        fputs("airlock: out of memory\n", stderr);
        return CLI_FAIL;
    }
    o->egress = f->egress; /* the merged rules move to the options */
    memset(&f->egress, 0, sizeof f->egress);
    if (o->isolation == AL_ISOLATION_WASM && cli_egress_given(&o->egress)) {
        fputs("airlock exec: network egress needs --isolation native or gvisor (a WebAssembly "
              "guest has no sockets)\n",
              stderr);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* ---- the policy ----------------------------------------------------------------- */

static void fail(exec_job *j, const char *fmt, const char *arg, const char *why) {
    j->result.status = AL_STATUS_ERROR;
    snprintf(j->result.error.message, sizeof j->result.error.message, fmt, arg, why);
}

static bool resolve_dirs(exec_job *j) {
    const run_options *o = &j->opt->run;
    if (o->ndirs == 0) return true;
    j->canonical = calloc(o->ndirs, sizeof *j->canonical);
    j->guests = calloc(o->ndirs, sizeof *j->guests);
    j->grants = calloc(o->ndirs, sizeof *j->grants);
    j->report = calloc(o->ndirs, sizeof *j->report);
    if (!j->canonical || !j->guests || !j->grants || !j->report) {
        fail(j, "%s%s", "out of memory", "");
        return false;
    }
    for (size_t i = 0; i < o->ndirs; i++) {
        const run_dir *d = &o->dirs[i];
        struct stat st;
        j->canonical[i] = realpath(d->host, NULL);
        if (!j->canonical[i] || stat(j->canonical[i], &st) != 0) {
            fail(j, "--dir %s: %s", d->host, strerror(errno));
            return false;
        }
        if (!S_ISDIR(st.st_mode)) {
            fail(j, "--dir %s: %s", d->host, "not a directory");
            return false;
        }
        j->guests[i] = strdup(d->guest ? d->guest : j->canonical[i]);
        if (!j->guests[i]) {
            fail(j, "%s%s", "out of memory", "");
            return false;
        }
        size_t n = strlen(j->guests[i]);
        while (n > 1 && j->guests[i][n - 1] == '/') j->guests[i][--n] = '\0';
        j->grants[i] = (al_dir_grant){j->canonical[i], j->guests[i], d->read_only};
        j->report[i] = (cli_json_dir){j->canonical[i], j->guests[i], d->read_only};
    }
    return true;
}

static bool read_stdin(exec_job *j) {
    const char *path = j->opt->run.stdin_path;
    if (!path) return true;
    bool own = !strcmp(path, "-");
    int fd = own ? STDIN_FILENO : open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fail(j, "--stdin %s: %s", path, strerror(errno));
        return false;
    }
    size_t cap = 0;
    bool ok = true;
    for (;;) {
        if (j->stdin_len == cap) {
            if (cap >= CLI_MAX_STDIN_BYTES) {
                fail(j, "--stdin %s: %s", path, "more than the 64 MiB limit");
                ok = false;
                break;
            }
            cap = cap ? cap * 2 : 65536;
            uint8_t *grown = realloc(j->stdin_data, cap);
            if (!grown) {
                fail(j, "--stdin %s: %s", path, "out of memory");
                ok = false;
                break;
            }
            j->stdin_data = grown;
        }
        ssize_t n = read(fd, j->stdin_data + j->stdin_len, cap - j->stdin_len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            fail(j, "--stdin %s: %s", path, strerror(errno));
            ok = false;
            break;
        }
        if (n == 0) break;
        j->stdin_len += (size_t)n;
    }
    if (!own) close(fd);
    return ok;
}

static void build_policy(exec_job *j, int argc, char **argv, int first) {
    const exec_options *o = j->opt;
    al_policy *p = &j->policy;
    al_policy_init(p);
    p->isolation = o->isolation;
    p->argv = (const char *const *)argv + first;
    p->argc = (size_t)(argc - first);
    p->env = o->run.env;
    p->nenv = o->run.nenv;
    p->dirs = j->grants;
    p->ndirs = o->run.ndirs;
    p->stdin_data = j->stdin_data;
    p->stdin_len = j->stdin_len;
    p->timeout_ms = o->run.timeout_ms;
    p->fuel = o->run.fuel;
    p->trap_on_memory_limit = o->run.trap_on_memory_limit;
    if (o->run.memory_bytes) p->max_memory_bytes = o->run.memory_bytes;
    p->cpu_time_ms = o->cpu_time_ms;
    if (o->processes) p->max_processes = (uint32_t)o->processes;
    if (o->open_files) p->max_open_files = (uint32_t)o->open_files;
    if (o->file_size) p->max_file_size = o->file_size;
    if (o->tmpfs) p->tmpfs_bytes = o->tmpfs;
    p->cwd = o->cwd;
    p->state_dir = o->state_dir;
    p->gvisor_platform = o->platform;
    cli_egress_fill(&o->egress, &p->egress);
}

/* ---- reporting ------------------------------------------------------------------ */

static void print_status(const exec_job *j) {
    const al_result *r = &j->result;
    const al_policy *p = &j->policy;
    int n = (int)strnlen(r->error.message, sizeof r->error.message);
    switch (r->status) {
    case AL_STATUS_OK:
    case AL_STATUS_EXIT: return;
    case AL_STATUS_OUTPUT_TRUNCATED:
        if (r->stdout_truncated)
            fprintf(stderr, "airlock: warning: the program's stdout was cut at %zu bytes\n", p->stdout_cap);
        if (r->stderr_truncated)
            fprintf(stderr, "airlock: warning: the program's stderr was cut at %zu bytes\n", p->stderr_cap);
        return;
    case AL_STATUS_SIGNALED:
        fprintf(stderr, "airlock: killed by signal %d (%s)\n", r->term_signal, strsignal(r->term_signal));
        return;
    case AL_STATUS_TIMEOUT:
        fprintf(stderr, "airlock: timeout: still running after %" PRIu64 " ms; every process was killed\n",
                p->timeout_ms);
        return;
    case AL_STATUS_CPU_LIMIT:
        fprintf(stderr, "airlock: CPU-time limit: %" PRIu64 " ms used up\n", p->cpu_time_ms);
        return;
    case AL_STATUS_MEMORY_LIMIT:
        fprintf(stderr, "airlock: memory limit (%" PRIu64 " bytes)%s%.*s\n", p->max_memory_bytes,
                n ? ": " : "", n, r->error.message);
        return;
    case AL_STATUS_UNSUPPORTED:
        fprintf(stderr, "airlock: %.*s (see 'airlock doctor')\n", n, r->error.message);
        return;
    default:
        if (r->status == AL_STATUS_TRAP) cli_print_error(NULL, &r->error);
        else fprintf(stderr, "airlock: %.*s\n", n, r->error.message);
        return;
    }
}

static int report(const exec_job *j) {
    const al_result *r = &j->result;
    int code = cli_exit_code(r);
    if (j->opt->run.json) {
        cli_json_write_result(stdout, r, j->report, j->report ? j->opt->run.ndirs : 0);
        if (fflush(stdout) != 0) return CLI_FAIL;
        return code;
    }
    if (r->stdout_len) fwrite(r->stdout_data, 1, r->stdout_len, stdout);
    fflush(stdout);
    if (r->stderr_len) fwrite(r->stderr_data, 1, r->stderr_len, stderr);
    print_status(j);
    return code;
}

static void job_free(exec_job *j) {
    size_t n = j->opt->run.ndirs;
    for (size_t i = 0; i < n; i++) {
        if (j->canonical) free(j->canonical[i]);
        if (j->guests) free(j->guests[i]);
    }
    free(j->canonical);
    free(j->guests);
    free(j->grants);
    free(j->report);
    free(j->stdin_data);
    al_result_free(&j->result);
}

static void options_free(exec_options *o, cli_policy *file) {
    cli_run_options_free(&o->run);
    cli_egress_free(&o->egress);
    cli_policy_free(file);
}

int cli_exec(int argc, char **argv) {
    exec_options opt;
    memset(&opt, 0, sizeof opt);
    cli_policy file; /* owns what the policy file's entries point to */
    memset(&file, 0, sizeof file);
    int first = 0;
    int rc = parse_command_line(argc, argv, &opt, &first);
    if (rc == CLI_OK) rc = apply_policy_file(&opt, &file);
    if (rc != CLI_OK) {
        options_free(&opt, &file);
        return rc < 0 ? CLI_OK : rc;
    }
    exec_job job;
    memset(&job, 0, sizeof job);
    job.opt = &opt;
    if (resolve_dirs(&job) && read_stdin(&job)) {
        build_policy(&job, argc, argv, first);
        if (!al_exec(&job.policy, &job.result)) fail(&job, "%s%s", "no result from al_exec", "");
    }
    int code = report(&job);
    job_free(&job);
    options_free(&opt, &file);
    return code;
}
