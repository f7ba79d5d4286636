#include "analyze/steps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/array.h"
#include "common/json_writer.h"
#include "common/strbuf.h"
#include "common/strlist.h"
const char *const phase_names[PHASE_COUNT] = {"data",      "forward", "backward",
                                              "optimizer", "comm",    "other"};

const char *const step_mode_names[STEP_MODE_COUNT] = {"train", "eval", "predict", "global"};
const char *const step_span_names[STEP_MODE_COUNT] = {"step", "step:eval", "step:predict",
                                                      "step:global"};

int steps_mode_of(const char *name)
{
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        if (strcmp(name, step_span_names[m]) == 0)
            return m;
    return -1;
}

int step_mode_is_training(int mode)
{
    return mode == STEP_MODE_TRAIN || mode == STEP_MODE_GLOBAL;
}

int step_mode_parse(const char *s)
{
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        if (strcasecmp(s, step_mode_names[m]) == 0)
            return m;
    return -1;
}

/* ---- loading -------------------------------------------------------------- */

struct load_ctx {
    struct run_events *e;
    struct event_decoder dec;
    struct event *scratch;
    uint32_t scratch_cap;
    int failed;
};

static int add_name(int64_t id, const char *name, void *arg)
{
    struct run_events *e = ((struct load_ctx *)arg)->e;
    if (id <= 0 || id > (1 << 24))
        return 0;
    uint32_t need = (uint32_t)id;
    if (need > e->nnames) {
        char **p = realloc(e->names, need * sizeof(*p));
        if (!p)
            return -ENOMEM;
        memset(p + e->nnames, 0, (need - e->nnames) * sizeof(*p));
        e->names = p;
        e->nnames = need;
    }
    free(e->names[id - 1]);
    e->names[id - 1] = strdup(name);
    return 0;
}

static int add_proc(const struct process_record *p, void *arg)
{
    struct run_events *e = ((struct load_ctx *)arg)->e;
    if (array_grow((void **)&e->procs, &e->procs_cap, e->nprocs + 1, sizeof(*e->procs), 16) < 0)
        return -ENOMEM;
    struct proc_info *q = &e->procs[e->nprocs++];
    memset(q, 0, sizeof(*q));
    q->pid = p->pid;
    q->ppid = p->ppid;
    snprintf(q->comm, sizeof(q->comm), "%s", p->comm ? p->comm : "");
    snprintf(q->role, sizeof(q->role), "%s", p->role ? p->role : "");
    q->rank = p->rank;
    q->local_rank = p->local_rank;
    q->world_size = p->world_size;
    q->worker_id = p->worker_id;
    return 0;
}

static struct thread_events *find_thread(struct run_events *e, int64_t pid, int64_t tid)
{
    for (uint32_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].pid == pid && e->threads[i].tid == tid)
            return &e->threads[i];
    if (array_grow((void **)&e->threads, &e->threads_cap, e->nthreads + 1, sizeof(*e->threads),
                   16) < 0)
        return NULL;
    struct thread_events *t = &e->threads[e->nthreads++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    t->tid = tid;
    return t;
}

static int add_block(const struct event_block_record *b, void *arg)
{
    struct load_ctx *c = arg;
    struct run_events *e = c->e;
    e->bytes += (int64_t)b->len;
    uint32_t n;
    if (event_block_peek_count(b->data, b->len, &n) < 0) {
        e->bad_blocks++;
        return 0;
    }
    struct thread_events *t = find_thread(e, b->pid, b->tid);
    if (!t)
        return -ENOMEM;
    if (array_grow((void **)&t->ev, &t->cap, t->n + n, sizeof(*t->ev), 1024) < 0)
        return -ENOMEM;
    uint32_t got = 0;
    if (event_block_decode(&c->dec, b->data, b->len, t->ev + t->n, n, &got) < 0) {
        e->bad_blocks++; /* a damaged block loses its own events only */
        return 0;
    }
    t->n += got;
    e->events += got;
    return 0;
}

int run_events_load(struct store *s, const char *run_id, struct run_events *out)
{
    memset(out, 0, sizeof(*out));
    struct load_ctx c = {.e = out};
    if (event_decoder_init(&c.dec) < 0)
        return -ENOMEM;
    int rc = s->ops->event_names_query(s, run_id, add_name, &c);
    if (rc == 0)
        rc = s->ops->processes_query(s, run_id, add_proc, &c);
    if (rc == 0)
        rc = s->ops->event_blocks_query(s, run_id, INT64_MIN, INT64_MAX, add_block, &c);
    event_decoder_release(&c.dec);
    if (rc < 0)
        run_events_release(out);
    return rc;
}

void run_events_release(struct run_events *e)
{
    for (uint32_t i = 0; i < e->nnames; i++)
        free(e->names[i]);
    free(e->names);
    for (uint32_t i = 0; i < e->nthreads; i++)
        free(e->threads[i].ev);
    free(e->threads);
    free(e->procs);
    memset(e, 0, sizeof(*e));
}

const char *proc_import_node(const char *comm, const char *nodes, size_t *comm_len)
{
    if (!comm || !nodes || !strchr(nodes, ','))
        return NULL;
    const char *at = strrchr(comm, '@');
    if (at && strlist_has(nodes, at + 1, strlen(at + 1))) {
        if (comm_len)
            *comm_len = (size_t)(at - comm);
        return at + 1;
    }
    if (!strlist_has(nodes, comm, strlen(comm)))
        return NULL;
    if (comm_len) /* a process with no name of its own */
        *comm_len = 0;
    return comm;
}

const char *run_events_name(const struct run_events *e, uint32_t id)
{
    return id && id <= e->nnames && e->names[id - 1] ? e->names[id - 1] : "";
}

/* ---- steps and phases ----------------------------------------------------- */

int steps_phase_of(const char *name)
{
    if (strncmp(name, "comm:", 5) == 0)
        return PHASE_COMM;
    for (int p = 0; p < PHASE_OTHER; p++)
        if (p != PHASE_COMM && strcmp(name, phase_names[p]) == 0)
            return p;
    return -1;
}

int steps_cmp_span(const void *a, const void *b)
{
    const struct phase_span *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end < y->end) - (x->end > y->end); /* the outer (longer) first */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

void steps_phase_times(struct phase_span *ph, uint32_t n, int64_t s0, int64_t s1, double *out)
{
    uint32_t stack[64];
    uint32_t depth = 0;
    for (uint32_t i = 0; i < n; i++) {
        ph[i].child_ns = 0;
        while (depth && ph[stack[depth - 1]].end <= ph[i].start)
            depth--;
        if (depth) {
            /* the part of the child inside both its parent and the step: a
             * child running past the step's end takes from its parent only
             * what the parent counts */
            struct phase_span *parent = &ph[stack[depth - 1]];
            int64_t inside = min64(min64(ph[i].end, parent->end), s1) - max64(ph[i].start, s0);
            parent->child_ns += inside > 0 ? inside : 0;
        }
        if (depth < 64)
            stack[depth++] = i;
    }
    double covered = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t own = min64(ph[i].end, s1) - max64(ph[i].start, s0);
        double excl = (double)(own > 0 ? own : 0) - (double)ph[i].child_ns;
        if (excl < 0)
            excl = 0;
        out[ph[i].phase] += excl;
        covered += excl;
    }
    double other = (double)(s1 - s0) - covered;
    out[PHASE_OTHER] += other > 0 ? other : 0;
}

struct group_acc {
    int64_t pid;
    double *durs;
    uint32_t n, cap;
    double phase_ns[PHASE_COUNT];
    double comm_all;
    uint64_t backward_passes;
    struct phase_span *windows; /* the process's steps, every thread: comm is counted inside them */
    uint32_t nwin, wcap;
};

static struct group_acc *group_for(struct group_acc **gs, uint32_t *n, uint32_t *cap, int64_t pid)
{
    for (uint32_t i = 0; i < *n; i++)
        if ((*gs)[i].pid == pid)
            return &(*gs)[i];
    if (array_grow((void **)gs, cap, *n + 1, sizeof(**gs), 8) < 0)
        return NULL;
    struct group_acc *g = &(*gs)[(*n)++];
    memset(g, 0, sizeof(*g));
    g->pid = pid;
    return g;
}

/* What a name is to the phase arithmetic: a step of the modes walked, a
 * phase (enum phase), or nothing (SPAN_NONE); looked up once a name, not
 * once an event. A step span of another mode is nothing. */
enum { SPAN_NONE = -2, SPAN_STEP = -1 };
static int8_t *name_kinds(const struct run_events *e, unsigned modes)
{
    int8_t *k = malloc(e->nnames + 1);
    if (!k)
        return NULL;
    for (uint32_t id = 0; id <= e->nnames; id++) {
        const char *name = run_events_name(e, id);
        int m = steps_mode_of(name);
        int p = steps_phase_of(name);
        int kind = SPAN_NONE;
        if (m >= 0)
            kind = (modes >> m) & 1u ? SPAN_STEP : SPAN_NONE;
        else if (p >= 0)
            kind = p;
        k[id] = (int8_t)kind;
    }
    return k;
}

static int span_kind(const int8_t *kinds, uint32_t nnames, const struct event *ev)
{
    if (ev->kind != STROBE_EV_COMPLETE || ev->value < 0 || ev->name > nnames)
        return SPAN_NONE;
    return kinds[ev->name];
}

/* Backward passes among ph[0..n) (sorted with steps_cmp_span) that begin in
 * [s0, s1): backward spans no other backward span holds. */
static uint64_t backward_passes(const struct phase_span *ph, uint32_t n, int64_t s0, int64_t s1)
{
    uint64_t passes = 0;
    int64_t reach = INT64_MIN; /* the end of the outermost backward so far */
    for (uint32_t i = 0; i < n; i++) {
        if (ph[i].phase != PHASE_BACKWARD || ph[i].start < reach)
            continue;
        reach = ph[i].end;
        passes += ph[i].start >= s0 && ph[i].start < s1;
    }
    return passes;
}

int steps_walk_thread_modes(const struct run_events *e, const struct thread_events *t,
                            unsigned modes, steps_sink_fn *fn, void *arg)
{
    /* counted first, so that a thread of a million steps and four million
     * other events takes 32 B a step and a phase, not 32 B an event twice */
    int8_t *kinds = name_kinds(e, modes);
    if (!kinds)
        return -ENOMEM;
    uint32_t nsteps = 0, nph = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        int p = span_kind(kinds, e->nnames, &t->ev[i]);
        nsteps += p == SPAN_STEP;
        nph += p >= 0;
    }
    struct phase_span *steps = malloc((nsteps + 1) * sizeof(*steps));
    struct phase_span *ph = malloc((nph + 1) * sizeof(*ph));
    if (!steps || !ph) {
        free(steps);
        free(ph);
        free(kinds);
        return -ENOMEM;
    }
    nsteps = nph = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct event *ev = &t->ev[i];
        int p = span_kind(kinds, e->nnames, ev);
        struct phase_span sp = {ev->ts_ns, ev->ts_ns + ev->value, p >= 0 ? p : -1, 0};
        if (p == SPAN_STEP)
            steps[nsteps++] = sp;
        else if (p >= 0)
            ph[nph++] = sp;
    }
    free(kinds);
    array_sort(steps, nsteps, sizeof(*steps), steps_cmp_span);
    array_sort(ph, nph, sizeof(*ph), steps_cmp_span);
    int rc = 0;
    uint32_t first = 0;
    for (uint32_t i = 0; i < nsteps && rc == 0; i++) {
        while (first < nph && ph[first].start < steps[i].start)
            first++;
        /* spans that began before the step and run into it count for their
         * part inside (steps_phase_times clips): a few back are enough, phases on
         * a thread follow each other */
        uint32_t from = first;
        while (from > 0 && first - from < 64 && ph[from - 1].end > steps[i].start)
            from--;
        uint32_t last = first;
        while (last < nph && ph[last].start < steps[i].end)
            last++;
        struct step_sink out = {0};
        rc = fn(arg, &steps[i], &out);
        if (rc < 0)
            break;
        if (out.backward_passes)
            *out.backward_passes +=
                backward_passes(ph + from, last - from, steps[i].start, steps[i].end);
        steps_phase_times(ph + from, last - from, steps[i].start, steps[i].end, out.phase_ns);
        first = last;
    }
    free(steps);
    free(ph);
    return rc;
}

struct row_adapter {
    steps_row_fn *row;
    void *arg;
};

static int row_sink(void *arg, const struct phase_span *step, struct step_sink *out)
{
    struct row_adapter *a = arg;
    out->phase_ns = a->row(a->arg, step);
    return out->phase_ns ? 0 : -ENOMEM;
}

int steps_walk_thread(const struct run_events *e, const struct thread_events *t, steps_row_fn *row,
                      void *arg)
{
    struct row_adapter a = {row, arg};
    return steps_walk_thread_modes(e, t, STEP_MODES_TRAINING, row_sink, &a);
}

/* A step of g's process: its duration and window kept, its phases and
 * backward passes summed. */
static int group_row(void *arg, const struct phase_span *step, struct step_sink *out)
{
    struct group_acc *g = arg;
    if (array_grow((void **)&g->windows, &g->wcap, g->nwin + 1, sizeof(*g->windows), 256) < 0 ||
        array_grow((void **)&g->durs, &g->cap, g->n + 1, sizeof(*g->durs), 256) < 0)
        return -ENOMEM;
    g->windows[g->nwin++] = *step;
    g->durs[g->n++] = (double)(step->end - step->start);
    out->phase_ns = g->phase_ns;
    out->backward_passes = &g->backward_passes;
    return 0;
}

/* The time [start, end) spans cover together, each instant once; sorts them. */
static double union_ns(struct phase_span *sp, uint32_t n)
{
    array_sort(sp, n, sizeof(*sp), steps_cmp_span);
    double sum = 0;
    int64_t reach = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        int64_t a = max64(sp[i].start, reach);
        if (sp[i].end > a)
            sum += (double)(sp[i].end - a);
        reach = max64(reach, sp[i].end);
    }
    return sum;
}

/* comm:* spans of every thread of g's process, counted where they overlap
 * its steps: a final barrier or a collective before the first step is no
 * part of step time. Collectives in flight together (DDP's bucket
 * all-reduces, each a span from launch to completion, on other threads)
 * count once: the union of the spans. */
static int comm_in_steps(const struct run_events *e, struct group_acc *g)
{
    if (!g->nwin)
        return 0;
    array_sort(g->windows, g->nwin, sizeof(*g->windows), steps_cmp_span);
    struct phase_span *parts = NULL;
    uint32_t nparts = 0, cap = 0;
    for (uint32_t t = 0; t < e->nthreads; t++) {
        const struct thread_events *th = &e->threads[t];
        if (th->pid != g->pid)
            continue;
        for (uint32_t i = 0; i < th->n; i++) {
            const struct event *ev = &th->ev[i];
            if (ev->kind != STROBE_EV_COMPLETE || ev->value <= 0 ||
                strncmp(run_events_name(e, ev->name), "comm:", 5) != 0)
                continue;
            int64_t s0 = ev->ts_ns, s1 = ev->ts_ns + ev->value;
            uint32_t lo = 0, hi = g->nwin; /* the first window ending after s0 */
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (g->windows[mid].end <= s0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (uint32_t w = lo; w < g->nwin && g->windows[w].start < s1; w++) {
                int64_t a = max64(s0, g->windows[w].start), b = min64(s1, g->windows[w].end);
                if (b <= a)
                    continue;
                if (array_grow((void **)&parts, &cap, nparts + 1, sizeof(*parts), 256) < 0) {
                    free(parts);
                    return -ENOMEM;
                }
                parts[nparts++] = (struct phase_span){a, b, PHASE_COMM, 0};
            }
        }
    }
    g->comm_all = union_ns(parts, nparts);
    free(parts);
    return 0;
}

static double percentile(const double *sorted, uint32_t n, double q)
{
    if (!n)
        return 0;
    double pos = q * (double)(n - 1);
    uint32_t lo = (uint32_t)pos;
    uint32_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - (double)lo);
}

static void duration_stats_of(double *d, uint32_t n, struct duration_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!n)
        return;
    qsort(d, n, sizeof(*d), cmp_double);
    st->count = n;
    for (uint32_t i = 0; i < n; i++)
        st->total_ns += d[i];
    st->mean_ns = st->total_ns / n;
    st->min_ns = d[0];
    st->max_ns = d[n - 1];
    st->p50_ns = percentile(d, n, 0.50);
    st->p95_ns = percentile(d, n, 0.95);
}

static const struct proc_info *proc_of(const struct run_events *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return &e->procs[i];
    return NULL;
}

static int cmp_group(const void *a, const void *b)
{
    const struct step_group *x = a, *y = b;
    /* ranks first in rank order, then the rest by pid */
    uint64_t rx = (uint64_t)x->rank, ry = (uint64_t)y->rank; /* -1 sorts last */
    if (rx != ry)
        return (rx > ry) - (rx < ry);
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static void count_workers(const struct run_events *e, struct step_analysis *a)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].worker_id >= 0)
            a->workers++;
    for (uint32_t i = 0; i < e->nthreads; i++)
        for (uint32_t j = 0; j < e->threads[i].n; j++) {
            const struct event *ev = &e->threads[i].ev[j];
            if (ev->kind == STROBE_EV_COMPLETE &&
                strcmp(run_events_name(e, ev->name), "dataloader.worker") == 0)
                a->worker_busy_ns += (double)ev->value;
        }
}

/* The steps of the modes in the set, grouped by process, into out. */
static int analyze_modes(const struct run_events *e, unsigned modes, struct step_groups *out)
{
    memset(out, 0, sizeof(*out));
    struct group_acc *gs = NULL;
    uint32_t n = 0, cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < e->nthreads && rc == 0; i++) {
        struct group_acc *g = group_for(&gs, &n, &cap, e->threads[i].pid);
        rc = g ? steps_walk_thread_modes(e, &e->threads[i], modes, group_row, g) : -ENOMEM;
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = comm_in_steps(e, &gs[i]);
    if (rc == 0 && n && !(out->groups = calloc(n, sizeof(*out->groups))))
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (!gs[i].n)
            continue; /* no steps in this process (a data-loader worker) */
        struct step_group *g = &out->groups[out->ngroups++];
        const struct proc_info *p = proc_of(e, gs[i].pid);
        g->pid = gs[i].pid;
        g->rank = p ? p->rank : -1;
        duration_stats_of(gs[i].durs, gs[i].n, &g->steps);
        memcpy(g->phase_ns, gs[i].phase_ns, sizeof(g->phase_ns));
        g->comm_all_threads_ns = gs[i].comm_all;
        g->backward_passes = gs[i].backward_passes;
    }
    for (uint32_t i = 0; i < n; i++) {
        free(gs[i].durs);
        free(gs[i].windows);
    }
    free(gs);
    if (rc < 0)
        return rc;
    if (out->ngroups) /* groups is NULL when there are none */
        qsort(out->groups, out->ngroups, sizeof(*out->groups), cmp_group);
    for (uint32_t i = 1; i < out->ngroups; i++)
        if (out->groups[out->primary].rank != 0 &&
            (out->groups[i].rank == 0 ||
             out->groups[i].steps.count > out->groups[out->primary].steps.count))
            out->primary = i;
    return 0;
}

int step_analysis_run(const struct run_events *e, struct step_analysis *out)
{
    memset(out, 0, sizeof(*out));
    struct step_groups train;
    int rc = analyze_modes(e, STEP_MODES_TRAINING, &train);
    out->groups = train.groups;
    out->ngroups = train.ngroups;
    out->primary = train.primary;
    if (rc == 0)
        rc = analyze_modes(e, STEP_MODES_EVAL, &out->eval);
    if (rc < 0) {
        step_analysis_release(out);
        return rc;
    }
    count_workers(e, out);
    return 0;
}

void step_analysis_release(struct step_analysis *a)
{
    free(a->groups);
    free(a->eval.groups);
    memset(a, 0, sizeof(*a));
}

double step_group_share(const struct step_group *g, enum phase p)
{
    return g->steps.total_ns > 0 ? g->phase_ns[p] / g->steps.total_ns : 0.0;
}

double step_group_backward_per_step(const struct step_group *g)
{
    return g->steps.count ? (double)g->backward_passes / (double)g->steps.count : 0.0;
}

void duration_stats_json(struct json_writer *jw, const struct duration_stats *s)
{
    jw_kv_uint(jw, "count", s->count);
    jw_kv_num(jw, "mean_ns", s->mean_ns);
    jw_kv_num(jw, "p50_ns", s->p50_ns);
    jw_kv_num(jw, "p95_ns", s->p95_ns);
    jw_kv_num(jw, "max_ns", s->max_ns);
    jw_kv_num(jw, "min_ns", s->min_ns);
    jw_kv_num(jw, "total_ns", s->total_ns);
}
