/*
 * strobe's own rules: what data-parallel and CPU training need and
 * SageMaker's set does not say. Their parameters, defaults and the reasons
 * for each threshold are in docs/rules.md; keep the two in step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "rules/rules_internal.h"
#include "store/job.h"

#define NPARAMS(a) ((uint32_t)(ARRAY_SIZE(a)))

/* A process's steps are judged on their own: a rank of a node (ranks may
 * repeat across imported nodes), or the steps without a rank of a node. */
struct rank_key {
    uint32_t node;
    int64_t rank;
};

static int cmp_rank_key(const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;
    if (x->node != y->node)
        return (x->node > y->node) - (x->node < y->node);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The (node, rank) pairs of the window's training steps (rank -1 for steps
 * without a rank), sorted, each once, into *out (malloc'd, the caller frees;
 * NULL when there are none or no memory: then 0). As many as there are: a
 * run of 40 ranks on 20 nodes has 40. */
static uint32_t window_rank_keys(const struct rule_window *w, struct rank_key **out)
{
    *out = NULL;
    if (!w->nsteps || !(*out = malloc(w->nsteps * sizeof(**out))))
        return 0;
    for (uint32_t i = 0; i < w->nsteps; i++)
        (*out)[i] = (struct rank_key){w->steps[i].node_id, w->steps[i].rank};
    qsort(*out, w->nsteps, sizeof(**out), cmp_rank_key);
    uint32_t n = 1;
    for (uint32_t i = 1; i < w->nsteps; i++)
        if (cmp_rank_key(&(*out)[i], &(*out)[n - 1]))
            (*out)[n++] = (*out)[i];
    return n;
}

static void rank_scope(char *out, size_t cap, int64_t rank)
{
    if (rank >= 0)
        snprintf(out, cap, "rank=%lld", (long long)rank);
    else
        snprintf(out, cap, "node");
}

/* rank_scope() with the node of an imported run: "node=algo-2,rank=1",
 * "node=algo-2"; "rank=1" or "node" for a recording. */
static void key_scope(const struct rule_ctx *c, char *out, size_t cap, const struct rank_key *k)
{
    const char *node = rules_node_name(c->eng, k->node);
    if (!*node)
        rank_scope(out, cap, k->rank);
    else if (k->rank >= 0)
        snprintf(out, cap, "node=%s,rank=%lld", node, (long long)k->rank);
    else
        snprintf(out, cap, "node=%s", node);
}

/* The key in words: "rank 1", "rank 1 on algo-2" for an imported node (ranks
 * may repeat across nodes), "the steps without a rank" (on algo-2). */
static void key_who(const struct rule_ctx *c, char *out, size_t cap, const struct rank_key *k)
{
    const char *node = rules_node_name(c->eng, k->node);
    int n = k->rank >= 0 ? snprintf(out, cap, "rank %lld", (long long)k->rank)
                         : snprintf(out, cap, "the steps without a rank");
    if (*node && n >= 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, " on %s", node);
}

/* A pid as its node numbers it: a job's view numbers each node's pids
 * apart (store/job.h, JOB_PID_SHIFT); Linux pids stay below 2^22. */
static int64_t node_pid(const struct rule_ctx *c, const struct rank_key *k, int64_t pid)
{
    return *rules_node_name(c->eng, k->node) && pid > 0 ? pid & ((INT64_C(1) << JOB_PID_SHIFT) - 1)
                                                        : pid;
}

/* For a rule that judges training steps: at the end of a run without any,
 * n/a (a run still recording may yet bring them). */
static void na_without_steps(struct rule_ctx *c, int trained)
{
    if (trained || c->result->status == RULE_FIRED || c->result->status == RULE_NA)
        return;
    if (rules_run(c->eng)->running)
        rule_status(c, RULE_WAITING, "no training steps yet: the run is still recording");
    else
        rule_status(c, RULE_NA, "no training steps recorded: the rule judges steps");
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

struct trained_state {
    int trained; /* a training step was seen */
};

static void input_bound_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct trained_state *st = p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    struct rank_key *keys;
    uint32_t nr = window_rank_keys(w, &keys);
    if (!nr) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no training steps yet");
        return;
    }
    st->trained = 1;
    double worst = 0;
    uint32_t judged = 0;
    for (uint32_t i = 0; i < nr; i++) {
        struct step_totals t;
        window_step_totals_on(w, keys[i].node, keys[i].rank, &t);
        if (t.steps < min_steps || t.step_ns <= 0)
            continue;
        judged++;
        c->result->datapoints += t.steps;
        double share = 100.0 * t.phase_ns[PHASE_DATA] / t.step_ns;
        if (share > worst)
            worst = share;
        if (share <= threshold)
            continue;
        char scope[192], ev[512], cpu[48] = "";
        key_scope(c, scope, sizeof(scope), &keys[i]);
        step_totals_text(&t, ev, sizeof(ev));
        double p95 = host_cpu_p95(w);
        if (isfinite(p95))
            snprintf(cpu, sizeof(cpu), ", p95 host CPU %.0f %%", p95);
        rule_fire_range(c, w->t0, w->t1, scope, ev,
                        "waiting for data took %.0f %% of step time over %u steps (%u data-loader "
                        "workers%s)",
                        share, t.steps, w->workers, cpu);
    }
    free(keys);
    if (!judged) { /* too few steps to judge: this window says nothing */
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no window with %u steps yet", min_steps);
        return;
    }
    rule_status(c, RULE_OK, "data wait at most %.0f %% of step time", worst);
}

static void trained_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    na_without_steps(c, ((struct trained_state *)p)->trained);
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
    sizeof(struct trained_state),
    NULL,
    input_bound_window,
    trained_finish,
    "the training loop waits for its input: raise DataLoader num_workers and prefetch_factor, "
    "use pin_memory with a GPU, cache or pre-process the data, read it from faster storage",
};

/* ---- Straggler -------------------------------------------------------------------------- */

/*
 * Each rank is judged on its work per step: its step time less the
 * communication it waited in (DDP's all-reduce waits for the slowest rank,
 * so the fast ranks' steps stretch to the straggler's). The slowest rank's
 * extra work is then explained by what its process did in its steps, per
 * step, against the other ranks: more CPU time (more work on it), more
 * run-queue delay (less of a core for the same work), or more time with
 * neither (off the CPU: asleep, in I/O, on a lock, waiting for a device).
 */

/* Work values per rank kept for the whole-run verdict. That verdict is for
 * runs shorter than a few windows, far below this; past it the sums still
 * grow and the median is of the first ones. */
#define STRAGGLER_KEEP_STEPS 65536u

/* One rank's steps in a window, or in every window so far. */
struct rank_reading {
    struct rank_key key; /* its node and rank: ranks repeat across imported nodes */
    int64_t pid;
    struct step_totals tot; /* its steps; comm_exposed_ns: what it waited in */
    double *work;           /* each step's work, ns (malloc'd) */
    uint32_t nwork, work_cap;
    double median_ns;          /* of work[], once judged */
    int64_t first_ns, last_ns; /* its steps' span */
    /* proc.cpu{pid} and proc.runq_delay{pid} integrated over its steps'
     * span in each window (ns of CPU, ns waited), and the time covered */
    double cpu_ns, cpu_cover_ns, runq_ns, runq_cover_ns;
};

/* The ranks of a window or of the run, sorted by (node, rank). */
struct rank_set {
    struct rank_reading *r;
    uint32_t n, cap;
    /* cgroup.throttled_pct and cpu.steal integrated over the steps' span */
    double throttled_ns, throttled_cover_ns, steal_ns, steal_cover_ns;
};

struct straggler_state {
    struct rank_key key; /* the rank that lagged in the last window */
    uint32_t streak;     /* consecutive windows it did */
    uint32_t judged;     /* windows with two ranks or more */
    int fired;           /* a window fired */
    int run_dropped;     /* run no longer kept: the whole-run verdict cannot be needed */
    struct rank_set run; /* every window's readings, for the whole-run verdict */
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the finite values of v[0..n) (reordered); NAN without any. */
static double median_finite(double *v, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[k++] = v[i];
    qsort(v, k, sizeof(*v), cmp_d);
    return k ? (k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2) : NAN;
}

/* Make room for need elements of size bytes in *v (capacity *cap,
 * doubling from first). 0, or -1 without memory (*v unchanged). */
static int straggler_grow(void **v, uint32_t *cap, uint32_t need, size_t size, uint32_t first)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *p = realloc(*v, (size_t)c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static void rank_set_release(struct rank_set *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        free(s->r[i].work);
    free(s->r);
    memset(s, 0, sizeof(*s));
}

/* The reading of k's rank in s, a new one (zeroed) inserted where it is
 * missing; NULL without memory. Pointers into s last until the next
 * insertion. */
static struct rank_reading *rank_set_get(struct rank_set *s, const struct rank_key *k)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_rank_key(&s->r[mid].key, k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n && !cmp_rank_key(&s->r[lo].key, k))
        return &s->r[lo];
    if (straggler_grow((void **)&s->r, &s->cap, s->n + 1, sizeof(*s->r), 8) < 0)
        return NULL;
    memmove(&s->r[lo + 1], &s->r[lo], (s->n - lo) * sizeof(*s->r));
    s->n++;
    struct rank_reading *r = &s->r[lo];
    memset(r, 0, sizeof(*r));
    r->key = *k;
    r->tot.slowest_phase = -1;
    r->first_ns = INT64_MAX;
    r->last_ns = INT64_MIN;
    return r;
}

static void reading_add_work(struct rank_reading *r, double work_ns)
{
    if (r->nwork < STRAGGLER_KEEP_STEPS &&
        straggler_grow((void **)&r->work, &r->work_cap, r->nwork + 1, sizeof(*r->work), 64) == 0)
        r->work[r->nwork++] = work_ns;
}

/* A rate series in % (of a core, or of the time) integrated over [a, b]
 * into *sum_ns, and the part of [a, b] its points cover into *cover_ns.
 * Each point covers the time since the one before; the first, the spacing
 * after it (alone, the time since a). */
static void series_integrate(const struct rule_series *s, int64_t a, int64_t b, double *sum_ns,
                             double *cover_ns)
{
    for (uint32_t k = 0; s && k < s->n; k++) {
        int64_t hi = s->ts[k];
        int64_t lo = k ? s->ts[k - 1] : s->n > 1 ? hi - (s->ts[1] - hi) : a;
        double span = (double)((hi < b ? hi : b) - (lo > a ? lo : a));
        if (span <= 0 || !isfinite(s->v[k]))
            continue;
        *sum_ns += s->v[k] / 100.0 * span;
        *cover_ns += span;
    }
}

/* The window's ranks (steps of rank -1, not data-parallel, left out): their
 * steps, and their processes' CPU and run-queue delay over them. 0, or -1
 * without memory. */
static int window_readings(const struct rule_window *w, struct rank_set *s)
{
    struct rank_key *keys;
    uint32_t nr = window_rank_keys(w, &keys);
    for (uint32_t i = 0; i < nr; i++) /* sorted: each is appended */
        if (keys[i].rank >= 0 && !rank_set_get(s, &keys[i])) {
            free(keys);
            return -1;
        }
    free(keys);
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (uint32_t i = 0; i < w->nsteps; i++) {
        const struct rule_step *st = &w->steps[i];
        if (st->rank < 0)
            continue;
        struct rank_reading *r = rank_set_get(s, &(struct rank_key){st->node_id, st->rank});
        if (!r)
            return -1;
        double before = r->tot.comm_exposed_ns;
        step_totals_add(&r->tot, st);
        reading_add_work(r,
                         (double)(st->end_ns - st->start_ns) - (r->tot.comm_exposed_ns - before));
        r->pid = st->pid;
        r->first_ns = st->start_ns < r->first_ns ? st->start_ns : r->first_ns;
        r->last_ns = st->end_ns > r->last_ns ? st->end_ns : r->last_ns;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        struct rank_reading *r = &s->r[i];
        series_integrate(window_series_on(w, RM_PROC_CPU_PID, r->pid, r->key.node), r->first_ns,
                         r->last_ns, &r->cpu_ns, &r->cpu_cover_ns);
        series_integrate(window_series_on(w, RM_PROC_RUNQ_PID, r->pid, r->key.node), r->first_ns,
                         r->last_ns, &r->runq_ns, &r->runq_cover_ns);
        a = r->first_ns < a ? r->first_ns : a;
        b = r->last_ns > b ? r->last_ns : b;
    }
    if (s->n) {
        series_integrate(window_series(w, RM_CG_THROTTLED, -1, ""), a, b, &s->throttled_ns,
                         &s->throttled_cover_ns);
        series_integrate(window_series(w, RM_CPU_STEAL, -1, ""), a, b, &s->steal_ns,
                         &s->steal_cover_ns);
    }
    return 0;
}

/* Sum of the step totals a and b, into a. */
static void step_totals_merge(struct step_totals *a, const struct step_totals *b)
{
    a->steps += b->steps;
    a->step_ns += b->step_ns;
    for (int p = 0; p < PHASE_COUNT; p++)
        a->phase_ns[p] += b->phase_ns[p];
    a->comm_exposed_ns += b->comm_exposed_ns;
    if (b->slowest_ns > a->slowest_ns) {
        a->slowest_ns = b->slowest_ns;
        a->slowest_phase = b->slowest_phase;
    }
}

/* Add a window's readings to the run's. 0, or -1. */
static int rank_set_merge(struct rank_set *run, const struct rank_set *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        const struct rank_reading *x = &w->r[i];
        struct rank_reading *r = rank_set_get(run, &x->key);
        if (!r)
            return -1;
        step_totals_merge(&r->tot, &x->tot);
        for (uint32_t k = 0; k < x->nwork; k++)
            reading_add_work(r, x->work[k]);
        r->pid = x->pid;
        r->first_ns = x->first_ns < r->first_ns ? x->first_ns : r->first_ns;
        r->last_ns = x->last_ns > r->last_ns ? x->last_ns : r->last_ns;
        r->cpu_ns += x->cpu_ns;
        r->cpu_cover_ns += x->cpu_cover_ns;
        r->runq_ns += x->runq_ns;
        r->runq_cover_ns += x->runq_cover_ns;
    }
    run->throttled_ns += w->throttled_ns;
    run->throttled_cover_ns += w->throttled_cover_ns;
    run->steal_ns += w->steal_ns;
    run->steal_cover_ns += w->steal_cover_ns;
    return 0;
}

/* The verdict on a set: the slowest of the ranks with min_steps steps, and
 * how much longer it works than the median of the others. */
struct straggler_verdict {
    uint32_t ranks; /* judged */
    uint32_t slow;  /* index into the set */
    double lag_pct, work_ns, ref_ns;
};

/* 0, or -1 with fewer than two ranks to judge (or no memory). Judged ranks
 * get their median_ns; the others NAN. */
static int straggler_judge(struct rank_set *s, uint32_t min_steps, struct straggler_verdict *v)
{
    memset(v, 0, sizeof(*v));
    double *others = malloc((s->n + 1) * sizeof(*others));
    if (!others)
        return -1;
    for (uint32_t i = 0; i < s->n; i++) {
        struct rank_reading *r = &s->r[i];
        r->median_ns = r->tot.steps >= min_steps ? median_finite(r->work, r->nwork) : NAN;
        if (!isfinite(r->median_ns))
            continue;
        if (!v->ranks++ || r->median_ns > s->r[v->slow].median_ns)
            v->slow = i;
    }
    uint32_t no = 0;
    for (uint32_t i = 0; i < s->n; i++)
        if (i != v->slow && isfinite(s->r[i].median_ns))
            others[no++] = s->r[i].median_ns;
    if (v->ranks >= 2) {
        v->work_ns = s->r[v->slow].median_ns;
        v->ref_ns = median_finite(others, no);
        v->lag_pct = v->ref_ns > 0 ? 100.0 * (v->work_ns - v->ref_ns) / v->ref_ns : 0;
    }
    free(others);
    return v->ranks >= 2 ? 0 : -1;
}

/* A rank's means per step, in ns: its step, its work, its CPU time and
 * run-queue delay (its process's share of a core over its steps' span,
 * times its step), and the rest of its work, off the CPU; its data wait as
 * a share of its step, in %. NAN where a series is missing. */
struct rank_cost {
    double step, work, cpu, runq, off, data_pct;
};

static void rank_cost_of(const struct rank_reading *r, struct rank_cost *c)
{
    double n = r->tot.steps;
    c->step = r->tot.step_ns / n;
    c->work = (r->tot.step_ns - r->tot.comm_exposed_ns) / n;
    c->cpu = r->cpu_cover_ns > 0 ? r->cpu_ns / r->cpu_cover_ns * c->step : NAN;
    c->runq = r->runq_cover_ns > 0 ? r->runq_ns / r->runq_cover_ns * c->step : NAN;
    c->off = c->work - c->cpu - c->runq;
    if (c->off < 0) /* threads in parallel: more CPU than wall time */
        c->off = 0;
    c->data_pct = r->tot.step_ns > 0 ? 100.0 * r->tot.phase_ns[PHASE_DATA] / r->tot.step_ns : 0;
}

/* The median over the judged ranks but slow of each part of their cost. */
static void others_cost(const struct rank_set *s, uint32_t slow, struct rank_cost *ref)
{
    double *v = malloc(6 * (size_t)(s->n + 1) * sizeof(*v));
    double *part[6];
    uint32_t n = 0;
    for (int k = 0; k < 6; k++)
        part[k] = v ? v + (size_t)k * (s->n + 1) : NULL;
    for (uint32_t i = 0; v && i < s->n; i++) {
        if (i == slow || !isfinite(s->r[i].median_ns))
            continue;
        struct rank_cost c;
        rank_cost_of(&s->r[i], &c);
        double x[6] = {c.step, c.work, c.cpu, c.runq, c.off, c.data_pct};
        for (int k = 0; k < 6; k++)
            part[k][n] = x[k];
        n++;
    }
    double m[6];
    for (int k = 0; k < 6; k++)
        m[k] = v ? median_finite(part[k], n) : NAN;
    *ref = (struct rank_cost){m[0], m[1], m[2], m[3], m[4], m[5]};
    free(v);
}

/* "; the job's cgroup was throttled 12 % of the time, 3 % of the host's
 * CPU time was stolen from the VM" where either reached 1 %: they keep a
 * thread from running as other work on its core does. */
static void host_context(const struct rank_set *s, char *out, size_t cap)
{
    double thr = s->throttled_cover_ns > 0 ? 100.0 * s->throttled_ns / s->throttled_cover_ns : 0;
    double steal = s->steal_cover_ns > 0 ? 100.0 * s->steal_ns / s->steal_cover_ns : 0;
    int n = 0;
    out[0] = 0;
    if (thr >= 1)
        n = snprintf(out, cap, "; the job's cgroup was throttled %.0f %% of the time (CFS quota)",
                     thr);
    if (steal >= 1 && n >= 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n,
                 "; %.0f %% of the host's CPU time was stolen from the VM (counted neither as CPU "
                 "nor as run-queue time while a thread runs)",
                 steal);
}

/* The likely cause of rank slow's lag, from the ranks' own numbers, per
 * step against the median of the others. Its CPU share cannot tell:
 * DDP's all-reduce makes every rank's step as long as the straggler's, so
 * all of them spend about the same CPU per second whatever it does. Its
 * CPU time, run-queue delay and time off the CPU per step can: of the
 * three, the one that grew most against the others' names the cause. */
static void straggler_cause(const struct rank_set *s, uint32_t slow, double work_ratio, char *out,
                            size_t cap)
{
    struct rank_cost me, ref;
    rank_cost_of(&s->r[slow], &me);
    others_cost(s, slow, &ref);
    char host[320];
    host_context(s, host, sizeof(host));
    double ms = 1e-6;
    if (me.data_pct > ref.data_pct + 10) {
        snprintf(out, cap, "it waits for data (%.0f %% of its step against %.0f %%)", me.data_pct,
                 ref.data_pct);
        return;
    }
    if (!isfinite(me.cpu) || !isfinite(ref.cpu) || ref.cpu <= 0) {
        snprintf(out, cap,
                 "it computes longer, as far as strobe can see (no CPU time per process): uneven "
                 "work per rank or a slower device");
        return;
    }
    double cpu_ratio = me.cpu / ref.cpu;
    double d_cpu = me.cpu - ref.cpu;
    int more_work;
    if (!isfinite(me.runq) || !isfinite(ref.runq)) {
        /* a run without run-queue delay (recorded before strobe had it):
         * CPU time that grew by at least half as much as the work is more
         * work; the rest is less CPU or off-CPU, which it cannot tell apart */
        more_work = cpu_ratio - 1 >= 0.5 * (work_ratio - 1);
        if (!more_work) {
            snprintf(out, cap,
                     "it uses %.0f %% of the others' CPU time per step (%.1f ms against %.1f ms) "
                     "over %.0f %% longer: it gets less of a core for the same work (other work "
                     "on its cores, CPU throttling, time stolen from the VM) or is off the CPU "
                     "(sleep, I/O, locks, a slower device); this run has no run-queue delay to "
                     "tell which%s",
                     100.0 * cpu_ratio, me.cpu * ms, ref.cpu * ms, 100.0 * (work_ratio - 1), host);
            return;
        }
    } else {
        double d_runq = me.runq - ref.runq, d_off = me.off - ref.off;
        more_work = d_cpu >= d_runq && d_cpu >= d_off;
        if (!more_work && d_runq >= d_off) {
            snprintf(out, cap,
                     "it gets less of a core for the same work: it waits %.1f ms a step for a core "
                     "(run-queue delay, against %.1f ms on the others) and uses %.1f ms of CPU "
                     "time against %.1f ms: other work on its cores or more threads than cores%s",
                     me.runq * ms, ref.runq * ms, me.cpu * ms, ref.cpu * ms, host);
            return;
        }
        if (!more_work) {
            snprintf(out, cap,
                     "it is off the CPU %.1f ms a step more than the others (sleep, I/O, locks, or "
                     "a slower device it waits on): of its %.1f ms of work a step, %.1f ms on a "
                     "CPU, %.1f ms waiting for one and %.1f ms neither, against %.1f, %.1f and "
                     "%.1f ms on the others%s",
                     d_off * ms, me.work * ms, me.cpu * ms, me.runq * ms, me.off * ms, ref.cpu * ms,
                     ref.runq * ms, ref.off * ms, host);
            return;
        }
    }
    snprintf(out, cap,
             "it uses %.0f %% more CPU time per step than the others: more work on it (uneven "
             "data per rank, work done on it alone) or a slower core or device (%.1f ms of CPU "
             "time a step against %.1f ms)",
             100.0 * (cpu_ratio - 1), me.cpu * ms, ref.cpu * ms);
}

/* Fire on the slow rank of s; span names where it lagged. */
static void straggler_fire(struct rule_ctx *c, const struct rank_set *s,
                           const struct straggler_verdict *v, int64_t t0, int64_t t1,
                           const char *span)
{
    const struct rank_reading *r = &s->r[v->slow];
    char cause[640], scope[192], who[192], ev[512];
    straggler_cause(s, v->slow, 1.0 + v->lag_pct / 100.0, cause, sizeof(cause));
    key_scope(c, scope, sizeof(scope), &r->key);
    key_who(c, who, sizeof(who), &r->key);
    step_totals_text(&r->tot, ev, sizeof(ev));
    rule_fire_range(c, t0, t1, scope, ev,
                    "%s (pid %lld) works %.0f %% longer per step than the others (median "
                    "%.1f ms against %.1f ms, waiting excluded) %s; likely cause: %s",
                    who, (long long)node_pid(c, &r->key, r->pid), v->lag_pct, v->work_ns / 1e6,
                    v->ref_ns / 1e6, span, cause);
}

static void straggler_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct straggler_state *st = p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    uint32_t windows = c->param[2] < 1 ? 1 : (uint32_t)c->param[2];
    struct rank_set s = {0};
    struct straggler_verdict v;
    if (window_readings(w, &s) < 0)
        goto out;
    /* the run's readings, while a whole-run verdict may be needed: until
     * the rule has judged windows windows */
    if (!st->run_dropped && rank_set_merge(&st->run, &s) < 0) {
        rank_set_release(&st->run);
        st->run_dropped = 1;
    }
    if (straggler_judge(&s, min_steps, &v) < 0) {
        if (c->result->status != RULE_OK)
            rule_status(c, RULE_NA, "fewer than 2 ranks with steps: not data-parallel");
        st->streak = 0;
        goto out;
    }
    c->result->datapoints++;
    if (++st->judged >= windows && !st->run_dropped) {
        rank_set_release(&st->run);
        st->run_dropped = 1;
    }
    struct rank_key key = s.r[v.slow].key;
    if (v.lag_pct <= threshold) {
        st->streak = 0;
        rule_status(c, RULE_OK, "the slowest rank works %.0f %% longer than the others", v.lag_pct);
        goto out;
    }
    st->streak = !cmp_rank_key(&st->key, &key) ? st->streak + 1 : 1;
    st->key = key;
    if (st->streak < windows) {
        char who[192];
        key_who(c, who, sizeof(who), &key);
        rule_status(c, RULE_OK, "%s lagged %.0f %% in %u window(s) of %u", who, v.lag_pct,
                    st->streak, windows);
        goto out;
    }
    char span[48];
    snprintf(span, sizeof(span), "in %u windows in a row", st->streak);
    straggler_fire(c, &s, &v, w->t0, w->t1, span);
    st->fired = 1;
out:
    rank_set_release(&s);
}

/* A run shorter than windows judged windows never had the chance to lag
 * in as many in a row: it is judged once, on all of its steps (not while
 * it still records: its steps so far are not all of them). */
static void straggler_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    struct straggler_state *st = p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    struct straggler_verdict v;
    if (st->fired || st->run_dropped || rules_run(c->eng)->running ||
        straggler_judge(&st->run, min_steps, &v) < 0)
        return;
    c->result->datapoints++;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (uint32_t i = 0; i < st->run.n; i++) {
        t0 = st->run.r[i].first_ns < t0 ? st->run.r[i].first_ns : t0;
        t1 = st->run.r[i].last_ns > t1 ? st->run.r[i].last_ns : t1;
    }
    char span[96];
    snprintf(span, sizeof(span), "over the whole run (%.1f s of steps, shorter than %u windows)",
             (double)(t1 - t0) / 1e9, (uint32_t)(c->param[2] < 1 ? 1 : c->param[2]));
    if (v.lag_pct <= threshold)
        rule_status(c, RULE_OK, "the slowest rank works %.0f %% longer than the others %s",
                    v.lag_pct, span);
    else
        straggler_fire(c, &st->run, &v, t0, t1 + 1, span);
}

static void straggler_release(void *p)
{
    rank_set_release(&((struct straggler_state *)p)->run);
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
    straggler_release,
    straggler_window,
    straggler_finish,
    "every rank waits for the slowest one at each all-reduce: fix the cause on that rank "
    "(its data loading, CPU share or device), or balance the work per rank",
};

/* ---- CommunicationBound --------------------------------------------------------------------- */

static void comm_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct trained_state *st = p;
    double threshold = c->param[0];
    uint32_t min_steps = (uint32_t)c->param[1];
    struct rank_key *keys;
    uint32_t nr = window_rank_keys(w, &keys);
    double least = INFINITY, most = 0;
    struct rank_key least_key = {RULES_LOCAL_NODE, -1};
    int any = 0;
    uint32_t judged = 0;
    st->trained |= nr > 0;
    for (uint32_t i = 0; i < nr; i++) {
        struct step_totals t;
        window_step_totals_on(w, keys[i].node, keys[i].rank, &t);
        if (t.steps < min_steps || t.step_ns <= 0)
            continue;
        judged++;
        double share = 100.0 * t.comm_exposed_ns / t.step_ns;
        if (t.comm_exposed_ns > 0)
            any = 1;
        if (share < least) {
            least = share;
            least_key = keys[i];
        }
        if (share > most)
            most = share;
    }
    free(keys);
    if (!judged) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no window with %u training steps of a rank yet",
                        min_steps);
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
        char who[192];
        key_who(c, who, sizeof(who), &least_key);
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
    sizeof(struct trained_state),
    NULL,
    comm_window,
    trained_finish,
    "collectives dominate: overlap them with compute (DDP bucket_cap_mb, gradient "
    "accumulation with no_sync), compress gradients, or use a faster interconnect/backend "
    "(NCCL over NVLink or InfiniBand)",
};

/* ---- CPUThrottling -----------------------------------------------------------------------------
 */

static void throttling_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct trained_state *st = p;
    double threshold = c->param[0];
    const struct rule_series *s = window_series(w, RM_CG_THROTTLED, -1, NULL);
    if (!s) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_NA, "no CFS throttling statistics (cgroup cpu.stat)");
        return;
    }
    if (!w->nsteps) { /* throttling outside the training loop costs no step time */
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no training steps yet");
        return;
    }
    st->trained = 1;
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
    sizeof(struct trained_state),
    NULL,
    throttling_window,
    trained_finish,
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

/* Never judged: no swap-in or PSI series to read, and no training step to
 * start the RSS trend from. */
static void memory_finish(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    (void)w;
    const struct memory_state *st = p;
    if (c->result->status == RULE_WAITING && !st->first_step_ns && !rules_run(c->eng)->running)
        rule_status(c, RULE_NA,
                    "no swap-in or memory pressure series, and no training steps recorded for "
                    "the RSS trend");
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
    memory_finish,
    "memory runs short: look for objects kept across steps (lists of losses or outputs, caches), "
    "lower the batch size or data-loader prefetching, or give the job more memory",
};

/* ---- GPUThrottling ------------------------------------------------------------------------------
 */

/* nvmlClocksThrottleReasons that mean power or heat (not idle, not the
 * application clock setting): SW power cap, HW slowdown, SW thermal, HW
 * thermal, HW power brake. */
#define THROTTLE_POWER_THERMAL 0xECull

struct gpu_throttle_gpu {
    uint64_t busy, throttled;
    uint64_t reasons;
    double util;
};

struct gpu_throttle_node {
    struct gpu_throttle_gpu gpu[MAX_GPUS];
};

struct gpu_throttle_state {
    struct gpu_throttle_node *node; /* by node id */
    uint32_t nnodes;
};

static void gpu_throttle_release(void *p)
{
    free(((struct gpu_throttle_state *)p)->node);
}

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
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
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
    if (rule_na_without_gpu_util(c) ||
        node_states_fit((void **)&st->node, &st->nnodes, w->node_count, sizeof(*st->node)) < 0)
        return;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *tr = &w->series[i];
        if (tr->metric != RM_GPU_THROTTLE || tr->index < 0 || tr->index >= MAX_GPUS)
            continue;
        struct gpu_throttle_gpu *g = &st->node[tr->node_id].gpu[tr->index];
        const struct rule_series *util = window_series_on(w, RM_GPU_UTIL, tr->index, tr->node_id);
        uint32_t pos = 0;
        for (uint32_t k = 0; k < tr->n; k++) {
            double u;
            if (series_value_at(util, &pos, tr->ts[k], &u))
                g->util = u;
            if (!(g->util > 0) || !isfinite(tr->v[k]))
                continue; /* an idle GPU lowers its clocks on purpose */
            g->busy++;
            uint64_t mask = (uint64_t)tr->v[k] & THROTTLE_POWER_THERMAL;
            if (mask) {
                g->throttled++;
                g->reasons |= mask;
            }
        }
        uint64_t busy = g->busy, thr = g->throttled;
        c->result->datapoints = busy;
        if (busy < min_samples) {
            rule_status(c, RULE_WAITING, "%llu busy samples of %llu needed",
                        (unsigned long long)busy, (unsigned long long)min_samples);
            continue;
        }
        double share = 100.0 * (double)thr / (double)busy;
        if (share > threshold) {
            char scope[192], why[128];
            scope_name(scope, sizeof(scope), tr->node, tr->index);
            reasons_text(g->reasons, why, sizeof(why));
            double mhz = series_mean(window_series_on(w, RM_GPU_SM_CLOCK, tr->index, tr->node_id));
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
    gpu_throttle_release,
    gpu_throttle_window,
    NULL,
    "the GPU slows its clocks for power or heat: check cooling and airflow, the power limit "
    "(nvidia-smi -q -d POWER), and neighbours sharing the chassis",
};

/* ---- ThreadOversubscription ---------------------------------------------------------------------
 */

static void oversub_window(struct rule_ctx *c, const struct rule_window *w, void *p)
{
    struct trained_state *st = p;
    double psi_t = c->param[0], cpu_t = c->param[1];
    const struct rule_series *psi = window_series(w, RM_PSI_CPU, -1, "");
    if (!psi) {
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_NA, "no pressure stall information (/proc/pressure/cpu)");
        return;
    }
    if (!w->nsteps) { /* judged while steps run */
        if (c->result->status == RULE_WAITING)
            rule_status(c, RULE_WAITING, "no training steps yet");
        return;
    }
    st->trained = 1;
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
    sizeof(struct trained_state),
    NULL,
    oversub_window,
    trained_finish,
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

const uint32_t rule_def_count = ARRAY_SIZE(rule_defs);
