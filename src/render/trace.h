/*
 * strobe trace: one run's framework events, metrics and findings laid out as
 * one timeline, then written as Chrome trace-event JSON (trace_chrome.c) or
 * Perfetto's protobuf TrackEvent format (trace_perfetto.c). docs/trace.md
 * describes the layout.
 *
 * The model (struct trace) is built once from the store and read by both
 * writers, so they show the same tracks and the same events:
 *   - a process per process that wrote events, named by its role and comm
 *     ("rank 1 (python3)", "dataloader worker 0 (pt_data_worker)");
 *   - a thread per thread, with its spans (slices) and instants;
 *   - per node, a metrics process holding a counter track per stored series
 *     (a series with a pid= label goes to that process instead) and, on the
 *     first node, the findings as instants;
 *   - with several nodes (series labelled node=, comms ending in @node, as
 *     imports write them) each node's processes sort together, its name first.
 *
 * Times: the store keeps every time as ns since the Unix epoch (UTC), events
 * and samples alike, so they are on one axis already. Chrome JSON writes µs
 * since the run's start with 3 decimals (ns kept); Perfetto writes the UTC ns.
 */
#ifndef STROBE_RENDER_TRACE_H
#define STROBE_RENDER_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/steps.h"
#include "store/points.h"
#include "store/store.h"

/* The category of a slice or instant, from its name. */
enum trace_cat {
    TRACE_CAT_STEP,       /* step, step:eval, step:predict, step:global */
    TRACE_CAT_PHASE,      /* data, forward, backward, optimizer */
    TRACE_CAT_COMM,       /* comm:* */
    TRACE_CAT_OPERATOR,   /* op:* (torch.profiler operators) */
    TRACE_CAT_DATALOADER, /* dataloader.* */
    TRACE_CAT_SPAN,       /* anything else: the script's own spans */
    TRACE_CAT_INSTANT,    /* instants; span ends whose begin was lost */
    TRACE_CAT_FINDING,    /* a rule's finding */
    TRACE_CAT_PYTHON,     /* a Python function, from the stack samples */
    TRACE_CAT_COUNT
};

extern const char *const trace_cat_names[TRACE_CAT_COUNT];

struct trace_slice {
    int64_t start_ns, end_ns; /* UTC */
    uint32_t name;            /* run-wide name id (run_events_name) */
    uint32_t step;            /* the step the span belongs to */
    uint8_t cat;              /* enum trace_cat */
    uint8_t lane;             /* 0: the thread's track; k: its k-th overlap track */
    uint8_t open;             /* began and never ended: ends at the run's end */
};

struct trace_instant {
    int64_t ts_ns;
    uint32_t name;
    uint32_t step;
    uint8_t cat;
    uint8_t orphan_end; /* a span end whose begin was lost */
};

/* Tracks that do not fit one stack of properly nested slices go to extra
 * lanes (Perfetto's begin/end pairs need proper nesting); beyond this many
 * the last lane takes the rest. */
#define TRACE_LANES_MAX 8
/* Slices open at once on one lane that Perfetto's writer nests; a deeper
 * one closes the innermost first. Both limits are counted (struct trace). */
#define TRACE_DEPTH_MAX 64

struct trace_thread {
    int64_t pid, tid;
    uint32_t proc; /* index into procs */
    char name[32];
    struct trace_slice *slices; /* by start, the outer (longer) first */
    uint32_t nslices, slices_cap;
    struct trace_instant *instants; /* by time */
    uint32_t ninstants, instants_cap;
    uint8_t lanes; /* lanes used, 1 or more when there are slices */
};

/* A Python function on a sampled thread's own track (trace_python.c):
 * consecutive samples that hold the same frame at the same depth, under the
 * same frames, are one slice. Slices of a track are in the order they
 * open (by start, the outer first) and nest properly. */
struct trace_py_slice {
    int64_t start_ns, end_ns;
    uint32_t frame; /* index into trace.py_frames */
    uint32_t depth; /* 0: the root frame */
};

struct trace_py_track {
    int64_t pid, tid; /* the sampled thread */
    uint32_t proc;    /* index into procs */
    char name[64];    /* "python TID (thread name)" */
    struct trace_py_slice *slices;
    uint32_t nslices, slices_cap;
};

/* Chrome JSON names a track by (pid, tid): a Python track's tid is the
 * thread's moved up by this, so it never is a real thread's. */
#define TRACE_PY_TID_BASE INT64_C(2000000000)

struct trace_proc {
    int64_t pid; /* the store's pid; a made-up one for a metrics process */
    char *name;  /* owned */
    uint32_t node;
    int64_t sort; /* order in the viewer: node, then metrics, main, ranks, workers */
    int metrics;  /* a node's metrics process, no events of its own */
};

/* A counter track: one stored series. Its points are not held: the writers
 * read them a block at a time (trace_counter_points), so a day at 1 kHz is
 * not 1.4 GB of points in memory before the first byte is written. */
struct trace_counter {
    char *name; /* name{labels}, owned */
    const char *unit;
    uint32_t proc; /* where the track goes */
    int64_t series_id;
};

struct trace_options {
    uint32_t step_from, step_to; /* --steps A-B; both 0 for the whole run */
    int mode;                    /* the steps' enum step_mode; -1: training (train, global) */
};

struct trace {
    struct store *store; /* where the counters' points are read from */
    const struct run_record *run;
    int64_t origin_ns;      /* the run's start: Chrome times are relative to it */
    int64_t from_ns, to_ns; /* the window (the whole run: INT64_MIN, INT64_MAX) */
    int64_t end_ns;         /* where open spans end */
    struct run_events ev;   /* names (and, until built, the events) */
    uint8_t *name_cat;      /* name id -> enum trace_cat, [nnames + 1] */
    uint32_t step_name;     /* the name id added for step boundaries */
    char **nodes;           /* node names, owned; nodes[0] always exists */
    uint32_t nnodes;
    struct trace_proc *procs;
    uint32_t nprocs, procs_cap;
    struct trace_thread *threads;
    uint32_t nthreads;
    struct trace_counter *counters;
    uint32_t ncounters, counters_cap;
    char **py_frames; /* "func (file:line)", valid UTF-8, owned */
    uint32_t npy_frames;
    struct trace_py_track *py_tracks;
    uint32_t npy_tracks;
    const struct finding_record *findings; /* the caller's, inside the window */
    uint32_t *finding_idx;
    uint32_t nfindings;
    /* counts of what is in the trace, for the summary line and the tests */
    uint64_t slices, instants, points; /* points: counted as the writer reads them */
    uint64_t py_samples, py_slices;    /* on-CPU Python samples in the window, their slices */
    uint64_t corrupt_blocks;           /* blocks that did not decode: skipped */
    uint64_t crowded;  /* slices on the last lane that do not nest there (drawn out of place) */
    uint64_t too_deep; /* slices nested deeper than TRACE_DEPTH_MAX on a lane (ended early) */
    int read_failed;   /* a counter's points could not be read: store->err says why */
};

/*
 * Build the timeline of run r: its events, every series, and the findings
 * f[0..nf) (the caller's; they must outlive t). 0, or negative with a
 * one-line reason in err (-ENOENT: a step of --steps is not in the run).
 * trace_release frees what this allocates, also after a failure.
 */
int trace_build(struct store *s, const struct run_record *r, const struct trace_options *opt,
                const struct finding_record *f, uint32_t nf, struct trace *t, struct strbuf *err);
void trace_release(struct trace *t);

/*
 * The finite points of counter ci inside the window, in time order, passed to
 * fn a run at a time straight from the store's decoded block (fn must not
 * keep the pointer). Counts them into t->points. 0, or negative: fn's
 * failure, or the store's (t->read_failed set, t->store->err says why).
 */
int trace_counter_points(struct trace *t, uint32_t ci, points_fn *fn, void *arg);

/* The Python tracks of t's window from the run's samples (trace_python.c),
 * before the events are laid out (it reads their phases). 0, or negative
 * with a reason in err. */
int trace_build_python(struct trace *t, struct strbuf *err);

/* The process of pid in t->procs, added when new (named by its role). */
int trace_proc_for_pid(struct trace *t, int64_t pid, uint32_t *out);

/* The name of id, valid UTF-8 (bad bytes replaced) once built. */
const char *trace_name(const struct trace *t, uint32_t id);

/*
 * Where a trace goes: a file (gzip-compressed when its name ends in .gz) or
 * stdout ("-"). Writers append to buf and call trace_sink_flush when it grows
 * past TRACE_SINK_CHUNK.
 */
#define TRACE_SINK_CHUNK (1u << 20)

struct trace_sink {
    FILE *f;
    void *gz; /* gzFile when compressing */
    struct strbuf buf;
    uint64_t bytes; /* bytes written before compression */
    int failed;
};

int trace_sink_open(struct trace_sink *k, const char *path, struct strbuf *err);
/* Write out buf (all of it when force, else only past TRACE_SINK_CHUNK). */
int trace_sink_flush(struct trace_sink *k, int force);
/* Flush and close; 0, or negative when anything failed. */
int trace_sink_close(struct trace_sink *k);

/* The writers read the counters' points as they go (trace_counter_points),
 * which counts them into t. */
int trace_write_chrome(struct trace *t, struct trace_sink *k);
int trace_write_perfetto(struct trace *t, struct trace_sink *k);

#endif
