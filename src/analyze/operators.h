/*
 * The operators of a run's torch.profiler window (events named "op:<name>",
 * from strobe run --torch-profile or strobe import torch-trace): count and
 * total time per operator, for strobe show's top-operators table and the
 * report.
 *
 * Times are inclusive: aten::linear's time holds the aten::addmm inside it,
 * so nested operators count in each and the shares add past 100 %.
 */
#ifndef STROBE_ANALYZE_OPERATORS_H
#define STROBE_ANALYZE_OPERATORS_H

#include <stdint.h>

#include "analyze/steps.h"

#define OPERATOR_PREFIX "op:"

struct operator_stat {
    const char *name; /* without "op:"; points into the run_events' names */
    uint64_t count;
    double total_ns;
};

struct operator_stats {
    struct operator_stat *ops; /* by total time, the largest first */
    uint32_t n;
    uint64_t events;             /* op: events in all */
    double window_ns;            /* the profiled time: the steps the operators ran in, summed
                                    (without steps, first operator start to last end) */
    uint32_t step_min, step_max; /* the steps they belong to */
};

/* 0 (out->n is 0 when the run has no op: event), or -ENOMEM. out lives
 * until operator_stats_release(), and no longer than e. */
int operator_stats_run(const struct run_events *e, struct operator_stats *out);
void operator_stats_release(struct operator_stats *s);

/* Share (0..1) of the profiled window in op. */
double operator_share(const struct operator_stats *s, const struct operator_stat *op);

#endif
