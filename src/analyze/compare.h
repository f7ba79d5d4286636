/*
 * Several runs side by side (strobe compare, and the dashboard's compare
 * view): each run's step time, phase shares, main metrics and findings, and
 * the difference of each run from a baseline (the idea of HTA's trace diff:
 * which phase grew, which metric moved).
 *
 * Noise rules. Step means: the difference must exceed 3 standard errors of
 * it, each run's sigma taken as (p95 - p50) / 1.645 over the square root of
 * its step count (steps are many and nearly independent), and
 * COMPARE_STEP_MIN_PCT of the baseline. Sampled metrics are strongly
 * autocorrelated (a 100 ms series of a 10 s phase is not 100 independent
 * readings), so their means must move by more than the larger p95 - p50
 * spread of the two runs itself, and by COMPARE_METRIC_MIN_PCT; the floor
 * keeps series with almost no spread (a flat RSS, host memory) from marking
 * the drift that separate runs always show. Phase shares have no spread of
 * their own: a share is significant when it moved by COMPARE_PHASE_POINTS
 * points or more.
 */
#ifndef STROBE_ANALYZE_COMPARE_H
#define STROBE_ANALYZE_COMPARE_H

#include <stdint.h>

#include "analyze/steps.h"
#include "common/strbuf.h"
#include "store/points.h"
#include "store/store.h"

#define COMPARE_PHASE_POINTS   2.0 /* share change, in points, that counts as significant */
#define COMPARE_STEP_MIN_PCT   1.0 /* step means closer than this are never marked */
#define COMPARE_METRIC_MIN_PCT 5.0 /* metric means closer than this are never marked */

/* One summarised series: name, or name{labels}. */
struct compare_metric {
    char *key; /* malloc'd: a node's name may be long, and a cut key would match another's */
    char unit[16];
    struct point_stats st;
};

/* One run as compared. Everything is owned (compare_run_release frees). */
struct compare_run {
    struct run_record rec;
    int has_steps;                     /* 0: no step spans; steps and phases are zero */
    struct duration_stats steps;       /* the primary process's (rank 0, or the most steps) */
    double phase_share[PHASE_COUNT];   /* 0..1 of step time */
    double phase_step_ns[PHASE_COUNT]; /* mean time per step in each phase */
    struct compare_metric *metrics;    /* the utilization series the run has, in table order */
    uint32_t nmetrics;
    char **findings; /* distinct rule names, in the order they first fired */
    uint32_t nfindings;
};

/*
 * Load what compare shows of run r (copied into out->rec): steps and phases
 * from its framework events, the utilization series (cpu.util, proc.cpu,
 * proc.rss_bytes, mem.used_bytes, gpu.util{gpu=N}, gpu.mem_used_bytes{gpu=N};
 * each node's, {node=X} and {gpu=N,node=X}, in an import of several nodes)
 * from its points, and its stored findings (none in a store from before the
 * rules). 0, or negative with s->err set; out is always safe to release.
 */
int compare_run_load(struct store *s, const struct run_record *r, struct compare_run *out);
void compare_run_release(struct compare_run *c);

/* The metric key in c, or NULL. */
const struct compare_metric *compare_run_metric(const struct compare_run *c, const char *key);
/* Whether rule fired in c. */
int compare_run_has_finding(const struct compare_run *c, const char *rule);

/* 100 * (v - base) / base; NaN when base is 0 or either is NaN. */
double compare_pct(double base, double v);
/* Whether means a (the baseline) and b differ by more than the larger
 * p95 - p50 spread and by more than min_pct of a. */
int compare_significant(double mean_a, double spread_a, double mean_b, double spread_b,
                        double min_pct);
/* The noise rule for two runs' step means (standard errors; above). */
int compare_steps_significant(const struct duration_stats *a, const struct duration_stats *b);
/* The noise rule for one metric of two runs (COMPARE_METRIC_MIN_PCT). */
int compare_metric_significant(const struct compare_metric *a, const struct compare_metric *b);

/* A run against the baseline. */
struct compare_diff {
    int steps;                          /* both runs have steps; the step fields below are valid */
    double step_mean_ns;                /* run - baseline */
    double step_mean_pct;               /* of the baseline's mean */
    int step_significant;               /* by the noise rule */
    double phase_points[PHASE_COUNT];   /* share change, in points (0..100) */
    double phase_ns[PHASE_COUNT];       /* change of the mean time per step in each phase */
    int phase_significant[PHASE_COUNT]; /* moved by COMPARE_PHASE_POINTS or more */
    int explained_by;       /* the phase whose per-step time moved most in the mean's direction,
                               -1 without steps or when the mean did not move */
    double explained_share; /* its change over the mean's change (0..1, more if others shrank) */
};

void compare_diff_runs(const struct compare_run *base, const struct compare_run *run,
                       struct compare_diff *out);

/* Steps per second: 1 / mean; NaN without a mean. */
double compare_steps_per_s(const struct duration_stats *s);

/*
 * Keys of the key-value lists lists[0..n) (parameters, tags), each once, in
 * the order they first appear. *keys (free it; the strings belong to the
 * lists) holds them. 0 or -ENOMEM.
 */
int compare_kv_keys(const struct kv_list *const *lists, uint32_t n, const char ***keys,
                    uint32_t *nkeys);
/* Whether some list's value of key differs from lists[0]'s, or is missing
 * where the other has one. */
int compare_kv_differs(const struct kv_list *const *lists, uint32_t n, const char *key);

/*
 * Parameter keys of all runs, each once, in the order they first appear
 * (baseline first). A key differs when some run's value differs from the
 * baseline's or is missing. *keys (free it; the strings belong to the runs)
 * holds the differing keys; *nequal counts the rest. 0 or -ENOMEM.
 */
int compare_param_keys(const struct compare_run *runs, uint32_t n, const char ***keys,
                       uint32_t *nkeys, uint32_t *nequal);
/* Whether run's value of key differs from base's (missing counts as a value). */
int compare_param_changed(const struct compare_run *base, const struct compare_run *run,
                          const char *key);

struct json_writer;
/* The comparison as one JSON object, a value for jw (compare_json.c):
 * "baseline", "runs" and each later run's "diff" from the first; n >= 1. */
void compare_json(struct json_writer *jw, const struct compare_run *runs, uint32_t n);

#endif
