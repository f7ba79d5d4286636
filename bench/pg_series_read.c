/*
 * A series to the dashboard from PostgreSQL (issue 25), without HTTP: what
 * /api/runs/{id}/series computes, timed two ways on the same store.
 *
 *   resolve:   store_resolve_run of the run's id, which the API does first
 *              for every request (one index lookup since 43d8f67; before,
 *              a read of the whole runs list).
 *   store:     series_find, then downsampler_run through the store
 *              (blocks_range_query: the blocks' summaries in one query, then
 *              the data of the blocks the downsampler decodes, 256 to a
 *              query since 43d8f67; one query a block before). The store's
 *              code, as the API calls it.
 *   one query: the same summaries, then the data of every block to decode
 *              in one query (WHERE id = ANY($1)). Not the store's code: the
 *              floor the batching approaches. Its buckets are checked
 *              against the store's.
 *
 *   build/bench/pg_series_read --store URI --run ID --name NAME [--labels L]
 *                              [--points 1000] [--reps 20]
 *
 * Prints one JSON line: p50 and max of each, in ms, the blocks and the
 * blocks decoded.
 */
#include <getopt.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "common/clock.h"
#include "serve/downsample.h"
#include "store/store.h"

/* store/postgres.c's range query (ST_BLOCKS_IN_RANGE), with the id */
static const char range_sql[] =
    "SELECT start_ns, end_ns, count, min, max, sum, first, last, id FROM blocks"
    " WHERE series_id=$1 AND start_ns <= $3 AND start_ns >= COALESCE((SELECT MAX(start_ns)"
    " FROM blocks WHERE series_id=$1 AND start_ns <= $2), $2) AND end_ns >= $2"
    " ORDER BY start_ns";
static const char data_sql[] =
    "SELECT id, data FROM blocks WHERE id = ANY($1::bigint[]) ORDER BY start_ns";

struct found {
    int64_t id, start_ns, end_ns;
};

static int keep(const struct series_record *s, void *arg)
{
    struct found *f = arg;
    *f = (struct found){s->id, s->start_ns, s->end_ns};
    return 0;
}

static double ms_since(int64_t t0)
{
    return (double)(clock_monotonic_ns() - t0) / 1e6;
}

/* A binary column: big-endian int8 or float8 (NULL float is NaN). */
static uint64_t col_be(const PGresult *r, int row, int col)
{
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static double col_f8(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NAN;
    uint64_t bits = col_be(r, row, col);
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

static void put_be(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* The one-query way into d (initialised by the caller). 0 or -1. */
static int one_query(PGconn *c, const struct found *f, struct downsampler *d, int *decoded)
{
    unsigned char bin[3][8];
    put_be(bin[0], (uint64_t)f->id);
    put_be(bin[1], (uint64_t)d->from_ns);
    put_be(bin[2], (uint64_t)d->to_ns);
    const char *values[3] = {(char *)bin[0], (char *)bin[1], (char *)bin[2]};
    static const int lengths[3] = {8, 8, 8}, formats[3] = {1, 1, 1};
    static const Oid types[3] = {20, 20, 20};
    PGresult *sums = PQexecParams(c, range_sql, 3, types, values, lengths, formats, 1);
    if (PQresultStatus(sums) != PGRES_TUPLES_OK) {
        fprintf(stderr, "pg_series_read: %s", PQerrorMessage(c));
        PQclear(sums);
        return -1;
    }
    int n = PQntuples(sums), want = 0;
    struct block_stats *st = malloc((size_t)(n ? n : 1) * sizeof(*st));
    int *wanted = malloc((size_t)(n ? n : 1) * sizeof(*wanted)); /* rows to decode, in order */
    struct strbuf ids;
    strbuf_init(&ids);
    strbuf_addch(&ids, '{');
    for (int i = 0; st && wanted && i < n; i++) {
        st[i] = (struct block_stats){
            .start_ns = (int64_t)col_be(sums, i, 0),
            .end_ns = (int64_t)col_be(sums, i, 1),
            .count = (uint32_t)col_be(sums, i, 2),
            .min = col_f8(sums, i, 3),
            .max = col_f8(sums, i, 4),
            .sum = col_f8(sums, i, 5),
            .first = col_f8(sums, i, 6),
            .last = col_f8(sums, i, 7),
        };
        if (downsampler_wants_data(d, &st[i])) {
            strbuf_addf(&ids, "%s%lld", want ? "," : "", (long long)col_be(sums, i, 8));
            wanted[want++] = i;
        } else {
            downsampler_add_block(d, &st[i], NULL, 0);
        }
    }
    strbuf_addch(&ids, '}');
    int rc = st && wanted && !strbuf_failed(&ids) ? 0 : -1;
    if (rc == 0 && want) {
        const char *v[1] = {ids.buf};
        PGresult *data = PQexecParams(c, data_sql, 1, NULL, v, NULL, NULL, 1);
        /* in start order, as wanted[] is */
        rc = PQresultStatus(data) == PGRES_TUPLES_OK && PQntuples(data) == want ? 0 : -1;
        for (int k = 0; rc == 0 && k < want; k++) {
            int i = wanted[k];
            if ((int64_t)col_be(data, k, 0) != (int64_t)col_be(sums, i, 8))
                rc = -1;
            else
                downsampler_add_block(d, &st[i], (const uint8_t *)PQgetvalue(data, k, 1),
                                      (size_t)PQgetlength(data, k, 1));
        }
        if (rc < 0)
            fprintf(stderr, "pg_series_read: the blocks' data did not come back: %s",
                    PQerrorMessage(c));
        PQclear(data);
    }
    *decoded = want;
    strbuf_release(&ids);
    free(wanted);
    free(st);
    PQclear(sums);
    return rc;
}

static int same_buckets(const struct downsampler *a, const struct downsampler *b)
{
    if (a->nbuckets != b->nbuckets)
        return 0;
    for (uint32_t i = 0; i < a->nbuckets; i++) {
        const struct ds_bucket *x = &a->b[i], *y = &b->b[i];
        if (x->count != y->count || (x->count && (x->min != y->min || x->max != y->max)))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                         {"run", required_argument, NULL, 'r'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"labels", required_argument, NULL, 'l'},
                                         {"points", required_argument, NULL, 'p'},
                                         {"reps", required_argument, NULL, 'k'},
                                         {NULL, 0, NULL, 0}};
    const char *uri = NULL, *run = NULL, *name = NULL, *labels = "";
    int points = 1000, reps = 20, ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            uri = optarg;
            break;
        case 'r':
            run = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'l':
            labels = optarg;
            break;
        case 'p':
            points = atoi(optarg);
            break;
        case 'k':
            reps = atoi(optarg);
            break;
        default:
            return 2;
        }
    }
    if (!uri || !run || !name || points < 1 || points > DOWNSAMPLE_MAX_BUCKETS || reps < 1 ||
        reps > 1000) {
        fprintf(stderr, "usage: pg_series_read --store URI --run ID --name NAME [--labels L]"
                        " [--points 1000] [--reps 20]\n");
        return 2;
    }
    struct strbuf err;
    strbuf_init(&err);
    struct store *s;
    if (store_open(uri, 1, &s, &err) < 0) {
        fprintf(stderr, "pg_series_read: %s\n", err.buf);
        return 1;
    }
    PGconn *c = PQconnectdb(uri);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_series_read: %s", PQerrorMessage(c));
        return 1;
    }
    double *t_store = calloc((size_t)reps, sizeof(double));
    double *t_one = calloc((size_t)reps, sizeof(double));
    double *t_resolve = calloc((size_t)reps, sizeof(double));
    int64_t blocks = 0, decoded = 0;
    int one_decoded = 0, same = 1, rc = t_store && t_one && t_resolve ? 0 : -1;
    /* a first read of each way warms the server's cache and the statements */
    for (int k = -1; rc == 0 && k < reps; k++) {
        struct found f = {0};
        struct downsampler a, b;
        struct run_record r;
        int64_t t0 = clock_monotonic_ns();
        rc = store_resolve_run(s, run, &r);
        if (rc == 0 && k >= 0)
            t_resolve[k] = ms_since(t0);
        run_record_release(&r);
        if (rc < 0) {
            fprintf(stderr, "pg_series_read: cannot resolve run %s\n", run);
            break;
        }
        t0 = clock_monotonic_ns();
        rc = s->ops->series_find(s, run, name, labels, keep, &f);
        if (rc == 0)
            rc = downsampler_init(&a, f.start_ns, f.end_ns, (uint32_t)points);
        if (rc == 0 && (rc = downsampler_run(&a, s, f.id)) == 0 && k >= 0)
            t_store[k] = ms_since(t0);
        if (rc < 0) {
            fprintf(stderr, "pg_series_read: %s\n", s->err.buf);
            break;
        }
        t0 = clock_monotonic_ns();
        rc = downsampler_init(&b, f.start_ns, f.end_ns, (uint32_t)points);
        if (rc == 0 && (rc = one_query(c, &f, &b, &one_decoded)) == 0 && k >= 0)
            t_one[k] = ms_since(t0);
        blocks = a.blocks_summary + a.blocks_decoded;
        decoded = a.blocks_decoded;
        same = same && rc == 0 && same_buckets(&a, &b);
        downsampler_release(&a);
        downsampler_release(&b);
    }
    if (rc < 0)
        return 1;
    qsort(t_store, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(t_one, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(t_resolve, (size_t)reps, sizeof(double), bench_cmp_double);
    printf("{\"points\":%d,\"reps\":%d,\"blocks\":%lld,\"blocks_decoded\":%lld,"
           "\"store_p50_ms\":%.2f,\"store_max_ms\":%.2f,\"one_query_p50_ms\":%.2f,"
           "\"one_query_max_ms\":%.2f,\"one_query_decoded\":%d,\"same_buckets\":%s,"
           "\"resolve_p50_ms\":%.2f,\"resolve_max_ms\":%.2f}\n",
           points, reps, (long long)blocks, (long long)decoded, t_store[reps / 2],
           t_store[reps - 1], t_one[reps / 2], t_one[reps - 1], one_decoded,
           same ? "true" : "false", t_resolve[reps / 2], t_resolve[reps - 1]);
    free(t_store);
    free(t_one);
    free(t_resolve);
    PQfinish(c);
    store_close(s);
    strbuf_release(&err);
    return same ? 0 : 1;
}
