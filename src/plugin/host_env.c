/*
 * host_env.c — the "extism:host/env" host functions a plugin imports, with
 * the signatures of Extism's runtime and PDKs (go-pdk env.go, c-pdk
 * extism-pdk.h, runtime pdk.rs and kernel): handles and lengths are i64,
 * load_u8/input_load_u8 return i32, store_u8 takes (i64, i32),
 * http_status_code and get_log_level return i32.
 *
 * Behaviour where airlock is stricter than Extism's kernel (which returns 0
 * or ignores the call): a load, store, input_set or output_set outside the
 * kernel's bounds, and a key/message/value/error handle that is not an
 * allocated block, trap the plugin with a message naming the function and
 * the value (AL_TRAP_HOST; the call ends with status TRAP). free of a
 * non-handle is ignored and length of one is 0, as in Extism. alloc failing
 * (0 bytes, over max_output_bytes, over the memory budget) returns 0, as in
 * Extism.
 *
 * Invariants:
 *  - every guest value is checked with kernel_in_range / kernel_length
 *    before p->kernel.mem is indexed with it; no pointer into mem is kept
 *    across a kernel allocation (mem may move when it grows);
 *  - the hot functions (load/store/input_load) allocate nothing and make no
 *    call but a bounds check and a copy;
 *  - host_defs is sorted by name (memcmp order) for plugin_host_lookup.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

#define HOST_FN(name) \
    static al_trap_kind name(void *env, al_caller *caller, const al_value *args, al_value *res)
#define ARG_U64(i) ((uint64_t)args[(i)].of.i64)
#define RET_I64(v) (res[0].type = AL_I64, res[0].of.i64 = (int64_t)(v))
#define RET_I32(v) (res[0].type = AL_I32, res[0].of.i32 = (int32_t)(v))

void plugin_scrub(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

al_trap_kind plugin_trap(al_plugin *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->trap_msg, sizeof p->trap_msg, fmt, ap);
    va_end(ap);
    plugin_scrub(p->trap_msg);
    return AL_TRAP_HOST;
}

void plugin_log(al_plugin *p, int level, const uint8_t *msg, size_t len) {
    if (!p->set.on_log || level < p->set.log_level) return;
    /* The callback gets a NUL-terminated copy: an embedder printing it with
     * %s must not read past the plugin's bytes. */
    char small[512];
    char *copy = len < sizeof small ? small : malloc(len + 1);
    if (!copy) return; /* dropping a log line beats failing the call */
    if (len) memcpy(copy, msg, len);
    copy[len] = '\0';
    p->set.on_log(p->set.on_log_ctx, level, copy, len);
    if (copy != small) free(copy);
}

/* The bytes of the block at handle h, or a trap naming what it was for. */
static al_trap_kind block_bytes(al_plugin *p, const char *fn, const char *what, uint64_t h,
                                uint64_t *off, uint64_t *len) {
    *off = *len = 0;
    uint64_t n = kernel_length(&p->kernel, h);
    if (n == 0)
        return plugin_trap(p, "%s: %s handle %llu is not an allocated block", fn, what,
                           (unsigned long long)h);
    *off = h;
    *len = n;
    return AL_TRAP_NONE;
}

static al_trap_kind out_of_range(al_plugin *p, const char *fn, uint64_t addr, uint64_t n) {
    return plugin_trap(p,
                       "%s: %llu bytes at address %llu are outside the plugin's memory "
                       "(valid: %u to %llu)",
                       fn, (unsigned long long)n, (unsigned long long)addr, KERNEL_BASE,
                       (unsigned long long)p->kernel.top);
}

/* The getters return one value of the plugin's state: nothing to check. */
static plugin_kernel *kernel_of(void *env) { return &((al_plugin *)env)->kernel; }

static al_trap_kind ret_i64(al_value *res, uint64_t v) {
    RET_I64(v);
    return AL_TRAP_NONE;
}

static al_trap_kind ret_i32(al_value *res, int32_t v) {
    RET_I32(v);
    return AL_TRAP_NONE;
}

/* ---- memory -------------------------------------------------------------------------- */

HOST_FN(h_alloc) { return ret_i64(res, kernel_alloc_guest(kernel_of(env), ARG_U64(0))); }

HOST_FN(h_free) {
    kernel_free_block(kernel_of(env), ARG_U64(0));
    return AL_TRAP_NONE;
}

HOST_FN(h_length) { return ret_i64(res, kernel_length(kernel_of(env), ARG_U64(0))); }

HOST_FN(h_load_u8) {
    al_plugin *p = env;
    uint64_t a = ARG_U64(0);
    if (!kernel_in_range(&p->kernel, a, 1)) return out_of_range(p, "load_u8", a, 1);
    RET_I32(p->kernel.mem[a]);
    return AL_TRAP_NONE;
}

HOST_FN(h_load_u64) {
    al_plugin *p = env;
    uint64_t a = ARG_U64(0), v;
    if (!kernel_in_range(&p->kernel, a, 8)) return out_of_range(p, "load_u64", a, 8);
    memcpy(&v, p->kernel.mem + a, 8); /* little-endian host, as wasm */
    RET_I64(v);
    return AL_TRAP_NONE;
}

HOST_FN(h_store_u8) {
    al_plugin *p = env;
    uint64_t a = ARG_U64(0);
    if (!kernel_in_range(&p->kernel, a, 1)) return out_of_range(p, "store_u8", a, 1);
    p->kernel.mem[a] = (uint8_t)args[1].of.i32;
    return AL_TRAP_NONE;
}

HOST_FN(h_store_u64) {
    al_plugin *p = env;
    uint64_t a = ARG_U64(0), v = ARG_U64(1);
    if (!kernel_in_range(&p->kernel, a, 8)) return out_of_range(p, "store_u64", a, 8);
    memcpy(p->kernel.mem + a, &v, 8);
    return AL_TRAP_NONE;
}

HOST_FN(h_reset) {
    kernel_reset(kernel_of(env));
    return AL_TRAP_NONE;
}

HOST_FN(h_memory_bytes) { return ret_i64(res, kernel_memory_bytes(kernel_of(env))); }

/* ---- input / output / error ------------------------------------------------------------ */

HOST_FN(h_input_length) { return ret_i64(res, kernel_of(env)->input_len); }
HOST_FN(h_input_offset) { return ret_i64(res, kernel_of(env)->input_off); }

HOST_FN(h_input_load_u8) {
    al_plugin *p = env;
    uint64_t o = ARG_U64(0);
    if (o >= p->kernel.input_len)
        return plugin_trap(p, "input_load_u8: offset %llu is past the input's %llu bytes",
                           (unsigned long long)o, (unsigned long long)p->kernel.input_len);
    RET_I32(p->kernel.mem[p->kernel.input_off + o]);
    return AL_TRAP_NONE;
}

HOST_FN(h_input_load_u64) {
    al_plugin *p = env;
    uint64_t o = ARG_U64(0), v;
    if (p->kernel.input_len < 8 || o > p->kernel.input_len - 8)
        return plugin_trap(p, "input_load_u64: 8 bytes at offset %llu are past the input's %llu bytes",
                           (unsigned long long)o, (unsigned long long)p->kernel.input_len);
    memcpy(&v, p->kernel.mem + p->kernel.input_off + o, 8);
    RET_I64(v);
    return AL_TRAP_NONE;
}

/* input_set / output_set: n bytes at a become *off / *len (0 bytes: none).
 * Any range inside the kernel is allowed (Extism: it need not be a whole
 * block); the output's length is checked against max_output_bytes when the
 * call ends, before a byte of it is copied. */
static al_trap_kind set_range(al_plugin *p, const char *fn, uint64_t a, uint64_t n,
                              uint64_t *off, uint64_t *len) {
    if (n == 0) {
        *off = *len = 0;
        return AL_TRAP_NONE;
    }
    if (!kernel_in_range(&p->kernel, a, n)) return out_of_range(p, fn, a, n);
    *off = a;
    *len = n;
    return AL_TRAP_NONE;
}

HOST_FN(h_input_set) {
    al_plugin *p = env;
    return set_range(p, "input_set", ARG_U64(0), ARG_U64(1), &p->kernel.input_off,
                     &p->kernel.input_len);
}

HOST_FN(h_output_set) {
    al_plugin *p = env;
    return set_range(p, "output_set", ARG_U64(0), ARG_U64(1), &p->kernel.output_off,
                     &p->kernel.output_len);
}

HOST_FN(h_output_length) { return ret_i64(res, kernel_of(env)->output_len); }
HOST_FN(h_output_offset) { return ret_i64(res, kernel_of(env)->output_off); }

HOST_FN(h_error_set) {
    al_plugin *p = env;
    uint64_t h = ARG_U64(0), off, len;
    if (h == 0) { /* Extism: 0 clears the error */
        p->kernel.error_off = p->kernel.error_len = 0;
        return AL_TRAP_NONE;
    }
    al_trap_kind t = block_bytes(p, "error_set", "error", h, &off, &len);
    if (t != AL_TRAP_NONE) return t;
    p->kernel.error_off = off;
    p->kernel.error_len = len;
    return AL_TRAP_NONE;
}

HOST_FN(h_error_get) { return ret_i64(res, kernel_of(env)->error_off); }

/* ---- config and vars --------------------------------------------------------------------- */

/* Copy bytes into a new block for the guest: its handle, or a trap. */
static al_trap_kind give_bytes(al_plugin *p, const char *fn, const void *data, size_t len,
                               al_value *res) {
    uint64_t h;
    if (!kernel_alloc_copy(&p->kernel, data, len, &h))
        return plugin_trap(p, "%s: no room for %zu bytes in the plugin's memory", fn, len);
    RET_I64(h);
    return AL_TRAP_NONE;
}

HOST_FN(h_config_get) {
    al_plugin *p = env;
    uint64_t off, len;
    al_trap_kind t = block_bytes(p, "config_get", "key", ARG_U64(0), &off, &len);
    if (t != AL_TRAP_NONE) return t;
    const uint8_t *key = p->kernel.mem + off;
    for (size_t i = 0; i < p->set.nconfig; i++) {
        const al_kv *kv = &p->set.config[i];
        if (strlen(kv->key) == len && memcmp(kv->key, key, len) == 0)
            return give_bytes(p, "config_get", kv->value, strlen(kv->value), res);
    }
    return ret_i64(res, 0); /* absent */
}

HOST_FN(h_var_get) {
    al_plugin *p = env;
    uint64_t off, len;
    al_trap_kind t = block_bytes(p, "var_get", "key", ARG_U64(0), &off, &len);
    if (t != AL_TRAP_NONE) return t;
    const plugin_var *v = vars_get(&p->vars, p->kernel.mem + off, len);
    return v ? give_bytes(p, "var_get", v->value, v->value_len, res) : ret_i64(res, 0);
}

HOST_FN(h_var_set) {
    al_plugin *p = env;
    uint64_t koff, klen, voff = 0, vlen = 0;
    al_trap_kind t = block_bytes(p, "var_set", "key", ARG_U64(0), &koff, &klen);
    if (t != AL_TRAP_NONE) return t;
    if (ARG_U64(1) == 0) { /* Extism: value 0 removes the key */
        vars_remove(&p->vars, p->kernel.mem + koff, klen);
        return AL_TRAP_NONE;
    }
    t = block_bytes(p, "var_set", "value", ARG_U64(1), &voff, &vlen);
    if (t != AL_TRAP_NONE) return t;
    switch (vars_set(&p->vars, p->kernel.mem + koff, klen, p->kernel.mem + voff, vlen)) {
    case VARS_OK: return AL_TRAP_NONE;
    case VARS_DISABLED: return plugin_trap(p, "var_set: vars are disabled by this host (max_var_bytes is 0)");
    case VARS_FULL:
        return plugin_trap(p, "var_set: the variable store is full (max_var_bytes is %llu bytes)",
                           (unsigned long long)p->vars.max_bytes);
    case VARS_NOMEM: break;
    }
    return plugin_trap(p, "var_set: out of host memory");
}

/* ---- logging ----------------------------------------------------------------------------- */

static al_trap_kind log_at(al_plugin *p, const char *fn, int level, uint64_t h) {
    uint64_t off, len;
    al_trap_kind t = block_bytes(p, fn, "message", h, &off, &len);
    if (t != AL_TRAP_NONE) return t;
    plugin_log(p, level, p->kernel.mem + off, len);
    return AL_TRAP_NONE;
}

HOST_FN(h_log_trace) { return log_at(env, "log_trace", AL_LOG_TRACE, ARG_U64(0)); }
HOST_FN(h_log_debug) { return log_at(env, "log_debug", AL_LOG_DEBUG, ARG_U64(0)); }
HOST_FN(h_log_info) { return log_at(env, "log_info", AL_LOG_INFO, ARG_U64(0)); }
HOST_FN(h_log_warn) { return log_at(env, "log_warn", AL_LOG_WARN, ARG_U64(0)); }
HOST_FN(h_log_error) { return log_at(env, "log_error", AL_LOG_ERROR, ARG_U64(0)); }

HOST_FN(h_get_log_level) { return ret_i32(res, ((al_plugin *)env)->set.log_level); }

/* ---- HTTP ---------------------------------------------------------------------------------- */

HOST_FN(h_http_request) {
    al_plugin *p = env;
    uint64_t h = 0;
    al_trap_kind t = plugin_http_request(p, ARG_U64(0), ARG_U64(1), &h);
    if (t != AL_TRAP_NONE) return t;
    RET_I64(h);
    return AL_TRAP_NONE;
}

HOST_FN(h_http_status_code) { return ret_i32(res, ((al_plugin *)env)->http_status); }

HOST_FN(h_http_headers) {
    al_plugin *p = env;
    if (!p->http_headers) return ret_i64(res, 0); /* no response headers */
    return give_bytes(p, "http_headers", p->http_headers, p->http_headers_len, res);
}

/* ---- the table ----------------------------------------------------------------------------- */

static const uint8_t T_I[] = {AL_I64};
static const uint8_t T_II[] = {AL_I64, AL_I64};
static const uint8_t T_Ii[] = {AL_I64, AL_I32};
static const uint8_t T_i[] = {AL_I32};

#define SIG(np, p, nr, r) {np, nr, p, r}
#define V_V SIG(0, NULL, 0, NULL)
#define V_I SIG(0, NULL, 1, T_I)
#define V_i SIG(0, NULL, 1, T_i)
#define I_V SIG(1, T_I, 0, NULL)
#define I_I SIG(1, T_I, 1, T_I)
#define I_i SIG(1, T_I, 1, T_i)
#define II_V SIG(2, T_II, 0, NULL)
#define II_I SIG(2, T_II, 1, T_I)
#define Ii_V SIG(2, T_Ii, 0, NULL)

static const plugin_host_def host_defs[] = {
    {"alloc", I_I, h_alloc},
    {"config_get", I_I, h_config_get},
    {"error_get", V_I, h_error_get},
    {"error_set", I_V, h_error_set},
    {"free", I_V, h_free},
    {"get_log_level", V_i, h_get_log_level},
    {"http_headers", V_I, h_http_headers},
    {"http_request", II_I, h_http_request},
    {"http_status_code", V_i, h_http_status_code},
    {"input_length", V_I, h_input_length},
    {"input_load_u64", I_I, h_input_load_u64},
    {"input_load_u8", I_i, h_input_load_u8},
    {"input_offset", V_I, h_input_offset},
    {"input_set", II_V, h_input_set},
    {"length", I_I, h_length},
    {"length_unsafe", I_I, h_length}, /* the checked length costs one binary search */
    {"load_u64", I_I, h_load_u64},
    {"load_u8", I_i, h_load_u8},
    {"log_debug", I_V, h_log_debug},
    {"log_error", I_V, h_log_error},
    {"log_info", I_V, h_log_info},
    {"log_trace", I_V, h_log_trace},
    {"log_warn", I_V, h_log_warn},
    {"memory_bytes", V_I, h_memory_bytes},
    {"output_length", V_I, h_output_length},
    {"output_offset", V_I, h_output_offset},
    {"output_set", II_V, h_output_set},
    {"reset", V_V, h_reset},
    {"store_u64", II_V, h_store_u64},
    {"store_u8", Ii_V, h_store_u8},
    {"var_get", I_I, h_var_get},
    {"var_set", II_V, h_var_set},
};

static int compare_name(const char *name, size_t len, const char *def) {
    size_t dl = strlen(def);
    int c = memcmp(name, def, len < dl ? len : dl);
    if (c) return c;
    return len < dl ? -1 : len > dl ? 1 : 0;
}

const plugin_host_def *plugin_host_lookup(const char *name, size_t len) {
    if (!name) return NULL;
    size_t lo = 0, hi = sizeof host_defs / sizeof host_defs[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = compare_name(name, len, host_defs[mid].name);
        if (c == 0) return &host_defs[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}
