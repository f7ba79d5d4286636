/*
 * A static flame graph as one self-contained SVG, in the style of Brendan
 * Gregg's flamegraph.pl: a rectangle per frame, the root at the bottom, its
 * width the frame's share of the samples, a <title> tooltip with the count
 * and share, its text clipped to fit. No script: it opens in any browser
 * or image viewer.
 */
#ifndef STROBE_RENDER_FLAME_SVG_H
#define STROBE_RENDER_FLAME_SVG_H

#include "common/strbuf.h"

/*
 * Append the flame graph of collapsed, "frame;frame;... count" lines sorted
 * bytewise (pyprof/view.h's py_view_collapsed), to out, titled title.
 * Names are escaped for XML; a line without a count is skipped. 0, or
 * -ENOMEM.
 */
int flame_svg_write(const char *collapsed, const char *title, struct strbuf *out);

#endif
