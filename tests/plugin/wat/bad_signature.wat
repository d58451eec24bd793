;; bad_signature.wat — load_u8 imported with the wrong type (i32 handle).
(module
  (import "extism:host/env" "load_u8" (func (param i32) (result i32)))
  (func (export "run") (result i32) (i32.const 0)))
