;; abi.wat — a test plugin that exercises every "extism:host/env" function
;; (tests/unit/test_plugin.c). Each export is one scenario; assertions fail
;; with `unreachable` (via $check), so a broken host function makes the
;; call TRAP instead of passing silently.
;;
;; Guest linear memory holds constant strings (data segments below) and a
;; scratch area at 0..63 for number formatting; everything the host sees
;; goes through kernel blocks (alloc + store_u8), as a real PDK does.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "length_unsafe" (func $length_unsafe (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "load_u64" (func $load_u64 (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_offset" (func $input_offset (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "input_set" (func $input_set (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "output_length" (func $output_length (result i64)))
  (import "extism:host/env" "output_offset" (func $output_offset (result i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "error_get" (func $error_get (result i64)))
  (import "extism:host/env" "reset" (func $reset))
  (import "extism:host/env" "memory_bytes" (func $memory_bytes (result i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (import "extism:host/env" "http_status_code" (func $http_status_code (result i32)))
  (import "extism:host/env" "http_headers" (func $http_headers (result i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "log_warn" (func $log_warn (param i64)))
  (import "extism:host/env" "log_error" (func $log_error (param i64)))
  (import "extism:host/env" "log_debug" (func $log_debug (param i64)))
  (import "extism:host/env" "log_trace" (func $log_trace (param i64)))
  (import "extism:host/env" "get_log_level" (func $get_log_level (result i32)))

  (memory (export "memory") 1)
  (data (i32.const 100) "ok")
  (data (i32.const 110) "count")
  (data (i32.const 120) "boom")
  (data (i32.const 130) "absent")
  (data (i32.const 140) "big")
  (data (i32.const 150) "none")
  (data (i32.const 160) "hello body")
  (data (i32.const 200) "trace message")
  (data (i32.const 220) "debug message")
  (data (i32.const 240) "info message")
  (data (i32.const 260) "warn message")
  (data (i32.const 280) "error message")

  ;; ---- helpers ------------------------------------------------------------

  (func $check (param i32)
    (if (i32.eqz (local.get 0)) (then unreachable)))

  ;; a new kernel block holding guest memory [p, p + len)
  (func $kstr (param $p i32) (param $len i32) (result i64)
    (local $h i64) (local $i i32)
    (local.set $h (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $h) (i64.extend_i32_u (local.get $i)))
                        (i32.load8_u (i32.add (local.get $p) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (local.get $h))

  (func $out_mem (param $p i32) (param $len i32)
    (call $output_set (call $kstr (local.get $p) (local.get $len))
                      (i64.extend_i32_u (local.get $len))))

  (func $out_ok (call $out_mem (i32.const 100) (i32.const 2)))

  ;; the output is the whole block h (0: empty output)
  (func $out_block (param $h i64)
    (call $output_set (local.get $h) (call $length (local.get $h))))

  ;; the output is v in decimal
  (func $out_u64 (param $v i64)
    (local $p i32)
    (local.set $p (i32.const 32))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (call $out_mem (local.get $p) (i32.sub (i32.const 32) (local.get $p))))

  (func $is_vowel (param $c i32) (result i32)
    (local.set $c (i32.or (local.get $c) (i32.const 0x20)))
    (i32.or
      (i32.or (i32.eq (local.get $c) (i32.const 97)) (i32.eq (local.get $c) (i32.const 101)))
      (i32.or (i32.eq (local.get $c) (i32.const 105))
              (i32.or (i32.eq (local.get $c) (i32.const 111)) (i32.eq (local.get $c) (i32.const 117))))))

  ;; ---- input / output -------------------------------------------------------

  ;; one input_load_u8 per byte
  (func (export "count_vowels") (result i32)
    (local $i i64) (local $n i64) (local $len i64)
    (local.set $len (call $input_length))
    (block $done
      (loop $l
        (br_if $done (i64.ge_u (local.get $i) (local.get $len)))
        (if (call $is_vowel (call $input_load_u8 (local.get $i)))
          (then (local.set $n (i64.add (local.get $n) (i64.const 1)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $l)))
    (call $out_u64 (local.get $n))
    (i32.const 0))

  ;; input_load_u64 per 8 bytes, input_load_u8 for the tail (as the C PDK loads)
  (func (export "count_vowels64") (result i32)
    (local $i i64) (local $n i64) (local $len i64) (local $w i64) (local $k i32)
    (local.set $len (call $input_length))
    (block $done
      (loop $l
        (br_if $done (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $len)))
        (local.set $w (call $input_load_u64 (local.get $i)))
        (local.set $k (i32.const 0))
        (loop $bytes
          (if (call $is_vowel (i32.wrap_i64 (i64.and (local.get $w) (i64.const 0xff))))
            (then (local.set $n (i64.add (local.get $n) (i64.const 1)))))
          (local.set $w (i64.shr_u (local.get $w) (i64.const 8)))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $bytes (i32.lt_u (local.get $k) (i32.const 8))))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $l)))
    (block $tail_done
      (loop $tail
        (br_if $tail_done (i64.ge_u (local.get $i) (local.get $len)))
        (if (call $is_vowel (call $input_load_u8 (local.get $i)))
          (then (local.set $n (i64.add (local.get $n) (i64.const 1)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $tail)))
    (call $out_u64 (local.get $n))
    (i32.const 0))

  ;; nothing: the fixed cost of a call
  (func (export "noop") (result i32) (i32.const 0))

  ;; one input_load_u64 per 8 bytes and nothing else: the cost of host calls
  (func (export "load_all") (result i32)
    (local $i i64) (local $x i64) (local $len i64)
    (local.set $len (call $input_length))
    (block $done
      (loop $l
        (br_if $done (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $len)))
        (local.set $x (i64.xor (local.get $x) (call $input_load_u64 (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $l)))
    (i32.wrap_i64 (i64.and (local.get $x) (i64.const 0))))

  ;; the output is the input block itself (no copy in the guest)
  (func (export "echo") (result i32)
    (call $output_set (call $input_offset) (call $input_length))
    (i32.const 0))

  ;; input -> block A with input_load_u64/u8 + store_u64/u8, A -> block B
  ;; with load_u64/u8 + store_u64/u8; the output is B
  (func (export "copy") (result i32)
    (local $len i64) (local $a i64) (local $b i64) (local $i i64)
    (local.set $len (call $input_length))
    (local.set $a (call $alloc (local.get $len)))
    (local.set $b (call $alloc (local.get $len)))
    (block $d1 (loop $l1
      (br_if $d1 (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $len)))
      (call $store_u64 (i64.add (local.get $a) (local.get $i)) (call $input_load_u64 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 8)))
      (br $l1)))
    (block $d2 (loop $l2
      (br_if $d2 (i64.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $a) (local.get $i)) (call $input_load_u8 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $l2)))
    (local.set $i (i64.const 0))
    (block $d3 (loop $l3
      (br_if $d3 (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $len)))
      (call $store_u64 (i64.add (local.get $b) (local.get $i))
                       (call $load_u64 (i64.add (local.get $a) (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 8)))
      (br $l3)))
    (block $d4 (loop $l4
      (br_if $d4 (i64.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $b) (local.get $i))
                      (call $load_u8 (i64.add (local.get $a) (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $l4)))
    (call $output_set (local.get $b) (local.get $len))
    (i32.const 0))

  ;; input_set: the input becomes its second half
  (func (export "input_set_half") (result i32)
    (local $len i64) (local $half i64)
    (local.set $len (call $input_length))
    (local.set $half (i64.div_u (local.get $len) (i64.const 2)))
    (call $input_set (i64.add (call $input_offset) (local.get $half))
                     (i64.sub (local.get $len) (local.get $half)))
    (call $output_set (call $input_offset) (call $input_length))
    (i32.const 0))

  (func (export "output_query") (result i32)
    (local $h i64)
    (local.set $h (call $kstr (i32.const 120) (i32.const 4)))
    (call $output_set (local.get $h) (i64.const 4))
    (call $check (i64.eq (call $output_length) (i64.const 4)))
    (call $check (i64.eq (call $output_offset) (local.get $h)))
    (i32.const 0))

  ;; ---- memory ----------------------------------------------------------------

  (func (export "alloc_length") (result i32)
    (local $h i64) (local $g i64)
    (local.set $h (call $alloc (i64.const 5)))
    (call $check (i64.ne (local.get $h) (i64.const 0)))
    (call $check (i64.eq (call $length (local.get $h)) (i64.const 5)))
    (call $check (i64.eq (call $length_unsafe (local.get $h)) (i64.const 5)))
    (call $check (i64.eq (call $length (i64.add (local.get $h) (i64.const 1))) (i64.const 0)))
    (call $check (i64.eq (call $length (i64.const 0)) (i64.const 0)))
    ;; fresh blocks are zeroed
    (call $check (i32.eq (call $load_u8 (i64.add (local.get $h) (i64.const 4))) (i32.const 0)))
    (call $store_u8 (local.get $h) (i32.const 0x1ff))      ;; truncated to one byte
    (call $check (i32.eq (call $load_u8 (local.get $h)) (i32.const 0xff)))
    (call $free (local.get $h))
    (call $check (i64.eq (call $length (local.get $h)) (i64.const 0)))
    ;; a freed block is reused by an allocation that fits
    (local.set $g (call $alloc (i64.const 3)))
    (call $check (i64.eq (local.get $g) (local.get $h)))
    (call $check (i64.eq (call $length (local.get $g)) (i64.const 3)))
    (call $check (i32.eq (call $load_u8 (local.get $g)) (i32.const 0)))
    (call $check (i64.eq (call $alloc (i64.const 0)) (i64.const 0)))
    (call $out_ok)
    (i32.const 0))

  ;; hostile values that must not trap: free/length of non-handles, absurd allocs
  (func (export "hostile_ok") (result i32)
    (call $free (i64.const 0))
    (call $free (i64.const -1))
    (call $free (i64.const 123456789))
    (call $free (i64.const 3))
    (call $check (i64.eq (call $length (i64.const -1)) (i64.const 0)))
    (call $check (i64.eq (call $length (i64.const 7)) (i64.const 0)))
    (call $check (i64.eq (call $length_unsafe (i64.const -8)) (i64.const 0)))
    (call $check (i64.eq (call $alloc (i64.const -1)) (i64.const 0)))
    (call $check (i64.eq (call $alloc (i64.const 0x7fffffffffffffff)) (i64.const 0)))
    ;; 11 MiB: over max_output_bytes (MAX_ALLOCATION_BYTES)
    (call $check (i64.eq (call $alloc (i64.const 11534336)) (i64.const 0)))
    (call $out_ok)
    (i32.const 0))

  (func (export "reset_test") (result i32)
    (local $h i64) (local $g i64)
    (local.set $h (call $alloc (i64.const 100)))
    (call $output_set (local.get $h) (i64.const 10))
    (call $reset)
    (call $check (i64.eq (call $memory_bytes) (i64.const 0)))
    (call $check (i64.eq (call $input_length) (i64.const 0)))
    (call $check (i64.eq (call $output_length) (i64.const 0)))
    (call $check (i64.eq (call $length (local.get $h)) (i64.const 0)))
    (local.set $g (call $alloc (i64.const 10)))
    (call $check (i64.ne (local.get $g) (i64.const 0)))
    (call $check (i64.le_u (local.get $g) (local.get $h)))
    (call $out_ok)
    (i32.const 0))

  (func (export "memory_bytes_test") (result i32)
    (local $m0 i64)
    (local.set $m0 (call $memory_bytes))
    (drop (call $alloc (i64.const 100)))
    (call $check (i64.ge_u (i64.sub (call $memory_bytes) (local.get $m0)) (i64.const 100)))
    (call $out_ok)
    (i32.const 0))

  ;; ---- out of range: each must trap the plugin, not the host ------------------

  (func (export "oob_load_zero") (result i32)
    (drop (call $load_u8 (i64.const 0))) (i32.const 0))
  (func (export "oob_load_u8_end") (result i32)
    (drop (call $load_u8 (i64.add (call $alloc (i64.const 4)) (i64.const 4)))) (i32.const 0))
  (func (export "oob_load_end") (result i32)
    (drop (call $load_u64 (call $alloc (i64.const 4)))) (i32.const 0))
  (func (export "oob_load_huge") (result i32)
    (drop (call $load_u64 (i64.const -1))) (i32.const 0))
  (func (export "oob_load_wrap") (result i32)
    (drop (call $load_u64 (i64.const -4))) (i32.const 0))
  (func (export "oob_store") (result i32)
    (call $store_u8 (i64.add (call $alloc (i64.const 1)) (i64.const 1)) (i32.const 1)) (i32.const 0))
  (func (export "oob_store_wrap") (result i32)
    (call $store_u64 (i64.const -2) (i64.const 0)) (i32.const 0))
  (func (export "oob_output") (result i32)
    (call $output_set (call $alloc (i64.const 4)) (i64.const -1)) (i32.const 0))
  (func (export "oob_output_wrap") (result i32)
    (call $output_set (i64.const -1) (i64.const 2)) (i32.const 0))
  (func (export "oob_input_u8") (result i32)
    (drop (call $input_load_u8 (call $input_length))) (i32.const 0))
  (func (export "oob_input_u64") (result i32)
    (drop (call $input_load_u64 (i64.sub (call $input_length) (i64.const 4)))) (i32.const 0))
  (func (export "oob_input_u64_huge") (result i32)
    (drop (call $input_load_u64 (i64.const -3))) (i32.const 0))
  (func (export "oob_input_set") (result i32)
    (call $input_set (i64.const 8) (i64.const -1)) (i32.const 0))
  (func (export "bad_error_handle") (result i32)
    (call $error_set (i64.const 123456)) (i32.const 0))
  (func (export "bad_config_key") (result i32)
    (drop (call $config_get (i64.const 0))) (i32.const 0))
  (func (export "bad_var_key") (result i32)
    (drop (call $var_get (i64.const -1))) (i32.const 0))
  (func (export "bad_var_value") (result i32)
    (call $var_set (call $kstr (i32.const 110) (i32.const 5)) (i64.const 99999)) (i32.const 0))
  (func (export "bad_log") (result i32)
    (call $log_info (i64.const 5)) (i32.const 0))
  (func (export "bad_http_handle") (result i32)
    (drop (call $http_request (i64.const 77777) (i64.const 0))) (i32.const 0))

  ;; ---- errors ----------------------------------------------------------------

  ;; the error wins over the return code 0
  (func (export "error_wins") (result i32)
    (call $error_set (call $kstr (i32.const 120) (i32.const 4)))
    (i32.const 0))

  (func (export "error_get_test") (result i32)
    (local $h i64)
    (call $check (i64.eq (call $error_get) (i64.const 0)))
    (local.set $h (call $kstr (i32.const 120) (i32.const 4)))
    (call $error_set (local.get $h))
    (call $check (i64.eq (call $error_get) (local.get $h)))
    (call $error_set (i64.const 0))
    (call $check (i64.eq (call $error_get) (i64.const 0)))
    (call $out_ok)
    (i32.const 0))

  (func (export "fail_code") (result i32) (i32.const 3))

  ;; ---- config and vars ----------------------------------------------------------

  ;; the input is the key (the input block is a block, so it is a valid key handle)
  (func (export "config") (result i32)
    (local $v i64)
    (local.set $v (call $config_get (call $input_offset)))
    (if (i64.eqz (local.get $v))
      (then (call $out_mem (i32.const 130) (i32.const 6)))
      (else (call $out_block (local.get $v))))
    (i32.const 0))

  (func (export "var_count") (result i32)
    (local $key i64) (local $v i64) (local $n i64) (local $b i64)
    (local.set $key (call $kstr (i32.const 110) (i32.const 5)))
    (local.set $v (call $var_get (local.get $key)))
    (if (i64.ne (local.get $v) (i64.const 0))
      (then
        (call $check (i64.eq (call $length (local.get $v)) (i64.const 8)))
        (local.set $n (call $load_u64 (local.get $v)))))
    (local.set $n (i64.add (local.get $n) (i64.const 1)))
    (local.set $b (call $alloc (i64.const 8)))
    (call $store_u64 (local.get $b) (local.get $n))
    (call $var_set (local.get $key) (local.get $b))
    (call $out_u64 (local.get $n))
    (i32.const 0))

  (func (export "var_delete") (result i32)
    (call $var_set (call $kstr (i32.const 110) (i32.const 5)) (i64.const 0))
    (call $out_ok)
    (i32.const 0))

  ;; a var as large as the input
  (func (export "var_big") (result i32)
    (call $var_set (call $kstr (i32.const 140) (i32.const 3)) (call $alloc (call $input_length)))
    (call $out_ok)
    (i32.const 0))

  ;; ---- logging -------------------------------------------------------------------

  (func (export "log_all") (result i32)
    (call $log_trace (call $kstr (i32.const 200) (i32.const 13)))
    (call $log_debug (call $kstr (i32.const 220) (i32.const 13)))
    (call $log_info (call $kstr (i32.const 240) (i32.const 12)))
    (call $log_warn (call $kstr (i32.const 260) (i32.const 12)))
    (call $log_error (call $kstr (i32.const 280) (i32.const 13)))
    (call $out_u64 (i64.extend_i32_u (call $get_log_level)))
    (i32.const 0))

  ;; ---- HTTP (the input is the request JSON) ----------------------------------------

  (func (export "http") (result i32)
    (call $out_block (call $http_request (call $input_offset) (i64.const 0)))
    (i32.const 0))

  (func (export "http_post") (result i32)
    (call $out_block (call $http_request (call $input_offset)
                                         (call $kstr (i32.const 160) (i32.const 10))))
    (i32.const 0))

  (func (export "http_status") (result i32)
    (call $out_u64 (i64.extend_i32_u (call $http_status_code)))
    (i32.const 0))

  (func (export "http_headers") (result i32)
    (local $h i64)
    (local.set $h (call $http_headers))
    (if (i64.eqz (local.get $h))
      (then (call $out_mem (i32.const 150) (i32.const 4)))
      (else (call $out_block (local.get $h))))
    (i32.const 0))

  ;; the response body becomes the plugin's error
  (func (export "http_error") (result i32)
    (call $error_set (call $http_request (call $input_offset) (i64.const 0)))
    (i32.const 0))

  ;; ---- misbehaving plugins -------------------------------------------------------

  (func (export "trap") (result i32) unreachable)

  (func (export "div0") (result i32)
    (i32.div_s (i32.const 1) (i32.sub (i32.const 1) (i32.const 1))))

  (func (export "spin") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))

  ;; grow linear memory until refused, then fail as an out-of-memory program would
  (func (export "grow") (result i32)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  ;; two adjacent 5.5 MiB blocks (each under the 10 MiB allocation cap) and
  ;; an 11 MiB output spanning both
  (func (export "big_output") (result i32)
    (local $a i64) (local $b i64)
    (local.set $a (call $alloc (i64.const 5767168)))
    (local.set $b (call $alloc (i64.const 5767168)))
    (call $check (i64.ne (local.get $a) (i64.const 0)))
    (call $check (i64.eq (local.get $b) (i64.add (local.get $a) (i64.const 5767168))))
    (call $output_set (local.get $a) (i64.const 11534336))
    (i32.const 0))

  ;; not plugin functions: wrong types
  (func (export "with_params") (param i32) (result i32) (local.get 0))
  (func (export "no_result"))
)
