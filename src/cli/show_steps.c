/* strobe show: the framework part (steps, phases, ranks, workers, events). */
#include <stdio.h>
#include <string.h>

#include "analyze/operators.h"
#include "analyze/steps.h"
#include "cli/cli.h"
#include "common/fmt.h"
#include "common/json_writer.h"
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

static void json_operators(struct json_writer *jw, const struct run_events *e)
{
    struct operator_stats s;
    jw_key(jw, "top_operators");
    if (operator_stats_run(e, &s) < 0 || !s.n) {
        jw_null(jw);
        operator_stats_release(&s);
        return;
    }
    jw_object_begin(jw);
    jw_kv_uint(jw, "events", s.events);
    jw_kv_uint(jw, "step_min", s.step_min);
    jw_kv_uint(jw, "step_max", s.step_max);
    jw_kv_num(jw, "window_ns", s.window_ns);
    jw_key(jw, "operators");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < s.n && i < TOP_OPERATORS; i++) {
        jw_object_begin(jw);
        jw_kv_str(jw, "name", s.ops[i].name);
        jw_kv_uint(jw, "count", s.ops[i].count);
        jw_kv_num(jw, "total_ms", s.ops[i].total_ns / 1e6);
        jw_kv_num(jw, "share", operator_share(&s, &s.ops[i]));
        jw_end(jw);
    }
    jw_end(jw);
    jw_kv_uint(jw, "distinct", s.n);
    jw_end(jw);
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

static void json_phases(struct json_writer *jw, const struct step_group *g)
{
    jw_object_begin(jw);
    for (int p = 0; p < PHASE_COUNT; p++) {
        jw_key(jw, phase_names[p]);
        jw_object_begin(jw);
        jw_kv_num(jw, "ns", g->phase_ns[p]);
        jw_kv_num(jw, "share", step_group_share(g, (enum phase)p));
        jw_end(jw);
    }
    jw_kv_num(jw, "comm_all_threads_ns", g->comm_all_threads_ns);
    jw_end(jw);
}

/* A process's step statistics, the members of its "steps" object. */
static void json_group_steps(struct json_writer *jw, const struct step_group *g)
{
    jw_kv_int(jw, "pid", g->pid);
    jw_kv_int_or_null(jw, "rank", g->rank);
    duration_stats_json(jw, &g->steps);
    jw_kv_uint(jw, "backward_passes", g->backward_passes);
    jw_kv_num(jw, "backward_per_step", step_group_backward_per_step(g));
}

/* "<steps_key>":{...},"<phases_key>":{...} for the primary group of gs, or
 * nulls without steps. */
static void json_primary(struct json_writer *jw, const struct step_groups *gs,
                         const char *steps_key, const char *phases_key)
{
    const struct step_group *g = gs->ngroups ? &gs->groups[gs->primary] : NULL;
    if (!g) {
        jw_kv_null(jw, steps_key);
        jw_kv_null(jw, phases_key);
        return;
    }
    jw_key(jw, steps_key);
    jw_object_begin(jw);
    json_group_steps(jw, g);
    jw_end(jw);
    jw_key(jw, phases_key);
    json_phases(jw, g);
}

static void json_process(struct json_writer *jw, const struct proc_info *p)
{
    static const char *const keys[] = {"rank", "local_rank", "world_size", "worker_id"};
    const int64_t *fields[] = {&p->rank, &p->local_rank, &p->world_size, &p->worker_id};
    jw_object_begin(jw);
    jw_kv_int(jw, "pid", p->pid);
    jw_kv_int(jw, "ppid", p->ppid);
    jw_kv_str(jw, "comm", p->comm);
    jw_kv_str_or_null(jw, "role", p->role[0] ? p->role : NULL);
    for (size_t k = 0; k < 4; k++)
        jw_kv_int_or_null(jw, keys[k], *fields[k]);
    jw_end(jw);
}

void show_steps_json(struct json_writer *jw, const struct run_record *r, const struct run_events *e,
                     const struct step_analysis *a)
{
    jw_kv_uint(jw, "events", e->events);
    jw_kv_int(jw, "event_bytes", e->bytes);
    jw_kv_int(jw, "dropped_events", r->events_dropped);
    jw_kv_int(jw, "invalid_events", r->events_invalid);
    json_operators(jw, e);
    struct step_groups train = {a->groups, a->ngroups, a->primary};
    json_primary(jw, &train, "steps", "phases");
    json_primary(jw, &a->eval, "eval_steps", "eval_phases");
    jw_key(jw, "ranks");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < a->ngroups; i++) {
        jw_object_begin(jw);
        json_group_steps(jw, &a->groups[i]);
        jw_key(jw, "phases");
        json_phases(jw, &a->groups[i]);
        jw_end(jw);
    }
    jw_end(jw);
    jw_key(jw, "processes");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < e->nprocs; i++)
        json_process(jw, &e->procs[i]);
    jw_end(jw);
    jw_key(jw, "workers");
    jw_object_begin(jw);
    jw_kv_uint(jw, "count", a->workers);
    jw_kv_num(jw, "busy_ns", a->worker_busy_ns);
    jw_end(jw);
}
