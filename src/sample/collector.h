/*
 * Collectors: one static table of {name, init, sample, fini}, after netdata's
 * proc_modules[]. A new collector is one file and one row in collectors.c.
 *
 * init() opens what the collector will read each sample (fds are kept) and
 * looks up its series; it returns 0, or -ENOENT/-EACCES when the source is
 * not there, which turns the collector off with one note. sample() reads and
 * appends to the series table; it must not block and, once warm, must not
 * allocate (new devices or processes are the exception: their series are new).
 */
#ifndef STROBE_SAMPLE_COLLECTOR_H
#define STROBE_SAMPLE_COLLECTOR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/series.h"

struct proc_tree;

struct sample_env {
    int proc_fd;           /* directory fd of the proc root ("/proc") */
    int sys_fd;            /* directory fd of the sys root ("/sys") */
    const char *proc_root; /* its path, for messages */
    const char *sys_root;
    long ticks_per_s;       /* USER_HZ */
    long page_bytes;        /* page size */
    pid_t self_pid;         /* the recorder: its children include re-parented orphans */
    pid_t self_tid;         /* the recorder's thread that forks the job */
    struct proc_tree *tree; /* the job's process tree (sample/proctree.h) */
};

struct sample_ctx {
    struct series_table *series; /* where values go, at series->now_ns */
    const struct sample_env *env;
    int64_t mono_ns; /* the frame's scheduled time (CLOCK_MONOTONIC): rates are for it */
    /* when this collector began to read (CLOCK_MONOTONIC), set for each one
     * by sampler_sample() when measure_reads, else mono_ns (fixtures) */
    int64_t read_ns;
    int measure_reads;
};

struct collector_ops {
    const char *name;
    size_t state_size;
    int (*init)(void *state, const struct sample_env *env, struct series_table *series);
    int (*sample)(void *state, struct sample_ctx *ctx);
    void (*fini)(void *state);
};

extern const struct collector_ops *const collector_table[];

/* The set of collectors for one recorder. */
struct sampler {
    struct sampler_slot {
        const struct collector_ops *ops;
        void *state;
        int enabled;
        uint64_t errors; /* failed sample() calls */
    } * slots;
    size_t count;
};

struct strbuf;
/* Whether every name of the comma list only is a collector: 0, or -EINVAL
 * with "'x' is not a collector (known: cpu, mem, ...)" in *why. */
int sampler_check_names(const char *only, struct strbuf *why);

/* Initialise every collector; those that cannot start are noted and skipped.
 * only (comma list of names) or NULL for all. */
int sampler_init(struct sampler *s, const struct sample_env *env, struct series_table *series,
                 const char *only);
/* One frame: every enabled collector samples into the table at its now_ns
 * (with ctx->read_ns its own read's time when ctx->measure_reads). */
void sampler_sample(struct sampler *s, struct sample_ctx *ctx);
void sampler_release(struct sampler *s);

/*
 * Rates at the frames' scheduled times. A frame is stamped with its deadline
 * (the timestamps sit on a grid and cost a bit each), but its files are read
 * a little later: within ~0.1 ms nearly always, tens of ms when the job keeps
 * every core busy and the recorder wakes late or is preempted in the frame.
 * The change between two reads divided by the scheduled interval then put a
 * single busy thread at 146 % and psi.cpu_some at 453 %, and the next point
 * as much too low. So each counter's value at the deadline is interpolated
 * between its two reads around it (to a whole count), and the rate is the
 * change of those values over the scheduled interval: every point stays
 * within what the counter can do over its window, a read on time gives the
 * plain change, and the rate integrated over the timestamps telescopes to
 * the counter's change between the first and last deadlines.
 */
struct read_time {
    int64_t due_ns;  /* the frame's deadline (sample_ctx.mono_ns) */
    int64_t read_ns; /* when the read began (sample_ctx.read_ns) */
};

struct rate_counter {
    uint64_t raw;    /* the last reading */
    uint64_t at_due; /* its value interpolated at that frame's deadline */
};

static inline void read_time_set(struct read_time *t, const struct sample_ctx *ctx)
{
    t->due_ns = ctx->mono_ns;
    t->read_ns = ctx->read_ns;
}

/* A counter's first reading: the base of its first rate. */
static inline void rate_counter_start(struct rate_counter *c, uint64_t now)
{
    c->raw = c->at_due = now;
}

/* The counter's value at this frame's deadline: between its previous
 * reading (at prev->read_ns) and this one (now, at ctx->read_ns). */
static inline uint64_t counter_at_due(const struct sample_ctx *ctx, const struct read_time *prev,
                                      uint64_t before, uint64_t now)
{
    int64_t span = ctx->read_ns - prev->read_ns, part = ctx->mono_ns - prev->read_ns;
    if (now <= before || span <= 0 || part >= span)
        return now;
    if (part <= 0)
        return before;
    return before + (uint64_t)llround((double)(now - before) * (double)part / (double)span);
}

/* A share of time in percent, to 1/64 %. The digits past that of a ratio of
 * counts (ticks over ticks, stall µs over the interval) are noise no reader
 * sees, and noise does not compress: at full precision such a series cost
 * 6-8 bytes a point, nearly half the demo's store. Binary steps keep each
 * stored value exact. */
static inline double pct_step(double pct)
{
    return nearbyint(pct * 64.0) / 64.0;
}

/* Turn a counter delta into a per-second rate; 0 when the counter went back
 * (a device reset or a wrapped counter reads as no activity, not a spike).
 * Computed as delta * 1e9 / dt_ns, which is exact whenever the rate is a
 * whole number (a delta over 100 ms): such values compress to a few bits. */
static inline double rate_per_s(uint64_t now, uint64_t before, int64_t dt_ns)
{
    if (now < before || dt_ns <= 0)
        return 0.0;
    return (double)(now - before) * 1e9 / (double)dt_ns;
}

/* The counter's rate over the scheduled interval since prev (the same
 * collector's previous read), from its reading now; c moves on to it. */
static inline double counter_rate(const struct sample_ctx *ctx, const struct read_time *prev,
                                  struct rate_counter *c, uint64_t now)
{
    uint64_t at = now < c->raw ? now : counter_at_due(ctx, prev, c->raw, now); /* went back */
    double rate = rate_per_s(at, c->at_due, ctx->mono_ns - prev->due_ns);
    c->raw = now;
    c->at_due = at;
    return rate;
}

#endif
