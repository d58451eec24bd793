/*
 * airlockd.c — the airlockd binary: the service agents call (HTTP API, MCP
 * over HTTP, sessions, audit log), a thin main around service.h.
 *
 *   airlockd [--config FILE] [--check-config] [--foreground] [--drain-timeout S]
 *   airlockd hash-token [TOKEN]     the SHA-256 hex a config's tokens[].sha256 holds
 *   airlockd version
 *
 * Lifecycle: load the config, build the service (svc_new: audit log,
 * workers, sessions, Python), remove what a killed predecessor left behind
 * (al_gc: gVisor containers, bundles, cgroups), start the listeners, tell
 * systemd we are ready (sd_notify protocol, when $NOTIFY_SOCKET is set),
 * then the main thread only waits for signals (signalfd) and, every few
 * seconds, expires idle sessions (and, once a minute, audit rows past
 * audit.retention):
 *   SIGHUP           reload the config (the old one stays on any error);
 *   SIGTERM, SIGINT  stop accepting, let executions finish for up to the
 *                    drain timeout (default 30 s) and answer what is still
 *                    queued 503; then cancel what still runs (al_policy.cancel,
 *                    reason "shutdown"): each ends within ~100 ms and its
 *                    client gets its result like any other (200, status
 *                    "cancelled"), audited "cancelled" / "shutdown"; the
 *                    listeners close only after that (at most 10 s,
 *                    SVC_CANCEL_WAIT_MS); exit 0. Only an execution that
 *                    outlives the cancel wait is answered 503, its audit row
 *                    marked "aborted" / "shutdown", and the daemon _exits.
 *
 * Invariants:
 *  - the signals are blocked before any thread exists, so every thread
 *    inherits the mask and only the signalfd sees them (the sandboxes reset
 *    the mask and dispositions for their programs);
 *  - SIGPIPE is ignored: a client that hangs up is an error value on a
 *    write, never the death of the daemon;
 *  - airlockd never forks into the background: systemd (or the shell)
 *    supervises it; --foreground is accepted and is the only mode;
 *  - logs go to stderr, one line each (svc_log).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

#ifndef AIRLOCK_VERSION
#define AIRLOCK_VERSION "0.0.0"
#endif

#define DEFAULT_CONFIG "/etc/airlock/airlockd.yaml"
#define DEFAULT_DRAIN_S 30
#define REAP_INTERVAL_MS 5000
#define TOKEN_MAX 4096

typedef struct options {
    const char *config;           /* NULL: DEFAULT_CONFIG if it exists, else defaults */
    bool check_only;
    uint64_t drain_ms;
} options;

static void usage(FILE *f) {
    fputs("usage: airlockd [--config FILE] [--check-config] [--foreground] [--drain-timeout S]\n"
          "       airlockd hash-token [TOKEN]\n"
          "       airlockd version\n"
          "\n"
          "Serve airlock's HTTP API (/v1), MCP (/mcp), /healthz and /metrics on a Unix\n"
          "socket and a loopback TCP port, as the config says (dist/airlockd.yaml).\n"
          "  --config FILE       YAML config (default " DEFAULT_CONFIG
          " if it exists,\n"
          "                      else every field at its default; $AIRLOCKD_CONFIG too)\n"
          "  --check-config      load the config, report, exit 0 (valid) or 1\n"
          "  --foreground        accepted: airlockd always stays in the foreground\n"
          "  --drain-timeout S   on SIGTERM, how long running executions may finish\n"
          "                      before they are cancelled (default 30)\n"
          "Signals: SIGHUP reloads the config; SIGTERM/SIGINT shut down gracefully.\n"
          "hash-token prints the SHA-256 (hex) of TOKEN, or of the first line of stdin\n"
          "(which keeps the token out of the process list), for tokens[].sha256.\n",
          f);
}

/* ---- small commands -------------------------------------------------------------------- */

static int hash_token(int argc, char **argv) {
    char buf[TOKEN_MAX + 2];
    const char *token;
    if (argc > 2) {
        token = argv[2];
    } else {
        if (!fgets(buf, sizeof buf, stdin)) {
            fputs("airlockd: hash-token: no token on stdin\n", stderr);
            return 2;
        }
        buf[strcspn(buf, "\r\n")] = '\0';
        token = buf;
    }
    if (!token[0] || strlen(token) > TOKEN_MAX) {
        fputs("airlockd: hash-token: the token must be 1..4096 bytes\n", stderr);
        return 2;
    }
    uint8_t sum[32];
    char hex[65];
    svc_token_hash(token, sum);
    svc_hex(sum, sizeof sum, hex);
    printf("%s\n", hex);
    return 0;
}

static bool parse_options(int argc, char **argv, options *o) {
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},   {"check-config", no_argument, NULL, 'k'},
        {"foreground", no_argument, NULL, 'f'},     {"drain-timeout", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    o->config = getenv("AIRLOCKD_CONFIG");
    o->check_only = false;
    o->drain_ms = DEFAULT_DRAIN_S * 1000u;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 'k': o->check_only = true; break;
        case 'f': break;
        case 'd': {
            char *end;
            errno = 0;
            unsigned long s = strtoul(optarg, &end, 10);
            if (errno || *end || end == optarg || s > 86400) {
                fprintf(stderr, "airlockd: --drain-timeout: seconds 0..86400, not \"%s\"\n", optarg);
                return false;
            }
            o->drain_ms = (uint64_t)s * 1000u;
            break;
        }
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return false;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "airlockd: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return false;
    }
    return true;
}

/* ---- config ---------------------------------------------------------------------------- */

/* The file to read: the option, else the default path when it exists. */
static const char *config_path(const options *o) {
    if (o->config) return o->config;
    return access(DEFAULT_CONFIG, F_OK) == 0 ? DEFAULT_CONFIG : NULL;
}

static bool load_config(const char *path, svc_config *cfg) {
    char err[512] = "";
    svc_config_defaults(cfg);
    if (!path) return true;
    if (svc_config_load(path, cfg, err, sizeof err)) return true;
    svc_log(NULL, SVC_LOG_ERROR, "config: %s", err[0] ? err : path);
    return false;
}

static void describe(const svc_config *c, const char *path) {
    printf("config %s: ok\n", path ? path : "(built-in defaults)");
    printf("  unix_socket %s (token %s), tcp %s:%u\n", c->unix_socket[0] ? c->unix_socket : "-",
           c->unix_requires_token ? "required" : "optional", c->tcp_host[0] ? c->tcp_host : "-",
           (unsigned)c->tcp_port);
    printf("  state_dir %s, audit_db %s\n", c->state_dir, c->audit_db);
    printf("  workers %u, queue %u, tokens %zu, allowed paths %zu\n", c->workers, c->queue_max,
           c->ntokens, c->nallowed_paths);
}

/* ---- systemd readiness (the sd_notify datagram protocol, no libsystemd) ---------------- */

static void notify_systemd(const char *state) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@')) return;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof a.sun_path) return;
    memcpy(a.sun_path, path, n);
    if (a.sun_path[0] == '@') a.sun_path[0] = '\0'; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a,
           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
    close(fd);
}

/* ---- signals --------------------------------------------------------------------------- */

/* Block the signals we handle (before any thread starts) and read them
 * from a signalfd. -1 on failure. */
static int signals_setup(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_CLOEXEC);
}

static uint64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void reload(svc *s, const char *path) {
    if (!path) {
        svc_log(s, SVC_LOG_WARN, "SIGHUP: no config file (built-in defaults): nothing to reload");
        return;
    }
    notify_systemd("RELOADING=1");
    svc_config next;
    char err[512] = "";
    if (!load_config(path, &next)) {
        svc_log(s, SVC_LOG_ERROR, "SIGHUP: %s not reloaded; the running config stays", path);
    } else if (!svc_reload(s, &next, err, sizeof err)) {
        svc_log(s, SVC_LOG_ERROR, "SIGHUP: reload failed (%s); the running config stays", err);
    }
    svc_config_free(&next);
    notify_systemd("READY=1");
}

#define PRUNE_INTERVAL_MS 60000

/* audit.retention: at most once a minute, drop finished rows past it. */
static void prune_audit(svc *s, uint64_t *last_ms) {
    uint64_t now = unix_ms();
    if (now - *last_ms < PRUNE_INTERVAL_MS) return;
    *last_ms = now;
    svc_lock(s);
    uint64_t keep = svc_config_of(s)->audit_retention_ms;
    svc_unlock(s);
    if (!keep || keep >= now) return;
    int64_t n = svc_audit_prune(svc_audit_of(s), (int64_t)(now - keep));
    if (n > 0) svc_log(s, SVC_LOG_INFO, "audit: %lld row%s past the retention removed", (long long)n,
                       n == 1 ? "" : "s");
    if (n < 0) {
        char why[256] = "";
        svc_audit_last_error(svc_audit_of(s), why, sizeof why);
        svc_log(s, SVC_LOG_WARN, "audit: prune failed: %s", why);
    }
}

static void reap_sessions(svc *s) {
    unsigned n = svc_sessions_expire(svc_sessions_of(s), unix_ms());
    if (n) svc_log(s, SVC_LOG_INFO, "expired %u idle session%s", n, n == 1 ? "" : "s");
    svc_metrics_set_sessions(svc_metrics_of(s), svc_sessions_count(svc_sessions_of(s)));
}

/* Until SIGTERM/SIGINT (returns the signal), handling SIGHUP and the reaper. */
static int serve(svc *s, int sfd, const char *path) {
    uint64_t last_prune = 0; /* the first tick prunes: a restart catches up at once */
    for (;;) {
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        int rc = poll(&p, 1, REAP_INTERVAL_MS);
        if (rc < 0 && errno != EINTR) {
            svc_log(s, SVC_LOG_ERROR, "poll: %s", strerror(errno));
            return SIGTERM;
        }
        if (rc <= 0) {
            reap_sessions(s);
            prune_audit(s, &last_prune);
            continue;
        }
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si) continue;
        if (si.ssi_signo == SIGHUP) reload(s, path);
        else return (int)si.ssi_signo;
    }
}

/* ---- shutdown ---------------------------------------------------------------------------- */

/* Executions still running after the drain and the cancel wait (a sandbox
 * that did not die): their audit rows say "aborted" / "shutdown" (audit.c
 * keeps that status if they finish later).
 * Every running row of this database is ours: a predecessor's were marked
 * aborted when svc_new opened it. */
static unsigned abort_running_rows(svc *s) {
    char db[SVC_PATH_MAX];
    svc_lock(s);
    snprintf(db, sizeof db, "%s", svc_config_of(s)->audit_db);
    svc_unlock(s);
    svc_audit_filter f = {.status = "running", .limit = 100000};
    char err[256] = "";
    json_t *rows = svc_audit_query(db, &f, err, sizeof err);
    if (!rows) {
        svc_log(s, SVC_LOG_ERROR, "shutdown: cannot list running executions: %s", err);
        return 0;
    }
    unsigned n = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *id = json_object_get(row, "id");
        if (json_is_integer(id) && svc_audit_abort(svc_audit_of(s), json_integer_value(id), "shutdown"))
            n++;
    }
    json_decref(rows);
    return n;
}

static int shut_down(svc *s, svc_http *h, int signo, uint64_t drain_ms) {
    svc_log(s, SVC_LOG_INFO, "%s: shutting down (draining executions for up to %" PRIu64 " s)",
            strsignal(signo), drain_ms / 1000);
    notify_systemd("STOPPING=1");
    /* drain, then cancel what still runs and deliver its results */
    svc_http_stop(h, drain_ms);
    unsigned queued = 0, running = 0;
    svc_pool_counts(svc_pool_of(s), &queued, &running);
    if (running > 0) {
        /* The cancel did not end them in time: record them, then leave
         * without joining their workers. Native sandboxes die with their
         * worker thread (PDEATHSIG); gVisor containers are collected by the
         * next start's al_gc. */
        unsigned n = abort_running_rows(s);
        svc_log(s, SVC_LOG_WARN, "shutdown: %u execution%s did not end when cancelled "
                "(audit: aborted, shutdown)", n, n == 1 ? "" : "s");
        fflush(stderr);
        _exit(0);
    }
    svc_free(s);
    svc_log(NULL, SVC_LOG_INFO, "stopped");
    return 0;
}

/* ---- main -------------------------------------------------------------------------------- */

static void collect_orphans(svc *s) {
    char dir[SVC_PATH_MAX];
    svc_lock(s);
    snprintf(dir, sizeof dir, "%s", svc_config_of(s)->state_dir);
    svc_unlock(s);
    al_gc_report r = {0};
    al_error e = {0};
    if (!al_gc(dir, &r, &e))
        svc_log(s, SVC_LOG_WARN, "gc of %s: %s", dir, e.message);
    else if (r.containers || r.bundles || r.cgroups)
        svc_log(s, SVC_LOG_INFO, "removed what a previous daemon left: %u gVisor containers, "
                "%u bundles, %u cgroups", r.containers, r.bundles, r.cgroups);
}

static int run_daemon(const options *o) {
    const char *path = config_path(o);
    svc_config cfg;
    if (!load_config(path, &cfg)) return 1;
    if (o->check_only) {
        describe(&cfg, path);
        svc_config_free(&cfg);
        return 0;
    }
    int sfd = signals_setup();
    if (sfd < 0) {
        svc_log(NULL, SVC_LOG_ERROR, "signals: %s", strerror(errno));
        svc_config_free(&cfg);
        return 1;
    }
    char err[512] = "";
    svc *s = svc_new(&cfg, err, sizeof err);
    svc_config_free(&cfg); /* svc_new copied it */
    if (!s) {
        svc_log(NULL, SVC_LOG_ERROR, "%s", err);
        close(sfd);
        return 1;
    }
    collect_orphans(s);
    svc_http *h = svc_http_start(s, err, sizeof err);
    if (!h) {
        svc_log(s, SVC_LOG_ERROR, "%s", err);
        svc_free(s);
        close(sfd);
        return 1;
    }
    svc_log(s, SVC_LOG_INFO, "airlockd %s ready (config: %s)", AIRLOCK_VERSION,
            path ? path : "built-in defaults");
    notify_systemd("READY=1");
    int signo = serve(s, sfd, path);
    close(sfd);
    return shut_down(s, h, signo, o->drain_ms);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "hash-token") == 0) return hash_token(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "version") == 0) {
        printf("airlockd %s\n", AIRLOCK_VERSION);
        return 0;
    }
    options o;
    if (!parse_options(argc, argv, &o)) return 2;
    return run_daemon(&o);
}
