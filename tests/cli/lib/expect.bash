# tests/cli/lib/expect.bash — helpers shared by the CLI test scripts
# (sourced, not run: tests/run-all.sh runs only tests/cli/*.sh).
#
# The sourcing script defines pass/fail, $OUT and $ERR (scratch files), and
# may set RUN_TIMEOUT (seconds per command, default 60) and STDIN; usage_error
# runs `$A $SUBCOMMAND ...`.
san_re='ERROR: (Address|Leak)Sanitizer|runtime error:'
ELAPSED_MS=0

# run_airlock COMMAND... — stdout/stderr to $OUT/$ERR, stdin from $STDIN
# (default /dev/null); sets RC and ELAPSED_MS.
run_airlock() {
    local t0 t1
    t0=$(date +%s%N)
    timeout "${RUN_TIMEOUT:-60}" "$@" >"$OUT" 2>"$ERR" <"${STDIN:-/dev/null}"
    RC=$?
    t1=$(date +%s%N)
    ELAPSED_MS=$(((t1 - t0) / 1000000))
}

# check NAME PROBLEMS... — pass when every PROBLEM is empty.
check() {
    local name=$1 p
    shift
    local problems=()
    for p in "$@"; do [[ -z $p ]] || problems+=("$p"); done
    if grep -Eq "$san_re" "$ERR"; then
        problems+=("sanitizer report: $(grep -Em1 "$san_re" "$ERR")")
    fi
    if ((${#problems[@]} == 0)); then pass "$name"; else fail "$name" "${problems[@]}"; fi
}

# expect NAME RC STDOUT STDERR_REGEX -- COMMAND...
#   STDOUT is compared exactly ("*" accepts anything); STDERR_REGEX is an
#   extended regex that stderr must match ("" means stderr must be empty).
expect() {
    local name=$1 want_rc=$2 want_out=$3 err_re=$4
    shift 5
    run_airlock "$@"
    local out problems=()
    out=$(cat "$OUT")
    [[ $RC -eq $want_rc ]] || problems+=("exit status $RC, want $want_rc")
    if [[ $want_out != "*" && $out != "$want_out" ]]; then
        problems+=("stdout: $(printf %q "${out:0:300}")" "  want: $(printf %q "$want_out")")
    fi
    if [[ -z $err_re ]]; then
        [[ ! -s $ERR ]] || problems+=("unexpected stderr: $(head -c 300 "$ERR")")
    elif ! grep -Eq -- "$err_re" "$ERR"; then
        problems+=("stderr does not match /$err_re/: $(head -c 300 "$ERR")")
    fi
    ((${#problems[@]} == 0)) || problems=("command: ${*:1:6}" "${problems[@]}")
    check "$name" "${problems[@]}"
}

# usage_error NAME STDERR_REGEX ARGS... — `$A $SUBCOMMAND ARGS...` exits 2,
# nothing on stdout, exactly one line on stderr.
usage_error() {
    local name=$1 err_re=$2
    shift 2
    run_airlock "$A" "$SUBCOMMAND" "$@"
    local problems=() lines
    lines=$(wc -l <"$ERR")
    [[ $RC -eq 2 ]] || problems+=("exit status $RC, want 2")
    [[ ! -s $OUT ]] || problems+=("unexpected stdout: $(head -c 200 "$OUT")")
    [[ $lines -eq 1 ]] || problems+=("stderr has $lines lines, want 1: $(head -c 300 "$ERR")")
    grep -Eq -- "$err_re" "$ERR" || problems+=("stderr does not match /$err_re/: $(cat "$ERR")")
    check "usage: $name" "${problems[@]}"
}

# json NAME RC JS_CONDITION -- COMMAND... — the command prints one JSON object
# (parsed by node as d) for which JS_CONDITION holds, and exits with RC.
JSON_FIELDS='["status","exit_code","trap","trap_location","fuel_used","wall_ms",
  "peak_memory_bytes","stdout","stdout_truncated","stderr","stderr_truncated","dirs","error"]'
json() {
    local name=$1 want_rc=$2 cond=$3
    shift 4
    run_airlock "$@"
    local problems=() why
    [[ $RC -eq $want_rc ]] || problems+=("exit status $RC, want $want_rc")
    [[ ! -s $ERR ]] || problems+=("unexpected stderr: $(head -c 300 "$ERR")")
    why=$(node -e '
        const fs = require("fs");
        const text = fs.readFileSync(process.argv[1], "utf8");
        let d;
        try { d = JSON.parse(text); } catch (e) { console.log("not JSON: " + e.message); process.exit(1); }
        if (text.split("\n").filter(Boolean).length !== 1) { console.log("not one line"); process.exit(1); }
        const missing = '"$JSON_FIELDS"'.filter(k => !(k in d));
        if (missing.length) { console.log("missing fields: " + missing); process.exit(1); }
        if (!('"$cond"')) { console.log("condition failed: " + JSON.stringify(d).slice(0, 600)); process.exit(1); }
    ' "$OUT" 2>&1) || problems+=("$why")
    ((${#problems[@]} == 0)) || problems=("command: ${*:1:6}" "${problems[@]}")
    check "json: $name" "${problems[@]}"
}
