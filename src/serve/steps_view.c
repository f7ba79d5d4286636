#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "serve/steps_view.h"

/* Split a thread's complete spans into its steps and its phase spans. */
static int split_spans(const struct run_events *e, const struct thread_events *t,
                       struct phase_span *steps, uint32_t *nsteps, struct phase_span *ph,
                       uint32_t *nph)
{
    *nsteps = *nph = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct event *ev = &t->ev[i];
        if (ev->kind != STROBE_EV_COMPLETE || ev->value < 0)
            continue;
        const char *name = run_events_name(e, ev->name);
        struct phase_span sp = {ev->ts_ns, ev->ts_ns + ev->value, -1, 0};
        int p = steps_phase_of(name);
        if (strcmp(name, "step") == 0)
            steps[(*nsteps)++] = sp;
        else if (p >= 0) {
            sp.phase = p;
            ph[(*nph)++] = sp;
        }
    }
    qsort(steps, *nsteps, sizeof(*steps), steps_cmp_span);
    qsort(ph, *nph, sizeof(*ph), steps_cmp_span);
    return 0;
}

/* The rows of one thread: each step with the phases that overlap it (the
 * same walk as analyze/steps.c: a few spans back may run into a step). */
static int thread_rows(const struct run_events *e, const struct thread_events *t,
                       struct step_rows *out)
{
    struct phase_span *steps = malloc((t->n + 1) * sizeof(*steps));
    struct phase_span *ph = malloc((t->n + 1) * sizeof(*ph));
    int rc = 0;
    uint32_t nsteps, nph;
    if (!steps || !ph) {
        rc = -ENOMEM;
        goto out;
    }
    split_spans(e, t, steps, &nsteps, ph, &nph);
    if (array_grow((void **)&out->r, &out->cap, out->n + nsteps, sizeof(*out->r), 256) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    uint32_t first = 0;
    for (uint32_t i = 0; i < nsteps; i++) {
        while (first < nph && ph[first].start < steps[i].start)
            first++;
        uint32_t from = first;
        while (from > 0 && first - from < 64 && ph[from - 1].end > steps[i].start)
            from--;
        uint32_t last = first;
        while (last < nph && ph[last].start < steps[i].end)
            last++;
        struct step_row *row = &out->r[out->n++];
        memset(row, 0, sizeof(*row));
        row->start_ns = steps[i].start;
        row->end_ns = steps[i].end;
        steps_phase_times(ph + from, last - from, steps[i].start, steps[i].end, row->phase_ns);
        first = last;
    }
out:
    free(steps);
    free(ph);
    return rc;
}

static int cmp_row(const void *a, const void *b)
{
    const struct step_row *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

int step_rows_load(struct store *s, const char *run_id, struct step_rows *out)
{
    memset(out, 0, sizeof(*out));
    out->pid = -1;
    struct run_events ev;
    struct step_analysis sa = {0};
    int rc = run_events_load(s, run_id, &ev);
    if (rc == 0)
        rc = step_analysis_run(&ev, &sa);
    if (rc == 0 && sa.ngroups) {
        out->pid = sa.groups[sa.primary].pid;
        for (uint32_t i = 0; i < ev.nthreads && rc == 0; i++)
            if (ev.threads[i].pid == out->pid)
                rc = thread_rows(&ev, &ev.threads[i], out);
        if (out->n)
            qsort(out->r, out->n, sizeof(*out->r), cmp_row);
    }
    step_analysis_release(&sa);
    run_events_release(&ev);
    return rc;
}

void step_rows_release(struct step_rows *rows)
{
    free(rows->r);
    memset(rows, 0, sizeof(*rows));
}
