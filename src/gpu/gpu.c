#include "gpu/gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strlist.h"
#include "sample/proctree.h"
#include "sample/series.h"

/* ---- the metrics ---------------------------------------------------------- */

static const struct {
    enum metric_id metric;
    const char *sub; /* the second label, named by what gpu_value.sub holds; NULL: none */
} gpu_metrics[GM_COUNT] = {
    [GM_UTIL] = {METRIC_GPU_UTIL, NULL},
    [GM_MEM_UTIL] = {METRIC_GPU_MEM_UTIL, NULL},
    [GM_MEM_USED] = {METRIC_GPU_MEM_USED_BYTES, NULL},
    [GM_MEM_TOTAL] = {METRIC_GPU_MEM_TOTAL_BYTES, NULL},
    [GM_POWER] = {METRIC_GPU_POWER_W, NULL},
    [GM_ENERGY] = {METRIC_GPU_ENERGY_J, NULL},
    [GM_TEMP] = {METRIC_GPU_TEMP_C, NULL},
    [GM_SM_CLOCK] = {METRIC_GPU_SM_CLOCK_MHZ, NULL},
    [GM_MEM_CLOCK] = {METRIC_GPU_MEM_CLOCK_MHZ, NULL},
    [GM_THROTTLE] = {METRIC_GPU_THROTTLE_REASONS, NULL},
    [GM_PCIE_RX] = {METRIC_GPU_PCIE_RX_BYTES_PER_S, NULL},
    [GM_PCIE_TX] = {METRIC_GPU_PCIE_TX_BYTES_PER_S, NULL},
    [GM_ECC_CORRECTED] = {METRIC_GPU_ECC_CORRECTED, NULL},
    [GM_ECC_UNCORRECTED] = {METRIC_GPU_ECC_UNCORRECTED, NULL},
    [GM_NVLINK_RX] = {METRIC_GPU_NVLINK_RX_BYTES_PER_S, NULL},
    [GM_NVLINK_TX] = {METRIC_GPU_NVLINK_TX_BYTES_PER_S, NULL},
    [GM_PROC_MEM] = {METRIC_GPU_PROC_MEM_BYTES, "pid"},
    [GM_PROC_SM] = {METRIC_GPU_PROC_SM_UTIL, "pid"},
    [GM_PROC_MEMU] = {METRIC_GPU_PROC_MEM_UTIL, "pid"},
    [GM_MIG_MEM_USED] = {METRIC_GPU_MIG_MEM_USED_BYTES, "mig"},
};

static int per_process(int metric)
{
    return gpu_metrics[metric].sub && strcmp(gpu_metrics[metric].sub, "pid") == 0;
}

struct gpu_series_map {
    uint16_t metric, device;
    int32_t sub;
    uint32_t series;
};

/* ---- loading NVML --------------------------------------------------------- */

static int load_lib(struct nvml_lib *lib, char *tried, size_t cap)
{
    const char *env = getenv("STROBE_NVML_LIB");
    const char *paths[] = {env && *env ? env : NULL, "libnvidia-ml.so.1", "libnvidia-ml.so"};
    tried[0] = 0;
    for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
        if (!paths[i])
            continue;
        lib->dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (lib->dl)
            break;
        snprintf(tried + strlen(tried), cap - strlen(tried), "%s%s", tried[0] ? ", " : "",
                 paths[i]);
        if (env && *env) /* an explicit path is the only one tried */
            break;
    }
    if (!lib->dl)
        return -ENOENT;
        /* POSIX lets dlsym's void * become a function pointer through a cast
         * of its address; every name that is missing stays NULL */
#define X(ret, name, args) *(void **)&lib->name = dlsym(lib->dl, #name);
    NVML_FUNCTIONS(X)
#undef X
    if (!lib->nvmlInit_v2 || !lib->nvmlDeviceGetCount_v2 || !lib->nvmlDeviceGetHandleByIndex_v2)
        return -ENOSYS;
    return 0;
}

static const char *nvml_error(const struct gpu_collector *g, nvmlReturn_t rc)
{
    const char *s = g->lib.nvmlErrorString ? g->lib.nvmlErrorString(rc) : NULL;
    return s ? s : "unknown NVML error";
}

static void read_device_facts(struct gpu_collector *g, struct gpu_device *d)
{
    if (g->lib.nvmlDeviceGetName)
        g->lib.nvmlDeviceGetName(d->handle, d->name, sizeof(d->name));
    if (g->lib.nvmlDeviceGetUUID)
        g->lib.nvmlDeviceGetUUID(d->handle, d->uuid, sizeof(d->uuid));
    nvmlMemory_t m;
    if (g->lib.nvmlDeviceGetMemoryInfo &&
        g->lib.nvmlDeviceGetMemoryInfo(d->handle, &m) == NVML_SUCCESS)
        d->mem_total = m.total;
    d->name[sizeof(d->name) - 1] = d->uuid[sizeof(d->uuid) - 1] = 0;
    d->use_samples = g->lib.nvmlDeviceGetSamples != NULL;
}

/* An instance id of a MIG device, -1 when the driver will not say. */
static long long instance_id(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int *), nvmlDevice_t h)
{
    unsigned id;
    return fn && fn(h, &id) == NVML_SUCCESS ? (long long)id : -1;
}

/* A MIG device's facts, through its own handle: the memory is the slice's. */
static void read_mig_facts(struct gpu_collector *g, struct gpu_mig *m)
{
    if (g->lib.nvmlDeviceGetName)
        g->lib.nvmlDeviceGetName(m->handle, m->name, sizeof(m->name));
    if (g->lib.nvmlDeviceGetUUID)
        g->lib.nvmlDeviceGetUUID(m->handle, m->uuid, sizeof(m->uuid));
    nvmlMemory_t mem;
    if (g->lib.nvmlDeviceGetMemoryInfo &&
        g->lib.nvmlDeviceGetMemoryInfo(m->handle, &mem) == NVML_SUCCESS)
        m->mem_total = mem.total;
    m->name[sizeof(m->name) - 1] = m->uuid[sizeof(m->uuid) - 1] = 0;
    m->gpu_instance_id = instance_id(g->lib.nvmlDeviceGetGpuInstanceId, m->handle);
    m->compute_instance_id = instance_id(g->lib.nvmlDeviceGetComputeInstanceId, m->handle);
    m->cuda_index = -1;
}

static void read_mig_mode(struct gpu_collector *g, struct gpu_device *d)
{
    unsigned current, pending;
    d->mig_mode = -1; /* a driver or GPU without MIG: unknown, not off */
    if (g->lib.nvmlDeviceGetMigMode &&
        g->lib.nvmlDeviceGetMigMode(d->handle, &current, &pending) == NVML_SUCCESS)
        d->mig_mode = current == NVML_DEVICE_MIG_ENABLE;
}

/* The MIG devices of a GPU in MIG mode. Their indices can have gaps (an
 * instance destroyed since), so every index below NVML's maximum is asked and
 * NOT_FOUND skipped. They are listed once: instances made or destroyed during
 * the run are not seen (docs/gpu.md). */
static void list_mig_devices(struct gpu_collector *g, struct gpu_device *d)
{
    unsigned max = 0;
    if (d->mig_mode != 1 || !g->lib.nvmlDeviceGetMaxMigDeviceCount ||
        !g->lib.nvmlDeviceGetMigDeviceHandleByIndex ||
        g->lib.nvmlDeviceGetMaxMigDeviceCount(d->handle, &max) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < max && d->nmig < GPU_MIG_MAX; i++) {
        struct gpu_mig *m = &d->mig[d->nmig];
        nvmlReturn_t rc = g->lib.nvmlDeviceGetMigDeviceHandleByIndex(d->handle, i, &m->handle);
        if (rc == NVML_ERROR_GPU_IS_LOST) {
            atomic_store(&d->lost, 1);
            return;
        }
        if (rc != NVML_SUCCESS)
            continue;
        m->index = i;
        read_mig_facts(g, m);
        d->nmig++;
    }
}

/* The cuda_index slot of the device a $CUDA_VISIBLE_DEVICES entry names:
 * an NVML index, a "GPU-" UUID prefix for a GPU, a "MIG-" one for a MIG
 * device; NULL when it names none. */
static int *visible_slot(struct gpu_collector *g, const char *tok)
{
    char *end;
    unsigned long idx = strtoul(tok, &end, 10);
    int is_index = end != tok && *end == 0;
    size_t n = strlen(tok);
    for (unsigned i = 0; i < g->ndev; i++) {
        struct gpu_device *d = &g->dev[i];
        if (is_index && d->index == idx)
            return &d->cuda_index;
        if (strncmp(tok, "GPU-", 4) == 0 && n > 4 && strncmp(d->uuid, tok, n) == 0)
            return &d->cuda_index;
        for (unsigned k = 0; k < d->nmig && strncmp(tok, "MIG-", 4) == 0 && n > 4; k++)
            if (strncmp(d->mig[k].uuid, tok, n) == 0)
                return &d->mig[k].cuda_index;
    }
    return NULL;
}

struct visible_walk {
    struct gpu_collector *g;
    struct strbuf tok; /* the item, NUL-terminated for visible_slot */
    int next;          /* the CUDA number the next new device gets */
};

/* One entry of $CUDA_VISIBLE_DEVICES; nonzero ends the list. Empty entries
 * (",,") are skipped, as strtok(3) would, and leading blanks too. */
static int number_visible(const char *item, size_t len, void *arg)
{
    struct visible_walk *w = arg;
    if (!len)
        return 0;
    strbuf_reset(&w->tok);
    strbuf_add(&w->tok, item, len); /* grown to fit the whole list: cannot fail */
    const char *tok = w->tok.buf;
    while (*tok == ' ')
        tok++;
    int *slot = visible_slot(w->g, tok);
    if (!slot)
        return 1;
    if (*slot < 0)
        *slot = w->next++;
    return 0;
}

/* Which CUDA device number the job will see each GPU and MIG device as.
 * $CUDA_VISIBLE_DEVICES lists devices by index or by UUID (a prefix is
 * enough for CUDA; MIG devices by their "MIG-" UUIDs), in the order the job
 * numbers them; unset, every GPU is visible as its own index and no MIG
 * device is numbered (which one CUDA picks is not NVML's to say). Indices
 * are NVML's here, which are CUDA's only with CUDA_DEVICE_ORDER=PCI_BUS_ID
 * (docs/gpu.md); UUIDs are exact. An entry CUDA cannot parse ends the list,
 * as it does for CUDA. */
static void map_visible(struct gpu_collector *g)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    for (unsigned i = 0; i < g->ndev; i++)
        g->dev[i].cuda_index = env ? -1 : (int)g->dev[i].index;
    if (!env)
        return;
    g->visible = strdup(env);
    struct visible_walk w = {.g = g, .next = 0};
    strbuf_init(&w.tok);
    if (strbuf_grow(&w.tok, strlen(env)) < 0)
        return; /* no memory: every device unnumbered rather than a guess */
    strlist_each(env, number_visible, &w);
    strbuf_release(&w.tok);
}

/* Whether this machine looks as if it has NVIDIA GPUs (the driver's device
 * node or its /proc directory), or the library was named explicitly. */
static int nvidia_expected(void)
{
    const char *env = getenv("STROBE_NVML_LIB");
    return (env && *env) || access("/dev/nvidiactl", F_OK) == 0 ||
           access("/proc/driver/nvidia", F_OK) == 0;
}

int gpu_collector_open(struct gpu_collector *g, int64_t interval_ns)
{
    memset(g, 0, sizeof(*g));
    g->interval_ns = interval_ns;
    char tried[512];
    int rc = load_lib(&g->lib, tried, sizeof(tried));
    if (rc == -ENOENT) {
        /* worth saying where a GPU is to be expected; a machine without
         * NVIDIA's devices hears nothing about it on every run */
        if (nvidia_expected())
            log_note("no NVIDIA driver library (tried %s): no GPU metrics", tried);
        return rc;
    }
    if (rc < 0) {
        log_note("the NVIDIA driver library lacks nvmlInit_v2: no GPU metrics");
        dlclose(g->lib.dl);
        return rc;
    }
    nvmlReturn_t nrc = g->lib.nvmlInit_v2();
    unsigned count = 0;
    if (nrc == NVML_SUCCESS)
        nrc = g->lib.nvmlDeviceGetCount_v2(&count);
    if (nrc != NVML_SUCCESS || count == 0) {
        if (nrc != NVML_SUCCESS)
            log_note("NVML did not start (%s): no GPU metrics", nvml_error(g, nrc));
        else
            log_note("NVML sees no GPU: no GPU metrics");
        if (nrc == NVML_SUCCESS && g->lib.nvmlShutdown)
            g->lib.nvmlShutdown();
        dlclose(g->lib.dl);
        return -ENODEV;
    }
    if (g->lib.nvmlSystemGetDriverVersion)
        g->lib.nvmlSystemGetDriverVersion(g->driver, sizeof(g->driver));
    g->driver[sizeof(g->driver) - 1] = 0;
    for (unsigned i = 0; i < count && g->ndev < GPU_MAX_DEVICES; i++) {
        struct gpu_device *d = &g->dev[g->ndev];
        nvmlReturn_t hrc = g->lib.nvmlDeviceGetHandleByIndex_v2(i, &d->handle);
        if (hrc == NVML_ERROR_GPU_IS_LOST) /* said as for a GPU lost mid-run, not left out */
            log_warn("GPU %u is lost (NVML: %s): it is not sampled, the run goes on", i,
                     nvml_error(g, hrc));
        if (hrc != NVML_SUCCESS) /* another job's GPU (no permission) is no news */
            continue;
        d->index = i;
        read_device_facts(g, d);
        read_mig_mode(g, d);
        list_mig_devices(g, d);
        g->ndev++;
    }
    map_visible(g);
    g->queue = malloc(GPU_QUEUE_MAX * sizeof(*g->queue));
    g->spare = malloc(GPU_QUEUE_MAX * sizeof(*g->spare));
    if (!g->queue || !g->spare || stop_gate_init(&g->gate) < 0) {
        free(g->queue);
        free(g->spare);
        if (g->lib.nvmlShutdown)
            g->lib.nvmlShutdown();
        dlclose(g->lib.dl);
        free(g->visible);
        return -ENOMEM;
    }
    pthread_mutex_init(&g->lock, NULL);
    g->on = 1;
    return 0;
}

/* ---- the GPU thread ------------------------------------------------------- */

/* Values of one device's sample, queued at once (one lock a device). Room for
 * the most one device can give: two full reads of buffered utilization
 * samples, three values per process and the device metrics. A round of all
 * devices would not fit: eight GPUs' buffered samples after a long
 * --gpu-interval are 8 x 256 values. */
struct round {
    struct gpu_value v[2 * GPU_SAMPLES_MAX + 3 * GPU_PROCS_MAX + GPU_MIG_MAX + 64];
    uint32_t n;
    uint32_t lost; /* values that found no room: counted as dropped */
};

static void put(struct round *r, int metric, const struct gpu_device *d, int32_t sub, int64_t ts,
                double value)
{
    if (r->n < ARRAY_SIZE(r->v))
        r->v[r->n++] = (struct gpu_value){ts, value, (uint16_t)metric, (uint16_t)d->index, sub};
    else
        r->lost++;
}

static void queue_round(struct gpu_collector *g, struct round *r)
{
    pthread_mutex_lock(&g->lock);
    uint32_t room = GPU_QUEUE_MAX - g->nqueue;
    uint32_t n = r->n < room ? r->n : room;
    memcpy(g->queue + g->nqueue, r->v, n * sizeof(*r->v));
    g->nqueue += n;
    /* the sampling thread is far behind: drop, count */
    atomic_fetch_add(&g->dropped, (uint64_t)(r->n - n + r->lost));
    pthread_mutex_unlock(&g->lock);
    r->n = r->lost = 0;
}

/* Whether a call succeeded; remembers what a device cannot do, and a lost
 * device. Transient errors just lose this sample. */
static int ok(struct gpu_device *d, int metric, nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_SUCCESS:
        return 1;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_PERMISSION:
        d->unsupported |= 1u << metric;
        return 0;
    case NVML_ERROR_GPU_IS_LOST:
        atomic_store(&d->lost, 1);
        return 0;
    default:
        return 0;
    }
}

static int wanted(const struct gpu_device *d, int metric, const void *fn)
{
    return fn && !(d->unsupported & (1u << metric)) && !atomic_load(&d->lost);
}

/* The driver's buffered samples since the last read: every burst is seen,
 * not only what a 100 ms poll happens to hit. 1 when read (or nothing new);
 * 0 when the device cannot give them (not supported, no permission, lost);
 * -1 on an error that may pass (a timeout): the samples stay in the
 * driver's ring for the next read. */
static int read_samples(struct gpu_collector *g, struct gpu_device *d, struct round *r,
                        nvmlSamplingType_t type, int metric, unsigned long long *last)
{
    nvmlSample_t s[GPU_SAMPLES_MAX];
    unsigned n = GPU_SAMPLES_MAX;
    nvmlValueType_t vt;
    nvmlReturn_t rc = g->lib.nvmlDeviceGetSamples(d->handle, type, *last, &vt, &n, s);
    if (rc == NVML_ERROR_NOT_FOUND)
        return 1; /* no new sample since the last read */
    switch (rc) {
    case NVML_SUCCESS:
        break;
    case NVML_ERROR_GPU_IS_LOST:
        ok(d, metric, rc);
        return 0;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_INVALID_ARGUMENT:
        return 0;
    default:
        return -1;
    }
    for (unsigned i = 0; i < n && i < GPU_SAMPLES_MAX; i++) {
        double v = vt == NVML_VALUE_TYPE_DOUBLE               ? s[i].sampleValue.dVal
                   : vt == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG ? (double)s[i].sampleValue.ullVal
                   : vt == NVML_VALUE_TYPE_UNSIGNED_LONG      ? (double)s[i].sampleValue.ulVal
                   : vt == NVML_VALUE_TYPE_SIGNED_LONG_LONG   ? (double)s[i].sampleValue.sllVal
                                                              : (double)s[i].sampleValue.uiVal;
        if (s[i].timeStamp <= *last)
            continue;
        put(r, metric, d, 0, (int64_t)s[i].timeStamp * 1000 + g->clock_shift_ns, v);
        *last = s[i].timeStamp;
    }
    return 1;
}

static void sample_utilization(struct gpu_collector *g, struct gpu_device *d, struct round *r,
                               int64_t ts)
{
    if (d->use_samples && !atomic_load(&d->lost)) {
        int a = read_samples(g, d, r, NVML_GPU_UTILIZATION_SAMPLES, GM_UTIL, &d->last_util_ts);
        int b =
            read_samples(g, d, r, NVML_MEMORY_UTILIZATION_SAMPLES, GM_MEM_UTIL, &d->last_memu_ts);
        if (a == 1 && b == 1) {
            d->samples_failed = 0;
            return;
        }
        /* a passing error loses nothing: the next read takes what the ring
         * gathered meanwhile. Only one that stays, or a device that cannot,
         * turns to the plain rates, for good (the two would interleave
         * timestamps out of order). */
        if (a != 0 && b != 0 && ++d->samples_failed < GPU_SAMPLES_RETRIES)
            return;
        d->use_samples = 0;
    }
    nvmlUtilization_t u;
    if (wanted(d, GM_UTIL, g->lib.nvmlDeviceGetUtilizationRates) &&
        ok(d, GM_UTIL, g->lib.nvmlDeviceGetUtilizationRates(d->handle, &u))) {
        put(r, GM_UTIL, d, 0, ts, u.gpu);
        put(r, GM_MEM_UTIL, d, 0, ts, u.memory);
    }
}

static void sample_processes(struct gpu_collector *g, struct gpu_device *d, struct round *r,
                             int64_t ts)
{
    static nvmlProcessInfo_t p[GPU_PROCS_MAX]; /* the GPU thread's alone */
    unsigned n = GPU_PROCS_MAX;
    if (wanted(d, GM_PROC_MEM, g->lib.nvmlDeviceGetComputeRunningProcesses_v3) &&
        ok(d, GM_PROC_MEM, g->lib.nvmlDeviceGetComputeRunningProcesses_v3(d->handle, &n, p))) {
        for (unsigned i = 0; i < n && i < GPU_PROCS_MAX; i++)
            if (p[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE)
                put(r, GM_PROC_MEM, d, (int32_t)p[i].pid, ts, (double)p[i].usedGpuMemory);
    }
    static nvmlProcessUtilizationSample_t u[GPU_PROCS_MAX];
    n = GPU_PROCS_MAX;
    if (!wanted(d, GM_PROC_SM, g->lib.nvmlDeviceGetProcessUtilization))
        return;
    nvmlReturn_t rc = g->lib.nvmlDeviceGetProcessUtilization(d->handle, u, &n, d->last_proc_ts);
    if (rc == NVML_ERROR_NOT_FOUND || !ok(d, GM_PROC_SM, rc))
        return;
    for (unsigned i = 0; i < n && i < GPU_PROCS_MAX; i++) {
        if (u[i].timeStamp <= d->last_proc_ts)
            continue;
        put(r, GM_PROC_SM, d, (int32_t)u[i].pid, ts, u[i].smUtil);
        put(r, GM_PROC_MEMU, d, (int32_t)u[i].pid, ts, u[i].memUtil);
    }
    for (unsigned i = 0; i < n && i < GPU_PROCS_MAX; i++)
        if (u[i].timeStamp > d->last_proc_ts)
            d->last_proc_ts = u[i].timeStamp;
}

/* One unsigned reading of a device: put scaled, or remember why not. */
#define READ_UINT(metric, fn, scale, ...)                                                          \
    do {                                                                                           \
        unsigned v_;                                                                               \
        if (wanted(d, metric, g->lib.fn) && ok(d, metric, g->lib.fn(d->handle, __VA_ARGS__, &v_))) \
            put(r, metric, d, 0, ts, (double)v_ *(scale));                                         \
    } while (0)

/* When NVLink counters were read. A round held up by a slow call or a busy
 * CPU reads them well after its own start: dividing by the rounds' spacing
 * would give one interval's traffic over another's length (a dip, then a
 * spike). The driver stamps each field (µs since the epoch); without its
 * stamps, the time the call returned stands in. */
static struct nvlink_stamp nvlink_read_stamp(const nvmlFieldValue_t *f, uint64_t answered)
{
    long long latest = 0;
    for (unsigned i = 0; i < 2 * NVML_NVLINK_MAX_LINKS; i++)
        if ((answered & (UINT64_C(1) << i)) && f[i].timestamp > latest)
            latest = f[i].timestamp;
    if (latest > 0)
        return (struct nvlink_stamp){.ns = (int64_t)latest * 1000, .driver = 1};
    return (struct nvlink_stamp){.ns = clock_monotonic_ns(), .driver = 0};
}

/* NVLink data throughput: per-link KiB counters, each differenced on its
 * own and summed over the links, as a rate between two readings. A reading
 * that lacks a link the last one had (a link that flaps) gives no point: the
 * next whole one spans both intervals, so the link's traffic is neither lost
 * nor a spike. A link missing GPU_NVLINK_PATIENCE readings in a row is taken
 * as gone. A GPU without NVLink answers NOT_SUPPORTED for every link and is
 * not asked again. */
static void sample_nvlink(struct gpu_collector *g, struct gpu_device *d, struct round *r,
                          int64_t ts)
{
    if (!wanted(d, GM_NVLINK_RX, g->lib.nvmlDeviceGetFieldValues))
        return;
    nvmlFieldValue_t f[2 * NVML_NVLINK_MAX_LINKS];
    memset(f, 0, sizeof(f));
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        f[2 * l] =
            (nvmlFieldValue_t){.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = l};
        f[2 * l + 1] =
            (nvmlFieldValue_t){.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = l};
    }
    if (!ok(d, GM_NVLINK_RX,
            g->lib.nvmlDeviceGetFieldValues(d->handle, 2 * NVML_NVLINK_MAX_LINKS, f)))
        return;
    _Static_assert(2 * NVML_NVLINK_MAX_LINKS <= 64, "a bit a field in nvlink_seen");
    uint64_t now = 0;
    for (unsigned i = 0; i < 2 * NVML_NVLINK_MAX_LINKS; i++)
        if (f[i].nvmlReturn == NVML_SUCCESS)
            now |= UINT64_C(1) << i;
    if (!now && !d->nvlink_seen) {
        d->unsupported |= 1u << GM_NVLINK_RX;
        return;
    }
    if ((d->nvlink_seen & ~now) && ++d->nvlink_missing < GPU_NVLINK_PATIENCE)
        return; /* keep the last whole reading to difference against */
    double kib[2] = {0, 0};
    for (unsigned i = 0; i < 2 * NVML_NVLINK_MAX_LINKS; i++) {
        if (!(now & (UINT64_C(1) << i)))
            continue;
        unsigned long long v =
            f[i].valueType == NVML_VALUE_TYPE_UNSIGNED_INT ? f[i].value.uiVal : f[i].value.ullVal;
        /* counters only grow; a reset (driver reload) reads as no traffic */
        if ((d->nvlink_seen & (UINT64_C(1) << i)) && v >= d->nvlink_count[i])
            kib[i & 1] += (double)(v - d->nvlink_count[i]);
        d->nvlink_count[i] = v;
    }
    struct nvlink_stamp read = nvlink_read_stamp(f, now);
    if (d->nvlink_prev.ns && read.driver == d->nvlink_prev.driver && read.ns > d->nvlink_prev.ns) {
        double dt = (double)(read.ns - d->nvlink_prev.ns) / 1e9;
        put(r, GM_NVLINK_RX, d, 0, ts, kib[0] * 1024.0 / dt);
        put(r, GM_NVLINK_TX, d, 0, ts, kib[1] * 1024.0 / dt);
    }
    d->nvlink_seen = now;
    d->nvlink_missing = 0;
    d->nvlink_prev = read;
}

/* Each MIG device's memory, through its own handle: under MIG the GPU's
 * handle gives the whole GPU's only to privileged callers. The devices of
 * one GPU share what they cannot do and whether the GPU is lost; an error
 * of one device (an instance destroyed mid-run) just loses its sample. */
static void sample_mig(struct gpu_collector *g, struct gpu_device *d, struct round *r, int64_t ts)
{
    for (unsigned i = 0; i < d->nmig && wanted(d, GM_MIG_MEM_USED, g->lib.nvmlDeviceGetMemoryInfo);
         i++) {
        nvmlMemory_t m;
        if (ok(d, GM_MIG_MEM_USED, g->lib.nvmlDeviceGetMemoryInfo(d->mig[i].handle, &m)))
            put(r, GM_MIG_MEM_USED, d, (int32_t)d->mig[i].index, ts, (double)m.used);
    }
}

static void sample_device(struct gpu_collector *g, struct gpu_device *d, struct round *r,
                          int64_t ts)
{
    sample_utilization(g, d, r, ts);
    nvmlMemory_t m;
    if (wanted(d, GM_MEM_USED, g->lib.nvmlDeviceGetMemoryInfo) &&
        ok(d, GM_MEM_USED, g->lib.nvmlDeviceGetMemoryInfo(d->handle, &m))) {
        put(r, GM_MEM_USED, d, 0, ts, (double)m.used);
        put(r, GM_MEM_TOTAL, d, 0, ts, (double)m.total);
    }
    sample_mig(g, d, r, ts);
    unsigned mw;
    if (wanted(d, GM_POWER, g->lib.nvmlDeviceGetPowerUsage) &&
        ok(d, GM_POWER, g->lib.nvmlDeviceGetPowerUsage(d->handle, &mw)))
        put(r, GM_POWER, d, 0, ts, mw / 1000.0);
    unsigned long long mj;
    if (wanted(d, GM_ENERGY, g->lib.nvmlDeviceGetTotalEnergyConsumption) &&
        ok(d, GM_ENERGY, g->lib.nvmlDeviceGetTotalEnergyConsumption(d->handle, &mj))) {
        /* the counter runs since the driver loaded: the run's share is the
         * sum of its rises; a reading below the last one (the counter
         * started again: a GPU reset) adds nothing, as for NVLink */
        if (d->have_energy && mj >= d->energy_prev)
            d->energy_run += mj - d->energy_prev;
        d->energy_prev = mj;
        d->have_energy = 1;
        put(r, GM_ENERGY, d, 0, ts, (double)d->energy_run / 1000.0);
    }
    READ_UINT(GM_TEMP, nvmlDeviceGetTemperature, 1.0, NVML_TEMPERATURE_GPU);
    READ_UINT(GM_SM_CLOCK, nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_SM);
    READ_UINT(GM_MEM_CLOCK, nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_MEM);
    /* NVML's KB is 1024 bytes */
    READ_UINT(GM_PCIE_RX, nvmlDeviceGetPcieThroughput, 1024.0, NVML_PCIE_UTIL_RX_BYTES);
    READ_UINT(GM_PCIE_TX, nvmlDeviceGetPcieThroughput, 1024.0, NVML_PCIE_UTIL_TX_BYTES);
    unsigned long long reasons, ecc;
    if (wanted(d, GM_THROTTLE, g->lib.nvmlDeviceGetCurrentClocksThrottleReasons) &&
        ok(d, GM_THROTTLE, g->lib.nvmlDeviceGetCurrentClocksThrottleReasons(d->handle, &reasons)))
        put(r, GM_THROTTLE, d, 0, ts, (double)reasons);
    if (wanted(d, GM_ECC_CORRECTED, g->lib.nvmlDeviceGetTotalEccErrors) &&
        ok(d, GM_ECC_CORRECTED,
           g->lib.nvmlDeviceGetTotalEccErrors(d->handle, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                              NVML_VOLATILE_ECC, &ecc)))
        put(r, GM_ECC_CORRECTED, d, 0, ts, (double)ecc);
    if (wanted(d, GM_ECC_UNCORRECTED, g->lib.nvmlDeviceGetTotalEccErrors) &&
        ok(d, GM_ECC_UNCORRECTED,
           g->lib.nvmlDeviceGetTotalEccErrors(d->handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                              NVML_VOLATILE_ECC, &ecc)))
        put(r, GM_ECC_UNCORRECTED, d, 0, ts, (double)ecc);
    sample_nvlink(g, d, r, ts);
    sample_processes(g, d, r, ts);
}

static void *gpu_main(void *arg)
{
    struct gpu_collector *g = arg;
    struct round *r = malloc(sizeof(*r));
    if (!r)
        return NULL;
    r->n = r->lost = 0;
    for (int64_t k = 0;; k++) {
        int64_t due = g->start_mono_ns + k * g->interval_ns;
        if (stop_gate_sleep_until(&g->gate, due))
            break;
        int64_t late = clock_monotonic_ns() - due;
        if (late >= g->interval_ns) { /* a slow driver call: skip the deadlines it ate */
            int64_t skip = late / g->interval_ns;
            atomic_fetch_add(&g->missed, (uint64_t)skip);
            k += skip;
            due += skip * g->interval_ns;
        }
        int64_t ts = g->start_real_ns + (due - g->start_mono_ns);
        for (unsigned i = 0; i < g->ndev; i++)
            if (!atomic_load(&g->dev[i].lost)) {
                sample_device(g, &g->dev[i], r, ts);
                queue_round(g, r);
            }
        atomic_fetch_add(&g->samples, 1);
    }
    free(r);
    return NULL;
}

int gpu_collector_start(struct gpu_collector *g, int64_t start_mono_ns, int64_t start_real_ns)
{
    if (!g->on)
        return 0;
    g->start_mono_ns = start_mono_ns;
    g->start_real_ns = start_real_ns;
    /* the host sampler's signals stay blocked here too (inherited mask) */
    int rc = pthread_create(&g->thread, NULL, gpu_main, g);
    if (rc)
        return -rc;
    g->started = 1;
    return 0;
}

/* ---- the sampling thread's side ------------------------------------------- */

static int series_for(struct gpu_collector *g, struct series_table *t, const struct gpu_value *v,
                      uint32_t *out)
{
    for (uint32_t i = 0; i < g->nmap; i++) {
        const struct gpu_series_map *m = &g->map[i];
        if (m->metric == v->metric && m->device == v->device && m->sub == v->sub) {
            *out = m->series;
            return 0;
        }
    }
    if (array_grow((void **)&g->map, &g->map_cap, g->nmap + 1, sizeof(*g->map), 64) < 0)
        return -ENOMEM;
    char labels[48];
    const char *sub = gpu_metrics[v->metric].sub;
    if (sub)
        snprintf(labels, sizeof(labels), "gpu=%u,%s=%d", (unsigned)v->device, sub, (int)v->sub);
    else
        snprintf(labels, sizeof(labels), "gpu=%u", (unsigned)v->device);
    int rc = series_get_metric(t, gpu_metrics[v->metric].metric, labels, out);
    if (rc < 0)
        return rc;
    g->map[g->nmap++] = (struct gpu_series_map){v->metric, v->device, v->sub, *out};
    return 0;
}

/* "mig_mode" and the "mig" list; last in the metadata, so that a reader
 * looking for the GPU's own "name" or "uuid" finds those first. */
static void add_mig_meta(struct json_writer *jw, const struct gpu_device *d)
{
    jw_kv_int_or_null(jw, "mig_mode", d->mig_mode);
    jw_key(jw, "mig");
    jw_array_begin(jw);
    for (unsigned i = 0; i < d->nmig; i++) {
        const struct gpu_mig *mg = &d->mig[i];
        jw_object_begin(jw);
        jw_kv_uint(jw, "index", mg->index);
        jw_kv_str(jw, "uuid", mg->uuid);
        jw_kv_str(jw, "name", mg->name);
        jw_kv_uint(jw, "memory_total_bytes", mg->mem_total);
        jw_kv_int_or_null(jw, "gpu_instance_id", mg->gpu_instance_id);
        jw_kv_int_or_null(jw, "compute_instance_id", mg->compute_instance_id);
        jw_kv_int_or_null(jw, "cuda_index", mg->cuda_index);
        jw_end(jw);
    }
    jw_end(jw);
}

/* The device's facts in the metadata of gpu.mem_total_bytes{gpu=G}; none
 * when out of memory rather than a cut object. */
static void write_device_meta(struct gpu_collector *g, struct series_table *t,
                              const struct gpu_device *d, uint32_t series)
{
    struct strbuf m;
    strbuf_init(&m);
    struct json_writer jw;
    jw_init(&jw, &m);
    jw_object_begin(&jw);
    jw_kv_uint(&jw, "index", d->index);
    jw_kv_str(&jw, "name", d->name);
    jw_kv_str(&jw, "uuid", d->uuid);
    jw_kv_uint(&jw, "memory_total_bytes", d->mem_total);
    jw_kv_str(&jw, "driver", g->driver);
    jw_kv_int_or_null(&jw, "cuda_index", d->cuda_index);
    jw_kv_str_or_null(&jw, "cuda_visible_devices", g->visible);
    add_mig_meta(&jw, d);
    jw_end(&jw);
    if (!jw_failed(&jw))
        series_set_meta(t, series, m.buf);
    strbuf_release(&m);
}

static void report_lost(struct gpu_collector *g)
{
    for (unsigned i = 0; i < g->ndev; i++)
        if (atomic_load(&g->dev[i].lost) && !g->lost_reported[i]) {
            g->lost_reported[i] = 1;
            log_warn("GPU %u (%s, %s) is lost (NVML: GPU is lost); its metrics stop here, the "
                     "run goes on",
                     g->dev[i].index, g->dev[i].name, g->dev[i].uuid);
        }
}

/* Every device's facts, once, on gpu.mem_total_bytes{gpu=G}: stored even
 * when that series never gets a point (a GPU in MIG mode refuses its whole
 * memory to unprivileged callers), so the GPU and its MIG list are known. */
static void write_all_facts(struct gpu_collector *g, struct series_table *t)
{
    for (unsigned i = 0; i < g->ndev; i++) {
        const struct gpu_device *d = &g->dev[i];
        if (d->index >= GPU_MAX_DEVICES || g->meta_done[d->index])
            continue;
        struct gpu_value key = {0, 0, GM_MEM_TOTAL, (uint16_t)d->index, 0};
        uint32_t s;
        if (series_for(g, t, &key, &s) < 0)
            continue;
        write_device_meta(g, t, d, s);
        series_keep_empty(t, s);
        g->meta_done[d->index] = 1;
    }
}

void gpu_collector_merge(struct gpu_collector *g, struct series_table *t, struct proc_tree *tree)
{
    if (!g->on)
        return;
    pthread_mutex_lock(&g->lock);
    struct gpu_value *v = g->queue;
    uint32_t n = g->nqueue;
    g->queue = g->spare;
    g->spare = v;
    g->nqueue = 0;
    pthread_mutex_unlock(&g->lock);
    write_all_facts(g, t);
    for (uint32_t i = 0; i < n; i++) {
        if (per_process(v[i].metric) && (!tree || !proc_tree_find(tree, v[i].sub)))
            continue; /* another job's process on the same GPU */
        uint32_t s;
        if (series_for(g, t, &v[i], &s) < 0)
            continue;
        series_put_at(t, s, v[i].ts_ns, v[i].value);
    }
    report_lost(g);
}

int gpu_collector_close(struct gpu_collector *g, struct series_table *t, struct proc_tree *tree)
{
    if (!g->on)
        return 0;
    if (g->started) {
        g->started = 0;
        if (stop_gate_stop_and_join(&g->gate, g->thread, STOP_GATE_JOIN_NS) < 0) {
            /* the thread is inside an NVML call that does not return (a hung
             * driver): the run's end must not wait on it. What it queued
             * before is kept; it holds no lock there, so the merge is safe.
             * NVML, the library and g stay as they are: it still uses them. */
            log_warn("the GPU sampler is stuck in an NVML call (no answer within %d s of the "
                     "job's end): strobe ends without it; GPU metrics end at its last reading",
                     (int)(STOP_GATE_JOIN_NS / NS_PER_S));
            gpu_collector_merge(g, t, tree);
            g->on = 0;
            return 1;
        }
    }
    gpu_collector_merge(g, t, tree);
    if (g->lib.nvmlShutdown)
        g->lib.nvmlShutdown();
    dlclose(g->lib.dl);
    pthread_mutex_destroy(&g->lock);
    stop_gate_release(&g->gate);
    free(g->queue);
    free(g->spare);
    free(g->map);
    free(g->visible);
    g->visible = NULL;
    g->on = 0;
    return 0;
}
