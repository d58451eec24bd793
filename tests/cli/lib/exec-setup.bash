# tests/cli/lib/exec-setup.bash — the common start of the `airlock exec`
# test scripts (test-exec.sh, test-egress-flags.sh; test-plugin.sh too, which
# then sets its own SUBCOMMAND, RUN_TIMEOUT and EXIT trap), sourced from the
# repository root: the binary under test ($AIRLOCK, default
# build/asan/airlock) in $A, the case bookkeeping (report.bash), a private
# $TMP with $OUT/$ERR, the run-and-expect helpers (expect.bash), and an
# early finish when the binary is missing.
A=${AIRLOCK:-build/asan/airlock}
SUBCOMMAND=exec
RUN_TIMEOUT=60
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# shellcheck source=tests/cli/lib/report.bash
source tests/cli/lib/report.bash

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out
ERR=$TMP/err
# shellcheck source=tests/cli/lib/expect.bash
source tests/cli/lib/expect.bash

if [[ ! -x $A ]]; then
    fail "airlock binary exists" "not found: $A (run make asan)"
    finish
fi
