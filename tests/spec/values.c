/*
 * values.c — values as wast2json writes them, for the spec-test runner.
 *
 * wast2json encodes every value as {"type": T, "value": S}:
 *   i32/i64/f32/f64  S is the unsigned bit pattern in decimal ("4294967295"),
 *                    so float NaN payloads are exact;
 *   f32/f64 results  S may also be "nan:canonical" or "nan:arithmetic" (spec
 *                    §4.3.3: canonical = only the quiet bit of the payload set,
 *                    arithmetic = quiet bit set, anything else free; both
 *                    signs allowed);
 *   funcref          "null" (a non-null expectation means "any non-null");
 *   externref        "null" or N for the wast's (ref.extern N). The runner
 *                    passes N as host token N+1, keeping token 0 for null.
 * A value without "value" (the expected results of assert_trap) is never
 * compared; it is rejected here if asked for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

#define F32_QUIET_NAN 0x7fc00000u
#define F32_SIGN 0x80000000u
#define F64_QUIET_NAN 0x7ff8000000000000u
#define F64_SIGN 0x8000000000000000u

static bool parse_valtype(const char *name, al_valtype *out)
{
    static const struct { const char *name; al_valtype type; } types[] = {
        {"i32", AL_I32}, {"i64", AL_I64}, {"f32", AL_F32}, {"f64", AL_F64},
        {"funcref", AL_FUNCREF}, {"externref", AL_EXTERNREF},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (strcmp(name, types[i].name) == 0) {
            *out = types[i].type;
            return true;
        }
    }
    return false;
}

const char *spec_valtype_name(al_valtype type)
{
    switch (type) {
    case AL_I32: return "i32";
    case AL_I64: return "i64";
    case AL_F32: return "f32";
    case AL_F64: return "f64";
    case AL_FUNCREF: return "funcref";
    case AL_EXTERNREF: return "externref";
    }
    return "?";
}

/* Decimal digits only (strtoull alone would accept "-1" and spaces). */
static bool parse_decimal(const char *text, uint64_t max, uint64_t *out)
{
    if (text[0] < '0' || text[0] > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || value > max)
        return false;
    *out = value;
    return true;
}

static uint64_t max_bits(al_valtype type)
{
    return type == AL_I32 || type == AL_F32 ? UINT32_MAX : UINT64_MAX;
}

/* Read "type" and, if present, "value" of a wast2json value object. */
static const char *read_type_and_text(json_t *json, al_valtype *type, const char **text)
{
    const char *type_name = json_string_value(json_object_get(json, "type"));
    if (type_name == NULL)
        return "value without a type";
    if (!parse_valtype(type_name, type))
        return "unsupported value type";
    *text = json_string_value(json_object_get(json, "value"));
    if (*text == NULL)
        return "value without a \"value\"";
    return NULL;
}

static al_value value_from_bits(al_valtype type, uint64_t bits)
{
    al_value v;
    memset(&v, 0, sizeof v);
    v.type = type;
    switch (type) {
    case AL_I32: v.of.i32 = (int32_t)(uint32_t)bits; break;
    case AL_I64: v.of.i64 = (int64_t)bits; break;
    case AL_F32: v.of.f32_bits = (uint32_t)bits; break;
    case AL_F64: v.of.f64_bits = bits; break;
    case AL_FUNCREF: v.of.funcref = NULL; break;
    case AL_EXTERNREF: v.of.externref = (uintptr_t)bits; break;
    }
    return v;
}

/* Reference "null" -> 0, externref N -> token N+1. */
static const char *parse_reference(al_valtype type, const char *text, uint64_t *bits,
                                   bool *non_null)
{
    *non_null = false;
    if (strcmp(text, "null") == 0) {
        *bits = 0;
        return NULL;
    }
    uint64_t n;
    if (!parse_decimal(text, UINT64_MAX - 1, &n))
        return "bad reference value";
    *non_null = true;
    *bits = type == AL_EXTERNREF ? n + 1 : 0;
    return NULL;
}

const char *spec_parse_arg(json_t *json, al_value *out)
{
    al_valtype type;
    const char *text;
    const char *problem = read_type_and_text(json, &type, &text);
    if (problem != NULL)
        return problem;

    uint64_t bits;
    if (type == AL_FUNCREF || type == AL_EXTERNREF) {
        bool non_null;
        problem = parse_reference(type, text, &bits, &non_null);
        if (problem != NULL)
            return problem;
        if (type == AL_FUNCREF && non_null)
            return "a non-null funcref argument cannot be made by a host";
    } else if (!parse_decimal(text, max_bits(type), &bits)) {
        return "bad number";
    }
    *out = value_from_bits(type, bits);
    return NULL;
}

const char *spec_parse_expected(json_t *json, spec_expected *out)
{
    const char *text;
    const char *problem = read_type_and_text(json, &out->type, &text);
    if (problem != NULL)
        return problem;

    out->bits = 0;
    out->match = SPEC_MATCH_BITS;
    bool is_float = out->type == AL_F32 || out->type == AL_F64;
    if (is_float && strcmp(text, "nan:canonical") == 0) {
        out->match = SPEC_MATCH_NAN_CANONICAL;
        return NULL;
    }
    if (is_float && strcmp(text, "nan:arithmetic") == 0) {
        out->match = SPEC_MATCH_NAN_ARITHMETIC;
        return NULL;
    }
    if (out->type == AL_FUNCREF || out->type == AL_EXTERNREF) {
        bool non_null;
        problem = parse_reference(out->type, text, &out->bits, &non_null);
        if (problem == NULL && out->type == AL_FUNCREF && non_null)
            out->match = SPEC_MATCH_NON_NULL;
        return problem;
    }
    if (!parse_decimal(text, max_bits(out->type), &out->bits))
        return "bad number";
    return NULL;
}

/* The value's payload as one 64-bit pattern (references: 0 is null). */
static uint64_t value_bits(al_value v)
{
    switch (v.type) {
    case AL_I32: return (uint32_t)v.of.i32;
    case AL_I64: return (uint64_t)v.of.i64;
    case AL_F32: return v.of.f32_bits;
    case AL_F64: return v.of.f64_bits;
    case AL_FUNCREF: return (uintptr_t)v.of.funcref;
    case AL_EXTERNREF: return v.of.externref;
    }
    return 0;
}

static bool nan_matches(spec_match match, al_valtype type, uint64_t bits)
{
    if (type == AL_F32) {
        uint32_t magnitude = (uint32_t)bits & ~F32_SIGN;
        if (match == SPEC_MATCH_NAN_CANONICAL)
            return magnitude == F32_QUIET_NAN;
        return (magnitude & F32_QUIET_NAN) == F32_QUIET_NAN;
    }
    uint64_t magnitude = bits & ~F64_SIGN;
    if (match == SPEC_MATCH_NAN_CANONICAL)
        return magnitude == F64_QUIET_NAN;
    return (magnitude & F64_QUIET_NAN) == F64_QUIET_NAN;
}

bool spec_value_matches(const spec_expected *expected, al_value actual)
{
    if (actual.type != expected->type)
        return false;
    uint64_t bits = value_bits(actual);
    switch (expected->match) {
    case SPEC_MATCH_BITS:
        return bits == expected->bits;
    case SPEC_MATCH_NAN_CANONICAL:
    case SPEC_MATCH_NAN_ARITHMETIC:
        return nan_matches(expected->match, actual.type, bits);
    case SPEC_MATCH_NON_NULL:
        return bits != 0;
    }
    return false;
}

static void format_reference(al_valtype type, uint64_t bits, char *buf, size_t size)
{
    if (bits == 0)
        snprintf(buf, size, "%s:null", spec_valtype_name(type));
    else if (type == AL_EXTERNREF)
        snprintf(buf, size, "externref:%" PRIu64 " (token %" PRIu64 ")", bits - 1, bits);
    else
        snprintf(buf, size, "funcref:%#" PRIx64, bits);
}

/* Bits in hex plus a readable rendering: "f32:0x3f800000 (1)". */
static void format_bits(al_valtype type, uint64_t bits, char *buf, size_t size)
{
    float f;
    double d;
    uint32_t low = (uint32_t)bits;
    switch (type) {
    case AL_I32:
        snprintf(buf, size, "i32:%#" PRIx32 " (%" PRIu32 ")", low, low);
        break;
    case AL_I64:
        snprintf(buf, size, "i64:%#" PRIx64 " (%" PRIu64 ")", bits, bits);
        break;
    case AL_F32:
        memcpy(&f, &low, sizeof f);
        snprintf(buf, size, "f32:%#" PRIx32 " (%.9g)", low, (double)f);
        break;
    case AL_F64:
        memcpy(&d, &bits, sizeof d);
        snprintf(buf, size, "f64:%#" PRIx64 " (%.17g)", bits, d);
        break;
    case AL_FUNCREF:
    case AL_EXTERNREF:
        format_reference(type, bits, buf, size);
        break;
    }
}

void spec_format_value(al_value value, char *buf, size_t size)
{
    format_bits(value.type, value_bits(value), buf, size);
}

void spec_format_expected(const spec_expected *expected, char *buf, size_t size)
{
    const char *type = spec_valtype_name(expected->type);
    switch (expected->match) {
    case SPEC_MATCH_BITS:
        format_bits(expected->type, expected->bits, buf, size);
        break;
    case SPEC_MATCH_NAN_CANONICAL:
        snprintf(buf, size, "%s:nan:canonical", type);
        break;
    case SPEC_MATCH_NAN_ARITHMETIC:
        snprintf(buf, size, "%s:nan:arithmetic", type);
        break;
    case SPEC_MATCH_NON_NULL:
        snprintf(buf, size, "%s:non-null", type);
        break;
    }
}

void spec_format_name(const char *name, size_t len, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return;
    for (size_t i = 0; i < len && used + 5 < size; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            used += (size_t)snprintf(buf + used, size - used, "\\x%02x", c);
        else
            buf[used++] = (char)c;
    }
    buf[used] = '\0';
}
