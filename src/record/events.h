/*
 * The recorder's side of the framework events: it creates the run's
 * shared-memory segment, drains the rings on every tick, pairs span begins
 * with their ends, gives names run-wide ids, keeps each process's attributes
 * (rank, data-loader worker id) and packs the events of each thread into
 * compressed blocks (codec/events.h) for the writer thread.
 *
 * Threading: everything here runs on the sampling thread, except that the
 * writer thread reads what a batch points at (sealed blocks up to the batch's
 * last one, the batch's own copies of names and processes) while it commits.
 *
 * Memory is bounded: sealed blocks wait for the store up to EVENT_PENDING_MAX
 * bytes; past that new blocks are dropped and their events counted as lost.
 *
 * When the rings are drained: on sampling ticks at most every 10 ms (each
 * drain checks that every writing thread is alive, a system call apiece, so
 * 1 kHz sampling does not drain 1000 times a second), or by a 100 ms timer
 * when the interval is longer; once more just before the recorder reaps a
 * child (its zombie still has /proc/PID/stat, so even a process that lived
 * between two ticks gets its comm and ppid); and at the end.
 *
 * Pairing: each ring's current owner is a stream. Its name ids map to
 * run-wide ids; the map is reset when the ring is reclaimed and claimed
 * again. Its open spans wait on a stack 64 deep for their ends, and a span
 * closed becomes one complete event. An end without a begin, and spans never
 * closed, are kept as they are. Spans nested deeper than 64 are dropped and
 * counted; the ends that come while they are open are theirs (the
 * innermost's), so the 64 spans below still pair with their own ends.
 */
#ifndef STROBE_RECORD_EVENTS_H
#define STROBE_RECORD_EVENTS_H

#include <stdint.h>
#include <sys/types.h>

#include "codec/events.h"
#include "common/strtab.h"
#include "ring/ring.h"
#include "store/store.h"

#define EVENT_RINGS        128          /* writing threads at once */
#define EVENT_RING_RECORDS 16384        /* 512 KiB per ring, touched only when used */
#define EVENT_BLOCK_EVENTS 4096         /* events per stored block */
#define EVENT_BLOCK_AGE_NS 5000000000LL /* a block is sealed after this even if not full */
#define EVENT_PENDING_MAX  (64u << 20)
#define EVENT_NAMES_MAX    65536 /* distinct names per run */
#define EVENT_OPEN_MAX     64    /* open spans per thread */
#define EVENT_RING_NAMES   1024  /* name ids a ring may define (libstrobe's table) */
#define EVENT_NAME_BUF     (STROBE_NAME_MAX + 8)

/* Names under this prefix are metadata about the writing process, not
 * counters: strobe.rank, strobe.local_rank, strobe.world_size, strobe.worker_id. */
#define EVENT_META_PREFIX "strobe."

struct open_span {
    int64_t ts_ns;
    uint32_t name;
    uint32_t step;
};

/* One ring's current owner thread and its unfinished block. */
struct event_stream {
    pid_t pid, tid;                 /* 0: no owner seen yet */
    uint32_t map[EVENT_RING_NAMES]; /* the ring's name id -> run-wide id, 0 unknown */
    struct open_span open[EVENT_OPEN_MAX];
    uint32_t depth;
    uint32_t too_deep; /* spans open beyond EVENT_OPEN_MAX: dropped and counted, their ends
                        * consumed, so the spans below still pair with their own ends */
    struct event *buf; /* EVENT_BLOCK_EVENTS, allocated on first use */
    uint32_t n;
    int64_t first_mono_ns; /* when the block's first event was drained */
};

struct event_sealed {
    struct event_sealed *next;
    struct event_block_record rec; /* rec.data points into data[] */
    uint8_t data[];
};

struct event_proc {
    pid_t pid;
    int64_t ppid;
    char comm[64];
    int64_t rank, local_rank, world_size, worker_id;
    const char *role; /* set in a batch's copy: "main", "rank", "dataloader" or NULL */
    unsigned version; /* bumped at each change */
    unsigned stored;  /* the version the store has; 0 none */
};

/* Where app.<name> counters go: (name id, rank) -> series index. */
struct app_series {
    uint32_t name;
    int32_t rank; /* -1 none */
    uint32_t series;
};

struct event_batch {
    char **names; /* copies of the name pointers names_from.. (the strings live in the sink) */
    uint32_t names_from, names_to, names_cap;
    uint32_t name_base;       /* ids are name_base + index + 1 */
    struct event_proc *procs; /* copies */
    uint32_t nprocs, procs_cap;
    struct event_sealed *first, *last; /* NULL when none */
    uint32_t nblocks;
};

struct series_table;
struct proc_tree;

/* Called for every finished span kept, and when a process's rank or worker
 * id becomes known (the live rules read events this way). */
typedef void event_span_tap_fn(void *arg, pid_t pid, pid_t tid, int64_t start_ns, int64_t end_ns,
                               uint32_t name_id, const char *name);
typedef void event_proc_tap_fn(void *arg, pid_t pid, int64_t rank, int64_t worker_id);

struct event_sink {
    int on;
    event_span_tap_fn *span_tap; /* NULL: none */
    event_proc_tap_fn *proc_tap;
    void *tap_arg;
    struct ring_segment seg;
    struct event_stream *streams; /* seg.ring_count */
    struct strtab names;          /* names.s[id - 1 - name_base], at most names.max */
    uint32_t name_base;           /* 0, or a node's first id less one in a job (store/job.h) */
    uint32_t names_stored;        /* names.s[0..names_stored) are in the store */
    struct event_proc *procs;
    uint32_t nprocs, procs_cap;
    struct app_series *apps;
    uint32_t napps, apps_cap;
    struct event_sealed *sealed_head, *sealed_tail;
    size_t pending_bytes;
    struct event_encoder enc;
    int64_t mono0_ns, real0_ns; /* CLOCK_MONOTONIC to UTC */
    pid_t root_pid;
    struct series_table *series;
    struct proc_tree *tree;
    uint64_t events;       /* events kept (stored or waiting) */
    uint64_t steps;        /* `step` spans seen, all processes (the live line) */
    uint32_t step_name;    /* the run-wide id of "step", 0 until seen */
    uint32_t last_step;    /* the highest step any event belonged to (strobe ctl) */
    uint64_t lost;         /* events dropped here: memory cap, name table full */
    struct drain_stats st; /* the segment's counters, as of the last drain */
};

/*
 * Create the segment "/strobe-<run_id>" and get ready. 0, or negative: the
 * run then goes on without framework events (the caller says so once).
 */
int event_sink_open(struct event_sink *k, const char *run_id, struct series_table *series,
                    struct proc_tree *tree);
/* The segment's name, for $STROBE_SHM; NULL when off. */
const char *event_sink_shm_name(const struct event_sink *k);
/* The clock mapping and the job's pid, once it has started. */
void event_sink_start(struct event_sink *k, int64_t mono0_ns, int64_t real0_ns, pid_t root);
/* Drain every ring, and seal blocks that are full or older than
 * EVENT_BLOCK_AGE_NS at now_mono_ns. */
void event_sink_drain(struct event_sink *k, int64_t now_mono_ns);
/* Seal every unfinished block (the end of the run). Open spans are kept as
 * span-begin events. */
void event_sink_seal_all(struct event_sink *k);
/* Removes the segment. */
void event_sink_close(struct event_sink *k);

/* Events lost so far, all causes. */
uint64_t event_sink_dropped(const struct event_sink *k);

/* Fill b with what the store does not have yet (a batch in flight keeps
 * everything it points at alive). */
int event_batch_collect(struct event_batch *b, struct event_sink *k);
/* After the writer committed b: release what it stored. On failure keep all. */
void event_batch_settle(struct event_batch *b, struct event_sink *k, int result);
void event_batch_release(struct event_batch *b);
/* The writer's part: store b's names, processes and blocks. */
int event_batch_store(const struct event_batch *b, struct store *s, const char *run_id);

#endif
