/*
 * What each workload of a campaign gave, from its runs in the store: the
 * figures `strobe sweep status` prints and strobe serve's
 * /api/campaigns/NAME answers (docs/api.md), computed here for both, so
 * the terminal and the dashboard show the same numbers.
 *
 * Per workload: its runs, duration (the longest run's), samples/s (every
 * run's together), samples/s per device (over its devices, or the host as
 * one), vs solo (a collocated workload's per-device figure over the mean of
 * the finished solo workloads with the same parameters and command), the
 * median of its runs' step p50, and its findings.
 */
#ifndef STROBE_SWEEP_RESULTS_H
#define STROBE_SWEEP_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/json_writer.h"
#include "serve/summary.h"
#include "store/store.h"
#include "sweep/state.h"

/* A run of a workload, as the store has it. */
struct sweep_run_shown {
    char id[RUN_ID_LEN + 1];
    char *name;      /* NULL when the store has no such run */
    char status[16]; /* run_record_status's; "" when the store has no such run */
};

struct sweep_figures {
    const struct wl_state *st; /* borrowed from the campaign's state */
    int nruns;
    struct sweep_run_shown *runs; /* nruns of them */
    double duration_s;
    double samples_per_s; /* every run's together; NaN when none has one */
    double per_device;    /* over its devices (the host when none) */
    double step_p50_s;    /* the median of its runs'; NaN when none has steps */
    double vs_solo;       /* per_device over its solo counterparts'; NaN when none */
    int64_t findings;
    int ndev;
    struct kv_list params; /* of its first run */
    char *command;         /* its first run's, as JSON; NULL when unknown */
};

/* How far a campaign has come, from its state alone. */
struct sweep_progress {
    enum procid_state owner; /* of its sweep process, found once */
    size_t done;             /* workloads finished or stopped by a rule */
    size_t running;          /* workloads running now ("lost" ones are not) */
    size_t total;
    /* the campaign in one word (a static string): "running" (its sweep
     * runs), "lost", "failed", "interrupted" (a workload is), "finished"
     * (every workload done), else "pending" */
    const char *status;
};

void sweep_progress_of(const struct campaign_state *st, struct sweep_progress *out);
/* p as the keys status, done, total and running_workloads (the names of
 * the workloads running now), into the object jw is writing. */
void sweep_progress_json(struct json_writer *jw, const struct campaign_state *st,
                         const struct sweep_progress *p);

struct sweep_results {
    struct sweep_figures *f; /* one per workload of the state, in its order */
    size_t n;
    size_t best; /* the finished workload of most samples/s per device; n when none */
    struct sweep_progress progress;
};

/*
 * The figures of st's workloads from their runs in s. cache holds the runs'
 * summaries (strobe serve's cache: a finished run is computed once per
 * server). out borrows st, which must outlive it; release it with
 * sweep_results_release (after a failure too). 0 or -ENOMEM.
 */
int sweep_results_load(struct store *s, struct summary_cache *cache,
                       const struct campaign_state *st, struct sweep_results *out);
void sweep_results_release(struct sweep_results *r);

/* The JSON of `strobe sweep status --json`, one object, into jw (docs/api.md
 * lists its keys under /api/campaigns/NAME). extended adds what strobe
 * serve's page needs: status, created_ns, updated_ns, owner, done, total,
 * running_workloads and best at the top; started_ns, ended_ns and
 * run_details in each workload. */
void sweep_results_json(struct json_writer *jw, const struct campaign_state *st,
                        const struct sweep_results *r, int extended);

#endif
