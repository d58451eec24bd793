/*
 * code.h — the interpreter's internal code, produced by compile.c and run by
 * exec.c.
 *
 * Design (register-based, translated once at load time):
 *  - A frame is an array of 64-bit slots: [params][locals][consts][operand stack].
 *    Every operand stack position has a fixed slot, known at translation
 *    time, so instructions name their operands by slot index and no value
 *    stack pointer exists at run time.
 *  - An instruction is a run of 64-bit cells: cell 0 is the handler address
 *    (direct-threaded, dispatched with computed goto), the others are slot
 *    indices or immediates. Branch targets are resolved to relative cell
 *    offsets, so nothing scans for block ends at run time.
 *  - Calls overlap frames: the caller's argument slots become the callee's
 *    parameter slots, and results come back in the same place.
 *  - Fuel: every instruction that ends a straight-line run (branches, calls,
 *    returns, and FUEL before a fall-through label) carries the run's wasm
 *    instruction count, which the interpreter subtracts from a counter held
 *    in a register. Loop headers (LOOP_CHECK) and function entry check the
 *    counter and the interrupt flag; every backward branch targets a
 *    LOOP_CHECK, so no loop can run unchecked.
 */
#ifndef AIRLOCK_ENGINE_CODE_H
#define AIRLOCK_ENGINE_CODE_H

#include <stdint.h>

typedef uint64_t cell;

/* Operand legend: d = destination slot, a/b/c = source slots, k = immediate,
 * off = relative branch offset in cells from the instruction's first cell,
 * fuel = instructions in the straight-line run this instruction ends. */
#define AL_OPS(X) \
    X(UNREACHABLE)      /* */ \
    X(BR)               /* off fuel */ \
    X(BR_IF)            /* a off fuel */ \
    X(BR_IFZ)           /* a off fuel */ \
    X(BR_TABLE)         /* a n fuel off0..offn */ \
    X(LOOP_CHECK)       /* (checks interrupt and fuel) */ \
    X(FUEL)             /* fuel: a run that falls through into a label */ \
    X(MOV)              /* d a */ \
    X(RETURN)           /* fuel */ \
    X(CALL)             /* funcidx argbase fuel */ \
    X(CALL_INDIRECT)    /* typeidx tableidx a argbase fuel */ \
    X(SELECT)           /* d a b cond */ \
    X(GLOBAL_GET)       /* d idx */ \
    X(GLOBAL_SET)       /* a idx */ \
    X(TABLE_GET)        /* d t a */ \
    X(TABLE_SET)        /* t a b */ \
    X(TABLE_SIZE)       /* d t */ \
    X(TABLE_GROW)       /* d t a(init) b(n) */ \
    X(TABLE_FILL)       /* t a(i) b(v) c(n) */ \
    X(TABLE_COPY)       /* tdst tsrc a b c */ \
    X(TABLE_INIT)       /* t seg a b c */ \
    X(ELEM_DROP)        /* seg */ \
    X(REF_FUNC)         /* d funcidx */ \
    X(MEMORY_SIZE)      /* d */ \
    X(MEMORY_GROW)      /* d a */ \
    X(MEMORY_INIT)      /* seg a b c */ \
    X(DATA_DROP)        /* seg */ \
    X(MEMORY_COPY)      /* a b c */ \
    X(MEMORY_FILL)      /* a b c */ \
    /* loads: d a(addr) k(offset) */ \
    X(LOAD32) X(LOAD64) X(LOAD8_S32) X(LOAD8_U) X(LOAD16_S32) X(LOAD16_U) \
    X(LOAD8_S64) X(LOAD16_S64) X(LOAD32_S64) \
    /* stores: a(addr) b(value) k(offset) */ \
    X(STORE8) X(STORE16) X(STORE32) X(STORE64) \
    /* i32 */ \
    X(I32_EQZ) X(I32_EQ) X(I32_NE) X(I32_LT_S) X(I32_LT_U) X(I32_GT_S) X(I32_GT_U) \
    X(I32_LE_S) X(I32_LE_U) X(I32_GE_S) X(I32_GE_U) \
    X(I64_EQZ) X(I64_EQ) X(I64_NE) X(I64_LT_S) X(I64_LT_U) X(I64_GT_S) X(I64_GT_U) \
    X(I64_LE_S) X(I64_LE_U) X(I64_GE_S) X(I64_GE_U) \
    X(F32_EQ) X(F32_NE) X(F32_LT) X(F32_GT) X(F32_LE) X(F32_GE) \
    X(F64_EQ) X(F64_NE) X(F64_LT) X(F64_GT) X(F64_LE) X(F64_GE) \
    X(I32_CLZ) X(I32_CTZ) X(I32_POPCNT) X(I32_ADD) X(I32_SUB) X(I32_MUL) \
    X(I32_DIV_S) X(I32_DIV_U) X(I32_REM_S) X(I32_REM_U) X(I32_AND) X(I32_OR) X(I32_XOR) \
    X(I32_SHL) X(I32_SHR_S) X(I32_SHR_U) X(I32_ROTL) X(I32_ROTR) \
    X(I64_CLZ) X(I64_CTZ) X(I64_POPCNT) X(I64_ADD) X(I64_SUB) X(I64_MUL) \
    X(I64_DIV_S) X(I64_DIV_U) X(I64_REM_S) X(I64_REM_U) X(I64_AND) X(I64_OR) X(I64_XOR) \
    X(I64_SHL) X(I64_SHR_S) X(I64_SHR_U) X(I64_ROTL) X(I64_ROTR) \
    X(F32_ABS) X(F32_NEG) X(F32_CEIL) X(F32_FLOOR) X(F32_TRUNC) X(F32_NEAREST) X(F32_SQRT) \
    X(F32_ADD) X(F32_SUB) X(F32_MUL) X(F32_DIV) X(F32_MIN) X(F32_MAX) X(F32_COPYSIGN) \
    X(F64_ABS) X(F64_NEG) X(F64_CEIL) X(F64_FLOOR) X(F64_TRUNC) X(F64_NEAREST) X(F64_SQRT) \
    X(F64_ADD) X(F64_SUB) X(F64_MUL) X(F64_DIV) X(F64_MIN) X(F64_MAX) X(F64_COPYSIGN) \
    X(I32_WRAP_I64) X(I32_TRUNC_F32_S) X(I32_TRUNC_F32_U) X(I32_TRUNC_F64_S) X(I32_TRUNC_F64_U) \
    X(I64_EXTEND_I32_S) X(I64_EXTEND_I32_U) X(I64_TRUNC_F32_S) X(I64_TRUNC_F32_U) \
    X(I64_TRUNC_F64_S) X(I64_TRUNC_F64_U) \
    X(F32_CONVERT_I32_S) X(F32_CONVERT_I32_U) X(F32_CONVERT_I64_S) X(F32_CONVERT_I64_U) \
    X(F32_DEMOTE_F64) \
    X(F64_CONVERT_I32_S) X(F64_CONVERT_I32_U) X(F64_CONVERT_I64_S) X(F64_CONVERT_I64_U) \
    X(F64_PROMOTE_F32) \
    X(I32_EXTEND8_S) X(I32_EXTEND16_S) X(I64_EXTEND8_S) X(I64_EXTEND16_S) X(I64_EXTEND32_S) \
    X(I32_TRUNC_SAT_F32_S) X(I32_TRUNC_SAT_F32_U) X(I32_TRUNC_SAT_F64_S) X(I32_TRUNC_SAT_F64_U) \
    X(I64_TRUNC_SAT_F32_S) X(I64_TRUNC_SAT_F32_U) X(I64_TRUNC_SAT_F64_S) X(I64_TRUNC_SAT_F64_U) \
    /* fused: compare-and-branch, binop with an immediate right operand */ \
    X(BR_I32_EQ) X(BR_I32_NE) X(BR_I32_LT_S) X(BR_I32_LT_U) X(BR_I32_GT_S) X(BR_I32_GT_U) \
    X(BR_I32_LE_S) X(BR_I32_LE_U) X(BR_I32_GE_S) X(BR_I32_GE_U) /* a b off fuel */ \
    X(I32_ADD_K) X(I32_SUB_K) X(I32_AND_K) X(I32_SHL_K) X(I32_SHR_U_K) X(I32_SHR_S_K) /* d a k */ \
    X(I64_ADD_K) /* d a k */ \
    /* fused i32.add + load/store: the address is the wrapped i32 sum of two \
     * slots (compiled C indexes arrays this way), then + k as for any access */ \
    X(LOAD32_IX) X(LOAD64_IX) X(LOAD8_S32_IX) X(LOAD8_U_IX) X(LOAD16_S32_IX) X(LOAD16_U_IX) \
    X(LOAD8_S64_IX) X(LOAD16_S64_IX) X(LOAD32_S64_IX) /* d a b k */ \
    X(STORE8_IX) X(STORE16_IX) X(STORE32_IX) X(STORE64_IX) /* a b v k */ \
    X(BR_I64_EQ) X(BR_I64_NE) X(BR_I64_LT_S) X(BR_I64_LT_U) X(BR_I64_GT_S) X(BR_I64_GT_U) \
    X(BR_I64_LE_S) X(BR_I64_LE_U) X(BR_I64_GE_S) X(BR_I64_GE_U) /* a b off fuel */ \
    X(I32_SHR_U_AND_K)  /* d a k m: (a >> k) & m, a bit-field extract */ \
    X(I32_WRAP_SHR_U64) /* d a b: i32.wrap_i64 (i64.shr_u a b), the high part of an i64 */ \
    X(I32_WRAP_SHR_U64_AND_K) /* d a b m: that, & m (a field of an i64) */ \
    /* fused LOAD8_U_IX + add: d = a + the byte at (uint32_t)(b + c) + k, \
     * a sum over a byte array or byte table */ \
    X(I32_ADD_LOAD8_U_IX) X(I64_ADD_LOAD8_U_IX) /* d a b c k */

enum internal_op {
#define AL_OP_ENUM(name) OP_##name,
    AL_OPS(AL_OP_ENUM)
#undef AL_OP_ENUM
    OP_COUNT
};

typedef struct pc_entry {
    uint32_t pc;     /* cell index of an instruction's first cell */
    uint32_t offset; /* byte offset of the wasm instruction it came from */
} pc_entry;

struct compiled_func {
    uint32_t func_index;
    uint32_t nparams, nresults;
    uint32_t nlocals;     /* declared locals, zeroed on entry */
    uint32_t const_base;  /* first const slot */
    uint32_t nconsts;
    uint64_t *consts;     /* copied to the frame on entry */
    uint32_t frame_size;  /* slots the frame needs */
    cell *code;
    uint32_t ncode;
    pc_entry *pcmap;      /* sorted by pc */
    uint32_t npcmap;
};

/* exec.c: the handler address of every internal op, indexed by enum internal_op. */
const void *const *exec_handler_table(void);

#endif
