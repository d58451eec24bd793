#!/usr/bin/env bash
# tests/cli/test-audit.sh — end-to-end tests of `airlock audit` (src/cli/audit.c)
# over databases written by the real writer (src/service/audit.c).
#
# The rows are written by a small C program built here from src/service/audit.c
# (with gcc, against $(dirname $AIRLOCK)/libairlock.a for al_status_name): it
# opens the database like airlockd and runs begin/end/abort commands read from
# stdin. One writer is killed with SIGKILL while an execution runs, as the
# issue's reliability test does to airlockd, and the next open must mark that
# execution aborted. python3's sqlite3 module only pins start times (so time
# filters are exact), plays a concurrent writer and a newer airlock; --json is
# checked with python3 too. Each check looks at the exit status, stdout and
# stderr; a sanitizer report on stderr fails it. Ends with "N passed, N
# failed"; exits non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
AIRLOCK=${AIRLOCK:-build/asan/airlock}
LIB_DIR=${AIRLOCK_LIB_DIR:-$(dirname "$AIRLOCK")}
BUILD_DIR=${BUILD_DIR:-build/cli-audit}

# shellcheck source=tests/cli/lib/report.bash
source tests/cli/lib/report.bash

if [[ ! -x $AIRLOCK ]]; then
    fail "airlock binary exists" "not found or not executable: $AIRLOCK (run make asan)"
    finish
fi
for tool in python3 gcc pkg-config; do
    if ! command -v $tool >/dev/null; then
        fail "toolchain available" "need $tool (run tools/setup.sh)"
        finish
    fi
done

mkdir -p "$BUILD_DIR"
RUN_DIR=$(mktemp -d "$BUILD_DIR/run.XXXXXX") || exit 2
WRITER_PID=
cleanup() {
    [[ -n $WRITER_PID ]] && kill -9 "$WRITER_PID" 2>/dev/null
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT
OUT=$RUN_DIR/stdout
ERR=$RUN_DIR/stderr
DB=$RUN_DIR/audit.db
A=$AIRLOCK
unset AIRLOCK_AUDIT_DB

SUBCOMMAND=audit
RUN_TIMEOUT=60
# shellcheck source=lib/expect.bash
source "$(dirname "$0")/lib/expect.bash"

# ---- the writer: src/service/audit.c driven by stdin ---------------------------------------
# Commands, one a line, fields separated by tabs:
#   begin TOKEN SESSION KIND BACKEND SHA256   -> prints the id
#   end ID STATUS EXIT_CODE SIGNAL WALL_MS REDACTIONS -> prints "ok" or "fail"
#   abort ID REASON                          -> prints "ok" or "fail"
#   hang                                     -> prints "hanging", waits to be killed
# On open it prints "aborted N" (executions a dead writer left running).
cat >"$RUN_DIR/writer.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "service.h"

static al_status status_of(const char *name) {
    for (int s = AL_STATUS_OK; s <= AL_STATUS_CANCELLED; s++)
        if (!strcmp(name, al_status_name((al_status)s))) return (al_status)s;
    return AL_STATUS_ERROR;
}

int main(int argc, char **argv) {
    char err[256], line[4096];
    unsigned aborted = 0;
    if (argc != 2) return 2;
    svc_audit *a = svc_audit_open(argv[1], &aborted, err, sizeof err);
    if (!a) { fprintf(stderr, "%s\n", err); return 1; }
    printf("aborted %u\n", aborted);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        char *f[8] = {0};
        int n = 0;
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        for (char *p = line; n < 8; n++) {
            f[n] = p;
            char *tab = strchr(p, '\t');
            if (!tab) { n++; break; }
            *tab = 0;
            p = tab + 1;
        }
        if (!strcmp(f[0], "begin") && n == 6) {
            svc_audit_start s = {.token = f[1], .session = f[2], .kind = f[3], .backend = f[4],
                                 .code_sha256 = f[5], .source = "http",
                                 .policy_json = "{\"network\":false}",
                                 .limits_json = "{\"timeout_ms\":30000,\"fuel\":1000000000}"};
            printf("%lld\n", (long long)svc_audit_begin(a, &s));
        } else if (!strcmp(f[0], "end") && n == 7) {
            al_result r = {.status = status_of(f[2]), .exit_code = atoi(f[3]),
                           .term_signal = atoi(f[4]),
                           .wall_ns = strtoull(f[5], NULL, 10) * 1000000,
                           .limits_hit = AL_LIMIT_WALL};
            if (r.status == AL_STATUS_CANCELLED) /* the cancel reason, as the backends set it */
                snprintf(r.error.message, sizeof r.error.message, "shutdown");
            svc_audit_finish fin = {.result = &r, .redactions = (unsigned)atoi(f[6]),
                                    .redaction_kinds_json = "[\"bearer_token\"]"};
            puts(svc_audit_end(a, strtoll(f[1], NULL, 10), &fin) ? "ok" : "fail");
        } else if (!strcmp(f[0], "abort") && n == 3) {
            puts(svc_audit_abort(a, strtoll(f[1], NULL, 10), f[2]) ? "ok" : "fail");
        } else if (!strcmp(f[0], "hang")) {
            puts("hanging");
            fflush(stdout);
            for (;;) pause();
        } else {
            printf("bad command: %s\n", f[0]);
        }
        fflush(stdout);
    }
    svc_audit_close(a);
    return 0;
}
EOF
WRITER=$RUN_DIR/writer
# shellcheck disable=SC2046
if ! gcc -std=c17 -D_GNU_SOURCE -g -fsanitize=address,undefined -Iinclude -Isrc/service \
    $(pkg-config --cflags jansson) -o "$WRITER" "$RUN_DIR/writer.c" src/service/audit.c \
    "$LIB_DIR/libairlock.a" -lsqlite3 $(pkg-config --libs jansson) -lseccomp -lcap -lpthread -lm \
    2>"$ERR"; then
    fail "build the audit writer" "$(head -c 600 "$ERR")"
    finish
fi

# write DB COMMANDS — run the writer over COMMANDS (a here-string); its stdout in $OUT.
write() {
    "$WRITER" "$1" >"$OUT" 2>"$ERR" <<<"$2"
}

# sql DB STATEMENT... — python3's sqlite3 on the file (fixtures and inspection).
sql() {
    python3 - "$@" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
for s in sys.argv[2:]:
    for row in db.execute(s):
        print("|".join(str(v) for v in row))
EOF
}

# pyjson NAME RC PY_CONDITION -- COMMAND... — the command prints a JSON array
# (parsed by python3 as d) for which PY_CONDITION holds, and exits with RC.
pyjson() {
    local name=$1 want_rc=$2 cond=$3
    shift 4
    run_airlock "$@"
    local problems=() why
    [[ $RC -eq $want_rc ]] || problems+=("exit status $RC, want $want_rc")
    [[ ! -s $ERR ]] || problems+=("unexpected stderr: $(head -c 300 "$ERR")")
    why=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
print("" if ok else "condition false: " + sys.argv[2] + " on " + json.dumps(d)[:400])
' "$OUT" "$cond" 2>&1)
    [[ -z $why ]] || problems+=("$why")
    check "$name" "${problems[@]}"
}

SHA=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
EVIL="x'); DROP TABLE executions; --"
ESC=$'\e[31mred'
TAB=$'\t'

# ---- usage ---------------------------------------------------------------------------------
expect "--help" 0 "*" "" -- "$A" audit --help
grep -q '^usage: airlock audit' "$OUT" && pass "--help prints the usage" ||
    fail "--help prints the usage" "$(head -c 200 "$OUT")"
usage_error "unknown option" "unknown option '--frobnicate'" --frobnicate
usage_error "positional argument" "unexpected argument 'extra'" extra
usage_error "--token without a value" "--token needs a value" --token
usage_error "--limit 0" "--limit '0'" --limit 0
usage_error "--limit too large" "--limit '10001'" --limit 10001
usage_error "--limit not a number" "--limit '5x'" --limit=5x
usage_error "--status unknown" "--status 'finished'" --status finished
usage_error "--since garbage" "--since 'yesterday'" --since yesterday
usage_error "--since month 13" "--since" --since 2026-13-01T00:00:00Z
usage_error "--since February 30" "--since" --since 2026-02-30
usage_error "--until without offset" "--until" --until 2026-11-21T10:00:00
usage_error "--until bad minute" "--until" --until 2026-11-21T10:60:00Z
usage_error "--since before 1970" "--since" --since 1000000d
usage_error "--since unit" "--since" --since 10y
usage_error "--db missing file" "no-such\.db: No such file" --db "$RUN_DIR/no-such.db"
usage_error "--db empty" "--db needs a file" --db=
AIRLOCK_AUDIT_DB=$RUN_DIR/nothing.db usage_error "\$AIRLOCK_AUDIT_DB missing file" \
    "nothing\.db: No such file"

# ---- a database written by the real writer ----------------------------------------------------
write "$DB" "begin${TAB}alice${TAB}s1${TAB}python${TAB}wasm${TAB}$SHA
begin${TAB}bob${TAB}${TAB}command${TAB}native${TAB}$SHA
begin${TAB}alice${TAB}s2${TAB}python${TAB}wasm${TAB}$SHA
begin${TAB}$EVIL${TAB}${TAB}python${TAB}wasm${TAB}$SHA
begin${TAB}$ESC${TAB}${TAB}wasm${TAB}wasm${TAB}$SHA
end${TAB}1${TAB}ok${TAB}0${TAB}0${TAB}15${TAB}0
end${TAB}2${TAB}signaled${TAB}0${TAB}9${TAB}250${TAB}0
end${TAB}3${TAB}exit${TAB}3${TAB}0${TAB}40${TAB}2
end${TAB}4${TAB}timeout${TAB}0${TAB}0${TAB}30000${TAB}0
abort${TAB}5${TAB}airlockd shutting down"
[[ $(tr '\n' ' ' <"$OUT") == "aborted 0 1 2 3 4 5 ok ok ok ok ok " ]] &&
    pass "writer: five executions begun, four ended, one aborted" ||
    fail "writer: five executions begun, four ended, one aborted" "$(cat "$OUT" "$ERR")"
mode=$(stat -c %a "$DB")
[[ $mode == 600 ]] && pass "the database is created 0600" ||
    fail "the database is created 0600" "mode $mode"
[[ $(sql "$DB" "PRAGMA journal_mode") == wal ]] && pass "the database is in WAL mode" ||
    fail "the database is in WAL mode" "$(sql "$DB" "PRAGMA journal_mode")"
# start times 2023-11-14T22:13:20Z plus id minutes, so time filters are exact
sql "$DB" "UPDATE executions SET started_ms = 1700000000000 + id * 60000"

# ---- kill -9 of the writer while an execution runs -------------------------------------------
coproc WRITER_PROC { exec "$WRITER" "$DB" 2>"$RUN_DIR/writer.err"; }
WRITER_PID=$WRITER_PROC_PID
printf 'begin\tdave\ts9\tpython\twasm\t%s\nhang\n' "$SHA" >&"${WRITER_PROC[1]}"
read -r -t 20 l1 <&"${WRITER_PROC[0]}"
read -r -t 20 l2 <&"${WRITER_PROC[0]}"
read -r -t 20 l3 <&"${WRITER_PROC[0]}"
[[ "$l1 $l2 $l3" == "aborted 0 6 hanging" ]] && pass "a writer with a running execution" ||
    fail "a writer with a running execution" "got '$l1 $l2 $l3'" "$(cat "$RUN_DIR/writer.err")"
# while the writer holds the database open, the reader sees the running row and changes nothing
pyjson "reads while the writer is open" 0 \
    'len(d) == 1 and d[0]["id"] == 6 and d[0]["status"] == "running" and d[0]["finished_ms"] is None' \
    -- "$A" audit --db "$DB" --status running --json
{ kill -9 "$WRITER_PID" && wait "$WRITER_PID"; } 2>/dev/null # (bash's "Killed" notice too)
WRITER_PID=
pyjson "after kill -9 the execution is still running in the file" 0 'len(d) == 1' \
    -- "$A" audit --db "$DB" --status running --json
write "$DB" ""
[[ $(cat "$OUT") == "aborted 1" ]] && pass "reopen marks the killed writer's execution aborted" ||
    fail "reopen marks the killed writer's execution aborted" "$(cat "$OUT" "$ERR")"
sql "$DB" "UPDATE executions SET started_ms = 1700000000000 + id * 60000"
pyjson "the aborted execution and its reason" 0 \
    '[r["id"] for r in d] == [6, 5] and d[0]["abort_reason"].startswith("airlockd stopped before") and d[0]["finished_ms"] >= d[0]["started_ms"] and d[1]["abort_reason"] == "airlockd shutting down"' \
    -- "$A" audit --db "$DB" --status aborted --json

# ---- queries ---------------------------------------------------------------------------------
pyjson "all rows, newest first" 0 '[r["id"] for r in d] == [6, 5, 4, 3, 2, 1]' \
    -- "$A" audit --db "$DB" --json
pyjson "every column, JSON columns parsed" 0 \
    'set(d[-1]) == {"id","started_ms","finished_ms","token","session","source","kind","backend","policy","code_sha256","limits","status","exit_code","signal","wall_ms","cpu_ms","peak_memory_bytes","fuel_used","denied_syscalls","limits_hit","egress","redactions","redaction_kinds","error_message","abort_reason","execution_id"} and d[-1]["policy"] == {"network": False} and d[-1]["limits"]["fuel"] == 1000000000 and d[-1]["limits_hit"] == ["wall"] and d[-1]["redaction_kinds"] == ["bearer_token"] and d[-1]["egress"] == {"allowed": 0, "denied": 0, "bytes": 0} and d[-1]["wall_ms"] == 15' \
    -- "$A" audit --db "$DB" --json
pyjson "--token" 0 '[r["id"] for r in d] == [3, 1]' -- "$A" audit --db "$DB" --token alice --json
pyjson "--token and --session" 0 '[r["id"] for r in d] == [1]' \
    -- "$A" audit --db "$DB" --token alice --session s1 --json
pyjson "--status" 0 '[r["id"] for r in d] == [2] and d[0]["signal"] == 9' \
    -- "$A" audit --db "$DB" --status=signaled --json
pyjson "--limit" 0 '[r["id"] for r in d] == [6, 5]' -- "$A" audit --db "$DB" --limit 2 --json
pyjson "no match is an empty array" 0 'd == []' -- "$A" audit --db "$DB" --token nobody --json
pyjson "a hostile token is stored and matched literally" 0 \
    'len(d) == 1 and d[0]["token"] == "x'"'"'); DROP TABLE executions; --" and d[0]["status"] == "timeout"' \
    -- "$A" audit --db "$DB" --token "$EVIL" --json
pyjson "an injection-shaped token matches nothing" 0 'd == []' \
    -- "$A" audit --db "$DB" --token "' OR '1'='1" --json
# row k started at 1700000000000 + k * 60000 = 2023-11-14T22:13:20Z + k minutes
pyjson "--since RFC 3339 is inclusive" 0 '[r["id"] for r in d] == [6, 5, 4]' \
    -- "$A" audit --db "$DB" --since 2023-11-14T22:17:20Z --json
pyjson "--since with milliseconds" 0 '[r["id"] for r in d] == [6, 5]' \
    -- "$A" audit --db "$DB" --since 2023-11-14T22:17:20.001Z --json
pyjson "--until with an offset" 0 '[r["id"] for r in d] == [2, 1]' \
    -- "$A" audit --db "$DB" --until 2023-11-14T23:15:20+01:00 --json
pyjson "--since and --until in unix ms" 0 '[r["id"] for r in d] == [4, 3]' \
    -- "$A" audit --db "$DB" --since 1700000180000 --until 1700000240000 --json
pyjson "--since a date" 0 'len(d) == 6' -- "$A" audit --db "$DB" --since 2023-11-14 --json
pyjson "--since a date after" 0 'd == []' -- "$A" audit --db "$DB" --since 2023-11-15 --json
pyjson "--since a duration ago" 0 'd == []' -- "$A" audit --db "$DB" --since 10m --json
write "$DB" "begin${TAB}erin${TAB}${TAB}python${TAB}wasm${TAB}$SHA"
pyjson "--since a duration ago finds a new row" 0 '[r["id"] for r in d] == [7]' \
    -- "$A" audit --db "$DB" --since 10m --json
pyjson "--until a duration ago" 0 'len(d) == 6 and 7 not in [r["id"] for r in d]' \
    -- "$A" audit --db "$DB" --until 1h --json
AIRLOCK_AUDIT_DB=$DB pyjson "\$AIRLOCK_AUDIT_DB" 0 'len(d) == 7' -- "$A" audit --json

# ---- the table -------------------------------------------------------------------------------
expect "table" 0 "*" "" -- "$A" audit --db "$DB" --token alice
want_header='^ID +STARTED \(UTC\) +TOKEN +KIND +BACKEND +STATUS +EXIT +WALL MS +REDACTIONS +SHA256$'
want_row3='^3 +2023-11-14 22:16:20 +alice +python +wasm +exit +3 +40 +2 +0123456789ab$'
if [[ $(wc -l <"$OUT") -eq 3 ]] && sed -n 1p "$OUT" | grep -Eq "$want_header" &&
    sed -n 2p "$OUT" | grep -Eq "$want_row3" && sed -n 3p "$OUT" | grep -Eq '^1 +2023-11-14 22:14:20 +alice'; then
    pass "table: header and rows"
else
    fail "table: header and rows" "$(cat "$OUT")"
fi
expect "table: a signal and a running row" 0 "*" "" -- "$A" audit --db "$DB" --limit 10
grep -Eq '^2 .* native +signaled +sig 9 +250 ' "$OUT" && grep -Eq '^7 .* erin .* running +- +- +- ' "$OUT" &&
    pass "table: sig N, and - for what a running row lacks" ||
    fail "table: sig N, and - for what a running row lacks" "$(cat "$OUT")"
if grep -q $'\e' "$OUT"; then
    fail "table: control characters are not printed" "$(cat -v "$OUT")"
elif grep -Eq '^5 .* \?\[31mred ' "$OUT"; then
    pass "table: control characters are not printed"
else
    fail "table: control characters are not printed" "$(cat -v "$OUT")"
fi
expect "table: no match" 0 "no executions match" "" -- "$A" audit --db "$DB" --status trap

# ---- concurrency and versions ----------------------------------------------------------------
# python3 holds the write lock with an uncommitted row while airlock audit reads
python3 - "$DB" "$A" >"$RUN_DIR/locked.out" 2>&1 <<'EOF'
import json, sqlite3, subprocess, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO executions (started_ms, status) VALUES (1, 'ok')")
p = subprocess.run([sys.argv[2], "audit", "--db", sys.argv[1], "--json"], capture_output=True,
                   timeout=30)
rows = json.loads(p.stdout)
db.execute("ROLLBACK")
print(p.returncode, len(rows), p.stderr.decode()[:300])
EOF
[[ $(cat "$RUN_DIR/locked.out") == "0 7 " ]] && pass "reads while another writer holds the lock" ||
    fail "reads while another writer holds the lock" "$(cat "$RUN_DIR/locked.out")"

cp "$DB" "$RUN_DIR/future.db"
sql "$RUN_DIR/future.db" "PRAGMA user_version = 2"
run_airlock "$A" audit --db "$RUN_DIR/future.db"
[[ $RC -eq 1 && ! -s $OUT && $(wc -l <"$ERR") -eq 1 ]] && grep -q "schema version 2 is newer" "$ERR" &&
    pass "a database from a newer airlock is refused" ||
    fail "a database from a newer airlock is refused" "exit $RC" "$(cat "$ERR")"
write "$RUN_DIR/future.db" ""
[[ $? -ne 0 ]] && grep -q "schema version 2 is newer" "$ERR" &&
    pass "the writer refuses it too" || fail "the writer refuses it too" "$(cat "$OUT" "$ERR")"

printf 'not a database at all, not even close to one; padding padding padding padding\n' \
    >"$RUN_DIR/junk.db"
run_airlock "$A" audit --db "$RUN_DIR/junk.db"
[[ $RC -eq 1 && $(wc -l <"$ERR") -eq 1 ]] && grep -q "not a database" "$ERR" &&
    pass "a file that is not a database" || fail "a file that is not a database" "exit $RC" "$(cat "$ERR")"

# ---- an execution airlockd cancelled at shutdown ---------------------------------------------
DB2=$RUN_DIR/cancelled.db
write "$DB2" "begin${TAB}alice${TAB}${TAB}command${TAB}native${TAB}$SHA
end${TAB}1${TAB}cancelled${TAB}137${TAB}9${TAB}1200${TAB}0"
[[ $(tr '\n' ' ' <"$OUT") == "aborted 0 1 ok " ]] && pass "writer: one execution cancelled" ||
    fail "writer: one execution cancelled" "$(cat "$OUT" "$ERR")"
pyjson "--status cancelled: the row and its reason" 0 \
    'len(d) == 1 and d[0]["status"] == "cancelled" and d[0]["abort_reason"] == "shutdown" and d[0]["error_message"] == "shutdown"' \
    -- "$A" audit --db "$DB2" --status cancelled --json

# ---- the default path, as a user without root ------------------------------------------------
# Root's default is /var/lib/airlock/audit.db, which a test must not touch: the
# per-user default is checked as nobody (setpriv), on a world-readable copy.
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
    NOBODY_HOME=$(mktemp -d /tmp/airlock-audit-home.XXXXXX)
    chmod 755 "$NOBODY_HOME"
    mkdir -p "$NOBODY_HOME/state/airlock"
    sql "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    cp "$DB" "$NOBODY_HOME/state/airlock/audit.db"
    chmod 755 "$NOBODY_HOME/state" "$NOBODY_HOME/state/airlock"
    chmod 644 "$NOBODY_HOME/state/airlock/audit.db"
    cp "$A" "$NOBODY_HOME/airlock"
    run_airlock setpriv --reuid=65534 --regid=65534 --clear-groups \
        env HOME="$NOBODY_HOME" XDG_STATE_HOME="$NOBODY_HOME/state" "$NOBODY_HOME/airlock" audit --json
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT" 2>/dev/null)
    [[ $RC -eq 0 && $n == 7 ]] &&
        pass "default db \$XDG_STATE_HOME/airlock/audit.db, read-only directory" ||
        fail "default db \$XDG_STATE_HOME/airlock/audit.db, read-only directory" "exit $RC, rows '$n'" "$(head -c 300 "$ERR")"
    run_airlock setpriv --reuid=65534 --regid=65534 --clear-groups \
        env -u XDG_STATE_HOME HOME="$NOBODY_HOME" "$NOBODY_HOME/airlock" audit
    grep -q "$NOBODY_HOME/.local/state/airlock/audit.db: No such file" "$ERR" && [[ $RC -eq 2 ]] &&
        pass "default db ~/.local/state/airlock/audit.db" ||
        fail "default db ~/.local/state/airlock/audit.db" "exit $RC" "$(head -c 300 "$ERR")"
    rm -rf "$NOBODY_HOME"
elif [[ $(id -u) -ne 0 ]]; then
    mkdir -p "$RUN_DIR/xdg/airlock"
    cp "$DB" "$RUN_DIR/xdg/airlock/audit.db"
    XDG_STATE_HOME=$RUN_DIR/xdg pyjson "default db \$XDG_STATE_HOME/airlock/audit.db" 0 'len(d) == 7' \
        -- "$A" audit --json
fi

finish
