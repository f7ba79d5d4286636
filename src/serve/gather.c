/*
 * strobe serve's /metrics: the snapshot each running run's recorder keeps in
 * the store (run text EXPO_TEXT_KIND, serve/expo.h), gathered into one set.
 * A node of a job keeps its own in its node run, so a cluster's store gives
 * every node's. A run still marked running whose snapshot has not changed
 * for EXPO_STALE_NS lost its recorder: it is left out, so that a dead job
 * does not read as a live one in Grafana. A snapshot that does not parse is
 * left out whole (expo_set_add_snapshot checks it first).
 */
#include <errno.h>
#include <string.h>

#include "serve/serve.h"

struct gather {
    struct store *s;
    struct expo_set *set;
    int64_t now_ns;
    int n;
    int err;
};

static int take_snapshot(const struct run_text_record *t, void *arg)
{
    struct gather *g = arg;
    int64_t ts = 0;
    /* its time from the first line: a stale one is not read further */
    if (expo_snapshot_time(t->data, t->len, &ts) < 0 || g->now_ns - ts > EXPO_STALE_NS)
        return 0;
    int rc = expo_set_add_snapshot(g->set, t->data, t->len, NULL);
    if (rc == 0)
        g->n++;
    else if (rc == -ENOMEM)
        g->err = rc;
    return 0;
}

static int take_run(const struct run_record *r, void *arg)
{
    struct gather *g = arg;
    int rc = g->s->ops->run_text_get(g->s, r->id, EXPO_TEXT_KIND, take_snapshot, g);
    return rc < 0 ? rc : g->err;
}

int serve_gather_metrics(struct store *s, int64_t now_ns, struct expo_set *set)
{
    struct gather g = {s, set, now_ns, 0, 0};
    int rc = s->ops->runs_where(s, RUNS_OF_STATUS, RUN_RUNNING, take_run, &g);
    return rc < 0 ? rc : g.err < 0 ? g.err : g.n;
}
