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

#endif
