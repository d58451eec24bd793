/*
 * test_svc_mcp.c — the MCP server (src/service/mcp.c) through
 * svc_mcp_handle, as the stdio loop and the /mcp route call it: lifecycle
 * and version negotiation, tools/list schemas, tools/call of run_python
 * (skipped without python.wasm) and run_command (skipped where the native
 * backend is unavailable), argument errors in both reporting styles
 * (2025-11-25: isError results; 2025-06-18: -32602), JSON-RPC envelope
 * errors, notifications, and hostile messages.
 *
 * The svc is real (svc_new over a config whose state and audit database
 * live in a fresh temporary directory); python.wasm is looked for in
 * $AIRLOCK_PYTHON_DIR, else build/python (the tests run from the repo root).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service.h"

typedef struct fixture {
    char dir[64];
    svc *s;
} fixture;

static fixture fx;

static void remove_tree(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void python_dir(char *out, size_t len) {
    const char *env = getenv("AIRLOCK_PYTHON_DIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", env && *env ? env : "build/python");
    char *abs = realpath(path, NULL);
    snprintf(out, len, "%s", abs ? abs : "");
    free(abs);
}

static int group_setup(void **state) {
    snprintf(fx.dir, sizeof fx.dir, "/tmp/airlock-test-mcp-XXXXXX");
    if (!mkdtemp(fx.dir)) return -1;
    svc_config cfg;
    svc_config_defaults(&cfg);
    snprintf(cfg.state_dir, sizeof cfg.state_dir, "%s", fx.dir);
    snprintf(cfg.audit_db, sizeof cfg.audit_db, "%s/audit.db", fx.dir);
    cfg.unix_socket[0] = 0;
    cfg.tcp_host[0] = 0;
    cfg.python_per_minute = 1000; /* the tests call run_python more than 10 times a minute */
    cfg.exec_per_minute = 1000;
    python_dir(cfg.python_dir, sizeof cfg.python_dir);
    char err[256];
    fx.s = svc_new(&cfg, err, sizeof err);
    svc_config_free(&cfg);
    if (!fx.s) {
        fprintf(stderr, "svc_new: %s\n", err);
        remove_tree(fx.dir);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state) {
    svc_free(fx.s);
    remove_tree(fx.dir);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------- */

static const svc_caller caller = {.token = NULL, .source = "mcp-stdio"};

/* Handle a message written as JSON text. */
static json_t *send(svc_mcp_state *st, const char *text) {
    json_error_t jerr;
    json_t *msg = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!msg) fail_msg("test JSON does not parse: %s: %s", jerr.text, text);
    json_t *resp = svc_mcp_handle(fx.s, st, msg, &caller);
    json_decref(msg);
    return resp;
}

static svc_mcp_state *initialized(const char *version) {
    svc_mcp_state *st = svc_mcp_state_new();
    assert_non_null(st);
    char text[256];
    snprintf(text, sizeof text,
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
             "\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}",
             version);
    json_t *r = send(st, text);
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    return st;
}

static int error_code(const json_t *resp) {
    const json_t *e = json_object_get(resp, "error");
    if (!e) fail_msg("expected an error, got %s", json_dumps(resp, JSON_COMPACT));
    return (int)json_integer_value(json_object_get(e, "code"));
}

static const char *error_message(const json_t *resp) {
    return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

static json_t *call_tool(svc_mcp_state *st, const char *tool, const char *arguments) {
    char text[8192];
    snprintf(text, sizeof text,
             "{\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\"method\":\"tools/call\",\"params\":"
             "{\"name\":\"%s\",\"arguments\":%s}}",
             tool, arguments);
    return send(st, text);
}

static const json_t *result_of(const json_t *resp) {
    const json_t *r = json_object_get(resp, "result");
    if (!r) fail_msg("expected a result, got %s", json_dumps(resp, JSON_COMPACT));
    return r;
}

static const char *first_text(const json_t *result) {
    const json_t *c = json_array_get(json_object_get(result, "content"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "text");
    return json_string_value(json_object_get(c, "text"));
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static void negotiates(const char *asked, const char *expected) {
    svc_mcp_state *st = svc_mcp_state_new();
    char text[256];
    snprintf(text, sizeof text,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
             "\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}",
             asked);
    json_t *r = send(st, text);
    const json_t *res = result_of(r);
    assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), expected);
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
    const json_t *tools = json_object_get(json_object_get(res, "capabilities"), "tools");
    assert_true(json_is_object(tools));
    assert_true(json_is_false(json_object_get(tools, "listChanged")));
    const json_t *info = json_object_get(res, "serverInfo");
    assert_string_equal(json_string_value(json_object_get(info, "name")), "airlock");
    assert_true(json_is_string(json_object_get(info, "version")));
    assert_true(json_string_length(json_object_get(res, "instructions")) > 0);
    char v[32];
    assert_true(svc_mcp_initialized(st, v, sizeof v));
    assert_string_equal(v, expected);
    json_decref(r);
    svc_mcp_state_free(st);
}

static void test_version_negotiation(void **state) {
    negotiates("2025-11-25", "2025-11-25");
    negotiates("2025-06-18", "2025-06-18");
    negotiates("2025-03-26", "2025-03-26");
    negotiates("2024-11-05", "2025-11-25"); /* not ours: we answer with ours */
    negotiates("banana", "2025-11-25");
    assert_true(svc_mcp_version_supported("2025-06-18"));
    assert_false(svc_mcp_version_supported("2024-11-05"));
    assert_false(svc_mcp_version_supported(NULL));
}

static void test_initialize_errors(void **state) {
    svc_mcp_state *st = svc_mcp_state_new();
    json_t *r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(strstr(error_message(r), "protocolVersion"));
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                 "{\"protocolVersion\":7}}");
    assert_int_equal(error_code(r), -32602);
    json_decref(r);
    assert_false(svc_mcp_initialized(st, NULL, 0));
    svc_mcp_state_free(st);

    st = initialized("2025-11-25");
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":"
                 "{\"protocolVersion\":\"2025-06-18\"}}");
    assert_int_equal(error_code(r), -32600); /* once per session */
    json_decref(r);
    svc_mcp_state_free(st);
}

static void test_before_initialize(void **state) {
    svc_mcp_state *st = svc_mcp_state_new();
    json_t *r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
    assert_int_equal(error_code(r), -32600);
    assert_non_null(strstr(error_message(r), "initialize"));
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":"
                 "{\"name\":\"run_python\",\"arguments\":{\"code\":\"print(1)\"}}}");
    assert_int_equal(error_code(r), -32600);
    json_decref(r);
    /* ping is allowed at any time */
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
    assert_true(json_is_object(result_of(r)));
    assert_int_equal(json_object_size(result_of(r)), 0);
    assert_string_equal(json_string_value(json_object_get(r, "id")), "p");
    json_decref(r);
    svc_mcp_state_free(st);
}

/* ---- tools/list ------------------------------------------------------------------------ */

/* An object schema: type "object", properties an object of schemas that
 * each have a type, required a list of names found in properties. */
static void assert_object_schema(const json_t *schema) {
    assert_true(json_is_object(schema));
    assert_string_equal(json_string_value(json_object_get(schema, "type")), "object");
    const json_t *props = json_object_get(schema, "properties");
    assert_true(json_is_object(props));
    assert_true(json_object_size(props) > 0);
    const char *key;
    json_t *p;
    json_object_foreach((json_t *)props, key, p) {
        const json_t *type = json_object_get(p, "type");
        assert_true(json_is_string(type) || json_is_array(type));
    }
    const json_t *required = json_object_get(schema, "required");
    assert_true(json_is_array(required));
    size_t i;
    json_t *name;
    json_array_foreach(required, i, name) {
        assert_true(json_is_string(name));
        assert_non_null(json_object_get(props, json_string_value(name)));
    }
}

static void test_tools_list(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}");
    const json_t *tools = json_object_get(result_of(r), "tools");
    assert_int_equal(json_array_size(tools), 3);
    const char *names[] = {"run_python", "run_command", "run_wasm"};
    const char *required[] = {"code", "argv", NULL};
    for (size_t i = 0; i < 3; i++) {
        const json_t *t = json_array_get(tools, i);
        assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
        assert_true(json_string_length(json_object_get(t, "description")) > 0);
        const json_t *in = json_object_get(t, "inputSchema");
        assert_object_schema(in);
        assert_true(json_is_false(json_object_get(in, "additionalProperties")));
        const json_t *req = json_object_get(in, "required");
        if (required[i]) {
            assert_int_equal(json_array_size(req), 1);
            assert_string_equal(json_string_value(json_array_get(req, 0)), required[i]);
        } else {
            assert_int_equal(json_array_size(req), 0);
        }
        const json_t *out = json_object_get(t, "outputSchema");
        assert_object_schema(out);
        const json_t *props = json_object_get(out, "properties");
        assert_non_null(json_object_get(props, "status"));
        assert_non_null(json_object_get(props, "stdout"));
        assert_non_null(json_object_get(props, "stderr"));
        assert_non_null(json_object_get(props, "exit_code"));
    }
    const json_t *argv = json_object_get(
        json_object_get(json_object_get(json_array_get(tools, 1), "inputSchema"), "properties"),
        "argv");
    assert_string_equal(json_string_value(json_object_get(argv, "type")), "array");
    assert_int_equal(json_integer_value(json_object_get(argv, "minItems")), 1);
    json_decref(r);
    /* tools/list works without params too */
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    assert_int_equal(json_array_size(json_object_get(result_of(r), "tools")), 3);
    json_decref(r);
    svc_mcp_state_free(st);
}

/* ---- tools/call ------------------------------------------------------------------------ */

static bool have_python(void) {
    char dir[PATH_MAX], wasm[PATH_MAX + 16];
    python_dir(dir, sizeof dir);
    snprintf(wasm, sizeof wasm, "%s/python.wasm", dir);
    return dir[0] && access(wasm, R_OK) == 0;
}

/* Every successful call: text content, structuredContent with the result
 * fields, isError matching the status. */
static const json_t *assert_tool_result(const json_t *resp) {
    const json_t *res = result_of(resp);
    assert_true(json_is_array(json_object_get(res, "content")));
    const json_t *sc = json_object_get(res, "structuredContent");
    assert_true(json_is_object(sc));
    assert_true(json_is_string(json_object_get(sc, "status")));
    assert_true(json_is_integer(json_object_get(sc, "exit_code")));
    assert_true(json_is_string(json_object_get(sc, "stdout")));
    assert_true(json_is_string(json_object_get(sc, "stderr")));
    const char *status = json_string_value(json_object_get(sc, "status"));
    bool ok = !strcmp(status, "ok") || !strcmp(status, "output_truncated");
    assert_true(json_is_boolean(json_object_get(res, "isError")));
    assert_int_equal(json_is_true(json_object_get(res, "isError")), !ok);
    return sc;
}

static void test_run_python(void **state) {
    if (!have_python()) {
        fprintf(stderr, "python.wasm not found (build/python or $AIRLOCK_PYTHON_DIR): skipped\n");
        skip();
    }
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = call_tool(st, "run_python", "{\"code\":\"print('hello from mcp')\"}");
    assert_string_equal(json_string_value(json_object_get(r, "id")), "call-1");
    const json_t *sc = assert_tool_result(r);
    assert_string_equal(json_string_value(json_object_get(sc, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "hello from mcp\n");
    assert_non_null(strstr(first_text(result_of(r)), "hello from mcp"));
    json_decref(r);

    /* a failing program is a tool execution error, with its result */
    r = call_tool(st, "run_python", "{\"code\":\"import sys; sys.exit(3)\", \"timeout_ms\": 20000}");
    sc = assert_tool_result(r);
    assert_string_equal(json_string_value(json_object_get(sc, "status")), "exit");
    assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), 3);
    assert_true(json_is_true(json_object_get(result_of(r), "isError")));
    json_decref(r);
    svc_mcp_state_free(st);
}

static void test_run_command(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = call_tool(st, "run_command", "{\"argv\":[\"echo\",\"hi\",\"there\"]}");
    const json_t *sc = json_object_get(result_of(r), "structuredContent");
    const char *status = json_string_value(json_object_get(sc, "status"));
    if (status && !strcmp(status, "unsupported")) {
        fprintf(stderr, "native backend unavailable here: skipped (%s)\n",
                json_string_value(json_object_get(sc, "error")));
        json_decref(r);
        svc_mcp_state_free(st);
        skip();
    }
    sc = assert_tool_result(r);
    assert_string_equal(json_string_value(json_object_get(sc, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "hi there\n");
    assert_true(json_is_false(json_object_get(result_of(r), "isError")));
    json_decref(r);
    svc_mcp_state_free(st);
}

/* An argument error: an isError result naming the argument (2025-11-25),
 * or -32602 with data.argument (2025-06-18). */
static void expect_bad_argument(const char *tool, const char *arguments, const char *argument) {
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = call_tool(st, tool, arguments);
    const json_t *res = result_of(r);
    assert_true(json_is_true(json_object_get(res, "isError")));
    assert_null(json_object_get(res, "structuredContent"));
    const char *text = first_text(res);
    if (!strstr(text, argument)) fail_msg("'%s' does not name %s", text, argument);
    json_decref(r);
    svc_mcp_state_free(st);

    st = initialized("2025-06-18");
    r = call_tool(st, tool, arguments);
    assert_int_equal(error_code(r), -32602);
    if (!strstr(error_message(r), argument))
        fail_msg("'%s' does not name %s", error_message(r), argument);
    const json_t *data = json_object_get(json_object_get(r, "error"), "data");
    assert_string_equal(json_string_value(json_object_get(data, "tool")), tool);
    json_decref(r);
    svc_mcp_state_free(st);
}

static void test_invalid_arguments(void **state) {
    expect_bad_argument("run_python", "{}", "code");
    expect_bad_argument("run_python", "{\"code\": 42}", "code");
    expect_bad_argument("run_python", "{\"code\": \"\"}", "code");
    expect_bad_argument("run_python", "{\"code\": \"1\", \"timeout_ms\": \"soon\"}", "timeout_ms");
    expect_bad_argument("run_python", "{\"code\": \"1\", \"timeout_ms\": 1.5}", "timeout_ms");
    expect_bad_argument("run_python", "{\"code\": \"1\", \"timeout_ms\": 0}", "timeout_ms");
    expect_bad_argument("run_python", "{\"code\": \"1\", \"timeout_ms\": -5}", "timeout_ms");
    expect_bad_argument("run_python", "{\"code\": \"1\", \"colour\": \"red\"}", "colour");
    expect_bad_argument("run_command", "{\"argv\": []}", "argv");
    expect_bad_argument("run_command", "{\"argv\": [\"echo\", 7]}", "argv[1]");
    expect_bad_argument("run_command", "{\"argv\": \"echo hi\"}", "argv");
    expect_bad_argument("run_command", "{\"argv\": [\"echo\"], \"backend\": \"docker\"}",
                        "backend");
    expect_bad_argument("run_wasm", "{}", "module_base64");
    expect_bad_argument("run_wasm", "{\"module_base64\": \"AGFzbQ==\", \"module_path\": \"/x\"}",
                        "module_path");
    expect_bad_argument("run_wasm", "{\"module_base64\": \"not base64!\"}", "module_base64");
    expect_bad_argument("run_wasm", "{\"module_path\": \"x.wasm\", \"args\": [1]}", "args[0]");
}

static void test_tools_call_protocol_errors(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = call_tool(st, "rm_rf", "{}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(strstr(error_message(r), "rm_rf"));
    json_decref(r);
    /* a long multibyte name, cut in the message: still a valid answer */
    char name[256] = "x"; /* odd: a cut at 64 bytes splits a character */
    for (int i = 0; i < 70; i++) strcat(name, "\xc3\xa9");
    r = call_tool(st, name, "{}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(strstr(error_message(r), "unknown tool"));
    json_decref(r);
    char args[400];
    snprintf(args, sizeof args, "{\"code\": \"1\", \"x%s\": 1}", name);
    r = call_tool(st, "run_python", args);
    assert_true(json_is_true(json_object_get(result_of(r), "isError")));
    assert_non_null(strstr(first_text(result_of(r)), "unknown argument"));
    json_decref(r);
    r = call_tool(st, "run_python", "[\"print(1)\"]");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(strstr(error_message(r), "arguments"));
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(strstr(error_message(r), "name"));
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                 "{\"name\":[\"run_python\"]}}");
    assert_int_equal(error_code(r), -32602);
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":\"x\"}");
    assert_int_equal(error_code(r), -32602);
    json_decref(r);
    svc_mcp_state_free(st);
}

/* ---- JSON-RPC envelopes ------------------------------------------------------------------ */

static void test_unknown_method(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    const char *methods[] = {"resources/list", "prompts/list", "tools/delete", "", "x/y/z"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"%s\"}", i,
                 methods[i]);
        json_t *r = send(st, text);
        assert_int_equal(error_code(r), -32601);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), (json_int_t)i);
        json_decref(r);
    }
    svc_mcp_state_free(st);
}

static void test_notifications_and_responses(void **state) {
    svc_mcp_state *st = svc_mcp_state_new();
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                         "\"params\":{\"requestId\":3}}"));
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{}}"));
    /* responses to requests we never sent */
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"));
    assert_null(send(st, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":1,\"message\":\"x\"}}"));
    svc_mcp_state_free(st);
}

static void test_envelope_errors(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    struct {
        const char *text;
        int code;
        bool id_null;
    } cases[] = {
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, true}, /* batch */
        {"[]", -32600, true},
        {"42", -32600, true},
        {"\"ping\"", -32600, true},
        {"null", -32600, true},
        {"{}", -32600, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", -32600, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", -32600, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600, true},
        {"{\"id\":1,\"method\":\"ping\"}", -32600, false},
        {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600, false},
        {"{\"jsonrpc\":2,\"id\":1,\"method\":\"ping\"}", -32600, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", -32600, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", -32600, false},
        {"{\"jsonrpc\":\"2.0\",\"method\":7}", -32600, true}, /* not a notification */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", -32602, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t jerr;
        json_t *msg = json_loads(cases[i].text, JSON_DECODE_ANY, &jerr);
        assert_non_null(msg);
        json_t *r = svc_mcp_handle(fx.s, st, msg, &caller);
        json_decref(msg);
        if (!r) fail_msg("no answer to %s", cases[i].text);
        if (error_code(r) != cases[i].code)
            fail_msg("%s: code %d, expected %d", cases[i].text, error_code(r), cases[i].code);
        const json_t *id = json_object_get(r, "id");
        assert_non_null(id);
        assert_int_equal(json_is_null(id), cases[i].id_null);
        json_decref(r);
    }
    svc_mcp_state_free(st);
}

static void test_ids_echoed(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    json_t *r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\n\\\"x\",\"method\":\"ping\"}");
    assert_string_equal(json_string_value(json_object_get(r, "id")), "\xc3\xa9\n\"x");
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":-9007199254740993,\"method\":\"ping\"}");
    assert_true(json_integer_value(json_object_get(r, "id")) == -9007199254740993LL);
    json_decref(r);
    r = send(st, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}");
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 0);
    json_decref(r);
    json_t *pe = svc_mcp_parse_error("unexpected token");
    assert_int_equal(error_code(pe), -32700);
    assert_true(json_is_null(json_object_get(pe, "id")));
    json_decref(pe);
    svc_mcp_state_free(st);
}

/* Arguments of every shape and size, against every tool: an answer each
 * time (a result or an error), never a crash, a hang or a leak. */
static void test_hostile_arguments(void **state) {
    svc_mcp_state *st = initialized("2025-11-25");
    const char *tools[] = {"run_python", "run_command", "run_wasm"};
    json_t *big_argv = json_array();
    for (int i = 0; i < 5000; i++) json_array_append_new(big_argv, json_string("x"));
    json_t *deep = json_object();
    for (int i = 0; i < 200; i++) deep = json_pack("{s:o}", "code", deep);
    json_t *values[] = {
        json_null(), json_true(), json_integer(INT64_MIN), json_real(1e308),
        json_string(""), json_stringn("a\0b", 3), json_array(), big_argv, deep,
        json_pack("{s:s, s:s}", "code", "1", "session_id", ""),
        json_pack("{s:[s], s:s}", "argv", "", "workspace", "../../etc"),
        json_pack("{s:s}", "module_path", "/etc/passwd"),
        json_pack("{s:s}", "module_base64", "===="),
        json_pack("{s:s, s:I}", "code", "1", "timeout_ms", (json_int_t)INT64_MAX),
    };
    for (size_t t = 0; t < 3; t++) {
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            json_t *msg = json_pack("{s:s, s:i, s:s, s:{s:s, s:O}}", "jsonrpc", "2.0", "id", 1,
                                    "method", "tools/call", "params", "name", tools[t],
                                    "arguments", values[v]);
            assert_non_null(msg);
            json_t *r = svc_mcp_handle(fx.s, st, msg, &caller);
            assert_non_null(r);
            assert_true(json_object_get(r, "result") || json_object_get(r, "error"));
            json_t *res = json_object_get(r, "result");
            if (res && !json_object_get(res, "structuredContent"))
                assert_true(json_is_true(json_object_get(res, "isError")));
            json_decref(r);
            json_decref(msg);
        }
    }
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) json_decref(values[v]);
    svc_mcp_state_free(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_negotiation),
        cmocka_unit_test(test_initialize_errors),
        cmocka_unit_test(test_before_initialize),
        cmocka_unit_test(test_tools_list),
        cmocka_unit_test(test_run_python),
        cmocka_unit_test(test_run_command),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_tools_call_protocol_errors),
        cmocka_unit_test(test_unknown_method),
        cmocka_unit_test(test_notifications_and_responses),
        cmocka_unit_test(test_envelope_errors),
        cmocka_unit_test(test_ids_echoed),
        cmocka_unit_test(test_hostile_arguments),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
