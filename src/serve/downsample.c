#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "serve/downsample.h"

int downsampler_init(struct downsampler *d, int64_t from_ns, int64_t to_ns, uint32_t nbuckets)
{
    *d = (struct downsampler){.from_ns = from_ns, .to_ns = to_ns};
    if (to_ns < from_ns || nbuckets == 0 || nbuckets > DOWNSAMPLE_MAX_BUCKETS)
        return -EINVAL;
    /* the span in unsigned arithmetic: to - from can exceed INT64_MAX */
    uint64_t span = (uint64_t)to_ns - (uint64_t)from_ns;
    uint64_t width = span / nbuckets + 1; /* ceil((span + 1) / n) without overflow */
    if (width > (uint64_t)INT64_MAX)
        return -EINVAL;
    d->bucket_ns = (int64_t)width;
    d->nbuckets = (uint32_t)(span / width + 1);
    d->b = malloc(d->nbuckets * sizeof(*d->b));
    if (!d->b)
        return -ENOMEM;
    for (uint32_t i = 0; i < d->nbuckets; i++)
        d->b[i] = (struct ds_bucket){0, NAN, NAN, 0.0, INT64_MAX};
    return 0;
}

void downsampler_release(struct downsampler *d)
{
    free(d->b);
    d->b = NULL;
    d->nbuckets = 0;
}

static uint32_t bucket_of(const struct downsampler *d, int64_t t)
{
    return (uint32_t)(((uint64_t)t - (uint64_t)d->from_ns) / (uint64_t)d->bucket_ns);
}

static int overlaps(const struct downsampler *d, const struct block_stats *st)
{
    return st->count > 0 && st->end_ns >= d->from_ns && st->start_ns <= d->to_ns;
}

static int inside_one_bucket(const struct downsampler *d, const struct block_stats *st)
{
    return st->start_ns >= d->from_ns && st->end_ns <= d->to_ns &&
           bucket_of(d, st->start_ns) == bucket_of(d, st->end_ns);
}

int downsampler_wants_data(const struct downsampler *d, const struct block_stats *st)
{
    return overlaps(d, st) && !inside_one_bucket(d, st);
}

/* fmin/fmax ignore a NaN operand, which is the summaries' rule too. The sum
 * leaves NaN samples out already (the header's, and add_decoded's 0); a NaN
 * sum is +inf and -inf met, and stays NaN, as decoding gives. */
static void bucket_merge(struct ds_bucket *b, int64_t first_ns, int64_t count, double min,
                         double max, double sum)
{
    if (first_ns < b->first_ns)
        b->first_ns = first_ns;
    b->count += count;
    b->min = fmin(b->min, min);
    b->max = fmax(b->max, max);
    b->sum += sum;
}

static void add_decoded(struct downsampler *d, const struct block_stats *st, const uint8_t *data,
                        size_t len)
{
    struct block_dec dec;
    block_dec_init(&dec, data, len, st->count, st->start_ns);
    int64_t t;
    double v;
    int rc;
    while ((rc = block_dec_next(&dec, &t, &v)) == 1) {
        if (t < d->from_ns)
            continue;
        if (t > d->to_ns)
            break; /* points are in time order */
        bucket_merge(&d->b[bucket_of(d, t)], t, 1, v, v, isnan(v) ? 0.0 : v);
    }
    if (rc < 0)
        d->corrupt = 1;
    d->blocks_decoded++;
}

void downsampler_add_block(struct downsampler *d, const struct block_stats *st, const uint8_t *data,
                           size_t len)
{
    if (!overlaps(d, st))
        return;
    if (inside_one_bucket(d, st)) {
        bucket_merge(&d->b[bucket_of(d, st->start_ns)], st->start_ns, st->count, st->min, st->max,
                     st->sum);
        d->blocks_summary++;
    } else if (data) {
        add_decoded(d, st, data, len);
    } else {
        d->corrupt = 1; /* asked for data the store did not give */
    }
}

static int want_cb(const struct block_stats *st, void *arg)
{
    return downsampler_wants_data(arg, st);
}

static int block_cb(const struct block_record *b, void *arg)
{
    downsampler_add_block(arg, &b->st, b->data, b->len);
    return 0;
}

int downsampler_run(struct downsampler *d, struct store *s, int64_t series_id)
{
    return s->ops->blocks_range_query(s, series_id, d->from_ns, d->to_ns, want_cb, block_cb, d);
}
