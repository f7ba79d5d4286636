/*
 * Steps and phases of a run, from its stored framework events: the numbers
 * `strobe show` prints, and later the rules and the report read.
 *
 * A step is a step span: "step" or "step:global" for a training step
 * (strobe's PyTorch capture emits one per optimizer step, per backward pass
 * while no optimizer steps, or per explicit strobe.step()), "step:eval" for
 * an evaluation iteration, which is counted apart (see enum step_mode). Its
 * phases are the spans named data, forward, backward, optimizer and comm:*
 * on the same thread inside it; each phase counts its exclusive time (a comm
 * span inside backward is comm, not backward), and what no phase covers is
 * "other", so the shares of a step add up to its duration exactly. The
 * backward passes of a step are its backward spans that no other backward
 * span holds (activation checkpointing's inner ones are not passes), those
 * inside an optimizer span (a closure's) included.
 */
#ifndef STROBE_ANALYZE_STEPS_H
#define STROBE_ANALYZE_STEPS_H

#include <stdint.h>

#include "codec/events.h"
#include "store/store.h"

enum phase {
    PHASE_DATA,
    PHASE_FORWARD,
    PHASE_BACKWARD,
    PHASE_OPTIMIZER,
    PHASE_COMM,
    PHASE_OTHER,
    PHASE_COUNT
};

extern const char *const phase_names[PHASE_COUNT];

/* The events of one thread, in the order they were recorded. */
struct thread_events {
    int64_t pid, tid;
    struct event *ev;
    uint32_t n, cap;
};

struct proc_info {
    int64_t pid, ppid;
    char comm[64];
    char role[16];                                   /* "main", "rank", "dataloader", or "" */
    int64_t rank, local_rank, world_size, worker_id; /* -1 unknown */
};

/* The node of a process of an import of several nodes (docs/import.md):
 * its comm ends in "@<node>", or is the node alone, one of nodes (the
 * run's host, "algo-1,algo-2"). Returns that node, a suffix of comm, and in
 * *comm_len (when not NULL) the length of the comm before it; NULL when
 * nodes lists fewer than two or comm names none of them. */
const char *proc_import_node(const char *comm, const char *nodes, size_t *comm_len);

struct run_events {
    char **names; /* names[id - 1]; NULL where an id is missing */
    uint32_t nnames;
    struct thread_events *threads;
    uint32_t nthreads, threads_cap;
    struct proc_info *procs;
    uint32_t nprocs, procs_cap;
    uint64_t events;
    uint64_t bad_blocks; /* blocks that did not decode (skipped) */
    int64_t bytes;       /* encoded bytes of the blocks */
};

/* Load every event of run_id. 0, or negative with s->err set. */
int run_events_load(struct store *s, const char *run_id, struct run_events *out);
void run_events_release(struct run_events *e);
/* The name of id, or "" */
const char *run_events_name(const struct run_events *e, uint32_t id);

struct duration_stats {
    uint64_t count;
    double mean_ns, p50_ns, p95_ns, max_ns, min_ns, total_ns;
};

struct json_writer;
/* s as JSON members of jw's open object: "count", "mean_ns", "p50_ns",
 * "p95_ns", "max_ns", "min_ns", "total_ns" (show --json's keys, the
 * report's too). */
void duration_stats_json(struct json_writer *jw, const struct duration_stats *s);

struct step_group { /* the steps of one process (a rank, or the main process) */
    int64_t pid;
    int64_t rank; /* -1 without ranks */
    struct duration_stats steps;
    double phase_ns[PHASE_COUNT]; /* summed over its steps */
    double comm_all_threads_ns;   /* comm:* spans on every thread (DDP's overlap with backward) */
    uint64_t backward_passes;     /* outermost backward spans beginning inside its steps */
};

/* The steps of some modes, by process. */
struct step_groups {
    struct step_group *groups; /* processes with such steps, by rank then pid */
    uint32_t ngroups;
    uint32_t primary; /* the group the headline figures come from: rank 0, or the most steps */
};

struct step_analysis {
    /* training steps (modes TRAIN and GLOBAL): every figure but eval's */
    struct step_group *groups; /* processes with steps, by rank then pid */
    uint32_t ngroups;
    uint32_t primary;      /* the group the headline figures come from: rank 0, or the most steps */
    uint32_t workers;      /* data-loader worker processes seen */
    double worker_busy_ns; /* their dataloader.worker spans, summed */
    struct step_groups eval; /* evaluation steps ("step:eval"), apart */
};

/* A span inside a step, for the phase arithmetic (shared with the rules). */
struct phase_span {
    int64_t start, end;
    int phase;        /* enum phase, or -1 for the step itself */
    int64_t child_ns; /* time covered by spans nested directly inside */
};

/* Step modes, kept apart as SageMaker keeps them (smdebug's ModeKeys). A
 * step span's name carries its mode: "step" is a training step,
 * "step:eval" an evaluation step (a loop under torch.no_grad() or
 * model.eval()), "step:predict" an inference step, and "step:global" a step
 * of smdebug's GLOBAL mode (what its hooks write when a script never sets a
 * mode: training, in every view that pools training steps). */
enum step_mode {
    STEP_MODE_TRAIN,
    STEP_MODE_EVAL,
    STEP_MODE_PREDICT,
    STEP_MODE_GLOBAL,
    STEP_MODE_COUNT
};

extern const char *const step_mode_names[STEP_MODE_COUNT]; /* "train", "eval", ... */
extern const char *const step_span_names[STEP_MODE_COUNT]; /* "step", "step:eval", ... */

/* The mode of a step span's name, or -1 when name is no step span. */
int steps_mode_of(const char *name);
/* Whether steps of mode count as training steps (TRAIN and GLOBAL). */
int step_mode_is_training(int mode);
/* The mode named s ("train", "eval", "predict", "global"; any case), or -1. */
int step_mode_parse(const char *s);

/* The phase a span name stands for (data, forward, backward, optimizer,
 * comm:*), or -1. */
int steps_phase_of(const char *name);
/* qsort order of phase spans: by start, the outer (longer) first. */
int steps_cmp_span(const void *a, const void *b);
/* Add to out[] the exclusive time per phase of ph[0..n) (sorted with
 * steps_cmp_span), clipped to the step [s0, s1); what no span covers goes to
 * PHASE_OTHER. Nesting: a span's time minus what its direct children cover. */
void steps_phase_times(struct phase_span *ph, uint32_t n, int64_t s0, int64_t s1, double *out);

/* Step modes as a set of bits (1 << enum step_mode), for the walks. */
#define STEP_MODES_TRAINING ((1u << STEP_MODE_TRAIN) | (1u << STEP_MODE_GLOBAL))
#define STEP_MODES_EVAL     (1u << STEP_MODE_EVAL)

/* Where a walk adds one step's figures: phase_ns[PHASE_COUNT], and
 * *backward_passes when it is not NULL. */
struct step_sink {
    double *phase_ns;
    uint64_t *backward_passes;
};

/* Walk thread t's steps of the modes in the set, in time order. For each,
 * fn(arg, step, &sink) sets sink's phase_ns (and backward_passes, or leaves
 * it NULL) and returns 0, or -ENOMEM to stop; only the phases on the step's
 * own thread count. 0 or -ENOMEM. */
typedef int steps_sink_fn(void *arg, const struct phase_span *step, struct step_sink *out);
int steps_walk_thread_modes(const struct run_events *e, const struct thread_events *t,
                            unsigned modes, steps_sink_fn *fn, void *arg);

/* Walk thread t's training steps in time order. For each, row(arg, step)
 * returns the array (PHASE_COUNT) its phase times are added to, or NULL to
 * stop with -ENOMEM; only the phases on the step's own thread count. 0 or
 * -ENOMEM. */
typedef double *steps_row_fn(void *arg, const struct phase_span *step);
int steps_walk_thread(const struct run_events *e, const struct thread_events *t, steps_row_fn *row,
                      void *arg);

/* Training steps, eval steps and workers of e, into out, which
 * step_analysis_release() frees. 0, or -ENOMEM with nothing held. */
int step_analysis_run(const struct run_events *e, struct step_analysis *out);
void step_analysis_release(struct step_analysis *a);

/* Share (0..1) of phase p in group g's step time. */
double step_group_share(const struct step_group *g, enum phase p);
/* Backward passes per step of g (4 with four micro-batches a step), 0
 * without steps. */
double step_group_backward_per_step(const struct step_group *g);

#endif
