/*
 * test_decode.c — unit tests for reader.c, decode.c and validate.c on
 * hand-made byte arrays: LEB128 limits, UTF-8 rejection, instruction
 * immediates, section order and sizes, the name section, hostile counts,
 * and truncation/mutation robustness (run under ASan+UBSan+LSan, where a
 * crash, overread or leak fails the test even if every assertion passes).
 *
 * Modules are decoded with wasm_decode/wasm_validate_module directly so
 * these tests do not depend on function-body compilation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "reader.h"

/* A byte array literal and its length, for calls taking (bytes, len). */
#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})
#define HEADER 0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00

static wasm_reader reader_on(const uint8_t *b, size_t n) {
    wasm_reader r = {b, b, b + n, NULL};
    return r;
}

/* ---- LEB128 -------------------------------------------------------------- */

static void u32_ok(const uint8_t *b, size_t n, uint32_t want) {
    wasm_reader r = reader_on(b, n);
    uint32_t v = 0;
    assert_true(rd_u32(&r, &v));
    assert_int_equal(v, want);
    assert_true(rd_eof(&r));
}

static void u32_bad(const uint8_t *b, size_t n, const char *reason) {
    wasm_reader r = reader_on(b, n);
    uint32_t v;
    assert_false(rd_u32(&r, &v));
    assert_string_equal(r.error, reason);
}

static void test_leb_u32(void **state) {
    (void)state;
    u32_ok(BYTES(0x00), 0);
    u32_ok(BYTES(0x7F), 127);
    u32_ok(BYTES(0x80, 0x01), 128);
    u32_ok(BYTES(0x82, 0x80, 0x80, 0x80, 0x00), 2);           /* non-minimal is fine */
    u32_ok(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x0F), UINT32_MAX);
    u32_bad(BYTES(0x82, 0x80, 0x80, 0x80, 0x80, 0x00), "integer representation too long");
    u32_bad(BYTES(0x82, 0x80, 0x80, 0x80, 0x70), "integer too large");
    u32_bad(BYTES(0x82, 0x80, 0x80, 0x80, 0x10), "integer too large");
    u32_bad(BYTES(0x80), "unexpected end");
    u32_bad(BYTES(0x80, 0x80), "unexpected end");
    static const uint8_t empty[1];
    wasm_reader r = reader_on(empty, 0);
    uint32_t v;
    assert_false(rd_u32(&r, &v));
    assert_string_equal(r.error, "unexpected end");
}

static void s32_case(const uint8_t *b, size_t n, bool ok, int32_t want, const char *reason) {
    wasm_reader r = reader_on(b, n);
    int32_t v = 0;
    assert_int_equal(rd_s32(&r, &v), ok);
    if (ok) assert_int_equal(v, want);
    else assert_string_equal(r.error, reason);
}

static void test_leb_s32(void **state) {
    (void)state;
    s32_case(BYTES(0x7F), true, -1, NULL);
    s32_case(BYTES(0x3F), true, 63, NULL);
    s32_case(BYTES(0x40), true, -64, NULL);
    s32_case(BYTES(0x80, 0x00), true, 0, NULL);
    s32_case(BYTES(0xFF, 0x7F), true, -1, NULL);
    s32_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x7F), true, -1, NULL);
    s32_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x78), true, INT32_MIN, NULL);
    s32_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x07), true, INT32_MAX, NULL);
    s32_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x70), false, 0, "integer too large");
    s32_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x0F), false, 0, "integer too large");
    s32_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x4F), false, 0, "integer too large");
    s32_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x00), false, 0, "integer representation too long");
    s32_case(BYTES(0xFF), false, 0, "unexpected end");
}

static void s64_case(const uint8_t *b, size_t n, bool ok, int64_t want, const char *reason) {
    wasm_reader r = reader_on(b, n);
    int64_t v = 0;
    assert_int_equal(rd_s64(&r, &v), ok);
    if (ok) assert_true(v == want);
    else assert_string_equal(r.error, reason);
}

static void test_leb_s64_s33_u64(void **state) {
    (void)state;
    s64_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), true, 0, NULL);
    s64_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F), true, -1, NULL);
    s64_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7F), true, INT64_MIN, NULL);
    s64_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00), true, INT64_MAX, NULL);
    s64_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7E), false, 0,
             "integer too large");
    s64_case(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01), false, 0,
             "integer too large");
    s64_case(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), false, 0,
             "integer representation too long");

    /* s33 (block types): 5 bytes, sign bit at payload bit 4 of the last byte. */
    wasm_reader r = reader_on(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0x0F));
    int64_t v;
    assert_true(rd_s33(&r, &v));
    assert_true(v == 0xFFFFFFFFll);
    r = reader_on(BYTES(0x80, 0x80, 0x80, 0x80, 0x70));
    assert_true(rd_s33(&r, &v));
    assert_true(v == -(1ll << 32));
    r = reader_on(BYTES(0x80, 0x80, 0x80, 0x80, 0x20));
    assert_false(rd_s33(&r, &v));
    assert_string_equal(r.error, "integer too large");

    uint64_t u;
    r = reader_on(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01));
    assert_true(rd_u64(&r, &u));
    assert_true(u == UINT64_MAX);
    r = reader_on(BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02));
    assert_false(rd_u64(&r, &u));
    assert_string_equal(r.error, "integer too large");
}

static void test_fixed_width(void **state) {
    (void)state;
    wasm_reader r = reader_on(BYTES(0x00, 0x00, 0xC0, 0x7F, 0x01));
    uint32_t f;
    assert_true(rd_f32(&r, &f));
    assert_int_equal(f, 0x7FC00000u);
    uint64_t d;
    assert_false(rd_f64(&r, &d)); /* 1 byte left */
    assert_string_equal(r.error, "unexpected end");
    const uint8_t *p;
    r = reader_on(BYTES(1, 2, 3));
    assert_false(rd_bytes(&r, SIZE_MAX, &p)); /* must not wrap the pointer */
    assert_true(rd_bytes(&r, 3, &p));
}

/* ---- UTF-8 names (§5.2.4) ----------------------------------------------- */

static bool name_ok(const uint8_t *b, size_t n) {
    wasm_reader r = reader_on(b, n);
    const uint8_t *s;
    uint32_t len;
    bool ok = rd_name(&r, &s, &len);
    if (!ok) assert_non_null(r.error);
    return ok;
}

static void test_utf8(void **state) {
    (void)state;
    assert_true(name_ok(BYTES(0x00)));
    assert_true(name_ok(BYTES(0x03, 'a', 0x00, 'b')));             /* NUL is a valid char */
    assert_true(name_ok(BYTES(0x02, 0xC2, 0x80)));                 /* U+0080 */
    assert_true(name_ok(BYTES(0x03, 0xE0, 0xA0, 0x80)));           /* U+0800 */
    assert_true(name_ok(BYTES(0x03, 0xED, 0x9F, 0xBF)));           /* U+D7FF */
    assert_true(name_ok(BYTES(0x03, 0xEE, 0x80, 0x80)));           /* U+E000 */
    assert_true(name_ok(BYTES(0x04, 0xF0, 0x90, 0x80, 0x80)));     /* U+10000 */
    assert_true(name_ok(BYTES(0x04, 0xF4, 0x8F, 0xBF, 0xBF)));     /* U+10FFFF */

    wasm_reader r = reader_on(BYTES(0x02, 0xC0, 0x80));
    const uint8_t *s;
    uint32_t len;
    assert_false(rd_name(&r, &s, &len));
    assert_string_equal(r.error, "malformed UTF-8 encoding");

    assert_false(name_ok(BYTES(0x02, 0xC1, 0xBF)));                /* overlong 2-byte */
    assert_false(name_ok(BYTES(0x03, 0xE0, 0x9F, 0xBF)));          /* overlong 3-byte */
    assert_false(name_ok(BYTES(0x04, 0xF0, 0x8F, 0xBF, 0xBF)));    /* overlong 4-byte */
    assert_false(name_ok(BYTES(0x03, 0xED, 0xA0, 0x80)));          /* U+D800 surrogate */
    assert_false(name_ok(BYTES(0x03, 0xED, 0xBF, 0xBF)));          /* U+DFFF surrogate */
    assert_false(name_ok(BYTES(0x04, 0xF4, 0x90, 0x80, 0x80)));    /* U+110000 */
    assert_false(name_ok(BYTES(0x04, 0xF5, 0x80, 0x80, 0x80)));    /* bad lead */
    assert_false(name_ok(BYTES(0x01, 0x80)));                      /* lone continuation */
    assert_false(name_ok(BYTES(0x01, 0xFF)));
    assert_false(name_ok(BYTES(0x02, 0xE2, 0x82)));                /* truncated by length */
    assert_false(name_ok(BYTES(0x03, 0xE2, 0x82, 0x41)));          /* bad continuation */
    assert_false(name_ok(BYTES(0x05, 'a', 'b')));                  /* length past the end */
}

/* ---- instructions (§5.4) ------------------------------------------------- */

static bool instr(const uint8_t *b, size_t n, wasm_instr *in, const char **reason) {
    wasm_reader r = reader_on(b, n);
    bool ok = rd_instr(&r, in);
    *reason = r.error;
    if (ok) assert_true(rd_eof(&r)); /* every test encodes exactly one instruction */
    return ok;
}

static void test_instr_immediates(void **state) {
    (void)state;
    wasm_instr in;
    const char *why;

    assert_true(instr(BYTES(0x41, 0x7F), &in, &why)); /* i32.const -1 */
    assert_int_equal(in.op, 0x41);
    assert_true(in.imm == UINT64_MAX);

    assert_true(instr(BYTES(0x02, 0x40), &in, &why)); /* block (empty) */
    assert_true(in.blocktype == 0x40 && !in.blocktype_is_index);
    assert_true(instr(BYTES(0x03, 0x7F), &in, &why)); /* loop (result i32) */
    assert_true(in.blocktype == 0x7F && !in.blocktype_is_index);
    assert_true(instr(BYTES(0x04, 0xC0, 0x00), &in, &why)); /* if (type 64) */
    assert_true(in.blocktype == 64 && in.blocktype_is_index);
    assert_false(instr(BYTES(0x02, 0x7B), &in, &why)); /* v128 block: negative s33 */

    assert_true(instr(BYTES(0x0E, 0x02, 0x00, 0x81, 0x01, 0x05), &in, &why)); /* br_table */
    assert_int_equal(in.count, 2);
    assert_int_equal(in.idx, 5);
    assert_int_equal(in.targets[0], 0x00);
    assert_false(instr(BYTES(0x0E, 0x02, 0x00, 0x01), &in, &why)); /* default missing */
    assert_string_equal(why, "unexpected end");
    assert_false(instr(BYTES(0x0E, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x00), &in, &why));

    assert_true(instr(BYTES(0x11, 0x03, 0x01), &in, &why)); /* call_indirect */
    assert_true(in.idx == 3 && in.idx2 == 1);
    assert_true(instr(BYTES(0x1C, 0x01, 0x6F), &in, &why)); /* select (result externref) */
    assert_true(in.count == 1 && in.reftype == 0x6F);
    assert_true(instr(BYTES(0x28, 0x02, 0x10), &in, &why)); /* i32.load align=2 offset=16 */
    assert_true(in.align == 2 && in.mem_offset == 16);
    assert_true(instr(BYTES(0x44, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F), &in, &why)); /* f64.const 1 */
    assert_true(in.imm == 0x3FF0000000000000ull);

    assert_true(instr(BYTES(0x40, 0x00), &in, &why));
    assert_false(instr(BYTES(0x40, 0x80, 0x00), &in, &why)); /* LEB zero is not a zero byte */
    assert_string_equal(why, "zero byte expected");
    assert_false(instr(BYTES(0x3F, 0x01), &in, &why));
    assert_string_equal(why, "zero byte expected");

    assert_true(instr(BYTES(0xD0, 0x70), &in, &why));
    assert_false(instr(BYTES(0xD0, 0x7F), &in, &why));
    assert_string_equal(why, "malformed reference type");

    assert_true(instr(BYTES(0xFC, 0x88, 0x00, 0x03, 0x00), &in, &why)); /* memory.init 3, LEB sub-op */
    assert_true(in.op == (WASM_OP_PREFIX_FC | 8) && in.idx == 3);
    assert_true(wasm_op_uses_data_index(in.op));
    assert_true(instr(BYTES(0xFC, 0x0A, 0x00, 0x00), &in, &why)); /* memory.copy */
    assert_false(instr(BYTES(0xFC, 0x0A, 0x00, 0x01), &in, &why));
    assert_true(instr(BYTES(0xFC, 0x0E, 0x01, 0x02), &in, &why)); /* table.copy 1 2 */
    assert_true(in.idx == 1 && in.idx2 == 2);
    assert_false(instr(BYTES(0xFC, 0x12), &in, &why));
    assert_string_equal(why, "illegal opcode");
}

static void test_illegal_opcodes(void **state) {
    (void)state;
    static const uint8_t illegal[] = {0x06, 0x07, 0x08, 0x09, 0x0A, 0x12, 0x13, 0x14, 0x15,
                                      0x16, 0x17, 0x18, 0x19, 0x1D, 0x1E, 0x1F, 0x27, 0xC5,
                                      0xCF, 0xD3, 0xF3, 0xFD, 0xFE, 0xFF};
    for (size_t i = 0; i < sizeof illegal; i++) {
        uint8_t b[4] = {illegal[i], 0, 0, 0};
        wasm_reader r = reader_on(b, sizeof b);
        wasm_instr in;
        assert_false(rd_instr(&r, &in));
        assert_string_equal(r.error, "illegal opcode");
    }
    /* Every opcode byte either decodes or fails cleanly, even with no immediates. */
    for (unsigned op = 0; op < 256; op++) {
        uint8_t b[1] = {(uint8_t)op};
        wasm_reader r = reader_on(b, 1);
        wasm_instr in;
        if (!rd_instr(&r, &in)) assert_non_null(r.error);
        assert_true(r.p <= r.end);
    }
}

/* ---- a complete module ----------------------------------------------------- */

static const uint8_t full_module[] = {
    HEADER,
    0x01, 0x09, 0x02, 0x60, 0x00, 0x00, 0x60, 0x01, 0x7F, 0x01, 0x7F, /* types: []->[], [i32]->[i32] */
    0x02, 0x09, 0x01, 0x03, 'e', 'n', 'v', 0x01, 'f', 0x00, 0x01,     /* import env.f: type 1 */
    0x03, 0x03, 0x02, 0x00, 0x01,                                     /* funcs 1, 2: types 0, 1 */
    0x04, 0x04, 0x01, 0x70, 0x00, 0x01,                               /* table funcref min 1 */
    0x05, 0x04, 0x01, 0x01, 0x01, 0x02,                               /* memory 1..2 */
    0x06, 0x06, 0x01, 0x7F, 0x00, 0x41, 0x2A, 0x0B,                   /* global i32 = 42 */
    0x07, 0x0D, 0x02, 0x03, 'r', 'u', 'n', 0x00, 0x02,                /* export "run" func 2 */
    0x03, 'm', 'e', 'm', 0x02, 0x00,                                  /* export "mem" memory 0 */
    0x08, 0x01, 0x01,                                                 /* start: func 1 */
    0x09, 0x07, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x01, 0x02,             /* elem: table 0 @0 [func 2] */
    0x0C, 0x01, 0x01,                                                 /* data count 1 */
    0x0A, 0x0E, 0x02,                                                 /* code: 2 bodies */
    0x02, 0x00, 0x0B,                                                 /*   func 1: end */
    0x09, 0x01, 0x01, 0x7F, 0x20, 0x00, 0x20, 0x01, 0x6A, 0x0B,       /*   func 2: local i32, add */
    0x0B, 0x08, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x02, 'h', 'i',         /* data @0 "hi" */
    0x00, 0x0D, 0x04, 'n', 'a', 'm', 'e',                             /* custom "name" */
    0x01, 0x06, 0x01, 0x02, 0x03, 'r', 'u', 'n',                      /* func 2 = "run" */
};

static void test_full_module(void **state) {
    (void)state;
    al_error err;
    al_module *m = wasm_decode(full_module, sizeof full_module, &err);
    assert_non_null(m);
    assert_true(m->bytes != full_module); /* private copy */
    assert_int_equal(m->ntypes, 2);
    assert_int_equal(m->types[1].nparams, 1);
    assert_int_equal(m->types[1].params[0], AL_I32);
    assert_int_equal(m->nimports, 1);
    assert_string_equal(m->imports[0].module, "env");
    assert_int_equal(m->nfuncs, 3);
    assert_int_equal(m->nfunc_imports, 1);
    assert_int_equal(m->func_types[0], 1);
    assert_int_equal(m->func_types[1], 0);
    assert_int_equal(m->func_types[2], 1);
    assert_int_equal(m->funcs[1].nlocals, 1);
    assert_int_equal(m->funcs[1].local_types[0], AL_I32);
    assert_int_equal(m->funcs[1].body_size, 6);
    assert_int_equal(m->bytes[m->funcs[1].body_offset], 0x20);
    assert_int_equal(m->bytes[m->funcs[1].body_offset + m->funcs[1].body_size - 1], 0x0B);
    assert_int_equal(m->ntables, 1);
    assert_int_equal(m->nmemories, 1);
    assert_true(m->memories[0].has_max && m->memories[0].max == 2);
    assert_int_equal(m->nglobals, 1);
    assert_int_equal(m->nexports, 2);
    assert_true(m->has_start && m->start == 1);
    assert_int_equal(m->nelems, 1);
    assert_int_equal(m->elems[0].count, 1);
    assert_int_equal(m->elems[0].items[0].size, 0);
    assert_int_equal(m->elems[0].items[0].op, 0xD2);
    assert_int_equal(m->elems[0].items[0].value, 2);
    assert_int_equal(m->ndatas, 1);
    assert_int_equal(m->datas[0].data_size, 2);
    assert_memory_equal(m->bytes + m->datas[0].data_offset, "hi", 2);
    assert_true(m->has_data_count && m->data_count == 1);
    assert_non_null(m->func_names);
    assert_null(m->func_names[0]);
    assert_string_equal(m->func_names[2], "run");

    assert_true(wasm_validate_module(m, &err));
    assert_int_equal(m->global_inits[0].op, 0x41);
    assert_int_equal(m->global_inits[0].value, 42);
    assert_int_equal(m->elems[0].offset.op, 0x41);
    assert_non_null(m->declared_refs);
    assert_false(m->declared_refs[0]);
    assert_false(m->declared_refs[1]);
    assert_true(m->declared_refs[2]);
    wasm_module_free(m);
}

/* Byte offsets where a section ends (all sizes here fit in one LEB byte). */
static bool at_section_boundary(const uint8_t *b, size_t n, size_t len) {
    size_t pos = 8;
    while (pos <= len && pos < n) {
        if (pos == len) return true;
        pos += 2 + b[pos + 1];
    }
    return pos == len;
}

static void test_truncation(void **state) {
    (void)state;
    for (size_t len = 0; len < sizeof full_module; len++) {
        al_error err;
        al_module *m = wasm_decode(full_module, len, &err);
        if (m == NULL) {
            assert_int_equal(err.kind, AL_ERR_MALFORMED);
            assert_true(strlen(err.message) > 0);
        } else {
            /* Only a cut between sections can leave a well-formed module. */
            assert_true(len == 8 || at_section_boundary(full_module, sizeof full_module, len));
            (void)wasm_validate_module(m, &err);
            wasm_module_free(m);
        }
    }
}

/* Deterministic mutations of the full module: anything may happen except a
 * crash, an out-of-bounds read or a leak (the sanitizers check those). */
static void test_mutations(void **state) {
    (void)state;
    uint8_t buf[sizeof full_module];
    uint32_t seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, full_module, sizeof buf);
        for (int k = 0; k < 1 + iter % 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = 8 + (seed >> 8) % (sizeof buf - 8);
            seed = seed * 1103515245u + 12345u;
            buf[at] = (uint8_t)(seed >> 16);
        }
        al_error err;
        al_module *m = wasm_decode(buf, sizeof buf, &err);
        if (m) {
            (void)wasm_validate_module(m, &err);
            wasm_module_free(m);
        } else {
            assert_true(err.kind == AL_ERR_MALFORMED || err.kind == AL_ERR_LIMIT);
        }
    }
}

/* ---- structural errors ----------------------------------------------------- */

static void expect_malformed(const uint8_t *b, size_t n, const char *reason) {
    al_error err;
    al_module *m = wasm_decode(b, n, &err);
    if (m) wasm_module_free(m);
    assert_null(m);
    assert_int_equal(err.kind, AL_ERR_MALFORMED);
    if (strstr(err.message, reason) == NULL) fail_msg("got \"%s\", want \"%s\"", err.message, reason);
}

static void expect_ok(const uint8_t *b, size_t n) {
    al_error err;
    al_module *m = wasm_decode(b, n, &err);
    if (m == NULL) fail_msg("decode failed: %s", err.message);
    wasm_module_free(m);
}

static void test_header(void **state) {
    (void)state;
    expect_ok(BYTES(HEADER));
    expect_malformed(NULL, 0, "unexpected end");
    expect_malformed(BYTES(0x00, 0x61, 0x73), "unexpected end");
    expect_malformed(BYTES(0x00, 0x61, 0x73, 0x6D, 0x01), "unexpected end");
    expect_malformed(BYTES(0x00, 0x41, 0x53, 0x4D, 0x01, 0x00, 0x00, 0x00), "magic header not detected");
    expect_malformed(BYTES(0x00, 0x61, 0x73, 0x6D, 0x02, 0x00, 0x00, 0x00), "unknown binary version");
    expect_malformed(BYTES(HEADER, HEADER), "length out of bounds"); /* concatenated modules */
}

static void test_section_order(void **state) {
    (void)state;
    /* custom sections anywhere, including first and last */
    expect_ok(BYTES(HEADER, 0x00, 0x02, 0x01, 'x', 0x01, 0x01, 0x00, 0x00, 0x01, 0x00,
                    0x03, 0x01, 0x00, 0x00, 0x02, 0x01, 'y'));
    /* type after function */
    expect_malformed(BYTES(HEADER, 0x03, 0x01, 0x00, 0x01, 0x01, 0x00),
                     "unexpected content after last section");
    /* duplicate */
    expect_malformed(BYTES(HEADER, 0x01, 0x01, 0x00, 0x01, 0x01, 0x00),
                     "unexpected content after last section");
    /* data count goes after element and before code */
    expect_ok(BYTES(HEADER, 0x09, 0x01, 0x00, 0x0C, 0x01, 0x00, 0x0A, 0x01, 0x00));
    expect_malformed(BYTES(HEADER, 0x0A, 0x01, 0x00, 0x0C, 0x01, 0x00),
                     "unexpected content after last section");
    expect_malformed(BYTES(HEADER, 0x0D, 0x00), "malformed section id");
    expect_malformed(BYTES(HEADER, 0x80, 0x00, 0x01, 0x00), "malformed section id");
    /* size mismatch: the declared size leaves a byte unread */
    expect_malformed(BYTES(HEADER, 0x01, 0x02, 0x00, 0x00), "section size mismatch");
    /* custom section name must be valid UTF-8 */
    expect_malformed(BYTES(HEADER, 0x00, 0x02, 0x01, 0xFF), "malformed UTF-8 encoding");
    expect_malformed(BYTES(HEADER, 0x00, 0x00), "unexpected end");
}

static void test_section_contents(void **state) {
    (void)state;
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x01, 0x7B), "malformed value type");
    expect_malformed(BYTES(HEADER, 0x02, 0x04, 0x01, 0x00, 0x00, 0x04), "malformed import kind");
    expect_malformed(BYTES(HEADER, 0x04, 0x03, 0x01, 0x70, 0x02), "integer too large");
    expect_malformed(BYTES(HEADER, 0x05, 0x03, 0x01, 0x81, 0x00), "integer representation too long");
    expect_malformed(BYTES(HEADER, 0x06, 0x06, 0x01, 0x7F, 0x02, 0x41, 0x00, 0x0B),
                     "malformed mutability");
    expect_malformed(BYTES(HEADER, 0x03, 0x02, 0x01, 0x00), /* function without code */
                     "function and code section have inconsistent lengths");
    expect_malformed(BYTES(HEADER, 0x0A, 0x04, 0x01, 0x02, 0x00, 0x0B),
                     "function and code section have inconsistent lengths");
    expect_malformed(BYTES(HEADER, 0x0C, 0x01, 0x01), /* data count 1, no data */
                     "data count and data section have inconsistent lengths");
    /* body missing its final end */
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x0A, 0x05, 0x01, 0x03, 0x00, 0x41, 0x01),
                     "END opcode expected");
    /* bytes after the body's final end */
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x0A, 0x05, 0x01, 0x03, 0x00, 0x0B, 0x01),
                     "section size mismatch");
    /* 0xFFFFFFFF + 2 locals */
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x0A, 0x0C, 0x01, 0x0A, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x7F, 0x02,
                           0x7E, 0x0B),
                     "too many locals");
    /* data.drop with a data section but no data count section */
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x05, 0x03, 0x01, 0x00, 0x00, 0x0A, 0x07, 0x01, 0x05, 0x00, 0xFC, 0x09,
                           0x00, 0x0B, 0x0B, 0x03, 0x01, 0x01, 0x00),
                     "data count section required");
    /* elem segment flags out of range, and a bad elemkind */
    expect_malformed(BYTES(HEADER, 0x09, 0x04, 0x01, 0x08, 0x00, 0x00), "malformed elements segment kind");
    expect_malformed(BYTES(HEADER, 0x09, 0x04, 0x01, 0x01, 0x01, 0x00), "malformed element kind");
    expect_malformed(BYTES(HEADER, 0x09, 0x07, 0x01, 0x05, 0x7F, 0x01, 0xD2, 0x00, 0x0B),
                     "malformed reference type");
    expect_malformed(BYTES(HEADER, 0x09, 0x07, 0x01, 0x05, 0x70, 0x01, 0xF3, 0x00, 0x0B),
                     "illegal opcode");
    expect_malformed(BYTES(HEADER, 0x0B, 0x03, 0x01, 0x03, 0x00), "malformed data segment kind");
}

/* All eight element segment encodings (§5.5.12) decode to the same shape. */
static void test_elem_forms(void **state) {
    (void)state;
    static const uint8_t mod[] = {
        HEADER,
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
        0x03, 0x02, 0x01, 0x00,
        0x04, 0x04, 0x01, 0x70, 0x00, 0x0A,
        0x09, 0x35, 0x08,
        0x00, 0x41, 0x00, 0x0B, 0x01, 0x00,                   /* 0: active, funcidx */
        0x01, 0x00, 0x01, 0x00,                               /* 1: passive, funcidx */
        0x02, 0x00, 0x41, 0x01, 0x0B, 0x00, 0x01, 0x00,       /* 2: active table 0, funcidx */
        0x03, 0x00, 0x01, 0x00,                               /* 3: declarative, funcidx */
        0x04, 0x41, 0x02, 0x0B, 0x01, 0xD2, 0x00, 0x0B,       /* 4: active, exprs */
        0x05, 0x70, 0x01, 0xD0, 0x70, 0x0B,                   /* 5: passive, exprs */
        0x06, 0x00, 0x41, 0x03, 0x0B, 0x70, 0x01, 0xD2, 0x00, 0x0B, /* 6: active table 0 */
        0x07, 0x70, 0x01, 0xD2, 0x00, 0x0B,                   /* 7: declarative, exprs */
        0x0A, 0x04, 0x01, 0x02, 0x00, 0x0B,
    };
    al_error err;
    al_module *m = wasm_decode(mod, sizeof mod, &err);
    if (m == NULL) fail_msg("%s", err.message);
    assert_int_equal(m->nelems, 8);
    static const wasm_segment_mode modes[8] = {
        WASM_SEGMENT_ACTIVE, WASM_SEGMENT_PASSIVE, WASM_SEGMENT_ACTIVE, WASM_SEGMENT_DECLARATIVE,
        WASM_SEGMENT_ACTIVE, WASM_SEGMENT_PASSIVE, WASM_SEGMENT_ACTIVE, WASM_SEGMENT_DECLARATIVE,
    };
    for (int i = 0; i < 8; i++) {
        assert_int_equal(m->elems[i].mode, modes[i]);
        assert_int_equal(m->elems[i].count, 1);
        assert_int_equal(m->elems[i].elem_type, AL_FUNCREF);
    }
    assert_true(wasm_validate_module(m, &err));
    assert_int_equal(m->elems[5].items[0].op, 0xD0);
    assert_int_equal(m->elems[6].offset.value, 3);
    assert_int_equal(m->elems[4].items[0].op, 0xD2);
    assert_true(m->declared_refs[0]);
    wasm_module_free(m);
}

/* ---- the name section ------------------------------------------------------ */

static al_module *with_name_section(const uint8_t *payload, size_t n) {
    /* one function, then a custom "name" section with the given payload */
    uint8_t buf[128];
    static const uint8_t prefix[] = {HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
                                     0x03, 0x03, 0x02, 0x00, 0x00,
                                     0x0A, 0x07, 0x02, 0x02, 0x00, 0x0B, 0x02, 0x00, 0x0B};
    assert_true(sizeof prefix + 7 + n <= sizeof buf && n < 100);
    size_t k = 0;
    memcpy(buf, prefix, sizeof prefix);
    k = sizeof prefix;
    buf[k++] = 0x00;
    buf[k++] = (uint8_t)(5 + n);
    buf[k++] = 0x04;
    memcpy(buf + k, "name", 4);
    k += 4;
    memcpy(buf + k, payload, n);
    k += n;
    al_error err;
    al_module *m = wasm_decode(buf, k, &err);
    if (m == NULL) fail_msg("a name section must never fail the module: %s", err.message);
    return m;
}

static void test_name_section(void **state) {
    (void)state;
    /* module name subsection (0) is skipped, function names (1) parsed */
    al_module *m = with_name_section(BYTES(0x00, 0x02, 0x01, 'M',
                                           0x01, 0x07, 0x02, 0x00, 0x01, 'a', 0x01, 0x01, 'b'));
    assert_non_null(m->func_names);
    assert_string_equal(m->func_names[0], "a");
    assert_string_equal(m->func_names[1], "b");
    wasm_module_free(m);

    /* ill-formed variants are ignored, never fatal */
    static const struct { uint8_t b[16]; size_t n; } bad[] = {
        {{0x01, 0x04, 0x01, 0x05, 0x01, 'a'}, 6},                   /* index out of range */
        {{0x01, 0x07, 0x02, 0x01, 0x01, 'a', 0x00, 0x01, 'b'}, 9}, /* not increasing */
        {{0x01, 0x04, 0x01, 0x00, 0x01, 0xFF}, 6},                  /* bad UTF-8 */
        {{0x01, 0x09, 0x01, 0x00, 0x01, 'a'}, 6},                   /* subsection too long */
        {{0x01, 0x05, 0x01, 0x00, 0x01, 'a', 0x00}, 7},             /* trailing byte */
        {{0x01, 0x04, 0xFF, 0xFF, 0xFF, 0x0F}, 6},                  /* huge count */
        {{0x01}, 1},                                                /* truncated */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = with_name_section(bad[i].b, bad[i].n);
        assert_null(m->func_names);
        wasm_module_free(m);
    }
}

/* ---- hostile counts --------------------------------------------------------- */

/* Counts of 2^32-1 with a handful of bytes behind them must be refused
 * before any allocation (under ASan a 32 GB calloc would abort the test). */
static void test_huge_counts(void **state) {
    (void)state;
#define HUGE 0xFF, 0xFF, 0xFF, 0xFF, 0x0F
    expect_malformed(BYTES(HEADER, 0x01, 0x0A, HUGE, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x02, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x03, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x04, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x05, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x06, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x07, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x09, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x0B, 0x0A, HUGE, 0, 0, 0, 0, 0), "length out of bounds");
    /* type with 2^32-1 params */
    expect_malformed(BYTES(HEADER, 0x01, 0x09, 0x01, 0x60, HUGE, 0x7F, 0x00), "length out of bounds");
    /* elem segment with 2^32-1 function indices */
    expect_malformed(BYTES(HEADER, 0x09, 0x09, 0x01, 0x01, 0x00, HUGE, 0x00), "length out of bounds");
    /* body with 2^32-1 local groups */
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x0A, 0x09, 0x01, 0x07, HUGE, 0x7F, 0x0B),
                     "length out of bounds");
    /* section and body sizes past the end */
    expect_malformed(BYTES(HEADER, 0x01, HUGE), "length out of bounds");
    expect_malformed(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00,
                           0x0A, 0x07, 0x01, HUGE, 0x0B),
                     "length out of bounds");
    /* data segment length past the end */
    expect_malformed(BYTES(HEADER, 0x0B, 0x07, 0x01, 0x01, HUGE), "unexpected end");
#undef HUGE
}

/* 50001 locals is a well-formed body but above WASM_MAX_LOCALS: a limit. */
static void test_local_limit(void **state) {
    (void)state;
    al_error err;
    al_module *m = wasm_decode(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01,
                                     0x00, 0x0A, 0x08, 0x01, 0x06, 0x01, 0xD1, 0x86, 0x03, 0x7F,
                                     0x0B),
                               &err);
    assert_null(m);
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    m = wasm_decode(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01,
                          0x00, 0x0A, 0x08, 0x01, 0x06, 0x01, 0xD0, 0x86, 0x03, 0x7F, 0x0B),
                    &err); /* exactly 50000 */
    assert_non_null(m);
    assert_int_equal(m->funcs[0].nlocals, 50000);
    wasm_module_free(m);
}

/* ---- module-level validation ------------------------------------------------ */

static void expect_invalid(const uint8_t *b, size_t n, const char *reason) {
    al_error err;
    al_module *m = wasm_decode(b, n, &err);
    if (m == NULL) fail_msg("decode failed: %s", err.message);
    bool ok = wasm_validate_module(m, &err);
    wasm_module_free(m);
    assert_false(ok);
    assert_int_equal(err.kind, AL_ERR_INVALID);
    if (strstr(err.message, reason) == NULL) fail_msg("got \"%s\", want \"%s\"", err.message, reason);
}

static void test_validation(void **state) {
    (void)state;
    /* global initialisers */
    expect_invalid(BYTES(HEADER, 0x06, 0x04, 0x01, 0x7F, 0x00, 0x0B), "type mismatch");
    expect_invalid(BYTES(HEADER, 0x06, 0x06, 0x01, 0x7E, 0x00, 0x41, 0x00, 0x0B), "type mismatch");
    expect_invalid(BYTES(HEADER, 0x06, 0x08, 0x01, 0x7F, 0x00, 0x41, 0x00, 0x41, 0x00, 0x0B),
                   "type mismatch");
    expect_invalid(BYTES(HEADER, 0x06, 0x07, 0x01, 0x7F, 0x00, 0x41, 0x00, 0x6A, 0x0B),
                   "constant expression required");
    expect_invalid(BYTES(HEADER, 0x06, 0x06, 0x01, 0x7F, 0x00, 0x23, 0x00, 0x0B), "unknown global");
    /* global.get of a defined global is unknown in WebAssembly 2.0 */
    expect_invalid(BYTES(HEADER, 0x06, 0x0B, 0x02, 0x7F, 0x00, 0x41, 0x00, 0x0B,
                         0x7F, 0x00, 0x23, 0x00, 0x0B), "unknown global");
    /* global.get of a mutable import */
    expect_invalid(BYTES(HEADER, 0x02, 0x08, 0x01, 0x01, 'm', 0x01, 'g', 0x03, 0x7F, 0x01,
                         0x06, 0x06, 0x01, 0x7F, 0x00, 0x23, 0x00, 0x0B),
                   "constant expression required");
    /* limits */
    expect_invalid(BYTES(HEADER, 0x05, 0x05, 0x01, 0x00, 0x81, 0x80, 0x04), "at most 65536 pages");
    expect_invalid(BYTES(HEADER, 0x05, 0x04, 0x01, 0x01, 0x02, 0x01), "minimum must not be greater");
    expect_invalid(BYTES(HEADER, 0x04, 0x05, 0x01, 0x70, 0x01, 0x02, 0x01), "minimum must not be greater");
    expect_invalid(BYTES(HEADER, 0x05, 0x05, 0x02, 0x00, 0x00, 0x00, 0x00), "multiple memories");
    /* exports */
    expect_invalid(BYTES(HEADER, 0x05, 0x03, 0x01, 0x00, 0x00, 0x07, 0x09, 0x02,
                         0x01, 'a', 0x02, 0x00, 0x01, 'a', 0x02, 0x00),
                   "duplicate export name");
    expect_invalid(BYTES(HEADER, 0x07, 0x05, 0x01, 0x01, 'a', 0x00, 0x00), "unknown function");
    /* start must be [] -> [] */
    expect_invalid(BYTES(HEADER, 0x01, 0x05, 0x01, 0x60, 0x01, 0x7F, 0x00, 0x03, 0x02, 0x01, 0x00,
                         0x08, 0x01, 0x00, 0x0A, 0x04, 0x01, 0x02, 0x00, 0x0B),
                   "start function");
    /* unknown type */
    expect_invalid(BYTES(HEADER, 0x03, 0x02, 0x01, 0x00, 0x0A, 0x04, 0x01, 0x02, 0x00, 0x0B),
                   "unknown type");
    /* element and data segments */
    expect_invalid(BYTES(HEADER, 0x09, 0x06, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x00), "unknown table");
    expect_invalid(BYTES(HEADER, 0x04, 0x04, 0x01, 0x6F, 0x00, 0x01,
                         0x09, 0x06, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x00), "type mismatch");
    expect_invalid(BYTES(HEADER, 0x04, 0x04, 0x01, 0x70, 0x00, 0x01,
                         0x09, 0x07, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x01, 0x05), "unknown function");
    expect_invalid(BYTES(HEADER, 0x0B, 0x06, 0x01, 0x00, 0x41, 0x00, 0x0B, 0x00), "unknown memory");
    expect_invalid(BYTES(HEADER, 0x05, 0x03, 0x01, 0x00, 0x00,
                         0x0B, 0x06, 0x01, 0x00, 0x42, 0x00, 0x0B, 0x00), "type mismatch");
}

/* Exported functions count as declared references (§3.4.10). */
static void test_declared_refs_exports(void **state) {
    (void)state;
    al_error err;
    al_module *m = wasm_decode(BYTES(HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
                                     0x03, 0x03, 0x02, 0x00, 0x00,
                                     0x07, 0x05, 0x01, 0x01, 'f', 0x00, 0x01,
                                     0x0A, 0x07, 0x02, 0x02, 0x00, 0x0B, 0x02, 0x00, 0x0B),
                               &err);
    assert_non_null(m);
    assert_true(wasm_validate_module(m, &err));
    assert_false(m->declared_refs[0]);
    assert_true(m->declared_refs[1]);
    wasm_module_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leb_u32),
        cmocka_unit_test(test_leb_s32),
        cmocka_unit_test(test_leb_s64_s33_u64),
        cmocka_unit_test(test_fixed_width),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_instr_immediates),
        cmocka_unit_test(test_illegal_opcodes),
        cmocka_unit_test(test_full_module),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_section_order),
        cmocka_unit_test(test_section_contents),
        cmocka_unit_test(test_elem_forms),
        cmocka_unit_test(test_name_section),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_local_limit),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_declared_refs_exports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
