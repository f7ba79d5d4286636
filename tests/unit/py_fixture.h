/*
 * The Python samples fixture of the view tests (test_py_view.c,
 * test_py_store.c): a profile and framework events built by hand, each
 * sample's expected role, phase and step beside it.
 */
#ifndef STROBE_TEST_PY_FIXTURE_H
#define STROBE_TEST_PY_FIXTURE_H

#include "analyze/steps.h"
#include "pyprof/profile.h"
#include "pyprof/reader.h"
#include "strobe/ring.h"
#include "test.h"

enum { N_STEP = 1, N_FORWARD, N_BACKWARD, N_DATA, N_EVAL, N_OPTIMIZER, N_NAMES = N_OPTIMIZER };
static const char *const names[N_NAMES + 1] = {
    [N_STEP] = "step", [N_FORWARD] = "forward", [N_BACKWARD] = "backward",
    [N_DATA] = "data", [N_EVAL] = "step:eval",  [N_OPTIMIZER] = "optimizer"};

/* ---- a profile by hand (its arrays, not profile.c's builder) -------------- */

static inline void prof_frame(struct py_profile *p, const char *func, const char *file,
                              uint32_t line)
{
    p->frames = realloc(p->frames, (p->nframes + 1) * sizeof(*p->frames));
    ASSERT(p->frames);
    p->frames[p->nframes++] = (struct py_frame){func, file, line};
}

static inline void prof_stack(struct py_profile *p, const uint32_t *f, uint32_t depth)
{
    p->stacks = realloc(p->stacks, (p->nstacks + 1) * sizeof(*p->stacks));
    p->stack_frames =
        realloc(p->stack_frames, (p->nstack_frames + depth + 1) * sizeof(*p->stack_frames));
    ASSERT(p->stacks && p->stack_frames);
    p->stacks[p->nstacks++] = (struct py_stack){depth, (uint32_t)p->nstack_frames};
    memcpy(p->stack_frames + p->nstack_frames, f, depth * sizeof(*f));
    p->nstack_frames += depth;
}

static inline void prof_proc(struct py_profile *p, int32_t pid, int32_t ppid)
{
    p->procs = realloc(p->procs, (p->nprocs + 1) * sizeof(*p->procs));
    ASSERT(p->procs);
    p->procs[p->nprocs++] = (struct py_process){pid, ppid, "python3"};
}

static inline void prof_sample(struct py_profile *p, int64_t t, int32_t pid, uint32_t stack,
                               int state)
{
    p->samples = realloc(p->samples, (p->nsamples + 1) * sizeof(*p->samples));
    ASSERT(p->samples);
    p->samples[p->nsamples++] = (struct py_sample){t, pid, pid, stack, (uint8_t)state, 1};
}

static inline void prof_free(struct py_profile *p)
{
    free(p->frames);
    free(p->stacks);
    free(p->stack_frames);
    free(p->procs);
    free(p->samples);
}

/* ---- events by hand ------------------------------------------------------- */

static inline void ev_init(struct run_events *e)
{
    memset(e, 0, sizeof(*e));
    e->nnames = N_NAMES;
    e->names = calloc(N_NAMES, sizeof(*e->names));
    ASSERT(e->names);
    for (uint32_t id = 1; id <= N_NAMES; id++)
        ASSERT((e->names[id - 1] = strdup(names[id])));
}

struct span_def {
    uint32_t name, step;
    int64_t start, end;
};

static inline void ev_thread(struct run_events *e, int64_t pid, const struct span_def *d,
                             uint32_t n)
{
    e->threads = realloc(e->threads, (e->nthreads + 1) * sizeof(*e->threads));
    ASSERT(e->threads);
    struct thread_events *t = &e->threads[e->nthreads++];
    memset(t, 0, sizeof(*t));
    t->pid = t->tid = pid;
    ASSERT((t->ev = calloc(n, sizeof(*t->ev))));
    for (uint32_t i = 0; i < n; i++)
        t->ev[i] = (struct event){.ts_ns = d[i].start,
                                  .value = d[i].end - d[i].start,
                                  .name = d[i].name,
                                  .step = d[i].step,
                                  .kind = STROBE_EV_COMPLETE};
    t->n = t->cap = n;
}

static inline void ev_proc(struct run_events *e, int64_t pid, int64_t ppid, const char *role,
                           int64_t rank, int64_t worker)
{
    e->procs = realloc(e->procs, (e->nprocs + 1) * sizeof(*e->procs));
    ASSERT(e->procs);
    struct proc_info *p = &e->procs[e->nprocs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->ppid = ppid;
    snprintf(p->role, sizeof(p->role), "%s", role);
    p->rank = rank;
    p->local_rank = p->world_size = -1;
    p->worker_id = worker;
}

/*
 * The fixture: main 100 (role main) with step 1 [1000, 2000) holding data,
 * forward, backward; an evaluation step [3000, 4000) holding a forward;
 * step 2 [5000, 6000) holding an optimizer. Worker 0 is pid 101; pid 102 is
 * a child no table lists. Frames: A main, B forward, C loader, D hostile.
 */
enum { F_A = 1, F_B, F_C, F_D };
enum { S_A = 1, S_AB, S_C, S_ABA, S_AD };
#define HOSTILE_FUNC "x;y\n<&>\""
#define HOSTILE_FILE "f<&>.py"

static inline void fixture(struct py_profile *p, struct run_events *e)
{
    memset(p, 0, sizeof(*p));
    prof_frame(p, "main", "train.py", 1);
    prof_frame(p, "forward", "model.py", 10);
    prof_frame(p, "loader", "data.py", 5);
    prof_frame(p, HOSTILE_FUNC, HOSTILE_FILE, 7);
    prof_stack(p, (uint32_t[]){F_A}, 1);
    prof_stack(p, (uint32_t[]){F_A, F_B}, 2);
    prof_stack(p, (uint32_t[]){F_C}, 1);
    prof_stack(p, (uint32_t[]){F_A, F_B, F_A}, 3);
    prof_stack(p, (uint32_t[]){F_A, F_D}, 2);
    prof_proc(p, 100, 1);
    prof_proc(p, 101, 100);
    prof_proc(p, 102, 100);
    prof_sample(p, 500, 100, S_A, PY_ST_RUNNING);    /* main none 0 */
    prof_sample(p, 1100, 100, S_A, PY_ST_RUNNING);   /* main data 1 */
    prof_sample(p, 1300, 100, S_AB, PY_ST_RUNNING);  /* main forward 1 */
    prof_sample(p, 1300, 101, S_C, PY_ST_RUNNING);   /* worker 0 data 1 */
    prof_sample(p, 1300, 102, S_A, PY_ST_RUNNING);   /* child none 0 */
    prof_sample(p, 1600, 100, S_ABA, PY_ST_RUNNING); /* main backward 1 */
    prof_sample(p, 1950, 100, S_A, PY_ST_RUNNING);   /* main other 1 */
    prof_sample(p, 3150, 100, S_AB, PY_ST_RUNNING);  /* main eval 0 */
    prof_sample(p, 5100, 101, S_C, PY_ST_SLEEP);     /* worker 0 data 2, idle */
    prof_sample(p, 5500, 100, S_A, PY_ST_LOCK);      /* main other 2, idle */
    prof_sample(p, 5850, 100, S_AD, PY_ST_RUNNING);  /* main optimizer 2 */
    prof_sample(p, 5900, 100, 0, PY_ST_RUNNING);     /* main other 2, no frame */
    ev_init(e);
    static const struct span_def main_spans[] = {
        {N_DATA, 1, 1000, 1200},      {N_FORWARD, 1, 1200, 1500}, {N_BACKWARD, 1, 1500, 1900},
        {N_STEP, 1, 1000, 2000},      {N_FORWARD, 0, 3100, 3200}, {N_EVAL, 1, 3000, 4000},
        {N_OPTIMIZER, 2, 5800, 5890}, {N_STEP, 2, 5000, 6000},
    };
    ev_thread(e, 100, main_spans, sizeof(main_spans) / sizeof(main_spans[0]));
    ev_proc(e, 100, 1, "main", -1, -1);
    ev_proc(e, 101, 100, "dataloader", -1, 0);
}

#endif
