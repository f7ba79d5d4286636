/*
 * The views of Python samples (pyprof/view.c): each sample's role, phase and
 * step, the filters, collapsed lines, top functions and the flame JSON, on
 * a profile and events built in memory. Every expected figure is worked out
 * by hand from the table of samples in py_fixture.h.
 */
#include "pyprof/view.h"
#include "import/json.h"
#include "pyprof/reader.h"
#include "render/flame_svg.h"

#include "py_fixture.h"
#include "strobe/ring.h"
#include "test.h"

static struct py_view_filter no_filter(void)
{
    return (struct py_view_filter){NULL, -1, 0, 0, 0, 0};
}

static void build(struct py_view *v, const struct py_profile *p, const struct run_events *e,
                  const struct py_view_filter *f)
{
    struct py_source src = {p, 0};
    ASSERT_EQ_INT(py_view_build(v, &src, 1, e, f), 0);
}

/* The attributed sample at t of pid. */
static const struct py_view_sample *sample_at(const struct py_view *v, int64_t t, int64_t pid)
{
    for (uint32_t i = 0; i < v->nsamples; i++)
        if (v->samples[i].t_ns == t && v->samples[i].pid == pid)
            return &v->samples[i];
    TEST_FAIL("no sample at %lld of %lld", (long long)t, (long long)pid);
    return NULL;
}

static void expect(const struct py_view *v, int64_t t, int64_t pid, const char *role, int phase,
                   uint32_t step)
{
    const struct py_view_sample *s = sample_at(v, t, pid);
    ASSERT_EQ_STR(v->roles[s->role], role);
    ASSERT_EQ_STR(py_phase_names[s->phase], py_phase_names[phase]);
    ASSERT_EQ_INT(s->step, step);
}

TEST(attribution_rules)
{
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct py_view v;
    struct py_view_filter f = no_filter();
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.all, 12);
    ASSERT_EQ_U64(v.total, 12);
    ASSERT_EQ_U64(v.selected, 10); /* two idle samples */
    expect(&v, 500, 100, "main", PY_PHASE_NONE, 0);
    expect(&v, 1100, 100, "main", PHASE_DATA, 1);
    expect(&v, 1300, 100, "main", PHASE_FORWARD, 1);
    expect(&v, 1300, 101, "worker 0", PHASE_DATA, 1);
    expect(&v, 1300, 102, "child", PY_PHASE_NONE, 0);
    expect(&v, 1600, 100, "main", PHASE_BACKWARD, 1);
    expect(&v, 1950, 100, "main", PHASE_OTHER, 1);
    expect(&v, 3150, 100, "main", PY_PHASE_EVAL, 0);
    expect(&v, 5100, 101, "worker 0", PHASE_DATA, 2);
    expect(&v, 5500, 100, "main", PHASE_OTHER, 2);
    expect(&v, 5850, 100, "main", PHASE_OPTIMIZER, 2);
    expect(&v, 5900, 100, "main", PHASE_OTHER, 2);
    /* threads sampled 100 apart at best: 500, 1100, 1300, ... of pid 100
     * give gaps 600 200 300 350 1200 2350 350 350 50; the median is 350 */
    ASSERT_EQ_INT(v.interval_ns, 350);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

TEST(roles_of_ranks_and_root)
{
    /* rank 1 (pid 200) and its worker 0 (201, rank unknown: its parent's);
     * 300 is listed nowhere and its parent is not in the profile: the root */
    struct py_profile p;
    memset(&p, 0, sizeof(p));
    prof_frame(&p, "f", "a.py", 1);
    prof_stack(&p, (uint32_t[]){1}, 1);
    prof_proc(&p, 300, 1);
    prof_proc(&p, 200, 300);
    prof_proc(&p, 201, 200);
    prof_proc(&p, 202, 300);
    prof_sample(&p, 10, 200, 1, PY_ST_RUNNING);
    prof_sample(&p, 10, 201, 1, PY_ST_RUNNING);
    prof_sample(&p, 10, 300, 1, PY_ST_RUNNING);
    prof_sample(&p, 10, 202, 1, PY_ST_RUNNING);
    struct run_events e;
    ev_init(&e);
    ev_proc(&e, 200, 300, "rank", 1, -1);
    ev_proc(&e, 201, 200, "dataloader", -1, 0);
    struct py_view v;
    struct py_view_filter f = no_filter();
    build(&v, &p, &e, &f);
    expect(&v, 10, 200, "rank 1", PY_PHASE_NONE, 0);
    expect(&v, 10, 201, "rank 1 worker 0", PHASE_DATA, 0);
    expect(&v, 10, 300, "main", PY_PHASE_NONE, 0);
    expect(&v, 10, 202, "child", PY_PHASE_NONE, 0);
    py_view_release(&v);
    /* "rank 1": the rank and its workers; "worker": every worker */
    f.role = "rank 1";
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.selected, 2);
    py_view_release(&v);
    f.role = "worker";
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.selected, 1);
    ASSERT_EQ_INT(v.samples[0].pid, 201);
    py_view_release(&v);
    f.role = "rank"; /* a word: not "rank 1" alone, every rank */
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.selected, 2);
    py_view_release(&v);
    f.role = "ran";
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.selected, 0);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

static uint64_t selected_with(struct py_view_filter f)
{
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct py_view v;
    build(&v, &p, &e, &f);
    uint64_t n = v.selected;
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
    return n;
}

TEST(filters)
{
    struct py_view_filter f = no_filter();
    f.role = "worker";
    ASSERT_EQ_U64(selected_with(f), 1);
    f.idle = 1;
    ASSERT_EQ_U64(selected_with(f), 2);
    f = no_filter();
    f.phase = PHASE_DATA; /* main at 1100, the worker at 1300 */
    ASSERT_EQ_U64(selected_with(f), 2);
    f = no_filter();
    f.step_from = f.step_to = 2; /* 5850 and 5900 running; 5100, 5500 idle */
    ASSERT_EQ_U64(selected_with(f), 2);
    f.idle = 1;
    ASSERT_EQ_U64(selected_with(f), 4);
    f = no_filter();
    f.step_from = 1;
    f.step_to = 2;
    ASSERT_EQ_U64(selected_with(f), 7);
    f = no_filter();
    f.pid = 102;
    ASSERT_EQ_U64(selected_with(f), 1);
    f = no_filter();
    f.phase = PY_PHASE_EVAL;
    ASSERT_EQ_U64(selected_with(f), 1);
    f.phase = PY_PHASE_NONE;
    ASSERT_EQ_U64(selected_with(f), 2);
    ASSERT_EQ_INT(py_phase_parse("backward"), PHASE_BACKWARD);
    ASSERT_EQ_INT(py_phase_parse("nope"), -1);
}

TEST(collapsed_lines_exact)
{
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct py_view v;
    struct py_view_filter f = no_filter();
    build(&v, &p, &e, &f);
    struct strbuf out;
    strbuf_init(&out);
    ASSERT_EQ_INT(py_view_collapsed(&v, &f, &out), 0);
    /* on-CPU: A at 500, 1100, 1300 (child), 1950; AB at 1300, 3150; ABA at
     * 1600; AD at 5850; C at 1300; the frameless sample at 5900 left out */
    ASSERT_EQ_STR(out.buf, "loader (data.py:5) 1\n"
                           "main (train.py:1) 4\n"
                           "main (train.py:1);forward (model.py:10) 2\n"
                           "main (train.py:1);forward (model.py:10);main (train.py:1) 1\n"
                           "main (train.py:1);x,y?<&>\" (f<&>.py:7) 1\n");
    strbuf_reset(&out);
    f.idle = 1; /* adds C at 5100 and A at 5500 */
    ASSERT_EQ_INT(py_view_collapsed(&v, &f, &out), 0);
    ASSERT_EQ_STR(out.buf, "loader (data.py:5) 2\n"
                           "main (train.py:1) 5\n"
                           "main (train.py:1);forward (model.py:10) 2\n"
                           "main (train.py:1);forward (model.py:10);main (train.py:1) 1\n"
                           "main (train.py:1);x,y?<&>\" (f<&>.py:7) 1\n");
    strbuf_release(&out);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

TEST(top_functions_exact)
{
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct py_view v;
    struct py_view_filter f = no_filter();
    build(&v, &p, &e, &f);
    struct py_top *t;
    uint32_t n;
    /* self: A leaf of S_A x4 and S_ABA x1 = 5, B 2, C 1, D 1 */
    ASSERT_EQ_INT(py_view_top(&v, &f, 0, 10, &t, &n), 0);
    ASSERT_EQ_INT(n, 4);
    ASSERT_EQ_STR(v.frames[t[0].frame].func, "main");
    ASSERT_EQ_U64(t[0].self, 5);
    ASSERT_EQ_STR(v.frames[t[1].frame].func, "forward");
    ASSERT_EQ_U64(t[1].self, 2);
    ASSERT_EQ_STR(v.frames[t[2].frame].func, "loader"); /* ties by name */
    ASSERT_EQ_STR(v.frames[t[3].frame].func, HOSTILE_FUNC);
    free(t);
    /* total: A in 4 + 2 + 1 (once, though twice on ABA) + 1 = 8; B 2 + 1 */
    ASSERT_EQ_INT(py_view_top(&v, &f, 1, 2, &t, &n), 0);
    ASSERT_EQ_INT(n, 2);
    ASSERT_EQ_U64(t[0].total, 8);
    ASSERT_EQ_U64(t[1].total, 3);
    ASSERT_EQ_STR(v.frames[t[1].frame].func, "forward");
    free(t);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

TEST(flame_json_schema)
{
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct py_view v;
    struct py_view_filter f = no_filter();
    f.step_from = 1;
    f.step_to = 2;
    build(&v, &p, &e, &f);
    struct strbuf out;
    strbuf_init(&out);
    ASSERT_EQ_INT(py_view_json(&v, "RUNID", &f, &out), 0);
    struct json_doc d;
    json_doc_init(&d);
    struct json *root = NULL;
    ASSERT_EQ_INT(json_parse(&d, out.buf, out.len, &root), 0);
    ASSERT_EQ_STR(json_str(json_get(root, "run")), "RUNID");
    ASSERT_EQ_INT(json_get(root, "samples")->num, 7); /* running, steps 1-2 */
    const struct json *fl = json_get(root, "filters");
    ASSERT_EQ_INT(json_get(fl, "role")->type, JSON_NULL);
    ASSERT_EQ_INT(json_get(fl, "steps")->len, 2);
    int hostile = 0;
    for (const struct json *fr = json_get(root, "frames")->child; fr; fr = fr->next)
        hostile += strcmp(json_str(fr->child), HOSTILE_FUNC) == 0;
    ASSERT_EQ_INT(hostile, 1); /* the name comes back as it was */
    /* counts sum to every sample that passed, idle ones too: 9 */
    double sum = 0;
    for (const struct json *c = json_get(root, "counts")->child; c; c = c->next)
        sum += c->child->next->next->next->next->num;
    ASSERT_EQ_INT(sum, 9);
    ASSERT_EQ_INT(json_get(root, "states")->len, PY_STATES);
    ASSERT_EQ_INT(json_get(root, "stacks")->len, v.nstacks);
    json_doc_release(&d);
    strbuf_release(&out);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

TEST(sources_of_a_job_merge)
{
    /* two nodes with the same frame under other ids: one frame, one stack */
    struct py_profile a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    prof_frame(&a, "g", "g.py", 3);
    prof_frame(&a, "f", "f.py", 1);
    prof_stack(&a, (uint32_t[]){2}, 1);
    prof_frame(&b, "f", "f.py", 1);
    prof_stack(&b, (uint32_t[]){1}, 1);
    prof_sample(&a, 10, 5, 1, PY_ST_RUNNING);
    prof_sample(&b, 20, 5, 1, PY_ST_RUNNING);
    struct run_events e;
    ev_init(&e);
    struct py_source src[2] = {{&a, 0}, {&b, (int64_t)1 << 22}};
    struct py_view v;
    struct py_view_filter f = no_filter();
    ASSERT_EQ_INT(py_view_build(&v, src, 2, &e, &f), 0);
    ASSERT_EQ_INT(v.nframes, 1);
    ASSERT_EQ_INT(v.nstacks, 2); /* the empty stack and [f] */
    ASSERT_EQ_INT(v.samples[1].pid, (1 << 22) + 5);
    struct strbuf out;
    strbuf_init(&out);
    ASSERT_EQ_INT(py_view_collapsed(&v, &f, &out), 0);
    ASSERT_EQ_STR(out.buf, "f (f.py:1) 2\n");
    strbuf_release(&out);
    py_view_release(&v);
    prof_free(&a);
    prof_free(&b);
    run_events_release(&e);
}

TEST(garbled_ids_do_not_crash)
{
    struct py_profile p;
    memset(&p, 0, sizeof(p));
    prof_frame(&p, "f", "f.py", 1);
    prof_stack(&p, (uint32_t[]){1, 99, 0}, 3); /* frame ids the dictionary lacks */
    prof_sample(&p, 10, 5, 1, PY_ST_RUNNING);
    prof_sample(&p, 20, 5, 77, 200); /* no such stack, no such state */
    struct run_events e;
    ev_init(&e);
    struct py_view v;
    struct py_view_filter f = no_filter();
    f.idle = 1;
    build(&v, &p, &e, &f);
    ASSERT_EQ_U64(v.selected, 2);
    ASSERT_EQ_INT(v.samples[1].stack, 0);
    ASSERT_EQ_INT(v.samples[1].state, PY_ST_WAIT);
    py_view_release(&v);
    prof_free(&p);
    run_events_release(&e);
}

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

TEST(svg_escapes_and_widths)
{
    struct strbuf svg;
    strbuf_init(&svg);
    /* A;B 3 and A;C<&> 1: A spans all 4, B three quarters of the width */
    ASSERT_EQ_INT(flame_svg_write("a;b 3\na;c<&>'\"\x01 1\nbroken line\n", "t<&>", &svg), 0);
    ASSERT(!strstr(svg.buf, "<&>"));
    ASSERT_EQ_INT(count_of(svg.buf, "c&lt;&amp;&gt;&apos;&quot;?"), 2); /* title and text */
    ASSERT_EQ_INT(count_of(svg.buf, "t&lt;&amp;&gt;</text>"), 1);
    ASSERT_EQ_INT(count_of(svg.buf, "<rect x="), 5); /* background, all, a, b, c */
    /* width 1200 less 2 x 10 of padding: 1180 for 4 samples; height 36 above,
     * 34 below, 16 a row (all, a, b): b at 118 - 34 - 3 x 16 = 36 */
    ASSERT(strstr(svg.buf, "<title>all (4 samples, 100.00%)</title>"));
    ASSERT(strstr(svg.buf, "<title>b (3 samples, 75.00%)</title><rect x=\"10.0\" y=\"36.0\" "
                           "width=\"885.0\""));
    ASSERT(strstr(svg.buf, "<title>a (4 samples, 100.00%)</title><rect x=\"10.0\" y=\"52.0\" "
                           "width=\"1180.0\""));
    strbuf_reset(&svg);
    ASSERT_EQ_INT(flame_svg_write("", "empty", &svg), 0);
    ASSERT(strstr(svg.buf, "no samples"));
    strbuf_release(&svg);
}

TEST_MAIN(attribution_rules, roles_of_ranks_and_root, filters, collapsed_lines_exact,
          top_functions_exact, flame_json_schema, sources_of_a_job_merge, garbled_ids_do_not_crash,
          svg_escapes_and_widths)
