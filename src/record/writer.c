#include "record/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/err.h"
#include "record/cluster.h"

void batch_init(struct batch *b)
{
    memset(b, 0, sizeof(*b));
    run_record_init(&b->run);
    for (int i = 0; i < 2; i++)
        strbuf_init(&b->texts[i].text);
}

void batch_reset(struct batch *b)
{
    for (uint32_t i = 0; i < b->ndefs; i++)
        free(b->defs[i].meta);
    b->ndefs = 0;
    b->nblocks = 0;
    b->snap_len = 0;
    b->result = 0;
    for (int i = 0; i < 2; i++) {
        b->texts[i].take = 0;
        b->texts[i].put = 0;
        strbuf_reset(&b->texts[i].text);
    }
}

void batch_release(struct batch *b)
{
    batch_reset(b);
    free(b->defs);
    free(b->blocks);
    free(b->snap);
    for (int i = 0; i < 2; i++)
        strbuf_release(&b->texts[i].text);
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
        if (s->enc.st.count && s->enc.st.count != s->snap_count) {
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
    if (b->result < 0) {
        for (uint32_t i = 0; i < t->count; i++)
            t->items[i].snap_count = 0; /* resend every open block */
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

/* ---- the thread ---------------------------------------------------------- */

static int ensure_ids(struct writer *w, uint32_t count)
{
    if (count <= w->ids_cap)
        return 0;
    uint32_t cap = w->ids_cap ? w->ids_cap : 256;
    while (cap < count)
        cap *= 2;
    int64_t *ids = realloc(w->ids, cap * sizeof(*ids));
    if (!ids)
        return -ENOMEM;
    memset(ids + w->ids_cap, 0, (cap - w->ids_cap) * sizeof(*ids));
    w->ids = ids;
    w->ids_cap = cap;
    return 0;
}

/* Series defined here get their store ids at once; if the transaction fails
 * those ids are forgotten again (the rows were rolled back), so the next
 * batch defines them anew. */
static void forget_new_ids(struct writer *w, const struct batch *b)
{
    for (uint32_t i = 0; i < b->ndefs; i++)
        if (b->defs[i].define)
            w->ids[b->defs[i].series] = 0;
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

/* A node's clock against the store's, again when due; a failed probe
 * keeps the last estimate. */
static void measure_clock(struct writer *w, struct run_record *run)
{
    if (!w->clock_every_ns)
        return;
    int64_t now = clock_monotonic_ns(), offset, rtt;
    if (now >= w->clock_due_ns) {
        w->clock_due_ns = now + w->clock_every_ns;
        if (cluster_clock_offset(w->store, CLUSTER_CLOCK_PROBES, &offset, &rtt) == 0) {
            w->clock_offset_ns = offset;
            w->clock_rtt_ns = rtt;
        }
    }
    run->clock_offset_ns = w->clock_offset_ns;
    run->clock_rtt_ns = w->clock_rtt_ns;
}

static int commit_batch(struct writer *w, struct batch *b)
{
    struct store *s = w->store;
    take_texts(b);
    measure_clock(w, &b->run);
    int rc = s->ops->begin(s);
    for (uint32_t i = 0; rc == 0 && i < b->ndefs; i++) {
        const struct batch_def *d = &b->defs[i];
        if (d->define)
            rc = s->ops->series_insert(s, b->run.id, d->name, d->labels, d->unit, d->meta,
                                       &w->ids[d->series]);
        else
            rc = s->ops->series_update_meta(s, w->ids[d->series], d->meta);
    }
    /* a block's series is defined by now: batch_collect defines every series
     * that has data in the same batch */
    for (uint32_t i = 0; rc == 0 && i < b->nblocks; i++) {
        const struct batch_block *blk = &b->blocks[i];
        const void *data = blk->sealed ? blk->sealed->data : b->snap + blk->snap_off;
        rc = s->ops->block_upsert(s, w->ids[blk->series], &blk->st, data, blk->len);
    }
    if (rc == 0)
        rc = event_batch_store(&b->events, s, b->run.id);
    for (int i = 0; rc == 0 && i < 2; i++)
        if (b->texts[i].put) {
            const struct batch_text *t = &b->texts[i];
            struct run_text_record tr = {t->kind, t->text.buf, t->text.len, t->bytes};
            rc = s->ops->run_text_put(s, b->run.id, &tr);
        }
    if (rc == 0)
        rc = s->ops->run_update(s, &b->run);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0) {
        s->ops->rollback(s);
        forget_new_ids(w, b);
    }
    return rc;
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

        int rc = ensure_ids(w, b->series_count);
        b->result = rc == 0 ? commit_batch(w, b) : rc;

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
    w->store = store;
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
    free(w->ids);
    w->started = 0;
}
