/*
 * The spool: where a recorder's batches go while its PostgreSQL store does
 * not take them. Nothing is lost when the database is slow or gone, and
 * the job never waits on it.
 *
 * When. The writer commits each batch to the store (record/writer.h), and
 * each round trip of the connection must be answered within SPOOL_HOLD_MS
 * (store_ops.set_timeout: postgres.c drops a connection that does not
 * answer; a blocking libpq call would wait forever on a stopped server).
 * A commit that fails, whatever the reason (refused, lost, not answered,
 * the server's disk full), sends the same batch to the spool, and the
 * batches after it too, without trying the store, for SPOOL_RETRY_NS.
 *
 * Why 5 s for both. The writer commits once a second, and a healthy server
 * answers in milliseconds; SQLite waits no longer for its lock. While a
 * batch is in flight the sampler keeps the newer data in the series table,
 * so the bound is also the most data (5 s of it) a stopped server makes
 * the recorder hold. Each try of a stopped server costs the bound again;
 * trying every 5 s keeps the writer on it at most half of the time, and
 * the data reaches the database within about 10 s of its return.
 *
 * Where. A SQLite store of the run's own, DIR/RUNID.db: DIR is strobe run
 * --spool, else $XDG_STATE_HOME/strobe/spool, else
 * ~/.local/state/strobe/spool. It is made when the first batch goes there,
 * and that batch carries the run's row (as the run began), every event
 * name and every process so far: the spool is a store of its own, which
 * strobe show and strobe push read.
 *
 * Upload. Once SPOOL_RETRY_NS has passed, the next batch first merges the
 * spool into the store (store_copy_merge: one transaction, idempotent).
 * When that works, the spool file is removed, and this batch and the next
 * go to the store again; else they go to the spool, and the store is
 * tried again SPOOL_RETRY_NS later. The merge adds series the writer's ids
 * for the store do not know: it finds each series by name from then on
 * (writer_target.lookup).
 *
 * The end. After the last batch, spool_finish tries the upload for up to
 * SPOOL_FINAL_NS. If the store still does not answer, the rest of the run
 * (findings, logs, torch.profiler's operators) goes to the spool
 * (writer_store), and the spool is left: spool_report names it, and the
 * strobe push command that sends it.
 *
 * Loss. A batch the spool refuses too (a full disk) stays in memory, as a
 * batch does when a store without a spool refuses it. Past the 64 MiB cap
 * the oldest blocks are dropped and counted in runs.dropped, and the
 * recorder's closing lines say so.
 *
 * Threads: spool_commit runs on the writer's thread; spool_attach before
 * the first batch; spool_finish, writer_store and spool_report on the
 * recorder's thread while the writer is idle (after writer_wait).
 */
#ifndef STROBE_RECORD_SPOOL_H
#define STROBE_RECORD_SPOOL_H

#include <stdint.h>

#include "common/strbuf.h"
#include "record/writer.h"
#include "store/store.h"

#define SPOOL_HOLD_MS  5000
#define SPOOL_RETRY_NS (5 * NS_PER_S)
#define SPOOL_FINAL_NS (5 * NS_PER_S)

struct spool {
    char *path;
    struct run_record run;  /* the run's row as it began: the spool's first */
    struct writer_target t; /* t.store is NULL until a batch goes there */
    int on;                 /* batches go to the spool, not to the store */
    int64_t retry_ns;       /* when the store is tried again (monotonic) */
    int failing;            /* the last write to the spool failed: said once */
    int left;               /* spool_finish could not upload: the spool stays */
    struct strbuf err;      /* why the spool, or the upload, failed */
    /* for the end of the run */
    uint64_t batches;      /* batches the spool took */
    int64_t points;        /* points sampled in them */
    int64_t stored_points; /* the run's points as of the last batch stored anywhere */
    uint64_t uploads;      /* spools merged into the store */
};

/*
 * Give w a spool for run (a row as it began, copied): dir is --spool, or
 * NULL for the default. Bounds the store's waits to SPOOL_HOLD_MS. 0, or
 * -ENOMEM.
 */
int spool_attach(struct writer *w, const char *dir, const struct run_record *run);
/* Whether batches go to the spool now (the writer's thread). */
int spool_on(const struct writer *w);
/* The writer's thread: b to the store, or to the spool (see above). */
int spool_commit(struct writer *w, struct batch *b);
/* After the last batch: upload what the spool holds, trying for up to
 * SPOOL_FINAL_NS. 0 when the store has the whole run; negative when the
 * spool stays. */
int spool_finish(struct writer *w);
/* Where the rest of the run goes after spool_finish: the spool it left, or
 * the store. */
struct store *writer_store(struct writer *w);
/* The closing lines of a run that spooled: what went to the spool, and
 * when it stays, where it is and the command that sends it. */
void spool_report(struct writer *w);
/* Close and free w's spool, leaving its file (writer_stop). */
void spool_close(struct writer *w);

#endif
