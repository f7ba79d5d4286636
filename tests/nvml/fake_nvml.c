/*
 * A scripted libnvidia-ml for the GPU tests: it exports every function of
 * NVML_FUNCTIONS (src/gpu/nvml_api.h) with NVML's exact C names and
 * signatures, so strobe's production collector loads it through
 * STROBE_NVML_LIB and cannot tell it from a driver. Every value comes from a
 * scenario file named by $STROBE_FAKE_NVML, read at nvmlInit_v2.
 *
 * Built twice by tests/nvml/nvml.mk:
 *   libnvidia-ml-fake.so      everything
 *   libnvidia-ml-fake-old.so  -DFAKE_NVML_OLD: an old driver, without
 *                             nvmlDeviceGetSamples,
 *                             nvmlDeviceGetTotalEnergyConsumption and
 *                             nvmlDeviceGetComputeRunningProcesses_v3 (dlsym
 *                             finds every exported symbol, so a missing one
 *                             can only be a library that lacks it)
 *
 * Scenario format: one directive a line, words separated by blanks, a word
 * in double quotes may hold blanks (no escapes), '#' at the start of a word
 * begins a comment. Times are seconds since nvmlInit_v2 (CLOCK_MONOTONIC),
 * decimals allowed; integers are decimal or 0x hex. A device must be declared
 * (in index order 0, 1, 2, ...) before a line names it.
 *
 *   driver 550.54.15                 nvmlSystemGetDriverVersion (default 550.54.15)
 *   sample_period 0.02               seconds between nvmlDeviceGetSamples samples
 *                                    (default 1/6, as drivers buffer utilization)
 *   device 0 name "NVIDIA H100 80GB HBM3" uuid GPU-5fb0... memory 85899345920
 *                                    name, uuid, memory (total bytes) all optional:
 *                                    "NVIDIA Fake GPU",
 *                                    GPU-00000000-0000-0000-0000-<index, 12 digits>,
 *                                    85899345920
 *   at <t> <device> <field> <value>  from time t on, field reads value (a step
 *                                    function: the line with the greatest t <= now
 *                                    wins, the later line on equal t; 0 before the
 *                                    first). Fields:
 *       util.gpu util.memory   percent: nvmlDeviceGetUtilizationRates, and the
 *                              GPU/MEMORY_UTILIZATION_SAMPLES of nvmlDeviceGetSamples
 *       mem.used               bytes (free = total - used, 0 if used > total)
 *       power                  milliwatts (also TOTAL_POWER_SAMPLES)
 *       energy                 millijoules, nvmlDeviceGetTotalEnergyConsumption. If a
 *                              device has no energy line, its energy is the integral
 *                              of its power step function from nvmlInit_v2 to now.
 *       temp                   degrees C (NVML_TEMPERATURE_GPU)
 *       clock.sm clock.mem     MHz (NVML_CLOCK_GRAPHICS reads clock.sm)
 *       throttle               nvmlDeviceGetCurrentClocksThrottleReasons bitmask
 *       pcie.tx pcie.rx        KB/s
 *       ecc.corrected ecc.uncorrected  counts, volatile and aggregate alike
 *       nvlink.tx nvlink.rx    KiB/s over all links; nvmlDeviceGetFieldValues gives
 *                              link 0 the integral of it (the data throughput
 *                              counters 138/139), other links 0
 *   nvlinks <device> <n>             links 0..n-1 answer those fields; the rest, and
 *                                    every other field, NOT_SUPPORTED (default 0 links)
 *   nvlink_down <device> <link> <from> <to>  that link's fields answer
 *                                    NVML_ERROR_UNKNOWN from time from to time to
 *   lost <t> <device>                from time t on every call on the device
 *                                    (nvmlDeviceGetHandleByIndex_v2 included) returns
 *                                    NVML_ERROR_GPU_IS_LOST; the count stays the same
 *   hang <t> <device>                from time t on every call on the device never
 *                                    returns (a hung driver; without the fake's lock)
 *   unsupported <device> <function>  that nvmlDevice* function always returns
 *                                    NVML_ERROR_NOT_SUPPORTED for the device
 *   error <device> <function> <code> [<n>]  the same with any code: a number or a
 *                                    name such as NO_PERMISSION (NVML_ERROR_ optional);
 *                                    with n, only the first n calls (a transient error)
 *   slow <device> <function> <s>     each call sleeps s seconds before answering
 *                                    (without holding the fake's lock)
 *   processes_file <device> <path>   nvmlDeviceGetComputeRunningProcesses_v3 and
 *                                    nvmlDeviceGetProcessUtilization read the file at
 *                                    each call; absent: no processes. One process a
 *                                    line: "pid used_gpu_memory_bytes [sm_util
 *                                    [mem_util]]", memory "-" for
 *                                    NVML_VALUE_NOT_AVAILABLE; other lines are skipped
 *                                    (write it whole and rename it into place)
 *   init_error <code>                nvmlInit_v2 returns that code (say
 *                                    DRIVER_NOT_LOADED) and initializes nothing
 *   mig_mode <device> <0|1>          nvmlDeviceGetMigMode's current and pending mode
 *                                    (default 0)
 *   mig <device> <index> uuid <MIG-...> [name "..."] [memory <bytes>] [gi <n>]
 *       [ci <n>] [used <bytes>]      a MIG device (index 0 to 6) of a GPU whose
 *                                    mig_mode line came first: its UUID, name
 *                                    (default "NVIDIA Fake GPU MIG 1g.10gb"), total
 *                                    memory (10737418240), GPU and compute instance
 *                                    ids (the index, 0) and memory used (0)
 *
 * ("missing <function>" is refused with a pointer to the -old build.)
 *
 * nvmlDeviceGetSamples keeps a driver's ring: sample k (k = 1, 2, ...) is
 * taken at k * sample_period with the field's value then, stamped in µs since
 * the epoch (CLOCK_REALTIME at nvmlInit_v2 plus the elapsed time); only the
 * last 120 are kept. A call returns the oldest of those newer than
 * lastSeenTimeStamp, at most *sampleCount, and NVML_ERROR_NOT_FOUND when there
 * are none; samples == NULL sets *sampleCount to how many there are.
 * nvmlDeviceGetProcessUtilization stamps one sample per listed process with
 * the current time (NOT_FOUND when none is newer than lastSeenTimeStamp).
 *
 * MIG: a GPU in MIG mode answers nvmlDeviceGetMaxMigDeviceCount 7 (0 out of
 * it) and nvmlDeviceGetMigDeviceHandleByIndex a handle for each declared
 * index, NOT_FOUND for the others below 7 (NOT_SUPPORTED out of MIG mode);
 * its nvmlDeviceGetUtilizationRates, utilization samples and
 * nvmlDeviceGetProcessUtilization are NOT_SUPPORTED. A MIG device handle
 * answers nvmlDeviceGetName, nvmlDeviceGetUUID, nvmlDeviceGetMemoryInfo,
 * nvmlDeviceGetComputeRunningProcesses_v3 (no processes) and the instance
 * ids, INVALID_ARGUMENT to the three MIG calls above, and
 * NOT_SUPPORTED to everything else; it is lost with its GPU. A GPU's handle
 * is INVALID_ARGUMENT to the instance-id calls.
 *
 * Calls are counted per device and function (every call that passed a valid
 * handle or index after init, whatever it returned). When the last
 * nvmlShutdown runs, or the process exits still initialized, the counts go to
 * the file named by $STROBE_FAKE_NVML_CALLS (read at nvmlInit_v2), one line
 * "<function> <device> <calls>" for each count above zero (a MIG device's
 * device is "<gpu>:<mig index>", after its GPU's lines), written to a
 * temporary name and renamed into place.
 *
 * Errors of nvmlInit_v2 (an unset variable, a file that cannot be read, a
 * parse error) return NVML_ERROR_UNKNOWN after one line on stderr:
 * "fake_nvml: <file>:<line>: <what>". nvmlInit_v2 and nvmlShutdown nest as
 * NVML's do: only the first init reads the scenario, only the last shutdown
 * frees it. One mutex guards everything.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/array.h"
#include "gpu/nvml_api.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

/* The prototypes, from the same list the collector resolves: a definition
 * below that strays from NVML's signature does not compile. */
#define FAKE_DECLARE(ret, name, args) FAKE_EXPORT ret name args;
NVML_FUNCTIONS(FAKE_DECLARE)

#define FAKE_MAX_DEVICES     64
#define FAKE_SAMPLE_RING     120 /* samples a driver keeps per device and type */
#define FAKE_MAX_TOKENS      16
#define FAKE_MAX_PROCESSES   4096
#define FAKE_MAX_MIG         7 /* nvmlDeviceGetMaxMigDeviceCount of a GPU in MIG mode (A100, H100) */
#define NS_PER_S             INT64_C(1000000000)
#define DEFAULT_DRIVER       "550.54.15"
#define DEFAULT_NAME         "NVIDIA Fake GPU"
#define DEFAULT_MEMORY_BYTES UINT64_C(85899345920)
#define DEFAULT_MIG_NAME     "NVIDIA Fake GPU MIG 1g.10gb"
#define DEFAULT_MIG_BYTES    UINT64_C(10737418240)
#define FAKE_ERROR_MEMORY    20 /* NVML_ERROR_MEMORY, not in nvml_api.h */

#define FN_ENUM(ret, name, args) FN_##name,
enum fn { NVML_FUNCTIONS(FN_ENUM) FN_COUNT };
#define FN_NAME(ret, name, args) #name,
static const char *const fn_names[FN_COUNT] = {NVML_FUNCTIONS(FN_NAME)};

enum field {
    F_UTIL_GPU,
    F_UTIL_MEMORY,
    F_MEM_USED,
    F_POWER,
    F_ENERGY,
    F_TEMP,
    F_CLOCK_SM,
    F_CLOCK_MEM,
    F_THROTTLE,
    F_PCIE_TX,
    F_PCIE_RX,
    F_ECC_CORRECTED,
    F_ECC_UNCORRECTED,
    F_NVLINK_TX, /* KiB/s over all links, carried by link 0 */
    F_NVLINK_RX,
    F_COUNT
};

static const struct {
    const char *name;
    uint64_t max; /* what the NVML out-parameter holds */
} fields[F_COUNT] = {
    [F_UTIL_GPU] = {"util.gpu", UINT32_MAX},
    [F_UTIL_MEMORY] = {"util.memory", UINT32_MAX},
    [F_MEM_USED] = {"mem.used", UINT64_MAX},
    [F_POWER] = {"power", UINT32_MAX},
    [F_ENERGY] = {"energy", UINT64_MAX},
    [F_TEMP] = {"temp", UINT32_MAX},
    [F_CLOCK_SM] = {"clock.sm", UINT32_MAX},
    [F_CLOCK_MEM] = {"clock.mem", UINT32_MAX},
    [F_THROTTLE] = {"throttle", UINT64_MAX},
    [F_PCIE_TX] = {"pcie.tx", UINT32_MAX},
    [F_PCIE_RX] = {"pcie.rx", UINT32_MAX},
    [F_ECC_CORRECTED] = {"ecc.corrected", UINT64_MAX},
    [F_ECC_UNCORRECTED] = {"ecc.uncorrected", UINT64_MAX},
    [F_NVLINK_TX] = {"nvlink.tx", UINT64_MAX},
    [F_NVLINK_RX] = {"nvlink.rx", UINT64_MAX},
};

/* nvmlErrorString's texts, as libnvidia-ml words them. */
static const struct {
    nvmlReturn_t code;
    const char *name; /* without NVML_ERROR_ */
    const char *text;
} errors[] = {
    {NVML_SUCCESS, "SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NO_PERMISSION", "Insufficient Permissions"},
    {5, "ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "Insufficient Size"},
    {8, "INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "TIMEOUT", "Timeout"},
    {11, "IRQ_ISSUE", "Interrupt Request Issue"},
    {12, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", "Function Not Found"},
    {14, "CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST", "GPU is lost"},
    {16, "RESET_REQUIRED", "GPU requires restart"},
    {17, "OPERATING_SYSTEM", "The operating system has blocked the request."},
    {18, "LIB_RM_VERSION_MISMATCH", "RM has detected an NVML/RM version mismatch."},
    {19, "IN_USE", "In use by another client"},
    {20, "MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NO_DATA", "No data"},
    {NVML_ERROR_UNKNOWN, "UNKNOWN", "Unknown Error"},
};

struct step {
    int64_t t_ns; /* since nvmlInit_v2 */
    uint64_t value;
};

/* One field's step function, sorted by time (stable: file order on ties). */
struct series {
    struct step *steps;
    size_t n, cap;
};

/* A device, GPU or MIG device; its address is the nvmlDevice_t handle, so
 * handles are distinct and stay valid (static storage) even across
 * nvmlShutdown. A MIG device uses name, uuid, memory_total_bytes,
 * field[F_MEM_USED] and calls; it is lost when its GPU is. */
struct nvmlDevice_st {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    uint64_t memory_total_bytes;
    struct series field[F_COUNT];
    int64_t lost_ns;               /* INT64_MAX: never */
    int64_t hang_ns;               /* INT64_MAX: never */
    int64_t slow_ns[FN_COUNT];     /* sleep before answering */
    nvmlReturn_t fail[FN_COUNT];   /* scripted error, NVML_SUCCESS for none */
    uint64_t fail_calls[FN_COUNT]; /* the error for that many calls; 0: all */
    uint64_t calls[FN_COUNT];
    char *processes_path;             /* malloc'ed; NULL: no processes */
    unsigned nvlinks;                 /* links whose throughput fields answer; 0: NOT_SUPPORTED */
    unsigned down_link;               /* nvlink_down: this link answers UNKNOWN ... */
    int64_t down_from_ns, down_to_ns; /* ... from, to (both 0: never) */
    unsigned mig_mode;                /* a GPU's current (and pending) MIG mode */
    struct nvmlDevice_st *parent;     /* a MIG device's GPU; NULL for a GPU */
    int declared;                     /* a MIG slot: a 'mig' line made it a device */
    unsigned gpu_instance_id, compute_instance_id; /* a MIG device's */
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlDevice_st devices[FAKE_MAX_DEVICES];
static struct nvmlDevice_st migs[FAKE_MAX_DEVICES][FAKE_MAX_MIG]; /* by GPU, MIG index */
static struct {
    int refs;            /* nvmlInit_v2 calls not yet undone by nvmlShutdown */
    unsigned generation; /* bumped at each full shutdown */
    unsigned device_count;
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    int64_t sample_period_ns;
    nvmlReturn_t init_error;
    int64_t start_mono_ns;
    uint64_t start_real_us;
    char *calls_path; /* malloc'ed copy of $STROBE_FAKE_NVML_CALLS, or NULL */
} fake;

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Time since nvmlInit_v2. */
static int64_t elapsed_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC) - fake.start_mono_ns;
}

/* NVML's timestamps: µs since the epoch, on the clock of the init. */
static uint64_t stamp_us(int64_t at_ns)
{
    return fake.start_real_us + (uint64_t)(at_ns / 1000);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int series_add(struct series *s, int64_t t_ns, uint64_t value)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct step *steps = realloc(s->steps, cap * sizeof(*steps));
        if (!steps)
            return -1;
        s->steps = steps;
        s->cap = cap;
    }
    size_t i = s->n;
    while (i > 0 && s->steps[i - 1].t_ns > t_ns) {
        s->steps[i] = s->steps[i - 1];
        i--;
    }
    s->steps[i] = (struct step){.t_ns = t_ns, .value = value};
    s->n++;
    return 0;
}

/* The value of the step function at t: 0 before its first step. */
static uint64_t series_at(const struct series *s, int64_t t_ns)
{
    for (size_t i = s->n; i > 0; i--)
        if (s->steps[i - 1].t_ns <= t_ns)
            return s->steps[i - 1].value;
    return 0;
}

/* ∫ rate dt from init to t: power in mW gives mJ, a rate in KiB/s gives KiB. */
static uint64_t series_integral(const struct series *s, int64_t t_ns)
{
    double sum = 0;
    uint64_t level = 0;
    int64_t from = 0;
    for (size_t i = 0; i < s->n && s->steps[i].t_ns <= t_ns; i++) {
        sum += (double)level * (double)(s->steps[i].t_ns - from) / 1e9;
        level = s->steps[i].value;
        from = s->steps[i].t_ns;
    }
    sum += (double)level * (double)(t_ns - from) / 1e9;
    return (uint64_t)sum;
}

static void device_release(struct nvmlDevice_st *d)
{
    for (int f = 0; f < F_COUNT; f++)
        free(d->field[f].steps);
    free(d->processes_path);
}

static void devices_release(void)
{
    for (unsigned i = 0; i < FAKE_MAX_DEVICES; i++) {
        device_release(&devices[i]);
        for (unsigned k = 0; k < FAKE_MAX_MIG; k++)
            device_release(&migs[i][k]);
    }
    memset(devices, 0, sizeof(devices));
    memset(migs, 0, sizeof(migs));
    free(fake.calls_path);
    fake.calls_path = NULL;
    fake.device_count = 0;
}

/* --- the scenario parser --- */

struct parse {
    char *err; /* message on failure */
    size_t err_cap;
};

typedef int directive_fn(struct parse *p, char **argv, int argc);

static int parse_fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int parse_fail(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->err_cap, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || *end || end == s + (base == 16 ? 2 : 0))
        return -1;
    *out = v;
    return 0;
}

static int parse_seconds(struct parse *p, const char *s, int64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < 0 || v > 1e9)
        return parse_fail(p, "bad time '%s' (seconds, 0 or more)", s);
    *ns = (int64_t)llround(v * 1e9);
    return 0;
}

static int parse_device(struct parse *p, const char *s, struct nvmlDevice_st **d)
{
    uint64_t i;
    if (parse_u64(s, &i) != 0)
        return parse_fail(p, "bad device index '%s'", s);
    if (i >= fake.device_count)
        return parse_fail(p, "device %s is not declared (a 'device' line comes first)", s);
    *d = &devices[i];
    return 0;
}

/* A device function by name: what "unsupported", "error" and "slow" take.
 * Names that the -old build omits are accepted, so one scenario serves both. */
static int parse_function(struct parse *p, const char *s, enum fn *fn)
{
    for (int i = 0; i < FN_COUNT; i++)
        if (strncmp(fn_names[i], "nvmlDevice", 10) == 0 && strcmp(fn_names[i], s) == 0) {
            *fn = (enum fn)i;
            return 0;
        }
    return parse_fail(p, "unknown device function '%s'", s);
}

static int parse_error_code(struct parse *p, const char *s, nvmlReturn_t *code)
{
    const char *name = strncmp(s, "NVML_ERROR_", 11) == 0 ? s + 11 : s;
    for (size_t i = 0; i < ARRAY_SIZE(errors); i++)
        if (strcmp(errors[i].name, name) == 0) {
            *code = errors[i].code;
            return 0;
        }
    uint64_t v;
    if (parse_u64(s, &v) == 0 && v <= INT_MAX) {
        *code = (nvmlReturn_t)v;
        return 0;
    }
    return parse_fail(p, "unknown NVML error code '%s'", s);
}

static int copy_word(struct parse *p, char *dst, size_t cap, const char *what, const char *s)
{
    if (strlen(s) >= cap)
        return parse_fail(p, "%s '%s' is too long (at most %zu bytes)", what, s, cap - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int do_driver(struct parse *p, char **argv, int argc)
{
    (void)argc;
    return copy_word(p, fake.driver, sizeof(fake.driver), "driver version", argv[1]);
}

static int do_sample_period(struct parse *p, char **argv, int argc)
{
    (void)argc;
    int64_t ns;
    if (parse_seconds(p, argv[1], &ns) != 0)
        return -1;
    if (ns < 1000)
        return parse_fail(p, "sample_period '%s' is under a microsecond", argv[1]);
    fake.sample_period_ns = ns;
    return 0;
}

static int do_device(struct parse *p, char **argv, int argc)
{
    uint64_t i;
    if (parse_u64(argv[1], &i) != 0)
        return parse_fail(p, "bad device index '%s'", argv[1]);
    if (i != fake.device_count)
        return parse_fail(p, "device %s out of order (expected device %u)", argv[1],
                          fake.device_count);
    if (i >= FAKE_MAX_DEVICES)
        return parse_fail(p, "too many devices (at most %d)", FAKE_MAX_DEVICES);
    struct nvmlDevice_st *d = &devices[i];
    snprintf(d->name, sizeof(d->name), "%s", DEFAULT_NAME);
    snprintf(d->uuid, sizeof(d->uuid), "GPU-00000000-0000-0000-0000-%012u", (unsigned)i);
    d->memory_total_bytes = DEFAULT_MEMORY_BYTES;
    d->lost_ns = d->hang_ns = INT64_MAX;
    for (int a = 2; a < argc; a += 2) {
        if (a + 1 >= argc)
            return parse_fail(p, "device attribute '%s' has no value", argv[a]);
        int rc;
        if (strcmp(argv[a], "name") == 0) {
            rc = copy_word(p, d->name, sizeof(d->name), "name", argv[a + 1]);
        } else if (strcmp(argv[a], "uuid") == 0) {
            rc = copy_word(p, d->uuid, sizeof(d->uuid), "uuid", argv[a + 1]);
        } else if (strcmp(argv[a], "memory") == 0) {
            rc = parse_u64(argv[a + 1], &d->memory_total_bytes);
            if (rc != 0)
                rc = parse_fail(p, "bad memory '%s' (bytes)", argv[a + 1]);
        } else {
            rc = parse_fail(p, "unknown device attribute '%s' (name, uuid, memory)", argv[a]);
        }
        if (rc != 0)
            return -1;
    }
    fake.device_count++;
    return 0;
}

static int do_at(struct parse *p, char **argv, int argc)
{
    (void)argc;
    int64_t t_ns;
    struct nvmlDevice_st *d;
    if (parse_seconds(p, argv[1], &t_ns) != 0 || parse_device(p, argv[2], &d) != 0)
        return -1;
    int f = 0;
    while (f < F_COUNT && strcmp(fields[f].name, argv[3]) != 0)
        f++;
    if (f == F_COUNT)
        return parse_fail(p, "unknown field '%s'", argv[3]);
    uint64_t v;
    if (parse_u64(argv[4], &v) != 0 || v > fields[f].max)
        return parse_fail(p, "bad value '%s' for %s (0 to %" PRIu64 ")", argv[4], fields[f].name,
                          fields[f].max);
    if (series_add(&d->field[f], t_ns, v) != 0)
        return parse_fail(p, "out of memory");
    return 0;
}

/* lost <t> <device> and hang <t> <device>: from time t on */
static int do_lost_or_hang(struct parse *p, char **argv, int argc)
{
    (void)argc;
    int64_t t_ns;
    struct nvmlDevice_st *d;
    if (parse_seconds(p, argv[1], &t_ns) != 0 || parse_device(p, argv[2], &d) != 0)
        return -1;
    *(strcmp(argv[0], "hang") == 0 ? &d->hang_ns : &d->lost_ns) = t_ns;
    return 0;
}

static int do_unsupported(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    enum fn fn;
    if (parse_device(p, argv[1], &d) != 0 || parse_function(p, argv[2], &fn) != 0)
        return -1;
    d->fail[fn] = NVML_ERROR_NOT_SUPPORTED;
    return 0;
}

static int do_error(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    enum fn fn;
    nvmlReturn_t code;
    if (parse_device(p, argv[1], &d) != 0 || parse_function(p, argv[2], &fn) != 0 ||
        parse_error_code(p, argv[3], &code) != 0)
        return -1;
    d->fail[fn] = code;
    d->fail_calls[fn] = 0;
    /* a transient error: the first n calls only */
    if (argc > 4 && (parse_u64(argv[4], &d->fail_calls[fn]) || d->fail_calls[fn] == 0))
        return parse_fail(p, "bad call count '%s' (a whole number, 1 or more)", argv[4]);
    return 0;
}

static int do_slow(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    enum fn fn;
    int64_t ns;
    if (parse_device(p, argv[1], &d) != 0 || parse_function(p, argv[2], &fn) != 0 ||
        parse_seconds(p, argv[3], &ns) != 0)
        return -1;
    d->slow_ns[fn] = ns;
    return 0;
}

static int do_processes_file(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    if (parse_device(p, argv[1], &d) != 0)
        return -1;
    char *path = strdup(argv[2]);
    if (!path)
        return parse_fail(p, "out of memory");
    free(d->processes_path);
    d->processes_path = path;
    return 0;
}

/* "<device> <n>", n a link count (what 0, at most max) or a link number */
static int parse_device_links(struct parse *p, char **argv, const char *what, uint64_t max,
                              struct nvmlDevice_st **d, uint64_t *n)
{
    if (parse_device(p, argv[1], d))
        return -1;
    if (parse_u64(argv[2], n) || *n > max)
        return parse_fail(p, "bad %s '%s' (0 to %llu)", what, argv[2], (unsigned long long)max);
    return 0;
}

/* nvlinks <device> <n>: links 0..n-1 answer the NVLink throughput fields
 * (the whole nvlink.tx / nvlink.rx rate is carried by link 0). */
static int do_nvlinks(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    uint64_t n;
    if (parse_device_links(p, argv, "link count", NVML_NVLINK_MAX_LINKS, &d, &n))
        return -1;
    d->nvlinks = (unsigned)n;
    return 0;
}

/* nvlink_down <device> <link> <from> <to>: the link's fields answer
 * NVML_ERROR_UNKNOWN in that time (a link that flaps). */
static int do_nvlink_down(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    uint64_t link;
    if (parse_device_links(p, argv, "link", NVML_NVLINK_MAX_LINKS - 1, &d, &link) ||
        parse_seconds(p, argv[3], &d->down_from_ns) || parse_seconds(p, argv[4], &d->down_to_ns))
        return -1;
    d->down_link = (unsigned)link;
    return 0;
}

/* mig_mode <device> <0|1>: nvmlDeviceGetMigMode's current and pending mode. */
static int do_mig_mode(struct parse *p, char **argv, int argc)
{
    (void)argc;
    struct nvmlDevice_st *d;
    uint64_t mode;
    if (parse_device(p, argv[1], &d))
        return -1;
    if (parse_u64(argv[2], &mode) || mode > NVML_DEVICE_MIG_ENABLE)
        return parse_fail(p, "bad MIG mode '%s' (0 or 1)", argv[2]);
    d->mig_mode = (unsigned)mode;
    return 0;
}

/* One "key value" pair of a 'mig' line. */
static int mig_attribute(struct parse *p, struct nvmlDevice_st *m, const char *key,
                         const char *value)
{
    uint64_t v;
    if (strcmp(key, "uuid") == 0) {
        if (strncmp(value, "MIG-", 4) != 0)
            return parse_fail(p, "MIG device uuid '%s' does not start with MIG-", value);
        return copy_word(p, m->uuid, sizeof(m->uuid), "uuid", value);
    }
    if (strcmp(key, "name") == 0)
        return copy_word(p, m->name, sizeof(m->name), "name", value);
    int id = strcmp(key, "gi") == 0 || strcmp(key, "ci") == 0;
    if (!id && strcmp(key, "memory") != 0 && strcmp(key, "used") != 0)
        return parse_fail(p, "unknown MIG attribute '%s' (uuid, name, memory, gi, ci, used)", key);
    if (parse_u64(value, &v) || (id && v > UINT_MAX))
        return parse_fail(p, "bad %s '%s'", key, value);
    if (strcmp(key, "memory") == 0)
        m->memory_total_bytes = v;
    else if (strcmp(key, "gi") == 0)
        m->gpu_instance_id = (unsigned)v;
    else if (strcmp(key, "ci") == 0)
        m->compute_instance_id = (unsigned)v;
    else if (series_add(&m->field[F_MEM_USED], 0, v) != 0)
        return parse_fail(p, "out of memory");
    return 0;
}

/* mig <device> <index> uuid <MIG-...> [name "..."] [memory <bytes>] [gi <n>]
 * [ci <n>] [used <bytes>]: a MIG device of a GPU in MIG mode. */
static int do_mig(struct parse *p, char **argv, int argc)
{
    struct nvmlDevice_st *d;
    uint64_t k;
    if (parse_device(p, argv[1], &d))
        return -1;
    if (d->mig_mode != NVML_DEVICE_MIG_ENABLE)
        return parse_fail(p, "device %s is not in MIG mode (a 'mig_mode %s 1' line comes first)",
                          argv[1], argv[1]);
    if (parse_u64(argv[2], &k) || k >= FAKE_MAX_MIG)
        return parse_fail(p, "bad MIG device index '%s' (0 to %d)", argv[2], FAKE_MAX_MIG - 1);
    struct nvmlDevice_st *m = &migs[d - devices][k];
    if (m->declared)
        return parse_fail(p, "MIG device %s of device %s is declared twice", argv[2], argv[1]);
    snprintf(m->name, sizeof(m->name), "%s", DEFAULT_MIG_NAME);
    m->memory_total_bytes = DEFAULT_MIG_BYTES;
    m->gpu_instance_id = (unsigned)k;
    m->parent = d;
    for (int a = 3; a < argc; a += 2) {
        if (a + 1 >= argc)
            return parse_fail(p, "MIG attribute '%s' has no value", argv[a]);
        if (mig_attribute(p, m, argv[a], argv[a + 1]) != 0)
            return -1;
    }
    if (!m->uuid[0])
        return parse_fail(p, "MIG device %s of device %s has no uuid", argv[2], argv[1]);
    m->declared = 1;
    return 0;
}

static int do_init_error(struct parse *p, char **argv, int argc)
{
    (void)argc;
    return parse_error_code(p, argv[1], &fake.init_error);
}

static int do_missing(struct parse *p, char **argv, int argc)
{
    (void)argc;
    return parse_fail(p,
                      "'missing %s': dlsym finds every exported symbol; load "
                      "libnvidia-ml-fake-old.so for an old driver instead",
                      argv[1]);
}

static const struct {
    const char *name;
    int min_args, max_args; /* words after the directive */
    directive_fn *fn;
} directives[] = {
    {"driver", 1, 1, do_driver},
    {"sample_period", 1, 1, do_sample_period},
    {"device", 1, 7, do_device},
    {"at", 4, 4, do_at},
    {"lost", 2, 2, do_lost_or_hang},
    {"hang", 2, 2, do_lost_or_hang},
    {"unsupported", 2, 2, do_unsupported},
    {"error", 3, 4, do_error},
    {"slow", 3, 3, do_slow},
    {"processes_file", 2, 2, do_processes_file},
    {"nvlinks", 2, 2, do_nvlinks},
    {"nvlink_down", 4, 4, do_nvlink_down},
    {"mig_mode", 2, 2, do_mig_mode},
    {"mig", 4, 14, do_mig},
    {"init_error", 1, 1, do_init_error},
    {"missing", 1, 1, do_missing},
};

/* Split a line into words in place: blanks separate, "..." quotes, '#'
 * starting a word ends the line. */
static int split_words(struct parse *p, char *s, char **argv, int *argc)
{
    *argc = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        if (!*s || *s == '#')
            return 0;
        if (*argc == FAKE_MAX_TOKENS)
            return parse_fail(p, "too many words (at most %d)", FAKE_MAX_TOKENS);
        char *word = s;
        if (*s == '"') {
            word = ++s;
            char *close = strchr(s, '"');
            if (!close)
                return parse_fail(p, "unterminated quote");
            *close = '\0';
            s = close + 1;
            if (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
                return parse_fail(p, "no blank after a closing quote");
        } else {
            while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
                s++;
            if (*s)
                *s++ = '\0';
        }
        argv[(*argc)++] = word;
    }
}

static int parse_line(struct parse *p, char *line)
{
    char *argv[FAKE_MAX_TOKENS];
    int argc;
    if (split_words(p, line, argv, &argc) != 0)
        return -1;
    if (argc == 0)
        return 0;
    for (size_t i = 0; i < ARRAY_SIZE(directives); i++) {
        if (strcmp(directives[i].name, argv[0]) != 0)
            continue;
        if (argc - 1 < directives[i].min_args || argc - 1 > directives[i].max_args)
            return parse_fail(p, "'%s' takes %d to %d words, not %d", argv[0],
                              directives[i].min_args, directives[i].max_args, argc - 1);
        return directives[i].fn(p, argv, argc);
    }
    return parse_fail(p, "unknown directive '%s'", argv[0]);
}

/* Read the scenario into fake and devices; on failure print one line and
 * leave the caller to release what was read. */
static int scenario_load(const char *path)
{
    char err[512] = "";
    struct parse p = {.err = err, .err_cap = sizeof(err)};
    if (!path) {
        fprintf(stderr, "fake_nvml: STROBE_FAKE_NVML is not set (the scenario file)\n");
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fake_nvml: %s:0: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    unsigned lineno = 0;
    int rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (parse_line(&p, line) != 0) {
            fprintf(stderr, "fake_nvml: %s:%u: %s\n", path, lineno, err);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "fake_nvml: %s:%u: read error: %s\n", path, lineno + 1, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* --- the call counts --- */

static void calls_write(void)
{
    if (!fake.calls_path)
        return;
    size_t n = strlen(fake.calls_path) + 8;
    char *tmp = malloc(n);
    if (!tmp)
        return;
    snprintf(tmp, n, "%s.tmp", fake.calls_path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        for (unsigned i = 0; i < fake.device_count; i++) {
            for (int fn = 0; fn < FN_COUNT; fn++)
                if (devices[i].calls[fn])
                    fprintf(f, "%s %u %" PRIu64 "\n", fn_names[fn], i, devices[i].calls[fn]);
            for (unsigned k = 0; k < FAKE_MAX_MIG; k++)
                for (int fn = 0; fn < FN_COUNT; fn++)
                    if (migs[i][k].calls[fn])
                        fprintf(f, "%s %u:%u %" PRIu64 "\n", fn_names[fn], i, k,
                                migs[i][k].calls[fn]);
        }
        if (fclose(f) == 0)
            rename(tmp, fake.calls_path);
        else
            remove(tmp);
    }
    free(tmp);
}

/* A process that exits without the last nvmlShutdown still leaves its counts. */
__attribute__((destructor)) static void fake_fini(void)
{
    pthread_mutex_lock(&fake_lock);
    if (fake.refs > 0) {
        calls_write();
        devices_release();
        fake.refs = 0;
    }
    pthread_mutex_unlock(&fake_lock);
}

/* --- the API --- */

/* A GPU's handle, or a declared MIG device's whose GPU is in MIG mode. */
static int handle_ok(nvmlDevice_t d)
{
    uintptr_t p = (uintptr_t)d, base = (uintptr_t)devices, mig = (uintptr_t)migs;
    if (p >= base && p < base + fake.device_count * sizeof(devices[0]))
        return (p - base) % sizeof(devices[0]) == 0;
    if (p < mig || p >= mig + sizeof(migs) || (p - mig) % sizeof(devices[0]) != 0)
        return 0;
    return d->declared && d->parent->mig_mode == NVML_DEVICE_MIG_ENABLE;
}

/*
 * What NVML answers by the kind of handle, before any value: a MIG device
 * handle takes name, UUID, memory, running processes (none: the scenario
 * gives MIG devices none) and the instance ids, is not a GPU for the MIG
 * calls, and supports nothing else; a GPU's handle is not a MIG device's; a
 * GPU in MIG mode has no utilization rates or per-process utilization, and
 * one out of it no MIG devices. Which code NVML gives where its header is
 * silent is our choice (README.md).
 */
static nvmlReturn_t mig_answer(const struct nvmlDevice_st *d, enum fn fn)
{
    int mig_call = fn == FN_nvmlDeviceGetMigMode || fn == FN_nvmlDeviceGetMaxMigDeviceCount ||
                   fn == FN_nvmlDeviceGetMigDeviceHandleByIndex;
    int id_call = fn == FN_nvmlDeviceGetGpuInstanceId || fn == FN_nvmlDeviceGetComputeInstanceId;
    if (d->parent) {
        if (id_call || fn == FN_nvmlDeviceGetName || fn == FN_nvmlDeviceGetUUID ||
            fn == FN_nvmlDeviceGetMemoryInfo || fn == FN_nvmlDeviceGetComputeRunningProcesses_v3)
            return NVML_SUCCESS;
        return mig_call ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
    }
    if (id_call)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d->mig_mode == NVML_DEVICE_MIG_ENABLE)
        return fn == FN_nvmlDeviceGetUtilizationRates || fn == FN_nvmlDeviceGetProcessUtilization
                   ? NVML_ERROR_NOT_SUPPORTED
                   : NVML_SUCCESS;
    return fn == FN_nvmlDeviceGetMigDeviceHandleByIndex ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

/*
 * What every device function does first: takes the lock (held on return,
 * whatever it returns: the caller unlocks), checks init and the handle,
 * counts the call, sleeps if scripted slow (unlocked, so other threads go on),
 * then answers lost or a scripted error. *now_ns is the time of the answer.
 */
static nvmlReturn_t device_enter(nvmlDevice_t d, enum fn fn, int64_t *now_ns)
{
    pthread_mutex_lock(&fake_lock);
    if (fake.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!handle_ok(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    d->calls[fn]++;
    if (d->slow_ns[fn] > 0) {
        unsigned generation = fake.generation;
        int64_t ns = d->slow_ns[fn];
        pthread_mutex_unlock(&fake_lock);
        sleep_ns(ns);
        pthread_mutex_lock(&fake_lock);
        if (fake.refs == 0 || fake.generation != generation || !handle_ok(d))
            return NVML_ERROR_UNINITIALIZED;
    }
    *now_ns = elapsed_ns();
    if (*now_ns >= (d->parent ? d->parent : d)->hang_ns) {
        pthread_mutex_unlock(&fake_lock);
        for (;;) /* the caller has to give up on this call */
            sleep_ns(3600 * NS_PER_S);
    }
    if (*now_ns >= (d->parent ? d->parent : d)->lost_ns)
        return NVML_ERROR_GPU_IS_LOST;
    if (d->fail[fn] != NVML_SUCCESS && (!d->fail_calls[fn] || d->calls[fn] <= d->fail_calls[fn]))
        return d->fail[fn];
    return mig_answer(d, fn);
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    if (fake.refs > 0) {
        fake.refs++;
        goto out;
    }
    devices_release();
    snprintf(fake.driver, sizeof(fake.driver), "%s", DEFAULT_DRIVER);
    fake.sample_period_ns = NS_PER_S / 6;
    fake.init_error = NVML_SUCCESS;
    if (scenario_load(getenv("STROBE_FAKE_NVML")) != 0) {
        rc = NVML_ERROR_UNKNOWN;
        goto fail;
    }
    if (fake.init_error != NVML_SUCCESS) {
        rc = fake.init_error;
        goto fail;
    }
    const char *calls = getenv("STROBE_FAKE_NVML_CALLS");
    if (calls && *calls && !(fake.calls_path = strdup(calls))) {
        rc = FAKE_ERROR_MEMORY;
        goto fail;
    }
    fake.start_real_us = (uint64_t)(clock_ns(CLOCK_REALTIME) / 1000);
    fake.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    fake.refs = 1;
    goto out;
fail:
    devices_release();
out:
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    if (fake.refs == 0) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (--fake.refs == 0) {
        calls_write();
        devices_release();
        fake.generation++;
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    for (size_t i = 0; i < ARRAY_SIZE(errors); i++)
        if (errors[i].code == result)
            return errors[i].text;
    return "Unknown Error";
}

/* Copy a string out NVML's way: it must fit with its NUL. */
static nvmlReturn_t copy_out(char *buf, unsigned int length, const char *s)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(s);
    if (length <= n)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    pthread_mutex_lock(&fake_lock);
    nvmlReturn_t rc = fake.refs ? copy_out(version, length, fake.driver) : NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    if (fake.refs == 0)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (!deviceCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *deviceCount = fake.device_count;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    pthread_mutex_lock(&fake_lock);
    int bad = fake.refs && (index >= fake.device_count || !device);
    pthread_mutex_unlock(&fake_lock);
    if (bad)
        return NVML_ERROR_INVALID_ARGUMENT;
    int64_t now;
    nvmlDevice_t d = &devices[index < FAKE_MAX_DEVICES ? index : 0];
    nvmlReturn_t rc = device_enter(d, FN_nvmlDeviceGetHandleByIndex_v2, &now);
    if (rc == NVML_SUCCESS)
        *device = d;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetName, &now);
    if (rc == NVML_SUCCESS)
        rc = copy_out(name, length, device->name);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetUUID, &now);
    if (rc == NVML_SUCCESS)
        rc = copy_out(uuid, length, device->uuid);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetMemoryInfo, &now);
    if (rc == NVML_SUCCESS && !memory)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        uint64_t used = series_at(&device->field[F_MEM_USED], now);
        memory->total = device->memory_total_bytes;
        memory->used = used;
        memory->free = used < memory->total ? memory->total - used : 0;
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t *utilization)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetUtilizationRates, &now);
    if (rc == NVML_SUCCESS && !utilization)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        utilization->gpu = (unsigned int)series_at(&device->field[F_UTIL_GPU], now);
        utilization->memory = (unsigned int)series_at(&device->field[F_UTIL_MEMORY], now);
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

#ifndef FAKE_NVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                              unsigned long long lastSeenTimeStamp,
                                              nvmlValueType_t *sampleValType,
                                              unsigned int *sampleCount, nvmlSample_t *samples)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetSamples, &now);
    const struct series *s = NULL;
    if (rc == NVML_SUCCESS) {
        if (type == NVML_GPU_UTILIZATION_SAMPLES)
            s = &device->field[F_UTIL_GPU];
        else if (type == NVML_MEMORY_UTILIZATION_SAMPLES)
            s = &device->field[F_UTIL_MEMORY];
        else if (type == NVML_TOTAL_POWER_SAMPLES)
            s = &device->field[F_POWER];
        if (!s || !sampleValType || !sampleCount)
            rc = NVML_ERROR_INVALID_ARGUMENT;
        else if (device->mig_mode == NVML_DEVICE_MIG_ENABLE && type != NVML_TOTAL_POWER_SAMPLES)
            rc = NVML_ERROR_NOT_SUPPORTED; /* no utilization under MIG */
    }
    if (rc != NVML_SUCCESS)
        goto out;

    /* the ring holds samples first..last (sample k taken at k periods) */
    int64_t period = fake.sample_period_ns;
    int64_t last = now / period;
    int64_t first = last >= FAKE_SAMPLE_RING ? last - FAKE_SAMPLE_RING + 1 : 1;
    while (first <= last && stamp_us(first * period) <= lastSeenTimeStamp)
        first++;
    unsigned int n = first <= last ? (unsigned int)(last - first + 1) : 0;
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (n == 0) {
        *sampleCount = 0;
        rc = NVML_ERROR_NOT_FOUND;
    } else if (!samples) {
        *sampleCount = n;
    } else if (*sampleCount == 0) {
        *sampleCount = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        if (n > *sampleCount)
            n = *sampleCount;
        for (unsigned int i = 0; i < n; i++) {
            int64_t at = (first + i) * period;
            samples[i].timeStamp = stamp_us(at);
            memset(&samples[i].sampleValue, 0, sizeof(samples[i].sampleValue));
            samples[i].sampleValue.uiVal = (unsigned int)series_at(s, at);
        }
        *sampleCount = n;
    }
out:
    pthread_mutex_unlock(&fake_lock);
    return rc;
}
#endif

/* A one-value getter: the field's step function at the time of the call. */
#define FAKE_GETTER(fn_name, field_id, type)                                                       \
    FAKE_EXPORT nvmlReturn_t fn_name(nvmlDevice_t device, type *out)                               \
    {                                                                                              \
        int64_t now;                                                                               \
        nvmlReturn_t rc = device_enter(device, FN_##fn_name, &now);                                \
        if (rc == NVML_SUCCESS && !out)                                                            \
            rc = NVML_ERROR_INVALID_ARGUMENT;                                                      \
        if (rc == NVML_SUCCESS)                                                                    \
            *out = (type)series_at(&device->field[field_id], now);                                 \
        pthread_mutex_unlock(&fake_lock);                                                          \
        return rc;                                                                                 \
    }

FAKE_GETTER(nvmlDeviceGetPowerUsage, F_POWER, unsigned int)
FAKE_GETTER(nvmlDeviceGetCurrentClocksThrottleReasons, F_THROTTLE, unsigned long long)

/* Per field its own result, as NVML does: the NVLink data counters on the
 * links the scenario gives, NOT_SUPPORTED for anything else. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                  nvmlFieldValue_t *values)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetFieldValues, &now);
    if (rc == NVML_SUCCESS && (valuesCount < 0 || (valuesCount > 0 && !values)))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; rc == NVML_SUCCESS && i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        int tx = v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        int rx = v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        v->timestamp = (long long)stamp_us(now);
        v->latencyUsec = 0;
        if ((!tx && !rx) || v->scopeId >= device->nvlinks) {
            v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        if (v->scopeId == device->down_link && now >= device->down_from_ns &&
            now < device->down_to_ns) {
            v->nvmlReturn = NVML_ERROR_UNKNOWN;
            continue;
        }
        v->nvmlReturn = NVML_SUCCESS;
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v->value.ullVal = v->scopeId == 0
                              ? series_integral(&device->field[tx ? F_NVLINK_TX : F_NVLINK_RX], now)
                              : 0;
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

#ifndef FAKE_NVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                             unsigned long long *energy)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetTotalEnergyConsumption, &now);
    if (rc == NVML_SUCCESS && !energy)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        const struct series *e = &device->field[F_ENERGY];
        *energy = e->n ? series_at(e, now) : series_integral(&device->field[F_POWER], now);
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                  nvmlTemperatureSensors_t sensorType,
                                                  unsigned int *temp)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetTemperature, &now);
    if (rc == NVML_SUCCESS && (!temp || sensorType != NVML_TEMPERATURE_GPU))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *temp = (unsigned int)series_at(&device->field[F_TEMP], now);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int *clock)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetClockInfo, &now);
    int f = type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS ? F_CLOCK_SM
            : type == NVML_CLOCK_MEM                             ? F_CLOCK_MEM
                                                                 : -1;
    if (rc == NVML_SUCCESS && (!clock || f < 0))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *clock = (unsigned int)series_at(&device->field[f], now);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                     nvmlPcieUtilCounter_t counter,
                                                     unsigned int *value)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetPcieThroughput, &now);
    int f = counter == NVML_PCIE_UTIL_TX_BYTES   ? F_PCIE_TX
            : counter == NVML_PCIE_UTIL_RX_BYTES ? F_PCIE_RX
                                                 : -1;
    if (rc == NVML_SUCCESS && (!value || f < 0))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *value = (unsigned int)series_at(&device->field[f], now);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                     nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     unsigned long long *eccCounts)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetTotalEccErrors, &now);
    int f = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED     ? F_ECC_CORRECTED
            : errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED ? F_ECC_UNCORRECTED
                                                              : -1;
    if (rc == NVML_SUCCESS &&
        (!eccCounts || f < 0 ||
         (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC)))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *eccCounts = series_at(&device->field[f], now);
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

struct process {
    unsigned int pid;
    unsigned long long used_bytes;
    unsigned int sm_util, mem_util;
};

static int parse_uint(char **s, unsigned long long max, unsigned long long *out)
{
    while (**s == ' ' || **s == '\t')
        (*s)++;
    if (**s < '0' || **s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(*s, &end, 10);
    if (errno || v > max || (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r'))
        return -1;
    *s = end;
    *out = v;
    return 0;
}

/* One line of a processes file: "pid used_bytes|- [sm_util [mem_util]]". */
static int process_parse(char *s, struct process *p)
{
    unsigned long long v;
    if (parse_uint(&s, UINT_MAX, &v) != 0)
        return -1;
    p->pid = (unsigned int)v;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '-' && (!s[1] || s[1] == ' ' || s[1] == '\t' || s[1] == '\n' || s[1] == '\r')) {
        p->used_bytes = NVML_VALUE_NOT_AVAILABLE;
        s++;
    } else if (parse_uint(&s, ULLONG_MAX, &p->used_bytes) != 0) {
        return -1;
    }
    p->sm_util = p->mem_util = 0;
    char *rest = s;
    if (parse_uint(&rest, UINT_MAX, &v) == 0) {
        p->sm_util = (unsigned int)v;
        s = rest;
        if (parse_uint(&rest, UINT_MAX, &v) == 0) {
            p->mem_util = (unsigned int)v;
            s = rest;
        }
    }
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    return *s && *s != '#' ? -1 : 0;
}

/* The device's processes now: a malloc'ed array (the caller frees it) of
 * *n; *n = 0 when there is no file. Returns -1 only when out of memory. */
static int processes_read(const struct nvmlDevice_st *d, struct process **out, unsigned int *n)
{
    *out = NULL;
    *n = 0;
    if (!d->processes_path)
        return 0;
    FILE *f = fopen(d->processes_path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0, have = 0;
    struct process *ps = NULL;
    int rc = 0;
    while (*n < FAKE_MAX_PROCESSES && getline(&line, &cap, f) >= 0) {
        struct process p;
        if (process_parse(line, &p) != 0)
            continue;
        if (*n == have) {
            size_t want = have ? 2 * have : 16;
            struct process *more = realloc(ps, want * sizeof(*ps));
            if (!more) {
                rc = -1;
                break;
            }
            ps = more;
            have = want;
        }
        ps[(*n)++] = p;
    }
    free(line);
    fclose(f);
    if (rc != 0) {
        free(ps);
        ps = NULL;
        *n = 0;
    }
    *out = ps;
    return rc;
}

#ifndef FAKE_NVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    int64_t now;
    struct process *ps = NULL;
    unsigned int n = 0;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetComputeRunningProcesses_v3, &now);
    if (rc == NVML_SUCCESS && !infoCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && processes_read(device, &ps, &n) != 0)
        rc = FAKE_ERROR_MEMORY;
    if (rc != NVML_SUCCESS)
        goto out;
    if (*infoCount < n) {
        *infoCount = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (n > 0 && !infos) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        for (unsigned int i = 0; i < n; i++)
            infos[i] = (nvmlProcessInfo_t){.pid = ps[i].pid,
                                           .usedGpuMemory = ps[i].used_bytes,
                                           .gpuInstanceId = UINT_MAX,
                                           .computeInstanceId = UINT_MAX};
        *infoCount = n;
    }
out:
    pthread_mutex_unlock(&fake_lock);
    free(ps);
    return rc;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
    unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
    int64_t now;
    struct process *ps = NULL;
    unsigned int n = 0;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetProcessUtilization, &now);
    if (rc == NVML_SUCCESS && !processSamplesCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && processes_read(device, &ps, &n) != 0)
        rc = FAKE_ERROR_MEMORY;
    if (rc != NVML_SUCCESS)
        goto out;
    uint64_t ts = stamp_us(now);
    if (n == 0 || ts <= lastSeenTimeStamp) {
        *processSamplesCount = 0;
        rc = NVML_ERROR_NOT_FOUND;
    } else if (!utilization || *processSamplesCount < n) {
        *processSamplesCount = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        for (unsigned int i = 0; i < n; i++)
            utilization[i] = (nvmlProcessUtilizationSample_t){.pid = ps[i].pid,
                                                              .timeStamp = ts,
                                                              .smUtil = ps[i].sm_util,
                                                              .memUtil = ps[i].mem_util};
        *processSamplesCount = n;
    }
out:
    pthread_mutex_unlock(&fake_lock);
    free(ps);
    return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetMigMode, &now);
    if (rc == NVML_SUCCESS && (!currentMode || !pendingMode))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *currentMode = *pendingMode = device->mig_mode;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

/* NVML's maximum, not how many exist: 0 out of MIG mode (as nvml.h says). */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetMaxMigDeviceCount, &now);
    if (rc == NVML_SUCCESS && !count)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *count = device->mig_mode == NVML_DEVICE_MIG_ENABLE ? FAKE_MAX_MIG : 0;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

/* NOT_FOUND for an index below the maximum that no 'mig' line declared. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t *migDevice)
{
    int64_t now;
    nvmlReturn_t rc = device_enter(device, FN_nvmlDeviceGetMigDeviceHandleByIndex, &now);
    if (rc == NVML_SUCCESS && (!migDevice || index >= FAKE_MAX_MIG))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && !migs[device - devices][index].declared)
        rc = NVML_ERROR_NOT_FOUND;
    if (rc == NVML_SUCCESS)
        *migDevice = &migs[device - devices][index];
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

/* A MIG device's instance ids, as its 'mig' line gave them. */
#define FAKE_ID_GETTER(fn_name, member)                                                            \
    FAKE_EXPORT nvmlReturn_t fn_name(nvmlDevice_t device, unsigned int *id)                        \
    {                                                                                              \
        int64_t now;                                                                               \
        nvmlReturn_t rc = device_enter(device, FN_##fn_name, &now);                                \
        if (rc == NVML_SUCCESS && !id)                                                             \
            rc = NVML_ERROR_INVALID_ARGUMENT;                                                      \
        if (rc == NVML_SUCCESS)                                                                    \
            *id = device->member;                                                                  \
        pthread_mutex_unlock(&fake_lock);                                                          \
        return rc;                                                                                 \
    }

FAKE_ID_GETTER(nvmlDeviceGetGpuInstanceId, gpu_instance_id)
FAKE_ID_GETTER(nvmlDeviceGetComputeInstanceId, compute_instance_id)
