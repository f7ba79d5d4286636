/* strobe import: other tools' recordings into the store, one subcommand per
 * format (a new format is a function and a row in importers[]). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "import/sagemaker.h"
#include "import/torch_trace.h"
#include "record/runinfo.h"
#include "rules/replay.h"
#include "rules/rules.h"

static const struct cli_usage sagemaker_usage = {
    "import sagemaker",
    "usage: strobe import sagemaker [--store S] [--name N] [--experiment E] [--tag K=V]...\n"
    "                               [--rules LIST|none] [--rule-param RULE.P=V]...\n"
    "                               [--rule-interval DUR] DIR\n",
    "DIR is a SageMaker Debugger profiler output directory (system/, framework/); the\n"
    "run's name is sagemaker-<DIR's name> unless --name gives one. The rules are\n"
    "evaluated over the run and stored, as strobe run does.\n",
    1,
    0,
};

/* The command line as the run's command: a JSON array, without the
 * store's password. */
static char *command_json(int argc, char **argv)
{
    struct strbuf o, arg;
    strbuf_init(&o);
    strbuf_init(&arg);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_array_begin(&jw);
    jw_str(&jw, "strobe");
    jw_str(&jw, "import");
    for (int i = 0; i < argc; i++) {
        strbuf_reset(&arg);
        jw_str(&jw, cli_arg_redact(argv[i], &arg) == 0 ? arg.buf : "");
    }
    jw_end(&jw);
    strbuf_release(&arg);
    return strbuf_detach(&o); /* NULL when out of memory: no command */
}

/* sagemaker-<the directory's last component> */
static char *default_name(const char *dir)
{
    char *copy = strdup(dir);
    if (!copy)
        return NULL;
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    const char *slash = strrchr(copy, '/');
    const char *base = slash && slash[1] ? slash + 1 : copy;
    struct strbuf name;
    strbuf_init(&name);
    strbuf_addf(&name, "sagemaker-%.180s", base);
    for (char *p = name.buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '_';
    free(copy);
    return strbuf_detach(&name);
}

struct sagemaker_opts {
    const char *name, *experiment, *dir;
    struct cli_rules cli_rules;
    struct rules_options rules; /* points into cli_rules */
};

/* Parse argv into o and r (tags). -1 when it parses and the import goes on,
 * else the exit status. */
static int sagemaker_args(struct cli_ctx *cli, int argc, char **argv, struct sagemaker_opts *o,
                          struct run_record *r)
{
    cli_rules_init(&o->cli_rules);
    const struct cli_option opts[] = {
        CLI_OPT_RUN_NAME(&o->name),
        CLI_OPT_EXPERIMENT(&o->experiment),
        CLI_OPT_TAG(&r->tags),
        CLI_OPT_RULES(&o->cli_rules),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &sagemaker_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (cli_rules_check(&o->cli_rules, &o->rules) < 0)
        return CLI_EXIT_USAGE;
    o->dir = cli->args[0];
    return -1;
}

/*
 * The rules over the run just stored, as strobe rules --save evaluates a
 * recorded run (the same engine, replay and store), so show, the report and
 * the dashboard have its findings. Appends what they found to line.
 */
static int evaluate_rules(struct store *s, const struct run_record *r,
                          const struct rules_options *ro, struct strbuf *line)
{
    struct rules_run_info info = {r->start_ns, r->cpu_count, r->mem_total_bytes, r->host, 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = rules_engine_new(ro, &info, &e, &err);
    if (rc == 0 && !e) {
        strbuf_adds(line, "; rules not evaluated (--rules none)");
        strbuf_release(&err);
        return 0;
    }
    if (rc == 0)
        rc = rules_replay(s, r, e, &err);
    if (rc == 0 && (rc = rules_save(s, r->id, e, ro->rules, "offline")) < 0)
        strbuf_addf(&err, "cannot save the findings: %s", s->err.buf);
    if (rc < 0) {
        log_error("cannot evaluate the rules over run %s: %s (the run is imported; "
                  "'strobe rules --save %s' evaluates them again)",
                  r->id, err.len ? err.buf : "out of memory", r->id);
    } else {
        uint32_t n;
        const struct finding *f = rules_findings(e, &n);
        strbuf_addf(line, "; rules: %u finding%s", n, n == 1 ? "" : "s");
        for (uint32_t i = 0; i < n; i++)
            strbuf_addf(line, "%s%s", i ? ", " : " (", f[i].rule);
        if (n)
            strbuf_addch(line, ')');
    }
    rules_engine_free(e);
    strbuf_release(&err);
    return rc;
}

static int import_sagemaker(struct cli_ctx *cli, int argc, char **argv)
{
    struct sagemaker_opts o = {0};
    struct run_record r;
    run_record_init(&r);
    int status = sagemaker_args(cli, argc, argv, &o, &r);
    if (status >= 0) {
        run_record_release(&r);
        return status;
    }
    status = CLI_EXIT_ERROR;
    struct strbuf err, line;
    strbuf_init(&err);
    strbuf_init(&line);
    struct sagemaker_import *im = NULL;
    /* read everything first: a directory with nothing to import fails
     * before the store is opened, and no run is created */
    if (sagemaker_import_read(o.dir, &im, &err) < 0) {
        log_error("cannot import '%s': %s", o.dir, err.buf);
        goto out;
    }
    if (cli_open(cli) >= 0)
        goto out;
    struct store *s = cli->store;
    r.name = o.name ? strdup(o.name) : default_name(o.dir);
    r.experiment = o.experiment ? strdup(o.experiment) : NULL;
    r.command_json = command_json(argc, argv);
    char abs[PATH_MAX];
    kv_list_add(&r.tags, "source", "sagemaker");
    if (realpath(o.dir, abs) && strlen(abs) <= 200)
        kv_list_add(&r.params, "sagemaker_dir", abs);
    if (sagemaker_import_store(im, s, &r) < 0) {
        log_error("cannot import '%s' into store '%s': %s", o.dir, s->uri, s->err.buf);
        goto out;
    }
    sagemaker_import_summary(im, &r, &line);
    int rc = evaluate_rules(s, &r, &o.rules, &line);
    strbuf_addch(&line, '\n');
    if (cli_print(&line) < 0)
        rc = -1;
    status = rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
out:
    sagemaker_import_free(im);
    strbuf_release(&line);
    strbuf_release(&err);
    run_record_release(&r);
    return status;
}

static const struct cli_usage torch_trace_usage = {
    "import torch-trace",
    "usage: strobe import torch-trace [--store S] [--pid P] RUN FILE\n",
    "FILE is a PyTorch profiler trace (export_chrome_trace(): legacy or Kineto JSON);\n"
    "RUN the run it goes into (an id, a unique id prefix, a name, or 'last').\n",
    2,
    0,
};

static int pid_option(const struct cli_option *opt, const char *arg)
{
    char *end;
    long long pid = strtoll(arg, &end, 10);
    if (*end || pid < 0) {
        log_error("--pid wants a process id, got '%s'", arg);
        return -1;
    }
    *(long long *)opt->value = pid;
    return 0;
}

static int import_torch_trace(struct cli_ctx *cli, int argc, char **argv)
{
    long long pid = -1;
    const struct cli_option opts[] = {
        CLI_OPT_CALLBACK(0, "pid", &pid, "P",
                         "the process of the run that wrote the trace (default: from\n"
                         "the trace)",
                         pid_option),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &torch_trace_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    const char *path = cli->args[1];
    struct run_record *r = &cli->run;
    struct strbuf err, line;
    strbuf_init(&err);
    strbuf_init(&line);
    struct torch_trace_result res;
    status = CLI_EXIT_ERROR;
    if (torch_trace_import(cli->store, r, path, pid, &res, &err) < 0) {
        log_error("cannot import '%s' into run %s: %s", path, r->id, err.buf);
        goto out;
    }
    torch_trace_warning(&res, path, &line);
    if (line.len)
        log_warn("%s", line.buf);
    strbuf_reset(&line);
    torch_trace_summary(&res, path, r, &line);
    strbuf_addch(&line, '\n');
    status = cli_print(&line) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
out:
    strbuf_release(&line);
    strbuf_release(&err);
    return status;
}

/* needs as main.c's commands[] says them: sagemaker creates the store, once
 * its input is read; torch-trace adds to a run of it. */
static const struct importer {
    const char *name;
    cmd_fn *fn;
    unsigned needs;
    const char *summary;
} importers[] = {
    {"sagemaker", import_sagemaker, CLI_STORE_WRITE,
     "SageMaker Debugger profiler output (a directory)"},
    {"torch-trace", import_torch_trace, CLI_STORE_WRITE | CLI_RUN,
     "a PyTorch profiler trace, into a recorded run"},
};

static void import_usage(FILE *out)
{
    fputs("usage: strobe import <format> [options] ...\n\nformats:\n", out);
    for (size_t i = 0; i < ARRAY_SIZE(importers); i++)
        fprintf(out, "  %-12s %s\n", importers[i].name, importers[i].summary);
    fputs("\nSee 'strobe import <format> --help'.\n", out);
}

int cmd_import(struct cli_ctx *cli, int argc, char **argv)
{
    /* the format is the first word that is not an option: options may come
     * before it (strobe import --store S sagemaker DIR) */
    int f = 1;
    while (f < argc && argv[f][0] == '-' && strcmp(argv[f], "--help") != 0 &&
           strcmp(argv[f], "-h") != 0)
        f += strcmp(argv[f], "--store") == 0 ? 2 : 1;
    if (f >= argc) {
        import_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[f], "--help") == 0 || strcmp(argv[f], "-h") == 0) {
        import_usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < ARRAY_SIZE(importers); i++) {
        if (strcmp(argv[f], importers[i].name) != 0)
            continue;
        /* the format's own argv: its name, then every other argument */
        char **args = malloc((size_t)argc * sizeof(*args));
        if (!args) {
            log_error("out of memory");
            return CLI_EXIT_ERROR;
        }
        int n = 0;
        args[n++] = argv[f];
        for (int j = 1; j < argc; j++)
            if (j != f)
                args[n++] = argv[j];
        cli->needs = importers[i].needs;
        int status = importers[i].fn(cli, n, args);
        free(args);
        return status;
    }
    log_error("'%s' is not an import format; see 'strobe import --help'", argv[f]);
    return CLI_EXIT_USAGE;
}
