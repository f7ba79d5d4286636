/*
 * A run's nodes as its series show them, and heatmaps of a metric per node.
 *
 * A run of several nodes (a job read through store/job.h's view, or an
 * import of several SageMaker nodes) has node=NAME among each series'
 * labels; a run of one node has none. A node's own reading of a metric is
 * its series whose labels, node=NAME aside, are none (cpu.util, not
 * cpu.util{core=3}), or for a metric of GPUs one whole GPU's (gpu=N, not
 * gpu=N,pid=P): the node's row then averages its GPUs.
 *
 * The heatmap: a row per node, a column per time bucket, each cell the
 * mean of the node's samples in the bucket (every one of its GPUs' for
 * gpu.util), as SageMaker Studio's profiler report draws utilization per
 * node. The dashboard's (serve) and the report's (render) are filled from
 * their own buckets; the rows, their order and the JSON are this file's.
 */
#ifndef STROBE_ANALYZE_NODES_H
#define STROBE_ANALYZE_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "common/metrics.h"

/* Whether the series (name, labels) is a node's own reading of metric m
 * (above). When node is not NULL it gets the node's name as written in the
 * labels (escaped, *node_len bytes; "" for a series without one). */
int node_series(const char *name, const char *labels, enum metric_id m, const char **node,
                size_t *node_len);

struct node_heat {
    enum metric_id metric;
    int64_t from_ns, bucket_ns; /* column i starts at from_ns + i * bucket_ns */
    uint32_t ncols;
    uint32_t nrows, cap;
    char **keys;       /* each row's node as written in labels (escaped) */
    char **names;      /* ... and as shown (unescaped) */
    uint32_t *nseries; /* the series that fill each row (a node's GPUs) */
    double *sum;       /* nrows x ncols: the samples' sum, NaN ones left out */
    int64_t *count;    /* ... and how many */
};

/* An empty heatmap of m on ncols buckets (1 or more). 0 or -ENOMEM. */
int node_heat_init(struct node_heat *h, enum metric_id m, int64_t from_ns, int64_t bucket_ns,
                   uint32_t ncols);
void node_heat_release(struct node_heat *h);

/* The row of a node (its name as written in labels, len bytes), made on
 * first sight with *unnamed shown for "" (a run of one node: its host).
 * One more series counts in the row. The index, or -ENOMEM. */
int node_heat_row(struct node_heat *h, const char *key, size_t len, const char *unnamed);

/* Samples of a row in a column: their sum (NaN ones left out) and count. */
static inline void node_heat_add(struct node_heat *h, uint32_t row, uint32_t col, double sum,
                                 int64_t count)
{
    if (count <= 0 || col >= h->ncols || !(sum == sum))
        return;
    h->sum[(size_t)row * h->ncols + col] += sum;
    h->count[(size_t)row * h->ncols + col] += count;
}

/* Rows in the natural order of their names ("n2" before "n10"). */
void node_heat_sort(struct node_heat *h);

/* The row of the node shown as name, or -1; the mean of a row over every
 * column (NaN without a sample). */
int node_heat_find(const struct node_heat *h, const char *name);
double node_heat_row_mean(const struct node_heat *h, uint32_t row);

/* Each series' samples (their sum and count: a whole series, or a
 * bucket's) into a one-column heatmap of m: per-node means (strobe show,
 * from its statistics). Series that are no node's reading of m are left
 * out. 0 or -ENOMEM. */
int node_heat_add_series(struct node_heat *h, const char *name, const char *labels, double sum,
                         int64_t count, const char *unnamed);

struct json_writer;
struct run_list;
/* A job's nodes (store/job.h), as show --json, the API and the report give
 * them: "join_key" and "nodes", each node's run, host, status, exit code,
 * start, duration, samples, clock, and its cpu_util_pct and gpu_util_pct,
 * the row means of cpu and gpu (NULL, or no row: null). */
void job_nodes_json(struct json_writer *jw, const char *join_key, const struct run_list *nodes,
                    const struct node_heat *cpu, const struct node_heat *gpu);

/* The heatmap as JSON members (no braces): metric, unit, from_ns,
 * bucket_ns, the nodes' names, the series per row, each node's mean over
 * the whole range ("node_mean", 4 significant digits), and "mean", an
 * array per node of the mean per column (null where the node has no
 * sample), to that many decimals, 0 to 2, trailing zeros left out (-1: 4
 * significant digits). */
void node_heat_json(struct json_writer *jw, const struct node_heat *h, int decimals);

#endif
