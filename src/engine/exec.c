/*
 * exec.c — the interpreter for the internal code of code.h.
 *
 * One C function (interp) runs every guest frame: wasm-to-wasm calls push a
 * frame record and jump, they do not recurse on the host stack, so guest call
 * depth is bounded by al_limits.max_call_depth and the value stack size, and
 * exhausting either is the trap "call stack exhausted" — never a host stack
 * overflow. Host functions are called from here and may re-enter through
 * al_call; the re-entered run stacks its frames above the caller's.
 *
 * Every guest value that becomes a host address is bounds-checked first:
 * linear memory accesses compare the 33-bit effective address plus the
 * access size against the current memory size; table accesses against the
 * table size; segment copies in 64-bit arithmetic so they cannot wrap.
 * Traps unwind to the entry frame and are returned as values in al_error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "code.h"
#include "numeric.h"
#include "runtime.h"

typedef struct frame_rec {
    const cell *ret_ip; /* NULL marks the entry frame of an exec_invoke */
    slot_t *ret_fp;
    al_instance *inst;
    const struct compiled_func *fn;
} frame_rec;

struct exec_stack {
    slot_t *slots;     /* mmap'ed: see stack_for */
    size_t slots_bytes;
    slot_t *end;
    slot_t *top; /* first free slot for a (re-)entry from the host */
    frame_rec *frames; /* frames_cap entries, grown on demand up to max_frames */
    uint32_t nframes, frames_cap, max_frames;
    uint32_t entries; /* nested exec_invoke calls (host -> guest re-entry) */
};

/* Each re-entry (guest -> host -> al_call -> guest) costs host C stack, so its
 * nesting is bounded well below what an 8 MiB thread stack can hold. */
#define MAX_REENTRY 200
#define INITIAL_FRAMES 64u

/* Room for one more frame record: false at max_frames (the guest's call
 * depth limit) or when memory runs out, both "call stack exhausted". */
static bool frames_reserve(struct exec_stack *st) {
    if (st->nframes < st->frames_cap) return true;
    if (st->frames_cap >= st->max_frames) return false;
    uint32_t cap = st->frames_cap > st->max_frames / 2 ? st->max_frames : st->frames_cap * 2;
    frame_rec *grown = realloc(st->frames, (size_t)cap * sizeof *grown);
    if (!grown) return false;
    st->frames = grown;
    st->frames_cap = cap;
    return true;
}

void exec_stack_free(struct exec_stack *st) {
    if (!st) return;
    if (st->slots) munmap(st->slots, st->slots_bytes);
    free(st->frames);
    free(st);
}

static struct exec_stack *stack_for(al_store *store) {
    if (store->stack) return store->stack;
    struct exec_stack *st = calloc(1, sizeof *st);
    size_t nslots = store->limits.max_value_stack ? store->limits.max_value_stack : 1;
    uint32_t nframes = store->limits.max_call_depth ? store->limits.max_call_depth : 1;
    if (!st) return NULL;
    /* The value stack (8 MiB by default) is its own mapping, not malloc'ed:
     * pages are committed only as deep as the guest goes, and freeing it
     * gives the memory back to the system. From malloc, a long-running
     * embedder (airlockd) that makes and frees stores on many threads saw
     * these blocks land in per-thread arenas that fragment and keep their
     * pages (RSS grew by ~100 MiB over 48 sessions). */
    st->slots_bytes = nslots * sizeof(slot_t);
    void *slots = nslots <= SIZE_MAX / sizeof(slot_t)
                      ? mmap(NULL, st->slots_bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                      : MAP_FAILED;
    st->slots = slots == MAP_FAILED ? NULL : slots;
    /* The frame records start small and double as calls nest: at the
     * default depth limit a full array is 320 KiB, which a short-lived store
     * (one plugin instance) would otherwise allocate and zero every time. */
    st->frames_cap = nframes < INITIAL_FRAMES ? nframes : INITIAL_FRAMES;
    st->frames = malloc(st->frames_cap * sizeof(frame_rec));
    if (!st->slots || !st->frames) {
        exec_stack_free(st);
        return NULL;
    }
    st->end = st->slots + nslots;
    st->top = st->slots;
    st->max_frames = nframes;
    store->stack = st;
    return st;
}

/* ---- host calls ------------------------------------------------------------ */

/* Arguments cross as al_values. A slot already holds a value's bits the way
 * the union does (zero-extended, see runtime.h), so each argument is its
 * type plus the whole slot, and each result starts as a zero of its type.
 * Results are taken back at the declared types, whatever the host wrote.
 * args/res hold np/nr entries. */
static inline bool host_invoke(al_func *f, slot_t *slots, al_instance *caller_inst,
                               al_value *args, al_value *res, al_error *err) {
    uint32_t np = f->type.nparams, nr = f->type.nresults;
    for (uint32_t i = 0; i < np; i++) {
        args[i].type = (al_valtype)f->type.params[i];
        args[i].of.i64 = (int64_t)slots[i];
    }
    for (uint32_t i = 0; i < nr; i++) {
        res[i].type = (al_valtype)f->type.results[i];
        res[i].of.i64 = 0;
    }
    al_caller caller = {caller_inst};
    al_trap_kind trap = f->host_fn(f->host_env, &caller, args, res);
    if (trap != AL_TRAP_NONE) {
        al_error_set(err, AL_ERR_TRAP, "%s", al_trap_message(trap));
        err->trap = trap;
        return false;
    }
    for (uint32_t i = 0; i < nr; i++) {
        res[i].type = (al_valtype)f->type.results[i];
        slots[i] = value_to_slot(res[i]);
    }
    return true;
}

/* Host calls with few parameters and results (every plugin and WASI
 * import) take this path; a plugin makes one per 8 input bytes, so it is
 * inlined into the interpreter and allocates nothing. */
enum { HOST_INLINE_VALUES = 16 }; /* WASI's path_open takes 9 */

static inline bool host_is_small(const al_func *f) {
    return f->host_slots <= HOST_INLINE_VALUES; /* max(nparams, nresults) */
}

static bool call_host(al_store *store, al_func *f, slot_t *slots, al_instance *caller_inst,
                      al_error *err) {
    if (host_is_small(f)) {
        al_value args[HOST_INLINE_VALUES], res[HOST_INLINE_VALUES];
        return host_invoke(f, slots, caller_inst, args, res, err);
    }
    al_value *args = malloc((f->type.nparams + 1ull) * sizeof *args);
    al_value *res = malloc((f->type.nresults + 1ull) * sizeof *res);
    bool ok = args && res && host_invoke(f, slots, caller_inst, args, res, err);
    if (!args || !res) al_error_set(err, AL_ERR_NOMEM, "out of memory calling a host function");
    free(args);
    free(res);
    return ok;
}

/* ---- traps ------------------------------------------------------------------ */

static uint32_t wasm_offset_of(const struct compiled_func *fn, const cell *ip) {
    uint32_t pc = (uint32_t)(ip - fn->code), lo = 0, hi = fn->npcmap;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (fn->pcmap[mid].pc <= pc) lo = mid;
        else hi = mid;
    }
    return fn->npcmap ? fn->pcmap[lo].offset : 0;
}

static void describe_frame(al_frame_info *out, const al_instance *inst,
                           const struct compiled_func *fn, const cell *ip) {
    out->func_index = fn->func_index;
    out->code_offset = wasm_offset_of(fn, ip);
    const al_module *m = inst->module;
    const char *name = m->func_names ? m->func_names[fn->func_index] : NULL;
    snprintf(out->func_name, sizeof out->func_name, "%s", name ? name : "");
}

/* Fill err for a trap at (inst, fn, ip), with the guest frames of this
 * invocation as a backtrace (the name section provides the names). */
static void set_trap(al_error *err, al_trap_kind kind, const struct exec_stack *st,
                     const al_instance *inst, const struct compiled_func *fn, const cell *ip) {
    if (kind != AL_TRAP_HOST || err->kind != AL_ERR_TRAP) {
        al_error_set(err, AL_ERR_TRAP, "%s", al_trap_message(kind));
        err->trap = kind;
    }
    if (!fn) return;
    al_frame_info top;
    describe_frame(&top, inst, fn, ip);
    err->func_index = top.func_index;
    err->code_offset = top.code_offset;
    snprintf(err->func_name, sizeof err->func_name, "%s", top.func_name);
    err->backtrace[0] = top;
    err->backtrace_len = 1;
    /* frames[i] records the caller of frame i+1: its function and return point. */
    for (uint32_t i = st->nframes; i-- > 0 && st->frames[i].ret_ip;) {
        const frame_rec *fr = &st->frames[i];
        if (err->backtrace_len == AL_BACKTRACE_MAX) {
            err->backtrace_truncated = true;
            break;
        }
        describe_frame(&err->backtrace[err->backtrace_len++], fr->inst, fr->fn, fr->ret_ip - 1);
    }
}

/* ---- segments ------------------------------------------------------------------ */

static slot_t elem_item(const al_instance *inst, const wasm_const_expr *e) {
    switch (e->op) {
    case 0xD2: return (uintptr_t)inst->funcs[e->value];
    case 0x23: return inst->globals[e->value]->value;
    default: return 0;
    }
}

static bool table_init(al_instance *inst, uint32_t t, uint32_t seg, uint32_t d, uint32_t s,
                       uint32_t n) {
    al_table *tab = inst->tables[t];
    const wasm_elem *e = &inst->module->elems[seg];
    uint64_t seg_len = inst->elem_dropped[seg] ? 0 : e->count;
    if ((uint64_t)s + n > seg_len || (uint64_t)d + n > tab->size) return false;
    for (uint32_t i = 0; i < n; i++) tab->elems[d + i] = elem_item(inst, &e->items[s + i]);
    return true;
}

static bool memory_init(al_instance *inst, uint32_t seg, uint32_t d, uint32_t s, uint32_t n) {
    al_memory *mem = inst->memories[0];
    const wasm_data *data = &inst->module->datas[seg];
    uint64_t seg_len = inst->data_dropped[seg] ? 0 : data->data_size;
    if ((uint64_t)s + n > seg_len || (uint64_t)d + n > mem->size) return false;
    if (n) memcpy(mem->data + d, inst->module->bytes + data->data_offset + s, n);
    return true;
}

/* ---- the interpreter ---------------------------------------------------------------- */

#define NEXT(n) do { ip += (n); goto *(const void *)ip[0]; } while (0)
#define TRAP(kind) do { trap = (kind); goto trapped; } while (0)
#define LOAD_MEM() do { \
        al_memory *m_ = inst->memory0; \
        mem = m_ ? m_->data : NULL; mem_size = m_ ? m_->size : 0; } while (0)

#define UN(NAME, fn) op_##NAME: fp[ip[1]] = fn(fp[ip[2]]); NEXT(3);
#define BIN(NAME, fn) op_##NAME: fp[ip[1]] = fn(fp[ip[2]], fp[ip[3]]); NEXT(4);
#define BINK(NAME, fn) op_##NAME: fp[ip[1]] = fn(fp[ip[2]], ip[3]); NEXT(4);
#define DIV(NAME, fn, T) op_##NAME: { T r_; int t_ = fn(fp[ip[2]], fp[ip[3]], &r_); \
        if (t_) { TRAP((al_trap_kind)t_); } \
        fp[ip[1]] = r_; NEXT(4); }
#define TRUNC(NAME, fn, T) op_##NAME: { T r_; int t_ = fn(fp[ip[2]], &r_); \
        if (t_) { TRAP((al_trap_kind)t_); } \
        fp[ip[1]] = r_; NEXT(3); }
#define BRCMP(NAME, fn) op_##NAME: fuel -= (int64_t)ip[4]; \
        if (fn(fp[ip[1]], fp[ip[2]])) { NEXT((int64_t)ip[3]); } \
        NEXT(5);
#define LOAD(NAME, N, T, EXT) op_##NAME: { \
        uint64_t ea_ = (uint64_t)(uint32_t)fp[ip[2]] + ip[3]; \
        if (ea_ + (N) > mem_size) TRAP(AL_TRAP_MEMORY_OOB); \
        T v_; memcpy(&v_, mem + ea_, N); fp[ip[1]] = EXT; NEXT(4); }
#define STORE(NAME, N, T) op_##NAME: { \
        uint64_t ea_ = (uint64_t)(uint32_t)fp[ip[1]] + ip[3]; \
        if (ea_ + (N) > mem_size) TRAP(AL_TRAP_MEMORY_OOB); \
        T v_ = (T)fp[ip[2]]; memcpy(mem + ea_, &v_, N); NEXT(4); }
/* The _IX forms: address (uint32_t)(a + b), the wrap of the i32.add they
 * replace, then the same 33-bit bound check as above. */
#define LOAD_IX(NAME, N, T, EXT) op_##NAME##_IX: { \
        uint64_t ea_ = (uint64_t)(uint32_t)(fp[ip[2]] + fp[ip[3]]) + ip[4]; \
        if (ea_ + (N) > mem_size) TRAP(AL_TRAP_MEMORY_OOB); \
        T v_; memcpy(&v_, mem + ea_, N); fp[ip[1]] = EXT; NEXT(5); }
#define STORE_IX(NAME, N, T) op_##NAME##_IX: { \
        uint64_t ea_ = (uint64_t)(uint32_t)(fp[ip[1]] + fp[ip[2]]) + ip[4]; \
        if (ea_ + (N) > mem_size) TRAP(AL_TRAP_MEMORY_OOB); \
        T v_ = (T)fp[ip[3]]; memcpy(mem + ea_, &v_, N); NEXT(5); }

static bool interp(al_store *store, struct exec_stack *st, al_func *entry, slot_t *fp,
                   al_error *err, const void *const **table_out) {
#define AL_OP_LABEL(name) &&op_##name,
    static const void *const labels[] = {AL_OPS(AL_OP_LABEL)};
#undef AL_OP_LABEL
    if (table_out) {
        *table_out = labels;
        return true;
    }
    al_instance *inst = entry->instance;
    const struct compiled_func *fn = NULL;
    const cell *ip = NULL;
    uint8_t *mem;
    uint64_t mem_size;
    al_trap_kind trap = AL_TRAP_NONE;
    atomic_int *interrupt = &store->interrupt;
    /* The budget lives in a register while guest code runs; the store holds
     * it whenever the host can see it (exit, host calls). Unmetered runs start
     * from a budget they cannot exhaust. */
    int64_t fuel = store->fuel_enabled ? (int64_t)(store->fuel > INT64_MAX ? INT64_MAX : store->fuel)
                                       : INT64_MAX;
#define SAVE_FUEL() do { if (store->fuel_enabled) store->fuel = fuel > 0 ? (uint64_t)fuel : 0; } while (0)
#define LOAD_FUEL() do { if (store->fuel_enabled) fuel = (int64_t)(store->fuel > INT64_MAX ? INT64_MAX : store->fuel); } while (0)
#define CHECK_POINT() do { \
        if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED); \
        if (atomic_load_explicit(interrupt, memory_order_relaxed)) TRAP(AL_TRAP_INTERRUPTED); } while (0)
    al_func *callee = entry;
    slot_t *new_fp = fp;
    const cell *ret_ip = NULL;
    LOAD_MEM();

enter: {
        /* Push a frame for callee at new_fp, returning to ret_ip. */
        const struct compiled_func *cf = callee->code;
        if ((st->nframes >= st->frames_cap && !frames_reserve(st)) ||
            (size_t)(st->end - new_fp) < cf->frame_size)
            TRAP(AL_TRAP_STACK_EXHAUSTED);
        CHECK_POINT();
        st->frames[st->nframes++] = (frame_rec){ret_ip, fp, inst, fn};
        /* Usually a handful of slots: plain loops beat library calls here. */
        for (slot_t *p = new_fp + cf->nparams, *e = p + cf->nlocals; p < e; p++) *p = 0;
        /* Constants are many in compiled C (dlmalloc has dozens): one
         * memcpy beats a slot-by-slot loop that the compiler cannot widen
         * (it cannot rule out aliasing). */
        if (cf->nconsts > 4)
            memcpy(new_fp + cf->const_base, cf->consts, cf->nconsts * sizeof(slot_t));
        else
            for (uint32_t k = 0; k < cf->nconsts; k++) new_fp[cf->const_base + k] = cf->consts[k];
        fp = new_fp;
        fn = cf;
        if (callee->instance != inst) {
            inst = callee->instance;
            LOAD_MEM();
        }
        ip = cf->code;
        NEXT(0);
    }

call: {
        /* callee, new_fp and ret_ip are set. */
        if (!callee->is_host) goto enter;
        slot_t *saved_top = st->top;
        st->top = new_fp + callee->host_slots;
        SAVE_FUEL(); /* the host may re-enter and spend from the same budget */
        bool ok;
        if (host_is_small(callee)) {
            al_value args[HOST_INLINE_VALUES], res[HOST_INLINE_VALUES];
            ok = host_invoke(callee, new_fp, inst, args, res, err);
        } else {
            ok = call_host(store, callee, new_fp, inst, err);
        }
        LOAD_FUEL();
        st->top = saved_top;
        if (!ok) TRAP(err->kind == AL_ERR_TRAP ? err->trap : AL_TRAP_HOST);
        LOAD_MEM();
        ip = ret_ip;
        NEXT(0);
    }

op_UNREACHABLE: TRAP(AL_TRAP_UNREACHABLE);
op_BR: fuel -= (int64_t)ip[2]; NEXT((int64_t)ip[1]);
op_BR_IF:
    fuel -= (int64_t)ip[3];
    if ((uint32_t)fp[ip[1]]) NEXT((int64_t)ip[2]);
    NEXT(4);
op_BR_IFZ:
    fuel -= (int64_t)ip[3];
    if (!(uint32_t)fp[ip[1]]) NEXT((int64_t)ip[2]);
    NEXT(4);
op_BR_TABLE: {
        uint64_t i = (uint32_t)fp[ip[1]];
        if (i > ip[2]) i = ip[2];
        fuel -= (int64_t)ip[3];
        NEXT((int64_t)ip[4 + i]);
    }
op_LOOP_CHECK:
    CHECK_POINT();
    NEXT(1);
op_FUEL: fuel -= (int64_t)ip[1]; NEXT(2);
op_MOV: fp[ip[1]] = fp[ip[2]]; NEXT(3);
op_RETURN: {
        fuel -= (int64_t)ip[1];
        frame_rec *fr = &st->frames[--st->nframes];
        if (!fr->ret_ip) {
            SAVE_FUEL();
            return true;
        }
        ip = fr->ret_ip;
        fp = fr->ret_fp;
        fn = fr->fn;
        /* As at entry: only another instance's memory needs loading. Within
         * one instance mem and mem_size stay current (memory.grow and every
         * host call reload them, as does each switch between instances). */
        if (fr->inst != inst) {
            inst = fr->inst;
            LOAD_MEM();
        }
        NEXT(0);
    }
op_CALL:
    callee = inst->funcs[ip[1]];
    new_fp = fp + ip[2];
    fuel -= (int64_t)ip[3];
    ret_ip = ip + 4;
    goto call;
op_CALL_INDIRECT: {
        al_table *t = inst->tables[ip[2]];
        uint32_t i = (uint32_t)fp[ip[3]];
        if (i >= t->size) TRAP(AL_TRAP_UNDEFINED_ELEMENT);
        callee = (al_func *)(uintptr_t)t->elems[i];
        if (!callee) TRAP(AL_TRAP_UNINITIALIZED_ELEMENT);
        if (callee->sig_id != inst->sig_ids[ip[1]]) TRAP(AL_TRAP_INDIRECT_TYPE_MISMATCH);
        new_fp = fp + ip[4];
        fuel -= (int64_t)ip[5];
        ret_ip = ip + 6;
        goto call;
    }
op_SELECT: fp[ip[1]] = (uint32_t)fp[ip[4]] ? fp[ip[2]] : fp[ip[3]]; NEXT(5);
op_GLOBAL_GET: fp[ip[1]] = inst->globals[ip[2]]->value; NEXT(3);
op_GLOBAL_SET: inst->globals[ip[2]]->value = fp[ip[1]]; NEXT(3);
op_TABLE_GET: {
        al_table *t = inst->tables[ip[2]];
        uint32_t i = (uint32_t)fp[ip[3]];
        if (i >= t->size) TRAP(AL_TRAP_TABLE_OOB);
        fp[ip[1]] = t->elems[i];
        NEXT(4);
    }
op_TABLE_SET: {
        al_table *t = inst->tables[ip[1]];
        uint32_t i = (uint32_t)fp[ip[2]];
        if (i >= t->size) TRAP(AL_TRAP_TABLE_OOB);
        t->elems[i] = fp[ip[3]];
        NEXT(4);
    }
op_TABLE_SIZE: fp[ip[1]] = inst->tables[ip[2]]->size; NEXT(3);
op_TABLE_GROW: {
        int64_t old = table_grow(inst->tables[ip[2]], (uint32_t)fp[ip[4]], fp[ip[3]],
                                 store->limits.max_table_elements);
        fp[ip[1]] = (uint32_t)(int32_t)old;
        NEXT(5);
    }
op_TABLE_FILL: {
        al_table *t = inst->tables[ip[1]];
        uint32_t i = (uint32_t)fp[ip[2]], n = (uint32_t)fp[ip[4]];
        slot_t v = fp[ip[3]];
        if ((uint64_t)i + n > t->size) TRAP(AL_TRAP_TABLE_OOB);
        fuel -= n;
        if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED); /* refuse work the budget cannot pay */
        for (uint32_t k = 0; k < n; k++) t->elems[i + k] = v;
        NEXT(5);
    }
op_TABLE_COPY: {
        al_table *td = inst->tables[ip[1]], *ts = inst->tables[ip[2]];
        uint32_t d = (uint32_t)fp[ip[3]], s = (uint32_t)fp[ip[4]], n = (uint32_t)fp[ip[5]];
        if ((uint64_t)s + n > ts->size || (uint64_t)d + n > td->size) TRAP(AL_TRAP_TABLE_OOB);
        fuel -= n;
        if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED);
        if (n) memmove(td->elems + d, ts->elems + s, (size_t)n * sizeof(slot_t));
        NEXT(6);
    }
op_TABLE_INIT:
    fuel -= (uint32_t)fp[ip[5]];
    if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED);
    if (!table_init(inst, (uint32_t)ip[1], (uint32_t)ip[2], (uint32_t)fp[ip[3]],
                    (uint32_t)fp[ip[4]], (uint32_t)fp[ip[5]]))
        TRAP(AL_TRAP_TABLE_OOB);
    NEXT(6);
op_ELEM_DROP: inst->elem_dropped[ip[1]] = true; NEXT(2);
op_REF_FUNC: fp[ip[1]] = (uintptr_t)inst->funcs[ip[2]]; NEXT(3);
op_MEMORY_SIZE: fp[ip[1]] = (uint32_t)(mem_size / WASM_PAGE_SIZE); NEXT(2);
op_MEMORY_GROW: {
        uint32_t delta = (uint32_t)fp[ip[2]];
        if ((mem_size >> 16) + delta > store->limits.max_memory_bytes >> 16 &&
            (mem_size >> 16) + delta <= inst->memories[0]->max_pages) {
            store->memory_limit_hit = true; /* refused by the embedder, not the module */
            if (store->limits.trap_on_memory_limit) TRAP(AL_TRAP_MEMORY_LIMIT);
        }
        int64_t old = memory_grow(inst->memories[0], delta, store->limits.max_memory_bytes);
        fp[ip[1]] = (uint32_t)(int32_t)old;
        LOAD_MEM();
        NEXT(3);
    }
op_MEMORY_INIT:
    fuel -= (uint32_t)fp[ip[4]]; /* bulk operations cost one unit per byte */
    if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED);
    if (!memory_init(inst, (uint32_t)ip[1], (uint32_t)fp[ip[2]], (uint32_t)fp[ip[3]],
                     (uint32_t)fp[ip[4]]))
        TRAP(AL_TRAP_MEMORY_OOB);
    NEXT(5);
op_DATA_DROP: inst->data_dropped[ip[1]] = true; NEXT(2);
op_MEMORY_COPY: {
        uint32_t d = (uint32_t)fp[ip[1]], s = (uint32_t)fp[ip[2]], n = (uint32_t)fp[ip[3]];
        if ((uint64_t)s + n > mem_size || (uint64_t)d + n > mem_size) TRAP(AL_TRAP_MEMORY_OOB);
        fuel -= n;
        if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED);
        if (n) memmove(mem + d, mem + s, n);
        NEXT(4);
    }
op_MEMORY_FILL: {
        uint32_t d = (uint32_t)fp[ip[1]], n = (uint32_t)fp[ip[3]];
        if ((uint64_t)d + n > mem_size) TRAP(AL_TRAP_MEMORY_OOB);
        fuel -= n;
        if (fuel < 0) TRAP(AL_TRAP_FUEL_EXHAUSTED);
        if (n) memset(mem + d, (int)(uint8_t)fp[ip[2]], n);
        NEXT(4);
    }
    /* every load and store twice: plain (address from a slot) and _IX
     * (address slot + constant fused), from one list so they cannot drift */
#define MEMORY_LOADS(X)                                   \
    X(LOAD32, 4, uint32_t, v_)                            \
    X(LOAD64, 8, uint64_t, v_)                            \
    X(LOAD8_S32, 1, int8_t, (uint32_t)(int32_t)v_)        \
    X(LOAD8_U, 1, uint8_t, v_)                            \
    X(LOAD16_S32, 2, int16_t, (uint32_t)(int32_t)v_)      \
    X(LOAD16_U, 2, uint16_t, v_)                          \
    X(LOAD8_S64, 1, int8_t, (uint64_t)(int64_t)v_)        \
    X(LOAD16_S64, 2, int16_t, (uint64_t)(int64_t)v_)      \
    X(LOAD32_S64, 4, int32_t, (uint64_t)(int64_t)v_)
#define MEMORY_STORES(X) \
    X(STORE8, 1, uint8_t) X(STORE16, 2, uint16_t) X(STORE32, 4, uint32_t) X(STORE64, 8, uint64_t)
    MEMORY_LOADS(LOAD)
    MEMORY_STORES(STORE)
    MEMORY_LOADS(LOAD_IX)
    MEMORY_STORES(STORE_IX)
#undef MEMORY_LOADS
#undef MEMORY_STORES

    UN(I32_EQZ, num_i32_eqz) BIN(I32_EQ, num_i32_eq) BIN(I32_NE, num_i32_ne)
    BIN(I32_LT_S, num_i32_lt_s) BIN(I32_LT_U, num_i32_lt_u) BIN(I32_GT_S, num_i32_gt_s)
    BIN(I32_GT_U, num_i32_gt_u) BIN(I32_LE_S, num_i32_le_s) BIN(I32_LE_U, num_i32_le_u)
    BIN(I32_GE_S, num_i32_ge_s) BIN(I32_GE_U, num_i32_ge_u)
    UN(I64_EQZ, num_i64_eqz) BIN(I64_EQ, num_i64_eq) BIN(I64_NE, num_i64_ne)
    BIN(I64_LT_S, num_i64_lt_s) BIN(I64_LT_U, num_i64_lt_u) BIN(I64_GT_S, num_i64_gt_s)
    BIN(I64_GT_U, num_i64_gt_u) BIN(I64_LE_S, num_i64_le_s) BIN(I64_LE_U, num_i64_le_u)
    BIN(I64_GE_S, num_i64_ge_s) BIN(I64_GE_U, num_i64_ge_u)
    BIN(F32_EQ, num_f32_eq) BIN(F32_NE, num_f32_ne) BIN(F32_LT, num_f32_lt)
    BIN(F32_GT, num_f32_gt) BIN(F32_LE, num_f32_le) BIN(F32_GE, num_f32_ge)
    BIN(F64_EQ, num_f64_eq) BIN(F64_NE, num_f64_ne) BIN(F64_LT, num_f64_lt)
    BIN(F64_GT, num_f64_gt) BIN(F64_LE, num_f64_le) BIN(F64_GE, num_f64_ge)

    UN(I32_CLZ, num_i32_clz) UN(I32_CTZ, num_i32_ctz) UN(I32_POPCNT, num_i32_popcnt)
    BIN(I32_ADD, num_i32_add) BIN(I32_SUB, num_i32_sub) BIN(I32_MUL, num_i32_mul)
    DIV(I32_DIV_S, num_i32_div_s, uint32_t) DIV(I32_DIV_U, num_i32_div_u, uint32_t)
    DIV(I32_REM_S, num_i32_rem_s, uint32_t) DIV(I32_REM_U, num_i32_rem_u, uint32_t)
    BIN(I32_AND, num_i32_and) BIN(I32_OR, num_i32_or) BIN(I32_XOR, num_i32_xor)
    BIN(I32_SHL, num_i32_shl) BIN(I32_SHR_S, num_i32_shr_s) BIN(I32_SHR_U, num_i32_shr_u)
    BIN(I32_ROTL, num_i32_rotl) BIN(I32_ROTR, num_i32_rotr)
    UN(I64_CLZ, num_i64_clz) UN(I64_CTZ, num_i64_ctz) UN(I64_POPCNT, num_i64_popcnt)
    BIN(I64_ADD, num_i64_add) BIN(I64_SUB, num_i64_sub) BIN(I64_MUL, num_i64_mul)
    DIV(I64_DIV_S, num_i64_div_s, uint64_t) DIV(I64_DIV_U, num_i64_div_u, uint64_t)
    DIV(I64_REM_S, num_i64_rem_s, uint64_t) DIV(I64_REM_U, num_i64_rem_u, uint64_t)
    BIN(I64_AND, num_i64_and) BIN(I64_OR, num_i64_or) BIN(I64_XOR, num_i64_xor)
    BIN(I64_SHL, num_i64_shl) BIN(I64_SHR_S, num_i64_shr_s) BIN(I64_SHR_U, num_i64_shr_u)
    BIN(I64_ROTL, num_i64_rotl) BIN(I64_ROTR, num_i64_rotr)

    UN(F32_ABS, num_f32_abs) UN(F32_NEG, num_f32_neg) UN(F32_CEIL, num_f32_ceil)
    UN(F32_FLOOR, num_f32_floor) UN(F32_TRUNC, num_f32_trunc) UN(F32_NEAREST, num_f32_nearest)
    UN(F32_SQRT, num_f32_sqrt) BIN(F32_ADD, num_f32_add) BIN(F32_SUB, num_f32_sub)
    BIN(F32_MUL, num_f32_mul) BIN(F32_DIV, num_f32_div) BIN(F32_MIN, num_f32_min)
    BIN(F32_MAX, num_f32_max) BIN(F32_COPYSIGN, num_f32_copysign)
    UN(F64_ABS, num_f64_abs) UN(F64_NEG, num_f64_neg) UN(F64_CEIL, num_f64_ceil)
    UN(F64_FLOOR, num_f64_floor) UN(F64_TRUNC, num_f64_trunc) UN(F64_NEAREST, num_f64_nearest)
    UN(F64_SQRT, num_f64_sqrt) BIN(F64_ADD, num_f64_add) BIN(F64_SUB, num_f64_sub)
    BIN(F64_MUL, num_f64_mul) BIN(F64_DIV, num_f64_div) BIN(F64_MIN, num_f64_min)
    BIN(F64_MAX, num_f64_max) BIN(F64_COPYSIGN, num_f64_copysign)

    UN(I32_WRAP_I64, num_i32_wrap_i64)
    TRUNC(I32_TRUNC_F32_S, num_i32_trunc_f32_s, uint32_t)
    TRUNC(I32_TRUNC_F32_U, num_i32_trunc_f32_u, uint32_t)
    TRUNC(I32_TRUNC_F64_S, num_i32_trunc_f64_s, uint32_t)
    TRUNC(I32_TRUNC_F64_U, num_i32_trunc_f64_u, uint32_t)
    UN(I64_EXTEND_I32_S, num_i64_extend_i32_s) UN(I64_EXTEND_I32_U, num_i64_extend_i32_u)
    TRUNC(I64_TRUNC_F32_S, num_i64_trunc_f32_s, uint64_t)
    TRUNC(I64_TRUNC_F32_U, num_i64_trunc_f32_u, uint64_t)
    TRUNC(I64_TRUNC_F64_S, num_i64_trunc_f64_s, uint64_t)
    TRUNC(I64_TRUNC_F64_U, num_i64_trunc_f64_u, uint64_t)
    UN(F32_CONVERT_I32_S, num_f32_convert_i32_s) UN(F32_CONVERT_I32_U, num_f32_convert_i32_u)
    UN(F32_CONVERT_I64_S, num_f32_convert_i64_s) UN(F32_CONVERT_I64_U, num_f32_convert_i64_u)
    UN(F32_DEMOTE_F64, num_f32_demote_f64)
    UN(F64_CONVERT_I32_S, num_f64_convert_i32_s) UN(F64_CONVERT_I32_U, num_f64_convert_i32_u)
    UN(F64_CONVERT_I64_S, num_f64_convert_i64_s) UN(F64_CONVERT_I64_U, num_f64_convert_i64_u)
    UN(F64_PROMOTE_F32, num_f64_promote_f32)
    UN(I32_EXTEND8_S, num_i32_extend8_s) UN(I32_EXTEND16_S, num_i32_extend16_s)
    UN(I64_EXTEND8_S, num_i64_extend8_s) UN(I64_EXTEND16_S, num_i64_extend16_s)
    UN(I64_EXTEND32_S, num_i64_extend32_s)
    UN(I32_TRUNC_SAT_F32_S, num_i32_trunc_sat_f32_s) UN(I32_TRUNC_SAT_F32_U, num_i32_trunc_sat_f32_u)
    UN(I32_TRUNC_SAT_F64_S, num_i32_trunc_sat_f64_s) UN(I32_TRUNC_SAT_F64_U, num_i32_trunc_sat_f64_u)
    UN(I64_TRUNC_SAT_F32_S, num_i64_trunc_sat_f32_s) UN(I64_TRUNC_SAT_F32_U, num_i64_trunc_sat_f32_u)
    UN(I64_TRUNC_SAT_F64_S, num_i64_trunc_sat_f64_s) UN(I64_TRUNC_SAT_F64_U, num_i64_trunc_sat_f64_u)

    BRCMP(BR_I32_EQ, num_i32_eq) BRCMP(BR_I32_NE, num_i32_ne)
    BRCMP(BR_I32_LT_S, num_i32_lt_s) BRCMP(BR_I32_LT_U, num_i32_lt_u)
    BRCMP(BR_I32_GT_S, num_i32_gt_s) BRCMP(BR_I32_GT_U, num_i32_gt_u)
    BRCMP(BR_I32_LE_S, num_i32_le_s) BRCMP(BR_I32_LE_U, num_i32_le_u)
    BRCMP(BR_I32_GE_S, num_i32_ge_s) BRCMP(BR_I32_GE_U, num_i32_ge_u)
    BRCMP(BR_I64_EQ, num_i64_eq) BRCMP(BR_I64_NE, num_i64_ne)
    BRCMP(BR_I64_LT_S, num_i64_lt_s) BRCMP(BR_I64_LT_U, num_i64_lt_u)
    BRCMP(BR_I64_GT_S, num_i64_gt_s) BRCMP(BR_I64_GT_U, num_i64_gt_u)
    BRCMP(BR_I64_LE_S, num_i64_le_s) BRCMP(BR_I64_LE_U, num_i64_le_u)
    BRCMP(BR_I64_GE_S, num_i64_ge_s) BRCMP(BR_I64_GE_U, num_i64_ge_u)
op_I32_SHR_U_AND_K: fp[ip[1]] = num_i32_and(num_i32_shr_u(fp[ip[2]], ip[3]), ip[4]); NEXT(5);
op_I32_WRAP_SHR_U64: fp[ip[1]] = num_i32_wrap_i64(num_i64_shr_u(fp[ip[2]], fp[ip[3]])); NEXT(4);
op_I32_ADD_LOAD8_U_IX: {
        uint64_t ea_ = (uint64_t)(uint32_t)(fp[ip[3]] + fp[ip[4]]) + ip[5];
        if (ea_ + 1 > mem_size) TRAP(AL_TRAP_MEMORY_OOB);
        fp[ip[1]] = num_i32_add(fp[ip[2]], mem[ea_]);
        NEXT(6);
    }
op_I64_ADD_LOAD8_U_IX: {
        uint64_t ea_ = (uint64_t)(uint32_t)(fp[ip[3]] + fp[ip[4]]) + ip[5];
        if (ea_ + 1 > mem_size) TRAP(AL_TRAP_MEMORY_OOB);
        fp[ip[1]] = num_i64_add(fp[ip[2]], mem[ea_]);
        NEXT(6);
    }
op_I32_WRAP_SHR_U64_AND_K:
    fp[ip[1]] = num_i32_and(num_i32_wrap_i64(num_i64_shr_u(fp[ip[2]], fp[ip[3]])), ip[4]);
    NEXT(5);
    BINK(I32_ADD_K, num_i32_add) BINK(I32_SUB_K, num_i32_sub) BINK(I32_AND_K, num_i32_and)
    BINK(I32_SHL_K, num_i32_shl) BINK(I32_SHR_U_K, num_i32_shr_u) BINK(I32_SHR_S_K, num_i32_shr_s)
    BINK(I64_ADD_K, num_i64_add)

trapped:
    SAVE_FUEL();
    set_trap(err, trap, st, inst, fn, ip);
    return false;
}

const void *const *exec_handler_table(void) {
    const void *const *table = NULL;
    interp(NULL, NULL, NULL, NULL, NULL, &table);
    return table;
}

bool exec_invoke(al_store *store, al_func *func, slot_t *slots, al_error *err) {
    al_error scratch;
    if (!err) err = &scratch;
    if (func->is_host) return call_host(store, func, slots, NULL, err);
    struct exec_stack *st = stack_for(store);
    if (!st) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory for the value stack");
        return false;
    }
    slot_t *base = st->top;
    uint32_t np = func->type.nparams, nr = func->type.nresults;
    uint32_t entry_frames = st->nframes;
    if ((size_t)(st->end - base) < (size_t)(np > nr ? np : nr)) {
        al_error_set(err, AL_ERR_TRAP, "%s", al_trap_message(AL_TRAP_STACK_EXHAUSTED));
        err->trap = AL_TRAP_STACK_EXHAUSTED;
        return false;
    }
    if (st->entries >= MAX_REENTRY) {
        al_error_set(err, AL_ERR_TRAP, "%s", al_trap_message(AL_TRAP_STACK_EXHAUSTED));
        err->trap = AL_TRAP_STACK_EXHAUSTED;
        return false;
    }
    memcpy(base, slots, (size_t)np * sizeof(slot_t));
    st->entries++;
    bool ok = interp(store, st, func, base, err, NULL);
    st->entries--;
    st->nframes = entry_frames;
    st->top = base;
    if (ok) memcpy(slots, base, (size_t)nr * sizeof(slot_t));
    return ok;
}
