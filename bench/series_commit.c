/*
 * Encode and commit samples: the recorder's cost per stored sample, CPU time
 * of the whole process (the sampling side and the writer thread), beside
 * plain SQLite rows (ts, series, value) written the obvious way. The
 * architecture's budget: >= 20 M samples/s on one core.
 *
 * strobe's side is the recorder's own code path: series_put for each series
 * of a frame (Gorilla encode into the open block, sealing full ones), and
 * every `frames_per_batch` frames batch_collect, writer_submit to the writer
 * thread, writer_wait and batch_settle (block upserts in one transaction). The
 * peer inserts the same values as rows with one prepared statement, a
 * transaction per batch, in a database with the store's settings (WAL,
 * synchronous=NORMAL).
 *
 * The values are made before the timed part, a mix like a host's metrics:
 * shares of time to 1/64 % (random walks), byte counts in pages drifting
 * slowly, rates that are mostly 0 with bursts, constants, and small counts.
 *
 *   build/bench/series_commit [rounds] [series] [frames] [frames_per_commit]
 *
 * Prints JSON: samples per CPU second for both (median of rounds) and the
 * ratio, and the stored bytes per sample of each.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_run.h"
#include "record/writer.h"
#include "sample/series.h"
#include "store/store.h"

/* frames a commit: the recorder commits once a second, 10 frames at the
 * default 100 ms, 1000 at 1 kHz */
static uint32_t frames_per_batch = 10;
#define FRAME_NS INT64_C(100000000) /* 100 ms apart; only the order matters */
#define T0_NS    INT64_C(1700000000000000000)

static double process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double unit(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* values[frame * nseries + series] */
static double *make_values(uint32_t nseries, uint32_t frames)
{
    double *v = malloc((size_t)nseries * frames * sizeof(*v));
    double *state = calloc(nseries, sizeof(*state));
    if (!v || !state) {
        free(v);
        free(state);
        return NULL;
    }
    for (uint32_t s = 0; s < nseries; s++)
        state[s] = s % 5 == 1 ? 4096.0 * (double)(100000 + rnd() % 1000000) : 50.0 * unit();
    for (uint32_t f = 0; f < frames; f++)
        for (uint32_t s = 0; s < nseries; s++) {
            double *x = &state[s], out;
            switch (s % 5) {
            case 0: /* a share of time, to 1/64 % */
                *x = fmin(100.0, fmax(0.0, *x + 8.0 * (unit() - 0.5)));
                out = round(*x * 64.0) / 64.0;
                break;
            case 1: /* bytes in pages, drifting now and then */
                if (rnd() % 4 == 0)
                    *x += 4096.0 * (double)((int64_t)(rnd() % 65) - 32);
                out = *x;
                break;
            case 2: /* a rate: mostly nothing, bursts */
                out = rnd() % 8 == 0 ? (double)(rnd() % 50000000) : 0.0;
                break;
            case 3: /* a constant (a total, a limit) */
                out = 25769803776.0;
                break;
            default: /* a small count */
                if (rnd() % 50 == 0)
                    *x = (double)(rnd() % 64);
                out = round(*x);
                break;
            }
            v[(size_t)f * nseries + s] = out;
        }
    free(state);
    return v;
}

static long long file_bytes(const char *path)
{
    struct stat st;
    long long n = stat(path, &st) == 0 ? (long long)st.st_size : 0;
    char wal[256];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    return n + (stat(wal, &st) == 0 ? (long long)st.st_size : 0);
}

static void remove_db(const char *path)
{
    char p[256];
    unlink(path);
    snprintf(p, sizeof(p), "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof(p), "%s-shm", path);
    unlink(p);
}

/* strobe: samples per CPU second, and the block bytes per sample */
static int strobe_round(const char *db, const double *v, uint32_t nseries, uint32_t frames,
                        double *rate, double *bytes_per_sample)
{
    remove_db(db);
    struct store *store;
    struct run_record run;
    if (bench_open_run(db, "series_commit", &store, &run) < 0)
        return -1;

    struct series_table t;
    struct writer w;
    struct batch b;
    series_table_init(&t);
    batch_init(&b);
    uint32_t *idx = malloc(nseries * sizeof(*idx));
    int rc = idx && writer_start(&w, store) == 0 ? 0 : -1;
    char labels[32];
    for (uint32_t s = 0; rc == 0 && s < nseries; s++) {
        snprintf(labels, sizeof(labels), "k=%u", s);
        rc = series_get(&t, "bench.value", labels, "", &idx[s]);
    }
    double t0 = process_cpu_ns();
    for (uint32_t f = 0; rc == 0 && f < frames; f++) {
        t.now_ns = T0_NS + (int64_t)f * FRAME_NS;
        const double *row = v + (size_t)f * nseries;
        for (uint32_t s = 0; s < nseries; s++)
            series_put(&t, idx[s], row[s]);
        if ((f + 1) % frames_per_batch && f + 1 < frames)
            continue;
        if (f + 1 == frames)
            series_seal_all(&t);
        batch_reset(&b);
        snprintf(b.run.id, sizeof(b.run.id), "%s", run.id);
        if (batch_collect(&b, &t) < 0 || !writer_submit(&w, &b)) {
            rc = -1;
            break;
        }
        writer_wait(&w);
        if (b.result < 0) {
            fprintf(stderr, "series_commit: commit failed: %s\n", store->err.buf);
            rc = -1;
        }
        batch_settle(&b, &t);
    }
    double cpu = process_cpu_ns() - t0;
    if (idx)
        writer_stop(&w);
    long long stored = 0;
    sqlite3 *q;
    if (rc == 0 && sqlite3_open_v2(db, &q, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(q, "SELECT sum(length(data)) FROM blocks", -1, &st, NULL) ==
                SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            stored = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(q);
    *rate = (double)nseries * frames / (cpu / 1e9);
    *bytes_per_sample = (double)stored / ((double)nseries * frames);
    batch_release(&b);
    series_table_release(&t);
    free(idx);
    store_close(store);
    run_record_release(&run);
    remove_db(db);
    return rc;
}

/* plain SQLite rows: samples per CPU second, and the file bytes per sample */
static int rows_round(const char *db, const double *v, uint32_t nseries, uint32_t frames,
                      double *rate, double *bytes_per_sample)
{
    remove_db(db);
    sqlite3 *q;
    sqlite3_stmt *ins = NULL;
    if (sqlite3_open(db, &q) != SQLITE_OK ||
        sqlite3_exec(q,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE samples(ts INTEGER NOT NULL, series INTEGER NOT NULL,"
                     " value REAL)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(q, "INSERT INTO samples VALUES (?, ?, ?)", -1, &ins, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "series_commit: %s\n", sqlite3_errmsg(q));
        sqlite3_close(q);
        return -1;
    }
    int rc = 0;
    double t0 = process_cpu_ns();
    for (uint32_t f = 0; rc == 0 && f < frames; f++) {
        if (f % frames_per_batch == 0)
            sqlite3_exec(q, "BEGIN", NULL, NULL, NULL);
        int64_t ts = T0_NS + (int64_t)f * FRAME_NS;
        const double *row = v + (size_t)f * nseries;
        for (uint32_t s = 0; rc == 0 && s < nseries; s++) {
            sqlite3_bind_int64(ins, 1, ts);
            sqlite3_bind_int64(ins, 2, s + 1);
            sqlite3_bind_double(ins, 3, row[s]);
            rc = sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
            sqlite3_reset(ins);
        }
        if ((f + 1) % frames_per_batch == 0 || f + 1 == frames)
            rc = rc == 0 && sqlite3_exec(q, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    }
    double cpu = process_cpu_ns() - t0;
    sqlite3_finalize(ins);
    sqlite3_close(q);
    *rate = (double)nseries * frames / (cpu / 1e9);
    *bytes_per_sample = (double)file_bytes(db) / ((double)nseries * frames);
    remove_db(db);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int nseries = argc > 2 ? atoi(argv[2]) : 100;
    int frames = argc > 3 ? atoi(argv[3]) : 100000;
    int per_batch = argc > 4 ? atoi(argv[4]) : 10;
    if (per_batch < 1)
        return 2;
    frames_per_batch = (uint32_t)per_batch;
    if (rounds < 1 || rounds > 99 || nseries < 1 || nseries > 100000 || frames < 1 ||
        (double)nseries * frames > 1e9)
        return 2;
    double *v = make_values((uint32_t)nseries, (uint32_t)frames);
    if (!v)
        return 1;
    char db[64];
    snprintf(db, sizeof(db), "/tmp/strobe-bench-series-%d.db", (int)getpid());
    double s_rate[99], r_rate[99], s_bps = 0, r_bps = 0;
    for (int i = 0; i < rounds; i++) { /* alternated, so that both see the same machine */
        if (strobe_round(db, v, (uint32_t)nseries, (uint32_t)frames, &s_rate[i], &s_bps) < 0 ||
            rows_round(db, v, (uint32_t)nseries, (uint32_t)frames, &r_rate[i], &r_bps) < 0)
            return 1;
    }
    qsort(s_rate, (size_t)rounds, sizeof(double), bench_cmp_double);
    qsort(r_rate, (size_t)rounds, sizeof(double), bench_cmp_double);
    double s = s_rate[rounds / 2], r = r_rate[rounds / 2];
    printf("{\"rounds\":%d,\"series\":%d,\"frames\":%d,\"frames_per_commit\":%d,\"samples\":%.0f,"
           "\"strobe_samples_per_cpu_s\":%.0f,\"strobe_min\":%.0f,\"strobe_max\":%.0f,"
           "\"rows_samples_per_cpu_s\":%.0f,\"rows_min\":%.0f,\"rows_max\":%.0f,"
           "\"ratio\":%.2f,\"strobe_block_bytes_per_sample\":%.3f,"
           "\"rows_file_bytes_per_sample\":%.2f}\n",
           rounds, nseries, frames, per_batch, (double)nseries * frames, s, s_rate[0],
           s_rate[rounds - 1], r, r_rate[0], r_rate[rounds - 1], s / r, s_bps, r_bps);
    free(v);
    return 0;
}
