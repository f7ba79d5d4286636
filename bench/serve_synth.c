/*
 * A store for the strobe serve benchmark (bench/serve_cost.py): one run with
 * a single long series (cpu.util, 10 M points at 1 kHz by default: what a
 * dashboard chart of a long run has to reach the screen from), and many small
 * runs beside it (a sweep: experiment, params, tags, three short series each)
 * for the runs list.
 *
 *   build/bench/serve_synth --store PATH [--points 10000000] [--runs 1000]
 *
 * Blocks are written as the recorder writes them: Gorilla streams of at most
 * SERIES_BLOCK_BYTES bytes or SERIES_BLOCK_POINTS points, with their stats.
 * Values are CPU shares to 0.1 %, so they compress as real readings do.
 * Prints one JSON line: the long run's id, its points and blocks, seconds.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "sample/series.h"
#include "store/store.h"

#define START_NS 1700000000000000000LL

static uint64_t rng = 88172645463325252ULL;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static int insert_run(struct store *s, int i, int64_t start_ns, int64_t end_ns, char *id_out)
{
    struct run_record r;
    run_record_init(&r);
    snprintf(r.id, sizeof(r.id), "%016x", 0x5e000000u + (unsigned)i);
    char name[64];
    snprintf(name, sizeof(name), i ? "sweep-%04d" : "long-run", i);
    r.name = strdup(name);
    r.experiment = strdup(i ? (i % 2 ? "sweep-a" : "sweep-b") : "long");
    r.command_json = strdup("[\"python3\",\"train.py\"]");
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.last_ns = end_ns;
    r.exit_code = 0;
    r.interval_ns = 100000000;
    snprintf(r.status, sizeof(r.status), RUN_FINISHED);
    char v[32];
    snprintf(v, sizeof(v), "%d", 16 << (i % 5));
    kv_list_add(&r.params, "batch_size", v);
    snprintf(v, sizeof(v), "%g", 0.001 * (1 + i % 3));
    kv_list_add(&r.params, "lr", v);
    kv_list_add(&r.tags, "team", i % 3 ? "vision" : "nlp");
    int rc = s->ops->run_insert(s, &r);
    snprintf(id_out, RUN_ID_LEN + 1, "%s", r.id);
    run_record_release(&r);
    return rc;
}

/* n points from start every step_ns, sealed into blocks; returns blocks. */
static long write_series(struct store *s, const char *run_id, const char *name, const char *labels,
                         int64_t start_ns, int64_t step_ns, long n)
{
    int64_t sid;
    if (s->ops->series_insert(s, run_id, name, labels, "pct", NULL, &sid) < 0)
        return -1;
    static uint8_t buf[SERIES_BLOCK_BYTES];
    struct block_enc e;
    block_enc_init(&e, buf, sizeof(buf));
    double level = 50;
    long blocks = 0;
    for (long k = 0; k < n; k++) {
        level += (uniform() - 0.5) * 4;
        level = fmin(100, fmax(0, level));
        double value = round(level * 10) / 10;
        int64_t t = start_ns + k * step_ns;
        int rc = block_enc_append(&e, t, value);
        if (rc == -ENOSPC) {
            s->ops->block_upsert(s, sid, &e.st, buf, block_enc_size(&e));
            blocks++;
            block_enc_init(&e, buf, sizeof(buf));
            rc = block_enc_append(&e, t, value);
        }
        if (rc < 0)
            return -1;
        if (e.st.count == SERIES_BLOCK_POINTS) {
            s->ops->block_upsert(s, sid, &e.st, buf, block_enc_size(&e));
            blocks++;
            block_enc_init(&e, buf, sizeof(buf));
        }
    }
    if (e.st.count) {
        s->ops->block_upsert(s, sid, &e.st, buf, block_enc_size(&e));
        blocks++;
    }
    return blocks;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                         {"points", required_argument, NULL, 'p'},
                                         {"runs", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *path = NULL;
    long points = 10000000, runs = 1000;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 's')
            path = optarg;
        else if (ch == 'p')
            points = atol(optarg);
        else if (ch == 'r')
            runs = atol(optarg);
        else {
            fprintf(ch == 'h' ? stdout : stderr,
                    "usage: serve_synth --store PATH [--points 10000000] [--runs 1000]\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (!path || points < 1 || runs < 1) {
        fprintf(stderr, "usage: serve_synth --store PATH [--points 10000000] [--runs 1000]\n");
        return 2;
    }
    int64_t t0 = clock_monotonic_ns();
    struct store *s;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(path, 0, &s, &err) < 0) {
        fprintf(stderr, "serve_synth: %s\n", err.buf);
        return 1;
    }
    char id[RUN_ID_LEN + 1], long_id[RUN_ID_LEN + 1];
    int64_t step = 1000000; /* 1 kHz */
    s->ops->begin(s);
    insert_run(s, 0, START_NS, START_NS + points * step, long_id);
    long blocks = write_series(s, long_id, "cpu.util", "", START_NS, step, points);
    for (long i = 1; i < runs && blocks >= 0; i++) {
        int64_t start = START_NS - i * 3600000000000LL;
        insert_run(s, (int)i, start, start + 600 * 100000000LL, id);
        write_series(s, id, "cpu.util", "", start, 100000000, 600);
        write_series(s, id, "gpu.util", "gpu=0", start, 100000000, 600);
        write_series(s, id, "app.samples_per_s", "", start, 100000000, 600);
    }
    int rc = s->ops->commit(s);
    store_close(s);
    strbuf_release(&err);
    if (blocks < 0 || rc < 0) {
        fprintf(stderr, "serve_synth: cannot write the store\n");
        return 1;
    }
    printf("{\"run\":\"%s\",\"points\":%ld,\"blocks\":%ld,\"runs\":%ld,\"seconds\":%.3f}\n",
           long_id, points, blocks, runs, (double)(clock_monotonic_ns() - t0) / 1e9);
    return 0;
}
