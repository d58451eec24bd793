/*
 * service.h — airlockd's internals (issue 6): the service agents call.
 *
 *   config.c    svc_config from a YAML file (libyaml): every field has a
 *               safe default, unknown keys are an error; token hashing.
 *   auth.c      bearer tokens, compared by SHA-256 in constant time.
 *   ratelimit.c per-token, per-class token buckets (executions per minute).
 *   redact.c    output auditing: secrets in stdout/stderr replaced before a
 *               result leaves the daemon (built-in patterns + configured
 *               regexes), each redaction counted for the audit log.
 *   metrics.c   counters and histograms, rendered in Prometheus text format.
 *   audit.c     every execution in SQLite (WAL): started, finished or
 *               aborted; queried by `airlock audit`.
 *   pool.c      the bounded worker pool executions run on, with a bounded
 *               queue; the HTTP loop never runs an execution itself.
 *   sessions.c  sessions: id, kind, workspace directory, idle expiry, LRU
 *               eviction beyond the maximum, the al_session / Python
 *               interpreter they keep.
 *   execute.c   one execution from a request: request → al_policy within the
 *               config's limits, audit start, run, redaction, audit finish,
 *               metrics. Shared by the HTTP API and MCP.
 *   request.c   JSON request bodies → svc_exec_request (strict: unknown
 *               fields, wrong types are 400s); results → JSON.
 *   policy_json.c  (own header, policy_json.h) what request.c shares with
 *               the CLI's `exec --policy` file: strict JSON reading with
 *               JSON paths in messages, the "egress" object and its rules,
 *               the UTF-8 decoding of result JSON.
 *   api.c       the /v1 routes, independent of the HTTP library.
 *   http.c      libmicrohttpd glue: Unix socket + loopback TCP listeners,
 *               body caps (413), suspend/resume around pool jobs.
 *   mcp.c       Model Context Protocol (JSON-RPC 2.0): initialize,
 *               tools/list, tools/call (run_python, run_command, run_wasm);
 *               transports: stdio (`airlock mcp`) and Streamable HTTP (/mcp).
 *   svc.c       the daemon object: owns all of the above, reload on SIGHUP,
 *               graceful shutdown.
 *
 * Threads: the HTTP library's loop thread(s), the pool's workers, the
 * sessions' reaper. Every object here is either immutable after creation or
 * guarded by its own mutex, as its comment says.
 */
#ifndef AIRLOCK_SERVICE_H
#define AIRLOCK_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "airlock.h"

/* ---- config.c -------------------------------------------------------------------- */
#define SVC_NAME_MAX 64
#define SVC_PATH_MAX 256

typedef struct svc_token {
    char name[SVC_NAME_MAX];      /* shown in the audit log, metrics, rate limits */
    uint8_t sha256[32];           /* of the bearer token; the token is never stored */
    uint32_t python_per_minute;   /* 0: the config's default */
    uint32_t exec_per_minute;     /* 0: the config's default */
} svc_token;

typedef struct svc_path_grant {
    char path[SVC_PATH_MAX];      /* absolute, canonical host directory */
    bool read_only;               /* "ro:" prefix in the config */
} svc_path_grant;

typedef struct svc_config {
    /* listen */
    char unix_socket[108];        /* "" : no Unix socket. default <state_dir>/airlockd.sock */
    char tcp_host[64];            /* "" : no TCP. default "127.0.0.1" */
    uint16_t tcp_port;            /* default 7878 */
    bool unix_requires_token;     /* default true */
    /* execution limits: defaults for a request, and ceilings it cannot pass */
    uint64_t memory_bytes;        /* default 256 MiB (ceiling 4 GiB) */
    uint64_t fuel;                /* wasm/python instruction budget, default 1e9 */
    uint64_t timeout_ms;          /* default 30000 */
    uint64_t max_timeout_ms;      /* default 300000 */
    size_t output_bytes;          /* per stream, default 1 MiB */
    size_t max_body_bytes;        /* request body cap (413), default 16 MiB */
    svc_path_grant *allowed_paths;/* host directories a request may grant or run a
                                     module from; none by default */
    size_t nallowed_paths;
    bool allow_native, allow_gvisor; /* default true */
    /* sessions */
    uint32_t session_idle_s;      /* default 3600 */
    uint32_t max_sessions;        /* default 100 (LRU eviction beyond) */
    uint64_t session_workspace_bytes; /* per session, default 64 MiB */
    /* execution capacity */
    uint32_t workers;             /* default 4 */
    uint32_t queue_max;           /* default 64; beyond: 429 with Retry-After */
    /* rate limits (per token, per minute) */
    uint32_t python_per_minute;   /* default 10 */
    uint32_t exec_per_minute;     /* every kind, default 60 */
    /* auth */
    svc_token *tokens;
    size_t ntokens;
    /* files */
    char state_dir[SVC_PATH_MAX]; /* default /var/lib/airlock as root, else
                                     $XDG_STATE_HOME/airlock or ~/.local/state/airlock */
    char audit_db[SVC_PATH_MAX];  /* default <state_dir>/audit.db */
    uint64_t audit_retention_ms;  /* finished rows older than this are deleted; 0: kept */
    char python_dir[SVC_PATH_MAX];/* python.wasm + lib/python3.11; default: beside the binary */
    /* output audit */
    bool redact_builtin;          /* private keys, AWS keys, bearer tokens; default true */
    char **redact_patterns;       /* POSIX extended regexes */
    size_t nredact_patterns;
    /* MCP over HTTP */
    char **allowed_origins;       /* Origin values /mcp accepts (a request without
                                     Origin is accepted: not from a browser) */
    size_t nallowed_origins;
    /* capabilities (issue 7) */
    char cap_dir[SVC_PATH_MAX];   /* NAME.wasm (+ NAME.json) installed at start; "": none */
    char cap_registry[256];       /* OCI registry base URL; "": none */
    char **cap_install;           /* URNs fetched from cap_registry and installed at start */
    size_t ncap_install;
    uint64_t cap_max_blob_bytes;  /* default 10 MiB */
    char cap_outbox[SVC_PATH_MAX];/* publication outbox; default <state_dir>/outbox.db */
    char cap_cache[SVC_PATH_MAX]; /* content-addressed cache of fetched blobs; "": none */
} svc_config;

void svc_config_defaults(svc_config *c);
/* Load path (YAML) over the defaults. false + err (with line:column) on a
 * syntax error, an unknown key, a wrong type or an out-of-range value; *c
 * is then left with the defaults only (freed and re-defaulted). */
bool svc_config_load(const char *path, svc_config *c, char *err, size_t errlen);
/* The same from a buffer (at most 1 MiB; messages name it "<config>"): the
 * fuzz target's entry point. For both, *c's previous content is neither
 * read nor freed — free a loaded config before loading over it. */
bool svc_config_load_buffer(const char *yaml, size_t len, svc_config *c, char *err,
                            size_t errlen);
void svc_config_free(svc_config *c);
/* A deep copy of src into dst (svc.c keeps its own copy of the config it
 * was given; config.c implements it). Arrays and strings are malloc'd one
 * by one, as svc_config_free frees them. false when out of memory (dst
 * then holds the defaults only). */
bool svc_config_copy(svc_config *dst, const svc_config *src);
/* SHA-256 of a token, as the config stores it (hex for `airlockd hash-token`). */
void svc_token_hash(const char *token, uint8_t out[32]);
void svc_hex(const uint8_t *bytes, size_t n, char *out /* 2n + 1 */);

/* ---- auth.c ---------------------------------------------------------------------- */
/* The token an "Authorization: Bearer X" header names, or NULL (no header,
 * another scheme, unknown token). Every configured token is compared, in
 * constant time, so timing does not tell which prefix matched. */
const svc_token *svc_auth(const svc_config *c, const char *authorization);

/* ---- ratelimit.c ----------------------------------------------------------------- */
typedef struct svc_ratelimit svc_ratelimit; /* thread-safe */
svc_ratelimit *svc_ratelimit_new(void);
void svc_ratelimit_free(svc_ratelimit *r);
/* Take one from bucket (key, per_minute capacity, refilled continuously).
 * false when empty; *retry_after_s then says when one will be there. */
bool svc_ratelimit_take(svc_ratelimit *r, const char *key, uint32_t per_minute, uint64_t now_ms,
                        uint32_t *retry_after_s);

/* ---- redact.c -------------------------------------------------------------------- */
typedef struct svc_redactor svc_redactor; /* immutable after creation */
svc_redactor *svc_redactor_new(bool builtin, char *const *patterns, size_t n, char *err,
                               size_t errlen);
void svc_redactor_free(svc_redactor *r);
/* Is pattern usable by a redactor (a POSIX extended regex, compiled with
 * REG_NEWLINE, that does not match the empty string)? false + err (why)
 * otherwise. config.c checks redaction.patterns with it. */
bool svc_redact_pattern_check(const char *pattern, char *err, size_t errlen);
/* Replace every match in *data (len bytes, NUL-terminated; reallocated when
 * needed) with "[REDACTED:<kind>]". Returns the number of replacements and,
 * when kinds is a JSON array, appends each kind once ("private_key",
 * "aws_access_key", "bearer_token", "pattern:N"). */
size_t svc_redact(const svc_redactor *r, uint8_t **data, size_t *len, json_t *kinds);
/* Where a private-key block begins whose END line is not in d[0..len) yet
 * (len: none). Streaming holds output back from there, so a key that
 * arrives line by line is redacted whole, not just its BEGIN line. */
size_t svc_redact_open_block(const uint8_t *d, size_t len);

/* ---- metrics.c ------------------------------------------------------------------- */
typedef struct svc_metrics svc_metrics; /* thread-safe */
svc_metrics *svc_metrics_new(void);
void svc_metrics_free(svc_metrics *m);
/* airlock_executions_total{backend,status} and
 * airlock_execution_seconds{backend} (histogram). */
void svc_metrics_execution(svc_metrics *m, const char *backend, const char *status,
                           double seconds);
/* airlock_denied_total{reason}: auth, rate_limit, queue_full, bad_request,
 * syscall (n denied syscalls), egress (n denied requests), redaction. */
void svc_metrics_denied(svc_metrics *m, const char *reason, uint64_t n);
void svc_metrics_set_sessions(svc_metrics *m, unsigned active); /* airlock_sessions_active */
void svc_metrics_set_queue(svc_metrics *m, unsigned queued, unsigned running);
/* The text exposition format (version 0.0.4); caller frees. */
char *svc_metrics_render(svc_metrics *m);

/* ---- audit.c --------------------------------------------------------------------- */
typedef struct svc_audit svc_audit; /* thread-safe (one connection, a mutex) */

typedef struct svc_audit_start {
    const char *token;            /* token name, "" when auth is off */
    const char *session;          /* session id or "" */
    const char *kind;             /* "python", "wasm", "command" */
    const char *backend;          /* "wasm", "native", "gvisor" */
    const char *policy_json;      /* the effective policy (secrets removed) */
    const char *code_sha256;      /* hex of the code / module / argv */
    const char *limits_json;      /* timeout, memory, fuel, ... */
    const char *source;           /* "http", "mcp-http", "mcp-stdio" */
} svc_audit_start;

typedef struct svc_audit_finish {
    const al_result *result;
    unsigned redactions;
    const char *redaction_kinds_json; /* JSON array */
    const char *egress_json;      /* {"allowed":..,"denied":..,"bytes":..} */
} svc_audit_finish;

/* Open (create) the database in WAL mode, and mark every execution still
 * "running" — its daemon died — as "aborted" (*aborted says how many). */
svc_audit *svc_audit_open(const char *path, unsigned *aborted, char *err, size_t errlen);
void svc_audit_close(svc_audit *a);
/* A row with status "running"; its id, or -1 on failure (logged, never fatal). */
int64_t svc_audit_begin(svc_audit *a, const svc_audit_start *s);
bool svc_audit_end(svc_audit *a, int64_t id, const svc_audit_finish *f);
/* Mark a running row aborted with a reason (shutdown cancelled it). */
bool svc_audit_abort(svc_audit *a, int64_t id, const char *reason);
/* Delete finished rows that started before before_unix_ms (retention);
 * how many, or -1 on failure (svc_audit_last_error says why). */
int64_t svc_audit_prune(svc_audit *a, int64_t before_unix_ms);

typedef struct svc_audit_filter {
    int64_t since_unix_ms, until_unix_ms; /* 0: unbounded */
    const char *token, *status, *session; /* NULL: any */
    unsigned limit;               /* 0: 100 */
} svc_audit_filter;
/* Rows as a JSON array of objects, newest first. Opens read-only: usable
 * while the daemon runs. Keys are the column names, except that the JSON
 * columns come back parsed and without "_json" ("policy", "limits",
 * "egress", "redaction_kinds"; "limits_hit" is parsed too). since/until are
 * inclusive; limit is capped at 10000. */
json_t *svc_audit_query(const char *path, const svc_audit_filter *f, char *err, size_t errlen);
/* Why the last begin/end/abort failed, for the caller's log. */
void svc_audit_last_error(svc_audit *a, char *out, size_t outlen);
/* The default state directory: /var/lib/airlock as root, else
 * $XDG_STATE_HOME/airlock (an absolute $XDG_STATE_HOME) or
 * ~/.local/state/airlock. false when there is no home or it does not fit.
 * One rule for the daemon's config (state_dir, audit_db) and `airlock audit`. */
bool svc_default_state_dir(char *out, size_t outlen);

/* ---- pool.c ---------------------------------------------------------------------- */
typedef struct svc_pool svc_pool;
typedef void (*svc_job_fn)(void *arg);
svc_pool *svc_pool_new(unsigned workers, unsigned queue_max);
/* Queue a job; false when queue_max jobs already wait (the caller answers
 * 429 with Retry-After). */
bool svc_pool_submit(svc_pool *p, svc_job_fn fn, void *arg);
void svc_pool_counts(svc_pool *p, unsigned *queued, unsigned *running);
/* Stop taking jobs; wait until every queued and running job is done or the
 * deadline passes (then cancel_fn is called for each job still queued, and
 * the caller is expected to interrupt running ones). deadline_ms is a
 * duration: milliseconds from now (0: do not wait). Queued jobs keep
 * running on the workers while it waits. */
void svc_pool_shutdown(svc_pool *p, uint64_t deadline_ms, svc_job_fn cancel_fn);
/* Joins the workers; without a shutdown first, jobs still queued run first. */
void svc_pool_free(svc_pool *p);

/* ---- the service object (svc.c) and executions (execute.c, request.c) -------------- */
typedef struct svc svc;
typedef struct svc_sessions svc_sessions;

typedef enum svc_kind { SVC_PYTHON = 0, SVC_WASM, SVC_COMMAND, SVC_PLUGIN } svc_kind;

/* A request as the API and MCP parse it (request.c owns every string). */
typedef struct svc_exec_request {
    svc_kind kind;
    char *code;                   /* SVC_PYTHON */
    uint8_t *module;              /* SVC_WASM: the bytes (decoded from base64) ... */
    size_t module_len;
    char *module_path;            /* ... or a path inside an allowed directory */
    char **argv;                  /* SVC_COMMAND: argv; SVC_WASM: args after argv[0] */
    size_t argc;
    char **env;                   /* "K=V" */
    size_t nenv;
    al_isolation backend;         /* SVC_COMMAND: NATIVE or GVISOR */
    uint8_t *stdin_data;
    size_t stdin_len;
    uint64_t timeout_ms, memory_bytes, fuel; /* 0: the config's default */
    char *session;                /* run in this session (NULL: a fresh sandbox) */
    al_dir_grant *dirs;           /* only inside allowed_paths */
    size_t ndirs;
    al_egress egress;             /* command only; strings owned here */
    bool stream;                  /* the client asked for streamed output */
    char *capability;             /* SVC_PLUGIN: an installed capability's name ... */
    char *function;               /* ... and the function to call; stdin_data is its input */
    void *owned;                  /* request.c's allocations */
} svc_exec_request;

/* Parse a JSON body ({"kind": "python", "code": ...}, see docs/api.md and
 * request.c's opening comment). false + a message naming the JSON path for
 * a 400 on anything malformed; *out is then zeroed. Duplicate keys are the
 * caller's to refuse: load the body with json_loadb(..., JSON_REJECT_DUPLICATES,
 * ...). svc_request_free frees only what svc_request_parse allocated (the
 * `owned` list); for python, argv holds the "args" (sys.argv[1:]). */
bool svc_request_parse(const json_t *body, svc_exec_request *out, char *err, size_t errlen);
void svc_request_free(svc_exec_request *r);
/* Strict base64 (request.c's rules) into a malloc'ed buffer of at most max
 * bytes; NULL with *why on failure. */
uint8_t *svc_base64_decode(const char *s, size_t n, size_t max, size_t *len, const char **why);
/* The result as JSON: the fields of `airlock exec --json` (but "dirs"),
 * plus "redactions" and "audit_id" (null when the audit row failed). NULL
 * only when out of memory. */
json_t *svc_result_json(const al_result *r, unsigned redactions, int64_t audit_id);

/* Streaming: called from the worker as output arrives (stream 1 / 2). */
typedef void (*svc_output_fn)(void *ctx, int stream, const uint8_t *data, size_t len);

typedef struct svc_caller {
    /* NULL when auth is off for this listener. Point at a copy the job owns,
     * not into svc_config_of(): a reload frees the config's token table
     * while the job may still wait in the queue. svc_execute finds the
     * token again (by hash) in the current config: a token removed by a
     * reload is refused (401), and its current rate limits apply. */
    const svc_token *token;
    const char *source;           /* "http", "mcp-http", "mcp-stdio" */
    svc_output_fn on_output;      /* NULL: no streaming */
    void *output_ctx;
} svc_caller;

/* Run one execution within the config's limits: authorised by caller
 * (rate limits taken here), audited, redacted, counted. Blocks: call from
 * a pool worker (or the stdio MCP loop). *status_code is the HTTP status
 * the outcome maps to (200, or 400/403/404/429 with *response an error
 * object). Returns the response body (caller owns). */
json_t *svc_execute(svc *s, const svc_exec_request *req, const svc_caller *caller,
                    int *status_code);

/* An error body: {"error": {"code": "...", "message": "..."}}. svc_execute's
 * 429s also carry "retry_after" (seconds, an integer) in the "error" object,
 * for the HTTP layer's Retry-After header. The message is made valid UTF-8.
 * NULL only when out of memory. */
json_t *svc_error_json(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

svc *svc_new(const svc_config *cfg /* copied */, char *err, size_t errlen);
/* Replace the config (SIGHUP): new limits, tokens, rate limits, redaction
 * apply to new requests; listeners and the pool keep theirs. */
bool svc_reload(svc *s, const svc_config *cfg, char *err, size_t errlen);
void svc_free(svc *s);
const svc_config *svc_config_of(svc *s); /* valid until the next reload; callers hold svc_lock */
void svc_lock(svc *s);                  /* read lock around config use */
void svc_unlock(svc *s);
svc_metrics *svc_metrics_of(svc *s);
svc_sessions *svc_sessions_of(svc *s);
svc_pool *svc_pool_of(svc *s);
svc_audit *svc_audit_of(svc *s);
svc_ratelimit *svc_ratelimit_of(svc *s);
/* The installed capabilities (capabilities.c): from the config's
 * capabilities.dir and .install at svc_new and svc_reload, and the API. */
struct svc_caps *svc_caps_of(svc *s);
/* The publication outbox (al_publisher on capabilities.outbox), or NULL
 * when no registry is configured. */
al_publisher *svc_publisher_of(svc *s);
/* The Python runtime opened from the config's python_dir at svc_new, or
 * NULL with *why (if why is not NULL) saying why it is unavailable. */
al_python *svc_python_of(svc *s, const char **why);

/* Cancellation of every execution (graceful shutdown, past the drain):
 * svc_cancel_flag is the al_policy.cancel execute.c gives every execution
 * (sessions included), with cancel_reason SVC_CANCEL_REASON; it lives as
 * long as s. svc_cancel_all raises it (from any thread): every running
 * execution ends within ~100 ms with status "cancelled", and every later
 * one is cancelled before it starts. It is never lowered. */
#define SVC_CANCEL_REASON "shutdown"
/* How long shutdown waits for cancelled executions to end (they take
 * ~100 ms plus their sandbox's teardown). */
#define SVC_CANCEL_WAIT_MS 10000
const int *svc_cancel_flag(svc *s);
void svc_cancel_all(svc *s);
bool svc_cancelling(svc *s);

/* One generation of the config and the redactor built from it. An
 * execution holds one from start to finish, so svc_reload never frees what
 * a running execution reads; the last release frees it. */
typedef struct svc_view {
    const svc_config *config;
    const svc_redactor *redactor;
} svc_view;
const svc_view *svc_view_acquire(svc *s);
void svc_view_release(svc *s, const svc_view *v);

/* One line "airlockd: LEVEL: message" on stderr (one write, so lines of
 * concurrent threads never interleave; control bytes become '?'). Messages
 * below the level given by $AIRLOCKD_LOG ("error", "warn", "info" (the
 * default), "debug") are dropped. s may be NULL. */
typedef enum svc_log_level { SVC_LOG_ERROR = 0, SVC_LOG_WARN, SVC_LOG_INFO, SVC_LOG_DEBUG } svc_log_level;
void svc_log(svc *s, svc_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- sessions.c ------------------------------------------------------------------ */
typedef struct svc_session_info {
    char id[33];                  /* 128 random bits, hex */
    svc_kind kind;
    al_isolation backend;
    char token[SVC_NAME_MAX];     /* the creator: only it may use the session */
    uint64_t created_ms, last_used_ms;
    unsigned executions;
} svc_session_info;

svc_sessions *svc_sessions_new(const char *state_dir, uint32_t max_sessions, uint32_t idle_s,
                               uint64_t workspace_bytes);
void svc_sessions_free(svc_sessions *s);
/* Create; evicts the least recently used session when at the maximum. */
bool svc_session_create(svc_sessions *s, const svc_exec_request *template_req,
                        const char *token, svc_session_info *out, char *err, size_t errlen);
bool svc_session_get(svc_sessions *s, const char *id, const char *token, svc_session_info *out);
bool svc_session_delete(svc_sessions *s, const char *id, const char *token);
json_t *svc_session_list(svc_sessions *s, const char *token);
/* Workspace files: path relative to the workspace, resolved beneath it
 * (no "..", no symlinks followed out). */
bool svc_session_put_file(svc_sessions *s, const char *id, const char *token, const char *path,
                          const uint8_t *data, size_t len, char *err, size_t errlen);
bool svc_session_get_file(svc_sessions *s, const char *id, const char *token, const char *path,
                          uint8_t **data, size_t *len, char *err, size_t errlen);
/* Run req in the session (blocks; one execution per session at a time). */
bool svc_session_exec(svc_sessions *s, const char *id, const char *token,
                      const al_policy *policy, const svc_exec_request *req, al_result *result,
                      char *err, size_t errlen);
/* Drop sessions idle past the timeout (the reaper thread calls it). */
unsigned svc_sessions_expire(svc_sessions *s, uint64_t now_ms);
unsigned svc_sessions_count(svc_sessions *s);
/* Python sessions run in the daemon's al_python (svc.c opens it and calls
 * this once, before serving; not owned). Without it Python sessions are
 * refused (errno ENOTSUP). */
void svc_sessions_set_python(svc_sessions *s, al_python *py);
bool svc_sessions_have_python(svc_sessions *s);
/* {"id", "kind", "backend", "created_ms", "last_used_ms", "executions",
 * "workspace"}: a session as the API shows it (svc_session_list's items). */
json_t *svc_session_info_json(const svc_session_info *info);
/* The functions above that fail set errno to say why, for the HTTP status:
 * ENOENT no such session for this token (404), EBUSY it is executing (409),
 * EAGAIN at the maximum with none evictable (429), EINVAL a bad path, kind
 * or request (400), EFBIG over the workspace cap (413), ENOTSUP the
 * kind/backend is unavailable (503); anything else is a 500. */
/* That mapping, for the API and execute.c. */
int svc_session_http_status(int e);

/* ---- api.c ----------------------------------------------------------------------- */
/* What the routes keep between requests (thread-safe): the MCP Streamable
 * HTTP sessions (Mcp-Session-Id -> svc_mcp_state) and the host probe
 * /healthz reports. http.c owns one and passes it in every request. */
typedef struct svc_api_state svc_api_state;
svc_api_state *svc_api_state_new(void);
void svc_api_state_free(svc_api_state *st);

typedef struct svc_http_request {
    const char *method;           /* "GET", "POST", ... */
    const char *path;             /* "/v1/executions" (no query) */
    const char *query;            /* raw query string or NULL */
    const char *authorization;    /* the header, or NULL */
    const char *origin;           /* the Origin header, or NULL */
    const char *content_type;
    const char *mcp_session;      /* Mcp-Session-Id, or NULL */
    const char *mcp_protocol;     /* MCP-Protocol-Version, or NULL */
    const uint8_t *body;
    size_t body_len;
    bool via_unix;                /* came in on the Unix socket */
    /* Streaming: executions whose body says "stream": true pass their output
     * here as it is produced (http.c's SSE writer); NULL: not streamed. */
    svc_output_fn on_output;
    void *output_ctx;
    svc_api_state *state;         /* NULL: /mcp answers 503 */
} svc_http_request;

typedef struct svc_http_response {
    int status;
    char content_type[64];
    uint8_t *body;                /* owned */
    size_t body_len;
    char retry_after[16];         /* "" or seconds */
    char mcp_session[64];         /* "" or the Mcp-Session-Id to send */
    char allow[32];               /* "" or the Allow header of a 405 */
} svc_http_response;

/* Does this route run an execution (so http.c hands it to the pool)? Also
 * true for the other routes that may block: /mcp POSTs, session creation
 * and deletion (an evicted or deleted gVisor sandbox to stop) and
 * workspace file transfers. */
bool svc_api_is_execution(const svc_http_request *req);
/* Answer one request (blocking for executions). */
void svc_api_handle(svc *s, const svc_http_request *req, svc_http_response *resp);
void svc_http_response_free(svc_http_response *resp);

/* ---- mcp.c ----------------------------------------------------------------------- */
typedef struct svc_mcp_state svc_mcp_state; /* one MCP client's negotiated state */
svc_mcp_state *svc_mcp_state_new(void);
void svc_mcp_state_free(svc_mcp_state *st);
/* Handle one JSON-RPC message (request, notification or response). Returns
 * the response to send (NULL for a notification or a response). */
json_t *svc_mcp_handle(svc *s, svc_mcp_state *st, const json_t *message,
                       const svc_caller *caller);
/* Is this MCP revision one we speak ("2025-11-25", "2025-06-18",
 * "2025-03-26")? For the MCP-Protocol-Version header of Streamable HTTP. */
bool svc_mcp_version_supported(const char *version);
/* Has initialize been answered? Copies the negotiated revision when so. */
bool svc_mcp_initialized(svc_mcp_state *st, char *version, size_t len);
/* The JSON-RPC -32700 response (id null) for bytes that are not JSON. */
json_t *svc_mcp_parse_error(const char *detail);

/* ---- http.c ---------------------------------------------------------------------- */
typedef struct svc_http svc_http;
svc_http *svc_http_start(svc *s, char *err, size_t errlen);
/* Stop accepting; wait for the pool to drain until deadline_ms (jobs still
 * queued then are answered 503); then, if executions still run, cancel them
 * (svc_cancel_all) and wait up to SVC_CANCEL_WAIT_MS for them to end, so
 * their clients get their results (status "cancelled", HTTP 200, the SSE
 * "result" event) before the listeners close. Only what still runs after
 * that is answered 503; svc_pool_counts then says how many. */
void svc_http_stop(svc_http *h, uint64_t deadline_ms);

/* ---- capabilities.c -------------------------------------------------------------- */
#define SVC_CAP_NAME_MAX 33
typedef struct svc_caps svc_caps;   /* thread-safe: the installed capabilities */
typedef struct svc_cap svc_cap;     /* one, reference counted */
typedef struct svc_cap_limits {
    uint64_t timeout_ms, fuel, memory_bytes, output_bytes; /* 0: the manifest's */
    const int *cancel;
} svc_cap_limits;
svc_caps *svc_caps_new(void);
void svc_caps_free(svc_caps *c);
/* [a-z0-9][a-z0-9-]{0,31}: '_' joins capability and tool in MCP tool names. */
bool svc_cap_name_valid(const char *name);
/* Compile, check the manifest (no allowed_paths), ask a servlet for its
 * tools; replaces an installed one of the same name. */
bool svc_caps_install(svc_caps *c, const char *name, const uint8_t *wasm, size_t len,
                      const char *manifest_json, const char *source, char *err, size_t errlen);
bool svc_caps_remove(svc_caps *c, const char *name);
/* Install every NAME.wasm (+ NAME.json manifest) of dir; logs what fails. */
unsigned svc_caps_load_dir(svc_caps *c, svc *s, const char *dir);
/* Fetch urn from the registry and install it as name (NULL: the last
 * component of its repository). Returns an HTTP status: 201 installed
 * (*installed names it), 400 bad URN or module, 502 the registry failed. */
int svc_caps_install_urn(svc_caps *c, const al_registry *reg, const char *urn, const char *name,
                         char *installed, size_t installed_len, char *err, size_t errlen);
json_t *svc_caps_list(svc_caps *c);        /* [{name, source, digest, servlet, mcp_tools}] */
json_t *svc_caps_mcp_tools(svc_caps *c);   /* tools/list entries of every servlet */
/* A reference (svc_cap_release) or NULL. */
svc_cap *svc_caps_get(svc_caps *c, const char *name);
svc_cap *svc_caps_find_tool(svc_caps *c, const char *mcp_name, char *tool, size_t toollen);
void svc_cap_release(svc_cap *cap);
const char *svc_cap_name(const svc_cap *cap);
const char *svc_cap_digest(const svc_cap *cap);
/* One call on a fresh instance; false only when no result could be produced. */
bool svc_cap_call(svc_cap *cap, const char *function, const uint8_t *input, size_t len,
                  const svc_cap_limits *limits, al_result *result);

#endif
