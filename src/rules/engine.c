/*
 * The rule engine: input buffering, windows, the steps of each window,
 * parameters and findings. The rules themselves are in sagemaker.c and
 * own.c; rules.h explains the model.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

#include "common/array.h"
#include "common/metrics.h"
#include "common/strlist.h"
#include "common/strtab.h"
#include "rules/rules.h"
#include "rules/stats.h"

const char *const severity_names[4] = {"info", "low", "medium", "high"};
const char *const rule_status_names[5] = {"ok", "fired", "waiting", "n/a", "report"};

static const struct {
    enum metric_id catalog; /* the name it reads: common/metrics.def */
    enum rule_metric metric;
} metric_names[] = {
    {METRIC_CPU_UTIL, RM_CPU_UTIL},
    {METRIC_CPU_IOWAIT, RM_CPU_IOWAIT},
    {METRIC_MEM_USED_BYTES, RM_MEM_USED},
    {METRIC_MEM_TOTAL_BYTES, RM_MEM_TOTAL},
    {METRIC_MEM_AVAILABLE_BYTES, RM_MEM_AVAILABLE},
    {METRIC_MEM_USED_PCT, RM_MEM_USED_PCT},
    {METRIC_MEM_SWAPIN_PER_S, RM_SWAPIN},
    {METRIC_PSI_CPU_SOME, RM_PSI_CPU},
    {METRIC_PSI_MEM_SOME, RM_PSI_MEM},
    {METRIC_DISK_READ_BYTES_PER_S, RM_DISK_READ},
    {METRIC_DISK_WRITE_BYTES_PER_S, RM_DISK_WRITE},
    {METRIC_NET_RX_BYTES_PER_S, RM_NET_RX},
    {METRIC_NET_TX_BYTES_PER_S, RM_NET_TX},
    {METRIC_CGROUP_MEM_USED_BYTES, RM_CG_MEM_USED},
    {METRIC_CGROUP_MEM_LIMIT_BYTES, RM_CG_MEM_LIMIT},
    {METRIC_CGROUP_THROTTLED_PCT, RM_CG_THROTTLED},
    {METRIC_PROC_CPU, RM_PROC_CPU},
    {METRIC_PROC_RSS_BYTES, RM_PROC_RSS},
    {METRIC_PROC_THREADS, RM_PROC_THREADS},
    {METRIC_GPU_UTIL, RM_GPU_UTIL},
    {METRIC_GPU_MEM_UTIL, RM_GPU_MEM_UTIL},
    {METRIC_GPU_MEM_USED_BYTES, RM_GPU_MEM_USED},
    {METRIC_GPU_MEM_TOTAL_BYTES, RM_GPU_MEM_TOTAL},
    {METRIC_GPU_THROTTLE_REASONS, RM_GPU_THROTTLE},
    {METRIC_GPU_SM_CLOCK_MHZ, RM_GPU_SM_CLOCK},
    {METRIC_GPU_MIG_MEM_USED_BYTES, RM_GPU_MIG_MEM},
    {METRIC_CPU_STEAL, RM_CPU_STEAL},
    {METRIC_PROC_RUNQ_DELAY, RM_PROC_RUNQ_PID},
};

/* ---- internal state --------------------------------------------------------- */

struct slot { /* one series and its points not yet judged */
    struct rule_series view;
    char *name, *labels;
    int64_t *ts;
    double *v;
    uint32_t n, cap;
    int64_t last_ts;
};

enum span_class { SC_UNKNOWN, SC_STEP, SC_PHASE, SC_WORKER, SC_IGNORE };

struct span_rec {
    int64_t start, end;
    uint8_t cls;
    int8_t phase; /* enum phase; for a step, its enum step_mode */
};

struct thread_buf {
    int64_t pid, tid;
    struct span_rec *s;
    uint32_t n, cap;
    int64_t last_step_end; /* spans ending before it belong to no future step */
    int has_steps;
};

struct proc_attr {
    int64_t pid, rank, worker_id;
    uint32_t node_id;
};

struct rule_inst {
    const struct rule_def *def;
    double param[RULES_MAX_PARAMS];
    void *state;
    struct rule_result result;
};

/* What the GPU rules need to know was there: a GPU at all (its utilization
 * or memory, or a MIG device's memory), its utilization, MIG mode. */
enum gpu_kind { GPU_ANY, GPU_UTIL, GPU_MIG, GPU_SEEN_KINDS };

struct rules_engine {
    struct rules_run_info run;
    char host[64];
    int64_t interval_ns;
    int64_t next_t0; /* the next window to close starts here */
    struct rule_inst *rules;
    uint32_t nrules;
    struct slot *slots;
    uint32_t nslots, slots_cap;
    struct thread_buf *threads;
    uint32_t nthreads, threads_cap;
    struct proc_attr *procs;
    uint32_t nprocs, procs_cap;
    uint8_t *name_class; /* by run-wide name id */
    int8_t *name_phase;
    uint32_t names_cap;
    struct finding *findings;
    uint32_t nfindings, findings_cap;
    struct strtab nodes; /* names by node id; [RULES_LOCAL_NODE] is "" */
    uint32_t *win_nodes; /* a window's nodes with cpu.util */
    uint8_t *node_mark;  /* scratch for them, by node id */
    uint32_t win_nodes_cap;
    char **warnings;
    uint32_t nwarnings, warnings_cap;
    int gpu_warned;                /* a GPU series outside 0..RULES_MAX_GPU_INDEX was said */
    struct rule_series *views;     /* a window's series */
    struct rule_step *steps;       /* a window's steps, every mode */
    struct rule_step *train_steps; /* the training ones among them */
    uint32_t nsteps, steps_cap, train_cap;
    struct phase_span *scratch;
    uint32_t scratch_cap;
    struct comm_span *comm; /* steps_comm_all's collectives of a window */
    uint32_t comm_cap;
    int64_t *pids_seen; /* a window's worker pids */
    uint32_t npids, pids_cap;
    /* by enum gpu_kind: the first finite point's time (INT64_MAX: none);
     * it was seen when it came before the end of the window being judged */
    int64_t gpu_first_ns[GPU_SEEN_KINDS];
    int64_t judged_t1;
    uint64_t dropped, late;
    finding_fn *on_finding;
    void *on_finding_arg;
    int finished;
};

/* ---- parameters ------------------------------------------------------------- */

const struct rule_def *rule_def_find(const char *name)
{
    for (uint32_t i = 0; i < rule_def_count; i++)
        if (strcmp(rule_defs[i]->name, name) == 0)
            return rule_defs[i];
    return NULL;
}

static int param_index(const struct rule_def *d, const char *name)
{
    for (uint32_t i = 0; i < d->nparams; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const char *kind_wants(enum rule_param_kind k)
{
    switch (k) {
    case RP_PERCENT:
        return "a percentage from 0 to 100";
    case RP_FRACTION:
        return "a number from 0 to 1";
    case RP_COUNT:
        return "a whole number from 0 to 4294967295";
    case RP_WINDOW:
        return "a whole number from 1 to 1048576";
    case RP_NUMBER:
        break;
    }
    return "a number from 0 to 1e9";
}

/* val as a value of parameter p, in the range its kind allows. */
static int param_number(const struct rule_param *p, const char *val, double *out)
{
    char *end;
    double v = strtod(val, &end);
    if (end == val || *end || !isfinite(v) || v < 0)
        return -1;
    double lo = 0, hi = RULES_MAX_NUMBER;
    if (p->kind == RP_PERCENT)
        hi = 100;
    else if (p->kind == RP_FRACTION)
        hi = 1;
    else if (p->kind == RP_COUNT)
        hi = RULES_MAX_COUNT;
    else if (p->kind == RP_WINDOW)
        lo = 1, hi = RULES_MAX_WINDOW;
    int whole = p->kind == RP_COUNT || p->kind == RP_WINDOW;
    if (v < lo || v > hi || (whole && v != floor(v)))
        return -1;
    *out = v;
    return 0;
}

struct choice {
    const char *word;
    size_t len;
    int k;     /* the item being looked at */
    int found; /* the last item equal to word, or -1 */
};

static int match_choice(const char *item, size_t len, void *arg)
{
    struct choice *c = arg;
    if (len == c->len && strncasecmp(c->word, item, len) == 0) /* TRAIN as train */
        c->found = c->k;
    c->k++;
    return 0;
}

/* Which item of choices word is, or -1. */
static int choice_index(const char *choices, const char *word)
{
    struct choice c = {word, strlen(word), 0, -1};
    strlist_each(choices, match_choice, &c);
    return c.found;
}

/* "Rule.param=value" into the rule's value; SageMaker's ProfilerReport form
 * "Rule_param=value" is accepted too. */
static int apply_param(struct rules_engine *e, const char *text, struct strbuf *err)
{
    const char *eq = strchr(text, '=');
    const char *dot = strchr(text, '.');
    if (!dot || (eq && dot > eq))
        dot = strchr(text, '_');
    if (!eq || !dot || dot > eq) {
        strbuf_addf(err, "bad rule parameter '%s': expected Rule.param=value", text);
        return -EINVAL;
    }
    char rule[64], param[64];
    snprintf(rule, sizeof(rule), "%.*s", (int)(dot - text), text);
    snprintf(param, sizeof(param), "%.*s", (int)(eq - dot - 1), dot + 1);
    const struct rule_def *d = rule_def_find(rule);
    if (!d) {
        strbuf_addf(err, "unknown rule '%s' in '%s'; see 'strobe rules --list'", rule, text);
        return -EINVAL;
    }
    int pi = param_index(d, param);
    if (pi < 0) {
        strbuf_addf(err, "rule %s has no parameter '%s'; see 'strobe rules --list'", rule, param);
        return -EINVAL;
    }
    const char *val = eq + 1;
    double v;
    if (d->params[pi].choices) {
        v = choice_index(d->params[pi].choices, val);
        if (v < 0) {
            strbuf_addf(err, "%s.%s must be one of %s, not '%s'", rule, param,
                        d->params[pi].choices, val);
            return -EINVAL;
        }
    } else if (param_number(&d->params[pi], val, &v) < 0) {
        strbuf_addf(err, "%s.%s needs %s, not '%s'", rule, param, kind_wants(d->params[pi].kind),
                    val);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < e->nrules; i++)
        if (e->rules[i].def == d)
            e->rules[i].param[pi] = v;
    return 0;
}

static int rule_listed(const char *list, const char *name)
{
    return strlist_has(list, name, strlen(name));
}

struct rule_list_check {
    struct strbuf *err;
    int named; /* non-empty items so far */
};

static int check_rule_name(const char *item, size_t len, void *arg)
{
    struct rule_list_check *c = arg;
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)len, item);
    if (len && !rule_def_find(name)) {
        strbuf_addf(c->err, "unknown rule '%s'; see 'strobe rules --list'", name);
        return -EINVAL;
    }
    c->named += len > 0;
    return 0;
}

/* Every name known, and at least one: a list of nothing but commas would
 * evaluate no rule while looking like a choice of some. */
static int check_rule_list(const char *list, struct strbuf *err)
{
    struct rule_list_check c = {err, 0};
    int rc = strlist_each(list, check_rule_name, &c);
    if (rc)
        return rc;
    if (!c.named) {
        strbuf_addf(err, "--rules '%s' names no rule; see 'strobe rules --list'", list);
        return -EINVAL;
    }
    return 0;
}

void rules_params_text(const struct rules_engine *e, struct strbuf *out, int only_changed)
{
    for (uint32_t i = 0; i < e->nrules; i++) {
        const struct rule_def *d = e->rules[i].def;
        for (uint32_t p = 0; p < d->nparams; p++) {
            double v = e->rules[i].param[p];
            if (only_changed && v == d->params[p].value)
                continue;
            if (d->params[p].choices)
                strbuf_addf(out, "%s.%s=%s\n", d->name, d->params[p].name,
                            rule_param_choice(&d->params[p], v));
            else
                strbuf_addf(out, "%s.%s=%.17g\n", d->name, d->params[p].name, v);
        }
    }
}

const char *rule_param_choice(const struct rule_param *p, double v)
{
    static __thread char buf[32];
    int k = (int)v;
    size_t len;
    const char *c = p->choices && k >= 0 ? strlist_nth(p->choices, (size_t)k, &len) : NULL;
    if (!c)
        return "?";
    snprintf(buf, sizeof(buf), "%.*s", (int)len, c);
    return buf;
}

/* ---- nodes ------------------------------------------------------------------ */

/* The id of the node named name[0..len), added when new (ids in order of
 * first sight, no limit: a run of 4096 imported nodes has as many). Indexed
 * by common/strtab, since every series of every node asks. 0, or -ENOMEM. */
static int node_intern(struct rules_engine *e, const char *name, size_t len, uint32_t *id)
{
    return strtab_intern(&e->nodes, name, len, id) < 0 ? -ENOMEM : 0;
}

uint32_t rules_node_count(const struct rules_engine *e)
{
    return e ? e->nodes.n : 0;
}

const char *rules_node_name(const struct rules_engine *e, uint32_t id)
{
    return e && id < e->nodes.n ? e->nodes.s[id] : "";
}

void rules_warn(struct rules_engine *e, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    for (uint32_t i = 0; i < e->nwarnings; i++)
        if (strcmp(e->warnings[i], text) == 0)
            return;
    if (array_grow((void **)&e->warnings, &e->warnings_cap, e->nwarnings + 1, sizeof(*e->warnings),
                   4) < 0)
        return;
    char *dup = strdup(text);
    if (dup)
        e->warnings[e->nwarnings++] = dup;
}

uint32_t rules_warning_count(const struct rules_engine *e)
{
    return e ? e->nwarnings : 0;
}

const char *rules_warning_at(const struct rules_engine *e, uint32_t i)
{
    return e && i < e->nwarnings ? e->warnings[i] : NULL;
}

/* ---- lifecycle -------------------------------------------------------------- */

int rules_engine_new(const struct rules_options *opts, const struct rules_run_info *run,
                     struct rules_engine **out, struct strbuf *err)
{
    *out = NULL;
    const char *list = opts->rules && *opts->rules ? opts->rules : "all";
    if (strcmp(list, "none") == 0)
        return 0;
    int all = strcmp(list, "all") == 0;
    if (!all && check_rule_list(list, err) < 0)
        return -EINVAL;
    if (opts->interval_ns < 0 || (opts->interval_ns && opts->interval_ns < 100000000LL)) {
        strbuf_addf(err, "--rule-interval must be at least 100ms");
        return -EINVAL;
    }
    struct rules_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->run = *run;
    snprintf(e->host, sizeof(e->host), "%s", run->host ? run->host : "");
    e->run.host = e->host;
    e->interval_ns = opts->interval_ns ? opts->interval_ns : RULES_DEFAULT_INTERVAL_NS;
    e->next_t0 = run->start_ns;
    uint32_t local;
    if (node_intern(e, "", 0, &local) < 0) /* RULES_LOCAL_NODE: the first */
        goto nomem;
    for (int k = 0; k < GPU_SEEN_KINDS; k++)
        e->gpu_first_ns[k] = INT64_MAX;
    e->rules = calloc(rule_def_count, sizeof(*e->rules));
    if (!e->rules)
        goto nomem;
    for (uint32_t i = 0; i < rule_def_count; i++) {
        const struct rule_def *d = rule_defs[i];
        if (!all && !rule_listed(list, d->name))
            continue;
        struct rule_inst *ri = &e->rules[e->nrules++];
        ri->def = d;
        for (uint32_t p = 0; p < d->nparams && p < RULES_MAX_PARAMS; p++)
            ri->param[p] = d->params[p].value;
        ri->result.rule = d->name;
        ri->result.status = RULE_WAITING;
        snprintf(ri->result.detail, sizeof(ri->result.detail), "no data yet");
        if (d->state_size && !(ri->state = calloc(1, d->state_size)))
            goto nomem;
    }
    for (const char *const *p = opts->params; p && *p; p++)
        if (apply_param(e, *p, err) < 0) {
            rules_engine_free(e);
            return -EINVAL;
        }
    *out = e;
    return 0;
nomem:
    rules_engine_free(e);
    return -ENOMEM;
}

void rules_engine_set_start(struct rules_engine *e, int64_t start_ns)
{
    if (!e)
        return;
    e->run.start_ns = start_ns;
    e->next_t0 = start_ns;
}

void rules_engine_free(struct rules_engine *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->nrules; i++) {
        if (e->rules[i].def->release && e->rules[i].state)
            e->rules[i].def->release(e->rules[i].state);
        free(e->rules[i].state);
        free(e->rules[i].result.report);
    }
    free(e->rules);
    for (uint32_t i = 0; i < e->nslots; i++) {
        free(e->slots[i].name);
        free(e->slots[i].labels);
        free(e->slots[i].ts);
        free(e->slots[i].v);
    }
    free(e->slots);
    for (uint32_t i = 0; i < e->nthreads; i++)
        free(e->threads[i].s);
    free(e->threads);
    free(e->procs);
    free(e->name_class);
    free(e->name_phase);
    for (uint32_t i = 0; i < e->nfindings; i++) {
        free(e->findings[i].evidence);
        free(e->findings[i].events);
    }
    free(e->findings);
    strtab_release(&e->nodes);
    free(e->win_nodes);
    free(e->node_mark);
    for (uint32_t i = 0; i < e->nwarnings; i++)
        free(e->warnings[i]);
    free(e->warnings);
    free(e->views);
    free(e->steps);
    free(e->train_steps);
    free(e->scratch);
    free(e->comm);
    free(e->pids_seen);
    free(e);
}

void rules_engine_on_finding(struct rules_engine *e, finding_fn *fn, void *arg)
{
    e->on_finding = fn;
    e->on_finding_arg = arg;
}

/* ---- input ------------------------------------------------------------------ */

static int metric_of(const char *name, const char *labels, enum rule_metric *out)
{
    for (size_t i = 0; i < ARRAY_SIZE(metric_names); i++)
        if (strcmp(metric_name(metric_names[i].catalog), name) == 0) {
            *out = metric_names[i].metric;
            int has_core = strstr(labels, "core=") != NULL;
            int has_pid = strstr(labels, "pid=") != NULL;
            if (*out == RM_CPU_UTIL && has_core)
                *out = RM_CPU_CORE;
            else if (*out == RM_PROC_CPU && has_pid)
                *out = RM_PROC_CPU_PID;
            else if (*out == RM_PROC_RUNQ_PID) /* per process only (Straggler) */
                return has_pid ? 0 : -1;
            else if (has_pid) /* per-process RSS, threads, GPU memory: not read */
                return -1;
            return 0;
        }
    return -1;
}

/* The value of key in "a=1,b=2", into out. */
static int label_value(const char *labels, const char *key, char *out, size_t cap)
{
    size_t len;
    const char *v = strlist_value(labels, key, &len);
    if (v)
        snprintf(out, cap, "%.*s", (int)len, v);
    else if (cap)
        out[0] = 0;
    return v != NULL;
}

static int keyed_by_gpu(enum rule_metric m)
{
    return m == RM_GPU_UTIL || m == RM_GPU_MEM_UTIL || m == RM_GPU_MEM_USED ||
           m == RM_GPU_MEM_TOTAL || m == RM_GPU_THROTTLE || m == RM_GPU_SM_CLOCK ||
           m == RM_GPU_MIG_MEM;
}

/* A GPU series the rules cannot place: they keep GPUs by their index, 0 to
 * RULES_MAX_GPU_INDEX per node. Said once, not dropped in silence. */
static int gpu_unjudged(struct rules_engine *e, enum rule_metric m, int64_t index, const char *name,
                        const char *labels)
{
    if (!keyed_by_gpu(m) || (index >= 0 && index <= RULES_MAX_GPU_INDEX))
        return 0;
    if (!e->gpu_warned) /* the first one names it: a warning per series would be a flood */
        rules_warn(e,
                   "the rules judge GPUs gpu=0 to gpu=%d of each node: %s{%s} and any other "
                   "GPU series outside them are left out",
                   RULES_MAX_GPU_INDEX, name, labels);
    e->gpu_warned = 1;
    return 1;
}

int rules_series(struct rules_engine *e, const char *name, const char *labels)
{
    enum rule_metric m;
    if (!labels)
        labels = "";
    if (metric_of(name, labels, &m) < 0)
        return -1;
    if (array_grow((void **)&e->slots, &e->slots_cap, e->nslots + 1, sizeof(*e->slots), 64) < 0)
        return -1;
    char idx[32];
    int64_t index = -1;
    if (label_value(labels, "core", idx, sizeof(idx)) ||
        label_value(labels, "gpu", idx, sizeof(idx)) ||
        label_value(labels, "pid", idx, sizeof(idx)))
        index = strtoll(idx, NULL, 10);
    if (gpu_unjudged(e, m, index, name, labels))
        return -1;
    size_t nlen = 0;
    const char *node = strlist_value(labels, "node", &nlen);
    uint32_t node_id;
    if (node_intern(e, node ? node : "", nlen, &node_id) < 0)
        return -1;
    struct slot *s = &e->slots[e->nslots];
    memset(s, 0, sizeof(*s));
    if (!(s->name = strdup(name)) || !(s->labels = strdup(labels))) {
        free(s->name);
        free(s->labels);
        return -1;
    }
    s->view.index = index;
    s->view.metric = m;
    s->view.name = s->name;
    s->view.labels = s->labels;
    s->view.node = e->nodes.s[node_id]; /* its own copy: nodes.s may move, it does not */
    s->view.node_id = node_id;
    s->last_ts = INT64_MIN;
    return (int)e->nslots++;
}

static int is_gpu_metric(enum rule_metric m)
{
    return m == RM_GPU_UTIL || m == RM_GPU_MEM_USED || m == RM_GPU_MIG_MEM;
}

/* The first finite GPU points of n in time order, by what they show. */
static void note_gpu_points(struct rules_engine *e, enum rule_metric m, const int64_t *ts_ns,
                            const double *v, uint32_t n)
{
    if (!is_gpu_metric(m))
        return;
    int kind = m == RM_GPU_UTIL ? GPU_UTIL : m == RM_GPU_MIG_MEM ? GPU_MIG : GPU_ANY;
    if (ts_ns[0] >= e->gpu_first_ns[kind])
        return; /* the usual case: seen already (and GPU_ANY is never later) */
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        if (ts_ns[i] < e->gpu_first_ns[GPU_ANY])
            e->gpu_first_ns[GPU_ANY] = ts_ns[i];
        if (ts_ns[i] < e->gpu_first_ns[kind])
            e->gpu_first_ns[kind] = ts_ns[i];
        return; /* in time order: the first finite one is the earliest */
    }
}

void rules_put(struct rules_engine *e, int slot, int64_t ts_ns, double v)
{
    if (!e || slot < 0 || (uint32_t)slot >= e->nslots)
        return;
    struct slot *s = &e->slots[slot];
    if (ts_ns <= s->last_ts)
        return; /* out of order: the store refuses it too */
    s->last_ts = ts_ns;
    if (ts_ns < e->next_t0) { /* its window is closed: later than the grace */
        e->late++;
        return;
    }
    if (s->n >= RULES_MAX_PENDING) {
        e->dropped++;
        return;
    }
    if (s->n == s->cap) {
        uint32_t cap = s->cap;
        if (array_grow((void **)&s->ts, &cap, s->n + 1, sizeof(*s->ts), 256) < 0 ||
            array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v), 256) < 0) {
            e->dropped++;
            return;
        }
    }
    s->ts[s->n] = ts_ns;
    s->v[s->n++] = v;
    note_gpu_points(e, s->view.metric, &ts_ns, &v, 1);
}

void rules_put_many(struct rules_engine *e, int slot, const int64_t *ts_ns, const double *v,
                    uint32_t n)
{
    if (!e || slot < 0 || (uint32_t)slot >= e->nslots || !n)
        return;
    struct slot *s = &e->slots[slot];
    /* the fast path: in order, after the last point, in an open window,
     * room for all; anything else goes point by point */
    int64_t floor_ns = s->last_ts >= e->next_t0 ? s->last_ts : e->next_t0 - 1;
    int ordered = ts_ns[0] > floor_ns;
    for (uint32_t i = 1; i < n && ordered; i++)
        ordered = ts_ns[i] > ts_ns[i - 1];
    if (!ordered || s->n + n > RULES_MAX_PENDING) {
        for (uint32_t i = 0; i < n; i++)
            rules_put(e, slot, ts_ns[i], v[i]);
        return;
    }
    if (s->n + n > s->cap) {
        uint32_t cap = s->cap;
        if (array_grow((void **)&s->ts, &cap, s->n + n, sizeof(*s->ts), 256) < 0 ||
            array_grow((void **)&s->v, &s->cap, s->n + n, sizeof(*s->v), 256) < 0) {
            e->dropped += n;
            return;
        }
    }
    memcpy(s->ts + s->n, ts_ns, n * sizeof(*ts_ns));
    memcpy(s->v + s->n, v, n * sizeof(*v));
    s->n += n;
    s->last_ts = ts_ns[n - 1];
    note_gpu_points(e, s->view.metric, ts_ns, v, n);
}

static int classify(struct rules_engine *e, uint32_t id, const char *name, int8_t *phase)
{
    if (id && id < e->names_cap && e->name_class[id] != SC_UNKNOWN) {
        *phase = e->name_phase[id];
        return e->name_class[id];
    }
    int cls = SC_IGNORE;
    int p = -1;
    if (name) {
        if ((p = steps_mode_of(name)) >= 0) /* "step", "step:eval", ...: phase holds the mode */
            cls = SC_STEP;
        else if (strcmp(name, "dataloader.worker") == 0)
            cls = SC_WORKER;
        else if ((p = steps_phase_of(name)) >= 0)
            cls = SC_PHASE;
    }
    *phase = (int8_t)p;
    if (id && id < (1u << 24)) {
        uint32_t cap = e->names_cap;
        if (id >= cap) {
            uint32_t ncap = cap ? cap : 256;
            while (ncap <= id)
                ncap *= 2;
            uint8_t *c = realloc(e->name_class, ncap);
            if (!c)
                return cls;
            e->name_class = c;
            int8_t *ph = realloc(e->name_phase, ncap);
            if (!ph)
                return cls;
            e->name_phase = ph;
            memset(e->name_class + cap, 0, ncap - cap);
            memset(e->name_phase + cap, -1, ncap - cap);
            e->names_cap = ncap;
        }
        e->name_class[id] = (uint8_t)cls;
        e->name_phase[id] = (int8_t)p;
    }
    return cls;
}

static struct thread_buf *thread_of(struct rules_engine *e, int64_t pid, int64_t tid)
{
    for (uint32_t i = e->nthreads; i-- > 0;)
        if (e->threads[i].pid == pid && e->threads[i].tid == tid)
            return &e->threads[i];
    if (array_grow((void **)&e->threads, &e->threads_cap, e->nthreads + 1, sizeof(*e->threads), 8) <
        0)
        return NULL;
    struct thread_buf *t = &e->threads[e->nthreads++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    t->tid = tid;
    t->last_step_end = INT64_MIN;
    return t;
}

void rules_put_span(struct rules_engine *e, int64_t pid, int64_t tid, int64_t start_ns,
                    int64_t end_ns, uint32_t name_id, const char *name)
{
    if (!e || end_ns < start_ns)
        return;
    int8_t phase;
    int cls = classify(e, name_id, name, &phase);
    if (cls == SC_IGNORE)
        return;
    if (end_ns < e->next_t0) {
        e->late++;
        return;
    }
    struct thread_buf *t = thread_of(e, pid, tid);
    if (!t || t->n >= RULES_MAX_PENDING ||
        array_grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s), 64) < 0) {
        e->dropped++;
        return;
    }
    t->s[t->n++] = (struct span_rec){start_ns, end_ns, (uint8_t)cls, phase};
}

/* The attributes of process pid, made (rank and worker unknown, the local
 * node) when new; NULL without memory. */
static struct proc_attr *proc_get(struct rules_engine *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return &e->procs[i];
    if (array_grow((void **)&e->procs, &e->procs_cap, e->nprocs + 1, sizeof(*e->procs), 8) < 0)
        return NULL;
    e->procs[e->nprocs] = (struct proc_attr){pid, -1, -1, RULES_LOCAL_NODE};
    return &e->procs[e->nprocs++];
}

void rules_put_process(struct rules_engine *e, int64_t pid, int64_t rank, int64_t worker_id)
{
    struct proc_attr *p = e ? proc_get(e, pid) : NULL;
    if (p) {
        p->rank = rank;
        p->worker_id = worker_id;
    }
}

void rules_put_process_node(struct rules_engine *e, int64_t pid, const char *node)
{
    uint32_t id;
    struct proc_attr *p = e ? proc_get(e, pid) : NULL;
    if (p && node && node_intern(e, node, strlen(node), &id) == 0)
        p->node_id = id;
}

static const struct proc_attr *proc_find(const struct rules_engine *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return &e->procs[i];
    return NULL;
}

/* ---- a window's steps ------------------------------------------------------- */

static int add_step(struct rules_engine *e, const struct thread_buf *t, const struct span_rec *st)
{
    if (array_grow((void **)&e->steps, &e->steps_cap, e->nsteps + 1, sizeof(*e->steps), 64) < 0)
        return -ENOMEM;
    struct rule_step *s = &e->steps[e->nsteps++];
    memset(s, 0, sizeof(*s));
    const struct proc_attr *p = proc_find(e, t->pid);
    s->pid = t->pid;
    s->tid = t->tid;
    s->rank = p ? p->rank : -1;
    s->node_id = p ? p->node_id : RULES_LOCAL_NODE;
    s->mode = st->phase;
    s->start_ns = st->start;
    s->end_ns = st->end;
    return 0;
}

static int cmp_step_end(const void *a, const void *b)
{
    const struct rule_step *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Phases of the steps of thread t that end in [t0, t1): from its phase spans
 * that ended before t1. */
static int thread_steps(struct rules_engine *e, struct thread_buf *t, int64_t t0, int64_t t1)
{
    uint32_t first = e->nsteps;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct span_rec *r = &t->s[i];
        if (r->cls == SC_STEP && r->end >= t0 && r->end < t1 && add_step(e, t, r) < 0)
            return -ENOMEM;
    }
    uint32_t nsteps = e->nsteps - first;
    if (!nsteps)
        return 0;
    t->has_steps = 1;
    int64_t earliest = INT64_MAX;
    for (uint32_t i = first; i < e->nsteps; i++)
        if (e->steps[i].start_ns < earliest)
            earliest = e->steps[i].start_ns;
    uint32_t nph = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct span_rec *r = &t->s[i];
        if (r->cls != SC_PHASE || r->end >= t1 || r->end <= earliest)
            continue;
        if (array_grow((void **)&e->scratch, &e->scratch_cap, nph + 1, sizeof(*e->scratch), 64) < 0)
            return -ENOMEM;
        e->scratch[nph++] = (struct phase_span){r->start, r->end, r->phase, 0};
    }
    if (nph) /* steps without phases: the scratch may still be NULL */
        qsort(e->scratch, nph, sizeof(*e->scratch), steps_cmp_span);
    for (uint32_t i = first; i < e->nsteps; i++) {
        struct rule_step *s = &e->steps[i];
        /* spans overlapping the step: phases on a thread are few per step,
         * so a scan from a binary-searched start is enough */
        uint32_t lo = 0, hi = nph;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (e->scratch[mid].start < s->start_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint32_t from = lo;
        while (from > 0 && lo - from < 64 && e->scratch[from - 1].end > s->start_ns)
            from--;
        uint32_t last = lo;
        while (last < nph && e->scratch[last].start < s->end_ns)
            last++;
        steps_phase_times(e->scratch + from, last - from, s->start_ns, s->end_ns, s->phase_ns);
        if (s->end_ns > t->last_step_end)
            t->last_step_end = s->end_ns;
    }
    return 0;
}

struct comm_span {
    int64_t start, end, pid;
};

static int cmp_comm(const void *a, const void *b)
{
    const struct comm_span *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->start > y->start) - (x->start < y->start);
}

/* comm:* spans of every thread of each step's process, where they overlap
 * it, counted once where they overlap each other: DDP's bucket all-reduces
 * are in flight together (one span each, launch to completion), and their
 * sum made a step of 100 ms with two buckets over 10-50 and 20-60 ms spend
 * 80 ms communicating, not 50. Most runs have none: one pass finds out
 * before any per-step work. */
static void steps_comm_all(struct rules_engine *e, int64_t t1)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < e->nthreads; k++) {
        const struct thread_buf *t = &e->threads[k];
        for (uint32_t j = 0; j < t->n; j++) {
            const struct span_rec *r = &t->s[j];
            if (r->cls != SC_PHASE || r->phase != PHASE_COMM || r->end >= t1)
                continue;
            if (array_grow((void **)&e->comm, &e->comm_cap, n + 1, sizeof(*e->comm), 64) < 0)
                return;
            e->comm[n++] = (struct comm_span){r->start, r->end, t->pid};
        }
    }
    if (n > 1)
        qsort(e->comm, n, sizeof(*e->comm), cmp_comm);
    for (uint32_t i = 0; n && i < e->nsteps; i++) {
        struct rule_step *s = &e->steps[i];
        int64_t reach = s->start_ns; /* the union so far covers the step up to here */
        /* from the first span of the step's process: a scan from the first
         * of all went over every rank's spans for every step, 650 M of them
         * a window with 256 ranks */
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (e->comm[mid].pid < s->pid)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (uint32_t j = lo; j < n && e->comm[j].pid == s->pid && reach < s->end_ns; j++) {
            const struct comm_span *c = &e->comm[j];
            if (c->start >= s->end_ns)
                break; /* by start: none after it overlaps the step */
            int64_t a = c->start > reach ? c->start : reach;
            int64_t b = c->end < s->end_ns ? c->end : s->end_ns;
            if (b > a) {
                s->comm_all_ns += (double)(b - a);
                reach = b;
            }
        }
    }
}

/* A forward or backward span that ended in the window, step or no step. */
static void count_fwd_bwd(struct rule_window *w, const struct span_rec *r)
{
    if (r->phase == PHASE_FORWARD)
        w->forward_spans++;
    else if (r->phase == PHASE_BACKWARD)
        w->backward_spans++;
    else
        return;
    if (r->start < w->first_fwd_bwd_ns)
        w->first_fwd_bwd_ns = r->start;
}

/* The spans that ended in the window and are not steps: data-loader
 * workers, data waits, forward and backward. */
static void count_spans(struct rules_engine *e, struct rule_window *w)
{
    e->npids = 0;
    w->first_fwd_bwd_ns = INT64_MAX;
    for (uint32_t k = 0; k < e->nthreads; k++) {
        const struct thread_buf *t = &e->threads[k];
        for (uint32_t j = 0; j < t->n; j++) {
            const struct span_rec *r = &t->s[j];
            if (r->end < w->t0 || r->end >= w->t1)
                continue;
            if (r->cls == SC_PHASE && r->phase == PHASE_DATA)
                w->data_spans++;
            if (r->cls == SC_PHASE)
                count_fwd_bwd(w, r);
            if (r->cls != SC_WORKER)
                continue;
            uint32_t p = 0;
            while (p < e->npids && e->pids_seen[p] != t->pid)
                p++;
            if (p == e->npids && array_grow((void **)&e->pids_seen, &e->pids_cap, e->npids + 1,
                                            sizeof(*e->pids_seen), 16) == 0)
                e->pids_seen[e->npids++] = t->pid;
        }
    }
    w->workers = e->npids;
}

/* Spans no future window needs: those of finished steps, phases that ended
 * before their thread's last step did (steps on a thread follow each other),
 * and anything older than RULES_SPAN_RETAIN_NS. */
static void prune_spans(struct rules_engine *e, int64_t t1)
{
    for (uint32_t k = 0; k < e->nthreads; k++) {
        struct thread_buf *t = &e->threads[k];
        int64_t before = t1 - RULES_SPAN_RETAIN_NS;
        if (t->has_steps && t->last_step_end > before)
            before = t->last_step_end;
        uint32_t out = 0;
        for (uint32_t j = 0; j < t->n; j++) {
            const struct span_rec *r = &t->s[j];
            int done = r->end < t1 && (r->cls == SC_STEP || r->cls == SC_WORKER);
            int old = r->end <= before && !(r->cls == SC_PHASE && r->phase == PHASE_COMM &&
                                            r->end > t1 - RULES_SPAN_RETAIN_NS);
            if (!done && !old)
                t->s[out++] = *r;
        }
        t->n = out;
    }
}

/* ---- windows ------------------------------------------------------------------ */

static void series_views(struct rules_engine *e, struct rule_window *w)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->nslots; i++) {
        struct slot *s = &e->slots[i];
        uint32_t k = 0;
        while (k < s->n && s->ts[k] < w->t1)
            k++;
        if (!k)
            continue;
        s->view.ts = s->ts;
        s->view.v = s->v;
        s->view.n = k;
        e->views[n++] = s->view;
    }
    w->series = e->views;
    w->nseries = n;
}

/* The nodes with a cpu.util series in the window, each once, in order of
 * their ids. */
static void window_node_list(struct rules_engine *e, struct rule_window *w)
{
    w->node_count = e->nodes.n;
    w->nnodes = 0;
    if (e->nodes.n > e->win_nodes_cap) {
        uint32_t *ids = realloc(e->win_nodes, e->nodes.n * sizeof(*ids));
        if (ids)
            e->win_nodes = ids;
        uint8_t *mark = realloc(e->node_mark, e->nodes.n);
        if (mark)
            e->node_mark = mark;
        if (!ids || !mark)
            return;
        e->win_nodes_cap = e->nodes.n;
    }
    memset(e->node_mark, 0, e->nodes.n);
    for (uint32_t i = 0; i < w->nseries; i++)
        if (w->series[i].metric == RM_CPU_UTIL)
            e->node_mark[w->series[i].node_id] = 1;
    for (uint32_t id = 0; id < e->nodes.n; id++)
        if (e->node_mark[id])
            e->win_nodes[w->nnodes++] = id;
    w->nodes = e->win_nodes;
}

/* w's training steps: those of e->steps (every mode, by end time) whose
 * mode is training, kept in that order. */
static void window_train_steps(struct rules_engine *e, struct rule_window *w)
{
    w->all_steps = e->steps;
    w->nall_steps = e->nsteps;
    w->steps = e->steps;
    w->nsteps = e->nsteps;
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->nsteps; i++)
        n += step_mode_is_training(e->steps[i].mode);
    if (n == e->nsteps) /* the usual run: training steps only, no copy */
        return;
    if (array_grow((void **)&e->train_steps, &e->train_cap, n + 1, sizeof(*e->train_steps), 64) <
        0) {
        w->nsteps = 0; /* no memory: judge no training rather than count eval steps */
        return;
    }
    n = 0;
    for (uint32_t i = 0; i < e->nsteps; i++)
        if (step_mode_is_training(e->steps[i].mode))
            e->train_steps[n++] = e->steps[i];
    w->steps = e->train_steps;
    w->nsteps = n;
}

static void drop_judged_points(struct rules_engine *e, int64_t t1)
{
    for (uint32_t i = 0; i < e->nslots; i++) {
        struct slot *s = &e->slots[i];
        uint32_t k = 0;
        while (k < s->n && s->ts[k] < t1)
            k++;
        if (!k)
            continue;
        memmove(s->ts, s->ts + k, (s->n - k) * sizeof(*s->ts));
        memmove(s->v, s->v + k, (s->n - k) * sizeof(*s->v));
        s->n -= k;
    }
}

static void run_rules(struct rules_engine *e, const struct rule_window *w)
{
    for (uint32_t i = 0; i < e->nrules; i++) {
        struct rule_inst *ri = &e->rules[i];
        struct rule_ctx c = {e, ri->def, ri->param, &ri->result};
        if (!w->final)
            ri->def->window(&c, w, ri->state);
        else if (ri->def->finish)
            ri->def->finish(&c, w, ri->state);
    }
}

static void close_window(struct rules_engine *e, int64_t t0, int64_t t1)
{
    struct rule_window w = {.t0 = t0, .t1 = t1};
    struct rule_series *v = realloc(e->views, (e->nslots + 1) * sizeof(*v));
    if (!v)
        return;
    e->views = v;
    /* by timestamps, as everything a window sees: live, a GPU's first
     * points may arrive within the grace, before the window they follow
     * closes, and the GPU rules would start counting a window earlier
     * than offline */
    e->judged_t1 = t1;
    series_views(e, &w);
    e->nsteps = 0;
    for (uint32_t k = 0; k < e->nthreads; k++)
        thread_steps(e, &e->threads[k], t0, t1);
    steps_comm_all(e, t1);
    if (e->nsteps) /* e->steps is NULL until a step is seen: qsort(NULL, 0) is undefined */
        qsort(e->steps, e->nsteps, sizeof(*e->steps), cmp_step_end);
    window_train_steps(e, &w);
    window_node_list(e, &w);
    count_spans(e, &w);
    run_rules(e, &w);
    drop_judged_points(e, t1);
    prune_spans(e, t1);
}

static int close_windows(struct rules_engine *e, int64_t until_ns)
{
    int n = 0;
    while (e->next_t0 + e->interval_ns <= until_ns) {
        close_window(e, e->next_t0, e->next_t0 + e->interval_ns);
        e->next_t0 += e->interval_ns;
        n++;
    }
    return n;
}

int rules_tick(struct rules_engine *e, int64_t now_ns)
{
    if (!e || e->finished)
        return 0;
    return close_windows(e, now_ns - RULES_GRACE_NS);
}

int rules_close_until(struct rules_engine *e, int64_t end_ns)
{
    if (!e || e->finished)
        return 0;
    return close_windows(e, end_ns);
}

void rules_finish(struct rules_engine *e, int64_t end_ns)
{
    if (!e || e->finished)
        return;
    close_windows(e, end_ns);
    if (end_ns >= e->next_t0) /* the last, partial window: everything up to the end */
        close_window(e, e->next_t0, end_ns + 1);
    e->next_t0 = end_ns + 1;
    struct rule_window w = {.t0 = e->run.start_ns,
                            .t1 = end_ns + 1,
                            .final = 1,
                            .node_count = e->nodes.n,
                            .first_fwd_bwd_ns = INT64_MAX};
    run_rules(e, &w);
    e->finished = 1;
}

/* ---- findings ------------------------------------------------------------------ */

/*
 * A finding is one episode of a rule for one scope: windows that fire within
 * EPISODE_GAP_WINDOWS of each other extend it; a firing after a longer quiet
 * spell is a new finding (announced again), up to EPISODES_MAX per rule and
 * scope, after which the last one grows. Without this a leak at hour 19
 * would be reported from the 50 s of start-up growth that fired first.
 */
#define EPISODE_GAP_WINDOWS 3
#define EPISODES_MAX        16

struct episode {
    struct finding *last;  /* NULL: none yet */
    int64_t before_end_ns; /* end of the episode before it; INT64_MIN: none */
    uint32_t count;
};

static struct episode episode_of(struct rules_engine *e, const char *rule, const char *scope)
{
    struct episode ep = {NULL, INT64_MIN, 0};
    for (uint32_t i = 0; i < e->nfindings; i++)
        if (strcmp(e->findings[i].rule, rule) == 0 && strcmp(e->findings[i].scope, scope) == 0) {
            if (ep.last)
                ep.before_end_ns = ep.last->end_ns;
            ep.last = &e->findings[i];
            ep.count++;
        }
    return ep;
}

static int episode_continues(const struct rules_engine *e, const struct episode *ep, int64_t t0)
{
    int64_t gap = EPISODE_GAP_WINDOWS * e->interval_ns;
    return ep->count >= EPISODES_MAX || t0 <= ep->last->end_ns + gap;
}

static void episode_extend(struct finding *f, int64_t floor_ns, int64_t t0, int64_t t1,
                           const char *ev, const char *events)
{
    /* a whole-run verdict starts at the run's start: an episode does not
     * reach back over the one before it */
    if (t0 < floor_ns)
        t0 = floor_ns;
    if (t0 < f->start_ns)
        f->start_ns = t0;
    if (t1 > f->end_ns)
        f->end_ns = t1;
    f->windows++;
    char *dup = strdup(ev);
    if (dup) {
        free(f->evidence);
        f->evidence = dup;
    }
    if (events && (dup = strdup(events))) {
        free(f->events);
        f->events = dup;
    }
}

void rule_fire_range(struct rule_ctx *c, int64_t t0, int64_t t1, const char *scope,
                     const char *events, const char *fmt, ...)
{
    struct rules_engine *e = c->eng;
    char ev[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev, sizeof(ev), fmt, ap);
    va_end(ap);
    c->result->status = RULE_FIRED;
    c->result->violations++;
    snprintf(c->result->detail, sizeof(c->result->detail), "%s: %.200s", scope, ev);
    struct episode ep = episode_of(e, c->def->name, scope);
    if (ep.last && episode_continues(e, &ep, t0)) {
        episode_extend(ep.last, ep.before_end_ns, t0, t1, ev, events);
        return;
    }
    if (array_grow((void **)&e->findings, &e->findings_cap, e->nfindings + 1, sizeof(*e->findings),
                   8) < 0)
        return;
    struct finding *f = &e->findings[e->nfindings++];
    memset(f, 0, sizeof(*f));
    snprintf(f->rule, sizeof(f->rule), "%s", c->def->name);
    snprintf(f->scope, sizeof(f->scope), "%s", scope);
    f->severity = c->def->severity;
    f->start_ns = t0;
    f->end_ns = t1;
    f->windows = 1;
    f->evidence = strdup(ev);
    f->events = events ? strdup(events) : NULL;
    f->recommendation = c->def->recommendation;
    if (e->on_finding)
        e->on_finding(f, e->on_finding_arg);
}

void rule_status(struct rule_ctx *c, enum rule_status st, const char *fmt, ...)
{
    if (c->result->status == RULE_FIRED && st != RULE_REPORT)
        return; /* a rule that fired keeps saying so; its detail is the finding */
    c->result->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->result->detail, sizeof(c->result->detail), fmt, ap);
    va_end(ap);
}

void rule_set_report(struct rule_ctx *c, char *json)
{
    free(c->result->report);
    c->result->report = json;
}

const struct finding *rules_findings(const struct rules_engine *e, uint32_t *n)
{
    *n = e ? e->nfindings : 0;
    return e ? e->findings : NULL;
}

const struct rule_result *rules_result_at(const struct rules_engine *e, uint32_t i)
{
    return i < e->nrules ? &e->rules[i].result : NULL;
}

uint32_t rules_count(const struct rules_engine *e)
{
    return e ? e->nrules : 0;
}

const double *rules_param_values(const struct rules_engine *e, uint32_t i)
{
    return e->rules[i].param;
}

const struct rule_def *rules_def_at(const struct rules_engine *e, uint32_t i)
{
    return e->rules[i].def;
}

int64_t rules_interval_ns(const struct rules_engine *e)
{
    return e ? e->interval_ns : 0;
}

uint64_t rules_dropped(const struct rules_engine *e)
{
    return e ? e->dropped + e->late : 0;
}

static int gpu_seen(const struct rules_engine *e, enum gpu_kind k)
{
    return e->gpu_first_ns[k] < e->judged_t1;
}

int rules_have_gpu(const struct rules_engine *e)
{
    return gpu_seen(e, GPU_ANY);
}

const char *rules_gpu_util_missing(const struct rules_engine *e)
{
    if (!gpu_seen(e, GPU_ANY))
        return "no GPU";
    if (gpu_seen(e, GPU_UTIL))
        return NULL;
    return gpu_seen(e, GPU_MIG)
               ? "no GPU utilization: NVML does not report it for a GPU in MIG mode"
               : "no GPU utilization: the driver did not report it";
}

int rule_na_without_gpu_util(struct rule_ctx *c)
{
    const char *missing = rules_gpu_util_missing(c->eng);
    if (missing)
        rule_status(c, RULE_NA, "%s", missing);
    return missing != NULL;
}

const struct rules_run_info *rules_run(const struct rules_engine *e)
{
    return &e->run;
}
