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
 *
 * Python stack sample blocks ride the same way: the recorder moves them
 * into the batch (batch_add_py_blocks), which keeps them until a commit
 * stores them, up to a cap.
 *
 * A batch goes to one of two targets: the store, or the spool (a SQLite
 * file of the run's own, record/spool.h) when a PostgreSQL store does not
 * answer. The sampler does not know which: "defined" and "persisted" mean
 * in either. So the writer keeps what it needs to define any series, event
 * name or process in a target that lacks it (struct writer's memory: the
 * series' strings, the latest meta, every name, each process's latest
 * attributes), and each target keeps its own series ids.
 */
#ifndef STROBE_RECORD_WRITER_H
#define STROBE_RECORD_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/strbuf.h"
#include "pyprof/profile.h"
#include "record/events.h"
#include "record/logtee.h"
#include "sample/series.h"
#include "store/store.h"

/* How often a recorder into PostgreSQL sends each series' open block again
 * (series_table.snap_every): rewriting every open block each second was
 * most of the server's CPU and WAL with many nodes (docs/benchmarks.md).
 * Sealed blocks, events and the run's counters still go every second. */
#define OPEN_EVERY_PG_NS (5 * NS_PER_S)

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

/* Bytes of Python blocks a batch holds at most by default: a store that
 * does not answer for minutes keeps the dictionaries and the latest
 * samples (batch_add_py_blocks). */
#define PY_BATCH_CAP_BYTES (32u << 20)

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
    /* Python stack samples (pyprof/profile.h): owned, in seq order. They
     * outlive batch_collect and a failed commit, as sealed blocks do, and
     * are freed by the batch_settle of the commit that stored them. */
    struct py_block_out *py;
    uint32_t npy, py_cap;
    size_t py_bytes;            /* their data */
    size_t py_cap_bytes;        /* 0: PY_BATCH_CAP_BYTES */
    uint64_t py_dropped_blocks; /* samples blocks dropped for the cap, ever */
    uint64_t py_dropped_samples;
    int result; /* the writer's: 0 or negative */
    /* strobe ctl's tags and notes (record/control.h): copies, put when
     * ctl_gen is not 0 */
    struct kv_list ctl_tags;
    struct strbuf ctl_notes;
    uint64_t ctl_gen;
    /* the live metrics' snapshot (record/live_metrics.h), put as run text
     * EXPO_TEXT_KIND when not empty */
    struct strbuf live_snap;
    int has_open;          /* it carries every open block that grew */
    uint32_t series_count; /* table size when collected */
};

/* A store batches go to, and what it holds of the run. */
struct writer_target {
    struct store *store;
    int64_t *ids; /* store id per series index; 0 until committed there */
    uint32_t ids_cap;
    uint32_t *fresh; /* series the transaction under way defined */
    uint32_t nfresh, fresh_cap;
    struct block_put *puts; /* the transaction's blocks, for one blocks_put */
    uint32_t puts_cap;
    int lookup; /* it may hold series ids[] does not know (a merge put them there) */
    /* not NULL: it lacks the run; the next transaction inserts this row, and
     * every event name and process so far */
    const struct run_record *first;
};

/* What the writer knows of a series, to define it in any target. */
struct writer_series {
    const char *name, *labels, *unit; /* the series' own strings: stable for the run */
    char *meta;                       /* the latest, owned, or NULL */
};

struct spool;

struct writer {
    struct writer_target primary; /* the run's store */
    struct spool *spool;          /* NULL: batches go to the store only */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    struct batch *work; /* handed over, not yet committed */
    atomic_int busy;    /* 1 from hand-over until the result is set */
    int stop;
    /* a node of a job measures its clock against the store's now and then
     * (record/cluster.h), on this thread: it owns the connection */
    int64_t clock_every_ns; /* 0: never */
    int64_t clock_due_ns;   /* monotonic */
    int64_t clock_offset_ns, clock_rtt_ns;
    int started;
    /* the writer's memory (see the top of this file) */
    struct writer_series *series;
    uint32_t series_cap;
    char **names; /* event name index -> the sink's string, stable for the run */
    uint32_t nnames, names_cap;
    uint32_t name_base;       /* ids are name_base + index + 1 (events.h) */
    struct event_proc *procs; /* the latest attributes of each process */
    uint32_t nprocs, procs_cap;
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
/* Commit b to t in one transaction, defining there what t lacks (the
 * writer's thread, or a caller while it is idle). 0, or negative with
 * t->store->err set; a failure leaves t as it was. */
int writer_commit(struct writer *w, struct writer_target *t, struct batch *b);
/* Forget what t holds (its file was removed): the next commit starts it
 * anew with run, as its first. */
void writer_target_reset(struct writer_target *t, const struct run_record *run);
/* Free t's arrays (not its store). */
void writer_target_release(struct writer_target *t);

void batch_init(struct batch *b);
void batch_release(struct batch *b);
void batch_reset(struct batch *b);

/*
 * Fill b from the table: definitions not yet persisted, every pending sealed
 * block, and, in every t->snap_every-th batch (b->has_open), snapshots of
 * the open blocks that grew since the last. Marks the table frozen (no
 * sealed block may be dropped while b is in flight).
 */
int batch_collect(struct batch *b, struct series_table *t);
/* After the writer finished b: on success release what it persisted and
 * mark definitions done; on failure arrange for everything to be resent. */
void batch_settle(struct batch *b, struct series_table *t);

/*
 * Move n Python blocks (py_profile_take's, in seq order) into b, which
 * takes their data whatever the result. Only while b is not handed over
 * (before writer_submit, or after batch_settle). Past b's cap the oldest
 * samples blocks are dropped and counted (py_dropped_*); dictionaries
 * never are, as later samples refer to them. 0, or -ENOMEM when b could
 * not grow: the blocks not kept are dropped and counted the same way
 * (a dictionary among them is lost too, and its samples will not load).
 */
int batch_add_py_blocks(struct batch *b, struct py_block_out *blocks, int n);

#endif
