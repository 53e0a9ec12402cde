# faultline — build, test and benchmark.
#
#   make            build every program into bin/ (mockprov, loadgen, gateway, chaos; streamclient, curlfloor)
#   make test       build and run the unit and integration tests
#   make asan       build with ASan+UBSan and run the same tests
#   make fuzz       build the libFuzzer harnesses (tests/fuzz/, clang) and run each
#                   for FUZZ_SECONDS (20); fails on any crash, kept under $(O)/fuzz/artifacts/
#   make bench-mockprov   mockprov against nginx (wrk), and 1,000 streams
#   make bench-loadgen    loadgen against wrk (closed loop), and 5,000 req/s open loop
#   make bench-gateway    wrk through the gateway (local and Redis-shared), through HAProxy and direct; RSS
#   make bench-gateway-workers   the gateway with WORKERS (2) workers against HAProxy with as many threads
#   make bench-stream     1,000 streams direct and through the gateway: added inter-chunk latency, RSS, CPU
#   make bench-sim  chaos sim's speed: three-setups, 734,000 requests, a 1,000-point sweep
#   make demo       the classic outage suite through bin/chaos (about 2 minutes)
#   make demo-walkthrough   one provider's fault timeline, by hand, under loadgen and the gateway
#   make suite      the classic suite, stream-stall, three-setups, slow-tail, a detect
#                   scenario, policy-ab, replicas-hang and the failover traps (contract-drift,
#                   flapping, correlated, good-day, all-down-degraded), cross-vendor, then a 3-point
#                   timeout-knee sweep, each result through chaos gate
#   make study      the detection and timeout studies at time scale 1 (about 50 minutes):
#                   sweeps, and OUT/study-STAMP/study.md with their tables
#   make install    PREFIX=/usr/local (DESTDIR honoured): the programs, man pages,
#                   example scenarios and configs, docs; make uninstall removes them
#   make clean      (make O=DIR … builds and cleans DIR alone)
#
# Dependencies come from Debian packages through pkg-config; the first make
# on a fresh machine installs the missing ones (scripts/deps.sh).

# make's built-in default CC is cc; gcc unless the caller chose another.
ifeq ($(origin CC),default)
CC := gcc
endif
# Where objects, programs and test binaries go. With the default, `make`
# also copies the programs into bin/; with another O= nothing outside it is
# written, so parallel builds do not meet.
O ?= build
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror
BASE_CFLAGS := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -g $(WARN) \
	-MMD -MP -I.
REL_FLAGS := -O2
ASAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

# Criterion's own options for every test binary run.
TEST_JOBS ?= 2
CRITERION_FLAGS ?= --jobs $(TEST_JOBS)

ifeq ($(filter clean,$(MAKECMDGOALS)),)
-include $(O)/deps.mk
endif

# curl_uv needs libcurl: only the programs that make HTTP requests link it.
CURL_UV_SRC := common/curl_uv.c
COMMON_SRC := $(filter-out $(CURL_UV_SRC),$(sort $(wildcard common/*.c)))
MOCKPROV_LIB_SRC := $(filter-out mockprov/main.c,$(sort $(wildcard mockprov/*.c)))
LOADGEN_LIB_SRC := $(filter-out loadgen/main.c,$(sort $(wildcard loadgen/*.c)))
GATEWAY_LIB_SRC := $(filter-out gateway/main.c,$(sort $(wildcard gateway/*.c)))
RUNNER_LIB_SRC := $(filter-out runner/main.c,$(sort $(wildcard runner/*.c)))
# The runner validates scenarios with mockprov's, the gateway's and
# loadgen's own config code, and its simulator (sim/) runs their pure
# decision code: it links the three programs' library parts whole.
SIM_SRC := $(sort $(wildcard sim/*.c))
RUNNER_ALL_SRC := $(RUNNER_LIB_SRC) $(SIM_SRC) $(MOCKPROV_LIB_SRC) $(GATEWAY_LIB_SRC) \
	$(LOADGEN_LIB_SRC)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c)) tests/support/sanitizer_workers.c tests/support/tmpdir.c \
	tests/support/jsondiff.c tests/support/jassert.c
INTEG_SRC := $(sort $(wildcard tests/integration/*.c)) \
	$(filter-out tests/support/jassert.c,$(sort $(wildcard tests/support/*.c)))
BENCH_SRC := $(filter-out bench/curlfloor.c,$(sort $(wildcard bench/*.c)))

PROGRAMS := mockprov loadgen gateway chaos streamclient curlfloor
# Where the built programs are run from: bin/ for the default build.
BIN_DIR := $(if $(filter build,$(O)),bin,$(O)/rel/bin)

.PHONY: all test asan asan-build fuzz fuzz-build fuzz-cc bench-mockprov bench-loadgen bench-gateway bench-gateway-workers bench-stream bench-sim demo demo-walkthrough suite study peers clean deps install uninstall
all: $(addprefix $(BIN_DIR)/,$(PROGRAMS))

$(O)/deps.mk: scripts/deps.sh
	@mkdir -p $(O)
	scripts/deps.sh > $@.tmp
	mv $@.tmp $@

deps: $(O)/deps.mk

# $(call variant,NAME,FLAGS): objects under $(O)/NAME, programs under
# $(O)/NAME/bin, test binaries $(O)/NAME/test-unit and test-integration.
define variant
$(O)/$(1)/%.o: %.c $(O)/deps.mk
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_CFLAGS) $(2) $$(DEP_CFLAGS) $$(if $$(filter tests/%,$$<),$$(TEST_CFLAGS)) -c $$< -o $$@

$(O)/$(1)/bin/mockprov: $$(patsubst %.c,$(O)/$(1)/%.o,mockprov/main.c $$(MOCKPROV_LIB_SRC) $$(COMMON_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS)

$(O)/$(1)/bin/loadgen: $$(patsubst %.c,$(O)/$(1)/%.o,loadgen/main.c $$(LOADGEN_LIB_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS)

$(O)/$(1)/bin/gateway: $$(patsubst %.c,$(O)/$(1)/%.o,gateway/main.c $$(GATEWAY_LIB_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS)

$(O)/$(1)/bin/chaos: $$(patsubst %.c,$(O)/$(1)/%.o,runner/main.c $$(RUNNER_ALL_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS)

$(O)/$(1)/bin/curlfloor: $$(patsubst %.c,$(O)/$(1)/%.o,bench/curlfloor.c $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS)

$(O)/$(1)/bin/streamclient: $$(patsubst %.c,$(O)/$(1)/%.o,$$(BENCH_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS)

$(O)/$(1)/test-unit: $$(patsubst %.c,$(O)/$(1)/%.o,$$(UNIT_SRC) $$(RUNNER_ALL_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS) $$(TEST_LIBS)

$(O)/$(1)/test-integration: $$(patsubst %.c,$(O)/$(1)/%.o,$$(INTEG_SRC) $$(COMMON_SRC) $$(CURL_UV_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(CURL_LIBS) $$(TEST_LIBS)
endef

$(eval $(call variant,rel,$(REL_FLAGS)))
$(eval $(call variant,asan,$(ASAN_FLAGS)))

# Copied then renamed: a program running from bin/ keeps its old file.
bin/%: $(O)/rel/bin/%
	@mkdir -p bin
	cp $< $@.tmp && mv -f $@.tmp $@

# The official openai and @anthropic-ai/sdk npm packages, which the
# integration suites run as real clients (tests/node/*.mjs): installed once
# per build dir, the stamp naming the versions. The tests find them through
# FAULTLINE_NODE_PREFIX (ESM imports ignore NODE_PATH) and fail without them.
OPENAI_NPM := openai@4.104.0
ANTHROPIC_NPM := @anthropic-ai/sdk@1.17.0
NODE_PREFIX := $(abspath $(O)/node)
NODE_STAMP := $(O)/node/.installed-$(OPENAI_NPM)-$(subst /,_,$(ANTHROPIC_NPM))

$(NODE_STAMP):
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
		{ echo "make: the integration tests need node and npm (Debian: nodejs npm)" >&2; exit 1; }
	@mkdir -p $(O)/node
	npm install --no-audit --no-fund --prefix $(O)/node $(OPENAI_NPM) $(ANTHROPIC_NPM)
	touch $@

test: all $(O)/rel/test-unit $(O)/rel/test-integration $(NODE_STAMP)
	$(O)/rel/test-unit $(CRITERION_FLAGS)
	FAULTLINE_BIN=$(BIN_DIR) FAULTLINE_NODE_PREFIX=$(NODE_PREFIX) $(O)/rel/test-integration $(CRITERION_FLAGS)
	MAKE="$(MAKE)" O=$(O) tests/install.sh

asan-build: $(addprefix $(O)/asan/bin/,$(PROGRAMS)) $(O)/asan/test-unit $(O)/asan/test-integration

# The runner leaks a little inside libcriterion, so it runs with
# detect_leaks=0; the test processes (and the programs they start) get
# FAULTLINE_WORKER_ASAN_OPTIONS from tests/support/sanitizer_workers.c,
# with every report written under $(ASAN_LOGS); any report fails the run.
ASAN_LOGS := $(O)/asan-logs
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	FAULTLINE_WORKER_ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$(abspath $(ASAN_LOGS))/asan \
	UBSAN_OPTIONS=print_stacktrace=1

asan: asan-build $(NODE_STAMP)
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	$(ASAN_ENV) $(O)/asan/test-unit $(CRITERION_FLAGS) || { cat $(ASAN_LOGS)/* 2>/dev/null; exit 1; }
	$(ASAN_ENV) FAULTLINE_BIN=$(O)/asan/bin FAULTLINE_NODE_PREFIX=$(NODE_PREFIX) \
		$(O)/asan/test-integration $(CRITERION_FLAGS) || \
		{ cat $(ASAN_LOGS)/* 2>/dev/null; exit 1; }
	@if [ -n "$$(ls -A $(ASAN_LOGS))" ]; then \
		cat $(ASAN_LOGS)/*; echo "make asan: sanitizer reports above" >&2; exit 1; fi

# ---- fuzzing ----
# libFuzzer harnesses, one per parser or loader a stranger's bytes reach
# (tests/fuzz/*.c), built with clang under ASan+UBSan into $(O)/fuzz. Each
# runs for FUZZ_SECONDS from its committed seeds (tests/fuzz/corpus/NAME/,
# only read), a dictionary (tests/fuzz/{http,sse,json,anthropic}.dict) and the corpus
# it grew before ($(O)/fuzz/corpus/NAME/, where new inputs go); a crash, leak, UB or hang is written to
# $(O)/fuzz/artifacts/NAME/ and fails the run. Replay one input with
# $(O)/fuzz/bin/NAME FILE.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_FLAGS := -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZERS := http_request sse_relay json_span gw_config mock_config scenario schema contract \
	anthropic

$(O)/fuzz/%.o: %.c $(O)/deps.mk | fuzz-cc
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) $(DEP_CFLAGS) -c $< -o $@

fuzz-cc:
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || \
		{ echo "make fuzz: needs $(FUZZ_CC) with libFuzzer (Debian: clang libclang-rt-dev)" >&2; exit 1; }

FUZZ_OBJ = $(patsubst %.c,$(O)/fuzz/%.o,$(1))
$(O)/fuzz/bin/http_request: $(call FUZZ_OBJ,tests/fuzz/http_request.c $(COMMON_SRC))
$(O)/fuzz/bin/sse_relay: $(call FUZZ_OBJ,tests/fuzz/sse_relay.c gateway/relay.c gateway/anthropic.c gateway/tokens.c \
	$(COMMON_SRC))
$(O)/fuzz/bin/json_span: $(call FUZZ_OBJ,tests/fuzz/json_span.c tests/support/jsondiff.c $(COMMON_SRC))
$(O)/fuzz/bin/gw_config: $(call FUZZ_OBJ,tests/fuzz/gw_config.c tests/fuzz/fuzzfile.c \
	$(GATEWAY_LIB_SRC) $(COMMON_SRC) $(CURL_UV_SRC))
$(O)/fuzz/bin/mock_config: $(call FUZZ_OBJ,tests/fuzz/mock_config.c tests/fuzz/fuzzfile.c \
	$(MOCKPROV_LIB_SRC) $(COMMON_SRC))
$(O)/fuzz/bin/scenario: $(call FUZZ_OBJ,tests/fuzz/scenario.c tests/fuzz/fuzzfile.c \
	$(RUNNER_ALL_SRC) $(COMMON_SRC) $(CURL_UV_SRC))
$(O)/fuzz/bin/schema: $(call FUZZ_OBJ,tests/fuzz/schema.c $(wildcard gateway/schema*.c) $(COMMON_SRC))
$(O)/fuzz/bin/contract: $(call FUZZ_OBJ,tests/fuzz/contract.c mockprov/contract.c $(COMMON_SRC))
$(O)/fuzz/bin/anthropic: $(call FUZZ_OBJ,tests/fuzz/anthropic.c gateway/anthropic.c gateway/tokens.c $(COMMON_SRC))
$(O)/fuzz/bin/%:
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ -o $@ $(DEP_LIBS) $(CURL_LIBS)

fuzz-build: $(addprefix $(O)/fuzz/bin/,$(FUZZERS))

# Every harness runs, then the run fails if any found something.
fuzz: fuzz-build
	@failed=""; for f in $(FUZZERS); do \
		mkdir -p $(O)/fuzz/corpus/$$f $(O)/fuzz/artifacts/$$f; \
		case $$f in http_request) dict=http;; sse_relay) dict=sse;; anthropic) dict=anthropic;; \
		*) dict=json;; esac; \
		echo "fuzz: $$f for $(FUZZ_SECONDS) s (log: $(O)/fuzz/$$f.log)"; \
		if $(O)/fuzz/bin/$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-print_final_stats=1 -artifact_prefix=$(O)/fuzz/artifacts/$$f/ \
			-dict=tests/fuzz/$$dict.dict \
			$(O)/fuzz/corpus/$$f tests/fuzz/corpus/$$f > $(O)/fuzz/$$f.log 2>&1; then \
			grep -E '^stat::(number_of_executed_units|new_units_added)' $(O)/fuzz/$$f.log | \
				tr '\n' ' ' | sed 's/^/      /'; echo; \
		else \
			tail -n 40 $(O)/fuzz/$$f.log; failed="$$failed $$f"; \
		fi; \
	done; \
	if [ -n "$$failed" ]; then \
		echo "make fuzz: failed:$$failed (inputs under $(O)/fuzz/artifacts/)" >&2; exit 1; fi

bench-mockprov: all
	FAULTLINE_BIN=$(BIN_DIR) bench/mockprov.sh

bench-loadgen: all
	FAULTLINE_BIN=$(BIN_DIR) bench/loadgen.sh

bench-gateway: all
	FAULTLINE_BIN=$(BIN_DIR) bench/gateway.sh

WORKERS ?= 2
bench-gateway-workers: all
	FAULTLINE_BIN=$(BIN_DIR) WORKERS=$(WORKERS) bench/gateway.sh workers

bench-stream: all
	FAULTLINE_BIN=$(BIN_DIR) bench/stream.sh

bench-sim: all
	FAULTLINE_BIN=$(BIN_DIR) bench/sim.sh

demo: all
	FAULTLINE_BIN=$(BIN_DIR) scripts/demo.sh

demo-walkthrough: all
	FAULTLINE_BIN=$(BIN_DIR) scripts/walkthrough.sh

suite: all
	FAULTLINE_BIN=$(BIN_DIR) scripts/suite.sh

study: all
	FAULTLINE_BIN=$(BIN_DIR) scripts/study.sh

# Other gateways (HAProxy, nginx, Portkey: peers/) through the same outages
# as faultline's own setups, one report (docs/peers.md). Installs what is
# missing (apt, npm into build/peers/); PEERS_SCALE (0.5), PEERS_SCENARIOS, PEERS.
peers: all
	FAULTLINE_BIN=$(BIN_DIR) scripts/peers.sh

clean:
	rm -rf $(O) $(if $(filter build,$(O)),bin)

-include $(shell find $(O)/rel $(O)/asan $(O)/fuzz -name '*.d' 2>/dev/null)

# ---- install ----
# make install PREFIX=/usr/local (DESTDIR honoured). The four programs keep
# their own names in PREFIX/libexec/faultline/bin/, because chaos runs
# mockprov, gateway and loadgen from the directory it is in (after
# symbolic links; $FAULTLINE_BIN overrides) and its gnuplot scripts from
# that directory's ../plots. On the PATH they are symbolic links named
# faultline-NAME: a `gateway` or `loadgen` in /usr/local/bin would be a
# poor neighbour. chaos is also linked under its plain name, the one the
# docs and man pages use (and `chaos --help` after an install works).
# Man pages go to share/man/man1, the example scenarios and configs to
# share/faultline, README.md and docs/ to share/doc/faultline.
# make uninstall removes exactly those files, then the directories of
# faultline's own that are left empty.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL ?= install
INSTALL_PROGRAMS := mockprov loadgen gateway chaos
I_ROOT := $(DESTDIR)$(PREFIX)
I_LIBEXEC := $(I_ROOT)/libexec/faultline
I_SHARE := $(I_ROOT)/share/faultline
I_DOC := $(I_ROOT)/share/doc/faultline
I_MAN1 := $(I_ROOT)/share/man/man1
MAN_PAGES := $(sort $(wildcard man/*.1))
PLOT_SCRIPTS := $(sort $(wildcard plots/*.gp))
SCENARIO_FILES := $(sort $(wildcard scenarios/*.json))
BASELINE_FILES := $(sort $(wildcard scenarios/baselines/*.json))
DOC_FILES := $(sort $(wildcard docs/*.md))

install: all
	$(INSTALL) -d $(I_ROOT)/bin $(I_LIBEXEC)/bin $(I_LIBEXEC)/plots $(I_MAN1) \
		$(I_SHARE)/scenarios $(I_DOC)/docs
	$(INSTALL) -m 755 $(addprefix $(O)/rel/bin/,$(INSTALL_PROGRAMS)) $(I_LIBEXEC)/bin/
	$(INSTALL) -m 644 $(PLOT_SCRIPTS) $(I_LIBEXEC)/plots/
	for p in $(INSTALL_PROGRAMS); do \
		ln -sf ../libexec/faultline/bin/$$p $(I_ROOT)/bin/faultline-$$p || exit 1; done
	ln -sf ../libexec/faultline/bin/chaos $(I_ROOT)/bin/chaos
	$(INSTALL) -m 644 $(MAN_PAGES) $(I_MAN1)/
	$(INSTALL) -m 644 $(SCENARIO_FILES) $(I_SHARE)/scenarios/
	$(if $(BASELINE_FILES),$(INSTALL) -d $(I_SHARE)/scenarios/baselines && \
		$(INSTALL) -m 644 $(BASELINE_FILES) $(I_SHARE)/scenarios/baselines/)
	$(INSTALL) -m 644 gateway/example.json $(I_SHARE)/gateway-example.json
	$(INSTALL) -m 644 mockprov/example.json $(I_SHARE)/mockprov-example.json
	$(INSTALL) -m 644 README.md $(I_DOC)/
	$(INSTALL) -m 644 $(DOC_FILES) $(I_DOC)/docs/

uninstall:
	rm -f $(addprefix $(I_LIBEXEC)/bin/,$(INSTALL_PROGRAMS)) \
		$(addprefix $(I_ROOT)/bin/faultline-,$(INSTALL_PROGRAMS)) $(I_ROOT)/bin/chaos \
		$(addprefix $(I_LIBEXEC)/,$(PLOT_SCRIPTS)) \
		$(addprefix $(I_MAN1)/,$(notdir $(MAN_PAGES))) \
		$(addprefix $(I_SHARE)/,$(SCENARIO_FILES) $(BASELINE_FILES)) \
		$(I_SHARE)/gateway-example.json $(I_SHARE)/mockprov-example.json \
		$(I_DOC)/README.md $(addprefix $(I_DOC)/,$(DOC_FILES))
	-rmdir $(I_LIBEXEC)/bin $(I_LIBEXEC)/plots $(I_LIBEXEC) \
		$(I_SHARE)/scenarios/baselines $(I_SHARE)/scenarios $(I_SHARE) \
		$(I_DOC)/docs $(I_DOC) 2>/dev/null || true
