/* The Python profile and its block codec (pyprof/profile.h). */
#include "test.h"

#include <errno.h>
#include <zstd.h>

#include "pyprof/profile.h"

/* What a test defined, kept apart from the profile to check it against. */
struct ref {
    char func[64][32], file[64][32];
    uint32_t line[64], nframes;
    uint32_t stack[64][12], depth[64], nstacks;
    struct py_sample *samples;
    size_t nsamples, cap;
};

struct blocks {
    struct py_block_out b[256];
    int n;
};

static void blocks_free(struct blocks *bl)
{
    for (int i = 0; i < bl->n; i++)
        free(bl->b[i].data);
    bl->n = 0;
}

static void take_into(struct py_profile *p, struct blocks *bl)
{
    struct py_block_out out[2];
    int n = -1;
    ASSERT_EQ_INT(py_profile_take(p, out, &n), 0);
    ASSERT(n >= 0 && n <= 2 && bl->n + n <= 256);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ_INT(out[i].seq, bl->n); /* seq counts blocks from 0, in order */
        bl->b[bl->n++] = out[i];
    }
    ASSERT_EQ_INT(p->nsamples, 0);
}

static void load_all(struct py_profile *q, const struct blocks *bl)
{
    struct strbuf why;
    strbuf_init(&why);
    for (int i = 0; i < bl->n; i++) {
        int rc = py_profile_load(q, bl->b[i].kind, bl->b[i].data, bl->b[i].len, &why);
        if (rc != 0)
            TEST_FAIL("block %d: %d %s", i, rc, why.buf);
    }
    strbuf_release(&why);
}

static int sample_cmp(const void *a, const void *b)
{
    const struct py_sample *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static void ref_sample(struct ref *r, const struct py_sample *s)
{
    if (r->nsamples == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->samples = realloc(r->samples, r->cap * sizeof(*s));
        ASSERT(r->samples);
    }
    r->samples[r->nsamples++] = *s;
}

/* Random frames and stacks (stacks share root prefixes as real ones do),
 * several takes of random samples with distinct times. */
static void build_random(struct py_profile *p, struct ref *r, struct blocks *bl, uint64_t seed)
{
    int64_t t0 = INT64_C(1767225600000000000); /* 2026-01-01 UTC */
    uint64_t s = seed;
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 8 && r->nframes < 64; k++) {
            uint32_t i = r->nframes, id;
            snprintf(r->func[i], sizeof(r->func[i]), "f%" PRIu64, rng_next(&s) % 1000000);
            snprintf(r->file[i], sizeof(r->file[i]), "/src/m%u.py", i % 5);
            r->line[i] = (uint32_t)(rng_next(&s) % 5000);
            ASSERT_EQ_INT(py_profile_frame(p, r->func[i], r->file[i], r->line[i], &id), 0);
            ASSERT_EQ_INT(id, i + 1);
            r->nframes++;
            /* the same frame again is the same id */
            ASSERT_EQ_INT(py_profile_frame(p, r->func[i], r->file[i], r->line[i], &id), 0);
            ASSERT_EQ_INT(id, i + 1);
        }
        for (int k = 0; k < 8 && r->nstacks < 64; k++) {
            uint32_t i = r->nstacks, id, depth = 1 + (uint32_t)(rng_next(&s) % 12);
            uint32_t shared = i ? (uint32_t)(rng_next(&s) % (r->depth[i - 1] + 1)) : 0;
            shared = shared < depth ? shared : depth;
            for (uint32_t d = 0; d < depth; d++)
                r->stack[i][d] =
                    d < shared ? r->stack[i - 1][d] : 1 + (uint32_t)(rng_next(&s) % r->nframes);
            r->depth[i] = depth;
            ASSERT_EQ_INT(py_profile_stack(p, r->stack[i], depth, &id), 0);
            if (id != i + 1) { /* a repeat of an earlier one: fine, not new */
                ASSERT(id <= i);
                continue;
            }
            r->nstacks++;
        }
        for (int32_t tid = 100; tid < 104; tid++)
            ASSERT_EQ_INT(py_profile_thread(p, 7, tid, round ? "worker" : "main"), 0);
        ASSERT_EQ_INT(py_profile_process(p, 7, 1, "python3"), 0);
        size_t first = r->nsamples;
        for (int k = 0; k < 500; k++) {
            struct py_sample x = {
                .t_ns = t0 + (int64_t)(round * 1000000 + k) * 997 + (int64_t)(rng_next(&s) % 997),
                .pid = 7,
                .tid = 100 + (int32_t)(rng_next(&s) % 4),
                .stack = (uint32_t)(rng_next(&s) % (r->nstacks + 1)),
                .state = (uint8_t)(rng_next(&s) % 6),
                .gil = (uint8_t)(rng_next(&s) % 2),
            };
            ref_sample(r, &x);
        }
        /* added out of order: the block sorts them */
        for (size_t k = r->nsamples; k-- > first;)
            ASSERT_EQ_INT(py_profile_add(p, &r->samples[k]), 0);
        take_into(p, bl);
    }
    qsort(r->samples, r->nsamples, sizeof(*r->samples), sample_cmp);
}

/* Samples come back exactly, their times to the microsecond (profile.c). */
static void check_samples(const struct py_profile *q, const struct ref *r)
{
    ASSERT_EQ_INT(q->nsamples, r->nsamples);
    for (size_t i = 0; i < r->nsamples; i++) {
        const struct py_sample *a = &q->samples[i], *b = &r->samples[i];
        if (a->t_ns != b->t_ns / 1000 * 1000 || a->pid != b->pid || a->tid != b->tid ||
            a->stack != b->stack || a->state != b->state || a->gil != b->gil)
            TEST_FAIL("sample %zu: t %" PRId64 "/%" PRId64 " tid %d/%d stack %u/%u", i, a->t_ns,
                      b->t_ns, a->tid, b->tid, a->stack, b->stack);
    }
}

static void check_same(const struct py_profile *q, const struct ref *r)
{
    ASSERT_EQ_INT(q->nframes, r->nframes);
    for (uint32_t i = 0; i < r->nframes; i++) {
        ASSERT_EQ_STR(q->frames[i].func, r->func[i]);
        ASSERT_EQ_STR(q->frames[i].file, r->file[i]);
        ASSERT_EQ_INT(q->frames[i].line, r->line[i]);
    }
    ASSERT_EQ_INT(q->nstacks, r->nstacks);
    for (uint32_t i = 0; i < r->nstacks; i++) {
        uint32_t depth;
        const uint32_t *ids = py_profile_stack_frames(q, i + 1, &depth);
        ASSERT_EQ_INT(depth, r->depth[i]);
        ASSERT(memcmp(ids, r->stack[i], depth * sizeof(*ids)) == 0);
    }
    check_samples(q, r);
}

TEST(round_trip)
{
    struct py_profile p, q;
    struct ref *r = calloc(1, sizeof(*r));
    struct blocks bl = {0};
    py_profile_init(&p);
    py_profile_init(&q);
    build_random(&p, r, &bl, 42);
    ASSERT_EQ_INT(bl.n, 12); /* each take: new dictionary entries and samples */
    for (int i = 0; i < bl.n; i++) {
        ASSERT_EQ_INT(bl.b[i].kind, i % 2 ? PY_BLOCK_SAMPLES : PY_BLOCK_DICT);
        if (bl.b[i].kind == PY_BLOCK_SAMPLES)
            ASSERT_EQ_INT(bl.b[i].count, 500);
    }
    /* a samples block's range is its first and last sample */
    ASSERT_EQ_INT(bl.b[1].start_ns, r->samples[0].t_ns / 1000 * 1000);
    ASSERT_EQ_INT(bl.b[1].end_ns, r->samples[499].t_ns / 1000 * 1000);
    load_all(&q, &bl);
    check_same(&q, r);
    ASSERT_EQ_INT(q.nthreads, 4);
    ASSERT_EQ_STR(q.threads[3].name, "worker");
    ASSERT_EQ_INT(q.nprocs, 1);
    ASSERT_EQ_STR(q.procs[0].comm, "python3");
    ASSERT_EQ_INT(q.procs[0].ppid, 1);
    blocks_free(&bl);
    py_profile_release(&p);
    py_profile_release(&q);
    free(r->samples);
    free(r);
}

TEST(thread_renamed)
{
    struct py_profile p, q, q1;
    struct blocks bl = {0};
    py_profile_init(&p);
    ASSERT_EQ_INT(py_profile_thread(&p, 10, 11, "python3"), 0);
    ASSERT_EQ_INT(py_profile_thread(&p, 10, 12, "loader"), 0);
    take_into(&p, &bl);
    ASSERT_EQ_INT(bl.n, 1);
    ASSERT_EQ_INT(bl.b[0].count, 2);
    ASSERT_EQ_INT(py_profile_thread(&p, 10, 11, "pt_main_thread"), 0);
    ASSERT_EQ_INT(py_profile_thread(&p, 10, 12, "loader"), 0); /* unchanged: not sent again */
    take_into(&p, &bl);
    ASSERT_EQ_INT(bl.n, 2);
    ASSERT_EQ_INT(bl.b[1].count, 1);
    ASSERT_EQ_INT(p.nthreads, 2);

    py_profile_init(&q);
    load_all(&q, &bl);
    ASSERT_EQ_INT(q.nthreads, 2);
    ASSERT_EQ_STR(q.threads[0].name, "pt_main_thread");
    ASSERT_EQ_STR(q.threads[1].name, "loader");
    bl.n = 1; /* the first block alone: the old name */
    py_profile_init(&q1);
    load_all(&q1, &bl);
    ASSERT_EQ_STR(q1.threads[0].name, "python3");
    bl.n = 2;
    blocks_free(&bl);
    py_profile_release(&p);
    py_profile_release(&q);
    py_profile_release(&q1);
}

TEST(empty_take)
{
    struct py_profile p;
    struct py_block_out out[2];
    int n = -1;
    py_profile_init(&p);
    ASSERT_EQ_INT(py_profile_take(&p, out, &n), 0);
    ASSERT_EQ_INT(n, 0);
    struct py_sample s = {.t_ns = 5, .pid = 1, .tid = 1};
    ASSERT_EQ_INT(py_profile_add(&p, &s), 0);
    ASSERT_EQ_INT(py_profile_take(&p, out, &n), 0);
    ASSERT_EQ_INT(n, 1); /* a sample of no Python frame needs no dictionary */
    ASSERT_EQ_INT(out[0].kind, PY_BLOCK_SAMPLES);
    ASSERT_EQ_INT(out[0].seq, 0);
    free(out[0].data);
    ASSERT_EQ_INT(py_profile_take(&p, out, &n), 0);
    ASSERT_EQ_INT(n, 0);
    py_profile_release(&p);
}

TEST(unknown_stack_refused)
{
    struct py_profile p;
    py_profile_init(&p);
    struct py_sample s = {.t_ns = 5, .pid = 1, .tid = 1, .stack = 1};
    ASSERT_EQ_INT(py_profile_add(&p, &s), -EINVAL);
    s.stack = 0;
    s.state = 8;
    ASSERT_EQ_INT(py_profile_add(&p, &s), -EINVAL);
    ASSERT_EQ_INT(p.nsamples, 0);
    py_profile_release(&p);
}

/* Frame i and the stack (1, i + 1): they have id i + 1. */
static void intern_twice(struct py_profile *p, uint32_t i)
{
    char name[32];
    uint32_t id, ids[2] = {1, i + 1};
    snprintf(name, sizeof(name), "fn%u", i);
    ASSERT_EQ_INT(py_profile_frame(p, name, "a.py", i, &id), 0);
    ASSERT_EQ_INT(id, i + 1);
    ASSERT_EQ_INT(py_profile_stack(p, ids, 2, &id), 0);
    ASSERT_EQ_INT(id, i + 1);
}

TEST(many_entries_interned)
{
    struct py_profile p;
    py_profile_init(&p);
    size_t before = py_profile_bytes(&p);
    for (uint32_t i = 0; i < 20000; i++)
        intern_twice(&p, i);
    for (uint32_t i = 0; i < 20000; i += 997) /* again: the same ids */
        intern_twice(&p, i);
    ASSERT_EQ_INT(p.nframes, 20000);
    /* at least the frames' structs, names and stacks' ids are counted */
    ASSERT(py_profile_bytes(&p) - before >=
           20000 * (sizeof(struct py_frame) + sizeof(struct py_stack) + 2 * sizeof(uint32_t)));
    py_profile_release(&p);
}

TEST(out_of_order_refused)
{
    struct py_profile p, q;
    struct ref *r = calloc(1, sizeof(*r));
    struct blocks bl = {0};
    struct strbuf why;
    strbuf_init(&why);
    py_profile_init(&p);
    py_profile_init(&q);
    build_random(&p, r, &bl, 7);
    /* samples before their dictionary: unknown stacks */
    ASSERT_EQ_INT(py_profile_load(&q, PY_BLOCK_SAMPLES, bl.b[1].data, bl.b[1].len, &why), -EINVAL);
    ASSERT(strstr(why.buf, "stack"));
    /* the second dictionary before the first */
    ASSERT_EQ_INT(py_profile_load(&q, PY_BLOCK_DICT, bl.b[2].data, bl.b[2].len, &why), -EINVAL);
    ASSERT(strstr(why.buf, "out of order"));
    /* the first twice */
    ASSERT_EQ_INT(py_profile_load(&q, PY_BLOCK_DICT, bl.b[0].data, bl.b[0].len, &why), 0);
    ASSERT_EQ_INT(py_profile_load(&q, PY_BLOCK_DICT, bl.b[0].data, bl.b[0].len, &why), -EINVAL);
    /* the kind stored must be the block's */
    ASSERT_EQ_INT(py_profile_load(&q, PY_BLOCK_SAMPLES, bl.b[2].data, bl.b[2].len, &why), -EINVAL);
    ASSERT(strstr(why.buf, "kind"));
    ASSERT_EQ_INT(q.nframes, 8);
    blocks_free(&bl);
    py_profile_release(&p);
    py_profile_release(&q);
    strbuf_release(&why);
    free(r->samples);
    free(r);
}

/* The counts of what q holds: a refused block must leave them as they were. */
static void counts(const struct py_profile *q, uint64_t c[6])
{
    c[0] = q->nframes;
    c[1] = q->nstacks;
    c[2] = q->nthreads;
    c[3] = q->nprocs;
    c[4] = q->nsamples;
    c[5] = q->nstack_frames;
}

/* Load data as block i of bl into a profile holding blocks 0..i-1: never a
 * crash; a refusal leaves the profile as it was and says why in one line;
 * what loads refers only to what is defined. */
static void load_garbled(const struct blocks *bl, int i, const uint8_t *data, size_t len,
                         int want_refused)
{
    struct py_profile q;
    struct strbuf why;
    uint64_t before[6], after[6];
    strbuf_init(&why);
    py_profile_init(&q);
    struct blocks prefix = *bl;
    prefix.n = i;
    load_all(&q, &prefix);
    counts(&q, before);
    int rc = py_profile_load(&q, bl->b[i].kind, data, len, &why);
    counts(&q, after);
    if (rc != 0) {
        ASSERT_EQ_INT(rc, -EINVAL);
        ASSERT(why.len > 0 && !strchr(why.buf, '\n'));
        ASSERT(memcmp(before, after, sizeof(before)) == 0);
        /* and it still takes the real block */
        ASSERT_EQ_INT(py_profile_load(&q, bl->b[i].kind, bl->b[i].data, bl->b[i].len, &why), 0);
    } else {
        ASSERT(!want_refused);
        for (size_t k = 0; k < q.nsamples; k++)
            ASSERT(q.samples[k].stack <= q.nstacks);
        for (size_t k = 0; k < q.nstack_frames; k++)
            ASSERT(q.stack_frames[k] >= 1 && q.stack_frames[k] <= q.nframes);
    }
    py_profile_release(&q);
    strbuf_release(&why);
}

TEST(truncated_blocks_refused)
{
    struct py_profile p;
    struct ref *r = calloc(1, sizeof(*r));
    struct blocks bl = {0};
    py_profile_init(&p);
    build_random(&p, r, &bl, 9);
    for (int i = 0; i < 4; i++)
        for (size_t cut = 0; cut < bl.b[i].len; cut++) {
            uint8_t *part = malloc(cut ? cut : 1);
            memcpy(part, bl.b[i].data, cut);
            load_garbled(&bl, i, part, cut, 1);
            free(part);
        }
    blocks_free(&bl);
    py_profile_release(&p);
    free(r->samples);
    free(r);
}

/* Block i with one raw body byte changed, compressed again (so that the
 * decoder, not zstd, meets the damage). */
static uint8_t *reseal_flipped(const struct py_block_out *b, uint64_t *s, size_t *len)
{
    size_t hlen = 2;
    while (b->data[hlen] & 0x80)
        hlen++;
    hlen++;
    unsigned long long raw_len = ZSTD_getFrameContentSize(b->data + hlen, b->len - hlen);
    uint8_t *raw = malloc(raw_len + 1);
    ASSERT(ZSTD_decompress(raw, raw_len, b->data + hlen, b->len - hlen) == raw_len);
    raw[rng_next(s) % raw_len] ^= (uint8_t)(1u << (rng_next(s) % 8));
    size_t bound = ZSTD_compressBound(raw_len);
    uint8_t *out = malloc(hlen + bound);
    memcpy(out, b->data, hlen);
    size_t z = ZSTD_compress(out + hlen, bound, raw, raw_len, 1);
    ASSERT(!ZSTD_isError(z));
    free(raw);
    *len = hlen + z;
    return out;
}

TEST(flipped_bits_never_crash)
{
    struct py_profile p;
    struct ref *r = calloc(1, sizeof(*r));
    struct blocks bl = {0};
    uint64_t s = 1234;
    int refused = 0, tries = 0;
    py_profile_init(&p);
    build_random(&p, r, &bl, 11);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 300; k++, tries++) {
            size_t len = bl.b[i].len;
            uint8_t *copy = malloc(len);
            memcpy(copy, bl.b[i].data, len);
            copy[rng_next(&s) % len] ^= (uint8_t)(1u << (rng_next(&s) % 8));
            load_garbled(&bl, i, copy, len, 0);
            free(copy);
            uint8_t *body = reseal_flipped(&bl.b[i], &s, &len);
            struct py_profile q;
            py_profile_init(&q);
            struct blocks prefix = bl;
            prefix.n = i;
            load_all(&q, &prefix);
            refused += py_profile_load(&q, bl.b[i].kind, body, len, NULL) != 0;
            py_profile_release(&q);
            load_garbled(&bl, i, body, len, 0);
            free(body);
        }
    /* the body checks catch some of the damage (the rest is plausible data) */
    ASSERT(refused > 0 && refused < tries);
    blocks_free(&bl);
    py_profile_release(&p);
    free(r->samples);
    free(r);
}

/*
 * A training loop's shape: 8 threads (the main one stepping through a loop
 * of ~30 stacks, 3 data loader workers in their fetch loop, 4 idle ones
 * waiting), sampled at 100 Hz for 60 s and taken once a second. Prints the
 * bytes per sample stored; asserts only that it decodes exactly.
 */
TEST(bytes_per_sample)
{
    struct py_profile p, q;
    struct ref *r = calloc(1, sizeof(*r));
    struct blocks *bl = calloc(1, sizeof(*bl));
    uint64_t s = 5;
    const char *fn[] = {"<module>",  "main",       "train",     "train_step", "forward",
                        "backward",  "_call_impl", "step",      "__next__",   "_next_data",
                        "fetch",     "collate",    "wait",      "get",        "linear",
                        "attention", "loss",       "zero_grad", "clip",       "log"};
    uint32_t fid[20];
    py_profile_init(&p);
    for (int i = 0; i < 20; i++)
        ASSERT_EQ_INT(py_profile_frame(&p, fn[i], i < 4 ? "train.py" : "torch/nn/module.py",
                                       (uint32_t)(10 * i + 1), &fid[i]),
                      0);
    /* 50 stacks: root <module> main train, then a tail of 1 to 4 frames */
    uint32_t sid[50];
    for (int i = 0; i < 50; i++) {
        uint32_t ids[8] = {fid[0], fid[1], fid[2]}, depth = 3 + 1 + (uint32_t)(i % 4);
        for (uint32_t d = 3; d < depth; d++)
            ids[d] = fid[3 + (i * 7 + (int)d * 3) % 17];
        ASSERT_EQ_INT(py_profile_stack(&p, ids, depth, &sid[i]), 0);
    }
    for (int32_t t = 0; t < 8; t++)
        ASSERT_EQ_INT(py_profile_thread(&p, 4242, 4242 + t, t ? "worker" : "python3"), 0);
    int64_t t0 = INT64_C(1767225600000000000);
    size_t total = 0, n = 0;
    for (int sec = 0; sec < 60; sec++) {
        for (int tick = 0; tick < 100; tick++) {
            int64_t at = t0 + (int64_t)(sec * 100 + tick) * 10000000 +
                         (int64_t)(rng_next(&s) % 200000); /* timer jitter */
            for (int32_t t = 0; t < 8; t++) {
                uint32_t stack;
                if (t == 0)
                    stack = sid[(sec * 100 + tick) % 30]; /* the loop's phases */
                else if (t < 4)
                    stack = sid[30 + (int)(rng_next(&s) % 12)];
                else
                    stack = sid[42 + t];
                struct py_sample x = {.t_ns = at + t * 15000 + (int64_t)(rng_next(&s) % 3000),
                                      .pid = 4242,
                                      .tid = 4242 + t,
                                      .stack = stack,
                                      .state = (uint8_t)(t == 0 ? (tick % 5 ? 0 : 4) : 1),
                                      .gil = t == 0 && tick % 5};
                ASSERT_EQ_INT(py_profile_add(&p, &x), 0);
                ref_sample(r, &x);
                n++;
            }
        }
        take_into(&p, bl);
    }
    for (int i = 0; i < bl->n; i++)
        total += bl->b[i].len;
    printf("# python profile: %zu samples in %d blocks, %zu bytes, %.2f bytes per sample\n", n,
           bl->n, total, (double)total / (double)n);
    py_profile_init(&q);
    load_all(&q, bl);
    qsort(r->samples, r->nsamples, sizeof(*r->samples), sample_cmp);
    check_samples(&q, r); /* the dictionaries are checked by round_trip */
    ASSERT_EQ_INT(q.nstacks, 50);
    blocks_free(bl);
    py_profile_release(&p);
    py_profile_release(&q);
    free(r->samples);
    free(r);
    free(bl);
}

TEST_MAIN(round_trip, thread_renamed, empty_take, unknown_stack_refused, many_entries_interned,
          out_of_order_refused, truncated_blocks_refused, flipped_bits_never_crash,
          bytes_per_sample)
