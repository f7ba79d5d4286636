/*
 * Event rings in shared memory (the ABI is include/strobe/ring.h): the
 * recorder creates a segment and drains it; writers attach by name, claim a
 * ring per thread and push records without ever blocking.
 *
 * Threading: a ring has one producer, the thread that claimed it, and one
 * consumer, the recorder's drain. ring_claim may race with other claimers
 * (an atomic compare-and-swap settles it); everything else on a ring is
 * single-producer/single-consumer.
 */
#ifndef STROBE_RING_RING_H
#define STROBE_RING_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strobe/ring.h"

struct ring_segment {
    struct strobe_shm_header *hdr; /* the mapping */
    struct strobe_ring_ctl *ctl;   /* hdr->ring_count controls */
    struct strobe_record *records; /* ring i at records + i * ring_records */
    size_t bytes;                  /* mapped length */
    uint32_t ring_count;           /* copies of the header's, validated at attach */
    uint32_t ring_records;
    int owner; /* 1: this process created it and unlinks it */
    char name[64];
    /* the consumer's own copies: a writer can scribble on the segment, so
     * the drain never trusts a tail it did not write itself */
    uint64_t *shadow_tail;    /* per ring; NULL for writers */
    uint64_t reclaimed_drops; /* drop counts of rings already reclaimed */
    /* the consumer's TSC calibration: two (ticks, ns) readings, the first at
     * creation, the second renewed at every drain; ticks convert along the
     * line through them */
    uint64_t cal_tsc0, cal_ns0, cal_tsc1, cal_ns1;
};

/* Whether this machine's TSC may stamp events: x86, the kernel's clock
 * source is "tsc", and $STROBE_TSC is not "0". */
int ring_tsc_usable(void);
/* ns on CLOCK_MONOTONIC for a TSC reading, by the segment's calibration. */
uint64_t ring_tsc_to_ns(const struct ring_segment *seg, uint64_t tsc);

/* Create a segment of ring_count rings of ring_records records (a power of
 * two) named name ("/strobe-..."). 0 or -errno. */
int ring_segment_create(struct ring_segment *seg, const char *name, uint32_t ring_count,
                        uint32_t ring_records);
/* Map an existing segment and check its header against the ABI and its own
 * size. 0, -errno, or -EPROTO for a segment that is not a valid one. */
int ring_segment_attach(struct ring_segment *seg, const char *name);
/* Unmap; the creator also removes the name. */
void ring_segment_release(struct ring_segment *seg);

/* Claim a free ring for thread tid of process pid: its index, or -ENOSPC
 * (counted in the header's no_ring by the caller that drops). A ring the
 * same pid and tid still own from another program is retired first: this
 * thread wrote it before an exec. (Two copies of libstrobe in one program,
 * the Python package's and a C extension's, each keep theirs.)
 * The claim notes the process's parent and name, for a recorder that never
 * sees the process in /proc (it came and went between two drains). */
int ring_claim(struct ring_segment *seg, pid_t pid, pid_t tid);
/* The parent and name ring i's claimer noted: ppid 0 and "" when not known. */
void ring_owner_info(const struct ring_segment *seg, int i, int32_t *ppid, char comm[16]);

/* Push one record on ring i (kind, name_id, step, ts, value filled by the
 * caller; seq and check are set here). 0, or -ENOSPC when the ring is full:
 * the event is dropped and counted. Never blocks. */
int ring_push(struct ring_segment *seg, int i, struct strobe_record rec);
/* Push a name definition: one STROBE_EV_NAME record and the name's bytes,
 * published together or not at all (dropped and counted as one event). */
int ring_push_name(struct ring_segment *seg, int i, uint32_t name_id, const char *name,
                   int64_t ts_ns);

/* Count one dropped event on ring i (the producer's call, e.g. for an event
 * whose name could not be used). */
void ring_count_drop(struct ring_segment *seg, int i);

/* What a drain saw. */
struct drain_stats {
    uint64_t records;   /* events handed to the callback */
    uint64_t names;     /* name definitions handed over */
    uint64_t invalid;   /* records rejected: bad check, seq or kind */
    uint64_t corrupt;   /* rings whose indexes made no sense (skipped to head) */
    uint64_t dropped;   /* events dropped so far in the whole segment: full rings,
                         * rings reclaimed, and no free ring */
    uint64_t reclaimed; /* rings of dead threads returned to the free pool */
};

/* Called for each valid event of ring i (owner pid, tid), and for each name
 * definition with name set (NUL-terminated, valid during the call). */
typedef void drain_fn(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                      const char *name, void *arg);

/*
 * Drain every claimed ring: hand over what was published since the last
 * drain, validate every record (a segment full of garbage is rejected, never
 * followed), and return rings whose owner thread has died to the free pool
 * once drained. Never blocks, never trusts an index it did not check.
 */
void ring_drain(struct ring_segment *seg, drain_fn *fn, void *arg, struct drain_stats *st);

#endif
