/*
 * The recorder's live metrics: a snapshot of the run (serve/expo.h) taken
 * once a second, which `--listen` serves and the store keeps for `strobe
 * serve` and `strobe top` (docs/openmetrics.md names every family).
 *
 * What it reads, and how:
 * - the series table: each series' last value, through the table's tap
 *   (chained before whatever tap was there: the live rules'). A rate's tap
 *   also integrates it over the points' times, the counter PromQL's rate()
 *   wants; the integral telescopes to the collector's own counter.
 * - the event sink: `step` spans (durations per rank, for the summary and
 *   steps per second), phase spans (data, forward, backward, optimizer,
 *   comm:*) and each process's rank and worker id, through its taps, chained
 *   the same way.
 * - the rules' findings and the run's counters, when the snapshot is taken.
 *
 * Threading: everything but live_metrics_published() belongs to the
 * sampling thread. The last snapshot is copied under a mutex for the HTTP
 * thread of --listen.
 *
 * Memory: per series 32 bytes; per rank a ring of 256 step durations;
 * per process of the tree its rank and worker. All of it follows the tree
 * and the series table, which are bounded themselves.
 */
#ifndef STROBE_RECORD_LIVE_METRICS_H
#define STROBE_RECORD_LIVE_METRICS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"
#include "record/events.h"
#include "rules/rules.h"
#include "sample/proctree.h"
#include "sample/series.h"
#include "store/store.h"

#define LIVE_STEP_RING 256 /* step durations kept per rank, for the quantiles */
#define LIVE_STEP_SECS 16  /* one-second buckets of step ends, for steps per second */

struct live_series; /* per series index: its metric, last value, integral */
struct live_rank;   /* per rank: step times and phases */
struct live_proc;   /* per pid: rank and worker id */

struct live_metrics {
    struct series_table *series;
    struct event_sink *sink;
    const struct proc_tree *tree;
    const struct rules_engine *rules; /* may be NULL */
    /* the taps that were there before, called first */
    series_tap_fn *next_tap;
    void *next_tap_arg;
    event_span_tap_fn *next_span;
    event_proc_tap_fn *next_proc;
    void *next_sink_arg;
    struct live_series *s;
    uint32_t ns;
    struct live_rank *ranks;
    uint32_t nranks, ranks_cap;
    struct live_proc *procs;
    uint32_t nprocs, procs_cap;
    uint32_t last_proc; /* procs[] index of the last pid found */
    int8_t *phase;      /* per event name id, what its spans stand for; -2 not known yet */
    uint32_t nphase;
    uint32_t *order; /* a snapshot's live series, grouped by metric */
    uint32_t order_cap;
    struct strbuf run_labels; /* run_id="..",run_name="..",experiment="..",node=".." */
    struct strbuf snap;       /* the last snapshot */
    pthread_mutex_t lock;     /* guards published */
    struct strbuf published;  /* a copy of snap for the HTTP thread */
    int publish;              /* --listen is on: keep published */
    int64_t interval_ns;      /* the recorder's sampling interval (staleness is three) */
};

/* Ready lm, with nothing published yet (publish: keep a copy of each
 * snapshot for live_metrics_published). */
void live_metrics_init(struct live_metrics *lm, int publish);
/* Attach to the series table and the event sink (after the live rules
 * attached theirs). run gives the labels; node is the run's node or host. */
int live_metrics_open(struct live_metrics *lm, struct series_table *series, struct event_sink *sink,
                      const struct proc_tree *tree, const struct run_record *run, const char *node);
/* The rules whose findings the snapshot shows (NULL: none). */
void live_metrics_set_rules(struct live_metrics *lm, const struct rules_engine *rules);

/* Take a snapshot at now_ns (UTC) into lm->snap; run gives the counters,
 * start_ns the run's start.
 * Returns 0 or -ENOMEM (the last good snapshot stays). */
int live_metrics_snapshot(struct live_metrics *lm, const struct run_record *run, int64_t start_ns,
                          int64_t now_ns);

/* A copy of the last snapshot onto out (any thread). 0, or -EAGAIN before
 * the first. */
int live_metrics_published(struct live_metrics *lm, struct strbuf *out);

/* Detach and free (after live_metrics_init, opened or not). */
void live_metrics_close(struct live_metrics *lm);

#endif
