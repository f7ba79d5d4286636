#include "analyze/compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/metrics.h"

/* The series compare shows, in this order. A labelled series counts only
 * when its labels are exactly one gpu=N, or the node of an imported run of
 * several nodes (node=X, gpu=N,node=X: labels are sorted), whose every
 * series has one: per-process GPU series (gpu=N,pid=P) and per-core CPU
 * series are detail for strobe show. */
static const struct {
    enum metric_id metric;
    int per_gpu;
} compared_series[] = {
    {METRIC_CPU_UTIL, 0},           {METRIC_PROC_CPU, 0}, {METRIC_PROC_RSS_BYTES, 0},
    {METRIC_MEM_USED_BYTES, 0},     {METRIC_GPU_UTIL, 1}, {METRIC_GPU_MEM_UTIL, 1},
    {METRIC_GPU_MEM_USED_BYTES, 1},
};

#define NCOMPARED (ARRAY_SIZE(compared_series))

/* Whether labels is "node=X" alone (also when empty: no node). */
static int node_only(const char *labels)
{
    return !*labels || (strncmp(labels, "node=", 5) == 0 && !strchr(labels, ','));
}

static int compared_index(const struct series_record *sr)
{
    for (size_t i = 0; i < NCOMPARED; i++) {
        if (strcmp(sr->name, metric_name(compared_series[i].metric)) != 0)
            continue;
        if (!compared_series[i].per_gpu)
            return node_only(sr->labels) ? (int)i : -1;
        const char *comma = strchr(sr->labels, ',');
        int one_gpu = strncmp(sr->labels, "gpu=", 4) == 0 && (!comma || node_only(comma + 1));
        return one_gpu ? (int)i : -1;
    }
    return -1;
}

struct metric_load {
    struct store *s;
    struct compare_run *c;
    uint32_t cap;
    int64_t interval_ns;
    uint8_t *order; /* compared_index of each metric, for the final sort */
    int rc;
};

static int keep_series(const struct series_record *sr, void *arg)
{
    struct metric_load *m = arg;
    int idx = compared_index(sr);
    if (idx < 0)
        return 0;
    struct compare_run *c = m->c;
    uint32_t cap = m->cap;
    if (array_grow((void **)&c->metrics, &m->cap, c->nmetrics + 1, sizeof(*c->metrics), 8) < 0 ||
        array_grow((void **)&m->order, &cap, c->nmetrics + 1, 1, 8) < 0) {
        m->rc = -ENOMEM;
        return 1;
    }
    struct compare_metric *x = &c->metrics[c->nmetrics];
    memset(x, 0, sizeof(*x));
    size_t len = strlen(sr->name) + strlen(sr->labels) + 3;
    if (!(x->key = malloc(len))) {
        m->rc = -ENOMEM;
        return 1;
    }
    snprintf(x->key, len, sr->labels[0] ? "%s{%s}" : "%s%s", sr->name, sr->labels);
    snprintf(x->unit, sizeof(x->unit), "%s", sr->unit);
    struct series_summary sum = {0};
    /* a second query while the series query steps: SQLite allows it */
    int rc = store_series_stats(m->s, sr->id, m->interval_ns, &sum);
    x->st = sum.st;
    m->order[c->nmetrics++] = (uint8_t)idx; /* counted, so that its key is freed */
    if (rc < 0) {
        m->rc = rc;
        return 1;
    }
    return 0;
}

/* Table order, then key (series come in name order, which would put
 * cpu.util after gpu.* and split a run's CPU figures). Insertion sort: a
 * handful of rows. */
static void sort_metrics(struct compare_run *c, uint8_t *order)
{
    for (uint32_t i = 1; i < c->nmetrics; i++)
        for (uint32_t j = i; j > 0; j--) {
            int d = order[j - 1] - order[j];
            if (d < 0 || (d == 0 && strcmp(c->metrics[j - 1].key, c->metrics[j].key) <= 0))
                break;
            struct compare_metric t = c->metrics[j];
            c->metrics[j] = c->metrics[j - 1];
            c->metrics[j - 1] = t;
            uint8_t o = order[j];
            order[j] = order[j - 1];
            order[j - 1] = o;
        }
}

static int load_metrics(struct store *s, struct compare_run *c)
{
    struct metric_load m = {.s = s, .c = c, .interval_ns = c->rec.interval_ns};
    int rc = s->ops->series_query(s, c->rec.id, keep_series, &m);
    if (m.rc < 0)
        rc = m.rc;
    if (rc == 0)
        sort_metrics(c, m.order);
    free(m.order);
    return rc < 0 ? rc : 0;
}

struct finding_load {
    struct compare_run *c;
    uint32_t cap;
};

/* Only the rule's name: compare says which rules fired, strobe show says
 * the rest. */
static int keep_rule(const struct finding_record *f, void *arg)
{
    struct finding_load *l = arg;
    struct compare_run *c = l->c;
    if (!f->rule || compare_run_has_finding(c, f->rule))
        return 0;
    if (array_grow((void **)&c->findings, &l->cap, c->nfindings + 1, sizeof(*c->findings), 4) < 0)
        return -ENOMEM;
    if (!(c->findings[c->nfindings] = strdup(f->rule)))
        return -ENOMEM;
    c->nfindings++;
    return 0;
}

static void load_steps(struct compare_run *c, const struct step_analysis *a)
{
    if (!a->ngroups)
        return;
    const struct step_group *g = &a->groups[a->primary];
    c->has_steps = g->steps.count > 0;
    c->steps = g->steps;
    for (int p = 0; p < PHASE_COUNT; p++) {
        c->phase_share[p] = step_group_share(g, (enum phase)p);
        c->phase_step_ns[p] = g->steps.count ? g->phase_ns[p] / (double)g->steps.count : 0.0;
    }
}

int compare_run_load(struct store *s, const struct run_record *r, struct compare_run *out)
{
    memset(out, 0, sizeof(*out));
    run_record_init(&out->rec);
    int rc = run_record_copy(&out->rec, r);
    if (rc < 0)
        return rc;
    struct run_events ev;
    struct step_analysis a;
    memset(&a, 0, sizeof(a));
    rc = run_events_load(s, r->id, &ev);
    if (rc == 0)
        rc = step_analysis_run(&ev, &a);
    if (rc == 0)
        load_steps(out, &a);
    step_analysis_release(&a);
    run_events_release(&ev);
    if (rc == 0)
        rc = load_metrics(s, out);
    if (rc == 0) {
        struct finding_load l = {.c = out};
        /* a store from before the rules has no findings table: none */
        if (s->ops->findings_query(s, r->id, keep_rule, &l) == -ENOMEM)
            rc = -ENOMEM;
    }
    return rc;
}

void compare_run_release(struct compare_run *c)
{
    run_record_release(&c->rec);
    for (uint32_t i = 0; i < c->nmetrics; i++)
        free(c->metrics[i].key);
    free(c->metrics);
    for (uint32_t i = 0; i < c->nfindings; i++)
        free(c->findings[i]);
    free(c->findings);
    memset(c, 0, sizeof(*c));
}

const struct compare_metric *compare_run_metric(const struct compare_run *c, const char *key)
{
    for (uint32_t i = 0; i < c->nmetrics; i++)
        if (strcmp(c->metrics[i].key, key) == 0)
            return &c->metrics[i];
    return NULL;
}

int compare_run_has_finding(const struct compare_run *c, const char *rule)
{
    for (uint32_t i = 0; i < c->nfindings; i++)
        if (strcmp(c->findings[i], rule) == 0)
            return 1;
    return 0;
}

double compare_pct(double base, double v)
{
    if (isnan(base) || isnan(v) || base == 0)
        return NAN;
    return 100.0 * (v - base) / base;
}

int compare_significant(double mean_a, double spread_a, double mean_b, double spread_b,
                        double min_pct)
{
    if (isnan(mean_a) || isnan(mean_b))
        return 0;
    double noise = fmax(isnan(spread_a) ? 0 : spread_a, isnan(spread_b) ? 0 : spread_b);
    noise = fmax(noise, fabs(mean_a) * min_pct / 100.0);
    return fabs(mean_b - mean_a) > noise;
}

int compare_steps_significant(const struct duration_stats *a, const struct duration_stats *b)
{
    if (!a->count || !b->count || isnan(a->mean_ns) || isnan(b->mean_ns))
        return 0;
    /* sigma from p95 - p50 (1.645 sigma for a normal spread), the mean's
     * standard error from it, and 3 of those for the difference */
    double sa = (a->p95_ns - a->p50_ns) / 1.645, sb = (b->p95_ns - b->p50_ns) / 1.645;
    double se = sqrt(sa * sa / (double)a->count + sb * sb / (double)b->count);
    double noise = fmax(3.0 * se, fabs(a->mean_ns) * COMPARE_STEP_MIN_PCT / 100.0);
    return fabs(b->mean_ns - a->mean_ns) > noise;
}

int compare_metric_significant(const struct compare_metric *a, const struct compare_metric *b)
{
    return compare_significant(a->st.mean, a->st.p95 - a->st.p50, b->st.mean, b->st.p95 - b->st.p50,
                               COMPARE_METRIC_MIN_PCT);
}

/* The phase that moved most in the direction the mean moved. */
static void explain(struct compare_diff *d)
{
    d->explained_by = -1;
    if (d->step_mean_ns == 0)
        return;
    double sign = d->step_mean_ns > 0 ? 1.0 : -1.0, best = 0;
    for (int p = 0; p < PHASE_COUNT; p++)
        if (sign * d->phase_ns[p] > best) {
            best = sign * d->phase_ns[p];
            d->explained_by = p;
        }
    if (d->explained_by >= 0)
        d->explained_share = d->phase_ns[d->explained_by] / d->step_mean_ns;
}

void compare_diff_runs(const struct compare_run *base, const struct compare_run *run,
                       struct compare_diff *out)
{
    memset(out, 0, sizeof(*out));
    out->explained_by = -1;
    out->step_mean_pct = NAN;
    if (!base->has_steps || !run->has_steps)
        return;
    const struct duration_stats *a = &base->steps, *b = &run->steps;
    out->steps = 1;
    out->step_mean_ns = b->mean_ns - a->mean_ns;
    out->step_mean_pct = compare_pct(a->mean_ns, b->mean_ns);
    out->step_significant = compare_steps_significant(a, b);
    for (int p = 0; p < PHASE_COUNT; p++) {
        out->phase_points[p] = 100.0 * (run->phase_share[p] - base->phase_share[p]);
        out->phase_ns[p] = run->phase_step_ns[p] - base->phase_step_ns[p];
        out->phase_significant[p] = fabs(out->phase_points[p]) >= COMPARE_PHASE_POINTS;
    }
    explain(out);
}

double compare_steps_per_s(const struct duration_stats *s)
{
    return s->mean_ns > 0 ? 1e9 / s->mean_ns : NAN;
}

/* ---- parameters and tags ----------------------------------------------------- */

static int kv_value_changed(const struct kv_list *a, const struct kv_list *b, const char *key)
{
    const char *va = kv_list_get(a, key);
    const char *vb = kv_list_get(b, key);
    if (!va || !vb)
        return va != vb;
    return strcmp(va, vb) != 0;
}

int compare_param_changed(const struct compare_run *base, const struct compare_run *run,
                          const char *key)
{
    return kv_value_changed(&base->rec.params, &run->rec.params, key);
}

int compare_kv_differs(const struct kv_list *const *lists, uint32_t n, const char *key)
{
    for (uint32_t i = 1; i < n; i++)
        if (kv_value_changed(lists[0], lists[i], key))
            return 1;
    return 0;
}

static int key_listed(const char **keys, uint32_t n, const char *key)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return 1;
    return 0;
}

int compare_kv_keys(const struct kv_list *const *lists, uint32_t n, const char ***keys,
                    uint32_t *nkeys)
{
    const char **seen = NULL;
    uint32_t nseen = 0, cap = 0;
    for (uint32_t r = 0; r < n; r++)
        for (size_t i = 0; i < lists[r]->n; i++) {
            const char *k = lists[r]->items[i].key;
            if (key_listed(seen, nseen, k))
                continue;
            if (array_grow((void **)&seen, &cap, nseen + 1, sizeof(*seen), 16) < 0) {
                free(seen);
                return -ENOMEM;
            }
            seen[nseen++] = k;
        }
    *keys = seen;
    *nkeys = nseen;
    return 0;
}

int compare_param_keys(const struct compare_run *runs, uint32_t n, const char ***keys,
                       uint32_t *nkeys, uint32_t *nequal)
{
    const struct kv_list **lists = calloc(n ? n : 1, sizeof(*lists));
    if (!lists)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++)
        lists[r] = &runs[r].rec.params;
    const char **seen = NULL;
    uint32_t nseen = 0;
    int rc = compare_kv_keys(lists, n, &seen, &nseen);
    /* keep the differing keys in place, count the equal ones */
    uint32_t kept = 0;
    for (uint32_t i = 0; rc == 0 && i < nseen; i++)
        if (compare_kv_differs(lists, n, seen[i]))
            seen[kept++] = seen[i];
    free(lists);
    if (rc < 0)
        return rc;
    *nequal = nseen - kept;
    *nkeys = kept;
    *keys = seen;
    return 0;
}
