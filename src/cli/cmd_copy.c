/*
 * strobe copy: copy runs from one store to another, either backend to
 * either (store/copy.h). The source is --from, else the usual store
 * (--store, $STROBE_STORE, ./strobe.db), opened to read; the destination
 * is --to, created and migrated as needed. Runs keep their ids.
 *
 * Copying is idempotent: a run the destination holds already is skipped
 * when it is the same there, replaced when the source's has gone further
 * (a spool pushed after the server came back), kept when the
 * destination's has. One line per run says which. A run both sides
 * changed is refused, naming it: exit 1.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/job.h"
#include "common/err.h"
#include "common/fmt.h"
#include "common/log.h"
#include "store/copy.h"

static const struct cli_usage copy_usage = {
    "copy",
    "usage: strobe copy [--from S] --to S [--dry-run] RUN...\n"
    "       strobe copy [--from S] --to S [--dry-run] [--experiment E] [--workload W]\n"
    "                   [--status S[,S...]] [--name GLOB]\n",
    "RUN... are runs of the source by id, id prefix, name or 'last'; the filters (at\n"
    "least one) take every run they match, as strobe ls lists them. A run keeps its id.\n"
    "A run already in the destination is skipped when it is the same there, and\n"
    "replaced when the source's has gone further (it was still recording there).\n",
    -1,
    0,
};

struct copy_cli {
    struct store *from, *to;
    int dry_run;
    int status; /* the exit status so far */
};

/* "(12 series, 340 blocks, 2.1 MiB)": what the copy carries. */
static void say_size(const struct store_copy_tally *t)
{
    char bytes[32];
    fmt_bytes((double)(t->block_bytes + t->event_bytes + t->py_bytes), bytes, sizeof(bytes));
    printf(" (%lld series, %lld blocks, %s)", (long long)t->series,
           (long long)(t->blocks + t->event_blocks + t->py_blocks), bytes);
}

/* One line for what was done (or, in a dry run, would be). */
static void say(struct copy_cli *c, const struct run_record *r, const struct store_copy_plan *p)
{
    static const char *const done[][2] = {
        [STORE_COPY_NEW] = {"copied", "would copy"},
        [STORE_COPY_REPLACE] = {"replaced", "would replace"},
        [STORE_COPY_SAME] = {"skipped", "would skip"},
        [STORE_COPY_NEWER] = {"skipped", "would skip"},
    };
    struct strbuf name;
    strbuf_init(&name);
    printf("%s run %s '%s'", done[p->verdict][c->dry_run], r->id,
           cli_visible(&name, r->name ? r->name : ""));
    strbuf_release(&name);
    if (p->verdict == STORE_COPY_NEW || p->verdict == STORE_COPY_REPLACE)
        say_size(&p->from);
    if (p->verdict == STORE_COPY_REPLACE)
        printf(": the copy there was behind");
    else if (p->verdict == STORE_COPY_SAME)
        printf(": already there");
    else if (p->verdict == STORE_COPY_NEWER)
        printf(": the copy there is further on");
    putchar('\n');
}

static void copy_one(struct copy_cli *c, const struct run_record *r)
{
    if (strcmp(run_record_status(r), RUN_RUNNING) == 0)
        log_warn("run %s '%s' is still recording; copying it as it stands", r->id,
                 r->name ? r->name : "");
    struct store_copy_plan p;
    struct strbuf err;
    strbuf_init(&err);
    int rc = c->dry_run ? store_copy_decide(c->from, c->to, r, &p, &err)
                        : store_copy_run(c->from, c->to, r, &p, &err);
    if (rc < 0) {
        log_error("%s", err.len ? err.buf : "out of memory");
        c->status = CLI_EXIT_ERROR;
    } else if (p.verdict == STORE_COPY_DIVERGED) {
        log_error("run %s differs from its copy in '%s', and neither is further on; remove one "
                  "first (strobe rm)",
                  r->id, c->to->uri); /* a store with the run, so not NULL */
        c->status = CLI_EXIT_ERROR;
    } else {
        say(c, r, &p);
    }
    strbuf_release(&err);
}

/* A run, and a job's node runs after it (cluster mode): the nodes hold
 * the job's data. */
static void copy_run(const struct run_record *r, void *arg)
{
    struct copy_cli *c = arg;
    copy_one(c, r);
    if (!run_record_is_job(r))
        return;
    struct run_list nodes;
    if (store_job_nodes(c->from, r->id, &nodes) < 0) {
        log_error("cannot read the nodes of run %s: %s", r->id, c->from->err.buf);
        c->status = CLI_EXIT_ERROR;
        return;
    }
    for (uint32_t i = 0; i < nodes.n; i++)
        copy_one(c, &nodes.items[i]);
    run_list_release(&nodes);
}

/* The source as the store the command opens: --from, or --store. */
static int pick_source(struct cli_ctx *cli, const char *from)
{
    if (from && cli->store_flag && strcmp(from, cli->store_flag) != 0) {
        log_error("copy: --from and --store name different stores; give one");
        return CLI_EXIT_USAGE;
    }
    if (from)
        cli->store_flag = from;
    return -1;
}

/* The destination, opened to write; a dry run only reads it, and takes a
 * store not made yet as an empty one (*out NULL). */
static int open_destination(struct cli_ctx *cli, const char *uri, int dry_run, struct store **out)
{
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(uri, dry_run, out, &err);
    if (rc == -STROBE_ENOTFOUND && dry_run)
        rc = 0;
    else if (rc < 0)
        log_error("%s", err.buf);
    strbuf_release(&err);
    if (rc == 0 && *out && cli_same_store(cli->store, *out)) {
        log_error("--from and --to are the same store '%s'", cli->store->uri);
        store_close(*out);
        *out = NULL;
        rc = -1;
    }
    return rc < 0 ? CLI_EXIT_ERROR : -1;
}

int cmd_copy(struct cli_ctx *cli, int argc, char **argv)
{
    struct run_filter f = {0};
    struct copy_cli c = {0};
    const char *from = NULL, *to = NULL;
    const struct cli_option opts[] = {
        CLI_OPT_STRING(0, "from", &from, "S", "the store to copy from (default: as --store)"),
        CLI_OPT_STRING(0, "to", &to, "S", "the store to copy to, created when missing"),
        CLI_OPT_FLAG(0, "dry-run", &c.dry_run, "say what would be copied, write nothing"),
        CLI_OPT_RUN_FILTER(&f, 0, 0),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &copy_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (!to) {
        log_error("copy: --to is required (the store to copy to)");
        return CLI_EXIT_USAGE;
    }
    if ((status = run_filter_operands(cli, &f, &copy_usage, opts)) >= 0 ||
        (status = pick_source(cli, from)) >= 0 || (status = cli_open(cli)) >= 0 ||
        (status = open_destination(cli, to, c.dry_run, &c.to)) >= 0)
        return status;
    c.from = cli->store;
    status = cli_each_run(cli, &f, copy_run, &c) | c.status;
    store_close(c.to);
    return status;
}
