#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strlist.h"
#include "record/on_finding.h"
#include "record/recorder.h"
#include "sample/proctree.h"
#include "record/runinfo.h"
#include "pyprof/sampler.h"
#include "record/torch_profile.h"
#include "rules/rules.h"
#include "sample/collector.h"

#define INTERVAL_MAX_NS (60 * NS_PER_S)

static const char run_synopsis[] =
    "usage: strobe run [--store S] [--name N] [--experiment E] [--workload W] [--tag K=V]...\n"
    "                  [--param K=V]... [--join KEY [--node NAME] | --no-join]\n"
    "                  [--interval DUR] [--gpu-interval DUR] [--open-every DUR]\n"
    "                  [--no-framework] [--quiet]\n"
    "                  [--rules LIST|none] [--rule-param RULE.P=V]... [--rule-interval DUR]\n"
    "                  [--on-finding RULE=ACTION]... [--stop-grace DUR]\n"
    "                  [--no-report | --report PATH] [--torch-profile STEPS] [--no-logs]\n"
    "                  [--py-sample RATE] [--py-profile STEPS]\n"
    "                  [--listen HOST:PORT [--token T]] [--spool DIR] [--start-gate R,G]\n"
    "                  -- CMD [ARG...]\n";

/* The names of a table's rows as an indented comma list, into sb. */
static void add_names(struct strbuf *sb, const char *title, const char *(*name_at)(size_t i))
{
    size_t col = strlen(title) + 1, len;
    strbuf_addf(sb, "%s:", title);
    const char *name;
    for (size_t i = 0; (name = name_at(i)); i++) {
        len = strlen(name) + 2;
        if (col + len > 78) {
            strbuf_adds(sb, "\n ");
            col = 1;
        }
        strbuf_addf(sb, " %s%s", name, name_at(i + 1) ? "," : "");
        col += len;
    }
    strbuf_addch(sb, '\n');
}

static const char *collector_at(size_t i)
{
    return collector_table[i] ? collector_table[i]->name : NULL;
}

static const char *rule_at(size_t i)
{
    return i < rule_def_count ? rule_defs[i]->name : NULL;
}

/* After the options: what --collectors and --rules take, from their tables,
 * and the exit statuses. */
static void run_notes(struct strbuf *sb)
{
    add_names(sb, "collectors (--collectors)", collector_at);
    add_names(sb, "rules (--rules; strobe rules --list)", rule_at);
    strbuf_adds(sb,
                "\nExits with the command's status (128+N for signal N), 127 when it cannot be "
                "started,\n125 when strobe itself cannot start (bad options, unusable store).\n"
                "A job an --on-finding stop ended exits as it did: 143 after SIGTERM, 137 after\n"
                "SIGKILL.\n");
}

#define INTERVAL_WANTS     "a duration from 1ms to 60s, such as 100ms or 2s"
#define GPU_INTERVAL_WANTS "a duration from 10ms to 60s, such as 100ms"
#define OPEN_EVERY_WANTS   "a duration from 1s to 60s, such as 5s"
#define STOP_GRACE_WANTS   "a duration from 0 to 1h, such as 30s"

static int proc_source_option(const struct cli_option *opt, const char *arg)
{
    if ((*(int *)opt->value = proc_source_parse(arg)) < 0) {
        log_error("--proc-source: '%s' is not auto, bpf or procfs", arg);
        return -1;
    }
    return 0;
}

static int collectors_option(const struct cli_option *opt, const char *arg)
{
    struct strbuf why;
    strbuf_init(&why);
    *(const char **)opt->value = arg;
    int rc = sampler_check_names(arg, &why);
    if (rc < 0)
        log_error("--collectors: %s", why.buf);
    strbuf_release(&why);
    return rc < 0 ? -1 : 0;
}

/* --torch-profile and --py-profile: steps A-B, or one step A */
static int steps_option(const struct cli_option *opt, const char *arg)
{
    uint32_t first, last;
    *(const char **)opt->value = arg;
    if (torch_profile_parse(arg, &first, &last) < 0) {
        log_error("--%s wants steps A-B (from 1, B >= A) or one step A, such as 5-7 (got '%s')",
                  opt->long_name, arg);
        return -1;
    }
    return 0;
}

static int py_sample_option(const struct cli_option *opt, const char *arg)
{
    if (py_rate_parse(arg, opt->value) < 0) {
        log_error("--py-sample wants a rate from 1 to %.0f Hz (100, 100hz), a period (10ms) "
                  "or off (got '%s')",
                  PY_RATE_MAX_HZ, arg);
        return -1;
    }
    return 0;
}

/* --on-finding: checked here, so that a bad one stops strobe before the
 * job starts; kept in a cli_list (at most ON_FINDING_MAX). */
static int on_finding_option(const struct cli_option *opt, const char *arg)
{
    struct cli_list *l = opt->value;
    struct on_finding_spec spec;
    struct strbuf why;
    strbuf_init(&why);
    int rc = on_finding_parse(arg, &spec, &why);
    if (rc < 0) {
        log_error("--on-finding: %s", why.buf ? why.buf : "out of memory");
    } else if (l->n == l->max) {
        log_error("at most %d --on-finding", l->max);
        rc = -1;
    } else {
        l->items[l->n++] = arg;
    }
    strbuf_release(&why);
    return rc < 0 ? -1 : 0;
}

/* A rule an --on-finding names must be one the run evaluates. */
static int listed_rule(const char *item, size_t len, void *arg)
{
    const char *rules = arg;
    if (strcmp(rules, "all") == 0 || strlist_has(rules, item, len) || (len == 1 && *item == '*') ||
        (len == 3 && strncmp(item, "all", 3) == 0))
        return 0;
    log_error("--on-finding: rule '%.*s' is not among --rules %s", (int)len, item, rules);
    return -1;
}

static int check_on_finding(const char *const *args, const char *rules)
{
    for (; *args; args++) {
        if (rules && strcmp(rules, "none") == 0) {
            log_error("--on-finding needs the rules: not with --rules none");
            return -1;
        }
        struct on_finding_spec spec;
        struct strbuf why;
        strbuf_init(&why);
        int rc = on_finding_parse(*args, &spec, &why); /* passed once already */
        strbuf_release(&why);
        if (rc < 0 ||
            (rules && strlist_each_n(spec.rules, spec.rules_len, listed_rule, (void *)rules)))
            return -1;
    }
    return 0;
}

/* What run's options say of the run to record. */
struct run_args {
    struct recorder_opts o;
    const char *on_finding[ON_FINDING_MAX + 1]; /* --on-finding, NULL-terminated */
    struct cli_list on_finding_list;            /* over on_finding */
    struct cli_rules rules;
    struct rules_options checked; /* rules, as cli_rules_check() passed them */
    const char *report_path;      /* --report */
    int no_report;                /* --no-report */
};

/* Check what the options alone could not, record the job, write its report:
 * the exit status. */
static int record(struct cli_ctx *cli, struct run_args *a)
{
    struct recorder_opts *o = &a->o;
    char run_id[RUN_ID_LEN + 1] = "";
    if (cli->nargs < 1) {
        log_error("no command to run; usage: strobe run [options] -- CMD [ARG...]");
        return RECORDER_EXIT_SELF;
    }
    if (o->torch_profile && o->no_framework) {
        log_error("--torch-profile needs the PyTorch capture: drop --no-framework");
        return RECORDER_EXIT_SELF;
    }
    if (cli_rules_check(&a->rules, &a->checked) < 0 ||
        check_on_finding(a->on_finding, a->checked.rules) < 0)
        return RECORDER_EXIT_SELF;
    o->on_finding = a->on_finding;
    o->rules = a->checked.rules;
    o->rule_params = a->checked.params;
    o->rule_interval_ns = a->checked.interval_ns;
    o->store_uri = store_default_uri(cli->store_flag);
    o->argv = cli->args;
    o->run_id_out = run_id;
    int started = 1;
    o->job_started_out = &started;
    log_set_quiet(o->quiet);
    int status = recorder_run(o);
    /* the report never changes the job's status: a failure is a warning;
     * a command that never started has nothing to report but its error,
     * which strobe show gives */
    if (!a->no_report && run_id[0] && started && status != RECORDER_EXIT_SELF)
        cli_run_report(o->store_uri, run_id, a->report_path);
    return status;
}

int cmd_run(struct cli_ctx *cli, int argc, char **argv)
{
    struct run_args a;
    memset(&a, 0, sizeof(a));
    struct recorder_opts *o = &a.o;
    o->interval_ns = 100 * NS_PER_MS;
    o->stop_grace_ns = ON_FINDING_GRACE_NS;
    a.on_finding_list = (struct cli_list){a.on_finding, 0, ON_FINDING_MAX};
    cli_rules_init(&a.rules);
    const char *source_env = getenv("STROBE_PROC_SOURCE");
    if (source_env && *source_env && (o->proc_source = proc_source_parse(source_env)) < 0) {
        log_error("STROBE_PROC_SOURCE: '%s' is not auto, bpf or procfs", source_env);
        return RECORDER_EXIT_SELF;
    }
    const struct cli_option opts[] = {
        CLI_OPT_RUN_NAME(&o->name),
        CLI_OPT_EXPERIMENT(&o->experiment),
        CLI_OPT_CALLBACK('w', "workload", &o->workload, "W",
                         "runs started together, e.g. one point of a sweep (as in radT)",
                         cli_group_name_option),
        CLI_OPT_STRING(0, "join", &o->join_key, "KEY",
                       "record as one node of a job: the recorders given one KEY\n"
                       "write one run (default: the launcher's job, from torchrun,\n"
                       "Slurm, SageMaker or Open MPI; docs/cluster.md)"),
        CLI_OPT_STRING(0, "node", &o->node, "NAME",
                       "this node's name in the job (default: the host name)"),
        CLI_OPT_FLAG(0, "no-join", &o->no_join,
                     "a run of its own, whatever the launcher's environment says"),
        CLI_OPT_STRING(0, "listen", &o->listen, "HOST:PORT",
                       "serve the run's live metrics at http://HOST:PORT/metrics\n"
                       "(OpenMetrics, for Prometheus; docs/openmetrics.md); loopback\n"
                       "only unless --token"),
        CLI_OPT_STRING(0, "token", &o->listen_token, "T",
                       "a scrape of --listen must send Authorization: Bearer T"),
        CLI_OPT_TAG(&o->tags),
        CLI_OPT_CALLBACK('p', "param", &o->params, "K=V",
                         "a parameter of the run; a Python script's own --key value\n"
                         "arguments are parameters too",
                         cli_kv_option),
        CLI_OPT_DURATION('i', "interval", &o->interval_ns, "DUR",
                         "sampling period, 1ms to 60s (default 100ms); units ns us ms s m",
                         NS_PER_MS, INTERVAL_MAX_NS, INTERVAL_WANTS),
        /* 10 ms at the least: the driver refreshes most readings no faster,
         * and DCGM's profiling fields not below 100 ms */
        CLI_OPT_DURATION(0, "gpu-interval", &o->gpu_interval_ns, "DUR",
                         "GPU sampling period, 10ms to 60s (default 100ms), on its own\n"
                         "thread",
                         10 * NS_PER_MS, INTERVAL_MAX_NS, GPU_INTERVAL_WANTS),
        CLI_OPT_DURATION(0, "open-every", &o->open_every_ns, "DUR",
                         "how often each series' newest points (its open block) are\n"
                         "written again, 1s to 60s: a running run's views lag by up\n"
                         "to this (default 1s into a file, 5s into PostgreSQL)",
                         NS_PER_S, INTERVAL_MAX_NS, OPEN_EVERY_WANTS),
        CLI_OPT_FLAG(0, "no-framework", &o->no_framework,
                     "no zero-code PyTorch capture (strobe.span() and libstrobe\n"
                     "still record)"),
        CLI_OPT_CALLBACK(0, "torch-profile", &o->torch_profile, "A-B",
                         "torch.profiler over steps A to B (or one step A), its\n"
                         "operators imported into the run",
                         steps_option),
        CLI_OPT_CALLBACK(0, "py-sample", &o->py_sample_hz, "RATE",
                         "sample the Python stacks of the job's processes from outside,\n"
                         "RATE times a second (1 to 1000, or a period: 10ms); off by\n"
                         "default (strobe flame RUN shows them)",
                         py_sample_option),
        CLI_OPT_CALLBACK(0, "py-profile", &o->py_profile, "A-B",
                         "sample the Python stacks at 100 Hz over steps A to B (or\n"
                         "one step A)",
                         steps_option),
        CLI_OPT_FLAG('q', "quiet", &o->quiet,
                     "no live status line, no findings as they fire, no closing\n"
                     "summary"),
        CLI_OPT_RULES(&a.rules),
        CLI_OPT_CALLBACK(0, "on-finding", &a.on_finding_list, "R=ACTION",
                         "when rule R (a comma list; * or all: any) first fires:\n"
                         "stop (SIGTERM, then SIGKILL; the run is 'stopped'),\n"
                         "signal:SIG to the job, or exec:CMD (sh -c, the finding\n"
                         "as JSON on stdin); once per rule; repeatable",
                         on_finding_option),
        CLI_OPT_DURATION(0, "stop-grace", &o->stop_grace_ns, "DUR",
                         "from a stop's SIGTERM to its SIGKILL, 0 to 1h (default 10s)", 0,
                         3600 * NS_PER_S, STOP_GRACE_WANTS),
        CLI_OPT_STRING(0, "report", &a.report_path, "PATH",
                       "where the HTML report goes (default: reports/ beside the\n"
                       "store)"),
        CLI_OPT_FLAG(0, "no-report", &a.no_report,
                     "write no report (strobe report RUN writes one later)"),
        CLI_OPT_FLAG(0, "no-logs", &o->no_logs,
                     "do not keep the job's stdout and stderr (strobe logs RUN\n"
                     "shows them)"),
        CLI_OPT_STRING(0, "spool", &o->spool_dir, "DIR",
                       "where batches go while a PostgreSQL store does not answer\n"
                       "(default: $XDG_STATE_HOME/strobe/spool, or ~/.local/state/...)"),
        CLI_OPT_CALLBACK(0, "proc-source", &o->proc_source, "S",
                         "how the process tree is read: auto (BPF where the kernel\n"
                         "allows it, else procfs), bpf (or fail), procfs; default\n"
                         "$STROBE_PROC_SOURCE, else auto",
                         proc_source_option),
        CLI_OPT_STRING(0, "start-gate", &o->start_gate, "R,G",
                       "start with other runs (strobe sweep): when ready, write\n"
                       "the run id to fd R; start the job when fd G gives a byte"),
        CLI_OPT_STRING(0, "proc-root", &o->proc_root, "DIR", "read another /proc (tests)"),
        CLI_OPT_STRING(0, "sys-root", &o->sys_root, "DIR", "read another /sys (tests)"),
        CLI_OPT_CALLBACK(0, "collectors", &o->collectors, "LIST",
                         "only these collectors (a comma list, below)", collectors_option),
        CLI_OPT_END,
    };
    struct strbuf notes;
    strbuf_init(&notes);
    run_notes(&notes);
    /* CLI_PARSE_STOP_AT_OPERAND: the first operand is the job's command */
    const struct cli_usage usage = {"run", run_synopsis, notes.buf, -1, CLI_PARSE_STOP_AT_OPERAND};
    int status = cli_parse(cli, &usage, opts, argc, argv);
    strbuf_release(&notes);
    if (status < 0)
        status = record(cli, &a);
    else if (status == CLI_EXIT_USAGE)
        status = RECORDER_EXIT_SELF;
    kv_list_release(&o->tags);
    kv_list_release(&o->params);
    return status;
}
