#include "record/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/err.h"
#include "record/cluster.h"
#include "record/control.h"
#include "record/spool.h"
#include "serve/expo.h"

void batch_init(struct batch *b)
{
    memset(b, 0, sizeof(*b));
    run_record_init(&b->run);
    for (int i = 0; i < 2; i++)
        strbuf_init(&b->texts[i].text);
    strbuf_init(&b->ctl_notes);
    strbuf_init(&b->live_snap);
}

void batch_reset(struct batch *b)
{
    for (uint32_t i = 0; i < b->ndefs; i++)
        free(b->defs[i].meta);
    b->ndefs = 0;
    b->nblocks = 0;
    b->snap_len = 0;
    b->result = 0;
    b->ctl_gen = 0;
    for (int i = 0; i < 2; i++) {
        b->texts[i].take = 0;
        b->texts[i].put = 0;
        strbuf_reset(&b->texts[i].text);
    }
}

static void py_blocks_free(struct batch *b)
{
    for (uint32_t i = 0; i < b->npy; i++)
        free(b->py[i].data);
    b->npy = 0;
    b->py_bytes = 0;
}

void batch_release(struct batch *b)
{
    batch_reset(b);
    py_blocks_free(b);
    free(b->py);
    free(b->defs);
    free(b->blocks);
    free(b->snap);
    for (int i = 0; i < 2; i++)
        strbuf_release(&b->texts[i].text);
    kv_list_release(&b->ctl_tags);
    strbuf_release(&b->ctl_notes);
    strbuf_release(&b->live_snap);
    event_batch_release(&b->events);
    memset(b, 0, sizeof(*b));
}

static int add_block(struct batch *b, const struct batch_block *blk)
{
    if (array_grow((void **)&b->blocks, &b->blocks_cap, b->nblocks + 1, sizeof(*b->blocks), 64) < 0)
        return -ENOMEM;
    b->blocks[b->nblocks++] = *blk;
    return 0;
}

static int add_snapshot(struct batch *b, uint32_t index, const struct series *s)
{
    size_t len = block_enc_size(&s->enc);
    if (b->snap_len + len > b->snap_cap) {
        size_t cap = b->snap_cap ? b->snap_cap * 2 : 65536;
        while (cap < b->snap_len + len)
            cap *= 2;
        uint8_t *p = realloc(b->snap, cap);
        if (!p)
            return -ENOMEM;
        b->snap = p;
        b->snap_cap = cap;
    }
    memcpy(b->snap + b->snap_len, s->open_buf, len);
    struct batch_block blk = {index, s->enc.st, NULL, b->snap_len, len};
    b->snap_len += len;
    return add_block(b, &blk);
}

int batch_collect(struct batch *b, struct series_table *t)
{
    batch_reset(b);
    b->has_open = t->snap_wait == 0;
    t->snap_wait = b->has_open ? (t->snap_every > 1 ? t->snap_every - 1 : 0) : t->snap_wait - 1;
    for (uint32_t i = 0; i < t->count; i++) {
        struct series *s = &t->items[i];
        int has_data = s->enc.st.count || s->sealed || s->keep_empty;
        if ((!s->defined && has_data) || (s->defined && s->meta_dirty)) {
            if (array_grow((void **)&b->defs, &b->defs_cap, b->ndefs + 1, sizeof(*b->defs), 64) < 0)
                return -ENOMEM;
            struct batch_def *d = &b->defs[b->ndefs++];
            d->series = i;
            d->name = s->name;
            d->labels = s->labels;
            d->unit = s->unit;
            d->define = !s->defined;
            d->meta = s->meta ? strdup(s->meta) : NULL;
        }
        for (struct sealed_block *blk = s->sealed; blk; blk = blk->next) {
            struct batch_block bb = {i, blk->st, blk, 0, blk->len};
            if (add_block(b, &bb) < 0)
                return -ENOMEM;
        }
        if (b->has_open && s->enc.st.count && s->enc.st.count != s->snap_count) {
            if (add_snapshot(b, i, s) < 0)
                return -ENOMEM;
            s->snap_count = s->enc.st.count;
        }
    }
    b->series_count = t->count;
    t->frozen = 1;
    return 0;
}

void batch_settle(struct batch *b, struct series_table *t)
{
    t->frozen = 0;
    if (b->result == 0)
        py_blocks_free(b); /* stored: none was added while in flight */
    if (b->result < 0) {
        for (uint32_t i = 0; i < t->count; i++)
            t->items[i].snap_count = 0; /* resend every open block, next batch */
        t->snap_wait = 0;
        return;
    }
    for (uint32_t i = 0; i < b->ndefs; i++) {
        struct series *s = &t->items[b->defs[i].series];
        s->defined = 1;
        if (!b->defs[i].meta || (s->meta && strcmp(s->meta, b->defs[i].meta) == 0))
            s->meta_dirty = 0;
    }
    /* the sealed blocks of a series are in the batch oldest first: release
     * each series' list up to the last one the batch carried */
    for (uint32_t i = 0; i < b->nblocks; i++) {
        struct batch_block *blk = &b->blocks[i];
        if (!blk->sealed)
            continue;
        int last_sealed = i + 1 == b->nblocks || b->blocks[i + 1].series != blk->series ||
                          !b->blocks[i + 1].sealed;
        if (last_sealed)
            series_release_sealed(t, blk->series, blk->sealed);
    }
}

/* ---- Python blocks ---------------------------------------------------------- */

static void drop_py_block(struct batch *b, const struct py_block_out *o)
{
    b->py_dropped_blocks++;
    b->py_dropped_samples += o->kind == PY_BLOCK_SAMPLES ? (uint64_t)o->count : 0;
    free(o->data);
}

/* Drop the oldest samples blocks until b is within its cap. */
static void py_blocks_trim(struct batch *b)
{
    size_t cap = b->py_cap_bytes ? b->py_cap_bytes : PY_BATCH_CAP_BYTES;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < b->npy; i++) {
        struct py_block_out *o = &b->py[i];
        /* the newest block always stays: a cap below one block keeps one */
        if (b->py_bytes > cap && o->kind == PY_BLOCK_SAMPLES && i + 1 < b->npy) {
            b->py_bytes -= o->len;
            drop_py_block(b, o);
            continue;
        }
        b->py[kept++] = *o;
    }
    b->npy = kept;
}

int batch_add_py_blocks(struct batch *b, struct py_block_out *blocks, int n)
{
    int rc = 0;
    if (n > 0 &&
        array_grow((void **)&b->py, &b->py_cap, b->npy + (uint32_t)n, sizeof(*b->py), 16) < 0) {
        for (int i = 0; i < n; i++)
            drop_py_block(b, &blocks[i]);
        rc = -ENOMEM;
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        b->py[b->npy++] = blocks[i];
        b->py_bytes += blocks[i].len;
        blocks[i].data = NULL; /* the batch's now */
    }
    py_blocks_trim(b);
    return rc;
}

static int put_py_blocks(struct store *s, const struct batch *b)
{
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < b->npy; i++) {
        const struct py_block_out *o = &b->py[i];
        struct py_block_record rec = {o->seq,   o->kind, o->start_ns, o->end_ns,
                                      o->count, o->data, o->len};
        rc = s->ops->py_block_put(s, b->run.id, &rec);
    }
    return rc;
}

/* ---- the writer's memory -------------------------------------------------- */

/* array_grow, the new elements zeroed. */
static int grow_zeroed(void **items, uint32_t *cap, uint32_t need, size_t size, uint32_t first)
{
    uint32_t old = *cap;
    if (array_grow(items, cap, need, size, first) < 0)
        return -ENOMEM;
    if (*cap > old) /* nothing asked of an empty table leaves it NULL */
        memset((char *)*items + (size_t)old * size, 0, (size_t)(*cap - old) * size);
    return 0;
}

static int remember_proc(struct writer *w, const struct event_proc *p)
{
    for (uint32_t i = 0; i < w->nprocs; i++)
        if (w->procs[i].pid == p->pid) {
            w->procs[i] = *p;
            return 0;
        }
    if (array_grow((void **)&w->procs, &w->procs_cap, w->nprocs + 1, sizeof(*w->procs), 16) < 0)
        return -ENOMEM;
    w->procs[w->nprocs++] = *p;
    return 0;
}

/* What b tells of series, event names and processes, kept for a target
 * that lacks them later. */
static int remember(struct writer *w, const struct batch *b)
{
    const struct event_batch *e = &b->events;
    if (grow_zeroed((void **)&w->series, &w->series_cap, b->series_count, sizeof(*w->series), 256) <
            0 ||
        array_grow((void **)&w->names, &w->names_cap, e->names_to, sizeof(*w->names), 64) < 0)
        return -ENOMEM;
    for (uint32_t i = 0; i < b->ndefs; i++) {
        const struct batch_def *d = &b->defs[i];
        struct writer_series *ws = &w->series[d->series];
        char *meta = d->meta ? strdup(d->meta) : NULL;
        if (d->meta && !meta)
            return -ENOMEM;
        free(ws->meta);
        *ws = (struct writer_series){d->name, d->labels, d->unit, meta};
    }
    for (uint32_t i = e->names_from; i < e->names_to; i++)
        w->names[i] = e->names[i - e->names_from];
    w->name_base = e->name_base;
    if (e->names_to > w->nnames)
        w->nnames = e->names_to;
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (remember_proc(w, &e->procs[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* ---- committing to a target ----------------------------------------------- */

static int grow_ids(struct writer_target *t, uint32_t count)
{
    return grow_zeroed((void **)&t->ids, &t->ids_cap, count, sizeof(*t->ids), 256);
}

static int take_id(const struct series_record *sr, void *arg)
{
    *(int64_t *)arg = sr->id;
    return 0;
}

/* Series i into t, from the writer's memory: found there first when t may
 * hold it already (series_insert refuses a second one), else inserted.
 * An id inserted here is forgotten again if the transaction fails. */
static int define_series(struct writer *w, struct writer_target *t, const char *run_id, uint32_t i)
{
    const struct writer_series *ws = &w->series[i];
    struct store *s = t->store;
    if (t->lookup) {
        int rc = s->ops->series_find(s, run_id, ws->name, ws->labels, take_id, &t->ids[i]);
        if (rc == 0)
            return ws->meta ? s->ops->series_update_meta(s, t->ids[i], ws->meta) : 0;
        if (rc != -STROBE_ENOTFOUND)
            return rc;
    }
    if (array_grow((void **)&t->fresh, &t->fresh_cap, t->nfresh + 1, sizeof(*t->fresh), 64) < 0)
        return -ENOMEM;
    int rc = s->ops->series_insert(s, run_id, ws->name, ws->labels, ws->unit, ws->meta, &t->ids[i]);
    if (rc == 0)
        t->fresh[t->nfresh++] = i;
    return rc;
}

/* A target new to the run: its row, and every event name and process
 * known so far (a batch carries only the new ones). */
static int put_first(struct writer *w, struct writer_target *t)
{
    struct store *s = t->store;
    struct event_batch known = {.names = w->names,
                                .names_to = w->nnames,
                                .name_base = w->name_base,
                                .procs = w->procs,
                                .nprocs = w->nprocs};
    int rc = s->ops->run_insert(s, t->first);
    return rc < 0 ? rc : event_batch_store(&known, s, t->first->id);
}

static int put_series(struct writer *w, struct writer_target *t, const struct batch *b)
{
    struct store *s = t->store;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < b->ndefs; i++) {
        const struct batch_def *d = &b->defs[i];
        if (!t->ids[d->series])
            rc = define_series(w, t, b->run.id, d->series);
        else if (!d->define)
            rc = s->ops->series_update_meta(s, t->ids[d->series], d->meta);
    }
    /* a block's series may be one the target lacks: the sampler defined
     * it in the other one */
    for (uint32_t i = 0; rc == 0 && i < b->nblocks; i++)
        if (!t->ids[b->blocks[i].series])
            rc = define_series(w, t, b->run.id, b->blocks[i].series);
    if (rc == 0 && b->nblocks)
        rc = array_grow((void **)&t->puts, &t->puts_cap, b->nblocks, sizeof(*t->puts), 256);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < b->nblocks; i++) {
        const struct batch_block *blk = &b->blocks[i];
        const void *data = blk->sealed ? blk->sealed->data : b->snap + blk->snap_off;
        t->puts[i] = (struct block_put){t->ids[blk->series], blk->st, data, blk->len};
    }
    /* one request for them all: a round trip each cost PostgreSQL most of
     * its CPU (docs/benchmarks.md) */
    return b->nblocks ? s->ops->blocks_put(s, t->puts, b->nblocks) : 0;
}

int writer_commit(struct writer *w, struct writer_target *t, struct batch *b)
{
    struct store *s = t->store;
    t->nfresh = 0;
    int rc = grow_ids(t, b->series_count);
    if (rc == 0)
        rc = s->ops->begin(s);
    if (rc == 0 && t->first)
        rc = put_first(w, t);
    if (rc == 0)
        rc = put_series(w, t, b);
    if (rc == 0)
        rc = event_batch_store(&b->events, s, b->run.id);
    if (rc == 0)
        rc = put_py_blocks(s, b);
    for (int i = 0; rc == 0 && i < 2; i++)
        if (b->texts[i].put) {
            const struct batch_text *bt = &b->texts[i];
            struct run_text_record tr = {bt->kind, bt->text.buf, bt->text.len, bt->bytes};
            rc = s->ops->run_text_put(s, b->run.id, &tr);
        }
    if (rc == 0 && b->ctl_gen)
        rc = control_put(s, b->run.id, &b->ctl_tags, &b->ctl_notes);
    if (rc == 0 && b->live_snap.len) {
        struct run_text_record tr = {EXPO_TEXT_KIND, b->live_snap.buf, b->live_snap.len,
                                     (int64_t)b->live_snap.len};
        rc = s->ops->run_text_put(s, b->run.id, &tr);
    }
    if (rc == 0)
        rc = s->ops->run_update(s, &b->run);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc == 0) {
        t->first = NULL;
        return 0;
    }
    s->ops->rollback(s);
    /* the rows were rolled back: the next batch defines them anew */
    for (uint32_t i = 0; i < t->nfresh; i++)
        t->ids[t->fresh[i]] = 0;
    return rc;
}

void writer_target_reset(struct writer_target *t, const struct run_record *run)
{
    if (t->ids)
        memset(t->ids, 0, t->ids_cap * sizeof(*t->ids));
    t->nfresh = 0;
    t->lookup = 0;
    t->first = run;
}

void writer_target_release(struct writer_target *t)
{
    free(t->ids);
    free(t->fresh);
    free(t->puts);
    memset(t, 0, sizeof(*t));
}

/* Copy the job's output that rides with b, outside the transaction. A copy
 * that fails (out of memory, outrun by the job) leaves it to the next
 * checkpoint. */
static void take_texts(struct batch *b)
{
    for (int i = 0; i < 2; i++) {
        struct batch_text *t = &b->texts[i];
        if (!t->take)
            continue;
        strbuf_reset(&t->text);
        t->put = log_tee_text(&t->from, &t->text, &t->bytes) == 0;
    }
}

/* ---- the thread ---------------------------------------------------------- */

/* A node's clock against the store's, again when due; a failed probe
 * keeps the last estimate. Not while batches go to the spool: a server
 * that does not answer would hold each probe for the wait bound. */
static void measure_clock(struct writer *w, struct run_record *run)
{
    if (!w->clock_every_ns)
        return;
    int64_t now = clock_monotonic_ns(), offset, rtt;
    if (now >= w->clock_due_ns && !spool_on(w)) {
        w->clock_due_ns = now + w->clock_every_ns;
        if (cluster_clock_offset(w->primary.store, CLUSTER_CLOCK_PROBES, &offset, &rtt) == 0) {
            w->clock_offset_ns = offset;
            w->clock_rtt_ns = rtt;
        }
    }
    run->clock_offset_ns = w->clock_offset_ns;
    run->clock_rtt_ns = w->clock_rtt_ns;
}

static int commit_batch(struct writer *w, struct batch *b)
{
    int rc = remember(w, b);
    if (rc < 0)
        return rc;
    take_texts(b); /* once: a batch the store refuses goes to the spool as it is */
    measure_clock(w, &b->run);
    return w->spool ? spool_commit(w, b) : writer_commit(w, &w->primary, b);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->work && !w->stop)
            pthread_cond_wait(&w->wake, &w->lock);
        if (!w->work)
            break;
        struct batch *b = w->work;
        pthread_mutex_unlock(&w->lock);

        b->result = commit_batch(w, b);

        pthread_mutex_lock(&w->lock);
        w->work = NULL;
        atomic_store_explicit(&w->busy, 0, memory_order_release);
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int writer_start(struct writer *w, struct store *store)
{
    memset(w, 0, sizeof(*w));
    w->primary.store = store;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    if (rc)
        return -rc;
    w->started = 1;
    return 0;
}

int writer_submit(struct writer *w, struct batch *b)
{
    if (writer_busy(w))
        return 0;
    pthread_mutex_lock(&w->lock);
    w->work = b;
    atomic_store_explicit(&w->busy, 1, memory_order_release);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    return 1;
}

void writer_wait(struct writer *w)
{
    pthread_mutex_lock(&w->lock);
    while (w->work)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void writer_stop(struct writer *w)
{
    if (!w->started)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    spool_close(w);
    writer_target_release(&w->primary);
    for (uint32_t i = 0; i < w->series_cap; i++)
        free(w->series[i].meta);
    free(w->series);
    free(w->names);
    free(w->procs);
    w->started = 0;
}
