;; init.wat — _initialize runs once per instance: it counts instantiations
;; in a var (vars outlive instances) and in a global (which does not).
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "load_u64" (func $load_u64 (param i64) (result i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (global $runs (mut i64) (i64.const 0))

  ;; a kernel block holding "inits"
  (func $key (result i64)
    (local $h i64)
    (local.set $h (call $alloc (i64.const 5)))
    (call $store_u8 (local.get $h) (i32.const 105))
    (call $store_u8 (i64.add (local.get $h) (i64.const 1)) (i32.const 110))
    (call $store_u8 (i64.add (local.get $h) (i64.const 2)) (i32.const 105))
    (call $store_u8 (i64.add (local.get $h) (i64.const 3)) (i32.const 116))
    (call $store_u8 (i64.add (local.get $h) (i64.const 4)) (i32.const 115))
    (local.get $h))

  (func $inits (result i64)
    (local $v i64)
    (local.set $v (call $var_get (call $key)))
    (if (result i64) (i64.eqz (local.get $v))
      (then (i64.const 0))
      (else (call $load_u64 (local.get $v)))))

  ;; one decimal digit (tests stay below 10)
  (func $out_digit (param $v i64)
    (local $h i64)
    (local.set $h (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $h) (i32.add (i32.const 48) (i32.wrap_i64 (local.get $v))))
    (call $output_set (local.get $h) (i64.const 1)))

  (func (export "_initialize")
    (local $b i64)
    (global.set $runs (i64.add (global.get $runs) (i64.const 1)))
    (local.set $b (call $alloc (i64.const 8)))
    (call $store_u64 (local.get $b) (i64.add (call $inits) (i64.const 1)))
    (call $var_set (call $key) (local.get $b)))

  (func (export "inits") (result i32)
    (call $out_digit (call $inits))
    (i32.const 0))

  (func (export "runs") (result i32)
    (call $out_digit (global.get $runs))
    (i32.const 0))

  (func (export "trap") (result i32) unreachable)
)
