/*
 * The filters of strobe ls, rm and copy: which runs of a store a command
 * takes, by experiment, workload, status and name. rm and copy take RUNs
 * or filters: the matching runs' ids are collected while the store's
 * query steps, and handled after it (as RUNs, each resolved again).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/log.h"
#include "common/strlist.h"

static const char *const filter_statuses[] = {RUN_RUNNING, RUN_FINISHED, RUN_FAILED, RUN_CRASHED,
                                              RUN_KILLED,  RUN_STOPPED,  RUN_LOST};
#define NSTATUS (ARRAY_SIZE(filter_statuses))

static int status_index(const char *s, size_t len)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (strlen(filter_statuses[i]) == len && strncmp(filter_statuses[i], s, len) == 0)
            return (int)i;
    return -1;
}

/* One status of the list into the mask (arg); -EINVAL after saying why. */
static int add_status(const char *item, size_t len, void *arg)
{
    unsigned *mask = arg;
    int i = status_index(item, len);
    if (i < 0) {
        log_error("--status: '%.*s' is not a status (running, finished, failed, crashed, "
                  "killed, stopped, lost)",
                  (int)len, item);
        return -EINVAL;
    }
    *mask |= 1u << i;
    return 0;
}

/* "failed,crashed" into the mask; 0, or -EINVAL after saying why. An empty
 * item ("" or "failed,") is no status, so strlist_split hands it over. */
static int parse_statuses(const char *arg, unsigned *mask)
{
    return strlist_split(arg, add_status, mask);
}

int run_filter_status_option(const struct cli_option *opt, const char *arg)
{
    return parse_statuses(arg, opt->value) < 0 ? -1 : 0;
}

int run_filter_any(const struct run_filter *f)
{
    return f->experiment || f->workload || f->name_glob || f->status_mask;
}

int run_filter_match(const struct run_filter *f, const struct run_record *r)
{
    /* the experiment is the store's query; checked again for callers that
     * list every run */
    if (f->experiment && (!r->experiment || strcmp(r->experiment, f->experiment) != 0))
        return 0;
    const char *workload = run_record_workload(r);
    if (f->workload && (!workload || strcmp(workload, f->workload) != 0))
        return 0;
    if (f->name_glob && fnmatch(f->name_glob, r->name ? r->name : "", 0) != 0)
        return 0;
    if (f->status_mask) {
        const char *st = run_record_status(r);
        int i = status_index(st, strlen(st));
        if (i < 0 || !(f->status_mask & (1u << i)))
            return 0;
    }
    return 1;
}

int run_filter_operands(struct cli_ctx *cli, const struct run_filter *f, const struct cli_usage *u,
                        const struct cli_option *opts)
{
    int named = cli->nargs > 0, filtered = run_filter_any(f);
    if (named != filtered)
        return -1;
    /* neither: no run to take; both: which would win is a guess */
    if (!named)
        return cli_usage_error(cli, u, opts);
    log_error("%s takes RUNs or filters, not both", u->cmd);
    return CLI_EXIT_USAGE;
}

/* The ids of the runs a filter matches, collected while the query steps. */
struct run_ids {
    char (*ids)[RUN_ID_LEN + 1];
    uint32_t n, cap;
};

struct matches {
    const struct run_filter *f;
    struct run_ids *out;
    int nomem;
};

static int collect_match(const struct run_record *r, void *arg)
{
    struct matches *m = arg;
    struct run_ids *l = m->out;
    if (!run_filter_match(m->f, r))
        return 0;
    if (array_grow((void **)&l->ids, &l->cap, l->n + 1, sizeof(*l->ids), 64) < 0) {
        m->nomem = 1;
        return 1; /* stop */
    }
    memcpy(l->ids[l->n++], r->id, RUN_ID_LEN + 1);
    return 0;
}

/* The ids of the runs f matches, newest first (caller frees ids): 0
 * (after a note when none matches), or -1 after one line saying why (out
 * then empty). */
static int run_filter_ids(struct store *s, const struct run_filter *f, struct run_ids *out)
{
    struct matches m = {f, out, 0};
    memset(out, 0, sizeof(*out));
    if (s->ops->runs_query(s, f->experiment, collect_match, &m) < 0 || m.nomem) {
        log_error("cannot list runs in '%s': %s", s->uri, m.nomem ? "out of memory" : s->err.buf);
        free(out->ids);
        memset(out, 0, sizeof(*out));
        return -1;
    }
    if (!out->n)
        log_note("no run matches");
    return 0;
}

/* fn on the run ref names; CLI_EXIT_ERROR when there is none. */
static int each_ref(struct store *s, const char *ref, cli_run_fn *fn, void *arg)
{
    struct run_record r;
    if (cli_resolve(s, ref, &r) < 0)
        return CLI_EXIT_ERROR;
    fn(&r, arg);
    run_record_release(&r);
    return CLI_EXIT_OK;
}

int cli_each_run(struct cli_ctx *cli, const struct run_filter *f, cli_run_fn *fn, void *arg)
{
    int status = CLI_EXIT_OK;
    if (cli->nargs) {
        for (int i = 0; i < cli->nargs; i++)
            status |= each_ref(cli->store, cli->args[i], fn, arg);
        return status;
    }
    struct run_ids m;
    if (run_filter_ids(cli->store, f, &m) < 0)
        status = CLI_EXIT_ERROR;
    /* resolved again by id: each run is read afresh, after the list */
    for (uint32_t i = 0; i < m.n; i++)
        status |= each_ref(cli->store, m.ids[i], fn, arg);
    free(m.ids);
    return status;
}
