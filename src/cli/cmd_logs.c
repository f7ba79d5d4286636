/*
 * strobe logs RUN: what the job printed (kept by strobe run's tees), and the
 * other texts kept with a run: its Python packages, lscpu, nvidia-smi -q.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"

static const char logs_usage[] =
    "usage: strobe logs [--store S] [--stderr | --kind KIND | --list] RUN\n"
    "\n"
    "  (default)     the job's stdout as strobe run kept it\n"
    "  --stderr      the job's stderr\n"
    "  --kind KIND   another text: stdout, stderr, packages, lscpu, nvidia-smi\n"
    "  --list        the texts the run has, with their sizes\n"
    "\n"
    "Long output keeps its first 256 KiB and last 768 KiB, with a note of what was cut.\n";

struct logs_ctx {
    const char *kind; /* NULL with --list */
    int found;
};

static int print_text(const struct run_text_record *t, void *arg)
{
    struct logs_ctx *c = arg;
    if (!c->kind) {
        printf("%-12s %10lld bytes%s\n", t->kind, (long long)t->bytes,
               t->bytes > (int64_t)t->len ? " (cut: the start and the end kept)" : "");
        c->found++;
    } else if (strcmp(t->kind, c->kind) == 0) {
        fwrite(t->data, 1, t->len, stdout);
        c->found++;
    }
    return 0;
}

int cmd_logs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'}, {"stderr", no_argument, NULL, 'e'},
        {"kind", required_argument, NULL, 'k'},  {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL;
    struct logs_ctx c = {"stdout", 0};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            store_flag = optarg;
            break;
        case 'e':
            c.kind = "stderr";
            break;
        case 'k':
            c.kind = optarg;
            break;
        case 'l':
            c.kind = NULL;
            break;
        case 'h':
            fputs(logs_usage, stdout);
            return CLI_EXIT_OK;
        default:
            fputs(logs_usage, stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(logs_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    struct store *s;
    if (cli_open_store(store_flag, 1, &s) < 0)
        return CLI_EXIT_ERROR;
    struct run_record r;
    int status = CLI_EXIT_OK;
    if (cli_resolve(s, argv[optind], &r) < 0) {
        store_close(s);
        return CLI_EXIT_ERROR;
    }
    if (s->ops->run_texts_query(s, r.id, print_text, &c) < 0) {
        log_error("cannot read the texts of run %s: %s", r.id, s->err.buf);
        status = CLI_EXIT_ERROR;
    } else if (!c.found && c.kind) {
        log_error("run %s '%s' has no %s kept", r.id, r.name ? r.name : "", c.kind);
        status = CLI_EXIT_ERROR;
    }
    fflush(stdout);
    run_record_release(&r);
    store_close(s);
    return status;
}
