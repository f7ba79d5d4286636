/*
 * The profiler report: one self-contained HTML file for a run (charts drawn
 * by uPlot, which is embedded, so the page works offline and makes no
 * network request). What it shows and how long runs are downsampled is in
 * docs/report.md.
 */
#ifndef STROBE_RENDER_REPORT_H
#define STROBE_RENDER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

/* What writing a report took, for the caller's note and the benchmark. */
struct report_stats {
    size_t bytes;     /* size of the HTML file */
    size_t series;    /* series drawn */
    uint64_t points;  /* points read to draw them */
    uint64_t buckets; /* points of the time axis (downsampled) */
};

/*
 * Write the report of run r, read from store s, to path ("-" for stdout).
 * Returns 0, or negative with a one-line reason in *err (the caller reports
 * it). st may be NULL. The file is written to a temporary name beside path
 * and renamed, so a failure never leaves half a report.
 */
int report_write(struct store *s, const struct run_record *r, const char *path,
                 struct report_stats *st, struct strbuf *err);

/*
 * A file name for r's report: its name (or id when it has none) with every
 * byte outside [A-Za-z0-9._-] made '_' and suffix appended, e.g.
 * "resnet-bs64.report.html". Writes into buf (NUL-terminated, truncated to
 * cap) and returns it.
 */
const char *report_file_name(const struct run_record *r, const char *suffix, char *buf, size_t cap);

/* The report's data as the page reads it (one JSON object, documented in
 * docs/report.md), appended to out. 0 or negative with *err set. */
int report_data_json(struct store *s, const struct run_record *r, struct strbuf *out,
                     struct report_stats *st, struct strbuf *err);

#endif
