/*
 * The recorder's table of series. Each series is one metric with one set of
 * labels ("cpu.util" / "core=0") and holds its open block, an encoder writing
 * into a fixed buffer, plus the sealed blocks not yet persisted by the store
 * writer. Collectors look a series up once (series_get) and keep its index;
 * each sample then costs one series_put: an append to the open block.
 *
 * Threading: the table belongs to the sampling thread. The store writer sees
 * only what series_snapshot() copies into a batch (see record/writer.h).
 *
 * Memory is bounded. Sealed blocks waiting for the store are capped at
 * pending_cap (64 MiB); beyond it the oldest are dropped and counted in
 * runs.dropped, never silently. Blocks in flight are never dropped: the
 * table is frozen while a batch is with the writer. A process that leaves
 * the tree has its series retired (open block sealed, buffer freed; a reused
 * pid revives them), so memory follows the live tree, not every process
 * ever seen; at most PROC_SERIES_MAX processes of a run get series of their
 * own (sample/proctree.h).
 */
#ifndef STROBE_SAMPLE_SERIES_H
#define STROBE_SAMPLE_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "codec/gorilla.h"
#include "common/metrics.h"

/* One block's encoded capacity: small enough that two full blocks and their
 * row headers share a 4 KiB SQLite page (at 2048 a full block took a page of
 * its own, leaving half of it empty). */
#define SERIES_BLOCK_BYTES  1900
#define SERIES_BLOCK_POINTS 1024 /* seal after this many points */

struct sealed_block {
    struct sealed_block *next;
    uint32_t series;       /* index in the table */
    struct block_stats st; /* summary */
    size_t len;            /* bytes of data */
    uint8_t data[SERIES_BLOCK_BYTES];
};

struct series {
    char *name;                  /* metric name, e.g. "proc.cpu" */
    char *labels;                /* canonical labels "pid=42", or "" */
    const char *unit;            /* static: "pct", "bytes", "bytes/s", ... */
    char *meta;                  /* JSON object of metadata (comm, ppid), or NULL */
    struct block_enc enc;        /* open block */
    uint8_t *open_buf;           /* its buffer (SERIES_BLOCK_BYTES); NULL once retired */
    struct sealed_block *sealed; /* oldest first, not yet persisted */
    struct sealed_block *sealed_tail;
    uint32_t snap_count; /* open block count at the last snapshot */
    uint8_t defined;     /* the store has its definition */
    uint8_t meta_dirty;  /* meta changed since last persisted */
    uint8_t keep_empty;  /* stored without points too (series_keep_empty) */
};

/* Called with every point appended (the live rules read the data this way). */
typedef void series_tap_fn(void *arg, uint32_t index, int64_t ts_ns, double value);

struct series_table {
    series_tap_fn *tap; /* NULL: none */
    void *tap_arg;
    struct series *items;
    uint32_t count;
    uint32_t cap;
    uint32_t *slots;                  /* open-addressing hash: index+1, 0 empty */
    uint32_t nslots;                  /* power of two */
    int64_t now_ns;                   /* timestamp of the frame being sampled */
    uint64_t points;                  /* points appended, all series */
    uint64_t rejected;                /* points refused (out of order) */
    uint64_t dropped;                 /* points lost to the pending-memory cap */
    size_t pending_bytes;             /* bytes held in sealed blocks not yet persisted */
    size_t pending_cap;               /* cap before the oldest sealed blocks are dropped */
    struct sealed_block *free_blocks; /* recycled sealed-block buffers */
    int frozen;                       /* a batch is in flight: sealed blocks must not be dropped */
    /* Open blocks go into every snap_every-th batch (0 and 1: every one);
     * snap_wait batches are left before the next. Rewriting each open
     * block is most of a PostgreSQL server's work (record/writer.h). */
    uint32_t snap_every, snap_wait;
};

int series_table_init(struct series_table *t);
void series_table_release(struct series_table *t);

/*
 * Find or create the series (name, labels). unit must be a static string.
 * Returns 0 and the index, or -ENOMEM. name and labels are copied.
 */
int series_get(struct series_table *t, const char *name, const char *labels, const char *unit,
               uint32_t *out_index);
/* series_get() for a metric of the catalog (common/metrics.h): its name and
 * unit come from there. */
int series_get_metric(struct series_table *t, enum metric_id metric, const char *labels,
                      uint32_t *out_index);

/* Replace a series' metadata JSON (copied); marks it for the next batch. */
int series_set_meta(struct series_table *t, uint32_t index, const char *meta_json);

/* Append value to series index at the table's current frame time. */
void series_put(struct series_table *t, uint32_t index, double value);
/* The same at time ts_ns instead of the frame's (values that arrive as
 * events: app.<name> counters). */
void series_put_at(struct series_table *t, uint32_t index, int64_t ts_ns, double value);

/* Give the sealed blocks up to (and including) last back to the free list,
 * once the writer has persisted them. */
void series_release_sealed(struct series_table *t, uint32_t index, struct sealed_block *last);

/* Store the series even before (or without) its first point: it carries
 * metadata worth keeping on its own (a GPU's facts). */
void series_keep_empty(struct series_table *t, uint32_t index);

/* The series gets no more points for now (its process exited): seal what it
 * holds and give its open buffer back. A later series_put revives it. */
void series_retire(struct series_table *t, uint32_t index);

/* Seal every open block that holds points (at the end of a run). */
void series_seal_all(struct series_table *t);

#endif
