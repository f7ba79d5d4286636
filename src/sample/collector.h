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
    int64_t mono_ns; /* the frame's scheduled time (CLOCK_MONOTONIC): the base of rates */
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
/* One frame: every enabled collector samples into the table at its now_ns. */
void sampler_sample(struct sampler *s, struct sample_ctx *ctx);
void sampler_release(struct sampler *s);

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

#endif
