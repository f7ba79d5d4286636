/* Shared between the report's files (src/render/report*.c); not an API. */
#ifndef STROBE_RENDER_REPORT_INTERNAL_H
#define STROBE_RENDER_REPORT_INTERNAL_H

#include "analyze/steps.h"
#include "common/strbuf.h"
#include "store/store.h"

/* Points of the time axis at most: about one per pixel of a wide chart, and
 * what keeps 100 series of a 24 h run near 2 MB (docs/report.md). */
#define REPORT_BUCKETS 1200
/* Steps drawn one by one up to this many; beyond, per time bin (min, max,
 * mean) plus the outliers one by one. */
#define REPORT_STEPS_EXACT 3000
#define REPORT_STEP_BINS   1200
#define REPORT_OUTLIERS    2000 /* the longest outliers drawn one by one */
#define REPORT_HIST_BINS   40
#define REPORT_TOP_OPS     25
/* A run of many nodes: the charts of this many nodes at most (the first in
 * natural order), each series of the others as statistics only; the
 * heatmaps per node hold every node. 256 nodes of 20 series drawn in full
 * made a 79 MB page. */
#define REPORT_NODES_DRAWN 8

/* The k-th smallest of v[0..n), looking only at v[from..n) (which must hold
 * the n - from largest): Hoare's selection, O(n), where sorting 86 M points
 * for three percentiles would not fit the report's time budget. Reorders
 * v[from..n) so that v[k] is in its sorted place, with nothing smaller after
 * it. */
double report_select_kth(double *v, size_t from, size_t n, size_t k);

struct json_writer;
/* The event-derived members of the data object ("summary", "steps",
 * "phase_names", "primary", "groups", "eval_steps", "dataloader", "ops"),
 * written into jw's open object (report_events.c). 0 or -ENOMEM. */
int report_add_events(struct json_writer *jw, const struct run_record *r,
                      const struct run_events *e, const struct step_analysis *a);

/* Append JSON (len bytes) for a <script type="application/json"> element:
 * '<', '>', '&', U+2028 and U+2029 written as \u escapes, so no run or
 * function name can end the element or start markup (report.c). 0 or
 * -ENOMEM. */
int report_add_json_for_script(struct strbuf *o, const char *json, size_t len);
/* Append open, the embedded asset a (len bytes) and close; -EINVAL with a
 * reason in *err if the asset could end its element early. */
int report_add_asset(struct strbuf *o, const char *open, const unsigned char *a, size_t len,
                     const char *close, struct strbuf *err);

#endif
