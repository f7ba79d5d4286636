/*
 * strobe ls: the runs of a store, newest first, filtered by experiment,
 * workload, status and name, as a table or JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/fmt.h"
#include "common/log.h"
#include "common/strbuf.h"

static const char ls_usage[] =
    "usage: strobe ls [--store S] [--experiment E] [--workload W] [--status S[,S...]]\n"
    "                 [--name GLOB] [-n N] [--json]\n"
    "\n"
    "  --status S    running, finished, failed, crashed, killed or lost (a comma list)\n"
    "  --name GLOB   runs whose name matches, as the shell matches (\"bs*\")\n"
    "  -n N          only the N newest of those\n";

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

int cmd_ls(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        RUN_FILTER_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL;
    struct ls_ctx c = {.limit = -1};
    int ch, taken;
    char *end;
    optind = 1;
    while ((ch = cli_getopt("ls", argc, argv, "e:w:n:jh", opts)) != -1) {
        /* -e and -w: the short forms ls had before the shared filter */
        int opt = ch == 'e' ? RUN_FILTER_EXPERIMENT : ch == 'w' ? RUN_FILTER_WORKLOAD : ch;
        if ((taken = run_filter_option(&c.filter, opt, optarg)) != 0) {
            if (taken < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (ch) {
        case 'n':
            errno = 0;
            c.limit = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || c.limit < 0) {
                log_error("-n wants a count of runs, 0 or more (got '%s')", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 's':
            store_flag = optarg;
            break;
        case 'j':
            c.json = 1;
            break;
        case 'h':
            fputs(ls_usage, stdout);
            return CLI_EXIT_OK;
        default:
            return CLI_EXIT_USAGE; /* cli_getopt said why */
        }
    }
    struct store *s;
    if (cli_open_store(store_flag, 1, &s) < 0)
        return CLI_EXIT_ERROR;
    strbuf_init(&c.out);
    if (!c.json)
        printf("%-16s  %-24s  %-9s  %-19s  %8s  %6s  %8s\n", "ID", "NAME", "STATUS", "START (UTC)",
               "DURATION", "EXIT", "SAMPLES");
    int rc = s->ops->runs_query(s, c.filter.experiment, ls_visit, &c);
    if (rc < 0)
        log_error("cannot list runs in '%s': %s", s->uri, s->err.buf);
    else if (c.json)
        printf("[%s%s]\n", c.out.buf, c.count ? "\n" : "");
    strbuf_release(&c.out);
    store_close(s);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
