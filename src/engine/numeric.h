/*
 * numeric.h — exact WebAssembly 2.0 numeric semantics (spec §4.3) for the
 * interpreter's hot loop. Header-only: every function is static inline, there
 * is no global state, and nothing here executes C undefined behaviour (the
 * engine is tested under UBSan).
 *
 * Naming scheme — the wasm instruction name with '.' replaced by '_' and a
 * "num_" prefix:
 *
 *   num_<t>_<op>           t in {i32, i64, f32, f64}, e.g. num_i32_clz,
 *                          num_i64_rotl, num_f32_min, num_f64_nearest
 *   num_<t>_<op>_<t2>_<sx> conversions, e.g. num_i32_wrap_i64,
 *                          num_i32_trunc_f64_s, num_i64_trunc_sat_f32_u,
 *                          num_f32_convert_i64_u, num_f32_demote_f64
 *   num_<t>_to_float / num_<t>_from_float    bits <-> C float/double helpers
 *   num_<t>_is_nan                           bits-level NaN test
 *
 * Value types in signatures:
 *   i32 -> uint32_t, i64 -> uint64_t (two's complement; signedness is in the
 *   op, not the C type), f32 -> uint32_t raw IEEE bits, f64 -> uint64_t raw
 *   IEEE bits. Boolean results (eqz, comparisons) are uint32_t 0 or 1, i.e. a
 *   ready-made wasm i32.
 *
 * Trapping operations (integer div/rem, non-saturating float->int trunc) have
 * the shape
 *     int num_i32_div_s(uint32_t a, uint32_t b, uint32_t *out);
 * and return 0 (NUMERIC_TRAP_NONE) with the result stored in *out, or a
 * non-zero NUMERIC_TRAP_* code, in which case *out is left untouched. The
 * NUMERIC_TRAP_* codes are the matching al_trap_kind values from airlock.h,
 * so a non-zero code can be raised directly as an al_trap_kind.
 *
 * NaN handling (spec §4.3.3 "NaN propagation"): operations whose result is a
 * NaN return an arithmetic (quiet) NaN, and a canonical NaN when all NaN
 * inputs are canonical. abs/neg/copysign and reinterpretations are pure bit
 * operations and preserve payloads exactly (including signalling NaNs).
 * The arithmetic ops rely on IEEE hardware (SSE on x86_64), which already
 * produces conforming NaNs.
 */
#ifndef AIRLOCK_ENGINE_NUMERIC_H
#define AIRLOCK_ENGINE_NUMERIC_H

#include <float.h>
#include <stdint.h>
#include <string.h>

#include "airlock.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define NUM_HAVE_SSE2_SQRT 1
#endif

/* Rounding (ceil/floor/trunc/nearest): with a single-instruction rounding unit
 * (SSE4.1 roundss/roundsd, AArch64 frint*) or a non-standard evaluation
 * method use the compiler builtins; otherwise use the inline "add and
 * subtract 2^mantissa" technique, which is exact under the default
 * round-to-nearest-even mode and avoids a libm call on baseline x86_64. */
#if defined(__SSE4_1__) || defined(__aarch64__) || !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#define NUM_ROUND_BUILTIN 1
#else
#define NUM_ROUND_BUILTIN 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NUM_LIKELY(x) __builtin_expect(!!(x), 1)
#define NUM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define NUM_LIKELY(x) (x)
#define NUM_UNLIKELY(x) (x)
#endif

/* IEEE equality comparisons below are intentional. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"
#endif

#define NUMERIC_TRAP_NONE 0
#define NUMERIC_TRAP_DIV_ZERO ((int)AL_TRAP_INT_DIV_ZERO)               /* "integer divide by zero" */
#define NUMERIC_TRAP_OVERFLOW ((int)AL_TRAP_INT_OVERFLOW)               /* "integer overflow" */
#define NUMERIC_TRAP_INVALID_CONVERSION ((int)AL_TRAP_INVALID_CONVERSION) /* "invalid conversion to integer" */

#define NUM_F32_SIGN 0x80000000u
#define NUM_F32_QUIET 0x00400000u
#define NUM_F32_INF 0x7f800000u
#define NUM_F64_SIGN 0x8000000000000000ull
#define NUM_F64_QUIET 0x0008000000000000ull
#define NUM_F64_INF 0x7ff0000000000000ull

/* ======================================================================== */
/* bits <-> C floating point                                                */
/* ======================================================================== */

static inline float num_f32_to_float(uint32_t a) { float f; memcpy(&f, &a, sizeof f); return f; }
static inline uint32_t num_f32_from_float(float f) { uint32_t a; memcpy(&a, &f, sizeof a); return a; }
static inline double num_f64_to_float(uint64_t a) { double d; memcpy(&d, &a, sizeof d); return d; }
static inline uint64_t num_f64_from_float(double d) { uint64_t a; memcpy(&a, &d, sizeof a); return a; }

static inline int num_f32_is_nan(uint32_t a) { return (a & ~NUM_F32_SIGN) > NUM_F32_INF; }
static inline int num_f64_is_nan(uint64_t a) { return (a & ~NUM_F64_SIGN) > NUM_F64_INF; }

/* ======================================================================== */
/* i32                                                                      */
/* ======================================================================== */

static inline uint32_t num_i32_clz(uint32_t a) { return a ? (uint32_t)__builtin_clz(a) : 32u; }
static inline uint32_t num_i32_ctz(uint32_t a) { return a ? (uint32_t)__builtin_ctz(a) : 32u; }
static inline uint32_t num_i32_popcnt(uint32_t a) { return (uint32_t)__builtin_popcount(a); }

static inline uint32_t num_i32_add(uint32_t a, uint32_t b) { return a + b; }
static inline uint32_t num_i32_sub(uint32_t a, uint32_t b) { return a - b; }
static inline uint32_t num_i32_mul(uint32_t a, uint32_t b) { return a * b; }
static inline uint32_t num_i32_and(uint32_t a, uint32_t b) { return a & b; }
static inline uint32_t num_i32_or(uint32_t a, uint32_t b) { return a | b; }
static inline uint32_t num_i32_xor(uint32_t a, uint32_t b) { return a ^ b; }

static inline uint32_t num_i32_shl(uint32_t a, uint32_t n) { return a << (n & 31u); }
static inline uint32_t num_i32_shr_u(uint32_t a, uint32_t n) { return a >> (n & 31u); }
static inline uint32_t num_i32_shr_s(uint32_t a, uint32_t n)
{
    /* >> of a negative signed value is implementation-defined (arithmetic on
     * every supported compiler), not undefined. */
    return (uint32_t)((int32_t)a >> (n & 31u));
}
static inline uint32_t num_i32_rotl(uint32_t a, uint32_t n)
{
    return (a << (n & 31u)) | (a >> ((0u - n) & 31u));
}
static inline uint32_t num_i32_rotr(uint32_t a, uint32_t n)
{
    return (a >> (n & 31u)) | (a << ((0u - n) & 31u));
}

static inline int num_i32_div_s(uint32_t a, uint32_t b, uint32_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    if (NUM_UNLIKELY(a == 0x80000000u && b == 0xffffffffu)) return NUMERIC_TRAP_OVERFLOW;
    *out = (uint32_t)((int32_t)a / (int32_t)b);
    return NUMERIC_TRAP_NONE;
}
static inline int num_i32_div_u(uint32_t a, uint32_t b, uint32_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    *out = a / b;
    return NUMERIC_TRAP_NONE;
}
static inline int num_i32_rem_s(uint32_t a, uint32_t b, uint32_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    /* x % -1 == 0 for every x; skipping the C expression avoids the UB (and
     * the x86 #DE) of INT_MIN % -1. */
    *out = NUM_UNLIKELY(b == 0xffffffffu) ? 0u : (uint32_t)((int32_t)a % (int32_t)b);
    return NUMERIC_TRAP_NONE;
}
static inline int num_i32_rem_u(uint32_t a, uint32_t b, uint32_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    *out = a % b;
    return NUMERIC_TRAP_NONE;
}

static inline uint32_t num_i32_eqz(uint32_t a) { return a == 0; }
static inline uint32_t num_i32_eq(uint32_t a, uint32_t b) { return a == b; }
static inline uint32_t num_i32_ne(uint32_t a, uint32_t b) { return a != b; }
static inline uint32_t num_i32_lt_s(uint32_t a, uint32_t b) { return (int32_t)a < (int32_t)b; }
static inline uint32_t num_i32_lt_u(uint32_t a, uint32_t b) { return a < b; }
static inline uint32_t num_i32_gt_s(uint32_t a, uint32_t b) { return (int32_t)a > (int32_t)b; }
static inline uint32_t num_i32_gt_u(uint32_t a, uint32_t b) { return a > b; }
static inline uint32_t num_i32_le_s(uint32_t a, uint32_t b) { return (int32_t)a <= (int32_t)b; }
static inline uint32_t num_i32_le_u(uint32_t a, uint32_t b) { return a <= b; }
static inline uint32_t num_i32_ge_s(uint32_t a, uint32_t b) { return (int32_t)a >= (int32_t)b; }
static inline uint32_t num_i32_ge_u(uint32_t a, uint32_t b) { return a >= b; }

static inline uint32_t num_i32_extend8_s(uint32_t a) { return (uint32_t)(int32_t)(int8_t)(uint8_t)a; }
static inline uint32_t num_i32_extend16_s(uint32_t a) { return (uint32_t)(int32_t)(int16_t)(uint16_t)a; }

/* ======================================================================== */
/* i64                                                                      */
/* ======================================================================== */

static inline uint64_t num_i64_clz(uint64_t a) { return a ? (uint64_t)__builtin_clzll(a) : 64u; }
static inline uint64_t num_i64_ctz(uint64_t a) { return a ? (uint64_t)__builtin_ctzll(a) : 64u; }
static inline uint64_t num_i64_popcnt(uint64_t a) { return (uint64_t)__builtin_popcountll(a); }

static inline uint64_t num_i64_add(uint64_t a, uint64_t b) { return a + b; }
static inline uint64_t num_i64_sub(uint64_t a, uint64_t b) { return a - b; }
static inline uint64_t num_i64_mul(uint64_t a, uint64_t b) { return a * b; }
static inline uint64_t num_i64_and(uint64_t a, uint64_t b) { return a & b; }
static inline uint64_t num_i64_or(uint64_t a, uint64_t b) { return a | b; }
static inline uint64_t num_i64_xor(uint64_t a, uint64_t b) { return a ^ b; }

static inline uint64_t num_i64_shl(uint64_t a, uint64_t n) { return a << (n & 63u); }
static inline uint64_t num_i64_shr_u(uint64_t a, uint64_t n) { return a >> (n & 63u); }
static inline uint64_t num_i64_shr_s(uint64_t a, uint64_t n)
{
    return (uint64_t)((int64_t)a >> (n & 63u));
}
static inline uint64_t num_i64_rotl(uint64_t a, uint64_t n)
{
    return (a << (n & 63u)) | (a >> ((0u - n) & 63u));
}
static inline uint64_t num_i64_rotr(uint64_t a, uint64_t n)
{
    return (a >> (n & 63u)) | (a << ((0u - n) & 63u));
}

static inline int num_i64_div_s(uint64_t a, uint64_t b, uint64_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    if (NUM_UNLIKELY(a == 0x8000000000000000ull && b == 0xffffffffffffffffull))
        return NUMERIC_TRAP_OVERFLOW;
    *out = (uint64_t)((int64_t)a / (int64_t)b);
    return NUMERIC_TRAP_NONE;
}
static inline int num_i64_div_u(uint64_t a, uint64_t b, uint64_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    *out = a / b;
    return NUMERIC_TRAP_NONE;
}
static inline int num_i64_rem_s(uint64_t a, uint64_t b, uint64_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    *out = NUM_UNLIKELY(b == 0xffffffffffffffffull) ? 0u : (uint64_t)((int64_t)a % (int64_t)b);
    return NUMERIC_TRAP_NONE;
}
static inline int num_i64_rem_u(uint64_t a, uint64_t b, uint64_t *out)
{
    if (NUM_UNLIKELY(b == 0)) return NUMERIC_TRAP_DIV_ZERO;
    *out = a % b;
    return NUMERIC_TRAP_NONE;
}

static inline uint32_t num_i64_eqz(uint64_t a) { return a == 0; }
static inline uint32_t num_i64_eq(uint64_t a, uint64_t b) { return a == b; }
static inline uint32_t num_i64_ne(uint64_t a, uint64_t b) { return a != b; }
static inline uint32_t num_i64_lt_s(uint64_t a, uint64_t b) { return (int64_t)a < (int64_t)b; }
static inline uint32_t num_i64_lt_u(uint64_t a, uint64_t b) { return a < b; }
static inline uint32_t num_i64_gt_s(uint64_t a, uint64_t b) { return (int64_t)a > (int64_t)b; }
static inline uint32_t num_i64_gt_u(uint64_t a, uint64_t b) { return a > b; }
static inline uint32_t num_i64_le_s(uint64_t a, uint64_t b) { return (int64_t)a <= (int64_t)b; }
static inline uint32_t num_i64_le_u(uint64_t a, uint64_t b) { return a <= b; }
static inline uint32_t num_i64_ge_s(uint64_t a, uint64_t b) { return (int64_t)a >= (int64_t)b; }
static inline uint32_t num_i64_ge_u(uint64_t a, uint64_t b) { return a >= b; }

static inline uint64_t num_i64_extend8_s(uint64_t a) { return (uint64_t)(int64_t)(int8_t)(uint8_t)a; }
static inline uint64_t num_i64_extend16_s(uint64_t a) { return (uint64_t)(int64_t)(int16_t)(uint16_t)a; }
static inline uint64_t num_i64_extend32_s(uint64_t a) { return (uint64_t)(int64_t)(int32_t)(uint32_t)a; }

/* ======================================================================== */
/* f32                                                                      */
/* ======================================================================== */

/* Sign-bit operations: exact on every input, NaN payloads preserved. */
static inline uint32_t num_f32_abs(uint32_t a) { return a & ~NUM_F32_SIGN; }
static inline uint32_t num_f32_neg(uint32_t a) { return a ^ NUM_F32_SIGN; }
static inline uint32_t num_f32_copysign(uint32_t a, uint32_t b)
{
    return (a & ~NUM_F32_SIGN) | (b & NUM_F32_SIGN);
}

static inline uint32_t num_f32_add(uint32_t a, uint32_t b)
{
    return num_f32_from_float(num_f32_to_float(a) + num_f32_to_float(b));
}
static inline uint32_t num_f32_sub(uint32_t a, uint32_t b)
{
    return num_f32_from_float(num_f32_to_float(a) - num_f32_to_float(b));
}
static inline uint32_t num_f32_mul(uint32_t a, uint32_t b)
{
    return num_f32_from_float(num_f32_to_float(a) * num_f32_to_float(b));
}
static inline uint32_t num_f32_div(uint32_t a, uint32_t b)
{
    return num_f32_from_float(num_f32_to_float(a) / num_f32_to_float(b));
}
static inline uint32_t num_f32_sqrt(uint32_t a)
{
#ifdef NUM_HAVE_SSE2_SQRT
    /* sqrtss directly: no errno check / libm fallback on negative input. */
    return num_f32_from_float(_mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(num_f32_to_float(a)))));
#else
    return num_f32_from_float(__builtin_sqrtf(num_f32_to_float(a)));
#endif
}

/* NaN result of a binary op with at least one NaN operand: that operand,
 * quieted (canonical stays canonical). */
static inline uint32_t num__f32_nan2(uint32_t a, uint32_t b)
{
    return (num_f32_is_nan(a) ? a : b) | NUM_F32_QUIET;
}
static inline uint32_t num_f32_min(uint32_t a, uint32_t b)
{
    float x = num_f32_to_float(a), y = num_f32_to_float(b);
    if (x < y) return a;
    if (y < x) return b;
    if (NUM_LIKELY(x == y)) return a | b; /* equal: identical bits, or ±0 -> -0 */
    return num__f32_nan2(a, b);
}
static inline uint32_t num_f32_max(uint32_t a, uint32_t b)
{
    float x = num_f32_to_float(a), y = num_f32_to_float(b);
    if (x > y) return a;
    if (y > x) return b;
    if (NUM_LIKELY(x == y)) return a & b; /* equal: identical bits, or ±0 -> +0 */
    return num__f32_nan2(a, b);
}

#if NUM_ROUND_BUILTIN
static inline uint32_t num_f32_ceil(uint32_t a)
{
    if (NUM_UNLIKELY(num_f32_is_nan(a))) return a | NUM_F32_QUIET;
    return num_f32_from_float(__builtin_ceilf(num_f32_to_float(a)));
}
static inline uint32_t num_f32_floor(uint32_t a)
{
    if (NUM_UNLIKELY(num_f32_is_nan(a))) return a | NUM_F32_QUIET;
    return num_f32_from_float(__builtin_floorf(num_f32_to_float(a)));
}
static inline uint32_t num_f32_trunc(uint32_t a)
{
    if (NUM_UNLIKELY(num_f32_is_nan(a))) return a | NUM_F32_QUIET;
    return num_f32_from_float(__builtin_truncf(num_f32_to_float(a)));
}
static inline uint32_t num_f32_nearest(uint32_t a)
{
    if (NUM_UNLIKELY(num_f32_is_nan(a))) return a | NUM_F32_QUIET;
    return num_f32_from_float(__builtin_nearbyintf(num_f32_to_float(a)));
}
#else
/* For |x| < 2^23 (bits < 0x4b000000), (|x| + 2^23) - 2^23 is |x| rounded to
 * an integer, ties to even; the sign is then reattached, which also gives the
 * spec's signed zeros (e.g. ceil(-0.5) = -0). Larger magnitudes, infinities
 * and zeros are already integral; NaNs are quieted. */
static inline float num__f32_round_abs(float ax)
{
    return (ax + 8388608.0f) - 8388608.0f;
}
static inline uint32_t num_f32_nearest(uint32_t a)
{
    uint32_t m = a & ~NUM_F32_SIGN;
    if (NUM_LIKELY(m < 0x4b000000u))
        return num_f32_from_float(num__f32_round_abs(num_f32_to_float(m))) | (a & NUM_F32_SIGN);
    return m > NUM_F32_INF ? a | NUM_F32_QUIET : a;
}
static inline uint32_t num_f32_trunc(uint32_t a)
{
    uint32_t m = a & ~NUM_F32_SIGN;
    if (NUM_LIKELY(m < 0x4b000000u)) {
        float ax = num_f32_to_float(m);
        float r = num__f32_round_abs(ax);
        if (r > ax) r -= 1.0f;
        return num_f32_from_float(r) | (a & NUM_F32_SIGN);
    }
    return m > NUM_F32_INF ? a | NUM_F32_QUIET : a;
}
static inline uint32_t num_f32_floor(uint32_t a)
{
    uint32_t m = a & ~NUM_F32_SIGN;
    if (NUM_LIKELY(m < 0x4b000000u)) {
        float x = num_f32_to_float(a);
        float r = num_f32_to_float(num_f32_from_float(num__f32_round_abs(num_f32_to_float(m)))
                                   | (a & NUM_F32_SIGN));
        if (r > x) r -= 1.0f;
        return num_f32_from_float(r) | (a & NUM_F32_SIGN);
    }
    return m > NUM_F32_INF ? a | NUM_F32_QUIET : a;
}
static inline uint32_t num_f32_ceil(uint32_t a)
{
    uint32_t m = a & ~NUM_F32_SIGN;
    if (NUM_LIKELY(m < 0x4b000000u)) {
        float x = num_f32_to_float(a);
        float r = num_f32_to_float(num_f32_from_float(num__f32_round_abs(num_f32_to_float(m)))
                                   | (a & NUM_F32_SIGN));
        if (r < x) r += 1.0f;
        return num_f32_from_float(r) | (a & NUM_F32_SIGN);
    }
    return m > NUM_F32_INF ? a | NUM_F32_QUIET : a;
}
#endif

/* Comparisons: IEEE semantics (any NaN operand -> false, except ne). */
static inline uint32_t num_f32_eq(uint32_t a, uint32_t b) { return num_f32_to_float(a) == num_f32_to_float(b); }
static inline uint32_t num_f32_ne(uint32_t a, uint32_t b) { return num_f32_to_float(a) != num_f32_to_float(b); }
static inline uint32_t num_f32_lt(uint32_t a, uint32_t b) { return num_f32_to_float(a) < num_f32_to_float(b); }
static inline uint32_t num_f32_gt(uint32_t a, uint32_t b) { return num_f32_to_float(a) > num_f32_to_float(b); }
static inline uint32_t num_f32_le(uint32_t a, uint32_t b) { return num_f32_to_float(a) <= num_f32_to_float(b); }
static inline uint32_t num_f32_ge(uint32_t a, uint32_t b) { return num_f32_to_float(a) >= num_f32_to_float(b); }

/* ======================================================================== */
/* f64                                                                      */
/* ======================================================================== */

static inline uint64_t num_f64_abs(uint64_t a) { return a & ~NUM_F64_SIGN; }
static inline uint64_t num_f64_neg(uint64_t a) { return a ^ NUM_F64_SIGN; }
static inline uint64_t num_f64_copysign(uint64_t a, uint64_t b)
{
    return (a & ~NUM_F64_SIGN) | (b & NUM_F64_SIGN);
}

static inline uint64_t num_f64_add(uint64_t a, uint64_t b)
{
    return num_f64_from_float(num_f64_to_float(a) + num_f64_to_float(b));
}
static inline uint64_t num_f64_sub(uint64_t a, uint64_t b)
{
    return num_f64_from_float(num_f64_to_float(a) - num_f64_to_float(b));
}
static inline uint64_t num_f64_mul(uint64_t a, uint64_t b)
{
    return num_f64_from_float(num_f64_to_float(a) * num_f64_to_float(b));
}
static inline uint64_t num_f64_div(uint64_t a, uint64_t b)
{
    return num_f64_from_float(num_f64_to_float(a) / num_f64_to_float(b));
}
static inline uint64_t num_f64_sqrt(uint64_t a)
{
#ifdef NUM_HAVE_SSE2_SQRT
    __m128d v = _mm_set_sd(num_f64_to_float(a));
    return num_f64_from_float(_mm_cvtsd_f64(_mm_sqrt_sd(v, v)));
#else
    return num_f64_from_float(__builtin_sqrt(num_f64_to_float(a)));
#endif
}

static inline uint64_t num__f64_nan2(uint64_t a, uint64_t b)
{
    return (num_f64_is_nan(a) ? a : b) | NUM_F64_QUIET;
}
static inline uint64_t num_f64_min(uint64_t a, uint64_t b)
{
    double x = num_f64_to_float(a), y = num_f64_to_float(b);
    if (x < y) return a;
    if (y < x) return b;
    if (NUM_LIKELY(x == y)) return a | b;
    return num__f64_nan2(a, b);
}
static inline uint64_t num_f64_max(uint64_t a, uint64_t b)
{
    double x = num_f64_to_float(a), y = num_f64_to_float(b);
    if (x > y) return a;
    if (y > x) return b;
    if (NUM_LIKELY(x == y)) return a & b;
    return num__f64_nan2(a, b);
}

#if NUM_ROUND_BUILTIN
static inline uint64_t num_f64_ceil(uint64_t a)
{
    if (NUM_UNLIKELY(num_f64_is_nan(a))) return a | NUM_F64_QUIET;
    return num_f64_from_float(__builtin_ceil(num_f64_to_float(a)));
}
static inline uint64_t num_f64_floor(uint64_t a)
{
    if (NUM_UNLIKELY(num_f64_is_nan(a))) return a | NUM_F64_QUIET;
    return num_f64_from_float(__builtin_floor(num_f64_to_float(a)));
}
static inline uint64_t num_f64_trunc(uint64_t a)
{
    if (NUM_UNLIKELY(num_f64_is_nan(a))) return a | NUM_F64_QUIET;
    return num_f64_from_float(__builtin_trunc(num_f64_to_float(a)));
}
static inline uint64_t num_f64_nearest(uint64_t a)
{
    if (NUM_UNLIKELY(num_f64_is_nan(a))) return a | NUM_F64_QUIET;
    return num_f64_from_float(__builtin_nearbyint(num_f64_to_float(a)));
}
#else
/* Same technique as f32 with 2^52 (bits 0x4330000000000000). */
static inline double num__f64_round_abs(double ax)
{
    return (ax + 4503599627370496.0) - 4503599627370496.0;
}
static inline uint64_t num_f64_nearest(uint64_t a)
{
    uint64_t m = a & ~NUM_F64_SIGN;
    if (NUM_LIKELY(m < 0x4330000000000000ull))
        return num_f64_from_float(num__f64_round_abs(num_f64_to_float(m))) | (a & NUM_F64_SIGN);
    return m > NUM_F64_INF ? a | NUM_F64_QUIET : a;
}
static inline uint64_t num_f64_trunc(uint64_t a)
{
    uint64_t m = a & ~NUM_F64_SIGN;
    if (NUM_LIKELY(m < 0x4330000000000000ull)) {
        double ax = num_f64_to_float(m);
        double r = num__f64_round_abs(ax);
        if (r > ax) r -= 1.0;
        return num_f64_from_float(r) | (a & NUM_F64_SIGN);
    }
    return m > NUM_F64_INF ? a | NUM_F64_QUIET : a;
}
static inline uint64_t num_f64_floor(uint64_t a)
{
    uint64_t m = a & ~NUM_F64_SIGN;
    if (NUM_LIKELY(m < 0x4330000000000000ull)) {
        double x = num_f64_to_float(a);
        double r = num_f64_to_float(num_f64_from_float(num__f64_round_abs(num_f64_to_float(m)))
                                    | (a & NUM_F64_SIGN));
        if (r > x) r -= 1.0;
        return num_f64_from_float(r) | (a & NUM_F64_SIGN);
    }
    return m > NUM_F64_INF ? a | NUM_F64_QUIET : a;
}
static inline uint64_t num_f64_ceil(uint64_t a)
{
    uint64_t m = a & ~NUM_F64_SIGN;
    if (NUM_LIKELY(m < 0x4330000000000000ull)) {
        double x = num_f64_to_float(a);
        double r = num_f64_to_float(num_f64_from_float(num__f64_round_abs(num_f64_to_float(m)))
                                    | (a & NUM_F64_SIGN));
        if (r < x) r += 1.0;
        return num_f64_from_float(r) | (a & NUM_F64_SIGN);
    }
    return m > NUM_F64_INF ? a | NUM_F64_QUIET : a;
}
#endif

static inline uint32_t num_f64_eq(uint64_t a, uint64_t b) { return num_f64_to_float(a) == num_f64_to_float(b); }
static inline uint32_t num_f64_ne(uint64_t a, uint64_t b) { return num_f64_to_float(a) != num_f64_to_float(b); }
static inline uint32_t num_f64_lt(uint64_t a, uint64_t b) { return num_f64_to_float(a) < num_f64_to_float(b); }
static inline uint32_t num_f64_gt(uint64_t a, uint64_t b) { return num_f64_to_float(a) > num_f64_to_float(b); }
static inline uint32_t num_f64_le(uint64_t a, uint64_t b) { return num_f64_to_float(a) <= num_f64_to_float(b); }
static inline uint32_t num_f64_ge(uint64_t a, uint64_t b) { return num_f64_to_float(a) >= num_f64_to_float(b); }

/* ======================================================================== */
/* conversions                                                              */
/* ======================================================================== */

static inline uint32_t num_i32_wrap_i64(uint64_t a) { return (uint32_t)a; }
static inline uint64_t num_i64_extend_i32_s(uint32_t a) { return (uint64_t)(int64_t)(int32_t)a; }
static inline uint64_t num_i64_extend_i32_u(uint32_t a) { return (uint64_t)a; }

/* Trapping float -> int truncation. The range test is done in floating point
 * on exactly representable bounds, so it is exact; it is false for NaN, which
 * is then told apart from overflow on the cold path. Inside the range the C
 * conversion (truncation toward zero) is defined.
 *
 * f32 has no value strictly between -2^31-1 and -2^31 (or -2^63-1 and -2^63),
 * so "x >= -2^N" is the same as the spec's "x > -2^N - 1" there. */
static inline int num_i32_trunc_f32_s(uint32_t a, uint32_t *out)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x >= -2147483648.0f && x < 2147483648.0f)) {
        *out = (uint32_t)(int32_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i32_trunc_f32_u(uint32_t a, uint32_t *out)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x > -1.0f && x < 4294967296.0f)) {
        *out = (uint32_t)x; /* (-1, 0) truncates to 0: defined */
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i32_trunc_f64_s(uint64_t a, uint32_t *out)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -2147483649.0 && x < 2147483648.0)) {
        *out = (uint32_t)(int32_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i32_trunc_f64_u(uint64_t a, uint32_t *out)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -1.0 && x < 4294967296.0)) {
        *out = (uint32_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i64_trunc_f32_s(uint32_t a, uint64_t *out)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x >= -9223372036854775808.0f && x < 9223372036854775808.0f)) {
        *out = (uint64_t)(int64_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i64_trunc_f32_u(uint32_t a, uint64_t *out)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x > -1.0f && x < 18446744073709551616.0f)) {
        *out = (uint64_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
/* f64 has no value strictly between -2^63-1 and -2^63 either. */
static inline int num_i64_trunc_f64_s(uint64_t a, uint64_t *out)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
        *out = (uint64_t)(int64_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}
static inline int num_i64_trunc_f64_u(uint64_t a, uint64_t *out)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -1.0 && x < 18446744073709551616.0)) {
        *out = (uint64_t)x;
        return NUMERIC_TRAP_NONE;
    }
    return x != x ? NUMERIC_TRAP_INVALID_CONVERSION : NUMERIC_TRAP_OVERFLOW;
}

/* Saturating truncation: NaN -> 0, out of range clamps to the type's min/max.
 * The in-range test is the same as above; the cold path picks the clamp
 * (both comparisons are false for NaN, giving 0). */
static inline uint32_t num_i32_trunc_sat_f32_s(uint32_t a)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x >= -2147483648.0f && x < 2147483648.0f)) return (uint32_t)(int32_t)x;
    return x < 0.0f ? 0x80000000u : x > 0.0f ? 0x7fffffffu : 0u;
}
static inline uint32_t num_i32_trunc_sat_f32_u(uint32_t a)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x > -1.0f && x < 4294967296.0f)) return (uint32_t)x;
    return x > 0.0f ? 0xffffffffu : 0u;
}
static inline uint32_t num_i32_trunc_sat_f64_s(uint64_t a)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -2147483649.0 && x < 2147483648.0)) return (uint32_t)(int32_t)x;
    return x < 0.0 ? 0x80000000u : x > 0.0 ? 0x7fffffffu : 0u;
}
static inline uint32_t num_i32_trunc_sat_f64_u(uint64_t a)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -1.0 && x < 4294967296.0)) return (uint32_t)x;
    return x > 0.0 ? 0xffffffffu : 0u;
}
static inline uint64_t num_i64_trunc_sat_f32_s(uint32_t a)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x >= -9223372036854775808.0f && x < 9223372036854775808.0f))
        return (uint64_t)(int64_t)x;
    return x < 0.0f ? 0x8000000000000000ull : x > 0.0f ? 0x7fffffffffffffffull : 0u;
}
static inline uint64_t num_i64_trunc_sat_f32_u(uint32_t a)
{
    float x = num_f32_to_float(a);
    if (NUM_LIKELY(x > -1.0f && x < 18446744073709551616.0f)) return (uint64_t)x;
    return x > 0.0f ? 0xffffffffffffffffull : 0u;
}
static inline uint64_t num_i64_trunc_sat_f64_s(uint64_t a)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
        return (uint64_t)(int64_t)x;
    return x < 0.0 ? 0x8000000000000000ull : x > 0.0 ? 0x7fffffffffffffffull : 0u;
}
static inline uint64_t num_i64_trunc_sat_f64_u(uint64_t a)
{
    double x = num_f64_to_float(a);
    if (NUM_LIKELY(x > -1.0 && x < 18446744073709551616.0)) return (uint64_t)x;
    return x > 0.0 ? 0xffffffffffffffffull : 0u;
}

/* int -> float: C conversions round correctly (round-to-nearest-even) in one
 * step on x86_64 (cvtsi2ss/sd; gcc and clang lower unsigned 64-bit sources
 * with the halve-and-keep-sticky-bit sequence, which is not double rounding);
 * test_numeric.c checks this against an integer reference. */
static inline uint32_t num_f32_convert_i32_s(uint32_t a) { return num_f32_from_float((float)(int32_t)a); }
static inline uint32_t num_f32_convert_i32_u(uint32_t a) { return num_f32_from_float((float)a); }
static inline uint32_t num_f32_convert_i64_s(uint64_t a) { return num_f32_from_float((float)(int64_t)a); }
static inline uint32_t num_f32_convert_i64_u(uint64_t a) { return num_f32_from_float((float)a); }
static inline uint64_t num_f64_convert_i32_s(uint32_t a) { return num_f64_from_float((double)(int32_t)a); }
static inline uint64_t num_f64_convert_i32_u(uint32_t a) { return num_f64_from_float((double)a); }
static inline uint64_t num_f64_convert_i64_s(uint64_t a) { return num_f64_from_float((double)(int64_t)a); }
static inline uint64_t num_f64_convert_i64_u(uint64_t a) { return num_f64_from_float((double)a); }

/* demote/promote: hardware conversion; a NaN input yields a quiet NaN with
 * the payload truncated/extended (canonical stays canonical). */
static inline uint32_t num_f32_demote_f64(uint64_t a) { return num_f32_from_float((float)num_f64_to_float(a)); }
static inline uint64_t num_f64_promote_f32(uint32_t a) { return num_f64_from_float((double)num_f32_to_float(a)); }

/* Reinterpretations: the identity on the bits. */
static inline uint32_t num_i32_reinterpret_f32(uint32_t a) { return a; }
static inline uint64_t num_i64_reinterpret_f64(uint64_t a) { return a; }
static inline uint32_t num_f32_reinterpret_i32(uint32_t a) { return a; }
static inline uint64_t num_f64_reinterpret_i64(uint64_t a) { return a; }

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif /* AIRLOCK_ENGINE_NUMERIC_H */
