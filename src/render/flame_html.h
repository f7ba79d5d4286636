/*
 * strobe flame --format html: an interactive flame graph page, one file,
 * that reads the flame data JSON (pyprof/view.h's py_view_json).
 */
#ifndef STROBE_RENDER_FLAME_HTML_H
#define STROBE_RENDER_FLAME_HTML_H

#include <stdio.h>

#include "common/strbuf.h"

/* Write the page holding flame_json to out. 0, or negative after saying
 * why in one line (log_error). */
int flame_html_write(const struct strbuf *flame_json, FILE *out);

#endif
