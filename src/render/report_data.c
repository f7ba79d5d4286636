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

#include "analyze/steps.h"
#include "common/array.h"
#include "common/json_writer.h"
#include "common/metrics.h"
#include "import/json.h"
#include "render/report.h"
#include "render/report_internal.h"
#include "rules/rules.h"
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

/* ---- numbers -------------------------------------------------------------- */

/* Four significant digits: what a chart can show; keeps the file small. */
static void add_num4(struct strbuf *o, double v)
{
    if (!isfinite(v)) {
        strbuf_adds(o, "null");
        return;
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "%.4g", v);
    strbuf_adds(o, buf);
}

static void add_key_num(struct strbuf *o, const char *key, double v)
{
    strbuf_addf(o, ",\"%s\":", key);
    strbuf_add_json_num(o, v);
}

static void add_key_str(struct strbuf *o, const char *key, const char *v)
{
    strbuf_addf(o, ",\"%s\":", key);
    strbuf_add_json_str_or_null(o, v);
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
    block_dec_init(&d, b->data, b->len, b->st.count);
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

static void add_array(struct strbuf *o, const char *key, const struct grid *g, const double *v,
                      int integer)
{
    strbuf_addf(o, ",\"%s\":[", key);
    for (uint32_t i = 0; i < g->n; i++) {
        if (i)
            strbuf_addch(o, ',');
        if (!g->cnt[i])
            strbuf_adds(o, "null");
        else if (integer)
            strbuf_addf(o, "%.0f", v[i]);
        else
            add_num4(o, v[i]);
    }
    strbuf_addch(o, ']');
}

static void add_series_stats(struct strbuf *o, struct grid *g)
{
    size_t n = g->nvals;
    /* the values the statistics are of: NaN is no value (strobe show's count) */
    strbuf_addf(o, ",\"stats\":{\"count\":%zu", n);
    if (!n) {
        strbuf_adds(o, "}");
        return;
    }
    /* select in increasing rank: a selection leaves everything above its
     * rank after it, so the next one only looks there */
    size_t k50 = rank_index(n, 50), k95 = rank_index(n, 95), k99 = rank_index(n, 99);
    add_key_num(o, "p50", report_select_kth(g->vals, 0, n, k50));
    add_key_num(o, "p95", report_select_kth(g->vals, k50, n, k95));
    add_key_num(o, "p99", report_select_kth(g->vals, k95, n, k99));
    double mn = g->vals[0], mx = g->vals[0];
    for (size_t i = 1; i < n; i++) {
        mn = g->vals[i] < mn ? g->vals[i] : mn;
        mx = g->vals[i] > mx ? g->vals[i] : mx;
    }
    add_key_num(o, "min", mn);
    add_key_num(o, "max", mx);
    uint64_t cnt = 0;
    for (uint32_t i = 0; i < g->n; i++)
        cnt += g->cnt[i];
    add_key_num(o, "mean", cnt ? g->total / (double)cnt : NAN);
    strbuf_addch(o, '}');
}

static int is_core(const struct series_item *it)
{
    return strcmp(it->name, metric_name(METRIC_CPU_UTIL)) == 0 &&
           strncmp(it->labels, "core=", 5) == 0;
}

static int add_one_series(struct store *s, struct strbuf *o, const struct series_item *it,
                          struct grid *g, int first)
{
    grid_reset(g);
    if (s->ops->blocks_query(s, it->id, grid_block, g) < 0)
        return -EIO;
    strbuf_adds(o, first ? "\n{\"name\":" : ",\n{\"name\":");
    strbuf_add_json_str(o, it->name);
    add_key_str(o, "labels", it->labels);
    add_key_str(o, "unit", it->unit);
    add_series_stats(o, g);
    if (is_core(it)) {
        /* the heatmap shows the mean per bucket, whole percent */
        for (uint32_t i = 0; i < g->n; i++)
            g->sum[i] = g->cnt[i] ? g->sum[i] / g->cnt[i] : 0;
        add_array(o, "mean", g, g->sum, 1);
    } else {
        int flat = 1;
        for (uint32_t i = 0; i < g->n && flat; i++)
            flat = !g->cnt[i] || g->lo[i] == g->hi[i];
        if (flat) {
            add_array(o, "v", g, g->lo, 0);
        } else {
            add_array(o, "lo", g, g->lo, 0);
            add_array(o, "hi", g, g->hi, 0);
        }
    }
    strbuf_addch(o, '}');
    return 0;
}

static int add_series(struct store *s, const struct run_record *r, const struct series_list *l,
                      struct strbuf *o, struct report_stats *st)
{
    struct grid g;
    int rc = grid_init(&g, r);
    if (rc == 0) {
        strbuf_addf(o, ",\"grid\":{\"t0_ns\":%lld,\"width_ns\":%lld,\"n\":%u}", (long long)g.t0_ns,
                    (long long)g.width_ns, g.n);
        strbuf_adds(o, ",\"series\":[");
    }
    int first = 1;
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        if (!drawn(&l->items[i]))
            continue;
        rc = add_one_series(s, o, &l->items[i], &g, first);
        first = 0;
        st->series++;
        st->buckets += g.n;
        st->points += g.points;
    }
    strbuf_adds(o, "]");
    grid_release(&g);
    return rc;
}

/* GPUs: the facts the NVML collector left in gpu.mem_total_bytes' metadata,
 * passed on only when they parse, so a damaged store cannot break the page. */
static void add_gpus(struct strbuf *o, const struct series_list *l)
{
    struct json_doc d;
    json_doc_init(&d);
    strbuf_adds(o, ",\"gpus\":[");
    int n = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct series_item *it = &l->items[i];
        struct json *v;
        if (strcmp(it->name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) != 0 || !it->meta ||
            json_parse(&d, it->meta, strlen(it->meta), &v) < 0 || v->type != JSON_OBJECT)
            continue;
        strbuf_adds(o, n++ ? "," : "");
        strbuf_adds(o, it->meta);
    }
    strbuf_addch(o, ']');
    json_doc_release(&d);
}

/* ---- the run record ------------------------------------------------------- */

static void add_kv(struct strbuf *o, const char *key, const struct kv_list *l)
{
    strbuf_addf(o, ",\"%s\":[", key);
    for (size_t i = 0; i < l->n; i++) {
        strbuf_adds(o, i ? ",[" : "[");
        strbuf_add_json_str(o, l->items[i].key);
        strbuf_addch(o, ',');
        strbuf_add_json_str(o, l->items[i].value);
        strbuf_addch(o, ']');
    }
    strbuf_addch(o, ']');
}

/* The command as stored (a JSON array we wrote), re-checked: a store from
 * elsewhere must not be able to put arbitrary script text in the page. */
static void add_command(struct strbuf *o, const char *command_json)
{
    struct json_doc d;
    json_doc_init(&d);
    struct json *v;
    strbuf_adds(o, ",\"command\":[");
    if (command_json && json_parse(&d, command_json, strlen(command_json), &v) == 0 &&
        v->type == JSON_ARRAY) {
        int n = 0;
        for (const struct json *a = v->child; a; a = a->next) {
            const char *str = json_str(a);
            if (!str)
                continue;
            strbuf_adds(o, n++ ? "," : "");
            strbuf_add_json_str(o, str);
        }
    }
    strbuf_addch(o, ']');
    json_doc_release(&d);
}

static void add_run(struct strbuf *o, const struct run_record *r)
{
    strbuf_adds(o, "\"run\":{");
    struct json_writer jw;
    jw_init_members(&jw, o);
    run_record_json_head(&jw, r);
    strbuf_addf(o, ",\"last_ns\":%lld", (long long)r->last_ns);
    add_command(o, r->command_json);
    add_key_str(o, "cwd", r->cwd);
    add_key_str(o, "user", r->user);
    add_key_str(o, "host", r->host);
    add_key_str(o, "kernel", r->kernel);
    add_key_str(o, "cpu_model", r->cpu_model);
    strbuf_addf(o, ",\"cpu_count\":%d,\"mem_total_bytes\":%lld", r->cpu_count,
                (long long)r->mem_total_bytes);
    add_key_str(o, "git_commit", r->git_commit);
    strbuf_addf(o, ",\"git_dirty\":%d", r->git_dirty);
    add_key_str(o, "python_version", r->python_version);
    add_key_str(o, "torch_version", r->torch_version);
    add_key_str(o, "strobe_version", r->strobe_version);
    add_key_str(o, "error", r->error);
    strbuf_addf(o, ",\"interval_ns\":%lld,\"samples\":%lld,\"points\":%lld,\"missed\":%lld",
                (long long)r->interval_ns, (long long)r->samples, (long long)r->points,
                (long long)r->missed);
    strbuf_addf(o, ",\"dropped\":%lld,\"events\":%lld,\"events_dropped\":%lld",
                (long long)r->dropped, (long long)r->events, (long long)r->events_dropped);
    add_kv(o, "tags", &r->tags);
    add_kv(o, "params", &r->params);
    add_kv(o, "env", &r->env);
    strbuf_addch(o, '}');
}

/* ---- findings ------------------------------------------------------------- */

struct findings_ctx {
    struct strbuf *o;
    int n;
};

static int add_finding(const struct finding_record *f, void *arg)
{
    struct findings_ctx *c = arg;
    strbuf_adds(c->o, c->n++ ? ",\n{\"rule\":" : "\n{\"rule\":");
    strbuf_add_json_str(c->o, f->rule ? f->rule : "");
    add_key_str(c->o, "severity", f->severity);
    add_key_str(c->o, "scope", f->scope);
    strbuf_addf(c->o, ",\"start_ns\":%lld,\"end_ns\":%lld", (long long)f->start_ns,
                (long long)f->end_ns);
    add_key_str(c->o, "evidence", f->evidence);
    add_key_str(c->o, "recommendation", f->recommendation);
    strbuf_addch(c->o, '}');
    return 0;
}

static void add_findings(struct store *s, const char *run_id, struct strbuf *o)
{
    struct findings_ctx c = {o, 0};
    strbuf_adds(o, ",\"findings\":[");
    size_t mark = o->len;
    /* a store from before the rules has no findings table: none */
    if (s->ops->findings_query(s, run_id, add_finding, &c) < 0) {
        o->len = mark;
        o->buf[mark] = '\0';
    }
    strbuf_addch(o, ']');
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

static void *events_thread(void *arg)
{
    struct events_job *j = arg;
    struct store *s = NULL;
    struct run_events ev;
    struct step_analysis sa;
    memset(&ev, 0, sizeof(ev));
    memset(&sa, 0, sizeof(sa));
    j->rc = store_open(j->uri, 1, &s, &j->err);
    if (j->rc == 0 && (j->rc = run_events_load(s, j->r->id, &ev)) == 0)
        j->rc = step_analysis_run(&ev, &sa);
    if (j->rc < 0 && s)
        strbuf_addf(&j->err, "cannot read the events of run %s: %s", j->r->id, s->err.buf);
    if (j->rc == 0 && (j->rc = report_add_events(&j->out, j->r, &ev, &sa)) < 0)
        strbuf_adds(&j->err, "out of memory");
    step_analysis_release(&sa);
    run_events_release(&ev);
    store_close(s);
    return NULL;
}

int report_data_json(struct store *s, const struct run_record *r, struct strbuf *o,
                     struct report_stats *st, struct strbuf *err)
{
    struct series_list l = {0};
    struct events_job job = {.uri = s->uri, .r = r};
    strbuf_init(&job.out);
    strbuf_init(&job.err);
    pthread_t th;
    int threaded = pthread_create(&th, NULL, events_thread, &job) == 0;
    if (!threaded)
        events_thread(&job); /* no thread to be had: one after the other */
    int rc = s->ops->series_query(s, r->id, keep_series, &l);
    if (rc < 0)
        strbuf_addf(err, "cannot read the series of run %s: %s", r->id, s->err.buf);
    if (rc == 0) {
        strbuf_adds(o, "{\"format\":1,");
        add_run(o, r);
        rc = add_series(s, r, &l, o, st);
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
        add_gpus(o, &l);
        add_findings(s, r->id, o);
        strbuf_add(o, job.out.buf, job.out.len);
        strbuf_adds(o, "}\n");
    }
    strbuf_release(&job.out);
    strbuf_release(&job.err);
    series_list_release(&l);
    return rc;
}
