/*
 * Step modes in the step analysis (analyze/steps.c): training steps ("step",
 * "step:global") pooled, evaluation steps ("step:eval") apart with their own
 * phases, other modes in neither, and the backward passes of a step (the
 * outermost backward spans that begin inside it), on events built in memory
 * with every figure worked out by hand.
 */
#include "analyze/steps.h"
#include "common/array.h"
#include "strobe/ring.h"
#include "test.h"

#define ASSERT_EQ_DBL(a, b) ASSERT_NEAR((a), (b), 0) /* exact: the sums are of small integers */

enum {
    N_STEP = 1,
    N_EVAL,
    N_FORWARD,
    N_BACKWARD,
    N_OPTIMIZER,
    N_DATA,
    N_GLOBAL,
    N_PREDICT,
    N_NAMES = N_PREDICT
};

static const char *const names[N_NAMES + 1] = {
    [N_STEP] = "step",          [N_EVAL] = "step:eval",      [N_FORWARD] = "forward",
    [N_BACKWARD] = "backward",  [N_OPTIMIZER] = "optimizer", [N_DATA] = "data",
    [N_GLOBAL] = "step:global", [N_PREDICT] = "step:predict"};

struct span_def {
    uint32_t name;
    int64_t start, end;
};

static void init_events(struct run_events *e)
{
    memset(e, 0, sizeof(*e));
    e->nnames = N_NAMES;
    e->names = calloc(N_NAMES, sizeof(*e->names));
    ASSERT(e->names);
    for (uint32_t id = 1; id <= N_NAMES; id++)
        ASSERT((e->names[id - 1] = strdup(names[id])));
}

/* A thread of pid holding the spans of def[0..n), in their order. */
static void add_thread(struct run_events *e, int64_t pid, const struct span_def *def, uint32_t n)
{
    e->threads = realloc(e->threads, (e->nthreads + 1) * sizeof(*e->threads));
    ASSERT(e->threads);
    struct thread_events *t = &e->threads[e->nthreads++];
    memset(t, 0, sizeof(*t));
    t->pid = t->tid = pid;
    t->ev = calloc(n, sizeof(*t->ev));
    ASSERT(t->ev);
    for (uint32_t i = 0; i < n; i++)
        t->ev[i] = (struct event){.ts_ns = def[i].start,
                                  .value = def[i].end - def[i].start,
                                  .name = def[i].name,
                                  .kind = STROBE_EV_COMPLETE};
    t->n = t->cap = n;
    e->events += n;
}

static void add_proc(struct run_events *e, int64_t pid, int64_t rank)
{
    e->procs = realloc(e->procs, (e->nprocs + 1) * sizeof(*e->procs));
    ASSERT(e->procs);
    struct proc_info *p = &e->procs[e->nprocs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->rank = rank;
    p->local_rank = p->world_size = p->worker_id = -1;
}

/* Three training steps (one of smdebug's GLOBAL mode), two eval steps and a
 * predict step on one thread:
 *   step        [0,100)   data 0-10, forward 10-30, backward 30-60 holding a
 *                         checkpoint's backward 40-50, optimizer 60-90 holding
 *                         a closure's forward 62-66 and backward 66-80
 *   step:global [100,200) forward 100-150, backward 150-190
 *   step:eval   [200,260) data 200-210, forward 210-250
 *   step:eval   [260,300) forward 260-290; a backward 290-320 begins here
 *   step        [300,400) forward 320-380
 *   step:predict [400,450) forward 400-440 */
static const struct span_def mixed[] = {
    {N_STEP, 0, 100},       {N_DATA, 0, 10},       {N_FORWARD, 10, 30},    {N_BACKWARD, 30, 60},
    {N_BACKWARD, 40, 50},   {N_OPTIMIZER, 60, 90}, {N_FORWARD, 62, 66},    {N_BACKWARD, 66, 80},
    {N_GLOBAL, 100, 200},   {N_FORWARD, 100, 150}, {N_BACKWARD, 150, 190}, {N_EVAL, 200, 260},
    {N_DATA, 200, 210},     {N_FORWARD, 210, 250}, {N_EVAL, 260, 300},     {N_FORWARD, 260, 290},
    {N_BACKWARD, 290, 320}, {N_STEP, 300, 400},    {N_FORWARD, 320, 380},  {N_PREDICT, 400, 450},
    {N_FORWARD, 400, 440},
};

TEST(modes_kept_apart)
{
    struct run_events e;
    init_events(&e);
    add_thread(&e, 10, mixed, ARRAY_SIZE(mixed));
    struct step_analysis a;
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);

    /* training: "step" and "step:global", not eval's or predict's */
    ASSERT_EQ_INT(a.ngroups, 1);
    const struct step_group *g = &a.groups[0];
    ASSERT_EQ_INT(g->pid, 10);
    ASSERT_EQ_U64(g->steps.count, 3);
    ASSERT_EQ_DBL(g->steps.total_ns, 300.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_DATA], 10.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_FORWARD], 20.0 + 4 + 50 + 60);
    /* 30-60 less the nested 40-50, which is backward too; the closure's
     * 66-80; 150-190; and 300-320 of the one that began in the eval step */
    ASSERT_EQ_DBL(g->phase_ns[PHASE_BACKWARD], 20.0 + 10 + 14 + 40 + 20);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OPTIMIZER], 30.0 - 4 - 14);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OTHER], 10.0 + 10 + 20);
    /* passes: 30-60 and the closure's 66-80 in step 1 (not the nested
     * 40-50), 150-190 in step 2; none in step 3 (290-320 began before it) */
    ASSERT_EQ_U64(g->backward_passes, 3);
    ASSERT_EQ_DBL(step_group_backward_per_step(g), 1.0);

    /* eval: its own steps and phases */
    ASSERT_EQ_INT(a.eval.ngroups, 1);
    g = &a.eval.groups[a.eval.primary];
    ASSERT_EQ_INT(g->pid, 10);
    ASSERT_EQ_U64(g->steps.count, 2);
    ASSERT_EQ_DBL(g->steps.total_ns, 100.0);
    ASSERT_EQ_DBL(g->steps.min_ns, 40.0);
    ASSERT_EQ_DBL(g->steps.max_ns, 60.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_DATA], 10.0);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_FORWARD], 40.0 + 30);
    ASSERT_EQ_DBL(g->phase_ns[PHASE_BACKWARD], 10.0); /* 290-300 */
    ASSERT_EQ_DBL(g->phase_ns[PHASE_OTHER], 10.0);
    ASSERT_EQ_U64(g->backward_passes, 1); /* 290-320 begins in it */
    step_analysis_release(&a);
    ASSERT_EQ_INT(a.eval.ngroups, 0);
    run_events_release(&e);
}

static double *count_row(void *arg, const struct phase_span *step)
{
    static double sink[PHASE_COUNT];
    (void)step;
    (*(int *)arg)++;
    return sink;
}

static int count_sink(void *arg, const struct phase_span *step, struct step_sink *out)
{
    static double sink[PHASE_COUNT];
    (void)step;
    (*(int *)arg)++;
    out->phase_ns = sink;
    return 0;
}

TEST(walks_by_mode)
{
    struct run_events e;
    init_events(&e);
    add_thread(&e, 10, mixed, ARRAY_SIZE(mixed));
    int n = 0;
    ASSERT_EQ_INT(steps_walk_thread(&e, &e.threads[0], count_row, &n), 0);
    ASSERT_EQ_INT(n, 3); /* the training steps only */
    n = 0;
    ASSERT_EQ_INT(steps_walk_thread_modes(&e, &e.threads[0], STEP_MODES_EVAL, count_sink, &n), 0);
    ASSERT_EQ_INT(n, 2);
    n = 0;
    ASSERT_EQ_INT(
        steps_walk_thread_modes(&e, &e.threads[0], 1u << STEP_MODE_PREDICT, count_sink, &n), 0);
    ASSERT_EQ_INT(n, 1);
    run_events_release(&e);
}

/* Gradient accumulation: four backward passes in each optimizer step. */
TEST(backward_passes_per_step)
{
    struct span_def d[] = {
        {N_STEP, 0, 100},       {N_BACKWARD, 0, 10},    {N_BACKWARD, 20, 30},
        {N_BACKWARD, 40, 50},   {N_BACKWARD, 60, 70},   {N_OPTIMIZER, 80, 90},
        {N_STEP, 100, 200},     {N_BACKWARD, 100, 110}, {N_BACKWARD, 120, 130},
        {N_BACKWARD, 140, 150}, {N_BACKWARD, 160, 170},
    };
    struct run_events e;
    init_events(&e);
    add_thread(&e, 10, d, ARRAY_SIZE(d));
    struct step_analysis a;
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 1);
    ASSERT_EQ_U64(a.groups[0].backward_passes, 8);
    ASSERT_EQ_DBL(step_group_backward_per_step(&a.groups[0]), 4.0);
    ASSERT_EQ_INT(a.eval.ngroups, 0);
    ASSERT_EQ_DBL(step_group_backward_per_step(&(struct step_group){0}), 0.0);
    step_analysis_release(&a);
    run_events_release(&e);
}

/* Eval steps alone (an evaluation script), on two ranks: no training step,
 * and the eval headline is rank 0's, though rank 1 has more. */
TEST(eval_only_ranks)
{
    struct span_def r1[] = {{N_EVAL, 0, 10}, {N_EVAL, 10, 20}, {N_EVAL, 20, 30}};
    struct span_def r0[] = {{N_EVAL, 0, 15}, {N_FORWARD, 0, 5}};
    struct run_events e;
    init_events(&e);
    add_thread(&e, 20, r1, 3);
    add_thread(&e, 30, r0, 2);
    add_proc(&e, 20, 1);
    add_proc(&e, 30, 0);
    struct step_analysis a;
    ASSERT_EQ_INT(step_analysis_run(&e, &a), 0);
    ASSERT_EQ_INT(a.ngroups, 0);
    ASSERT_EQ_INT(a.eval.ngroups, 2);
    ASSERT_EQ_INT(a.eval.groups[0].rank, 0); /* by rank */
    ASSERT_EQ_INT(a.eval.primary, 0);
    ASSERT_EQ_U64(a.eval.groups[0].steps.count, 1);
    ASSERT_EQ_DBL(a.eval.groups[0].phase_ns[PHASE_FORWARD], 5.0);
    ASSERT_EQ_U64(a.eval.groups[1].steps.count, 3);
    step_analysis_release(&a);
    run_events_release(&e);
}

/* The node of an imported process, from its comm and the run's nodes. */
TEST(import_node_of_a_process)
{
    size_t n = 99;
    ASSERT_EQ_STR(proc_import_node("python@algo-2", "algo-1,algo-2", &n), "algo-2");
    ASSERT_EQ_INT((int)n, 6);
    ASSERT_EQ_STR(proc_import_node("algo-1", "algo-1,algo-2", &n), "algo-1"); /* no name */
    ASSERT_EQ_INT((int)n, 0);
    ASSERT_EQ_STR(proc_import_node("a@b@algo-1", "algo-1,algo-2", NULL), "algo-1");
    ASSERT(!proc_import_node("python@algo-3", "algo-1,algo-2", NULL)); /* not a node of the run */
    ASSERT(!proc_import_node("python@algo", "algo-1,algo-2", NULL));   /* a prefix is not one */
    ASSERT(!proc_import_node("python@algo-1", "algo-1", NULL));        /* one node: no suffixes */
    ASSERT(!proc_import_node("python@algo-1", NULL, NULL));            /* a recording */
    ASSERT(!proc_import_node(NULL, "algo-1,algo-2", NULL));
}

TEST_MAIN(modes_kept_apart, walks_by_mode, backward_passes_per_step, eval_only_ranks,
          import_node_of_a_process)
