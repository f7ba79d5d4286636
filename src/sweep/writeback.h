/*
 * --write-back: the campaign's progress written into the experiment file,
 * as radT does, so that radT (and a reader of the file) sees it.
 *
 * CSV: each run's row gets Status ("FINISHED", "FAILED", ... and the run's
 * name) and Run (its id); the columns are added at the end when the header
 * lacks them. Every other cell is written back as it was read (quoted where
 * it must be). YAML: a top-level `status:` mapping, radT's, replaces any
 * there: workload number (or name) to "STATUS RUN_ID (--key value ...)".
 * The rest of the file, comments included, is kept byte for byte.
 *
 * The new file is written beside the old one and renamed over it: a crash
 * leaves one or the other whole.
 */
#ifndef STROBE_SWEEP_WRITEBACK_H
#define STROBE_SWEEP_WRITEBACK_H

#include "sweep/spec.h"
#include "sweep/state.h"

/* 0, or -1 with a warning said. */
int sweep_write_back(const struct sweep_spec *spec, const struct campaign_state *st);

/* CSV: rows (data rows from 1) get status[row] and run[row] where not NULL
 * (arrays of nrows + 1). spec_csv.c, beside the reader. */
int sweep_csv_rewrite(const char *path, const char *const *status, const char *const *run,
                      size_t nrows, struct strbuf *err);

#endif
