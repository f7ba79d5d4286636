/*
 * PostgreSQL backend, through libpq. The tables and columns are SQLite's
 * (store/schema_pg.h), and every query returns rows in the order sqlite.c
 * does, so that every command prints the same from either store.
 *
 * Statements are prepared on first use, once per connection, with the
 * types of their parameters: integers (BIGINT everywhere) and floats travel
 * in binary, as do blocks (BYTEA); texts as text. Results come back in
 * binary, so a value is read without parsing: a NULL float is NaN, as
 * SQLite's NULL REAL is read.
 *
 * Ordering: texts are sorted bytewise (COLLATE "C"), as SQLite's BINARY
 * does, whatever the database's collation. A run's series are sorted by
 * name in SQL and by labels here, in glibc's version order (strverscmp),
 * as sqlite.c's strobe_natural collation does.
 *
 * A query's rows are read whole into one PGresult before the first callback
 * runs: a callback may query the same connection again. Blocks, which may
 * be gigabytes, come a page at a time instead (PAGE_ROWS). A list of runs
 * reads their attributes 256 runs to a query, not one query per run: a
 * round trip to a remote server costs about a millisecond.
 *
 * Waits: the connection is nonblocking, and every round trip sends, then
 * polls the socket (await_result). With a wait bound (set_timeout: the
 * recorder's writer sets 5 s) a round trip the server does not finish in
 * time drops the connection, and the call fails as after a broken one. A
 * stopped server (SIGSTOP, a frozen VM) is the case: its kernel still
 * acknowledges every byte, so TCP keepalives and tcp_user_timeout never
 * fire, and a blocking libpq call would wait forever. A connection lost or
 * dropped is opened again at the next begin, within the same bound
 * (PQconnectStartParams, then PQconnectPoll); without one, by
 * PQconnectdbParams under connect_timeout, as at open.
 *
 * Text: a TEXT column refuses bytes that are not UTF-8, which SQLite keeps.
 * Such bytes go in as U+FFFD (as_utf8); the texts kept with a run (a job's
 * output) are BYTEA and keep every byte.
 *
 * The password: s->uri and every message carry the URI without it
 * (store_uri_redact); libpq alone sees the URI as given.
 *
 * libpq is opened with dlopen at the first PostgreSQL store, not linked:
 * linked, it and the 13 libraries it needs loaded at every start of every
 * command, SQLite stores included (strobe --version took 4.4 ms, 2.7 ms
 * without), and a machine without libpq5 could not run strobe at all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libpq-fe.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/err.h"
#include "store/backend.h"
#include "store/schema_pg.h"
#include "store/store.h"

/* ---- libpq, opened on first use ------------------------------------------ */

#define LIBPQ_SONAME "libpq.so.5"
#define PQ_FUNCTIONS(X)                                                                            \
    X(PQclear)                                                                                     \
    X(PQconnectPoll)                                                                               \
    X(PQconnectStartParams)                                                                        \
    X(PQconnectdbParams)                                                                           \
    X(PQconninfoFree)                                                                              \
    X(PQconninfoParse)                                                                             \
    X(PQconsumeInput)                                                                              \
    X(PQerrorMessage)                                                                              \
    X(PQfinish)                                                                                    \
    X(PQflush)                                                                                     \
    X(PQfreemem)                                                                                   \
    X(PQgetResult)                                                                                 \
    X(PQgetisnull)                                                                                 \
    X(PQgetlength)                                                                                 \
    X(PQgetvalue)                                                                                  \
    X(PQisBusy)                                                                                    \
    X(PQntuples)                                                                                   \
    X(PQresultErrorField)                                                                          \
    X(PQresultStatus)                                                                              \
    X(PQsendPrepare)                                                                               \
    X(PQsendQuery)                                                                                 \
    X(PQsendQueryPrepared)                                                                         \
    X(PQsetNoticeProcessor)                                                                        \
    X(PQsetnonblocking)                                                                            \
    X(PQsocket)                                                                                    \
    X(PQstatus)                                                                                    \
    X(PQtransactionStatus)

static struct {
#define PQ_POINTER(f) __typeof__(&f) f;
    PQ_FUNCTIONS(PQ_POINTER)
#undef PQ_POINTER
} pq;
static char pq_error[256]; /* why libpq could not be opened, or "" */
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;

static void pq_open(void)
{
    void *lib = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    const char *missing = NULL;
#define PQ_RESOLVE(f)                                                                              \
    if (lib && !missing && !(*(void **)&pq.f = dlsym(lib, #f)))                                    \
        missing = #f;
    PQ_FUNCTIONS(PQ_RESOLVE)
#undef PQ_RESOLVE
    if (!lib)
        snprintf(pq_error, sizeof(pq_error),
                 "a PostgreSQL store needs the client library %s (Debian: libpq5): %s",
                 LIBPQ_SONAME, dlerror());
    else if (missing)
        snprintf(pq_error, sizeof(pq_error), "%s lacks %s: libpq is too old", LIBPQ_SONAME,
                 missing);
}

/* 0 once libpq's functions are at hand, or -ENOSYS after saying why in err. */
static int pq_load(struct strbuf *err)
{
    pthread_once(&pq_once, pq_open);
    if (!pq_error[0])
        return 0;
    if (err)
        strbuf_adds(err, pq_error);
    return -ENOSYS;
}

/* Below, each libpq call goes through its pointer. */
#define PQclear              pq.PQclear
#define PQconnectPoll        pq.PQconnectPoll
#define PQconnectStartParams pq.PQconnectStartParams
#define PQconnectdbParams    pq.PQconnectdbParams
#define PQconninfoFree       pq.PQconninfoFree
#define PQconninfoParse      pq.PQconninfoParse
#define PQconsumeInput       pq.PQconsumeInput
#define PQerrorMessage       pq.PQerrorMessage
#define PQfinish             pq.PQfinish
#define PQflush              pq.PQflush
#define PQfreemem            pq.PQfreemem
#define PQgetResult          pq.PQgetResult
#define PQgetisnull          pq.PQgetisnull
#define PQgetlength          pq.PQgetlength
#define PQgetvalue           pq.PQgetvalue
#define PQisBusy             pq.PQisBusy
#define PQntuples            pq.PQntuples
#define PQresultErrorField   pq.PQresultErrorField
#define PQresultStatus       pq.PQresultStatus
#define PQsendPrepare        pq.PQsendPrepare
#define PQsendQuery          pq.PQsendQuery
#define PQsendQueryPrepared  pq.PQsendQueryPrepared
#define PQsetNoticeProcessor pq.PQsetNoticeProcessor
#define PQsetnonblocking     pq.PQsetnonblocking
#define PQsocket             pq.PQsocket
#define PQstatus             pq.PQstatus
#define PQtransactionStatus  pq.PQtransactionStatus

/* Type OIDs of pg_type.h (catalog/pg_type_d.h is not in libpq-dev). */
#define OID_BYTEA        17
#define OID_INT8         20
#define OID_TEXT         25
#define OID_FLOAT8       701
#define OID_TEXT_ARRAY   1009
#define OID_BYTEA_ARRAY  1001
#define OID_INT8_ARRAY   1016
#define OID_FLOAT8_ARRAY 1022

#define MAX_PARAMS 40

/* Blocks read per query of a series' or a run's blocks, which may be
 * gigabytes: SQLite steps through them, and a PGresult holds every row it
 * has. The next page starts after the last row's (start_ns, id). */
#ifndef PAGE_ROWS
#define PAGE_ROWS 512
#endif
#define STR(x)        #x
#define XSTR(x)       STR(x)
#define PAGE_ROWS_SQL XSTR(PAGE_ROWS)

/* Blocks one statement of blocks_put writes, as arrays: a recorder's
 * second (150 series) is one statement, not 150 round trips. */
#define BLOCKS_PER_PUT 512

/* Runs whose attributes one query reads: a list of runs costs one round
 * trip per this many runs, not one per run (a remote server's round trip
 * is about a millisecond). */
#define ATTR_BATCH_RUNS 256

/* The one advisory lock that serializes schema migrations ("strobe" in ASCII). */
#define MIGRATION_LOCK "7959390390122853"

enum {
    ST_RUN_INSERT,
    ST_ATTR_PUT,
    ST_RUN_UPDATE,
    ST_SERIES_INSERT,
    ST_SERIES_META,
    ST_BLOCK_UPSERT,
    ST_BLOCKS_PUT,
    ST_RUNS_ALL,
    ST_RUNS_EXPERIMENT,
    ST_RUNS_OF_PARENT,
    ST_RUNS_OF_JOIN_KEY,
    ST_RUNS_OF_STATUS,
    ST_RUNS_OF_ID,
    ST_JOIN_LOCK,
    ST_TRY_LEAD,
    ST_CLOCK,
    ST_ATTRS_OF_RUNS,
    ST_SERIES_OF_RUN,
    ST_BLOCKS_OF_SERIES,
    ST_EVENT_NAME_PUT,
    ST_PROCESS_PUT,
    ST_EVENT_BLOCK_INSERT,
    ST_EVENT_NAMES_OF_RUN,
    ST_PROCESSES_OF_RUN,
    ST_EVENT_BLOCKS_OF_RUN,
    ST_RULE_CONFIG_PUT,
    ST_RULE_RESULT_PUT,
    ST_FINDING_PUT,
    ST_RULE_CONFIG_OF_RUN,
    ST_RULE_RESULTS_OF_RUN,
    ST_FINDINGS_OF_RUN,
    ST_RUN_TEXT_PUT,
    ST_RUN_TEXTS_OF_RUN,
    ST_RUN_TEXT_OF_KIND,
    ST_BLOCKS_IN_RANGE,
    ST_SERIES_FIND,
    ST_BLOCK_DATA,
    ST_FINDINGS_CLEAR,
    ST_RULE_RESULTS_CLEAR,
    ST_RULE_CONFIG_CLEAR,
    ST_RUN_TEXTS_CLEAR,
    ST_EVENT_BLOCKS_CLEAR,
    ST_EVENT_NAMES_CLEAR,
    ST_PROCESSES_CLEAR,
    ST_BLOCKS_CLEAR,
    ST_SERIES_CLEAR,
    ST_ATTRS_CLEAR,
    ST_RUN_DELETE,
    ST_CAMPAIGN_PUT,
    ST_CAMPAIGN_GET,
    ST_CAMPAIGNS_ALL,
    ST_CAMPAIGN_DELETE,
    ST_PY_BLOCK_PUT,
    ST_PY_BLOCKS_OF_RUN,
    ST_PY_BLOCKS_CLEAR,
    ST_COUNT
};

#define RUN_COLUMNS                                                                                \
    "id, name, experiment, command, cwd, \"user\", host, kernel, cpu_model, cpu_count,"            \
    " mem_total_bytes, start_ns, end_ns, last_ns, exit_code, signal, status, git_commit,"          \
    " git_dirty, python_version, torch_version, interval_ns, samples, points, missed, dropped,"    \
    " recorder_pid, strobe_version, error, events, events_dropped, events_invalid, workload,"      \
    " recorder_boot_id, recorder_pid_ns, recorder_time_ns, recorder_start_ticks, parent_id, node," \
    " join_key, clock_offset_ns, clock_rtt_ns, clock_shift_ns"

/* INSERT OR REPLACE of sqlite.c becomes ON CONFLICT(key) DO UPDATE. */
static const char *const statements[ST_COUNT] = {
    [ST_RUN_INSERT] =
        "INSERT INTO runs(id, name, experiment, command, cwd, \"user\", host, kernel, cpu_model,"
        " cpu_count, mem_total_bytes, start_ns, status, git_commit, git_dirty, python_version,"
        " torch_version, interval_ns, recorder_pid, strobe_version, exit_code, signal, end_ns,"
        " last_ns, error, workload, recorder_boot_id, recorder_pid_ns, recorder_time_ns,"
        " recorder_start_ticks, parent_id, node, join_key, clock_offset_ns, clock_rtt_ns,"
        " clock_shift_ns)"
        " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,"
        " $22,$23,$24,$25,$26,$27,$28,$29,$30,$31,$32,$33,$34,$35,$36)",
    [ST_ATTR_PUT] = "INSERT INTO run_attrs(run_id, kind, key, value) VALUES($1,$2,$3,$4)"
                    " ON CONFLICT(run_id, kind, key) DO UPDATE SET value=excluded.value",
    [ST_RUN_UPDATE] = "UPDATE runs SET end_ns=$2, last_ns=$3, exit_code=$4, signal=$5, status=$6,"
                      " samples=$7, points=$8, missed=$9, dropped=$10, error=$11, events=$12,"
                      " events_dropped=$13, events_invalid=$14, clock_offset_ns=$15,"
                      " clock_rtt_ns=$16, start_ns=COALESCE(NULLIF($17, 0), start_ns) WHERE id=$1",
    [ST_SERIES_INSERT] = "INSERT INTO series(run_id, name, labels, unit, meta)"
                         " VALUES($1,$2,$3,$4,$5) RETURNING id",
    [ST_SERIES_META] = "UPDATE series SET meta=$2 WHERE id=$1",
    [ST_BLOCK_UPSERT] =
        "INSERT INTO blocks(series_id, start_ns, end_ns, count, min, max, sum, first, last, data)"
        " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)"
        " ON CONFLICT(series_id, start_ns) DO UPDATE SET end_ns=excluded.end_ns,"
        " count=excluded.count, min=excluded.min, max=excluded.max, sum=excluded.sum,"
        " first=excluded.first, last=excluded.last, data=excluded.data",
    /* ST_BLOCK_UPSERT of many blocks: one array per column, in order */
    [ST_BLOCKS_PUT] =
        "INSERT INTO blocks(series_id, start_ns, end_ns, count, min, max, sum, first, last, data)"
        " SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::float8[],"
        " $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bytea[])"
        " ON CONFLICT(series_id, start_ns) DO UPDATE SET end_ns=excluded.end_ns,"
        " count=excluded.count, min=excluded.min, max=excluded.max, sum=excluded.sum,"
        " first=excluded.first, last=excluded.last, data=excluded.data",
    [ST_RUNS_ALL] = "SELECT " RUN_COLUMNS " FROM runs ORDER BY start_ns DESC, id COLLATE \"C\"",
    [ST_RUNS_EXPERIMENT] = "SELECT " RUN_COLUMNS " FROM runs WHERE experiment=$1"
                           " ORDER BY start_ns DESC, id COLLATE \"C\"",
    [ST_RUNS_OF_PARENT] = "SELECT " RUN_COLUMNS " FROM runs WHERE parent_id=$1"
                          " ORDER BY start_ns DESC, id COLLATE \"C\"",
    [ST_RUNS_OF_JOIN_KEY] = "SELECT " RUN_COLUMNS " FROM runs WHERE join_key=$1"
                            " ORDER BY start_ns DESC, id COLLATE \"C\"",
    [ST_RUNS_OF_ID] = "SELECT " RUN_COLUMNS " FROM runs WHERE id=$1",
    [ST_RUNS_OF_STATUS] = "SELECT " RUN_COLUMNS " FROM runs WHERE status=$1"
                          " ORDER BY start_ns DESC, id COLLATE \"C\"",
    /* a transaction lock in a key space of strobe's own (the first key) */
    [ST_JOIN_LOCK] = "SELECT pg_advisory_xact_lock(1937010277, hashtext($1))",
    /* a session lock: held until this connection ends */
    [ST_TRY_LEAD] = "SELECT pg_try_advisory_lock(1937010278, hashtext($1))::int::int8",
    /* the server's clock now (not the transaction's start), in µs */
    [ST_CLOCK] = "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint",
    /* the attributes of a batch of runs ($1 an array of ids), by run */
    [ST_ATTRS_OF_RUNS] = "SELECT run_id, kind, key, value FROM run_attrs WHERE run_id = ANY($1)"
                         " ORDER BY run_id COLLATE \"C\", kind COLLATE \"C\", key COLLATE \"C\"",
    /* labels in version order: sorted after the query (sort_series) */
    [ST_SERIES_OF_RUN] =
        "SELECT s.id, s.name, s.labels, s.unit, s.meta, COALESCE(SUM(b.count),0)::bigint,"
        " MIN(b.min), MAX(b.max), SUM(b.sum), MIN(b.start_ns), MAX(b.end_ns),"
        " COALESCE(SUM(length(b.data)),0)::bigint"
        " FROM series s LEFT JOIN blocks b ON b.series_id = s.id"
        " WHERE s.run_id=$1 GROUP BY s.id ORDER BY s.name COLLATE \"C\"",
    /* a page of rows after ($2, $3) in (start_ns, id) order: see PAGE_ROWS */
    [ST_BLOCKS_OF_SERIES] =
        "SELECT start_ns, end_ns, count, min, max, sum, first, last, data, id FROM blocks"
        " WHERE series_id=$1 AND start_ns >= $2 AND (start_ns, id) > ($2, $3)"
        " ORDER BY start_ns, id LIMIT " PAGE_ROWS_SQL,
    [ST_EVENT_NAME_PUT] = "INSERT INTO event_names(run_id, id, name) VALUES($1,$2,$3)"
                          " ON CONFLICT(run_id, id) DO UPDATE SET name=excluded.name",
    [ST_PROCESS_PUT] =
        "INSERT INTO processes(run_id, pid, ppid, comm, role, rank, local_rank, world_size,"
        " worker_id) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT(run_id, pid) DO UPDATE SET"
        " ppid=excluded.ppid, comm=excluded.comm, role=excluded.role, rank=excluded.rank,"
        " local_rank=excluded.local_rank, world_size=excluded.world_size,"
        " worker_id=excluded.worker_id",
    [ST_EVENT_BLOCK_INSERT] =
        "INSERT INTO event_blocks(run_id, pid, tid, start_ns, end_ns, step_min, step_max, count,"
        " data) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9)",
    [ST_EVENT_NAMES_OF_RUN] = "SELECT id, name FROM event_names WHERE run_id=$1 ORDER BY id",
    [ST_PROCESSES_OF_RUN] = "SELECT pid, ppid, comm, role, rank, local_rank, world_size, worker_id"
                            " FROM processes WHERE run_id=$1 ORDER BY pid",
    [ST_EVENT_BLOCKS_OF_RUN] =
        "SELECT pid, tid, start_ns, end_ns, step_min, step_max, count, data, id FROM event_blocks"
        " WHERE run_id=$1 AND end_ns >= $2 AND start_ns <= $3 AND start_ns >= $4"
        " AND (start_ns, id) > ($4, $5) ORDER BY start_ns, id LIMIT " PAGE_ROWS_SQL,
    [ST_RULE_CONFIG_PUT] =
        "INSERT INTO rule_config(run_id, interval_ns, rules, params, mode, evaluated_ns)"
        " VALUES($1,$2,$3,$4,$5,$6) ON CONFLICT(run_id) DO UPDATE SET"
        " interval_ns=excluded.interval_ns, rules=excluded.rules, params=excluded.params,"
        " mode=excluded.mode, evaluated_ns=excluded.evaluated_ns",
    [ST_RULE_RESULT_PUT] =
        "INSERT INTO rule_results(run_id, rule, status, datapoints, violations, detail, report)"
        " VALUES($1,$2,$3,$4,$5,$6,$7) ON CONFLICT(run_id, rule) DO UPDATE SET"
        " status=excluded.status, datapoints=excluded.datapoints,"
        " violations=excluded.violations, detail=excluded.detail, report=excluded.report",
    [ST_FINDING_PUT] =
        "INSERT INTO findings(run_id, seq, rule, severity, start_ns, end_ns, scope, evidence,"
        " events, recommendation) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)"
        " ON CONFLICT(run_id, seq) DO UPDATE SET rule=excluded.rule,"
        " severity=excluded.severity, start_ns=excluded.start_ns, end_ns=excluded.end_ns,"
        " scope=excluded.scope, evidence=excluded.evidence, events=excluded.events,"
        " recommendation=excluded.recommendation",
    [ST_RULE_CONFIG_OF_RUN] = "SELECT interval_ns, rules, params, mode, evaluated_ns"
                              " FROM rule_config WHERE run_id=$1",
    /* SQLite reads them in primary-key order, by rule */
    [ST_RULE_RESULTS_OF_RUN] = "SELECT rule, status, datapoints, violations, detail, report"
                               " FROM rule_results WHERE run_id=$1 ORDER BY rule COLLATE \"C\"",
    [ST_FINDINGS_OF_RUN] = "SELECT rule, severity, start_ns, end_ns, scope, evidence, events,"
                           " recommendation FROM findings WHERE run_id=$1 ORDER BY seq",
    [ST_RUN_TEXT_PUT] = "INSERT INTO run_texts(run_id, kind, bytes, text) VALUES($1,$2,$3,$4)"
                        " ON CONFLICT(run_id, kind) DO UPDATE SET bytes=excluded.bytes,"
                        " text=excluded.text",
    [ST_RUN_TEXTS_OF_RUN] = "SELECT kind, bytes, text FROM run_texts WHERE run_id=$1"
                            " ORDER BY kind COLLATE \"C\"",
    [ST_RUN_TEXT_OF_KIND] = "SELECT kind, bytes, text FROM run_texts WHERE run_id=$1 AND kind=$2",
    /* as sqlite.c's: the scan starts at the last block starting at or
     * before from_ns, found in the (series_id, start_ns) index */
    [ST_BLOCKS_IN_RANGE] =
        "SELECT start_ns, end_ns, count, min, max, sum, first, last, id FROM blocks"
        " WHERE series_id=$1 AND start_ns <= $3 AND start_ns >= COALESCE((SELECT MAX(start_ns)"
        " FROM blocks WHERE series_id=$1 AND start_ns <= $2), $2) AND end_ns >= $2"
        " ORDER BY start_ns",
    [ST_BLOCK_DATA] = "SELECT id, data FROM blocks WHERE id = ANY($1::text::int8[]) ORDER BY id",
    [ST_SERIES_FIND] =
        "SELECT id, unit, meta, (SELECT start_ns FROM blocks WHERE series_id=s.id ORDER BY start_ns"
        " LIMIT 1), (SELECT end_ns FROM blocks WHERE series_id=s.id ORDER BY start_ns DESC LIMIT 1)"
        " FROM series s WHERE run_id=$1 AND name=$2 AND labels=$3",
    [ST_FINDINGS_CLEAR] = "DELETE FROM findings WHERE run_id=$1",
    [ST_RULE_RESULTS_CLEAR] = "DELETE FROM rule_results WHERE run_id=$1",
    [ST_RULE_CONFIG_CLEAR] = "DELETE FROM rule_config WHERE run_id=$1",
    [ST_RUN_TEXTS_CLEAR] = "DELETE FROM run_texts WHERE run_id=$1",
    [ST_EVENT_BLOCKS_CLEAR] = "DELETE FROM event_blocks WHERE run_id=$1",
    [ST_EVENT_NAMES_CLEAR] = "DELETE FROM event_names WHERE run_id=$1",
    [ST_PROCESSES_CLEAR] = "DELETE FROM processes WHERE run_id=$1",
    [ST_BLOCKS_CLEAR] =
        "DELETE FROM blocks WHERE series_id IN (SELECT id FROM series WHERE run_id=$1)",
    [ST_SERIES_CLEAR] = "DELETE FROM series WHERE run_id=$1",
    [ST_ATTRS_CLEAR] = "DELETE FROM run_attrs WHERE run_id=$1",
    [ST_RUN_DELETE] = "DELETE FROM runs WHERE id=$1",
    /* created_ns is the first put's: an update leaves it */
    [ST_CAMPAIGN_PUT] =
        "INSERT INTO campaigns(name, spec_hash, file, created_ns, updated_ns, state)"
        " VALUES($1,$2,$3,$4,$5,$6) ON CONFLICT(name) DO UPDATE SET spec_hash=excluded.spec_hash,"
        " file=excluded.file, updated_ns=excluded.updated_ns, state=excluded.state",
#define CAMPAIGN_COLUMNS "name, spec_hash, file, created_ns, updated_ns, state"
    [ST_CAMPAIGN_GET] = "SELECT " CAMPAIGN_COLUMNS " FROM campaigns WHERE name=$1",
    [ST_CAMPAIGNS_ALL] = "SELECT " CAMPAIGN_COLUMNS " FROM campaigns"
                         " ORDER BY updated_ns DESC, name COLLATE \"C\"",
    /* a row back for each one removed: libpq's PQcmdTuples is not loaded */
    [ST_CAMPAIGN_DELETE] = "DELETE FROM campaigns WHERE name=$1 RETURNING 1",
    [ST_PY_BLOCK_PUT] =
        "INSERT INTO py_blocks(run_id, seq, kind, start_ns, end_ns, count, data)"
        " VALUES($1,$2,$3,$4,$5,$6,$7) ON CONFLICT(run_id, seq) DO UPDATE SET kind=excluded.kind,"
        " start_ns=excluded.start_ns, end_ns=excluded.end_ns, count=excluded.count,"
        " data=excluded.data",
    /* a page of blocks after seq $4: see PAGE_ROWS */
    [ST_PY_BLOCKS_OF_RUN] =
        "SELECT seq, kind, start_ns, end_ns, count, data FROM py_blocks"
        " WHERE run_id=$1 AND seq > $4 AND (kind=0 OR (end_ns >= $2 AND start_ns <= $3))"
        " ORDER BY seq LIMIT " PAGE_ROWS_SQL,
    [ST_PY_BLOCKS_CLEAR] = "DELETE FROM py_blocks WHERE run_id=$1",
};

_Static_assert(ST_COUNT <= 64, "prepared is a 64-bit mask");

struct pg_store {
    struct store base;
    PGconn *conn;      /* NULL once dropped (drop_connection) */
    uint64_t prepared; /* bit i: statements[i] is prepared on this connection */
    int wait_ms;       /* the most a round trip or a reconnection may take; 0: no bound */
    char dropped[96];  /* why the connection was dropped: the error of what follows */
    char sqlstate[6];  /* of the last error the server gave, "" for none */
    int64_t version;   /* the schema as read: older only where this reader may not upgrade it */
};

/* One statement's parameters, in the order of $1, $2, ...; values point
 * into the caller's data or into bin[] (network byte order). */
struct pg_params {
    int n;
    Oid types[MAX_PARAMS];
    const char *values[MAX_PARAMS];
    int lengths[MAX_PARAMS];
    int formats[MAX_PARAMS];
    unsigned char bin[MAX_PARAMS][8];
};

static void put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static uint64_t get_be(const unsigned char *p, int len)
{
    uint64_t v = 0;
    for (int i = 0; i < len; i++)
        v = v << 8 | p[i];
    return v;
}

static void param_null(struct pg_params *p, Oid type)
{
    int i = p->n++;
    p->types[i] = type;
    p->values[i] = NULL;
    p->lengths[i] = 0;
    p->formats[i] = 1;
}

static void param_text(struct pg_params *p, const char *v)
{
    if (!v) {
        param_null(p, OID_TEXT);
        return;
    }
    int i = p->n++;
    p->types[i] = OID_TEXT;
    p->values[i] = v;
    p->lengths[i] = 0;
    p->formats[i] = 0;
}

static void param_int(struct pg_params *p, int64_t v)
{
    int i = p->n++;
    put_be64(p->bin[i], (uint64_t)v);
    p->types[i] = OID_INT8;
    p->values[i] = (const char *)p->bin[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

static void param_int_or_null(struct pg_params *p, int64_t v, int is_null)
{
    if (is_null)
        param_null(p, OID_INT8);
    else
        param_int(p, v);
}

/* NaN is kept as NULL, as sqlite.c keeps it: it reads back as NaN. */
static void param_real(struct pg_params *p, double v)
{
    if (isnan(v)) {
        param_null(p, OID_FLOAT8);
        return;
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    int i = p->n++;
    put_be64(p->bin[i], bits);
    p->types[i] = OID_FLOAT8;
    p->values[i] = (const char *)p->bin[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

static void param_bytes(struct pg_params *p, const void *data, size_t len)
{
    int i = p->n++;
    p->types[i] = OID_BYTEA;
    p->values[i] = len ? data : "";
    p->lengths[i] = (int)len;
    p->formats[i] = 1;
}

/* ---- reading binary results ----------------------------------------------- */

static int is_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

static int64_t col_int_or(const PGresult *r, int row, int col, int64_t missing)
{
    if (is_null(r, row, col))
        return missing;
    int len = PQgetlength(r, row, col);
    uint64_t v = get_be((const unsigned char *)PQgetvalue(r, row, col), len);
    if (len == 4)
        return (int32_t)(uint32_t)v;
    if (len == 2)
        return (int16_t)(uint16_t)v;
    return (int64_t)v;
}

static int64_t col_int(const PGresult *r, int row, int col)
{
    return col_int_or(r, row, col, 0);
}

static double col_real(const PGresult *r, int row, int col)
{
    if (is_null(r, row, col) || PQgetlength(r, row, col) != 8)
        return NAN;
    uint64_t bits = get_be((const unsigned char *)PQgetvalue(r, row, col), 8);
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* A text column: NULL for NULL; lives as long as the result. */
static const char *col_text(const PGresult *r, int row, int col)
{
    return is_null(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static char *col_dup(const PGresult *r, int row, int col)
{
    const char *t = col_text(r, row, col);
    return t ? strdup(t) : NULL;
}

/* ---- errors --------------------------------------------------------------- */

/* Our code for a server error, by its SQLSTATE class (Appendix A of the
 * PostgreSQL manual). */
static int map_sqlstate(const char *state)
{
    if (!state)
        return -STROBE_ESTORE;
    if (strcmp(state, "53100") == 0) /* disk_full */
        return -STROBE_EFULL;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
        strcmp(state, "55P03") == 0) /* serialization, deadlock, lock not available */
        return -STROBE_EBUSY;
    if (strncmp(state, "XX", 2) == 0) /* internal error, data corrupted */
        return -STROBE_ECORRUPT;
    return -STROBE_ESTORE;
}

/* The first line of msg, without trailing blanks. */
static void add_first_line(struct strbuf *out, const char *msg)
{
    size_t n = strcspn(msg, "\n");
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\t' || msg[n - 1] == '\r'))
        n--;
    strbuf_add(out, msg, n);
}

/* Set s->err to "what: message" for a failed command (res may be NULL). */
static int fail(struct pg_store *s, const PGresult *res, const char *what)
{
    strbuf_reset(&s->base.err);
    s->sqlstate[0] = '\0';
    if (what)
        strbuf_addf(&s->base.err, "%s: ", what);
    if (!s->conn) {
        strbuf_adds(&s->base.err, s->dropped);
        return -STROBE_ESTORE;
    }
    if (PQstatus(s->conn) == CONNECTION_BAD) {
        strbuf_adds(&s->base.err, "lost the connection to the server");
        return -STROBE_ESTORE;
    }
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    add_first_line(&s->base.err, msg ? msg : PQerrorMessage(s->conn));
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    snprintf(s->sqlstate, sizeof(s->sqlstate), "%s", state ? state : "");
    return map_sqlstate(state);
}

/* Replace every occurrence of secret in sb by "***". */
static void scrub(struct strbuf *sb, const char *secret)
{
    if (!secret || !*secret || !strstr(sb->buf, secret))
        return;
    struct strbuf out;
    strbuf_init(&out);
    const char *p = sb->buf, *hit;
    while ((hit = strstr(p, secret))) {
        strbuf_add(&out, p, (size_t)(hit - p));
        strbuf_adds(&out, "***");
        p = hit + strlen(secret);
    }
    strbuf_adds(&out, p);
    strbuf_reset(sb);
    strbuf_add(sb, out.buf, out.len);
    strbuf_release(&out);
}

void pg_connect_error_line(const char *libpq_msg, const char *const *secrets, size_t nsecrets,
                           struct strbuf *out)
{
    static const char *const prefixes[] = {"FATAL:  ", "ERROR:  ", "FATAL: ", "ERROR: "};
    const char *msg = libpq_msg ? libpq_msg : "";
    /* "connection to server at \"h\", port 5432 failed: <why>" */
    const char *failed = strstr(msg, " failed: ");
    if (failed && (size_t)(failed - msg) < strcspn(msg, "\n"))
        msg = failed + strlen(" failed: ");
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
        if (strncmp(msg, prefixes[i], strlen(prefixes[i])) == 0) {
            msg += strlen(prefixes[i]);
            break;
        }
    struct strbuf line;
    strbuf_init(&line);
    add_first_line(&line, msg);
    if (!line.len)
        strbuf_adds(&line, "unknown error");
    for (size_t i = 0; i < nsecrets; i++)
        scrub(&line, secrets[i]);
    strbuf_add(out, line.buf, line.len);
    strbuf_release(&line);
}

/* ---- round trips, within the wait bound ------------------------------------ */

/* When a wait that starts now must end: 0 for no bound. */
static int64_t deadline_after(int wait_ms)
{
    return wait_ms > 0 ? clock_monotonic_ns() + (int64_t)wait_ms * NS_PER_MS : 0;
}

/* Wait for events on conn's socket until deadline_ns (0: none): 1 when
 * ready, 0 at the deadline, negative on an error. */
static int wait_socket(PGconn *conn, short events, int64_t deadline_ns)
{
    struct pollfd p = {PQsocket(conn), events, 0};
    if (p.fd < 0)
        return -EBADF;
    for (;;) {
        int ms = -1;
        if (deadline_ns) {
            int64_t left = deadline_ns - clock_monotonic_ns();
            if (left <= 0)
                return 0;
            ms = (int)((left + NS_PER_MS - 1) / NS_PER_MS);
        }
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* Give the connection up: the server did not answer in time (ready 0),
 * or its socket cannot be waited on (ready negative), so what it would
 * answer is unknown. A transaction under way is lost, unless its COMMIT
 * had gone out (the server then commits it when it runs again: no answer
 * is no verdict); the next begin connects again. PQfinish does not block:
 * the socket is nonblocking. */
static void drop_connection(struct pg_store *s, int ready)
{
    if (ready == 0)
        snprintf(s->dropped, sizeof(s->dropped), "the server did not answer within %g s",
                 s->wait_ms / 1000.0);
    else
        snprintf(s->dropped, sizeof(s->dropped), "cannot wait for the server: %s",
                 strerror(-ready));
    PQfinish(s->conn);
    s->conn = NULL;
    s->prepared = 0;
}

/* Take in what the socket holds: 1, or -EIO when that failed on a
 * connection still up (PQgetResult could then block). A broken one is 1
 * too: PQgetResult says why at once. */
static int consume(PGconn *c)
{
    return PQconsumeInput(c) || PQstatus(c) == CONNECTION_BAD ? 1 : -EIO;
}

/*
 * The answer to what was just sent (sent: what the PQsend* call returned),
 * as PQexec gives it: the last result, or the first that failed. Sending
 * and reading wait on the socket within the wait bound; past it the
 * connection is dropped and the answer is NULL, as after a broken one.
 */
static PGresult *await_result(struct pg_store *s, int sent)
{
    int64_t deadline = deadline_after(s->wait_ms);
    PGconn *c = s->conn;
    int ready = 1;
    /* what did not fit in the socket's buffer: the server reads slowly */
    for (int left = sent ? PQflush(c) : -1; left == 1 && ready > 0 && PQstatus(c) != CONNECTION_BAD;
         left = PQflush(c))
        if ((ready = wait_socket(c, POLLIN | POLLOUT, deadline)) > 0)
            ready = consume(c);
    PGresult *out = NULL;
    while (sent && ready > 0) {
        while (ready > 0 && PQisBusy(c) && PQstatus(c) != CONNECTION_BAD)
            if ((ready = wait_socket(c, POLLIN, deadline)) > 0)
                ready = consume(c);
        PGresult *r = ready > 0 ? PQgetResult(c) : NULL;
        if (!r)
            break;
        ExecStatusType st = out ? PQresultStatus(out) : PGRES_COMMAND_OK;
        if (st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR) {
            PQclear(r); /* keep the first error */
        } else {
            PQclear(out);
            out = r;
        }
    }
    if (ready <= 0) {
        PQclear(out);
        drop_connection(s, ready);
        return NULL;
    }
    return out;
}

static PGresult *pg_exec(struct pg_store *s, const char *sql)
{
    return s->conn ? await_result(s, PQsendQuery(s->conn, sql)) : NULL;
}

/* ---- statements ----------------------------------------------------------- */

static int prepare(struct pg_store *s, int which, const struct pg_params *p, const char *what)
{
    if (s->prepared & (UINT64_C(1) << which))
        return 0;
    char name[16];
    snprintf(name, sizeof(name), "strobe_%d", which);
    PGresult *res =
        s->conn ? await_result(s, PQsendPrepare(s->conn, name, statements[which], p->n, p->types))
                : NULL;
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : fail(s, res, what);
    PQclear(res);
    if (rc == 0)
        s->prepared |= UINT64_C(1) << which;
    return rc;
}

/* Whether s is well-formed UTF-8 throughout. */
static int is_utf8(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t n = utf8_seq_len(c);
        if (!n)
            return 0;
        c += n;
    }
    return 1;
}

/* A text parameter as the server takes it. A TEXT column refuses bytes
 * that are not UTF-8, where SQLite keeps them: a path or a process name
 * that is not (rare) goes in with U+FFFD for each bad byte (into *fixed,
 * initialised here, released by the caller), rather than fail its batch
 * and with it the run. Readers show such bytes as U+FFFD from SQLite too. */
static const char *as_utf8(const char *value, int format, struct strbuf *fixed)
{
    strbuf_init(fixed);
    if (format != 0 || !value || is_utf8(value))
        return value;
    strbuf_add_utf8(fixed, value);
    return strbuf_failed(fixed) ? value : fixed->buf;
}

/* Run statement which with p; *out gets the result (the caller PQclear()s
 * it) on success. Errors are "what: message" in s->err. */
static int exec_stmt(struct pg_store *s, int which, const struct pg_params *p, const char *what,
                     PGresult **out)
{
    *out = NULL;
    int rc = prepare(s, which, p, what);
    if (rc < 0)
        return rc;
    char name[16];
    snprintf(name, sizeof(name), "strobe_%d", which);
    const char *values[MAX_PARAMS];
    struct strbuf fixed[MAX_PARAMS];
    for (int i = 0; i < p->n; i++)
        values[i] = as_utf8(p->values[i], p->formats[i], &fixed[i]);
    PGresult *res = await_result(
        s, PQsendQueryPrepared(s->conn, name, p->n, values, p->lengths, p->formats, 1));
    for (int i = 0; i < p->n; i++)
        strbuf_release(&fixed[i]);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        rc = fail(s, res, what);
        PQclear(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* Run a statement that returns no rows. */
static int exec_done(struct pg_store *s, int which, const struct pg_params *p, const char *what)
{
    PGresult *res;
    int rc = exec_stmt(s, which, p, what, &res);
    PQclear(res);
    return rc;
}

/* Run one of a run's queries, $1 the run id (or a campaign's, $1 its name). */
static int exec_of_run(struct pg_store *s, int which, const char *run_id, const char *what,
                       PGresult **out)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    return exec_stmt(s, which, &p, what, out);
}

/* Run SQL text without parameters (transactions, schema). */
static int exec_sql(struct pg_store *s, const char *sql, const char *what)
{
    PGresult *res = pg_exec(s, sql);
    ExecStatusType st = PQresultStatus(res);
    int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : fail(s, res, what);
    PQclear(res);
    return rc;
}

/* ---- connection ----------------------------------------------------------- */

static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* NOTICEs go nowhere: libpq would print them on stderr */
}

/* The password of uri as libpq reads it (decoded), or NULL; for
 * scrubbing messages only. Freed by the caller. */
static char *uri_password(const char *uri)
{
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(uri, &errmsg);
    PQfreemem(errmsg);
    char *pw = NULL;
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "password") == 0 && o->val)
            pw = strdup(o->val);
    PQconninfoFree(opts);
    return pw;
}

/* The password as written in uri's user info, or NULL: libpq quotes it so
 * when it cannot decode it. Freed by the caller. */
static char *uri_password_as_written(const char *uri)
{
    const char *auth = strstr(uri, "://");
    if (!auth)
        return NULL;
    auth += 3;
    size_t info_len = strcspn(auth, "@/");
    const char *colon = memchr(auth, ':', info_len);
    if (auth[info_len] != '@' || !colon)
        return NULL;
    return strndup(colon + 1, (size_t)(auth + info_len - colon - 1));
}

/* s->err = "cannot connect to URI: why", the password nowhere in it. */
static void connect_error(struct pg_store *s, const char *uri)
{
    char *secrets[] = {uri_password(uri), uri_password_as_written(uri)};
    strbuf_reset(&s->base.err);
    strbuf_addf(&s->base.err, "cannot connect to %s: ", s->base.uri);
    pg_connect_error_line(PQerrorMessage(s->conn), (const char *const *)secrets,
                          ARRAY_SIZE(secrets), &s->base.err);
    for (size_t i = 0; i < ARRAY_SIZE(secrets); i++)
        free(secrets[i]);
}

/* Drive a connection PQconnectStartParams began to its end, within the
 * wait bound (libpq's connect_timeout holds only for PQconnectdbParams).
 * 0, or -ETIMEDOUT with the connection still unfinished. */
static int finish_connect(struct pg_store *s)
{
    int64_t deadline = deadline_after(s->wait_ms);
    PostgresPollingStatusType st = PGRES_POLLING_WRITING; /* as libpq says to start */
    while (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) {
        int ready = wait_socket(s->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (ready == 0)
            return -ETIMEDOUT;
        if (ready < 0)
            break; /* PQstatus says CONNECTION_BAD, PQerrorMessage why */
        st = PQconnectPoll(s->conn);
    }
    return 0;
}

/* Connect to uri: the URI's own settings, then UTF-8 texts whatever it
 * says; a timeout and a name in pg_stat_activity unless it says otherwise.
 * With a wait bound, the connection is made within it; a host name is
 * still looked up as long as the resolver takes. Nonblocking: every wait
 * is await_result's, on the socket. */
static int connect_db(struct pg_store *s, const char *uri)
{
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", "client_encoding",
                                NULL};
    const char *const values[] = {"10", "strobe", uri, "UTF8", NULL};
    int timed_out = 0;
    if (s->wait_ms > 0) {
        s->conn = PQconnectStartParams(keys, values, 1);
        timed_out = s->conn && PQstatus(s->conn) != CONNECTION_BAD && finish_connect(s) < 0;
    } else {
        s->conn = PQconnectdbParams(keys, values, 1);
    }
    if (!s->conn)
        return -ENOMEM;
    if (timed_out) {
        strbuf_reset(&s->base.err);
        strbuf_addf(&s->base.err, "cannot connect to %s: no answer within %g s", s->base.uri,
                    s->wait_ms / 1000.0);
        return -STROBE_ESTORE;
    }
    if (PQstatus(s->conn) != CONNECTION_OK) {
        connect_error(s, uri);
        return -STROBE_ESTORE;
    }
    PQsetNoticeProcessor(s->conn, ignore_notice, NULL);
    if (PQsetnonblocking(s->conn, 1) != 0)
        return fail(s, NULL, "cannot set up the session");
    /* no column holds a time or a date; set for what a session may show */
    return exec_sql(s, "SET TimeZone = 'UTC'", "cannot set up the session");
}

/* After the server went away, or did not answer in time: a new
 * connection, its statements to be prepared again. */
static int reconnect_if_lost(struct pg_store *s)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        return 0;
    if (s->conn)
        PQfinish(s->conn);
    s->conn = NULL;
    s->prepared = 0;
    return connect_db(s, s->base.open_uri ? s->base.open_uri : s->base.uri);
}

/* ---- transactions --------------------------------------------------------- */

static void pg_close(struct store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    if (s->conn)
        PQfinish(s->conn);
    strbuf_release(&s->base.err);
    free(s->base.uri);
    free(s);
}

static int pg_begin(struct store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    int rc = reconnect_if_lost(s);
    return rc < 0 ? rc : exec_sql(s, "BEGIN", NULL);
}

static int pg_commit(struct store *base)
{
    return exec_sql((struct pg_store *)base, "COMMIT", NULL);
}

static int pg_rollback(struct store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK ||
        PQtransactionStatus(s->conn) == PQTRANS_IDLE)
        return 0;
    /* keep the error that made the caller roll back */
    PGresult *res = pg_exec(s, "ROLLBACK");
    PQclear(res);
    return 0;
}

/* ---- runs ----------------------------------------------------------------- */

static int put_attrs(struct pg_store *s, const char *run_id, const char *kind,
                     const struct kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct pg_params p = {0};
        param_text(&p, run_id);
        param_text(&p, kind);
        param_text(&p, l->items[i].key);
        param_text(&p, l->items[i].value);
        int rc = exec_done(s, ST_ATTR_PUT, &p, "cannot record run attributes");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int pg_run_attrs_put(struct store *base, const char *run_id, const char *kind,
                            const struct kv_list *l)
{
    return put_attrs((struct pg_store *)base, run_id, kind, l);
}

/* The recorder's identity (boot id, pid and time namespaces, start
 * ticks); NULL where unknown. */
static void param_recorder(struct pg_params *p, const struct procid *id)
{
    param_text(p, id->boot_id[0] ? id->boot_id : NULL);
    param_int_or_null(p, id->pid_ns, id->pid_ns == 0);
    param_int_or_null(p, id->time_ns, id->time_ns == 0);
    param_int_or_null(p, id->start_ticks, id->start_ticks < 0);
}

/* A node's clock offset and its round trip, NULL until measured. */
static void param_clock(struct pg_params *p, const struct run_record *r)
{
    param_int_or_null(p, r->clock_offset_ns, r->clock_rtt_ns <= 0);
    param_int_or_null(p, r->clock_rtt_ns, r->clock_rtt_ns <= 0);
}

static int pg_run_insert(struct store *base, const struct run_record *r)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    param_text(&p, r->id);
    param_text(&p, r->name);
    param_text(&p, r->experiment);
    param_text(&p, r->command_json);
    param_text(&p, r->cwd);
    param_text(&p, r->user);
    param_text(&p, r->host);
    param_text(&p, r->kernel);
    param_text(&p, r->cpu_model);
    param_int(&p, r->cpu_count);
    param_int(&p, r->mem_total_bytes);
    param_int(&p, r->start_ns);
    param_text(&p, r->status);
    param_text(&p, r->git_commit);
    param_int_or_null(&p, r->git_dirty, r->git_dirty < 0);
    param_text(&p, r->python_version);
    param_text(&p, r->torch_version);
    param_int(&p, r->interval_ns);
    param_int(&p, r->recorder_pid);
    param_text(&p, r->strobe_version);
    param_int_or_null(&p, r->exit_code, r->exit_code < 0);
    param_int_or_null(&p, r->signal, r->signal == 0);
    param_int_or_null(&p, r->end_ns, r->end_ns == 0);
    param_int_or_null(&p, r->last_ns, r->last_ns == 0);
    param_text(&p, r->error);
    param_text(&p, r->workload);
    param_recorder(&p, &r->recorder);
    param_text(&p, r->parent_id);
    param_text(&p, r->node);
    param_text(&p, r->join_key);
    param_clock(&p, r);
    param_int_or_null(&p, r->clock_shift_ns, r->clock_shift_ns == 0);
    int rc = exec_done(s, ST_RUN_INSERT, &p, "cannot record run");
    if (rc == 0)
        rc = put_attrs(s, r->id, "tag", &r->tags);
    if (rc == 0)
        rc = put_attrs(s, r->id, "param", &r->params);
    if (rc == 0)
        rc = put_attrs(s, r->id, "env", &r->env);
    return rc;
}

static int pg_run_update(struct store *base, const struct run_record *r)
{
    struct pg_params p = {0};
    param_text(&p, r->id);
    param_int_or_null(&p, r->end_ns, r->end_ns == 0);
    param_int_or_null(&p, r->last_ns, r->last_ns == 0);
    param_int_or_null(&p, r->exit_code, r->exit_code < 0);
    param_int_or_null(&p, r->signal, r->signal == 0);
    param_text(&p, r->status);
    param_int(&p, r->samples);
    param_int(&p, r->points);
    param_int(&p, r->missed);
    param_int(&p, r->dropped);
    param_text(&p, r->error);
    param_int(&p, r->events);
    param_int(&p, r->events_dropped);
    param_int(&p, r->events_invalid);
    param_clock(&p, r);
    param_int(&p, r->start_ns);
    return exec_done((struct pg_store *)base, ST_RUN_UPDATE, &p, "cannot update run");
}

static void read_recorder(const PGresult *res, int row, int col, struct procid *id)
{
    const char *boot = col_text(res, row, col);
    snprintf(id->boot_id, sizeof(id->boot_id), "%s", boot ? boot : "");
    id->pid_ns = col_int(res, row, col + 1);
    id->time_ns = col_int(res, row, col + 2);
    id->start_ticks = col_int_or(res, row, col + 3, -1);
}

static void read_run_row(const PGresult *res, int i, struct run_record *r)
{
    const char *id = col_text(res, i, 0);
    snprintf(r->id, sizeof(r->id), "%s", id ? id : "");
    r->name = col_dup(res, i, 1);
    r->experiment = col_dup(res, i, 2);
    r->command_json = col_dup(res, i, 3);
    r->cwd = col_dup(res, i, 4);
    r->user = col_dup(res, i, 5);
    r->host = col_dup(res, i, 6);
    r->kernel = col_dup(res, i, 7);
    r->cpu_model = col_dup(res, i, 8);
    r->cpu_count = (int)col_int(res, i, 9);
    r->mem_total_bytes = col_int(res, i, 10);
    r->start_ns = col_int(res, i, 11);
    r->end_ns = col_int(res, i, 12);
    r->last_ns = col_int(res, i, 13);
    r->exit_code = (int)col_int_or(res, i, 14, -1);
    r->signal = (int)col_int(res, i, 15);
    const char *status = col_text(res, i, 16);
    snprintf(r->status, sizeof(r->status), "%s", status ? status : "");
    r->git_commit = col_dup(res, i, 17);
    r->git_dirty = (int)col_int_or(res, i, 18, -1);
    r->python_version = col_dup(res, i, 19);
    r->torch_version = col_dup(res, i, 20);
    r->interval_ns = col_int(res, i, 21);
    r->samples = col_int(res, i, 22);
    r->points = col_int(res, i, 23);
    r->missed = col_int(res, i, 24);
    r->dropped = col_int(res, i, 25);
    r->recorder_pid = col_int(res, i, 26);
    r->strobe_version = col_dup(res, i, 27);
    r->error = col_dup(res, i, 28);
    r->events = col_int(res, i, 29);
    r->events_dropped = col_int(res, i, 30);
    r->events_invalid = col_int(res, i, 31);
    r->workload = col_dup(res, i, 32);
    read_recorder(res, i, 33, &r->recorder);
    r->parent_id = col_dup(res, i, 37);
    r->node = col_dup(res, i, 38);
    r->join_key = col_dup(res, i, 39);
    r->clock_offset_ns = col_int(res, i, 40);
    r->clock_rtt_ns = col_int(res, i, 41);
    r->clock_shift_ns = col_int(res, i, 42);
}

/* The attributes of runs [from, to) of res (a runs query) in one query:
 * $1 is a text array literal of their ids, each one quoted. */
static int fetch_attrs(struct pg_store *s, const PGresult *runs, int from, int to, PGresult **out)
{
    struct strbuf ids;
    strbuf_init(&ids);
    strbuf_addch(&ids, '{');
    for (int i = from; i < to; i++) {
        strbuf_adds(&ids, i > from ? ",\"" : "\"");
        for (const char *c = PQgetvalue(runs, i, 0); *c; c++) {
            if (*c == '"' || *c == '\\')
                strbuf_addch(&ids, '\\');
            strbuf_addch(&ids, *c);
        }
        strbuf_addch(&ids, '"');
    }
    strbuf_addch(&ids, '}');
    int rc = -ENOMEM;
    if (!strbuf_failed(&ids)) {
        struct pg_params p = {0};
        param_text(&p, ids.buf);
        p.types[0] = OID_TEXT_ARRAY;
        rc = exec_stmt(s, ST_ATTRS_OF_RUNS, &p, "cannot read run attributes", out);
    }
    strbuf_release(&ids);
    return rc;
}

/* The first row of attrs (sorted by run id) of run_id, or the row count. */
static int attrs_lower_bound(const PGresult *attrs, const char *run_id)
{
    int lo = 0, hi = PQntuples(attrs);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(PQgetvalue(attrs, mid, 0), run_id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void read_attrs(const PGresult *attrs, struct run_record *r)
{
    for (int i = attrs_lower_bound(attrs, r->id);
         i < PQntuples(attrs) && strcmp(PQgetvalue(attrs, i, 0), r->id) == 0; i++) {
        const char *kind = PQgetvalue(attrs, i, 1), *key = PQgetvalue(attrs, i, 2),
                   *value = PQgetvalue(attrs, i, 3);
        struct kv_list *l = strcmp(kind, "tag") == 0     ? &r->tags
                            : strcmp(kind, "param") == 0 ? &r->params
                                                         : &r->env;
        kv_list_add(l, key, value);
    }
}

/* The runs of statement `which`, its $1 value (NULL: none). */
static int query_runs(struct pg_store *s, int which, const char *value, run_fn *fn, void *arg)
{
    struct pg_params p = {0};
    if (value)
        param_text(&p, value);
    PGresult *res, *attrs = NULL;
    int rc = exec_stmt(s, which, &p, "cannot list runs", &res);
    if (rc < 0)
        return rc;
    int n = PQntuples(res), stop = 0;
    for (int i = 0; !stop && i < n; i++) {
        if (i % ATTR_BATCH_RUNS == 0) {
            PQclear(attrs);
            int to = n - i < ATTR_BATCH_RUNS ? n : i + ATTR_BATCH_RUNS;
            if ((stop = fetch_attrs(s, res, i, to, &attrs)) < 0)
                break;
        }
        struct run_record r;
        run_record_init(&r);
        read_run_row(res, i, &r);
        read_attrs(attrs, &r);
        stop = fn(&r, arg);
        run_record_release(&r);
    }
    PQclear(attrs);
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_runs_query(struct store *base, const char *experiment, run_fn *fn, void *arg)
{
    return query_runs((struct pg_store *)base, experiment ? ST_RUNS_EXPERIMENT : ST_RUNS_ALL,
                      experiment, fn, arg);
}

static int pg_runs_where(struct store *base, enum run_key key, const char *value, run_fn *fn,
                         void *arg)
{
    static const int which[] = {[RUNS_OF_PARENT] = ST_RUNS_OF_PARENT,
                                [RUNS_OF_JOIN_KEY] = ST_RUNS_OF_JOIN_KEY,
                                [RUNS_OF_ID] = ST_RUNS_OF_ID,
                                [RUNS_OF_STATUS] = ST_RUNS_OF_STATUS};
    return query_runs((struct pg_store *)base, which[key], value, fn, arg);
}

static int pg_join_lock(struct store *base, const char *key)
{
    struct pg_params p = {0};
    param_text(&p, key);
    return exec_done((struct pg_store *)base, ST_JOIN_LOCK, &p, "cannot join the run");
}

static int pg_try_lead(struct store *base, const char *key)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    param_text(&p, key);
    PGresult *res;
    int rc = exec_stmt(s, ST_TRY_LEAD, &p, "cannot take the lead", &res);
    if (rc == 0)
        rc = col_int(res, 0, 0) ? 1 : 0;
    PQclear(res);
    return rc;
}

static int pg_clock_ns(struct store *base, int64_t *out)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    PGresult *res;
    int rc = exec_stmt(s, ST_CLOCK, &p, "cannot read the server's clock", &res);
    if (rc == 0)
        *out = col_int(res, 0, 0) * 1000;
    PQclear(res);
    return rc;
}

static int pg_run_delete(struct store *base, const char *run_id)
{
    static const int clear[] = {
        ST_FINDINGS_CLEAR,     ST_RULE_RESULTS_CLEAR, ST_RULE_CONFIG_CLEAR, ST_RUN_TEXTS_CLEAR,
        ST_EVENT_BLOCKS_CLEAR, ST_EVENT_NAMES_CLEAR,  ST_PROCESSES_CLEAR,   ST_PY_BLOCKS_CLEAR,
        ST_BLOCKS_CLEAR,       ST_SERIES_CLEAR,       ST_ATTRS_CLEAR,       ST_RUN_DELETE,
    };
    struct pg_store *s = (struct pg_store *)base;
    /* in the caller's transaction when one is open: strobe copy removes
     * an old copy in the one that writes the new */
    int own = PQstatus(s->conn) != CONNECTION_OK || PQtransactionStatus(s->conn) == PQTRANS_IDLE;
    int rc = own ? pg_begin(base) : 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(clear); i++) {
        struct pg_params p = {0};
        param_text(&p, run_id);
        rc = exec_done(s, clear[i], &p, "cannot delete run");
    }
    if (!own)
        return rc;
    if (rc == 0)
        return pg_commit(base);
    pg_rollback(base);
    return rc;
}

/* ---- series and blocks ---------------------------------------------------- */

static int pg_series_insert(struct store *base, const char *run_id, const char *name,
                            const char *labels, const char *unit, const char *meta, int64_t *out_id)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_text(&p, name);
    param_text(&p, labels);
    param_text(&p, unit);
    param_text(&p, meta);
    PGresult *res;
    int rc = exec_stmt(s, ST_SERIES_INSERT, &p, "cannot define series", &res);
    if (rc == 0)
        *out_id = col_int(res, 0, 0);
    PQclear(res);
    return rc;
}

static int pg_series_update_meta(struct store *base, int64_t id, const char *meta)
{
    struct pg_params p = {0};
    param_int(&p, id);
    param_text(&p, meta);
    return exec_done((struct pg_store *)base, ST_SERIES_META, &p, "cannot update series");
}

static int pg_block_upsert(struct store *base, int64_t series_id, const struct block_stats *st,
                           const void *data, size_t len)
{
    struct pg_params p = {0};
    param_int(&p, series_id);
    param_int(&p, st->start_ns);
    param_int(&p, st->end_ns);
    param_int(&p, st->count);
    param_real(&p, st->min);
    param_real(&p, st->max);
    param_real(&p, st->sum);
    param_real(&p, st->first);
    param_real(&p, st->last);
    param_bytes(&p, data, len);
    return exec_done((struct pg_store *)base, ST_BLOCK_UPSERT, &p, "cannot write block");
}

/* blocks_put's arrays go in PostgreSQL's binary form (array_recv): ndim 1,
 * a has-nulls flag, the element type, the length and lower bound 1, then
 * each element as a 4-byte length (-1: NULL) and its bytes, big-endian. */
#define ARRAY_HEAD_BYTES 20

static void put_be32(unsigned char *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static void array_start(struct strbuf *a, Oid elem, size_t n)
{
    unsigned char head[ARRAY_HEAD_BYTES];
    put_be32(head, 1);
    put_be32(head + 4, 0);
    put_be32(head + 8, elem);
    put_be32(head + 12, (uint32_t)n);
    put_be32(head + 16, 1);
    strbuf_reset(a);
    strbuf_add(a, head, sizeof(head));
}

static void array_add(struct strbuf *a, const void *data, size_t len)
{
    unsigned char n[4];
    put_be32(n, (uint32_t)len);
    strbuf_add(a, n, sizeof(n));
    strbuf_add(a, data, len);
}

static void array_int8(struct strbuf *a, int64_t v)
{
    unsigned char b[8];
    put_be64(b, (uint64_t)v);
    array_add(a, b, sizeof(b));
}

/* NaN is NULL, as param_real keeps it. */
static void array_float8(struct strbuf *a, double v)
{
    if (isnan(v)) {
        unsigned char null[4];
        put_be32(null, UINT32_MAX);
        strbuf_add(a, null, sizeof(null));
        if (a->len >= ARRAY_HEAD_BYTES)
            put_be32((unsigned char *)a->buf + 4, 1);
        return;
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    array_int8(a, (int64_t)bits);
}

static void param_array(struct pg_params *p, Oid type, const struct strbuf *a)
{
    int i = p->n++;
    p->types[i] = type;
    p->values[i] = a->buf;
    p->lengths[i] = (int)a->len;
    p->formats[i] = 1;
}

enum { PUT_COLUMNS = 10 };

struct block_key {
    int64_t series_id, start_ns;
};

static int block_key_cmp(const void *x, const void *y)
{
    const struct block_key *a = x, *b = y;
    if (a->series_id != b->series_id)
        return a->series_id < b->series_id ? -1 : 1;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

/* Whether two of the blocks share a series and start: one INSERT ... ON
 * CONFLICT may not update a row twice. */
static int repeats_a_block(const struct block_put *b, size_t n)
{
    struct block_key keys[BLOCKS_PER_PUT];
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct block_key){b[i].series_id, b[i].st.start_ns};
    qsort(keys, n, sizeof(keys[0]), block_key_cmp);
    for (size_t i = 1; i < n; i++)
        if (block_key_cmp(&keys[i - 1], &keys[i]) == 0)
            return 1;
    return 0;
}

/* Up to BLOCKS_PER_PUT blocks in one statement, cols its arrays' room. */
static int put_blocks_chunk(struct pg_store *s, const struct block_put *b, size_t n,
                            struct strbuf *cols)
{
    static const Oid elem[PUT_COLUMNS] = {OID_INT8,   OID_INT8,   OID_INT8,   OID_INT8,
                                          OID_FLOAT8, OID_FLOAT8, OID_FLOAT8, OID_FLOAT8,
                                          OID_FLOAT8, OID_BYTEA};
    static const Oid type[PUT_COLUMNS] = {
        OID_INT8_ARRAY,   OID_INT8_ARRAY,   OID_INT8_ARRAY,   OID_INT8_ARRAY,   OID_FLOAT8_ARRAY,
        OID_FLOAT8_ARRAY, OID_FLOAT8_ARRAY, OID_FLOAT8_ARRAY, OID_FLOAT8_ARRAY, OID_BYTEA_ARRAY};
    if (repeats_a_block(b, n))
        return store_blocks_put_each(&s->base, b, n);
    for (int c = 0; c < PUT_COLUMNS; c++)
        array_start(&cols[c], elem[c], n);
    for (size_t i = 0; i < n; i++) {
        const struct block_stats *st = &b[i].st;
        array_int8(&cols[0], b[i].series_id);
        array_int8(&cols[1], st->start_ns);
        array_int8(&cols[2], st->end_ns);
        array_int8(&cols[3], st->count);
        array_float8(&cols[4], st->min);
        array_float8(&cols[5], st->max);
        array_float8(&cols[6], st->sum);
        array_float8(&cols[7], st->first);
        array_float8(&cols[8], st->last);
        array_add(&cols[9], b[i].data, b[i].len);
    }
    struct pg_params p = {0};
    for (int c = 0; c < PUT_COLUMNS; c++) {
        if (strbuf_failed(&cols[c]) || cols[c].len > INT_MAX)
            return -ENOMEM;
        param_array(&p, type[c], &cols[c]);
    }
    return exec_done(s, ST_BLOCKS_PUT, &p, "cannot write blocks");
}

static int pg_blocks_put(struct store *base, const struct block_put *blocks, size_t n)
{
    struct pg_store *s = (struct pg_store *)base;
    struct strbuf cols[PUT_COLUMNS];
    for (int c = 0; c < PUT_COLUMNS; c++)
        strbuf_init(&cols[c]);
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < n; at += BLOCKS_PER_PUT) {
        size_t k = n - at < BLOCKS_PER_PUT ? n - at : BLOCKS_PER_PUT;
        rc = put_blocks_chunk(s, blocks + at, k, cols);
    }
    for (int c = 0; c < PUT_COLUMNS; c++)
        strbuf_release(&cols[c]);
    return rc;
}

/* Labels in natural order, as sqlite.c's strobe_natural collation. */
static int natural_cmp(const char *a, const char *b)
{
    if (strlen(a) >= 256 || strlen(b) >= 256) /* longer than any label set: as text */
        return strcmp(a, b);
    return strverscmp(a, b);
}

struct series_row {
    const PGresult *res;
    int row;
};

static int series_row_cmp(const void *x, const void *y)
{
    const struct series_row *a = x, *b = y;
    int c = strcmp(PQgetvalue(a->res, a->row, 1), PQgetvalue(b->res, b->row, 1));
    return c ? c : natural_cmp(PQgetvalue(a->res, a->row, 2), PQgetvalue(b->res, b->row, 2));
}

static int pg_series_query(struct store *base, const char *run_id, series_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    PGresult *res;
    int rc = exec_of_run(s, ST_SERIES_OF_RUN, run_id, "cannot list series", &res);
    if (rc < 0)
        return rc;
    int n = PQntuples(res);
    struct series_row *rows = calloc((size_t)n + 1, sizeof(*rows));
    if (!rows) {
        PQclear(res);
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++)
        rows[i] = (struct series_row){res, i};
    qsort(rows, (size_t)n, sizeof(*rows), series_row_cmp);
    int stop = 0;
    for (int k = 0; !stop && k < n; k++) {
        int i = rows[k].row;
        const char *labels = col_text(res, i, 2), *unit = col_text(res, i, 3);
        struct series_record r = {
            .id = col_int(res, i, 0),
            .run_id = run_id,
            .name = col_text(res, i, 1),
            .labels = labels ? labels : "",
            .unit = unit ? unit : "",
            .meta = col_text(res, i, 4),
            .count = col_int(res, i, 5),
            .min = col_real(res, i, 6),
            .max = col_real(res, i, 7),
            .sum = col_real(res, i, 8),
            .start_ns = col_int(res, i, 9),
            .end_ns = col_int(res, i, 10),
            .bytes = col_int(res, i, 11),
        };
        stop = fn(&r, arg);
    }
    free(rows);
    PQclear(res);
    return stop < 0 ? stop : 0;
}

/* A block row's summary: columns 0-7 are start_ns, end_ns, count, min, max,
 * sum, first, last in every query of blocks. */
static struct block_stats block_row_stats(const PGresult *res, int i)
{
    int64_t count = col_int(res, i, 2);
    return (struct block_stats){
        .count = count > 0 && count <= UINT32_MAX ? (uint32_t)count : 0,
        .start_ns = col_int(res, i, 0),
        .end_ns = col_int(res, i, 1),
        .min = col_real(res, i, 3),
        .max = col_real(res, i, 4),
        .sum = col_real(res, i, 5),
        .first = col_real(res, i, 6),
        .last = col_real(res, i, 7),
    };
}

static int pg_blocks_query(struct store *base, int64_t series_id, block_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    int64_t after_ns = INT64_MIN, after_id = INT64_MIN; /* ids start at 1 */
    int rows = PAGE_ROWS, stop = 0;
    while (!stop && rows == PAGE_ROWS) {
        struct pg_params p = {0};
        param_int(&p, series_id);
        param_int(&p, after_ns);
        param_int(&p, after_id);
        PGresult *res;
        int rc = exec_stmt(s, ST_BLOCKS_OF_SERIES, &p, "cannot read blocks", &res);
        if (rc < 0)
            return rc;
        rows = PQntuples(res);
        for (int i = 0; !stop && i < rows; i++) {
            struct block_record b = {.series_id = series_id, .st = block_row_stats(res, i)};
            b.data = (const uint8_t *)PQgetvalue(res, i, 8);
            b.len = (size_t)PQgetlength(res, i, 8);
            stop = fn(&b, arg);
        }
        if (rows > 0) {
            after_ns = col_int(res, rows - 1, 0);
            after_id = col_int(res, rows - 1, 9);
        }
        PQclear(res);
    }
    return stop < 0 ? stop : 0;
}

/* The data of block id, when want() asked for it: one index probe. */
/* Wanted blocks whose data one query reads: a downsampled view of a long
 * series decodes about a thousand, and a round trip each was most of its
 * time (111 of 138 ms for 10 M samples). */
#define BLOCK_DATA_BATCH 256

/* The data of the wanted rows of res from row `from` on, up to
 * BLOCK_DATA_BATCH of them, into *out (rows "id, data" by id); *to gets
 * the row after the last one asked for. */
static int read_block_data(struct pg_store *s, const PGresult *res, const unsigned char *wanted,
                           int from, int *to, PGresult **out)
{
    struct strbuf ids;
    strbuf_init(&ids);
    strbuf_addch(&ids, '{');
    int n = PQntuples(res), asked = 0, i = from;
    for (; i < n && asked < BLOCK_DATA_BATCH; i++)
        if (wanted[i])
            strbuf_addf(&ids, "%s%lld", asked++ ? "," : "", (long long)col_int(res, i, 8));
    strbuf_addch(&ids, '}');
    *to = i;
    int rc = -ENOMEM;
    if (!strbuf_failed(&ids)) {
        struct pg_params p = {0};
        param_text(&p, ids.buf);
        rc = exec_stmt(s, ST_BLOCK_DATA, &p, "cannot read blocks", out);
    }
    strbuf_release(&ids);
    return rc;
}

/* The row of block id in d (rows by id), or -1. */
static int block_data_row(const PGresult *d, int64_t id)
{
    int lo = 0, hi = PQntuples(d);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int64_t at = col_int(d, mid, 0);
        if (at == id)
            return mid;
        if (at < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* want() is asked of every block first (it judges from a block's summary
 * alone), then the data of the wanted ones comes in batches. */
static int pg_blocks_range_query(struct store *base, int64_t series_id, int64_t from_ns,
                                 int64_t to_ns, block_want_fn *want, block_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    param_int(&p, series_id);
    param_int(&p, from_ns);
    param_int(&p, to_ns);
    PGresult *res;
    int rc = exec_stmt(s, ST_BLOCKS_IN_RANGE, &p, "cannot read blocks", &res);
    if (rc < 0)
        return rc;
    int n = PQntuples(res), stop = 0, fetched_to = 0;
    unsigned char *wanted = calloc((size_t)n + 1, 1);
    if (!wanted) {
        PQclear(res);
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        struct block_stats st = block_row_stats(res, i);
        wanted[i] = want(&st, arg) != 0;
    }
    PGresult *d = NULL;
    for (int i = 0; !stop && i < n; i++) {
        struct block_record b = {.series_id = series_id, .st = block_row_stats(res, i)};
        if (wanted[i] && i >= fetched_to) {
            PQclear(d);
            d = NULL;
            if ((stop = read_block_data(s, res, wanted, i, &fetched_to, &d)) < 0)
                break;
        }
        int row = wanted[i] ? block_data_row(d, col_int(res, i, 8)) : -1;
        if (row >= 0) {
            b.data = (const uint8_t *)PQgetvalue(d, row, 1);
            b.len = (size_t)PQgetlength(d, row, 1);
        }
        stop = fn(&b, arg);
    }
    PQclear(d);
    free(wanted);
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_series_find(struct store *base, const char *run_id, const char *name,
                          const char *labels, series_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_text(&p, name);
    param_text(&p, labels);
    PGresult *res;
    int rc = exec_stmt(s, ST_SERIES_FIND, &p, "cannot find series", &res);
    if (rc < 0)
        return rc;
    int out = -STROBE_ENOTFOUND;
    if (PQntuples(res) > 0) {
        const char *unit = col_text(res, 0, 1);
        struct series_record r = {
            .id = col_int(res, 0, 0),
            .run_id = run_id,
            .name = name,
            .labels = labels,
            .unit = unit ? unit : "",
            .meta = col_text(res, 0, 2),
            .min = NAN,
            .max = NAN,
            .sum = NAN,
            .start_ns = col_int(res, 0, 3),
            .end_ns = col_int(res, 0, 4),
        };
        out = fn(&r, arg);
    }
    PQclear(res);
    return out < 0 ? out : 0;
}

/* ---- framework events ----------------------------------------------------- */

static int pg_event_name_insert(struct store *base, const char *run_id, int64_t id,
                                const char *name)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, id);
    param_text(&p, name);
    return exec_done((struct pg_store *)base, ST_EVENT_NAME_PUT, &p, "cannot define event name");
}

static int pg_process_upsert(struct store *base, const char *run_id,
                             const struct process_record *pr)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, pr->pid);
    param_int_or_null(&p, pr->ppid, pr->ppid < 0);
    param_text(&p, pr->comm);
    param_text(&p, pr->role);
    param_int_or_null(&p, pr->rank, pr->rank < 0);
    param_int_or_null(&p, pr->local_rank, pr->local_rank < 0);
    param_int_or_null(&p, pr->world_size, pr->world_size < 0);
    param_int_or_null(&p, pr->worker_id, pr->worker_id < 0);
    return exec_done((struct pg_store *)base, ST_PROCESS_PUT, &p, "cannot record process");
}

static int pg_event_block_insert(struct store *base, const char *run_id,
                                 const struct event_block_record *b)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, b->pid);
    param_int(&p, b->tid);
    param_int(&p, b->start_ns);
    param_int(&p, b->end_ns);
    param_int(&p, b->step_min);
    param_int(&p, b->step_max);
    param_int(&p, b->count);
    param_bytes(&p, b->data, b->len);
    return exec_done((struct pg_store *)base, ST_EVENT_BLOCK_INSERT, &p,
                     "cannot write event block");
}

static int pg_event_names_query(struct store *base, const char *run_id, event_name_fn *fn,
                                void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_EVENT_NAMES_OF_RUN, run_id,
                         "cannot read event names", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        const char *name = col_text(res, i, 1);
        stop = fn(col_int(res, i, 0), name ? name : "", arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_processes_query(struct store *base, const char *run_id, process_fn *fn, void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_PROCESSES_OF_RUN, run_id,
                         "cannot read processes", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct process_record pr = {
            .pid = col_int(res, i, 0),
            .ppid = col_int_or(res, i, 1, -1),
            .comm = col_text(res, i, 2),
            .role = col_text(res, i, 3),
            .rank = col_int_or(res, i, 4, -1),
            .local_rank = col_int_or(res, i, 5, -1),
            .world_size = col_int_or(res, i, 6, -1),
            .worker_id = col_int_or(res, i, 7, -1),
        };
        stop = fn(&pr, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_event_blocks_query(struct store *base, const char *run_id, int64_t from_ns,
                                 int64_t to_ns, event_block_fn *fn, void *arg)
{
    int64_t after_ns = INT64_MIN, after_id = INT64_MIN; /* ids start at 1 */
    int rows = PAGE_ROWS, stop = 0;
    while (!stop && rows == PAGE_ROWS) {
        struct pg_params p = {0};
        param_text(&p, run_id);
        param_int(&p, from_ns);
        param_int(&p, to_ns);
        param_int(&p, after_ns);
        param_int(&p, after_id);
        PGresult *res;
        int rc = exec_stmt((struct pg_store *)base, ST_EVENT_BLOCKS_OF_RUN, &p,
                           "cannot read event blocks", &res);
        if (rc < 0)
            return rc;
        rows = PQntuples(res);
        for (int i = 0; !stop && i < rows; i++) {
            struct event_block_record b = {
                .pid = col_int(res, i, 0),
                .tid = col_int(res, i, 1),
                .start_ns = col_int(res, i, 2),
                .end_ns = col_int(res, i, 3),
                .step_min = col_int(res, i, 4),
                .step_max = col_int(res, i, 5),
                .count = col_int(res, i, 6),
                .data = (const uint8_t *)PQgetvalue(res, i, 7),
                .len = (size_t)PQgetlength(res, i, 7),
            };
            stop = fn(&b, arg);
        }
        if (rows > 0) {
            after_ns = col_int(res, rows - 1, 2);
            after_id = col_int(res, rows - 1, 8);
        }
        PQclear(res);
    }
    return stop < 0 ? stop : 0;
}

/* ---- rules ---------------------------------------------------------------- */

static int pg_rules_clear(struct store *base, const char *run_id)
{
    static const int clear[] = {ST_FINDINGS_CLEAR, ST_RULE_RESULTS_CLEAR, ST_RULE_CONFIG_CLEAR};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(clear); i++) {
        struct pg_params p = {0};
        param_text(&p, run_id);
        rc = exec_done((struct pg_store *)base, clear[i], &p, "cannot clear findings");
    }
    return rc;
}

static int pg_rule_config_put(struct store *base, const char *run_id,
                              const struct rule_config_record *c)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, c->interval_ns);
    param_text(&p, c->rules);
    param_text(&p, c->params);
    param_text(&p, c->mode);
    param_int(&p, c->evaluated_ns);
    return exec_done((struct pg_store *)base, ST_RULE_CONFIG_PUT, &p,
                     "cannot record rule settings");
}

static int pg_rule_result_insert(struct store *base, const char *run_id,
                                 const struct rule_result_record *r)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_text(&p, r->rule);
    param_text(&p, r->status);
    param_int(&p, r->datapoints);
    param_int(&p, r->violations);
    param_text(&p, r->detail);
    param_text(&p, r->report);
    return exec_done((struct pg_store *)base, ST_RULE_RESULT_PUT, &p, "cannot record rule result");
}

static int pg_finding_insert(struct store *base, const char *run_id, int64_t seq,
                             const struct finding_record *f)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, seq);
    param_text(&p, f->rule);
    param_text(&p, f->severity);
    param_int(&p, f->start_ns);
    param_int(&p, f->end_ns);
    param_text(&p, f->scope);
    param_text(&p, f->evidence ? f->evidence : "");
    param_text(&p, f->events);
    param_text(&p, f->recommendation);
    return exec_done((struct pg_store *)base, ST_FINDING_PUT, &p, "cannot record finding");
}

static int pg_rule_config_query(struct store *base, const char *run_id, rule_config_fn *fn,
                                void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_RULE_CONFIG_OF_RUN, run_id,
                         "cannot read rule settings", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct rule_config_record c = {col_int(res, i, 0), col_text(res, i, 1), col_text(res, i, 2),
                                       col_text(res, i, 3), col_int(res, i, 4)};
        stop = fn(&c, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_rule_results_query(struct store *base, const char *run_id, rule_result_fn *fn,
                                 void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_RULE_RESULTS_OF_RUN, run_id,
                         "cannot read rule results", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct rule_result_record r = {col_text(res, i, 0), col_text(res, i, 1),
                                       col_int(res, i, 2),  col_int(res, i, 3),
                                       col_text(res, i, 4), col_text(res, i, 5)};
        stop = fn(&r, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_findings_query(struct store *base, const char *run_id, finding_rec_fn *fn, void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_FINDINGS_OF_RUN, run_id,
                         "cannot read findings", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct finding_record f = {
            .rule = col_text(res, i, 0),
            .severity = col_text(res, i, 1),
            .start_ns = col_int(res, i, 2),
            .end_ns = col_int(res, i, 3),
            .scope = col_text(res, i, 4),
            .evidence = col_text(res, i, 5),
            .events = col_text(res, i, 6),
            .recommendation = col_text(res, i, 7),
        };
        stop = fn(&f, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

/* ---- texts ---------------------------------------------------------------- */

/* The text is BYTEA: a job's output is not always valid UTF-8, which a
 * TEXT column refuses. */
static int pg_run_text_put(struct store *base, const char *run_id, const struct run_text_record *t)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_text(&p, t->kind);
    param_int(&p, t->bytes);
    param_bytes(&p, t->data, t->len);
    return exec_done((struct pg_store *)base, ST_RUN_TEXT_PUT, &p, "cannot keep the run's texts");
}

/* Each row of res (kind, bytes, text) to fn; res is cleared. */
static int texts_rows(PGresult *res, run_text_fn *fn, void *arg)
{
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct run_text_record t = {
            .kind = col_text(res, i, 0),
            .bytes = col_int(res, i, 1),
            .data = PQgetvalue(res, i, 2), /* NUL-terminated by libpq, as SQLite's text */
            .len = (size_t)PQgetlength(res, i, 2),
        };
        stop = fn(&t, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_run_texts_query(struct store *base, const char *run_id, run_text_fn *fn, void *arg)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_RUN_TEXTS_OF_RUN, run_id,
                         "cannot read the run's texts", &res);
    return rc < 0 ? rc : texts_rows(res, fn, arg);
}

static int pg_run_text_get(struct store *base, const char *run_id, const char *kind,
                           run_text_fn *fn, void *arg)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_text(&p, kind);
    PGresult *res;
    int rc = exec_stmt((struct pg_store *)base, ST_RUN_TEXT_OF_KIND, &p,
                       "cannot read the run's texts", &res);
    return rc < 0 ? rc : texts_rows(res, fn, arg);
}

/* ---- campaigns ------------------------------------------------------------ */

/* Single statements: in the caller's transaction when one is open, else
 * each in its own (autocommit). The state is TEXT: JSON, so UTF-8. */
static int pg_campaign_put(struct store *base, const struct campaign_record *c)
{
    struct pg_params p = {0};
    param_text(&p, c->name);
    param_text(&p, c->spec_hash);
    param_text(&p, c->file);
    param_int(&p, c->created_ns);
    param_int(&p, c->updated_ns);
    param_text(&p, c->state);
    return exec_done((struct pg_store *)base, ST_CAMPAIGN_PUT, &p, "cannot keep the campaign");
}

/* Row i of CAMPAIGN_COLUMNS; its strings live as long as res. */
static struct campaign_record campaign_row(const PGresult *res, int i)
{
    return (struct campaign_record){
        .name = col_text(res, i, 0),
        .spec_hash = col_text(res, i, 1),
        .file = col_text(res, i, 2),
        .created_ns = col_int(res, i, 3),
        .updated_ns = col_int(res, i, 4),
        .state = col_text(res, i, 5),
    };
}

static int pg_campaign_get(struct store *base, const char *name, campaign_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    if (s->version < SCHEMA_CAMPAIGNS_VERSION)
        return -STROBE_ENOTFOUND;
    PGresult *res;
    int rc = exec_of_run(s, ST_CAMPAIGN_GET, name, "cannot read the campaign", &res);
    if (rc < 0)
        return rc;
    rc = -STROBE_ENOTFOUND;
    if (PQntuples(res) > 0) {
        struct campaign_record c = campaign_row(res, 0);
        rc = fn(&c, arg);
        rc = rc < 0 ? rc : 0;
    }
    PQclear(res);
    return rc;
}

static int pg_campaigns_query(struct store *base, campaign_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    if (s->version < SCHEMA_CAMPAIGNS_VERSION)
        return 0;
    struct pg_params p = {0};
    PGresult *res;
    int rc = exec_stmt(s, ST_CAMPAIGNS_ALL, &p, "cannot list campaigns", &res);
    if (rc < 0)
        return rc;
    int stop = 0;
    for (int i = 0; !stop && i < PQntuples(res); i++) {
        struct campaign_record c = campaign_row(res, i);
        stop = fn(&c, arg);
    }
    PQclear(res);
    return stop < 0 ? stop : 0;
}

static int pg_campaign_delete(struct store *base, const char *name)
{
    PGresult *res;
    int rc = exec_of_run((struct pg_store *)base, ST_CAMPAIGN_DELETE, name,
                         "cannot delete the campaign", &res);
    if (rc == 0 && PQntuples(res) == 0)
        rc = -STROBE_ENOTFOUND;
    PQclear(res);
    return rc;
}

/* ---- Python stack samples ------------------------------------------------ */

static int pg_py_block_put(struct store *base, const char *run_id, const struct py_block_record *b)
{
    struct pg_params p = {0};
    param_text(&p, run_id);
    param_int(&p, b->seq);
    param_int(&p, b->kind);
    param_int(&p, b->start_ns);
    param_int(&p, b->end_ns);
    param_int(&p, b->count);
    param_bytes(&p, b->data, b->len);
    return exec_done((struct pg_store *)base, ST_PY_BLOCK_PUT, &p, "cannot write Python samples");
}

/* A page at a time, as the event blocks: a run's samples may be large. */
static int pg_py_blocks_query(struct store *base, const char *run_id, int64_t from_ns,
                              int64_t to_ns, py_block_fn *fn, void *arg)
{
    struct pg_store *s = (struct pg_store *)base;
    if (s->version < SCHEMA_PY_BLOCKS_VERSION)
        return 0;
    int64_t after_seq = INT64_MIN;
    int rows = PAGE_ROWS, stop = 0;
    while (!stop && rows == PAGE_ROWS) {
        struct pg_params p = {0};
        param_text(&p, run_id);
        param_int(&p, from_ns);
        param_int(&p, to_ns);
        param_int(&p, after_seq);
        PGresult *res;
        int rc = exec_stmt(s, ST_PY_BLOCKS_OF_RUN, &p, "cannot read Python samples", &res);
        if (rc < 0)
            return rc;
        rows = PQntuples(res);
        for (int i = 0; !stop && i < rows; i++) {
            struct py_block_record b = {
                .seq = col_int(res, i, 0),
                .kind = (int)col_int(res, i, 1),
                .start_ns = col_int(res, i, 2),
                .end_ns = col_int(res, i, 3),
                .count = col_int(res, i, 4),
                .data = (const uint8_t *)PQgetvalue(res, i, 5),
                .len = (size_t)PQgetlength(res, i, 5),
            };
            stop = fn(&b, arg);
        }
        if (rows > 0)
            after_seq = col_int(res, rows - 1, 0);
        PQclear(res);
    }
    return stop < 0 ? stop : 0;
}

static void pg_set_timeout(struct store *base, int ms)
{
    ((struct pg_store *)base)->wait_ms = ms > 0 ? ms : 0;
}

static const struct store_ops pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .run_insert = pg_run_insert,
    .run_update = pg_run_update,
    .series_insert = pg_series_insert,
    .series_update_meta = pg_series_update_meta,
    .block_upsert = pg_block_upsert,
    .blocks_put = pg_blocks_put,
    .runs_query = pg_runs_query,
    .series_query = pg_series_query,
    .blocks_query = pg_blocks_query,
    .run_delete = pg_run_delete,
    .event_name_insert = pg_event_name_insert,
    .process_upsert = pg_process_upsert,
    .event_block_insert = pg_event_block_insert,
    .event_names_query = pg_event_names_query,
    .processes_query = pg_processes_query,
    .event_blocks_query = pg_event_blocks_query,
    .rules_clear = pg_rules_clear,
    .rule_config_put = pg_rule_config_put,
    .rule_result_insert = pg_rule_result_insert,
    .finding_insert = pg_finding_insert,
    .rule_config_query = pg_rule_config_query,
    .rule_results_query = pg_rule_results_query,
    .findings_query = pg_findings_query,
    .run_text_put = pg_run_text_put,
    .run_attrs_put = pg_run_attrs_put,
    .run_texts_query = pg_run_texts_query,
    .run_text_get = pg_run_text_get,
    .blocks_range_query = pg_blocks_range_query,
    .series_find = pg_series_find,
    .runs_where = pg_runs_where,
    .join_lock = pg_join_lock,
    .clock_ns = pg_clock_ns,
    .try_lead = pg_try_lead,
    .set_timeout = pg_set_timeout,
    .campaign_put = pg_campaign_put,
    .campaign_get = pg_campaign_get,
    .campaigns_query = pg_campaigns_query,
    .campaign_delete = pg_campaign_delete,
    .py_block_put = pg_py_block_put,
    .py_blocks_query = pg_py_blocks_query,
};

/* ---- schema --------------------------------------------------------------- */

/* One integer from SQL text (a text result: the simple query protocol answers in text). */
static int query_int(struct pg_store *s, const char *sql, int64_t *out)
{
    PGresult *res = pg_exec(s, sql);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        rc = fail(s, res, "cannot read store");
    else
        *out = PQntuples(res) && !PQgetisnull(res, 0, 0) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                                                         : 0;
    PQclear(res);
    return rc;
}

/* Whether a table of that name is on the search path. Read from pg_class
 * with the statement's snapshot, not through to_regclass(): its cache
 * would still miss a table another recorder created while this one waited
 * for the migration lock. */
#define TABLE_EXISTS(name)                                                                         \
    "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"                    \
    " ON n.oid = c.relnamespace WHERE c.relname = '" name "'"                                      \
    " AND n.nspname = ANY(current_schemas(false))"

/* The schema version: 0 when the database holds no strobe store. Refuses
 * a newer store, and a database whose runs table is not ours. */
static int read_version(struct pg_store *s, int64_t *version)
{
    int64_t ours = 0, theirs = 0;
    *version = 0;
    int rc = query_int(s, TABLE_EXISTS("strobe_schema"), &ours);
    if (rc == 0 && ours)
        rc = query_int(s, "SELECT max(version) FROM strobe_schema", version);
    if (rc == 0 && !ours)
        rc = query_int(s, TABLE_EXISTS("runs"), &theirs);
    if (rc < 0)
        return rc;
    strbuf_reset(&s->base.err);
    if (theirs) {
        strbuf_adds(&s->base.err, "not a strobe store (it holds a table 'runs' of its own)");
        return -STROBE_ECORRUPT;
    }
    if (*version > SCHEMA_VERSION) {
        strbuf_addf(&s->base.err, "store schema version %lld is newer than this strobe's (%d)",
                    (long long)*version, SCHEMA_VERSION);
        return -STROBE_ESCHEMA;
    }
    return 0;
}

/* Apply the migrations past the version in one transaction. The advisory
 * lock makes recorders that open a new database together take turns: the
 * second reads the version again under the lock and finds nothing to do. */
static int migrate_locked(struct pg_store *s)
{
    int64_t version = 0;
    int rc = exec_sql(s, "SELECT pg_advisory_xact_lock(" MIGRATION_LOCK ")", "cannot lock schema");
    if (rc == 0)
        rc = read_version(s, &version);
    if (rc == 0 && version == 0)
        rc = exec_sql(s, "CREATE TABLE strobe_schema(version BIGINT NOT NULL)",
                      "cannot create schema");
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(pg_migrations); i++) {
        if (pg_migrations[i].version <= version)
            continue;
        char bump[96];
        snprintf(bump, sizeof(bump),
                 "DELETE FROM strobe_schema; INSERT INTO strobe_schema VALUES(%d)",
                 pg_migrations[i].version);
        if ((rc = exec_sql(s, pg_migrations[i].sql, "cannot create schema")) == 0)
            rc = exec_sql(s, bump, "cannot create schema");
    }
    return rc;
}

/* Whether the server refused a write of this session: a read-only
 * transaction (a hot standby, default_transaction_read_only) or a role
 * without the privilege. */
static int write_refused(const struct pg_store *s)
{
    return strcmp(s->sqlstate, "25006") == 0 || strcmp(s->sqlstate, "42501") == 0;
}

/* Create or upgrade the schema where this connection writes; readers only
 * read the version (a database without a store is "not found"). A reader
 * of an older store upgrades it, as sqlite.c's does: every query expects
 * the current schema. One that may not write reads a store of version 6
 * or 7 as it is: it lacks only the campaigns (6) and the Python samples,
 * and finds none (s->version). */
static int migrate(struct pg_store *s, int readonly)
{
    int64_t version = 0;
    int rc = read_version(s, &version);
    s->version = version;
    if (rc < 0 || version == SCHEMA_VERSION)
        return rc;
    if (readonly && version == 0) {
        strbuf_reset(&s->base.err);
        strbuf_adds(&s->base.err, "the database holds no strobe store yet (run 'strobe run' "
                                  "first, or pass --store)");
        return -STROBE_ENOTFOUND;
    }
    if ((rc = pg_begin(&s->base)) < 0)
        return rc;
    if ((rc = migrate_locked(s)) == 0 && (rc = pg_commit(&s->base)) == 0) {
        s->version = SCHEMA_VERSION;
        return 0;
    }
    pg_rollback(&s->base);
    if (readonly && (version == 6 || version == 7) && write_refused(s)) { /* runs as now */
        strbuf_reset(&s->base.err);
        return 0;
    }
    return rc;
}

int store_postgres_open(const char *uri, int readonly, struct store **out, struct strbuf *err)
{
    int loaded = pq_load(err);
    if (loaded < 0)
        return loaded;
    struct pg_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base.ops = &pg_ops;
    strbuf_init(&s->base.err);
    snprintf(s->dropped, sizeof(s->dropped), "lost the connection to the server");
    struct strbuf shown;
    strbuf_init(&shown);
    int rc = store_uri_redact(uri, &shown);
    s->base.uri = strbuf_detach(&shown);
    if (rc < 0 || !s->base.uri) {
        pg_close(&s->base);
        return -ENOMEM;
    }
    if ((rc = connect_db(s, uri)) < 0 || (rc = migrate(s, readonly)) < 0)
        goto fail;
    *out = &s->base;
    return 0;
fail:
    if (err && strncmp(s->base.err.buf, "cannot connect", 14) == 0)
        strbuf_adds(err, s->base.err.buf);
    else if (err)
        strbuf_addf(err, "cannot open store '%s': %s", s->base.uri, s->base.err.buf);
    pg_close(&s->base);
    return rc;
}
