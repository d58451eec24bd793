/*
 * test_svc_request.c — request bodies → svc_exec_request and results →
 * JSON (src/service/request.c): every field of every kind parsed, and the
 * strictness the API promises — unknown fields, fields of another kind,
 * wrong types, out-of-range numbers, NUL bytes, bad base64, over-size
 * values — refused with a message naming the JSON path; result JSON with
 * the `airlock exec --json` fields and lossy-but-valid UTF-8.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

/* As the HTTP layer loads bodies: duplicates refused; NUL escapes allowed
 * through jansson so request.c's own check is what refuses them. */
static bool parse(const char *text, svc_exec_request *r, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *body = json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!body) fail_msg("test JSON does not load: %s: %s", jerr.text, text);
    bool ok = svc_request_parse(body, r, err, errlen);
    json_decref(body);
    return ok;
}

/* ---- refused bodies --------------------------------------------------------------------- */

static const struct bad_case {
    const char *json;
    const char *message; /* the whole message, or its start when it ends in '*' */
} bad_cases[] = {
    {"[]", "expected a JSON object"},
    {"{}", "missing field \"kind\"*"},
    {"{\"kind\": 1}", "kind: expected \"python\", \"wasm\", \"command\" or \"plugin\""},
    {"{\"kind\": \"ruby\"}", "kind: expected \"python\", \"wasm\", \"command\" or \"plugin\""},
    {"{\"kind\": \"python\"}", "missing field \"code\" (kind \"python\")"},
    {"{\"kind\": \"python\", \"code\": 5}", "code: expected a string"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"bogus\": 1}", "unknown field \"bogus\""},
    {"{\"kind\": \"python\", \"code\": \"x\", \"argv\": [\"a\"]}",
     "argv: not for kind \"python\" (only \"command\")"},
    {"{\"kind\": \"command\"}", "missing field \"argv\" (kind \"command\")"},
    {"{\"kind\": \"command\", \"argv\": []}", "argv: expected at least the program (argv[0])"},
    {"{\"kind\": \"command\", \"argv\": [\"\"]}", "argv[0]: empty program name"},
    {"{\"kind\": \"command\", \"argv\": [\"a\", 3]}", "argv[1]: expected a string"},
    {"{\"kind\": \"command\", \"argv\": \"ls\"}", "argv: expected an array of strings"},
    {"{\"kind\": \"command\", \"argv\": [\"a\\u0000b\"]}", "argv[0]: the string contains a NUL byte"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"backend\": \"docker\"}",
     "backend: expected \"native\" or \"gvisor\""},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"fuel\": 5}",
     "fuel: not for kind \"command\" (only \"python\" or \"wasm\" or \"plugin\")"},
    {"{\"kind\": \"plugin\"}", "missing field \"capability\" (kind \"plugin\")"},
    {"{\"kind\": \"plugin\", \"capability\": \"x\"}", "missing field \"function\" (kind \"plugin\")"},
    {"{\"kind\": \"plugin\", \"capability\": \"../x\", \"function\": \"f\"}",
     "capability: a capability name is 1..32 of [a-z0-9-]"},
    {"{\"kind\": \"plugin\", \"capability\": \"x\", \"function\": \"a b\"}",
     "function: a function name is printable ASCII"},
    {"{\"kind\": \"plugin\", \"capability\": \"x\", \"function\": \"f\", \"stdin\": \"a\"}",
     "stdin: not for kind \"plugin\"*"},
    {"{\"kind\": \"plugin\", \"capability\": \"x\", \"function\": \"f\", \"input\": \"a\", \"input_base64\": \"YQ==\"}",
     "give \"input\" or \"input_base64\", not both"},
    {"{\"kind\": \"wasm\"}", "missing field \"module_base64\" or \"module_path\" (kind \"wasm\")"},
    {"{\"kind\": \"wasm\", \"module_base64\": \"AGFzbQ=\"}", "module_base64: not base64*"},
    {"{\"kind\": \"wasm\", \"module_base64\": \"AGF zbQ==\"}", "module_base64: not base64*"},
    {"{\"kind\": \"wasm\", \"module_base64\": \"YR==\"}", "module_base64: not base64*"},
    {"{\"kind\": \"wasm\", \"module_base64\": \"YQ==YQ==\"}", "module_base64: not base64*"},
    {"{\"kind\": \"wasm\", \"module_base64\": \"AGFzbQ==\", \"module_path\": \"/m.wasm\"}",
     "give \"module_base64\" or \"module_path\", not both"},
    {"{\"kind\": \"wasm\", \"module_path\": \"m.wasm\"}", "module_path: expected an absolute path"},
    {"{\"kind\": \"wasm\", \"module_path\": \"/m.wasm\", \"code\": \"x\"}",
     "code: not for kind \"wasm\" (only \"python\")"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"timeout_ms\": 0}",
     "timeout_ms: expected an integer 1..1000000000000"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"timeout_ms\": -5}",
     "timeout_ms: expected an integer 1..1000000000000"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"timeout_ms\": 1.5}",
     "timeout_ms: expected an integer 1..1000000000000"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"timeout_ms\": \"10\"}",
     "timeout_ms: expected an integer 1..1000000000000"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"memory_bytes\": 99999999999999}",
     "memory_bytes: expected an integer 65536..4294967296"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"fuel\": 9007199254740993}",
     "fuel: expected an integer 1..9007199254740992"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"env\": {\"A=B\": \"c\"}}",
     "env.A=B: a variable name cannot contain '='"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"env\": {\"\": \"c\"}}", "env: empty variable name"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"env\": {\"A\": 1}}", "env.A: expected a string"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"env\": [\"A=1\"]}",
     "env: expected an object {\"NAME\": \"value\"}"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"stdin\": \"a\", \"stdin_base64\": \"YQ==\"}",
     "give \"stdin\" or \"stdin_base64\", not both"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"stdin\": \"a\\u0000\"}",
     "stdin: the string contains a NUL byte"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"dirs\": [{\"host\": \"/a\", \"guest\": \"w\"}]}",
     "dirs[0].guest: expected an absolute path"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"dirs\": [{\"guest\": \"/a\"}]}",
     "dirs[0]: missing field \"host\""},
    {"{\"kind\": \"python\", \"code\": \"x\", \"dirs\": [{\"host\": \"/a\", \"read_only\": \"yes\"}]}",
     "dirs[0]: read_only: expected true or false"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"dirs\": [{\"host\": \"/a\", \"mode\": \"rw\"}]}",
     "unknown field \"dirs[0].mode\""},
    {"{\"kind\": \"python\", \"code\": \"x\", \"dirs\": {\"host\": \"/a\"}}",
     "dirs: expected an array of directory objects"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"egress\": {}}",
     "egress: not for kind \"python\" (only \"command\")"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"alow_domains\": [\"x.com\"]}}",
     "unknown field \"egress.alow_domains\""},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"allow_ports\": [80, 70000]}}",
     "egress.allow_ports[1]: expected an integer 1..65535"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"allow_domains\": [\"a b.com\"]}}",
     "egress.allow_domains[0]: not a domain name*"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"headers\": [{\"domain\": "
     "\"x.com\", \"name\": \"A\", \"value\": \"secret\\r\\nX: y\"}]}}",
     "egress.headers[0]: the header value contains CR, LF or another control character"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"headers\": [{\"domain\": "
     "\"x.com\", \"name\": \"A B\", \"value\": \"v\"}]}}",
     "egress.headers[0]: the header name is not an HTTP token*"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"headers\": [{\"domain\": "
     "\"x.com\", \"name\": \"A\"}]}}",
     "egress.headers[0]: missing field \"value\""},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"log\": \"/tmp/x\"}}",
     "unknown field \"egress.log\""},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"hosts\": {\"x.com\": \"nope\"}}}",
     "egress.hosts.x.com: not an IP address*"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"allow_ips\": [\"10.0.0.0/33\"]}}",
     "egress.allow_ips[0]: not a CIDR*"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"max_connections\": 0}}",
     "egress.max_connections: expected an integer 1..65535"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": {\"idle_timeout_ms\": 4294967296}}",
     "egress.idle_timeout_ms: expected an integer 1..4294967295"},
    {"{\"kind\": \"command\", \"argv\": [\"a\"], \"egress\": []}", "egress: expected an object"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"session\": \"../etc\"}",
     "session: a session id is letters, digits, '-' and '_'"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"session\": \"\"}", "session: empty session id"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"stream\": \"yes\"}", "stream: expected true or false"},
    {"{\"kind\": \"python\", \"code\": \"x\", \"a\\u0001b\\\"\": 1}", "unknown field \"a?b?\""},
};

static void check_message(const char *got, const char *want, const char *json) {
    size_t n = strlen(want);
    bool prefix = n && want[n - 1] == '*';
    bool same = prefix ? strncmp(got, want, n - 1) == 0 : strcmp(got, want) == 0;
    if (!same) fail_msg("for %s\n  got:  %s\n  want: %s", json, got, want);
}

static void test_bad_bodies(void **state) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        svc_exec_request r;
        char err[512];
        memset(&r, 0x5a, sizeof r); /* parse must zero it, success or not */
        assert_false(parse(bad_cases[i].json, &r, err, sizeof err));
        check_message(err, bad_cases[i].message, bad_cases[i].json);
        assert_null(strstr(err, "secret")); /* header values are never echoed */
        static const svc_exec_request zero;
        assert_memory_equal(&r, &zero, sizeof r);
        svc_request_free(&r);
    }
}

/* Duplicate keys: refused by the loader the API uses (documented in service.h). */
static void test_duplicate_keys_refused_by_loader(void **state) {
    const char *text = "{\"kind\": \"python\", \"code\": \"a\", \"code\": \"b\"}";
    json_error_t jerr;
    assert_null(json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &jerr));
    assert_non_null(strstr(jerr.text, "duplicate"));
}

/* Sizes: over each cap refused, at the cap accepted. */
static char *big_body(const char *head, size_t filler, const char *tail) {
    size_t n = strlen(head) + filler + strlen(tail) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    strcpy(s, head);
    memset(s + strlen(head), 'a', filler);
    strcpy(s + strlen(head) + filler, tail);
    return s;
}

static void test_caps(void **state) {
    svc_exec_request r;
    char err[256];
    char *ok = big_body("{\"kind\": \"python\", \"code\": \"", (size_t)1 << 20, "\"}");
    assert_true(parse(ok, &r, err, sizeof err));
    assert_int_equal(strlen(r.code), (size_t)1 << 20);
    svc_request_free(&r);
    free(ok);
    char *over = big_body("{\"kind\": \"python\", \"code\": \"", ((size_t)1 << 20) + 1, "\"}");
    assert_false(parse(over, &r, err, sizeof err));
    assert_string_equal(err, "code: longer than 1048576 bytes");
    free(over);

    /* argv: 4097 entries */
    size_t cap = 4097 * 5 + 64;
    char *argv = malloc(cap);
    size_t n = (size_t)snprintf(argv, cap, "{\"kind\": \"command\", \"argv\": [");
    for (int i = 0; i < 4097; i++) n += (size_t)snprintf(argv + n, cap - n, "%s\"a\"", i ? "," : "");
    snprintf(argv + n, cap - n, "]}");
    assert_false(parse(argv, &r, err, sizeof err));
    assert_string_equal(err, "argv: at most 4096 entries");
    free(argv);

    /* env: 1025 variables */
    cap = 1025 * 16 + 64;
    char *env = malloc(cap);
    n = (size_t)snprintf(env, cap, "{\"kind\": \"python\", \"code\": \"\", \"env\": {");
    for (int i = 0; i < 1025; i++) n += (size_t)snprintf(env + n, cap - n, "%s\"V%d\": \"\"", i ? "," : "", i);
    snprintf(env + n, cap - n, "}}");
    assert_false(parse(env, &r, err, sizeof err));
    assert_string_equal(err, "env: at most 1024 variables");
    free(env);

    /* a module larger than 50 MiB once decoded is refused before decoding */
    char *mod = big_body("{\"kind\": \"wasm\", \"module_base64\": \"", ((size_t)50 << 20) / 3 * 4 + 8, "\"}");
    assert_false(parse(mod, &r, err, sizeof err));
    assert_string_equal(err, "module_base64: more than 52428800 bytes once decoded");
    free(mod);
}

/* ---- accepted bodies ------------------------------------------------------------------------ */

static void test_python_minimal(void **state) {
    svc_exec_request r;
    char err[256] = "";
    assert_true(parse("{\"kind\": \"python\", \"code\": \"print(1)\"}", &r, err, sizeof err));
    assert_int_equal(r.kind, SVC_PYTHON);
    assert_string_equal(r.code, "print(1)");
    assert_int_equal(r.argc, 0);
    assert_null(r.session);
    assert_int_equal(r.timeout_ms, 0);
    assert_int_equal(r.memory_bytes, 0);
    assert_int_equal(r.fuel, 0);
    assert_false(r.stream);
    assert_null(r.stdin_data);
    assert_int_equal(r.ndirs, 0);
    svc_request_free(&r);
    svc_request_free(&r); /* idempotent */
}

static void test_python_full(void **state) {
    svc_exec_request r;
    char err[256] = "";
    assert_true(parse("{\"kind\": \"python\", \"code\": \"import sys\", \"args\": [\"x\", \"y\"],"
                      " \"env\": {\"A\": \"1\", \"B\": \"two=2\"}, \"stdin\": \"héllo\","
                      " \"timeout_ms\": 1500, \"memory_bytes\": 65536, \"fuel\": 9007199254740992,"
                      " \"session\": \"0123abcdef_-\", \"stream\": true,"
                      " \"dirs\": [{\"host\": \"/data\"}, {\"host\": \"/w\", \"guest\": \"/work\","
                      " \"read_only\": false}]}",
                      &r, err, sizeof err));
    assert_int_equal(r.argc, 2);
    assert_string_equal(r.argv[0], "x");
    assert_string_equal(r.argv[1], "y");
    assert_null(r.argv[2]);
    assert_int_equal(r.nenv, 2);
    assert_string_equal(r.env[0], "A=1");
    assert_string_equal(r.env[1], "B=two=2");
    assert_int_equal(r.stdin_len, strlen("héllo"));
    assert_memory_equal(r.stdin_data, "héllo", r.stdin_len);
    assert_int_equal(r.timeout_ms, 1500);
    assert_int_equal(r.memory_bytes, 65536);
    assert_int_equal(r.fuel, UINT64_C(9007199254740992));
    assert_string_equal(r.session, "0123abcdef_-");
    assert_true(r.stream);
    assert_int_equal(r.ndirs, 2);
    assert_string_equal(r.dirs[0].host_path, "/data");
    assert_string_equal(r.dirs[0].guest_path, "/data"); /* defaults to the host path */
    assert_true(r.dirs[0].read_only);                   /* zero trust */
    assert_string_equal(r.dirs[1].guest_path, "/work");
    assert_false(r.dirs[1].read_only);
    svc_request_free(&r);
}

static void test_wasm_base64(void **state) {
    svc_exec_request r;
    char err[256] = "";
    assert_true(parse("{\"kind\": \"wasm\", \"module_base64\": \"AGFzbQEAAAA=\", \"args\": [\"-v\"]}",
                      &r, err, sizeof err));
    assert_int_equal(r.kind, SVC_WASM);
    assert_int_equal(r.module_len, 8);
    assert_memory_equal(r.module, "\0asm\1\0\0\0", 8);
    assert_null(r.module_path);
    assert_int_equal(r.argc, 1);
    assert_string_equal(r.argv[0], "-v");
    svc_request_free(&r);
    /* one and two '=' of padding, and none */
    assert_true(parse("{\"kind\": \"wasm\", \"module_base64\": \"YWI=\"}", &r, err, sizeof err));
    assert_int_equal(r.module_len, 2);
    assert_memory_equal(r.module, "ab", 2);
    svc_request_free(&r);
    assert_true(parse("{\"kind\": \"wasm\", \"module_base64\": \"YQ==\"}", &r, err, sizeof err));
    assert_int_equal(r.module_len, 1);
    svc_request_free(&r);
    assert_true(parse("{\"kind\": \"wasm\", \"module_base64\": \"YWJj+/+/\"}", &r, err, sizeof err));
    assert_int_equal(r.module_len, 6);
    assert_memory_equal(r.module, "abc\xfb\xff\xbf", 6);
    svc_request_free(&r);
}

static void test_wasm_path(void **state) {
    svc_exec_request r;
    char err[256] = "";
    assert_true(parse("{\"kind\": \"wasm\", \"module_path\": \"/srv/m.wasm\", \"fuel\": 10}", &r,
                      err, sizeof err));
    assert_string_equal(r.module_path, "/srv/m.wasm");
    assert_null(r.module);
    assert_int_equal(r.fuel, 10);
    svc_request_free(&r);
}

static void test_command_full(void **state) {
    svc_exec_request r;
    char err[256] = "";
    assert_true(parse(
        "{\"kind\": \"command\", \"argv\": [\"/bin/echo\", \"hi\"], \"backend\": \"gvisor\","
        " \"stdin_base64\": \"AAEC\", \"egress\": {\"allow_domains\": [\"example.com\", \"*.x.org\"],"
        " \"deny_domains\": [\"bad.example.com\"], \"allow_ports\": [8080], \"allow_ips\":"
        " [\"10.0.0.0/8\", \"fd00::/8\"], \"headers\": [{\"domain\": \"api.x.org\", \"name\":"
        " \"Authorization\", \"value\": \"Bearer t\"}], \"hosts\": {\"a.test\": \"192.0.2.1\","
        " \"b.test\": \"[2001:db8::1]\"}, \"max_connections\": 4, \"max_bytes_per_connection\": 100,"
        " \"max_bytes\": 1000, \"idle_timeout_ms\": 5000}}",
        &r, err, sizeof err));
    assert_int_equal(r.kind, SVC_COMMAND);
    assert_int_equal(r.backend, AL_ISOLATION_GVISOR);
    assert_int_equal(r.argc, 2);
    assert_string_equal(r.argv[1], "hi");
    assert_int_equal(r.stdin_len, 3);
    assert_memory_equal(r.stdin_data, "\0\1\2", 3);
    const al_egress *e = &r.egress;
    assert_int_equal(e->nallow_domains, 2);
    assert_string_equal(e->allow_domains[1], "*.x.org");
    assert_int_equal(e->ndeny_domains, 1);
    assert_int_equal(e->nallow_ports, 1);
    assert_int_equal(e->allow_ports[0], 8080);
    assert_int_equal(e->nallow_ips, 2);
    assert_int_equal(e->nheaders, 1);
    assert_string_equal(e->headers[0].value, "Bearer t");
    assert_int_equal(e->nhosts, 2);
    assert_string_equal(e->hosts[1].address, "2001:db8::1"); /* brackets dropped */
    assert_int_equal(e->max_connections, 4);
    assert_int_equal(e->max_bytes_per_connection, 100);
    assert_int_equal(e->max_bytes, 1000);
    assert_int_equal(e->idle_timeout_ms, 5000);
    assert_null(e->log_path);
    svc_request_free(&r);
    assert_true(parse("{\"kind\": \"command\", \"argv\": [\"ls\"]}", &r, err, sizeof err));
    assert_int_equal(r.backend, AL_ISOLATION_NATIVE); /* the default */
    assert_int_equal(r.egress.nallow_domains, 0);
    svc_request_free(&r);
}

/* ---- results and errors ---------------------------------------------------------------------- */

static const char *const result_fields[] = {
    "status", "exit_code", "trap", "trap_location", "fuel_used", "wall_ms", "peak_memory_bytes",
    "stdout", "stdout_truncated", "stderr", "stderr_truncated", "signal", "limits_hit", "cpu_ms",
    "denied_syscalls", "backend", "execution", "egress", "error", "redactions", "audit_id", NULL,
};

static void test_result_json(void **state) {
    al_result r;
    memset(&r, 0, sizeof r);
    static uint8_t out[] = "a\xff" "b\xe2\x82";
    static uint8_t err_bytes[] = "ok\n";
    r.status = AL_STATUS_OK;
    r.stdout_data = out;
    r.stdout_len = sizeof out - 1;
    r.stderr_data = err_bytes;
    r.stderr_len = 3;
    r.wall_ns = 1234567;
    r.cpu_ns = 2000000;
    r.fuel_used = 42;
    r.limits_hit = AL_LIMIT_WALL | AL_LIMIT_OUTPUT;
    snprintf(r.backend, sizeof r.backend, "native");
    snprintf(r.execution_id, sizeof r.execution_id, "al-1-2-3");
    r.egress_allowed = 2;
    r.egress_denied = 1;
    r.egress_bytes = 99;
    json_t *j = svc_result_json(&r, 3, 17);
    assert_non_null(j);
    for (size_t i = 0; result_fields[i]; i++)
        if (!json_object_get(j, result_fields[i])) fail_msg("missing %s", result_fields[i]);
    assert_int_equal(json_object_size(j), 21);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
    const json_t *so = json_object_get(j, "stdout");
    assert_int_equal(json_string_length(so), 8);
    assert_memory_equal(json_string_value(so), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD", 8);
    assert_true(json_is_null(json_object_get(j, "trap")));
    assert_true(json_is_null(json_object_get(j, "error")));
    assert_true(json_is_null(json_object_get(j, "trap_location")));
    assert_int_equal(json_integer_value(json_object_get(j, "redactions")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "audit_id")), 17);
    assert_int_equal(json_integer_value(json_object_get(j, "fuel_used")), 42);
    assert_true(json_real_value(json_object_get(j, "wall_ms")) > 1.234 &&
                json_real_value(json_object_get(j, "wall_ms")) < 1.236);
    json_t *lim = json_object_get(j, "limits_hit");
    assert_int_equal(json_array_size(lim), 2);
    assert_string_equal(json_string_value(json_array_get(lim, 0)), "wall");
    assert_string_equal(json_string_value(json_array_get(lim, 1)), "output");
    assert_string_equal(json_string_value(json_object_get(j, "backend")), "native");
    assert_string_equal(json_string_value(json_object_get(j, "execution")), "al-1-2-3");
    json_t *eg = json_object_get(j, "egress");
    assert_int_equal(json_integer_value(json_object_get(eg, "allowed")), 2);
    assert_int_equal(json_integer_value(json_object_get(eg, "denied")), 1);
    assert_int_equal(json_integer_value(json_object_get(eg, "bytes")), 99);
    char *text = json_dumps(j, 0); /* always serialisable */
    assert_non_null(text);
    free(text);
    json_decref(j);
}

static void test_result_json_trap(void **state) {
    al_result r;
    memset(&r, 0, sizeof r);
    r.status = AL_STATUS_TRAP;
    r.trap = AL_TRAP_UNREACHABLE;
    r.error.kind = AL_ERR_TRAP;
    r.error.backtrace_len = 1;
    r.error.func_index = 3;
    snprintf(r.error.message, sizeof r.error.message, "unreachable \xc3");
    json_t *j = svc_result_json(&r, 0, -1);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "trap");
    assert_string_equal(json_string_value(json_object_get(j, "trap")), "unreachable");
    assert_string_equal(json_string_value(json_object_get(j, "error")), "unreachable \xEF\xBF\xBD");
    assert_true(json_is_null(json_object_get(j, "audit_id")));
    assert_true(json_is_null(json_object_get(j, "backend")));
    json_t *loc = json_object_get(j, "trap_location");
    assert_int_equal(json_integer_value(json_object_get(loc, "func_index")), 3);
    assert_int_equal(json_array_size(json_object_get(loc, "backtrace")), 1);
    json_decref(j);
}

static void test_error_json(void **state) {
    json_t *j = svc_error_json("bad_request", "%s: %d", "field \xff", 7);
    assert_non_null(j);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "bad_request");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "field \xEF\xBF\xBD: 7");
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_bodies),
        cmocka_unit_test(test_duplicate_keys_refused_by_loader),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_python_minimal),
        cmocka_unit_test(test_python_full),
        cmocka_unit_test(test_wasm_base64),
        cmocka_unit_test(test_wasm_path),
        cmocka_unit_test(test_command_full),
        cmocka_unit_test(test_result_json),
        cmocka_unit_test(test_result_json_trap),
        cmocka_unit_test(test_error_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
