/*
 * Copying a run from one store to another, through store_ops only, so any
 * pair of backends works (strobe copy); and merging one store's part of a
 * run into another's (strobe push, and the recorder's upload of its spool).
 *
 * A copy is idempotent: the run keeps its id, and a run the destination
 * already holds is compared with the source's first. Each side is tallied
 * (struct store_copy_tally: the run's status and counters, and the rows of
 * every table counted), and the two tallies decide:
 *
 *   equal                              SAME: nothing is written
 *   the source's has gone further      REPLACE: the destination's goes
 *   the destination's has gone further NEWER: nothing is written
 *   both, or differ without progress   DIVERGED: nothing; the caller errs
 *
 * "Further" is any of: finished where the other still says running, a
 * later last sample or end, more samples, points, events, blocks, event
 * blocks or bytes of text written, a later rules evaluation. A run that
 * was recording when it reached the destination is thus replaced by the
 * whole run.
 *
 * A merge (store_copy_merge) adds one store's part of a run to another's
 * instead: a recorder's spool holds only what its database did not take
 * (record/spool.h), and the database holds the rest. Row by row, in one
 * transaction of the destination:
 *
 *   run row       inserted when missing; else updated (status, end,
 *                 counters) when the source's has gone further (ended,
 *                 a later sample or end, more samples); an ended run
 *                 never goes back to running
 *   series        found by (name, labels), else added; the source's
 *                 meta wins
 *   blocks        by (series, start): written when missing, or when the
 *                 destination's holds fewer points (an open block's
 *                 earlier snapshot)
 *   event names,  upserted when missing or different
 *   processes
 *   event blocks  inserted when the destination has none of that thread
 *                 (pid, tid) starting then; they have no key to upsert by,
 *                 so the destination's are read first
 *   texts         put when missing, or when the source's saw more bytes;
 *                 the live metrics' snapshot when the record moved forward
 *   rules         settings, results and findings replaced, whole, when
 *                 the source's evaluation is newer
 *
 * So merging twice writes nothing the second time, and the order of
 * merges does not matter: a row only ever moves forward.
 */
#ifndef STROBE_STORE_COPY_H
#define STROBE_STORE_COPY_H

#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

/* A run's rows in one store, counted. */
struct store_copy_tally {
    char status[16];         /* as stored: "running" for a lost run too */
    int64_t end_ns, last_ns; /* the run record's */
    int64_t samples, points, events;
    int64_t series;
    int64_t blocks;      /* series blocks */
    int64_t block_count; /* points in them */
    int64_t block_bytes; /* their encoded bytes */
    int64_t event_names, processes;
    int64_t event_blocks, event_bytes;
    int64_t py_blocks, py_bytes; /* Python stack samples (pyprof/profile.h) */
    int64_t rule_configs, rule_results, findings;
    int64_t rules_evaluated_ns; /* 0 when never evaluated */
    int64_t texts;
    int64_t text_bytes; /* as the job wrote them, before any cut */
};

enum store_copy_verdict {
    STORE_COPY_NEW,      /* the destination lacks the run */
    STORE_COPY_REPLACE,  /* the destination's copy is behind the source's */
    STORE_COPY_SAME,     /* the destination's copy tallies the same */
    STORE_COPY_NEWER,    /* the destination's copy is ahead of the source's */
    STORE_COPY_DIVERGED, /* each is ahead in something, or they differ */
};

struct store_copy_plan {
    enum store_copy_verdict verdict;
    struct store_copy_tally from; /* the source's run */
    struct store_copy_tally to;   /* the destination's; zero under STORE_COPY_NEW */
};

/* Tally run r (as s's runs_query gave it) in s. 0, or negative with
 * s->err set. */
int store_copy_tally(struct store *s, const struct run_record *r, struct store_copy_tally *out);

/*
 * What copying r, a run of from as its runs_query gave it, into to would
 * do: reads both, writes nothing (strobe copy --dry-run). to NULL: a
 * destination not made yet, which holds no run. 0, or negative with a
 * line in err ("cannot read run ID from 'URI': ...").
 */
int store_copy_decide(struct store *from, struct store *to, const struct run_record *r,
                      struct store_copy_plan *out, struct strbuf *err);

/*
 * store_copy_decide(), then, for NEW and REPLACE, the copy: the run record
 * and attributes, each series with its meta and every block as stored
 * (series ids are the destination's own), event names, processes, event
 * blocks, Python sample blocks, rule settings, rule results, findings in
 * order, texts. All in
 * one transaction on to, the old copy's removal included: a failure
 * leaves to as it was. 0, or negative with a line in err naming the
 * store that failed. from is only read; a run still recording there is
 * copied as it stands (the caller warns).
 */
int store_copy_run(struct store *from, struct store *to, const struct run_record *r,
                   struct store_copy_plan *out, struct strbuf *err);

/* What a merge wrote: rows added or replaced, by kind. */
struct store_merge_tally {
    int run; /* the run row was inserted or updated */
    int64_t series, blocks, event_names, processes, event_blocks, texts;
    int64_t py_blocks; /* Python sample blocks the destination lacked */
    int rules;         /* the source's evaluation replaced the destination's */
};

/*
 * Merge run r, a run of from as its runs_query gave it, into to (see
 * above): one transaction of to, so a failure leaves to as it was (and
 * *out zeroed). 0, or negative with a line in err naming the store that
 * failed, as store_copy_run's.
 */
int store_copy_merge(struct store *from, struct store *to, const struct run_record *r,
                     struct store_merge_tally *out, struct strbuf *err);
/* Whether the merge wrote anything. */
int store_merge_changed(const struct store_merge_tally *t);

#endif
