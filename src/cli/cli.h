/* The strobe command line: one file per command, one table in main.c. */
#ifndef STROBE_CLI_CLI_H
#define STROBE_CLI_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

#include "cli/options.h"

/* What a command needs before its work, from its row in main.c's table (or
 * strobe import's importers[]): cli_setup() and cli_open() provide it. */
enum cli_needs {
    CLI_STORE_URI = 1 << 0,   /* takes --store; opens the store itself, later (run, serve) */
    CLI_STORE_READ = 1 << 1,  /* the store opened as it is: it must exist (store_open's readonly) */
    CLI_STORE_WRITE = 1 << 2, /* the store opened to write: created and migrated as needed */
    CLI_RUN = 1 << 3,         /* its first operand is a RUN, resolved in the store */
};

/* A command's state between main.c and its function. */
struct cli_ctx {
    unsigned needs;         /* enum cli_needs of its row */
    const char *store_flag; /* --store, NULL when not given */
    int store_write;        /* open as CLI_STORE_WRITE though needs says READ (rules --save) */
    char **args;            /* the operands, after the options */
    int nargs;
    struct store *store;   /* opened by cli_open(); main.c closes it */
    struct run_record run; /* resolved by cli_open() with CLI_RUN; main.c releases it */
};

/* Each command gets argv after its own name (argv[0] is the command). It
 * returns the process exit status. */
typedef int cmd_fn(struct cli_ctx *c, int argc, char **argv);

/* Parse argv by opts (plus --store when c->needs takes a store) into
 * c->args; then, when u->operands >= 0, check that there are that many
 * operands (else the help to stderr). -1 to go on, or the exit status:
 * CLI_EXIT_OK after --help, CLI_EXIT_USAGE after an error. */
int cli_parse(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts, int argc,
              char **argv);
/* The help to stderr, for operands that do not fit: CLI_EXIT_USAGE. */
int cli_usage_error(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts);
/* Open the store (--store, else $STROBE_STORE, else ./strobe.db) as
 * c->needs says and resolve c->args[0] with CLI_RUN. -1 to go on, or
 * CLI_EXIT_ERROR after saying why. */
int cli_open(struct cli_ctx *c);
/* cli_parse(), then cli_open(): for a command with nothing to check in
 * between. */
int cli_setup(struct cli_ctx *c, const struct cli_usage *u, const struct cli_option *opts, int argc,
              char **argv);
/* Release what cli_open() opened (main.c, after the command). */
void cli_ctx_release(struct cli_ctx *c);

int cmd_run(struct cli_ctx *c, int argc, char **argv);
int cmd_ls(struct cli_ctx *c, int argc, char **argv);
int cmd_show(struct cli_ctx *c, int argc, char **argv);
int cmd_export(struct cli_ctx *c, int argc, char **argv);
int cmd_rm(struct cli_ctx *c, int argc, char **argv);
int cmd_copy(struct cli_ctx *c, int argc, char **argv);
int cmd_push(struct cli_ctx *c, int argc, char **argv);
int cmd_import(struct cli_ctx *c, int argc, char **argv);
int cmd_sweep(struct cli_ctx *c, int argc, char **argv);
int cmd_rules(struct cli_ctx *c, int argc, char **argv);
int cmd_logs(struct cli_ctx *c, int argc, char **argv);
int cmd_ctl(struct cli_ctx *c, int argc, char **argv);
int cmd_report(struct cli_ctx *c, int argc, char **argv);
int cmd_compare(struct cli_ctx *c, int argc, char **argv);

/* The report at the end of strobe run (cmd_report.c): to path, or NULL for
 * <store dir>/reports/<run name>-<id>.html; prints the path as a note, or
 * one warning line when it cannot be written. */
void cli_run_report(const char *store_uri, const char *run_id, const char *path);
int cmd_trace(struct cli_ctx *c, int argc, char **argv);
int cmd_flame(struct cli_ctx *c, int argc, char **argv);
/* --steps "A-B" or "A" (steps counted from 1, A <= B): 0, or -1. */
int cli_parse_steps(const char *arg, uint32_t *from, uint32_t *to);
int cmd_serve(struct cli_ctx *c, int argc, char **argv);
int cmd_metrics(struct cli_ctx *c, int argc, char **argv);
int cmd_top(struct cli_ctx *c, int argc, char **argv);
/* strobe show --json of r, appended to out (cmd_show.c; strobe serve's run
 * view). 0, or negative with s->err set. */
int cli_show_json(struct store *s, const struct run_record *r, struct strbuf *out);
/* Print a built document to stdout (output.c), or, when building it ran
 * out of memory, print nothing and say so: never a truncated document.
 * 0 or negative. */
int cli_print(const struct strbuf *o);

struct run_events;
struct step_analysis;
struct json_writer;
/* strobe show's framework part (show_steps.c); in JSON, members of jw's
 * open object. */
void show_steps_text(const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a);
void show_steps_json(struct json_writer *jw, const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a);

/* strobe show's Python hotspots (show_python.c), from r's samples and its
 * events ev (loaded already). load: 0, or -1 with s->err set; *out is
 * then NULL or to be released too. Nothing printed, "python": null, when
 * the run has no samples. */
struct show_python;
int show_python_load(struct store *s, const struct run_record *r, const struct run_events *ev,
                     struct show_python **out);
void show_python_release(struct show_python *p);
void show_python_text(const struct show_python *p);
void show_python_json(struct json_writer *jw, const struct show_python *p);

/* Findings (findings.c): most severe first in text; JSON as stored order. */
struct stored_findings { /* a run's stored findings, strings owned */
    struct finding_record *f;
    uint32_t n, cap;
};
int stored_findings_load(struct store *s, const char *run_id, struct stored_findings *out);
void stored_findings_release(struct stored_findings *sf);
void findings_print_text(FILE *out, const struct finding_record *f, uint32_t n, int64_t start_ns);
/* The findings as one JSON array value for jw. */
void findings_json(struct json_writer *jw, const struct finding_record *f, uint32_t n);

/* What strobe run --on-finding did (show_actions.c): the run's "actions"
 * text (record/on_finding.h), read back. */
struct run_action { /* strings owned */
    char *rule, *severity, *scope, *action, *result;
    int64_t at_ns;
    int ok;
    int stopped_run; /* the stop that ended the job */
};
struct run_actions {
    struct run_action *a;
    uint32_t n, cap;
};
/* Load the run's actions; none when it has no such text, or one another
 * tool wrote that is not an array of them. 0, or negative: the store
 * failed (s->err says why). run_actions_release() after, even then. */
int run_actions_load(struct store *s, const char *run_id, struct run_actions *out);
void run_actions_release(struct run_actions *x);
/* The action that stopped the run, or NULL. */
const struct run_action *run_actions_stopper(const struct run_actions *x);
/* "actions   N" and a line each, from the run's start; nothing when none. */
void run_actions_print_text(const struct run_actions *x, int64_t start_ns);
/* Members of jw's open object: actions ([{rule, severity, scope, action,
 * at_ns, ok, stopped_run, result}]) and stopped_by (the one of them that
 * stopped the run, or null), stopped_by first. */
void run_actions_json(struct json_writer *jw, const struct run_actions *x);

/* The shared option groups, each declared once: a command puts the ones it
 * takes in its table. */
#define CLI_OPT_JSON(v) CLI_OPT_FLAG('j', "json", (v), "JSON instead of text")

/* The rule options of strobe run, rules and import sagemaker; cli_rules_init
 * first. */
#define CLI_MAX_RULE_PARAMS 64
struct cli_rules {
    const char *rules;                           /* --rules; NULL: the default, all */
    const char *params[CLI_MAX_RULE_PARAMS + 1]; /* --rule-param, NULL-terminated */
    struct cli_list param_list;                  /* over params */
    int64_t interval_ns;                         /* --rule-interval; 0: the default */
};
void cli_rules_init(struct cli_rules *r);
#define CLI_OPT_RULES(r)                                                                           \
    CLI_OPT_STRING(0, "rules", &(r)->rules, "LIST",                                                \
                   "the bottleneck rules evaluated: a comma list, all (the default) or\n"          \
                   "none (strobe rules --list names them)"),                                       \
        CLI_OPT_LIST(0, "rule-param", &(r)->param_list, "R.P=V",                                   \
                     "parameter P of rule R, e.g. StepOutlier.stddev=5 (also\n"                    \
                     "SageMaker's R_P=V; repeatable)"),                                            \
        CLI_OPT_DURATION(0, "rule-interval", &(r)->interval_ns, "DUR",                             \
                         "the window the rules judge at a time (default 10s; strobe\n"             \
                         "rules: the run's)",                                                      \
                         CLI_MIN_RULE_INTERVAL_NS, INT64_MAX, "a duration of 100ms or more")
/* shorter windows hold too few samples at the default 100 ms interval */
#define CLI_MIN_RULE_INTERVAL_NS (100 * 1000 * 1000LL)
struct rules_options;
/* The rule options as the engine takes them, into *out (pointing into r),
 * checked before anything is recorded or read: a typo in a parameter must
 * not cost a run. 0, or negative after one line saying why. */
int cli_rules_check(const struct cli_rules *r, struct rules_options *out);

/* The options that name a new run (strobe run, import sagemaker). Each
 * checks its value as the store will keep it, saying why not in one line. */
int cli_run_name_option(const struct cli_option *opt, const char *arg);
/* --experiment, --workload: "<long name> name" in the error */
int cli_group_name_option(const struct cli_option *opt, const char *arg);
/* --tag, --param K=V into the struct kv_list at opt->value */
int cli_kv_option(const struct cli_option *opt, const char *arg);
#define CLI_OPT_RUN_NAME(v)                                                                        \
    CLI_OPT_CALLBACK('n', "name", (v), "N", "the run's name (RUN names it too)",                   \
                     cli_run_name_option)
#define CLI_OPT_EXPERIMENT(v)                                                                      \
    CLI_OPT_CALLBACK('e', "experiment", (v), "E",                                                  \
                     "the experiment the run belongs to (strobe ls --experiment E)",               \
                     cli_group_name_option)
#define CLI_OPT_TAG(l)                                                                             \
    CLI_OPT_CALLBACK('t', "tag", (l), "K=V", "a tag of the run (repeatable)", cli_kv_option)

/* Exit statuses of the read-side commands. */
#define CLI_EXIT_OK    0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2

/* Open the store (--store's flag, or the default) for reading or writing;
 * prints the error. */
int cli_open_store(const char *flag, int readonly, struct store **out);
/* Resolve RUN or print why not. */
int cli_resolve(struct store *s, const char *ref, struct run_record *out);
/* Which runs strobe ls and strobe rm take (run_filter.c). */
struct run_filter {
    const char *experiment; /* --experiment */
    const char *workload;   /* --workload */
    const char *name_glob;  /* --name, an fnmatch pattern */
    unsigned status_mask;   /* --status: a bit per status; 0 for all */
};
/* --status S[,S...] into the filter's status_mask (opt->value). */
int run_filter_status_option(const struct cli_option *opt, const char *arg);
/* The filter options, e and w their letters (0 for none). */
#define CLI_OPT_RUN_FILTER(f, e, w)                                                                \
    CLI_OPT_STRING(e, "experiment", &(f)->experiment, "E", "runs of experiment E"),                \
        CLI_OPT_STRING(w, "workload", &(f)->workload, "W", "runs of workload W"),                  \
        CLI_OPT_STRING(0, "name", &(f)->name_glob, "GLOB",                                         \
                       "runs whose name matches, as the shell matches (\"bs*\")"),                 \
        CLI_OPT_CALLBACK(0, "status", &(f)->status_mask, "S[,S...]",                               \
                         "running, finished, failed, crashed, killed, stopped or lost\n"           \
                         "(a comma list)",                                                         \
                         run_filter_status_option)
/* Whether any filter is set. */
int run_filter_any(const struct run_filter *f);
int run_filter_match(const struct run_filter *f, const struct run_record *r);
/* rm and copy take RUNs or filters: -1 when the operands hold one of
 * them, else the usage exit after the help (neither) or one line (both). */
int run_filter_operands(struct cli_ctx *cli, const struct run_filter *f, const struct cli_usage *u,
                        const struct cli_option *opts);
/* fn on each run the operands name (RUN...), else on each run f matches,
 * newest first; each read from cli->store as fn gets it. CLI_EXIT_OK, or
 * CLI_EXIT_ERROR when a RUN was not found or the runs could not be listed
 * (said in one line each); what fn does wrong is fn's to count. */
typedef void cli_run_fn(const struct run_record *r, void *arg);
int cli_each_run(struct cli_ctx *cli, const struct run_filter *f, cli_run_fn *fn, void *arg);

/* Append arg to out without a store password in it (a URI, or --OPTION=URI
 * as --store, --from, --to take: store_uri_redact). Returns
 * strbuf_failed(out). */
int cli_arg_redact(const char *arg, struct strbuf *out);
/* Parse "K=V" into key and value (pointers into a copy the caller frees). */
int cli_split_kv(const char *arg, char **key, char **value);
/* A name, tag or parameter the store will keep: 0, or -EINVAL after one
 * line saying why (what names it: "run name", "--tag"). */
int cli_check_text(const char *what, const char *text);
/* A run name to give a new run (--name): cli_check_text's rule, and not
 * RUN_REF_LAST, a name RUN could never reach. 0, or -EINVAL after one line. */
int cli_check_run_name(const char *name);
/* Whether a and b are one store: one file, or one database as named (the
 * same server under two names is not seen). copy and push refuse that. */
int cli_same_store(const struct store *a, const struct store *b);
/* Stored text (names, process names, findings: the job's or another
 * tool's words) made safe for a terminal with strbuf_add_visible: in sb,
 * reset first; the pointer lives as long as sb's contents. */
const char *cli_visible(struct strbuf *sb, const char *s);
/* The same, written to out. */
void cli_put_visible(FILE *out, const char *s);
/* Field key of a series' meta JSON into out (cap bytes, cut to fit): a
 * number as written, a string decoded and through cli_visible, else "". */
void cli_meta_field(const char *meta, const char *key, char *out, size_t cap);
/* Add "K=V" of flag (--tag, --param) to l: 0, or -1 after one line. */
int cli_add_kv(struct kv_list *l, const char *flag, const char *arg);

#endif
