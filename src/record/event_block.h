/*
 * Event blocks as the store keeps them: the events of one thread encoded
 * (codec/events.h) and described by a store event_block_record. The
 * recorder seals its blocks with event_block_build; the importers store
 * theirs through an event_block_writer, in blocks of EVENT_BLOCK_EVENTS, so
 * an imported run's blocks are encoded and cut as a recorded run's are.
 */
#ifndef STROBE_RECORD_EVENT_BLOCK_H
#define STROBE_RECORD_EVENT_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "codec/events.h"
#include "store/store.h"

/*
 * Encode ev[0..n) of thread (pid, tid) into out[0..cap) and describe it in
 * *rec, whose data points at out (the caller moves it if out moves).
 * 0, or event_block_encode's error; cap = event_block_bound(n) never fails
 * for space.
 */
int event_block_build(struct event_encoder *e, const struct event *ev, uint32_t n, int64_t pid,
                      int64_t tid, uint8_t *out, size_t cap, struct event_block_record *rec);

/* An encoder and an output buffer for blocks of up to EVENT_BLOCK_EVENTS,
 * caller-owned, reused for every block it stores. */
struct event_block_writer {
    struct event_encoder enc;
    uint8_t *out; /* the block being stored */
    size_t cap;   /* event_block_bound(EVENT_BLOCK_EVENTS) */
};

/* 0, or -ENOMEM (w is then released and may be released again). */
int event_block_writer_init(struct event_block_writer *w);
/* Frees what init allocated; w may be released twice, or after a failed init. */
void event_block_writer_release(struct event_block_writer *w);

/*
 * Store ev[0..n) of thread (pid, tid) into run_id's events, in blocks of
 * EVENT_BLOCK_EVENTS in the order given. 0, or negative with s->err saying
 * why (the store's own message when an insert failed).
 */
int event_block_writer_store(struct event_block_writer *w, struct store *s, const char *run_id,
                             int64_t pid, int64_t tid, const struct event *ev, uint32_t n);

#endif
