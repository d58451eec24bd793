# tests/cli/lib/report.bash — the "ok - NAME" / "FAIL - NAME" lines of the CLI
# test scripts and their last line, "N passed, N failed" (summed by
# tests/run-all.sh); finish exits non-zero when anything failed.
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "    $l"; done; }
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit
}
