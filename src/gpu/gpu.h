/*
 * GPU metrics through NVML, loaded at run time (dlopen), on a thread of their
 * own so that a slow driver call never delays host sampling.
 *
 * The GPU thread samples every --gpu-interval on absolute deadlines and puts
 * each value, with its own time, into a bounded queue; the sampling thread
 * moves the queue into the series table at its ticks (gpu_collector_merge),
 * keeping per-process values only for processes of the job's tree. Devices
 * and their static facts (name, UUID, memory, driver) go into the series
 * metadata of gpu.mem_total_bytes{gpu=G}, with the MIG devices of a GPU in
 * MIG mode, whose memory is sampled into gpu.mig_mem_used_bytes{gpu=G,mig=I}.
 *
 * docs/gpu.md explains every metric and its limits.
 */
#ifndef STROBE_GPU_GPU_H
#define STROBE_GPU_GPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/gate.h"
#include "gpu/nvml_api.h"

#define GPU_MAX_DEVICES 64
#define GPU_QUEUE_MAX   65536 /* values waiting for the sampling thread; beyond: dropped, counted */
#define GPU_PROCS_MAX   256   /* processes read per device per sample */
#define GPU_SAMPLES_MAX 128   /* buffered utilization samples read per type per device per sample */
/* readings an NVLink link may lack in a row before it is taken as gone */
#define GPU_NVLINK_PATIENCE 5
/* nvmlDeviceGetSamples' passing errors in a row before the plain rates */
#define GPU_SAMPLES_RETRIES 3
#define GPU_MIG_MAX         8 /* MIG devices kept per GPU (NVML allows 7 on A100 and H100) */

/* What a queued value is. */
enum gpu_metric {
    GM_UTIL,
    GM_MEM_UTIL,
    GM_MEM_USED,
    GM_MEM_TOTAL,
    GM_POWER,
    GM_ENERGY,
    GM_TEMP,
    GM_SM_CLOCK,
    GM_MEM_CLOCK,
    GM_THROTTLE,
    GM_PCIE_RX,
    GM_PCIE_TX,
    GM_ECC_CORRECTED,
    GM_ECC_UNCORRECTED,
    GM_NVLINK_RX,
    GM_NVLINK_TX,
    GM_PROC_MEM,     /* per pid */
    GM_PROC_SM,      /* per pid */
    GM_PROC_MEMU,    /* per pid */
    GM_MIG_MEM_USED, /* per MIG device */
    GM_COUNT
};

struct gpu_value {
    int64_t ts_ns; /* UTC */
    double value;
    uint16_t metric; /* enum gpu_metric */
    uint16_t device;
    int32_t sub; /* the second label: the pid of a per-process metric, the MIG device
                  * index of a MIG one; else 0 */
};

/* One MIG device of a GPU in MIG mode: facts read once, at open. */
struct gpu_mig {
    nvmlDevice_t handle;
    unsigned index; /* NVML's MIG device index under its GPU: the mig=I label */
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE]; /* "MIG-..." */
    unsigned long long mem_total;
    long long gpu_instance_id;     /* -1 when NVML would not say */
    long long compute_instance_id; /* the same */
    int cuda_index;                /* as gpu_device's; -1 hidden or unknown */
};

/* When NVLink counters were read: the driver's stamp, or our monotonic
 * clock where the driver gives none; two readings difference only on one. */
struct nvlink_stamp {
    int64_t ns;
    int driver;
};

struct gpu_device {
    nvmlDevice_t handle;
    unsigned index;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned long long mem_total;
    uint32_t unsupported; /* bit per enum gpu_metric: NOT_SUPPORTED once, never asked again */
    atomic_int lost;      /* GPU_IS_LOST seen: no more calls (read by the sampler too) */
    unsigned long long last_util_ts, last_memu_ts, last_proc_ts; /* µs, for the buffered samples */
    unsigned long long energy_prev; /* mJ: the counter at the last reading */
    unsigned long long energy_run;  /* mJ: the run's share, the sum of the counter's rises */
    int have_energy;                /* energy_prev holds a reading */
    int use_samples;                /* nvmlDeviceGetSamples works for utilization */
    unsigned samples_failed;        /* its transient errors in a row */
    int cuda_index; /* the job's CUDA device number, by $CUDA_VISIBLE_DEVICES; -1 hidden */
    /* NVLink: each link's KiB counters (rx, tx: fields 2l and 2l+1) at the
     * last reading that counted, the fields that answered then, and the
     * readings since that lacked one of them */
    unsigned long long nvlink_count[2 * NVML_NVLINK_MAX_LINKS];
    uint64_t nvlink_seen; /* a bit a field */
    unsigned nvlink_missing;
    struct nvlink_stamp nvlink_prev; /* when it was read; .ns 0 before the first */
    int mig_mode;                    /* current MIG mode, 0 or 1; -1 when NVML would not say */
    struct gpu_mig mig[GPU_MIG_MAX]; /* in MIG mode: its MIG devices, by index */
    unsigned nmig;
};

struct nvml_lib {
    void *dl;
#define X(ret, name, args) ret(*name) args;
    NVML_FUNCTIONS(X)
#undef X
};

struct gpu_collector {
    int on;
    struct nvml_lib lib;
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char *visible; /* $CUDA_VISIBLE_DEVICES as the job inherits it, whole (sixteen UUIDs
                    * are 655 bytes); NULL when unset; freed at close */
    struct gpu_device dev[GPU_MAX_DEVICES];
    unsigned ndev;
    int64_t interval_ns;
    int64_t start_mono_ns, start_real_ns;
    int64_t clock_shift_ns; /* added to the driver's own timestamps: a job's node is on the store's
                               clock */
    pthread_t thread;
    int started;
    struct stop_gate gate; /* stops the thread, waking its sleep to the next deadline */
    /* the queue: the GPU thread appends under lock, the sampler swaps */
    pthread_mutex_t lock;
    struct gpu_value *queue, *spare;
    uint32_t nqueue;
    atomic_uint_fast64_t dropped; /* values lost to a full queue */
    atomic_uint_fast64_t missed;  /* GPU deadlines missed (a slow driver) */
    atomic_uint_fast64_t samples;
    /* the sampling thread's map of (metric, device, sub) to series, and
     * which devices' metadata is written */
    struct gpu_series_map *map;
    uint32_t nmap, map_cap;
    uint8_t meta_done[GPU_MAX_DEVICES];
    int lost_reported[GPU_MAX_DEVICES];
};

/*
 * Load NVML (path: $STROBE_NVML_LIB, else libnvidia-ml.so.1, else
 * libnvidia-ml.so), initialise it, list the devices. 0 when GPUs will be
 * sampled; otherwise negative, with one note printed saying why (no library,
 * no device): the run goes on without GPU metrics.
 */
int gpu_collector_open(struct gpu_collector *g, int64_t interval_ns);
/* Start the GPU thread; times are the run's (the host frames' grid). */
int gpu_collector_start(struct gpu_collector *g, int64_t start_mono_ns, int64_t start_real_ns);

struct series_table;
struct proc_tree;
/* On the sampling thread: move queued values into the table (per-process
 * ones only for pids the tree follows). */
void gpu_collector_merge(struct gpu_collector *g, struct series_table *t, struct proc_tree *tree);
/* Values lost to a full queue, and GPU deadlines missed to slow driver
 * calls: any thread, any time (NULL: none). */
static inline uint64_t gpu_collector_dropped(struct gpu_collector *g)
{
    return g ? atomic_load(&g->dropped) : 0;
}
static inline uint64_t gpu_collector_missed(struct gpu_collector *g)
{
    return g ? atomic_load(&g->missed) : 0;
}

/* Stop the thread, merge what is left, shut NVML down: 0. 1 when the thread
 * did not end within STOP_GATE_JOIN_NS (a hung NVML call): it is detached,
 * what it queued is merged, and g must stay allocated until the process
 * ends (it is freed otherwise only by the caller, after a 0). */
int gpu_collector_close(struct gpu_collector *g, struct series_table *t, struct proc_tree *tree);

#endif
