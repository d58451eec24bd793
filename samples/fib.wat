;; fib.wat — the quick-start sample for `airlock run`.
;;
;;   build/release/airlock run samples/fib.wasm --invoke fib 20      -> 6765
;;   build/release/airlock run samples/fib.wasm --invoke fib_rec 20  -> 6765
;;   build/release/airlock run samples/fib.wasm                      -> 6765 (_start)
;;
;; Rebuild the committed binary with: wat2wasm --debug-names fib.wat -o fib.wasm
(module
  ;; Iterative: fib(0) = 0, fib(1) = 1; wraps modulo 2^32 for n > 47.
  (func $fib (export "fib") (param $n i32) (result i32)
    (local $a i32) (local $b i32) (local $t i32)
    (local.set $b (i32.const 1))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $t (i32.add (local.get $a) (local.get $b)))
        (local.set $a (local.get $b))
        (local.set $b (local.get $t))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $a))

  ;; Recursive: exponential time, a workout for calls (try 25..30).
  (func $fib_rec (export "fib_rec") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else
        (i32.add
          (call $fib_rec (i32.sub (local.get $n) (i32.const 1)))
          (call $fib_rec (i32.sub (local.get $n) (i32.const 2)))))))

  ;; With no --invoke, `airlock run` calls _start.
  (func (export "_start") (result i32)
    (call $fib (i32.const 20))))
