/*
 * Campaigns of strobe sweep in the store (store_ops.campaign_*, schema 7):
 * put and get, a put that replaces keeping the first created_ns, missing
 * names, the order of a listing, deletes, the caller's transaction, a
 * state of megabytes, hostile texts; a version-6 store migrated, and read
 * as it is by a reader that may not upgrade it. TEST_CASES_BOTH run on
 * SQLite and again on PostgreSQL (store_rig.h).
 */
#include "common/array.h"
#include "store/store.h"

#include <sqlite3.h>

#include "common/err.h"
#include "store/schema.h"
#include "store/schema_pg.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define HOSTILE_SQL "'; DROP TABLE campaigns; --"
#define HOSTILE_Q   "it's \"quoted\" \\ back`tick`\nsecond line\r\n"
#define HOSTILE_U   "训练-ünïcødé-🚀-\xe2\x80\xae-tab\there"

#define MAX_GOT 8

/* What the callbacks saw, copied. */
struct got {
    int n;
    int stop_after; /* return 1 after this many; 0: never */
    char *name[MAX_GOT], *spec_hash[MAX_GOT], *file[MAX_GOT], *state[MAX_GOT];
    int64_t created_ns[MAX_GOT], updated_ns[MAX_GOT];
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int collect(const struct campaign_record *c, void *arg)
{
    struct got *g = arg;
    if (g->n == MAX_GOT)
        TEST_FAIL("more than %d campaigns", MAX_GOT);
    int i = g->n++;
    g->name[i] = dup_or_null(c->name);
    g->spec_hash[i] = dup_or_null(c->spec_hash);
    g->file[i] = dup_or_null(c->file);
    g->state[i] = dup_or_null(c->state);
    g->created_ns[i] = c->created_ns;
    g->updated_ns[i] = c->updated_ns;
    return g->stop_after && g->n >= g->stop_after;
}

static void got_release(struct got *g)
{
    for (int i = 0; i < g->n; i++) {
        free(g->name[i]);
        free(g->spec_hash[i]);
        free(g->file[i]);
        free(g->state[i]);
    }
    memset(g, 0, sizeof(*g));
}

static struct store *open_rig(struct store_rig *r)
{
    store_rig_init(r);
    return store_rig_open(r->db, 0);
}

static struct campaign_record campaign(const char *name, int64_t created_ns, int64_t updated_ns,
                                       const char *state)
{
    return (struct campaign_record){
        .name = name,
        .spec_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        .file = "/home/ml/exp/sweep.toml",
        .created_ns = created_ns,
        .updated_ns = updated_ns,
        .state = state,
    };
}

static void put_ok(struct store *s, const struct campaign_record *c)
{
    int rc = s->ops->campaign_put(s, c);
    if (rc < 0)
        TEST_FAIL("campaign_put('%s') = %d: %s", c->name, rc, s->err.buf);
}

/* The campaign of that name, which must exist, into g (released first). */
static void get_ok(struct store *s, const char *name, struct got *g)
{
    got_release(g);
    int rc = s->ops->campaign_get(s, name, collect, g);
    if (rc < 0)
        TEST_FAIL("campaign_get('%s') = %d: %s", name, rc, s->err.buf);
    ASSERT_EQ_INT(g->n, 1);
}

static void expect_campaign(const struct got *g, int i, const struct campaign_record *want)
{
    ASSERT_EQ_STR(g->name[i], want->name);
    ASSERT_EQ_STR(g->spec_hash[i], want->spec_hash);
    if (want->file)
        ASSERT_EQ_STR(g->file[i], want->file);
    else if (g->file[i])
        TEST_FAIL("file: \"%s\", want NULL", g->file[i]);
    ASSERT_EQ_INT(g->created_ns[i], want->created_ns);
    ASSERT_EQ_INT(g->updated_ns[i], want->updated_ns);
    ASSERT_EQ_STR(g->state[i], want->state);
}

/* The campaign of want's name, which must exist, holds what want holds. */
static void expect_stored(struct store *s, const struct campaign_record *want)
{
    struct got g = {0};
    get_ok(s, want->name, &g);
    expect_campaign(&g, 0, want);
    got_release(&g);
}

static int64_t campaign_rows(const struct store_rig *r)
{
    return store_rig_int(r, "SELECT count(*) FROM campaigns");
}

/* ---- one campaign --------------------------------------------------------------- */

TEST(campaign_put_get_roundtrip)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct campaign_record c = campaign("lr-sweep", 1717000000123456789, 1717000000123456789,
                                        "{\"points\":[],\"next\":0}");
    put_ok(s, &c);
    expect_stored(s, &c);
    /* a file is optional */
    struct campaign_record nofile = campaign("no-file", 5, 6, "{}");
    nofile.file = NULL;
    put_ok(s, &nofile);
    expect_stored(s, &nofile);
    store_close(s);
    /* and another connection reads it: it was committed */
    s = store_rig_open(r.db, 1);
    expect_stored(s, &c);
    store_close(s);
    ASSERT_EQ_INT(campaign_rows(&r), 2);
    store_rig_release(&r);
}

TEST(campaign_put_replaces_and_keeps_created)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct campaign_record first = campaign("bs-sweep", 1000, 1000, "{\"done\":0}");
    put_ok(s, &first);
    struct campaign_record second = {
        .name = "bs-sweep",
        .spec_hash = "0123abcd",
        .file = "/elsewhere/sweep.toml",
        .created_ns = 999999, /* the store keeps the first put's */
        .updated_ns = 2000,
        .state = "{\"done\":3}",
    };
    put_ok(s, &second);
    struct campaign_record want = second;
    want.created_ns = 1000;
    expect_stored(s, &want);
    /* a later put without a file clears it: the record is replaced whole */
    struct campaign_record third = second;
    third.file = NULL;
    third.updated_ns = 3000;
    put_ok(s, &third);
    want = third;
    want.created_ns = 1000;
    expect_stored(s, &want);
    store_close(s);
    ASSERT_EQ_INT(campaign_rows(&r), 1);
    store_rig_release(&r);
}

TEST(campaign_get_missing_is_not_found)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaign_get(s, "nothing", collect, &g), -STROBE_ENOTFOUND);
    struct campaign_record c = campaign("present", 1, 1, "{}");
    put_ok(s, &c);
    ASSERT_EQ_INT(s->ops->campaign_get(s, "Present", collect, &g), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(s->ops->campaign_get(s, "presen", collect, &g), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(s->ops->campaign_get(s, "", collect, &g), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(g.n, 0); /* fn never called */
    ASSERT_EQ_INT(s->ops->campaign_delete(s, "nothing"), -STROBE_ENOTFOUND);
    /* a callback's answer: non-zero stops, only a negative one comes back */
    g.stop_after = 1;
    ASSERT_EQ_INT(s->ops->campaign_get(s, "present", collect, &g), 0);
    ASSERT_EQ_INT(g.n, 1);
    got_release(&g);
    store_close(s);
    store_rig_release(&r);
}

/* ---- many campaigns -------------------------------------------------------------- */

TEST(campaigns_query_most_recently_updated_first)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 0);
    const char *names[] = {"a", "b", "c", "d"};
    const int64_t updated[] = {300, 100, 200, 200};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        struct campaign_record c = campaign(names[i], 50, updated[i], "{}");
        put_ok(s, &c);
    }
    /* b is updated last: it comes first */
    struct campaign_record b = campaign("b", 999, 400, "{\"again\":true}");
    put_ok(s, &b);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 4);
    const char *order[] = {"b", "a", "c", "d"}; /* c and d tie: by name */
    const int64_t at[] = {400, 300, 200, 200};
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ_STR(g.name[i], order[i]);
        ASSERT_EQ_INT(g.updated_ns[i], at[i]);
        ASSERT_EQ_INT(g.created_ns[i], 50);
    }
    ASSERT_EQ_STR(g.state[0], "{\"again\":true}");
    got_release(&g);
    /* a callback that stops ends the listing */
    g.stop_after = 2;
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 2);
    got_release(&g);
    store_close(s);
    store_rig_release(&r);
}

static int fail_with_eio(const struct campaign_record *c, void *arg)
{
    (void)c;
    (void)arg;
    return -EIO;
}

TEST(campaign_callback_error_comes_back)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct campaign_record c = campaign("x", 1, 1, "{}");
    put_ok(s, &c);
    ASSERT_EQ_INT(s->ops->campaign_get(s, "x", fail_with_eio, NULL), -EIO);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, fail_with_eio, NULL), -EIO);
    store_close(s);
    store_rig_release(&r);
}

TEST(campaign_delete_removes_one)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct campaign_record a = campaign("keep", 1, 10, "{\"k\":1}");
    struct campaign_record b = campaign("drop", 2, 20, "{\"d\":1}");
    put_ok(s, &a);
    put_ok(s, &b);
    ASSERT_EQ_INT(s->ops->campaign_delete(s, "drop"), 0);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaign_get(s, "drop", collect, &g), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(s->ops->campaign_delete(s, "drop"), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 1);
    expect_campaign(&g, 0, &a);
    got_release(&g);
    /* put again after a delete: a new campaign, with the new created_ns */
    struct campaign_record again = campaign("drop", 30, 30, "{}");
    put_ok(s, &again);
    expect_stored(s, &again);
    store_close(s);
    ASSERT_EQ_INT(campaign_rows(&r), 2);
    store_rig_release(&r);
}

TEST(campaign_calls_in_the_callers_transaction)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    struct campaign_record kept = campaign("kept", 1, 1, "{\"v\":1}");
    put_ok(s, &kept);
    /* rolled back: the put, the delete and the replace are undone */
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    struct campaign_record gone = campaign("gone", 2, 2, "{}");
    put_ok(s, &gone);
    struct campaign_record changed = campaign("kept", 9, 9, "{\"v\":2}");
    put_ok(s, &changed);
    expect_stored(s, &gone); /* seen inside */
    ASSERT_EQ_INT(s->ops->campaign_delete(s, "kept"), 0);
    ASSERT_EQ_INT(s->ops->rollback(s), 0);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaign_get(s, "gone", collect, &g), -STROBE_ENOTFOUND);
    expect_stored(s, &kept);
    /* committed with the caller's commit */
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    put_ok(s, &changed);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
    struct campaign_record want = changed;
    want.created_ns = 1;
    expect_stored(s, &want);
    store_close(s);
    ASSERT_EQ_INT(campaign_rows(&r), 1);
    store_rig_release(&r);
}

/* ---- what a state and a name may hold ---------------------------------------------- */

#define BIG_STATE_BYTES (2 * 1024 * 1024)

/* A JSON document of about 2 MiB: points with quotes, escapes and UTF-8. */
static char *big_state(size_t *len)
{
    struct strbuf b;
    strbuf_init(&b);
    strbuf_adds(&b, "{\"points\":[");
    for (int i = 0; b.len < BIG_STATE_BYTES; i++)
        strbuf_addf(&b, "%s{\"i\":%d,\"run\":\"%016x\",\"note\":\"a \\\"quoted\\\" ü→🚀\\n\"}",
                    i ? "," : "", i, (unsigned)i * 2654435761u);
    strbuf_adds(&b, "]}");
    ASSERT(!strbuf_failed(&b));
    *len = b.len;
    return strbuf_detach(&b);
}

TEST(campaign_state_of_2_mib)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    size_t len;
    char *state = big_state(&len);
    ASSERT(len >= BIG_STATE_BYTES);
    struct campaign_record c = campaign("big", 1, 2, state);
    put_ok(s, &c);
    struct got g = {0};
    get_ok(s, "big", &g);
    ASSERT_EQ_INT(strlen(g.state[0]), len);
    ASSERT(memcmp(g.state[0], state, len) == 0);
    /* replaced by another as large, and listed */
    state[len - 3] = '!';
    c.updated_ns = 3;
    put_ok(s, &c);
    got_release(&g);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 1);
    ASSERT_EQ_INT(strlen(g.state[0]), len);
    ASSERT(memcmp(g.state[0], state, len) == 0);
    got_release(&g);
    store_close(s);
    free(state);
    ASSERT_EQ_INT(store_rig_int(&r, r.pg ? "SELECT octet_length(state) FROM campaigns"
                                         : "SELECT length(CAST(state AS BLOB)) FROM campaigns"),
                  len);
    store_rig_release(&r);
}

TEST(campaign_hostile_names_and_states)
{
    struct store_rig r;
    struct store *s = open_rig(&r);
    static const char *const texts[] = {HOSTILE_SQL, HOSTILE_Q, HOSTILE_U};
    for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
        struct campaign_record c = {
            .name = texts[i],
            .spec_hash = texts[(i + 1) % 3],
            .file = texts[(i + 2) % 3],
            .created_ns = (int64_t)i + 1,
            .updated_ns = (int64_t)i + 1,
            .state = texts[(i + 1) % 3],
        };
        put_ok(s, &c);
    }
    struct got g = {0};
    for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
        get_ok(s, texts[i], &g);
        ASSERT_EQ_STR(g.name[0], texts[i]);
        ASSERT_EQ_STR(g.spec_hash[0], texts[(i + 1) % 3]);
        ASSERT_EQ_STR(g.file[0], texts[(i + 2) % 3]);
        ASSERT_EQ_STR(g.state[0], texts[(i + 1) % 3]);
    }
    got_release(&g);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 3);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ_STR(g.name[i], texts[2 - i]); /* the last put first */
    got_release(&g);
    ASSERT_EQ_INT(s->ops->campaign_delete(s, HOSTILE_SQL), 0);
    store_close(s);
    ASSERT_EQ_INT(campaign_rows(&r), 2);
    store_rig_release(&r);
}

/* ---- a version-6 store ----------------------------------------------------------------- */

#define V6_RUN "00000000000000b6"

/* A store as strobe left it at schema 6, with a finished run. */
static void make_v6_store(struct store_rig *r)
{
    store_rig_make_old(r, 6);
    store_rig_exec(r, "INSERT INTO runs(id, name, command, start_ns, end_ns, exit_code, status)"
                      " VALUES('" V6_RUN "', 'v6 run', '[\"true\"]', 1717000000000000000,"
                      " 1717000001000000000, 0, 'finished')");
    ASSERT_EQ_INT(store_rig_version(r), 6);
    ASSERT_EQ_INT(store_rig_has_table(r, "campaigns"), 0);
}

static void expect_v6_run(struct store *s)
{
    struct run_record out;
    ASSERT_EQ_INT(store_resolve_run(s, "v6 run", &out), 0);
    ASSERT_EQ_STR(out.id, V6_RUN);
    ASSERT_EQ_STR(out.status, RUN_FINISHED);
    ASSERT_EQ_INT(out.end_ns, INT64_C(1717000001000000000));
    run_record_release(&out);
}

TEST(version_6_store_is_migrated)
{
    struct store_rig r;
    make_v6_store(&r);
    struct store *s = store_rig_open(r.db, 0);
    ASSERT_EQ_INT(store_rig_version(&r), SCHEMA_VERSION);
    ASSERT_EQ_INT(store_rig_has_table(&r, "campaigns"), 1);
    expect_v6_run(s);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 0);
    struct campaign_record c = campaign("after", 7, 7, "{}");
    put_ok(s, &c);
    expect_stored(s, &c);
    store_close(s);
    ASSERT_EQ_INT(store_rig_int(&r, "SELECT count(*) FROM runs"), 1);
    store_rig_release(&r);
}

/* A reader of an old store it may not upgrade: its runs, and no campaigns. */
static void expect_read_as_old(const char *uri)
{
    struct store *s = store_rig_open(uri, 1);
    expect_v6_run(s);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaign_get(s, "any", collect, &g), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(s->ops->campaigns_query(s, collect, &g), 0);
    ASSERT_EQ_INT(g.n, 0);
    /* a put there fails: the store is not written behind the reader's back */
    struct campaign_record c = campaign("no", 1, 1, "{}");
    ASSERT(s->ops->campaign_put(s, &c) < 0);
    store_close(s);
}

TEST(version_6_store_read_only_finds_no_campaigns)
{
    struct store_rig r;
    make_v6_store(&r);
    char uri[1200];
    store_rig_readonly_on(&r, uri, sizeof(uri)); /* the open does not fail for that */
    expect_read_as_old(uri);
    store_rig_readonly_off(&r);
    /* left as it was */
    ASSERT_EQ_INT(store_rig_version(&r), 6);
    ASSERT_EQ_INT(store_rig_has_table(&r, "campaigns"), 0);
    /* a reader that may write upgrades it, as any reader of an old store */
    struct store *s = store_rig_open(r.db, 1);
    struct got g = {0};
    ASSERT_EQ_INT(s->ops->campaign_get(s, "any", collect, &g), -STROBE_ENOTFOUND);
    store_close(s);
    ASSERT_EQ_INT(store_rig_version(&r), SCHEMA_VERSION);
    ASSERT_EQ_INT(store_rig_has_table(&r, "campaigns"), 1);
    store_rig_release(&r);
}

/* SQLite's readers of versions 4 and 5 they may not upgrade read the runs
 * through a view (sqlite.c, read_old_as_current): no campaigns there either. */
TEST(version_5_sqlite_store_read_only_finds_no_campaigns)
{
    struct store_rig r;
    store_rig_make_old(&r, 5);
    store_rig_exec(&r, "INSERT INTO runs(id, name, command, start_ns, end_ns, exit_code, status)"
                       " VALUES('" V6_RUN "', 'v6 run', '[\"true\"]', 1717000000000000000,"
                       " 1717000001000000000, 0, 'finished')");
    char uri[1200];
    store_rig_readonly_on(&r, uri, sizeof(uri));
    expect_read_as_old(uri);
    ASSERT_EQ_INT(store_rig_version(&r), 5);
    store_rig_release(&r);
}

TEST_CASES_ONCE(version_5_sqlite_store_read_only_finds_no_campaigns)
TEST_CASES_BOTH(campaign_put_get_roundtrip, campaign_put_replaces_and_keeps_created,
                campaign_get_missing_is_not_found, campaigns_query_most_recently_updated_first,
                campaign_callback_error_comes_back, campaign_delete_removes_one,
                campaign_calls_in_the_callers_transaction, campaign_state_of_2_mib,
                campaign_hostile_names_and_states, version_6_store_is_migrated,
                version_6_store_read_only_finds_no_campaigns)
STORE_TEST_MAIN()
