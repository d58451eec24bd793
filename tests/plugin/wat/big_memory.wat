;; big_memory.wat — declares 2000 pages (125 MiB), over the default max_pages.
(module
  (memory (export "memory") 2000)
  (func (export "run") (result i32) (i32.const 0)))
