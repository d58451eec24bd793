# tests/cli/lib/expect.bash — helpers shared by the CLI test scripts
# (sourced, not run: tests/run-all.sh runs only tests/cli/*.sh).
#
# The sourcing script defines pass/fail, $OUT and $ERR (scratch files), and
# may set RUN_TIMEOUT (seconds per command, default 60) and STDIN.
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
