/*
 * compile.c — validates every function body (spec §3.3, algorithm of the
 * spec appendix "Validation Algorithm") and, in the same pass, translates it
 * into the register-based internal code described in code.h.
 *
 * Translation model:
 *  - Each operand stack position i has a fixed home slot (stack_base + i).
 *  - local.get and constants do not emit code: the pushed operand simply
 *    refers to the local's slot or the constant's slot ("lazy" operands). A
 *    lazy operand is copied to its home slot ("materialised") before anything
 *    could change what it refers to (local.set/tee of that local) and at
 *    every control-flow boundary, so that every path into a label sees its
 *    values in the same slots.
 *  - Constants are gathered by a pre-scan of the body and live in const
 *    slots between the locals and the operand stack; the frame layout is
 *    [params][locals][consts][operand stack].
 *  - local.set right after an instruction that produced the value retargets
 *    that instruction's destination (no copy); a compare followed by br_if/if
 *    fuses into one compare-and-branch; an i32.add whose only use is the
 *    address of the load/store right after it fuses into that access.
 * Invariants: every slot index emitted is < frame_size; every branch offset
 * lands on an instruction start inside the function; all lazy operands are
 * materialised at labels.
 */
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "module.h"
#include "reader.h"

#define TYPE_UNKNOWN 0
#define NONE UINT32_MAX

enum ctrl_kind { CTRL_FUNC, CTRL_BLOCK, CTRL_LOOP, CTRL_IF, CTRL_ELSE };

typedef struct operand {
    uint8_t type;
    uint32_t slot;
} operand;

typedef struct ctrl_frame {
    enum ctrl_kind kind;
    const uint8_t *params, *results;
    uint32_t nparams, nresults;
    uint32_t height;
    bool unreachable; /* validation: the stack is polymorphic (spec's "unreachable") */
    bool dead;        /* emission: the frame was entered from unreachable code */
    uint32_t loop_pc;
    uint32_t patches;    /* head of this label's forward-branch list */
    uint32_t else_patch; /* if: the conditional jump to the else arm */
} ctrl_frame;

typedef struct patch {
    uint32_t cell_pos;
    uint32_t instr_pc;
    uint32_t next;
} patch;

typedef struct const_pool {
    uint64_t *values;
    uint32_t count, cap;
    uint32_t *hash; /* open addressing: index+1, 0 = empty */
    uint32_t hash_cap;
} const_pool;

typedef struct compiler {
    const al_module *m;
    al_error *err;
    wasm_reader r;
    uint32_t func_index;
    const al_functype *type;
    uint8_t *local_types; /* params then locals */
    uint32_t nlocal_slots;
    uint32_t stack_base;
    const_pool consts;

    operand *stack;
    uint32_t height, stack_cap, max_height;
    uint32_t nlazy;

    ctrl_frame *ctrls;
    uint32_t nctrls, ctrls_cap;

    cell *code;
    uint32_t ncode, code_cap;
    patch *patches;
    uint32_t npatches, patches_cap;
    pc_entry *pcmap;
    uint32_t npcmap, pcmap_cap;

    /* peephole state: the last instruction and its destination cell */
    uint32_t last_pc, last_dst_pos, last_dst_height, last_op;
    uint32_t cur_offset;
    uint32_t pending_fuel; /* wasm instructions since the last fuel charge */
    const void *const *handlers;
    bool failed;
} compiler;

/* ---- errors ------------------------------------------------------------- */

static bool fail(compiler *c, al_error_kind kind, const char *reason) {
    if (!c->failed)
        al_error_set(c->err, kind, "function %u at offset 0x%x: %s", c->func_index,
                     c->cur_offset, reason);
    c->failed = true;
    return false;
}
static bool invalid(compiler *c, const char *reason) { return fail(c, AL_ERR_INVALID, reason); }
static bool oom(compiler *c) { return fail(c, AL_ERR_NOMEM, "out of memory"); }

/* Grow *arr (elements of size sz) so index `need` fits. */
static bool grow(compiler *c, void **arr, uint32_t *cap, uint32_t need, size_t sz) {
    if (need < *cap) return true;
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap <= need) {
        if (ncap > UINT32_MAX / 2) return oom(c);
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * sz);
    if (!p) return oom(c);
    *arr = p;
    *cap = ncap;
    return true;
}

/* ---- constant pool --------------------------------------------------------- */

static uint32_t hash64(uint64_t v) {
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    return (uint32_t)v;
}

static bool pool_rehash(compiler *c, const_pool *p) {
    uint32_t ncap = p->hash_cap ? p->hash_cap * 2 : 64;
    uint32_t *h = calloc(ncap, sizeof *h);
    if (!h) return oom(c);
    for (uint32_t i = 0; i < p->count; i++) {
        uint32_t j = hash64(p->values[i]) & (ncap - 1);
        while (h[j]) j = (j + 1) & (ncap - 1);
        h[j] = i + 1;
    }
    free(p->hash);
    p->hash = h;
    p->hash_cap = ncap;
    return true;
}

/* Index of value in the pool, adding it when absent; NONE on OOM. */
static uint32_t pool_intern(compiler *c, uint64_t v) {
    const_pool *p = &c->consts;
    if ((p->count + 1) * 2 > p->hash_cap && !pool_rehash(c, p)) return NONE;
    uint32_t j = hash64(v) & (p->hash_cap - 1);
    while (p->hash[j]) {
        if (p->values[p->hash[j] - 1] == v) return p->hash[j] - 1;
        j = (j + 1) & (p->hash_cap - 1);
    }
    if (!grow(c, (void **)&p->values, &p->cap, p->count, sizeof *p->values)) return NONE;
    p->values[p->count] = v;
    p->hash[j] = ++p->count;
    return p->count - 1;
}

/* The slot of a constant already in the pool, or NONE (never adds one). */
static uint32_t existing_const_slot(const compiler *c, uint64_t v) {
    const const_pool *p = &c->consts;
    if (!p->hash_cap) return NONE;
    for (uint32_t j = hash64(v) & (p->hash_cap - 1); p->hash[j]; j = (j + 1) & (p->hash_cap - 1))
        if (p->values[p->hash[j] - 1] == v) return c->nlocal_slots + p->hash[j] - 1;
    return NONE;
}

static uint32_t const_slot(compiler *c, uint64_t v) {
    uint32_t i = pool_intern(c, v);
    return i == NONE ? NONE : c->nlocal_slots + i;
}

/* The frame layout needs the number of constants before the first home slot
 * is handed out, so constants are collected by a scan ahead of translation. */
static bool collect_constants(compiler *c, wasm_reader r) {
    wasm_instr in;
    while (!rd_eof(&r)) {
        if (!rd_instr(&r, &in)) return fail(c, AL_ERR_MALFORMED, r.error);
        uint64_t v;
        switch (in.op) {
        case 0x41: v = (uint32_t)in.imm; break;
        case 0x42: case 0x43: case 0x44: v = in.imm; break;
        case 0xD0: v = 0; break;
        default: continue;
        }
        if (pool_intern(c, v) == NONE) return false;
    }
    return true;
}

/* ---- emission ----------------------------------------------------------- */

static bool live(const compiler *c) {
    const ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    return !f->unreachable && !f->dead;
}
static uint32_t home(const compiler *c, uint32_t pos) { return c->stack_base + pos; }

static void emit_cell(compiler *c, cell v) {
    if (c->failed || !grow(c, (void **)&c->code, &c->code_cap, c->ncode, sizeof(cell))) return;
    c->code[c->ncode++] = v;
}

static uint32_t emit_op(compiler *c, enum internal_op op) {
    uint32_t pc = c->ncode;
    if (!c->failed && grow(c, (void **)&c->pcmap, &c->pcmap_cap, c->npcmap, sizeof(pc_entry)))
        c->pcmap[c->npcmap++] = (pc_entry){pc, c->cur_offset};
    emit_cell(c, (cell)(uintptr_t)c->handlers[op]);
    c->last_pc = pc;
    c->last_op = op;
    c->last_dst_pos = NONE;
    return pc;
}

/* Drop the last emitted instruction (used when fusing it into the next). */
static void unemit_last(compiler *c) {
    c->ncode = c->last_pc;
    if (c->npcmap && c->pcmap[c->npcmap - 1].pc == c->last_pc) c->npcmap--;
    c->last_pc = NONE;
    c->last_dst_pos = NONE;
}

static void emit_mov(compiler *c, uint32_t dst, uint32_t src) {
    if (dst == src) return;
    emit_op(c, OP_MOV);
    emit_cell(c, dst);
    emit_cell(c, src);
}

static void set_label(compiler *c) {
    c->last_pc = NONE;
    c->last_dst_pos = NONE;
}

/* Fuel: each instruction that ends a straight-line run carries the run's
 * instruction count as its last cell; the interpreter subtracts it. */
static void emit_cost(compiler *c) {
    emit_cell(c, c->pending_fuel);
    c->pending_fuel = 0;
}

/* A label reached by falling through: charge the run that ends here. */
static void charge_fallthrough(compiler *c, bool reachable) {
    if (reachable && c->pending_fuel) {
        emit_op(c, OP_FUEL);
        emit_cost(c);
    }
    c->pending_fuel = 0;
}

/* ---- operand stack -------------------------------------------------------- */

static bool push(compiler *c, uint8_t type, uint32_t slot) {
    if (!grow(c, (void **)&c->stack, &c->stack_cap, c->height, sizeof(operand))) return false;
    if (slot != home(c, c->height)) c->nlazy++;
    c->stack[c->height++] = (operand){type, slot};
    if (c->height > c->max_height) c->max_height = c->height;
    return true;
}

/* Push a value that the next emitted cell will write to its home slot. */
static bool push_result(compiler *c, uint8_t type) {
    uint32_t pos = c->height;
    if (!push(c, type, home(c, pos))) return false;
    if (live(c)) {
        c->last_dst_pos = c->ncode;
        c->last_dst_height = pos;
        emit_cell(c, home(c, pos));
    }
    return true;
}

static bool pop(compiler *c, uint8_t expect, operand *out) {
    ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    if (c->height == f->height) {
        if (!f->unreachable) return invalid(c, "type mismatch");
        *out = (operand){TYPE_UNKNOWN, home(c, c->height)};
    } else {
        *out = c->stack[--c->height];
        if (out->slot != home(c, c->height)) c->nlazy--;
    }
    if (expect != TYPE_UNKNOWN && out->type != TYPE_UNKNOWN && out->type != expect)
        return invalid(c, "type mismatch");
    return true;
}

static bool pop_any(compiler *c, operand *out) { return pop(c, TYPE_UNKNOWN, out); }

static void materialize(compiler *c, uint32_t pos) {
    operand *o = &c->stack[pos];
    if (o->slot == home(c, pos)) return;
    if (live(c)) emit_mov(c, home(c, pos), o->slot);
    o->slot = home(c, pos);
    c->nlazy--;
}

static void materialize_from(compiler *c, uint32_t pos) {
    for (uint32_t i = pos; c->nlazy && i < c->height; i++) materialize(c, i);
}

static void materialize_all(compiler *c) { materialize_from(c, 0); }

static void materialize_local(compiler *c, uint32_t slot) {
    for (uint32_t i = 0; c->nlazy && i < c->height; i++)
        if (c->stack[i].slot == slot) materialize(c, i);
}

static bool local_has_alias(const compiler *c, uint32_t slot) {
    if (!c->nlazy) return false;
    for (uint32_t i = 0; i < c->height; i++)
        if (c->stack[i].slot == slot) return true;
    return false;
}

/* ---- control frames -------------------------------------------------------- */

static bool push_ctrl(compiler *c, enum ctrl_kind kind, const uint8_t *params, uint32_t np,
                      const uint8_t *results, uint32_t nr) {
    if (!grow(c, (void **)&c->ctrls, &c->ctrls_cap, c->nctrls, sizeof(ctrl_frame))) return false;
    ctrl_frame *f = &c->ctrls[c->nctrls++];
    *f = (ctrl_frame){.kind = kind, .params = params, .nparams = np, .results = results,
                      .nresults = nr, .height = c->height - np, .patches = NONE,
                      .else_patch = NONE, .loop_pc = NONE};
    return true;
}

static void label_types(const ctrl_frame *f, const uint8_t **types, uint32_t *n) {
    if (f->kind == CTRL_LOOP) { *types = f->params; *n = f->nparams; }
    else { *types = f->results; *n = f->nresults; }
}

/* Slot where value i of a branch to frame f must be placed. */
static uint32_t label_slot(const compiler *c, const ctrl_frame *f, uint32_t i) {
    return home(c, f->height + i);
}

static void add_patch(compiler *c, uint32_t *head, uint32_t cell_pos, uint32_t instr_pc) {
    if (!grow(c, (void **)&c->patches, &c->patches_cap, c->npatches, sizeof(patch))) return;
    c->patches[c->npatches] = (patch){cell_pos, instr_pc, *head};
    *head = c->npatches++;
}

static void resolve_patches(compiler *c, uint32_t head, uint32_t target_pc) {
    for (uint32_t p = head; p != NONE && !c->failed; p = c->patches[p].next)
        c->code[c->patches[p].cell_pos] = (cell)(int64_t)((int64_t)target_pc - c->patches[p].instr_pc);
}

/* Emit the branch offset cell of the instruction starting at instr_pc. */
static void emit_target(compiler *c, ctrl_frame *f, uint32_t instr_pc) {
    if (f->kind == CTRL_LOOP) {
        emit_cell(c, (cell)(int64_t)((int64_t)f->loop_pc - instr_pc));
    } else {
        add_patch(c, &f->patches, c->ncode, instr_pc);
        emit_cell(c, 0);
    }
}

/* Do the top n operands already sit in frame f's label slots? */
static bool branch_needs_moves(const compiler *c, const ctrl_frame *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (c->stack[c->height - n + i].slot != label_slot(c, f, i)) return true;
    return false;
}

/* Copy the top n operands to frame f's label slots. Destinations never lie
 * above their sources (labels are outer frames), so ascending order is safe. */
static void emit_branch_moves(compiler *c, const ctrl_frame *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        emit_mov(c, label_slot(c, f, i), c->stack[c->height - n + i].slot);
}

static void emit_br(compiler *c, ctrl_frame *f, uint32_t n) {
    emit_branch_moves(c, f, n);
    uint32_t pc = emit_op(c, OP_BR);
    emit_target(c, f, pc);
    emit_cost(c);
}

/* Results of the function go to slots 0..n-1. Sources are first moved home
 * (homes lie at or above their result slot), then copied down in order. */
static void emit_return(compiler *c, uint32_t n) {
    uint32_t first = c->height - n;
    /* Leaves the compile-time stack untouched: on a conditional return the
     * fall-through path never ran these moves. */
    for (uint32_t i = 0; i < n; i++)
        emit_mov(c, home(c, first + i), c->stack[first + i].slot);
    for (uint32_t i = 0; i < n; i++) emit_mov(c, i, home(c, first + i));
    emit_op(c, OP_RETURN);
    emit_cost(c);
}

static void set_unreachable(compiler *c) {
    ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    while (c->height > f->height) {
        operand o;
        pop_any(c, &o);
    }
    f->unreachable = true;
}

/* Pop a sequence of types (checked from the top), storing the operands. */
static bool pop_types(compiler *c, const uint8_t *types, uint32_t n, operand *out) {
    for (uint32_t i = n; i-- > 0;)
        if (!pop(c, types[i], out ? &out[i] : &(operand){0, 0})) return false;
    return true;
}

static bool push_operands(compiler *c, const uint8_t *types, uint32_t n, const operand *ops) {
    for (uint32_t i = 0; i < n; i++)
        if (!push(c, types[i], ops[i].slot)) return false;
    return true;
}

/* br_table re-pushes what it popped with the popped (possibly unknown) types. */
static bool push_popped(compiler *c, uint32_t n, const operand *ops) {
    for (uint32_t i = 0; i < n; i++)
        if (!push(c, ops[i].type, ops[i].slot)) return false;
    return true;
}

/* ---- block types ---------------------------------------------------------- */

/* valtype_self[t] == t: lets a one-value block type be a stable 1-element array. */
static const uint8_t valtype_self[256] = {
    [AL_I32] = AL_I32, [AL_I64] = AL_I64, [AL_F32] = AL_F32, [AL_F64] = AL_F64,
    [AL_FUNCREF] = AL_FUNCREF, [AL_EXTERNREF] = AL_EXTERNREF,
};

static bool block_type(compiler *c, const wasm_instr *in, const uint8_t **params, uint32_t *np,
                       const uint8_t **results, uint32_t *nr) {
    *params = NULL;
    *np = 0;
    *results = NULL;
    *nr = 0;
    if (!in->blocktype_is_index) {
        if (in->blocktype == WASM_BLOCKTYPE_EMPTY) return true;
        *results = &valtype_self[(uint8_t)in->blocktype]; /* checked by the reader */
        *nr = 1;
        return true;
    }
    if ((uint64_t)in->blocktype >= c->m->ntypes) return invalid(c, "unknown type");
    const al_functype *ft = &c->m->types[in->blocktype];
    *params = ft->params;
    *np = ft->nparams;
    *results = ft->results;
    *nr = ft->nresults;
    return true;
}

/* ---- instruction groups -------------------------------------------------------- */

/* Did the instruction emitted last, an op, compute v (an operand just
 * popped from position c->height) into its home slot? That slot is then
 * above the stack and no label came between, so nothing else reads it: the
 * instruction may be fused into the one consuming v. */
static bool last_made_at(const compiler *c, operand v, uint32_t pos, enum internal_op op) {
    return c->last_dst_pos != NONE && c->last_op == op && v.slot == home(c, pos) &&
           c->last_dst_height == pos;
}

static bool last_made(const compiler *c, operand v, enum internal_op op) {
    return last_made_at(c, v, c->height, op);
}

/* Emit the head of a conditional branch on cond (its offset and fuel cells
 * follow): taken when cond is true (when_true) or false. A compare or eqz
 * that just produced cond is fused into a compare-and-branch. */
static uint32_t emit_cond_branch(compiler *c, operand cond, bool when_true) {
    static const enum internal_op fused[2][OP_I64_GE_U + 1] = {
        { /* branch when the compare is false: the inverse compare */
            [OP_I32_EQ] = OP_BR_I32_NE, [OP_I32_NE] = OP_BR_I32_EQ,
            [OP_I32_LT_S] = OP_BR_I32_GE_S, [OP_I32_LT_U] = OP_BR_I32_GE_U,
            [OP_I32_GT_S] = OP_BR_I32_LE_S, [OP_I32_GT_U] = OP_BR_I32_LE_U,
            [OP_I32_LE_S] = OP_BR_I32_GT_S, [OP_I32_LE_U] = OP_BR_I32_GT_U,
            [OP_I32_GE_S] = OP_BR_I32_LT_S, [OP_I32_GE_U] = OP_BR_I32_LT_U,
            [OP_I64_EQ] = OP_BR_I64_NE, [OP_I64_NE] = OP_BR_I64_EQ,
            [OP_I64_LT_S] = OP_BR_I64_GE_S, [OP_I64_LT_U] = OP_BR_I64_GE_U,
            [OP_I64_GT_S] = OP_BR_I64_LE_S, [OP_I64_GT_U] = OP_BR_I64_LE_U,
            [OP_I64_LE_S] = OP_BR_I64_GT_S, [OP_I64_LE_U] = OP_BR_I64_GT_U,
            [OP_I64_GE_S] = OP_BR_I64_LT_S, [OP_I64_GE_U] = OP_BR_I64_LT_U,
        },
        { /* branch when it is true */
            [OP_I32_EQ] = OP_BR_I32_EQ, [OP_I32_NE] = OP_BR_I32_NE,
            [OP_I32_LT_S] = OP_BR_I32_LT_S, [OP_I32_LT_U] = OP_BR_I32_LT_U,
            [OP_I32_GT_S] = OP_BR_I32_GT_S, [OP_I32_GT_U] = OP_BR_I32_GT_U,
            [OP_I32_LE_S] = OP_BR_I32_LE_S, [OP_I32_LE_U] = OP_BR_I32_LE_U,
            [OP_I32_GE_S] = OP_BR_I32_GE_S, [OP_I32_GE_U] = OP_BR_I32_GE_U,
            [OP_I64_EQ] = OP_BR_I64_EQ, [OP_I64_NE] = OP_BR_I64_NE,
            [OP_I64_LT_S] = OP_BR_I64_LT_S, [OP_I64_LT_U] = OP_BR_I64_LT_U,
            [OP_I64_GT_S] = OP_BR_I64_GT_S, [OP_I64_GT_U] = OP_BR_I64_GT_U,
            [OP_I64_LE_S] = OP_BR_I64_LE_S, [OP_I64_LE_U] = OP_BR_I64_LE_U,
            [OP_I64_GE_S] = OP_BR_I64_GE_S, [OP_I64_GE_U] = OP_BR_I64_GE_U,
        },
    };
    bool fresh = c->last_dst_pos != NONE && cond.slot == home(c, c->height) &&
                 c->last_dst_height == c->height;
    if (fresh && c->last_op >= OP_I32_EQ && c->last_op <= OP_I64_GE_U &&
        fused[when_true][c->last_op]) { /* (I64_EQZ, in that range, has no entry) */
        cell a = c->code[c->last_pc + 2], b = c->code[c->last_pc + 3];
        enum internal_op op = fused[when_true][c->last_op];
        unemit_last(c);
        uint32_t pc = emit_op(c, op);
        emit_cell(c, a);
        emit_cell(c, b);
        return pc;
    }
    if (fresh && c->last_op == OP_I32_EQZ) { /* eqz x: branch on x instead, inverted */
        cell a = c->code[c->last_pc + 2];
        unemit_last(c);
        uint32_t pc = emit_op(c, when_true ? OP_BR_IFZ : OP_BR_IF);
        emit_cell(c, a);
        return pc;
    }
    uint32_t pc = emit_op(c, when_true ? OP_BR_IF : OP_BR_IFZ);
    emit_cell(c, cond.slot);
    return pc;
}

static bool do_block(compiler *c, const wasm_instr *in, enum ctrl_kind kind) {
    const uint8_t *params, *results;
    uint32_t np, nr;
    if (!block_type(c, in, &params, &np, &results, &nr)) return false;
    operand cond = {0, 0};
    if (kind == CTRL_IF && !pop(c, AL_I32, &cond)) return false;
    operand args[np ? np : 1];
    if (!pop_types(c, params, np, args) || !push_operands(c, params, np, args)) return false;
    /* Every path into or out of the block must agree on slots: no lazies. */
    materialize_all(c);
    bool was_live = live(c);
    uint32_t fused_pc = NONE;
    if (kind == CTRL_IF && was_live) {
        fused_pc = emit_cond_branch(c, cond, false); /* to the else arm when false */
    }
    if (!push_ctrl(c, kind, params, np, results, nr)) return false;
    ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    f->dead = !was_live;
    set_label(c);
    if (kind == CTRL_LOOP) {
        charge_fallthrough(c, was_live);
        f->loop_pc = c->ncode;
        if (was_live) emit_op(c, OP_LOOP_CHECK);
        set_label(c);
    }
    if (kind == CTRL_IF && was_live) {
        add_patch(c, &f->else_patch, c->ncode, fused_pc);
        emit_cell(c, 0);
        emit_cost(c);
    }
    return true;
}

/* Check the top of the stack is exactly the frame's results, materialised. */
static bool finish_arm(compiler *c, ctrl_frame *f) {
    operand tmp[f->nresults ? f->nresults : 1];
    if (!pop_types(c, f->results, f->nresults, tmp)) return false;
    if (c->height != f->height) return invalid(c, "type mismatch");
    if (!push_operands(c, f->results, f->nresults, tmp)) return false;
    materialize_from(c, f->height);
    return true;
}

static bool do_else(compiler *c) {
    ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    if (f->kind != CTRL_IF) return invalid(c, "else without if");
    if (!finish_arm(c, f)) return false;
    if (live(c)) {
        uint32_t pc = emit_op(c, OP_BR);
        add_patch(c, &f->patches, c->ncode, pc);
        emit_cell(c, 0);
        emit_cost(c);
    }
    c->pending_fuel = 0;
    c->height = f->height;
    set_label(c);
    resolve_patches(c, f->else_patch, c->ncode);
    f->else_patch = NONE;
    f->kind = CTRL_ELSE;
    f->unreachable = false;
    /* The else arm starts from the block parameters, in their home slots. */
    for (uint32_t i = 0; i < f->nparams; i++)
        if (!push(c, f->params[i], home(c, c->height))) return false;
    return true;
}

static bool do_end(compiler *c) {
    ctrl_frame *f = &c->ctrls[c->nctrls - 1];
    if (f->kind == CTRL_IF) {
        /* An if without else passes its parameters through unchanged. */
        if (f->nparams != f->nresults ||
            (f->nparams && memcmp(f->params, f->results, f->nparams)))
            return invalid(c, "type mismatch");
    }
    if (!finish_arm(c, f)) return false;
    if (f->kind == CTRL_FUNC) {
        if (live(c)) emit_return(c, f->nresults);
        c->nctrls--;
        return true;
    }
    charge_fallthrough(c, live(c));
    set_label(c);
    resolve_patches(c, f->patches, c->ncode);
    resolve_patches(c, f->else_patch, c->ncode);
    uint32_t h = f->height, nr = f->nresults;
    const uint8_t *results = f->results;
    c->nctrls--;
    c->height = h;
    for (uint32_t i = 0; i < nr; i++)
        if (!push(c, results[i], home(c, c->height))) return false;
    return true;
}

static ctrl_frame *label(compiler *c, uint32_t depth) {
    if (depth >= c->nctrls) {
        invalid(c, "unknown label");
        return NULL;
    }
    return &c->ctrls[c->nctrls - 1 - depth];
}

static bool do_br(compiler *c, uint32_t depth) {
    ctrl_frame *f = label(c, depth);
    if (!f) return false;
    const uint8_t *types;
    uint32_t n;
    label_types(f, &types, &n);
    operand ops[n ? n : 1];
    if (!pop_types(c, types, n, ops) || !push_operands(c, types, n, ops)) return false;
    if (live(c)) {
        if (f->kind == CTRL_FUNC) emit_return(c, n);
        else emit_br(c, f, n);
    }
    set_unreachable(c);
    return true;
}

static bool do_br_if(compiler *c, uint32_t depth) {
    operand cond;
    if (!pop(c, AL_I32, &cond)) return false;
    ctrl_frame *f = label(c, depth);
    if (!f) return false;
    const uint8_t *types;
    uint32_t n;
    label_types(f, &types, &n);
    operand ops[n ? n : 1];
    if (!pop_types(c, types, n, ops) || !push_operands(c, types, n, ops)) return false;
    if (!live(c)) return true;
    if (f->kind == CTRL_FUNC || branch_needs_moves(c, f, n)) {
        /* Moves are needed only when taken: jump over them otherwise. */
        uint32_t skip = emit_op(c, OP_BR_IFZ);
        emit_cell(c, cond.slot);
        uint32_t skip_cell = c->ncode;
        emit_cell(c, 0);
        emit_cost(c);
        if (f->kind == CTRL_FUNC) emit_return(c, n);
        else emit_br(c, f, n);
        if (!c->failed) c->code[skip_cell] = (cell)(int64_t)(c->ncode - skip);
        set_label(c);
        return true;
    }
    uint32_t pc = emit_cond_branch(c, cond, true);
    emit_target(c, f, pc);
    emit_cost(c);
    return true;
}

static bool do_br_table(compiler *c, const wasm_instr *in) {
    operand idx;
    if (!pop(c, AL_I32, &idx)) return false;
    uint32_t n = in->count;
    wasm_reader tr = {c->r.base, in->targets, c->r.end, NULL};
    uint32_t *depths = malloc(((size_t)n + 1) * sizeof *depths);
    if (!depths) return oom(c);
    for (uint32_t i = 0; i <= n; i++) rd_u32(&tr, &depths[i]); /* pre-checked by rd_instr */
    ctrl_frame *def = label(c, depths[n]);
    bool ok = def != NULL;
    const uint8_t *dtypes = NULL;
    uint32_t arity = 0;
    if (ok) label_types(def, &dtypes, &arity);
    for (uint32_t i = 0; ok && i < n; i++) {
        ctrl_frame *f = label(c, depths[i]);
        if (!f) { ok = false; break; }
        const uint8_t *types;
        uint32_t k;
        label_types(f, &types, &k);
        if (k != arity) { ok = invalid(c, "type mismatch"); break; }
        operand ops[k ? k : 1];
        ok = pop_types(c, types, k, ops) && push_popped(c, k, ops);
    }
    operand ops[arity ? arity : 1];
    if (ok) ok = pop_types(c, dtypes, arity, ops) && push_popped(c, arity, ops);
    if (ok && live(c)) {
        uint32_t pc = emit_op(c, OP_BR_TABLE);
        emit_cell(c, idx.slot);
        emit_cell(c, n);
        emit_cost(c);
        uint32_t table_pos = c->ncode;
        for (uint32_t i = 0; i <= n; i++) emit_cell(c, 0);
        /* Targets that need value moves (or a return) get a stub after the table. */
        for (uint32_t i = 0; i <= n && !c->failed; i++) {
            ctrl_frame *f = &c->ctrls[c->nctrls - 1 - depths[i]];
            if (f->kind == CTRL_FUNC || branch_needs_moves(c, f, arity)) {
                c->code[table_pos + i] = (cell)(int64_t)(c->ncode - pc);
                if (f->kind == CTRL_FUNC) emit_return(c, arity);
                else emit_br(c, f, arity);
            } else if (f->kind == CTRL_LOOP) {
                c->code[table_pos + i] = (cell)(int64_t)((int64_t)f->loop_pc - pc);
            } else {
                add_patch(c, &f->patches, table_pos + i, pc);
            }
        }
    }
    free(depths);
    if (ok) set_unreachable(c);
    return ok;
}

static bool do_call(compiler *c, const al_functype *ft, enum internal_op op, uint32_t idx,
                    uint32_t idx2, uint32_t elem_slot) {
    operand args[ft->nparams ? ft->nparams : 1];
    if (!pop_types(c, ft->params, ft->nparams, args) || !push_operands(c, ft->params, ft->nparams, args))
        return false;
    uint32_t base = c->height - ft->nparams;
    materialize_from(c, base);
    c->height = base;
    if (live(c)) {
        emit_op(c, op);
        emit_cell(c, idx);
        if (op == OP_CALL_INDIRECT) {
            emit_cell(c, idx2);
            emit_cell(c, elem_slot);
        }
        emit_cell(c, home(c, base));
        emit_cost(c);
    }
    for (uint32_t i = 0; i < ft->nresults; i++)
        if (!push(c, ft->results[i], home(c, c->height))) return false;
    /* The callee's frame begins at the arguments: keep room for its results. */
    if (base + ft->nparams > c->max_height) c->max_height = base + ft->nparams;
    set_label(c);
    return true;
}

/* ---- numeric instructions ---------------------------------------------- */

/* Signature of numeric opcodes 0x45..0xC4: in1, in2 (0 if unary), out. */
static bool numeric_sig(uint32_t op, uint8_t *a, uint8_t *b, uint8_t *r) {
    const uint8_t I = AL_I32, L = AL_I64, F = AL_F32, D = AL_F64;
    *b = 0;
#define SIG(x, y, z) do { *a = (x); *b = (y); *r = (z); return true; } while (0)
    if (op == 0x45) SIG(I, 0, I);
    if (op <= 0x4F) SIG(I, I, I);
    if (op == 0x50) SIG(L, 0, I);
    if (op <= 0x5A) SIG(L, L, I);
    if (op <= 0x60) SIG(F, F, I);
    if (op <= 0x66) SIG(D, D, I);
    if (op <= 0x69) SIG(I, 0, I);
    if (op <= 0x78) SIG(I, I, I);
    if (op <= 0x7B) SIG(L, 0, L);
    if (op <= 0x8A) SIG(L, L, L);
    if (op <= 0x91) SIG(F, 0, F);
    if (op <= 0x98) SIG(F, F, F);
    if (op <= 0x9F) SIG(D, 0, D);
    if (op <= 0xA6) SIG(D, D, D);
    static const uint8_t conv[][2] = {
        /* A7 */ {'L', 'I'}, {'F', 'I'}, {'F', 'I'}, {'D', 'I'}, {'D', 'I'},
        /* AC */ {'I', 'L'}, {'I', 'L'}, {'F', 'L'}, {'F', 'L'}, {'D', 'L'}, {'D', 'L'},
        /* B2 */ {'I', 'F'}, {'I', 'F'}, {'L', 'F'}, {'L', 'F'}, {'D', 'F'},
        /* B7 */ {'I', 'D'}, {'I', 'D'}, {'L', 'D'}, {'L', 'D'}, {'F', 'D'},
        /* BC */ {'F', 'I'}, {'D', 'L'}, {'I', 'F'}, {'L', 'D'},
        /* C0 */ {'I', 'I'}, {'I', 'I'}, {'L', 'L'}, {'L', 'L'}, {'L', 'L'},
    };
    if (op > 0xC4) return false;
    const uint8_t *s = conv[op - 0xA7];
    uint8_t t[2];
    for (int i = 0; i < 2; i++)
        t[i] = s[i] == 'I' ? I : s[i] == 'L' ? L : s[i] == 'F' ? F : D;
    SIG(t[0], 0, t[1]);
#undef SIG
}

static enum internal_op numeric_op(uint32_t op) {
    if (op >= 0xFC00) return (enum internal_op)(OP_I32_TRUNC_SAT_F32_S + (op - 0xFC00));
    if (op >= 0xC0) return (enum internal_op)(OP_I32_EXTEND8_S + (op - 0xC0));
    return (enum internal_op)(OP_I32_EQZ + (op - 0x45));
}

/* Binary ops whose right operand, when a constant, is folded into the code. */
static enum internal_op with_immediate(enum internal_op op) {
    switch (op) {
    case OP_I32_ADD: return OP_I32_ADD_K;
    case OP_I32_SUB: return OP_I32_SUB_K;
    case OP_I32_AND: return OP_I32_AND_K;
    case OP_I32_SHL: return OP_I32_SHL_K;
    case OP_I32_SHR_U: return OP_I32_SHR_U_K;
    case OP_I32_SHR_S: return OP_I32_SHR_S_K;
    case OP_I64_ADD: return OP_I64_ADD_K;
    default: return OP_COUNT;
    }
}

static bool is_const_slot(const compiler *c, uint32_t slot) {
    return slot >= c->nlocal_slots && slot < c->stack_base;
}

/* Patterns of compiled C that become one instruction: a byte or field
 * extracted by shift and mask (I32_SHR_U_AND_K, or I32_WRAP_SHR_U64_AND_K
 * from an i64), and the high half of an i64 (I32_WRAP_SHR_U64). a and b are
 * the operands of op, already popped. */
static bool fuse_numeric(compiler *c, enum internal_op op, operand a, operand b, uint8_t tr) {
    cell src, k;
    enum internal_op fused;
    if (op == OP_I32_AND && is_const_slot(c, b.slot) && last_made(c, a, OP_I32_SHR_U_K)) {
        fused = OP_I32_SHR_U_AND_K;
    } else if (op == OP_I32_AND && is_const_slot(c, b.slot) &&
               last_made(c, a, OP_I32_WRAP_SHR_U64)) {
        fused = OP_I32_WRAP_SHR_U64_AND_K;
    } else if (op == OP_I32_WRAP_I64 && last_made(c, a, OP_I64_SHR_U)) {
        fused = OP_I32_WRAP_SHR_U64;
    } else {
        return false;
    }
    src = c->code[c->last_pc + 2];
    k = c->code[c->last_pc + 3]; /* the shift: an immediate, or a slot for I64_SHR_U */
    unemit_last(c);
    emit_op(c, fused);
    if (!push_result(c, tr)) return true; /* c->failed is set */
    emit_cell(c, src);
    emit_cell(c, k);
    if (fused != OP_I32_WRAP_SHR_U64) emit_cell(c, c->consts.values[b.slot - c->nlocal_slots]);
    return true;
}

/* i32.add/i64.add of a byte just loaded by LOAD8_U_IX (either operand; the
 * other one was not computed after it, or it would be the last one) into
 * one instruction. It reports a trap at the load's offset, as the load
 * would have. */
static bool fuse_add_load(compiler *c, enum internal_op op, operand a, operand b, uint8_t tr) {
    if (op != OP_I32_ADD && op != OP_I64_ADD) return false;
    operand other;
    if (last_made_at(c, b, c->height + 1, OP_LOAD8_U_IX)) other = a;
    else if (last_made_at(c, a, c->height, OP_LOAD8_U_IX)) other = b;
    else return false;
    cell x = c->code[c->last_pc + 2], y = c->code[c->last_pc + 3], k = c->code[c->last_pc + 4];
    uint32_t load_offset = c->npcmap ? c->pcmap[c->npcmap - 1].offset : c->cur_offset;
    unemit_last(c);
    uint32_t add_offset = c->cur_offset;
    c->cur_offset = load_offset;
    emit_op(c, op == OP_I32_ADD ? OP_I32_ADD_LOAD8_U_IX : OP_I64_ADD_LOAD8_U_IX);
    c->cur_offset = add_offset;
    if (!push_result(c, tr)) return true; /* c->failed is set */
    emit_cell(c, other.slot);
    emit_cell(c, x);
    emit_cell(c, y);
    emit_cell(c, k);
    return true;
}

static bool do_numeric(compiler *c, uint32_t wop) {
    uint8_t ta, tb, tr;
    if (wop >= 0xFC00) {
        static const uint8_t sat[8][2] = {
            {AL_F32, AL_I32}, {AL_F32, AL_I32}, {AL_F64, AL_I32}, {AL_F64, AL_I32},
            {AL_F32, AL_I64}, {AL_F32, AL_I64}, {AL_F64, AL_I64}, {AL_F64, AL_I64}};
        ta = sat[wop - 0xFC00][0];
        tb = 0;
        tr = sat[wop - 0xFC00][1];
    } else if (!numeric_sig(wop, &ta, &tb, &tr)) {
        return fail(c, AL_ERR_MALFORMED, "illegal opcode");
    }
    operand a, b = {0, 0};
    if (tb && !pop(c, tb, &b)) return false;
    if (!pop(c, ta, &a)) return false;
    if (wop >= 0xBC && wop <= 0xBF) /* reinterpret: same bits, new type */
        return push(c, tr, a.slot);
    if (!live(c)) return push(c, tr, home(c, c->height));
    enum internal_op op = numeric_op(wop);
    enum internal_op kop = tb ? with_immediate(op) : OP_COUNT;
    if (fuse_numeric(c, op, a, b, tr) || fuse_add_load(c, op, a, b, tr)) return !c->failed;
    if (kop != OP_COUNT && is_const_slot(c, b.slot)) {
        emit_op(c, kop);
        if (!push_result(c, tr)) return false;
        emit_cell(c, a.slot);
        emit_cell(c, c->consts.values[b.slot - c->nlocal_slots]);
        return true;
    }
    emit_op(c, op);
    if (!push_result(c, tr)) return false;
    emit_cell(c, a.slot);
    if (tb) emit_cell(c, b.slot);
    return true;
}

/* ---- memory ------------------------------------------------------------- */

static bool need_memory(compiler *c) {
    return c->m->nmemories > 0 || invalid(c, "unknown memory");
}

/* The load/store forms of code.h list their _IX twins in the same order. */
_Static_assert(OP_LOAD32_S64_IX - OP_LOAD32_IX == OP_LOAD32_S64 - OP_LOAD32 &&
                   OP_STORE64_IX - OP_STORE8_IX == OP_STORE64 - OP_STORE8,
               "load/store _IX forms out of order");

static enum internal_op indexed_form(enum internal_op op) {
    if (op >= OP_LOAD32 && op <= OP_LOAD32_S64) return OP_LOAD32_IX + (op - OP_LOAD32);
    return OP_STORE8_IX + (op - OP_STORE8);
}

/* Was addr (the operand just popped from position c->height) computed by
 * the i32.add emitted last, into its home slot? Then nothing else can read
 * that slot (it is above the stack once popped, and no label came between),
 * so the add may be folded into the access: its two source slots are
 * returned. An add of a constant (I32_ADD_K: C code indexing a global array
 * at a fixed address) names the constant's slot again; it is in the pool
 * already, so this adds no slot. */
static bool fold_address_add(compiler *c, operand addr, cell *a, cell *b) {
    if (!last_made(c, addr, OP_I32_ADD) && !last_made(c, addr, OP_I32_ADD_K)) return false;
    *a = c->code[c->last_pc + 2];
    *b = c->code[c->last_pc + 3];
    if (c->last_op == OP_I32_ADD_K) {
        uint32_t k = existing_const_slot(c, *b);
        if (k == NONE) return false;
        *b = k;
    }
    unemit_last(c);
    return true;
}

static bool do_load_store(compiler *c, const wasm_instr *in) {
    static const struct { enum internal_op op; uint8_t type; uint8_t max_align; bool store; } t[] = {
        {OP_LOAD32, AL_I32, 2, 0}, {OP_LOAD64, AL_I64, 3, 0}, {OP_LOAD32, AL_F32, 2, 0},
        {OP_LOAD64, AL_F64, 3, 0}, {OP_LOAD8_S32, AL_I32, 0, 0}, {OP_LOAD8_U, AL_I32, 0, 0},
        {OP_LOAD16_S32, AL_I32, 1, 0}, {OP_LOAD16_U, AL_I32, 1, 0},
        {OP_LOAD8_S64, AL_I64, 0, 0}, {OP_LOAD8_U, AL_I64, 0, 0},
        {OP_LOAD16_S64, AL_I64, 1, 0}, {OP_LOAD16_U, AL_I64, 1, 0},
        {OP_LOAD32_S64, AL_I64, 2, 0}, {OP_LOAD32, AL_I64, 2, 0},
        {OP_STORE32, AL_I32, 2, 1}, {OP_STORE64, AL_I64, 3, 1}, {OP_STORE32, AL_F32, 2, 1},
        {OP_STORE64, AL_F64, 3, 1}, {OP_STORE8, AL_I32, 0, 1}, {OP_STORE16, AL_I32, 1, 1},
        {OP_STORE8, AL_I64, 0, 1}, {OP_STORE16, AL_I64, 1, 1}, {OP_STORE32, AL_I64, 2, 1},
    };
    const __typeof__(t[0]) *d = &t[in->op - 0x28];
    if (!need_memory(c)) return false;
    if (in->align > d->max_align) return invalid(c, "alignment must not be larger than natural");
    operand addr, val;
    if (d->store) {
        if (!pop(c, d->type, &val) || !pop(c, AL_I32, &addr)) return false;
        if (live(c)) {
            cell a, b;
            if (fold_address_add(c, addr, &a, &b)) {
                emit_op(c, indexed_form(d->op));
                emit_cell(c, a);
                emit_cell(c, b);
            } else {
                emit_op(c, d->op);
                emit_cell(c, addr.slot);
            }
            emit_cell(c, val.slot);
            emit_cell(c, in->mem_offset);
        }
        return true;
    }
    if (!pop(c, AL_I32, &addr)) return false;
    if (!live(c)) return push(c, d->type, home(c, c->height));
    cell a, b;
    bool folded = fold_address_add(c, addr, &a, &b);
    emit_op(c, folded ? indexed_form(d->op) : d->op);
    if (!push_result(c, d->type)) return false;
    if (folded) {
        emit_cell(c, a);
        emit_cell(c, b);
    } else {
        emit_cell(c, addr.slot);
    }
    emit_cell(c, in->mem_offset);
    return true;
}

/* Emit op with a result of type tr (if tr) and the given operand cells. */
static bool emit_with(compiler *c, enum internal_op op, uint8_t tr, const cell *imm, int nimm,
                      const operand *ops, int nops) {
    if (!live(c)) return tr ? push(c, tr, home(c, c->height)) : true;
    emit_op(c, op);
    if (tr && !push_result(c, tr)) return false;
    for (int i = 0; i < nimm; i++) emit_cell(c, imm[i]);
    for (int i = 0; i < nops; i++) emit_cell(c, ops[i].slot);
    return true;
}

/* Without a data count section the decoder has already rejected any module
 * that has data segments, so no data index is valid here. */
static bool need_data(compiler *c, uint32_t idx) {
    uint32_t count = c->m->has_data_count ? c->m->data_count : 0;
    return idx < count || invalid(c, "unknown data segment");
}

static bool do_bulk_memory(compiler *c, const wasm_instr *in) {
    operand o[3];
    uint32_t sub = in->op & 0xFF;
    switch (sub) {
    case 8: /* memory.init */
        if (!need_memory(c) || !need_data(c, in->idx)) return false;
        if (!pop(c, AL_I32, &o[2]) || !pop(c, AL_I32, &o[1]) || !pop(c, AL_I32, &o[0])) return false;
        return emit_with(c, OP_MEMORY_INIT, 0, (cell[]){in->idx}, 1, o, 3);
    case 9: /* data.drop */
        if (!need_data(c, in->idx)) return false;
        return emit_with(c, OP_DATA_DROP, 0, (cell[]){in->idx}, 1, NULL, 0);
    case 10: case 11: /* memory.copy, memory.fill */
        if (!need_memory(c)) return false;
        if (!pop(c, AL_I32, &o[2]) || !pop(c, AL_I32, &o[1]) || !pop(c, AL_I32, &o[0])) return false;
        return emit_with(c, sub == 10 ? OP_MEMORY_COPY : OP_MEMORY_FILL, 0, NULL, 0, o, 3);
    }
    return fail(c, AL_ERR_MALFORMED, "illegal opcode");
}

/* ---- tables ------------------------------------------------------------ */

static const wasm_tabletype *table_at(compiler *c, uint32_t idx) {
    if (idx >= c->m->ntables) {
        invalid(c, "unknown table");
        return NULL;
    }
    return &c->m->tables[idx];
}

static const wasm_elem *elem_at(compiler *c, uint32_t idx) {
    if (idx >= c->m->nelems) {
        invalid(c, "unknown elem segment");
        return NULL;
    }
    return &c->m->elems[idx];
}

static bool do_table(compiler *c, const wasm_instr *in) {
    operand o[3];
    const wasm_tabletype *t, *t2;
    const wasm_elem *e;
    switch (in->op) {
    case 0x25: /* table.get */
        if (!(t = table_at(c, in->idx)) || !pop(c, AL_I32, &o[0])) return false;
        return emit_with(c, OP_TABLE_GET, t->elem_type, (cell[]){in->idx}, 1, o, 1);
    case 0x26: /* table.set */
        if (!(t = table_at(c, in->idx)) || !pop(c, t->elem_type, &o[1]) || !pop(c, AL_I32, &o[0]))
            return false;
        return emit_with(c, OP_TABLE_SET, 0, (cell[]){in->idx}, 1, o, 2);
    }
    switch (in->op & 0xFF) {
    case 12: /* table.init elem table */
        if (!(e = elem_at(c, in->idx)) || !(t = table_at(c, in->idx2))) return false;
        if (e->elem_type != t->elem_type) return invalid(c, "type mismatch");
        if (!pop(c, AL_I32, &o[2]) || !pop(c, AL_I32, &o[1]) || !pop(c, AL_I32, &o[0])) return false;
        return emit_with(c, OP_TABLE_INIT, 0, (cell[]){in->idx2, in->idx}, 2, o, 3);
    case 13: /* elem.drop */
        if (!elem_at(c, in->idx)) return false;
        return emit_with(c, OP_ELEM_DROP, 0, (cell[]){in->idx}, 1, NULL, 0);
    case 14: /* table.copy dst src */
        if (!(t = table_at(c, in->idx)) || !(t2 = table_at(c, in->idx2))) return false;
        if (t->elem_type != t2->elem_type) return invalid(c, "type mismatch");
        if (!pop(c, AL_I32, &o[2]) || !pop(c, AL_I32, &o[1]) || !pop(c, AL_I32, &o[0])) return false;
        return emit_with(c, OP_TABLE_COPY, 0, (cell[]){in->idx, in->idx2}, 2, o, 3);
    case 15: /* table.grow */
        if (!(t = table_at(c, in->idx)) || !pop(c, AL_I32, &o[1]) || !pop(c, t->elem_type, &o[0]))
            return false;
        return emit_with(c, OP_TABLE_GROW, AL_I32, (cell[]){in->idx}, 1, o, 2);
    case 16: /* table.size */
        if (!table_at(c, in->idx)) return false;
        return emit_with(c, OP_TABLE_SIZE, AL_I32, (cell[]){in->idx}, 1, NULL, 0);
    case 17: /* table.fill */
        if (!(t = table_at(c, in->idx)) || !pop(c, AL_I32, &o[2]) || !pop(c, t->elem_type, &o[1]) ||
            !pop(c, AL_I32, &o[0]))
            return false;
        return emit_with(c, OP_TABLE_FILL, 0, (cell[]){in->idx}, 1, o, 3);
    }
    return fail(c, AL_ERR_MALFORMED, "illegal opcode");
}

/* ---- variables, references, parametric -------------------------------------------- */

static bool do_local(compiler *c, const wasm_instr *in) {
    uint32_t x = in->idx;
    if (x >= c->nlocal_slots) return invalid(c, "unknown local");
    uint8_t t = c->local_types[x];
    if (in->op == 0x20) return push(c, t, x);
    operand v;
    uint32_t h = c->height;
    if (!pop(c, t, &v)) return false;
    if (live(c)) {
        bool retarget = c->last_dst_pos != NONE && h > 0 && c->last_dst_height == h - 1 &&
                        v.slot == home(c, h - 1) && !local_has_alias(c, x);
        if (retarget) {
            c->code[c->last_dst_pos] = x;
            c->last_dst_pos = NONE;
        } else {
            materialize_local(c, x);
            emit_mov(c, x, v.slot);
            c->last_dst_pos = NONE;
        }
    }
    if (in->op == 0x22) return push(c, t, live(c) ? x : home(c, c->height));
    return true;
}

static bool do_global(compiler *c, const wasm_instr *in) {
    if (in->idx >= c->m->nglobals) return invalid(c, "unknown global");
    const wasm_globaltype *g = &c->m->globals[in->idx];
    operand v;
    if (in->op == 0x23) return emit_with(c, OP_GLOBAL_GET, g->type, (cell[]){in->idx}, 1, NULL, 0);
    if (!g->is_mutable) return invalid(c, "global is immutable");
    if (!pop(c, g->type, &v)) return false;
    if (!live(c)) return true;
    emit_op(c, OP_GLOBAL_SET);
    emit_cell(c, v.slot);
    emit_cell(c, in->idx);
    return true;
}

static bool do_select(compiler *c, const wasm_instr *in) {
    operand cond, a, b;
    uint8_t t = TYPE_UNKNOWN;
    if (in->op == 0x1C) {
        if (in->count != 1) return invalid(c, "invalid result arity");
        t = in->reftype;
        if (!wasm_is_valtype(t)) return fail(c, AL_ERR_MALFORMED, "malformed value type");
    }
    if (!pop(c, AL_I32, &cond) || !pop(c, t, &b) || !pop(c, t, &a)) return false;
    if (in->op == 0x1B) {
        if (wasm_is_reftype(a.type) || wasm_is_reftype(b.type)) return invalid(c, "type mismatch");
        if (a.type && b.type && a.type != b.type) return invalid(c, "type mismatch");
        t = a.type ? a.type : b.type;
    }
    if (!live(c)) return push(c, t, home(c, c->height));
    emit_op(c, OP_SELECT);
    if (!push_result(c, t)) return false;
    emit_cell(c, a.slot);
    emit_cell(c, b.slot);
    emit_cell(c, cond.slot);
    return true;
}

static bool do_ref(compiler *c, const wasm_instr *in) {
    operand v;
    switch (in->op) {
    case 0xD0:
        if (!wasm_is_reftype(in->reftype)) return fail(c, AL_ERR_MALFORMED, "malformed reference type");
        return push(c, in->reftype, const_slot(c, 0));
    case 0xD1:
        if (!pop(c, TYPE_UNKNOWN, &v)) return false;
        if (v.type != TYPE_UNKNOWN && !wasm_is_reftype(v.type)) return invalid(c, "type mismatch");
        return emit_with(c, OP_I64_EQZ, AL_I32, NULL, 0, &v, 1);
    default: /* 0xD2 ref.func */
        if (in->idx >= c->m->nfuncs) return invalid(c, "unknown function");
        if (!c->m->declared_refs || !c->m->declared_refs[in->idx])
            return invalid(c, "undeclared function reference");
        return emit_with(c, OP_REF_FUNC, AL_FUNCREF, (cell[]){in->idx}, 1, NULL, 0);
    }
}

static bool do_const(compiler *c, const wasm_instr *in) {
    uint8_t t = in->op == 0x41 ? AL_I32 : in->op == 0x42 ? AL_I64 : in->op == 0x43 ? AL_F32 : AL_F64;
    uint64_t v = in->op == 0x41 ? (uint32_t)in->imm : in->imm;
    uint32_t slot = const_slot(c, v);
    return slot != NONE && push(c, t, slot);
}

/* ---- the instruction loop -------------------------------------------------------- */

static bool translate_instr(compiler *c, const wasm_instr *in) {
    uint32_t op = in->op;
    operand v;
    switch (op) {
    case 0x00:
        if (live(c)) emit_op(c, OP_UNREACHABLE);
        set_unreachable(c);
        return true;
    case 0x01: return true;
    case 0x02: return do_block(c, in, CTRL_BLOCK);
    case 0x03: return do_block(c, in, CTRL_LOOP);
    case 0x04: return do_block(c, in, CTRL_IF);
    case 0x05: return do_else(c);
    case 0x0B: return do_end(c);
    case 0x0C: return do_br(c, in->idx);
    case 0x0D: return do_br_if(c, in->idx);
    case 0x0E: return do_br_table(c, in);
    case 0x0F: return do_br(c, c->nctrls - 1);
    case 0x10:
        if (in->idx >= c->m->nfuncs) return invalid(c, "unknown function");
        return do_call(c, wasm_func_type(c->m, in->idx), OP_CALL, in->idx, 0, 0);
    case 0x11: {
        const wasm_tabletype *t = table_at(c, in->idx2);
        if (!t) return false;
        if (t->elem_type != AL_FUNCREF) return invalid(c, "type mismatch");
        if (in->idx >= c->m->ntypes) return invalid(c, "unknown type");
        if (!pop(c, AL_I32, &v)) return false;
        return do_call(c, &c->m->types[in->idx], OP_CALL_INDIRECT, in->idx, in->idx2, v.slot);
    }
    case 0x1A: return pop_any(c, &v);
    case 0x1B: case 0x1C: return do_select(c, in);
    case 0x20: case 0x21: case 0x22: return do_local(c, in);
    case 0x23: case 0x24: return do_global(c, in);
    case 0x25: case 0x26: return do_table(c, in);
    case 0x3F:
        if (!need_memory(c)) return false;
        return emit_with(c, OP_MEMORY_SIZE, AL_I32, NULL, 0, NULL, 0);
    case 0x40:
        if (!need_memory(c) || !pop(c, AL_I32, &v)) return false;
        return emit_with(c, OP_MEMORY_GROW, AL_I32, NULL, 0, &v, 1);
    case 0x41: case 0x42: case 0x43: case 0x44: return do_const(c, in);
    case 0xD0: case 0xD1: case 0xD2: return do_ref(c, in);
    }
    if (op >= 0x28 && op <= 0x3E) return do_load_store(c, in);
    if (op >= 0x45 && op <= 0xC4) return do_numeric(c, op);
    if (op >= 0xFC00 && op <= 0xFC07) return do_numeric(c, op);
    if (op >= 0xFC08 && op <= 0xFC0B) return do_bulk_memory(c, in);
    if (op >= 0xFC0C && op <= 0xFC11) return do_table(c, in);
    return fail(c, AL_ERR_MALFORMED, "illegal opcode");
}

static void compiler_free(compiler *c) {
    free(c->local_types);
    free(c->consts.values);
    free(c->consts.hash);
    free(c->stack);
    free(c->ctrls);
    free(c->code);
    free(c->patches);
    free(c->pcmap);
}

static struct compiled_func *finish(compiler *c) {
    struct compiled_func *out = calloc(1, sizeof *out);
    if (!out) {
        oom(c);
        return NULL;
    }
    out->func_index = c->func_index;
    out->nparams = c->type->nparams;
    out->nresults = c->type->nresults;
    out->nlocals = c->nlocal_slots - c->type->nparams;
    out->const_base = c->nlocal_slots;
    out->nconsts = c->consts.count;
    out->consts = c->consts.values;
    c->consts.values = NULL;
    uint64_t size = (uint64_t)c->stack_base + c->max_height;
    if (size < out->nresults) size = out->nresults;
    out->frame_size = (uint32_t)size;
    out->code = c->code;
    out->ncode = c->ncode;
    c->code = NULL;
    out->pcmap = c->pcmap;
    out->npcmap = c->npcmap;
    c->pcmap = NULL;
    return out;
}

static struct compiled_func *compile_function(const al_module *m, uint32_t defined,
                                              const void *const *handlers, al_error *err) {
    const wasm_func *fn = &m->funcs[defined];
    compiler c = {.m = m, .err = err, .handlers = handlers,
                  .func_index = m->nfunc_imports + defined, .last_pc = NONE,
                  .last_dst_pos = NONE};
    c.type = &m->types[fn->type];
    c.cur_offset = fn->body_offset;
    c.nlocal_slots = c.type->nparams + fn->nlocals;
    c.local_types = malloc(c.nlocal_slots ? c.nlocal_slots : 1);
    struct compiled_func *out = NULL;
    if (!c.local_types) {
        oom(&c);
        goto done;
    }
    memcpy(c.local_types, c.type->params, c.type->nparams);
    memcpy(c.local_types + c.type->nparams, fn->local_types, fn->nlocals);
    c.r = (wasm_reader){m->bytes, m->bytes + fn->body_offset,
                        m->bytes + fn->body_offset + fn->body_size, NULL};
    /* Const slots sit below the operand stack, so their number must be known
     * first: the decoder's count of constant instructions bounds it. When that
     * bound is large (many repeats), an exact pre-scan keeps frames small. */
    uint32_t const_area = fn->nconst_instrs;
    if (const_area > 256) {
        if (!collect_constants(&c, c.r)) goto done;
        const_area = c.consts.count;
    }
    c.stack_base = c.nlocal_slots + const_area;
    if (!push_ctrl(&c, CTRL_FUNC, NULL, 0, c.type->results, c.type->nresults)) goto done;
    wasm_instr in;
    while (c.nctrls > 0 && !c.failed) {
        if (rd_eof(&c.r)) {
            fail(&c, AL_ERR_MALFORMED, "END opcode expected");
            break;
        }
        if (!rd_instr(&c.r, &in)) {
            fail(&c, AL_ERR_MALFORMED, c.r.error);
            break;
        }
        c.cur_offset = in.offset;
        c.pending_fuel++;
        translate_instr(&c, &in);
    }
    if (!c.failed && !rd_eof(&c.r)) fail(&c, AL_ERR_MALFORMED, "section size mismatch");
    if (!c.failed && (uint64_t)c.stack_base + c.max_height > UINT32_MAX / 2)
        fail(&c, AL_ERR_LIMIT, "function frame too large");
    if (!c.failed) out = finish(&c);
done:
    compiler_free(&c);
    return out;
}

bool wasm_compile_module(al_module *m, al_error *err) {
    const void *const *handlers = exec_handler_table();
    for (uint32_t i = 0; i < m->nfuncs - m->nfunc_imports; i++) {
        m->funcs[i].code = compile_function(m, i, handlers, err);
        if (!m->funcs[i].code) return false;
    }
    return true;
}

void compiled_func_free(struct compiled_func *code) {
    if (!code) return;
    free(code->consts);
    free(code->code);
    free(code->pcmap);
    free(code);
}
