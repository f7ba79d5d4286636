# The test NVML (included by the Makefile): a scripted libnvidia-ml that the
# GPU tests load through STROBE_NVML_LIB. See tests/nvml/README.md.
#
#   $(BUILD)/tests/libnvidia-ml-fake.so      every function of NVML_FUNCTIONS
#   $(BUILD)/tests/libnvidia-ml-fake-old.so  an old driver: no nvmlDeviceGetSamples,
#                                            nvmlDeviceGetTotalEnergyConsumption,
#                                            nvmlDeviceGetComputeRunningProcesses_v3
#   $(BUILD)/tests/test_fake_nvml            its self-test, run by tests/run with the
#                                            other unit tests (finds the libraries
#                                            beside itself)
#
# The libraries are dlopen'ed into other processes, so they are built without
# sanitizers even in a SAN= build (as python/python.mk does for libstrobe).

FAKE_NVML_CFLAGS  := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS))
FAKE_NVML_LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS))

FAKE_NVML_SO     := $(BUILD)/tests/libnvidia-ml-fake.so
FAKE_NVML_OLD_SO := $(BUILD)/tests/libnvidia-ml-fake-old.so
FAKE_NVML_OBJ    := $(BUILD)/pic/tests/nvml/fake_nvml.o
FAKE_NVML_OLD_OBJ := $(BUILD)/pic/tests/nvml/fake_nvml_old.o
FAKE_NVML_TEST   := $(BUILD)/tests/test_fake_nvml
FAKE_NVML_TEST_OBJ := $(BUILD)/tests/nvml/fake_nvml_selftest.o

all: $(FAKE_NVML_SO) $(FAKE_NVML_OLD_SO) $(FAKE_NVML_TEST)

$(FAKE_NVML_OBJ): tests/nvml/fake_nvml.c
	@mkdir -p $(@D)
	@echo "  CC  $< (PIC)"
	$(Q)$(CC) $(CPPFLAGS) $(FAKE_NVML_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(FAKE_NVML_OLD_OBJ): tests/nvml/fake_nvml.c
	@mkdir -p $(@D)
	@echo "  CC  $< (PIC, FAKE_NVML_OLD)"
	$(Q)$(CC) $(CPPFLAGS) -DFAKE_NVML_OLD $(FAKE_NVML_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(FAKE_NVML_SO): $(FAKE_NVML_OBJ)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) -shared -Wl,-z,defs $(FAKE_NVML_LDFLAGS) -o $@ $^ -lm

$(FAKE_NVML_OLD_SO): $(FAKE_NVML_OLD_OBJ)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) -shared -Wl,-z,defs $(FAKE_NVML_LDFLAGS) -o $@ $^ -lm

# The self-test links nothing of strobe's: it resolves the libraries with
# dlsym, as the collector does. Built with the sanitizers of a SAN= build.
$(FAKE_NVML_TEST): $(FAKE_NVML_TEST_OBJ) | $(FAKE_NVML_SO) $(FAKE_NVML_OLD_SO)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(FAKE_NVML_TEST_OBJ) -ldl -lm

-include $(FAKE_NVML_OBJ:.o=.d) $(FAKE_NVML_OLD_OBJ:.o=.d) $(FAKE_NVML_TEST_OBJ:.o=.d)

# The test libdcgm (tests/nvml/fake_dcgm.c): a host engine scripted by
# $STROBE_FAKE_DCGM, loaded through STROBE_DCGM_LIB.
FAKE_DCGM_SO  := $(BUILD)/tests/libdcgm-fake.so
FAKE_DCGM_OBJ := $(BUILD)/pic/tests/nvml/fake_dcgm.o
all: $(FAKE_DCGM_SO)

$(FAKE_DCGM_OBJ): tests/nvml/fake_dcgm.c
	@mkdir -p $(@D)
	@echo "  CC  $< (PIC)"
	$(Q)$(CC) $(CPPFLAGS) $(FAKE_NVML_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(FAKE_DCGM_SO): $(FAKE_DCGM_OBJ)
	@mkdir -p $(@D)
	@echo "  LD  $@"
	$(Q)$(CC) -shared -Wl,-z,defs $(FAKE_NVML_LDFLAGS) -o $@ $^ -pthread

-include $(FAKE_DCGM_OBJ:.o=.d)
