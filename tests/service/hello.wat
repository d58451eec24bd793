;; hello.wat — the smallest WASI command that prints: tests/service/run.sh
;; uploads it (base64) to /v1/executions. Assembled by the test with wat2wasm.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from wasm\n")
  (func (export "_start")
    ;; one iovec at 0: {buf 16, len 16}; bytes written go to 8
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
