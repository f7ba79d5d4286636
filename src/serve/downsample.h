/*
 * Server-side downsampling of one series into about N time buckets (one per
 * pixel of a chart), each with its point count, min, max and sum.
 *
 * Blocks carry count/min/max/sum in their summary (codec/gorilla.h), so a
 * block lying wholly inside one bucket is added from its summary and never
 * decoded; only blocks that straddle a bucket edge or an end of the range
 * are decoded point by point. On a long series nearly every block is of the
 * first kind, which is what keeps a 10 M-sample query within a frame.
 *
 * Mean: sum / count. Block summaries leave NaN points (gaps) out of min, max
 * and sum but count them, and decoded points are treated the same way, so a
 * bucket's figures never depend on whether it was decoded.
 *
 * Ownership: struct downsampler is caller-owned (_init/_release); its bucket
 * array is heap memory freed by downsampler_release().
 */
#ifndef STROBE_SERVE_DOWNSAMPLE_H
#define STROBE_SERVE_DOWNSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/gorilla.h"
#include "store/store.h"

/* Most buckets one query may ask for (a wide 8K screen, twice over). */
#define DOWNSAMPLE_MAX_BUCKETS 16384

struct ds_bucket {
    int64_t count;    /* points in the bucket, NaN ones included */
    double min;       /* smallest non-NaN value; NaN when none */
    double max;       /* largest non-NaN value; NaN when none */
    double sum;       /* sum of non-NaN values */
    int64_t first_ns; /* time of its first point (exact for a bucket of one) */
};

struct downsampler {
    int64_t from_ns, to_ns; /* the range, both ends included */
    int64_t bucket_ns;      /* width of every bucket; bucket i starts at from_ns + i * bucket_ns */
    uint32_t nbuckets;
    struct ds_bucket *b;
    int64_t blocks_summary; /* blocks taken from their summary alone */
    int64_t blocks_decoded; /* blocks decoded point by point */
    int corrupt;            /* a block did not decode; its points are missing */
};

/*
 * Buckets of equal width covering [from_ns, to_ns] (to_ns >= from_ns), at
 * most nbuckets of them (1..DOWNSAMPLE_MAX_BUCKETS). 0, -EINVAL, -ENOMEM.
 */
int downsampler_init(struct downsampler *d, int64_t from_ns, int64_t to_ns, uint32_t nbuckets);
void downsampler_release(struct downsampler *d);

/* Whether a block with this summary must be decoded (it overlaps the range
 * but is not wholly inside one bucket). */
int downsampler_wants_data(const struct downsampler *d, const struct block_stats *st);

/* Add one block: from its summary when it lies inside one bucket, else by
 * decoding data[0..len) (which must then be given). Blocks outside the range
 * add nothing. */
void downsampler_add_block(struct downsampler *d, const struct block_stats *st, const uint8_t *data,
                           size_t len);

/* Feed every block of series_id overlapping the range through the store. */
int downsampler_run(struct downsampler *d, struct store *s, int64_t series_id);

#endif
