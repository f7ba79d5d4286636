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

static int any_device(const char *name)
{
    (void)name;
    return 1;
}

/* The file's plan. check: the devices and listeners must exist here. */
static int load_spec(const char *path, const char *python, int check, struct sweep_spec *spec,
                     char ***gpus)
{
    const char *why = NULL;
    *gpus = check ? gpu_ids_list(&why) : NULL;
    struct sweep_env env = {
        .gpu_ids = *gpus,
        .why_no_gpu = why,
        .have_command = check ? gpu_have_command : any_device,
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
    for (char **d = r->devices; d && *d; d++)
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
        for (size_t k = 0; devices && devices[k]; k++)
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
static int take_campaign(struct store *s, const struct sweep_spec *spec, struct campaign_state *st)
{
    int rc = campaign_state_load(s, spec->campaign, st);
    if (rc == -STROBE_ENOTFOUND) {
        campaign_state_release(st);
        st->name = strdup(spec->campaign);
        rc = st->name ? 0 : -ENOMEM;
    } else if (rc == 0 && campaign_owner_state(st) == PROCID_ALIVE && st->owner_pid != getpid()) {
        log_error("campaign %s is running: strobe sweep, pid %lld on %s", spec->campaign,
                  (long long)st->owner_pid, st->owner_host ? st->owner_host : "this host");
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
    if (store && take_campaign(store, &spec, &st) < 0)
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

struct wl_figures {
    const struct wl_state *st;
    int nruns;
    double duration_s;
    double samples_per_s; /* every run's together; NaN when none has one */
    double per_device;    /* over its devices (the host when none) */
    double step_p50_s;    /* the median of its runs' */
    double vs_solo;       /* per_device over its runs' solo per_device; NaN when none */
    int64_t findings;
    int ndev;
    struct kv_list params; /* of its first run */
    char *command;         /* its first run's, as JSON */
};

static int count_devices(const char *devices)
{
    if (!devices || !devices[0])
        return 1; /* the host */
    int n = 1;
    for (const char *p = devices; *p; p++)
        n += *p == ',';
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void figures_of(struct store *s, struct summary_cache *cache, const struct wl_state *w,
                       struct wl_figures *f)
{
    memset(f, 0, sizeof(*f));
    f->st = w;
    f->ndev = count_devices(w->devices);
    f->samples_per_s = f->step_p50_s = f->vs_solo = NAN;
    double p50[SWEEP_MAX_RUNS];
    int np50 = 0;
    for (char **id = w->runs; id && *id && f->nruns < SWEEP_MAX_RUNS; id++) {
        struct run_record r;
        run_record_init(&r);
        struct run_summary sum;
        if (store_resolve_run(s, *id, &r) == 0 && summary_get(cache, s, &r, &sum) == 0) {
            double d = run_record_duration_s(&r);
            if (d > f->duration_s)
                f->duration_s = d;
            if (isfinite(sum.samples_per_s))
                f->samples_per_s =
                    (isnan(f->samples_per_s) ? 0 : f->samples_per_s) + sum.samples_per_s;
            if (isfinite(sum.step_p50_s))
                p50[np50++] = sum.step_p50_s;
            f->findings += sum.findings;
            if (f->nruns == 0) {
                for (size_t k = 0; k < r.params.n; k++)
                    kv_list_add(&f->params, r.params.items[k].key, r.params.items[k].value);
                f->command = r.command_json ? strdup(r.command_json) : NULL;
            }
        }
        f->nruns++;
        run_record_release(&r);
    }
    if (np50) {
        qsort(p50, (size_t)np50, sizeof(*p50), cmp_double);
        f->step_p50_s = np50 % 2 ? p50[np50 / 2] : (p50[np50 / 2 - 1] + p50[np50 / 2]) / 2;
    }
    f->per_device = f->samples_per_s / f->ndev;
}

static int same_params(const struct kv_list *a, const struct kv_list *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const char *v = kv_list_get(b, a->items[i].key);
        if (!v || strcmp(v, a->items[i].value) != 0)
            return 0;
    }
    return 1;
}

/* A collocated workload (several runs) against the mean of the solo
 * workloads (one run, finished) with the same parameters and command:
 * throughput per device over theirs, as the collocation papers compare. */
static void compare_with_solo(struct wl_figures *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (f[i].nruns < 2 || !isfinite(f[i].per_device))
            continue;
        double sum = 0;
        int count = 0;
        for (size_t k = 0; k < n; k++)
            if (f[k].nruns == 1 && isfinite(f[k].per_device) &&
                strcmp(f[k].st->status, WL_FINISHED) == 0 &&
                same_params(&f[i].params, &f[k].params) && f[i].command && f[k].command &&
                strcmp(f[i].command, f[k].command) == 0) {
                sum += f[k].per_device;
                count++;
            }
        if (count && sum > 0)
            f[i].vs_solo = f[i].per_device / (sum / count);
    }
}

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

static void status_table(const struct campaign_state *st, struct wl_figures *f, size_t n)
{
    size_t done = 0, running = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = wl_state_shown(st, f[i].st);
        done += strcmp(s, WL_FINISHED) == 0 || strcmp(s, WL_STOPPED) == 0;
        running += strcmp(s, WL_RUNNING) == 0;
    }
    printf("campaign %s: %zu of %zu workloads done%s%s\n", st->name, done, n,
           running ? ", running now" : "",
           campaign_owner_state(st) == PROCID_ALIVE ? ""
           : st->owner_pid                          ? " (its sweep is gone)"
                                                    : "");
    printf("%-14s %-8s %-6s %4s %-11s %9s %10s %10s %7s %9s %4s  %s\n", "WORKLOAD", "COLLOC",
           "DEVICE", "RUNS", "STATUS", "DURATION", "SAMPLES/S", "PER DEVICE", "VS SOLO", "STEP P50",
           "FIND", "PARAMS");
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        char dur[32], sps[32], per[32], solo[32], p50[32], params[256];
        const struct wl_state *w = f[i].st;
        params_text(&f[i].params, params, sizeof(params));
        printf("%-14s %-8s %-6s %4d %-11s %9s %10s %10s %7s %9s %4lld  %s\n", w->name,
               w->collocation ? w->collocation : "-",
               w->devices && w->devices[0] ? w->devices : "host", f[i].nruns, wl_state_shown(st, w),
               f[i].nruns ? fmt_duration(f[i].duration_s, dur, sizeof(dur)) : "-",
               num_or_dash(f[i].samples_per_s, "", sps, sizeof(sps)),
               num_or_dash(f[i].per_device, "", per, sizeof(per)),
               num_or_dash(f[i].vs_solo, "x", solo, sizeof(solo)),
               isfinite(f[i].step_p50_s) ? fmt_duration(f[i].step_p50_s, p50, sizeof(p50)) : "-",
               (long long)f[i].findings, params);
        if (isfinite(f[i].per_device) && strcmp(w->status, WL_FINISHED) == 0 &&
            (best == n || f[i].per_device > f[best].per_device))
            best = i;
    }
    if (best < n) {
        char params[256];
        params_text(&f[best].params, params, sizeof(params));
        printf("most samples/s per device: workload %s (%s, %s%s%s), %.1f\n", f[best].st->name,
               f[best].st->collocation ? f[best].st->collocation : "-",
               f[best].nruns > 1 ? "collocated" : "solo", params[0] ? ", " : "", params,
               f[best].per_device);
    }
}

static void status_json(const struct campaign_state *st, struct wl_figures *f, size_t n)
{
    struct strbuf out;
    strbuf_init(&out);
    struct json_writer jw;
    jw_init(&jw, &out);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "campaign", st->name);
    jw_kv_str_or_null(&jw, "file", st->file);
    jw_kv_str(&jw, "spec_hash", st->spec_hash ? st->spec_hash : "");
    jw_kv_bool(&jw, "running", campaign_owner_state(st) == PROCID_ALIVE);
    jw_key(&jw, "workloads");
    jw_array_begin(&jw);
    for (size_t i = 0; i < n; i++) {
        const struct wl_state *w = f[i].st;
        jw_object_begin(&jw);
        jw_kv_str(&jw, "name", w->name);
        jw_kv_str(&jw, "experiment", w->experiment);
        jw_kv_str(&jw, "status", wl_state_shown(st, w));
        jw_kv_str(&jw, "collocation", w->collocation ? w->collocation : "-");
        jw_kv_str(&jw, "devices", w->devices ? w->devices : "");
        jw_kv_int(&jw, "attempts", w->attempts);
        jw_key(&jw, "runs");
        jw_array_begin(&jw);
        for (char **r = w->runs; r && *r; r++)
            jw_str(&jw, *r);
        jw_end(&jw);
        jw_key(&jw, "params");
        kv_list_json(&jw, &f[i].params);
        jw_kv_num(&jw, "duration_s", f[i].duration_s);
        jw_kv_num(&jw, "samples_per_s", f[i].samples_per_s);
        jw_kv_num(&jw, "samples_per_s_per_device", f[i].per_device);
        jw_kv_num(&jw, "vs_solo", f[i].vs_solo);
        jw_kv_num(&jw, "step_p50_s", f[i].step_p50_s);
        jw_kv_int(&jw, "findings", f[i].findings);
        jw_kv_str_or_null(&jw, "note", w->note);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_end(&jw);
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
        log_error("cannot read campaign %s: %s", name, cli->store->err.buf);
    struct wl_figures *f = rc == 0 ? calloc(st.n + 1, sizeof(*f)) : NULL;
    struct summary_cache *cache = NULL;
    if (f && summary_cache_new(&cache) == 0) {
        for (size_t i = 0; i < st.n; i++)
            figures_of(cli->store, cache, &st.w[i], &f[i]);
        compare_with_solo(f, st.n);
        if (json)
            status_json(&st, f, st.n);
        else
            status_table(&st, f, st.n);
        status = CLI_EXIT_OK;
    }
    for (size_t i = 0; f && i < st.n; i++) {
        kv_list_release(&f[i].params);
        free(f[i].command);
    }
    free(f);
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
