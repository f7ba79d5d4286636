/* The strobe command line: one file per command, one table in main.c. */
#ifndef STROBE_CLI_CLI_H
#define STROBE_CLI_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

/* Each command gets argv after its own name (argv[0] is the command). It
 * returns the process exit status. */
typedef int cmd_fn(int argc, char **argv);

int cmd_run(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);

/* The report at the end of strobe run (cmd_report.c): to path, or NULL for
 * <store dir>/reports/<run name>-<id>.html; prints the path as a note, or
 * one warning line when it cannot be written. */
void cli_run_report(const char *store_uri, const char *run_id, const char *path);
int cmd_trace(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
/* strobe show --json of r, appended to out (cmd_show.c; strobe serve's run
 * view). 0, or negative with s->err set. */
int cli_show_json(struct store *s, const struct run_record *r, struct strbuf *out);

struct run_events;
struct step_analysis;
struct strbuf;
/* strobe show's framework part (show_steps.c). */
void show_steps_text(const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a);
void show_steps_json(struct strbuf *o, const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a);

/* Findings (findings.c): most severe first in text; JSON as stored order. */
struct stored_findings { /* a run's stored findings, strings owned */
    struct finding_record *f;
    uint32_t n, cap;
};
int stored_findings_load(struct store *s, const char *run_id, struct stored_findings *out);
void stored_findings_release(struct stored_findings *sf);
void findings_print_text(FILE *out, const struct finding_record *f, uint32_t n, int64_t start_ns);
void findings_json(struct strbuf *o, const struct finding_record *f, uint32_t n);

/* The rule options strobe run and strobe rules share: one --rule-param
 * kept in params[*n] (NULL-terminated, CLI_MAX_RULE_PARAMS at most), one
 * --rule-interval parsed. 0, or -1 after saying why. */
#define CLI_MAX_RULE_PARAMS 64
int cli_rule_param_add(const char **params, int *n, const char *arg);
int cli_rule_interval(const char *arg, int64_t *out_ns);

/* Exit statuses of the read-side commands. */
#define CLI_EXIT_OK    0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2

/* Open the store for reading (it must exist); prints the error. */
int cli_open_store(const char *flag, int readonly, struct store **out);
/* Resolve RUN or print why not. */
int cli_resolve(struct store *s, const char *ref, struct run_record *out);
/* getopt_long for command cmd ("ls", "import sagemaker"): an option it
 * refuses is one line, "strobe: ls: unrecognized option '--bogus'; see
 * 'strobe ls --help'", and '?' back, for the caller's usage exit. */
struct option;
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *opts);
/* Parse --store, --json and --help, the options of show and compare;
 * optind is then at the first RUN. 0 to go on, or 1 with *status the exit
 * status (the usage printed: for --help to stdout, else to stderr). */
int cli_store_json_options(int argc, char **argv, const char *usage, const char **store_flag,
                           int *json, int *status);
/* Which runs strobe ls and strobe rm take (run_filter.c). */
struct run_filter {
    const char *experiment; /* --experiment */
    const char *workload;   /* --workload */
    const char *name_glob;  /* --name, an fnmatch pattern */
    unsigned status_mask;   /* --status: a bit per status; 0 for all */
};
/* Option codes of the filter for getopt_long tables; the help text is the
 * caller's. */
enum {
    RUN_FILTER_EXPERIMENT = 0x100,
    RUN_FILTER_WORKLOAD,
    RUN_FILTER_NAME,
    RUN_FILTER_STATUS,
};
#define RUN_FILTER_OPTIONS                                                                         \
    {"experiment", required_argument, NULL, RUN_FILTER_EXPERIMENT},                                \
        {"workload", required_argument, NULL, RUN_FILTER_WORKLOAD},                                \
        {"name", required_argument, NULL, RUN_FILTER_NAME},                                        \
    {                                                                                              \
        "status", required_argument, NULL, RUN_FILTER_STATUS                                       \
    }
/* Take opt if it is a filter's: 1 when taken, 0 when it is not a filter
 * option, -1 after one line saying what is wrong with arg. */
int run_filter_option(struct run_filter *f, int opt, const char *arg);
/* Whether any filter is set. */
int run_filter_any(const struct run_filter *f);
int run_filter_match(const struct run_filter *f, const struct run_record *r);

/* Parse "K=V" into key and value (pointers into a copy the caller frees). */
int cli_split_kv(const char *arg, char **key, char **value);
/* A name, tag or parameter the store will keep: 0, or -EINVAL after one
 * line saying why (what names it: "run name", "--tag"). */
int cli_check_text(const char *what, const char *text);
/* A run name to give a new run (--name): cli_check_text's rule, and not
 * RUN_REF_LAST, a name RUN could never reach. 0, or -EINVAL after one line. */
int cli_check_run_name(const char *name);
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
