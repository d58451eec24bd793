/*
 * vars.c — Extism plugin vars: a key -> bytes map the plugin reads and
 * writes through var_get/var_set, kept on the host side of the al_plugin,
 * so it persists across calls and across instance restarts (a trap discards
 * the instance, never the vars).
 *
 * Invariants:
 *  - every key and value is an owned copy; vars_free releases all of them;
 *  - bytes == sum over entries of key_len + value_len + VAR_OVERHEAD, and
 *    bytes <= max_bytes after every successful vars_set: a plugin cannot grow
 *    host memory past max_var_bytes by storing many small entries (the
 *    overhead charges each entry's bookkeeping, as Extism does);
 *  - max_bytes == 0 means vars are disabled (Extism's max_var_bytes: 0), so
 *    every vars_set is refused; vars_get then finds nothing.
 *
 * Look-up is linear: the budget (1 MiB by default) bounds the entry count,
 * and a plugin's vars are typically a handful.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

void vars_init(plugin_vars *vs, uint64_t max_bytes) {
    memset(vs, 0, sizeof *vs);
    vs->max_bytes = max_bytes;
}

void vars_free(plugin_vars *vs) {
    for (size_t i = 0; i < vs->n; i++) {
        free(vs->v[i].key);
        free(vs->v[i].value);
    }
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

static ptrdiff_t find(const plugin_vars *vs, const uint8_t *key, size_t key_len) {
    for (size_t i = 0; i < vs->n; i++)
        if (vs->v[i].key_len == key_len &&
            (key_len == 0 || memcmp(vs->v[i].key, key, key_len) == 0))
            return (ptrdiff_t)i;
    return -1;
}

const plugin_var *vars_get(const plugin_vars *vs, const uint8_t *key, size_t key_len) {
    ptrdiff_t i = find(vs, key, key_len);
    return i >= 0 ? &vs->v[i] : NULL;
}

static uint64_t entry_cost(size_t key_len, size_t value_len) {
    return (uint64_t)key_len + value_len + VAR_OVERHEAD;
}

/* A copy of n bytes (never NULL on success, even for n == 0). */
static uint8_t *dup_bytes(const uint8_t *b, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    if (c && n) memcpy(c, b, n);
    return c;
}

vars_status vars_set(plugin_vars *vs, const uint8_t *key, size_t key_len, const uint8_t *value,
                     size_t value_len) {
    if (vs->max_bytes == 0) return VARS_DISABLED;
    ptrdiff_t i = find(vs, key, key_len);
    uint64_t old = i >= 0 ? entry_cost(vs->v[i].key_len, vs->v[i].value_len) : 0;
    uint64_t cost = entry_cost(key_len, value_len);
    /* bytes >= old always; compare without forming a sum that could wrap */
    if (cost > vs->max_bytes || vs->bytes - old > vs->max_bytes - cost) return VARS_FULL;
    uint8_t *copy = dup_bytes(value, value_len);
    if (!copy) return VARS_NOMEM;
    if (i >= 0) {
        free(vs->v[i].value);
        vs->v[i].value = copy;
        vs->v[i].value_len = value_len;
        vs->bytes = vs->bytes - old + cost;
        return VARS_OK;
    }
    uint8_t *kcopy = dup_bytes(key, key_len);
    if (!kcopy) {
        free(copy);
        return VARS_NOMEM;
    }
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? vs->cap * 2 : 8;
        plugin_var *grown = realloc(vs->v, cap * sizeof *grown);
        if (!grown) {
            free(copy);
            free(kcopy);
            return VARS_NOMEM;
        }
        vs->v = grown;
        vs->cap = cap;
    }
    vs->v[vs->n++] = (plugin_var){kcopy, key_len, copy, value_len};
    vs->bytes += cost;
    return VARS_OK;
}

void vars_remove(plugin_vars *vs, const uint8_t *key, size_t key_len) {
    ptrdiff_t i = find(vs, key, key_len);
    if (i < 0) return;
    vs->bytes -= entry_cost(vs->v[i].key_len, vs->v[i].value_len);
    free(vs->v[i].key);
    free(vs->v[i].value);
    vs->v[i] = vs->v[--vs->n];
}
