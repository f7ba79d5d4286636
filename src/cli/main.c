#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/version.h"

/* needs: what the command gets before its work (cli.h). CLI_STORE_READ
 * opens a store that must exist, as it is (rm removes from it too; copy
 * reads it and opens --to itself); push writes into the store, and opens
 * its spools (to read) itself;
 * rules --save asks for CLI_STORE_WRITE's open, which creates and migrates.
 * run (through the recorder) and serve open the store themselves; import's
 * formats say their own needs (import.c's importers[]). */
#define READ_RUN (CLI_STORE_READ | CLI_RUN)
static const struct command {
    const char *name;
    cmd_fn *fn;
    unsigned needs;
    const char *summary;
} commands[] = {
    {"run", cmd_run, CLI_STORE_URI, "run a command and record it"},
    {"ls", cmd_ls, CLI_STORE_READ, "list the runs in the store"},
    {"show", cmd_show, READ_RUN, "summarise one run"},
    {"export", cmd_export, READ_RUN,
     "write a run's samples as CSV or JSON lines, or as SageMaker data"},
    {"rm", cmd_rm, CLI_STORE_READ, "remove runs from the store"},
    {"copy", cmd_copy, CLI_STORE_READ, "copy runs to another store (SQLite or PostgreSQL)"},
    {"push", cmd_push, CLI_STORE_WRITE, "send a spool strobe run left (its database was down)"},
    {"import", cmd_import, 0, "bring in another tool's recording (SageMaker Debugger)"},
    {"compare", cmd_compare, CLI_STORE_READ, "several runs side by side, differences marked"},
    {"rules", cmd_rules, READ_RUN, "evaluate the bottleneck rules over a run"},
    {"logs", cmd_logs, READ_RUN, "print what a run's job printed, or its package list, lscpu"},
    {"ctl", cmd_ctl, READ_RUN, "ask a running run's recorder: stacks, a profiling window, a tag"},
    {"report", cmd_report, READ_RUN, "write a run's profiler report (one HTML file)"},
    {"trace", cmd_trace, READ_RUN, "write a run as one timeline (Chrome JSON or Perfetto)"},
    {"flame", cmd_flame, READ_RUN, "a run's Python hotspots: collapsed stacks, SVG, JSON, HTML"},
    {"sweep", cmd_sweep, CLI_STORE_URI,
     "run a campaign from an experiment file (radT's CSV or YAML)"},
    {"serve", cmd_serve, CLI_STORE_URI, "serve the store's runs as a JSON API and dashboard"},
    {"top", cmd_top, CLI_STORE_READ, "the running runs, live: CPU, memory, GPU, steps, findings"},
    {"metrics", cmd_metrics, 0, "list the metrics strobe records: unit, kind, labels, help"},
};

static int run_command(const struct command *cmd, int argc, char **argv)
{
    struct cli_ctx c = {.needs = cmd->needs};
    run_record_init(&c.run);
    int status = cmd->fn(&c, argc, argv);
    cli_ctx_release(&c);
    return status;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: strobe <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nThe store is --store, else $STROBE_STORE, else ./strobe.db.\n"
                 "RUN is 'last' (the newest run), a run id, a run name, or a unique id prefix.\n"
                 "See 'strobe <command> --help'.\n");
}

/*
 * A password in --store's URI would show in ps for as long as strobe runs
 * (strobe run lasts as long as its job). Each of strobe's own arguments that
 * holds one is copied for the parser, and the original is overwritten in
 * place with the URI less its password, padded with NULs: that memory is
 * what /proc/PID/cmdline shows. The job's command, after "--", is left as
 * it is. A moment remains between exec and this, when ps could see it:
 * PGPASSWORD or ~/.pgpass leave no such moment.
 */
static void hide_store_passwords(int argc, char **argv)
{
    struct strbuf shown;
    strbuf_init(&shown);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        strbuf_reset(&shown);
        char *arg = argv[i];
        size_t len = strlen(arg);
        if (cli_arg_redact(arg, &shown) < 0 || shown.len >= len)
            continue;             /* nothing to hide (the password is all that can go) */
        char *copy = strdup(arg); /* lives as long as argv: never freed */
        if (!copy)
            continue;
        memcpy(arg, shown.buf, shown.len);
        memset(arg + shown.len, 0, len - shown.len);
        argv[i] = copy;
    }
    strbuf_release(&shown);
}

int main(int argc, char **argv)
{
    hide_store_passwords(argc, argv);
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
            return run_command(&commands[i], argc - 1, argv + 1);
    fprintf(stderr, "strobe: '%s' is not a strobe command; see 'strobe --help'\n", argv[1]);
    return CLI_EXIT_USAGE;
}
