/*
 * Copying a run between stores (store/copy.h). A run with a row of every
 * kind is written to a SQLite file, copied to the rig's store (SQLite,
 * then PostgreSQL where STROBE_TEST_PG_URI is set) and from there to a
 * second SQLite file; every query's answer is then written out as text
 * (dump_run), and the three texts must be equal.
 *
 * Python sample blocks travel too, byte for byte.
 *
 * Merging (store_copy_merge): a store holding the run's first part while
 * it recorded, and one holding its last part and its end, as a recorder's
 * database and its spool do, make the whole run; a second merge writes
 * nothing.
 *
 * The failures come from a destination whose block_upsert fails at the
 * Nth call: its ops table is the real one with that member replaced.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/err.h"
#include "store/copy.h"
#include "store/store.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define RUN_ID "0123456789abcdef"
#define T0     1700000000000000000LL
#define SEC    1000000000LL

static struct store *open_ok(const char *uri)
{
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(uri, 0, &s, &err) < 0)
        TEST_FAIL("store_open('%s'): %s", uri, err.buf);
    strbuf_release(&err);
    return s;
}

static struct store *open_file(const struct store_rig *rig, const char *name)
{
    char path[1200];
    fixture_join(path, sizeof(path), rig->dir, name);
    return open_ok(path);
}

/* ---- a run with every kind of row ------------------------------------------------ */

static void make_record(struct run_record *r, int finished)
{
    run_record_init(r);
    snprintf(r->id, sizeof(r->id), "%s", RUN_ID);
    r->name = strdup("bs64 'quoted' ünï");
    r->experiment = strdup("sweep");
    r->workload = strdup("bs64");
    r->command_json = strdup("[\"python\",\"train.py\"]");
    r->cwd = strdup("/home/u/job");
    r->user = strdup("u");
    r->host = strdup("node-1");
    r->kernel = strdup("6.1.0");
    r->cpu_model = strdup("Xeon");
    r->cpu_count = 8;
    r->mem_total_bytes = 64LL << 30;
    r->start_ns = T0;
    r->git_commit = strdup("abc123");
    r->git_dirty = 1;
    r->python_version = strdup("3.11.2");
    r->torch_version = strdup("2.2.0");
    r->interval_ns = 100000000;
    r->recorder_pid = 4242;
    snprintf(r->recorder.boot_id, sizeof(r->recorder.boot_id), "%s", "boot-1");
    r->recorder.pid_ns = 4026531836;
    r->recorder.time_ns = 4026531834;
    r->recorder.start_ticks = 1234;
    r->strobe_version = strdup("0.9");
    kv_list_add(&r->tags, "team", "vision");
    kv_list_add(&r->params, "batch", "64");
    kv_list_add(&r->env, "CUDA_VISIBLE_DEVICES", "0");
    snprintf(r->status, sizeof(r->status), "%s", finished ? RUN_FINISHED : RUN_RUNNING);
    r->end_ns = finished ? T0 + 60 * SEC : 0;
    r->exit_code = finished ? 0 : -1;
    r->last_ns = T0 + (finished ? 59 : 20) * SEC;
    r->samples = finished ? 600 : 200;
    r->points = r->samples * 3;
    r->missed = 2;
    r->dropped = 1;
    r->events = 30;
    r->events_dropped = 3;
    r->events_invalid = 1;
}

/* Block k of a series: bytes that decode as nothing (the copy must not
 * look inside), every value 0..255 among them. A snapshot is the block
 * while it was open: fewer points, fewer bytes. */
static void put_block(struct store *s, int64_t sid, int k, int snapshot)
{
    uint8_t data[300];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + (size_t)k);
    struct block_stats st = {
        .count = snapshot ? 5 : 10 + (uint32_t)k,
        .start_ns = T0 + k * SEC,
        .end_ns = T0 + k * SEC + SEC / 2,
        .min = -1.5 * k - 0.25, /* never -0, which SQLite keeps as 0 */
        .max = 2.25 * k + 1,
        .sum = 0.1 * k,
        .first = 1.0 / 3,
        .last = 1e-300,
    };
    size_t len = snapshot ? 100 : sizeof(data) - (size_t)k;
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, data, len), 0);
}

static const char *const series_names[][4] = {
    /* name, labels, unit, meta */
    {"cpu.util_pct", "core=10", "%", NULL},
    {"cpu.util_pct", "core=2", "%", NULL},
    {"proc.rss_bytes", "pid=7", "bytes", "{\"comm\":\"python\",\"pid\":7}"},
};
/* A series whose blocks start at block LATE_FROM (the merge's cases). */
static const char *const late_series[4] = {"app.loss", "", "", "{\"rank\":0}"};
#define LATE_FROM 3

/* Which part of the run a store holds: blocks [from, to) of each series
 * and event blocks [from, to + 3); its last series block a snapshot of
 * fewer points when partial; the late series when late. A recorder's
 * database and its spool each hold a part. */
struct part {
    int from, to;
    int finished;
    int partial;
    int late;
};

static void put_series(struct store *s, const char *const *n, int from, const struct part *p)
{
    int64_t sid;
    if (from >= p->to)
        return;
    ASSERT_EQ_INT(s->ops->series_insert(s, RUN_ID, n[0], n[1], n[2], n[3], &sid), 0);
    for (int k = from; k < p->to; k++)
        put_block(s, sid, k, p->partial && k == p->to - 1);
}

/* The part of the run p says; events, rules and texts. */
static void populate_part(struct store *s, const struct part *part)
{
    struct run_record r;
    make_record(&r, part->finished);
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    ASSERT_EQ_INT(s->ops->run_insert(s, &r), 0);
    ASSERT_EQ_INT(s->ops->run_update(s, &r), 0);
    run_record_release(&r);
    for (size_t i = 0; i < ARRAY_SIZE(series_names); i++)
        put_series(s, series_names[i], part->from, part);
    if (part->late)
        put_series(s, late_series, part->from > LATE_FROM ? part->from : LATE_FROM, part);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, RUN_ID, 1, "forward"), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, RUN_ID, 2, "optimizer.step"), 0);
    struct process_record p = {100, 1, "python", "main", 0, 0, 2, -1};
    ASSERT_EQ_INT(s->ops->process_upsert(s, RUN_ID, &p), 0);
    struct process_record w = {101, 100, "pt_data_worker", "dataloader", -1, -1, -1, 3};
    ASSERT_EQ_INT(s->ops->process_upsert(s, RUN_ID, &w), 0);
    for (int k = part->from; k < part->to + 3; k++) {
        uint8_t data[64];
        memset(data, 0xa0 + k, sizeof(data));
        /* two blocks start together: their order is the insertion's */
        int64_t start = T0 + (k / 2) * SEC;
        struct event_block_record b = {100 + k % 2, 100 + k, start, start + SEC / 3, k,
                                       k + 1,       5 + k,   data,  sizeof(data)};
        ASSERT_EQ_INT(s->ops->event_block_insert(s, RUN_ID, &b), 0);
    }
    /* Python samples: a dictionary and a samples block for each second */
    for (int k = 2 * part->from; k < 2 * part->to; k++) {
        uint8_t data[48];
        memset(data, 0x50 + k, sizeof(data));
        int64_t start = T0 + (k / 2) * SEC;
        struct py_block_record b = {
            k, k % 2, start, start + SEC - 1000, 10 + k, data, sizeof(data) - (size_t)k};
        ASSERT_EQ_INT(s->ops->py_block_put(s, RUN_ID, &b), 0);
    }
    struct rule_config_record rc = {10 * SEC, "all", "StepOutlier.stddev=5", "live",
                                    T0 + (part->finished ? 61 : 21) * SEC};
    ASSERT_EQ_INT(s->ops->rule_config_put(s, RUN_ID, &rc), 0);
    struct rule_result_record rr[] = {
        {"LowGPUUtilization", "fired", 40, 3, "gpu 0 idle", "{\"x\":1}"},
        {"CPUBottleneck", "ok", 40, 0, NULL, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(rr); i++)
        ASSERT_EQ_INT(s->ops->rule_result_insert(s, RUN_ID, &rr[i]), 0);
    /* fired out of name and time order: the copy keeps the firing order */
    struct finding_record f[] = {
        {"StepOutlier", "medium", "node", T0 + 9 * SEC, T0 + 10 * SEC, "step 90", NULL, NULL},
        {"CPUBottleneck", "high", "rank 0", T0 + 2 * SEC, T0 + 5 * SEC, "95%", "[1,2]", "more"},
        {"Dataloader", "low", "node", T0 + 1 * SEC, T0 + 3 * SEC, "", NULL, "workers"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(f); i++)
        ASSERT_EQ_INT(s->ops->finding_insert(s, RUN_ID, (int64_t)i + 5, &f[i]), 0);
    static const char out[] = "epoch 1\n\xff\xfe not UTF-8\0 and a NUL\n";
    struct run_text_record t[] = {
        {"stdout", out, sizeof(out) - 1, part->finished ? 9000 : 4000},
        {"packages", "torch==2.2.0\n", 13, 13},
    };
    for (size_t i = 0; i < ARRAY_SIZE(t); i++)
        ASSERT_EQ_INT(s->ops->run_text_put(s, RUN_ID, &t[i]), 0);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
}

/* The whole run, with nblocks blocks a series. */
static void populate(struct store *s, int nblocks, int finished)
{
    struct part p = {0, nblocks, finished, 0, 0};
    populate_part(s, &p);
}

/* ---- every query's answer as text ------------------------------------------------ */

static void dump_str(struct strbuf *o, const char *key, const char *v)
{
    strbuf_addf(o, "%s=%s\n", key, v ? v : "(null)");
}

static void dump_kv(struct strbuf *o, const char *what, const struct kv_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        strbuf_addf(o, "%s %s=%s\n", what, l->items[i].key, l->items[i].value);
}

static void dump_record(struct strbuf *o, const struct run_record *r)
{
    strbuf_addf(o, "id=%s status=%s\n", r->id, r->status);
    const char *const strs[][2] = {
        {"name", r->name},
        {"experiment", r->experiment},
        {"workload", r->workload},
        {"command", r->command_json},
        {"cwd", r->cwd},
        {"user", r->user},
        {"host", r->host},
        {"kernel", r->kernel},
        {"cpu_model", r->cpu_model},
        {"git_commit", r->git_commit},
        {"python", r->python_version},
        {"torch", r->torch_version},
        {"strobe", r->strobe_version},
        {"error", r->error},
    };
    for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
        dump_str(o, strs[i][0], strs[i][1]);
    strbuf_addf(o, "cpus=%d mem=%lld start=%lld end=%lld last=%lld exit=%d signal=%d dirty=%d\n",
                r->cpu_count, (long long)r->mem_total_bytes, (long long)r->start_ns,
                (long long)r->end_ns, (long long)r->last_ns, r->exit_code, r->signal, r->git_dirty);
    strbuf_addf(o, "interval=%lld samples=%lld points=%lld missed=%lld dropped=%lld\n",
                (long long)r->interval_ns, (long long)r->samples, (long long)r->points,
                (long long)r->missed, (long long)r->dropped);
    strbuf_addf(o, "events=%lld dropped=%lld invalid=%lld pid=%lld\n", (long long)r->events,
                (long long)r->events_dropped, (long long)r->events_invalid,
                (long long)r->recorder_pid);
    strbuf_addf(o, "recorder=%s %lld %lld %lld\n", r->recorder.boot_id,
                (long long)r->recorder.pid_ns, (long long)r->recorder.time_ns,
                (long long)r->recorder.start_ticks);
    dump_kv(o, "tag", &r->tags);
    dump_kv(o, "param", &r->params);
    dump_kv(o, "env", &r->env);
}

static void dump_stats(struct strbuf *o, const struct block_stats *st)
{
    strbuf_addf(o, "block %lld-%lld n=%u min=%.17g max=%.17g sum=%.17g first=%.17g last=%.17g",
                (long long)st->start_ns, (long long)st->end_ns, st->count, st->min, st->max,
                st->sum, st->first, st->last);
}

static void dump_bytes(struct strbuf *o, const uint8_t *data, size_t len)
{
    strbuf_addf(o, " len=%zu ", len);
    for (size_t i = 0; i < len; i++)
        strbuf_addf(o, "%02x", data[i]);
    strbuf_addch(o, '\n');
}

static int dump_block(const struct block_record *b, void *arg)
{
    dump_stats(arg, &b->st);
    dump_bytes(arg, b->data, b->len);
    return 0;
}

/* Blocks from the second second on, their data read for every other one. */
static int want_odd(const struct block_stats *st, void *arg)
{
    (void)arg;
    return (st->start_ns / SEC) % 2 != 0;
}

struct dump_ctx {
    struct store *s;
    struct strbuf *o;
};

static int dump_found(const struct series_record *sr, void *arg)
{
    strbuf_addf(arg, "found %s{%s} unit=%s meta=%s %lld-%lld\n", sr->name, sr->labels, sr->unit,
                sr->meta ? sr->meta : "(null)", (long long)sr->start_ns, (long long)sr->end_ns);
    return 0;
}

static int dump_series(const struct series_record *sr, void *arg)
{
    struct dump_ctx *c = arg;
    strbuf_addf(c->o, "series %s{%s} unit=%s meta=%s n=%lld min=%.17g max=%.17g sum=%.17g",
                sr->name, sr->labels, sr->unit, sr->meta ? sr->meta : "(null)",
                (long long)sr->count, sr->min, sr->max, sr->sum);
    strbuf_addf(c->o, " %lld-%lld bytes=%lld\n", (long long)sr->start_ns, (long long)sr->end_ns,
                (long long)sr->bytes);
    ASSERT_EQ_INT(c->s->ops->blocks_query(c->s, sr->id, dump_block, c->o), 0);
    strbuf_adds(c->o, "range:\n");
    ASSERT_EQ_INT(c->s->ops->blocks_range_query(c->s, sr->id, T0 + SEC, T0 + 100 * SEC, want_odd,
                                                dump_block, c->o),
                  0);
    ASSERT_EQ_INT(c->s->ops->series_find(c->s, RUN_ID, sr->name, sr->labels, dump_found, c->o), 0);
    return 0;
}

static int dump_event_name(int64_t id, const char *name, void *arg)
{
    strbuf_addf(arg, "event name %lld %s\n", (long long)id, name);
    return 0;
}

static int dump_process(const struct process_record *p, void *arg)
{
    strbuf_addf(arg, "process %lld ppid=%lld comm=%s role=%s rank=%lld/%lld/%lld worker=%lld\n",
                (long long)p->pid, (long long)p->ppid, p->comm ? p->comm : "(null)",
                p->role ? p->role : "(null)", (long long)p->rank, (long long)p->local_rank,
                (long long)p->world_size, (long long)p->worker_id);
    return 0;
}

static int dump_event_block(const struct event_block_record *b, void *arg)
{
    strbuf_addf(arg, "event block pid=%lld tid=%lld %lld-%lld steps=%lld-%lld n=%lld",
                (long long)b->pid, (long long)b->tid, (long long)b->start_ns, (long long)b->end_ns,
                (long long)b->step_min, (long long)b->step_max, (long long)b->count);
    dump_bytes(arg, b->data, b->len);
    return 0;
}

static int dump_py_block(const struct py_block_record *b, void *arg)
{
    strbuf_addf(arg, "py block %lld kind=%d %lld-%lld n=%lld", (long long)b->seq, b->kind,
                (long long)b->start_ns, (long long)b->end_ns, (long long)b->count);
    dump_bytes(arg, b->data, b->len);
    return 0;
}

static int dump_rule_config(const struct rule_config_record *c, void *arg)
{
    strbuf_addf(arg, "rules %lld %s %s %s %lld\n", (long long)c->interval_ns, c->rules, c->params,
                c->mode, (long long)c->evaluated_ns);
    return 0;
}

static int dump_rule_result(const struct rule_result_record *r, void *arg)
{
    strbuf_addf(arg, "result %s %s %lld %lld %s %s\n", r->rule, r->status, (long long)r->datapoints,
                (long long)r->violations, r->detail ? r->detail : "(null)",
                r->report ? r->report : "(null)");
    return 0;
}

static int dump_finding(const struct finding_record *f, void *arg)
{
    strbuf_addf(arg, "finding %s %s %s %lld-%lld %s %s %s\n", f->rule, f->severity, f->scope,
                (long long)f->start_ns, (long long)f->end_ns, f->evidence,
                f->events ? f->events : "(null)", f->recommendation ? f->recommendation : "(null)");
    return 0;
}

static int dump_text(const struct run_text_record *t, void *arg)
{
    strbuf_addf(arg, "text %s bytes=%lld", t->kind, (long long)t->bytes);
    dump_bytes(arg, (const uint8_t *)t->data, t->len);
    return 0;
}

/* Every query of the run, in o (reset first). */
static void dump_run(struct store *s, struct strbuf *o)
{
    struct run_record r;
    strbuf_reset(o);
    ASSERT_EQ_INT(store_resolve_run(s, RUN_ID, &r), 0);
    dump_record(o, &r);
    run_record_release(&r);
    const struct store_ops *ops = s->ops;
    struct dump_ctx c = {s, o};
    ASSERT_EQ_INT(ops->series_query(s, RUN_ID, dump_series, &c), 0);
    ASSERT_EQ_INT(ops->event_names_query(s, RUN_ID, dump_event_name, o), 0);
    ASSERT_EQ_INT(ops->processes_query(s, RUN_ID, dump_process, o), 0);
    ASSERT_EQ_INT(ops->event_blocks_query(s, RUN_ID, INT64_MIN, INT64_MAX, dump_event_block, o), 0);
    strbuf_adds(o, "event range:\n");
    ASSERT_EQ_INT(ops->event_blocks_query(s, RUN_ID, T0 + SEC, T0 + SEC + 1, dump_event_block, o),
                  0);
    ASSERT_EQ_INT(ops->py_blocks_query(s, RUN_ID, INT64_MIN, INT64_MAX, dump_py_block, o), 0);
    strbuf_adds(o, "py range:\n");
    ASSERT_EQ_INT(ops->py_blocks_query(s, RUN_ID, T0 + SEC, T0 + SEC + 1, dump_py_block, o), 0);
    ASSERT_EQ_INT(ops->rule_config_query(s, RUN_ID, dump_rule_config, o), 0);
    ASSERT_EQ_INT(ops->rule_results_query(s, RUN_ID, dump_rule_result, o), 0);
    ASSERT_EQ_INT(ops->findings_query(s, RUN_ID, dump_finding, o), 0);
    ASSERT_EQ_INT(ops->run_texts_query(s, RUN_ID, dump_text, o), 0);
    ASSERT(!strbuf_failed(o));
}

/* The two dumps are the same; the first line that differs when not. */
static void expect_same(const char *what, struct store *a, struct store *b)
{
    struct strbuf x, y;
    strbuf_init(&x);
    strbuf_init(&y);
    dump_run(a, &x);
    dump_run(b, &y);
    if (x.len != y.len || memcmp(x.buf, y.buf, x.len) != 0) {
        size_t i = 0, line = 0;
        while (i < x.len && i < y.len && x.buf[i] == y.buf[i])
            if (x.buf[i++] == '\n')
                line = i;
        TEST_FAIL("%s: the runs differ from\n    %.200s\n vs %.200s", what, x.buf + line,
                  y.buf + line);
    }
    strbuf_release(&x);
    strbuf_release(&y);
}

/* ---- copying ------------------------------------------------------------------------ */

/* The run as from's runs_query gives it. */
static void source_record(struct store *from, struct run_record *r)
{
    ASSERT_EQ_INT(store_resolve_run(from, RUN_ID, r), 0);
}

/* Copy the run into to (plan not NULL), or merge it (into *merged). */
static void move_ok(struct store *from, struct store *to, struct store_copy_plan *plan,
                    struct store_merge_tally *merged)
{
    struct run_record r;
    struct strbuf err;
    strbuf_init(&err);
    source_record(from, &r);
    int rc = plan ? store_copy_run(from, to, &r, plan, &err)
                  : store_copy_merge(from, to, &r, merged, &err);
    if (rc < 0)
        TEST_FAIL("%s: %s", plan ? "store_copy_run" : "store_copy_merge", err.buf);
    run_record_release(&r);
    strbuf_release(&err);
}

/* Copy the run; its verdict. */
static enum store_copy_verdict copy_ok(struct store *from, struct store *to)
{
    struct store_copy_plan p;
    move_ok(from, to, &p, NULL);
    return p.verdict;
}

static int64_t count_runs_rows(const struct store_rig *rig, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    return store_rig_int(rig, sql);
}

/* Three stores for a case: a and c SQLite files, b the rig's store. */
struct trio {
    struct store_rig rig;
    struct store *a, *b, *c;
};

static void trio_open(struct trio *t)
{
    store_rig_init(&t->rig);
    t->a = open_file(&t->rig, "a.db");
    t->b = open_ok(t->rig.db);
    t->c = open_file(&t->rig, "c.db");
}

static void trio_close(struct trio *t)
{
    store_close(t->a);
    store_close(t->b);
    store_close(t->c);
    store_rig_release(&t->rig);
}

TEST(copy_keeps_every_row)
{
    struct trio t;
    trio_open(&t);
    populate(t.a, 4, 1);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    ASSERT_EQ_INT(copy_ok(t.b, t.c), STORE_COPY_NEW);
    expect_same("a and b", t.a, t.b);
    expect_same("a and c", t.a, t.c);
    /* the tally counted what is there */
    struct run_record r;
    struct store_copy_tally n;
    source_record(t.b, &r);
    ASSERT_EQ_INT(store_copy_tally(t.b, &r, &n), 0);
    run_record_release(&r);
    ASSERT_EQ_INT(n.series, 3);
    ASSERT_EQ_INT(n.blocks, 12);
    ASSERT_EQ_INT(n.event_blocks, 7);
    ASSERT_EQ_INT(n.py_blocks, 8);
    ASSERT_EQ_INT(n.py_bytes, 8 * 48 - (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7));
    ASSERT_EQ_INT(n.findings, 3);
    ASSERT_EQ_INT(n.texts, 2);
    trio_close(&t);
}

TEST(second_copy_changes_nothing)
{
    struct trio t;
    trio_open(&t);
    populate(t.a, 3, 1);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_SAME);
    ASSERT_EQ_INT(copy_ok(t.b, t.a), STORE_COPY_SAME);
    expect_same("after two copies", t.a, t.b);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "runs"), 1);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "series"), 3);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "blocks"), 9);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "findings"), 3);
    trio_close(&t);
}

/* A pushed spool: the destination holds the run as it was while it
 * recorded; the source's whole run replaces it, and the old copy never
 * replaces a newer one. */
TEST(further_source_replaces_and_older_is_kept)
{
    struct trio t; /* a: the run while it recorded; c: the whole run */
    trio_open(&t);
    populate(t.a, 2, 0);
    populate(t.c, 5, 1);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    ASSERT_EQ_INT(copy_ok(t.c, t.b), STORE_COPY_REPLACE);
    expect_same("replaced", t.c, t.b);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "series"), 3);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "blocks"), 15);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEWER);
    expect_same("kept", t.c, t.b);
    trio_close(&t);
}

/* Each side ahead in something, or different where nothing grows: not
 * copied, and said so. */
TEST(diverged_copies_are_left_alone)
{
    struct trio t;
    trio_open(&t);
    populate(t.a, 3, 1);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    struct finding_record f = {"Extra", "low", "node", T0, T0 + SEC, "x", NULL, NULL};
    ASSERT_EQ_INT(t.b->ops->finding_insert(t.b, RUN_ID, 99, &f), 0);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_DIVERGED);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "findings"), 4);
    trio_close(&t);
}

/* A dry run's verdict, with nothing written. */
TEST(decide_writes_nothing)
{
    struct trio t;
    trio_open(&t);
    populate(t.a, 3, 1);
    struct run_record r;
    struct store_copy_plan p;
    struct strbuf err;
    strbuf_init(&err);
    source_record(t.a, &r);
    ASSERT_EQ_INT(store_copy_decide(t.a, t.b, &r, &p, &err), 0);
    ASSERT_EQ_INT(p.verdict, STORE_COPY_NEW);
    ASSERT_EQ_INT(p.from.blocks, 9);
    ASSERT_EQ_INT(p.from.block_bytes, 3 * (300 + 299 + 298));
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "runs"), 0);
    /* a destination not made yet */
    ASSERT_EQ_INT(store_copy_decide(t.a, NULL, &r, &p, &err), 0);
    ASSERT_EQ_INT(p.verdict, STORE_COPY_NEW);
    run_record_release(&r);
    strbuf_release(&err);
    trio_close(&t);
}

/* ---- merging a part of a run into another ------------------------------------------ */

/* The database's part: blocks 0-2 of each series, the last an open
 * block's snapshot, while the run was recording. The spool's: blocks 2-4,
 * the late series, the end of the run. Together: the whole run. */
static const struct part db_part = {0, 3, 0, 1, 0};
static const struct part spool_part = {2, 5, 1, 0, 1};
static const struct part whole_run = {0, 5, 1, 0, 1};

/* Merge from's run into to; what it wrote. */
static struct store_merge_tally merge_ok(struct store *from, struct store *to)
{
    struct store_merge_tally t;
    move_ok(from, to, NULL, &t);
    return t;
}

TEST(merge_adds_the_missing_part)
{
    struct trio t; /* a: the whole run; b: the database's part; c: the spool's */
    trio_open(&t);
    populate_part(t.a, &whole_run);
    populate_part(t.b, &db_part);
    populate_part(t.c, &spool_part);
    struct store_merge_tally m = merge_ok(t.c, t.b);
    expect_same("the database after the merge", t.a, t.b);
    ASSERT_EQ_INT(m.run, 1);     /* finished, further on */
    ASSERT_EQ_INT(m.series, 1);  /* the late one */
    ASSERT_EQ_INT(m.blocks, 11); /* 3 series: the snapshot 2 replaced, 3, 4; the late one: 3, 4 */
    ASSERT_EQ_INT(m.event_blocks, 2); /* 6, 7: 2-5 were there */
    ASSERT_EQ_INT(m.py_blocks, 4);    /* seqs 6-9: 0-5 were there */
    ASSERT_EQ_INT(m.event_names + m.processes, 0);
    ASSERT_EQ_INT(m.texts, 1); /* stdout: more bytes */
    ASSERT_EQ_INT(m.rules, 1); /* evaluated later */
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "blocks"), 17);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "event_blocks"), 8);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "py_blocks"), 10);
    trio_close(&t);
}

/* A second merge, and one of an older part, write nothing. */
TEST(merge_twice_writes_nothing)
{
    struct trio t;
    trio_open(&t);
    populate_part(t.a, &db_part);
    populate_part(t.b, &db_part);
    populate_part(t.c, &spool_part);
    merge_ok(t.c, t.b);
    struct store_merge_tally m = merge_ok(t.c, t.b);
    ASSERT(!store_merge_changed(&m));
    m = merge_ok(t.a, t.b); /* the database's part as it was: older in every row */
    ASSERT(!store_merge_changed(&m));
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "runs"), 1);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "series"), 4);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "blocks"), 17);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "event_blocks"), 8);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "py_blocks"), 10);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "findings"), 3);
    trio_close(&t);
}

/* A destination without the run gets it whole, as a copy would. */
TEST(merge_into_a_store_without_the_run)
{
    struct trio t;
    trio_open(&t);
    populate_part(t.c, &spool_part);
    struct store_merge_tally m = merge_ok(t.c, t.b);
    expect_same("merged into an empty store", t.c, t.b);
    ASSERT_EQ_INT(m.run, 1);
    ASSERT_EQ_INT(m.series, 4);
    ASSERT_EQ_INT(m.event_names, 2);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "run_attrs"), 3);
    trio_close(&t);
}

/* ---- a destination that fails at the Nth block -------------------------------------- */

static const struct store_ops *real_ops;
static struct store_ops failing_ops;
static int blocks_left;

static int failing_block_upsert(struct store *s, int64_t series_id, const struct block_stats *st,
                                const void *data, size_t len)
{
    if (--blocks_left < 0) {
        strbuf_reset(&s->err);
        strbuf_adds(&s->err, "disk on fire");
        return -STROBE_EFULL;
    }
    return real_ops->block_upsert(s, series_id, st, data, len);
}

/* s's block writes fail after n. */
static void fail_after(struct store *s, int n)
{
    real_ops = s->ops;
    failing_ops = *s->ops;
    failing_ops.block_upsert = failing_block_upsert;
    s->ops = &failing_ops;
    blocks_left = n;
}

static void copy_fails(struct store *from, struct store *to)
{
    struct run_record r;
    struct store_copy_plan p;
    struct strbuf err;
    strbuf_init(&err);
    source_record(from, &r);
    ASSERT_EQ_INT(store_copy_run(from, to, &r, &p, &err), -STROBE_EFULL);
    if (!strstr(err.buf, "cannot write run " RUN_ID " to '") || !strstr(err.buf, "disk on fire"))
        TEST_FAIL("the error: %s", err.buf);
    run_record_release(&r);
    strbuf_release(&err);
}

TEST(failed_copy_leaves_nothing)
{
    struct trio t;
    trio_open(&t);
    populate(t.a, 4, 1);
    fail_after(t.b, 7);
    copy_fails(t.a, t.b);
    t.b->ops = real_ops;
    static const char *const tables[] = {"runs",        "run_attrs", "series",       "blocks",
                                         "event_names", "processes", "event_blocks", "rule_results",
                                         "findings",    "py_blocks"};
    for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
        if (count_runs_rows(&t.rig, tables[i]) != 0)
            TEST_FAIL("rows left in %s", tables[i]);
    /* and the store takes the copy after */
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    expect_same("copied after a failure", t.a, t.b);
    trio_close(&t);
}

/* A merge that fails leaves the destination's part as it was. */
TEST(failed_merge_leaves_the_part_there)
{
    struct trio t;
    trio_open(&t);
    populate_part(t.a, &db_part);
    populate_part(t.b, &db_part);
    populate_part(t.c, &spool_part);
    fail_after(t.b, 4);
    struct run_record r;
    struct store_merge_tally m;
    struct strbuf err;
    strbuf_init(&err);
    source_record(t.c, &r);
    ASSERT_EQ_INT(store_copy_merge(t.c, t.b, &r, &m, &err), -STROBE_EFULL);
    ASSERT(strstr(err.buf, "cannot write run " RUN_ID " to '") && strstr(err.buf, "disk on fire"));
    ASSERT(!store_merge_changed(&m));
    t.b->ops = real_ops;
    expect_same("the part there", t.a, t.b);
    m = merge_ok(t.c, t.b); /* and the next one goes through */
    ASSERT_EQ_INT(m.blocks, 11);
    run_record_release(&r);
    strbuf_release(&err);
    trio_close(&t);
}

/* A replacement that fails keeps the old copy, whole. */
TEST(failed_replace_keeps_the_old_copy)
{
    struct trio t; /* a: the run while it recorded; c: the whole run */
    trio_open(&t);
    populate(t.a, 2, 0);
    populate(t.c, 5, 1);
    ASSERT_EQ_INT(copy_ok(t.a, t.b), STORE_COPY_NEW);
    fail_after(t.b, 9);
    copy_fails(t.c, t.b);
    t.b->ops = real_ops;
    expect_same("the old copy", t.a, t.b);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "runs"), 1);
    ASSERT_EQ_INT(count_runs_rows(&t.rig, "blocks"), 6);
    trio_close(&t);
}

TEST_CASES_ONCE(decide_writes_nothing)
TEST_CASES_BOTH(copy_keeps_every_row, second_copy_changes_nothing,
                further_source_replaces_and_older_is_kept, diverged_copies_are_left_alone,
                failed_copy_leaves_nothing, failed_replace_keeps_the_old_copy,
                merge_adds_the_missing_part, merge_twice_writes_nothing,
                merge_into_a_store_without_the_run, failed_merge_leaves_the_part_there)
STORE_TEST_MAIN()
