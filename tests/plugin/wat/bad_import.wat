;; bad_import.wat — imports an "extism:host/env" function Extism does not have.
(module
  (import "extism:host/env" "nonexistent_fn" (func (param i64)))
  (func (export "run") (result i32) (i32.const 0)))
