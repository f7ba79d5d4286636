/*
 * PyTorch profiler traces into a recorded run (docs/import.md, "torch-trace").
 *
 * Reads the Chrome trace-event JSON that torch.profiler's
 * export_chrome_trace() writes, in both shapes: the legacy autograd
 * profiler's top-level array (torch 1.13 without Kineto, Debian's build:
 * pid "CPU functions", tid a small thread index, ts in us since the
 * profiler started) and Kineto's object ({"traceEvents": [...],
 * "baseTimeNanoseconds": ...}, ts in us after that base, pid and tid the
 * OS's). Every complete ("X") event of an operator becomes a complete
 * event of the run named "op:<name>", GPU kernels and copies
 * "kernel:<name>", CUDA runtime calls "cuda:<name>", Python functions
 * "py:<name>"; the rest (metadata, flows, instants) is counted and left out.
 *
 * The trace's clock is put on the run's by its "ProfilerStep#N" markers
 * when the run recorded step N (each event inside a marker moves by that
 * marker's offset, the others by the median of them; with a clock in the
 * trace, marker N may be step N+1 or N-1 instead, whichever the clock
 * agrees with: torch.profiler's schedule counts from 0); else by Kineto's
 * base time or absolute timestamps; else, with a warning, trace time 0 is
 * the run's start. Events go to the thread of the run they ran on: the
 * thread with the markers (or the most operators) is the thread of the
 * run's steps, a Kineto pid/tid the run recorded is that thread, and any
 * other trace thread (a GPU stream, an unknown process) becomes a thread of
 * its own, tid TORCH_TRACE_TID_BASE + its index in the trace, in the
 * process of the run's steps.
 *
 * Outside input: garbled elements are skipped and counted (a garbled
 * stretch once), a file cut short keeps every whole element before the cut,
 * and nothing already stored is changed but the run's event counter.
 */
#ifndef STROBE_IMPORT_TORCH_TRACE_H
#define STROBE_IMPORT_TORCH_TRACE_H

#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

/* Threads the import makes up get tids from here up: above any Linux tid. */
#define TORCH_TRACE_TID_BASE ((int64_t)1 << 32)

enum torch_trace_align {
    TORCH_ALIGN_STEPS,     /* ProfilerStep#N markers matched to recorded steps */
    TORCH_ALIGN_BASE_TIME, /* Kineto's baseTimeNanoseconds (the realtime clock) */
    TORCH_ALIGN_EPOCH,     /* timestamps already in us since the Unix epoch */
    TORCH_ALIGN_RUN_START, /* no clock at all: trace time 0 at the run's start */
};

struct torch_trace_result {
    uint64_t elements;        /* elements of the event array read */
    uint64_t imported;        /* events stored */
    uint64_t markers;         /* ProfilerStep#N markers */
    uint64_t markers_matched; /* of them, with step N recorded in the run */
    uint64_t bad;             /* elements skipped as garbled or senseless */
    uint64_t ignored;         /* elements of kinds not imported */
    uint64_t outside_run;     /* imported events that start outside the run's time */
    int cut;                  /* the file ends inside an element */
    int kineto;               /* the object shape (else the legacy array) */
    enum torch_trace_align align;
    int64_t offset_ns;           /* added to trace times (ns), the median of the markers' */
    int marker_shift;            /* marker N is recorded step N + this (torch's schedule: 1) */
    int64_t pid;                 /* the run's process the trace was put on */
    uint32_t step_min, step_max; /* steps the imported events belong to */
};

/*
 * Import the trace file at path into run r of store s, in one
 * transaction; r->events grows by what was stored and the run's row is
 * updated. pid_hint: the pid of the process that wrote the trace when the
 * caller knows it (strobe run --torch-profile names its files so), else -1.
 * 0 with *res filled, or negative with a one-line reason in *err: the file
 * cannot be read, is no trace, holds no event to import, or the store
 * failed (then nothing was stored).
 */
int torch_trace_import(struct store *s, struct run_record *r, const char *path, int64_t pid_hint,
                       struct torch_trace_result *res, struct strbuf *err);

/* The one-line summary of an import (no newline). */
void torch_trace_summary(const struct torch_trace_result *res, const char *path,
                         const struct run_record *r, struct strbuf *out);

/* The warning an import deserves (skipped elements, a cut, no clock), or
 * nothing appended. No newline, no "strobe: warning:" prefix. */
void torch_trace_warning(const struct torch_trace_result *res, const char *path,
                         struct strbuf *out);

#endif
