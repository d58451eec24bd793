/*
 * hostile.c — a plugin that misbehaves on purpose, one way per function, for
 * the host's tests (tests/cli/test-plugin.sh, the ABI unit tests). The host
 * must turn each into one clear error and never crash:
 *
 *   trap          executes `unreachable`
 *   loop          never returns (needs a timeout or fuel to stop)
 *   oom           grows linear memory until growing fails, then traps
 *   big_output    sets an 11 MiB output (past the 10 MiB guillotine): one
 *                 block, or adjacent 1 MiB blocks when one is refused
 *   big_error     sets an 11 MiB error (one block: fails when refused)
 *   bad_handle    output_set with a length past the end of its block
 *   bad_offset    output_set at an offset near 2^64 (offset + length wraps)
 *   bad_load      load_u64 past the end of host memory
 *   error_wins    sets an error and returns 0: the call must fail anyway
 *   escapes       logs and fails with terminal escape sequences (ESC, BEL,
 *                 the 8-bit CSI) in its text: a host printing them must not
 *                 pass them to the terminal
 *   ok            outputs "ok" (to check the instance still works afterwards)
 *
 * Built like the examples: examples/plugins/build.sh OUT_DIR tests/plugin/hostile.c
 */
#include "airlock_pdk.h"

#define BIG ((uint64_t)11 << 20)

PDK_EXPORT(trap) {
    __builtin_trap();
}

PDK_EXPORT(loop) {
    volatile uint64_t n = 0;
    for (;;) n++;
}

PDK_EXPORT(oom) {
    /* 16 pages (1 MiB) at a time, until the host says no */
    while (__builtin_wasm_memory_grow(0, 16) != (size_t)-1) {
    }
    __builtin_trap();
}

/* An 11 MiB block, or 0 when the host refuses to allocate it. */
static pdk_handle big_block(void) {
    return pdk_env_alloc(BIG);
}

/* 11 MiB of host memory as 1 MiB blocks laid out one after the other (a host
 * may cap any one allocation below 11 MiB), or 0 when they are not adjacent. */
static pdk_handle big_span(void) {
    const uint64_t chunk = (uint64_t)1 << 20;
    pdk_handle first = pdk_env_alloc(chunk);
    for (uint64_t i = 1; first && i < BIG / chunk; i++)
        if (pdk_env_alloc(chunk) != first + i * chunk) return 0;
    return first;
}

PDK_EXPORT(big_output) {
    pdk_handle h = big_block();
    if (!h) h = big_span();
    if (!h) return pdk_error_set("big_output: the host refused 11 MiB of memory");
    pdk_env_output_set(h, BIG);
    return 0;
}

PDK_EXPORT(big_error) {
    pdk_handle h = big_block();
    if (!h) return pdk_error_set("big_error: the host refused an 11 MiB block");
    pdk_env_error_set(h);
    return 1;
}

PDK_EXPORT(bad_handle) {
    pdk_handle h = pdk_alloc_copy("0123456789abcdef", 16);
    pdk_env_output_set(h, 16 + 4096);
    return 0;
}

PDK_EXPORT(bad_offset) {
    pdk_env_output_set(UINT64_MAX - 3, 16);
    return 0;
}

PDK_EXPORT(bad_load) {
    volatile uint64_t v = pdk_env_load_u64(pdk_env_memory_bytes() + 64);
    (void)v;
    return 0;
}

PDK_EXPORT(error_wins) {
    pdk_error_set("error_wins: this error must win over the return code 0");
    pdk_output_str("this output must not be mistaken for success");
    return 0;
}

PDK_EXPORT(escapes) {
    pdk_log(PDK_LOG_WARN, "log:\x1b[31mred\xc2\x9b" "2J\x9b" "2J\r\nforged line\tcaf\xc3\xa9");
    return pdk_error_set("error:\x1b]0;title\x07\nsecond line");
}

PDK_EXPORT(ok) {
    pdk_output_str("ok");
    return 0;
}
