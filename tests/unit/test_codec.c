/*
 * Property and adversarial tests for the series block codec. Values are
 * always compared as bit patterns: the codec promises bit-exactness, which
 * == on doubles cannot check (NaN != NaN, -0.0 == 0.0).
 *
 * The property tests run twice, on format 2 (what strobe writes) and on
 * format 1 (what older stores hold): BOTH_FORMATS(name) defines name and
 * name_legacy.
 */
#include "codec/gorilla.h"
#include "common/array.h"

#include <errno.h>
#include <float.h>

#include "test.h"

#define CANARY      0xa5
#define CANARY_LEN  32
#define MAX_POINTS  8192
#define U64_SIGN    UINT64_C(0x8000000000000000)
#define NS_PER_MS   INT64_C(1000000)
#define INTERVAL_NS (100 * NS_PER_MS)
/* A buffer no series of n points can fill: 22 bytes a point holds the
 * worst point (170 bits), and 32 the room append demands. */
#define ROOMY(n) ((size_t)(n)*22 + 32)

static int g_legacy; /* encode format 1 */

static void enc_init(struct block_enc *e, uint8_t *buf, size_t cap)
{
    if (g_legacy)
        block_enc_init_legacy(e, buf, cap);
    else
        block_enc_init(e, buf, cap);
}

#define BOTH_FORMATS(name)                                                                         \
    static void both_##name(void);                                                                 \
    TEST(name)                                                                                     \
    {                                                                                              \
        g_legacy = 0;                                                                              \
        both_##name();                                                                             \
    }                                                                                              \
    TEST(name##_legacy)                                                                            \
    {                                                                                              \
        g_legacy = 1;                                                                              \
        both_##name();                                                                             \
    }                                                                                              \
    static void both_##name(void)

struct point {
    int64_t ts;
    double v;
};

static struct point g_pts[MAX_POINTS];
static struct point g_out[MAX_POINTS];

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

/* Offset binary: keeps unsigned order as signed order, for sorted extremes. */
static int64_t ordered_i64(uint64_t u)
{
    return u2i(u ^ U64_SIGN);
}

static int is_nan_bits(uint64_t u)
{
    return (u & ~U64_SIGN) > UINT64_C(0x7ff0000000000000);
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static void fill_random(uint64_t *s, uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)rng_next(s);
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

/* Append until the first refusal; returns how many points went in. */
static uint32_t encode_points(struct block_enc *e, const struct point *pts, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = block_enc_append(e, pts[i].ts, pts[i].v);
        if (rc == -ENOSPC)
            return i;
        ASSERT_EQ_INT(rc, 0);
    }
    return n;
}

/* Decodes count points from an exact copy of buf[0..len) and compares. */
static void check_decode(const uint8_t *buf, size_t len, const struct point *pts, uint32_t count)
{
    uint8_t *copy = exact_copy(buf, len);
    struct block_dec d;
    int64_t ts;
    double v;

    block_dec_init(&d, copy, len, count, count ? pts[0].ts : 0);
    for (uint32_t i = 0; i < count; i++) {
        int rc = block_dec_next(&d, &ts, &v);
        if (rc != 1)
            TEST_FAIL("point %u of %u: rc %d", i, count, rc);
        ASSERT_EQ_U64(ts, pts[i].ts);
        ASSERT_EQ_U64(dbits(v), dbits(pts[i].v));
    }
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 0);
    free(copy);
}

static void check_block(const struct block_enc *e, const struct point *pts)
{
    check_decode(e->buf, block_enc_size(e), pts, e->st.count);
}

static void check_stats(const struct block_stats *st, const struct point *pts, uint32_t n)
{
    double mn = bdbl(UINT64_C(0x7ff8000000000000)), mx = mn, sum = 0.0;
    int seen = 0;

    ASSERT_EQ_INT(st->count, n);
    for (uint32_t i = 0; i < n; i++) {
        double v = pts[i].v;
        if (is_nan_bits(dbits(v)))
            continue;
        if (!seen) {
            mn = mx = sum = v;
            seen = 1;
            continue;
        }
        if (v < mn)
            mn = v;
        if (v > mx)
            mx = v;
        sum += v;
    }
    if (n) {
        ASSERT_EQ_U64(st->start_ns, pts[0].ts);
        ASSERT_EQ_U64(st->end_ns, pts[n - 1].ts);
        ASSERT_EQ_U64(dbits(st->first), dbits(pts[0].v));
        ASSERT_EQ_U64(dbits(st->last), dbits(pts[n - 1].v));
    }
    if (!seen) {
        ASSERT(isnan(st->min));
        ASSERT(isnan(st->max));
        ASSERT_EQ_U64(dbits(st->sum), dbits(0.0));
    } else {
        ASSERT(!isnan(st->min));
        ASSERT(!isnan(st->max));
        ASSERT_EQ_U64(dbits(st->min), dbits(mn));
        ASSERT_EQ_U64(dbits(st->max), dbits(mx));
        ASSERT_EQ_U64(dbits(st->sum), dbits(sum));
    }
}

/* Encode into a roomy buffer, check decode, stats and the canary. */
static void roundtrip(const struct point *pts, uint32_t n)
{
    size_t cap = ROOMY(n);
    uint8_t *buf = malloc(cap + CANARY_LEN);
    uint64_t s = 0x1234;
    struct block_enc e;

    ASSERT(buf != NULL);
    fill_random(&s, buf, cap);
    memset(buf + cap, CANARY, CANARY_LEN);
    enc_init(&e, buf, cap);
    ASSERT_EQ_INT(encode_points(&e, pts, n), n);
    check_block(&e, pts);
    check_stats(&e.st, pts, n);
    for (size_t i = 0; i < CANARY_LEN; i++)
        ASSERT_EQ_INT(buf[cap + i], CANARY);
    free(buf);
}

static const uint64_t special_bits[] = {
    UINT64_C(0x7ff8000000000000), /* quiet NaN */
    UINT64_C(0xfff8000000000000), /* negative quiet NaN */
    UINT64_C(0x7ff0000000000001), /* signalling NaN, smallest payload */
    UINT64_C(0x7ff4000000000000), /* signalling NaN */
    UINT64_C(0x7fffffffffffffff), /* NaN, all payload bits */
    UINT64_C(0xffffffffffffffff), /* negative NaN, all payload bits */
    UINT64_C(0x7ff8000000000001), UINT64_C(0x7ff0000000000000), /* +Inf */
    UINT64_C(0xfff0000000000000),                               /* -Inf */
    UINT64_C(0x0000000000000000),                               /* +0.0 */
    UINT64_C(0x8000000000000000),                               /* -0.0 */
    UINT64_C(0x0000000000000001),                               /* smallest denormal */
    UINT64_C(0x800fffffffffffff),                               /* largest -denormal */
    UINT64_C(0x000fffffffffffff), UINT64_C(0x0010000000000000), /* DBL_MIN */
    UINT64_C(0x7fefffffffffffff),                               /* DBL_MAX */
    UINT64_C(0xffefffffffffffff),                               /* -DBL_MAX */
    UINT64_C(0x3ff0000000000000),                               /* 1.0 */
};
#define N_SPECIAL (ARRAY_SIZE(special_bits))

static double random_value(uint64_t *s, int mode, double prev)
{
    switch (mode) {
    case 0:
        return bdbl(rng_next(s));
    case 1:
        return (double)(int64_t)rng_below(s, 1000);
    case 2:
        return prev + (double)(int64_t)(rng_below(s, 2001) - 1000) / 100.0;
    case 3:
        return rng_below(s, 4) ? prev : bdbl(rng_next(s));
    case 4:
        return bdbl(special_bits[rng_below(s, N_SPECIAL)]);
    case 5:
        /* A few flipped bits: exercises window reuse and regrowth. */
        return bdbl(dbits(prev) ^ (UINT64_C(1) << rng_below(s, 64)));
    case 6:
        return bdbl(rng_next(s) & rng_next(s) & rng_next(s));
    case 7: /* decimals: k / 10^d, or k * 10^-d */
    {
        /* one draw a statement: the order of a call's arguments, or of an
         * operator's operands, is unspecified, and builds differ */
        int d = (int)rng_below(s, 25) - 15;
        int64_t big = (int64_t)rng_below(s, UINT64_C(1) << rng_below(s, 54));
        int64_t small = (int64_t)rng_below(s, 1000);
        double k = (double)(big - small);
        return d > 0 ? k / pow(10, d) : k * pow(10, -d);
    }
    default: /* binary fractions and multiples near the last value */
    {
        int near = rng_below(s, 2) && isfinite(prev);
        double m = near ? (double)((int64_t)rng_below(s, 2001) - 1000)
                        : (double)(int64_t)rng_next(s) / 1024.0;
        int e = near ? (int)rng_below(s, 64) - 32 : (int)rng_below(s, 80) - 40;
        return near ? prev + ldexp(m, e) : ldexp(m, e);
    }
    }
}

/* Strictly increasing times; returns how many fit below INT64_MAX. */
static uint32_t random_series(uint64_t *s, struct point *pts, uint32_t n)
{
    int tmode = (int)rng_below(s, 5);
    int vmode = (int)rng_below(s, 10);
    uint64_t t;
    double v = 0.0;

    switch (rng_below(s, 3)) {
    case 0:
        t = rng_next(s);
        break;
    case 1:
        t = U64_SIGN; /* INT64_MIN */
        break;
    default:
        t = UINT64_C(1700000000000000000);
        break;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (i) {
            uint64_t delta;
            switch (tmode) {
            case 0:
                delta = (uint64_t)INTERVAL_NS;
                break;
            case 1:
                delta = (uint64_t)INTERVAL_NS - (uint64_t)NS_PER_MS + rng_below(s, 2000000);
                break;
            case 2:
                delta = 1 + rng_below(s, 100);
                break;
            case 3:
                delta = 1 + (rng_next(s) >> rng_below(s, 64));
                break;
            default:
                delta = 1 + rng_below(s, UINT64_C(1) << rng_below(s, 40));
                break;
            }
            /* t is the ordered (offset) form; stop short of wrapping. */
            uint64_t ot = t ^ U64_SIGN;
            if (ot > UINT64_MAX - delta)
                return i;
            t = (ot + delta) ^ U64_SIGN;
        }
        int m = vmode == 9 ? (int)rng_below(s, 9) : vmode;
        v = random_value(s, m, v);
        pts[i].ts = u2i(t);
        pts[i].v = v;
    }
    return n;
}

/* "0101..." as MSB-first bytes into out (zero-padded); the bit count. */
static size_t bits_from_text(const char *text, uint8_t *out, size_t cap)
{
    size_t n = 0;
    memset(out, 0, cap);
    for (const char *c = text; *c; c++) {
        if (*c == ' ')
            continue;
        ASSERT(n / 8 < cap);
        if (*c == '1')
            out[n / 8] = (uint8_t)(out[n / 8] | (0x80u >> (n % 8)));
        n++;
    }
    return n;
}

TEST(golden_layouts)
{
    /* Format 1, hand-assembled from docs/store-format.md: dod 2 ('10'), a
     * new window ('11', L=1, N=12), dod -1, and a window reuse ('10'). */
    static const uint8_t want[] = {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x3f, 0xf0, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x81, 0x18, 0x4c, 0xff, 0xfb, 0xfd, 0xff, 0xe0,
    };
    static const struct point pts[] = {{1, 1.0}, {3, 1.0}, {5, 3.0}, {6, 1.0}};
    uint8_t buf[64], want2[64];
    struct block_enc e;

    memset(buf, 0xff, sizeof(buf));
    block_enc_init_legacy(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, pts, 4), 4);
    ASSERT_EQ_U64(e.bits, 128 + 59);
    ASSERT_EQ_U64(block_enc_size(&e), sizeof(want));
    ASSERT(memcmp(buf, want, sizeof(want)) == 0);
    check_block(&e, pts);

    /* Format 2, the same way, field by field as docs/store-format.md. */
    const struct point pts2[] = {{1000, 1.0}, {1002, 1.0},
                                 {1004, 3.0}, {1005, 1.0},
                                 {1007, 1.5}, {1008, bdbl(UINT64_C(0x7ff8000000000000))}};
    const char *text = "10010010"           /* the tag */
                       "0010000 000010 10"  /* 1.0: mode 16 (10^0), k 1 as zigzag 2 */
                       "10 0000010  0"      /* dod +2; the value repeats */
                       "0  1 10 00"         /* dod 0; k 3 from 1: z 4, r 2: q 1, low 00 */
                       "10 1111111  1 0 11" /* dod -1; k 1 from 3: z 3, r 2: q 0, low 11 */
                       "10 0000001  1111111111111111111" /* dod +1; 1.5 leaves 10^0: a switch */
                       "1011111 000010 10"               /* mode 95 (2^-1): k 3 from 1.0's 2, z 2 */
                       "10 1111111  1111111111111111111" /* dod -1; NaN leaves 2^-1: a switch */
                       "0000000 00001 000001 1";         /* mode 0 (XOR): L 1, N 1, the bit */
    size_t nbits = bits_from_text(text, want2, sizeof(want2));
    memset(buf, 0xff, sizeof(buf));
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, pts2, 6), 6);
    ASSERT_EQ_INT(e.format, 2);
    ASSERT_EQ_U64(e.bits, nbits);
    ASSERT(memcmp(buf, want2, (nbits + 7) / 8) == 0);
    check_block(&e, pts2);
}

/* Format 1 or 2 is told from the start time: format 2's tag is never the
 * top byte of a format 2 block's start. */
TEST(format_detection)
{
    uint8_t buf[256];
    struct block_enc e;
    struct block_dec d;
    int64_t ts;
    double v;
    /* starts whose top byte is the tag: the encoder falls back to format 1 */
    const int64_t tagged = u2i(UINT64_C(0x92) << 56),
                  tagged_end = u2i(UINT64_C(0x92ffffffffffff00));
    const struct point at_tag[] = {{tagged, 1.5}, {tagged + 7, 2.5}};
    const struct point at_end[] = {{tagged_end, 0.25}, {tagged_end + 1, 0.5}};
    const struct point before[] = {{tagged - 1, 3.0}, {tagged, 4.0}};
    const struct point now[] = {{INT64_C(1767225600000000000), 61.25},
                                {INT64_C(1767225600100000000), 62.0}};

    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, at_tag, 2), 2);
    ASSERT_EQ_INT(e.format, 1);
    check_block(&e, at_tag);
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, at_end, 2), 2);
    ASSERT_EQ_INT(e.format, 1);
    check_block(&e, at_end);
    /* cut to fewer than its 8 bytes of start, such a block begins with the
     * tag, and is still not read as format 2 */
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, at_tag, 2), 2);
    for (size_t len = 1; len < 8; len++) {
        block_dec_init(&d, buf, len, 2, at_tag[0].ts);
        ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);
    }
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, before, 2), 2);
    ASSERT_EQ_INT(e.format, 2);
    check_block(&e, before);

    /* A format 1 block read with another start is corrupt, not misread. */
    block_enc_init_legacy(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, now, 2), 2);
    block_dec_init(&d, buf, block_enc_size(&e), 2, now[0].ts + 1);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);
    block_dec_init(&d, buf, block_enc_size(&e), 2, now[0].ts);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_U64(dbits(v), dbits(61.25));

    /* A format 2 block without its tag is corrupt; with it, its times come
     * from the start it is given. */
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, now, 2), 2);
    ASSERT_EQ_INT(e.format, 2);
    ASSERT_EQ_INT(buf[0], 0x92);
    block_dec_init(&d, buf, block_enc_size(&e), 2, now[0].ts);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(ts, now[0].ts);
    buf[0] = 0x93;
    block_dec_init(&d, buf, block_enc_size(&e), 2, now[0].ts);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);
}

/* The scale each kind of value lands in, and that each round-trips. */
TEST(scaled_values)
{
    static const struct {
        double v;
        unsigned mode; /* 0 XOR, 1..31 10^(16-m)... as docs/store-format.md */
    } cases[] = {
        {550.123, 19},                /* watts from mW: 10^-3 */
        {61.015625, 90},              /* 1/64 %: 2^-6 */
        {412316860416.0 + 4096, 108}, /* bytes in pages: 2^12 */
        {1099511627776.0, 127},       /* 1 TiB: 2^40, held as 2^9 * 2^31 */
        {70.0, 15},                   /* ticks as 10 %: 10^1 */
        {9007199254740991.0, 16},     /* 2^53 - 1: an integer, the tie to decimal */
        {9007199254740992.0, 127},    /* 2^53: 2^22 * 2^31 */
        {-3.25, 94},                  /* -13 * 2^-2 */
        {0.0, 16},                    /* +0.0: k 0 */
        {-0.0, 0},                    /* no scale gives -0.0 back */
        {0.1 + 0.2, 0},               /* an arbitrary double */
        {1e300, 0},                   /* too coarse for k * 2^31 */
        {5e-324, 0},                  /* subnormal */
    };
    uint8_t buf[256];
    struct block_enc e;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const struct point pts[] = {{100, cases[i].v}, {200, cases[i].v}, {300, 1.0}};
        block_enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, pts, 1), 1);
        if (e.sm.mode != cases[i].mode)
            TEST_FAIL("%.17g: mode %u, want %u", cases[i].v, e.sm.mode, cases[i].mode);
        ASSERT_EQ_INT(encode_points(&e, pts + 1, 2), 2);
        check_block(&e, pts);
    }

    /* An excursion to NaN goes back to the block's scale, not a coarser one
     * that 52.0 alone would pick. */
    const struct point trip[] = {{1, 51.015625},
                                 {2, 51.5},
                                 {3, bdbl(UINT64_C(0x7ff8000000000000))},
                                 {4, 52.0},
                                 {5, 52.03125}};
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, trip, 4), 4);
    ASSERT_EQ_INT(e.sm.mode, 90);
    ASSERT_EQ_INT(encode_points(&e, trip + 4, 1), 1);
    check_block(&e, trip);

    /* Arbitrary doubles, then integers: the search for a scale backs off
     * while it fails (32 values at most), and finds one once it can. */
    uint64_t r = 99;
    for (uint32_t i = 0; i < 300; i++) {
        double x = i < 200 ? bdbl(UINT64_C(0x3ff0000000000000) | (rng_next(&r) >> 12))
                           : (double)(1000 + i % 7);
        g_pts[i] = (struct point){INT64_C(1767225600000000000) + (int64_t)i * INTERVAL_NS, x};
    }
    static uint8_t roomy[ROOMY(300)];
    block_enc_init(&e, roomy, sizeof(roomy));
    ASSERT_EQ_INT(encode_points(&e, g_pts, 200), 200);
    ASSERT_EQ_INT(e.sm.mode, 0);
    ASSERT(e.search_backoff == 32);
    ASSERT_EQ_INT(encode_points(&e, g_pts + 200, 34), 34);
    ASSERT(e.sm.mode != 0); /* some scale of integers */
    check_block(&e, g_pts);

    /* A counter: the line through the last two predicts; its residuals are
     * what the Rice code is sized by. */
    double c = 1e6;
    for (uint32_t i = 0; i < 1000; i++) {
        c += 55.0 + (double)(i % 7);
        g_pts[i] = (struct point){INT64_C(1767225600000000000) + (int64_t)i * INTERVAL_NS, c};
    }
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, g_pts, 200), 200);
    ASSERT(e.sm.sum2 < e.sm.sum1);
    check_block(&e, g_pts);
}

BOTH_FORMATS(dod_bucket_boundaries)
{
    static const struct {
        int64_t dod;
        unsigned bits;
    } cases[] = {
        {0, 1},
        {1, 9},
        {-1, 9},
        {64, 9},
        {-63, 9},
        {65, 12},
        {-64, 12},
        {256, 12},
        {-255, 12},
        {257, 16},
        {-256, 16},
        {2048, 16},
        {-2047, 16},
        {2049, 37},
        {-2048, 37},
        {INT64_C(2147483648), 37},
        {-INT64_C(2147483647), 37},
        {INT64_C(2147483649), 69},
        {-INT64_C(2147483648), 69},
        {INT64_C(1) << 50, 69},
    };
    const int64_t base = INT64_C(1) << 40;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct point pts[3] = {{0, 5.0}, {base, 5.0}, {2 * base + cases[i].dod, 5.0}};
        uint8_t buf[128];
        struct block_enc e;

        enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, pts, 2), 2);
        size_t before = e.bits;
        ASSERT_EQ_INT(block_enc_append(&e, pts[2].ts, pts[2].v), 0);
        /* +1 for the repeated value's '0'. */
        if (e.bits - before != cases[i].bits + 1)
            TEST_FAIL("dod %lld: %zu bits, want %u", (long long)cases[i].dod, e.bits - before,
                      cases[i].bits + 1);
        check_block(&e, pts);
    }
}

BOTH_FORMATS(xor_window_edges)
{
    /* 64 meaningful bits (N written as 0), its reuse, 63 leading zeros (L
     * capped at 31), then a window that must regrow. */
    const struct point pts[] = {
        {10, bdbl(0)},
        {20, bdbl(UINT64_C(0x8000000000000001))},
        {30, bdbl(0)},
        {40, bdbl(1)},
        {50, bdbl(0)},
        {60, bdbl(UINT64_C(0x8000000000000000))},
        {70, bdbl(UINT64_C(0x8000000000000000))},
        {80, bdbl(UINT64_C(0x0000000100000000))},
        {90, bdbl(UINT64_C(0x0000000180000000))},
    };
    roundtrip(pts, ARRAY_SIZE(pts));
}

BOTH_FORMATS(random_series_roundtrip)
{
    uint64_t s = 0x9e3779b97f4a7c15;
    static uint8_t buf[ROOMY(MAX_POINTS) + CANARY_LEN];
    static uint8_t clean[ROOMY(MAX_POINTS)];

    for (int iter = 0; iter < 4000; iter++) {
        uint32_t want = 1 + (uint32_t)rng_below(&s, rng_below(&s, 4) ? 300 : 3000);
        uint32_t n = random_series(&s, g_pts, want);
        size_t cap;
        if (rng_below(&s, 3))
            cap = ROOMY(n);
        else
            cap = (size_t)rng_below(&s, (uint64_t)n * 10 + 40);
        struct block_enc e, z;

        fill_random(&s, buf, cap);
        memset(buf + cap, CANARY, CANARY_LEN);
        enc_init(&e, buf, cap);
        uint32_t k = encode_points(&e, g_pts, n);
        if (k < n) {
            /* Refusal is exact and idempotent. */
            ASSERT(e.bits + GORILLA_MAX_POINT_BITS > cap * 8);
            size_t bits = e.bits;
            ASSERT_EQ_INT(block_enc_append(&e, g_pts[k].ts, g_pts[k].v), -ENOSPC);
            ASSERT_EQ_U64(e.bits, bits);
            ASSERT_EQ_INT(e.st.count, k);
        }
        for (size_t i = 0; i < CANARY_LEN; i++)
            ASSERT_EQ_INT(buf[cap + i], CANARY);
        check_block(&e, g_pts);
        check_stats(&e.st, g_pts, k);

        /* Garbage in the caller's buffer must not leak into the stream. */
        memset(clean, 0, sizeof(clean));
        enc_init(&z, clean, sizeof(clean));
        ASSERT_EQ_INT(encode_points(&z, g_pts, k), k);
        ASSERT_EQ_U64(z.bits, e.bits);
        ASSERT(memcmp(clean, buf, block_enc_size(&e)) == 0);
    }
}

BOTH_FORMATS(regular_with_jitter)
{
    uint64_t s = 42;
    int64_t t = INT64_C(1700000000000000000);
    double v = 50.0;

    for (uint32_t i = 0; i < 5000; i++) {
        t += INTERVAL_NS + (int64_t)rng_below(&s, 2000001) - NS_PER_MS;
        v += (double)((int64_t)rng_below(&s, 21) - 10) / 10.0;
        g_pts[i].ts = t;
        g_pts[i].v = v;
    }
    roundtrip(g_pts, 5000);
}

BOTH_FORMATS(nan_payloads)
{
    static const uint64_t nans[] = {
        UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000), UINT64_C(0x7ff0000000000001),
        UINT64_C(0x7ff4000000000000), UINT64_C(0x7fffffffffffffff), UINT64_C(0xffffffffffffffff),
        UINT64_C(0x7ff8000000000001), UINT64_C(0xfff0000000000001), UINT64_C(0x7ff8dead0000beef),
    };
    const uint32_t nn = ARRAY_SIZE(nans);
    uint32_t n = 0;

    for (uint32_t i = 0; i < nn; i++) {
        g_pts[n].ts = (int64_t)n * 1000;
        g_pts[n++].v = bdbl(nans[i]);
        g_pts[n].ts = (int64_t)n * 1000;
        g_pts[n++].v = bdbl(nans[i]);
        g_pts[n].ts = (int64_t)n * 1000;
        g_pts[n++].v = (double)i - 3.0;
        g_pts[n].ts = (int64_t)n * 1000;
        g_pts[n++].v = bdbl(nans[(i + 3) % nn]);
    }
    g_pts[n].ts = (int64_t)n * 1000;
    g_pts[n++].v = bdbl(nans[5]);
    roundtrip(g_pts, n);

    /* Only NaNs: no min/max, sum stays 0, first/last keep their payloads. */
    for (uint32_t i = 0; i < nn; i++) {
        g_pts[i].ts = (int64_t)i;
        g_pts[i].v = bdbl(nans[i]);
    }
    roundtrip(g_pts, nn);
}

BOTH_FORMATS(inf_and_signed_zero)
{
    const double pinf = bdbl(UINT64_C(0x7ff0000000000000));
    const double ninf = bdbl(UINT64_C(0xfff0000000000000));
    const struct point zeros[] = {{1, 0.0}, {2, -0.0}, {3, 0.0}, {4, -0.0}, {5, -0.0}, {6, 0.0}};
    const struct point infs[] = {{1, pinf}, {2, 1.0}, {3, pinf}, {4, -2.0}, {5, pinf}};
    const struct point both[] = {{-5, ninf}, {0, pinf}, {7, -0.0}, {9, ninf}, {11, pinf}};
    uint8_t buf[256];
    struct block_enc e;

    roundtrip(zeros, 6);
    roundtrip(infs, 5);
    roundtrip(both, 5);

    enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, zeros, 6), 6);
    ASSERT_EQ_U64(dbits(e.st.first), dbits(0.0));
    ASSERT_EQ_U64(dbits(e.st.last), dbits(0.0));
    ASSERT(e.st.min == 0.0 && e.st.max == 0.0 && e.st.sum == 0.0);

    enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, infs, 5), 5);
    ASSERT(e.st.max == pinf && e.st.min == -2.0 && e.st.sum == pinf);

    enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, both, 5), 5);
    ASSERT(e.st.min == ninf && e.st.max == pinf);
    ASSERT(isnan(e.st.sum)); /* IEEE: Inf + -Inf */
}

BOTH_FORMATS(denormals)
{
    uint64_t s = 7;
    uint32_t n = 3000;

    for (uint32_t i = 0; i < n; i++) {
        uint64_t mant = rng_next(&s) & UINT64_C(0x000fffffffffffff);
        if (!rng_below(&s, 5))
            mant = UINT64_C(1) << rng_below(&s, 52);
        g_pts[i].ts = (int64_t)i * 7 + (int64_t)rng_below(&s, 3);
        g_pts[i].v = bdbl(mant | (rng_below(&s, 2) ? U64_SIGN : 0));
    }
    roundtrip(g_pts, n);
    ASSERT_EQ_U64(dbits(5e-324), 1);
}

BOTH_FORMATS(constant_series)
{
    static const uint64_t consts[] = {
        UINT64_C(0),
        UINT64_C(0x8000000000000000),
        UINT64_C(0x7ff8000000000000),
        UINT64_C(0x7ff0000000000000),
        UINT64_C(0x400921fb54442d18),
        UINT64_C(0x0000000000000001),
    };
    static uint8_t buf[4096];

    for (size_t c = 0; c < ARRAY_SIZE(consts); c++) {
        struct block_enc e;
        for (uint32_t i = 0; i < 5000; i++) {
            g_pts[i].ts = INT64_C(-1000000000) + (int64_t)i * INTERVAL_NS;
            g_pts[i].v = bdbl(consts[c]);
        }
        enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, g_pts, 5000), 5000);
        /* The first point (format 1: raw; format 2: the tag, a mode, then
         * +0.0 as k = 0 in a 6-bit length, anything else raw in XOR mode),
         * the second a 32-bit dod and a repeat, then '0' '0'. */
        size_t first = g_legacy ? 128 : consts[c] == 0 ? 8 + 7 + 6 : 8 + 7 + 64;
        ASSERT_EQ_U64(e.bits, first + 37 + 1 + 4998 * 2);
        check_block(&e, g_pts);
        check_stats(&e.st, g_pts, 5000);
    }
}

BOTH_FORMATS(huge_timestamp_jumps)
{
    static const int64_t seqs[][5] = {
        {INT64_MIN, INT64_MAX, 0, 0, 0},
        {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX, 0},
        {INT64_MIN, 0, INT64_MAX, 0, 0},
        {INT64_MIN, -1, 0, INT64_MAX, 0},
        {-1, 0, 1, INT64_MAX, 0},
        {INT64_MIN, INT64_MIN + 1, INT64_MIN + 2, INT64_MAX - 1, INT64_MAX},
        {INT64_MIN, INT64_MAX - 1, INT64_MAX, 0, 0},
        {INT64_MAX, 0, 0, 0, 0},
    };
    static const uint32_t lens[] = {2, 4, 3, 4, 4, 5, 3, 1};
    uint64_t s = 99;

    for (size_t q = 0; q < ARRAY_SIZE(lens); q++) {
        struct point pts[5];
        for (uint32_t i = 0; i < lens[q]; i++) {
            pts[i].ts = seqs[q][i];
            pts[i].v = (double)i;
        }
        roundtrip(pts, lens[q]);
    }

    /* Random sorted draws over the whole range, ends included. */
    for (int iter = 0; iter < 2000; iter++) {
        uint32_t n = 2 + (uint32_t)rng_below(&s, 64);
        uint64_t u[66];
        for (uint32_t i = 0; i < n; i++)
            u[i] = rng_next(&s) >> rng_below(&s, 8);
        if (rng_below(&s, 2))
            u[0] = 0;
        if (rng_below(&s, 2))
            u[n - 1] = UINT64_MAX;
        for (uint32_t i = 1; i < n; i++) /* insertion sort */
            for (uint32_t j = i; j > 0 && u[j - 1] > u[j]; j--) {
                uint64_t t = u[j];
                u[j] = u[j - 1];
                u[j - 1] = t;
            }
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (m && ordered_i64(u[i]) <= g_pts[m - 1].ts)
                continue;
            g_pts[m].ts = ordered_i64(u[i]);
            g_pts[m++].v = bdbl(rng_next(&s));
        }
        roundtrip(g_pts, m);
    }
}

BOTH_FORMATS(alternating_extremes)
{
    const double vals[] = {DBL_MAX, -DBL_MAX, bdbl(UINT64_C(0x7ff8000000000001)),
                           5e-324,  -0.0,     bdbl(UINT64_C(0xffffffffffffffff)),
                           0.0};
    uint64_t s = 3;
    uint64_t t = 0; /* ordered form, starts at INT64_MIN */
    uint32_t n = 0;

    for (uint32_t i = 0; i < 4000; i++) {
        uint64_t delta = (i & 1) ? (UINT64_C(1) << 50) + rng_below(&s, 1000) : 1;
        if (t > UINT64_MAX - delta)
            break;
        t += delta;
        g_pts[n].ts = ordered_i64(t);
        g_pts[n++].v = (i & 2) ? vals[i % 7] : bdbl(~dbits(vals[(i + 3) % 7]));
    }
    ASSERT(n > 1000);
    roundtrip(g_pts, n);
}

static void assert_enc_same(const struct block_enc *a, const struct block_enc *b)
{
    ASSERT(a->buf == b->buf && a->cap == b->cap && a->bits == b->bits);
    ASSERT(a->prev_ts == b->prev_ts && a->prev_delta == b->prev_delta);
    ASSERT(a->prev_value == b->prev_value && a->prev_lead == b->prev_lead &&
           a->prev_trail == b->prev_trail);
    ASSERT(a->st.count == b->st.count && a->st.start_ns == b->st.start_ns &&
           a->st.end_ns == b->st.end_ns);
    ASSERT_EQ_U64(dbits(a->st.min), dbits(b->st.min));
    ASSERT_EQ_U64(dbits(a->st.max), dbits(b->st.max));
    ASSERT_EQ_U64(dbits(a->st.sum), dbits(b->st.sum));
    ASSERT_EQ_U64(dbits(a->st.first), dbits(b->st.first));
    ASSERT_EQ_U64(dbits(a->st.last), dbits(b->st.last));
}

BOTH_FORMATS(rejects_out_of_order_and_duplicates)
{
    static uint8_t buf[4096], before[4096];
    uint64_t s = 11;
    struct block_enc e, saved;
    uint32_t n = 0;

    enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(block_enc_append(&e, INT64_MIN, 1.5), 0);
    g_pts[n++] = (struct point){INT64_MIN, 1.5};
    for (int i = 0; i < 100; i++) {
        int64_t last = g_pts[n - 1].ts;
        int64_t before_last = last > INT64_MIN ? last - 1 : last;
        int64_t far_back = last >= INT64_MIN + INTERVAL_NS ? last - INTERVAL_NS : INT64_MIN;
        const int64_t bad[] = {last, before_last, INT64_MIN, g_pts[0].ts, far_back};
        memcpy(before, buf, sizeof(buf));
        saved = e;
        for (size_t b = 0; b < ARRAY_SIZE(bad); b++) {
            if (bad[b] > last)
                continue;
            ASSERT_EQ_INT(block_enc_append(&e, bad[b], bdbl(rng_next(&s))), -EINVAL);
            assert_enc_same(&e, &saved);
            ASSERT(memcmp(buf, before, sizeof(buf)) == 0);
        }
        check_block(&e, g_pts);
        int64_t next = last + 1 + (int64_t)rng_below(&s, (uint64_t)INTERVAL_NS);
        double v = (double)rng_below(&s, 10);
        ASSERT_EQ_INT(block_enc_append(&e, next, v), 0);
        g_pts[n++] = (struct point){next, v};
    }
    check_block(&e, g_pts);
    check_stats(&e.st, g_pts, n);

    /* INT64_MAX as the last point leaves nothing valid after it. */
    ASSERT_EQ_INT(block_enc_append(&e, INT64_MAX, 2.0), 0);
    g_pts[n++] = (struct point){INT64_MAX, 2.0};
    saved = e;
    ASSERT_EQ_INT(block_enc_append(&e, INT64_MAX, 2.0), -EINVAL);
    assert_enc_same(&e, &saved);
    check_block(&e, g_pts);
}

BOTH_FORMATS(enospc_tiny_capacity)
{
    uint64_t s = 5;
    static uint8_t ref[8192];

    for (size_t cap = 0; cap <= 200; cap++) {
        for (int rep = 0; rep < 20; rep++) {
            uint8_t *buf = malloc(cap + CANARY_LEN);
            struct block_enc e, z;
            ASSERT(buf != NULL);
            fill_random(&s, buf, cap);
            memset(buf + cap, CANARY, CANARY_LEN);
            uint32_t n = random_series(&s, g_pts, 400);

            enc_init(&e, buf, cap);
            uint32_t k = 0;
            for (; k < n; k++) {
                size_t bits = e.bits;
                int rc = block_enc_append(&e, g_pts[k].ts, g_pts[k].v);
                if (rc == -ENOSPC) {
                    ASSERT(bits + GORILLA_MAX_POINT_BITS > cap * 8);
                    ASSERT_EQ_U64(e.bits, bits);
                    break;
                }
                ASSERT_EQ_INT(rc, 0);
                ASSERT(bits + GORILLA_MAX_POINT_BITS <= cap * 8);
                ASSERT(e.bits <= cap * 8);
            }
            if (cap < GORILLA_MAX_POINT_BITS / 8)
                ASSERT_EQ_INT(k, 0);
            else
                ASSERT(k >= 1);
            if (k < n) {
                /* Full stays full, and the block is left as it was. */
                struct block_enc saved = e;
                ASSERT_EQ_INT(block_enc_append(&e, g_pts[k].ts, g_pts[k].v), -ENOSPC);
                assert_enc_same(&e, &saved);
            }
            for (size_t i = 0; i < CANARY_LEN; i++)
                ASSERT_EQ_INT(buf[cap + i], CANARY);
            ASSERT(block_enc_size(&e) <= cap);
            check_block(&e, g_pts);
            check_stats(&e.st, g_pts, k);

            /* The byte-wise tail path must agree with the word path. */
            enc_init(&z, ref, sizeof(ref));
            ASSERT_EQ_INT(encode_points(&z, g_pts, k), k);
            ASSERT(memcmp(ref, buf, block_enc_size(&e)) == 0);
            free(buf);
        }
    }
}

BOTH_FORMATS(tail_writes_stay_in_cap)
{
    /* Incompressible points make long writes, so the last ones before
     * -ENOSPC straddle the switch from word stores to byte stores. */
    uint64_t s = 8;
    static uint8_t ref[4096];

    for (size_t cap = 20; cap <= 400; cap++) {
        for (int rep = 0; rep < 40; rep++) {
            uint8_t *buf = malloc(cap + CANARY_LEN);
            struct block_enc e, z;
            uint64_t t = rng_next(&s) >> 2;
            uint32_t n = 0;
            ASSERT(buf != NULL);
            memset(buf, rep & 1 ? 0xff : 0x5a, cap);
            memset(buf + cap, CANARY, CANARY_LEN);
            for (; n < 60; n++) {
                t += 1 + (rng_next(&s) >> (2 + rng_below(&s, 40)));
                g_pts[n].ts = ordered_i64(t);
                g_pts[n].v = bdbl(rng_next(&s) | (rng_below(&s, 2) ? UINT64_C(1) : U64_SIGN));
            }
            enc_init(&e, buf, cap);
            uint32_t k = encode_points(&e, g_pts, n);
            ASSERT(k < n);
            for (size_t i = 0; i < CANARY_LEN; i++)
                ASSERT_EQ_INT(buf[cap + i], CANARY);
            check_block(&e, g_pts);
            enc_init(&z, ref, sizeof(ref));
            ASSERT_EQ_INT(encode_points(&z, g_pts, k), k);
            ASSERT(memcmp(ref, buf, block_enc_size(&e)) == 0);
            free(buf);
        }
    }
}

BOTH_FORMATS(snapshot_mid_stream)
{
    uint64_t s = 17;
    static uint8_t buf[ROOMY(MAX_POINTS)];
    struct block_enc e;
    uint32_t n = random_series(&s, g_pts, 1500);

    for (uint32_t i = 0; i < n; i++)
        g_pts[i].v = random_value(&s, (int)rng_below(&s, 7), i ? g_pts[i - 1].v : 0.0);
    memset(buf, 0xee, sizeof(buf));
    enc_init(&e, buf, sizeof(buf));
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_EQ_INT(block_enc_append(&e, g_pts[i].ts, g_pts[i].v), 0);
        size_t size = block_enc_size(&e);
        check_decode(buf, size, g_pts, e.st.count);
        /* A prefix of the points also decodes from the same snapshot. */
        uint32_t k = (uint32_t)rng_below(&s, e.st.count + 1);
        uint8_t *copy = exact_copy(buf, size);
        struct block_dec d;
        int64_t ts;
        double v;
        block_dec_init(&d, copy, size, k, g_pts[0].ts);
        for (uint32_t j = 0; j < k; j++) {
            ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
            ASSERT_EQ_U64(ts, g_pts[j].ts);
            ASSERT_EQ_U64(dbits(v), dbits(g_pts[j].v));
        }
        ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 0);
        free(copy);
    }
}

BOTH_FORMATS(truncated_stream_is_ebadmsg)
{
    uint64_t s = 23;
    static uint8_t buf[ROOMY(MAX_POINTS)];

    for (int iter = 0; iter < 60; iter++) {
        struct block_enc e;
        uint32_t n = random_series(&s, g_pts, 1 + (uint32_t)rng_below(&s, 200));
        enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, g_pts, n), n);
        size_t size = block_enc_size(&e);

        for (size_t len = 0; len < size; len++) {
            uint8_t *copy = exact_copy(buf, len);
            struct block_dec d;
            int64_t ts;
            double v;
            int rc;
            uint32_t got = 0;
            block_dec_init(&d, copy, len, n, g_pts[0].ts);
            while ((rc = block_dec_next(&d, &ts, &v)) == 1) {
                ASSERT(got < n);
                ASSERT_EQ_U64(ts, g_pts[got].ts);
                ASSERT_EQ_U64(dbits(v), dbits(g_pts[got].v));
                got++;
            }
            ASSERT_EQ_INT(rc, -EBADMSG);
            ASSERT(got < n);
            /* The error is sticky. */
            ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);
            free(copy);
        }
        check_decode(buf, size, g_pts, n);
    }
}

/* Decoded points must be re-encodable and survive a second round trip. */
static void check_reencode(const struct point *pts, uint32_t n)
{
    static uint8_t buf[ROOMY(MAX_POINTS)];
    struct block_enc e;

    enc_init(&e, buf, ROOMY(n));
    ASSERT_EQ_INT(encode_points(&e, pts, n), n);
    check_block(&e, pts);
}

TEST(garbage_never_crashes)
{
    uint64_t s = 31;
    uint8_t raw[512];
    int saw_points = 0;

    for (int iter = 0; iter < 30000; iter++) {
        size_t len = (size_t)rng_below(&s, sizeof(raw) + 1);
        fill_random(&s, raw, len);
        int style = (int)rng_below(&s, 4);
        for (size_t i = 0; i < len; i++) {
            if (style == 1)
                raw[i] &= (uint8_t)(rng_next(&s) & rng_next(&s)); /* mostly zeros */
            else if (style == 2)
                raw[i] |= (uint8_t)(rng_next(&s) | rng_next(&s)); /* mostly ones */
        }
        uint32_t count;
        switch (rng_below(&s, 4)) {
        case 0:
            count = UINT32_MAX;
            break;
        case 1:
            count = (uint32_t)rng_next(&s);
            break;
        default:
            count = (uint32_t)rng_below(&s, 3000);
            break;
        }
        /* a start that makes it format 1, a tag that makes it format 2,
         * or neither */
        int64_t start = (int64_t)rng_next(&s);
        switch (rng_below(&s, 3)) {
        case 0:
            if (len >= 8)
                start = u2i(be64(raw));
            break;
        case 1:
            if (len)
                raw[0] = 0x92;
            break;
        default:
            break;
        }
        uint8_t *copy = exact_copy(raw, len);
        struct block_dec d;
        int64_t ts;
        double v;
        int rc;
        uint32_t got = 0;
        block_dec_init(&d, copy, len, count, start);
        while ((rc = block_dec_next(&d, &ts, &v)) == 1) {
            ASSERT(got < count);
            ASSERT(got < MAX_POINTS);
            if (got)
                ASSERT(ts > g_out[got - 1].ts);
            g_out[got].ts = ts;
            g_out[got++].v = v;
        }
        ASSERT(rc == 0 || rc == -EBADMSG);
        if (rc == 0)
            ASSERT_EQ_INT(got, count);
        saw_points += got > 1;
        check_reencode(g_out, got);
        free(copy);
    }
    ASSERT(saw_points > 100);
}

BOTH_FORMATS(stats_ignore_nan)
{
    uint64_t s = 77;
    static uint8_t buf[ROOMY(MAX_POINTS)];
    struct block_enc e;

    enc_init(&e, buf, sizeof(buf));
    check_stats(&e.st, g_pts, 0);
    ASSERT_EQ_INT(e.st.count, 0);
    ASSERT_EQ_U64(block_enc_size(&e), 0);

    for (int iter = 0; iter < 500; iter++) {
        uint32_t n = 1 + (uint32_t)rng_below(&s, 300);
        int nan_pct = (int)rng_below(&s, 101);
        for (uint32_t i = 0; i < n; i++) {
            g_pts[i].ts = (int64_t)i * INTERVAL_NS;
            if ((int)rng_below(&s, 100) < nan_pct)
                g_pts[i].v = bdbl(UINT64_C(0x7ff0000000000001) + rng_below(&s, 1000));
            else
                g_pts[i].v = (double)((int64_t)rng_below(&s, 20001) - 10000) / 8.0;
        }
        enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, g_pts, n), n);
        check_stats(&e.st, g_pts, n);
        /* Eighths of small integers sum exactly, so check it independently. */
        double sum = 0.0;
        for (uint32_t i = 0; i < n; i++)
            if (!isnan(g_pts[i].v))
                sum += g_pts[i].v;
        ASSERT(e.st.sum == sum);
        check_block(&e, g_pts);
    }

    /* NaN first, then numbers: min/max pick up the first real value. */
    const struct point p[] = {{1, bdbl(UINT64_C(0xfff8000000000123))}, {2, 4.0}, {3, -2.5}};
    enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, p, 1), 1);
    ASSERT(isnan(e.st.min) && isnan(e.st.max) && e.st.sum == 0.0);
    ASSERT_EQ_INT(encode_points(&e, p + 1, 2), 2);
    ASSERT(e.st.min == -2.5 && e.st.max == 4.0 && e.st.sum == 1.5);
    ASSERT_EQ_U64(dbits(e.st.first), UINT64_C(0xfff8000000000123));
    ASSERT_EQ_U64(dbits(e.st.last), dbits(-2.5));
}

/* Bytes a point of pts[0..n) in format 1 (legacy) or 2, checked to decode. */
static double bytes_per_point(int legacy, const struct point *pts, uint32_t n)
{
    static uint8_t buf[ROOMY(MAX_POINTS)];
    struct block_enc e;

    if (legacy)
        block_enc_init_legacy(&e, buf, sizeof(buf));
    else
        block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, pts, n), n);
    check_block(&e, pts);
    return (double)block_enc_size(&e) / (double)n;
}

/* Both formats' sizes; format 2 no larger than format 1 (by slack, in
 * bytes a point) and, for quantized values, smaller by at least gain. */
static void compare_formats(const char *name, const struct point *pts, uint32_t n, double gain,
                            double slack)
{
    double v1 = bytes_per_point(1, pts, n), v2 = bytes_per_point(0, pts, n);
    fprintf(stderr, "  # %-36s %5u points  format 1 %6.3f  format 2 %6.3f bytes/point\n", name, n,
            v1, v2);
    if (v2 > v1 * (1.0 - gain) + slack)
        TEST_FAIL("%s: format 2 %.3f bytes/point against format 1's %.3f", name, v2, v1);
}

TEST(compression_sanity)
{
    uint64_t s = 1;
    int64_t t0 = INT64_C(1700000000000000000);
    static uint8_t buf[4096];
    struct block_enc e;

    for (uint32_t i = 0; i < 1000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS;
        g_pts[i].v = 42.0;
    }
    /* Every later point costs at least 2 bits ('0' dod, '0' value). Format
     * 1 starts with 16 bytes and 37 bits: 16 + (37 + 998 * 2) / 8 = 271
     * bytes. Format 2 starts with the tag, mode 97 (2^1) and k = 21 as a
     * 6-bit length and 6 bits: 27 bits, then the same, 258 bytes. */
    block_enc_init_legacy(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, g_pts, 1000), 1000);
    ASSERT_EQ_U64(block_enc_size(&e), 271);
    block_enc_init(&e, buf, sizeof(buf));
    ASSERT_EQ_INT(encode_points(&e, g_pts, 1000), 1000);
    ASSERT_EQ_U64(block_enc_size(&e), 258);
    compare_formats("100ms exact, constant", g_pts, 1000, 0.04, 0);

    /* Utilisation gauge: 100 ms +- 50 us, percent with one decimal. */
    double v = 37.5;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS + (int64_t)rng_below(&s, 100001) - 50000;
        v += (double)((int64_t)rng_below(&s, 11) - 5) / 10.0;
        if (v < 0.0)
            v = 0.0;
        if (v > 100.0)
            v = 100.0;
        g_pts[i].v = (double)(int64_t)(v * 10.0 + 0.5) / 10.0;
    }
    compare_formats("gauge 100ms+-50us, 0.1 steps", g_pts, 4000, 0.25, 0);

    /* Monotonic counter (bytes sent), exact ticks. */
    double c = 1e9;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS;
        c += (double)rng_below(&s, 65536);
        g_pts[i].v = c;
    }
    compare_formats("counter 100ms, integer increments", g_pts, 4000, 0.25, 0);

    /* Resident memory: mostly flat, occasional page-sized steps. The
     * times' jitter takes most of the bytes of both. */
    double rss = 512.0 * 1024 * 1024;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS + (int64_t)rng_below(&s, 2001) - 1000;
        if (!rng_below(&s, 10))
            rss += 4096.0 * (double)((int64_t)rng_below(&s, 64) - 16);
        g_pts[i].v = rss;
    }
    compare_formats("rss 100ms+-1us, sparse 4k steps", g_pts, 4000, 0.01, 0);

    /* Shares in 1/64 % steps around a level, as the CPU collectors store. */
    double level = 60.0;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS;
        level += (double)((int64_t)rng_below(&s, 129) - 64) / 64.0;
        level = level < 0 ? 0 : level > 100 ? 100 : level;
        g_pts[i].v =
            nearbyint((level + (double)((int64_t)rng_below(&s, 257) - 128) / 64.0) * 64.0) / 64.0;
    }
    compare_formats("share in 1/64 %, noisy", g_pts, 4000, 0.15, 0);

    /* Watts from milliwatts: three decimals, which no binary double holds. */
    double w = 300.0;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS;
        w += (double)((int64_t)rng_below(&s, 2001) - 1000) / 1000.0;
        g_pts[i].v = nearbyint(w * 1000.0) / 1000.0;
    }
    compare_formats("watts, three decimals", g_pts, 4000, 0.50, 0);

    /* Full-precision random walk: close to the worst realistic case. The
     * scales find nothing; format 2 is XOR like format 1, one bit more for
     * a new window. */
    double x = 0.0;
    for (uint32_t i = 0; i < 4000; i++) {
        g_pts[i].ts = t0 + (int64_t)i * INTERVAL_NS;
        x += (double)(rng_next(&s) >> 11) / 9007199254740992.0 - 0.5;
        g_pts[i].v = x;
    }
    compare_formats("random walk, full precision", g_pts, 4000, 0, 0.15);
}

/* Compose hand-made streams, MSB first, into a zeroed buffer. */
static void set_bits(uint8_t *buf, size_t pos, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++, pos++)
        if ((v >> (n - 1 - i)) & 1)
            buf[pos / 8] = (uint8_t)(buf[pos / 8] | (0x80u >> (pos % 8)));
}

TEST(decoder_edge_cases)
{
    uint8_t buf[64];
    struct block_dec d;
    int64_t ts = 123;
    double v = 1.0;

    /* count 0 never reads, even from NULL. */
    block_dec_init(&d, NULL, 0, 0, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 0);
    block_dec_init(&d, NULL, 0, 1, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);

    /* Point 2 with dod +1 ('10' 0000001) and value '10': no window yet. */
    memset(buf, 0, sizeof(buf));
    set_bits(buf, 128, 0x101, 9);
    set_bits(buf, 137, 0x2, 2);
    block_dec_init(&d, buf, sizeof(buf), 2, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);

    /* Same, but '11' L=31 N=63: the window would exceed 64 bits. */
    memset(buf, 0, sizeof(buf));
    set_bits(buf, 128, 0x101, 9);
    set_bits(buf, 137, 0x3, 2);
    set_bits(buf, 139, 31, 5);
    set_bits(buf, 144, 63, 6);
    block_dec_init(&d, buf, sizeof(buf), 2, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);

    /* With L=31 N=33 the same header is fine and the value decodes. */
    memset(buf, 0, sizeof(buf));
    set_bits(buf, 128, 0x101, 9);
    set_bits(buf, 137, 0x3, 2);
    set_bits(buf, 139, 31, 5);
    set_bits(buf, 144, 33, 6);
    set_bits(buf, 150, 1, 33);
    block_dec_init(&d, buf, sizeof(buf), 2, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(ts, 1);
    ASSERT_EQ_U64(dbits(v), 1);

    /* dod -1 on the first delta means going back in time: corrupt. */
    memset(buf, 0, sizeof(buf));
    set_bits(buf, 0, 16, 64);
    set_bits(buf, 128, 0x17f, 9);
    block_dec_init(&d, buf, sizeof(buf), 2, 16);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(ts, 16);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);

    /* dod '0' on the first delta is a duplicate time: corrupt too. */
    memset(buf, 0, sizeof(buf));
    block_dec_init(&d, buf, sizeof(buf), 2, 0);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), 1);
    ASSERT_EQ_INT(block_dec_next(&d, &ts, &v), -EBADMSG);

    /* Format 2: corrupt fields each fail, whatever follows them. */
    static const char *const bad2[] = {
        "10010010 0100001",          /* mode 33: no such mode */
        "10010010 1111111 000001 1", /* mode 127 is fine... */
        "10010010 0010000 111010",   /* a 58-bit length: more than k holds */
        "10010010 0010000 110111 1"  /* k = 2^53 (zigzag 2^54): out of range */
        "000000000000000000000000000000000000000000000000000000",
        "10010010 0000000 0000000000000000000000000000000000000000000000000000000000000000"
        "10 0000001 1 0", /* XOR from a raw first value: no window */
        "10010010 0010000 000010 10  10 0000001  1 111111111111 111111 0100001",
        /* a switch to mode 33 */
    };
    static const int ok_points[] = {0, 1, 0, 0, 1, 1};
    for (size_t i = 0; i < ARRAY_SIZE(bad2); i++) {
        uint8_t b2[64];
        bits_from_text(bad2[i], b2, sizeof(b2));
        block_dec_init(&d, b2, sizeof(b2), 2, 5);
        int got = 0, rc;
        while ((rc = block_dec_next(&d, &ts, &v)) == 1)
            got++;
        if (got != ok_points[i] || (i != 1 && rc != -EBADMSG))
            TEST_FAIL("case %zu: %d points, rc %d", i, got, rc);
    }
}

/* block_dec_many gives the points block_dec_next gives, in batches of any
 * size, and stops at the same point of a cut stream with -EBADMSG. */
BOTH_FORMATS(decode_many_matches_one_by_one)
{
    uint64_t s = 41;
    static uint8_t buf[ROOMY(MAX_POINTS)];
    static int64_t ts[MAX_POINTS];
    static double v[MAX_POINTS];

    for (int iter = 0; iter < 40; iter++) {
        struct block_enc e;
        uint32_t n = random_series(&s, g_pts, 1 + (uint32_t)rng_below(&s, 300));
        enc_init(&e, buf, sizeof(buf));
        ASSERT_EQ_INT(encode_points(&e, g_pts, n), n);
        size_t size = block_enc_size(&e);
        uint32_t batch = 1 + (uint32_t)rng_below(&s, 64);
        for (size_t len = size - (size > 40 ? 40 : size); len <= size; len++) {
            uint8_t *copy = exact_copy(buf, len);
            struct block_dec d;
            block_dec_init(&d, copy, len, n, g_pts[0].ts);
            uint32_t got = 0, k;
            int err = 0;
            while (!err && (k = block_dec_many(&d, ts + got, v + got, batch, &err)) > 0)
                got += k;
            for (uint32_t i = 0; i < got; i++) {
                ASSERT_EQ_U64(ts[i], g_pts[i].ts);
                ASSERT_EQ_U64(dbits(v[i]), dbits(g_pts[i].v));
            }
            if (len == size) {
                ASSERT_EQ_INT(err, 0);
                ASSERT_EQ_INT(got, n);
            } else {
                ASSERT_EQ_INT(err, -EBADMSG);
                ASSERT(got < n);
            }
            free(copy);
        }
    }
}

TEST_MAIN(golden_layouts, format_detection, scaled_values, decode_many_matches_one_by_one,
          decode_many_matches_one_by_one_legacy, dod_bucket_boundaries,
          dod_bucket_boundaries_legacy, xor_window_edges, xor_window_edges_legacy,
          random_series_roundtrip, random_series_roundtrip_legacy, regular_with_jitter,
          regular_with_jitter_legacy, nan_payloads, nan_payloads_legacy, inf_and_signed_zero,
          inf_and_signed_zero_legacy, denormals, denormals_legacy, constant_series,
          constant_series_legacy, huge_timestamp_jumps, huge_timestamp_jumps_legacy,
          alternating_extremes, alternating_extremes_legacy, rejects_out_of_order_and_duplicates,
          rejects_out_of_order_and_duplicates_legacy, enospc_tiny_capacity,
          enospc_tiny_capacity_legacy, tail_writes_stay_in_cap, tail_writes_stay_in_cap_legacy,
          snapshot_mid_stream, snapshot_mid_stream_legacy, truncated_stream_is_ebadmsg,
          truncated_stream_is_ebadmsg_legacy, garbage_never_crashes, stats_ignore_nan,
          stats_ignore_nan_legacy, compression_sanity, decoder_edge_cases)
