#!/usr/bin/env bash
# tools/setup.sh — install everything airlock needs to build and test on
# Debian 12 (bookworm). Non-interactive and idempotent: when every package is
# already installed it only checks and exits, without touching apt.
#
#   tools/setup.sh            install what is missing
#   tools/setup.sh --check    only report what is missing (exit 1 if anything is)
set -euo pipefail

PACKAGES=(
    build-essential gcc make pkg-config git ca-certificates
    clang clang-14 lld-14 llvm-14 libclang-rt-14-dev libclang-rt-14-dev-wasm32
    libjansson-dev libcmocka-dev
    wabt binaryen nodejs wasi-libc
    hyperfine
    autoconf   # tools/build-python.sh: regenerate CPython's configure after debian/patches
    libseccomp-dev libcap-dev   # the native backend
    runsc crun bubblewrap       # gVisor backend; crun and bwrap: references in tests and bench
    python3 procps util-linux   # tests/sandbox: python3 runs inside the sandbox; pgrep, setpriv
    curl openssl wrk            # tests/net: curl inside the sandbox, a test CA; bench/egress.sh
    libmicrohttpd-dev libyaml-dev libsqlite3-dev libssl-dev   # airlockd: HTTP, config, audit, SHA-256
    libcurl4-openssl-dev docker-registry   # capabilities: OCI registry client; a real registry in tests
)

check_only=false
case "${1:-}" in
    --check) check_only=true ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "setup.sh: unknown option '$1'" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
    echo "setup: all ${#PACKAGES[@]} packages are installed"
    exit 0
fi
echo "setup: missing: ${missing[*]}"
if $check_only; then
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get not found; airlock's setup supports Debian 12 only" >&2
    exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)   # -n: never prompt (there may be no terminal, e.g. in CI)
    else
        echo "setup: not root and sudo is not installed; run as root" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" </dev/null
echo "setup: installed ${#missing[@]} package(s)"
