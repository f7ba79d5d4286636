/*
 * The store writer: a thread that owns the store connection during a run,
 * so that the sampling thread never waits on the disk.
 *
 * Once a second the sampler builds a batch (new series definitions, the
 * sealed blocks not yet persisted, copies of the open blocks that grew, the
 * run's counters) and hands it over if the writer is idle; if it is still busy
 * the data simply stays in the series table until the next tick. The writer
 * commits the batch in one transaction and reports the result; the sampler
 * releases sealed blocks only after a successful commit, so a failed commit
 * (full disk, locked store) loses nothing while memory allows.
 */
#ifndef STROBE_RECORD_WRITER_H
#define STROBE_RECORD_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "record/events.h"
#include "record/logtee.h"
#include "sample/series.h"
#include "store/store.h"

struct batch_def {
    uint32_t series;
    const char *name; /* the series' own strings: stable for the run */
    const char *labels;
    const char *unit;
    char *meta;     /* copy, or NULL */
    uint8_t define; /* 1: insert the series; 0: only update meta */
};

struct batch_block {
    uint32_t series;
    struct block_stats st;
    struct sealed_block *sealed; /* NULL for an open-block snapshot */
    size_t snap_off;             /* snapshot bytes at batch->snap + snap_off */
    size_t len;
};

/* The job's output so far (stdout or stderr), stored again in this batch's
 * transaction. The writer takes the copy (up to 1 MiB, a few hundred
 * microseconds) from the tee's shared memory, so the sampling loop does not
 * stall on it. */
struct batch_text {
    const char *kind;    /* "stdout" or "stderr" */
    struct log_tee from; /* the tee as of the hand-over, to copy from */
    int take;            /* 1: the writer is to copy from `from` */
    struct strbuf text;
    int64_t bytes; /* everything the job wrote to the stream, as of text */
    int put;       /* 1: this batch carried it (the copy was whole) */
};

struct batch {
    struct batch_def *defs;
    uint32_t ndefs, defs_cap;
    struct batch_block *blocks;
    uint32_t nblocks, blocks_cap;
    uint8_t *snap; /* copies of open blocks */
    size_t snap_len, snap_cap;
    struct event_batch events;  /* framework events not yet stored */
    struct run_record run;      /* id and counters; status/end on the last batch */
    struct batch_text texts[2]; /* the job's stdout and stderr at a checkpoint */
    int result;                 /* the writer's: 0 or negative */
    uint32_t series_count;      /* table size when collected */
};

struct writer {
    struct store *store;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    struct batch *work; /* handed over, not yet committed */
    atomic_int busy;    /* 1 from hand-over until the result is set */
    int stop;
    int64_t *ids; /* store id per series index; 0 until committed */
    /* a node of a job measures its clock against the store's now and then
     * (record/cluster.h), on this thread: it owns the connection */
    int64_t clock_every_ns; /* 0: never */
    int64_t clock_due_ns;   /* monotonic */
    int64_t clock_offset_ns, clock_rtt_ns;
    uint32_t ids_cap;
    int started;
};

int writer_start(struct writer *w, struct store *store);
/* Stop the thread (after the work in flight). */
void writer_stop(struct writer *w);
/* Hand b over if the writer is idle: 1 when taken, 0 when busy. */
int writer_submit(struct writer *w, struct batch *b);
/* Wait until the writer is idle. */
void writer_wait(struct writer *w);
static inline int writer_busy(struct writer *w)
{
    return atomic_load_explicit(&w->busy, memory_order_acquire);
}

void batch_init(struct batch *b);
void batch_release(struct batch *b);
void batch_reset(struct batch *b);

/*
 * Fill b from the table: definitions not yet persisted, every pending sealed
 * block, snapshots of open blocks that grew since the last batch. Marks the
 * table frozen (no sealed block may be dropped while b is in flight).
 */
int batch_collect(struct batch *b, struct series_table *t);
/* After the writer finished b: on success release what it persisted and
 * mark definitions done; on failure arrange for everything to be resent. */
void batch_settle(struct batch *b, struct series_table *t);

#endif
