#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/version.h"

static const struct command {
    const char *name;
    cmd_fn *fn;
    const char *summary;
} commands[] = {
    {"run", cmd_run, "run a command and record it"},
    {"ls", cmd_ls, "list the runs in the store"},
    {"show", cmd_show, "summarise one run"},
    {"export", cmd_export, "write a run's samples as CSV or JSON lines, or as SageMaker data"},
    {"rm", cmd_rm, "remove runs from the store"},
    {"import", cmd_import, "bring in another tool's recording (SageMaker Debugger)"},
    {"compare", cmd_compare, "several runs side by side, differences marked"},
    {"rules", cmd_rules, "evaluate the bottleneck rules over a run"},
    {"logs", cmd_logs, "print what a run's job printed, or its package list, lscpu"},
    {"report", cmd_report, "write a run's profiler report (one HTML file)"},
    {"trace", cmd_trace, "write a run as one timeline (Chrome JSON or Perfetto)"},
    {"serve", cmd_serve, "serve the store's runs as a JSON API and dashboard"},
    {"metrics", cmd_metrics, "list the metrics strobe records: unit, kind, labels, help"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: strobe <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nThe store is --store, else $STROBE_STORE, else ./strobe.db.\n"
                 "RUN is 'last' (the newest run), a run id, a run name, or a unique id prefix.\n"
                 "See 'strobe <command> --help'.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("strobe %s\n", STROBE_VERSION);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "strobe: '%s' is not a strobe command; see 'strobe --help'\n", argv[1]);
    return CLI_EXIT_USAGE;
}
