#include "sample/series.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define SERIES_PENDING_CAP_DEFAULT (64u << 20)

int series_table_init(struct series_table *t)
{
    memset(t, 0, sizeof(*t));
    t->nslots = 256;
    t->slots = calloc(t->nslots, sizeof(*t->slots));
    t->pending_cap = SERIES_PENDING_CAP_DEFAULT;
    return t->slots ? 0 : -ENOMEM;
}

static void free_block_list(struct sealed_block *b)
{
    while (b) {
        struct sealed_block *next = b->next;
        free(b);
        b = next;
    }
}

void series_table_release(struct series_table *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        struct series *s = &t->items[i];
        free(s->name);
        free(s->labels);
        free(s->meta);
        free(s->open_buf);
        free_block_list(s->sealed);
    }
    free_block_list(t->free_blocks);
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* Name and labels, with name's NUL between them so ("ab", "c") and
 * ("a", "bc") hash apart. Only the index depends on it: a series' index is
 * its order of first sight. */
static uint32_t series_hash(const char *name, const char *labels)
{
    return hash_fnv1a(hash_fnv1a_str(HASH_FNV1A_INIT, name), labels, strlen(labels));
}

static uint32_t item_hash(const void *ctx, uint32_t i)
{
    const struct series *s = &((const struct series_table *)ctx)->items[i];
    return series_hash(s->name, s->labels);
}

static int series_add(struct series_table *t, const char *name, const char *labels,
                      const char *unit, uint32_t *out_index)
{
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct series *items = realloc(t->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        t->items = items;
        t->cap = cap;
    }
    struct series *s = &t->items[t->count];
    memset(s, 0, sizeof(*s));
    s->name = strdup(name);
    s->labels = strdup(labels);
    s->open_buf = malloc(SERIES_BLOCK_BYTES);
    if (!s->name || !s->labels || !s->open_buf) {
        free(s->name);
        free(s->labels);
        free(s->open_buf);
        return -ENOMEM;
    }
    s->unit = unit;
    block_enc_init(&s->enc, s->open_buf, SERIES_BLOCK_BYTES);
    *out_index = t->count++;
    return 0;
}

int series_get(struct series_table *t, const char *name, const char *labels, const char *unit,
               uint32_t *out_index)
{
    if (hash_slots_reserve(&t->slots, &t->nslots, t->count, item_hash, t) < 0)
        return -ENOMEM;
    uint32_t h = series_hash(name, labels) & (t->nslots - 1);
    while (t->slots[h]) {
        struct series *s = &t->items[t->slots[h] - 1];
        if (strcmp(s->name, name) == 0 && strcmp(s->labels, labels) == 0) {
            *out_index = t->slots[h] - 1;
            return 0;
        }
        h = (h + 1) & (t->nslots - 1);
    }
    int rc = series_add(t, name, labels, unit, out_index);
    if (rc == 0)
        t->slots[h] = *out_index + 1;
    return rc;
}

int series_set_meta(struct series_table *t, uint32_t index, const char *meta_json)
{
    struct series *s = &t->items[index];
    if (s->meta && strcmp(s->meta, meta_json) == 0)
        return 0;
    char *copy = strdup(meta_json);
    if (!copy)
        return -ENOMEM;
    free(s->meta);
    s->meta = copy;
    s->meta_dirty = 1;
    return 0;
}

/* Drop the oldest pending sealed block of any series: the price of a store
 * that cannot keep up. Counted, never silent. */
static void drop_oldest_pending(struct series_table *t)
{
    struct sealed_block *oldest = NULL;
    struct series *owner = NULL;
    for (uint32_t i = 0; i < t->count; i++) {
        struct sealed_block *b = t->items[i].sealed;
        if (b && (!oldest || b->st.start_ns < oldest->st.start_ns)) {
            oldest = b;
            owner = &t->items[i];
        }
    }
    if (!oldest)
        return;
    owner->sealed = oldest->next;
    if (!owner->sealed)
        owner->sealed_tail = NULL;
    t->dropped += oldest->st.count;
    t->pending_bytes -= sizeof(*oldest);
    oldest->next = t->free_blocks;
    t->free_blocks = oldest;
}

static void seal(struct series_table *t, uint32_t index)
{
    struct series *s = &t->items[index];
    while (!t->frozen && t->pending_bytes + sizeof(struct sealed_block) > t->pending_cap &&
           t->pending_bytes)
        drop_oldest_pending(t);
    struct sealed_block *b = t->free_blocks;
    if (b)
        t->free_blocks = b->next;
    else
        b = malloc(sizeof(*b));
    if (!b) {
        t->dropped += s->enc.st.count;
    } else {
        b->next = NULL;
        b->series = index;
        b->st = s->enc.st;
        b->len = block_enc_size(&s->enc);
        memcpy(b->data, s->open_buf, b->len);
        if (s->sealed_tail)
            s->sealed_tail->next = b;
        else
            s->sealed = b;
        s->sealed_tail = b;
        t->pending_bytes += sizeof(*b);
    }
    block_enc_init(&s->enc, s->open_buf, SERIES_BLOCK_BYTES);
    s->snap_count = 0;
}

void series_retire(struct series_table *t, uint32_t index)
{
    struct series *s = &t->items[index];
    if (!s->open_buf)
        return;
    if (s->enc.st.count)
        seal(t, index);
    free(s->open_buf);
    s->open_buf = NULL;
    memset(&s->enc, 0, sizeof(s->enc));
}

void series_put(struct series_table *t, uint32_t index, double value)
{
    struct series *s = &t->items[index];
    if (!s->open_buf) { /* retired, now back (a reused pid) */
        s->open_buf = malloc(SERIES_BLOCK_BYTES);
        if (!s->open_buf) {
            t->dropped++;
            return;
        }
        block_enc_init(&s->enc, s->open_buf, SERIES_BLOCK_BYTES);
    }
    if (s->enc.st.count >= SERIES_BLOCK_POINTS)
        seal(t, index);
    int rc = block_enc_append(&s->enc, t->now_ns, value);
    if (rc == -ENOSPC) {
        seal(t, index);
        rc = block_enc_append(&s->enc, t->now_ns, value);
    }
    if (rc == 0) {
        t->points++;
        if (t->tap)
            t->tap(t->tap_arg, index, t->now_ns, value);
    } else {
        t->rejected++;
    }
}

void series_release_sealed(struct series_table *t, uint32_t index, struct sealed_block *last)
{
    struct series *s = &t->items[index];
    while (s->sealed) {
        struct sealed_block *b = s->sealed;
        s->sealed = b->next;
        t->pending_bytes -= sizeof(*b);
        b->next = t->free_blocks;
        t->free_blocks = b;
        if (b == last)
            break;
    }
    if (!s->sealed)
        s->sealed_tail = NULL;
}

void series_seal_all(struct series_table *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->items[i].enc.st.count)
            seal(t, i);
}

void series_put_at(struct series_table *t, uint32_t index, int64_t ts_ns, double value)
{
    int64_t frame_ns = t->now_ns;
    t->now_ns = ts_ns;
    series_put(t, index, value);
    t->now_ns = frame_ns;
}

void series_keep_empty(struct series_table *t, uint32_t index)
{
    t->items[index].keep_empty = 1;
}

int series_get_metric(struct series_table *t, enum metric_id metric, const char *labels,
                      uint32_t *out_index)
{
    return series_get(t, metric_name(metric), labels, metric_unit(metric), out_index);
}
