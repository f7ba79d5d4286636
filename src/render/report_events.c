/*
 * The report's framework part: the job summary (initialization, training
 * loop, finalization), steps over time with their outliers and histogram,
 * the phase breakdown per rank, the data loader, and the top operators of a
 * torch.profiler window (events named "op:<name>").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "render/report_internal.h"
#include "strobe/ring.h"

struct step_span {
    int64_t start, dur;
};

struct step_list {
    struct step_span *s;
    uint32_t n;
    double mean, sd, threshold; /* ns; threshold = mean + 3 sd, StepOutlier's default */
};

static int cmp_step(const void *a, const void *b)
{
    const struct step_span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The training steps of the process the headline figures come from
 * (step_analysis' primary group), in time order. */
static int steps_collect(const struct run_events *e, const struct step_analysis *a,
                         struct step_list *out)
{
    memset(out, 0, sizeof(*out));
    if (!a->ngroups)
        return 0;
    int64_t pid = a->groups[a->primary].pid;
    uint32_t cap = 0;
    for (uint32_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].pid == pid)
            cap += e->threads[i].n;
    out->s = malloc((cap + 1) * sizeof(*out->s));
    if (!out->s)
        return -ENOMEM;
    for (uint32_t i = 0; i < e->nthreads; i++) {
        const struct thread_events *t = &e->threads[i];
        if (t->pid != pid)
            continue;
        for (uint32_t j = 0; j < t->n; j++) {
            const struct event *ev = &t->ev[j];
            if (ev->kind == STROBE_EV_COMPLETE && ev->value >= 0 &&
                step_mode_is_training(steps_mode_of(run_events_name(e, ev->name))))
                out->s[out->n++] = (struct step_span){ev->ts_ns, ev->value};
        }
    }
    int sorted = 1; /* one thread's steps are recorded in order: no sort then */
    for (uint32_t i = 1; i < out->n && sorted; i++)
        sorted = out->s[i - 1].start <= out->s[i].start;
    if (!sorted)
        qsort(out->s, out->n, sizeof(*out->s), cmp_step);
    double sum = 0, sq = 0;
    for (uint32_t i = 0; i < out->n; i++)
        sum += (double)out->s[i].dur;
    out->mean = out->n ? sum / out->n : 0;
    for (uint32_t i = 0; i < out->n; i++) {
        double d = (double)out->s[i].dur - out->mean;
        sq += d * d;
    }
    out->sd = out->n > 1 ? sqrt(sq / (out->n - 1)) : 0;
    out->threshold = out->mean + 3 * out->sd;
    return 0;
}

static double rel_s(const struct run_record *r, int64_t ts)
{
    return (double)(ts - r->start_ns) / 1e9;
}

static void add_summary(struct json_writer *jw, const struct run_record *r,
                        const struct step_list *l)
{
    int64_t end = r->end_ns ? r->end_ns : r->last_ns;
    jw_key(jw, "summary");
    jw_object_begin(jw);
    jw_kv_num(jw, "total_s", (double)(end - r->start_ns) / 1e9);
    if (!l->n) {
        jw_kv_null(jw, "first_step_s");
        jw_kv_null(jw, "last_step_end_s");
        jw_end(jw);
        return;
    }
    int64_t last_end = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->s[i].start + l->s[i].dur > last_end)
            last_end = l->s[i].start + l->s[i].dur;
    jw_kv_rawf(jw, "first_step_s", "%.6f", rel_s(r, l->s[0].start));
    jw_kv_rawf(jw, "last_step_end_s", "%.6f", rel_s(r, last_end));
    jw_end(jw);
}

/* Step times (ms) per bin of time: the shortest, longest and mean step. */
struct step_bins {
    double lo[REPORT_STEP_BINS], hi[REPORT_STEP_BINS], mean[REPORT_STEP_BINS];
    uint32_t n[REPORT_STEP_BINS]; /* steps in the bin; 0: it is null */
};

static void add_bin_array(struct json_writer *jw, const char *key, const double *v,
                          const uint32_t *n)
{
    jw_key(jw, key);
    jw_array_begin(jw);
    for (uint32_t b = 0; b < REPORT_STEP_BINS; b++) {
        if (n[b])
            jw_rawf(jw, "%.4g", v[b]);
        else
            jw_null(jw);
    }
    jw_end(jw);
}

/* Every step, or per bin of time (min, max, mean) plus the longest outliers,
 * so a million steps stay a few hundred kilobytes. */
static int add_step_series(struct json_writer *jw, const struct run_record *r,
                           const struct step_list *l)
{
    if (l->n <= REPORT_STEPS_EXACT) {
        jw_key(jw, "t");
        jw_array_begin(jw);
        for (uint32_t i = 0; i < l->n; i++)
            jw_rawf(jw, "%.4f", rel_s(r, l->s[i].start));
        jw_end(jw);
        jw_key(jw, "ms");
        jw_array_begin(jw);
        for (uint32_t i = 0; i < l->n; i++)
            jw_rawf(jw, "%.4g", (double)l->s[i].dur / 1e6);
        jw_end(jw);
        return 0;
    }
    double t0 = rel_s(r, l->s[0].start), t1 = rel_s(r, l->s[l->n - 1].start);
    double w = (t1 - t0) / REPORT_STEP_BINS;
    struct step_bins *bins = calloc(1, sizeof(*bins));
    if (!bins)
        return -ENOMEM;
    uint32_t i = 0;
    for (uint32_t b = 0; b < REPORT_STEP_BINS; b++) {
        double lo = INFINITY, h = 0, sum = 0;
        uint32_t n = 0;
        double edge = t0 + (b + 1) * w;
        for (; i < l->n && (rel_s(r, l->s[i].start) < edge || b == REPORT_STEP_BINS - 1); i++) {
            double d = (double)l->s[i].dur / 1e6;
            lo = d < lo ? d : lo;
            h = d > h ? d : h;
            sum += d;
            n++;
        }
        bins->lo[b] = lo;
        bins->hi[b] = h;
        bins->mean[b] = n ? sum / n : 0;
        bins->n[b] = n;
    }
    jw_key(jw, "bins");
    jw_object_begin(jw);
    jw_kv_rawf(jw, "t0", "%.4f", t0);
    jw_kv_rawf(jw, "width", "%.6g", w);
    add_bin_array(jw, "lo", bins->lo, bins->n);
    add_bin_array(jw, "hi", bins->hi, bins->n);
    add_bin_array(jw, "mean", bins->mean, bins->n);
    jw_end(jw);
    free(bins);
    return 0;
}

static int is_outlier(const struct step_list *l, uint32_t i)
{
    return (double)l->s[i].dur > l->threshold && l->sd > 0;
}

/* The outliers, longest first up to REPORT_OUTLIERS, then in time order:
 * when (outlier_t, s) or how long (outlier_ms). */
static void add_outlier_array(struct json_writer *jw, const struct run_record *r,
                              const struct step_list *l, double floor_ns, int times)
{
    jw_key(jw, times ? "outlier_t" : "outlier_ms");
    jw_array_begin(jw);
    uint32_t shown = 0;
    for (uint32_t i = 0; i < l->n && shown < REPORT_OUTLIERS; i++) {
        double dur = (double)l->s[i].dur;
        if (!is_outlier(l, i) || dur < floor_ns)
            continue;
        if (times)
            jw_rawf(jw, "%.4f", rel_s(r, l->s[i].start));
        else
            jw_rawf(jw, "%.4g", dur / 1e6);
        shown++;
    }
    jw_end(jw);
}

static int add_outliers(struct json_writer *jw, const struct run_record *r,
                        const struct step_list *l)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->n; i++)
        n += is_outlier(l, i);
    jw_kv_uint(jw, "outliers", n);
    double *d = malloc((n + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (is_outlier(l, i))
            d[k++] = (double)l->s[i].dur;
    qsort(d, k, sizeof(*d), cmp_dbl);
    double floor_ns = k > REPORT_OUTLIERS ? d[k - REPORT_OUTLIERS] : 0;
    free(d);
    add_outlier_array(jw, r, l, floor_ns, 1);
    add_outlier_array(jw, r, l, floor_ns, 0);
    return 0;
}

/* Histogram of step durations up to the 99.9th percentile; the longer ones
 * are counted in the last bin, so one 10x stall does not squeeze the rest
 * into a single bar. */
static int add_histogram(struct json_writer *jw, const struct step_list *l)
{
    double *d = malloc((l->n + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    for (uint32_t i = 0; i < l->n; i++)
        d[i] = (double)l->s[i].dur / 1e6;
    double lo = d[0];
    for (uint32_t i = 1; i < l->n; i++)
        lo = d[i] < lo ? d[i] : lo;
    double hi = report_select_kth(d, 0, l->n, (size_t)((l->n - 1) * 0.999));
    if (hi <= lo)
        hi = lo + 1e-3;
    uint32_t counts[REPORT_HIST_BINS] = {0};
    for (uint32_t i = 0; i < l->n; i++) {
        int b = (int)((d[i] - lo) / (hi - lo) * REPORT_HIST_BINS);
        counts[b < 0 ? 0 : b >= REPORT_HIST_BINS ? REPORT_HIST_BINS - 1 : b]++;
    }
    free(d);
    jw_key(jw, "hist");
    jw_object_begin(jw);
    jw_kv_rawf(jw, "lo_ms", "%.6g", lo);
    jw_kv_rawf(jw, "hi_ms", "%.6g", hi);
    jw_key(jw, "counts");
    jw_array_begin(jw);
    for (int b = 0; b < REPORT_HIST_BINS; b++)
        jw_uint(jw, counts[b]);
    jw_end(jw);
    jw_end(jw);
    return 0;
}

static int add_steps(struct json_writer *jw, const struct run_record *r,
                     const struct step_analysis *a, const struct step_list *l)
{
    if (!l->n) {
        jw_kv_null(jw, "steps");
        return 0;
    }
    const struct step_group *g = &a->groups[a->primary];
    jw_key(jw, "steps");
    jw_object_begin(jw);
    jw_kv_int(jw, "pid", g->pid);
    jw_kv_int(jw, "rank", g->rank);
    duration_stats_json(jw, &g->steps);
    jw_kv_uint(jw, "backward_passes", g->backward_passes);
    jw_kv_num(jw, "backward_per_step", step_group_backward_per_step(g));
    jw_kv_rawf(jw, "threshold_ms", "%.6g", l->threshold / 1e6);
    if (add_step_series(jw, r, l) < 0 || add_outliers(jw, r, l) < 0 || add_histogram(jw, l) < 0)
        return -ENOMEM;
    jw_end(jw);
    return 0;
}

/* One process's steps as JSON: pid, rank, the duration statistics and the
 * phase times. */
static void add_group(struct json_writer *jw, const struct step_group *g)
{
    jw_object_begin(jw);
    jw_kv_int(jw, "pid", g->pid);
    jw_kv_int(jw, "rank", g->rank);
    duration_stats_json(jw, &g->steps);
    jw_key(jw, "phase_ns");
    jw_array_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++)
        jw_num(jw, g->phase_ns[p]);
    jw_end(jw);
    jw_end(jw);
}

static void add_phases(struct json_writer *jw, const struct step_analysis *a)
{
    jw_key(jw, "phase_names");
    jw_array_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++)
        jw_str(jw, phase_names[p]);
    jw_end(jw);
    jw_kv_uint(jw, "primary", a->primary);
    jw_key(jw, "groups");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < a->ngroups; i++)
        add_group(jw, &a->groups[i]);
    jw_end(jw);
}

/* The evaluation steps of their primary process, apart from the training
 * ones: statistics and phase times, or null without any. */
static void add_eval_steps(struct json_writer *jw, const struct step_analysis *a)
{
    jw_key(jw, "eval_steps");
    if (!a->eval.ngroups)
        jw_null(jw);
    else
        add_group(jw, &a->eval.groups[a->eval.primary]);
}

/* Workers, what each was busy with (dataloader.worker spans), and the share
 * of step time the primary process waited for data. */
static void add_dataloader(struct json_writer *jw, const struct run_events *e,
                           const struct step_analysis *a)
{
    jw_key(jw, "dataloader");
    jw_object_begin(jw);
    jw_kv_uint(jw, "workers", a->workers);
    jw_kv_num(jw, "busy_ns", a->worker_busy_ns);
    jw_kv_num(jw, "data_share",
              a->ngroups ? step_group_share(&a->groups[a->primary], PHASE_DATA) : 0);
    jw_key(jw, "list");
    jw_array_begin(jw); /* every worker: a cap here listed 64 of a count that said more */
    for (uint32_t i = 0; i < e->nprocs; i++) {
        const struct proc_info *p = &e->procs[i];
        if (p->worker_id < 0)
            continue;
        double busy = 0;
        uint64_t batches = 0;
        for (uint32_t t = 0; t < e->nthreads; t++) {
            if (e->threads[t].pid != p->pid)
                continue;
            for (uint32_t j = 0; j < e->threads[t].n; j++) {
                const struct event *ev = &e->threads[t].ev[j];
                if (ev->kind == STROBE_EV_COMPLETE &&
                    strcmp(run_events_name(e, ev->name), "dataloader.worker") == 0) {
                    busy += (double)ev->value;
                    batches++;
                }
            }
        }
        jw_object_begin(jw);
        jw_kv_int(jw, "pid", p->pid);
        jw_kv_int(jw, "ppid", p->ppid);
        jw_kv_int(jw, "worker_id", p->worker_id);
        jw_kv_uint(jw, "batches", batches);
        jw_kv_num(jw, "busy_ns", busy);
        jw_end(jw);
    }
    jw_end(jw);
    jw_end(jw);
}

struct op_acc {
    uint32_t name;
    uint64_t count;
    double total_ns, max_ns;
};

static int cmp_op(const void *a, const void *b)
{
    const struct op_acc *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* Operators imported from torch.profiler: complete events named "op:...". */
static int add_ops(struct json_writer *jw, const struct run_events *e)
{
    struct op_acc *acc = calloc(e->nnames + 1, sizeof(*acc));
    if (!acc)
        return -ENOMEM;
    for (uint32_t t = 0; t < e->nthreads; t++)
        for (uint32_t j = 0; j < e->threads[t].n; j++) {
            const struct event *ev = &e->threads[t].ev[j];
            if (ev->kind != STROBE_EV_COMPLETE || ev->name == 0 || ev->name > e->nnames ||
                strncmp(run_events_name(e, ev->name), "op:", 3) != 0)
                continue;
            struct op_acc *x = &acc[ev->name];
            x->name = ev->name;
            x->count++;
            x->total_ns += (double)ev->value;
            x->max_ns = (double)ev->value > x->max_ns ? (double)ev->value : x->max_ns;
        }
    qsort(acc, e->nnames + 1, sizeof(*acc), cmp_op);
    jw_key(jw, "ops");
    jw_array_begin(jw);
    for (uint32_t i = 0; i <= e->nnames && i < REPORT_TOP_OPS && acc[i].count; i++) {
        jw_object_begin(jw);
        jw_kv_str(jw, "name", run_events_name(e, acc[i].name) + 3);
        jw_kv_uint(jw, "count", acc[i].count);
        jw_kv_rawf(jw, "total_ns", "%.0f", acc[i].total_ns);
        jw_kv_rawf(jw, "max_ns", "%.0f", acc[i].max_ns);
        jw_end(jw);
    }
    jw_end(jw);
    free(acc);
    return 0;
}

int report_add_events(struct json_writer *jw, const struct run_record *r,
                      const struct run_events *e, const struct step_analysis *a)
{
    struct step_list l;
    if (steps_collect(e, a, &l) < 0)
        return -ENOMEM;
    add_summary(jw, r, &l);
    int rc = add_steps(jw, r, a, &l);
    free(l.s);
    if (rc < 0)
        return rc;
    add_phases(jw, a);
    add_eval_steps(jw, a);
    add_dataloader(jw, e, a);
    return add_ops(jw, e);
}
