/* Backends behind store_open(); private to src/store/. */
#ifndef STROBE_STORE_BACKEND_H
#define STROBE_STORE_BACKEND_H

#include "store/store.h"

int store_sqlite_open(const char *uri, int readonly, struct store **out, struct strbuf *err);
/* uri is postgresql://...; s->uri is kept without the password. */
int store_postgres_open(const char *uri, int readonly, struct store **out, struct strbuf *err);

/* blocks_put as a backend without a batched form does it: block_upsert of
 * each block in turn, stopping at the first failure. */
int store_blocks_put_each(struct store *s, const struct block_put *blocks, size_t n);

/* Append libpq's message of a failed connection to out as one line, for
 * "cannot connect to URI: ...": the server's words without the "connection
 * to server at ... failed:" and "FATAL:" prefixes, or libpq's own. Every
 * occurrence of each secret (NULL and "" are skipped) becomes "***". */
void pg_connect_error_line(const char *libpq_msg, const char *const *secrets, size_t nsecrets,
                           struct strbuf *out);

#endif
