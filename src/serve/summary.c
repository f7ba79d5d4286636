#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/nodes.h"
#include "analyze/steps.h"
#include "common/array.h"
#include "common/hash.h"
#include "common/metrics.h"
#include "serve/summary.h"
#include "store/job.h"

struct entry {
    char id[RUN_ID_LEN + 1]; /* "" when free */
    /* what a new commit changes: a different value means compute again */
    char status[16];
    int64_t end_ns, last_ns, events, points;
    struct run_summary sum;
};

struct summary_cache {
    pthread_mutex_t lock;
    struct entry *e;
    size_t n, cap; /* cap is a power of two; n <= cap / 2 */
};

int summary_cache_new(struct summary_cache **out)
{
    struct summary_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->cap = 256;
    c->e = calloc(c->cap, sizeof(*c->e));
    if (!c->e) {
        free(c);
        return -ENOMEM;
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

void summary_cache_free(struct summary_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->e);
    free(c);
}

/* The slot holding id, or the free slot where it would go. */
static struct entry *slot_of(struct entry *e, size_t cap, const char *id)
{
    size_t h = hash_fnv1a(HASH_FNV1A_INIT, id, strlen(id));
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!e[i].id[0] || strcmp(e[i].id, id) == 0)
            return &e[i];
}

static int grow(struct summary_cache *c)
{
    size_t cap = c->cap * 2;
    struct entry *e = calloc(cap, sizeof(*e));
    if (!e)
        return -ENOMEM;
    for (size_t i = 0; i < c->cap; i++)
        if (c->e[i].id[0])
            *slot_of(e, cap, c->e[i].id) = c->e[i];
    free(c->e);
    c->e = e;
    c->cap = cap;
    return 0;
}

static int fresh(const struct entry *x, const struct run_record *r)
{
    return x->id[0] && strcmp(x->status, r->status) == 0 && x->end_ns == r->end_ns &&
           x->last_ns == r->last_ns && x->events == r->events && x->points == r->points;
}

struct series_acc {
    double cpu_sum, gpu_sum, tput_sum;
    int64_t cpu_n, gpu_n, tput_n;
};

/* Means from block summaries only (the series query sums block headers),
 * over every node of a run of several (node_series). */
static int add_series(const struct series_record *s, void *arg)
{
    struct series_acc *a = arg;
    if (s->count <= 0 || isnan(s->sum))
        return 0;
    if (node_series(s->name, s->labels, METRIC_CPU_UTIL, NULL, NULL)) {
        a->cpu_sum += s->sum;
        a->cpu_n += s->count;
    } else if (node_series(s->name, s->labels, METRIC_GPU_UTIL, NULL, NULL)) {
        a->gpu_sum += s->sum;
        a->gpu_n += s->count;
    } else if (node_series(s->name, s->labels, METRIC_APP_SAMPLES_PER_S, NULL, NULL) ||
               node_series(s->name, s->labels, METRIC_APP_THROUGHPUT, NULL, NULL)) {
        a->tput_sum += s->sum;
        a->tput_n += s->count;
    }
    return 0;
}

static int count_finding(const struct finding_record *f, void *arg)
{
    (void)f;
    (*(int64_t *)arg)++;
    return 0;
}

/* The batch size a run's parameters give (strobe run takes a Python
 * script's --batch-size 64 as one), or 0. */
static double batch_param(const struct run_record *r)
{
    static const char *const keys[] = {"batch-size", "batch_size", "batch", "bs"};
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const char *v = kv_list_get(&r->params, keys[i]);
        char *end;
        double b = v ? strtod(v, &end) : 0;
        if (v && end != v && !*end && b > 0 && b < 1e9)
            return b;
    }
    return 0;
}

static int compute_run(struct store *s, const struct run_record *r, struct run_summary *out)
{
    struct series_acc a = {0};
    *out = (struct run_summary){.step_p50_s = NAN};
    int rc = s->ops->series_query(s, r->id, add_series, &a);
    if (rc < 0)
        return rc;
    out->cpu_util_pct = a.cpu_n ? a.cpu_sum / (double)a.cpu_n : NAN;
    out->gpu_util_pct = a.gpu_n ? a.gpu_sum / (double)a.gpu_n : NAN;
    out->samples_per_s = a.tput_n ? a.tput_sum / (double)a.tput_n : NAN;
    /* a store from before the rules has no findings table: none */
    if (s->ops->findings_query(s, r->id, count_finding, &out->findings) < 0)
        out->findings = 0;
    if (!r->events)
        return 0;
    struct run_events ev;
    struct step_analysis sa = {0};
    rc = run_events_load(s, r->id, &ev);
    if (rc == 0 && (rc = step_analysis_run(&ev, &sa)) == 0 && sa.ngroups) {
        const struct step_group *g = &sa.groups[sa.primary];
        out->steps = (int64_t)g->steps.count;
        out->step_p50_s = g->steps.count ? g->steps.p50_ns / 1e9 : NAN;
        /* no throughput logged: a batch size over the mean step time, so a
         * zero-code sweep of batch sizes still compares in samples/s */
        double batch = batch_param(r);
        if (isnan(out->samples_per_s) && batch > 0 && g->steps.count && g->steps.mean_ns > 0)
            out->samples_per_s = batch / (g->steps.mean_ns / 1e9);
    }
    step_analysis_release(&sa);
    run_events_release(&ev);
    return rc;
}

/* A job's figures are over its nodes: read through a view (store/job.h). */
static int compute(struct store *s, const struct run_record *r, struct run_summary *out)
{
    if (!run_record_is_job(r))
        return compute_run(s, r, out);
    struct run_record job;
    struct store *view;
    int rc = run_record_copy(&job, r);
    if (rc == 0 && (rc = store_job_view(s, 0, &job, &view)) == 0) {
        rc = compute_run(view, &job, out);
        if (rc < 0) {
            strbuf_reset(&s->err);
            strbuf_add(&s->err, view->err.buf, view->err.len);
        }
        store_close(view);
    }
    run_record_release(&job);
    return rc;
}

int summary_get(struct summary_cache *c, struct store *s, const struct run_record *r,
                struct run_summary *out)
{
    pthread_mutex_lock(&c->lock);
    struct entry *x = slot_of(c->e, c->cap, r->id);
    int hit = fresh(x, r);
    if (hit)
        *out = x->sum;
    pthread_mutex_unlock(&c->lock);
    if (hit)
        return 0;
    /* computed outside the lock: two threads may both compute one run, which
     * costs time, never correctness */
    int rc = compute(s, r, out);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&c->lock);
    x = slot_of(c->e, c->cap, r->id);
    if (!x->id[0] && (c->n + 1 > c->cap / 2) && grow(c) == 0)
        x = slot_of(c->e, c->cap, r->id);
    if (x->id[0] || c->n + 1 <= c->cap / 2) {
        if (!x->id[0])
            c->n++;
        snprintf(x->id, sizeof(x->id), "%s", r->id);
        snprintf(x->status, sizeof(x->status), "%s", r->status);
        x->end_ns = r->end_ns;
        x->last_ns = r->last_ns;
        x->events = r->events;
        x->points = r->points;
        x->sum = *out;
    }
    pthread_mutex_unlock(&c->lock);
    return 0;
}
