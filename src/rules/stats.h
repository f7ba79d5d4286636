/*
 * The arithmetic the rules share: percentiles, rolling windows of
 * datapoints, a quantile sketch for whole-run statistics, least squares,
 * the Jensen-Shannon distance, and a growing set of step durations that
 * answers "how many exceed x" without re-sorting per window.
 *
 * Each struct is caller-owned (_init by zeroing or the function named,
 * _release frees). Nothing here keeps a pointer to caller data.
 */
#ifndef STROBE_RULES_STATS_H
#define STROBE_RULES_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "rules/rules.h"

/* q-quantile (0..1, linear between closest ranks, numpy's default) of v[0..n),
 * which it sorts. 0 when n is 0. */
double stats_quantile_sort(double *v, uint32_t n, double q);

/* The last cap values pushed. */
struct roll {
    double *v;
    uint32_t cap, n, head; /* head: where the next value goes */
};
int roll_init(struct roll *r, uint32_t cap);
void roll_release(struct roll *r);
void roll_push(struct roll *r, double v);
/* q-quantile of what the window holds (copied into scratch, cap values). */
double roll_quantile(const struct roll *r, double *scratch, double q);
double roll_mean(const struct roll *r);
double roll_max(const struct roll *r);

/* Whole-run quantiles within 0.5 % of the value: logarithmic buckets
 * (plus one for zero and one for negatives), exact count, min, max, sum. */
struct sketch {
    uint32_t *bucket; /* SKETCH_BUCKETS, allocated on first add */
    uint64_t count, zero, negative;
    double min, max, sum;
};
void sketch_add(struct sketch *s, double v);
double sketch_quantile(const struct sketch *s, double q);
void sketch_release(struct sketch *s);

/* Least squares of y over x: slope and R^2 (0 when undefined). */
struct fit {
    double slope, intercept, r2;
    uint32_t n;
};
struct fit stats_linear_fit(const double *x, const double *y, uint32_t n);

/* Jensen-Shannon distance (the square root of the divergence) between two
 * histograms of n bins (counts, not normalised), in natural log as
 * SageMaker's LoadBalancing computes it (scipy.stats.entropy): 0 to
 * sqrt(ln 2) = 0.83, so that its threshold of 0.5 means what it means there
 * (in base 2 the same histograms measure 1.20 times more). */
double stats_js_distance(const double *p, const double *q, uint32_t n);

/* Step durations: a sorted part and an unsorted tail merged in when it grows
 * past an eighth of the whole, so counting durations above x costs a binary
 * search plus a scan of the tail. */
struct dur_set {
    double *v;
    uint32_t n, cap, sorted; /* v[0..sorted) is sorted */
    double sum, sumsq;
};
int dur_set_add(struct dur_set *d, double v);
uint32_t dur_set_count_above(struct dur_set *d, double x);
void dur_set_release(struct dur_set *d);

/* ---- window helpers ---------------------------------------------------------- */

/* The first series of metric m (and index, -1 any) on node ("" local, NULL any). */
const struct rule_series *window_series(const struct rule_window *w, enum rule_metric m,
                                        int64_t index, const char *node);
/* Mean of a series' finite values; NaN when it has none. */
double series_mean(const struct rule_series *s);
/* Mean of a series' finite values taken while one of the window's steps ran
 * (a step's start <= ts <= its end); NaN when there are none. */
double series_mean_in_steps(const struct rule_series *s, const struct rule_window *w);
/* Quantile of a series' finite values (scratch holds s->n doubles). */
double series_quantile(const struct rule_series *s, double q, double *scratch);
/* Step totals of the window: steps and their summed duration and phases, of
 * one rank (-2: every step). */
struct step_totals {
    uint32_t steps;
    double step_ns;
    double phase_ns[PHASE_COUNT];
    double comm_exposed_ns; /* max(exclusive comm, comm on any thread) per step */
    double slowest_ns;
    int slowest_phase; /* the phase that took most of the slowest step */
};
void window_step_totals(const struct rule_window *w, int64_t rank, struct step_totals *t);
/* The same for the training steps of node node_id (RULES_ANY_NODE: any). */
#define RULES_ANY_NODE UINT32_MAX
void window_step_totals_on(const struct rule_window *w, uint32_t node_id, int64_t rank,
                           struct step_totals *t);
/* Add one step to t (start t zeroed, slowest_phase -1). */
void step_totals_add(struct step_totals *t, const struct rule_step *s);
/* window_step_totals() as step_totals_text() says it; "" without steps. */
void window_steps_text(const struct rule_window *w, int64_t rank, char *out, size_t cap);
/* "over 120 steps (median ...): data 61 %, forward 12 %, ...; slowest step 210 ms, mostly data" */
void step_totals_text(const struct step_totals *t, char *out, size_t cap);

#endif
