/*
 * strobe-flamehtml: the page `strobe flame --format html` writes, from flame
 * data (docs/api.md) read on stdin, written to stdout. The browser tests
 * feed it data they made, so they know every count the page must show.
 *
 *   strobe-flamehtml < flame.json > flame.html
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "render/flame_html.h"

int main(void)
{
    struct strbuf json;
    strbuf_init(&json);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
        strbuf_add(&json, buf, n);
    int rc = ferror(stdin) || strbuf_failed(&json) ? -EIO : flame_html_write(&json, stdout);
    if (rc == 0 && fflush(stdout) != 0)
        rc = -EIO;
    if (rc < 0)
        fprintf(stderr, "strobe-flamehtml: cannot write the page: %s\n", strerror(-rc));
    strbuf_release(&json);
    return rc < 0 ? 1 : 0;
}
