#include "sweep/results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "sweep/spec.h"

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

/* One run of a workload into f: its record and summary (when the store has
 * them) added to the workload's figures. */
static int add_run(struct store *s, struct summary_cache *cache, const char *id,
                   struct sweep_figures *f, double *p50, int *np50)
{
    struct sweep_run_shown *shown = &f->runs[f->nruns];
    snprintf(shown->id, sizeof(shown->id), "%s", id);
    struct run_record r;
    run_record_init(&r);
    struct run_summary sum;
    int rc = 0;
    if (store_resolve_run(s, id, &r) == 0) {
        snprintf(shown->status, sizeof(shown->status), "%s", run_record_status(&r));
        shown->name = r.name ? strdup(r.name) : NULL;
        if (r.name && !shown->name)
            rc = -ENOMEM;
        if (summary_get(cache, s, &r, &sum) == 0) {
            double d = run_record_duration_s(&r);
            if (d > f->duration_s)
                f->duration_s = d;
            if (isfinite(sum.samples_per_s))
                f->samples_per_s =
                    (isnan(f->samples_per_s) ? 0 : f->samples_per_s) + sum.samples_per_s;
            if (isfinite(sum.step_p50_s))
                p50[(*np50)++] = sum.step_p50_s;
            f->findings += sum.findings;
            if (f->nruns == 0) {
                for (size_t k = 0; k < r.params.n && rc == 0; k++)
                    rc = kv_list_add(&f->params, r.params.items[k].key, r.params.items[k].value);
                f->command = r.command_json ? strdup(r.command_json) : NULL;
                if (r.command_json && !f->command)
                    rc = -ENOMEM;
            }
        }
    }
    f->nruns++;
    run_record_release(&r);
    return rc;
}

static int figures_of(struct store *s, struct summary_cache *cache, const struct wl_state *w,
                      struct sweep_figures *f)
{
    f->st = w;
    f->ndev = count_devices(w->devices);
    f->samples_per_s = f->step_p50_s = f->vs_solo = NAN;
    size_t n = 0;
    for (char **id = w->runs; id && *id && n < SWEEP_MAX_RUNS; id++)
        n++;
    f->runs = calloc(n + 1, sizeof(*f->runs));
    if (!f->runs)
        return -ENOMEM;
    double p50[SWEEP_MAX_RUNS];
    int np50 = 0, rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = add_run(s, cache, w->runs[i], f, p50, &np50);
    if (np50) {
        qsort(p50, (size_t)np50, sizeof(*p50), cmp_double);
        f->step_p50_s = np50 % 2 ? p50[np50 / 2] : (p50[np50 / 2 - 1] + p50[np50 / 2]) / 2;
    }
    f->per_device = f->samples_per_s / f->ndev;
    return rc;
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
static void compare_with_solo(struct sweep_figures *f, size_t n)
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

void sweep_progress_of(const struct campaign_state *st, struct sweep_progress *out)
{
    static const char *const worst_first[] = {WL_LOST, WL_FAILED, WL_INTERRUPTED};
    size_t worst = ARRAY_SIZE(worst_first);
    memset(out, 0, sizeof(*out));
    out->owner = campaign_owner_state(st);
    out->total = st->n;
    for (size_t i = 0; i < st->n; i++) {
        const char *s = wl_state_shown_as(&st->w[i], out->owner);
        out->done += strcmp(s, WL_FINISHED) == 0 || strcmp(s, WL_STOPPED) == 0;
        out->running += strcmp(s, WL_RUNNING) == 0;
        for (size_t k = 0; k < worst; k++)
            if (strcmp(s, worst_first[k]) == 0)
                worst = k;
    }
    if (out->owner == PROCID_ALIVE)
        out->status = WL_RUNNING;
    else if (worst < ARRAY_SIZE(worst_first))
        out->status = worst_first[worst];
    else
        out->status = st->n && out->done == st->n ? WL_FINISHED : WL_PENDING;
}

void sweep_progress_json(struct json_writer *jw, const struct campaign_state *st,
                         const struct sweep_progress *p)
{
    jw_kv_str(jw, "status", p->status);
    jw_kv_uint(jw, "done", p->done);
    jw_kv_uint(jw, "total", p->total);
    jw_key(jw, "running_workloads");
    jw_array_begin(jw);
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(wl_state_shown_as(&st->w[i], p->owner), WL_RUNNING) == 0)
            jw_str(jw, st->w[i].name);
    jw_end(jw);
}

int sweep_results_load(struct store *s, struct summary_cache *cache,
                       const struct campaign_state *st, struct sweep_results *out)
{
    memset(out, 0, sizeof(*out));
    sweep_progress_of(st, &out->progress);
    out->f = calloc(st->n + 1, sizeof(*out->f));
    if (!out->f)
        return -ENOMEM;
    out->n = st->n;
    int rc = 0;
    for (size_t i = 0; i < st->n && rc == 0; i++)
        rc = figures_of(s, cache, &st->w[i], &out->f[i]);
    if (rc < 0)
        return rc;
    compare_with_solo(out->f, out->n);
    out->best = out->n;
    for (size_t i = 0; i < out->n; i++) {
        const struct sweep_figures *f = &out->f[i];
        if (isfinite(f->per_device) && strcmp(f->st->status, WL_FINISHED) == 0 &&
            (out->best == out->n || f->per_device > out->f[out->best].per_device))
            out->best = i;
    }
    return 0;
}

void sweep_results_release(struct sweep_results *r)
{
    for (size_t i = 0; r->f && i < r->n; i++) {
        for (int k = 0; r->f[i].runs && k < r->f[i].nruns; k++)
            free(r->f[i].runs[k].name);
        free(r->f[i].runs);
        kv_list_release(&r->f[i].params);
        free(r->f[i].command);
    }
    free(r->f);
    memset(r, 0, sizeof(*r));
}

/* What the page adds to a workload: its span and each run's name and
 * status, for links. */
static void workload_extra(struct json_writer *jw, const struct sweep_figures *f)
{
    jw_kv_int(jw, "started_ns", f->st->started_ns);
    jw_kv_int(jw, "ended_ns", f->st->ended_ns);
    jw_key(jw, "run_details");
    jw_array_begin(jw);
    for (int k = 0; k < f->nruns; k++) {
        jw_object_begin(jw);
        jw_kv_str(jw, "id", f->runs[k].id);
        jw_kv_str_or_null(jw, "name", f->runs[k].name);
        jw_kv_str_or_null(jw, "status", f->runs[k].status[0] ? f->runs[k].status : NULL);
        jw_end(jw);
    }
    jw_end(jw);
}

static void campaign_extra(struct json_writer *jw, const struct campaign_state *st,
                           const struct sweep_results *r)
{
    jw_kv_int(jw, "created_ns", st->created_ns);
    jw_kv_int(jw, "updated_ns", st->updated_ns);
    jw_key(jw, "owner");
    jw_object_begin(jw);
    jw_kv_int(jw, "pid", st->owner_pid);
    jw_kv_str_or_null(jw, "host", st->owner_host);
    jw_end(jw);
    sweep_progress_json(jw, st, &r->progress);
    jw_kv_str_or_null(jw, "best", r->best < r->n ? r->f[r->best].st->name : NULL);
}

void sweep_results_json(struct json_writer *jw, const struct campaign_state *st,
                        const struct sweep_results *r, int extended)
{
    jw_object_begin(jw);
    jw_kv_str(jw, "campaign", st->name);
    jw_kv_str_or_null(jw, "file", st->file);
    jw_kv_str(jw, "spec_hash", st->spec_hash ? st->spec_hash : "");
    jw_kv_bool(jw, "running", r->progress.owner == PROCID_ALIVE);
    jw_key(jw, "workloads");
    jw_array_begin(jw);
    for (size_t i = 0; i < r->n; i++) {
        const struct sweep_figures *f = &r->f[i];
        const struct wl_state *w = f->st;
        jw_object_begin(jw);
        jw_kv_str(jw, "name", w->name);
        jw_kv_str(jw, "experiment", w->experiment);
        jw_kv_str(jw, "status", wl_state_shown_as(w, r->progress.owner));
        jw_kv_str(jw, "collocation", w->collocation ? w->collocation : "-");
        jw_kv_str(jw, "devices", w->devices ? w->devices : "");
        jw_kv_int(jw, "attempts", w->attempts);
        jw_key(jw, "runs");
        jw_array_begin(jw);
        for (char **id = w->runs; id && *id; id++)
            jw_str(jw, *id);
        jw_end(jw);
        jw_key(jw, "params");
        kv_list_json(jw, &f->params);
        jw_kv_num(jw, "duration_s", f->duration_s);
        jw_kv_num(jw, "samples_per_s", f->samples_per_s);
        jw_kv_num(jw, "samples_per_s_per_device", f->per_device);
        jw_kv_num(jw, "vs_solo", f->vs_solo);
        jw_kv_num(jw, "step_p50_s", f->step_p50_s);
        jw_kv_int(jw, "findings", f->findings);
        jw_kv_str_or_null(jw, "note", w->note);
        if (extended)
            workload_extra(jw, f);
        jw_end(jw);
    }
    jw_end(jw);
    if (extended)
        campaign_extra(jw, st, r);
    jw_end(jw);
}
