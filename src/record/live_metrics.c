#include "record/live_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/label.h"
#include "common/metrics.h"
#include "serve/expo.h"

/* A series not appended to for this long (or three of the recorder's
 * intervals, when longer) is left out of the snapshot: a disk or a GPU
 * process that went away. */
#define STALE_NS      (30 * NS_PER_S)
#define RATE_WINDOW_S 10 /* steps per second: steps that ended in the last 10 s */

struct live_series {
    int32_t metric;  /* catalog id; -2 not looked up yet, -1 none */
    int has;         /* a point came */
    double last;     /* its value, as stored */
    double total;    /* the integral of value * dt, seconds, for a rate's counter */
    int64_t last_ns; /* its time */
};

enum live_phase { PH_DATA, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_COMM, PH_COUNT };
static const char *const live_phase_names[PH_COUNT] = {"data", "forward", "backward", "optimizer",
                                                       "comm"};

struct live_rank {
    int64_t rank; /* -1: a process with no rank */
    uint64_t count;
    double sum_s;
    double ring[LIVE_STEP_RING]; /* the last durations, seconds */
    int64_t sec[LIVE_STEP_SECS]; /* which second each bucket counts */
    uint32_t per_sec[LIVE_STEP_SECS];
    int64_t first_start_ns;
    double phase_s[PH_COUNT];
};

struct live_proc {
    pid_t pid;
    int64_t rank, worker;
};

/* ---- per series ------------------------------------------------------------------------- */

static struct live_series *series_state(struct live_metrics *lm, uint32_t index)
{
    if (index >= lm->ns) {
        uint32_t n = lm->ns ? lm->ns : 64;
        while (n <= index)
            n *= 2;
        struct live_series *p = realloc(lm->s, n * sizeof(*p));
        if (!p)
            return NULL;
        memset(p + lm->ns, 0, (n - lm->ns) * sizeof(*p));
        for (uint32_t i = lm->ns; i < n; i++)
            p[i].metric = -2;
        lm->s = p;
        lm->ns = n;
    }
    struct live_series *s = &lm->s[index];
    if (s->metric == -2)
        s->metric = metric_lookup(lm->series->items[index].name);
    return s;
}

static void on_point(void *arg, uint32_t index, int64_t ts_ns, double value)
{
    struct live_metrics *lm = arg;
    if (lm->next_tap)
        lm->next_tap(lm->next_tap_arg, index, ts_ns, value);
    struct live_series *s = series_state(lm, index);
    if (!s)
        return;
    if (s->has && ts_ns > s->last_ns) /* a rate holds over the interval up to its point */
        s->total += value * (double)(ts_ns - s->last_ns) / 1e9;
    s->has = 1;
    s->last = value;
    s->last_ns = ts_ns;
}

/* ---- per process and per rank ----------------------------------------------------------- */

static struct live_proc *proc_find(struct live_metrics *lm, pid_t pid)
{
    /* a drain hands over one thread's spans in a row: the last hit first */
    if (lm->last_proc < lm->nprocs && lm->procs[lm->last_proc].pid == pid)
        return &lm->procs[lm->last_proc];
    for (uint32_t i = 0; i < lm->nprocs; i++)
        if (lm->procs[i].pid == pid) {
            lm->last_proc = i;
            return &lm->procs[i];
        }
    return NULL;
}

/* Processes that left the tree are forgotten, so that the list follows it. */
static void procs_prune(struct live_metrics *lm)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < lm->nprocs; i++) {
        int alive = 0;
        for (uint32_t j = 0; j < lm->tree->n && !alive; j++)
            alive = lm->tree->e[j].pid == lm->procs[i].pid;
        if (alive)
            lm->procs[k++] = lm->procs[i];
    }
    lm->nprocs = k;
}

static void on_proc(void *arg, pid_t pid, int64_t rank, int64_t worker_id)
{
    struct live_metrics *lm = arg;
    if (lm->next_proc)
        lm->next_proc(lm->next_sink_arg, pid, rank, worker_id);
    struct live_proc *p = proc_find(lm, pid);
    if (!p) {
        if (lm->nprocs == lm->procs_cap) {
            if (lm->procs_cap >= 4096)
                procs_prune(lm);
            if (lm->nprocs == lm->procs_cap) {
                uint32_t cap = lm->procs_cap ? lm->procs_cap * 2 : 16;
                struct live_proc *q = realloc(lm->procs, cap * sizeof(*q));
                if (!q)
                    return; /* its spans count without a rank */
                lm->procs = q;
                lm->procs_cap = cap;
            }
        }
        p = &lm->procs[lm->nprocs++];
        p->pid = pid;
    }
    p->rank = rank;
    p->worker = worker_id;
}

static struct live_rank *rank_get(struct live_metrics *lm, int64_t rank)
{
    for (uint32_t i = 0; i < lm->nranks; i++)
        if (lm->ranks[i].rank == rank)
            return &lm->ranks[i];
    if (lm->nranks == lm->ranks_cap) {
        uint32_t cap = lm->ranks_cap ? lm->ranks_cap * 2 : 4;
        struct live_rank *p = realloc(lm->ranks, cap * sizeof(*p));
        if (!p)
            return NULL;
        lm->ranks = p;
        lm->ranks_cap = cap;
    }
    struct live_rank *r = &lm->ranks[lm->nranks++];
    memset(r, 0, sizeof(*r));
    r->rank = rank;
    for (int i = 0; i < LIVE_STEP_SECS; i++)
        r->sec[i] = -1;
    return r;
}

#define PH_STEP PH_COUNT /* a phase_of answer: the step itself */

static int phase_of_name(const char *name)
{
    if (strcmp(name, "step") == 0)
        return PH_STEP;
    for (int p = 0; p < PH_COMM; p++)
        if (strcmp(name, live_phase_names[p]) == 0)
            return p;
    return strncmp(name, "comm:", 5) == 0 ? PH_COMM : -1;
}

/* What a span of name id stands for: a phase, PH_STEP, or -1. Kept per id
 * (they are the sink's, name_base + 1 up), so that the drain, which calls
 * the tap for every span, compares each name once. */
static int phase_of(struct live_metrics *lm, uint32_t name_id, const char *name)
{
    uint32_t i = name_id - lm->sink->name_base - 1;
    if (name_id <= lm->sink->name_base || i >= EVENT_NAMES_MAX)
        return phase_of_name(name);
    if (i >= lm->nphase) {
        uint32_t n = lm->nphase ? lm->nphase : 64;
        while (n <= i)
            n *= 2;
        int8_t *p = realloc(lm->phase, n);
        if (!p)
            return phase_of_name(name);
        memset(p + lm->nphase, -2, n - lm->nphase);
        lm->phase = p;
        lm->nphase = n;
    }
    if (lm->phase[i] == -2)
        lm->phase[i] = (int8_t)phase_of_name(name);
    return lm->phase[i];
}

static void add_step(struct live_rank *r, int64_t start_ns, int64_t end_ns)
{
    double d = (double)(end_ns - start_ns) / 1e9;
    r->ring[r->count % LIVE_STEP_RING] = d;
    if (!r->count)
        r->first_start_ns = start_ns;
    r->count++;
    r->sum_s += d;
    int64_t sec = end_ns / NS_PER_S;
    int b = (int)(sec % LIVE_STEP_SECS);
    if (r->sec[b] != sec) {
        r->sec[b] = sec;
        r->per_sec[b] = 0;
    }
    r->per_sec[b]++;
}

static void on_span(void *arg, pid_t pid, pid_t tid, int64_t start_ns, int64_t end_ns,
                    uint32_t name_id, const char *name)
{
    struct live_metrics *lm = arg;
    if (lm->next_span)
        lm->next_span(lm->next_sink_arg, pid, tid, start_ns, end_ns, name_id, name);
    int phase = phase_of(lm, name_id, name);
    if (phase < 0 || end_ns < start_ns)
        return;
    const struct live_proc *p = proc_find(lm, pid);
    struct live_rank *r = rank_get(lm, p ? p->rank : -1);
    if (!r)
        return;
    if (phase == PH_STEP)
        add_step(r, start_ns, end_ns);
    else
        r->phase_s[phase] += (double)(end_ns - start_ns) / 1e9;
}

/* ---- setup ------------------------------------------------------------------------------ */

void live_metrics_init(struct live_metrics *lm, int publish)
{
    memset(lm, 0, sizeof(*lm));
    lm->publish = publish;
    strbuf_init(&lm->run_labels);
    strbuf_init(&lm->snap);
    strbuf_init(&lm->published);
    pthread_mutex_init(&lm->lock, NULL);
}

int live_metrics_open(struct live_metrics *lm, struct series_table *series, struct event_sink *sink,
                      const struct proc_tree *tree, const struct run_record *run, const char *node)
{
    lm->series = series;
    lm->sink = sink;
    lm->tree = tree;
    /* a node of a job is the job's run: strobe show JOB, the dashboard's
     * run page; the node label tells the nodes apart */
    expo_label_add(&lm->run_labels, "run_id", run->parent_id ? run->parent_id : run->id);
    expo_label_add(&lm->run_labels, "run_name", run->name ? run->name : "");
    expo_label_add(&lm->run_labels, "experiment", run->experiment ? run->experiment : "");
    expo_label_add(&lm->run_labels, "node", node ? node : "");
    if (strbuf_failed(&lm->run_labels))
        return -ENOMEM;
    lm->next_tap = series->tap;
    lm->next_tap_arg = series->tap_arg;
    series->tap = on_point;
    series->tap_arg = lm;
    lm->next_span = sink->span_tap;
    lm->next_proc = sink->proc_tap;
    lm->next_sink_arg = sink->tap_arg;
    sink->span_tap = on_span;
    sink->proc_tap = on_proc;
    sink->tap_arg = lm;
    return 0;
}

void live_metrics_set_rules(struct live_metrics *lm, const struct rules_engine *rules)
{
    lm->rules = rules;
}

/* ---- the snapshot ----------------------------------------------------------------------- */

/* Labels of a sample appended to o: the run's, then extra (rendered, may
 * be ""). */
static void labels_with_onto(const struct live_metrics *lm, const char *extra, struct strbuf *o)
{
    strbuf_add(o, lm->run_labels.buf, lm->run_labels.len);
    if (*extra) {
        strbuf_addch(o, ',');
        strbuf_adds(o, extra);
    }
}

/* The same into o, emptied first. */
static void labels_with(const struct live_metrics *lm, const char *extra, struct strbuf *o)
{
    strbuf_reset(o);
    labels_with_onto(lm, extra, o);
}

static const struct proc_entry *tree_find(const struct proc_tree *t, pid_t pid)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->e[i].pid == pid)
            return &t->e[i];
    return NULL;
}

/* A process's comm, role and rank, after its pid. */
static void add_proc_labels(struct live_metrics *lm, pid_t pid, struct strbuf *o)
{
    const struct proc_entry *e = tree_find(lm->tree, pid);
    const struct live_proc *p = proc_find(lm, pid);
    if (e)
        expo_label_add(o, "comm", e->comm);
    const char *role = pid == lm->tree->root_pid ? "main"
                       : p && p->worker >= 0     ? "worker"
                       : p && p->rank >= 0       ? "rank"
                                                 : "child";
    expo_label_add(o, "role", role);
    if (p && p->rank >= 0) {
        char rank[24];
        snprintf(rank, sizeof(rank), "%lld", (long long)p->rank);
        expo_label_add(o, "rank", rank);
    }
}

/* A series' stored labels ("gpu=0,pid=42", %XX escaped) as exposition
 * labels, with a process's comm, role and rank; a family member's name as
 * name="...". */
static void series_labels(struct live_metrics *lm, const struct series *s, int family,
                          struct strbuf *o)
{
    struct strbuf key, val;
    strbuf_init(&key);
    strbuf_init(&val);
    if (family)
        expo_label_add(o, "name", strchr(s->name, '.') + 1);
    const char *p = s->labels;
    while (*p) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        if (!end)
            end = p + strlen(p);
        if (eq && eq < end) {
            strbuf_reset(&key);
            strbuf_reset(&val);
            label_unescape(&key, p, (size_t)(eq - p));
            label_unescape(&val, eq + 1, (size_t)(end - eq - 1));
            if (key.buf && val.buf) {
                expo_label_add(o, key.buf, val.buf);
                if (strcmp(key.buf, "pid") == 0)
                    add_proc_labels(lm, (pid_t)atoi(val.buf), o);
            }
        }
        p = *end ? end + 1 : end;
    }
    strbuf_release(&key);
    strbuf_release(&val);
}

/* Whether series i goes into the snapshot, as of now_ns. */
static int series_live(const struct live_metrics *lm, uint32_t i, int64_t now_ns)
{
    const struct series *s = &lm->series->items[i];
    int64_t stale = lm->interval_ns * 3 > STALE_NS ? lm->interval_ns * 3 : STALE_NS;
    return i < lm->ns && lm->s[i].has && lm->s[i].metric >= 0 && s->open_buf &&
           now_ns - lm->s[i].last_ns <= stale;
}

/* A rate's counter: its help says what it sums. */
static void snap_total_family(struct live_metrics *lm, const struct metric_prom *pm,
                              const char *help)
{
    char h[256];
    snprintf(h, sizeof(h), "The integral over time of: %s", help);
    expo_snap_family(&lm->snap, pm->total_name, EXPO_COUNTER, pm->total_unit, h);
}

/* Every live series of the catalog metric id: the gauge, then the counter
 * its integral makes. */
/* The live series of metric id, from its group (group_by_metric): the
 * gauge, then the counter its integral makes, whose samples take the
 * labels the gauge's rendered (kept in rendered, NUL after each). */
static void snap_metric(struct live_metrics *lm, enum metric_id id, const uint32_t *idx, uint32_t n,
                        struct strbuf *extra, struct strbuf *rendered)
{
    if (!n)
        return;
    struct metric_prom pm;
    metric_prom(id, &pm);
    const struct metric_info *mi = metric_info(id);
    int family = metric_is_family(id);
    expo_snap_family(&lm->snap, pm.name, pm.counter ? EXPO_COUNTER : EXPO_GAUGE, pm.unit, mi->help);
    strbuf_reset(rendered);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = idx[k];
        strbuf_reset(extra);
        series_labels(lm, &lm->series->items[i], family, extra);
        size_t at = rendered->len;
        labels_with_onto(lm, extra->buf ? extra->buf : "", rendered);
        expo_snap_sample(&lm->snap, pm.counter ? "_total" : "", rendered->buf + at,
                         lm->s[i].last * pm.scale);
        strbuf_addch(rendered, '\0');
    }
    if (!pm.total_name[0] || strbuf_failed(rendered))
        return;
    snap_total_family(lm, &pm, mi->help);
    const char *labels = rendered->buf;
    for (uint32_t k = 0; k < n; k++, labels += strlen(labels) + 1)
        expo_snap_sample(&lm->snap, "_total", labels, lm->s[idx[k]].total * pm.total_scale);
}

/* The live series' indexes grouped by metric, in table order within each:
 * metric id's are order[first[id]..first[id + 1]). One pass over the
 * table, where a pass per metric of the catalog was sixty. */
static int group_by_metric(struct live_metrics *lm, int64_t now_ns, uint32_t first[])
{
    uint32_t n = lm->series->count < lm->ns ? lm->series->count : lm->ns;
    if (n > lm->order_cap) {
        uint32_t *p = realloc(lm->order, n * sizeof(*p));
        if (!p)
            return -ENOMEM;
        lm->order = p;
        lm->order_cap = n;
    }
    memset(first, 0, (METRIC_COUNT + 1) * sizeof(first[0]));
    for (uint32_t i = 0; i < n; i++)
        if (series_live(lm, i, now_ns))
            first[lm->s[i].metric + 1]++;
    for (int id = 0; id < METRIC_COUNT; id++)
        first[id + 1] += first[id];
    uint32_t at[METRIC_COUNT];
    memcpy(at, first, sizeof(at));
    for (uint32_t i = 0; i < n; i++)
        if (series_live(lm, i, now_ns))
            lm->order[at[lm->s[i].metric]++] = i;
    return 0;
}

static void rank_labels(const struct live_metrics *lm, const struct live_rank *r, const char *more,
                        struct strbuf *extra, struct strbuf *labels)
{
    strbuf_reset(extra);
    if (r->rank >= 0) {
        char rank[24];
        snprintf(rank, sizeof(rank), "%lld", (long long)r->rank);
        expo_label_add(extra, "rank", rank);
    }
    if (more && *more) {
        if (extra->len)
            strbuf_addch(extra, ',');
        strbuf_adds(extra, more);
    }
    labels_with(lm, extra->buf ? extra->buf : "", labels);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void snap_step_summary(struct live_metrics *lm, struct strbuf *extra, struct strbuf *labels)
{
    static const double qs[] = {0.5, 0.9, 0.99};
    static const char *const qnames[] = {"quantile=\"0.5\"", "quantile=\"0.9\"",
                                         "quantile=\"0.99\""};
    expo_snap_family(&lm->snap, "strobe_step_duration_seconds", EXPO_SUMMARY, "seconds",
                     "Time from one step's start to its end; quantiles over the last 256 steps");
    double sorted[LIVE_STEP_RING];
    for (uint32_t k = 0; k < lm->nranks; k++) {
        const struct live_rank *r = &lm->ranks[k];
        if (!r->count)
            continue;
        uint32_t n = r->count < LIVE_STEP_RING ? (uint32_t)r->count : LIVE_STEP_RING;
        memcpy(sorted, r->ring, n * sizeof(double));
        qsort(sorted, n, sizeof(double), cmp_double);
        for (int q = 0; q < 3; q++) {
            uint32_t at = (uint32_t)(qs[q] * n); /* nearest rank */
            rank_labels(lm, r, qnames[q], extra, labels);
            expo_snap_sample(&lm->snap, "", labels->buf, sorted[at < n ? at : n - 1]);
        }
        rank_labels(lm, r, "", extra, labels);
        expo_snap_sample(&lm->snap, "_sum", labels->buf, r->sum_s);
        expo_snap_sample(&lm->snap, "_count", labels->buf, (double)r->count);
    }
}

/* Steps that ended in the last RATE_WINDOW_S whole seconds, per second (over
 * less time while the steps began less long ago). */
static double steps_per_s(const struct live_rank *r, int64_t now_ns)
{
    int64_t now_s = now_ns / NS_PER_S, n = 0;
    for (int b = 0; b < LIVE_STEP_SECS; b++)
        if (r->sec[b] > now_s - RATE_WINDOW_S && r->sec[b] <= now_s)
            n += r->per_sec[b];
    double span = (double)(now_ns - r->first_start_ns) / 1e9;
    if (span > RATE_WINDOW_S)
        span = RATE_WINDOW_S;
    return span > 0 ? (double)n / span : 0;
}

static void snap_steps(struct live_metrics *lm, int64_t now_ns, struct strbuf *extra,
                       struct strbuf *labels)
{
    int any = 0;
    for (uint32_t k = 0; k < lm->nranks; k++)
        any |= lm->ranks[k].count > 0;
    if (any) {
        snap_step_summary(lm, extra, labels);
        expo_snap_family(&lm->snap, "strobe_steps_per_second", EXPO_GAUGE, "",
                         "Steps that ended in the last 10 s, per second");
        for (uint32_t k = 0; k < lm->nranks; k++) {
            if (!lm->ranks[k].count)
                continue;
            rank_labels(lm, &lm->ranks[k], "", extra, labels);
            expo_snap_sample(&lm->snap, "", labels->buf, steps_per_s(&lm->ranks[k], now_ns));
        }
        expo_snap_family(&lm->snap, "strobe_last_step", EXPO_GAUGE, "",
                         "The highest step any event belonged to");
        labels_with(lm, "", labels);
        expo_snap_sample(&lm->snap, "", labels->buf, (double)lm->sink->last_step);
    }
    int header = 0;
    for (uint32_t k = 0; k < lm->nranks; k++)
        for (int p = 0; p < PH_COUNT; p++) {
            if (lm->ranks[k].phase_s[p] <= 0)
                continue;
            if (!header++)
                expo_snap_family(&lm->snap, "strobe_phase_seconds", EXPO_COUNTER, "seconds",
                                 "Time in the spans of a phase of the step");
            struct strbuf ph;
            strbuf_init(&ph);
            expo_label_add(&ph, "phase", live_phase_names[p]);
            rank_labels(lm, &lm->ranks[k], ph.buf ? ph.buf : "", extra, labels);
            strbuf_release(&ph);
            expo_snap_sample(&lm->snap, "_total", labels->buf, lm->ranks[k].phase_s[p]);
        }
}

static void finding_labels(const struct live_metrics *lm, const struct finding *f,
                           struct strbuf *extra, struct strbuf *labels)
{
    strbuf_reset(extra);
    expo_label_add(extra, "rule", f->rule);
    expo_label_add(extra, "severity", severity_names[f->severity]);
    expo_label_add(extra, "scope", f->scope);
    labels_with(lm, extra->buf ? extra->buf : "", labels);
}

static void snap_findings(struct live_metrics *lm, struct strbuf *extra, struct strbuf *labels)
{
    uint32_t n = 0;
    const struct finding *f = lm->rules ? rules_findings(lm->rules, &n) : NULL;
    if (!n)
        return;
    expo_snap_family(&lm->snap, "strobe_finding_windows", EXPO_COUNTER, "",
                     "Rule windows a finding fired in");
    for (uint32_t i = 0; i < n; i++) {
        finding_labels(lm, &f[i], extra, labels);
        expo_snap_sample(&lm->snap, "_total", labels->buf, f[i].windows);
    }
    expo_snap_family(&lm->snap, "strobe_finding_last_timestamp_seconds", EXPO_GAUGE, "seconds",
                     "End of the last window a finding fired in");
    for (uint32_t i = 0; i < n; i++) {
        finding_labels(lm, &f[i], extra, labels);
        expo_snap_sample(&lm->snap, "", labels->buf, (double)f[i].end_ns / 1e9);
    }
}

/* A family of one sample with the run's labels. */
static void snap_one(struct live_metrics *lm, const char *name, enum expo_type type,
                     const char *unit, const char *help, double v)
{
    expo_snap_family(&lm->snap, name, type, unit, help);
    expo_snap_sample(&lm->snap,
                     type == EXPO_COUNTER ? "_total"
                     : type == EXPO_INFO  ? "_info"
                                          : "",
                     lm->run_labels.buf, v);
}

static void snap_run(struct live_metrics *lm, const struct run_record *run, int64_t start_ns,
                     int64_t now_ns)
{
    snap_one(lm, "strobe_run", EXPO_INFO, "", "A running run, with its labels", 1);
    snap_one(lm, "strobe_run_start_timestamp_seconds", EXPO_GAUGE, "seconds",
             "When the run started", (double)start_ns / 1e9);
    snap_one(lm, "strobe_snapshot_timestamp_seconds", EXPO_GAUGE, "seconds",
             "When this snapshot of the run was taken", (double)now_ns / 1e9);
    snap_one(lm, "strobe_recorder_points", EXPO_COUNTER, "", "Points sampled", (double)run->points);
    snap_one(lm, "strobe_recorder_dropped_points", EXPO_COUNTER, "",
             "Points lost to the recorder's memory cap", (double)run->dropped);
    snap_one(lm, "strobe_recorder_events", EXPO_COUNTER, "", "Framework events kept",
             (double)run->events);
    snap_one(lm, "strobe_recorder_dropped_events", EXPO_COUNTER, "",
             "Framework events dropped by full rings", (double)run->events_dropped);
}

int live_metrics_snapshot(struct live_metrics *lm, const struct run_record *run, int64_t start_ns,
                          int64_t now_ns)
{
    struct strbuf extra, labels;
    strbuf_init(&extra);
    strbuf_init(&labels);
    /* every series known, its metric looked up, even before a point */
    for (uint32_t i = 0; i < lm->series->count; i++)
        series_state(lm, i);
    strbuf_reset(&lm->snap);
    expo_snap_begin(&lm->snap, now_ns);
    snap_run(lm, run, start_ns, now_ns);
    uint32_t first[METRIC_COUNT + 1];
    if (group_by_metric(lm, now_ns, first) == 0)
        for (int id = 0; id < METRIC_COUNT; id++)
            snap_metric(lm, (enum metric_id)id, lm->order + first[id], first[id + 1] - first[id],
                        &extra, &labels);
    snap_steps(lm, now_ns, &extra, &labels);
    snap_findings(lm, &extra, &labels);
    strbuf_release(&extra);
    strbuf_release(&labels);
    if (strbuf_failed(&lm->snap))
        return -ENOMEM;
    if (lm->publish) {
        pthread_mutex_lock(&lm->lock);
        strbuf_reset(&lm->published);
        strbuf_add(&lm->published, lm->snap.buf, lm->snap.len);
        pthread_mutex_unlock(&lm->lock);
    }
    return 0;
}

int live_metrics_published(struct live_metrics *lm, struct strbuf *out)
{
    pthread_mutex_lock(&lm->lock);
    int rc = lm->published.len ? 0 : -EAGAIN;
    if (!rc)
        strbuf_add(out, lm->published.buf, lm->published.len);
    pthread_mutex_unlock(&lm->lock);
    return rc;
}

void live_metrics_close(struct live_metrics *lm)
{
    if (lm->series && lm->series->tap == on_point) {
        lm->series->tap = lm->next_tap;
        lm->series->tap_arg = lm->next_tap_arg;
    }
    if (lm->sink && lm->sink->span_tap == on_span) {
        lm->sink->span_tap = lm->next_span;
        lm->sink->proc_tap = lm->next_proc;
        lm->sink->tap_arg = lm->next_sink_arg;
    }
    free(lm->s);
    free(lm->ranks);
    free(lm->procs);
    free(lm->phase);
    free(lm->order);
    strbuf_release(&lm->run_labels);
    strbuf_release(&lm->snap);
    strbuf_release(&lm->published);
    pthread_mutex_destroy(&lm->lock);
    memset(lm, 0, sizeof(*lm));
}
