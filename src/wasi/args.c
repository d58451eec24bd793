/*
 * args.c — args_sizes_get, args_get, environ_sizes_get, environ_get.
 *
 * Both lists have the same shape (witx): *_sizes_get returns the number of
 * strings and the bytes of their NUL-terminated data; *_get writes an array
 * of u32 pointers and the strings themselves, each pointer aimed into the
 * data buffer.
 *
 * Invariants: the environment is only what the policy granted (nothing is
 * inherited from the host, so no host secret can leak through it); both
 * destination ranges are checked before anything is written, so a bad
 * pointer leaves guest memory untouched; wasi_ctx_new guarantees the counts
 * and byte totals fit the witx u32 "size".
 */
#include "wasi_host.h"

/* Bytes of the NUL-terminated strings of a list. */
static uint64_t list_bytes(char *const *list, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += strlen(list[i]) + 1;
    return total;
}

static wasi_errno list_sizes(al_caller *caller, char *const *list, size_t n, uint32_t count_ptr,
                             uint32_t bytes_ptr) {
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, count_ptr, 4) || !guest_range(m, bytes_ptr, 4))
        return WASI_EFAULT;
    put_u32(m, count_ptr, (uint32_t)n);
    put_u32(m, bytes_ptr, (uint32_t)list_bytes(list, n));
    return WASI_ESUCCESS;
}

/* ptrs: n u32 pointers; buf: the strings, back to back. */
static wasi_errno list_get(al_caller *caller, char *const *list, size_t n, uint32_t ptrs,
                           uint32_t buf) {
    guest_mem m;
    if (!guest_memory(caller, &m)) return WASI_EFAULT;
    uint64_t bytes = list_bytes(list, n);
    if (!guest_range(m, ptrs, (uint64_t)n * 4) || !guest_range(m, buf, bytes)) return WASI_EFAULT;
    uint32_t at = buf; /* buf + bytes <= memory size <= 2^32: no wrap */
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(list[i]) + 1;
        put_u32(m, ptrs + (uint32_t)i * 4, at);
        memcpy(m.base + at, list[i], len);
        at += (uint32_t)len;
    }
    return WASI_ESUCCESS;
}

al_trap_kind wasi_args_sizes_get(void *env, al_caller *caller, const al_value *args,
                                 al_value *results) {
    wasi_ctx *ctx = env;
    return wasi_return(results, list_sizes(caller, ctx->argv, ctx->argc, (uint32_t)args[0].of.i32,
                                           (uint32_t)args[1].of.i32));
}

al_trap_kind wasi_args_get(void *env, al_caller *caller, const al_value *args,
                           al_value *results) {
    wasi_ctx *ctx = env;
    return wasi_return(results, list_get(caller, ctx->argv, ctx->argc, (uint32_t)args[0].of.i32,
                                         (uint32_t)args[1].of.i32));
}

al_trap_kind wasi_environ_sizes_get(void *env, al_caller *caller, const al_value *args,
                                    al_value *results) {
    wasi_ctx *ctx = env;
    return wasi_return(results, list_sizes(caller, ctx->env, ctx->nenv, (uint32_t)args[0].of.i32,
                                           (uint32_t)args[1].of.i32));
}

al_trap_kind wasi_environ_get(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    wasi_ctx *ctx = env;
    return wasi_return(results, list_get(caller, ctx->env, ctx->nenv, (uint32_t)args[0].of.i32,
                                         (uint32_t)args[1].of.i32));
}
