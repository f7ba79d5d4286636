/*
 * The event rings: ABI checks at attach, order and wraparound, exact drop
 * counts, many threads and processes at once (also run under TSan in the
 * sanitizer pass), a writer killed mid-stream, and a segment full of garbage.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "common/array.h"
#include "ring/ring.h"
#include "test.h"

static void seg_name(char *buf, size_t cap, const char *what)
{
    snprintf(buf, cap, "/strobe-test-%d-%s", (int)getpid(), what);
    shm_unlink(buf);
    test_shm_track(buf);
}

static pid_t my_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static struct strobe_record event(uint8_t kind, uint32_t name_id, uint64_t ts, uint64_t value)
{
    struct strobe_record r = {.ts_ns = ts, .value = value, .name_id = name_id, .kind = kind};
    return r;
}

/* What a drain collects, per writer thread (a ring may serve several in
 * turn: a dead thread's ring is reclaimed and claimed again). */
#define MAX_SEEN    4096
#define MAX_WRITERS 64
struct seen {
    uint64_t n;
    uint64_t names;
    int writers;
    pid_t tid[MAX_WRITERS];
    pid_t pid[MAX_WRITERS];
    uint64_t last_value[MAX_WRITERS];
    uint64_t count[MAX_WRITERS];
    char name[MAX_WRITERS][STROBE_NAME_MAX + 1];
    int out_of_order;
    struct strobe_record rec[MAX_SEEN];
};

static int writer_slot(struct seen *s, pid_t pid, pid_t tid)
{
    for (int w = 0; w < s->writers; w++)
        if (s->tid[w] == tid && s->pid[w] == pid)
            return w;
    if (s->writers == MAX_WRITERS)
        return -1;
    s->tid[s->writers] = tid;
    s->pid[s->writers] = pid;
    return s->writers++;
}

static void collect(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                    const char *name, void *arg)
{
    struct seen *s = arg;
    (void)ring;
    int w = writer_slot(s, pid, tid);
    if (w < 0)
        return;
    if (name) {
        snprintf(s->name[w], sizeof(s->name[w]), "%s", name);
        s->names++;
        return;
    }
    if (s->count[w] && rec->value <= s->last_value[w])
        s->out_of_order = 1;
    s->last_value[w] = rec->value;
    s->count[w]++;
    if (s->n < MAX_SEEN)
        s->rec[s->n] = *rec;
    s->n++;
}

TEST(attach_checks_the_abi)
{
    char name[64];
    seg_name(name, sizeof(name), "abi");
    struct ring_segment w, r;
    ASSERT_EQ_INT(ring_segment_attach(&r, name), -ENOENT);
    ASSERT_EQ_INT(ring_segment_create(&w, name, 4, 100), -EINVAL); /* not a power of two */
    ASSERT_EQ_INT(ring_segment_create(&w, name, 4, 256), 0);
    ASSERT_EQ_INT(ring_segment_create(&r, name, 4, 256), -EEXIST);
    ASSERT_EQ_INT(ring_segment_attach(&r, name), 0);
    ASSERT_EQ_INT(r.ring_count, 4);
    ASSERT_EQ_INT(r.ring_records, 256);
    ring_segment_release(&r);
    /* each field that shapes the layout is checked */
    uint32_t *fields[] = {&w.hdr->magic, &w.hdr->abi, &w.hdr->record_bytes, &w.hdr->ring_count,
                          &w.hdr->ring_records};
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
        uint32_t keep = *fields[i];
        *fields[i] = keep + 1;
        ASSERT_EQ_INT(ring_segment_attach(&r, name), -EPROTO);
        *fields[i] = keep;
    }
    ASSERT_EQ_INT(ring_segment_attach(&r, name), 0);
    ring_segment_release(&r);
    ring_segment_release(&w);
    ASSERT_EQ_INT(ring_segment_attach(&r, name), -ENOENT); /* the creator removed it */
}

TEST(order_names_and_wraparound)
{
    char name[64];
    seg_name(name, sizeof(name), "order");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, 2, 64), 0);
    int i = ring_claim(&seg, getpid(), my_tid());
    ASSERT_EQ_INT(i, 0);
    static struct seen s;
    struct drain_stats st = {0};
    const char *long_name = "forward/encoder.layers.11.self_attention.query_key_value";
    ASSERT_EQ_INT(ring_push_name(&seg, i, 7, long_name, 5), 0);
    uint64_t v = 0;
    /* three times round the ring, draining every 50 records */
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < 50; k++, v++)
            ASSERT_EQ_INT(ring_push(&seg, i, event(STROBE_EV_SPAN_BEGIN, 7, 1000 + v, v + 1)), 0);
        ring_drain(&seg, collect, &s, &st);
    }
    ASSERT_EQ_INT(s.writers, 1);
    ASSERT_EQ_STR(s.name[0], long_name);
    ASSERT_EQ_U64(s.count[0], 200);
    ASSERT_EQ_U64(st.names, 1);
    ASSERT_EQ_U64(st.invalid, 0);
    ASSERT_EQ_U64(st.dropped, 0);
    ASSERT(!s.out_of_order);
    ASSERT_EQ_U64(s.rec[199].ts_ns, 1000 + 199);
    ASSERT_EQ_INT(s.rec[199].name_id, 7);
    ASSERT_EQ_INT(s.pid[0], getpid());
    ASSERT_EQ_INT(ring_push_name(&seg, i, 8, "", 0), -EINVAL);
    ring_segment_release(&seg);
}

TEST(full_ring_drops_exactly_what_did_not_fit)
{
    char name[64];
    seg_name(name, sizeof(name), "full");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, 1, 64), 0);
    int i = ring_claim(&seg, getpid(), my_tid());
    ASSERT_EQ_INT(ring_claim(&seg, getpid(), my_tid() + 1), -ENOSPC); /* one ring only */
    int refused = 0;
    for (uint64_t v = 1; v <= 64 + 10; v++)
        refused += ring_push(&seg, i, event(STROBE_EV_INSTANT, 0, v, v)) == -ENOSPC;
    ASSERT_EQ_INT(refused, 10);
    ASSERT_EQ_INT(ring_push_name(&seg, i, 1, "data", 0), -ENOSPC); /* a name drops as one */
    static struct seen s;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &s, &st);
    ASSERT_EQ_U64(s.count[0], 64);
    ASSERT_EQ_U64(s.last_value[0], 64); /* the first 64 got in, the rest did not */
    /* 10 events + 1 name on the full ring; the claim that found no ring
     * dropped no event (its caller counts the events it then drops) */
    ASSERT_EQ_U64(st.dropped, 11);
    /* room again once drained */
    ASSERT_EQ_INT(ring_push(&seg, i, event(STROBE_EV_INSTANT, 0, 100, 100)), 0);
    ring_segment_release(&seg);
}

#define THREADS    8
#define PER_THREAD 200000
struct writer_arg {
    struct ring_segment *seg;
    atomic_int *started;
    uint64_t refused;
};

static void *writer_thread(void *p)
{
    struct writer_arg *a = p;
    int i = ring_claim(a->seg, getpid(), my_tid());
    atomic_fetch_add(a->started, 1);
    if (i < 0)
        return NULL;
    for (uint64_t v = 1; v <= PER_THREAD; v++)
        a->refused += ring_push(a->seg, i, event(STROBE_EV_COUNTER, 1, v, v)) < 0;
    return NULL;
}

struct drainer {
    struct ring_segment *seg;
    struct seen *s;
    struct drain_stats st;
    atomic_int stop;
};

static void *drain_thread(void *p)
{
    struct drainer *d = p;
    while (!atomic_load(&d->stop))
        ring_drain(d->seg, collect, d->s, &d->st);
    ring_drain(d->seg, collect, d->s, &d->st);
    return NULL;
}

TEST(many_threads_at_once)
{
    char name[64];
    seg_name(name, sizeof(name), "threads");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, THREADS, 1024), 0);
    static struct seen s;
    struct drainer d = {.seg = &seg, .s = &s};
    pthread_t dt, wt[THREADS];
    atomic_int started = 0;
    struct writer_arg args[THREADS];
    pthread_create(&dt, NULL, drain_thread, &d);
    for (int k = 0; k < THREADS; k++) {
        args[k] = (struct writer_arg){&seg, &started, 0};
        pthread_create(&wt[k], NULL, writer_thread, &args[k]);
    }
    uint64_t refused = 0;
    for (int k = 0; k < THREADS; k++) {
        pthread_join(wt[k], NULL);
        refused += args[k].refused;
    }
    atomic_store(&d.stop, 1);
    pthread_join(dt, NULL);
    uint64_t got = 0;
    for (int k = 0; k < s.writers; k++)
        got += s.count[k];
    ASSERT(s.writers <= THREADS); /* threads that got only drops never show */
    ASSERT(!s.out_of_order);
    ASSERT_EQ_U64(d.st.invalid, 0);
    ASSERT_EQ_U64(got + refused, (uint64_t)THREADS * PER_THREAD);
    ASSERT_EQ_U64(d.st.dropped, refused);   /* the drops reach the consumer, exactly */
    ASSERT_EQ_U64(d.st.reclaimed, THREADS); /* the threads ended: their rings are free again */
    fprintf(stderr, "  %llu events through, %llu dropped\n", (unsigned long long)got,
            (unsigned long long)refused);
    ring_segment_release(&seg);
}

#define PROCS    4
#define PER_PROC 50000

TEST(processes_attach_by_name_and_their_rings_come_back)
{
    char name[64];
    seg_name(name, sizeof(name), "procs");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, PROCS, 4096), 0);
    pid_t kids[PROCS];
    for (int k = 0; k < PROCS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            struct ring_segment mine;
            if (ring_segment_attach(&mine, name) < 0)
                _exit(2);
            int i = ring_claim(&mine, getpid(), my_tid());
            if (i < 0 || ring_push_name(&mine, i, 1, "step", 0) < 0)
                _exit(3);
            for (uint64_t v = 1; v <= PER_PROC; v++)
                ring_push(&mine, i, event(STROBE_EV_STEP, 1, v, v)); /* full: dropped, counted */
            _exit(0);
        }
    }
    static struct seen s;
    struct drain_stats st = {0};
    int live = PROCS;
    while (live) {
        ring_drain(&seg, collect, &s, &st);
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            ASSERT_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
            live--;
        }
    }
    ring_drain(&seg, collect, &s, &st);
    uint64_t got = 0;
    ASSERT_EQ_INT(s.writers, PROCS);
    for (int k = 0; k < PROCS; k++) {
        got += s.count[k];
        ASSERT_EQ_STR(s.name[k], "step");
        ASSERT(s.pid[k] != getpid());
    }
    ASSERT(!s.out_of_order);
    ASSERT_EQ_U64(got + st.dropped, (uint64_t)PROCS * PER_PROC);
    ASSERT_EQ_U64(st.reclaimed, PROCS);
    for (int k = 0; k < PROCS; k++) /* every ring is claimable again */
        ASSERT(ring_claim(&seg, getpid(), my_tid() + k) >= 0);
    ring_segment_release(&seg);
}

TEST(a_writer_killed_mid_stream_corrupts_nothing)
{
    char name[64];
    seg_name(name, sizeof(name), "kill");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, 2, 1024), 0);
    pid_t kid = fork();
    if (kid == 0) {
        struct ring_segment mine;
        if (ring_segment_attach(&mine, name) < 0)
            _exit(2);
        int i = ring_claim(&mine, getpid(), my_tid());
        for (uint64_t v = 1;; v++)
            ring_push(&mine, i, event(STROBE_EV_INSTANT, 0, v, v));
    }
    static struct seen s;
    struct drain_stats st = {0};
    for (int k = 0; k < 200; k++) {
        ring_drain(&seg, collect, &s, &st);
        usleep(200);
    }
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    ring_drain(&seg, collect, &s, &st);
    ASSERT(s.count[0] > 1000);
    ASSERT(!s.out_of_order);
    ASSERT_EQ_U64(st.invalid, 0);
    ASSERT_EQ_U64(st.corrupt, 0);
    ASSERT_EQ_U64(st.reclaimed, 1);
    ring_segment_release(&seg);
}

static void ignore(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                   const char *name, void *arg)
{
    (void)ring, (void)pid, (void)tid, (void)rec, (void)name;
    (*(uint64_t *)arg)++;
}

TEST(garbage_in_the_segment_is_rejected)
{
    char name[64];
    seg_name(name, sizeof(name), "garbage");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, 8, 64), 0);
    uint64_t state = 0x1234567;
    uint64_t handed = 0;
    struct drain_stats st = {0};
    for (int round = 0; round < 50; round++) {
        /* scribble over every ring control and record, as a broken writer might */
        unsigned char *p = (unsigned char *)seg.ctl;
        unsigned char *end = (unsigned char *)seg.hdr + seg.bytes;
        for (; p < end; p++)
            *p = (unsigned char)rng_next(&state);
        for (uint32_t i = 0; i < seg.ring_count; i++) /* owners that do not exist */
            atomic_store(&seg.ctl[i].owner, strobe_ring_owner(0x3fffffff, 0x3fffffff));
        ring_drain(&seg, ignore, &handed, &st);
    }
    /* nothing random passes the check word and the sequence number */
    ASSERT_EQ_U64(handed, 0);
    ASSERT(st.invalid + st.corrupt > 0);
    ring_segment_release(&seg);
}

/* The same pid and tid claiming again from another program is the thread's
 * new program after an exec: the old ring is drained and comes back though
 * that thread lives, instead of staying claimed for good. From the same
 * program it is a second copy of libstrobe (the Python package's and a C
 * extension's): both rings stay. The claim notes the process's parent and
 * name, and the reclaim clears them. */
TEST(a_claim_again_from_a_new_program_retires_the_old_ring)
{
    char name[64];
    seg_name(name, sizeof(name), "exec");
    struct ring_segment seg;
    ASSERT_EQ_INT(ring_segment_create(&seg, name, 4, 64), 0);
    int old = ring_claim(&seg, getpid(), my_tid());
    ASSERT(old >= 0);
    ASSERT_EQ_INT(ring_push_name(&seg, old, 1, "before-exec", 0), 0);
    for (uint64_t v = 1; v <= 3; v++)
        ASSERT_EQ_INT(ring_push(&seg, old, event(STROBE_EV_COUNTER, 1, v, v)), 0);
    int copy = ring_claim(&seg, getpid(), my_tid()); /* another copy, same program */
    ASSERT(copy >= 0 && copy != old);
    ASSERT_EQ_INT((int)atomic_load(&seg.ctl[old].retired), 0);
    seg.ctl[old].owner_program ^= 1; /* as if the old ring's program had exec'd */
    seg.ctl[copy].owner_program ^= 1;
    int now = ring_claim(&seg, getpid(), my_tid());
    ASSERT(now >= 0 && now != old && now != copy);
    ASSERT_EQ_INT(ring_push_name(&seg, now, 1, "after-exec", 0), 0);
    ASSERT_EQ_INT(ring_push(&seg, now, event(STROBE_EV_COUNTER, 1, 4, 4)), 0);
    static struct seen s;
    struct drain_stats st = {0};
    ring_drain(&seg, collect, &s, &st);
    ASSERT_EQ_U64(s.n, 4); /* every record of both programs */
    ASSERT_EQ_U64(s.names, 2);
    ASSERT_EQ_U64(st.reclaimed, 2); /* the old program's two rings */
    ASSERT_EQ_U64(atomic_load(&seg.ctl[old].owner), 0);
    ASSERT_EQ_INT(seg.ctl[old].owner_ppid, 0);
    ASSERT_EQ_STR(seg.ctl[old].owner_comm, "");
    ASSERT(atomic_load(&seg.ctl[now].owner) != 0);

    int32_t ppid;
    char comm[16], want[32] = "";
    ring_owner_info(&seg, now, &ppid, comm);
    FILE *f = fopen("/proc/self/comm", "r");
    ASSERT(f && fgets(want, sizeof(want), f));
    fclose(f);
    want[strcspn(want, "\n")] = '\0';
    want[15] = '\0';
    ASSERT_EQ_INT(ppid, (int)getppid());
    ASSERT_EQ_STR(comm, want);
    ring_segment_release(&seg);
}

TEST_MAIN(attach_checks_the_abi, order_names_and_wraparound,
          full_ring_drops_exactly_what_did_not_fit, many_threads_at_once,
          processes_attach_by_name_and_their_rings_come_back,
          a_writer_killed_mid_stream_corrupts_nothing, garbage_in_the_segment_is_rejected,
          a_claim_again_from_a_new_program_retires_the_old_ring)
