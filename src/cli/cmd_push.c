/*
 * strobe push: send what a recorder left in its spool into a store
 * (record/spool.h). strobe run names the spool, and this command, when its
 * PostgreSQL store did not answer by the end of the run.
 *
 * A spool is a store of its own (SQLite). Each run in it is merged into
 * the destination (store_copy_merge, one transaction per run), which takes
 * only the rows it lacks or holds less of: pushing twice writes nothing the
 * second time, and a run the destination lacks arrives whole. A node run of
 * a job (cluster mode) then brings its job's status and span up to date,
 * as its recorder would have at the end. The spools
 * are opened, to read, before the destination: a spool that is missing or
 * no store is one line, and nothing is written; when none is left the
 * destination is not even opened (a SQLite one not made).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/log.h"
#include "store/copy.h"
#include "store/job.h"

static const struct cli_usage push_usage = {
    "push",
    "usage: strobe push [--store S] SPOOL...\n",
    "SPOOL... are files strobe run left when its store did not answer by the end of a\n"
    "run (it names each one). Each run in them is merged into the store: the rows the\n"
    "store lacks are added, and pushing again adds nothing. The spool is kept.\n",
    -1,
    0,
};

/* The spool at path, opened to read; NULL after one line saying why. */
static struct store *open_spool(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        log_error("cannot read spool '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct store *s = NULL;
    return cli_open_store(path, 1, &s) < 0 ? NULL : s;
}

/* One line for what the merge of r did. */
static void say(const char *path, const struct run_record *r, const struct store_merge_tally *t)
{
    struct strbuf name;
    strbuf_init(&name);
    cli_visible(&name, r->name ? r->name : "");
    if (store_merge_changed(t))
        printf("pushed run %s '%s' from %s (%lld blocks, %lld event blocks)\n", r->id, name.buf,
               path, (long long)t->blocks, (long long)t->event_blocks);
    else
        printf("skipped run %s '%s' from %s: already there\n", r->id, name.buf, path);
    strbuf_release(&name);
}

/* A node run's job takes its status and span from its nodes: the node's
 * recorder could not bring it up to date at the end (cluster mode). */
static int rollup_job(struct store *to, const struct run_record *r)
{
    int rc = to->ops->begin(to);
    if (rc == 0)
        rc = store_job_rollup(to, r->parent_id);
    if (rc == 0)
        rc = to->ops->commit(to);
    if (rc < 0) {
        log_error("cannot update job %s's status in '%s': %s", r->parent_id, to->uri, to->err.buf);
        to->ops->rollback(to);
    }
    return rc;
}

/* What push_spool's runs_query callback needs. */
struct push_ctx {
    struct store *from, *to;
    const char *path;
    int runs;   /* runs seen */
    int status; /* CLI_EXIT_ERROR after the first that failed */
};

/* Merge r, a run of the spool; one line. The spool is only read, so its
 * query may go on around the merge. */
static int push_run(const struct run_record *r, void *arg)
{
    struct push_ctx *c = arg;
    struct store_merge_tally t;
    struct strbuf err;
    strbuf_init(&err);
    c->runs++;
    int rc = store_copy_merge(c->from, c->to, r, &t, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    else
        say(c->path, r, &t);
    strbuf_release(&err);
    if (rc == 0 && t.run && r->parent_id)
        rc = rollup_job(c->to, r);
    if (rc < 0)
        c->status = CLI_EXIT_ERROR;
    return 0;
}

/* Every run of the spool at path into to: CLI_EXIT_OK, or CLI_EXIT_ERROR
 * after one line a failure. */
static int push_spool(struct store *from, const char *path, struct store *to)
{
    if (cli_same_store(from, to)) {
        log_error("spool '%s' is the store itself", path);
        return CLI_EXIT_ERROR;
    }
    struct push_ctx c = {from, to, path, 0, CLI_EXIT_OK};
    int rc = from->ops->runs_query(from, NULL, push_run, &c);
    if (rc < 0 || !c.runs) {
        log_error("spool '%s' %s", path, rc < 0 ? "cannot be read" : "holds no run");
        return CLI_EXIT_ERROR;
    }
    return c.status;
}

int cmd_push(struct cli_ctx *cli, int argc, char **argv)
{
    const struct cli_option opts[] = {CLI_OPT_END};
    int status = cli_parse(cli, &push_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (cli->nargs < 1)
        return cli_usage_error(cli, &push_usage, opts);
    struct store **spools = calloc((size_t)cli->nargs, sizeof(*spools));
    if (!spools) {
        log_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    int opened = 0;
    for (int i = 0; i < cli->nargs; i++)
        opened += (spools[i] = open_spool(cli->args[i])) != NULL;
    status = opened < cli->nargs ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    int open_rc = opened ? cli_open(cli) : CLI_EXIT_ERROR;
    for (int i = 0; i < cli->nargs; i++) {
        if (spools[i] && open_rc < 0)
            status |= push_spool(spools[i], cli->args[i], cli->store);
        store_close(spools[i]);
    }
    free(spools);
    return open_rc >= 0 ? open_rc : status;
}
