#!/usr/bin/env bash
# tests/cli/test-python.sh — end-to-end tests of `airlock python` (src/cli/python.c):
# CPython 3.11 for wasm32-wasi, built by tools/build-python.sh, run through the
# same policy, limits, exit codes and --json as `airlock run`.
#
# Runs $AIRLOCK (default build/asan/airlock), which finds python.wasm itself
# ($AIRLOCK_PYTHON_DIR, else ../python beside the binary). When python.wasm is
# not built, prints a skip note and "0 passed, 0 failed": nothing is counted as
# passing that did not run. Each check looks at the exit status, stdout
# (exactly) and stderr (by pattern); --json output is parsed with node. A
# sanitizer report on stderr always fails the check. Ends with "N passed, N
# failed"; exits non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
AIRLOCK=${AIRLOCK:-build/asan/airlock}
BUILD_DIR=${BUILD_DIR:-build/cli-fixtures-python}

# shellcheck source=tests/cli/lib/report.bash
source tests/cli/lib/report.bash

if [[ ! -x $AIRLOCK ]]; then
    fail "airlock binary exists" "not found or not executable: $AIRLOCK (run make asan)"
    finish
fi
PYDIR=${AIRLOCK_PYTHON_DIR:-$(dirname "$AIRLOCK")/../python}
if [[ ! -f $PYDIR/python.wasm ]]; then
    echo "skip: no $PYDIR/python.wasm; run tools/build-python.sh to test 'airlock python'"
    finish
fi
if ! command -v node >/dev/null; then
    fail "toolchain available" "need node to parse --json output (run tools/setup.sh)"
    finish
fi

# Everything this run writes is under its own directory; airlock's TMPDIR too,
# so the script copies it makes (and must remove) can be counted.
mkdir -p "$BUILD_DIR"
RUN_DIR=$(mktemp -d "$BUILD_DIR/run.XXXXXX") || exit 2
trap 'rm -rf "$RUN_DIR"' EXIT
export TMPDIR=$RUN_DIR/tmp
mkdir -p "$TMPDIR"
OUT=$RUN_DIR/stdout
ERR=$RUN_DIR/stderr
SCRATCH=$RUN_DIR/scratch
mkdir -p "$SCRATCH"
printf 'from the host\n' >"$SCRATCH/in.txt"
A=$AIRLOCK

# ---- helpers: run_airlock, check, expect, usage_error, json (lib/expect.bash) -----------------
SUBCOMMAND=python
RUN_TIMEOUT=120
# shellcheck source=lib/expect.bash
source "$(dirname "$0")/lib/expect.bash"

# py NAME RC STDOUT STDERR_REGEX CODE [AIRLOCK OPTIONS...] — `airlock python
# OPTIONS -c CODE`.
py() {
    local name=$1 rc=$2 out=$3 err=$4 code=$5
    shift 5
    expect "$name" "$rc" "$out" "$err" -- "$A" python "$@" -c "$code"
}


# No script copy may outlive the run that made it.
tmp_is_empty() { # NAME
    local left
    left=$(ls -A "$TMPDIR")
    check "$1" "$([[ -z $left ]] || echo "left in TMPDIR: $left")"
}

# ---- -c, arguments, stdin --------------------------------------------------------------
py "print(1)" 0 "1" "" 'print(1)'
expect "-c with arguments after --" 0 "['-c', 'a', 'b c', '--x', '-5']" "" \
    -- "$A" python -c 'import sys; print(sys.argv)' -- a "b c" --x -5
expect "options after -c" 0 "1" "" -- "$A" python -c 'print(1)' --timeout 60s
py "the guest's stdin is empty by default" 0 "''" "" 'import sys; print(repr(sys.stdin.read()))'
STDIN=$SCRATCH/in.txt py "airlock's stdin is not inherited by -c" 0 "''" "" \
    'import sys; print(repr(sys.stdin.read()))'
STDIN=$SCRATCH/in.txt py "--stdin - gives -c airlock's stdin" 0 "'from the host\n'" "" \
    'import sys; print(repr(sys.stdin.read()))' --stdin -

printf 'import sys\nprint("stdin program", sys.argv)\n' >"$RUN_DIR/prog.py"
STDIN=$RUN_DIR/prog.py expect "program on stdin" 0 "stdin program ['-c']" "" -- "$A" python
STDIN=$RUN_DIR/prog.py expect "program on stdin as '-', with arguments" 0 \
    "stdin program ['-c', 'x', 'y']" "" -- "$A" python - -- x y
printf 'import sys\nprint(repr(sys.stdin.read()))\n' >"$RUN_DIR/echo.py"
STDIN=$RUN_DIR/echo.py expect "program on stdin: the guest's stdin is empty" 0 "''" "" -- "$A" python
STDIN=$RUN_DIR/echo.py expect "program on stdin, --stdin FILE for the guest" 0 "'from the host\n'" "" \
    -- "$A" python --stdin "$SCRATCH/in.txt"
printf 'print(1)\0\n' >"$RUN_DIR/nul.py"
STDIN=$RUN_DIR/nul.py expect "program on stdin with a NUL byte" 1 "" \
    "^airlock python: the program on stdin contains a NUL byte$" -- "$A" python
head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' '#' >"$RUN_DIR/huge.py"
STDIN=$RUN_DIR/huge.py expect "program on stdin over 16 MiB" 1 "" \
    "^airlock python: the program on stdin is larger than 16 MiB$" -- "$A" python

# ---- FILE ------------------------------------------------------------------------------
mkdir -p "$RUN_DIR/proj"
printf 'secret next to the script\n' >"$RUN_DIR/proj/secret.txt"
cat >"$RUN_DIR/proj/x.py" <<'EOF'
import os, sys
print(__file__, sys.argv, sys.path[0])
print(sorted(os.listdir(os.path.dirname(__file__))))
try:
    open(os.path.join(os.path.dirname(__file__), "secret.txt")).read()
    print("secret readable")
except OSError as e:
    print("secret:", type(e).__name__)
EOF
expect "FILE runs as /script/NAME, alone" 0 \
    $'/script/x.py [\'/script/x.py\', \'a b\'] /script\n[\'x.py\']\nsecret: FileNotFoundError' "" \
    -- "$A" python "$RUN_DIR/proj/x.py" -- "a b"
tmp_is_empty "FILE: the copy is removed after the run"
printf 'import sys\nprint(1 / int(sys.argv[1]))\n' >"$RUN_DIR/proj/boom.py"
expect "FILE: an exception exits 1 with the traceback on stderr" 1 "" \
    '^  File "/script/boom.py", line 2, in <module>$' -- "$A" python "$RUN_DIR/proj/boom.py" -- 0
grep -q '^ZeroDivisionError: division by zero$' "$ERR"
check "FILE: the traceback names the exception" "$([[ $? -eq 0 ]] || echo "no ZeroDivisionError line: $(cat "$ERR")")"
tmp_is_empty "FILE: the copy is removed after a failing run"
printf 'import sys\nsys.exit(7)\n' >"$RUN_DIR/proj/seven.py"
expect "FILE: sys.exit(7)" 7 "" "" -- "$A" python "$RUN_DIR/proj/seven.py"
expect "FILE: missing" 1 "" "^airlock python: .*/no-such.py: No such file or directory$" \
    -- "$A" python "$RUN_DIR/no-such.py"
expect "FILE: a directory" 1 "" "^airlock python: .*/proj: not a regular file$" \
    -- "$A" python "$RUN_DIR/proj"
expect "FILE: over 16 MiB" 1 "" "^airlock python: .*/huge.py: larger than the 16 MiB limit$" \
    -- "$A" python "$RUN_DIR/huge.py"
tmp_is_empty "FILE: nothing left behind by refused files"

# A run ended by a signal still removes its copy.
printf 'while True: pass\n' >"$RUN_DIR/proj/spin.py"
"$A" python "$RUN_DIR/proj/spin.py" >"$OUT" 2>"$ERR" </dev/null &
pid=$!
for _ in $(seq 100); do [[ -n $(ls -A "$TMPDIR") ]] && break; sleep 0.05; done
sleep 0.5
kill -TERM "$pid"
wait "$pid"
RC=$?
check "FILE: SIGTERM ends the run and removes the copy" \
    "$([[ $RC -eq 143 ]] || echo "exit status $RC, want 143 (SIGTERM)")" \
    "$(left=$(ls -A "$TMPDIR"); [[ -z $left ]] || echo "left in TMPDIR: $left")"

# ---- the standard library ------------------------------------------------------------------
py "stdlib modules import and work" 0 "ok" "" '
import json, re, hashlib, math, collections, datetime, decimal, fractions, statistics
import zlib, base64, struct, itertools, functools, random, string, textwrap, csv, io
import unicodedata, heapq, bisect, dataclasses, typing, enum, pathlib, argparse, difflib
assert json.loads(json.dumps({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]}
assert re.sub(r"(\d+)", r"<\1>", "a12b3") == "a<12>b<3>"
assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf8f01cfea")
assert hashlib.md5(b"").hexdigest() == "d41d8cd98f00b204e9800998ecf8427e"
assert math.isclose(math.sqrt(2) ** 2, 2)
assert collections.Counter("abca")["a"] == 2
assert datetime.date(2024, 2, 28) + datetime.timedelta(days=1) == datetime.date(2024, 2, 29)
assert decimal.Decimal("0.1") + decimal.Decimal("0.2") == decimal.Decimal("0.3")
assert zlib.decompress(zlib.compress(b"x" * 1000)) == b"x" * 1000
assert unicodedata.name("é") == "LATIN SMALL LETTER E WITH ACUTE"
print("ok")'
py "sqlite3 is not built (no _sqlite3)" 0 "ModuleNotFoundError _sqlite3" "" '
try:
    import sqlite3
except ImportError as e:
    print(type(e).__name__, e.name)'
py "the stdlib is read-only (EROFS)" 0 "OSError 69" "" '
try:
    open("/usr/local/lib/python3.11/evil.py", "w")
except OSError as e:
    print(type(e).__name__, e.errno)'

# ---- zero trust: files, environment, network -----------------------------------------------
py "open('/etc/passwd') is refused" 0 "PermissionError 76" "" '
try:
    print(open("/etc/passwd").read())
except OSError as e:
    print(type(e).__name__, e.errno)'
py "os.listdir('/') is refused without a grant there" 0 "PermissionError 76" "" '
import os
try:
    print(os.listdir("/"))
except OSError as e:
    print(type(e).__name__, e.errno)'
py "os.listdir on the stdlib preopen works" 0 "True" "" \
    'import os; print("os.py" in os.listdir("/usr/local/lib/python3.11"))'
mkdir -p "$RUN_DIR/root/only"
py "with --dir HOST:/, os.listdir('/') shows HOST only" 0 "['only']" "" \
    'import os; print(sorted(os.listdir("/")))' --dir "$RUN_DIR/root:/"
expect "os.environ is PYTHONHOME only" 0 "{'PYTHONHOME': '/usr/local'}" "" \
    -- env SECRET=x HOME=/root "$A" python -c 'import os; print(dict(os.environ))'
py "--env adds to os.environ" 0 "{'FOO': 'bar', 'PYTHONHOME': '/usr/local'}" "" \
    'import os; print(dict(sorted(os.environ.items())))' --env FOO=bar
py "socket connect fails" 0 "refused OSError" "" '
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", 80))
    print("connected")
except OSError as e:
    print("refused", type(e).__name__)'
py "no subprocess" 0 "refused" "" '
import os
try:
    os.system("id")
    print("ran")
except (AttributeError, OSError):
    print("refused")'

# ---- --dir ------------------------------------------------------------------------------------
rm -f "$SCRATCH/out.txt"
py "--dir rw: a write appears on the host" 0 "wrote" "" \
    'open("/data/out.txt", "w").write("from python\n"); print("wrote")' --dir "$SCRATCH:/data:rw"
check "--dir rw: the host file has the content" \
    "$([[ $(cat "$SCRATCH/out.txt" 2>&1) == "from python" ]] || echo "out.txt: $(cat "$SCRATCH/out.txt" 2>&1)")"
rm -f "$SCRATCH/out.txt"
py "--dir ro: read works" 0 "from the host" "" 'print(open("/data/in.txt").read(), end="")' \
    --dir "$SCRATCH:/data"
py "--dir ro: a write raises (EROFS)" 0 "OSError 69" "" '
try:
    open("/data/out.txt", "w")
except OSError as e:
    print(type(e).__name__, e.errno)' --dir "$SCRATCH:/data:ro"
check "--dir ro: nothing written on the host" "$([[ -e $SCRATCH/out.txt ]] && echo "out.txt was created")"

# ---- limits -------------------------------------------------------------------------------------
py "--timeout: while True" 72 "" "^airlock: timeout: still running after 2000 ms" \
    'while True: pass' --timeout 2s
check "--timeout: stopped in time" "$([[ $ELAPSED_MS -lt 30000 ]] || echo "took $ELAPSED_MS ms")"
# Start-up alone costs about 80M fuel: 10M stops Python before it runs a line.
py "--fuel 10000000: exhausted (during start-up)" 71 "" \
    "^airlock: fuel exhausted: the budget of 10000000 instructions is spent" \
    'for i in range(10**9): pass' --fuel 10000000
py "--fuel 300000000: print(1) fits" 0 "1" "" 'print(1)' --fuel 300000000
py "--fuel 300000000: a long loop does not" 71 "" "^airlock: fuel exhausted" \
    'for i in range(10**9): pass' --fuel 300000000
HOG='x = []
while True:
    x.append(bytes(1 << 20))'
py "--memory 64M: uncaught MemoryError is the memory limit" 73 "" \
    "^airlock: memory limit \(67108864 bytes\): memory.grow refused" "$HOG" --memory 64M
grep -q '^MemoryError$' "$ERR"
check "--memory 64M: the traceback shows MemoryError" "$([[ $? -eq 0 ]] || echo "$(head -c 300 "$ERR")")"
py "--memory 64M: MemoryError can be handled" 0 "caught" "" '
x = []
try:
    while True:
        x.append(bytes(1 << 20))
except MemoryError:
    n = len(x)
    x = None
    print("caught" if 32 < n < 64 else "count %d" % n)' --memory 64M
py "--memory 64M --trap-on-memory-limit: a trap" 73 "" "^airlock: memory limit" \
    "$HOG" --memory 64M --trap-on-memory-limit

# ---- output caps -------------------------------------------------------------------------
py "5 MiB printed: 1 MiB kept" 0 "*" "^airlock: warning: the guest's stdout was cut at 1048576 bytes$" \
    'import sys; sys.stdout.write("x" * (5 << 20))'
check "5 MiB printed: exactly 1 MiB captured" \
    "$(n=$(wc -c <"$OUT"); [[ $n -eq 1048576 ]] || echo "stdout has $n bytes")"
json "5 MiB printed" 0 \
    'd.status === "output_truncated" && d.stdout_truncated && d.stdout.length === 1048576 && !d.stderr_truncated' \
    -- "$A" python --json -c 'import sys; sys.stdout.write("x" * (5 << 20))'

# ---- recursion ----------------------------------------------------------------------------------
py "def f(): f() is a RecursionError" 1 "" "^RecursionError: maximum recursion depth exceeded$" \
    'def f(): f()
f()'
# Python calls do not recurse in C in 3.11, but repr of a nested list does:
# the engine's 10000-frame limit stops it, as a trap, before the host suffers.
py "C recursion past the engine's frame limit traps" 70 "" \
    "^airlock: trap: call stack exhausted in function [0-9]+ \(" '
import sys
sys.setrecursionlimit(10**6)
l = []
for i in range(10**5):
    l = [l]
repr(l)'
# Bigger C frames run out of the guest's own 512 KiB stack first: the stack
# pointer goes below 0 and the access traps (wasm-ld puts the stack first).
py "C recursion past the guest's stack traps" 70 "" \
    "^airlock: trap: (out of bounds memory access|call stack exhausted) in function" '
import sys
sys.setrecursionlimit(10**6)
class A:
    def __repr__(self): return repr(self)
repr(A())'

# ---- --json -------------------------------------------------------------------------------------
json "print(1)" 0 \
    'd.status === "ok" && d.exit_code === 0 && d.trap === null && d.stdout === "1\n" && d.stderr === "" &&
     d.error === null && d.fuel_used > 1e6 && d.peak_memory_bytes >= 10485760 &&
     d.dirs.length === 1 && d.dirs[0].guest === "/usr/local/lib/python3.11" && d.dirs[0].read_only' \
    -- "$A" python --json -c 'print(1)'
json "FILE: /script is granted read-only" 1 \
    'd.status === "exit" && d.exit_code === 1 && /ZeroDivisionError/.test(d.stderr) &&
     d.dirs.some(x => x.guest === "/script" && x.read_only) && d.dirs.length === 3' \
    -- "$A" python --json --dir "$SCRATCH:/data" "$RUN_DIR/proj/boom.py" -- 0
tmp_is_empty "--json FILE: the copy is removed"
json "sys.exit(3)" 3 'd.status === "exit" && d.exit_code === 3' \
    -- "$A" python --json -c 'import sys; sys.exit(3)'
json "timeout" 72 'd.status === "timeout" && d.trap === "interrupted" && d.error !== null' \
    -- "$A" python --json --timeout 1s -c 'while True: pass'
json "trap" 70 'd.status === "trap" && d.trap === "call stack exhausted" && d.trap_location !== null' \
    -- "$A" python --json -c 'import sys
sys.setrecursionlimit(10**6)
l = []
for i in range(10**5): l = [l]
repr(l)'
json "missing FILE" 1 'd.status === "error" && /no-such.py: No such file or directory/.test(d.error)' \
    -- "$A" python --json "$RUN_DIR/no-such.py"

# ---- finding python.wasm ---------------------------------------------------------------------
PYABS=$(cd "$PYDIR" && pwd)
expect "AIRLOCK_PYTHON_DIR" 0 "1" "" -- env AIRLOCK_PYTHON_DIR="$PYABS" "$A" python -c 'print(1)'
expect "AIRLOCK_PYTHON_DIR without python.wasm" 1 "" \
    "^airlock python: no CPython for WASI: /.*/scratch/python.wasm: .*tools/build-python.sh" \
    -- env AIRLOCK_PYTHON_DIR="$SCRATCH" "$A" python -c 'print(1)'
check "AIRLOCK_PYTHON_DIR without python.wasm: one line" \
    "$(n=$(wc -l <"$ERR"); [[ $n -eq 1 ]] || echo "$n lines")"
json "AIRLOCK_PYTHON_DIR without python.wasm" 1 'd.status === "error" && /build-python/.test(d.error)' \
    -- env AIRLOCK_PYTHON_DIR="$SCRATCH" "$A" python --json -c 'print(1)'

# ---- the command line ---------------------------------------------------------------------------
run_airlock "$A" python --help
check "--help" "$([[ $RC -eq 0 ]] || echo "exit $RC")" \
    "$(grep -q '^usage: airlock python' "$OUT" || echo "no usage line on stdout")"
run_airlock "$A" help
check "airlock help lists python" "$(grep -q '^  python ' "$OUT" || echo "not listed")"
usage_error "-c needs code" "^airlock python: -c needs the code to run$" -c
usage_error "-c twice" "^airlock python: -c given twice$" -c 1 -c 2
usage_error "-c and FILE" "^airlock python: give either -c CODE or a FILE, not both" -c 1 x.py
usage_error "FILE and -c" "^airlock python: give either -c CODE or a FILE, not both" x.py -c 1
usage_error "a stray word" "^airlock python: unexpected argument 'b.py' \(the program's arguments go after '--'\)$" \
    a.py b.py
usage_error "unknown option" "^airlock python: unknown option '--invoke' \(see 'airlock python --help'\)$" \
    --invoke f
usage_error "unknown short option" "^airlock python: unknown option '-u'" -u -c 1
usage_error "--fuel 0" "^airlock python: --fuel '0': must be greater than zero$" --fuel 0 -c 1
usage_error "--memory twice" "^airlock python: --memory given twice$" --memory 64M --memory 64M -c 1
usage_error "--json=x" "^airlock python: --json: takes no value$" --json=x -c 1
usage_error "--stdin - with the program on stdin" "^airlock python: --stdin - cannot be used" --stdin -
usage_error "--dir at /script" "^airlock python: --dir: the guest path '/script' is reserved for the script" \
    --dir "$SCRATCH:/script" -c 1
usage_error "--dir under /script" "reserved for the script" --dir "$SCRATCH:/script/sub" -c 1
usage_error "--dir at the stdlib" "reserved for the standard library" \
    --dir "$SCRATCH:/usr/local/lib/python3.11/" -c 1
py "--dir under the stdlib (dist-packages) is allowed" 0 "True" "" \
    'import os; print(os.path.isfile("/usr/local/lib/python3.11/dist-packages/in.txt"))' \
    --dir "$SCRATCH:/usr/local/lib/python3.11/dist-packages"

tmp_is_empty "nothing left in TMPDIR at the end"
finish
