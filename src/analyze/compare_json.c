/*
 * The comparison as JSON: what `strobe compare --json` prints and what
 * /api/compare carries as its "analysis", so the command line and the
 * dashboard show the same judgement of the same runs (docs/cli.md has the
 * keys).
 */
#include <math.h>
#include <stdlib.h>

#include "analyze/compare.h"
#include "common/array.h"
#include "common/json_writer.h"
#include "common/strbuf.h"

/* {"<phase>":v[p],...} over every phase, as key's value. */
static void json_phase_nums(struct json_writer *jw, const char *key, const double *v)
{
    jw_key(jw, key);
    jw_object_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++)
        jw_kv_num(jw, phase_names[p], v[p]);
    jw_end(jw);
}

static void json_steps(struct json_writer *jw, const struct compare_run *c)
{
    if (!c->has_steps) {
        jw_kv_null(jw, "steps");
        jw_kv_null(jw, "phases");
        return;
    }
    jw_key(jw, "steps");
    jw_object_begin(jw);
    jw_kv_uint(jw, "count", c->steps.count);
    jw_kv_num(jw, "mean_ns", c->steps.mean_ns);
    jw_kv_num(jw, "p50_ns", c->steps.p50_ns);
    jw_kv_num(jw, "p95_ns", c->steps.p95_ns);
    jw_kv_num(jw, "per_s", compare_steps_per_s(&c->steps));
    jw_end(jw);
    json_phase_nums(jw, "phases", c->phase_share);
}

static void json_metric(struct json_writer *jw, const struct compare_metric *m)
{
    jw_key(jw, m->key);
    jw_object_begin(jw);
    jw_kv_str(jw, "unit", m->unit);
    jw_kv_num(jw, "mean", m->st.mean);
    jw_kv_num(jw, "p50", m->st.p50);
    jw_kv_num(jw, "p95", m->st.p95);
    jw_kv_num(jw, "max", m->st.max);
    jw_end(jw);
}

static void json_run(struct json_writer *jw, const struct compare_run *c)
{
    const struct run_record *r = &c->rec;
    jw_object_begin(jw);
    jw_kv_str(jw, "id", r->id);
    jw_kv_str_or_null(jw, "name", r->name);
    jw_kv_str(jw, "status", run_record_status(r));
    jw_kv_num(jw, "duration_s", run_record_duration_s(r));
    jw_key(jw, "params");
    kv_list_json(jw, &r->params);
    json_steps(jw, c);
    jw_key(jw, "metrics");
    jw_object_begin(jw);
    for (uint32_t i = 0; i < c->nmetrics; i++)
        json_metric(jw, &c->metrics[i]);
    jw_end(jw);
    jw_key(jw, "findings");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < c->nfindings; i++)
        jw_str(jw, c->findings[i]);
    jw_end(jw);
    jw_end(jw);
}

/* Rules in a but not in b, as key's value. */
static void json_rules_missing(struct json_writer *jw, const char *key, const struct compare_run *a,
                               const struct compare_run *b)
{
    jw_key(jw, key);
    jw_array_begin(jw);
    for (uint32_t i = 0; i < a->nfindings; i++)
        if (!compare_run_has_finding(b, a->findings[i]))
            jw_str(jw, a->findings[i]);
    jw_end(jw);
}

/* Every key of either run whose value changed: [baseline's, run's], null
 * where a run has no such parameter. */
static void json_params_changed(struct json_writer *jw, const struct compare_run *base,
                                const struct compare_run *run)
{
    const struct compare_run pair[2] = {*base, *run};
    const char **keys = NULL;
    uint32_t nkeys = 0, nequal = 0;
    jw_key(jw, "params_changed");
    jw_object_begin(jw);
    if (compare_param_keys(pair, 2, &keys, &nkeys, &nequal) == 0)
        for (uint32_t k = 0; k < nkeys; k++) {
            jw_key(jw, keys[k]);
            jw_array_begin(jw);
            jw_str_or_null(jw, kv_list_get(&base->rec.params, keys[k]));
            jw_str_or_null(jw, kv_list_get(&run->rec.params, keys[k]));
            jw_end(jw);
        }
    free(keys);
    jw_end(jw);
}

static void json_metrics_pct(struct json_writer *jw, const struct compare_run *base,
                             const struct compare_run *run)
{
    jw_key(jw, "metrics");
    jw_object_begin(jw);
    for (uint32_t i = 0; i < run->nmetrics; i++) {
        const struct compare_metric *m = &run->metrics[i];
        const struct compare_metric *b = compare_run_metric(base, m->key);
        if (!b)
            continue;
        jw_key(jw, m->key);
        jw_object_begin(jw);
        jw_kv_num(jw, "mean_pct", compare_pct(b->st.mean, m->st.mean));
        jw_kv_num(jw, "p95_pct", compare_pct(b->st.p95, m->st.p95));
        jw_kv_num(jw, "max_pct", compare_pct(b->st.max, m->st.max));
        jw_kv_bool(jw, "significant", compare_metric_significant(b, m));
        jw_end(jw);
    }
    jw_end(jw);
}

static void json_diff_steps(struct json_writer *jw, const struct compare_diff *d)
{
    static const char *const no_phases[] = {"phase_points", "phase_ns", "phase_significant",
                                            "explained_by", "explained_share"};
    if (!d->steps) {
        jw_kv_null(jw, "step_mean_pct");
        jw_kv_null(jw, "step_mean_ns");
        jw_kv_bool(jw, "step_significant", 0);
        for (size_t i = 0; i < ARRAY_SIZE(no_phases); i++)
            jw_kv_null(jw, no_phases[i]);
        return;
    }
    jw_kv_num(jw, "step_mean_pct", d->step_mean_pct);
    jw_kv_num(jw, "step_mean_ns", d->step_mean_ns);
    jw_kv_bool(jw, "step_significant", d->step_significant);
    json_phase_nums(jw, "phase_points", d->phase_points);
    json_phase_nums(jw, "phase_ns", d->phase_ns);
    jw_key(jw, "phase_significant");
    jw_object_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++)
        jw_kv_bool(jw, phase_names[p], d->phase_significant[p]);
    jw_end(jw);
    jw_kv_str_or_null(jw, "explained_by",
                      d->explained_by >= 0 ? phase_names[d->explained_by] : NULL);
    jw_kv_num(jw, "explained_share", d->explained_by >= 0 ? d->explained_share : NAN);
}

static void json_diff(struct json_writer *jw, const struct compare_run *base,
                      const struct compare_run *run)
{
    struct compare_diff d;
    compare_diff_runs(base, run, &d);
    jw_key(jw, run->rec.id);
    jw_object_begin(jw);
    json_diff_steps(jw, &d);
    json_metrics_pct(jw, base, run);
    json_params_changed(jw, base, run);
    json_rules_missing(jw, "findings_new", run, base);
    json_rules_missing(jw, "findings_gone", base, run);
    jw_end(jw);
}

void compare_json(struct json_writer *jw, const struct compare_run *runs, uint32_t n)
{
    jw_object_begin(jw);
    jw_kv_str(jw, "baseline", runs[0].rec.id);
    jw_key(jw, "runs");
    jw_array_begin(jw); /* a run a line */
    jw_lines(jw, "\n  ", "\n  ");
    for (uint32_t i = 0; i < n; i++)
        json_run(jw, &runs[i]);
    jw_space(jw, "\n");
    jw_end(jw);
    jw_key(jw, "diff");
    jw_object_begin(jw); /* a diff a line */
    jw_lines(jw, "\n  ", "\n  ");
    for (uint32_t i = 1; i < n; i++)
        json_diff(jw, &runs[0], &runs[i]);
    jw_space(jw, "\n");
    jw_end(jw);
    jw_end(jw);
}
