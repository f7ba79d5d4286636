/*
 * The dashboard's static files, embedded at build time: the Makefile turns
 * every file under web/dashboard/ (and the uPlot build from npm) into
 * $(BUILD)/gen/serve_assets.c, one entry each. Requests are answered from
 * this table only: nothing is ever read from the file system.
 */
#ifndef STROBE_SERVE_ASSETS_H
#define STROBE_SERVE_ASSETS_H

#include <stddef.h>

struct serve_asset {
    const char *name;          /* file name, no directory: [A-Za-z0-9._-]+ */
    const unsigned char *data; /* its bytes (NUL-terminated, not counted) */
    size_t len;
};

extern const struct serve_asset serve_assets[];
extern const size_t serve_assets_count;

/* The asset called name, or NULL. */
const struct serve_asset *serve_asset_find(const char *name);
/* Content-Type for a file name, from its extension. */
const char *serve_asset_type(const char *name);

#endif
