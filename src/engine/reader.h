/*
 * reader.h — bounded reading of the wasm binary format (spec §5.1, §5.2, §5.4).
 *
 * Every read checks the remaining length first; nothing here can read past
 * `end`. LEB128 readers enforce the spec's size limits: at most ceil(N/7)
 * bytes, and the unused bits of the final byte must be zero (unsigned) or a
 * sign extension (signed) — "integer representation too long" / "integer too
 * large" otherwise.
 *
 * On failure a reader returns false and leaves a static reason string in
 * r->error (spec wording where the spec test suite has one, e.g. "unexpected
 * end", "integer too large", "illegal opcode", "zero byte expected") and the
 * failing position in r->p. Callers add the section/offset context.
 */
#ifndef AIRLOCK_ENGINE_READER_H
#define AIRLOCK_ENGINE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wasm_reader {
    const uint8_t *base; /* start of the whole module: offsets are p - base */
    const uint8_t *p;
    const uint8_t *end;
    const char *error;
} wasm_reader;

static inline uint32_t rd_offset(const wasm_reader *r) { return (uint32_t)(r->p - r->base); }
static inline bool rd_eof(const wasm_reader *r) { return r->p >= r->end; }

bool rd_u8(wasm_reader *r, uint8_t *out);
bool rd_u32(wasm_reader *r, uint32_t *out);  /* unsigned LEB128, <= 5 bytes */
bool rd_s32(wasm_reader *r, int32_t *out);   /* signed LEB128, <= 5 bytes */
bool rd_s33(wasm_reader *r, int64_t *out);   /* signed LEB128, <= 5 bytes (block types) */
bool rd_s64(wasm_reader *r, int64_t *out);   /* signed LEB128, <= 10 bytes */
bool rd_u64(wasm_reader *r, uint64_t *out);  /* unsigned LEB128, <= 10 bytes */
bool rd_f32(wasm_reader *r, uint32_t *bits); /* 4 bytes little endian */
bool rd_f64(wasm_reader *r, uint64_t *bits); /* 8 bytes little endian */
bool rd_bytes(wasm_reader *r, size_t n, const uint8_t **out);
/* A name: u32 length + bytes that must be valid UTF-8 ("malformed UTF-8 encoding"). */
bool rd_name(wasm_reader *r, const uint8_t **out, uint32_t *len);

/* Opcodes: one byte, or WASM_OP_PREFIX_FC | sub-opcode for the 0xFC prefix. */
#define WASM_OP_PREFIX_FC 0xFC00u

/*
 * One decoded instruction with its immediates. Which fields are meaningful
 * depends on op:
 *   block/loop/if        blocktype: 0x40 empty, a value type (0x7F..0x6F), or a
 *                        type index >= 0 (s33); stored as int64
 *   br, br_if            idx = label
 *   br_table             count = number of labels before the default;
 *                        targets = first byte of the label vector (count+1 u32
 *                        LEBs, all already checked to be well-formed);
 *                        idx = the default label (added for convenience)
 *   call                 idx = function
 *   call_indirect        idx = type, idx2 = table
 *   local.*, global.*    idx
 *   table.get/set/size/grow/fill   idx = table
 *   table.copy           idx = dst table, idx2 = src table
 *   table.init           idx = elem segment, idx2 = table
 *   elem.drop            idx = elem segment
 *   memory.init          idx = data segment (memory byte checked zero)
 *   data.drop            idx = data segment
 *   loads/stores         align (log2), offset
 *   i32.const/i64.const  imm = value sign-extended to 64 bits
 *   f32.const/f64.const  imm = raw bits
 *   ref.null             reftype
 *   ref.func             idx = function
 *   select (typed 0x1C)  count = number of types; reftype = the first type
 *                        (valid only when count == 1, which validation checks)
 */
typedef struct wasm_instr {
    uint32_t op;
    uint32_t offset; /* of the opcode byte, from r->base */
    int64_t blocktype;
    uint32_t idx, idx2;
    uint32_t align, mem_offset;
    uint64_t imm;
    uint32_t count;
    const uint8_t *targets;
    uint8_t reftype;
    /* Added: block/loop/if only. True when blocktype is a type index. Needed
     * because the documented encoding is ambiguous: type index 64 (s33
     * 0xC0 0x00) and 0x40 (empty), or 127 and 0x7F (i32), store the same
     * int64 value. Check this flag before interpreting blocktype. */
    bool blocktype_is_index;
} wasm_instr;

/* Read one instruction; false on malformed input (unknown opcode: "illegal opcode"). */
bool rd_instr(wasm_reader *r, wasm_instr *out);

/* Does this opcode need the data count section (memory.init, data.drop)? */
static inline bool wasm_op_uses_data_index(uint32_t op) {
    return op == (WASM_OP_PREFIX_FC | 8) || op == (WASM_OP_PREFIX_FC | 9);
}

#endif
