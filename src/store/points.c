#include "store/points.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/select.h"

void point_buf_init(struct point_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void point_buf_release(struct point_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Room for need items of size bytes in *items, doubling from 1024 (size_t
 * counts: common/array.h's are 32-bit, and a day at 1 kHz is 86 M points). */
static int reserve(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *p = realloc(*items, c * size);
    if (!p)
        return -ENOMEM;
    *items = p;
    *cap = c;
    return 0;
}

static int point_buf_reserve(struct point_buf *b, size_t extra)
{
    return reserve((void **)&b->p, &b->cap, b->n + extra, sizeof(*b->p));
}

static int decode_block(const struct block_record *blk, void *arg)
{
    struct point_buf *b = arg;
    if (point_buf_reserve(b, blk->st.count) < 0)
        return -ENOMEM;
    struct block_dec d;
    block_dec_init(&d, blk->data, blk->len, blk->st.count, blk->st.start_ns);
    size_t start = b->n;
    int64_t ts;
    double v;
    int rc;
    while ((rc = block_dec_next(&d, &ts, &v)) == 1) {
        b->p[b->n].ts_ns = ts;
        b->p[b->n].value = v;
        b->n++;
    }
    if (rc < 0) { /* a damaged block: keep the rest of the series readable */
        b->n = start;
        b->corrupt_blocks++;
    }
    return 0;
}

int store_read_points(struct store *s, int64_t series_id, struct point_buf *b)
{
    return s->ops->blocks_query(s, series_id, decode_block, b);
}

struct block_points {
    struct point_buf scratch; /* one block's points, reused */
    points_fn *fn;
    void *arg;
};

static int pass_block_points(const struct block_record *blk, void *arg)
{
    struct block_points *bp = arg;
    bp->scratch.n = 0;
    int rc = decode_block(blk, &bp->scratch);
    if (rc == 0 && bp->scratch.n)
        rc = bp->fn(bp->scratch.p, bp->scratch.n, bp->arg);
    return rc;
}

int store_each_block_points(struct store *s, int64_t series_id, points_fn *fn, void *arg,
                            uint64_t *corrupt_blocks)
{
    struct block_points bp = {.fn = fn, .arg = arg};
    point_buf_init(&bp.scratch);
    int rc = s->ops->blocks_query(s, series_id, pass_block_points, &bp);
    if (corrupt_blocks)
        *corrupt_blocks = bp.scratch.corrupt_blocks;
    point_buf_release(&bp.scratch);
    return rc;
}

/* The nearest-rank index of pct in n sorted values. */
static size_t percentile_rank(size_t n, double pct)
{
    size_t rank = (size_t)ceil(pct / 100.0 * (double)n);
    return rank ? rank - 1 : 0;
}

/* points_stats' running part, a point at a time: the non-NaN values kept
 * for the percentiles (8 B each), the rest summed as they pass. */
struct stats_acc {
    double *v;
    size_t n, cap;
    size_t points; /* every point, NaN included */
    int64_t prev_ts, first_dt_ns;
    double sum, lo, hi, integral, last;
};

static void stats_acc_init(struct stats_acc *a, int64_t first_dt_ns)
{
    memset(a, 0, sizeof(*a));
    a->first_dt_ns = first_dt_ns;
    a->lo = INFINITY;
    a->hi = -INFINITY;
    a->last = NAN;
}

static int stats_acc_add(struct stats_acc *a, const struct point *p, size_t n)
{
    if (reserve((void **)&a->v, &a->cap, a->n + n, sizeof(*a->v)) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        double x = p[i].value;
        int64_t dt = a->points ? p[i].ts_ns - a->prev_ts : a->first_dt_ns;
        a->points++;
        a->prev_ts = p[i].ts_ns;
        a->last = x;
        if (isnan(x))
            continue;
        a->v[a->n++] = x;
        a->sum += x;
        a->lo = x < a->lo ? x : a->lo;
        a->hi = x > a->hi ? x : a->hi;
        a->integral += x * (double)dt / 1e9;
    }
    return 0;
}

/* The statistics; the kept values are reordered (a selection, not a sort) and freed. */
static void stats_acc_finish(struct stats_acc *a, struct point_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->min = out->max = out->mean = out->p50 = out->p95 = NAN;
    out->count = a->n;
    out->integral = a->integral;
    if (a->n) {
        size_t n = a->n, k50 = percentile_rank(n, 50), k95 = percentile_rank(n, 95);
        out->min = a->lo;
        out->max = a->hi;
        out->mean = a->sum / (double)n;
        select_kth(a->v, 0, n, k50);
        out->p50 = a->v[k50];
        /* everything past k50 is no smaller: p95 is among them */
        if (k95 > k50)
            select_kth(a->v, k50 + 1, n, k95);
        out->p95 = a->v[k95];
    }
    free(a->v);
    a->v = NULL;
}

int points_stats(const struct point_buf *b, int64_t first_dt_ns, struct point_stats *out)
{
    struct stats_acc a;
    stats_acc_init(&a, first_dt_ns);
    int rc = stats_acc_add(&a, b->p, b->n);
    stats_acc_finish(&a, out);
    return rc;
}

static int add_block_to_stats(const struct point *p, size_t n, void *arg)
{
    return stats_acc_add(arg, p, n);
}

int store_series_stats(struct store *s, int64_t series_id, int64_t first_dt_ns,
                       struct series_summary *out)
{
    struct stats_acc a;
    stats_acc_init(&a, first_dt_ns);
    int rc = store_each_block_points(s, series_id, add_block_to_stats, &a, &out->corrupt_blocks);
    out->points = a.points;
    out->last = a.last;
    stats_acc_finish(&a, &out->st);
    return rc;
}
