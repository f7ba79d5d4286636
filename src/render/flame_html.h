/*
 * A flame graph as one self-contained HTML page (`strobe flame --format
 * html`): the flame data of a run (the JSON of docs/api.md, "flame data")
 * drawn by web/common/flame.js, which is embedded with its style, so the
 * page works offline and makes no network request.
 */
#ifndef STROBE_RENDER_FLAME_HTML_H
#define STROBE_RENDER_FLAME_HTML_H

#include <stdio.h>

#include "common/strbuf.h"

/*
 * Write the page of flame_json (one JSON object, as py_view_json builds it)
 * to out. The JSON is embedded escaped (no '<', '>' or '&' in it), so no
 * function name can end its script element. 0, or negative after saying
 * why in one line (log_error): -ENOMEM, -EIO when out cannot be written, or
 * -EINVAL when an embedded asset would end its element early (a fault of
 * the build, not of the data).
 */
int flame_html_write(const struct strbuf *flame_json, FILE *out);

#endif
