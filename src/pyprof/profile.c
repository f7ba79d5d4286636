/*
 * The Python profile (profile.h): its dictionaries, interned through
 * open-addressing hash indexes (common/hash.h) so that a frame, a stack, a
 * process or a thread seen again costs one lookup; and its block codec.
 *
 * A block is a 3-byte-or-more header and a zstd frame (level 3):
 *   u8 version (PY_BLOCK_VERSION), u8 kind, varint length of the raw body
 * The raw body is LEB128 varints (signed values zigzag-coded) and strings
 * (varint length, bytes). A dictionary block:
 *   first frame id, n, n x (func, file, line)
 *   first stack id, n, n x (prefix, rest, rest x frame id): prefix is the
 *     number of root frames shared with the stack before it in the block
 *   n, n x (pid, ppid, comm)            processes defined or updated
 *   n, n x (pid, tid, name)             threads defined or updated
 * A samples block:
 *   n, t0 (us, zigzag), k, k x (pid, tid): the block's threads
 *   n x (dt_us, thread index, stack << 4 | gil << 3 | state)
 * where dt_us is the time since the sample before (0 for the first).
 * Sample times are kept to the microsecond (rounded toward zero): plenty
 * for 100 Hz to 1 kHz sampling, and half the size of nanosecond deltas,
 * whose timer jitter zstd cannot compress (test_py_profile's
 * bytes_per_sample: 1.9 against 3.9 bytes a sample).
 *
 * The first ids of a dictionary block must be the profile's next ones, so a
 * block loaded out of order, twice, or after a missing one is refused. The
 * loader decodes into the profile and, at the first error, truncates it
 * back to what it had and rebuilds the indexes: a garbled block leaves the
 * profile as it was. Updates of processes and threads come last, once
 * everything else has been checked, and cannot fail.
 */
#include "pyprof/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/hash.h"

#define PY_BLOCK_VERSION   1
#define PY_BLOCK_ZSTD      3
#define PY_BLOCK_RAW_MAX   (256u << 20) /* a raw body larger is refused: ~10 M samples */
#define PY_NAME_MAX        4096u        /* a function or file name longer is garbled */
#define PY_STATE_BITS_MASK 7u
#define NS_PER_US          1000
#define PY_US_MAX          (INT64_MAX / NS_PER_US) /* |t| in us that fits in ns */

struct table {
    uint32_t *slots; /* 0 empty, else item index + 1 */
    uint32_t nslots; /* a power of two, or 0 */
};

struct py_index {
    struct table frames, stacks, procs, threads;
    uint8_t *proc_dirty;   /* [nprocs]: defined or updated since the last take */
    uint8_t *thread_dirty; /* [nthreads] */
    uint32_t proc_dirty_cap, thread_dirty_cap;
    size_t string_bytes; /* the frames' names */
};

/* ---- hashing ---- */

static uint32_t hash_frame_key(const char *func, const char *file, uint32_t line)
{
    uint32_t h = hash_fnv1a_str(HASH_FNV1A_INIT, func);
    h = hash_fnv1a_str(h, file);
    return hash_fnv1a(h, &line, sizeof(line));
}

static uint32_t hash_stack_key(const uint32_t *ids, uint32_t depth)
{
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, &depth, sizeof(depth));
    return hash_fnv1a(h, ids, sizeof(*ids) * depth);
}

static uint32_t hash_thread_key(int32_t pid, int32_t tid)
{
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, &pid, sizeof(pid));
    return hash_fnv1a(h, &tid, sizeof(tid));
}

static uint32_t hash_proc_key(int32_t pid)
{
    return hash_fnv1a(HASH_FNV1A_INIT, &pid, sizeof(pid));
}

static uint32_t frame_item_hash(const void *ctx, uint32_t i)
{
    const struct py_frame *f = &((const struct py_profile *)ctx)->frames[i];
    return hash_frame_key(f->func, f->file, f->line);
}

static uint32_t stack_item_hash(const void *ctx, uint32_t i)
{
    const struct py_profile *p = ctx;
    const struct py_stack *s = &p->stacks[i];
    return hash_stack_key(p->stack_frames + s->off, s->depth);
}

static uint32_t proc_item_hash(const void *ctx, uint32_t i)
{
    return hash_proc_key(((const struct py_profile *)ctx)->procs[i].pid);
}

static uint32_t thread_item_hash(const void *ctx, uint32_t i)
{
    const struct py_thread *t = &((const struct py_profile *)ctx)->threads[i];
    return hash_thread_key(t->pid, t->tid);
}

static void table_insert(struct table *t, uint32_t h, uint32_t i)
{
    uint32_t mask = t->nslots - 1;
    h &= mask;
    while (t->slots[h])
        h = (h + 1) & mask;
    t->slots[h] = i + 1;
}

/* Index items 0..count-1 again in t's slots as they are (no allocation). */
static void table_refill(struct table *t, uint32_t count, hash_item_fn *hash, const void *ctx)
{
    memset(t->slots, 0, sizeof(*t->slots) * t->nslots);
    for (uint32_t i = 0; i < count; i++)
        table_insert(t, hash(ctx, i), i);
}

/* Make t hold items 0..count-1 with room for `room` items at most half full
 * (from 256 slots, a power of two). 0, or -ENOMEM with t unchanged. */
static int table_reserve(struct table *t, uint32_t count, uint64_t room, hash_item_fn *hash,
                         const void *ctx)
{
    if ((room + 1) * 2 <= t->nslots)
        return 0;
    uint64_t n = 256;
    while (n < (room + 1) * 2)
        n *= 2;
    if (n > UINT32_MAX)
        return -ENOMEM;
    uint32_t *fresh = calloc(n, sizeof(*fresh));
    if (!fresh)
        return -ENOMEM;
    free(t->slots);
    t->slots = fresh;
    t->nslots = (uint32_t)n;
    table_refill(t, count, hash, ctx);
    return 0;
}

/* ---- growth ---- */

static int grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return -ENOMEM;
        n *= 2;
    }
    void *fresh = realloc(*items, n * size);
    if (!fresh)
        return -ENOMEM;
    *items = fresh;
    *cap = n;
    return 0;
}

/* grow() for the uint32_t capacities of the dictionaries. */
static int grow32(void **items, uint32_t *cap, size_t need, size_t size)
{
    if (need > UINT32_MAX - 1)
        return -ENOMEM;
    size_t c = *cap;
    int rc = grow(items, &c, need, size);
    if (rc == 0)
        *cap = (uint32_t)(c > UINT32_MAX ? UINT32_MAX : c);
    return rc;
}

/* A dirty flag array of at least need entries, the new ones clear. */
static int grow_dirty(uint8_t **dirty, uint32_t *cap, size_t need)
{
    uint32_t old = *cap;
    if (grow32((void **)dirty, cap, need, 1))
        return -ENOMEM;
    if (*cap > old)
        memset(*dirty + old, 0, *cap - old);
    return 0;
}

/* ---- lifecycle ---- */

void py_profile_init(struct py_profile *p)
{
    memset(p, 0, sizeof(*p));
}

void py_profile_release(struct py_profile *p)
{
    for (uint32_t i = 0; i < p->nframes; i++) {
        free((char *)p->frames[i].func);
        free((char *)p->frames[i].file);
    }
    free(p->frames);
    free(p->stacks);
    free(p->stack_frames);
    free(p->procs);
    free(p->threads);
    free(p->samples);
    struct py_index *ix = p->index;
    if (ix) {
        free(ix->frames.slots);
        free(ix->stacks.slots);
        free(ix->procs.slots);
        free(ix->threads.slots);
        free(ix->proc_dirty);
        free(ix->thread_dirty);
        free(ix);
    }
    py_profile_init(p);
}

static struct py_index *index_of(struct py_profile *p)
{
    if (!p->index)
        p->index = calloc(1, sizeof(struct py_index));
    return p->index;
}

/* ---- building ---- */

static uint32_t frame_find(const struct py_profile *p, const struct py_index *ix, const char *func,
                           const char *file, uint32_t line, uint32_t h)
{
    if (!ix->frames.nslots)
        return 0;
    uint32_t mask = ix->frames.nslots - 1;
    for (uint32_t k = h & mask; ix->frames.slots[k]; k = (k + 1) & mask) {
        const struct py_frame *f = &p->frames[ix->frames.slots[k] - 1];
        if (f->line == line && strcmp(f->func, func) == 0 && strcmp(f->file, file) == 0)
            return ix->frames.slots[k];
    }
    return 0;
}

/* A name cut to PY_NAME_MAX bytes (what a block can hold): in buf when
 * longer, else the name itself. */
static const char *name_cut(const char *s, char buf[PY_NAME_MAX + 1])
{
    s = s ? s : "";
    size_t n = strnlen(s, PY_NAME_MAX + 1);
    if (n <= PY_NAME_MAX)
        return s;
    memcpy(buf, s, PY_NAME_MAX);
    buf[PY_NAME_MAX] = 0;
    return buf;
}

int py_profile_frame(struct py_profile *p, const char *func, const char *file, uint32_t line,
                     uint32_t *id)
{
    static _Thread_local char func_buf[PY_NAME_MAX + 1], file_buf[PY_NAME_MAX + 1];
    struct py_index *ix = index_of(p);
    if (!ix)
        return -ENOMEM;
    func = name_cut(func, func_buf);
    file = name_cut(file, file_buf);
    uint32_t h = hash_frame_key(func, file, line);
    uint32_t found = frame_find(p, ix, func, file, line, h);
    if (found) {
        *id = found;
        return 0;
    }
    if (grow32((void **)&p->frames, &p->frames_cap, (size_t)p->nframes + 1, sizeof(*p->frames)))
        return -ENOMEM;
    if (table_reserve(&ix->frames, p->nframes, (uint64_t)p->nframes + 1, frame_item_hash, p))
        return -ENOMEM;
    char *fn = strdup(func), *fl = strdup(file);
    if (!fn || !fl) {
        free(fn);
        free(fl);
        return -ENOMEM;
    }
    p->frames[p->nframes] = (struct py_frame){.func = fn, .file = fl, .line = line};
    table_insert(&ix->frames, h, p->nframes);
    ix->string_bytes += strlen(fn) + strlen(fl) + 2;
    *id = ++p->nframes;
    return 0;
}

static uint32_t stack_find(const struct py_profile *p, const struct py_index *ix,
                           const uint32_t *ids, uint32_t depth, uint32_t h)
{
    if (!ix->stacks.nslots)
        return 0;
    uint32_t mask = ix->stacks.nslots - 1;
    for (uint32_t k = h & mask; ix->stacks.slots[k]; k = (k + 1) & mask) {
        const struct py_stack *s = &p->stacks[ix->stacks.slots[k] - 1];
        if (s->depth == depth &&
            (depth == 0 || memcmp(p->stack_frames + s->off, ids, sizeof(*ids) * depth) == 0))
            return ix->stacks.slots[k];
    }
    return 0;
}

int py_profile_stack(struct py_profile *p, const uint32_t *frames_root_first, uint32_t depth,
                     uint32_t *id)
{
    struct py_index *ix = index_of(p);
    if (!ix)
        return -ENOMEM;
    uint32_t h = hash_stack_key(frames_root_first, depth);
    uint32_t found = stack_find(p, ix, frames_root_first, depth, h);
    if (found) {
        *id = found;
        return 0;
    }
    if (p->nstack_frames + depth > UINT32_MAX)
        return -ENOMEM; /* struct py_stack's off is 32 bits */
    if (grow32((void **)&p->stacks, &p->stacks_cap, (size_t)p->nstacks + 1, sizeof(*p->stacks)) ||
        grow((void **)&p->stack_frames, &p->stack_frames_cap, p->nstack_frames + depth,
             sizeof(*p->stack_frames)))
        return -ENOMEM;
    if (table_reserve(&ix->stacks, p->nstacks, (uint64_t)p->nstacks + 1, stack_item_hash, p))
        return -ENOMEM;
    if (depth)
        memcpy(p->stack_frames + p->nstack_frames, frames_root_first,
               sizeof(*frames_root_first) * depth);
    p->stacks[p->nstacks] = (struct py_stack){.depth = depth, .off = (uint32_t)p->nstack_frames};
    p->nstack_frames += depth;
    table_insert(&ix->stacks, h, p->nstacks);
    *id = ++p->nstacks;
    return 0;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    memset(dst + n, 0, cap - n);
}

static uint32_t proc_find(const struct py_profile *p, const struct py_index *ix, int32_t pid)
{
    if (!ix->procs.nslots)
        return 0;
    uint32_t mask = ix->procs.nslots - 1;
    for (uint32_t k = hash_proc_key(pid) & mask; ix->procs.slots[k]; k = (k + 1) & mask)
        if (p->procs[ix->procs.slots[k] - 1].pid == pid)
            return ix->procs.slots[k];
    return 0;
}

int py_profile_process(struct py_profile *p, int32_t pid, int32_t ppid, const char *comm)
{
    struct py_index *ix = index_of(p);
    if (!ix)
        return -ENOMEM;
    struct py_process want = {.pid = pid, .ppid = ppid};
    copy_name(want.comm, sizeof(want.comm), comm);
    uint32_t found = proc_find(p, ix, pid);
    if (found) {
        struct py_process *have = &p->procs[found - 1];
        if (memcmp(have, &want, sizeof(want)) != 0) {
            *have = want;
            ix->proc_dirty[found - 1] = 1;
        }
        return 0;
    }
    if (grow32((void **)&p->procs, &p->procs_cap, (size_t)p->nprocs + 1, sizeof(*p->procs)) ||
        grow_dirty(&ix->proc_dirty, &ix->proc_dirty_cap, (size_t)p->nprocs + 1))
        return -ENOMEM;
    if (table_reserve(&ix->procs, p->nprocs, (uint64_t)p->nprocs + 1, proc_item_hash, p))
        return -ENOMEM;
    p->procs[p->nprocs] = want;
    ix->proc_dirty[p->nprocs] = 1;
    table_insert(&ix->procs, hash_proc_key(pid), p->nprocs);
    p->nprocs++;
    return 0;
}

static uint32_t thread_find(const struct py_profile *p, const struct py_index *ix, int32_t pid,
                            int32_t tid)
{
    if (!ix->threads.nslots)
        return 0;
    uint32_t mask = ix->threads.nslots - 1;
    for (uint32_t k = hash_thread_key(pid, tid) & mask; ix->threads.slots[k]; k = (k + 1) & mask) {
        const struct py_thread *t = &p->threads[ix->threads.slots[k] - 1];
        if (t->pid == pid && t->tid == tid)
            return ix->threads.slots[k];
    }
    return 0;
}

int py_profile_thread(struct py_profile *p, int32_t pid, int32_t tid, const char *name)
{
    struct py_index *ix = index_of(p);
    if (!ix)
        return -ENOMEM;
    struct py_thread want = {.pid = pid, .tid = tid};
    copy_name(want.name, sizeof(want.name), name);
    uint32_t found = thread_find(p, ix, pid, tid);
    if (found) {
        struct py_thread *have = &p->threads[found - 1];
        if (memcmp(have, &want, sizeof(want)) != 0) {
            *have = want;
            ix->thread_dirty[found - 1] = 1;
        }
        return 0;
    }
    if (grow32((void **)&p->threads, &p->threads_cap, (size_t)p->nthreads + 1,
               sizeof(*p->threads)) ||
        grow_dirty(&ix->thread_dirty, &ix->thread_dirty_cap, (size_t)p->nthreads + 1))
        return -ENOMEM;
    if (table_reserve(&ix->threads, p->nthreads, (uint64_t)p->nthreads + 1, thread_item_hash, p))
        return -ENOMEM;
    p->threads[p->nthreads] = want;
    ix->thread_dirty[p->nthreads] = 1;
    table_insert(&ix->threads, hash_thread_key(pid, tid), p->nthreads);
    p->nthreads++;
    return 0;
}

int py_profile_add(struct py_profile *p, const struct py_sample *s)
{
    if (s->stack > p->nstacks || s->state > PY_STATE_BITS_MASK || s->gil > 1)
        return -EINVAL; /* it could not be stored, nor loaded back */
    if (grow((void **)&p->samples, &p->samples_cap, p->nsamples + 1, sizeof(*p->samples)))
        return -ENOMEM;
    p->samples[p->nsamples++] = *s;
    return 0;
}

size_t py_profile_bytes(const struct py_profile *p)
{
    size_t n = sizeof(*p);
    n += (size_t)p->frames_cap * sizeof(*p->frames);
    n += (size_t)p->stacks_cap * sizeof(*p->stacks);
    n += p->stack_frames_cap * sizeof(*p->stack_frames);
    n += (size_t)p->procs_cap * sizeof(*p->procs);
    n += (size_t)p->threads_cap * sizeof(*p->threads);
    n += p->samples_cap * sizeof(*p->samples);
    const struct py_index *ix = p->index;
    if (ix) {
        n += sizeof(*ix) + ix->string_bytes + ix->proc_dirty_cap + ix->thread_dirty_cap;
        n += ((size_t)ix->frames.nslots + ix->stacks.nslots + ix->procs.nslots +
              ix->threads.nslots) *
             sizeof(uint32_t);
    }
    return n;
}

const uint32_t *py_profile_stack_frames(const struct py_profile *p, uint32_t stack, uint32_t *depth)
{
    if (stack == 0 || stack > p->nstacks) {
        *depth = 0;
        return NULL;
    }
    const struct py_stack *s = &p->stacks[stack - 1];
    *depth = s->depth;
    return p->stack_frames ? p->stack_frames + s->off : NULL; /* NULL: depth 0 */
}

/* ---- encoding ---- */

static void put_varint(struct strbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    strbuf_add(b, tmp, n);
}

static void put_svarint(struct strbuf *b, int64_t v)
{
    put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_str(struct strbuf *b, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    put_varint(b, n);
    strbuf_add(b, s, n);
}

static uint32_t count_dirty(const uint8_t *dirty, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        k += dirty[i] != 0;
    return k;
}

static void encode_stacks(const struct py_profile *p, struct strbuf *b)
{
    put_varint(b, (uint64_t)p->taken_stacks + 1);
    put_varint(b, p->nstacks - p->taken_stacks);
    const uint32_t *prev = NULL;
    uint32_t prev_depth = 0;
    for (uint32_t i = p->taken_stacks; i < p->nstacks; i++) {
        uint32_t depth;
        const uint32_t *ids = py_profile_stack_frames(p, i + 1, &depth);
        uint32_t common = 0;
        while (common < depth && common < prev_depth && ids[common] == prev[common])
            common++;
        put_varint(b, common);
        put_varint(b, depth - common);
        for (uint32_t k = common; k < depth; k++)
            put_varint(b, ids[k]);
        prev = ids;
        prev_depth = depth;
    }
}

/* The raw body of the dictionary block: what was defined or updated since
 * the last take; *count its entries. */
static void encode_dict(const struct py_profile *p, struct strbuf *b, int64_t *count)
{
    const struct py_index *ix = p->index;
    put_varint(b, (uint64_t)p->taken_frames + 1);
    put_varint(b, p->nframes - p->taken_frames);
    for (uint32_t i = p->taken_frames; i < p->nframes; i++) {
        put_str(b, p->frames[i].func, PY_NAME_MAX);
        put_str(b, p->frames[i].file, PY_NAME_MAX);
        put_varint(b, p->frames[i].line);
    }
    encode_stacks(p, b);
    uint32_t nprocs = count_dirty(ix->proc_dirty, p->nprocs);
    put_varint(b, nprocs);
    for (uint32_t i = 0; i < p->nprocs; i++) {
        if (!ix->proc_dirty[i])
            continue;
        put_svarint(b, p->procs[i].pid);
        put_svarint(b, p->procs[i].ppid);
        put_str(b, p->procs[i].comm, sizeof(p->procs[i].comm) - 1);
    }
    uint32_t nthreads = count_dirty(ix->thread_dirty, p->nthreads);
    put_varint(b, nthreads);
    for (uint32_t i = 0; i < p->nthreads; i++) {
        if (!ix->thread_dirty[i])
            continue;
        put_svarint(b, p->threads[i].pid);
        put_svarint(b, p->threads[i].tid);
        put_str(b, p->threads[i].name, sizeof(p->threads[i].name) - 1);
    }
    *count = (int64_t)(p->nframes - p->taken_frames) + (p->nstacks - p->taken_stacks) + nprocs +
             nthreads;
}

static int sample_cmp(const void *a, const void *b)
{
    const struct py_sample *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->stack != y->stack) /* the rest too: a total order, one encoding */
        return x->stack < y->stack ? -1 : 1;
    return (x->state * 2 + x->gil) - (y->state * 2 + y->gil);
}

/* The small table of a samples block's threads: (pid, tid) -> index. */
struct block_threads {
    struct table t;
    int32_t *pid, *tid;
    uint32_t n;
};

static uint32_t block_thread_hash(const void *ctx, uint32_t i)
{
    const struct block_threads *bt = ctx;
    return hash_thread_key(bt->pid[i], bt->tid[i]);
}

static void block_threads_release(struct block_threads *bt)
{
    free(bt->t.slots);
    free(bt->pid);
    free(bt->tid);
}

/* Index of (pid, tid) in bt, added if new; -ENOMEM. The arrays are sized
 * for every sample by the caller, so only the table may grow. */
static int64_t block_thread_index(struct block_threads *bt, int32_t pid, int32_t tid)
{
    uint32_t h = hash_thread_key(pid, tid), mask = bt->t.nslots - 1;
    for (uint32_t k = h & mask; bt->t.slots[k]; k = (k + 1) & mask) {
        uint32_t i = bt->t.slots[k] - 1;
        if (bt->pid[i] == pid && bt->tid[i] == tid)
            return i;
    }
    if (table_reserve(&bt->t, bt->n, (uint64_t)bt->n + 1, block_thread_hash, bt))
        return -ENOMEM;
    bt->pid[bt->n] = pid;
    bt->tid[bt->n] = tid;
    table_insert(&bt->t, h, bt->n);
    return bt->n++;
}

/* The raw body of the samples block (p's samples sorted by time). */
static int encode_samples(const struct py_profile *p, struct strbuf *b)
{
    struct block_threads bt = {0};
    uint32_t *which = malloc(sizeof(*which) * p->nsamples);
    bt.pid = malloc(sizeof(*bt.pid) * p->nsamples);
    bt.tid = malloc(sizeof(*bt.tid) * p->nsamples);
    int rc = -ENOMEM;
    if (!which || !bt.pid || !bt.tid || table_reserve(&bt.t, 0, 1, block_thread_hash, &bt))
        goto out;
    for (size_t i = 0; i < p->nsamples; i++) {
        int64_t k = block_thread_index(&bt, p->samples[i].pid, p->samples[i].tid);
        if (k < 0)
            goto out;
        which[i] = (uint32_t)k;
    }
    put_varint(b, p->nsamples);
    put_svarint(b, p->samples[0].t_ns / NS_PER_US);
    put_varint(b, bt.n);
    for (uint32_t i = 0; i < bt.n; i++) {
        put_svarint(b, bt.pid[i]);
        put_svarint(b, bt.tid[i]);
    }
    int64_t prev = p->samples[0].t_ns / NS_PER_US;
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct py_sample *s = &p->samples[i];
        int64_t t_us = s->t_ns / NS_PER_US;
        put_varint(b, (uint64_t)(t_us - prev)); /* |t_us| < 2^54: no overflow */
        put_varint(b, which[i]);
        put_varint(b, (uint64_t)s->stack << 4 | (uint64_t)s->gil << 3 | s->state);
        prev = t_us;
    }
    rc = strbuf_failed(b) ? -ENOMEM : 0;
out:
    free(which);
    block_threads_release(&bt);
    return rc;
}

/* Header and zstd frame of raw into o (o->data malloc'ed). */
static int seal_block(const struct strbuf *raw, int kind, struct py_block_out *o)
{
    if (strbuf_failed(raw) || raw->len > PY_BLOCK_RAW_MAX)
        return -ENOMEM;
    struct strbuf head;
    strbuf_init(&head);
    strbuf_addch(&head, PY_BLOCK_VERSION);
    strbuf_addch(&head, (char)kind);
    put_varint(&head, raw->len);
    size_t bound = ZSTD_compressBound(raw->len);
    uint8_t *out = strbuf_failed(&head) ? NULL : malloc(head.len + bound);
    if (!out) {
        strbuf_release(&head);
        return -ENOMEM;
    }
    memcpy(out, head.buf, head.len);
    size_t z = ZSTD_compress(out + head.len, bound, raw->buf, raw->len, PY_BLOCK_ZSTD);
    if (ZSTD_isError(z)) {
        free(out);
        strbuf_release(&head);
        return -ENOMEM; /* zstd fails only for memory here */
    }
    o->kind = kind;
    o->data = out;
    o->len = head.len + z;
    strbuf_release(&head);
    return 0;
}

static int dict_due(const struct py_profile *p)
{
    const struct py_index *ix = p->index;
    return ix &&
           (p->taken_frames < p->nframes || p->taken_stacks < p->nstacks ||
            count_dirty(ix->proc_dirty, p->nprocs) || count_dirty(ix->thread_dirty, p->nthreads));
}

/* What the profile keeps once its blocks were made. */
static void taken(struct py_profile *p, int nblocks)
{
    struct py_index *ix = p->index;
    p->taken_frames = p->nframes;
    p->taken_stacks = p->nstacks;
    p->taken_procs = p->nprocs;
    p->taken_threads = p->nthreads;
    if (ix && p->nprocs)
        memset(ix->proc_dirty, 0, p->nprocs);
    if (ix && p->nthreads)
        memset(ix->thread_dirty, 0, p->nthreads);
    p->nsamples = 0;
    p->next_seq += nblocks;
}

int py_profile_take(struct py_profile *p, struct py_block_out out[2], int *n)
{
    struct strbuf raw;
    int rc = 0, k = 0;
    int64_t start_ns = 0, end_ns = 0;

    *n = 0;
    strbuf_init(&raw);
    if (p->nsamples) {
        qsort(p->samples, p->nsamples, sizeof(*p->samples), sample_cmp);
        /* the times the block gives back */
        start_ns = p->samples[0].t_ns / NS_PER_US * NS_PER_US;
        end_ns = p->samples[p->nsamples - 1].t_ns / NS_PER_US * NS_PER_US;
    }
    if (dict_due(p)) {
        int64_t count;
        encode_dict(p, &raw, &count);
        if ((rc = seal_block(&raw, PY_BLOCK_DICT, &out[k])) < 0)
            goto fail;
        out[k].count = count;
        k++;
        strbuf_reset(&raw);
    }
    if (p->nsamples) {
        if ((rc = encode_samples(p, &raw)) < 0 ||
            (rc = seal_block(&raw, PY_BLOCK_SAMPLES, &out[k])) < 0)
            goto fail;
        out[k].count = (int64_t)p->nsamples;
        k++;
    }
    for (int i = 0; i < k; i++) {
        out[i].seq = p->next_seq + i;
        out[i].start_ns = start_ns;
        out[i].end_ns = end_ns;
    }
    strbuf_release(&raw);
    taken(p, k);
    *n = k;
    return 0;
fail:
    while (k-- > 0) {
        free(out[k].data);
        out[k].data = NULL;
    }
    strbuf_release(&raw);
    return rc;
}

/* ---- decoding ---- */

struct reader {
    const uint8_t *p, *end;
    struct strbuf *why;
};

static int bad(struct reader *r, const char *what)
{
    if (r->why) {
        strbuf_reset(r->why);
        strbuf_addf(r->why, "garbled Python profile block: %s", what);
    }
    return -EINVAL;
}

static int get_varint(struct reader *r, uint64_t *v, const char *what)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return bad(r, what);
        uint8_t c = *r->p++;
        if (shift == 63 && c > 1)
            break;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return bad(r, what);
}

static int get_u32(struct reader *r, uint32_t *v, uint64_t max, const char *what)
{
    uint64_t x;
    if (get_varint(r, &x, what) < 0)
        return -EINVAL;
    if (x > max)
        return bad(r, what);
    *v = (uint32_t)x;
    return 0;
}

static int get_svarint(struct reader *r, int64_t *v, const char *what)
{
    uint64_t x;
    if (get_varint(r, &x, what) < 0)
        return -EINVAL;
    *v = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
    return 0;
}

static int get_s32(struct reader *r, int32_t *v, const char *what)
{
    int64_t x;
    if (get_svarint(r, &x, what) < 0)
        return -EINVAL;
    if (x < INT32_MIN || x > INT32_MAX)
        return bad(r, what);
    *v = (int32_t)x;
    return 0;
}

/* A string of at most cap bytes, copied NUL-terminated into dst (cap + 1). */
static int get_str(struct reader *r, char *dst, size_t cap, const char *what)
{
    uint32_t n;
    if (get_u32(r, &n, cap, what) < 0)
        return -EINVAL;
    if ((size_t)(r->end - r->p) < n)
        return bad(r, what);
    memcpy(dst, r->p, n);
    dst[n] = 0;
    r->p += n;
    return 0;
}

/* Each entry takes at least one byte: a count larger than the bytes left is
 * garbled, and bounds what the loader allocates. */
static int get_count(struct reader *r, uint32_t *n, const char *what)
{
    return get_u32(r, n, (uint64_t)(r->end - r->p), what);
}

static int load_frames(struct py_profile *p, struct reader *r)
{
    static _Thread_local char func[PY_NAME_MAX + 1], file[PY_NAME_MAX + 1];
    uint32_t first, n;
    if (get_u32(r, &first, UINT32_MAX, "frame id") < 0 || get_count(r, &n, "frame count") < 0)
        return -EINVAL;
    if (first != p->nframes + 1)
        return bad(r, "frames out of order");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t line, id;
        if (get_str(r, func, PY_NAME_MAX, "function name") < 0 ||
            get_str(r, file, PY_NAME_MAX, "file name") < 0 ||
            get_u32(r, &line, UINT32_MAX, "line") < 0)
            return -EINVAL;
        int rc = py_profile_frame(p, func, file, line, &id);
        if (rc < 0)
            return rc;
        if (id != p->nframes || id != first + i)
            return bad(r, "a frame defined twice");
    }
    return 0;
}

static int load_stacks(struct py_profile *p, struct reader *r)
{
    uint32_t first, n, *ids = NULL, ids_cap = 0, depth = 0;
    int rc = -EINVAL;
    if (get_u32(r, &first, UINT32_MAX, "stack id") < 0 || get_count(r, &n, "stack count") < 0)
        return -EINVAL;
    if (first != p->nstacks + 1)
        return bad(r, "stacks out of order");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t common, rest, id;
        if (get_u32(r, &common, depth, "stack prefix") < 0 ||
            get_count(r, &rest, "stack depth") < 0)
            goto out;
        if (grow32((void **)&ids, &ids_cap, (size_t)common + rest, sizeof(*ids))) {
            rc = -ENOMEM;
            goto out;
        }
        for (uint32_t k = common; k < common + rest; k++)
            if (get_u32(r, &ids[k], p->nframes, "frame id") < 0)
                goto out;
            else if (ids[k] == 0)
                goto out_bad;
        depth = common + rest;
        if ((rc = py_profile_stack(p, ids, depth, &id)) < 0)
            goto out;
        rc = -EINVAL;
        if (id != p->nstacks || id != first + i) {
            bad(r, "a stack defined twice");
            goto out;
        }
    }
    rc = 0;
    goto out;
out_bad:
    bad(r, "frame id 0 in a stack");
out:
    free(ids);
    return rc;
}

/* Processes and threads are read here and applied by the caller once the
 * whole block has been checked. */
struct dict_tail {
    struct py_process *procs;
    struct py_thread *threads;
    uint32_t nprocs, nthreads;
};

static int load_procs_threads(struct reader *r, struct dict_tail *t)
{
    char name[16];
    if (get_count(r, &t->nprocs, "process count") < 0)
        return -EINVAL;
    if (!(t->procs = calloc(t->nprocs + 1, sizeof(*t->procs))))
        return -ENOMEM;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        struct py_process *q = &t->procs[i];
        if (get_s32(r, &q->pid, "pid") < 0 || get_s32(r, &q->ppid, "ppid") < 0 ||
            get_str(r, name, sizeof(name) - 1, "process name") < 0)
            return -EINVAL;
        copy_name(q->comm, sizeof(q->comm), name);
    }
    if (get_count(r, &t->nthreads, "thread count") < 0)
        return -EINVAL;
    if (!(t->threads = calloc(t->nthreads + 1, sizeof(*t->threads))))
        return -ENOMEM;
    for (uint32_t i = 0; i < t->nthreads; i++) {
        struct py_thread *q = &t->threads[i];
        if (get_s32(r, &q->pid, "pid") < 0 || get_s32(r, &q->tid, "tid") < 0 ||
            get_str(r, name, sizeof(name) - 1, "thread name") < 0)
            return -EINVAL;
        copy_name(q->name, sizeof(q->name), name);
    }
    return 0;
}

/* Room for every process and thread of t, so that applying them cannot
 * fail: grow each dictionary and its index as if all were new. */
static int reserve_tail(struct py_profile *p, const struct dict_tail *t)
{
    struct py_index *ix = p->index;
    size_t np = (size_t)p->nprocs + t->nprocs, nt = (size_t)p->nthreads + t->nthreads;
    if (grow32((void **)&p->procs, &p->procs_cap, np, sizeof(*p->procs)) ||
        grow_dirty(&ix->proc_dirty, &ix->proc_dirty_cap, np) ||
        grow32((void **)&p->threads, &p->threads_cap, nt, sizeof(*p->threads)) ||
        grow_dirty(&ix->thread_dirty, &ix->thread_dirty_cap, nt))
        return -ENOMEM;
    if (table_reserve(&ix->procs, p->nprocs, np, proc_item_hash, p) ||
        table_reserve(&ix->threads, p->nthreads, nt, thread_item_hash, p))
        return -ENOMEM;
    return 0;
}

/* Forget frames and stacks past the counts given, and index what is left. */
static void truncate_dicts(struct py_profile *p, uint32_t nframes, uint32_t nstacks,
                           size_t nstack_frames)
{
    struct py_index *ix = p->index;
    for (uint32_t i = nframes; i < p->nframes; i++) {
        ix->string_bytes -= strlen(p->frames[i].func) + strlen(p->frames[i].file) + 2;
        free((char *)p->frames[i].func);
        free((char *)p->frames[i].file);
    }
    p->nframes = nframes;
    p->nstacks = nstacks;
    p->nstack_frames = nstack_frames;
    /* Fewer items fit the slots there are: index them again in place,
     * which cannot fail (removing entries would break probe chains). */
    if (ix->frames.nslots)
        table_refill(&ix->frames, nframes, frame_item_hash, p);
    if (ix->stacks.nslots)
        table_refill(&ix->stacks, nstacks, stack_item_hash, p);
}

static int load_dict(struct py_profile *p, struct reader *r)
{
    uint32_t nframes = p->nframes, nstacks = p->nstacks;
    size_t nstack_frames = p->nstack_frames;
    struct dict_tail t = {0};
    int rc;
    if ((rc = load_frames(p, r)) < 0 || (rc = load_stacks(p, r)) < 0 ||
        (rc = load_procs_threads(r, &t)) < 0)
        goto undo;
    if (r->p != r->end) {
        rc = bad(r, "bytes after the dictionary");
        goto undo;
    }
    if ((rc = reserve_tail(p, &t)) < 0)
        goto undo;
    for (uint32_t i = 0; i < t.nprocs; i++)
        py_profile_process(p, t.procs[i].pid, t.procs[i].ppid, t.procs[i].comm);
    for (uint32_t i = 0; i < t.nthreads; i++)
        py_profile_thread(p, t.threads[i].pid, t.threads[i].tid, t.threads[i].name);
    free(t.procs);
    free(t.threads);
    return 0;
undo:
    truncate_dicts(p, nframes, nstacks, nstack_frames);
    free(t.procs);
    free(t.threads);
    return rc;
}

static int load_samples(struct py_profile *p, struct reader *r)
{
    uint32_t n, k;
    int64_t t;
    int32_t *pid = NULL, *tid = NULL;
    int rc = -EINVAL;
    if (get_count(r, &n, "sample count") < 0 || get_svarint(r, &t, "start time") < 0 ||
        get_count(r, &k, "thread count") < 0)
        return -EINVAL;
    pid = malloc(sizeof(*pid) * (k + 1));
    tid = malloc(sizeof(*tid) * (k + 1));
    if (!pid || !tid ||
        grow((void **)&p->samples, &p->samples_cap, p->nsamples + n, sizeof(*p->samples))) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++)
        if (get_s32(r, &pid[i], "pid") < 0 || get_s32(r, &tid[i], "tid") < 0)
            goto out;
    if (n && !k) {
        bad(r, "samples of no thread");
        goto out;
    }
    if (t < -PY_US_MAX || t > PY_US_MAX) {
        bad(r, "start time");
        goto out;
    }
    struct py_sample *s = n ? p->samples + p->nsamples : NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t dt, packed;
        uint32_t which;
        if (get_varint(r, &dt, "time") < 0 || get_u32(r, &which, k - 1, "thread") < 0 ||
            get_varint(r, &packed, "stack") < 0)
            goto out;
        if ((i == 0 && dt != 0) || dt > (uint64_t)(PY_US_MAX - t)) {
            bad(r, "sample time");
            goto out;
        }
        if ((packed >> 4) > p->nstacks) {
            bad(r, "a sample of an unknown stack");
            goto out;
        }
        t += (int64_t)dt;
        s[i] = (struct py_sample){.t_ns = t * NS_PER_US,
                                  .pid = pid[which],
                                  .tid = tid[which],
                                  .stack = (uint32_t)(packed >> 4),
                                  .state = (uint8_t)(packed & PY_STATE_BITS_MASK),
                                  .gil = (uint8_t)((packed >> 3) & 1)};
    }
    if (r->p != r->end) {
        bad(r, "bytes after the samples");
        goto out;
    }
    p->nsamples += n;
    rc = 0;
out:
    free(pid);
    free(tid);
    return rc;
}

int py_profile_load(struct py_profile *p, int kind, const uint8_t *data, size_t len,
                    struct strbuf *why)
{
    struct reader h = {.p = data, .end = data + len, .why = why};
    uint64_t raw_len;
    if (len < 2)
        return bad(&h, "shorter than its header");
    if (data[0] != PY_BLOCK_VERSION)
        return bad(&h, "unknown version");
    if (data[1] != kind || (kind != PY_BLOCK_DICT && kind != PY_BLOCK_SAMPLES))
        return bad(&h, "kind does not match");
    h.p += 2;
    if (get_varint(&h, &raw_len, "length") < 0)
        return -EINVAL;
    if (raw_len > PY_BLOCK_RAW_MAX)
        return bad(&h, "length too large");
    size_t zlen = (size_t)(h.end - h.p);
    unsigned long long content = ZSTD_getFrameContentSize(h.p, zlen);
    if (content != raw_len)
        return bad(&h, "compressed length does not match");
    uint8_t *raw = malloc(raw_len ? raw_len : 1);
    if (!raw)
        return -ENOMEM;
    size_t got = ZSTD_decompress(raw, raw_len, h.p, zlen);
    int rc;
    if (ZSTD_isError(got) || got != raw_len) {
        rc = bad(&h, "cannot decompress");
    } else if (!index_of(p)) {
        rc = -ENOMEM;
    } else {
        struct reader r = {.p = raw, .end = raw + raw_len, .why = why};
        rc = kind == PY_BLOCK_DICT ? load_dict(p, &r) : load_samples(p, &r);
    }
    free(raw);
    return rc;
}
