/*
 * SageMaker Debugger's built-in profiler rules, with the names, parameters
 * and defaults its SDK sends (../shared/reference/rules.md; docs/rules.md
 * says where strobe reads them differently and why). Patience and windows
 * count datapoints, as SageMaker's do: a datapoint is one host snapshot (a
 * frame of the recorder, every --interval).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_internal.h"

#define NPARAMS(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* ---- shared helpers ------------------------------------------------------------ */

int node_index(struct node_set *s, const char *node)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (strcmp(s->name[i], node) == 0)
            return (int)i;
    if (s->n == MAX_NODES)
        return -1;
    snprintf(s->name[s->n], sizeof(s->name[0]), "%s", node);
    return (int)s->n++;
}

/* The next GPU utilization series of w from *i on, with the slot of its
 * node in nodes (*ni); NULL when none is left. */
static const struct rule_series *next_gpu_util(const struct rule_window *w, struct node_set *nodes,
                                               uint32_t *i, int *ni)
{
    for (; *i < w->nseries; ++*i) {
        const struct rule_series *s = &w->series[*i];
        if (s->metric != RM_GPU_UTIL || s->index < 0 || s->index >= MAX_GPUS)
            continue;
        if ((*ni = node_index(nodes, s->node)) >= 0)
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

void window_nodes(const struct rule_window *w, struct node_set *out)
{
    out->n = 0;
    for (uint32_t i = 0; i < w->nseries; i++)
        if (w->series[i].metric == RM_CPU_UTIL)
            node_index(out, w->series[i].node);
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

const struct rule_series *gpu_mem_series(const struct rule_window *w, const char *node, int64_t gpu,
                                         double *total, int *as_bytes)
{
    const struct rule_series *t = window_series(w, RM_GPU_MEM_TOTAL, gpu, node);
    if (t && t->n && t->v[t->n - 1] > 0)
        *total = t->v[t->n - 1];
    const struct rule_series *used = window_series(w, RM_GPU_MEM_USED, gpu, node);
    if (used && *total > 0) {
        *as_bytes = 1;
        return used;
    }
    *as_bytes = 0;
    return window_series(w, RM_GPU_MEM_UTIL, gpu, node);
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

struct bottleneck_state {
    struct node_set nodes;
    struct bottleneck_node node[MAX_NODES];
    double *scratch;
    uint32_t scratch_cap;
};

static void bottleneck_release(void *p)
{
    free(((struct bottleneck_state *)p)->scratch);
}

/* io: IOBottleneck (cpu.iowait against io_threshold) else CPUBottleneck
 * (the busiest core against cpu_threshold). */
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
    struct node_set nodes;
    window_nodes(w, &nodes);
    for (uint32_t k = 0; k < nodes.n; k++) {
        const char *node = nodes.name[k];
        int ni = node_index(&st->nodes, node);
        if (ni < 0)
            continue;
        struct bottleneck_node *bn = &st->node[ni];
        const struct rule_series *snap = window_series(w, RM_CPU_UTIL, -1, node);
        const struct rule_series *cores[MAX_CORES], *gpus[MAX_GPUS];
        uint32_t ncores = 0, ngpus = 0, cpos[MAX_CORES] = {0}, gpos[MAX_GPUS] = {0}, iopos = 0;
        for (uint32_t i = 0; i < w->nseries; i++) {
            const struct rule_series *s = &w->series[i];
            if (strcmp(s->node, node) != 0)
                continue;
            if (s->metric == RM_CPU_CORE && ncores < MAX_CORES)
                cores[ncores++] = s;
            else if (s->metric == RM_GPU_UTIL && ngpus < MAX_GPUS && s->index >= 0 &&
                     s->index < MAX_GPUS)
                gpus[ngpus++] = s;
        }
        const struct rule_series *iow = window_series(w, RM_CPU_IOWAIT, -1, node);
        uint32_t before = (uint32_t)bn->violations;
        double busiest_p = 0;
        for (uint32_t i = 0; snap && i < snap->n; i++) {
            int64_t ts = snap->ts[i];
            bn->snapshots++;
            double busy = -1, v;
            if (io) {
                if (series_value_at(iow, &iopos, ts, &v))
                    busy = v;
            } else {
                for (uint32_t j = 0; j < ncores; j++)
                    if (series_value_at(cores[j], &cpos[j], ts, &v) && v > busy)
                        busy = v;
            }
            double low_gpu = INFINITY;
            for (uint32_t j = 0; j < ngpus; j++) {
                int64_t g = gpus[j]->index;
                if (series_value_at(gpus[j], &gpos[j], ts, &v)) {
                    bn->gpu_last[g] = v;
                    bn->gpu_have[g] = 1;
                }
            }
            for (int g = 0; g < MAX_GPUS; g++)
                if (bn->gpu_have[g] && bn->gpu_last[g] < low_gpu)
                    low_gpu = bn->gpu_last[g];
            if (bn->snapshots <= patience || busy < 0 || !isfinite(low_gpu))
                continue;
            bn->datapoints++;
            if (low_gpu < gpu_threshold && busy > busy_threshold)
                bn->violations++;
            if (busy > busiest_p)
                busiest_p = busy;
        }
        c->result->datapoints = bn->datapoints;
        c->result->violations = bn->violations;
        if (bn->snapshots <= patience) {
            rule_status(c, RULE_WAITING, "patience: %llu of %llu snapshots",
                        (unsigned long long)bn->snapshots, (unsigned long long)patience);
            continue;
        }
        double share = bn->datapoints ? 100.0 * (double)bn->violations / (double)bn->datapoints : 0;
        if (bn->datapoints && share > threshold && bn->violations > before) {
            char scope[80], ev[512];
            scope_name(scope, sizeof(scope), node, -1);
            window_steps_text(w, -2, ev, sizeof(ev));
            rule_fire_range(c, w->t0, w->t1, scope, events_or_null(ev),
                            "in %.0f %% of %llu snapshots a GPU was below %g %% while %s was "
                            "above %g %% (the highest this window %.0f %%)",
                            share, (unsigned long long)bn->datapoints, gpu_threshold,
                            io ? "I/O wait" : "a CPU core", busy_threshold, busiest_p);
            /* SageMaker's count: the bottlenecked snapshots, not the
             * windows that fired (rule_fire_range counts those) */
            c->result->violations = bn->violations;
        } else {
            rule_status(c, RULE_OK, "%.0f %% of %llu snapshots (fires above %g %%)", share,
                        (unsigned long long)bn->datapoints, threshold);
        }
    }
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

struct gpu_state {
    struct node_set nodes;
    struct gpu_roll gpu[MAX_NODES][MAX_GPUS];
    double *scratch;
    uint32_t scratch_cap;
};

static void gpu_state_release(void *p)
{
    struct gpu_state *st = p;
    for (uint32_t n = 0; n < MAX_NODES; n++)
        for (uint32_t g = 0; g < MAX_GPUS; g++) {
            roll_release(&st->gpu[n][g].util);
            roll_release(&st->gpu[n][g].mem);
        }
    free(st->scratch);
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
    if (!scratch)
        return;
    const struct rule_series *s;
    int ni;
    for (uint32_t i = 0; (s = next_gpu_util(w, &st->nodes, &i, &ni)); i++) {
        struct gpu_roll *g = &st->gpu[ni][s->index];
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
        char scope[80];
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
    if (rule_na_without_gpu_util(c))
        return;
    const struct rule_series *s0;
    int ni;
    for (uint32_t i = 0; (s0 = next_gpu_util(w, &st->nodes, &i, &ni)); i++) {
        struct gpu_roll *g = &st->gpu[ni][s0->index];
        int as_bytes;
        const struct rule_series *s =
            gpu_mem_series(w, s0->node, s0->index, &g->mem_total, &as_bytes);
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
        char scope[80];
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

struct batch_state {
    struct node_set nodes;
    uint64_t seen[MAX_NODES];
    struct roll cpu[MAX_NODES];
    struct roll gpu[MAX_NODES][MAX_GPUS], mem[MAX_NODES][MAX_GPUS];
    double mem_total[MAX_NODES][MAX_GPUS];
    double *scratch;
    uint32_t scratch_cap;
};

static void batch_release(void *p)
{
    struct batch_state *st = p;
    for (uint32_t n = 0; n < MAX_NODES; n++) {
        roll_release(&st->cpu[n]);
        for (uint32_t g = 0; g < MAX_GPUS; g++) {
            roll_release(&st->gpu[n][g]);
            roll_release(&st->mem[n][g]);
        }
    }
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

static void batch_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct batch_state *st = p;
    double cpu_t = c->param[0], gpu_t = c->param[1], mem_t = c->param[2];
    uint64_t patience = (uint64_t)c->param[3];
    uint32_t window = c->param[4] < 1 ? 1 : (uint32_t)c->param[4];
    double *scratch = scratch_for(&st->scratch, &st->scratch_cap, window);
    if (!scratch)
        return;
    struct node_set nodes;
    window_nodes(w, &nodes);
    for (uint32_t k = 0; k < nodes.n; k++) {
        const char *node = nodes.name[k];
        int ni = node_index(&st->nodes, node);
        if (ni < 0)
            continue;
        const struct rule_series *cpu = window_series(w, RM_CPU_UTIL, -1, node);
        /* patience first, then the window fills with what follows */
        uint32_t skip = 0;
        while (cpu && skip < cpu->n && st->seen[ni] < patience) {
            st->seen[ni]++;
            skip++;
        }
        struct rule_series rest = cpu ? *cpu : (struct rule_series){0};
        rest.ts += skip;
        rest.v += skip;
        rest.n -= skip;
        st->seen[ni] += rest.n;
        if (st->seen[ni] > patience)
            push_series(&st->cpu[ni], window, &rest, 0, 0);
        uint32_t ngpus = 0;
        int gpus_low = 1;
        double worst_gpu = 0, worst_mem = 0;
        for (uint32_t i = 0; i < w->nseries; i++) {
            const struct rule_series *s = &w->series[i];
            if (s->metric != RM_GPU_UTIL || strcmp(s->node, node) != 0 || s->index < 0 ||
                s->index >= MAX_GPUS)
                continue;
            ngpus++;
            int as_bytes;
            const struct rule_series *m =
                gpu_mem_series(w, node, s->index, &st->mem_total[ni][s->index], &as_bytes);
            if (st->seen[ni] > patience) {
                push_series(&st->gpu[ni][s->index], window, s, 0, 0);
                push_series(&st->mem[ni][s->index], window, m, st->mem_total[ni][s->index],
                            as_bytes);
            }
            struct roll *gr = &st->gpu[ni][s->index], *mr = &st->mem[ni][s->index];
            double gp = gr->n ? roll_quantile(gr, scratch, 0.95) : 0;
            double mp = mr->n ? roll_quantile(mr, scratch, 0.95) : 0;
            if (gp >= gpu_t || mp >= mem_t)
                gpus_low = 0;
            if (gp > worst_gpu)
                worst_gpu = gp;
            if (mp > worst_mem)
                worst_mem = mp;
        }
        c->result->datapoints = st->seen[ni];
        const char *missing = rules_gpu_util_missing(c->eng);
        if (!ngpus && missing && rules_have_gpu(c->eng)) {
            /* the CPU criterion alone is for a job without a GPU: one whose
             * GPU does not report its use (MIG) may well be keeping it busy */
            rule_status(c, RULE_NA, "%s", missing);
            continue;
        }
        if (st->cpu[ni].n < window) {
            rule_status(c, RULE_WAITING, "%llu of %llu snapshots (patience) + %u (window)",
                        (unsigned long long)st->seen[ni], (unsigned long long)patience, window);
            continue;
        }
        struct step_totals t;
        window_step_totals(w, -2, &t);
        if (!t.steps) {
            rule_status(c, RULE_OK, "no training steps in the last window");
            continue;
        }
        double data = t.step_ns > 0 ? 100.0 * t.phase_ns[PHASE_DATA] / t.step_ns : 0;
        double cpu95 = roll_quantile(&st->cpu[ni], scratch, 0.95);
        if (cpu95 < cpu_t && gpus_low && data < INPUT_BOUND_DEFAULT_PCT) {
            char scope[80], ev[512];
            scope_name(scope, sizeof(scope), node, -1);
            step_totals_text(&t, ev, sizeof(ev));
            if (ngpus)
                rule_fire_range(c, w->t0, w->t1, scope, ev,
                                "p95 CPU %.0f %% < %g %%, p95 GPU %.0f %% < %g %%, p95 GPU "
                                "memory %.0f %% < %g %% over the last %u snapshots",
                                cpu95, cpu_t, worst_gpu, gpu_t, worst_mem, mem_t, window);
            else
                rule_fire_range(c, w->t0, w->t1, scope, ev,
                                "p95 CPU %.0f %% < %g %% over the last %u snapshots while "
                                "training (no GPU: the CPU criterion alone), data wait %.0f %%",
                                cpu95, cpu_t, window, data);
        } else {
            rule_status(c, RULE_OK, "p95 CPU %.0f %%, p95 GPU %.0f %%, data wait %.0f %%", cpu95,
                        worst_gpu, data);
        }
    }
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
    NULL,
    "the hardware is under-used: raise the batch size (scale the learning rate with it), or "
    "train on a smaller instance",
};

/* ---- LoadBalancing ---------------------------------------------------------------- */

#define LB_BINS 50 /* 2 % each */

struct lb_state {
    struct node_set nodes;
    uint64_t seen[MAX_NODES][MAX_GPUS];
    double hist[MAX_NODES][MAX_GPUS][LB_BINS];
    uint8_t have[MAX_NODES][MAX_GPUS];
};

static void lb_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct lb_state *st = p;
    double threshold = c->param[0];
    uint64_t patience = (uint64_t)c->param[1];
    if (rule_na_without_gpu_util(c))
        return;
    const struct rule_series *s;
    int ni;
    for (uint32_t i = 0; (s = next_gpu_util(w, &st->nodes, &i, &ni)); i++) {
        st->have[ni][s->index] = 1;
        for (uint32_t k = 0; k < s->n; k++) {
            if (!isfinite(s->v[k]) || ++st->seen[ni][s->index] <= patience)
                continue;
            int b = (int)(s->v[k] / 2.0);
            b = b < 0 ? 0 : b >= LB_BINS ? LB_BINS - 1 : b;
            st->hist[ni][s->index][b]++;
        }
    }
    uint32_t gpus = 0, judged = 0;
    double worst = 0;
    for (uint32_t n = 0; n < st->nodes.n; n++)
        for (int a = 0; a < MAX_GPUS; a++) {
            if (!st->have[n][a])
                continue;
            gpus++;
            if (st->seen[n][a] <= patience)
                continue;
            for (int b = a + 1; b < MAX_GPUS; b++) {
                if (!st->have[n][b] || st->seen[n][b] <= patience)
                    continue;
                judged++;
                double d = stats_js_distance(st->hist[n][a], st->hist[n][b], LB_BINS);
                if (d > worst)
                    worst = d;
                if (d > threshold) {
                    char scope[96];
                    if (*st->nodes.name[n])
                        snprintf(scope, sizeof(scope), "node=%s,gpus=%d+%d", st->nodes.name[n], a,
                                 b);
                    else
                        snprintf(scope, sizeof(scope), "gpus=%d+%d", a, b);
                    rule_fire_range(c, w->t0, w->t1, scope, NULL,
                                    "GPUs %d and %d are used unevenly: Jensen-Shannon distance "
                                    "%.2f > %.2f between their utilization histograms",
                                    a, b, d, threshold);
                }
            }
        }
    if (gpus < 2)
        rule_status(c, RULE_NA, "one GPU: nothing to balance");
    else if (!judged)
        rule_status(c, RULE_WAITING, "patience: %llu values", (unsigned long long)patience);
    else
        rule_status(c, RULE_OK, "largest distance %.2f", worst);
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
    NULL,
    lb_window,
    NULL,
    "the GPUs do unequal work: check the distribution strategy (data-parallel across every "
    "GPU, balanced pipeline stages) and per-rank batch sizes",
};

/* ---- StepOutlier --------------------------------------------------------------------- */

struct outlier_state {
    struct dur_set d;
    int64_t first_ns;
};

static void outlier_release(void *p)
{
    dur_set_release(&((struct outlier_state *)p)->d);
}

static void outlier_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct outlier_state *st = p;
    double k = c->param[0];
    int mode = (int)c->param[1];
    uint32_t n_outliers = (uint32_t)c->param[2];
    if (mode == 2) { /* eval: strobe's steps are training steps */
        rule_status(c, RULE_NA, "no evaluation steps (strobe records training steps)");
        return;
    }
    for (uint32_t i = 0; i < w->nsteps; i++) {
        if (!st->d.n)
            st->first_ns = w->steps[i].start_ns;
        dur_set_add(&st->d, (double)(w->steps[i].end_ns - w->steps[i].start_ns));
    }
    uint32_t n = st->d.n;
    c->result->datapoints = n;
    if (n <= 100) {
        rule_status(c, RULE_WAITING, "%u steps (judged after 100)", n);
        return;
    }
    double mean = st->d.sum / n;
    double var = st->d.sumsq / n - mean * mean;
    double sd = var > 0 ? sqrt(var) : 0;
    double limit = mean + k * sd;
    uint32_t out = dur_set_count_above(&st->d, limit);
    c->result->violations = out;
    if (out <= n_outliers) {
        rule_status(c, RULE_OK, "%u of %u steps above mean + %g sd = %.1f ms (fires above %u)", out,
                    n, k, limit / 1e6, n_outliers);
        return;
    }
    /* the outliers of this window and what took their time */
    struct step_totals t = {0};
    t.slowest_phase = -1;
    for (uint32_t i = 0; i < w->nsteps; i++)
        if ((double)(w->steps[i].end_ns - w->steps[i].start_ns) > limit)
            step_totals_add(&t, &w->steps[i]);
    char ev[512] = "";
    if (t.steps) {
        char tmp[480];
        step_totals_text(&t, tmp, sizeof(tmp));
        snprintf(ev, sizeof(ev), "outliers in this window: %s", tmp);
    }
    rule_fire_range(c, w->t0, w->t1, "node", events_or_null(ev),
                    "%u of %u steps took longer than mean + %g sd = %.1f ms (mean %.1f ms, sd "
                    "%.1f ms; fires above %u)",
                    out, n, k, limit / 1e6, mean / 1e6, sd / 1e6, n_outliers);
    c->result->violations = out; /* the outliers, not the firings counted by rule_fire_range */
}

static void outlier_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct outlier_state *st = p;
    if (!st->d.n && c->result->status != RULE_NA)
        not_yet(c, "no steps recorded");
}

static const struct rule_param outlier_params[] = {
    {"stddev", 3, "a step longer than mean + stddev * sd is an outlier", NULL, RP_NUMBER},
    {"mode", 0, "which steps: all, train or eval", "all,train,eval", RP_NUMBER},
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

struct init_state {
    int64_t first_step_ns; /* 0 until seen */
};

static void init_fire_none(struct rule_ctx *c, int64_t start, int64_t t1);
static void init_no_step_yet(struct rule_ctx *c, int64_t start, int64_t t1, double waited,
                             double limit_ns);

static void init_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct init_state *st = p;
    double limit_ns = c->param[0] * 60e9;
    int64_t start = rules_run(c->eng)->start_ns;
    int had = st->first_step_ns != 0;
    for (uint32_t i = 0; i < w->nsteps; i++)
        if (!st->first_step_ns || w->steps[i].start_ns < st->first_step_ns)
            st->first_step_ns = w->steps[i].start_ns;
    if (st->first_step_ns) {
        double init = (double)(st->first_step_ns - start);
        if (!had && init > limit_ns)
            rule_fire_range(c, start, st->first_step_ns, "node", NULL,
                            "the first step began %.1f min after the start (limit %g min)",
                            init / 60e9, c->param[0]);
        else if (!had)
            rule_status(c, RULE_OK, "the first step began %.1f s after the start", init / 1e9);
        return;
    }
    /* Steps arrive when they end, so a first step that began before the
     * limit may still be running: past the limit, wait for it, and say so
     * only when twice the limit has gone by (or at the end) with none. */
    init_no_step_yet(c, start, w->t1, (double)(w->t1 - start), limit_ns);
}

static void init_no_step_yet(struct rule_ctx *c, int64_t start, int64_t t1, double waited,
                             double limit_ns)
{
    if (waited > 2 * limit_ns)
        init_fire_none(c, start, t1);
    else
        rule_status(c, RULE_WAITING, "no step yet, %.0f s after the start", waited / 1e9);
}

static void init_fire_none(struct rule_ctx *c, int64_t start, int64_t t1)
{
    rule_fire_range(c, start, t1, "node", NULL,
                    "no step has begun %.1f min after the start (limit %g min)",
                    (double)(t1 - start) / 60e9, c->param[0]);
}

static void init_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct init_state *st = p;
    int64_t start = rules_run(c->eng)->start_ns;
    if (st->first_step_ns || c->result->status == RULE_FIRED)
        return;
    double waited = (double)(w->t1 - start), limit_ns = c->param[0] * 60e9;
    if (rules_run(c->eng)->running) /* as live: a first step may still be running */
        init_no_step_yet(c, start, w->t1, waited, limit_ns);
    else if (waited > limit_ns)
        init_fire_none(c, start, w->t1);
    else
        rule_status(c, RULE_NA, "no steps recorded");
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
    int cores = rules_run(c->eng)->cpu_count > 0 ? rules_run(c->eng)->cpu_count : 1;
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

enum usage_metric { U_CPU, U_MEM, U_IO, U_NET, U_DISK, U_GPU, U_GPU_MEM, U_COUNT };
static const char *const usage_names[U_COUNT] = {
    "cpu_pct",          "memory_pct", "iowait_pct",    "network_bytes_per_s",
    "disk_bytes_per_s", "gpu_pct",    "gpu_memory_pct"};

struct usage_state {
    struct node_set nodes;
    struct sketch sk[MAX_NODES][U_COUNT];
    double mem_total[MAX_NODES];
    double gpu_total[MAX_NODES][MAX_GPUS];
};

static void usage_release(void *p)
{
    struct usage_state *st = p;
    for (uint32_t n = 0; n < MAX_NODES; n++)
        for (int u = 0; u < U_COUNT; u++)
            sketch_release(&st->sk[n][u]);
}

/* Sum per timestamp of the series of metric m on node (every disk, every
 * interface), into sketch: the recorder stamps a frame's series alike. */
static void sketch_sum(struct sketch *sk, const struct rule_window *w, const char *node,
                       enum rule_metric m1, enum rule_metric m2)
{
    const struct rule_series *ss[MAX_DEV_SERIES];
    uint32_t n = 0, pos[MAX_DEV_SERIES] = {0};
    for (uint32_t i = 0; i < w->nseries && n < MAX_DEV_SERIES; i++)
        if ((w->series[i].metric == m1 || w->series[i].metric == m2) &&
            strcmp(w->series[i].node, node) == 0)
            ss[n++] = &w->series[i];
    if (!n)
        return;
    const struct rule_series *clock = ss[0];
    for (uint32_t k = 0; k < clock->n; k++) {
        double sum = 0, v;
        for (uint32_t j = 0; j < n; j++)
            if (series_value_at(ss[j], &pos[j], clock->ts[k], &v))
                sum += v;
        sketch_add(sk, sum);
    }
}

static void usage_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct usage_state *st = p;
    struct node_set nodes;
    window_nodes(w, &nodes);
    for (uint32_t k = 0; k < nodes.n; k++) {
        const char *node = nodes.name[k];
        int ni = node_index(&st->nodes, node);
        if (ni < 0)
            continue;
        const struct rule_series *s = window_series(w, RM_CPU_UTIL, -1, node);
        for (uint32_t i = 0; s && i < s->n; i++)
            sketch_add(&st->sk[ni][U_CPU], s->v[i]);
        const struct rule_series *tot = window_series(w, RM_MEM_TOTAL, -1, node);
        if (tot && tot->n)
            st->mem_total[ni] = tot->v[tot->n - 1];
        const struct rule_series *used = window_series(w, RM_MEM_USED, -1, node);
        if (used && st->mem_total[ni] > 0)
            for (uint32_t i = 0; i < used->n; i++)
                sketch_add(&st->sk[ni][U_MEM], 100.0 * used->v[i] / st->mem_total[ni]);
        const struct rule_series *pct = window_series(w, RM_MEM_USED_PCT, -1, node);
        for (uint32_t i = 0; pct && i < pct->n; i++)
            sketch_add(&st->sk[ni][U_MEM], pct->v[i]);
        const struct rule_series *io = window_series(w, RM_CPU_IOWAIT, -1, node);
        for (uint32_t i = 0; io && i < io->n; i++)
            sketch_add(&st->sk[ni][U_IO], io->v[i]);
        sketch_sum(&st->sk[ni][U_NET], w, node, RM_NET_RX, RM_NET_TX);
        sketch_sum(&st->sk[ni][U_DISK], w, node, RM_DISK_READ, RM_DISK_WRITE);
        for (uint32_t i = 0; i < w->nseries; i++) {
            const struct rule_series *g = &w->series[i];
            if (g->metric != RM_GPU_UTIL || strcmp(g->node, node) != 0 || g->index < 0 ||
                g->index >= MAX_GPUS)
                continue;
            for (uint32_t j = 0; j < g->n; j++)
                sketch_add(&st->sk[ni][U_GPU], g->v[j]);
            int as_bytes;
            const struct rule_series *m =
                gpu_mem_series(w, node, g->index, &st->gpu_total[ni][g->index], &as_bytes);
            for (uint32_t j = 0; m && j < m->n; j++)
                sketch_add(&st->sk[ni][U_GPU_MEM],
                           gpu_mem_pct(m->v[j], st->gpu_total[ni][g->index], as_bytes));
        }
    }
    rule_status(c, RULE_REPORT, "statistics at the end of the run");
}

static void json_stat(struct strbuf *o, const char *key, const struct sketch *sk)
{
    strbuf_add_json_str(o, key);
    strbuf_adds(o, ":{\"count\":");
    strbuf_addf(o, "%llu", (unsigned long long)sk->count);
    static const struct {
        const char *k;
        double q;
    } qs[] = {{"max", 1}, {"p99", 0.99}, {"p95", 0.95}, {"p50", 0.5}, {"min", 0}};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        strbuf_addf(o, ",\"%s\":", qs[i].k);
        strbuf_add_json_num(o, sketch_quantile(sk, qs[i].q));
    }
    strbuf_addch(o, '}');
}

static void usage_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct usage_state *st = p;
    struct strbuf o;
    strbuf_init(&o);
    strbuf_adds(&o, "{\"nodes\":{");
    char detail[256] = "";
    for (uint32_t n = 0; n < st->nodes.n; n++) {
        if (n)
            strbuf_addch(&o, ',');
        const char *name = *st->nodes.name[n] ? st->nodes.name[n] : rules_run(c->eng)->host;
        strbuf_add_json_str(&o, name ? name : "");
        strbuf_addch(&o, ':');
        strbuf_addch(&o, '{');
        int first = 1;
        for (int u = 0; u < U_COUNT; u++) {
            if (!st->sk[n][u].count)
                continue;
            if (!first)
                strbuf_addch(&o, ',');
            first = 0;
            json_stat(&o, usage_names[u], &st->sk[n][u]);
        }
        strbuf_addch(&o, '}');
        if (!n) {
            char mem[48] = ""; /* without memory samples its quantile is NaN */
            if (st->sk[n][U_MEM].count)
                snprintf(mem, sizeof(mem), "; memory p95 %.0f %%",
                         sketch_quantile(&st->sk[n][U_MEM], 0.95));
            snprintf(detail, sizeof(detail), "CPU p50 %.0f %%, p95 %.0f %%%s%s",
                     sketch_quantile(&st->sk[n][U_CPU], 0.5),
                     sketch_quantile(&st->sk[n][U_CPU], 0.95), mem,
                     st->sk[n][U_GPU].count ? "; GPUs in the report" : "");
        }
    }
    strbuf_adds(&o, "}}");
    rule_set_report(c, strbuf_detach(&o));
    rule_status(c, RULE_REPORT, "%s", *detail ? detail : "no system samples");
}

const struct rule_def rule_overall_system_usage = {
    "OverallSystemUsage",       "sagemaker",   SEV_INFO,     NULL,         0,
    sizeof(struct usage_state), usage_release, usage_window, usage_finish, "",
};

/* ---- OverallFrameworkMetrics ------------------------------------------------------------------
 */

struct framework_state {
    struct step_totals all;
    uint32_t ranks_seen;
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
    rule_status(c, RULE_REPORT, "statistics at the end of the run");
}

static void framework_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct framework_state *st = p;
    if (!st->all.steps) {
        not_yet(c, "no steps recorded");
        return;
    }
    struct strbuf o;
    strbuf_init(&o);
    strbuf_addf(&o, "{\"steps\":%u,\"step_s\":", st->all.steps);
    strbuf_add_json_num(&o, st->all.step_ns / 1e9);
    strbuf_adds(&o, ",\"phases\":{");
    for (int q = 0; q < PHASE_COUNT; q++) {
        strbuf_addf(&o, "%s\"%s\":", q ? "," : "", phase_names[q]);
        strbuf_add_json_num(&o, st->all.phase_ns[q] / st->all.step_ns);
    }
    strbuf_adds(&o, "},\"comm_exposed\":");
    strbuf_add_json_num(&o, st->all.comm_exposed_ns / st->all.step_ns);
    /* strobe's steps carry no train/eval mode, and operator times come with
     * a torch.profiler window: say so rather than invent shares */
    strbuf_adds(&o, ",\"modes\":{\"train\":");
    strbuf_addf(&o, "%u,\"eval\":0},\"operators\":null}", st->all.steps);
    rule_set_report(c, strbuf_detach(&o));
    char text[400];
    step_totals_text(&st->all, text, sizeof(text));
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
