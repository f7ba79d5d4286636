/*
 * C span cost: strobe_span_begin + strobe_span_end, beside an empty call pair
 * (the floor) and with no recorder (the flag check). The ring is drained
 * between batches, outside the timed part, so no event is dropped.
 *
 *   build/bench/span_cost [pairs]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring.h"
#include "strobe/strobe.h"

#define BATCH 1000 /* pairs between drains: 2000 records, half a ring */

__attribute__((noinline)) static void empty_begin(const char *name)
{
    __asm__ volatile("" : : "r"(name) : "memory");
}

__attribute__((noinline)) static void empty_end(const char *name)
{
    __asm__ volatile("" : : "r"(name) : "memory");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void ignore(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                   const char *name, void *arg)
{
    (void)ring, (void)pid, (void)tid, (void)rec, (void)name;
    (*(unsigned long *)arg)++;
}

typedef void pair_fn(const char *name);

/* ns per begin+end pair, median of 5 runs of `pairs` pairs */
static double time_pairs(pair_fn *begin, pair_fn *end, long pairs, struct ring_segment *seg)
{
    double runs[5];
    unsigned long seen = 0;
    for (int r = 0; r < 5; r++) {
        double spent = 0;
        for (long done = 0; done < pairs; done += BATCH) {
            double t0 = now_ns();
            for (int i = 0; i < BATCH; i++) {
                begin("forward");
                end("forward");
            }
            spent += now_ns() - t0;
            if (seg) {
                struct drain_stats st = {0};
                ring_drain(seg, ignore, &seen, &st);
            }
        }
        runs[r] = spent / (double)pairs;
    }
    for (int i = 0; i < 5; i++) /* sort for the median */
        for (int j = i + 1; j < 5; j++)
            if (runs[j] < runs[i]) {
                double t = runs[i];
                runs[i] = runs[j];
                runs[j] = t;
            }
    return runs[2];
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 2000000;
    if (pairs < BATCH)
        pairs = BATCH;
    pid_t kid = fork(); /* without a recorder: a process that never saw $STROBE_SHM */
    if (kid == 0) {
        unsetenv(STROBE_SHM_ENV);
        double off = time_pairs(strobe_span_begin, strobe_span_end, pairs, NULL);
        printf("strobe span begin+end, no recorder: %6.2f ns\n", off);
        fflush(stdout);
        _exit(0);
    }
    waitpid(kid, NULL, 0);
    char name[64];
    snprintf(name, sizeof(name), "/strobe-bench-%d", (int)getpid());
    struct ring_segment seg;
    if (ring_segment_create(&seg, name, 8, 4096) < 0) {
        perror("ring_segment_create");
        return 1;
    }
    setenv(STROBE_SHM_ENV, name, 1);
    double floor = time_pairs(empty_begin, empty_end, pairs, NULL);
    double on = time_pairs(strobe_span_begin, strobe_span_end, pairs, &seg);
    printf("empty call pair (floor):            %6.2f ns\n", floor);
    printf("strobe span begin+end, recording:   %6.2f ns (%.1fx the floor; budget 40 ns)\n", on,
           on / floor);
    ring_segment_release(&seg);
    return 0;
}
