/*
 * test_numeric.c — unit tests for src/engine/numeric.h (wasm numeric
 * semantics, spec §4.3). Edge cases are taken from the spec testsuite
 * (i32.wast, i64.wast, f32.wast, f64.wast, f32_bitwise.wast, f32_cmp.wast,
 * conversions.wast, float_misc.wast) plus randomized cross-checks of the
 * rounding and int->float conversions against independent references.
 *
 * Every operand is passed through L32/L64 (a volatile round trip) so the
 * compiler cannot constant-fold an operation: we test the run-time code the
 * interpreter executes, not the compiler's folding.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "numeric.h"

/* ---- helpers ------------------------------------------------------------ */

static uint32_t L32(uint32_t x)
{
    volatile uint32_t v = x;
    return v;
}
static uint64_t L64(uint64_t x)
{
    volatile uint64_t v = x;
    return v;
}

/* Exact bits of a float/double literal (hex float literals are exact). */
static uint32_t F(float f) { return num_f32_from_float(f); }
static uint64_t D(double d) { return num_f64_from_float(d); }

#define CHECK(got, want)                                                                  \
    do {                                                                                  \
        uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                             \
        if (g_ != w_)                                                                     \
            fail_msg("line %d: %s = 0x%llx, want 0x%llx", __LINE__, #got,                 \
                     (unsigned long long)g_, (unsigned long long)w_);                     \
    } while (0)

#define CHECK_TRAP(call, want)                                                            \
    do {                                                                                  \
        int t_ = (call);                                                                  \
        if (t_ != (want))                                                                 \
            fail_msg("line %d: %s returned trap %d, want %d", __LINE__, #call, t_,        \
                     (int)(want));                                                        \
    } while (0)

/* A canonical NaN of either sign. */
#define CHECK_CANON32(got)                                                                \
    do {                                                                                  \
        uint32_t g_ = (got);                                                              \
        if ((g_ & 0x7fffffffu) != 0x7fc00000u)                                            \
            fail_msg("line %d: %s = 0x%x, want canonical NaN", __LINE__, #got, g_);       \
    } while (0)
#define CHECK_CANON64(got)                                                                \
    do {                                                                                  \
        uint64_t g_ = (got);                                                              \
        if ((g_ & 0x7fffffffffffffffull) != 0x7ff8000000000000ull)                        \
            fail_msg("line %d: %s = 0x%llx, want canonical NaN", __LINE__, #got,          \
                     (unsigned long long)g_);                                             \
    } while (0)
/* An arithmetic NaN: a NaN with the quiet bit set. */
#define CHECK_ARITH32(got)                                                                \
    do {                                                                                  \
        uint32_t g_ = (got);                                                              \
        if ((g_ & 0x7fc00000u) != 0x7fc00000u)                                            \
            fail_msg("line %d: %s = 0x%x, want arithmetic NaN", __LINE__, #got, g_);      \
    } while (0)
#define CHECK_ARITH64(got)                                                                \
    do {                                                                                  \
        uint64_t g_ = (got);                                                              \
        if ((g_ & 0x7ff8000000000000ull) != 0x7ff8000000000000ull)                        \
            fail_msg("line %d: %s = 0x%llx, want arithmetic NaN", __LINE__, #got,         \
                     (unsigned long long)g_);                                             \
    } while (0)

/* Trap-free call of a trapping op: asserts success, yields the result. */
#define OK32(fn, ...) ok32_(fn(__VA_ARGS__, &o32_), &o32_, __LINE__, #fn)
#define OK64(fn, ...) ok64_(fn(__VA_ARGS__, &o64_), &o64_, __LINE__, #fn)
static uint32_t o32_;
static uint64_t o64_;
static uint32_t ok32_(int t, const uint32_t *v, int line, const char *fn)
{
    if (t != 0) fail_msg("line %d: %s trapped (%d), want a result", line, fn, t);
    return *v;
}
static uint64_t ok64_(int t, const uint64_t *v, int line, const char *fn)
{
    if (t != 0) fail_msg("line %d: %s trapped (%d), want a result", line, fn, t);
    return *v;
}
/* Trapping call: asserts the trap code and that *out was left untouched. */
#define TRAPS32(fn, want, ...)                                                            \
    do {                                                                                  \
        uint32_t out_ = 0xa5a5a5a5u;                                                      \
        CHECK_TRAP(fn(__VA_ARGS__, &out_), want);                                         \
        CHECK(out_, 0xa5a5a5a5u);                                                         \
    } while (0)
#define TRAPS64(fn, want, ...)                                                            \
    do {                                                                                  \
        uint64_t out_ = 0xa5a5a5a5a5a5a5a5ull;                                            \
        CHECK_TRAP(fn(__VA_ARGS__, &out_), want);                                         \
        CHECK(out_, 0xa5a5a5a5a5a5a5a5ull);                                               \
    } while (0)

/* Deterministic PRNG (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* Frequently used bit patterns. */
#define P0_32 0x00000000u        /* +0 */
#define N0_32 0x80000000u        /* -0 */
#define PINF32 0x7f800000u
#define NINF32 0xff800000u
#define CNAN32 0x7fc00000u       /* nan (canonical) */
#define NCNAN32 0xffc00000u      /* -nan */
#define SNAN32 0x7fa00000u       /* nan:0x200000 (signalling) */
#define NSNAN32 0xffa00000u      /* -nan:0x200000 */
#define P0_64 0x0000000000000000ull
#define N0_64 0x8000000000000000ull
#define PINF64 0x7ff0000000000000ull
#define NINF64 0xfff0000000000000ull
#define CNAN64 0x7ff8000000000000ull
#define NCNAN64 0xfff8000000000000ull
#define SNAN64 0x7ff4000000000000ull     /* nan:0x4000000000000 */
#define NSNAN64 0xfff4000000000000ull

/* ---- integer: bit counting ---------------------------------------------- */

static void test_i32_bitcount(void **state)
{
    CHECK(num_i32_clz(L32(0xffffffffu)), 0);
    CHECK(num_i32_clz(L32(0)), 32);
    CHECK(num_i32_clz(L32(0x00008000u)), 16);
    CHECK(num_i32_clz(L32(0xff)), 24);
    CHECK(num_i32_clz(L32(0x80000000u)), 0);
    CHECK(num_i32_clz(L32(1)), 31);
    CHECK(num_i32_clz(L32(2)), 30);
    CHECK(num_i32_clz(L32(0x7fffffffu)), 1);

    CHECK(num_i32_ctz(L32(0xffffffffu)), 0);
    CHECK(num_i32_ctz(L32(0)), 32);
    CHECK(num_i32_ctz(L32(0x00008000u)), 15);
    CHECK(num_i32_ctz(L32(0x00010000u)), 16);
    CHECK(num_i32_ctz(L32(0x80000000u)), 31);
    CHECK(num_i32_ctz(L32(0x7fffffffu)), 0);

    CHECK(num_i32_popcnt(L32(0xffffffffu)), 32);
    CHECK(num_i32_popcnt(L32(0)), 0);
    CHECK(num_i32_popcnt(L32(0x00008000u)), 1);
    CHECK(num_i32_popcnt(L32(0x80008000u)), 2);
    CHECK(num_i32_popcnt(L32(0x7fffffffu)), 31);
    CHECK(num_i32_popcnt(L32(0xaaaaaaaau)), 16);
    CHECK(num_i32_popcnt(L32(0x55555555u)), 16);
    CHECK(num_i32_popcnt(L32(0xdeadbeefu)), 24);
}

static void test_i64_bitcount(void **state)
{
    CHECK(num_i64_clz(L64(0xffffffffffffffffull)), 0);
    CHECK(num_i64_clz(L64(0)), 64);
    CHECK(num_i64_clz(L64(0x00008000)), 48);
    CHECK(num_i64_clz(L64(0xff)), 56);
    CHECK(num_i64_clz(L64(0x8000000000000000ull)), 0);
    CHECK(num_i64_clz(L64(1)), 63);
    CHECK(num_i64_clz(L64(2)), 62);
    CHECK(num_i64_clz(L64(0x7fffffffffffffffull)), 1);
    CHECK(num_i64_clz(L64(0x100000000ull)), 31);

    CHECK(num_i64_ctz(L64(0xffffffffffffffffull)), 0);
    CHECK(num_i64_ctz(L64(0)), 64);
    CHECK(num_i64_ctz(L64(0x00008000)), 15);
    CHECK(num_i64_ctz(L64(0x00010000)), 16);
    CHECK(num_i64_ctz(L64(0x8000000000000000ull)), 63);
    CHECK(num_i64_ctz(L64(0x7fffffffffffffffull)), 0);
    CHECK(num_i64_ctz(L64(0x100000000ull)), 32);

    CHECK(num_i64_popcnt(L64(0xffffffffffffffffull)), 64);
    CHECK(num_i64_popcnt(L64(0)), 0);
    CHECK(num_i64_popcnt(L64(0x00008000)), 1);
    CHECK(num_i64_popcnt(L64(0x8000800080008000ull)), 4);
    CHECK(num_i64_popcnt(L64(0x7fffffffffffffffull)), 63);
    CHECK(num_i64_popcnt(L64(0xaaaaaaaa55555555ull)), 32);
    CHECK(num_i64_popcnt(L64(0x99999999aaaaaaaaull)), 32);
    CHECK(num_i64_popcnt(L64(0xdeadbeefdeadbeefull)), 48);
}

/* ---- integer: arithmetic, shifts, rotates --------------------------------- */

static void test_i32_arith_shift_rot(void **state)
{
    CHECK(num_i32_add(L32(0x7fffffffu), L32(1)), 0x80000000u);
    CHECK(num_i32_add(L32(0x80000000u), L32(0x80000000u)), 0);
    CHECK(num_i32_sub(L32(0x80000000u), L32(1)), 0x7fffffffu);
    CHECK(num_i32_sub(L32(0x7fffffffu), L32(0xffffffffu)), 0x80000000u);
    CHECK(num_i32_mul(L32(0x01234567u), L32(0x76543210u)), 0x358e7470u);
    CHECK(num_i32_mul(L32(0x80000000u), L32(0xffffffffu)), 0x80000000u);
    CHECK(num_i32_mul(L32(0x7fffffffu), L32(0xffffffffu)), 0x80000001u);
    CHECK(num_i32_and(L32(0xf0f0ffffu), L32(0xfffff0f0u)), 0xf0f0f0f0u);
    CHECK(num_i32_or(L32(0xf0f0ffffu), L32(0xfffff0f0u)), 0xffffffffu);
    CHECK(num_i32_xor(L32(0xf0f0ffffu), L32(0xfffff0f0u)), 0x0f0f0f0fu);

    /* shift counts are taken mod 32 */
    CHECK(num_i32_shl(L32(1), L32(1)), 2);
    CHECK(num_i32_shl(L32(0x7fffffffu), L32(1)), 0xfffffffeu);
    CHECK(num_i32_shl(L32(0x40000000u), L32(1)), 0x80000000u);
    CHECK(num_i32_shl(L32(1), L32(31)), 0x80000000u);
    CHECK(num_i32_shl(L32(1), L32(32)), 1);
    CHECK(num_i32_shl(L32(1), L32(33)), 2);
    CHECK(num_i32_shl(L32(1), L32(0xffffffffu)), 0x80000000u);
    CHECK(num_i32_shl(L32(1), L32(0x7fffffffu)), 0x80000000u);

    CHECK(num_i32_shr_s(L32(1), L32(1)), 0);
    CHECK(num_i32_shr_s(L32(0xffffffffu), L32(1)), 0xffffffffu);
    CHECK(num_i32_shr_s(L32(0x7fffffffu), L32(1)), 0x3fffffffu);
    CHECK(num_i32_shr_s(L32(0x80000000u), L32(1)), 0xc0000000u);
    CHECK(num_i32_shr_s(L32(0x40000000u), L32(1)), 0x20000000u);
    CHECK(num_i32_shr_s(L32(1), L32(32)), 1);
    CHECK(num_i32_shr_s(L32(1), L32(33)), 0);
    CHECK(num_i32_shr_s(L32(1), L32(0xffffffffu)), 0);
    CHECK(num_i32_shr_s(L32(0x80000000u), L32(31)), 0xffffffffu);
    CHECK(num_i32_shr_s(L32(0xffffffffu), L32(32)), 0xffffffffu);
    CHECK(num_i32_shr_s(L32(0xffffffffu), L32(0x80000000u)), 0xffffffffu);

    CHECK(num_i32_shr_u(L32(1), L32(1)), 0);
    CHECK(num_i32_shr_u(L32(0xffffffffu), L32(1)), 0x7fffffffu);
    CHECK(num_i32_shr_u(L32(0x80000000u), L32(1)), 0x40000000u);
    CHECK(num_i32_shr_u(L32(1), L32(32)), 1);
    CHECK(num_i32_shr_u(L32(1), L32(33)), 0);
    CHECK(num_i32_shr_u(L32(0x80000000u), L32(31)), 1);
    CHECK(num_i32_shr_u(L32(0xffffffffu), L32(32)), 0xffffffffu);
    CHECK(num_i32_shr_u(L32(0xffffffffu), L32(33)), 0x7fffffffu);
    CHECK(num_i32_shr_u(L32(0xffffffffu), L32(0xffffffffu)), 1);

    CHECK(num_i32_rotl(L32(1), L32(1)), 2);
    CHECK(num_i32_rotl(L32(1), L32(0)), 1);
    CHECK(num_i32_rotl(L32(0xffffffffu), L32(1)), 0xffffffffu);
    CHECK(num_i32_rotl(L32(1), L32(32)), 1);
    CHECK(num_i32_rotl(L32(0xabcd9876u), L32(1)), 0x579b30edu);
    CHECK(num_i32_rotl(L32(0xfe00dc00u), L32(4)), 0xe00dc00fu);
    CHECK(num_i32_rotl(L32(0xb0c1d2e3u), L32(5)), 0x183a5c76u);
    CHECK(num_i32_rotl(L32(0x00008000u), L32(37)), 0x00100000u);
    CHECK(num_i32_rotl(L32(0xb0c1d2e3u), L32(0xff05)), 0x183a5c76u);
    CHECK(num_i32_rotl(L32(0x769abcdfu), L32(0xffffffedu)), 0x579beed3u);
    CHECK(num_i32_rotl(L32(0x769abcdfu), L32(0x8000000du)), 0x579beed3u);
    CHECK(num_i32_rotl(L32(1), L32(31)), 0x80000000u);
    CHECK(num_i32_rotl(L32(0x80000000u), L32(1)), 1);

    CHECK(num_i32_rotr(L32(1), L32(1)), 0x80000000u);
    CHECK(num_i32_rotr(L32(1), L32(0)), 1);
    CHECK(num_i32_rotr(L32(0xffffffffu), L32(1)), 0xffffffffu);
    CHECK(num_i32_rotr(L32(1), L32(32)), 1);
    CHECK(num_i32_rotr(L32(0xff00cc00u), L32(1)), 0x7f806600u);
    CHECK(num_i32_rotr(L32(0x00080000u), L32(4)), 0x00008000u);
    CHECK(num_i32_rotr(L32(0xb0c1d2e3u), L32(5)), 0x1d860e97u);
    CHECK(num_i32_rotr(L32(0x00008000u), L32(37)), 0x00000400u);
    CHECK(num_i32_rotr(L32(0xb0c1d2e3u), L32(0xff05)), 0x1d860e97u);
    CHECK(num_i32_rotr(L32(0x769abcdfu), L32(0xffffffedu)), 0xe6fbb4d5u);
    CHECK(num_i32_rotr(L32(0x769abcdfu), L32(0x8000000du)), 0xe6fbb4d5u);
    CHECK(num_i32_rotr(L32(1), L32(31)), 2);
    CHECK(num_i32_rotr(L32(0x80000000u), L32(31)), 1);
}

static void test_i64_arith_shift_rot(void **state)
{
    CHECK(num_i64_add(L64(0x7fffffffffffffffull), L64(1)), 0x8000000000000000ull);
    CHECK(num_i64_sub(L64(0x8000000000000000ull), L64(1)), 0x7fffffffffffffffull);
    CHECK(num_i64_mul(L64(0x0123456789abcdefull), L64(0xfedcba9876543210ull)), 0x2236d88fe5618cf0ull);
    CHECK(num_i64_mul(L64(0x8000000000000000ull), L64(0xffffffffffffffffull)), 0x8000000000000000ull);
    CHECK(num_i64_and(L64(0xf0f0ffffull), L64(0xfffff0f0ull)), 0xf0f0f0f0ull);
    CHECK(num_i64_or(L64(0xf0f0ffffull), L64(0xfffff0f0ull)), 0xffffffffull);
    CHECK(num_i64_xor(L64(0xffffffffffffffffull), L64(0x7fffffffffffffffull)), 0x8000000000000000ull);

    CHECK(num_i64_shl(L64(1), L64(63)), 0x8000000000000000ull);
    CHECK(num_i64_shl(L64(1), L64(64)), 1);
    CHECK(num_i64_shl(L64(1), L64(65)), 2);
    CHECK(num_i64_shl(L64(1), L64(0xffffffffffffffffull)), 0x8000000000000000ull);
    CHECK(num_i64_shl(L64(1), L64(0x7fffffffffffffffull)), 0x8000000000000000ull);
    CHECK(num_i64_shl(L64(1), L64(32)), 0x100000000ull);

    CHECK(num_i64_shr_s(L64(0x8000000000000000ull), L64(1)), 0xc000000000000000ull);
    CHECK(num_i64_shr_s(L64(1), L64(64)), 1);
    CHECK(num_i64_shr_s(L64(1), L64(65)), 0);
    CHECK(num_i64_shr_s(L64(1), L64(0xffffffffffffffffull)), 0);
    CHECK(num_i64_shr_s(L64(0x8000000000000000ull), L64(63)), 0xffffffffffffffffull);
    CHECK(num_i64_shr_s(L64(0xffffffffffffffffull), L64(64)), 0xffffffffffffffffull);
    CHECK(num_i64_shr_s(L64(0xffffffffffffffffull), L64(0x8000000000000000ull)), 0xffffffffffffffffull);

    CHECK(num_i64_shr_u(L64(0xffffffffffffffffull), L64(1)), 0x7fffffffffffffffull);
    CHECK(num_i64_shr_u(L64(1), L64(64)), 1);
    CHECK(num_i64_shr_u(L64(1), L64(65)), 0);
    CHECK(num_i64_shr_u(L64(0x8000000000000000ull), L64(63)), 1);
    CHECK(num_i64_shr_u(L64(0xffffffffffffffffull), L64(65)), 0x7fffffffffffffffull);
    CHECK(num_i64_shr_u(L64(0xffffffffffffffffull), L64(0xffffffffffffffffull)), 1);

    CHECK(num_i64_rotl(L64(1), L64(1)), 2);
    CHECK(num_i64_rotl(L64(1), L64(0)), 1);
    CHECK(num_i64_rotl(L64(1), L64(64)), 1);
    CHECK(num_i64_rotl(L64(0xabcd987602468aceull), L64(1)), 0x579b30ec048d159dull);
    CHECK(num_i64_rotl(L64(0xfe000000dc000000ull), L64(4)), 0xe000000dc000000full);
    CHECK(num_i64_rotl(L64(0xabcd1234ef567809ull), L64(53)), 0x013579a2469deacfull);
    CHECK(num_i64_rotl(L64(0xabd1234ef567809cull), L64(63)), 0x55e891a77ab3c04eull);
    CHECK(num_i64_rotl(L64(0xabcd1234ef567809ull), L64(0xf5)), 0x013579a2469deacfull);
    CHECK(num_i64_rotl(L64(0xabcd7294ef567809ull), L64(0xffffffffffffffedull)), 0xcf013579ae529deaull);
    CHECK(num_i64_rotl(L64(0xabd1234ef567809cull), L64(0x800000000000003full)), 0x55e891a77ab3c04eull);
    CHECK(num_i64_rotl(L64(1), L64(63)), 0x8000000000000000ull);
    CHECK(num_i64_rotl(L64(0x8000000000000000ull), L64(1)), 1);

    CHECK(num_i64_rotr(L64(1), L64(1)), 0x8000000000000000ull);
    CHECK(num_i64_rotr(L64(1), L64(0)), 1);
    CHECK(num_i64_rotr(L64(1), L64(64)), 1);
    CHECK(num_i64_rotr(L64(0xabcd987602468aceull), L64(1)), 0x55e6cc3b01234567ull);
    CHECK(num_i64_rotr(L64(0xabcd1234ef567809ull), L64(53)), 0x6891a77ab3c04d5eull);
    CHECK(num_i64_rotr(L64(0xabd1234ef567809cull), L64(63)), 0x57a2469deacf0139ull);
    CHECK(num_i64_rotr(L64(0xabcd7294ef567809ull), L64(0xffffffffffffffedull)), 0x94a77ab3c04d5e6bull);
    CHECK(num_i64_rotr(L64(0xabd1234ef567809cull), L64(0x800000000000003full)), 0x57a2469deacf0139ull);
    CHECK(num_i64_rotr(L64(1), L64(63)), 2);
    CHECK(num_i64_rotr(L64(0x8000000000000000ull), L64(63)), 1);
}

/* ---- integer: division --------------------------------------------------- */

static void test_i32_div_rem(void **state)
{
    TRAPS32(num_i32_div_s, NUMERIC_TRAP_DIV_ZERO, L32(1), L32(0));
    TRAPS32(num_i32_div_s, NUMERIC_TRAP_DIV_ZERO, L32(0), L32(0));
    TRAPS32(num_i32_div_s, NUMERIC_TRAP_DIV_ZERO, L32(0x80000000u), L32(0));
    TRAPS32(num_i32_div_s, NUMERIC_TRAP_OVERFLOW, L32(0x80000000u), L32(0xffffffffu));
    CHECK(OK32(num_i32_div_s, L32(1), L32(1)), 1);
    CHECK(OK32(num_i32_div_s, L32(0), L32(1)), 0);
    CHECK(OK32(num_i32_div_s, L32(0), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_div_s, L32(0xffffffffu), L32(0xffffffffu)), 1);
    CHECK(OK32(num_i32_div_s, L32(0x80000000u), L32(2)), 0xc0000000u);
    CHECK(OK32(num_i32_div_s, L32(0x80000001u), L32(1000)), 0xffdf3b65u);
    CHECK(OK32(num_i32_div_s, L32(5), L32(2)), 2);
    CHECK(OK32(num_i32_div_s, L32((uint32_t)-5), L32(2)), (uint32_t)-2);
    CHECK(OK32(num_i32_div_s, L32(5), L32((uint32_t)-2)), (uint32_t)-2);
    CHECK(OK32(num_i32_div_s, L32((uint32_t)-5), L32((uint32_t)-2)), 2);
    CHECK(OK32(num_i32_div_s, L32(7), L32(3)), 2);
    CHECK(OK32(num_i32_div_s, L32((uint32_t)-7), L32(3)), (uint32_t)-2);
    CHECK(OK32(num_i32_div_s, L32(7), L32((uint32_t)-3)), (uint32_t)-2);
    CHECK(OK32(num_i32_div_s, L32((uint32_t)-7), L32((uint32_t)-3)), 2);
    CHECK(OK32(num_i32_div_s, L32(0x7fffffffu), L32(0xffffffffu)), 0x80000001u);

    TRAPS32(num_i32_div_u, NUMERIC_TRAP_DIV_ZERO, L32(1), L32(0));
    TRAPS32(num_i32_div_u, NUMERIC_TRAP_DIV_ZERO, L32(0), L32(0));
    CHECK(OK32(num_i32_div_u, L32(0x80000000u), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_div_u, L32(0x80000000u), L32(2)), 0x40000000u);
    CHECK(OK32(num_i32_div_u, L32(0x8ff00ff0u), L32(0x10001u)), 0x8fef);
    CHECK(OK32(num_i32_div_u, L32(0x80000001u), L32(1000)), 0x20c49b);
    CHECK(OK32(num_i32_div_u, L32((uint32_t)-5), L32(2)), 0x7ffffffdu);
    CHECK(OK32(num_i32_div_u, L32(5), L32((uint32_t)-2)), 0);
    CHECK(OK32(num_i32_div_u, L32(0xffffffffu), L32(0xffffffffu)), 1);

    TRAPS32(num_i32_rem_s, NUMERIC_TRAP_DIV_ZERO, L32(1), L32(0));
    TRAPS32(num_i32_rem_s, NUMERIC_TRAP_DIV_ZERO, L32(0), L32(0));
    /* INT_MIN % -1 is 0, not a trap */
    CHECK(OK32(num_i32_rem_s, L32(0x80000000u), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_rem_s, L32(0x7fffffffu), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_rem_s, L32(1), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_rem_s, L32(0xffffffffu), L32(0xffffffffu)), 0);
    CHECK(OK32(num_i32_rem_s, L32(0x80000000u), L32(2)), 0);
    CHECK(OK32(num_i32_rem_s, L32(0x80000001u), L32(1000)), (uint32_t)-647);
    CHECK(OK32(num_i32_rem_s, L32(5), L32(2)), 1);
    CHECK(OK32(num_i32_rem_s, L32((uint32_t)-5), L32(2)), (uint32_t)-1);
    CHECK(OK32(num_i32_rem_s, L32(5), L32((uint32_t)-2)), 1);
    CHECK(OK32(num_i32_rem_s, L32((uint32_t)-5), L32((uint32_t)-2)), (uint32_t)-1);
    CHECK(OK32(num_i32_rem_s, L32((uint32_t)-7), L32(3)), (uint32_t)-1);
    CHECK(OK32(num_i32_rem_s, L32(7), L32((uint32_t)-3)), 1);

    TRAPS32(num_i32_rem_u, NUMERIC_TRAP_DIV_ZERO, L32(1), L32(0));
    TRAPS32(num_i32_rem_u, NUMERIC_TRAP_DIV_ZERO, L32(0), L32(0));
    CHECK(OK32(num_i32_rem_u, L32(0x80000000u), L32(0xffffffffu)), 0x80000000u);
    CHECK(OK32(num_i32_rem_u, L32(0x8ff00ff0u), L32(0x10001u)), 0x8001);
    CHECK(OK32(num_i32_rem_u, L32(0x80000001u), L32(1000)), 649);
    CHECK(OK32(num_i32_rem_u, L32((uint32_t)-5), L32(2)), 1);
    CHECK(OK32(num_i32_rem_u, L32(5), L32((uint32_t)-2)), 5);
    CHECK(OK32(num_i32_rem_u, L32(0xffffffffu), L32(0xffffffffu)), 0);
}

static void test_i64_div_rem(void **state)
{
    const uint64_t MIN = 0x8000000000000000ull, M1 = 0xffffffffffffffffull;
    TRAPS64(num_i64_div_s, NUMERIC_TRAP_DIV_ZERO, L64(1), L64(0));
    TRAPS64(num_i64_div_s, NUMERIC_TRAP_DIV_ZERO, L64(0), L64(0));
    TRAPS64(num_i64_div_s, NUMERIC_TRAP_DIV_ZERO, L64(MIN), L64(0));
    TRAPS64(num_i64_div_s, NUMERIC_TRAP_OVERFLOW, L64(MIN), L64(M1));
    CHECK(OK64(num_i64_div_s, L64(MIN), L64(2)), 0xc000000000000000ull);
    CHECK(OK64(num_i64_div_s, L64(0x8000000000000001ull), L64(1000)), 0xffdf3b645a1cac09ull);
    CHECK(OK64(num_i64_div_s, L64((uint64_t)-7), L64(3)), (uint64_t)-2);
    CHECK(OK64(num_i64_div_s, L64(7), L64((uint64_t)-3)), (uint64_t)-2);
    CHECK(OK64(num_i64_div_s, L64(0x7fffffffffffffffull), L64(M1)), 0x8000000000000001ull);
    CHECK(OK64(num_i64_div_s, L64(M1), L64(M1)), 1);

    TRAPS64(num_i64_div_u, NUMERIC_TRAP_DIV_ZERO, L64(1), L64(0));
    TRAPS64(num_i64_div_u, NUMERIC_TRAP_DIV_ZERO, L64(0), L64(0));
    CHECK(OK64(num_i64_div_u, L64(MIN), L64(M1)), 0);
    CHECK(OK64(num_i64_div_u, L64(MIN), L64(2)), 0x4000000000000000ull);
    CHECK(OK64(num_i64_div_u, L64(0x8ff00ff00ff00ff0ull), L64(0x100000001ull)), 0x8ff00fefull);
    CHECK(OK64(num_i64_div_u, L64(0x8000000000000001ull), L64(1000)), 0x20c49ba5e353f7ull);
    CHECK(OK64(num_i64_div_u, L64((uint64_t)-5), L64(2)), 0x7ffffffffffffffdull);

    TRAPS64(num_i64_rem_s, NUMERIC_TRAP_DIV_ZERO, L64(1), L64(0));
    TRAPS64(num_i64_rem_s, NUMERIC_TRAP_DIV_ZERO, L64(0), L64(0));
    CHECK(OK64(num_i64_rem_s, L64(MIN), L64(M1)), 0);
    CHECK(OK64(num_i64_rem_s, L64(0x7fffffffffffffffull), L64(M1)), 0);
    CHECK(OK64(num_i64_rem_s, L64(MIN), L64(2)), 0);
    CHECK(OK64(num_i64_rem_s, L64(0x8000000000000001ull), L64(1000)), (uint64_t)-807);
    CHECK(OK64(num_i64_rem_s, L64((uint64_t)-7), L64(3)), (uint64_t)-1);
    CHECK(OK64(num_i64_rem_s, L64(7), L64((uint64_t)-3)), 1);
    CHECK(OK64(num_i64_rem_s, L64((uint64_t)-5), L64((uint64_t)-2)), (uint64_t)-1);

    TRAPS64(num_i64_rem_u, NUMERIC_TRAP_DIV_ZERO, L64(1), L64(0));
    TRAPS64(num_i64_rem_u, NUMERIC_TRAP_DIV_ZERO, L64(0), L64(0));
    CHECK(OK64(num_i64_rem_u, L64(MIN), L64(M1)), MIN);
    CHECK(OK64(num_i64_rem_u, L64(0x8ff00ff00ff00ff0ull), L64(0x100000001ull)), 0x80000001ull);
    CHECK(OK64(num_i64_rem_u, L64(0x8000000000000001ull), L64(1000)), 809);
    CHECK(OK64(num_i64_rem_u, L64(5), L64((uint64_t)-2)), 5);
}

/* ---- integer: comparisons and sign extension ---------------------------- */

static void test_int_compare_extend(void **state)
{
    CHECK(num_i32_eqz(L32(0)), 1);
    CHECK(num_i32_eqz(L32(0x80000000u)), 0);
    CHECK(num_i32_eq(L32(0x80000000u), L32(0x80000000u)), 1);
    CHECK(num_i32_ne(L32(0x80000000u), L32(0x7fffffffu)), 1);
    CHECK(num_i32_lt_s(L32(0x80000000u), L32(0x7fffffffu)), 1);
    CHECK(num_i32_lt_u(L32(0x80000000u), L32(0x7fffffffu)), 0);
    CHECK(num_i32_lt_s(L32(0xffffffffu), L32(0)), 1);
    CHECK(num_i32_lt_u(L32(0xffffffffu), L32(0)), 0);
    CHECK(num_i32_gt_s(L32(0x7fffffffu), L32(0x80000000u)), 1);
    CHECK(num_i32_gt_u(L32(0x7fffffffu), L32(0x80000000u)), 0);
    CHECK(num_i32_le_s(L32(0x80000000u), L32(0x80000000u)), 1);
    CHECK(num_i32_le_u(L32(0x80000000u), L32(0)), 0);
    CHECK(num_i32_ge_s(L32(0), L32(0xffffffffu)), 1);
    CHECK(num_i32_ge_u(L32(0), L32(0xffffffffu)), 0);

    CHECK(num_i64_eqz(L64(0)), 1);
    CHECK(num_i64_eqz(L64(0x100000000ull)), 0);
    CHECK(num_i64_eq(L64(0x100000000ull), L64(0)), 0);
    CHECK(num_i64_ne(L64(0x100000000ull), L64(0)), 1);
    CHECK(num_i64_lt_s(L64(0x8000000000000000ull), L64(0x7fffffffffffffffull)), 1);
    CHECK(num_i64_lt_u(L64(0x8000000000000000ull), L64(0x7fffffffffffffffull)), 0);
    CHECK(num_i64_gt_s(L64(0), L64(0xffffffffffffffffull)), 1);
    CHECK(num_i64_gt_u(L64(0), L64(0xffffffffffffffffull)), 0);
    CHECK(num_i64_le_s(L64(0xffffffffffffffffull), L64(0)), 1);
    CHECK(num_i64_le_u(L64(0xffffffffffffffffull), L64(0)), 0);
    CHECK(num_i64_ge_s(L64(0x7fffffffffffffffull), L64(0x8000000000000000ull)), 1);
    CHECK(num_i64_ge_u(L64(0x7fffffffffffffffull), L64(0x8000000000000000ull)), 0);

    CHECK(num_i32_extend8_s(L32(0)), 0);
    CHECK(num_i32_extend8_s(L32(0x7f)), 127);
    CHECK(num_i32_extend8_s(L32(0x80)), 0xffffff80u);
    CHECK(num_i32_extend8_s(L32(0xff)), 0xffffffffu);
    CHECK(num_i32_extend8_s(L32(0x01234500u)), 0);
    CHECK(num_i32_extend8_s(L32(0xfedcba80u)), 0xffffff80u);
    CHECK(num_i32_extend8_s(L32(0xffffffffu)), 0xffffffffu);
    CHECK(num_i32_extend16_s(L32(0x7fff)), 32767);
    CHECK(num_i32_extend16_s(L32(0x8000)), 0xffff8000u);
    CHECK(num_i32_extend16_s(L32(0xffff)), 0xffffffffu);
    CHECK(num_i32_extend16_s(L32(0x01230000u)), 0);
    CHECK(num_i32_extend16_s(L32(0xfedc8000u)), 0xffff8000u);

    CHECK(num_i64_extend8_s(L64(0x7f)), 127);
    CHECK(num_i64_extend8_s(L64(0x80)), 0xffffffffffffff80ull);
    CHECK(num_i64_extend8_s(L64(0x0123456789abcd00ull)), 0);
    CHECK(num_i64_extend8_s(L64(0xfedcba9876543280ull)), 0xffffffffffffff80ull);
    CHECK(num_i64_extend16_s(L64(0x8000)), 0xffffffffffff8000ull);
    CHECK(num_i64_extend16_s(L64(0x0123456789ab7fffull)), 0x7fff);
    CHECK(num_i64_extend16_s(L64(0xffff)), 0xffffffffffffffffull);
    CHECK(num_i64_extend32_s(L64(0x7fffffff)), 0x7fffffff);
    CHECK(num_i64_extend32_s(L64(0x80000000ull)), 0xffffffff80000000ull);
    CHECK(num_i64_extend32_s(L64(0x0123456700000000ull)), 0);
    CHECK(num_i64_extend32_s(L64(0xfedcba9880000000ull)), 0xffffffff80000000ull);
    CHECK(num_i64_extend32_s(L64(0xffffffffull)), 0xffffffffffffffffull);

    CHECK(num_i32_wrap_i64(L64(0xffffffffffffffffull)), 0xffffffffu);
    CHECK(num_i32_wrap_i64(L64(0x8000000000000000ull)), 0);
    CHECK(num_i32_wrap_i64(L64(0x00000001fffffffeull)), 0xfffffffeu);
    CHECK(num_i32_wrap_i64(L64(0xfffffffe00000000ull)), 0);
    CHECK(num_i32_wrap_i64(L64(0x0000000100000000ull)), 0);
    CHECK(num_i32_wrap_i64(L64(0x0000000123456789ull)), 0x23456789u);
    CHECK(num_i64_extend_i32_s(L32(0x7fffffffu)), 0x7fffffffull);
    CHECK(num_i64_extend_i32_s(L32(0x80000000u)), 0xffffffff80000000ull);
    CHECK(num_i64_extend_i32_s(L32(0xffffffffu)), 0xffffffffffffffffull);
    CHECK(num_i64_extend_i32_u(L32(0x80000000u)), 0x80000000ull);
    CHECK(num_i64_extend_i32_u(L32(0xffffffffu)), 0xffffffffull);
}

/* ---- float: sign-bit operations ------------------------------------------ */

static void test_float_bitwise(void **state)
{
    /* NaN payloads (including signalling NaNs) are preserved exactly */
    CHECK(num_f32_abs(L32(NSNAN32)), SNAN32);
    CHECK(num_f32_abs(L32(NCNAN32)), CNAN32);
    CHECK(num_f32_abs(L32(0xff812345u)), 0x7f812345u);
    CHECK(num_f32_abs(L32(N0_32)), P0_32);
    CHECK(num_f32_abs(L32(NINF32)), PINF32);
    CHECK(num_f32_abs(L32(F(-0x1p-149f))), F(0x1p-149f));
    CHECK(num_f32_neg(L32(SNAN32)), NSNAN32);
    CHECK(num_f32_neg(L32(NCNAN32)), CNAN32);
    CHECK(num_f32_neg(L32(P0_32)), N0_32);
    CHECK(num_f32_neg(L32(N0_32)), P0_32);
    CHECK(num_f32_neg(L32(PINF32)), NINF32);
    CHECK(num_f32_copysign(L32(SNAN32), L32(N0_32)), NSNAN32);
    CHECK(num_f32_copysign(L32(NSNAN32), L32(P0_32)), SNAN32);
    CHECK(num_f32_copysign(L32(F(1.5f)), L32(NCNAN32)), F(-1.5f));
    CHECK(num_f32_copysign(L32(F(-1.5f)), L32(CNAN32)), F(1.5f));
    CHECK(num_f32_copysign(L32(P0_32), L32(NINF32)), N0_32);
    CHECK(num_f32_copysign(L32(NINF32), L32(F(0x1p-149f))), PINF32);

    CHECK(num_f64_abs(L64(NSNAN64)), SNAN64);
    CHECK(num_f64_abs(L64(0xfff0000000000001ull)), 0x7ff0000000000001ull);
    CHECK(num_f64_abs(L64(N0_64)), P0_64);
    CHECK(num_f64_neg(L64(SNAN64)), NSNAN64);
    CHECK(num_f64_neg(L64(0x7ff0000000000001ull)), 0xfff0000000000001ull);
    CHECK(num_f64_neg(L64(P0_64)), N0_64);
    CHECK(num_f64_copysign(L64(SNAN64), L64(N0_64)), NSNAN64);
    CHECK(num_f64_copysign(L64(NCNAN64), L64(PINF64)), CNAN64);
    CHECK(num_f64_copysign(L64(D(2.0)), L64(NSNAN64)), D(-2.0));
    CHECK(num_f64_copysign(L64(D(-0x1p-1074)), L64(D(0x1p-1074))), D(0x1p-1074));
}

/* ---- float: arithmetic ---------------------------------------------------- */

static void test_f32_arith(void **state)
{
    CHECK(num_f32_add(L32(N0_32), L32(N0_32)), N0_32);
    CHECK(num_f32_add(L32(N0_32), L32(P0_32)), P0_32);
    CHECK(num_f32_add(L32(F(0x1p-149f)), L32(F(0x1p-149f))), F(0x1p-148f));
    CHECK(num_f32_add(L32(F(0x1.fffffep+127f)), L32(F(0x1.fffffep+127f))), PINF32);
    CHECK(num_f32_add(L32(F(1.0f)), L32(F(0x1p-24f))), F(1.0f));          /* tie -> even */
    CHECK(num_f32_add(L32(F(1.0f)), L32(F(0x1.000002p-24f))), F(0x1.000002p+0f));
    CHECK_CANON32(num_f32_add(L32(NINF32), L32(PINF32)));
    CHECK_CANON32(num_f32_add(L32(CNAN32), L32(F(1.0f))));
    CHECK_CANON32(num_f32_add(L32(NCNAN32), L32(F(1.0f))));
    CHECK_ARITH32(num_f32_add(L32(SNAN32), L32(F(1.0f))));
    CHECK_ARITH32(num_f32_add(L32(F(1.0f)), L32(NSNAN32)));
    CHECK(num_f32_sub(L32(P0_32), L32(P0_32)), P0_32);
    CHECK(num_f32_sub(L32(N0_32), L32(P0_32)), N0_32);
    CHECK_CANON32(num_f32_sub(L32(PINF32), L32(PINF32)));
    CHECK_ARITH32(num_f32_sub(L32(SNAN32), L32(SNAN32)));
    CHECK(num_f32_mul(L32(N0_32), L32(F(1.0f))), N0_32);
    CHECK(num_f32_mul(L32(F(0x1p-126f)), L32(F(0x1p-23f))), F(0x1p-149f));
    CHECK(num_f32_mul(L32(F(0x1p-149f)), L32(F(0.5f))), P0_32);           /* tie -> even (0) */
    CHECK(num_f32_mul(L32(F(-0x1p-149f)), L32(F(0x1.8p-1f))), F(-0x1p-149f));
    CHECK_CANON32(num_f32_mul(L32(P0_32), L32(NINF32)));
    CHECK_ARITH32(num_f32_mul(L32(NSNAN32), L32(P0_32)));
    CHECK(num_f32_div(L32(F(1.0f)), L32(P0_32)), PINF32);
    CHECK(num_f32_div(L32(F(1.0f)), L32(N0_32)), NINF32);
    CHECK(num_f32_div(L32(F(-1.0f)), L32(PINF32)), N0_32);
    CHECK(num_f32_div(L32(F(1.0f)), L32(F(3.0f))), F(0x1.555556p-2f));
    CHECK_CANON32(num_f32_div(L32(P0_32), L32(N0_32)));
    CHECK_CANON32(num_f32_div(L32(NINF32), L32(PINF32)));
    CHECK_ARITH32(num_f32_div(L32(SNAN32), L32(F(1.0f))));
    CHECK(num_f32_sqrt(L32(N0_32)), N0_32);
    CHECK(num_f32_sqrt(L32(P0_32)), P0_32);
    CHECK(num_f32_sqrt(L32(PINF32)), PINF32);
    CHECK(num_f32_sqrt(L32(F(4.0f))), F(2.0f));
    CHECK(num_f32_sqrt(L32(F(0x1p-149f))), F(0x1.6a09e6p-75f));
    CHECK(num_f32_sqrt(L32(F(0x1.fffffep+127f))), F(0x1.fffffep+63f));
    CHECK_CANON32(num_f32_sqrt(L32(F(-1.0f))));
    CHECK_CANON32(num_f32_sqrt(L32(NINF32)));
    CHECK_CANON32(num_f32_sqrt(L32(F(-0x1p-149f))));
    CHECK_CANON32(num_f32_sqrt(L32(CNAN32)));
    CHECK_ARITH32(num_f32_sqrt(L32(SNAN32)));
    CHECK_ARITH32(num_f32_sqrt(L32(NSNAN32)));
}

static void test_f64_arith(void **state)
{
    CHECK(num_f64_add(L64(N0_64), L64(N0_64)), N0_64);
    CHECK(num_f64_add(L64(N0_64), L64(P0_64)), P0_64);
    CHECK(num_f64_add(L64(D(1.0)), L64(D(0x1p-53))), D(1.0));
    CHECK(num_f64_add(L64(D(0x1.fffffffffffffp+1023)), L64(D(0x1p+970))), PINF64);
    CHECK(num_f64_add(L64(D(0x1.fffffffffffffp+1023)), L64(D(0x1p+969))), D(0x1.fffffffffffffp+1023));
    CHECK_CANON64(num_f64_add(L64(NINF64), L64(PINF64)));
    CHECK_CANON64(num_f64_add(L64(NCNAN64), L64(D(1.0))));
    CHECK_ARITH64(num_f64_add(L64(SNAN64), L64(D(1.0))));
    CHECK(num_f64_sub(L64(N0_64), L64(P0_64)), N0_64);
    CHECK_CANON64(num_f64_sub(L64(NINF64), L64(NINF64)));
    CHECK(num_f64_mul(L64(D(0x1p-1074)), L64(D(0.5))), P0_64);
    CHECK(num_f64_mul(L64(D(-0x1p-1022)), L64(D(0x1p-52))), D(-0x1p-1074));
    CHECK_CANON64(num_f64_mul(L64(N0_64), L64(PINF64)));
    CHECK_ARITH64(num_f64_mul(L64(NSNAN64), L64(D(2.0))));
    CHECK(num_f64_div(L64(D(-1.0)), L64(P0_64)), NINF64);
    CHECK(num_f64_div(L64(D(1.0)), L64(D(3.0))), D(0x1.5555555555555p-2));
    CHECK_CANON64(num_f64_div(L64(P0_64), L64(P0_64)));
    CHECK_ARITH64(num_f64_div(L64(D(1.0)), L64(SNAN64)));
    CHECK(num_f64_sqrt(L64(N0_64)), N0_64);
    CHECK(num_f64_sqrt(L64(PINF64)), PINF64);
    CHECK(num_f64_sqrt(L64(D(0x1p-1074))), D(0x1p-537));
    CHECK(num_f64_sqrt(L64(D(2.0))), D(0x1.6a09e667f3bcdp+0));
    CHECK_CANON64(num_f64_sqrt(L64(D(-1.0))));
    CHECK_CANON64(num_f64_sqrt(L64(NINF64)));
    CHECK_ARITH64(num_f64_sqrt(L64(SNAN64)));
}

/* ---- float: min / max ----------------------------------------------------- */

static void test_f32_min_max(void **state)
{
    CHECK(num_f32_min(L32(N0_32), L32(P0_32)), N0_32);
    CHECK(num_f32_min(L32(P0_32), L32(N0_32)), N0_32);
    CHECK(num_f32_min(L32(P0_32), L32(P0_32)), P0_32);
    CHECK(num_f32_min(L32(N0_32), L32(N0_32)), N0_32);
    CHECK(num_f32_max(L32(N0_32), L32(P0_32)), P0_32);
    CHECK(num_f32_max(L32(P0_32), L32(N0_32)), P0_32);
    CHECK(num_f32_max(L32(N0_32), L32(N0_32)), N0_32);
    CHECK(num_f32_max(L32(P0_32), L32(P0_32)), P0_32);
    CHECK(num_f32_min(L32(F(1.0f)), L32(F(-1.0f))), F(-1.0f));
    CHECK(num_f32_min(L32(F(-0x1p-149f)), L32(F(0x1p-149f))), F(-0x1p-149f));
    CHECK(num_f32_max(L32(F(-0x1p-149f)), L32(F(0x1p-149f))), F(0x1p-149f));
    CHECK(num_f32_min(L32(NINF32), L32(F(-0x1.fffffep+127f))), NINF32);
    CHECK(num_f32_max(L32(NINF32), L32(PINF32)), PINF32);
    CHECK(num_f32_min(L32(F(2.5f)), L32(F(2.5f))), F(2.5f));
    CHECK(num_f32_max(L32(F(-2.5f)), L32(F(-2.5f))), F(-2.5f));
    /* any NaN operand -> NaN; canonical in, canonical out */
    CHECK_CANON32(num_f32_min(L32(CNAN32), L32(P0_32)));
    CHECK_CANON32(num_f32_min(L32(N0_32), L32(NCNAN32)));
    CHECK_CANON32(num_f32_max(L32(NCNAN32), L32(NINF32)));
    CHECK_CANON32(num_f32_max(L32(PINF32), L32(CNAN32)));
    CHECK_CANON32(num_f32_min(L32(CNAN32), L32(NCNAN32)));
    CHECK_CANON32(num_f32_max(L32(NCNAN32), L32(CNAN32)));
    CHECK_ARITH32(num_f32_min(L32(SNAN32), L32(F(1.0f))));
    CHECK_ARITH32(num_f32_min(L32(F(1.0f)), L32(NSNAN32)));
    CHECK_ARITH32(num_f32_max(L32(NSNAN32), L32(PINF32)));
    CHECK_ARITH32(num_f32_max(L32(NINF32), L32(SNAN32)));
    CHECK_ARITH32(num_f32_max(L32(SNAN32), L32(NSNAN32)));
    /* documented choice: the NaN operand, quieted (payload kept) */
    CHECK(num_f32_min(L32(0x7f812345u), L32(F(1.0f))), 0x7fc12345u);
    CHECK(num_f32_max(L32(F(1.0f)), L32(0xff812345u)), 0xffc12345u);
}

static void test_f64_min_max(void **state)
{
    CHECK(num_f64_min(L64(N0_64), L64(P0_64)), N0_64);
    CHECK(num_f64_min(L64(P0_64), L64(N0_64)), N0_64);
    CHECK(num_f64_max(L64(N0_64), L64(P0_64)), P0_64);
    CHECK(num_f64_max(L64(P0_64), L64(N0_64)), P0_64);
    CHECK(num_f64_max(L64(N0_64), L64(N0_64)), N0_64);
    CHECK(num_f64_min(L64(D(-0x1p-1074)), L64(D(0x1p-1074))), D(-0x1p-1074));
    CHECK(num_f64_max(L64(D(-0x1p-1074)), L64(D(0x1p-1074))), D(0x1p-1074));
    CHECK(num_f64_min(L64(NINF64), L64(PINF64)), NINF64);
    CHECK(num_f64_max(L64(NINF64), L64(PINF64)), PINF64);
    CHECK_CANON64(num_f64_min(L64(CNAN64), L64(P0_64)));
    CHECK_CANON64(num_f64_min(L64(N0_64), L64(NCNAN64)));
    CHECK_CANON64(num_f64_max(L64(NCNAN64), L64(PINF64)));
    CHECK_CANON64(num_f64_max(L64(NCNAN64), L64(CNAN64)));
    CHECK_ARITH64(num_f64_min(L64(SNAN64), L64(D(1.0))));
    CHECK_ARITH64(num_f64_max(L64(D(1.0)), L64(NSNAN64)));
    CHECK(num_f64_min(L64(0x7ff0000000000001ull), L64(D(1.0))), 0x7ff8000000000001ull);
}

/* ---- float: rounding to integral ----------------------------------------- */

static void test_f32_rounding(void **state)
{
    /* nearest: round half to even, sign of zero kept */
    CHECK(num_f32_nearest(L32(F(0.5f))), P0_32);
    CHECK(num_f32_nearest(L32(F(-0.5f))), N0_32);
    CHECK(num_f32_nearest(L32(F(1.5f))), F(2.0f));
    CHECK(num_f32_nearest(L32(F(2.5f))), F(2.0f));
    CHECK(num_f32_nearest(L32(F(-3.5f))), F(-4.0f));
    CHECK(num_f32_nearest(L32(F(4.5f))), F(4.0f));
    CHECK(num_f32_nearest(L32(F(-4.5f))), F(-4.0f));
    CHECK(num_f32_nearest(L32(F(1.0f))), F(1.0f));
    CHECK(num_f32_nearest(L32(F(0x1.fffffep-1f))), F(1.0f));
    CHECK(num_f32_nearest(L32(F(-0x1.fffffep-2f))), N0_32);
    CHECK(num_f32_nearest(L32(F(0x1p-149f))), P0_32);
    CHECK(num_f32_nearest(L32(F(-0x1p-149f))), N0_32);
    CHECK(num_f32_nearest(L32(F(0x1.fffffep+22f))), F(0x1p+23f)); /* 8388607.5 -> 8388608 */
    CHECK(num_f32_nearest(L32(F(0x1.fffffap+22f))), F(0x1.fffff8p+22f)); /* 8388606.5 -> ...606 */
    CHECK(num_f32_nearest(L32(F(-0x1.fffffep+22f))), F(-0x1p+23f));
    CHECK(num_f32_nearest(L32(F(0x1.000002p+23f))), F(0x1.000002p+23f));
    CHECK(num_f32_nearest(L32(F(0x1.fffffep+127f))), F(0x1.fffffep+127f));
    CHECK(num_f32_nearest(L32(P0_32)), P0_32);
    CHECK(num_f32_nearest(L32(N0_32)), N0_32);
    CHECK(num_f32_nearest(L32(PINF32)), PINF32);
    CHECK(num_f32_nearest(L32(NINF32)), NINF32);

    CHECK(num_f32_ceil(L32(F(-0.5f))), N0_32);
    CHECK(num_f32_ceil(L32(F(-0x1p-149f))), N0_32);
    CHECK(num_f32_ceil(L32(F(0x1p-149f))), F(1.0f));
    CHECK(num_f32_ceil(L32(F(0.5f))), F(1.0f));
    CHECK(num_f32_ceil(L32(F(-1.5f))), F(-1.0f));
    CHECK(num_f32_ceil(L32(F(1.0f))), F(1.0f));
    CHECK(num_f32_ceil(L32(F(-0x1.fffffep+22f))), F(-0x1.fffffcp+22f));
    CHECK(num_f32_ceil(L32(F(0x1.fffffep+22f))), F(0x1p+23f));
    CHECK(num_f32_ceil(L32(N0_32)), N0_32);
    CHECK(num_f32_ceil(L32(NINF32)), NINF32);

    CHECK(num_f32_floor(L32(F(-0.5f))), F(-1.0f));
    CHECK(num_f32_floor(L32(F(-0x1p-149f))), F(-1.0f));
    CHECK(num_f32_floor(L32(F(0x1p-149f))), P0_32);
    CHECK(num_f32_floor(L32(F(0.5f))), P0_32);
    CHECK(num_f32_floor(L32(F(1.5f))), F(1.0f));
    CHECK(num_f32_floor(L32(F(-1.0f))), F(-1.0f));
    CHECK(num_f32_floor(L32(F(-0x1.fffffep+22f))), F(-0x1p+23f));
    CHECK(num_f32_floor(L32(F(0x1.fffffep+22f))), F(0x1.fffffcp+22f));
    CHECK(num_f32_floor(L32(N0_32)), N0_32);
    CHECK(num_f32_floor(L32(PINF32)), PINF32);

    CHECK(num_f32_trunc(L32(F(-0.5f))), N0_32);
    CHECK(num_f32_trunc(L32(F(0.5f))), P0_32);
    CHECK(num_f32_trunc(L32(F(-1.5f))), F(-1.0f));
    CHECK(num_f32_trunc(L32(F(1.9f))), F(1.0f));
    CHECK(num_f32_trunc(L32(F(-0x1.fffffep+22f))), F(-0x1.fffffcp+22f));
    CHECK(num_f32_trunc(L32(F(0x1.fffffep+127f))), F(0x1.fffffep+127f));
    CHECK(num_f32_trunc(L32(N0_32)), N0_32);
    CHECK(num_f32_trunc(L32(NINF32)), NINF32);

    /* NaN in: quiet NaN out, canonical stays canonical */
    uint32_t (*const ops[4])(uint32_t) = {num_f32_ceil, num_f32_floor, num_f32_trunc,
                                          num_f32_nearest};
    for (int i = 0; i < 4; i++) {
        CHECK_CANON32(ops[i](L32(CNAN32)));
        CHECK_CANON32(ops[i](L32(NCNAN32)));
        CHECK_ARITH32(ops[i](L32(SNAN32)));
        CHECK_ARITH32(ops[i](L32(NSNAN32)));
        CHECK_ARITH32(ops[i](L32(0x7f800001u)));
    }
}

static void test_f64_rounding(void **state)
{
    CHECK(num_f64_nearest(L64(D(0.5))), P0_64);
    CHECK(num_f64_nearest(L64(D(-0.5))), N0_64);
    CHECK(num_f64_nearest(L64(D(1.5))), D(2.0));
    CHECK(num_f64_nearest(L64(D(2.5))), D(2.0));
    CHECK(num_f64_nearest(L64(D(-3.5))), D(-4.0));
    CHECK(num_f64_nearest(L64(D(4.5))), D(4.0));
    CHECK(num_f64_nearest(L64(D(0x1p-1074))), P0_64);
    CHECK(num_f64_nearest(L64(D(-0x1p-1074))), N0_64);
    CHECK(num_f64_nearest(L64(D(4503599627370495.5))), D(4503599627370496.0));
    CHECK(num_f64_nearest(L64(D(-4503599627370495.5))), D(-4503599627370496.0));
    CHECK(num_f64_nearest(L64(D(4503599627370494.5))), D(4503599627370494.0));
    CHECK(num_f64_nearest(L64(D(0x1.fffffffffffffp-2))), P0_64);
    CHECK(num_f64_nearest(L64(D(0x1.0000000000001p+52))), D(0x1.0000000000001p+52));
    CHECK(num_f64_nearest(L64(D(0x1.fffffffffffffp+1023))), D(0x1.fffffffffffffp+1023));
    CHECK(num_f64_nearest(L64(N0_64)), N0_64);
    CHECK(num_f64_nearest(L64(NINF64)), NINF64);

    CHECK(num_f64_ceil(L64(D(-0.5))), N0_64);
    CHECK(num_f64_ceil(L64(D(0x1p-1074))), D(1.0));
    CHECK(num_f64_ceil(L64(D(-0x1p-1074))), N0_64);
    CHECK(num_f64_ceil(L64(D(-1.5))), D(-1.0));
    CHECK(num_f64_ceil(L64(D(0x1.fffffffffffffp+51))), D(0x1p+52));
    CHECK(num_f64_ceil(L64(D(-0x1.fffffffffffffp+51))), D(-0x1.ffffffffffffep+51));
    CHECK(num_f64_ceil(L64(PINF64)), PINF64);
    CHECK(num_f64_floor(L64(D(-0.5))), D(-1.0));
    CHECK(num_f64_floor(L64(D(0x1p-1074))), P0_64);
    CHECK(num_f64_floor(L64(D(-0x1p-1074))), D(-1.0));
    CHECK(num_f64_floor(L64(D(0x1.fffffffffffffp+51))), D(0x1.ffffffffffffep+51));
    CHECK(num_f64_floor(L64(D(-0x1.fffffffffffffp+51))), D(-0x1p+52));
    CHECK(num_f64_floor(L64(N0_64)), N0_64);
    CHECK(num_f64_trunc(L64(D(-0.5))), N0_64);
    CHECK(num_f64_trunc(L64(D(-1.9))), D(-1.0));
    CHECK(num_f64_trunc(L64(D(0x1.fffffffffffffp+51))), D(0x1.ffffffffffffep+51));
    CHECK(num_f64_trunc(L64(D(-0x1.fffffffffffffp+51))), D(-0x1.ffffffffffffep+51));
    CHECK(num_f64_trunc(L64(NINF64)), NINF64);

    uint64_t (*const ops[4])(uint64_t) = {num_f64_ceil, num_f64_floor, num_f64_trunc,
                                          num_f64_nearest};
    for (int i = 0; i < 4; i++) {
        CHECK_CANON64(ops[i](L64(CNAN64)));
        CHECK_CANON64(ops[i](L64(NCNAN64)));
        CHECK_ARITH64(ops[i](L64(SNAN64)));
        CHECK_ARITH64(ops[i](L64(NSNAN64)));
        CHECK_ARITH64(ops[i](L64(0x7ff0000000000001ull)));
    }
}

/* Rounding vs libm on random inputs (bit patterns, and values near integers
 * and halves where rounding decisions happen). The whole f32 space was also
 * checked exhaustively against libm while developing numeric.h. */
static void test_rounding_vs_libm(void **state)
{
    for (int i = 0; i < 400000; i++) {
        uint64_t r = rnd();
        uint32_t a;
        uint64_t b;
        if (i & 1) {
            a = (uint32_t)r;
            b = r;
        } else {
            /* k or k + 0.5 (+/- 1 ulp) for k up to 2^24 / 2^53 */
            int32_t k32 = (int32_t)(r >> 40) - (1 << 23);
            float f = (float)k32 + ((r & 1) ? 0.5f : 0.0f);
            a = num_f32_from_float(f) + (uint32_t)((r >> 1) % 3) - 1u;
            int64_t k64 = (int64_t)(r >> 10) - ((int64_t)1 << 53);
            double d = (double)k64 + ((r & 1) ? 0.5 : 0.0);
            b = num_f64_from_float(d) + (uint64_t)((r >> 1) % 3) - 1u;
        }
        if (!num_f32_is_nan(a)) {
            float x = num_f32_to_float(a);
            CHECK(num_f32_ceil(L32(a)), F(ceilf(x)));
            CHECK(num_f32_floor(L32(a)), F(floorf(x)));
            CHECK(num_f32_trunc(L32(a)), F(truncf(x)));
            CHECK(num_f32_nearest(L32(a)), F(nearbyintf(x)));
        }
        if (!num_f64_is_nan(b)) {
            double x = num_f64_to_float(b);
            CHECK(num_f64_ceil(L64(b)), D(ceil(x)));
            CHECK(num_f64_floor(L64(b)), D(floor(x)));
            CHECK(num_f64_trunc(L64(b)), D(trunc(x)));
            CHECK(num_f64_nearest(L64(b)), D(nearbyint(x)));
        }
    }
}

/* ---- float: comparisons --------------------------------------------------- */

static void test_float_compare(void **state)
{
    CHECK(num_f32_eq(L32(N0_32), L32(P0_32)), 1);
    CHECK(num_f32_ne(L32(N0_32), L32(P0_32)), 0);
    CHECK(num_f32_lt(L32(N0_32), L32(P0_32)), 0);
    CHECK(num_f32_le(L32(N0_32), L32(P0_32)), 1);
    CHECK(num_f32_ge(L32(P0_32), L32(N0_32)), 1);
    CHECK(num_f32_gt(L32(P0_32), L32(N0_32)), 0);
    CHECK(num_f32_lt(L32(NINF32), L32(F(-0x1.fffffep+127f))), 1);
    CHECK(num_f32_gt(L32(F(0x1p-149f)), L32(P0_32)), 1);
    const uint32_t nans32[] = {CNAN32, NCNAN32, SNAN32, NSNAN32};
    const uint32_t others32[] = {P0_32, N0_32, PINF32, NINF32, CNAN32, SNAN32, F(1.0f)};
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < sizeof others32 / sizeof *others32; j++) {
            uint32_t n = L32(nans32[i]), o = L32(others32[j]);
            CHECK(num_f32_eq(n, o), 0);
            CHECK(num_f32_eq(o, n), 0);
            CHECK(num_f32_ne(n, o), 1);
            CHECK(num_f32_ne(o, n), 1);
            CHECK(num_f32_lt(n, o), 0);
            CHECK(num_f32_lt(o, n), 0);
            CHECK(num_f32_gt(n, o), 0);
            CHECK(num_f32_gt(o, n), 0);
            CHECK(num_f32_le(n, o), 0);
            CHECK(num_f32_le(o, n), 0);
            CHECK(num_f32_ge(n, o), 0);
            CHECK(num_f32_ge(o, n), 0);
        }
    }

    CHECK(num_f64_eq(L64(N0_64), L64(P0_64)), 1);
    CHECK(num_f64_ne(L64(N0_64), L64(P0_64)), 0);
    CHECK(num_f64_lt(L64(N0_64), L64(P0_64)), 0);
    CHECK(num_f64_le(L64(N0_64), L64(P0_64)), 1);
    CHECK(num_f64_gt(L64(D(0x1p-1074)), L64(N0_64)), 1);
    CHECK(num_f64_ge(L64(NINF64), L64(NINF64)), 1);
    const uint64_t nans64[] = {CNAN64, NCNAN64, SNAN64, NSNAN64};
    const uint64_t others64[] = {P0_64, N0_64, PINF64, NINF64, CNAN64, SNAN64, D(1.0)};
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < sizeof others64 / sizeof *others64; j++) {
            uint64_t n = L64(nans64[i]), o = L64(others64[j]);
            CHECK(num_f64_eq(n, o), 0);
            CHECK(num_f64_ne(o, n), 1);
            CHECK(num_f64_lt(n, o), 0);
            CHECK(num_f64_lt(o, n), 0);
            CHECK(num_f64_gt(n, o), 0);
            CHECK(num_f64_gt(o, n), 0);
            CHECK(num_f64_le(n, o), 0);
            CHECK(num_f64_le(o, n), 0);
            CHECK(num_f64_ge(n, o), 0);
            CHECK(num_f64_ge(o, n), 0);
        }
    }
}

/* ---- conversions: trapping truncation ------------------------------------ */

static void test_trunc_to_i32(void **state)
{
    const int OVF = NUMERIC_TRAP_OVERFLOW, INV = NUMERIC_TRAP_INVALID_CONVERSION;

    /* i32.trunc_f32_s */
    CHECK(OK32(num_i32_trunc_f32_s, L32(P0_32)), 0);
    CHECK(OK32(num_i32_trunc_f32_s, L32(N0_32)), 0);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(0x1p-149f))), 0);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(-0x1p-149f))), 0);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(1.9f))), 1);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(-1.9f))), (uint32_t)-1);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(2147483520.0f))), 2147483520u);
    CHECK(OK32(num_i32_trunc_f32_s, L32(F(-2147483648.0f))), 0x80000000u);
    TRAPS32(num_i32_trunc_f32_s, OVF, L32(F(2147483648.0f)));
    TRAPS32(num_i32_trunc_f32_s, OVF, L32(F(-2147483904.0f)));
    TRAPS32(num_i32_trunc_f32_s, OVF, L32(PINF32));
    TRAPS32(num_i32_trunc_f32_s, OVF, L32(NINF32));
    TRAPS32(num_i32_trunc_f32_s, INV, L32(CNAN32));
    TRAPS32(num_i32_trunc_f32_s, INV, L32(NCNAN32));
    TRAPS32(num_i32_trunc_f32_s, INV, L32(SNAN32));
    TRAPS32(num_i32_trunc_f32_s, INV, L32(NSNAN32));

    /* i32.trunc_f32_u */
    CHECK(OK32(num_i32_trunc_f32_u, L32(N0_32)), 0);
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(-0x1p-149f))), 0);
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(-0x1.ccccccp-1f))), 0); /* -0.9 */
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(-0x1.fffffep-1f))), 0);
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(1.9f))), 1);
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(2147483648.0f))), 0x80000000u);
    CHECK(OK32(num_i32_trunc_f32_u, L32(F(4294967040.0f))), 0xffffff00u);
    TRAPS32(num_i32_trunc_f32_u, OVF, L32(F(4294967296.0f)));
    TRAPS32(num_i32_trunc_f32_u, OVF, L32(F(-1.0f)));
    TRAPS32(num_i32_trunc_f32_u, OVF, L32(PINF32));
    TRAPS32(num_i32_trunc_f32_u, OVF, L32(NINF32));
    TRAPS32(num_i32_trunc_f32_u, INV, L32(CNAN32));
    TRAPS32(num_i32_trunc_f32_u, INV, L32(NSNAN32));

    /* i32.trunc_f64_s */
    CHECK(OK32(num_i32_trunc_f64_s, L64(N0_64)), 0);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(-0x1p-1074))), 0);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(2147483647.0))), 0x7fffffffu);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(2147483647.9))), 0x7fffffffu);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(-2147483648.0))), 0x80000000u);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(-2147483648.9))), 0x80000000u);
    CHECK(OK32(num_i32_trunc_f64_s, L64(D(-1.9))), (uint32_t)-1);
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(D(2147483648.0)));
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(D(-2147483649.0)));
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(D(4294967296.0)));
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(D(1e16)));
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(PINF64));
    TRAPS32(num_i32_trunc_f64_s, OVF, L64(NINF64));
    TRAPS32(num_i32_trunc_f64_s, INV, L64(CNAN64));
    TRAPS32(num_i32_trunc_f64_s, INV, L64(NSNAN64));

    /* i32.trunc_f64_u */
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(-0.9))), 0);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(-0x1.fffffffffffffp-1))), 0);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(1.9))), 1);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(2147483648.0))), 0x80000000u);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(4294967295.0))), 0xffffffffu);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(4294967295.9))), 0xffffffffu);
    CHECK(OK32(num_i32_trunc_f64_u, L64(D(1e8))), 100000000u);
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(D(4294967296.0)));
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(D(-1.0)));
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(D(1e16)));
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(D(9223372036854775808.0)));
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(PINF64));
    TRAPS32(num_i32_trunc_f64_u, OVF, L64(NINF64));
    TRAPS32(num_i32_trunc_f64_u, INV, L64(NCNAN64));
    TRAPS32(num_i32_trunc_f64_u, INV, L64(SNAN64));
}

static void test_trunc_to_i64(void **state)
{
    const int OVF = NUMERIC_TRAP_OVERFLOW, INV = NUMERIC_TRAP_INVALID_CONVERSION;

    /* i64.trunc_f32_s */
    CHECK(OK64(num_i64_trunc_f32_s, L32(N0_32)), 0);
    CHECK(OK64(num_i64_trunc_f32_s, L32(F(-1.9f))), (uint64_t)-1);
    CHECK(OK64(num_i64_trunc_f32_s, L32(F(4294967296.0f))), 0x100000000ull);
    CHECK(OK64(num_i64_trunc_f32_s, L32(F(0x1.fffffep+62f))), 0x7fffff8000000000ull);
    CHECK(OK64(num_i64_trunc_f32_s, L32(F(-0x1p+63f))), 0x8000000000000000ull);
    TRAPS64(num_i64_trunc_f32_s, OVF, L32(F(0x1p+63f)));
    TRAPS64(num_i64_trunc_f32_s, OVF, L32(F(-0x1.000002p+63f)));
    TRAPS64(num_i64_trunc_f32_s, OVF, L32(PINF32));
    TRAPS64(num_i64_trunc_f32_s, OVF, L32(NINF32));
    TRAPS64(num_i64_trunc_f32_s, INV, L32(CNAN32));
    TRAPS64(num_i64_trunc_f32_s, INV, L32(NSNAN32));

    /* i64.trunc_f32_u */
    CHECK(OK64(num_i64_trunc_f32_u, L32(F(-0x1.ccccccp-1f))), 0);
    CHECK(OK64(num_i64_trunc_f32_u, L32(F(4294967296.0f))), 0x100000000ull);
    CHECK(OK64(num_i64_trunc_f32_u, L32(F(0x1.fffffep+63f))), 0xffffff0000000000ull);
    TRAPS64(num_i64_trunc_f32_u, OVF, L32(F(0x1p+64f)));
    TRAPS64(num_i64_trunc_f32_u, OVF, L32(F(-1.0f)));
    TRAPS64(num_i64_trunc_f32_u, OVF, L32(PINF32));
    TRAPS64(num_i64_trunc_f32_u, OVF, L32(NINF32));
    TRAPS64(num_i64_trunc_f32_u, INV, L32(SNAN32));

    /* i64.trunc_f64_s */
    CHECK(OK64(num_i64_trunc_f64_s, L64(D(-0x1p-1074))), 0);
    CHECK(OK64(num_i64_trunc_f64_s, L64(D(4294967296.0))), 0x100000000ull);
    CHECK(OK64(num_i64_trunc_f64_s, L64(D(-4294967296.0))), 0xffffffff00000000ull);
    CHECK(OK64(num_i64_trunc_f64_s, L64(D(0x1.fffffffffffffp+62))), 0x7ffffffffffffc00ull);
    CHECK(OK64(num_i64_trunc_f64_s, L64(D(-0x1p+63))), 0x8000000000000000ull);
    TRAPS64(num_i64_trunc_f64_s, OVF, L64(D(0x1p+63)));
    TRAPS64(num_i64_trunc_f64_s, OVF, L64(D(-0x1.0000000000001p+63)));
    TRAPS64(num_i64_trunc_f64_s, OVF, L64(PINF64));
    TRAPS64(num_i64_trunc_f64_s, OVF, L64(NINF64));
    TRAPS64(num_i64_trunc_f64_s, INV, L64(CNAN64));
    TRAPS64(num_i64_trunc_f64_s, INV, L64(NSNAN64));

    /* i64.trunc_f64_u */
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(-0.9))), 0);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(4294967295.0))), 0xffffffffull);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(4294967296.0))), 0x100000000ull);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(1e8))), 100000000ull);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(1e16))), 10000000000000000ull);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(9223372036854775808.0))), 0x8000000000000000ull);
    CHECK(OK64(num_i64_trunc_f64_u, L64(D(0x1.fffffffffffffp+63))), 0xfffffffffffff800ull);
    TRAPS64(num_i64_trunc_f64_u, OVF, L64(D(18446744073709551616.0)));
    TRAPS64(num_i64_trunc_f64_u, OVF, L64(D(-1.0)));
    TRAPS64(num_i64_trunc_f64_u, OVF, L64(PINF64));
    TRAPS64(num_i64_trunc_f64_u, OVF, L64(NINF64));
    TRAPS64(num_i64_trunc_f64_u, INV, L64(CNAN64));
    TRAPS64(num_i64_trunc_f64_u, INV, L64(SNAN64));
}

/* ---- conversions: saturating truncation ---------------------------------- */

static void test_trunc_sat(void **state)
{
    const uint32_t nan32[] = {CNAN32, NCNAN32, SNAN32, NSNAN32};
    const uint64_t nan64[] = {CNAN64, NCNAN64, SNAN64, NSNAN64};
    for (int i = 0; i < 4; i++) {
        CHECK(num_i32_trunc_sat_f32_s(L32(nan32[i])), 0);
        CHECK(num_i32_trunc_sat_f32_u(L32(nan32[i])), 0);
        CHECK(num_i64_trunc_sat_f32_s(L32(nan32[i])), 0);
        CHECK(num_i64_trunc_sat_f32_u(L32(nan32[i])), 0);
        CHECK(num_i32_trunc_sat_f64_s(L64(nan64[i])), 0);
        CHECK(num_i32_trunc_sat_f64_u(L64(nan64[i])), 0);
        CHECK(num_i64_trunc_sat_f64_s(L64(nan64[i])), 0);
        CHECK(num_i64_trunc_sat_f64_u(L64(nan64[i])), 0);
    }

    CHECK(num_i32_trunc_sat_f32_s(L32(F(-1.9f))), (uint32_t)-1);
    CHECK(num_i32_trunc_sat_f32_s(L32(F(2147483520.0f))), 2147483520u);
    CHECK(num_i32_trunc_sat_f32_s(L32(F(-2147483648.0f))), 0x80000000u);
    CHECK(num_i32_trunc_sat_f32_s(L32(F(2147483648.0f))), 0x7fffffffu);
    CHECK(num_i32_trunc_sat_f32_s(L32(F(-2147483904.0f))), 0x80000000u);
    CHECK(num_i32_trunc_sat_f32_s(L32(PINF32)), 0x7fffffffu);
    CHECK(num_i32_trunc_sat_f32_s(L32(NINF32)), 0x80000000u);
    CHECK(num_i32_trunc_sat_f32_u(L32(F(-0x1.ccccccp-1f))), 0);
    CHECK(num_i32_trunc_sat_f32_u(L32(F(-1.0f))), 0);
    CHECK(num_i32_trunc_sat_f32_u(L32(F(4294967040.0f))), 0xffffff00u);
    CHECK(num_i32_trunc_sat_f32_u(L32(F(4294967296.0f))), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f32_u(L32(PINF32)), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f32_u(L32(NINF32)), 0);

    CHECK(num_i32_trunc_sat_f64_s(L64(D(2147483647.9))), 0x7fffffffu);
    CHECK(num_i32_trunc_sat_f64_s(L64(D(2147483648.0))), 0x7fffffffu);
    CHECK(num_i32_trunc_sat_f64_s(L64(D(-2147483648.9))), 0x80000000u);
    CHECK(num_i32_trunc_sat_f64_s(L64(D(-2147483649.0))), 0x80000000u);
    CHECK(num_i32_trunc_sat_f64_s(L64(D(1e16))), 0x7fffffffu);
    CHECK(num_i32_trunc_sat_f64_s(L64(NINF64)), 0x80000000u);
    CHECK(num_i32_trunc_sat_f64_s(L64(N0_64)), 0);
    CHECK(num_i32_trunc_sat_f64_u(L64(D(-0.9))), 0);
    CHECK(num_i32_trunc_sat_f64_u(L64(D(-1.0))), 0);
    CHECK(num_i32_trunc_sat_f64_u(L64(D(4294967295.9))), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f64_u(L64(D(4294967296.0))), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f64_u(L64(D(1e16))), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f64_u(L64(PINF64)), 0xffffffffu);
    CHECK(num_i32_trunc_sat_f64_u(L64(NINF64)), 0);

    CHECK(num_i64_trunc_sat_f32_s(L32(F(0x1.fffffep+62f))), 0x7fffff8000000000ull);
    CHECK(num_i64_trunc_sat_f32_s(L32(F(-0x1p+63f))), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f32_s(L32(F(0x1p+63f))), 0x7fffffffffffffffull);
    CHECK(num_i64_trunc_sat_f32_s(L32(F(-0x1.000002p+63f))), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f32_s(L32(PINF32)), 0x7fffffffffffffffull);
    CHECK(num_i64_trunc_sat_f32_s(L32(NINF32)), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f32_u(L32(F(0x1.fffffep+63f))), 0xffffff0000000000ull);
    CHECK(num_i64_trunc_sat_f32_u(L32(F(0x1p+64f))), 0xffffffffffffffffull);
    CHECK(num_i64_trunc_sat_f32_u(L32(F(-1.0f))), 0);
    CHECK(num_i64_trunc_sat_f32_u(L32(NINF32)), 0);

    CHECK(num_i64_trunc_sat_f64_s(L64(D(0x1.fffffffffffffp+62))), 0x7ffffffffffffc00ull);
    CHECK(num_i64_trunc_sat_f64_s(L64(D(-0x1p+63))), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f64_s(L64(D(0x1p+63))), 0x7fffffffffffffffull);
    CHECK(num_i64_trunc_sat_f64_s(L64(D(-0x1.0000000000001p+63))), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f64_s(L64(PINF64)), 0x7fffffffffffffffull);
    CHECK(num_i64_trunc_sat_f64_s(L64(NINF64)), 0x8000000000000000ull);
    CHECK(num_i64_trunc_sat_f64_u(L64(D(0x1.fffffffffffffp+63))), 0xfffffffffffff800ull);
    CHECK(num_i64_trunc_sat_f64_u(L64(D(18446744073709551616.0))), 0xffffffffffffffffull);
    CHECK(num_i64_trunc_sat_f64_u(L64(D(-0.9))), 0);
    CHECK(num_i64_trunc_sat_f64_u(L64(D(-1.0))), 0);
    CHECK(num_i64_trunc_sat_f64_u(L64(D(1e16))), 10000000000000000ull);
    CHECK(num_i64_trunc_sat_f64_u(L64(PINF64)), 0xffffffffffffffffull);
}

/* ---- conversions: int -> float ------------------------------------------- */

/* Reference: round the magnitude m (sign neg) to a binary float with `mant`
 * fraction bits and exponent bias `bias`, ties to even, in pure integer
 * arithmetic (no intermediate float, so no double rounding). */
static uint64_t ref_int_to_float(uint64_t m, int neg, int mant, int bias)
{
    uint64_t sign = neg ? (uint64_t)1 << (mant + (bias == 127 ? 8 : 11)) : 0;
    if (m == 0) return 0; /* +0: int->float never produces -0 */
    int msb = 63 - __builtin_clzll(m);
    uint64_t sig;
    if (msb <= mant) {
        sig = m << (mant - msb);
    } else {
        int sh = msb - mant;
        uint64_t rem = m & (((uint64_t)1 << sh) - 1), half = (uint64_t)1 << (sh - 1);
        sig = m >> sh;
        if (rem > half || (rem == half && (sig & 1))) sig++;
        if (sig >> (mant + 1)) {
            sig >>= 1;
            msb++;
        }
    }
    return sign | ((uint64_t)(msb + bias) << mant) | (sig & (((uint64_t)1 << mant) - 1));
}
static uint32_t ref_f32_u64(uint64_t v) { return (uint32_t)ref_int_to_float(v, 0, 23, 127); }
static uint32_t ref_f32_s64(uint64_t v)
{
    return (uint32_t)((int64_t)v < 0 ? ref_int_to_float(0 - v, 1, 23, 127) : ref_int_to_float(v, 0, 23, 127));
}
static uint64_t ref_f64_u64(uint64_t v) { return ref_int_to_float(v, 0, 52, 1023); }
static uint64_t ref_f64_s64(uint64_t v)
{
    return (int64_t)v < 0 ? ref_int_to_float(0 - v, 1, 52, 1023) : ref_int_to_float(v, 0, 52, 1023);
}

static void test_convert(void **state)
{
    CHECK(num_f32_convert_i32_s(L32(1)), F(1.0f));
    CHECK(num_f32_convert_i32_s(L32(0xffffffffu)), F(-1.0f));
    CHECK(num_f32_convert_i32_s(L32(0)), P0_32);
    CHECK(num_f32_convert_i32_s(L32(0x7fffffffu)), F(2147483648.0f));
    CHECK(num_f32_convert_i32_s(L32(0x80000000u)), F(-2147483648.0f));
    CHECK(num_f32_convert_i32_s(L32(1234567890)), F(0x1.26580cp+30f));
    CHECK(num_f32_convert_i32_s(L32(16777217)), F(16777216.0f));
    CHECK(num_f32_convert_i32_s(L32((uint32_t)-16777217)), F(-16777216.0f));
    CHECK(num_f32_convert_i32_s(L32(16777219)), F(16777220.0f));
    CHECK(num_f32_convert_i32_s(L32((uint32_t)-16777219)), F(-16777220.0f));

    CHECK(num_f32_convert_i32_u(L32(0x7fffffffu)), F(2147483648.0f));
    CHECK(num_f32_convert_i32_u(L32(0x80000000u)), F(2147483648.0f));
    CHECK(num_f32_convert_i32_u(L32(0x12345678u)), F(0x1.234568p+28f));
    CHECK(num_f32_convert_i32_u(L32(0xffffffffu)), F(4294967296.0f));
    CHECK(num_f32_convert_i32_u(L32(0x80000080u)), F(0x1.000000p+31f));
    CHECK(num_f32_convert_i32_u(L32(0x80000081u)), F(0x1.000002p+31f));
    CHECK(num_f32_convert_i32_u(L32(0x80000082u)), F(0x1.000002p+31f));
    CHECK(num_f32_convert_i32_u(L32(0xfffffe80u)), F(0x1.fffffcp+31f));
    CHECK(num_f32_convert_i32_u(L32(0xfffffe81u)), F(0x1.fffffep+31f));
    CHECK(num_f32_convert_i32_u(L32(0xfffffe82u)), F(0x1.fffffep+31f));

    CHECK(num_f32_convert_i64_s(L64(0x7fffffffffffffffull)), F(0x1p+63f));
    CHECK(num_f32_convert_i64_s(L64(0x8000000000000000ull)), F(-0x1p+63f));
    CHECK(num_f32_convert_i64_s(L64(314159265358979ull)), F(0x1.1db9e8p+48f));
    CHECK(num_f32_convert_i64_s(L64(0x7fffff4000000001ull)), F(0x1.fffffep+62f));
    CHECK(num_f32_convert_i64_s(L64(0x8000004000000001ull)), F(-0x1.fffffep+62f));
    CHECK(num_f32_convert_i64_s(L64(0x0020000020000001ull)), F(0x1.000002p+53f));
    CHECK(num_f32_convert_i64_s(L64(0xffdfffffdfffffffull)), F(-0x1.000002p+53f));
    /* double rounding through f64 would give 2^53 here */
    CHECK(num_f32_convert_i64_s(L64(9007199791611905ull)), F(9007200328482816.0f));
    CHECK(num_f32_convert_i64_s(L64((uint64_t)-9007199791611905ll)), F(-9007200328482816.0f));

    CHECK(num_f32_convert_i64_u(L64(0x7fffffffffffffffull)), F(0x1p+63f));
    CHECK(num_f32_convert_i64_u(L64(0x8000000000000000ull)), F(0x1p+63f));
    CHECK(num_f32_convert_i64_u(L64(0xffffffffffffffffull)), F(0x1p+64f));
    CHECK(num_f32_convert_i64_u(L64(16777217)), F(16777216.0f));
    CHECK(num_f32_convert_i64_u(L64(16777219)), F(16777220.0f));
    CHECK(num_f32_convert_i64_u(L64(0x0020000020000001ull)), F(0x1.000002p+53f));
    CHECK(num_f32_convert_i64_u(L64(0x7fffffbfffffffffull)), F(0x1.fffffep+62f));
    CHECK(num_f32_convert_i64_u(L64(0x8000008000000001ull)), F(0x1.000002p+63f));
    CHECK(num_f32_convert_i64_u(L64(0xfffffe8000000001ull)), F(0x1.fffffep+63f));
    CHECK(num_f32_convert_i64_u(L64(9007199791611905ull)), F(9007200328482816.0f));

    CHECK(num_f64_convert_i32_s(L32(0x7fffffffu)), D(2147483647.0));
    CHECK(num_f64_convert_i32_s(L32(0x80000000u)), D(-2147483648.0));
    CHECK(num_f64_convert_i32_s(L32(0)), P0_64);
    CHECK(num_f64_convert_i32_u(L32(0xffffffffu)), D(4294967295.0));
    CHECK(num_f64_convert_i32_u(L32(0x80000000u)), D(2147483648.0));
    CHECK(num_f64_convert_i64_s(L64(0x7fffffffffffffffull)), D(0x1p+63));
    CHECK(num_f64_convert_i64_s(L64(0x8000000000000000ull)), D(-0x1p+63));
    CHECK(num_f64_convert_i64_s(L64(4669201609102990ull)), D(4669201609102990.0));
    CHECK(num_f64_convert_i64_s(L64(9007199254740993ull)), D(9007199254740992.0));
    CHECK(num_f64_convert_i64_s(L64((uint64_t)-9007199254740993ll)), D(-9007199254740992.0));
    CHECK(num_f64_convert_i64_s(L64(9007199254740995ull)), D(9007199254740996.0));
    CHECK(num_f64_convert_i64_u(L64(0xffffffffffffffffull)), D(0x1p+64));
    CHECK(num_f64_convert_i64_u(L64(0x8000000000000400ull)), D(0x1.0000000000000p+63));
    CHECK(num_f64_convert_i64_u(L64(0x8000000000000401ull)), D(0x1.0000000000001p+63));
    CHECK(num_f64_convert_i64_u(L64(0x8000000000000402ull)), D(0x1.0000000000001p+63));
    CHECK(num_f64_convert_i64_u(L64(0xfffffffffffff400ull)), D(0x1.ffffffffffffep+63));
    CHECK(num_f64_convert_i64_u(L64(0xfffffffffffff401ull)), D(0x1.fffffffffffffp+63));
    CHECK(num_f64_convert_i64_u(L64(0xfffffffffffff402ull)), D(0x1.fffffffffffffp+63));
    CHECK(num_f64_convert_i64_u(L64(9007199254740993ull)), D(9007199254740992.0));
    CHECK(num_f64_convert_i64_u(L64(9007199254740995ull)), D(9007199254740996.0));
}

/* 64-bit int -> float against the integer reference: random values of every
 * magnitude, with the bits just below the rounding point forced to the tie
 * and tie +/- 1 patterns that expose double rounding. */
static void test_convert_vs_reference(void **state)
{
    for (int i = 0; i < 1000000; i++) {
        uint64_t r = rnd();
        int width = 1 + (int)(rnd() % 64);
        uint64_t v = width == 64 ? r : r & (((uint64_t)1 << width) - 1);
        switch (i % 4) {
        case 0: break;
        case 1: v = (v & ~(uint64_t)0x7fffffffffull) | ((uint64_t)1 << 39) | 1; break;
        case 2: v = (v & ~(uint64_t)0x7ffull) | 0x400; break;
        case 3: v = (v & ~(uint64_t)0xffffffffffull) | 0x7fffffffffull; break;
        }
        CHECK(num_f32_convert_i64_u(L64(v)), ref_f32_u64(v));
        CHECK(num_f32_convert_i64_s(L64(v)), ref_f32_s64(v));
        CHECK(num_f64_convert_i64_u(L64(v)), ref_f64_u64(v));
        CHECK(num_f64_convert_i64_s(L64(v)), ref_f64_s64(v));
        uint32_t w = (uint32_t)v;
        CHECK(num_f32_convert_i32_u(L32(w)), ref_f32_u64(w));
        CHECK(num_f32_convert_i32_s(L32(w)), ref_f32_s64(num_i64_extend_i32_s(w)));
        CHECK(num_f64_convert_i32_u(L32(w)), ref_f64_u64(w));
        CHECK(num_f64_convert_i32_s(L32(w)), ref_f64_s64(num_i64_extend_i32_s(w)));
    }
}

/* ---- conversions: demote / promote / reinterpret ------------------------- */

static void test_demote_promote(void **state)
{
    CHECK(num_f32_demote_f64(L64(P0_64)), P0_32);
    CHECK(num_f32_demote_f64(L64(N0_64)), N0_32);
    CHECK(num_f32_demote_f64(L64(D(0x0.0000000000001p-1022))), P0_32);
    CHECK(num_f32_demote_f64(L64(D(-0x0.0000000000001p-1022))), N0_32);
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffe0000000p-127))), F(0x1p-126f));
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffdfffffffp-127))), F(0x1.fffffcp-127f));
    CHECK(num_f32_demote_f64(L64(D(0x1p-149))), F(0x1p-149f));
    CHECK(num_f32_demote_f64(L64(D(0x1.0p-150))), P0_32);
    CHECK(num_f32_demote_f64(L64(D(-0x1.0p-150))), N0_32);
    CHECK(num_f32_demote_f64(L64(D(0x1.0000000000001p-150))), F(0x1p-149f));
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffd0000000p+127))), F(0x1.fffffcp+127f));
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffd0000001p+127))), F(0x1.fffffep+127f));
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffefffffffp+127))), F(0x1.fffffep+127f));
    CHECK(num_f32_demote_f64(L64(D(0x1.ffffffp+127))), PINF32);
    CHECK(num_f32_demote_f64(L64(D(-0x1.ffffffp+127))), NINF32);
    CHECK(num_f32_demote_f64(L64(D(0x1.fffffffffffffp+1023))), PINF32);
    CHECK(num_f32_demote_f64(L64(PINF64)), PINF32);
    CHECK(num_f32_demote_f64(L64(NINF64)), NINF32);
    CHECK(num_f32_demote_f64(L64(D(1.0))), F(1.0f));
    CHECK(num_f32_demote_f64(L64(D(0x1.4p-2))), F(0x1.4p-2f));
    CHECK_CANON32(num_f32_demote_f64(L64(CNAN64)));
    CHECK_CANON32(num_f32_demote_f64(L64(NCNAN64)));
    CHECK_ARITH32(num_f32_demote_f64(L64(SNAN64)));
    CHECK_ARITH32(num_f32_demote_f64(L64(NSNAN64)));
    CHECK_ARITH32(num_f32_demote_f64(L64(0x7ff0000000000001ull))); /* payload only in low bits */

    CHECK(num_f64_promote_f32(L32(P0_32)), P0_64);
    CHECK(num_f64_promote_f32(L32(N0_32)), N0_64);
    CHECK(num_f64_promote_f32(L32(F(0x1p-149f))), D(0x1p-149));
    CHECK(num_f64_promote_f32(L32(F(-0x1p-149f))), D(-0x1p-149));
    CHECK(num_f64_promote_f32(L32(F(0x1.fffffep+127f))), D(0x1.fffffep+127));
    CHECK(num_f64_promote_f32(L32(F(0x1p-119f))), D(0x1p-119));
    CHECK(num_f64_promote_f32(L32(F(0x1.8f867ep+125f))), D(0x1.8f867ep+125));
    CHECK(num_f64_promote_f32(L32(PINF32)), PINF64);
    CHECK(num_f64_promote_f32(L32(NINF32)), NINF64);
    CHECK_CANON64(num_f64_promote_f32(L32(CNAN32)));
    CHECK_CANON64(num_f64_promote_f32(L32(NCNAN32)));
    CHECK_ARITH64(num_f64_promote_f32(L32(SNAN32)));
    CHECK_ARITH64(num_f64_promote_f32(L32(NSNAN32)));
    CHECK_ARITH64(num_f64_promote_f32(L32(0x7f800001u)));
}

static void test_reinterpret(void **state)
{
    const uint32_t w[] = {0, N0_32, 0x80000001u, SNAN32, NSNAN32, 0x7f800001u, 0xffffffffu,
                          PINF32, 0x12345678u};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        CHECK(num_i32_reinterpret_f32(L32(w[i])), w[i]);
        CHECK(num_f32_reinterpret_i32(L32(w[i])), w[i]);
    }
    const uint64_t d[] = {0, N0_64, SNAN64, NSNAN64, 0x7ff0000000000001ull,
                          0xffffffffffffffffull, PINF64, 0x0123456789abcdefull};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
        CHECK(num_i64_reinterpret_f64(L64(d[i])), d[i]);
        CHECK(num_f64_reinterpret_i64(L64(d[i])), d[i]);
    }
    CHECK(num_f32_is_nan(L32(SNAN32)), 1);
    CHECK(num_f32_is_nan(L32(NINF32)), 0);
    CHECK(num_f64_is_nan(L64(0xfff0000000000001ull)), 1);
    CHECK(num_f64_is_nan(L64(PINF64)), 0);
}

/* Trap codes are the public al_trap_kind values. */
static void test_trap_codes(void **state)
{
    CHECK(NUMERIC_TRAP_NONE, AL_TRAP_NONE);
    CHECK(NUMERIC_TRAP_DIV_ZERO, AL_TRAP_INT_DIV_ZERO);
    CHECK(NUMERIC_TRAP_OVERFLOW, AL_TRAP_INT_OVERFLOW);
    CHECK(NUMERIC_TRAP_INVALID_CONVERSION, AL_TRAP_INVALID_CONVERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i32_bitcount),
        cmocka_unit_test(test_i64_bitcount),
        cmocka_unit_test(test_i32_arith_shift_rot),
        cmocka_unit_test(test_i64_arith_shift_rot),
        cmocka_unit_test(test_i32_div_rem),
        cmocka_unit_test(test_i64_div_rem),
        cmocka_unit_test(test_int_compare_extend),
        cmocka_unit_test(test_float_bitwise),
        cmocka_unit_test(test_f32_arith),
        cmocka_unit_test(test_f64_arith),
        cmocka_unit_test(test_f32_min_max),
        cmocka_unit_test(test_f64_min_max),
        cmocka_unit_test(test_f32_rounding),
        cmocka_unit_test(test_f64_rounding),
        cmocka_unit_test(test_rounding_vs_libm),
        cmocka_unit_test(test_float_compare),
        cmocka_unit_test(test_trunc_to_i32),
        cmocka_unit_test(test_trunc_to_i64),
        cmocka_unit_test(test_trunc_sat),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_convert_vs_reference),
        cmocka_unit_test(test_demote_promote),
        cmocka_unit_test(test_reinterpret),
        cmocka_unit_test(test_trap_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
