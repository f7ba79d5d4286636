/*
 * SQLite backend. WAL mode so readers never block the recorder and several
 * recorders can share one file (each commit takes the write lock briefly;
 * busy_timeout waits for it). synchronous=NORMAL: a commit survives a crash
 * of the recorder; only a power loss can take the last commits back.
 */
#include <ctype.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/err.h"
#include "store/backend.h"
#include "store/schema.h"
#include "store/store.h"

#define BUSY_TIMEOUT_MS 5000

enum {
    ST_RUN_INSERT,
    ST_ATTR_INSERT,
    ST_RUN_UPDATE,
    ST_SERIES_INSERT,
    ST_SERIES_META,
    ST_BLOCK_UPSERT,
    ST_RUNS_ALL,
    ST_RUNS_EXPERIMENT,
    ST_RUNS_OF_PARENT,
    ST_RUNS_OF_JOIN_KEY,
    ST_RUNS_OF_STATUS,
    ST_RUNS_OF_ID,
    ST_ATTRS_OF_RUN,
    ST_SERIES_OF_RUN,
    ST_BLOCKS_OF_SERIES,
    ST_EVENT_NAME_INSERT,
    ST_PROCESS_UPSERT,
    ST_EVENT_BLOCK_INSERT,
    ST_EVENT_NAMES_OF_RUN,
    ST_PROCESSES_OF_RUN,
    ST_EVENT_BLOCKS_OF_RUN,
    ST_RULE_CONFIG_PUT,
    ST_RULE_RESULT_INSERT,
    ST_FINDING_INSERT,
    ST_RULE_CONFIG_OF_RUN,
    ST_RULE_RESULTS_OF_RUN,
    ST_FINDINGS_OF_RUN,
    ST_RUN_TEXT_PUT,
    ST_RUN_TEXTS_OF_RUN,
    ST_RUN_TEXT_OF_KIND,
    ST_BLOCKS_IN_RANGE,
    ST_SERIES_FIND,
    ST_BLOCK_DATA,
    ST_CAMPAIGN_PUT,
    ST_CAMPAIGN_GET,
    ST_CAMPAIGNS_ALL,
    ST_CAMPAIGN_DELETE,
    ST_PY_BLOCK_PUT,
    ST_PY_BLOCKS_OF_RUN,
    ST_COUNT
};

static const char *const statements[ST_COUNT] = {
    [ST_RUN_INSERT] =
        "INSERT INTO runs(id, name, experiment, command, cwd, user, host, kernel, cpu_model,"
        " cpu_count, mem_total_bytes, start_ns, status, git_commit, git_dirty, python_version,"
        " torch_version, interval_ns, recorder_pid, strobe_version, exit_code, signal, end_ns,"
        " last_ns, error, workload, recorder_boot_id, recorder_pid_ns, recorder_time_ns,"
        " recorder_start_ticks, parent_id, node, join_key, clock_offset_ns, clock_rtt_ns,"
        " clock_shift_ns)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,"
        " ?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36)",
    [ST_ATTR_INSERT] = "INSERT OR REPLACE INTO run_attrs(run_id, kind, key, value)"
                       " VALUES(?1,?2,?3,?4)",
    [ST_RUN_UPDATE] = "UPDATE runs SET end_ns=?2, last_ns=?3, exit_code=?4, signal=?5, status=?6,"
                      " samples=?7, points=?8, missed=?9, dropped=?10, error=?11, events=?12,"
                      " events_dropped=?13, events_invalid=?14, clock_offset_ns=?15,"
                      " clock_rtt_ns=?16, start_ns=COALESCE(NULLIF(?17, 0), start_ns) WHERE id=?1",
    [ST_SERIES_INSERT] = "INSERT INTO series(run_id, name, labels, unit, meta)"
                         " VALUES(?1,?2,?3,?4,?5)",
    [ST_SERIES_META] = "UPDATE series SET meta=?2 WHERE id=?1",
    [ST_BLOCK_UPSERT] =
        "INSERT INTO blocks(series_id, start_ns, end_ns, count, min, max, sum, first, last, data)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
        " ON CONFLICT(series_id, start_ns) DO UPDATE SET end_ns=excluded.end_ns,"
        " count=excluded.count, min=excluded.min, max=excluded.max, sum=excluded.sum,"
        " first=excluded.first, last=excluded.last, data=excluded.data",
#define RUN_COLUMNS                                                                                \
    "id, name, experiment, command, cwd, user, host, kernel, cpu_model, cpu_count,"                \
    " mem_total_bytes, start_ns, end_ns, last_ns, exit_code, signal, status, git_commit,"          \
    " git_dirty, python_version, torch_version, interval_ns, samples, points, missed, dropped,"    \
    " recorder_pid, strobe_version, error, events, events_dropped, events_invalid, workload,"      \
    " recorder_boot_id, recorder_pid_ns, recorder_time_ns, recorder_start_ticks, parent_id, node," \
    " join_key, clock_offset_ns, clock_rtt_ns, clock_shift_ns"
    [ST_RUNS_ALL] = "SELECT " RUN_COLUMNS " FROM runs ORDER BY start_ns DESC, id",
    [ST_RUNS_OF_PARENT] =
        "SELECT " RUN_COLUMNS " FROM runs WHERE parent_id=?1 ORDER BY start_ns DESC, id",
    [ST_RUNS_OF_JOIN_KEY] =
        "SELECT " RUN_COLUMNS " FROM runs WHERE join_key=?1 ORDER BY start_ns DESC, id",
    [ST_RUNS_OF_ID] = "SELECT " RUN_COLUMNS " FROM runs WHERE id=?1",
    [ST_RUNS_OF_STATUS] =
        "SELECT " RUN_COLUMNS " FROM runs WHERE status=?1 ORDER BY start_ns DESC, id",
    [ST_RUNS_EXPERIMENT] =
        "SELECT " RUN_COLUMNS " FROM runs WHERE experiment=?1 ORDER BY start_ns DESC, id",
    [ST_ATTRS_OF_RUN] = "SELECT kind, key, value FROM run_attrs WHERE run_id=?1 ORDER BY kind, key",
    [ST_SERIES_OF_RUN] =
        "SELECT s.id, s.name, s.labels, s.unit, s.meta, COALESCE(SUM(b.count),0), MIN(b.min),"
        " MAX(b.max), SUM(b.sum), MIN(b.start_ns), MAX(b.end_ns),"
        " COALESCE(SUM(length(b.data)),0)"
        " FROM series s LEFT JOIN blocks b ON b.series_id = s.id"
        " WHERE s.run_id=?1 GROUP BY s.id ORDER BY s.name, s.labels COLLATE strobe_natural",
    [ST_BLOCKS_OF_SERIES] =
        "SELECT start_ns, end_ns, count, min, max, sum, first, last, data FROM blocks"
        " WHERE series_id=?1 ORDER BY start_ns",
    [ST_EVENT_NAME_INSERT] =
        "INSERT OR REPLACE INTO event_names(run_id, id, name) VALUES(?1,?2,?3)",
    [ST_PROCESS_UPSERT] =
        "INSERT OR REPLACE INTO processes(run_id, pid, ppid, comm, role, rank, local_rank,"
        " world_size, worker_id) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [ST_EVENT_BLOCK_INSERT] =
        "INSERT INTO event_blocks(run_id, pid, tid, start_ns, end_ns, step_min, step_max, count,"
        " data) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [ST_EVENT_NAMES_OF_RUN] = "SELECT id, name FROM event_names WHERE run_id=?1 ORDER BY id",
    [ST_PROCESSES_OF_RUN] = "SELECT pid, ppid, comm, role, rank, local_rank, world_size, worker_id"
                            " FROM processes WHERE run_id=?1 ORDER BY pid",
    [ST_EVENT_BLOCKS_OF_RUN] =
        "SELECT pid, tid, start_ns, end_ns, step_min, step_max, count, data FROM event_blocks"
        " WHERE run_id=?1 AND end_ns >= ?2 AND start_ns <= ?3 ORDER BY start_ns, id",
    [ST_RULE_CONFIG_PUT] =
        "INSERT OR REPLACE INTO rule_config(run_id, interval_ns, rules, params, mode, evaluated_ns)"
        " VALUES(?1,?2,?3,?4,?5,?6)",
    [ST_RULE_RESULT_INSERT] =
        "INSERT OR REPLACE INTO rule_results(run_id, rule, status, datapoints, violations, detail,"
        " report) VALUES(?1,?2,?3,?4,?5,?6,?7)",
    [ST_FINDING_INSERT] =
        "INSERT OR REPLACE INTO findings(run_id, seq, rule, severity, start_ns, end_ns, scope,"
        " evidence, events, recommendation) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
    [ST_RULE_CONFIG_OF_RUN] = "SELECT interval_ns, rules, params, mode, evaluated_ns"
                              " FROM rule_config WHERE run_id=?1",
    [ST_RULE_RESULTS_OF_RUN] = "SELECT rule, status, datapoints, violations, detail, report"
                               " FROM rule_results WHERE run_id=?1",
    [ST_FINDINGS_OF_RUN] = "SELECT rule, severity, start_ns, end_ns, scope, evidence, events,"
                           " recommendation FROM findings WHERE run_id=?1 ORDER BY seq",
    [ST_RUN_TEXT_PUT] = "INSERT OR REPLACE INTO run_texts(run_id, kind, bytes, text)"
                        " VALUES(?1,?2,?3,?4)",
    [ST_RUN_TEXTS_OF_RUN] = "SELECT kind, bytes, text FROM run_texts WHERE run_id=?1 ORDER BY kind",
    [ST_RUN_TEXT_OF_KIND] = "SELECT kind, bytes, text FROM run_texts WHERE run_id=?1 AND kind=?2",
    /* blocks of a series do not overlap, so the first one reaching from_ns
     * is the last one starting at or before it: found in the (series_id,
     * start_ns) index, and the scan starts there rather than at the first */
    /* without data: a selected column is loaded (copied) at every step
     * whether read or not, so the data comes from ST_BLOCK_DATA on demand */
    [ST_BLOCKS_IN_RANGE] =
        "SELECT start_ns, end_ns, count, min, max, sum, first, last, id FROM blocks"
        " WHERE series_id=?1 AND start_ns <= ?3 AND start_ns >= COALESCE((SELECT MAX(start_ns)"
        " FROM blocks WHERE series_id=?1 AND start_ns <= ?2), ?2) AND end_ns >= ?2"
        " ORDER BY start_ns",
    /* the time range from the first and the last block, each one index probe */
    [ST_BLOCK_DATA] = "SELECT data FROM blocks WHERE id=?1",
    [ST_SERIES_FIND] =
        "SELECT id, unit, meta, (SELECT start_ns FROM blocks WHERE series_id=s.id ORDER BY start_ns"
        " LIMIT 1), (SELECT end_ns FROM blocks WHERE series_id=s.id ORDER BY start_ns DESC LIMIT 1)"
        " FROM series s WHERE run_id=?1 AND name=?2 AND labels=?3",
    /* created_ns is the first put's: an update leaves it */
    [ST_CAMPAIGN_PUT] =
        "INSERT INTO campaigns(name, spec_hash, file, created_ns, updated_ns, state)"
        " VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(name) DO UPDATE SET spec_hash=excluded.spec_hash,"
        " file=excluded.file, updated_ns=excluded.updated_ns, state=excluded.state",
#define CAMPAIGN_COLUMNS "name, spec_hash, file, created_ns, updated_ns, state"
    [ST_CAMPAIGN_GET] = "SELECT " CAMPAIGN_COLUMNS " FROM campaigns WHERE name=?1",
    [ST_CAMPAIGNS_ALL] =
        "SELECT " CAMPAIGN_COLUMNS " FROM campaigns ORDER BY updated_ns DESC, name",
    [ST_CAMPAIGN_DELETE] = "DELETE FROM campaigns WHERE name=?1",
    [ST_PY_BLOCK_PUT] = "INSERT OR REPLACE INTO py_blocks(run_id, seq, kind, start_ns, end_ns,"
                        " count, data) VALUES(?1,?2,?3,?4,?5,?6,?7)",
    /* walks py_blocks_by_time: (run_id, seq) and the columns tested */
    [ST_PY_BLOCKS_OF_RUN] =
        "SELECT seq, kind, start_ns, end_ns, count, data FROM py_blocks"
        " WHERE run_id=?1 AND (kind=0 OR (end_ns >= ?2 AND start_ns <= ?3)) ORDER BY seq",
};

struct sqlite_store {
    struct store base;
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int64_t version; /* the schema as read: older only where this reader may not upgrade it */
};

/* Labels in natural order (glibc's version order): "gpu=2" before
 * "gpu=10", where text order put GPU and core 10 between 1 and 2 in every
 * reader. The texts are not NUL-terminated. */
static int natural_collate(void *arg, int na, const void *a, int nb, const void *b)
{
    (void)arg;
    char x[256], y[256];
    if (na >= (int)sizeof(x) || nb >= (int)sizeof(y)) { /* longer than any label set: as text */
        int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
        return c ? c : (na > nb) - (na < nb);
    }
    memcpy(x, a, (size_t)na);
    x[na] = '\0';
    memcpy(y, b, (size_t)nb);
    y[nb] = '\0';
    return strverscmp(x, y);
}

static int map_rc(struct sqlite_store *s, int rc, const char *what)
{
    strbuf_reset(&s->base.err);
    const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    if (what)
        strbuf_addf(&s->base.err, "%s: %s", what, msg);
    else
        strbuf_adds(&s->base.err, msg);
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return -STROBE_EFULL;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -STROBE_EBUSY;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return -STROBE_ECORRUPT;
    default:
        return -STROBE_ESTORE;
    }
}

static int exec_sql(struct sqlite_store *s, const char *sql)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    /* no prefix of its own: the caller's message says what was being done */
    return rc == SQLITE_OK ? 0 : map_rc(s, rc, NULL);
}

/* Switching a new file to WAL needs an exclusive lock, and SQLite does not
 * wait for it through the busy handler when another connection is switching
 * the same file at that moment (it answers SQLITE_BUSY at once rather than
 * risk a deadlock): two recorders creating one store would see "database is
 * locked". Retry for as long as the busy timeout would have waited. */
static int set_wal(struct sqlite_store *s)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &q, NULL);
    for (int waited_ms = 0; rc == SQLITE_OK; waited_ms += 10) {
        rc = sqlite3_step(q);
        if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= BUSY_TIMEOUT_MS)
            break;
        sqlite3_reset(q);
        sqlite3_sleep(10);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(q);
        /* no prefix of its own: the caller's message says what was being done */
        return map_rc(s, rc, NULL);
    }
    /* the pragma answers the mode it is left in rather than failing: a file
     * system without shared memory for the -shm file keeps the old one, and
     * readers would then block the recorder's commits (and it theirs) */
    const char *mode = (const char *)sqlite3_column_text(q, 0);
    rc = 0;
    if (!mode || strcmp(mode, "wal") != 0) {
        strbuf_reset(&s->base.err);
        strbuf_addf(&s->base.err,
                    "cannot switch it to WAL mode (journal mode stays '%s'); put the store on "
                    "a local file system",
                    mode ? mode : "unknown");
        rc = -STROBE_ESTORE;
    }
    sqlite3_finalize(q);
    return rc;
}

static sqlite3_stmt *stmt(struct sqlite_store *s, int which)
{
    if (!s->st[which] && sqlite3_prepare_v3(s->db, statements[which], -1, SQLITE_PREPARE_PERSISTENT,
                                            &s->st[which], NULL) != SQLITE_OK)
        return NULL;
    sqlite3_reset(s->st[which]);
    sqlite3_clear_bindings(s->st[which]);
    return s->st[which];
}

static void bind_text(sqlite3_stmt *q, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* Step a statement that returns no rows. */
static int step_done(struct sqlite_store *s, sqlite3_stmt *q, const char *what)
{
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), what);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : map_rc(s, rc, what);
}

static void sqlite_close(struct store *base)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);
    strbuf_release(&s->base.err);
    free(s->base.uri);
    free(s);
}

static int sqlite_begin(struct store *base)
{
    /* IMMEDIATE takes the write lock now, so a busy store is seen here and
     * not half-way through a batch */
    return exec_sql((struct sqlite_store *)base, "BEGIN IMMEDIATE");
}

static int sqlite_commit(struct store *base)
{
    return exec_sql((struct sqlite_store *)base, "COMMIT");
}

static int sqlite_rollback(struct store *base)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    if (sqlite3_get_autocommit(s->db))
        return 0;
    return exec_sql(s, "ROLLBACK");
}

static int insert_attrs(struct sqlite_store *s, const char *run_id, const char *kind,
                        const struct kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        sqlite3_stmt *q = stmt(s, ST_ATTR_INSERT);
        if (q) {
            bind_text(q, 1, run_id);
            bind_text(q, 2, kind);
            bind_text(q, 3, l->items[i].key);
            bind_text(q, 4, l->items[i].value);
        }
        int rc = step_done(s, q, "cannot record run attributes");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int sqlite_run_attrs_put(struct store *base, const char *run_id, const char *kind,
                                const struct kv_list *l)
{
    return insert_attrs((struct sqlite_store *)base, run_id, kind, l);
}

static void bind_int_or_null(sqlite3_stmt *q, int i, int64_t v, int is_null)
{
    if (is_null)
        sqlite3_bind_null(q, i);
    else
        sqlite3_bind_int64(q, i, v);
}

/* The recorder's identity in columns i..i+3 (boot id, pid and time
 * namespaces, start ticks); NULL where unknown. */
static void bind_recorder(sqlite3_stmt *q, int i, const struct procid *id)
{
    bind_text(q, i, id->boot_id[0] ? id->boot_id : NULL);
    bind_int_or_null(q, i + 1, id->pid_ns, id->pid_ns == 0);
    bind_int_or_null(q, i + 2, id->time_ns, id->time_ns == 0);
    bind_int_or_null(q, i + 3, id->start_ticks, id->start_ticks < 0);
}

/* A node's clock offset and its round trip, NULL until measured. */
static void bind_clock(sqlite3_stmt *q, int i, const struct run_record *r)
{
    bind_int_or_null(q, i, r->clock_offset_ns, r->clock_rtt_ns <= 0);
    bind_int_or_null(q, i + 1, r->clock_rtt_ns, r->clock_rtt_ns <= 0);
}

static int sqlite_run_insert(struct store *base, const struct run_record *r)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_RUN_INSERT);
    if (q) {
        bind_text(q, 1, r->id);
        bind_text(q, 2, r->name);
        bind_text(q, 3, r->experiment);
        bind_text(q, 4, r->command_json);
        bind_text(q, 5, r->cwd);
        bind_text(q, 6, r->user);
        bind_text(q, 7, r->host);
        bind_text(q, 8, r->kernel);
        bind_text(q, 9, r->cpu_model);
        sqlite3_bind_int(q, 10, r->cpu_count);
        sqlite3_bind_int64(q, 11, r->mem_total_bytes);
        sqlite3_bind_int64(q, 12, r->start_ns);
        bind_text(q, 13, r->status);
        bind_text(q, 14, r->git_commit);
        bind_int_or_null(q, 15, r->git_dirty, r->git_dirty < 0);
        bind_text(q, 16, r->python_version);
        bind_text(q, 17, r->torch_version);
        sqlite3_bind_int64(q, 18, r->interval_ns);
        sqlite3_bind_int64(q, 19, r->recorder_pid);
        bind_text(q, 20, r->strobe_version);
        bind_int_or_null(q, 21, r->exit_code, r->exit_code < 0);
        bind_int_or_null(q, 22, r->signal, r->signal == 0);
        bind_int_or_null(q, 23, r->end_ns, r->end_ns == 0);
        bind_int_or_null(q, 24, r->last_ns, r->last_ns == 0);
        bind_text(q, 25, r->error);
        bind_text(q, 26, r->workload);
        bind_recorder(q, 27, &r->recorder);
        bind_text(q, 31, r->parent_id);
        bind_text(q, 32, r->node);
        bind_text(q, 33, r->join_key);
        bind_clock(q, 34, r);
        bind_int_or_null(q, 36, r->clock_shift_ns, r->clock_shift_ns == 0);
    }
    int rc = step_done(s, q, "cannot record run");
    if (rc == 0)
        rc = insert_attrs(s, r->id, "tag", &r->tags);
    if (rc == 0)
        rc = insert_attrs(s, r->id, "param", &r->params);
    if (rc == 0)
        rc = insert_attrs(s, r->id, "env", &r->env);
    return rc;
}

static int sqlite_run_update(struct store *base, const struct run_record *r)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_RUN_UPDATE);
    if (q) {
        bind_text(q, 1, r->id);
        bind_int_or_null(q, 2, r->end_ns, r->end_ns == 0);
        bind_int_or_null(q, 3, r->last_ns, r->last_ns == 0);
        bind_int_or_null(q, 4, r->exit_code, r->exit_code < 0);
        bind_int_or_null(q, 5, r->signal, r->signal == 0);
        bind_text(q, 6, r->status);
        sqlite3_bind_int64(q, 7, r->samples);
        sqlite3_bind_int64(q, 8, r->points);
        sqlite3_bind_int64(q, 9, r->missed);
        sqlite3_bind_int64(q, 10, r->dropped);
        bind_text(q, 11, r->error);
        sqlite3_bind_int64(q, 12, r->events);
        sqlite3_bind_int64(q, 13, r->events_dropped);
        sqlite3_bind_int64(q, 14, r->events_invalid);
        bind_clock(q, 15, r);
        sqlite3_bind_int64(q, 17, r->start_ns);
    }
    return step_done(s, q, "cannot update run");
}

static int sqlite_series_insert(struct store *base, const char *run_id, const char *name,
                                const char *labels, const char *unit, const char *meta,
                                int64_t *out_id)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_SERIES_INSERT);
    if (q) {
        bind_text(q, 1, run_id);
        bind_text(q, 2, name);
        bind_text(q, 3, labels);
        bind_text(q, 4, unit);
        bind_text(q, 5, meta);
    }
    int rc = step_done(s, q, "cannot define series");
    if (rc == 0)
        *out_id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

static int sqlite_series_update_meta(struct store *base, int64_t id, const char *meta)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_SERIES_META);
    if (q) {
        sqlite3_bind_int64(q, 1, id);
        bind_text(q, 2, meta);
    }
    return step_done(s, q, "cannot update series");
}

/* NaN is stored as NULL by SQLite's REAL binding; keep it NULL explicitly
 * so it reads back as NaN, not 0. */
static void bind_real(sqlite3_stmt *q, int i, double v)
{
    if (v != v)
        sqlite3_bind_null(q, i);
    else
        sqlite3_bind_double(q, i, v);
}

static int sqlite_block_upsert(struct store *base, int64_t series_id, const struct block_stats *st,
                               const void *data, size_t len)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_BLOCK_UPSERT);
    if (q) {
        sqlite3_bind_int64(q, 1, series_id);
        sqlite3_bind_int64(q, 2, st->start_ns);
        sqlite3_bind_int64(q, 3, st->end_ns);
        sqlite3_bind_int64(q, 4, st->count);
        bind_real(q, 5, st->min);
        bind_real(q, 6, st->max);
        bind_real(q, 7, st->sum);
        bind_real(q, 8, st->first);
        bind_real(q, 9, st->last);
        sqlite3_bind_blob(q, 10, data, (int)len, SQLITE_STATIC);
    }
    return step_done(s, q, "cannot write block");
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? strdup((const char *)t) : NULL;
}

static double col_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? __builtin_nan("")
                                                    : sqlite3_column_double(q, i);
}

static void read_recorder(sqlite3_stmt *q, int i, struct procid *id)
{
    const unsigned char *boot = sqlite3_column_text(q, i);
    snprintf(id->boot_id, sizeof(id->boot_id), "%s", boot ? (const char *)boot : "");
    id->pid_ns = sqlite3_column_int64(q, i + 1);
    id->time_ns = sqlite3_column_int64(q, i + 2);
    id->start_ticks =
        sqlite3_column_type(q, i + 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, i + 3);
}

static void read_run_row(sqlite3_stmt *q, struct run_record *r)
{
    const unsigned char *id = sqlite3_column_text(q, 0);
    snprintf(r->id, sizeof(r->id), "%s", id ? (const char *)id : "");
    r->name = col_dup(q, 1);
    r->experiment = col_dup(q, 2);
    r->command_json = col_dup(q, 3);
    r->cwd = col_dup(q, 4);
    r->user = col_dup(q, 5);
    r->host = col_dup(q, 6);
    r->kernel = col_dup(q, 7);
    r->cpu_model = col_dup(q, 8);
    r->cpu_count = sqlite3_column_int(q, 9);
    r->mem_total_bytes = sqlite3_column_int64(q, 10);
    r->start_ns = sqlite3_column_int64(q, 11);
    r->end_ns = sqlite3_column_int64(q, 12);
    r->last_ns = sqlite3_column_int64(q, 13);
    r->exit_code = sqlite3_column_type(q, 14) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 14);
    r->signal = sqlite3_column_int(q, 15);
    const unsigned char *status = sqlite3_column_text(q, 16);
    snprintf(r->status, sizeof(r->status), "%s", status ? (const char *)status : "");
    r->git_commit = col_dup(q, 17);
    r->git_dirty = sqlite3_column_type(q, 18) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 18);
    r->python_version = col_dup(q, 19);
    r->torch_version = col_dup(q, 20);
    r->interval_ns = sqlite3_column_int64(q, 21);
    r->samples = sqlite3_column_int64(q, 22);
    r->points = sqlite3_column_int64(q, 23);
    r->missed = sqlite3_column_int64(q, 24);
    r->dropped = sqlite3_column_int64(q, 25);
    r->recorder_pid = sqlite3_column_int64(q, 26);
    r->strobe_version = col_dup(q, 27);
    r->error = col_dup(q, 28);
    r->events = sqlite3_column_int64(q, 29);
    r->events_dropped = sqlite3_column_int64(q, 30);
    r->events_invalid = sqlite3_column_int64(q, 31);
    r->workload = col_dup(q, 32);
    read_recorder(q, 33, &r->recorder);
    r->parent_id = col_dup(q, 37);
    r->node = col_dup(q, 38);
    r->join_key = col_dup(q, 39);
    r->clock_offset_ns = sqlite3_column_int64(q, 40);
    r->clock_rtt_ns = sqlite3_column_int64(q, 41);
    r->clock_shift_ns = sqlite3_column_int64(q, 42);
}

static int read_attrs(struct sqlite_store *s, struct run_record *r)
{
    /* a second statement object: the runs query is still stepping. Kept
     * prepared (it runs once per run listed: preparing it each time was
     * most of the cost of a list of a thousand runs); it is stepped to the
     * end here, before any callback could want it again. */
    sqlite3_stmt *q = stmt(s, ST_ATTRS_OF_RUN);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read run attributes");
    bind_text(q, 1, r->id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(q, 0);
        const char *key = (const char *)sqlite3_column_text(q, 1);
        const char *value = (const char *)sqlite3_column_text(q, 2);
        if (!kind || !key || !value)
            continue;
        struct kv_list *l = strcmp(kind, "tag") == 0     ? &r->tags
                            : strcmp(kind, "param") == 0 ? &r->params
                                                         : &r->env;
        kv_list_add(l, key, value);
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : map_rc(s, rc, "cannot read run attributes");
}

/* The runs of statement `which`, its ?1 bound to value (NULL: none). */
static int query_runs(struct sqlite_store *s, int which, const char *value, run_fn *fn, void *arg)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, statements[which], -1, &q, NULL) != SQLITE_OK)
        return map_rc(s, sqlite3_errcode(s->db), "cannot list runs");
    if (value)
        bind_text(q, 1, value);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct run_record r;
        run_record_init(&r);
        read_run_row(q, &r);
        read_attrs(s, &r);
        stop = fn(&r, arg);
        run_record_release(&r);
    }
    if (!stop && rc != SQLITE_DONE)
        stop = map_rc(s, rc, "cannot list runs");
    sqlite3_finalize(q);
    return stop < 0 ? stop : 0;
}

static int sqlite_runs_query(struct store *base, const char *experiment, run_fn *fn, void *arg)
{
    return query_runs((struct sqlite_store *)base, experiment ? ST_RUNS_EXPERIMENT : ST_RUNS_ALL,
                      experiment, fn, arg);
}

static int sqlite_runs_where(struct store *base, enum run_key key, const char *value, run_fn *fn,
                             void *arg)
{
    static const int which[] = {[RUNS_OF_PARENT] = ST_RUNS_OF_PARENT,
                                [RUNS_OF_JOIN_KEY] = ST_RUNS_OF_JOIN_KEY,
                                [RUNS_OF_ID] = ST_RUNS_OF_ID,
                                [RUNS_OF_STATUS] = ST_RUNS_OF_STATUS};
    return query_runs((struct sqlite_store *)base, which[key], value, fn, arg);
}

/* BEGIN IMMEDIATE took the write lock: joins are one at a time already. */
static int sqlite_join_lock(struct store *base, const char *key)
{
    (void)base;
    (void)key;
    return 0;
}

/* Nodes that share a file share a machine: each may lead. */
static int sqlite_try_lead(struct store *base, const char *key)
{
    (void)base;
    (void)key;
    return 1;
}

/* A file has no server: its clock is this machine's. */
static int sqlite_clock_ns(struct store *base, int64_t *out)
{
    (void)base;
    *out = clock_realtime_ns();
    return 0;
}

static int sqlite_series_query(struct store *base, const char *run_id, series_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, statements[ST_SERIES_OF_RUN], -1, &q, NULL) != SQLITE_OK)
        return map_rc(s, sqlite3_errcode(s->db), "cannot list series");
    bind_text(q, 1, run_id);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct series_record r = {
            .id = sqlite3_column_int64(q, 0),
            .run_id = run_id,
            .name = (const char *)sqlite3_column_text(q, 1),
            .labels = (const char *)sqlite3_column_text(q, 2),
            .unit = (const char *)sqlite3_column_text(q, 3),
            .meta = (const char *)sqlite3_column_text(q, 4),
            .count = sqlite3_column_int64(q, 5),
            .min = col_real(q, 6),
            .max = col_real(q, 7),
            .sum = col_real(q, 8),
            .start_ns = sqlite3_column_int64(q, 9),
            .end_ns = sqlite3_column_int64(q, 10),
            .bytes = sqlite3_column_int64(q, 11),
        };
        if (!r.labels)
            r.labels = "";
        if (!r.unit)
            r.unit = "";
        stop = fn(&r, arg);
    }
    if (!stop && rc != SQLITE_DONE)
        stop = map_rc(s, rc, "cannot list series");
    sqlite3_finalize(q);
    return stop < 0 ? stop : 0;
}

/* A block row's summary: columns 0-7 are start_ns, end_ns, count, min, max,
 * sum, first, last in every query of blocks. */
static struct block_stats block_row_stats(sqlite3_stmt *q)
{
    int64_t count = sqlite3_column_int64(q, 2);
    return (struct block_stats){
        .count = count > 0 && count <= UINT32_MAX ? (uint32_t)count : 0,
        .start_ns = sqlite3_column_int64(q, 0),
        .end_ns = sqlite3_column_int64(q, 1),
        .min = col_real(q, 3),
        .max = col_real(q, 4),
        .sum = col_real(q, 5),
        .first = col_real(q, 6),
        .last = col_real(q, 7),
    };
}

static int sqlite_blocks_query(struct store *base, int64_t series_id, block_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, statements[ST_BLOCKS_OF_SERIES], -1, &q, NULL) != SQLITE_OK)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read blocks");
    sqlite3_bind_int64(q, 1, series_id);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct block_record b = {.series_id = series_id, .st = block_row_stats(q)};
        b.data = sqlite3_column_blob(q, 8);
        b.len = (size_t)sqlite3_column_bytes(q, 8);
        stop = fn(&b, arg);
    }
    if (!stop && rc != SQLITE_DONE)
        stop = map_rc(s, rc, "cannot read blocks");
    sqlite3_finalize(q);
    return stop < 0 ? stop : 0;
}

static int sqlite_blocks_range_query(struct store *base, int64_t series_id, int64_t from_ns,
                                     int64_t to_ns, block_want_fn *want, block_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_BLOCKS_IN_RANGE);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read blocks");
    sqlite3_bind_int64(q, 1, series_id);
    sqlite3_bind_int64(q, 2, from_ns);
    sqlite3_bind_int64(q, 3, to_ns);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct block_record b = {.series_id = series_id, .st = block_row_stats(q)};
        sqlite3_stmt *d = NULL;
        if (want(&b.st, arg)) {
            d = stmt(s, ST_BLOCK_DATA);
            if (!d)
                break;
            sqlite3_bind_int64(d, 1, sqlite3_column_int64(q, 8));
            if (sqlite3_step(d) == SQLITE_ROW) {
                b.data = sqlite3_column_blob(d, 0);
                b.len = (size_t)sqlite3_column_bytes(d, 0);
            }
        }
        stop = fn(&b, arg);
        if (d)
            sqlite3_reset(d);
    }
    if (!stop && rc != SQLITE_DONE)
        stop = map_rc(s, rc, "cannot read blocks");
    sqlite3_reset(q);
    return stop < 0 ? stop : 0;
}

static int sqlite_series_find(struct store *base, const char *run_id, const char *name,
                              const char *labels, series_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_SERIES_FIND);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot find series");
    bind_text(q, 1, run_id);
    bind_text(q, 2, name);
    bind_text(q, 3, labels);
    int rc = sqlite3_step(q), out = -STROBE_ENOTFOUND;
    if (rc == SQLITE_ROW) {
        const unsigned char *unit = sqlite3_column_text(q, 1);
        struct series_record r = {
            .id = sqlite3_column_int64(q, 0),
            .run_id = run_id,
            .name = name,
            .labels = labels,
            .unit = unit ? (const char *)unit : "",
            .meta = (const char *)sqlite3_column_text(q, 2),
            .min = __builtin_nan(""),
            .max = __builtin_nan(""),
            .sum = __builtin_nan(""),
            .start_ns = sqlite3_column_int64(q, 3),
            .end_ns = sqlite3_column_int64(q, 4),
        };
        out = fn(&r, arg);
    } else if (rc != SQLITE_DONE) {
        out = map_rc(s, rc, "cannot find series");
    }
    sqlite3_reset(q);
    return out < 0 ? out : 0;
}

/* ---- framework events ------------------------------------------------------ */

static int sqlite_event_name_insert(struct store *base, const char *run_id, int64_t id,
                                    const char *name)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_EVENT_NAME_INSERT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, id);
        bind_text(q, 3, name);
    }
    return step_done(s, q, "cannot define event name");
}

static int sqlite_process_upsert(struct store *base, const char *run_id,
                                 const struct process_record *p)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_PROCESS_UPSERT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, p->pid);
        bind_int_or_null(q, 3, p->ppid, p->ppid < 0);
        bind_text(q, 4, p->comm);
        bind_text(q, 5, p->role);
        bind_int_or_null(q, 6, p->rank, p->rank < 0);
        bind_int_or_null(q, 7, p->local_rank, p->local_rank < 0);
        bind_int_or_null(q, 8, p->world_size, p->world_size < 0);
        bind_int_or_null(q, 9, p->worker_id, p->worker_id < 0);
    }
    return step_done(s, q, "cannot record process");
}

static int sqlite_event_block_insert(struct store *base, const char *run_id,
                                     const struct event_block_record *b)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_EVENT_BLOCK_INSERT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, b->pid);
        sqlite3_bind_int64(q, 3, b->tid);
        sqlite3_bind_int64(q, 4, b->start_ns);
        sqlite3_bind_int64(q, 5, b->end_ns);
        sqlite3_bind_int64(q, 6, b->step_min);
        sqlite3_bind_int64(q, 7, b->step_max);
        sqlite3_bind_int64(q, 8, b->count);
        sqlite3_bind_blob(q, 9, b->data, (int)b->len, SQLITE_STATIC);
    }
    return step_done(s, q, "cannot write event block");
}

static int64_t col_int_or(sqlite3_stmt *q, int i, int64_t missing)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? missing : sqlite3_column_int64(q, i);
}

/* Prepare a one-off query of a run's rows, ?1 its id (or of a campaign, ?1
 * its name; key NULL: a query without parameters): a second statement
 * object, so a caller may query again from inside a callback. */
static sqlite3_stmt *run_query(struct sqlite_store *s, int which, const char *key)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, statements[which], -1, &q, NULL) != SQLITE_OK)
        return NULL;
    if (key)
        bind_text(q, 1, key);
    return q;
}

static int finish_query(struct sqlite_store *s, sqlite3_stmt *q, int rc, int stop, const char *what)
{
    if (!stop && rc != SQLITE_DONE)
        stop = map_rc(s, rc, what);
    sqlite3_finalize(q);
    return stop < 0 ? stop : 0;
}

static int sqlite_event_names_query(struct store *base, const char *run_id, event_name_fn *fn,
                                    void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_EVENT_NAMES_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read event names");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 1);
        stop = fn(sqlite3_column_int64(q, 0), name ? name : "", arg);
    }
    return finish_query(s, q, rc, stop, "cannot read event names");
}

static int sqlite_processes_query(struct store *base, const char *run_id, process_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_PROCESSES_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read processes");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct process_record p = {
            .pid = sqlite3_column_int64(q, 0),
            .ppid = col_int_or(q, 1, -1),
            .comm = (const char *)sqlite3_column_text(q, 2),
            .role = (const char *)sqlite3_column_text(q, 3),
            .rank = col_int_or(q, 4, -1),
            .local_rank = col_int_or(q, 5, -1),
            .world_size = col_int_or(q, 6, -1),
            .worker_id = col_int_or(q, 7, -1),
        };
        stop = fn(&p, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read processes");
}

static int sqlite_event_blocks_query(struct store *base, const char *run_id, int64_t from_ns,
                                     int64_t to_ns, event_block_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_EVENT_BLOCKS_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read event blocks");
    sqlite3_bind_int64(q, 2, from_ns);
    sqlite3_bind_int64(q, 3, to_ns);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct event_block_record b = {
            .pid = sqlite3_column_int64(q, 0),
            .tid = sqlite3_column_int64(q, 1),
            .start_ns = sqlite3_column_int64(q, 2),
            .end_ns = sqlite3_column_int64(q, 3),
            .step_min = sqlite3_column_int64(q, 4),
            .step_max = sqlite3_column_int64(q, 5),
            .count = sqlite3_column_int64(q, 6),
            .data = sqlite3_column_blob(q, 7),
            .len = (size_t)sqlite3_column_bytes(q, 7),
        };
        stop = fn(&b, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read event blocks");
}

static int run_rows_delete(struct sqlite_store *s, const char *const *sql, size_t n,
                           const char *run_id, const char *what)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db, sql[i], -1, &q, NULL) != SQLITE_OK)
            return map_rc(s, sqlite3_errcode(s->db), what);
        bind_text(q, 1, run_id);
        rc = step_done(s, q, what);
        sqlite3_finalize(q);
    }
    return rc;
}

static int sqlite_rules_clear(struct store *base, const char *run_id)
{
    static const char *const sql[] = {
        "DELETE FROM findings WHERE run_id=?1",
        "DELETE FROM rule_results WHERE run_id=?1",
        "DELETE FROM rule_config WHERE run_id=?1",
    };
    return run_rows_delete((struct sqlite_store *)base, sql, ARRAY_SIZE(sql), run_id,
                           "cannot clear findings");
}

static int sqlite_rule_config_put(struct store *base, const char *run_id,
                                  const struct rule_config_record *c)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_RULE_CONFIG_PUT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, c->interval_ns);
        bind_text(q, 3, c->rules);
        bind_text(q, 4, c->params);
        bind_text(q, 5, c->mode);
        sqlite3_bind_int64(q, 6, c->evaluated_ns);
    }
    return step_done(s, q, "cannot record rule settings");
}

static int sqlite_rule_result_insert(struct store *base, const char *run_id,
                                     const struct rule_result_record *r)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_RULE_RESULT_INSERT);
    if (q) {
        bind_text(q, 1, run_id);
        bind_text(q, 2, r->rule);
        bind_text(q, 3, r->status);
        sqlite3_bind_int64(q, 4, r->datapoints);
        sqlite3_bind_int64(q, 5, r->violations);
        bind_text(q, 6, r->detail);
        bind_text(q, 7, r->report);
    }
    return step_done(s, q, "cannot record rule result");
}

static int sqlite_finding_insert(struct store *base, const char *run_id, int64_t seq,
                                 const struct finding_record *f)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_FINDING_INSERT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, seq);
        bind_text(q, 3, f->rule);
        bind_text(q, 4, f->severity);
        sqlite3_bind_int64(q, 5, f->start_ns);
        sqlite3_bind_int64(q, 6, f->end_ns);
        bind_text(q, 7, f->scope);
        bind_text(q, 8, f->evidence ? f->evidence : "");
        bind_text(q, 9, f->events);
        bind_text(q, 10, f->recommendation);
    }
    return step_done(s, q, "cannot record finding");
}

static const char *col_text(sqlite3_stmt *q, int i)
{
    return (const char *)sqlite3_column_text(q, i);
}

static int sqlite_rule_config_query(struct store *base, const char *run_id, rule_config_fn *fn,
                                    void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_RULE_CONFIG_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read rule settings");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct rule_config_record c = {sqlite3_column_int64(q, 0), col_text(q, 1), col_text(q, 2),
                                       col_text(q, 3), sqlite3_column_int64(q, 4)};
        stop = fn(&c, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read rule settings");
}

static int sqlite_rule_results_query(struct store *base, const char *run_id, rule_result_fn *fn,
                                     void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_RULE_RESULTS_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read rule results");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct rule_result_record r = {
            col_text(q, 0), col_text(q, 1), sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3),
            col_text(q, 4), col_text(q, 5)};
        stop = fn(&r, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read rule results");
}

static int sqlite_findings_query(struct store *base, const char *run_id, finding_rec_fn *fn,
                                 void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_FINDINGS_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read findings");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct finding_record f = {
            .rule = col_text(q, 0),
            .severity = col_text(q, 1),
            .start_ns = sqlite3_column_int64(q, 2),
            .end_ns = sqlite3_column_int64(q, 3),
            .scope = col_text(q, 4),
            .evidence = col_text(q, 5),
            .events = col_text(q, 6),
            .recommendation = col_text(q, 7),
        };
        stop = fn(&f, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read findings");
}

static int sqlite_run_text_put(struct store *base, const char *run_id,
                               const struct run_text_record *t)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_RUN_TEXT_PUT);
    if (q) {
        bind_text(q, 1, run_id);
        bind_text(q, 2, t->kind);
        sqlite3_bind_int64(q, 3, t->bytes);
        sqlite3_bind_text64(q, 4, t->len ? t->data : "", t->len, SQLITE_STATIC, SQLITE_UTF8);
    }
    return step_done(s, q, "cannot keep the run's texts");
}

/* Each row of q (kind, bytes, text) to fn. */
static int texts_rows(struct sqlite_store *s, sqlite3_stmt *q, run_text_fn *fn, void *arg)
{
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct run_text_record t = {
            .kind = col_text(q, 0),
            .bytes = sqlite3_column_int64(q, 1),
            .data = (const char *)sqlite3_column_text(q, 2),
            .len = (size_t)sqlite3_column_bytes(q, 2),
        };
        stop = fn(&t, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read the run's texts");
}

static int sqlite_run_texts_query(struct store *base, const char *run_id, run_text_fn *fn,
                                  void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_RUN_TEXTS_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read the run's texts");
    return texts_rows(s, q, fn, arg);
}

static int sqlite_run_text_get(struct store *base, const char *run_id, const char *kind,
                               run_text_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = run_query(s, ST_RUN_TEXT_OF_KIND, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read the run's texts");
    bind_text(q, 2, kind);
    return texts_rows(s, q, fn, arg);
}

static int sqlite_run_delete(struct store *base, const char *run_id)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    static const char *const sql[] = {
        "DELETE FROM findings WHERE run_id=?1",
        "DELETE FROM rule_results WHERE run_id=?1",
        "DELETE FROM rule_config WHERE run_id=?1",
        "DELETE FROM run_texts WHERE run_id=?1",
        "DELETE FROM event_blocks WHERE run_id=?1",
        "DELETE FROM event_names WHERE run_id=?1",
        "DELETE FROM processes WHERE run_id=?1",
        "DELETE FROM py_blocks WHERE run_id=?1",
        "DELETE FROM blocks WHERE series_id IN (SELECT id FROM series WHERE run_id=?1)",
        "DELETE FROM series WHERE run_id=?1",
        "DELETE FROM run_attrs WHERE run_id=?1",
        "DELETE FROM runs WHERE id=?1",
    };
    /* in the caller's transaction when one is open: strobe copy removes
     * an old copy in the one that writes the new */
    int own = sqlite3_get_autocommit(s->db);
    int rc = own ? sqlite_begin(base) : 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(sql); i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db, sql[i], -1, &q, NULL) != SQLITE_OK) {
            rc = map_rc(s, sqlite3_errcode(s->db), "cannot delete run");
            break;
        }
        bind_text(q, 1, run_id);
        rc = step_done(s, q, "cannot delete run");
        sqlite3_finalize(q);
    }
    if (!own)
        return rc;
    if (rc == 0)
        return sqlite_commit(base);
    sqlite_rollback(base);
    return rc;
}

/* ---- campaigns ------------------------------------------------------------- */

/* Single statements: in the caller's transaction when one is open, else
 * each in its own (SQLite's autocommit). */
static int sqlite_campaign_put(struct store *base, const struct campaign_record *c)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_CAMPAIGN_PUT);
    if (q) {
        bind_text(q, 1, c->name);
        bind_text(q, 2, c->spec_hash);
        bind_text(q, 3, c->file);
        sqlite3_bind_int64(q, 4, c->created_ns);
        sqlite3_bind_int64(q, 5, c->updated_ns);
        bind_text(q, 6, c->state);
    }
    return step_done(s, q, "cannot keep the campaign");
}

/* A row of CAMPAIGN_COLUMNS; its strings live until the next step. */
static struct campaign_record campaign_row(sqlite3_stmt *q)
{
    return (struct campaign_record){
        .name = col_text(q, 0),
        .spec_hash = col_text(q, 1),
        .file = col_text(q, 2),
        .created_ns = sqlite3_column_int64(q, 3),
        .updated_ns = sqlite3_column_int64(q, 4),
        .state = col_text(q, 5),
    };
}

static int sqlite_campaign_get(struct store *base, const char *name, campaign_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    if (s->version < SCHEMA_CAMPAIGNS_VERSION)
        return -STROBE_ENOTFOUND;
    sqlite3_stmt *q = run_query(s, ST_CAMPAIGN_GET, name);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read the campaign");
    int rc = sqlite3_step(q), out = -STROBE_ENOTFOUND;
    if (rc == SQLITE_ROW) {
        struct campaign_record c = campaign_row(q);
        out = fn(&c, arg);
        out = out < 0 ? out : 0;
    } else if (rc != SQLITE_DONE) {
        out = map_rc(s, rc, "cannot read the campaign");
    }
    sqlite3_finalize(q);
    return out;
}

static int sqlite_campaigns_query(struct store *base, campaign_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    if (s->version < SCHEMA_CAMPAIGNS_VERSION)
        return 0;
    sqlite3_stmt *q = run_query(s, ST_CAMPAIGNS_ALL, NULL);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot list campaigns");
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct campaign_record c = campaign_row(q);
        stop = fn(&c, arg);
    }
    return finish_query(s, q, rc, stop, "cannot list campaigns");
}

static int sqlite_campaign_delete(struct store *base, const char *name)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_CAMPAIGN_DELETE);
    if (q)
        bind_text(q, 1, name);
    int rc = step_done(s, q, "cannot delete the campaign");
    return rc == 0 && sqlite3_changes(s->db) == 0 ? -STROBE_ENOTFOUND : rc;
}

/* ---- Python stack samples ------------------------------------------------ */

static int sqlite_py_block_put(struct store *base, const char *run_id,
                               const struct py_block_record *b)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    sqlite3_stmt *q = stmt(s, ST_PY_BLOCK_PUT);
    if (q) {
        bind_text(q, 1, run_id);
        sqlite3_bind_int64(q, 2, b->seq);
        sqlite3_bind_int64(q, 3, b->kind);
        sqlite3_bind_int64(q, 4, b->start_ns);
        sqlite3_bind_int64(q, 5, b->end_ns);
        sqlite3_bind_int64(q, 6, b->count);
        sqlite3_bind_blob(q, 7, b->len ? b->data : (const void *)"", (int)b->len, SQLITE_STATIC);
    }
    return step_done(s, q, "cannot write Python samples");
}

static int sqlite_py_blocks_query(struct store *base, const char *run_id, int64_t from_ns,
                                  int64_t to_ns, py_block_fn *fn, void *arg)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    if (s->version < SCHEMA_PY_BLOCKS_VERSION)
        return 0;
    sqlite3_stmt *q = run_query(s, ST_PY_BLOCKS_OF_RUN, run_id);
    if (!q)
        return map_rc(s, sqlite3_errcode(s->db), "cannot read Python samples");
    sqlite3_bind_int64(q, 2, from_ns);
    sqlite3_bind_int64(q, 3, to_ns);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct py_block_record b = {
            .seq = sqlite3_column_int64(q, 0),
            .kind = (int)sqlite3_column_int64(q, 1),
            .start_ns = sqlite3_column_int64(q, 2),
            .end_ns = sqlite3_column_int64(q, 3),
            .count = sqlite3_column_int64(q, 4),
            .data = sqlite3_column_blob(q, 5),
            .len = (size_t)sqlite3_column_bytes(q, 5),
        };
        stop = fn(&b, arg);
    }
    return finish_query(s, q, rc, stop, "cannot read Python samples");
}

static void sqlite_set_timeout(struct store *base, int ms)
{
    sqlite3_busy_timeout(((struct sqlite_store *)base)->db, ms > 0 ? ms : BUSY_TIMEOUT_MS);
}

static const struct store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sqlite_close,
    .begin = sqlite_begin,
    .commit = sqlite_commit,
    .rollback = sqlite_rollback,
    .run_insert = sqlite_run_insert,
    .run_update = sqlite_run_update,
    .series_insert = sqlite_series_insert,
    .series_update_meta = sqlite_series_update_meta,
    .block_upsert = sqlite_block_upsert,
    .blocks_put = store_blocks_put_each,
    .runs_query = sqlite_runs_query,
    .series_query = sqlite_series_query,
    .blocks_query = sqlite_blocks_query,
    .run_delete = sqlite_run_delete,
    .event_name_insert = sqlite_event_name_insert,
    .process_upsert = sqlite_process_upsert,
    .event_block_insert = sqlite_event_block_insert,
    .event_names_query = sqlite_event_names_query,
    .processes_query = sqlite_processes_query,
    .event_blocks_query = sqlite_event_blocks_query,
    .rules_clear = sqlite_rules_clear,
    .rule_config_put = sqlite_rule_config_put,
    .rule_result_insert = sqlite_rule_result_insert,
    .finding_insert = sqlite_finding_insert,
    .rule_config_query = sqlite_rule_config_query,
    .rule_results_query = sqlite_rule_results_query,
    .findings_query = sqlite_findings_query,
    .run_text_put = sqlite_run_text_put,
    .run_attrs_put = sqlite_run_attrs_put,
    .run_texts_query = sqlite_run_texts_query,
    .run_text_get = sqlite_run_text_get,
    .blocks_range_query = sqlite_blocks_range_query,
    .series_find = sqlite_series_find,
    .runs_where = sqlite_runs_where,
    .join_lock = sqlite_join_lock,
    .clock_ns = sqlite_clock_ns,
    .try_lead = sqlite_try_lead,
    .set_timeout = sqlite_set_timeout,
    .campaign_put = sqlite_campaign_put,
    .campaign_get = sqlite_campaign_get,
    .campaigns_query = sqlite_campaigns_query,
    .campaign_delete = sqlite_campaign_delete,
    .py_block_put = sqlite_py_block_put,
    .py_blocks_query = sqlite_py_blocks_query,
};

static int query_int(struct sqlite_store *s, const char *sql, int64_t *out)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        *out = sqlite3_column_int64(q, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_OK ? 0 : map_rc(s, rc, "cannot read store");
}

/* Check the version and refuse stores that are not ours or are newer. */
static int check_version(struct sqlite_store *s, int64_t *version)
{
    int64_t tables = 0;
    int rc = query_int(s, "PRAGMA user_version", version);
    if (rc < 0)
        return rc;
    if (*version > SCHEMA_VERSION) {
        strbuf_reset(&s->base.err);
        strbuf_addf(&s->base.err, "store schema version %lld is newer than this strobe's (%d)",
                    (long long)*version, SCHEMA_VERSION);
        return -STROBE_ESCHEMA;
    }
    if (*version == 0) {
        rc = query_int(s, "SELECT count(*) FROM sqlite_schema WHERE type='table'", &tables);
        if (rc < 0)
            return rc;
        if (tables > 0) {
            strbuf_reset(&s->base.err);
            strbuf_adds(&s->base.err, "not a strobe store (it holds other tables)");
            return -STROBE_ECORRUPT;
        }
    }
    return 0;
}

/*
 * Bring the schema up to date: each migration runs in its own write
 * transaction and bumps user_version, so an interrupted upgrade resumes where
 * it stopped. The version is read again under the write lock: recorders that
 * start together on a new store must not both create it.
 */
/* An older store this connection may not upgrade (another user's, a
 * read-only mount), from version 4 on, differs from the current one only by
 * columns added to runs, and by the campaigns of version 7 and the Python
 * samples of version 8. Before version
 * 6, a temporary view, which shadows main.runs for this connection and
 * writes nothing to the file, gives those columns as unknown (the
 * pid-and-host rule of older runs; no cluster). Campaigns are not read at
 * all below SCHEMA_CAMPAIGNS_VERSION (s->version), nor Python samples below
 * SCHEMA_PY_BLOCKS_VERSION: there are none. */
static int read_old_as_current(struct sqlite_store *s, int64_t version)
{
    strbuf_reset(&s->base.err);
    s->version = version;
    if (version >= 6)
        return 0;
    return exec_sql(s, version == 4
                           ? "CREATE TEMP VIEW runs AS SELECT *, NULL AS recorder_boot_id,"
                             " NULL AS recorder_pid_ns, NULL AS recorder_time_ns,"
                             " NULL AS recorder_start_ticks, NULL AS parent_id,"
                             " NULL AS node, NULL AS join_key, NULL AS clock_offset_ns,"
                             " NULL AS clock_rtt_ns, NULL AS clock_shift_ns FROM main.runs"
                           : "CREATE TEMP VIEW runs AS SELECT *, NULL AS parent_id,"
                             " NULL AS node, NULL AS join_key, NULL AS clock_offset_ns,"
                             " NULL AS clock_rtt_ns, NULL AS clock_shift_ns FROM main.runs");
}

static int migrate(struct sqlite_store *s, int readonly)
{
    int64_t version = 0;
    /* one read transaction, so that the version and the table count come
     * from one snapshot: read either side of another recorder's migration
     * commit, they would say "version 0 with tables", not a strobe store */
    int rc = exec_sql(s, "BEGIN");
    if (rc == 0) {
        rc = check_version(s, &version);
        sqlite_rollback(&s->base);
    }
    if (rc == 0 && readonly && version == 0) {
        strbuf_reset(&s->base.err);
        strbuf_adds(&s->base.err, "the file holds no strobe store yet");
        return -STROBE_ENOTFOUND;
    }
    /* a reader of an older store upgrades it too: every query expects the
     * current schema (a read-only file then fails with a clear message) */
    s->version = version;
    if (rc < 0 || version == SCHEMA_VERSION)
        return rc;
    if (readonly && version >= 4 && sqlite3_db_readonly(s->db, "main") == 1)
        return read_old_as_current(s, version);
    for (;;) {
        if ((rc = sqlite_begin(&s->base)) < 0)
            return rc;
        if ((rc = check_version(s, &version)) < 0 || version == SCHEMA_VERSION) {
            s->version = version;
            sqlite_rollback(&s->base);
            return rc;
        }
        char bump[64];
        snprintf(bump, sizeof(bump), "PRAGMA user_version = %lld", (long long)(version + 1));
        if ((rc = exec_sql(s, schema_migrations[version])) < 0 || (rc = exec_sql(s, bump)) < 0 ||
            (rc = sqlite_commit(&s->base)) < 0) {
            sqlite_rollback(&s->base);
            return rc;
        }
    }
}

/*
 * The store is always a file path. SQLite would take ":memory:" or "" for a
 * database that vanishes when strobe exits, and (built with SQLITE_USE_URI,
 * as Debian's is) read "file:..." as a URI: a run recorded there would be
 * lost, or land in another file than the one named.
 */
static int check_path(struct sqlite_store *s, const char *path)
{
    if (*path && strcmp(path, ":memory:") != 0)
        return 0;
    strbuf_addf(&s->base.err,
                "not a file path (a store must outlive strobe; write ./%s for a file so named)",
                path);
    return -STROBE_ESTORE;
}

/* Append path to sb as a "file:" URI, every byte but RFC 3986's unreserved
 * ones and '/' percent-encoded, so that SQLite reads no query, fragment or
 * escape of the user's in it. An absolute path gets an empty authority
 * ("file:///x"): "file://x" would name host x. */
static int add_file_uri(struct strbuf *sb, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = strbuf_adds(sb, path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && rc == 0; p++) {
        if (isalnum(*p) || strchr("-._~/", *p))
            rc = strbuf_addch(sb, (char)*p);
        else
            rc = strbuf_addf(sb, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return rc;
}

/* How a connection opens the file, in the order a reader tries them. */
enum open_mode {
    OPEN_WRITE,     /* read-write, creating the file when it is the recorder's */
    OPEN_READ,      /* read-only: needs the -shm (and -wal) to exist or to be creatable */
    OPEN_IMMUTABLE, /* read-only, no -shm, no locks: misses what is not yet checkpointed */
};

static int open_db(struct sqlite_store *s, const char *path, enum open_mode mode, int create)
{
    struct strbuf uri;
    strbuf_init(&uri);
    int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    if (mode == OPEN_WRITE)
        flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    else
        flags |= SQLITE_OPEN_READONLY;
    int rc = add_file_uri(&uri, path);
    if (rc == 0 && mode == OPEN_IMMUTABLE)
        rc = strbuf_adds(&uri, "?immutable=1");
    if (rc < 0) {
        strbuf_release(&uri);
        return rc;
    }
    rc = sqlite3_open_v2(uri.buf, &s->db, flags, NULL);
    strbuf_release(&uri);
    if (rc != SQLITE_OK) {
        rc = map_rc(s, rc, "cannot open");
        sqlite3_close(s->db);
        s->db = NULL;
        return rc;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    if ((rc = sqlite3_create_collation(s->db, "strobe_natural", SQLITE_UTF8, NULL,
                                       natural_collate)) != SQLITE_OK) {
        rc = map_rc(s, rc, "cannot open");
        sqlite3_close(s->db);
        s->db = NULL;
        return rc;
    }
    return 0;
}

/* Open, switch to WAL where this connection writes, and migrate; on failure
 * the connection is closed again and *sqlite_rc says why. */
static int open_and_check(struct sqlite_store *s, const char *path, enum open_mode mode,
                          int readonly, int *sqlite_rc)
{
    int rc = open_db(s, path, mode, !readonly);
    if (rc == 0 && !readonly)
        rc = set_wal(s);
    if (rc == 0)
        rc = exec_sql(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
    if (rc == 0)
        rc = migrate(s, readonly);
    *sqlite_rc = s->db ? sqlite3_errcode(s->db) & 0xff : SQLITE_CANTOPEN;
    if (rc < 0 && s->db) {
        sqlite3_close(s->db);
        s->db = NULL;
    }
    return rc;
}

/*
 * A reader tries read-write first, as it upgrades an older store. A file it
 * may not write (another user's store, a read-only mount) SQLite opens
 * read-only, but WAL mode still needs the -shm file: read-only, it works
 * while the -shm exists (a recorder is live, and its commits are seen) or can
 * be created. Where neither holds (no write access to the directory) the last
 * resort is immutable, without -shm or locks, which reads only what was
 * checkpointed into the file: all of a finished run, maybe little of a live one.
 */
static int open_reader(struct sqlite_store *s, const char *path)
{
    static const enum open_mode modes[] = {OPEN_WRITE, OPEN_READ, OPEN_IMMUTABLE};
    int rc = 0;
    for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
        int sqlite_rc;
        rc = open_and_check(s, path, modes[i], 1, &sqlite_rc);
        if (rc == 0 || (sqlite_rc != SQLITE_READONLY && sqlite_rc != SQLITE_CANTOPEN &&
                        sqlite_rc != SQLITE_PERM))
            break;
    }
    return rc;
}

int store_sqlite_open(const char *uri, int readonly, struct store **out, struct strbuf *err)
{
    struct sqlite_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base.ops = &sqlite_ops;
    s->base.uri = strdup(uri);
    strbuf_init(&s->base.err);
    struct stat sb;
    int rc;
    if ((rc = check_path(s, uri)) < 0)
        goto fail;
    if (readonly && stat(uri, &sb) < 0) {
        strbuf_addf(&s->base.err, "no store at '%s' (run 'strobe run' first, or pass --store)",
                    uri);
        rc = -STROBE_ENOTFOUND;
        goto fail;
    }
    int sqlite_rc;
    rc = readonly ? open_reader(s, uri) : open_and_check(s, uri, OPEN_WRITE, 0, &sqlite_rc);
    if (rc < 0)
        goto fail;
    /* readers map the file rather than copy pages through read(): a chart
     * of a long series walks tens of thousands of blocks per request (strobe
     * serve), and a page cache of 2 MiB would re-read them every time */
    if (readonly)
        exec_sql(s, "PRAGMA mmap_size=1073741824");
    *out = &s->base;
    return 0;
fail:
    if (err)
        strbuf_addf(err, "cannot open store '%s': %s", uri, s->base.err.buf);
    sqlite_close(&s->base);
    return rc;
}
