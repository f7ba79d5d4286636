/*
 * The rule engine beyond what the rule cases (test_rule_cases.c) describe:
 * how parameters are checked when they are set.
 */
#include <string.h>

#include "common/strbuf.h"
#include "rules/rules.h"
#include "test.h"

#define START_NS 1700000000000000000LL

/* An engine for rules with one parameter p; 0 when it was accepted. */
static int engine_with(const char *rules, const char *p, struct rules_engine **out,
                       struct strbuf *err)
{
    const char *params[] = {p, NULL};
    struct rules_options ro = {0, rules, params};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", 0};
    return rules_engine_new(&ro, &info, out, err);
}

static void refused(const char *rules, const char *p, const char *why)
{
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (engine_with(rules, p, &e, &err) == 0)
        TEST_FAIL("'%s' was accepted", p);
    if (!err.buf || !strstr(err.buf, why))
        TEST_FAIL("'%s': the error '%s' does not say '%s'", p, err.buf ? err.buf : "", why);
    ASSERT(!e);
    strbuf_release(&err);
}

static double accepted(const char *rules, const char *p)
{
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (engine_with(rules, p, &e, &err) < 0 || !e)
        TEST_FAIL("'%s' was refused: %s", p, err.buf ? err.buf : "");
    const struct rule_def *d = rules_def_at(e, 0);
    const char *name = strchr(p, '.') + 1;
    double v = -1;
    for (uint32_t i = 0; i < d->nparams; i++)
        if (strncmp(d->params[i].name, name, strcspn(name, "=")) == 0 &&
            d->params[i].name[strcspn(name, "=")] == 0)
            v = rules_param_values(e, 0)[i];
    rules_engine_free(e);
    strbuf_release(&err);
    return v;
}

/* Counts and windows are cast to integers: 1e30 snapshots of patience
 * became none at all (the rule judged from the first value), 1e20 allowed
 * outliers none, and a window of 3e9 values wrapped when doubled. */
TEST(counts_past_their_integer_are_refused)
{
    refused("LowGPUUtilization", "LowGPUUtilization.patience=1e30", "whole number from 0 to");
    refused("StepOutlier", "StepOutlier.n_outliers=1e20", "whole number from 0 to");
    refused("GPUMemoryIncrease", "GPUMemoryIncrease.window=3e9", "whole number from 1 to");
    refused("LowGPUUtilization", "LowGPUUtilization.window=1e12", "whole number from 1 to");
    refused("GPUThrottling", "GPUThrottling.min_samples=5e19", "whole number");
}

TEST(counts_are_whole_numbers_and_windows_hold_one)
{
    refused("StepOutlier", "StepOutlier.n_outliers=2.5", "whole number");
    refused("LowGPUUtilization", "LowGPUUtilization.window=0", "from 1 to 1048576");
    refused("Straggler", "Straggler.windows=0", "from 1 to");
    ASSERT(accepted("LowGPUUtilization", "LowGPUUtilization.window=1") == 1);
    ASSERT(accepted("LowGPUUtilization", "LowGPUUtilization.window=1048576") == 1048576);
    ASSERT(accepted("CPUBottleneck", "CPUBottleneck.patience=0") == 0);
    ASSERT(accepted("StepOutlier", "StepOutlier.n_outliers=4294967295") == 4294967295.0);
}

TEST(percentages_and_fractions_stay_in_range)
{
    refused("CPUBottleneck", "CPUBottleneck.threshold=500", "percentage from 0 to 100");
    refused("InputBound", "InputBound.threshold=100.5", "percentage");
    refused("LoadBalancing", "LoadBalancing.threshold=7", "from 0 to 1");
    refused("MemoryPressure", "MemoryPressure.r2=1.1", "from 0 to 1");
    ASSERT(accepted("CPUBottleneck", "CPUBottleneck.threshold=100") == 100);
    ASSERT(accepted("LoadBalancing", "LoadBalancing.threshold=0.25") == 0.25);
    /* shares of cores and of other ranks' work go past 100 */
    ASSERT(accepted("Dataloader", "Dataloader.max_threshold=400") == 400);
    ASSERT(accepted("Straggler", "Straggler.threshold=150") == 150);
}

TEST(numbers_are_finite_and_bounded)
{
    /* trend_s * 1e9 is cast to int64 nanoseconds */
    refused("MemoryPressure", "MemoryPressure.trend_s=1e12", "from 0 to 1e9");
    refused("StepOutlier", "StepOutlier.stddev=-1", "from 0 to 1e9");
    refused("StepOutlier", "StepOutlier.stddev=inf", "from 0 to 1e9");
    refused("StepOutlier", "StepOutlier.stddev=nan", "from 0 to 1e9");
    refused("StepOutlier", "StepOutlier.stddev=3x", "from 0 to 1e9");
    ASSERT(accepted("StepOutlier", "StepOutlier.stddev=5") == 5);
}

/* ---- live and offline: the same findings ---------------------------------- */

#define MS 1000000LL

struct run_counts {
    uint64_t datapoints, violations;
    char detail[256];
};

/* A host saturating core 0 while a GPU idles at 5 %, sampled every 100 ms
 * for 40 s, the GPU's first sample at 10.5 s (its thread came up late). live:
 * the recorder's order, every point in as it is taken and a tick each frame
 * (windows close 2 s after their end); else the offline replay's, the points
 * before a window's end and then the window closes. */
static struct run_counts bottleneck_run(int live)
{
    const char *params[] = {"CPUBottleneck.patience=50", NULL};
    struct rules_options ro = {0, "CPUBottleneck", params};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    int cpu = rules_series(e, "cpu.util", ""), core = rules_series(e, "cpu.util", "core=0");
    int gpu = rules_series(e, "gpu.util", "gpu=0");
    int64_t end = START_NS + 40000 * MS, next_close = START_NS + RULES_DEFAULT_INTERVAL_NS;
    for (int64_t ts = START_NS; ts < end; ts += 100 * MS) {
        if (!live && ts >= next_close) {
            rules_close_until(e, next_close);
            next_close += RULES_DEFAULT_INTERVAL_NS;
        }
        rules_put(e, cpu, ts, 30);
        rules_put(e, core, ts, 95);
        if (ts >= START_NS + 10500 * MS)
            rules_put(e, gpu, ts, 5);
        if (live)
            rules_tick(e, ts);
    }
    rules_finish(e, end - 100 * MS);
    const struct rule_result *r = rules_result_at(e, 0);
    struct run_counts out = {r->datapoints, r->violations, ""};
    snprintf(out.detail, sizeof(out.detail), "%s", r->detail);
    rules_engine_free(e);
    strbuf_release(&err);
    return out;
}

/* Live, the GPU's first points came in within the grace before the first
 * window closed: the engine took the run as having a GPU from then, counted
 * that window's 100 snapshots into the patience, and judged 295 snapshots
 * against the replay's 250. */
TEST(a_gpu_that_comes_late_counts_alike_live_and_offline)
{
    struct run_counts live = bottleneck_run(1), offline = bottleneck_run(0);
    if (live.datapoints != offline.datapoints || live.violations != offline.violations)
        TEST_FAIL("live %llu/%llu (%s), offline %llu/%llu (%s)",
                  (unsigned long long)live.violations, (unsigned long long)live.datapoints,
                  live.detail, (unsigned long long)offline.violations,
                  (unsigned long long)offline.datapoints, offline.detail);
    /* the GPU from 10.5 s: the 300 snapshots of 10.0-39.9 s are counted, the
     * first 50 (10.0-14.9 s) as patience: 250 judged, every one a bottleneck */
    ASSERT_EQ_U64(offline.datapoints, 250);
    ASSERT_EQ_U64(offline.violations, 250);
}

/* CPUBottleneck looked at the first 256 cores only: on a 384-core host a
 * saturated core 300 was never seen. */
TEST(a_busy_core_past_the_256th_counts)
{
    const char *params[] = {"CPUBottleneck.patience=0", NULL};
    struct rules_options ro = {0, "CPUBottleneck", params};
    struct rules_run_info info = {START_NS, 384, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    int cpu = rules_series(e, "cpu.util", ""), gpu = rules_series(e, "gpu.util", "gpu=0");
    int core[384];
    for (int i = 0; i < 384; i++) {
        char labels[32];
        snprintf(labels, sizeof(labels), "core=%d", i);
        core[i] = rules_series(e, "cpu.util", labels);
    }
    for (int64_t ts = START_NS; ts < START_NS + 10000 * MS; ts += 100 * MS) {
        rules_put(e, cpu, ts, 5);
        rules_put(e, gpu, ts, 2);
        for (int i = 0; i < 384; i++)
            rules_put(e, core[i], ts, i == 300 ? 99 : 1);
    }
    rules_finish(e, START_NS + 9900 * MS);
    const struct rule_result *r = rules_result_at(e, 0);
    ASSERT_EQ_U64(r->datapoints, 100);
    ASSERT_EQ_U64(r->violations, 100);
    ASSERT_EQ_STR(rule_status_names[r->status], "fired");
    rules_engine_free(e);
    strbuf_release(&err);
}

/* OverallSystemUsage summed the first 32 network series only (16
 * interfaces, receive and send): a host with a veth per container had its
 * network traffic undercounted. */
TEST(network_usage_sums_every_interface)
{
    struct rules_options ro = {0, "OverallSystemUsage", NULL};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    int cpu = rules_series(e, "cpu.util", ""), net[40];
    for (int i = 0; i < 20; i++) {
        char labels[32];
        snprintf(labels, sizeof(labels), "iface=veth%d", i);
        net[2 * i] = rules_series(e, "net.rx_bytes_per_s", labels);
        net[2 * i + 1] = rules_series(e, "net.tx_bytes_per_s", labels);
    }
    for (int64_t ts = START_NS; ts < START_NS + 5000 * MS; ts += 100 * MS) {
        rules_put(e, cpu, ts, 5);
        for (int i = 0; i < 40; i++)
            rules_put(e, net[i], ts, 1000);
    }
    rules_finish(e, START_NS + 4900 * MS);
    const char *rep = rules_result_at(e, 0)->report;
    ASSERT(rep);
    const char *p = strstr(rep, "\"network_bytes_per_s\"");
    ASSERT(p);
    const char *max = strstr(p, "\"max\":");
    ASSERT(max);
    double v = strtod(max + 6, NULL); /* 40 series of 1000 B/s */
    if (fabs(v - 40000) > 200)
        TEST_FAIL("network max %g, want 40000: %s", v, p);
    rules_engine_free(e);
    strbuf_release(&err);
}

/* The verdicts at the end of `seconds` of a run without a step, recorded
 * to its end or still recording. */
static const char *no_step_verdict(const char *rule, const char *param, int running, double seconds,
                                   uint32_t *nfindings)
{
    static char out[300];
    const char *params[] = {param, NULL};
    struct rules_options ro = {0, rule, params};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", running};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    int cpu = rules_series(e, "cpu.util", "");
    int64_t end = START_NS + (int64_t)(seconds * 1e9);
    for (int64_t ts = START_NS; ts <= end; ts += 100 * MS)
        rules_put(e, cpu, ts, 5);
    rules_finish(e, end);
    const struct rule_result *r = rules_result_at(e, 0);
    snprintf(out, sizeof(out), "%s: %s", rule_status_names[r->status], r->detail);
    rules_findings(e, nfindings);
    rules_engine_free(e);
    strbuf_release(&err);
    return out;
}

/* strobe rules over a run still recording took where its data ends for the
 * end of the run: MaxInitializationTime fired "no step has begun" past its
 * limit where the recorder waits for twice the limit (a first step may still
 * be running), and the whole-run rules said n/a for what may yet come. */
TEST(a_run_still_recording_is_not_over)
{
    const char *limit3s = "MaxInitializationTime.threshold=0.05";
    uint32_t n;
    const char *v = no_step_verdict("MaxInitializationTime", limit3s, 1, 4.9, &n);
    if (n || strncmp(v, "waiting: no step yet, 5 s after the start", 41) != 0)
        TEST_FAIL("still recording at 4.9 s, a limit of 3 s: %s, %u finding(s)", v, n);
    v = no_step_verdict("MaxInitializationTime", limit3s, 0, 4.9, &n);
    if (n != 1 || strncmp(v, "fired", 5) != 0)
        TEST_FAIL("recorded to its end at 4.9 s: %s, %u finding(s)", v, n);
    v = no_step_verdict("MaxInitializationTime", limit3s, 1, 6.5, &n);
    if (n != 1 || strncmp(v, "fired", 5) != 0)
        TEST_FAIL("still recording past twice the limit: %s, %u finding(s)", v, n);
    v = no_step_verdict("StepOutlier", "StepOutlier.stddev=3", 1, 4.9, &n);
    ASSERT_EQ_STR(v, "waiting: no steps recorded yet: the run is still recording");
    v = no_step_verdict("StepOutlier", "StepOutlier.stddev=3", 0, 4.9, &n);
    ASSERT_EQ_STR(v, "n/a: no steps recorded");
}

/* Ten steps of 100 ms, each with two bucket all-reduces in flight together
 * on another thread (10-50 and 20-60 ms into the step): collectives take 50
 * % of the step, not the 80 % their sum says. */
TEST(overlapping_collectives_count_once)
{
    const char *params[] = {"CommunicationBound.threshold=60", NULL};
    struct rules_options ro = {0, "CommunicationBound", params};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    for (int i = 0; i < 10; i++) {
        int64_t s = START_NS + i * 100 * MS;
        rules_put_span(e, 1000, 1001, s + 10 * MS, s + 50 * MS, 0, "comm:allreduce");
        rules_put_span(e, 1000, 1001, s + 20 * MS, s + 60 * MS, 0, "comm:allreduce");
        rules_put_span(e, 1000, 1000, s, s + 100 * MS, 0, "step");
    }
    rules_finish(e, START_NS + 1000 * MS);
    const struct rule_result *r = rules_result_at(e, 0);
    uint32_t n;
    rules_findings(e, &n);
    if (n || strcmp(r->detail, "communication at least 50 % of step time") != 0)
        TEST_FAIL("%s: %s, %u finding(s)", rule_status_names[r->status], r->detail, n);
    rules_engine_free(e);
    strbuf_release(&err);
}

TEST_MAIN(a_gpu_that_comes_late_counts_alike_live_and_offline, overlapping_collectives_count_once,
          a_run_still_recording_is_not_over, network_usage_sums_every_interface,
          a_busy_core_past_the_256th_counts, counts_past_their_integer_are_refused,
          counts_are_whole_numbers_and_windows_hold_one, percentages_and_fractions_stay_in_range,
          numbers_are_finite_and_bounded)
