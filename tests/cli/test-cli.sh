#!/usr/bin/env bash
# tests/cli/test-cli.sh — end-to-end tests of the `airlock` command.
#
# Runs the CLI binary ($AIRLOCK, default build/asan/airlock) on the committed
# sample and on fixtures from tests/cli/fixtures/*.wat, which are compiled here
# with wat2wasm into $BUILD_DIR (default build/cli-fixtures). Checks exit
# codes, stdout exactly, and stderr by pattern. Prints one line per check and
# ends with "N passed, N failed"; exits non-zero when anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
AIRLOCK=${AIRLOCK:-build/asan/airlock}
BUILD_DIR=${BUILD_DIR:-build/cli-fixtures}
FIXTURES=tests/cli/fixtures
SAMPLE=samples/fib.wasm

# shellcheck source=tests/cli/lib/report.bash
source tests/cli/lib/report.bash

if [[ ! -x $AIRLOCK ]]; then
    fail "airlock binary exists" "not found or not executable: $AIRLOCK (run make asan)"
    finish
fi
if ! command -v wat2wasm >/dev/null; then
    fail "wat2wasm available" "wat2wasm not found (run tools/setup.sh)"
    finish
fi

mkdir -p "$BUILD_DIR"
OUT=$BUILD_DIR/stdout
ERR=$BUILD_DIR/stderr

# Fixtures: invalid.wat is deliberately invalid, so skip wat2wasm's own check.
for wat in "$FIXTURES"/*.wat; do
    base=$(basename "$wat" .wat)
    flags=(--debug-names)
    [[ $base == invalid ]] && flags+=(--no-check)
    if ! wat2wasm "${flags[@]}" "$wat" -o "$BUILD_DIR/$base.wasm" 2>"$ERR"; then
        fail "compile fixture $base" "$(cat "$ERR")"
    fi
done
# The same trapping module without a name section: traps then name no function.
wat2wasm "$FIXTURES/traps.wat" -o "$BUILD_DIR/traps-nonames.wasm" 2>"$ERR" ||
    fail "compile fixture traps-nonames" "$(cat "$ERR")"
V=$BUILD_DIR/values.wasm
T=$BUILD_DIR/traps.wasm

# expect NAME RC STDOUT STDERR_REGEX -- COMMAND...
#   STDOUT is compared exactly ("*" accepts anything); STDERR_REGEX is an
#   extended regex that stderr must match ("" means stderr must be empty).
expect() {
    local name=$1 want_rc=$2 want_out=$3 err_re=$4
    shift 5
    local rc
    timeout 60 "$@" >"$OUT" 2>"$ERR" </dev/null
    rc=$?
    local out err problems=()
    out=$(cat "$OUT")
    err=$(cat "$ERR")
    [[ $rc -eq $want_rc ]] || problems+=("exit status $rc, want $want_rc")
    if [[ $want_out != "*" && $out != "$want_out" ]]; then
        problems+=("stdout: $(printf %q "$out")" "  want: $(printf %q "$want_out")")
    fi
    if [[ -z $err_re ]]; then
        [[ -z $err ]] || problems+=("unexpected stderr: $err")
    elif ! grep -Eq -- "$err_re" "$ERR"; then
        problems+=("stderr does not match /$err_re/: $err")
    fi
    # A sanitizer report is always a failure, whatever the exit status.
    local san_re='ERROR: (Address|Leak)Sanitizer|runtime error:'
    if grep -Eq "$san_re" "$ERR"; then
        problems+=("sanitizer report: $(grep -Em1 "$san_re" "$ERR")")
    fi
    if ((${#problems[@]} == 0)); then
        pass "$name"
    else
        fail "$name" "command: $*" "${problems[@]}"
    fi
}

A=$AIRLOCK

# ---- basics ----------------------------------------------------------------
expect "version" 0 "*" "" -- "$A" version
expect "--help" 0 "*" "" -- "$A" --help
expect "no command is a usage error" 2 "" "usage" -- "$A"
expect "unknown command" 2 "" "unknown command" -- "$A" frobnicate
expect "run --help" 0 "*" "" -- "$A" run --help
expect "run without module" 2 "" "usage" -- "$A" run
expect "run unknown option" 2 "" "unknown option '--frob'" -- "$A" run --frob "$SAMPLE"
expect "--invoke without a name" 2 "" "--invoke needs a function name" -- "$A" run "$SAMPLE" --invoke
expect "--invoke twice" 2 "" "--invoke given twice" -- "$A" run "$SAMPLE" --invoke fib 1 --invoke fib

# ---- the sample ------------------------------------------------------------
expect "fib 20" 0 "6765" "" -- "$A" run "$SAMPLE" --invoke fib 20
expect "--invoke before MODULE" 0 "6765" "" -- "$A" run --invoke fib "$SAMPLE" 20
expect "--invoke=NAME" 0 "6765" "" -- "$A" run --invoke=fib "$SAMPLE" 20
expect "fib 0" 0 "0" "" -- "$A" run "$SAMPLE" --invoke fib 0
expect "fib 1" 0 "1" "" -- "$A" run "$SAMPLE" --invoke fib 1
expect "fib 47" 0 "-1323752223" "" -- "$A" run "$SAMPLE" --invoke fib 47
expect "fib_rec 20" 0 "6765" "" -- "$A" run "$SAMPLE" --invoke fib_rec 20
expect "--invoke _start" 0 "6765" "" -- "$A" run "$SAMPLE" --invoke _start
# Without --invoke, MODULE runs as a WASI command (tests/cli/test-run-wasi.sh);
# fib's _start returns a value, so it is not one.
expect "_start with a result is not a WASI command" 1 "" "_start' takes 0 parameters" -- "$A" run "$SAMPLE"
expect "validate sample" 0 "ok" "" -- "$A" validate "$SAMPLE"

# ---- argument errors: exit 2, a message, nothing run --------------------------
expect "too few args" 2 "" "fib expects 1 argument, got 0" -- "$A" run "$SAMPLE" --invoke fib
expect "too many args" 2 "" "fib expects 1 argument, got 2" -- "$A" run "$SAMPLE" --invoke fib 1 2
expect "junk arg" 2 "" "argument 1 of fib \('abc'\): i32: not a decimal integer" \
    -- "$A" run "$SAMPLE" --invoke fib abc
expect "trailing junk" 2 "" "not a decimal integer" -- "$A" run "$SAMPLE" --invoke fib 12x
expect "hex is not decimal" 2 "" "not a decimal integer" -- "$A" run "$SAMPLE" --invoke fib 0x10
expect "leading space" 2 "" "not a decimal integer" -- "$A" run "$SAMPLE" --invoke fib " 5"
expect "empty arg" 2 "" "not a decimal integer" -- "$A" run "$SAMPLE" --invoke fib ""
expect "float for i32" 2 "" "not a decimal integer" -- "$A" run "$SAMPLE" --invoke fib 1.5
expect "i32 too large" 2 "" "out of range for i32" -- "$A" run "$SAMPLE" --invoke fib 4294967296
expect "i32 too small" 2 "" "out of range for i32" -- "$A" run "$SAMPLE" --invoke fib -2147483649
expect "huge integer" 2 "" "i32" -- "$A" run "$SAMPLE" --invoke fib 99999999999999999999999
expect "args to _start" 2 "" "_start expects 0 arguments, got 1" -- "$A" run "$SAMPLE" --invoke _start 5
expect "WASI arguments go after --" 2 "" "unexpected argument '5'" -- "$A" run "$SAMPLE" 5

# ---- integers ----------------------------------------------------------------
expect "i32 max unsigned wraps" 0 "-1" "" -- "$A" run "$V" --invoke id_i32 4294967295
expect "i32 min" 0 "-2147483648" "" -- "$A" run "$V" --invoke id_i32 -2147483648
expect "i32 +sign" 0 "7" "" -- "$A" run "$V" --invoke id_i32 +7
expect "i32 min constant" 0 "-2147483648" "" -- "$A" run "$V" --invoke i32_min
expect "i64 max" 0 "9223372036854775807" "" -- "$A" run "$V" --invoke id_i64 9223372036854775807
expect "i64 min" 0 "-9223372036854775808" "" -- "$A" run "$V" --invoke id_i64 -9223372036854775808
expect "i64 max unsigned wraps" 0 "-1" "" -- "$A" run "$V" --invoke id_i64 18446744073709551615
expect "i64 2^63 unsigned" 0 "-9223372036854775808" "" -- "$A" run "$V" --invoke id_i64 9223372036854775808
expect "i64 too large" 2 "" "i64" -- "$A" run "$V" --invoke id_i64 18446744073709551616
expect "i64 too small" 2 "" "out of range for i64" -- "$A" run "$V" --invoke id_i64 -9223372036854775809
expect "i64 min constant" 0 "-9223372036854775808" "" -- "$A" run "$V" --invoke i64_min
expect "i64 max constant" 0 "9223372036854775807" "" -- "$A" run "$V" --invoke i64_max
expect "i64 add wraps" 0 "-9223372036854775808" "" -- "$A" run "$V" --invoke add_i64 9223372036854775807 1
expect "negative arg is not an option" 0 "-5" "" -- "$A" run "$V" --invoke id_i64 -5

# ---- floats -------------------------------------------------------------------
expect "f32 0.1 round-trips" 0 "0.100000001" "" -- "$A" run "$V" --invoke f32_tenth
expect "f64 0.1 round-trips" 0 "0.10000000000000001" "" -- "$A" run "$V" --invoke f64_tenth
expect "f32 arg 0.1" 0 "0.100000001" "" -- "$A" run "$V" --invoke id_f32 0.1
expect "f64 arg 0.1" 0 "0.10000000000000001" "" -- "$A" run "$V" --invoke id_f64 0.1
expect "f32 max" 0 "3.40282347e+38" "" -- "$A" run "$V" --invoke id_f32 3.40282347e38
expect "f32 overflow" 2 "" "out of range for f32" -- "$A" run "$V" --invoke id_f32 1e39
expect "f64 overflow" 2 "" "out of range for f64" -- "$A" run "$V" --invoke id_f64 1e309
expect "f64 underflow to 0" 0 "0" "" -- "$A" run "$V" --invoke id_f64 1e-400
expect "f64 min subnormal" 0 "4.9406564584124654e-324" "" -- "$A" run "$V" --invoke id_f64 5e-324
expect "f64 -0" 0 "-0" "" -- "$A" run "$V" --invoke id_f64 -0
expect "f64 exponent" 0 "-0.0025000000000000001" "" -- "$A" run "$V" --invoke id_f64 -2.5E-3
expect "f64 .5" 0 "0.5" "" -- "$A" run "$V" --invoke id_f64 .5
expect "f32 nan" 0 "nan" "" -- "$A" run "$V" --invoke id_f32 nan
expect "f32 -nan" 0 "-nan" "" -- "$A" run "$V" --invoke id_f32 -nan
expect "f64 inf" 0 "inf" "" -- "$A" run "$V" --invoke id_f64 inf
expect "f64 -inf" 0 "-inf" "" -- "$A" run "$V" --invoke id_f64 -inf
expect "f32 -nan constant" 0 "-nan" "" -- "$A" run "$V" --invoke f32_neg_nan
expect "f64 nan payload" 0 "nan" "" -- "$A" run "$V" --invoke f64_nan_payload
expect "f64 junk" 2 "" "f64: not a decimal number" -- "$A" run "$V" --invoke id_f64 1.0x
expect "f64 hex float refused" 2 "" "not a decimal number" -- "$A" run "$V" --invoke id_f64 0x1p3
expect "f64 bare exponent refused" 2 "" "not a decimal number" -- "$A" run "$V" --invoke id_f64 1e
expect "f32 nan(...) refused" 2 "" "not a decimal number" -- "$A" run "$V" --invoke id_f32 "nan(1)"

# ---- several results, none, references -------------------------------------------
expect "multi-value results" 0 $'2.5\n1.5\n-7\n3' "" -- "$A" run "$V" --invoke multi 3 -7 1.5 2.5
expect "no results" 0 "" "" -- "$A" run "$V" --invoke nothing
expect "null funcref" 0 "null" "" -- "$A" run "$V" --invoke null_funcref
expect "funcref" 0 "ref" "" -- "$A" run "$V" --invoke a_funcref
expect "externref null" 0 "null" "" -- "$A" run "$V" --invoke id_externref null
expect "externref token" 0 "ref" "" -- "$A" run "$V" --invoke id_externref 17
expect "externref junk" 2 "" "externref" -- "$A" run "$V" --invoke id_externref 0
expect "name starting with a dash" 0 "42" "" -- "$A" run "$V" --invoke=-dash

# ---- exports -----------------------------------------------------------------
expect "missing export" 1 "" "no export named 'nope'" -- "$A" run "$V" --invoke nope
expect "missing export lists functions" 1 "" "exported functions:.* id_i32" -- "$A" run "$V" --invoke nope
expect "missing _start" 1 "" "no export named '_start'" -- "$A" run "$V"
expect "memory export is not a function" 1 "" "export 'memory' is not a function" -- "$A" run "$V" --invoke memory
expect "global export is not a function" 1 "" "export 'g' is not a function" -- "$A" run "$V" --invoke g

# ---- traps: exit 1, the documented line on stderr ----------------------------------
expect "divide by zero" 1 "" "^airlock: trap: integer divide by zero in function [0-9]+ \(div\) at offset 0x[0-9a-f]+$" \
    -- "$A" run "$T" --invoke div 1 0
expect "signed overflow" 1 "" "^airlock: trap: integer overflow in function [0-9]+ \(div\)" \
    -- "$A" run "$T" --invoke div -2147483648 -1
expect "division works" 0 "-3" "" -- "$A" run "$T" --invoke div -7 2
expect "unreachable" 1 "" "^airlock: trap: unreachable.* in function [0-9]+ \(boom\) at offset 0x" \
    -- "$A" run "$T" --invoke boom
expect "memory out of bounds" 1 "" "^airlock: trap: out of bounds memory access in function [0-9]+ \(oob\)" \
    -- "$A" run "$T" --invoke oob
expect "unbounded recursion" 1 "" "^airlock: trap: call stack exhausted in function [0-9]+ \(deep\)" \
    -- "$A" run "$T" --invoke deep 0
expect "backtrace names the callers" 1 "" "^    called from function [0-9]+ \(middle\) at offset 0x[0-9a-f]+$" \
    -- "$A" run "$T" --invoke nested 0
expect "backtrace reaches the entry function" 1 "" "^    called from function [0-9]+ \(nested\) at offset 0x" \
    -- "$A" run "$T" --invoke nested 0
expect "backtrace collapses recursion" 1 "" "called from function [0-9]+ \(deep\) at offset 0x[0-9a-f]+ \([0-9]+ times\)" \
    -- "$A" run "$T" --invoke deep 0
expect "trap without a name section" 1 "" "^airlock: trap: integer divide by zero in function 0 at offset 0x[0-9a-f]+$" \
    -- "$A" run "$BUILD_DIR/traps-nonames.wasm" --invoke div 1 0
expect "trap in start function" 1 "" "^airlock: trap: unreachable" -- "$A" run "$BUILD_DIR/start-trap.wasm" --invoke f

# ---- bad modules and files ---------------------------------------------------------
expect "missing file" 1 "" "no-such-file.wasm: No such file or directory" -- "$A" run "$BUILD_DIR/no-such-file.wasm"
expect "directory" 1 "" "not a regular file" -- "$A" run "$BUILD_DIR"
rm -f "$BUILD_DIR/fifo.wasm"
if mkfifo "$BUILD_DIR/fifo.wasm" 2>/dev/null; then
    expect "fifo is refused without blocking" 1 "" "not a regular file" -- "$A" run "$BUILD_DIR/fifo.wasm"
    rm -f "$BUILD_DIR/fifo.wasm"
fi
rm -f "$BUILD_DIR/huge.wasm"
truncate -s 300M "$BUILD_DIR/huge.wasm"   # sparse: costs no disk
expect "file over 256 MiB refused" 1 "" "too large" -- "$A" run "$BUILD_DIR/huge.wasm" --invoke f
expect "file over 50 MiB refused (WASI mode)" 65 "" "too large" -- "$A" run "$BUILD_DIR/huge.wasm"
rm -f "$BUILD_DIR/huge.wasm"
: >"$BUILD_DIR/empty.wasm"
expect "empty file" 1 "" "malformed module" -- "$A" run "$BUILD_DIR/empty.wasm" --invoke f
expect "empty file (WASI mode)" 65 "" "not a wasm module" -- "$A" run "$BUILD_DIR/empty.wasm"
head -c 4096 /dev/urandom >"$BUILD_DIR/random.wasm"
expect "random bytes" 1 "" "malformed module" -- "$A" run "$BUILD_DIR/random.wasm" --invoke f
expect "random bytes (WASI mode)" 65 "" "malformed module" -- "$A" run "$BUILD_DIR/random.wasm"
printf '\0asm\1\0\0\0\1\377\377\377\377\17' >"$BUILD_DIR/hugesection.wasm"
expect "section length past the end" 1 "" "malformed module" -- "$A" run "$BUILD_DIR/hugesection.wasm" --invoke f
expect "section length past the end (WASI mode)" 65 "" "malformed module" -- "$A" run "$BUILD_DIR/hugesection.wasm"
size=$(stat -c %s "$SAMPLE")
for cut in 3 9 15 $((size / 2)) $((size - 1)); do
    head -c "$cut" "$SAMPLE" >"$BUILD_DIR/truncated.wasm"
    expect "truncated to $cut bytes" 1 "" "malformed module" -- "$A" run "$BUILD_DIR/truncated.wasm" --invoke fib 1
done
expect "validate truncated names the offset" 1 "" "malformed module: .*(offset|0x)" \
    -- "$A" validate "$BUILD_DIR/truncated.wasm"
expect "validate invalid module" 1 "" "invalid module: " -- "$A" validate "$BUILD_DIR/invalid.wasm"
expect "run invalid module" 1 "" "invalid module: " -- "$A" run "$BUILD_DIR/invalid.wasm" --invoke f
expect "validate missing file" 1 "" "No such file" -- "$A" validate "$BUILD_DIR/no-such-file.wasm"
expect "validate needs a module" 2 "" "usage" -- "$A" validate
expect "link error for imports" 1 "" "link error: .*" -- "$A" run "$BUILD_DIR/needs-import.wasm" --invoke _start
expect "link error explains" 1 "" "provides no imports" -- "$A" run "$BUILD_DIR/needs-import.wasm" --invoke _start
expect "link error explains (WASI mode)" 1 "" "provides only wasi_snapshot_preview1" -- "$A" run "$BUILD_DIR/needs-import.wasm"
expect "validate accepts a module with imports" 0 "ok" "" -- "$A" validate "$BUILD_DIR/needs-import.wasm"

# ---- output errors ----------------------------------------------------------------
if [[ -w /dev/full ]]; then
    expect "write error is reported" 1 "" "writing" -- sh -c "\"\$0\" run \"\$1\" --invoke fib 20 >/dev/full" "$A" "$SAMPLE"
fi

finish
