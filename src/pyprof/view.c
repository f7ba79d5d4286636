/*
 * The views of a run's Python samples (view.h): attribution, filters and
 * the aggregations strobe flame, show and trace print.
 *
 * Building takes one pass over the samples. Each is attributed from the
 * spans of its process, found by binary search in arrays sorted by start:
 * the training steps, the evaluation steps and the phase spans of that
 * process (all its threads together). The innermost phase open at t is the
 * latest-starting span before t that still runs at t: spans on a thread
 * nest, so looking back a bounded number of spans finds it (as
 * analyze/steps.c does). Frames and stacks are interned into the view's own
 * dictionaries through open-addressing hash tables, which are freed once
 * the view is built; the counts come from sorting the attributed samples.
 */
#include "pyprof/view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/json_writer.h"
#include "pyprof/reader.h"
#include "store/job.h"

const char *const py_phase_names[PY_PHASE_COUNT] = {"data", "forward", "backward", "optimizer",
                                                    "comm", "other",   "none",     "eval"};
const char *const py_state_names[PY_STATES] = {"running", "lock", "io", "sleep", "gpu", "wait"};

/* Phase spans looked back at from the latest one begun before t. */
#define LOOK_BACK 64

int py_phase_parse(const char *s)
{
    for (int p = 0; p < PY_PHASE_COUNT; p++)
        if (strcmp(s, py_phase_names[p]) == 0)
            return p;
    return -1;
}

int py_view_state_kept(const struct py_view_filter *f, uint32_t state)
{
    return f->idle || state == PY_ST_RUNNING;
}

/* ---- interning ------------------------------------------------------------ */

/* An open-addressing table of indexes (+1; 0 is empty), grown at half full. */
struct itable {
    uint32_t *slot;
    uint32_t cap, n; /* cap a power of two */
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u; /* FNV-1a */
    return h;
}

#define HASH_SEED 14695981039346656037u

static uint64_t frame_hash(const char *func, const char *file, uint32_t line)
{
    uint64_t h = hash_bytes(HASH_SEED, func, strlen(func) + 1);
    h = hash_bytes(h, file, strlen(file) + 1);
    return hash_bytes(h, &line, sizeof(line));
}

static uint64_t stack_hash(const uint32_t *f, uint32_t depth)
{
    return hash_bytes(HASH_SEED, f, depth * sizeof(*f));
}

struct view_index {
    struct itable frames, stacks;
};

static uint64_t view_frame_hash(const struct py_view *v, uint32_t i)
{
    return frame_hash(v->frames[i].func, v->frames[i].file, v->frames[i].line);
}

static uint64_t view_stack_hash(const struct py_view *v, uint32_t i)
{
    return stack_hash(v->stack_frames + v->stack_off[i], v->stack_depth[i]);
}

/* Double t's slots, rehashing with h(v, index). */
static int itable_grow(struct itable *t, const struct py_view *v,
                       uint64_t (*h)(const struct py_view *, uint32_t))
{
    uint32_t cap = t->cap ? t->cap * 2 : 256;
    uint32_t *slot = calloc(cap, sizeof(*slot));
    if (!slot)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        uint32_t j = (uint32_t)h(v, t->slot[i] - 1) & (cap - 1);
        while (slot[j])
            j = (j + 1) & (cap - 1);
        slot[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

static int intern_frame(struct py_view *v, const char *func, const char *file, uint32_t line,
                        uint32_t *out)
{
    struct itable *t = &((struct view_index *)v->index)->frames;
    if ((t->n + 1) * 2 > t->cap && itable_grow(t, v, view_frame_hash) < 0)
        return -ENOMEM;
    func = func ? func : "";
    file = file ? file : "";
    uint32_t j = (uint32_t)frame_hash(func, file, line) & (t->cap - 1);
    for (; t->slot[j]; j = (j + 1) & (t->cap - 1)) {
        const struct py_view_frame *f = &v->frames[t->slot[j] - 1];
        if (f->line == line && strcmp(f->func, func) == 0 && strcmp(f->file, file) == 0) {
            *out = t->slot[j] - 1;
            return 0;
        }
    }
    if (array_grow((void **)&v->frames, &v->frames_cap, v->nframes + 1, sizeof(*v->frames), 64) < 0)
        return -ENOMEM;
    struct py_view_frame *f = &v->frames[v->nframes];
    f->func = strdup(func);
    f->file = strdup(file);
    f->line = line;
    if (!f->func || !f->file) {
        free(f->func);
        free(f->file);
        return -ENOMEM;
    }
    t->slot[j] = ++v->nframes;
    t->n++;
    *out = v->nframes - 1;
    return 0;
}

static int intern_stack(struct py_view *v, const uint32_t *f, uint32_t depth, uint32_t *out)
{
    struct itable *t = &((struct view_index *)v->index)->stacks;
    if ((t->n + 1) * 2 > t->cap && itable_grow(t, v, view_stack_hash) < 0)
        return -ENOMEM;
    uint32_t j = (uint32_t)stack_hash(f, depth) & (t->cap - 1);
    for (; t->slot[j]; j = (j + 1) & (t->cap - 1)) {
        uint32_t s = t->slot[j] - 1;
        if (v->stack_depth[s] == depth &&
            memcmp(v->stack_frames + v->stack_off[s], f, depth * sizeof(*f)) == 0) {
            *out = s;
            return 0;
        }
    }
    uint32_t cap = v->stacks_cap;
    if (array_grow((void **)&v->stack_off, &cap, v->nstacks + 1, sizeof(uint32_t), 64) < 0 ||
        array_grow((void **)&v->stack_depth, &v->stacks_cap, v->nstacks + 1, sizeof(uint32_t), 64) <
            0)
        return -ENOMEM;
    if (cap != v->stacks_cap) /* one grew, the other did not: keep them one size */
        return -ENOMEM;
    if (array_grow((void **)&v->stack_frames, &v->stack_frames_cap, v->nstack_frames + depth,
                   sizeof(uint32_t), 256) < 0)
        return -ENOMEM;
    if (depth)
        memcpy(v->stack_frames + v->nstack_frames, f, depth * sizeof(*f));
    v->stack_off[v->nstacks] = v->nstack_frames;
    v->stack_depth[v->nstacks] = depth;
    v->nstack_frames += depth;
    t->slot[j] = ++v->nstacks;
    t->n++;
    *out = v->nstacks - 1;
    return 0;
}

/* Source stack ids to view stacks, interned on first use. */
struct stack_map {
    const struct py_profile *p;
    uint32_t *frame_of; /* source frame id -> view frame + 1 (0: not yet) */
    uint32_t *stack_of; /* source stack id -> view stack + 1 */
    uint32_t *scratch;
};

static int map_stack(struct py_view *v, struct stack_map *m, uint32_t id, uint32_t *out)
{
    const struct py_profile *p = m->p;
    if (id == 0 || id > p->nstacks) {
        *out = 0; /* no Python frame, or an id the dictionaries lack */
        return 0;
    }
    if (m->stack_of[id]) {
        *out = m->stack_of[id] - 1;
        return 0;
    }
    const struct py_stack *st = &p->stacks[id - 1];
    uint32_t depth = 0;
    for (uint32_t i = 0; i < st->depth && st->off + i < p->nstack_frames; i++) {
        uint32_t fid = p->stack_frames[st->off + i];
        if (fid == 0 || fid > p->nframes)
            continue;
        if (!m->frame_of[fid]) {
            const struct py_frame *f = &p->frames[fid - 1];
            uint32_t vf;
            if (intern_frame(v, f->func, f->file, f->line, &vf) < 0)
                return -ENOMEM;
            m->frame_of[fid] = vf + 1;
        }
        m->scratch[depth++] = m->frame_of[fid] - 1;
    }
    if (intern_stack(v, m->scratch, depth, out) < 0)
        return -ENOMEM;
    m->stack_of[id] = *out + 1;
    return 0;
}

/* ---- roles ---------------------------------------------------------------- */

static int role_index(struct py_view *v, const char *label, uint32_t *out)
{
    for (uint32_t i = 0; i < v->nroles; i++)
        if (strcmp(v->roles[i], label) == 0) {
            *out = i;
            return 0;
        }
    if (array_grow((void **)&v->roles, &v->roles_cap, v->nroles + 1, sizeof(*v->roles), 8) < 0 ||
        !(v->roles[v->nroles] = strdup(label)))
        return -ENOMEM;
    *out = v->nroles++;
    return 0;
}

static const struct proc_info *proc_of(const struct run_events *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return &e->procs[i];
    return NULL;
}

static int is_worker(const struct proc_info *pi)
{
    return pi && (strcmp(pi->role, "dataloader") == 0 || pi->worker_id >= 0);
}

/* A worker's rank: its own, else its parent's; -1 without ranks. */
static int64_t worker_rank(const struct run_events *e, const struct proc_info *pi)
{
    if (pi->rank >= 0)
        return pi->rank;
    const struct proc_info *parent = proc_of(e, pi->ppid);
    return parent && !is_worker(parent) ? parent->rank : -1;
}

/* The job's root among a profile's processes: the first whose parent is not
 * one of them. */
static int64_t profile_root(const struct py_profile *p, int64_t base)
{
    for (uint32_t i = 0; i < p->nprocs; i++) {
        int found = 0;
        for (uint32_t j = 0; j < p->nprocs && !found; j++)
            found = p->procs[j].pid == p->procs[i].ppid;
        if (!found)
            return base + p->procs[i].pid;
    }
    return -1;
}

static void role_label(const struct run_events *e, int64_t pid, int64_t root, char *out, size_t cap)
{
    const struct proc_info *pi = proc_of(e, pid);
    if (is_worker(pi)) {
        int64_t rank = worker_rank(e, pi);
        char w[32] = "worker";
        if (pi->worker_id >= 0)
            snprintf(w, sizeof(w), "worker %lld", (long long)pi->worker_id);
        if (rank >= 0)
            snprintf(out, cap, "rank %lld %s", (long long)rank, w);
        else
            snprintf(out, cap, "%s", w);
    } else if (pi && (pi->rank >= 0 || strcmp(pi->role, "rank") == 0)) {
        snprintf(out, cap, "rank %lld", (long long)(pi->rank >= 0 ? pi->rank : 0));
    } else if ((pi && strcmp(pi->role, "main") == 0) || pid == root) {
        snprintf(out, cap, "main");
    } else {
        snprintf(out, cap, "child");
    }
}

/* ---- spans of a process --------------------------------------------------- */

struct span {
    int64_t start, end;
    uint32_t step;
    int kind; /* enum phase, or SPAN_TRAIN / SPAN_EVAL */
};
enum { SPAN_TRAIN = -1, SPAN_EVAL = -2, SPAN_OTHER = -3 };

struct proc_spans {
    int64_t pid;
    struct span *train, *eval, *phase;
    uint32_t ntrain, neval, nphase;
    uint32_t train_cap, eval_cap, phase_cap;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end < y->end) - (x->end > y->end); /* the outer first */
}

static int span_kind_of(const char *name)
{
    int m = steps_mode_of(name);
    if (m >= 0)
        return step_mode_is_training(m) ? SPAN_TRAIN : m == STEP_MODE_EVAL ? SPAN_EVAL : SPAN_OTHER;
    int p = steps_phase_of(name);
    return p >= 0 ? p : SPAN_OTHER;
}

static struct proc_spans *spans_for(struct proc_spans **ps, uint32_t *n, uint32_t *cap, int64_t pid)
{
    for (uint32_t i = 0; i < *n; i++)
        if ((*ps)[i].pid == pid)
            return &(*ps)[i];
    if (array_grow((void **)ps, cap, *n + 1, sizeof(**ps), 8) < 0)
        return NULL;
    struct proc_spans *p = &(*ps)[(*n)++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    return p;
}

static int push_span(struct span **a, uint32_t *n, uint32_t *cap, struct span s)
{
    if (array_grow((void **)a, cap, *n + 1, sizeof(**a), 64) < 0)
        return -ENOMEM;
    (*a)[(*n)++] = s;
    return 0;
}

/* Every process's steps and phase spans from e, sorted. */
static int collect_spans(const struct run_events *e, struct proc_spans **out, uint32_t *nout)
{
    int8_t *kind = malloc(e->nnames + 1);
    if (!kind)
        return -ENOMEM;
    for (uint32_t id = 0; id <= e->nnames; id++)
        kind[id] = (int8_t)span_kind_of(run_events_name(e, id));
    uint32_t n = 0, cap = 0;
    struct proc_spans *ps = NULL;
    int rc = 0;
    for (uint32_t i = 0; i < e->nthreads && rc == 0; i++) {
        const struct thread_events *t = &e->threads[i];
        struct proc_spans *p = spans_for(&ps, &n, &cap, t->pid);
        if (!p) {
            rc = -ENOMEM;
            break;
        }
        for (uint32_t j = 0; j < t->n && rc == 0; j++) {
            const struct event *ev = &t->ev[j];
            if (ev->kind != STROBE_EV_COMPLETE || ev->value < 0 || ev->name > e->nnames)
                continue;
            int k = kind[ev->name];
            struct span s = {ev->ts_ns, ev->ts_ns + ev->value, ev->step, k};
            if (k == SPAN_TRAIN)
                rc = push_span(&p->train, &p->ntrain, &p->train_cap, s);
            else if (k == SPAN_EVAL)
                rc = push_span(&p->eval, &p->neval, &p->eval_cap, s);
            else if (k >= 0)
                rc = push_span(&p->phase, &p->nphase, &p->phase_cap, s);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        array_sort(ps[i].train, ps[i].ntrain, sizeof(struct span), cmp_span);
        array_sort(ps[i].eval, ps[i].neval, sizeof(struct span), cmp_span);
        array_sort(ps[i].phase, ps[i].nphase, sizeof(struct span), cmp_span);
    }
    free(kind);
    *out = ps;
    *nout = n;
    return rc;
}

static void free_spans(struct proc_spans *ps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(ps[i].train);
        free(ps[i].eval);
        free(ps[i].phase);
    }
    free(ps);
}

/* The span of a[0..n) covering t that began last (the innermost), or NULL. */
static const struct span *covering(const struct span *a, uint32_t n, int64_t t)
{
    uint32_t lo = 0, hi = n; /* first span starting after t */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo, seen = 0; i > 0 && seen < LOOK_BACK; i--, seen++)
        if (a[i - 1].end > t)
            return &a[i - 1];
    return NULL;
}

static const struct proc_spans *spans_of(const struct proc_spans *ps, uint32_t n, int64_t pid)
{
    for (uint32_t i = 0; i < n; i++)
        if (ps[i].pid == pid)
            return &ps[i];
    return NULL;
}

/* What a process's samples are attributed with (looked up once a process). */
struct proc_attr {
    int64_t pid;
    uint32_t role;
    int worker;
    const struct proc_spans *own;  /* its spans: phases and steps */
    const struct proc_spans *step; /* a worker's: where its step number comes from */
};

/* A worker's step source: its parent, else a main or rank process of the
 * same rank that has steps, else the root. */
static const struct proc_spans *worker_step_source(const struct run_events *e,
                                                   const struct proc_info *pi,
                                                   const struct proc_spans *ps, uint32_t n,
                                                   int64_t root)
{
    const struct proc_spans *p = spans_of(ps, n, pi->ppid);
    if (p && p->ntrain)
        return p;
    int64_t rank = worker_rank(e, pi);
    for (uint32_t i = 0; i < e->nprocs; i++) {
        const struct proc_info *q = &e->procs[i];
        if (is_worker(q) || (rank >= 0 && q->rank != rank))
            continue;
        if ((p = spans_of(ps, n, q->pid)) && p->ntrain)
            return p;
    }
    return spans_of(ps, n, root);
}

static void attribute(const struct proc_attr *a, int64_t t, uint8_t *phase, uint32_t *step)
{
    const struct proc_spans *own = a->own;
    const struct span *st = a->step ? covering(a->step->train, a->step->ntrain, t) : NULL;
    *step = st ? st->step : 0;
    if (a->worker) {
        *phase = PHASE_DATA;
        return;
    }
    const struct span *ph = own ? covering(own->phase, own->nphase, t) : NULL;
    if (st) {
        *phase = (uint8_t)(ph ? ph->kind : PHASE_OTHER);
        return;
    }
    if (own && covering(own->eval, own->neval, t))
        *phase = PY_PHASE_EVAL;
    else
        *phase = (uint8_t)(ph ? ph->kind : PY_PHASE_NONE);
}

/* ---- building ------------------------------------------------------------- */

struct build {
    struct py_view *v;
    const struct run_events *e;
    const struct py_view_filter *f;
    struct proc_spans *ps;
    uint32_t nps;
    struct proc_attr *attr;
    uint32_t nattr, attr_cap;
    uint32_t samples_cap;
};

/* filter's words appear in label's, from a word's start to a word's end:
 * "worker" is every worker, "worker 0" the worker 0 of each rank, "rank 1"
 * rank 1 and its workers. */
static int role_matches(const char *filter, const char *label)
{
    size_t n = strlen(filter);
    if (!n)
        return 1;
    for (const char *p = label; (p = strstr(p, filter)) != NULL; p++)
        if ((p == label || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return 1;
    return 0;
}

static const struct proc_attr *attr_for(struct build *b, int64_t pid, int64_t root)
{
    for (uint32_t i = 0; i < b->nattr; i++)
        if (b->attr[i].pid == pid)
            return &b->attr[i];
    if (array_grow((void **)&b->attr, &b->attr_cap, b->nattr + 1, sizeof(*b->attr), 16) < 0)
        return NULL;
    struct proc_attr *a = &b->attr[b->nattr];
    memset(a, 0, sizeof(*a));
    a->pid = pid;
    char label[96];
    role_label(b->e, pid, root, label, sizeof(label));
    if (role_index(b->v, label, &a->role) < 0)
        return NULL;
    const struct proc_info *pi = proc_of(b->e, pid);
    a->worker = is_worker(pi);
    a->own = spans_of(b->ps, b->nps, pid);
    a->step = a->worker ? worker_step_source(b->e, pi, b->ps, b->nps, root) : a->own;
    b->nattr++;
    return a;
}

static int passes(const struct build *b, const struct proc_attr *a, uint8_t phase, uint32_t step)
{
    const struct py_view_filter *f = b->f;
    if (f->role && !role_matches(f->role, b->v->roles[a->role]))
        return 0;
    if (f->phase >= 0 && phase != f->phase)
        return 0;
    if ((f->step_from || f->step_to) && (step < f->step_from || step > f->step_to))
        return 0;
    return !f->pid || a->pid == f->pid;
}

static int add_source(struct build *b, const struct py_source *src)
{
    const struct py_profile *p = src->prof;
    struct stack_map m = {p, calloc(p->nframes + 1, sizeof(uint32_t)),
                          calloc(p->nstacks + 1, sizeof(uint32_t)),
                          malloc((p->nstack_frames + 1) * sizeof(uint32_t))};
    int rc = m.frame_of && m.stack_of && m.scratch ? 0 : -ENOMEM;
    int64_t root = profile_root(p, src->pid_base);
    for (size_t i = 0; i < p->nsamples && rc == 0; i++) {
        const struct py_sample *s = &p->samples[i];
        int64_t pid = src->pid_base + s->pid;
        b->v->all++;
        const struct proc_attr *a = attr_for(b, pid, root);
        if (!a) {
            rc = -ENOMEM;
            break;
        }
        uint8_t phase;
        uint32_t step, stack;
        attribute(a, s->t_ns, &phase, &step);
        if (!passes(b, a, phase, step))
            continue;
        if ((rc = map_stack(b->v, &m, s->stack, &stack)) < 0)
            break;
        uint8_t state = s->state < PY_STATES ? s->state : PY_ST_WAIT;
        if (array_grow((void **)&b->v->samples, &b->samples_cap, b->v->nsamples + 1,
                       sizeof(*b->v->samples), 1024) < 0) {
            rc = -ENOMEM;
            break;
        }
        b->v->samples[b->v->nsamples++] = (struct py_view_sample){
            s->t_ns, pid, src->pid_base + s->tid, stack, a->role, step, phase, state};
    }
    free(m.frame_of);
    free(m.stack_of);
    free(m.scratch);
    return rc;
}

static int cmp_count_key(const void *a, const void *b)
{
    const struct py_view_sample *x = a, *y = b;
    if (x->stack != y->stack)
        return (x->stack > y->stack) - (x->stack < y->stack);
    if (x->role != y->role)
        return (x->role > y->role) - (x->role < y->role);
    if (x->phase != y->phase)
        return (x->phase > y->phase) - (x->phase < y->phase);
    return (x->state > y->state) - (x->state < y->state);
}

static int build_counts(struct py_view *v, const struct py_view_filter *f)
{
    if (!v->nsamples)
        return 0;
    struct py_view_sample *k = malloc(v->nsamples * sizeof(*k));
    v->counts = malloc(v->nsamples * sizeof(*v->counts));
    if (!k || !v->counts) {
        free(k);
        return -ENOMEM;
    }
    memcpy(k, v->samples, v->nsamples * sizeof(*k));
    array_sort(k, v->nsamples, sizeof(*k), cmp_count_key);
    for (uint32_t i = 0; i < v->nsamples; i++) {
        v->total++;
        v->selected += (uint64_t)py_view_state_kept(f, k[i].state);
        if (i && cmp_count_key(&k[i - 1], &k[i]) == 0) {
            v->counts[v->ncounts - 1].count++;
            continue;
        }
        v->counts[v->ncounts++] =
            (struct py_view_count){k[i].stack, k[i].role, k[i].phase, k[i].state, 1};
    }
    free(k);
    return 0;
}

static int cmp_thread_time(const void *a, const void *b)
{
    const struct py_view_sample *x = a, *y = b;
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median gap between consecutive samples of a thread. */
static int estimate_interval(struct py_view *v)
{
    if (v->nsamples < 2)
        return 0;
    struct py_view_sample *k = malloc(v->nsamples * sizeof(*k));
    int64_t *gap = malloc(v->nsamples * sizeof(*gap));
    if (!k || !gap) {
        free(k);
        free(gap);
        return -ENOMEM;
    }
    memcpy(k, v->samples, v->nsamples * sizeof(*k));
    array_sort(k, v->nsamples, sizeof(*k), cmp_thread_time);
    uint32_t n = 0;
    for (uint32_t i = 1; i < v->nsamples; i++)
        if (k[i].tid == k[i - 1].tid && k[i].t_ns > k[i - 1].t_ns)
            gap[n++] = k[i].t_ns - k[i - 1].t_ns;
    array_sort(gap, n, sizeof(*gap), cmp_i64);
    v->interval_ns = n ? gap[n / 2] : 0;
    free(k);
    free(gap);
    return 0;
}

static int cmp_sample_time(const void *a, const void *b)
{
    const struct py_view_sample *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

int py_view_build(struct py_view *v, const struct py_source *src, uint32_t n,
                  const struct run_events *e, const struct py_view_filter *f)
{
    memset(v, 0, sizeof(*v));
    if (!(v->index = calloc(1, sizeof(struct view_index))))
        return -ENOMEM;
    uint32_t empty;
    struct build b = {.v = v, .e = e, .f = f};
    int rc = intern_stack(v, NULL, 0, &empty); /* stack 0: no Python frame */
    if (rc == 0)
        rc = collect_spans(e, &b.ps, &b.nps);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = add_source(&b, &src[i]);
    if (rc == 0)
        array_sort(v->samples, v->nsamples, sizeof(*v->samples), cmp_sample_time);
    if (rc == 0 && v->nsamples) {
        v->first_ns = v->samples[0].t_ns;
        v->last_ns = v->samples[v->nsamples - 1].t_ns;
    }
    if (rc == 0)
        rc = build_counts(v, f);
    if (rc == 0)
        rc = estimate_interval(v);
    free_spans(b.ps, b.nps);
    free(b.attr);
    struct view_index *ix = v->index;
    free(ix->frames.slot);
    free(ix->stacks.slot);
    free(ix);
    v->index = NULL;
    return rc;
}

void py_view_release(struct py_view *v)
{
    for (uint32_t i = 0; i < v->nframes; i++) {
        free(v->frames[i].func);
        free(v->frames[i].file);
    }
    free(v->frames);
    free(v->stack_off);
    free(v->stack_depth);
    free(v->stack_frames);
    for (uint32_t i = 0; i < v->nroles; i++)
        free(v->roles[i]);
    free(v->roles);
    free(v->counts);
    free(v->samples);
    memset(v, 0, sizeof(*v));
}

/* ---- aggregations --------------------------------------------------------- */

/* Counts per stack of the states the filter keeps ([nstacks], caller frees). */
static uint64_t *stack_counts(const struct py_view *v, const struct py_view_filter *f)
{
    uint64_t *c = calloc(v->nstacks + 1, sizeof(*c));
    if (!c)
        return NULL;
    for (uint32_t i = 0; i < v->ncounts; i++)
        if (py_view_state_kept(f, v->counts[i].state))
            c[v->counts[i].stack] += v->counts[i].count;
    return c;
}

struct top_sort {
    const struct py_view *v;
    int by_total;
};
static struct top_sort top_order; /* qsort has no context argument */

static int cmp_top(const void *a, const void *b)
{
    const struct py_top *x = a, *y = b;
    uint64_t cx = top_order.by_total ? x->total : x->self;
    uint64_t cy = top_order.by_total ? y->total : y->self;
    if (cx != cy)
        return cx < cy ? 1 : -1;
    const struct py_view_frame *fx = &top_order.v->frames[x->frame];
    const struct py_view_frame *fy = &top_order.v->frames[y->frame];
    int c = strcmp(fx->func, fy->func);
    if (c == 0)
        c = strcmp(fx->file, fy->file);
    return c ? c : (fx->line > fy->line) - (fx->line < fy->line);
}

int py_view_top(const struct py_view *v, const struct py_view_filter *f, int by_total, uint32_t max,
                struct py_top **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    uint64_t *sc = stack_counts(v, f);
    struct py_top *t = calloc(v->nframes + 1, sizeof(*t));
    uint32_t *stamp = calloc(v->nframes + 1, sizeof(*stamp));
    if (!sc || !t || !stamp) {
        free(sc);
        free(t);
        free(stamp);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < v->nframes; i++)
        t[i].frame = i;
    for (uint32_t s = 0; s < v->nstacks; s++) {
        uint32_t depth = v->stack_depth[s];
        if (!sc[s] || !depth)
            continue;
        const uint32_t *fr = v->stack_frames + v->stack_off[s];
        t[fr[depth - 1]].self += sc[s];
        for (uint32_t d = 0; d < depth; d++)
            if (stamp[fr[d]] != s + 1) { /* once a stack: recursion counts once */
                stamp[fr[d]] = s + 1;
                t[fr[d]].total += sc[s];
            }
    }
    top_order = (struct top_sort){v, by_total};
    qsort(t, v->nframes, sizeof(*t), cmp_top);
    uint32_t k = 0;
    while (k < v->nframes && k < max && (by_total ? t[k].total : t[k].self))
        k++;
    free(sc);
    free(stamp);
    *out = t;
    *n = k;
    return 0;
}

/* s with ';' as ',' and control bytes as '?', made valid UTF-8. */
static void add_clean(struct strbuf *out, const char *s)
{
    size_t from = out->len;
    strbuf_add_utf8(out, s);
    for (size_t i = from; i < out->len; i++) {
        unsigned char c = (unsigned char)out->buf[i];
        if (c == ';')
            out->buf[i] = ',';
        else if (c < 0x20 || c == 0x7f)
            out->buf[i] = '?';
    }
}

void py_view_frame_text(const struct py_view *v, uint32_t frame, struct strbuf *out)
{
    const struct py_view_frame *f = &v->frames[frame];
    add_clean(out, f->func);
    strbuf_adds(out, " (");
    add_clean(out, f->file);
    strbuf_addf(out, ":%u)", f->line);
}

struct line {
    char *text;
    uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

int py_view_collapsed(const struct py_view *v, const struct py_view_filter *f, struct strbuf *out)
{
    uint64_t *sc = stack_counts(v, f);
    struct line *l = calloc(v->nstacks + 1, sizeof(*l));
    int rc = sc && l ? 0 : -ENOMEM;
    uint32_t n = 0;
    for (uint32_t s = 0; s < v->nstacks && rc == 0; s++) {
        if (!sc[s] || !v->stack_depth[s])
            continue;
        struct strbuf b;
        strbuf_init(&b);
        for (uint32_t d = 0; d < v->stack_depth[s]; d++) {
            if (d)
                strbuf_addch(&b, ';');
            py_view_frame_text(v, v->stack_frames[v->stack_off[s] + d], &b);
        }
        if (strbuf_failed(&b)) {
            strbuf_release(&b);
            rc = -ENOMEM;
            break;
        }
        l[n++] = (struct line){strbuf_detach(&b), sc[s]};
    }
    if (rc == 0)
        array_sort(l, n, sizeof(*l), cmp_line);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        uint64_t c = l[i].count; /* two stacks may read the same once cleaned */
        while (i + 1 < n && strcmp(l[i].text, l[i + 1].text) == 0)
            c += l[++i].count;
        strbuf_addf(out, "%s %llu\n", l[i].text, (unsigned long long)c);
    }
    for (uint32_t i = 0; i < n; i++)
        free(l[i].text);
    free(l);
    free(sc);
    return rc < 0 ? rc : strbuf_failed(out) ? -ENOMEM : 0;
}

int py_view_json(const struct py_view *v, const char *run_id, const struct py_view_filter *f,
                 struct strbuf *out)
{
    struct json_writer jw;
    jw_init(&jw, out);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run", run_id);
    jw_kv_uint(&jw, "samples", v->selected);
    jw_kv_int(&jw, "interval_ns", v->interval_ns);
    jw_key(&jw, "filters");
    jw_object_begin(&jw);
    jw_kv_str_or_null(&jw, "role", f->role);
    jw_kv_str_or_null(&jw, "phase", f->phase >= 0 ? py_phase_names[f->phase] : NULL);
    jw_key(&jw, "steps");
    if (f->step_from || f->step_to) {
        jw_array_begin(&jw);
        jw_uint(&jw, f->step_from);
        jw_uint(&jw, f->step_to);
        jw_end(&jw);
    } else {
        jw_null(&jw);
    }
    jw_kv_bool(&jw, "idle", f->idle);
    jw_end(&jw);
    jw_key(&jw, "frames");
    jw_array_begin(&jw);
    for (uint32_t i = 0; i < v->nframes; i++) {
        jw_array_begin(&jw);
        jw_str(&jw, v->frames[i].func);
        jw_str(&jw, v->frames[i].file);
        jw_uint(&jw, v->frames[i].line);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_key(&jw, "stacks");
    jw_array_begin(&jw);
    for (uint32_t s = 0; s < v->nstacks; s++) {
        jw_array_begin(&jw);
        for (uint32_t d = 0; d < v->stack_depth[s]; d++)
            jw_uint(&jw, v->stack_frames[v->stack_off[s] + d]);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_key(&jw, "roles");
    jw_array_begin(&jw);
    for (uint32_t i = 0; i < v->nroles; i++)
        jw_str(&jw, v->roles[i]);
    jw_end(&jw);
    jw_key(&jw, "phases");
    jw_array_begin(&jw);
    for (int p = 0; p < PY_PHASE_COUNT; p++)
        jw_str(&jw, py_phase_names[p]);
    jw_end(&jw);
    jw_key(&jw, "states");
    jw_array_begin(&jw);
    for (int s = 0; s < PY_STATES; s++)
        jw_str(&jw, py_state_names[s]);
    jw_end(&jw);
    jw_key(&jw, "counts");
    jw_array_begin(&jw);
    for (uint32_t i = 0; i < v->ncounts; i++) {
        const struct py_view_count *c = &v->counts[i];
        jw_array_begin(&jw);
        jw_uint(&jw, c->stack);
        jw_uint(&jw, c->role);
        jw_uint(&jw, c->phase);
        jw_uint(&jw, c->state);
        jw_uint(&jw, c->count);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_end(&jw);
    return jw_failed(&jw) ? -ENOMEM : 0;
}

/* ---- loading -------------------------------------------------------------- */

struct block_ctx {
    struct py_profile *p;
    uint64_t *bad;
    struct strbuf why;
};

static int load_block(const struct py_block_record *b, void *arg)
{
    struct block_ctx *c = arg;
    strbuf_reset(&c->why);
    int rc = py_profile_load(c->p, b->kind, b->data, b->len, &c->why);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        (*c->bad)++; /* a garbled block loses its own samples only */
    return 0;
}

static int count_notes(const struct run_text_record *t, void *arg)
{
    size_t n = strlen(PY_NOTES_TEXT);
    if (strncmp(t->kind, PY_NOTES_TEXT, n) != 0 || (t->kind[n] && t->kind[n] != '@'))
        return 0;
    uint64_t *notes = arg;
    for (size_t i = 0; i < t->len; i++)
        *notes += t->data[i] == '\n' || (i + 1 == t->len && t->data[i] != '\n');
    return 0;
}

static int load_profile(struct store *s, const char *run_id, struct py_run *pr, uint32_t i,
                        int64_t base)
{
    py_profile_init(&pr->profs[i]);
    pr->src[i] = (struct py_source){&pr->profs[i], base};
    pr->nprofs = i + 1;
    if (!s->ops->py_blocks_query) /* a store without Python samples */
        return 0;
    struct block_ctx c = {&pr->profs[i], &pr->bad_blocks, {0}};
    strbuf_init(&c.why);
    int rc = s->ops->py_blocks_query(s, run_id, INT64_MIN, INT64_MAX, load_block, &c);
    strbuf_release(&c.why);
    return rc;
}

int py_run_load(struct store *s, const struct run_record *r, int events, struct py_run *out,
                struct strbuf *err)
{
    memset(out, 0, sizeof(*out));
    struct run_list nodes = {0};
    int rc = run_record_is_job(r) ? store_job_nodes(s, r->id, &nodes) : 0;
    uint32_t n = nodes.n ? nodes.n : 1;
    if (rc == 0 && (!(out->profs = calloc(n, sizeof(*out->profs))) ||
                    !(out->src = calloc(n, sizeof(*out->src)))))
        rc = -ENOMEM;
    if (rc == 0 && !nodes.n)
        rc = load_profile(s, r->id, out, 0, 0);
    for (uint32_t i = 0; i < nodes.n && rc == 0; i++)
        rc = load_profile(s, nodes.items[i].id, out, i, (int64_t)i << JOB_PID_SHIFT);
    run_list_release(&nodes);
    if (rc == 0)
        rc = s->ops->run_texts_query(s, r->id, count_notes, &out->notes);
    if (rc < 0) {
        strbuf_addf(err, "cannot read the Python samples of run %s: %s", r->id,
                    rc == -ENOMEM ? "out of memory" : s->err.buf);
        return rc;
    }
    if (events && (rc = run_events_load(s, r->id, &out->ev)) < 0)
        strbuf_addf(err, "cannot read the events of run %s: %s", r->id,
                    rc == -ENOMEM ? "out of memory" : s->err.buf);
    return rc;
}

void py_run_release(struct py_run *pr)
{
    for (uint32_t i = 0; i < pr->nprofs; i++)
        py_profile_release(&pr->profs[i]);
    free(pr->profs);
    free(pr->src);
    run_events_release(&pr->ev);
    memset(pr, 0, sizeof(*pr));
}

uint64_t py_run_samples(const struct py_run *pr)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < pr->nprofs; i++)
        n += pr->profs[i].nsamples;
    return n;
}
