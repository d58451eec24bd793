/*
 * session.c — al_session_*: one sandbox kept across executions.
 *
 * A session owns a deep copy of the policy it was opened with (the caller's
 * strings may go away). Each execution takes only the per-run fields from the
 * request (argv, env, stdin, timeout, CPU time, output caps, cwd, on_output,
 * cancel and cancel_reason); the
 * sandbox itself — directories, memory, processes, isolation — stays the
 * session's, so a request cannot widen what the session was granted.
 *
 * GVISOR sessions keep a running gVisor sandbox (gvisor/session.c); NATIVE
 * and WASM sessions run each execution in a fresh sandbox over the same
 * granted directories.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

struct al_session {
    al_policy policy;       /* strings and arrays below are owned */
    char **argv, **env;
    al_dir_grant *dirs;
    char **dir_strings;     /* 2 per grant: host, guest */
    uint8_t *stdin_copy;
    char *cwd, *state_dir, *gvisor_platform;
    /* policy.egress, owned: the network a session was granted is its own */
    char **allow_domains, **deny_domains, **allow_ips;
    uint16_t *allow_ports;
    al_header_grant *headers;
    al_host_entry *hosts;
    char **egress_strings;  /* 3 per header grant, 2 per host entry */
    size_t negress_strings;
    char *egress_log;
    gvisor_sandbox *gvisor; /* GVISOR only */
};

static char *dup_or_null(const char *s, bool *ok) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *ok = false;
    return d;
}

static char **dup_strings(const char *const *v, size_t n, bool *ok) {
    if (n == 0) return NULL;
    char **out = calloc(n, sizeof *out);
    if (!out) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) out[i] = dup_or_null(v[i], ok);
    return out;
}

static void free_strings(char **v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void egress_free(al_session *s) {
    const al_egress *e = &s->policy.egress;
    free_strings(s->allow_domains, e->nallow_domains);
    free_strings(s->deny_domains, e->ndeny_domains);
    free_strings(s->allow_ips, e->nallow_ips);
    free(s->allow_ports);
    free(s->headers);
    free(s->hosts);
    if (s->egress_strings) {
        /* header values are secrets: do not leave them in freed memory */
        for (size_t i = 0; i < s->negress_strings; i++)
            if (s->egress_strings[i])
                explicit_bzero(s->egress_strings[i], strlen(s->egress_strings[i]));
    }
    free_strings(s->egress_strings, s->negress_strings);
    free(s->egress_log);
}

static void session_free(al_session *s) {
    egress_free(s);
    free_strings(s->argv, s->policy.argc);
    free_strings(s->env, s->policy.nenv);
    free_strings(s->dir_strings, 2 * s->policy.ndirs);
    free(s->dirs);
    free(s->stdin_copy);
    free(s->cwd);
    free(s->state_dir);
    free(s->gvisor_platform);
    free(s);
}

static bool copy_dirs(al_session *s, const al_policy *p) {
    if (p->ndirs == 0) return true;
    s->dirs = calloc(p->ndirs, sizeof *s->dirs);
    s->dir_strings = calloc(2 * p->ndirs, sizeof *s->dir_strings);
    if (!s->dirs || !s->dir_strings) return false;
    bool ok = true;
    for (size_t i = 0; i < p->ndirs; i++) {
        s->dir_strings[2 * i] = dup_or_null(p->dirs[i].host_path, &ok);
        s->dir_strings[2 * i + 1] = dup_or_null(p->dirs[i].guest_path, &ok);
        s->dirs[i] = (al_dir_grant){s->dir_strings[2 * i], s->dir_strings[2 * i + 1],
                                    p->dirs[i].read_only};
    }
    return ok;
}

static char *keep(al_session *s, const char *text, bool *ok) {
    char *d = dup_or_null(text, ok);
    s->egress_strings[s->negress_strings++] = d;
    return d;
}

static bool copy_egress_grants(al_session *s, const al_egress *e) {
    size_t n = 3 * e->nheaders + 2 * e->nhosts;
    if (n == 0) return true;
    s->egress_strings = calloc(n, sizeof *s->egress_strings);
    s->headers = e->nheaders ? calloc(e->nheaders, sizeof *s->headers) : NULL;
    s->hosts = e->nhosts ? calloc(e->nhosts, sizeof *s->hosts) : NULL;
    if (!s->egress_strings || (e->nheaders && !s->headers) || (e->nhosts && !s->hosts))
        return false;
    bool ok = true;
    for (size_t i = 0; i < e->nheaders; i++)
        s->headers[i] = (al_header_grant){keep(s, e->headers[i].domain, &ok),
                                          keep(s, e->headers[i].name, &ok),
                                          keep(s, e->headers[i].value, &ok)};
    for (size_t i = 0; i < e->nhosts; i++)
        s->hosts[i] = (al_host_entry){keep(s, e->hosts[i].name, &ok),
                                      keep(s, e->hosts[i].address, &ok)};
    return ok;
}

static bool copy_egress(al_session *s, const al_egress *e) {
    bool ok = true;
    s->allow_domains = dup_strings(e->allow_domains, e->nallow_domains, &ok);
    s->deny_domains = dup_strings(e->deny_domains, e->ndeny_domains, &ok);
    s->allow_ips = dup_strings(e->allow_ips, e->nallow_ips, &ok);
    s->egress_log = dup_or_null(e->log_path, &ok);
    if (e->nallow_ports > 0) {
        s->allow_ports = calloc(e->nallow_ports, sizeof *s->allow_ports);
        if (s->allow_ports)
            memcpy(s->allow_ports, e->allow_ports, e->nallow_ports * sizeof *s->allow_ports);
        else
            ok = false;
    }
    if (!copy_egress_grants(s, e)) ok = false;
    al_egress *c = &s->policy.egress;
    c->allow_domains = (const char *const *)s->allow_domains;
    c->deny_domains = (const char *const *)s->deny_domains;
    c->allow_ips = (const char *const *)s->allow_ips;
    c->allow_ports = s->allow_ports;
    c->headers = s->headers;
    c->hosts = s->hosts;
    c->log_path = s->egress_log;
    return ok;
}

/* The session's own copy of p; false when out of memory. */
static bool copy_policy(al_session *s, const al_policy *p) {
    s->policy = *p;
    bool ok = true;
    s->argv = dup_strings(p->argv, p->argc, &ok);
    s->env = dup_strings(p->env, p->nenv, &ok);
    s->cwd = dup_or_null(p->cwd, &ok);
    s->state_dir = dup_or_null(p->state_dir, &ok);
    s->gvisor_platform = dup_or_null(p->gvisor_platform, &ok);
    if (p->stdin_len) {
        s->stdin_copy = malloc(p->stdin_len);
        if (s->stdin_copy) memcpy(s->stdin_copy, p->stdin_data, p->stdin_len);
        else ok = false;
    }
    if (!copy_dirs(s, p)) ok = false;
    if (!copy_egress(s, &p->egress)) ok = false;
    s->policy.argv = (const char *const *)s->argv;
    s->policy.env = (const char *const *)s->env;
    s->policy.dirs = s->dirs;
    s->policy.stdin_data = s->stdin_copy;
    s->policy.cwd = s->cwd;
    s->policy.state_dir = s->state_dir;
    s->policy.gvisor_platform = s->gvisor_platform;
    /* per execution, from each request: the opener's flag may not outlive the open */
    s->policy.cancel = NULL;
    s->policy.cancel_reason = NULL;
    return ok;
}

al_session *al_session_open(const al_policy *policy, al_error *error) {
    al_error scratch;
    if (!error) error = &scratch;
    memset(error, 0, sizeof *error);
    /* A session may be opened before any command is known: check the policy
     * with a placeholder program, which the first execution replaces. */
    al_policy probe = policy ? *policy : (al_policy){0};
    static const char *const placeholder[] = {"/bin/true"};
    if (policy && policy->argc == 0) {
        probe.argv = placeholder;
        probe.argc = 1;
    }
    if (sandbox_policy_check(policy ? &probe : NULL, error) != AL_STATUS_OK) return NULL;
    al_session *s = calloc(1, sizeof *s);
    if (!s || !copy_policy(s, policy)) {
        if (s) session_free(s);
        sandbox_error(error, AL_ERR_NOMEM, "session: out of memory");
        return NULL;
    }
    if (policy->isolation == AL_ISOLATION_GVISOR) {
        s->gvisor = gvisor_session_open(&s->policy, error);
        if (!s->gvisor) {
            session_free(s);
            return NULL;
        }
    }
    return s;
}

/* The session's policy with the request's per-run fields. */
static al_policy merged_policy(const al_session *s, const al_policy *req) {
    al_policy p = s->policy;
    p.argv = req->argv;
    p.argc = req->argc;
    p.env = req->env;
    p.nenv = req->nenv;
    p.stdin_data = req->stdin_data;
    p.stdin_len = req->stdin_len;
    p.timeout_ms = req->timeout_ms;
    p.cpu_time_ms = req->cpu_time_ms;
    p.stdout_cap = req->stdout_cap;
    p.stderr_cap = req->stderr_cap;
    if (req->cwd) p.cwd = req->cwd;
    /* streaming belongs to the caller of this execution */
    p.on_output = req->on_output;
    p.on_output_ctx = req->on_output_ctx;
    /* and so does cancelling it */
    p.cancel = req->cancel;
    p.cancel_reason = req->cancel_reason;
    p.fuel = req->fuel ? req->fuel : s->policy.fuel;
    return p;
}

bool al_session_exec(al_session *session, const al_policy *request, al_result *result) {
    if (!result) return false;
    memset(result, 0, sizeof *result);
    if (!session || !request) {
        sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "session: NULL %s",
                           session ? "request" : "session");
        return true;
    }
    al_policy p = merged_policy(session, request);
    if (!session->gvisor) return al_exec(&p, result);
    al_status st = sandbox_policy_check(&p, &result->error);
    if (st != AL_STATUS_OK) {
        result->status = st;
        return true;
    }
    if (sandbox_cancel_requested(&p)) { /* as al_exec: nothing is started */
        snprintf(result->backend, sizeof result->backend, "gvisor");
        sandbox_set_cancelled(result, &p, AL_OK);
        result->stdout_data = calloc(1, 1);
        result->stderr_data = calloc(1, 1);
        return true;
    }
    return gvisor_session_exec(session->gvisor, &p, result);
}

void al_session_close(al_session *session) {
    if (!session) return;
    if (session->gvisor) gvisor_session_close(session->gvisor);
    session_free(session);
}
