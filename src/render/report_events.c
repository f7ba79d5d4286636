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

static void add_summary(struct strbuf *o, const struct run_record *r, const struct step_list *l)
{
    int64_t end = r->end_ns ? r->end_ns : r->last_ns;
    strbuf_adds(o, ",\"summary\":{\"total_s\":");
    strbuf_add_json_num(o, (double)(end - r->start_ns) / 1e9);
    if (!l->n) {
        strbuf_adds(o, ",\"first_step_s\":null,\"last_step_end_s\":null}");
        return;
    }
    int64_t last_end = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->s[i].start + l->s[i].dur > last_end)
            last_end = l->s[i].start + l->s[i].dur;
    strbuf_addf(o, ",\"first_step_s\":%.6f,\"last_step_end_s\":%.6f}", rel_s(r, l->s[0].start),
                rel_s(r, last_end));
}

/* Every step, or per bin of time (min, max, mean) plus the longest outliers,
 * so a million steps stay a few hundred kilobytes. */
static void add_step_series(struct strbuf *o, const struct run_record *r, const struct step_list *l)
{
    if (l->n <= REPORT_STEPS_EXACT) {
        strbuf_adds(o, ",\"t\":[");
        for (uint32_t i = 0; i < l->n; i++)
            strbuf_addf(o, "%s%.4f", i ? "," : "", rel_s(r, l->s[i].start));
        strbuf_adds(o, "],\"ms\":[");
        for (uint32_t i = 0; i < l->n; i++)
            strbuf_addf(o, "%s%.4g", i ? "," : "", (double)l->s[i].dur / 1e6);
        strbuf_adds(o, "]");
        return;
    }
    double t0 = rel_s(r, l->s[0].start), t1 = rel_s(r, l->s[l->n - 1].start);
    double w = (t1 - t0) / REPORT_STEP_BINS;
    strbuf_addf(o, ",\"bins\":{\"t0\":%.4f,\"width\":%.6g,\"lo\":[", t0, w);
    struct strbuf hi, mean;
    strbuf_init(&hi);
    strbuf_init(&mean);
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
        const char *sep = b ? "," : "";
        if (n) {
            strbuf_addf(o, "%s%.4g", sep, lo);
            strbuf_addf(&hi, "%s%.4g", sep, h);
            strbuf_addf(&mean, "%s%.4g", sep, sum / n);
        } else {
            strbuf_addf(o, "%snull", sep);
            strbuf_addf(&hi, "%snull", sep);
            strbuf_addf(&mean, "%snull", sep);
        }
    }
    strbuf_addf(o, "],\"hi\":[%s],\"mean\":[%s]}", hi.buf, mean.buf);
    strbuf_release(&hi);
    strbuf_release(&mean);
}

/* The outliers, longest first up to REPORT_OUTLIERS, then in time order. */
static int add_outliers(struct strbuf *o, const struct run_record *r, const struct step_list *l)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->n; i++)
        n += (double)l->s[i].dur > l->threshold && l->sd > 0;
    strbuf_addf(o, ",\"outliers\":%u,\"outlier_t\":[", n);
    double *d = malloc((n + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if ((double)l->s[i].dur > l->threshold && l->sd > 0)
            d[k++] = (double)l->s[i].dur;
    qsort(d, k, sizeof(*d), cmp_dbl);
    double floor_ns = k > REPORT_OUTLIERS ? d[k - REPORT_OUTLIERS] : 0;
    free(d);
    struct strbuf ms;
    strbuf_init(&ms);
    uint32_t shown = 0;
    for (uint32_t i = 0; i < l->n && shown < REPORT_OUTLIERS; i++) {
        double dur = (double)l->s[i].dur;
        if (!(dur > l->threshold && l->sd > 0) || dur < floor_ns)
            continue;
        strbuf_addf(o, "%s%.4f", shown ? "," : "", rel_s(r, l->s[i].start));
        strbuf_addf(&ms, "%s%.4g", shown ? "," : "", dur / 1e6);
        shown++;
    }
    strbuf_addf(o, "],\"outlier_ms\":[%s]", ms.buf);
    strbuf_release(&ms);
    return 0;
}

/* Histogram of step durations up to the 99.9th percentile; the longer ones
 * are counted in the last bin, so one 10x stall does not squeeze the rest
 * into a single bar. */
static int add_histogram(struct strbuf *o, const struct step_list *l)
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
    strbuf_addf(o, ",\"hist\":{\"lo_ms\":%.6g,\"hi_ms\":%.6g,\"counts\":[", lo, hi);
    for (int b = 0; b < REPORT_HIST_BINS; b++)
        strbuf_addf(o, "%s%u", b ? "," : "", counts[b]);
    strbuf_adds(o, "]}");
    return 0;
}

static int add_steps(struct strbuf *o, const struct run_record *r, const struct step_analysis *a,
                     const struct step_list *l)
{
    if (!l->n) {
        strbuf_adds(o, ",\"steps\":null");
        return 0;
    }
    const struct step_group *g = &a->groups[a->primary];
    strbuf_addf(o, ",\"steps\":{\"pid\":%lld,\"rank\":%lld,", (long long)g->pid,
                (long long)g->rank);
    struct json_writer jw;
    jw_init_members(&jw, o);
    duration_stats_json(&jw, &g->steps);
    strbuf_addf(o, ",\"backward_passes\":%llu,\"backward_per_step\":",
                (unsigned long long)g->backward_passes);
    strbuf_add_json_num(o, step_group_backward_per_step(g));
    strbuf_addf(o, ",\"threshold_ms\":%.6g", l->threshold / 1e6);
    add_step_series(o, r, l);
    if (add_outliers(o, r, l) < 0 || add_histogram(o, l) < 0)
        return -ENOMEM;
    strbuf_addch(o, '}');
    return 0;
}

/* One process's steps as JSON: pid, rank, the duration statistics and the
 * phase times, closed with its brace. */
static void add_group(struct strbuf *o, const struct step_group *g)
{
    strbuf_addf(o, "{\"pid\":%lld,\"rank\":%lld,", (long long)g->pid, (long long)g->rank);
    struct json_writer jw;
    jw_init_members(&jw, o);
    duration_stats_json(&jw, &g->steps);
    strbuf_adds(o, ",\"phase_ns\":[");
    for (int p = 0; p < PHASE_COUNT; p++) {
        strbuf_adds(o, p ? "," : "");
        strbuf_add_json_num(o, g->phase_ns[p]);
    }
    strbuf_adds(o, "]}");
}

static void add_phases(struct strbuf *o, const struct step_analysis *a)
{
    strbuf_addf(o, ",\"phase_names\":[");
    for (int p = 0; p < PHASE_COUNT; p++)
        strbuf_addf(o, "%s\"%s\"", p ? "," : "", phase_names[p]);
    strbuf_addf(o, "],\"primary\":%u,\"groups\":[", a->primary);
    for (uint32_t i = 0; i < a->ngroups; i++) {
        strbuf_adds(o, i ? "," : "");
        add_group(o, &a->groups[i]);
    }
    strbuf_addch(o, ']');
}

/* The evaluation steps of their primary process, apart from the training
 * ones: statistics and phase times, or null without any. */
static void add_eval_steps(struct strbuf *o, const struct step_analysis *a)
{
    if (!a->eval.ngroups) {
        strbuf_adds(o, ",\"eval_steps\":null");
        return;
    }
    strbuf_adds(o, ",\"eval_steps\":");
    add_group(o, &a->eval.groups[a->eval.primary]);
}

/* Workers, what each was busy with (dataloader.worker spans), and the share
 * of step time the primary process waited for data. */
static void add_dataloader(struct strbuf *o, const struct run_events *e,
                           const struct step_analysis *a)
{
    strbuf_addf(o, ",\"dataloader\":{\"workers\":%u,\"busy_ns\":", a->workers);
    strbuf_add_json_num(o, a->worker_busy_ns);
    strbuf_adds(o, ",\"data_share\":");
    strbuf_add_json_num(o, a->ngroups ? step_group_share(&a->groups[a->primary], PHASE_DATA) : 0);
    strbuf_adds(o, ",\"list\":[");
    uint32_t shown = 0; /* every worker: a cap here listed 64 of a count that said more */
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
        strbuf_addf(o, "%s{\"pid\":%lld,\"ppid\":%lld,\"worker_id\":%lld,\"batches\":%llu,",
                    shown++ ? "," : "", (long long)p->pid, (long long)p->ppid,
                    (long long)p->worker_id, (unsigned long long)batches);
        strbuf_adds(o, "\"busy_ns\":");
        strbuf_add_json_num(o, busy);
        strbuf_adds(o, "}");
    }
    strbuf_adds(o, "]}");
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
static int add_ops(struct strbuf *o, const struct run_events *e)
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
    strbuf_adds(o, ",\"ops\":[");
    for (uint32_t i = 0; i <= e->nnames && i < REPORT_TOP_OPS && acc[i].count; i++) {
        strbuf_adds(o, i ? ",{\"name\":" : "{\"name\":");
        strbuf_add_json_str(o, run_events_name(e, acc[i].name) + 3);
        strbuf_addf(o, ",\"count\":%llu,\"total_ns\":%.0f,\"max_ns\":%.0f}",
                    (unsigned long long)acc[i].count, acc[i].total_ns, acc[i].max_ns);
    }
    strbuf_addch(o, ']');
    free(acc);
    return 0;
}

int report_add_events(struct strbuf *o, const struct run_record *r, const struct run_events *e,
                      const struct step_analysis *a)
{
    struct step_list l;
    if (steps_collect(e, a, &l) < 0)
        return -ENOMEM;
    add_summary(o, r, &l);
    int rc = add_steps(o, r, a, &l);
    free(l.s);
    if (rc < 0)
        return rc;
    add_phases(o, a);
    add_eval_steps(o, a);
    add_dataloader(o, e, a);
    return add_ops(o, e);
}
