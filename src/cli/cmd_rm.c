/*
 * strobe rm: remove runs from a store, named one by one or chosen by the
 * filters strobe ls takes (strobe rm --status lost). A run still recording
 * is not removed: its recorder would go on writing series of a run that is
 * gone. --force removes it all the same, with a warning: where the check
 * cannot tell (a recorder on another host that died), the user can.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/log.h"

static const struct cli_usage rm_usage = {
    "rm",
    "usage: strobe rm [--store S] [--dry-run] [--force] RUN...\n"
    "       strobe rm [--store S] [--dry-run] [--force] [--experiment E] [--workload W]\n"
    "                 [--status S[,S...]] [--name GLOB]\n",
    "RUN... are runs by id, id prefix, name or 'last'; the filters (at least one) take\n"
    "every run they match, as strobe ls lists them.\n",
    -1,
    0,
};

struct rm_ctx {
    struct store *s;
    int dry_run;
    int force;  /* remove runs that look still recording too */
    int status; /* the exit status so far */
};

static void remove_run(struct rm_ctx *c, const struct run_record *r)
{
    const char *name = r->name ? r->name : "";
    int recording = strcmp(run_record_status(r), RUN_RUNNING) == 0;
    if (recording && !c->force) {
        log_error("run %s '%s' is still recording (pid %lld on %s); stop it first, or --force",
                  r->id, name, (long long)r->recorder_pid, r->host ? r->host : "an unknown host");
        c->status = CLI_EXIT_ERROR;
        return;
    }
    if (recording) /* said before the removal, so a dry run says it too */
        log_warn("run %s '%s' looks still recording (pid %lld on %s); removing it anyway", r->id,
                 name, (long long)r->recorder_pid, r->host ? r->host : "an unknown host");
    if (c->dry_run) {
        printf("would remove run %s '%s'\n", r->id, name);
    } else if (c->s->ops->run_delete(c->s, r->id) < 0) {
        log_error("cannot remove run %s: %s", r->id, c->s->err.buf);
        c->status = CLI_EXIT_ERROR;
    } else {
        printf("removed run %s '%s'\n", r->id, name);
    }
}

/* The run ref names (an id, prefix, name or last). */
static void remove_ref(struct rm_ctx *c, const char *ref)
{
    struct run_record r;
    if (cli_resolve(c->s, ref, &r) < 0) {
        c->status = CLI_EXIT_ERROR;
        return;
    }
    remove_run(c, &r);
    run_record_release(&r);
}

/* The matching runs' ids, taken while the query steps; removed after it. */
struct matches {
    const struct run_filter *f;
    char (*ids)[RUN_ID_LEN + 1];
    uint32_t n, cap;
    int nomem;
};

static int collect_match(const struct run_record *r, void *arg)
{
    struct matches *m = arg;
    if (!run_filter_match(m->f, r))
        return 0;
    if (array_grow((void **)&m->ids, &m->cap, m->n + 1, sizeof(*m->ids), 64) < 0) {
        m->nomem = 1;
        return 1; /* stop */
    }
    memcpy(m->ids[m->n++], r->id, RUN_ID_LEN + 1);
    return 0;
}

static void remove_matching(struct rm_ctx *c, const struct run_filter *f)
{
    struct matches m = {f, NULL, 0, 0, 0};
    if (c->s->ops->runs_query(c->s, f->experiment, collect_match, &m) < 0 || m.nomem) {
        log_error("cannot list runs in '%s': %s", c->s->uri,
                  m.nomem ? "out of memory" : c->s->err.buf);
        c->status = CLI_EXIT_ERROR;
    } else if (!m.n) {
        log_note("no run matches");
    }
    for (uint32_t i = 0; !m.nomem && i < m.n; i++)
        remove_ref(c, m.ids[i]);
    free(m.ids);
}

int cmd_rm(struct cli_ctx *cli, int argc, char **argv)
{
    struct run_filter f = {0};
    struct rm_ctx c = {0};
    const struct cli_option opts[] = {
        CLI_OPT_FLAG(0, "dry-run", &c.dry_run, "say what would be removed, remove nothing"),
        CLI_OPT_FLAG(0, "force", &c.force,
                     "remove runs that look still recording too (their recorder\n"
                     "died where strobe cannot tell, as on another host)"),
        CLI_OPT_RUN_FILTER(&f, 0, 0),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &rm_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    int named = cli->nargs > 0, filtered = run_filter_any(&f);
    if (named == filtered) {
        /* neither: nothing to remove; both: which would win is a guess */
        if (!named)
            return cli_usage_error(cli, &rm_usage, opts);
        log_error("rm takes RUNs or filters, not both");
        return CLI_EXIT_USAGE;
    }
    if ((status = cli_open(cli)) >= 0)
        return status;
    c.s = cli->store;
    if (named)
        for (int i = 0; i < cli->nargs; i++)
            remove_ref(&c, cli->args[i]);
    else
        remove_matching(&c, &f);
    return c.status;
}
