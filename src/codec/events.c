/*
 * Event block codec. The byte layout is specified in docs/store-format.md
 * ("Event blocks"); this file must stay in step with it.
 *
 * Deltas are taken modulo 2^64 (steps modulo 2^32) in unsigned arithmetic,
 * so the encoder and the decoder wrap identically and any sequence, INT64_MIN
 * next to INT64_MAX included, round-trips without signed overflow.
 */
#include "codec/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* The scratch an encoder or decoder starts with: a 4096-event block. */
#define INIT_EVENTS 4096u

/* The header's varints: a count below 2^21 takes 3 bytes, a payload size
 * below 2^28 takes 4. */
_Static_assert(EVENT_BLOCK_MAX_EVENTS < (UINT32_C(1) << 21), "count must fit 3 varint bytes");
_Static_assert(UINT64_C(1) * EVENT_BLOCK_MAX_EVENTS * EVENT_MAX_BYTES < (UINT64_C(1) << 28),
               "payload size must fit 4 varint bytes");
_Static_assert(EVENT_BLOCK_HEADER_MAX == 3 + 3 + 4, "header bound");

static inline int64_t to_i64(uint64_t u)
{
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

static inline uint64_t zigzag64(uint64_t d)
{
    return (d << 1) ^ (0 - (d >> 63));
}

static inline uint64_t unzigzag64(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

static inline uint32_t zigzag32(uint32_t d)
{
    return (d << 1) ^ (0 - (d >> 31));
}

static inline uint32_t unzigzag32(uint32_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* LEB128: 7 bits a byte, least significant group first, high bit set on
 * every byte but the last. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/*
 * Read a varint of at most max_bits (32 or 64) from [p, end): the new
 * position, or NULL when it runs off the end, has bits beyond max_bits, or is
 * not in shortest form (a last byte of 0 after others), so that every block
 * has exactly one encoding.
 */
static inline const uint8_t *get_varint(const uint8_t *p, const uint8_t *end, unsigned max_bits,
                                        uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < max_bits; shift += 7) {
        if (p == end)
            return NULL;
        unsigned b = *p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            if (shift && !b)
                return NULL;
            if (max_bits - shift < 7 && b >> (max_bits - shift))
                return NULL;
            *v = x;
            return p;
        }
    }
    return NULL;
}

static inline void store_le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof(v));
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Make buf hold at least need bytes; the old contents are not kept. */
static int scratch_reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *p = malloc(need);
    if (!p)
        return -ENOMEM;
    free(*buf);
    *buf = p;
    *cap = need;
    return 0;
}

void event_encoder_release(struct event_encoder *e)
{
    free(e->buf);
    ZSTD_freeCCtx(e->cctx);
    memset(e, 0, sizeof(*e));
}

int event_encoder_init(struct event_encoder *e)
{
    memset(e, 0, sizeof(*e));
    e->cctx = ZSTD_createCCtx();
    if (!e->cctx || scratch_reserve(&e->buf, &e->cap, (size_t)2 * INIT_EVENTS * EVENT_MAX_BYTES)) {
        event_encoder_release(e);
        return -ENOMEM;
    }
    return 0;
}

void event_decoder_release(struct event_decoder *d)
{
    free(d->buf);
    ZSTD_freeDCtx(d->dctx);
    memset(d, 0, sizeof(*d));
}

int event_decoder_init(struct event_decoder *d)
{
    memset(d, 0, sizeof(*d));
    d->dctx = ZSTD_createDCtx();
    if (!d->dctx || scratch_reserve(&d->buf, &d->cap, (size_t)INIT_EVENTS * EVENT_MAX_BYTES)) {
        event_decoder_release(d);
        return -ENOMEM;
    }
    return 0;
}

size_t event_block_bound(uint32_t n)
{
    return EVENT_BLOCK_HEADER_MAX + (size_t)n * EVENT_MAX_BYTES;
}

static int64_t event_end(const struct event *ev)
{
    if (ev->kind != STROBE_EV_COMPLETE || ev->value <= 0)
        return ev->ts_ns;
    if (ev->ts_ns > INT64_MAX - ev->value)
        return INT64_MAX;
    return ev->ts_ns + ev->value;
}

void event_block_summarize(const struct event *ev, uint32_t n, struct event_block_info *info)
{
    memset(info, 0, sizeof(*info));
    info->count = n;
    if (!n)
        return;
    info->start_ns = ev[0].ts_ns;
    info->end_ns = event_end(&ev[0]);
    info->step_min = ev[0].step;
    info->step_max = ev[0].step;
    for (uint32_t i = 1; i < n; i++) {
        int64_t end = event_end(&ev[i]);
        if (ev[i].ts_ns < info->start_ns)
            info->start_ns = ev[i].ts_ns;
        if (end > info->end_ns)
            info->end_ns = end;
        if (ev[i].step < info->step_min)
            info->step_min = ev[i].step;
        if (ev[i].step > info->step_max)
            info->step_max = ev[i].step;
    }
}

/* The payload: five columns one after another (kinds, names, steps, values,
 * times), each a pass over the events
 * (a pass per column keeps each loop tight and its output contiguous). */
static size_t encode_columns(const struct event *ev, uint32_t n, uint8_t *buf)
{
    uint8_t *p = buf;

    for (uint32_t i = 0; i < n; i++)
        *p++ = ev[i].kind;
    for (uint32_t i = 0; i < n; i++)
        p = put_varint(p, ev[i].name);

    uint32_t prev_step = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = put_varint(p, zigzag32(ev[i].step - prev_step));
        prev_step = ev[i].step;
    }

    /* A counter is its double's 8 bytes as they are: the low mantissa bits
     * are noise no varint shortens, and the sign and exponent bytes of
     * interleaved counters (loss, lr, ...) repeat, which zstd finds; XOR with
     * the previous counter would mix different counters (measured worse). */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)ev[i].value;
        if (ev[i].kind == STROBE_EV_COUNTER) {
            store_le64(p, v);
            p += 8;
        } else {
            p = put_varint(p, zigzag64(v));
        }
    }
    /* A time is coded against the end of the event before it (its time
     * plus its length for a complete span), not its start: the next phase
     * begins where the last ended, so only the gap is left (5.9 against 6.7
     * bytes an event on a training loop). Wrapping arithmetic: exact for any
     * values. Needs the values, so their column comes first. */
    uint64_t base = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ts = (uint64_t)ev[i].ts_ns;
        p = put_varint(p, zigzag64(ts - base));
        base = ts + (ev[i].kind == STROBE_EV_COMPLETE ? (uint64_t)ev[i].value : 0);
    }

    return (size_t)(p - buf);
}

static size_t put_header(uint8_t *out, uint8_t flags, uint32_t n, size_t raw)
{
    uint8_t *p = out;

    *p++ = EVENT_BLOCK_MAGIC;
    *p++ = EVENT_BLOCK_VERSION;
    *p++ = flags;
    p = put_varint(p, n);
    p = put_varint(p, raw);
    return (size_t)(p - out);
}

int event_block_encode(struct event_encoder *e, const struct event *ev, uint32_t n, uint8_t *out,
                       size_t cap, size_t *len, struct event_block_info *info)
{
    if (n > EVENT_BLOCK_MAX_EVENTS)
        return -EINVAL;
    /* The payload, then as much room for its compressed form. */
    size_t most = (size_t)n * EVENT_MAX_BYTES;
    if (scratch_reserve(&e->buf, &e->cap, 2 * most))
        return -ENOMEM;

    size_t raw = encode_columns(ev, n, e->buf);
    const uint8_t *body = e->buf;
    size_t body_len = raw;
    uint8_t flags = 0;

    /*
     * Compressed output is kept only when smaller than the raw payload, so
     * zstd gets one byte less than that and gives up as soon as it cannot
     * win; any zstd failure, memory included, leaves the block raw. zstd
     * writes to scratch rather than to out: it may need slack beyond what
     * it finally writes, and this way the block is a function of the events
     * alone and -ENOSPC means exactly that it does not fit in cap.
     */
    if (raw > 1) {
        uint8_t *z = e->buf + most;
        size_t zlen = ZSTD_compressCCtx(e->cctx, z, raw - 1, e->buf, raw, EVENT_BLOCK_ZSTD_LEVEL);
        if (!ZSTD_isError(zlen)) {
            body = z;
            body_len = zlen;
            flags = EVENT_BLOCK_F_ZSTD;
        }
    }

    uint8_t hdr[EVENT_BLOCK_HEADER_MAX];
    size_t hlen = put_header(hdr, flags, n, raw);
    if (cap < hlen || cap - hlen < body_len)
        return -ENOSPC;
    memcpy(out, hdr, hlen);
    memcpy(out + hlen, body, body_len);
    *len = hlen + body_len;
    event_block_summarize(ev, n, info);
    return 0;
}

struct header {
    uint8_t flags;
    uint32_t count;
    size_t raw;  /* payload bytes once decompressed */
    size_t hlen; /* header bytes */
};

static int get_header(const uint8_t *in, size_t len, struct header *h)
{
    const uint8_t *end = in + len;
    const uint8_t *p;
    uint64_t count, raw;

    if (len < 3 || in[0] != EVENT_BLOCK_MAGIC || in[1] != EVENT_BLOCK_VERSION ||
        (in[2] & ~EVENT_BLOCK_F_ZSTD))
        return -EBADMSG;
    p = get_varint(in + 3, end, 32, &count);
    if (!p || count > EVENT_BLOCK_MAX_EVENTS)
        return -EBADMSG;
    p = get_varint(p, end, 64, &raw);
    /* Bounds from the count: a size outside them cannot be a valid payload,
     * and so is never used to size the scratch. */
    if (!p || raw < count * EVENT_MIN_BYTES || raw > count * EVENT_MAX_BYTES)
        return -EBADMSG;
    h->flags = in[2];
    h->count = (uint32_t)count;
    h->raw = (size_t)raw;
    h->hlen = (size_t)(p - in);
    return 0;
}

int event_block_peek_count(const uint8_t *in, size_t len, uint32_t *n)
{
    struct header h;
    int rc = get_header(in, len, &h);

    if (rc)
        return rc;
    *n = h.count;
    return 0;
}

/* The inverse of encode_columns(); 0 or -EBADMSG unless the columns fill
 * buf[0..len) exactly. */
static int decode_columns(const uint8_t *buf, size_t len, struct event *out, uint32_t n)
{
    const uint8_t *p = buf, *end = buf + len;
    uint64_t v;

    if (len < n)
        return -EBADMSG;
    for (uint32_t i = 0; i < n; i++)
        out[i].kind = *p++;
    for (uint32_t i = 0; i < n; i++) {
        if (!(p = get_varint(p, end, 32, &v)))
            return -EBADMSG;
        out[i].name = (uint32_t)v;
    }

    uint32_t step = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(p = get_varint(p, end, 32, &v)))
            return -EBADMSG;
        step += unzigzag32((uint32_t)v);
        out[i].step = step;
    }

    for (uint32_t i = 0; i < n; i++) {
        if (out[i].kind == STROBE_EV_COUNTER) {
            if (end - p < 8)
                return -EBADMSG;
            out[i].value = to_i64(load_le64(p));
            p += 8;
        } else {
            if (!(p = get_varint(p, end, 64, &v)))
                return -EBADMSG;
            out[i].value = to_i64(unzigzag64(v));
        }
    }

    uint64_t base = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(p = get_varint(p, end, 64, &v)))
            return -EBADMSG;
        uint64_t ts = base + unzigzag64(v);
        out[i].ts_ns = to_i64(ts);
        base = ts + (out[i].kind == STROBE_EV_COMPLETE ? (uint64_t)out[i].value : 0);
    }
    return p == end ? 0 : -EBADMSG;
}

int event_block_decode(struct event_decoder *d, const uint8_t *in, size_t len, struct event *out,
                       uint32_t cap, uint32_t *n)
{
    struct header h;
    const uint8_t *payload;
    int rc;

    *n = 0;
    if ((rc = get_header(in, len, &h)))
        return rc;
    if (h.count > cap)
        return -ENOSPC;

    size_t body = len - h.hlen;
    if (h.flags & EVENT_BLOCK_F_ZSTD) {
        /* The encoder compresses only when that makes the payload smaller. */
        if (body >= h.raw)
            return -EBADMSG;
        if ((rc = scratch_reserve(&d->buf, &d->cap, h.raw)))
            return rc;
        /* dst capacity is exactly h.raw, so a frame that inflates to more
         * fails inside zstd rather than writing past it. */
        size_t got = ZSTD_decompressDCtx(d->dctx, d->buf, h.raw, in + h.hlen, body);
        if (ZSTD_isError(got) || got != h.raw)
            return -EBADMSG;
        payload = d->buf;
    } else {
        if (body != h.raw)
            return -EBADMSG;
        payload = in + h.hlen;
    }
    if ((rc = decode_columns(payload, h.raw, out, h.count)))
        return rc;
    *n = h.count;
    return 0;
}
