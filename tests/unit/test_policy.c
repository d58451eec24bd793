/*
 * test_policy.c — unit tests of "running code under a policy" (airlock.h):
 * al_policy_init, policy validation, al_status_name, al_result_free and
 * al_run_wasm's mapping of every outcome to a status (src/sandbox/).
 *
 * The modules are tiny binaries assembled with wabt's wat2wasm (--debug-names);
 * each array is preceded by its text source. The WASI calls they make go to
 * the real WASI host. Every test frees its result, so LeakSanitizer checks
 * that no path of al_run_wasm leaks, and the timeout tests run many short
 * timers so ASan would catch a timer that outlives its run. al_policy.cancel
 * is raised from another thread while a guest spins: the run ends within
 * ~100 ms as CANCELLED with the reason (or "cancelled"), not TIMEOUT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "airlock.h"
#include "unit_helpers.h"

/* ---- modules (wat2wasm output) ------------------------------------------- */

/* (module (func (export "_start") (result i32) (i32.const 1))) */
static const uint8_t m_badstart[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60,
    0x00, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x0a, 0x01, 0x06, 0x5f,
    0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00, 0x0a, 0x06, 0x01, 0x04, 0x00,
    0x41, 0x01, 0x0b, 0x00, 0x0a, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x02, 0x03,
    0x01, 0x00, 0x00,
};

/* (module (memory 300) (func (export "_start"))) */
static const uint8_t m_bigmem[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x04, 0x01, 0x00, 0xac, 0x02,
    0x07, 0x0a, 0x01, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00,
    0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, 0x00, 0x0a, 0x04, 0x6e, 0x61, 0x6d,
    0x65, 0x02, 0x03, 0x01, 0x00, 0x00,
};

/* (module
 *   (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
 *   (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
 *   (memory (export "memory") 1)
 *   ;; exit code = argc - 1 (so the policy's argv picks it)
 *   (func (export "_start")
 *     (drop (call $sizes (i32.const 0) (i32.const 4)))
 *     (call $exit (i32.sub (i32.load (i32.const 0)) (i32.const 1))))) */
static const uint8_t m_exit[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0e, 0x03, 0x60,
    0x01, 0x7f, 0x00, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00,
    0x02, 0x4c, 0x02, 0x16, 0x77, 0x61, 0x73, 0x69, 0x5f, 0x73, 0x6e, 0x61,
    0x70, 0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69, 0x65,
    0x77, 0x31, 0x09, 0x70, 0x72, 0x6f, 0x63, 0x5f, 0x65, 0x78, 0x69, 0x74,
    0x00, 0x00, 0x16, 0x77, 0x61, 0x73, 0x69, 0x5f, 0x73, 0x6e, 0x61, 0x70,
    0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69, 0x65, 0x77,
    0x31, 0x0e, 0x61, 0x72, 0x67, 0x73, 0x5f, 0x73, 0x69, 0x7a, 0x65, 0x73,
    0x5f, 0x67, 0x65, 0x74, 0x00, 0x01, 0x03, 0x02, 0x01, 0x02, 0x05, 0x03,
    0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72,
    0x79, 0x02, 0x00, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x02,
    0x0a, 0x15, 0x01, 0x13, 0x00, 0x41, 0x00, 0x41, 0x04, 0x10, 0x01, 0x1a,
    0x41, 0x00, 0x28, 0x02, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00, 0x0b, 0x00,
    0x1e, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x01, 0x0e, 0x02, 0x00, 0x04, 0x65,
    0x78, 0x69, 0x74, 0x01, 0x05, 0x73, 0x69, 0x7a, 0x65, 0x73, 0x02, 0x07,
    0x03, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00,
};

/* (module (memory (export "memory") 1)
 *   (func (export "_start")
 *     (if (i32.eq (memory.grow (i32.const 1000)) (i32.const -1)) (then unreachable)))) */
static const uint8_t m_grow[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07,
    0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x06,
    0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00, 0x0a, 0x10, 0x01, 0x0e,
    0x00, 0x41, 0xe8, 0x07, 0x40, 0x00, 0x41, 0x7f, 0x46, 0x04, 0x40, 0x00,
    0x0b, 0x0b, 0x00, 0x0a, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x02, 0x03, 0x01,
    0x00, 0x00,
};

/* (module (import "env" "log" (func (param i32))) (func (export "_start"))) */
static const uint8_t m_import[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x60,
    0x01, 0x7f, 0x00, 0x60, 0x00, 0x00, 0x02, 0x0b, 0x01, 0x03, 0x65, 0x6e,
    0x76, 0x03, 0x6c, 0x6f, 0x67, 0x00, 0x00, 0x03, 0x02, 0x01, 0x01, 0x07,
    0x0a, 0x01, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x01, 0x0a,
    0x04, 0x01, 0x02, 0x00, 0x0b, 0x00, 0x0c, 0x04, 0x6e, 0x61, 0x6d, 0x65,
    0x02, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00,
};

/* (module (func (export "main"))) */
static const uint8_t m_nostart[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07, 0x08, 0x01, 0x04, 0x6d, 0x61,
    0x69, 0x6e, 0x00, 0x00, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, 0x00, 0x0a,
    0x04, 0x6e, 0x61, 0x6d, 0x65, 0x02, 0x03, 0x01, 0x00, 0x00,
};

/* (module (memory (export "memory") 2) (func (export "_start"))) */
static const uint8_t m_ok[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x02, 0x07,
    0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x06,
    0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00, 0x0a, 0x04, 0x01, 0x02,
    0x00, 0x0b, 0x00, 0x0a, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x02, 0x03, 0x01,
    0x00, 0x00,
};

/* (module (func (export "_start") (loop $l (br $l)))) */
static const uint8_t m_spin[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07, 0x0a, 0x01, 0x06, 0x5f, 0x73,
    0x74, 0x61, 0x72, 0x74, 0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x03,
    0x40, 0x0c, 0x00, 0x0b, 0x0b, 0x00, 0x0a, 0x04, 0x6e, 0x61, 0x6d, 0x65,
    0x02, 0x03, 0x01, 0x00, 0x00,
};

/* (module (func $inner unreachable) (func (export "_start") (call $inner))) */
static const uint8_t m_trap[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
    0x00, 0x00, 0x03, 0x03, 0x02, 0x00, 0x00, 0x07, 0x0a, 0x01, 0x06, 0x5f,
    0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x01, 0x0a, 0x0a, 0x02, 0x03, 0x00,
    0x00, 0x0b, 0x04, 0x00, 0x10, 0x00, 0x0b, 0x00, 0x16, 0x04, 0x6e, 0x61,
    0x6d, 0x65, 0x01, 0x08, 0x01, 0x00, 0x05, 0x69, 0x6e, 0x6e, 0x65, 0x72,
    0x02, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00,
};

/* (module
 *   (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
 *   (memory (export "memory") 1)
 *   (data (i32.const 16) "hello\n")
 *   (func (export "_start")
 *     (i32.store (i32.const 0) (i32.const 16))
 *     (i32.store (i32.const 4) (i32.const 6))
 *     (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
 *     (drop (call $write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))) */
static const uint8_t m_write[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x02, 0x60,
    0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x02, 0x23,
    0x01, 0x16, 0x77, 0x61, 0x73, 0x69, 0x5f, 0x73, 0x6e, 0x61, 0x70, 0x73,
    0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69, 0x65, 0x77, 0x31,
    0x08, 0x66, 0x64, 0x5f, 0x77, 0x72, 0x69, 0x74, 0x65, 0x00, 0x00, 0x03,
    0x02, 0x01, 0x01, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06,
    0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x06, 0x5f, 0x73, 0x74,
    0x61, 0x72, 0x74, 0x00, 0x01, 0x0a, 0x28, 0x01, 0x26, 0x00, 0x41, 0x00,
    0x41, 0x10, 0x36, 0x02, 0x00, 0x41, 0x04, 0x41, 0x06, 0x36, 0x02, 0x00,
    0x41, 0x01, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, 0x41,
    0x02, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, 0x0b, 0x0b,
    0x0c, 0x01, 0x00, 0x41, 0x10, 0x0b, 0x06, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
    0x0a, 0x00, 0x16, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x01, 0x08, 0x01, 0x00,
    0x05, 0x77, 0x72, 0x69, 0x74, 0x65, 0x02, 0x05, 0x02, 0x00, 0x00, 0x01,
    0x00,
};

/* ---- helpers ----------------------------------------------------------------- */

#define RUN(policy, m, result) assert_true(al_run_wasm((policy), (m), sizeof(m), (result)))

static void assert_message(const al_result *r, const char *needle) {
    if (!strstr(r->error.message, needle))
        fail_msg("message '%s' does not contain '%s'", r->error.message, needle);
}

/* ---- policy ---------------------------------------------------------------------- */

static void test_defaults(void **state) {
    (void)state;
    al_policy p;
    memset(&p, 0xAB, sizeof p);
    al_policy_init(&p);
    assert_int_equal(p.isolation, AL_ISOLATION_WASM);
    assert_int_equal(p.argc, 0);
    assert_int_equal(p.nenv, 0);
    assert_int_equal(p.ndirs, 0);
    assert_null(p.stdin_data);
    assert_int_equal(p.stdin_len, 0);
    assert_int_equal(p.fuel, 0);
    assert_int_equal(p.timeout_ms, 0);
    assert_int_equal(p.max_memory_bytes, 256u << 20);
    assert_false(p.trap_on_memory_limit);
    assert_int_equal(p.max_table_elements, 10000);
    assert_int_equal(p.max_tables, 16);
    assert_int_equal(p.max_memories, 4);
    assert_int_equal(p.max_instances, 16);
    assert_int_equal(p.max_module_bytes, 50u << 20);
    assert_int_equal(p.stdout_cap, 1u << 20);
    assert_int_equal(p.stderr_cap, 1u << 20);
}

static void test_status_names(void **state) {
    (void)state;
    static const char *const names[] = {"ok", "exit", "trap", "fuel_exhausted", "timeout",
                                        "memory_limit", "output_truncated", "invalid_module",
                                        "error"};
    for (int s = AL_STATUS_OK; s <= AL_STATUS_ERROR; s++)
        assert_string_equal(al_status_name((al_status)s), names[s]);
    assert_string_equal(al_status_name(AL_STATUS_SIGNALED), "signaled");
    assert_string_equal(al_status_name(AL_STATUS_CPU_LIMIT), "cpu_limit");
    assert_string_equal(al_status_name(AL_STATUS_UNSUPPORTED), "unsupported");
    assert_string_equal(al_status_name(AL_STATUS_CANCELLED), "cancelled");
    assert_string_equal(al_status_name((al_status)99), "error");
}

static void test_null_arguments(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    assert_false(al_run_wasm(&p, m_ok, sizeof m_ok, NULL));
    al_result r;
    RUN(NULL, m_ok, &r);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    al_result_free(&r);
    al_result_free(&r); /* twice is fine */
    al_result_free(NULL);
}

static void expect_policy_error(const al_policy *p, const char *needle) {
    al_result r;
    RUN(p, m_ok, &r);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_int_equal(r.error.kind, AL_ERR_ARGUMENT);
    assert_message(&r, needle);
    assert_non_null(r.stdout_data); /* always a string, even when nothing ran */
    assert_int_equal(r.stdout_len, 0);
    al_result_free(&r);
}

/* The fields only the native and gvisor backends read, checked through
 * al_exec before anything starts. */
static void expect_exec_refused(const al_policy *p, const char *needle) {
    al_result r;
    assert_true(al_exec(p, &r));
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_int_equal(r.error.kind, AL_ERR_ARGUMENT);
    assert_message(&r, needle);
    assert_non_null(r.stdout_data);
    al_result_free(&r);
}

static void test_program_policy_validation(void **state) {
    (void)state;
    const char *argv[] = {"/bin/true"};
    al_policy p;
    al_policy_init(&p);
    p.isolation = AL_ISOLATION_NATIVE;
    p.argv = argv;
    p.argc = 1;
    p.cwd = "relative";
    expect_exec_refused(&p, "cwd: guest path is not absolute");
    p.cwd = "/a/../b";
    expect_exec_refused(&p, "cwd: guest path has a '.' or '..' component");
    p.cwd = NULL;
    p.gvisor_platform = "bogus";
    expect_exec_refused(&p, "gvisor_platform");
    p.gvisor_platform = NULL;
    p.max_memory_bytes = 1 << 20;
    expect_exec_refused(&p, "below 4 MiB");
    al_policy_init(&p);
    p.isolation = AL_ISOLATION_GVISOR;
    p.argv = argv;
    p.argc = 1;
    al_dir_grant root = {"/tmp", "//", false};
    p.dirs = &root;
    p.ndirs = 1;
    expect_exec_refused(&p, "cannot replace the sandbox's root");
    p.ndirs = 0;
    p.isolation = (al_isolation)42;
    expect_exec_refused(&p, "unknown isolation backend");
    assert_string_equal(al_status_name(AL_STATUS_SIGNALED), "signaled");
    assert_string_equal(al_status_name(AL_STATUS_CPU_LIMIT), "cpu_limit");
    assert_string_equal(al_status_name(AL_STATUS_UNSUPPORTED), "unsupported");
}

static void test_policy_validation(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.isolation = AL_ISOLATION_NATIVE;
    expect_policy_error(&p, "a program to run is required");
    p.isolation = AL_ISOLATION_GVISOR;
    expect_policy_error(&p, "a program to run is required");

    al_policy_init(&p);
    const char *env[] = {"NOEQUALS"};
    p.env = env;
    p.nenv = 1;
    expect_policy_error(&p, "KEY=VALUE");
    const char *env2[] = {"=x"};
    p.env = env2;
    expect_policy_error(&p, "empty variable name");

    al_policy_init(&p);
    al_dir_grant rel = {"/tmp", "data", true};
    p.dirs = &rel;
    p.ndirs = 1;
    expect_policy_error(&p, "not absolute");
    al_dir_grant dots = {"/tmp", "/data/../etc", true};
    p.dirs = &dots;
    expect_policy_error(&p, "'..'");
    al_dir_grant twice[] = {{"/tmp", "/data", true}, {"/tmp", "//data/", false}};
    p.dirs = twice;
    p.ndirs = 2;
    expect_policy_error(&p, "granted twice");

    al_policy_init(&p);
    p.argc = 1; /* argv NULL */
    expect_policy_error(&p, "argv");
    al_policy_init(&p);
    p.stdin_len = 4; /* stdin_data NULL */
    expect_policy_error(&p, "stdin");
    al_policy_init(&p);
    p.max_module_bytes = 0;
    expect_policy_error(&p, "max_module_bytes");
    al_policy_init(&p);
    p.stdout_cap = (size_t)2 << 30;
    expect_policy_error(&p, "cap");
    al_policy_init(&p);
    p.max_instances = 0;
    expect_policy_error(&p, "max_instances");
}

/* ---- module checks before parsing ------------------------------------------------- */

static void test_too_large_before_parsing(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.max_module_bytes = 8;
    al_result r;
    static const uint8_t junk[9] = "junkjunk"; /* not even wasm: size is checked first */
    RUN(&p, junk, &r);
    assert_int_equal(r.status, AL_STATUS_INVALID_MODULE);
    assert_message(&r, "too large");
    al_result_free(&r);
}

static void test_not_wasm(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    static const uint8_t text[] = "#!/bin/sh\necho hi\n";
    RUN(&p, text, &r);
    assert_int_equal(r.status, AL_STATUS_INVALID_MODULE);
    assert_message(&r, "not a wasm module");
    al_result_free(&r);
    assert_true(al_run_wasm(&p, text, 2, &r)); /* shorter than the magic */
    assert_int_equal(r.status, AL_STATUS_INVALID_MODULE);
    al_result_free(&r);
    assert_true(al_run_wasm(&p, NULL, 0, &r));
    assert_int_equal(r.status, AL_STATUS_INVALID_MODULE);
    al_result_free(&r);
}

static void test_malformed(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    static const uint8_t bad_version[] = {0x00, 0x61, 0x73, 0x6d, 0x02, 0x00, 0x00, 0x00};
    RUN(&p, bad_version, &r);
    assert_int_equal(r.status, AL_STATUS_INVALID_MODULE);
    assert_int_equal(r.error.kind, AL_ERR_MALFORMED);
    al_result_free(&r);
}

/* ---- linking ------------------------------------------------------------------------ */

static void test_link_errors(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    RUN(&p, m_import, &r);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_int_equal(r.error.kind, AL_ERR_LINK);
    assert_message(&r, "log"); /* names the missing import */
    al_result_free(&r);

    RUN(&p, m_nostart, &r);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_message(&r, "_start");
    al_result_free(&r);

    RUN(&p, m_badstart, &r);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_message(&r, "_start");
    al_result_free(&r);
}

/* ---- outcomes ------------------------------------------------------------------------- */

static void test_ok(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    RUN(&p, m_ok, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.trap, AL_TRAP_NONE);
    assert_int_equal(r.peak_memory_bytes, 2 * 65536);
    assert_non_null(r.stdout_data);
    assert_non_null(r.stderr_data);
    assert_int_equal(r.stdout_data[0], 0);
    assert_false(r.stdout_truncated);
    al_result_free(&r);
}

static void test_fuel(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.fuel = 10000;
    al_result r;
    RUN(&p, m_spin, &r);
    assert_int_equal(r.status, AL_STATUS_FUEL_EXHAUSTED);
    assert_int_equal(r.trap, AL_TRAP_FUEL_EXHAUSTED);
    assert_int_equal(r.fuel_used, 10000);
    al_result_free(&r);

    /* Unmetered runs still report what they used. */
    al_policy_init(&p);
    RUN(&p, m_ok, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_true(r.fuel_used > 0 && r.fuel_used < 100);
    al_result_free(&r);
}

static void test_timeout(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.timeout_ms = 100;
    al_result r;
    uint64_t t0 = now_ms();
    RUN(&p, m_spin, &r);
    uint64_t took = now_ms() - t0;
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_int_equal(r.trap, AL_TRAP_INTERRUPTED);
    assert_true(r.wall_ns >= 100000000u);
    assert_true(took < 2000);
    al_result_free(&r);
}

/* Many runs with a timer each: the timer thread must be joined and must never
 * interrupt a store after its run (ASan would see the freed store). A run
 * that ends early must not wait for its timer: 25 runs with a 10 s timeout
 * take far less than 10 s. */
static void test_timers_do_not_outlive_runs(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    uint64_t t0 = now_ms();
    for (int i = 0; i < 50; i++) {
        bool spin = i % 2 == 0;
        p.timeout_ms = spin ? 1 + (uint64_t)(i % 3) : 10000;
        if (spin) RUN(&p, m_spin, &r);
        else RUN(&p, m_ok, &r);
        assert_int_equal(r.status, spin ? AL_STATUS_TIMEOUT : AL_STATUS_OK);
        al_result_free(&r);
    }
    assert_true(now_ms() - t0 < 5000);
    sleep_ms(20);
}

/* ---- cancellation ------------------------------------------------------------------ */

/* An infinite loop, no timeout: only the flag can end it. */
static void test_cancel_spinning_guest(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    canceller c;
    canceller_start(&c, 200);
    p.cancel = &c.flag;
    p.cancel_reason = "shutdown";
    al_result r;
    uint64_t t0 = now_ms();
    RUN(&p, m_spin, &r);
    uint64_t end = now_ms();
    pthread_join(c.thread, NULL);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_string_equal(r.error.message, "shutdown");
    assert_int_equal(r.trap, AL_TRAP_INTERRUPTED);
    assert_int_equal(r.limits_hit & AL_LIMIT_WALL, 0);
    assert_true(end - t0 >= 200);
    assert_true(end - t0 < 2000);
    printf("wasm: cancelled %llu ms after the flag was raised\n",
           (unsigned long long)(end - canceller_raised_ms(&c)));
    assert_true(end - canceller_raised_ms(&c) < 500);
    al_result_free(&r);
}

/* With a timeout too, the flag wins when it comes first; without a reason
 * the message is "cancelled". */
static void test_cancel_before_timeout(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.timeout_ms = 30000;
    canceller c;
    canceller_start(&c, 100);
    p.cancel = &c.flag;
    al_result r;
    uint64_t t0 = now_ms();
    RUN(&p, m_spin, &r);
    pthread_join(c.thread, NULL);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_string_equal(r.error.message, "cancelled");
    assert_true(now_ms() - t0 < 2000);
    al_result_free(&r);
}

/* A flag that is never raised changes nothing: the run ends on its own (and
 * a timeout is still a timeout). */
static void test_cancel_flag_not_raised(void **state) {
    (void)state;
    int flag = 0;
    al_policy p;
    al_policy_init(&p);
    p.cancel = &flag;
    p.cancel_reason = "never";
    al_result r;
    uint64_t t0 = now_ms();
    RUN(&p, m_ok, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_true(now_ms() - t0 < 1000); /* the poller did not hold the run up */
    al_result_free(&r);
    p.timeout_ms = 100;
    RUN(&p, m_spin, &r);
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    al_result_free(&r);
}

/* Raised before the run: it stops at once. */
static void test_cancel_already_raised(void **state) {
    (void)state;
    int flag = 1;
    al_policy p;
    al_policy_init(&p);
    p.cancel = &flag;
    p.cancel_reason = "too late";
    al_result r;
    uint64_t t0 = now_ms();
    RUN(&p, m_spin, &r);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_string_equal(r.error.message, "too late");
    assert_true(now_ms() - t0 < 1000);
    al_result_free(&r);
}

static void test_trap(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    RUN(&p, m_trap, &r);
    assert_int_equal(r.status, AL_STATUS_TRAP);
    assert_int_equal(r.trap, AL_TRAP_UNREACHABLE);
    assert_int_equal(r.error.kind, AL_ERR_TRAP);
    assert_true(r.error.backtrace_len >= 2);
    assert_string_equal(r.error.backtrace[0].func_name, "inner");
    al_result_free(&r);
}

static void test_memory_limit(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    p.max_memory_bytes = 16u << 20; /* 256 pages; bigmem declares 300 */
    al_result r;
    RUN(&p, m_bigmem, &r);
    assert_int_equal(r.status, AL_STATUS_MEMORY_LIMIT);
    assert_int_equal(r.error.kind, AL_ERR_LIMIT);
    al_result_free(&r);

    /* grow fails (-1) and the guest gives up with a trap: memory_limit */
    RUN(&p, m_grow, &r);
    assert_int_equal(r.status, AL_STATUS_MEMORY_LIMIT);
    assert_int_equal(r.trap, AL_TRAP_UNREACHABLE);
    assert_int_equal(r.peak_memory_bytes, 65536);
    al_result_free(&r);

    p.trap_on_memory_limit = true;
    RUN(&p, m_grow, &r);
    assert_int_equal(r.status, AL_STATUS_MEMORY_LIMIT);
    assert_int_equal(r.trap, AL_TRAP_MEMORY_LIMIT);
    al_result_free(&r);

    /* Without the limit in the way the same module is fine. */
    al_policy_init(&p);
    RUN(&p, m_grow, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.peak_memory_bytes, 1001u * 65536);
    al_result_free(&r);
}

static void test_exit_codes(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    const char *argv[] = {"exit", "a", "b", "c"};
    p.argv = argv;
    p.argc = 4; /* exit.wat exits with argc - 1 */
    al_result r;
    RUN(&p, m_exit, &r);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 3);
    al_result_free(&r);
    p.argc = 1;
    RUN(&p, m_exit, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.trap, AL_TRAP_NONE);
    al_result_free(&r);
}

static void test_output(void **state) {
    (void)state;
    al_policy p;
    al_policy_init(&p);
    al_result r;
    RUN(&p, m_write, &r);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.stdout_len, 6);
    assert_string_equal((const char *)r.stdout_data, "hello\n");
    assert_string_equal((const char *)r.stderr_data, "hello\n");
    al_result_free(&r);

    p.stderr_cap = 3;
    RUN(&p, m_write, &r);
    assert_int_equal(r.status, AL_STATUS_OUTPUT_TRUNCATED);
    assert_false(r.stdout_truncated);
    assert_true(r.stderr_truncated);
    assert_int_equal(r.stderr_len, 3);
    assert_string_equal((const char *)r.stderr_data, "hel");
    al_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_policy_validation),
        cmocka_unit_test(test_program_policy_validation),
        cmocka_unit_test(test_too_large_before_parsing),
        cmocka_unit_test(test_not_wasm),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_link_errors),
        cmocka_unit_test(test_ok),
        cmocka_unit_test(test_fuel),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_timers_do_not_outlive_runs),
        cmocka_unit_test(test_cancel_spinning_guest),
        cmocka_unit_test(test_cancel_before_timeout),
        cmocka_unit_test(test_cancel_flag_not_raised),
        cmocka_unit_test(test_cancel_already_raised),
        cmocka_unit_test(test_trap),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
