/* strobe import: other tools' recordings into the store, one subcommand per
 * format (a new format is a function and a row in importers[]). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "import/sagemaker.h"
#include "import/torch_trace.h"
#include "record/runinfo.h"

static const char sagemaker_usage[] =
    "usage: strobe import sagemaker [--store S] [--name N] [--experiment E] [--tag K=V]... DIR\n"
    "  DIR: a SageMaker Debugger profiler output directory (system/, framework/)\n"
    "  --name N   default sagemaker-<DIR's name>\n";

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

static int import_sagemaker(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"name", required_argument, NULL, 'n'},
        {"experiment", required_argument, NULL, 'e'},
        {"tag", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL, *name = NULL, *experiment = NULL;
    struct run_record r;
    run_record_init(&r);
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = cli_getopt("import sagemaker", argc, argv, "n:e:t:h", opts)) != -1) {
        switch (ch) {
        case 's':
            store_flag = optarg;
            break;
        case 'n':
            name = optarg;
            bad = cli_check_run_name(optarg) < 0;
            break;
        case 'e':
            experiment = optarg;
            bad = cli_check_text("experiment name", optarg) < 0;
            break;
        case 't':
            bad = cli_add_kv(&r.tags, "--tag", optarg) < 0;
            break;
        case 'h':
            fputs(sagemaker_usage, stdout);
            run_record_release(&r);
            return CLI_EXIT_OK;
        default:
            bad = 1;
        }
    }
    if (bad || optind != argc - 1) {
        if (!bad)
            fputs(sagemaker_usage, stderr);
        run_record_release(&r);
        return CLI_EXIT_USAGE;
    }
    const char *dir = argv[optind];
    int status = CLI_EXIT_ERROR;
    struct strbuf err;
    strbuf_init(&err);
    struct sagemaker_import *im = NULL;
    struct store *s = NULL;
    /* read everything first: a directory with nothing to import fails
     * before the store is opened, and no run is created */
    if (sagemaker_import_read(dir, &im, &err) < 0) {
        log_error("cannot import '%s': %s", dir, err.buf);
        goto out;
    }
    if (cli_open_store(store_flag, 0, &s) < 0)
        goto out;
    r.name = name ? strdup(name) : default_name(dir);
    r.experiment = experiment ? strdup(experiment) : NULL;
    r.command_json = command_json(argc, argv);
    char abs[PATH_MAX];
    kv_list_add(&r.tags, "source", "sagemaker");
    if (realpath(dir, abs) && strlen(abs) <= 200)
        kv_list_add(&r.params, "sagemaker_dir", abs);
    if (sagemaker_import_store(im, s, &r) < 0) {
        log_error("cannot import '%s' into store '%s': %s", dir, s->uri, s->err.buf);
        goto out;
    }
    struct strbuf line;
    strbuf_init(&line);
    sagemaker_import_summary(im, &r, &line);
    printf("%s\n", line.buf);
    strbuf_release(&line);
    status = CLI_EXIT_OK;
out:
    if (s)
        store_close(s);
    sagemaker_import_free(im);
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
    for (size_t i = 0; i < sizeof(importers) / sizeof(importers[0]); i++)
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
    for (size_t i = 0; i < sizeof(importers) / sizeof(importers[0]); i++) {
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
