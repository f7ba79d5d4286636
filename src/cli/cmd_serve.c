#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "serve/serve.h"

static const char serve_usage[] =
    "usage: strobe serve [--store S] [--listen 127.0.0.1:8642] [--token T]\n"
    "                    [--threads N] [--rate N] [--burst N]\n"
    "  --listen   HOST:PORT or [ADDR]:PORT (port 0: any free one); a non-loopback\n"
    "             address needs --token\n"
    "  --token    every request must carry 'Authorization: Bearer T' or ?token=T (the page\n"
    "             opened with ?token=T sets a cookie, so its own requests carry it)\n"
    "             (also $STROBE_SERVE_TOKEN, which keeps it out of ps)\n"
    "  --rate     requests per second per client, sustained (default 50; 0: no limit)\n"
    "  --burst    requests a client may send at once (default 100)\n"
    "The API is in docs/api.md.\n";

/* A number option: plain decimal, as durations are (no hex, sign or
 * space), within lo..hi. */
static int parse_count(const char *s, double lo, double hi, double *out)
{
    double v;
    const char *end = decimal_parse(s, &v);
    if (!end || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'}, {"listen", required_argument, NULL, 'l'},
        {"token", required_argument, NULL, 't'}, {"threads", required_argument, NULL, 'n'},
        {"rate", required_argument, NULL, 'r'},  {"burst", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    struct serve_config c = {
        .listen = "127.0.0.1:8642",
        .token = getenv("STROBE_SERVE_TOKEN"),
        .threads = 4,
        .rate_per_s = 50,
        .burst = 100,
        .hooks = {cli_show_json},
    };
    const char *store_flag = NULL;
    double threads = 4;
    int ch, bad = 0;
    optind = 1;
    while ((ch = cli_getopt("serve", argc, argv, "h", opts)) != -1) {
        if (ch == 's')
            store_flag = optarg;
        else if (ch == 'l')
            c.listen = optarg;
        else if (ch == 't')
            c.token = optarg;
        else if (ch == 'n') /* a whole number of threads: 2.5 is no count */
            bad |= parse_count(optarg, 1, 256, &threads) || threads != (double)(unsigned)threads;
        else if (ch == 'r')
            bad |= parse_count(optarg, 0, 1e9, &c.rate_per_s);
        else if (ch == 'b')
            bad |= parse_count(optarg, 1, 1e9, &c.burst);
        else {
            if (ch == 'h')
                fputs(serve_usage, stdout);
            return ch == 'h' ? CLI_EXIT_OK : CLI_EXIT_USAGE; /* else cli_getopt said why */
        }
    }
    if (bad || optind != argc) {
        fputs(serve_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    if (c.token &&
        (!*c.token || strspn(c.token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789-._~") != strlen(c.token))) {
        /* it travels in a URL and a cookie as it is */
        fprintf(stderr, "strobe: --token must be letters, digits and - . _ ~ only\n");
        return CLI_EXIT_USAGE;
    }
    c.threads = (unsigned)threads;
    c.store_uri = store_default_uri(store_flag);
    return serve_run(&c);
}
