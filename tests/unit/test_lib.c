/*
 * libstrobe end to end through a real segment: off without a recorder; spans,
 * instants, counters and steps arrive with their names; names are interned by
 * content; threads get rings of their own; a forked child gets its own ring;
 * unusable names are counted as drops.
 */
#include <pthread.h>
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

TEST_MAIN(off_without_a_recorder, off_with_a_bad_segment_name, events_arrive_with_their_names,
          threads_and_forked_children_get_rings_of_their_own)
