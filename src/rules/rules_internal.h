/*
 * What the rule files (sagemaker.c, own.c) share beyond rules.h and stats.h:
 * nodes, scopes, and snapshot joins.
 */
#ifndef STROBE_RULES_INTERNAL_H
#define STROBE_RULES_INTERNAL_H

#include <stdint.h>

#include "rules/rules.h"
#include "rules/stats.h"

#define MAX_NODES 16
#define MAX_GPUS  64   /* GPU index per node */
#define MAX_CORES 1024 /* cores per node, as the host sampler (sample/host.c) */
/* a node's disk or network series: 2 for each of 64 devices, as the sampler */
#define MAX_DEV_SERIES 128
#define SNAPSHOT_NS    (20 * 1000000LL) /* SageMaker: samples closer than this are one snapshot */

struct node_set {
    char name[MAX_NODES][48];
    uint32_t n;
};

/* Index of node in the set, adding it; -1 when the set is full. */
int node_index(struct node_set *s, const char *node);
/* "node" for the local host, "node=NAME" for an imported node; with a GPU,
 * "gpu=G" or "node=NAME,gpu=G". */
void scope_name(char *out, size_t cap, const char *node, int64_t gpu);
/* The nodes with a cpu.util series in the window. */
void window_nodes(const struct rule_window *w, struct node_set *out);

/* The value of series s at time ts: its last point at or before ts +
 * SNAPSHOT_NS, scanning forward from *pos (kept between calls). */
int series_value_at(const struct rule_series *s, uint32_t *pos, int64_t ts, double *out);

/* A GPU's memory in use as a percentage, from gpu.mem_used_bytes over
 * gpu.mem_total_bytes when both are there, else gpu.mem_util (SageMaker's
 * GPUMemoryUtilization, imported). The total is remembered in *total. */
const struct rule_series *gpu_mem_series(const struct rule_window *w, const char *node, int64_t gpu,
                                         double *total, int *as_bytes);

extern const struct rule_def rule_cpu_bottleneck, rule_io_bottleneck, rule_low_gpu_utilization,
    rule_batch_size, rule_gpu_memory_increase, rule_load_balancing, rule_step_outlier,
    rule_max_initialization_time, rule_dataloader, rule_overall_system_usage,
    rule_overall_framework_metrics;
extern const struct rule_def rule_input_bound, rule_straggler, rule_communication_bound,
    rule_cpu_throttling, rule_memory_pressure, rule_gpu_throttling, rule_thread_oversubscription;

/* InputBound's default threshold, which BatchSize also respects. */
#define INPUT_BOUND_DEFAULT_PCT 30.0

#endif
