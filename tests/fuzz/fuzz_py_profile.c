/*
 * libFuzzer target for the Python profile's blocks (pyprof/profile.h).
 * Two checks per input:
 *   1. the bytes as a dictionary block, then as a samples block, loaded
 *      into an empty profile and into one that holds a small dictionary:
 *      never a read out of bounds; 0, or -EINVAL with a reason and the
 *      profile's counts as they were; what loads refers only to ids defined;
 *   2. the same for the bytes as a block's raw body, given a header and
 *      compressed, so that the body's decoder meets them rather than zstd;
 *   3. the bytes as a script that builds a profile (frames, stacks, threads,
 *      samples, takes): every block it makes loads back, in seq order, into
 *      a profile equal to it, samples to the microsecond.
 */
#include "pyprof/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refs(const struct py_profile *q)
{
    for (size_t k = 0; k < q->nsamples; k++)
        if (q->samples[k].stack > q->nstacks)
            abort();
    for (size_t k = 0; k < q->nstack_frames; k++)
        if (q->stack_frames[k] < 1 || q->stack_frames[k] > q->nframes)
            abort();
}

static void load_one(struct py_profile *q, int kind, const uint8_t *data, size_t size)
{
    struct strbuf why;
    uint8_t *copy = malloc(size ? size : 1); /* exactly sized: ASan sees a read past it */
    if (!copy)
        abort();
    memcpy(copy, data, size);
    strbuf_init(&why);
    uint32_t nf = q->nframes, ns = q->nstacks, nt = q->nthreads;
    size_t nsamples = q->nsamples;
    int rc = py_profile_load(q, kind, copy, size, &why);
    if (rc != 0 && (rc != -EINVAL || why.len == 0 || q->nframes != nf || q->nstacks != ns ||
                    q->nthreads != nt || q->nsamples != nsamples))
        abort();
    check_refs(q);
    strbuf_release(&why);
    free(copy);
}

static void decode_arbitrary(const uint8_t *data, size_t size)
{
    struct py_profile q;
    py_profile_init(&q);
    load_one(&q, PY_BLOCK_DICT, data, size);
    load_one(&q, PY_BLOCK_SAMPLES, data, size);
    py_profile_release(&q);

    uint32_t f1, f2, s1, ids[2];
    py_profile_init(&q);
    if (py_profile_frame(&q, "main", "a.py", 1, &f1) || py_profile_frame(&q, "f", "a.py", 9, &f2))
        abort();
    ids[0] = f1;
    ids[1] = f2;
    if (py_profile_stack(&q, ids, 2, &s1))
        abort();
    load_one(&q, PY_BLOCK_SAMPLES, data, size);
    load_one(&q, PY_BLOCK_DICT, data, size);
    py_profile_release(&q);
}

/* The bytes as the raw body of a block of each kind (version 1). */
static void decode_body(const uint8_t *data, size_t size)
{
    size_t bound = ZSTD_compressBound(size);
    uint8_t *blk = malloc(12 + bound);
    if (!blk)
        abort();
    size_t h = 2, v = size;
    blk[0] = 1;
    for (; v >= 0x80; v >>= 7)
        blk[h++] = (uint8_t)(v | 0x80);
    blk[h++] = (uint8_t)v;
    size_t z = ZSTD_compress(blk + h, bound, data, size, 1);
    if (ZSTD_isError(z))
        abort();
    for (int kind = PY_BLOCK_DICT; kind <= PY_BLOCK_SAMPLES; kind++) {
        blk[1] = (uint8_t)kind;
        decode_arbitrary(blk, h + z);
    }
    free(blk);
}

static void check_equal(const struct py_profile *a, const struct py_profile *b)
{
    if (a->nframes != b->nframes || a->nstacks != b->nstacks || a->nthreads != b->nthreads ||
        a->nprocs != b->nprocs)
        abort();
    for (uint32_t i = 0; i < a->nframes; i++)
        if (strcmp(a->frames[i].func, b->frames[i].func) ||
            strcmp(a->frames[i].file, b->frames[i].file) || a->frames[i].line != b->frames[i].line)
            abort();
    for (uint32_t i = 1; i <= a->nstacks; i++) {
        uint32_t da, db;
        const uint32_t *x = py_profile_stack_frames(a, i, &da),
                       *y = py_profile_stack_frames(b, i, &db);
        if (da != db || (da && memcmp(x, y, da * sizeof(*x))))
            abort();
    }
    if ((a->nthreads && memcmp(a->threads, b->threads, a->nthreads * sizeof(*a->threads))) ||
        (a->nprocs && memcmp(a->procs, b->procs, a->nprocs * sizeof(*a->procs))))
        abort();
}

static int sample_cmp(const void *x, const void *y)
{
    const struct py_sample *a = x, *b = y;
    if (a->t_ns != b->t_ns)
        return a->t_ns < b->t_ns ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return (a->state * 2 + a->gil) - (b->state * 2 + b->gil);
}

/* Loads each block made by a take into q; the samples it carried must be
 * want[0..n), once sorted and cut to the microsecond. */
static void take_and_load(struct py_profile *p, struct py_profile *q, struct py_sample *want,
                          size_t n)
{
    struct py_block_out out[2];
    int nb;
    if (py_profile_take(p, out, &nb) != 0)
        abort();
    size_t before = q->nsamples;
    for (int i = 0; i < nb; i++) {
        if (py_profile_load(q, out[i].kind, out[i].data, out[i].len, NULL) != 0)
            abort();
        free(out[i].data);
    }
    check_equal(p, q);
    if (q->nsamples - before != n)
        abort();
    qsort(want, n, sizeof(*want), sample_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct py_sample *g = &q->samples[before + i], *w = &want[i];
        if (g->t_ns != w->t_ns / 1000 * 1000 || g->pid != w->pid || g->tid != w->tid ||
            g->stack != w->stack || g->state != w->state || g->gil != w->gil)
            abort();
    }
}

static void build_script(const uint8_t *data, size_t size)
{
    struct py_profile p, q;
    struct py_sample want[256];
    size_t nwant = 0;
    char name[8];
    py_profile_init(&p);
    py_profile_init(&q);
    for (size_t i = 0; i + 4 <= size; i += 4) {
        const uint8_t *op = data + i;
        uint32_t id, ids[4];
        switch (op[0] % 5) {
        case 0:
            snprintf(name, sizeof(name), "f%u", op[1] % 16);
            if (py_profile_frame(&p, name, op[2] % 2 ? "a.py" : "b.py", op[3], &id))
                abort();
            break;
        case 1:
            if (!p.nframes)
                break;
            for (int k = 0; k < 4; k++)
                ids[k] = 1 + op[1 + k % 3] % p.nframes;
            if (py_profile_stack(&p, ids, op[3] % 5, &id))
                abort();
            break;
        case 2:
            snprintf(name, sizeof(name), "t%u", op[2] % 4);
            if (py_profile_thread(&p, op[1] % 3, op[3] % 4, name) ||
                py_profile_process(&p, op[1] % 3, 1, name))
                abort();
            break;
        case 3: {
            if (nwant == 256)
                break;
            struct py_sample s = {
                .t_ns = (int64_t)op[1] * 1000003 + op[2] * 7 - 500000,
                .pid = op[3] % 3,
                .tid = op[3] % 5,
                .stack = p.nstacks ? op[2] % (p.nstacks + 1) : 0,
                .state = op[3] % 8,
                .gil = op[1] % 2,
            };
            if (py_profile_add(&p, &s))
                abort();
            want[nwant++] = s;
            break;
        }
        default:
            take_and_load(&p, &q, want, nwant);
            nwant = 0;
        }
    }
    take_and_load(&p, &q, want, nwant);
    py_profile_release(&p);
    py_profile_release(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode_arbitrary(data, size);
    decode_body(data, size);
    build_script(data, size);
    return 0;
}
