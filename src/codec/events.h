/*
 * The event block codec: a block of framework events of one thread (the store
 * keeps one stream per (run, pid, tid)) encoded as columns, then compressed
 * with zstd. The byte format is specified in docs/store-format.md ("Event
 * blocks"); src/codec/events.c must stay in step with it.
 *
 * Columns are the point: kinds and names of a training loop repeat with the
 * period of a step (data, forward, backward, optimizer, step, ...), so zstd
 * turns those columns into almost nothing and what is left is the jitter of
 * the timestamps and durations.
 *
 * Ownership: the encoder and the decoder are caller-owned structs with
 * _init/_release. Each owns a scratch buffer and a zstd context, allocated at
 * init and grown only when a larger block than any before comes; encoding
 * and decoding blocks of a steady size never allocate. Neither keeps a
 * pointer to the caller's events or bytes after a call returns. One encoder
 * or decoder must not be used by two threads at once.
 */
#ifndef STROBE_CODEC_EVENTS_H
#define STROBE_CODEC_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "strobe/ring.h" /* enum strobe_event_kind */

#define EVENT_BLOCK_MAGIC   0xEB /* first byte of every block */
#define EVENT_BLOCK_VERSION 1    /* second byte */
#define EVENT_BLOCK_F_ZSTD  0x01 /* flags: the payload is one zstd frame */
/* Most events one block may hold. A decoder refuses larger counts, so a
 * corrupt header cannot make it allocate more than ~32 MiB of scratch. */
#define EVENT_BLOCK_MAX_EVENTS (UINT32_C(1) << 20)
/* Bytes of the header at most: magic, version, flags, the count (at most
 * 2^20: 3 varint bytes) and the payload size (at most 31 * 2^20: 4). */
#define EVENT_BLOCK_HEADER_MAX 10
/* Payload bytes one event takes at most: kind 1, name 5, step 5, ts 10,
 * value 10. */
#define EVENT_MAX_BYTES 31
/* Payload bytes one event takes at least: one per column (a counter's value
 * takes 8, which only makes the bound looser). */
#define EVENT_MIN_BYTES 5
/* zstd level. On event columns level 3 is 0.1% smaller than 1 and level 19
 * 0.9% for 50x the time; negative levels skip entropy coding of literals
 * and come out 15% larger (measured, docs/store-format.md). */
#define EVENT_BLOCK_ZSTD_LEVEL 1

struct event {
    int64_t ts_ns; /* ns since the Unix epoch (UTC); a complete span's start */
    int64_t value; /* COMPLETE: length in ns; COUNTER: the double's bits;
                      STEP: the step number; else usually 0, any value kept */
    uint32_t name; /* run-wide name id, 0 = none */
    uint32_t step; /* the step the event belongs to */
    uint8_t kind;  /* enum strobe_event_kind (never STROBE_EV_NAME); any byte kept */
};

/* What a block covers, kept beside it so queries by time or step need not
 * decode it. */
struct event_block_info {
    uint32_t count;    /* events in the block */
    int64_t start_ns;  /* smallest ts_ns; 0 when count is 0 */
    int64_t end_ns;    /* largest event end, see event_block_summarize() */
    uint32_t step_min; /* smallest step; 0 when count is 0 */
    uint32_t step_max; /* largest step; 0 when count is 0 */
};

/* zstd's context types, declared here so users of this header do not need
 * zstd.h; they are the same structs zstd.h typedefs as ZSTD_CCtx/ZSTD_DCtx. */
struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

struct event_encoder {
    uint8_t *buf;             /* scratch: the raw payload, then its compressed form */
    size_t cap;               /* its size in bytes */
    struct ZSTD_CCtx_s *cctx; /* reused for every block */
};

struct event_decoder {
    uint8_t *buf;             /* decompressed payload scratch */
    size_t cap;               /* its size in bytes */
    struct ZSTD_DCtx_s *dctx; /* reused for every block */
};

/* 0, or -ENOMEM (e is then released and may be released again). Sized for
 * blocks of a few thousand events; larger blocks grow the scratch once. */
int event_encoder_init(struct event_encoder *e);
/* Frees what init allocated; e may be released twice, or after a failed init. */
void event_encoder_release(struct event_encoder *e);

int event_decoder_init(struct event_decoder *d);
void event_decoder_release(struct event_decoder *d);

/* An output capacity that is always enough for n events (n up to
 * EVENT_BLOCK_MAX_EVENTS): a block is stored raw when zstd would not shrink
 * it, so it never exceeds header plus raw payload. */
size_t event_block_bound(uint32_t n);

/*
 * The summary of ev[0..n): count, smallest ts_ns, step range, and end_ns, the
 * largest end of an event, where a COMPLETE span with a positive value ends at
 * ts_ns + value (saturating at INT64_MAX) and every other event (a COMPLETE
 * with a negative length included) ends at ts_ns; so start_ns <= end_ns.
 * All zero when n is 0.
 */
void event_block_summarize(const struct event *ev, uint32_t n, struct event_block_info *info);

/*
 * Encode ev[0..n) in the order given (not necessarily sorted by ts_ns: a
 * complete span is emitted when it ends, after the spans nested in it) into
 * out[0..cap). Returns 0 with the block's size in *len and its summary in
 * *info; -ENOSPC when the block is larger than cap (event_block_bound(n)
 * never is; the block depends on the events only, never on cap),
 * -ENOMEM when the scratch could not grow, -EINVAL when n exceeds
 * EVENT_BLOCK_MAX_EVENTS. On failure out, *len and *info are unspecified.
 * n may be 0.
 */
int event_block_encode(struct event_encoder *e, const struct event *ev, uint32_t n, uint8_t *out,
                       size_t cap, size_t *len, struct event_block_info *info);

/*
 * Decode the block in[0..len) into out[0..cap). Returns 0 with the event count
 * in *n; -EBADMSG when the block is malformed in any way (truncated, trailing
 * bytes, bad magic, version or flags, a varint that runs off its column or is
 * not in shortest form, columns that do not add up to the payload size, a zstd
 * error or a decompressed size other than the header's); -ENOSPC when the
 * header's count exceeds cap, checked before the payload is looked at (see
 * event_block_peek_count()); -ENOMEM
 * when the scratch could not grow. Never reads in[] past len nor writes
 * out[] past cap. On failure out[0..cap) may have been written and *n is 0.
 */
int event_block_decode(struct event_decoder *d, const uint8_t *in, size_t len, struct event *out,
                       uint32_t cap, uint32_t *n);

/* The event count from a block's header without decoding it, so the caller
 * can size out: 0, or -EBADMSG when the header is malformed (the payload is
 * not checked). */
int event_block_peek_count(const uint8_t *in, size_t len, uint32_t *n);

#endif
