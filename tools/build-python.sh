#!/usr/bin/env bash
# tools/build-python.sh — build CPython 3.11 for wasm32-wasi (python.wasm plus
# its standard library) from Debian's `python3.11` source package, with
# Debian's clang-14, lld-14, wasi-libc and libclang-rt-14-dev-wasm32.
#
#   tools/build-python.sh            build, or do nothing if the cache is current
#   tools/build-python.sh --force    rebuild even if the cache is current
#   tools/build-python.sh --check    exit 0 if the cache is current, 1 if not
#   tools/build-python.sh --clean    remove the work tree (sources, build dirs)
#
# Output (AIRLOCK_PYTHON_DIR, default build/python under the repo):
#   python.wasm              the interpreter (WASI preview1 command module)
#   lib/python3.11/          the standard library, precompiled, trimmed
#   README, env              the guest layout python.wasm expects
#   .stamp                   recipe hash, Debian source versions, python.wasm sha256
#
# Guest layout (also written to README/env in the output dir):
#   preopen <out>/lib/python3.11 at /usr/local/lib/python3.11,
#   env PYTHONHOME=/usr/local, argv[0] /usr/local/bin/python3.11.
#
# Environment:
#   AIRLOCK_PYTHON_DIR          output dir (default: <repo>/build/python)
#   AIRLOCK_PYTHON_WORK         work dir   (default: <output dir>/work)
#   AIRLOCK_PYTHON_SRC_VERSION  Debian source version to build (default: the
#                               newest one apt can download); also required to
#                               match the cache when set
#   AIRLOCK_PYTHON_DEBIAN_PATCHES=0  build the pristine .orig tarball contents
#                               of the source package instead of applying
#                               debian/patches (default 1: apply them)
#   AIRLOCK_PYTHON_JOBS         parallel make jobs (default: nproc)
#   AIRLOCK_PYTHON_KEEP_DEBUG=1 keep DWARF debug info in python.wasm (~21 MB
#                               instead of ~6.5 MB; the name section is always kept)
#   AIRLOCK_PYTHON_ZLIB=0       do not build zlib (from Debian's `zlib` source
#                               package) into python.wasm
#   AIRLOCK_PYTHON_STACK_SIZE=N linear-memory stack in bytes (default: CPython's
#                               512 KiB)
#
# Non-interactive (never reads stdin); runs apt-get (update, install, source)
# only when something is missing; as non-root it uses `sudo -n`.
set -euo pipefail
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE="$REPO/tools/python-wasi"
OUT=${AIRLOCK_PYTHON_DIR:-$REPO/build/python}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${AIRLOCK_PYTHON_WORK:-$OUT/work}
JOBS=${AIRLOCK_PYTHON_JOBS:-$(nproc 2>/dev/null || echo 2)}
DEB_PATCHES=${AIRLOCK_PYTHON_DEBIAN_PATCHES:-1}
KEEP_DEBUG=${AIRLOCK_PYTHON_KEEP_DEBUG:-0}
PIN_VERSION=${AIRLOCK_PYTHON_SRC_VERSION:-}
PYVER=3.11
SRCPKG=python$PYVER
WITH_ZLIB=${AIRLOCK_PYTHON_ZLIB:-1}
# Linear-memory stack size in bytes; empty = CPython 3.11's own WASI default
# (configure: -z stack-size=524288 -Wl,--stack-first -Wl,--initial-memory=10485760,
# matched to its WASI recursion limit of 600).
STACK_SIZE=${AIRLOCK_PYTHON_STACK_SIZE:-}

# Everything the guest needs to know about the layout lives here, so the
# generated README/env and run-node.mjs agree.
GUEST_PREFIX=/usr/local
GUEST_STDLIB=$GUEST_PREFIX/lib/python$PYVER
GUEST_ARGV0=$GUEST_PREFIX/bin/python$PYVER

# Packages this script needs (all are in tools/setup.sh's list except the
# ones marked; those are installed here when missing).
NEED_PACKAGES=(
    clang-14 lld-14 llvm-14 wasi-libc libclang-rt-14-dev-wasm32
    build-essential make pkg-config zlib1g-dev
    dpkg-dev   # dpkg-source, for apt-get source
    autoconf   # Debian's rules regenerate configure after patching configure.ac
)

t_start=$(date +%s)
log() { printf '[build-python %4ss] %s\n' "$(( $(date +%s) - t_start ))" "$*"; }
die() { printf 'build-python: error: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'; }

force=false check=false
for arg in "$@"; do
    case "$arg" in
        --force) force=true ;;
        --check) check=true ;;
        --clean) log "removing $WORK"; rm -rf "$WORK"; exit 0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build-python: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

# --- cache check --------------------------------------------------------------
# The recipe: this script, the files under tools/python-wasi/ that shape the
# build (patches, config; not the node runner or docs) and the knobs above.
recipe_hash() {
    {
        cat "$REPO/tools/build-python.sh"
        if [[ -d "$HERE" ]]; then
            (cd "$HERE" && find . -type f ! -name '*.mjs' ! -name '*.md' -print | LC_ALL=C sort |
                while read -r f; do echo "== $f"; cat "$f"; done)
        fi
        echo "patches=$DEB_PATCHES debug=$KEEP_DEBUG zlib=$WITH_ZLIB stack=$STACK_SIZE"
    } | sha256sum | cut -c1-16
}
RECIPE=$(recipe_hash)
STAMP="$OUT/.stamp"

cache_current() {
    [[ -f "$OUT/python.wasm" && -f "$OUT/lib/python$PYVER/os.py" && -f "$STAMP" ]] || return 1
    grep -qx "recipe=$RECIPE" "$STAMP" || return 1
    grep -qx "python.wasm=$(sha256sum < "$OUT/python.wasm" | cut -d' ' -f1)" "$STAMP" || return 1
    if [[ -n "$PIN_VERSION" ]]; then
        grep -qx "source=$SRCPKG $PIN_VERSION" "$STAMP" || return 1
    fi
    return 0
}

# One build per output dir at a time (a second caller waits, then finds it current).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$OUT/.lock"
    flock -n 9 || { log "another build-python.sh holds $OUT/.lock; waiting"; flock 9; }
fi

if ! $force && cache_current; then
    log "up to date: $OUT/python.wasm ($(sed -n 's/^source=//p' "$STAMP"), recipe $RECIPE)"
    exit 0
fi
if $check; then
    echo "build-python: $OUT/python.wasm is missing or stale (recipe $RECIPE)"
    exit 1
fi

# --- host packages ----------------------------------------------------------
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is not installed"
    SUDO=(sudo -n)
fi
apt_env=(env DEBIAN_FRONTEND=noninteractive)
apt_updated=false
apt_update() {
    $apt_updated && return 0
    log "apt-get update"
    "${SUDO[@]}" "${apt_env[@]}" apt-get update -q >/dev/null
    apt_updated=true
}

missing=()
for pkg in "${NEED_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
    log "installing missing packages: ${missing[*]}"
    apt_update
    "${SUDO[@]}" "${apt_env[@]}" apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
fi

CLANG=$(command -v clang-14) || die "clang-14 not found"
command -v wasm-ld-14 >/dev/null || die "wasm-ld-14 (lld-14) not found"
LLVM_AR=$(command -v llvm-ar-14) || die "llvm-ar-14 (llvm-14) not found"
LLVM_RANLIB=$(command -v llvm-ranlib-14) || die "llvm-ranlib-14 (llvm-14) not found"
# Debian's wasi-libc installs multiarch-style: headers in
# /usr/include/wasm32-wasi, libraries in /usr/lib/wasm32-wasi. Without a
# sysroot clang would also search the host's /usr/include (configure would
# then "find" host-only headers such as zlib.h), so give it a sysroot that
# holds only the wasi-libc directories.
[[ -f /usr/lib/wasm32-wasi/libc.a && -f /usr/include/wasm32-wasi/stdio.h ]] ||
    die "wasi-libc is not where Debian puts it (/usr/lib/wasm32-wasi, /usr/include/wasm32-wasi)"
[[ -f /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a ]] ||
    ls /usr/lib/llvm-14/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 ||
    die "libclang_rt.builtins-wasm32.a not found (libclang-rt-14-dev-wasm32)"

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
SYSROOT="$WORK/wasi-sysroot"
rm -rf "$SYSROOT"
mkdir -p "$SYSROOT/include" "$SYSROOT/lib"
ln -s /usr/include/wasm32-wasi "$SYSROOT/include/wasm32-wasi"
ln -s /usr/lib/wasm32-wasi "$SYSROOT/lib/wasm32-wasi"

# --- Debian source packages --------------------------------------------------
have_deb_src() {   # PKG
    local out
    out=$(apt-cache showsrc --only-source "$1" 2>/dev/null) || return 1
    [[ "$out" == *$'\nVersion: '* ]]
}
ensure_deb_src() {
    have_deb_src "$SRCPKG" && return 0
    if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        local f=/etc/apt/sources.list.d/airlock-deb-src
        if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
            log "adding deb-src entries ($f.sources, from debian.sources)"
            sed -e 's/^Types:.*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
                "${SUDO[@]}" tee "$f.sources" >/dev/null
        elif grep -qsE '^deb ' /etc/apt/sources.list; then
            log "adding deb-src lines ($f.list, from sources.list)"
            sed -n 's/^deb /deb-src /p' /etc/apt/sources.list | "${SUDO[@]}" tee "$f.list" >/dev/null
        else
            log "adding deb-src line for bookworm main ($f.list)"
            echo 'deb-src http://deb.debian.org/debian bookworm main' | "${SUDO[@]}" tee "$f.list" >/dev/null
        fi
    fi
    apt_update
    have_deb_src "$SRCPKG" || die "apt knows no source package $SRCPKG even with deb-src entries"
}

# fetch_deb_source PKG PARENT PATCHES KEY [PIN]
#   Unpacks source package PKG into PARENT/PKG-*/ (PATCHES=1: with debian/patches
#   applied, as `apt-get source` does; 0: the .orig tarball contents only).
#   Tries the newest version apt lists first and falls back to older ones (a
#   security pocket's index can list a version whose files are not there).
#   Reuses the unpacked tree when PARENT/.stamp says "<version> KEY".
#   Sets FETCHED_VERSION and FETCHED_DIR; FETCHED_NEW=1 if freshly unpacked.
fetch_deb_source() {
    local pkg=$1 parent=$2 patches=$3 key=$4 pin=${5:-}
    local versions ver tmp apt_opts=(-q)
    [[ $(id -u) -eq 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)
    if [[ -n "$pin" ]]; then
        versions=("$pin")
    else
        mapfile -t versions < <(apt-cache showsrc --only-source "$pkg" | sed -n 's/^Version: //p' | sort -V -r -u)
    fi
    ((${#versions[@]})) || die "apt lists no versions of source package $pkg"
    FETCHED_VERSION="" FETCHED_DIR="" FETCHED_NEW=0
    for ver in "${versions[@]}"; do
        if [[ -f "$parent/.stamp" && "$(cat "$parent/.stamp")" == "$ver $key" ]]; then
            FETCHED_VERSION=$ver
            log "source: $pkg $ver (already unpacked)"
            break
        fi
        log "source: fetching $pkg $ver ($([[ $patches == 1 ]] && echo "debian patches applied" || echo ".orig contents, debian patches skipped"))"
        tmp="$parent.new"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        if (cd "$tmp" && apt-get source "${apt_opts[@]}" --download-only --only-source "$pkg=$ver" >download.log 2>&1 &&
                if [[ $patches == 1 ]]; then dpkg-source -x ./*.dsc >extract.log 2>&1
                else dpkg-source -x --skip-patches ./*.dsc >extract.log 2>&1; fi); then
            rm -rf "$parent"
            mv "$tmp" "$parent"
            echo "$ver $key" > "$parent/.stamp"
            FETCHED_VERSION=$ver FETCHED_NEW=1
            break
        fi
        sed 's/^/    /' "$tmp/download.log" "$tmp/extract.log" 2>/dev/null | grep -E '^ +(E:|dpkg-source: error)' >&2 || true
        log "source: $pkg $ver could not be fetched; trying an older one"
        apt_update   # stale lists are the usual cause of a 404
    done
    [[ -n "$FETCHED_VERSION" ]] || die "could not fetch any version of source package $pkg (tried: ${versions[*]})"
    FETCHED_DIR=$(find "$parent" -mindepth 1 -maxdepth 1 -type d | head -n1)
    [[ -n "$FETCHED_DIR" ]] || die "source package $pkg $FETCHED_VERSION unpacked to nothing"
}

ensure_deb_src

LOCAL_PATCHES=()
for p in "$HERE"/patches/*.patch; do [[ -f "$p" ]] && LOCAL_PATCHES+=("$p"); done
LOCAL_PATCHES_HASH=none
if ((${#LOCAL_PATCHES[@]})); then
    LOCAL_PATCHES_HASH=$(cat "${LOCAL_PATCHES[@]}" | sha256sum | cut -c1-16)
fi
fetch_deb_source "$SRCPKG" "$WORK/src" "$DEB_PATCHES" \
    "debian-patches=$DEB_PATCHES local-patches=$LOCAL_PATCHES_HASH" "$PIN_VERSION"
SRC_VERSION=$FETCHED_VERSION
SRC=$FETCHED_DIR
SRC_KEY=$(cat "$WORK/src/.stamp")
if ((FETCHED_NEW)); then
    [[ -f "$SRC/configure.ac" ]] || die "$SRC does not look like a CPython tree"
    if [[ "$DEB_PATCHES" == 1 ]]; then
        # As debian/rules does after patching configure.ac: regenerate configure.
        log "regenerating configure (autoconf $(autoconf --version | sed -n '1s/.* //p'), as debian/rules does)"
        (cd "$SRC" && rm -rf autom4te.cache && autoconf)
    else
        rm -rf "$SRC/debian"
    fi
    # Our own patches for the WASI build, if any.
    for p in "${LOCAL_PATCHES[@]}"; do
        log "applying tools/python-wasi/patches/$(basename "$p")"
        patch -d "$SRC" -p1 --forward --batch < "$p" || { rm -f "$WORK/src/.stamp"; die "patch $p failed"; }
    done
fi

# zlib (Debian's `zlib` source package), compiled for wasm32-wasi, so that the
# zlib module (gzip, zipfile compression, compressed zipimport) is built in.
ZLIB_VERSION=""
ZLIB_PREFIX="$WORK/zlib-wasi"
if [[ "$WITH_ZLIB" == 1 ]]; then
    fetch_deb_source zlib "$WORK/zlib-src" 1 "zlib-for-wasi"
    ZLIB_VERSION=$FETCHED_VERSION
    ZLIB_KEY="$(cat "$WORK/zlib-src/.stamp") $CLANG"
    if [[ -f "$ZLIB_PREFIX/lib/libz.a" && "$(cat "$ZLIB_PREFIX/.stamp" 2>/dev/null)" == "$ZLIB_KEY" ]]; then
        log "zlib for wasm32-wasi: up to date"
    else
        log "zlib for wasm32-wasi: compiling zlib $ZLIB_VERSION"
        rm -rf "$ZLIB_PREFIX"
        mkdir -p "$ZLIB_PREFIX/obj" "$ZLIB_PREFIX/include" "$ZLIB_PREFIX/lib"
        for c in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees trees uncompr zutil; do
            "$CLANG" --target=wasm32-wasi --sysroot="$SYSROOT" -O2 -DHAVE_HIDDEN -DZ_HAVE_UNISTD_H -Werror=implicit-function-declaration \
                -c "$FETCHED_DIR/$c.c" -o "$ZLIB_PREFIX/obj/$c.o"
        done
        "$LLVM_AR" rcs "$ZLIB_PREFIX/lib/libz.a" "$ZLIB_PREFIX"/obj/*.o
        cp "$FETCHED_DIR/zlib.h" "$FETCHED_DIR/zconf.h" "$ZLIB_PREFIX/include/"
        echo "$ZLIB_KEY" > "$ZLIB_PREFIX/.stamp"
    fi
fi

# --- native build python -------------------------------------------------------
NATIVE="$WORK/build-native"
NATIVE_KEY="$SRC_KEY native"
if [[ -x "$NATIVE/python" && -f "$NATIVE/.stamp" && "$(cat "$NATIVE/.stamp")" == "$NATIVE_KEY" ]]; then
    log "native build python: up to date ($NATIVE/python)"
else
    log "native build python: configure"
    rm -rf "$NATIVE"
    mkdir -p "$NATIVE"
    (cd "$NATIVE" && "$SRC/configure" -q --prefix="$NATIVE/install" --disable-test-modules \
        --with-ensurepip=no > configure.log 2>&1) ||
        { tail -n 40 "$NATIVE/configure.log" "$NATIVE/config.log" >&2 || true; die "native configure failed"; }
    log "native build python: make -j$JOBS (log: $NATIVE/make.log)"
    (cd "$NATIVE" && make -j"$JOBS" > make.log 2>&1) ||
        { tail -n 60 "$NATIVE/make.log" >&2; die "native make failed"; }
    echo "$NATIVE_KEY" > "$NATIVE/.stamp"
fi
BUILD_PYTHON="$NATIVE/python"
"$BUILD_PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' ||
    die "native build python does not run"

# --- wasm32-wasi build -----------------------------------------------------------
WASI="$WORK/build-wasi"
log "wasi: configure (--host=wasm32-unknown-wasi, CONFIG_SITE=Tools/wasm/config.site-wasm32-wasi)"
rm -rf "$WASI"
mkdir -p "$WASI"
(
    cd "$WASI"
    export CONFIG_SITE="$SRC/Tools/wasm/config.site-wasm32-wasi"
    export CC="$CLANG --target=wasm32-wasi --sysroot=$SYSROOT"
    export CPP="$CC -E"
    export CXX="false"
    # Keep host build paths out of python.wasm (assert/__FILE__ strings).
    export CFLAGS="-ffile-prefix-map=$WORK=/build"
    export AR="$LLVM_AR" RANLIB="$LLVM_RANLIB"
    export LDSHARED="wasm-ld-14"
    # pkg-config must not report the host's libraries (Tools/wasm/wasi-env does the same).
    export PKG_CONFIG_PATH="" PKG_CONFIG_LIBDIR="$SYSROOT/lib/pkgconfig:$SYSROOT/share/pkgconfig"
    export PKG_CONFIG_SYSROOT_DIR="$SYSROOT"
    if [[ "$WITH_ZLIB" == 1 ]]; then
        export ZLIB_CFLAGS="-I$ZLIB_PREFIX/include" ZLIB_LIBS="-L$ZLIB_PREFIX/lib -lz"
    fi
    "$SRC/configure" -q \
        --host=wasm32-unknown-wasi \
        --build="$("$SRC/config.guess")" \
        --with-build-python="$BUILD_PYTHON" \
        --prefix="$GUEST_PREFIX" \
        --disable-test-modules \
        --disable-ipv6 \
        --with-ensurepip=no \
        > configure.log 2>&1
) || { tail -n 40 "$WASI/configure.log" "$WASI/config.log" >&2 || true; die "wasi configure failed"; }

# Make's LDFLAGS_NODIST lands after configure's own WASI flags, so it wins.
wasi_ldflags=""
[[ "$KEEP_DEBUG" == 1 ]] || wasi_ldflags+=" -Wl,--strip-debug"
if [[ -n "$STACK_SIZE" ]]; then
    # stack + 4 MiB of data + heap headroom, rounded to 64 KiB pages
    wasi_ldflags+=" -Wl,-z,stack-size=$STACK_SIZE -Wl,--initial-memory=$(( (STACK_SIZE + 10485760 + 65535) / 65536 * 65536 ))"
fi
log "wasi: make -j$JOBS (log: $WASI/make.log)"
(cd "$WASI" && make -j"$JOBS" LDFLAGS_NODIST="$wasi_ldflags" > make.log 2>&1) ||
    { tail -n 60 "$WASI/make.log" >&2; die "wasi make failed"; }
[[ -f "$WASI/python.wasm" ]] || die "wasi build produced no python.wasm"

# Which stdlib extension modules did not get built in, and why.
mods_state() {   # STATE -> module names
    sed -n "s/^MODULE_\\([A-Z0-9_]*\\)_STATE=$1\$/\\1/p" "$WASI/Makefile" | tr 'A-Z' 'a-z' | tr '\n' ' ' | sed 's/ $//'
}
mods_missing=$(mods_state missing)
mods_na=$(mods_state 'n\/a')
mods_disabled=$(mods_state disabled)
log "wasi: built python.wasm ($(du -h "$WASI/python.wasm" | cut -f1))"
log "wasi: modules missing (no wasm library): ${mods_missing:-none}"
log "wasi: modules n/a on WASI: ${mods_na:-none}"

# --- assemble the output ------------------------------------------------------------
STAGE="$WORK/stage"
log "assembling stdlib"
rm -rf "$STAGE"
mkdir -p "$STAGE/lib"
LIBDIR="$STAGE/lib/python$PYVER"
cp -a "$SRC/Lib" "$LIBDIR"
find "$LIBDIR" -name __pycache__ -type d -prune -exec rm -rf {} +
# Trim what a sandboxed, GUI-less, pip-less interpreter never imports: the
# test suite, IDLE/tkinter/turtledemo, ensurepip's bundled wheels, and the
# per-package test directories.
rm -rf "$LIBDIR"/{test,idlelib,tkinter,turtledemo,ensurepip} \
    "$LIBDIR"/{lib2to3/tests,distutils/tests,unittest/test,ctypes/test,sqlite3/test}
# The build's sysconfig data module (its name is what this build's
# sysconfig._get_sysconfigdata_name() computes).
PYBUILDDIR=$(cat "$WASI/pybuilddir.txt")
sysconfigdata=("$WASI/$PYBUILDDIR"/_sysconfigdata_*.py)
[[ -f "${sysconfigdata[0]}" ]] || die "no _sysconfigdata_*.py in $WASI/$PYBUILDDIR"
cp "${sysconfigdata[@]}" "$LIBDIR/"
# lib-dynload: getpath's exec_prefix landmark. dist-packages: where Debian's
# site.py looks for extra packages ($GUEST_STDLIB/dist-packages).
mkdir -p "$LIBDIR/lib-dynload" "$LIBDIR/dist-packages"
# Precompile with hash-based, unchecked .pyc files: valid whatever mtimes the
# guest's filesystem reports, never rewritten, so the tree can be read-only.
log "precompiling stdlib (.pyc, unchecked-hash)"
"$BUILD_PYTHON" -E -s -m compileall -q -j "$JOBS" --invalidation-mode unchecked-hash \
    -s "$LIBDIR" -p "$GUEST_STDLIB" "$LIBDIR" > "$WORK/compileall.log" 2>&1 ||
    { tail -n 30 "$WORK/compileall.log" >&2; die "compileall failed"; }
cp "$WASI/python.wasm" "$STAGE/python.wasm"

sysconfig_name=$(basename "${sysconfigdata[0]}" .py)
cat > "$STAGE/env" <<EOF
# Guest layout for python.wasm (CPython $PYVER, wasm32-wasi, WASI preview1).
# Shell-sourceable. Paths on the host are relative to this directory.
PYTHON_WASM=python.wasm
PYTHON_STDLIB_HOST=lib/python$PYVER
PYTHON_STDLIB_GUEST=$GUEST_STDLIB
PYTHON_ARGV0=$GUEST_ARGV0
PYTHONHOME=$GUEST_PREFIX
EOF
cat > "$STAGE/README" <<EOF
python.wasm — CPython $("$BUILD_PYTHON" -c 'import platform; print(platform.python_version())') for wasm32-wasi (WASI preview1 command module)
Built by tools/build-python.sh from Debian source package $SRCPKG $SRC_VERSION$([[ -n $ZLIB_VERSION ]] && echo " (+ zlib $ZLIB_VERSION)")
($([[ $DEB_PATCHES == 1 ]] && echo "with debian/patches applied" || echo "pristine .orig tarball, debian/patches not applied")),
clang-14 + wasm-ld-14, Debian wasi-libc, CPython's Tools/wasm/config.site-wasm32-wasi.

Guest layout python.wasm needs:
  preopen   host <this dir>/lib/python$PYVER  at guest  $GUEST_STDLIB
            (read-only is fine: .pyc files are precompiled, unchecked-hash)
  env       PYTHONHOME=$GUEST_PREFIX  (also the compiled-in prefix, so python.wasm
            finds the stdlib without it too; setting it skips the search)
            optional: PYTHONDONTWRITEBYTECODE=1 if the user's dirs are read-only
  argv[0]   $GUEST_ARGV0  (becomes sys.executable; need not exist.
            Any other value works too; a bare name gives sys.executable '')
  optional  a preopen for the user's files, e.g. host cwd at guest /, so
            'python3.11 script.py' finds script.py (the guest cwd is /)

sys.path inside the guest:
  $GUEST_PREFIX/lib/python311.zip (absent), $GUEST_STDLIB,
  $GUEST_STDLIB/lib-dynload (empty), then $GUEST_STDLIB/dist-packages
  (Debian's site.py; empty, on sys.path only if it exists: add pure-Python
  packages there or preopen a directory at that guest path).
Build config data: $GUEST_STDLIB/$sysconfig_name.py

Imports: WASI preview1 only (module wasi_snapshot_preview1). No threads, no
subprocess, no dynamic loading, no sockets beyond the given fds.
Modules not built in:
  no wasm32-wasi library here:  ${mods_missing:-none}
  not available on WASI:        ${mods_na:-none}
  disabled (test modules etc.): ${mods_disabled:-none}
Known 3.11-on-WASI limits: asyncio event loops fail (no socketpair), no
threading (_thread is a stub), the recursion limit is 600.
Trimmed from the stdlib: test/, idlelib/, tkinter/, turtledemo/, ensurepip/
and per-package test directories.

Run under node's WASI (the reference host):
  node tools/python-wasi/run-node.mjs <this dir>/python.wasm -c 'print(1)'
EOF

log "installing into $OUT"
rm -rf "${OUT:?}/python.wasm" "${OUT:?}/lib" "${OUT:?}/README" "${OUT:?}/env" "$STAMP"
mv "$STAGE/python.wasm" "$STAGE/lib" "$STAGE/README" "$STAGE/env" "$OUT/"
rmdir "$STAGE"
cat > "$STAMP" <<EOF
recipe=$RECIPE
source=$SRCPKG $SRC_VERSION
zlib=${ZLIB_VERSION:-none}
python.wasm=$(sha256sum < "$OUT/python.wasm" | cut -d' ' -f1)
EOF
log "done: $OUT/python.wasm ($(du -h "$OUT/python.wasm" | cut -f1)), stdlib $(du -sh "$OUT/lib" | cut -f1), $SRCPKG $SRC_VERSION"
