/*
 * DCGM's profiling fields (SM active, SM occupancy, tensor pipe active, DRAM
 * active): hardware counters that say how busy the SMs were, where NVML's
 * gpu.util only says whether a kernel ran. Read from a DCGM host engine
 * (nv-hostengine) through libdcgm loaded with dlopen, on a thread of their
 * own at the GPU interval but never faster than 100 ms (the counters' floor).
 * No library, or no host engine: one note, and the run goes on.
 *
 * The ABI subset used is declared below (types and values as in DCGM's
 * dcgm_structs.h and dcgm_agent.h); nothing of DCGM's is needed to build.
 */
#ifndef STROBE_GPU_DCGM_H
#define STROBE_GPU_DCGM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/gate.h"

typedef int dcgmReturn_t;
typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;
typedef int dcgm_field_entity_group_t; /* DCGM_FE_GPU is 1 */
typedef unsigned int dcgm_field_eid_t;

#define DCGM_ST_OK           0
#define DCGM_GROUP_ALL_GPUS  0x7fffffff
#define DCGM_FE_GPU          1
#define DCGM_FT_DOUBLE       ((unsigned short)'d')
#define DCGM_FP64_BLANK      140737488355328.0 /* this and above: no value */
#define DCGM_MAX_STR_LENGTH  256
#define DCGM_MAX_BLOB_LENGTH 4096

#define DCGM_FI_PROF_SM_ACTIVE          1002
#define DCGM_FI_PROF_SM_OCCUPANCY       1003
#define DCGM_FI_PROF_PIPE_TENSOR_ACTIVE 1004
#define DCGM_FI_PROF_DRAM_ACTIVE        1005

typedef struct {
    unsigned int version;
    unsigned short fieldId;
    unsigned short fieldType;
    int status;
    int64_t ts; /* µs since the epoch */
    union {
        int64_t i64;
        double dbl;
        char str[DCGM_MAX_STR_LENGTH];
        char blob[DCGM_MAX_BLOB_LENGTH];
    } value;
} dcgmFieldValue_v1;

typedef int (*dcgmFieldValueEntityEnumeration_f)(dcgm_field_entity_group_t entityGroupId,
                                                 dcgm_field_eid_t entityId,
                                                 dcgmFieldValue_v1 *values, int numValues,
                                                 void *userData);

#define DCGM_FUNCTIONS(X)                                                                          \
    X(dcgmReturn_t, dcgmInit, (void))                                                              \
    X(dcgmReturn_t, dcgmShutdown, (void))                                                          \
    X(dcgmReturn_t, dcgmConnect, (const char *, dcgmHandle_t *))                                   \
    X(dcgmReturn_t, dcgmDisconnect, (dcgmHandle_t))                                                \
    X(dcgmReturn_t, dcgmFieldGroupCreate,                                                          \
      (dcgmHandle_t, int, unsigned short *, const char *, dcgmFieldGrp_t *))                       \
    X(dcgmReturn_t, dcgmFieldGroupDestroy, (dcgmHandle_t, dcgmFieldGrp_t))                         \
    X(dcgmReturn_t, dcgmWatchFields,                                                               \
      (dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t, long long, double, int))                        \
    X(dcgmReturn_t, dcgmUnwatchFields, (dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t))               \
    X(dcgmReturn_t, dcgmGetLatestValues_v2,                                                        \
      (dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t, dcgmFieldValueEntityEnumeration_f, void *))

#define DCGM_FIELDS          4
#define DCGM_MAX_GPUS        64
#define DCGM_QUEUE_MAX       16384
#define DCGM_MIN_INTERVAL_NS 100000000LL

struct dcgm_value {
    int64_t ts_ns;
    double value;   /* percent */
    uint16_t field; /* 0..DCGM_FIELDS-1 */
    uint16_t gpu;
};

struct dcgm_collector {
    int on;
    void *dl;
#define X(ret, name, args) ret(*name) args;
    DCGM_FUNCTIONS(X)
#undef X
    dcgmHandle_t handle;
    dcgmFieldGrp_t fields;
    int64_t interval_ns;
    int64_t clock_shift_ns; /* added to DCGM's timestamps: a job's node is on the store's clock */
    pthread_t thread;
    int started;
    struct stop_gate gate; /* stops the thread, waking its sleep to the next deadline */
    pthread_mutex_t lock;
    struct dcgm_value *queue, *spare;
    uint32_t nqueue;
    atomic_uint_fast64_t dropped;                /* values lost to a full queue */
    int64_t last_ts[DCGM_MAX_GPUS][DCGM_FIELDS]; /* µs: each cached value once */
    uint32_t series[DCGM_MAX_GPUS][DCGM_FIELDS]; /* the sampling thread's */
    uint8_t have_series[DCGM_MAX_GPUS][DCGM_FIELDS];
};

/* Load libdcgm ($STROBE_DCGM_LIB, else libdcgm.so.4, .so.3, .so), connect
 * to the host engine ($STROBE_DCGM_HOST, else 127.0.0.1) and watch the
 * four fields. 0, or negative with one note saying why it is skipped. */
int dcgm_collector_open(struct dcgm_collector *d, int64_t interval_ns);
int dcgm_collector_start(struct dcgm_collector *d);

/* Values lost to a full queue: any thread, any time (NULL: none). */
static inline uint64_t dcgm_collector_dropped(struct dcgm_collector *d)
{
    return d ? atomic_load(&d->dropped) : 0;
}

struct series_table;
void dcgm_collector_merge(struct dcgm_collector *d, struct series_table *t);
/* 0, or 1 when the thread was left in a call that did not return within
 * STOP_GATE_JOIN_NS: d must then stay allocated (as gpu_collector_close). */
int dcgm_collector_close(struct dcgm_collector *d, struct series_table *t);

#endif
