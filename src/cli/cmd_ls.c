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
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "store/job.h"

static const struct cli_usage ls_usage = {
    "ls",
    "usage: strobe ls [--store S] [--experiment E] [--workload W] [--status S[,S...]]\n"
    "                 [--name GLOB] [--nodes] [-n N] [--json]\n",
    NULL,
    -1,
    0,
};

struct ls_ctx {
    int json;
    struct run_filter filter;
    long limit; /* -n; -1 for all */
    int nodes;  /* --nodes: each node's run of a job too */
    struct store *store;
    int count;
    struct strbuf out;     /* --json: the document */
    struct json_writer jw; /* --json: writes out, the array of runs open */
};

/* A job's nodes (store/job.h): its count, and its status as its nodes'
 * recorders say (lost when every node still "running" lost its recorder). */
struct job_info {
    long nodes; /* -1: not a job */
    const char *status;
};

static struct job_info job_info(struct ls_ctx *c, const struct run_record *r)
{
    struct job_info j = {-1, run_record_status(r)};
    struct run_list nodes;
    if (!run_record_is_job(r) || store_job_nodes(c->store, r->id, &nodes) < 0)
        return j;
    j.nodes = (long)nodes.n;
    j.status = job_status(r, &nodes);
    run_list_release(&nodes);
    return j;
}

static void ls_json_run(struct json_writer *jw, const struct run_record *r, struct job_info j)
{
    struct run_record shown = *r; /* borrowed strings: never released */
    snprintf(shown.status, sizeof(shown.status), "%s", j.status);
    jw_object_begin(jw);
    run_record_json_head(jw, &shown);
    if (j.nodes >= 0)
        jw_kv_int(jw, "nodes", j.nodes);
    if (r->parent_id) {
        jw_kv_str(jw, "job", r->parent_id);
        jw_kv_str_or_null(jw, "node", r->node);
    }
    jw_kv_int(jw, "samples", r->samples);
    jw_kv_raw(jw, "command", r->command_json ? r->command_json : "[]");
    jw_end(jw);
}

/* The runs, one a line ("[\n {..},\n {..}\n]"; "[]" for none). */
static void begin_list(struct ls_ctx *c)
{
    jw_init(&c->jw, &c->out);
    jw_array_begin(&c->jw);
    jw_lines(&c->jw, "\n ", "\n ");
}

static int print_list(struct ls_ctx *c)
{
    if (c->count)
        jw_space(&c->jw, "\n");
    jw_end(&c->jw);
    jw_space(&c->jw, "\n");
    return cli_print(&c->out);
}

static int ls_visit(const struct run_record *r, void *arg)
{
    struct ls_ctx *c = arg;
    if ((c->limit >= 0 && c->count >= c->limit) || !run_filter_match(&c->filter, r) ||
        (r->parent_id && !c->nodes))
        return 0;
    struct job_info j = job_info(c, r);
    if (c->json) {
        ls_json_run(&c->jw, r, j);
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
        char nodes[16] = "";
        if (j.nodes >= 0)
            snprintf(nodes, sizeof(nodes), "%ld", j.nodes);
        else if (r->parent_id)
            snprintf(nodes, sizeof(nodes), "@%.8s", r->parent_id);
        printf("%-16s  %-24.24s  %-9s  %-19s  %8s  %6s  %8lld  %s\n", r->id,
               cli_visible(&name, r->node ? r->node : r->name), j.status,
               fmt_time_utc(r->start_ns, start, sizeof(start)),
               fmt_duration(run_record_duration_s(r), dur, sizeof(dur)), code,
               (long long)r->samples, nodes);
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
        CLI_OPT_FLAG(0, "nodes", &c.nodes,
                     "each node's run of a job too (NAME is then the node's, NODES\n"
                     "its job's id)"),
        CLI_OPT_INT('n', NULL, &c.limit, "N", "only the N newest of those", 0, LONG_MAX,
                    "a count of runs, 0 or more"),
        CLI_OPT_JSON(&c.json),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &ls_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    struct store *s = cli->store;
    c.store = s;
    strbuf_init(&c.out);
    if (c.json)
        begin_list(&c);
    else
        printf("%-16s  %-24s  %-9s  %-19s  %8s  %6s  %8s  %s\n", "ID", "NAME", "STATUS",
               "START (UTC)", "DURATION", "EXIT", "SAMPLES", "NODES");
    int rc = s->ops->runs_query(s, c.filter.experiment, ls_visit, &c);
    if (rc < 0)
        log_error("cannot list runs in '%s': %s", s->uri, s->err.buf);
    else if (c.json)
        rc = print_list(&c);
    strbuf_release(&c.out);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
