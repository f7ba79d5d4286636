#include "rules/replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/steps.h"
#include "codec/events.h"
#include "codec/gorilla.h"
#include "common/array.h"

/*
 * Memory: a series' blocks are read a chunk of time at a time, as the
 * replay reaches them, not all at once. A chunk spans the time this many
 * bytes, shared by every series the rules read, hold of the series' own
 * points: a run of a few hundred series is read whole, one query a
 * series, and a job of 256 nodes x 100 series holds about 10 KB a series
 * (it held every block, 3.4 GiB for 256 node-hours). A chunk with no
 * block doubles the next one, across a gap. The run's event blocks come
 * in chunks of time as well, a quarter of the total at the size their
 * count suggests (they were 440 MB of that job, all held at once).
 * $STROBE_TEST_REPLAY_BYTES sets the total (tests: 1 makes a chunk one
 * point, or one nanosecond of events, long).
 */
#define REPLAY_BYTES (256 << 20)

struct kept_block {
    uint8_t *data;
    size_t len;
    uint32_t count;
    int64_t start_ns; /* the decoder tells the codec's formats apart by it */
};

#define REPLAY_BATCH 512 /* points decoded at a time per series */

struct kept_series {
    int64_t id;
    int slot;
    struct kept_block *blocks; /* the chunk read last */
    uint32_t n, cap;
    uint32_t next;           /* the next block to decode */
    int64_t from_ns, end_ns; /* the next chunk starts at from_ns; the series ends at end_ns */
    int64_t points, bytes;   /* the series' size, to size its chunks */
    int64_t chunk_ns;        /* 0 until sized */
    int done;                /* every block read, or a damaged one met */
    struct block_dec dec;
    int open; /* dec holds a block */
    /* points decoded, not yet pushed: bts[bi..bn) */
    int64_t bts[REPLAY_BATCH];
    double bv[REPLAY_BATCH];
    uint32_t bi, bn;
};

struct kept_events {
    int64_t pid, tid, start_ns;
    uint8_t *data;
    size_t len;
};

struct replay {
    struct store *s;
    const char *id; /* the run's */
    int rc;         /* the first failure to read a chunk */
    struct rules_engine *e;
    const char *nodes; /* an import of several nodes: the run's host, "algo-1,algo-2"; else NULL */
    struct kept_series *series;
    uint32_t nseries, series_cap;
    struct kept_events *ev;
    uint32_t nev, ev_cap, ev_next;
    /* event blocks come a chunk of time at a time too: the next chunk
     * starts at ev_from (INT64_MIN: the first, from before the run) */
    int64_t ev_from, ev_start, ev_end, ev_chunk_ns;
    int ev_done;
    char **names;
    uint32_t nnames;
    struct event_decoder dec;
    struct event *buf;
    uint32_t buf_cap;
    uint64_t bad_blocks;
};

int64_t rules_run_end_ns(const struct run_record *r)
{
    int64_t end = r->end_ns > r->last_ns ? r->end_ns : r->last_ns;
    return end > r->start_ns ? end : r->start_ns;
}

static int on_series(const struct series_record *sr, void *arg)
{
    struct replay *rp = arg;
    int slot = rules_series(rp->e, sr->name, sr->labels);
    if (slot < 0)
        return 0;
    if (array_grow((void **)&rp->series, &rp->series_cap, rp->nseries + 1, sizeof(*rp->series),
                   32) < 0)
        return -ENOMEM;
    struct kept_series *k = &rp->series[rp->nseries++];
    memset(k, 0, sizeof(*k));
    k->id = sr->id;
    k->slot = slot;
    k->from_ns = sr->start_ns;
    k->end_ns = sr->end_ns;
    k->points = sr->count;
    k->bytes = sr->bytes;
    k->done = sr->count <= 0;
    return 0;
}

static int64_t replay_bytes(void)
{
    const char *env = getenv("STROBE_TEST_REPLAY_BYTES");
    long long v = env && *env ? strtoll(env, NULL, 10) : 0;
    return v > 0 ? v : REPLAY_BYTES;
}

/* Each series' chunk: its share of the memory, in its own points' time. */
static void size_chunks(struct replay *rp)
{
    double share = rp->nseries ? (double)replay_bytes() / rp->nseries : 0;
    for (uint32_t i = 0; i < rp->nseries; i++) {
        struct kept_series *k = &rp->series[i];
        double per_point = k->points > 0 && k->bytes > 0 ? (double)k->bytes / (double)k->points : 1;
        double spacing =
            k->points > 1 ? (double)(k->end_ns - k->from_ns) / (double)(k->points - 1) : 1;
        double points = share / per_point;
        double ns = (points > 1 ? points : 1) * (spacing > 1 ? spacing : 1);
        k->chunk_ns = ns < 9e18 ? (int64_t)ns : INT64_MAX / 4;
    }
}

/* A chunk keeps the blocks that start in it: one that starts before was
 * the last chunk's. */
static int starts_in_chunk(const struct block_stats *st, void *arg)
{
    const struct kept_series *k = arg;
    return st->start_ns >= k->from_ns;
}

static int on_block(const struct block_record *b, void *arg)
{
    struct kept_series *k = arg;
    if (b->st.start_ns < k->from_ns)
        return 0;
    if (array_grow((void **)&k->blocks, &k->cap, k->n + 1, sizeof(*k->blocks), 16) < 0)
        return -ENOMEM;
    uint8_t *copy = malloc(b->len ? b->len : 1);
    if (!copy)
        return -ENOMEM;
    if (b->len) /* an empty block's data may be NULL */
        memcpy(copy, b->data, b->len);
    k->blocks[k->n++] = (struct kept_block){copy, b->len, b->st.count, b->st.start_ns};
    return 0;
}

static int on_name(int64_t id, const char *name, void *arg)
{
    struct replay *rp = arg;
    if (id <= 0 || id > (1 << 24))
        return 0;
    if ((uint32_t)id > rp->nnames) {
        char **p = realloc(rp->names, (size_t)id * sizeof(*p));
        if (!p)
            return -ENOMEM;
        memset(p + rp->nnames, 0, ((size_t)id - rp->nnames) * sizeof(*p));
        rp->names = p;
        rp->nnames = (uint32_t)id;
    }
    free(rp->names[id - 1]);
    rp->names[id - 1] = strdup(name);
    return 0;
}

static int on_process(const struct process_record *p, void *arg)
{
    struct replay *rp = arg;
    rules_put_process(rp->e, p->pid, p->rank, p->worker_id);
    const char *node = proc_import_node(p->comm, rp->nodes, NULL);
    if (node)
        rules_put_process_node(rp->e, p->pid, node);
    return 0;
}

static int on_event_block(const struct event_block_record *b, void *arg)
{
    struct replay *rp = arg;
    if (b->start_ns < rp->ev_from)
        return 0; /* the last chunk's */
    if (array_grow((void **)&rp->ev, &rp->ev_cap, rp->nev + 1, sizeof(*rp->ev), 64) < 0)
        return -ENOMEM;
    uint8_t *copy = malloc(b->len ? b->len : 1);
    if (!copy)
        return -ENOMEM;
    if (b->len) /* an empty block's data may be NULL */
        memcpy(copy, b->data, b->len);
    rp->ev[rp->nev++] = (struct kept_events){b->pid, b->tid, b->start_ns, copy, b->len};
    return 0;
}

static void drop_blocks(struct kept_series *k)
{
    for (uint32_t j = 0; j < k->n; j++)
        free(k->blocks[j].data);
    k->n = k->next = 0;
}

/* The last instant of a chunk span long from from (INT64_MAX at most). */
static int64_t chunk_end(int64_t from, int64_t span)
{
    return from > INT64_MAX - span ? INT64_MAX : from + span;
}

/* After a chunk with nothing in it: twice as long, across a gap. */
static int64_t widened(int64_t span)
{
    return span > INT64_MAX / 4 ? span : span * 2;
}

/* The first failure to read a chunk is the replay's. */
static void read_failed(struct replay *rp, int rc)
{
    if (!rp->rc)
        rp->rc = rc;
}

/* Read k's next chunk that holds a block; 0 when none is left. */
static int read_chunk(struct replay *rp, struct kept_series *k)
{
    drop_blocks(k);
    int64_t span = k->chunk_ns > 0 ? k->chunk_ns : 1;
    while (k->n == 0 && k->from_ns <= k->end_ns) {
        int64_t to = chunk_end(k->from_ns, span);
        int rc = rp->s->ops->blocks_range_query(rp->s, k->id, k->from_ns, to, starts_in_chunk,
                                                on_block, k);
        if (rc < 0) {
            read_failed(rp, rc);
            k->done = 1;
            return 0;
        }
        k->from_ns = to == INT64_MAX ? to : to + 1;
        span = widened(span);
    }
    k->done = k->n == 0;
    return k->n > 0;
}

/* Decode k's next points into its batch: 0 at its end (a damaged block
 * ends its series' replay early: what decoded is kept). */
static int refill(struct replay *rp, struct kept_series *k)
{
    for (;;) {
        if (!k->open) {
            if (k->next == k->n && (k->done || !read_chunk(rp, k)))
                return 0;
            struct kept_block *b = &k->blocks[k->next++];
            block_dec_init(&k->dec, b->data, b->len, b->count, b->start_ns);
            k->open = 1;
        }
        int err;
        uint32_t got = block_dec_many(&k->dec, k->bts, k->bv, REPLAY_BATCH, &err);
        if (got < REPLAY_BATCH || err) {
            k->open = 0;
            if (err) {
                k->next = k->n;
                k->done = 1;
            }
        }
        if (got) {
            k->bi = 0;
            k->bn = got;
            return 1;
        }
    }
}

/* Every point before before_ns, in runs of one series. */
static void push_points(struct replay *rp, int64_t before_ns)
{
    for (uint32_t i = 0; i < rp->nseries; i++) {
        struct kept_series *k = &rp->series[i];
        for (;;) {
            if (k->bi == k->bn && !refill(rp, k))
                break;
            uint32_t j = k->bi;
            while (j < k->bn && k->bts[j] < before_ns)
                j++;
            if (j > k->bi)
                rules_put_many(rp->e, k->slot, k->bts + k->bi, k->bv + k->bi, j - k->bi);
            k->bi = j;
            if (j < k->bn)
                break; /* the next point is in a later window */
        }
    }
}

static const char *name_of(const struct replay *rp, uint32_t id)
{
    return id && id <= rp->nnames && rp->names[id - 1] ? rp->names[id - 1] : "";
}

static void drop_events(struct replay *rp)
{
    for (uint32_t i = 0; i < rp->nev; i++)
        free(rp->ev[i].data);
    rp->nev = rp->ev_next = 0;
}

/* The run's event blocks a chunk of time at a time, as its series': a
 * quarter of the memory, at the bytes its event count suggests (8 an
 * event at most, docs/events.md). */
static void size_event_chunks(struct replay *rp, const struct run_record *r)
{
    rp->ev_from = INT64_MIN;
    rp->ev_start = r->start_ns;
    rp->ev_end = rules_run_end_ns(r);
    double bytes = (double)r->events * 8, span = (double)(rp->ev_end - rp->ev_start);
    double ns = bytes > 0 ? span * ((double)replay_bytes() / 4) / bytes : 9e18;
    rp->ev_chunk_ns = ns < 1 ? 1 : ns < 9e18 ? (int64_t)ns : INT64_MAX / 4;
}

static int kept_events_cmp(const void *x, const void *y)
{
    const struct kept_events *a = x, *b = y;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

/* Read the next chunk that holds an event block, in time order; 0 when
 * none is left. A job's view gives its blocks node by node, so they are
 * sorted here: pushed in that order, every node's but the first came
 * after their windows had closed, and the engine dropped them (50 M of
 * a 256-node job's 61 M events). */
static int read_events(struct replay *rp)
{
    drop_events(rp);
    int64_t span = rp->ev_chunk_ns;
    while (!rp->ev_done && rp->nev == 0) {
        int64_t from = rp->ev_from == INT64_MIN ? rp->ev_start : rp->ev_from;
        int64_t to = from >= rp->ev_end ? INT64_MAX : chunk_end(from, span);
        int rc = rp->s->ops->event_blocks_query(rp->s, rp->id, rp->ev_from, to, on_event_block, rp);
        if (rc < 0) {
            read_failed(rp, rc);
            rp->ev_done = 1;
            return 0;
        }
        if (to == INT64_MAX)
            rp->ev_done = 1;
        else
            rp->ev_from = to + 1;
        span = widened(span);
    }
    if (rp->nev > 1) /* qsort of no array is undefined */
        qsort(rp->ev, rp->nev, sizeof(*rp->ev), kept_events_cmp);
    return rp->nev > 0;
}

static void push_events(struct replay *rp, int64_t before_ns)
{
    for (;;) {
        if (rp->ev_next == rp->nev && (rp->ev_done || !read_events(rp)))
            return;
        if (rp->ev[rp->ev_next].start_ns >= before_ns)
            return;
        struct kept_events *b = &rp->ev[rp->ev_next++];
        uint32_t n;
        if (event_block_peek_count(b->data, b->len, &n) < 0) {
            rp->bad_blocks++;
            continue;
        }
        if (array_grow((void **)&rp->buf, &rp->buf_cap, n + 1, sizeof(*rp->buf), 4096) < 0)
            return;
        uint32_t got = 0;
        if (event_block_decode(&rp->dec, b->data, b->len, rp->buf, rp->buf_cap, &got) < 0) {
            rp->bad_blocks++;
            continue;
        }
        for (uint32_t i = 0; i < got; i++) {
            const struct event *ev = &rp->buf[i];
            if (ev->kind != STROBE_EV_COMPLETE || ev->value < 0)
                continue;
            rules_put_span(rp->e, b->pid, b->tid, ev->ts_ns, ev->ts_ns + ev->value, ev->name,
                           name_of(rp, ev->name));
        }
    }
}

static void replay_release(struct replay *rp)
{
    for (uint32_t i = 0; i < rp->nseries; i++) {
        drop_blocks(&rp->series[i]);
        free(rp->series[i].blocks);
    }
    free(rp->series);
    drop_events(rp);
    free(rp->ev);
    for (uint32_t i = 0; i < rp->nnames; i++)
        free(rp->names[i]);
    free(rp->names);
    free(rp->buf);
    event_decoder_release(&rp->dec);
}

int rules_replay(struct store *s, const struct run_record *r, struct rules_engine *e,
                 struct strbuf *err)
{
    /* an import of several nodes names them all as its host */
    struct replay rp = {
        .s = s, .id = r->id, .e = e, .nodes = r->host && strchr(r->host, ',') ? r->host : NULL};
    if (event_decoder_init(&rp.dec) < 0)
        return -ENOMEM;
    int rc = s->ops->series_query(s, r->id, on_series, &rp);
    size_chunks(&rp);
    if (rc == 0)
        rc = s->ops->event_names_query(s, r->id, on_name, &rp);
    if (rc == 0)
        rc = s->ops->processes_query(s, r->id, on_process, &rp);
    size_event_chunks(&rp, r);
    if (rc < 0) {
        strbuf_addf(err, "cannot read run %s: %s", r->id, s->err.len ? s->err.buf : "error");
        replay_release(&rp);
        return rc;
    }
    int64_t end = rules_run_end_ns(r), step = rules_interval_ns(e);
    for (int64_t t1 = r->start_ns + step; rp.rc == 0 && t1 <= end; t1 += step) {
        push_points(&rp, t1);
        push_events(&rp, t1);
        rules_close_until(e, t1);
    }
    push_points(&rp, INT64_MAX);
    push_events(&rp, INT64_MAX);
    if (rp.rc < 0) {
        strbuf_addf(err, "cannot read run %s: %s", r->id, s->err.len ? s->err.buf : "error");
        rc = rp.rc;
    } else {
        rules_finish(e, end);
    }
    replay_release(&rp);
    return rc;
}

void rules_finding_record(const struct finding *f, struct finding_record *out)
{
    out->rule = f->rule;
    out->severity = severity_names[f->severity];
    out->scope = f->scope;
    out->start_ns = f->start_ns;
    out->end_ns = f->end_ns;
    out->evidence = f->evidence ? f->evidence : "";
    out->events = f->events;
    out->recommendation = f->recommendation;
}

static int save_all(struct store *s, const char *run_id, const struct rules_engine *e,
                    const char *rules_list, const char *mode)
{
    struct strbuf params;
    strbuf_init(&params);
    rules_params_text(e, &params, 1);
    struct rule_config_record cfg = {rules_interval_ns(e), rules_list ? rules_list : "all",
                                     params.buf, mode, 0};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cfg.evaluated_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    int rc = s->ops->rules_clear(s, run_id);
    if (rc == 0)
        rc = s->ops->rule_config_put(s, run_id, &cfg);
    strbuf_release(&params);
    for (uint32_t i = 0; rc == 0 && i < rules_count(e); i++) {
        const struct rule_result *r = rules_result_at(e, i);
        struct rule_result_record rec = {r->rule,
                                         rule_status_names[r->status],
                                         (int64_t)r->datapoints,
                                         (int64_t)r->violations,
                                         r->detail,
                                         r->report};
        rc = s->ops->rule_result_insert(s, run_id, &rec);
    }
    uint32_t n;
    const struct finding *f = rules_findings(e, &n);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct finding_record rec;
        rules_finding_record(&f[i], &rec);
        rc = s->ops->finding_insert(s, run_id, i, &rec);
    }
    return rc;
}

int rules_save(struct store *s, const char *run_id, const struct rules_engine *e,
               const char *rules_list, const char *mode)
{
    int rc = s->ops->begin(s);
    if (rc < 0)
        return rc;
    rc = save_all(s, run_id, e, rules_list, mode);
    if (rc == 0)
        return s->ops->commit(s);
    s->ops->rollback(s);
    return rc;
}
