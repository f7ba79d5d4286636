/*
 * A job read as one run of many nodes (store/job.h says what each query
 * gives). Queries of the job's id gather its nodes' rows; every other call,
 * and every query of another run, passes through to the store underneath.
 * Series ids, block reads and writes are the store's own, so a command
 * that reads a series by id, or saves the rules' findings for the job,
 * needs nothing from here. Event blocks come node by node, each node's in
 * time order: readers gather events by thread, so that is enough.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/err.h"
#include "common/label.h"
#include "store/job.h"

struct job_view {
    struct store base;
    struct store *inner;
    int owns; /* inner closes with the view */
    char job_id[RUN_ID_LEN + 1];
    struct run_list nodes;
};

static struct job_view *view_of(struct store *base)
{
    return (struct job_view *)base;
}

/* rc, with the store's reason where callers look for it */
static int synced(struct job_view *v, int rc)
{
    if (rc < 0) {
        strbuf_reset(&v->base.err);
        strbuf_add(&v->base.err, v->inner->err.buf, v->inner->err.len);
    }
    return rc;
}

static int is_job(const struct job_view *v, const char *run_id)
{
    return run_id && strcmp(run_id, v->job_id) == 0;
}

/* A node's pid (or tid) in the view: nodes share no number. */
static int64_t view_pid(uint32_t node, int64_t pid)
{
    return pid > 0 ? ((int64_t)node << JOB_PID_SHIFT) + pid : pid;
}

/* ---- passed through ------------------------------------------------------ */

#define PASS(op, params, args)                                                                     \
    static int view_##op params                                                                    \
    {                                                                                              \
        struct job_view *v = view_of(base);                                                        \
        return synced(v, v->inner->ops->op args);                                                  \
    }

PASS(begin, (struct store * base), (v->inner))
PASS(commit, (struct store * base), (v->inner))
PASS(rollback, (struct store * base), (v->inner))
PASS(run_insert, (struct store * base, const struct run_record *r), (v->inner, r))
PASS(run_update, (struct store * base, const struct run_record *r), (v->inner, r))
PASS(series_insert,
     (struct store * base, const char *run_id, const char *name, const char *labels,
      const char *unit, const char *meta, int64_t *out_id),
     (v->inner, run_id, name, labels, unit, meta, out_id))
PASS(series_update_meta, (struct store * base, int64_t id, const char *meta), (v->inner, id, meta))
PASS(block_upsert,
     (struct store * base, int64_t id, const struct block_stats *st, const void *data, size_t len),
     (v->inner, id, st, data, len))
PASS(blocks_put, (struct store * base, const struct block_put *blocks, size_t n),
     (v->inner, blocks, n))
PASS(runs_query, (struct store * base, const char *experiment, run_fn *fn, void *arg),
     (v->inner, experiment, fn, arg))
PASS(blocks_query, (struct store * base, int64_t id, block_fn *fn, void *arg),
     (v->inner, id, fn, arg))
PASS(run_delete, (struct store * base, const char *run_id), (v->inner, run_id))
PASS(event_name_insert, (struct store * base, const char *run_id, int64_t id, const char *name),
     (v->inner, run_id, id, name))
PASS(process_upsert, (struct store * base, const char *run_id, const struct process_record *p),
     (v->inner, run_id, p))
PASS(event_block_insert,
     (struct store * base, const char *run_id, const struct event_block_record *b),
     (v->inner, run_id, b))
PASS(rules_clear, (struct store * base, const char *run_id), (v->inner, run_id))
PASS(rule_config_put, (struct store * base, const char *run_id, const struct rule_config_record *c),
     (v->inner, run_id, c))
PASS(rule_result_insert,
     (struct store * base, const char *run_id, const struct rule_result_record *r),
     (v->inner, run_id, r))
PASS(finding_insert,
     (struct store * base, const char *run_id, int64_t seq, const struct finding_record *f),
     (v->inner, run_id, seq, f))
PASS(rule_config_query, (struct store * base, const char *run_id, rule_config_fn *fn, void *arg),
     (v->inner, run_id, fn, arg))
PASS(rule_results_query, (struct store * base, const char *run_id, rule_result_fn *fn, void *arg),
     (v->inner, run_id, fn, arg))
PASS(run_text_put, (struct store * base, const char *run_id, const struct run_text_record *t),
     (v->inner, run_id, t))
PASS(run_attrs_put,
     (struct store * base, const char *run_id, const char *kind, const struct kv_list *l),
     (v->inner, run_id, kind, l))
PASS(blocks_range_query,
     (struct store * base, int64_t id, int64_t from, int64_t to, block_want_fn *want, block_fn *fn,
      void *arg),
     (v->inner, id, from, to, want, fn, arg))
PASS(runs_where, (struct store * base, enum run_key key, const char *value, run_fn *fn, void *arg),
     (v->inner, key, value, fn, arg))
PASS(join_lock, (struct store * base, const char *key), (v->inner, key))
PASS(clock_ns, (struct store * base, int64_t *out), (v->inner, out))
PASS(try_lead, (struct store * base, const char *key), (v->inner, key))
PASS(campaign_put, (struct store * base, const struct campaign_record *c), (v->inner, c))
PASS(campaign_get, (struct store * base, const char *name, campaign_fn *fn, void *arg),
     (v->inner, name, fn, arg))
PASS(campaigns_query, (struct store * base, campaign_fn *fn, void *arg), (v->inner, fn, arg))
PASS(campaign_delete, (struct store * base, const char *name), (v->inner, name))
/* Python samples: a job's run has none of its own, and each node's blocks
 * number their frames apart, so a caller reads them node by node. */
PASS(py_block_put, (struct store * base, const char *run_id, const struct py_block_record *b),
     (v->inner, run_id, b))
PASS(py_blocks_query,
     (struct store * base, const char *run_id, int64_t from_ns, int64_t to_ns, py_block_fn *fn,
      void *arg),
     (v->inner, run_id, from_ns, to_ns, fn, arg))

/* ---- series: each node's, node=NAME among the labels ---------------------- */

struct view_series {
    struct series_record rec;
    char *name, *labels, *unit, *meta;
};

struct series_gather {
    struct view_series *items;
    uint32_t n, cap;
    const char *node;
    uint32_t index; /* the node's */
    int failed;
};

/* labels with node=NAME, and pid=P as the view numbers the node's pids */
static int view_labels(const struct series_gather *g, const char *labels, struct strbuf *out)
{
    struct strbuf rest, pid, with_node;
    strbuf_init(&rest);
    strbuf_init(&pid);
    strbuf_init(&with_node);
    int rc;
    if (labels_take(labels, "pid", &rest, &pid)) {
        char num[32];
        snprintf(num, sizeof(num), "%lld",
                 (long long)view_pid(g->index, strtoll(pid.buf, NULL, 10)));
        rc = labels_insert(rest.buf, "node", g->node, &with_node);
        if (rc == 0)
            rc = labels_insert(with_node.buf, "pid", num, out);
    } else {
        rc = labels_insert(labels, "node", g->node, out);
    }
    strbuf_release(&rest);
    strbuf_release(&pid);
    strbuf_release(&with_node);
    return rc;
}

static char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;
    *failed |= s && !d;
    return d;
}

static int gather_series(const struct series_record *r, void *arg)
{
    struct series_gather *g = arg;
    if (array_grow((void **)&g->items, &g->cap, g->n + 1, sizeof(*g->items), 64) < 0)
        return -ENOMEM;
    struct view_series *s = &g->items[g->n++];
    struct strbuf labels;
    strbuf_init(&labels);
    int failed = view_labels(g, r->labels, &labels) < 0;
    s->rec = *r;
    s->labels = strbuf_detach(&labels);
    s->name = dup_or_null(r->name, &failed);
    s->unit = dup_or_null(r->unit, &failed);
    s->meta = dup_or_null(r->meta, &failed);
    return failed ? -ENOMEM : 0;
}

static int series_order(const void *a, const void *b)
{
    const struct view_series *x = a, *y = b;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    return c ? c : strverscmp(x->labels ? x->labels : "", y->labels ? y->labels : "");
}

static void series_gather_release(struct series_gather *g)
{
    for (uint32_t i = 0; i < g->n; i++) {
        free(g->items[i].name);
        free(g->items[i].labels);
        free(g->items[i].unit);
        free(g->items[i].meta);
    }
    free(g->items);
}

static int view_series_query(struct store *base, const char *run_id, series_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    if (!is_job(v, run_id))
        return synced(v, v->inner->ops->series_query(v->inner, run_id, fn, arg));
    struct series_gather g = {0};
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++) {
        g.node = v->nodes.items[i].node ? v->nodes.items[i].node : "";
        g.index = i;
        rc = synced(v,
                    v->inner->ops->series_query(v->inner, v->nodes.items[i].id, gather_series, &g));
    }
    if (rc == 0 && g.n > 1)
        qsort(g.items, g.n, sizeof(*g.items), series_order);
    for (uint32_t i = 0; rc == 0 && i < g.n; i++) {
        struct series_record r = g.items[i].rec;
        r.run_id = v->job_id;
        r.name = g.items[i].name;
        r.labels = g.items[i].labels;
        r.unit = g.items[i].unit;
        r.meta = g.items[i].meta;
        rc = fn(&r, arg);
    }
    series_gather_release(&g);
    return rc < 0 ? rc : 0;
}

/* The node a node=NAME label (as written, escaped) names, or -1. */
static int node_named(const struct job_view *v, const struct strbuf *escaped)
{
    struct strbuf name;
    strbuf_init(&name);
    label_unescape(&name, escaped->buf, escaped->len);
    int found = -1;
    for (uint32_t i = 0; found < 0 && i < v->nodes.n; i++)
        if (v->nodes.items[i].node && strcmp(v->nodes.items[i].node, name.buf) == 0)
            found = (int)i;
    strbuf_release(&name);
    return found;
}

struct series_found {
    series_fn *fn;
    void *arg;
    const char *run_id, *labels;
};

static int found_series(const struct series_record *r, void *arg)
{
    struct series_found *f = arg;
    struct series_record out = *r;
    out.run_id = f->run_id;
    out.labels = f->labels;
    return f->fn(&out, f->arg);
}

/* A node's labels from the view's (node=NAME taken out, pid=P as the node
 * numbers it): the node's index, or -1 when labels name no node of the job. */
static int node_labels(const struct job_view *v, const char *labels, struct strbuf *out)
{
    struct strbuf rest, node, pid;
    strbuf_init(&rest);
    strbuf_init(&node);
    strbuf_init(&pid);
    int at = labels_take(labels, "node", &rest, &node) ? node_named(v, &node) : -1;
    if (at >= 0 && labels_take(rest.buf, "pid", out, &pid)) {
        long long p = strtoll(pid.buf, NULL, 10) - ((long long)at << JOB_PID_SHIFT);
        char num[32];
        snprintf(num, sizeof(num), "%lld", p);
        struct strbuf others;
        strbuf_init(&others);
        strbuf_add(&others, out->buf, out->len);
        strbuf_reset(out);
        if (labels_insert(others.buf, "pid", num, out) < 0)
            at = -1;
        strbuf_release(&others);
    } else if (at >= 0) {
        strbuf_add(out, rest.buf, rest.len);
    }
    strbuf_release(&rest);
    strbuf_release(&node);
    strbuf_release(&pid);
    return at;
}

static int view_series_find(struct store *base, const char *run_id, const char *name,
                            const char *labels, series_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    if (!is_job(v, run_id))
        return synced(v, v->inner->ops->series_find(v->inner, run_id, name, labels, fn, arg));
    struct strbuf own;
    strbuf_init(&own);
    int at = node_labels(v, labels, &own);
    int rc = -STROBE_ENOTFOUND;
    if (at >= 0) {
        struct series_found f = {fn, arg, v->job_id, labels};
        rc = synced(v, v->inner->ops->series_find(v->inner, v->nodes.items[at].id, name, own.buf,
                                                  found_series, &f));
    }
    strbuf_release(&own);
    return rc;
}

/* ---- processes and events: node by node, numbers apart -------------------- */

struct node_pass {
    void *fn;
    void *arg;
    uint32_t index;
    const char *node;
};

static int node_process(const struct process_record *p, void *arg)
{
    struct node_pass *n = arg;
    struct process_record out = *p;
    struct strbuf comm;
    strbuf_init(&comm);
    strbuf_addf(&comm, "%s@%s", p->comm ? p->comm : "", n->node);
    out.pid = view_pid(n->index, p->pid);
    out.ppid = view_pid(n->index, p->ppid);
    out.comm = comm.buf;
    int rc = strbuf_failed(&comm) ? -ENOMEM : ((process_fn *)n->fn)(&out, n->arg);
    strbuf_release(&comm);
    return rc;
}

static int node_event_block(const struct event_block_record *b, void *arg)
{
    struct node_pass *n = arg;
    struct event_block_record out = *b;
    out.pid = view_pid(n->index, b->pid);
    out.tid = view_pid(n->index, b->tid);
    return ((event_block_fn *)n->fn)(&out, n->arg);
}

static int node_finding(const struct finding_record *f, void *arg)
{
    struct node_pass *n = arg;
    char node[256];
    if (label_format(node, sizeof(node), "node", n->node) < 0)
        snprintf(node, sizeof(node), "node=?");
    struct strbuf scope;
    strbuf_init(&scope);
    int whole = !f->scope || !*f->scope || strcmp(f->scope, "node") == 0;
    strbuf_addf(&scope, "%s%s%s", node, whole ? "" : ",", whole ? "" : f->scope);
    struct finding_record out = *f;
    out.scope = scope.buf;
    int rc = strbuf_failed(&scope) ? -ENOMEM : ((finding_rec_fn *)n->fn)(&out, n->arg);
    strbuf_release(&scope);
    return rc;
}

static int view_processes_query(struct store *base, const char *run_id, process_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    if (!is_job(v, run_id))
        return synced(v, v->inner->ops->processes_query(v->inner, run_id, fn, arg));
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++) {
        struct node_pass n = {(void *)fn, arg, i, v->nodes.items[i].node};
        rc = synced(
            v, v->inner->ops->processes_query(v->inner, v->nodes.items[i].id, node_process, &n));
    }
    return rc;
}

static int view_event_names_query(struct store *base, const char *run_id, event_name_fn *fn,
                                  void *arg)
{
    struct job_view *v = view_of(base);
    if (!is_job(v, run_id))
        return synced(v, v->inner->ops->event_names_query(v->inner, run_id, fn, arg));
    int rc = 0;
    /* each node's ids are its own already (JOB_NAME_IDS apart) */
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++)
        rc = synced(v, v->inner->ops->event_names_query(v->inner, v->nodes.items[i].id, fn, arg));
    return rc;
}

static int view_event_blocks_query(struct store *base, const char *run_id, int64_t from_ns,
                                   int64_t to_ns, event_block_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    if (!is_job(v, run_id))
        return synced(v,
                      v->inner->ops->event_blocks_query(v->inner, run_id, from_ns, to_ns, fn, arg));
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++) {
        struct node_pass n = {(void *)fn, arg, i, v->nodes.items[i].node};
        rc = synced(v, v->inner->ops->event_blocks_query(v->inner, v->nodes.items[i].id, from_ns,
                                                         to_ns, node_event_block, &n));
    }
    return rc;
}

static int node_text(const struct run_text_record *t, void *arg)
{
    struct node_pass *n = arg;
    struct strbuf kind;
    strbuf_init(&kind);
    strbuf_addf(&kind, "%s@%s", t->kind, n->node);
    struct run_text_record out = *t;
    out.kind = kind.buf;
    int rc = strbuf_failed(&kind) ? -ENOMEM : ((run_text_fn *)n->fn)(&out, n->arg);
    strbuf_release(&kind);
    return rc;
}

/* A run's own text: a job's nodes keep theirs in their own runs. */
static int view_run_text_get(struct store *base, const char *run_id, const char *kind,
                             run_text_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    return synced(v, v->inner->ops->run_text_get(v->inner, run_id, kind, fn, arg));
}

/* The job's own texts, then each node's as KIND@NODE ("stdout@n1"). */
static int view_run_texts_query(struct store *base, const char *run_id, run_text_fn *fn, void *arg)
{
    struct job_view *v = view_of(base);
    int rc = synced(v, v->inner->ops->run_texts_query(v->inner, run_id, fn, arg));
    if (!is_job(v, run_id))
        return rc;
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++) {
        struct node_pass n = {(void *)fn, arg, i, v->nodes.items[i].node};
        rc = synced(v,
                    v->inner->ops->run_texts_query(v->inner, v->nodes.items[i].id, node_text, &n));
    }
    return rc;
}

/* The job's own findings (rules across nodes), then each node's. */
static int view_findings_query(struct store *base, const char *run_id, finding_rec_fn *fn,
                               void *arg)
{
    struct job_view *v = view_of(base);
    int rc = synced(v, v->inner->ops->findings_query(v->inner, run_id, fn, arg));
    if (!is_job(v, run_id))
        return rc;
    for (uint32_t i = 0; rc == 0 && i < v->nodes.n; i++) {
        struct node_pass n = {(void *)fn, arg, i, v->nodes.items[i].node};
        rc = synced(
            v, v->inner->ops->findings_query(v->inner, v->nodes.items[i].id, node_finding, &n));
    }
    return rc;
}

/* ---- the view ------------------------------------------------------------ */

static void view_close(struct store *base)
{
    struct job_view *v = view_of(base);
    if (v->owns)
        store_close(v->inner);
    run_list_release(&v->nodes);
    free(v->base.uri);
    strbuf_release(&v->base.err);
    free(v);
}

static const struct store_ops view_ops = {
    .name = "job",
    .close = view_close,
    .begin = view_begin,
    .commit = view_commit,
    .rollback = view_rollback,
    .run_insert = view_run_insert,
    .run_update = view_run_update,
    .series_insert = view_series_insert,
    .series_update_meta = view_series_update_meta,
    .block_upsert = view_block_upsert,
    .blocks_put = view_blocks_put,
    .runs_query = view_runs_query,
    .series_query = view_series_query,
    .blocks_query = view_blocks_query,
    .run_delete = view_run_delete,
    .event_name_insert = view_event_name_insert,
    .process_upsert = view_process_upsert,
    .event_block_insert = view_event_block_insert,
    .event_names_query = view_event_names_query,
    .processes_query = view_processes_query,
    .event_blocks_query = view_event_blocks_query,
    .rules_clear = view_rules_clear,
    .rule_config_put = view_rule_config_put,
    .rule_result_insert = view_rule_result_insert,
    .finding_insert = view_finding_insert,
    .rule_config_query = view_rule_config_query,
    .rule_results_query = view_rule_results_query,
    .findings_query = view_findings_query,
    .run_text_put = view_run_text_put,
    .run_attrs_put = view_run_attrs_put,
    .run_texts_query = view_run_texts_query,
    .run_text_get = view_run_text_get,
    .blocks_range_query = view_blocks_range_query,
    .series_find = view_series_find,
    .runs_where = view_runs_where,
    .join_lock = view_join_lock,
    .clock_ns = view_clock_ns,
    .try_lead = view_try_lead,
    .campaign_put = view_campaign_put,
    .campaign_get = view_campaign_get,
    .campaigns_query = view_campaigns_query,
    .campaign_delete = view_campaign_delete,
    .py_block_put = view_py_block_put,
    .py_blocks_query = view_py_blocks_query,
};

/* "n1,n2,...": the host of a run of several nodes, as an import's */
static char *node_list(const struct run_list *nodes)
{
    struct strbuf b;
    strbuf_init(&b);
    for (uint32_t i = 0; i < nodes->n; i++)
        strbuf_addf(&b, "%s%s", i ? "," : "", nodes->items[i].node ? nodes->items[i].node : "");
    if (strbuf_failed(&b)) {
        strbuf_release(&b);
        return NULL;
    }
    return strbuf_detach(&b);
}

int store_job_view(struct store *inner, int owns, struct run_record *job, struct store **out)
{
    struct job_view *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    int rc = store_job_nodes(inner, job->id, &v->nodes);
    char *hosts = rc == 0 ? node_list(&v->nodes) : NULL;
    v->base.uri = inner->uri ? strdup(inner->uri) : NULL;
    v->base.open_uri = inner->open_uri ? strdup(inner->open_uri) : NULL;
    if (rc < 0 || !hosts || (inner->uri && !v->base.uri) ||
        (inner->open_uri && !v->base.open_uri)) {
        free(hosts);
        run_list_release(&v->nodes);
        free(v->base.uri);
        free(v->base.open_uri);
        free(v);
        return rc < 0 ? rc : -ENOMEM;
    }
    v->base.ops = &view_ops;
    v->inner = inner;
    v->owns = owns;
    strbuf_init(&v->base.err);
    snprintf(v->job_id, sizeof(v->job_id), "%s", job->id);
    job_rollup_record(job, &v->nodes); /* current while its nodes record */
    free(job->host);
    job->host = hosts;
    *out = &v->base;
    return 0;
}
