/*
 * Drain, encode and commit: the recorder's cost per framework event, on one
 * core. Rings are filled outside the timed part with a training loop's
 * records (begin/end pairs of data, forward, backward, optimizer, a step
 * boundary, a complete step span, now and then a counter), then the timed
 * part is what the recorder does with them: event_sink_drain (validate, pair,
 * intern), event_sink_seal_all (columnar + zstd blocks), and the writer's
 * transaction (event_batch_store into SQLite, commit). Thread CPU time.
 *
 *   build/bench/event_drain [rounds] [rings]
 *
 * Prints JSON: records and events per second (median of rounds), bytes per
 * event stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_run.h"
#include "record/events.h"
#include "ring/ring.h"
#include "sample/series.h"

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *const phase[] = {"data", "forward", "backward", "optimizer"};
static const uint64_t phase_ns[] = {2000000, 10000000, 20000000, 3000000};

/* One ring's worth of a training loop: records pushed, events they make. */
static void fill_ring(struct ring_segment *seg, int ring, uint64_t *t, uint32_t *step,
                      uint64_t *records, uint64_t *events)
{
    if (*step == 0) {
        for (uint32_t p = 0; p < 4; p++)
            ring_push_name(seg, ring, p + 1, phase[p], (int64_t)*t);
        ring_push_name(seg, ring, 5, "step", (int64_t)*t);
        ring_push_name(seg, ring, 6, "loss", (int64_t)*t);
    }
    for (;;) {
        uint64_t head = atomic_load(&seg->ctl[ring].head);
        uint64_t tail = atomic_load(&seg->ctl[ring].tail);
        if (seg->ring_records - (head - tail) < 16)
            return;
        uint64_t start = *t;
        struct strobe_record r = {.step = *step, .kind = STROBE_EV_STEP, .value = *step};
        r.ts_ns = *t;
        ring_push(seg, ring, r);
        for (uint32_t p = 0; p < 4; p++) {
            r = (struct strobe_record){
                .ts_ns = *t, .name_id = p + 1, .step = *step, .kind = STROBE_EV_SPAN_BEGIN};
            ring_push(seg, ring, r);
            *t += phase_ns[p] + rnd() % (phase_ns[p] / 5);
            r.ts_ns = *t;
            r.kind = STROBE_EV_SPAN_END;
            ring_push(seg, ring, r);
            *t += 10000 + rnd() % 5000;
        }
        r = (struct strobe_record){.ts_ns = start,
                                   .value = *t - start,
                                   .name_id = 5,
                                   .step = *step,
                                   .kind = STROBE_EV_COMPLETE};
        ring_push(seg, ring, r);
        *records += 10;
        *events += 6;
        if (*step % 10 == 0) {
            double loss = 1.0 / (1.0 + *step);
            r = (struct strobe_record){
                .ts_ns = *t, .name_id = 6, .step = *step, .kind = STROBE_EV_COUNTER};
            memcpy(&r.value, &loss, sizeof(loss));
            ring_push(seg, ring, r);
            *records += 1;
            *events += 1;
        }
        (*step)++;
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    int rings = argc > 2 ? atoi(argv[2]) : 8;
    if (rounds < 1 || rounds > 99 || rings < 1 || rings > EVENT_RINGS)
        return 2;
    char db[64];
    snprintf(db, sizeof(db), "/tmp/strobe-bench-events-%d.db", (int)getpid());
    struct store *store;
    struct run_record run;
    if (bench_open_run(db, "event_drain", &store, &run) < 0)
        return 1;

    struct series_table series;
    series_table_init(&series);
    struct event_sink sink;
    if (event_sink_open(&sink, run.id, &series, NULL) < 0) {
        fprintf(stderr, "event_drain: cannot create the segment\n");
        return 1;
    }
    event_sink_start(&sink, (int64_t)mono(), 1700000000000000000LL, getpid());
    /* the writer side: this process, one ring per simulated thread; the
     * owner is this thread, so the drain finds it alive */
    struct ring_segment w;
    ring_segment_attach(&w, event_sink_shm_name(&sink));
    int ring_of[EVENT_RINGS];
    for (int i = 0; i < rings; i++)
        ring_of[i] = ring_claim(&w, getpid(), (pid_t)gettid());

    double per_record[99], per_event[99];
    uint64_t t[EVENT_RINGS], total_events = 0;
    uint32_t step[EVENT_RINGS] = {0};
    for (int i = 0; i < rings; i++)
        t[i] = mono();
    struct event_batch batch = {0};
    for (int r = 0; r < rounds; r++) {
        uint64_t records = 0, events = 0;
        for (int i = 0; i < rings; i++)
            fill_ring(&w, ring_of[i], &t[i], &step[i], &records, &events);
        double t0 = thread_cpu_ns();
        event_sink_drain(&sink, (int64_t)mono());
        event_sink_seal_all(&sink);
        event_batch_collect(&batch, &sink);
        int rc = store->ops->begin(store);
        if (rc == 0)
            rc = event_batch_store(&batch, store, run.id);
        if (rc == 0)
            rc = store->ops->commit(store);
        event_batch_settle(&batch, &sink, rc);
        double spent = thread_cpu_ns() - t0;
        if (rc < 0) {
            fprintf(stderr, "event_drain: commit failed: %s\n", store->err.buf);
            return 1;
        }
        per_record[r] = (double)records / (spent / 1e9);
        per_event[r] = (double)events / (spent / 1e9);
        total_events += events;
    }
    qsort(per_record, (size_t)rounds, sizeof(double), bench_cmp_double);
    qsort(per_event, (size_t)rounds, sizeof(double), bench_cmp_double);
    /* the stored size, as the store sees it */
    FILE *p;
    char cmd[160];
    snprintf(cmd, sizeof(cmd),
             "sqlite3 %s 'SELECT SUM(length(data)), SUM(count) FROM event_blocks'", db);
    long long stored = 0, counted = 0;
    if ((p = popen(cmd, "r"))) {
        if (fscanf(p, "%lld|%lld", &stored, &counted) != 2)
            stored = counted = 0;
        pclose(p);
    }
    printf("{\"rounds\":%d,\"rings\":%d,\"events\":%llu,\"stored_events\":%lld,"
           "\"records_per_s\":%.0f,\"events_per_s\":%.0f,\"bytes_per_event\":%.3f,"
           "\"dropped\":%llu,\"invalid\":%llu}\n",
           rounds, rings, (unsigned long long)total_events, counted, per_record[rounds / 2],
           per_event[rounds / 2], counted ? (double)stored / (double)counted : 0.0,
           (unsigned long long)event_sink_dropped(&sink), (unsigned long long)sink.st.invalid);
    event_batch_release(&batch);
    ring_segment_release(&w);
    event_sink_close(&sink);
    series_table_release(&series);
    store_close(store);
    run_record_release(&run);
    char wal[80];
    unlink(db);
    snprintf(wal, sizeof(wal), "%s-wal", db);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", db);
    unlink(wal);
    return 0;
}
