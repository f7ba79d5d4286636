#include "store/points.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double pct)
{
    size_t rank = (size_t)ceil(pct / 100.0 * (double)n);
    return v[rank ? rank - 1 : 0];
}

int points_stats(const struct point_buf *b, int64_t first_dt_ns, struct point_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->min = out->max = out->mean = out->p50 = out->p95 = NAN;
    double *v = malloc((b->n ? b->n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < b->n; i++) {
        double x = b->p[i].value;
        if (isnan(x))
            continue;
        v[n++] = x;
        sum += x;
        int64_t dt = i > 0 ? b->p[i].ts_ns - b->p[i - 1].ts_ns : first_dt_ns;
        out->integral += x * (double)dt / 1e9;
    }
    out->count = n;
    if (n) {
        qsort(v, n, sizeof(*v), cmp_double);
        out->min = v[0];
        out->max = v[n - 1];
        out->mean = sum / (double)n;
        out->p50 = percentile(v, n, 50);
        out->p95 = percentile(v, n, 95);
    }
    free(v);
    return 0;
}
