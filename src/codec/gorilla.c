/*
 * Series block codec, formats 1 and 2 (codec/gorilla.h). The bit layout is
 * specified in docs/store-format.md ("Series block stream (codec)"); this
 * file must stay in step with it.
 *
 * Format 2's scaled values: a scale is a power of ten or of two; the value
 * is k / 10^d or k * 2^e for an integer |k| < 2^53, exact to the bit. The
 * encoder keeps the block's scale while values fit it and, when one does
 * not, switches to the coarsest scale that fits (the smallest |k|), or to
 * XOR. The decoder never chooses: it reads the mode. Both sides predict k
 * from the last value or the line through the last two, whichever has had
 * the smaller residuals lately, and size the Rice code from those residuals
 * (LOCO-I's rule: the least r with n * 2^r >= their sum). Both run the same
 * integer arithmetic, so they agree to the bit; the only floating point
 * they share is to_scaled() on the previous value, deterministic in IEEE
 * arithmetic.
 *
 * Timestamp arithmetic is done in uint64_t modulo 2^64: the encoder and the
 * decoder wrap identically, so any strictly increasing int64 series (even
 * INT64_MIN followed by INT64_MAX) round-trips without signed overflow.
 */
#include "codec/gorilla.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* prev_lead before the first XOR window exists; no real XOR has 64 leading
 * zeros (zero XORs take the '0' path), so nothing can match it for reuse. */
#define LEAD_NONE 64u
/* The leading-zero count field is 5 bits wide. */
#define LEAD_MAX 31u

/* Format 2: the first byte; a format 1 stream starts with its first
 * timestamp instead, and the encoder writes format 1 when that timestamp's
 * top byte is this one. */
#define V2_TAG 0x92u
/* Format 2's mode field: 0 XOR, 1..31 decimal (value = k / 10^(m - 16)),
 * 64..127 binary (value = k * 2^(m - 96)). */
#define MODE_BITS    7u
#define MODE_XOR     0u
#define MODE_DEC0    16u
#define MODE_BIN0    96u
#define DEC_FINEST   9 /* decimals the encoder tries (the decoder reads 15) */
#define DEC_COARSEST (-15)
#define BIN_MIN      (-32)
#define BIN_MAX      31
#define K_LIMIT      0x1p53 /* |k| below this: (double)k is exact */
/* Rice: a quotient of RICE_QMAX or more is an escape, RICE_QMAX ones, then a
 * 6-bit length and the residual's bits; length LEN_SWITCH is a mode switch. */
#define RICE_QMAX          12u
#define LEN_BITS           6u
#define LEN_SWITCH         63u
#define RICE_RESET         64u
#define RICE_SUM0          4u
#define RICE_MAX_K         57u
#define SEARCH_BACKOFF_MAX 32u /* values a failed scale search skips, at most */

#define NAN_BITS_MIN UINT64_C(0x7ff0000000000001)
#define ABS_MASK     UINT64_C(0x7fffffffffffffff)

static inline uint64_t to_u64(int64_t v)
{
    return (uint64_t)v;
}

/* Two's-complement reinterpretation without relying on the
 * implementation-defined narrowing conversion; compiles to nothing. */
static inline int64_t to_i64(uint64_t u)
{
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

static inline uint64_t double_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static inline double bits_double(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

/* A bit test rather than isnan(), so stats stay right under -ffast-math. */
static inline int bits_is_nan(uint64_t u)
{
    return (u & ABS_MASK) >= NAN_BITS_MIN;
}

static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void store_be64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof(v));
}

static inline uint64_t low_mask(unsigned n)
{
    return n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
}

static inline size_t bytes_to_bits(size_t n)
{
    return n > SIZE_MAX / 8 ? (SIZE_MAX / 8) * 8 : n * 8;
}

/*
 * The writer stores whole 64-bit words, so it needs 8 bytes from the byte it
 * starts in. No point is longer than MAX_POINT_BITS (format 2's worst: a raw
 * dod, 5 + 64 bits, then a switch from a scale to XOR, 1 + 12 + 6 + 7 bits
 * and a new 11-bit window of 64 bits), so no write starts later than that,
 * and append reserves GORILLA_MAX_POINT_BITS: 64 bits of room always remain.
 */
#define MAX_POINT_BITS (5 + 64 + 1 + RICE_QMAX + LEN_BITS + MODE_BITS + 11 + 64)
_Static_assert(MAX_POINT_BITS + 64 <= GORILLA_MAX_POINT_BITS,
               "word stores could run past the end of the buffer");

/*
 * Append the n (1..64) low bits of v, MSB first. The partial byte keeps only
 * the bits already written and everything after them is stored as zeros, so
 * the caller's buffer may hold garbage and nothing is cleared up front.
 */
static void put_bits(struct block_enc *e, uint64_t v, unsigned n)
{
    size_t idx = e->bits >> 3;
    unsigned off = (unsigned)(e->bits & 7);
    uint8_t *p = e->buf + idx;
    uint64_t hi = (uint64_t)(p[0] & (0xff00u >> off)) << 56;
    unsigned used = off + n;

    v &= low_mask(n);
    if (used <= 64) {
        store_be64(p, hi | (v << (64 - used)));
    } else {
        /* p[8] receives written bits, which all lie below cap * 8. */
        store_be64(p, hi | (v >> (used - 64)));
        p[8] = (uint8_t)(v << (72 - used));
    }
    e->bits += n;
}

static size_t cap_bits(const struct block_enc *e)
{
    return bytes_to_bits(e->cap);
}

void block_enc_init(struct block_enc *e, uint8_t *buf, size_t cap)
{
    memset(e, 0, sizeof(*e));
    e->buf = buf;
    e->cap = cap;
    e->prev_lead = LEAD_NONE;
    e->st.min = bits_double(UINT64_C(0x7ff8000000000000));
    e->st.max = e->st.min;
    e->st.sum = 0.0;
}

void block_enc_init_legacy(struct block_enc *e, uint8_t *buf, size_t cap)
{
    block_enc_init(e, buf, cap);
    e->legacy = 1;
}

/* Prefix plus payload as one write wherever it fits in 64 bits. */
static void put_dod(struct block_enc *e, uint64_t dod)
{
    int64_t s = to_i64(dod);

    if (s == 0)
        put_bits(e, 0, 1);
    else if (s >= -63 && s <= 64)
        put_bits(e, (UINT64_C(0x2) << 7) | (dod & 0x7f), 2 + 7);
    else if (s >= -255 && s <= 256)
        put_bits(e, (UINT64_C(0x6) << 9) | (dod & 0x1ff), 3 + 9);
    else if (s >= -2047 && s <= 2048)
        put_bits(e, (UINT64_C(0xe) << 12) | (dod & 0xfff), 4 + 12);
    else if (s >= -INT64_C(2147483647) && s <= INT64_C(2147483648))
        put_bits(e, (UINT64_C(0x1e) << 32) | (dod & 0xffffffff), 5 + 32);
    else {
        put_bits(e, 0x1f, 5);
        put_bits(e, dod, 64);
    }
}

/* A new XOR window for x: 5 bits L, 6 bits N, then x >> T, after the n
 * prefix bits p (format 1's '11', format 2's '110', none after a switch). */
static void put_window(struct block_enc *e, uint64_t x, uint64_t p, unsigned n)
{
    unsigned lead = (unsigned)__builtin_clzll(x);
    unsigned trail = (unsigned)__builtin_ctzll(x);

    if (lead > LEAD_MAX)
        lead = LEAD_MAX;
    unsigned len = 64 - lead - trail;
    uint64_t hdr = (p << 11) | ((uint64_t)lead << 6) | (len & 63);
    uint64_t m = x >> trail;
    if (n + 11 + len <= 64) {
        put_bits(e, (hdr << len) | m, n + 11 + len);
    } else {
        put_bits(e, hdr, n + 11);
        put_bits(e, m, len);
    }
    e->prev_lead = lead;
    e->prev_trail = trail;
}

/* x = this value's bits XOR the last's: '0' when zero, '10' and the bits
 * in the current window when it fits, else a new window after p. */
static void put_xor(struct block_enc *e, uint64_t x, uint64_t p, unsigned n)
{
    if (!x) {
        put_bits(e, 0, 1);
        return;
    }
    unsigned lead = (unsigned)__builtin_clzll(x);
    unsigned trail = (unsigned)__builtin_ctzll(x);

    if (lead >= e->prev_lead && trail >= e->prev_trail) {
        unsigned len = 64 - e->prev_lead - e->prev_trail;
        uint64_t m = x >> e->prev_trail;
        if (len <= 62) {
            put_bits(e, (UINT64_C(0x2) << len) | m, 2 + len);
        } else {
            put_bits(e, 0x2, 2);
            put_bits(e, m, len);
        }
        return;
    }
    put_window(e, x, p, n);
}

/* ---- format 2: scales -------------------------------------------------- */

static unsigned bit_len(uint64_t z)
{
    return z ? 64 - (unsigned)__builtin_clzll(z) : 0;
}

static const double pow10_tab[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

static int mode_valid(unsigned m)
{
    return (m >= 1 && m <= 31) || (m >= 64 && m <= 127);
}

/* 2^e for |e| < 1023, built from its bits: multiplying by it is ldexp,
 * exact unless the result leaves the normal range (then rounded alike on
 * both sides), without a call. */
static double pow2(int e)
{
    return bits_double((uint64_t)(1023 + e) << 52);
}

/* The value of integer k in scale m (a valid, non-XOR mode). */
static double from_scaled(unsigned m, int64_t k)
{
    if (m >= 64)
        return (double)k * pow2((int)m - (int)MODE_BIN0);
    int d = (int)m - (int)MODE_DEC0;
    return d > 0 ? (double)k / pow10_tab[d] : (double)k * pow10_tab[-d];
}

/* 0 and *k when v is exactly k in scale m, to the bit; else -1. */
static int to_scaled(unsigned m, double v, int64_t *k)
{
    double t;
    if (m >= 64) {
        t = v * pow2((int)MODE_BIN0 - (int)m);
    } else {
        int d = (int)m - (int)MODE_DEC0;
        t = d > 0 ? v * pow10_tab[d] : v / pow10_tab[-d];
    }
    if (!(fabs(t) < K_LIMIT)) /* NaN fails here too */
        return -1;
    /* Truncation then the neighbour: no dependence on the rounding mode. */
    int64_t c = (int64_t)t;
    for (int i = 0; i < 2; i++, c += t < 0 ? -1 : 1)
        if (double_bits(from_scaled(m, c)) == double_bits(v)) {
            *k = c;
            return 0;
        }
    return -1;
}

static uint64_t abs_u64(int64_t k)
{
    return k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
}

/* The coarsest power of ten that holds v: mode and k, or MODE_XOR. */
static unsigned coarsest_decimal(double v, int64_t *k)
{
    if (v == trunc(v) && fabs(v) < K_LIMIT) {
        int64_t c = (int64_t)v;
        int d = 0;
        while (c != 0 && c % 10 == 0 && d > DEC_COARSEST) {
            c /= 10;
            d--;
        }
        if (to_scaled((unsigned)((int)MODE_DEC0 + d), v, k) == 0)
            return (unsigned)((int)MODE_DEC0 + d);
        return MODE_XOR;
    }
    for (unsigned d = 1; d <= DEC_FINEST; d++)
        if (to_scaled(MODE_DEC0 + d, v, k) == 0)
            return MODE_DEC0 + d;
    return MODE_XOR;
}

/* The coarsest power of two that holds v (read off its bits), or MODE_XOR. */
static unsigned coarsest_binary(double v, int64_t *k)
{
    uint64_t u = double_bits(v);
    unsigned biased = (unsigned)(u >> 52) & 0x7ff;

    if (biased == 0 || biased == 0x7ff) /* zero, subnormal, Inf, NaN */
        return MODE_XOR;
    uint64_t mant = (u & low_mask(52)) | (UINT64_C(1) << 52);
    unsigned tz = (unsigned)__builtin_ctzll(mant);
    int e = (int)biased - 1075 + (int)tz;
    uint64_t c = mant >> tz;
    if (e < BIN_MIN)
        return MODE_XOR;
    /* a coarser power than the field holds: the coarsest it holds, while k
     * stays exact (bytes of whole GiB become k * 2^31) */
    if (e > BIN_MAX) {
        unsigned shift = (unsigned)(e - BIN_MAX);
        if (bit_len(c) + shift > 53)
            return MODE_XOR;
        c <<= shift;
        e = BIN_MAX;
    }
    *k = (u >> 63) ? -(int64_t)c : (int64_t)c;
    return (unsigned)((int)MODE_BIN0 + e);
}

/*
 * The scale to switch to for v: whichever of the coarsest decimal and
 * binary scales gives the smaller |k| (a tie goes to decimal); MODE_XOR
 * when none holds it. (The return to a block's last scale after an
 * excursion is xor_mode_search's.)
 */
static unsigned coarsest_mode(double v, int64_t *k)
{
    int64_t kd = 0, kb = 0;
    unsigned md = coarsest_decimal(v, &kd);
    unsigned mb = coarsest_binary(v, &kb);
    if (mb != MODE_XOR && (md == MODE_XOR || abs_u64(kb) < abs_u64(kd))) {
        *k = kb;
        return mb;
    }
    *k = kd;
    return md;
}

/* ---- format 2: the model, the same on both sides ----------------------- */

static uint64_t zigzag(int64_t r)
{
    return ((uint64_t)r << 1) ^ (uint64_t)(r >> 63);
}

static int64_t unzigzag(uint64_t z)
{
    return to_i64((z >> 1) ^ ((uint64_t)0 - (z & 1)));
}

/* A new scale (or XOR): no history in it yet, Rice statistics afresh. */
static void model_enter(struct scaled_model *sm, unsigned mode)
{
    sm->mode = (uint8_t)mode;
    sm->hist = 0;
    sm->sum1 = RICE_SUM0;
    sm->sum2 = RICE_SUM0;
    sm->n = 1;
    if (mode != MODE_XOR)
        sm->last = (uint8_t)mode;
}

static void model_push(struct scaled_model *sm, int64_t k)
{
    sm->k2 = sm->k1;
    sm->k1 = k;
    if (sm->hist < 2)
        sm->hist++;
}

/* The line through k2 and k1 predicts when it has done better lately. */
static int model_linear(const struct scaled_model *sm)
{
    return sm->hist >= 2 && sm->sum2 < sm->sum1;
}

/* |k1| and |k2| are below 2^53, so neither prediction overflows. */
static int64_t model_predict(const struct scaled_model *sm)
{
    return model_linear(sm) ? 2 * sm->k1 - sm->k2 : sm->k1;
}

/* The least r with n * 2^r >= sum, at most RICE_MAX_K: from the bit
 * lengths, then a step either way (no division on the hot path; n <= 64
 * and r <= 57 keep n << r in range). */
static unsigned model_rice_k(const struct scaled_model *sm)
{
    uint64_t sum = model_linear(sm) ? sm->sum2 : sm->sum1;
    uint64_t n = sm->n;
    unsigned ls = bit_len(sum), ln = bit_len(n);
    unsigned r = ls > ln ? ls - ln : 0;

    if (r > RICE_MAX_K)
        return RICE_MAX_K;
    while (r > 0 && (n << (r - 1)) >= sum)
        r--;
    while (r < RICE_MAX_K && (n << r) < sum)
        r++;
    return r;
}

/* After a residual-coded k: both predictors' residuals into the sums. */
static void model_learn(struct scaled_model *sm, int64_t k)
{
    uint64_t z1 = zigzag(k - sm->k1);
    uint64_t z2 = sm->hist >= 2 ? zigzag(k - (2 * sm->k1 - sm->k2)) : z1;
    if (sm->n >= RICE_RESET) {
        sm->sum1 >>= 1;
        sm->sum2 >>= 1;
        sm->n >>= 1;
    }
    sm->sum1 += z1;
    sm->sum2 += z2;
    sm->n++;
}

/* ---- format 2: the encoder ----------------------------------------------- */

/* A 6-bit length, then z's bits. */
static void put_len_value(struct block_enc *e, uint64_t z)
{
    unsigned len = bit_len(z);
    put_bits(e, ((uint64_t)len << len) | z, LEN_BITS + len);
}

static void put_rice(struct block_enc *e, uint64_t z, unsigned r)
{
    uint64_t q = z >> r;
    if (q < RICE_QMAX) {
        put_bits(e, low_mask((unsigned)q) << 1, (unsigned)q + 1);
        if (r)
            put_bits(e, z, r);
        return;
    }
    put_bits(e, low_mask(RICE_QMAX), RICE_QMAX);
    put_len_value(e, z);
}

/* k enters scale m: its residual from the previous value when that is in m
 * too, else k itself. The decoder makes the same test. */
static void put_entry(struct block_enc *e, unsigned m, int64_t k)
{
    int64_t kp;
    struct scaled_model *sm = &e->sm;

    model_enter(sm, m);
    if (e->st.count && to_scaled(m, bits_double(e->prev_value), &kp) == 0) {
        model_push(sm, kp);
        put_len_value(e, zigzag(k - kp));
    } else {
        put_len_value(e, zigzag(k));
    }
    model_push(sm, k);
}

/* A switch: the mode, then the value as that mode enters it. */
static void put_switch(struct block_enc *e, unsigned m, int64_t k, uint64_t vb)
{
    put_bits(e, m, MODE_BITS);
    if (m == MODE_XOR) {
        model_enter(&e->sm, MODE_XOR);
        if (e->st.count)
            put_window(e, vb ^ e->prev_value, 0, 0);
        else
            put_bits(e, vb, 64);
        return;
    }
    put_entry(e, m, k);
}

/*
 * In XOR mode, whether v has a scale. The block's last scale is tried on
 * every value; the full search (up to nine divisions) backs off after each
 * miss, 1, 2, 4 ... 32 values, so a series of arbitrary doubles costs
 * about what format 1 costs. An encoder-only choice: the decoder reads
 * whatever mode was written.
 */
static unsigned xor_mode_search(struct block_enc *e, double v, int64_t *k)
{
    const struct scaled_model *sm = &e->sm;
    if (sm->last && to_scaled(sm->last, v, k) == 0)
        return sm->last;
    if (e->search_skip) {
        e->search_skip--;
        return MODE_XOR;
    }
    unsigned m = coarsest_mode(v, k);
    if (m == MODE_XOR) {
        e->search_backoff = e->search_backoff ? (uint8_t)(e->search_backoff * 2) : 1;
        if (e->search_backoff > SEARCH_BACKOFF_MAX)
            e->search_backoff = SEARCH_BACKOFF_MAX;
        e->search_skip = e->search_backoff;
    } else {
        e->search_backoff = 0;
    }
    return m;
}

static void put_value_v2(struct block_enc *e, double v, uint64_t vb)
{
    struct scaled_model *sm = &e->sm;
    int64_t k;

    if (vb == e->prev_value) {
        put_bits(e, 0, 1);
        if (sm->mode != MODE_XOR)
            model_push(sm, sm->k1);
        return;
    }
    if (sm->mode != MODE_XOR) {
        if (to_scaled(sm->mode, v, &k) == 0) {
            int64_t pred = model_predict(sm);
            put_bits(e, 1, 1);
            put_rice(e, zigzag(k - pred), model_rice_k(sm));
            model_learn(sm, k);
            model_push(sm, k);
            return;
        }
        unsigned m = coarsest_mode(v, &k);
        put_bits(e, (low_mask(1 + RICE_QMAX) << LEN_BITS) | LEN_SWITCH, 1 + RICE_QMAX + LEN_BITS);
        put_switch(e, m, k, vb);
        return;
    }
    unsigned m = xor_mode_search(e, v, &k);
    if (m == MODE_XOR) {
        put_xor(e, vb ^ e->prev_value, 0x6, 3);
        return;
    }
    put_bits(e, 0x7, 3);
    put_switch(e, m, k, vb);
}

static void update_stats(struct block_stats *st, int64_t ts_ns, double value, uint64_t vb)
{
    if (!st->count) {
        st->start_ns = ts_ns;
        st->first = value;
    }
    st->count++;
    st->end_ns = ts_ns;
    st->last = value;
    if (bits_is_nan(vb))
        return;
    if (bits_is_nan(double_bits(st->min))) {
        /* First non-NaN value; min and max are NaN exactly until then. */
        st->min = value;
        st->max = value;
        st->sum = value;
        return;
    }
    if (value < st->min)
        st->min = value;
    if (value > st->max)
        st->max = value;
    st->sum += value;
}

static void put_first(struct block_enc *e, int64_t ts_ns, double value, uint64_t vb)
{
    e->format = e->legacy || (to_u64(ts_ns) >> 56) == V2_TAG ? 1 : 2;
    if (e->format == 1) {
        put_bits(e, to_u64(ts_ns), 64);
        put_bits(e, vb, 64);
        return;
    }
    int64_t k = 0;
    unsigned m = coarsest_mode(value, &k); /* sets k: not in the call */
    put_bits(e, V2_TAG, 8);
    put_switch(e, m, k, vb);
}

int block_enc_append(struct block_enc *e, int64_t ts_ns, double value)
{
    uint64_t vb = double_bits(value);

    if (e->st.count && ts_ns <= e->prev_ts)
        return -EINVAL;
    /* Checked up front so a point is never half written. */
    if (e->st.count == UINT32_MAX || e->bits + GORILLA_MAX_POINT_BITS > cap_bits(e))
        return -ENOSPC;

    if (!e->st.count) {
        put_first(e, ts_ns, value, vb);
        e->prev_delta = 0;
    } else {
        uint64_t delta = to_u64(ts_ns) - to_u64(e->prev_ts);
        put_dod(e, delta - to_u64(e->prev_delta));
        if (e->format == 1)
            put_xor(e, vb ^ e->prev_value, 0x3, 2);
        else
            put_value_v2(e, value, vb);
        e->prev_delta = to_i64(delta);
    }
    e->prev_ts = ts_ns;
    e->prev_value = vb;
    update_stats(&e->st, ts_ns, value, vb);
    return 0;
}

size_t block_enc_size(const struct block_enc *e)
{
    return (e->bits + 7) / 8;
}

void block_dec_init(struct block_dec *d, const uint8_t *buf, size_t len, uint32_t count,
                    int64_t start_ns)
{
    memset(d, 0, sizeof(*d));
    d->buf = buf;
    d->len_bits = bytes_to_bits(len);
    d->left = count;
    d->prev_lead = LEAD_NONE;
    d->prev_ts = start_ns;
    if (len >= 8 && load_be64(buf) == to_u64(start_ns)) {
        d->format = 1;
    } else if (len >= 1 && buf[0] == V2_TAG && (to_u64(start_ns) >> 56) != V2_TAG) {
        /* (such a start is always format 1: a cut format 1 stream, shorter
         * than its 8 bytes of start, also begins with the tag) */
        d->format = 2;
        d->pos = 8;
    } else {
        d->len_bits = 0; /* neither: corrupt, unless there is nothing to read */
    }
}

/* Read n (1..64) bits MSB first; -1 if fewer than n remain. */
static int get_bits(struct block_dec *d, unsigned n, uint64_t *out)
{
    if (n > d->len_bits - d->pos)
        return -1;

    size_t idx = d->pos >> 3;
    unsigned off = (unsigned)(d->pos & 7);
    size_t len = d->len_bits >> 3;
    const uint8_t *p = d->buf + idx;
    uint64_t v;

    if (len - idx >= 8) {
        /* p[8] is read only when it holds requested bits, which the
         * length check above has already proven to lie inside len. */
        uint64_t w = load_be64(p) << off;
        v = w >> (64 - n);
        if (off + n > 64)
            v |= (uint64_t)(p[8] >> (72 - off - n));
    } else {
        unsigned left = n;
        v = 0;
        while (left) {
            unsigned room = 8 - off;
            unsigned take = left < room ? left : room;
            uint64_t chunk = (uint64_t)(p[0] >> (room - take)) & low_mask(take);
            v = (v << take) | chunk;
            left -= take;
            off = 0;
            p++;
        }
    }
    d->pos += n;
    *out = v;
    return 0;
}

/* Corruption is sticky: with no bits left every later call fails as well. */
static int dec_fail(struct block_dec *d)
{
    d->len_bits = 0;
    d->pos = 0;
    return -EBADMSG;
}

/*
 * The next 64 bits without consuming them, zero-filled past the end, so a
 * field's prefix and payload come out of one load. Callers check what they
 * consume against the bits actually left; nothing past len is ever read.
 */
static inline uint64_t peek64(const struct block_dec *d)
{
    size_t idx = d->pos >> 3;
    unsigned off = (unsigned)(d->pos & 7);
    size_t nb = (d->len_bits >> 3) - idx;
    uint64_t w = 0;

    if (nb >= 9) {
        const uint8_t *p = d->buf + idx;
        w = load_be64(p) << off;
        if (off)
            w |= (uint64_t)(p[8] >> (8 - off));
        return w;
    }
    for (size_t i = 0; i < 8; i++)
        w = (w << 8) | (i < nb ? d->buf[idx + i] : 0);
    return w << off;
}

static inline int get_dod(struct block_dec *d, uint64_t *dod)
{
    static const unsigned width[] = {0, 7, 9, 12, 32};
    size_t avail = d->len_bits - d->pos;
    uint64_t w = peek64(d);
    /* Count of leading ones, at most 5: the prefix is unary. */
    unsigned ones = (unsigned)__builtin_clzll(~w | (UINT64_C(1) << 58));

    if (ones == 0) {
        if (avail < 1)
            return -1;
        d->pos += 1;
        *dod = 0;
        return 0;
    }
    if (ones == 5) {
        if (avail < 5 + 64)
            return -1;
        d->pos += 5;
        return get_bits(d, 64, dod);
    }

    unsigned wd = width[ones];
    unsigned total = ones + 1 + wd;
    if (avail < total)
        return -1;
    uint64_t v = (w << (ones + 1)) >> (64 - wd);
    d->pos += total;
    /* Ranges are [-(2^(w-1)-1), 2^(w-1)]: the one-then-zeros pattern means
     * +2^(w-1), not its negative. */
    if (v > (UINT64_C(1) << (wd - 1)))
        v -= UINT64_C(1) << wd;
    *dod = v;
    return 0;
}

static inline int get_value(struct block_dec *d, uint64_t *vb)
{
    size_t avail = d->len_bits - d->pos;
    uint64_t w = peek64(d);
    unsigned hdr, len;
    uint64_t m;

    if (!(w >> 63)) {
        if (avail < 1)
            return -1;
        d->pos += 1;
        *vb = d->prev_value;
        return 0;
    }
    if (!((w >> 62) & 1)) {
        if (d->prev_lead == LEAD_NONE)
            return -1;
        hdr = 2;
        len = 64 - d->prev_lead - d->prev_trail;
    } else {
        if (avail < 13)
            return -1;
        unsigned lead = (unsigned)(w >> 57) & 31;
        hdr = 13;
        len = (unsigned)(w >> 51) & 63;
        if (!len)
            len = 64;
        if (lead + len > 64)
            return -1;
        d->prev_lead = lead;
        d->prev_trail = 64 - lead - len;
    }
    if (avail < hdr + len)
        return -1;
    if (hdr + len <= 64) {
        m = (w << hdr) >> (64 - len);
        d->pos += hdr + len;
    } else {
        d->pos += hdr;
        if (get_bits(d, len, &m))
            return -1;
    }
    *vb = d->prev_value ^ (m << d->prev_trail);
    return 0;
}

/* ---- format 2: the decoder ----------------------------------------------- */

/* A length-prefixed value: 6 bits of length, then that many bits. */
static int get_len_value(struct block_dec *d, uint64_t *z)
{
    uint64_t len;
    if (get_bits(d, LEN_BITS, &len) || len > RICE_MAX_K)
        return -1;
    *z = 0;
    return len ? get_bits(d, (unsigned)len, z) : 0;
}

/* k as a value of the current scale; corrupt unless the encoder could
 * have written it. */
static int scaled_out(struct block_dec *d, int64_t k, uint64_t *vb)
{
    if (!(k > -(INT64_C(1) << 53) && k < (INT64_C(1) << 53)))
        return -1;
    model_push(&d->sm, k);
    *vb = double_bits(from_scaled(d->sm.mode, k));
    return 0;
}

/* A new XOR window, its header and bits (put_window's, without a prefix). */
static int get_window(struct block_dec *d, uint64_t *vb)
{
    uint64_t lead, n, m;

    if (get_bits(d, 5, &lead) || get_bits(d, 6, &n))
        return -1;
    unsigned len = n ? (unsigned)n : 64;
    if (lead + len > 64 || get_bits(d, len, &m))
        return -1;
    d->prev_lead = (unsigned)lead;
    d->prev_trail = 64 - (unsigned)lead - len;
    *vb = d->prev_value ^ (m << d->prev_trail);
    return 0;
}

/* After a switch's '111' (or the tag): the mode and its entering value. */
static int get_switch(struct block_dec *d, uint64_t *vb)
{
    uint64_t m, z;
    int64_t kp;

    if (get_bits(d, MODE_BITS, &m))
        return -1;
    if (m == MODE_XOR) {
        model_enter(&d->sm, MODE_XOR);
        if (!d->done)
            return get_bits(d, 64, vb);
        return get_window(d, vb);
    }
    if (!mode_valid((unsigned)m))
        return -1;
    model_enter(&d->sm, (unsigned)m);
    if (get_len_value(d, &z))
        return -1;
    if (d->done && to_scaled((unsigned)m, bits_double(d->prev_value), &kp) == 0) {
        model_push(&d->sm, kp);
        return scaled_out(d, kp + unzigzag(z), vb);
    }
    return scaled_out(d, unzigzag(z), vb);
}

/* A residual (or a switch) in a scale, after its leading '1'. */
static inline int get_residual(struct block_dec *d, uint64_t *vb)
{
    struct scaled_model *sm = &d->sm;
    size_t avail = d->len_bits - d->pos;
    uint64_t w = peek64(d) << 1;
    /* the unary quotient, counted up to RICE_QMAX */
    unsigned q = (unsigned)__builtin_clzll(~w | (UINT64_C(1) << (63 - RICE_QMAX)));
    uint64_t z;

    if (q < RICE_QMAX) {
        unsigned r = model_rice_k(sm);
        if (avail < 2 + q + r)
            return -1;
        if (2 + q + r <= 64) {
            z = r ? (w << (q + 1)) >> (64 - r) : 0;
            d->pos += 2 + q + r;
        } else {
            d->pos += 2 + q;
            if (get_bits(d, r, &z))
                return -1;
        }
        z |= (uint64_t)q << r;
    } else {
        if (avail < 1 + RICE_QMAX + LEN_BITS)
            return -1;
        unsigned len = (unsigned)(w >> (64 - RICE_QMAX - LEN_BITS)) & 63;
        if (len == LEN_SWITCH) {
            d->pos += 1 + RICE_QMAX + LEN_BITS;
            return get_switch(d, vb);
        }
        d->pos += 1 + RICE_QMAX;
        if (get_len_value(d, &z))
            return -1;
    }
    int64_t k = model_predict(sm) + unzigzag(z);
    if (!(k > -(INT64_C(1) << 53) && k < (INT64_C(1) << 53)))
        return -1;
    model_learn(sm, k);
    return scaled_out(d, k, vb);
}

/* After '1' in XOR mode: '0' and the window's bits, '10' and a new window,
 * or '11' and a switch. */
static int get_xor_v2(struct block_dec *d, uint64_t *vb)
{
    uint64_t c, m;

    if (get_bits(d, 2, &c))
        return -1;
    if (c >> 1 == 0) { /* '10': the window, and the bit read is its first */
        if (d->prev_lead == LEAD_NONE)
            return -1;
        d->pos -= 1;
        unsigned len = 64 - d->prev_lead - d->prev_trail;
        if (get_bits(d, len, &m))
            return -1;
        *vb = d->prev_value ^ (m << d->prev_trail);
        return 0;
    }
    return c == 3 ? get_switch(d, vb) : get_window(d, vb);
}

static inline int get_value_v2(struct block_dec *d, uint64_t *vb)
{
    if (d->pos >= d->len_bits)
        return -1;
    if (!(peek64(d) >> 63)) {
        d->pos += 1;
        *vb = d->prev_value;
        if (d->sm.mode != MODE_XOR)
            model_push(&d->sm, d->sm.k1);
        return 0;
    }
    if (d->sm.mode != MODE_XOR)
        return get_residual(d, vb);
    d->pos += 1;
    return get_xor_v2(d, vb);
}

/* block_dec_next's body, inlined into both readers. */
static inline int dec_point(struct block_dec *d, int64_t *ts_ns, double *value)
{
    uint64_t ts, vb;

    if (!d->left)
        return 0;
    if (!d->done) {
        if (d->format == 2) {
            ts = to_u64(d->prev_ts); /* the block's start, from block_dec_init */
            if (get_switch(d, &vb))
                return dec_fail(d);
        } else if (get_bits(d, 64, &ts) || get_bits(d, 64, &vb)) {
            return dec_fail(d);
        }
        d->prev_delta = 0;
    } else {
        uint64_t dod;
        if (get_dod(d, &dod))
            return dec_fail(d);
        uint64_t delta = to_u64(d->prev_delta) + dod;
        ts = to_u64(d->prev_ts) + delta;
        /* The encoder only accepts strictly increasing times. */
        if (to_i64(ts) <= d->prev_ts)
            return dec_fail(d);
        if (d->format == 2 ? get_value_v2(d, &vb) : get_value(d, &vb))
            return dec_fail(d);
        d->prev_delta = to_i64(delta);
    }
    d->prev_ts = to_i64(ts);
    d->prev_value = vb;
    d->left--;
    d->done++;
    *ts_ns = d->prev_ts;
    *value = bits_double(vb);
    return 1;
}

int block_dec_next(struct block_dec *d, int64_t *ts_ns, double *value)
{
    return dec_point(d, ts_ns, value);
}

uint32_t block_dec_many(struct block_dec *d, int64_t *ts_ns, double *value, uint32_t max, int *err)
{
    /* a local copy whose address does not escape once the helpers are
     * inlined: its fields live in registers, not reloaded after each store
     * to the output arrays (which could alias *d) */
    struct block_dec l = *d;
    uint32_t n = 0;
    int rc = 1;
    *err = 0;
    while (n < max && (rc = dec_point(&l, &ts_ns[n], &value[n])) == 1)
        n++;
    *d = l;
    if (rc < 0)
        *err = rc;
    return n;
}
