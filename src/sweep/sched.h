/*
 * strobe sweep's scheduler: a plan's workloads in order, each run under its
 * own `strobe run`, one event loop in one thread (signalfd, the runs'
 * report pipes, poll).
 *
 * A run's recorder starts behind a gate (strobe run --start-gate R,G): it
 * opens the store, writes its run row and readies its collectors, then
 * writes its run id to R and waits. When every recorder of the workload is
 * ready, one byte on each G starts every job at once. A recorder then
 * writes "pid N" (the job's pid, for timeouts) and, when the job exits,
 * "end STATUS", before it saves the run's last data.
 *
 * Between workloads: the recorders of up to three workloads ahead start
 * while the current one runs (those that need no MPS or MIG set up) and
 * wait at their gates; the next goes as soon as the current jobs have all
 * exited 0, not when their recorders have finished saving. That is what keeps the time from one job's end to the next job's
 * start short (docs/benchmarks.md). A failed attempt with retries left
 * runs again before anything after it goes.
 *
 * Sharing: device locks (refcounted per device within the sweep), then the
 * MPS daemon or the MIG slices of the workload (sweep/gpu_share.h), torn
 * down when its jobs have ended. Each run gets CUDA_VISIBLE_DEVICES: its
 * devices, their UUIDs under MPS, or its MIG slice's UUID.
 *
 * Signals: SIGINT, SIGTERM or SIGHUP stop the campaign. Runs not started
 * yet are called off (their gate closes); running jobs get the signal
 * through their recorders (not from a terminal: the terminal already sent
 * it to the whole foreground group); the state is kept, and a workload cut
 * short is "interrupted". A second signal sends SIGTERM to the jobs, a
 * third SIGKILL. Those, and a timeout's SIGTERM and SIGKILL, go to each
 * job and its descendants, as timeout(1)'s go to its command's group, so
 * that a shell's or a launcher's children end with it. Recorders get
 * SIGTERM if the sweep itself dies (PR_SET_PDEATHSIG), so no run outlives
 * its campaign unseen.
 */
#ifndef STROBE_SWEEP_SCHED_H
#define STROBE_SWEEP_SCHED_H

#include <stdint.h>

#include "sweep/spec.h"
#include "sweep/state.h"

struct sweep_opts {
    const char *store_uri; /* absolute when a file: the runs start elsewhere */
    const char *exe;       /* strobe itself */
    const char *lock_dir;  /* device locks */
    const char *work_dir;  /* MPS folders and wrapped listeners' reports */
    int rerun;             /* run finished workloads again */
    int parallel;          /* independent workloads at once on disjoint devices */
    int write_back;        /* Status and Run into the file after each workload */
    int quiet;
    int64_t stop_grace_ns; /* after a timeout's SIGTERM, SIGKILL */
};

/*
 * Settle the lost workloads of st (running, their sweep gone) whose runs
 * have all ended in the store all the same: the sweep died after their
 * recorders had saved them and before it saved what they gave. Each takes
 * the status its runs give (finished, stopped or failed) as if its sweep
 * had seen them end, so that a finished one is not run again. The others
 * stay lost. Before sweep_decide; st is saved with the campaign.
 */
void sweep_settle_lost(struct store *store, struct campaign_state *st);

/* What the sweep does with a workload of the plan. */
enum sweep_decision {
    SWEEP_RUN,       /* never ran */
    SWEEP_RUN_AGAIN, /* failed, lost or interrupted before */
    SWEEP_RERUN,     /* finished, and --rerun asks again */
    SWEEP_SKIP,      /* finished or stopped before */
    SWEEP_SKIP_FILE, /* the file says FINISHED (radT's write-back), no state says otherwise */
    SWEEP_BUSY,      /* running now under another live sweep (seen by a dry run) */
};

/* The decision for each workload of spec (decisions: spec->n entries),
 * from the campaign's state (NULL: a new campaign). */
void sweep_decide(const struct sweep_spec *spec, struct campaign_state *st, int rerun,
                  enum sweep_decision *decisions);
const char *sweep_decision_name(enum sweep_decision d);

/* Run the plan. The campaign's state is st (loaded, or new with its name),
 * saved to the store as it goes. Returns strobe sweep's exit status: 0
 * when every workload finished (or was stopped by a rule), 1 when one
 * failed, 128+N when signal N stopped the campaign, 125 on its own error. */
int sweep_execute(struct sweep_spec *spec, const enum sweep_decision *decisions,
                  struct store *store, struct campaign_state *st, const struct sweep_opts *o);

#endif
