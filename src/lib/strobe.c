/*
 * libstrobe: the writer side of the event rings (include/strobe/strobe.h).
 *
 * State: one process-wide segment, attached on the first event (pthread_once)
 * from $STROBE_SHM, and the process's current step; one heap-allocated state
 * per thread (ring index, name table), reached through a thread-local pointer. A fork() bumps a
 * process generation in the child, so a thread state inherited from the parent is noticed and
 * replaced (the parent's ring belongs to the parent's thread).
 */
#include "strobe/strobe.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring.h"

#define NAME_SLOTS 1024 /* per thread; a power of two, one slot kept empty */
#define RING_RETRY 256  /* events a thread without a ring drops before it tries again */

enum { LIB_UNKNOWN, LIB_ON, LIB_OFF };

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static atomic_int lib_state = LIB_UNKNOWN;
static struct ring_segment lib_seg;
/* the recorder lets us stamp with the TSC; atomic: a thread's first event
 * stamps before it calls the init that another thread may be running */
static atomic_int lib_tsc;
static atomic_uint lib_generation = 1; /* bumped in a forked child */
static atomic_uint lib_step;           /* the process's current step */

struct name_slot {
    uint64_t hash;
    uint32_t id; /* 0: empty */
    uint32_t len;
    char *text; /* a copy, made when the name is first defined */
};

/* The last names seen by address: a caller that passes the same string
 * again (a literal, the Python package's copy) skips the hash; the bytes are
 * still compared, so a reused buffer with a new name is never mistaken. */
#define PTR_CACHE 64

struct ptr_entry {
    const char *ptr;
    const char *text; /* the interned copy, NUL-terminated */
    uint32_t len;
    uint32_t id;
};

struct thread_state {
    unsigned generation;    /* lib_generation when this state was made */
    int ring;               /* -1: none could be claimed (events are counted as dropped) */
    uint32_t no_ring_drops; /* since the last claim that found none: a retry every RING_RETRY */
    uint32_t next_id;
    uint64_t tail_seen; /* the consumer's tail when last read: room is known without a read */
    struct ptr_entry by_ptr[PTR_CACHE];
    struct name_slot names[NAME_SLOTS];
};

static __thread struct thread_state *tls;
static pthread_key_t tls_key; /* frees a thread's state when the thread ends */

static void thread_state_free(void *p)
{
    struct thread_state *t = p;
    tls = NULL; /* an event from a later destructor in this thread starts afresh */
    for (uint32_t k = 0; t && k < NAME_SLOTS; k++)
        free(t->names[k].text);
    free(t);
}

static void after_fork_child(void)
{
    atomic_fetch_add_explicit(&lib_generation, 1, memory_order_relaxed);
}

static void lib_init(void)
{
    const char *name = getenv(STROBE_SHM_ENV);
    if (!name || !*name || ring_segment_attach(&lib_seg, name) < 0) {
        atomic_store(&lib_state, LIB_OFF);
        return;
    }
    if (pthread_key_create(&tls_key, thread_state_free) != 0) {
        ring_segment_release(&lib_seg);
        atomic_store(&lib_state, LIB_OFF);
        return;
    }
    pthread_atfork(NULL, NULL, after_fork_child);
    atomic_store_explicit(&lib_tsc, (lib_seg.hdr->flags & STROBE_SHM_F_TSC) != 0,
                          memory_order_relaxed);
    atomic_store(&lib_state, LIB_ON);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

/* The time of an event now: TSC ticks where the recorder allows them (about
 * 10 ns here against 23 for clock_gettime), marked in kind. */
static inline uint64_t stamp(uint8_t *kind)
{
#if HAVE_TSC
    if (atomic_load_explicit(&lib_tsc, memory_order_relaxed)) {
        *kind |= STROBE_EV_F_TSC;
        return __rdtsc();
    }
#else
    (void)kind;
#endif
    return (uint64_t)now_ns();
}

/* This thread's state, made (and a ring claimed) on its first event, and
 * again in a forked child. NULL when no recorder listens. */
static struct thread_state *thread_state_slow(void)
{
    int state = atomic_load_explicit(&lib_state, memory_order_acquire);
    if (state == LIB_UNKNOWN) {
        pthread_once(&lib_once, lib_init);
        state = atomic_load(&lib_state);
    }
    if (state != LIB_ON)
        return NULL;
    unsigned gen = atomic_load_explicit(&lib_generation, memory_order_relaxed);
    struct thread_state *t = tls;
    if (t && t->generation == gen)
        return t;
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t)
            return NULL;
        tls = t;
        pthread_setspecific(tls_key, t);
    } else { /* inherited across fork: start afresh */
        for (uint32_t k = 0; k < NAME_SLOTS; k++)
            free(t->names[k].text);
        memset(t, 0, sizeof(*t));
    }
    t->generation = gen;
    t->ring = ring_claim(&lib_seg, getpid(), (pid_t)syscall(SYS_gettid));
    t->next_id = 1;
    return t;
}

static uint64_t name_hash(const char *s, size_t *len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    size_t n = 0;
    for (; s[n] && n <= STROBE_NAME_MAX; n++)
        h = (h ^ (uint8_t)s[n]) * UINT64_C(1099511628211);
    *len = n;
    return h;
}

static inline struct thread_state *thread_state(void)
{
    struct thread_state *t = tls;
    if (t && t->generation == atomic_load_explicit(&lib_generation, memory_order_relaxed))
        return t; /* a state exists only while the library is on */
    return thread_state_slow();
}

/* The slot of name in this thread's table, defining it in the ring on first
 * use. NULL when the name is unusable or the table is full (the event then
 * goes without). */
__attribute__((noinline)) static struct name_slot *intern_slow(struct thread_state *t,
                                                               const char *name, int64_t ts)
{
    size_t len;
    uint64_t h = name_hash(name, &len);
    if (len == 0 || len > STROBE_NAME_MAX) {
        ring_count_drop(&lib_seg, t->ring); /* an unusable name loses its event, counted */
        return NULL;
    }
    for (uint32_t k = (uint32_t)h & (NAME_SLOTS - 1);; k = (k + 1) & (NAME_SLOTS - 1)) {
        struct name_slot *s = &t->names[k];
        if (s->id && s->hash == h && s->len == len && memcmp(s->text, name, len) == 0)
            return s;
        if (s->id)
            continue;
        if (t->next_id >= NAME_SLOTS) { /* keep one slot empty: lookups end */
            ring_count_drop(&lib_seg, t->ring);
            return NULL;
        }
        /* defined in the ring before use; if the ring is full the name is
         * dropped, and so is the event: retried next time */
        char *copy = strndup(name, len);
        if (!copy) {
            ring_count_drop(&lib_seg, t->ring);
            return NULL;
        }
        if (ring_push_name(&lib_seg, t->ring, t->next_id, name, ts) < 0) {
            free(copy);
            return NULL;
        }
        s->hash = h;
        s->len = (uint32_t)len;
        s->text = copy;
        s->id = t->next_id++;
        return s;
    }
}

static inline uint32_t intern(struct thread_state *t, const char *name, int64_t ts)
{
    struct ptr_entry *c = &t->by_ptr[((uintptr_t)name >> 3) & (PTR_CACHE - 1)];
    /* strcmp stops at the first NUL: a shorter string now in the buffer is never overread */
    if (c->ptr == name && strcmp(c->text, name) == 0)
        return c->id;
    struct name_slot *slot = intern_slow(t, name, ts);
    if (!slot)
        return 0;
    *c = (struct ptr_entry){name, slot->text, slot->len, slot->id};
    return slot->id;
}

/* ring_push with the consumer's tail read only when the ring looks full. */
static inline void push(struct thread_state *t, struct strobe_record rec)
{
    struct strobe_ring_ctl *c = &lib_seg.ctl[t->ring];
    uint64_t head = atomic_load_explicit(&c->head, memory_order_relaxed); /* only we write it */
    if (head - t->tail_seen >= lib_seg.ring_records) {
        t->tail_seen = atomic_load_explicit(&c->tail, memory_order_acquire);
        if (head - t->tail_seen >= lib_seg.ring_records) {
            ring_count_drop(&lib_seg, t->ring);
            return;
        }
    }
    rec.seq = (uint16_t)head;
    rec.check = strobe_record_check(&rec);
    lib_seg.records[(size_t)t->ring * lib_seg.ring_records + (head & (lib_seg.ring_records - 1))] =
        rec;
    atomic_store_explicit(&c->head, head + 1, memory_order_release);
}

static uint32_t current_step(void)
{
    return atomic_load_explicit(&lib_step, memory_order_relaxed);
}

/* A thread that found every ring taken tries again now and then: rings come
 * back to the pool when their threads end, and a thread that started in a
 * crowd must not lose its events for the rest of its life. 1 when it now
 * has a ring. */
static int retry_claim(struct thread_state *t)
{
    if (++t->no_ring_drops < RING_RETRY)
        return 0;
    t->no_ring_drops = 0;
    t->ring = ring_claim(&lib_seg, getpid(), (pid_t)syscall(SYS_gettid));
    return t->ring >= 0;
}

/* One event; name is NULL for a step only (a step has none). */
static inline void emit(uint8_t kind, const char *name, int64_t ts, uint64_t value, uint32_t step)
{
    struct thread_state *t = thread_state();
    if (!t)
        return;
    if (t->ring < 0 && !retry_claim(t)) { /* every ring taken: each event counted once, here */
        atomic_fetch_add_explicit(&lib_seg.hdr->no_ring, 1, memory_order_relaxed);
        return;
    }
    uint32_t id = 0;
    /* a NULL name is unusable, as "" is; only a step has none */
    if (!name && (kind & ~STROBE_EV_F_TSC) != STROBE_EV_STEP) {
        ring_count_drop(&lib_seg, t->ring);
        return;
    }
    if (name && !(id = intern(t, name, ts)))
        return;
    struct strobe_record rec = {
        .ts_ns = (uint64_t)ts, .value = value, .name_id = id, .step = step, .kind = kind};
    push(t, rec);
}

void strobe_span_begin(const char *name)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    uint8_t kind = STROBE_EV_SPAN_BEGIN;
    uint64_t ts = stamp(&kind);
    emit(kind, name, (int64_t)ts, 0, current_step());
}

void strobe_span_end(const char *name)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    uint8_t kind = STROBE_EV_SPAN_END;
    uint64_t ts = stamp(&kind);
    emit(kind, name, (int64_t)ts, 0, current_step());
}

/* The event of a call that cannot be recorded (a negative duration): dropped
 * and counted, as the header promises, like an unusable name. */
static void drop_one(void)
{
    struct thread_state *t = thread_state();
    if (!t)
        return;
    if (t->ring < 0)
        atomic_fetch_add_explicit(&lib_seg.hdr->no_ring, 1, memory_order_relaxed);
    else
        ring_count_drop(&lib_seg, t->ring);
}

void strobe_span_complete(const char *name, int64_t start_ns, int64_t duration_ns)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    if (duration_ns < 0) {
        drop_one();
        return;
    }
    emit(STROBE_EV_COMPLETE, name, start_ns, (uint64_t)duration_ns, current_step());
}

void strobe_instant(const char *name)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    uint8_t kind = STROBE_EV_INSTANT;
    uint64_t ts = stamp(&kind);
    emit(kind, name, (int64_t)ts, 0, current_step());
}

void strobe_step(uint32_t step)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    atomic_store_explicit(&lib_step, step, memory_order_relaxed);
    emit(STROBE_EV_STEP, NULL, now_ns(), step, step);
}

static void counter(const char *name, double value, uint32_t step)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    emit(STROBE_EV_COUNTER, name, now_ns(), bits, step);
}

void strobe_counter(const char *name, double value)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    counter(name, value, current_step());
}

void strobe_counter_at_step(const char *name, double value, uint32_t step)
{
    if (atomic_load_explicit(&lib_state, memory_order_relaxed) == LIB_OFF)
        return;
    counter(name, value, step);
}

int strobe_enabled(void)
{
    return thread_state() != NULL;
}

uint64_t strobe_control_seq(void)
{
    int state = atomic_load_explicit(&lib_state, memory_order_acquire);
    if (state == LIB_UNKNOWN) {
        pthread_once(&lib_once, lib_init);
        state = atomic_load(&lib_state);
    }
    if (state != LIB_ON)
        return 0;
    /* acquire: the request file the recorder wrote before the bump is whole */
    return atomic_load_explicit(&lib_seg.hdr->control_seq, memory_order_acquire);
}
