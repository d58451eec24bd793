/*
 * http_fetch.c — an example plugin (pdk/airlock_pdk.h): the function `fetch`
 * takes a URL as its input, GETs it through the host's http_request and
 * outputs the response body; the status goes to an info log line
 * ("fetch: GET URL -> 200"). A status of 400 or more is a plugin error.
 *
 * The host answers only for the hosts it was told to allow (manifest
 * "allowed_hosts", `--allow-host`) and never connects to loopback, private or
 * metadata addresses unless granted (`--allow-ip`): without them the call
 * fails with the host's reason.
 */
#include "airlock_pdk.h"

PDK_EXPORT(fetch) {
    size_t len;
    char *url = (char *)pdk_input(&len);
    if (!url) return pdk_error_set("fetch: out of memory");
    if (len == 0 || strlen(url) != len) {
        free(url);
        return pdk_error_set("fetch: the input must be a URL");
    }
    char *quoted = pdk_json_quote(url, len);
    size_t cap = (quoted ? strlen(quoted) : 0) + 64;
    char *req = malloc(cap);
    if (!quoted || !req) {
        free(quoted);
        free(req);
        free(url);
        return pdk_error_set("fetch: out of memory");
    }
    snprintf(req, cap, "{\"url\":%s,\"method\":\"GET\"}", quoted);
    uint8_t *body = NULL;
    size_t body_len = 0;
    int32_t status = pdk_http_request(req, NULL, 0, &body, &body_len);
    pdk_logf(PDK_LOG_INFO, "fetch: GET %.900s -> %d", url, (int)status);
    int32_t rc = 0;
    if (status <= 0)
        rc = pdk_errorf("fetch: %.900s: no response", url);
    else if (status >= 400)
        rc = pdk_errorf("fetch: %.900s: HTTP status %d", url, (int)status);
    else
        pdk_output_set(body ? body : (const uint8_t *)"", body_len);
    free(body);
    free(req);
    free(quoted);
    free(url);
    return rc;
}
