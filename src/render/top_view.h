/*
 * strobe top's view: the running runs of a store, each read from the
 * snapshot its recorder stores once a second (serve/expo.h), as a table,
 * one run's detail, or JSON. Terminal handling is cmd_top.c's; this file
 * only turns snapshots into numbers and numbers into text, so tests feed
 * it snapshots written by hand.
 *
 * Numbers absent from a snapshot (a run without GPUs or steps) are NaN:
 * shown as "-" in text and null in JSON.
 */
#ifndef STROBE_RENDER_TOP_VIEW_H
#define STROBE_RENDER_TOP_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

/* Bounds on what one snapshot may add: a hostile or huge snapshot costs
 * no more memory than this; what is past them is dropped and counted. */
#define TOP_MAX_PROCS    1024
#define TOP_MAX_GPUS     256
#define TOP_MAX_RANKS    4096
#define TOP_MAX_FINDINGS 1024

struct top_proc {
    long long pid;
    char *comm, *role, *rank; /* labels as stored; NULL when absent */
    double cpu_ratio;         /* 1.0: one core busy */
    double rss_bytes;
    double threads;
};

struct top_gpu {
    char *gpu; /* the gpu label */
    double util_ratio, mem_used_bytes, mem_total_bytes, power_watts, temp_celsius;
};

struct top_rank {
    char *rank;                 /* the rank label; "" when none */
    double p50_s, p90_s, p99_s; /* over the last 256 steps */
    double steps, steps_per_s;  /* steps over the run; per second over 10 s */
};

struct top_finding {
    char *rule, *severity, *scope;
    double last_s;  /* end of the last window it fired in, unix seconds */
    double windows; /* windows it fired in */
};

/* One running run. Strings and arrays are owned: top_run_release(). */
struct top_run {
    char *id, *name, *node;
    int64_t start_ns;    /* 0: unknown */
    int64_t snapshot_ns; /* when its snapshot was taken; 0: it has none */
    int stale;           /* snapshot older than EXPO_STALE_NS (serve.h) (numbers NaN) */
    int garbled;         /* its stored snapshot could not be read */
    /* the row */
    struct top_proc tree;           /* the whole tree's cpu_ratio, rss_bytes, threads */
    double gpu_util_ratio;          /* mean over its GPUs */
    double gpu_mem_bytes;           /* used, summed over its GPUs */
    double step_p50_s;              /* the slowest rank's median step */
    double steps_per_s;             /* the slowest rank's rate */
    const struct top_finding *last; /* the finding that fired last; NULL */
    /* the detail */
    struct top_proc *procs;
    struct top_gpu *gpus;
    struct top_rank *ranks;
    struct top_finding *findings;
    uint32_t nprocs, ngpus, nranks, nfindings;
    uint32_t cap_procs, cap_gpus, cap_ranks, cap_findings;
    uint32_t dropped; /* series past the bounds above */
};

/* A run with no numbers yet: id, name, node copied (NULL: ""). 0 or
 * -ENOMEM (then release it still). */
int top_run_init(struct top_run *t, const char *id, const char *name, const char *node,
                 int64_t start_ns);
void top_run_release(struct top_run *t);

/* Read the snapshot text (len bytes) into t, judged stale against now_ns.
 * A garbled snapshot leaves the numbers NaN and sets t->garbled. 0, or
 * -ENOMEM. */
int top_run_load(struct top_run *t, const char *text, size_t len, int64_t now_ns);

/* What the table is sorted by: each with its key in the live view. */
enum top_sort {
    TOP_SORT_NAME,    /* n: ascending */
    TOP_SORT_CPU,     /* c: the rest descending */
    TOP_SORT_MEM,     /* m */
    TOP_SORT_GPU,     /* g */
    TOP_SORT_STEP,    /* s */
    TOP_SORT_RATE,    /* r */
    TOP_SORT_ELAPSED, /* e */
    TOP_SORT_COUNT
};
/* The sort a key picks, or -1. */
int top_sort_of_key(int key);
/* The column's header, as the table shows it. */
const char *top_sort_name(enum top_sort s);
/* Sort runs by s; ties by name, then id, so the order is stable. */
void top_sort_runs(struct top_run *runs, size_t n, enum top_sort s);

/* How the text is laid out. */
struct top_layout {
    int width;      /* columns to fit in; 0: no limit (plain text) */
    int ansi;       /* SGR escapes: the header bold, the selected row inverse */
    int selected;   /* the selected row, or -1 */
    int64_t now_ns; /* for elapsed */
    enum top_sort sort;
};

/* The table: a header line, then a row per run, each line ending "\n".
 * Every stored string goes through strbuf_add_visible, and is cut to its
 * column by display width, so a name cannot move the cursor or the
 * columns. */
void top_table_text(struct strbuf *out, const struct top_run *runs, size_t n,
                    const struct top_layout *l);
/* One run's detail: its processes, GPUs, ranks and findings. */
void top_detail_text(struct strbuf *out, const struct top_run *t, const struct top_layout *l);
/* The runs as JSON (docs/cli.md, strobe top --json). */
void top_json(struct strbuf *out, const struct top_run *runs, size_t n, int64_t now_ns);

/* Append s made visible, cut or padded to exactly cols display columns
 * (cols < 0: neither). Returns the columns written. */
int top_add_cell(struct strbuf *out, const char *s, int cols);

#endif
