;; other_module.wat — imports from a module no plugin host provides.
(module
  (import "env" "foo" (func))
  (func (export "run") (result i32) (i32.const 0)))
