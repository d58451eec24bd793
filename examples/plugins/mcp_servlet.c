/*
 * mcp_servlet.c — an example MCP servlet (pdk/airlock_pdk.h): a plugin that
 * airlockd exposes as MCP tools. It exports
 *
 *   describe  -> {"tools": [{"name", "description", "inputSchema"}, ...]}
 *   call      {"params": {"name": TOOL, "arguments": {...}}}
 *             -> {"content": [{"type": "text", "text": ...}], "isError": bool}
 *
 * with two tools: "count_vowels" ({"text"} -> the number of vowels) and
 * "reverse" ({"text"} -> the text reversed by code point, so UTF-8 stays
 * valid). A request the servlet cannot read is a plugin error; a tool that
 * fails (unknown name, missing argument) answers isError: true, as MCP asks.
 */
#include "airlock_pdk.h"

static const char describe_json[] =
    "{\"tools\":["
    "{\"name\":\"count_vowels\",\"description\":\"Count the vowels (aeiouAEIOU) of a text.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
    "\"required\":[\"text\"]}},"
    "{\"name\":\"reverse\",\"description\":\"Reverse a text (by Unicode code point).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
    "\"required\":[\"text\"]}}"
    "]}";

PDK_EXPORT(describe) {
    pdk_output_set(describe_json, sizeof describe_json - 1);
    return 0;
}

/* Output an MCP tool result holding one text item. */
static int32_t result(const char *text, size_t len, bool is_error) {
    const char *fmt = is_error ? "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"isError\":true}"
                               : "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"isError\":false}";
    return pdk_output_json_with(fmt, text, len) ? 0 : pdk_error_set("call: out of memory");
}

static int32_t tool_error(const char *message) {
    return result(message, strlen(message), true);
}

static size_t utf8_length(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static int32_t reverse(const char *text, size_t len) {
    char *out = malloc(len + 1);
    if (!out) return pdk_error_set("call: out of memory");
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_length((unsigned char)text[i]);
        if (n > len - i) n = len - i;
        memcpy(out + len - i - n, text + i, n);
        i += n;
    }
    int32_t rc = result(out, len, false);
    free(out);
    return rc;
}

static int32_t count_vowels(const char *text, size_t len) {
    unsigned long count = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] && strchr("aeiouAEIOU", text[i])) count++;
    char out[32];
    int n = snprintf(out, sizeof out, "%lu", count);
    return result(out, (size_t)n, false);
}

PDK_EXPORT(call) {
    size_t len;
    char *input = (char *)pdk_input(&len);
    if (!input) return pdk_error_set("call: out of memory");
    pdk_json req;
    int32_t rc;
    if (!pdk_json_parse(input, len, &req) || pdk_json_kind(req) != '{') {
        free(input);
        return pdk_error_set("call: expected a JSON object {\"params\": {\"name\", \"arguments\"}}");
    }
    pdk_json params = pdk_json_get(req, "params");
    char *name = pdk_json_string(pdk_json_get(params, "name"), NULL);
    pdk_json args = pdk_json_get(params, "arguments");
    size_t text_len = 0;
    char *text = pdk_json_string(pdk_json_get(args, "text"), &text_len);
    if (!name)
        rc = pdk_error_set("call: params.name must be a string");
    else if (strcmp(name, "count_vowels") != 0 && strcmp(name, "reverse") != 0)
        rc = tool_error("unknown tool (this servlet has count_vowels and reverse)");
    else if (!text)
        rc = tool_error("arguments.text must be a string");
    else if (!strcmp(name, "reverse"))
        rc = reverse(text, text_len);
    else
        rc = count_vowels(text, text_len);
    free(text);
    free(name);
    free(input);
    return rc;
}
