/*
 * The recorder's series table (sample/series.h) and the store writer
 * (record/writer.h): lookup and hash growth, sealing, the pending-memory cap,
 * batch collection and settlement, and a writer thread committing batches to
 * a real store (SQLite, and PostgreSQL on the pg/ pass) that read back
 * bit-exactly.
 */
#include "sample/series.h"

#include <errno.h>
#include <float.h>

#include "common/clock.h"
#include "common/err.h"
#include "record/writer.h"
#include "store/points.h"
#include "store/store.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define BLOCK_SIZE sizeof(struct sealed_block)

/* Append value to series idx at frame time ts_ns. */
static void put_at(struct series_table *t, uint32_t idx, int64_t ts_ns, double value)
{
    t->now_ns = ts_ns;
    series_put(t, idx, value);
}

/* Decode count points from buf and compare them, bit for bit, with want. */
static void check_block(const uint8_t *buf, size_t len, uint32_t count, const int64_t *want_ts,
                        const double *want_v)
{
    struct block_dec d;
    block_dec_init(&d, buf, len, count, count ? want_ts[0] : 0);
    for (uint32_t i = 0; i < count; i++) {
        int64_t ts;
        double v;
        if (block_dec_next(&d, &ts, &v) != 1)
            TEST_FAIL("point %u of %u does not decode", i, count);
        ASSERT_EQ_INT(ts, want_ts[i]);
        ASSERT_EQ_U64(dbits(v), dbits(want_v[i]));
    }
    int64_t ts;
    double v;
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 0);
}

static uint32_t sealed_count(const struct series *s)
{
    uint32_t n = 0;
    for (const struct sealed_block *b = s->sealed; b; b = b->next)
        n++;
    return n;
}

/* ---- the table ------------------------------------------------------------- */

TEST(get_put)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a, a2, b, c, d;
    ASSERT_EQ_INT(series_get(&t, "cpu.util", "", "pct", &a), 0);
    ASSERT_EQ_INT(series_get(&t, "cpu.util", "core=0", "pct", &b), 0);
    ASSERT_EQ_INT(series_get(&t, "cpu.util", "", "pct", &a2), 0);
    ASSERT_EQ_INT(a, a2);
    ASSERT(a != b);
    /* name and labels are kept apart: "ab"+"c" is not "a"+"bc" */
    ASSERT_EQ_INT(series_get(&t, "ab", "c", "1", &c), 0);
    ASSERT_EQ_INT(series_get(&t, "a", "bc", "1", &d), 0);
    ASSERT(c != d);
    ASSERT_EQ_INT(t.count, 4);
    ASSERT_EQ_STR(t.items[b].name, "cpu.util");
    ASSERT_EQ_STR(t.items[b].labels, "core=0");
    ASSERT_EQ_STR(t.items[b].unit, "pct");

    put_at(&t, a, 1000, 1.5);
    put_at(&t, a, 2000, 2.5);
    t.now_ns = 2000; /* same time again: refused, counted */
    series_put(&t, a, 3.5);
    t.now_ns = 1500; /* back in time */
    series_put(&t, a, 4.5);
    ASSERT_EQ_U64(t.points, 2);
    ASSERT_EQ_U64(t.rejected, 2);
    ASSERT_EQ_INT(t.items[a].enc.st.count, 2);
    ASSERT_EQ_U64(dbits(t.items[a].enc.st.last), dbits(2.5));
    ASSERT_EQ_INT(t.items[b].enc.st.count, 0);

    /* metadata: copied, marked dirty only when it changes */
    char meta[] = "{\"comm\":\"x\"}";
    ASSERT_EQ_INT(series_set_meta(&t, b, meta), 0);
    meta[2] = 'C';
    ASSERT_EQ_STR(t.items[b].meta, "{\"comm\":\"x\"}");
    ASSERT_EQ_INT(t.items[b].meta_dirty, 1);
    t.items[b].meta_dirty = 0;
    ASSERT_EQ_INT(series_set_meta(&t, b, "{\"comm\":\"x\"}"), 0);
    ASSERT_EQ_INT(t.items[b].meta_dirty, 0);
    ASSERT_EQ_INT(series_set_meta(&t, b, "{\"comm\":\"y\"}"), 0);
    ASSERT_EQ_INT(t.items[b].meta_dirty, 1);
    series_table_release(&t);
}

TEST(retire_seals_frees_and_revives)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a;
    ASSERT_EQ_INT(series_get(&t, "proc.cpu", "pid=7", "pct", &a), 0);
    put_at(&t, a, 1000, 10.0);
    put_at(&t, a, 2000, 20.0);
    series_retire(&t, a);
    /* the points are now a sealed block waiting for the writer; no buffer */
    ASSERT(t.items[a].open_buf == NULL);
    ASSERT(t.items[a].sealed != NULL);
    ASSERT_EQ_INT(t.items[a].sealed->st.count, 2);
    ASSERT_EQ_INT(t.items[a].enc.st.count, 0);
    series_retire(&t, a); /* twice is harmless */
    /* a reused pid brings the series back */
    put_at(&t, a, 3000, 30.0);
    ASSERT(t.items[a].open_buf != NULL);
    ASSERT_EQ_INT(t.items[a].enc.st.count, 1);
    ASSERT_EQ_U64(dbits(t.items[a].enc.st.first), dbits(30.0));
    ASSERT_EQ_U64(t.points, 3);
    /* an empty series retires without sealing anything */
    uint32_t b;
    ASSERT_EQ_INT(series_get(&t, "proc.cpu", "pid=8", "pct", &b), 0);
    series_retire(&t, b);
    ASSERT(t.items[b].sealed == NULL && t.items[b].open_buf == NULL);
    series_table_release(&t);
}

TEST(hash_grows_past_256_and_512)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    ASSERT_EQ_INT(t.nslots, 256);
    uint32_t idx[1000];
    char labels[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(labels, sizeof(labels), "pid=%d", i);
        ASSERT_EQ_INT(series_get(&t, "proc.cpu", labels, "pct", &idx[i]), 0);
        ASSERT_EQ_INT(idx[i], i);
        /* the table stays at most half full */
        ASSERT(t.count * 2 <= t.nslots);
        if (i + 1 == 128)
            ASSERT_EQ_INT(t.nslots, 256);
        if (i + 1 == 129)
            ASSERT_EQ_INT(t.nslots, 512);
        if (i + 1 == 256)
            ASSERT_EQ_INT(t.nslots, 512);
        if (i + 1 == 257)
            ASSERT_EQ_INT(t.nslots, 1024);
        if (i + 1 == 513)
            ASSERT_EQ_INT(t.nslots, 2048);
    }
    /* every series is still found where it was, after three rehashes */
    for (int i = 0; i < 1000; i++) {
        uint32_t j;
        snprintf(labels, sizeof(labels), "pid=%d", i);
        ASSERT_EQ_INT(series_get(&t, "proc.cpu", labels, "pct", &j), 0);
        ASSERT_EQ_INT(j, idx[i]);
        ASSERT_EQ_STR(t.items[j].labels, labels);
    }
    ASSERT_EQ_INT(t.count, 1000);
    series_table_release(&t);
}

TEST(seals_at_block_points)
{
    static int64_t ts[SERIES_BLOCK_POINTS + 1];
    static double v[SERIES_BLOCK_POINTS + 1];
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a;
    ASSERT_EQ_INT(series_get(&t, "mem.used_bytes", "", "bytes", &a), 0);
    for (int i = 0; i < SERIES_BLOCK_POINTS; i++) {
        ts[i] = (int64_t)i * 100 * NS_PER_MS;
        v[i] = 20.5; /* two bits a point: it is the count, not -ENOSPC, that seals */
        put_at(&t, a, ts[i], v[i]);
    }
    struct series *s = &t.items[a];
    ASSERT_EQ_INT(s->enc.st.count, SERIES_BLOCK_POINTS);
    ASSERT(!s->sealed);
    ASSERT_EQ_U64(t.pending_bytes, 0);
    ts[SERIES_BLOCK_POINTS] = (int64_t)SERIES_BLOCK_POINTS * 100 * NS_PER_MS;
    v[SERIES_BLOCK_POINTS] = 42.0;
    put_at(&t, a, ts[SERIES_BLOCK_POINTS], 42.0);
    ASSERT_EQ_INT(sealed_count(s), 1);
    ASSERT_EQ_INT(s->sealed->st.count, SERIES_BLOCK_POINTS);
    ASSERT_EQ_INT(s->sealed->st.start_ns, 0);
    ASSERT_EQ_INT(s->sealed->st.end_ns, ts[SERIES_BLOCK_POINTS - 1]);
    ASSERT_EQ_INT(s->sealed->series, a);
    ASSERT_EQ_U64(t.pending_bytes, BLOCK_SIZE);
    check_block(s->sealed->data, s->sealed->len, s->sealed->st.count, ts, v);
    ASSERT_EQ_INT(s->enc.st.count, 1);
    ASSERT_EQ_U64(dbits(s->enc.st.first), dbits(42.0));
    ASSERT_EQ_U64(t.points, SERIES_BLOCK_POINTS + 1);
    ASSERT_EQ_U64(t.rejected, 0);
    series_table_release(&t);
}

TEST(seals_when_the_block_is_full)
{
    /* random bit patterns take ~70 bits a point: a block's bytes fill long before
     * 1024 points, and append's -ENOSPC seals */
    enum { N = 600 };
    static int64_t ts[N];
    static double v[N];
    uint64_t rng = 42;
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a;
    ASSERT_EQ_INT(series_get(&t, "noise", "", "1", &a), 0);
    for (int i = 0; i < N; i++) {
        ts[i] = INT64_C(1700000000000000000) + (int64_t)i * NS_PER_S;
        v[i] = bdbl(rng_next(&rng));
        put_at(&t, a, ts[i], v[i]);
    }
    ASSERT_EQ_U64(t.points, N);
    ASSERT_EQ_U64(t.rejected, 0);
    struct series *s = &t.items[a];
    ASSERT(sealed_count(s) >= 2);
    /* every point is in exactly one block, in order, bit for bit */
    size_t at = 0;
    for (const struct sealed_block *b = s->sealed; b; b = b->next) {
        ASSERT(b->st.count > 0 && b->st.count < SERIES_BLOCK_POINTS);
        ASSERT(b->len <= SERIES_BLOCK_BYTES);
        check_block(b->data, b->len, b->st.count, ts + at, v + at);
        at += b->st.count;
    }
    check_block(s->open_buf, block_enc_size(&s->enc), s->enc.st.count, ts + at, v + at);
    ASSERT_EQ_INT(at + s->enc.st.count, N);
    series_table_release(&t);
}

/* One point per frame at frames [from, to) into series idx (1 s frames). */
static void fill(struct series_table *t, uint32_t idx, int from, int to)
{
    for (int i = from; i < to; i++)
        put_at(t, idx, (int64_t)i * NS_PER_S, (double)i);
}

TEST(pending_cap_drops_oldest_sealed)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    t.pending_cap = 2 * BLOCK_SIZE;
    uint32_t a, b;
    ASSERT_EQ_INT(series_get(&t, "a", "", "1", &a), 0);
    ASSERT_EQ_INT(series_get(&t, "b", "", "1", &b), 0);
    /* a: frames 0..1024 seals A1 (start 0) at frame 1024 */
    fill(&t, a, 0, 1025);
    /* b: frames 500..1524 seals B1 (start 500) */
    fill(&t, b, 500, 1525);
    ASSERT_EQ_U64(t.pending_bytes, 2 * BLOCK_SIZE);
    ASSERT_EQ_U64(t.dropped, 0);
    /* A2 (start 1024) sealed at frame 2048: over the cap, the oldest of all
     * (A1, start 0, not B1, start 500) goes */
    fill(&t, a, 1025, 2049);
    ASSERT_EQ_U64(t.dropped, 1024);
    ASSERT_EQ_U64(t.pending_bytes, 2 * BLOCK_SIZE);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 1);
    ASSERT_EQ_INT(t.items[a].sealed->st.start_ns, 1024 * NS_PER_S);
    ASSERT_EQ_INT(sealed_count(&t.items[b]), 1);
    /* A3 (start 2048): now B1 is the oldest */
    fill(&t, a, 2049, 3073);
    ASSERT_EQ_U64(t.dropped, 2048);
    ASSERT_EQ_INT(sealed_count(&t.items[b]), 0);
    ASSERT(!t.items[b].sealed_tail);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 2);
    ASSERT_EQ_INT(t.items[a].sealed->st.start_ns, 1024 * NS_PER_S);
    ASSERT_EQ_INT(t.items[a].sealed_tail->st.start_ns, 2048 * NS_PER_S);
    ASSERT(!t.free_blocks); /* each dropped block's buffer took the new one */
    /* points in open blocks are not touched */
    ASSERT_EQ_INT(t.items[b].enc.st.count, 1);
    ASSERT_EQ_U64(t.points, 3073 + 1025);
    series_table_release(&t);
}

TEST(frozen_table_drops_nothing)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    t.pending_cap = 2 * BLOCK_SIZE;
    uint32_t a, b;
    ASSERT_EQ_INT(series_get(&t, "a", "", "1", &a), 0);
    ASSERT_EQ_INT(series_get(&t, "b", "", "1", &b), 0);
    fill(&t, a, 0, 1025);
    fill(&t, b, 500, 1525);
    /* a batch is in flight: its sealed blocks must stay where they are */
    t.frozen = 1;
    fill(&t, a, 1025, 3073);
    ASSERT_EQ_U64(t.dropped, 0);
    ASSERT_EQ_U64(t.pending_bytes, 4 * BLOCK_SIZE);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 3);
    /* thawed, the next seal brings the table back under its cap: A1, B1,
     * A2 go (oldest first), A3 and the new A4 stay */
    t.frozen = 0;
    fill(&t, a, 3073, 4097);
    ASSERT_EQ_U64(t.dropped, 3 * 1024);
    ASSERT_EQ_U64(t.pending_bytes, 2 * BLOCK_SIZE);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 2);
    ASSERT_EQ_INT(t.items[a].sealed->st.start_ns, 2048 * NS_PER_S);
    ASSERT_EQ_INT(sealed_count(&t.items[b]), 0);
    series_table_release(&t);
}

TEST(release_sealed_and_seal_all)
{
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a, b, c;
    ASSERT_EQ_INT(series_get(&t, "a", "", "1", &a), 0);
    ASSERT_EQ_INT(series_get(&t, "b", "", "1", &b), 0);
    ASSERT_EQ_INT(series_get(&t, "c", "", "1", &c), 0);
    fill(&t, a, 0, 3 * 1024 + 10); /* three sealed, ten open */
    fill(&t, b, 0, 5);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 3);
    struct sealed_block *second = t.items[a].sealed->next;
    series_release_sealed(&t, a, second);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 1);
    ASSERT_EQ_INT(t.items[a].sealed->st.start_ns, 2048 * NS_PER_S);
    ASSERT_EQ_U64(t.pending_bytes, BLOCK_SIZE);
    series_seal_all(&t);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 2);
    ASSERT_EQ_INT(t.items[a].sealed_tail->st.count, 10);
    ASSERT_EQ_INT(sealed_count(&t.items[b]), 1);
    ASSERT_EQ_INT(sealed_count(&t.items[c]), 0); /* nothing to seal */
    ASSERT_EQ_INT(t.items[a].enc.st.count, 0);
    ASSERT_EQ_U64(t.pending_bytes, 3 * BLOCK_SIZE);
    series_release_sealed(&t, a, t.items[a].sealed_tail);
    ASSERT(!t.items[a].sealed && !t.items[a].sealed_tail);
    series_table_release(&t);
}

/* ---- batches ---------------------------------------------------------------- */

/* s0: a sealed block and an open one; s1: an open block; s2: no data. */
static void three_series(struct series_table *t, uint32_t *s0, uint32_t *s1, uint32_t *s2)
{
    ASSERT_EQ_INT(series_table_init(t), 0);
    ASSERT_EQ_INT(series_get(t, "proc.cpu", "pid=1", "pct", s0), 0);
    ASSERT_EQ_INT(series_get(t, "mem.used_bytes", "", "bytes", s1), 0);
    ASSERT_EQ_INT(series_get(t, "disk.util", "dev=sda", "pct", s2), 0);
    ASSERT_EQ_INT(series_set_meta(t, *s0, "{\"comm\":\"a\"}"), 0);
    ASSERT_EQ_INT(series_set_meta(t, *s2, "{\"dev\":\"sda\"}"), 0);
    fill(t, *s0, 0, 1500);
    fill(t, *s1, 0, 10);
}

static const struct batch_def *find_def(const struct batch *b, uint32_t series)
{
    for (uint32_t i = 0; i < b->ndefs; i++)
        if (b->defs[i].series == series)
            return &b->defs[i];
    return NULL;
}

TEST(batch_collect_and_settle_ok)
{
    struct series_table t;
    uint32_t s0, s1, s2;
    three_series(&t, &s0, &s1, &s2);
    struct batch b;
    batch_init(&b);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(t.frozen, 1);
    ASSERT_EQ_INT(b.series_count, 3);
    /* definitions of the series that hold data; s2 waits for its first point */
    ASSERT_EQ_INT(b.ndefs, 2);
    const struct batch_def *d0 = find_def(&b, s0);
    ASSERT(d0 && d0->define);
    ASSERT_EQ_STR(d0->name, "proc.cpu");
    ASSERT_EQ_STR(d0->labels, "pid=1");
    ASSERT_EQ_STR(d0->unit, "pct");
    ASSERT_EQ_STR(d0->meta, "{\"comm\":\"a\"}");
    ASSERT(d0->meta != t.items[s0].meta); /* a copy */
    ASSERT(find_def(&b, s1) && !find_def(&b, s1)->meta);
    ASSERT(!find_def(&b, s2));
    /* blocks: s0's sealed 1024 points, s0's open 476, s1's open 10 */
    ASSERT_EQ_INT(b.nblocks, 3);
    ASSERT_EQ_INT(b.blocks[0].series, s0);
    ASSERT(b.blocks[0].sealed == t.items[s0].sealed);
    ASSERT_EQ_INT(b.blocks[0].st.count, 1024);
    ASSERT_EQ_INT(b.blocks[1].series, s0);
    ASSERT(!b.blocks[1].sealed);
    ASSERT_EQ_INT(b.blocks[1].st.count, 476);
    ASSERT_EQ_INT(b.blocks[1].len, block_enc_size(&t.items[s0].enc));
    ASSERT(memcmp(b.snap + b.blocks[1].snap_off, t.items[s0].open_buf, b.blocks[1].len) == 0);
    ASSERT_EQ_INT(b.blocks[2].series, s1);
    ASSERT_EQ_INT(b.blocks[2].st.count, 10);

    b.result = 0; /* as the writer reports a commit */
    batch_settle(&b, &t);
    ASSERT_EQ_INT(t.frozen, 0);
    ASSERT(!t.items[s0].sealed);
    ASSERT_EQ_U64(t.pending_bytes, 0);
    ASSERT_EQ_INT(t.items[s0].defined, 1);
    ASSERT_EQ_INT(t.items[s1].defined, 1);
    ASSERT_EQ_INT(t.items[s2].defined, 0);
    ASSERT_EQ_INT(t.items[s0].meta_dirty, 0);
    ASSERT_EQ_INT(t.items[s2].meta_dirty, 1);

    /* nothing new: an empty batch */
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.ndefs, 0);
    ASSERT_EQ_INT(b.nblocks, 0);
    batch_settle(&b, &t);
    /* one more point in s1 and a new comm for s0: a snapshot and a meta update */
    fill(&t, s1, 10, 11);
    ASSERT_EQ_INT(series_set_meta(&t, s0, "{\"comm\":\"b\"}"), 0);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.ndefs, 1);
    ASSERT_EQ_INT(b.defs[0].series, s0);
    ASSERT_EQ_INT(b.defs[0].define, 0);
    ASSERT_EQ_STR(b.defs[0].meta, "{\"comm\":\"b\"}");
    ASSERT_EQ_INT(b.nblocks, 1);
    ASSERT_EQ_INT(b.blocks[0].series, s1);
    ASSERT_EQ_INT(b.blocks[0].st.count, 11);
    batch_settle(&b, &t);
    ASSERT_EQ_INT(t.items[s0].meta_dirty, 0);
    batch_release(&b);
    series_table_release(&t);
}

/* Open blocks every snap_every-th batch (a recorder into PostgreSQL): the
 * batches between carry sealed blocks and definitions only, and a failed
 * batch makes the next one carry every open block. */
TEST(batch_collect_open_blocks_every_third)
{
    struct series_table t;
    uint32_t s0, s1, s2;
    three_series(&t, &s0, &s1, &s2);
    t.snap_every = 3;
    struct batch b;
    batch_init(&b);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 1);
    ASSERT_EQ_INT(b.nblocks, 3); /* s0 sealed and open, s1 open */
    b.result = 0;
    batch_settle(&b, &t);
    /* s1 grows, s0 seals a block: the sealed one goes now, s1's snapshot waits */
    fill(&t, s1, 10, 12);
    fill(&t, s0, 1500, 2100);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 0);
    ASSERT_EQ_INT(b.nblocks, 1);
    ASSERT(b.blocks[0].sealed && b.blocks[0].series == s0);
    b.result = 0;
    batch_settle(&b, &t);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 0);
    ASSERT_EQ_INT(b.nblocks, 0);
    b.result = 0;
    batch_settle(&b, &t);
    /* the third batch after: both open blocks */
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 1);
    ASSERT_EQ_INT(b.nblocks, 2);
    ASSERT_EQ_INT(b.blocks[0].series, s0);
    ASSERT_EQ_INT(b.blocks[0].st.count, 2100 - 2048);
    ASSERT_EQ_INT(b.blocks[1].series, s1);
    ASSERT_EQ_INT(b.blocks[1].st.count, 12);
    b.result = 0;
    batch_settle(&b, &t);
    /* a failed batch between: the next carries every open block again */
    fill(&t, s1, 12, 13);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 0);
    b.result = -STROBE_EBUSY;
    batch_settle(&b, &t);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.has_open, 1);
    ASSERT_EQ_INT(b.nblocks, 2);
    batch_release(&b);
    series_table_release(&t);
}

TEST(batch_settle_failure_keeps_everything)
{
    struct series_table t;
    uint32_t s0, s1, s2;
    three_series(&t, &s0, &s1, &s2);
    struct batch b;
    batch_init(&b);
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.nblocks, 3);
    struct sealed_block *first = t.items[s0].sealed;
    /* while the batch is in flight: s0 seals again, s0's comm changes */
    fill(&t, s0, 1500, 2100);
    ASSERT_EQ_INT(sealed_count(&t.items[s0]), 2);
    ASSERT_EQ_INT(series_set_meta(&t, s0, "{\"comm\":\"b\"}"), 0);

    b.result = -STROBE_EBUSY;
    batch_settle(&b, &t);
    ASSERT_EQ_INT(t.frozen, 0);
    ASSERT(t.items[s0].sealed == first);
    ASSERT_EQ_INT(sealed_count(&t.items[s0]), 2);
    ASSERT_EQ_U64(t.pending_bytes, 2 * BLOCK_SIZE);
    ASSERT_EQ_INT(t.items[s0].defined, 0);
    ASSERT_EQ_INT(t.items[s1].defined, 0);
    ASSERT_EQ_INT(t.items[s0].meta_dirty, 1);

    /* the next batch carries all of it again, the open blocks included */
    ASSERT_EQ_INT(batch_collect(&b, &t), 0);
    ASSERT_EQ_INT(b.ndefs, 2);
    ASSERT(find_def(&b, s0)->define && find_def(&b, s1)->define);
    ASSERT_EQ_STR(find_def(&b, s0)->meta, "{\"comm\":\"b\"}");
    ASSERT_EQ_INT(b.nblocks, 4); /* s0: 2 sealed + open; s1: open */
    ASSERT(b.blocks[0].sealed == first);
    ASSERT_EQ_INT(b.blocks[1].st.count, 1024);
    ASSERT(!b.blocks[2].sealed);
    ASSERT_EQ_INT(b.blocks[2].st.count, 2100 - 2048);
    ASSERT_EQ_INT(b.blocks[3].series, s1);
    ASSERT_EQ_INT(b.blocks[3].st.count, 10);

    /* in flight again, s0 seals a third block: only what the batch carried
     * is released on success */
    fill(&t, s0, 2100, 3073);
    b.result = 0;
    batch_settle(&b, &t);
    ASSERT_EQ_INT(sealed_count(&t.items[s0]), 1);
    ASSERT_EQ_INT(t.items[s0].sealed->st.start_ns, 2048 * NS_PER_S);
    ASSERT_EQ_U64(t.pending_bytes, BLOCK_SIZE);
    ASSERT_EQ_INT(t.items[s0].defined, 1);
    ASSERT_EQ_INT(t.items[s0].meta_dirty, 0);
    batch_release(&b);
    series_table_release(&t);
}

/* ---- the writer thread -------------------------------------------------------- */

struct rig {
    struct store_rig sr; /* SQLite, or PostgreSQL on the pg/ pass */
    struct store *store;
    struct run_record run;
};

static void rig_open(struct rig *r)
{
    store_rig_init(&r->sr);
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(r->sr.db, 0, &r->store, &err);
    if (rc < 0)
        TEST_FAIL("store_open: %s", err.buf);
    strbuf_release(&err);
    run_record_init(&r->run);
    snprintf(r->run.id, sizeof(r->run.id), "0123456789abcdef");
    r->run.name = strdup("writer-test");
    r->run.command_json = strdup("[\"train\"]");
    r->run.start_ns = INT64_C(1717000000000000000);
    snprintf(r->run.status, sizeof(r->run.status), RUN_RUNNING);
    ASSERT_EQ_INT(r->store->ops->run_insert(r->store, &r->run), 0);
}

static void rig_close(struct rig *r)
{
    run_record_release(&r->run);
    store_close(r->store);
    store_rig_release(&r->sr);
}

/* The batch's run record: id and counters only (its strings are borrowed). */
static void batch_run(struct batch *b, const struct rig *r, int64_t samples)
{
    snprintf(b->run.id, sizeof(b->run.id), "%s", r->run.id);
    snprintf(b->run.status, sizeof(b->run.status), RUN_RUNNING);
    b->run.samples = samples;
    b->run.points = samples * 3;
}

/* Hand b to the writer, wait for the commit, settle: the writer's result. */
static int commit(struct writer *w, struct batch *b, struct series_table *t)
{
    ASSERT_EQ_INT(writer_submit(w, b), 1);
    writer_wait(w);
    ASSERT(!writer_busy(w));
    int rc = b->result;
    batch_settle(b, t);
    return rc;
}

struct found {
    int64_t id[8];
    char name[8][64];
    char meta[8][64];
    int64_t count[8];
    int n;
};

static int on_series(const struct series_record *s, void *arg)
{
    struct found *f = arg;
    if (f->n < 8) {
        f->id[f->n] = s->id;
        snprintf(f->name[f->n], sizeof(f->name[0]), "%s{%s}", s->name, s->labels);
        snprintf(f->meta[f->n], sizeof(f->meta[0]), "%s", s->meta ? s->meta : "");
        f->count[f->n] = s->count;
    }
    f->n++;
    return 0;
}

static int on_run(const struct run_record *r, void *arg)
{
    *(int64_t *)arg = r->samples;
    return 0;
}

/* The values a series was given, with their times. */
struct truth {
    int64_t ts[4096];
    double v[4096];
    size_t n;
};

static void put_truth(struct series_table *t, uint32_t idx, struct truth *tr, int64_t ts, double v)
{
    put_at(t, idx, ts, v);
    tr->ts[tr->n] = ts;
    tr->v[tr->n] = v;
    tr->n++;
}

static void check_points(struct store *s, int64_t series_id, const struct truth *tr)
{
    struct point_buf pb;
    point_buf_init(&pb);
    ASSERT_EQ_INT(store_read_points(s, series_id, &pb), 0);
    ASSERT_EQ_U64(pb.corrupt_blocks, 0);
    ASSERT_EQ_INT(pb.n, tr->n);
    for (size_t i = 0; i < tr->n; i++) {
        ASSERT_EQ_INT(pb.p[i].ts_ns, tr->ts[i]);
        ASSERT_EQ_U64(dbits(pb.p[i].value), dbits(tr->v[i]));
    }
    point_buf_release(&pb);
}

TEST(writer_thread_persists_bit_exactly)
{
    static struct truth ta, tb;
    struct rig r;
    rig_open(&r);
    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a, b;
    ASSERT_EQ_INT(series_get(&t, "cpu.util", "core=0", "pct", &a), 0);
    ASSERT_EQ_INT(series_get(&t, "proc.cpu", "pid=7", "pct", &b), 0);
    ASSERT_EQ_INT(series_set_meta(&t, b, "{\"comm\":\"a) b\"}"), 0);
    /* values a double can be and == cannot tell apart */
    static const double odd[] = {0.0,         -0.0,    NAN,    -NAN, INFINITY, -INFINITY,
                                 DBL_MIN / 2, DBL_MAX, 1e-308, 0.1,  12.5,     -3.0};
    ta.n = tb.n = 0;
    int64_t ts = INT64_C(1717000000000000000);
    uint64_t rng = 7;
    for (int i = 0; i < 1100; i++, ts += 100 * NS_PER_MS) {
        put_truth(&t, a, &ta, ts, odd[i % 12]);
        put_truth(&t, b, &tb, ts, bdbl(rng_next(&rng)));
    }
    struct writer w;
    struct batch batch;
    batch_init(&batch);
    ASSERT_EQ_INT(writer_start(&w, r.store), 0);

    /* first batch: definitions, sealed blocks and open snapshots */
    ASSERT_EQ_INT(batch_collect(&batch, &t), 0);
    batch_run(&batch, &r, 1100);
    ASSERT_EQ_INT(commit(&w, &batch, &t), 0);
    /* second: the open blocks grew (same start: replaced in place) */
    for (int i = 0; i < 50; i++, ts += 100 * NS_PER_MS) {
        put_truth(&t, a, &ta, ts, (double)i);
        put_truth(&t, b, &tb, ts, bdbl(rng_next(&rng)));
    }
    ASSERT_EQ_INT(series_set_meta(&t, b, "{\"comm\":\"c\"}"), 0);
    ASSERT_EQ_INT(batch_collect(&batch, &t), 0);
    batch_run(&batch, &r, 1150);
    ASSERT_EQ_INT(commit(&w, &batch, &t), 0);
    /* last: everything sealed */
    put_truth(&t, a, &ta, ts, 1.0);
    series_seal_all(&t);
    ASSERT_EQ_INT(batch_collect(&batch, &t), 0);
    batch_run(&batch, &r, 1151);
    ASSERT_EQ_INT(commit(&w, &batch, &t), 0);
    writer_stop(&w);
    ASSERT_EQ_U64(t.pending_bytes, 0);

    struct found f;
    memset(&f, 0, sizeof(f));
    ASSERT_EQ_INT(r.store->ops->series_query(r.store, r.run.id, on_series, &f), 0);
    ASSERT_EQ_INT(f.n, 2);
    ASSERT_EQ_STR(f.name[0], "cpu.util{core=0}"); /* name order */
    ASSERT_EQ_STR(f.name[1], "proc.cpu{pid=7}");
    ASSERT_EQ_STR(f.meta[1], "{\"comm\":\"c\"}");
    ASSERT_EQ_INT(f.count[0], ta.n);
    ASSERT_EQ_INT(f.count[1], tb.n);
    check_points(r.store, f.id[0], &ta);
    check_points(r.store, f.id[1], &tb);
    int64_t samples = 0;
    ASSERT_EQ_INT(r.store->ops->runs_query(r.store, NULL, on_run, &samples), 0);
    ASSERT_EQ_INT(samples, 1151);

    batch_release(&batch);
    series_table_release(&t);
    rig_close(&r);
}

TEST(writer_busy_store_loses_nothing)
{
    static struct truth ta;
    struct rig r;
    rig_open(&r);
    /* a second connection holds the write lock past the busy timeout */
    struct store *other;
    ASSERT_EQ_INT(store_open(r.sr.db, 0, &other, NULL), 0);
    ASSERT_EQ_INT(other->ops->begin(other), 0);

    struct series_table t;
    ASSERT_EQ_INT(series_table_init(&t), 0);
    uint32_t a;
    ASSERT_EQ_INT(series_get(&t, "mem.used_bytes", "", "bytes", &a), 0);
    ta.n = 0;
    int64_t ts = INT64_C(1717000000000000000);
    for (int i = 0; i < 1500; i++, ts += NS_PER_S)
        put_truth(&t, a, &ta, ts, (double)(i * 4096));
    struct writer w;
    struct batch b1, b2;
    batch_init(&b1);
    batch_init(&b2);
    ASSERT_EQ_INT(writer_start(&w, r.store), 0);
    ASSERT_EQ_INT(batch_collect(&b1, &t), 0);
    batch_run(&b1, &r, 1500);
    ASSERT_EQ_INT(writer_submit(&w, &b1), 1);
    /* the writer waits on the lock: a second batch is not taken */
    ASSERT(writer_busy(&w));
    ASSERT_EQ_INT(writer_submit(&w, &b2), 0);
    writer_wait(&w);
    ASSERT_EQ_INT(b1.result, -STROBE_EBUSY);
    batch_settle(&b1, &t);
    ASSERT_EQ_INT(sealed_count(&t.items[a]), 1); /* kept for the next try */

    ASSERT_EQ_INT(other->ops->rollback(other), 0);
    for (int i = 0; i < 10; i++, ts += NS_PER_S)
        put_truth(&t, a, &ta, ts, -1.0 * i);
    ASSERT_EQ_INT(batch_collect(&b1, &t), 0);
    batch_run(&b1, &r, 1510);
    ASSERT_EQ_INT(commit(&w, &b1, &t), 0);
    writer_stop(&w);

    struct found f;
    memset(&f, 0, sizeof(f));
    ASSERT_EQ_INT(r.store->ops->series_query(r.store, r.run.id, on_series, &f), 0);
    ASSERT_EQ_INT(f.n, 1); /* defined once, not twice */
    ASSERT_EQ_INT(f.count[0], 1510);
    check_points(r.store, f.id[0], &ta);

    store_close(other);
    batch_release(&b1);
    batch_release(&b2);
    series_table_release(&t);
    rig_close(&r);
}

/* writer_busy_store_loses_nothing holds SQLite's write lock: SQLite only */
TEST_CASES_ONCE(get_put, retire_seals_frees_and_revives, hash_grows_past_256_and_512,
                seals_at_block_points, seals_when_the_block_is_full,
                pending_cap_drops_oldest_sealed, frozen_table_drops_nothing,
                release_sealed_and_seal_all, batch_collect_and_settle_ok,
                batch_collect_open_blocks_every_third, batch_settle_failure_keeps_everything,
                writer_busy_store_loses_nothing)
TEST_CASES_BOTH(writer_thread_persists_bit_exactly)
STORE_TEST_MAIN()
