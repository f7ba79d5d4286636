/*
 * What the live metrics cost the recorder when nobody scrapes: the
 * snapshot it takes once a second (record/live_metrics.h), and the tap
 * every point passes through. The series table is shaped like section 19's
 * job: the host's series, 10 processes of 7 series each, 8 GPUs of 16
 * series and a process on each, plus two ranks' steps.
 *
 *   build/bench/snapshot_cost [--reps N]
 *
 * Prints one JSON object: series, samples and bytes of a snapshot, the
 * median CPU time of one snapshot (thread clock, N repetitions, 2000 by
 * default), the tap's cost per point against a table with no tap, and per
 * span the event sink hands over (steps and phases of 8 ranks, a thread's
 * spans in a row, as a drain gives them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/metrics.h"
#include "record/live_metrics.h"
#include "sample/series.h"

#define POINTS_PER_SERIES 1000

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void add(struct series_table *t, enum metric_id id, const char *labels)
{
    uint32_t i;
    if (series_get_metric(t, id, labels, &i) < 0) {
        fprintf(stderr, "snapshot_cost: out of memory\n");
        exit(1);
    }
}

/* The series of section 19's job (its run had 427 samples a page). */
static void shape(struct series_table *t)
{
    static const enum metric_id host[] = {METRIC_CPU_UTIL,
                                          METRIC_CPU_USER,
                                          METRIC_CPU_SYSTEM,
                                          METRIC_CPU_IOWAIT,
                                          METRIC_CPU_STEAL,
                                          METRIC_MEM_TOTAL_BYTES,
                                          METRIC_MEM_USED_BYTES,
                                          METRIC_MEM_AVAILABLE_BYTES,
                                          METRIC_MEM_SWAP_USED_BYTES,
                                          METRIC_MEM_SWAPIN_PER_S,
                                          METRIC_MEM_SWAPOUT_PER_S,
                                          METRIC_PSI_CPU_SOME,
                                          METRIC_PSI_MEM_SOME,
                                          METRIC_PSI_IO_SOME,
                                          METRIC_PROC_CPU,
                                          METRIC_PROC_RSS_BYTES,
                                          METRIC_PROC_THREADS,
                                          METRIC_PROC_COUNT,
                                          METRIC_PROC_READ_BYTES_PER_S,
                                          METRIC_PROC_WRITE_BYTES_PER_S,
                                          METRIC_STROBE_CPU};
    static const enum metric_id proc[] = {METRIC_PROC_CPU,
                                          METRIC_PROC_RSS_BYTES,
                                          METRIC_PROC_THREADS,
                                          METRIC_PROC_READ_BYTES_PER_S,
                                          METRIC_PROC_WRITE_BYTES_PER_S,
                                          METRIC_PROC_CTX_SWITCHES_PER_S,
                                          METRIC_PROC_RUNQ_DELAY};
    static const enum metric_id gpu[] = {METRIC_GPU_UTIL,
                                         METRIC_GPU_MEM_UTIL,
                                         METRIC_GPU_MEM_USED_BYTES,
                                         METRIC_GPU_MEM_TOTAL_BYTES,
                                         METRIC_GPU_POWER_W,
                                         METRIC_GPU_ENERGY_J,
                                         METRIC_GPU_TEMP_C,
                                         METRIC_GPU_SM_CLOCK_MHZ,
                                         METRIC_GPU_MEM_CLOCK_MHZ,
                                         METRIC_GPU_THROTTLE_REASONS,
                                         METRIC_GPU_PCIE_RX_BYTES_PER_S,
                                         METRIC_GPU_PCIE_TX_BYTES_PER_S,
                                         METRIC_GPU_ECC_CORRECTED,
                                         METRIC_GPU_ECC_UNCORRECTED,
                                         METRIC_GPU_NVLINK_RX_BYTES_PER_S,
                                         METRIC_GPU_NVLINK_TX_BYTES_PER_S};
    char labels[64];
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        add(t, host[i], "");
    for (int c = 0; c < 2; c++) {
        snprintf(labels, sizeof(labels), "core=%d", c);
        add(t, METRIC_CPU_UTIL, labels);
    }
    for (int p = 0; p < 10; p++)
        for (size_t i = 0; i < sizeof(proc) / sizeof(proc[0]); i++) {
            snprintf(labels, sizeof(labels), "pid=%d", 1000 + p);
            add(t, proc[i], labels);
        }
    for (int g = 0; g < 8; g++) {
        for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++) {
            snprintf(labels, sizeof(labels), "gpu=%d", g);
            add(t, gpu[i], labels);
        }
        snprintf(labels, sizeof(labels), "gpu=%d,pid=%d", g, 1001 + g);
        add(t, METRIC_GPU_PROC_MEM_BYTES, labels);
    }
}

/* Every series gets POINTS_PER_SERIES points, 100 ms apart; the CPU time
 * of it all, in ns per point. */
static double fill(struct series_table *t, int64_t t0)
{
    int64_t start = clock_thread_cpu_ns();
    for (int k = 0; k < POINTS_PER_SERIES; k++) {
        t->now_ns = t0 + (int64_t)k * 100 * NS_PER_MS;
        for (uint32_t i = 0; i < t->count; i++)
            series_put(t, i, (double)(k % 97) + i);
    }
    return (double)(clock_thread_cpu_ns() - start) / ((double)POINTS_PER_SERIES * t->count);
}

#define SPANS (1 << 20)

/* ns per span through the sink's tap: each rank's 4 phases and its step,
 * 1000 spans of one process at a time. */
static double spans(struct event_sink *sink)
{
    static const char *const names[] = {"data", "forward", "backward", "optimizer", "step"};
    for (int r = 0; r < 8; r++)
        sink->proc_tap(sink->tap_arg, 2000 + r, r, -1);
    int64_t start = clock_thread_cpu_ns();
    for (int i = 0; i < SPANS; i++) {
        int n = i % 5;
        int64_t t = (int64_t)i * 1000;
        sink->span_tap(sink->tap_arg, 2000 + (i / 1000) % 8, 2000, t, t + 900, (uint32_t)n + 1,
                       names[n]);
    }
    return (double)(clock_thread_cpu_ns() - start) / SPANS;
}

int main(int argc, char **argv)
{
    int reps = 2000;
    if (argc == 3 && strcmp(argv[1], "--reps") == 0)
        reps = atoi(argv[2]);
    if (reps < 1 || argc == 2 || argc > 3) {
        fprintf(stderr, "usage: snapshot_cost [--reps N]\n");
        return 2;
    }
    int64_t t0 = clock_realtime_ns();
    /* the tap's cost: the same points into a table with no tap, then one
     * the live metrics watch */
    struct series_table bare, t;
    series_table_init(&bare);
    series_table_init(&t);
    shape(&bare);
    shape(&t);
    bare.pending_cap = t.pending_cap = (size_t)1 << 40; /* nothing dropped */
    double bare_ns = fill(&bare, t0);
    struct event_sink sink;
    struct proc_tree tree;
    struct run_record run;
    memset(&sink, 0, sizeof(sink));
    memset(&tree, 0, sizeof(tree));
    run_record_init(&run);
    snprintf(run.id, sizeof(run.id), "0123456789abcdef");
    run.name = strdup("bench");
    struct live_metrics lm;
    live_metrics_init(&lm, 1);
    if (live_metrics_open(&lm, &t, &sink, &tree, &run, "node-1") < 0)
        return 1;
    double tapped_ns = fill(&t, t0);
    double span_ns = spans(&sink);
    int64_t now = t0 + (int64_t)POINTS_PER_SERIES * 100 * NS_PER_MS;
    int64_t *took = malloc(sizeof(*took) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        int64_t a = clock_thread_cpu_ns();
        live_metrics_snapshot(&lm, &run, t0, now);
        took[r] = clock_thread_cpu_ns() - a;
    }
    qsort(took, (size_t)reps, sizeof(*took), cmp_i64);
    size_t samples = 0;
    for (size_t i = 0; i < lm.snap.len; i++)
        samples += lm.snap.buf[i] == '\n' && i + 1 < lm.snap.len && lm.snap.buf[i + 1] == 'S';
    printf("{\"series\": %u, \"samples\": %zu, \"bytes\": %zu, \"snapshot_us_p50\": %.1f, "
           "\"snapshot_us_p90\": %.1f, \"point_ns_bare\": %.2f, \"point_ns_tapped\": %.2f, "
           "\"span_ns\": %.2f}\n",
           t.count, samples, lm.snap.len, (double)took[reps / 2] / 1e3,
           (double)took[reps * 9 / 10] / 1e3, bare_ns, tapped_ns, span_ns);
    free(took);
    live_metrics_close(&lm);
    run_record_release(&run);
    series_table_release(&t);
    series_table_release(&bare);
    return 0;
}
