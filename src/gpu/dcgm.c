#include "common/array.h"
#include "gpu/dcgm.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sample/series.h"

static const struct {
    unsigned short id;
    enum metric_id metric; /* stored in percent: DCGM gives ratios 0..1 */
} fields[DCGM_FIELDS] = {
    {DCGM_FI_PROF_SM_ACTIVE, METRIC_GPU_SM_ACTIVE},
    {DCGM_FI_PROF_SM_OCCUPANCY, METRIC_GPU_SM_OCCUPANCY},
    {DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, METRIC_GPU_TENSOR_ACTIVE},
    {DCGM_FI_PROF_DRAM_ACTIVE, METRIC_GPU_DRAM_ACTIVE},
};

static int load(struct dcgm_collector *d)
{
    const char *env = getenv("STROBE_DCGM_LIB");
    const char *paths[] = {env && *env ? env : NULL, "libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"};
    for (size_t i = 0; i < ARRAY_SIZE(paths) && !d->dl; i++) {
        if (paths[i])
            d->dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (env && *env)
            break; /* an explicit path is the only one tried */
    }
    if (!d->dl)
        return -ENOENT;
#define X(ret, name, args) *(void **)&d->name = dlsym(d->dl, #name);
    DCGM_FUNCTIONS(X)
#undef X
    int all = 1;
#define X(ret, name, args) all &= d->name != NULL;
    DCGM_FUNCTIONS(X)
#undef X
    return all ? 0 : -ENOSYS;
}

static void unload(struct dcgm_collector *d)
{
    if (d->dl)
        dlclose(d->dl);
    d->dl = NULL;
}

int dcgm_collector_open(struct dcgm_collector *d, int64_t interval_ns)
{
    memset(d, 0, sizeof(*d));
    d->interval_ns = interval_ns < DCGM_MIN_INTERVAL_NS ? DCGM_MIN_INTERVAL_NS : interval_ns;
    int rc = load(d);
    if (rc < 0) {
        log_note("%s: no SM-level GPU metrics (gpu.sm_active and the like)",
                 rc == -ENOENT ? "DCGM is not installed" : "libdcgm lacks functions strobe needs");
        unload(d);
        return rc;
    }
    const char *host = getenv("STROBE_DCGM_HOST");
    host = host && *host ? host : "127.0.0.1";
    if (d->dcgmInit() != DCGM_ST_OK) {
        log_note("DCGM did not start: no SM-level GPU metrics");
        unload(d);
        return -EIO;
    }
    if (d->dcgmConnect(host, &d->handle) != DCGM_ST_OK) {
        log_note("no DCGM host engine at %s (nv-hostengine): no SM-level GPU metrics", host);
        d->dcgmShutdown();
        unload(d);
        return -ECONNREFUSED;
    }
    unsigned short ids[DCGM_FIELDS];
    for (int i = 0; i < DCGM_FIELDS; i++)
        ids[i] = fields[i].id;
    char name[64];
    snprintf(name, sizeof(name), "strobe-%d", (int)getpid());
    if (d->dcgmFieldGroupCreate(d->handle, DCGM_FIELDS, ids, name, &d->fields) != DCGM_ST_OK ||
        d->dcgmWatchFields(d->handle, DCGM_GROUP_ALL_GPUS, d->fields,
                           (long long)(d->interval_ns / 1000), 10.0, 0) != DCGM_ST_OK) {
        /* another profiler (Nsight, a second DCGM client) may hold the counters */
        log_note("DCGM will not watch the profiling fields (in use by another tool?): no "
                 "SM-level GPU metrics");
        d->dcgmDisconnect(d->handle);
        d->dcgmShutdown();
        unload(d);
        return -EBUSY;
    }
    d->queue = malloc(DCGM_QUEUE_MAX * sizeof(*d->queue));
    d->spare = malloc(DCGM_QUEUE_MAX * sizeof(*d->spare));
    if (!d->queue || !d->spare || stop_gate_init(&d->gate) < 0) {
        free(d->queue);
        free(d->spare);
        d->dcgmDisconnect(d->handle);
        d->dcgmShutdown();
        unload(d);
        return -ENOMEM;
    }
    pthread_mutex_init(&d->lock, NULL);
    d->on = 1;
    return 0;
}

/* ---- the DCGM thread ------------------------------------------------------ */

static int field_index(unsigned short id)
{
    for (int i = 0; i < DCGM_FIELDS; i++)
        if (fields[i].id == id)
            return i;
    return -1;
}

/* Called by libdcgm for each GPU with its latest values. */
static int on_values(dcgm_field_entity_group_t group, dcgm_field_eid_t gpu, dcgmFieldValue_v1 *v,
                     int n, void *arg)
{
    struct dcgm_collector *d = arg;
    if (group != DCGM_FE_GPU || gpu >= DCGM_MAX_GPUS)
        return 0;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < n; i++) {
        int f = field_index(v[i].fieldId);
        if (f < 0 || v[i].status != DCGM_ST_OK || v[i].fieldType != DCGM_FT_DOUBLE ||
            !(v[i].value.dbl >= 0 && v[i].value.dbl < DCGM_FP64_BLANK) ||
            v[i].ts <= d->last_ts[gpu][f])
            continue; /* no value yet, or the one already taken */
        d->last_ts[gpu][f] = v[i].ts;
        if (d->nqueue < DCGM_QUEUE_MAX)
            d->queue[d->nqueue++] =
                (struct dcgm_value){v[i].ts * 1000 + d->clock_shift_ns, v[i].value.dbl * 100.0,
                                    (uint16_t)f, (uint16_t)gpu};
        else
            atomic_fetch_add(&d->dropped, 1);
    }
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static void *dcgm_main(void *arg)
{
    struct dcgm_collector *d = arg;
    int64_t start = clock_monotonic_ns();
    for (int64_t k = 1;; k++) {
        int64_t due = start + k * d->interval_ns;
        if (stop_gate_sleep_until(&d->gate, due))
            break;
        d->dcgmGetLatestValues_v2(d->handle, DCGM_GROUP_ALL_GPUS, d->fields, on_values, d);
        int64_t late = clock_monotonic_ns() - due;
        if (late >= d->interval_ns)
            k += late / d->interval_ns; /* a slow host engine: skip what it ate */
    }
    return NULL;
}

int dcgm_collector_start(struct dcgm_collector *d)
{
    if (!d->on)
        return 0;
    int rc = pthread_create(&d->thread, NULL, dcgm_main, d);
    if (rc)
        return -rc;
    d->started = 1;
    return 0;
}

/* ---- the sampling thread's side ------------------------------------------- */

void dcgm_collector_merge(struct dcgm_collector *d, struct series_table *t)
{
    if (!d->on)
        return;
    pthread_mutex_lock(&d->lock);
    struct dcgm_value *v = d->queue;
    uint32_t n = d->nqueue;
    d->queue = d->spare;
    d->spare = v;
    d->nqueue = 0;
    pthread_mutex_unlock(&d->lock);
    for (uint32_t i = 0; i < n; i++) {
        uint16_t g = v[i].gpu, f = v[i].field;
        if (!d->have_series[g][f]) {
            char labels[16];
            snprintf(labels, sizeof(labels), "gpu=%u", (unsigned)g);
            if (series_get_metric(t, fields[f].metric, labels, &d->series[g][f]) < 0)
                continue;
            d->have_series[g][f] = 1;
        }
        series_put_at(t, d->series[g][f], v[i].ts_ns, v[i].value);
    }
}

int dcgm_collector_close(struct dcgm_collector *d, struct series_table *t)
{
    if (!d->on)
        return 0;
    if (d->started) {
        d->started = 0;
        if (stop_gate_stop_and_join(&d->gate, d->thread, STOP_GATE_JOIN_NS) < 0) {
            /* as for NVML (gpu_collector_close): a call to the host engine
             * that never returns must not hold the run's end */
            log_warn("the DCGM sampler is stuck in a call to the host engine (no answer within "
                     "%d s of the job's end): strobe ends without it; SM metrics end at its last "
                     "reading",
                     (int)(STOP_GATE_JOIN_NS / NS_PER_S));
            dcgm_collector_merge(d, t);
            d->on = 0;
            return 1;
        }
    }
    dcgm_collector_merge(d, t);
    d->dcgmUnwatchFields(d->handle, DCGM_GROUP_ALL_GPUS, d->fields);
    d->dcgmFieldGroupDestroy(d->handle, d->fields);
    d->dcgmDisconnect(d->handle);
    d->dcgmShutdown();
    unload(d);
    pthread_mutex_destroy(&d->lock);
    stop_gate_release(&d->gate);
    free(d->queue);
    free(d->spare);
    d->on = 0;
    return 0;
}
