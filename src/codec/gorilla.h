/*
 * Compression of one time series block. Timestamps are delta-of-delta coded
 * as in Gorilla (Pelkonen et al., VLDB 2015). Values take one of two forms:
 *
 * - Format 2, written now: most readings are integers in disguise (bytes
 *   in pages, percent with 1/64 steps, watts with three decimals), so a
 *   value that is an exact integer k times a decimal or binary scale is
 *   coded as k's residual from a prediction (the last value, or the line
 *   through the last two), in an adaptive Rice code (as LOCO-I's). Values
 *   no scale fits (arbitrary doubles, NaN, -0.0) fall back to Gorilla's
 *   XOR of the bit patterns. It is lossless: every value round-trips to
 *   the same 64 bits.
 * - Format 1, the first stores': Gorilla alone, XOR for every value.
 *
 * Both decode; the reader tells them apart with the block's start time
 * (see block_dec_init).
 *
 * A block carries its summary (count, min, max, sum, first, last, time range)
 * outside the bit stream, so summaries and downsampled views read the summary
 * and never decode. The stream layout is documented in docs/store-format.md.
 *
 * Ownership: the encoder writes into a caller-owned buffer of fixed capacity;
 * it never allocates. A block can be snapshot at any point: the first
 * block_enc_size() bytes of the buffer plus stats.count decode to exactly the
 * points appended so far.
 */
#ifndef STROBE_CODEC_GORILLA_H
#define STROBE_CODEC_GORILLA_H

#include <stddef.h>
#include <stdint.h>

/* Upper bound of the bits one appended point can take; append refuses a point
 * (-ENOSPC) unless this much room is left, so a block never overflows. */
#define GORILLA_MAX_POINT_BITS 240

struct block_stats {
    uint32_t count;   /* points in the block */
    int64_t start_ns; /* time of the first point */
    int64_t end_ns;   /* time of the last point */
    double min;       /* smallest non-NaN value; NaN when all are NaN */
    double max;       /* largest non-NaN value; NaN when all are NaN */
    double sum;       /* sum of non-NaN values (may be ±Inf) */
    double first;     /* first value, bit-exact */
    double last;      /* last value, bit-exact */
};

/* Format 2's state for scaled values; the encoder and the decoder update it
 * alike, point by point. */
struct scaled_model {
    uint8_t mode;  /* 0: XOR; else the scale (docs/store-format.md) */
    uint8_t hist;  /* how many of k1, k2 hold values in this mode (0..2) */
    uint8_t last;  /* the last scale used in this block, 0 for none (encoder) */
    int64_t k1;    /* the previous value as an integer of the scale */
    int64_t k2;    /* the one before it */
    uint64_t sum1; /* Rice statistics: residuals against k1, zigzagged... */
    uint64_t sum2; /* ...and against the line through k2 and k1 */
    uint32_t n;    /* residuals summed (halved at 64) */
};

struct block_enc {
    uint8_t *buf;           /* caller-owned output buffer */
    size_t cap;             /* its capacity in bytes */
    size_t bits;            /* bits written so far */
    int64_t prev_ts;        /* timestamp of the previous point */
    int64_t prev_delta;     /* previous timestamp delta */
    uint64_t prev_value;    /* bits of the previous value */
    unsigned prev_lead;     /* leading zeros of the previous XOR window */
    unsigned prev_trail;    /* trailing zeros of the previous XOR window */
    uint8_t format;         /* 1 or 2; 0 until the first point, or legacy */
    uint8_t legacy;         /* write format 1 whatever the start */
    uint8_t search_skip;    /* XOR mode: values left before the next scale search */
    uint8_t search_backoff; /* the skip after the last failed search */
    struct scaled_model sm;
    struct block_stats st; /* summary of what was appended */
};

/* Start an empty block writing into buf[0..cap). buf is zeroed as needed.
 * It writes format 2, or format 1 for a block whose first timestamp's top
 * byte is format 2's tag (a time before 1720), which keeps the two apart. */
void block_enc_init(struct block_enc *e, uint8_t *buf, size_t cap);
/* The same, always format 1: for tests of the readers of old stores. */
void block_enc_init_legacy(struct block_enc *e, uint8_t *buf, size_t cap);

/*
 * Append one point. Returns 0, -EINVAL when ts_ns is not strictly greater than
 * the previous point's (out-of-order or duplicate; the block is unchanged), or
 * -ENOSPC when the block is full (unchanged; seal it and start another).
 */
int block_enc_append(struct block_enc *e, int64_t ts_ns, double value);

/* Bytes of buf in use: what a snapshot or a sealed block must keep. */
size_t block_enc_size(const struct block_enc *e);

struct block_dec {
    const uint8_t *buf; /* encoded stream (not owned) */
    size_t len_bits;    /* its length in bits */
    size_t pos;         /* read position in bits */
    uint32_t left;      /* points still to decode */
    uint32_t done;      /* points decoded so far */
    int64_t prev_ts;
    int64_t prev_delta;
    uint64_t prev_value;
    unsigned prev_lead;
    unsigned prev_trail;
    uint8_t format;
    struct scaled_model sm;
};

/*
 * Prepare to decode count points from buf[0..len) of a block that starts
 * at start_ns (its block_stats.start_ns). buf must outlive d. Format 1
 * begins with start_ns itself, big-endian; format 2 with a tag byte, and
 * only where start_ns's top byte is not the tag. Anything else decodes as
 * corrupt.
 */
void block_dec_init(struct block_dec *d, const uint8_t *buf, size_t len, uint32_t count,
                    int64_t start_ns);

/* Next point: 1 and the point, 0 at the end, -EBADMSG when the stream is
 * truncated or corrupt (never reads past len). */
int block_dec_next(struct block_dec *d, int64_t *ts_ns, double *value);
/*
 * Up to max points into ts_ns[] and value[]: how many; fewer than max at
 * the block's end, and after corruption (then *err is -EBADMSG and the
 * points before it are kept). The same points as block_dec_next one by
 * one, with the decoder's state kept in registers: readers of whole series
 * (the offline rules) spend most of their time here.
 */
uint32_t block_dec_many(struct block_dec *d, int64_t *ts_ns, double *value, uint32_t max, int *err);

#endif
