/*
 * Gorilla block codec. The bit layout is specified in docs/store-format.md
 * ("Series block stream (codec)"); this file must stay in step with it.
 *
 * Timestamp arithmetic is done in uint64_t modulo 2^64: the encoder and the
 * decoder wrap identically, so any strictly increasing int64 series (even
 * INT64_MIN followed by INT64_MAX) round-trips without signed overflow.
 */
#include "codec/gorilla.h"

#include <errno.h>
#include <string.h>

/* prev_lead before the first XOR window exists; no real XOR has 64 leading
 * zeros (zero XORs take the '0' path), so nothing can match it for reuse. */
#define LEAD_NONE 64u
/* The leading-zero count field is 5 bits wide. */
#define LEAD_MAX 31u

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
 * starts in. Within one point no write starts later than 82 bits in (raw dod:
 * 5 + 64 bits, then a 13-bit '11' header, then a 64-bit payload), and append
 * reserves GORILLA_MAX_POINT_BITS, so 82 + 64 bits of room always remain.
 */
#define MAX_PUT_START 82
_Static_assert(MAX_PUT_START + 64 <= GORILLA_MAX_POINT_BITS,
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

static void put_value(struct block_enc *e, uint64_t x)
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
    if (lead > LEAD_MAX)
        lead = LEAD_MAX;
    unsigned len = 64 - lead - trail;
    uint64_t hdr = (UINT64_C(0x3) << 11) | ((uint64_t)lead << 6) | (len & 63);
    uint64_t m = x >> trail;
    if (len <= 51) {
        put_bits(e, (hdr << len) | m, 13 + len);
    } else {
        put_bits(e, hdr, 13);
        put_bits(e, m, len);
    }
    e->prev_lead = lead;
    e->prev_trail = trail;
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

int block_enc_append(struct block_enc *e, int64_t ts_ns, double value)
{
    uint64_t vb = double_bits(value);

    if (e->st.count && ts_ns <= e->prev_ts)
        return -EINVAL;
    /* Checked up front so a point is never half written. */
    if (e->st.count == UINT32_MAX || e->bits + GORILLA_MAX_POINT_BITS > cap_bits(e))
        return -ENOSPC;

    if (!e->st.count) {
        put_bits(e, to_u64(ts_ns), 64);
        put_bits(e, vb, 64);
        e->prev_delta = 0;
    } else {
        uint64_t delta = to_u64(ts_ns) - to_u64(e->prev_ts);
        put_dod(e, delta - to_u64(e->prev_delta));
        put_value(e, vb ^ e->prev_value);
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

void block_dec_init(struct block_dec *d, const uint8_t *buf, size_t len, uint32_t count)
{
    memset(d, 0, sizeof(*d));
    d->buf = buf;
    d->len_bits = bytes_to_bits(len);
    d->left = count;
    d->prev_lead = LEAD_NONE;
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

/* block_dec_next's body, inlined into both readers. */
static inline int dec_point(struct block_dec *d, int64_t *ts_ns, double *value)
{
    uint64_t ts, vb;

    if (!d->left)
        return 0;
    if (!d->done) {
        if (get_bits(d, 64, &ts) || get_bits(d, 64, &vb))
            return dec_fail(d);
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
        if (get_value(d, &vb))
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
