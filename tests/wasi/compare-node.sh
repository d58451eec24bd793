#!/usr/bin/env bash
# tests/wasi/compare-node.sh — differential conformance of airlock's WASI
# preview1 host (src/wasi/) against node 20's node:wasi (uvwasi).
#
#   tests/wasi/compare-node.sh [NAME_REGEX]
#   AIRLOCK=build/asan/airlock tests/wasi/compare-node.sh
#
# Every tests/wasi/programs/*.c is compiled with clang-14 --target=wasm32-wasi
# against Debian's wasi-libc (found with dpkg -L) into $BUILD_DIR (default
# build/wasi-compare). Each case of each program is then run twice, from two
# fresh, identical temporary trees:
#     airlock:  $AIRLOCK run --dir A/sandbox:/sandbox:rw ... MODULE -- ARGS
#     node:     node tests/wasi/run-node.mjs --dir B/sandbox:/sandbox ...
# with the same --env, stdin and ARGS (node's stdin, stdout and stderr are
# pipes, as airlock's are: see run_case), and the case passes when the exit
# status, stdout, stderr and the final trees (A vs B: names, types, modes,
# sizes, link counts, symlink targets, file contents; mtimes only where the
# program set them) are identical. A difference fails the case and is shown
# as a unified diff. Any sanitizer report on airlock's stderr fails the case.
#
# Directives, in a program's source, one per line ("// @NAME: VALUE"):
#   @case: WORDS      one run with these guest arguments (shell quoting);
#                     repeatable, each is its own case; none = one run, no args
#   @env: K=V         an environment variable for both runtimes; repeatable
#   @stdin: FILE      stdin for both runtimes (FILE relative to programs/)
#   @exit: N          the exit status airlock must have (a sanity check on
#                     top of the comparison)
#   @mtime: PATH...   include these paths' mtimes (seconds) in the trees
#   @cflags: FLAGS    extra compiler flags
#   @known: ID STREAM SED
#                     a documented deliberate difference (ID is a "### ID"
#                     heading of tests/wasi/known-differences.md): the sed
#                     expression SED rewrites node's STREAM (stdout, stderr
#                     or tree) into what airlock, following the spec, must
#                     print; then the outputs are compared exactly as usual
#   @airlock-only: ID node cannot run this program (ID as above): airlock's
#                     stdout is compared with programs/NAME.expected, its
#                     stderr with NAME.expected-stderr (empty if absent), and
#                     its final tree with the untouched initial tree. Such a
#                     program also gets a read-only preopen of the fixture's
#                     ro/ directory at /ro.
#
# The allow-list, tests/wasi/known-differences.md, says why each @known and
# @airlock-only is there. Prints one line per case (and a "# note:" line when
# node no longer shows a documented difference), and ends with
# "N passed, N failed"; exits
# non-zero if anything failed. Environment: AIRLOCK (default
# build/release/airlock), NODE (default node), BUILD_DIR, KEEP=1 keeps the
# per-run scratch directory.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
AIRLOCK=${AIRLOCK:-build/release/airlock}
NODE=${NODE:-node}
BUILD_DIR=${BUILD_DIR:-build/wasi-compare}
HERE=tests/wasi
PROGS=$HERE/programs
KNOWN=$HERE/known-differences.md
FILTER=${1:-}

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok - $1"; }
fail() {
    failed=$((failed + 1))
    echo "FAIL - $1"
    shift
    local l
    for l in "$@"; do printf '%s\n' "$l" | sed 's/^/    /'; done
}
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit
}

# ---- toolchain ----------------------------------------------------------------------
CLANG=$(command -v clang-14 || command -v clang || true)
# The sysroot is the directory holding lib/wasm32-wasi/ (Debian: /usr).
CRT=$(dpkg -L wasi-libc 2>/dev/null | grep -m1 '/wasm32-wasi/crt1-command\.o$' || true)
SYSROOT=${CRT%/lib/wasm32-wasi/crt1-command.o}
if [[ -z $CLANG || -z $SYSROOT ]]; then
    fail "toolchain available" "need clang-14 and wasi-libc (run tools/setup.sh)"
    finish
fi
if ! NODE_MAJOR=$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null); then
    fail "node available" "$NODE does not run"
    finish
fi
[[ $NODE_MAJOR -ge 20 ]] || echo "# warning: node $NODE_MAJOR; the known differences were taken against node 20"
if [[ ! -x $AIRLOCK ]]; then
    fail "airlock binary exists" "not found or not executable: $AIRLOCK (make release / make asan)"
    finish
fi
[[ -f $KNOWN ]] || { fail "known differences file" "$KNOWN is missing"; finish; }

mkdir -p "$BUILD_DIR"
RUN_DIR=$(mktemp -d "$BUILD_DIR/run.XXXXXX") || exit 2
RUN_DIR=$(cd "$RUN_DIR" && pwd -P)
if [[ ${KEEP:-0} == 1 ]]; then
    echo "# scratch directory kept: $RUN_DIR"
else
    trap 'rm -rf "$RUN_DIR"' EXIT
fi

san_re='ERROR: (Address|Leak|Memory|Thread|UndefinedBehavior)Sanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer'

# ---- the initial tree ---------------------------------------------------------------
# make_fixture DIR: DIR/sandbox (preopened read-write at /sandbox), DIR/outside
# (beside it, reachable only through the escape symlink) and DIR/ro (the
# read-only preopen of airlock-only programs). Keep in sync with
# programs/common.h.
make_fixture() {
    local d=$1
    mkdir -p "$d/sandbox/sub/deeper" "$d/sandbox/empty" "$d/outside" "$d/ro/inner"
    printf 'hello, sandbox\n' >"$d/sandbox/hello.txt"
    local i bytes=''
    for ((i = 0; i < 256; i++)); do bytes+=$(printf '\\%03o' "$i"); done
    printf "$bytes" >"$d/sandbox/data.bin"
    printf 'nested\n' >"$d/sandbox/sub/nested.txt"
    printf 'leaf\n' >"$d/sandbox/sub/deeper/leaf.txt"
    ln -s hello.txt "$d/sandbox/link-to-hello"
    ln -s sub "$d/sandbox/link-to-sub"
    ln -s missing.txt "$d/sandbox/dangling"
    ln -s ../outside "$d/sandbox/escape"
    printf 'outside the sandbox\n' >"$d/outside/secret.txt"
    printf 'read-only data\n' >"$d/ro/readme.txt"
    printf 'inner\n' >"$d/ro/inner/file.txt"
    chmod 644 "$d/sandbox/hello.txt" "$d/sandbox/data.bin" "$d/sandbox/sub/nested.txt" \
        "$d/sandbox/sub/deeper/leaf.txt" "$d/outside/secret.txt" "$d/ro/readme.txt" \
        "$d/ro/inner/file.txt"
    chmod 755 "$d/sandbox" "$d/sandbox/sub" "$d/sandbox/sub/deeper" "$d/sandbox/empty" \
        "$d/outside" "$d/ro" "$d/ro/inner"
}

# dump_tree DIR [MTIME_PATH...]: every entry under DIR, sorted, one line each
# (type, relative path, mode, size, link count, symlink target; mtime only
# for the listed paths), each non-empty regular file followed by its content:
# text as "| line" lines, anything else as hex. (Names with tabs or newlines
# are not supported; the programs make none.)
dump_tree() {
    local root=$1
    shift
    local -A want_mtime=()
    local p
    for p in "$@"; do want_mtime[$p]=1; done
    local type mode size nlink mtime target extra f
    while IFS=$'\t' read -r -d '' type p mode size nlink mtime target; do
        f=$root/$p
        extra=''
        [[ -n ${want_mtime[$p]:-} ]] && extra=" mtime=${mtime%%.*}"
        case $type in
        l) printf 'link %s -> %s%s\n' "$p" "$target" "$extra" ;;
        d) printf 'dir  %s mode=%s%s\n' "$p" "$mode" "$extra" ;;
        f)
            if [[ $size == 0 ]]; then
                printf 'file %s mode=%s size=0 nlink=%s%s\n' "$p" "$mode" "$nlink" "$extra"
                continue
            fi
            printf 'file %s mode=%s size=%s nlink=%s sha256=%.16s%s\n' "$p" "$mode" "$size" \
                "$nlink" "$(sha256sum <"$f")" "$extra"
            if LC_ALL=C grep -q '[^[:print:][:space:]]' "$f"; then
                od -An -tx1 -v -w32 "$f" | head -n 64 | sed 's/^/    #/'
            else
                head -n 200 "$f" | sed 's/^/    | /'
                [[ $(tail -c 1 "$f" | od -An -tx1 | tr -d ' ') == 0a ]] ||
                    echo '    (no newline at end of file)'
            fi
            ;;
        *) printf 'other %s type=%s mode=%s\n' "$p" "$type" "$mode" ;;
        esac
    done < <(cd "$root" && find . -mindepth 1 -printf '%y\t%P\t%m\t%s\t%n\t%T@\t%l\0' | LC_ALL=C sort -z)
}

# ---- directives -----------------------------------------------------------------------
# directive FILE NAME: the values of "// @NAME: VALUE" lines, one per line.
directive() {
    sed -n "s|^// @$2: *||p" "$1"
}

known_ids=$(sed -n 's/^### \(KD-[A-Za-z0-9_-]*\) *$/\1/p' "$KNOWN")
is_known_id() { grep -qxF -- "$1" <<<"$known_ids"; }

# ---- compile ---------------------------------------------------------------------------
# A module is rebuilt when it is older than its source, common.h or this
# script; compiled to a temporary name and renamed into place, atomically.
programs=()
for c in "$PROGS"/*.c; do
    name=$(basename "$c" .c)
    [[ -n $FILTER && ! $name =~ $FILTER ]] && continue
    wasm=$BUILD_DIR/$name.wasm
    if [[ -f $wasm && $wasm -nt $c && $wasm -nt $PROGS/common.h && $wasm -nt ${BASH_SOURCE[0]} ]]; then
        programs+=("$name")
        continue
    fi
    read -ra cflags <<<"$(directive "$c" cflags | tr '\n' ' ')"
    if "$CLANG" --target=wasm32-wasi --sysroot="$SYSROOT" -O2 -Wall -Wextra -Werror \
        -I"$PROGS" "$c" "${cflags[@]}" -o "$RUN_DIR/$name.wasm" 2>"$RUN_DIR/cc.err" &&
        mv -f "$RUN_DIR/$name.wasm" "$wasm"; then
        programs+=("$name")
    else
        fail "compile $name" "$(cat "$RUN_DIR/cc.err")"
    fi
done
((${#programs[@]} > 0)) || { fail "programs" "no program matches '${FILTER}'"; finish; }

# ---- one case ---------------------------------------------------------------------------
# run_case NAME LABEL ARGS...: run program NAME with guest ARGS in both
# runtimes and compare. LABEL names the case in the output.
run_case() {
    local name=$1 label=$2
    shift 2
    local src=$PROGS/$name.c wasm=$BUILD_DIR/$name.wasm
    local dir=$RUN_DIR/case.$((passed + failed))
    local A=$dir/airlock B=$dir/node
    mkdir -p "$dir"
    make_fixture "$A"
    cp -a "$A" "$B"

    local envs=() e
    while IFS= read -r e; do [[ -n $e ]] && envs+=(--env "$e"); done < <(directive "$src" env)
    local stdin_opt=() stdin_cat=() stdin_file
    stdin_file=$(directive "$src" stdin | head -n 1)
    if [[ -n $stdin_file ]]; then
        stdin_opt=(--stdin "$PROGS/$stdin_file")
        stdin_cat=("$PROGS/$stdin_file")
    fi
    local mtimes=()
    read -ra mtimes <<<"$(directive "$src" mtime | tr '\n' ' ')"
    local only
    only=$(directive "$src" airlock-only | head -n 1)

    local problems=()
    local ro_opt=()
    if [[ -n $only ]]; then
        is_known_id "${only%% *}" || problems+=("@airlock-only names ${only%% *}, which is not a heading of $KNOWN")
        ro_opt=(--dir "$A/ro:/ro:ro")
    fi

    # airlock
    timeout 120 "$AIRLOCK" run --dir "$A/sandbox:/sandbox:rw" "${ro_opt[@]}" "${envs[@]}" \
        "${stdin_opt[@]}" "$wasm" -- "$@" >"$dir/a.out" 2>"$dir/a.err" </dev/null
    local rc_a=$?
    dump_tree "$A" "${mtimes[@]}" >"$dir/a.tree"
    if grep -Eq "$san_re" "$dir/a.err"; then
        problems+=("sanitizer report on airlock's stderr:" "$(grep -E -m5 -A3 "$san_re" "$dir/a.err")")
    fi
    local want_exit
    want_exit=$(directive "$src" exit | head -n 1)
    if [[ -n $want_exit && $rc_a -ne $want_exit ]]; then
        problems+=("airlock exit status $rc_a, the program expects $want_exit")
    fi

    # the reference: node, or the expected files
    local rc_b
    if [[ -n $only ]]; then
        rc_b=${want_exit:-0}
        if [[ -f $PROGS/$name.expected ]]; then cp "$PROGS/$name.expected" "$dir/b.out"
        else problems+=("missing $PROGS/$name.expected"); : >"$dir/b.out"; fi
        if [[ -f $PROGS/$name.expected-stderr ]]; then cp "$PROGS/$name.expected-stderr" "$dir/b.err"
        else : >"$dir/b.err"; fi
        dump_tree "$B" "${mtimes[@]}" >"$dir/b.tree"
    else
        # node's stdio are pipes, like airlock's (which are buffers behind
        # pipe-like descriptors). Its stdin is a FIFO filled before node
        # starts, so that, as in airlock, all of it is there from the first
        # read (a file larger than a pipe's capacity is fed by cat instead);
        # its stdout and stderr are drained by cat through FIFOs.
        mkfifo "$dir/b.in.fifo" "$dir/b.out.fifo" "$dir/b.err.fifo"
        cat "$dir/b.out.fifo" >"$dir/b.out" &
        local drain_out=$!
        cat "$dir/b.err.fifo" >"$dir/b.err" &
        local drain_err=$!
        local feed=''
        exec {feed}<>"$dir/b.in.fifo" # read-write: opening it does not block
        if [[ -z $stdin_file || $(stat -c %s "$PROGS/$stdin_file") -le 60000 ]]; then
            cat -- "${stdin_cat[@]}" </dev/null >&"$feed"
        else
            cat -- "${stdin_cat[@]}" </dev/null >&"$feed" &
        fi
        timeout 120 "$NODE" --no-warnings "$HERE/run-node.mjs" --dir "$B/sandbox:/sandbox" \
            "${envs[@]}" --stdin - "$wasm" -- "$@" <"$dir/b.in.fifo" >"$dir/b.out.fifo" \
            2>"$dir/b.err.fifo" {feed}>&- &
        local node_pid=$!
        exec {feed}>&- # the last writer: node sees EOF after the data
        wait "$node_pid"
        rc_b=$?
        wait "$drain_out" "$drain_err"
        wait # a background feeder, if any
        rm -f "$dir/b.in.fifo" "$dir/b.out.fifo" "$dir/b.err.fifo"
        dump_tree "$B" "${mtimes[@]}" >"$dir/b.tree"
        # Each dump names its own root nowhere, but a symlink target or an
        # error message might: make the two roots the same word.
        sed -i "s|$A|ROOT|g" "$dir/a.out" "$dir/a.err" "$dir/a.tree"
        sed -i "s|$B|ROOT|g" "$dir/b.out" "$dir/b.err" "$dir/b.tree"
        # documented differences: rewrite node's output into airlock's
        local line id stream expr
        while IFS= read -r line; do
            [[ -z $line ]] && continue
            read -r id stream expr <<<"$line"
            if ! is_known_id "$id"; then
                problems+=("@known names $id, which is not a heading of $KNOWN")
                continue
            fi
            case $stream in
            stdout) f=$dir/b.out ;;
            stderr) f=$dir/b.err ;;
            tree) f=$dir/b.tree ;;
            *) problems+=("@known $id: unknown stream '$stream'"); continue ;;
            esac
            cp "$f" "$f.orig"
            if ! sed -i -e "$expr" "$f" 2>"$dir/sed.err"; then
                problems+=("@known $id: bad sed expression: $(cat "$dir/sed.err")")
            elif cmp -s "$f" "$f.orig"; then
                echo "# note: $label: node no longer shows $id ($stream unchanged by '$expr')"
            fi
        done < <(directive "$src" known)
    fi

    local ref=node
    [[ -n $only ]] && ref=expected
    [[ $rc_a -eq $rc_b ]] || problems+=("exit status: airlock $rc_a, $ref $rc_b")
    local s
    for s in out err tree; do
        if ! cmp -s "$dir/a.$s" "$dir/b.$s"; then
            local what=$s
            [[ $s == out ]] && what=stdout
            [[ $s == err ]] && what=stderr
            problems+=("$what differs (--- airlock, +++ $ref):"
                "$(diff -a -u --label "airlock $what" --label "$ref $what" "$dir/a.$s" "$dir/b.$s" | head -n 80)")
        fi
    done
    if ((${#problems[@]} == 0)); then pass "$label"; else fail "$label" "${problems[@]}"; fi
}

# ---- all cases ------------------------------------------------------------------------------
echo "# airlock: $AIRLOCK; node: $("$NODE" --version)"
for name in "${programs[@]}"; do
    src=$PROGS/$name.c
    mapfile -t cases < <(directive "$src" case)
    if ((${#cases[@]} == 0)); then
        run_case "$name" "$name"
        continue
    fi
    for words in "${cases[@]}"; do
        eval "argv=($words)" # our own test sources: quoting as in the shell
        run_case "$name" "$name${words:+ -- $words}" "${argv[@]}"
    done
done
finish
