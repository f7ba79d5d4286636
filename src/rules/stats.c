#include "rules/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/select.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_quantile_sort(double *v, uint32_t n, double q)
{
    if (!n)
        return 0;
    double pos = q * (double)(n - 1);
    uint32_t lo = (uint32_t)pos;
    select_kth(v, 0, n, lo);
    double a = v[lo];
    if (lo + 1 >= n || pos == (double)lo)
        return a;
    /* the next rank is the smallest of what select_kth left above lo */
    double b = v[lo + 1];
    for (uint32_t i = lo + 2; i < n; i++)
        if (v[i] < b)
            b = v[i];
    return a + (b - a) * (pos - (double)lo);
}

/* ---- rolling window ---------------------------------------------------------- */

int roll_init(struct roll *r, uint32_t cap)
{
    memset(r, 0, sizeof(*r));
    if (!cap)
        cap = 1;
    if (!(r->v = malloc(cap * sizeof(*r->v))))
        return -ENOMEM;
    r->cap = cap;
    return 0;
}

void roll_release(struct roll *r)
{
    free(r->v);
    memset(r, 0, sizeof(*r));
}

void roll_push(struct roll *r, double v)
{
    if (!r->cap)
        return;
    r->v[r->head] = v;
    r->head = (r->head + 1) % r->cap;
    if (r->n < r->cap)
        r->n++;
}

double roll_quantile(const struct roll *r, double *scratch, double q)
{
    memcpy(scratch, r->v, r->n * sizeof(*scratch));
    return stats_quantile_sort(scratch, r->n, q);
}

double roll_mean(const struct roll *r)
{
    double s = 0;
    for (uint32_t i = 0; i < r->n; i++)
        s += r->v[i];
    return r->n ? s / r->n : 0;
}

double roll_max(const struct roll *r)
{
    double m = -INFINITY;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->v[i] > m)
            m = r->v[i];
    return m;
}

/* ---- sketch ------------------------------------------------------------------ */

/* Buckets of width 1 % in log space from 1e-6 up: 4000 of them reach 1e11
 * times 1e-6 ... beyond any byte rate; values outside clamp to the ends. */
#define SKETCH_BUCKETS 4200
#define SKETCH_MIN     1e-6
static const double sketch_gamma = 1.01;

static uint32_t bucket_of(double v)
{
    double i = floor(log(v / SKETCH_MIN) / log(sketch_gamma));
    if (i < 0)
        return 0;
    if (i >= SKETCH_BUCKETS)
        return SKETCH_BUCKETS - 1;
    return (uint32_t)i;
}

void sketch_add(struct sketch *s, double v)
{
    if (!isfinite(v))
        return;
    if (!s->bucket && !(s->bucket = calloc(SKETCH_BUCKETS, sizeof(*s->bucket))))
        return;
    if (!s->count || v < s->min)
        s->min = v;
    if (!s->count || v > s->max)
        s->max = v;
    s->count++;
    s->sum += v;
    if (v == 0)
        s->zero++;
    else if (v < 0)
        s->negative++;
    else
        s->bucket[bucket_of(v)]++;
}

double sketch_quantile(const struct sketch *s, double q)
{
    if (!s->count)
        return NAN;
    if (q <= 0)
        return s->min;
    if (q >= 1)
        return s->max;
    uint64_t rank = (uint64_t)ceil(q * (double)s->count);
    if (rank == 0)
        rank = 1;
    if (rank <= s->negative)
        return s->min; /* the metrics the rules read are not negative */
    uint64_t seen = s->negative + s->zero;
    if (rank <= seen)
        return 0;
    for (uint32_t i = 0; i < SKETCH_BUCKETS; i++) {
        seen += s->bucket[i];
        if (seen >= rank) {
            /* the bucket's geometric middle, clamped into what was seen */
            double v = SKETCH_MIN * pow(sketch_gamma, (double)i + 0.5);
            return v < s->min ? s->min : v > s->max ? s->max : v;
        }
    }
    return s->max;
}

void sketch_release(struct sketch *s)
{
    free(s->bucket);
    memset(s, 0, sizeof(*s));
}

/* ---- fits and distances -------------------------------------------------------- */

struct fit stats_linear_fit(const double *x, const double *y, uint32_t n)
{
    struct fit f = {0, 0, 0, n};
    if (n < 3)
        return f;
    double mx = 0, my = 0;
    for (uint32_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (uint32_t i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (sxx <= 0)
        return f;
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    f.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 0;
    return f;
}

double stats_js_distance(const double *p, const double *q, uint32_t n)
{
    double sp = 0, sq = 0;
    for (uint32_t i = 0; i < n; i++) {
        sp += p[i];
        sq += q[i];
    }
    if (sp <= 0 || sq <= 0)
        return 0;
    double d = 0;
    for (uint32_t i = 0; i < n; i++) {
        double a = p[i] / sp, b = q[i] / sq, m = (a + b) / 2;
        if (a > 0)
            d += 0.5 * a * log(a / m);
        if (b > 0)
            d += 0.5 * b * log(b / m);
    }
    return d > 0 ? sqrt(d) : 0;
}

/* ---- durations ------------------------------------------------------------------ */

static void merge_tail(struct dur_set *d)
{
    uint32_t tail = d->n - d->sorted;
    if (!tail)
        return;
    qsort(d->v + d->sorted, tail, sizeof(*d->v), cmp_double);
    double *tmp = malloc(tail * sizeof(*tmp));
    if (!tmp) { /* sort it all in place: slower, same answer */
        qsort(d->v, d->n, sizeof(*d->v), cmp_double);
        d->sorted = d->n;
        return;
    }
    memcpy(tmp, d->v + d->sorted, tail * sizeof(*tmp));
    /* merge from the back so nothing is overwritten before it is read */
    uint32_t i = d->sorted, j = tail, k = d->n;
    while (j > 0) {
        if (i > 0 && d->v[i - 1] > tmp[j - 1])
            d->v[--k] = d->v[--i];
        else
            d->v[--k] = tmp[--j];
    }
    free(tmp);
    d->sorted = d->n;
}

int dur_set_add(struct dur_set *d, double v)
{
    if (d->n == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 1024;
        double *p = realloc(d->v, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        d->v = p;
        d->cap = cap;
    }
    d->v[d->n++] = v;
    d->sum += v;
    d->sumsq += v * v;
    if (d->n - d->sorted > 4096 && d->n - d->sorted > d->n / 8)
        merge_tail(d);
    return 0;
}

uint32_t dur_set_count_above(struct dur_set *d, double x)
{
    uint32_t lo = 0, hi = d->sorted; /* the first sorted value > x */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->v[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t n = d->sorted - lo;
    for (uint32_t i = d->sorted; i < d->n; i++)
        n += d->v[i] > x;
    return n;
}

void dur_set_release(struct dur_set *d)
{
    free(d->v);
    memset(d, 0, sizeof(*d));
}

/* ---- window helpers -------------------------------------------------------------- */

const struct rule_series *window_series(const struct rule_window *w, enum rule_metric m,
                                        int64_t index, const char *node)
{
    for (uint32_t i = 0; i < w->nseries; i++) {
        const struct rule_series *s = &w->series[i];
        if (s->metric == m && (index < 0 || s->index == index) &&
            (!node || strcmp(s->node, node) == 0))
            return s;
    }
    return NULL;
}

double series_mean(const struct rule_series *s)
{
    double sum = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; s && i < s->n; i++)
        if (isfinite(s->v[i])) {
            sum += s->v[i];
            n++;
        }
    return n ? sum / n : NAN;
}

/* Whether a step of w ran at ts: w's steps are in order of their end. */
static int in_a_step(const struct rule_window *w, int64_t ts)
{
    uint32_t lo = 0, hi = w->nsteps; /* the first step that ends at ts or later */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->steps[mid].end_ns < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo; i < w->nsteps; i++)
        if (w->steps[i].start_ns <= ts)
            return 1;
    return 0;
}

double series_mean_in_steps(const struct rule_series *s, const struct rule_window *w)
{
    double sum = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; s && i < s->n; i++)
        if (isfinite(s->v[i]) && in_a_step(w, s->ts[i])) {
            sum += s->v[i];
            n++;
        }
    return n ? sum / n : NAN;
}

double series_quantile(const struct rule_series *s, double q, double *scratch)
{
    uint32_t n = 0;
    for (uint32_t i = 0; s && i < s->n; i++)
        if (isfinite(s->v[i]))
            scratch[n++] = s->v[i];
    return n ? stats_quantile_sort(scratch, n, q) : NAN;
}

void step_totals_add(struct step_totals *t, const struct rule_step *s)
{
    double d = (double)(s->end_ns - s->start_ns);
    t->steps++;
    t->step_ns += d;
    for (int p = 0; p < PHASE_COUNT; p++)
        t->phase_ns[p] += s->phase_ns[p];
    double comm =
        s->phase_ns[PHASE_COMM] > s->comm_all_ns ? s->phase_ns[PHASE_COMM] : s->comm_all_ns;
    t->comm_exposed_ns += comm < d ? comm : d;
    if (d > t->slowest_ns) {
        t->slowest_ns = d;
        int best = 0;
        for (int p = 1; p < PHASE_COUNT; p++)
            if (s->phase_ns[p] > s->phase_ns[best])
                best = p;
        t->slowest_phase = best;
    }
}

void window_step_totals_on(const struct rule_window *w, uint32_t node_id, int64_t rank,
                           struct step_totals *t)
{
    memset(t, 0, sizeof(*t));
    t->slowest_phase = -1;
    for (uint32_t i = 0; i < w->nsteps; i++)
        if ((rank == -2 || w->steps[i].rank == rank) &&
            (node_id == RULES_ANY_NODE || w->steps[i].node_id == node_id))
            step_totals_add(t, &w->steps[i]);
}

void window_step_totals(const struct rule_window *w, int64_t rank, struct step_totals *t)
{
    window_step_totals_on(w, RULES_ANY_NODE, rank, t);
}

void window_steps_text(const struct rule_window *w, int64_t rank, char *out, size_t cap)
{
    struct step_totals t;
    window_step_totals(w, rank, &t);
    if (t.steps)
        step_totals_text(&t, out, cap);
    else
        out[0] = 0;
}

void step_totals_text(const struct step_totals *t, char *out, size_t cap)
{
    if (!t->steps || t->step_ns <= 0) {
        snprintf(out, cap, "no steps in this range");
        return;
    }
    int n = snprintf(out, cap, "%u steps, mean %.1f ms:", t->steps, t->step_ns / t->steps / 1e6);
    for (int p = 0; p < PHASE_COUNT && n > 0 && (size_t)n < cap; p++)
        n += snprintf(out + n, cap - (size_t)n, "%s %s %.0f %%", p ? "," : "", phase_names[p],
                      100.0 * t->phase_ns[p] / t->step_ns);
    if (n > 0 && (size_t)n < cap && t->slowest_phase >= 0)
        snprintf(out + n, cap - (size_t)n, "; slowest step %.1f ms, mostly %s", t->slowest_ns / 1e6,
                 phase_names[t->slowest_phase]);
}
