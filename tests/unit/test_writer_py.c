/*
 * Python stack sample blocks through the store writer (record/writer.h):
 * a batch of nothing else commits them; a failed commit keeps them for the
 * next batch and a successful one frees them; past the cap the oldest
 * samples blocks are dropped and counted, never a dictionary. What the
 * store then holds is loaded back (pyprof/profile.h) and compared with the
 * samples the test made.
 */
#include "record/writer.h"

#include "common/err.h"
#include "pyprof/profile.h"
#include "sample/series.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define RUN_ID "0123456789abcdef"
#define T0     INT64_C(1767225600000000000)
#define SEC    INT64_C(1000000000)

struct rig {
    struct store_rig sr;
    struct store *store;
    struct series_table t; /* empty: the batches carry Python blocks only */
    struct writer w;
    struct batch b;
    struct py_profile p;
};

static void rig_open(struct rig *r)
{
    store_rig_init(&r->sr);
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(r->sr.db, 0, &r->store, &err) < 0)
        TEST_FAIL("store_open: %s", err.buf);
    strbuf_release(&err);
    struct run_record run;
    run_record_init(&run);
    snprintf(run.id, sizeof(run.id), RUN_ID);
    run.name = strdup("py-writer");
    run.command_json = strdup("[\"train\"]");
    run.start_ns = T0;
    snprintf(run.status, sizeof(run.status), RUN_RUNNING);
    ASSERT_EQ_INT(r->store->ops->run_insert(r->store, &run), 0);
    run_record_release(&run);
    ASSERT_EQ_INT(series_table_init(&r->t), 0);
    batch_init(&r->b);
    ASSERT_EQ_INT(writer_start(&r->w, r->store), 0);
    py_profile_init(&r->p);
}

static void rig_close(struct rig *r)
{
    writer_stop(&r->w);
    batch_release(&r->b);
    series_table_release(&r->t);
    py_profile_release(&r->p);
    store_close(r->store);
    store_rig_release(&r->sr);
}

/* Sample k of second sec: on a 1/n s grid, with up to 1 ms of jitter (whole
 * microseconds, as blocks keep them) that zstd cannot squeeze away. */
static int64_t sample_ns(int sec, int k, int n)
{
    uint64_t seed = (uint64_t)(sec * 100003 + k) * 2654435761u + 1;
    return T0 + sec * SEC + k * (SEC / n) + (int64_t)(rng_next(&seed) % 1000) * 1000;
}

/* One second of samples of a loop's 3 stacks (a new frame each second, so
 * each take has a dictionary), taken into blocks and moved into the batch. */
static void second_of_samples(struct rig *r, int sec, int nsamples)
{
    char func[32];
    uint32_t root, leaf, stack[3];
    snprintf(func, sizeof(func), "step_%d", sec);
    ASSERT_EQ_INT(py_profile_frame(&r->p, "main", "train.py", 1, &root), 0);
    ASSERT_EQ_INT(py_profile_frame(&r->p, func, "train.py", 10 + (uint32_t)sec, &leaf), 0);
    for (uint32_t d = 0; d < 3; d++) {
        uint32_t ids[3] = {root, leaf, root};
        ASSERT_EQ_INT(py_profile_stack(&r->p, ids, d + 1, &stack[d]), 0);
    }
    ASSERT_EQ_INT(py_profile_thread(&r->p, 50, 51, "python3"), 0);
    for (int i = 0; i < nsamples; i++) {
        struct py_sample s = {
            sample_ns(sec, i, nsamples), 50, 51, stack[i % 3], (uint8_t)(i % 6), (uint8_t)(i % 2)};
        ASSERT_EQ_INT(py_profile_add(&r->p, &s), 0);
    }
    struct py_block_out out[2];
    int n;
    ASSERT_EQ_INT(py_profile_take(&r->p, out, &n), 0);
    ASSERT_EQ_INT(n, 2);
    ASSERT_EQ_INT(batch_add_py_blocks(&r->b, out, n), 0);
}

/* Hand the batch over as the recorder does; the writer's result. */
static int commit(struct rig *r)
{
    ASSERT_EQ_INT(batch_collect(&r->b, &r->t), 0);
    snprintf(r->b.run.id, sizeof(r->b.run.id), RUN_ID);
    snprintf(r->b.run.status, sizeof(r->b.run.status), RUN_RUNNING);
    ASSERT_EQ_INT(writer_submit(&r->w, &r->b), 1);
    writer_wait(&r->w);
    int rc = r->b.result;
    batch_settle(&r->b, &r->t);
    return rc;
}

struct loaded {
    struct py_profile q;
    int64_t seqs[64];
    int n;
};

static int load_block(const struct py_block_record *b, void *arg)
{
    struct loaded *l = arg;
    struct strbuf why;
    strbuf_init(&why);
    if (py_profile_load(&l->q, b->kind, b->data, b->len, &why) != 0)
        TEST_FAIL("block %" PRId64 ": %s", b->seq, why.buf);
    strbuf_release(&why);
    if (l->n < 64)
        l->seqs[l->n] = b->seq;
    l->n++;
    return 0;
}

static void load_stored(struct store *s, struct loaded *l)
{
    memset(l, 0, sizeof(*l));
    py_profile_init(&l->q);
    ASSERT_EQ_INT(s->ops->py_blocks_query(s, RUN_ID, INT64_MIN, INT64_MAX, load_block, l), 0);
}

/* The samples of second sec, as second_of_samples made them, at q's i. */
static void expect_second(const struct py_profile *q, size_t i, int sec, int nsamples)
{
    for (int k = 0; k < nsamples; k++) {
        const struct py_sample *s = &q->samples[i + (size_t)k];
        ASSERT_EQ_INT(s->t_ns, sample_ns(sec, k, nsamples));
        ASSERT_EQ_INT(s->tid, 51);
        ASSERT_EQ_INT(s->state, k % 6);
        ASSERT_EQ_INT(s->gil, k % 2);
        uint32_t depth;
        py_profile_stack_frames(q, s->stack, &depth);
        ASSERT_EQ_INT(depth, k % 3 + 1);
    }
}

TEST(py_only_batch_commits)
{
    struct rig r;
    rig_open(&r);
    second_of_samples(&r, 0, 100);
    second_of_samples(&r, 1, 100);
    ASSERT_EQ_INT(r.b.npy, 4);
    ASSERT_EQ_INT(commit(&r), 0);
    ASSERT_EQ_INT(r.b.npy, 0); /* stored, freed */
    ASSERT_EQ_INT(r.b.py_bytes, 0);
    struct loaded l;
    load_stored(r.store, &l);
    ASSERT_EQ_INT(l.n, 4);
    ASSERT_EQ_INT(l.q.nsamples, 200);
    expect_second(&l.q, 0, 0, 100);
    expect_second(&l.q, 100, 1, 100);
    ASSERT_EQ_STR(l.q.frames[2].func, "step_1");
    py_profile_release(&l.q);
    rig_close(&r);
}

/* A commit the store refuses keeps the blocks; the next stores them all,
 * with those added since, in seq order. */
TEST(failed_commit_keeps_py_blocks)
{
    struct rig r;
    rig_open(&r);
    struct store *other; /* holds SQLite's write lock past the busy timeout */
    ASSERT_EQ_INT(store_open(r.sr.db, 0, &other, NULL), 0);
    ASSERT_EQ_INT(other->ops->begin(other), 0);
    second_of_samples(&r, 0, 50);
    ASSERT_EQ_INT(commit(&r), -STROBE_EBUSY);
    ASSERT_EQ_INT(r.b.npy, 2);
    ASSERT_EQ_INT(other->ops->rollback(other), 0);
    store_close(other);
    second_of_samples(&r, 1, 50);
    ASSERT_EQ_INT(r.b.npy, 4);
    ASSERT_EQ_INT(commit(&r), 0);
    ASSERT_EQ_INT(r.b.npy, 0);
    struct loaded l;
    load_stored(r.store, &l);
    ASSERT_EQ_INT(l.n, 4);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ_INT(l.seqs[i], i);
    ASSERT_EQ_INT(l.q.nsamples, 100);
    expect_second(&l.q, 0, 0, 50);
    expect_second(&l.q, 50, 1, 50);
    ASSERT_EQ_INT(r.b.py_dropped_blocks, 0);
    py_profile_release(&l.q);
    rig_close(&r);
}

/* A store that does not answer for long: past the cap the oldest samples
 * go, counted; every dictionary stays, so the samples kept still load. */
TEST(cap_drops_oldest_samples_never_dictionaries)
{
    struct rig r;
    rig_open(&r);
    struct store *other;
    ASSERT_EQ_INT(store_open(r.sr.db, 0, &other, NULL), 0);
    ASSERT_EQ_INT(other->ops->begin(other), 0);
    second_of_samples(&r, 0, 400);
    size_t one_second = r.b.py_bytes; /* about one dictionary and one samples block */
    r.b.py_cap_bytes = one_second * 3;
    for (int sec = 1; sec < 10; sec++) {
        second_of_samples(&r, sec, 400);
        ASSERT(r.b.py_bytes <= r.b.py_cap_bytes);
    }
    ASSERT_EQ_INT(commit(&r), -STROBE_EBUSY);
    uint32_t dicts = 0, samples = 0;
    for (uint32_t i = 0; i < r.b.npy; i++) {
        dicts += r.b.py[i].kind == PY_BLOCK_DICT;
        samples += r.b.py[i].kind == PY_BLOCK_SAMPLES;
        ASSERT(i == 0 || r.b.py[i].seq > r.b.py[i - 1].seq);
    }
    ASSERT_EQ_INT(dicts, 10);
    ASSERT(samples >= 1 && samples < 10);
    ASSERT_EQ_INT(r.b.py_dropped_blocks, 10 - samples);
    ASSERT_EQ_INT(r.b.py_dropped_samples, 400 * (10 - samples));
    ASSERT_EQ_INT(other->ops->rollback(other), 0);
    store_close(other);
    ASSERT_EQ_INT(commit(&r), 0);
    struct loaded l;
    load_stored(r.store, &l);
    ASSERT_EQ_INT(l.n, 10 + (int)samples);
    ASSERT_EQ_INT(l.q.nframes, 11); /* main and each second's step */
    ASSERT_EQ_INT(l.q.nsamples, 400 * samples);
    /* the newest seconds are the ones kept */
    for (uint32_t k = 0; k < samples; k++)
        expect_second(&l.q, 400 * k, 10 - (int)samples + (int)k, 400);
    py_profile_release(&l.q);
    rig_close(&r);
}

TEST_CASES_ONCE(failed_commit_keeps_py_blocks, cap_drops_oldest_samples_never_dictionaries)
TEST_CASES_BOTH(py_only_batch_commits)
STORE_TEST_MAIN()
