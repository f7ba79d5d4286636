/*
 * The test NVML checked the way the collector will use it: each test (in its
 * own process, tests/unit/test.h) dlopens libnvidia-ml-fake.so from the
 * directory of this binary, resolves NVML_FUNCTIONS with dlsym, writes a
 * scenario and checks exact answers: devices and sizing, step functions over
 * time (with sleeps), the sample ring and lastSeenTimeStamp, lost devices,
 * scripted errors and the calls file, slow calls, the processes file, MIG
 * devices and their handles, parse errors and nesting of init and shutdown.
 *
 * Times: the fake's clock starts inside nvmlInit_v2, so it lies between the
 * test's clock just before and just after that call; timed checks use those
 * two bounds rather than a tolerance.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "common/array.h"
#include "gpu/nvml_api.h"

#include "../unit/test.h"

#define FAKE_LIB     "libnvidia-ml-fake.so"
#define FAKE_OLD_LIB "libnvidia-ml-fake-old.so"

/* The directory of the libraries: this binary's. */
static char lib_dir[PATH_MAX];

/* --- resolving the library as a client does --- */

#define NVML_POINTER(ret, name, args) ret(*name) args;
struct nvml {
    void *dl;
    NVML_FUNCTIONS(NVML_POINTER)
};

#define NVML_NAME(ret, name, args) #name,
static const char *const nvml_names[] = {NVML_FUNCTIONS(NVML_NAME)};
#define NVML_COUNT (ARRAY_SIZE(nvml_names))

/* dlopen one of the builds and resolve every name: missing ones stay NULL. */
static void nvml_open(struct nvml *n, const char *lib)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", lib_dir, lib);
    memset(n, 0, sizeof(*n));
    n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl)
        TEST_FAIL("dlopen %s: %s", path, dlerror());
#define NVML_RESOLVE(ret, name, args) *(void **)&n->name = dlsym(n->dl, #name);
    NVML_FUNCTIONS(NVML_RESOLVE)
}

/* The same, every symbol required. */
static void nvml_load(struct nvml *n)
{
    nvml_open(n, FAKE_LIB);
#define NVML_REQUIRE(ret, name, args)                                                              \
    if (!n->name)                                                                                  \
        TEST_FAIL("%s lacks %s", FAKE_LIB, #name);
    NVML_FUNCTIONS(NVML_REQUIRE)
}

/* --- scratch files --- */

#define MAX_SCRATCH 16
static char scratch_dir[PATH_MAX];
static char scratch_files[MAX_SCRATCH][PATH_MAX + 64];
static int scratch_count;
static pid_t scratch_owner; /* a forked child leaves the files to its parent */

/* The name a file is written under before it is renamed into place (static
 * buffer): what write_file and the fake's calls file use. */
static const char *tmp_name(const char *path)
{
    static char buf[PATH_MAX + 80];
    if (snprintf(buf, sizeof(buf), "%s.tmp", path) >= (int)sizeof(buf))
        TEST_FAIL("path too long: %s", path);
    return buf;
}

static void scratch_cleanup(void)
{
    if (getpid() != scratch_owner)
        return;
    for (int i = 0; i < scratch_count; i++) {
        unlink(scratch_files[i]);
        unlink(tmp_name(scratch_files[i]));
    }
    if (scratch_dir[0])
        rmdir(scratch_dir);
}

/* A path in this test's scratch directory (the same one for the same name),
 * removed when the test exits. */
static const char *scratch(const char *name)
{
    if (!scratch_dir[0]) {
        scratch_owner = getpid();
        const char *base = getenv("TEST_TMP");
        snprintf(scratch_dir, sizeof(scratch_dir), "%s/fake-nvml-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(scratch_dir))
            TEST_FAIL("mkdtemp %s: %s", scratch_dir, strerror(errno));
        atexit(scratch_cleanup);
    }
    char path[sizeof(scratch_files[0])];
    snprintf(path, sizeof(path), "%s/%s", scratch_dir, name);
    for (int i = 0; i < scratch_count; i++)
        if (strcmp(scratch_files[i], path) == 0)
            return scratch_files[i];
    ASSERT(scratch_count < MAX_SCRATCH);
    char *p = scratch_files[scratch_count++];
    memcpy(p, path, sizeof(path));
    return p;
}

static void write_file(const char *path, const char *text)
{
    const char *tmp = tmp_name(path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        TEST_FAIL("cannot write %s: %s", tmp, strerror(errno));
    fputs(text, f);
    ASSERT(fclose(f) == 0);
    ASSERT(rename(tmp, path) == 0);
}

/* The file's text (static buffer), "" when it cannot be read. */
static const char *read_text(const char *path)
{
    static char buf[8192];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Write the scenario and point $STROBE_FAKE_NVML at it. */
static const char *scenario(const char *text)
{
    const char *path = scratch("scenario");
    write_file(path, text);
    setenv("STROBE_FAKE_NVML", path, 1);
    return path;
}

/* --- time --- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long real_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

/* When nvmlInit_v2 ran, on the test's clocks. */
struct start {
    double before_s, after_s;
    unsigned long long before_us, after_us;
};

static struct start init_ok(struct nvml *n)
{
    struct start s;
    s.before_us = real_us();
    s.before_s = mono_s();
    ASSERT_EQ_INT(n->nvmlInit_v2(), NVML_SUCCESS);
    s.after_s = mono_s();
    s.after_us = real_us();
    return s;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Sleep until at least t seconds have passed on the fake's clock. */
static void sleep_until(const struct start *s, double t)
{
    double left = s->after_s + t - mono_s();
    if (left > 0)
        sleep_s(left);
}

/* Elapsed on the fake's clock is at most this much now. */
static double elapsed_max(const struct start *s)
{
    return mono_s() - s->before_s;
}

static nvmlDevice_t handle(struct nvml *n, unsigned int i)
{
    nvmlDevice_t d = NULL;
    ASSERT_EQ_INT(n->nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    ASSERT(d != NULL);
    return d;
}

/* Every device function, with good arguments, returns expect. */
static void expect_all(struct nvml *n, nvmlDevice_t d, nvmlReturn_t expect)
{
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    nvmlMemory_t mem;
    nvmlUtilization_t util;
    nvmlValueType_t type;
    nvmlSample_t samples[4];
    unsigned int count = 4, ui;
    unsigned long long ull;
    nvmlProcessInfo_t infos[4];
    nvmlProcessUtilizationSample_t putil[4];

    ASSERT_EQ_INT(n->nvmlDeviceGetName(d, buf, sizeof(buf)), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetUUID(d, buf, sizeof(buf)), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetMemoryInfo(d, &mem), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetUtilizationRates(d, &util), expect);
    ASSERT_EQ_INT(
        n->nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, samples),
        expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetPowerUsage(d, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetTotalEnergyConsumption(d, &ull), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetCurrentClocksThrottleReasons(d, &ull), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                                 NVML_VOLATILE_ECC, &ull),
                  expect);
    count = 4;
    ASSERT_EQ_INT(n->nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos), expect);
    count = 4;
    ASSERT_EQ_INT(n->nvmlDeviceGetProcessUtilization(d, putil, &count, 0), expect);
    nvmlFieldValue_t field = {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX};
    ASSERT_EQ_INT(n->nvmlDeviceGetFieldValues(d, 1, &field), expect);
    nvmlDevice_t mig;
    ASSERT_EQ_INT(n->nvmlDeviceGetMigMode(d, &ui, &count), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetMaxMigDeviceCount(d, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetMigDeviceHandleByIndex(d, 0, &mig), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetGpuInstanceId(d, &ui), expect);
    ASSERT_EQ_INT(n->nvmlDeviceGetComputeInstanceId(d, &ui), expect);
}

/* nvmlInit_v2 with stderr caught: returns its code, the text in err. */
static nvmlReturn_t init_catching_stderr(struct nvml *n, char *err, size_t cap)
{
    const char *path = scratch("stderr");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    nvmlReturn_t rc = n->nvmlInit_v2();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    snprintf(err, cap, "%s", read_text(path));
    return rc;
}

/* --- the tests --- */

TEST(exports_every_function)
{
    struct nvml n;
    nvml_open(&n, FAKE_LIB);
    for (size_t i = 0; i < NVML_COUNT; i++)
        if (!dlsym(n.dl, nvml_names[i]))
            TEST_FAIL("%s lacks %s", FAKE_LIB, nvml_names[i]);

    /* the old driver: the three newer functions absent, the rest there */
    struct nvml old;
    nvml_open(&old, FAKE_OLD_LIB);
    ASSERT(old.nvmlDeviceGetSamples == NULL);
    ASSERT(old.nvmlDeviceGetTotalEnergyConsumption == NULL);
    ASSERT(old.nvmlDeviceGetComputeRunningProcesses_v3 == NULL);
    size_t present = 0;
    for (size_t i = 0; i < NVML_COUNT; i++)
        present += dlsym(old.dl, nvml_names[i]) != NULL;
    ASSERT_EQ_INT(present, NVML_COUNT - 3);

    /* and it works */
    scenario("device 0\nat 0 0 power 42000\n");
    ASSERT_EQ_INT(old.nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t d = NULL;
    unsigned int mw = 0;
    ASSERT_EQ_INT(old.nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
    ASSERT_EQ_INT(old.nvmlDeviceGetPowerUsage(d, &mw), NVML_SUCCESS);
    ASSERT_EQ_INT(mw, 42000);
    ASSERT_EQ_INT(old.nvmlShutdown(), NVML_SUCCESS);
}

TEST(error_strings)
{
    struct nvml n;
    nvml_load(&n);
    /* without init, as NVML allows */
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_SUCCESS), "Success");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_INVALID_ARGUMENT), "Invalid Argument");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_NO_PERMISSION), "Insufficient Permissions");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_NOT_FOUND), "Not Found");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_TIMEOUT), "Timeout");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_FUNCTION_NOT_FOUND), "Function Not Found");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_NO_DATA), "No data");
    ASSERT_EQ_STR(n.nvmlErrorString(NVML_ERROR_UNKNOWN), "Unknown Error");
    ASSERT_EQ_STR(n.nvmlErrorString(12345), "Unknown Error");
    /* static: the same pointer each time */
    ASSERT(n.nvmlErrorString(NVML_ERROR_GPU_IS_LOST) == n.nvmlErrorString(NVML_ERROR_GPU_IS_LOST));
}

TEST(uninitialized_before_init_and_after_shutdown)
{
    struct nvml n;
    nvml_load(&n);
    unsigned int count = 7;
    char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    nvmlDevice_t d = NULL;
    int junk;
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(count, 7);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(n.nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
    expect_all(&n, (nvmlDevice_t)&junk, NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);

    scenario("device 0\n");
    init_ok(&n);
    d = handle(&n, 0);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    expect_all(&n, d, NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST(init_and_shutdown_nest)
{
    struct nvml n;
    nvml_load(&n);
    const char *path = scenario("device 0\ndevice 1\n");
    unsigned int count = 0;
    init_ok(&n);
    write_file(path, "device 0\n"); /* a nested init does not read it again */
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 2);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 2);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    /* a fresh init reads the file as it is now */
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 1);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(init_fails_without_a_readable_scenario)
{
    struct nvml n;
    nvml_load(&n);
    char err[1024];
    unsigned int count;

    unsetenv("STROBE_FAKE_NVML");
    ASSERT_EQ_INT(init_catching_stderr(&n, err, sizeof(err)), NVML_ERROR_UNKNOWN);
    ASSERT_EQ_STR(err, "fake_nvml: STROBE_FAKE_NVML is not set (the scenario file)\n");

    const char *missing = scratch("no-such-scenario");
    setenv("STROBE_FAKE_NVML", missing, 1);
    ASSERT_EQ_INT(init_catching_stderr(&n, err, sizeof(err)), NVML_ERROR_UNKNOWN);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof(want), "fake_nvml: %s:0: cannot open: No such file or directory\n",
             missing);
    ASSERT_EQ_STR(err, want);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);

    /* a directory: opens, cannot be read */
    setenv("STROBE_FAKE_NVML", scratch_dir, 1);
    ASSERT_EQ_INT(init_catching_stderr(&n, err, sizeof(err)), NVML_ERROR_UNKNOWN);
    ASSERT(strstr(err, scratch_dir) != NULL);
    ASSERT(strchr(err, '\n') == err + strlen(err) - 1);

    /* and a good file afterwards works */
    scenario("device 0\n");
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 1);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(parse_errors_name_file_and_line)
{
    static const struct {
        const char *text;
        unsigned line;
        const char *what;
    } cases[] = {
        {"device 0\nbogus 1\n", 2, "unknown directive 'bogus'"},
        {"device 0\nat 0 0 util.gpux 5\n", 2, "unknown field 'util.gpux'"},
        {"at 0 0 util.gpu 5\n", 1, "device 0 is not declared"},
        {"device 1\n", 1, "device 1 out of order (expected device 0)"},
        {"device 0\ndevice 0\n", 2, "device 0 out of order (expected device 1)"},
        {"device 0\nat -1 0 power 5\n", 2, "bad time '-1'"},
        {"device 0\nat 0 0 power 4294967296\n", 2, "bad value '4294967296' for power"},
        {"device 0\nat 0 0 util.gpu 12x\n", 2, "bad value '12x'"},
        {"device 0\nat 0 0 util.gpu 0x\n", 2, "bad value '0x'"},
        {"device 0 name \"no end\n", 1, "unterminated quote"},
        {"device 0\nunsupported 0 nvmlFoo\n", 2, "unknown device function 'nvmlFoo'"},
        {"device 0\nunsupported 0 nvmlInit_v2\n", 2, "unknown device function 'nvmlInit_v2'"},
        {"device 0\nmissing nvmlDeviceGetSamples\n", 2, "libnvidia-ml-fake-old.so"},
        {"# a comment\n\ndevice 0 colour red\n", 3, "unknown device attribute 'colour'"},
        {"device 0 name\n", 1, "device attribute 'name' has no value"},
        {"device 0\nlost 1\n", 2, "'lost' takes 2 to 2 words, not 1"},
        {"sample_period 0\n", 1, "under a microsecond"},
        {"device 0\nerror 0 nvmlDeviceGetName BOGUS\n", 2, "unknown NVML error code 'BOGUS'"},
        {"device 0\nslow 0 nvmlDeviceGetName soon\n", 2, "bad time 'soon'"},
        {"device 0\nprocesses_file 3 /tmp/x\n", 2, "device 3 is not declared"},
        {"device 0\nmig_mode 0 2\n", 2, "bad MIG mode '2' (0 or 1)"},
        {"device 0\nmig 0 0 uuid MIG-a\n", 2, "device 0 is not in MIG mode"},
        {"device 0\nmig_mode 0 1\nmig 0 7 uuid MIG-a\n", 3, "bad MIG device index '7'"},
        {"device 0\nmig_mode 0 1\nmig 0 0 uuid GPU-a\n", 3, "does not start with MIG-"},
        {"device 0\nmig_mode 0 1\nmig 0 0 name x\n", 3, "MIG device 0 of device 0 has no uuid"},
        {"device 0\nmig_mode 0 1\nmig 0 1 uuid MIG-a\nmig 0 1 uuid MIG-b\n", 4,
         "MIG device 1 of device 0 is declared twice"},
        {"device 0\nmig_mode 0 1\nmig 0 0 uuid MIG-a colour red\n", 3,
         "unknown MIG attribute 'colour'"},
        {"device 0\nmig_mode 0 1\nmig 0 0 uuid MIG-a gi 4294967296\n", 3, "bad gi '4294967296'"},
        {"device 0\nmig_mode 0 1\nmig 0 0 uuid MIG-a used\n", 3,
         "MIG attribute 'used' has no value"},
        {"device 0\nmig_mode 0 1\nmig 0 0 uuid\n", 3, "'mig' takes 4 to 14 words, not 3"},
        {"device 0\nmig_mode 1 1\n", 2, "device 1 is not declared"},
    };
    struct nvml n;
    nvml_load(&n);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const char *path = scenario(cases[i].text);
        char err[1024], prefix[PATH_MAX + 64];
        ASSERT_EQ_INT(init_catching_stderr(&n, err, sizeof(err)), NVML_ERROR_UNKNOWN);
        snprintf(prefix, sizeof(prefix), "fake_nvml: %s:%u: ", path, cases[i].line);
        if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, cases[i].what) ||
            strchr(err, '\n') != err + strlen(err) - 1)
            TEST_FAIL("case %zu: got \"%s\", want \"%s...%s\"", i, err, prefix, cases[i].what);
        unsigned int count;
        ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    }
}

TEST(init_error_directive)
{
    struct nvml n;
    nvml_load(&n);
    char err[256];
    unsigned int count;
    scenario("init_error DRIVER_NOT_LOADED\ndevice 0\n");
    ASSERT_EQ_INT(init_catching_stderr(&n, err, sizeof(err)), NVML_ERROR_DRIVER_NOT_LOADED);
    ASSERT_EQ_STR(err, "");
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    scenario("init_error NVML_ERROR_NO_PERMISSION\n");
    ASSERT_EQ_INT(n.nvmlInit_v2(), NVML_ERROR_NO_PERMISSION);
    scenario("init_error 17\n");
    ASSERT_EQ_INT(n.nvmlInit_v2(), 17);
}

TEST(devices_names_uuids_memory_driver)
{
    struct nvml n;
    nvml_load(&n);
    scenario("# two GPUs\n"
             "driver 535.104.05\n"
             "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-5fb0a0c4-1111-2222-3333-444455556666"
             " memory 85520809984   # trailing comment\n"
             "device 1 memory 0x400000000 name \"A #1 GPU\"\n");
    init_ok(&n);
    unsigned int count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 2);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);

    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1), again = NULL;
    ASSERT(d0 != d1);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(0, &again), NVML_SUCCESS);
    ASSERT(again == d0);
    nvmlDevice_t untouched = (nvmlDevice_t)&count;
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(2, &untouched), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT(untouched == (nvmlDevice_t)&count);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(UINT_MAX, &untouched),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);

    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "NVIDIA H100 80GB HBM3");
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d1, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "A #1 GPU");
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(d0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "GPU-5fb0a0c4-1111-2222-3333-444455556666");
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(d1, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "GPU-00000000-0000-0000-0000-000000000001");

    nvmlMemory_t mem;
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d0, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 85520809984ULL);
    ASSERT_EQ_U64(mem.used, 0);
    ASSERT_EQ_U64(mem.free, 85520809984ULL);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 0x400000000ULL);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d1, NULL), NVML_ERROR_INVALID_ARGUMENT);

    ASSERT_EQ_INT(n.nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "535.104.05");

    /* a handle that is not one */
    int junk;
    expect_all(&n, (nvmlDevice_t)&junk, NVML_ERROR_INVALID_ARGUMENT);
    expect_all(&n, NULL, NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);

    /* defaults */
    scenario("device 0\n");
    init_ok(&n);
    d0 = handle(&n, 0);
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "NVIDIA Fake GPU");
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(d0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "GPU-00000000-0000-0000-0000-000000000000");
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d0, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 85899345920ULL);
    ASSERT_EQ_INT(n.nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "550.54.15");
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);

    /* no devices */
    scenario("# nothing\n");
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(strings_too_small_are_insufficient_size)
{
    struct nvml n;
    nvml_load(&n);
    scenario("driver 550.54.15\ndevice 0 name \"NVIDIA A100\" uuid GPU-abc\n");
    init_ok(&n);
    nvmlDevice_t d = handle(&n, 0);
    char buf[64];
    memset(buf, 'x', sizeof(buf));
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d, buf, 11), NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d, buf, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(buf[0], 'x');
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d, buf, 12), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "NVIDIA A100");
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(d, buf, 7), NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(d, buf, 8), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "GPU-abc");
    ASSERT_EQ_INT(n.nvmlSystemGetDriverVersion(buf, 9), NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(n.nvmlSystemGetDriverVersion(buf, 10), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "550.54.15");
    ASSERT_EQ_INT(n.nvmlDeviceGetName(d, NULL, 64), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(values_are_step_functions_of_time)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0 memory 1000\n"
             "device 1 memory 1000\n"
             "at 0.5 0 util.gpu 95      # out of order: sorted by time\n"
             "at 0   0 util.gpu 10\n"
             "at 0   0 util.memory 20\n"
             "at 0.5 0 util.memory 60\n"
             "at 0   0 mem.used 250\n"
             "at 0.5 0 mem.used 900\n"
             "at 0   0 power 71000\n"
             "at 0.5 0 power 350500\n"
             "at 0   0 temp 40\n"
             "at 0.5 0 temp 81\n"
             "at 0   0 clock.sm 1410\n"
             "at 0   0 clock.mem 1000\n"
             "at 0   0 clock.mem 1593   # same time: the later line wins\n"
             "at 0   0 throttle 0x0\n"
             "at 0.5 0 throttle 0x44\n"
             "at 0   0 pcie.tx 1000\n"
             "at 0.5 0 pcie.tx 2000\n"
             "at 0   0 pcie.rx 3000\n"
             "at 0   0 ecc.corrected 3\n"
             "at 0.5 0 ecc.corrected 4\n"
             "at 0   0 ecc.uncorrected 1\n"
             "at 0.1 1 mem.used 5000    # more than there is\n"
             "at 9   1 power 1\n");
    struct start s = init_ok(&n);
    nvmlDevice_t d = handle(&n, 0), d1 = handle(&n, 1);
    nvmlUtilization_t u;
    nvmlMemory_t mem;
    unsigned int ui;
    unsigned long long ull;

    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1)
            sleep_until(&s, 0.55);
        else if (elapsed_max(&s) >= 0.4)
            continue; /* too loaded a machine to see time 0: check the later values only */
        ASSERT_EQ_INT(n.nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
        ASSERT_EQ_INT(u.gpu, phase ? 95 : 10);
        ASSERT_EQ_INT(u.memory, phase ? 60 : 20);
        ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d, &mem), NVML_SUCCESS);
        ASSERT_EQ_U64(mem.total, 1000);
        ASSERT_EQ_U64(mem.used, phase ? 900 : 250);
        ASSERT_EQ_U64(mem.free, phase ? 100 : 750);
        ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, phase ? 350500 : 71000);
        ASSERT_EQ_INT(n.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, phase ? 81 : 40);
        ASSERT_EQ_INT(n.nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, 1410);
        ASSERT_EQ_INT(n.nvmlDeviceGetClockInfo(d, NVML_CLOCK_GRAPHICS, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, 1410);
        ASSERT_EQ_INT(n.nvmlDeviceGetClockInfo(d, NVML_CLOCK_MEM, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, 1593);
        ASSERT_EQ_INT(n.nvmlDeviceGetCurrentClocksThrottleReasons(d, &ull), NVML_SUCCESS);
        ASSERT_EQ_U64(ull, phase ? 0x44 : 0);
        ASSERT_EQ_INT(n.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, phase ? 2000 : 1000);
        ASSERT_EQ_INT(n.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, 3000);
        for (int counter = NVML_VOLATILE_ECC; counter <= NVML_AGGREGATE_ECC; counter++) {
            ASSERT_EQ_INT(
                n.nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, counter, &ull),
                NVML_SUCCESS);
            ASSERT_EQ_U64(ull, phase ? 4 : 3);
            ASSERT_EQ_INT(
                n.nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counter, &ull),
                NVML_SUCCESS);
            ASSERT_EQ_U64(ull, 1);
        }
        /* device 1: nothing scripted yet reads 0; used above total leaves 0 free */
        ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d1, &ui), NVML_SUCCESS);
        ASSERT_EQ_INT(ui, 0);
        ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
        ASSERT_EQ_U64(mem.used, phase ? 5000 : 0);
        ASSERT_EQ_U64(mem.free, phase ? 0 : 1000);
    }

    /* arguments NVML refuses */
    ASSERT_EQ_INT(n.nvmlDeviceGetTemperature(d, 1, &ui), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetClockInfo(d, 7, &ui), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetPcieThroughput(d, 2, &ui), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEccErrors(d, 2, NVML_VOLATILE_ECC, &ull),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, 2, &ull),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetUtilizationRates(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

/* mJ of a power step function 100 W until 0.2 s, 300 W after, at t. */
static double energy_at(double t)
{
    return t < 0.2 ? 100000 * t : 100000 * 0.2 + 300000 * (t - 0.2);
}

TEST(energy_integrates_power_unless_scripted)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0\ndevice 1\n"
             "at 0   0 power 100000\n"
             "at 0.2 0 power 300000\n"
             "at 0   1 power 250000\n"
             "at 0   1 energy 5000\n"
             "at 0.2 1 energy 123456789012\n");
    struct start s = init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1);
    unsigned long long mj;
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEnergyConsumption(d1, &mj), NVML_SUCCESS);
    ASSERT_EQ_U64(mj, 5000);
    sleep_until(&s, 0.35);
    double lo = mono_s() - s.after_s;
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEnergyConsumption(d0, &mj), NVML_SUCCESS);
    double hi = mono_s() - s.before_s;
    if ((double)mj < energy_at(lo) - 1 || (double)mj > energy_at(hi) + 1)
        TEST_FAIL("energy %llu mJ not within [%.0f, %.0f]", mj, energy_at(lo), energy_at(hi));
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEnergyConsumption(d1, &mj), NVML_SUCCESS);
    ASSERT_EQ_U64(mj, 123456789012ULL);
    ASSERT_EQ_INT(n.nvmlDeviceGetTotalEnergyConsumption(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(samples_since_last_seen)
{
    struct nvml n;
    nvml_load(&n);
    scenario("sample_period 0.02\n"
             "device 0\n"
             "at 0   0 util.gpu 10\n"
             "at 0.1 0 util.gpu 50\n"
             "at 0   0 util.memory 7\n"
             "at 0   0 power 123000\n");
    struct start s = init_ok(&n);
    nvmlDevice_t d = handle(&n, 0);
    nvmlValueType_t type = -1;
    nvmlSample_t buf[64];
    unsigned int count = 64;

    /* none yet: the first sample is one period after init */
    if (elapsed_max(&s) < 0.02) {
        ASSERT_EQ_INT(
            n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, buf),
            NVML_ERROR_NOT_FOUND);
        ASSERT_EQ_INT(count, 0);
    }

    sleep_until(&s, 0.25);
    double lo = mono_s() - s.after_s;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, NULL),
                  NVML_SUCCESS);
    double hi = mono_s() - s.before_s;
    ASSERT_EQ_INT(type, NVML_VALUE_TYPE_UNSIGNED_INT);
    if (count < (unsigned int)(lo / 0.02) || count > (unsigned int)(hi / 0.02) + 1)
        TEST_FAIL("%u samples after %.3f..%.3f s", count, lo, hi);

    unsigned int sized = count;
    count = 64;
    type = -1;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, buf),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(type, NVML_VALUE_TYPE_UNSIGNED_INT);
    ASSERT(count >= sized && count < 64);
    /* sample k is taken at k * 20 ms after init, stamped on the realtime clock */
    unsigned long long base = buf[0].timeStamp - 20000;
    ASSERT(base >= s.before_us && base <= s.after_us);
    for (unsigned int i = 0; i < count; i++) {
        unsigned int k = i + 1;
        ASSERT_EQ_U64(buf[i].timeStamp, base + 20000ULL * k);
        ASSERT_EQ_INT(buf[i].sampleValue.uiVal, k < 5 ? 10 : 50); /* 5 * 20 ms = 0.1 s */
    }

    /* since sample 3, at most 3: samples 4, 5, 6 */
    unsigned int total = count;
    count = 3;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, buf[2].timeStamp, &type,
                                         &count, buf + 32),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(count, 3);
    for (unsigned int i = 0; i < 3; i++) {
        ASSERT_EQ_U64(buf[32 + i].timeStamp, buf[3 + i].timeStamp);
        ASSERT_EQ_INT(buf[32 + i].sampleValue.uiVal, buf[3 + i].sampleValue.uiVal);
    }
    /* a lastSeen between two samples */
    count = 1;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, buf[5].timeStamp - 1,
                                         &type, &count, buf + 32),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(count, 1);
    ASSERT_EQ_U64(buf[32].timeStamp, buf[5].timeStamp);
    /* sizing from a lastSeen */
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, buf[total - 2].timeStamp,
                                         &type, &count, NULL),
                  NVML_SUCCESS);
    ASSERT(count >= 1);
    /* a buffer of none */
    count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, buf),
                  NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT(count >= total);
    /* nothing newer */
    count = 64;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, real_us() + 60000000ULL,
                                         &type, &count, buf),
                  NVML_ERROR_NOT_FOUND);
    ASSERT_EQ_INT(count, 0);

    /* the other series */
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_MEMORY_UTILIZATION_SAMPLES, 0, &type, &count, buf),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(count, 4);
    ASSERT_EQ_U64(buf[0].timeStamp, base + 20000);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ_INT(buf[i].sampleValue.uiVal, 7);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_TOTAL_POWER_SAMPLES, 0, &type, &count, buf),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(buf[3].sampleValue.uiVal, 123000);
    ASSERT_EQ_INT(type, NVML_VALUE_TYPE_UNSIGNED_INT);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, 99, 0, &type, &count, buf),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, NULL, buf),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(samples_ring_keeps_the_last_120)
{
    struct nvml n;
    nvml_load(&n);
    scenario("sample_period 0.001\ndevice 0\nat 0 0 util.gpu 33\n");
    struct start s = init_ok(&n);
    nvmlDevice_t d = handle(&n, 0);
    sleep_until(&s, 0.3);
    nvmlValueType_t type;
    nvmlSample_t buf[200];
    unsigned int count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, NULL),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(count, 120);
    count = 200;
    ASSERT_EQ_INT(n.nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, buf),
                  NVML_SUCCESS);
    ASSERT_EQ_INT(count, 120);
    for (unsigned int i = 1; i < count; i++)
        ASSERT_EQ_U64(buf[i].timeStamp, buf[i - 1].timeStamp + 1000);
    ASSERT_EQ_INT(buf[0].sampleValue.uiVal, 33);
    /* at 0.3 s the newest is sample 300 or later, so the oldest kept is 181 or later */
    ASSERT(buf[0].timeStamp >= s.before_us + 181000);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(lost_device_answers_gpu_is_lost)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0\ndevice 1\nat 0 1 power 5000\nat 0 0 power 6000\nlost 0.2 1\n");
    struct start s = init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1);
    unsigned int mw;
    if (elapsed_max(&s) < 0.2) {
        ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d1, &mw), NVML_SUCCESS);
        ASSERT_EQ_INT(mw, 5000);
    }
    sleep_until(&s, 0.25);
    expect_all(&n, d1, NVML_ERROR_GPU_IS_LOST);
    nvmlDevice_t again = NULL;
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(1, &again), NVML_ERROR_GPU_IS_LOST);
    unsigned int count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 2);
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d0, &mw), NVML_SUCCESS);
    ASSERT_EQ_INT(mw, 6000);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);

    /* lost from the start */
    scenario("device 0\nlost 0 0\n");
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(0, &again), NVML_ERROR_GPU_IS_LOST);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(unsupported_and_errors_are_counted_in_the_calls_file)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0\ndevice 1\n"
             "at 0 0 power 1000\n"
             "unsupported 1 nvmlDeviceGetPowerUsage\n"
             "error 0 nvmlDeviceGetComputeRunningProcesses_v3 NO_PERMISSION\n");
    const char *calls = scratch("calls");
    setenv("STROBE_FAKE_NVML_CALLS", calls, 1);
    init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1), bad;
    ASSERT_EQ_INT(n.nvmlDeviceGetHandleByIndex_v2(5, &bad), NVML_ERROR_INVALID_ARGUMENT);
    unsigned int mw = 0, count = 0;
    for (int i = 0; i < 3; i++)
        ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d1, &mw), NVML_ERROR_NOT_SUPPORTED);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d0, &mw), NVML_SUCCESS);
        ASSERT_EQ_INT(mw, 1000);
    }
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, NULL),
                  NVML_ERROR_NO_PERMISSION);
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d1, &count, NULL), NVML_SUCCESS);
    ASSERT_EQ_STR(read_text(calls), ""); /* written at shutdown */
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_STR(read_text(calls), "nvmlDeviceGetHandleByIndex_v2 0 1\n"
                                    "nvmlDeviceGetPowerUsage 0 2\n"
                                    "nvmlDeviceGetComputeRunningProcesses_v3 0 1\n"
                                    "nvmlDeviceGetHandleByIndex_v2 1 1\n"
                                    "nvmlDeviceGetPowerUsage 1 3\n"
                                    "nvmlDeviceGetComputeRunningProcesses_v3 1 1\n");
    ASSERT(access(tmp_name(calls), F_OK) != 0);

    /* a new init counts from zero */
    init_ok(&n);
    d1 = handle(&n, 1);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_STR(read_text(calls), "nvmlDeviceGetHandleByIndex_v2 1 1\n");
}

TEST(calls_file_written_at_exit_without_shutdown)
{
    scenario("device 0\n");
    const char *calls = scratch("calls");
    setenv("STROBE_FAKE_NVML_CALLS", calls, 1);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        struct nvml n;
        nvml_load(&n);
        if (n.nvmlInit_v2() != NVML_SUCCESS)
            _exit(2);
        nvmlDevice_t d;
        unsigned int t;
        n.nvmlDeviceGetHandleByIndex_v2(0, &d);
        n.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &t);
        n.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &t);
        exit(0); /* the library's destructor writes the counts */
    }
    int status;
    ASSERT(waitpid(pid, &status, 0) == pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_EQ_STR(read_text(calls), "nvmlDeviceGetHandleByIndex_v2 0 1\n"
                                    "nvmlDeviceGetTemperature 0 2\n");
}

struct slow_call {
    struct nvml *n;
    nvmlDevice_t d;
    unsigned int mw;
    nvmlReturn_t rc;
    double took_s;
};

static void *slow_thread(void *arg)
{
    struct slow_call *c = arg;
    double t0 = mono_s();
    c->rc = c->n->nvmlDeviceGetPowerUsage(c->d, &c->mw);
    c->took_s = mono_s() - t0;
    return NULL;
}

TEST(slow_calls_sleep_without_blocking_others)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0\ndevice 1\n"
             "at 0 0 power 7000\n"
             "at 0 1 power 8000\n"
             "slow 0 nvmlDeviceGetPowerUsage 0.3\n");
    init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1);
    unsigned int v;

    double t0 = mono_s();
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d0, &v), NVML_SUCCESS);
    double took = mono_s() - t0;
    ASSERT_EQ_INT(v, 7000);
    if (took < 0.3 || took > 2.0)
        TEST_FAIL("slow call took %.3f s, want 0.3", took);
    t0 = mono_s();
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d1, &v), NVML_SUCCESS);
    ASSERT(mono_s() - t0 < 0.1);

    /* while one thread sleeps in the slow call, another is answered at once */
    struct slow_call c = {.n = &n, .d = d0};
    pthread_t th;
    ASSERT(pthread_create(&th, NULL, slow_thread, &c) == 0);
    sleep_s(0.05);
    t0 = mono_s();
    ASSERT_EQ_INT(n.nvmlDeviceGetTemperature(d0, NVML_TEMPERATURE_GPU, &v), NVML_SUCCESS);
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d1, &v), NVML_SUCCESS);
    double other = mono_s() - t0;
    pthread_join(th, NULL);
    ASSERT_EQ_INT(c.rc, NVML_SUCCESS);
    ASSERT_EQ_INT(c.mw, 7000);
    ASSERT(c.took_s >= 0.3);
    if (other > 0.1)
        TEST_FAIL("a call during the slow one took %.3f s", other);

    /* a shutdown during the sleep: the slow call then answers uninitialized */
    c = (struct slow_call){.n = &n, .d = d0};
    ASSERT(pthread_create(&th, NULL, slow_thread, &c) == 0);
    sleep_s(0.1);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    pthread_join(th, NULL);
    ASSERT_EQ_INT(c.rc, NVML_ERROR_UNINITIALIZED);
}

TEST(processes_follow_the_sizing_protocol)
{
    struct nvml n;
    nvml_load(&n);
    const char *procs = scratch("procs0");
    char text[PATH_MAX + 128];
    snprintf(text, sizeof(text), "device 0\ndevice 1\nprocesses_file 0 %s\n", procs);
    scenario(text);
    init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1);
    nvmlProcessInfo_t infos[4];
    nvmlProcessUtilizationSample_t util[4];
    unsigned int count;

    /* no file yet: no processes */
    count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, NULL), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, &count, 0), NVML_ERROR_NOT_FOUND);
    ASSERT_EQ_INT(count, 0);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d1, &count, infos), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);

    /* the job writes its pids */
    write_file(procs, "# pid bytes sm mem\n"
                      "4242 1073741824 87 31\n"
                      "not a process line\n"
                      "4243 - 5\n"
                      "4244 2048\n");
    count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, NULL),
                  NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(count, 3);
    count = 2;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos),
                  NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(count, 3);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 3);
    ASSERT_EQ_INT(infos[0].pid, 4242);
    ASSERT_EQ_U64(infos[0].usedGpuMemory, 1073741824ULL);
    ASSERT_EQ_INT(infos[0].gpuInstanceId, UINT_MAX);
    ASSERT_EQ_INT(infos[0].computeInstanceId, UINT_MAX);
    ASSERT_EQ_INT(infos[1].pid, 4243);
    ASSERT_EQ_U64(infos[1].usedGpuMemory, NVML_VALUE_NOT_AVAILABLE);
    ASSERT_EQ_INT(infos[2].pid, 4244);
    ASSERT_EQ_U64(infos[2].usedGpuMemory, 2048);
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, NULL, infos),
                  NVML_ERROR_INVALID_ARGUMENT);

    /* utilization: sized, then filled, stamped now */
    count = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, NULL, &count, 0),
                  NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(count, 3);
    count = 2;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, &count, 0),
                  NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(count, 3);
    count = 4;
    unsigned long long before = real_us();
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, &count, 0), NVML_SUCCESS);
    unsigned long long after = real_us();
    ASSERT_EQ_INT(count, 3);
    ASSERT_EQ_INT(util[0].pid, 4242);
    ASSERT_EQ_INT(util[0].smUtil, 87);
    ASSERT_EQ_INT(util[0].memUtil, 31);
    ASSERT_EQ_INT(util[0].encUtil, 0);
    ASSERT_EQ_INT(util[0].decUtil, 0);
    ASSERT_EQ_INT(util[1].pid, 4243);
    ASSERT_EQ_INT(util[1].smUtil, 5);
    ASSERT_EQ_INT(util[1].memUtil, 0);
    ASSERT_EQ_INT(util[2].pid, 4244);
    ASSERT_EQ_INT(util[2].smUtil, 0);
    /* the stamp is the fake's clock: realtime at init plus monotonic since, so
     * allow the two clocks a millisecond of drift */
    ASSERT(util[0].timeStamp + 1000 >= before && util[0].timeStamp <= after + 1000);
    ASSERT_EQ_U64(util[2].timeStamp, util[0].timeStamp);

    /* nothing newer than what was seen; later, new samples again */
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, &count, util[0].timeStamp + 5000000),
                  NVML_ERROR_NOT_FOUND);
    ASSERT_EQ_INT(count, 0);
    unsigned long long seen = util[0].timeStamp;
    sleep_s(0.002);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, &count, seen), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 3);
    ASSERT(util[0].timeStamp > seen);
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, util, NULL, 0),
                  NVML_ERROR_INVALID_ARGUMENT);

    /* the job ends */
    write_file(procs, "");
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

/* What a MIG device's handle does not answer, as NVML (and its processes). */
static void expect_mig_handle_refuses(struct nvml *n, nvmlDevice_t m)
{
    nvmlUtilization_t util;
    nvmlValueType_t type;
    nvmlSample_t samples[4];
    unsigned int count = 4, ui, pending;
    unsigned long long ull;
    nvmlProcessInfo_t infos[4];
    nvmlDevice_t other;

    ASSERT_EQ_INT(n->nvmlDeviceGetUtilizationRates(m, &util), NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(
        n->nvmlDeviceGetSamples(m, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, samples),
        NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n->nvmlDeviceGetPowerUsage(m, &ui), NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n->nvmlDeviceGetTotalEnergyConsumption(m, &ull), NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n->nvmlDeviceGetTemperature(m, NVML_TEMPERATURE_GPU, &ui),
                  NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n->nvmlDeviceGetClockInfo(m, NVML_CLOCK_SM, &ui), NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n->nvmlDeviceGetPcieThroughput(m, NVML_PCIE_UTIL_TX_BYTES, &ui),
                  NVML_ERROR_NOT_SUPPORTED);
    /* per-instance processes are NVML's through MIG handles: none scripted */
    count = 4;
    ASSERT_EQ_INT(n->nvmlDeviceGetComputeRunningProcesses_v3(m, &count, infos), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);
    /* a MIG device is not a GPU for the MIG calls */
    ASSERT_EQ_INT(n->nvmlDeviceGetMigMode(m, &ui, &pending), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n->nvmlDeviceGetMaxMigDeviceCount(m, &ui), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n->nvmlDeviceGetMigDeviceHandleByIndex(m, 0, &other),
                  NVML_ERROR_INVALID_ARGUMENT);
}

TEST(mig_devices_have_handles_of_their_own)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0 name \"NVIDIA H100 80GB HBM3\" memory 85520809984\n"
             "device 1\n"
             "mig_mode 0 1\n"
             "mig 0 0 uuid MIG-11111111-2222-3333-4444-555555555555 name \"NVIDIA H100 80GB HBM3 "
             "MIG 3g.40gb\" memory 42144366592 gi 1 ci 0 used 1073741824\n"
             "mig 0 2 uuid MIG-aaaaaaaa-2222-3333-4444-555555555555 gi 9 ci 2\n"
             "at 0 0 util.gpu 50\n"
             "at 0 0 power 90000\n"
             "at 0 0 mem.used 5000\n"
             "at 0 1 util.gpu 40\n");
    init_ok(&n);
    nvmlDevice_t d0 = handle(&n, 0), d1 = handle(&n, 1), m0 = NULL, m2 = NULL, again = NULL;
    unsigned int current = 7, pending = 7, count = 0;

    ASSERT_EQ_INT(n.nvmlDeviceGetMigMode(d0, &current, &pending), NVML_SUCCESS);
    ASSERT_EQ_INT(current, NVML_DEVICE_MIG_ENABLE);
    ASSERT_EQ_INT(pending, NVML_DEVICE_MIG_ENABLE);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigMode(d1, &current, &pending), NVML_SUCCESS);
    ASSERT_EQ_INT(current, NVML_DEVICE_MIG_DISABLE);
    ASSERT_EQ_INT(pending, NVML_DEVICE_MIG_DISABLE);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigMode(d0, NULL, &pending), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetMaxMigDeviceCount(d0, &count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 7);
    ASSERT_EQ_INT(n.nvmlDeviceGetMaxMigDeviceCount(d1, &count), NVML_SUCCESS);
    ASSERT_EQ_INT(count, 0);
    ASSERT_EQ_INT(n.nvmlDeviceGetMaxMigDeviceCount(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);

    /* indices with a gap: 0 and 2 exist, 1 and 3..6 not, 7 is past the maximum */
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, 0, &m0), NVML_SUCCESS);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, 2, &m2), NVML_SUCCESS);
    ASSERT(m0 && m2 && m0 != m2 && m0 != d0 && m0 != d1 && m2 != d0);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, 0, &again), NVML_SUCCESS);
    ASSERT(again == m0);
    again = d1;
    for (unsigned int i = 1; i < 7; i++)
        if (i != 2)
            ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, i, &again),
                          NVML_ERROR_NOT_FOUND);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, 7, &again),
                  NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d0, 0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT(again == d1);
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d1, 0, &again), NVML_ERROR_NOT_SUPPORTED);

    /* the facts of each, through its own handle */
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlMemory_t mem;
    unsigned int id = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(m0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "MIG-11111111-2222-3333-4444-555555555555");
    ASSERT_EQ_INT(n.nvmlDeviceGetUUID(m0, buf, 40), NVML_ERROR_INSUFFICIENT_SIZE);
    ASSERT_EQ_INT(n.nvmlDeviceGetName(m0, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m0, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 42144366592ULL);
    ASSERT_EQ_U64(mem.used, 1073741824ULL);
    ASSERT_EQ_U64(mem.free, 42144366592ULL - 1073741824ULL);
    ASSERT_EQ_INT(n.nvmlDeviceGetGpuInstanceId(m0, &id), NVML_SUCCESS);
    ASSERT_EQ_INT(id, 1);
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeInstanceId(m0, &id), NVML_SUCCESS);
    ASSERT_EQ_INT(id, 0);
    ASSERT_EQ_INT(n.nvmlDeviceGetGpuInstanceId(m0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    /* defaults */
    ASSERT_EQ_INT(n.nvmlDeviceGetName(m2, buf, sizeof(buf)), NVML_SUCCESS);
    ASSERT_EQ_STR(buf, "NVIDIA Fake GPU MIG 1g.10gb");
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m2, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 10737418240ULL);
    ASSERT_EQ_U64(mem.used, 0);
    ASSERT_EQ_INT(n.nvmlDeviceGetGpuInstanceId(m2, &id), NVML_SUCCESS);
    ASSERT_EQ_INT(id, 9);
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeInstanceId(m2, &id), NVML_SUCCESS);
    ASSERT_EQ_INT(id, 2);
    expect_mig_handle_refuses(&n, m0);
    expect_mig_handle_refuses(&n, m2);

    /* a GPU's handle is no MIG device's */
    ASSERT_EQ_INT(n.nvmlDeviceGetGpuInstanceId(d0, &id), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlDeviceGetComputeInstanceId(d1, &id), NVML_ERROR_INVALID_ARGUMENT);

    /* a GPU in MIG mode: no utilization, the rest as scripted; out of it, all */
    nvmlUtilization_t u;
    nvmlProcessUtilizationSample_t putil[4];
    nvmlValueType_t type;
    nvmlSample_t samples[4];
    unsigned int mw = 0;
    ASSERT_EQ_INT(n.nvmlDeviceGetUtilizationRates(d0, &u), NVML_ERROR_NOT_SUPPORTED);
    count = 4;
    ASSERT_EQ_INT(
        n.nvmlDeviceGetSamples(d0, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, samples),
        NVML_ERROR_NOT_SUPPORTED);
    count = 4;
    ASSERT_EQ_INT(
        n.nvmlDeviceGetSamples(d0, NVML_MEMORY_UTILIZATION_SAMPLES, 0, &type, &count, samples),
        NVML_ERROR_NOT_SUPPORTED);
    count = 4;
    ASSERT_EQ_INT(n.nvmlDeviceGetProcessUtilization(d0, putil, &count, 0),
                  NVML_ERROR_NOT_SUPPORTED);
    ASSERT_EQ_INT(n.nvmlDeviceGetPowerUsage(d0, &mw), NVML_SUCCESS);
    ASSERT_EQ_INT(mw, 90000);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(d0, &mem), NVML_SUCCESS);
    ASSERT_EQ_U64(mem.total, 85520809984ULL);
    ASSERT_EQ_U64(mem.used, 5000);
    ASSERT_EQ_INT(n.nvmlDeviceGetUtilizationRates(d1, &u), NVML_SUCCESS);
    ASSERT_EQ_INT(u.gpu, 40);

    /* handles die with the init, as a GPU's do */
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m0, &mem), NVML_ERROR_UNINITIALIZED);
    /* a scenario without MIG: an old handle is no handle */
    scenario("device 0\n");
    init_ok(&n);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m0, &mem), NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

TEST(mig_devices_are_counted_and_lost_with_their_gpu)
{
    struct nvml n;
    nvml_load(&n);
    scenario("device 0\ndevice 1\n"
             "mig_mode 1 1\n"
             "mig 1 3 uuid MIG-33333333-0000-0000-0000-000000000000 used 77\n"
             "lost 0.2 1\n");
    const char *calls = scratch("calls");
    setenv("STROBE_FAKE_NVML_CALLS", calls, 1);
    struct start s = init_ok(&n);
    nvmlDevice_t d1 = handle(&n, 1), m3 = NULL;
    nvmlMemory_t mem;
    if (elapsed_max(&s) < 0.15) {
        ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d1, 3, &m3), NVML_SUCCESS);
        ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m3, &mem), NVML_SUCCESS);
        ASSERT_EQ_U64(mem.used, 77);
        ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m3, &mem), NVML_SUCCESS);
        ASSERT_EQ_U64(mem.used, 77);
    } else {
        ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
        return; /* too loaded a machine to see the MIG device before the loss */
    }
    sleep_until(&s, 0.25);
    ASSERT_EQ_INT(n.nvmlDeviceGetMemoryInfo(m3, &mem), NVML_ERROR_GPU_IS_LOST);
    unsigned int id;
    ASSERT_EQ_INT(n.nvmlDeviceGetGpuInstanceId(m3, &id), NVML_ERROR_GPU_IS_LOST);
    nvmlDevice_t again = NULL;
    ASSERT_EQ_INT(n.nvmlDeviceGetMigDeviceHandleByIndex(d1, 3, &again), NVML_ERROR_GPU_IS_LOST);
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
    ASSERT_EQ_STR(read_text(calls), "nvmlDeviceGetHandleByIndex_v2 1 1\n"
                                    "nvmlDeviceGetMigDeviceHandleByIndex 1 2\n"
                                    "nvmlDeviceGetMemoryInfo 1:3 3\n"
                                    "nvmlDeviceGetGpuInstanceId 1:3 1\n");
}

struct hammer {
    struct nvml *n;
    int failures;
};

static void *hammer_thread(void *arg)
{
    struct hammer *h = arg;
    for (int i = 0; i < 2000; i++) {
        nvmlDevice_t d = NULL;
        unsigned int v, count = 8;
        nvmlValueType_t type;
        nvmlSample_t s[8];
        nvmlUtilization_t u;
        if (h->n->nvmlDeviceGetHandleByIndex_v2((unsigned int)i % 2, &d) != NVML_SUCCESS ||
            h->n->nvmlDeviceGetPowerUsage(d, &v) != NVML_SUCCESS ||
            h->n->nvmlDeviceGetUtilizationRates(d, &u) != NVML_SUCCESS || u.gpu != 50)
            h->failures++;
        nvmlReturn_t rc =
            h->n->nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, s);
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND)
            h->failures++;
    }
    return NULL;
}

TEST(threads_share_it_safely)
{
    struct nvml n;
    nvml_load(&n);
    scenario("sample_period 0.001\ndevice 0\ndevice 1\nat 0 0 util.gpu 50\nat 0 1 util.gpu 50\n");
    init_ok(&n);
    pthread_t th[4];
    struct hammer h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer){.n = &n};
        ASSERT(pthread_create(&th[i], NULL, hammer_thread, &h[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ASSERT_EQ_INT(h[i].failures, 0);
    }
    ASSERT_EQ_INT(n.nvmlShutdown(), NVML_SUCCESS);
}

int main(int argc, char **argv)
{
    static const struct test_case cases[] = {TEST_FOREACH(
        TEST_ENTRY, exports_every_function, error_strings,
        uninitialized_before_init_and_after_shutdown, init_and_shutdown_nest,
        init_fails_without_a_readable_scenario, parse_errors_name_file_and_line,
        init_error_directive, devices_names_uuids_memory_driver,
        strings_too_small_are_insufficient_size, values_are_step_functions_of_time,
        energy_integrates_power_unless_scripted, samples_since_last_seen,
        samples_ring_keeps_the_last_120, lost_device_answers_gpu_is_lost,
        unsupported_and_errors_are_counted_in_the_calls_file,
        calls_file_written_at_exit_without_shutdown, slow_calls_sleep_without_blocking_others,
        processes_follow_the_sizing_protocol, mig_devices_have_handles_of_their_own,
        mig_devices_are_counted_and_lost_with_their_gpu, threads_share_it_safely)};

    /* the libraries sit beside this binary */
    ssize_t len = readlink("/proc/self/exe", lib_dir, sizeof(lib_dir) - 1);
    if (len <= 0) {
        fprintf(stderr, "cannot read /proc/self/exe: %s\n", strerror(errno));
        return 2;
    }
    lib_dir[len] = '\0';
    char *slash = strrchr(lib_dir, '/');
    if (slash)
        *slash = '\0';
    unsetenv("STROBE_FAKE_NVML_CALLS");
    return test_main(cases, ARRAY_SIZE(cases), argc, argv);
}
