/*
 * Python stack samples in the store (store_ops.py_block_*, schema 8): put
 * and replace, time-range queries (every dictionary block, the samples
 * blocks that overlap, in seq order), a callback that stops, blocks kept
 * apart by run, run_delete; a version-7 store migrated, and read as it is
 * by a reader that may not upgrade it. TEST_CASES_BOTH run on SQLite and
 * again on PostgreSQL (store_rig.h).
 */
#include "store/store.h"

#include <sqlite3.h>

#include "common/array.h"
#include "pyprof/profile.h"
#include "store/schema.h"
#include "store/schema_pg.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define RUN_A "00000000000000a1"
#define RUN_B "00000000000000b2"
#define SEC   INT64_C(1000000000)
#define T0    INT64_C(1767225600000000000)

#define MAX_GOT 1200

/* What the callbacks saw, copied. */
struct got {
    int n, stop_after;
    struct py_block_record b[MAX_GOT];
    uint8_t *data[MAX_GOT];
};

static int collect(const struct py_block_record *b, void *arg)
{
    struct got *g = arg;
    if (g->n == MAX_GOT)
        TEST_FAIL("more than %d blocks", MAX_GOT);
    g->data[g->n] = malloc(b->len + 1);
    memcpy(g->data[g->n], b->data, b->len);
    g->b[g->n] = *b;
    g->b[g->n].data = g->data[g->n];
    g->n++;
    return g->stop_after && g->n >= g->stop_after;
}

static void got_release(struct got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->data[i]);
    memset(g, 0, sizeof(*g));
}

static void insert_run(struct store *s, const char *id)
{
    struct run_record r;
    run_record_init(&r);
    snprintf(r.id, sizeof(r.id), "%s", id);
    r.name = strdup(id);
    r.command_json = strdup("[\"python\",\"train.py\"]");
    r.start_ns = T0;
    snprintf(r.status, sizeof(r.status), RUN_RUNNING);
    ASSERT_EQ_INT(s->ops->run_insert(s, &r), 0);
    run_record_release(&r);
}

/* Block seq of a run laid out as the recorder makes them: even seqs are
 * dictionaries, odd ones the samples of second seq / 2 after T0. Its bytes
 * say which block and which version it is. */
static struct py_block_record block(int64_t seq, int version, uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seq * 31 + version * 7 + (int64_t)i);
    int64_t start = T0 + seq / 2 * SEC;
    return (struct py_block_record){
        .seq = seq,
        .kind = (int)(seq % 2),
        .start_ns = start,
        .end_ns = start + SEC - 1000,
        .count = 100 + seq,
        .data = buf,
        .len = len,
    };
}

static void put_ok(struct store *s, const char *run, const struct py_block_record *b)
{
    int rc = s->ops->py_block_put(s, run, b);
    if (rc < 0)
        TEST_FAIL("py_block_put(%s, %" PRId64 ") = %d: %s", run, b->seq, rc, s->err.buf);
}

/* Blocks 0..n-1 of run, each of len + seq bytes. */
static void put_blocks(struct store *s, const char *run, int n, size_t len)
{
    uint8_t buf[4096];
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    for (int i = 0; i < n; i++) {
        struct py_block_record b = block(i, 1, buf, len + (size_t)i);
        put_ok(s, run, &b);
    }
    ASSERT_EQ_INT(s->ops->commit(s), 0);
}

static void query_ok(struct store *s, const char *run, int64_t from, int64_t to, struct got *g)
{
    got_release(g);
    int rc = s->ops->py_blocks_query(s, run, from, to, collect, g);
    if (rc < 0)
        TEST_FAIL("py_blocks_query(%s) = %d: %s", run, rc, s->err.buf);
}

/* g holds block seq of version version at index i, intact. */
static void expect_block(const struct got *g, int i, int64_t seq, int version, size_t len)
{
    uint8_t buf[4096];
    struct py_block_record want = block(seq, version, buf, len + (size_t)seq);
    const struct py_block_record *b = &g->b[i];
    ASSERT_EQ_INT(b->seq, want.seq);
    ASSERT_EQ_INT(b->kind, want.kind);
    ASSERT_EQ_INT(b->start_ns, want.start_ns);
    ASSERT_EQ_INT(b->end_ns, want.end_ns);
    ASSERT_EQ_INT(b->count, want.count);
    ASSERT_EQ_INT(b->len, want.len);
    ASSERT(memcmp(b->data, want.data, want.len) == 0);
}

static int64_t py_rows(const struct store_rig *r)
{
    return store_rig_int(r, "SELECT count(*) FROM py_blocks");
}

TEST(py_blocks_put_and_query_all)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    put_blocks(s, RUN_A, 10, 100);
    struct got g = {0};
    query_ok(s, RUN_A, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 10);
    for (int i = 0; i < 10; i++)
        expect_block(&g, i, i, 1, 100);
    got_release(&g);
    store_close(s);
    ASSERT_EQ_INT(py_rows(&r), 10);
    store_rig_release(&r);
}

/* Seqs arrive out of order (a batch sent again): they come back in order. */
TEST(py_blocks_come_in_seq_order)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    uint8_t buf[4096];
    static const int order[] = {5, 0, 3, 1, 4, 2};
    for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
        struct py_block_record b = block(order[i], 1, buf, 10 + (size_t)order[i]);
        put_ok(s, RUN_A, &b);
    }
    struct got g = {0};
    query_ok(s, RUN_A, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 6);
    for (int i = 0; i < 6; i++)
        expect_block(&g, i, i, 1, 10);
    got_release(&g);
    store_close(s);
    store_rig_release(&r);
}

TEST(py_block_put_replaces)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    put_blocks(s, RUN_A, 4, 50);
    uint8_t buf[4096];
    struct py_block_record b = block(2, 2, buf, 50 + 2);
    put_ok(s, RUN_A, &b);
    struct got g = {0};
    query_ok(s, RUN_A, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 4);
    expect_block(&g, 1, 1, 1, 50);
    expect_block(&g, 2, 2, 2, 50);
    expect_block(&g, 3, 3, 1, 50);
    got_release(&g);
    store_close(s);
    ASSERT_EQ_INT(py_rows(&r), 4);
    store_rig_release(&r);
}

/* Samples blocks of seconds 0..9 (seqs 1, 3, ..., 19); a range gets every
 * dictionary and the samples blocks it overlaps, ends included. */
TEST(py_blocks_query_a_time_range)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    put_blocks(s, RUN_A, 20, 20);
    struct got g = {0};
    /* seconds 3 to 5: the one ending at 3 s - 1 us is out, 5 s's start is in */
    query_ok(s, RUN_A, T0 + 3 * SEC, T0 + 5 * SEC, &g);
    ASSERT_EQ_INT(g.n, 10 + 3);
    int64_t want[13] = {0, 2, 4, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18};
    for (int i = 0; i < 13; i++)
        expect_block(&g, i, want[i], 1, 20);
    /* the last microsecond of second 2 alone */
    query_ok(s, RUN_A, T0 + 3 * SEC - 1000, T0 + 3 * SEC - 1000, &g);
    ASSERT_EQ_INT(g.n, 11);
    expect_block(&g, 3, 5, 1, 20);
    /* before any: dictionaries only */
    query_ok(s, RUN_A, T0 - 10 * SEC, T0 - 1, &g);
    ASSERT_EQ_INT(g.n, 10);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ_INT(g.b[i].kind, PY_BLOCK_DICT);
    got_release(&g);
    store_close(s);
    store_rig_release(&r);
}

TEST(py_blocks_of_runs_apart_and_deleted)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    insert_run(s, RUN_B);
    put_blocks(s, RUN_A, 6, 30);
    put_blocks(s, RUN_B, 3, 40);
    struct got g = {0};
    query_ok(s, RUN_B, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 3);
    expect_block(&g, 2, 2, 1, 40);
    ASSERT_EQ_INT(s->ops->run_delete(s, RUN_A), 0);
    query_ok(s, RUN_A, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 0);
    query_ok(s, RUN_B, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 3);
    got_release(&g);
    store_close(s);
    ASSERT_EQ_INT(py_rows(&r), 3);
    store_rig_release(&r);
}

/* A callback's 1 stops the query (0 back), a negative value comes back. */
static int fail_third(const struct py_block_record *b, void *arg)
{
    (void)arg;
    return b->seq == 2 ? -ENOSPC : 0;
}

TEST(py_blocks_callback_stops)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    insert_run(s, RUN_A);
    put_blocks(s, RUN_A, 1100, 1); /* more than a PostgreSQL page */
    struct got g = {.stop_after = 700};
    ASSERT_EQ_INT(s->ops->py_blocks_query(s, RUN_A, INT64_MIN, INT64_MAX, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 700);
    ASSERT_EQ_INT(g.b[699].seq, 699);
    got_release(&g);
    ASSERT_EQ_INT(s->ops->py_blocks_query(s, RUN_A, INT64_MIN, INT64_MAX, fail_third, NULL),
                  -ENOSPC);
    store_close(s);
    store_rig_release(&r);
}

/* A put for a run that is not there fails, and writes nothing. */
TEST(py_block_of_no_run_refused)
{
    struct store_rig r;
    store_rig_init(&r);
    struct store *s = store_rig_open(r.db, 0);
    uint8_t buf[16];
    struct py_block_record b = block(0, 1, buf, sizeof(buf));
    ASSERT(s->ops->py_block_put(s, RUN_A, &b) < 0);
    ASSERT(s->err.len > 0);
    store_close(s);
    ASSERT_EQ_INT(py_rows(&r), 0);
    store_rig_release(&r);
}

/* ---- a version-7 store ----------------------------------------------------------------- */

#define V7_RUN "00000000000000c7"

/* A store as strobe left it at schema 7, with a run. */
static void make_v7_store(struct store_rig *r)
{
    store_rig_make_old(r, 7);
    store_rig_exec(r, "INSERT INTO runs(id, name, command, start_ns, status)"
                      " VALUES('" V7_RUN
                      "', 'v7 run', '[\"true\"]', 1717000000000000000, 'finished')");
    ASSERT_EQ_INT(store_rig_version(r), 7);
    ASSERT_EQ_INT(store_rig_has_table(r, "py_blocks"), 0);
}

TEST(version_7_store_is_migrated)
{
    struct store_rig r;
    make_v7_store(&r);
    struct store *s = store_rig_open(r.db, 0);
    ASSERT_EQ_INT(store_rig_version(&r), SCHEMA_VERSION);
    ASSERT_EQ_INT(store_rig_has_table(&r, "py_blocks"), 1);
    struct got g = {0};
    query_ok(s, V7_RUN, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 0);
    put_blocks(s, V7_RUN, 2, 8);
    query_ok(s, V7_RUN, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 2);
    got_release(&g);
    store_close(s);
    store_rig_release(&r);
}

/* A reader of an old store it may not upgrade: its run, no Python blocks,
 * and a put that fails. */
static void expect_read_as_old(const char *uri)
{
    struct store *s = store_rig_open(uri, 1);
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, "v7 run", &out), 0);
    ASSERT_EQ_STR(out.id, V7_RUN);
    run_record_release(&out);
    struct got g = {0};
    query_ok(s, V7_RUN, INT64_MIN, INT64_MAX, &g);
    ASSERT_EQ_INT(g.n, 0);
    uint8_t buf[8];
    struct py_block_record b = block(0, 1, buf, sizeof(buf));
    ASSERT(s->ops->py_block_put(s, V7_RUN, &b) < 0);
    store_close(s);
}

TEST(version_7_store_read_only_finds_no_py_blocks)
{
    struct store_rig r;
    make_v7_store(&r);
    char uri[1200];
    store_rig_readonly_on(&r, uri, sizeof(uri));
    expect_read_as_old(uri);
    store_rig_readonly_off(&r);
    ASSERT_EQ_INT(store_rig_version(&r), 7);
    ASSERT_EQ_INT(store_rig_has_table(&r, "py_blocks"), 0);
    store_rig_release(&r);
}

/* SQLite reads versions 4 and 5 through a view of runs (sqlite.c,
 * read_old_as_current): no Python blocks there either. */
TEST(version_5_sqlite_store_read_only_finds_no_py_blocks)
{
    struct store_rig r;
    store_rig_make_old(&r, 5);
    store_rig_exec(&r, "INSERT INTO runs(id, name, command, start_ns, status)"
                       " VALUES('" V7_RUN
                       "', 'v7 run', '[\"true\"]', 1717000000000000000, 'finished')");
    char uri[1200];
    store_rig_readonly_on(&r, uri, sizeof(uri));
    expect_read_as_old(uri);
    ASSERT_EQ_INT(store_rig_version(&r), 5);
    store_rig_release(&r);
}

TEST_CASES_ONCE(version_5_sqlite_store_read_only_finds_no_py_blocks)
TEST_CASES_BOTH(py_blocks_put_and_query_all, py_blocks_come_in_seq_order, py_block_put_replaces,
                py_blocks_query_a_time_range, py_blocks_of_runs_apart_and_deleted,
                py_blocks_callback_stops, py_block_of_no_run_refused, version_7_store_is_migrated,
                version_7_store_read_only_finds_no_py_blocks)
STORE_TEST_MAIN()
