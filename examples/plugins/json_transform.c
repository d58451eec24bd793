/*
 * json_transform.c — an example plugin (pdk/airlock_pdk.h): the function
 * `transform` reads a small JSON request and answers JSON:
 *
 *   {"op": "sum", "values": [1, 2, 3]}      -> {"op":"sum","result":6}
 *   {"op": "max", "values": [4, -1, 9]}     -> {"op":"max","result":9}
 *   {"op": "upper", "text": "hello"}        -> {"op":"upper","result":"HELLO"}
 *
 * Values are integers (int64). Malformed input — not JSON, an unknown op or
 * field, a value of the wrong type, an overflowing sum — is a plugin error
 * (pdk_error_set) with a message saying what is wrong; the host reports it
 * and the call fails. The JSON reader is the PDK's (no library).
 */
#include "airlock_pdk.h"

static int32_t fail(const char *why) {
    return pdk_errorf("transform: %s", why);
}

/* Every member must be one this op knows: a typo is an error, not ignored. */
static bool only_fields(pdk_json req, const char *a, const char *b) {
    pdk_json key, value;
    size_t pos = 0;
    while (pdk_json_next(req, &pos, &key, &value)) {
        char *k = pdk_json_string(key, NULL);
        bool ok = k && (!strcmp(k, a) || !strcmp(k, b));
        free(k);
        if (!ok) return false;
    }
    return true;
}

static int32_t numbers(pdk_json req, bool want_max) {
    pdk_json values = pdk_json_get(req, "values"), v;
    if (pdk_json_kind(values) != '[') return fail("\"values\" must be an array of integers");
    int64_t acc = 0;
    size_t pos = 0, count = 0;
    while (pdk_json_next(values, &pos, NULL, &v)) {
        int64_t x;
        if (!pdk_json_int(v, &x)) return fail("\"values\" must hold integers only");
        if (want_max) {
            acc = count == 0 || x > acc ? x : acc;
        } else if (__builtin_add_overflow(acc, x, &acc)) {
            return fail("the sum overflows a 64-bit integer");
        }
        count++;
    }
    if (want_max && count == 0) return fail("\"max\" of an empty array");
    char out[96];
    int n = snprintf(out, sizeof out, "{\"op\":\"%s\",\"result\":%lld}", want_max ? "max" : "sum",
                     (long long)acc);
    pdk_output_set(out, (size_t)n);
    return 0;
}

static int32_t upper(pdk_json req) {
    size_t len;
    char *text = pdk_json_string(pdk_json_get(req, "text"), &len);
    if (!text) return fail("\"text\" must be a string");
    for (size_t i = 0; i < len; i++)
        if (text[i] >= 'a' && text[i] <= 'z') text[i] = (char)(text[i] - 'a' + 'A');
    bool ok = pdk_output_json_with("{\"op\":\"upper\",\"result\":%s}", text, len);
    free(text);
    return ok ? 0 : fail("out of memory");
}

PDK_EXPORT(transform) {
    size_t len;
    char *input = (char *)pdk_input(&len);
    if (!input) return fail("out of memory");
    pdk_json req;
    int32_t rc;
    if (!pdk_json_parse(input, len, &req)) {
        rc = fail("the input is not valid JSON");
    } else if (pdk_json_kind(req) != '{') {
        rc = fail("expected a JSON object like {\"op\": \"sum\", \"values\": [1, 2]}");
    } else {
        char *op = pdk_json_string(pdk_json_get(req, "op"), NULL);
        if (!op)
            rc = fail("\"op\" must be a string: \"sum\", \"max\" or \"upper\"");
        else if (!strcmp(op, "sum") || !strcmp(op, "max"))
            rc = only_fields(req, "op", "values") ? numbers(req, !strcmp(op, "max"))
                                                   : fail("unknown field (expected op, values)");
        else if (!strcmp(op, "upper"))
            rc = only_fields(req, "op", "text") ? upper(req)
                                                : fail("unknown field (expected op, text)");
        else
            rc = fail("unknown \"op\" (expected \"sum\", \"max\" or \"upper\")");
        free(op);
    }
    free(input);
    return rc;
}
