/*
 * The series codec's two formats side by side on a recorded run: every
 * series of RUN is read from STORE, then encoded again in format 1 (Gorilla,
 * what older stores hold) and in format 2 (scaled integers, what strobe
 * writes now), cut into blocks as the recorder cuts them, and decoded back.
 *
 *   build/bench/codec_formats [--reps N] STORE RUN
 *
 * Prints one JSON object: points, and for each format its bytes per point,
 * encode and decode nanoseconds per point (medians of N repetitions, 5 by
 * default, on the thread's CPU clock). Every decoded point is checked
 * against what was read, bit for bit; a mismatch is an error (exit 1).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "codec/gorilla.h"
#include "common/clock.h"
#include "common/strbuf.h"
#include "sample/series.h" /* SERIES_BLOCK_BYTES, SERIES_BLOCK_POINTS */
#include "store/points.h"
#include "store/store.h"

#define MAX_REPS 21

/* Every series' points, one after another, and where each series starts. */
struct corpus {
    struct point_buf pts;
    size_t *start; /* start[i]..start[i + 1] are series i's points */
    size_t n_series, cap_series;
};

/* Sealed blocks of one encoding: their bytes and summaries, end to end. */
struct encoded {
    uint8_t *bytes;
    size_t len, cap;
    struct block_stats *st;
    size_t *off; /* off[b]..off[b + 1] are block b's bytes */
    size_t n, cap_st, cap_off;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (!q) {
        fprintf(stderr, "codec_formats: out of memory\n");
        exit(1);
    }
    *cap = c;
    return q;
}

struct load_ctx {
    struct store *s;
    struct corpus *c;
    int rc;
};

static int load_series(const struct series_record *sr, void *arg)
{
    struct load_ctx *l = arg;
    struct corpus *c = l->c;
    c->start = grow(c->start, &c->cap_series, c->n_series + 2, sizeof(*c->start));
    c->start[c->n_series] = c->pts.n;
    l->rc = store_read_points(l->s, sr->id, &c->pts);
    if (l->rc < 0)
        return l->rc;
    c->n_series++;
    c->start[c->n_series] = c->pts.n;
    return 0;
}

static void seal(struct encoded *out, const struct block_enc *e)
{
    size_t size = block_enc_size(e);
    out->bytes = grow(out->bytes, &out->cap, out->len + size, 1);
    memcpy(out->bytes + out->len, e->buf, size);
    out->st = grow(out->st, &out->cap_st, out->n + 1, sizeof(*out->st));
    out->off = grow(out->off, &out->cap_off, out->n + 2, sizeof(*out->off));
    out->off[out->n] = out->len;
    out->st[out->n++] = e->st;
    out->len += size;
    out->off[out->n] = out->len;
}

static void block_start(struct block_enc *e, uint8_t *buf, int legacy)
{
    if (legacy)
        block_enc_init_legacy(e, buf, SERIES_BLOCK_BYTES);
    else
        block_enc_init(e, buf, SERIES_BLOCK_BYTES);
}

/* Encode every series as the recorder does: a block seals at
 * SERIES_BLOCK_POINTS points or when the next point does not fit. */
static void encode_all(const struct corpus *c, int legacy, struct encoded *out)
{
    static uint8_t buf[SERIES_BLOCK_BYTES];
    out->len = out->n = 0;
    for (size_t s = 0; s < c->n_series; s++) {
        struct block_enc e;
        block_start(&e, buf, legacy);
        for (size_t i = c->start[s]; i < c->start[s + 1]; i++) {
            const struct point *p = &c->pts.p[i];
            int rc = e.st.count >= SERIES_BLOCK_POINTS ? -ENOSPC
                                                       : block_enc_append(&e, p->ts_ns, p->value);
            if (rc == -ENOSPC) {
                seal(out, &e);
                block_start(&e, buf, legacy);
                rc = block_enc_append(&e, p->ts_ns, p->value);
            }
            if (rc < 0) {
                fprintf(stderr, "codec_formats: series %zu point %zu: error %d\n", s, i, rc);
                exit(1);
            }
        }
        if (e.st.count)
            seal(out, &e);
    }
}

/* Decode every block; check each point against the corpus when asked. */
static size_t decode_all(const struct encoded *enc, const struct corpus *c, int check)
{
    static int64_t ts[SERIES_BLOCK_POINTS];
    static double v[SERIES_BLOCK_POINTS];
    size_t at = 0;
    for (size_t b = 0; b < enc->n; b++) {
        struct block_dec d;
        int err;
        block_dec_init(&d, enc->bytes + enc->off[b], enc->off[b + 1] - enc->off[b],
                       enc->st[b].count, enc->st[b].start_ns);
        uint32_t got = block_dec_many(&d, ts, v, SERIES_BLOCK_POINTS, &err);
        if (err || got != enc->st[b].count) {
            fprintf(stderr, "codec_formats: block %zu does not decode\n", b);
            exit(1);
        }
        for (uint32_t i = 0; check && i < got; i++) {
            const struct point *p = &c->pts.p[at + i];
            if (ts[i] != p->ts_ns || memcmp(&v[i], &p->value, sizeof(double)) != 0) {
                fprintf(stderr, "codec_formats: point %zu differs after decoding\n", at + i);
                exit(1);
            }
        }
        at += got;
    }
    return at;
}

struct figures {
    double bytes_per_point, encode_ns, decode_ns;
    size_t blocks;
};

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof(*x), bench_cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static struct figures measure(const struct corpus *c, int legacy, int reps)
{
    struct encoded enc = {0};
    double enc_ns[MAX_REPS], dec_ns[MAX_REPS];
    double points = (double)c->pts.n;

    encode_all(c, legacy, &enc);
    if (decode_all(&enc, c, 1) != c->pts.n) {
        fprintf(stderr, "codec_formats: points lost in format %d\n", legacy ? 1 : 2);
        exit(1);
    }
    for (int r = 0; r < reps; r++) {
        int64_t t0 = clock_thread_cpu_ns();
        encode_all(c, legacy, &enc);
        int64_t t1 = clock_thread_cpu_ns();
        decode_all(&enc, c, 0);
        int64_t t2 = clock_thread_cpu_ns();
        enc_ns[r] = (double)(t1 - t0) / points;
        dec_ns[r] = (double)(t2 - t1) / points;
    }
    struct figures f = {(double)enc.len / points, median(enc_ns, reps), median(dec_ns, reps),
                        enc.n};
    free(enc.bytes);
    free(enc.st);
    free(enc.off);
    return f;
}

static void print_format(const char *name, const struct figures *f, const char *sep)
{
    printf("\"%s\": {\"bytes_per_point\": %.4f, \"blocks\": %zu, \"encode_ns_per_point\": %.2f, "
           "\"decode_ns_per_point\": %.2f}%s",
           name, f->bytes_per_point, f->blocks, f->encode_ns, f->decode_ns, sep);
}

int main(int argc, char **argv)
{
    int reps = 5, a = 1;
    if (argc > 2 && strcmp(argv[1], "--reps") == 0) {
        reps = atoi(argv[2]);
        a = 3;
    }
    if (argc - a != 2 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: codec_formats [--reps N (1-%d)] STORE RUN\n", MAX_REPS);
        return 2;
    }
    struct store *s;
    struct strbuf err;
    struct run_record run;
    strbuf_init(&err);
    if (store_open(argv[a], 1, &s, &err) < 0) {
        fprintf(stderr, "codec_formats: %s\n", err.buf);
        return 1;
    }
    strbuf_release(&err);
    if (store_resolve_run(s, argv[a + 1], &run) < 0) {
        fprintf(stderr, "codec_formats: no run '%s'\n", argv[a + 1]);
        return 1;
    }
    struct corpus c = {0};
    struct load_ctx l = {s, &c, 0};
    point_buf_init(&c.pts);
    if (s->ops->series_query(s, run.id, load_series, &l) < 0 || l.rc < 0 || !c.pts.n) {
        fprintf(stderr, "codec_formats: cannot read the series of '%s'\n", argv[a + 1]);
        return 1;
    }
    struct figures f1 = measure(&c, 1, reps), f2 = measure(&c, 0, reps);
    printf("{\"series\": %zu, \"points\": %zu, ", c.n_series, c.pts.n);
    print_format("format1", &f1, ", ");
    print_format("format2", &f2, "}\n");
    run_record_release(&run);
    point_buf_release(&c.pts);
    free(c.start);
    store_close(s);
    return 0;
}
