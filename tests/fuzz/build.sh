#!/usr/bin/env bash
# build.sh — build the libFuzzer target tests/fuzz/fuzz_module.c into
# build/fuzz/fuzz_module, with the engine (src/engine/*.c) compiled in and
# instrumented: coverage for libFuzzer, AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer, which aborts on the first report. Also
# builds tests/fuzz/fuzz_sni.c + src/net/sni.c (the TLS ClientHello SNI
# parser, issue 5) into build/fuzz/fuzz_sni the same way, and
# tests/fuzz/fuzz_http_head.c + src/net/http_head.c (request heads, the
# rewrite for the origin, chunked bodies; issue 5) into
# build/fuzz/fuzz_http_head, and tests/fuzz/fuzz_policy_file.c +
# src/cli/policy_file.c (the exec --policy JSON file) into
# build/fuzz/fuzz_policy_file, and tests/fuzz/fuzz_svc_request.c +
# src/service/request.c (airlockd's execution request bodies, issue 6) into
# build/fuzz/fuzz_svc_request, tests/fuzz/fuzz_cap.c + src/cap/{urn,manifest}.c
# (capability URNs and OCI manifests) into build/fuzz/fuzz_cap, and tests/fuzz/fuzz_manifest.c +
# src/plugin/manifest.c (Extism plugin manifests, issue 7) into
# build/fuzz/fuzz_manifest.
#
#   tests/fuzz/build.sh            (CC=clang-14 by default)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CC=${CC:-clang-14}
command -v "$CC" >/dev/null || CC=clang
OUT=build/fuzz
OBJ=$OUT/obj
mkdir -p "$OBJ"

CFLAGS=(-std=c17 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -Iinclude -Isrc/engine
        -fsanitize=address,undefined -fno-sanitize-recover=undefined)

objs=()
for src in src/engine/*.c tests/fuzz/fuzz_module.c; do
    obj=$OBJ/$(basename "${src%.c}").o
    # rebuild when the source or any engine header is newer than the object
    if [ ! -f "$obj" ] || [ -n "$(find "$src" include/airlock.h src/engine -name '*.[ch]' -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_module" "${objs[@]}" -lm -lpthread
echo "built $OUT/fuzz_module" >&2

# fuzz_sni: only sni.c is needed (pure, no library dependencies)
sni_objs=()
for src in src/net/sni.c tests/fuzz/fuzz_sni.c; do
    obj=$OBJ/$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/net/net.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/net -Iinclude -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    sni_objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_sni" "${sni_objs[@]}"
echo "built $OUT/fuzz_sni" >&2

# fuzz_http_head: only http_head.c is needed (pure, libc only)
hh_objs=()
for src in src/net/http_head.c tests/fuzz/fuzz_http_head.c; do
    obj=$OBJ/$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/net/net.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/net -Iinclude -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    hh_objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_http_head" "${hh_objs[@]}"
echo "built $OUT/fuzz_http_head" >&2

# fuzz_policy_file: the `airlock exec --policy` JSON parser (src/cli/policy_file.c,
# issue 5) with units.c for the value parsers it shares with the flags and
# src/service/policy_json.c for the strict reading and egress rules it shares
# with airlockd; jansson itself is the system's (not instrumented). Objects are prefixed "cli_" so they
# cannot collide with the engine's.
pf_objs=()
for src in src/cli/policy_file.c src/service/policy_json.c src/cli/units.c tests/fuzz/fuzz_policy_file.c; do
    obj=$OBJ/cli_$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/cli/policy_file.h src/service/policy_json.h src/cli/run.h src/cli/cli.h include/airlock.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/cli -Iinclude -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    pf_objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_policy_file" "${pf_objs[@]}" -ljansson
echo "built $OUT/fuzz_policy_file" >&2

# fuzz_svc_request: airlockd's execution request parser (src/service/request.c,
# issue 6) behind json_loadb, with src/service/policy_json.c (its strict
# reading, egress rules and UTF-8 decoding); its result JSON needs al_status_name
# (src/sandbox/policy.c, libc only) and al_trap_message (the engine objects
# built above). Objects are prefixed "svc_" (src/service/api.c and the
# engine's api.c share a basename).
sr_objs=()
for src in src/service/request.c src/service/policy_json.c src/sandbox/policy.c tests/fuzz/fuzz_svc_request.c; do
    obj=$OBJ/svc_$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/service/service.h src/service/policy_json.h src/sandbox/sandbox.h include/airlock.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/service -Isrc/sandbox -Isrc/wasi -Isrc/net -Iinclude \
            $(pkg-config --cflags jansson 2>/dev/null) -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    sr_objs+=("$obj")
done
for src in src/engine/*.c; do sr_objs+=("$OBJ/$(basename "${src%.c}").o"); done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_svc_request" "${sr_objs[@]}" -ljansson -lm -lpthread
echo "built $OUT/fuzz_svc_request" >&2

# fuzz_svc_config: airlockd's YAML config parser (src/service/config.c, issue 6)
# with redact.c (it validates the patterns; the target also redacts its input)
# and auth.c; libyaml, libcrypto and jansson are the system's. Objects are
# prefixed "svc_".
svc_objs=()
for src in src/service/config.c src/service/redact.c src/service/auth.c tests/fuzz/fuzz_svc_config.c; do
    obj=$OBJ/svc_$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/service/service.h include/airlock.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/service $(pkg-config --cflags jansson) -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    svc_objs+=("$obj")
done
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_svc_config" "${svc_objs[@]}" -lyaml -lcrypto -ljansson
echo "built $OUT/fuzz_svc_config" >&2

# fuzz_manifest: Extism plugin manifests (src/plugin/manifest.c, issue 7) with
# src/net/policy.c (allowed_hosts are checked by the egress rules); jansson,
# libcurl (the url loader, linked but never called) and libcrypto are the
# system's. Objects are prefixed "plugin_".
mf_objs=()
for src in src/plugin/manifest.c src/net/policy.c tests/fuzz/fuzz_manifest.c; do
    obj=$OBJ/plugin_$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/net/net.h include/airlock.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/plugin -Isrc/net -Iinclude $(pkg-config --cflags jansson libcurl) \
            -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    mf_objs+=("$obj")
done
mf_objs+=("$OBJ/error.o") # al_error_set, from the engine objects built above
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_manifest" "${mf_objs[@]}" -ljansson -lcurl -lcrypto
echo "built $OUT/fuzz_manifest" >&2

# fuzz_cap: capability URNs and OCI manifests (src/cap/urn.c, src/cap/manifest.c,
# issue 7); jansson is the system's. Objects are prefixed "cap_" (src/cap/manifest.c
# and src/plugin/manifest.c share a basename).
cap_objs=()
for src in src/cap/urn.c src/cap/manifest.c tests/fuzz/fuzz_cap.c; do
    obj=$OBJ/cap_$(basename "${src%.c}").o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/cap/cap.h include/airlock.h -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        "$CC" "${CFLAGS[@]}" -Isrc/cap -Iinclude $(pkg-config --cflags jansson) \
            -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    cap_objs+=("$obj")
done
cap_objs+=("$OBJ/error.o") # al_error_set, from the engine objects built above
"$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_cap" "${cap_objs[@]}" -ljansson
echo "built $OUT/fuzz_cap" >&2
