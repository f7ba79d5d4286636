#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/compare.h"
#include "analyze/nodes.h"
#include "common/array.h"
#include "common/err.h"
#include "common/json_writer.h"
#include "common/metrics.h"
#include "common/strlist.h"
#include "pyprof/view.h"
#include "serve/api.h"
#include "serve/downsample.h"
#include "serve/steps_view.h"
#include "store/job.h"
#include "sweep/results.h"
#include "sweep/state.h"

#define RUNS_LIMIT_DEFAULT 1000
#define RUNS_LIMIT_MAX     100000
#define POINTS_DEFAULT     1000
#define COMPARE_MAX_RUNS   16
#define REF_MAX            256

/* ---- small helpers ---------------------------------------------------------- */

void api_error(struct strbuf *body, const char *msg)
{
    strbuf_reset(body);
    struct json_writer jw;
    jw_init(&jw, body);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "error", msg);
    jw_end(&jw);
    jw_space(&jw, "\n");
}

static int fail(struct strbuf *body, int status, const char *msg)
{
    api_error(body, msg);
    return status;
}

/* The first value of key, or NULL. */
static const char *arg(const struct api_query *q, const char *key)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->key[i], key) == 0)
            return q->value[i];
    return NULL;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

/* Seconds as a short decimal, to the microsecond: chart axes need no more,
 * and it keeps arrays of times small. */
static void add_secs(struct json_writer *jw, int64_t ns)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof(tmp), "%.6f", (double)ns / 1e9);
    while (n > 1 && tmp[n - 1] == '0')
        tmp[--n] = '\0';
    if (n > 1 && tmp[n - 1] == '.')
        tmp[--n] = '\0';
    if (strcmp(tmp, "-0") == 0)
        snprintf(tmp, sizeof(tmp), "0");
    jw_raw(jw, tmp);
}

/* A derived figure to 7 significant digits (means: more digits than a chart
 * can show, fewer bytes than round-trip form). */
static void add_approx(struct json_writer *jw, double v)
{
    if (isfinite(v))
        jw_rawf(jw, "%.7g", v);
    else
        jw_null(jw);
}

static int resolve(const struct api_ctx *c, const char *ref, struct run_record *r,
                   struct strbuf *body, int *status)
{
    int rc = store_resolve_run(c->s, ref, r);
    if (rc == 0)
        return 0;
    if (rc == -STROBE_ENOTFOUND)
        *status = fail(body, 404, "no such run");
    else if (rc == -STROBE_EAMBIGUOUS)
        *status = fail(body, 404, "run prefix matches several runs");
    else
        *status = fail(body, 500, c->s->err.buf);
    return rc;
}

/* ---- /api/runs ------------------------------------------------------------------ */

struct run_row {
    struct run_record r;
    struct run_summary sum;
    int have_sum;
    char status[16]; /* as listed ("lost" too), found once: it may look at /proc */
    int64_t nodes;   /* a job's node count; -1 for any other run */
};

struct row_list {
    struct run_row *rows;
    size_t n, cap;
    const struct api_query *q;
    int with_nodes; /* nodes=1: each node's run of a job listed too */
    /* every node's run, listed or not: a job's row counts its nodes and
     * takes its status and figures from them */
    struct run_record *nodes;
    uint32_t nnodes, nodes_cap;
};

/* K:V against a list: the key present with that value (K alone: present). */
static int kv_matches(const struct kv_list *l, const char *spec)
{
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->items[i].key) == klen && memcmp(l->items[i].key, spec, klen) == 0)
            return !colon || strcmp(l->items[i].value, colon + 1) == 0;
    return 0;
}

static int run_wanted(const struct row_list *L, const struct run_record *r, const char *status)
{
    const struct api_query *q = L->q;
    for (size_t i = 0; i < q->n; i++) {
        const char *k = q->key[i], *v = q->value[i];
        if (strcmp(k, "experiment") == 0 && (!r->experiment || strcmp(r->experiment, v) != 0))
            return 0;
        if (strcmp(k, "workload") == 0) {
            const char *w = run_record_workload(r);
            if (!w || strcmp(w, v) != 0)
                return 0;
        }
        if (strcmp(k, "status") == 0 && status && strcmp(status, v) != 0)
            return 0;
        if (strcmp(k, "tag") == 0 && !kv_matches(&r->tags, v))
            return 0;
        if (strcmp(k, "param") == 0 && !kv_matches(&r->params, v))
            return 0;
    }
    return 1;
}

struct list_ctx {
    struct row_list *L;
    const struct api_ctx *c;
};

static int keep_node(struct row_list *L, const struct run_record *r)
{
    if (array_grow((void **)&L->nodes, &L->nodes_cap, L->nnodes + 1, sizeof(*L->nodes), 64) < 0)
        return -ENOMEM;
    int rc = run_record_copy(&L->nodes[L->nnodes], r);
    L->nnodes++; /* released either way */
    return rc;
}

/* Every run the filters keep but for its status, which a job's nodes
 * decide (run_status below). */
static int keep_run(const struct run_record *r, void *arg)
{
    struct list_ctx *x = arg;
    struct row_list *L = x->L;
    if (r->parent_id && keep_node(L, r) < 0)
        return -ENOMEM;
    if ((r->parent_id && !L->with_nodes) || !run_wanted(L, r, NULL))
        return 0;
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 64;
        struct run_row *p = realloc(L->rows, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        L->rows = p;
        L->cap = cap;
    }
    struct run_row *row = &L->rows[L->n];
    memset(row, 0, sizeof(*row));
    L->n++; /* released either way */
    return run_record_copy(&row->r, r) < 0 ? -ENOMEM : 0;
}

static int by_parent(const void *a, const void *b)
{
    const struct run_record *x = a, *y = b;
    return strcmp(x->parent_id, y->parent_id);
}

/* Each job's nodes (L->nodes sorted by job): its count, its figures rolled
 * up from them (store/job.h) and its status as they say; then the status
 * filter, which needs that status. */
static void rows_finish(struct row_list *L)
{
    if (L->nnodes > 1)
        qsort(L->nodes, L->nnodes, sizeof(*L->nodes), by_parent);
    size_t kept = 0;
    for (size_t i = 0; i < L->n; i++) {
        struct run_row *row = &L->rows[i];
        row->nodes = -1;
        if (run_record_is_job(&row->r)) {
            struct run_record key = {.parent_id = row->r.id};
            struct run_record *hit =
                L->nnodes ? bsearch(&key, L->nodes, L->nnodes, sizeof(*L->nodes), by_parent) : NULL;
            struct run_list mine = {0};
            if (hit) { /* the first of its job's: bsearch may land on any */
                while (hit > L->nodes && strcmp(hit[-1].parent_id, row->r.id) == 0)
                    hit--;
                mine.items = hit;
                while (hit + mine.n < L->nodes + L->nnodes &&
                       strcmp(hit[mine.n].parent_id, row->r.id) == 0)
                    mine.n++;
            }
            job_rollup_record(&row->r, &mine);
            row->nodes = mine.n;
            snprintf(row->status, sizeof(row->status), "%s", job_status(&row->r, &mine));
        } else {
            snprintf(row->status, sizeof(row->status), "%s", run_record_status(&row->r));
        }
        if (run_wanted(L, &row->r, row->status))
            L->rows[kept++] = *row;
        else
            run_record_release(&row->r);
    }
    L->n = kept;
}

static void rows_release(struct row_list *L)
{
    for (size_t i = 0; i < L->n; i++)
        run_record_release(&L->rows[i].r);
    free(L->rows);
    for (uint32_t i = 0; i < L->nnodes; i++)
        run_record_release(&L->nodes[i]);
    free(L->nodes);
}

enum sort_key {
    SORT_START,
    SORT_NAME,
    SORT_DURATION,
    SORT_STEPS,
    SORT_STEP_P50,
    SORT_SAMPLES,
    SORT_CPU,
    SORT_GPU,
    SORT_FINDINGS,
    SORT_EXPERIMENT,
    SORT_WORKLOAD,
    SORT_STATUS,
};

static const struct {
    const char *name;
    enum sort_key key;
    int needs_summary;
} sort_keys[] = {
    {"start", SORT_START, 0},       {"name", SORT_NAME, 0},
    {"duration", SORT_DURATION, 0}, {"steps", SORT_STEPS, 1},
    {"step_p50", SORT_STEP_P50, 1}, {"samples_per_s", SORT_SAMPLES, 1},
    {"cpu_util", SORT_CPU, 1},      {"gpu_util", SORT_GPU, 1},
    {"findings", SORT_FINDINGS, 1}, {"experiment", SORT_EXPERIMENT, 0},
    {"workload", SORT_WORKLOAD, 0}, {"status", SORT_STATUS, 0},
};

struct sort_spec {
    enum sort_key key;
    int desc;
    int needs_summary;
};

static int parse_sort(const char *s, struct sort_spec *out)
{
    *out = (struct sort_spec){SORT_START, 1, 0};
    if (!s)
        return 0;
    int desc = *s == '-';
    s += desc;
    for (size_t i = 0; i < ARRAY_SIZE(sort_keys); i++)
        if (strcmp(s, sort_keys[i].name) == 0) {
            *out = (struct sort_spec){sort_keys[i].key, desc, sort_keys[i].needs_summary};
            return 0;
        }
    return -EINVAL;
}

static double sort_value(const struct run_row *x, enum sort_key k)
{
    switch (k) {
    case SORT_START:
        return (double)x->r.start_ns;
    case SORT_DURATION:
        return run_record_duration_s(&x->r);
    case SORT_STEPS:
        return (double)x->sum.steps;
    case SORT_STEP_P50:
        return x->sum.step_p50_s;
    case SORT_SAMPLES:
        return x->sum.samples_per_s;
    case SORT_CPU:
        return x->sum.cpu_util_pct;
    case SORT_GPU:
        return x->sum.gpu_util_pct;
    case SORT_FINDINGS:
        return (double)x->sum.findings;
    case SORT_NAME:
    case SORT_EXPERIMENT:
    case SORT_WORKLOAD:
    case SORT_STATUS:
        break;
    }
    return 0;
}

/* The text a run sorts by for the keys that are text; NULL when it has none. */
static const char *sort_text(const struct run_row *x, enum sort_key k)
{
    switch (k) {
    case SORT_NAME:
        return x->r.name ? x->r.name : "";
    case SORT_EXPERIMENT:
        return x->r.experiment;
    case SORT_WORKLOAD:
        return run_record_workload(&x->r); /* as listed: a workload tag counts */
    case SORT_STATUS:
        return x->status;
    default:
        return NULL;
    }
}

static int sort_is_text(enum sort_key k)
{
    return k == SORT_NAME || k == SORT_EXPERIMENT || k == SORT_WORKLOAD || k == SORT_STATUS;
}

/* Missing figures (NaN) sort last either way; ties keep newest first. */
static int cmp_rows(const void *a, const void *b, void *arg)
{
    const struct sort_spec *sp = arg;
    const struct run_row *x = a, *y = b;
    int c;
    if (sort_is_text(sp->key)) {
        const char *u = sort_text(x, sp->key), *v = sort_text(y, sp->key);
        if (!u != !v) /* no experiment or workload: last either way */
            return !u - !v;
        c = u ? strcmp(u, v) : 0;
    } else {
        double u = sort_value(x, sp->key), v = sort_value(y, sp->key);
        if (isnan(u) || isnan(v))
            return isnan(u) - isnan(v);
        c = (u > v) - (u < v);
    }
    if (sp->desc)
        c = -c;
    if (c == 0)
        c = (x->r.start_ns < y->r.start_ns) - (x->r.start_ns > y->r.start_ns);
    return c;
}

static int fill_summary(const struct api_ctx *c, struct run_row *row)
{
    if (row->have_sum)
        return 0;
    int rc = summary_get(c->cache, c->s, &row->r, &row->sum);
    row->have_sum = rc == 0;
    return rc;
}

/* A resolved run as a row of the list: its status as shown and, for a
 * job, its node count and its figures from its nodes, with a view that
 * reads it as one run (*view, store_close() after; NULL for other runs). */
static int row_of_run(const struct api_ctx *c, struct run_row *row, struct store **view)
{
    *view = NULL;
    row->nodes = -1;
    if (!run_record_is_job(&row->r)) {
        snprintf(row->status, sizeof(row->status), "%s", run_record_status(&row->r));
        return 0;
    }
    struct run_list nodes;
    int rc = store_job_nodes(c->s, row->r.id, &nodes);
    if (rc == 0) {
        job_rollup_record(&row->r, &nodes);
        row->nodes = nodes.n;
        snprintf(row->status, sizeof(row->status), "%s", job_status(&row->r, &nodes));
        rc = store_job_view(c->s, 0, &row->r, view);
    }
    run_list_release(&nodes);
    return rc;
}

static void run_row_json(struct json_writer *jw, const struct run_row *x)
{
    const struct run_record *r = &x->r;
    struct run_record shown = *r; /* borrowed strings: never released */
    snprintf(shown.status, sizeof(shown.status), "%s", x->status);
    jw_object_begin(jw);
    run_record_json_head(jw, &shown);
    if (x->nodes >= 0)
        jw_kv_int(jw, "nodes", x->nodes);
    if (r->parent_id) {
        jw_kv_str(jw, "job", r->parent_id);
        jw_kv_str_or_null(jw, "node", r->node);
    }
    jw_key(jw, "tags");
    kv_list_json(jw, &r->tags);
    jw_key(jw, "params");
    kv_list_json(jw, &r->params);
    jw_kv_int(jw, "steps", x->sum.steps);
    jw_kv_num(jw, "step_p50_s", x->sum.step_p50_s);
    jw_kv_num(jw, "samples_per_s", x->sum.samples_per_s);
    jw_kv_num(jw, "cpu_util_pct", x->sum.cpu_util_pct);
    jw_kv_num(jw, "gpu_util_pct", x->sum.gpu_util_pct);
    jw_kv_int(jw, "findings", x->sum.findings);
    jw_end(jw);
}

static int api_runs(const struct api_ctx *c, const struct api_query *q, struct strbuf *o)
{
    struct sort_spec sp;
    long limit = RUNS_LIMIT_DEFAULT, offset = 0;
    const char *v;
    if (parse_sort(arg(q, "sort"), &sp) < 0)
        return fail(o, 400,
                    "sort: start, name, experiment, workload, status, duration, steps, "
                    "step_p50, samples_per_s, cpu_util, gpu_util or findings, '-' first for "
                    "descending");
    if ((v = arg(q, "limit")) && parse_long(v, 0, RUNS_LIMIT_MAX, &limit) < 0)
        return fail(o, 400, "limit: an integer 0..100000");
    if ((v = arg(q, "offset")) && parse_long(v, 0, 1L << 30, &offset) < 0)
        return fail(o, 400, "offset: a non-negative integer");
    if ((v = arg(q, "nodes")) && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        return fail(o, 400, "nodes: 0 or 1");
    struct row_list L = {.q = q, .with_nodes = v && v[0] == '1'};
    struct list_ctx lc = {&L, c};
    int status = 200;
    if (c->s->ops->runs_query(c->s, NULL, keep_run, &lc) < 0) {
        status = fail(o, 500, c->s->err.buf);
        goto out;
    }
    rows_finish(&L);
    /* summaries for every run only when they decide the order; else for
     * the page alone */
    for (size_t i = 0; sp.needs_summary && i < L.n; i++)
        fill_summary(c, &L.rows[i]);
    if (L.n)
        qsort_r(L.rows, L.n, sizeof(*L.rows), cmp_rows, &sp);
    size_t first = (size_t)offset < L.n ? (size_t)offset : L.n;
    size_t last = first + (size_t)limit < L.n ? first + (size_t)limit : L.n;
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_kv_uint(&jw, "total", L.n);
    jw_kv_int(&jw, "offset", offset);
    jw_kv_int(&jw, "limit", limit);
    jw_key(&jw, "runs");
    jw_array_begin(&jw); /* a run a line, the first on the opening one */
    jw_lines(&jw, "", "\n");
    for (size_t i = first; i < last; i++) {
        fill_summary(c, &L.rows[i]);
        run_row_json(&jw, &L.rows[i]);
    }
    jw_end(&jw);
    jw_end(&jw);
    jw_space(&jw, "\n");
out:
    rows_release(&L);
    return status;
}

/* ---- /api/runs/{id}/... ------------------------------------------------------------ */

static int api_run(const struct api_ctx *c, const struct run_record *r, struct strbuf *o)
{
    if (c->hooks->run_json(c->s, r, o) < 0)
        return fail(o, 500, c->s->err.buf[0] ? c->s->err.buf : "cannot read run");
    return 200;
}

static int metric_json(const struct series_record *s, void *arg)
{
    struct json_writer *jw = arg;
    jw_object_begin(jw);
    jw_kv_str_or_null(jw, "name", s->name);
    jw_kv_str_or_null(jw, "labels", s->labels);
    jw_kv_str_or_null(jw, "unit", s->unit);
    jw_kv_int(jw, "count", s->count);
    jw_kv_num(jw, "min", s->min);
    jw_kv_num(jw, "max", s->max);
    jw_kv_num(jw, "mean", s->count ? s->sum / (double)s->count : NAN);
    jw_kv_int(jw, "start_ns", s->start_ns);
    jw_kv_int(jw, "end_ns", s->end_ns);
    jw_end(jw);
    return 0;
}

static int api_metrics(const struct api_ctx *c, const struct run_record *r, struct strbuf *o)
{
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run", r->id);
    jw_key(&jw, "metrics");
    jw_array_begin(&jw); /* a series a line */
    jw_lines(&jw, "\n", "\n");
    if (c->s->ops->series_query(c->s, r->id, metric_json, &jw) < 0)
        return fail(o, 500, c->s->err.buf);
    jw_end(&jw);
    jw_end(&jw);
    jw_space(&jw, "\n");
    return 200;
}

/* from= and to= (seconds since the run's start) into absolute ns, within
 * [lo, hi] by default. */
static int parse_range(const struct api_query *q, int64_t t0, int64_t lo, int64_t hi, int64_t *from,
                       int64_t *to)
{
    double f, t;
    const char *v;
    *from = lo;
    *to = hi;
    if ((v = arg(q, "from"))) {
        if (parse_double(v, &f) < 0 || fabs(f) > 1e9)
            return -EINVAL;
        *from = t0 + (int64_t)llround(f * 1e9);
    }
    if ((v = arg(q, "to"))) {
        if (parse_double(v, &t) < 0 || fabs(t) > 1e9)
            return -EINVAL;
        *to = t0 + (int64_t)llround(t * 1e9);
    }
    return *to >= *from ? 0 : -EINVAL;
}

static int parse_points(const struct api_query *q, uint32_t *out)
{
    long n = POINTS_DEFAULT;
    const char *v = arg(q, "points");
    if (v && parse_long(v, 1, DOWNSAMPLE_MAX_BUCKETS, &n) < 0)
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

struct found_series {
    int found;
    int64_t id, start_ns, end_ns;
    char unit[64];
};

static int keep_series(const struct series_record *s, void *arg)
{
    struct found_series *f = arg;
    f->found = 1;
    f->id = s->id;
    f->start_ns = s->start_ns;
    f->end_ns = s->end_ns;
    snprintf(f->unit, sizeof(f->unit), "%s", s->unit);
    return 0;
}

static void series_arrays(struct json_writer *jw, const struct downsampler *d, int64_t t0)
{
    static const char *const names[] = {"t", "min", "max", "mean", "count"};
    for (int a = 0; a < 5; a++) {
        jw_key(jw, names[a]);
        jw_array_begin(jw);
        for (uint32_t i = 0; i < d->nbuckets; i++) {
            const struct ds_bucket *b = &d->b[i];
            if (!b->count)
                continue;
            if (a == 0)
                add_secs(jw, b->first_ns - t0);
            else if (a == 1)
                jw_num(jw, b->min);
            else if (a == 2)
                jw_num(jw, b->max);
            else if (a == 3)
                add_approx(jw, isnan(b->min) ? NAN : b->sum / (double)b->count);
            else
                jw_int(jw, b->count);
        }
        jw_end(jw);
    }
}

static int api_series(const struct api_ctx *c, const struct run_record *r,
                      const struct api_query *q, struct strbuf *o)
{
    const char *name = arg(q, "name"), *labels = arg(q, "labels");
    uint32_t points;
    if (!name)
        return fail(o, 400, "name= is required (see /api/runs/{id}/metrics)");
    if (parse_points(q, &points) < 0)
        return fail(o, 400, "points: an integer 1..16384");
    struct found_series f = {0};
    int rc = c->s->ops->series_find(c->s, r->id, name, labels ? labels : "", keep_series, &f);
    if (rc < 0 && rc != -STROBE_ENOTFOUND)
        return fail(o, 500, c->s->err.buf);
    if (!f.found)
        return fail(o, 404, "no such series in this run");
    int64_t from, to;
    if (parse_range(q, r->start_ns, f.start_ns, f.end_ns, &from, &to) < 0)
        return fail(o, 400, "from/to: seconds since the run's start, from <= to");
    struct downsampler d;
    if (downsampler_init(&d, from, to, points) < 0)
        return fail(o, 500, "out of memory");
    if (downsampler_run(&d, c->s, f.id) < 0) {
        downsampler_release(&d);
        return fail(o, 500, c->s->err.buf);
    }
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run", r->id);
    jw_kv_str(&jw, "name", name);
    jw_kv_str(&jw, "labels", labels ? labels : "");
    jw_kv_str(&jw, "unit", f.unit);
    jw_kv_int(&jw, "t0_ns", r->start_ns);
    jw_kv_int(&jw, "from_ns", from);
    jw_kv_int(&jw, "to_ns", to);
    jw_kv_int(&jw, "bucket_ns", d.bucket_ns);
    jw_kv_int(&jw, "blocks_summary", d.blocks_summary);
    jw_kv_int(&jw, "blocks_decoded", d.blocks_decoded);
    jw_kv_bool(&jw, "corrupt", d.corrupt);
    series_arrays(&jw, &d, r->start_ns);
    jw_end(&jw);
    jw_space(&jw, "\n");
    downsampler_release(&d);
    return 200;
}

/* ---- /api/runs/{id}/heatmap: a metric per node over time ------------------ */

struct heat_item {
    int64_t id;
    char *node; /* as written in its labels */
};

struct heat_pick {
    enum metric_id m;
    struct heat_item *items;
    uint32_t n, cap;
};

static int pick_heat_series(const struct series_record *s, void *arg)
{
    struct heat_pick *p = arg;
    const char *node;
    size_t len;
    if (!node_series(s->name, s->labels, p->m, &node, &len))
        return 0;
    if (array_grow((void **)&p->items, &p->cap, p->n + 1, sizeof(*p->items), 64) < 0)
        return -ENOMEM;
    p->items[p->n] = (struct heat_item){s->id, strndup(node, len)};
    return p->items[p->n++].node ? 0 : -ENOMEM;
}

/* Each node's series of the metric, downsampled onto one grid of buckets
 * (block summaries, as /series), and added up per node: one request for
 * every node, however many. */
static int heat_fill(const struct api_ctx *c, const struct run_record *r, const struct heat_pick *p,
                     struct node_heat *h, struct downsampler *d)
{
    int64_t summary = 0, decoded = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        struct downsampler one;
        if (downsampler_init(&one, d->from_ns, d->to_ns, d->nbuckets) < 0)
            return -ENOMEM;
        int rc = downsampler_run(&one, c->s, p->items[i].id);
        int row =
            rc < 0 ? rc : node_heat_row(h, p->items[i].node, strlen(p->items[i].node), r->host);
        for (uint32_t k = 0; row >= 0 && k < one.nbuckets; k++)
            if (!isnan(one.b[k].min)) /* NaN alone: a gap, no sample */
                node_heat_add(h, (uint32_t)row, k, one.b[k].sum, one.b[k].count);
        summary += one.blocks_summary;
        decoded += one.blocks_decoded;
        downsampler_release(&one);
        if (rc < 0 || row < 0)
            return rc < 0 ? rc : row;
    }
    d->blocks_summary = summary;
    d->blocks_decoded = decoded;
    return 0;
}

static int api_heatmap(const struct api_ctx *c, const struct run_record *r,
                       const struct api_query *q, struct strbuf *o)
{
    const char *name = arg(q, "name");
    int m = name ? metric_lookup(name) : -1;
    if (m < 0 || metric_is_family((enum metric_id)m) || strcmp(name, metric_name(m)) != 0)
        return fail(o, 400, "name= is required: a metric of the catalog (strobe metrics)");
    uint32_t points;
    if (parse_points(q, &points) < 0)
        return fail(o, 400, "points: an integer 1..16384");
    int64_t end = r->end_ns ? r->end_ns : r->last_ns;
    int64_t from, to;
    if (parse_range(q, r->start_ns, r->start_ns, end > r->start_ns ? end : r->start_ns, &from,
                    &to) < 0)
        return fail(o, 400, "from/to: seconds since the run's start, from <= to");
    /* no bucket finer than two samples' time: one of a sample's alone is
     * left empty wherever the sampling beat comes late */
    uint64_t least = 2 * (uint64_t)(r->interval_ns > 0 ? r->interval_ns : 0);
    if (least && (uint64_t)(to - from) / points < least)
        points = (uint32_t)((uint64_t)(to - from) / least + 1);
    struct heat_pick p = {.m = (enum metric_id)m};
    struct downsampler d = {0};
    struct node_heat h = {0};
    int status = 200;
    int rc = c->s->ops->series_query(c->s, r->id, pick_heat_series, &p);
    if (rc == 0)
        rc = downsampler_init(&d, from, to, points);
    if (rc == 0)
        rc = node_heat_init(&h, p.m, d.from_ns, d.bucket_ns, d.nbuckets);
    if (rc == 0)
        rc = heat_fill(c, r, &p, &h, &d);
    if (rc < 0) {
        status = fail(o, 500, rc == -ENOMEM ? "out of memory" : c->s->err.buf);
    } else {
        node_heat_sort(&h);
        struct json_writer jw;
        jw_init(&jw, o);
        jw_object_begin(&jw);
        jw_kv_str(&jw, "run", r->id);
        jw_kv_int(&jw, "t0_ns", r->start_ns);
        jw_kv_int(&jw, "to_ns", to);
        jw_kv_int(&jw, "blocks_summary", d.blocks_summary);
        jw_kv_int(&jw, "blocks_decoded", d.blocks_decoded);
        node_heat_json(&jw, &h, 1); /* 0.1: finer than a colour */
        jw_end(&jw);
        jw_space(&jw, "\n");
    }
    node_heat_release(&h);
    downsampler_release(&d);
    for (uint32_t i = 0; i < p.n; i++)
        free(p.items[i].node);
    free(p.items);
    return status;
}

/* Steps grouped into time buckets: per bucket the count, min/max/mean
 * duration and the mean time of each phase (one bucket per step when there
 * are few). */
struct step_bucket {
    int64_t first_ns;
    int64_t count;
    double dmin, dmax, dsum;
    double phase[PHASE_COUNT];
};

static void steps_json(struct json_writer *jw, const struct step_bucket *b, uint32_t nb, int64_t t0)
{
    static const char *const names[] = {"t", "count", "dur_min_ms", "dur_max_ms", "dur_mean_ms"};
    for (int a = 0; a < 5; a++) {
        jw_key(jw, names[a]);
        jw_array_begin(jw);
        for (uint32_t i = 0; i < nb; i++) {
            double n = (double)b[i].count;
            if (a == 0)
                add_secs(jw, b[i].first_ns - t0);
            else if (a == 1)
                jw_int(jw, b[i].count);
            else
                add_approx(jw, (a == 2 ? b[i].dmin : a == 3 ? b[i].dmax : b[i].dsum / n) / 1e6);
        }
        jw_end(jw);
    }
    jw_key(jw, "phases_ms");
    jw_object_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++) {
        jw_key(jw, phase_names[p]);
        jw_array_begin(jw);
        for (uint32_t i = 0; i < nb; i++)
            add_approx(jw, b[i].phase[p] / (double)b[i].count / 1e6);
        jw_end(jw);
    }
    jw_end(jw);
}

/* Bucket the steps starting in [from, to]; returns the bucket count. */
static uint32_t bucket_steps(const struct step_rows *rows, int64_t from, int64_t to,
                             uint32_t points, struct step_bucket *b)
{
    uint32_t in = 0;
    for (uint32_t i = 0; i < rows->n; i++)
        in += rows->r[i].start_ns >= from && rows->r[i].start_ns <= to;
    uint32_t nb = 0;
    uint64_t width = in <= points ? 0 : ((uint64_t)to - (uint64_t)from) / points + 1;
    int64_t cur = -1;
    for (uint32_t i = 0; i < rows->n; i++) {
        const struct step_row *s = &rows->r[i];
        if (s->start_ns < from || s->start_ns > to)
            continue;
        int64_t k =
            width ? (int64_t)(((uint64_t)s->start_ns - (uint64_t)from) / width) : (int64_t)i;
        if (k != cur) {
            cur = k;
            b[nb++] =
                (struct step_bucket){.first_ns = s->start_ns, .dmin = INFINITY, .dmax = -INFINITY};
        }
        struct step_bucket *x = &b[nb - 1];
        double dur = (double)(s->end_ns - s->start_ns);
        x->count++;
        x->dmin = fmin(x->dmin, dur);
        x->dmax = fmax(x->dmax, dur);
        x->dsum += dur;
        for (int p = 0; p < PHASE_COUNT; p++)
            x->phase[p] += s->phase_ns[p];
    }
    return nb;
}

static int api_steps(const struct api_ctx *c, const struct run_record *r, const struct api_query *q,
                     struct strbuf *o)
{
    uint32_t points;
    if (parse_points(q, &points) < 0)
        return fail(o, 400, "points: an integer 1..16384");
    int64_t from, to;
    if (parse_range(q, r->start_ns, INT64_MIN, INT64_MAX, &from, &to) < 0)
        return fail(o, 400, "from/to: seconds since the run's start, from <= to");
    struct step_rows rows;
    if (step_rows_load(c->s, r->id, &rows) < 0) {
        step_rows_release(&rows);
        return fail(o, 500, c->s->err.buf);
    }
    if (rows.n && from == INT64_MIN)
        from = rows.r[0].start_ns;
    if (rows.n && to == INT64_MAX)
        to = rows.r[rows.n - 1].start_ns;
    struct step_bucket *b = calloc(rows.n + 1, sizeof(*b));
    if (!b) {
        step_rows_release(&rows);
        return fail(o, 500, "out of memory");
    }
    uint32_t nb = rows.n ? bucket_steps(&rows, from, to, points, b) : 0;
    int64_t total = 0;
    for (uint32_t i = 0; i < nb; i++)
        total += b[i].count;
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run", r->id);
    jw_kv_int(&jw, "pid", rows.pid);
    jw_kv_int(&jw, "t0_ns", r->start_ns);
    jw_kv_int(&jw, "steps", total);
    jw_kv_bool(&jw, "grouped", nb < total);
    steps_json(&jw, b, nb, r->start_ns);
    jw_end(&jw);
    jw_space(&jw, "\n");
    free(b);
    step_rows_release(&rows);
    return 200;
}

static int finding_json(const struct finding_record *f, void *arg)
{
    struct json_writer *jw = arg;
    jw_object_begin(jw);
    jw_kv_str_or_null(jw, "rule", f->rule);
    jw_kv_str_or_null(jw, "severity", f->severity);
    jw_kv_str_or_null(jw, "scope", f->scope);
    jw_kv_int(jw, "start_ns", f->start_ns);
    jw_kv_int(jw, "end_ns", f->end_ns);
    jw_kv_str_or_null(jw, "evidence", f->evidence);
    jw_kv_str_or_null(jw, "events", f->events);
    jw_kv_str_or_null(jw, "recommendation", f->recommendation);
    jw_end(jw);
    return 0;
}

static int api_findings(const struct api_ctx *c, const struct run_record *r, struct strbuf *o)
{
    /* built apart: a store from before the rules has no findings table, and
     * a failed query leaves an empty list */
    struct strbuf list;
    strbuf_init(&list);
    struct json_writer lw;
    jw_init(&lw, &list);
    jw_array_begin(&lw); /* a finding a line */
    jw_lines(&lw, "\n", "\n");
    int rc = c->s->ops->findings_query(c->s, r->id, finding_json, &lw);
    jw_end(&lw);
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run", r->id);
    jw_kv_int(&jw, "t0_ns", r->start_ns);
    jw_kv_raw(&jw, "findings", rc < 0 || strbuf_failed(&list) ? "[]" : list.buf);
    jw_end(&jw);
    jw_space(&jw, "\n");
    rc = strbuf_failed(&list);
    strbuf_release(&list);
    return rc < 0 ? fail(o, 500, "out of memory") : 200;
}

/* ---- /api/runs/{id}/texts[/{kind}] --------------------------------------------------- */

struct texts_ctx {
    struct json_writer *jw;
    const char *kind; /* NULL: the list */
    int n;
};

static int text_json(const struct run_text_record *t, void *arg)
{
    struct texts_ctx *x = arg;
    if (x->kind && strcmp(t->kind, x->kind) != 0)
        return 0;
    x->n++;
    jw_object_begin(x->jw);
    jw_kv_str_or_null(x->jw, "kind", t->kind);
    jw_kv_int(x->jw, "bytes", t->bytes);
    jw_kv_uint(x->jw, "kept", t->len);
    if (x->kind) {
        /* the stored bytes may be any bytes, NUL too: a JSON string is
         * valid UTF-8 */
        jw_key(x->jw, "text");
        jw_strn(x->jw, t->data ? t->data : "", t->data ? t->len : 0);
    }
    jw_end(x->jw);
    return 0;
}

/* The texts kept with a run (stdout, stderr, packages, lscpu, nvidia-smi):
 * the list with sizes, or one of them with its text (kinds are unique). */
static int api_texts(const struct api_ctx *c, const struct run_record *r, const char *kind,
                     struct strbuf *o)
{
    struct json_writer jw;
    jw_init(&jw, o);
    struct texts_ctx x = {&jw, kind && *kind ? kind : NULL, 0};
    if (!x.kind) {
        jw_object_begin(&jw);
        jw_key(&jw, "texts");
        jw_array_begin(&jw);
    }
    if (c->s->ops->run_texts_query(c->s, r->id, text_json, &x) < 0) {
        strbuf_reset(o);
        return fail(o, 500, "cannot read the run's texts");
    }
    if (x.kind && !x.n) {
        strbuf_reset(o);
        return fail(o, 404, "no such text");
    }
    if (!x.kind) {
        jw_end(&jw);
        jw_end(&jw);
    }
    jw_space(&jw, "\n");
    return 200;
}

/* ---- /api/compare ----------------------------------------------------------------- */

struct compare_set {
    struct run_row row[COMPARE_MAX_RUNS];
    struct compare_run cmp[COMPARE_MAX_RUNS]; /* the same runs, as strobe compare loads them */
    size_t n;
};

/* Every key any run has, each with every run's value (null when absent) and
 * whether it differs from the first run's. */
static int compare_params(struct json_writer *jw, const struct compare_set *cs, int tags)
{
    const struct kv_list *lists[COMPARE_MAX_RUNS];
    for (size_t i = 0; i < cs->n; i++)
        lists[i] = tags ? &cs->row[i].r.tags : &cs->row[i].r.params;
    const char **keys = NULL;
    uint32_t nkeys = 0;
    if (compare_kv_keys(lists, (uint32_t)cs->n, &keys, &nkeys) < 0)
        return -ENOMEM;
    jw_key(jw, tags ? "tags" : "params");
    jw_array_begin(jw); /* a key a line */
    jw_lines(jw, "\n", "\n");
    for (uint32_t k = 0; k < nkeys; k++) {
        jw_object_begin(jw);
        jw_kv_str_or_null(jw, "key", keys[k]);
        jw_key(jw, "values");
        jw_array_begin(jw);
        for (size_t j = 0; j < cs->n; j++)
            jw_str_or_null(jw, kv_list_get(lists[j], keys[k]));
        jw_end(jw);
        jw_kv_bool(jw, "differs", compare_kv_differs(lists, (uint32_t)cs->n, keys[k]));
        jw_end(jw);
    }
    jw_end(jw);
    free(keys);
    return 0;
}

static double summary_field(const struct run_row *x, int k)
{
    switch (k) {
    case 0:
        return run_record_duration_s(&x->r);
    case 1:
        return (double)x->sum.steps;
    case 2:
        return x->sum.step_p50_s;
    case 3:
        return x->sum.samples_per_s;
    case 4:
        return x->sum.cpu_util_pct;
    case 5:
        return x->sum.gpu_util_pct;
    default:
        return (double)x->sum.findings;
    }
}

static void compare_summary(struct json_writer *jw, const struct compare_set *cs)
{
    static const char *const keys[] = {"duration_s",    "steps",        "step_p50_s",
                                       "samples_per_s", "cpu_util_pct", "gpu_util_pct",
                                       "findings"};
    jw_key(jw, "summary");
    jw_array_begin(jw); /* a figure a line */
    jw_lines(jw, "\n", "\n");
    for (int k = 0; k < 7; k++) {
        jw_object_begin(jw);
        jw_kv_str(jw, "key", keys[k]);
        jw_key(jw, "values");
        jw_array_begin(jw);
        for (size_t j = 0; j < cs->n; j++)
            jw_num(jw, summary_field(&cs->row[j], k));
        jw_end(jw);
        /* change against the first run, in percent */
        jw_key(jw, "delta_pct");
        jw_array_begin(jw);
        double base = summary_field(&cs->row[0], k);
        for (size_t j = 0; j < cs->n; j++) {
            double v = summary_field(&cs->row[j], k);
            add_approx(jw, base != 0 ? (v - base) / fabs(base) * 100.0 : NAN);
        }
        jw_end(jw);
        jw_end(jw);
    }
    jw_end(jw);
}

static int compare_seen(const struct compare_set *cs, const char *id)
{
    for (size_t i = 0; i < cs->n; i++)
        if (strcmp(cs->row[i].r.id, id) == 0)
            return 1;
    return 0;
}

struct compare_loading {
    const struct api_ctx *c;
    struct compare_set *cs;
    int with_analysis;
    struct strbuf *o;
};

/* One item of runs=, resolved and loaded; 0 or an HTTP status. */
static int compare_load_one(const char *item, size_t len, void *arg)
{
    const struct compare_loading *l = arg;
    const struct api_ctx *c = l->c;
    struct compare_set *cs = l->cs;
    struct strbuf *o = l->o;
    char ref[REF_MAX];
    if (cs->n == COMPARE_MAX_RUNS)
        return fail(o, 400, "runs: at most 16");
    if (len == 0 || len >= sizeof(ref))
        return fail(o, 400, "runs: a comma list of run ids or names");
    memcpy(ref, item, len);
    ref[len] = '\0';
    int status = 0;
    if (resolve(c, ref, &cs->row[cs->n].r, o, &status) < 0)
        return status;
    if (compare_seen(cs, cs->row[cs->n].r.id)) {
        run_record_release(&cs->row[cs->n].r);
        return fail(o, 400, "runs: a run is given twice; compare wants different runs");
    }
    struct run_row *row = &cs->row[cs->n];
    struct store *view = NULL;
    if (row_of_run(c, row, &view) < 0) {
        run_record_release(&row->r);
        return fail(o, 500, "cannot read a run to compare");
    }
    fill_summary(c, row);
    if (l->with_analysis && compare_run_load(view ? view : c->s, &row->r, &cs->cmp[cs->n]) < 0) {
        store_close(view);
        run_record_release(&row->r);
        compare_run_release(&cs->cmp[cs->n]);
        return fail(o, 500, "cannot read a run to compare");
    }
    store_close(view);
    cs->n++;
    return 0;
}

/* Split runs=a,b,c and resolve each; 0 or an HTTP status. */
static int compare_load(const struct api_ctx *c, const char *list, struct compare_set *cs,
                        int with_analysis, struct strbuf *o)
{
    struct compare_loading l = {c, cs, with_analysis, o};
    int status = strlist_each(list, compare_load_one, &l);
    if (status)
        return status;
    return cs->n ? 0 : fail(o, 400, "runs= is required: a comma list of run ids or names");
}

static int api_compare(const struct api_ctx *c, const struct api_query *q, struct strbuf *o)
{
    struct compare_set *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return fail(o, 500, "out of memory");
    const char *list = arg(q, "runs"), *an = arg(q, "analysis");
    if (an && strcmp(an, "0") != 0 && strcmp(an, "1") != 0) {
        free(cs);
        return fail(o, 400, "analysis: 0 or 1");
    }
    /* the analysis reads every point of the runs' main series (percentiles):
     * a long run's takes a while, so a page can ask for the rest first */
    int with_analysis = !an || an[0] == '1';
    int status = compare_load(c, list ? list : "", cs, with_analysis, o);
    if (status == 0) {
        struct json_writer jw;
        jw_init(&jw, o);
        jw_object_begin(&jw);
        jw_key(&jw, "runs");
        jw_array_begin(&jw); /* a run a line, the first on the opening one */
        jw_lines(&jw, "", "\n");
        for (size_t i = 0; i < cs->n; i++)
            run_row_json(&jw, &cs->row[i]);
        jw_end(&jw);
        if (compare_params(&jw, cs, 0) < 0 || compare_params(&jw, cs, 1) < 0) {
            strbuf_reset(o);
            status = fail(o, 500, "out of memory");
        } else {
            compare_summary(&jw, cs);
            if (with_analysis) {
                jw_key(&jw, "analysis");
                compare_json(&jw, cs->cmp, (uint32_t)cs->n);
            }
            jw_end(&jw);
            jw_space(&jw, "\n");
            status = 200;
        }
    }
    for (size_t i = 0; i < cs->n; i++) {
        run_record_release(&cs->row[i].r);
        compare_run_release(&cs->cmp[i]);
    }
    free(cs);
    return status;
}

/* ---- /api/campaigns, /api/campaigns/{name} ------------------------------------------- */

/* A campaign of the list: what its row and state say, without its runs. */
static int campaign_row_json(const struct campaign_record *c, void *arg)
{
    struct json_writer *jw = arg;
    struct campaign_state st = {0};
    int rc = campaign_state_of_record(c, &st);
    if (rc == -ENOMEM) {
        campaign_state_release(&st);
        return rc;
    }
    jw_object_begin(jw);
    jw_kv_str_or_null(jw, "name", c->name);
    jw_kv_str_or_null(jw, "file", c->file);
    jw_kv_str_or_null(jw, "spec_hash", c->spec_hash);
    jw_kv_int(jw, "created_ns", c->created_ns);
    jw_kv_int(jw, "updated_ns", c->updated_ns);
    if (rc == 0) {
        struct sweep_progress p;
        sweep_progress_of(&st, &p);
        jw_kv_bool(jw, "running", p.owner == PROCID_ALIVE);
        sweep_progress_json(jw, &st, &p);
    } else { /* listed all the same: strobe sweep status names the trouble */
        jw_kv_bool(jw, "running", 0);
        jw_kv_null(jw, "status");
        jw_kv_null(jw, "done");
        jw_kv_null(jw, "total");
        jw_key(jw, "running_workloads");
        jw_array_begin(jw);
        jw_end(jw);
        jw_kv_str(jw, "error", "its state does not parse");
    }
    jw_end(jw);
    campaign_state_release(&st);
    return 0;
}

static int api_campaigns(const struct api_ctx *c, struct strbuf *o)
{
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    jw_key(&jw, "campaigns");
    jw_array_begin(&jw); /* a campaign a line */
    jw_lines(&jw, "\n", "\n");
    int rc = c->s->ops->campaigns_query(c->s, campaign_row_json, &jw);
    if (rc < 0) {
        strbuf_reset(o);
        return fail(o, 500, rc == -ENOMEM ? "out of memory" : c->s->err.buf);
    }
    jw_end(&jw);
    jw_end(&jw);
    jw_space(&jw, "\n");
    return 200;
}

/* What strobe sweep status --json prints for the campaign, and what the
 * page needs besides (sweep_results_json's extended keys). */
static int api_campaign(const struct api_ctx *c, const char *name, struct strbuf *o)
{
    struct campaign_state st = {0};
    int rc = *name ? campaign_state_load(c->s, name, &st) : -STROBE_ENOTFOUND;
    int status = 200;
    struct sweep_results res = {0};
    if (rc == -STROBE_ENOTFOUND)
        status = fail(o, 404, "no such campaign");
    else if (rc == -EBADMSG)
        status = fail(o, 500, "the campaign's state does not parse");
    else if (rc < 0)
        status = fail(o, 500, rc == -ENOMEM ? "out of memory" : c->s->err.buf);
    else if (sweep_results_load(c->s, c->cache, &st, &res) < 0)
        status = fail(o, 500, "out of memory");
    if (status == 200) {
        struct json_writer jw;
        jw_init(&jw, o);
        sweep_results_json(&jw, &st, &res, 1);
        jw_space(&jw, "\n");
    }
    sweep_results_release(&res);
    campaign_state_release(&st);
    return status;
}

/* ---- /api/runs/ID/flame ---------------------------------------------------------------- */

/* steps=A-B: the training steps A to B, 1 <= A <= B. */
static int parse_steps(const char *v, uint32_t *from, uint32_t *to)
{
    const char *dash = strchr(v, '-');
    char a[16];
    long lo, hi;
    if (!dash || (size_t)(dash - v) >= sizeof(a))
        return -EINVAL;
    memcpy(a, v, (size_t)(dash - v));
    a[dash - v] = '\0';
    if (parse_long(a, 1, UINT32_MAX, &lo) < 0 || parse_long(dash + 1, lo, UINT32_MAX, &hi) < 0)
        return -EINVAL;
    *from = (uint32_t)lo;
    *to = (uint32_t)hi;
    return 0;
}

/* The flame data of the run's Python samples (pyprof/view.h), filtered by
 * role=, phase=, steps=A-B and idle=1 as strobe flame is; the counts hold
 * every state, so the page filters them itself. A running run's samples
 * are those committed so far. */
static int api_flame(const struct api_ctx *c, const struct run_record *r, const struct api_query *q,
                     struct strbuf *o)
{
    struct py_view_filter f = {.role = arg(q, "role"), .phase = -1};
    const char *phase = arg(q, "phase"), *steps = arg(q, "steps"), *idle = arg(q, "idle");
    if (f.role && !*f.role)
        f.role = NULL;
    if (phase && *phase && (f.phase = py_phase_parse(phase)) < 0)
        return fail(o, 400,
                    "phase: one of data, forward, backward, optimizer, comm, other, none, eval");
    if (steps && *steps && parse_steps(steps, &f.step_from, &f.step_to) < 0)
        return fail(o, 400, "steps: A-B, training steps 1 <= A <= B");
    if (idle && strcmp(idle, "0") != 0 && strcmp(idle, "1") != 0)
        return fail(o, 400, "idle: 0 or 1");
    f.idle = idle && strcmp(idle, "1") == 0;
    struct py_run pr;
    struct py_view v;
    struct strbuf err;
    strbuf_init(&err);
    memset(&v, 0, sizeof(v));
    int status = 200;
    if (py_run_load(c->s, r, 1, &pr, &err) < 0)
        status = fail(o, 500, err.buf);
    else if (py_view_build(&v, pr.src, pr.nprofs, &pr.ev, &f) < 0 ||
             py_view_json(&v, r->id, &f, o) < 0)
        status = fail(o, 500, "out of memory");
    else
        strbuf_addch(o, '\n');
    py_view_release(&v);
    py_run_release(&pr);
    strbuf_release(&err);
    return status;
}

/* ---- routing ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(const struct api_ctx *c, const struct run_record *r, const struct api_query *q,
              struct strbuf *o);
} run_views[] = {
    {"series", api_series},
    {"steps", api_steps},
    {"heatmap", api_heatmap},
    {"flame", api_flame},
};

static int run_endpoint(const struct api_ctx *c, const char *rest, const struct api_query *q,
                        struct strbuf *o)
{
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *view = slash ? slash + 1 : "";
    char ref[REF_MAX];
    if (len == 0 || len >= sizeof(ref))
        return fail(o, 404, "no such run");
    memcpy(ref, rest, len);
    ref[len] = '\0';
    struct run_record r;
    int status = 404;
    if (resolve(c, ref, &r, o, &status) < 0)
        return status;
    /* a job of many nodes reads as one run (store/job.h), as in the CLI */
    struct store *job = NULL;
    struct api_ctx jc = *c;
    if (run_record_is_job(&r)) {
        if (store_job_view(c->s, 0, &r, &job) < 0) {
            run_record_release(&r);
            return fail(o, 500, c->s->err.buf[0] ? c->s->err.buf : "cannot read the job's nodes");
        }
        jc.s = job;
        c = &jc;
    }
    if (!*view)
        status = api_run(c, &r, o);
    else if (strcmp(view, "metrics") == 0)
        status = api_metrics(c, &r, o);
    else if (strcmp(view, "findings") == 0)
        status = api_findings(c, &r, o);
    else if (strcmp(view, "texts") == 0)
        status = api_texts(c, &r, NULL, o);
    else if (strncmp(view, "texts/", 6) == 0)
        status = api_texts(c, &r, view + 6, o);
    else {
        status = fail(o, 404, "no such endpoint");
        for (size_t i = 0; i < ARRAY_SIZE(run_views); i++)
            if (strcmp(view, run_views[i].name) == 0) {
                strbuf_reset(o);
                status = run_views[i].fn(c, &r, q, o);
            }
    }
    store_close(job);
    run_record_release(&r);
    return status;
}

int api_handle(const struct api_ctx *c, const char *path, const struct api_query *q,
               struct strbuf *body)
{
    if (strcmp(path, "/api/runs") == 0)
        return api_runs(c, q, body);
    if (strncmp(path, "/api/runs/", 10) == 0)
        return run_endpoint(c, path + 10, q, body);
    if (strcmp(path, "/api/compare") == 0)
        return api_compare(c, q, body);
    if (strcmp(path, "/api/campaigns") == 0)
        return api_campaigns(c, body);
    /* the rest is the name, '/' and all (libmicrohttpd has decoded it) */
    if (strncmp(path, "/api/campaigns/", 15) == 0)
        return api_campaign(c, path + 15, body);
    return fail(body, 404, "no such endpoint");
}
