/*
 * The report's data: one JSON object the page draws from (docs/report.md).
 *
 * Series go onto one time grid of at most REPORT_BUCKETS buckets from the
 * run's start to its end, each bucket keeping the smallest and largest value
 * it saw (an envelope), so a one-sample spike in a 24 h run still shows; the
 * page draws the band between them. The statistics (min, p50, p95, p99,
 * max, mean) are over every point, nearest rank like `strobe show`, so the
 * two agree; that needs the points, so every block is decoded (block headers
 * alone would give the envelope but not the percentiles), and the
 * percentiles are selected in O(n), not sorted. Blocks whose header says
 * they hold only NaN are skipped undecoded.
 */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/nodes.h"
#include "analyze/steps.h"
#include "common/array.h"
#include "common/json_writer.h"
#include "common/label.h"
#include "common/metrics.h"
#include "import/json.h"
#include "pyprof/view.h"
#include "render/report.h"
#include "render/report_internal.h"
#include "rules/rules.h"
#include "store/job.h"
#include "store/points.h"

struct series_item {
    int64_t id;
    char *name, *labels, *unit, *meta;
    int64_t count;
};

struct series_list {
    struct series_item *items;
    uint32_t n, cap;
};

static int keep_series(const struct series_record *sr, void *arg)
{
    struct series_list *l = arg;
    if (array_grow((void **)&l->items, &l->cap, l->n + 1, sizeof(*l->items), 64) < 0)
        return -ENOMEM;
    struct series_item *it = &l->items[l->n];
    it->id = sr->id;
    it->count = sr->count;
    it->name = strdup(sr->name);
    it->labels = strdup(sr->labels);
    it->unit = strdup(sr->unit);
    it->meta = sr->meta ? strdup(sr->meta) : NULL;
    l->n++;
    if (!it->name || !it->labels || !it->unit || (sr->meta && !it->meta))
        return -ENOMEM;
    return 0;
}

static void series_list_release(struct series_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].name);
        free(l->items[i].labels);
        free(l->items[i].unit);
        free(l->items[i].meta);
    }
    free(l->items);
}

/* Per-process series (pid= in the labels) are many and short-lived: the
 * report draws the tree's totals, `strobe show --json` has the rest. */
static int drawn(const struct series_item *it)
{
    return !strstr(it->labels, "pid=") &&
           strcmp(it->name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) != 0;
}

/* ---- nodes ---------------------------------------------------------------- */

/* The nodes of a run of several (node=NAME in its series' labels): which
 * are charted, and the heatmaps of every one. */
struct report_nodes {
    char **names; /* every node, as written in labels (escaped), natural order */
    uint32_t n, cap;
    uint32_t drawn; /* the first this many are charted */
    struct node_heat cpu, gpu;
};

static int by_natural(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Every node value among the labels, once each. */
static int nodes_find(struct report_nodes *rn, const struct series_list *l)
{
    struct strbuf rest, node;
    strbuf_init(&rest);
    strbuf_init(&node);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < l->n; i++) {
        strbuf_reset(&rest);
        strbuf_reset(&node);
        if (!labels_take(l->items[i].labels, "node", &rest, &node))
            continue;
        /* a node's series come together: most are the last one seen */
        if (rn->n && strcmp(rn->names[rn->n - 1], node.buf) == 0)
            continue;
        rc = array_grow((void **)&rn->names, &rn->cap, rn->n + 1, sizeof(*rn->names), 16);
        if (rc == 0 && !(rn->names[rn->n++] = strdup(node.buf)))
            rc = -ENOMEM;
    }
    strbuf_release(&rest);
    strbuf_release(&node);
    if (rc < 0)
        return rc;
    if (rn->n > 1)
        qsort(rn->names, rn->n, sizeof(*rn->names), by_natural);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < rn->n; i++) {
        if (kept && strcmp(rn->names[kept - 1], rn->names[i]) == 0)
            free(rn->names[i]);
        else
            rn->names[kept++] = rn->names[i];
    }
    rn->n = kept;
    rn->drawn = rn->n < REPORT_NODES_DRAWN ? rn->n : REPORT_NODES_DRAWN;
    return 0;
}

static void nodes_release(struct report_nodes *rn)
{
    for (uint32_t i = 0; i < rn->n; i++)
        free(rn->names[i]);
    free(rn->names);
    node_heat_release(&rn->cpu);
    node_heat_release(&rn->gpu);
}

/* Whether a series is charted: one of a charted node's, or no node's. */
static int node_drawn(const struct report_nodes *rn, const struct series_item *it)
{
    struct strbuf rest, node;
    strbuf_init(&rest);
    strbuf_init(&node);
    int yes = !labels_take(it->labels, "node", &rest, &node);
    for (uint32_t i = 0; !yes && i < rn->drawn; i++)
        yes = strcmp(rn->names[i], node.buf) == 0;
    strbuf_release(&rest);
    strbuf_release(&node);
    return yes;
}

/* ---- numbers -------------------------------------------------------------- */

/* Four significant digits: what a chart can show; keeps the file small. */
static void add_num4(struct json_writer *jw, double v)
{
    if (isfinite(v))
        jw_rawf(jw, "%.4g", v);
    else
        jw_null(jw);
}

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Hoare's selection with a median of three (report_internal.h). */
double report_select_kth(double *v, size_t from, size_t n, size_t k)
{
    size_t lo = from, hi = n - 1;
    while (hi > lo) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo])
            swap_d(&v[mid], &v[lo]);
        if (v[hi] < v[lo])
            swap_d(&v[hi], &v[lo]);
        if (v[hi] < v[mid])
            swap_d(&v[hi], &v[mid]);
        double pivot = v[mid];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                swap_d(&v[i], &v[j]);
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Index of the nearest-rank percentile, as store/points.c has it for
 * strobe show. */
static size_t rank_index(size_t n, double pct)
{
    size_t rank = (size_t)ceil(pct / 100.0 * (double)n);
    return rank ? rank - 1 : 0;
}

/* ---- the time grid -------------------------------------------------------- */

struct grid {
    int64_t t0_ns;       /* the run's start */
    int64_t width_ns;    /* one bucket */
    uint32_t n;          /* buckets */
    double *lo, *hi;     /* per bucket; NaN when empty */
    double *sum;         /* for the mean (the per-core heatmap) */
    uint32_t *cnt;       /* points per bucket */
    double *vals;        /* scratch: the series' values, for its percentiles */
    uint32_t nvals, cap; /* in vals */
    double total;        /* sum of every value */
    uint64_t points;     /* points read */
};

static int grid_init(struct grid *g, const struct run_record *r)
{
    memset(g, 0, sizeof(*g));
    int64_t end = r->end_ns ? r->end_ns : r->last_ns;
    int64_t span = end > r->start_ns ? end - r->start_ns : 1;
    int64_t iv = r->interval_ns > 0 ? r->interval_ns : 100000000;
    g->t0_ns = r->start_ns;
    g->width_ns = (span + REPORT_BUCKETS - 1) / REPORT_BUCKETS;
    if (g->width_ns < iv)
        g->width_ns = iv; /* no bucket finer than a sample */
    g->n = (uint32_t)(span / g->width_ns + 1);
    g->lo = malloc(g->n * sizeof(double));
    g->hi = malloc(g->n * sizeof(double));
    g->sum = malloc(g->n * sizeof(double));
    g->cnt = malloc(g->n * sizeof(uint32_t));
    return g->lo && g->hi && g->sum && g->cnt ? 0 : -ENOMEM;
}

static void grid_reset(struct grid *g)
{
    for (uint32_t i = 0; i < g->n; i++) {
        g->lo[i] = g->hi[i] = NAN;
        g->sum[i] = 0;
        g->cnt[i] = 0;
    }
    g->nvals = 0;
    g->total = 0;
    g->points = 0;
}

static void grid_release(struct grid *g)
{
    free(g->lo);
    free(g->hi);
    free(g->sum);
    free(g->cnt);
    free(g->vals);
}

/* Bucket of a time; points outside the run (clock steps) go to its edges. */
static uint32_t bucket_of(const struct grid *g, int64_t ts)
{
    if (ts <= g->t0_ns)
        return 0;
    int64_t b = (ts - g->t0_ns) / g->width_ns;
    return b >= g->n ? g->n - 1 : (uint32_t)b;
}

static int grid_block(const struct block_record *b, void *arg)
{
    struct grid *g = arg;
    g->points += b->st.count;
    if (isnan(b->st.min))
        return 0; /* nothing but NaN: the header says so, no decode */
    if (array_grow((void **)&g->vals, &g->cap, g->nvals + b->st.count, sizeof(double), 4096) < 0)
        return -ENOMEM;
    struct block_dec d;
    block_dec_init(&d, b->data, b->len, b->st.count, b->st.start_ns);
    int64_t ts;
    double v;
    /* points come in time order: step the bucket forward instead of
     * dividing for every point */
    uint32_t bucket = bucket_of(g, b->st.start_ns);
    int64_t edge = g->t0_ns + (int64_t)(bucket + 1) * g->width_ns;
    while (block_dec_next(&d, &ts, &v) == 1 && g->nvals < g->cap) {
        if (isnan(v))
            continue;
        if (ts >= edge || ts < edge - g->width_ns) {
            bucket = bucket_of(g, ts);
            edge = g->t0_ns + (int64_t)(bucket + 1) * g->width_ns;
        }
        if (!(v >= g->lo[bucket]))
            g->lo[bucket] = v; /* also when lo is NaN: the bucket's first point */
        if (!(v <= g->hi[bucket]))
            g->hi[bucket] = v;
        g->sum[bucket] += v;
        g->cnt[bucket]++;
        g->total += v;
        g->vals[g->nvals++] = v;
    }
    return 0; /* a damaged block: what decoded is kept, as strobe show does */
}

/* ---- series --------------------------------------------------------------- */

static void add_array(struct json_writer *jw, const char *key, const struct grid *g,
                      const double *v, int integer)
{
    jw_key(jw, key);
    jw_array_begin(jw);
    for (uint32_t i = 0; i < g->n; i++) {
        if (!g->cnt[i])
            jw_null(jw);
        else if (integer)
            jw_rawf(jw, "%.0f", v[i]);
        else
            add_num4(jw, v[i]);
    }
    jw_end(jw);
}

static void add_series_stats(struct json_writer *jw, struct grid *g)
{
    size_t n = g->nvals;
    /* the values the statistics are of: NaN is no value (strobe show's count) */
    jw_key(jw, "stats");
    jw_object_begin(jw);
    jw_kv_uint(jw, "count", n);
    if (!n) {
        jw_end(jw);
        return;
    }
    /* select in increasing rank: a selection leaves everything above its
     * rank after it, so the next one only looks there */
    size_t k50 = rank_index(n, 50), k95 = rank_index(n, 95), k99 = rank_index(n, 99);
    jw_kv_num(jw, "p50", report_select_kth(g->vals, 0, n, k50));
    jw_kv_num(jw, "p95", report_select_kth(g->vals, k50, n, k95));
    jw_kv_num(jw, "p99", report_select_kth(g->vals, k95, n, k99));
    double mn = g->vals[0], mx = g->vals[0];
    for (size_t i = 1; i < n; i++) {
        mn = g->vals[i] < mn ? g->vals[i] : mn;
        mx = g->vals[i] > mx ? g->vals[i] : mx;
    }
    jw_kv_num(jw, "min", mn);
    jw_kv_num(jw, "max", mx);
    uint64_t cnt = 0;
    for (uint32_t i = 0; i < g->n; i++)
        cnt += g->cnt[i];
    jw_kv_num(jw, "mean", cnt ? g->total / (double)cnt : NAN);
    jw_end(jw);
}

static int is_core(const struct series_item *it)
{
    return strcmp(it->name, metric_name(METRIC_CPU_UTIL)) == 0 &&
           strncmp(it->labels, "core=", 5) == 0;
}

/* A node's own cpu.util or gpu.util, bucket by bucket into its row. */
static int heat_series(struct node_heat *h, const struct series_item *it, const struct grid *g)
{
    const char *node;
    size_t len;
    if (!node_series(it->name, it->labels, h->metric, &node, &len))
        return 0;
    int row = node_heat_row(h, node, len, NULL);
    for (uint32_t i = 0; row >= 0 && i < g->n; i++)
        node_heat_add(h, (uint32_t)row, i, g->sum[i], g->cnt[i]);
    return row < 0 ? row : 0;
}

/* One series: its statistics, and its envelope on the grid when charted. */
static int add_one_series(struct store *s, struct json_writer *jw, const struct series_item *it,
                          struct grid *g, struct report_nodes *rn, int charted)
{
    grid_reset(g);
    if (s->ops->blocks_query(s, it->id, grid_block, g) < 0)
        return -EIO;
    if (rn->n > 1 && (heat_series(&rn->cpu, it, g) < 0 || heat_series(&rn->gpu, it, g) < 0))
        return -ENOMEM;
    jw_object_begin(jw);
    jw_kv_str(jw, "name", it->name);
    jw_kv_str_or_null(jw, "labels", it->labels);
    jw_kv_str_or_null(jw, "unit", it->unit);
    add_series_stats(jw, g);
    if (!charted) {
        /* a node not charted: its statistics only */
    } else if (is_core(it)) {
        /* the heatmap shows the mean per bucket, whole percent */
        for (uint32_t i = 0; i < g->n; i++)
            g->sum[i] = g->cnt[i] ? g->sum[i] / g->cnt[i] : 0;
        add_array(jw, "mean", g, g->sum, 1);
    } else {
        int flat = 1;
        for (uint32_t i = 0; i < g->n && flat; i++)
            flat = !g->cnt[i] || g->lo[i] == g->hi[i];
        if (flat) {
            add_array(jw, "v", g, g->lo, 0);
        } else {
            add_array(jw, "lo", g, g->lo, 0);
            add_array(jw, "hi", g, g->hi, 0);
        }
    }
    jw_end(jw);
    return 0;
}

/* "grid" (the time buckets) and "series", a series a line. */
static int add_series(struct store *s, const struct run_record *r, const struct series_list *l,
                      struct json_writer *jw, struct report_stats *st, struct report_nodes *rn)
{
    struct grid g;
    int rc = grid_init(&g, r);
    if (rc < 0)
        return rc;
    node_heat_init(&rn->cpu, METRIC_CPU_UTIL, g.t0_ns, g.width_ns, g.n);
    node_heat_init(&rn->gpu, METRIC_GPU_UTIL, g.t0_ns, g.width_ns, g.n);
    jw_key(jw, "grid");
    jw_object_begin(jw);
    jw_kv_int(jw, "t0_ns", g.t0_ns);
    jw_kv_int(jw, "width_ns", g.width_ns);
    jw_kv_uint(jw, "n", g.n);
    jw_end(jw);
    jw_key(jw, "series");
    jw_array_begin(jw);
    jw_lines(jw, "\n", "\n");
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        if (!drawn(&l->items[i]))
            continue;
        rc = add_one_series(s, jw, &l->items[i], &g, rn, node_drawn(rn, &l->items[i]));
        st->series++;
        st->buckets += g.n;
        st->points += g.points;
    }
    jw_end(jw);
    grid_release(&g);
    return rc;
}

/* GPUs: the facts the NVML collector left in gpu.mem_total_bytes' metadata,
 * passed on only when they parse, so a damaged store cannot break the page. */
static void add_gpus(struct json_writer *jw, const struct series_list *l)
{
    struct json_doc d;
    json_doc_init(&d);
    jw_key(jw, "gpus");
    jw_array_begin(jw);
    for (size_t i = 0; i < l->n; i++) {
        const struct series_item *it = &l->items[i];
        struct json *v;
        if (strcmp(it->name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) != 0 || !it->meta ||
            json_parse(&d, it->meta, strlen(it->meta), &v) < 0 || v->type != JSON_OBJECT)
            continue;
        jw_raw(jw, it->meta);
    }
    jw_end(jw);
    json_doc_release(&d);
}

/* A run of several nodes: the job's nodes, which are charted, and the
 * heatmaps of cpu.util and gpu.util per node (whole percent). */
static int add_nodes(struct store *s, const struct run_record *r, struct report_nodes *rn,
                     struct json_writer *jw)
{
    if (rn->n < 2)
        return 0;
    node_heat_sort(&rn->cpu);
    node_heat_sort(&rn->gpu);
    if (run_record_is_job(r)) {
        struct run_list nodes;
        int rc = store_job_nodes(s, r->id, &nodes);
        if (rc < 0)
            return rc;
        job_nodes_json(jw, r->join_key, &nodes, &rn->cpu, &rn->gpu);
        run_list_release(&nodes);
    }
    jw_kv_uint(jw, "nodes_total", rn->n);
    jw_key(jw, "nodes_drawn");
    jw_array_begin(jw);
    struct strbuf name;
    strbuf_init(&name);
    for (uint32_t i = 0; i < rn->drawn; i++) {
        strbuf_reset(&name);
        label_unescape(&name, rn->names[i], strlen(rn->names[i]));
        jw_str(jw, name.buf);
    }
    strbuf_release(&name);
    jw_end(jw);
    jw_key(jw, "heatmaps");
    jw_array_begin(jw);
    const struct node_heat *maps[] = {&rn->cpu, &rn->gpu};
    for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
        if (!maps[i]->nrows)
            continue;
        jw_object_begin(jw);
        node_heat_json(jw, maps[i], 0);
        jw_end(jw);
    }
    jw_end(jw);
    return 0;
}

/* ---- the run record ------------------------------------------------------- */

/* The list as [[key, value], ...]: the page keeps the order. */
static void add_kv(struct json_writer *jw, const char *key, const struct kv_list *l)
{
    jw_key(jw, key);
    jw_array_begin(jw);
    for (size_t i = 0; i < l->n; i++) {
        jw_array_begin(jw);
        jw_str(jw, l->items[i].key);
        jw_str(jw, l->items[i].value);
        jw_end(jw);
    }
    jw_end(jw);
}

/* The command as stored (a JSON array we wrote), re-checked: a store from
 * elsewhere must not be able to put arbitrary script text in the page. */
static void add_command(struct json_writer *jw, const char *command_json)
{
    struct json_doc d;
    json_doc_init(&d);
    struct json *v;
    jw_key(jw, "command");
    jw_array_begin(jw);
    if (command_json && json_parse(&d, command_json, strlen(command_json), &v) == 0 &&
        v->type == JSON_ARRAY) {
        for (const struct json *a = v->child; a; a = a->next) {
            const char *str = json_str(a);
            if (str)
                jw_str(jw, str);
        }
    }
    jw_end(jw);
    json_doc_release(&d);
}

static void add_run(struct json_writer *jw, const struct run_record *r)
{
    jw_key(jw, "run");
    jw_object_begin(jw);
    run_record_json_head(jw, r);
    jw_kv_int(jw, "last_ns", r->last_ns);
    add_command(jw, r->command_json);
    run_record_json_host(jw, r);
    jw_kv_int(jw, "git_dirty", r->git_dirty);
    run_record_json_versions(jw, r);
    jw_kv_int(jw, "interval_ns", r->interval_ns);
    jw_kv_int(jw, "samples", r->samples);
    jw_kv_int(jw, "points", r->points);
    jw_kv_int(jw, "missed", r->missed);
    jw_kv_int(jw, "dropped", r->dropped);
    jw_kv_int(jw, "events", r->events);
    jw_kv_int(jw, "events_dropped", r->events_dropped);
    add_kv(jw, "tags", &r->tags);
    add_kv(jw, "params", &r->params);
    add_kv(jw, "env", &r->env);
    jw_end(jw);
}

/* ---- findings ------------------------------------------------------------- */

static int add_finding(const struct finding_record *f, void *arg)
{
    struct json_writer *jw = arg;
    jw_object_begin(jw);
    jw_kv_str(jw, "rule", f->rule);
    jw_kv_str_or_null(jw, "severity", f->severity);
    jw_kv_str_or_null(jw, "scope", f->scope);
    jw_kv_int(jw, "start_ns", f->start_ns);
    jw_kv_int(jw, "end_ns", f->end_ns);
    jw_kv_str_or_null(jw, "evidence", f->evidence);
    jw_kv_str_or_null(jw, "recommendation", f->recommendation);
    jw_end(jw);
    return 0;
}

/* The stored findings, one a line; built apart, so that a store from before
 * the rules (no findings table: none) leaves an empty list. 0 or -ENOMEM. */
static int add_findings(struct store *s, const char *run_id, struct json_writer *jw)
{
    struct strbuf list;
    strbuf_init(&list);
    struct json_writer lw;
    jw_init(&lw, &list);
    jw_array_begin(&lw);
    jw_lines(&lw, "\n", "\n");
    int rc = s->ops->findings_query(s, run_id, add_finding, &lw);
    jw_end(&lw);
    int failed = strbuf_failed(&list);
    jw_kv_raw(jw, "findings", rc < 0 || failed ? "[]" : list.buf);
    strbuf_release(&list);
    return failed;
}

/* ---- entry ---------------------------------------------------------------- */

/* The framework part, on a thread of its own with its own store connection
 * (a struct store is one thread's): decoding a day of events and a day of
 * series take about as long, and together they would miss the 3 s budget. */
struct events_job {
    const char *uri;
    const struct run_record *r;
    struct strbuf out, err;
    int rc;
};

/* The run's flame data (pyprof/view.h) as the member "flame": every role,
 * phase and state, for the page to pick among; nothing when the run has
 * no Python samples, or samples that cannot be read (the report keeps the
 * rest). 0 or -ENOMEM. */
static int add_flame(struct json_writer *jw, struct store *s, const struct run_record *r,
                     const struct run_events *ev)
{
    struct py_run pr;
    struct py_view v;
    struct py_view_filter all = {.phase = -1};
    struct strbuf json;
    strbuf_init(&json);
    memset(&v, 0, sizeof(v));
    int rc = py_run_load(s, r, 0, &pr, &json); /* the events are loaded already */
    if (rc < 0 || py_run_samples(&pr) == 0) {
        rc = rc == -ENOMEM ? rc : 0;
        goto out;
    }
    strbuf_reset(&json);
    rc = py_view_build(&v, pr.src, pr.nprofs, ev, &all);
    if (rc == 0)
        rc = py_view_json(&v, r->id, &all, &json);
    if (rc == 0)
        jw_kv_raw(jw, "flame", json.buf);
out:
    py_view_release(&v);
    py_run_release(&pr);
    strbuf_release(&json);
    return rc;
}

static void *events_thread(void *arg)
{
    struct events_job *j = arg;
    struct store *s = NULL;
    struct run_events ev;
    struct step_analysis sa;
    memset(&ev, 0, sizeof(ev));
    memset(&sa, 0, sizeof(sa));
    struct run_record job;
    run_record_init(&job);
    j->rc = store_open(j->uri, 1, &s, &j->err);
    if (j->rc == 0 && run_record_is_job(j->r)) { /* every node's events, as the caller's */
        struct store *view;
        j->rc = run_record_copy(&job, j->r);
        if (j->rc == 0 && (j->rc = store_job_view(s, 1, &job, &view)) == 0)
            s = view;
    }
    if (j->rc == 0 && (j->rc = run_events_load(s, j->r->id, &ev)) == 0)
        j->rc = step_analysis_run(&ev, &sa);
    if (j->rc < 0 && s)
        strbuf_addf(&j->err, "cannot read the events of run %s: %s", j->r->id, s->err.buf);
    if (j->rc == 0) {
        struct json_writer jw; /* members for the data object, spliced in by the caller */
        jw_init_members(&jw, &j->out);
        j->rc = report_add_events(&jw, j->r, &ev, &sa);
        if (j->rc == 0)
            j->rc = add_flame(&jw, s, j->r, &ev);
        if (j->rc == 0)
            j->rc = jw_failed(&jw);
        if (j->rc < 0)
            strbuf_adds(&j->err, "out of memory");
    }
    step_analysis_release(&sa);
    run_events_release(&ev);
    store_close(s);
    run_record_release(&job);
    return NULL;
}

int report_data_json(struct store *s, const struct run_record *r, struct strbuf *o,
                     struct report_stats *st, struct strbuf *err)
{
    struct series_list l = {0};
    struct report_nodes rn = {0};
    struct events_job job = {.uri = s->open_uri ? s->open_uri : s->uri, .r = r};
    strbuf_init(&job.out);
    strbuf_init(&job.err);
    pthread_t th;
    int threaded = pthread_create(&th, NULL, events_thread, &job) == 0;
    if (!threaded)
        events_thread(&job); /* no thread to be had: one after the other */
    int rc = s->ops->series_query(s, r->id, keep_series, &l);
    if (rc < 0)
        strbuf_addf(err, "cannot read the series of run %s: %s", r->id, s->err.buf);
    else if ((rc = nodes_find(&rn, &l)) < 0)
        strbuf_adds(err, "out of memory");
    struct json_writer jw;
    jw_init(&jw, o);
    if (rc == 0) {
        jw_object_begin(&jw);
        jw_kv_int(&jw, "format", 1);
        add_run(&jw, r);
        rc = add_series(s, r, &l, &jw, st, &rn);
        if (rc == 0)
            rc = add_nodes(s, r, &rn, &jw);
        if (rc < 0)
            strbuf_addf(err, "cannot read the series of run %s: %s", r->id,
                        rc == -ENOMEM ? "out of memory" : s->err.buf);
    }
    if (threaded)
        pthread_join(th, NULL);
    if (rc == 0 && job.rc < 0) {
        rc = job.rc;
        strbuf_adds(err, job.err.buf);
    }
    if (rc == 0) {
        add_gpus(&jw, &l);
        rc = add_findings(s, r->id, &jw);
        jw_raw_members(&jw, job.out.buf);
        jw_end(&jw);
        jw_space(&jw, "\n");
        if (rc == 0)
            rc = jw_failed(&jw);
        if (rc < 0)
            strbuf_adds(err, "out of memory");
    }
    strbuf_release(&job.out);
    strbuf_release(&job.err);
    series_list_release(&l);
    nodes_release(&rn);
    return rc;
}
