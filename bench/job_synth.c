/*
 * A job of many nodes for the views' benchmark (bench/views_256.py) and
 * test (tests/integration/test_views_256.py): the job's run (a join key, no
 * parent) and one run per node under it, as cluster mode stores them
 * (store/job.h), each node with the host series a recorder writes most:
 * cpu.util and its parts, memory, the process tree, a disk, an interface
 * and gpu.util with gpu.mem_used_bytes per GPU.
 *
 *   build/bench/job_synth --store PATH [--nodes 256] [--seconds 3600]
 *                         [--interval-ms 1000] [--gpus 2]
 *
 * With 2 GPUs a node has 20 series. Node i's cpu.util hovers around
 * 20 + 60 i / nodes percent and its GPUs' around 90 - 60 i / nodes, so each
 * node's row of a heatmap differs from the next; node 1 idles its GPUs for
 * the middle third of the run (a straggler to spot). Values are to 0.1 %, so
 * they compress as real readings do. Blocks are sealed as the recorder seals
 * them (sample/series.h). Prints one JSON line: the job's id, nodes, series,
 * points, seconds taken.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/metrics.h"
#include "sample/series.h"
#include "store/job.h"
#include "store/store.h"

#define START_NS 1700000000000000000LL

/* one fixed sequence: the same store every time */
static unsigned short rng[3] = {0x5eed, 0x1234, 0xabcd};

struct shape {
    double level, spread;      /* a random walk around level, within +-spread */
    double idle_from, idle_to; /* a share of the run at 0 (both 0: none) */
    double scale;              /* the value written: level * scale (bytes) */
};

static int run_row(struct run_record *r, const char *id, const char *node, int64_t end_ns,
                   int64_t interval_ns, long n)
{
    run_record_init(r);
    snprintf(r->id, sizeof(r->id), "%s", id);
    r->name = strdup("synth-job");
    r->command_json = strdup("[\"python3\",\"train.py\"]");
    r->host = node ? strdup(node) : NULL;
    r->node = node ? strdup(node) : NULL;
    r->cpu_count = 96;
    r->mem_total_bytes = 1LL << 40;
    r->start_ns = START_NS;
    r->end_ns = end_ns;
    r->last_ns = end_ns;
    r->exit_code = 0;
    r->interval_ns = interval_ns;
    r->samples = node ? n : 0;
    snprintf(r->status, sizeof(r->status), RUN_FINISHED);
    return r->name && r->command_json && (!node || (r->host && r->node)) ? 0 : -ENOMEM;
}

static void seal(struct store *s, int64_t sid, struct block_enc *e, uint8_t *buf, long *blocks)
{
    s->ops->block_upsert(s, sid, &e->st, buf, block_enc_size(e));
    (*blocks)++;
    block_enc_init(e, buf, SERIES_BLOCK_BYTES);
}

/* n points every step_ns; returns blocks written, or -1. */
static long write_series(struct store *s, const char *run_id, enum metric_id m, const char *labels,
                         const struct shape *sh, int64_t step_ns, long n)
{
    int64_t sid;
    if (s->ops->series_insert(s, run_id, metric_name(m), labels, metric_unit(m), NULL, &sid) < 0)
        return -1;
    static uint8_t buf[SERIES_BLOCK_BYTES];
    struct block_enc e;
    block_enc_init(&e, buf, sizeof(buf));
    double v = sh->level;
    long blocks = 0;
    for (long k = 0; k < n; k++) {
        v += (erand48(rng) - 0.5) * sh->spread / 4;
        v = fmin(sh->level + sh->spread, fmax(sh->level - sh->spread, v));
        double f = (double)k / (double)n;
        double value = f >= sh->idle_from && f < sh->idle_to ? 0 : round(v * 10) / 10 * sh->scale;
        int64_t t = START_NS + k * step_ns;
        int rc = block_enc_append(&e, t, value);
        if (rc == -ENOSPC) {
            seal(s, sid, &e, buf, &blocks);
            rc = block_enc_append(&e, t, value);
        }
        if (rc < 0)
            return -1;
        if (e.st.count == SERIES_BLOCK_POINTS)
            seal(s, sid, &e, buf, &blocks);
    }
    if (e.st.count)
        seal(s, sid, &e, buf, &blocks);
    return blocks;
}

/* One node's series; returns how many, or -1. */
static int write_node(struct store *s, const char *run_id, int i, int nodes, int gpus,
                      int64_t step_ns, long n)
{
    double cpu = 20 + 60.0 * i / nodes, gpu = 90 - 60.0 * i / nodes;
    const struct {
        enum metric_id m;
        struct shape sh;
    } host[] = {
        {METRIC_CPU_UTIL, {cpu, 10, 0, 0, 1}},
        {METRIC_CPU_USER, {cpu * 0.8, 8, 0, 0, 1}},
        {METRIC_CPU_SYSTEM, {cpu * 0.15, 3, 0, 0, 1}},
        {METRIC_CPU_IOWAIT, {1, 1, 0, 0, 1}},
        {METRIC_CPU_STEAL, {0.5, 0.5, 0, 0, 1}},
        {METRIC_MEM_USED_BYTES, {60, 5, 0, 0, 1e9}},
        {METRIC_MEM_AVAILABLE_BYTES, {900, 5, 0, 0, 1e9}},
        {METRIC_PROC_CPU, {cpu * 40, 200, 0, 0, 1}},
        {METRIC_PROC_RSS_BYTES, {30, 2, 0, 0, 1e9}},
        {METRIC_PROC_THREADS, {120, 4, 0, 0, 1}},
        {METRIC_PSI_CPU_SOME, {5, 5, 0, 0, 1}},
        {METRIC_CGROUP_MEM_USED_BYTES, {40, 3, 0, 0, 1e9}},
        {METRIC_STROBE_CPU, {0.3, 0.2, 0, 0, 1}},
    };
    int count = 0;
    for (size_t k = 0; k < sizeof(host) / sizeof(host[0]); k++, count++)
        if (write_series(s, run_id, host[k].m, "", &host[k].sh, step_ns, n) < 0)
            return -1;
    struct shape disk = {200, 100, 0, 0, 1e6}, net = {1000, 300, 0, 0, 1e6};
    if (write_series(s, run_id, METRIC_DISK_READ_BYTES_PER_S, "dev=nvme0n1", &disk, step_ns, n) <
            0 ||
        write_series(s, run_id, METRIC_NET_RX_BYTES_PER_S, "iface=eth0", &net, step_ns, n) < 0 ||
        write_series(s, run_id, METRIC_NET_TX_BYTES_PER_S, "iface=eth0", &net, step_ns, n) < 0)
        return -1;
    count += 3;
    for (int g = 0; g < gpus; g++) {
        char labels[32];
        snprintf(labels, sizeof(labels), "gpu=%d", g);
        struct shape util = {gpu, 8, i == 1 ? 1 / 3.0 : 0, i == 1 ? 2 / 3.0 : 0, 1};
        struct shape mem = {40, 2, 0, 0, 1e9};
        if (write_series(s, run_id, METRIC_GPU_UTIL, labels, &util, step_ns, n) < 0 ||
            write_series(s, run_id, METRIC_GPU_MEM_USED_BYTES, labels, &mem, step_ns, n) < 0)
            return -1;
        count += 2;
    }
    return count;
}

static const char usage[] = "usage: job_synth --store PATH [--nodes 256] [--seconds 3600] "
                            "[--interval-ms 1000] [--gpus 2]\n";

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                         {"nodes", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 't'},
                                         {"interval-ms", required_argument, NULL, 'i'},
                                         {"gpus", required_argument, NULL, 'g'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *path = NULL;
    long nodes = 256, seconds = 3600, interval_ms = 1000, gpus = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 's')
            path = optarg;
        else if (ch == 'n')
            nodes = atol(optarg);
        else if (ch == 't')
            seconds = atol(optarg);
        else if (ch == 'i')
            interval_ms = atol(optarg);
        else if (ch == 'g')
            gpus = atol(optarg);
        else {
            fputs(usage, ch == 'h' ? stdout : stderr);
            return ch == 'h' ? 0 : 2;
        }
    }
    if (!path || nodes < 1 || nodes > 4096 || seconds < 1 || interval_ms < 1 || gpus < 0 ||
        gpus > 64) {
        fputs(usage, stderr);
        return 2;
    }
    int64_t t0 = clock_monotonic_ns();
    struct store *s;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(path, 0, &s, &err) < 0) {
        fprintf(stderr, "job_synth: %s\n", err.buf);
        return 1;
    }
    int64_t step = interval_ms * 1000000LL;
    long n = seconds * 1000 / interval_ms;
    int64_t end = START_NS + (n - 1) * step;
    struct run_record job;
    int rc = run_row(&job, "10b0000000000000", NULL, end, step, n);
    job.join_key = strdup("synth:job");
    rc = rc == 0 && job.join_key ? s->ops->begin(s) : -ENOMEM;
    if (rc == 0)
        rc = s->ops->run_insert(s, &job);
    long series = 0;
    for (long i = 0; rc == 0 && i < nodes; i++) {
        char id[RUN_ID_LEN + 1], name[32];
        snprintf(id, sizeof(id), "%08lx00000000", 0x10b10000ul + (unsigned long)i);
        snprintf(name, sizeof(name), "n%ld", i);
        struct run_record r;
        rc = run_row(&r, id, name, end, step, n);
        r.parent_id = strdup(job.id);
        if (rc == 0 && !r.parent_id)
            rc = -ENOMEM;
        if (rc == 0)
            rc = s->ops->run_insert(s, &r);
        if (rc == 0) /* the counters, as a recorder's updates write them */
            rc = s->ops->run_update(s, &r);
        int k = rc == 0 ? write_node(s, id, (int)i, (int)nodes, (int)gpus, step, n) : -1;
        rc = k < 0 ? -1 : 0;
        series += k;
        run_record_release(&r);
    }
    if (rc == 0)
        rc = store_job_rollup(s, job.id);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0)
        fprintf(stderr, "job_synth: cannot write the store: %s\n", s->err.buf);
    store_close(s);
    strbuf_release(&err);
    if (rc == 0)
        printf("{\"job\":\"%s\",\"nodes\":%ld,\"series\":%ld,\"points\":%ld,\"seconds\":%.3f}\n",
               job.id, nodes, series, series * n, (double)(clock_monotonic_ns() - t0) / 1e9);
    run_record_release(&job);
    return rc < 0 ? 1 : 0;
}
