/*
 * The report as one HTML file: uPlot and our own script and style inline
 * (embedded into the binary at build time, src/render/report_assets via the
 * Makefile), the data as JSON in a <script type="application/json"> block.
 *
 * Why it cannot be broken out of: the JSON is escaped so that no '<', '>'
 * or '&' appears in it (\u003c, ...), which rules out "</script>" and
 * "<!--" whatever a run name holds, and U+2028/U+2029 are escaped too; the
 * page's script renders every string with textContent, never as markup; and
 * a Content-Security-Policy of default-src 'none' forbids every network
 * request even if something did slip through.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "render/report.h"
#include "render/report_internal.h"

extern const unsigned char report_asset_uplot_js[], report_asset_uplot_css[];
extern const unsigned char report_asset_format_js[], report_asset_report_js[];
extern const unsigned char report_asset_report_css[], report_asset_metrics_js[];
extern const size_t report_asset_uplot_js_len, report_asset_uplot_css_len;
extern const size_t report_asset_format_js_len, report_asset_report_js_len;
extern const size_t report_asset_report_css_len, report_asset_metrics_js_len;
extern const unsigned char report_asset_flame_js[], report_asset_flame_css[];
extern const size_t report_asset_flame_js_len, report_asset_flame_css_len;

const char *report_file_name(const struct run_record *r, const char *suffix, char *buf, size_t cap)
{
    const char *base = r->name && r->name[0] ? r->name : r->id;
    size_t n = 0;
    for (const char *p = base; *p && n + 1 < cap && n < 128; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && n > 0);
        buf[n++] = ok ? c : '_';
    }
    buf[n] = '\0';
    snprintf(buf + n, cap - n, "%s", suffix);
    return buf;
}

/* Append JSON with every character that could end the script element or
 * start markup written as a JSON escape. They can only occur inside strings
 * (JSON's structure is made of none of them), where the escape means the
 * same character. */
int report_add_json_for_script(struct strbuf *o, const char *json, size_t len)
{
    if (strbuf_grow(o, len + len / 8) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)json[i];
        if (c == '<')
            strbuf_adds(o, "\\u003c");
        else if (c == '>')
            strbuf_adds(o, "\\u003e");
        else if (c == '&')
            strbuf_adds(o, "\\u0026");
        else if (c == 0xE2 && i + 2 < len && (unsigned char)json[i + 1] == 0x80 &&
                 ((unsigned char)json[i + 2] == 0xA8 || (unsigned char)json[i + 2] == 0xA9)) {
            strbuf_adds(o, (unsigned char)json[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
            i += 2;
        } else
            strbuf_addch(o, (char)c);
    }
    return 0;
}

/* An embedded script or style, refused if it could close its element early
 * (it is ours or uPlot's, so this is a check on the build, not on input). */
int report_add_asset(struct strbuf *o, const char *open, const unsigned char *a, size_t len,
                     const char *close, struct strbuf *err)
{
    if (strstr((const char *)a, "</script") || strstr((const char *)a, "</style") ||
        strlen((const char *)a) != len) {
        strbuf_adds(err, "an embedded asset of the report would end its element early");
        return -EINVAL;
    }
    strbuf_adds(o, open);
    strbuf_add(o, a, len);
    strbuf_adds(o, close);
    return 0;
}

static int build_html(struct store *s, const struct run_record *r, struct strbuf *html,
                      struct report_stats *st, struct strbuf *err)
{
    struct strbuf data;
    strbuf_init(&data);
    int rc = report_data_json(s, r, &data, st, err);
    if (rc < 0)
        goto out;
    strbuf_adds(html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                      "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src "
                      "data:\">\n<title>strobe report</title>\n");
    rc = report_add_asset(html, "<style>\n", report_asset_uplot_css, report_asset_uplot_css_len,
                          "\n</style>\n", err);
    if (rc == 0)
        rc = report_add_asset(html, "<style>\n", report_asset_flame_css, report_asset_flame_css_len,
                              "\n</style>\n", err);
    if (rc == 0)
        rc = report_add_asset(html, "<style>\n", report_asset_report_css,
                              report_asset_report_css_len, "\n</style>\n", err);
    if (rc < 0)
        goto out;
    strbuf_adds(html, "</head>\n<body>\n<noscript>This report draws its charts with "
                      "JavaScript.</noscript>\n<div id=\"app\"></div>\n"
                      "<script type=\"application/json\" id=\"strobe-data\">");
    rc = report_add_json_for_script(html, data.buf, data.len);
    if (rc < 0) {
        strbuf_adds(err, "out of memory");
        goto out;
    }
    strbuf_adds(html, "</script>\n");
    rc = report_add_asset(html, "<script>\n", report_asset_uplot_js, report_asset_uplot_js_len,
                          "\n</script>\n", err);
    if (rc == 0) /* the figures' formatting, shared with the dashboard */
        rc = report_add_asset(html, "<script>\n", report_asset_format_js,
                              report_asset_format_js_len, "\n</script>\n", err);
    if (rc == 0) /* the catalog of metrics (common/metrics.def), which names them */
        rc = report_add_asset(html, "<script>\n", report_asset_metrics_js,
                              report_asset_metrics_js_len, "\n</script>\n", err);
    if (rc == 0) /* the flame graph of the Python hotspots, shared with the dashboard */
        rc = report_add_asset(html, "<script>\n", report_asset_flame_js, report_asset_flame_js_len,
                              "\n</script>\n", err);
    if (rc == 0)
        rc = report_add_asset(html, "<script>\n", report_asset_report_js,
                              report_asset_report_js_len, "\n</script>\n", err);
    strbuf_adds(html, "</body>\n</html>\n");
out:
    strbuf_release(&data);
    return rc;
}

static int write_file(const char *path, const struct strbuf *buf, struct strbuf *err)
{
    if (strcmp(path, "-") == 0) {
        if (file_write_stream(stdout, buf) < 0) {
            strbuf_addf(err, "cannot write the report to stdout: %s", strerror(errno));
            return -EIO;
        }
        return 0;
    }
    /* a link is followed, a device or FIFO written into (common/file.h) */
    int rc = file_replace(path, buf);
    if (rc < 0)
        strbuf_addf(err, "cannot write report '%s': %s", path, strerror(-rc));
    return rc;
}

int report_write(struct store *s, const struct run_record *r, const char *path,
                 struct report_stats *st, struct strbuf *err)
{
    struct report_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof(*st));
    struct strbuf html;
    strbuf_init(&html);
    int rc = build_html(s, r, &html, st, err);
    if (rc == 0 && html.len == 0) {
        strbuf_adds(err, "out of memory");
        rc = -ENOMEM;
    }
    if (rc == 0)
        rc = write_file(path, &html, err);
    st->bytes = html.len;
    strbuf_release(&html);
    return rc;
}
