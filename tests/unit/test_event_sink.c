/*
 * The recorder's event sink (record/events.h) and the step analysis that
 * reads what it stored (analyze/steps.h).
 *
 * The sink is fed through its own segment: a writer in this process attaches
 * to it and pushes hand-made records (or libstrobe does, in a forked child),
 * the sink drains and seals, and the sealed blocks are decoded and compared
 * event by event. Batches go through a real store (SQLite, and PostgreSQL
 * on the pg/ pass) and come back through its queries. The analysis reads runs whose events were
 * written block by block with known spans, so every phase figure is exact.
 */
#include "common/array.h"
#include "record/event_block.h"
#include "record/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "analyze/steps.h"
#include "common/strbuf.h"
#include "sample/series.h"
#include "store/store.h"
#include "strobe/strobe.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define MONO0    INT64_C(5000000000)          /* the job's start on CLOCK_MONOTONIC */
#define REAL0    INT64_C(1700000000000000000) /* the same instant in UTC */
#define AT(off)  (MONO0 + (int64_t)(off))     /* a writer's timestamp */
#define UTC(off) (REAL0 + (int64_t)(off))     /* what the sink makes of it */

/* pids above PID_MAX_LIMIT (4M): no such process, so their rings are
 * reclaimed at the drain that empties them */
#define FAKE_PID  0x7ffff000
#define FAKE_PID2 0x7ffff100
#define FAKE_PID3 0x7ffff200

static pid_t my_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Exact, printing both values on failure (-0.0 equals 0.0; no NaN here). */
#define ASSERT_EQ_DBL(a, b) ASSERT_NEAR((a), (b), 0)

static uint64_t dbl_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

/* ---- a sink and a writer ---------------------------------------------------------- */

struct rig {
    struct event_sink k;
    struct series_table series;
    struct ring_segment w; /* the writer's own mapping of the sink's segment */
    char run_id[RUN_ID_LEN + 1];
};

static void rig_open_root(struct rig *r, unsigned tag, pid_t root)
{
    snprintf(r->run_id, sizeof(r->run_id), "%08x%08x", (unsigned)getpid(), tag);
    char seg[64];
    snprintf(seg, sizeof(seg), "/strobe-%s", r->run_id);
    shm_unlink(seg);
    test_shm_track(seg);
    ASSERT_EQ_INT(series_table_init(&r->series), 0);
    ASSERT_EQ_INT(event_sink_open(&r->k, r->run_id, &r->series, NULL), 0);
    ASSERT_EQ_STR(event_sink_shm_name(&r->k), seg);
    event_sink_start(&r->k, MONO0, REAL0, root);
    ASSERT_EQ_INT(ring_segment_attach(&r->w, event_sink_shm_name(&r->k)), 0);
}

static void rig_open(struct rig *r, unsigned tag)
{
    rig_open_root(r, tag, getpid());
}

static void rig_close(struct rig *r)
{
    ring_segment_release(&r->w);
    event_sink_close(&r->k);
    ASSERT(event_sink_shm_name(&r->k) == NULL);
    series_table_release(&r->series);
}

static void push(struct rig *r, int ring, uint8_t kind, uint32_t name, uint32_t step, int64_t ts,
                 uint64_t value)
{
    struct strobe_record rec = {
        .ts_ns = (uint64_t)ts, .value = value, .name_id = name, .step = step, .kind = kind};
    ASSERT_EQ_INT(ring_push(&r->w, ring, rec), 0);
}

static void push_counter(struct rig *r, int ring, uint32_t name, uint32_t step, int64_t ts,
                         double v)
{
    push(r, ring, STROBE_EV_COUNTER, name, step, ts, dbl_bits(v));
}

static void define(struct rig *r, int ring, uint32_t id, const char *name)
{
    ASSERT_EQ_INT(ring_push_name(&r->w, ring, id, name, AT(0)), 0);
}

/* The run-wide name of id. */
static const char *sink_name(const struct event_sink *k, uint32_t id)
{
    if (!id || id > k->names.n)
        TEST_FAIL("name id %u not defined (%u names)", id, k->names.n);
    return k->names.s[id - 1];
}

static uint32_t sink_id(const struct event_sink *k, const char *name)
{
    for (uint32_t i = 0; i < k->names.n; i++)
        if (strcmp(k->names.s[i], name) == 0)
            return i + 1;
    TEST_FAIL("name \"%s\" not defined", name);
}

static const struct event_proc *sink_proc(const struct event_sink *k, pid_t pid)
{
    for (uint32_t i = 0; i < k->nprocs; i++)
        if (k->procs[i].pid == pid)
            return &k->procs[i];
    TEST_FAIL("no process %d in the sink", (int)pid);
}

static uint32_t sealed_count(const struct event_sink *k)
{
    uint32_t n = 0;
    for (const struct event_sealed *b = k->sealed_head; b; b = b->next)
        n++;
    return n;
}

/* ---- decoding what was sealed --------------------------------------------------------- */

#define VIEW_BLOCKS 64
#define VIEW_EVENTS 20000

struct view {
    uint32_t nblocks;
    struct event_block_record rec[VIEW_BLOCKS]; /* data pointers not kept */
    uint32_t first[VIEW_BLOCKS];                /* the block's first event in ev[] */
    uint32_t n;
    struct event ev[VIEW_EVENTS];
};

static struct view g_view;

/* Decode one block onto v, checking its record's summary against its events. */
static void view_add(struct view *v, struct event_decoder *dec,
                     const struct event_block_record *rec)
{
    ASSERT(v->nblocks < VIEW_BLOCKS);
    uint32_t got = 0;
    ASSERT_EQ_INT(
        event_block_decode(dec, rec->data, rec->len, v->ev + v->n, VIEW_EVENTS - v->n, &got), 0);
    ASSERT_EQ_INT(got, rec->count);
    struct event_block_info info;
    event_block_summarize(v->ev + v->n, got, &info);
    ASSERT_EQ_INT(rec->start_ns, info.start_ns);
    ASSERT_EQ_INT(rec->end_ns, info.end_ns);
    ASSERT_EQ_INT(rec->step_min, info.step_min);
    ASSERT_EQ_INT(rec->step_max, info.step_max);
    v->rec[v->nblocks] = *rec;
    v->rec[v->nblocks].data = NULL;
    v->first[v->nblocks++] = v->n;
    v->n += got;
}

/* Every sealed block of k, in list order. */
static struct view *view_sealed(const struct event_sink *k)
{
    struct view *v = &g_view;
    v->nblocks = v->n = 0;
    struct event_decoder dec;
    ASSERT_EQ_INT(event_decoder_init(&dec), 0);
    for (const struct event_sealed *b = k->sealed_head; b; b = b->next)
        view_add(v, &dec, &b->rec);
    event_decoder_release(&dec);
    return v;
}

#define EXPECT_EV(e, kind, ts, value, name, step)                                                  \
    expect_ev(__LINE__, (e), (kind), (ts), (value), (name), (step))

static void expect_ev(int line, const struct event *e, int kind, int64_t ts, int64_t value,
                      uint32_t name, uint32_t step)
{
    if (e->kind != kind || e->ts_ns != ts || e->value != value || e->name != name ||
        e->step != step)
        TEST_FAIL("line %d: got (kind %u ts %" PRId64 " value %" PRId64 " name %u step %u), want "
                  "(kind %d ts %" PRId64 " value %" PRId64 " name %u step %u)",
                  line, e->kind, e->ts_ns, e->value, e->name, e->step, kind, ts, value, name, step);
}

/* ---- threads that stay alive while the test writes for them ---------------------------- */

struct parked {
    pthread_t th;
    atomic_int tid;
    int fd[2];
};

static void *park_main(void *p)
{
    struct parked *x = p;
    atomic_store(&x->tid, (int)my_tid());
    char c;
    while (read(x->fd[0], &c, 1) > 0)
        ; /* until the write end is closed */
    return NULL;
}

static pid_t park_start(struct parked *x)
{
    atomic_store(&x->tid, 0);
    ASSERT_EQ_INT(pipe(x->fd), 0);
    ASSERT_EQ_INT(pthread_create(&x->th, NULL, park_main, x), 0);
    while (!atomic_load(&x->tid))
        usleep(100);
    return (pid_t)atomic_load(&x->tid);
}

static void park_stop(struct parked *x)
{
    close(x->fd[1]);
    pthread_join(x->th, NULL);
    close(x->fd[0]);
}

/* ---- pairing, passing through, the clock ---------------------------------------------- */

TEST(spans_pair_and_events_pass_through_in_utc)
{
    static struct rig r;
    rig_open(&r, 1);
    int ring = ring_claim(&r.w, getpid(), my_tid());
    ASSERT(ring >= 0);
    /* ring ids are not the run-wide ones: 101.. become 1.. in definition order */
    static const char *const names[] = {"forward",    "backward",   "comm:allreduce",
                                        "checkpoint", "data",       "orphan",
                                        "open.outer", "open.inner", "never.closed"};
    for (uint32_t i = 0; i < 9; i++)
        define(&r, ring, 101 + i, names[i]);
    enum { FWD = 1, BWD, COMM, CKPT, DATA, ORPHAN, OUTER, INNER, OPEN };
    push(&r, ring, STROBE_EV_STEP, 0, 3, AT(100), 3);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + FWD, 3, AT(200), 0);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + BWD, 3, AT(300), 0);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + COMM, 4, AT(350), 0);
    push(&r, ring, STROBE_EV_SPAN_END, 100 + COMM, 5, AT(450), 0);
    push(&r, ring, STROBE_EV_SPAN_END, 100 + BWD, 4, AT(600), 0);
    push(&r, ring, STROBE_EV_SPAN_END, 100 + FWD, 4, AT(1000), 0);
    push(&r, ring, STROBE_EV_COMPLETE, 100 + DATA, 3, AT(50), 40);
    push(&r, ring, STROBE_EV_INSTANT, 100 + CKPT, 3, AT(1100), 0);
    push(&r, ring, STROBE_EV_SPAN_END, 100 + ORPHAN, 3, AT(1200), 0); /* its begin never came */
    /* an outer span closed with two spans still open inside it */
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + OUTER, 6, AT(1300), 0);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + INNER, 6, AT(1400), 0);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + FWD, 6, AT(1500), 0);
    push(&r, ring, STROBE_EV_SPAN_END, 100 + OUTER, 6, AT(1600), 0);
    /* still open at the end of the run */
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + BWD, 7, AT(1700), 0);
    push(&r, ring, STROBE_EV_SPAN_BEGIN, 100 + OPEN, 7, AT(1800), 0);
    /* a step past the end of the mapping's start: the clock mapping is linear */
    push(&r, ring, STROBE_EV_STEP, 0, 8, AT(INT64_C(3600000000000)), 8);
    event_sink_drain(&r.k, AT(2000));
    ASSERT_EQ_INT(sealed_count(&r.k), 0); /* not full, not old */
    ASSERT_EQ_INT(r.k.names.n, 9);
    for (uint32_t i = 0; i < 9; i++)
        ASSERT_EQ_STR(sink_name(&r.k, i + 1), names[i]);
    event_sink_seal_all(&r.k);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->nblocks, 1);
    ASSERT_EQ_INT(v->n, 13);
    const struct event *e = v->ev;
    EXPECT_EV(&e[0], STROBE_EV_STEP, UTC(100), 3, 0, 3);
    EXPECT_EV(&e[1], STROBE_EV_COMPLETE, UTC(350), 100, COMM, 4); /* the begin's step */
    EXPECT_EV(&e[2], STROBE_EV_COMPLETE, UTC(300), 300, BWD, 3);
    EXPECT_EV(&e[3], STROBE_EV_COMPLETE, UTC(200), 800, FWD, 3);
    EXPECT_EV(&e[4], STROBE_EV_COMPLETE, UTC(50), 40, DATA, 3);
    EXPECT_EV(&e[5], STROBE_EV_INSTANT, UTC(1100), 0, CKPT, 3);
    EXPECT_EV(&e[6], STROBE_EV_SPAN_END, UTC(1200), 0, ORPHAN, 3);
    EXPECT_EV(&e[7], STROBE_EV_SPAN_BEGIN, UTC(1500), 0, FWD, 6);
    EXPECT_EV(&e[8], STROBE_EV_SPAN_BEGIN, UTC(1400), 0, INNER, 6);
    EXPECT_EV(&e[9], STROBE_EV_COMPLETE, UTC(1300), 300, OUTER, 6);
    EXPECT_EV(&e[10], STROBE_EV_STEP, UTC(INT64_C(3600000000000)), 8, 0, 8);
    /* sealed at the end: the innermost first */
    EXPECT_EV(&e[11], STROBE_EV_SPAN_BEGIN, UTC(1800), 0, OPEN, 7);
    EXPECT_EV(&e[12], STROBE_EV_SPAN_BEGIN, UTC(1700), 0, BWD, 7);
    ASSERT_EQ_INT(v->rec[0].pid, getpid());
    ASSERT_EQ_INT(v->rec[0].tid, my_tid());
    ASSERT_EQ_INT(v->rec[0].start_ns, UTC(50));
    ASSERT_EQ_INT(v->rec[0].end_ns, UTC(INT64_C(3600000000000)));
    ASSERT_EQ_INT(v->rec[0].step_min, 3);
    ASSERT_EQ_INT(v->rec[0].step_max, 8);
    ASSERT_EQ_U64(r.k.events, 13);
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 0);
    ASSERT_EQ_U64(r.k.st.records, 17);
    ASSERT_EQ_U64(r.k.st.names, 9);
    ASSERT_EQ_U64(r.k.st.invalid, 0);
    ASSERT_EQ_INT(r.k.pending_bytes, v->rec[0].len);
    rig_close(&r);
}

/* Recursion deeper than the open-span stack: the spans beyond it are dropped
 * and counted, and every span within it still pairs with its own end (not
 * with the end of the span nested EVENT_OPEN_MAX levels further in). */
TEST(spans_nested_too_deep_are_dropped_and_the_rest_pair)
{
    static struct rig r;
    rig_open(&r, 11);
    int ring = ring_claim(&r.w, getpid(), my_tid());
    ASSERT(ring >= 0);
    define(&r, ring, 1, "rec");
    enum { DEPTH = EVENT_OPEN_MAX + 6 };
    /* level d (1..DEPTH) begins at 10 d and ends at 10 (2 DEPTH + 1 - d) */
    for (int d = 1; d <= DEPTH; d++)
        push(&r, ring, STROBE_EV_SPAN_BEGIN, 1, 1, AT(10 * d), 0);
    for (int d = DEPTH; d >= 1; d--)
        push(&r, ring, STROBE_EV_SPAN_END, 1, 1, AT(10 * (2 * DEPTH + 1 - d)), 0);
    event_sink_drain(&r.k, AT(5000));
    event_sink_seal_all(&r.k);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->n, EVENT_OPEN_MAX);
    for (int i = 0; i < EVENT_OPEN_MAX; i++) { /* closed innermost first */
        int d = EVENT_OPEN_MAX - i;
        EXPECT_EV(&v->ev[i], STROBE_EV_COMPLETE, UTC(10 * d), 10 * (2 * DEPTH + 1 - 2 * d), 1, 1);
    }
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 6);
    rig_close(&r);
}

TEST(names_are_run_wide_across_threads_and_reclaimed_rings)
{
    static struct rig r;
    rig_open(&r, 2);
    struct parked other, later;
    pid_t other_tid = park_start(&other), later_tid = park_start(&later);
    int a = ring_claim(&r.w, getpid(), my_tid());
    int b = ring_claim(&r.w, getpid(), other_tid);
    int x = ring_claim(&r.w, getpid(), 0x7ffffff0); /* a thread that is gone */
    ASSERT_EQ_INT(a, 0);
    ASSERT_EQ_INT(b, 1);
    ASSERT_EQ_INT(x, 2);
    /* two threads define the same names under different ids */
    define(&r, a, 1, "forward");
    define(&r, b, 1, "backward");
    define(&r, b, 7, "forward");
    define(&r, x, 1, "data");
    define(&r, x, 2, "backward");
    push(&r, a, STROBE_EV_INSTANT, 1, 0, AT(10), 0);
    push(&r, b, STROBE_EV_INSTANT, 7, 0, AT(20), 0);
    push(&r, b, STROBE_EV_INSTANT, 1, 0, AT(30), 0);
    push(&r, x, STROBE_EV_INSTANT, 1, 0, AT(40), 0);
    push(&r, x, STROBE_EV_INSTANT, 2, 0, AT(50), 0);
    push(&r, x, STROBE_EV_SPAN_BEGIN, 2, 0, AT(55), 0); /* never ended: its thread died */
    event_sink_drain(&r.k, AT(1000));
    ASSERT_EQ_U64(r.k.st.reclaimed, 1);
    ASSERT_EQ_INT(r.k.names.n, 3);
    ASSERT_EQ_STR(sink_name(&r.k, 1), "forward");
    ASSERT_EQ_STR(sink_name(&r.k, 2), "backward");
    ASSERT_EQ_STR(sink_name(&r.k, 3), "data");
    /* the ring comes back to another thread, whose ids mean other names; id 2
     * must not keep meaning "backward" */
    int y = ring_claim(&r.w, getpid(), later_tid);
    ASSERT_EQ_INT(y, x);
    define(&r, y, 1, "backward");
    define(&r, y, 2, "optimizer");
    push(&r, y, STROBE_EV_INSTANT, 2, 0, AT(60), 0);
    push(&r, y, STROBE_EV_INSTANT, 1, 0, AT(70), 0);
    push(&r, y, STROBE_EV_INSTANT, 3, 0, AT(80), 0); /* an id it never defined: lost */
    event_sink_drain(&r.k, AT(2000));
    ASSERT_EQ_INT(r.k.names.n, 4);
    ASSERT_EQ_STR(sink_name(&r.k, 4), "optimizer");
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 1);
    /* the old owner's block was sealed when the new owner's first record came */
    ASSERT_EQ_INT(sealed_count(&r.k), 1);
    event_sink_seal_all(&r.k);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->nblocks, 4);
    /* x, then the open blocks in ring order: a, b, y */
    ASSERT_EQ_INT(v->rec[0].tid, 0x7ffffff0);
    ASSERT_EQ_INT(v->rec[0].count, 3);
    EXPECT_EV(&v->ev[v->first[0]], STROBE_EV_INSTANT, UTC(40), 0, 3, 0);
    EXPECT_EV(&v->ev[v->first[0] + 1], STROBE_EV_INSTANT, UTC(50), 0, 2, 0);
    EXPECT_EV(&v->ev[v->first[0] + 2], STROBE_EV_SPAN_BEGIN, UTC(55), 0, 2, 0);
    ASSERT_EQ_INT(v->rec[1].tid, my_tid());
    ASSERT_EQ_INT(v->rec[1].count, 1);
    EXPECT_EV(&v->ev[v->first[1]], STROBE_EV_INSTANT, UTC(10), 0, 1, 0);
    ASSERT_EQ_INT(v->rec[2].tid, other_tid);
    ASSERT_EQ_INT(v->rec[2].count, 2);
    EXPECT_EV(&v->ev[v->first[2]], STROBE_EV_INSTANT, UTC(20), 0, 1, 0);
    EXPECT_EV(&v->ev[v->first[2] + 1], STROBE_EV_INSTANT, UTC(30), 0, 2, 0);
    ASSERT_EQ_INT(v->rec[3].tid, later_tid);
    ASSERT_EQ_INT(v->rec[3].count, 2);
    EXPECT_EV(&v->ev[v->first[3]], STROBE_EV_INSTANT, UTC(60), 0, 4, 0);
    EXPECT_EV(&v->ev[v->first[3] + 1], STROBE_EV_INSTANT, UTC(70), 0, 2, 0);
    for (uint32_t i = 0; i < 4; i++)
        ASSERT_EQ_INT(v->rec[i].pid, getpid());
    ASSERT_EQ_U64(r.k.events, 8);
    park_stop(&other);
    park_stop(&later);
    rig_close(&r);
}

/* ---- process attributes and app.<name> counters ----------------------------------------- */

static const struct series *find_series(const struct series_table *t, const char *name,
                                        const char *labels)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (strcmp(t->items[i].name, name) == 0 && strcmp(t->items[i].labels, labels) == 0)
            return &t->items[i];
    TEST_FAIL("no series %s{%s}", name, labels);
}

TEST(meta_counters_set_process_attributes_and_app_counters_make_series)
{
    static struct rig r;
    rig_open(&r, 3);
    int m = ring_claim(&r.w, getpid(), my_tid());
    int w = ring_claim(&r.w, FAKE_PID, FAKE_PID); /* a data-loader worker */
    define(&r, m, 1, "loss");
    define(&r, m, 2, "strobe.rank");
    define(&r, m, 3, "strobe.local_rank");
    define(&r, m, 4, "strobe.world_size");
    define(&r, m, 5, "strobe.something_new"); /* unknown: ignored, no event either */
    define(&r, w, 1, "strobe.worker_id");
    push_counter(&r, m, 1, 0, AT(10), 0.5); /* before the rank is known */
    push_counter(&r, m, 2, 0, AT(20), 3.0);
    push_counter(&r, m, 3, 0, AT(21), 1.0);
    push_counter(&r, m, 4, 0, AT(22), 4.0);
    push_counter(&r, m, 5, 0, AT(23), 9.0);
    push_counter(&r, m, 2, 0, AT(24), -1.0); /* nonsense: ignored */
    push_counter(&r, m, 1, 1, AT(30), 0.25);
    push_counter(&r, m, 1, 2, AT(40), 0.125);
    push_counter(&r, w, 1, 0, AT(15), 2.0);
    push(&r, w, STROBE_EV_INSTANT, 0, 0, AT(16), 0);
    event_sink_drain(&r.k, AT(100));

    const struct event_proc *p = sink_proc(&r.k, getpid());
    ASSERT_EQ_INT(p->rank, 3);
    ASSERT_EQ_INT(p->local_rank, 1);
    ASSERT_EQ_INT(p->world_size, 4);
    ASSERT_EQ_INT(p->worker_id, -1);
    ASSERT_EQ_INT(p->version, 4); /* created at 1, then three changes */
    ASSERT_EQ_INT(p->stored, 0);
    const struct event_proc *q = sink_proc(&r.k, FAKE_PID);
    ASSERT_EQ_INT(q->worker_id, 2);
    ASSERT_EQ_INT(q->rank, -1);
    ASSERT_EQ_INT(r.k.nprocs, 2);

    /* app.loss before and after the rank was known */
    ASSERT_EQ_INT(r.series.count, 2);
    const struct series *plain = find_series(&r.series, "app.loss", "");
    ASSERT_EQ_INT(plain->enc.st.count, 1);
    ASSERT_EQ_INT(plain->enc.st.start_ns, UTC(10));
    ASSERT_EQ_DBL(plain->enc.st.first, 0.5);
    const struct series *ranked = find_series(&r.series, "app.loss", "rank=3");
    ASSERT_EQ_INT(ranked->enc.st.count, 2);
    ASSERT_EQ_INT(ranked->enc.st.start_ns, UTC(30));
    ASSERT_EQ_INT(ranked->enc.st.end_ns, UTC(40));
    ASSERT_EQ_DBL(ranked->enc.st.first, 0.25);
    ASSERT_EQ_DBL(ranked->enc.st.last, 0.125);

    /* the ordinary counters are events too; the strobe.* ones are not */
    event_sink_seal_all(&r.k);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->nblocks, 2);
    ASSERT_EQ_INT(v->rec[0].pid, getpid());
    ASSERT_EQ_INT(v->rec[0].count, 3);
    uint32_t loss = sink_id(&r.k, "loss");
    EXPECT_EV(&v->ev[0], STROBE_EV_COUNTER, UTC(10), (int64_t)dbl_bits(0.5), loss, 0);
    EXPECT_EV(&v->ev[1], STROBE_EV_COUNTER, UTC(30), (int64_t)dbl_bits(0.25), loss, 1);
    EXPECT_EV(&v->ev[2], STROBE_EV_COUNTER, UTC(40), (int64_t)dbl_bits(0.125), loss, 2);
    ASSERT_EQ_INT(v->rec[1].pid, FAKE_PID);
    ASSERT_EQ_INT(v->rec[1].count, 1);
    EXPECT_EV(&v->ev[3], STROBE_EV_INSTANT, UTC(16), 0, 0, 0);
    ASSERT_EQ_U64(r.k.events, 4);
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 0);
    rig_close(&r);
}

/* ---- sealing, the memory cap, drops ----------------------------------------------------- */

TEST(blocks_seal_when_full_and_when_old)
{
    static struct rig r;
    rig_open(&r, 4);
    int ring = ring_claim(&r.w, getpid(), my_tid());
    for (int64_t i = 0; i < EVENT_BLOCK_EVENTS; i++)
        push(&r, ring, STROBE_EV_INSTANT, 0, 1, AT(i), (uint64_t)i);
    event_sink_drain(&r.k, AT(0));
    ASSERT_EQ_INT(sealed_count(&r.k), 1); /* full: sealed at once */
    ASSERT_EQ_INT(r.k.sealed_head->rec.count, EVENT_BLOCK_EVENTS);
    ASSERT_EQ_INT(r.k.streams[ring].n, 0);
    /* one more than a block: the block is sealed and one event starts the next */
    for (int64_t i = 0; i <= EVENT_BLOCK_EVENTS; i++)
        push(&r, ring, STROBE_EV_INSTANT, 0, 2, AT(10000 + i), (uint64_t)i);
    const int64_t t1 = AT(1000000);
    event_sink_drain(&r.k, t1);
    ASSERT_EQ_INT(sealed_count(&r.k), 2);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.count, EVENT_BLOCK_EVENTS);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.start_ns, UTC(10000));
    ASSERT_EQ_INT(r.k.streams[ring].n, 1);
    /* the open block's age counts from the drain that brought its first event */
    push(&r, ring, STROBE_EV_INSTANT, 0, 3, AT(20000), 7);
    event_sink_drain(&r.k, t1 + EVENT_BLOCK_AGE_NS - 1);
    ASSERT_EQ_INT(sealed_count(&r.k), 2);
    ASSERT_EQ_INT(r.k.streams[ring].n, 2);
    event_sink_drain(&r.k, t1 + EVENT_BLOCK_AGE_NS);
    ASSERT_EQ_INT(sealed_count(&r.k), 3);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.count, 2);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.start_ns, UTC(10000 + EVENT_BLOCK_EVENTS));
    ASSERT_EQ_INT(r.k.sealed_tail->rec.end_ns, UTC(20000));
    ASSERT_EQ_INT(r.k.sealed_tail->rec.step_min, 2);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.step_max, 3);
    /* a new block starts its own clock */
    push(&r, ring, STROBE_EV_INSTANT, 0, 4, AT(30000), 8);
    const int64_t t2 = t1 + 2 * EVENT_BLOCK_AGE_NS;
    event_sink_drain(&r.k, t2);
    event_sink_drain(&r.k, t2 + EVENT_BLOCK_AGE_NS - 1);
    ASSERT_EQ_INT(sealed_count(&r.k), 3);
    event_sink_drain(&r.k, t2 + EVENT_BLOCK_AGE_NS);
    ASSERT_EQ_INT(sealed_count(&r.k), 4);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->n, 2 * EVENT_BLOCK_EVENTS + 2 + 1);
    for (uint32_t i = 0; i < EVENT_BLOCK_EVENTS; i++) {
        EXPECT_EV(&v->ev[i], STROBE_EV_INSTANT, UTC(i), i, 0, 1);
        EXPECT_EV(&v->ev[EVENT_BLOCK_EVENTS + i], STROBE_EV_INSTANT, UTC(10000 + i), i, 0, 2);
    }
    ASSERT_EQ_U64(r.k.events, 2 * EVENT_BLOCK_EVENTS + 3);
    size_t bytes = 0;
    for (uint32_t i = 0; i < v->nblocks; i++)
        bytes += v->rec[i].len;
    ASSERT_EQ_INT(r.k.pending_bytes, bytes);
    rig_close(&r);
}

TEST(memory_cap_drops_new_blocks_and_counts_them)
{
    static struct rig r;
    rig_open(&r, 5);
    int ring = ring_claim(&r.w, getpid(), my_tid());
    for (int64_t i = 0; i < 3; i++)
        push(&r, ring, STROBE_EV_INSTANT, 0, 0, AT(i), 0);
    event_sink_seal_all(&r.k);
    event_sink_drain(&r.k, AT(0));
    ASSERT_EQ_INT(sealed_count(&r.k), 0); /* seal_all before the drain: nothing yet */
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(sealed_count(&r.k), 1);
    size_t kept = r.k.pending_bytes;
    ASSERT(kept > 0);
    /* the store is far behind: the next block does not fit under the cap */
    r.k.pending_bytes = EVENT_PENDING_MAX - event_block_bound(10) + 1;
    for (int64_t i = 0; i < 10; i++)
        push(&r, ring, STROBE_EV_INSTANT, 0, 0, AT(100 + i), 0);
    event_sink_drain(&r.k, AT(200));
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(sealed_count(&r.k), 1);
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 10);
    ASSERT_EQ_U64(r.k.lost, 10);
    ASSERT_EQ_U64(r.k.events, 3);
    ASSERT_EQ_INT(r.k.pending_bytes, EVENT_PENDING_MAX - event_block_bound(10) + 1);
    /* exactly at the cap still fits */
    r.k.pending_bytes = EVENT_PENDING_MAX - event_block_bound(5);
    for (int64_t i = 0; i < 5; i++)
        push(&r, ring, STROBE_EV_INSTANT, 0, 0, AT(300 + i), 0);
    event_sink_drain(&r.k, AT(400));
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(sealed_count(&r.k), 2);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.count, 5);
    ASSERT_EQ_INT(r.k.sealed_tail->rec.start_ns, UTC(300));
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 10);
    ASSERT_EQ_U64(r.k.events, 8);
    rig_close(&r);
}

TEST(ring_drops_are_counted)
{
    static struct rig r;
    rig_open(&r, 6);
    int ring = ring_claim(&r.w, getpid(), my_tid());
    int refused = 0;
    for (int64_t i = 0; i < EVENT_RING_RECORDS + 7; i++) {
        struct strobe_record rec = {
            .ts_ns = (uint64_t)AT(i), .value = (uint64_t)i, .kind = STROBE_EV_INSTANT};
        refused += ring_push(&r.w, ring, rec) == -ENOSPC;
    }
    ASSERT_EQ_INT(refused, 7);
    ASSERT_EQ_INT(ring_push_name(&r.w, ring, 1, "late", AT(0)), -ENOSPC); /* one more */
    /* every other ring taken, and one claim that finds none: no event is lost
     * by it (libstrobe counts each event it then drops, once) */
    for (uint32_t i = 1; i < EVENT_RINGS; i++)
        ASSERT(ring_claim(&r.w, getpid(), my_tid()) >= 0);
    ASSERT_EQ_INT(ring_claim(&r.w, getpid(), my_tid()), -ENOSPC);
    event_sink_drain(&r.k, AT(0));
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 7 + 1);
    ASSERT_EQ_U64(r.k.st.records, EVENT_RING_RECORDS);
    ASSERT_EQ_U64(r.k.events, EVENT_RING_RECORDS);
    ASSERT_EQ_INT(sealed_count(&r.k), EVENT_RING_RECORDS / EVENT_BLOCK_EVENTS);
    /* an id the ring never defined (its definition was the dropped one) */
    push(&r, ring, STROBE_EV_INSTANT, 1, 0, AT(EVENT_RING_RECORDS), 0);
    event_sink_drain(&r.k, AT(1));
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 7 + 1 + 1);
    ASSERT_EQ_U64(r.k.events, EVENT_RING_RECORDS);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->n, EVENT_RING_RECORDS);
    EXPECT_EV(&v->ev[EVENT_RING_RECORDS - 1], STROBE_EV_INSTANT, UTC(EVENT_RING_RECORDS - 1),
              EVENT_RING_RECORDS - 1, 0, 0);
    rig_close(&r);
}

/* ---- through libstrobe, in a child process ------------------------------------------------ */

TEST(libstrobe_events_from_a_forked_child)
{
    static struct rig r;
    rig_open(&r, 7);
    int64_t before = mono_now();
    pid_t kid = fork();
    ASSERT(kid >= 0);
    if (kid == 0) {
        /* _exit, not exit: the parent's atexit handler would unlink the segment */
        setenv(STROBE_SHM_ENV, event_sink_shm_name(&r.k), 1);
        if (!strobe_enabled())
            _exit(3);
        strobe_counter("strobe.rank", 2);
        strobe_step(5);
        strobe_span_begin("forward");
        strobe_span_begin("backward");
        strobe_span_end("backward");
        strobe_span_end("forward");
        strobe_span_complete("data", MONO0 + 1000, 250);
        strobe_instant("checkpoint");
        strobe_counter("loss", 0.5);
        strobe_counter_at_step("loss", 0.75, 4);
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ_INT(waitpid(kid, &status, 0), kid);
    ASSERT_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    int64_t after = mono_now();
    event_sink_drain(&r.k, after);
    ASSERT_EQ_U64(r.k.st.reclaimed, 1);
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(r.k.names.n, 6);
    uint32_t fwd = sink_id(&r.k, "forward"), bwd = sink_id(&r.k, "backward");
    uint32_t loss = sink_id(&r.k, "loss");
    ASSERT_EQ_INT(sink_id(&r.k, "strobe.rank"), 1);
    struct view *v = view_sealed(&r.k);
    ASSERT_EQ_INT(v->nblocks, 1);
    ASSERT_EQ_INT(v->rec[0].pid, kid);
    ASSERT_EQ_INT(v->rec[0].tid, kid);
    ASSERT_EQ_INT(v->n, 7);
    const struct event *e = v->ev;
    /* the real clock: inside [before, after], mapped to UTC */
    int64_t lo = REAL0 + (before - MONO0), hi = REAL0 + (after - MONO0);
    ASSERT_EQ_INT(e[0].kind, STROBE_EV_STEP);
    ASSERT_EQ_INT(e[0].value, 5);
    ASSERT_EQ_INT(e[0].step, 5);
    ASSERT(e[0].ts_ns >= lo && e[0].ts_ns <= hi);
    ASSERT_EQ_INT(e[1].kind, STROBE_EV_COMPLETE);
    ASSERT_EQ_INT(e[1].name, bwd);
    ASSERT_EQ_INT(e[2].kind, STROBE_EV_COMPLETE);
    ASSERT_EQ_INT(e[2].name, fwd);
    ASSERT(e[2].ts_ns >= e[0].ts_ns && e[1].ts_ns >= e[2].ts_ns);
    ASSERT(e[1].value >= 0 && e[2].value >= e[1].value);
    ASSERT(e[1].ts_ns + e[1].value <= e[2].ts_ns + e[2].value);
    ASSERT(e[2].ts_ns + e[2].value <= hi);
    ASSERT_EQ_INT(e[1].step, 5);
    ASSERT_EQ_INT(e[2].step, 5);
    EXPECT_EV(&e[3], STROBE_EV_COMPLETE, UTC(1000), 250, sink_id(&r.k, "data"), 5);
    ASSERT_EQ_INT(e[4].kind, STROBE_EV_INSTANT);
    ASSERT_EQ_INT(e[4].name, sink_id(&r.k, "checkpoint"));
    ASSERT(e[4].ts_ns >= e[2].ts_ns + e[2].value && e[4].ts_ns <= hi);
    ASSERT_EQ_INT(e[5].kind, STROBE_EV_COUNTER);
    ASSERT_EQ_INT(e[5].name, loss);
    ASSERT_EQ_INT(e[5].value, (int64_t)dbl_bits(0.5));
    ASSERT_EQ_INT(e[5].step, 5);
    ASSERT_EQ_INT(e[6].value, (int64_t)dbl_bits(0.75));
    ASSERT_EQ_INT(e[6].step, 4);
    const struct event_proc *p = sink_proc(&r.k, kid);
    ASSERT_EQ_INT(p->rank, 2);
    const struct series *s = find_series(&r.series, "app.loss", "rank=2");
    ASSERT_EQ_INT(s->enc.st.count, 2);
    ASSERT_EQ_INT(s->enc.st.start_ns, e[5].ts_ns);
    ASSERT_EQ_DBL(s->enc.st.first, 0.5);
    ASSERT_EQ_DBL(s->enc.st.last, 0.75);
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 0);
    rig_close(&r);
}

/* ---- batches through a real store ------------------------------------------------------- */

struct db {
    struct store_rig rig; /* SQLite, or PostgreSQL on the pg/ pass */
    struct store *s;
};

static void db_open(struct db *d)
{
    store_rig_init(&d->rig);
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(d->rig.db, 0, &d->s, &err) < 0)
        TEST_FAIL("store_open: %s", err.buf);
    strbuf_release(&err);
}

static void db_close(struct db *d)
{
    store_close(d->s);
    store_rig_release(&d->rig);
}

static void db_insert_run(struct db *d, const char *id)
{
    struct run_record r;
    run_record_init(&r);
    snprintf(r.id, sizeof(r.id), "%s", id);
    r.name = strdup("events");
    r.command_json = strdup("[\"python\",\"train.py\"]");
    r.start_ns = REAL0;
    snprintf(r.status, sizeof(r.status), RUN_RUNNING);
    ASSERT_EQ_INT(d->s->ops->run_insert(d->s, &r), 0);
    run_record_release(&r);
}

struct names_seen {
    int n;
    int64_t id[32];
    char name[32][64];
};

static int collect_name(int64_t id, const char *name, void *arg)
{
    struct names_seen *l = arg;
    if (l->n < 32) {
        l->id[l->n] = id;
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
    }
    l->n++;
    return 0;
}

struct procs_seen {
    int n;
    struct process_record p[8];
    char comm[8][64];
    char role[8][16];
};

static int collect_proc(const struct process_record *p, void *arg)
{
    struct procs_seen *l = arg;
    if (l->n < 8) {
        l->p[l->n] = *p;
        snprintf(l->comm[l->n], sizeof(l->comm[0]), "%s", p->comm ? p->comm : "(null)");
        snprintf(l->role[l->n], sizeof(l->role[0]), "%s", p->role ? p->role : "(null)");
        l->p[l->n].comm = l->p[l->n].role = NULL;
    }
    l->n++;
    return 0;
}

struct blocks_seen {
    struct view *v;
    struct event_decoder dec;
};

static int collect_event_block(const struct event_block_record *b, void *arg)
{
    struct blocks_seen *l = arg;
    view_add(l->v, &l->dec, b);
    return 0;
}

/* Every stored event block of run_id, decoded into g_view. */
static struct view *view_stored(struct store *s, const char *run_id, int64_t from, int64_t to)
{
    struct blocks_seen l = {.v = &g_view};
    g_view.nblocks = g_view.n = 0;
    ASSERT_EQ_INT(event_decoder_init(&l.dec), 0);
    ASSERT_EQ_INT(s->ops->event_blocks_query(s, run_id, from, to, collect_event_block, &l), 0);
    event_decoder_release(&l.dec);
    return &g_view;
}

static int store_batch(struct db *d, struct event_batch *b, struct rig *r)
{
    int rc = d->s->ops->begin(d->s);
    if (rc == 0)
        rc = event_batch_store(b, d->s, r->run_id);
    if (rc == 0)
        rc = d->s->ops->commit(d->s);
    if (rc < 0)
        d->s->ops->rollback(d->s);
    return rc;
}

TEST(batch_collect_store_settle)
{
    static struct rig r;
    rig_open_root(&r, 8, FAKE_PID2); /* the job's root process is FAKE_PID2 */
    struct db d;
    db_open(&d);
    db_insert_run(&d, r.run_id);
    /* before anything happened: an empty batch, stored as nothing */
    struct event_batch b = {0};
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.names_to, 0);
    ASSERT_EQ_INT(b.nprocs, 0);
    ASSERT_EQ_INT(b.nblocks, 0);
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);
    int m = ring_claim(&r.w, getpid(), my_tid());
    int wk = ring_claim(&r.w, FAKE_PID, FAKE_PID);
    int root = ring_claim(&r.w, FAKE_PID2, FAKE_PID2);
    define(&r, m, 1, "strobe.rank");
    define(&r, m, 2, "forward");
    define(&r, wk, 1, "strobe.worker_id");
    define(&r, wk, 2, "dataloader.worker");
    define(&r, root, 3, "forward");
    push_counter(&r, m, 1, 0, AT(1), 0.0);
    push(&r, m, STROBE_EV_SPAN_BEGIN, 2, 1, AT(10), 0);
    push(&r, m, STROBE_EV_SPAN_END, 2, 1, AT(70), 0);
    push_counter(&r, wk, 1, 0, AT(2), 1.0);
    push(&r, wk, STROBE_EV_COMPLETE, 2, 0, AT(20), 500);
    push(&r, root, STROBE_EV_INSTANT, 3, 0, AT(30), 0);
    event_sink_drain(&r.k, AT(100));
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(sealed_count(&r.k), 3);

    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.names_from, 0);
    ASSERT_EQ_INT(b.names_to, 4);
    ASSERT_EQ_STR(b.names[1], "forward");
    ASSERT_EQ_INT(b.nprocs, 3);
    ASSERT_EQ_INT(b.nblocks, 3);
    ASSERT(b.first == r.k.sealed_head && b.last == r.k.sealed_tail);
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);
    ASSERT(r.k.sealed_head == NULL && r.k.sealed_tail == NULL);
    ASSERT_EQ_INT(r.k.pending_bytes, 0);
    ASSERT_EQ_INT(r.k.names_stored, 4);
    for (uint32_t i = 0; i < r.k.nprocs; i++)
        ASSERT_EQ_INT(r.k.procs[i].stored, r.k.procs[i].version);
    /* nothing new: an empty batch */
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.names_from, 4);
    ASSERT_EQ_INT(b.names_to, 4);
    ASSERT_EQ_INT(b.nprocs, 0);
    ASSERT_EQ_INT(b.nblocks, 0);
    ASSERT(b.first == NULL && b.last == NULL);
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);

    /* read back */
    struct names_seen nl = {0};
    ASSERT_EQ_INT(d.s->ops->event_names_query(d.s, r.run_id, collect_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 4);
    static const char *const want[] = {"strobe.rank", "forward", "strobe.worker_id",
                                       "dataloader.worker"};
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ_INT(nl.id[i], i + 1);
        ASSERT_EQ_STR(nl.name[i], want[i]);
    }
    struct procs_seen pl = {0};
    ASSERT_EQ_INT(d.s->ops->processes_query(d.s, r.run_id, collect_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 3); /* by pid: this process, then the two fake ones */
    ASSERT_EQ_INT(pl.p[0].pid, getpid());
    ASSERT_EQ_STR(pl.role[0], "rank");
    ASSERT_EQ_INT(pl.p[0].rank, 0);
    ASSERT_EQ_INT(pl.p[0].worker_id, -1);
    ASSERT_EQ_INT(pl.p[0].local_rank, -1);
    ASSERT_EQ_INT(pl.p[0].world_size, -1);
    ASSERT_EQ_INT(pl.p[0].ppid, -1);     /* no process tree here */
    ASSERT_EQ_STR(pl.comm[0], "(null)"); /* so no comm either */
    ASSERT_EQ_INT(pl.p[1].pid, FAKE_PID);
    ASSERT_EQ_STR(pl.role[1], "dataloader");
    ASSERT_EQ_INT(pl.p[1].worker_id, 1);
    ASSERT_EQ_INT(pl.p[1].rank, -1);
    ASSERT_EQ_INT(pl.p[2].pid, FAKE_PID2);
    ASSERT_EQ_STR(pl.role[2], "main");
    struct view *v = view_stored(d.s, r.run_id, INT64_MIN, INT64_MAX);
    ASSERT_EQ_INT(v->nblocks, 3);
    /* in time order of their start: this thread's (10), the worker's (20), the root's (30) */
    ASSERT_EQ_INT(v->rec[0].pid, getpid());
    ASSERT_EQ_INT(v->rec[0].tid, my_tid());
    EXPECT_EV(&v->ev[0], STROBE_EV_COMPLETE, UTC(10), 60, 2, 1);
    ASSERT_EQ_INT(v->rec[1].pid, FAKE_PID);
    EXPECT_EV(&v->ev[1], STROBE_EV_COMPLETE, UTC(20), 500, 4, 0);
    ASSERT_EQ_INT(v->rec[2].pid, FAKE_PID2);
    EXPECT_EV(&v->ev[2], STROBE_EV_INSTANT, UTC(30), 0, 2, 0);
    /* by time: [end >= from, start <= to] */
    v = view_stored(d.s, r.run_id, UTC(71), UTC(29));
    ASSERT_EQ_INT(v->nblocks, 1); /* the worker's, 20..520 */
    ASSERT_EQ_INT(v->rec[0].pid, FAKE_PID);
    v = view_stored(d.s, r.run_id, UTC(521), INT64_MAX);
    ASSERT_EQ_INT(v->nblocks, 0);

    event_batch_release(&b);
    event_batch_release(&b); /* twice is fine */
    db_close(&d);
    rig_close(&r);
}

TEST(batch_failure_keeps_everything_for_the_retry)
{
    static struct rig r;
    rig_open(&r, 9);
    struct db d;
    db_open(&d); /* no run row yet: the store refuses the batch (foreign keys) */
    int m = ring_claim(&r.w, getpid(), my_tid());
    int w = ring_claim(&r.w, FAKE_PID, FAKE_PID);
    define(&r, m, 1, "step");
    define(&r, w, 1, "data");
    push(&r, m, STROBE_EV_COMPLETE, 1, 1, AT(100), 1000);
    push(&r, w, STROBE_EV_COMPLETE, 1, 1, AT(200), 50);
    event_sink_drain(&r.k, AT(1000));
    event_sink_seal_all(&r.k);
    struct event_sealed *head = r.k.sealed_head, *tail = r.k.sealed_tail;
    size_t pending = r.k.pending_bytes;

    struct event_batch b = {0};
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.nblocks, 2);
    int rc = store_batch(&d, &b, &r);
    ASSERT(rc < 0);
    event_batch_settle(&b, &r.k, rc);
    /* all kept */
    ASSERT(r.k.sealed_head == head && r.k.sealed_tail == tail);
    ASSERT_EQ_INT(r.k.pending_bytes, pending);
    ASSERT_EQ_INT(r.k.names_stored, 0);
    ASSERT_EQ_INT(sink_proc(&r.k, getpid())->stored, 0);
    ASSERT_EQ_INT(sink_proc(&r.k, FAKE_PID)->stored, 0);
    /* a second collect sends the same again */
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.names_from, 0);
    ASSERT_EQ_INT(b.names_to, 2);
    ASSERT_EQ_STR(b.names[0], "step");
    ASSERT_EQ_STR(b.names[1], "data");
    ASSERT_EQ_INT(b.nprocs, 2);
    ASSERT_EQ_INT(b.nblocks, 2);
    ASSERT(b.first == head && b.last == tail);
    db_insert_run(&d, r.run_id);
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);
    ASSERT(r.k.sealed_head == NULL);
    ASSERT_EQ_INT(r.k.pending_bytes, 0);

    /* a batch in flight: blocks sealed meanwhile stay for the next one */
    push(&r, m, STROBE_EV_COMPLETE, 1, 2, AT(2000), 1000);
    event_sink_drain(&r.k, AT(3000));
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.nblocks, 1);
    ASSERT_EQ_INT(b.names_from, 2);
    ASSERT_EQ_INT(b.names_to, 2);
    ASSERT_EQ_INT(b.nprocs, 0);
    push(&r, m, STROBE_EV_COMPLETE, 1, 3, AT(4000), 1000);
    push_counter(&r, m, 2, 0, AT(4001), 1.0); /* undefined id: lost */
    define(&r, m, 3, "strobe.rank");          /* the rank changes the process row */
    push_counter(&r, m, 3, 0, AT(4002), 5.0);
    event_sink_drain(&r.k, AT(5000));
    event_sink_seal_all(&r.k);
    ASSERT_EQ_INT(sealed_count(&r.k), 2);
    struct event_sealed *newer = r.k.sealed_tail;
    ASSERT(b.last != newer);
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);
    ASSERT(r.k.sealed_head == newer && r.k.sealed_tail == newer);
    ASSERT_EQ_INT(r.k.pending_bytes, newer->rec.len);
    ASSERT_EQ_INT(event_batch_collect(&b, &r.k), 0);
    ASSERT_EQ_INT(b.nblocks, 1);
    ASSERT(b.first == newer && b.last == newer);
    ASSERT_EQ_INT(b.names_from, 2);
    ASSERT_EQ_INT(b.names_to, 3);
    ASSERT_EQ_INT(b.nprocs, 1);
    ASSERT_EQ_INT(b.procs[0].pid, getpid());
    ASSERT_EQ_INT(b.procs[0].rank, 5);
    ASSERT_EQ_STR(b.procs[0].role, "rank");
    ASSERT_EQ_INT(store_batch(&d, &b, &r), 0);
    event_batch_settle(&b, &r.k, 0);
    ASSERT(r.k.sealed_head == NULL);

    /* every block once, every name once, the process row replaced */
    struct view *v = view_stored(d.s, r.run_id, INT64_MIN, INT64_MAX);
    ASSERT_EQ_INT(v->nblocks, 4);
    EXPECT_EV(&v->ev[0], STROBE_EV_COMPLETE, UTC(100), 1000, 1, 1);
    EXPECT_EV(&v->ev[1], STROBE_EV_COMPLETE, UTC(200), 50, 2, 1);
    EXPECT_EV(&v->ev[2], STROBE_EV_COMPLETE, UTC(2000), 1000, 1, 2);
    EXPECT_EV(&v->ev[3], STROBE_EV_COMPLETE, UTC(4000), 1000, 1, 3);
    struct names_seen nl = {0};
    ASSERT_EQ_INT(d.s->ops->event_names_query(d.s, r.run_id, collect_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 3);
    ASSERT_EQ_STR(nl.name[2], "strobe.rank");
    struct procs_seen pl = {0};
    ASSERT_EQ_INT(d.s->ops->processes_query(d.s, r.run_id, collect_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 2);
    ASSERT_EQ_INT(pl.p[0].pid, getpid());
    ASSERT_EQ_INT(pl.p[0].rank, 5);
    ASSERT_EQ_STR(pl.role[0], "rank");
    ASSERT_EQ_INT(pl.p[1].pid, FAKE_PID);
    ASSERT_EQ_STR(pl.role[1], "(null)"); /* neither a rank, a worker, nor the root */
    ASSERT_EQ_U64(event_sink_dropped(&r.k), 1);
    event_batch_release(&b);
    db_close(&d);
    rig_close(&r);
}

/* ---- steps and phases ----------------------------------------------------------------------- */

enum {
    N_STEP = 1,
    N_DATA,
    N_FORWARD,
    N_BACKWARD,
    N_OPTIMIZER,
    N_ALLREDUCE,
    N_LAYER,
    N_WORKER,
    N_BROADCAST,
    N_COUNT
};

static const char *const step_names[N_COUNT] = {[N_STEP] = "step",
                                                [N_DATA] = "data",
                                                [N_FORWARD] = "forward",
                                                [N_BACKWARD] = "backward",
                                                [N_OPTIMIZER] = "optimizer",
                                                [N_ALLREDUCE] = "comm:allreduce",
                                                [N_LAYER] = "forward/layer1",
                                                [N_WORKER] = "dataloader.worker",
                                                [N_BROADCAST] = "comm:broadcast"};

#define T(off) (REAL0 + (int64_t)(off))

static struct event span(uint32_t name, int64_t start, int64_t end, uint32_t step)
{
    struct event e = {T(start), end - start, name, step, STROBE_EV_COMPLETE};
    return e;
}

/* Encode ev[0..n) as one block of (pid, tid) and store it. */
static void put_block(struct store *s, const char *run, int64_t pid, int64_t tid,
                      const struct event *ev, uint32_t n)
{
    struct event_encoder enc;
    ASSERT_EQ_INT(event_encoder_init(&enc), 0);
    size_t cap = event_block_bound(n), len = 0;
    uint8_t *buf = malloc(cap);
    ASSERT(buf != NULL);
    struct event_block_info info;
    ASSERT_EQ_INT(event_block_encode(&enc, ev, n, buf, cap, &len, &info), 0);
    struct event_block_record rec = {
        pid, tid, info.start_ns, info.end_ns, info.step_min, info.step_max, info.count, buf, len};
    ASSERT_EQ_INT(s->ops->event_block_insert(s, run, &rec), 0);
    free(buf);
    event_encoder_release(&enc);
}

/* The same block cut short: it fails to decode, though its header reads. */
static void put_truncated_block(struct store *s, const char *run, int64_t pid, int64_t tid,
                                const struct event *ev, uint32_t n)
{
    struct event_encoder enc;
    ASSERT_EQ_INT(event_encoder_init(&enc), 0);
    size_t cap = event_block_bound(n), len = 0;
    uint8_t *buf = malloc(cap);
    ASSERT(buf != NULL);
    struct event_block_info info;
    ASSERT_EQ_INT(event_block_encode(&enc, ev, n, buf, cap, &len, &info), 0);
    uint32_t peek = 0;
    ASSERT_EQ_INT(event_block_peek_count(buf, len - 1, &peek), 0);
    ASSERT_EQ_INT(peek, n);
    struct event_block_record rec = {pid,         tid,           info.start_ns,
                                     info.end_ns, info.step_min, info.step_max,
                                     info.count,  buf,           len - 1};
    ASSERT_EQ_INT(s->ops->event_block_insert(s, run, &rec), 0);
    free(buf);
    event_encoder_release(&enc);
}

static void put_proc(struct store *s, const char *run, int64_t pid, const char *role, int64_t rank,
                     int64_t worker_id)
{
    struct process_record p = {pid, 1, "python", role, rank, -1, -1, worker_id};
    ASSERT_EQ_INT(s->ops->process_upsert(s, run, &p), 0);
}

#define STEPS_RUN "57e95000000000aa"

/*
 * Rank 0 (pid 200): four steps of 1000, 500, 800 and 1200 ns.
 *   A [1000,2000): data 100, forward 300 (a non-phase span inside changes
 *     nothing), backward 400 of which comm:allreduce 100, optimizer 100, other 100
 *   B [3000,3500): forward 190; backward from 3200 runs past the end with a
 *     comm inside it that does too: backward 250, comm 50, other 10
 *   C [4000,4800): data 300 with comm:broadcast 100 inside, forward 400, other 100
 *   D [5000,6200): nothing: other 1200
 *   spans between and after steps, and a comm span on another thread, count
 *   for no step.
 * Rank 1 (pid 100): steps of 600 (data 200) and 400.
 * pid 400, no rank: one step of 300.
 * pids 300 and 301: data-loader workers, busy 400 and 100.
 */
static void write_steps_run(struct store *s)
{
    for (uint32_t i = 1; i < N_COUNT; i++)
        ASSERT_EQ_INT(s->ops->event_name_insert(s, STEPS_RUN, i, step_names[i]), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, STEPS_RUN, 12, "late.name"), 0); /* 10, 11 missing */
    put_proc(s, STEPS_RUN, 100, "rank", 1, -1);
    put_proc(s, STEPS_RUN, 200, "rank", 0, -1);
    put_proc(s, STEPS_RUN, 300, "dataloader", -1, 0);
    put_proc(s, STEPS_RUN, 301, "dataloader", -1, 1);
    put_proc(s, STEPS_RUN, 400, "main", -1, -1);

    /* rank 1 first in the store, so sorting has work to do */
    struct event r1[] = {
        span(N_STEP, 1000, 1600, 1),
        span(N_DATA, 1000, 1200, 1),
        span(N_STEP, 2000, 2400, 2),
    };
    put_block(s, STEPS_RUN, 100, 100, r1, 3);

    /* rank 0, steps A and B, in the order a thread emits them (at their ends) */
    struct event a[] = {
        span(N_DATA, 1000, 1100, 1),
        span(N_LAYER, 1150, 1250, 1),
        span(N_FORWARD, 1100, 1400, 1),
        span(N_ALLREDUCE, 1600, 1700, 1),
        span(N_BACKWARD, 1400, 1800, 1),
        span(N_OPTIMIZER, 1800, 1900, 1),
        span(N_STEP, 1000, 2000, 1),
        span(N_ALLREDUCE, 2200, 2300, 1), /* between steps */
        span(N_DATA, 2500, 2600, 2),      /* between steps */
        span(N_FORWARD, 3010, 3200, 2),
        span(N_STEP, 3000, 3500, 2),
        span(N_ALLREDUCE, 3450, 3550, 2),
        span(N_BACKWARD, 3200, 3600, 2),
        {T(3700), 0, N_FORWARD, 2, STROBE_EV_SPAN_BEGIN}, /* not a complete span */
        {T(3750), 0, 0, 3, STROBE_EV_STEP},
    };
    put_block(s, STEPS_RUN, 200, 200, a, ARRAY_SIZE(a));

    /* a damaged block of the same thread, between the two good ones: if it
     * were read, it would add a step */
    struct event lost[] = {span(N_STEP, 3800, 3900, 3), span(N_DATA, 3800, 3900, 3)};
    put_truncated_block(s, STEPS_RUN, 200, 200, lost, 2);
    /* and one that is garbage from its first byte */
    struct event_block_record junk = {200, 200, T(3950), T(3960), 3, 3, 1, (const uint8_t *)"junk",
                                      4};
    ASSERT_EQ_INT(s->ops->event_block_insert(s, STEPS_RUN, &junk), 0);

    struct event c[] = {
        span(N_BROADCAST, 4100, 4200, 3), span(N_DATA, 4000, 4300, 3),
        span(N_FORWARD, 4300, 4700, 3),   span(N_STEP, 4000, 4800, 3),
        span(N_STEP, 5000, 6200, 4),      span(N_FORWARD, 7000, 7100, 5), /* after the last step */
    };
    put_block(s, STEPS_RUN, 200, 200, c, ARRAY_SIZE(c));

    /* rank 0's communication thread: comm overlapping step A on another thread */
    struct event comm[] = {span(N_ALLREDUCE, 1500, 1650, 1)};
    put_block(s, STEPS_RUN, 200, 201, comm, 1);

    struct event w0[] = {span(N_WORKER, 1000, 1250, 0), span(N_WORKER, 2000, 2150, 0)};
    put_block(s, STEPS_RUN, 300, 300, w0, 2);
    struct event w1[] = {span(N_WORKER, 1100, 1200, 0)};
    put_block(s, STEPS_RUN, 301, 301, w1, 1);

    struct event main_proc[] = {span(N_STEP, 1000, 1300, 1)};
    put_block(s, STEPS_RUN, 400, 400, main_proc, 1);
}

static const struct thread_events *thread_of(const struct run_events *e, int64_t pid, int64_t tid)
{
    for (uint32_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].pid == pid && e->threads[i].tid == tid)
            return &e->threads[i];
    TEST_FAIL("no thread %" PRId64 "/%" PRId64, pid, tid);
}

TEST(steps_load_and_phase_breakdown)
{
    struct db d;
    db_open(&d);
    db_insert_run(&d, STEPS_RUN);
    db_insert_run(&d, "57e95000000000bb"); /* another run's events are not loaded */
    ASSERT_EQ_INT(d.s->ops->event_name_insert(d.s, "57e95000000000bb", 1, "step"), 0);
    struct event other[] = {span(1, 0, 99999, 1)};
    put_block(d.s, "57e95000000000bb", 200, 200, other, 1);
    write_steps_run(d.s);

    struct run_events e;
    ASSERT_EQ_INT(run_events_load(d.s, STEPS_RUN, &e), 0);
    ASSERT_EQ_INT(e.nnames, 12);
    ASSERT_EQ_STR(run_events_name(&e, N_ALLREDUCE), "comm:allreduce");
    ASSERT_EQ_STR(run_events_name(&e, 12), "late.name");
    ASSERT_EQ_STR(run_events_name(&e, 10), "");
    ASSERT_EQ_STR(run_events_name(&e, 0), "");
    ASSERT_EQ_STR(run_events_name(&e, 13), "");
    ASSERT_EQ_INT(e.nprocs, 5);
    ASSERT_EQ_U64(e.bad_blocks, 2);
    ASSERT_EQ_U64(e.events, 3 + 15 + 6 + 1 + 2 + 1 + 1);
    ASSERT_EQ_INT(e.nthreads, 6);
    ASSERT_EQ_INT(thread_of(&e, 200, 200)->n, 15 + 6); /* both good blocks, in order */
    ASSERT_EQ_INT(thread_of(&e, 200, 200)->ev[15].ts_ns, T(4100));
    ASSERT_EQ_INT(thread_of(&e, 200, 201)->n, 1);
    ASSERT(e.bytes > 0);

    struct step_analysis a;
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 3);
    ASSERT_EQ_INT(a.primary, 0);
    /* rank 0 */
    const struct step_group *g = &a.groups[0];
    ASSERT_EQ_INT(g->pid, 200);
    ASSERT_EQ_INT(g->rank, 0);
    ASSERT_EQ_U64(g->steps.count, 4);
    ASSERT_EQ_DBL(g->steps.total_ns, 3500.0);
    ASSERT_EQ_DBL(g->steps.mean_ns, 875.0);
    ASSERT_EQ_DBL(g->steps.min_ns, 500.0);
    ASSERT_EQ_DBL(g->steps.max_ns, 1200.0);
    /* interpolated between the sorted durations 500 800 1000 1200 */
    ASSERT_NEAR(g->steps.p50_ns, 900.0, 1e-9);
    ASSERT_NEAR(g->steps.p95_ns, 1170.0, 1e-9);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_DATA], 300.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_FORWARD], 890.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_BACKWARD], 550.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OPTIMIZER], 100.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_COMM], 250.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OTHER], 1410.0);
    double sum = 0;
    for (int p = 0; p < PHASE_COUNT; p++)
        sum += g->phase_ns[p];
    ASSERT_EQ_DBL(sum, g->steps.total_ns); /* the shares add up */
    ASSERT_NEAR(step_group_share(g, PHASE_OTHER), 1410.0 / 3500.0, 1e-15);
    /* every comm span of the process, whatever its thread, inside its steps:
     * 100 in step 1, none between steps, 50 up to step 2's end, 100 in
     * step 3, and the other thread's 150 in step 1 (1500-1650), of which
     * the 50 in flight with the main thread's (1600-1700) count once */
    ASSERT_EQ_DBL(g->comm_all_threads_ns, 100.0 + 0 + 50 + 100 + 150 - 50);
    /* rank 1 */
    g = &a.groups[1];
    ASSERT_EQ_INT(g->pid, 100);
    ASSERT_EQ_INT(g->rank, 1);
    ASSERT_EQ_U64(g->steps.count, 2);
    ASSERT_EQ_DBL(g->steps.mean_ns, 500.0);
    ASSERT_NEAR(g->steps.p50_ns, 500.0, 1e-9);
    ASSERT_NEAR(g->steps.p95_ns, 590.0, 1e-9);
    ASSERT_EQ_DBL(g->steps.max_ns, 600.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_DATA], 200.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OTHER], 800.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_FORWARD], 0.0);
    /* no rank: last */
    g = &a.groups[2];
    ASSERT_EQ_INT(g->pid, 400);
    ASSERT_EQ_INT(g->rank, -1);
    ASSERT_EQ_U64(g->steps.count, 1);
    ASSERT_EQ_DBL(g->steps.p50_ns, 300.0);
    ASSERT_EQ_DBL(g->steps.p95_ns, 300.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OTHER], 300.0);
    /* the workers */
    ASSERT_EQ_INT(a.workers, 2);
    ASSERT_EQ_DBL(a.worker_busy_ns, 500.0);
    step_analysis_release(&a);
    run_events_release(&e);

    /* a run without events: nothing, and no error */
    ASSERT_EQ_INT(run_events_load(d.s, "5e5e5e5e5e5e5e5e", &e), 0);
    ASSERT_EQ_INT(e.nthreads, 0);
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 0);
    ASSERT_EQ_INT(a.workers, 0);
    ASSERT_EQ_DBL(step_group_share(&(struct step_group){0}, PHASE_DATA), 0.0);
    step_analysis_release(&a);
    run_events_release(&e);
    db_close(&d);
}

TEST(steps_primary_without_rank_zero)
{
    struct db d;
    db_open(&d);
    const char *run = "57e95000000000cc";
    db_insert_run(&d, run);
    ASSERT_EQ_INT(d.s->ops->event_name_insert(d.s, run, 1, "step"), 0);
    put_proc(d.s, run, 10, "rank", 2, -1);
    put_proc(d.s, run, 20, "rank", 1, -1);
    struct event two[] = {span(1, 0, 100, 1), span(1, 100, 200, 2), span(1, 200, 300, 3)};
    struct event one[] = {span(1, 0, 100, 1)};
    put_block(d.s, run, 10, 10, two, 3);
    put_block(d.s, run, 20, 20, one, 1);
    struct run_events e;
    struct step_analysis a;
    ASSERT_EQ_INT(run_events_load(d.s, run, &e), 0);
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 2);
    ASSERT_EQ_INT(a.groups[0].rank, 1);
    ASSERT_EQ_INT(a.groups[1].rank, 2);
    ASSERT_EQ_INT(a.primary, 1); /* no rank 0: the one with the most steps */
    ASSERT_EQ_U64(a.groups[1].steps.count, 3);
    step_analysis_release(&a);
    run_events_release(&e);
    db_close(&d);
}

/* A phase that began before its step (data fetched before an explicit
 * strobe.step()) counts for its part inside the step; one spanning two steps
 * counts in both, clipped to each. */
TEST(phases_crossing_step_boundaries_are_clipped)
{
    struct db d;
    db_open(&d);
    const char *run = "57e95000000000dd";
    db_insert_run(&d, run);
    ASSERT_EQ_INT(d.s->ops->event_name_insert(d.s, run, 1, "step"), 0);
    ASSERT_EQ_INT(d.s->ops->event_name_insert(d.s, run, 2, "data"), 0);
    ASSERT_EQ_INT(d.s->ops->event_name_insert(d.s, run, 3, "forward"), 0);
    struct event ev[] = {
        span(2, 900, 1050, 1),  /* data: 100 before step 1, 50 inside */
        span(3, 1050, 1950, 1), /* forward: inside step 1, then 50 into step 2 */
        span(1, 1000, 2000, 1), /* step 1 */
        span(3, 1950, 2100, 2), /* forward: 50 in step 1, 100 in step 2 */
        span(1, 2000, 3000, 2), /* step 2: forward 100 of it, the rest other */
    };
    put_block(d.s, run, 10, 10, ev, 5);
    struct run_events e;
    struct step_analysis a;
    ASSERT_EQ_INT(run_events_load(d.s, run, &e), 0);
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 1);
    const struct step_group *g = &a.groups[0];
    ASSERT_EQ_U64(g->steps.count, 2);
    ASSERT_NEAR(g->phase_ns[PHASE_DATA], 50, 0);
    ASSERT_NEAR(g->phase_ns[PHASE_FORWARD], 900 + 50 + 100, 0);
    ASSERT_NEAR(g->phase_ns[PHASE_OTHER], 0 + 900, 0);
    double sum = 0;
    for (int p = 0; p < PHASE_COUNT; p++)
        sum += g->phase_ns[p];
    ASSERT_NEAR(sum, g->steps.total_ns, 0);
    step_analysis_release(&a);
    run_events_release(&e);
    db_close(&d);
}

/* ---- one block encoder for the recorder and the importers ------------------------------ */

/* A training loop's spans: n events of one thread, names and steps cycling. */
static void loop_events(struct event *ev, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        ev[i] = (struct event){
            .ts_ns = UTC(i * 1000 + (i * 7919) % 300),
            .value = 500 + (i * 104729) % 400,
            .name = 1 + i % 5,
            .step = i / 5,
            .kind = STROBE_EV_COMPLETE,
        };
}

/* The codec's block and summary for ev[0..n), which stored blocks must equal. */
struct want_block {
    uint8_t *data;
    size_t len;
    struct event_block_info info;
};

static void want_block(struct event_encoder *enc, const struct event *ev, uint32_t n,
                       struct want_block *w)
{
    size_t cap = event_block_bound(n);
    w->data = malloc(cap);
    ASSERT(w->data != NULL);
    ASSERT_EQ_INT(event_block_encode(enc, ev, n, w->data, cap, &w->len, &w->info), 0);
}

static void check_block(const struct event_block_record *b, const struct want_block *w, int64_t pid,
                        int64_t tid)
{
    ASSERT_EQ_INT(b->pid, pid);
    ASSERT_EQ_INT(b->tid, tid);
    ASSERT_EQ_INT(b->count, w->info.count);
    ASSERT_EQ_INT(b->start_ns, w->info.start_ns);
    ASSERT_EQ_INT(b->end_ns, w->info.end_ns);
    ASSERT_EQ_INT(b->step_min, w->info.step_min);
    ASSERT_EQ_INT(b->step_max, w->info.step_max);
    ASSERT_EQ_U64(b->len, w->len);
    ASSERT(memcmp(b->data, w->data, w->len) == 0);
}

TEST(block_build_is_the_codec_block_and_its_summary)
{
    enum { N = 300 };
    static struct event ev[N];
    loop_events(ev, N);
    struct event_encoder enc;
    ASSERT_EQ_INT(event_encoder_init(&enc), 0);
    struct want_block w;
    want_block(&enc, ev, N, &w);
    size_t cap = event_block_bound(N);
    uint8_t *out = malloc(cap);
    struct event_block_record b;
    ASSERT_EQ_INT(event_block_build(&enc, ev, N, FAKE_PID, FAKE_PID + 1, out, cap, &b), 0);
    ASSERT(b.data == out);
    check_block(&b, &w, FAKE_PID, FAKE_PID + 1);
    ASSERT_EQ_INT(event_block_build(&enc, ev, N, 1, 2, out, 8, &b), -ENOSPC);
    free(out);
    free(w.data);
    event_encoder_release(&enc);
}

struct raw_blocks {
    int n;
    struct event_block_record b[4];
    uint8_t *data[4]; /* copies: a record's data lives during the callback only */
};

static int copy_block(const struct event_block_record *b, void *arg)
{
    struct raw_blocks *l = arg;
    if (l->n < 4) {
        l->b[l->n] = *b;
        l->data[l->n] = malloc(b->len);
        memcpy(l->data[l->n], b->data, b->len);
        l->b[l->n].data = l->data[l->n];
    }
    l->n++;
    return 0;
}

TEST(block_writer_stores_blocks_cut_as_the_recorder_cuts_them)
{
    const uint32_t n = 2 * EVENT_BLOCK_EVENTS + 5;
    struct event *ev = calloc(n, sizeof(*ev));
    loop_events(ev, n);
    struct db d;
    db_open(&d);
    db_insert_run(&d, "0123456789abcdef");
    struct event_block_writer w;
    ASSERT_EQ_INT(event_block_writer_init(&w), 0);
    ASSERT_EQ_INT(
        event_block_writer_store(&w, d.s, "0123456789abcdef", FAKE_PID, FAKE_PID + 3, ev, n), 0);
    ASSERT_EQ_INT(event_block_writer_store(&w, d.s, "0123456789abcdef", FAKE_PID, FAKE_PID, ev, 0),
                  0); /* nothing: no block */
    event_block_writer_release(&w);
    event_block_writer_release(&w); /* twice is fine */

    struct raw_blocks got = {0};
    ASSERT_EQ_INT(d.s->ops->event_blocks_query(d.s, "0123456789abcdef", INT64_MIN, INT64_MAX,
                                               copy_block, &got),
                  0);
    ASSERT_EQ_INT(got.n, 3);
    struct event_encoder enc;
    ASSERT_EQ_INT(event_encoder_init(&enc), 0);
    for (int i = 0; i < got.n; i++) {
        uint32_t off = (uint32_t)i * EVENT_BLOCK_EVENTS;
        struct want_block want;
        want_block(&enc, ev + off, n - off < EVENT_BLOCK_EVENTS ? n - off : EVENT_BLOCK_EVENTS,
                   &want);
        check_block(&got.b[i], &want, FAKE_PID, FAKE_PID + 3);
        free(want.data);
        free(got.data[i]);
    }
    event_encoder_release(&enc);
    db_close(&d);
    free(ev);
}

TEST_CASES_ONCE(spans_pair_and_events_pass_through_in_utc,
                spans_nested_too_deep_are_dropped_and_the_rest_pair,
                names_are_run_wide_across_threads_and_reclaimed_rings,
                meta_counters_set_process_attributes_and_app_counters_make_series,
                blocks_seal_when_full_and_when_old, memory_cap_drops_new_blocks_and_counts_them,
                ring_drops_are_counted, block_build_is_the_codec_block_and_its_summary)
/* through a real store: SQLite, then PostgreSQL */
TEST_CASES_BOTH(libstrobe_events_from_a_forked_child, batch_collect_store_settle,
                batch_failure_keeps_everything_for_the_retry, steps_load_and_phase_breakdown,
                steps_primary_without_rank_zero, phases_crossing_step_boundaries_are_clipped,
                block_writer_stores_blocks_cut_as_the_recorder_cuts_them)
STORE_TEST_MAIN()
