/*
 * strobe ls: the runs of a store, newest first, filtered by experiment,
 * workload, status and name, as a table or JSON.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/fmt.h"
#include "common/log.h"
#include "common/strbuf.h"

static const struct cli_usage ls_usage = {
    "ls",
    "usage: strobe ls [--store S] [--experiment E] [--workload W] [--status S[,S...]]\n"
    "                 [--name GLOB] [-n N] [--json]\n",
    NULL,
    -1,
    0,
};

struct ls_ctx {
    int json;
    struct run_filter filter;
    long limit; /* -n; -1 for all */
    int count;
    struct strbuf out;
};

static void ls_json_run(struct strbuf *o, const struct run_record *r)
{
    strbuf_addch(o, '{');
    run_record_json_head(o, r);
    strbuf_addf(o, ",\"samples\":%lld,\"command\":%s}", (long long)r->samples,
                r->command_json ? r->command_json : "[]");
}

/* The runs, one a line, as a JSON array. */
static int print_list(const struct ls_ctx *c)
{
    struct strbuf doc;
    strbuf_init(&doc);
    strbuf_addch(&doc, '[');
    strbuf_add(&doc, c->out.buf, c->out.len);
    strbuf_adds(&doc, c->count ? "\n]\n" : "]\n");
    int rc = cli_print(strbuf_failed(&c->out) ? &c->out : &doc);
    strbuf_release(&doc);
    return rc;
}

static int ls_visit(const struct run_record *r, void *arg)
{
    struct ls_ctx *c = arg;
    if ((c->limit >= 0 && c->count >= c->limit) || !run_filter_match(&c->filter, r))
        return 0;
    if (c->json) {
        strbuf_adds(&c->out, c->count ? ",\n " : "\n ");
        ls_json_run(&c->out, r);
    } else {
        char start[32], dur[32], code[16];
        if (r->signal)
            snprintf(code, sizeof(code), "sig %d", r->signal);
        else if (r->exit_code >= 0)
            snprintf(code, sizeof(code), "%d", r->exit_code);
        else
            snprintf(code, sizeof(code), "-");
        struct strbuf name;
        strbuf_init(&name);
        printf(
            "%-16s  %-24.24s  %-9s  %-19s  %8s  %6s  %8lld\n", r->id, cli_visible(&name, r->name),
            run_record_status(r), fmt_time_utc(r->start_ns, start, sizeof(start)),
            fmt_duration(run_record_duration_s(r), dur, sizeof(dur)), code, (long long)r->samples);
        strbuf_release(&name);
    }
    c->count++;
    return 0;
}

int cmd_ls(struct cli_ctx *cli, int argc, char **argv)
{
    struct ls_ctx c = {.limit = -1};
    const struct cli_option opts[] = {
        /* -e and -w: the short forms ls had before the shared filter */
        CLI_OPT_RUN_FILTER(&c.filter, 'e', 'w'),
        CLI_OPT_INT('n', NULL, &c.limit, "N", "only the N newest of those", 0, LONG_MAX,
                    "a count of runs, 0 or more"),
        CLI_OPT_JSON(&c.json),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &ls_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    struct store *s = cli->store;
    strbuf_init(&c.out);
    if (!c.json)
        printf("%-16s  %-24s  %-9s  %-19s  %8s  %6s  %8s\n", "ID", "NAME", "STATUS", "START (UTC)",
               "DURATION", "EXIT", "SAMPLES");
    int rc = s->ops->runs_query(s, c.filter.experiment, ls_visit, &c);
    if (rc < 0)
        log_error("cannot list runs in '%s': %s", s->uri, s->err.buf);
    else if (c.json)
        rc = print_list(&c);
    strbuf_release(&c.out);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
