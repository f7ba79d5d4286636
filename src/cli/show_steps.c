/* strobe show: the framework part (steps, phases, ranks, workers, events). */
#include <stdio.h>
#include <string.h>

#include "analyze/operators.h"
#include "analyze/steps.h"
#include "cli/cli.h"
#include "common/fmt.h"
#include "common/strbuf.h"

static void print_group_line(const struct step_group *g)
{
    char a[32], b[32], c[32], d[32];
    printf("%lld steps: mean %s  p50 %s  p95 %s  max %s", (long long)g->steps.count,
           fmt_ns(g->steps.mean_ns, a, sizeof(a)), fmt_ns(g->steps.p50_ns, b, sizeof(b)),
           fmt_ns(g->steps.p95_ns, c, sizeof(c)), fmt_ns(g->steps.max_ns, d, sizeof(d)));
}

#define TOP_OPERATORS 10

/* The torch.profiler window's heaviest operators, when the run has one. */
static void print_operators(const struct run_events *e)
{
    struct operator_stats s;
    if (operator_stats_run(e, &s) < 0 || !s.n) {
        operator_stats_release(&s);
        return;
    }
    char w[32];
    printf("\noperators %llu from torch.profiler, steps %u-%u (%s); inclusive times, nested "
           "operators count in each\n",
           (unsigned long long)s.events, s.step_min, s.step_max, fmt_ns(s.window_ns, w, sizeof(w)));
    printf("  %-44s %8s %10s %7s\n", "OPERATOR", "COUNT", "TOTAL ms", "SHARE");
    for (uint32_t i = 0; i < s.n && i < TOP_OPERATORS; i++)
        printf("  %-44.44s %8llu %10.3f %6.1f%%\n", s.ops[i].name,
               (unsigned long long)s.ops[i].count, s.ops[i].total_ns / 1e6,
               100.0 * operator_share(&s, &s.ops[i]));
    if (s.n > TOP_OPERATORS)
        printf("  ... %u more operators\n", s.n - TOP_OPERATORS);
    operator_stats_release(&s);
}

static void json_operators(struct strbuf *o, const struct run_events *e)
{
    struct operator_stats s;
    strbuf_adds(o, ",\"top_operators\":");
    if (operator_stats_run(e, &s) < 0 || !s.n) {
        strbuf_adds(o, "null");
        operator_stats_release(&s);
        return;
    }
    strbuf_addf(o, "{\"events\":%llu,\"step_min\":%u,\"step_max\":%u,\"window_ns\":",
                (unsigned long long)s.events, s.step_min, s.step_max);
    strbuf_add_json_num(o, s.window_ns);
    strbuf_adds(o, ",\"operators\":[");
    for (uint32_t i = 0; i < s.n && i < TOP_OPERATORS; i++) {
        strbuf_adds(o, i ? ",{\"name\":" : "{\"name\":");
        strbuf_add_json_str(o, s.ops[i].name);
        strbuf_addf(o, ",\"count\":%llu,\"total_ms\":", (unsigned long long)s.ops[i].count);
        strbuf_add_json_num(o, s.ops[i].total_ns / 1e6);
        strbuf_adds(o, ",\"share\":");
        strbuf_add_json_num(o, operator_share(&s, &s.ops[i]));
        strbuf_adds(o, "}");
    }
    strbuf_addf(o, "],\"distinct\":%u}", s.n);
    operator_stats_release(&s);
}

/* "4 backward passes per step" where a step had other than one (gradient
 * accumulation, a closure optimizer, a GAN), on a line of its own. */
static void print_backward_line(const struct step_group *g)
{
    double per_step = step_group_backward_per_step(g);
    if (g->backward_passes && per_step != 1.0)
        printf("          %.3g backward passes per step\n", per_step);
}

/* The evaluation steps, apart from the training ones: their line and the
 * phases they spent time in. */
static void print_eval(const struct step_analysis *a)
{
    if (!a->eval.ngroups)
        return;
    const struct step_group *g = &a->eval.groups[a->eval.primary];
    printf("eval      ");
    print_group_line(g);
    printf(" (apart from training)\n         ");
    for (int p = 0; p < PHASE_COUNT; p++)
        if (g->phase_ns[p] > 0)
            printf(" %s %.1f%%", phase_names[p], 100.0 * step_group_share(g, (enum phase)p));
    printf("\n");
}

void show_steps_text(const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a)
{
    if (!e->events && !r->events_dropped)
        return;
    printf("\n");
    if (a->ngroups) {
        const struct step_group *g = &a->groups[a->primary];
        printf("steps     ");
        print_group_line(g);
        if (g->rank >= 0)
            printf("  (rank %lld)", (long long)g->rank);
        printf("\n");
        print_backward_line(g);
        printf("phases   ");
        for (int p = 0; p < PHASE_COUNT; p++)
            printf(" %s %.1f%%", phase_names[p], 100.0 * step_group_share(g, (enum phase)p));
        printf("\n");
        if (g->comm_all_threads_ns > g->phase_ns[PHASE_COMM] * 1.01) {
            char t[32];
            printf("          comm on all threads %s (%.1f%% of step time; overlaps backward)\n",
                   fmt_ns(g->comm_all_threads_ns, t, sizeof(t)),
                   100.0 * g->comm_all_threads_ns / g->steps.total_ns);
        }
    }
    if (a->ngroups > 1)
        for (uint32_t i = 0; i < a->ngroups; i++) {
            const struct step_group *g = &a->groups[i];
            if (g->rank >= 0)
                printf("rank %-4lld ", (long long)g->rank);
            else
                printf("pid %-5lld ", (long long)g->pid);
            print_group_line(g);
            printf("\n");
        }
    print_eval(a);
    if (a->workers) {
        double run_ns = run_record_duration_s(r) * 1e9;
        printf("workers   %u data-loader workers, busy %.1f%% of the run on average\n", a->workers,
               run_ns > 0 ? 100.0 * a->worker_busy_ns / (run_ns * a->workers) : 0.0);
    }
    char sz[32];
    printf("events    %lld in %s (%.2f B/event), %lld dropped", (long long)e->events,
           fmt_bytes((double)e->bytes, sz, sizeof(sz)),
           e->events ? (double)e->bytes / (double)e->events : 0.0, (long long)r->events_dropped);
    if (r->events_invalid)
        printf(", %lld invalid records rejected", (long long)r->events_invalid);
    if (e->bad_blocks)
        printf(", %llu damaged blocks skipped", (unsigned long long)e->bad_blocks);
    printf("\n");
    print_operators(e);
}

static void json_phases(struct strbuf *o, const struct step_group *g)
{
    strbuf_adds(o, "{");
    for (int p = 0; p < PHASE_COUNT; p++) {
        strbuf_addf(o, "%s\"%s\":{\"ns\":", p ? "," : "", phase_names[p]);
        strbuf_add_json_num(o, g->phase_ns[p]);
        strbuf_adds(o, ",\"share\":");
        strbuf_add_json_num(o, step_group_share(g, (enum phase)p));
        strbuf_adds(o, "}");
    }
    strbuf_adds(o, ",\"comm_all_threads_ns\":");
    strbuf_add_json_num(o, g->comm_all_threads_ns);
    strbuf_adds(o, "}");
}

/* A process's step statistics, the members of its "steps" object. */
static void json_group_steps(struct strbuf *o, const struct step_group *g)
{
    strbuf_addf(o, "\"pid\":%lld,\"rank\":", (long long)g->pid);
    if (g->rank >= 0)
        strbuf_addf(o, "%lld,", (long long)g->rank);
    else
        strbuf_adds(o, "null,");
    duration_stats_json(o, &g->steps);
    strbuf_addf(o, ",\"backward_passes\":%llu,\"backward_per_step\":",
                (unsigned long long)g->backward_passes);
    strbuf_add_json_num(o, step_group_backward_per_step(g));
}

/* ,"<steps_key>":{...},"<phases_key>":{...} for the primary group of gs, or
 * nulls without steps. */
static void json_primary(struct strbuf *o, const struct step_groups *gs, const char *steps_key,
                         const char *phases_key)
{
    const struct step_group *g = gs->ngroups ? &gs->groups[gs->primary] : NULL;
    strbuf_addf(o, ",\"%s\":", steps_key);
    if (!g) {
        strbuf_addf(o, "null,\"%s\":null", phases_key);
        return;
    }
    strbuf_addch(o, '{');
    json_group_steps(o, g);
    strbuf_addf(o, "},\"%s\":", phases_key);
    json_phases(o, g);
}

void show_steps_json(struct strbuf *o, const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a)
{
    strbuf_addf(o, ",\"events\":%llu,\"event_bytes\":%lld,\"dropped_events\":%lld",
                (unsigned long long)e->events, (long long)e->bytes, (long long)r->events_dropped);
    strbuf_addf(o, ",\"invalid_events\":%lld", (long long)r->events_invalid);
    json_operators(o, e);
    struct step_groups train = {a->groups, a->ngroups, a->primary};
    json_primary(o, &train, "steps", "phases");
    json_primary(o, &a->eval, "eval_steps", "eval_phases");
    strbuf_adds(o, ",\"ranks\":[");
    for (uint32_t i = 0; i < a->ngroups; i++) {
        const struct step_group *x = &a->groups[i];
        strbuf_adds(o, i ? ",{" : "{");
        json_group_steps(o, x);
        strbuf_adds(o, ",\"phases\":");
        json_phases(o, x);
        strbuf_adds(o, "}");
    }
    strbuf_adds(o, "],\"processes\":[");
    for (uint32_t i = 0; i < e->nprocs; i++) {
        const struct proc_info *p = &e->procs[i];
        strbuf_addf(o, "%s{\"pid\":%lld,\"ppid\":%lld,\"comm\":", i ? "," : "", (long long)p->pid,
                    (long long)p->ppid);
        strbuf_add_json_str(o, p->comm);
        strbuf_adds(o, ",\"role\":");
        strbuf_add_json_str_or_null(o, p->role[0] ? p->role : NULL);
        const int64_t *fields[] = {&p->rank, &p->local_rank, &p->world_size, &p->worker_id};
        static const char *const keys[] = {"rank", "local_rank", "world_size", "worker_id"};
        for (size_t k = 0; k < 4; k++) {
            if (*fields[k] >= 0)
                strbuf_addf(o, ",\"%s\":%lld", keys[k], (long long)*fields[k]);
            else
                strbuf_addf(o, ",\"%s\":null", keys[k]);
        }
        strbuf_adds(o, "}");
    }
    strbuf_addf(o, "],\"workers\":{\"count\":%u,\"busy_ns\":", a->workers);
    strbuf_add_json_num(o, a->worker_busy_ns);
    strbuf_adds(o, "}");
}
