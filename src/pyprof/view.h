/*
 * The views of a run's Python stack samples: each sample attributed to a
 * role, a phase and a step, filtered, and counted per (stack, role, phase,
 * state). strobe flame, show, trace and the report read this.
 *
 * Role (docs/cli.md, "strobe flame"), from the run's processes (the store's
 * processes table, which the framework capture fills):
 *   role "main"                     -> "main"
 *   a rank R (role "rank", rank R)  -> "rank R"
 *   a data-loader worker W          -> "worker W", or "rank R worker W" when
 *                                      its parent process is rank R
 *   a sampled process not listed    -> "child"; but the job's root process,
 *                                      the first process of the profile whose
 *                                      parent is not in the profile, is "main"
 * Phase, of a main or rank process's sample at time t, from the process's
 * framework spans (any thread of it):
 *   inside a training step span ("step", "step:global"): the innermost of
 *   the spans data, forward, backward, optimizer, comm:* ("comm") open at t,
 *   else "other"; inside an evaluation step ("step:eval") only: "eval";
 *   outside any step: the innermost phase span open at t, else "none"
 *   (startup, between epochs).
 * A data-loader worker's samples are all "data": a worker only loads data.
 * Step: the number of the training step span covering t in the process; for
 * a worker, that of its parent process (its rank's main process, else the
 * job's root); 0 outside steps.
 *
 * Frames and stacks of the view are its own dictionary, merged from the
 * sources (one profile per node of a cluster job), so ids are dense and
 * stable for a given input.
 */
#ifndef STROBE_PYPROF_VIEW_H
#define STROBE_PYPROF_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/steps.h"
#include "common/strbuf.h"
#include "pyprof/profile.h"
#include "store/store.h"

/* Phases of a sample: enum phase (analyze/steps.h), then these two. */
enum { PY_PHASE_NONE = PHASE_COUNT, PY_PHASE_EVAL, PY_PHASE_COUNT };
extern const char *const py_phase_names[PY_PHASE_COUNT]; /* "data", ..., "other", "none", "eval" */

/* The phase named s, or -1. */
int py_phase_parse(const char *s);

#define PY_STATES 6 /* enum py_thread_state's PY_ST_COUNT */
extern const char *const py_state_names[PY_STATES];

struct py_view_filter {
    const char *role;            /* a label, or a prefix of labels ("worker"); NULL: all */
    int phase;                   /* PY_PHASE_*; -1: all */
    uint32_t step_from, step_to; /* both 0: all */
    int64_t pid;                 /* 0: all */
    int idle;                    /* count every state, not only running */
};

/* One source of samples: a profile, its pids moved up by pid_base (a
 * cluster job's node, as the job's view numbers its processes). */
struct py_source {
    const struct py_profile *prof;
    int64_t pid_base;
};

struct py_view_frame {
    char *func, *file; /* owned */
    uint32_t line;
};

struct py_view_count {
    uint32_t stack; /* index into stacks */
    uint32_t role, phase, state;
    uint64_t count;
};

/* One attributed sample (kept for the trace's tracks). */
struct py_view_sample {
    int64_t t_ns;
    int64_t pid, tid;
    uint32_t stack, role, step;
    uint8_t phase, state;
};

struct py_view {
    struct py_view_frame *frames; /* frame index = position */
    uint32_t nframes, frames_cap;
    uint32_t *stack_off, *stack_depth; /* stack index = position; [0] is the empty stack */
    uint32_t nstacks, stacks_cap;
    uint32_t *stack_frames; /* frame indexes, root first */
    uint32_t nstack_frames, stack_frames_cap;
    char **roles; /* labels, in order of first sample */
    uint32_t nroles, roles_cap;
    struct py_view_count *counts; /* by stack, role, phase, state; all states */
    uint32_t ncounts;
    struct py_view_sample *samples; /* the samples that passed the filters, all states */
    uint32_t nsamples;
    uint64_t total;      /* samples of every state that passed role/phase/steps/pid */
    uint64_t selected;   /* of those, the ones the state filter keeps */
    uint64_t all;        /* samples in the sources */
    int64_t interval_ns; /* the median gap between a thread's samples; 0 unknown */
    int64_t first_ns, last_ns;
    void *index; /* private: the dictionaries' hash tables while building */
};

/* Attribute and count the samples of src[0..n) against the run's events e
 * (names, processes, spans; may be empty). 0 or -ENOMEM; py_view_release
 * after, even then. */
int py_view_build(struct py_view *v, const struct py_source *src, uint32_t n,
                  const struct run_events *e, const struct py_view_filter *f);
void py_view_release(struct py_view *v);

/* Whether count c passes the view's state filter. */
int py_view_state_kept(const struct py_view_filter *f, uint32_t state);

/* A function's share of the selected samples. */
struct py_top {
    uint32_t frame;
    uint64_t self, total;
};
/* The functions, by self (by_total 0) or total count, most first (ties by
 * name), at most max of them into out (caller frees *out). Only counts
 * whose state the filter keeps. 0 or -ENOMEM. */
int py_view_top(const struct py_view *v, const struct py_view_filter *f, int by_total, uint32_t max,
                struct py_top **out, uint32_t *n);

/* A frame as collapsed-stack text, "func (file:line)", with ';' written ','
 * and control characters '?' so a line cannot break. */
void py_view_frame_text(const struct py_view *v, uint32_t frame, struct strbuf *out);
/* Collapsed stacks: "root;...;leaf count" lines sorted bytewise, of the
 * counts the filter keeps; stacks with no Python frame left out. */
int py_view_collapsed(const struct py_view *v, const struct py_view_filter *f, struct strbuf *out);
/* The flame data JSON (docs/cli.md): every state, the filters as given. */
int py_view_json(const struct py_view *v, const char *run_id, const struct py_view_filter *f,
                 struct strbuf *out);

/* A run's samples as loaded from the store: one profile per node (one for a
 * run of its own), and its events. */
struct py_run {
    struct py_profile *profs;
    struct py_source *src;
    uint32_t nprofs;
    struct run_events ev;
    uint64_t bad_blocks; /* blocks that did not decode: skipped */
    uint64_t notes;      /* lines of the sampler's notes */
};

/*
 * Load r's profile(s) from s (a job's run through its view: each node run's
 * blocks, pids as the view numbers them), and its events when events is
 * set (a caller that has them loaded already passes 0). 0, or negative with
 * a one-line reason in err. py_run_release after, even then.
 */
int py_run_load(struct store *s, const struct run_record *r, int events, struct py_run *out,
                struct strbuf *err);
void py_run_release(struct py_run *pr);
/* Samples in the run. */
uint64_t py_run_samples(const struct py_run *pr);

#endif
