#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "serve/steps_view.h"

/* A step of the primary process: a row of its own. */
static double *new_row(void *arg, const struct phase_span *step)
{
    struct step_rows *out = arg;
    if (array_grow((void **)&out->r, &out->cap, out->n + 1, sizeof(*out->r), 256) < 0)
        return NULL;
    struct step_row *row = &out->r[out->n++];
    memset(row, 0, sizeof(*row));
    row->start_ns = step->start;
    row->end_ns = step->end;
    return row->phase_ns;
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
                rc = steps_walk_thread(&ev, &ev.threads[i], new_row, out);
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
