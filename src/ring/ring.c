/*
 * The event segment and its rings, both sides: the writer's claim and push
 * (libstrobe) and the recorder's validating drain. The layout and the
 * publication order are in include/strobe/ring.h.
 *
 * Claim: a thread claims a ring with a compare-and-swap of the owner word
 * from 0, so the owner is published with the claim. Each claim also notes its
 * program (the first 8 of the kernel's random bytes for each exec,
 * AT_RANDOM): a ring that the same pid and tid hold from another program is
 * the image before an exec, so the claim marks it retired, and the drain
 * empties it and returns it to the pool as for a dead thread. Without that, a
 * Python that exec'd itself 140 times lost its events past the 128th ring. A
 * claim notes the process's parent and name too (owner_ppid, owner_comm),
 * for a process gone from /proc before a drain saw it (a child reaped by its
 * own parent within milliseconds).
 *
 * The drain trusts nothing in the segment:
 *  - it copies each record out of the shared memory before judging it;
 *  - it keeps its own copy of every tail and never trusts one it did not
 *    write: a head further than one ring ahead is corruption and is skipped,
 *    not followed;
 *  - a record carries the low 16 bits of its index (seq) and a check word
 *    mixing its other fields (never 0), so garbage and records never written
 *    completely are rejected and counted, never handed on;
 *  - it checks the owner thread first (tgkill(pid, tid, 0)); a ring whose
 *    thread is gone is drained one last time and returned to the free pool,
 *    its drop count kept. A writer killed mid-record has not moved head, so
 *    nothing half-written is ever visible.
 *
 * Time stamps: two clock_gettime(CLOCK_MONOTONIC) calls cost 45 ns of a span
 * on the development VM (22.4 ns each through the vDSO), more than the whole
 * budget. Where the kernel itself keeps time with the TSC (its clock source
 * is tsc: it checked the TSC for invariance and cross-CPU synchronisation,
 * and drops it if it misbehaves), the recorder sets STROBE_SHM_F_TSC and
 * writers stamp begin, end and instant records with rdtsc (about 10 ns),
 * flagged STROBE_EV_F_TSC. The drain converts ticks to CLOCK_MONOTONIC ns
 * along the line through two (ticks, ns) readings: one taken when the
 * segment was made, one renewed at every drain, so the slope is measured over
 * the whole run so far. Tested: every stamp lies within 2 us of the
 * clock_gettime readings taken around its call, over 100 ms. STROBE_TSC=0
 * in the recorder's environment turns this off; records with the flag in a
 * segment without it are rejected as invalid.
 */
#include "ring/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_COUNT_MAX   4096
#define RING_RECORDS_MIN 64
#define RING_RECORDS_MAX (1u << 24)

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static uint64_t read_tsc(void)
{
    return __rdtsc();
}
#else
static uint64_t read_tsc(void)
{
    return 0;
}
#endif

int ring_tsc_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
    const char *env = getenv("STROBE_TSC");
    if (env && strcmp(env, "0") == 0)
        return 0;
    /* the kernel checks the TSC for invariance and cross-CPU sync before it
     * picks it, and drops it when it misbehaves: follow its choice */
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == 0);
#else
    return 0;
#endif
}

/* A (ticks, ns) pair read as close together as the clocks allow. */
static void calibration_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t a = mono_ns();
    *tsc = read_tsc();
    uint64_t b = mono_ns();
    *ns = a + (b - a) / 2;
}

uint64_t ring_tsc_to_ns(const struct ring_segment *seg, uint64_t tsc)
{
    uint64_t dt = seg->cal_tsc1 - seg->cal_tsc0;
    if (dt == 0)
        return seg->cal_ns0;
    /* signed 128-bit: a reading before the first pair extrapolates backwards */
    __int128 ticks = (__int128)tsc - (__int128)seg->cal_tsc0;
    __int128 ns = ticks * (__int128)(seg->cal_ns1 - seg->cal_ns0) / (__int128)dt;
    return (uint64_t)((__int128)seg->cal_ns0 + ns);
}

static size_t segment_size(uint32_t ring_count, uint32_t ring_records)
{
    return sizeof(struct strobe_shm_header) + (size_t)ring_count * sizeof(struct strobe_ring_ctl) +
           (size_t)ring_count * ring_records * sizeof(struct strobe_record);
}

static int valid_shape(uint32_t ring_count, uint32_t ring_records)
{
    return ring_count >= 1 && ring_count <= RING_COUNT_MAX && ring_records >= RING_RECORDS_MIN &&
           ring_records <= RING_RECORDS_MAX && (ring_records & (ring_records - 1)) == 0;
}

static void segment_point(struct ring_segment *seg, void *base)
{
    seg->hdr = base;
    seg->ctl = (struct strobe_ring_ctl *)((char *)base + sizeof(struct strobe_shm_header));
    seg->records = (struct strobe_record *)(seg->ctl + seg->ring_count);
}

static int map_fd(struct ring_segment *seg, int fd, size_t bytes)
{
    void *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return -errno;
    seg->bytes = bytes;
    segment_point(seg, base);
    return 0;
}

int ring_segment_create(struct ring_segment *seg, const char *name, uint32_t ring_count,
                        uint32_t ring_records)
{
    memset(seg, 0, sizeof(*seg));
    if (!valid_shape(ring_count, ring_records) || strlen(name) >= sizeof(seg->name))
        return -EINVAL;
    seg->shadow_tail = calloc(ring_count, sizeof(*seg->shadow_tail));
    if (!seg->shadow_tail)
        return -ENOMEM;
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        int err = -errno;
        free(seg->shadow_tail);
        return err;
    }
    size_t bytes = segment_size(ring_count, ring_records);
    seg->ring_count = ring_count;
    seg->ring_records = ring_records;
    int rc = ftruncate(fd, (off_t)bytes) < 0 ? -errno : map_fd(seg, fd, bytes);
    close(fd);
    if (rc < 0) {
        shm_unlink(name);
        free(seg->shadow_tail);
        return rc;
    }
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->owner = 1;
    struct strobe_shm_header *h = seg->hdr; /* ftruncate zeroed it */
    h->abi = STROBE_RING_ABI;
    h->header_bytes = sizeof(*h);
    h->ctl_bytes = sizeof(struct strobe_ring_ctl);
    h->record_bytes = sizeof(struct strobe_record);
    h->ring_count = ring_count;
    h->ring_records = ring_records;
    h->segment_bytes = bytes;
    h->created_ns = mono_ns();
    if (ring_tsc_usable()) {
        h->flags |= STROBE_SHM_F_TSC;
        calibration_pair(&seg->cal_tsc0, &seg->cal_ns0);
        seg->cal_tsc1 = seg->cal_tsc0;
        seg->cal_ns1 = seg->cal_ns0;
    }
    /* the magic last: a writer that attaches sees a whole header or none */
    atomic_thread_fence(memory_order_release);
    h->magic = STROBE_RING_MAGIC;
    return 0;
}

int ring_segment_attach(struct ring_segment *seg, const char *name)
{
    memset(seg, 0, sizeof(*seg));
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct stat st;
    struct strobe_shm_header h;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && (size_t)st.st_size < sizeof(h))
        rc = -EPROTO;
    if (rc == 0 && pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        rc = -EPROTO;
    /* every field that sizes the layout is checked against the file */
    if (rc == 0 && (h.magic != STROBE_RING_MAGIC || h.abi != STROBE_RING_ABI ||
                    h.header_bytes != sizeof(h) || h.ctl_bytes != sizeof(struct strobe_ring_ctl) ||
                    h.record_bytes != sizeof(struct strobe_record) ||
                    !valid_shape(h.ring_count, h.ring_records) ||
                    h.segment_bytes != segment_size(h.ring_count, h.ring_records) ||
                    (uint64_t)st.st_size != h.segment_bytes))
        rc = -EPROTO;
    if (rc == 0) {
        seg->ring_count = h.ring_count;
        seg->ring_records = h.ring_records;
        rc = map_fd(seg, fd, h.segment_bytes);
    }
    close(fd);
    if (rc == 0)
        snprintf(seg->name, sizeof(seg->name), "%s", name);
    return rc;
}

void ring_segment_release(struct ring_segment *seg)
{
    if (seg->hdr)
        munmap(seg->hdr, seg->bytes);
    if (seg->owner)
        shm_unlink(seg->name);
    free(seg->shadow_tail);
    memset(seg, 0, sizeof(*seg));
}

/* The process's name, as /proc/PID/comm gives it (the main thread's). */
static void own_comm(char comm[16])
{
    memset(comm, 0, 16);
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, comm, 15);
    close(fd);
    if (n > 0 && comm[n - 1] == '\n')
        n--;
    comm[n > 0 ? n : 0] = '\0';
}

/* Which program this is: the kernel's 16 random bytes for each exec
 * (AT_RANDOM), the first 8; 0 when not known. */
static uint64_t this_program(void)
{
    const void *random = (const void *)getauxval(AT_RANDOM);
    uint64_t id = 0;
    if (random)
        memcpy(&id, random, sizeof(id));
    return id;
}

int ring_claim(struct ring_segment *seg, pid_t pid, pid_t tid)
{
    uint64_t me = strobe_ring_owner(pid, tid), program = this_program();
    /* a ring this pid and tid hold from another program: the one before an
     * exec, which writes no more. The drain frees only rings whose owner is
     * dead or retired, so the owner cannot change between the two reads. */
    for (uint32_t i = 0; i < seg->ring_count; i++) {
        struct strobe_ring_ctl *c = &seg->ctl[i];
        if (atomic_load_explicit(&c->owner, memory_order_acquire) == me && program &&
            c->owner_program && c->owner_program != program)
            atomic_store_explicit(&c->retired, 1, memory_order_release);
    }
    for (uint32_t i = 0; i < seg->ring_count; i++) {
        uint64_t free_owner = 0;
        struct strobe_ring_ctl *c = &seg->ctl[i];
        if (atomic_load_explicit(&c->owner, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&c->owner, &free_owner, me,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            c->claim_ns = mono_ns();
            c->owner_ppid = (int32_t)getppid();
            own_comm(c->owner_comm); /* before the first record: the drain reads it after one */
            c->owner_program = program;
            return (int)i;
        }
    }
    return -ENOSPC; /* the caller counts each event it drops for it (ring.h) */
}

static struct strobe_record *slot(struct ring_segment *seg, int i, uint64_t index)
{
    return &seg->records[(size_t)i * seg->ring_records + (index & (seg->ring_records - 1))];
}

void ring_count_drop(struct ring_segment *seg, int i)
{
    struct strobe_ring_ctl *c = &seg->ctl[i];
    /* only the producer writes it: no read-modify-write needed */
    atomic_store_explicit(&c->dropped, atomic_load_explicit(&c->dropped, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Room for n records on ring i? Then its head; else count a drop. */
static int reserve(struct ring_segment *seg, int i, uint64_t n, uint64_t *head)
{
    struct strobe_ring_ctl *c = &seg->ctl[i];
    *head = atomic_load_explicit(&c->head, memory_order_relaxed); /* only we write it */
    uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
    if (*head - tail + n > seg->ring_records) {
        ring_count_drop(seg, i);
        return -ENOSPC;
    }
    return 0;
}

static void seal_record(struct strobe_record *rec, uint64_t index)
{
    rec->seq = (uint16_t)index;
    rec->check = strobe_record_check(rec);
}

int ring_push(struct ring_segment *seg, int i, struct strobe_record rec)
{
    uint64_t head;
    if (reserve(seg, i, 1, &head) < 0)
        return -ENOSPC;
    seal_record(&rec, head);
    *slot(seg, i, head) = rec;
    atomic_store_explicit(&seg->ctl[i].head, head + 1, memory_order_release);
    return 0;
}

int ring_push_name(struct ring_segment *seg, int i, uint32_t name_id, const char *name,
                   int64_t ts_ns)
{
    size_t len = strnlen(name, STROBE_NAME_MAX + 1);
    if (len == 0 || len > STROBE_NAME_MAX)
        return -EINVAL;
    uint64_t raw = (len + sizeof(struct strobe_record) - 1) / sizeof(struct strobe_record);
    uint64_t head;
    if (reserve(seg, i, 1 + raw, &head) < 0)
        return -ENOSPC;
    struct strobe_record def = {
        .ts_ns = (uint64_t)ts_ns, .name_id = name_id, .kind = STROBE_EV_NAME, .len = (uint8_t)len};
    seal_record(&def, head);
    *slot(seg, i, head) = def;
    for (uint64_t k = 0; k < raw; k++) {
        char bytes[sizeof(struct strobe_record)] = {0};
        size_t off = (size_t)k * sizeof(bytes);
        memcpy(bytes, name + off, len - off < sizeof(bytes) ? len - off : sizeof(bytes));
        memcpy(slot(seg, i, head + 1 + k), bytes, sizeof(bytes));
    }
    atomic_store_explicit(&seg->ctl[i].head, head + 1 + raw, memory_order_release);
    return 0;
}

/* ---- the consumer ------------------------------------------------------------ */

static int valid_record(const struct strobe_record *r, uint64_t index, int tsc_allowed)
{
    unsigned kind = r->kind & ~STROBE_EV_F_TSC;
    int tsc = (r->kind & STROBE_EV_F_TSC) != 0;
    return r->check == strobe_record_check(r) && r->seq == (uint16_t)index && kind >= 1 &&
           kind <= STROBE_EV_KIND_MAX && (kind != STROBE_EV_NAME || (r->len > 0 && !tsc)) &&
           (!tsc || tsc_allowed);
}

static int thread_alive(pid_t pid, pid_t tid)
{
    return syscall(SYS_tgkill, pid, tid, 0) == 0 || errno != ESRCH;
}

/* Hand over ring i's records from the shadow tail to head. */
static void drain_ring(struct ring_segment *seg, int i, pid_t pid, pid_t tid, drain_fn *fn,
                       void *arg, struct drain_stats *st)
{
    struct strobe_ring_ctl *c = &seg->ctl[i];
    uint64_t tail = seg->shadow_tail[i];
    uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
    if (head - tail > seg->ring_records) { /* a head no producer could have written */
        st->corrupt++;
        tail = head;
    }
    int tsc_allowed = seg->cal_tsc0 != 0;
    while (tail != head) {
        struct strobe_record rec = *slot(seg, i, tail); /* copy out before judging */
        if (!valid_record(&rec, tail, tsc_allowed)) {
            st->invalid++;
            tail++;
            continue;
        }
        if (rec.kind & STROBE_EV_F_TSC) { /* the consumer sees ns only */
            rec.kind &= (uint8_t)~STROBE_EV_F_TSC;
            rec.ts_ns = ring_tsc_to_ns(seg, rec.ts_ns);
        }
        if (rec.kind != STROBE_EV_NAME) {
            fn(i, pid, tid, &rec, NULL, arg);
            st->records++;
            tail++;
            continue;
        }
        uint64_t raw = (rec.len + sizeof(rec) - 1) / sizeof(rec);
        if (head - tail < 1 + raw) { /* a name is published whole: this is damage */
            st->invalid++;
            tail = head;
            break;
        }
        char name[STROBE_NAME_MAX + sizeof(rec) + 1];
        for (uint64_t k = 0; k < raw; k++)
            memcpy(name + k * sizeof(rec), slot(seg, i, tail + 1 + k), sizeof(rec));
        name[rec.len] = '\0';
        fn(i, pid, tid, &rec, name, arg);
        st->names++;
        tail += 1 + raw;
    }
    seg->shadow_tail[i] = tail;
    atomic_store_explicit(&c->tail, tail, memory_order_release);
}

void ring_owner_info(const struct ring_segment *seg, int i, int32_t *ppid, char comm[16])
{
    const struct strobe_ring_ctl *c = &seg->ctl[i];
    *ppid = c->owner_ppid;
    memcpy(comm, c->owner_comm, 16);
    comm[15] = '\0'; /* the segment is the writers': trust no terminator */
}

void ring_drain(struct ring_segment *seg, drain_fn *fn, void *arg, struct drain_stats *st)
{
    uint64_t dropped = seg->reclaimed_drops;
    if (seg->cal_tsc0) /* renewed first: every record drained now is older */
        calibration_pair(&seg->cal_tsc1, &seg->cal_ns1);
    for (uint32_t i = 0; i < seg->ring_count; i++) {
        struct strobe_ring_ctl *c = &seg->ctl[i];
        uint64_t owner = atomic_load_explicit(&c->owner, memory_order_acquire);
        if (!owner)
            continue;
        pid_t pid = (pid_t)(owner >> 32), tid = (pid_t)(uint32_t)owner;
        /* liveness first: a thread found dead, or retired, has published all
         * it ever will */
        int dead = pid <= 0 || tid <= 0 ||
                   atomic_load_explicit(&c->retired, memory_order_acquire) ||
                   !thread_alive(pid, tid);
        drain_ring(seg, (int)i, pid, tid, fn, arg, st);
        uint64_t ring_drops = atomic_load_explicit(&c->dropped, memory_order_relaxed);
        if (dead) {
            seg->reclaimed_drops += ring_drops;
            atomic_store_explicit(&c->dropped, 0, memory_order_relaxed);
            /* what the claimer noted goes too: an older writer notes nothing */
            atomic_store_explicit(&c->retired, 0, memory_order_relaxed);
            c->owner_ppid = 0;
            memset(c->owner_comm, 0, sizeof(c->owner_comm));
            c->owner_program = 0;
            atomic_store_explicit(&c->owner, 0, memory_order_release); /* free, all cleared */
            st->reclaimed++;
        }
        dropped += ring_drops;
    }
    st->dropped = dropped + atomic_load_explicit(&seg->hdr->no_ring, memory_order_relaxed);
}
