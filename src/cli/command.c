/*
 * What every command needs before its work, as its row in main.c's table
 * says (cli.h's enum cli_needs): its options parsed, the store opened, its
 * RUN resolved. Commands no longer open the store themselves.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/log.h"
#include "store/job.h"

static int takes_store(const struct cli_ctx *c)
{
    return c->needs & (CLI_STORE_URI | CLI_STORE_READ | CLI_STORE_WRITE);
}

/* The store group, declared once: every command that takes a store. */
#define STORE_OPTIONS(c)                                                                           \
    {                                                                                              \
        CLI_OPT_STRING(0, "store", &(c)->store_flag, "S",                                          \
                       "the store (default $STROBE_STORE, else ./strobe.db)"),                     \
            CLI_OPT_END,                                                                           \
    }

/* The tables of a command: the store group where it takes one, then opts. */
static void command_tables(const struct cli_ctx *c, const struct cli_option *store_opts,
                           const struct cli_option *opts, const struct cli_option **tables)
{
    int n = 0;
    if (takes_store(c))
        tables[n++] = store_opts;
    tables[n++] = opts;
    tables[n] = NULL;
}

int cli_usage_error(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts)
{
    const struct cli_option store_opts[] = STORE_OPTIONS(c);
    const struct cli_option *tables[3];
    command_tables(c, store_opts, opts, tables);
    cli_print_help(stderr, u, tables);
    return CLI_EXIT_USAGE;
}

int cli_parse(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts, int argc,
              char **argv)
{
    const struct cli_option store_opts[] = STORE_OPTIONS(c);
    const struct cli_option *tables[3];
    command_tables(c, store_opts, opts, tables);
    int first = cli_parse_options(u, tables, argc, argv);
    if (first == CLI_PARSE_HELP)
        return CLI_EXIT_OK;
    if (first == CLI_PARSE_ERROR)
        return CLI_EXIT_USAGE;
    c->args = argv + first;
    c->nargs = argc - first;
    if (u->operands >= 0 && c->nargs != u->operands)
        return cli_usage_error(c, u, opts);
    return -1;
}

/* A job of many nodes reads as one run through a view of the store
 * (store/job.h): each command shows every node without knowing of them. */
static int open_job(struct cli_ctx *c)
{
    struct store *view;
    int rc = store_job_view(c->store, 1, &c->run, &view);
    if (rc < 0) {
        log_error("cannot read the nodes of run %s: %s", c->run.id,
                  c->store->err.len ? c->store->err.buf : err_str(rc));
        return CLI_EXIT_ERROR;
    }
    c->store = view;
    return -1;
}

int cli_open(struct cli_ctx *c)
{
    if (!(c->needs & (CLI_STORE_READ | CLI_STORE_WRITE)))
        return -1;
    int readonly = !(c->needs & CLI_STORE_WRITE) && !c->store_write;
    if (cli_open_store(c->store_flag, readonly, &c->store) < 0)
        return CLI_EXIT_ERROR;
    if ((c->needs & CLI_RUN) && cli_resolve(c->store, c->args[0], &c->run) < 0)
        return CLI_EXIT_ERROR;
    return (c->needs & CLI_RUN) && run_record_is_job(&c->run) ? open_job(c) : -1;
}

int cli_setup(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts, int argc,
              char **argv)
{
    int status = cli_parse(c, u, opts, argc, argv);
    return status >= 0 ? status : cli_open(c);
}

void cli_ctx_release(struct cli_ctx *c)
{
    if (c->store)
        store_close(c->store);
    c->store = NULL;
    run_record_release(&c->run);
}
