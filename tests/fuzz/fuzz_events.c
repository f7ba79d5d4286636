/*
 * libFuzzer target for the event block codec. Two checks per input:
 *   1. the bytes as a block: decoding never reads out of bounds and ends in
 *      0, -EBADMSG, or -ENOSPC when the header's count exceeds the room;
 *      what decodes re-encodes and decodes back exactly, and a raw block that
 *      re-encodes raw comes back byte for byte (the format is canonical);
 *   2. the bytes as events (25 bytes each): they encode into a heap buffer of
 *      exactly the block's size (one byte less is -ENOSPC), decode back
 *      exactly, and every truncation of the block is -EBADMSG.
 */
#include "codec/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS   (1u << 14)
#define RECORD_BYTES 25 /* ts 8, value 8, name 4, step 4, kind 1 */

static struct event_encoder g_enc;
static struct event_decoder g_dec;
static struct event g_ev[MAX_EVENTS];
static struct event g_out[MAX_EVENTS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static void check_same(const struct event *a, const struct event *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].ts_ns != b[i].ts_ns || a[i].value != b[i].value || a[i].name != b[i].name ||
            a[i].step != b[i].step || a[i].kind != b[i].kind)
            abort();
}

/* Encode ev[0..n) into a buffer of exactly the block's size; returns it
 * (malloc'ed, caller frees) and its length. */
static uint8_t *encode_exact(const struct event *ev, uint32_t n, size_t *len)
{
    size_t bound = event_block_bound(n);
    uint8_t *buf = malloc(bound);
    struct event_block_info info, want;

    if (!buf || event_block_encode(&g_enc, ev, n, buf, bound, len, &info) != 0)
        abort();
    event_block_summarize(ev, n, &want);
    if (memcmp(&info, &want, sizeof(info)) != 0 || info.count != n)
        abort();
    uint8_t *exact = malloc(*len);
    if (!exact)
        abort();
    if (event_block_encode(&g_enc, ev, n, exact, *len, len, &info) != 0)
        abort();
    if (memcmp(exact, buf, *len) != 0)
        abort();
    if (event_block_encode(&g_enc, ev, n, buf, *len - 1, len, &info) != -ENOSPC)
        abort();
    free(buf);
    return exact;
}

/* Decode blk[0..len), which must hold exactly ev[0..n). */
static void check_decode(const uint8_t *blk, size_t len, const struct event *ev, uint32_t n)
{
    uint32_t got = 0, peek = 0;

    if (event_block_peek_count(blk, len, &peek) != 0 || peek != n)
        abort();
    if (event_block_decode(&g_dec, blk, len, g_out, MAX_EVENTS, &got) != 0 || got != n)
        abort();
    check_same(g_out, ev, n);
}

static void decode_arbitrary(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    uint32_t n = UINT32_MAX, peek = 0;

    if (!copy)
        abort();
    memcpy(copy, data, size);
    int rc = event_block_decode(&g_dec, copy, size, g_out, MAX_EVENTS, &n);
    if (rc == -ENOSPC) {
        if (n != 0 || event_block_peek_count(copy, size, &peek) != 0 || peek <= MAX_EVENTS)
            abort();
        free(copy);
        return;
    }
    if (rc == -EBADMSG && n == 0) {
        free(copy);
        return;
    }
    if (rc != 0 || n > MAX_EVENTS)
        abort();

    memcpy(g_ev, g_out, sizeof(g_out[0]) * n);
    size_t len;
    uint8_t *blk = encode_exact(g_ev, n, &len);
    if (!(copy[2] & EVENT_BLOCK_F_ZSTD) && !(blk[2] & EVENT_BLOCK_F_ZSTD) &&
        (len != size || memcmp(blk, copy, len) != 0))
        abort();
    check_decode(blk, len, g_ev, n);
    free(blk);
    free(copy);
}

static void encode_arbitrary(const uint8_t *data, size_t size)
{
    uint32_t n = 0;

    for (size_t off = 0; off + RECORD_BYTES <= size && n < MAX_EVENTS; off += RECORD_BYTES) {
        const uint8_t *p = data + off;
        uint64_t ts = load_le(p, 8), value = load_le(p + 8, 8);
        memcpy(&g_ev[n].ts_ns, &ts, sizeof(ts));
        memcpy(&g_ev[n].value, &value, sizeof(value));
        g_ev[n].name = (uint32_t)load_le(p + 16, 4);
        g_ev[n].step = (uint32_t)load_le(p + 20, 4);
        g_ev[n].kind = p[24];
        n++;
    }
    size_t len;
    uint8_t *blk = encode_exact(g_ev, n, &len);
    check_decode(blk, len, g_ev, n);
    /* Every cut of a small block, the ends of a large one, each from an
     * exactly sized copy so ASan sees a read past the cut. */
    for (size_t cut = 0; cut < len; cut++) {
        if (len > 512 && cut >= 32 && cut + 32 < len)
            continue;
        uint8_t *part = malloc(cut ? cut : 1);
        uint32_t got = UINT32_MAX;
        if (!part)
            abort();
        memcpy(part, blk, cut);
        if (event_block_decode(&g_dec, part, cut, g_out, MAX_EVENTS, &got) != -EBADMSG || got)
            abort();
        free(part);
    }
    free(blk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;

    if (!ready) {
        if (event_encoder_init(&g_enc) || event_decoder_init(&g_dec))
            abort();
        ready = 1;
    }
    decode_arbitrary(data, size);
    encode_arbitrary(data, size);
    return 0;
}
