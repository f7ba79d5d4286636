/*
 * The timeline model of strobe trace (trace.h): processes, threads and their
 * slices, counters and findings of one run, cut to a window, laid out in the
 * order the viewers show them. And the sink both writers write through.
 */
#include "render/trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/array.h"
#include "common/strlist.h"

const char *const trace_cat_names[TRACE_CAT_COUNT] = {
    "step", "phase", "comm", "operator", "dataloader", "span", "instant", "finding", "python"};

/* Made-up pids of the metrics processes: far above any real pid (Linux's
 * limit is 2^22) and above the pids an import moves up by 10^9. */
#define METRICS_PID_BASE INT64_C(2100000000)

/* ---- strings -------------------------------------------------------------- */

/* A heap copy of s as valid UTF-8, or NULL. */
static char *utf8_dup(const char *s)
{
    struct strbuf b;
    strbuf_init(&b);
    if (strbuf_add_utf8(&b, s) < 0) {
        strbuf_release(&b);
        return NULL;
    }
    return strbuf_detach(&b);
}

const char *trace_name(const struct trace *t, uint32_t id)
{
    return run_events_name(&t->ev, id);
}

static uint8_t cat_of(const char *name)
{
    if (steps_mode_of(name) >= 0)
        return TRACE_CAT_STEP;
    if (strncmp(name, "comm:", 5) == 0)
        return TRACE_CAT_COMM;
    if (steps_phase_of(name) >= 0)
        return TRACE_CAT_PHASE;
    if (strncmp(name, "op:", 3) == 0)
        return TRACE_CAT_OPERATOR;
    if (strncmp(name, "dataloader.", 11) == 0)
        return TRACE_CAT_DATALOADER;
    return TRACE_CAT_SPAN;
}

/* Every event name made valid UTF-8 (the writers copy them as they are),
 * and its category looked up once. */
static int prepare_names(struct trace *t)
{
    /* one more name for the step boundaries (STEP events), which have none */
    char **p = realloc(t->ev.names, (t->ev.nnames + 1) * sizeof(*p));
    if (!p)
        return -ENOMEM;
    t->ev.names = p;
    if (!(p[t->ev.nnames] = strdup("step begins")))
        return -ENOMEM;
    t->step_name = ++t->ev.nnames;
    t->name_cat = calloc(t->ev.nnames + 1, 1);
    if (!t->name_cat)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->ev.nnames; i++) {
        if (!t->ev.names[i])
            continue;
        char *clean = utf8_dup(t->ev.names[i]);
        if (!clean)
            return -ENOMEM;
        free(t->ev.names[i]);
        t->ev.names[i] = clean;
        t->name_cat[i + 1] = cat_of(clean);
    }
    return 0;
}

/* ---- nodes and processes -------------------------------------------------- */

/* The value of key in canonical labels "a=1,b=2" into out, cut to fit, or 0. */
static int label_get(const char *labels, const char *key, char *out, size_t cap)
{
    size_t vlen;
    const char *v = strlist_value(labels, key, &vlen);
    if (!v)
        return 0;
    if (vlen >= cap)
        vlen = cap - 1;
    memcpy(out, v, vlen);
    out[vlen] = '\0';
    return 1;
}

static int node_find(const struct trace *t, const char *name)
{
    for (uint32_t i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i], name) == 0)
            return (int)i;
    return -1;
}

static int node_add(struct trace *t, const char *name)
{
    if (node_find(t, name) >= 0)
        return 0;
    char **p = realloc(t->nodes, (t->nnodes + 1) * sizeof(*p));
    if (!p)
        return -ENOMEM;
    t->nodes = p;
    if (!(t->nodes[t->nnodes] = utf8_dup(name)))
        return -ENOMEM;
    t->nnodes++;
    return 0;
}

static int collect_node(const struct series_record *sr, void *arg)
{
    char node[128];
    if (label_get(sr->labels, "node", node, sizeof(node)))
        return node_add(arg, node);
    return 0;
}

static int add_host_node(const char *item, size_t len, void *arg)
{
    char *id = strndup(item, len);
    int rc = id ? node_add(arg, id) : -ENOMEM;
    free(id);
    return rc;
}

/* The nodes of an import of several that have no metrics: its host is
 * their ids, comma-separated ("algo-1,algo-2"). */
static int host_nodes(struct trace *t, const char *host)
{
    if (!host || !strchr(host, ','))
        return 0;
    return strlist_each(host, add_host_node, t);
}

/* The node of a process: with several nodes, imports end its comm in @node,
 * or make it the node alone when the process has no name. */
static uint32_t proc_node(const struct trace *t, const char *comm)
{
    const char *node = t->nnodes < 2 ? NULL : proc_import_node(comm, t->run->host, NULL);
    int n = node ? node_find(t, node) : 0;
    return n > 0 ? (uint32_t)n : 0;
}

static const struct proc_info *proc_info_of(const struct run_events *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return &e->procs[i];
    return NULL;
}

static int proc_add(struct trace *t, int64_t pid, const char *name, uint32_t node, int64_t sort,
                    int metrics)
{
    if (array_grow((void **)&t->procs, &t->procs_cap, t->nprocs + 1, sizeof(*t->procs), 16) < 0)
        return -ENOMEM;
    struct trace_proc *p = &t->procs[t->nprocs];
    memset(p, 0, sizeof(*p));
    if (!(p->name = utf8_dup(name)))
        return -ENOMEM;
    p->pid = pid;
    p->node = node;
    p->sort = sort;
    p->metrics = metrics;
    t->nprocs++;
    return 0;
}

/* "rank 1 (python3)", "dataloader worker 0 (pt_data_worker)", with the node
 * first when there are several; and where it sorts inside its node. */
int trace_proc_for_pid(struct trace *t, int64_t pid, uint32_t *out)
{
    for (uint32_t i = 0; i < t->nprocs; i++)
        if (!t->procs[i].metrics && t->procs[i].pid == pid) {
            *out = i;
            return 0;
        }
    const struct proc_info *pi = proc_info_of(&t->ev, pid);
    const char *comm = pi && pi->comm[0] ? pi->comm : NULL;
    uint32_t node = proc_node(t, comm);
    char role[64];
    int64_t sort;
    if (pi && pi->rank >= 0) {
        snprintf(role, sizeof(role), "rank %lld", (long long)pi->rank);
        sort = 10 + pi->rank;
    } else if (pi && (pi->worker_id >= 0 || strcmp(pi->role, "dataloader") == 0)) {
        if (pi->worker_id >= 0)
            snprintf(role, sizeof(role), "dataloader worker %lld", (long long)pi->worker_id);
        else
            snprintf(role, sizeof(role), "dataloader worker");
        sort = 100000 + (pi->worker_id >= 0 ? pi->worker_id : 0);
    } else if (pi && strcmp(pi->role, "main") == 0) {
        snprintf(role, sizeof(role), "main");
        sort = 1;
    } else {
        snprintf(role, sizeof(role), "process");
        sort = 200000;
    }
    struct strbuf name;
    strbuf_init(&name);
    if (t->nnodes > 1)
        strbuf_addf(&name, "%s ", t->nodes[node]);
    strbuf_adds(&name, role);
    if (comm)
        strbuf_addf(&name, " (%s)", comm);
    int rc = proc_add(t, pid, name.buf, node, (int64_t)node * 1000000 + sort, 0);
    strbuf_release(&name);
    *out = t->nprocs - 1;
    return rc;
}

/* One metrics process per node, first in its node. */
static int add_metrics_procs(struct trace *t)
{
    for (uint32_t n = 0; n < t->nnodes; n++) {
        struct strbuf name;
        strbuf_init(&name);
        strbuf_addf(&name, "%s metrics", t->nnodes > 1 ? t->nodes[n] : "run");
        int rc = proc_add(t, METRICS_PID_BASE + n, name.buf, n, (int64_t)n * 1000000, 1);
        strbuf_release(&name);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- the window ----------------------------------------------------------- */

/* Whether step span e is one of --mode's (by default the training steps,
 * train and global, as the views pool them: the step numbers of another mode
 * count from 0 again, so step 3 of an evaluation is not the third
 * training step). */
static int step_of_mode(const struct trace *t, const struct event *e, int mode)
{
    if (e->kind != STROBE_EV_COMPLETE || e->value < 0 ||
        t->name_cat[e->name <= t->ev.nnames ? e->name : 0] != TRACE_CAT_STEP)
        return 0;
    int m = steps_mode_of(trace_name(t, e->name));
    return mode < 0 ? m >= 0 && step_mode_is_training(m) : m == mode;
}

/* --steps A-B: from the earliest start of a step A of the mode (any
 * process) to the latest end of a step B. */
static int find_window(struct trace *t, const struct trace_options *opt, struct strbuf *err)
{
    t->from_ns = INT64_MIN;
    t->to_ns = INT64_MAX;
    if (!opt->step_from && !opt->step_to)
        return 0;
    int64_t from = INT64_MAX, to = INT64_MIN;
    for (uint32_t i = 0; i < t->ev.nthreads; i++) {
        const struct thread_events *th = &t->ev.threads[i];
        for (uint32_t j = 0; j < th->n; j++) {
            const struct event *e = &th->ev[j];
            if (!step_of_mode(t, e, opt->mode))
                continue;
            if (e->step == opt->step_from && e->ts_ns < from)
                from = e->ts_ns;
            if (e->step == opt->step_to && e->ts_ns + e->value > to)
                to = e->ts_ns + e->value;
        }
    }
    if (from == INT64_MAX || to == INT64_MIN || to < from) {
        strbuf_addf(err, "run %s has no step %u%s (%s steps)", t->run->id,
                    from == INT64_MAX ? opt->step_from : opt->step_to,
                    to < from && from != INT64_MAX && to != INT64_MIN ? " after its first" : "",
                    opt->mode < 0 ? "training" : step_mode_names[opt->mode]);
        return -ENOENT;
    }
    t->from_ns = from;
    t->to_ns = to;
    return 0;
}

/* A span [s, e] is in the window when it overlaps it; one of no length when
 * it lies inside, ends included. */
static int span_in(const struct trace *t, int64_t s, int64_t e)
{
    if (s == e)
        return s >= t->from_ns && s <= t->to_ns;
    return s < t->to_ns && e > t->from_ns;
}

static int point_in(const struct trace *t, int64_t ts)
{
    return ts >= t->from_ns && ts <= t->to_ns;
}

/* ---- threads -------------------------------------------------------------- */

static int cmp_slice(const void *a, const void *b)
{
    const struct trace_slice *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
    return (x->end_ns < y->end_ns) - (x->end_ns > y->end_ns); /* the outer first */
}

static int cmp_instant(const void *a, const void *b)
{
    const struct trace_instant *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The latest time any event of the run reaches: where open spans end. */
static int64_t events_end(const struct trace *t)
{
    int64_t end = t->run->end_ns ? t->run->end_ns : t->run->last_ns;
    for (uint32_t i = 0; i < t->ev.nthreads; i++)
        for (uint32_t j = 0; j < t->ev.threads[i].n; j++) {
            const struct event *e = &t->ev.threads[i].ev[j];
            int64_t x = e->ts_ns + (e->kind == STROBE_EV_COMPLETE && e->value > 0 ? e->value : 0);
            if (x > end)
                end = x;
        }
    return end;
}

static int add_slice(struct trace_thread *th, struct trace_slice sl)
{
    if (array_grow((void **)&th->slices, &th->slices_cap, th->nslices + 1, sizeof(*th->slices),
                   256) < 0)
        return -ENOMEM;
    th->slices[th->nslices++] = sl;
    return 0;
}

static int add_instant(struct trace_thread *th, struct trace_instant in)
{
    if (array_grow((void **)&th->instants, &th->instants_cap, th->ninstants + 1,
                   sizeof(*th->instants), 64) < 0)
        return -ENOMEM;
    th->instants[th->ninstants++] = in;
    return 0;
}

/* One stored event into the thread's slices or instants, when it is in the
 * window. Counters are left out: their values are the app.* series. */
static int add_event(struct trace *t, struct trace_thread *th, const struct event *e)
{
    uint8_t cat = e->name <= t->ev.nnames ? t->name_cat[e->name] : TRACE_CAT_SPAN;
    switch (e->kind) {
    case STROBE_EV_COMPLETE: {
        int64_t end = e->ts_ns + (e->value > 0 ? e->value : 0);
        if (!span_in(t, e->ts_ns, end))
            return 0;
        t->slices++;
        return add_slice(th, (struct trace_slice){e->ts_ns, end, e->name, e->step, cat, 0, 0});
    }
    case STROBE_EV_SPAN_BEGIN: /* never ended: runs to the end of the run */
        if (!span_in(t, e->ts_ns, t->end_ns))
            return 0;
        t->slices++;
        return add_slice(th,
                         (struct trace_slice){e->ts_ns, t->end_ns, e->name, e->step, cat, 0, 1});
    case STROBE_EV_SPAN_END:
    case STROBE_EV_INSTANT:
    case STROBE_EV_STEP:
        if (!point_in(t, e->ts_ns))
            return 0;
        t->instants++;
        return add_instant(
            th, (struct trace_instant){
                    e->ts_ns, e->kind == STROBE_EV_STEP && !e->name ? t->step_name : e->name,
                    e->step, e->kind == STROBE_EV_STEP ? TRACE_CAT_STEP : TRACE_CAT_INSTANT,
                    e->kind == STROBE_EV_SPAN_END});
    case STROBE_EV_COUNTER: /* its values are the app.* series, drawn as counters */
        return 0;
    default:
        return 0;
    }
}

/* Lanes: each slice goes to the first lane where it nests properly inside
 * what is open there (begins after, ends before its parent). What the lanes
 * cannot hold is counted into t, for one warning. */
static void assign_lanes(struct trace *t, struct trace_thread *th)
{
    int64_t open[TRACE_LANES_MAX][TRACE_DEPTH_MAX]; /* ends of the slices open on each lane */
    uint32_t depth[TRACE_LANES_MAX] = {0};
    th->lanes = th->nslices ? 1 : 0;
    for (uint32_t i = 0; i < th->nslices; i++) {
        struct trace_slice *s = &th->slices[i];
        uint32_t l = 0;
        for (;; l++) {
            while (depth[l] && open[l][depth[l] - 1] <= s->start_ns)
                depth[l]--;
            if (l == TRACE_LANES_MAX - 1 || !depth[l] || open[l][depth[l] - 1] >= s->end_ns)
                break;
        }
        if (depth[l] && open[l][depth[l] - 1] < s->end_ns)
            t->crowded++; /* the last lane, and it does not nest there */
        s->lane = (uint8_t)l;
        if (l + 1 > th->lanes)
            th->lanes = (uint8_t)(l + 1);
        if (depth[l] < TRACE_DEPTH_MAX)
            open[l][depth[l]++] = s->end_ns;
        else
            t->too_deep++;
    }
}

static int build_threads(struct trace *t)
{
    if (t->ev.nthreads && !(t->threads = calloc(t->ev.nthreads, sizeof(*t->threads))))
        return -ENOMEM;
    for (uint32_t i = 0; i < t->ev.nthreads; i++) {
        struct thread_events *src = &t->ev.threads[i];
        struct trace_thread *th = &t->threads[t->nthreads++];
        th->pid = src->pid;
        th->tid = src->tid;
        if (src->tid == src->pid)
            snprintf(th->name, sizeof(th->name), "main thread");
        else
            snprintf(th->name, sizeof(th->name), "thread %lld", (long long)src->tid);
        int rc = trace_proc_for_pid(t, src->pid, &th->proc);
        for (uint32_t j = 0; j < src->n && rc == 0; j++)
            rc = add_event(t, th, &src->ev[j]);
        if (rc < 0)
            return rc;
        /* the decoded events are copied out: free them as we go, a long
         * run's events need not be held twice */
        free(src->ev);
        src->ev = NULL;
        src->n = src->cap = 0;
        array_sort(th->slices, th->nslices, sizeof(*th->slices), cmp_slice);
        array_sort(th->instants, th->ninstants, sizeof(*th->instants), cmp_instant);
        assign_lanes(t, th);
    }
    return 0;
}

/* ---- counters ------------------------------------------------------------- */

struct series_ctx {
    struct trace *t;
    int rc;
};

/* The process a series' track goes to: the one of its pid= label when that
 * process wrote events, else its node's metrics process. */
static uint32_t counter_proc(const struct trace *t, const char *labels)
{
    char buf[128];
    uint32_t node = 0;
    if (label_get(labels, "node", buf, sizeof(buf))) {
        int n = node_find(t, buf);
        node = n > 0 ? (uint32_t)n : 0;
    }
    if (label_get(labels, "pid", buf, sizeof(buf))) {
        int64_t pid = strtoll(buf, NULL, 10);
        for (uint32_t i = 0; i < t->nprocs; i++)
            if (!t->procs[i].metrics && t->procs[i].pid == pid && t->procs[i].node == node)
                return i;
    }
    for (uint32_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].metrics && t->procs[i].node == node)
            return i;
    return 0;
}

static int add_series(const struct series_record *sr, void *arg)
{
    struct series_ctx *c = arg;
    struct trace *t = c->t;
    if (array_grow((void **)&t->counters, &t->counters_cap, t->ncounters + 1, sizeof(*t->counters),
                   64) < 0) {
        c->rc = -ENOMEM;
        return 1;
    }
    struct strbuf name;
    strbuf_init(&name);
    strbuf_add_utf8(&name, sr->name);
    if (sr->labels && sr->labels[0]) {
        strbuf_addch(&name, '{');
        strbuf_add_utf8(&name, sr->labels);
        strbuf_addch(&name, '}');
    }
    struct trace_counter *k = &t->counters[t->ncounters++];
    k->name = strbuf_detach(&name);
    k->unit = NULL;
    k->proc = counter_proc(t, sr->labels);
    k->series_id = sr->id;
    return 0;
}

struct counter_points_ctx {
    struct trace *t;
    points_fn *fn;
    void *arg;
    int fn_rc; /* fn's failure, told apart from the store's */
};

/* Inside the window and finite: JSON cannot hold NaN or inf. */
static int keep_point(const struct trace *t, const struct point *p)
{
    return point_in(t, p->ts_ns) && isfinite(p->value);
}

/* A decoded block to fn as its runs of kept points: no copy of the block. */
static int pass_kept_points(const struct point *p, size_t n, void *arg)
{
    struct counter_points_ctx *c = arg;
    size_t from = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && keep_point(c->t, &p[i]))
            continue;
        if (i > from) { /* the run [from, i) ends here */
            c->t->points += i - from;
            int rc = c->fn(p + from, i - from, c->arg);
            if (rc)
                return c->fn_rc = rc;
        }
        from = i + 1;
    }
    return 0;
}

int trace_counter_points(struct trace *t, uint32_t ci, points_fn *fn, void *arg)
{
    struct counter_points_ctx c = {t, fn, arg, 0};
    uint64_t corrupt = 0;
    int rc = store_each_block_points(t->store, t->counters[ci].series_id, pass_kept_points, &c,
                                     &corrupt);
    t->corrupt_blocks += corrupt;
    if (rc < 0 && c.fn_rc >= 0)
        t->read_failed = 1;
    return rc;
}

/* ---- building ------------------------------------------------------------- */

static void findings_in_window(struct trace *t, const struct finding_record *f, uint32_t nf)
{
    t->findings = f;
    for (uint32_t i = 0; i < nf; i++)
        if (point_in(t, f[i].start_ns))
            t->finding_idx[t->nfindings++] = i;
}

int trace_build(struct store *s, const struct run_record *r, const struct trace_options *opt,
                const struct finding_record *f, uint32_t nf, struct trace *t, struct strbuf *err)
{
    memset(t, 0, sizeof(*t));
    t->store = s;
    t->run = r;
    t->origin_ns = r->start_ns;
    int rc = run_events_load(s, r->id, &t->ev);
    if (rc < 0) {
        strbuf_addf(err, "cannot read the events of run %s: %s", r->id, s->err.buf);
        return rc;
    }
    if ((rc = prepare_names(t)) < 0 || (rc = find_window(t, opt, err)) < 0)
        return rc;
    t->end_ns = events_end(t);
    if ((rc = s->ops->series_query(s, r->id, collect_node, t)) < 0 ||
        (rc = host_nodes(t, r->host)) < 0 ||
        (t->nnodes == 0 && (rc = node_add(t, r->host && *r->host ? r->host : "local")) < 0) ||
        (rc = add_metrics_procs(t)) < 0 || (rc = trace_build_python(t, err)) < 0 ||
        (rc = build_threads(t)) < 0) {
        if (!err->len)
            strbuf_addf(err, "cannot lay out run %s: %s", r->id,
                        rc == -ENOMEM ? "out of memory" : s->err.buf);
        return rc;
    }
    struct series_ctx c = {t, 0};
    rc = s->ops->series_query(s, r->id, add_series, &c);
    if (rc < 0 || c.rc < 0) {
        strbuf_addf(err, "cannot read the series of run %s: %s", r->id,
                    c.rc == -ENOMEM ? "out of memory" : s->err.buf);
        return rc < 0 ? rc : c.rc;
    }
    if (nf && !(t->finding_idx = calloc(nf, sizeof(*t->finding_idx))))
        return -ENOMEM;
    findings_in_window(t, f, nf);
    return 0;
}

void trace_release(struct trace *t)
{
    run_events_release(&t->ev);
    free(t->name_cat);
    for (uint32_t i = 0; i < t->nnodes; i++)
        free(t->nodes[i]);
    free(t->nodes);
    for (uint32_t i = 0; i < t->nprocs; i++)
        free(t->procs[i].name);
    free(t->procs);
    for (uint32_t i = 0; i < t->nthreads; i++) {
        free(t->threads[i].slices);
        free(t->threads[i].instants);
    }
    free(t->threads);
    for (uint32_t i = 0; i < t->ncounters; i++)
        free(t->counters[i].name);
    free(t->counters);
    free(t->finding_idx);
    for (uint32_t i = 0; i < t->npy_frames; i++)
        free(t->py_frames[i]);
    free(t->py_frames);
    for (uint32_t i = 0; i < t->npy_tracks; i++)
        free(t->py_tracks[i].slices);
    free(t->py_tracks);
    memset(t, 0, sizeof(*t));
}

/* ---- the sink ------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int trace_sink_open(struct trace_sink *k, const char *path, struct strbuf *err)
{
    memset(k, 0, sizeof(*k));
    strbuf_init(&k->buf);
    if (strcmp(path, "-") == 0) {
        k->f = stdout;
        return 0;
    }
    k->f = fopen(path, "wb");
    if (!k->f) {
        int e = errno;
        strbuf_addf(err, "cannot write '%s': %s", path, strerror(e));
        return -e;
    }
    if (ends_with(path, ".gz")) {
        /* zlib takes its own dup of the fd; the FILE only holds the name open
         * until close. Level 1: 3.2 M events/s and 5.3 B/event on the bench's
         * run, where level 6 gave 1.2 M/s for 4.5 B (docs/trace.md) */
        int fd = dup(fileno(k->f));
        k->gz = fd >= 0 ? gzdopen(fd, "wb1") : NULL;
        if (!k->gz) {
            if (fd >= 0)
                close(fd);
            fclose(k->f);
            k->f = NULL;
            strbuf_addf(err, "cannot compress into '%s'", path);
            return -EIO;
        }
    }
    return 0;
}

int trace_sink_flush(struct trace_sink *k, int force)
{
    if (!force && k->buf.len < TRACE_SINK_CHUNK)
        return 0;
    if (strbuf_failed(&k->buf))
        k->failed = 1; /* a chunk went missing: the file would be cut */
    if (k->buf.len && !k->failed) {
        if (k->gz)
            k->failed = gzwrite(k->gz, k->buf.buf, (unsigned)k->buf.len) != (int)k->buf.len;
        else
            k->failed = fwrite(k->buf.buf, 1, k->buf.len, k->f) != k->buf.len;
    }
    k->bytes += k->buf.len;
    strbuf_reset(&k->buf);
    return k->failed ? -EIO : 0;
}

int trace_sink_close(struct trace_sink *k)
{
    int rc = trace_sink_flush(k, 1);
    if (k->gz && gzclose(k->gz) != Z_OK)
        rc = -EIO;
    if (k->f && k->f != stdout && fclose(k->f) != 0)
        rc = -EIO;
    if (k->f == stdout && fflush(stdout) != 0)
        rc = -EIO;
    strbuf_release(&k->buf);
    k->f = NULL;
    k->gz = NULL;
    return rc;
}
