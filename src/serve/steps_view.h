/*
 * One row per step of a run's primary process (rank 0, or the process with
 * the most steps), with the exclusive time of each phase inside it: what
 * /api/runs/{id}/steps charts. Phases are those on the step's own thread,
 * as in analyze/steps.h.
 */
#ifndef STROBE_SERVE_STEPS_VIEW_H
#define STROBE_SERVE_STEPS_VIEW_H

#include <stdint.h>

#include "analyze/steps.h"

struct step_row {
    int64_t start_ns, end_ns;
    double phase_ns[PHASE_COUNT];
};

struct step_rows {
    struct step_row *r; /* in order of start; heap, step_rows_release frees */
    uint32_t n, cap;
    int64_t pid; /* the process they are of; -1 without steps */
};

/* Load the steps of run_id. 0, or negative with s->err set. */
int step_rows_load(struct store *s, const char *run_id, struct step_rows *out);
void step_rows_release(struct step_rows *rows);

#endif
