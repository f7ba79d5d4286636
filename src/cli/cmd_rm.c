/*
 * strobe rm: remove runs from a store, named one by one or chosen by the
 * filters strobe ls takes (strobe rm --status lost). A run still recording
 * is not removed: its recorder would go on writing series of a run that is
 * gone. --force removes it all the same, with a warning: where the check
 * cannot tell (a recorder on another host that died), the user can.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "store/job.h"

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

static void remove_run(const struct run_record *r, void *arg)
{
    struct rm_ctx *c = arg;
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
    } else if ((run_record_is_job(r) ? store_job_delete(c->s, r->id)
                                     : c->s->ops->run_delete(c->s, r->id)) < 0) {
        log_error("cannot remove run %s: %s", r->id, c->s->err.buf);
        c->status = CLI_EXIT_ERROR;
    } else {
        printf("removed run %s '%s'%s\n", r->id, name,
               run_record_is_job(r) ? " and its nodes' runs" : "");
    }
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
    if ((status = run_filter_operands(cli, &f, &rm_usage, opts)) >= 0)
        return status;
    if ((status = cli_open(cli)) >= 0)
        return status;
    c.s = cli->store;
    return cli_each_run(cli, &f, remove_run, &c) | c.status;
}
