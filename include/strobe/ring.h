/*
 * The event ring ABI: the layout of the shared-memory segment through which
 * training processes hand framework events to their recorder. It is an ABI:
 * writers built against one version must be readable by a recorder of the
 * same STROBE_RING_ABI; the offsets are pinned by _Static_assert below.
 *
 * Layout of a segment of header.segment_bytes:
 *
 *   struct strobe_shm_header                      (64 bytes)
 *   struct strobe_ring_ctl [ring_count]           (192 bytes each)
 *   struct strobe_record   [ring_count][ring_records]
 *
 * Each ring has one producer (the thread that claimed it) and one consumer
 * (the recorder's drain). The producer writes a record at head, then
 * publishes it by storing head+1 with release order; the consumer reads up to
 * head (acquire), copies the records out, then stores tail with release
 * order. Producer and consumer indexes sit on separate cache lines. Nothing
 * in the segment is a pointer. A writer never waits: a full ring drops the
 * event and counts it in ctl.dropped.
 *
 * A name is interned per ring: the first time a thread uses it, it writes a
 * STROBE_EV_NAME record (name_id, len) followed by ceil(len / 32) records of
 * raw name bytes, all published by one head store, so a name is never torn.
 */
#ifndef STROBE_RING_H
#define STROBE_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define STROBE_RING_MAGIC UINT32_C(0x42525453) /* "STRB" in little-endian memory */
#define STROBE_RING_ABI   1
#define STROBE_NAME_MAX   255          /* bytes of an interned name */
#define STROBE_SHM_ENV    "STROBE_SHM" /* environment variable naming the segment */

/* Header flag: writers may stamp records with the CPU's time-stamp counter
 * (rdtsc) instead of CLOCK_MONOTONIC, marking each such record's kind with
 * STROBE_EV_F_TSC; the recorder converts. It sets the flag only where the
 * kernel itself keeps time with the TSC (invariant and synchronized). */
#define STROBE_SHM_F_TSC 0x1u
#define STROBE_EV_F_TSC  0x80 /* in strobe_record.kind: ts_ns holds TSC ticks */

enum strobe_event_kind {
    STROBE_EV_NAME = 1,   /* defines name_id; len bytes follow in raw records */
    STROBE_EV_SPAN_BEGIN, /* a span opens at ts_ns */
    STROBE_EV_SPAN_END,   /* the innermost open span of name_id closes */
    STROBE_EV_COMPLETE,   /* a whole span: starts at ts_ns, lasts value ns */
    STROBE_EV_INSTANT,    /* a point in time */
    STROBE_EV_STEP,       /* step `step` begins at ts_ns */
    STROBE_EV_COUNTER,    /* value is the bits of a double */
    STROBE_EV_KIND_MAX = STROBE_EV_COUNTER
};

/* One event: 32 bytes, so two share a cache line. */
struct strobe_record {
    uint64_t ts_ns;   /* CLOCK_MONOTONIC ns, or TSC ticks with STROBE_EV_F_TSC */
    uint64_t value;   /* counter bits, span length in ns, or 0 */
    uint32_t name_id; /* interned in this ring; 0 means none */
    uint32_t step;    /* the step the event belongs to */
    uint8_t kind;     /* enum strobe_event_kind, maybe | STROBE_EV_F_TSC */
    uint8_t len;      /* STROBE_EV_NAME: the name's length in bytes */
    uint16_t seq;     /* low 16 bits of the record's index in the ring */
    uint32_t check;   /* strobe_record_check() of the other fields */
};

/* Who owns a ring: (pid << 32) | tid of the thread that claimed it, 0 when
 * free. One atomic word, so a claim (compare-and-swap from 0) publishes the
 * owner at the same time. */
static inline uint64_t strobe_ring_owner(int32_t pid, int32_t tid)
{
    return (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid;
}

struct strobe_ring_ctl {
    /* line 0: ownership, written at claim and at reclaim. owner_ppid,
     * owner_comm and retired came later in ABI 1, in what was padding:
     * writers that leave them zero mean "not known" and "not retired". */
    _Atomic uint64_t owner;   /* strobe_ring_owner(), 0 when free */
    uint64_t claim_ns;        /* CLOCK_MONOTONIC at claim */
    int32_t owner_ppid;       /* the claiming process's parent at claim; 0 if not known */
    char owner_comm[16];      /* its name at claim (/proc/PID/comm), NUL-terminated */
    _Atomic uint32_t retired; /* 1: its thread no longer writes it, though a thread of the
                                 same pid and tid lives (the process exec'd): drained and
                                 reclaimed as if dead */
    uint64_t owner_program;   /* the claiming program's AT_RANDOM bytes: a new one after an
                                 exec, the same for every copy of libstrobe in one program */
    uint8_t pad0[16];
    /* line 1: the producer's */
    _Atomic uint64_t head;    /* records ever published */
    _Atomic uint64_t dropped; /* events that did not fit */
    uint8_t pad1[48];
    /* line 2: the consumer's */
    _Atomic uint64_t tail; /* records ever consumed */
    uint8_t pad2[56];
};

struct strobe_shm_header {
    uint32_t magic;           /* STROBE_RING_MAGIC */
    uint32_t abi;             /* STROBE_RING_ABI */
    uint32_t header_bytes;    /* sizeof(struct strobe_shm_header) */
    uint32_t ctl_bytes;       /* sizeof(struct strobe_ring_ctl) */
    uint32_t record_bytes;    /* sizeof(struct strobe_record) */
    uint32_t ring_count;      /* rings in the segment */
    uint32_t ring_records;    /* records per ring, a power of two */
    uint32_t flags;           /* STROBE_SHM_F_*; unknown bits are ignored */
    uint64_t segment_bytes;   /* the whole mapping */
    uint64_t created_ns;      /* CLOCK_MONOTONIC when the recorder made it */
    _Atomic uint64_t no_ring; /* events dropped because no ring was free */
    /* bumped by the recorder after it wrote a request for the job (strobe
     * ctl torch-profile: record/control.h); writers read it, never write
     * it. It came later in ABI 1, in what was padding: writers that ignore
     * it lose nothing but the request. */
    _Atomic uint64_t control_seq;
};

_Static_assert(sizeof(struct strobe_record) == 32, "record size is ABI");
_Static_assert(offsetof(struct strobe_record, kind) == 24, "record layout is ABI");
_Static_assert(offsetof(struct strobe_record, check) == 28, "record layout is ABI");
_Static_assert(sizeof(struct strobe_ring_ctl) == 192, "ring control size is ABI");
_Static_assert(offsetof(struct strobe_ring_ctl, head) == 64, "head has its own cache line");
_Static_assert(offsetof(struct strobe_ring_ctl, owner_ppid) == 16, "ring control layout is ABI");
_Static_assert(offsetof(struct strobe_ring_ctl, retired) == 36, "ring control layout is ABI");
_Static_assert(offsetof(struct strobe_ring_ctl, owner_program) == 40, "ring control layout is ABI");
_Static_assert(offsetof(struct strobe_ring_ctl, tail) == 128, "tail has its own cache line");
_Static_assert(sizeof(struct strobe_shm_header) == 64, "header size is ABI");
_Static_assert(offsetof(struct strobe_shm_header, no_ring) == 48, "header layout is ABI");
_Static_assert(offsetof(struct strobe_shm_header, control_seq) == 56, "header layout is ABI");

/* The check word of a record: a mix of its other fields, so that a record
 * that was never written completely, or garbage, is caught by the drain. */
static inline uint32_t strobe_record_check(const struct strobe_record *r)
{
    uint64_t x = r->ts_ns ^ (r->value * UINT64_C(0x9e3779b97f4a7c15)) ^
                 ((uint64_t)r->name_id << 32 | r->step) ^
                 ((uint64_t)r->kind << 56 | (uint64_t)r->len << 48 | (uint64_t)r->seq << 32);
    x ^= x >> 29;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 32;
    return (uint32_t)x | 1u; /* never 0: zeroed memory is not a valid record */
}

#endif
