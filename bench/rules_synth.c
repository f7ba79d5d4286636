/*
 * A synthetic training run for the offline rules benchmark
 * (bench/rules_cost.py): one run of an 8-GPU training host, 100 series at
 * 10 Hz for 24 hours (86.4 M points) and a million steps of framework events,
 * written into a store the way the recorder writes them, so that
 * `strobe rules RUN` and `strobe show RUN` read what they would read after a
 * real day of training.
 *
 *   build/bench/rules_synth --store PATH [--hours 24] [--hz 10] [--steps 1000000]
 *                           [--seed N] [--name synthetic-24h] [--worker-events]
 *                           [--procs N]
 *
 * Prints one JSON line: the run id and its sizes (series, points, steps,
 * events, event blocks, store bytes), the nominal step period, how far the
 * last step ends from where the plan puts it (drift_ms), and the seconds it
 * took.
 *
 * What is written as the recorder writes it:
 * - the run row: status running while it is written, then finished with its
 *   end, last sample, counters and exit code 0, like a recorder's last batch;
 * - series blocks: the recorder's own series table (sample/series.c) encodes
 *   every point, so blocks are Gorilla streams in SERIES_BLOCK_BYTES buffers
 *   sealed on -ENOSPC or at SERIES_BLOCK_POINTS, upserted with their stats;
 *   timestamps are start + k * interval exactly; rates and shares (cpu, psi,
 *   disk, net, cgroup throttling, proc.cpu, swap-in) have no point at the
 *   baseline frame, gauges do; values are computed the way the collectors
 *   compute them from integer counters (ticks, µs, sectors, bytes, pages), so
 *   they compress as real readings do;
 * - events: one thread (pid = tid = 1000, role "rank", rank 0, world size 1),
 *   per step a STEP marker and the complete spans data, forward, backward,
 *   optimizer and step, in the order the event sink stores them (a span when
 *   it ends: the phases before their step), with run-wide name ids; blocks of
 *   at most EVENT_BLOCK_EVENTS, sealed as the sink seals them (full, or
 *   EVENT_BLOCK_AGE_NS after the block's first event, which on a 86 ms step is
 *   about 350 events a block). With --worker-events the 8 data-loader workers
 *   (in the process tree either way) also write events as the PyTorch capture
 *   records them: one dataloader.worker span per batch, role "dataloader",
 *   new processes every epoch; a seventh event per step.
 * - with --procs N, N more processes of the job (pids 100000 on, children of
 *   the training process, comm "filler"), each with its proc.cpu{pid=P}
 *   series as the process collector writes it (its metadata pid, ppid, comm),
 *   the k-th (from 0) steady at (k + 1) / 100 % of a core: the last one is
 *   the busiest. They take no random numbers, so the rest of the run is the
 *   same with or without them. For the views that list processes (`strobe
 *   show`'s busiest processes), past any count they might cap.
 *
 * The 100 series (names of docs/metrics.md), 52 for the host and the job and
 * 48 for the GPUs. The list asked for had 110; to make it 100, gpu.power_w and
 * gpu.temp_c (8 + 8, read by no rule) and cpu.user and cpu.system (the split
 * of cpu.util, read by no rule) are left out, and gpu.mem_total_bytes (which
 * GPUMemoryIncrease needs, and which carries each GPU's facts in its
 * metadata, as the NVML collector writes them) is in:
 *   cpu.util, cpu.util{core=0..31}, cpu.iowait                          34
 *   mem.used_bytes, mem.available_bytes, mem.total_bytes,
 *   mem.swapin_per_s                                                      4
 *   psi.cpu_some, psi.mem_some, psi.io_some                               3
 *   disk.read_bytes_per_s{dev=nvme0n1}, disk.write_bytes_per_s{...}       2
 *   net.rx_bytes_per_s{iface=eth0}, net.tx_bytes_per_s{...}               2
 *   cgroup.mem_used_bytes, cgroup.mem_limit_bytes, cgroup.throttled_pct   3
 *   proc.cpu, proc.rss_bytes, proc.threads, proc.count                    4
 *   gpu.util, gpu.mem_util, gpu.mem_used_bytes, gpu.mem_total_bytes,
 *   gpu.sm_clock_mhz, gpu.throttle_reasons, each {gpu=0..7}              48
 * The recorder reads swap counters once a second; here mem.swapin_per_s has
 * a point every frame like the others, so that every series has the same
 * count.
 *
 * The training: after an initialisation (model load, CUDA context, data
 * loader workers) the steps tile the time up to a few seconds before the end.
 * A step is data 5 %, forward 28 %, backward 54 %, optimizer 10 % of the
 * period, with jitter; GPU utilisation is the share of each 100 ms the GPUs
 * spent in forward/backward/optimizer, so it beats with the step period.
 * Structure a rule can find, placed by the seed: data-loading stalls on a
 * slow disk (iowait, I/O pressure, data phase x10), a CPU-contention episode
 * (CPU pressure, cgroup throttling), one GPU throttled for heat (clock down,
 * its peers waiting), a memory squeeze (swap-in, memory pressure), a
 * checkpoint every 2 hours (a long step, a burst of writes), a data-loader
 * restart every 20000 steps (a long first step, workers respawned), rare
 * single slow steps, and host and GPU memory that drift slowly up.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "codec/events.h"
#include "common/strbuf.h"
#include "record/events.h" /* EVENT_BLOCK_EVENTS, EVENT_BLOCK_AGE_NS */
#include "record/runinfo.h"
#include "sample/series.h"
#include "store/job.h"
#include "store/store.h"
#include "strobe/version.h"

#define NS_PER_S     1000000000LL
#define START_NS     (1795996800LL * NS_PER_S + 417238911LL) /* 2026-11-30 00:00:00.417 UTC */
#define NCORES       32
#define NGPUS        8
#define NWORKERS     8 /* data-loader worker processes, on cores 4..11 */
#define CORE_MAIN    3 /* the training process's main thread */
#define CORE_PIN     12
#define USER_HZ      100 /* /proc/stat ticks a second */
#define JOB_PID      1000
#define EPOCH_STEPS  20000 /* the loader's workers restart at every epoch */
#define CKPT_EVERY_S 7200
#define STEP_RING    4096 /* steps kept for the frames that overlap them */
#define MAX_EPISODES 8
#define GiB          (1LL << 30)
#define MiB          (1LL << 20)
#define PAGE         4096LL
/* /proc/meminfo of a 512 GiB host: kB, so bytes are multiples of 1024 */
#define MEM_TOTAL_BYTES (528272204LL * 1024)
#define CG_LIMIT_BYTES  (480LL * GiB)
#define GPU_MEM_TOTAL   85520809984LL /* H100 80GB HBM3: 81559 MiB */

/* ---- the random numbers --------------------------------------------------- */

struct rng {
    uint64_t s[4]; /* xoshiro256** */
};

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void rng_init(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rnd(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* [0, 1) */
static double uni(struct rng *r)
{
    return (double)(rnd(r) >> 11) * 0x1.0p-53;
}

/* About N(0, 1): the sum of four uniforms of 16 bits each (Irwin-Hall),
 * scaled; one draw, tails cut at 3.5 sigma, which is all noise needs. */
static double gauss(struct rng *r)
{
    uint64_t x = rnd(r);
    double sum = (double)(x & 0xffff) + (double)((x >> 16) & 0xffff) +
                 (double)((x >> 32) & 0xffff) + (double)(x >> 48);
    return (sum / 65536.0 - 2.0) * 1.7320508075688772;
}

/* x rounded up or down at random, so that the mean is x: counts of ticks,
 * requests, pages in an interval */
static int64_t sround(struct rng *r, double x)
{
    if (!(x > 0))
        return 0;
    double f = floor(x);
    return (int64_t)f + (uni(r) < x - f ? 1 : 0);
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- the plan: where the steps, episodes, checkpoints and epochs go -------- */

enum phase_id { PH_DATA, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, NPH };

/* names and their run-wide ids (1..5), as the sink numbers them */
static const char *const event_names[] = {"data",      "forward", "backward",
                                          "optimizer", "step",    "dataloader.worker"};
#define NAME_STEP   5
#define NAME_WORKER 6

/* Shares of a nominal step: the time before the data phase (the previous
 * optimizer's end to the next fetch: zero_grad, logging), the phases, and the
 * three gaps between them. They add up to 1. */
#define SHARE_LEAD 0.006
#define SHARE_GAP  0.008
static const double phase_share[NPH] = {0.05, 0.28, 0.54, 0.10};
static const double phase_sigma[NPH] = {0.15, 0.02, 0.02, 0.05};

enum episode_kind {
    EP_IO,      /* the data set's disk slows down: data loading stalls */
    EP_CPU,     /* another process takes the spare cores: CPU contention */
    EP_THERMAL, /* one GPU throttles for heat; the others wait for it */
    EP_MEMORY,  /* the host runs short of memory: swap-in */
};

struct episode {
    enum episode_kind kind;
    uint32_t first, last; /* steps first..last */
    double strength;      /* the data phase's factor (I/O); 1 otherwise */
    int gpu;              /* EP_THERMAL: the hot GPU */
};

struct plan {
    int64_t interval_ns;
    int64_t frames; /* frames 0..frames-1; the last at (frames-1) * interval */
    int64_t steps_start_ns, steps_span_ns;
    uint32_t steps;
    double period_ns;   /* the nominal step length, episodes aside */
    int64_t ckpt_ns;    /* a checkpoint's pause, before the step's data phase */
    int64_t ckpt_every; /* steps between checkpoints; 0 none */
    int64_t startup_ns; /* the workers' restart, inside an epoch's first data phase */
    struct episode ep[MAX_EPISODES];
    int nep;
};

/* The factor of each part of step k (lead, phases) and its fixed extra. */
struct step_shape {
    double lead, mult[NPH];
    int64_t extra_lead_ns, extra_data_ns;
    int episode; /* index in plan.ep, -1 none */
    int ckpt, epoch;
};

static void shape_of(const struct plan *p, uint32_t k, int ep, struct step_shape *s)
{
    s->lead = 1;
    for (int i = 0; i < NPH; i++)
        s->mult[i] = 1;
    s->extra_lead_ns = s->extra_data_ns = 0;
    s->episode = ep;
    /* no checkpoint in the last quarter interval: the run is about to save its last */
    s->ckpt =
        p->ckpt_every && k > 1 && (k - 1) % p->ckpt_every == 0 && k + p->ckpt_every / 4 <= p->steps;
    s->epoch = k > 1 && (k - 1) % EPOCH_STEPS == 0;
    if (s->ckpt)
        s->extra_lead_ns = p->ckpt_ns;
    if (s->epoch)
        s->extra_data_ns = p->startup_ns;
    if (ep < 0)
        return;
    const struct episode *e = &p->ep[ep];
    switch (e->kind) {
    case EP_IO:
        s->mult[PH_DATA] = e->strength;
        break;
    case EP_CPU:
        s->lead = 2;
        s->mult[PH_DATA] = 3;
        s->mult[PH_FORWARD] = 1.08;
        s->mult[PH_BACKWARD] = 1.02;
        s->mult[PH_OPTIMIZER] = 1.1;
        break;
    case EP_THERMAL:
        s->mult[PH_FORWARD] = s->mult[PH_BACKWARD] = 1.3;
        s->mult[PH_OPTIMIZER] = 1.1;
        break;
    case EP_MEMORY:
        s->lead = 1.5;
        s->mult[PH_DATA] = 2;
        break;
    }
}

/* Step k's nominal length is period * a + b. */
static double shape_a(const struct step_shape *s)
{
    double a = SHARE_LEAD * s->lead + 3 * SHARE_GAP;
    for (int i = 0; i < NPH; i++)
        a += phase_share[i] * s->mult[i];
    return a;
}

/* The episode step k is in, walking forward: *cursor is the next episode. */
static int episode_at(const struct plan *p, uint32_t k, int *cursor)
{
    while (*cursor < p->nep && p->ep[*cursor].last < k)
        (*cursor)++;
    return *cursor < p->nep && p->ep[*cursor].first <= k ? *cursor : -1;
}

static int plan_make(struct plan *p, double hours, double hz, uint32_t steps, struct rng *r)
{
    memset(p, 0, sizeof(*p));
    p->interval_ns = llround(1e9 / hz);
    int64_t span = llround(hours * 3600.0 * hz) * p->interval_ns;
    p->frames = span / p->interval_ns + 1;
    double span_s = (double)span / 1e9;
    int64_t init = llround(fmin(45.0, 0.05 * span_s) * 1e9);
    int64_t tail = llround(fmin(8.0, 0.02 * span_s) * 1e9);
    p->steps = steps;
    p->steps_start_ns = START_NS + init;
    p->steps_span_ns = span - init - tail;
    double p0 = (double)p->steps_span_ns / steps; /* the period without stalls */
    if (p0 < 1e6)
        return -EINVAL; /* steps under a millisecond: nothing a rule could see */
    p->ckpt_ns = llround(fmin(25e9, 0.01 * (double)span));
    p->ckpt_every = span_s >= 2 * CKPT_EVERY_S ? llround((double)steps * CKPT_EVERY_S / span_s) : 0;
    p->startup_ns = llround(fmin(4e9, 30 * p0));

    /* episodes: in 24 h three I/O stalls of about 6 minutes, 15 minutes of
     * CPU contention, 20 of a hot GPU, 5 of memory shortage; fewer and
     * shorter in a shorter run, each in a slot of its own (so they never
     * overlap), after the first 5 % of the steps */
    static const struct {
        enum episode_kind kind;
        double seconds;
    } kinds[] = {{EP_IO, 360},       {EP_CPU, 900},    {EP_IO, 240},
                 {EP_THERMAL, 1200}, {EP_MEMORY, 300}, {EP_IO, 420}};
    int n = (int)(sizeof(kinds) / sizeof(kinds[0]));
    if (hours < 24)
        n = (int)fmax(4, floor(n * hours / 24));
    if (n > (int)(steps / 200))
        n = (int)(steps / 200);
    uint32_t from = steps / 20, slot = n ? (steps - from) / (uint32_t)n : 0;
    for (int i = 0; i < n; i++) {
        struct episode *e = &p->ep[p->nep++];
        e->kind = kinds[i].kind;
        double len = fmin(kinds[i].seconds * 1e9 / p0, 0.4 * slot);
        uint32_t nsteps = (uint32_t)fmax(len, 20);
        uint32_t room = slot > nsteps ? slot - nsteps : 1;
        e->first = from + (uint32_t)i * slot + (uint32_t)(rnd(r) % room) + 1;
        e->last = e->first + nsteps - 1;
        e->strength = e->kind == EP_IO ? 8 + 6 * uni(r) : 1;
        e->gpu = (int)(rnd(r) % NGPUS);
    }

    /* the period that makes the nominal steps fill their span exactly */
    double sum_a = 0, sum_b = 0;
    int cursor = 0;
    for (uint32_t k = 1; k <= steps; k++) {
        struct step_shape s;
        shape_of(p, k, episode_at(p, k, &cursor), &s);
        sum_a += shape_a(&s);
        sum_b += (double)(s.extra_lead_ns + s.extra_data_ns);
    }
    p->period_ns = ((double)p->steps_span_ns - sum_b) / sum_a;
    return p->period_ns >= 0.5 * p0 ? 0 : -EINVAL;
}

/* ---- the series ------------------------------------------------------------ */

enum {
    H_CPU_UTIL,
    H_CPU_IOWAIT,
    H_MEM_USED,
    H_MEM_AVAIL,
    H_MEM_TOTAL,
    H_SWAPIN,
    H_PSI_CPU,
    H_PSI_MEM,
    H_PSI_IO,
    H_DISK_READ,
    H_DISK_WRITE,
    H_NET_RX,
    H_NET_TX,
    H_CG_USED,
    H_CG_LIMIT,
    H_CG_THROTTLED,
    H_PROC_CPU,
    H_PROC_RSS,
    H_PROC_THREADS,
    H_PROC_COUNT,
    H_COUNT
};

static const struct {
    const char *name, *labels, *unit;
} host_series[H_COUNT] = {
    [H_CPU_UTIL] = {"cpu.util", "", "pct"},
    [H_CPU_IOWAIT] = {"cpu.iowait", "", "pct"},
    [H_MEM_USED] = {"mem.used_bytes", "", "bytes"},
    [H_MEM_AVAIL] = {"mem.available_bytes", "", "bytes"},
    [H_MEM_TOTAL] = {"mem.total_bytes", "", "bytes"},
    [H_SWAPIN] = {"mem.swapin_per_s", "", "pages/s"},
    [H_PSI_CPU] = {"psi.cpu_some", "", "pct"},
    [H_PSI_MEM] = {"psi.mem_some", "", "pct"},
    [H_PSI_IO] = {"psi.io_some", "", "pct"},
    [H_DISK_READ] = {"disk.read_bytes_per_s", "dev=nvme0n1", "bytes/s"},
    [H_DISK_WRITE] = {"disk.write_bytes_per_s", "dev=nvme0n1", "bytes/s"},
    [H_NET_RX] = {"net.rx_bytes_per_s", "iface=eth0", "bytes/s"},
    [H_NET_TX] = {"net.tx_bytes_per_s", "iface=eth0", "bytes/s"},
    [H_CG_USED] = {"cgroup.mem_used_bytes", "", "bytes"},
    [H_CG_LIMIT] = {"cgroup.mem_limit_bytes", "", "bytes"},
    [H_CG_THROTTLED] = {"cgroup.throttled_pct", "", "pct"},
    [H_PROC_CPU] = {"proc.cpu", "", "pct"},
    [H_PROC_RSS] = {"proc.rss_bytes", "", "bytes"},
    [H_PROC_THREADS] = {"proc.threads", "", "count"},
    [H_PROC_COUNT] = {"proc.count", "", "count"},
};

enum { G_UTIL, G_MEM_UTIL, G_MEM_USED, G_MEM_TOTAL, G_SM_CLOCK, G_THROTTLE, G_COUNT };

static const struct {
    const char *name, *unit;
} gpu_series[G_COUNT] = {
    [G_UTIL] = {"gpu.util", "pct"},
    [G_MEM_UTIL] = {"gpu.mem_util", "pct"},
    [G_MEM_USED] = {"gpu.mem_used_bytes", "bytes"},
    [G_MEM_TOTAL] = {"gpu.mem_total_bytes", "bytes"},
    [G_SM_CLOCK] = {"gpu.sm_clock_mhz", "MHz"},
    [G_THROTTLE] = {"gpu.throttle_reasons", "mask"},
};

/* ---- the steps and their events ------------------------------------------- */

struct step_rec {
    int64_t start, end;         /* the step span */
    int64_t ph0[NPH], ph1[NPH]; /* its phases */
    int64_t ckpt0, ckpt1;       /* a checkpoint's pause, or 0, 0 */
    int episode, epoch;         /* the episode (-1 none); 1: the workers restart */
};

/* One thread's events not yet in a block, as the sink keeps them. */
struct ev_stream {
    int64_t pid;       /* = tid: single-threaded writers */
    struct event *buf; /* EVENT_BLOCK_EVENTS */
    uint32_t n;
    int64_t first_ns; /* when the block's first event arrived */
};

/* --job: the run is one node of a synthetic job of many (store/job.h) */
struct job_node {
    const char *job_id; /* NULL: a run of its own */
    const char *node;
    long long rank, world;
};

struct synth {
    struct plan plan;
    struct job_node job;
    uint32_t name_base; /* a node's event name ids lie apart */
    struct rng rng;
    struct store *store;
    char run_id[RUN_ID_LEN + 1];
    /* steps */
    uint32_t next_step; /* 1-based; steps + 1 when all are made */
    int ep_cursor;
    int64_t cursor_ns; /* the previous step's end */
    double drift_ns;   /* actual minus nominal time so far */
    struct step_rec ring[STEP_RING];
    uint32_t ring_head, ring_n;
    /* events: the main thread's stream, then one per worker (--worker-events) */
    struct event_encoder enc;
    struct ev_stream streams[1 + NWORKERS];
    int nstreams;
    uint32_t epoch; /* the workers' pids are those of this epoch */
    uint8_t *ev_out;
    size_t ev_out_cap;
    uint64_t events, event_blocks;
    /* series */
    struct series_table series;
    int64_t *series_ids;                                             /* store id per table index */
    uint32_t s_host[H_COUNT], s_core[NCORES], s_gpu[NGPUS][G_COUNT]; /* table indexes */
    uint32_t nprocs;                                                 /* --procs */
    uint32_t *s_proc; /* their proc.cpu's table indexes */
    /* what carries over from frame to frame */
    double mem_noise, rss_noise, cache_bytes;
    int64_t restart_ns; /* when the data-loader workers last (re)started */
};

static int ev_flush(struct synth *y, struct ev_stream *st)
{
    if (!st->n)
        return 0;
    size_t len;
    struct event_block_info info;
    int rc = event_block_encode(&y->enc, st->buf, st->n, y->ev_out, y->ev_out_cap, &len, &info);
    if (rc < 0)
        return rc;
    struct event_block_record b = {
        .pid = st->pid,
        .tid = st->pid,
        .start_ns = info.start_ns,
        .end_ns = info.end_ns,
        .step_min = info.step_min,
        .step_max = info.step_max,
        .count = info.count,
        .data = y->ev_out,
        .len = len,
    };
    rc = y->store->ops->event_block_insert(y->store, y->run_id, &b);
    y->events += st->n;
    y->event_blocks++;
    st->n = 0;
    return rc;
}

/* One event, sealing the block first as the sink would: full, or
 * EVENT_BLOCK_AGE_NS after its first event arrived (an event arrives when it
 * is complete: a span at its end). */
static int ev_put(struct synth *y, struct ev_stream *st, int64_t ts, int64_t value, uint32_t name,
                  uint32_t step, uint8_t kind)
{
    int64_t arrival = kind == STROBE_EV_COMPLETE ? ts + value : ts;
    int rc = 0;
    if (st->n == EVENT_BLOCK_EVENTS || (st->n && arrival - st->first_ns >= EVENT_BLOCK_AGE_NS))
        rc = ev_flush(y, st);
    if (!st->n)
        st->first_ns = arrival;
    st->buf[st->n++] = (struct event){ts, value, name ? y->name_base + name : 0, step, kind};
    return rc;
}

static int64_t jitter_ns(struct synth *y, double nominal, double sigma, double scale)
{
    return llround(nominal * scale * fmax(0.2, 1 + sigma * gauss(&y->rng)));
}

static int define_workers(struct synth *y)
{
    for (int w = 0; w < y->nstreams - 1; w++) {
        struct process_record proc = {
            .pid = y->streams[1 + w].pid,
            .ppid = JOB_PID,
            .comm = "python3",
            .role = "dataloader",
            .rank = -1,
            .local_rank = -1,
            .world_size = -1,
            .worker_id = w,
        };
        int rc = y->store->ops->process_upsert(y->store, y->run_id, &proc);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The batch step k consumes, made by worker k % N as the capture records it:
 * a dataloader.worker span that ends just before the data phase does, after
 * N steps' worth of the worker's share of the work. A new epoch starts new
 * worker processes (new pids), as a DataLoader without persistent workers
 * does; the sink seals a thread's block when the thread goes away. */
static int worker_batch(struct synth *y, const struct step_rec *r, uint32_t k, int epoch)
{
    int n = y->nstreams - 1, rc = 0;
    if (epoch) {
        y->epoch++;
        for (int w = 0; rc == 0 && w < n; w++) {
            rc = ev_flush(y, &y->streams[1 + w]);
            y->streams[1 + w].pid = JOB_PID + 1 + (int64_t)y->epoch * n + w;
        }
        if (rc == 0)
            rc = define_workers(y);
    }
    struct ev_stream *st = &y->streams[1 + k % (uint32_t)n];
    int64_t end = r->ph1[PH_DATA] - 150000 - (int64_t)(rnd(&y->rng) % 100000);
    double len =
        (double)n * (double)(r->end - r->start) * 0.4 * fmax(0.5, 1 + 0.1 * gauss(&y->rng));
    if (epoch) /* the first batch of an epoch: the worker has just started */
        len = (double)(end - r->ph0[PH_DATA]) * 0.6;
    int64_t start = end - (int64_t)len;
    if (rc == 0 && st->n && start < st->buf[st->n - 1].ts_ns + st->buf[st->n - 1].value)
        start = st->buf[st->n - 1].ts_ns + st->buf[st->n - 1].value + 20000; /* one at a time */
    if (rc == 0 && start < end)
        rc = ev_put(y, st, start, end - start, NAME_WORKER, 0, STROBE_EV_COMPLETE);
    return rc;
}

/* Make step next_step, append it to the ring, emit its events. */
static int step_make(struct synth *y)
{
    const struct plan *p = &y->plan;
    uint32_t k = y->next_step++;
    struct step_shape s;
    shape_of(p, k, episode_at(p, k, &y->ep_cursor), &s);
    double nominal = p->period_ns * shape_a(&s) + (double)(s.extra_lead_ns + s.extra_data_ns);
    /* pull the accumulated jitter back, a thousandth a step: the steps end
     * where the plan says, within a few tens of milliseconds */
    double scale = 1 - clampd(y->drift_ns / (1000 * nominal), -0.05, 0.05);
    double per = p->period_ns;
    int slow = uni(&y->rng) < 1e-4; /* a straggler: garbage collection, a page fault storm */

    struct step_rec *r = &y->ring[(y->ring_head + y->ring_n++) % STEP_RING];
    r->start = k == 1 ? p->steps_start_ns : y->cursor_ns;
    r->episode = s.episode;
    r->epoch = s.epoch;
    r->ckpt0 = r->ckpt1 = 0;
    int64_t t = r->start;
    if (s.ckpt) {
        r->ckpt0 = t + 50000;
        r->ckpt1 = r->ckpt0 + jitter_ns(y, (double)s.extra_lead_ns, 0.04, scale);
        t = r->ckpt1;
    }
    t += jitter_ns(y, per * SHARE_LEAD * s.lead, 0.3, scale);
    if (k == 1)
        t = r->start; /* the first step begins with its first phase */
    for (int i = 0; i < NPH; i++) {
        if (i)
            t += jitter_ns(y, per * SHARE_GAP, 0.3, scale);
        double d = per * phase_share[i] * s.mult[i];
        int64_t len = jitter_ns(y, d, phase_sigma[i], scale);
        if (i == PH_DATA && s.extra_data_ns)
            len += jitter_ns(y, (double)s.extra_data_ns, 0.15, scale);
        if (i == PH_BACKWARD && slow)
            len *= 3;
        r->ph0[i] = t;
        r->ph1[i] = t + len;
        t += len;
    }
    r->end = r->ph1[PH_OPTIMIZER]; /* the step ends when the optimizer's step returns */
    y->drift_ns += (double)(r->end - r->start) - nominal;
    y->cursor_ns = r->end;

    /* the events, as the sink stores them: the STEP marker once the step has
     * begun, each span at its end, the step span last */
    int64_t marker = r->start + 30000 + (int64_t)(rnd(&y->rng) % 10000);
    struct ev_stream *main_thread = &y->streams[0];
    int rc = ev_put(y, main_thread, marker, k, 0, k, STROBE_EV_STEP);
    for (int i = 0; rc == 0 && i < NPH; i++)
        rc = ev_put(y, main_thread, r->ph0[i], r->ph1[i] - r->ph0[i], (uint32_t)i + 1, k,
                    STROBE_EV_COMPLETE);
    if (rc == 0)
        rc = ev_put(y, main_thread, r->start, r->end - r->start, NAME_STEP, k, STROBE_EV_COMPLETE);
    if (rc == 0 && y->nstreams > 1)
        rc = worker_batch(y, r, k, s.epoch);
    return rc;
}

/* ---- the frames ----------------------------------------------------------- */

/* NVML's clocks-throttle reason bits */
#define THR_GPU_IDLE   0x1
#define THR_SW_POWER   0x4
#define THR_SW_THERMAL 0x20
#define THR_HW_THERMAL 0x40

/* What one interval (a, b] held, from the steps that overlap it. */
struct frame_mix {
    double data, compute, ckpt, ckpt_write; /* shares of the interval */
    int stage;                              /* 0 initialising, 1 training, 2 after the last step */
    int episode;                            /* the episode of the latest step, -1 none */
    int hot_gpu;                            /* EP_THERMAL's GPU, -1 none */
};

static double overlap(int64_t a, int64_t b, int64_t x0, int64_t x1)
{
    int64_t lo = a > x0 ? a : x0, hi = b < x1 ? b : x1;
    return hi > lo ? (double)(hi - lo) : 0.0;
}

static int frame_mix_of(struct synth *y, int64_t a, int64_t b, struct frame_mix *m)
{
    const struct plan *p = &y->plan;
    while (y->next_step <= p->steps && (!y->ring_n || y->cursor_ns < b)) {
        if (y->ring_n == STEP_RING)
            return -EOVERFLOW; /* more than STEP_RING steps in one interval */
        int rc = step_make(y);
        if (rc < 0)
            return rc;
    }
    memset(m, 0, sizeof(*m));
    m->episode = m->hot_gpu = -1;
    m->stage = b <= p->steps_start_ns ? 0 : y->next_step > p->steps && b > y->cursor_ns ? 2 : 1;
    double len = (double)(b - a);
    for (uint32_t i = 0; i < y->ring_n; i++) {
        const struct step_rec *r = &y->ring[(y->ring_head + i) % STEP_RING];
        if (r->start >= b)
            break;
        m->data += overlap(a, b, r->ph0[PH_DATA], r->ph1[PH_DATA]) / len;
        for (int ph = PH_FORWARD; ph < NPH; ph++)
            m->compute += overlap(a, b, r->ph0[ph], r->ph1[ph]) / len;
        if (r->ckpt1) {
            int64_t w0 = r->ckpt0 + (r->ckpt1 - r->ckpt0) * 45 / 100; /* serialised, then written */
            m->ckpt += overlap(a, b, r->ckpt0, r->ckpt1) / len;
            m->ckpt_write += overlap(a, b, w0, r->ckpt1) / len;
        }
        if (r->epoch && r->ph0[PH_DATA] < b && r->ph0[PH_DATA] > y->restart_ns)
            y->restart_ns = r->ph0[PH_DATA];
        m->episode = r->episode;
    }
    if (m->episode >= 0 && p->ep[m->episode].kind == EP_THERMAL)
        m->hot_gpu = p->ep[m->episode].gpu;
    /* steps that ended by a are done with */
    while (y->ring_n && y->ring[y->ring_head].end <= a) {
        y->ring_head = (y->ring_head + 1) % STEP_RING;
        y->ring_n--;
    }
    return 0;
}

/* a counter's change over the interval as a rate, as the collectors compute it */
static double per_s(int64_t delta, int64_t dt_ns)
{
    return (double)delta * 1e9 / (double)dt_ns;
}

static double share_pct(int64_t part, int64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int64_t pages(double bytes)
{
    return (int64_t)(bytes / PAGE) * PAGE;
}

static void put(struct synth *y, uint32_t index, double v)
{
    series_put(&y->series, index, v);
}

/* Worker w's RSS and whether it runs, restart_ns ago they were started. */
static double worker_rss(const struct synth *y, int w, int64_t t, int *alive)
{
    double since = (double)(t - y->restart_ns) / 1e9 - 0.2 - 0.05 * w;
    *alive = since > 0;
    if (since <= 0)
        return 0;
    return 1.5 * GiB * fmin(1, since / 2) + 0.4 * GiB * fmin(1, since / 600);
}

/* Frame f: every series' value at its time t, for the interval (t - iv, t]. */
static int frame(struct synth *y, int64_t f)
{
    const struct plan *p = &y->plan;
    struct rng *r = &y->rng;
    int64_t iv = p->interval_ns, t = START_NS + f * iv;
    struct frame_mix m;
    int rc = frame_mix_of(y, t - iv, t, &m);
    if (rc < 0)
        return rc;
    y->series.now_ns = t;
    const struct episode *ep = m.episode >= 0 ? &p->ep[m.episode] : NULL;
    int io = ep && ep->kind == EP_IO, cpu = ep && ep->kind == EP_CPU;
    int squeeze = ep && ep->kind == EP_MEMORY;
    double init_done =
        clampd((double)(t - START_NS) / (double)(p->steps_start_ns - START_NS), 0, 1);
    double progress =
        clampd((double)(t - p->steps_start_ns) / (double)p->steps_span_ns, 0, 1); /* of training */
    double idle = clampd(1 - m.data - m.compute - m.ckpt, 0, 1);
    if (m.stage == 0 && init_done > 0.9 && y->restart_ns < START_NS)
        y->restart_ns = t; /* the workers of the first epoch */

    /* ---- the job's processes: workers, RSS, threads */
    int alive = 0;
    double rss_workers = 0;
    for (int w = 0; w < NWORKERS; w++) {
        int up;
        double rss = m.stage == 2 || y->restart_ns < START_NS ? 0 : worker_rss(y, w, t, &up);
        if (rss > 0) {
            rss_workers += rss;
            alive += up;
        }
    }
    y->rss_noise = 0.9 * y->rss_noise + 24 * MiB * gauss(r);
    double rss_main = m.stage == 0 ? 0.4 * GiB + 25.6 * GiB * init_done * init_done
                                   : 26 * GiB + 2.9 * GiB * progress + 0.5 * GiB * m.ckpt;
    rss_main += y->rss_noise;
    double rss = rss_main + rss_workers;
    /* the main process (CUDA's threads once it is initialised), 3 a worker, the
     * pin-memory thread, 2 writing a checkpoint, now and then a short-lived one */
    int64_t threads = (m.stage == 0 && init_done < 0.3 ? 12 : 72) + 3 * alive + (alive ? 1 : 0) +
                      (m.ckpt > 0 ? 2 : 0) + (uni(r) < 0.01 ? 1 : 0);

    /* ---- the cores: ticks of this interval, as /proc/stat counts them */
    double ticks_nominal = USER_HZ * (double)iv / 1e9;
    double busy_p[NCORES], wait_p[NCORES];
    for (int c = 0; c < NCORES; c++) {
        busy_p[c] = (c == 0 ? 0.05 : 0.015) + 0.01 * uni(r); /* irqs, kernel threads, agents */
        wait_p[c] = 0;
    }
    if (m.stage == 0)
        busy_p[CORE_MAIN] = init_done < 0.7 ? 1.0 : 0.9;
    else if (m.stage == 1)
        busy_p[CORE_MAIN] = m.compute * 0.97 + m.data * (cpu ? 0.8 : 0.5) + m.ckpt + idle * 0.8;
    else
        busy_p[CORE_MAIN] = 0.6;
    for (int w = 0; w < NWORKERS; w++) {
        int up;
        if (m.stage == 2 || y->restart_ns < START_NS || worker_rss(y, w, t, &up) <= 0 || !up)
            continue;
        double age = (double)(t - y->restart_ns) / 1e9;
        int c = 4 + w;
        if (age < 1.5)
            busy_p[c] = 1.0; /* importing torch, opening the data set */
        else if (io) {
            busy_p[c] = 0.06;
            wait_p[c] = 0.5;
        } else if (cpu)
            busy_p[c] = 0.7;
        else
            busy_p[c] = 0.36 + (squeeze ? 0.1 : 0);
        if (squeeze)
            wait_p[c] += 0.1;
    }
    if (alive)
        busy_p[CORE_PIN] = 0.08 + 0.02 * uni(r);
    if (m.ckpt_write > 0)
        wait_p[CORE_MAIN] = 0.3 * m.ckpt_write;
    if (cpu)
        for (int c = 13; c < NCORES; c++)
            busy_p[c] = 0.97;
    int64_t all = 0, busy = 0, wait = 0, job_ticks = 0;
    for (int c = 0; c < NCORES; c++) {
        int64_t n = llround(ticks_nominal);
        double u = uni(r);
        n += u < 0.015 ? -1 : u > 0.985 ? 1 : 0; /* the tick falls either side of a deadline */
        int64_t b = sround(r, (double)n * clampd(busy_p[c], 0, 1));
        if (b > n)
            b = n;
        int64_t w = sround(r, (double)n * wait_p[c]);
        if (w > n - b)
            w = n - b;
        all += n;
        busy += b;
        wait += w;
        if (c >= CORE_MAIN && c <= CORE_PIN)
            job_ticks += b;
        if (f)
            put(y, y->s_core[c], share_pct(b, n));
    }

    /* ---- disk, network, pressure: counters of this interval */
    double read_bps = 0, write_bps = 0;
    if (m.stage == 0)
        read_bps = init_done < 0.4 ? 1.6e9 : 5e7;
    else if (m.stage == 1)
        read_bps =
            io ? 5.5e7 * (1 + 0.3 * gauss(r)) : 3.3e8 * alive / NWORKERS * (1 + 0.35 * gauss(r));
    write_bps = m.ckpt_write * 1.9e9;
    double dt_s = (double)iv / 1e9;
    /* reads in requests of 256 KiB, a few small ones for metadata */
    int64_t rd_sectors = sround(r, read_bps * dt_s / 262144) * 512 + (uni(r) < 0.2 ? 8 : 0);
    int64_t wr_sectors = sround(r, write_bps * dt_s / 1048576) * 2048 +
                         (uni(r) < 0.25 ? 8 * (1 + (int64_t)(rnd(r) % 5)) : 0); /* logs */
    int64_t rx = (int64_t)fmax(0, (12000 + 8000 * gauss(r)) * dt_s);
    int64_t tx = (int64_t)fmax(0, (35000 + 15000 * gauss(r)) * dt_s);
    if ((t / NS_PER_S) % 30 == 0)
        tx += 400000 / (int64_t)(1 / dt_s + 0.5) + (int64_t)(rnd(r) % 4096); /* metrics upload */
    /* stall µs in 100 ms; with cores to spare a task rarely waits for one */
    double psi_cpu = m.stage == 0    ? 1500 + 500 * gauss(r)
                     : cpu           ? 38000 + 9000 * gauss(r)
                     : uni(r) < 0.35 ? 50 + 900 * uni(r)
                                     : 0;
    double psi_mem = squeeze ? 9000 + 5000 * gauss(r) : uni(r) < 0.002 ? 50 + 450 * uni(r) : 0;
    double psi_io = m.stage == 0 && init_done < 0.4 ? 8000 + 3000 * gauss(r)
                    : io                            ? 60000 + 12000 * gauss(r)
                    : m.data > 0 && uni(r) < 0.4    ? 100 + 600 * uni(r)
                                                    : 0;
    psi_io += 15000 * m.ckpt_write;
    double us_per_interval = (double)iv / 1000;
    int64_t swap_pages = squeeze ? sround(r, fmax(0, 40 + 30 * gauss(r)) * dt_s * 10) : 0;
    int64_t throttled_ns = cpu ? (int64_t)(fmax(0, 0.12 + 0.06 * gauss(r)) * (double)iv) : 0;

    if (f) {
        put(y, y->s_host[H_CPU_UTIL], share_pct(busy, all));
        put(y, y->s_host[H_CPU_IOWAIT], share_pct(wait, all));
        put(y, y->s_host[H_SWAPIN], per_s(swap_pages, iv));
        put(y, y->s_host[H_PSI_CPU],
            per_s((int64_t)clampd(psi_cpu * dt_s * 10, 0, us_per_interval), iv) / 1e4);
        put(y, y->s_host[H_PSI_MEM],
            per_s((int64_t)clampd(psi_mem * dt_s * 10, 0, us_per_interval), iv) / 1e4);
        put(y, y->s_host[H_PSI_IO],
            per_s((int64_t)clampd(psi_io * dt_s * 10, 0, us_per_interval), iv) / 1e4);
        put(y, y->s_host[H_DISK_READ], per_s(rd_sectors * 512, iv));
        put(y, y->s_host[H_DISK_WRITE], per_s(wr_sectors * 512, iv));
        put(y, y->s_host[H_NET_RX], per_s(rx, iv));
        put(y, y->s_host[H_NET_TX], per_s(tx, iv));
        put(y, y->s_host[H_CG_THROTTLED], per_s(throttled_ns, iv) / 1e7);
        put(y, y->s_host[H_PROC_CPU], per_s(job_ticks * (NS_PER_S / USER_HZ), iv) * 100 / 1e9);
        for (uint32_t k = 0; k < y->nprocs; k++)
            put(y, y->s_proc[k], (double)(k + 1) / 100);
    }

    /* ---- memory: host and cgroup gauges */
    y->mem_noise = 0.9 * y->mem_noise + 6 * MiB * gauss(r);
    double shm = alive ? 2 * GiB : 0; /* the loader's shared-memory batches */
    double used = 9.3 * GiB + rss + shm + y->mem_noise;
    if (squeeze)
        used = (double)MEM_TOTAL_BYTES - 7 * GiB + 512 * MiB * gauss(r);
    int64_t avail_kb = (int64_t)(((double)MEM_TOTAL_BYTES - used) / 1024);
    avail_kb -= avail_kb % 4;
    y->cache_bytes += (double)(rd_sectors * 512) * 0.9 + (double)(wr_sectors * 512);
    /* the data set is streamed, read once an epoch: its pages age out of the cache
     * long before the cgroup's limit */
    double cache_cap = 120.0 * GiB;
    if (y->cache_bytes > cache_cap)
        y->cache_bytes = cache_cap - 64 * MiB * uni(r); /* reclaimed */
    put(y, y->s_host[H_MEM_TOTAL], (double)MEM_TOTAL_BYTES);
    put(y, y->s_host[H_MEM_USED], (double)(MEM_TOTAL_BYTES - avail_kb * 1024));
    put(y, y->s_host[H_MEM_AVAIL], (double)(avail_kb * 1024));
    put(y, y->s_host[H_CG_USED], (double)pages(rss + shm + y->cache_bytes));
    put(y, y->s_host[H_CG_LIMIT], (double)CG_LIMIT_BYTES);
    put(y, y->s_host[H_PROC_RSS], (double)pages(rss));
    put(y, y->s_host[H_PROC_THREADS], (double)threads);
    put(y, y->s_host[H_PROC_COUNT], (double)(1 + alive));

    /* ---- the GPUs: NVML's integers */
    for (int g = 0; g < NGPUS; g++) {
        double eff = g == 0 ? 1.0 : 0.985 + 0.002 * g; /* GPU 0 gathers the outputs */
        if (m.hot_gpu >= 0)
            eff = g == m.hot_gpu ? 1.0 : 1 / 1.3; /* the others wait for the hot one */
        double util =
            m.stage == 1 ? clampd(round(100 * m.compute * eff + 1.5 * gauss(r)), 0, 100) : 0;
        double mem_util = util > 0 ? clampd(round(util * 0.42 + 2 * gauss(r)), 0, 100) : 0;
        double mem = 0.55 * GiB; /* the driver's reservation */
        if (m.stage > 0 || init_done > 0.3)
            mem += 0.5 * GiB; /* the CUDA context */
        if (m.stage > 0 || init_done > 0.6) {
            double base = (g == 0 ? 63.0 : 61.3) * GiB * (m.stage ? 1 : (init_done - 0.6) / 0.4);
            double drift = 1.2 * GiB * progress + (progress > 0.4 ? 768 * MiB : 0);
            mem += base + drift + (g == 0 && m.ckpt > 0 ? 512.0 * MiB : 0);
        }
        mem = floor(mem / (2 * MiB)) * 2 * MiB;
        double clock = 1980;
        int64_t thr = 0;
        if (m.stage != 1) {
            clock = 345;
            thr = THR_GPU_IDLE;
        } else if (g == m.hot_gpu) {
            clock = 1245 + 15 * (double)(rnd(r) % 13);
            thr = THR_SW_THERMAL | THR_HW_THERMAL | (uni(r) < 0.2 ? THR_SW_POWER : 0);
        } else if (util > 90 && uni(r) < 0.03) { /* brushing the power limit */
            clock = 1980 - 15 * (double)(1 + rnd(r) % 12);
            thr = THR_SW_POWER;
        } else if (util < 5) {
            thr = THR_GPU_IDLE;
        }
        put(y, y->s_gpu[g][G_UTIL], util);
        put(y, y->s_gpu[g][G_MEM_UTIL], mem_util);
        put(y, y->s_gpu[g][G_MEM_USED], mem);
        put(y, y->s_gpu[g][G_MEM_TOTAL], (double)GPU_MEM_TOTAL);
        put(y, y->s_gpu[g][G_SM_CLOCK], clock);
        put(y, y->s_gpu[g][G_THROTTLE], (double)thr);
    }
    return 0;
}

/* ---- the store ------------------------------------------------------------ */

static int define_series(struct synth *y)
{
    struct series_table *t = &y->series;
    char labels[32];
    int rc = 0;
    for (int i = 0; rc == 0 && i < H_COUNT; i++) {
        rc = series_get(t, host_series[i].name, host_series[i].labels, host_series[i].unit,
                        &y->s_host[i]);
        if (rc == 0 && i == H_CPU_IOWAIT)
            for (int c = 0; rc == 0 && c < NCORES; c++) {
                snprintf(labels, sizeof(labels), "core=%d", c);
                rc = series_get(t, "cpu.util", labels, "pct", &y->s_core[c]);
            }
    }
    for (int g = 0; rc == 0 && g < NGPUS; g++)
        for (int i = 0; rc == 0 && i < G_COUNT; i++) {
            snprintf(labels, sizeof(labels), "gpu=%d", g);
            rc = series_get(t, gpu_series[i].name, labels, gpu_series[i].unit, &y->s_gpu[g][i]);
        }
    if (rc == 0 && y->nprocs && !(y->s_proc = calloc(y->nprocs, sizeof(*y->s_proc))))
        rc = -ENOMEM;
    for (uint32_t k = 0; rc == 0 && k < y->nprocs; k++) {
        char meta[128];
        snprintf(labels, sizeof(labels), "pid=%u", 100000 + k);
        rc = series_get(t, "proc.cpu", labels, "pct", &y->s_proc[k]);
        snprintf(meta, sizeof(meta), "{\"pid\":%u,\"ppid\":%d,\"comm\":\"filler\",\"root\":false}",
                 100000 + k, JOB_PID);
        if (rc == 0)
            series_set_meta(t, y->s_proc[k], meta);
    }
    if (rc < 0)
        return rc;
    series_set_meta(t, y->s_host[H_CG_USED],
                    "{\"memory\":\"v2\",\"cpu\":\"v2\",\"path\":\"/system.slice/train.service\"}");
    for (int g = 0; g < NGPUS; g++) {
        char meta[512];
        snprintf(meta, sizeof(meta),
                 "{\"index\":%d,\"name\":\"NVIDIA H100 80GB HBM3\",\"uuid\":\"GPU-5f3c2a1e-"
                 "8d4b-4c6a-9e21-%012llx\",\"memory_total_bytes\":%lld,\"driver\":\"550.90.07\","
                 "\"cuda_index\":%d,\"cuda_visible_devices\":null,\"mig_mode\":0,\"mig\":[]}",
                 g, 0x3b7f00a41c20ull + (unsigned long long)g, (long long)GPU_MEM_TOTAL, g);
        series_set_meta(t, y->s_gpu[g][G_MEM_TOTAL], meta);
    }
    if (!(y->series_ids = calloc(t->count, sizeof(*y->series_ids))))
        return -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < t->count; i++) {
        const struct series *s = &t->items[i];
        rc = y->store->ops->series_insert(y->store, y->run_id, s->name, s->labels, s->unit, s->meta,
                                          &y->series_ids[i]);
    }
    return rc;
}

/* Upsert every sealed block, as the writer does, and give the buffers back. */
static int flush_blocks(struct synth *y)
{
    struct series_table *t = &y->series;
    for (uint32_t i = 0; i < t->count; i++) {
        struct series *s = &t->items[i];
        if (!s->sealed)
            continue;
        for (const struct sealed_block *b = s->sealed; b; b = b->next) {
            int rc =
                y->store->ops->block_upsert(y->store, y->series_ids[i], &b->st, b->data, b->len);
            if (rc < 0)
                return rc;
        }
        series_release_sealed(t, i, s->sealed_tail);
    }
    return 0;
}

static int define_events(struct synth *y)
{
    struct store *s = y->store;
    int rc = 0;
    int names = y->nstreams > 1 ? NAME_WORKER : NAME_STEP;
    for (int i = 0; rc == 0 && i < names; i++)
        rc = s->ops->event_name_insert(s, y->run_id, y->name_base + i + 1, event_names[i]);
    struct process_record proc = {
        .pid = JOB_PID,
        .ppid = JOB_PID - 1,
        .comm = "python3",
        .role = "rank",
        .rank = y->job.job_id ? y->job.rank : 0,
        .local_rank = 0,
        .world_size = y->job.job_id ? y->job.world : 1,
        .worker_id = -1,
    };
    if (rc == 0)
        rc = s->ops->process_upsert(s, y->run_id, &proc);
    if (rc == 0)
        rc = define_workers(y);
    return rc;
}

static void fill_run(struct synth *y, struct run_record *run, const char *name, uint64_t seed)
{
    const struct plan *p = &y->plan;
    runinfo_new_id(run->id); /* random, as a recorder's: the same seed twice makes two runs */
    run->name = strdup(name);
    run->experiment = strdup("bench");
    run->command_json = strdup("[\"python3\",\"train.py\",\"--config\",\"vit_l16.yaml\"]");
    run->cwd = strdup("/home/train/vit");
    run->user = strdup("train");
    run->host = strdup("gpu-node-07");
    run->kernel = strdup("6.8.0-1015-aws");
    run->cpu_model = strdup("AMD EPYC 7R13 Processor");
    run->cpu_count = NCORES;
    run->mem_total_bytes = MEM_TOTAL_BYTES;
    run->start_ns = START_NS;
    run->exit_code = -1;
    snprintf(run->status, sizeof(run->status), "%s", RUN_RUNNING);
    run->git_commit = strdup("4f1d2c9b7a8e6f5d3c2b1a09f8e7d6c5b4a39281");
    run->git_dirty = 0;
    run->python_version = strdup("3.11.9");
    run->torch_version = strdup("2.3.1+cu121");
    run->interval_ns = p->interval_ns;
    run->recorder_pid = JOB_PID - 1;
    run->strobe_version = strdup(STROBE_VERSION);
    char v[32];
    snprintf(v, sizeof(v), "%llu", (unsigned long long)seed);
    kv_list_add(&run->params, "synthetic.seed", v);
    memcpy(y->run_id, run->id, sizeof(y->run_id));
}

/* With --job: the job's row, made by its first node (store/job.h), and
 * this node's place under it. */
static int join_job(struct synth *y, struct run_record *run)
{
    struct store *s = y->store;
    struct run_record job;
    if (store_resolve_run(s, y->job.job_id, &job) == 0) {
        run_record_release(&job);
    } else {
        if (run_record_copy(&job, run) < 0)
            return -ENOMEM;
        snprintf(job.id, sizeof(job.id), "%s", y->job.job_id);
        free(job.host);
        job.host = NULL;
        job.join_key = strdup("bench:synthetic-job");
        snprintf(job.status, sizeof(job.status), "%s", RUN_FINISHED);
        job.exit_code = 0;
        job.end_ns = run->start_ns + (y->plan.frames - 1) * y->plan.interval_ns + 37000000;
        job.last_ns = job.end_ns;
        int rc = s->ops->run_insert(s, &job);
        run_record_release(&job);
        if (rc < 0)
            return rc;
    }
    run->parent_id = strdup(y->job.job_id);
    run->node = strdup(y->job.node);
    y->name_base = (uint32_t)y->job.rank * JOB_NAME_IDS;
    return run->parent_id && run->node ? 0 : -ENOMEM;
}

static long long file_bytes(const char *path)
{
    struct stat st;
    char wal[4096];
    long long n = stat(path, &st) == 0 ? (long long)st.st_size : 0;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (stat(wal, &st) == 0)
        n += (long long)st.st_size;
    return n;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: rules_synth --store PATH [--hours 24] [--hz 10] [--steps 1000000] "
                    "[--seed N] [--name synthetic-24h] [--worker-events] [--procs N]\n"
                    "                   [--job ID --node NAME --rank K --world N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *store_path = NULL, *name = "synthetic-24h";
    double hours = 24, hz = 10;
    long long steps = 1000000;
    unsigned long long seed = 1;
    int worker_events = 0;
    long long procs = 0;
    struct job_node job = {NULL, "node-0", 0, 1};
    static const struct option longopts[] = {
        {"store", required_argument, NULL, 'S'},
        {"hours", required_argument, NULL, 'H'},
        {"hz", required_argument, NULL, 'z'},
        {"steps", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"name", required_argument, NULL, 'N'},
        {"worker-events", no_argument, NULL, 'w'},
        {"procs", required_argument, NULL, 'p'}, /* N more processes */
        {"job", required_argument, NULL, 'j'},   /* the run is a node of job ID */
        {"node", required_argument, NULL, 'o'},
        {"rank", required_argument, NULL, 'r'},
        {"world", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (opt) {
        case 'S':
            store_path = optarg;
            break;
        case 'H':
            hours = strtod(optarg, &end);
            break;
        case 'z':
            hz = strtod(optarg, &end);
            break;
        case 'n':
            steps = strtoll(optarg, &end, 10);
            break;
        case 's':
            seed = strtoull(optarg, &end, 10);
            break;
        case 'N':
            name = optarg;
            break;
        case 'w':
            worker_events = 1;
            break;
        case 'p':
            procs = strtoll(optarg, &end, 10);
            break;
        case 'j':
            job.job_id = optarg;
            break;
        case 'o':
            job.node = optarg;
            break;
        case 'r':
            job.rank = strtoll(optarg, &end, 10);
            break;
        case 'W':
            job.world = strtoll(optarg, &end, 10);
            break;
        default:
            usage();
        }
        if (end && *end)
            usage();
    }
    if (!store_path || optind != argc || !(hours > 0 && hours <= 24 * 31) ||
        !(hz > 0 && hz <= 1000) || steps < 1 || steps > UINT32_MAX / 2 || procs < 0 ||
        procs > 1000000 || (job.job_id && strlen(job.job_id) != RUN_ID_LEN) || job.rank < 0 ||
        job.world < 1 || job.rank >= job.world || job.world > 1000000)
        usage();

    double t0 = mono_s();
    struct synth *y = calloc(1, sizeof(*y));
    if (!y)
        return 1;
    y->job = job;
    rng_init(&y->rng, seed);
    if (plan_make(&y->plan, hours, hz, (uint32_t)steps, &y->rng) < 0) {
        fprintf(stderr, "rules_synth: %lld steps do not fit in %g hours\n", steps, hours);
        free(y);
        return 2;
    }
    y->next_step = 1;
    y->ep_cursor = 0;
    y->restart_ns = INT64_MIN;
    y->nstreams = 1 + (worker_events ? NWORKERS : 0);
    y->nprocs = (uint32_t)procs;
    for (int i = 0; i < y->nstreams; i++) {
        y->streams[i].pid = JOB_PID + i;
        if (!(y->streams[i].buf = malloc(EVENT_BLOCK_EVENTS * sizeof(struct event))))
            return 1;
    }
    y->ev_out_cap = event_block_bound(EVENT_BLOCK_EVENTS);
    y->ev_out = malloc(y->ev_out_cap);
    if (!y->ev_out || event_encoder_init(&y->enc) < 0 || series_table_init(&y->series) < 0)
        return 1;

    struct strbuf err;
    strbuf_init(&err);
    if (store_open(store_path, 0, &y->store, &err) < 0) {
        fprintf(stderr, "rules_synth: %s\n", err.buf);
        return 1;
    }
    struct store *s = y->store;
    struct run_record run;
    run_record_init(&run);
    fill_run(y, &run, name, seed);
    int rc = s->ops->begin(s);
    if (rc == 0 && job.job_id)
        rc = join_job(y, &run);
    if (rc == 0)
        rc = s->ops->run_insert(s, &run);
    if (rc == 0)
        rc = define_series(y);
    if (rc == 0)
        rc = define_events(y);
    /* one transaction per simulated hour, 10-20 MB each */
    int64_t per_tx = llround(3600 * hz);
    for (int64_t f = 0; rc == 0 && f < y->plan.frames; f++) {
        rc = frame(y, f);
        if (rc == 0 && f % 64 == 63)
            rc = flush_blocks(y);
        if (rc == 0 && f % per_tx == per_tx - 1) {
            rc = s->ops->commit(s);
            if (rc == 0)
                rc = s->ops->begin(s);
        }
    }
    while (rc == 0 && y->next_step <= y->plan.steps) { /* none left, unless the plan is off */
        y->ring_n = 0;
        rc = step_make(y);
    }
    for (int i = 0; rc == 0 && i < y->nstreams; i++)
        rc = ev_flush(y, &y->streams[i]);
    series_seal_all(&y->series);
    if (rc == 0)
        rc = flush_blocks(y);
    int64_t last_ns = START_NS + (y->plan.frames - 1) * y->plan.interval_ns;
    run.last_ns = last_ns;
    run.end_ns = last_ns + 37000000; /* the recorder ends after its last frame */
    run.exit_code = 0;
    snprintf(run.status, sizeof(run.status), "%s", RUN_FINISHED);
    run.samples = y->plan.frames;
    run.points = (int64_t)y->series.points;
    run.events = (int64_t)y->events;
    if (rc == 0)
        rc = s->ops->run_update(s, &run);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0) {
        fprintf(stderr, "rules_synth: cannot write the run: %s\n",
                s->err.len ? s->err.buf : strerror(-rc));
        s->ops->rollback(s);
        return 1;
    }
    int late = y->cursor_ns > last_ns;
    store_close(s);
    printf("{\"run\":\"%s\",\"name\":\"%s\",\"hours\":%g,\"hz\":%g,\"series\":%u,\"samples\":%lld,"
           "\"points\":%llu,\"steps\":%u,\"events\":%llu,\"event_blocks\":%llu,"
           "\"period_ms\":%.3f,\"drift_ms\":%.3f,\"last_step_end_s\":%.3f,\"store_bytes\":%lld,"
           "\"seconds\":%.2f}\n",
           run.id, name, hours, hz, y->series.count, (long long)y->plan.frames,
           (unsigned long long)y->series.points, y->plan.steps, (unsigned long long)y->events,
           (unsigned long long)y->event_blocks, y->plan.period_ns / 1e6, y->drift_ns / 1e6,
           (double)(y->cursor_ns - START_NS) / 1e9, file_bytes(store_path), mono_s() - t0);
    if (late)
        fprintf(stderr, "rules_synth: warning: the last step ends after the last frame\n");
    run_record_release(&run);
    strbuf_release(&err);
    series_table_release(&y->series);
    event_encoder_release(&y->enc);
    free(y->series_ids);
    free(y->s_proc);
    for (int i = 0; i < y->nstreams; i++)
        free(y->streams[i].buf);
    free(y->ev_out);
    free(y);
    return 0;
}
