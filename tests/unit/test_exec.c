/*
 * test_exec.c — the interpreter through the embedding API: host functions,
 * re-entry, traps as values with backtraces, bounded call depth, the
 * cross-thread interrupt flag, multi-value, memory limits.
 * The module is fixtures/exec.wat (bytes in fixtures/exec_wasm.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"
#include "fixtures/exec_wasm.h"

typedef struct fixture {
    al_store *store;
    al_module *module;
    al_imports *imports;
    al_instance *instance;
    int reentries;
} fixture;

static al_trap_kind host_add(void *env, al_caller *caller, const al_value *args, al_value *results) {
    results[0] = al_i32(args[0].of.i32 + args[1].of.i32);
    return AL_TRAP_NONE;
}

static al_trap_kind host_fail(void *env, al_caller *caller, const al_value *args, al_value *results) {
    return AL_TRAP_HOST;
}

/* Calls back into the guest's "double" export: re-entry from a host function. */
static al_trap_kind host_reenter(void *env, al_caller *caller, const al_value *args,
                                 al_value *results) {
    fixture *fx = env;
    al_extern ext;
    if (!al_instance_export(fx->instance, "double", &ext)) return AL_TRAP_HOST;
    al_error err;
    al_value res;
    if (!al_call(fx->store, ext.of.func, args, 1, &res, 1, &err)) return AL_TRAP_HOST;
    fx->reentries++;
    results[0] = res;
    return AL_TRAP_NONE;
}

/* Guest and host call each other n times: host stack use grows with n. */
static al_trap_kind host_bounce(void *env, al_caller *caller, const al_value *args,
                                al_value *results) {
    fixture *fx = env;
    al_extern ext;
    if (!al_instance_export(fx->instance, "bounce_guest", &ext)) return AL_TRAP_HOST;
    al_error err;
    if (!al_call(fx->store, ext.of.func, args, 1, results, 1, &err))
        return err.kind == AL_ERR_TRAP ? err.trap : AL_TRAP_HOST;
    return AL_TRAP_NONE;
}

static void define_host(fixture *fx, const char *name, al_host_fn fn, const uint8_t *params,
                        uint32_t np, const uint8_t *results, uint32_t nr) {
    al_functype type = {np, nr, params, results};
    al_func *f = al_func_new_host(fx->store, &type, fn, fx);
    assert_non_null(f);
    assert_true(al_imports_define(fx->imports, "env", name, (al_extern){.kind = AL_EXTERN_FUNC, .of.func = f}));
}

static int setup_with(void **state, const al_limits *limits) {
    fixture *fx = calloc(1, sizeof *fx);
    al_error err;
    fx->store = al_store_new(limits);
    fx->module = al_module_new(exec_wasm, sizeof exec_wasm, &err);
    assert_non_null(fx->module);
    fx->imports = al_imports_new();
    static const uint8_t i32x2[] = {AL_I32, AL_I32}, i32[] = {AL_I32};
    define_host(fx, "add", host_add, i32x2, 2, i32, 1);
    define_host(fx, "fail", host_fail, NULL, 0, NULL, 0);
    define_host(fx, "reenter", host_reenter, i32, 1, i32, 1);
    define_host(fx, "bounce", host_bounce, i32, 1, i32, 1);
    fx->instance = al_instantiate(fx->store, fx->module, fx->imports, &err);
    assert_non_null(fx->instance);
    *state = fx;
    return 0;
}

static int setup(void **state) { return setup_with(state, NULL); }

static int setup_small(void **state) {
    al_limits limits = al_limits_default();
    limits.max_call_depth = 100;
    limits.max_memory_bytes = 65536; /* one page: memory.grow must fail */
    return setup_with(state, &limits);
}

static int teardown(void **state) {
    fixture *fx = *state;
    al_imports_free(fx->imports);
    al_store_free(fx->store);
    al_module_free(fx->module);
    free(fx);
    return 0;
}

static al_func *export_func(fixture *fx, const char *name) {
    al_extern ext;
    assert_true(al_instance_export(fx->instance, name, &ext));
    assert_int_equal(ext.kind, AL_EXTERN_FUNC);
    return ext.of.func;
}

static bool call1(fixture *fx, const char *name, al_value arg, al_value *res, al_error *err) {
    return al_call(fx->store, export_func(fx, name), &arg, 1, res, 1, err);
}

static void test_host_function_called(void **state) {
    fixture *fx = *state;
    al_value args[2] = {al_i32(3), al_i32(4)}, res;
    al_error err;
    assert_true(al_call(fx->store, export_func(fx, "use_add"), args, 2, &res, 1, &err));
    assert_int_equal(res.of.i32, 70);
}

static void test_host_trap_propagates(void **state) {
    fixture *fx = *state;
    al_error err;
    assert_false(al_call(fx->store, export_func(fx, "use_fail"), NULL, 0, NULL, 0, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_HOST);
}

static void test_reentry(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_true(call1(fx, "use_reenter", al_i32(21), &res, &err));
    assert_int_equal(res.of.i32, 43);
    assert_int_equal(fx->reentries, 1);
}

static void test_deep_reentry_is_a_trap_not_a_crash(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_true(call1(fx, "bounce_guest", al_i32(50), &res, &err));
    assert_false(call1(fx, "bounce_guest", al_i32(1000000), &res, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_STACK_EXHAUSTED);
    assert_true(call1(fx, "bounce_guest", al_i32(50), &res, &err));
}

static void test_recursion_exhausts_stack_as_trap(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_false(call1(fx, "recurse", al_i32(0), &res, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_STACK_EXHAUSTED);
    assert_string_equal(al_trap_message(err.trap), "call stack exhausted");
    assert_true(err.backtrace_truncated);
    /* The store stays usable after the trap unwound every frame. */
    assert_true(call1(fx, "depth", al_i32(50), &res, &err));
    assert_int_equal(res.of.i32, 50);
}

static void test_deep_legal_recursion(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_true(call1(fx, "depth", al_i32(9000), &res, &err));
    assert_int_equal(res.of.i32, 9000);
}

static void test_call_depth_limit(void **state) {
    fixture *fx = *state; /* max_call_depth = 100 */
    al_value res;
    al_error err;
    assert_true(call1(fx, "depth", al_i32(90), &res, &err));
    assert_false(call1(fx, "depth", al_i32(200), &res, &err));
    assert_int_equal(err.trap, AL_TRAP_STACK_EXHAUSTED);
}

static void test_memory_limit(void **state) {
    fixture *fx = *state; /* max_memory_bytes = one page */
    al_value res;
    al_error err;
    assert_true(call1(fx, "grow", al_i32(1), &res, &err));
    assert_int_equal(res.of.i32, -1);
    assert_true(call1(fx, "grow", al_i32(0), &res, &err));
    assert_int_equal(res.of.i32, 1);
}

static void test_memory_bounds(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_true(call1(fx, "load", al_i32(65528), &res, &err));
    assert_false(call1(fx, "load", al_i32(65529), &res, &err));
    assert_int_equal(err.trap, AL_TRAP_MEMORY_OOB);
    assert_false(call1(fx, "load", al_i32(-1), &res, &err)); /* 0xffffffff + 4 must not wrap */
    assert_int_equal(err.trap, AL_TRAP_MEMORY_OOB);
    assert_true(call1(fx, "grow", al_i32(1), &res, &err));
    assert_true(call1(fx, "load", al_i32(65529), &res, &err));
}

static void test_backtrace_uses_names(void **state) {
    fixture *fx = *state;
    al_error err;
    assert_false(al_call(fx->store, export_func(fx, "outer"), NULL, 0, NULL, 0, &err));
    assert_int_equal(err.trap, AL_TRAP_UNREACHABLE);
    assert_string_equal(err.func_name, "inner");
    assert_int_equal(err.backtrace_len, 2);
    assert_string_equal(err.backtrace[0].func_name, "inner");
    assert_string_equal(err.backtrace[1].func_name, "outer");
    assert_true(err.backtrace[0].code_offset > 0);
    assert_true(err.backtrace[1].code_offset > err.backtrace[0].code_offset);
}

static void test_div_traps(void **state) {
    fixture *fx = *state;
    al_value args[2] = {al_i32(INT32_MIN), al_i32(-1)}, res;
    al_error err;
    assert_false(al_call(fx->store, export_func(fx, "div"), args, 2, &res, 1, &err));
    assert_int_equal(err.trap, AL_TRAP_INT_OVERFLOW);
    args[1] = al_i32(0);
    assert_false(al_call(fx->store, export_func(fx, "div"), args, 2, &res, 1, &err));
    assert_int_equal(err.trap, AL_TRAP_INT_DIV_ZERO);
    assert_string_equal(err.func_name, "");
}

static void test_multi_value(void **state) {
    fixture *fx = *state;
    al_value args[2] = {al_i32(1), al_i32(2)}, res[5];
    al_error err;
    assert_true(al_call(fx->store, export_func(fx, "swap"), args, 2, res, 2, &err));
    assert_int_equal(res[0].of.i32, 2);
    assert_int_equal(res[1].of.i32, 1);
    assert_true(al_call(fx->store, export_func(fx, "many"), NULL, 0, res, 5, &err));
    for (int i = 0; i < 5; i++) assert_int_equal(res[i].of.i32, i + 1);
}

static void test_loop_with_locals(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_true(call1(fx, "fac", al_i64(20), &res, &err));
    assert_int_equal(res.of.i64, 2432902008176640000LL);
}

static void test_bad_call_arguments(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_false(call1(fx, "double", al_i64(1), &res, &err)); /* wrong type */
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
    assert_false(al_call(fx->store, export_func(fx, "double"), NULL, 0, &res, 1, &err));
    assert_int_equal(err.kind, AL_ERR_ARGUMENT);
}

static void test_module_freed_while_instance_lives(void **state) {
    fixture *fx = *state;
    al_module_free(fx->module); /* the instance keeps the code alive */
    fx->module = NULL;
    al_value res;
    al_error err;
    assert_true(call1(fx, "double", al_i32(21), &res, &err));
    assert_int_equal(res.of.i32, 42);
}

static void test_fuel_counts_instructions(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    al_store_set_fuel(fx->store, 1000);
    /* double: local.get, i32.const, i32.mul, end */
    assert_true(call1(fx, "double", al_i32(4), &res, &err));
    assert_int_equal(al_store_fuel(fx->store), 996);
    /* fill: 4 instructions + end, plus one unit per byte */
    al_value n = al_i32(100);
    assert_true(al_call(fx->store, export_func(fx, "fill"), &n, 1, NULL, 0, &err));
    assert_int_equal(al_store_fuel(fx->store), 996 - 5 - 100);
    /* the same loop costs the same every time */
    al_store_set_fuel(fx->store, 1000000);
    assert_true(call1(fx, "fac", al_i64(20), &res, &err));
    uint64_t used = 1000000 - al_store_fuel(fx->store);
    assert_true(used > 20 * 10);
    al_store_set_fuel(fx->store, 1000000);
    assert_true(call1(fx, "fac", al_i64(20), &res, &err));
    assert_int_equal(1000000 - al_store_fuel(fx->store), used);
}

static void test_fuel_exhaustion_stops_a_loop(void **state) {
    fixture *fx = *state;
    al_error err;
    al_store_set_fuel(fx->store, 100000);
    assert_false(al_call(fx->store, export_func(fx, "spin"), NULL, 0, NULL, 0, &err));
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_FUEL_EXHAUSTED);
    assert_int_equal(al_store_fuel(fx->store), 0);
    /* recursion is stopped too: calls check the budget */
    al_store_set_fuel(fx->store, 500);
    al_value res;
    assert_false(call1(fx, "depth", al_i32(5000), &res, &err));
    assert_int_equal(err.trap, AL_TRAP_FUEL_EXHAUSTED);
}

static void test_fuel_bulk_refused_before_it_runs(void **state) {
    fixture *fx = *state;
    al_error err;
    al_store_set_fuel(fx->store, 1000);
    al_value n = al_i32(5000);
    assert_false(al_call(fx->store, export_func(fx, "fill"), &n, 1, NULL, 0, &err));
    assert_int_equal(err.trap, AL_TRAP_FUEL_EXHAUSTED);
    al_extern mem;
    assert_true(al_instance_export(fx->instance, "memory", &mem));
    assert_int_equal(al_memory_data(mem.of.memory)[0], 0); /* nothing was filled */
}

static void test_fuel_shared_across_reentry(void **state) {
    fixture *fx = *state;
    al_value res;
    al_error err;
    al_store_set_fuel(fx->store, 1000);
    /* use_reenter: local.get, call, i32.const, i32.add, end (5) + double (4) */
    assert_true(call1(fx, "use_reenter", al_i32(1), &res, &err));
    assert_int_equal(al_store_fuel(fx->store), 1000 - 5 - 4);
}

static void test_trap_on_memory_limit_mode(void **state) {
    al_limits limits = al_limits_default();
    limits.max_memory_bytes = 65536;
    limits.trap_on_memory_limit = true;
    setup_with(state, &limits);
    fixture *fx = *state;
    al_value res;
    al_error err;
    assert_false(call1(fx, "grow", al_i32(1), &res, &err));
    assert_int_equal(err.trap, AL_TRAP_MEMORY_LIMIT);
    assert_true(al_store_memory_limit_hit(fx->store));
    teardown(state);
}

static void test_declared_minimum_over_limit_is_refused(void **state) {
    al_limits limits = al_limits_default();
    limits.max_memory_bytes = 32768; /* the module declares one 64 KiB page */
    fixture fx = {0};
    al_error err;
    fx.store = al_store_new(&limits);
    fx.module = al_module_new(exec_wasm, sizeof exec_wasm, &err);
    fx.imports = al_imports_new();
    static const uint8_t i32x2[] = {AL_I32, AL_I32}, i32[] = {AL_I32};
    define_host(&fx, "add", host_add, i32x2, 2, i32, 1);
    define_host(&fx, "fail", host_fail, NULL, 0, NULL, 0);
    define_host(&fx, "reenter", host_reenter, i32, 1, i32, 1);
    define_host(&fx, "bounce", host_bounce, i32, 1, i32, 1);
    assert_null(al_instantiate(fx.store, fx.module, fx.imports, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    assert_non_null(strstr(err.message, "minimum"));
    al_imports_free(fx.imports);
    al_module_free(fx.module);
    al_store_free(fx.store);
}

static void test_instance_count_limit(void **state) {
    al_limits limits = al_limits_default();
    limits.max_instances = 1;
    setup_with(state, &limits);
    fixture *fx = *state;
    al_error err;
    assert_null(al_instantiate(fx->store, fx->module, fx->imports, &err));
    assert_int_equal(err.kind, AL_ERR_LIMIT);
    assert_non_null(strstr(err.message, "instances"));
    teardown(state);
}

static void *raise_interrupt(void *store) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    al_store_interrupt(store);
    return NULL;
}

static void test_interrupt_from_another_thread(void **state) {
    fixture *fx = *state;
    pthread_t t;
    al_error err;
    assert_int_equal(pthread_create(&t, NULL, raise_interrupt, fx->store), 0);
    assert_false(al_call(fx->store, export_func(fx, "spin"), NULL, 0, NULL, 0, &err));
    pthread_join(t, NULL);
    assert_int_equal(err.kind, AL_ERR_TRAP);
    assert_int_equal(err.trap, AL_TRAP_INTERRUPTED);
    al_store_clear_interrupt(fx->store);
    al_value res;
    assert_true(call1(fx, "double", al_i32(4), &res, &err));
    assert_int_equal(res.of.i32, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_function_called, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_trap_propagates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recursion_exhausts_stack_as_trap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_legal_recursion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_reentry_is_a_trap_not_a_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_depth_limit, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_memory_limit, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_memory_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backtrace_uses_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_div_traps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_with_locals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_call_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_from_another_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_module_freed_while_instance_lives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuel_counts_instructions, setup, teardown),
        cmocka_unit_test(test_trap_on_memory_limit_mode),
        cmocka_unit_test(test_declared_minimum_over_limit_is_refused),
        cmocka_unit_test(test_instance_count_limit),
        cmocka_unit_test_setup_teardown(test_fuel_exhaustion_stops_a_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuel_shared_across_reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuel_bulk_refused_before_it_runs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
