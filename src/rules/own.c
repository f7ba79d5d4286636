/*
 * strobe's own rules: what data-parallel and CPU training need and
 * SageMaker's set does not say. Their parameters, defaults and the reasons
 * for each threshold are in docs/rules.md; keep the two in step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_internal.h"

#define NPARAMS(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* The ranks in the window's steps (-1 for steps without a rank), sorted. */
static uint32_t window_ranks(const struct rule_window *w, int64_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nsteps; i++) {
        int64_t r = w->steps[i].rank;
        uint32_t k = 0;
        while (k < n && out[k] != r)
            k++;
        if (k == n && n < cap)
            out[n++] = r;
    }
    for (uint32_t i = 1; i < n; i++) /* insertion sort: a handful of ranks */
        for (uint32_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int64_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void rank_scope(char *out, size_t cap, int64_t rank)
{
    if (rank >= 0)
        snprintf(out, cap, "rank=%lld", (long long)rank);
    else
        snprintf(out, cap, "node");
}

static double host_cpu_p95(const struct rule_window *w)
{
    const struct rule_series *s = window_series(w, RM_CPU_UTIL, -1, "");
    if (!s || !s->n)
        return NAN;
    double *scratch = malloc(s->n * sizeof(*scratch));
    if (!scratch)
        return NAN;
    double q = series_quantile(s, 0.95, scratch);
    free(scratch);
    return q;
}

/* ---- InputBound ------------------------------------------------------------------- */

static void input_bound_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    int64_t ranks[64];
    uint32_t nr = window_ranks(w, ranks, 64);
    if (!nr) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no steps yet");
        return;
    }
    double worst = 0;
    uint32_t judged = 0;
    for (uint32_t i = 0; i < nr; i++) {
        struct step_totals t;
        window_step_totals(w, ranks[i], &t);
        if (t.steps < min_steps || t.step_ns <= 0)
            continue;
        judged++;
        c->result->datapoints += t.steps;
        double share = 100.0 * t.phase_ns[PHASE_DATA] / t.step_ns;
        if (share > worst)
            worst = share;
        if (share <= threshold)
            continue;
        char scope[32], ev[512], cpu[48] = "";
        rank_scope(scope, sizeof(scope), ranks[i]);
        step_totals_text(&t, ev, sizeof(ev));
        double p95 = host_cpu_p95(w);
        if (isfinite(p95))
            snprintf(cpu, sizeof(cpu), ", p95 host CPU %.0f %%", p95);
        rule_fire_range(c, w->t0, w->t1, scope, ev,
                        "waiting for data took %.0f %% of step time over %u steps (%u data-loader "
                        "workers%s)",
                        share, t.steps, w->workers, cpu);
    }
    if (!judged) { /* too few steps to judge: this window says nothing */
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no window with %u steps yet", min_steps);
        return;
    }
    rule_status(c, RULE_OK, "data wait at most %.0f %% of step time", worst);
}

static const struct rule_param input_bound_params[] = {
    {"threshold", INPUT_BOUND_DEFAULT_PCT, "pct of step time spent waiting for data", NULL,
     RP_PERCENT},
    {"min_steps", 5, "steps a window needs to be judged", NULL, RP_COUNT},
};

const struct rule_def rule_input_bound = {
    "InputBound",
    "strobe",
    SEV_HIGH,
    input_bound_params,
    NPARAMS(input_bound_params),
    0,
    NULL,
    input_bound_window,
    NULL,
    "the training loop waits for its input: raise DataLoader num_workers and prefetch_factor, "
    "use pin_memory with a GPU, cache or pre-process the data, read it from faster storage",
};

/* ---- Straggler -------------------------------------------------------------------------- */

struct straggler_state {
    int64_t rank;    /* the rank that lagged in the last window, -2 none */
    uint32_t streak; /* consecutive windows it did */
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over the window's steps of rank r of the work a step did: its
 * time less the communication it spent waiting (DDP's all-reduce waits for
 * the slowest rank, so the fast ranks' steps stretch to the straggler's). */
static double rank_work_median(const struct rule_window *w, int64_t rank, uint32_t *n,
                               double *data_share, int64_t *pid)
{
    double *v = malloc((w->nsteps + 1) * sizeof(*v));
    double data = 0, total = 0;
    *n = 0;
    if (!v)
        return NAN;
    for (uint32_t i = 0; i < w->nsteps; i++) {
        const struct rule_step *s = &w->steps[i];
        if (s->rank != rank)
            continue;
        double d = (double)(s->end_ns - s->start_ns);
        double comm =
            s->phase_ns[PHASE_COMM] > s->comm_all_ns ? s->phase_ns[PHASE_COMM] : s->comm_all_ns;
        v[(*n)++] = d - (comm < d ? comm : d);
        data += s->phase_ns[PHASE_DATA];
        total += d;
        *pid = s->pid;
    }
    qsort(v, *n, sizeof(*v), cmp_d);
    double m = *n ? (*n % 2 ? v[*n / 2] : (v[*n / 2 - 1] + v[*n / 2]) / 2) : NAN;
    *data_share = total > 0 ? 100.0 * data / total : 0;
    free(v);
    return m;
}

/* A rank's CPU time per step in the window, in units of the window's span
 * (the same for every rank, so it cancels in ratios); NAN when unknown. */
static double cpu_per_step(const struct rule_window *w, int64_t pid, uint32_t steps)
{
    double share = series_mean(window_series(w, RM_PROC_CPU_PID, pid, NULL));
    return steps && isfinite(share) ? share / steps : NAN;
}

/* The likely cause of rank slow's lag, from the ranks' own numbers. Its
 * CPU share cannot tell: DDP's all-reduce makes every rank's step as long
 * as the straggler's, so all of them spend about the same CPU per second
 * whether it does more work or gets less of a core for the same work. Its
 * CPU time per step can: more work takes more CPU time, a core shared with
 * other work (or time stolen from the VM, or a throttled cgroup) spreads
 * the same CPU time over longer steps. */
static void straggler_cause(const struct rule_window *w, uint32_t slow, uint32_t n,
                            const double *data, const int64_t *pids, const uint32_t *nsteps,
                            double work_ratio, char *out, size_t cap)
{
    double other_data = 0, other_cpu = 0;
    uint32_t ncpu = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == slow)
            continue;
        other_data += data[i] / (n - 1);
        double v = cpu_per_step(w, pids[i], nsteps[i]);
        if (isfinite(v)) {
            other_cpu += v;
            ncpu++;
        }
    }
    double cpu_ratio = cpu_per_step(w, pids[slow], nsteps[slow]) / (ncpu ? other_cpu / ncpu : NAN);
    if (data[slow] > other_data + 10)
        snprintf(out, cap, "it waits for data (%.0f %% of its step against %.0f %%)", data[slow],
                 other_data);
    else if (!isfinite(cpu_ratio) || cpu_ratio <= 0)
        snprintf(out, cap,
                 "it computes longer, as far as strobe can see (no CPU time per process): uneven "
                 "work per rank or a slower device");
    else if (cpu_ratio - 1 >= 0.5 * (work_ratio - 1)) /* the CPU time grew with the work */
        snprintf(out, cap,
                 "it uses %.0f %% more CPU time per step than the others: more work on it (uneven "
                 "data per rank, work done on it alone) or a slower core or device",
                 100.0 * (cpu_ratio - 1));
    else
        snprintf(out, cap,
                 "it uses %.0f %% of the others' CPU time per step over %.0f %% longer: it gets "
                 "less of a core for the same work (other work on its cores, CPU throttling, time "
                 "stolen from the VM) or waits on a slower device",
                 100.0 * cpu_ratio, 100.0 * (work_ratio - 1));
}

static void straggler_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct straggler_state *st = p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    uint32_t windows = c->param[2] < 1 ? 1 : (uint32_t)c->param[2];
    int64_t ranks[64];
    uint32_t nr = window_ranks(w, ranks, 64);
    double work[64], data[64];
    int64_t pids[64];
    uint32_t ok = 0, idx[64], nsteps[64];
    for (uint32_t i = 0; i < nr; i++) {
        if (ranks[i] < 0)
            continue;
        work[ok] = rank_work_median(w, ranks[i], &nsteps[ok], &data[ok], &pids[ok]);
        if (nsteps[ok] >= min_steps && isfinite(work[ok]))
            idx[ok++] = i;
    }
    if (ok < 2) {
        if (c->result->status != RULE_OK)
            rule_status(c, RULE_NA, "fewer than 2 ranks with steps: not data-parallel");
        st->streak = 0;
        return;
    }
    c->result->datapoints++;
    uint32_t slow = 0;
    for (uint32_t i = 1; i < ok; i++)
        if (work[i] > work[slow])
            slow = i;
    double others[64];
    uint32_t no = 0;
    for (uint32_t i = 0; i < ok; i++)
        if (i != slow)
            others[no++] = work[i];
    qsort(others, no, sizeof(*others), cmp_d);
    double ref = no % 2 ? others[no / 2] : (others[no / 2 - 1] + others[no / 2]) / 2;
    double lag = ref > 0 ? 100.0 * (work[slow] - ref) / ref : 0;
    int64_t rank = ranks[idx[slow]];
    if (lag <= threshold) {
        st->streak = 0;
        rule_status(c, RULE_OK, "the slowest rank works %.0f %% longer than the others", lag);
        return;
    }
    st->streak = st->rank == rank ? st->streak + 1 : 1;
    st->rank = rank;
    if (st->streak < windows) {
        rule_status(c, RULE_OK, "rank %lld lagged %.0f %% in %u window(s) of %u", (long long)rank,
                    lag, st->streak, windows);
        return;
    }
    char cause[256];
    straggler_cause(w, slow, ok, data, pids, nsteps, 1.0 + lag / 100.0, cause, sizeof(cause));
    char scope[32], ev[512];
    rank_scope(scope, sizeof(scope), rank);
    window_steps_text(w, rank, ev, sizeof(ev));
    rule_fire_range(c, w->t0, w->t1, scope, ev,
                    "rank %lld (pid %lld) works %.0f %% longer per step than the others (median "
                    "%.1f ms against %.1f ms, waiting excluded) in %u windows in a row; likely "
                    "cause: %s",
                    (long long)rank, (long long)pids[slow], lag, work[slow] / 1e6, ref / 1e6,
                    st->streak, cause);
}

static const struct rule_param straggler_params[] = {
    {"threshold", 25, "pct more work per step than the median of the other ranks", NULL, RP_NUMBER},
    {"min_steps", 5, "steps per rank a window needs", NULL, RP_COUNT},
    {"windows", 2, "consecutive windows the same rank must lag", NULL, RP_WINDOW},
};

const struct rule_def rule_straggler = {
    "Straggler",
    "strobe",
    SEV_HIGH,
    straggler_params,
    NPARAMS(straggler_params),
    sizeof(struct straggler_state),
    NULL,
    straggler_window,
    NULL,
    "every rank waits for the slowest one at each all-reduce: fix the cause on that rank "
    "(its data loading, CPU share or device), or balance the work per rank",
};

/* ---- CommunicationBound --------------------------------------------------------------------- */

static void comm_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    int64_t ranks[64];
    uint32_t nr = window_ranks(w, ranks, 64);
    double least = INFINITY, most = 0;
    int64_t least_rank = -1;
    int any = 0;
    uint32_t judged = 0;
    for (uint32_t i = 0; i < nr; i++) {
        struct step_totals t;
        window_step_totals(w, ranks[i], &t);
        if (t.steps < min_steps || t.step_ns <= 0)
            continue;
        judged++;
        double share = 100.0 * t.comm_exposed_ns / t.step_ns;
        if (t.comm_exposed_ns > 0)
            any = 1;
        if (share < least) {
            least = share;
            least_rank = ranks[i];
        }
        if (share > most)
            most = share;
    }
    if (!judged) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no steps yet");
        return;
    }
    if (!any) {
        if (c->result->status != RULE_OK)
            rule_status(c, RULE_NA, "no collectives recorded");
        return;
    }
    c->result->datapoints++;
    /* the rank that waits least shows what communication itself costs: the
     * others' extra wait is a straggler's doing (the Straggler rule) */
    if (least > threshold) {
        char ev[512];
        window_steps_text(w, -2, ev, sizeof(ev));
        char who[40] = "the steps without a rank"; /* ranks -1: no rank, and no pid here */
        if (least_rank >= 0)
            snprintf(who, sizeof(who), "rank %lld", (long long)least_rank);
        rule_fire_range(c, w->t0, w->t1, "node", ev,
                        "collectives take %.0f %% or more of step time on every rank (least: %s, "
                        "%.0f %%; most %.0f %%)",
                        least, who, least, most);
    } else {
        rule_status(c, RULE_OK, "communication at least %.0f %% of step time", least);
    }
}

static const struct rule_param comm_params[] = {
    {"threshold", 30, "pct of step time in collectives, on the rank that waits least", NULL,
     RP_PERCENT},
    {"min_steps", 5, "steps per rank a window needs", NULL, RP_COUNT},
};

const struct rule_def rule_communication_bound = {
    "CommunicationBound",
    "strobe",
    SEV_HIGH,
    comm_params,
    NPARAMS(comm_params),
    0,
    NULL,
    comm_window,
    NULL,
    "collectives dominate: overlap them with compute (DDP bucket_cap_mb, gradient "
    "accumulation with no_sync), compress gradients, or use a faster interconnect/backend "
    "(NCCL over NVLink or InfiniBand)",
};

/* ---- CPUThrottling -----------------------------------------------------------------------------
 */

static void throttling_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)p;
    double threshold = c->param[0];
    const struct rule_series *s = window_series(w, RM_CG_THROTTLED, -1, NULL);
    if (!s) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_NA, "no CFS throttling statistics (cgroup cpu.stat)");
        return;
    }
    if (!w->nsteps)
        return; /* throttling outside the training loop costs no step time */
    double mean = series_mean_in_steps(s, w); /* nor in a window's part without steps */
    if (!isfinite(mean))
        return;
    c->result->datapoints += s->n;
    if (mean > threshold) {
        char ev[512];
        window_steps_text(w, -2, ev, sizeof(ev));
        double used = series_mean(window_series(w, RM_PROC_CPU, -1, NULL));
        char cpu[48] = ""; /* NaN without proc.cpu (an imported run) */
        if (isfinite(used))
            snprintf(cpu, sizeof(cpu), "; the job used %.0f %% of a core", used);
        rule_fire_range(c, w->t0, w->t1, "node", ev,
                        "the job's cgroup was throttled %.0f %% of the time (CFS quota) while "
                        "steps ran%s",
                        mean, cpu);
    } else {
        rule_status(c, RULE_OK, "throttled %.1f %% of the time", mean);
    }
}

static const struct rule_param throttling_params[] = {
    {"threshold", 5, "pct of wall time the cgroup is throttled", NULL, RP_PERCENT},
};

const struct rule_def rule_cpu_throttling = {
    "CPUThrottling",
    "strobe",
    SEV_HIGH,
    throttling_params,
    NPARAMS(throttling_params),
    0,
    NULL,
    throttling_window,
    NULL,
    "the container's CPU quota stalls the job: raise the quota (cpus/limits), or lower "
    "torch.set_num_threads and num_workers to fit it",
};

/* ---- MemoryPressure ----------------------------------------------------------------------------
 */

struct memory_state {
    double *ts, *rss; /* the job's RSS over the last trend_s */
    uint32_t n, cap;
    double headroom;       /* bytes before out of memory, last known */
    int64_t first_step_ns; /* 0 until a step is seen */
};

static void memory_release(void *p)
{
    struct memory_state *st = p;
    free(st->ts);
    free(st->rss);
}

static void memory_headroom(struct memory_state *st, const struct rule_window *w)
{
    const struct rule_series *avail = window_series(w, RM_MEM_AVAILABLE, -1, "");
    const struct rule_series *lim = window_series(w, RM_CG_MEM_LIMIT, -1, "");
    const struct rule_series *used = window_series(w, RM_CG_MEM_USED, -1, "");
    if (avail && avail->n)
        st->headroom = avail->v[avail->n - 1];
    if (lim && lim->n && used && used->n && isfinite(lim->v[lim->n - 1])) {
        double left = lim->v[lim->n - 1] - used->v[used->n - 1];
        if (left < st->headroom || !(st->headroom > 0))
            st->headroom = left > 0 ? left : 0;
    }
}

/* Keep the RSS points from keep_from on: the trend's history. */
static void memory_push(struct memory_state *st, const struct rule_series *s, int64_t keep_from)
{
    uint32_t out = 0;
    for (uint32_t i = 0; i < st->n; i++)
        if (st->ts[i] >= (double)keep_from) {
            st->ts[out] = st->ts[i];
            st->rss[out++] = st->rss[i];
        }
    st->n = out;
    for (uint32_t i = 0; s && i < s->n; i++) {
        if (!isfinite(s->v[i]) || s->ts[i] < keep_from)
            continue;
        if (st->n == st->cap) {
            uint32_t cap = st->cap ? st->cap * 2 : 1024;
            double *a = realloc(st->ts, cap * sizeof(*a));
            if (!a)
                return;
            st->ts = a;
            double *b = realloc(st->rss, cap * sizeof(*b));
            if (!b)
                return;
            st->rss = b;
            st->cap = cap;
        }
        st->ts[st->n] = (double)s->ts[i];
        st->rss[st->n++] = s->v[i];
    }
}

static void fmt_mib(double b, char *out, size_t cap)
{
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(out, cap, "%.1f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(out, cap, "%.0f MiB", b / (1024.0 * 1024));
}

static void memory_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct memory_state *st = p;
    double horizon_s = c->param[0] * 60, trend_s = c->param[1], r2_min = c->param[2];
    double swap_t = c->param[3], psi_t = c->param[4];
    memory_headroom(st, w);
    const struct rule_series *rss = window_series(w, RM_PROC_RSS, -1, "");
    /* A leak is growth across steps: loading the data or the model before
     * the first step grows RSS fast and then stops, and is no leak. */
    for (uint32_t i = 0; i < w->nsteps; i++)
        if (!st->first_step_ns || w->steps[i].start_ns < st->first_step_ns)
            st->first_step_ns = w->steps[i].start_ns;
    int64_t keep_from = w->t1 - (int64_t)(trend_s * 1e9);
    if (st->first_step_ns)
        memory_push(st, rss, keep_from > st->first_step_ns ? keep_from : st->first_step_ns);
    char why[3][300];
    int nwhy = 0;
    double swapin = series_mean(window_series(w, RM_SWAPIN, -1, ""));
    if (isfinite(swapin) && swapin > swap_t)
        snprintf(why[nwhy++], sizeof(why[0]), "swapping in %.0f pages/s (> %g)", swapin, swap_t);
    double psi = series_mean(window_series(w, RM_PSI_MEM, -1, ""));
    if (isfinite(psi) && psi > psi_t)
        snprintf(why[nwhy++], sizeof(why[0]),
                 "tasks stalled on memory %.0f %% of the time (PSI, > %g %%)", psi, psi_t);
    int judged = isfinite(swapin) || isfinite(psi);
    if (st->n >= 10 && st->ts[st->n - 1] - st->ts[0] >= 0.9 * trend_s * 1e9) {
        judged = 1;
        c->result->datapoints++;
        double t0 = st->ts[0];
        double *x = malloc(st->n * sizeof(*x));
        if (x) {
            for (uint32_t i = 0; i < st->n; i++)
                x[i] = (st->ts[i] - t0) / 1e9;
            struct fit all = stats_linear_fit(x, st->rss, st->n);
            uint32_t h = st->n / 2;
            struct fit first = stats_linear_fit(x, st->rss, h);
            struct fit second = stats_linear_fit(x + h, st->rss + h, st->n - h);
            free(x);
            /* growth that keeps its pace: a warm-up's allocations slow down */
            if (all.slope > 0 && all.r2 >= r2_min && second.slope >= 0.5 * first.slope &&
                st->headroom > 0 && st->headroom / all.slope < horizon_s) {
                char left[32];
                fmt_mib(st->headroom, left, sizeof(left));
                double eta = st->headroom / all.slope;
                snprintf(why[nwhy++], sizeof(why[0]),
                         "the job's RSS grows %.1f MiB/s (R^2 %.2f over the last %g s); with "
                         "%s left it runs out of memory in about %.0f min",
                         all.slope / (1024.0 * 1024), all.r2, trend_s, left, eta / 60);
            }
        }
    }
    if (!nwhy) {
        if (judged)
            rule_status(c, RULE_OK, "no swap-in, memory stalls or growth towards the limit");
        else
            rule_status(c, RULE_WAITING, "%g s of memory history needed", trend_s);
        return;
    }
    char text[960];
    snprintf(text, sizeof(text), "%s%s%s%s%s", why[0], nwhy > 1 ? "; " : "", nwhy > 1 ? why[1] : "",
             nwhy > 2 ? "; " : "", nwhy > 2 ? why[2] : "");
    rule_fire_range(c, w->t0, w->t1, "node", NULL, "%s", text);
}

static const struct rule_param memory_params[] = {
    {"horizon_min", 60, "fire when out of memory is projected within this many minutes", NULL,
     RP_NUMBER},
    {"trend_s", 60, "seconds of RSS history the projection fits", NULL, RP_NUMBER},
    {"r2", 0.9, "how straight the growth must be (R^2 of the fit)", NULL, RP_FRACTION},
    {"swapin_per_s", 100, "pages swapped in per second", NULL, RP_NUMBER},
    {"psi_mem_some", 10, "pct of time some task stalled on memory", NULL, RP_PERCENT},
};

const struct rule_def rule_memory_pressure = {
    "MemoryPressure",
    "strobe",
    SEV_HIGH,
    memory_params,
    NPARAMS(memory_params),
    sizeof(struct memory_state),
    memory_release,
    memory_window,
    NULL,
    "memory runs short: look for objects kept across steps (lists of losses or outputs, caches), "
    "lower the batch size or data-loader prefetching, or give the job more memory",
};

/* ---- GPUThrottling ------------------------------------------------------------------------------
 */

/* nvmlClocksThrottleReasons that mean power or heat (not idle, not the
 * application clock setting): SW power cap, HW slowdown, SW thermal, HW
 * thermal, HW power brake. */
#define THROTTLE_POWER_THERMAL 0xECull

struct gpu_throttle_state {
    struct node_set nodes;
    uint64_t busy[MAX_NODES][MAX_GPUS], throttled[MAX_NODES][MAX_GPUS];
    uint64_t reasons[MAX_NODES][MAX_GPUS];
    double util[MAX_NODES][MAX_GPUS];
};

static void reasons_text(uint64_t mask, char *out, size_t cap)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {{0x4, "SW power cap"},
                 {0x8, "HW slowdown"},
                 {0x20, "SW thermal"},
                 {0x40, "HW thermal"},
                 {0x80, "HW power brake"}};
    out[0] = 0;
    size_t n = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (mask & names[i].bit) {
            int k = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", names[i].name);
            if (k < 0 || (size_t)k >= cap - n)
                break;
            n += (size_t)k;
        }
}

static void gpu_throttle_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct gpu_throttle_state *st = p;
    double threshold = c->param[0];
    uint64_t min_samples = (uint64_t)c->param[1];
    if (rule_na_without_gpu_util(c))
        return;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *tr = &w->series[i];
        if (tr->metric != RM_GPU_THROTTLE || tr->index < 0 || tr->index >= MAX_GPUS)
            continue;
        int ni = node_index(&st->nodes, tr->node);
        if (ni < 0)
            continue;
        const struct rule_series *util = window_series(w, RM_GPU_UTIL, tr->index, tr->node);
        uint32_t pos = 0;
        for (uint32_t k = 0; k < tr->n; k++) {
            double u;
            if (series_value_at(util, &pos, tr->ts[k], &u))
                st->util[ni][tr->index] = u;
            if (!(st->util[ni][tr->index] > 0) || !isfinite(tr->v[k]))
                continue; /* an idle GPU lowers its clocks on purpose */
            st->busy[ni][tr->index]++;
            uint64_t mask = (uint64_t)tr->v[k] & THROTTLE_POWER_THERMAL;
            if (mask) {
                st->throttled[ni][tr->index]++;
                st->reasons[ni][tr->index] |= mask;
            }
        }
        uint64_t busy = st->busy[ni][tr->index], thr = st->throttled[ni][tr->index];
        c->result->datapoints = busy;
        if (busy < min_samples) {
            rule_status(c, RULE_WAITING, "%llu busy samples of %llu needed",
                        (unsigned long long)busy, (unsigned long long)min_samples);
            continue;
        }
        double share = 100.0 * (double)thr / (double)busy;
        if (share > threshold) {
            char scope[80], why[128];
            scope_name(scope, sizeof(scope), tr->node, tr->index);
            reasons_text(st->reasons[ni][tr->index], why, sizeof(why));
            double mhz = series_mean(window_series(w, RM_GPU_SM_CLOCK, tr->index, tr->node));
            char clock[48] = ""; /* NaN without gpu.sm_clock_mhz */
            if (isfinite(mhz))
                snprintf(clock, sizeof(clock), "; mean SM clock this window %.0f MHz", mhz);
            rule_fire_range(c, w->t0, w->t1, scope, NULL,
                            "GPU %lld was power or thermal throttled in %.0f %% of %llu busy "
                            "samples (%s)%s",
                            (long long)tr->index, share, (unsigned long long)busy, why, clock);
        } else {
            rule_status(c, RULE_OK, "throttled in %.0f %% of busy samples", share);
        }
    }
}

static const struct rule_param gpu_throttle_params[] = {
    {"threshold", 10, "pct of busy samples with a power or thermal throttle reason", NULL,
     RP_PERCENT},
    {"min_samples", 50, "busy samples needed before judging", NULL, RP_COUNT},
};

const struct rule_def rule_gpu_throttling = {
    "GPUThrottling",
    "strobe",
    SEV_MEDIUM,
    gpu_throttle_params,
    NPARAMS(gpu_throttle_params),
    sizeof(struct gpu_throttle_state),
    NULL,
    gpu_throttle_window,
    NULL,
    "the GPU slows its clocks for power or heat: check cooling and airflow, the power limit "
    "(nvidia-smi -q -d POWER), and neighbours sharing the chassis",
};

/* ---- ThreadOversubscription ---------------------------------------------------------------------
 */

static void oversub_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)p;
    double psi_t = c->param[0], cpu_t = c->param[1];
    const struct rule_series *psi = window_series(w, RM_PSI_CPU, -1, "");
    if (!psi) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_NA, "no pressure stall information (/proc/pressure/cpu)");
        return;
    }
    if (!w->nsteps)
        return;
    c->result->datapoints += psi->n;
    /* while steps run: not a busy start-up or shutdown that shares the window */
    double stall = series_mean_in_steps(psi, w);
    double cpu = series_mean_in_steps(window_series(w, RM_CPU_UTIL, -1, ""), w);
    int cores = rules_run(c->eng)->cpu_count > 0 ? rules_run(c->eng)->cpu_count : 1;
    /* host PSI counts every tenant: the job itself must be what fills the cores */
    double job = series_mean_in_steps(window_series(w, RM_PROC_CPU, -1, ""), w);
    int job_fills = isfinite(job) && job >= c->param[2] * cores;
    if (isfinite(stall) && isfinite(cpu) && stall > psi_t && cpu > cpu_t && job_fills) {
        double threads = series_mean(window_series(w, RM_PROC_THREADS, -1, ""));
        char ev[512];
        window_steps_text(w, -2, ev, sizeof(ev));
        rule_fire_range(c, w->t0, w->t1, "node", ev,
                        "runnable threads waited for a core %.0f %% of the time while the %d "
                        "cores were %.0f %% busy; the job runs %.0f threads (%u data-loader "
                        "workers)",
                        stall, cores, cpu, threads, w->workers);
    } else {
        rule_status(c, RULE_OK, "CPU stalls %.0f %% of the time at %.0f %% busy",
                    isfinite(stall) ? stall : 0, isfinite(cpu) ? cpu : 0);
    }
}

static const struct rule_param oversub_params[] = {
    {"psi_cpu_some", 20, "pct of time some runnable task waited for a core (PSI)", NULL,
     RP_PERCENT},
    {"cpu_threshold", 90, "pct: the host's cores busier than this", NULL, RP_PERCENT},
    {"job_cpu_share", 75, "pct of every core the job's own processes use, at least", NULL,
     RP_PERCENT},
};

const struct rule_def rule_thread_oversubscription = {
    "ThreadOversubscription",
    "strobe",
    SEV_MEDIUM,
    oversub_params,
    NPARAMS(oversub_params),
    0,
    NULL,
    oversub_window,
    NULL,
    "more threads want the CPU than there are cores: set torch.set_num_threads (OMP_NUM_THREADS) "
    "to cores / processes, and count data-loader workers and ranks against the cores",
};

/* ---- the table
 * ----------------------------------------------------------------------------------- */

const struct rule_def *const rule_defs[] = {
    &rule_cpu_bottleneck,
    &rule_io_bottleneck,
    &rule_low_gpu_utilization,
    &rule_batch_size,
    &rule_gpu_memory_increase,
    &rule_load_balancing,
    &rule_step_outlier,
    &rule_max_initialization_time,
    &rule_dataloader,
    &rule_overall_system_usage,
    &rule_overall_framework_metrics,
    &rule_input_bound,
    &rule_straggler,
    &rule_communication_bound,
    &rule_cpu_throttling,
    &rule_memory_pressure,
    &rule_gpu_throttling,
    &rule_thread_oversubscription,
};

const uint32_t rule_def_count = sizeof(rule_defs) / sizeof(rule_defs[0]);
