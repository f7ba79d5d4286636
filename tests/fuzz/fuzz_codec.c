/*
 * libFuzzer target for the series block codec (formats 1 and 2).
 *
 * Input: 4 bytes of point count and 8 of the block's start time (both
 * little-endian), then the stream. Two checks per input:
 *   1. decoding arbitrary bytes with an arbitrary count never reads out of
 *      bounds, ends in 0 or -EBADMSG, and what it yields re-encodes and
 *      decodes back bit-exactly;
 *   2. the same bytes read as (timestamp, value) pairs encode into a tight
 *      buffer without overrunning it, and decode back bit-exactly.
 */
#include "codec/gorilla.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS (1u << 16)

struct point {
    int64_t ts;
    uint64_t bits;
};

static struct point g_pts[MAX_POINTS];
static uint8_t g_buf[MAX_POINTS * 22 + 32]; /* 170 bits a point at most */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double to_double(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static uint64_t to_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Decodes e's block and insists on exactly pts[0..n). */
static void check_block(const struct block_enc *e, const struct point *pts, uint32_t n)
{
    size_t size = block_enc_size(e);
    uint8_t *copy = malloc(size ? size : 1);
    struct block_dec d;
    int64_t ts;
    double v;

    if (!copy)
        abort();
    memcpy(copy, e->buf, size);
    if (e->st.count != n)
        abort();
    block_dec_init(&d, copy, size, n, n ? pts[0].ts : 0);
    for (uint32_t i = 0; i < n; i++) {
        if (block_dec_next(&d, &ts, &v) != 1)
            abort();
        if (ts != pts[i].ts || to_bits(v) != pts[i].bits)
            abort();
    }
    if (block_dec_next(&d, &ts, &v) != 0)
        abort();
    free(copy);
}

static void decode_arbitrary(const uint8_t *data, size_t size)
{
    uint32_t count = 0;
    uint64_t start = 0;
    struct block_dec d;
    struct block_enc e;
    int64_t ts;
    double v;
    int rc;
    uint32_t n = 0, seen = 0;
    int64_t prev_ts = 0;

    for (size_t i = 0; i < 4 && i < size; i++)
        count |= (uint32_t)data[i] << (8 * i);
    data += size < 4 ? size : 4;
    size -= size < 4 ? size : 4;
    if (size >= 8)
        start = load_le64(data);
    data += size < 8 ? size : 8;
    size -= size < 8 ? size : 8;

    int64_t start_ns;
    memcpy(&start_ns, &start, sizeof(start_ns));
    block_dec_init(&d, data, size, count, start_ns);
    while ((rc = block_dec_next(&d, &ts, &v)) == 1) {
        if (seen >= count || (seen && ts <= prev_ts))
            abort();
        prev_ts = ts;
        seen++;
        if (n < MAX_POINTS) {
            g_pts[n].ts = ts;
            g_pts[n++].bits = to_bits(v);
        }
    }
    if (rc != 0 && rc != -EBADMSG)
        abort();
    if (rc == 0 && seen != count)
        abort();
    if (rc == -EBADMSG && block_dec_next(&d, &ts, &v) != -EBADMSG)
        abort();

    block_enc_init(&e, g_buf, (size_t)n * 22 + 32);
    for (uint32_t i = 0; i < n; i++)
        if (block_enc_append(&e, g_pts[i].ts, to_double(g_pts[i].bits)) != 0)
            abort();
    check_block(&e, g_pts, n);
}

static void encode_arbitrary(const uint8_t *data, size_t size)
{
    /* A tight heap buffer, so ASan sees any write past cap. */
    size_t cap = size ? data[0] : 0;
    uint8_t *buf = malloc(cap ? cap : 1);
    struct block_enc e;
    uint32_t n = 0;

    if (!buf)
        abort();
    memset(buf, 0xa5, cap);
    if (size > 1 && (data[1] & 1))
        block_enc_init_legacy(&e, buf, cap);
    else
        block_enc_init(&e, buf, cap);
    for (size_t off = 1; off + 16 <= size && n < MAX_POINTS; off += 16) {
        uint64_t ts_bits = load_le64(data + off);
        uint64_t bits = load_le64(data + off + 8);
        int64_t ts;
        memcpy(&ts, &ts_bits, sizeof(ts));
        size_t before = e.bits;
        int rc = block_enc_append(&e, ts, to_double(bits));
        if (rc == 0) {
            g_pts[n].ts = ts;
            g_pts[n++].bits = bits;
        } else if (rc == -EINVAL) {
            if (!n || ts > g_pts[n - 1].ts || e.bits != before)
                abort();
        } else if (rc == -ENOSPC) {
            if (e.bits != before || e.bits + GORILLA_MAX_POINT_BITS <= cap * 8)
                abort();
        } else {
            abort();
        }
    }
    if (block_enc_size(&e) > cap)
        abort();
    check_block(&e, g_pts, n);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode_arbitrary(data, size);
    encode_arbitrary(data, size);
    return 0;
}
