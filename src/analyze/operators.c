#include "analyze/operators.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Per name id: ids are dense and few (a run has hundreds of names), so a
 * table indexed by id beats hashing. */
struct acc {
    uint64_t count;
    double total_ns;
};

static int cmp_total(const void *a, const void *b)
{
    const struct operator_stat *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
    return strcmp(x->name, y->name);
}

static int is_op(const struct run_events *e, uint32_t id)
{
    return strncmp(run_events_name(e, id), OPERATOR_PREFIX, sizeof(OPERATOR_PREFIX) - 1) == 0;
}

/* The steps of pid that hold operators, their lengths summed: the window
 * the shares are of. Steps are marked in have[] by number as seen. */
static double steps_window(const struct run_events *e, const struct thread_events *t,
                           const struct operator_stats *s, const uint8_t *have)
{
    double ns = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct event *ev = &t->ev[i];
        if (ev->kind == STROBE_EV_COMPLETE && ev->value > 0 && ev->step >= s->step_min &&
            ev->step <= s->step_max && have[ev->step - s->step_min] &&
            strcmp(run_events_name(e, ev->name), "step") == 0)
            ns += (double)ev->value;
    }
    return ns;
}

static int window(const struct run_events *e, struct operator_stats *s, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)s->step_max - s->step_min + 1;
    s->window_ns = (double)(hi - lo);
    if (span > (1u << 24)) /* steps numbered too far apart to mark: the time they cover */
        return 0;
    uint8_t *have = calloc(span, 1);
    if (!have)
        return -ENOMEM;
    for (uint32_t t = 0; t < e->nthreads; t++)
        for (uint32_t i = 0; i < e->threads[t].n; i++) {
            const struct event *ev = &e->threads[t].ev[i];
            if (ev->kind == STROBE_EV_COMPLETE && is_op(e, ev->name))
                have[ev->step - s->step_min] = 1;
        }
    /* the steps of the thread with the most of them (the main thread of the
     * process the operators are on, in the usual run) */
    double best = 0;
    for (uint32_t t = 0; t < e->nthreads; t++) {
        double ns = steps_window(e, &e->threads[t], s, have);
        best = ns > best ? ns : best;
    }
    free(have);
    if (best > 0)
        s->window_ns = best;
    return 0;
}

int operator_stats_run(const struct run_events *e, struct operator_stats *out)
{
    memset(out, 0, sizeof(*out));
    struct acc *acc = calloc(e->nnames + 1, sizeof(*acc));
    if (!acc)
        return -ENOMEM;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    out->step_min = UINT32_MAX;
    for (uint32_t t = 0; t < e->nthreads; t++)
        for (uint32_t i = 0; i < e->threads[t].n; i++) {
            const struct event *ev = &e->threads[t].ev[i];
            if (ev->kind != STROBE_EV_COMPLETE || ev->name > e->nnames || !is_op(e, ev->name))
                continue;
            acc[ev->name].count++;
            acc[ev->name].total_ns += ev->value > 0 ? (double)ev->value : 0;
            out->events++;
            lo = ev->ts_ns < lo ? ev->ts_ns : lo;
            hi = ev->ts_ns + ev->value > hi ? ev->ts_ns + ev->value : hi;
            out->step_min = ev->step < out->step_min ? ev->step : out->step_min;
            out->step_max = ev->step > out->step_max ? ev->step : out->step_max;
        }
    int rc = 0;
    if (!out->events) {
        out->step_min = 0;
        goto out;
    }
    uint32_t n = 0;
    for (uint32_t id = 1; id <= e->nnames; id++)
        n += acc[id].count > 0;
    if (!(out->ops = calloc(n, sizeof(*out->ops)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t id = 1; id <= e->nnames; id++)
        if (acc[id].count)
            out->ops[out->n++] =
                (struct operator_stat){run_events_name(e, id) + sizeof(OPERATOR_PREFIX) - 1,
                                       acc[id].count, acc[id].total_ns};
    qsort(out->ops, out->n, sizeof(*out->ops), cmp_total);
    rc = window(e, out, lo, hi);
out:
    free(acc);
    if (rc < 0)
        operator_stats_release(out);
    return rc;
}

void operator_stats_release(struct operator_stats *s)
{
    free(s->ops);
    memset(s, 0, sizeof(*s));
}

double operator_share(const struct operator_stats *s, const struct operator_stat *op)
{
    return s->window_ns > 0 ? op->total_ns / s->window_ns : 0.0;
}
