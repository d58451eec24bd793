/*
 * airlock_pdk.h — a tiny, header-only plugin development kit for writing
 * Extism-compatible plugins in C (wasm32), to be run by `airlock plugin call`,
 * al_plugin_call, or any Extism host.
 *
 * BUILDING A PLUGIN (Debian: clang-14, lld-14, wasi-libc):
 *
 *   clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -I pdk -c -o count_vowels.o count_vowels.c
 *   clang-14 --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor \
 *       -Wl,--strip-debug -o count_vowels.wasm count_vowels.o
 *
 * (examples/plugins/build.sh OUT_DIR [FILE.c...] does exactly this.)
 * -mexec-model=reactor links wasi-libc's reactor start file: no main(), an
 * exported _initialize that runs constructors (the host calls it once after
 * instantiation), and every function marked with PDK_EXPORT is exported.
 * One `clang-14 -O2 ... -o x.wasm x.c` works too, but an optimised link runs
 * binaryen's wasm-opt when it is installed, which drops the name section
 * (traps then name no function). libc (malloc, string functions, snprintf)
 * works; it imports WASI functions only for what the plugin uses (snprintf
 * pulls in fd_write, fd_seek and fd_close, which a plugin host provides).
 *
 * THE CALLING CONVENTION (Extism's):
 *   - a callable function is an export with no parameters returning i32:
 *       PDK_EXPORT(greet) { ... return 0; }
 *     0 is success; anything else is failure. An error set with
 *     pdk_error_set() wins over the return code (the call fails with that
 *     message even if the function returns 0);
 *   - the host sets the input bytes before the call; the plugin reads them
 *     (pdk_input), and sets its output (pdk_output_set) and/or an error;
 *   - the plugin's data travels through host memory: "handles" (u64 offsets
 *     into a buffer the host owns, 0 = none) allocated with pdk_env_alloc,
 *     filled with store_u8/store_u64, read with load_u8/load_u64. The plugin
 *     never sees a host pointer, and the host checks every handle, length and
 *     offset it is given;
 *   - config (read-only, from the manifest or --config K=V), vars (per
 *     instance key/value storage that survives between calls) and logs go
 *     through the same handles;
 *   - HTTP: pdk_http_request sends a JSON request {"url": ..., "method": ...,
 *     "headers": {...}} and a body; the host answers only for hosts it was
 *     told to allow (manifest "allowed_hosts", --allow-host).
 *
 * All helpers are static inline and need libc (malloc). Functions returning
 * a malloc'ed buffer NUL-terminate it for convenience (the length excludes
 * the NUL); the caller frees it. They return NULL (or false, or 0) when
 * memory runs out rather than abort: a plugin decides what a failure means.
 * The JSON helpers at the end (pdk_json_*) read and quote JSON without a
 * library, for plugins that speak it.
 */
#ifndef AIRLOCK_PDK_H
#define AIRLOCK_PDK_H

#ifndef __wasm__
#error "airlock_pdk.h is for wasm32 plugins: compile with clang --target=wasm32-wasi (see the top of this file)"
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A block of host memory: an offset the host gave out; 0 is "none". */
typedef uint64_t pdk_handle;

/* ---- the raw imports of "extism:host/env" (Extism's signatures) ----------------- */

#define PDK_IMPORT(name) __attribute__((import_module("extism:host/env"), import_name(name)))

/* memory */
PDK_IMPORT("alloc") extern pdk_handle pdk_env_alloc(uint64_t length);
PDK_IMPORT("free") extern void pdk_env_free(pdk_handle handle);
PDK_IMPORT("length") extern uint64_t pdk_env_length(pdk_handle handle);          /* 0: not a block */
PDK_IMPORT("length_unsafe") extern uint64_t pdk_env_length_unsafe(pdk_handle handle);
PDK_IMPORT("load_u8") extern uint8_t pdk_env_load_u8(pdk_handle offset);
PDK_IMPORT("load_u64") extern uint64_t pdk_env_load_u64(pdk_handle offset);
PDK_IMPORT("store_u8") extern void pdk_env_store_u8(pdk_handle offset, uint8_t value);
PDK_IMPORT("store_u64") extern void pdk_env_store_u64(pdk_handle offset, uint64_t value);
PDK_IMPORT("memory_bytes") extern uint64_t pdk_env_memory_bytes(void);
PDK_IMPORT("reset") extern void pdk_env_reset(void);
/* input and output */
PDK_IMPORT("input_length") extern uint64_t pdk_env_input_length(void);
PDK_IMPORT("input_offset") extern pdk_handle pdk_env_input_offset(void);
PDK_IMPORT("input_load_u8") extern uint8_t pdk_env_input_load_u8(uint64_t offset);
PDK_IMPORT("input_load_u64") extern uint64_t pdk_env_input_load_u64(uint64_t offset);
PDK_IMPORT("input_set") extern void pdk_env_input_set(pdk_handle handle, uint64_t length);
PDK_IMPORT("output_set") extern void pdk_env_output_set(pdk_handle handle, uint64_t length);
PDK_IMPORT("output_length") extern uint64_t pdk_env_output_length(void);
PDK_IMPORT("output_offset") extern pdk_handle pdk_env_output_offset(void);
PDK_IMPORT("error_set") extern void pdk_env_error_set(pdk_handle handle);
PDK_IMPORT("error_get") extern pdk_handle pdk_env_error_get(void);
/* config and vars: key handle in, value handle out (0: not set) */
PDK_IMPORT("config_get") extern pdk_handle pdk_env_config_get(pdk_handle key);
PDK_IMPORT("var_get") extern pdk_handle pdk_env_var_get(pdk_handle key);
PDK_IMPORT("var_set") extern void pdk_env_var_set(pdk_handle key, pdk_handle value);
/* HTTP: request JSON handle, body handle (0: none); response body handle */
PDK_IMPORT("http_request") extern pdk_handle pdk_env_http_request(pdk_handle request,
                                                                  pdk_handle body);
PDK_IMPORT("http_status_code") extern int32_t pdk_env_http_status_code(void);
PDK_IMPORT("http_headers") extern pdk_handle pdk_env_http_headers(void);
/* logs: one message handle each */
PDK_IMPORT("log_trace") extern void pdk_env_log_trace(pdk_handle message);
PDK_IMPORT("log_debug") extern void pdk_env_log_debug(pdk_handle message);
PDK_IMPORT("log_info") extern void pdk_env_log_info(pdk_handle message);
PDK_IMPORT("log_warn") extern void pdk_env_log_warn(pdk_handle message);
PDK_IMPORT("log_error") extern void pdk_env_log_error(pdk_handle message);
PDK_IMPORT("get_log_level") extern int32_t pdk_env_get_log_level(void);

/* ---- exporting a function ---------------------------------------------------------- */

/* PDK_EXPORT(name) { ...; return 0; } defines `int32_t name(void)` and exports
 * it under its own name. */
#define PDK_EXPORT(name) \
    __attribute__((export_name(#name))) int32_t name(void); \
    __attribute__((export_name(#name))) int32_t name(void)

/* ---- copying between plugin memory and host blocks ---------------------------------- */

/* Copy n bytes from host memory at offset (a handle plus a position in its
 * block) into dst: 8 bytes per call. Every call crosses into the host, so a
 * tail of 1 to 7 bytes is one more 8-byte load of the range's last 8 bytes
 * (overlapping bytes already copied, never reaching outside the range);
 * only a range shorter than 8 bytes goes byte by byte. */
static inline void pdk_load(pdk_handle offset, void *dst, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = pdk_env_load_u64(offset + i);
        memcpy(d + i, &v, 8);
    }
    if (i < n && n >= 8) {
        uint64_t v = pdk_env_load_u64(offset + n - 8);
        memcpy(d + n - 8, &v, 8);
        return;
    }
    for (; i < n; i++) d[i] = pdk_env_load_u8(offset + i);
}

/* The other way, with the same overlapping tail (it rewrites bytes with the
 * values they already hold). */
static inline void pdk_store(pdk_handle offset, const void *src, size_t n) {
    const uint8_t *s = (const uint8_t *)src;
    size_t i = 0;
    uint64_t v;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, s + i, 8);
        pdk_env_store_u64(offset + i, v);
    }
    if (i < n && n >= 8) {
        memcpy(&v, s + n - 8, 8);
        pdk_env_store_u64(offset + n - 8, v);
        return;
    }
    for (; i < n; i++) pdk_env_store_u8(offset + i, s[i]);
}

/* A new host block holding a copy of src (0 when the host refuses it). */
static inline pdk_handle pdk_alloc_copy(const void *src, size_t n) {
    pdk_handle h = pdk_env_alloc(n);
    if (h && n) pdk_store(h, src, n);
    return h;
}

/* The contents of a host block, malloc'ed and NUL-terminated; NULL for
 * handle 0 or when memory runs out. *len (may be NULL) gets the length. */
static inline uint8_t *pdk_read_block(pdk_handle h, size_t *len) {
    if (len) *len = 0;
    if (!h) return NULL;
    uint64_t n = pdk_env_length(h);
    if (n >= SIZE_MAX) return NULL;
    uint8_t *buf = (uint8_t *)malloc((size_t)n + 1);
    if (!buf) return NULL;
    pdk_load(h, buf, (size_t)n);
    buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

/* ---- input and output --------------------------------------------------------------- */

/* The whole input, malloc'ed and NUL-terminated (NULL only when memory runs
 * out; an empty input is an empty string). */
static inline uint8_t *pdk_input(size_t *len) {
    uint64_t n = pdk_env_input_length();
    if (len) *len = 0;
    if (n >= SIZE_MAX) return NULL;
    uint8_t *buf = (uint8_t *)malloc((size_t)n + 1);
    if (!buf) return NULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = pdk_env_input_load_u64(i);
        memcpy(buf + i, &v, 8);
    }
    if (i < n && n >= 8) { /* the tail: one overlapping load, as pdk_load */
        uint64_t v = pdk_env_input_load_u64(n - 8);
        memcpy(buf + n - 8, &v, 8);
        i = n;
    }
    for (; i < n; i++) buf[i] = pdk_env_input_load_u8(i);
    buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

/* Set the output to a copy of data. False when the host refused the block. */
static inline bool pdk_output_set(const void *data, size_t len) {
    pdk_handle h = pdk_alloc_copy(data, len);
    if (!h && len) return false;
    pdk_env_output_set(h, len);
    return true;
}

static inline bool pdk_output_str(const char *s) {
    return pdk_output_set(s, strlen(s));
}

/* Output fmt with one "%s" replaced by text[0..len) as a JSON string
 * ("{\"result\":%s}"): the quote-and-wrap every JSON-answering plugin
 * needs. false when out of memory or the host refuses the block. */
static inline bool pdk_output_json_with(const char *fmt, const char *text, size_t len);

/* Set the call's error; returns 1 so a function can `return pdk_error_set(..)`. */
static inline int32_t pdk_error_set(const char *message) {
    pdk_env_error_set(pdk_alloc_copy(message, strlen(message)));
    return 1;
}

/* printf-style error, at most 1 KiB. */
static inline int32_t pdk_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int32_t pdk_errorf(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return pdk_error_set(buf);
}

/* ---- config --------------------------------------------------------------------------- */

/* Copy config value `key` into buf (NUL-terminated). Returns its length, or
 * -1 when the key is not set or the value does not fit in cap - 1 bytes. */
static inline long pdk_config_get(const char *key, char *buf, size_t cap) {
    pdk_handle k = pdk_alloc_copy(key, strlen(key));
    pdk_handle v = pdk_env_config_get(k);
    pdk_env_free(k);
    if (!v) return -1;
    uint64_t n = pdk_env_length(v);
    if (cap == 0 || n > cap - 1) {
        pdk_env_free(v);
        return -1;
    }
    pdk_load(v, buf, (size_t)n);
    buf[n] = '\0';
    pdk_env_free(v);
    return (long)n;
}

/* The value of config `key`, malloc'ed and NUL-terminated; NULL when not set. */
static inline char *pdk_config_dup(const char *key, size_t *len) {
    pdk_handle k = pdk_alloc_copy(key, strlen(key));
    pdk_handle v = pdk_env_config_get(k);
    pdk_env_free(k);
    char *s = (char *)pdk_read_block(v, len);
    if (v) pdk_env_free(v);
    return s;
}

/* ---- vars: per-instance storage that outlives a call ---------------------------------- */

/* The value of var `key`, malloc'ed and NUL-terminated; NULL when not set. */
static inline uint8_t *pdk_var_get(const char *key, size_t *len) {
    pdk_handle k = pdk_alloc_copy(key, strlen(key));
    pdk_handle v = pdk_env_var_get(k);
    pdk_env_free(k);
    uint8_t *s = pdk_read_block(v, len);
    if (v) pdk_env_free(v);
    return s;
}

/* Set var `key` to a copy of data (the host may refuse it past its var budget). */
static inline void pdk_var_set(const char *key, const void *data, size_t len) {
    pdk_handle k = pdk_alloc_copy(key, strlen(key));
    pdk_handle v = pdk_alloc_copy(data, len);
    pdk_env_var_set(k, v);
    pdk_env_free(k);
    if (v) pdk_env_free(v);
}

/* Remove var `key` (a value handle of 0). */
static inline void pdk_var_remove(const char *key) {
    pdk_handle k = pdk_alloc_copy(key, strlen(key));
    pdk_env_var_set(k, 0);
    pdk_env_free(k);
}

/* A var holding a little-endian u64 (0 when not set or not 8 bytes). */
static inline uint64_t pdk_var_get_u64(const char *key) {
    size_t n;
    uint8_t *v = pdk_var_get(key, &n);
    uint64_t x = 0;
    if (v && n == 8) memcpy(&x, v, 8);
    free(v);
    return x;
}

static inline void pdk_var_set_u64(const char *key, uint64_t value) {
    pdk_var_set(key, &value, sizeof value);
}

/* ---- logs --------------------------------------------------------------------------------- */

typedef enum pdk_log_level {
    PDK_LOG_TRACE = 0,
    PDK_LOG_DEBUG,
    PDK_LOG_INFO,
    PDK_LOG_WARN,
    PDK_LOG_ERROR,
} pdk_log_level;

static inline void pdk_log(pdk_log_level level, const char *message) {
    pdk_handle h = pdk_alloc_copy(message, strlen(message));
    switch (level) {
    case PDK_LOG_TRACE: pdk_env_log_trace(h); break;
    case PDK_LOG_DEBUG: pdk_env_log_debug(h); break;
    case PDK_LOG_INFO: pdk_env_log_info(h); break;
    case PDK_LOG_WARN: pdk_env_log_warn(h); break;
    case PDK_LOG_ERROR: pdk_env_log_error(h); break;
    }
    pdk_env_free(h);
}

/* printf-style log line, at most 1 KiB. */
static inline void pdk_logf(pdk_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void pdk_logf(pdk_log_level level, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pdk_log(level, buf);
}

#define pdk_log_trace(msg) pdk_log(PDK_LOG_TRACE, (msg))
#define pdk_log_debug(msg) pdk_log(PDK_LOG_DEBUG, (msg))
#define pdk_log_info(msg) pdk_log(PDK_LOG_INFO, (msg))
#define pdk_log_warn(msg) pdk_log(PDK_LOG_WARN, (msg))
#define pdk_log_error(msg) pdk_log(PDK_LOG_ERROR, (msg))

/* ---- HTTP ------------------------------------------------------------------------------------ */

/* Send request_json ({"url": "https://...", "method": "GET", "headers":
 * {"K": "V"}}) with body (NULL/0: none). Returns the HTTP status (0 when no
 * response came back) and the response body, malloc'ed and NUL-terminated, in
 * *response (NULL when there is none); the caller frees it. A host that
 * refuses the request (host not allowed) fails the call. */
static inline int32_t pdk_http_request(const char *request_json, const void *body,
                                       size_t body_len, uint8_t **response,
                                       size_t *response_len) {
    pdk_handle req = pdk_alloc_copy(request_json, strlen(request_json));
    pdk_handle b = body_len ? pdk_alloc_copy(body, body_len) : 0;
    pdk_handle r = pdk_env_http_request(req, b);
    int32_t status = pdk_env_http_status_code();
    pdk_env_free(req);
    if (b) pdk_env_free(b);
    uint8_t *data = pdk_read_block(r, response_len);
    if (r) pdk_env_free(r);
    if (response)
        *response = data;
    else
        free(data);
    return status;
}

/* ---- a minimal JSON reader and writer ------------------------------------------------- */
/* Plugins speak JSON more often than not. These helpers read a document
 * without building a tree: a pdk_json is a span of the text holding one
 * value; pdk_json_parse checks the whole document (strict RFC 8259 syntax,
 * nesting at most PDK_JSON_MAX_DEPTH) and later calls look inside it. */

#define PDK_JSON_MAX_DEPTH 64

typedef struct pdk_json {
    const char *p; /* the value's first byte; NULL: no value */
    size_t n;      /* its length */
} pdk_json;

static inline size_t pdk_json__ws(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

static inline int pdk_json__hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The code point of \uXXXX at s[i] (i at the 'u'), or -1. */
static inline long pdk_json__u4(const char *s, size_t n, size_t i) {
    if (i + 4 >= n) return -1;
    long v = 0;
    for (size_t k = 1; k <= 4; k++) {
        int h = pdk_json__hex(s[i + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Skip a string starting at s[*i] == '"'; with out != NULL also append its
 * decoded bytes there (out must hold the string's length in bytes). */
static inline bool pdk_json__string(const char *s, size_t n, size_t *i, char *out,
                                    size_t *out_len) {
    size_t j = *i + 1, o = 0;
    while (j < n && s[j] != '"') {
        unsigned char c = (unsigned char)s[j];
        if (c < 0x20) return false;
        if (c != '\\') {
            if (out) out[o] = (char)c;
            o++;
            j++;
            continue;
        }
        if (++j >= n) return false;
        char e = s[j];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out) out[o] = decoded[simple - "\"\\/bfnrt"];
            o++;
            j++;
            continue;
        }
        if (e != 'u') return false;
        long cp = pdk_json__u4(s, n, j);
        if (cp < 0) return false;
        j += 5;
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate needs its low half */
            if (j + 1 >= n || s[j] != '\\' || s[j + 1] != 'u') return false;
            long lo = pdk_json__u4(s, n, j + 1);
            if (lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
        }
        uint8_t u[4];
        size_t un;
        if (cp < 0x80) {
            u[0] = (uint8_t)cp;
            un = 1;
        } else if (cp < 0x800) {
            u[0] = (uint8_t)(0xC0 | cp >> 6);
            u[1] = (uint8_t)(0x80 | (cp & 0x3F));
            un = 2;
        } else if (cp < 0x10000) {
            u[0] = (uint8_t)(0xE0 | cp >> 12);
            u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            u[2] = (uint8_t)(0x80 | (cp & 0x3F));
            un = 3;
        } else {
            u[0] = (uint8_t)(0xF0 | cp >> 18);
            u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
            u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            u[3] = (uint8_t)(0x80 | (cp & 0x3F));
            un = 4;
        }
        if (out) memcpy(out + o, u, un);
        o += un;
    }
    if (j >= n) return false;
    *i = j + 1;
    if (out_len) *out_len = o;
    return true;
}

static inline bool pdk_json__number(const char *s, size_t n, size_t *i) {
    size_t j = *i;
    if (j < n && s[j] == '-') j++;
    if (j >= n || s[j] < '0' || s[j] > '9') return false;
    if (s[j] == '0')
        j++;
    else
        while (j < n && s[j] >= '0' && s[j] <= '9') j++;
    if (j < n && s[j] == '.') {
        if (++j >= n || s[j] < '0' || s[j] > '9') return false;
        while (j < n && s[j] >= '0' && s[j] <= '9') j++;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        if (j >= n || s[j] < '0' || s[j] > '9') return false;
        while (j < n && s[j] >= '0' && s[j] <= '9') j++;
    }
    *i = j;
    return true;
}

/* Skip one value at s[*i] (no leading whitespace), checking its syntax. */
static inline bool pdk_json__skip(const char *s, size_t n, size_t *i, int depth) {
    if (*i >= n || depth > PDK_JSON_MAX_DEPTH) return false;
    char c = s[*i];
    if (c == '"') return pdk_json__string(s, n, i, NULL, NULL);
    if (c == '-' || (c >= '0' && c <= '9')) return pdk_json__number(s, n, i);
    static const char *const words[] = {"true", "false", "null"};
    for (size_t k = 0; k < 3; k++) {
        size_t wl = strlen(words[k]);
        if (n - *i >= wl && memcmp(s + *i, words[k], wl) == 0) {
            *i += wl;
            return true;
        }
    }
    if (c != '{' && c != '[') return false;
    char close = c == '{' ? '}' : ']';
    size_t j = pdk_json__ws(s, n, *i + 1);
    if (j < n && s[j] == close) {
        *i = j + 1;
        return true;
    }
    for (;;) {
        if (c == '{') {
            if (j >= n || s[j] != '"' || !pdk_json__string(s, n, &j, NULL, NULL)) return false;
            j = pdk_json__ws(s, n, j);
            if (j >= n || s[j] != ':') return false;
            j = pdk_json__ws(s, n, j + 1);
        }
        if (!pdk_json__skip(s, n, &j, depth + 1)) return false;
        j = pdk_json__ws(s, n, j);
        if (j < n && s[j] == ',') {
            j = pdk_json__ws(s, n, j + 1);
            continue;
        }
        if (j < n && s[j] == close) {
            *i = j + 1;
            return true;
        }
        return false;
    }
}

/* Is text[0..len) exactly one JSON value (whitespace around it allowed)?
 * On success *out spans the value. */
static inline bool pdk_json_parse(const char *text, size_t len, pdk_json *out) {
    size_t i = pdk_json__ws(text, len, 0), start = i;
    if (!pdk_json__skip(text, len, &i, 0)) return false;
    if (pdk_json__ws(text, len, i) != len) return false;
    out->p = text + start;
    out->n = i - start;
    return true;
}

/* The kind of a value: '{', '[', '"', 'n' (number), 't', 'f', 'z' (null), or
 * 0 for no value. */
static inline char pdk_json_kind(pdk_json v) {
    if (!v.p || !v.n) return 0;
    char c = v.p[0];
    if (c == '-' || (c >= '0' && c <= '9')) return 'n';
    if (c == 'n') return 'z';
    return c;
}

/* A string value decoded, malloc'ed and NUL-terminated (it may hold NUL
 * bytes: use *len). NULL when v is not a string. */
static inline char *pdk_json_string(pdk_json v, size_t *len) {
    if (pdk_json_kind(v) != '"') return NULL;
    char *out = (char *)malloc(v.n + 1);
    size_t i = 0, n = 0;
    if (!out || !pdk_json__string(v.p, v.n, &i, out, &n)) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    if (len) *len = n;
    return out;
}

/* An integer value (no fraction, no exponent) in int64_t range. */
static inline bool pdk_json_int(pdk_json v, int64_t *out) {
    if (pdk_json_kind(v) != 'n') return false;
    size_t i = v.p[0] == '-' ? 1 : 0;
    uint64_t mag = 0, limit = v.p[0] == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < v.n; i++) {
        char c = v.p[i];
        if (c < '0' || c > '9') return false;
        if (mag > (limit - (uint64_t)(c - '0')) / 10) return false;
        mag = mag * 10 + (uint64_t)(c - '0');
    }
    *out = v.p[0] == '-' ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
}

/* The next element of an array (or member value of an object, with its key
 * in *key when key != NULL) of a document checked by pdk_json_parse. *pos
 * starts at 0. False at the end. */
static inline bool pdk_json_next(pdk_json container, size_t *pos, pdk_json *key, pdk_json *value) {
    const char *s = container.p;
    size_t n = container.n, j = *pos ? *pos : 1;
    char kind = pdk_json_kind(container);
    if (kind != '{' && kind != '[') return false;
    j = pdk_json__ws(s, n, j);
    if (j < n && s[j] == ',') j = pdk_json__ws(s, n, j + 1);
    if (j >= n || s[j] == '}' || s[j] == ']') return false;
    if (kind == '{') {
        size_t k = j;
        if (!pdk_json__string(s, n, &j, NULL, NULL)) return false;
        if (key) {
            key->p = s + k;
            key->n = j - k;
        }
        j = pdk_json__ws(s, n, j);
        if (j >= n || s[j] != ':') return false;
        j = pdk_json__ws(s, n, j + 1);
    }
    size_t start = j;
    if (!pdk_json__skip(s, n, &j, 1)) return false;
    value->p = s + start;
    value->n = j - start;
    *pos = j;
    return true;
}

/* The value of member `name` of an object ({0} when absent or not an object). */
static inline pdk_json pdk_json_get(pdk_json object, const char *name) {
    pdk_json key, value, none = {NULL, 0};
    size_t pos = 0;
    if (pdk_json_kind(object) != '{') return none;
    while (pdk_json_next(object, &pos, &key, &value)) {
        size_t kn;
        char *k = pdk_json_string(key, &kn);
        bool match = k && kn == strlen(name) && memcmp(k, name, kn) == 0;
        free(k);
        if (match) return value;
    }
    return none;
}

/* data as a JSON string literal (quotes included), malloc'ed and
 * NUL-terminated. Bytes >= 0x80 are copied as they are (UTF-8 in, UTF-8 out);
 * control characters are escaped. */
static inline char *pdk_json_quote(const void *data, size_t len) {
    const uint8_t *s = (const uint8_t *)data;
    if (len > (SIZE_MAX - 3) / 6) return NULL;
    char *out = (char *)malloc(len * 6 + 3), *o = out;
    if (!out) return NULL;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (c == '\t') {
            *o++ = '\\';
            *o++ = 't';
        } else if (c == '\r') {
            *o++ = '\\';
            *o++ = 'r';
        } else if (c < 0x20 || c == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            memcpy(o, "\\u00", 4);
            o[4] = hex[c >> 4];
            o[5] = hex[c & 15];
            o += 6;
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static inline bool pdk_output_json_with(const char *fmt, const char *text, size_t len) {
    char *quoted = pdk_json_quote(text, len);
    if (!quoted) return false;
    size_t cap = strlen(fmt) + strlen(quoted) + 1;
    char *out = (char *)malloc(cap);
    int n = out ? snprintf(out, cap, fmt, quoted) : -1;
    bool ok = n >= 0 && pdk_output_set(out, (size_t)n);
    free(out);
    free(quoted);
    return ok;
}

#ifdef __cplusplus
}
#endif
#endif
