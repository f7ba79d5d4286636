/*
 * What the rule files (sagemaker.c, own.c) share beyond rules.h and stats.h:
 * per-node state, scopes, and snapshot joins.
 */
#ifndef STROBE_RULES_INTERNAL_H
#define STROBE_RULES_INTERNAL_H

#include <stdint.h>

#include "rules/rules.h"
#include "rules/stats.h"

/* GPUs per node, by index: the engine keeps no GPU series outside
 * 0..RULES_MAX_GPU_INDEX (and warns of them), so arrays of MAX_GPUS hold
 * every GPU a rule is given. Nodes and ranks have no such limit. */
#define MAX_GPUS    (RULES_MAX_GPU_INDEX + 1)
#define SNAPSHOT_NS (20 * 1000000LL) /* SageMaker: samples closer than this are one snapshot */

/* Per-node state of a rule: *arr holds *n elements of elem bytes, by node
 * id (rule_series.node_id, rule_step.node_id); make it hold want of them,
 * the new ones zeroed. Call it with w->node_count before indexing by the
 * window's node ids; pointers into *arr last until the next call. 0, or
 * -ENOMEM with *arr unchanged. */
int node_states_fit(void **arr, uint32_t *n, uint32_t want, size_t elem);

/* "node" for the local host, "node=NAME" for an imported node; with a GPU,
 * "gpu=G" or "node=NAME,gpu=G". */
void scope_name(char *out, size_t cap, const char *node, int64_t gpu);

/* The first series of metric m (and index, -1 any) of node node_id. */
const struct rule_series *window_series_on(const struct rule_window *w, enum rule_metric m,
                                           int64_t index, uint32_t node_id);
/* The series of metric m of node node_id that is the whole host's (no core,
 * GPU or pid label): an import keeps the cores' cpu.iowait beside their
 * mean, and index -1 above would take whichever the store lists first. */
const struct rule_series *window_host_series(const struct rule_window *w, enum rule_metric m,
                                             uint32_t node_id);

/* The value of series s at time ts: its last point at or before ts +
 * SNAPSHOT_NS, scanning forward from *pos (kept between calls). */
int series_value_at(const struct rule_series *s, uint32_t *pos, int64_t ts, double *out);

/* A GPU's memory in use as a percentage, from gpu.mem_used_bytes over
 * gpu.mem_total_bytes when both are there, else gpu.mem_util (SageMaker's
 * GPUMemoryUtilization, imported). The total is remembered in *total. */
const struct rule_series *gpu_mem_series(const struct rule_window *w, uint32_t node_id, int64_t gpu,
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
