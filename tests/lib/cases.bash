# tests/lib/cases.bash — the case bookkeeping shared by the batteries that
# print "PASS backend/name" / "FAIL backend/name: why" per case and end with
# "N passed, N failed" (tests/sandbox/run.sh, tests/net/run.sh).
# The sourcing script sets FILTER (a regex of cases to run; empty: all).
HOST_PY=/usr/bin/python3 # the host side's python (the guests use the sandbox's)
[ -x "$HOST_PY" ] || HOST_PY=python3
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
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

# doctor PATH: a field of `airlock doctor --json` (saved by the sourcing
# script in $T/doctor.json), by dotted path (backends.gvisor.available);
# empty when absent
doctor() {
    "$HOST_PY" - "$T/doctor.json" "$1" <<'EOF'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
    for key in sys.argv[2].split("."):
        v = v[key]
except (OSError, ValueError, KeyError, TypeError):
    v = None
print("" if v is None else v if isinstance(v, str) else json.dumps(v))
EOF
}
