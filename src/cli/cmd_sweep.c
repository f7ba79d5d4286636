/*
 * strobe sweep FILE: run a campaign from an experiment file (radT's CSV or
 * YAML, docs/sweep.md); strobe sweep status FILE|EXPERIMENT: where it
 * stands and what each workload gave.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "rules/rules.h"
#include "serve/summary.h"
#include "sweep/gpu_share.h"
#include "sweep/results.h"
#include "sweep/sched.h"
#include "sweep/spec.h"
#include "sweep/state.h"

#define STOP_GRACE_NS (10 * NS_PER_S)

static const struct cli_usage sweep_usage = {
    "sweep",
    "usage: strobe sweep [--store S] [--dry-run] [--rerun] [--parallel] [--write-back]\n"
    "                    [--python PY] [--quiet] FILE\n"
    "       strobe sweep status [--store S] [--json] FILE|EXPERIMENT\n",
    "FILE is an experiment file: radT's CSV (Experiment,Workload,Name,Status,Run,\n"
    "Devices,Collocation,File,Listeners,Params) or YAML (name, experiment,\n"
    "collocation, devices, listeners, file, method, parameters), with strobe's\n"
    "extensions (docs/sweep.md). Workloads run in order; the runs of one start\n"
    "together. Run again, the same file skips finished workloads and runs failed\n"
    "or lost ones again. Exits 0 when every workload finished, 1 when one failed,\n"
    "2 for a bad file, 128+N when signal N stopped it.\n",
    1,
    0,
};

static const struct cli_usage status_usage = {
    "sweep status",
    "usage: strobe sweep status [--store S] [--json] FILE|EXPERIMENT\n",
    "Each workload of the campaign: its runs, status, duration, samples/s (all its\n"
    "runs together, and per device), its collocated runs against the same runs\n"
    "alone, step p50 and findings.\n",
    1,
    0,
};

/* ---- loading a file ---- */

/* The file's plan. check: the devices and listeners must exist here. */
static int load_spec(const char *path, const char *python, int check, struct sweep_spec *spec,
                     char ***gpus)
{
    const char *why = NULL;
    *gpus = check ? gpu_ids_list(&why) : NULL;
    struct sweep_env env = {
        .gpu_ids = *gpus,
        .why_no_gpu = why,
        .have_command = check ? gpu_have_command : NULL, /* NULL: no listener checked */
        .python = python,
        .any_device = !check,
    };
    struct strbuf err;
    strbuf_init(&err);
    int rc = sweep_spec_load(spec, path, &env, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    strbuf_release(&err);
    return rc;
}

/* The workload's rules and their parameters, as strobe run will take
 * them: an engine made and dropped. */
static int check_rules(const struct sweep_spec *spec, const struct sweep_workload *w)
{
    if (!w->rules && !w->rule_params)
        return 0;
    struct rules_options ro = {w->rule_interval_ns, w->rules, (const char *const *)w->rule_params};
    struct rules_run_info info = {0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = rules_engine_new(&ro, &info, &e, &err);
    if (rc < 0)
        log_error("%s:%d: workload %s: %s", spec->path, w->line, w->name,
                  err.len ? err.buf : "out of memory");
    rules_engine_free(e);
    strbuf_release(&err);
    return rc < 0 ? -1 : 0;
}

/* Checks that need more than the file: rule names of on_finding, and MIG
 * (root, MIG mode) for workloads about to run. */
static int check_plan(const struct sweep_spec *spec, const enum sweep_decision *d)
{
    for (size_t i = 0; i < spec->n; i++) {
        const struct sweep_workload *w = &spec->w[i];
        for (char **f = w->on_finding; f && *f; f++) {
            const char *p = *f;
            while (*p && *p != '=') {
                size_t len = strcspn(p, ",=");
                int known = (len == 1 && *p == '*') || (len == 3 && strncmp(p, "all", 3) == 0);
                for (size_t k = 0; !known && k < rule_def_count; k++)
                    known = strlen(rule_defs[k]->name) == len &&
                            strncmp(rule_defs[k]->name, p, len) == 0;
                if (!known) {
                    log_error("%s:%d: on_finding: '%.*s' is not a rule (strobe rules --list)",
                              spec->path, w->line, (int)len, p);
                    return -1;
                }
                p += len + (p[len] == ',');
            }
        }
        if (check_rules(spec, w) < 0)
            return -1;
        if (!(d[i] == SWEEP_RUN || d[i] == SWEEP_RUN_AGAIN || d[i] == SWEEP_RERUN))
            continue;
        for (size_t k = 0; k < w->nruns; k++) {
            if (w->runs[k].share != SWEEP_SHARE_MIG)
                continue;
            struct strbuf why;
            strbuf_init(&why);
            int rc = mig_check(w->runs[k].devices[0], &why);
            if (rc < 0)
                log_error("%s:%d: workload %s: %s", spec->path, w->runs[k].line, w->name, why.buf);
            strbuf_release(&why);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- the plan, shown ---- */

/* One word as sh would read it back: as it is when it holds only safe
 * characters, else in single quotes. */
static void print_word(const char *word)
{
    if (word[0] && strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_@%+=:,./-") == strlen(word)) {
        printf(" %s", word);
        return;
    }
    printf(" '");
    for (const char *p = word; *p; p++)
        if (*p == '\'')
            printf("'\\''");
        else
            putchar(*p);
    putchar('\'');
}

static void print_command(const struct sweep_run *r)
{
    char devices[256] = "";
    size_t at = 0;
    for (char **d = r->devices; d && *d && at < sizeof(devices); d++)
        at += (size_t)snprintf(devices + at, sizeof(devices) - at, "%s%s", at ? "," : "", *d);
    printf("    %s:", r->name);
    if (devices[0])
        printf(" CUDA_VISIBLE_DEVICES=%s", devices);
    if (r->wrap)
        printf(" [%s]", r->wrap);
    for (char **a = r->argv; *a; a++)
        print_word(*a);
    printf("\n");
}

static void print_plan(const struct sweep_spec *spec, const enum sweep_decision *d, int verbose)
{
    size_t runs = 0, total = 0;
    for (size_t i = 0; i < spec->n; i++)
        if (d[i] == SWEEP_RUN || d[i] == SWEEP_RUN_AGAIN || d[i] == SWEEP_RERUN) {
            runs++;
            total += spec->w[i].nruns;
        }
    printf("campaign %s (%s, plan %s): %zu workloads, %zu to run (%zu runs)\n", spec->campaign,
           spec->format == SWEEP_CSV ? "CSV" : "YAML", spec->hash, spec->n, runs, total);
    printf("%-16s %-5s %-10s %-12s %s\n", "WORKLOAD", "RUNS", "DEVICES", "COLLOCATION", "ACTION");
    for (size_t i = 0; i < spec->n; i++) {
        const struct sweep_workload *w = &spec->w[i];
        const char **devices = sweep_workload_devices(w);
        char dev[128] = "-", coll[64];
        size_t at = 0;
        for (size_t k = 0; devices && devices[k] && at < sizeof(dev); k++)
            at += (size_t)snprintf(dev + at, sizeof(dev) - at, "%s%s", k ? "," : "", devices[k]);
        free(devices);
        printf("%-16s %-5zu %-10s %-12s %s\n", w->name, w->nruns, dev,
               sweep_run_collocation(&w->runs[0], coll, sizeof(coll)), sweep_decision_name(d[i]));
        if (verbose)
            for (size_t k = 0; k < w->nruns; k++)
                print_command(&w->runs[k]);
    }
}

/* ---- strobe sweep FILE ---- */

struct sweep_args {
    int dry_run, rerun, parallel, write_back, quiet;
    const char *python;
};

/* The store's URI with a file's path made absolute: runs start in their
 * script's folder. */
static char *absolute_store(const char *uri)
{
    if (store_uri_is_postgres(uri) || uri[0] == '/' || strncmp(uri, "file:", 5) == 0)
        return strdup(uri);
    char cwd[PATH_MAX];
    char *out = NULL;
    if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s/%s", cwd, uri) < 0)
        return NULL;
    return out;
}

/* Where a campaign's artifacts go: beside a store file, else here. */
static char *work_dir_for(const char *store_uri, const char *campaign)
{
    char *out = NULL, base[PATH_MAX];
    const char *slash = store_uri_is_postgres(store_uri) ? NULL : strrchr(store_uri, '/');
    if (slash)
        snprintf(base, sizeof(base), "%.*s", (int)(slash - store_uri), store_uri);
    else if (!getcwd(base, sizeof(base)))
        snprintf(base, sizeof(base), ".");
    char safe[128];
    size_t n = 0;
    for (const char *p = campaign; *p && n + 1 < sizeof(safe); p++)
        safe[n++] = (*p == '/' || *p == ' ' || *p == '.') ? '_' : *p;
    safe[n] = '\0';
    if (asprintf(&out, "%s/strobe-sweep-%s", base, safe) < 0)
        return NULL;
    return out;
}

static const char *lock_dir(void)
{
    const char *d = getenv("STROBE_LOCK_DIR");
    return d && *d ? d : "/tmp/strobe-locks";
}

/* The campaign's state (a new one when the store has none); refuses a
 * campaign another sweep is running. */
static int take_campaign(struct store *s, const struct sweep_spec *spec, struct campaign_state *st,
                         int dry_run)
{
    int rc = campaign_state_load(s, spec->campaign, st);
    if (rc == -STROBE_ENOTFOUND) {
        campaign_state_release(st);
        st->name = strdup(spec->campaign);
        rc = st->name ? 0 : -ENOMEM;
    } else if (rc == 0 && campaign_owner_state(st) == PROCID_ALIVE && st->owner_pid != getpid()) {
        /* a dry run only reads: the plan as it stands is worth seeing */
        (dry_run ? log_note : log_error)("campaign %s is running: strobe sweep, pid %lld on %s",
                                         spec->campaign, (long long)st->owner_pid,
                                         st->owner_host ? st->owner_host : "this host");
        if (!dry_run)
            return -1;
    } else if (rc < 0) {
        log_error("cannot read campaign %s: %s", spec->campaign,
                  rc == -EBADMSG ? "its state does not parse" : s->err.buf);
        return -1;
    }
    if (rc == 0 && st->spec_hash && st->spec_hash[0] && strcmp(st->spec_hash, spec->hash) != 0)
        log_note("%s changed since the campaign began: workloads whose definition is unchanged "
                 "keep their status",
                 spec->path);
    free(st->spec_hash);
    free(st->file);
    st->spec_hash = strdup(spec->hash);
    st->file = realpath(spec->path, NULL);
    return rc == 0 && st->spec_hash ? 0 : -1;
}

static int run_campaign(struct cli_ctx *cli, struct sweep_args *a, const char *path)
{
    struct sweep_spec spec = {0};
    char **gpus = NULL;
    int status = CLI_EXIT_USAGE;
    enum sweep_decision *d = NULL;
    struct campaign_state st = {0};
    struct store *store = NULL;
    char *uri = absolute_store(store_default_uri(cli->store_flag));
    char *work = NULL, exe[PATH_MAX];
    if (!uri || load_spec(path, a->python, 1, &spec, &gpus) < 0)
        goto out;
    d = calloc(spec.n, sizeof(*d));
    status = CLI_EXIT_ERROR;
    if (!d)
        goto out;
    struct strbuf err;
    strbuf_init(&err);
    /* a dry run creates nothing: without a store, every workload would run */
    int absent = a->dry_run && !store_uri_is_postgres(uri) && access(uri, F_OK) != 0;
    int rc = absent ? 0 : store_open(uri, a->dry_run, &store, &err);
    if (rc < 0) {
        log_error("%s", err.buf);
        strbuf_release(&err);
        goto out;
    }
    strbuf_release(&err);
    if (store && take_campaign(store, &spec, &st, a->dry_run) < 0)
        goto out;
    if (store)
        sweep_settle_lost(store, &st);
    sweep_decide(&spec, store ? &st : NULL, a->rerun, d);
    if (check_plan(&spec, d) < 0) {
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if (a->dry_run || !a->quiet)
        print_plan(&spec, d, a->dry_run);
    fflush(stdout);
    if (a->dry_run) {
        status = CLI_EXIT_OK;
        goto out;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    work = work_dir_for(uri, spec.campaign);
    if (n <= 0 || !work) {
        log_error("cannot find strobe's own executable");
        goto out;
    }
    exe[n] = '\0';
    struct sweep_opts o = {
        .store_uri = uri,
        .exe = exe,
        .lock_dir = lock_dir(),
        .work_dir = work,
        .rerun = a->rerun,
        .parallel = a->parallel,
        .write_back = a->write_back,
        .quiet = a->quiet,
        .stop_grace_ns = STOP_GRACE_NS,
    };
    status = sweep_execute(&spec, d, store, &st, &o);
out:
    if (store)
        store_close(store);
    campaign_state_release(&st);
    free(d);
    free(uri);
    free(work);
    gpu_ids_free(gpus);
    sweep_spec_release(&spec);
    return status;
}

/* ---- strobe sweep status ---- */

static void params_text(const struct kv_list *p, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s=%s", i ? " " : "", p->items[i].key,
                               p->items[i].value);
}

/* v with one decimal and a suffix ("" or "x"), or "-" when not finite. */
static const char *num_or_dash(double v, const char *suffix, char *buf, size_t cap)
{
    if (!isfinite(v))
        return "-";
    snprintf(buf, cap, "%.*f%s", suffix[0] ? 2 : 1, v, suffix);
    return buf;
}

static void status_table(const struct campaign_state *st, const struct sweep_results *r)
{
    const struct sweep_figures *f = r->f;
    const struct sweep_progress *p = &r->progress;
    printf("campaign %s: %zu of %zu workloads done%s%s\n", st->name, p->done, p->total,
           p->running ? ", running now" : "",
           p->owner == PROCID_ALIVE ? ""
           : st->owner_pid          ? " (its sweep is gone)"
                                    : "");
    printf("%-14s %-8s %-6s %4s %-11s %9s %10s %10s %7s %9s %4s  %s\n", "WORKLOAD", "COLLOC",
           "DEVICE", "RUNS", "STATUS", "DURATION", "SAMPLES/S", "PER DEVICE", "VS SOLO", "STEP P50",
           "FIND", "PARAMS");
    for (size_t i = 0; i < r->n; i++) {
        char dur[32], sps[32], per[32], solo[32], p50[32], params[256];
        const struct wl_state *w = f[i].st;
        params_text(&f[i].params, params, sizeof(params));
        printf("%-14s %-8s %-6s %4d %-11s %9s %10s %10s %7s %9s %4lld  %s\n", w->name,
               w->collocation ? w->collocation : "-",
               w->devices && w->devices[0] ? w->devices : "host", f[i].nruns,
               wl_state_shown_as(w, p->owner),
               f[i].nruns ? fmt_duration(f[i].duration_s, dur, sizeof(dur)) : "-",
               num_or_dash(f[i].samples_per_s, "", sps, sizeof(sps)),
               num_or_dash(f[i].per_device, "", per, sizeof(per)),
               num_or_dash(f[i].vs_solo, "x", solo, sizeof(solo)),
               isfinite(f[i].step_p50_s) ? fmt_duration(f[i].step_p50_s, p50, sizeof(p50)) : "-",
               (long long)f[i].findings, params);
    }
    if (r->best < r->n) {
        const struct sweep_figures *b = &f[r->best];
        char params[256];
        params_text(&b->params, params, sizeof(params));
        printf("most samples/s per device: workload %s (%s, %s%s%s), %.1f\n", b->st->name,
               b->st->collocation ? b->st->collocation : "-", b->nruns > 1 ? "collocated" : "solo",
               params[0] ? ", " : "", params, b->per_device);
    }
}

static void status_json(const struct campaign_state *st, const struct sweep_results *r)
{
    struct strbuf out;
    strbuf_init(&out);
    struct json_writer jw;
    jw_init(&jw, &out);
    sweep_results_json(&jw, st, r, 0);
    strbuf_addch(&out, '\n');
    cli_print(&out);
    strbuf_release(&out);
}

/* FILE (its campaign) or an experiment name: the campaign's name. */
static char *campaign_name(const char *arg)
{
    if (access(arg, R_OK) != 0)
        return strdup(arg);
    struct sweep_spec spec = {0};
    char **gpus = NULL;
    char *name = load_spec(arg, NULL, 0, &spec, &gpus) == 0 ? strdup(spec.campaign) : NULL;
    sweep_spec_release(&spec);
    gpu_ids_free(gpus);
    return name;
}

static int show_status(struct cli_ctx *cli, int argc, char **argv)
{
    int json = 0;
    const struct cli_option opts[] = {
        CLI_OPT_FLAG(0, "json", &json, "the campaign as JSON (docs/sweep.md)"),
        CLI_OPT_END,
    };
    cli->needs = CLI_STORE_READ;
    int rc = cli_setup(cli, &status_usage, opts, argc, argv);
    if (rc >= 0)
        return rc;
    char *name = campaign_name(cli->args[0]);
    if (!name)
        return CLI_EXIT_USAGE;
    struct campaign_state st = {0};
    rc = campaign_state_load(cli->store, name, &st);
    int status = CLI_EXIT_ERROR;
    if (rc == -STROBE_ENOTFOUND)
        log_error("no campaign %s in %s", name, cli->store->uri);
    else if (rc < 0)
        log_error("cannot read campaign %s: %s", name,
                  rc == -EBADMSG ? "its state does not parse" : cli->store->err.buf);
    struct sweep_results res = {0};
    struct summary_cache *cache = NULL;
    if (rc == 0 && summary_cache_new(&cache) == 0) {
        if (sweep_results_load(cli->store, cache, &st, &res) == 0) {
            if (json)
                status_json(&st, &res);
            else
                status_table(&st, &res);
            status = CLI_EXIT_OK;
        } else {
            log_error("out of memory");
        }
    }
    sweep_results_release(&res);
    summary_cache_free(cache);
    campaign_state_release(&st);
    free(name);
    return status;
}

int cmd_sweep(struct cli_ctx *cli, int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "status") == 0)
        return show_status(cli, argc - 1, argv + 1);
    struct sweep_args a = {0};
    const struct cli_option opts[] = {
        CLI_OPT_FLAG('n', "dry-run", &a.dry_run,
                     "print the plan, each run's command, and what would run;\n"
                     "start nothing"),
        CLI_OPT_FLAG(0, "rerun", &a.rerun, "run finished workloads again too"),
        CLI_OPT_FLAG(0, "parallel", &a.parallel,
                     "run workloads on disjoint devices at once (in order on\n"
                     "each device)"),
        CLI_OPT_FLAG(0, "write-back", &a.write_back,
                     "write Status and Run into the file after each workload, as\n"
                     "radT does"),
        CLI_OPT_STRING(0, "python", &a.python, "PY",
                       "the interpreter of File rows and file: keys (default python3;\n"
                       "the file's python: key wins)"),
        CLI_OPT_FLAG('q', "quiet", &a.quiet, "say nothing but errors"),
        CLI_OPT_END,
    };
    cli->needs = CLI_STORE_URI;
    int rc = cli_parse(cli, &sweep_usage, opts, argc, argv);
    if (rc >= 0)
        return rc;
    log_set_quiet(a.quiet);
    return run_campaign(cli, &a, cli->args[0]);
}
