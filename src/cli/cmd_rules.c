/*
 * strobe rules: evaluate the bottleneck rules over a stored run, offline,
 * with the engine the recorder runs live (rules/rules.h). By default with
 * the settings the run was recorded with, so the findings match what the
 * recorder found; --rules, --rule-param and --rule-interval change them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "rules/replay.h"
#include "rules/rules.h"

static const struct cli_usage rules_usage = {
    "rules",
    "usage: strobe rules [--store S] [--json] [--rules LIST] [--rule-param RULE.P=V]...\n"
    "                    [--rule-interval DUR] [--save] RUN\n"
    "       strobe rules --list [--json]\n",
    NULL,
    -1,
    0,
};

#define MAX_RULE_PARAMS CLI_MAX_RULE_PARAMS

struct rules_cli {
    int json, save, list;
    struct cli_rules r; /* --rules, --rule-param, --rule-interval */
};

/* ---- --list ------------------------------------------------------------------ */

static void list_text(void)
{
    for (uint32_t i = 0; i < rule_def_count; i++) {
        const struct rule_def *d = rule_defs[i];
        printf("%-24s %-9s %-6s %s\n", d->name, d->origin, severity_names[d->severity],
               d->nparams ? "" : "(a report: never fires)");
        for (uint32_t p = 0; p < d->nparams; p++) {
            char v[48];
            if (d->params[p].choices)
                snprintf(v, sizeof(v), "%s", rule_param_choice(&d->params[p], d->params[p].value));
            else
                snprintf(v, sizeof(v), "%g", d->params[p].value);
            printf("    %-26s = %-8s %s\n", d->params[p].name, v, d->params[p].doc);
        }
    }
}

/* "params":{name: value} of rule d: values[p], or the defaults when values
 * is NULL; a choice by its name. */
static void json_params(struct json_writer *jw, const struct rule_def *d, const double *values)
{
    jw_key(jw, "params");
    jw_object_begin(jw);
    for (uint32_t p = 0; p < d->nparams; p++) {
        double v = values ? values[p] : d->params[p].value;
        jw_key(jw, d->params[p].name);
        if (d->params[p].choices)
            jw_str(jw, rule_param_choice(&d->params[p], v));
        else
            jw_num(jw, v);
    }
    jw_end(jw);
}

static int list_json(void)
{
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_array_begin(&jw);
    for (uint32_t i = 0; i < rule_def_count; i++) {
        const struct rule_def *d = rule_defs[i];
        jw_object_begin(&jw);
        jw_kv_str(&jw, "rule", d->name);
        jw_kv_str(&jw, "origin", d->origin);
        jw_kv_str(&jw, "severity", severity_names[d->severity]);
        jw_kv_str(&jw, "recommendation", d->recommendation);
        json_params(&jw, d, NULL);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_space(&jw, "\n");
    int rc = cli_print(&o);
    strbuf_release(&o);
    return rc;
}

/* ---- the stored settings -------------------------------------------------------- */

struct stored_config {
    int found;
    int64_t interval_ns;
    char *rules;
    char *params; /* lines */
};

static int keep_config(const struct rule_config_record *c, void *arg)
{
    struct stored_config *sc = arg;
    sc->found = 1;
    sc->interval_ns = c->interval_ns;
    sc->rules = strdup(c->rules ? c->rules : "all");
    sc->params = strdup(c->params ? c->params : "");
    return 0;
}

/* Whether "Rule.param=v" and "Rule.param=w" (or SageMaker's "Rule_param=w")
 * set the same parameter. */
static int same_param(const char *a, const char *b)
{
    size_t la = strcspn(a, "="), lb = strcspn(b, "=");
    if (la != lb)
        return 0;
    size_t dot_a = strcspn(a, "."), dot_b = strcspn(b, ".");
    size_t sep_a = dot_a < la ? dot_a : strcspn(a, "_");
    size_t sep_b = dot_b < lb ? dot_b : strcspn(b, "_");
    return sep_a == sep_b && strncmp(a, b, sep_a) == 0 &&
           strncmp(a + sep_a + 1, b + sep_b + 1, la - sep_a - 1) == 0;
}

static int set_on_command_line(const struct rules_cli *o, const char *stored)
{
    for (int i = 0; i < o->r.param_list.n; i++)
        if (same_param(stored, o->r.params[i]))
            return 1;
    return 0;
}

/* The parameters to use: the stored ones first, the command line's after
 * (later ones win). A stored one the command line sets again is left out:
 * a value that strobe no longer takes (out of its range) would otherwise
 * fail every evaluation of the run, with no way to replace it. Pointers
 * into sc->params (split in place) and argv. */
static void merge_params(struct stored_config *sc, const struct rules_cli *o, const char **out)
{
    int n = 0;
    for (char *p = sc->params; p && *p && n < MAX_RULE_PARAMS;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        if (*p && !set_on_command_line(o, p))
            out[n++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    for (int i = 0; i < o->r.param_list.n && n < 2 * MAX_RULE_PARAMS; i++)
        out[n++] = o->r.params[i];
    out[n] = NULL;
}

/* ---- output ---------------------------------------------------------------------- */

static void print_text(const struct run_record *r, const struct rules_engine *e)
{
    /* %g: windows of 100 ms to 1.5 s are allowed, and "%.0f s" said 0 or 2 s */
    printf("rules over run %s '%s', windows of %g s\n", r->id, r->name,
           (double)rules_interval_ns(e) / 1e9);
    for (uint32_t i = 0; i < rules_count(e); i++) {
        const struct rule_result *res = rules_result_at(e, i);
        printf("  %-24s %-8s %s\n", res->rule, rule_status_names[res->status], res->detail);
    }
    uint32_t n;
    const struct finding *f = rules_findings(e, &n);
    if (!n) {
        printf("no findings\n");
        return;
    }
    struct finding_record *recs = calloc(n, sizeof(*recs));
    if (!recs)
        return;
    for (uint32_t i = 0; i < n; i++)
        rules_finding_record(&f[i], &recs[i]);
    printf("findings:\n");
    findings_print_text(stdout, recs, n, r->start_ns);
    free(recs);
}

static void json_results(struct json_writer *jw, const struct rules_engine *e)
{
    jw_key(jw, "rules");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < rules_count(e); i++) {
        const struct rule_result *res = rules_result_at(e, i);
        jw_object_begin(jw);
        jw_kv_str(jw, "rule", res->rule);
        jw_kv_str(jw, "status", rule_status_names[res->status]);
        jw_kv_uint(jw, "datapoints", res->datapoints);
        jw_kv_uint(jw, "violations", res->violations);
        jw_kv_str(jw, "detail", res->detail);
        json_params(jw, rules_def_at(e, i), rules_param_values(e, i));
        jw_kv_raw(jw, "report", res->report ? res->report : "null");
        jw_end(jw);
    }
    jw_end(jw);
}

static int print_json(const struct run_record *r, const struct rules_engine *e)
{
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "id", r->id);
    jw_kv_num(&jw, "interval_s", (double)rules_interval_ns(e) / 1e9);
    json_results(&jw, e);
    uint32_t n;
    const struct finding *f = rules_findings(e, &n);
    struct finding_record *recs = n ? calloc(n, sizeof(*recs)) : NULL;
    for (uint32_t i = 0; recs && i < n; i++)
        rules_finding_record(&f[i], &recs[i]);
    jw_key(&jw, "findings");
    findings_json(&jw, recs, recs ? n : 0);
    free(recs);
    jw_key(&jw, "warnings");
    jw_array_begin(&jw);
    for (uint32_t i = 0; i < rules_warning_count(e); i++)
        jw_str(&jw, rules_warning_at(e, i));
    jw_end(&jw);
    jw_kv_uint(&jw, "dropped", rules_dropped(e));
    jw_end(&jw);
    jw_space(&jw, "\n");
    int rc = cli_print(&o);
    strbuf_release(&o);
    return rc;
}

/* ---- the command ------------------------------------------------------------------ */

static int evaluate(struct store *s, const struct run_record *r, const struct rules_cli *o)
{
    struct stored_config sc = {0};
    if (s->ops->rule_config_query(s, r->id, keep_config, &sc) < 0)
        sc.found = 0; /* a store from before the rules: defaults */
    const char *params[2 * MAX_RULE_PARAMS + 1];
    merge_params(&sc, o, params);
    struct rules_options ro = {
        .interval_ns = o->r.interval_ns ? o->r.interval_ns
                       : sc.found       ? sc.interval_ns
                                        : 0,
        .rules = o->r.rules ? o->r.rules
                 : sc.found ? sc.rules
                            : "all",
        .params = params,
    };
    /* a run still recording ends later: the whole-run verdicts wait as the
     * live ones do (a lost run's recorder is gone: its data ends here) */
    struct rules_run_info info = {r->start_ns, r->cpu_count, r->mem_total_bytes, r->host,
                                  strcmp(run_record_status(r), "running") == 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int status = CLI_EXIT_ERROR;
    int rc = rules_engine_new(&ro, &info, &e, &err);
    if (rc < 0) {
        log_error("%s", err.buf);
        status = CLI_EXIT_USAGE;
    } else if (!e) {
        log_error("--rules none: nothing to evaluate");
        status = CLI_EXIT_USAGE;
    } else if (rules_replay(s, r, e, &err) < 0) {
        log_error("%s", err.buf);
    } else {
        status = CLI_EXIT_OK;
        for (uint32_t i = 0; i < rules_warning_count(e); i++) /* what was left out, said */
            log_warn("%s", rules_warning_at(e, i));
        if (o->json && print_json(r, e) < 0)
            status = CLI_EXIT_ERROR;
        else if (!o->json)
            print_text(r, e);
        if (o->save && (rc = rules_save(s, r->id, e, ro.rules, "offline")) < 0) {
            log_error("cannot save findings to store '%s': %s", s->uri, s->err.buf);
            status = CLI_EXIT_ERROR;
        }
    }
    rules_engine_free(e);
    strbuf_release(&err);
    free(sc.rules);
    free(sc.params);
    return status;
}

int cmd_rules(struct cli_ctx *cli, int argc, char **argv)
{
    struct rules_cli o = {0};
    cli_rules_init(&o.r);
    const struct cli_option opts[] = {
        CLI_OPT_JSON(&o.json),
        CLI_OPT_RULES(&o.r),
        CLI_OPT_FLAG(0, "save", &o.save, "replace the run's stored findings with this evaluation"),
        CLI_OPT_FLAG(0, "list", &o.list, "every rule with its parameters and defaults"),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &rules_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (o.list) {
        if (o.json)
            return list_json() < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
        list_text();
        return CLI_EXIT_OK;
    }
    if (cli->nargs != 1)
        return cli_usage_error(cli, &rules_usage, opts);
    cli->store_write = o.save; /* the findings are written: a store to migrate */
    if ((status = cli_open(cli)) >= 0)
        return status;
    return evaluate(cli->store, &cli->run, &o);
}
