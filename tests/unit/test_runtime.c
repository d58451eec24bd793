/*
 * test_runtime.c — unit tests of the run-time side: store, memories, tables,
 * import sets, instantiation (spec §4.5.4) and al_call.
 *
 * The modules are tiny binaries assembled with wabt's wat2wasm; each array is
 * preceded by its text source. Every test frees its store, so LeakSanitizer
 * checks that failed instantiations leave nothing behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "airlock.h"
#include "runtime.h"

/* ---- modules (wat2wasm output) ------------------------------------------- */

/* (module
 *   (import "env" "add" (func $add (param i32 i32) (result i32)))
 *   (import "env" "mem" (memory 1 2))
 *   (import "env" "g" (global $g i32))
 *   (table $t 3 funcref)
 *   (global $counter (mut i32) (i32.const 7))
 *   (global $copy i32 (global.get $g))
 *   (global $fref funcref (ref.func $load))
 *   (func $call_add (export "call_add") (param i32 i32) (result i32)
 *     local.get 0 local.get 1 call $add)
 *   (func $load (export "load") (param i32) (result i32)
 *     local.get 0 i32.load8_u)
 *   (elem (i32.const 0) $call_add $load)
 *   (elem (i32.const 3))
 *   (data (i32.const 0) "hello")
 *   (export "memory" (memory 0))
 *   (export "table" (table $t))
 *   (export "copy" (global $copy))
 *   (export "counter" (global $counter))
 *   (export "fref" (global $fref))
 *   (export "a\00b" (func $load))) */
static const uint8_t m_main[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x02, 0x60,
    0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x02, 0x20,
    0x03, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00, 0x03,
    0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x01, 0x01, 0x02, 0x03,
    0x65, 0x6e, 0x76, 0x01, 0x67, 0x03, 0x7f, 0x00, 0x03, 0x03, 0x02, 0x00,
    0x01, 0x04, 0x04, 0x01, 0x70, 0x00, 0x03, 0x06, 0x10, 0x03, 0x7f, 0x01,
    0x41, 0x07, 0x0b, 0x7f, 0x00, 0x23, 0x00, 0x0b, 0x70, 0x00, 0xd2, 0x02,
    0x0b, 0x07, 0x42, 0x08, 0x08, 0x63, 0x61, 0x6c, 0x6c, 0x5f, 0x61, 0x64,
    0x64, 0x00, 0x01, 0x04, 0x6c, 0x6f, 0x61, 0x64, 0x00, 0x02, 0x06, 0x6d,
    0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x05, 0x74, 0x61, 0x62, 0x6c,
    0x65, 0x01, 0x00, 0x04, 0x63, 0x6f, 0x70, 0x79, 0x03, 0x02, 0x07, 0x63,
    0x6f, 0x75, 0x6e, 0x74, 0x65, 0x72, 0x03, 0x01, 0x04, 0x66, 0x72, 0x65,
    0x66, 0x03, 0x03, 0x03, 0x61, 0x00, 0x62, 0x00, 0x02, 0x09, 0x0d, 0x02,
    0x00, 0x41, 0x00, 0x0b, 0x02, 0x01, 0x02, 0x00, 0x41, 0x03, 0x0b, 0x00,
    0x0a, 0x12, 0x02, 0x08, 0x00, 0x20, 0x00, 0x20, 0x01, 0x10, 0x00, 0x0b,
    0x07, 0x00, 0x20, 0x00, 0x2d, 0x00, 0x00, 0x0b, 0x0b, 0x0b, 0x01, 0x00,
    0x41, 0x00, 0x0b, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
};

/* (module
 *   (import "m1" "load" (func $load (param i32) (result i32)))
 *   (import "m1" "memory" (memory 1))
 *   (func (export "second") (result i32) i32.const 1 call $load)
 *   (func (export "spin") (loop br 0))) */
static const uint8_t m_client[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0d, 0x03, 0x60,
    0x01, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x02,
    0x18, 0x02, 0x02, 0x6d, 0x31, 0x04, 0x6c, 0x6f, 0x61, 0x64, 0x00, 0x00,
    0x02, 0x6d, 0x31, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00,
    0x01, 0x03, 0x03, 0x02, 0x01, 0x02, 0x07, 0x11, 0x02, 0x06, 0x73, 0x65,
    0x63, 0x6f, 0x6e, 0x64, 0x00, 0x01, 0x04, 0x73, 0x70, 0x69, 0x6e, 0x00,
    0x02, 0x0a, 0x10, 0x02, 0x06, 0x00, 0x41, 0x01, 0x10, 0x00, 0x0b, 0x07,
    0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b,
};

/* (module
 *   (import "env" "mem" (memory 1))
 *   (data (i32.const 0) "xy")
 *   (data (i32.const 65535) "ab")) */
static const uint8_t m_data_oob[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x02, 0x0c, 0x01, 0x03,
    0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x01, 0x0b, 0x11,
    0x02, 0x00, 0x41, 0x00, 0x0b, 0x02, 0x78, 0x79, 0x00, 0x41, 0xff, 0xff,
    0x03, 0x0b, 0x02, 0x61, 0x62,
};

/* (module
 *   (import "env" "tab" (table 2 funcref))
 *   (import "env" "mem" (memory 1))
 *   (func $f (result i32) i32.const 99)
 *   (elem (i32.const 0) $f)
 *   (elem (i32.const 2) $f)
 *   (data (i32.const 0) "never")) */
static const uint8_t m_elem_oob[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60,
    0x00, 0x01, 0x7f, 0x02, 0x18, 0x02, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x74,
    0x61, 0x62, 0x01, 0x70, 0x00, 0x02, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x6d,
    0x65, 0x6d, 0x02, 0x00, 0x01, 0x03, 0x02, 0x01, 0x00, 0x09, 0x0d, 0x02,
    0x00, 0x41, 0x00, 0x0b, 0x01, 0x00, 0x00, 0x41, 0x02, 0x0b, 0x01, 0x00,
    0x0a, 0x07, 0x01, 0x05, 0x00, 0x41, 0xe3, 0x00, 0x0b, 0x0b, 0x0b, 0x01,
    0x00, 0x41, 0x00, 0x0b, 0x05, 0x6e, 0x65, 0x76, 0x65, 0x72,
};

/* (module
 *   (import "env" "mem" (memory 1))
 *   (func $start i32.const 0 i32.const 42 i32.store8 unreachable)
 *   (start $start)) */
static const uint8_t m_start_trap[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x02, 0x0c, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65,
    0x6d, 0x02, 0x00, 0x01, 0x03, 0x02, 0x01, 0x00, 0x08, 0x01, 0x00, 0x0a,
    0x0c, 0x01, 0x0a, 0x00, 0x41, 0x00, 0x41, 0x2a, 0x3a, 0x00, 0x00, 0x00,
    0x0b,
};

/* (module
 *   (import "env" "f" (func $f))
 *   (start $f)) */
static const uint8_t m_host_start[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x02, 0x09, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x01, 0x66, 0x00,
    0x00, 0x08, 0x01, 0x00,
};

/* (module (memory 2)) */
static const uint8_t m_big_memory[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x05, 0x03, 0x01, 0x00,
    0x02,
};

/* (module (table 100 funcref)) */
static const uint8_t m_big_table[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x04, 0x04, 0x01, 0x70,
    0x00, 0x64,
};

/* ---- helpers ------------------------------------------------------------- */

#define PAGE WASM_PAGE_SIZE

static al_module *load(const uint8_t *bytes, size_t len) {
    al_error err;
    al_module *m = al_module_new(bytes, len, &err);
    if (!m) fail_msg("module rejected: %s", err.message);
    return m;
}
#define LOAD(arr) load(arr, sizeof arr)

static const uint8_t I32_I32_TO_I32[] = {AL_I32, AL_I32, AL_I32};

typedef struct add_env {
    int calls;
    al_memory *seen_memory;
} add_env;

static al_trap_kind host_add(void *env, al_caller *caller, const al_value *args,
                             al_value *results) {
    add_env *e = env;
    e->calls++;
    e->seen_memory = al_caller_memory(caller);
    results[0] = al_i32(args[0].of.i32 + args[1].of.i32);
    return AL_TRAP_NONE;
}

static al_func *new_add(al_store *s, add_env *env) {
    al_functype t = {2, 1, I32_I32_TO_I32, I32_I32_TO_I32 + 2};
    al_func *f = al_func_new_host(s, &t, host_add, env);
    assert_non_null(f);
    return f;
}

static al_extern ext_func(al_func *f) {
    return (al_extern){.kind = AL_EXTERN_FUNC, .of.func = f};
}
static al_extern ext_memory(al_memory *m) {
    return (al_extern){.kind = AL_EXTERN_MEMORY, .of.memory = m};
}
static al_extern ext_table(al_table *t) {
    return (al_extern){.kind = AL_EXTERN_TABLE, .of.table = t};
}
static al_extern ext_global(al_global *g) {
    return (al_extern){.kind = AL_EXTERN_GLOBAL, .of.global = g};
}

/* Imports satisfying m_main: env.add, env.mem (1 page, max 2), env.g = 42. */
typedef struct main_env {
    al_imports *imports;
    al_memory *mem;
    add_env add;
} main_env;

static void main_env_init(main_env *me, al_store *s) {
    memset(me, 0, sizeof *me);
    me->imports = al_imports_new();
    assert_non_null(me->imports);
    me->mem = al_memory_new(s, 1, 2, true, NULL);
    assert_non_null(me->mem);
    al_global *g = al_global_new(s, al_i32(42), false, NULL);
    assert_non_null(g);
    assert_true(al_imports_define(me->imports, "env", "add", ext_func(new_add(s, &me->add))));
    assert_true(al_imports_define(me->imports, "env", "mem", ext_memory(me->mem)));
    assert_true(al_imports_define(me->imports, "env", "g", ext_global(g)));
}

static al_func *export_func(al_instance *inst, const char *name) {
    al_extern ext;
    assert_true(al_instance_export(inst, name, &ext));
    assert_int_equal(ext.kind, AL_EXTERN_FUNC);
    return ext.of.func;
}

/* ---- limits, values, traps ------------------------------------------------ */

static void test_limits_default(void **state) {
    al_limits l = al_limits_default();
    assert_int_equal(l.max_call_depth, 10000);
    assert_int_equal(l.max_value_stack, 1u << 20);
    assert_true(l.max_memory_bytes == 4ull << 30);
    assert_int_equal(l.max_table_elements, 10000000);
    al_store *s = al_store_new(NULL);
    assert_non_null(s);
    assert_true(s->limits.max_memory_bytes == l.max_memory_bytes);
    al_store_interrupt(s);
    assert_int_equal(atomic_load(&s->interrupt), 1);
    al_store_clear_interrupt(s);
    assert_int_equal(atomic_load(&s->interrupt), 0);
    al_store_free(s);
    al_store_free(NULL);
}

static void test_values(void **state) {
    /* A signalling NaN with a payload must come back bit for bit. */
    uint32_t snan = 0x7fa00001u;
    float f;
    memcpy(&f, &snan, sizeof f);
    al_value v = al_f32(f);
    assert_int_equal(v.type, AL_F32);
    assert_int_equal(v.of.f32_bits, snan);
    float back = al_value_f32(v);
    uint32_t back_bits;
    memcpy(&back_bits, &back, sizeof back_bits);
    assert_int_equal(back_bits, snan);

    al_value d = al_f64(-0.0);
    assert_true(d.of.f64_bits == 0x8000000000000000ull);
    assert_true(signbit(al_value_f64(d)));
    assert_int_equal(al_i32(-1).of.i32, -1);
    assert_true(al_i64(INT64_MIN).of.i64 == INT64_MIN);
}

static void test_trap_messages(void **state) {
    assert_string_equal(al_trap_message(AL_TRAP_UNREACHABLE), "unreachable");
    assert_string_equal(al_trap_message(AL_TRAP_INT_DIV_ZERO), "integer divide by zero");
    assert_string_equal(al_trap_message(AL_TRAP_INT_OVERFLOW), "integer overflow");
    assert_string_equal(al_trap_message(AL_TRAP_INVALID_CONVERSION),
                        "invalid conversion to integer");
    assert_string_equal(al_trap_message(AL_TRAP_MEMORY_OOB), "out of bounds memory access");
    assert_string_equal(al_trap_message(AL_TRAP_TABLE_OOB), "out of bounds table access");
    assert_string_equal(al_trap_message(AL_TRAP_INDIRECT_TYPE_MISMATCH),
                        "indirect call type mismatch");
    assert_string_equal(al_trap_message(AL_TRAP_UNINITIALIZED_ELEMENT), "uninitialized element");
    assert_string_equal(al_trap_message(AL_TRAP_NULL_REFERENCE), "null reference");
    assert_string_equal(al_trap_message(AL_TRAP_STACK_EXHAUSTED), "call stack exhausted");
    assert_string_equal(al_trap_message(AL_TRAP_INTERRUPTED), "interrupted");
    assert_string_equal(al_trap_message(AL_TRAP_FUEL_EXHAUSTED), "fuel exhausted");
    assert_string_equal(al_trap_message(AL_TRAP_HOST), "host function trapped");
}

/* ---- memories ------------------------------------------------------------- */

static void test_memory_zero_pages(void **state) {
    al_error err;
    al_memory *m = memory_create(0, 0, true, 4ull << 30, &err);
    assert_non_null(m);
    assert_non_null(m->data);
    assert_true(m->size == 0);
    assert_int_equal(memory_grow(m, 1, 4ull << 30), -1); /* declared max 0 */
    assert_int_equal(memory_grow(m, 0, 4ull << 30), 0);
    memory_destroy(m);
}

static void test_memory_grow_declared_max(void **state) {
    al_error err;
    al_memory *m = memory_create(1, 2, true, 4ull << 30, &err);
    assert_non_null(m);
    uint8_t *data = m->data;
    data[PAGE - 1] = 7;
    assert_int_equal(memory_grow(m, 1, 4ull << 30), 1);
    assert_ptr_equal(m->data, data); /* never moves */
    assert_true(m->size == 2 * PAGE);
    data[2 * PAGE - 1] = 9; /* the new page is writable */
    assert_int_equal(data[PAGE - 1], 7);
    assert_int_equal(memory_grow(m, 1, 4ull << 30), -1);
    assert_true(m->size == 2 * PAGE);
    assert_int_equal(memory_grow(m, 0, 4ull << 30), 2);
    memory_destroy(m);
}

static void test_memory_grow_limit_bytes(void **state) {
    al_error err;
    uint64_t limit = 3 * PAGE + 100; /* not a whole number of pages */
    al_memory *m = memory_create(0, 0, false, limit, &err);
    assert_non_null(m);
    assert_int_equal(memory_grow(m, 3, limit), 0);
    assert_int_equal(memory_grow(m, 1, limit), -1);
    assert_true(m->size == 3 * PAGE);
    m->data[3 * PAGE - 1] = 1;
    memory_destroy(m);

    /* A minimum above the limit is refused outright. */
    assert_null(memory_create(4, 0, false, limit, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
}

static void test_memory_grow_delta_overflow(void **state) {
    al_error err;
    al_memory *m = memory_create(1, 0, false, 4ull << 30, &err);
    assert_non_null(m);
    assert_int_equal(memory_grow(m, UINT32_MAX, 4ull << 30), -1);
    assert_int_equal(memory_grow(m, WASM_MAX_PAGES, 4ull << 30), -1); /* 65537 pages */
    assert_true(m->size == PAGE);
    assert_int_equal(memory_grow(m, 1, 4ull << 30), 1);
    memory_destroy(m);
}

static void test_memory_public(void **state) {
    al_store *s = al_store_new(NULL);
    al_error err;
    assert_null(al_memory_new(s, 2, 1, true, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_null(al_memory_new(s, 0, WASM_MAX_PAGES + 1, true, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_null(al_memory_new(s, WASM_MAX_PAGES + 1, 0, false, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    al_memory *m = al_memory_new(s, 1, 0, false, &err);
    assert_non_null(m);
    assert_true(al_memory_size(m) == PAGE);
    assert_non_null(al_memory_data(m));
    al_store_free(s); /* frees the memory */

    al_limits small = al_limits_default();
    small.max_memory_bytes = PAGE;
    s = al_store_new(&small);
    assert_null(al_memory_new(s, 2, 0, false, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    al_store_free(s);
}

/* ---- tables ---------------------------------------------------------------- */

static void test_table_grow(void **state) {
    al_error err;
    al_table *t = table_create(AL_FUNCREF, 1, 3, true, 10, &err);
    assert_non_null(t);
    assert_true(t->elems[0] == 0);
    assert_int_equal(table_grow(t, 2, 0x1234, 10), 1);
    assert_int_equal(t->size, 3);
    assert_true(t->elems[0] == 0);
    assert_true(t->elems[1] == 0x1234 && t->elems[2] == 0x1234);
    assert_int_equal(table_grow(t, 1, 0, 10), -1); /* declared max */
    assert_int_equal(table_grow(t, 0, 0, 10), 3);
    table_destroy(t);

    t = table_create(AL_EXTERNREF, 0, 0, false, 5, &err);
    assert_non_null(t);
    assert_non_null(t->elems);
    assert_int_equal(table_grow(t, UINT32_MAX, 0, 5), -1); /* size + delta overflow */
    assert_int_equal(table_grow(t, 5, 7, 5), 0);
    assert_int_equal(table_grow(t, 1, 7, 5), -1); /* embedder limit */
    assert_int_equal(t->size, 5);
    table_destroy(t);

    /* Many small grows keep every element. */
    t = table_create(AL_EXTERNREF, 0, 0, false, 1000, &err);
    for (uint32_t i = 0; i < 1000; i++) assert_int_equal(table_grow(t, 1, i + 1, 1000), i);
    for (uint32_t i = 0; i < 1000; i++) assert_true(t->elems[i] == i + 1);
    table_destroy(t);

    assert_null(table_create(AL_FUNCREF, 11, 0, false, 10, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
}

static void test_table_public(void **state) {
    al_store *s = al_store_new(NULL);
    al_error err;
    assert_null(al_table_new(s, AL_I32, 0, 0, false, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_null(al_table_new(s, AL_FUNCREF, 2, 1, true, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    al_table *t = al_table_new(s, AL_FUNCREF, 4, 0, false, &err);
    assert_non_null(t);
    assert_int_equal(al_table_size(t), 4);
    al_store_free(s);
}

/* ---- store internals ------------------------------------------------------- */

static void test_sig_interning(void **state) {
    al_store *s = al_store_new(NULL);
    uint8_t a[] = {AL_I32, AL_I64, AL_F32};
    uint8_t b[] = {AL_I32, AL_I64, AL_F32};
    al_functype ta = {2, 1, a, a + 2};
    al_functype tb = {2, 1, b, b + 2};
    al_functype tc = {1, 2, a, a + 1}; /* same bytes, split differently */
    al_functype empty = {0, 0, NULL, NULL};
    uint32_t ida = store_intern_sig(s, &ta);
    assert_int_equal(store_intern_sig(s, &tb), ida);
    assert_int_not_equal(store_intern_sig(s, &tc), ida);
    uint32_t ide = store_intern_sig(s, &empty);
    assert_int_not_equal(ide, ida);
    assert_int_equal(store_intern_sig(s, &empty), ide);
    b[0] = AL_F64; /* the store keeps its own copy */
    assert_int_equal(store_intern_sig(s, &ta), ida);

    /* Many distinct signatures (exercises the index growing). */
    uint8_t params[4];
    uint32_t ids[256];
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 0; k < 4; k++) params[k] = (uint8_t)(0x7C + ((i >> (2 * k)) & 3));
        al_functype t = {4, 0, params, params + 4};
        ids[i] = store_intern_sig(s, &t);
        for (uint32_t j = 0; j < i; j++) assert_int_not_equal(ids[j], ids[i]);
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 0; k < 4; k++) params[k] = (uint8_t)(0x7C + ((i >> (2 * k)) & 3));
        al_functype t = {4, 0, params, params + 4};
        assert_int_equal(store_intern_sig(s, &t), ids[i]);
    }
    al_store_free(s);
}

/* ---- host objects and al_call ---------------------------------------------- */

static al_trap_kind host_trap(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    assert_null(caller->instance); /* called from the embedder */
    return AL_TRAP_HOST;
}

static void test_host_func(void **state) {
    al_store *s = al_store_new(NULL);
    add_env env = {0};
    uint8_t types[] = {AL_I32, AL_I32, AL_I32};
    al_functype t = {2, 1, types, types + 2};
    al_func *f = al_func_new_host(s, &t, host_add, &env);
    assert_non_null(f);
    types[0] = AL_F64; /* the signature was copied */
    const al_functype *ft = al_func_type(f);
    assert_int_equal(ft->nparams, 2);
    assert_int_equal(ft->nresults, 1);
    assert_int_equal(ft->params[0], AL_I32);

    al_value args[2] = {al_i32(40), al_i32(2)}, res[1];
    al_error err;
    assert_true(al_call(s, f, args, 2, res, 1, &err));
    assert_int_equal(err.kind, AL_OK);
    assert_int_equal(res[0].type, AL_I32);
    assert_int_equal(res[0].of.i32, 42);
    assert_null(env.seen_memory);

    /* Embedder errors are checked before the call. */
    assert_false(al_call(s, f, args, 1, res, 1, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_false(al_call(s, f, args, 2, res, 0, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    al_value bad[2] = {al_i32(1), al_i64(2)};
    assert_false(al_call(s, f, bad, 2, res, 1, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_false(al_call(s, NULL, args, 2, res, 1, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_int_equal(env.calls, 1);

    al_functype none = {0, 0, NULL, NULL};
    al_func *trapper = al_func_new_host(s, &none, host_trap, NULL);
    assert_false(al_call(s, trapper, NULL, 0, NULL, 0, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_HOST);

    uint8_t bogus = 0x42;
    al_functype bad_type = {1, 0, &bogus, NULL};
    assert_null(al_func_new_host(s, &bad_type, host_add, NULL));
    assert_null(al_func_new_host(s, &t, NULL, NULL));
    al_store_free(s);
}

static void test_globals(void **state) {
    al_store *s = al_store_new(NULL);
    al_global *g = al_global_new(s, al_i64(-5), true, NULL);
    assert_non_null(g);
    al_value v = al_global_get(g);
    assert_int_equal(v.type, AL_I64);
    assert_true(v.of.i64 == -5);
    g = al_global_new(s, al_i32(-1), false, NULL);
    assert_true(g->value == 0xFFFFFFFFu); /* i32 slots are zero-extended */
    assert_int_equal(al_global_get(g).of.i32, -1);
    al_value bad = {.type = (al_valtype)0x40};
    al_error err;
    assert_null(al_global_new(s, bad, false, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    al_store_free(s);
}

/* ---- instantiation ---------------------------------------------------------- */

static void test_instantiate_main(void **state) {
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    al_module *m = LOAD(m_main);
    al_error err;
    al_instance *inst = al_instantiate(s, m, me.imports, &err);
    if (!inst) fail_msg("instantiate: %s", err.message);

    /* The data segment landed in the imported memory. */
    assert_memory_equal(al_memory_data(me.mem), "hello", 5);

    /* call_add calls the host, which sees the instance's "memory" export. */
    al_value args[2] = {al_i32(2), al_i32(3)}, res[1];
    assert_true(al_call(s, export_func(inst, "call_add"), args, 2, res, 1, &err));
    assert_int_equal(res[0].of.i32, 5);
    assert_int_equal(me.add.calls, 1);
    assert_ptr_equal(me.add.seen_memory, me.mem);

    al_value at1 = al_i32(1);
    assert_true(al_call(s, export_func(inst, "load"), &at1, 1, res, 1, &err));
    assert_int_equal(res[0].of.i32, 'e');

    /* Exports of every kind. */
    al_extern ext;
    assert_true(al_instance_export(inst, "memory", &ext));
    assert_int_equal(ext.kind, AL_EXTERN_MEMORY);
    assert_ptr_equal(ext.of.memory, me.mem);
    assert_true(al_instance_export(inst, "table", &ext));
    assert_int_equal(ext.kind, AL_EXTERN_TABLE);
    assert_int_equal(al_table_size(ext.of.table), 3);
    assert_true(ext.of.table->elems[0] == (uintptr_t)export_func(inst, "call_add"));
    assert_true(ext.of.table->elems[1] == (uintptr_t)export_func(inst, "load"));
    assert_true(ext.of.table->elems[2] == 0);
    assert_true(al_instance_export(inst, "copy", &ext));
    assert_int_equal(al_global_get(ext.of.global).of.i32, 42);
    assert_true(al_instance_export(inst, "counter", &ext));
    assert_int_equal(al_global_get(ext.of.global).of.i32, 7);
    assert_true(ext.of.global->type.is_mutable);
    assert_true(al_instance_export(inst, "fref", &ext));
    assert_ptr_equal(al_global_get(ext.of.global).of.funcref, export_func(inst, "load"));
    assert_false(al_instance_export(inst, "missing", &ext));

    /* Names may contain NUL: only the explicit-length look-up finds "a\0b". */
    assert_true(al_instance_export_n(inst, "a\0b", 3, &ext));
    assert_ptr_equal(ext.of.func, export_func(inst, "load"));
    assert_false(al_instance_export(inst, "a", &ext));

    /* Defined functions carry the module's type and an interned sig id. */
    const al_functype *ft = al_func_type(export_func(inst, "load"));
    assert_int_equal(ft->nparams, 1);
    assert_int_equal(ft->nresults, 1);
    assert_int_equal(export_func(inst, "call_add")->sig_id, inst->funcs[0]->sig_id);
    assert_true(inst->elem_dropped[0] && inst->elem_dropped[1] && inst->data_dropped[0]);

    al_module_free(m);
    al_imports_free(me.imports);
    al_store_free(s);
}

/* A later definition replaces an earlier one. */
static void test_imports_replace(void **state) {
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    al_functype wrong = {1, 1, I32_I32_TO_I32, I32_I32_TO_I32};
    al_func *bad = al_func_new_host(s, &wrong, host_add, NULL);
    assert_true(al_imports_define(me.imports, "env", "add", ext_func(bad)));
    al_module *m = LOAD(m_main);
    al_error err;
    assert_null(al_instantiate(s, m, me.imports, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);

    assert_true(al_imports_define(me.imports, "env", "add", ext_func(new_add(s, &me.add))));
    assert_non_null(al_instantiate(s, m, me.imports, &err));

    /* Invalid definitions are refused. */
    assert_false(al_imports_define(me.imports, "env", "x", ext_func(NULL)));
    assert_false(al_imports_define(me.imports, NULL, "x", ext_func(bad)));
    assert_false(al_imports_define(NULL, "env", "x", ext_func(bad)));

    /* Many definitions (the index grows); all stay reachable. */
    char name[32];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "f%d", i);
        assert_true(al_imports_define(me.imports, "many", name, ext_func(bad)));
    }
    assert_non_null(al_instantiate(s, m, me.imports, &err));

    al_module_free(m);
    al_imports_free(me.imports);
    al_store_free(s);
}

/* The spec's "register": one instance's exports become another's imports. */
static void test_define_instance(void **state) {
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    al_module *m1 = LOAD(m_main), *m2 = LOAD(m_client);
    al_error err;
    al_instance *i1 = al_instantiate(s, m1, me.imports, &err);
    assert_non_null(i1);
    al_imports *reg = al_imports_new();
    assert_true(al_imports_define_instance(reg, "m1", i1));
    al_instance *i2 = al_instantiate(s, m2, reg, &err);
    if (!i2) fail_msg("instantiate: %s", err.message);
    al_value res[1];
    assert_true(al_call(s, export_func(i2, "second"), NULL, 0, res, 1, &err));
    assert_int_equal(res[0].of.i32, 'e');
    assert_ptr_equal(i2->funcs[0], export_func(i1, "load"));

    al_imports_free(reg);
    al_module_free(m1);
    al_module_free(m2);
    al_imports_free(me.imports);
    al_store_free(s);
}

/* Instantiate m_main with env.<name> replaced by `ext`; expect a link error. */
static void expect_link_error(const char *name, al_extern ext, const char *message) {
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    if (name) assert_true(al_imports_define(me.imports, "env", name, ext));
    al_module *m = LOAD(m_main);
    al_error err;
    assert_null(al_instantiate(s, m, me.imports, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_true(strncmp(err.message, message, strlen(message)) == 0);
    /* Nothing ran: the data segment was not written. */
    assert_int_equal(al_memory_data(me.mem)[0], 0);
    al_module_free(m);
    al_imports_free(me.imports);
    al_store_free(s);
}

static void test_link_errors(void **state) {
    /* Missing import. */
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_main);
    al_error err;
    assert_null(al_instantiate(s, m, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_true(strncmp(err.message, "unknown import", 14) == 0);
    al_imports *empty = al_imports_new();
    assert_null(al_instantiate(s, m, empty, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    al_imports_free(empty);
    al_module_free(m);

    /* Objects for the wrong definitions live in their own store. */
    al_store *o = al_store_new(NULL);
    const char *incompatible = "incompatible import type";
    /* wrong kind */
    expect_link_error("add", ext_global(al_global_new(o, al_i32(0), false, NULL)), incompatible);
    expect_link_error("mem", ext_func(new_add(o, NULL)), incompatible);
    /* wrong signature */
    al_functype one = {1, 1, I32_I32_TO_I32, I32_I32_TO_I32};
    expect_link_error("add", ext_func(al_func_new_host(o, &one, host_add, NULL)), incompatible);
    al_functype no_result = {2, 0, I32_I32_TO_I32, NULL};
    expect_link_error("add", ext_func(al_func_new_host(o, &no_result, host_add, NULL)),
                      incompatible);
    /* memory limits: declared (memory 1 2) */
    expect_link_error("mem", ext_memory(al_memory_new(o, 0, 2, true, NULL)), incompatible);
    expect_link_error("mem", ext_memory(al_memory_new(o, 1, 0, false, NULL)), incompatible);
    expect_link_error("mem", ext_memory(al_memory_new(o, 1, 3, true, NULL)), incompatible);
    /* global type and mutability: declared (global i32) */
    expect_link_error("g", ext_global(al_global_new(o, al_i64(42), false, NULL)), incompatible);
    expect_link_error("g", ext_global(al_global_new(o, al_i32(42), true, NULL)), incompatible);
    al_store_free(o);
    al_store_free(s);
}

static void test_memory_import_matching(void **state) {
    /* A memory grown past the declared minimum, with a smaller max, matches:
     * matching uses the current size (spec §4.5.2). */
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    al_memory *mem = al_memory_new(s, 0, 1, true, NULL);
    assert_int_equal(memory_grow(mem, 1, s->limits.max_memory_bytes), 0);
    assert_true(al_imports_define(me.imports, "env", "mem", ext_memory(mem)));
    al_module *m = LOAD(m_main);
    al_error err;
    assert_non_null(al_instantiate(s, m, me.imports, &err));
    al_module_free(m);
    al_imports_free(me.imports);
    al_store_free(s);
}

static void test_table_import_matching(void **state) {
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_elem_oob); /* imports (table 2 funcref) */
    al_imports *im = al_imports_new();
    al_memory *mem = al_memory_new(s, 1, 0, false, NULL);
    assert_true(al_imports_define(im, "env", "mem", ext_memory(mem)));
    al_error err;
    assert_true(al_imports_define(im, "env", "tab",
                                  ext_table(al_table_new(s, AL_FUNCREF, 1, 0, false, NULL))));
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    assert_true(al_imports_define(im, "env", "tab",
                                  ext_table(al_table_new(s, AL_EXTERNREF, 2, 0, false, NULL))));
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_LINK);
    al_module_free(m);
    al_imports_free(im);
    al_store_free(s);
}

/* ---- failures during initialisation ------------------------------------------ */

static void test_data_segment_oob(void **state) {
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_data_oob);
    al_imports *im = al_imports_new();
    al_memory *mem = al_memory_new(s, 1, 0, false, NULL);
    assert_true(al_imports_define(im, "env", "mem", ext_memory(mem)));
    al_error err;
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_MEMORY_OOB);
    assert_true(strstr(err.message, "out of bounds memory access: data segment 1") == err.message);
    assert_int_equal(err.backtrace_len, 0);
    /* The first segment's write stays visible (spec 2.0) and nothing was
     * written past the failing segment's bounds check. */
    assert_memory_equal(al_memory_data(mem), "xy", 2);
    assert_int_equal(al_memory_data(mem)[PAGE - 1], 0);
    al_module_free(m);
    al_imports_free(im);
    al_store_free(s);
}

static void test_elem_segment_oob(void **state) {
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_elem_oob);
    al_imports *im = al_imports_new();
    al_table *tab = al_table_new(s, AL_FUNCREF, 2, 0, false, NULL);
    al_memory *mem = al_memory_new(s, 1, 0, false, NULL);
    assert_true(al_imports_define(im, "env", "tab", ext_table(tab)));
    assert_true(al_imports_define(im, "env", "mem", ext_memory(mem)));
    al_error err;
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_TABLE_OOB);
    assert_true(strstr(err.message, "out of bounds table access: element segment") == err.message);
    /* Data segments come after element segments: none ran. */
    assert_int_equal(al_memory_data(mem)[0], 0);
    /* The first segment's function is in the imported table and still
     * callable: its instance was fully allocated. */
    al_func *f = (al_func *)(uintptr_t)tab->elems[0];
    assert_non_null(f);
    assert_true(tab->elems[1] == 0);
    al_value res[1];
    assert_true(al_call(s, f, NULL, 0, res, 1, &err));
    assert_int_equal(res[0].of.i32, 99);
    al_module_free(m);
    al_imports_free(im);
    al_store_free(s);
}

static void test_start_trap(void **state) {
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_start_trap);
    al_imports *im = al_imports_new();
    al_memory *mem = al_memory_new(s, 1, 0, false, NULL);
    assert_true(al_imports_define(im, "env", "mem", ext_memory(mem)));
    al_error err;
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_UNREACHABLE);
    assert_int_equal(al_memory_data(mem)[0], 42); /* the store before the trap stays */
    al_module_free(m);
    al_imports_free(im);
    al_store_free(s);
}

static al_trap_kind host_count(void *env, al_caller *caller, const al_value *args,
                               al_value *results) {
    ++*(int *)env;
    return AL_TRAP_NONE;
}

static void test_host_start(void **state) {
    al_store *s = al_store_new(NULL);
    al_module *m = LOAD(m_host_start);
    al_imports *im = al_imports_new();
    int calls = 0;
    al_functype none = {0, 0, NULL, NULL};
    assert_true(al_imports_define(im, "env", "f",
                                  ext_func(al_func_new_host(s, &none, host_count, &calls))));
    al_error err;
    assert_non_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_OK);
    assert_int_equal(calls, 1);

    /* A trapping host start function fails instantiation. */
    assert_true(al_imports_define(im, "env", "f",
                                  ext_func(al_func_new_host(s, &none, host_trap, NULL))));
    assert_null(al_instantiate(s, m, im, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_HOST);
    al_module_free(m);
    al_imports_free(im);
    al_store_free(s);
}

static void test_embedder_limits(void **state) {
    al_limits l = al_limits_default();
    l.max_memory_bytes = PAGE;
    l.max_table_elements = 10;
    al_store *s = al_store_new(&l);
    al_module *mm = LOAD(m_big_memory), *mt = LOAD(m_big_table);
    al_error err;
    assert_null(al_instantiate(s, mm, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    assert_null(al_instantiate(s, mt, NULL, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    al_store_free(s);

    s = al_store_new(NULL); /* the defaults allow both */
    assert_non_null(al_instantiate(s, mm, NULL, &err));
    assert_non_null(al_instantiate(s, mt, NULL, &err));
    al_module_free(mm);
    al_module_free(mt);
    al_store_free(s);
}

static void test_interrupt(void **state) {
    al_store *s = al_store_new(NULL);
    main_env me;
    main_env_init(&me, s);
    al_module *m1 = LOAD(m_main), *m2 = LOAD(m_client);
    al_error err;
    al_instance *i1 = al_instantiate(s, m1, me.imports, &err);
    al_imports *reg = al_imports_new();
    assert_true(al_imports_define_instance(reg, "m1", i1));
    al_instance *i2 = al_instantiate(s, m2, reg, &err);
    assert_non_null(i2);
    al_store_interrupt(s);
    assert_false(al_call(s, export_func(i2, "spin"), NULL, 0, NULL, 0, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_INTERRUPTED);
    al_store_clear_interrupt(s);
    al_value res[1];
    assert_true(al_call(s, export_func(i2, "second"), NULL, 0, res, 1, &err));
    al_imports_free(reg);
    al_module_free(m1);
    al_module_free(m2);
    al_imports_free(me.imports);
    al_store_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_default),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_trap_messages),
        cmocka_unit_test(test_memory_zero_pages),
        cmocka_unit_test(test_memory_grow_declared_max),
        cmocka_unit_test(test_memory_grow_limit_bytes),
        cmocka_unit_test(test_memory_grow_delta_overflow),
        cmocka_unit_test(test_memory_public),
        cmocka_unit_test(test_table_grow),
        cmocka_unit_test(test_table_public),
        cmocka_unit_test(test_sig_interning),
        cmocka_unit_test(test_host_func),
        cmocka_unit_test(test_globals),
        cmocka_unit_test(test_instantiate_main),
        cmocka_unit_test(test_imports_replace),
        cmocka_unit_test(test_define_instance),
        cmocka_unit_test(test_link_errors),
        cmocka_unit_test(test_memory_import_matching),
        cmocka_unit_test(test_table_import_matching),
        cmocka_unit_test(test_data_segment_oob),
        cmocka_unit_test(test_elem_segment_oob),
        cmocka_unit_test(test_start_trap),
        cmocka_unit_test(test_host_start),
        cmocka_unit_test(test_embedder_limits),
        cmocka_unit_test(test_interrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
