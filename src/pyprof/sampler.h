/*
 * The recorder's Python stack sampler (strobe run --py-sample RATE,
 * --py-profile A-B, strobe ctl stacks | py-profile N | py-sample RATE).
 *
 * It runs in the recorder's loop, on a timer of its own: at each tick it
 * reads the stacks of every Python process of the job's tree through
 * pyprof/reader.h and adds them to a py_profile, which the writer stores
 * once a second. A process that cannot be read is one note (kept with the
 * run, and one line on stderr), and is not tried again.
 */
#ifndef STROBE_PYPROF_SAMPLER_H
#define STROBE_PYPROF_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"
#include "pyprof/profile.h"

#define PY_WINDOW_HZ   100.0  /* --py-profile and ctl py-profile sample at least this often */
#define PY_RATE_MAX_HZ 1000.0 /* --py-sample's highest rate */

struct py_sampler_opts {
    double rate_hz;        /* --py-sample: 0 off (windows only) */
    uint32_t window_first; /* --py-profile A-B: 0 none */
    uint32_t window_last;
    size_t mem_cap; /* bytes the profile may hold before samples are dropped */
};

struct py_sampler;

/* A rate as --py-sample and ctl py-sample take it: Hz ("100", "100hz"), a
 * period ("10ms"), or "off" (0). 0, or -EINVAL for anything else or a rate
 * above PY_RATE_MAX_HZ or below 1 Hz. */
int py_rate_parse(const char *text, double *hz);

/* NULL opts rate 0 and no window: the sampler still answers ctl. */
int py_sampler_new(const struct py_sampler_opts *o, struct py_sampler **out);
void py_sampler_free(struct py_sampler *s);
/* A timerfd the loop polls; when readable, call py_sampler_tick. -1 never. */
int py_sampler_fd(const struct py_sampler *s);
void py_sampler_tick(struct py_sampler *s);
/* The job's tree, once a frame: py_sampler_track each of its processes,
 * then py_sampler_prune forgets those not tracked since the last prune. A
 * process whose comm changed (an exec) is looked at again. */
void py_sampler_track(struct py_sampler *s, pid_t pid, pid_t ppid, const char *comm);
void py_sampler_prune(struct py_sampler *s);
/* The latest step the job's events have begun: windows open and close on it. */
void py_sampler_step(struct py_sampler *s, uint32_t step);

/* ctl: sample at rate_hz from now on (0: off outside windows). */
int py_sampler_set_rate(struct py_sampler *s, double rate_hz);
/* ctl py-profile N: a window over the next n steps; the first in *first. */
int py_sampler_window(struct py_sampler *s, uint32_t n, uint32_t *first);
/* ctl stacks: every thread's Python stack now, innermost last, with lines,
 * as text for a person (pid, role-free: the caller adds what it knows). */
int py_sampler_stacks(struct py_sampler *s, struct strbuf *out);

/* For the writer: the blocks due (py_profile_take); notes so far, one a line. */
int py_sampler_take(struct py_sampler *s, struct py_block_out out[2], int *n);
const char *py_sampler_notes(struct py_sampler *s);
/* Counters for the run: samples taken, dropped (the memory cap), and
 * stacks skipped because they changed while read (torn). */
uint64_t py_sampler_samples(const struct py_sampler *s);
uint64_t py_sampler_dropped(const struct py_sampler *s);
uint64_t py_sampler_torn(const struct py_sampler *s);

#endif
