/*
 * The per-run figures the runs list and compare show, computed from block
 * summaries and the run's stored events, and kept in a cache keyed by what
 * changes while a run records (status, last sample, event count), so a
 * finished run is computed once per server and a live one again only after
 * the recorder has committed more.
 */
#ifndef STROBE_SERVE_SUMMARY_H
#define STROBE_SERVE_SUMMARY_H

#include <stdint.h>

#include "store/store.h"

struct run_summary {
    int64_t steps;        /* steps of the primary process (rank 0, or the busiest) */
    double step_p50_s;    /* NaN without steps */
    double samples_per_s; /* mean of app.samples_per_s (or app.throughput); else a batch-size
                           * parameter over the mean step; NaN when neither */
    double cpu_util_pct;  /* mean of cpu.util; NaN when absent */
    double gpu_util_pct;  /* mean of gpu.util over every GPU; NaN without GPUs */
    int64_t findings;
};

struct summary_cache;

int summary_cache_new(struct summary_cache **out);
void summary_cache_free(struct summary_cache *c);

/* r's summary, from the cache or computed through s (the caller's thread's
 * store). Thread-safe. 0, or negative with s->err set. */
int summary_get(struct summary_cache *c, struct store *s, const struct run_record *r,
                struct run_summary *out);

#endif
