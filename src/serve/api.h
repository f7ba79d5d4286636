/*
 * The JSON API of strobe serve, apart from HTTP: a path and its query
 * arguments in, a status and a JSON body out. docs/api.md documents each
 * endpoint and its keys. Every string from the store goes through the JSON
 * writer (strbuf_add_json_str), so nothing a run is called can break out of
 * its JSON string.
 */
#ifndef STROBE_SERVE_API_H
#define STROBE_SERVE_API_H

#include <stddef.h>

#include "serve/serve.h"
#include "serve/summary.h"

#define API_MAX_ARGS 32

struct api_query { /* decoded query arguments, in order (pointers are borrowed) */
    size_t n;
    const char *key[API_MAX_ARGS];
    const char *value[API_MAX_ARGS];
};

struct api_ctx {
    struct store *s; /* this thread's store */
    const struct serve_hooks *hooks;
    struct summary_cache *cache;
};

/* Answer GET path (which starts with /api/) into body; returns the HTTP
 * status (200, 400, 404, 500, ...; an error body is {"error":"..."}). */
int api_handle(const struct api_ctx *c, const char *path, const struct api_query *q,
               struct strbuf *body);

/* Append {"error":msg} to body. */
void api_error(struct strbuf *body, const char *msg);

#endif
