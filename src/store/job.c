#include "store/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/err.h"
#include "common/label.h"
#include "record/runinfo.h"

/* ---- a job's nodes ------------------------------------------------------- */

void run_list_release(struct run_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        run_record_release(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof(*l));
}

static int collect_run(const struct run_record *r, void *arg)
{
    struct run_list *l = arg;
    if (array_grow((void **)&l->items, &l->cap, l->n + 1, sizeof(*l->items), 16) < 0)
        return -ENOMEM;
    if (run_record_copy(&l->items[l->n], r) < 0) {
        run_record_release(&l->items[l->n]);
        return -ENOMEM;
    }
    l->n++;
    return 0;
}

static int by_node(const void *a, const void *b)
{
    const struct run_record *x = a, *y = b;
    int c = strverscmp(x->node ? x->node : "", y->node ? y->node : "");
    return c ? c : strcmp(x->id, y->id);
}

int store_job_nodes(struct store *s, const char *job_id, struct run_list *out)
{
    memset(out, 0, sizeof(*out));
    int rc = s->ops->runs_where(s, RUNS_OF_PARENT, job_id, collect_run, out);
    if (rc < 0) {
        run_list_release(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->items, out->n, sizeof(*out->items), by_node);
    return 0;
}

int run_record_is_job(const struct run_record *r)
{
    return r->join_key != NULL && r->parent_id == NULL;
}

const char *job_status(const struct run_record *job, const struct run_list *nodes)
{
    if (strcmp(job->status, RUN_RUNNING) != 0)
        return job->status;
    for (uint32_t i = 0; i < nodes->n; i++)
        if (strcmp(run_record_status(&nodes->items[i]), RUN_LOST) != 0 &&
            strcmp(nodes->items[i].status, RUN_RUNNING) == 0)
            return RUN_RUNNING;
    return nodes->n ? RUN_LOST : RUN_RUNNING;
}

int store_job_delete(struct store *s, const char *job_id)
{
    struct run_list nodes;
    int rc = store_job_nodes(s, job_id, &nodes);
    if (rc < 0)
        return rc;
    rc = s->ops->begin(s);
    for (uint32_t i = 0; rc == 0 && i < nodes.n; i++)
        rc = s->ops->run_delete(s, nodes.items[i].id); /* joins the transaction */
    if (rc == 0)
        rc = s->ops->run_delete(s, job_id);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0)
        s->ops->rollback(s);
    run_list_release(&nodes);
    return rc;
}

/* ---- joining ------------------------------------------------------------- */

static int first_run(const struct run_record *r, void *arg)
{
    return run_record_copy(arg, r) < 0 ? -ENOMEM : 1;
}

static int node_live(const struct run_record *n)
{
    return strcmp(n->status, RUN_RUNNING) == 0 && !run_record_recorder_gone(n);
}

/* Whether the job takes node `name`; -STROBE_EEXIST when a node of that
 * name records in it now. */
static int job_takes(struct store *s, const struct run_record *job, const char *name, int *slot)
{
    struct run_list nodes;
    int rc = store_job_nodes(s, job->id, &nodes);
    if (rc < 0)
        return rc;
    int live = 0, named = 0;
    for (uint32_t i = 0; i < nodes.n; i++) {
        const struct run_record *n = &nodes.items[i];
        live |= node_live(n);
        if (n->node && strcmp(n->node, name) == 0) {
            named = 1;
            if (node_live(n)) {
                strbuf_reset(&s->err);
                strbuf_addf(&s->err,
                            "node '%s' is recording in run %s already (give each node "
                            "its own --node)",
                            name, job->id);
                rc = -STROBE_EEXIST;
            }
        }
    }
    *slot = (int)nodes.n;
    run_list_release(&nodes);
    if (rc < 0)
        return rc;
    return !named && (live || job->start_ns >= clock_realtime_ns() - JOB_JOIN_WINDOW_NS);
}

/* The job's run from its first node's: what nodes share, none of what is
 * one node's (its host, its recorder, its counters). */
static int new_job(struct store *s, const char *key, const struct run_record *node,
                   struct run_record *job)
{
    int rc = run_record_copy(job, node);
    if (rc < 0)
        return rc;
    runinfo_new_id(job->id);
    free(job->host);
    free(job->node);
    free(job->join_key);
    job->host = NULL;
    job->node = NULL;
    job->join_key = strdup(key);
    job->recorder_pid = 0;
    memset(&job->recorder, 0, sizeof(job->recorder));
    job->recorder.start_ticks = -1;
    job->clock_offset_ns = job->clock_rtt_ns = 0;
    if (!job->join_key)
        return -ENOMEM;
    return s->ops->run_insert(s, job);
}

int store_job_join(struct store *s, const char *key, struct run_record *node_run, int *slot)
{
    struct run_record job;
    run_record_init(&job);
    int rc = s->ops->join_lock(s, key);
    if (rc == 0)
        rc = s->ops->runs_where(s, RUNS_OF_JOIN_KEY, key, first_run, &job);
    int takes = 0;
    *slot = 0;
    if (rc == 0 && job.id[0])
        rc = takes = job_takes(s, &job, node_run->node, slot);
    if (rc >= 0 && !takes) {
        run_record_release(&job);
        *slot = 0;
        rc = new_job(s, key, node_run, &job);
    }
    if (rc >= 0) {
        free(node_run->parent_id);
        node_run->parent_id = strdup(job.id);
        rc = node_run->parent_id ? s->ops->run_insert(s, node_run) : -ENOMEM;
    }
    if (rc >= 0)
        rc = store_job_rollup(s, job.id);
    run_record_release(&job);
    return rc < 0 ? rc : 0;
}

/* ---- the job's status from its nodes ------------------------------------- */

static int status_rank(const char *status)
{
    static const char *const order[] = {RUN_FINISHED, RUN_STOPPED, RUN_FAILED,
                                        RUN_KILLED,   RUN_CRASHED, RUN_RUNNING};
    for (size_t i = 0; i < ARRAY_SIZE(order); i++)
        if (strcmp(status, order[i]) == 0)
            return (int)i;
    return 2; /* unknown: as failed (order[2]) */
}

static void add_node(struct run_record *job, const struct run_record *n, int *worst)
{
    int rank = status_rank(n->status);
    if (rank > *worst) {
        *worst = rank;
        snprintf(job->status, sizeof(job->status), "%s", n->status);
        job->exit_code = n->exit_code;
        job->signal = n->signal;
    }
    if (!job->start_ns || n->start_ns < job->start_ns)
        job->start_ns = n->start_ns;
    if (n->end_ns > job->end_ns)
        job->end_ns = n->end_ns;
    if (n->last_ns > job->last_ns)
        job->last_ns = n->last_ns;
    job->samples += n->samples;
    job->points += n->points;
    job->missed += n->missed;
    job->dropped += n->dropped;
    job->events += n->events;
    job->events_dropped += n->events_dropped;
    job->events_invalid += n->events_invalid;
    if (!job->error && n->error)
        job->error = strdup(n->error);
}

void job_rollup_record(struct run_record *job, const struct run_list *nodes)
{
    if (!nodes->n)
        return;
    job->start_ns = job->end_ns = job->last_ns = 0;
    job->samples = job->points = job->missed = job->dropped = 0;
    job->events = job->events_dropped = job->events_invalid = 0;
    int worst = -1;
    for (uint32_t i = 0; i < nodes->n; i++)
        add_node(job, &nodes->items[i], &worst);
    if (strcmp(job->status, RUN_RUNNING) == 0) {
        job->end_ns = 0; /* the span ends with the last node */
        job->exit_code = -1;
        job->signal = 0;
    }
}

int store_job_rollup(struct store *s, const char *job_id)
{
    struct run_list nodes;
    int rc = store_job_nodes(s, job_id, &nodes);
    if (rc < 0 || nodes.n == 0) {
        run_list_release(&nodes);
        return rc;
    }
    struct run_record job;
    run_record_init(&job);
    snprintf(job.id, sizeof(job.id), "%s", job_id);
    job_rollup_record(&job, &nodes);
    rc = s->ops->run_update(s, &job);
    run_record_release(&job);
    run_list_release(&nodes);
    return rc;
}
