/* strobe import: other tools' recordings into the store, one subcommand per
 * format (a new format is a function and a row in importers[]). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "import/sagemaker.h"
#include "import/torch_trace.h"
#include "record/runinfo.h"
#include "rules/replay.h"
#include "rules/rules.h"

static const char sagemaker_usage[] =
    "usage: strobe import sagemaker [--store S] [--name N] [--experiment E] [--tag K=V]...\n"
    "                               [--rules LIST|none] [--rule-param RULE.P=V]...\n"
    "                               [--rule-interval DUR] DIR\n"
    "  DIR: a SageMaker Debugger profiler output directory (system/, framework/)\n"
    "  --name N   default sagemaker-<DIR's name>\n"
    "  --rules LIST  the rules evaluated over the run and stored, as strobe run does\n"
    "                (comma list, 'all' by default); 'none' skips them\n"
    "  --rule-param R.P=V  a rule's parameter (also SageMaker's R_P=V; repeatable)\n"
    "  --rule-interval DUR window length (default 10s)\n";

/* The command line as the run's command: a JSON array. */
static char *command_json(int argc, char **argv)
{
    struct strbuf o;
    strbuf_init(&o);
    strbuf_adds(&o, "[\"strobe\",\"import\"");
    for (int i = 0; i < argc; i++) {
        strbuf_addch(&o, ',');
        strbuf_add_json_str(&o, argv[i]);
    }
    strbuf_addch(&o, ']');
    return strbuf_detach(&o);
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
    const char *store_flag, *name, *experiment, *dir;
    struct rules_options rules; /* params points into params[] */
    const char *params[CLI_MAX_RULE_PARAMS + 1];
    int nparams;
};

/* The rule options, checked before anything is read: a typo in a
 * parameter must not cost an import (the engine is the judge, as for
 * strobe run). */
static int check_rules(const struct rules_options *ro)
{
    struct rules_run_info info = {0, 1, 0, "", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = rules_engine_new(ro, &info, &e, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    rules_engine_free(e);
    strbuf_release(&err);
    return rc;
}

/* Parse argv into o and r (tags). -1 when it parses and the import goes on,
 * else the exit status. */
static int sagemaker_args(int argc, char **argv, struct sagemaker_opts *o, struct run_record *r)
{
    enum { OPT_RULES = 256, OPT_RULE_PARAM, OPT_RULE_INTERVAL };
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"name", required_argument, NULL, 'n'},
        {"experiment", required_argument, NULL, 'e'},
        {"tag", required_argument, NULL, 't'},
        {"rules", required_argument, NULL, OPT_RULES},
        {"rule-param", required_argument, NULL, OPT_RULE_PARAM},
        {"rule-interval", required_argument, NULL, OPT_RULE_INTERVAL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch, bad = 0;
    optind = 1;
    o->rules.params = o->params;
    while (!bad && (ch = cli_getopt("import sagemaker", argc, argv, "n:e:t:h", opts)) != -1) {
        switch (ch) {
        case 's':
            o->store_flag = optarg;
            break;
        case 'n':
            o->name = optarg;
            bad = cli_check_run_name(optarg) < 0;
            break;
        case 'e':
            o->experiment = optarg;
            bad = cli_check_text("experiment name", optarg) < 0;
            break;
        case 't':
            bad = cli_add_kv(&r->tags, "--tag", optarg) < 0;
            break;
        case OPT_RULES:
            o->rules.rules = optarg;
            break;
        case OPT_RULE_PARAM:
            bad = cli_rule_param_add(o->params, &o->nparams, optarg) < 0;
            break;
        case OPT_RULE_INTERVAL:
            bad = cli_rule_interval(optarg, &o->rules.interval_ns) < 0;
            break;
        case 'h':
            fputs(sagemaker_usage, stdout);
            return CLI_EXIT_OK;
        default:
            bad = 1;
        }
    }
    if (!bad && optind != argc - 1) {
        fputs(sagemaker_usage, stderr);
        bad = 1;
    }
    if (bad || check_rules(&o->rules) < 0)
        return CLI_EXIT_USAGE;
    o->dir = argv[optind];
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

static int import_sagemaker(int argc, char **argv)
{
    struct sagemaker_opts o = {0};
    struct run_record r;
    run_record_init(&r);
    int status = sagemaker_args(argc, argv, &o, &r);
    if (status >= 0) {
        run_record_release(&r);
        return status;
    }
    status = CLI_EXIT_ERROR;
    struct strbuf err, line;
    strbuf_init(&err);
    strbuf_init(&line);
    struct sagemaker_import *im = NULL;
    struct store *s = NULL;
    /* read everything first: a directory with nothing to import fails
     * before the store is opened, and no run is created */
    if (sagemaker_import_read(o.dir, &im, &err) < 0) {
        log_error("cannot import '%s': %s", o.dir, err.buf);
        goto out;
    }
    if (cli_open_store(o.store_flag, 0, &s) < 0)
        goto out;
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
    printf("%s\n", line.buf);
    status = rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
out:
    if (s)
        store_close(s);
    sagemaker_import_free(im);
    strbuf_release(&line);
    strbuf_release(&err);
    run_record_release(&r);
    return status;
}

static const char torch_trace_usage[] =
    "usage: strobe import torch-trace [--store S] [--pid P] RUN FILE\n"
    "  FILE: a PyTorch profiler trace (export_chrome_trace(): legacy or Kineto JSON)\n"
    "  RUN   the run it goes into (an id, a unique id prefix, a name, or 'last')\n"
    "  --pid P  the process of the run that wrote the trace (default: from the trace)\n";

static int import_torch_trace(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"pid", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL;
    long long pid = -1;
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = cli_getopt("import torch-trace", argc, argv, "h", opts)) != -1) {
        char *end;
        switch (ch) {
        case 's':
            store_flag = optarg;
            break;
        case 'p':
            pid = strtoll(optarg, &end, 10);
            if (*end || pid < 0) {
                log_error("--pid wants a process id, got '%s'", optarg);
                bad = 1;
            }
            break;
        case 'h':
            fputs(torch_trace_usage, stdout);
            return CLI_EXIT_OK;
        default:
            bad = 1;
        }
    }
    if (bad || optind != argc - 2) {
        if (!bad)
            fputs(torch_trace_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *ref = argv[optind], *path = argv[optind + 1];
    struct store *s = NULL;
    if (cli_open_store(store_flag, 0, &s) < 0)
        return CLI_EXIT_ERROR;
    int status = CLI_EXIT_ERROR;
    struct run_record r;
    run_record_init(&r);
    struct strbuf err, line;
    strbuf_init(&err);
    strbuf_init(&line);
    struct torch_trace_result res;
    if (cli_resolve(s, ref, &r) < 0)
        goto out;
    if (torch_trace_import(s, &r, path, pid, &res, &err) < 0) {
        log_error("cannot import '%s' into run %s: %s", path, r.id, err.buf);
        goto out;
    }
    torch_trace_warning(&res, path, &line);
    if (line.len)
        log_warn("%s", line.buf);
    strbuf_reset(&line);
    torch_trace_summary(&res, path, &r, &line);
    printf("%s\n", line.buf);
    status = CLI_EXIT_OK;
out:
    strbuf_release(&line);
    strbuf_release(&err);
    run_record_release(&r);
    store_close(s);
    return status;
}

static const struct importer {
    const char *name;
    cmd_fn *fn;
    const char *summary;
} importers[] = {
    {"sagemaker", import_sagemaker, "SageMaker Debugger profiler output (a directory)"},
    {"torch-trace", import_torch_trace, "a PyTorch profiler trace, into a recorded run"},
};

static void import_usage(FILE *out)
{
    fputs("usage: strobe import <format> [options] ...\n\nformats:\n", out);
    for (size_t i = 0; i < ARRAY_SIZE(importers); i++)
        fprintf(out, "  %-12s %s\n", importers[i].name, importers[i].summary);
    fputs("\nSee 'strobe import <format> --help'.\n", out);
}

int cmd_import(int argc, char **argv)
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
        int status = importers[i].fn(n, args);
        free(args);
        return status;
    }
    log_error("'%s' is not an import format; see 'strobe import --help'", argv[f]);
    return CLI_EXIT_USAGE;
}
