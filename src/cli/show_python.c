/*
 * strobe show's "Python hotspots" section: the run's Python samples, their
 * rate, the roles sampled, and the top functions by self and total share
 * of the on-CPU samples (pyprof/view.h). Nothing when the run has none.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json_writer.h"
#include "pyprof/view.h"

#define SHOW_TOP 10

struct show_python {
    int has;
    struct py_view v;
    struct py_view_filter f; /* on-CPU, all roles and phases */
    struct py_top *self, *total;
    uint32_t nself, ntotal;
    uint64_t notes, bad_blocks;
};

int show_python_load(struct store *s, const struct run_record *r, const struct run_events *ev,
                     struct show_python **out)
{
    struct show_python *p = calloc(1, sizeof(*p));
    *out = p;
    if (!p)
        return -1;
    p->f = (struct py_view_filter){NULL, -1, 0, 0, 0, 0};
    struct py_run pr;
    struct strbuf err;
    strbuf_init(&err);
    int rc = py_run_load(s, r, 0, &pr, &err);
    if (rc == 0 && py_run_samples(&pr)) {
        p->has = 1;
        p->notes = pr.notes;
        p->bad_blocks = pr.bad_blocks;
        rc = py_view_build(&p->v, pr.src, pr.nprofs, ev, &p->f);
        if (rc == 0)
            rc = py_view_top(&p->v, &p->f, 0, SHOW_TOP, &p->self, &p->nself);
        if (rc == 0)
            rc = py_view_top(&p->v, &p->f, 1, SHOW_TOP, &p->total, &p->ntotal);
    }
    py_run_release(&pr);
    if (rc < 0 && !s->err.len)
        strbuf_adds(&s->err, err.len ? err.buf : "out of memory");
    strbuf_release(&err);
    return rc < 0 ? -1 : 0;
}

void show_python_release(struct show_python *p)
{
    if (!p)
        return;
    py_view_release(&p->v);
    free(p->self);
    free(p->total);
    free(p);
}

static double share(uint64_t n, uint64_t of)
{
    return of ? (double)n / (double)of : 0.0;
}

static double rate_hz(const struct py_view *v)
{
    return v->interval_ns > 0 ? 1e9 / (double)v->interval_ns : 0.0;
}

static void print_top(const struct show_python *p, const char *title, const struct py_top *t,
                      uint32_t n)
{
    struct strbuf b, vis;
    strbuf_init(&b);
    strbuf_init(&vis);
    printf("  %-8s  %6s %6s  function\n", title, "self", "total");
    for (uint32_t i = 0; i < n; i++) {
        strbuf_reset(&b);
        py_view_frame_text(&p->v, t[i].frame, &b);
        printf("  %-8s  %5.1f%% %5.1f%%  %s\n", "", 100 * share(t[i].self, p->v.selected),
               100 * share(t[i].total, p->v.selected), cli_visible(&vis, b.buf));
    }
    strbuf_release(&b);
    strbuf_release(&vis);
}

void show_python_text(const struct show_python *p)
{
    if (!p || !p->has)
        return;
    const struct py_view *v = &p->v;
    printf("\nPython hotspots: %llu samples, %llu on-CPU", (unsigned long long)v->total,
           (unsigned long long)v->selected);
    if (v->interval_ns > 0)
        printf(", %.0f Hz a thread", rate_hz(v));
    printf(", %llu note%s\n", (unsigned long long)p->notes, p->notes == 1 ? "" : "s");
    struct strbuf vis;
    strbuf_init(&vis);
    printf("  roles     ");
    for (uint32_t i = 0; i < v->nroles; i++)
        printf("%s%s", i ? ", " : "", cli_visible(&vis, v->roles[i]));
    printf("\n");
    strbuf_release(&vis);
    if (p->bad_blocks)
        printf("  %llu damaged block%s skipped\n", (unsigned long long)p->bad_blocks,
               p->bad_blocks == 1 ? "" : "s");
    print_top(p, "by self", p->self, p->nself);
    print_top(p, "by total", p->total, p->ntotal);
    printf("  (strobe flame for the whole graph)\n");
}

static void json_top(struct json_writer *jw, const struct show_python *p, const char *key,
                     const struct py_top *t, uint32_t n)
{
    jw_key(jw, key);
    jw_array_begin(jw);
    for (uint32_t i = 0; i < n; i++) {
        const struct py_view_frame *f = &p->v.frames[t[i].frame];
        jw_object_begin(jw);
        jw_kv_str(jw, "func", f->func);
        jw_kv_str(jw, "file", f->file);
        jw_kv_uint(jw, "line", f->line);
        jw_kv_uint(jw, "self", t[i].self);
        jw_kv_uint(jw, "total", t[i].total);
        jw_kv_num(jw, "self_share", share(t[i].self, p->v.selected));
        jw_kv_num(jw, "total_share", share(t[i].total, p->v.selected));
        jw_end(jw);
    }
    jw_end(jw);
}

void show_python_json(struct json_writer *jw, const struct show_python *p)
{
    jw_key(jw, "python");
    if (!p || !p->has) {
        jw_null(jw);
        return;
    }
    const struct py_view *v = &p->v;
    jw_object_begin(jw);
    jw_kv_uint(jw, "samples", v->total);
    jw_kv_uint(jw, "on_cpu", v->selected);
    jw_kv_int(jw, "interval_ns", v->interval_ns);
    jw_kv_num(jw, "rate_hz", rate_hz(v));
    jw_key(jw, "roles");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < v->nroles; i++)
        jw_str(jw, v->roles[i]);
    jw_end(jw);
    jw_kv_uint(jw, "notes", p->notes);
    jw_kv_uint(jw, "damaged_blocks", p->bad_blocks);
    json_top(jw, p, "top_self", p->self, p->nself);
    json_top(jw, p, "top_total", p->total, p->ntotal);
    jw_end(jw);
}
