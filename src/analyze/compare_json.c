/*
 * The comparison as JSON: what `strobe compare --json` prints and what
 * /api/compare carries as its "analysis", so the command line and the
 * dashboard show the same judgement of the same runs (docs/cli.md has the
 * keys).
 */
#include <math.h>
#include <stdlib.h>

#include "analyze/compare.h"
#include "common/strbuf.h"

static void json_num_member(struct strbuf *o, const char *sep, const char *key, double v)
{
    strbuf_addf(o, "%s\"%s\":", sep, key);
    strbuf_add_json_num(o, v);
}

static void json_steps(struct strbuf *o, const struct compare_run *c)
{
    if (!c->has_steps) {
        strbuf_adds(o, ",\"steps\":null,\"phases\":null");
        return;
    }
    strbuf_addf(o, ",\"steps\":{\"count\":%llu", (unsigned long long)c->steps.count);
    json_num_member(o, ",", "mean_ns", c->steps.mean_ns);
    json_num_member(o, ",", "p50_ns", c->steps.p50_ns);
    json_num_member(o, ",", "p95_ns", c->steps.p95_ns);
    json_num_member(o, ",", "per_s", compare_steps_per_s(&c->steps));
    strbuf_adds(o, "},\"phases\":{");
    for (int p = 0; p < PHASE_COUNT; p++)
        json_num_member(o, p ? "," : "", phase_names[p], c->phase_share[p]);
    strbuf_addch(o, '}');
}

static void json_run(struct strbuf *o, const struct compare_run *c, int first)
{
    const struct run_record *r = &c->rec;
    strbuf_adds(o, first ? "\n  {\"id\":" : ",\n  {\"id\":");
    strbuf_add_json_str(o, r->id);
    strbuf_adds(o, ",\"name\":");
    strbuf_add_json_str_or_null(o, r->name);
    strbuf_adds(o, ",\"status\":");
    strbuf_add_json_str(o, run_record_status(r));
    json_num_member(o, ",", "duration_s", run_record_duration_s(r));
    strbuf_adds(o, ",\"params\":");
    kv_list_json(o, &r->params);
    json_steps(o, c);
    strbuf_adds(o, ",\"metrics\":{");
    for (uint32_t i = 0; i < c->nmetrics; i++) {
        const struct compare_metric *m = &c->metrics[i];
        strbuf_adds(o, i ? "," : "");
        strbuf_add_json_str(o, m->key);
        strbuf_adds(o, ":{\"unit\":");
        strbuf_add_json_str(o, m->unit);
        json_num_member(o, ",", "mean", m->st.mean);
        json_num_member(o, ",", "p50", m->st.p50);
        json_num_member(o, ",", "p95", m->st.p95);
        json_num_member(o, ",", "max", m->st.max);
        strbuf_addch(o, '}');
    }
    strbuf_adds(o, "},\"findings\":[");
    for (uint32_t i = 0; i < c->nfindings; i++) {
        strbuf_adds(o, i ? "," : "");
        strbuf_add_json_str(o, c->findings[i]);
    }
    strbuf_adds(o, "]}");
}

/* Rules in a but not in b. */
static void json_rules_missing(struct strbuf *o, const struct compare_run *a,
                               const struct compare_run *b)
{
    strbuf_addch(o, '[');
    int k = 0;
    for (uint32_t i = 0; i < a->nfindings; i++)
        if (!compare_run_has_finding(b, a->findings[i])) {
            strbuf_adds(o, k++ ? "," : "");
            strbuf_add_json_str(o, a->findings[i]);
        }
    strbuf_addch(o, ']');
}

/* Every key of either run whose value changed: [baseline's, run's], null
 * where a run has no such parameter. */
static void json_params_changed(struct strbuf *o, const struct compare_run *base,
                                const struct compare_run *run)
{
    const struct compare_run pair[2] = {*base, *run};
    const char **keys = NULL;
    uint32_t nkeys = 0, nequal = 0;
    strbuf_addch(o, '{');
    if (compare_param_keys(pair, 2, &keys, &nkeys, &nequal) == 0)
        for (uint32_t k = 0; k < nkeys; k++) {
            strbuf_adds(o, k ? "," : "");
            strbuf_add_json_str(o, keys[k]);
            strbuf_addch(o, ':');
            strbuf_addch(o, '[');
            strbuf_add_json_str_or_null(o, kv_list_get(&base->rec.params, keys[k]));
            strbuf_addch(o, ',');
            strbuf_add_json_str_or_null(o, kv_list_get(&run->rec.params, keys[k]));
            strbuf_addch(o, ']');
        }
    free(keys);
    strbuf_addch(o, '}');
}

static void json_metrics_pct(struct strbuf *o, const struct compare_run *base,
                             const struct compare_run *run)
{
    strbuf_adds(o, ",\"metrics\":{");
    int k = 0;
    for (uint32_t i = 0; i < run->nmetrics; i++) {
        const struct compare_metric *m = &run->metrics[i];
        const struct compare_metric *b = compare_run_metric(base, m->key);
        if (!b)
            continue;
        strbuf_adds(o, k++ ? "," : "");
        strbuf_add_json_str(o, m->key);
        json_num_member(o, ":{", "mean_pct", compare_pct(b->st.mean, m->st.mean));
        json_num_member(o, ",", "p95_pct", compare_pct(b->st.p95, m->st.p95));
        json_num_member(o, ",", "max_pct", compare_pct(b->st.max, m->st.max));
        strbuf_addf(o, ",\"significant\":%s}", compare_metric_significant(b, m) ? "true" : "false");
    }
    strbuf_addch(o, '}');
}

static void json_diff_steps(struct strbuf *o, const struct compare_diff *d)
{
    if (!d->steps) {
        strbuf_adds(o, "\"step_mean_pct\":null,\"step_mean_ns\":null,\"step_significant\":false,"
                       "\"phase_points\":null,\"phase_ns\":null,\"phase_significant\":null,"
                       "\"explained_by\":null,"
                       "\"explained_share\":null");
        return;
    }
    json_num_member(o, "", "step_mean_pct", d->step_mean_pct);
    json_num_member(o, ",", "step_mean_ns", d->step_mean_ns);
    strbuf_addf(o, ",\"step_significant\":%s,\"phase_points\":{",
                d->step_significant ? "true" : "false");
    for (int p = 0; p < PHASE_COUNT; p++)
        json_num_member(o, p ? "," : "", phase_names[p], d->phase_points[p]);
    strbuf_adds(o, "},\"phase_ns\":{");
    for (int p = 0; p < PHASE_COUNT; p++)
        json_num_member(o, p ? "," : "", phase_names[p], d->phase_ns[p]);
    strbuf_adds(o, "},\"phase_significant\":{");
    for (int p = 0; p < PHASE_COUNT; p++)
        strbuf_addf(o, "%s\"%s\":%s", p ? "," : "", phase_names[p],
                    d->phase_significant[p] ? "true" : "false");
    strbuf_adds(o, "},\"explained_by\":");
    strbuf_add_json_str_or_null(o, d->explained_by >= 0 ? phase_names[d->explained_by] : NULL);
    json_num_member(o, ",", "explained_share", d->explained_by >= 0 ? d->explained_share : NAN);
}

static void json_diff(struct strbuf *o, const struct compare_run *base,
                      const struct compare_run *run, int first)
{
    struct compare_diff d;
    compare_diff_runs(base, run, &d);
    strbuf_adds(o, first ? "\n  " : ",\n  ");
    strbuf_add_json_str(o, run->rec.id);
    strbuf_adds(o, ":{");
    json_diff_steps(o, &d);
    json_metrics_pct(o, base, run);
    strbuf_adds(o, ",\"params_changed\":");
    json_params_changed(o, base, run);
    strbuf_adds(o, ",\"findings_new\":");
    json_rules_missing(o, run, base);
    strbuf_adds(o, ",\"findings_gone\":");
    json_rules_missing(o, base, run);
    strbuf_addch(o, '}');
}

void compare_json(struct strbuf *o, const struct compare_run *runs, uint32_t n)
{
    strbuf_adds(o, "{\"baseline\":");
    strbuf_add_json_str(o, runs[0].rec.id);
    strbuf_adds(o, ",\"runs\":[");
    for (uint32_t i = 0; i < n; i++)
        json_run(o, &runs[i], i == 0);
    strbuf_adds(o, "\n],\"diff\":{");
    for (uint32_t i = 1; i < n; i++)
        json_diff(o, &runs[0], &runs[i], i == 1);
    strbuf_adds(o, "\n}}");
}
