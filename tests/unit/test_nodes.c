/* A run's nodes in its series and the heatmap per node (analyze/nodes.c). */
#include <math.h>
#include <string.h>

#include "analyze/nodes.h"
#include "common/json_writer.h"
#include "test.h"

/* The node a series gives as "node" (its name as written), or NULL when the
 * series is no node's own reading of m. */
static const char *node_of(const char *name, const char *labels, enum metric_id m)
{
    static char out[64];
    const char *node;
    size_t len;
    if (!node_series(name, labels, m, &node, &len))
        return NULL;
    snprintf(out, sizeof(out), "%.*s", (int)len, node);
    return out;
}

TEST(a_node_reading_is_its_labels_less_node)
{
    ASSERT_EQ_STR(node_of("cpu.util", "", METRIC_CPU_UTIL), "");
    ASSERT_EQ_STR(node_of("cpu.util", "node=algo-1", METRIC_CPU_UTIL), "algo-1");
    ASSERT(!node_of("cpu.util", "core=3,node=algo-1", METRIC_CPU_UTIL));
    ASSERT(!node_of("cpu.util", "core=3", METRIC_CPU_UTIL));
    ASSERT(!node_of("cpu.user", "node=a", METRIC_CPU_UTIL));
    ASSERT(!node_of("cpu.util.x", "", METRIC_CPU_UTIL));
    /* the name as written: escaped */
    ASSERT_EQ_STR(node_of("cpu.util", "node=x%2Cy", METRIC_CPU_UTIL), "x%2Cy");
}

TEST(a_gpu_metric_takes_each_whole_gpu)
{
    ASSERT_EQ_STR(node_of("gpu.util", "gpu=0", METRIC_GPU_UTIL), "");
    ASSERT_EQ_STR(node_of("gpu.util", "gpu=1,node=n7", METRIC_GPU_UTIL), "n7");
    ASSERT_EQ_STR(node_of("gpu.util", "", METRIC_GPU_UTIL), "");
    ASSERT(!node_of("gpu.util", "gpu=0,node=n7,pid=42", METRIC_GPU_UTIL));
    ASSERT(!node_of("gpu.util", "gpu=0,mig=1", METRIC_GPU_UTIL));
    /* gpu= is a device only for a metric of GPUs */
    ASSERT(!node_of("cpu.util", "gpu=0", METRIC_CPU_UTIL));
}

static int row(struct node_heat *h, const char *key)
{
    return node_heat_row(h, key, strlen(key), "host");
}

TEST(heat_rows_are_nodes_in_natural_order_their_gpus_averaged)
{
    struct node_heat h;
    ASSERT_EQ_INT(node_heat_init(&h, METRIC_GPU_UTIL, 1000, 10, 3), 0);
    int n10 = row(&h, "n10"), n2 = row(&h, "n2");
    ASSERT_EQ_INT(n10, 0);
    ASSERT_EQ_INT(n2, 1);
    ASSERT_EQ_INT(row(&h, "n10"), n10); /* its second GPU: the same row */
    node_heat_add(&h, n10, 0, 100, 2);  /* GPU 0: 50 % */
    node_heat_add(&h, n10, 0, 20, 2);   /* GPU 1: 10 %: the row 30 % */
    node_heat_add(&h, n2, 2, 90, 1);
    node_heat_add(&h, n2, 3, 50, 1);  /* no such column: left out */
    node_heat_add(&h, n2, 1, NAN, 1); /* no value */
    node_heat_sort(&h);
    ASSERT_EQ_STR(h.names[0], "n2");
    ASSERT_EQ_STR(h.names[1], "n10");
    ASSERT_EQ_INT(h.nseries[1], 2);
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_object_begin(&jw);
    node_heat_json(&jw, &h, 1);
    jw_end(&jw);
    ASSERT(strstr(o.buf, "\"nodes\":[\"n2\",\"n10\"]"));
    ASSERT(strstr(o.buf, "\"series\":[1,2]"));
    ASSERT(strstr(o.buf, "\"node_mean\":[90,30]"));
    ASSERT(strstr(o.buf, "\"mean\":[\n[null,null,90],\n[30,null,null]]"));
    strbuf_release(&o);
    node_heat_release(&h);
}

TEST(a_run_of_one_node_is_one_row_named_by_its_host)
{
    struct node_heat h;
    ASSERT_EQ_INT(node_heat_init(&h, METRIC_CPU_UTIL, 0, 1, 1), 0);
    ASSERT_EQ_INT(row(&h, ""), 0);
    ASSERT_EQ_INT(node_heat_row(&h, "x%2Cy", 5, "host"), 1);
    ASSERT_EQ_STR(h.names[0], "host");
    ASSERT_EQ_STR(h.names[1], "x,y"); /* shown unescaped */
    node_heat_release(&h);
}

/* The cells of one row holding vals, written to that many decimals. */
static void cells(const double *vals, uint32_t n, int decimals, const char *want)
{
    struct node_heat h;
    ASSERT_EQ_INT(node_heat_init(&h, METRIC_CPU_UTIL, 0, 1, n), 0);
    ASSERT_EQ_INT(row(&h, "a"), 0);
    for (uint32_t i = 0; i < n; i++)
        node_heat_add(&h, 0, i, vals[i], 1);
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_object_begin(&jw);
    node_heat_json(&jw, &h, decimals);
    jw_end(&jw);
    const char *m = strstr(o.buf, "\"mean\":[\n[");
    ASSERT(m);
    ASSERT_EQ_STR(m + strlen("\"mean\":[\n["), want);
    strbuf_release(&o);
    node_heat_release(&h);
}

TEST(cells_are_rounded_to_the_decimals_asked_no_trailing_zeros)
{
    const double v[] = {57.26, 57.04, 100, 0.5, -0.04, -3.26, 0.049, 1e20};
    cells(v, 8, 1, "57.3,57,100,0.5,0,-3.3,0,100000000000000000000.0]]}");
    cells(v, 8, 2, "57.26,57.04,100,0.5,-0.04,-3.26,0.05,100000000000000000000.00]]}");
    cells(v, 8, 0, "57,57,100,1,0,-3,0,100000000000000000000]]}");
}

TEST_MAIN(a_node_reading_is_its_labels_less_node, a_gpu_metric_takes_each_whole_gpu,
          heat_rows_are_nodes_in_natural_order_their_gpus_averaged,
          a_run_of_one_node_is_one_row_named_by_its_host,
          cells_are_rounded_to_the_decimals_asked_no_trailing_zeros)
