# airlock — GNU Make build.
#   make               optimized release build: build/release/{libairlock.a,libairlock.so,airlock}
#   make asan          ASan+UBSan build (build/asan): library, CLI, spec-runner, unit tests
#   make check         build release + asan and run the whole test suite (tests/run-all.sh)
#   make clang-check   release build of everything with clang into build/clang-release,
#                      warnings are errors (does not touch build/release)
#   make cli-test      the CLI's shell test against build/asan/airlock
#   make samples       rebuild samples/*.wasm from samples/*.wat (needs wat2wasm)
#   make CC=clang      any target with clang instead of gcc
#   make clean
CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang

VERSION  := 0.1.0

CSTD     := -std=c17 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
INCLUDES := -Iinclude -Isrc/engine
DEPFLAGS  = -MMD -MP

RELEASE_FLAGS := -O2 -g -fPIC -DNDEBUG
ASAN_FLAGS    := -O1 -g -fPIC -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

JANSSON_CFLAGS := $(shell pkg-config --cflags jansson 2>/dev/null)
JANSSON_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)

# libairlock: the engine, the WASI host and the sandbox backends. WASI and the
# backends see only the public header (plus their own), like any embedder.
SANDBOX_SRC := $(wildcard src/sandbox/*.c) $(wildcard src/sandbox/native/*.c) $(wildcard src/sandbox/gvisor/*.c)
NET_SRC := $(wildcard src/net/*.c)
# plugins (the Extism host ABI, manifests) and capabilities (OCI registry, publication)
PLUGIN_SRC := $(wildcard src/plugin/*.c)
CAP_SRC := $(wildcard src/cap/*.c)
ENGINE_SRC := $(wildcard src/engine/*.c) $(wildcard src/wasi/*.c) $(SANDBOX_SRC) $(NET_SRC) $(PLUGIN_SRC) $(CAP_SRC)
# libairlock's own dependencies: whoever links it links these too.
LIB_DEPS := $(JANSSON_LIBS) -lcurl -lsqlite3 -lcrypto -lseccomp -lcap -lpthread -lm
# libairlock-service: airlockd's internals (HTTP API, MCP, sessions, audit),
# a caller of airlock.h like the CLI; airlockd and `airlock mcp|audit` link it.
SERVICE_SRC := $(wildcard src/service/*.c)
SERVICE_DEPS := -lmicrohttpd -lyaml -lsqlite3 -lcrypto
DAEMON_SRC := $(wildcard src/daemon/*.c)
CLI_SRC    := $(wildcard src/cli/*.c)
SPEC_SRC   := $(wildcard tests/spec/*.c)
UNIT_SRC   := $(wildcard tests/unit/*.c)

# $(call objs,variant,sources)
objs = $(patsubst %.c,build/$(1)/obj/%.o,$(2))

# The compiler of each variant; clang-release always uses clang.
VCC_release       = $(CC)
VCC_asan          = $(CC)
VCC_clang-release = $(CLANG)

.PHONY: all release asan check clang-check cli-test samples plugins clean
all: release

# $(call variant,name,flags): every build product of one configuration under build/<name>.
define variant
build/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(VCC_$(1)) $$(CSTD) $$(WARN) $$(INCLUDES) $$(DEPFLAGS) $(2) $$(JANSSON_CFLAGS) -c $$< -o $$@

# The CLI sees only the public header: it must stay a thin caller of airlock.h.
$(call objs,$(1),$(CLI_SRC)): INCLUDES := -Iinclude -DAIRLOCK_VERSION='"$(VERSION)"'
$(call objs,$(1),$(wildcard src/wasi/*.c)): INCLUDES := -Iinclude -Isrc/wasi
$(call objs,$(1),$(wildcard src/sandbox/*.c)): INCLUDES := -Iinclude -Isrc/wasi -Isrc/sandbox -Isrc/net
$(call objs,$(1),$(wildcard src/sandbox/native/*.c)): INCLUDES := -Iinclude -Isrc/sandbox -Isrc/sandbox/native -Isrc/net
$(call objs,$(1),$(wildcard src/sandbox/gvisor/*.c)): INCLUDES := -Iinclude -Isrc/sandbox -Isrc/sandbox/gvisor -Isrc/net
$(call objs,$(1),$(NET_SRC)): INCLUDES := -Iinclude -Isrc/net
$(call objs,$(1),$(PLUGIN_SRC) $(wildcard tests/unit/test_plugin*.c tests/unit/test_manifest*.c)): INCLUDES := -Iinclude -Isrc/plugin -Isrc/wasi -Isrc/net
$(call objs,$(1),$(CAP_SRC) $(wildcard tests/unit/test_cap*.c)): INCLUDES := -Iinclude -Isrc/cap
$(call objs,$(1),$(SERVICE_SRC) $(DAEMON_SRC) src/cli/mcp.c src/cli/audit.c $(wildcard tests/unit/test_svc_*.c)): INCLUDES := -Iinclude -Isrc/service -DAIRLOCK_VERSION='"$(VERSION)"' 
$(call objs,$(1),tests/unit/test_egress.c tests/unit/test_sni.c tests/unit/test_http_head.c tests/unit/test_proxy.c): INCLUDES := -Iinclude -Isrc/net
# unit tests of the sandbox internals see the internal headers they test
$(call objs,$(1),tests/unit/test_seccomp.c tests/unit/test_cgroup.c tests/unit/test_sandbox_util.c): INCLUDES := -Iinclude -Isrc/sandbox -Isrc/sandbox/native

build/$(1)/libairlock.a: $(call objs,$(1),$(ENGINE_SRC))
	@rm -f $$@
	ar rcs $$@ $$^

build/$(1)/libairlock.so: $(call objs,$(1),$(ENGINE_SRC))
	$$(VCC_$(1)) $(2) -shared -o $$@ $$^ $$(LIB_DEPS)

build/$(1)/libairlock-service.a: $(call objs,$(1),$(SERVICE_SRC))
	@rm -f $$@
	ar rcs $$@ $$^

build/$(1)/airlock: $(call objs,$(1),$(CLI_SRC)) build/$(1)/libairlock-service.a build/$(1)/libairlock.a
	$$(VCC_$(1)) $(2) -o $$@ $$^ $$(SERVICE_DEPS) $$(LIB_DEPS)

build/$(1)/airlockd: $(call objs,$(1),$(DAEMON_SRC)) build/$(1)/libairlock-service.a build/$(1)/libairlock.a
	$$(VCC_$(1)) $(2) -o $$@ $$^ $$(SERVICE_DEPS) $$(LIB_DEPS)

build/$(1)/spec-runner: $(call objs,$(1),$(SPEC_SRC)) build/$(1)/libairlock.a
	$$(VCC_$(1)) $(2) -o $$@ $$^ $$(LIB_DEPS)

# one cmocka binary per tests/unit/test_*.c
build/$(1)/tests/%: build/$(1)/obj/tests/unit/%.o build/$(1)/libairlock-service.a build/$(1)/libairlock.a
	@mkdir -p $$(dir $$@)
	$$(VCC_$(1)) $(2) -o $$@ $$^ -lcmocka $$(SERVICE_DEPS) $$(LIB_DEPS)

-include $$(wildcard build/$(1)/obj/src/*/*.d build/$(1)/obj/src/*/*/*.d build/$(1)/obj/tests/*/*.d)
endef

$(eval $(call variant,release,$(RELEASE_FLAGS)))
$(eval $(call variant,asan,$(ASAN_FLAGS)))
$(eval $(call variant,clang-release,$(RELEASE_FLAGS)))

# the example plugins (examples/plugins/*.c) and the hostile test plugin, for wasm32
plugins:
	examples/plugins/build.sh build/plugins
	examples/plugins/build.sh build/plugins tests/plugin/hostile.c tests/plugin/files.c

release: build/release/libairlock.a build/release/libairlock.so build/release/airlock build/release/airlockd
UNIT_TESTS = $(patsubst tests/unit/%.c,build/$(1)/tests/%,$(UNIT_SRC))
asan: build/asan/libairlock.a build/asan/airlock build/asan/airlockd build/asan/spec-runner $(call UNIT_TESTS,asan)

check: asan release
	tests/run-all.sh

# Everything (library, CLI, spec-runner, unit tests) compiled by clang with
# -Werror, in its own directory so it never clobbers the gcc builds.
clang-check: build/clang-release/libairlock.a build/clang-release/libairlock.so \
             build/clang-release/airlock build/clang-release/airlockd build/clang-release/spec-runner \
             $(call UNIT_TESTS,clang-release)

cli-test: build/asan/airlock
	AIRLOCK=build/asan/airlock tests/cli/test-cli.sh

samples:
	for w in samples/*.wat; do wat2wasm --debug-names "$$w" -o "$${w%.wat}.wasm" || exit 1; done

clean:
	rm -rf build
.SECONDARY:
