/*
 * What the benchmarks that write through the store share: a fresh store with
 * one running run to write into, a repeatable random source, and the order
 * for their medians (header-only: each bench is its own binary).
 */
#ifndef STROBE_BENCH_RUN_H
#define STROBE_BENCH_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

/* Open db (created) and insert run, named "bench", running: 0, or -1 with
 * the reason on stderr. */
static inline int bench_open_run(const char *db, const char *who, struct store **out,
                                 struct run_record *run)
{
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(db, 0, out, &err);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", who, err.buf);
    strbuf_release(&err);
    if (rc < 0)
        return -1;
    run_record_init(run);
    snprintf(run->id, sizeof(run->id), "%016x", (unsigned)getpid());
    run->name = strdup("bench");
    run->command_json = strdup("[]");
    snprintf(run->status, sizeof(run->status), "running");
    (*out)->ops->begin(*out);
    (*out)->ops->run_insert(*out, run);
    (*out)->ops->commit(*out);
    return 0;
}

/* xorshift64: the same values on every run and machine */
static uint64_t bench_rng_state = 88172645463325252u;
static inline uint64_t rnd(void)
{
    bench_rng_state ^= bench_rng_state << 13;
    bench_rng_state ^= bench_rng_state >> 7;
    bench_rng_state ^= bench_rng_state << 17;
    return bench_rng_state;
}

/* qsort order of doubles, for medians of rounds */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
