/*
 * policy.c — the policy half of "one policy in, one result out": defaults,
 * validation, status names and the result's lifetime.
 *
 * Invariants:
 *  - al_policy_init grants nothing: no arguments, environment, directories or
 *    stdin; the numeric limits are the documented defaults in airlock.h.
 *  - sandbox_policy_check reads the policy and nothing else; it accepts a
 *    policy only if every pointer it will dereference is non-NULL where a
 *    count says there is data, and every limit is within the SANDBOX_MAX_*
 *    bounds, so the backends never have to re-check.
 *  - an al_result owns exactly stdout_data and stderr_data; al_result_free
 *    releases them and may be called again (or on a zeroed result);
 *  - al_policy.cancel is only ever read, with an acquire load (the embedder
 *    raises it from another thread): sandbox_flag_raised is the one place
 *    that dereferences it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"

void al_policy_init(al_policy *policy) {
    if (!policy) return;
    memset(policy, 0, sizeof *policy);
    policy->isolation = AL_ISOLATION_WASM;
    policy->fuel = 0;       /* unmetered */
    policy->timeout_ms = 0; /* no wall-clock limit */
    policy->max_memory_bytes = UINT64_C(256) << 20;
    policy->trap_on_memory_limit = false;
    policy->max_table_elements = 10000;
    policy->max_tables = 16;
    policy->max_memories = 4;
    policy->max_instances = 16;
    policy->max_module_bytes = (size_t)50 << 20;
    policy->stdout_cap = (size_t)1 << 20;
    policy->stderr_cap = (size_t)1 << 20;
    policy->max_processes = 64;
    policy->egress.max_connections = 16;
    policy->egress.max_bytes_per_connection = UINT64_C(64) << 20;
    policy->egress.max_bytes = UINT64_C(256) << 20;
    policy->egress.idle_timeout_ms = 30000;
    policy->max_open_files = 256;
    policy->max_file_size = UINT64_C(64) << 20;
    policy->tmpfs_bytes = UINT64_C(64) << 20;
}

const char *al_status_name(al_status status) {
    switch (status) {
    case AL_STATUS_OK: return "ok";
    case AL_STATUS_EXIT: return "exit";
    case AL_STATUS_TRAP: return "trap";
    case AL_STATUS_FUEL_EXHAUSTED: return "fuel_exhausted";
    case AL_STATUS_TIMEOUT: return "timeout";
    case AL_STATUS_MEMORY_LIMIT: return "memory_limit";
    case AL_STATUS_OUTPUT_TRUNCATED: return "output_truncated";
    case AL_STATUS_INVALID_MODULE: return "invalid_module";
    case AL_STATUS_ERROR: return "error";
    case AL_STATUS_SIGNALED: return "signaled";
    case AL_STATUS_CPU_LIMIT: return "cpu_limit";
    case AL_STATUS_UNSUPPORTED: return "unsupported";
    case AL_STATUS_CANCELLED: return "cancelled";
    }
    return "error"; /* an out-of-range value is not a status we produced */
}

void al_result_free(al_result *result) {
    if (!result) return;
    free(result->stdout_data);
    free(result->stderr_data);
    result->stdout_data = NULL;
    result->stderr_data = NULL;
    result->stdout_len = 0;
    result->stderr_len = 0;
}

void sandbox_set_status(al_result *result, al_status status, al_error_kind kind,
                        const char *fmt, ...) {
    result->status = status;
    memset(&result->error, 0, sizeof result->error);
    result->error.kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(result->error.message, sizeof result->error.message, fmt, ap);
    va_end(ap);
}

bool sandbox_flag_raised(const int *flag) {
    return flag && __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

bool sandbox_cancel_requested(const al_policy *policy) {
    return policy && sandbox_flag_raised(policy->cancel);
}

const char *sandbox_cancel_reason(const al_policy *policy) {
    return policy && policy->cancel_reason && policy->cancel_reason[0] ? policy->cancel_reason
                                                                       : "cancelled";
}

void sandbox_set_cancelled(al_result *result, const al_policy *policy, al_error_kind kind) {
    sandbox_set_status(result, AL_STATUS_CANCELLED, kind, "%s", sandbox_cancel_reason(policy));
}

uint64_t sandbox_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- validation -------------------------------------------------------------- */

/* Each check below returns false after writing the reason into err:
 * "policy: FIELD: WHY" or "policy: FIELD[I]: WHY". */
static bool refuse(al_error *err, const char *field, const char *why) {
    memset(err, 0, sizeof *err);
    err->kind = AL_ERR_ARGUMENT;
    snprintf(err->message, sizeof err->message, "policy: %s: %s", field, why);
    return false;
}

static bool refuse_at(al_error *err, const char *field, size_t i, const char *why) {
    memset(err, 0, sizeof *err);
    err->kind = AL_ERR_ARGUMENT;
    snprintf(err->message, sizeof err->message, "policy: %s[%zu]: %s", field, i, why);
    return false;
}

static bool check_strings(const char *const *v, size_t n, const char *what, al_error *err) {
    if (n > 0 && !v) return refuse(err, what, "NULL array with a non-zero count");
    for (size_t i = 0; i < n; i++)
        if (!v[i]) return refuse_at(err, what, i, "NULL entry");
    return true;
}

/* "KEY=VALUE" with a non-empty KEY: the guest's environ_get hands these out
 * verbatim, and libc would silently ignore a malformed entry. */
static bool check_env(const al_policy *p, al_error *err) {
    if (!check_strings(p->env, p->nenv, "env", err)) return false;
    for (size_t i = 0; i < p->nenv; i++) {
        const char *eq = strchr(p->env[i], '=');
        if (!eq) return refuse_at(err, "env", i, "not of the form KEY=VALUE");
        if (eq == p->env[i]) return refuse_at(err, "env", i, "empty variable name");
    }
    return true;
}

/* A guest path is absolute and has no "." or ".." component: its meaning must
 * not depend on how the WASI host resolves it. Trailing and repeated slashes
 * are harmless. */
static const char *guest_path_problem(const char *g) {
    if (g[0] != '/') return "guest path is not absolute";
    if (strlen(g) >= SANDBOX_MAX_GUEST_PATH) return "guest path is too long";
    for (const char *c = g; *c;) {
        while (*c == '/') c++;
        size_t n = strcspn(c, "/");
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return "guest path has a '.' or '..' component";
        c += n;
    }
    return NULL;
}

/* Two guest paths name the same directory when they differ only in slashes. */
static bool same_guest_path(const char *a, const char *b) {
    for (;;) {
        while (*a == '/') a++;
        while (*b == '/') b++;
        size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
        if (na != nb || memcmp(a, b, na) != 0) return false;
        if (na == 0) return true; /* both at their end */
        a += na;
        b += nb;
    }
}

static bool check_dirs(const al_policy *p, al_error *err) {
    if (p->ndirs > 0 && !p->dirs) return refuse(err, "dirs", "NULL array with a non-zero count");
    for (size_t i = 0; i < p->ndirs; i++) {
        const al_dir_grant *d = &p->dirs[i];
        if (!d->host_path || !d->host_path[0]) return refuse_at(err, "dirs", i, "empty host path");
        if (!d->guest_path) return refuse_at(err, "dirs", i, "NULL guest path");
        const char *why = guest_path_problem(d->guest_path);
        if (why) return refuse_at(err, "dirs", i, why);
        for (size_t j = 0; j < i; j++)
            if (same_guest_path(p->dirs[j].guest_path, d->guest_path))
                return refuse_at(err, "dirs", i, "guest path granted twice");
    }
    return true;
}

static bool check_limits(const al_policy *p, al_error *err) {
    if (p->max_module_bytes == 0 || p->max_module_bytes > SANDBOX_MAX_MODULE_BYTES)
        return refuse(err, "max_module_bytes", "must be between 1 byte and 1 GiB");
    if (p->stdout_cap > SANDBOX_MAX_OUTPUT_CAP || p->stderr_cap > SANDBOX_MAX_OUTPUT_CAP)
        return refuse(err, "stdout_cap/stderr_cap", "must be at most 1 GiB");
    if (p->timeout_ms > SANDBOX_MAX_TIMEOUT_MS)
        return refuse(err, "timeout_ms", "too large");
    if (p->max_instances == 0)
        return refuse(err, "max_instances", "must be at least 1 (the module itself)");
    return true;
}

/* What only the native and gvisor backends read. */
static bool check_program(const al_policy *p, al_error *err) {
    if (p->argc == 0 || !p->argv || !p->argv[0] || !p->argv[0][0])
        return refuse(err, "argv", "a program to run is required (argv[0])");
    if (p->argc > SANDBOX_MAX_ARGS) return refuse(err, "argv", "too many arguments");
    if (p->nenv > SANDBOX_MAX_ENV) return refuse(err, "env", "too many variables");
    if (p->ndirs > SANDBOX_MAX_DIRS) return refuse(err, "dirs", "too many directories");
    if (p->cwd) {
        const char *why = guest_path_problem(p->cwd);
        if (why) return refuse(err, "cwd", why);
    }
    for (size_t i = 0; i < p->ndirs; i++)
        if (!strcmp(p->dirs[i].guest_path, "/") || p->dirs[i].guest_path[strspn(p->dirs[i].guest_path, "/")] == 0)
            return refuse_at(err, "dirs", i, "a directory cannot replace the sandbox's root");
    if (p->cpu_time_ms > SANDBOX_MAX_TIMEOUT_MS) return refuse(err, "cpu_time_ms", "too large");
    if (p->max_memory_bytes != 0 && p->max_memory_bytes < (UINT64_C(4) << 20))
        return refuse(err, "max_memory_bytes", "below 4 MiB no program can start");
    if (p->tmpfs_bytes > (UINT64_C(1) << 40)) return refuse(err, "tmpfs_bytes", "too large");
    if (p->max_open_files > (1u << 20)) return refuse(err, "max_open_files", "at most 1048576");
    if (p->gvisor_platform && strcmp(p->gvisor_platform, "ptrace") &&
        strcmp(p->gvisor_platform, "systrap") && strcmp(p->gvisor_platform, "kvm"))
        return refuse(err, "gvisor_platform", "one of ptrace, systrap, kvm");
    return true;
}

/* A WebAssembly guest has no socket API at all, so a grant there would be
 * silently meaningless: say so instead. The rules themselves are checked
 * (with the field named) when the backend builds the proxy's config. */
static bool check_egress(const al_policy *p, al_error *err) {
    const al_egress *e = &p->egress;
    if (p->isolation == AL_ISOLATION_WASM && (e->nallow_domains > 0 || e->nallow_ips > 0))
        return refuse(err, "egress",
                      "WebAssembly guests have no sockets; network egress applies to the "
                      "native and gvisor backends");
    if (!check_strings(e->allow_domains, e->nallow_domains, "egress.allow_domains", err) ||
        !check_strings(e->deny_domains, e->ndeny_domains, "egress.deny_domains", err) ||
        !check_strings(e->allow_ips, e->nallow_ips, "egress.allow_ips", err))
        return false;
    if ((e->nallow_ports > 0 && !e->allow_ports) || (e->nheaders > 0 && !e->headers) ||
        (e->nhosts > 0 && !e->hosts))
        return refuse(err, "egress", "NULL array with a non-zero count");
    return true;
}

al_status sandbox_policy_check(const al_policy *p, al_error *err) {
    if (!p) {
        refuse(err, "policy", "NULL");
        return AL_STATUS_ERROR;
    }
    switch (p->isolation) {
    case AL_ISOLATION_WASM: break;
    case AL_ISOLATION_NATIVE:
    case AL_ISOLATION_GVISOR:
        if (!check_program(p, err)) return AL_STATUS_ERROR;
        break;
    default:
        refuse(err, "isolation", "unknown isolation backend");
        return AL_STATUS_ERROR;
    }
    if (!check_strings(p->argv, p->argc, "argv", err) || !check_env(p, err) ||
        !check_dirs(p, err) || !check_limits(p, err) || !check_egress(p, err))
        return AL_STATUS_ERROR;
    if (p->stdin_len > 0 && !p->stdin_data) {
        refuse(err, "stdin_data", "NULL with a non-zero stdin_len");
        return AL_STATUS_ERROR;
    }
    return AL_STATUS_OK;
}
