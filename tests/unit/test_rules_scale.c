/*
 * The rule engine at the sizes of big jobs: every node and every rank is
 * judged, however many there are (the rules judged the first 16 nodes and
 * 64 ranks and dropped the rest in silence), and what cannot be judged is
 * said in a warning.
 */
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "rules/rules.h"
#include "test.h"

#define START_NS 1700000000000000000LL
#define MS       1000000LL

static struct rules_engine *engine(const char *rules, const char *p1, const char *p2)
{
    const char *params[] = {p1, p2, NULL};
    struct rules_options ro = {0, rules, params};
    struct rules_run_info info = {START_NS, 4, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (rules_engine_new(&ro, &info, &e, &err) < 0 || !e)
        TEST_FAIL("engine: %s", err.buf ? err.buf : "");
    strbuf_release(&err);
    return e;
}

/* The findings of e, as "scope;scope;". */
static const char *scopes(const struct rules_engine *e)
{
    static char out[4096];
    uint32_t n;
    const struct finding *f = rules_findings(e, &n);
    size_t len = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < n && len < sizeof(out); i++)
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s;", f[i].scope);
    return out;
}

/* nodes imported nodes of one core and one GPU each, node `bound` CPU-bound
 * (a core at 100 %, its GPU idle), the others busy on the GPU. */
static void bottleneck_nodes(struct rules_engine *e, int nodes, int bound, const char *prefix)
{
    int slot[512][3];
    for (int n = 0; n < nodes; n++) {
        char labels[160];
        snprintf(labels, sizeof(labels), "node=%s%d", prefix, n + 1);
        slot[n][0] = rules_series(e, "cpu.util", labels);
        snprintf(labels, sizeof(labels), "core=0,node=%s%d", prefix, n + 1);
        slot[n][1] = rules_series(e, "cpu.util", labels);
        snprintf(labels, sizeof(labels), "gpu=0,node=%s%d", prefix, n + 1);
        slot[n][2] = rules_series(e, "gpu.util", labels);
    }
    for (int64_t ts = START_NS; ts < START_NS + 30000 * MS; ts += 100 * MS)
        for (int n = 0; n < nodes; n++) {
            rules_put(e, slot[n][0], ts, n == bound ? 100 : 30);
            rules_put(e, slot[n][1], ts, n == bound ? 100 : 30);
            rules_put(e, slot[n][2], ts, n == bound ? 0 : 90);
        }
    rules_finish(e, START_NS + 29900 * MS);
}

/* A 20-node job with one CPU-bound node, the 20th seen: the rules had room
 * for 16 nodes and never saw it. */
TEST(the_twentieth_node_is_judged)
{
    struct rules_engine *e = engine("CPUBottleneck", "CPUBottleneck.patience=10", NULL);
    bottleneck_nodes(e, 20, 19, "algo-");
    ASSERT_EQ_STR(scopes(e), "node=algo-20;");
    ASSERT_EQ_INT(rules_node_count(e), 21); /* and the local node, RULES_LOCAL_NODE */
    rules_engine_free(e);
}

/* 300 nodes, the bound one last. */
TEST(three_hundred_nodes_are_judged)
{
    struct rules_engine *e = engine("CPUBottleneck", "CPUBottleneck.patience=10", NULL);
    bottleneck_nodes(e, 300, 299, "algo-");
    ASSERT_EQ_STR(scopes(e), "node=algo-300;");
    /* 290 snapshots judged on each of the 300 nodes, 290 of them bottlenecked */
    ASSERT_EQ_U64(rules_result_at(e, 0)->datapoints, 300 * 290);
    ASSERT_EQ_U64(rules_result_at(e, 0)->violations, 290);
    rules_engine_free(e);
}

/* Node names were kept in 48 bytes: two nodes whose names share their
 * first 47 were one node. */
TEST(long_node_names_stay_apart)
{
    char prefix[80];
    memset(prefix, 'n', 70);
    strcpy(prefix + 70, "-");
    struct rules_engine *e = engine("CPUBottleneck", "CPUBottleneck.patience=10", NULL);
    bottleneck_nodes(e, 2, 1, prefix);
    char want[160];
    snprintf(want, sizeof(want), "node=%s2;", prefix);
    ASSERT_EQ_STR(scopes(e), want);
    rules_engine_free(e);
}

/* 256 ranks of 100 ms steps: each works 50 ms and waits 50 ms in the
 * all-reduce, but rank `slow` works 90 ms and waits 10 ms; rank `data`
 * waits for data 60 % of its step. */
static void ranks_run(struct rules_engine *e, int ranks, int slow, int data)
{
    for (int r = 0; r < ranks; r++)
        rules_put_process(e, 10000 + r, r, -1);
    for (int64_t t = 0; t + 100 * MS <= 30000 * MS; t += 100 * MS) {
        int64_t s = START_NS + t;
        for (int r = 0; r < ranks; r++) {
            int64_t pid = 10000 + r, work = r == slow ? 90 * MS : 50 * MS;
            if (r == data) {
                rules_put_span(e, pid, pid, s, s + 60 * MS, 0, "data");
                rules_put_span(e, pid, pid, s + 60 * MS, s + 80 * MS, 0, "forward");
                rules_put_span(e, pid, pid, s + 80 * MS, s + 100 * MS, 0, "comm:allreduce");
            } else {
                rules_put_span(e, pid, pid, s, s + work, 0, "forward");
                rules_put_span(e, pid, pid, s + work, s + 100 * MS, 0, "comm:allreduce");
            }
            rules_put_span(e, pid, pid, s, s + 100 * MS, 0, "step");
        }
        if ((t + 100 * MS) % (10000 * MS) == 0)
            rules_close_until(e, s + 100 * MS);
    }
    rules_finish(e, START_NS + 30000 * MS);
}

/* The rules kept the first 64 ranks of a window: rank 200 of 256 was
 * never compared with the others. */
TEST(a_straggler_among_256_ranks_is_named)
{
    struct rules_engine *e = engine("Straggler", NULL, NULL);
    ranks_run(e, 256, 200, -1);
    ASSERT_EQ_STR(scopes(e), "rank=200;");
    uint32_t n;
    const struct finding *f = rules_findings(e, &n);
    if (!strstr(f[0].evidence, "rank 200 (pid 10200) works 80 % longer"))
        TEST_FAIL("evidence: %s", f[0].evidence);
    rules_engine_free(e);
}

TEST(an_input_bound_rank_past_the_64th_is_named)
{
    struct rules_engine *e = engine("InputBound", NULL, NULL);
    ranks_run(e, 256, -1, 130);
    ASSERT_EQ_STR(scopes(e), "rank=130;");
    rules_engine_free(e);
}

/* A GPU index the rules have no room for is said once, not dropped in
 * silence; the GPUs they judge are judged. */
TEST(a_gpu_past_the_last_index_is_a_warning)
{
    struct rules_engine *e = engine("LowGPUUtilization", NULL, NULL);
    ASSERT(rules_series(e, "gpu.util", "gpu=63") >= 0);
    ASSERT_EQ_INT(rules_warning_count(e), 0);
    ASSERT(rules_series(e, "gpu.util", "gpu=64") < 0);
    ASSERT(rules_series(e, "gpu.mem_util", "gpu=70,node=algo-2") < 0);
    ASSERT_EQ_INT(rules_warning_count(e), 1);
    const char *w = rules_warning_at(e, 0);
    if (!strstr(w, "gpu=0 to gpu=63") || !strstr(w, "gpu.util{gpu=64}"))
        TEST_FAIL("warning: %s", w);
    rules_engine_free(e);
}

TEST_MAIN(the_twentieth_node_is_judged, three_hundred_nodes_are_judged, long_node_names_stay_apart,
          a_straggler_among_256_ranks_is_named, an_input_bound_rank_past_the_64th_is_named,
          a_gpu_past_the_last_index_is_a_warning)
