/* Reading a series back: decode its blocks into an array of points. */
#ifndef STROBE_STORE_POINTS_H
#define STROBE_STORE_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct point {
    int64_t ts_ns;
    double value;
};

struct point_buf {
    struct point *p;
    size_t n;
    size_t cap;
    uint64_t corrupt_blocks; /* blocks that did not decode (skipped, counted) */
};

void point_buf_init(struct point_buf *b);
void point_buf_release(struct point_buf *b);

/* Append every point of series_id to b, in time order. */
int store_read_points(struct store *s, int64_t series_id, struct point_buf *b);

/* Every point of series_id in time order, a block at a time: fn gets each
 * block's points, decoded into one scratch buffer, so what a reader that
 * only passes points on (export) holds is one block, not the series (a
 * day at 1 kHz is 86 M points, 1.4 GB as an array). A damaged block is
 * skipped and counted in *corrupt_blocks. fn returning nonzero stops: a
 * negative value is returned, a positive one is a stop asked for (0). */
typedef int points_fn(const struct point *p, size_t n, void *arg);
int store_each_block_points(struct store *s, int64_t series_id, points_fn *fn, void *arg,
                            uint64_t *corrupt_blocks);

/* Summary statistics of a set of values (NaN skipped). */
struct point_stats {
    size_t count; /* non-NaN values */
    double min, max, mean, p50, p95;
    double integral; /* sum of value x time since the previous point, in value-seconds */
};

/* Computes stats; sorts a scratch copy for the percentiles (nearest rank).
 * first_dt_ns is the time the first point covers: a rate's first point is
 * the change since the run's baseline frame, one interval before it. */
int points_stats(const struct point_buf *b, int64_t first_dt_ns, struct point_stats *out);

/* A series' statistics read a block at a time, holding only its non-NaN
 * values for the percentiles (8 B each), where the points and a copy of
 * their values took 24 B: show of a day at 1 kHz held 2 GB a series. */
struct series_summary {
    struct point_stats st;
    size_t points;           /* every point, NaN included */
    double last;             /* the last point's value; NaN when none */
    uint64_t corrupt_blocks; /* blocks that did not decode (skipped, counted) */
};
int store_series_stats(struct store *s, int64_t series_id, int64_t first_dt_ns,
                       struct series_summary *out);

#endif
