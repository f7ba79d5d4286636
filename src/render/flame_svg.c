/*
 * The static flame graph (flame_svg.h), laid out as flamegraph.pl does:
 * the collapsed lines come sorted, so the frames that two neighbouring
 * lines share are one rectangle. Walking the lines keeps the open frames
 * of the previous line; a frame closes when the next line differs at its
 * depth or above, and is drawn then, from where it opened to the samples
 * counted so far. Rectangles narrower than MIN_WIDTH_PX are left out (as
 * flamegraph.pl's --minwidth), so a profile of a million distinct stacks
 * stays a file a browser opens.
 */
#include "render/flame_svg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH_PX     1200.0
#define FRAME_PX     16
#define FONT_PX      12
#define FONT_WIDTH   0.59 /* of the font size: an average character's width */
#define PAD_PX       10.0
#define TOP_PX       (FONT_PX * 3)
#define BOTTOM_PX    (FONT_PX * 2 + 10)
#define MIN_WIDTH_PX 0.1
#define MAX_DEPTH    1024 /* deeper frames are drawn at this depth's row */

struct frame_open {
    const char *name; /* into the line being walked: valid until that line is passed */
    size_t len;
    uint64_t start; /* samples before it */
};

/* s[0..n) as XML character data or an attribute value. */
static void add_xml(struct strbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&':
            strbuf_adds(out, "&amp;");
            break;
        case '<':
            strbuf_adds(out, "&lt;");
            break;
        case '>':
            strbuf_adds(out, "&gt;");
            break;
        case '"':
            strbuf_adds(out, "&quot;");
            break;
        case '\'':
            strbuf_adds(out, "&apos;");
            break;
        default: /* XML 1.0 has no control characters but tab and newlines */
            strbuf_addch(out, c < 0x20 || c == 0x7f ? '?' : (char)c);
        }
    }
}

/* The bytes of s[0..n) that fit in chars characters, cut on a UTF-8
 * boundary. */
static size_t utf8_prefix(const char *s, size_t n, size_t chars)
{
    size_t i = 0;
    for (size_t k = 0; i < n && k < chars; k++) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

/* A warm colour from the name, the same for the same name (flamegraph.pl's
 * "hot" palette, hashed rather than random so output is stable). */
static void colour(const char *name, size_t n, int *r, int *g, int *b)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    double v1 = (double)(h & 0xff) / 255.0, v2 = (double)((h >> 8) & 0xff) / 255.0;
    *r = 205 + (int)(50 * v2);
    *g = (int)(230 * v1);
    *b = (int)(55 * v2);
}

struct layout {
    struct strbuf *out;
    uint64_t total;
    uint32_t depth_max; /* the deepest row drawn */
    double height_px;
};

static void rect(struct layout *l, const char *name, size_t n, uint32_t depth, uint64_t from,
                 uint64_t to)
{
    double scale = (WIDTH_PX - 2 * PAD_PX) / (double)l->total;
    double x = PAD_PX + (double)from * scale, w = (double)(to - from) * scale;
    if (w < MIN_WIDTH_PX)
        return;
    double y = l->height_px - BOTTOM_PX - (double)(depth + 1) * FRAME_PX;
    int r, g, b;
    colour(name, n, &r, &g, &b);
    struct strbuf *o = l->out;
    strbuf_adds(o, "<g><title>");
    add_xml(o, name, n);
    strbuf_addf(o, " (%llu sample%s, %.2f%%)</title>", (unsigned long long)(to - from),
                to - from == 1 ? "" : "s", 100.0 * (double)(to - from) / (double)l->total);
    strbuf_addf(o,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                "fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>",
                x, y, w, FRAME_PX - 1, r, g, b);
    size_t fit = (size_t)((w - 6) / (FONT_PX * FONT_WIDTH));
    if (fit >= 3) {
        size_t chars = 0;
        for (size_t i = 0; i < n; i++)
            chars += ((unsigned char)name[i] & 0xC0) != 0x80;
        strbuf_addf(o, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FRAME_PX - 4.5);
        if (chars <= fit) {
            add_xml(o, name, n);
        } else {
            add_xml(o, name, utf8_prefix(name, n, fit - 2));
            strbuf_adds(o, "..");
        }
        strbuf_adds(o, "</text>");
    }
    strbuf_adds(o, "</g>\n");
}

/* The count at the end of a line and the length of its stack, or 0. */
static int split_line(const char *s, size_t n, size_t *stack_len, uint64_t *count)
{
    const char *sp = memrchr(s, ' ', n);
    if (!sp || sp == s)
        return 0;
    char *end;
    unsigned long long c = strtoull(sp + 1, &end, 10);
    if (end != s + n || c == 0)
        return 0;
    *stack_len = (size_t)(sp - s);
    *count = c;
    return 1;
}

/* Pass over the lines: the total and the depth (for the height), or, with
 * l->out set, the rectangles. */
static void walk(const char *collapsed, struct layout *l, struct frame_open *open)
{
    uint32_t nopen = 0;
    uint64_t x = 0;
    for (const char *s = collapsed; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        size_t len;
        uint64_t count;
        if (split_line(s, n, &len, &count)) {
            uint32_t d = 0;
            const char *p = s, *end = s + len;
            /* frames shared with the open ones stay open */
            while (p < end) {
                const char *semi = memchr(p, ';', (size_t)(end - p));
                size_t flen = semi ? (size_t)(semi - p) : (size_t)(end - p);
                if (d < nopen && open[d].len == flen && memcmp(open[d].name, p, flen) == 0) {
                    open[d].name = p; /* the same text, in the line that stays valid */
                    d++;
                    p += flen + (semi ? 1 : 0);
                    continue;
                }
                break;
            }
            while (nopen > d) { /* close the rest, innermost first */
                nopen--;
                if (l->out)
                    rect(l, open[nopen].name, open[nopen].len, nopen + 1, open[nopen].start, x);
            }
            while (p < end) {
                const char *semi = memchr(p, ';', (size_t)(end - p));
                size_t flen = semi ? (size_t)(semi - p) : (size_t)(end - p);
                if (nopen < MAX_DEPTH)
                    open[nopen++] = (struct frame_open){p, flen, x};
                p += flen + (semi ? 1 : 0);
            }
            if (nopen > l->depth_max)
                l->depth_max = nopen;
            x += count;
        }
        s += n + (nl ? 1 : 0);
    }
    while (nopen > 0 && l->out) {
        nopen--;
        rect(l, open[nopen].name, open[nopen].len, nopen + 1, open[nopen].start, x);
    }
    l->total = x;
}

int flame_svg_write(const char *collapsed, const char *title, struct strbuf *out)
{
    struct frame_open *open = malloc(MAX_DEPTH * sizeof(*open));
    if (!open)
        return -ENOMEM;
    struct layout l = {0};
    walk(collapsed, &l, open);
    l.height_px = TOP_PX + BOTTOM_PX + (double)(l.depth_max + 1) * FRAME_PX;
    strbuf_addf(
        out,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
        "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
        "viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        "<style>text { font-family: Verdana, sans-serif; font-size: %dpx; "
        "fill: rgb(0,0,0); } rect:hover { stroke: black; }</style>\n"
        "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,248)\"/>\n"
        "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" style=\"font-size: 17px\">",
        WIDTH_PX, l.height_px, WIDTH_PX, l.height_px, FONT_PX, WIDTH_PX / 2, FONT_PX * 2);
    add_xml(out, title, strlen(title));
    strbuf_adds(out, "</text>\n");
    if (l.total) {
        static const char all[] = "all";
        struct layout draw = l;
        draw.out = out;
        rect(&draw, all, sizeof(all) - 1, 0, 0, l.total);
        walk(collapsed, &draw, open);
    } else {
        strbuf_addf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">no samples</text>\n",
                    WIDTH_PX / 2, l.height_px / 2);
    }
    strbuf_adds(out, "</svg>\n");
    free(open);
    return strbuf_failed(out) ? -ENOMEM : 0;
}
