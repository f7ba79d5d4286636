/*
 * Copying a run between stores (copy.h says what and when). Each table is
 * one step: a query of the source whose callback writes each row to the
 * destination as it comes, so no more than a block is held at a time. The
 * steps run inside one transaction of the destination, begun before the
 * old copy's removal and committed after the last text.
 *
 * A callback's failed write stops the source's query, which hands the
 * negative code back; the context remembers which store failed, so the
 * error names the right one.
 *
 * Series ids are each store's own: a series is inserted in the
 * destination first, and its blocks written under the id that gave.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/err.h"
#include "store/copy.h"

/* ---- tallies ---------------------------------------------------------------- */

struct tally_ctx {
    struct store *s;
    struct store_copy_tally *t;
};

static int want_no_data(const struct block_stats *st, void *arg)
{
    (void)st;
    (void)arg;
    return 0; /* the headers say all a tally needs */
}

static int tally_block(const struct block_record *b, void *arg)
{
    (void)b;
    ((struct store_copy_tally *)arg)->blocks++;
    return 0;
}

static int tally_series(const struct series_record *sr, void *arg)
{
    struct tally_ctx *c = arg;
    c->t->series++;
    c->t->block_count += sr->count;
    c->t->block_bytes += sr->bytes;
    return c->s->ops->blocks_range_query(c->s, sr->id, INT64_MIN, INT64_MAX, want_no_data,
                                         tally_block, c->t);
}

static int tally_event_name(int64_t id, const char *name, void *arg)
{
    (void)id;
    (void)name;
    ((struct store_copy_tally *)arg)->event_names++;
    return 0;
}

static int tally_process(const struct process_record *p, void *arg)
{
    (void)p;
    ((struct store_copy_tally *)arg)->processes++;
    return 0;
}

static int tally_event_block(const struct event_block_record *b, void *arg)
{
    struct store_copy_tally *t = arg;
    t->event_blocks++;
    t->event_bytes += (int64_t)b->len;
    return 0;
}

static int tally_py_block(const struct py_block_record *b, void *arg)
{
    struct store_copy_tally *t = arg;
    t->py_blocks++;
    t->py_bytes += (int64_t)b->len;
    return 0;
}

static int tally_rule_config(const struct rule_config_record *rc, void *arg)
{
    struct store_copy_tally *t = arg;
    t->rule_configs++;
    t->rules_evaluated_ns = rc->evaluated_ns;
    return 0;
}

static int tally_rule_result(const struct rule_result_record *r, void *arg)
{
    (void)r;
    ((struct store_copy_tally *)arg)->rule_results++;
    return 0;
}

static int tally_finding(const struct finding_record *f, void *arg)
{
    (void)f;
    ((struct store_copy_tally *)arg)->findings++;
    return 0;
}

static int tally_text(const struct run_text_record *tx, void *arg)
{
    struct store_copy_tally *t = arg;
    if (strcmp(tx->kind, RUN_TEXT_SNAPSHOT) == 0)
        return 0; /* it shrinks as processes end: neither progress nor a change */
    t->texts++;
    /* the size written, not the size kept: a cut text keeps its length
     * as the job writes on */
    t->text_bytes += tx->bytes;
    return 0;
}

int store_copy_tally(struct store *s, const struct run_record *r, struct store_copy_tally *out)
{
    const struct store_ops *o = s->ops;
    const char *id = r->id;
    memset(out, 0, sizeof(*out));
    memcpy(out->status, r->status, sizeof(out->status));
    out->end_ns = r->end_ns;
    out->last_ns = r->last_ns;
    out->samples = r->samples;
    out->points = r->points;
    out->events = r->events;
    struct tally_ctx c = {s, out};
    int rc = o->series_query(s, id, tally_series, &c);
    if (rc == 0)
        rc = o->event_names_query(s, id, tally_event_name, out);
    if (rc == 0)
        rc = o->processes_query(s, id, tally_process, out);
    if (rc == 0)
        rc = o->event_blocks_query(s, id, INT64_MIN, INT64_MAX, tally_event_block, out);
    if (rc == 0)
        rc = o->py_blocks_query(s, id, INT64_MIN, INT64_MAX, tally_py_block, out);
    if (rc == 0)
        rc = o->rule_config_query(s, id, tally_rule_config, out);
    if (rc == 0)
        rc = o->rule_results_query(s, id, tally_rule_result, out);
    if (rc == 0)
        rc = o->findings_query(s, id, tally_finding, out);
    if (rc == 0)
        rc = o->run_texts_query(s, id, tally_text, out);
    return rc;
}

/* Counts that only grow as a run goes on (or is evaluated again), and the
 * rest, which two copies of one run share unless one was changed. Left
 * unformatted: clang-format reflows these lists differently at each pass. */
/* clang-format off */
#define TALLY_PROGRESS(X)                                                                          \
    X(end_ns) X(last_ns) X(samples) X(points) X(events) X(blocks) X(block_count) X(event_blocks)   \
    X(py_blocks) X(text_bytes) X(rules_evaluated_ns)
#define TALLY_OTHER(X)                                                                             \
    X(series) X(block_bytes) X(event_names) X(processes) X(event_bytes) X(py_bytes)                \
    X(rule_configs) X(rule_results) X(findings) X(texts)
/* clang-format on */

static enum store_copy_verdict judge(const struct store_copy_tally *from,
                                     const struct store_copy_tally *to)
{
    int from_done = strcmp(from->status, RUN_RUNNING) != 0;
    int to_done = strcmp(to->status, RUN_RUNNING) != 0;
    int from_ahead = from_done > to_done, to_ahead = to_done > from_done;
    int differ = strcmp(from->status, to->status) != 0;
#define X(f)                                                                                       \
    from_ahead |= from->f > to->f;                                                                 \
    to_ahead |= to->f > from->f;
    TALLY_PROGRESS(X)
#undef X
#define X(f) differ |= from->f != to->f;
    TALLY_OTHER(X)
#undef X
    if (from_ahead != to_ahead)
        return from_ahead ? STORE_COPY_REPLACE : STORE_COPY_NEWER;
    return from_ahead || differ ? STORE_COPY_DIVERGED : STORE_COPY_SAME;
}

/* "cannot read run ID from 'URI': detail" into err (what: "read",
 * "write"; in: "from", "to"). Returns rc. */
static int fail(struct strbuf *err, int rc, const char *what, const char *in,
                const struct run_record *r, const struct store *s)
{
    if (err)
        strbuf_addf(err, "cannot %s run %s %s '%s': %s", what, r->id, in, s->uri,
                    s->err.len ? s->err.buf : err_str(rc));
    return rc;
}

/* The destination's record of the run, by its id alone (a run named like
 * the id is another run). 1 when there is one, 0 when not, or negative. */
static int find_run(struct store *s, const char *id, struct run_record *out)
{
    int rc = store_resolve_run(s, id, out);
    if (rc == -STROBE_ENOTFOUND || (rc == 0 && strcmp(out->id, id) != 0)) {
        run_record_release(out);
        return 0;
    }
    return rc < 0 ? rc : 1;
}

int store_copy_decide(struct store *from, struct store *to, const struct run_record *r,
                      struct store_copy_plan *out, struct strbuf *err)
{
    memset(out, 0, sizeof(*out));
    int rc = store_copy_tally(from, r, &out->from);
    if (rc < 0)
        return fail(err, rc, "read", "from", r, from);
    if (!to)
        return 0; /* STORE_COPY_NEW */
    struct run_record there;
    strbuf_reset(&to->err);
    int found = find_run(to, r->id, &there);
    if (found > 0) {
        rc = store_copy_tally(to, &there, &out->to);
        run_record_release(&there);
    }
    if (found < 0 || rc < 0)
        return fail(err, found < 0 ? found : rc, "look for", "in", r, to);
    out->verdict = found ? judge(&out->from, &out->to) : STORE_COPY_NEW;
    return 0;
}

/* ---- the copy --------------------------------------------------------------- */

struct copy_ctx {
    struct store *from, *to;
    const struct run_record *r;
    int64_t series_id; /* the destination's id of the series being copied */
    int64_t seq;       /* the next finding's */
    int to_failed;     /* the error is the destination's */
};

/* A write's result, noted when it failed. */
static int wrote(struct copy_ctx *c, int rc)
{
    if (rc < 0)
        c->to_failed = 1;
    return rc;
}

static int copy_record(struct copy_ctx *c)
{
    /* the insert keeps what a run starts with; the counters and the end
     * are the update's */
    int rc = c->to->ops->run_insert(c->to, c->r);
    return wrote(c, rc < 0 ? rc : c->to->ops->run_update(c->to, c->r));
}

static int copy_block(const struct block_record *b, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->block_upsert(c->to, c->series_id, &b->st, b->data, b->len));
}

static int copy_one_series(const struct series_record *sr, void *arg)
{
    struct copy_ctx *c = arg;
    int rc = wrote(c, c->to->ops->series_insert(c->to, c->r->id, sr->name, sr->labels, sr->unit,
                                                sr->meta, &c->series_id));
    return rc < 0 ? rc : c->from->ops->blocks_query(c->from, sr->id, copy_block, c);
}

static int copy_series(struct copy_ctx *c)
{
    return c->from->ops->series_query(c->from, c->r->id, copy_one_series, c);
}

static int copy_event_name(int64_t id, const char *name, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->event_name_insert(c->to, c->r->id, id, name));
}

static int copy_event_names(struct copy_ctx *c)
{
    return c->from->ops->event_names_query(c->from, c->r->id, copy_event_name, c);
}

static int copy_process(const struct process_record *p, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->process_upsert(c->to, c->r->id, p));
}

static int copy_processes(struct copy_ctx *c)
{
    return c->from->ops->processes_query(c->from, c->r->id, copy_process, c);
}

static int copy_event_block(const struct event_block_record *b, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->event_block_insert(c->to, c->r->id, b));
}

static int copy_event_blocks(struct copy_ctx *c)
{
    /* in the source's order (start, then insertion), which the
     * destination's ids then keep for blocks that start together */
    return c->from->ops->event_blocks_query(c->from, c->r->id, INT64_MIN, INT64_MAX,
                                            copy_event_block, c);
}

static int copy_py_block(const struct py_block_record *b, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->py_block_put(c->to, c->r->id, b));
}

static int copy_py_blocks(struct copy_ctx *c)
{
    return c->from->ops->py_blocks_query(c->from, c->r->id, INT64_MIN, INT64_MAX, copy_py_block, c);
}

static int copy_rule_config(const struct rule_config_record *rc, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->rule_config_put(c->to, c->r->id, rc));
}

static int copy_rule_configs(struct copy_ctx *c)
{
    return c->from->ops->rule_config_query(c->from, c->r->id, copy_rule_config, c);
}

static int copy_rule_result(const struct rule_result_record *r, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->rule_result_insert(c->to, c->r->id, r));
}

static int copy_rule_results(struct copy_ctx *c)
{
    return c->from->ops->rule_results_query(c->from, c->r->id, copy_rule_result, c);
}

static int copy_finding(const struct finding_record *f, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->finding_insert(c->to, c->r->id, c->seq++, f));
}

static int copy_findings(struct copy_ctx *c)
{
    /* the query gives them in the order they fired; seq keeps that order */
    return c->from->ops->findings_query(c->from, c->r->id, copy_finding, c);
}

static int copy_text(const struct run_text_record *t, void *arg)
{
    struct copy_ctx *c = arg;
    return wrote(c, c->to->ops->run_text_put(c->to, c->r->id, t));
}

static int copy_texts(struct copy_ctx *c)
{
    return c->from->ops->run_texts_query(c->from, c->r->id, copy_text, c);
}

typedef int copy_step_fn(struct copy_ctx *c);
static copy_step_fn *const copy_steps[] = {
    copy_record,    copy_series,       copy_event_names,  copy_processes, copy_event_blocks,
    copy_py_blocks, copy_rule_configs, copy_rule_results, copy_findings,  copy_texts,
};

/* The steps in one transaction of c->to; replace removes the old copy
 * first, in it too. */
static int in_transaction(struct copy_ctx *c, copy_step_fn *const *steps, size_t nsteps,
                          int replace, struct strbuf *err)
{
    struct store *from = c->from, *to = c->to;
    strbuf_reset(&from->err);
    strbuf_reset(&to->err);
    int rc = to->ops->begin(to);
    if (rc == 0 && replace)
        rc = to->ops->run_delete(to, c->r->id); /* joins the transaction */
    c->to_failed = rc < 0;
    for (size_t i = 0; rc == 0 && i < nsteps; i++)
        rc = steps[i](c);
    if (rc == 0)
        rc = wrote(c, to->ops->commit(to));
    if (rc == 0)
        return 0;
    /* said before the rollback, which may overwrite to->err */
    if (c->to_failed)
        fail(err, rc, "write", "to", c->r, to);
    else
        fail(err, rc, "read", "from", c->r, from);
    to->ops->rollback(to);
    return rc;
}

int store_copy_run(struct store *from, struct store *to, const struct run_record *r,
                   struct store_copy_plan *out, struct strbuf *err)
{
    int rc = store_copy_decide(from, to, r, out, err);
    if (rc < 0 || (out->verdict != STORE_COPY_NEW && out->verdict != STORE_COPY_REPLACE))
        return rc;
    struct copy_ctx c = {from, to, r, 0, 0, 0};
    return in_transaction(&c, copy_steps, ARRAY_SIZE(copy_steps),
                          out->verdict == STORE_COPY_REPLACE, err);
}

/* ---- the merge ---------------------------------------------------------------- */

/* A row the destination holds, read before the source's rows of its kind
 * are compared with it: the key (numbers, and a text for a run's texts),
 * a size (a block's points, a text's bytes) and a value to compare (an
 * event name, a process's attributes). */
struct held_row {
    int64_t key[3];
    char *key_text; /* owned, or NULL */
    int64_t size;
    char *value; /* owned, or NULL */
};

struct held {
    struct held_row *rows;
    uint32_t n, cap;
};

static void held_reset(struct held *h)
{
    for (uint32_t i = 0; i < h->n; i++) {
        free(h->rows[i].key_text);
        free(h->rows[i].value);
    }
    h->n = 0;
}

static void held_release(struct held *h)
{
    held_reset(h);
    free(h->rows);
    memset(h, 0, sizeof(*h));
}

static int held_add(struct held *h, const struct held_row *row, const char *key_text,
                    const char *value)
{
    if (array_grow((void **)&h->rows, &h->cap, h->n + 1, sizeof(*h->rows), 64) < 0)
        return -ENOMEM;
    struct held_row *r = &h->rows[h->n];
    *r = *row;
    r->key_text = key_text ? strdup(key_text) : NULL;
    r->value = value ? strdup(value) : NULL;
    if ((key_text && !r->key_text) || (value && !r->value)) {
        free(r->key_text);
        free(r->value);
        return -ENOMEM;
    }
    h->n++;
    return 0;
}

static int held_cmp(const void *x, const void *y)
{
    const struct held_row *a = x, *b = y;
    for (int i = 0; i < 3; i++)
        if (a->key[i] != b->key[i])
            return a->key[i] < b->key[i] ? -1 : 1;
    if (!a->key_text || !b->key_text)
        return !!a->key_text - !!b->key_text;
    return strcmp(a->key_text, b->key_text);
}

/* The row with that key, or NULL (h sorted by held_sort). */
static const struct held_row *held_find(const struct held *h, int64_t k0, int64_t k1, int64_t k2,
                                        const char *key_text)
{
    struct held_row want = {{k0, k1, k2}, (char *)key_text, 0, NULL};
    return h->n ? bsearch(&want, h->rows, h->n, sizeof(*h->rows), held_cmp) : NULL;
}

static void held_sort(struct held *h)
{
    array_sort(h->rows, h->n, sizeof(*h->rows), held_cmp); /* mostly in order already */
}

struct merge_ctx {
    struct copy_ctx c; /* first: the copy's steps and callbacks take a merge_ctx too */
    struct store_merge_tally *t;
    struct held held; /* the destination's rows of the kind being merged */
};

/* Whether a's run record has gone further than b's: ended where b's still
 * runs, a later sample or end, more samples. An ended run never goes back
 * to running. */
static int record_further(const struct run_record *a, const struct run_record *b)
{
    int a_done = strcmp(a->status, RUN_RUNNING) != 0, b_done = strcmp(b->status, RUN_RUNNING) != 0;
    if (b_done && !a_done)
        return 0;
    return a_done > b_done || a->last_ns > b->last_ns || a->end_ns > b->end_ns ||
           a->samples > b->samples;
}

static int merge_record(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    struct run_record there;
    int found = find_run(c->to, c->r->id, &there);
    if (found < 0)
        return wrote(c, found);
    if (!found) {
        m->t->run = 1;
        return copy_record(c);
    }
    m->t->run = record_further(c->r, &there);
    run_record_release(&there);
    return m->t->run ? wrote(c, c->to->ops->run_update(c->to, c->r)) : 0;
}

static int hold_block(const struct block_record *b, void *arg)
{
    struct held_row row = {{b->st.start_ns, 0, 0}, NULL, b->st.count, NULL};
    return held_add(arg, &row, NULL, NULL);
}

/* A block the destination lacks, or holds with fewer points (an open
 * block's earlier snapshot). */
static int merge_block(const struct block_record *b, void *arg)
{
    struct merge_ctx *m = arg;
    const struct held_row *h = held_find(&m->held, b->st.start_ns, 0, 0, NULL);
    if (h && h->size >= b->st.count)
        return 0;
    m->t->blocks++;
    return copy_block(b, &m->c);
}

/* The destination's series of that name and labels: its id, and whether
 * its meta is other than the source's (which wins). */
struct series_there {
    int64_t id;
    const char *meta; /* the source's */
    int meta_differs;
};

static int series_there(const struct series_record *sr, void *arg)
{
    struct series_there *t = arg;
    t->id = sr->id;
    t->meta_differs = t->meta && (!sr->meta || strcmp(sr->meta, t->meta) != 0);
    return 0;
}

/* The series, found by name and labels or added (series_insert refuses a
 * second one), then its blocks the destination lacks. */
static int merge_one_series(const struct series_record *sr, void *arg)
{
    struct merge_ctx *m = arg;
    struct copy_ctx *c = &m->c;
    struct store *to = c->to;
    struct series_there there = {0, sr->meta, 0};
    held_reset(&m->held);
    int rc = to->ops->series_find(to, c->r->id, sr->name, sr->labels, series_there, &there);
    if (rc == -STROBE_ENOTFOUND) {
        rc = to->ops->series_insert(to, c->r->id, sr->name, sr->labels, sr->unit, sr->meta,
                                    &there.id);
        m->t->series++;
    } else if (rc == 0) {
        if (there.meta_differs)
            rc = to->ops->series_update_meta(to, there.id, sr->meta);
        if (rc == 0)
            rc = to->ops->blocks_range_query(to, there.id, INT64_MIN, INT64_MAX, want_no_data,
                                             hold_block, &m->held);
    }
    if (rc < 0)
        return wrote(c, rc);
    held_sort(&m->held);
    c->series_id = there.id;
    return c->from->ops->blocks_query(c->from, sr->id, merge_block, m);
}

static int merge_series(struct copy_ctx *c)
{
    return c->from->ops->series_query(c->from, c->r->id, merge_one_series, c);
}

static int hold_event_name(int64_t id, const char *name, void *arg)
{
    struct held_row row = {{id, 0, 0}, NULL, 0, NULL};
    return held_add(arg, &row, NULL, name);
}

static int merge_event_name(int64_t id, const char *name, void *arg)
{
    struct merge_ctx *m = arg;
    const struct held_row *h = held_find(&m->held, id, 0, 0, NULL);
    if (h && strcmp(h->value, name) == 0)
        return 0;
    m->t->event_names++;
    return copy_event_name(id, name, &m->c);
}

/* After the destination's rows of a kind were read into m->held (the
 * query's result is rc): sort them, or count the failure as the
 * destination's. */
static int hold(struct merge_ctx *m, int rc)
{
    if (rc < 0)
        return wrote(&m->c, rc);
    held_sort(&m->held);
    return 0;
}

static int merge_event_names(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    held_reset(&m->held);
    int rc = hold(m, c->to->ops->event_names_query(c->to, c->r->id, hold_event_name, &m->held));
    return rc < 0 ? rc : c->from->ops->event_names_query(c->from, c->r->id, merge_event_name, m);
}

/* A process's attributes as one line, to compare. */
static char *process_line(const struct process_record *p)
{
    struct strbuf b;
    strbuf_init(&b);
    strbuf_addf(&b, "%lld %lld %lld %lld %lld %s\x1f%s", (long long)p->ppid, (long long)p->rank,
                (long long)p->local_rank, (long long)p->world_size, (long long)p->worker_id,
                p->comm ? p->comm : "\x1e", p->role ? p->role : "\x1e");
    return strbuf_detach(&b);
}

static int hold_process(const struct process_record *p, void *arg)
{
    struct held_row row = {{p->pid, 0, 0}, NULL, 0, NULL};
    char *line = process_line(p);
    int rc = line ? held_add(arg, &row, NULL, line) : -ENOMEM;
    free(line);
    return rc;
}

static int merge_process(const struct process_record *p, void *arg)
{
    struct merge_ctx *m = arg;
    const struct held_row *h = held_find(&m->held, p->pid, 0, 0, NULL);
    char *line = process_line(p);
    if (!line)
        return -ENOMEM;
    int same = h && strcmp(h->value, line) == 0;
    free(line);
    if (same)
        return 0;
    m->t->processes++;
    return copy_process(p, &m->c);
}

static int merge_processes(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    held_reset(&m->held);
    int rc = hold(m, c->to->ops->processes_query(c->to, c->r->id, hold_process, &m->held));
    return rc < 0 ? rc : c->from->ops->processes_query(c->from, c->r->id, merge_process, m);
}

/* The starts of the source's event blocks: the first and the last (the
 * query gives them in order of their start), and how many there are. */
struct start_span {
    int64_t first, last, n;
};

static int span_event_block(const struct event_block_record *b, void *arg)
{
    struct start_span *s = arg;
    if (!s->n++)
        s->first = b->start_ns;
    s->last = b->start_ns;
    return 0;
}

static int hold_event_block(const struct event_block_record *b, void *arg)
{
    struct held_row row = {{b->pid, b->tid, b->start_ns}, NULL, 0, NULL};
    return held_add(arg, &row, NULL, NULL);
}

/* An event block the destination lacks: none of that thread starts then.
 * (Event blocks have no key of their own to upsert by.) */
static int merge_event_block(const struct event_block_record *b, void *arg)
{
    struct merge_ctx *m = arg;
    if (held_find(&m->held, b->pid, b->tid, b->start_ns, NULL))
        return 0;
    m->t->event_blocks++;
    return copy_event_block(b, &m->c);
}

/* Three passes: the span of the source's blocks, the destination's blocks
 * there (every one that may share a key), then the source's again. */
static int merge_event_blocks(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    const struct store_ops *from = c->from->ops;
    struct start_span span = {0, 0, 0};
    held_reset(&m->held);
    int rc =
        from->event_blocks_query(c->from, c->r->id, INT64_MIN, INT64_MAX, span_event_block, &span);
    if (rc < 0 || !span.n)
        return rc;
    rc = hold(m, c->to->ops->event_blocks_query(c->to, c->r->id, span.first, span.last,
                                                hold_event_block, &m->held));
    return rc < 0 ? rc
                  : from->event_blocks_query(c->from, c->r->id, INT64_MIN, INT64_MAX,
                                             merge_event_block, m);
}

static int hold_py_block(const struct py_block_record *b, void *arg)
{
    struct held_row row = {{b->seq, 0, 0}, NULL, (int64_t)b->len, NULL};
    return held_add(arg, &row, NULL, NULL);
}

/* A Python block the destination lacks. A run's seq names one block for
 * good (the recorder never numbers two alike), so one there is the same. */
static int merge_py_block(const struct py_block_record *b, void *arg)
{
    struct merge_ctx *m = arg;
    if (held_find(&m->held, b->seq, 0, 0, NULL))
        return 0;
    m->t->py_blocks++;
    return copy_py_block(b, &m->c);
}

static int merge_py_blocks(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    held_reset(&m->held);
    int rc = hold(m, c->to->ops->py_blocks_query(c->to, c->r->id, INT64_MIN, INT64_MAX,
                                                 hold_py_block, &m->held));
    return rc < 0 ? rc
                  : c->from->ops->py_blocks_query(c->from, c->r->id, INT64_MIN, INT64_MAX,
                                                  merge_py_block, m);
}

static int evaluated_at(const struct rule_config_record *rc, void *arg)
{
    *(int64_t *)arg = rc->evaluated_ns;
    return 0;
}

/* The source's evaluation of the rules replaces the destination's when it
 * is newer, whole: settings, results, findings. */
static int merge_rules(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    int64_t from_ns = INT64_MIN, to_ns = INT64_MIN; /* none */
    int rc = c->from->ops->rule_config_query(c->from, c->r->id, evaluated_at, &from_ns);
    if (rc < 0)
        return rc;
    if ((rc = c->to->ops->rule_config_query(c->to, c->r->id, evaluated_at, &to_ns)) < 0)
        return wrote(c, rc);
    if (from_ns == INT64_MIN || from_ns <= to_ns)
        return 0;
    m->t->rules = 1;
    if ((rc = wrote(c, c->to->ops->rules_clear(c->to, c->r->id))) < 0 ||
        (rc = copy_rule_configs(c)) < 0 || (rc = copy_rule_results(c)) < 0)
        return rc;
    return copy_findings(c);
}

static int hold_text(const struct run_text_record *t, void *arg)
{
    struct held_row row = {{0, 0, 0}, NULL, t->bytes, NULL};
    return held_add(arg, &row, t->kind, NULL);
}

/* A text the destination lacks, or holds less of (the job wrote on). */
static int merge_text(const struct run_text_record *t, void *arg)
{
    struct merge_ctx *m = arg;
    const struct held_row *h = held_find(&m->held, 0, 0, 0, t->kind);
    /* a snapshot goes with the run record: the newer run's is the one */
    int snapshot = strcmp(t->kind, RUN_TEXT_SNAPSHOT) == 0;
    if (h && (snapshot ? !m->t->run : h->size >= t->bytes))
        return 0;
    m->t->texts++;
    return copy_text(t, &m->c);
}

static int merge_texts(struct copy_ctx *c)
{
    struct merge_ctx *m = (struct merge_ctx *)c;
    held_reset(&m->held);
    int rc = hold(m, c->to->ops->run_texts_query(c->to, c->r->id, hold_text, &m->held));
    return rc < 0 ? rc : c->from->ops->run_texts_query(c->from, c->r->id, merge_text, m);
}

static copy_step_fn *const merge_steps[] = {
    merge_record,       merge_series,    merge_event_names, merge_processes,
    merge_event_blocks, merge_py_blocks, merge_rules,       merge_texts,
};

int store_copy_merge(struct store *from, struct store *to, const struct run_record *r,
                     struct store_merge_tally *out, struct strbuf *err)
{
    memset(out, 0, sizeof(*out));
    struct merge_ctx m = {{from, to, r, 0, 0, 0}, out, {0}};
    int rc = in_transaction(&m.c, merge_steps, ARRAY_SIZE(merge_steps), 0, err);
    held_release(&m.held);
    if (rc < 0)
        memset(out, 0, sizeof(*out)); /* rolled back: nothing was written */
    return rc;
}

int store_merge_changed(const struct store_merge_tally *t)
{
    return t->run || t->series || t->blocks || t->event_names || t->processes || t->event_blocks ||
           t->py_blocks || t->texts || t->rules;
}
