/*
 * libstrobe end to end through a real segment: off without a recorder; spans,
 * instants, counters and steps arrive with their names; names are interned by
 * content; threads get rings of their own; a forked child gets its own ring;
 * unusable names are counted as drops.
 */
#include <pthread.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "ring/ring.h"
#include "strobe/strobe.h"
#include "test.h"

struct got {
    int names, events;
    char name[64][STROBE_NAME_MAX + 1]; /* by ring and id, ids < 16 */
    int by_kind[16];
    pid_t pids[16];
    int npids;
    pid_t tids[64];
    int ntids;
    uint32_t last_step;
    double last_counter;
    char last_name[STROBE_NAME_MAX + 1];
};

static void remember(pid_t *set, int *n, int cap, pid_t v)
{
    for (int i = 0; i < *n; i++)
        if (set[i] == v)
            return;
    if (*n < cap)
        set[(*n)++] = v;
}

static void collect(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                    const char *name, void *arg)
{
    struct got *g = arg;
    int slot = ring * 16 + (int)(rec->name_id & 15);
    if (name) {
        if (slot < 64 && rec->name_id < 16)
            snprintf(g->name[slot], sizeof(g->name[slot]), "%s", name);
        g->names++;
        return;
    }
    g->events++;
    g->by_kind[rec->kind & 15]++;
    remember(g->pids, &g->npids, 16, pid);
    remember(g->tids, &g->ntids, 64, tid);
    g->last_step = rec->step;
    if (rec->kind == STROBE_EV_COUNTER)
        memcpy(&g->last_counter, &rec->value, sizeof(double));
    if (rec->name_id && slot < 64 && rec->name_id < 16)
        snprintf(g->last_name, sizeof(g->last_name), "%s", g->name[slot]);
}

static void make_segment(struct ring_segment *seg, const char *what)
{
    char name[64];
    snprintf(name, sizeof(name), "/strobe-lib-%d-%s", (int)getpid(), what);
    shm_unlink(name);
    test_shm_track(name);
    ASSERT_EQ_INT(ring_segment_create(seg, name, 16, 4096), 0);
    setenv(STROBE_SHM_ENV, name, 1);
}

TEST(off_without_a_recorder)
{
    unsetenv(STROBE_SHM_ENV);
    ASSERT_EQ_INT(strobe_enabled(), 0);
    strobe_span_begin("x");
    strobe_span_end("x");
    strobe_counter("loss", 1.0);
    strobe_step(3);
    ASSERT_EQ_INT(strobe_enabled(), 0);
}

TEST(off_with_a_bad_segment_name)
{
    setenv(STROBE_SHM_ENV, "/strobe-no-such-segment", 1);
    strobe_instant("x");
    ASSERT_EQ_INT(strobe_enabled(), 0);
}

TEST(events_arrive_with_their_names)
{
    struct ring_segment seg;
    make_segment(&seg, "events");
    ASSERT_EQ_INT(strobe_enabled(), 1);
    strobe_step(7);
    strobe_span_begin("forward");
    strobe_span_end("forward");
    strobe_span_complete("data", 100, 50);
    strobe_instant("checkpoint");
    char buf[32];
    snprintf(buf, sizeof(buf), "loss");
    strobe_counter(buf, 0.25);
    snprintf(buf, sizeof(buf), "acc"); /* the same buffer, another name */
    strobe_counter(buf, 0.75);
    char long_name[300];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    strobe_instant(long_name); /* too long: dropped and counted */
    static struct got g;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &g, &st);
    ASSERT_EQ_INT(g.names, 5); /* forward, data, checkpoint, loss, acc */
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_STEP], 1);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_SPAN_BEGIN], 1);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_SPAN_END], 1);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_COMPLETE], 1);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_INSTANT], 1);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_COUNTER], 2);
    ASSERT_EQ_STR(g.last_name, "acc");
    ASSERT_NEAR(g.last_counter, 0.75, 0);
    ASSERT_EQ_INT(g.last_step, 7);
    ASSERT_EQ_INT(g.npids, 1);
    ASSERT_EQ_INT(g.pids[0], getpid());
    ASSERT_EQ_U64(st.dropped, 1);
    ring_segment_release(&seg);
}

static void *spans(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        strobe_span_begin("worker");
        strobe_span_end("worker");
    }
    return NULL;
}

TEST(threads_and_forked_children_get_rings_of_their_own)
{
    struct ring_segment seg;
    make_segment(&seg, "threads");
    strobe_instant("main"); /* the parent's ring, claimed before the fork */
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, spans, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    pid_t kid = fork();
    if (kid == 0) {
        strobe_instant("child"); /* must not write into the parent's ring */
        _exit(strobe_enabled() ? 0 : 1);
    }
    int status;
    waitpid(kid, &status, 0);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    static struct got g;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &g, &st);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_SPAN_BEGIN], 4000);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_INSTANT], 2);
    ASSERT_EQ_INT(g.npids, 2); /* the parent and the child */
    ASSERT_EQ_INT(g.ntids, 1 + 4 + 1);
    ASSERT_EQ_U64(st.invalid, 0);
    ASSERT_EQ_U64(st.dropped, 0);
    ring_segment_release(&seg);
}

struct stamps {
    uint64_t ts[256];
    int n;
    int other;
};

static void collect_stamps(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                           const char *name, void *arg)
{
    (void)ring, (void)pid, (void)tid;
    struct stamps *s = arg;
    if (name)
        return;
    if (rec->kind & STROBE_EV_F_TSC) /* the drain hands over ns only */
        s->other++;
    if (s->n < 256)
        s->ts[s->n++] = rec->ts_ns;
}

static uint64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whatever stamps the writer used (TSC ticks where the kernel's clock is the
 * TSC, else clock_gettime), the drain hands over CLOCK_MONOTONIC ns that lie
 * between readings of that clock taken around each call, over 100 ms. */
TEST(stamps_are_monotonic_ns_after_the_drain)
{
    struct ring_segment seg;
    make_segment(&seg, "stamps");
    uint64_t before[100], after[100];
    for (int i = 0; i < 100; i++) {
        before[i] = mono_now();
        strobe_instant("tick");
        after[i] = mono_now();
        usleep(1000);
    }
    struct stamps got = {0};
    struct drain_stats st = {0};
    ring_drain(&seg, collect_stamps, &got, &st);
    ASSERT_EQ_INT(got.n, 100);
    ASSERT_EQ_INT(got.other, 0);
    ASSERT_EQ_INT(st.invalid, 0);
    for (int i = 0; i < 100; i++) {
        /* 2 us of slack: the calibration pair's own reading jitter */
        if (got.ts[i] + 2000 < before[i] || got.ts[i] > after[i] + 2000)
            TEST_FAIL("event %d at %llu, called between %llu and %llu (tsc %s)", i,
                      (unsigned long long)got.ts[i], (unsigned long long)before[i],
                      (unsigned long long)after[i],
                      seg.hdr->flags & STROBE_SHM_F_TSC ? "on" : "off");
    }
    ring_segment_release(&seg);
}

/* STROBE_TSC=0 keeps the TSC off: records carry clock_gettime ns. */
TEST(tsc_can_be_turned_off)
{
    setenv("STROBE_TSC", "0", 1);
    struct ring_segment seg;
    make_segment(&seg, "notsc");
    ASSERT_EQ_INT(seg.hdr->flags & STROBE_SHM_F_TSC, 0);
    uint64_t before = mono_now();
    strobe_instant("tick");
    uint64_t after = mono_now();
    struct strobe_record *r = &seg.records[0];
    int found = 0;
    for (uint32_t i = 0; i < seg.ring_count * seg.ring_records && !found; i++)
        if (seg.records[i].kind == STROBE_EV_INSTANT) {
            r = &seg.records[i];
            found = 1;
        }
    ASSERT(found);
    ASSERT(r->ts_ns >= before && r->ts_ns <= after);
    ring_segment_release(&seg);
}

struct names_seen {
    char def[16][STROBE_NAME_MAX + 1]; /* by id */
    char used[8][STROBE_NAME_MAX + 1]; /* the name of each event, in order */
    int n;
};

static void collect_names(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                          const char *name, void *arg)
{
    (void)ring, (void)pid, (void)tid;
    struct names_seen *s = arg;
    if (name) {
        if (rec->name_id < 16)
            snprintf(s->def[rec->name_id], sizeof(s->def[0]), "%s", name);
    } else if (s->n < 8 && rec->name_id < 16) {
        memcpy(s->used[s->n++], s->def[rec->name_id], sizeof(s->used[0]));
    }
}

/* The name cache keys on the caller's pointer but compares the bytes: one
 * buffer rewritten with other names (longer, shorter) gives each its own. */
TEST(a_reused_name_buffer_is_never_mistaken)
{
    struct ring_segment seg;
    make_segment(&seg, "reuse");
    char buf[32];
    const char *names[] = {"alpha", "alphabet", "al", "alpha"};
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof(buf), "%s", names[i]);
        strobe_instant(buf);
    }
    struct names_seen got = {0};
    struct drain_stats st = {0};
    ring_drain(&seg, collect_names, &got, &st);
    ASSERT_EQ_INT(got.n, 4);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ_STR(got.used[i], names[i]);
    ring_segment_release(&seg);
}

/* More threads than rings: a thread that finds every ring taken loses its
 * events, each counted once (the failed claim is no extra drop). */
#define RINGLESS_THREADS 24 /* the segment has 16 rings */

static pthread_barrier_t all_hold_rings;

static void *begin_end_then_wait(void *arg)
{
    (void)arg;
    strobe_span_begin("t");
    strobe_span_end("t");
    pthread_barrier_wait(&all_hold_rings); /* no ring is freed before all have tried */
    return NULL;
}

TEST(more_threads_than_rings_each_lost_event_counted_once)
{
    struct ring_segment seg;
    make_segment(&seg, "ringless");
    pthread_barrier_init(&all_hold_rings, NULL, RINGLESS_THREADS + 1);
    pthread_t th[RINGLESS_THREADS];
    for (int i = 0; i < RINGLESS_THREADS; i++)
        pthread_create(&th[i], NULL, begin_end_then_wait, NULL);
    pthread_barrier_wait(&all_hold_rings);
    static struct got g;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &g, &st);
    for (int i = 0; i < RINGLESS_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&all_hold_rings);
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_SPAN_BEGIN], 16); /* a thread per ring */
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_SPAN_END], 16);
    ASSERT_EQ_U64(st.dropped, 2 * (RINGLESS_THREADS - 16)); /* begin and end of the other 8 */
    ring_segment_release(&seg);
}

/* A thread that started while every ring was taken gets one once rings come
 * back (their threads ended and a drain returned them to the pool): its
 * events are not lost for the rest of its life. */
static pthread_barrier_t holders_ready, holders_go;

static void *hold_a_ring(void *arg)
{
    (void)arg;
    strobe_instant("held");
    pthread_barrier_wait(&holders_ready);
    pthread_barrier_wait(&holders_go); /* then end: the ring is free after a drain */
    return NULL;
}

struct late_thread {
    pthread_barrier_t *crowd_gone;
    int sent;
};

static void *late_writer(void *arg)
{
    struct late_thread *l = arg;
    strobe_instant("late"); /* every ring taken: dropped */
    pthread_barrier_wait(l->crowd_gone);
    pthread_barrier_wait(l->crowd_gone); /* the drain has reclaimed the rings */
    for (l->sent = 0; l->sent < 1000; l->sent++)
        strobe_instant("late");
    return NULL;
}

TEST(a_thread_without_a_ring_gets_one_when_rings_come_back)
{
    struct ring_segment seg;
    make_segment(&seg, "retry");
    pthread_barrier_init(&holders_ready, NULL, 16 + 1);
    pthread_barrier_init(&holders_go, NULL, 16 + 1);
    pthread_t holders[16];
    for (int i = 0; i < 16; i++)
        pthread_create(&holders[i], NULL, hold_a_ring, NULL);
    pthread_barrier_wait(&holders_ready); /* all 16 rings are held */
    static pthread_barrier_t crowd_gone;
    pthread_barrier_init(&crowd_gone, NULL, 2);
    struct late_thread l = {&crowd_gone, 0};
    pthread_t late;
    pthread_create(&late, NULL, late_writer, &l);
    pthread_barrier_wait(&crowd_gone); /* its first event found no ring */
    pthread_barrier_wait(&holders_go);
    for (int i = 0; i < 16; i++)
        pthread_join(holders[i], NULL);
    static struct got g;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &g, &st); /* the holders are dead: their rings are free */
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_INSTANT], 16);
    pthread_barrier_wait(&crowd_gone);
    pthread_join(late, NULL);
    static struct got g2;
    ring_drain(&seg, collect, &g2, &st);
    /* it tries again after RING_RETRY (256) drops: the rest arrive */
    ASSERT(g2.by_kind[STROBE_EV_INSTANT] >= 1000 - 256);
    ASSERT_EQ_U64(st.dropped + (uint64_t)g2.by_kind[STROBE_EV_INSTANT], 1001);
    pthread_barrier_destroy(&holders_ready);
    pthread_barrier_destroy(&holders_go);
    pthread_barrier_destroy(&crowd_gone);
    ring_segment_release(&seg);
}

/* Calls that cannot be recorded lose their event, counted, and crash nothing:
 * NULL names, a negative duration; a step needs no name. */
TEST(unrecordable_calls_are_counted_as_drops)
{
    struct ring_segment seg;
    make_segment(&seg, "unrecordable");
    strobe_span_begin(NULL);
    strobe_span_end(NULL);
    strobe_instant(NULL);
    strobe_counter(NULL, 1.0);
    strobe_counter_at_step(NULL, 1.0, 3);
    strobe_span_complete(NULL, 100, 5);
    strobe_span_complete("neg", 100, -5);
    strobe_step(2);
    static struct got g;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &g, &st);
    ASSERT_EQ_INT(g.events, 1); /* the step */
    ASSERT_EQ_INT(g.by_kind[STROBE_EV_STEP], 1);
    ASSERT_EQ_U64(st.dropped, 7);
    ring_segment_release(&seg);
}

TEST_MAIN(a_reused_name_buffer_is_never_mistaken, stamps_are_monotonic_ns_after_the_drain,
          tsc_can_be_turned_off, off_without_a_recorder, off_with_a_bad_segment_name,
          events_arrive_with_their_names, threads_and_forked_children_get_rings_of_their_own,
          more_threads_than_rings_each_lost_event_counted_once,
          a_thread_without_a_ring_gets_one_when_rings_come_back,
          unrecordable_calls_are_counted_as_drops)
