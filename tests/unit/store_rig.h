/*
 * A store for a unit test, on either backend, and a main() that runs the
 * store cases on both.
 *
 * SQLite: a file in a scratch folder. PostgreSQL: a fresh database, one per
 * case, on the server whose URI is in $STROBE_TEST_PG_URI (tests/run starts
 * one with tests/tools/pgserver; the role there may create databases). A
 * case's database is dropped when it releases its rig, and when it fails
 * (TEST_FAIL exits, so atexit runs); a case killed by its timeout leaves
 * its database to the server's removal.
 *
 *   TEST_CASES_ONCE(a, b)   cases run once: SQLite only, or no store at all
 *   TEST_CASES_BOTH(c, d)   cases run on SQLite, then as "pg/c", "pg/d" on
 *                           PostgreSQL; their rigs come from store_rig_init()
 *   STORE_TEST_MAIN()       main(): the ONCE cases, then the BOTH cases on
 *                           each backend
 *
 * Without $STROBE_TEST_PG_URI, or with a strobe built without the
 * PostgreSQL backend, the PostgreSQL pass prints one "# skip" comment and
 * runs nothing. Raw reads of the store (store_rig_int) go through the
 * sqlite3 library or through psql ($STROBE_TEST_PSQL, else psql on PATH).
 */
#ifndef STROBE_TEST_STORE_RIG_H
#define STROBE_TEST_STORE_RIG_H

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/schema.h"
#include "store/schema_pg.h"
#include "store/store.h"

#include "fixture.h"
#include "test.h"

/* Set by main() for the PostgreSQL pass; each forked case inherits it. */
static const char *store_rig_pg_base;

struct store_rig {
    char dir[512];  /* a scratch folder, on both backends */
    char db[1024];  /* what store_open() takes: the file, or the database's URI */
    char pg_db[64]; /* PostgreSQL: the database made for this case, "" once dropped */
    int pg;         /* whether this rig is a PostgreSQL database */
};

/* Run psql on uri with one SQL command; its unaligned, tuples-only output
 * (first line) into out when out is not NULL. Returns psql's exit status. */
static inline int store_rig_psql(const char *uri, const char *sql, char *out, size_t cap)
{
    const char *psql = getenv("STROBE_TEST_PSQL");
    int fds[2];
    if (pipe(fds) < 0)
        TEST_FAIL("pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        TEST_FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp(psql && *psql ? psql : "psql", "psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", uri,
               "-c", sql, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    buf[got] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (out && cap) {
        size_t len = strlen(buf) < cap - 1 ? strlen(buf) : cap - 1;
        memcpy(out, buf, len);
        out[len] = '\0';
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* base with its database name replaced by db (the path of the URI). */
static inline void store_rig_pg_uri(char *out, size_t cap, const char *base, const char *db)
{
    const char *host = strstr(base, "://");
    host = host ? host + 3 : base;
    size_t head = (size_t)(host - base) + strcspn(host, "/?");
    const char *query = strchr(host, '?');
    int n = snprintf(out, cap, "%.*s/%s%s", (int)head, base, db, query ? query : "");
    if (n < 0 || (size_t)n >= cap)
        TEST_FAIL("URI too long: %s", base);
}

#define STORE_RIG_PENDING 4
static char store_rig_pending[STORE_RIG_PENDING][64]; /* databases to drop at exit */
static pid_t store_rig_owner; /* the process that made them: not a child it forks */

static inline void store_rig_drop(const char *db)
{
    char sql[160]; /* a name is at most 63 bytes (PostgreSQL's NAMEDATALEN - 1) */
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%.63s\" WITH (FORCE)", db);
    if (store_rig_psql(store_rig_pg_base, sql, NULL, 0) != 0)
        fprintf(stderr, "  cannot drop database %s\n", db);
}

static inline void store_rig_drop_pending(void)
{
    if (getpid() != store_rig_owner)
        return;
    for (int i = 0; i < STORE_RIG_PENDING; i++)
        if (store_rig_pending[i][0]) {
            store_rig_drop(store_rig_pending[i]);
            store_rig_pending[i][0] = '\0';
        }
}

/* A fresh, empty store for one case: r->db is its URI. */
static inline void store_rig_init(struct store_rig *r)
{
    memset(r, 0, sizeof(*r));
    fixture_tmpdir(r->dir, sizeof(r->dir));
    if (!store_rig_pg_base) {
        fixture_join(r->db, sizeof(r->db), r->dir, "strobe.db");
        return;
    }
    static int made;
    r->pg = 1;
    snprintf(r->pg_db, sizeof(r->pg_db), "strobe_test_%ld_%d", (long)getpid(), made++);
    char sql[160];
    snprintf(sql, sizeof(sql), "CREATE DATABASE \"%.63s\"", r->pg_db);
    if (store_rig_psql(store_rig_pg_base, sql, NULL, 0) != 0)
        TEST_FAIL("cannot create database %s", r->pg_db);
    int slot = 0;
    while (slot < STORE_RIG_PENDING && store_rig_pending[slot][0])
        slot++;
    if (slot == STORE_RIG_PENDING)
        TEST_FAIL("more than %d PostgreSQL rigs at once", STORE_RIG_PENDING);
    if (made == 1) {
        store_rig_owner = getpid();
        atexit(store_rig_drop_pending);
    }
    snprintf(store_rig_pending[slot], sizeof(store_rig_pending[slot]), "%s", r->pg_db);
    store_rig_pg_uri(r->db, sizeof(r->db), store_rig_pg_base, r->pg_db);
}

/* Remove the store and the scratch folder (close the store first). */
static inline void store_rig_release(struct store_rig *r)
{
    if (r->pg && r->pg_db[0]) {
        store_rig_drop(r->pg_db);
        for (int i = 0; i < STORE_RIG_PENDING; i++)
            if (strcmp(store_rig_pending[i], r->pg_db) == 0)
                store_rig_pending[i][0] = '\0';
        r->pg_db[0] = '\0';
    }
    fixture_rmtree(r->dir);
}

/* The first column of the first row of sql, run on the SQLite file at path
 * directly, as an integer; 0 when there is no row. */
static inline int64_t store_rig_sqlite_int(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        TEST_FAIL("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* The same on the rig's store, of either backend (a connection of its own). */
static inline int64_t store_rig_int(const struct store_rig *r, const char *sql)
{
    if (!r->pg)
        return store_rig_sqlite_int(r->db, sql);
    char out[64];
    if (store_rig_psql(r->db, sql, out, sizeof(out)) != 0)
        TEST_FAIL("psql: %s", sql);
    return strtoll(out, NULL, 10);
}

/* SQL on the rig's store directly: sqlite3 or psql (a schema of an older
 * version, a row written behind strobe's back). */
static inline void store_rig_exec(const struct store_rig *r, const char *sql)
{
    if (r->pg) {
        if (store_rig_psql(r->db, sql, NULL, 0) != 0)
            TEST_FAIL("psql: %.200s", sql);
        return;
    }
    sqlite3 *db;
    if (sqlite3_open(r->db, &db) != SQLITE_OK)
        TEST_FAIL("sqlite3_open(%s) failed", r->db);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        TEST_FAIL("%.200s: %s", sql, msg);
    sqlite3_close(db);
}

/* The schema version as stored, on either backend. */
static inline int64_t store_rig_version(const struct store_rig *r)
{
    return store_rig_int(r,
                         r->pg ? "SELECT max(version) FROM strobe_schema" : "PRAGMA user_version");
}

/* A reader that may not write the store. SQLite: from store_rig_readonly_on()
 * to _off(), every main file opens read-only whatever was asked, as one this
 * process may not write (another user's, a read-only mount): root, which
 * runs CI, may write any file. PostgreSQL: the URI of a session refused
 * every write, as on a hot standby (into uri). */
static sqlite3_vfs *store_rig_real_vfs;

static inline int store_rig_readonly_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f,
                                          int flags, int *out_flags)
{
    (void)vfs;
    if (flags & SQLITE_OPEN_MAIN_DB)
        flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
    return store_rig_real_vfs->xOpen(store_rig_real_vfs, name, f, flags, out_flags);
}

static inline void store_rig_readonly_on(const struct store_rig *r, char *uri, size_t cap)
{
    static sqlite3_vfs ro;
    int n = r->pg ? snprintf(uri, cap, "%s%coptions=-c%%20default_transaction_read_only%%3Don",
                             r->db, strchr(r->db, '?') ? '&' : '?')
                  : snprintf(uri, cap, "%s", r->db);
    if (n < 0 || (size_t)n >= cap)
        TEST_FAIL("the read-only URI does not fit");
    if (r->pg)
        return;
    store_rig_real_vfs = sqlite3_vfs_find(NULL);
    ro = *store_rig_real_vfs;
    ro.zName = "readonly";
    ro.xOpen = store_rig_readonly_open;
    if (sqlite3_vfs_register(&ro, 1) != SQLITE_OK)
        TEST_FAIL("cannot register the read-only VFS");
}

static inline void store_rig_readonly_off(const struct store_rig *r)
{
    if (!r->pg)
        sqlite3_vfs_unregister(sqlite3_vfs_find("readonly"));
}

/* store_open(uri, readonly), which must succeed. */
static inline struct store *store_rig_open(const char *uri, int readonly)
{
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(uri, readonly, &s, &err);
    if (rc < 0)
        TEST_FAIL("store_open('%s', readonly=%d) = %d: %s", uri, readonly, rc, err.buf);
    strbuf_release(&err);
    return s;
}

/* 1 when the rig's store has a table of that name (a plain word), else 0. */
static inline int64_t store_rig_has_table(const struct store_rig *r, const char *table)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             r->pg ? "SELECT count(*) FROM pg_tables WHERE tablename='%s'"
                   : "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='%s'",
             table);
    return store_rig_int(r, sql);
}

/* A fresh rig holding a store as strobe left it at schema version (5 or
 * later on PostgreSQL), from its own migrations; SQLite's in WAL mode, as
 * strobe makes it. */
static inline void store_rig_make_old(struct store_rig *r, int version)
{
    store_rig_init(r);
    char bump[96];
    if (r->pg) {
        snprintf(bump, sizeof(bump),
                 "CREATE TABLE strobe_schema(version BIGINT NOT NULL);"
                 " INSERT INTO strobe_schema VALUES(%d)",
                 version);
        store_rig_exec(r, bump);
        for (size_t i = 0; i < sizeof(pg_migrations) / sizeof(pg_migrations[0]); i++)
            if (pg_migrations[i].version <= version)
                store_rig_exec(r, pg_migrations[i].sql);
    } else {
        store_rig_exec(r, "PRAGMA journal_mode=WAL");
        for (int i = 0; i < version; i++)
            store_rig_exec(r, schema_migrations[i]);
        snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", version);
        store_rig_exec(r, bump);
    }
}

/* Whether store_open() takes PostgreSQL URIs in this build: a build without
 * the backend says so without connecting. Nothing listens on port 1. */
static inline int store_rig_pg_built(void)
{
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open("postgresql://strobe@127.0.0.1:1/none?connect_timeout=2", 1, &s, &err);
    int built = !(rc < 0 && strstr(err.buf, "not built"));
    strbuf_release(&err);
    store_close(rc < 0 ? NULL : s);
    return built;
}

#define TEST_PG_ENTRY(name) {"pg/" #name, test_##name},
#define TEST_CASES_ONCE(...)                                                                       \
    static const struct test_case once_cases[] = {TEST_FOREACH(TEST_ENTRY, __VA_ARGS__)};
#define TEST_CASES_BOTH(...)                                                                       \
    static const struct test_case both_cases[] = {TEST_FOREACH(TEST_ENTRY, __VA_ARGS__)};          \
    static const struct test_case pg_cases[] = {TEST_FOREACH(TEST_PG_ENTRY, __VA_ARGS__)};

#define STORE_TEST_MAIN()                                                                          \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        int failed = test_main(once_cases, ARRAY_SIZE(once_cases), argc, argv);                    \
        failed |= test_main(both_cases, ARRAY_SIZE(both_cases), argc, argv);                       \
        const char *base = getenv("STROBE_TEST_PG_URI");                                           \
        if (!base || !*base) {                                                                     \
            printf("# skip: STROBE_TEST_PG_URI is not set: no PostgreSQL cases\n");                \
        } else if (!store_rig_pg_built()) {                                                        \
            printf("# skip: this strobe has no PostgreSQL backend: no PostgreSQL cases\n");        \
        } else {                                                                                   \
            store_rig_pg_base = base;                                                              \
            failed |= test_main(pg_cases, ARRAY_SIZE(pg_cases), argc, argv);                       \
        }                                                                                          \
        return failed;                                                                             \
    }

#endif
