/*
 * The store through struct store_ops (store/store.h): creating, reopening
 * and refusing files, the run catalog with every field, blocks and their
 * summaries, resolving run references, deleting, two writers on one store,
 * and reading points back (store/points.h). The cases of TEST_CASES_BOTH
 * run on SQLite and again on PostgreSQL (store_rig.h); those of
 * TEST_CASES_ONCE are SQLite's own.
 */
#include "common/array.h"
#include "store/store.h"

#include <errno.h>
#include <float.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/utsname.h>

#include "common/clock.h"
#include "common/err.h"
#include "store/points.h"
#include "store/schema.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define HOSTILE_SQL "'; DROP TABLE runs; --"
#define HOSTILE_Q   "it's \"quoted\" \\ back`tick`"
#define HOSTILE_U   "训练-ünïcødé-🚀-\xe2\x80\xae-tab\there"

static struct store *open_ok(const char *path)
{
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(path, 0, &s, &err);
    if (rc < 0)
        TEST_FAIL("store_open('%s') = %d: %s", path, rc, err.buf);
    strbuf_release(&err);
    return s;
}

static void raw_text(const char *path, const char *sql, char *out, size_t cap)
{
    sqlite3 *db;
    ASSERT_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    ASSERT_EQ_INT(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    const unsigned char *t = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_text(q, 0) : NULL;
    snprintf(out, cap, "%s", t ? (const char *)t : "");
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        TEST_FAIL("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* Tables, indexes and the like in the store: SQLite's schema table, or
 * PostgreSQL's relations outside its own schemas. */
static int64_t schema_objects(const struct store_rig *r)
{
    return store_rig_int(r, r->pg ? "SELECT count(*) FROM pg_class c JOIN pg_namespace n"
                                    " ON n.oid = c.relnamespace WHERE n.nspname NOT IN"
                                    " ('pg_catalog', 'information_schema', 'pg_toast')"
                                  : "SELECT count(*) FROM sqlite_schema");
}

/* Whether the store has a table called runs. */
static int64_t has_runs_table(const struct store_rig *r)
{
    return store_rig_int(r, r->pg ? "SELECT count(*) FROM pg_tables WHERE tablename = 'runs'"
                                  : "SELECT count(*) FROM sqlite_schema WHERE name='runs'");
}

/* A run with the given id, name and start; every other string NULL. */
static void make_run(struct run_record *r, const char *id, const char *name, int64_t start_ns)
{
    run_record_init(r);
    snprintf(r->id, sizeof(r->id), "%s", id);
    r->name = strdup(name);
    r->command_json = strdup("[\"python\",\"train.py\"]");
    r->start_ns = start_ns;
    snprintf(r->status, sizeof(r->status), RUN_RUNNING);
}

static void insert_run(struct store *s, const char *id, const char *name, int64_t start_ns)
{
    struct run_record r;
    make_run(&r, id, name, start_ns);
    ASSERT_EQ_INT(s->ops->run_insert(s, &r), 0);
    run_record_release(&r);
}

/* ---- opening ------------------------------------------------------------------ */

/* RUN reference ref resolves to the run with this id. */
static void assert_resolves_to(struct store *s, const char *ref, const char *id)
{
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, ref, &out), 0);
    ASSERT_EQ_STR(out.id, id);
    run_record_release(&out);
}

TEST(create_sets_version_and_wal)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    ASSERT_EQ_STR(s->ops->name, "sqlite");
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), SCHEMA_VERSION);
    char mode[32];
    raw_text(r.db, "PRAGMA journal_mode", mode, sizeof(mode));
    ASSERT_EQ_STR(mode, "wal");
    ASSERT_EQ_INT(store_rig_int(&r,
                                "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name IN"
                                " ('runs','run_attrs','series','blocks')"),
                  4);
    store_rig_release(&r);
}

/* A file system without shared memory for the -shm file (some network
 * ones): SQLite's own files behind io methods of version 1, which have no
 * xShm* methods, so that "PRAGMA journal_mode=WAL" keeps the old mode. */
static sqlite3_vfs *real_vfs;
static sqlite3_io_methods noshm_methods;

static int noshm_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                      int *out_flags)
{
    (void)vfs;
    int rc = real_vfs->xOpen(real_vfs, name, f, flags, out_flags);
    if (rc == SQLITE_OK && f->pMethods) {
        noshm_methods = *f->pMethods;
        noshm_methods.iVersion = 1;
        f->pMethods = &noshm_methods;
    }
    return rc;
}

TEST(store_without_wal_is_refused)
{
    struct store_rig r;
    store_rig_init(&r);
    static sqlite3_vfs noshm;
    real_vfs = sqlite3_vfs_find(NULL);
    noshm = *real_vfs;
    noshm.zName = "noshm";
    noshm.xOpen = noshm_open;
    ASSERT_EQ_INT(sqlite3_vfs_register(&noshm, 1), SQLITE_OK);
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    ASSERT(store_open(r.db, 0, &s, &err) < 0);
    ASSERT(strstr(err.buf, "cannot switch it to WAL mode (journal mode stays 'delete')") != NULL);
    strbuf_release(&err);
    sqlite3_vfs_unregister(&noshm);
    store_rig_release(&r);
}

TEST(reopen_is_idempotent)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    insert_run(s, "00000000000000aa", "first", 1);
    store_close(s);
    int64_t objects = schema_objects(&r);
    for (int i = 0; i < 3; i++) {
        s = open_ok(r.db);
        store_close(s);
    }
    if (!r.pg)
        ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), SCHEMA_VERSION);
    ASSERT_EQ_INT(schema_objects(&r), objects);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM runs"), 1);
    /* readonly opens a store that exists */
    ASSERT_EQ_INT(store_open(r.db, 1, &s, NULL), 0);
    store_close(s);
    store_rig_release(&r);
}

TEST(foreign_database_is_refused)
{
    struct store_rig r;
    store_rig_init(&r);
    raw_exec(r.db, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('mine')");
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(store_open(r.db, 0, &s, &err), -STROBE_ECORRUPT);
    ASSERT(strstr(err.buf, "not a strobe store"));
    ASSERT(strstr(err.buf, r.db));
    strbuf_release(&err);
    /* and left as it was */
    ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), 0);
    ASSERT_EQ_INT(has_runs_table(&r), 0);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM notes"), 1);
    ASSERT_EQ_INT(store_open(r.db, 1, &s, NULL), -STROBE_ECORRUPT);
    store_rig_release(&r);
}

TEST(non_database_file_is_refused)
{
    struct store_rig r;
    store_rig_init(&r);
    char text[4096];
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = "not a database, just some notes\n"[i % 32];
    fixture_write(r.db, text, sizeof(text));
    struct store *s = NULL;
    ASSERT_EQ_INT(store_open(r.db, 0, &s, NULL), -STROBE_ECORRUPT);
    ASSERT_EQ_INT(store_open(r.db, 1, &s, NULL), -STROBE_ECORRUPT);
    size_t len;
    char *after = fixture_load(r.db, &len);
    ASSERT_EQ_INT(len, sizeof(text));
    ASSERT(memcmp(after, text, len) == 0);
    free(after);
    /* a readonly open of nothing does not create it */
    char missing[700];
    fixture_join(missing, sizeof(missing), r.dir, "missing.db");
    ASSERT_EQ_INT(store_open(missing, 1, &s, NULL), -STROBE_ENOTFOUND);
    ASSERT(access(missing, F_OK) < 0);
    store_rig_release(&r);
}

TEST(newer_schema_is_refused)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    store_close(s);
    raw_exec(r.db, "PRAGMA user_version = 99");
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(store_open(r.db, 0, &s, &err), -STROBE_ESCHEMA);
    ASSERT(strstr(err.buf, "99"));
    strbuf_release(&err);
    ASSERT_EQ_INT(store_open(r.db, 1, &s, NULL), -STROBE_ESCHEMA);
    ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), 99);
    store_rig_release(&r);
}

/* ---- runs ------------------------------------------------------------------------ */

static void expect_str(const char *got, const char *want, const char *field)
{
    if (!want && !got)
        return;
    if (!want || !got || strcmp(got, want) != 0)
        TEST_FAIL("%s: \"%s\" != \"%s\"", field, got ? got : "(null)", want ? want : "(null)");
}

static void expect_kv(const struct kv_list *got, const struct kv_list *want, const char *what)
{
    if (got->n != want->n)
        TEST_FAIL("%s: %zu entries, want %zu", what, got->n, want->n);
    for (size_t i = 0; i < want->n; i++)
        expect_str(kv_list_get(got, want->items[i].key), want->items[i].value, what);
}

static void expect_run(const struct run_record *got, const struct run_record *want)
{
    ASSERT_EQ_STR(got->id, want->id);
    expect_str(got->name, want->name, "name");
    expect_str(got->experiment, want->experiment, "experiment");
    expect_str(got->command_json, want->command_json, "command");
    expect_str(got->cwd, want->cwd, "cwd");
    expect_str(got->user, want->user, "user");
    expect_str(got->host, want->host, "host");
    expect_str(got->kernel, want->kernel, "kernel");
    expect_str(got->cpu_model, want->cpu_model, "cpu_model");
    ASSERT_EQ_INT(got->cpu_count, want->cpu_count);
    ASSERT_EQ_INT(got->mem_total_bytes, want->mem_total_bytes);
    ASSERT_EQ_INT(got->start_ns, want->start_ns);
    ASSERT_EQ_INT(got->end_ns, want->end_ns);
    ASSERT_EQ_INT(got->last_ns, want->last_ns);
    ASSERT_EQ_INT(got->exit_code, want->exit_code);
    ASSERT_EQ_INT(got->signal, want->signal);
    ASSERT_EQ_STR(got->status, want->status);
    expect_str(got->git_commit, want->git_commit, "git_commit");
    ASSERT_EQ_INT(got->git_dirty, want->git_dirty);
    expect_str(got->python_version, want->python_version, "python_version");
    expect_str(got->torch_version, want->torch_version, "torch_version");
    ASSERT_EQ_INT(got->interval_ns, want->interval_ns);
    ASSERT_EQ_INT(got->samples, want->samples);
    ASSERT_EQ_INT(got->points, want->points);
    ASSERT_EQ_INT(got->missed, want->missed);
    ASSERT_EQ_INT(got->dropped, want->dropped);
    ASSERT_EQ_INT(got->recorder_pid, want->recorder_pid);
    ASSERT_EQ_STR(got->recorder.boot_id, want->recorder.boot_id);
    ASSERT_EQ_INT(got->recorder.pid_ns, want->recorder.pid_ns);
    ASSERT_EQ_INT(got->recorder.time_ns, want->recorder.time_ns);
    ASSERT_EQ_INT(got->recorder.start_ticks, want->recorder.start_ticks);
    expect_str(got->strobe_version, want->strobe_version, "strobe_version");
    expect_str(got->error, want->error, "error");
    expect_kv(&got->tags, &want->tags, "tags");
    expect_kv(&got->params, &want->params, "params");
    expect_kv(&got->env, &want->env, "env");
}

struct runs {
    struct run_record r[8];
    int n;
};

static int collect_run(const struct run_record *r, void *arg)
{
    struct runs *l = arg;
    if (l->n < 8)
        ASSERT_EQ_INT(run_record_copy(&l->r[l->n], r), 0);
    l->n++;
    return 0;
}

static void runs_release(struct runs *l)
{
    for (int i = 0; i < l->n && i < 8; i++)
        run_record_release(&l->r[i]);
    l->n = 0;
}

TEST(run_roundtrip_every_field)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    char long_name[201];
    memset(long_name, 'n', 200);
    long_name[200] = '\0';
    memcpy(long_name, HOSTILE_SQL, strlen(HOSTILE_SQL));

    struct run_record w;
    run_record_init(&w);
    snprintf(w.id, sizeof(w.id), "c0ffee00deadbeef");
    w.name = strdup(long_name);
    w.experiment = strdup(HOSTILE_U);
    w.command_json = strdup("[\"python\",\"-c\",\"print('x'); --\"]");
    w.cwd = strdup("/home/u/it's here");
    w.user = strdup("ü");
    w.host = strdup(HOSTILE_Q);
    w.kernel = strdup("6.8.0-45-generic");
    w.cpu_model = strdup("AMD EPYC 7B13 64-Core Processor");
    w.cpu_count = 2;
    w.mem_total_bytes = INT64_C(8192000000);
    w.start_ns = INT64_C(1717000000123456789);
    w.end_ns = 0;
    w.last_ns = 0;
    w.exit_code = -1;
    w.signal = 0;
    snprintf(w.status, sizeof(w.status), RUN_RUNNING);
    w.git_commit = strdup("0123456789abcdef0123456789abcdef01234567");
    w.git_dirty = 1;
    w.python_version = strdup("3.12.3");
    w.torch_version = strdup("2.4.0+cu121");
    w.interval_ns = 100 * NS_PER_MS;
    w.recorder_pid = 4242;
    w.recorder = (struct procid){"feb330a5-42a6-4b6e-b519-3a67ed594b42", INT64_C(4026532178),
                                 INT64_C(4026531834), 0}; /* started at tick 0: not unknown */
    w.strobe_version = strdup("0.1.0");
    w.error = NULL;
    ASSERT_EQ_INT(kv_list_add(&w.tags, "team", HOSTILE_SQL), 0);
    ASSERT_EQ_INT(kv_list_add(&w.tags, HOSTILE_U, "v"), 0);
    ASSERT_EQ_INT(kv_list_add(&w.params, "lr", "3e-4"), 0);
    ASSERT_EQ_INT(kv_list_add(&w.params, "batch size", HOSTILE_Q), 0);
    ASSERT_EQ_INT(kv_list_add(&w.env, "CUDA_VISIBLE_DEVICES", "0,1"), 0);
    ASSERT_EQ_INT(kv_list_add(&w.env, long_name, ""), 0);
    ASSERT_EQ_INT(s->ops->run_insert(s, &w), 0);

    struct runs got = {0};
    ASSERT_EQ_INT(s->ops->runs_query(s, NULL, collect_run, &got), 0);
    ASSERT_EQ_INT(got.n, 1);
    expect_run(&got.r[0], &w);
    runs_release(&got);

    /* the fields that change during a run */
    w.end_ns = w.start_ns + 90 * NS_PER_S;
    w.last_ns = w.end_ns - 50 * NS_PER_MS;
    w.exit_code = -1;
    w.signal = 9;
    snprintf(w.status, sizeof(w.status), RUN_KILLED);
    w.samples = 900;
    w.points = 123456;
    w.missed = 3;
    w.dropped = 77;
    w.error = strdup("killed by " HOSTILE_SQL);
    ASSERT_EQ_INT(s->ops->run_update(s, &w), 0);
    ASSERT_EQ_INT(s->ops->runs_query(s, NULL, collect_run, &got), 0);
    ASSERT_EQ_INT(got.n, 1);
    expect_run(&got.r[0], &w);
    runs_release(&got);

    w.exit_code = 0;
    w.signal = 0;
    snprintf(w.status, sizeof(w.status), RUN_FINISHED);
    free(w.error);
    w.error = NULL;
    ASSERT_EQ_INT(s->ops->run_update(s, &w), 0);
    /* by experiment: only runs of that experiment */
    insert_run(s, "1111111111111111", "other", 5);
    ASSERT_EQ_INT(s->ops->runs_query(s, HOSTILE_U, collect_run, &got), 0);
    ASSERT_EQ_INT(got.n, 1);
    expect_run(&got.r[0], &w);
    runs_release(&got);
    ASSERT_EQ_INT(s->ops->runs_query(s, NULL, collect_run, &got), 0);
    ASSERT_EQ_INT(got.n, 2);
    runs_release(&got);

    /* the hostile strings were data, not SQL */
    store_close(s);
    ASSERT_EQ_INT(has_runs_table(&r), 1);
    run_record_release(&w);
    store_rig_release(&r);
}

TEST(run_id_is_unique)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    insert_run(s, "abcdabcdabcdabcd", "a", 1);
    struct run_record dup;
    make_run(&dup, "abcdabcdabcdabcd", "b", 2);
    ASSERT(s->ops->run_insert(s, &dup) < 0);
    run_record_release(&dup);
    /* a series of a run that does not exist is refused (foreign keys on) */
    int64_t id;
    ASSERT(s->ops->series_insert(s, "ffffffffffffffff", "x", "", "1", NULL, &id) < 0);
    store_close(s);
    store_rig_release(&r);
}

/* ---- series and blocks -------------------------------------------------------------- */

struct blocks {
    struct block_stats st[8];
    uint8_t data[8][64];
    size_t len[8];
    int n;
};

static int collect_block(const struct block_record *b, void *arg)
{
    struct blocks *l = arg;
    if (l->n < 8) {
        l->st[l->n] = b->st;
        l->len[l->n] = b->len;
        if (b->len) /* an empty block's data may be NULL */
            memcpy(l->data[l->n], b->data, b->len < 64 ? b->len : 64);
    }
    l->n++;
    return 0;
}

static struct block_stats stats(int64_t start, int64_t end, uint32_t count, double min, double max,
                                double sum)
{
    struct block_stats st = {count, start, end, min, max, sum, min, max};
    return st;
}

TEST(block_upsert_replaces_same_start)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    insert_run(s, "00000000000000bb", "b", 1);
    int64_t sid;
    ASSERT_EQ_INT(
        s->ops->series_insert(s, "00000000000000bb", "mem.used_bytes", "", "bytes", NULL, &sid), 0);
    /* an open block grows: the same start is written three times */
    struct block_stats st = stats(100, 200, 2, 1.0, 2.0, 3.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, "\x01\x02", 2), 0);
    st = stats(100, 300, 3, 1.0, 3.0, 6.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, "\x01\x02\x03", 3), 0);
    st = stats(100, 400, 4, 0.5, 3.0, 6.5);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, "\x01\x02\x03\x04", 4), 0);
    /* then a new block after it, and one before (time order is by start) */
    st = stats(500, 600, 1, 9.0, 9.0, 9.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, "\x09", 1), 0);
    st = stats(10, 20, 1, -1.0, -1.0, -1.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &st, "\x00", 1), 0);
    struct blocks b = {0};
    ASSERT_EQ_INT(s->ops->blocks_query(s, sid, collect_block, &b), 0);
    ASSERT_EQ_INT(b.n, 3);
    ASSERT_EQ_INT(b.st[0].start_ns, 10);
    ASSERT_EQ_INT(b.st[1].start_ns, 100);
    ASSERT_EQ_INT(b.st[1].end_ns, 400);
    ASSERT_EQ_INT(b.st[1].count, 4);
    ASSERT_EQ_U64(dbits(b.st[1].min), dbits(0.5));
    ASSERT_EQ_U64(dbits(b.st[1].sum), dbits(6.5));
    ASSERT_EQ_U64(dbits(b.st[1].first), dbits(0.5));
    ASSERT_EQ_U64(dbits(b.st[1].last), dbits(3.0));
    ASSERT_EQ_INT(b.len[1], 4);
    ASSERT(memcmp(b.data[1], "\x01\x02\x03\x04", 4) == 0);
    ASSERT_EQ_INT(b.st[2].start_ns, 500);
    /* committed: another connection sees them while this one is open */
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM blocks"), 3);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM blocks"), 3);
    store_rig_release(&r);
}

static int count_block(const struct block_record *b, void *arg)
{
    int64_t *seen = arg;
    /* the i-th of blocks_put_matches_upserts' many blocks starts at 1000 i,
     * holds i + 1 points, and its data is i in one byte */
    int64_t i = b->st.start_ns / 1000;
    if (i != *seen || b->st.count != (uint32_t)(i + 1) || b->len != 1 || b->data[0] != (uint8_t)i)
        return -EINVAL;
    (*seen)++;
    return 0;
}

/* blocks_put is block_upsert of each block in order: a later block of the
 * same start wins, NaN summaries read back as NaN, empty data is kept, and
 * more blocks than one statement takes (512 in PostgreSQL) all land. */
TEST(blocks_put_matches_upserts)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    const char *run = "00000000000000bc";
    insert_run(s, run, "b", 1);
    int64_t sid, nan_sid, many_sid;
    ASSERT_EQ_INT(s->ops->series_insert(s, run, "gpu.util", "gpu=0", "%", NULL, &sid), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, run, "gpu.util", "gpu=1", "%", NULL, &nan_sid), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, run, "gpu.util", "gpu=2", "%", NULL, &many_sid), 0);
    /* a repeated start: PostgreSQL writes these one at a time */
    struct block_put puts[3] = {
        {sid, stats(100, 200, 2, 1.0, 2.0, 3.0), "\x01\x02", 2},
        {sid, stats(100, 300, 3, 1.0, 3.0, 6.0), "\x01\x02\x03", 3},
        {sid, stats(400, 500, 1, 7.0, 7.0, 7.0), "\x07", 1},
    };
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    ASSERT_EQ_INT(s->ops->blocks_put(s, puts, 3), 0);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
    struct blocks b = {0};
    ASSERT_EQ_INT(s->ops->blocks_query(s, sid, collect_block, &b), 0);
    ASSERT_EQ_INT(b.n, 2);
    ASSERT_EQ_INT(b.st[0].end_ns, 300);
    ASSERT_EQ_INT(b.st[0].count, 3);
    ASSERT_EQ_INT(b.len[0], 3);
    ASSERT(memcmp(b.data[0], "\x01\x02\x03", 3) == 0);
    ASSERT_EQ_U64(dbits(b.st[1].sum), dbits(7.0));
    /* 1300 blocks and a NaN one: three statements of arrays in PostgreSQL */
    enum { MANY = 1300 };
    static struct block_put many[MANY + 1];
    static uint8_t bytes[MANY];
    for (int i = 0; i < MANY; i++) {
        bytes[i] = (uint8_t)i;
        many[i] = (struct block_put){
            many_sid, stats(1000LL * i, 1000LL * i + 1, (uint32_t)i + 1, i, i, i), &bytes[i], 1};
    }
    many[MANY] = (struct block_put){nan_sid, stats(100, 150, 1, NAN, NAN, 0.0), "", 0};
    many[MANY].st.last = 0.5;
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    ASSERT_EQ_INT(s->ops->blocks_put(s, many, MANY + 1), 0);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
    struct blocks o = {0};
    ASSERT_EQ_INT(s->ops->blocks_query(s, nan_sid, collect_block, &o), 0);
    ASSERT_EQ_INT(o.n, 1);
    ASSERT(isnan(o.st[0].min) && isnan(o.st[0].max) && isnan(o.st[0].first));
    ASSERT_EQ_U64(dbits(o.st[0].last), dbits(0.5));
    ASSERT_EQ_INT(o.len[0], 0);
    int64_t seen = 0;
    ASSERT_EQ_INT(s->ops->blocks_query(s, many_sid, count_block, &seen), 0);
    ASSERT_EQ_INT(seen, MANY);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM blocks"), 2 + 1 + MANY);
    store_close(s);
    store_rig_release(&r);
}

struct summaries {
    struct series_record r[8];
    char name[8][256];
    char labels[8][256];
    char meta[8][256];
    int n;
};

static int collect_series(const struct series_record *s, void *arg)
{
    struct summaries *l = arg;
    if (l->n < 8) {
        l->r[l->n] = *s;
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", s->name);
        snprintf(l->labels[l->n], sizeof(l->labels[0]), "%s", s->labels);
        snprintf(l->meta[l->n], sizeof(l->meta[0]), "%s", s->meta ? s->meta : "(null)");
    }
    l->n++;
    return 0;
}

TEST(series_query_summaries)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    const char *run = "00000000000000cc";
    insert_run(s, run, "c", 1);
    insert_run(s, "00000000000000dd", "d", 2);
    int64_t a, b, c, other;
    char labels[201];
    memset(labels, 'l', 200);
    labels[200] = '\0';
    ASSERT_EQ_INT(s->ops->series_insert(s, run, "z.last", "", "1", NULL, &a), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, run, HOSTILE_SQL, labels, "pct", HOSTILE_Q, &b), 0);
    ASSERT_EQ_INT(
        s->ops->series_insert(s, run, "proc.cpu", "pid=1", "pct", "{\"comm\":\"a) b\"}", &c), 0);
    ASSERT_EQ_INT(
        s->ops->series_insert(s, "00000000000000dd", "proc.cpu", "pid=1", "pct", NULL, &other), 0);
    /* the same name and labels again in one run: refused */
    int64_t dup;
    ASSERT(s->ops->series_insert(s, run, "proc.cpu", "pid=1", "pct", NULL, &dup) < 0);
    /* c: two blocks, and an all-NaN one whose NULL summaries must not count */
    struct block_stats st = stats(1000, 2000, 10, 1.5, 9.0, 50.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, c, &st, "0123456789", 10), 0);
    st = stats(3000, 4000, 5, -2.0, 4.0, 7.25);
    ASSERT_EQ_INT(s->ops->block_upsert(s, c, &st, "01234", 5), 0);
    st = stats(5000, 6000, 2, NAN, NAN, 0.0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, c, &st, "xyz", 3), 0);
    st = stats(1, 2, 100, 1e9, 1e9, 1e11); /* the other run's: not counted here */
    ASSERT_EQ_INT(s->ops->block_upsert(s, other, &st, "other", 5), 0);
    ASSERT_EQ_INT(s->ops->series_update_meta(s, a, "{\"v\":2}"), 0);

    struct summaries l = {0};
    ASSERT_EQ_INT(s->ops->series_query(s, run, collect_series, &l), 0);
    ASSERT_EQ_INT(l.n, 3);
    /* name order: "'; DROP..." < "proc.cpu" < "z.last" */
    ASSERT_EQ_STR(l.name[0], HOSTILE_SQL);
    ASSERT_EQ_STR(l.labels[0], labels);
    ASSERT_EQ_STR(l.meta[0], HOSTILE_Q);
    ASSERT_EQ_INT(l.r[0].count, 0);
    ASSERT_EQ_INT(l.r[0].bytes, 0);
    ASSERT(isnan(l.r[0].min) && isnan(l.r[0].max));

    ASSERT_EQ_STR(l.name[1], "proc.cpu");
    ASSERT_EQ_STR(l.meta[1], "{\"comm\":\"a) b\"}");
    ASSERT_EQ_INT(l.r[1].id, c);
    ASSERT_EQ_INT(l.r[1].count, 10 + 5 + 2);
    ASSERT_EQ_U64(dbits(l.r[1].min), dbits(-2.0));
    ASSERT_EQ_U64(dbits(l.r[1].max), dbits(9.0));
    ASSERT_EQ_U64(dbits(l.r[1].sum), dbits(57.25));
    ASSERT_EQ_INT(l.r[1].start_ns, 1000);
    ASSERT_EQ_INT(l.r[1].end_ns, 6000);
    ASSERT_EQ_INT(l.r[1].bytes, 10 + 5 + 3);

    ASSERT_EQ_STR(l.name[2], "z.last");
    ASSERT_EQ_STR(l.meta[2], "{\"v\":2}");
    ASSERT_EQ_STR(l.labels[2], "");
    store_close(s);
    store_rig_release(&r);
}

/* ---- resolving and deleting ------------------------------------------------------------ */

TEST(resolve_run_references)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    insert_run(s, "0123456789abcdef", "train", 100);
    insert_run(s, "0123aaaaaaaaaaaa", "train", 300); /* newest "train" */
    insert_run(s, "fedcba9876543210", "eval", 200);
    insert_run(s, "9999999999999999", "0123", 50); /* a name that is also an id prefix */
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, "fedcba9876543210", &out), 0);
    ASSERT_EQ_STR(out.name, "eval");
    run_record_release(&out);
    assert_resolves_to(s, "fedc", "fedcba9876543210");
    assert_resolves_to(s, "0123456", "0123456789abcdef");
    assert_resolves_to(s, "0123a", "0123aaaaaaaaaaaa");
    assert_resolves_to(s, "train", "0123aaaaaaaaaaaa");
    assert_resolves_to(s, "last", "0123aaaaaaaaaaaa");
    /* "0123" names a run: the name wins over the ambiguous prefix */
    assert_resolves_to(s, "0123", "9999999999999999");
    ASSERT_EQ_INT(store_resolve_run(s, "0123a", &out), 0);
    run_record_release(&out);
    insert_run(s, "abcd000000000001", "x", 1);
    insert_run(s, "abcd000000000002", "y", 2);
    ASSERT_EQ_INT(store_resolve_run(s, "abcd", &out), -STROBE_EAMBIGUOUS);
    run_record_release(&out);
    /* a whole id beats a name: the run so named answers to its own id */
    insert_run(s, "5555555555555555", "fedcba9876543210", 20);
    assert_resolves_to(s, "fedcba9876543210", "fedcba9876543210");
    assert_resolves_to(s, "5555", "5555555555555555");
    /* "last" is the newest run before it is any name: why run refuses it */
    insert_run(s, "6666666666666666", "last", 10);
    assert_resolves_to(s, "last", "0123aaaaaaaaaaaa");
    assert_resolves_to(s, "6666", "6666666666666666");
    ASSERT_EQ_INT(store_resolve_run(s, "abc", &out), -STROBE_ENOTFOUND); /* too short */
    run_record_release(&out);
    ASSERT_EQ_INT(store_resolve_run(s, "nosuchrun", &out), -STROBE_ENOTFOUND);
    run_record_release(&out);
    ASSERT_EQ_INT(store_resolve_run(s, "", &out), -STROBE_ENOTFOUND);
    run_record_release(&out);
    ASSERT_EQ_INT(store_resolve_run(s, HOSTILE_SQL, &out), -STROBE_ENOTFOUND);
    run_record_release(&out);
    store_close(s);

    /* "last" in an empty store */
    struct store_rig e;
    store_rig_init(&e);
    s = open_ok(e.db);
    ASSERT_EQ_INT(store_resolve_run(s, "last", &out), -STROBE_ENOTFOUND);
    run_record_release(&out);
    store_close(s);
    store_rig_release(&e);
    store_rig_release(&r);
}

TEST(run_delete_removes_series_and_blocks)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    const char *gone = "00000000000000ee", *kept = "00000000000000ff";
    struct run_record w;
    make_run(&w, gone, "gone", 1);
    ASSERT_EQ_INT(kv_list_add(&w.tags, "k", "v"), 0);
    ASSERT_EQ_INT(s->ops->run_insert(s, &w), 0);
    run_record_release(&w);
    insert_run(s, kept, "kept", 2);
    int64_t g1, g2, k1;
    ASSERT_EQ_INT(s->ops->series_insert(s, gone, "a", "", "1", NULL, &g1), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, gone, "b", "", "1", NULL, &g2), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, kept, "a", "", "1", NULL, &k1), 0);
    struct block_stats st = stats(1, 2, 1, 1, 1, 1);
    ASSERT_EQ_INT(s->ops->block_upsert(s, g1, &st, "x", 1), 0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, g2, &st, "x", 1), 0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, k1, &st, "y", 1), 0);
    ASSERT_EQ_INT(s->ops->run_delete(s, gone), 0);

    struct summaries l = {0};
    ASSERT_EQ_INT(s->ops->series_query(s, gone, collect_series, &l), 0);
    ASSERT_EQ_INT(l.n, 0);
    struct blocks b = {0};
    ASSERT_EQ_INT(s->ops->blocks_query(s, g1, collect_block, &b), 0);
    ASSERT_EQ_INT(b.n, 0);
    ASSERT_EQ_INT(s->ops->series_query(s, kept, collect_series, &l), 0);
    ASSERT_EQ_INT(l.n, 1);
    ASSERT_EQ_INT(l.r[0].count, 1);
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, gone, &out), -STROBE_ENOTFOUND);
    run_record_release(&out);
    ASSERT_EQ_INT(store_resolve_run(s, "kept", &out), 0);
    run_record_release(&out);
    /* deleting what is not there is not an error */
    ASSERT_EQ_INT(s->ops->run_delete(s, gone), 0);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM blocks"), 1);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM series"), 1);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM run_attrs"), 0);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM runs"), 1);
    store_rig_release(&r);
}

/* ---- framework events ------------------------------------------------------------------- */

struct ev_names {
    int n;
    int64_t id[8];
    char name[8][256];
};

static int collect_ev_name(int64_t id, const char *name, void *arg)
{
    struct ev_names *l = arg;
    if (l->n < 8) {
        l->id[l->n] = id;
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
    }
    l->n++;
    return 0;
}

struct ev_procs {
    int n;
    struct process_record p[8];
    char comm[8][64];
    char role[8][16];
};

static int collect_ev_proc(const struct process_record *p, void *arg)
{
    struct ev_procs *l = arg;
    if (l->n < 8) {
        l->p[l->n] = *p;
        snprintf(l->comm[l->n], sizeof(l->comm[0]), "%s", p->comm ? p->comm : "(null)");
        snprintf(l->role[l->n], sizeof(l->role[0]), "%s", p->role ? p->role : "(null)");
        l->p[l->n].comm = l->p[l->n].role = NULL;
    }
    l->n++;
    return 0;
}

struct ev_blocks {
    int n;
    struct event_block_record b[8];
    uint8_t data[8][16];
};

static int collect_ev_block(const struct event_block_record *b, void *arg)
{
    struct ev_blocks *l = arg;
    if (l->n < 8) {
        l->b[l->n] = *b;
        l->b[l->n].data = NULL;
        memcpy(l->data[l->n], b->data, b->len < 16 ? b->len : 16);
    }
    l->n++;
    return 0;
}

static void insert_ev_block(struct store *s, const char *run, int64_t pid, int64_t start,
                            int64_t end, const char *data)
{
    struct event_block_record b = {
        pid, pid + 1, start, end, start / 100, end / 100, 3, (const uint8_t *)data, strlen(data)};
    ASSERT_EQ_INT(s->ops->event_block_insert(s, run, &b), 0);
}

static int ev_blocks_in(struct store *s, const char *run, int64_t from, int64_t to,
                        struct ev_blocks *l)
{
    memset(l, 0, sizeof(*l));
    ASSERT_EQ_INT(s->ops->event_blocks_query(s, run, from, to, collect_ev_block, l), 0);
    return l->n;
}

TEST(event_tables_roundtrip)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    const char *run = "00000000000e0e01", *other = "00000000000e0e02";
    insert_run(s, run, "events", 1);
    insert_run(s, other, "other", 2);
    /* names: an id defined again is replaced (a batch sent twice) */
    ASSERT_EQ_INT(s->ops->event_name_insert(s, run, 2, HOSTILE_SQL), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, run, 1, "forward"), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, run, 3, HOSTILE_U), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, run, 1, "forward"), 0);
    ASSERT_EQ_INT(s->ops->event_name_insert(s, other, 1, "theirs"), 0);
    ASSERT(s->ops->event_name_insert(s, "ffffffffffffffff", 1, "x") < 0); /* no such run */
    struct ev_names nl = {0};
    ASSERT_EQ_INT(s->ops->event_names_query(s, run, collect_ev_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 3);
    ASSERT_EQ_INT(nl.id[0], 1);
    ASSERT_EQ_STR(nl.name[0], "forward");
    ASSERT_EQ_STR(nl.name[1], HOSTILE_SQL);
    ASSERT_EQ_STR(nl.name[2], HOSTILE_U);

    /* processes: replaced as their attributes become known; -1 is NULL and back */
    struct process_record p = {4242, -1, NULL, NULL, -1, -1, -1, -1};
    ASSERT_EQ_INT(s->ops->process_upsert(s, run, &p), 0);
    struct process_record w = {77, 4242, HOSTILE_Q, "dataloader", -1, -1, -1, 3};
    ASSERT_EQ_INT(s->ops->process_upsert(s, run, &w), 0);
    struct ev_procs pl = {0};
    ASSERT_EQ_INT(s->ops->processes_query(s, run, collect_ev_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 2);
    ASSERT_EQ_INT(pl.p[1].pid, 4242);
    ASSERT_EQ_INT(pl.p[1].ppid, -1);
    ASSERT_EQ_STR(pl.comm[1], "(null)");
    ASSERT_EQ_STR(pl.role[1], "(null)");
    ASSERT_EQ_INT(pl.p[1].rank, -1);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM processes WHERE rank IS NULL"), 2);
    p = (struct process_record){4242, 1, "python3", "rank", 0, 0, 8, -1};
    ASSERT_EQ_INT(s->ops->process_upsert(s, run, &p), 0);
    pl.n = 0;
    ASSERT_EQ_INT(s->ops->processes_query(s, run, collect_ev_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 2); /* by pid */
    ASSERT_EQ_INT(pl.p[0].pid, 77);
    ASSERT_EQ_INT(pl.p[0].ppid, 4242);
    ASSERT_EQ_STR(pl.comm[0], HOSTILE_Q);
    ASSERT_EQ_STR(pl.role[0], "dataloader");
    ASSERT_EQ_INT(pl.p[0].worker_id, 3);
    ASSERT_EQ_INT(pl.p[1].pid, 4242);
    ASSERT_EQ_INT(pl.p[1].ppid, 1);
    ASSERT_EQ_STR(pl.comm[1], "python3");
    ASSERT_EQ_STR(pl.role[1], "rank");
    ASSERT_EQ_INT(pl.p[1].rank, 0);
    ASSERT_EQ_INT(pl.p[1].local_rank, 0);
    ASSERT_EQ_INT(pl.p[1].world_size, 8);
    ASSERT_EQ_INT(pl.p[1].worker_id, -1);

    /* blocks: in order of start, the same start in order of insertion */
    insert_ev_block(s, run, 10, 500, 900, "bbb");
    insert_ev_block(s, run, 20, 100, 400, "aaa");
    insert_ev_block(s, run, 30, 500, 600, "ccc");
    insert_ev_block(s, run, 40, 1000, 1000, "ddd");
    insert_ev_block(s, other, 50, 0, 100000, "zzz");
    struct ev_blocks l;
    ASSERT_EQ_INT(ev_blocks_in(s, run, INT64_MIN, INT64_MAX, &l), 4);
    ASSERT_EQ_INT(l.b[0].pid, 20);
    ASSERT_EQ_INT(l.b[0].tid, 21);
    ASSERT_EQ_INT(l.b[0].start_ns, 100);
    ASSERT_EQ_INT(l.b[0].end_ns, 400);
    ASSERT_EQ_INT(l.b[0].step_min, 1);
    ASSERT_EQ_INT(l.b[0].step_max, 4);
    ASSERT_EQ_INT(l.b[0].count, 3);
    ASSERT_EQ_INT(l.b[0].len, 3);
    ASSERT(memcmp(l.data[0], "aaa", 3) == 0);
    ASSERT_EQ_INT(l.b[1].pid, 10);
    ASSERT_EQ_INT(l.b[2].pid, 30);
    ASSERT_EQ_INT(l.b[3].pid, 40);
    /* overlapping [from, to], ends included */
    ASSERT_EQ_INT(ev_blocks_in(s, run, 400, 499, &l), 1);
    ASSERT_EQ_INT(l.b[0].pid, 20);
    ASSERT_EQ_INT(ev_blocks_in(s, run, 401, 499, &l), 0);
    ASSERT_EQ_INT(ev_blocks_in(s, run, 601, 1000, &l), 2);
    ASSERT_EQ_INT(l.b[0].pid, 10);
    ASSERT_EQ_INT(l.b[1].pid, 40);
    ASSERT_EQ_INT(ev_blocks_in(s, run, 1001, INT64_MAX, &l), 0);
    ASSERT_EQ_INT(ev_blocks_in(s, "nosuchrun", INT64_MIN, INT64_MAX, &l), 0);
    store_close(s);
    store_rig_release(&r);
}

TEST(run_delete_removes_event_rows)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    const char *gone = "00000000000e0e0a", *kept = "00000000000e0e0b";
    insert_run(s, gone, "gone", 1);
    insert_run(s, kept, "kept", 2);
    const char *runs[] = {gone, kept};
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ_INT(s->ops->event_name_insert(s, runs[i], 1, "step"), 0);
        ASSERT_EQ_INT(s->ops->event_name_insert(s, runs[i], 2, "data"), 0);
        struct process_record p = {100 + i, 1, "python", "main", -1, -1, -1, -1};
        ASSERT_EQ_INT(s->ops->process_upsert(s, runs[i], &p), 0);
        insert_ev_block(s, runs[i], 100 + i, 10, 20, "x");
        insert_ev_block(s, runs[i], 100 + i, 30, 40, "y");
    }
    ASSERT_EQ_INT(s->ops->run_delete(s, gone), 0);
    struct ev_names nl = {0};
    ASSERT_EQ_INT(s->ops->event_names_query(s, gone, collect_ev_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 0);
    struct ev_procs pl = {0};
    ASSERT_EQ_INT(s->ops->processes_query(s, gone, collect_ev_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 0);
    struct ev_blocks l;
    ASSERT_EQ_INT(ev_blocks_in(s, gone, INT64_MIN, INT64_MAX, &l), 0);
    /* the other run keeps all of its own */
    ASSERT_EQ_INT(s->ops->event_names_query(s, kept, collect_ev_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 2);
    ASSERT_EQ_INT(s->ops->processes_query(s, kept, collect_ev_proc, &pl), 0);
    ASSERT_EQ_INT(pl.n, 1);
    ASSERT_EQ_INT(pl.p[0].pid, 101);
    ASSERT_EQ_INT(ev_blocks_in(s, kept, INT64_MIN, INT64_MAX, &l), 2);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM event_names"), 2);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM processes"), 1);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM event_blocks"), 2);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM runs"), 1);
    store_rig_release(&r);
}

/* ---- migrating a version-1 store ---------------------------------------------------------- */

#define V1_RUN "00000000000000a1"

/* A store as strobe 1 left it: the first migration only, one finished run
 * with a tag and a series with one block. */
static void make_v1_store(const char *path)
{
    raw_exec(path, schema_migrations[0]);
    raw_exec(path, "PRAGMA user_version = 1");
    raw_exec(path, "INSERT INTO runs(id, name, command, start_ns, end_ns, last_ns, exit_code,"
                   " status, samples, points, missed, dropped, interval_ns)"
                   " VALUES('" V1_RUN "', 'old run', '[\"python\",\"train.py\"]',"
                   " 1717000000000000000, 1717000060000000000, 1717000059900000000, 0,"
                   " 'finished', 600, 4200, 2, 1, 100000000)");
    raw_exec(path, "INSERT INTO run_attrs VALUES('" V1_RUN "', 'tag', 'team', 'ml')");
    raw_exec(path, "INSERT INTO series(run_id, name, labels, unit) VALUES('" V1_RUN "',"
                   " 'cpu.util', '', 'pct')");
    raw_exec(path, "INSERT INTO blocks(series_id, start_ns, end_ns, count, data)"
                   " VALUES(1, 1717000000000000000, 1717000001000000000, 2, x'0102')");
    ASSERT_EQ_INT(store_rig_sqlite_int(path, "PRAGMA user_version"), 1);
}

static void expect_migrated(struct store *s, const char *path)
{
    ASSERT_EQ_INT(store_rig_sqlite_int(path, "PRAGMA user_version"), SCHEMA_VERSION);
    ASSERT_EQ_INT(store_rig_sqlite_int(
                      path, "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name IN"
                            " ('event_names','processes','event_blocks')"),
                  3);
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, "old run", &out), 0);
    ASSERT_EQ_STR(out.id, V1_RUN);
    ASSERT_EQ_STR(out.status, RUN_FINISHED);
    ASSERT_EQ_STR(out.command_json, "[\"python\",\"train.py\"]");
    ASSERT_EQ_INT(out.start_ns, INT64_C(1717000000000000000));
    ASSERT_EQ_INT(out.end_ns, INT64_C(1717000060000000000));
    ASSERT_EQ_INT(out.last_ns, INT64_C(1717000059900000000));
    ASSERT_EQ_INT(out.exit_code, 0);
    ASSERT_EQ_INT(out.samples, 600);
    ASSERT_EQ_INT(out.points, 4200);
    ASSERT_EQ_INT(out.missed, 2);
    ASSERT_EQ_INT(out.dropped, 1);
    ASSERT_EQ_INT(out.interval_ns, 100000000);
    ASSERT_EQ_STR(kv_list_get(&out.tags, "team"), "ml");
    /* the new columns, at their defaults */
    ASSERT_EQ_INT(out.events, 0);
    ASSERT_EQ_INT(out.events_dropped, 0);
    ASSERT_EQ_INT(out.events_invalid, 0);
    run_record_release(&out);
    struct summaries l = {0};
    ASSERT_EQ_INT(s->ops->series_query(s, V1_RUN, collect_series, &l), 0);
    ASSERT_EQ_INT(l.n, 1);
    ASSERT_EQ_STR(l.name[0], "cpu.util");
    ASSERT_EQ_INT(l.r[0].count, 2);
    /* and the event queries work on it */
    struct ev_names nl = {0};
    ASSERT_EQ_INT(s->ops->event_names_query(s, V1_RUN, collect_ev_name, &nl), 0);
    ASSERT_EQ_INT(nl.n, 0);
    struct ev_blocks b;
    ASSERT_EQ_INT(ev_blocks_in(s, V1_RUN, INT64_MIN, INT64_MAX, &b), 0);
}

TEST(version_1_store_is_migrated)
{
    struct store_rig r;
    store_rig_init(&r);
    make_v1_store(r.db);
    struct store *s = open_ok(r.db);
    expect_migrated(s, r.db);
    /* writable as a version-2 store: the old run gets events, and counters */
    ASSERT_EQ_INT(s->ops->event_name_insert(s, V1_RUN, 1, "step"), 0);
    struct run_record w;
    ASSERT_EQ_INT(store_resolve_run(s, V1_RUN, &w), 0);
    w.events = 10;
    w.events_dropped = 2;
    w.events_invalid = 1;
    ASSERT_EQ_INT(s->ops->run_update(s, &w), 0);
    run_record_release(&w);
    ASSERT_EQ_INT(store_resolve_run(s, V1_RUN, &w), 0);
    ASSERT_EQ_INT(w.events, 10);
    ASSERT_EQ_INT(w.events_dropped, 2);
    ASSERT_EQ_INT(w.events_invalid, 1);
    ASSERT_EQ_INT(w.samples, 600);
    run_record_release(&w);
    store_close(s);
    /* opening again changes nothing */
    int64_t objects = store_rig_int(&r, "SELECT count(*) FROM sqlite_schema");
    s = open_ok(r.db);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM sqlite_schema"), objects);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM event_names"), 1);
    store_rig_release(&r);
}

/* ---- migrating a version-4 store: runs without the recorder's identity ------------------ */

#define V4_DEAD "00000000000000d4"
#define V4_LIVE "00000000000000a4"

/* A store as strobe left it before schema 5, with two runs still marked
 * running on this host: one whose recorder pid is free, one whose pid is
 * this process's. */
static void make_v4_store(const char *path, const char *host, pid_t dead, pid_t live)
{
    for (int i = 0; i < 4; i++)
        raw_exec(path, schema_migrations[i]);
    raw_exec(path, "PRAGMA user_version = 4");
    char sql[512];
    const char *ids[] = {V4_DEAD, V4_LIVE};
    pid_t pids[] = {dead, live};
    for (int i = 0; i < 2; i++) {
        snprintf(sql, sizeof(sql),
                 "INSERT INTO runs(id, name, command, host, start_ns, status, recorder_pid)"
                 " VALUES('%s', 'v4-%d', '[\"sleep\"]', '%s', 1717000000000000000, 'running',"
                 " %d)",
                 ids[i], i, host, (int)pids[i]);
        raw_exec(path, sql);
    }
}

TEST(version_4_store_is_migrated_and_its_runs_keep_the_pid_rule)
{
    struct store_rig r;
    store_rig_init(&r);
    struct utsname u;
    ASSERT_EQ_INT(uname(&u), 0);
    pid_t dead = fork();
    ASSERT(dead >= 0);
    if (dead == 0)
        _exit(0);
    ASSERT_EQ_INT(waitpid(dead, NULL, 0), dead);
    make_v4_store(r.db, u.nodename, dead, getpid());
    struct store *s = open_ok(r.db);
    ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), SCHEMA_VERSION);
    ASSERT_EQ_INT(store_rig_int(&r,
                                "SELECT count(*) FROM pragma_table_info('runs')"
                                " WHERE name GLOB 'recorder_*'"), /* recorder_pid, and schema 5's */
                  5);
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, V4_DEAD, &out), 0);
    ASSERT_EQ_STR(out.recorder.boot_id, ""); /* unknown: NULL columns */
    ASSERT_EQ_INT(out.recorder.pid_ns, 0);
    ASSERT_EQ_INT(out.recorder.start_ticks, -1);
    ASSERT_EQ_STR(run_record_status(&out), RUN_LOST); /* its pid is free on its host */
    run_record_release(&out);
    ASSERT_EQ_INT(store_resolve_run(s, V4_LIVE, &out), 0);
    ASSERT_EQ_STR(run_record_status(&out), RUN_RUNNING); /* someone has its pid */
    run_record_release(&out);
    store_close(s);
    store_rig_release(&r);
}

TEST(version_1_store_is_migrated_by_a_reader)
{
    struct store_rig r;
    store_rig_init(&r);
    make_v1_store(r.db);
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(r.db, 1, &s, &err);
    if (rc < 0)
        TEST_FAIL("store_open readonly = %d: %s", rc, err.buf);
    strbuf_release(&err);
    expect_migrated(s, r.db);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM runs"), 1);
    store_rig_release(&r);
}

/* ---- two writers --------------------------------------------------------------------------- */

#define WRITER_TXNS 100

struct writer_arg {
    const char *db;
    const char *run_id;
    pthread_barrier_t *start;
    int failures;
};

static void *writer_thread(void *p)
{
    struct writer_arg *a = p;
    struct store *s = NULL;
    pthread_barrier_wait(a->start);
    if (store_open(a->db, 0, &s, NULL) < 0) {
        a->failures = -1;
        return NULL;
    }
    struct run_record r;
    make_run(&r, a->run_id, a->run_id, 1);
    int64_t sid = 0;
    if (s->ops->begin(s) < 0 || s->ops->run_insert(s, &r) < 0 ||
        s->ops->series_insert(s, a->run_id, "x", "", "1", NULL, &sid) < 0 ||
        s->ops->commit(s) < 0) {
        s->ops->rollback(s);
        a->failures++;
    }
    for (int i = 0; i < WRITER_TXNS; i++) {
        struct block_stats st = stats(i * 10, i * 10 + 9, 1, i, i, i);
        r.samples = i;
        if (s->ops->begin(s) < 0 || s->ops->block_upsert(s, sid, &st, "d", 1) < 0 ||
            s->ops->run_update(s, &r) < 0 || s->ops->commit(s) < 0) {
            s->ops->rollback(s);
            a->failures++;
        }
    }
    run_record_release(&r);
    store_close(s);
    return NULL;
}

TEST(two_connections_write_interleaved)
{
    struct store_rig r;
    store_rig_init(&r);
    store_close(open_ok(r.db));
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    struct writer_arg a = {r.db, "aaaaaaaaaaaaaaaa", &start, 0};
    struct writer_arg b = {r.db, "bbbbbbbbbbbbbbbb", &start, 0};
    pthread_t ta, tb;
    ASSERT_EQ_INT(pthread_create(&ta, NULL, writer_thread, &a), 0);
    ASSERT_EQ_INT(pthread_create(&tb, NULL, writer_thread, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&start);
    ASSERT_EQ_INT(a.failures, 0);
    ASSERT_EQ_INT(b.failures, 0);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM blocks"), 2 * WRITER_TXNS);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT samples FROM runs WHERE id='aaaaaaaaaaaaaaaa'"),
                  WRITER_TXNS - 1);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT samples FROM runs WHERE id='bbbbbbbbbbbbbbbb'"),
                  WRITER_TXNS - 1);
    store_rig_release(&r);
}

TEST(two_stores_created_together)
{
    /* two recorders starting on a store that does not exist yet (a
     * PostgreSQL round makes a database: fewer rounds) */
    int rounds = store_rig_pg_base ? 10 : 50;
    for (int round = 0; round < rounds; round++) {
        struct store_rig r;
        store_rig_init(&r);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        struct writer_arg a = {r.db, "aaaaaaaaaaaaaaaa", &start, 0};
        struct writer_arg b = {r.db, "bbbbbbbbbbbbbbbb", &start, 0};
        pthread_t ta, tb;
        ASSERT_EQ_INT(pthread_create(&ta, NULL, writer_thread, &a), 0);
        ASSERT_EQ_INT(pthread_create(&tb, NULL, writer_thread, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&start);
        ASSERT_EQ_INT(a.failures, 0); /* -1: store_open failed */
        ASSERT_EQ_INT(b.failures, 0);
        if (!r.pg)
            ASSERT_EQ_INT(store_rig_int(&r, "PRAGMA user_version"), SCHEMA_VERSION);
        else
            ASSERT(has_runs_table(&r));
        store_rig_release(&r);
    }
}

/* ---- points -------------------------------------------------------------------------------- */

/* Encode n points starting at ts0, one second apart, and store the block
 * (in codec format 1, as older stores hold, when legacy). */
static void store_points_as(struct store *s, int64_t sid, int64_t ts0, const double *v, size_t n,
                            int legacy)
{
    uint8_t buf[2048];
    struct block_enc e;
    if (legacy)
        block_enc_init_legacy(&e, buf, sizeof(buf));
    else
        block_enc_init(&e, buf, sizeof(buf));
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ_INT(block_enc_append(&e, ts0 + (int64_t)i * NS_PER_S, v[i]), 0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &e.st, buf, block_enc_size(&e)), 0);
}

static void store_points(struct store *s, int64_t sid, int64_t ts0, const double *v, size_t n)
{
    store_points_as(s, sid, ts0, v, n, 0);
}

TEST(points_roundtrip_and_stats)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = open_ok(r.db);
    insert_run(s, "0000000000000111", "p", 1);
    int64_t sid;
    ASSERT_EQ_INT(s->ops->series_insert(s, "0000000000000111", "v", "", "1", NULL, &sid), 0);
    /* 1..20 shuffled with a NaN among them, in three blocks; the middle
     * one in codec format 1, as a store written before format 2 holds */
    static const double v[] = {7,  3,  20, 1,  15, 9,  12, NAN, 2,  18, 5,
                               11, 19, 4,  16, 8,  14, 6,  10,  13, 17};
    const size_t n = ARRAY_SIZE(v);
    const int64_t t0 = INT64_C(1717000000000000000);
    store_points(s, sid, t0, v, 7);
    store_points_as(s, sid, t0 + 7 * NS_PER_S, v + 7, 7, 1);
    store_points(s, sid, t0 + 14 * NS_PER_S, v + 14, n - 14);
    /* a damaged block in the middle of the series: skipped and counted */
    struct block_stats bad = stats(t0 + 100 * NS_PER_S, t0 + 105 * NS_PER_S, 5, 0, 0, 0);
    ASSERT_EQ_INT(s->ops->block_upsert(s, sid, &bad, "\xff\xff", 2), 0);
    store_points(s, sid, t0 + 200 * NS_PER_S, (const double[]){-0.0}, 1);

    struct point_buf pb;
    point_buf_init(&pb);
    ASSERT_EQ_INT(store_read_points(s, sid, &pb), 0);
    ASSERT_EQ_U64(pb.corrupt_blocks, 1);
    ASSERT_EQ_INT(pb.n, n + 1);
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ_INT(pb.p[i].ts_ns, t0 + (int64_t)i * NS_PER_S);
        ASSERT_EQ_U64(dbits(pb.p[i].value), dbits(v[i]));
    }
    ASSERT_EQ_INT(pb.p[n].ts_ns, t0 + 200 * NS_PER_S);
    ASSERT_EQ_U64(dbits(pb.p[n].value), dbits(-0.0));

    /* stats over the first 21 points (1..20 and the NaN) */
    struct point_buf first = pb;
    first.n = n;
    struct point_stats ps;
    ASSERT_EQ_INT(points_stats(&first, NS_PER_S, &ps), 0);
    ASSERT_EQ_INT(ps.count, 20);
    ASSERT_EQ_U64(dbits(ps.min), dbits(1.0));
    ASSERT_EQ_U64(dbits(ps.max), dbits(20.0));
    ASSERT_NEAR(ps.mean, 10.5, 1e-12);
    /* nearest rank: p50 is the ceil(0.50 * 20) = 10th smallest, p95 the
     * ceil(0.95 * 20) = 19th */
    ASSERT_EQ_U64(dbits(ps.p50), dbits(10.0));
    ASSERT_EQ_U64(dbits(ps.p95), dbits(19.0));
    /* one second per point, the first included (first_dt_ns): 1+...+20 */
    ASSERT_NEAR(ps.integral, 210.0, 1e-9);
    point_buf_release(&pb);

    /* odd count: 1..5: p50 is the 3rd, p95 the 5th */
    struct point five[5];
    for (int i = 0; i < 5; i++) {
        five[i].ts_ns = t0 + i * NS_PER_S;
        five[i].value = (double)(5 - i);
    }
    struct point_buf fb = {five, 5, 5, 0};
    ASSERT_EQ_INT(points_stats(&fb, 0, &ps), 0);
    ASSERT_EQ_U64(dbits(ps.p50), dbits(3.0));
    ASSERT_EQ_U64(dbits(ps.p95), dbits(5.0));
    ASSERT_NEAR(ps.integral, 4 + 3 + 2 + 1, 1e-9); /* the first point covers 0 s */
    /* nothing at all */
    struct point_buf empty = {NULL, 0, 0, 0};
    ASSERT_EQ_INT(points_stats(&empty, NS_PER_S, &ps), 0);
    ASSERT_EQ_INT(ps.count, 0);
    ASSERT(isnan(ps.p50) && isnan(ps.min) && isnan(ps.mean));
    store_close(s);
    store_rig_release(&r);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* points_stats' percentiles (a selection, not a sort) against a sort of the
 * same values, bit for bit: random sizes and values, few distinct values,
 * sorted and reversed input, infinities, NaN skipped. */
TEST(points_stats_percentiles_match_a_sort)
{
    uint64_t rng = 7;
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + (size_t)(rng_next(&rng) % (round < 200 ? 40 : 5000));
        struct point *p = calloc(n, sizeof(*p));
        double *sorted = calloc(n, sizeof(*sorted));
        ASSERT(p && sorted);
        size_t m = 0;
        int shape = round % 6;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&rng);
            double x = shape == 0   ? (double)(int64_t)(r % 2001) - 1000.0 /* many values */
                       : shape == 1 ? (double)(r % 3)                      /* few distinct */
                       : shape == 2 ? (double)i                            /* sorted */
                       : shape == 3 ? (double)(n - i)                      /* reversed */
                       : shape == 4 ? 42.0                                 /* constant */
                                    : (r % 7 == 0   ? INFINITY
                                       : r % 7 == 1 ? -INFINITY
                                       : r % 7 == 2 ? NAN
                                                    : (double)(r % 100) / 8.0);
            p[i].ts_ns = (int64_t)i * NS_PER_MS;
            p[i].value = x;
            if (!isnan(x))
                sorted[m++] = x;
        }
        struct point_buf b = {p, n, n, 0};
        struct point_stats ps;
        ASSERT_EQ_INT(points_stats(&b, 0, &ps), 0);
        ASSERT_EQ_INT(ps.count, m);
        if (m) {
            qsort(sorted, m, sizeof(*sorted), cmp_dbl);
            size_t r50 = (size_t)ceil(0.50 * (double)m), r95 = (size_t)ceil(0.95 * (double)m);
            ASSERT_EQ_U64(dbits(ps.p50), dbits(sorted[r50 ? r50 - 1 : 0]));
            ASSERT_EQ_U64(dbits(ps.p95), dbits(sorted[r95 ? r95 - 1 : 0]));
            ASSERT_EQ_U64(dbits(ps.min), dbits(sorted[0]));
            ASSERT_EQ_U64(dbits(ps.max), dbits(sorted[m - 1]));
        }
        /* the points themselves are left as they were */
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ_INT(p[i].ts_ns, (int64_t)i * NS_PER_MS);
        free(p);
        free(sorted);
    }
}

/* SQLite's own: WAL, its files, its migrations from older versions; and no store at all. */
TEST_CASES_ONCE(create_sets_version_and_wal, store_without_wal_is_refused,
                foreign_database_is_refused, non_database_file_is_refused, newer_schema_is_refused,
                version_1_store_is_migrated, version_1_store_is_migrated_by_a_reader,
                version_4_store_is_migrated_and_its_runs_keep_the_pid_rule,
                points_stats_percentiles_match_a_sort)
TEST_CASES_BOTH(reopen_is_idempotent, run_roundtrip_every_field, run_id_is_unique,
                block_upsert_replaces_same_start, blocks_put_matches_upserts,
                series_query_summaries, resolve_run_references,
                run_delete_removes_series_and_blocks, two_connections_write_interleaved,
                two_stores_created_together, points_roundtrip_and_stats, event_tables_roundtrip,
                run_delete_removes_event_rows)
STORE_TEST_MAIN()
