/*
 * reader.c — bounded primitive readers for the wasm binary format
 * (spec §5.1 conventions, §5.2 values, §5.4 instructions).
 *
 * Invariants:
 *  - no function reads at or past r->end; every multi-byte read checks the
 *    remaining length first, so a hostile length can only produce an error;
 *  - on failure r->error holds a static string in the spec test suite's
 *    wording and r->p points at (or just past) the offending byte; callers
 *    add section/offset context and must not continue reading;
 *  - LEB128 integers are limited to ceil(N/7) bytes, and the unused bits of
 *    the final byte must be zero (unsigned) or copies of the sign bit
 *    (signed), as §5.2.2 requires. Without those limits a decoder either
 *    loops over arbitrarily long encodings or silently truncates values.
 */
#include "reader.h"

#include <string.h>

#include "module.h"

static bool fail(wasm_reader *r, const char *reason) {
    r->error = reason;
    return false;
}

static size_t remaining(const wasm_reader *r) {
    return r->p < r->end ? (size_t)(r->end - r->p) : 0;
}

bool rd_u8(wasm_reader *r, uint8_t *out) {
    if (remaining(r) < 1) return fail(r, "unexpected end");
    *out = *r->p++;
    return true;
}

/*
 * Unsigned LEB128 of at most `bits` bits (§5.2.2): ceil(bits/7) bytes; in
 * the last permitted byte, payload bits at or above `bits` must be zero.
 */
static bool read_uleb(wasm_reader *r, unsigned bits, uint64_t *out) {
    const unsigned max_bytes = (bits + 6) / 7;
    uint64_t result = 0;
    for (unsigned i = 0; i < max_bytes; i++) {
        uint8_t b;
        if (!rd_u8(r, &b)) return false;
        unsigned shift = 7 * i;
        if (i == max_bytes - 1) {
            if (b & 0x80) return fail(r, "integer representation too long");
            unsigned used = bits - shift; /* payload bits that carry value */
            if ((b & 0x7F) >> used) return fail(r, "integer too large");
        }
        result |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = result;
            return true;
        }
    }
    return fail(r, "integer representation too long"); /* not reached */
}

/*
 * Signed LEB128 of at most `bits` bits: in the last permitted byte the
 * payload bits from the sign bit upwards must be all zeros or all ones.
 */
static bool read_sleb(wasm_reader *r, unsigned bits, int64_t *out) {
    const unsigned max_bytes = (bits + 6) / 7;
    uint64_t result = 0;
    for (unsigned i = 0; i < max_bytes; i++) {
        uint8_t b;
        if (!rd_u8(r, &b)) return false;
        unsigned shift = 7 * i;
        if (i == max_bytes - 1) {
            if (b & 0x80) return fail(r, "integer representation too long");
            unsigned sign_pos = bits - 1 - shift; /* sign bit within the payload */
            uint8_t mask = (uint8_t)(0x7F & (0xFFu << sign_pos));
            if ((b & mask) != 0 && (b & mask) != mask) return fail(r, "integer too large");
        }
        result |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            shift += 7;
            if (shift < 64 && (b & 0x40)) result |= ~(uint64_t)0 << shift;
            memcpy(out, &result, sizeof *out); /* two's complement reinterpretation */
            return true;
        }
    }
    return fail(r, "integer representation too long"); /* not reached */
}

bool rd_u32(wasm_reader *r, uint32_t *out) {
    uint64_t v;
    if (!read_uleb(r, 32, &v)) return false;
    *out = (uint32_t)v;
    return true;
}

bool rd_u64(wasm_reader *r, uint64_t *out) { return read_uleb(r, 64, out); }

bool rd_s32(wasm_reader *r, int32_t *out) {
    int64_t v;
    if (!read_sleb(r, 32, &v)) return false;
    *out = (int32_t)v; /* in range: read_sleb checked the sign extension */
    return true;
}

bool rd_s33(wasm_reader *r, int64_t *out) { return read_sleb(r, 33, out); }

bool rd_s64(wasm_reader *r, int64_t *out) { return read_sleb(r, 64, out); }

bool rd_f32(wasm_reader *r, uint32_t *bits) {
    if (remaining(r) < 4) return fail(r, "unexpected end");
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++) v |= (uint32_t)r->p[i] << (8 * i);
    r->p += 4;
    *bits = v;
    return true;
}

bool rd_f64(wasm_reader *r, uint64_t *bits) {
    if (remaining(r) < 8) return fail(r, "unexpected end");
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++) v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    *bits = v;
    return true;
}

bool rd_bytes(wasm_reader *r, size_t n, const uint8_t **out) {
    if (n > remaining(r)) return fail(r, "unexpected end");
    *out = r->p;
    r->p += n;
    return true;
}

/* Length of the UTF-8 sequence at s (at most n bytes), 0 if malformed.
 * Follows the spec's utf8 grammar (§5.2.4): shortest form only, no
 * surrogates (U+D800..U+DFFF), nothing above U+10FFFF. */
static size_t utf8_sequence(const uint8_t *s, size_t n) {
    uint8_t b0 = s[0];
    if (b0 < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;      /* overlong */
        else if (b0 == 0xED) hi = 0x9F; /* surrogates */
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;      /* overlong */
        else if (b0 == 0xF4) hi = 0x8F; /* > U+10FFFF */
    } else {
        return 0; /* continuation byte, C0/C1 overlong lead, or F5..FF */
    }
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

static bool utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_sequence(s + i, n - i);
        if (k == 0) return false;
        i += k;
    }
    return true;
}

bool rd_name(wasm_reader *r, const uint8_t **out, uint32_t *len) {
    uint32_t n;
    if (!rd_u32(r, &n)) return false;
    /* Check before touching the bytes: a hostile length must not be trusted. */
    if (n > remaining(r)) return fail(r, "length out of bounds");
    const uint8_t *s = r->p;
    if (!utf8_valid(s, n)) return fail(r, "malformed UTF-8 encoding");
    r->p += n;
    *out = s;
    *len = n;
    return true;
}

/* ---- instructions (§5.4) ------------------------------------------------ */

/* memory.size/grow/fill/copy/init carry a reserved memory index that must be
 * the single byte 0x00 in WebAssembly 2.0 (§5.4.6); a LEB-encoded zero
 * such as 0x80 0x00 is malformed. */
static bool read_zero_byte(wasm_reader *r) {
    uint8_t b;
    if (!rd_u8(r, &b)) return false;
    if (b != 0) return fail(r, "zero byte expected");
    return true;
}

/* Block type (§5.4.1): 0x40, a value type byte, or a non-negative s33 type
 * index. Negative s33 values other than those bytes are malformed. */
static bool read_blocktype(wasm_reader *r, wasm_instr *in) {
    if (remaining(r) < 1) return fail(r, "unexpected end");
    uint8_t b = *r->p;
    if (b == WASM_BLOCKTYPE_EMPTY || wasm_is_valtype(b)) {
        r->p++;
        in->blocktype = b;
        in->blocktype_is_index = false;
        return true;
    }
    int64_t v;
    if (!rd_s33(r, &v)) return false;
    if (v < 0) return fail(r, "malformed block type");
    in->blocktype = v;
    in->blocktype_is_index = true;
    return true;
}

/* br_table (§5.4.1): vec(labelidx) then the default label. Every LEB is
 * checked here so later stages can re-read the vector without checks. */
static bool read_br_table(wasm_reader *r, wasm_instr *in) {
    if (!rd_u32(r, &in->count)) return false;
    /* Each label takes at least one byte: reject impossible counts early. */
    if (in->count >= remaining(r)) return fail(r, "unexpected end");
    in->targets = r->p;
    for (uint64_t i = 0; i <= in->count; i++) {
        uint32_t label;
        if (!rd_u32(r, &label)) return false;
        if (i == in->count) in->idx = label; /* default label, for convenience */
    }
    return true;
}

/* select t* (§5.4.2): a vector of value types; validation requires exactly
 * one, but decoding accepts any well-formed vector. */
static bool read_select_types(wasm_reader *r, wasm_instr *in) {
    if (!rd_u32(r, &in->count)) return false;
    if (in->count > remaining(r)) return fail(r, "unexpected end");
    for (uint32_t i = 0; i < in->count; i++) {
        uint8_t t;
        if (!rd_u8(r, &t)) return false;
        if (!wasm_is_valtype(t)) return fail(r, "malformed value type");
        if (i == 0) in->reftype = t;
    }
    return true;
}

static bool read_memarg(wasm_reader *r, wasm_instr *in) {
    return rd_u32(r, &in->align) && rd_u32(r, &in->mem_offset);
}

static bool read_reftype(wasm_reader *r, uint8_t *out) {
    uint8_t t;
    if (!rd_u8(r, &t)) return false;
    if (!wasm_is_reftype(t)) return fail(r, "malformed reference type");
    *out = t;
    return true;
}

/* 0xFC-prefixed instructions (§5.4.5, §5.4.6): saturating truncation, bulk
 * memory and table instructions. The sub-opcode is a u32 LEB. */
static bool read_prefix_fc(wasm_reader *r, wasm_instr *in) {
    uint32_t sub;
    if (!rd_u32(r, &sub)) return false;
    if (sub > 17) return fail(r, "illegal opcode");
    in->op = WASM_OP_PREFIX_FC | sub;
    switch (sub) {
    case 8: /* memory.init dataidx 0x00 */
        return rd_u32(r, &in->idx) && read_zero_byte(r);
    case 9:  /* data.drop */
    case 13: /* elem.drop */
    case 15: /* table.grow */
    case 16: /* table.size */
    case 17: /* table.fill */
        return rd_u32(r, &in->idx);
    case 10: /* memory.copy 0x00 0x00 */
        return read_zero_byte(r) && read_zero_byte(r);
    case 11: /* memory.fill 0x00 */
        return read_zero_byte(r);
    case 12: /* table.init elemidx tableidx */
    case 14: /* table.copy dst src */
        return rd_u32(r, &in->idx) && rd_u32(r, &in->idx2);
    default: /* 0..7: trunc_sat, no immediates */
        return true;
    }
}

static bool read_const(wasm_reader *r, wasm_instr *in) {
    switch (in->op) {
    case 0x41: {
        int32_t v;
        if (!rd_s32(r, &v)) return false;
        in->imm = (uint64_t)(int64_t)v;
        return true;
    }
    case 0x42: {
        int64_t v;
        if (!rd_s64(r, &v)) return false;
        in->imm = (uint64_t)v;
        return true;
    }
    case 0x43: {
        uint32_t bits;
        if (!rd_f32(r, &bits)) return false;
        in->imm = bits;
        return true;
    }
    default:
        return rd_f64(r, &in->imm);
    }
}

bool rd_instr(wasm_reader *r, wasm_instr *out) {
    wasm_instr in;
    memset(&in, 0, sizeof in);
    in.offset = rd_offset(r);
    uint8_t op;
    if (!rd_u8(r, &op)) return false;
    in.op = op;

    bool ok;
    switch (op) {
    case 0x00: case 0x01: case 0x05: case 0x0B: case 0x0F: /* no immediates */
    case 0x1A: case 0x1B: case 0xD1:
        ok = true;
        break;
    case 0x02: case 0x03: case 0x04: /* block, loop, if */
        ok = read_blocktype(r, &in);
        break;
    case 0x0C: case 0x0D: /* br, br_if */
    case 0x10:            /* call */
    case 0x20: case 0x21: case 0x22: case 0x23: case 0x24: /* local.*, global.* */
    case 0x25: case 0x26: /* table.get, table.set */
    case 0xD2:            /* ref.func */
        ok = rd_u32(r, &in.idx);
        break;
    case 0x0E:
        ok = read_br_table(r, &in);
        break;
    case 0x11: /* call_indirect typeidx tableidx */
        ok = rd_u32(r, &in.idx) && rd_u32(r, &in.idx2);
        break;
    case 0x1C:
        ok = read_select_types(r, &in);
        break;
    case 0x3F: case 0x40: /* memory.size, memory.grow */
        ok = read_zero_byte(r);
        break;
    case 0x41: case 0x42: case 0x43: case 0x44:
        ok = read_const(r, &in);
        break;
    case 0xD0:
        ok = read_reftype(r, &in.reftype);
        break;
    case 0xFC:
        ok = read_prefix_fc(r, &in);
        break;
    default:
        if (op >= 0x28 && op <= 0x3E) {        /* loads and stores */
            ok = read_memarg(r, &in);
        } else if (op >= 0x45 && op <= 0xC4) { /* numeric, no immediates */
            ok = true;
        } else {                               /* gaps, 0xFD SIMD, reserved */
            r->p--;
            ok = fail(r, "illegal opcode");
        }
        break;
    }
    if (!ok) return false;
    *out = in;
    return true;
}
