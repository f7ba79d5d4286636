#include "record/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/strtab.h"
#include "record/event_block.h"
#include "sample/proctree.h"
#include "sample/series.h"

/* ---- names ---------------------------------------------------------------- */

/* The run-wide id of name (its index + 1), defining it on first sight. 0
 * when the table is full (the events that use it are lost, and counted). */
static uint32_t intern_name(struct event_sink *k, const char *name)
{
    uint32_t index;
    int rc = strtab_intern(&k->names, name, strlen(name), &index);
    if (rc < 0)
        return 0;
    if (rc == 1 && strcmp(name, "step") == 0)
        k->step_name = k->name_base + index + 1;
    return k->name_base + index + 1;
}

/* The name of id (not 0) */
static const char *name_of(const struct event_sink *k, uint32_t id)
{
    return k->names.s[id - 1 - k->name_base];
}

/* ---- processes ------------------------------------------------------------ */

static struct event_proc *find_proc(struct event_sink *k, pid_t pid)
{
    for (uint32_t i = 0; i < k->nprocs; i++)
        if (k->procs[i].pid == pid)
            return &k->procs[i];
    if (array_grow((void **)&k->procs, &k->procs_cap, k->nprocs + 1, sizeof(*k->procs), 16) < 0)
        return NULL;
    struct event_proc *p = &k->procs[k->nprocs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->ppid = p->rank = p->local_rank = p->world_size = p->worker_id = -1;
    p->version = 1;
    return p;
}

/* ppid and comm of a process the tree has not seen, from the real /proc
 * (events always come from real processes, whatever --proc-root says). */
static void read_proc_stat(struct event_proc *p)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren)
        return;
    int ppid;
    char state;
    if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
        return;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len >= sizeof(p->comm))
        len = sizeof(p->comm) - 1;
    memcpy(p->comm, open_paren + 1, len);
    p->comm[len] = 0;
    p->ppid = ppid;
    p->version++;
}

/* ppid and comm from what the claimer of ring noted, for a process gone
 * from /proc before the drain looked (reaped by its parent within ms). */
static void fill_from_ring(struct event_sink *k, struct event_proc *p, int ring)
{
    int32_t ppid;
    char comm[16];
    ring_owner_info(&k->seg, ring, &ppid, comm);
    if (ppid <= 0 || !comm[0])
        return; /* a writer that notes neither */
    p->ppid = ppid;
    snprintf(p->comm, sizeof(p->comm), "%s", comm);
    p->version++;
}

/* ppid and comm from the process tree, once it has seen the process; else
 * from /proc, else from its ring (ring < 0: none to ask). */
static void fill_from_tree(struct event_sink *k, struct event_proc *p, int ring)
{
    if (p->comm[0] || !k->tree)
        return;
    struct proc_entry *e = proc_tree_find(k->tree, p->pid);
    if (e) {
        p->ppid = e->ppid;
        snprintf(p->comm, sizeof(p->comm), "%s", e->comm);
        p->version++;
        return;
    }
    read_proc_stat(p); /* not sampled yet (it is new, or short-lived) */
    if (!p->comm[0] && ring >= 0)
        fill_from_ring(k, p, ring);
}

static void set_meta(struct event_sink *k, pid_t pid, const char *key, double value)
{
    struct event_proc *p = find_proc(k, pid);
    if (!p || !(value >= 0 && value < 1e9))
        return;
    int64_t v = (int64_t)value;
    int64_t *field = strcmp(key, "rank") == 0         ? &p->rank
                     : strcmp(key, "local_rank") == 0 ? &p->local_rank
                     : strcmp(key, "world_size") == 0 ? &p->world_size
                     : strcmp(key, "worker_id") == 0  ? &p->worker_id
                                                      : NULL;
    if (field && *field != v) {
        *field = v;
        p->version++;
        if (k->proc_tap)
            k->proc_tap(k->tap_arg, pid, p->rank, p->worker_id);
    }
}

static const char *proc_role(const struct event_sink *k, const struct event_proc *p)
{
    if (p->worker_id >= 0)
        return "dataloader";
    if (p->rank >= 0)
        return "rank";
    return p->pid == k->root_pid ? "main" : NULL;
}

/* ---- app.<name> counters -------------------------------------------------- */

static void put_app_counter(struct event_sink *k, pid_t pid, uint32_t name, int64_t ts,
                            double value)
{
    struct event_proc *p = find_proc(k, pid);
    int32_t rank = p && p->rank >= 0 ? (int32_t)p->rank : -1;
    uint32_t index = UINT32_MAX;
    for (uint32_t i = 0; i < k->napps; i++)
        if (k->apps[i].name == name && k->apps[i].rank == rank)
            index = k->apps[i].series;
    if (index == UINT32_MAX) {
        if (array_grow((void **)&k->apps, &k->apps_cap, k->napps + 1, sizeof(*k->apps), 16) < 0)
            return;
        char series_name[EVENT_NAME_BUF], labels[32] = "";
        snprintf(series_name, sizeof(series_name), "%.*s%s",
                 (int)metric_family_prefix_len(METRIC_APP), metric_name(METRIC_APP),
                 name_of(k, name));
        if (rank >= 0)
            snprintf(labels, sizeof(labels), "rank=%d", rank);
        if (series_get(k->series, series_name, labels, metric_unit(METRIC_APP), &index) < 0)
            return;
        k->apps[k->napps++] = (struct app_series){name, rank, index};
    }
    series_put_at(k->series, index, ts, value);
}

/* ---- streams -------------------------------------------------------------- */

static int64_t to_utc(const struct event_sink *k, uint64_t mono_ns)
{
    /* unsigned: a hostile timestamp wraps instead of overflowing */
    return (int64_t)((uint64_t)k->real0_ns + (mono_ns - (uint64_t)k->mono0_ns));
}

static void seal(struct event_sink *k, struct event_stream *s)
{
    if (!s->n)
        return;
    size_t bound = event_block_bound(s->n);
    struct event_sealed *b = NULL;
    if (k->pending_bytes + bound <= EVENT_PENDING_MAX)
        b = malloc(sizeof(*b) + bound);
    struct event_block_record rec;
    if (!b || event_block_build(&k->enc, s->buf, s->n, s->pid, s->tid, b->data, bound, &rec) < 0) {
        free(b);
        k->lost += s->n; /* the store is behind and memory is capped: drop, count */
        k->events -= s->n;
        s->n = 0;
        return;
    }
    struct event_sealed *shrunk = realloc(b, sizeof(*b) + rec.len);
    if (shrunk)
        b = shrunk;
    b->next = NULL;
    b->rec = rec;
    b->rec.data = b->data; /* b may have moved */
    if (k->sealed_tail)
        k->sealed_tail->next = b;
    else
        k->sealed_head = b;
    k->sealed_tail = b;
    k->pending_bytes += rec.len;
    s->n = 0;
}

static void append(struct event_sink *k, struct event_stream *s, struct event ev, int64_t now)
{
    if (!s->buf && !(s->buf = malloc(EVENT_BLOCK_EVENTS * sizeof(*s->buf)))) {
        k->lost++;
        return;
    }
    if (s->n == EVENT_BLOCK_EVENTS)
        seal(k, s);
    if (!s->n)
        s->first_mono_ns = now;
    s->buf[s->n++] = ev;
    k->events++;
    if (k->span_tap && ev.kind == STROBE_EV_COMPLETE && ev.value >= 0)
        k->span_tap(k->tap_arg, s->pid, s->tid, ev.ts_ns, ev.ts_ns + ev.value, ev.name,
                    ev.name ? name_of(k, ev.name) : "");
}

/* Spans still open are kept as span-begin events: the end never came. */
static void flush_open(struct event_sink *k, struct event_stream *s, uint32_t down_to, int64_t now)
{
    while (s->depth > down_to) {
        struct open_span *o = &s->open[--s->depth];
        append(k, s, (struct event){o->ts_ns, 0, o->name, o->step, STROBE_EV_SPAN_BEGIN}, now);
    }
}

static void new_owner(struct event_sink *k, int ring, pid_t pid, pid_t tid, int64_t now)
{
    struct event_stream *s = &k->streams[ring];
    flush_open(k, s, 0, now);
    seal(k, s);
    memset(s->map, 0, sizeof(s->map));
    s->too_deep = 0;
    s->pid = pid;
    s->tid = tid;
    struct event_proc *p = find_proc(k, pid);
    if (p)
        fill_from_tree(k, p, ring);
}

static void close_span(struct event_sink *k, struct event_stream *s, struct event ev, int64_t now)
{
    uint32_t j = s->depth;
    while (j > 0 && s->open[j - 1].name != ev.name)
        j--;
    if (!j) { /* an end without its begin (it began before a drop) */
        append(k, s, ev, now);
        return;
    }
    flush_open(k, s, j, now); /* spans opened inside and never closed */
    struct open_span *o = &s->open[--s->depth];
    int64_t len = ev.ts_ns >= o->ts_ns ? ev.ts_ns - o->ts_ns : 0;
    append(k, s, (struct event){o->ts_ns, len, o->name, o->step, STROBE_EV_COMPLETE}, now);
}

struct drain_ctx {
    struct event_sink *k;
    int64_t now;
};

static void on_record(int ring, pid_t pid, pid_t tid, const struct strobe_record *r,
                      const char *name, void *arg)
{
    struct drain_ctx *c = arg;
    struct event_sink *k = c->k;
    struct event_stream *s = &k->streams[ring];
    if (s->pid != pid || s->tid != tid)
        new_owner(k, ring, pid, tid, c->now);
    if (name) {
        if (r->name_id < EVENT_RING_NAMES)
            s->map[r->name_id] = intern_name(k, name);
        return;
    }
    uint32_t id = r->name_id < EVENT_RING_NAMES ? s->map[r->name_id] : 0;
    if (r->name_id && !id) { /* its name was lost (table full) */
        k->lost++;
        return;
    }
    struct event ev = {to_utc(k, r->ts_ns), (int64_t)r->value, id, r->step, r->kind};
    if (r->step > k->last_step)
        k->last_step = r->step;
    switch (r->kind) {
    case STROBE_EV_SPAN_BEGIN:
        if (s->depth < EVENT_OPEN_MAX && !s->too_deep) {
            s->open[s->depth++] = (struct open_span){ev.ts_ns, id, r->step};
            return;
        }
        /* too deep: dropped and counted. Kept as a bare begin, its end would
         * close the span below it, and every span below would then take the
         * end of the one inside it (recursion 70 deep shifted 64 spans) */
        s->too_deep++;
        k->lost++;
        return;
    case STROBE_EV_SPAN_END:
        if (s->too_deep) { /* the end of the innermost span, one of those dropped */
            s->too_deep--;
            return;
        }
        close_span(k, s, ev, c->now);
        return;
    case STROBE_EV_COUNTER: {
        double v;
        memcpy(&v, &r->value, sizeof(v));
        const char *n = id ? name_of(k, id) : "";
        size_t plen = sizeof(EVENT_META_PREFIX) - 1;
        if (strncmp(n, EVENT_META_PREFIX, plen) == 0) {
            set_meta(k, pid, n + plen, v);
            return;
        }
        if (id)
            put_app_counter(k, pid, id, ev.ts_ns, v);
        break;
    }
    case STROBE_EV_COMPLETE:
        if (id && id == k->step_name)
            k->steps++;
        break;
    default:
        break;
    }
    append(k, s, ev, c->now);
}

/* ---- the sink ------------------------------------------------------------- */

int event_sink_open(struct event_sink *k, const char *run_id, struct series_table *series,
                    struct proc_tree *tree)
{
    memset(k, 0, sizeof(*k));
    k->series = series;
    k->tree = tree;
    char name[64];
    snprintf(name, sizeof(name), "/strobe-%s", run_id);
    int rc = ring_segment_create(&k->seg, name, EVENT_RINGS, EVENT_RING_RECORDS);
    if (rc < 0)
        return rc;
    k->streams = calloc(k->seg.ring_count, sizeof(*k->streams));
    k->names.max = EVENT_NAMES_MAX;
    if (!k->streams || event_encoder_init(&k->enc) < 0) {
        event_sink_close(k);
        return -ENOMEM;
    }
    k->on = 1;
    return 0;
}

const char *event_sink_shm_name(const struct event_sink *k)
{
    return k->on ? k->seg.name : NULL;
}

void event_sink_start(struct event_sink *k, int64_t mono0_ns, int64_t real0_ns, pid_t root)
{
    k->mono0_ns = mono0_ns;
    k->real0_ns = real0_ns;
    k->root_pid = root;
}

void event_sink_drain(struct event_sink *k, int64_t now_mono_ns)
{
    if (!k->on)
        return;
    struct drain_ctx c = {k, now_mono_ns};
    ring_drain(&k->seg, on_record, &c, &k->st);
    for (uint32_t i = 0; i < k->seg.ring_count; i++) {
        struct event_stream *s = &k->streams[i];
        if (s->n == EVENT_BLOCK_EVENTS ||
            (s->n && now_mono_ns - s->first_mono_ns >= EVENT_BLOCK_AGE_NS))
            seal(k, s);
    }
}

void event_sink_seal_all(struct event_sink *k)
{
    if (!k->on)
        return;
    for (uint32_t i = 0; i < k->seg.ring_count; i++) {
        flush_open(k, &k->streams[i], 0, 0);
        seal(k, &k->streams[i]);
    }
    for (uint32_t i = 0; i < k->nprocs; i++)
        fill_from_tree(k, &k->procs[i], -1);
}

void event_sink_close(struct event_sink *k)
{
    /* the streams first: releasing the segment zeroes its ring_count */
    for (uint32_t i = 0; k->streams && i < k->seg.ring_count; i++)
        free(k->streams[i].buf);
    free(k->streams);
    if (k->seg.hdr)
        ring_segment_release(&k->seg);
    strtab_release(&k->names);
    free(k->procs);
    free(k->apps);
    for (struct event_sealed *b = k->sealed_head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    event_encoder_release(&k->enc);
    memset(k, 0, sizeof(*k));
}

uint64_t event_sink_dropped(const struct event_sink *k)
{
    return k->st.dropped + k->lost;
}

/* ---- batches -------------------------------------------------------------- */

int event_batch_collect(struct event_batch *b, struct event_sink *k)
{
    b->names_from = b->names_to = 0;
    b->nprocs = 0;
    b->first = b->last = NULL;
    b->nblocks = 0;
    if (!k->on)
        return 0;
    uint32_t n = k->names.n - k->names_stored;
    if (array_grow((void **)&b->names, &b->names_cap, n, sizeof(*b->names), 64) < 0)
        return -ENOMEM;
    if (n) /* both may still be NULL */
        memcpy(b->names, k->names.s + k->names_stored, n * sizeof(*b->names));
    b->names_from = k->names_stored;
    b->name_base = k->name_base;
    b->names_to = k->names.n;
    for (uint32_t i = 0; i < k->nprocs; i++) {
        if (k->procs[i].stored == k->procs[i].version)
            continue;
        if (array_grow((void **)&b->procs, &b->procs_cap, b->nprocs + 1, sizeof(*b->procs), 16) < 0)
            return -ENOMEM;
        b->procs[b->nprocs] = k->procs[i];
        b->procs[b->nprocs++].role = proc_role(k, &k->procs[i]);
    }
    b->first = k->sealed_head;
    b->last = k->sealed_tail;
    for (struct event_sealed *s = b->first; s; s = s == b->last ? NULL : s->next)
        b->nblocks++;
    return 0;
}

void event_batch_settle(struct event_batch *b, struct event_sink *k, int result)
{
    if (result < 0 || !k->on)
        return;
    k->names_stored = b->names_to;
    for (uint32_t i = 0; i < b->nprocs; i++) {
        struct event_proc *p = NULL;
        for (uint32_t j = 0; j < k->nprocs && !p; j++)
            if (k->procs[j].pid == b->procs[i].pid)
                p = &k->procs[j];
        if (p && p->version == b->procs[i].version)
            p->stored = p->version;
    }
    if (!b->last)
        return;
    struct event_sealed *s = k->sealed_head;
    for (;;) {
        struct event_sealed *next = s->next;
        int was_last = s == b->last;
        k->pending_bytes -= s->rec.len;
        free(s);
        s = next;
        if (was_last)
            break;
    }
    k->sealed_head = s;
    if (!s)
        k->sealed_tail = NULL;
}

void event_batch_release(struct event_batch *b)
{
    free(b->names);
    free(b->procs);
    memset(b, 0, sizeof(*b));
}

int event_batch_store(const struct event_batch *b, struct store *s, const char *run_id)
{
    int rc = 0;
    for (uint32_t i = b->names_from; rc == 0 && i < b->names_to; i++)
        rc = s->ops->event_name_insert(s, run_id, (int64_t)b->name_base + i + 1,
                                       b->names[i - b->names_from]);
    for (uint32_t i = 0; rc == 0 && i < b->nprocs; i++) {
        const struct event_proc *p = &b->procs[i];
        struct process_record r = {p->pid,        p->ppid,     p->comm[0] ? p->comm : NULL,
                                   p->role,       p->rank,     p->local_rank,
                                   p->world_size, p->worker_id};
        rc = s->ops->process_upsert(s, run_id, &r);
    }
    /* stop at last without reading its next: the sampler may be linking a
     * newer block there right now */
    for (const struct event_sealed *e = b->first; rc == 0 && e; e = e == b->last ? NULL : e->next)
        rc = s->ops->event_block_insert(s, run_id, &e->rec);
    return rc;
}
