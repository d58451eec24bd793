# tests/lib/cases.bash — the case bookkeeping shared by the batteries that
# print "PASS backend/name" / "FAIL backend/name: why" per case and end with
# "N passed, N failed" (tests/sandbox/run.sh, tests/net/run.sh).
# The sourcing script sets FILTER (a regex of cases to run; empty: all).
PASSED=0
FAILED=0
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
# fail NAME WHY: the first line of WHY on the FAIL line, the rest indented
fail() {
    local first rest
    first=${2%%$'\n'*}
    echo "FAIL $1: $first"
    if [ "$first" != "$2" ]; then
        rest=${2#*$'\n'}
        printf '%s\n' "$rest" | cut -c1-800 | sed 's/^/    /'
    fi
    FAILED=$((FAILED + 1))
}
want() { [ -z "$FILTER" ] || [[ $1 =~ $FILTER ]]; }
finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
}
