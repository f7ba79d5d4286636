# The Python package strobe and the shared libstrobe (included by the Makefile).
#
#   $(BUILD)/lib/libstrobe.so     soname libstrobe.so.0 (with a libstrobe.so.0 link beside it);
#                                 exports only the strobe_* API (-fvisibility=hidden + STROBE_API)
#   $(BUILD)/lib/libstrobe.a      the same PIC objects, for static linking
#   $(BUILD)/python/strobe/       the package: *.py copied, _strobe.abi3.so built on the stable
#                                 ABI (3.8+) with libstrobe linked in statically and hidden, so
#                                 PYTHONPATH=$(BUILD)/python is all it needs
#   $(BUILD)/tests/strobe-ringcat a stand-in recorder for the tests and benchmarks
#   $(BUILD)/tests/strobe-pystack the Python stacks of a process, as the reader sees them

# What goes into other people's processes (libstrobe.so, the Python
# extension that strobe run injects into every Python job) is built without
# sanitizers even in a SAN= build: an instrumented library cannot load into an
# uninstrumented interpreter ("ASan runtime does not come first"). The same
# sources are sanitizer-tested through the core library's unit tests.
PIC_CFLAGS  := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS))
PIC_LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS))

LIBSTROBE_SRC := src/lib/strobe.c src/ring/ring.c
LIBSTROBE_PIC := $(LIBSTROBE_SRC:%.c=$(BUILD)/pic/%.o)
LIBSTROBE_SO  := $(BUILD)/lib/libstrobe.so
LIBSTROBE_A   := $(BUILD)/lib/libstrobe.a

# Python's headers as system headers: our warnings stay on for our code only
PY_INCLUDES := $(patsubst -I%,-isystem %,$(sort $(shell $(PYTHON)-config --includes 2>/dev/null)))
ifeq ($(strip $(PY_INCLUDES)),)
PY_INCLUDES := -isystem $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
endif
PY_EXT_OBJ := $(BUILD)/pic/python/strobe/_strobe.o
PY_EXT     := $(BUILD)/python/strobe/_strobe.abi3.so
PY_FILES   := $(patsubst python/%,$(BUILD)/python/%,$(wildcard python/strobe/*.py python/strobe/_boot/*.py))
RINGCAT    := $(BUILD)/tests/strobe-ringcat
PYSTACK    := $(BUILD)/tests/strobe-pystack

PY_COMPILED := $(BUILD)/python/.compiled

# the package alone, all that strobe run loads into a Python job (make demo)
.PHONY: python
python: $(PY_EXT) $(PY_FILES) $(PY_COMPILED)
all: $(LIBSTROBE_SO) $(LIBSTROBE_A) $(PY_EXT) $(PY_FILES) $(PY_COMPILED) $(RINGCAT) $(PYSTACK)

# Byte-code made at build time: the sitecustomize runs at the start of every
# Python command under strobe, and compiling it there (where
# PYTHONDONTWRITEBYTECODE is set, or the directory is read-only) would cost
# about 1 ms each time. Other interpreters compile for themselves.
$(PY_COMPILED): $(PY_FILES)
	$(Q)$(PYTHON) -m compileall -q $(BUILD)/python/strobe >/dev/null
	@touch $@

$(LIBSTROBE_PIC): $(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC  $< (PIC)"
	$(Q)$(CC) $(CPPFLAGS) $(PIC_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(LIBSTROBE_SO): $(LIBSTROBE_PIC)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) -shared -Wl,-soname,libstrobe.so.0 -Wl,-z,defs $(PIC_LDFLAGS) -o $@ $^
	$(Q)ln -sf libstrobe.so $(@D)/libstrobe.so.0

$(LIBSTROBE_A): $(LIBSTROBE_PIC)
	@mkdir -p $(@D)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(PY_EXT_OBJ): $(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC  $< (Python extension)"
	$(Q)$(CC) $(CPPFLAGS) $(PY_INCLUDES) $(PIC_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

# libstrobe from its archive, its symbols made local: only PyInit__strobe is exported
$(PY_EXT): $(PY_EXT_OBJ) $(LIBSTROBE_A)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) -shared $(PIC_LDFLAGS) -Wl,--exclude-libs,ALL -o $@ $^

$(BUILD)/python/strobe/%.py: python/strobe/%.py
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(RINGCAT): $(BUILD)/tests/tools/ringcat.o $(CORE_LIB)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(PYSTACK): $(BUILD)/tests/tools/pystack.o $(CORE_LIB)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

-include $(LIBSTROBE_PIC:.o=.d) $(PY_EXT_OBJ:.o=.d) $(BUILD)/tests/tools/ringcat.d \
         $(BUILD)/tests/tools/pystack.d
