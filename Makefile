# faultline — build, test and benchmark.
#
#   make            build every program into bin/
#   make test       build and run the unit and integration tests
#   make asan       build with ASan+UBSan and run the same tests
#   make bench-mockprov   mockprov against nginx (wrk), and 1,000 streams
#   make clean
#
# Dependencies come from Debian packages through pkg-config; the first make
# on a fresh machine installs the missing ones (scripts/deps.sh).

CC ?= gcc
# Where objects and test binaries go (bin/ gets copies of the programs).
O ?= build
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror
BASE_CFLAGS := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -g $(WARN) \
	-MMD -MP -Icommon
REL_FLAGS := -O2
ASAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

# Criterion's own options for every test binary run.
TEST_JOBS ?= 2
CRITERION_FLAGS ?= --jobs $(TEST_JOBS)

ifeq ($(filter clean,$(MAKECMDGOALS)),)
-include build/deps.mk
endif

COMMON_SRC := $(sort $(wildcard common/*.c))
MOCKPROV_LIB_SRC := $(filter-out mockprov/main.c,$(sort $(wildcard mockprov/*.c)))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
INTEG_SRC := $(sort $(wildcard tests/integration/*.c)) $(sort $(wildcard tests/support/*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

.PHONY: all test asan asan-build bench-mockprov demo clean deps
all: bin/mockprov

build/deps.mk: scripts/deps.sh
	@mkdir -p build
	scripts/deps.sh > $@.tmp
	mv $@.tmp $@

deps: build/deps.mk

# $(call variant,NAME,FLAGS): objects under $(O)/NAME, programs under
# $(O)/NAME/bin, test binaries $(O)/NAME/test-unit and test-integration.
define variant
$(O)/$(1)/%.o: %.c build/deps.mk
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_CFLAGS) $(2) $$(DEP_CFLAGS) $$(if $$(filter tests/%,$$<),$$(TEST_CFLAGS) -Itests/support) -c $$< -o $$@

$(O)/$(1)/bin/mockprov: $$(patsubst %.c,$(O)/$(1)/%.o,mockprov/main.c $$(MOCKPROV_LIB_SRC) $$(COMMON_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS)

$(O)/$(1)/bin/streamclient: $$(patsubst %.c,$(O)/$(1)/%.o,$$(BENCH_SRC) $$(COMMON_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS)

$(O)/$(1)/test-unit: $$(patsubst %.c,$(O)/$(1)/%.o,$$(UNIT_SRC) $$(MOCKPROV_LIB_SRC) $$(COMMON_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(TEST_LIBS)

$(O)/$(1)/test-integration: $$(patsubst %.c,$(O)/$(1)/%.o,$$(INTEG_SRC) $$(COMMON_SRC))
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$^ -o $$@ $$(DEP_LIBS) $$(TEST_LIBS)
endef

$(eval $(call variant,rel,$(REL_FLAGS)))
$(eval $(call variant,asan,$(ASAN_FLAGS)))

bin/%: $(O)/rel/bin/%
	@mkdir -p bin
	cp $< $@

test: all $(O)/rel/test-unit $(O)/rel/test-integration
	$(O)/rel/test-unit $(CRITERION_FLAGS)
	FAULTLINE_BIN=bin $(O)/rel/test-integration $(CRITERION_FLAGS)

asan-build: $(O)/asan/bin/mockprov $(O)/asan/test-unit $(O)/asan/test-integration

# Criterion's own runner leaks a little under --jobs; tests/lsan.supp names
# only libcriterion.so, so a leak in our code still fails the run.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	UBSAN_OPTIONS=print_stacktrace=1

asan: asan-build
	$(ASAN_ENV) $(O)/asan/test-unit $(CRITERION_FLAGS)
	$(ASAN_ENV) FAULTLINE_BIN=$(O)/asan/bin $(O)/asan/test-integration $(CRITERION_FLAGS)

bench-mockprov: all bin/streamclient
	bench/mockprov.sh

clean:
	rm -rf build bin $(filter-out build,$(O))

-include $(shell find $(O) -name '*.d' 2>/dev/null)

demo: all
	scripts/demo.sh
