#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"

static const char rm_usage[] = "usage: strobe rm [--store S] RUN...\n";

int cmd_rm(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 's') {
            store_flag = optarg;
        } else {
            fputs(rm_usage, ch == 'h' ? stdout : stderr);
            return ch == 'h' ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fputs(rm_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    struct store *s;
    if (cli_open_store(store_flag, 1, &s) < 0)
        return CLI_EXIT_ERROR;
    int status = CLI_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        struct run_record r;
        if (cli_resolve(s, argv[i], &r) < 0) {
            status = CLI_EXIT_ERROR;
            continue;
        }
        if (strcmp(run_record_status(&r), RUN_RUNNING) == 0) {
            /* its recorder would go on writing series of a run that is gone */
            log_error("run %s '%s' is still recording (pid %lld); stop it first", r.id,
                      r.name ? r.name : "", (long long)r.recorder_pid);
            status = CLI_EXIT_ERROR;
        } else if (s->ops->run_delete(s, r.id) < 0) {
            log_error("cannot remove run %s: %s", r.id, s->err.buf);
            status = CLI_EXIT_ERROR;
        } else {
            printf("removed run %s '%s'\n", r.id, r.name ? r.name : "");
        }
        run_record_release(&r);
    }
    store_close(s);
    return status;
}
