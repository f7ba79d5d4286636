/*
 * The standalone flame graph page: the same escaping and embedding as the
 * report (report.c): the data in <script type="application/json">, our
 * script and style inline, and a Content-Security-Policy of default-src
 * 'none', so the page can reach nothing even if a name slipped through.
 * The script renders every string with textContent or the canvas.
 */
#include <errno.h>
#include <string.h>

#include "common/file.h"
#include "common/log.h"
#include "render/flame_html.h"
#include "render/report_internal.h"

extern const unsigned char report_asset_flame_js[], report_asset_flame_css[];
extern const size_t report_asset_flame_js_len, report_asset_flame_css_len;

/* What starts the graph once the page is parsed (ours, no data in it). */
static const char start_script[] =
    "(function () {\n"
    "  var d = JSON.parse(document.getElementById('strobe-flame').textContent);\n"
    "  document.getElementById('run').textContent = 'run ' + (d.run || '?');\n"
    "  strobeFlame.create(document.getElementById('app'), {data: d});\n"
    "  document.body.setAttribute('data-ready', '1');\n"
    "})();\n";

static int build_page(const struct strbuf *json, struct strbuf *html)
{
    struct strbuf err; /* our own assets are checked: a failure is the build's */
    strbuf_init(&err);
    strbuf_adds(html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                      "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n"
                      "<title>strobe flame graph</title>\n<style>\nbody { margin: 16px 24px; font: "
                      "14px/1.45 system-ui, sans-serif; color: #1d2330; }\nh1 { font-size: 18px; "
                      "margin: 0 0 8px; }\n</style>\n");
    int rc = report_add_asset(html, "<style>\n", report_asset_flame_css, report_asset_flame_css_len,
                              "\n</style>\n", &err);
    if (rc == 0) {
        strbuf_adds(html, "</head>\n<body>\n<noscript>This page draws its graph with "
                          "JavaScript.</noscript>\n<h1>Python hotspots <small id=\"run\"></small>"
                          "</h1>\n<div id=\"app\"></div>\n"
                          "<script type=\"application/json\" id=\"strobe-flame\">");
        rc = report_add_json_for_script(html, json->buf, json->len);
    }
    if (rc == 0) {
        strbuf_adds(html, "</script>\n");
        rc = report_add_asset(html, "<script>\n", report_asset_flame_js, report_asset_flame_js_len,
                              "\n</script>\n", &err);
    }
    if (rc == 0) {
        strbuf_adds(html, "<script>\n");
        strbuf_adds(html, start_script);
        strbuf_adds(html, "</script>\n</body>\n</html>\n");
    }
    if (rc == 0 && strbuf_failed(html))
        rc = -ENOMEM;
    strbuf_release(&err);
    return rc;
}

int flame_html_write(const struct strbuf *flame_json, FILE *out)
{
    struct strbuf html;
    strbuf_init(&html);
    int rc = build_page(flame_json, &html);
    if (rc < 0)
        log_error("cannot build the flame graph page: %s",
                  rc == -ENOMEM ? "out of memory" : "an embedded asset is broken");
    else if (file_write_stream(out, &html) < 0) {
        log_error("cannot write the flame graph page: %s", strerror(errno));
        rc = -EIO;
    }
    strbuf_release(&html);
    return rc;
}
