/*
 * Cluster ingest into one PostgreSQL (issue 25): N simulated node recorders,
 * each 150 series at 100 ms plus 200 framework events a second, written
 * through strobe's own store code; beside them, the same samples as MLflow's
 * rows, the layout radT inherits.
 *
 *   build/bench/pg_ingest --store URI --layout strobe|pipelined|rows --nodes N
 *       --seconds T [--warmup W] [--inflight K] [--vacuum-every S]
 *       [--size-every S] [--realtime] [--server-pid PID] [--open-every S]
 *
 * strobe: a node does what a recorder's writer does. It has its own
 * connection (store_open), its run (run_insert), a series table fed by
 * series_put (the real Gorilla encoder; blocks sealed at 1024 points or 1900
 * bytes), and once a second batch_collect and writer_submit to its own
 * writer thread: one transaction of new series, sealed blocks, event blocks
 * and run_update, and every --open-every seconds (5, as a recorder into
 * PostgreSQL: OPEN_EVERY_PG_NS) snapshots of the open blocks, all blocks
 * upserted by (series, start) in one blocks_put (record/writer.c). Its events are a training loop's
 * spans, 40 steps a second of 5 spans, encoded by the event codec and sealed every 5 s as the
 * recorder's sink does (EVENT_BLOCK_AGE_NS).
 *
 * pipelined: the same batches, but from the second second on each
 * transaction goes out in libpq's pipeline mode, one statement a block, on
 * a connection that takes the store's place: one round trip a commit. Not
 * the store's code, which sends a commit's blocks as one statement of
 * arrays (blocks_put): it measures pipelining against that.
 *
 * rows: MLflow's metrics and latest_metrics tables, with MLflow's primary
 * keys, its index_metrics_run_uuid and its foreign keys to runs (MLflow's
 * mlflow/store/tracking/dbmodels/models.py). A connection per node and a
 * transaction per node and second: the 1500 samples as multi-row INSERTs of
 * at most 1000 rows (MLflow's log_batch limit) with the values in the SQL
 * text, as psycopg2's execute_values and SQLAlchemy's insertmanyvalues send
 * them; then latest_metrics for the 150 keys, which MLflow's SQL store
 * updates in the same transaction (_update_latest_metrics_if_necessary), in
 * one INSERT ... ON CONFLICT DO UPDATE (MLflow takes a SELECT, a SELECT FOR
 * UPDATE and an UPDATE a row: the peer is given the cheaper form). A key is
 * the series name with its labels, "gpu.util{gpu=3}"; a timestamp is in ms,
 * step 0. MLflow has no place for the events: this layout gets none.
 *
 * Time is simulated: every node writes T seconds of data as fast as the
 * machine allows, one commit a second, in (second, node) order with at most
 * K commits at the server at once (2: a 256-node cluster at real time has a
 * few in flight, where all 256 at once would only measure the scheduler of
 * a 2-core machine). The first W seconds (runs and series defined) are not
 * metered. Autovacuum's pace is kept in simulated time: every S seconds the
 * layout's tables are vacuumed, inside the metered time (at real time
 * autovacuum comes round about once a minute). With --realtime node i
 * commits second s at s + i/N on the wall clock, each commit waited for,
 * and the lag from that moment to the commit's end is kept.
 *
 * Measured: the server's CPU, utime + stime of the postmaster and its
 * children from /proc plus the postmaster's cutime + cstime (children that
 * ended), --server-pid given; the WAL it wrote (pg_current_wal_insert_lsn);
 * this process's CPU (the client: value generation, encoding, libpq); the
 * layout's tables after VACUUM, pg_total_relation_size (indexes, TOAST and
 * the free space maps included), at the end and every --size-every simulated
 * seconds (the pauses are not metered). One JSON line on stdout.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_run.h"
#include "codec/events.h"
#include "common/array.h"
#include "common/clock.h"
#include "record/event_block.h"
#include "record/writer.h"
#include "sample/series.h"
#include "store/store.h"

#define FRAMES_PER_S    10 /* 100 ms */
#define FRAME_NS        (INT64_C(1000000000) / FRAMES_PER_S)
#define STEPS_PER_S     40                           /* a 25 ms training step */
#define SPANS_PER_STEP  5                            /* data, forward, backward, optimizer, step */
#define ROWS_PER_INSERT 1000                         /* MLflow's log_batch: 1000 metrics at most */
#define T0_NS           INT64_C(1767225600000000000) /* 2026-01-01 UTC */

/* ---- a node's series: an 8-GPU training host ------------------------------ */

enum gen_kind {
    GEN_CONST,   /* a total, a limit, a clock */
    GEN_PAGES,   /* bytes in 4 KiB pages, drifting now and then */
    GEN_MIB,     /* bytes in MiB (GPU memory), drifting now and then */
    GEN_INT,     /* a small integer that moves by one now and then (°C, threads) */
    GEN_SHARE,   /* a share of time in 1/64 % steps, noisy (collector.h pct_step) */
    GEN_TICKS,   /* a share from 100 Hz ticks over 100 ms: multiples of 10 % */
    GEN_PCT_INT, /* NVML's integer percent, noisy */
    GEN_MILLI,   /* NVML's milliwatts as watts: three noisy decimals */
    GEN_ENERGY,  /* NVML's energy counter in mJ as joules: rising */
    GEN_RATE,    /* a counter's delta over 100 ms as a rate: whole multiples of 10 */
    GEN_BURSTY,  /* the same, mostly 0 with bursts (disk, swap) */
};

struct series_def {
    enum metric_id metric;
    const char *label; /* label key, NULL for none */
    int count;         /* series with label=0..count-1; 1 without a label */
    enum gen_kind gen;
    double level; /* starting level (bytes, %, W, /s) */
};

/* 150 series: 36 constant, 26 slowly varying, 58 noisy gauges (the energy
 * counter among them), 30 rates */
static const struct series_def node_series[] = {
    {METRIC_CPU_UTIL, NULL, 1, GEN_SHARE, 60},
    {METRIC_CPU_UTIL, "core", 16, GEN_TICKS, 60},
    {METRIC_CPU_USER, NULL, 1, GEN_SHARE, 50},
    {METRIC_CPU_SYSTEM, NULL, 1, GEN_SHARE, 8},
    {METRIC_CPU_IOWAIT, NULL, 1, GEN_SHARE, 1},
    {METRIC_CPU_STEAL, NULL, 1, GEN_CONST, 0},
    {METRIC_MEM_TOTAL_BYTES, NULL, 1, GEN_CONST, 1099511627776.0},
    {METRIC_MEM_USED_BYTES, NULL, 1, GEN_PAGES, 412316860416.0},
    {METRIC_MEM_AVAILABLE_BYTES, NULL, 1, GEN_PAGES, 687194767360.0},
    {METRIC_MEM_SWAP_USED_BYTES, NULL, 1, GEN_CONST, 0},
    {METRIC_PSI_CPU_SOME, NULL, 1, GEN_SHARE, 3},
    {METRIC_PSI_MEM_SOME, NULL, 1, GEN_CONST, 0},
    {METRIC_PSI_IO_SOME, NULL, 1, GEN_SHARE, 1},
    {METRIC_DISK_READ_BYTES_PER_S, "dev", 1, GEN_BURSTY, 50e6},
    {METRIC_DISK_WRITE_BYTES_PER_S, "dev", 1, GEN_BURSTY, 20e6},
    {METRIC_NET_RX_BYTES_PER_S, "iface", 2, GEN_RATE, 2e9},
    {METRIC_NET_TX_BYTES_PER_S, "iface", 2, GEN_RATE, 2e9},
    {METRIC_PROC_CPU, "pid", 4, GEN_TICKS, 90},
    {METRIC_PROC_RSS_BYTES, "pid", 4, GEN_PAGES, 34359738368.0},
    {METRIC_PROC_THREADS, "pid", 4, GEN_INT, 40},
    {METRIC_PROC_READ_BYTES_PER_S, "pid", 4, GEN_BURSTY, 10e6},
    {METRIC_PROC_CTX_SWITCHES_PER_S, "pid", 4, GEN_RATE, 5000},
    {METRIC_GPU_UTIL, "gpu", 8, GEN_PCT_INT, 90},
    {METRIC_GPU_MEM_UTIL, "gpu", 8, GEN_PCT_INT, 40},
    {METRIC_GPU_MEM_USED_BYTES, "gpu", 8, GEN_MIB, 68719476736.0},
    {METRIC_GPU_MEM_TOTAL_BYTES, "gpu", 8, GEN_CONST, 85899345920.0},
    {METRIC_GPU_POWER_W, "gpu", 8, GEN_MILLI, 550},
    {METRIC_GPU_ENERGY_J, "gpu", 8, GEN_ENERGY, 1e6},
    {METRIC_GPU_TEMP_C, "gpu", 8, GEN_INT, 65},
    {METRIC_GPU_SM_CLOCK_MHZ, "gpu", 8, GEN_CONST, 1980},
    {METRIC_GPU_MEM_CLOCK_MHZ, "gpu", 8, GEN_CONST, 2619},
    {METRIC_GPU_THROTTLE_REASONS, "gpu", 8, GEN_CONST, 0},
    {METRIC_GPU_PCIE_RX_BYTES_PER_S, "gpu", 8, GEN_RATE, 5e9},
    {METRIC_GPU_PCIE_TX_BYTES_PER_S, "gpu", 8, GEN_RATE, 5e9},
};

#define NODE_SERIES 150

struct gen {
    enum gen_kind kind;
    double level;
    double base;
};

static double unit_rnd(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* The next reading of g, 100 ms after the last. */
static double gen_next(struct gen *g)
{
    switch (g->kind) {
    case GEN_CONST:
        return g->level;
    case GEN_PAGES:
        if (rnd() % 4 == 0)
            g->level = fmax(0, g->level + 4096.0 * (double)((int64_t)(rnd() % 257) - 128));
        return g->level;
    case GEN_MIB:
        if (rnd() % 20 == 0)
            g->level = fmax(0, g->level + 1048576.0 * (double)((int64_t)(rnd() % 65) - 32));
        return g->level;
    case GEN_INT:
        if (rnd() % 20 == 0)
            g->level = fmax(0, g->level + (rnd() % 2 ? 1 : -1));
        return g->level;
    case GEN_SHARE:
        g->level = clamp(g->level + 2.0 * (unit_rnd() - 0.5), 0, 100);
        return nearbyint(clamp(g->level + 4.0 * (unit_rnd() - 0.5), 0, 100) * 64.0) / 64.0;
    case GEN_TICKS:
        g->level = clamp(g->level + 4.0 * (unit_rnd() - 0.5), 0, 100);
        return 10.0 * nearbyint(clamp(g->level + 20.0 * (unit_rnd() - 0.5), 0, 100) / 10.0);
    case GEN_PCT_INT:
        g->level = clamp(g->level + 2.0 * (unit_rnd() - 0.5), 0, 100);
        return nearbyint(clamp(g->level + 10.0 * (unit_rnd() - 0.5), 0, 100));
    case GEN_MILLI:
        g->level = clamp(g->level + 10.0 * (unit_rnd() - 0.5), 50, 700);
        return nearbyint((g->level + 30.0 * (unit_rnd() - 0.5)) * 1000.0) / 1000.0;
    case GEN_ENERGY: /* 500-600 W for 100 ms, in mJ */
        g->level += (double)(50000 + rnd() % 10000);
        return g->level / 1000.0;
    case GEN_RATE:
        return 10.0 * nearbyint(g->base / 10.0 * (0.5 + unit_rnd()));
    case GEN_BURSTY:
        return rnd() % 8 ? 0.0 : 10.0 * nearbyint(g->base / 10.0 * (0.5 + unit_rnd()));
    }
    return 0;
}

/* The names, labels and generators of a node's series, in table order.
 * labels[i] is canonical "key=value" or "". */
struct node_catalog {
    enum metric_id metric[NODE_SERIES];
    char labels[NODE_SERIES][32];
    char key[NODE_SERIES][64]; /* MLflow's key: name{labels} */
    struct gen gen0[NODE_SERIES];
};

static const char *label_value(const char *key, int i, char *buf, size_t cap)
{
    if (strcmp(key, "dev") == 0)
        snprintf(buf, cap, "nvme%dn1", i);
    else if (strcmp(key, "iface") == 0)
        snprintf(buf, cap, i ? "ib%d" : "eth%d", i ? i - 1 : 0);
    else if (strcmp(key, "pid") == 0)
        snprintf(buf, cap, "%d", 41000 + 17 * i);
    else
        snprintf(buf, cap, "%d", i);
    return buf;
}

static void catalog_init(struct node_catalog *c)
{
    int n = 0;
    for (size_t d = 0; d < ARRAY_SIZE(node_series); d++) {
        const struct series_def *sd = &node_series[d];
        for (int i = 0; i < sd->count && n < NODE_SERIES; i++, n++) {
            char v[24], labels[sizeof(c->labels[n])] = "";
            c->metric[n] = sd->metric;
            /* built apart, then copied: GCC's -Wrestrict (under the
             * sanitizers' -O1) takes two rows of *c for one object */
            if (sd->label)
                snprintf(labels, sizeof(labels), "%s=%s", sd->label,
                         label_value(sd->label, i, v, sizeof(v)));
            memcpy(c->labels[n], labels, sizeof(labels));
            if (sd->label)
                snprintf(c->key[n], sizeof(c->key[n]), "%s{%s}", metric_name(sd->metric), labels);
            else
                snprintf(c->key[n], sizeof(c->key[n]), "%s", metric_name(sd->metric));
            c->gen0[n] = (struct gen){sd->gen, sd->level, sd->level};
        }
    }
    if (n != NODE_SERIES) {
        fprintf(stderr, "pg_ingest: the catalog has %d series, not %d\n", n, NODE_SERIES);
        exit(1);
    }
}

/* ---- events: a training loop's spans ------------------------------------- */

static const char *const span_names[SPANS_PER_STEP] = {"data", "forward", "backward", "optimizer",
                                                       "step"};

/* The events' own random source (xorshift64), so that the samples' values
 * come out the same with events (strobe) and without (the rows). */
static uint64_t event_rng = 0x9e3779b97f4a7c15u;

static uint64_t event_rnd(void)
{
    event_rng ^= event_rng << 13;
    event_rng ^= event_rng >> 7;
    event_rng ^= event_rng << 17;
    return event_rng;
}

/* One second's spans of a loop at STEPS_PER_S, as the sink emits them (a
 * span when it ends: the phases, then their step). ev holds
 * STEPS_PER_S * SPANS_PER_STEP. */
static void loop_second(struct event *ev, int64_t second_ns, uint32_t *step)
{
    int64_t t = second_ns;
    int64_t step_ns = INT64_C(1000000000) / STEPS_PER_S;
    for (int s = 0; s < STEPS_PER_S; s++, (*step)++) {
        int64_t share[4] = {10, 30, 48, 8}; /* % of the step, jittered below; the rest other */
        int64_t at = t;
        struct event *e = ev + s * SPANS_PER_STEP;
        for (int p = 0; p < 4; p++) {
            int64_t len = step_ns * share[p] / 100 + (int64_t)(event_rnd() % 400000) - 200000;
            e[p] = (struct event){at, len, (uint32_t)p + 1, *step, STROBE_EV_COMPLETE};
            at += len;
        }
        e[4] = (struct event){t, step_ns, 5, *step, STROBE_EV_COMPLETE};
        t += step_ns;
    }
}

/* ---- server CPU from /proc ----------------------------------------------- */

/* proc(5) stat fields 4 (ppid), 14-17 (utime, stime, cutime, cstime), in ticks */
static int read_stat(int pid, long *ppid, unsigned long long t[4])
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime */
    char state;
    if (sscanf(p + 1, " %c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &state,
               ppid, &t[0], &t[1], &t[2], &t[3]) != 6)
        return -1;
    return 0;
}

/* Seconds of CPU the server has used: every live process of it, and the
 * children the postmaster has reaped. 0 without a pid. */
static double server_cpu_s(int postmaster)
{
    if (postmaster <= 0)
        return 0;
    unsigned long long ticks = 0, t[4];
    long ppid;
    if (read_stat(postmaster, &ppid, t) == 0)
        ticks += t[0] + t[1] + t[2] + t[3];
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        int pid = atoi(de->d_name);
        if (pid != postmaster && read_stat(pid, &ppid, t) == 0 && ppid == postmaster)
            ticks += t[0] + t[1];
    }
    if (d)
        closedir(d);
    return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
    return (double)clock_monotonic_ns() / 1e9;
}

static void sleep_until(double t)
{
    double d = t - mono_s();
    if (d <= 0)
        return;
    struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- strobe's layout ------------------------------------------------------- */

struct snode {
    struct store *store;
    struct run_record run;
    struct series_table t;
    struct writer w;
    struct batch b;
    uint32_t idx[NODE_SERIES];
    struct gen gen[NODE_SERIES];
    /* events: the stream of one thread, and its sealed blocks not yet stored */
    struct event_encoder enc;
    struct event *ev; /* EVENT_BLOCK_EVENTS */
    uint32_t nev;
    int64_t block_first_ns; /* simulated time of the open block's first event */
    struct event_sealed *sealed_head, *sealed_tail;
    uint32_t step;
    int names_stored;
    int64_t events;
    const char *pipe_uri;     /* the pipelined variant's database, else NULL */
    PGconn *pipe;             /* its connection, from the second second on */
    int64_t ids[NODE_SERIES]; /* the series' store ids, for the pipeline */
    int piped;                /* this second went through pipe */
};

/* Seconds between a node's snapshots of its open blocks (--open-every). */
static int open_every_s = (int)(OPEN_EVERY_PG_NS / NS_PER_S);

static int snode_open(struct snode *n, const char *uri, int node, const struct node_catalog *c)
{
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(uri, 0, &n->store, &err);
    if (rc < 0) {
        fprintf(stderr, "pg_ingest: %s\n", err.buf);
        strbuf_release(&err);
        return -1;
    }
    strbuf_release(&err);
    run_record_init(&n->run);
    snprintf(n->run.id, sizeof(n->run.id), "%08x%08x", (unsigned)getpid(), (unsigned)node);
    char name[32];
    snprintf(name, sizeof(name), "ingest-node%03d", node);
    n->run.name = strdup(name);
    n->run.experiment = strdup("pg-ingest");
    n->run.command_json = strdup("[\"python3\",\"train.py\"]");
    snprintf(name, sizeof(name), "node%03d", node);
    n->run.host = strdup(name);
    n->run.start_ns = T0_NS;
    n->run.interval_ns = FRAME_NS;
    snprintf(n->run.status, sizeof(n->run.status), RUN_RUNNING);
    kv_list_add(&n->run.params, "batch_size", "64");
    kv_list_add(&n->run.tags, "cluster", "bench");
    struct store *s = n->store;
    if (s->ops->begin(s) < 0 || s->ops->run_insert(s, &n->run) < 0 || s->ops->commit(s) < 0) {
        fprintf(stderr, "pg_ingest: cannot insert run: %s\n", s->err.buf);
        return -1;
    }
    series_table_init(&n->t);
    n->t.snap_every = (uint32_t)open_every_s;
    batch_init(&n->b);
    for (int i = 0; i < NODE_SERIES; i++) {
        if (series_get_metric(&n->t, c->metric[i], c->labels[i], &n->idx[i]) < 0)
            return -1;
        n->gen[i] = c->gen0[i];
    }
    n->ev = malloc(EVENT_BLOCK_EVENTS * sizeof(*n->ev));
    if (!n->ev || event_encoder_init(&n->enc) < 0 || writer_start(&n->w, s) < 0)
        return -1;
    return 0;
}

static void snode_close(struct snode *n)
{
    writer_stop(&n->w);
    PQfinish(n->pipe);
    batch_release(&n->b);
    series_table_release(&n->t);
    event_encoder_release(&n->enc);
    free(n->ev);
    while (n->sealed_head) {
        struct event_sealed *next = n->sealed_head->next;
        free(n->sealed_head);
        n->sealed_head = next;
    }
    store_close(n->store);
    run_record_release(&n->run);
}

static int seal_events(struct snode *n)
{
    size_t cap = event_block_bound(n->nev);
    struct event_sealed *s = malloc(sizeof(*s) + cap);
    if (!s)
        return -1;
    if (event_block_build(&n->enc, n->ev, n->nev, 41000, 41000, s->data, cap, &s->rec) < 0) {
        free(s);
        return -1;
    }
    s->rec.data = s->data;
    s->next = NULL;
    if (n->sealed_tail)
        n->sealed_tail->next = s;
    else
        n->sealed_head = s;
    n->sealed_tail = s;
    n->nev = 0;
    return 0;
}

/* ---- the pipelined variant ------------------------------------------------ */

/* The same statements as store/postgres.c's single-block upsert, event block
 * insert and run update, sent in libpq's pipeline mode: a second's
 * transaction is one round trip. Only to measure it against the store's
 * arrays; the first second (series definitions) goes through the store. */
static const char pipe_block_sql[] =
    "INSERT INTO blocks(series_id, start_ns, end_ns, count, min, max, sum, first, last, data)"
    " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT(series_id, start_ns) DO UPDATE SET"
    " end_ns=excluded.end_ns, count=excluded.count, min=excluded.min, max=excluded.max,"
    " sum=excluded.sum, first=excluded.first, last=excluded.last, data=excluded.data";
static const char pipe_event_sql[] =
    "INSERT INTO event_blocks(run_id, pid, tid, start_ns, end_ns, step_min, step_max, count,"
    " data) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9)";
static const char pipe_run_sql[] =
    "UPDATE runs SET last_ns=$2, samples=$3, points=$4, events=$5 WHERE id=$1";

/* Parameters in binary, big-endian; NaN never occurs in these values. */
struct pipe_params {
    int n;
    const char *values[10];
    int lengths[10], formats[10];
    unsigned char bin[10][8];
};

static void pipe_int(struct pipe_params *p, uint64_t v)
{
    int i = p->n++;
    for (int k = 7; k >= 0; k--, v >>= 8)
        p->bin[i][k] = (unsigned char)v;
    p->values[i] = (const char *)p->bin[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

static void pipe_real(struct pipe_params *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    pipe_int(p, bits);
}

static void pipe_raw(struct pipe_params *p, const void *data, size_t len, int format)
{
    int i = p->n++;
    p->values[i] = data;
    p->lengths[i] = (int)len;
    p->formats[i] = format;
}

static int pipe_open(struct snode *n, const char *uri)
{
    if (!(n->pipe = PQconnectdb(uri)) || PQstatus(n->pipe) != CONNECTION_OK) {
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(n->pipe));
        return -1;
    }
    static const Oid block_types[] = {20, 20, 20, 20, 701, 701, 701, 701, 701, 17};
    static const Oid event_types[] = {25, 20, 20, 20, 20, 20, 20, 20, 17};
    static const Oid run_types[] = {25, 20, 20, 20, 20};
    PGresult *r[3] = {PQprepare(n->pipe, "blk", pipe_block_sql, 10, block_types),
                      PQprepare(n->pipe, "evb", pipe_event_sql, 9, event_types),
                      PQprepare(n->pipe, "run", pipe_run_sql, 5, run_types)};
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        ok = ok && PQresultStatus(r[i]) == PGRES_COMMAND_OK;
        PQclear(r[i]);
    }
    if (!ok || !PQenterPipelineMode(n->pipe)) {
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(n->pipe));
        return -1;
    }
    return 0;
}

/* Send the batch the writer would commit, as one pipelined transaction. */
static int pipe_send(struct snode *n)
{
    struct batch *b = &n->b;
    PGconn *c = n->pipe;
    int ok = PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 1);
    for (uint32_t i = 0; ok && i < b->nblocks; i++) {
        const struct batch_block *blk = &b->blocks[i];
        struct pipe_params p = {0};
        pipe_int(&p, (uint64_t)n->ids[blk->series]);
        pipe_int(&p, (uint64_t)blk->st.start_ns);
        pipe_int(&p, (uint64_t)blk->st.end_ns);
        pipe_int(&p, blk->st.count);
        pipe_real(&p, blk->st.min);
        pipe_real(&p, blk->st.max);
        pipe_real(&p, blk->st.sum);
        pipe_real(&p, blk->st.first);
        pipe_real(&p, blk->st.last);
        pipe_raw(&p, blk->sealed ? blk->sealed->data : b->snap + blk->snap_off, blk->len, 1);
        ok = PQsendQueryPrepared(c, "blk", p.n, p.values, p.lengths, p.formats, 1);
    }
    for (const struct event_sealed *e = b->events.first; ok && e;
         e = e == b->events.last ? NULL : e->next) {
        struct pipe_params p = {0};
        pipe_raw(&p, n->run.id, 0, 0);
        pipe_int(&p, (uint64_t)e->rec.pid);
        pipe_int(&p, (uint64_t)e->rec.tid);
        pipe_int(&p, (uint64_t)e->rec.start_ns);
        pipe_int(&p, (uint64_t)e->rec.end_ns);
        pipe_int(&p, (uint64_t)e->rec.step_min);
        pipe_int(&p, (uint64_t)e->rec.step_max);
        pipe_int(&p, (uint64_t)e->rec.count);
        pipe_raw(&p, e->rec.data, e->rec.len, 1);
        ok = PQsendQueryPrepared(c, "evb", p.n, p.values, p.lengths, p.formats, 1);
    }
    struct pipe_params p = {0};
    pipe_raw(&p, n->run.id, 0, 0);
    pipe_int(&p, (uint64_t)b->run.last_ns);
    pipe_int(&p, (uint64_t)b->run.samples);
    pipe_int(&p, (uint64_t)b->run.points);
    pipe_int(&p, (uint64_t)b->run.events);
    ok = ok && PQsendQueryPrepared(c, "run", p.n, p.values, p.lengths, p.formats, 1) &&
         PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 1) && PQpipelineSync(c);
    if (!ok)
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(c));
    return ok ? 0 : -1;
}

/* Read the pipelined transaction's results, up to its sync. */
static int pipe_wait(struct snode *n)
{
    int rc = 0;
    for (;;) {
        PGresult *r = PQgetResult(n->pipe);
        if (!r && PQstatus(n->pipe) != CONNECTION_OK)
            return -1;
        if (!r)
            continue; /* the end of one statement's results */
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_PIPELINE_SYNC) {
            fprintf(stderr, "pg_ingest: %s", PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
        if (st == PGRES_PIPELINE_SYNC)
            return rc;
    }
}

/* Sample second `sec` into the node's table and events, collect its batch
 * and hand it to the node's writer. */
static int snode_second(struct snode *n, int64_t sec)
{
    int64_t t0 = T0_NS + sec * INT64_C(1000000000);
    for (int f = 0; f < FRAMES_PER_S; f++) {
        n->t.now_ns = t0 + f * FRAME_NS;
        for (int i = 0; i < NODE_SERIES; i++)
            series_put(&n->t, n->idx[i], gen_next(&n->gen[i]));
    }
    struct event ev[STEPS_PER_S * SPANS_PER_STEP];
    loop_second(ev, t0, &n->step);
    for (uint32_t i = 0; i < STEPS_PER_S * SPANS_PER_STEP; i++) {
        if (n->nev == 0)
            n->block_first_ns = ev[i].ts_ns;
        n->ev[n->nev++] = ev[i];
        if (n->nev == EVENT_BLOCK_EVENTS && seal_events(n) < 0)
            return -1;
    }
    n->events += STEPS_PER_S * SPANS_PER_STEP;
    if (n->nev && t0 + INT64_C(1000000000) - n->block_first_ns >= EVENT_BLOCK_AGE_NS &&
        seal_events(n) < 0)
        return -1;

    struct batch *b = &n->b;
    if (batch_collect(b, &n->t) < 0)
        return -1;
    struct event_batch *e = &b->events;
    e->names_from = e->names_to = 0;
    e->nprocs = 0;
    if (!n->names_stored) { /* the first batch defines the names and the process */
        e->names = malloc(SPANS_PER_STEP * sizeof(*e->names));
        e->procs = calloc(1, sizeof(*e->procs));
        if (!e->names || !e->procs)
            return -1;
        for (int i = 0; i < SPANS_PER_STEP; i++)
            e->names[i] = (char *)span_names[i];
        e->names_to = SPANS_PER_STEP;
        e->procs[0] = (struct event_proc){.pid = 41000,
                                          .ppid = 40990,
                                          .comm = "python3",
                                          .rank = -1,
                                          .local_rank = -1,
                                          .world_size = -1,
                                          .worker_id = -1,
                                          .role = "main",
                                          .version = 1};
        e->nprocs = 1;
    }
    e->first = n->sealed_head;
    e->last = n->sealed_tail;
    snprintf(b->run.id, sizeof(b->run.id), "%s", n->run.id);
    snprintf(b->run.status, sizeof(b->run.status), RUN_RUNNING);
    b->run.exit_code = -1;
    b->run.last_ns = t0 + (FRAMES_PER_S - 1) * FRAME_NS;
    b->run.samples = (sec + 1) * FRAMES_PER_S;
    b->run.points = (int64_t)n->t.points;
    b->run.events = n->events;
    n->piped = n->pipe != NULL;
    if (n->piped)
        return pipe_send(n);
    return writer_submit(&n->w, b) ? 0 : -1;
}

/* After the writer is done: release what it stored. */
static int snode_settle(struct snode *n)
{
    struct batch *b = &n->b;
    if (n->piped)
        b->result = pipe_wait(n);
    else
        writer_wait(&n->w);
    if (b->result < 0) {
        if (!n->piped) /* pipe_wait said why */
            fprintf(stderr, "pg_ingest: commit failed: %s\n", n->store->err.buf);
        return -1;
    }
    batch_settle(b, &n->t);
    if (!n->names_stored) {
        free(b->events.names);
        free(b->events.procs);
        b->events.names = NULL;
        b->events.procs = NULL;
        n->names_stored = 1;
        /* the pipelined variant: the series are defined, the store's
         * connection makes way for the pipeline's (one a node, as a
         * recorder has) */
        if (n->pipe_uri) {
            memcpy(n->ids, n->w.primary.ids, sizeof(n->ids));
            writer_stop(&n->w);
            store_close(n->store);
            n->store = NULL;
            if (pipe_open(n, n->pipe_uri) < 0)
                return -1;
        }
    }
    while (n->sealed_head) {
        struct event_sealed *next = n->sealed_head->next;
        free(n->sealed_head);
        n->sealed_head = next;
    }
    n->sealed_tail = NULL;
    b->events.first = b->events.last = NULL;
    return 0;
}

/* ---- MLflow's rows ------------------------------------------------------- */

/* MLflow's tables as its models.py defines them (the runs table cut to its
 * key: the rows reference it) */
static const char rows_schema[] =
    "CREATE TABLE IF NOT EXISTS runs(run_uuid VARCHAR(32) NOT NULL PRIMARY KEY,"
    " name VARCHAR(250), status VARCHAR(9), start_time BIGINT, end_time BIGINT,"
    " lifecycle_stage VARCHAR(20), experiment_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS metrics(key VARCHAR(250) NOT NULL, value FLOAT NOT NULL,"
    " timestamp BIGINT NOT NULL, run_uuid VARCHAR(32) NOT NULL REFERENCES runs(run_uuid),"
    " step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL,"
    " CONSTRAINT metric_pk PRIMARY KEY(key, timestamp, step, run_uuid, value, is_nan));"
    "CREATE INDEX IF NOT EXISTS index_metrics_run_uuid ON metrics(run_uuid);"
    "CREATE TABLE IF NOT EXISTS latest_metrics(key VARCHAR(250) NOT NULL,"
    " value FLOAT NOT NULL, timestamp BIGINT, step BIGINT NOT NULL, is_nan BOOLEAN NOT NULL,"
    " run_uuid VARCHAR(32) NOT NULL REFERENCES runs(run_uuid),"
    " CONSTRAINT latest_metric_pk PRIMARY KEY(key, run_uuid));"
    "CREATE INDEX IF NOT EXISTS index_latest_metrics_run_uuid ON latest_metrics(run_uuid);";

struct rnode {
    PGconn *conn;
    char uuid[33];
    struct gen gen[NODE_SERIES];
    struct strbuf sql;
};

static PGconn *pg_connect(const char *uri)
{
    PGconn *c = PQconnectdb(uri);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int pg_run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

static int rnode_open(struct rnode *n, const char *uri, int node, const struct node_catalog *c)
{
    if (!(n->conn = pg_connect(uri)))
        return -1;
    snprintf(n->uuid, sizeof(n->uuid), "%08x%08x5eed5eed%08x", (unsigned)getpid(), (unsigned)node,
             (unsigned)node);
    strbuf_init(&n->sql);
    for (int i = 0; i < NODE_SERIES; i++)
        n->gen[i] = c->gen0[i];
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO runs VALUES('%s','ingest-node%03d','RUNNING',%lld,NULL,'active',0)",
             n->uuid, node, (long long)(T0_NS / 1000000));
    return pg_run(n->conn, sql);
}

/* A float as psycopg2 sends it (Python's repr): the fewest digits, here of
 * 15 to 17, that read back the same. */
static void add_double(struct strbuf *sb, double v)
{
    char buf[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    strbuf_adds(sb, buf);
}

/* Build the node's transaction for second `sec` and send it. */
static int rnode_second(struct rnode *n, const struct node_catalog *c, int64_t sec)
{
    struct strbuf *q = &n->sql;
    strbuf_reset(q);
    strbuf_adds(q, "BEGIN;");
    int64_t ms0 = (T0_NS + sec * INT64_C(1000000000)) / 1000000;
    double last[NODE_SERIES];
    int rows = 0;
    for (int f = 0; f < FRAMES_PER_S; f++)
        for (int i = 0; i < NODE_SERIES; i++, rows++) {
            if (rows % ROWS_PER_INSERT) {
                strbuf_adds(q, ",(");
            } else { /* a new statement every ROWS_PER_INSERT rows */
                strbuf_adds(q, rows ? ";" : "");
                strbuf_adds(q, "INSERT INTO metrics(key, value, timestamp, run_uuid, step, is_nan)"
                               " VALUES(");
            }
            last[i] = gen_next(&n->gen[i]);
            strbuf_addf(q, "'%s',", c->key[i]);
            add_double(q, last[i]);
            strbuf_addf(q, ",%lld,'%s',0,false)", (long long)(ms0 + f * FRAME_NS / 1000000),
                        n->uuid);
        }
    strbuf_adds(q, ";INSERT INTO latest_metrics(key, value, timestamp, step, is_nan, run_uuid)"
                   " VALUES");
    for (int i = 0; i < NODE_SERIES; i++) {
        strbuf_addf(q, "%s('%s',", i ? "," : "", c->key[i]);
        add_double(q, last[i]);
        strbuf_addf(q, ",%lld,0,false,'%s')",
                    (long long)(ms0 + (FRAMES_PER_S - 1) * FRAME_NS / 1000000), n->uuid);
    }
    strbuf_adds(q, " ON CONFLICT(key, run_uuid) DO UPDATE SET value=excluded.value,"
                   " timestamp=excluded.timestamp, step=excluded.step, is_nan=excluded.is_nan"
                   " WHERE (excluded.step, excluded.timestamp, excluded.value) >"
                   " (latest_metrics.step, latest_metrics.timestamp, latest_metrics.value);"
                   "COMMIT");
    if (strbuf_failed(q) || !PQsendQuery(n->conn, q->buf)) {
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(n->conn));
        return -1;
    }
    return 0;
}

static int rnode_settle(struct rnode *n)
{
    int rc = 0;
    PGresult *r;
    while ((r = PQgetResult(n->conn))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "pg_ingest: %s", PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    return rc;
}

static void rnode_close(struct rnode *n)
{
    PQfinish(n->conn);
    strbuf_release(&n->sql);
}

/* ---- the server's meters -------------------------------------------------- */

/* the samples' tables first, then the events' (SAMPLE_TABLES of each) */
static const char *const strobe_tables[] = {"runs",        "run_attrs", "series",      "blocks",
                                            "event_names", "processes", "event_blocks"};
static const char *const rows_tables[] = {"runs", "metrics", "latest_metrics"};
#define MAX_TABLES           7
#define STROBE_SAMPLE_TABLES 4
#define ROWS_SAMPLE_TABLES   3

/* One integer from a query, or -1. */
static long long query_ll(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = atoll(PQgetvalue(r, 0, 0));
    else
        fprintf(stderr, "pg_ingest: %s", PQerrorMessage(c));
    PQclear(r);
    return v;
}

static int vacuum_tables(PGconn *c, const char *const *tables, int n)
{
    for (int i = 0; i < n; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "VACUUM %s", tables[i]);
        if (pg_run(c, sql) < 0)
            return -1;
    }
    return 0;
}

/* VACUUM the tables, then their sizes (indexes, TOAST, free space and
 * visibility maps) into bytes[]; the sum, or -1. */
static long long table_sizes(PGconn *c, const char *const *tables, int n, long long *bytes)
{
    long long total = 0;
    if (vacuum_tables(c, tables, n) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "SELECT pg_total_relation_size('%s')", tables[i]);
        if ((bytes[i] = query_ll(c, sql)) < 0)
            return -1;
        total += bytes[i];
    }
    return total;
}

/* What the meters read at one moment. */
struct reading {
    double wall_s, client_cpu_s, server_cpu_s;
    long long wal_bytes; /* the server's WAL insert position */
};

static struct reading read_meters(PGconn *monitor, int server_pid)
{
    return (struct reading){
        mono_s(), process_cpu_s(), server_cpu_s(server_pid),
        query_ll(monitor, "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint")};
}

/* *sum += b - a */
static void add_span(struct reading *sum, const struct reading *a, const struct reading *b)
{
    sum->wall_s += b->wall_s - a->wall_s;
    sum->client_cpu_s += b->client_cpu_s - a->client_cpu_s;
    sum->server_cpu_s += b->server_cpu_s - a->server_cpu_s;
    sum->wal_bytes += b->wal_bytes - a->wal_bytes;
}

/* ---- main ---------------------------------------------------------------- */

struct options {
    const char *uri;
    int rows;      /* the layout: 0 strobe, 1 MLflow's rows */
    int pipelined; /* strobe's, the writes pipelined (not the store's code) */
    int nodes;
    int seconds;
    int warmup;     /* seconds written before the meters start */
    int size_every; /* simulated seconds between measures of the tables (0: at the end only) */
    int realtime;
    int server_pid;
    int inflight;     /* commits with the server at once */
    int vacuum_every; /* simulated seconds between VACUUMs of the tables (0: none) */
};

/* The nodes' commits, in (second, node) order, at most o.inflight of them
 * with the server at once: a queue of nodes, oldest first. */
struct ingest {
    struct options o;
    struct node_catalog cat;
    struct snode *sn;
    struct rnode *rn;
    int *queue;
    int qhead, qlen;
    size_t next;       /* the next commit: second next / nodes, node next % nodes */
    double *submitted; /* per node: when its commit in flight was due */
    double wall0;      /* real time: when second 0 began */
    double *lag;       /* from due to done, per commit metered */
    size_t nlag;
    int metering;
    PGconn *monitor; /* meters, sizes and VACUUM */
    int vacuumed_at; /* the second the tables were last measured (and vacuumed) at */
    const char *const *tables;
    int ntables;
};

/* Wait for the oldest commit in flight. */
static int settle_oldest(struct ingest *g)
{
    int i = g->queue[g->qhead];
    g->qhead = (g->qhead + 1) % g->o.inflight;
    g->qlen--;
    int rc = g->o.rows ? rnode_settle(&g->rn[i]) : snode_settle(&g->sn[i]);
    if (g->metering)
        g->lag[g->nlag++] = mono_s() - g->submitted[i];
    return rc;
}

/* Make commits up to (not including) `end`, then wait for every one. */
static int ingest_until(struct ingest *g, size_t end)
{
    const struct options *o = &g->o;
    int rc = 0;
    while (rc == 0 && g->next < end) {
        int sec = (int)(g->next / (size_t)o->nodes), i = (int)(g->next % (size_t)o->nodes);
        /* autovacuum's pace in simulated time: the tables once a minute of
         * it, between two seconds */
        if (i == 0 && sec && o->vacuum_every && sec % o->vacuum_every == 0 &&
            g->vacuumed_at != sec) {
            while (rc == 0 && g->qlen)
                rc = settle_oldest(g);
            if (rc < 0 || vacuum_tables(g->monitor, g->tables, g->ntables) < 0)
                return -1;
        }
        if (g->qlen == o->inflight && (rc = settle_oldest(g)) < 0)
            break;
        /* real time: node i commits second sec at sec + i/N on the wall clock */
        g->submitted[i] = o->realtime ? g->wall0 + sec + (double)i / o->nodes : mono_s();
        sleep_until(g->submitted[i]);
        rc = o->rows ? rnode_second(&g->rn[i], &g->cat, sec) : snode_second(&g->sn[i], sec);
        g->queue[(g->qhead + g->qlen++) % o->inflight] = i;
        g->next++;
    }
    while (rc == 0 && g->qlen)
        rc = settle_oldest(g);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: pg_ingest --store URI --layout strobe|rows|pipelined --nodes N --seconds T"
               " [--warmup W] [--size-every S] [--realtime] [--server-pid PID] [--inflight K]"
               " [--vacuum-every S] [--open-every S]\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                         {"layout", required_argument, NULL, 'l'},
                                         {"nodes", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 't'},
                                         {"warmup", required_argument, NULL, 'w'},
                                         {"size-every", required_argument, NULL, 'z'},
                                         {"realtime", no_argument, NULL, 'r'},
                                         {"server-pid", required_argument, NULL, 'p'},
                                         {"inflight", required_argument, NULL, 'i'},
                                         {"vacuum-every", required_argument, NULL, 'v'},
                                         {"open-every", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *o =
        (struct options){.nodes = 8, .seconds = 10, .warmup = 2, .inflight = 2, .vacuum_every = 60};
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            o->uri = optarg;
            break;
        case 'l':
            if (strcmp(optarg, "strobe") && strcmp(optarg, "rows") && strcmp(optarg, "pipelined"))
                return -1;
            o->rows = strcmp(optarg, "rows") == 0;
            o->pipelined = strcmp(optarg, "pipelined") == 0;
            break;
        case 'n':
            o->nodes = atoi(optarg);
            break;
        case 't':
            o->seconds = atoi(optarg);
            break;
        case 'w':
            o->warmup = atoi(optarg);
            break;
        case 'z':
            o->size_every = atoi(optarg);
            break;
        case 'r':
            o->realtime = 1;
            break;
        case 'p':
            o->server_pid = atoi(optarg);
            break;
        case 'i':
            o->inflight = atoi(optarg);
            break;
        case 'v':
            o->vacuum_every = atoi(optarg);
            break;
        case 'o':
            open_every_s = atoi(optarg);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return -1;
        }
    }
    if (!o->uri || o->nodes < 1 || o->nodes > 4096 || o->inflight < 1 || o->warmup < 0 ||
        o->seconds <= o->warmup || o->size_every < 0 || o->vacuum_every < 0 || open_every_s < 1)
        return -1;
    if (o->realtime) { /* each commit waits for its own, a pause would break the pace, and
                        * autovacuum keeps its own */
        o->inflight = 1;
        o->size_every = 0;
        o->vacuum_every = 0;
    }
    if (o->inflight > o->nodes) /* a node's next second waits for its last */
        o->inflight = o->nodes;
    return 0;
}

static int ingest_open(struct ingest *g)
{
    const struct options *o = &g->o;
    catalog_init(&g->cat);
    size_t n = (size_t)o->nodes;
    if (o->rows ? !(g->rn = calloc(n, sizeof(*g->rn))) : !(g->sn = calloc(n, sizeof(*g->sn))))
        return -1;
    g->queue = calloc((size_t)o->inflight, sizeof(*g->queue));
    g->submitted = calloc(n, sizeof(*g->submitted));
    g->lag = calloc(n * (size_t)o->seconds, sizeof(*g->lag));
    if (!g->queue || !g->submitted || !g->lag)
        return -1;
    if (o->rows) {
        PGconn *c = pg_connect(o->uri);
        int rc = c ? pg_run(c, rows_schema) : -1;
        PQfinish(c);
        if (rc < 0)
            return -1;
    }
    for (int i = 0; i < o->nodes; i++)
        if (o->rows ? rnode_open(&g->rn[i], o->uri, i, &g->cat)
                    : snode_open(&g->sn[i], o->uri, i, &g->cat))
            return -1;
        else if (o->pipelined)
            g->sn[i].pipe_uri = o->uri;
    return 0;
}

static int64_t ingest_close(struct ingest *g)
{
    int64_t events = 0;
    for (int i = 0; i < g->o.nodes; i++) {
        if (g->o.rows) {
            rnode_close(&g->rn[i]);
        } else {
            events += g->sn[i].events;
            snode_close(&g->sn[i]);
        }
    }
    free(g->sn);
    free(g->rn);
    free(g->queue);
    free(g->submitted);
    free(g->lag);
    return events;
}

static void print_tables(const char *key, const char *const *tables, int n, const long long *b)
{
    printf(",\"%s\":{", key);
    for (int i = 0; i < n; i++)
        printf("%s\"%s\":%lld", i ? "," : "", tables[i], b[i]);
    printf("}");
}

int main(int argc, char **argv)
{
    static struct ingest g;
    struct options *o = &g.o;
    if (parse_options(argc, argv, o) < 0) {
        usage(stderr);
        return 2;
    }
    PGconn *monitor = g.monitor = pg_connect(o->uri);
    if (!monitor || ingest_open(&g) < 0)
        return 1;
    const char *const *tables = g.tables = o->rows ? rows_tables : strobe_tables;
    int ntables = g.ntables = o->rows ? 3 : 7;
    int nsample_tables = o->rows ? ROWS_SAMPLE_TABLES : STROBE_SAMPLE_TABLES;
    size_t per_s = (size_t)o->nodes;
    double per_node_s = (double)FRAMES_PER_S * NODE_SERIES;

    /* the warm-up (runs and series defined, first blocks), then the metered
     * seconds, paused every size_every seconds to measure the tables */
    g.wall0 = mono_s();
    struct reading sum = {0}, a, b;
    int rc = ingest_until(&g, (size_t)o->warmup * per_s);
    g.metering = 1;
    a = read_meters(monitor, o->server_pid);
    struct strbuf sizes;
    strbuf_init(&sizes);
    long long bytes[MAX_TABLES] = {0}, total = 0, sample_bytes = 0, data_bytes = 0;
    for (int sec = o->warmup + 1; rc == 0 && sec <= o->seconds; sec++) {
        if (sec < o->seconds && !(o->size_every && sec % o->size_every == 0))
            continue;
        rc = ingest_until(&g, (size_t)sec * per_s);
        b = read_meters(monitor, o->server_pid);
        add_span(&sum, &a, &b);
        if (rc < 0 || (total = table_sizes(monitor, tables, ntables, bytes)) < 0) {
            rc = -1;
            break;
        }
        g.vacuumed_at = sec;
        if (!o->rows)
            data_bytes = query_ll(monitor, "SELECT COALESCE(sum(length(data)), 0) FROM blocks");
        sample_bytes = 0;
        for (int i = 0; i < nsample_tables; i++)
            sample_bytes += bytes[i];
        strbuf_addf(&sizes,
                    "%s{\"second\":%d,\"sample_bytes\":%lld,\"bytes_per_sample\":%.3f,"
                    "\"event_bytes\":%lld}",
                    sizes.len ? "," : "", sec, sample_bytes,
                    (double)sample_bytes / (per_node_s * o->nodes * sec), total - sample_bytes);
        a = read_meters(monitor, o->server_pid);
    }
    PQfinish(monitor);
    if (rc < 0)
        return 1;

    double metered = (double)o->nodes * (o->seconds - o->warmup) * per_node_s;
    double all = (double)o->nodes * o->seconds * per_node_s;
    qsort(g.lag, g.nlag, sizeof(double), bench_cmp_double);
    printf("{\"layout\":\"%s\",\"nodes\":%d,\"seconds\":%d,\"warmup_s\":%d,\"realtime\":%s,"
           "\"inflight\":%d,\"vacuum_every_s\":%d,\"open_every_s\":%d,\"series_per_node\":%d,"
           "\"samples\":%.0f,"
           "\"metered_samples\":%.0f,\"wall_s\":%.3f,\"samples_per_s\":%.0f,"
           "\"client_cpu_s\":%.3f,\"server_cpu_s\":%.3f,\"server_cpu_us_per_sample\":%.4f,"
           "\"client_cpu_per_node_s_per_s\":%.6f,\"wal_bytes_per_sample\":%.2f,"
           "\"commit_p50_s\":%.4f,\"commit_p99_s\":%.4f,\"commit_max_s\":%.4f,"
           "\"bytes\":%lld,\"sample_bytes\":%lld,\"bytes_per_sample\":%.3f,"
           "\"encoded_bytes_per_sample\":%.3f,\"sizes\":[%s]",
           o->rows        ? "rows"
           : o->pipelined ? "pipelined"
                          : "strobe",
           o->nodes, o->seconds, o->warmup, o->realtime ? "true" : "false", o->inflight,
           o->vacuum_every, o->rows ? 0 : open_every_s, NODE_SERIES, all, metered, sum.wall_s,
           metered / sum.wall_s, sum.client_cpu_s, sum.server_cpu_s,
           sum.server_cpu_s / metered * 1e6,
           sum.client_cpu_s / ((double)o->nodes * (o->seconds - o->warmup)),
           (double)sum.wal_bytes / metered, g.lag[g.nlag / 2], g.lag[g.nlag * 99 / 100],
           g.lag[g.nlag - 1], total, sample_bytes, (double)sample_bytes / all,
           (double)data_bytes / all, sizes.buf);
    strbuf_release(&sizes);
    print_tables("tables", tables, ntables, bytes);
    int64_t events = ingest_close(&g);
    printf(",\"events\":%lld,\"event_bytes\":%lld,\"bytes_per_event\":%.3f}\n", (long long)events,
           total - sample_bytes, events ? (double)(total - sample_bytes) / (double)events : 0.0);
    return 0;
}
