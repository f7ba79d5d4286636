/*
 * strobe compare A B [C...]: runs side by side, each against the first (the
 * baseline), differences beyond the runs' own noise marked. The numbers come
 * from analyze/compare.h; this file only lays them out.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/compare.h"
#include "cli/cli.h"
#include "store/job.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strbuf.h"

static const struct cli_usage compare_usage = {
    "compare", "usage: strobe compare [--store S] [--json] RUN RUN [RUN...]\n", NULL, -1, 0,
};

#define MAX_RUNS   26             /* one letter each in the text */
#define LABEL_W    24             /* row labels */
#define VALUE_W    10             /* a run's value */
#define DIFF_W     9              /* its difference from the baseline */
#define MARK_UP    "\xe2\x96\xb2" /* U+25B2, significant increase */
#define MARK_DOWN  "\xe2\x96\xbc" /* U+25BC, significant decrease */
#define MARK_DIFFS "*"            /* a parameter that differs from the baseline */

/* ---- text ----------------------------------------------------------------- */

/* The line being laid out: cells pad to their width, and the padding of the
 * last one should not reach the terminal. */
static struct strbuf line;
static int line_lost; /* a line ran out of memory: the text is incomplete */

__attribute__((format(printf, 1, 2))) static void emit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&line, fmt, ap);
    va_end(ap);
}

/* Print the line without its trailing blanks, and start the next; a line
 * may start with a blank line (section titles). */
static void end_line(void)
{
    while (line.len && line.buf[line.len - 1] == ' ')
        line.buf[--line.len] = '\0';
    if (strbuf_failed(&line))
        line_lost = 1; /* not printed cut; said at the end */
    else
        puts(line.buf);
    strbuf_reset(&line);
}

/* One run's cell: value, difference, marker (one column, so the UTF-8
 * triangles do not upset the alignment printf counts in bytes). */
static void cell(const char *value, const char *diff, const char *mark)
{
    emit("  %-*.*s %*.*s%s", VALUE_W, VALUE_W, value, DIFF_W, DIFF_W, diff ? diff : "",
         mark ? mark : " ");
}

static void section(const char *title, uint32_t n)
{
    emit("\n%-*s", LABEL_W, title);
    for (uint32_t i = 0; i < n; i++)
        emit("  %-*c %*s ", VALUE_W, 'A' + (int)i, DIFF_W, "");
    end_line();
}

static const char *mark_of(int significant, double delta)
{
    if (!significant || delta == 0 || isnan(delta))
        return NULL;
    return delta > 0 ? MARK_UP : MARK_DOWN;
}

static const char *pct_text(double pct, char *buf, size_t cap)
{
    if (isnan(pct))
        return "";
    snprintf(buf, cap, "%+.1f%%", pct);
    return buf;
}

static void print_headers(const struct compare_run *runs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct run_record *r = &runs[i].rec;
        char dur[32];
        struct strbuf name;
        strbuf_init(&name);
        emit("%c  %.8s  %-20.20s %-9s %s%s", 'A' + (int)i, r->id, cli_visible(&name, r->name),
             run_record_status(r), fmt_duration(run_record_duration_s(r), dur, sizeof(dur)),
             i ? "" : "  (baseline)");
        strbuf_release(&name);
        end_line();
    }
}

static void print_params(const struct compare_run *runs, uint32_t n)
{
    const char **keys = NULL;
    uint32_t nkeys = 0, nequal = 0;
    if (compare_param_keys(runs, n, &keys, &nkeys, &nequal) < 0 || (!nkeys && !nequal)) {
        free(keys);
        return;
    }
    section("parameters", n);
    for (uint32_t k = 0; k < nkeys; k++) {
        emit("  %-*.*s", LABEL_W - 2, LABEL_W - 2, keys[k]);
        for (uint32_t i = 0; i < n; i++) {
            const char *v = kv_list_get(&runs[i].rec.params, keys[k]);
            int changed = i && compare_param_changed(&runs[0], &runs[i], keys[k]);
            /* a value may use the difference's room too: parameters have none */
            emit("  %-*.*s%s", VALUE_W + 1 + DIFF_W, VALUE_W + 1 + DIFF_W, v ? v : "-",
                 changed ? MARK_DIFFS : " ");
        }
        end_line();
    }
    if (nequal) {
        emit("  %u equal", nequal);
        end_line();
    }
    free(keys);
}

/* One step statistic per run: value, percent from the baseline, and a mark
 * when the means differ beyond noise (only the mean row is judged). */
static void step_row(const char *label, const struct compare_run *runs, uint32_t n,
                     double (*get)(const struct duration_stats *), int judged, int per_s)
{
    emit("  %-*s", LABEL_W - 2, label);
    double base = get(&runs[0].steps);
    for (uint32_t i = 0; i < n; i++) {
        char v[32], d[32];
        double x = get(&runs[i].steps);
        if (!runs[i].has_steps) {
            cell("-", NULL, NULL);
            continue;
        }
        if (per_s)
            snprintf(v, sizeof(v), "%.3g", x);
        else if (label[0] == 'c')
            snprintf(v, sizeof(v), "%.0f", x);
        else
            fmt_ns(x, v, sizeof(v));
        int sig = 0;
        if (i && judged) {
            struct compare_diff cd;
            compare_diff_runs(&runs[0], &runs[i], &cd);
            sig = cd.step_significant;
        }
        double pct = i && runs[0].has_steps ? compare_pct(base, x) : NAN;
        cell(v, pct_text(pct, d, sizeof(d)), mark_of(sig, pct));
    }
    end_line();
}

static double st_count(const struct duration_stats *s)
{
    return (double)s->count;
}
static double st_mean(const struct duration_stats *s)
{
    return s->mean_ns;
}
static double st_p50(const struct duration_stats *s)
{
    return s->p50_ns;
}
static double st_p95(const struct duration_stats *s)
{
    return s->p95_ns;
}

/* "B's steps are 23.0 % longer, 80 % of it in data (+4.1ms per step)":
 * the change of the mean and the phase that moved most with it. */
static void print_explanation(const struct compare_run *runs, uint32_t i)
{
    struct compare_diff d;
    compare_diff_runs(&runs[0], &runs[i], &d);
    if (!d.steps)
        return;
    char t[32];
    if (!d.step_significant) {
        emit("  %c's steps are within the noise of A's (%+.1f %%)", 'A' + (int)i, d.step_mean_pct);
        end_line();
        return;
    }
    emit("  %c's steps are %.1f %% %s", 'A' + (int)i, fabs(d.step_mean_pct),
         d.step_mean_ns > 0 ? "longer" : "shorter");
    if (d.explained_by >= 0)
        emit(", %.0f %% of it in %s (%s%s per step)", 100.0 * d.explained_share,
             phase_names[d.explained_by], d.phase_ns[d.explained_by] > 0 ? "+" : "",
             fmt_ns(d.phase_ns[d.explained_by], t, sizeof(t)));
    end_line();
}

static void print_steps(const struct compare_run *runs, uint32_t n)
{
    int any = 0;
    for (uint32_t i = 0; i < n; i++)
        any |= runs[i].has_steps;
    if (!any)
        return;
    section("steps", n);
    step_row("count", runs, n, st_count, 0, 0);
    step_row("mean", runs, n, st_mean, 1, 0);
    step_row("p50", runs, n, st_p50, 0, 0);
    step_row("p95", runs, n, st_p95, 0, 0);
    step_row("steps/s", runs, n, compare_steps_per_s, 1, 1);

    section("phases (share of step)", n);
    for (int p = 0; p < PHASE_COUNT; p++) {
        emit("  %-*s", LABEL_W - 2, phase_names[p]);
        for (uint32_t i = 0; i < n; i++) {
            char v[32], d[32] = "";
            if (!runs[i].has_steps) {
                cell("-", NULL, NULL);
                continue;
            }
            snprintf(v, sizeof(v), "%.1f%%", 100.0 * runs[i].phase_share[p]);
            struct compare_diff cd;
            compare_diff_runs(&runs[0], &runs[i], &cd);
            int both = i && cd.steps; /* else there is nothing to move from */
            if (both)
                snprintf(d, sizeof(d), "%+.1fpt", cd.phase_points[p]);
            cell(v, d, both ? mark_of(cd.phase_significant[p], cd.phase_points[p]) : NULL);
        }
        end_line();
    }
    for (uint32_t i = 1; i < n; i++)
        print_explanation(runs, i);
}

static const char *metric_text(double v, const char *unit, char *buf, size_t cap)
{
    if (isnan(v))
        return "-";
    if (strcmp(unit, "bytes") == 0)
        return fmt_bytes(v, buf, cap);
    if (strcmp(unit, "pct") == 0)
        snprintf(buf, cap, "%.1f%%", v);
    else
        snprintf(buf, cap, "%.3g", v);
    return buf;
}

/* One statistic of one metric across the runs. Only the mean is judged by
 * the noise rule; p95 and max show their percent change unmarked. */
static void metric_row(const char *key, const char *stat, const struct compare_run *runs,
                       uint32_t n)
{
    struct strbuf label;
    strbuf_init(&label);
    strbuf_addf(&label, "%s %s", key, stat);
    emit("  %-*s", LABEL_W - 2, label.buf);
    strbuf_release(&label);
    const struct compare_metric *base = compare_run_metric(&runs[0], key);
    for (uint32_t i = 0; i < n; i++) {
        const struct compare_metric *m = compare_run_metric(&runs[i], key);
        if (!m) {
            cell("-", NULL, NULL);
            continue;
        }
        double x = stat[1] == 'e' ? m->st.mean : stat[1] == '9' ? m->st.p95 : m->st.max;
        double b = !base            ? NAN
                   : stat[1] == 'e' ? base->st.mean
                   : stat[1] == '9' ? base->st.p95
                                    : base->st.max;
        char v[32], d[32];
        double pct = i ? compare_pct(b, x) : NAN;
        int sig = i && base && stat[1] == 'e' && compare_metric_significant(base, m);
        cell(metric_text(x, m->unit, v, sizeof(v)), pct_text(pct, d, sizeof(d)),
             mark_of(sig, x - b));
    }
    end_line();
}

static int has_metric(const struct compare_run *c, const char *key)
{
    return compare_run_metric(c, key) != NULL;
}

/* Whether key already came up in an earlier run: the rows of a section are
 * the union of the runs' keys, each once. */
static int seen_before(const struct compare_run *runs, uint32_t upto, const char *key,
                       int (*has)(const struct compare_run *, const char *))
{
    for (uint32_t i = 0; i < upto; i++)
        if (has(&runs[i], key))
            return 1;
    return 0;
}

static void print_metrics(const struct compare_run *runs, uint32_t n)
{
    int header = 0;
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t k = 0; k < runs[r].nmetrics; k++) {
            const struct compare_metric *m = &runs[r].metrics[k];
            if (seen_before(runs, r, m->key, has_metric))
                continue;
            if (!header++)
                section("utilization", n);
            metric_row(m->key, "mean", runs, n);
            metric_row(m->key, strcmp(m->unit, "bytes") == 0 ? "max" : "p95", runs, n);
        }
}

static void print_findings(const struct compare_run *runs, uint32_t n)
{
    int header = 0;
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t k = 0; k < runs[r].nfindings; k++) {
            const char *rule = runs[r].findings[k];
            if (seen_before(runs, r, rule, compare_run_has_finding))
                continue;
            if (!header++)
                section("findings", n);
            emit("  %-*s", LABEL_W - 2, rule);
            int in_base = compare_run_has_finding(&runs[0], rule);
            for (uint32_t i = 0; i < n; i++) {
                int has = compare_run_has_finding(&runs[i], rule);
                const char *d = !i || has == in_base ? NULL : has ? "new" : "gone";
                cell(has ? "fired" : "-", d, NULL);
            }
            end_line();
        }
    if (!header) {
        emit("\nfindings  none in any run");
        end_line();
    }
}

/* 0, or -ENOMEM (said) when a line could not be laid out. */
static int compare_text(const struct compare_run *runs, uint32_t n)
{
    strbuf_init(&line);
    line_lost = 0;
    print_headers(runs, n);
    print_params(runs, n);
    print_steps(runs, n);
    print_metrics(runs, n);
    print_findings(runs, n);
    strbuf_release(&line);
    if (!line_lost)
        return 0;
    log_error("cannot write the comparison: %s", strerror(ENOMEM));
    return -ENOMEM;
}

static int print_json(const struct compare_run *runs, uint32_t n)
{
    struct strbuf o;
    strbuf_init(&o);
    struct json_writer jw;
    jw_init(&jw, &o);
    compare_json(&jw, runs, n);
    jw_space(&jw, "\n");
    int rc = cli_print(&o);
    strbuf_release(&o);
    return rc;
}

/* ---- command ---------------------------------------------------------------- */

/* A run, or a job of many nodes as one run (store/job.h). */
static int load_one(struct store *s, struct run_record *r, struct compare_run *out)
{
    if (!run_record_is_job(r))
        return compare_run_load(s, r, out);
    struct store *view;
    int rc = store_job_view(s, 0, r, &view);
    if (rc == 0) {
        rc = compare_run_load(view, r, out);
        if (rc < 0)
            strbuf_addf(&s->err, "%s", view->err.buf);
        store_close(view);
    }
    return rc;
}

/* Resolve and load every RUN; 0, or the exit status after saying why. */
static int load_runs(struct store *s, char **refs, uint32_t n, struct compare_run *runs)
{
    for (uint32_t i = 0; i < n; i++) {
        struct run_record r;
        if (cli_resolve(s, refs[i], &r) < 0)
            return CLI_EXIT_ERROR;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(runs[j].rec.id, r.id) == 0) {
                log_error("'%s' and '%s' are the same run %.8s; compare wants different runs",
                          refs[j], refs[i], r.id);
                run_record_release(&r);
                return CLI_EXIT_USAGE;
            }
        int rc = load_one(s, &r, &runs[i]);
        run_record_release(&r);
        if (rc < 0) {
            log_error("cannot read run %s: %s", runs[i].rec.id, s->err.buf);
            return CLI_EXIT_ERROR;
        }
    }
    return CLI_EXIT_OK;
}

int cmd_compare(struct cli_ctx *cli, int argc, char **argv)
{
    int json = 0;
    const struct cli_option opts[] = {CLI_OPT_JSON(&json), CLI_OPT_END};
    int status = cli_parse(cli, &compare_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    int n = cli->nargs;
    if (n < 2 || n > MAX_RUNS) {
        log_error("compare wants 2 to %d runs (got %d); see 'strobe compare --help'", MAX_RUNS, n);
        return CLI_EXIT_USAGE;
    }
    if ((status = cli_open(cli)) >= 0)
        return status;
    struct compare_run runs[MAX_RUNS];
    memset(runs, 0, sizeof(runs));
    status = load_runs(cli->store, cli->args, (uint32_t)n, runs);
    if (status == CLI_EXIT_OK) {
        int rc = json ? print_json(runs, (uint32_t)n) : compare_text(runs, (uint32_t)n);
        if (rc < 0)
            status = CLI_EXIT_ERROR;
    }
    for (int i = 0; i < n; i++)
        compare_run_release(&runs[i]);
    return status;
}
