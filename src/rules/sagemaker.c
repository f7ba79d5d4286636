/*
 * SageMaker Debugger's built-in profiler rules, with the names, parameters
 * and defaults its SDK sends (docs/rules.md
 * says where strobe reads them differently and why). Patience and windows
 * count datapoints, as SageMaker's do: a datapoint is one host snapshot (a
 * frame of the recorder, every --interval).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/json_writer.h"
#include "rules/rules_internal.h"

#define NPARAMS(a) ((uint32_t)(ARRAY_SIZE(a)))

/* ---- shared helpers ------------------------------------------------------------ */

int node_states_fit(void **arr, uint32_t *n, uint32_t want, size_t elem)
{
    if (want <= *n)
        return 0;
    void *p = realloc(*arr, want * elem);
    if (!p)
        return -ENOMEM;
    memset((char *)p + *n * elem, 0, (want - *n) * elem);
    *arr = p;
    *n = want;
    return 0;
}

/* The next GPU utilization series of w from *i on; NULL when none is left.
 * The engine keeps only GPU indexes below MAX_GPUS. */
static const struct rule_series *next_gpu_util(const struct rule_window *w, uint32_t *i)
{
    for (; *i < w->nseries; ++*i) {
        const struct rule_series *s = &w->series[*i];
        if (s->metric == RM_GPU_UTIL && s->index >= 0 && s->index < MAX_GPUS)
            return s;
    }
    return NULL;
}

void scope_name(char *out, size_t cap, const char *node, int64_t gpu)
{
    if (!*node)
        snprintf(out, cap, gpu >= 0 ? "gpu=%lld" : "node", (long long)gpu);
    else if (gpu >= 0)
        snprintf(out, cap, "node=%s,gpu=%lld", node, (long long)gpu);
    else
        snprintf(out, cap, "node=%s", node);
}

const struct rule_series *window_series_on(const struct rule_window *w, enum rule_metric m,
                                           int64_t index, uint32_t node_id)
{
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->metric == m && s->node_id == node_id && (index < 0 || s->index == index))
            return s;
    }
    return NULL;
}

const struct rule_series *window_host_series(const struct rule_window *w, enum rule_metric m,
                                             uint32_t node_id)
{
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->metric == m && s->node_id == node_id && s->index < 0)
            return s;
    }
    return NULL;
}

int series_value_at(const struct rule_series *s, uint32_t *pos, int64_t ts, double *out)
{
    if (!s)
        return 0;
    while (*pos < s->n && s->ts[*pos] <= ts + SNAPSHOT_NS)
        (*pos)++;
    if (!*pos)
        return 0;
    *out = s->v[*pos - 1];
    return isfinite(*out);
}

const struct rule_series *gpu_mem_series(const struct rule_window *w, uint32_t node_id, int64_t gpu,
                                         double *total, int *as_bytes)
{
    const struct rule_series *t = window_series_on(w, RM_GPU_MEM_TOTAL, gpu, node_id);
    if (t && t->n && t->v[t->n - 1] > 0)
        *total = t->v[t->n - 1];
    const struct rule_series *used = window_series_on(w, RM_GPU_MEM_USED, gpu, node_id);
    if (used && *total > 0) {
        *as_bytes = 1;
        return used;
    }
    *as_bytes = 0;
    return window_series_on(w, RM_GPU_MEM_UTIL, gpu, node_id);
}

static double gpu_mem_pct(double v, double total, int as_bytes)
{
    return as_bytes ? 100.0 * v / total : v;
}

static const char *events_or_null(const char *s)
{
    return *s ? s : NULL;
}

/* A whole-run verdict on what never came: n/a at the end of a run, but a run
 * still recording may yet bring it (offline over it, mid-run). */
static void not_yet(struct rule_ctx *c, const char *what)
{
    if (rules_run(c->eng)->running)
        rule_status(c, RULE_WAITING, "%s yet: the run is still recording", what);
    else
        rule_status(c, RULE_NA, "%s", what);
}

/* ---- CPUBottleneck and IOBottleneck: a snapshot join ---------------------------- */

struct bottleneck_node {
    uint64_t snapshots; /* seen, patience included */
    uint64_t datapoints, violations;
    double gpu_last[MAX_GPUS];
    uint8_t gpu_have[MAX_GPUS];
};

struct cursor { /* a series read in step with a node's snapshots */
    const struct rule_series *s;
    uint32_t pos;
};

struct bottleneck_state {
    struct bottleneck_node *node; /* by node id */
    uint32_t nnodes;
    struct cursor *cores; /* one node's cores in a window */
    uint32_t cores_cap;
};

static void bottleneck_release(void *p)
{
    struct bottleneck_state *st = p;
    free(st->node);
    free(st->cores);
}

/* The series of node id in w: its cores (into st->cores, as many as it has)
 * and its GPUs' utilization (one per index). The core count, or -ENOMEM. */
static int bottleneck_series(struct bottleneck_state *st, const struct rule_window *w, uint32_t id,
                             struct cursor *gpus, uint32_t *ngpus)
{
    uint32_t ncores = 0;
    *ngpus = 0;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->node_id != id)
            continue;
        if (s->metric == RM_CPU_CORE) {
            if (array_grow((void **)&st->cores, &st->cores_cap, ncores + 1, sizeof(*st->cores),
                           64) < 0)
                return -ENOMEM;
            st->cores[ncores++] = (struct cursor){s, 0};
        } else if (s->metric == RM_GPU_UTIL && *ngpus < MAX_GPUS && s->index >= 0 &&
                   s->index < MAX_GPUS) {
            gpus[(*ngpus)++] = (struct cursor){s, 0};
        }
    }
    return (int)ncores;
}

/* One node's snapshots of the window, judged; its busiest value (a core or
 * I/O wait) over the datapoints judged into *busiest. */
static void bottleneck_snapshots(const struct rule_ctx *c, const struct rule_window *w,
                                 struct bottleneck_state *st, uint32_t id, int io, double *busiest)
{
    double gpu_threshold = c->param[1], busy_threshold = c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    struct bottleneck_node *bn = &st->node[id];
    struct cursor gpus[MAX_GPUS];
    uint32_t ngpus;
    int ncores = bottleneck_series(st, w, id, gpus, &ngpus);
    const struct rule_series *snap = window_host_series(w, RM_CPU_UTIL, id);
    const struct rule_series *iow = window_host_series(w, RM_CPU_IOWAIT, id);
    uint32_t iopos = 0;
    *busiest = 0;
    for (uint32_t i = 0; snap && ncores >= 0 && i < snap->n; i++) {
        int64_t ts = snap->ts[i];
        bn->snapshots++;
        double busy = -1, v;
        if (io) {
            if (series_value_at(iow, &iopos, ts, &v))
                busy = v;
        } else {
            for (int j = 0; j < ncores; j++)
                if (series_value_at(st->cores[j].s, &st->cores[j].pos, ts, &v) && v > busy)
                    busy = v;
        }
        for (uint32_t j = 0; j < ngpus; j++)
            if (series_value_at(gpus[j].s, &gpus[j].pos, ts, &v)) {
                bn->gpu_last[gpus[j].s->index] = v;
                bn->gpu_have[gpus[j].s->index] = 1;
            }
        double low_gpu = INFINITY;
        for (int g = 0; g < MAX_GPUS; g++)
            if (bn->gpu_have[g] && bn->gpu_last[g] < low_gpu)
                low_gpu = bn->gpu_last[g];
        if (bn->snapshots <= patience || busy < 0 || !isfinite(low_gpu))
            continue;
        bn->datapoints++;
        if (low_gpu < gpu_threshold && busy > busy_threshold)
            bn->violations++;
        if (busy > *busiest)
            *busiest = busy;
    }
}

/* io: IOBottleneck (cpu.iowait against io_threshold) else CPUBottleneck
 * (the busiest core against cpu_threshold). Each node is judged on its own,
 * every node of the run. */
static void bottleneck_window(struct rule_ctx *c, const struct rule_window *w,
                              struct bottleneck_state *st, int io)
{
    double threshold = c->param[0], gpu_threshold = c->param[1], busy_threshold = c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    const char *missing = rules_gpu_util_missing(c->eng);
    if (missing) {
        rule_status(c, RULE_NA, "%s: the rule compares GPU and %s use", missing,
                    io ? "I/O" : "CPU");
        return;
    }
    if (node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    uint64_t datapoints = 0, violations = 0;
    for (uint32_t k = 0; k < w->nnodes; k++) {
        uint32_t id = w->nodes[k];
        struct bottleneck_node *bn = &st->node[id];
        uint64_t before = bn->violations;
        double busiest_p;
        bottleneck_snapshots(c, w, st, id, io, &busiest_p);
        if (bn->snapshots <= patience) {
            rule_status(c, RULE_WAITING, "patience: %llu of %llu snapshots",
                        (unsigned long long)bn->snapshots, (unsigned long long)patience);
            continue;
        }
        double share = bn->datapoints ? 100.0 * (double)bn->violations / (double)bn->datapoints : 0;
        if (bn->datapoints && share > threshold && bn->violations > before) {
            char scope[192], ev[512];
            scope_name(scope, sizeof(scope), rules_node_name(c->eng, id), -1);
            window_steps_text(w, -2, ev, sizeof(ev));
            rule_fire_range(c, w->t0, w->t1, scope, events_or_null(ev),
                            "in %.0f %% of %llu snapshots a GPU was below %g %% while %s was "
                            "above %g %% (the highest this window %.0f %%)",
                            share, (unsigned long long)bn->datapoints, gpu_threshold,
                            io ? "I/O wait" : "a CPU core", busy_threshold, busiest_p);
        } else {
            rule_status(c, RULE_OK, "%.0f %% of %llu snapshots (fires above %g %%)", share,
                        (unsigned long long)bn->datapoints, threshold);
        }
    }
    /* SageMaker's counts, over every node: the snapshots judged and the
     * bottlenecked ones (not the windows that fired, which rule_fire_range
     * counts) */
    for (uint32_t id = 0; id < st->nnodes; id++) {
        datapoints += st->node[id].datapoints;
        violations += st->node[id].violations;
    }
    c->result->datapoints = datapoints;
    c->result->violations = violations;
}

static void cpu_bottleneck_window(struct rule_ctx *c, const struct rule_window *w, void *st)
{
    bottleneck_window(c, w, st, 0);
}

static void io_bottleneck_window(struct rule_ctx *c, const struct rule_window *w, void *st)
{
    bottleneck_window(c, w, st, 1);
}

static const struct rule_param cpu_bottleneck_params[] = {
    {"threshold", 50, "pct of snapshots that must be bottlenecked", NULL, RP_PERCENT},
    {"gpu_threshold", 10, "pct: a GPU below this is starved", NULL, RP_PERCENT},
    {"cpu_threshold", 90, "pct: a core above this is saturated", NULL, RP_PERCENT},
    {"patience", 1000, "snapshots skipped at the start", NULL, RP_COUNT},
};

const struct rule_def rule_cpu_bottleneck = {
    "CPUBottleneck",
    "sagemaker",
    SEV_HIGH,
    cpu_bottleneck_params,
    NPARAMS(cpu_bottleneck_params),
    sizeof(struct bottleneck_state),
    bottleneck_release,
    cpu_bottleneck_window,
    NULL,
    "the CPU cannot feed the GPU: add data-loader workers or prefetching, and move "
    "preprocessing off the training loop (or onto the GPU)",
};

static const struct rule_param io_bottleneck_params[] = {
    {"threshold", 50, "pct of snapshots that must be bottlenecked", NULL, RP_PERCENT},
    {"gpu_threshold", 10, "pct: a GPU below this is starved", NULL, RP_PERCENT},
    {"io_threshold", 50, "pct: I/O wait above this", NULL, RP_PERCENT},
    {"patience", 1000, "snapshots skipped at the start", NULL, RP_COUNT},
};

const struct rule_def rule_io_bottleneck = {
    "IOBottleneck",
    "sagemaker",
    SEV_HIGH,
    io_bottleneck_params,
    NPARAMS(io_bottleneck_params),
    sizeof(struct bottleneck_state),
    bottleneck_release,
    io_bottleneck_window,
    NULL,
    "storage cannot feed the job: use a binary, sharded format (TFRecord, WebDataset), "
    "prefetch, or faster storage",
};

/* ---- per-GPU rolling windows: LowGPUUtilization, GPUMemoryIncrease ---------------- */

struct gpu_roll {
    uint64_t seen;
    struct roll util, mem;
    double mem_total;
    uint8_t used;
};

struct gpu_node {
    struct gpu_roll gpu[MAX_GPUS];
};

struct gpu_state {
    struct gpu_node *node; /* by node id */
    uint32_t nnodes;
    double *scratch;
    uint32_t scratch_cap;
};

static void gpu_state_release(void *p)
{
    struct gpu_state *st = p;
    for (uint32_t n = 0; n < st->nnodes; n++)
        for (uint32_t g = 0; g < MAX_GPUS; g++) {
            roll_release(&st->node[n].gpu[g].util);
            roll_release(&st->node[n].gpu[g].mem);
        }
    free(st->node);
    free(st->scratch);
}

/* The rolling windows of the GPU whose utilization series s is. */
static struct gpu_roll *gpu_roll_of(struct gpu_state *st, const struct rule_series *s)
{
    return &st->node[s->node_id].gpu[s->index];
}

static double *scratch_for(double **buf, uint32_t *cap, uint32_t n)
{
    if (n > *cap) {
        double *p = realloc(*buf, n * sizeof(*p));
        if (!p)
            return NULL;
        *buf = p;
        *cap = n;
    }
    return *buf;
}

static void low_gpu_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct gpu_state *st = p;
    double t95 = c->param[0], t5 = c->param[1];
    uint32_t window = c->param[2] < 1 ? 1 : (uint32_t)c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    if (rule_na_without_gpu_util(c))
        return;
    double *scratch = scratch_for(&st->scratch, &st->scratch_cap, window);
    if (!scratch ||
        node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    const struct rule_series *s;
    for (uint32_t i = 0; (s = next_gpu_util(w, &i)); i++) {
        struct gpu_roll *g = gpu_roll_of(st, s);
        if (!g->util.cap && roll_init(&g->util, window) < 0)
            continue;
        for (uint32_t k = 0; k < s->n; k++)
            if (isfinite(s->v[k]) && ++g->seen > patience)
                roll_push(&g->util, s->v[k]);
        c->result->datapoints = g->seen;
        if (g->util.n < window) {
            rule_status(c, RULE_WAITING, "%llu of %llu values (patience) + %u (window)",
                        (unsigned long long)g->seen, (unsigned long long)patience, window);
            continue;
        }
        double p95 = roll_quantile(&g->util, scratch, 0.95);
        double p5 = roll_quantile(&g->util, scratch, 0.05);
        double max = roll_max(&g->util);
        char scope[192];
        scope_name(scope, sizeof(scope), s->node, s->index);
        if (max <= 0)
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPU %lld unused: 0 %% over its last %u values", (long long)s->index,
                            window);
        else if (p95 < t95)
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPU %lld under-used: p95 utilization %.0f %% < %g %% over its "
                            "last %u values",
                            (long long)s->index, p95, t95, window);
        else if (p5 < t5)
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPU %lld fluctuating: p95 %.0f %% but p5 %.0f %% < %g %% over its "
                            "last %u values",
                            (long long)s->index, p95, p5, t5, window);
        else
            rule_status(c, RULE_OK, "p95 %.0f %%, p5 %.0f %%", p95, p5);
    }
}

static const struct rule_param low_gpu_params[] = {
    {"threshold_p95", 70, "pct: p95 below this is under-used", NULL, RP_PERCENT},
    {"threshold_p5", 10, "pct: p5 below this (with a high p95) is fluctuating", NULL, RP_PERCENT},
    {"window", 500, "values per judgement", NULL, RP_WINDOW},
    {"patience", 1000, "values skipped at the start", NULL, RP_COUNT},
};

const struct rule_def rule_low_gpu_utilization = {
    "LowGPUUtilization",
    "sagemaker",
    SEV_MEDIUM,
    low_gpu_params,
    NPARAMS(low_gpu_params),
    sizeof(struct gpu_state),
    gpu_state_release,
    low_gpu_window,
    NULL,
    "the GPU waits: look for a CPU or I/O bottleneck first, then raise the batch size or use a "
    "smaller instance; fluctuating use points at synchronisation or data stalls",
};

static void gpu_mem_increase_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct gpu_state *st = p;
    double increase = c->param[0];
    uint64_t patience = (uint64_t)c->param[1];
    uint32_t window = c->param[2] < 1 ? 1 : (uint32_t)c->param[2];
    if (rule_na_without_gpu_util(c) ||
        node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    const struct rule_series *s0;
    for (uint32_t i = 0; (s0 = next_gpu_util(w, &i)); i++) {
        struct gpu_roll *g = gpu_roll_of(st, s0);
        int as_bytes;
        const struct rule_series *s =
            gpu_mem_series(w, s0->node_id, s0->index, &g->mem_total, &as_bytes);
        if (!s)
            continue;
        if (!g->mem.cap && roll_init(&g->mem, 2 * window) < 0)
            continue;
        double worst = -INFINITY, worst_prev = 0, worst_last = 0;
        for (uint32_t k = 0; k < s->n; k++) {
            if (!isfinite(s->v[k]) || ++g->seen <= patience)
                continue;
            roll_push(&g->mem, gpu_mem_pct(s->v[k], g->mem_total, as_bytes));
            if (g->mem.n < 2 * window)
                continue;
            /* the oldest `window` values against the newest */
            double prev = 0, last = 0;
            for (uint32_t j = 0; j < window; j++) {
                prev += g->mem.v[(g->mem.head + j) % g->mem.cap];
                last += g->mem.v[(g->mem.head + window + j) % g->mem.cap];
            }
            prev /= window;
            last /= window;
            if (last - prev > worst) {
                worst = last - prev;
                worst_prev = prev;
                worst_last = last;
            }
        }
        c->result->datapoints = g->seen;
        if (g->mem.n < 2 * window) {
            rule_status(c, RULE_WAITING, "%llu of %llu values (patience) + %u",
                        (unsigned long long)g->seen, (unsigned long long)patience, 2 * window);
            continue;
        }
        char scope[192];
        scope_name(scope, sizeof(scope), s0->node, s0->index);
        if (worst > increase)
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPU %lld memory rose from %.1f %% to %.1f %% (+%.1f points > %g) "
                            "between two windows of %u values",
                            (long long)s0->index, worst_prev, worst_last, worst, increase, window);
        else
            rule_status(c, RULE_OK, "largest rise %.1f points", worst > 0 ? worst : 0);
    }
}

static const struct rule_param gpu_mem_increase_params[] = {
    {"increase", 5, "percentage points between two consecutive windows", NULL, RP_PERCENT},
    {"patience", 1000, "values skipped at the start", NULL, RP_COUNT},
    {"window", 10, "values per window", NULL, RP_WINDOW},
};

const struct rule_def rule_gpu_memory_increase = {
    "GPUMemoryIncrease",
    "sagemaker",
    SEV_MEDIUM,
    gpu_mem_increase_params,
    NPARAMS(gpu_mem_increase_params),
    sizeof(struct gpu_state),
    gpu_state_release,
    gpu_mem_increase_window,
    NULL,
    "GPU memory keeps growing: look for tensors kept alive across steps (losses accumulated "
    "without .item(), growing caches); it ends in an out-of-memory error",
};

/* ---- BatchSize ----------------------------------------------------------------- */

struct batch_node {
    uint64_t seen;
    struct roll cpu;
    struct roll gpu[MAX_GPUS], mem[MAX_GPUS];
    double mem_total[MAX_GPUS];
};

struct batch_state {
    struct batch_node *node; /* by node id */
    uint32_t nnodes;
    int trained; /* a training step was seen */
    double *scratch;
    uint32_t scratch_cap;
};

static void batch_release(void *p)
{
    struct batch_state *st = p;
    for (uint32_t n = 0; n < st->nnodes; n++) {
        roll_release(&st->node[n].cpu);
        for (uint32_t g = 0; g < MAX_GPUS; g++) {
            roll_release(&st->node[n].gpu[g]);
            roll_release(&st->node[n].mem[g]);
        }
    }
    free(st->node);
    free(st->scratch);
}

static void push_series(struct roll *r, uint32_t window, const struct rule_series *s, double total,
                        int as_bytes)
{
    if (!s || (!r->cap && roll_init(r, window) < 0))
        return;
    for (uint32_t k = 0; k < s->n; k++)
        if (isfinite(s->v[k]))
            roll_push(r, total > 0 || !as_bytes ? gpu_mem_pct(s->v[k], total, as_bytes) : s->v[k]);
}

/* The node's cpu.util of the window into its rolling window, after
 * patience. */
static void batch_push_cpu(struct batch_node *bn, const struct rule_series *cpu, uint64_t patience,
                           uint32_t window)
{
    /* patience first, then the window fills with what follows */
    uint32_t skip = 0;
    while (cpu && skip < cpu->n && bn->seen < patience) {
        bn->seen++;
        skip++;
    }
    struct rule_series rest = cpu ? *cpu : (struct rule_series){0};
    rest.ts += skip;
    rest.v += skip;
    rest.n -= skip;
    bn->seen += rest.n;
    if (bn->seen > patience)
        push_series(&bn->cpu, window, &rest, 0, 0);
}

struct batch_gpus {
    uint32_t n;
    int low; /* every GPU's p95 utilization and memory below the thresholds */
    double worst_gpu, worst_mem;
};

/* The node's GPUs: their values of the window into their rolling windows,
 * and their p95s against the thresholds. */
static void batch_gpus(const struct rule_ctx *c, const struct rule_window *w, struct batch_node *bn,
                       uint32_t id, double *scratch, struct batch_gpus *out)
{
    double gpu_t = c->param[1], mem_t = c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    uint32_t window = c->param[4] < 1 ? 1 : (uint32_t)c->param[4];
    *out = (struct batch_gpus){0, 1, 0, 0};
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->metric != RM_GPU_UTIL || s->node_id != id || s->index < 0 || s->index >= MAX_GPUS)
            continue;
        out->n++;
        int as_bytes;
        const struct rule_series *m =
            gpu_mem_series(w, id, s->index, &bn->mem_total[s->index], &as_bytes);
        if (bn->seen > patience) {
            push_series(&bn->gpu[s->index], window, s, 0, 0);
            push_series(&bn->mem[s->index], window, m, bn->mem_total[s->index], as_bytes);
        }
        struct roll *gr = &bn->gpu[s->index], *mr = &bn->mem[s->index];
        double gp = gr->n ? roll_quantile(gr, scratch, 0.95) : 0;
        double mp = mr->n ? roll_quantile(mr, scratch, 0.95) : 0;
        if (gp >= gpu_t || mp >= mem_t)
            out->low = 0;
        if (gp > out->worst_gpu)
            out->worst_gpu = gp;
        if (mp > out->worst_mem)
            out->worst_mem = mp;
    }
}

/* The training steps of node id in the window. A run whose steps carry no
 * node (recorded on one host, or imported without node names) has them all
 * on the local node: every node then judges them. */
static void node_step_totals(const struct rule_window *w, uint32_t id, struct step_totals *t)
{
    window_step_totals_on(w, id, -2, t);
    int attributed = 0;
    for (uint32_t i = 0; !t->steps && i < w->nsteps && !attributed; i++)
        attributed = w->steps[i].node_id != RULES_LOCAL_NODE;
    if (!t->steps && !attributed)
        window_step_totals(w, -2, t);
}

static void batch_node_window(struct rule_ctx *c, const struct rule_window *w,
                              struct batch_state *st, uint32_t id, double *scratch)
{
    double cpu_t = c->param[0], gpu_t = c->param[1], mem_t = c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    uint32_t window = c->param[4] < 1 ? 1 : (uint32_t)c->param[4];
    struct batch_node *bn = &st->node[id];
    batch_push_cpu(bn, window_host_series(w, RM_CPU_UTIL, id), patience, window);
    struct batch_gpus g;
    batch_gpus(c, w, bn, id, scratch, &g);
    c->result->datapoints = bn->seen;
    const char *missing = rules_gpu_util_missing(c->eng);
    if (!g.n && missing && rules_have_gpu(c->eng)) {
        /* the CPU criterion alone is for a job without a GPU: one whose
         * GPU does not report its use (MIG) may well be keeping it busy */
        rule_status(c, RULE_NA, "%s", missing);
        return;
    }
    if (bn->cpu.n < window) {
        rule_status(c, RULE_WAITING, "%llu of %llu snapshots (patience) + %u (window)",
                    (unsigned long long)bn->seen, (unsigned long long)patience, window);
        return;
    }
    struct step_totals t;
    node_step_totals(w, id, &t);
    if (!t.steps) { /* a small batch is judged while training */
        if (st->trained)
            rule_status(c, RULE_OK, "no training steps in the last window");
        else
            rule_status(c, RULE_WAITING, "no training steps yet");
        return;
    }
    double data = t.step_ns > 0 ? 100.0 * t.phase_ns[PHASE_DATA] / t.step_ns : 0;
    double cpu95 = roll_quantile(&bn->cpu, scratch, 0.95);
    if (cpu95 >= cpu_t || !g.low || data >= INPUT_BOUND_DEFAULT_PCT) {
        rule_status(c, RULE_OK, "p95 CPU %.0f %%, p95 GPU %.0f %%, data wait %.0f %%", cpu95,
                    g.worst_gpu, data);
        return;
    }
    char scope[192], ev[512];
    scope_name(scope, sizeof(scope), rules_node_name(c->eng, id), -1);
    step_totals_text(&t, ev, sizeof(ev));
    if (g.n)
        rule_fire_range(c, w->t0, w->t1, scope, ev,
                        "p95 CPU %.0f %% < %g %%, p95 GPU %.0f %% < %g %%, p95 GPU "
                        "memory %.0f %% < %g %% over the last %u snapshots",
                        cpu95, cpu_t, g.worst_gpu, gpu_t, g.worst_mem, mem_t, window);
    else
        rule_fire_range(c, w->t0, w->t1, scope, ev,
                        "p95 CPU %.0f %% < %g %% over the last %u snapshots while "
                        "training (no GPU: the CPU criterion alone), data wait %.0f %%",
                        cpu95, cpu_t, window, data);
}

static void batch_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct batch_state *st = p;
    uint32_t window = c->param[4] < 1 ? 1 : (uint32_t)c->param[4];
    double *scratch = scratch_for(&st->scratch, &st->scratch_cap, window);
    if (!scratch ||
        node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    for (uint32_t k = 0; k < w->nnodes; k++)
        batch_node_window(c, w, st, w->nodes[k], scratch);
    if (w->nsteps)
        st->trained = 1;
}

/* Without a training step the rule has nothing to judge: a small batch is
 * a training loop's. */
static void batch_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct batch_state *st = p;
    if (!st->trained && c->result->status != RULE_NA)
        not_yet(c, "no training steps recorded");
}

static const struct rule_param batch_params[] = {
    {"cpu_threshold_p95", 70, "pct: p95 of mean CPU below this", NULL, RP_PERCENT},
    {"gpu_threshold_p95", 70, "pct: p95 GPU utilization below this", NULL, RP_PERCENT},
    {"gpu_memory_threshold_p95", 70, "pct: p95 GPU memory below this", NULL, RP_PERCENT},
    {"patience", 1000, "snapshots skipped at the start", NULL, RP_COUNT},
    {"window", 500, "snapshots per judgement", NULL, RP_WINDOW},
};

const struct rule_def rule_batch_size = {
    "BatchSize",
    "sagemaker",
    SEV_MEDIUM,
    batch_params,
    NPARAMS(batch_params),
    sizeof(struct batch_state),
    batch_release,
    batch_window,
    batch_finish,
    "the hardware is under-used: raise the batch size (scale the learning rate with it), or "
    "train on a smaller instance",
};

/* ---- LoadBalancing ---------------------------------------------------------------- */

#define LB_BINS 50 /* 2 % each */

struct lb_node {
    uint64_t seen[MAX_GPUS];
    double *hist[MAX_GPUS]; /* LB_BINS each, made when the GPU is first seen */
};

struct lb_state {
    struct lb_node *node; /* by node id */
    uint32_t nnodes;
};

static void lb_release(void *p)
{
    struct lb_state *st = p;
    for (uint32_t n = 0; n < st->nnodes; n++)
        for (int g = 0; g < MAX_GPUS; g++)
            free(st->node[n].hist[g]);
    free(st->node);
}

static void lb_push(struct lb_state *st, const struct rule_series *s, uint64_t patience)
{
    struct lb_node *ln = &st->node[s->node_id];
    double **h = &ln->hist[s->index];
    if (!*h && !(*h = calloc(LB_BINS, sizeof(**h))))
        return;
    for (uint32_t k = 0; k < s->n; k++) {
        if (!isfinite(s->v[k]) || ++ln->seen[s->index] <= patience)
            continue;
        int b = (int)(s->v[k] / 2.0);
        b = b < 0 ? 0 : b >= LB_BINS ? LB_BINS - 1 : b;
        (*h)[b]++;
    }
}

struct lb_verdict {
    uint32_t most_gpus; /* on one node */
    uint32_t judged;    /* pairs */
    double worst;
};

/* Every pair of GPUs of node n past patience. */
static void lb_node_pairs(struct rule_ctx *c, const struct rule_window *w, struct lb_state *st,
                          uint32_t n, struct lb_verdict *v)
{
    double threshold = c->param[0];
    uint64_t patience = (uint64_t)c->param[1];
    const struct lb_node *ln = &st->node[n];
    const char *node = rules_node_name(c->eng, n);
    uint32_t gpus = 0;
    for (int a = 0; a < MAX_GPUS; a++) {
        if (!ln->hist[a])
            continue;
        gpus++;
        if (ln->seen[a] <= patience)
            continue;
        for (int b = a + 1; b < MAX_GPUS; b++) {
            if (!ln->hist[b] || ln->seen[b] <= patience)
                continue;
            v->judged++;
            double d = stats_js_distance(ln->hist[a], ln->hist[b], LB_BINS);
            if (d > v->worst)
                v->worst = d;
            if (d <= threshold)
                continue;
            char scope[192];
            if (*node)
                snprintf(scope, sizeof(scope), "node=%s,gpus=%d+%d", node, a, b);
            else
                snprintf(scope, sizeof(scope), "gpus=%d+%d", a, b);
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPUs %d and %d are used unevenly: Jensen-Shannon distance "
                            "%.2f > %.2f between their utilization histograms",
                            a, b, d, threshold);
        }
    }
    if (gpus > v->most_gpus)
        v->most_gpus = gpus;
}

static void lb_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct lb_state *st = p;
    uint64_t patience = (uint64_t)c->param[1];
    if (rule_na_without_gpu_util(c) ||
        node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    const struct rule_series *s;
    for (uint32_t i = 0; (s = next_gpu_util(w, &i)); i++)
        lb_push(st, s, patience);
    struct lb_verdict v = {0, 0, 0};
    for (uint32_t n = 0; n < st->nnodes; n++)
        lb_node_pairs(c, w, st, n, &v);
    if (v.most_gpus < 2) /* GPUs are balanced within a node */
        rule_status(c, RULE_NA, "one GPU per node: nothing to balance");
    else if (!v.judged)
        rule_status(c, RULE_WAITING, "patience: %llu values", (unsigned long long)patience);
    else
        rule_status(c, RULE_OK, "largest distance %.2f", v.worst);
}

static const struct rule_param lb_params[] = {
    {"threshold", 0.5,
     "Jensen-Shannon distance (natural log, 0 to 0.83) between two GPUs' histograms", NULL,
     RP_FRACTION},
    {"patience", 1000, "values skipped at the start", NULL, RP_COUNT},
};

const struct rule_def rule_load_balancing = {
    "LoadBalancing",
    "sagemaker",
    SEV_MEDIUM,
    lb_params,
    NPARAMS(lb_params),
    sizeof(struct lb_state),
    lb_release,
    lb_window,
    NULL,
    "the GPUs do unequal work: check the distribution strategy (data-parallel across every "
    "GPU, balanced pipeline stages) and per-rank batch sizes",
};

/* ---- StepOutlier --------------------------------------------------------------------- */

/*
 * As SageMaker's: the steps of each node and mode (TRAIN, EVAL, PREDICT,
 * GLOBAL) are a population of their own, judged once it has more than 100
 * steps; an evaluation step is not an outlier of training. The mode
 * parameter picks one mode (train, eval, predict, global), or all of them,
 * each judged apart (the default).
 */
#define OUTLIER_MIN_STEPS 100 /* judged with more than this */

struct outlier_group { /* the steps of one node in one mode */
    struct dur_set d;
    uint32_t outliers; /* at its last judgement */
    double limit_ns;   /* mean + stddev sd then */
    int fresh;         /* steps came in the window being judged */
};

struct outlier_node {
    struct outlier_group mode[STEP_MODE_COUNT];
};

struct outlier_state {
    struct outlier_node *node; /* by node id */
    uint32_t nnodes;
    uint64_t left_out; /* steps of the modes the mode parameter leaves out */
};

struct outlier_tally { /* over the groups, for the rule's verdict */
    uint32_t judged, waiting, most;
    uint64_t steps, outliers;
    char detail[512]; /* of the group with the most outliers, or the largest waiting */
};

static void outlier_release(void *p)
{
    struct outlier_state *st = p;
    for (uint32_t n = 0; n < st->nnodes; n++)
        for (int m = 0; m < STEP_MODE_COUNT; m++)
            dur_set_release(&st->node[n].mode[m].d);
    free(st->node);
}

/* The mode parameter's word for value v: 0 all, else step mode v - 1. */
static int outlier_wanted(double v, int mode)
{
    return v < 1 || (int)v - 1 == mode;
}

/* "eval steps" or, for an imported node, "eval steps on algo-2"; scope
 * "mode=eval" or "node=algo-2,mode=eval". */
static void outlier_names(const struct rule_ctx *c, uint32_t node, int mode, char *what,
                          size_t wcap, char *scope, size_t scap)
{
    const char *name = rules_node_name(c->eng, node);
    snprintf(what, wcap, "%s steps%s%s", step_mode_names[mode], *name ? " on " : "", name);
    if (*name)
        snprintf(scope, scap, "node=%s,mode=%s", name, step_mode_names[mode]);
    else
        snprintf(scope, scap, "mode=%s", step_mode_names[mode]);
}

static void outlier_collect(struct outlier_state *st, const struct rule_window *w, double mode)
{
    for (uint32_t i = 0; i < w->nall_steps; i++) {
        const struct rule_step *s = &w->all_steps[i];
        if (!outlier_wanted(mode, s->mode)) {
            st->left_out++;
            continue;
        }
        struct outlier_group *g = &st->node[s->node_id].mode[s->mode];
        dur_set_add(&g->d, (double)(s->end_ns - s->start_ns));
        g->fresh = 1;
    }
}

/* The outliers of group (node, mode) among the window's steps, and what
 * took their time. */
static void outlier_events(const struct rule_window *w, uint32_t node, int mode, double limit,
                           char *out, size_t cap)
{
    struct step_totals t = {0};
    t.slowest_phase = -1;
    for (uint32_t i = 0; i < w->nall_steps; i++) {
        const struct rule_step *s = &w->all_steps[i];
        if (s->node_id == node && s->mode == mode && (double)(s->end_ns - s->start_ns) > limit)
            step_totals_add(&t, s);
    }
    out[0] = 0;
    if (t.steps) {
        char tmp[480];
        step_totals_text(&t, tmp, sizeof(tmp));
        snprintf(out, cap, "outliers in this window: %s", tmp);
    }
}

/* Judge group (node, mode) on every step so far: it has new ones. */
static void outlier_judge(struct rule_ctx *c, const struct rule_window *w, struct outlier_group *g,
                          uint32_t node, int mode)
{
    double k = c->param[0];
    uint32_t n_outliers = (uint32_t)c->param[2];
    uint32_t n = g->d.n;
    if (n <= OUTLIER_MIN_STEPS)
        return;
    double mean = g->d.sum / n;
    double var = g->d.sumsq / n - mean * mean;
    double sd = var > 0 ? sqrt(var) : 0;
    g->limit_ns = mean + k * sd;
    g->outliers = dur_set_count_above(&g->d, g->limit_ns);
    if (g->outliers <= n_outliers)
        return;
    char what[240], scope[192], ev[512];
    outlier_names(c, node, mode, what, sizeof(what), scope, sizeof(scope));
    outlier_events(w, node, mode, g->limit_ns, ev, sizeof(ev));
    rule_fire_range(c, w->t0, w->t1, scope, events_or_null(ev),
                    "%u of %u %s took longer than mean + %g sd = %.1f ms (mean %.1f ms, sd "
                    "%.1f ms; fires above %u)",
                    g->outliers, n, what, k, g->limit_ns / 1e6, mean / 1e6, sd / 1e6, n_outliers);
}

/* Group (node, mode) into the verdict: the detail tells of the group with
 * the most outliers, or while none is judged, of the largest. */
static void outlier_tally(const struct rule_ctx *c, const struct outlier_group *g, uint32_t node,
                          int mode, struct outlier_tally *tl)
{
    uint32_t n = g->d.n;
    char what[240], scope[192];
    tl->steps += n;
    tl->outliers += g->outliers;
    outlier_names(c, node, mode, what, sizeof(what), scope, sizeof(scope));
    if (n <= OUTLIER_MIN_STEPS) {
        if (!tl->judged && n >= tl->most) {
            tl->most = n;
            snprintf(tl->detail, sizeof(tl->detail), "%u %s (judged after %d)", n, what,
                     OUTLIER_MIN_STEPS);
        }
        tl->waiting++;
        return;
    }
    if (!tl->judged++ || g->outliers >= tl->most) {
        tl->most = g->outliers;
        snprintf(tl->detail, sizeof(tl->detail),
                 "%u of %u %s above mean + %g sd = %.1f ms (fires above %u)", g->outliers, n, what,
                 c->param[0], g->limit_ns / 1e6, (uint32_t)c->param[2]);
    }
}

static void outlier_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct outlier_state *st = p;
    if (node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    outlier_collect(st, w, c->param[1]);
    struct outlier_tally tl = {0};
    for (uint32_t n = 0; n < st->nnodes; n++)
        for (int m = 0; m < STEP_MODE_COUNT; m++) {
            struct outlier_group *g = &st->node[n].mode[m];
            if (g->fresh) /* a group without new steps keeps its verdict */
                outlier_judge(c, w, g, n, m);
            g->fresh = 0;
            if (g->d.n)
                outlier_tally(c, g, n, m, &tl);
        }
    c->result->datapoints = tl.steps;
    if (tl.judged)
        rule_status(c, RULE_OK, "%s", tl.detail);
    else if (tl.waiting)
        rule_status(c, RULE_WAITING, "%s", tl.detail);
    /* the outliers, not the firings that rule_fire_range counts */
    c->result->violations = tl.outliers;
}

static void outlier_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct outlier_state *st = p;
    if (c->result->datapoints)
        return;
    int mode = (int)c->param[1];
    char what[200];
    if (mode < 1)
        snprintf(what, sizeof(what), "no steps recorded");
    else
        snprintf(what, sizeof(what), "no %s steps recorded (%llu steps of other modes)",
                 step_mode_names[mode - 1], (unsigned long long)st->left_out);
    not_yet(c, what);
}

static const struct rule_param outlier_params[] = {
    {"stddev", 3, "a step longer than mean + stddev * sd is an outlier", NULL, RP_NUMBER},
    {"mode", 0, "which steps: all (each mode apart), train, eval, predict or global",
     "all,train,eval,predict,global", RP_NUMBER},
    {"n_outliers", 10, "outliers allowed before it fires", NULL, RP_COUNT},
};

const struct rule_def rule_step_outlier = {
    "StepOutlier",
    "sagemaker",
    SEV_MEDIUM,
    outlier_params,
    NPARAMS(outlier_params),
    sizeof(struct outlier_state),
    outlier_release,
    outlier_window,
    outlier_finish,
    "some steps take far longer than the rest: look at what runs in them (checkpoints, "
    "evaluation, garbage collection, a slow data shard) and move it out of the loop or make it "
    "asynchronous",
};

/* ---- MaxInitializationTime --------------------------------------------------------------- */

/*
 * Training begins with the first training step. A loop that trains without
 * step spans (no optimizer, no strobe.step()) still runs forward and
 * backward: that is training too, and "no step has begun" would be built
 * on the steps strobe could not see. A step encloses its forward, so
 * forward and backward from before the limit settle it within the limit;
 * from after it, a step that began earlier may still be running, and the
 * verdict waits as it does for a step.
 */
struct init_state {
    int64_t first_step_ns; /* 0 until seen */
    int64_t first_fwd_bwd_ns;
    int forward, backward; /* seen */
    int judged;            /* the verdict is given */
};

static int init_trains(const struct init_state *st)
{
    return st->forward && st->backward;
}

static void init_note(struct init_state *st, const struct rule_window *w)
{
    for (uint32_t i = 0; i < w->nsteps; i++)
        if (!st->first_step_ns || w->steps[i].start_ns < st->first_step_ns)
            st->first_step_ns = w->steps[i].start_ns;
    st->forward |= w->forward_spans > 0;
    st->backward |= w->backward_spans > 0;
    if ((w->forward_spans || w->backward_spans) &&
        (!st->first_fwd_bwd_ns || w->first_fwd_bwd_ns < st->first_fwd_bwd_ns))
        st->first_fwd_bwd_ns = w->first_fwd_bwd_ns;
}

/* The verdict on training that began at began_ns (what: how it was seen). */
static void init_judge(struct rule_ctx *c, struct init_state *st, int64_t began_ns,
                       const char *what)
{
    int64_t start = rules_run(c->eng)->start_ns;
    double init = (double)(began_ns - start);
    if (init > c->param[0] * 60e9)
        rule_fire_range(c, start, began_ns, "node", NULL,
                        "%s began %.1f min after the start (limit %g min)", what, init / 60e9,
                        c->param[0]);
    else
        rule_status(c, RULE_OK, "%s began %.1f s after the start", what, init / 1e9);
    st->judged = 1;
}

#define INIT_BY_FWD_BWD "training (forward and backward, without step spans)"

static void init_fire_none(struct rule_ctx *c, int64_t t1)
{
    int64_t start = rules_run(c->eng)->start_ns;
    rule_fire_range(c, start, t1, "node", NULL,
                    "no step has begun %.1f min after the start (limit %g min), nor forward and "
                    "backward",
                    (double)(t1 - start) / 60e9, c->param[0]);
}

/* Past due (twice the limit live, the end of a run): forward and backward
 * stand for the step, else nothing began. */
static void init_due(struct rule_ctx *c, struct init_state *st, int64_t t1)
{
    if (init_trains(st))
        init_judge(c, st, st->first_fwd_bwd_ns, INIT_BY_FWD_BWD);
    else
        init_fire_none(c, t1); /* grows with every window until a step comes */
}

static void init_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct init_state *st = p;
    double limit_ns = c->param[0] * 60e9;
    int64_t start = rules_run(c->eng)->start_ns;
    init_note(st, w);
    if (st->judged)
        return;
    if (st->first_step_ns) {
        init_judge(c, st, st->first_step_ns, "the first step");
        return;
    }
    if (init_trains(st) && (double)(st->first_fwd_bwd_ns - start) <= limit_ns) {
        init_judge(c, st, st->first_fwd_bwd_ns, INIT_BY_FWD_BWD);
        return;
    }
    /* Steps arrive when they end, so a first step that began before the
     * limit may still be running: past the limit, wait for it, and say so
     * only when twice the limit has gone by (or at the end) with none. */
    double waited = (double)(w->t1 - start);
    if (waited > 2 * limit_ns)
        init_due(c, st, w->t1);
    else
        rule_status(c, RULE_WAITING, "no step yet, %.0f s after the start%s", waited / 1e9,
                    init_trains(st) ? " (forward and backward run)" : "");
}

static void init_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct init_state *st = p;
    int64_t start = rules_run(c->eng)->start_ns;
    if (st->judged || c->result->status == RULE_FIRED)
        return;
    double waited = (double)(w->t1 - start), limit_ns = c->param[0] * 60e9;
    if (rules_run(c->eng)->running) /* as live: a first step may still be running */
        return;
    if (init_trains(st))
        init_judge(c, st, st->first_fwd_bwd_ns, INIT_BY_FWD_BWD);
    else if (waited > limit_ns)
        init_fire_none(c, w->t1);
    else
        rule_status(c, RULE_NA, "no steps recorded, nor forward and backward");
}

static const struct rule_param init_params[] = {
    {"threshold", 20, "minutes from the start to the first step", NULL, RP_NUMBER},
};

const struct rule_def rule_max_initialization_time = {
    "MaxInitializationTime",
    "sagemaker",
    SEV_LOW,
    init_params,
    NPARAMS(init_params),
    sizeof(struct init_state),
    NULL,
    init_window,
    init_finish,
    "the job takes long to start training: stream the data (pipe mode, a sharded format) "
    "instead of downloading it all first, and check slow imports or model loading",
};

/* ---- Dataloader ----------------------------------------------------------------------- */

struct loader_state {
    double *counts; /* workers active per window with data loading */
    uint32_t n, cap;
    double *scratch;
};

static void loader_release(void *p)
{
    struct loader_state *st = p;
    free(st->counts);
    free(st->scratch);
}

/* The median so far of the windows' worker counts; NaN without memory. */
static double loader_median(struct loader_state *st)
{
    double *sc = realloc(st->scratch, st->n * sizeof(*sc));
    if (!sc)
        return NAN;
    st->scratch = sc;
    memcpy(sc, st->counts, st->n * sizeof(*sc));
    return stats_quantile_sort(sc, st->n, 0.5);
}

/* The verdict on the whole run's median. A window's median so far is not
 * it: a first window with the workers still starting (1 of 4, then 4 in
 * every later window) fired on a median of 1 or 2.5, and a fired rule stays
 * fired, whatever the run's median (4) said at its end. */
static void loader_judge(struct rule_ctx *c, const struct rule_window *w, struct loader_state *st)
{
    int cores = rules_run(c->eng)->cpu_count;
    double median = loader_median(st);
    if (!isfinite(median))
        return;
    double pct = 100.0 * median / cores;
    c->result->datapoints = st->n;
    if (pct < c->param[0] || pct > c->param[1])
        rule_fire_range(c, w->t0, w->t1, "node", NULL,
                        "a median of %g data-loading processes for %d cores (%.0f %%, wanted "
                        "%g to %g %%)",
                        median, cores, pct, c->param[0], c->param[1]);
    else
        rule_status(c, RULE_OK, "%g data-loading processes for %d cores", median, cores);
}

static void loader_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct loader_state *st = p;
    if (w->data_spans || w->workers) {
        if (st->n == st->cap) {
            uint32_t cap = st->cap ? st->cap * 2 : 64;
            double *q = realloc(st->counts, cap * sizeof(*q));
            if (!q)
                return;
            st->counts = q;
            st->cap = cap;
        }
        st->counts[st->n++] = w->workers;
        c->result->datapoints = st->n;
        rule_status(c, RULE_WAITING,
                    "a median of %g data-loading processes so far (judged over "
                    "the whole run, at its end)",
                    loader_median(st));
    } else if (!st->n) {
        rule_status(c, RULE_WAITING, "no data loading seen yet");
    }
}

static void loader_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct loader_state *st = p;
    if (!st->n)
        not_yet(c, "no data loading seen (no DataLoader)");
    else if (rules_run(c->eng)->cpu_count <= 0) /* an import without CPU metrics */
        rule_status(c, RULE_NA, "the number of cores is unknown (no CPU metrics in the run)");
    else if (!rules_run(c->eng)->running) /* a run still recording is not over */
        loader_judge(c, w, st);
}

static const struct rule_param loader_params[] = {
    {"min_threshold", 70, "pct of cores: fewer data-loading processes than this", NULL, RP_NUMBER},
    {"max_threshold", 200, "pct of cores: more than this", NULL, RP_NUMBER},
};

const struct rule_def rule_dataloader = {
    "Dataloader",
    "sagemaker",
    SEV_LOW,
    loader_params,
    NPARAMS(loader_params),
    sizeof(struct loader_state),
    loader_release,
    loader_window,
    loader_finish,
    "set DataLoader(num_workers=...) near the number of cores: too few starve the training "
    "loop, too many compete with it for the CPU",
};

/* ---- OverallSystemUsage ------------------------------------------------------------------- */
/*
 * SageMaker's report of a node's use (smdebug's overall_system_usage.py):
 * per node, max/p99/p95/p50/min of each dimension over every snapshot, the
 * snapshot's value being what the node did as a whole: CPU and I/O wait the
 * mean over its cores (strobe's whole-host cpu.util, cpu.iowait), GPU and
 * GPU memory the mean over its GPUs, network the sum over the job's traffic
 * (strobe's interfaces; an import's Algorithm traffic, both ways), and
 * strobe adds disk bytes/s. Quantiles within 0.5 % (a logarithmic sketch).
 */

enum usage_metric { U_CPU, U_MEM, U_IO, U_NET, U_DISK, U_GPU, U_GPU_MEM, U_COUNT };
static const char *const usage_names[U_COUNT] = {
    "cpu_pct",          "memory_pct", "iowait_pct",    "network_bytes_per_s",
    "disk_bytes_per_s", "gpu_pct",    "gpu_memory_pct"};

struct usage_node {
    int seen; /* had series */
    struct sketch sk[U_COUNT];
    double mem_total;
    double gpu_total[MAX_GPUS];
};

struct usage_cursor { /* a series read in step with a node's snapshots */
    const struct rule_series *s;
    uint32_t pos;
    double scale; /* its values times this (GPU memory bytes into pct) */
};

struct usage_state {
    struct usage_node *node; /* by node id */
    uint32_t nnodes;
    struct usage_cursor *cur; /* one dimension of one node in a window */
    uint32_t cur_cap;
};

static void usage_release(void *p)
{
    struct usage_state *st = p;
    for (uint32_t n = 0; n < st->nnodes; n++)
        for (int u = 0; u < U_COUNT; u++)
            sketch_release(&st->node[n].sk[u]);
    free(st->node);
    free(st->cur);
}

static void usage_add_all(struct sketch *sk, const struct rule_series *s)
{
    for (uint32_t i = 0; s && i < s->n; i++)
        sketch_add(sk, s->v[i]);
}

/* One value per snapshot of cursors cur[0..n) (the first one's times: a
 * recorder stamps a frame's series alike, and an import's within
 * SNAPSHOT_NS): their sum, or their mean. An imported snapshot that the
 * window's start t0 cuts in two is left out: its values before t0 went to
 * the window before, and half a sum is no node's traffic. */
static void usage_snapshots(struct sketch *sk, struct usage_cursor *cur, uint32_t n, int mean,
                            int64_t t0)
{
    const struct rule_series *clock = n ? cur[0].s : NULL;
    for (uint32_t k = 0; clock && k < clock->n; k++) {
        double sum = 0, v;
        uint32_t have = 0;
        for (uint32_t j = 0; j < n; j++)
            if (series_value_at(cur[j].s, &cur[j].pos, clock->ts[k], &v)) {
                sum += v * cur[j].scale;
                have++;
            }
        if (have && (have == n || clock->ts[k] >= t0 + SNAPSHOT_NS))
            sketch_add(sk, mean ? sum / have : sum);
    }
}

static int usage_cursor_add(struct usage_state *st, uint32_t *n, const struct rule_series *s,
                            double scale)
{
    if (array_grow((void **)&st->cur, &st->cur_cap, *n + 1, sizeof(*st->cur), 16) < 0)
        return -ENOMEM;
    st->cur[(*n)++] = (struct usage_cursor){s, 0, scale};
    return 0;
}

/* Network (m1, m2 = rx, tx) or disk (read, write) of node id: the sum over
 * its devices per snapshot. */
static void usage_sum(struct usage_state *st, struct sketch *sk, const struct rule_window *w,
                      uint32_t id, enum rule_metric m1, enum rule_metric m2)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->node_id == id && (s->metric == m1 || s->metric == m2) &&
            usage_cursor_add(st, &n, s, 1) < 0)
            return;
    }
    usage_snapshots(sk, st->cur, n, 0, w->t0);
}

/* GPU utilization and memory of node id: the mean over its GPUs per
 * snapshot, as SageMaker's GPU and GPU memory are. */
static void usage_gpus(struct usage_state *st, const struct rule_window *w, uint32_t id)
{
    struct usage_node *un = &st->node[id];
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *g = &w->series[i];
        if (g->metric == RM_GPU_UTIL && g->node_id == id && g->index >= 0 && g->index < MAX_GPUS &&
            usage_cursor_add(st, &n, g, 1) < 0)
            return;
    }
    usage_snapshots(&un->sk[U_GPU], st->cur, n, 1, w->t0);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t gpu = st->cur[i].s->index;
        int as_bytes;
        const struct rule_series *s = gpu_mem_series(w, id, gpu, &un->gpu_total[gpu], &as_bytes);
        if (s)
            st->cur[m++] = (struct usage_cursor){s, 0, as_bytes ? 100.0 / un->gpu_total[gpu] : 1};
    }
    usage_snapshots(&un->sk[U_GPU_MEM], st->cur, m, 1, w->t0);
}

static void usage_node_window(struct usage_state *st, const struct rule_window *w, uint32_t id)
{
    struct usage_node *un = &st->node[id];
    un->seen = 1;
    usage_add_all(&un->sk[U_CPU], window_host_series(w, RM_CPU_UTIL, id));
    const struct rule_series *tot = window_host_series(w, RM_MEM_TOTAL, id);
    if (tot && tot->n)
        un->mem_total = tot->v[tot->n - 1];
    const struct rule_series *used = window_host_series(w, RM_MEM_USED, id);
    for (uint32_t i = 0; used && un->mem_total > 0 && i < used->n; i++)
        sketch_add(&un->sk[U_MEM], 100.0 * used->v[i] / un->mem_total);
    usage_add_all(&un->sk[U_MEM], window_host_series(w, RM_MEM_USED_PCT, id));
    usage_add_all(&un->sk[U_IO], window_host_series(w, RM_CPU_IOWAIT, id));
    usage_sum(st, &un->sk[U_NET], w, id, RM_NET_RX, RM_NET_TX);
    usage_sum(st, &un->sk[U_DISK], w, id, RM_DISK_READ, RM_DISK_WRITE);
    usage_gpus(st, w, id);
}

static void usage_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct usage_state *st = p;
    if (node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    for (uint32_t k = 0; k < w->nnodes; k++)
        usage_node_window(st, w, w->nodes[k]);
    rule_status(c, RULE_REPORT, "statistics at the end of the run");
}

static void json_stat(struct json_writer *jw, const char *key, const struct sketch *sk)
{
    static const struct {
        const char *k;
        double q;
    } qs[] = {{"max", 1}, {"p99", 0.99}, {"p95", 0.95}, {"p50", 0.5}, {"min", 0}};
    jw_key(jw, key);
    jw_object_begin(jw);
    jw_kv_uint(jw, "count", sk->count);
    for (size_t i = 0; i < ARRAY_SIZE(qs); i++)
        jw_kv_num(jw, qs[i].k, sketch_quantile(sk, qs[i].q));
    jw_end(jw);
}

static void usage_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct usage_state *st = p;
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_object_begin(&jw);
    jw_key(&jw, "nodes");
    jw_object_begin(&jw);
    char detail[256] = "";
    int listed = 0;
    for (uint32_t n = 0; n < st->nnodes; n++) {
        if (!st->node[n].seen)
            continue;
        listed++;
        const char *name = rules_node_name(c->eng, n);
        name = *name ? name : rules_run(c->eng)->host;
        jw_key(&jw, name ? name : "");
        jw_object_begin(&jw);
        for (int u = 0; u < U_COUNT; u++)
            if (st->node[n].sk[u].count)
                json_stat(&jw, usage_names[u], &st->node[n].sk[u]);
        jw_end(&jw);
        if (listed == 1) {
            char mem[48] = ""; /* without memory samples its quantile is NaN */
            if (st->node[n].sk[U_MEM].count)
                snprintf(mem, sizeof(mem), "; memory p95 %.0f %%",
                         sketch_quantile(&st->node[n].sk[U_MEM], 0.95));
            snprintf(detail, sizeof(detail), "CPU p50 %.0f %%, p95 %.0f %%%s%s",
                     sketch_quantile(&st->node[n].sk[U_CPU], 0.5),
                     sketch_quantile(&st->node[n].sk[U_CPU], 0.95), mem,
                     st->node[n].sk[U_GPU].count ? "; GPUs in the report" : "");
        }
    }
    jw_end(&jw);
    jw_end(&jw);
    rule_set_report(c, strbuf_detach(&o)); /* NULL, no report, when out of memory */
    rule_status(c, RULE_REPORT, "%s", *detail ? detail : "no system samples");
}

const struct rule_def rule_overall_system_usage = {
    "OverallSystemUsage",       "sagemaker",   SEV_INFO,     NULL,         0,
    sizeof(struct usage_state), usage_release, usage_window, usage_finish, "",
};

/* ---- OverallFrameworkMetrics ------------------------------------------------------------------
 */

struct framework_state {
    struct step_totals all; /* the training steps */
    uint64_t mode_steps[STEP_MODE_COUNT];
    double mode_ns[STEP_MODE_COUNT];
};

static void framework_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct framework_state *st = p;
    struct step_totals t;
    window_step_totals(w, -2, &t);
    st->all.steps += t.steps;
    st->all.step_ns += t.step_ns;
    st->all.comm_exposed_ns += t.comm_exposed_ns;
    for (int q = 0; q < PHASE_COUNT; q++)
        st->all.phase_ns[q] += t.phase_ns[q];
    if (t.slowest_ns > st->all.slowest_ns) {
        st->all.slowest_ns = t.slowest_ns;
        st->all.slowest_phase = t.slowest_phase;
    }
    for (uint32_t i = 0; i < w->nall_steps; i++) {
        const struct rule_step *s = &w->all_steps[i];
        st->mode_steps[s->mode]++;
        st->mode_ns[s->mode] += (double)(s->end_ns - s->start_ns);
    }
    rule_status(c, RULE_REPORT, "statistics at the end of the run");
}

/* "modes": the steps of each mode and their time, as SageMaker splits
 * training, evaluation and the rest. */
static void framework_modes(struct json_writer *jw, const struct framework_state *st)
{
    jw_key(jw, "modes");
    jw_object_begin(jw);
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        jw_kv_uint(jw, step_mode_names[m], st->mode_steps[m]);
    jw_end(jw);
    jw_key(jw, "mode_s");
    jw_object_begin(jw);
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        jw_kv_num(jw, step_mode_names[m], st->mode_ns[m] / 1e9);
    jw_end(jw);
}

static void framework_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct framework_state *st = p;
    uint64_t any = 0;
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        any += st->mode_steps[m];
    if (!any) {
        not_yet(c, "no steps recorded");
        return;
    }
    struct strbuf o;
    strbuf_init(&o);
    /* the phases are the training steps': an evaluation step has no
     * backward, and would water them down (null without training steps) */
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_object_begin(&jw);
    jw_kv_uint(&jw, "steps", st->all.steps);
    jw_kv_num(&jw, "step_s", st->all.step_ns / 1e9);
    jw_key(&jw, "phases");
    jw_object_begin(&jw);
    for (int q = 0; q < PHASE_COUNT; q++)
        jw_kv_num(&jw, phase_names[q], st->all.phase_ns[q] / st->all.step_ns);
    jw_end(&jw);
    jw_kv_num(&jw, "comm_exposed", st->all.comm_exposed_ns / st->all.step_ns);
    framework_modes(&jw, st);
    /* operator times come with a torch.profiler window: say so rather than
     * invent shares */
    jw_kv_null(&jw, "operators");
    jw_end(&jw);
    rule_set_report(c, strbuf_detach(&o));
    char text[400];
    if (st->all.steps)
        step_totals_text(&st->all, text, sizeof(text));
    else
        snprintf(text, sizeof(text), "no training steps: %llu eval, %llu predict",
                 (unsigned long long)st->mode_steps[STEP_MODE_EVAL],
                 (unsigned long long)st->mode_steps[STEP_MODE_PREDICT]);
    rule_status(c, RULE_REPORT, "%s", text);
}

const struct rule_def rule_overall_framework_metrics = {
    "OverallFrameworkMetrics",
    "sagemaker",
    SEV_INFO,
    NULL,
    0,
    sizeof(struct framework_state),
    NULL,
    framework_window,
    framework_finish,
    "",
};
