#!/usr/bin/env bash
# bench/exec-latency.sh — start-to-exit latency of `airlock exec`, in one run:
#
#   native: `airlock exec -- /bin/true` and `airlock exec -- python3 -c pass`
#           against bwrap with an equivalent policy (below) and against no
#           sandbox at all; target: airlock at most bwrap's time;
#   gVisor: cold start of `airlock exec --isolation gvisor -- /bin/true`
#           against plain `runsc run` of a minimal bundle (the same mounts,
#           user and namespaces airlock's config.json asks for) and `runsc
#           do`; per-execution latency inside a warm sandbox: al_session_exec
#           (bench/gvisor-session.c, linked against build/release/libairlock.a)
#           against `runsc exec` into a container started by hand.
#
#   bench/exec-latency.sh              from anywhere
#   RUNS=50 WARMUP=5 bench/exec-latency.sh
#   AIRLOCK=path/to/airlock bench/exec-latency.sh
#   GVISOR=0 bench/exec-latency.sh     native only
#
# Writes markdown to stdout (paste into docs/benchmarks.md); progress goes to
# stderr. Whole-process times are hyperfine means (--shell=none, WARMUP
# warm-up runs, RUNS timed runs, ± the standard deviation); the session
# figure is the mean of RUNS al_session_exec calls after 3 warm-ups. Every
# command is run once first and must exit 0, or its row says why not.
#
# The bwrap policy: --unshare-all (user, pid, net, ipc, uts, cgroup, mount)
# --die-with-parent --new-session --uid 1000 --gid 1000 --cap-drop ALL
# --ro-bind /usr /usr, the merged-/usr symlinks /bin /lib /lib64 /sbin,
# --proc /proc --dev /dev --tmpfs /tmp --clearenv with PATH, HOME, LANG.
# airlock does more on top (a minimal /etc, Landlock, a seccomp filter,
# rlimits, a cgroup with memory/pids limits, output capture, the JSON-able
# result), so the comparison is conservative for airlock.
# runsc runs with the flags airlock gives it: --platform=<doctor's choice>
# --network=none --ignore-cgroups.
#
# Exit status: 0 when every measurement ran, 1 otherwise. Not part of the
# test suite.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
AIRLOCK=${AIRLOCK:-build/release/airlock}
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
GVISOR=${GVISOR:-1}
TMP=$(mktemp -d /tmp/airlock-bench.XXXXXX)
chmod 755 "$TMP"
STATE=$TMP/state
RUNSC_ROOT=$TMP/runsc

log() { printf '%s\n' "$*" >&2; }
cleanup() {
    local id
    if [ -d "$RUNSC_ROOT" ]; then
        for id in $(runsc --root "$RUNSC_ROOT" list -quiet 2>/dev/null); do
            runsc --root "$RUNSC_ROOT" kill "$id" KILL >/dev/null 2>&1 || true
            runsc --root "$RUNSC_ROOT" delete -force "$id" >/dev/null 2>&1 || true
        done
    fi
    [ -x "$AIRLOCK" ] && "$AIRLOCK" gc --state-dir "$STATE" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
NAME=exec-latency.sh
# shellcheck source=bench/lib.bash
source bench/lib.bash
need hyperfine hyperfine
need bwrap bubblewrap
need python3 python3

copy_airlock
failures=0

# time_cmd NAME CMD...: "mean_ms±sd_ms" (hyperfine), or "failed: why" after
# one checked run that did not exit 0 (then also counted in failures)
time_cmd() {
    local name=$1 out
    shift
    if ! out=$("$@" </dev/null 2>&1 >/dev/null); then
        failures=$((failures + 1))
        echo "failed: $(printf '%s' "$out" | head -c 160 | tr '\n|' ' /')"
        return
    fi
    log "== $name"
    if ! hyperfine --shell=none --style none --warmup "$WARMUP" --runs "$RUNS" \
        --export-json "$TMP/$name.json" -- "$(printf '%q ' "$@")" >&2; then
        failures=$((failures + 1))
        echo "failed: hyperfine"
        return
    fi
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.1f±%.1f" % (r["mean"] * 1e3, r["stddev"] * 1e3))' "$TMP/$name.json"
}

# time_sh NAME 'SHELL COMMAND': like time_cmd, through hyperfine's shell (it
# subtracts the shell's own start-up), for a command that needs a redirection
time_sh() {
    local name=$1 cmd=$2 out
    if ! out=$(sh -c "$cmd" </dev/null 2>&1 >/dev/null); then
        failures=$((failures + 1))
        echo "failed: $(printf '%s' "$out" | head -c 160 | tr '\n|' ' /')"
        return
    fi
    log "== $name"
    if ! hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" \
        --export-json "$TMP/$name.json" -- "$cmd" >&2; then
        failures=$((failures + 1))
        echo "failed: hyperfine"
        return
    fi
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.1f±%.1f" % (r["mean"] * 1e3, r["stddev"] * 1e3))' "$TMP/$name.json"
}

mean_of() { printf '%s' "${1%%±*}"; } # "12.3±0.4" -> "12.3"; "failed..." -> itself
ratio() {
    awk -v a="$(mean_of "$1")" -v b="$(mean_of "$2")" \
        'BEGIN { if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "—"; else printf "%.2f", a / b }'
}

BWRAP=(bwrap --unshare-all --die-with-parent --new-session --uid 1000 --gid 1000 --cap-drop ALL
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp --chdir /tmp --clearenv
    --setenv PATH /usr/bin:/bin --setenv HOME /tmp --setenv LANG C.UTF-8 --)
NATIVE=("$AL" exec --state-dir "$STATE" --)

# ---- native -----------------------------------------------------------------------
al_true=$(time_cmd al-true "${NATIVE[@]}" /bin/true)
bw_true=$(time_cmd bwrap-true "${BWRAP[@]}" /bin/true)
raw_true=$(time_cmd raw-true /bin/true)
al_py=$(time_cmd al-python "${NATIVE[@]}" /usr/bin/python3 -c pass)
bw_py=$(time_cmd bwrap-python "${BWRAP[@]}" /usr/bin/python3 -c pass)
raw_py=$(time_cmd raw-python /usr/bin/python3 -c pass)
# bwrap with airlock's own seccomp program (the EPERM variant), so both sides
# filter the same calls; airlock still does more (cgroup, Landlock, rlimits,
# /etc, the notification listener that counts denials)
bw_sc_true="—"
bw_sc_py="—"
log "== building bench/export-seccomp.c"
if "${CC:-gcc}" -std=c17 -D_GNU_SOURCE -O2 -Iinclude -Isrc/sandbox -Isrc/sandbox/native \
    bench/export-seccomp.c build/release/libairlock.a -ljansson -lseccomp -lcap -lpthread -lm \
    -o "$TMP/export-seccomp" >"$TMP/cc-sc.log" 2>&1 && "$TMP/export-seccomp" >"$TMP/filter.bpf"; then
    bw_sc="$(printf '%q ' "${BWRAP[@]:0:${#BWRAP[@]}-1}") --seccomp 9 --"
    bw_sc_true=$(time_sh bwrap-seccomp-true "$bw_sc /bin/true 9<$TMP/filter.bpf")
    bw_sc_py=$(time_sh bwrap-seccomp-python "$bw_sc /usr/bin/python3 -c pass 9<$TMP/filter.bpf")
else
    log "export-seccomp did not build: $(head -c 300 "$TMP/cc-sc.log")"
fi

# ---- gVisor -----------------------------------------------------------------------
gv_rows=()
platform=""
if [ "$GVISOR" = 1 ]; then
    "$AL" doctor --json >"$TMP/doctor.json" 2>/dev/null || true
    read -r gv_ok platform < <(python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print("yes" if d["backends"]["gvisor"]["available"] else "no", d.get("gvisor_platform") or "ptrace")
except (OSError, ValueError, KeyError, TypeError):
    print("no ptrace")' "$TMP/doctor.json")
    if [ "$gv_ok" != yes ] || ! command -v runsc >/dev/null; then
        gv_rows+=("| gVisor | unavailable on this host (airlock doctor) | | |")
        platform=""
    fi
fi
if [ -n "$platform" ]; then
    RUNSC=(runsc --root "$RUNSC_ROOT" "--platform=$platform" --network=none --ignore-cgroups)
    # A minimal bundle like airlock's config.json: read-only root of mount
    # points and merged-/usr links, /usr bound read-only, proc, tmpfs /dev
    # and /tmp, uid 1000, no capabilities, no_new_privs.
    rootfs=$TMP/rootfs
    mkdir -p "$rootfs"/{usr,proc,dev,tmp,etc} "$TMP/bundle-true" "$TMP/bundle-warm" "$RUNSC_ROOT"
    for d in bin lib lib64 sbin; do [ -L "/$d" ] && ln -s "usr/$d" "$rootfs/$d"; done
    bundle() { # DIR ARGV_JSON
        cat >"$1/config.json" <<EOF
{"ociVersion": "1.0.2", "hostname": "bench", "root": {"path": "$rootfs", "readonly": true},
 "process": {"terminal": false, "user": {"uid": 1000, "gid": 1000}, "args": $2,
   "env": ["PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"], "cwd": "/tmp", "noNewPrivileges": true,
   "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []}},
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
   {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
   {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
   {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro", "nosuid", "nodev"]}],
 "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}}
EOF
    }
    bundle "$TMP/bundle-true" '["/bin/true"]'
    bundle "$TMP/bundle-warm" '["/bin/sleep", "100000"]'

    # cold start: boot, run /bin/true, tear down (`runsc run` deletes the
    # container when its process exits, so one id serves every run)
    gv_cold=$(time_cmd gv-airlock "$AL" exec --isolation gvisor --state-dir "$STATE" -- /bin/true)
    rs_run=$(time_cmd gv-runsc-run "${RUNSC[@]}" run --bundle "$TMP/bundle-true" bench-cold)
    rs_do=$(time_cmd gv-runsc-do "${RUNSC[@]}" "do" /bin/true)

    # warm: per-execution latency inside a running sandbox
    log "== al_session_exec (bench/gvisor-session.c)"
    sess_out=""
    read -r -a jansson_libs <<<"$(pkg-config --libs jansson 2>/dev/null || echo -ljansson)"
    if cc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Iinclude \
        bench/gvisor-session.c build/release/libairlock.a "${jansson_libs[@]}" -lseccomp -lcap -lpthread -lm \
        -o "$TMP/gvisor-session" >"$TMP/cc.log" 2>&1; then
        if sess_out=$("$TMP/gvisor-session" "$RUNS" "$STATE" 2>"$TMP/session.err"); then
            sess_exec=$(awk '$1 == "exec_mean_ms" { printf "%.1f", $2 }' <<<"$sess_out")
            sess_open=$(awk '$1 == "open_ms" { printf "%.1f", $2 }' <<<"$sess_out")
            sess_close=$(awk '$1 == "close_ms" { printf "%.1f", $2 }' <<<"$sess_out")
            sess_median=$(awk '$1 == "exec_median_ms" { printf "%.1f", $2 }' <<<"$sess_out")
        else
            failures=$((failures + 1))
            sess_exec="failed: $(head -c 160 "$TMP/session.err" | tr '\n|' ' /')"
        fi
    else
        failures=$((failures + 1))
        sess_exec="failed to build: $(head -c 160 "$TMP/cc.log" | tr '\n|' ' /')"
    fi
    rs_exec="failed: the warm container did not start"
    if "${RUNSC[@]}" run --detach --bundle "$TMP/bundle-warm" bench-warm >"$TMP/warm.log" 2>&1; then
        rs_exec=$(time_cmd gv-runsc-exec "${RUNSC[@]}" exec --user 1000:1000 --cwd /tmp bench-warm /bin/true)
        "${RUNSC[@]}" kill bench-warm KILL >/dev/null 2>&1 || true
        "${RUNSC[@]}" delete -force bench-warm >/dev/null 2>&1 || true
    else
        failures=$((failures + 1))
    fi

    gv_rows+=("| cold start, \`/bin/true\` | $gv_cold | \`runsc run\` $rs_run | $(ratio "$gv_cold" "$rs_run") |")
    gv_rows+=("| cold start, \`/bin/true\` | | \`runsc do\` $rs_do | $(ratio "$gv_cold" "$rs_do") |")
    gv_rows+=("| warm exec, \`/bin/true\` (mean of $RUNS) | al_session_exec ${sess_exec}${sess_median:+ (median $sess_median)} | \`runsc exec\` $rs_exec | $(ratio "$sess_exec" "$rs_exec") |")
    [ -n "${sess_open:-}" ] && gv_rows+=("| session open / close (boot, tear down) | $sess_open / $sess_close | | |")
fi

# ---- report --------------------------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
cat <<EOF
## Exec latency (native and gVisor backends)

Measured $(date -u +%Y-%m-%d) on ${cpu:-unknown CPU} ($(nproc) cores), kernel $(uname -r), as $(id -un);
mean ± standard deviation in ms of $RUNS runs after $WARMUP warm-ups (hyperfine, no shell), whole process
start to exit. $(bwrap --version 2>/dev/null | head -n 1)${platform:+; runsc $(runsc --version 2>/dev/null | sed -n 's/^runsc version //p'), platform $platform}.

| program | airlock exec (native) | bwrap | airlock / bwrap | bwrap + airlock's seccomp | airlock / that | no sandbox |
|---|---:|---:|---:|---:|---:|---:|
| \`/bin/true\` | $al_true | $bw_true | **$(ratio "$al_true" "$bw_true")** | $bw_sc_true | **$(ratio "$al_true" "$bw_sc_true")** | $raw_true |
| \`python3 -c pass\` | $al_py | $bw_py | **$(ratio "$al_py" "$bw_py")** | $bw_sc_py | **$(ratio "$al_py" "$bw_sc_py")** | $raw_py |
EOF
if [ "${#gv_rows[@]}" -gt 0 ]; then
    cat <<EOF

| gVisor | airlock | plain runsc | airlock / runsc |
|---|---:|---:|---:|
EOF
    printf '%s\n' "${gv_rows[@]}"
fi
[ "$failures" -eq 0 ] || { log "exec-latency.sh: $failures measurement(s) failed, see the rows"; exit 1; }
exit 0
