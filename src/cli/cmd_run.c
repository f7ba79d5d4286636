#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "record/recorder.h"
#include "sample/proctree.h"
#include "record/runinfo.h"
#include "record/torch_profile.h"
#include "rules/rules.h"
#include "sample/collector.h"

#define INTERVAL_MIN_NS NS_PER_MS
#define INTERVAL_MAX_NS (60 * NS_PER_S)

static const char run_usage[] =
    "usage: strobe run [--store S] [--name N] [--experiment E] [--workload W] [--tag K=V]...\n"
    "                  [--param K=V]...\n"
    "                  [--interval DUR] [--gpu-interval DUR] [--no-framework] [--quiet]\n"
    "                  [--rules LIST|none] [--rule-param RULE.P=V]... [--rule-interval DUR]\n"
    "                  [--no-report | --report PATH] [--torch-profile STEPS] [--no-logs]\n"
    "                  -- CMD [ARG...]\n"
    "\n"
    "  --experiment E   the experiment the run belongs to (strobe ls --experiment E)\n"
    "  --workload W     runs started together, e.g. one point of a sweep (as in radT)\n"
    "  --param K=V      a parameter of the run; a Python script's own --key value\n"
    "                   arguments are parameters too\n"
    "  --interval DUR   sampling period, 1ms to 60s (default 100ms); units ns us ms s m\n"
    "  --gpu-interval DUR  GPU sampling period, 10ms to 60s (default 100ms), on its own thread\n"
    "  --no-framework   no zero-code PyTorch capture (strobe.span() and libstrobe still record)\n"
    "  --torch-profile A-B  torch.profiler over steps A to B (or one step A), its operators\n"
    "                   imported into the run\n"
    "  --quiet          no live status line, no findings as they fire, no closing summary\n"
    "  --rules LIST     bottleneck rules to run live (default all; none: off); strobe rules "
    "--list\n"
    "  --rule-param R.P=V  a rule's parameter, e.g. StepOutlier.stddev=5 (repeatable)\n"
    "  --rule-interval DUR window the rules judge at a time (default 10s)\n"
    "  --report PATH    where the HTML report goes (default: reports/ beside the store)\n"
    "  --no-report      write no report (strobe report RUN writes one later)\n"
    "  --no-logs        do not keep the job's stdout and stderr (strobe logs RUN shows them)\n"
    "  --proc-source S  how the process tree is read: auto (BPF where the kernel allows\n"
    "                   it, else procfs), bpf (or fail), procfs; default $STROBE_PROC_SOURCE,\n"
    "                   else auto\n"
    "  --proc-root DIR, --sys-root DIR   read another /proc and /sys (tests)\n"
    "  --collectors LIST                 only these collectors (cpu,mem,psi,disk,net,cgroup,proc)\n"
    "\n"
    "Exits with the command's status (128+N for signal N), 127 when it cannot be started,\n"
    "125 when strobe itself cannot start (bad options, unusable store).\n";

enum {
    OPT_STORE = 256,
    OPT_PROC_ROOT,
    OPT_SYS_ROOT,
    OPT_COLLECTORS,
    OPT_NO_FRAMEWORK,
    OPT_GPU_INTERVAL,
    OPT_RULES,
    OPT_RULE_PARAM,
    OPT_RULE_INTERVAL,
    OPT_REPORT,
    OPT_NO_REPORT,
    OPT_TORCH_PROFILE,
    OPT_NO_LOGS,
    OPT_PROC_SOURCE
};

static const struct option run_options[] = {
    {"store", required_argument, NULL, OPT_STORE},
    {"name", required_argument, NULL, 'n'},
    {"experiment", required_argument, NULL, 'e'},
    {"workload", required_argument, NULL, 'w'},
    {"tag", required_argument, NULL, 't'},
    {"param", required_argument, NULL, 'p'},
    {"interval", required_argument, NULL, 'i'},
    {"quiet", no_argument, NULL, 'q'},
    {"proc-root", required_argument, NULL, OPT_PROC_ROOT},
    {"proc-source", required_argument, NULL, OPT_PROC_SOURCE},
    {"sys-root", required_argument, NULL, OPT_SYS_ROOT},
    {"collectors", required_argument, NULL, OPT_COLLECTORS},
    {"no-framework", no_argument, NULL, OPT_NO_FRAMEWORK},
    {"gpu-interval", required_argument, NULL, OPT_GPU_INTERVAL},
    {"rules", required_argument, NULL, OPT_RULES},
    {"rule-param", required_argument, NULL, OPT_RULE_PARAM},
    {"rule-interval", required_argument, NULL, OPT_RULE_INTERVAL},
    {"report", required_argument, NULL, OPT_REPORT},
    {"no-report", no_argument, NULL, OPT_NO_REPORT},
    {"no-logs", no_argument, NULL, OPT_NO_LOGS},
    {"torch-profile", required_argument, NULL, OPT_TORCH_PROFILE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_interval(const char *arg, int64_t *out)
{
    if (duration_parse(arg, out) < 0 || *out < INTERVAL_MIN_NS || *out > INTERVAL_MAX_NS) {
        log_error("--interval wants a duration from 1ms to 60s, such as 100ms or 2s (got '%s')",
                  arg);
        return -1;
    }
    return 0;
}

/* 10 ms at the least: the driver refreshes most readings no faster, and
 * DCGM's profiling fields not below 100 ms. */
static int parse_gpu_interval(const char *arg, int64_t *out)
{
    if (duration_parse(arg, out) < 0 || *out < 10 * NS_PER_MS || *out > INTERVAL_MAX_NS) {
        log_error("--gpu-interval wants a duration from 10ms to 60s, such as 100ms (got '%s')",
                  arg);
        return -1;
    }
    return 0;
}

/* The rule options, checked before anything is recorded: a typo in a
 * parameter must not cost a run. */
static int check_rules(const struct recorder_opts *o)
{
    struct rules_options ro = {o->rule_interval_ns, o->rules, o->rule_params};
    struct rules_run_info info = {0, 1, 0, "", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = rules_engine_new(&ro, &info, &e, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    rules_engine_free(e);
    strbuf_release(&err);
    return rc;
}

static int check_collectors(const char *list)
{
    struct strbuf why;
    strbuf_init(&why);
    int rc = sampler_check_names(list, &why);
    if (rc < 0)
        log_error("--collectors: %s", why.buf);
    strbuf_release(&why);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    const char *rule_params[CLI_MAX_RULE_PARAMS + 1] = {NULL};
    int nrule_params = 0;
    struct recorder_opts o;
    memset(&o, 0, sizeof(o));
    o.interval_ns = 100 * NS_PER_MS;
    const char *store_flag = NULL, *report_path = NULL;
    char run_id[RUN_ID_LEN + 1] = "";
    int c, bad = 0, no_report = 0;
    const char *source_env = getenv("STROBE_PROC_SOURCE");
    if (source_env && *source_env && (o.proc_source = proc_source_parse(source_env)) < 0) {
        log_error("STROBE_PROC_SOURCE: '%s' is not auto, bpf or procfs", source_env);
        return RECORDER_EXIT_SELF;
    }
    optind = 1;
    /* "+": stop at the first non-option, the job's command */
    while (!bad && (c = cli_getopt("run", argc, argv, "+n:e:w:t:p:i:qh", run_options)) != -1) {
        switch (c) {
        case OPT_STORE:
            store_flag = optarg;
            break;
        case 'n':
            o.name = optarg;
            bad = cli_check_run_name(optarg) < 0;
            break;
        case 'e':
            o.experiment = optarg;
            bad = cli_check_text("experiment name", optarg) < 0;
            break;
        case 'w':
            o.workload = optarg;
            bad = cli_check_text("workload name", optarg) < 0;
            break;
        case 't':
            bad = cli_add_kv(&o.tags, "--tag", optarg) < 0;
            break;
        case 'p':
            bad = cli_add_kv(&o.params, "--param", optarg) < 0;
            break;
        case 'i':
            bad = parse_interval(optarg, &o.interval_ns) < 0;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_PROC_ROOT:
            o.proc_root = optarg;
            break;
        case OPT_SYS_ROOT:
            o.sys_root = optarg;
            break;
        case OPT_PROC_SOURCE:
            if ((o.proc_source = proc_source_parse(optarg)) < 0) {
                log_error("--proc-source: '%s' is not auto, bpf or procfs", optarg);
                bad = 1;
            }
            break;
        case OPT_COLLECTORS:
            o.collectors = optarg;
            if (check_collectors(optarg) < 0)
                bad = 1;
            break;
        case OPT_NO_FRAMEWORK:
            o.no_framework = 1;
            break;
        case OPT_GPU_INTERVAL:
            bad = parse_gpu_interval(optarg, &o.gpu_interval_ns) < 0;
            break;
        case OPT_RULES:
            o.rules = optarg;
            break;
        case OPT_NO_LOGS:
            o.no_logs = 1;
            break;
        case OPT_RULE_PARAM:
            bad = cli_rule_param_add(rule_params, &nrule_params, optarg) < 0;
            break;
        case OPT_RULE_INTERVAL:
            bad = cli_rule_interval(optarg, &o.rule_interval_ns) < 0;
            break;
        case OPT_REPORT:
            report_path = optarg;
            break;
        case OPT_NO_REPORT:
            no_report = 1;
            break;
        case OPT_TORCH_PROFILE: {
            uint32_t first, last;
            o.torch_profile = optarg;
            if (torch_profile_parse(optarg, &first, &last) < 0) {
                log_error("--torch-profile wants steps A-B (from 1, B >= A) or one step A, such "
                          "as 5-7 (got '%s')",
                          optarg);
                bad = 1;
            }
            break;
        }
        case 'h':
            fputs(run_usage, stdout);
            kv_list_release(&o.tags);
            kv_list_release(&o.params);
            return CLI_EXIT_OK;
        default:
            bad = 1;
        }
    }
    if (!bad && optind >= argc) {
        log_error("no command to run; usage: strobe run [options] -- CMD [ARG...]");
        bad = 1;
    }
    if (!bad && o.torch_profile && o.no_framework) {
        log_error("--torch-profile needs the PyTorch capture: drop --no-framework");
        bad = 1;
    }
    o.rule_params = rule_params;
    if (!bad && check_rules(&o) < 0)
        bad = 1;
    int status = RECORDER_EXIT_SELF;
    if (!bad) {
        o.store_uri = store_default_uri(store_flag);
        o.argv = argv + optind;
        o.run_id_out = run_id;
        int started = 1;
        o.job_started_out = &started;
        log_set_quiet(o.quiet);
        status = recorder_run(&o);
        /* the report never changes the job's status: a failure is a warning;
         * a command that never started has nothing to report but its error,
         * which strobe show gives */
        if (!no_report && run_id[0] && started && status != RECORDER_EXIT_SELF)
            cli_run_report(o.store_uri, run_id, report_path);
    }
    kv_list_release(&o.tags);
    kv_list_release(&o.params);
    return status;
}
