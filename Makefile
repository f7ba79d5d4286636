# strobe: one non-recursive GNU Makefile.
#   make            build build/strobe
#   make test       bootstrap, build, run every test; ends with "N passed, N failed"
#   make demo       bootstrap, build, profile examples/train.py, print the summary
#   make bench      run the benchmarks in bench/ (results go to docs/benchmarks.md by hand)
#   make format-check / format
# Knobs: DEBUG=1, SAN=address,undefined | SAN=thread, WERROR=0, BUILD=dir

BUILD   ?= build
CC      ?= cc
PYTHON  ?= /usr/bin/python3
WERROR  ?= 1

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
        -Wimplicit-fallthrough -Wconversion -Wno-sign-conversion
ifeq ($(WERROR),1)
WARN += -Werror
endif

ifeq ($(DEBUG),1)
OPT := -O0 -g3
else
OPT := -O2 -g
endif

comma := ,
ifneq ($(SAN),)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SAN)
SANLD   := -fsanitize=$(SAN)
ifneq ($(findstring undefined,$(SAN)),)
OPT     += -fno-sanitize-recover=undefined
endif
BUILD   := $(BUILD)-san-$(subst $(comma),-,$(SAN))
endif
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc
CFLAGS   += -std=c11 $(OPT) $(WARN) -MMD -MP -pthread
LDFLAGS  += $(SANLD) -pthread
LDLIBS   += -lsqlite3 -lzstd -lm -ldl

CORE_SRC := $(wildcard src/common/*.c src/codec/*.c src/ring/*.c src/lib/*.c src/sample/*.c src/store/*.c src/record/*.c src/analyze/*.c src/gpu/*.c src/rules/*.c src/import/*.c)
CLI_SRC  := $(wildcard src/cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
CORE_LIB := $(BUILD)/libstrobe-core.a

.PHONY: all test demo bench format format-check clean bootstrap unit fuzz install
# keep objects of tests and benchmarks: they are not throw-away intermediates
.SECONDARY:
all: $(BUILD)/strobe $(UNIT_BIN) $(BENCH_BIN)

Q := @
ifeq ($(V),1)
Q :=
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC  $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BUILD)/strobe: $(CLI_OBJ) $(CORE_LIB)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(CORE_LIB)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(CORE_LIB)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bootstrap:
	@scripts/bootstrap

unit: all
	@tests/run --build $(BUILD) --only unit

test: bootstrap
	@$(MAKE) --no-print-directory all
	@tests/run --build $(BUILD)

demo: bootstrap
	@$(MAKE) --no-print-directory $(BUILD)/strobe
	@scripts/demo $(BUILD)/strobe

bench: bootstrap
	@$(MAKE) --no-print-directory all
	@bench/run --build $(BUILD)

# the Python package and the shared libstrobe: python/python.mk
include python/python.mk
# the test NVML (a scripted libnvidia-ml for the GPU tests): tests/nvml/nvml.mk
-include tests/nvml/nvml.mk

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
fuzz:
	@mkdir -p $(BUILD)/fuzz
	@for f in $(FUZZ_SRC); do \
	  n=$$(basename $$f .c); \
	  clang $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/$$n $$f $(CORE_SRC) -lsqlite3 -lzstd -lm -pthread || exit 1; \
	  echo "built $(BUILD)/fuzz/$$n"; \
	done

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: clean"

# make install [PREFIX=/usr/local] [DESTDIR=...]: the binary, libstrobe and its
# headers, and the Python package where strobe run looks for it beside an
# installed binary (PREFIX/lib/strobe/python).
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/strobe \
	  $(DESTDIR)$(PREFIX)/lib/strobe/python/strobe/_boot
	install -m 755 $(BUILD)/strobe $(DESTDIR)$(PREFIX)/bin/strobe
	install -m 644 $(BUILD)/lib/libstrobe.so $(DESTDIR)$(PREFIX)/lib/libstrobe.so.0
	ln -sf libstrobe.so.0 $(DESTDIR)$(PREFIX)/lib/libstrobe.so
	install -m 644 $(BUILD)/lib/libstrobe.a $(DESTDIR)$(PREFIX)/lib/libstrobe.a
	install -m 644 include/strobe/strobe.h include/strobe/ring.h include/strobe/version.h \
	  $(DESTDIR)$(PREFIX)/include/strobe/
	install -m 644 $(BUILD)/python/strobe/*.py $(BUILD)/python/strobe/_strobe.abi3.so \
	  $(DESTDIR)$(PREFIX)/lib/strobe/python/strobe/
	install -m 644 $(BUILD)/python/strobe/_boot/sitecustomize.py \
	  $(DESTDIR)$(PREFIX)/lib/strobe/python/strobe/_boot/
	$(PYTHON) -m compileall -q $(DESTDIR)$(PREFIX)/lib/strobe/python/strobe >/dev/null

clean:
	rm -rf build build-san-*

-include $(CORE_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%.d) \
         $(BENCH_SRC:%.c=$(BUILD)/%.d)
