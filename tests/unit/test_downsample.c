/*
 * The series downsampler (serve/downsample.h): buckets built from block
 * summaries and from decoded edge blocks must equal buckets built by
 * decoding every point, for random series, ranges and bucket counts, both
 * from in-memory blocks and through the store's range query.
 */
#include <errno.h>

#include "common/array.h"
#include "fixture.h"
#include "store_rig.h"
#include "serve/downsample.h"
#include "store/store.h"
#include "test.h"

#define BLOCK_BYTES  1900
#define BLOCK_POINTS 1024
#define MAX_BLOCKS   1024

struct series {
    uint8_t buf[MAX_BLOCKS][BLOCK_BYTES];
    struct block_stats st[MAX_BLOCKS];
    size_t len[MAX_BLOCKS];
    int nblocks;
    int64_t *t;
    double *v;
    size_t n;
};

/* n points with jittered spacing, a few NaNs, sealed into blocks as the
 * recorder does (full bytes or BLOCK_POINTS points). */
static void make_series(struct series *s, size_t n, uint64_t seed, int64_t t0)
{
    s->t = malloc(n * sizeof(*s->t));
    s->v = malloc(n * sizeof(*s->v));
    s->n = n;
    s->nblocks = 0;
    int64_t t = t0;
    struct block_enc e;
    block_enc_init(&e, s->buf[0], BLOCK_BYTES);
    for (size_t i = 0; i < n; i++) {
        t += 1000000 + (int64_t)(rng_next(&seed) % 200000);
        double v = (double)(rng_next(&seed) % 10000) / 7.0;
        if (rng_next(&seed) % 97 == 0)
            v = NAN;
        s->t[i] = t;
        s->v[i] = v;
        int rc = block_enc_append(&e, t, v);
        if (rc == -ENOSPC || e.st.count == BLOCK_POINTS) {
            s->st[s->nblocks] = e.st;
            s->len[s->nblocks] = block_enc_size(&e);
            s->nblocks++;
            ASSERT(s->nblocks < MAX_BLOCKS);
            block_enc_init(&e, s->buf[s->nblocks], BLOCK_BYTES);
            if (rc == -ENOSPC)
                ASSERT_EQ_INT(block_enc_append(&e, t, v), 0);
        } else {
            ASSERT_EQ_INT(rc, 0);
        }
    }
    if (e.st.count) {
        s->st[s->nblocks] = e.st;
        s->len[s->nblocks] = block_enc_size(&e);
        s->nblocks++;
    }
}

static void series_release(struct series *s)
{
    free(s->t);
    free(s->v);
}

/* Compare d's buckets with the same buckets filled from every raw point. */
static void assert_matches_raw(const struct downsampler *d, const struct series *s)
{
    struct downsampler ref;
    ASSERT_EQ_INT(downsampler_init(&ref, d->from_ns, d->to_ns, d->nbuckets), 0);
    ASSERT_EQ_INT(ref.nbuckets, d->nbuckets);
    for (size_t i = 0; i < s->n; i++) {
        if (s->t[i] < d->from_ns || s->t[i] > d->to_ns)
            continue;
        struct ds_bucket *b = &ref.b[(uint64_t)(s->t[i] - d->from_ns) / (uint64_t)d->bucket_ns];
        b->count++;
        if (s->t[i] < b->first_ns)
            b->first_ns = s->t[i];
        if (!isnan(s->v[i])) {
            b->min = isnan(b->min) || s->v[i] < b->min ? s->v[i] : b->min;
            b->max = isnan(b->max) || s->v[i] > b->max ? s->v[i] : b->max;
            b->sum += s->v[i];
        }
    }
    for (uint32_t i = 0; i < d->nbuckets; i++) {
        ASSERT_EQ_INT(d->b[i].count, ref.b[i].count);
        ASSERT_EQ_INT(d->b[i].first_ns, ref.b[i].first_ns);
        ASSERT_EQ_U64(dbits(d->b[i].min), dbits(ref.b[i].min));
        ASSERT_EQ_U64(dbits(d->b[i].max), dbits(ref.b[i].max));
        ASSERT_NEAR(d->b[i].sum, ref.b[i].sum, 1e-9 * (fabs(ref.b[i].sum) + 1));
    }
    ASSERT(!d->corrupt);
    downsampler_release(&ref);
}

static void feed(struct downsampler *d, const struct series *s)
{
    for (int i = 0; i < s->nblocks; i++) {
        int want = downsampler_wants_data(d, &s->st[i]);
        downsampler_add_block(d, &s->st[i], want ? s->buf[i] : NULL, want ? s->len[i] : 0);
    }
}

TEST(whole_range_equals_decoding_everything)
{
    struct series *s = calloc(1, sizeof(*s));
    make_series(s, 40000, 7, 1700000000000000000LL);
    uint32_t ns[] = {1, 2, 7, 100, 1000, 5000, 16384};
    for (size_t k = 0; k < ARRAY_SIZE(ns); k++) {
        struct downsampler d;
        ASSERT_EQ_INT(downsampler_init(&d, s->t[0], s->t[s->n - 1], ns[k]), 0);
        feed(&d, s);
        assert_matches_raw(&d, s);
        if (ns[k] <= 7)
            ASSERT(d.blocks_summary > 0); /* wide buckets: most blocks never decoded */
        downsampler_release(&d);
    }
    series_release(s);
    free(s);
}

/* +inf and -inf in one block: its header's sum is NaN, as the decoded sum
 * is; a bucket from the header must not drop it (a mean of 0 from nothing). */
TEST(opposite_infinities_sum_to_nan_from_headers_too)
{
    uint8_t buf[BLOCK_BYTES];
    struct block_enc e;
    block_enc_init(&e, buf, sizeof(buf));
    const double v[] = {1.0, INFINITY, -INFINITY, 2.0};
    for (int i = 0; i < 4; i++)
        ASSERT_EQ_INT(block_enc_append(&e, 1000 + i, v[i]), 0);
    for (uint32_t n = 1; n <= 4; n *= 4) {
        struct downsampler d;
        ASSERT_EQ_INT(downsampler_init(&d, 1000, 1003, n), 0);
        int want = downsampler_wants_data(&d, &e.st);
        ASSERT_EQ_INT(want, n > 1); /* one bucket: the header; four: decoded */
        downsampler_add_block(&d, &e.st, buf, block_enc_size(&e));
        double sum = 0;
        for (uint32_t i = 0; i < d.nbuckets; i++)
            sum += d.b[i].sum;
        ASSERT(n == 1 ? isnan(sum) : !isnan(d.b[0].sum) && isinf(d.b[1].sum));
        downsampler_release(&d);
    }
}

TEST(random_ranges_equal_decoding_everything)
{
    struct series *s = calloc(1, sizeof(*s));
    uint64_t seed = 42;
    make_series(s, 30000, 11, 1000);
    for (int k = 0; k < 300; k++) {
        int64_t span = s->t[s->n - 1] - s->t[0];
        int64_t a = s->t[0] - 5000000 + (int64_t)(rng_next(&seed) % (uint64_t)(span + 10000000));
        int64_t b = a + (int64_t)(rng_next(&seed) % (uint64_t)span);
        uint32_t n = 1 + (uint32_t)(rng_next(&seed) % 3000);
        struct downsampler d;
        ASSERT_EQ_INT(downsampler_init(&d, a, b, n), 0);
        ASSERT(d.nbuckets <= n);
        feed(&d, s);
        assert_matches_raw(&d, s);
        downsampler_release(&d);
    }
    series_release(s);
    free(s);
}

TEST(rejects_bad_arguments)
{
    struct downsampler d;
    ASSERT_EQ_INT(downsampler_init(&d, 10, 5, 100), -EINVAL);
    ASSERT_EQ_INT(downsampler_init(&d, 0, 5, 0), -EINVAL);
    ASSERT_EQ_INT(downsampler_init(&d, 0, 5, DOWNSAMPLE_MAX_BUCKETS + 1), -EINVAL);
    /* the full int64 range does not overflow */
    ASSERT_EQ_INT(downsampler_init(&d, INT64_MIN, INT64_MAX, 1000), 0);
    ASSERT(d.nbuckets <= 1000 && d.bucket_ns > 0);
    downsampler_release(&d);
    /* one instant, one bucket */
    ASSERT_EQ_INT(downsampler_init(&d, 5, 5, 1000), 0);
    ASSERT_EQ_INT(d.nbuckets, 1);
    downsampler_release(&d);
}

/* Through a real store (SQLite; PostgreSQL on the pg/ pass): the range
 * query must hand over every block that overlaps, the first one included
 * when it starts before from_ns. */
TEST(through_the_store)
{
    struct store_rig rig;
    store_rig_init(&rig);
    struct store *st = NULL;
    ASSERT_EQ_INT(store_open(rig.db, 0, &st, NULL), 0);
    struct run_record r;
    run_record_init(&r);
    snprintf(r.id, sizeof(r.id), "00000000000000aa");
    r.name = strdup("ds");
    r.command_json = strdup("[]");
    r.start_ns = 1000;
    snprintf(r.status, sizeof(r.status), RUN_FINISHED);
    ASSERT_EQ_INT(st->ops->run_insert(st, &r), 0);
    int64_t sid;
    ASSERT_EQ_INT(st->ops->series_insert(st, r.id, "cpu.util", "", "pct", NULL, &sid), 0);
    struct series *s = calloc(1, sizeof(*s));
    make_series(s, 20000, 5, 1000);
    for (int i = 0; i < s->nblocks; i++)
        ASSERT_EQ_INT(st->ops->block_upsert(st, sid, &s->st[i], s->buf[i], s->len[i]), 0);
    uint64_t seed = 9;
    for (int k = 0; k < 100; k++) {
        int64_t span = s->t[s->n - 1] - s->t[0];
        int64_t a = s->t[0] + (int64_t)(rng_next(&seed) % (uint64_t)span);
        int64_t b = a + (int64_t)(rng_next(&seed) % (uint64_t)span);
        struct downsampler d;
        ASSERT_EQ_INT(downsampler_init(&d, a, b, 1 + (uint32_t)(rng_next(&seed) % 500)), 0);
        ASSERT_EQ_INT(downsampler_run(&d, st, sid), 0);
        assert_matches_raw(&d, s);
        downsampler_release(&d);
    }
    series_release(s);
    free(s);
    run_record_release(&r);
    store_close(st);
    store_rig_release(&rig);
}

TEST_CASES_ONCE(whole_range_equals_decoding_everything,
                opposite_infinities_sum_to_nan_from_headers_too,
                random_ranges_equal_decoding_everything, rejects_bad_arguments)
TEST_CASES_BOTH(through_the_store)
STORE_TEST_MAIN()
