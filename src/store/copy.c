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
#include <stdint.h>
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
    X(text_bytes) X(rules_evaluated_ns)
#define TALLY_OTHER(X)                                                                             \
    X(series) X(block_bytes) X(event_names) X(processes) X(event_bytes) X(rule_configs)            \
    X(rule_results) X(findings) X(texts)
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
    copy_record,       copy_series,       copy_event_names, copy_processes, copy_event_blocks,
    copy_rule_configs, copy_rule_results, copy_findings,    copy_texts,
};

/* The copy in one transaction of to; replace removes the old copy first,
 * in it too. */
static int copy_rows(struct store *from, struct store *to, const struct run_record *r, int replace,
                     struct strbuf *err)
{
    struct copy_ctx c = {from, to, r, 0, 0, 0};
    strbuf_reset(&from->err);
    strbuf_reset(&to->err);
    int rc = to->ops->begin(to);
    if (rc == 0 && replace)
        rc = to->ops->run_delete(to, r->id); /* joins the transaction */
    c.to_failed = rc < 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(copy_steps); i++)
        rc = copy_steps[i](&c);
    if (rc == 0)
        rc = wrote(&c, to->ops->commit(to));
    if (rc == 0)
        return 0;
    /* said before the rollback, which may overwrite to->err */
    if (c.to_failed)
        fail(err, rc, "write", "to", r, to);
    else
        fail(err, rc, "read", "from", r, from);
    to->ops->rollback(to);
    return rc;
}

int store_copy_run(struct store *from, struct store *to, const struct run_record *r,
                   struct store_copy_plan *out, struct strbuf *err)
{
    int rc = store_copy_decide(from, to, r, out, err);
    if (rc < 0 || (out->verdict != STORE_COPY_NEW && out->verdict != STORE_COPY_REPLACE))
        return rc;
    return copy_rows(from, to, r, out->verdict == STORE_COPY_REPLACE, err);
}
