#!/usr/bin/env bash
# tests/cap/run.sh — capabilities end to end, through the CLI, against
# Debian's real OCI registry (docker-registry, distribution 2.8) started here
# on loopback with a temporary config and storage, plus a small fake registry
# (tests/cap/fake_registry.py) for what a real one cannot be made to do.
#
#   AIRLOCK=build/asan/airlock tests/cap/run.sh      (the default binary)
#
# What it checks:
#   publish -> URN; fetch by tag and by digest (identical bytes, SHA-256);
#   cap call of a real plugin (examples/plugins/count_vowels.c when present,
#   else a tiny C plugin built here) with its manifest as config;
#   a 12 MiB blob is refused: up front when the descriptor or Content-Length
#   say so (real registry, 0 bytes read), mid-stream when neither does (fake
#   registry, chunked, descriptor of exactly 10 MiB: at most 10 MiB + one
#   buffer read, figure printed); digest mismatches (a blob tampered with in
#   the registry's storage, a manifest that does not hash to its digest, a
#   lying Docker-Content-Digest); hostile URNs; registry down during publish
#   (exit 75, queued), up again, retry: exactly one manifest PUT in the
#   registry's log and the tag resolves; publish twice: idempotent, no PUT;
#   same tag, another module: refused; a push done but not recorded (crash
#   between push and mark): retry records it without a second PUT; kill -9
#   of the publisher between store and push (its registry accepts and never
#   answers), then the real registry on that address and retry: nothing
#   lost, one PUT; two concurrent retries on one outbox: one PUT per event;
#   the cache: second fetch from it, a corrupted entry refused and re-fetched,
#   digest URNs served from it with the registry down.
#
# Registries are started with their own config, storage and log in a
# temporary directory, on free loopback ports; only processes started here
# are stopped. Last line: "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source tests/cli/lib/report.bash

AIRLOCK=${AIRLOCK:-build/asan/airlock}
REGISTRY_BIN=${REGISTRY_BIN:-/usr/bin/docker-registry}
[[ $AIRLOCK = /* ]] || AIRLOCK=$ROOT/$AIRLOCK
if [[ ! -x $AIRLOCK ]]; then
    echo "no airlock binary at $AIRLOCK (make asan)"
    echo "0 passed, 1 failed"
    exit 1
fi
if [[ ! -x $REGISTRY_BIN ]]; then
    echo "no $REGISTRY_BIN (apt-get install docker-registry)"
    echo "0 passed, 1 failed"
    exit 1
fi

# loopback only: never through a proxy from the environment
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY AIRLOCK_REGISTRY_TOKEN
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

T=$(mktemp -d /tmp/airlock-cap.XXXXXX)
export AIRLOCK_STATE_DIR=$T/state
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT

MIB=$((1 << 20))

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# start_registry NAME PORT [CERT KEY]: a registry with storage $T/NAME/data,
# log $T/NAME/log (appended across restarts), https when given a certificate;
# sets REG_PID.
start_registry() {
    local name=$1 port=$2 dir=$T/$1 scheme=http tls=""
    if [[ $# -ge 4 ]]; then
        scheme=https
        tls=$(printf '  tls:\n    certificate: %s\n    key: %s' "$3" "$4")
    fi
    mkdir -p "$dir/data"
    cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$tls
EOF
    "$REGISTRY_BIN" serve "$dir/config.yml" >>"$dir/log" 2>&1 &
    REG_PID=$!
    PIDS+=("$REG_PID")
    for _ in $(seq 300); do
        [[ $(curl -s -k -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/") = 200 ]] && return 0
        sleep 0.1
    done
    echo "registry $name did not start on port $port:"
    tail -5 "$dir/log"
    return 1
}

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# start_fake MODE: sets FAKE_PID and FAKE_PORT.
start_fake() {
    local pf=$T/fake-$1.port
    rm -f "$pf"
    python3 tests/cap/fake_registry.py "$pf" "$1" &
    FAKE_PID=$!
    PIDS+=("$FAKE_PID")
    for _ in $(seq 100); do
        [[ -s $pf ]] && break
        sleep 0.05
    done
    FAKE_PORT=$(cat "$pf")
}

# manifest PUTs for NAME:TAG in a registry's access log
put_count() { grep -c "\"PUT /v2/$2/manifests/$3 HTTP" "$T/$1/log"; }

outbox_rows() {
    python3 - "$1" "$2" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
print(db.execute("SELECT COUNT(*) FROM promotion_events WHERE name = ?", (sys.argv[2],)).fetchone()[0])
EOF
}

# run CMD...: stdout in OUT, stderr in ERR, status in RC
run() {
    "$@" >"$T/out" 2>"$T/err"
    RC=$?
    OUT=$(cat "$T/out")
    ERR=$(cat "$T/err")
}

# ---- plugins -------------------------------------------------------------------------------

PLUG=$T/plugins
mkdir -p "$PLUG"
if [[ -f examples/plugins/count_vowels.c && -x examples/plugins/build.sh ]] &&
    examples/plugins/build.sh "$PLUG" examples/plugins/count_vowels.c >"$T/build.log" 2>&1; then
    MODULE=$PLUG/count_vowels.wasm
    FUNC=count_vowels
    EXPECT_HELLO='"count":3'      # "hello world": e o o
    EXPECT_HELLO_O='"count":2'    # with config vowels=o
else
    cat >"$PLUG/count.c" <<'EOF'
/* count vowels of the input (aeiou, or config "vowels"), output in decimal */
#include <stdint.h>
#define IMPORT(n) __attribute__((import_module("extism:host/env"), import_name(n)))
IMPORT("input_length") uint64_t input_length(void);
IMPORT("input_load_u8") uint8_t input_load_u8(uint64_t);
IMPORT("alloc") uint64_t alloc(uint64_t);
IMPORT("store_u8") void store_u8(uint64_t, uint8_t);
IMPORT("load_u8") uint8_t load_u8(uint64_t);
IMPORT("length") uint64_t length(uint64_t);
IMPORT("config_get") uint64_t config_get(uint64_t);
IMPORT("output_set") void output_set(uint64_t, uint64_t);
__attribute__((export_name("count"))) int32_t count(void) {
    static const char key[] = "vowels";
    char vowels[16] = "aeiou";
    uint64_t k = alloc(sizeof key - 1);
    for (uint64_t i = 0; i < sizeof key - 1; i++) store_u8(k + i, (uint8_t)key[i]);
    uint64_t v = config_get(k);
    if (v) {
        uint64_t n = length(v);
        for (uint64_t i = 0; i < n && i < 15; i++) vowels[i] = (char)load_u8(v + i);
        vowels[n < 15 ? n : 15] = 0;
    }
    uint64_t n = input_length(), c = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b = input_load_u8(i);
        for (const char *p = vowels; *p; p++) if (b == (uint8_t)*p) { c++; break; }
    }
    char tmp[24];
    int t = 0;
    do { tmp[t++] = (char)('0' + c % 10); c /= 10; } while (c);
    uint64_t out = alloc((uint64_t)t);
    for (int i = 0; i < t; i++) store_u8(out + (uint64_t)i, (uint8_t)tmp[t - 1 - i]);
    output_set(out, (uint64_t)t);
    return 0;
}
EOF
    clang-14 --target=wasm32-wasi -O2 --sysroot=/usr -nostartfiles -Wl,--no-entry \
        -o "$PLUG/count.wasm" "$PLUG/count.c" >"$T/build.log" 2>&1
    MODULE=$PLUG/count.wasm
    FUNC=count
    EXPECT_HELLO=3
    EXPECT_HELLO_O=2
fi
if [[ -f $MODULE ]]; then pass "plugin built ($(basename "$MODULE"))"; else fail "plugin built" "$(cat "$T/build.log")"; fi

# ---- the real registry ---------------------------------------------------------------------

PORT=$(free_port)
REG=http://127.0.0.1:$PORT
if start_registry main "$PORT"; then pass "docker-registry started on $REG"; else fail "docker-registry started"; finish; fi
MAIN_PID=$REG_PID

# Debian's distribution 2.8 takes an OCI manifest with our config media type and artifactType
printf '{}' >"$T/cfg.json"
run "$AIRLOCK" cap publish probe/artifact:1 "$MODULE" --registry "$REG"
if [[ $RC -eq 0 ]] && curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "$REG/v2/probe/artifact/manifests/1" | grep -q '"artifactType":"application/vnd.airlock.capability.v1"'; then
    pass "registry keeps an OCI artifact manifest (custom config media type, artifactType)"
else
    fail "registry keeps an OCI artifact manifest" "rc=$RC" "$OUT" "$ERR"
fi

# publish: the URN, then "pushed"
printf '{"config":{"vowels":"o"},"wasm":[{"path":"ignored.wasm"}]}' >"$T/manifest.json"
run "$AIRLOCK" cap publish acme/vowels:1.0 "$MODULE" --manifest "$T/manifest.json" --registry "$REG"
URN=$(head -n1 <<<"$OUT")
if [[ $RC -eq 0 && $URN = urn:airlock:cap:acme/vowels:1.0 && $(sed -n 2p <<<"$OUT") = pushed:* ]]; then
    pass "publish prints the URN and pushed"
else
    fail "publish prints the URN and pushed" "rc=$RC" "$OUT" "$ERR"
fi
[[ $(put_count main acme/vowels 1.0) -eq 1 ]] && pass "one manifest PUT for the publication" ||
    fail "one manifest PUT for the publication" "$(put_count main acme/vowels 1.0)"

# fetch by tag, then by digest: identical bytes, verified digest
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" -o "$T/by-tag.wasm"
DIGEST_URN=$(sed -n 's/^urn: //p' <<<"$OUT")
WASM_DIGEST=$(sed -n 's/^wasm_digest: //p' <<<"$OUT")
if [[ $RC -eq 0 ]] && cmp -s "$MODULE" "$T/by-tag.wasm" && [[ $WASM_DIGEST = sha256:$(sha256 "$MODULE") ]]; then
    pass "fetch by tag: same bytes, sha256 matches"
else
    fail "fetch by tag" "rc=$RC" "$OUT" "$ERR"
fi
run "$AIRLOCK" cap fetch "$DIGEST_URN" --registry "$REG" -o "$T/by-digest.wasm"
if [[ $RC -eq 0 && $DIGEST_URN = urn:airlock:cap:acme/vowels@sha256:* ]] && cmp -s "$MODULE" "$T/by-digest.wasm"; then
    pass "fetch by digest ($DIGEST_URN): same bytes"
else
    fail "fetch by digest" "rc=$RC" "$DIGEST_URN" "$OUT" "$ERR"
fi
MANIFEST_HEX=${DIGEST_URN##*sha256:}
if [[ $(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$REG/v2/acme/vowels/manifests/1.0" | sha256sum | cut -d' ' -f1) = "$MANIFEST_HEX" ]]; then
    pass "the digest URN names the registry's manifest"
else
    fail "the digest URN names the registry's manifest"
fi

# cap call: fetched into memory, run with the capability's manifest (config vowels=o)
run "$AIRLOCK" cap call "$URN" "$FUNC" --registry "$REG" --input "hello world"
if [[ $RC -eq 0 && $OUT = *"$EXPECT_HELLO_O"* ]]; then
    pass "cap call runs the plugin with its manifest's config ($OUT)"
else
    fail "cap call runs the plugin with its manifest's config" "rc=$RC" "$OUT" "$ERR"
fi
run "$AIRLOCK" cap publish acme/vowels-plain:1 "$MODULE" --registry "$REG"
run "$AIRLOCK" cap call urn:airlock:cap:acme/vowels-plain:1 "$FUNC" --input "hello world" --registry "$REG"
if [[ $RC -eq 0 && $OUT = *"$EXPECT_HELLO"* ]]; then
    pass "cap call with plugin options after FUNCTION ($OUT)"
else
    fail "cap call with plugin options after FUNCTION" "rc=$RC" "$OUT" "$ERR"
fi

run "$AIRLOCK" cap call urn:airlock:cap:acme/vowels-plain:1 "$FUNC" --registry "$REG" --input --cache
if [[ $RC -eq 0 && $OUT = *"${EXPECT_HELLO/3/2}"* ]]; then
    pass "cap call: a plugin option's value is the plugin's (--input --cache)"
else
    fail "cap call: plugin option values passed through" "rc=$RC" "$OUT" "$ERR"
fi

# publish_again NAME RC OUT|ERR WANT ARGS...: `cap publish acme/vowels:1.0 ARGS` again exits
# RC with WANT in its stdout (OUT) or stderr (ERR); the registry still saw one manifest PUT
publish_again() {
    local name=$1 rc=$2 stream=$3 want=$4
    shift 4
    run "$AIRLOCK" cap publish acme/vowels:1.0 "$@" --registry "$REG"
    local got=${!stream}
    if [[ $RC -eq $rc && $got = *"$want"* && $(put_count main acme/vowels 1.0) -eq 1 ]]; then
        pass "$name"
    else
        fail "$name" "rc=$RC" "$OUT" "$ERR" "PUTs: $(put_count main acme/vowels 1.0)"
    fi
}

# publish twice: the same event, nothing pushed again
publish_again "publish twice is idempotent (still one PUT)" 0 OUT "duplicate: same digest" \
    "$MODULE" --manifest "$T/manifest.json"

# the same tag with another module: refused (tags are immutable)
cp "$MODULE" "$T/other.wasm"
printf '\0\4name\1x' >>"$T/other.wasm"   # a custom section: another digest, still a module
publish_again "another digest under a published tag is refused" 1 ERR immutable "$T/other.wasm"
# ... also when the tag was pushed by someone else (not in this outbox)
publish_again "a tag carrying another capability in the registry is never overwritten" 1 ERR \
    "already carries another capability" "$T/other.wasm" --outbox "$T/other-outbox.db"

# a composite capability: its DAG, canonicalised, is the layer
printf '{"nodes": ["urn:airlock:cap:acme/vowels:1.0", "urn:airlock:cap:acme/vowels-plain:1"],\n "edges": [[0, 1]]}\n' >"$T/dag.json"
run "$AIRLOCK" cap publish acme/pipeline:1 --dag "$T/dag.json" --registry "$REG"
CANON=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True, separators=(",",":")), end="")' "$T/dag.json" | sha256sum | cut -d' ' -f1)
LAYER=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$REG/v2/acme/pipeline/manifests/1")
if [[ $RC -eq 0 && $OUT = *"dag sha256:$CANON"* && $LAYER = *"application/vnd.airlock.capability.dag.v1+json"* &&
    $LAYER = *"sha256:$CANON"* ]]; then
    pass "composite published: the canonical DAG's sha256 is the layer"
else
    fail "composite published" "rc=$RC" "$OUT" "$ERR" "$LAYER"
fi
run "$AIRLOCK" cap fetch urn:airlock:cap:acme/pipeline:1 --registry "$REG"
[[ $RC -eq 1 && $ERR = *composite* ]] && pass "fetching a composite as a module: refused clearly" ||
    fail "composite fetch refused" "rc=$RC" "$ERR"

# hostile URNs are refused before any request
N_BEFORE=$(grep -c 'HTTP/1.1"' "$T/main/log")
hostile_ok=1
for urn in 'urn:airlock:cap:../../v2/x:1' 'urn:airlock:cap:a:1?x=1' 'urn:airlock:cap:A:1' \
    'urn:airlock:cap:a@sha256:1234' $'urn:airlock:cap:a:1\r\nX: y' 'urn:other:a:1'; do
    run "$AIRLOCK" cap fetch "$urn" --registry "$REG"
    if [[ $RC -ne 1 || -z $ERR ]]; then fail "hostile URN refused: $urn" "rc=$RC" "$ERR"; hostile_ok=0; fi
done
if [[ $hostile_ok = 1 && $(grep -c 'HTTP/1.1"' "$T/main/log") -eq $N_BEFORE ]]; then
    pass "hostile URNs refused, no request sent (e.g. $(head -c 100 <<<"$ERR"))"
else
    fail "hostile URNs refused without a request"
fi

run "$AIRLOCK" cap fetch urn:airlock:cap:acme/nothing:1 --registry "$REG"
[[ $RC -eq 1 && $ERR = *"no such capability"* ]] && pass "unknown capability: clear error" ||
    fail "unknown capability" "rc=$RC" "$ERR"

# ---- 12 MiB ------------------------------------------------------------------------------------

# push_blob NAME FILE: monolithic upload with curl; prints the digest
push_blob() {
    local d loc sep
    d=sha256:$(sha256 "$2")
    loc=$(curl -s -D - -o /dev/null -X POST "$REG/v2/$1/blobs/uploads/" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
    [[ $loc = /* ]] && loc=$REG$loc
    [[ $loc = *\?* ]] && sep='&' || sep='?'
    curl -s -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary @"$2" "$loc${sep}digest=$d"
    echo "$d"
}
put_manifest() {  # NAME TAG LAYER_DIGEST LAYER_SIZE CONFIG_DIGEST
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.airlock.capability.config.v1+json","digest":"%s","size":2},"layers":[{"mediaType":"application/wasm","digest":"%s","size":%s}]}' \
        "$5" "$3" "$4" >"$T/m.json"
    curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
        --data-binary @"$T/m.json" "$REG/v2/$1/manifests/$2"
}
{ printf '\0asm\1\0\0\0'; head -c $((12 * MIB - 8)) /dev/zero; } >"$T/big.wasm"
BIG_D=$(push_blob acme/big "$T/big.wasm")
CFG_D=$(push_blob acme/big "$T/cfg.json")
c1=$(put_manifest acme/big honest "$BIG_D" $((12 * MIB)) "$CFG_D")
c2=$(put_manifest acme/big lying "$BIG_D" $((10 * MIB)) "$CFG_D")
[[ $c1 = 201 && $c2 = 201 ]] && pass "12 MiB blob pushed with curl, two manifests reference it" ||
    fail "12 MiB blob pushed" "$c1 $c2"

run "$AIRLOCK" cap fetch urn:airlock:cap:acme/big:honest --registry "$REG" -o "$T/x.wasm"
if [[ $RC -eq 1 && $ERR = *"declares 12582912 bytes"* && $ERR = *"0 bytes read"* && ! -e $T/x.wasm ]]; then
    pass "12 MiB layer refused from its descriptor, before reading"
else
    fail "12 MiB layer refused from its descriptor" "rc=$RC" "$ERR"
fi
run "$AIRLOCK" cap fetch urn:airlock:cap:acme/big:lying --registry "$REG" -o "$T/x.wasm"
if [[ $RC -eq 1 && $ERR = *"announces 12582912 bytes"* && $ERR = *"(0 bytes read)"* && ! -e $T/x.wasm ]]; then
    pass "descriptor lying (10 MiB): refused on Content-Length before the body"
else
    fail "descriptor lying: refused on Content-Length" "rc=$RC" "$ERR"
fi

start_fake registry
FAKE_REG=http://127.0.0.1:$FAKE_PORT
run "$AIRLOCK" cap fetch urn:airlock:cap:big:1 --registry "$FAKE_REG" -o "$T/x.wasm"
READ=$(sed -n 's/.*transfer aborted after \([0-9]*\) bytes read.*/\1/p' <<<"$ERR" | head -n1)
if [[ $RC -eq 1 && -n $READ ]] && ((READ > 10 * MIB && READ <= 10 * MIB + 64 * 1024)) && [[ ! -e $T/x.wasm ]]; then
    pass "12 MiB chunked without Content-Length: aborted mid-stream after $READ bytes (10 MiB + $((READ - 10 * MIB)))"
else
    fail "12 MiB aborted mid-stream" "rc=$RC" "$ERR"
fi
run "$AIRLOCK" cap fetch urn:airlock:cap:big:1 --registry "$FAKE_REG" --max-bytes 1M
READ=$(sed -n 's/.*after \([0-9]*\) bytes read.*/\1/p;s/.*(\([0-9]*\) bytes read).*/\1/p' <<<"$ERR" | head -n1)
if [[ $RC -eq 1 && $READ = 0 && $ERR = *"more than the limit of 1048576"* ]]; then
    pass "--max-bytes 1M: the 10 MiB descriptor refused before reading"
else
    fail "--max-bytes 1M" "rc=$RC" "$ERR"
fi

run "$AIRLOCK" cap fetch urn:airlock:cap:redir:1 --registry "$FAKE_REG" -o "$T/redir.wasm"
[[ $RC -eq 0 && $(sha256 "$T/redir.wasm") = $(printf '\0asm\1\0\0\0' | sha256sum | cut -d' ' -f1) ]] &&
    pass "blob redirect (307) followed and verified" || fail "blob redirect" "rc=$RC" "$ERR"
run "$AIRLOCK" cap fetch urn:airlock:cap:empty:1 --registry "$FAKE_REG"
[[ $RC -eq 1 && $ERR = *"config is not a JSON object"* ]] && pass "an empty config blob: refused cleanly" ||
    fail "empty config blob" "rc=$RC" "$ERR"
run "$AIRLOCK" cap fetch urn:airlock:cap:auth:1 --registry "$FAKE_REG"
[[ $RC -eq 1 && $ERR = *401* ]] && pass "registry asking for a token: 401 reported" || fail "401 without token" "rc=$RC" "$ERR"
run env AIRLOCK_REGISTRY_TOKEN=s3cret "$AIRLOCK" cap fetch urn:airlock:cap:auth:1 --registry "$FAKE_REG"
[[ $RC -eq 0 ]] && pass "\$AIRLOCK_REGISTRY_TOKEN sent as a Bearer token" || fail "Bearer token" "rc=$RC" "$ERR"

# ---- digest mismatches --------------------------------------------------------------------------

cp "$MODULE" "$T/tamper.wasm"
printf '\0\4name\1t' >>"$T/tamper.wasm"
run "$AIRLOCK" cap publish acme/tamper:1 "$T/tamper.wasm" --registry "$REG"
HEX=$(sha256 "$T/tamper.wasm")
BLOB=$T/main/data/docker/registry/v2/blobs/sha256/${HEX:0:2}/$HEX/data
if [[ -f $BLOB ]]; then
    # same size, one byte changed: only the digest can tell
    python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-1]^=1; open(p,"wb").write(b)' "$BLOB"
    run "$AIRLOCK" cap fetch urn:airlock:cap:acme/tamper:1 --registry "$REG" -o "$T/x.wasm"
    if [[ $RC -eq 1 && $ERR = *"digest mismatch"* && ! -e $T/x.wasm ]]; then
        pass "blob tampered with in the registry's storage: digest mismatch refused"
    else
        fail "tampered blob refused" "rc=$RC" "$ERR"
    fi
else
    fail "tampered blob: no storage file at $BLOB"
fi
run "$AIRLOCK" cap fetch "urn:airlock:cap:evil@sha256:$(printf x | sha256sum | cut -d' ' -f1)" --registry "$FAKE_REG"
[[ $RC -eq 1 && $ERR = *"manifest digest mismatch"* ]] && pass "manifest not hashing to its digest URN refused" ||
    fail "manifest digest mismatch" "rc=$RC" "$ERR"
run "$AIRLOCK" cap fetch urn:airlock:cap:evil:1 --registry "$FAKE_REG"
[[ $RC -eq 1 && $ERR = *"the registry says"* ]] && pass "lying Docker-Content-Digest refused" ||
    fail "lying Docker-Content-Digest" "rc=$RC" "$ERR"

# ---- the cache ------------------------------------------------------------------------------

CACHE=$T/cache
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" --cache "$CACHE"
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" --cache "$CACHE" -o "$T/cached.wasm"
if [[ $RC -eq 0 && $OUT = *"from_cache: yes"* && $OUT = *"bytes_read: 0"* ]] && cmp -s "$MODULE" "$T/cached.wasm"; then
    pass "second fetch served from the cache"
else
    fail "second fetch from the cache" "rc=$RC" "$OUT" "$ERR"
fi
ENTRY=$CACHE/sha256/$(sha256 "$MODULE")
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[10]^=0xff; open(p,"wb").write(b)' "$ENTRY"
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" --cache "$CACHE" -o "$T/recached.wasm"
if [[ $RC -eq 0 && $OUT = *"from_cache: no"* ]] && cmp -s "$MODULE" "$T/recached.wasm" &&
    [[ $(sha256 "$ENTRY") = $(sha256 "$MODULE") ]]; then
    pass "corrupted cache entry refused, fetched again and replaced"
else
    fail "corrupted cache entry" "rc=$RC" "$OUT" "$ERR"
fi
stop_pid "$MAIN_PID"
run "$AIRLOCK" cap fetch "$DIGEST_URN" --registry "$REG" --cache "$CACHE" -o "$T/offline.wasm"
if [[ $RC -eq 0 && $OUT = *"from_cache: yes"* ]] && cmp -s "$MODULE" "$T/offline.wasm"; then
    pass "digest URN served from the cache with the registry down"
else
    fail "digest URN from the cache, registry down" "rc=$RC" "$OUT" "$ERR"
fi
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" --cache "$CACHE"
[[ $RC -eq 1 && $ERR = *unreachable* ]] && pass "a tag needs the registry (never resolved from the cache)" ||
    fail "tag with the registry down" "rc=$RC" "$ERR"

# ---- registry down during publish, then up: exactly once ----------------------------------------

P2=$(free_port)
REG2=http://127.0.0.1:$P2
run "$AIRLOCK" cap publish acme/late:1 "$MODULE" --registry "$REG2"
if [[ $RC -eq 75 && $(head -n1 <<<"$OUT") = urn:airlock:cap:acme/late:1 && $OUT = *queued* && $(outbox_rows "$AIRLOCK_STATE_DIR/outbox.db" acme/late) = 1 ]]; then
    pass "registry down: publish queued the event (exit 75)"
else
    fail "registry down: publish queued" "rc=$RC" "$OUT" "$ERR"
fi
run "$AIRLOCK" cap publish acme/late:1 "$MODULE" --registry "$REG2"
[[ $RC -eq 75 && $(outbox_rows "$AIRLOCK_STATE_DIR/outbox.db" acme/late) = 1 ]] &&
    pass "publishing again while down: still one event" || fail "publish again while down" "rc=$RC" "$OUT"
start_registry late "$P2" || fail "second registry started"
run "$AIRLOCK" cap retry --registry "$REG2" --force
if [[ $RC -eq 0 && $OUT = "pushed 1, pending 0" ]]; then pass "registry up: retry pushed it"; else fail "retry pushed it" "rc=$RC" "$OUT" "$ERR"; fi
run "$AIRLOCK" cap retry --registry "$REG2" --force
run "$AIRLOCK" cap publish acme/late:1 "$MODULE" --registry "$REG2"
run "$AIRLOCK" cap fetch urn:airlock:cap:acme/late:1 --registry "$REG2" -o "$T/late.wasm"
if [[ $(put_count late acme/late 1) -eq 1 && $RC -eq 0 ]] && cmp -s "$MODULE" "$T/late.wasm"; then
    pass "the event arrived exactly once (1 manifest PUT) and the tag resolves"
else
    fail "exactly once" "PUTs: $(put_count late acme/late 1)" "rc=$RC" "$ERR"
fi

# pushed but not recorded (a crash between the PUT and the mark): no second PUT
run "$AIRLOCK" cap publish acme/marked:1 "$MODULE" --registry "$REG2"
python3 - "$AIRLOCK_STATE_DIR/outbox.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("UPDATE promotion_events SET state='pending', manifest_digest='' WHERE name='acme/marked'")
db.commit()
EOF
run "$AIRLOCK" cap retry --registry "$REG2" --force
if [[ $RC -eq 0 && $OUT = "pushed 1, pending 0" && $(put_count late acme/marked 1) -eq 1 ]]; then
    pass "push done but not recorded: retry finds the tag, records it, no second PUT"
else
    fail "push not recorded" "rc=$RC" "$OUT" "$ERR" "PUTs: $(put_count late acme/marked 1)"
fi

# ---- kill -9 between store and push ------------------------------------------------------------

start_fake silent
SILENT_PID=$FAKE_PID
P3=$FAKE_PORT
REG3=http://127.0.0.1:$P3
OB3=$T/kill-outbox.db
"$AIRLOCK" cap publish acme/killed:1 "$MODULE" --registry "$REG3" --outbox "$OB3" \
    --registry-timeout 60s >"$T/killed.out" 2>&1 &
PUB=$!
for _ in $(seq 200); do
    [[ -f $OB3 && $(outbox_rows "$OB3" acme/killed 2>/dev/null) = 1 ]] && break
    sleep 0.05
done
STORED=$(outbox_rows "$OB3" acme/killed 2>/dev/null)
sleep 0.2  # the publisher is now blocked in its first request
{ kill -9 "$PUB" && wait "$PUB"; } 2>/dev/null  # (quiet: no "Killed" line)
stop_pid "$SILENT_PID"
if [[ $STORED = 1 ]]; then pass "the event was stored before the (hanging) push"; else fail "stored before push" "$(cat "$T/killed.out")"; fi
start_registry killed "$P3" || fail "registry on the killed publisher's address"
run "$AIRLOCK" cap retry --registry "$REG3" --outbox "$OB3" --force
run2_out=$OUT
run "$AIRLOCK" cap fetch urn:airlock:cap:acme/killed:1 --registry "$REG3" -o "$T/killed.wasm"
if [[ $run2_out = "pushed 1, pending 0" && $(put_count killed acme/killed 1) -eq 1 && $RC -eq 0 ]] &&
    cmp -s "$MODULE" "$T/killed.wasm"; then
    pass "kill -9 between store and push: nothing lost, pushed once"
else
    fail "kill -9 between store and push" "$run2_out" "PUTs: $(put_count killed acme/killed 1)" "$ERR"
fi

# ---- two publishers on one outbox -----------------------------------------------------------

P4=$(free_port)
REG4=http://127.0.0.1:$P4
OB4=$T/concurrent.db
for i in 1 2 3 4 5 6; do
    "$AIRLOCK" cap publish "acme/c$i:1" "$MODULE" --registry "$REG4" --outbox "$OB4" >/dev/null 2>&1
done
start_registry conc "$P4" || fail "registry for the concurrent retries"
"$AIRLOCK" cap retry --registry "$REG4" --outbox "$OB4" --force >"$T/r1" 2>&1 &
R1=$!
"$AIRLOCK" cap retry --registry "$REG4" --outbox "$OB4" --force >"$T/r2" 2>&1 &
R2=$!
wait "$R1"
wait "$R2"
"$AIRLOCK" cap retry --registry "$REG4" --outbox "$OB4" --force >"$T/r3" 2>&1
total=0
ok=1
for i in 1 2 3 4 5 6; do
    n=$(put_count conc "acme/c$i" 1)
    [[ $n -eq 1 ]] || ok=0
done
for f in r1 r2 r3; do
    n=$(sed -n 's/^pushed \([0-9]*\),.*/\1/p' "$T/$f")
    total=$((total + ${n:-0}))
done
if [[ $ok = 1 && $total = 6 && $(cat "$T/r3") = "pushed 0, pending 0" ]]; then
    pass "two concurrent retries: each event pushed once ($(cat "$T/r1") / $(cat "$T/r2"))"
else
    fail "two concurrent retries" "$(cat "$T/r1")" "$(cat "$T/r2")" "$(cat "$T/r3")"
fi

# ---- https ---------------------------------------------------------------------------------

if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/key.pem" \
    -out "$T/cert.pem" -days 2 -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1; then
    P5=$(free_port)
    REG5=https://127.0.0.1:$P5
    start_registry tls "$P5" "$T/cert.pem" "$T/key.pem" || fail "https registry started"
    run "$AIRLOCK" cap publish acme/tls:1 "$MODULE" --registry "$REG5" --outbox "$T/tls.db"
    [[ $RC -eq 75 && $OUT = *"certificate"* ]] && pass "https: an unknown CA is refused (queued)" ||
        fail "https: unknown CA refused" "rc=$RC" "$OUT" "$ERR"
    run "$AIRLOCK" cap retry --registry "$REG5" --outbox "$T/tls.db" --ca-file "$T/cert.pem" --force
    run "$AIRLOCK" cap fetch urn:airlock:cap:acme/tls:1 --registry "$REG5" --ca-file "$T/cert.pem" -o "$T/tls.wasm"
    if [[ $RC -eq 0 && $(put_count tls acme/tls 1) -eq 1 ]] && cmp -s "$MODULE" "$T/tls.wasm"; then
        pass "https with --ca-file: pushed once and fetched"
    else
        fail "https with --ca-file" "rc=$RC" "$OUT" "$ERR"
    fi
else
    fail "openssl could not make a test certificate"
fi

# ---- usage ------------------------------------------------------------------------------------

run "$AIRLOCK" cap --help
[[ $RC -eq 0 && $OUT = *"urn:airlock:cap:NAME@sha256:HEX"* ]] && pass "cap --help" || fail "cap --help" "rc=$RC"
run env -u AIRLOCK_REGISTRY "$AIRLOCK" cap fetch "$URN"
[[ $RC -eq 2 && $ERR = *"no registry"* ]] && pass "no registry: usage error" || fail "no registry" "rc=$RC" "$ERR"
run "$AIRLOCK" cap publish acme/x "$MODULE" --registry "$REG"
[[ $RC -eq 2 ]] && pass "publish NAME without VERSION: usage error" || fail "publish without version" "rc=$RC"
run "$AIRLOCK" cap fetch "$URN" --registry "$REG" --bogus
[[ $RC -eq 2 ]] && pass "unknown option: usage error" || fail "unknown option" "rc=$RC"

finish
