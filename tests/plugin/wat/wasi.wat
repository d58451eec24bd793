;; wasi.wat — a plugin that also imports WASI: stdout and stderr go to the
;; host's log callback, proc_exit ends the call with its code.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (data (i32.const 100) "hello from wasi\n")
  (data (i32.const 200) "oops\n")

  (func $write (param $fd i32) (param $p i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))

  (func (export "hello") (result i32)
    (call $write (i32.const 1) (i32.const 100) (i32.const 16))
    (call $write (i32.const 2) (i32.const 200) (i32.const 5))
    (i32.const 0))

  (func (export "exit3") (result i32)
    (call $proc_exit (i32.const 3))
    (i32.const 0))

  (func (export "exit0") (result i32)
    (call $proc_exit (i32.const 0))
    (i32.const 1))
)
