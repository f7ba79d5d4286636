/*
 * Tests for the event block codec: exact round trips (every field, extremes,
 * every kind byte), the summary, raw fallback, the size of a realistic
 * training stream, and a decoder that answers -EBADMSG (never a crash) to
 * truncated, extended, flipped and made-up blocks. Blocks are decoded from
 * exactly sized heap copies, so ASan flags any read past the end.
 */
#include "codec/events.h"
#include "common/array.h"

#include <errno.h>

#include "test.h"

#define MAX_EVENTS 20000
#define NS_PER_US  INT64_C(1000)
#define T0_NS      INT64_C(1700000000000000000) /* November 2023 */

static struct event g_ev[MAX_EVENTS];
static struct event g_out[MAX_EVENTS];
static uint8_t g_blk[EVENT_BLOCK_HEADER_MAX + MAX_EVENTS * EVENT_MAX_BYTES];

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
    return n ? rng_next(s) % n : 0;
}

static int64_t u2i(uint64_t u)
{
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

/* Exactly-sized heap copy, so ASan flags any read past len. */
static uint8_t *exact_copy(const uint8_t *src, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    ASSERT(p != NULL);
    if (len)
        memcpy(p, src, len);
    return p;
}

static struct event_encoder g_enc;
static struct event_decoder g_dec;

static void codecs_init(void)
{
    ASSERT_EQ_INT(event_encoder_init(&g_enc), 0);
    ASSERT_EQ_INT(event_decoder_init(&g_dec), 0);
}

static void check_events(const struct event *got, const struct event *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (got[i].ts_ns != want[i].ts_ns || got[i].value != want[i].value ||
            got[i].name != want[i].name || got[i].step != want[i].step ||
            got[i].kind != want[i].kind)
            TEST_FAIL("event %u of %u: got (ts %" PRId64 " value %" PRId64 " name %u step %u "
                      "kind %u), want (ts %" PRId64 " value %" PRId64 " name %u step %u kind %u)",
                      i, n, got[i].ts_ns, got[i].value, got[i].name, got[i].step, got[i].kind,
                      want[i].ts_ns, want[i].value, want[i].name, want[i].step, want[i].kind);
    }
}

static void check_info(const struct event_block_info *a, const struct event_block_info *b)
{
    ASSERT_EQ_INT(a->count, b->count);
    ASSERT_EQ_INT(a->start_ns, b->start_ns);
    ASSERT_EQ_INT(a->end_ns, b->end_ns);
    ASSERT_EQ_INT(a->step_min, b->step_min);
    ASSERT_EQ_INT(a->step_max, b->step_max);
}

/* Decode an exact copy of blk[0..len) and insist on want[0..n). */
static void check_decode(const uint8_t *blk, size_t len, const struct event *want, uint32_t n)
{
    uint8_t *copy = exact_copy(blk, len);
    struct event *out = malloc(sizeof(*out) * (n ? n : 1));
    uint32_t got = UINT32_MAX, peek = UINT32_MAX;

    ASSERT(out != NULL);
    ASSERT_EQ_INT(event_block_peek_count(copy, len, &peek), 0);
    ASSERT_EQ_INT(peek, n);
    ASSERT_EQ_INT(event_block_decode(&g_dec, copy, len, out, n, &got), 0);
    ASSERT_EQ_INT(got, n);
    check_events(out, want, n);
    free(out);
    free(copy);
}

/* Encode ev[0..n) into g_blk, check the summary, decode it back; the size. */
static size_t roundtrip(const struct event *ev, uint32_t n)
{
    struct event_block_info info, want;
    size_t len = 0;

    ASSERT_EQ_INT(event_block_encode(&g_enc, ev, n, g_blk, event_block_bound(n), &len, &info), 0);
    ASSERT(len <= event_block_bound(n));
    event_block_summarize(ev, n, &want);
    check_info(&info, &want);
    check_decode(g_blk, len, ev, n);
    return len;
}

/* A 64-bit value that is often an extreme, a small number or near one. */
static uint64_t edgy_u64(uint64_t *s)
{
    static const uint64_t edges[] = {0,
                                     1,
                                     UINT64_MAX,
                                     (uint64_t)INT64_MAX,
                                     (uint64_t)INT64_MAX + 1,
                                     UINT64_C(0x7ff8000000000000),
                                     UINT64_C(0x8000000000000001),
                                     127,
                                     128,
                                     UINT64_C(1) << 63 >> 1};
    switch (rng_below(s, 4)) {
    case 0:
        return edges[rng_below(s, ARRAY_SIZE(edges))];
    case 1:
        return rng_next(s) >> rng_below(s, 64);
    case 2:
        return edges[rng_below(s, ARRAY_SIZE(edges))] + rng_below(s, 5) - 2;
    default:
        return rng_next(s);
    }
}

static uint32_t edgy_u32(uint64_t *s)
{
    switch (rng_below(s, 4)) {
    case 0:
        return UINT32_MAX - (uint32_t)rng_below(s, 3);
    case 1:
        return (uint32_t)rng_below(s, 3);
    case 2:
        return (uint32_t)(rng_next(s) >> 32) >> rng_below(s, 32);
    default:
        return (uint32_t)rng_next(s);
    }
}

static void random_events(uint64_t *s, struct event *ev, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        ev[i].ts_ns = u2i(edgy_u64(s));
        ev[i].value = u2i(edgy_u64(s));
        ev[i].name = edgy_u32(s);
        ev[i].step = edgy_u32(s);
        ev[i].kind =
            (uint8_t)(rng_below(s, 2) ? STROBE_EV_SPAN_BEGIN + rng_below(s, 6) : rng_next(s) >> 56);
    }
}

TEST(golden_layout)
{
    /* A complete span, then a counter that starts earlier: see the "Event
     * blocks" section of docs/store-format.md. Too small to compress. */
    const struct event ev[] = {
        {.ts_ns = 1000, .value = 5, .name = 3, .step = 7, .kind = STROBE_EV_COMPLETE},
        {.ts_ns = 900,
         .value = INT64_C(0x3ff0000000000000),
         .name = 4,
         .step = 6,
         .kind = STROBE_EV_COUNTER},
    };
    static const uint8_t want[] = {
        0xeb, 0x01, 0x00, 0x02, 0x13,                   /* magic, version, raw, count 2, 19 bytes */
        0x04, 0x07,                                     /* kinds */
        0x03, 0x04,                                     /* names */
        0x0e, 0x01,                                     /* steps: +7, -1 */
        0x0a,                                           /* value 5 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, /* 1.0 */
        0xd0, 0x0f, 0xd1, 0x01, /* ts: +1000, then -105 from the span's end at 1005 */
    };
    struct event_block_info info;
    size_t len;

    codecs_init();
    ASSERT_EQ_INT(event_block_encode(&g_enc, ev, 2, g_blk, sizeof(g_blk), &len, &info), 0);
    ASSERT_EQ_U64(len, sizeof(want));
    for (size_t i = 0; i < len; i++)
        if (g_blk[i] != want[i])
            TEST_FAIL("byte %zu: 0x%02x, want 0x%02x", i, g_blk[i], want[i]);
    ASSERT_EQ_INT(info.count, 2);
    ASSERT_EQ_INT(info.start_ns, 900);
    ASSERT_EQ_INT(info.end_ns, 1005);
    ASSERT_EQ_INT(info.step_min, 6);
    ASSERT_EQ_INT(info.step_max, 7);
    check_decode(want, sizeof(want), ev, 2);
}

TEST(random_roundtrip)
{
    uint64_t s = 1;

    codecs_init();
    for (int iter = 0; iter < 300; iter++) {
        uint32_t n = (uint32_t)rng_below(&s, iter < 250 ? 300 : 5000);
        random_events(&s, g_ev, n);
        roundtrip(g_ev, n);
    }
}

TEST(extremes_roundtrip)
{
    static const int64_t big[] = {INT64_MIN, INT64_MAX, 0, -1, INT64_MIN + 1, INT64_MAX - 1};
    const uint32_t nb = ARRAY_SIZE(big);
    uint32_t n = 0;

    codecs_init();
    /* Every pair of extremes in both fields, so deltas wrap both ways. */
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t j = 0; j < nb; j++)
            for (uint8_t k = STROBE_EV_SPAN_BEGIN; k <= STROBE_EV_KIND_MAX; k++)
                g_ev[n++] = (struct event){.ts_ns = big[i],
                                           .value = big[j],
                                           .name = j & 1 ? UINT32_MAX : 0,
                                           .step = i & 1 ? UINT32_MAX : 0,
                                           .kind = k};
    roundtrip(g_ev, n);

    /* Every kind byte, STROBE_EV_NAME and 0 and 255 included. */
    for (uint32_t i = 0; i < 256; i++)
        g_ev[i] = (struct event){.ts_ns = T0_NS - (int64_t)i * 7,
                                 .value = u2i(UINT64_C(0x8000000000000000) >> (i % 64)),
                                 .name = UINT32_MAX - i,
                                 .step = UINT32_MAX - (i % 3),
                                 .kind = (uint8_t)i};
    roundtrip(g_ev, 256);

    /* One event of each extreme alone (the first ts is absolute). */
    for (uint32_t i = 0; i < nb; i++) {
        struct event e = {.ts_ns = big[i],
                          .value = big[nb - 1 - i],
                          .name = UINT32_MAX,
                          .step = UINT32_MAX,
                          .kind = STROBE_EV_COUNTER};
        roundtrip(&e, 1);
    }
}

TEST(empty_block)
{
    struct event_block_info info;
    size_t len = 0;
    uint32_t n = 7;

    codecs_init();
    ASSERT_EQ_INT(event_block_encode(&g_enc, NULL, 0, g_blk, event_block_bound(0), &len, &info), 0);
    ASSERT_EQ_U64(len, 5);
    ASSERT_EQ_INT(g_blk[2], 0); /* nothing to compress: raw */
    ASSERT_EQ_INT(info.count, 0);
    ASSERT_EQ_INT(info.start_ns, 0);
    ASSERT_EQ_INT(info.end_ns, 0);
    ASSERT_EQ_INT(info.step_min, 0);
    ASSERT_EQ_INT(info.step_max, 0);
    uint8_t *copy = exact_copy(g_blk, len);
    ASSERT_EQ_INT(event_block_peek_count(copy, len, &n), 0);
    ASSERT_EQ_INT(n, 0);
    n = 7;
    ASSERT_EQ_INT(event_block_decode(&g_dec, copy, len, NULL, 0, &n), 0);
    ASSERT_EQ_INT(n, 0);
    free(copy);
    /* Too small even for the header. */
    ASSERT_EQ_INT(event_block_encode(&g_enc, NULL, 0, g_blk, 4, &len, &info), -ENOSPC);
}

TEST(info_fields)
{
    struct event_block_info info;
    struct event ev[4];

    /* Start is the smallest ts wherever it is; end is the latest end,
     * which a complete span emitted last can set. */
    ev[0] = (struct event){.ts_ns = 500, .value = 100, .step = 9, .kind = STROBE_EV_COMPLETE};
    ev[1] = (struct event){.ts_ns = 700, .value = 1, .step = 10, .kind = STROBE_EV_STEP};
    ev[2] = (struct event){.ts_ns = 650, .value = 999999, .step = 10, .kind = STROBE_EV_INSTANT};
    ev[3] = (struct event){.ts_ns = 400, .value = 350, .step = 9, .kind = STROBE_EV_COMPLETE};
    event_block_summarize(ev, 4, &info);
    ASSERT_EQ_INT(info.count, 4);
    ASSERT_EQ_INT(info.start_ns, 400);
    ASSERT_EQ_INT(info.end_ns, 750);
    ASSERT_EQ_INT(info.step_min, 9);
    ASSERT_EQ_INT(info.step_max, 10);

    /* A span reaching past INT64_MAX saturates. */
    ev[0] = (struct event){.ts_ns = INT64_MAX - 10, .value = 11, .kind = STROBE_EV_COMPLETE};
    event_block_summarize(ev, 1, &info);
    ASSERT_EQ_INT(info.end_ns, INT64_MAX);
    ev[0].value = INT64_MAX;
    ev[0].ts_ns = 1;
    event_block_summarize(ev, 1, &info);
    ASSERT_EQ_INT(info.end_ns, INT64_MAX);
    ev[0].value = 10;
    ev[0].ts_ns = INT64_MAX - 10;
    event_block_summarize(ev, 1, &info);
    ASSERT_EQ_INT(info.end_ns, INT64_MAX);

    /* A negative length does not pull the end before the start. */
    ev[0] = (struct event){.ts_ns = INT64_MIN, .value = INT64_MIN, .kind = STROBE_EV_COMPLETE};
    event_block_summarize(ev, 1, &info);
    ASSERT_EQ_INT(info.start_ns, INT64_MIN);
    ASSERT_EQ_INT(info.end_ns, INT64_MIN);

    /* Only COMPLETE has a length: a counter's bits are not one. */
    ev[0] = (struct event){.ts_ns = 5, .value = INT64_MAX, .step = UINT32_MAX, .kind = 0};
    ev[1] = (struct event){.ts_ns = 6, .value = INT64_MAX, .kind = STROBE_EV_COUNTER};
    event_block_summarize(ev, 2, &info);
    ASSERT_EQ_INT(info.start_ns, 5);
    ASSERT_EQ_INT(info.end_ns, 6);
    ASSERT_EQ_INT(info.step_min, 0);
    ASSERT_EQ_INT(info.step_max, UINT32_MAX);

    /* And encode reports the same. */
    codecs_init();
    roundtrip(ev, 2);
}

/* Gaussian-looking noise (Irwin-Hall of four uniforms, unit variance). */
static double noise(uint64_t *s)
{
    double u = 0.0;
    for (int i = 0; i < 4; i++)
        u += (double)(rng_next(s) >> 11) / 9007199254740992.0;
    return (u - 2.0) * 1.7320508075688772;
}

static int64_t jittered_ns(uint64_t *s, double mean_ns, double rel_sigma)
{
    return (int64_t)(mean_ns + mean_ns * rel_sigma * noise(s));
}

/* Python-side gaps between phases: 3..40 us, any ns. */
static int64_t gap_ns(uint64_t *s)
{
    return 3 * NS_PER_US + (int64_t)rng_below(s, 37 * NS_PER_US);
}

/* Name ids of the training loop below. */
enum { NAME_DATA = 1, NAME_FORWARD, NAME_BACKWARD, NAME_OPTIMIZER, NAME_STEP, NAME_LOSS };

/*
 * One thread of a training loop. Each step: COMPLETE data (2 ms, sigma 10%),
 * forward (10 ms, 2%), backward (20 ms, 2%), optimizer (3 ms, 5%), a COUNTER
 * "loss" every 10 steps, STEP (the next step begins), then COMPLETE "step"
 * starting where data did, emitted last, so ts goes back ~35 ms. Returns how
 * many of n slots it filled (whole steps only).
 */
static uint32_t training_stream(uint64_t *s, struct event *ev, uint32_t n)
{
    static const double mean_ns[] = {2e6, 10e6, 20e6, 3e6};
    static const double sigma[] = {0.10, 0.02, 0.02, 0.05};
    int64_t t = T0_NS + (int64_t)rng_below(s, 1000000000);
    double loss = 2.5;
    uint32_t i = 0;

    for (uint32_t k = 0; i + 7 <= n; k++) {
        int64_t start = t;
        for (uint32_t ph = 0; ph < 4; ph++) {
            int64_t d = jittered_ns(s, mean_ns[ph], sigma[ph]);
            ev[i++] = (struct event){.ts_ns = t,
                                     .value = d,
                                     .name = NAME_DATA + ph,
                                     .step = k,
                                     .kind = STROBE_EV_COMPLETE};
            t += d + gap_ns(s);
        }
        if (k % 10 == 0) {
            loss = loss * 0.99 + 0.002 * noise(s);
            ev[i++] = (struct event){.ts_ns = t,
                                     .value = u2i(dbits(loss)),
                                     .name = NAME_LOSS,
                                     .step = k,
                                     .kind = STROBE_EV_COUNTER};
            t += 1000 + (int64_t)rng_below(s, 4000);
        }
        ev[i++] = (struct event){.ts_ns = t, .value = k + 1, .step = k + 1, .kind = STROBE_EV_STEP};
        ev[i++] = (struct event){.ts_ns = start,
                                 .value = t - start,
                                 .name = NAME_STEP,
                                 .step = k,
                                 .kind = STROBE_EV_COMPLETE};
        t += gap_ns(s);
    }
    return i;
}

TEST(realistic_stream_size)
{
    uint64_t s = 2024;

    codecs_init();
    uint32_t n = training_stream(&s, g_ev, 4096);
    ASSERT(n > 4080);
    size_t len = roundtrip(g_ev, n);
    double bpe = (double)len / (double)n;
    fprintf(stderr, "  # training loop: %u events, %zu bytes, %.3f bytes/event\n", n, len, bpe);
    ASSERT_EQ_INT(g_blk[2], EVENT_BLOCK_F_ZSTD);
    ASSERT(bpe <= 8.0);

    /* Kinds, names and steps compress to nearly nothing: what is left of
     * the same loop with every time and value equal is under 0.05 B/event. */
    for (uint32_t i = 0; i < n; i++) {
        g_ev[i].ts_ns = T0_NS;
        g_ev[i].value = 0;
    }
    len = roundtrip(g_ev, n);
    fprintf(stderr, "  # same loop, times and values constant: %zu bytes\n", len);
    ASSERT(len < 200);
}

/* A varint field whose zigzag code is in [128, 16384): two bytes, the first
 * uniform over 0x80..0xff and the second over 0x01..0x7f, so the payload's
 * bytes look uniform to zstd's order-0 literal coding. */
static uint64_t two_byte_zigzag(uint64_t *s)
{
    uint64_t z = 128 + rng_below(s, 16384 - 128);
    return (z >> 1) ^ (0 - (z & 1));
}

/* Events whose payload zstd cannot shrink: random kinds (a counter's 8
 * value bytes are random too) and two-byte varints everywhere else. */
static void incompressible_events(uint64_t *s, struct event *ev, uint32_t n)
{
    uint64_t ts = 0;
    uint32_t step = 0;

    for (uint32_t i = 0; i < n; i++) {
        ts += two_byte_zigzag(s);
        step += (uint32_t)two_byte_zigzag(s);
        ev[i] = (struct event){.ts_ns = u2i(ts),
                               .value = u2i(two_byte_zigzag(s)),
                               .name = 128 + (uint32_t)rng_below(s, 16384 - 128),
                               .step = step,
                               .kind = (uint8_t)rng_next(s)};
        if (ev[i].kind == STROBE_EV_COUNTER)
            ev[i].value = u2i(rng_next(s));
    }
}

TEST(incompressible_stored_raw)
{
    uint64_t s = 5;
    struct event_block_info info;
    size_t len, raw_len;
    uint32_t n = 3000;

    codecs_init();
    incompressible_events(&s, g_ev, n);
    raw_len = roundtrip(g_ev, n);
    ASSERT_EQ_INT(g_blk[2], 0);

    /* Exactly enough room works; one byte less is -ENOSPC, and nothing is
     * written past cap. */
    uint8_t *tight = malloc(raw_len);
    ASSERT(tight != NULL);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, n, tight, raw_len, &len, &info), 0);
    ASSERT_EQ_U64(len, raw_len);
    ASSERT(memcmp(tight, g_blk, len) == 0);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, n, tight, raw_len - 1, &len, &info), -ENOSPC);
    free(tight);

    /* A compressible block fits a cap below its raw size. */
    uint32_t m = training_stream(&s, g_ev, 2000);
    size_t zlen = roundtrip(g_ev, m);
    ASSERT_EQ_INT(g_blk[2], EVENT_BLOCK_F_ZSTD);
    tight = malloc(zlen);
    ASSERT(tight != NULL);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, m, tight, zlen, &len, &info), 0);
    ASSERT_EQ_U64(len, zlen);
    for (size_t cap = zlen - 3; cap < zlen; cap++)
        ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, m, tight, cap, &len, &info), -ENOSPC);
    free(tight);
}

/* Decoding blk[0..len) ends in 0 or -EBADMSG and never out of bounds. */
static int decode_any(const uint8_t *blk, size_t len)
{
    uint8_t *copy = exact_copy(blk, len);
    uint32_t n = UINT32_MAX;
    int rc = event_block_decode(&g_dec, copy, len, g_out, MAX_EVENTS, &n);

    ASSERT(rc == 0 || rc == -EBADMSG);
    if (rc == 0)
        ASSERT(n <= MAX_EVENTS);
    else
        ASSERT_EQ_INT(n, 0);
    free(copy);
    return rc;
}

/* A raw block of the training stream and a compressed one. */
static size_t sample_block(int compressed, uint8_t *blk, size_t cap, uint32_t *n)
{
    uint64_t s = 99;
    struct event_block_info info;
    size_t len;

    *n = 300;
    if (compressed)
        *n = training_stream(&s, g_ev, 300);
    else
        incompressible_events(&s, g_ev, 300);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, *n, blk, cap, &len, &info), 0);
    ASSERT_EQ_INT(blk[2], compressed ? EVENT_BLOCK_F_ZSTD : 0);
    return len;
}

TEST(truncations_are_ebadmsg)
{
    static uint8_t blk[300 * EVENT_MAX_BYTES + 64];
    uint32_t n;

    codecs_init();
    for (int z = 0; z <= 1; z++) {
        size_t len = sample_block(z, blk, sizeof(blk) - 1, &n);
        ASSERT_EQ_INT(decode_any(blk, len), 0);
        check_events(g_out, g_ev, n);
        for (size_t cut = 0; cut < len; cut++)
            if (decode_any(blk, cut) != -EBADMSG)
                TEST_FAIL("%s block of %zu bytes cut to %zu decodes", z ? "zstd" : "raw", len, cut);
        /* A byte too many is as wrong as one too few. */
        for (unsigned b = 0; b < 256; b += 51) {
            blk[len] = (uint8_t)b;
            ASSERT_EQ_INT(decode_any(blk, len + 1), -EBADMSG);
        }
    }
}

TEST(flipped_bytes_fail_cleanly)
{
    static uint8_t blk[300 * EVENT_MAX_BYTES + 64];
    uint64_t s = 3;
    uint32_t n;
    int clean = 0, bad = 0;

    codecs_init();
    for (int z = 0; z <= 1; z++) {
        size_t len = sample_block(z, blk, sizeof(blk), &n);
        for (size_t i = 0; i < len; i++) {
            for (int k = 0; k < 3; k++) {
                uint8_t keep = blk[i];
                blk[i] ^= (uint8_t)(k < 2 ? 1u << rng_below(&s, 8) : 1 + rng_below(&s, 255));
                if (decode_any(blk, len) == 0)
                    clean++;
                else
                    bad++;
                blk[i] = keep;
            }
        }
    }
    fprintf(stderr, "  # flips: %d decoded cleanly, %d rejected\n", clean, bad);
    ASSERT(bad > 0);
}

TEST(decode_cap_too_small)
{
    uint64_t s = 8;
    struct event_block_info info;
    size_t len;
    uint32_t n = 1000, got = 5, peek = 0;

    codecs_init();
    random_events(&s, g_ev, n);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, n, g_blk, sizeof(g_blk), &len, &info), 0);
    /* A heap array of exactly cap events: ASan sees any write past it. */
    struct event *out = malloc(sizeof(*out) * (n - 1));
    ASSERT(out != NULL);
    ASSERT_EQ_INT(event_block_decode(&g_dec, g_blk, len, out, n - 1, &got), -ENOSPC);
    ASSERT_EQ_INT(got, 0);
    ASSERT_EQ_INT(event_block_decode(&g_dec, g_blk, len, NULL, 0, &got), -ENOSPC);
    ASSERT_EQ_INT(event_block_peek_count(g_blk, len, &peek), 0);
    ASSERT_EQ_INT(peek, n);
    free(out);
    check_decode(g_blk, len, g_ev, n);
}

/* A block from hand-made parts: header bytes, then payload bytes. */
static size_t make_block(uint8_t *blk, const uint8_t *hdr, size_t hlen, const uint8_t *pay,
                         size_t plen)
{
    memcpy(blk, hdr, hlen);
    memcpy(blk + hlen, pay, plen);
    return hlen + plen;
}

#define BLOCK(hdr, pay)      make_block(blk, hdr, sizeof(hdr), pay, sizeof(pay))
#define ASSERT_BAD(hdr, pay) ASSERT_EQ_INT(decode_any(blk, BLOCK(hdr, pay)), -EBADMSG)

TEST(malformed_headers)
{
    uint8_t blk[64];
    uint32_t n;
    /* One event: kind 5, name 1, step +0, value 0, ts +1 (zigzag 2). */
    const uint8_t pay[] = {0x05, 0x01, 0x00, 0x00, 0x02};
    const uint8_t good[] = {0xeb, 0x01, 0x00, 0x01, 0x05};

    codecs_init();
    ASSERT_EQ_INT(decode_any(blk, BLOCK(good, pay)), 0);
    ASSERT_EQ_INT(g_out[0].kind, 5);
    ASSERT_EQ_INT(g_out[0].name, 1);
    ASSERT_EQ_INT(g_out[0].step, 0);
    ASSERT_EQ_INT(g_out[0].ts_ns, 1);
    ASSERT_EQ_INT(g_out[0].value, 0);

    const uint8_t magic[] = {0xea, 0x01, 0x00, 0x01, 0x05};
    const uint8_t v0[] = {0xeb, 0x00, 0x00, 0x01, 0x05};
    const uint8_t v2[] = {0xeb, 0x02, 0x00, 0x01, 0x05};
    const uint8_t flag2[] = {0xeb, 0x01, 0x02, 0x01, 0x05};
    const uint8_t flag80[] = {0xeb, 0x01, 0x80, 0x01, 0x05};
    const uint8_t count0[] = {0xeb, 0x01, 0x00, 0x00, 0x05}; /* 5 bytes for no event */
    const uint8_t count2[] = {0xeb, 0x01, 0x00, 0x02, 0x05}; /* 2 events in 5 bytes */
    const uint8_t long_count[] = {0xeb, 0x01, 0x00, 0x81, 0x00, 0x05};
    const uint8_t long_raw[] = {0xeb, 0x01, 0x00, 0x01, 0x85, 0x00};
    const uint8_t zstd_flag[] = {0xeb, 0x01, 0x01, 0x01, 0x05}; /* not a frame, not smaller */
    const uint8_t zstd_big[] = {0xeb, 0x01, 0x01, 0x01, 0x06};  /* not a frame */
    ASSERT_BAD(magic, pay);
    ASSERT_BAD(v0, pay);
    ASSERT_BAD(v2, pay);
    ASSERT_BAD(flag2, pay);
    ASSERT_BAD(flag80, pay);
    ASSERT_BAD(count0, pay);
    ASSERT_BAD(count2, pay);
    ASSERT_BAD(long_count, pay);
    ASSERT_BAD(long_raw, pay);
    ASSERT_BAD(zstd_flag, pay);
    ASSERT_BAD(zstd_big, pay);
    ASSERT_EQ_INT(event_block_peek_count(magic, sizeof(magic), &n), -EBADMSG);
    ASSERT_EQ_INT(event_block_peek_count(long_count, sizeof(long_count), &n), -EBADMSG);

    /* The count limit: peek reads the largest allowed count without
     * looking at the payload, and refuses one more. */
    const uint8_t max[] = {0xeb, 0x01, 0x00, 0x80, 0x80, 0x40, 0x80, 0x80, 0xc0, 0x02};
    const uint8_t over[] = {0xeb, 0x01, 0x00, 0x81, 0x80, 0x40, 0x80, 0x80, 0xc0, 0x02};
    /* 2^20 events need 5 * 2^20 payload bytes at least, and 31 * 2^20 at most. */
    const uint8_t max_small[] = {0xeb, 0x01, 0x00, 0x80, 0x80, 0x40, 0xff, 0xff, 0xbf, 0x02};
    const uint8_t max_big[] = {0xeb, 0x01, 0x00, 0x80, 0x80, 0x40, 0x81, 0x80, 0xc0, 0x0f};
    const uint8_t max_top[] = {0xeb, 0x01, 0x00, 0x80, 0x80, 0x40, 0x80, 0x80, 0xc0, 0x0f};
    ASSERT_EQ_INT(event_block_peek_count(max_small, sizeof(max_small), &n), -EBADMSG);
    ASSERT_EQ_INT(event_block_peek_count(max_big, sizeof(max_big), &n), -EBADMSG);
    ASSERT_EQ_INT(event_block_peek_count(max_top, sizeof(max_top), &n), 0);
    ASSERT_EQ_INT(event_block_peek_count(max, sizeof(max), &n), 0);
    ASSERT_EQ_INT(n, EVENT_BLOCK_MAX_EVENTS);
    ASSERT_EQ_INT(event_block_peek_count(over, sizeof(over), &n), -EBADMSG);
    /* Decode refuses it for the count before looking further. */
    ASSERT_EQ_INT(event_block_decode(&g_dec, max, sizeof(max), g_out, MAX_EVENTS, &n), -ENOSPC);
    ASSERT_EQ_INT(n, 0);
    /* A count varint longer than 32 bits. */
    const uint8_t huge[] = {0xeb, 0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x05};
    ASSERT_EQ_INT(event_block_peek_count(huge, sizeof(huge), &n), -EBADMSG);
    for (size_t cut = 0; cut < sizeof(good); cut++)
        ASSERT_EQ_INT(event_block_peek_count(good, cut, &n), -EBADMSG);
}

TEST(malformed_columns)
{
    uint8_t blk[64];
    const uint8_t h5[] = {0xeb, 0x01, 0x00, 0x01, 0x05};
    const uint8_t h6[] = {0xeb, 0x01, 0x00, 0x01, 0x06};
    const uint8_t h9[] = {0xeb, 0x01, 0x00, 0x01, 0x09};
    const uint8_t h12[] = {0xeb, 0x01, 0x00, 0x01, 0x0c};
    const uint8_t h13[] = {0xeb, 0x01, 0x00, 0x01, 0x0d};
    const uint8_t h14[] = {0xeb, 0x01, 0x00, 0x01, 0x0e};
    const uint8_t h15[] = {0xeb, 0x01, 0x00, 0x01, 0x0f};

    codecs_init();
    /* Not in shortest form, in each column. */
    const uint8_t long_name[] = {0x05, 0x81, 0x00, 0x00, 0x00, 0x02};
    const uint8_t long_step[] = {0x05, 0x01, 0x80, 0x00, 0x00, 0x02};
    const uint8_t long_ts[] = {0x05, 0x01, 0x00, 0x00, 0x82, 0x00};
    const uint8_t long_value[] = {0x05, 0x01, 0x00, 0x80, 0x00, 0x02};
    ASSERT_BAD(h6, long_name);
    ASSERT_BAD(h6, long_step);
    ASSERT_BAD(h6, long_ts);
    ASSERT_BAD(h6, long_value);

    /* 32-bit columns: 0x0f in the fifth byte is UINT32_MAX, 0x1f too much. */
    const uint8_t name_max[] = {0x05, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x00, 0x02};
    const uint8_t name_over[] = {0x05, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x00, 0x00, 0x02};
    const uint8_t step_over[] = {0x05, 0x01, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x00, 0x02};
    ASSERT_EQ_INT(decode_any(blk, BLOCK(h9, name_max)), 0);
    ASSERT_EQ_INT(g_out[0].name, UINT32_MAX);
    ASSERT_BAD(h9, name_over);
    ASSERT_BAD(h9, step_over);

    /* 64-bit columns: ten bytes ending in 0x01 is the most, 0x02 too much,
     * and an eleventh byte never comes. */
    const uint8_t ts_max[] = {0x05, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const uint8_t ts_over[] = {0x05, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff,
                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    const uint8_t ts_11[] = {0x05, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
                             0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00};
    ASSERT_EQ_INT(decode_any(blk, BLOCK(h14, ts_max)), 0);
    ASSERT_EQ_INT(g_out[0].ts_ns, INT64_MIN); /* zigzag 2^64 - 1 */
    ASSERT_BAD(h14, ts_over);
    ASSERT_BAD(h15, ts_11);

    /* A varint running off its payload, into bytes that are not there. */
    const uint8_t runs_off[] = {0x05, 0x01, 0x00, 0x00, 0x80};
    ASSERT_BAD(h5, runs_off);
    /* Columns that end before the payload does. */
    const uint8_t spare[] = {0x05, 0x01, 0x00, 0x00, 0x02, 0x00};
    ASSERT_BAD(h6, spare);

    /* A counter's value is 8 bytes: 1 is too few, and 8 decode exactly. */
    const uint8_t ctr_short[] = {0x07, 0x01, 0x00, 0x00, 0x02};
    const uint8_t ctr[] = {0x07, 0x01, 0x00, 1, 2, 3, 4, 5, 6, 7, 0x80, 0x02};
    const uint8_t ctr_spare[] = {0x07, 0x01, 0x00, 1, 2, 3, 4, 5, 6, 7, 0x80, 0x02, 0x00};
    ASSERT_BAD(h5, ctr_short);
    ASSERT_EQ_INT(decode_any(blk, BLOCK(h12, ctr)), 0);
    ASSERT_EQ_U64(g_out[0].value, UINT64_C(0x8007060504030201));
    ASSERT_BAD(h13, ctr_spare);
}

TEST(zstd_size_mismatch)
{
    static uint8_t blk[300 * EVENT_MAX_BYTES + 64], bad[300 * EVENT_MAX_BYTES + 64];
    uint32_t n;

    codecs_init();
    size_t len = sample_block(1, blk, sizeof(blk), &n);
    /* Header: magic, version, flags, count (2 bytes for ~300), raw size. */
    ASSERT_EQ_INT(blk[3], 0x80 | (n & 0x7f));
    ASSERT_EQ_INT(blk[4], n >> 7);
    size_t hlen = 5;
    uint64_t raw = 0;
    for (unsigned shift = 0;; shift += 7) {
        raw |= (uint64_t)(blk[hlen] & 0x7f) << shift;
        if (!(blk[hlen++] & 0x80))
            break;
    }
    ASSERT(raw > n * EVENT_MIN_BYTES + 1);
    ASSERT(raw < 0x4000); /* two varint bytes */
    /* The same frame under a header claiming one byte more or less. */
    for (int d = -1; d <= 1; d += 2) {
        uint64_t r = raw + (uint64_t)d;
        memcpy(bad, blk, len);
        bad[hlen - 2] = (uint8_t)(0x80 | (r & 0x7f));
        bad[hlen - 1] = (uint8_t)(r >> 7);
        ASSERT_EQ_INT(decode_any(bad, len), -EBADMSG);
    }
    /* Raw flag on a compressed payload. */
    memcpy(bad, blk, len);
    bad[2] = 0;
    ASSERT_EQ_INT(decode_any(bad, len), -EBADMSG);
    ASSERT_EQ_INT(decode_any(blk, len), 0);
}

TEST(garbage_never_crashes)
{
    uint64_t s = 31;
    uint8_t buf[600];
    int decoded = 0;

    codecs_init();
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)rng_below(&s, sizeof(buf) + 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rng_next(&s);
        /* Mostly a plausible header, so the payload checks are reached. */
        if (len >= 6 && rng_below(&s, 4)) {
            uint32_t n = (uint32_t)rng_below(&s, 100);
            buf[0] = EVENT_BLOCK_MAGIC;
            buf[1] = EVENT_BLOCK_VERSION;
            buf[2] = (uint8_t)rng_below(&s, 2);
            buf[3] = (uint8_t)n;
            /* A zstd payload must decompress to more than its own size. */
            size_t raw = len - 6 + (buf[2] ? 1 + rng_below(&s, 2000) : 0);
            buf[4] = (uint8_t)(0x80 | (raw & 0x7f));
            buf[5] = (uint8_t)(raw >> 7);
            /* Small names and steps, so whole columns parse more often. */
            for (size_t i = 6 + n; i < len && i < 6 + 3 * n; i++)
                buf[i] &= 0x7f;
        }
        if (decode_any(buf, len) == 0) {
            uint32_t n = 0;
            ASSERT_EQ_INT(event_block_peek_count(buf, len, &n), 0);
            memcpy(g_ev, g_out, sizeof(g_out[0]) * n);
            roundtrip(g_ev, n);
            decoded++;
        }
    }
    fprintf(stderr, "  # %d of 20000 random blocks decoded\n", decoded);
}

TEST(scratch_grows_and_limits)
{
    uint64_t s = 77;
    struct event_block_info info;
    size_t len;

    codecs_init();
    /* Small, then larger than the initial scratch, then small again. */
    random_events(&s, g_ev, 100);
    roundtrip(g_ev, 100);
    uint32_t n = training_stream(&s, g_ev, MAX_EVENTS);
    roundtrip(g_ev, n);
    random_events(&s, g_ev, MAX_EVENTS);
    roundtrip(g_ev, MAX_EVENTS);
    roundtrip(g_ev, 10);
    ASSERT_EQ_INT(event_block_encode(&g_enc, g_ev, EVENT_BLOCK_MAX_EVENTS + 1, g_blk, sizeof(g_blk),
                                     &len, &info),
                  -EINVAL);
    /* Release twice is harmless, and so is a fresh init afterwards. */
    event_encoder_release(&g_enc);
    event_encoder_release(&g_enc);
    event_decoder_release(&g_dec);
    event_decoder_release(&g_dec);
    codecs_init();
    roundtrip(g_ev, 1000);
    event_encoder_release(&g_enc);
    event_decoder_release(&g_dec);
}

TEST_MAIN(golden_layout, random_roundtrip, extremes_roundtrip, empty_block, info_fields,
          realistic_stream_size, incompressible_stored_raw, truncations_are_ebadmsg,
          flipped_bytes_fail_cleanly, decode_cap_too_small, malformed_headers, malformed_columns,
          zstd_size_mismatch, garbage_never_crashes, scratch_grows_and_limits)
