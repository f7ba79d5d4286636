#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "serve/serve.h"

static const struct cli_usage serve_usage = {
    "serve",
    "usage: strobe serve [--store S] [--listen 127.0.0.1:8642] [--token T]\n"
    "                    [--threads N] [--rate N] [--burst N]\n",
    "The API is in docs/api.md.\n",
    -1,
    0,
};

/* A number option: plain decimal, as durations are (no hex, sign or
 * space), within lo..hi; a whole one where whole. A bad one is marked, and
 * the usage says it once the options are read. */
struct count_option {
    double *out;
    double lo, hi;
    int whole;
    int *bad;
};

static int count_option(const struct cli_option *opt, const char *arg)
{
    const struct count_option *c = opt->value;
    double v;
    const char *end = decimal_parse(arg, &v);
    if (!end || *end || !(v >= c->lo && v <= c->hi) || (c->whole && v != (double)(unsigned)v))
        *c->bad = 1;
    else
        *c->out = v;
    return 0;
}

int cmd_serve(struct cli_ctx *cli, int argc, char **argv)
{
    struct serve_config c = {
        .listen = "127.0.0.1:8642",
        .token = getenv("STROBE_SERVE_TOKEN"),
        .threads = 4,
        .rate_per_s = 50,
        .burst = 100,
        .hooks = {cli_show_json},
    };
    double threads = 4;
    int bad = 0;
    /* a whole number of threads: 2.5 is no count */
    struct count_option threads_count = {&threads, 1, 256, 1, &bad};
    struct count_option rate_count = {&c.rate_per_s, 0, 1e9, 0, &bad};
    struct count_option burst_count = {&c.burst, 1, 1e9, 0, &bad};
    const struct cli_option opts[] = {
        CLI_OPT_STRING(0, "listen", &c.listen, "HOST:PORT",
                       "or [ADDR]:PORT (port 0: any free one); a non-loopback\n"
                       "address needs --token"),
        CLI_OPT_STRING(0, "token", &c.token, "T",
                       "every request must carry 'Authorization: Bearer T' or\n"
                       "?token=T (the page opened with ?token=T sets a cookie, so its\n"
                       "own requests carry it) (also $STROBE_SERVE_TOKEN, which keeps\n"
                       "it out of ps)"),
        CLI_OPT_CALLBACK(0, "threads", &threads_count, "N", "threads serving requests (default 4)",
                         count_option),
        CLI_OPT_CALLBACK(0, "rate", &rate_count, "N",
                         "requests per second per client, sustained (default 50;\n"
                         "0: no limit)",
                         count_option),
        CLI_OPT_CALLBACK(0, "burst", &burst_count, "N",
                         "requests a client may send at once (default 100)", count_option),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &serve_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (bad || cli->nargs)
        return cli_usage_error(cli, &serve_usage, opts);
    c.threads = (unsigned)threads;
    c.store_uri = store_default_uri(cli->store_flag);
    return serve_run(&c);
}
