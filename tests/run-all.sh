#!/usr/bin/env bash
# run-all.sh — the whole test suite, as run by `make check` (after `make asan`).
#
#   1. every build/asan/tests/test_* cmocka binary: counts are read from
#      cmocka's "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)" lines;
#      a binary that exits non-zero without reporting a failure (a crash, a
#      sanitizer report) counts as one failure;
#   2. tests/spec/run-spec.sh on build/asan/spec-runner;
#   3. every tests/cli/*.sh, if any;
#   4. the security battery (tests/security/run.sh);
#      then the native/gVisor escape battery (tests/sandbox/run.sh)
#      and the egress tests with real loopback servers (tests/net/run.sh);
#      then airlockd end to end (tests/service/run.sh), capabilities with a
#      real OCI registry (tests/cap/run.sh, tests/service/capabilities.sh) and
#      MCP with the official npm client (tests/mcp/run.sh);
#   5. the WASI differential suite against node:wasi (tests/wasi/compare-node.sh);
#   6. a short libFuzzer run of decode+validate+instantiate+call
#      (tests/fuzz/short.sh, $AIRLOCK_FUZZ_SECONDS, default 20; then a few seconds
#      each of the TLS SNI parser, the HTTP request-head parser, the policy file,
#      airlockd's request bodies and its YAML config).
# Scripts (2, 3) print "N passed, N failed" as their last line; those are
# summed, and a script exiting non-zero without reporting a failure counts as
# one. The last line printed is the grand total, "N passed, N failed"; the exit
# status is non-zero if anything failed.
set -u

cd "$(dirname "$0")/.." || exit 2

export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1

total_passed=0
total_failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

add() { # PASSED FAILED
    total_passed=$((total_passed + $1))
    total_failed=$((total_failed + $2))
}

# cmocka prints "[  PASSED  ] 3 test(s)." and, if any failed, "[  FAILED  ] 1 test(s), listed below:".
count_cmocka() { # LOG TAG -> number after "[  TAG  ]", 0 if absent
    sed -n "s/^\[  $2  \] \([0-9][0-9]*\) test(s).*/\1/p" "$1" | tail -n 1 | grep . || echo 0
}

run_unit_tests() {
    echo "== unit tests =="
    local test rc passed failed found=0
    for test in build/asan/tests/test_*; do
        if [ ! -f "$test" ] || [ ! -x "$test" ]; then continue; fi
        found=1
        rc=0
        "$test" >"$log" 2>&1 || rc=$?
        passed=$(count_cmocka "$log" PASSED)
        failed=$(count_cmocka "$log" FAILED)
        if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
            failed=1
            printf '  %-28s exited with status %d without a cmocka failure report\n' \
                "$(basename "$test")" "$rc"
        fi
        printf '  %-28s %d passed, %d failed\n' "$(basename "$test")" "$passed" "$failed"
        [ "$failed" -gt 0 ] && sed 's/^/      /' "$log"
        add "$passed" "$failed"
    done
    [ $found -eq 1 ] || echo "  (no unit test binaries in build/asan/tests)"
}

# Run a script that ends with "N passed, N failed", showing its output.
run_counting_script() { # SCRIPT ARGS...
    local rc last passed failed
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    last=$(tail -n 1 "$log")
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed=${BASH_REMATCH[1]}
        failed=${BASH_REMATCH[2]}
    else
        echo "  $1: last line is not \"N passed, N failed\"; counted as one failure"
        passed=0 failed=1
    fi
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "  $1 exited with status $rc; counted as one failure"
        failed=1
    fi
    add "$passed" "$failed"
}

run_unit_tests
echo
echo "== spec tests =="
run_counting_script tests/spec/run-spec.sh build/asan/spec-runner
for script in tests/cli/*.sh; do
    [ -f "$script" ] || continue
    echo
    echo "== $script =="
    run_counting_script "$script"
done

echo
echo "== tests/security/run.sh =="
run_counting_script tests/security/run.sh

echo
echo "== tests/sandbox/run.sh (native and gVisor backends) =="
run_counting_script tests/sandbox/run.sh
echo "== tests/net/run.sh (network egress through the proxy) =="
AIRLOCK=build/asan/airlock run_counting_script tests/net/run.sh

echo
echo "== tests/service/run.sh (airlockd: HTTP API, sessions, audit, signals) =="
run_counting_script tests/service/run.sh

echo
echo "== tests/cap/run.sh (capabilities: a real OCI registry, publish, fetch, outbox) =="
AIRLOCK=build/asan/airlock run_counting_script tests/cap/run.sh

echo
echo "== tests/service/capabilities.sh (airlockd: plugins, MCP servlets, publish, retry) =="
run_counting_script tests/service/capabilities.sh

echo
echo "== tests/mcp/run.sh (MCP over stdio and HTTP with the official npm client) =="
run_counting_script tests/mcp/run.sh

echo
echo "== tests/wasi/compare-node.sh (WASI behaviour against node:wasi) =="
AIRLOCK=build/asan/airlock run_counting_script tests/wasi/compare-node.sh

echo
echo "== tests/fuzz/short.sh =="
run_counting_script tests/fuzz/short.sh "${AIRLOCK_FUZZ_SECONDS:-20}"

echo
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
