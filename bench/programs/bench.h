/*
 * bench.h — shared helpers for the airlock benchmark programs.
 *
 * Every program in this directory is one freestanding C file that exports
 * `int32_t run(void)` and returns a checksum. The same source is compiled
 * twice: for wasm32 with no libc and no imports (clang --target=wasm32
 * -nostdlib), and natively with main.c as the driver. Nothing here may call
 * into a C library, so the few helpers the programs need live in this header.
 *
 * Checksums are masked to 31 bits so that they print identically whether a
 * runner shows an i32 result as signed or unsigned.
 *
 * run() re-initialises all of its state on every call: node-runner.mjs calls
 * it several times in one instance and must see the same checksum each time.
 */
#ifndef AIRLOCK_BENCH_H
#define AIRLOCK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_CHECKSUM(x) ((int32_t)((uint32_t)(x) & 0x7fffffffu))

int32_t run(void);

/* xorshift32: a tiny deterministic generator for test data. */
static inline uint32_t bench_xorshift32(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

/* Byte loops rather than memcpy/memset: no libc on the wasm side. */
static inline void bench_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}

static inline void bench_zero(void *dst, size_t n)
{
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = 0;
}

/* FNV-1a over a byte range, for checksumming buffers. */
static inline uint32_t bench_fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

#endif
