/*
 * strobe serve: a read-only HTTP API over a store, and the dashboard's
 * assets, on libmicrohttpd (docs/api.md lists every endpoint and key).
 *
 * Threading: libmicrohttpd's internal thread pool answers requests; each
 * worker thread opens the store read-only on its first request and keeps it
 * (SQLite in WAL mode lets readers work beside a live recorder).
 */
#ifndef STROBE_SERVE_SERVE_H
#define STROBE_SERVE_SERVE_H

#include <stdint.h>

#include "common/strbuf.h"
#include "serve/expo.h"
#include "store/store.h"

/* What the server takes from the command line's code (src/cli/), so that
 * src/serve/ does not depend on it. */
struct serve_hooks {
    /* The run as `strobe show --json` prints it, appended to o. 0 or negative. */
    int (*run_json)(struct store *s, const struct run_record *r, struct strbuf *o);
};

struct serve_config {
    const char *store_uri;
    const char *listen; /* HOST:PORT, [V6]:PORT; port 0 picks a free one */
    const char *token;  /* NULL: no token (loopback only) */
    unsigned threads;   /* worker threads */
    double rate_per_s;  /* requests per second per client, sustained */
    double burst;       /* requests a client may send at once */
    struct serve_hooks hooks;
    /* strobe run --listen: no store; /metrics is all there is, and gets the
     * families from this callback (any of the server's threads). 0, or
     * negative when there is nothing yet (503). */
    int (*metrics)(void *arg, struct expo_set *set);
    void *metrics_arg;
};

/* Exit statuses of serve_run (the CLI's). */
#define SERVE_EXIT_OK    0
#define SERVE_EXIT_ERROR 1
#define SERVE_EXIT_USAGE 2

/*
 * Serve until SIGINT or SIGTERM, then stop cleanly (in-flight requests
 * finish). Prints "strobe: serving http://HOST:PORT/ ..." on stderr once
 * listening. Refuses (SERVE_EXIT_USAGE, one line on stderr) a non-loopback
 * address without a token. Returns an exit status.
 */
int serve_run(const struct serve_config *c);

/* What serve_run is made of, for a server that runs beside other work (the
 * recorder's --listen). serve_start checks the address as serve_run does
 * (one line on stderr and SERVE_EXIT_USAGE or SERVE_EXIT_ERROR when it
 * fails) and starts serving; c must outlive the server. */
struct serve_handle;
int serve_start(const struct serve_config *c, struct serve_handle **out);
/* "http://HOST:PORT" of the listening socket into buf. */
void serve_address(const struct serve_handle *h, char *buf, size_t cap);
/* Stop (in-flight requests finish) and free; NULL does nothing. */
void serve_stop(struct serve_handle *h);

/* The stored snapshots of every running run in s (serve/expo.h) into set;
 * those older than EXPO_STALE_NS at now_ns are left out, as are garbled
 * ones. The number gathered, or negative (s's error). */
int serve_gather_metrics(struct store *s, int64_t now_ns, struct expo_set *set);

#endif
