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

static int point_buf_reserve(struct point_buf *b, size_t extra)
{
    if (b->n + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra)
        cap *= 2;
    struct point *p = realloc(b->p, cap * sizeof(*p));
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int decode_block(const struct block_record *blk, void *arg)
{
    struct point_buf *b = arg;
    if (point_buf_reserve(b, blk->st.count) < 0)
        return -ENOMEM;
    struct block_dec d;
    block_dec_init(&d, blk->data, blk->len, blk->st.count);
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

int points_stats(const struct point_buf *b, int64_t first_dt_ns, struct point_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->min = out->max = out->mean = out->p50 = out->p95 = NAN;
    double *v = malloc((b->n ? b->n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < b->n; i++) {
        double x = b->p[i].value;
        if (isnan(x))
            continue;
        v[n++] = x;
        sum += x;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        int64_t dt = i > 0 ? b->p[i].ts_ns - b->p[i - 1].ts_ns : first_dt_ns;
        out->integral += x * (double)dt / 1e9;
    }
    out->count = n;
    if (n) {
        out->min = lo;
        out->max = hi;
        out->mean = sum / (double)n;
        size_t k50 = percentile_rank(n, 50), k95 = percentile_rank(n, 95);
        select_kth(v, 0, n, k50);
        out->p50 = v[k50];
        /* everything past k50 is no smaller: p95 is among them */
        if (k95 > k50)
            select_kth(v, k50 + 1, n, k95);
        out->p95 = v[k95];
    }
    free(v);
    return 0;
}
