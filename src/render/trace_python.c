/*
 * The Python tracks of strobe trace (trace.h): a run's on-CPU stack samples
 * turned into slices, as py-spy's chrometrace output does. A thread's
 * samples are walked in time order; a frame that stays at the same depth
 * (under the same frames) from one sample to the next stays one slice, and
 * one that differs closes, with everything above it, at the new sample's
 * time. A sample stands for one sampling interval: a gap of more than two
 * (the thread waited, or was not sampled) closes every slice one interval
 * after the sample before it, and so does the thread's last sample.
 *
 * Each sampled thread gets a track of its own in its process, so the
 * slices never break the nesting of the framework spans on the thread's
 * track.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "pyprof/reader.h"
#include "pyprof/view.h"
#include "render/trace.h"

/* What a sample stands for when the interval cannot be told (one sample). */
#define DEFAULT_INTERVAL_NS 10000000

struct py_walk {
    struct trace *t;
    const struct py_view *v;
    int64_t interval_ns;
    struct trace_py_track *track;
    uint32_t open[PY_STACK_MAX]; /* slice indexes of the open frames, root first */
    uint32_t nopen;
};

static int open_slice(struct py_walk *w, uint32_t frame, int64_t ts)
{
    struct trace_py_track *k = w->track;
    if (w->nopen == PY_STACK_MAX)
        return 0; /* deeper than a stack is read: not drawn */
    if (array_grow((void **)&k->slices, &k->slices_cap, k->nslices + 1, sizeof(*k->slices), 256) <
        0)
        return -ENOMEM;
    k->slices[k->nslices] = (struct trace_py_slice){ts, ts, frame, w->nopen};
    w->open[w->nopen++] = k->nslices++;
    w->t->py_slices++;
    return 0;
}

/* Close the open frames from depth d up, at ts. */
static void close_from(struct py_walk *w, uint32_t d, int64_t ts)
{
    while (w->nopen > d)
        w->track->slices[w->open[--w->nopen]].end_ns = ts;
}

static int add_sample(struct py_walk *w, const struct py_view_sample *s, int64_t prev_ns)
{
    if (w->nopen && s->t_ns - prev_ns > 2 * w->interval_ns)
        close_from(w, 0, prev_ns + w->interval_ns);
    const struct py_view *v = w->v;
    const uint32_t *fr = v->stack_frames + v->stack_off[s->stack];
    uint32_t depth = v->stack_depth[s->stack], d = 0;
    while (d < w->nopen && d < depth && w->track->slices[w->open[d]].frame == fr[d])
        d++;
    close_from(w, d, s->t_ns);
    for (; d < depth; d++) {
        int rc = open_slice(w, fr[d], s->t_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int track_for(struct trace *t, const struct py_run *pr, const struct py_view_sample *s,
                     struct trace_py_track **out)
{
    for (uint32_t i = 0; i < t->npy_tracks; i++)
        if (t->py_tracks[i].tid == s->tid && t->py_tracks[i].pid == s->pid) {
            *out = &t->py_tracks[i];
            return 0;
        }
    struct trace_py_track *p = realloc(t->py_tracks, (t->npy_tracks + 1) * sizeof(*p));
    if (!p)
        return -ENOMEM;
    t->py_tracks = p;
    struct trace_py_track *k = &p[t->npy_tracks++];
    memset(k, 0, sizeof(*k));
    k->pid = s->pid;
    k->tid = s->tid;
    const char *name = "";
    for (uint32_t i = 0; i < pr->nprofs; i++) {
        const struct py_profile *prof = pr->src[i].prof;
        for (uint32_t j = 0; j < prof->nthreads; j++)
            if (pr->src[i].pid_base + prof->threads[j].tid == s->tid &&
                pr->src[i].pid_base + prof->threads[j].pid == s->pid)
                name = prof->threads[j].name;
    }
    struct strbuf b;
    strbuf_init(&b);
    strbuf_addf(&b, "python %lld (", (long long)s->tid);
    strbuf_add_utf8(&b, name);
    strbuf_addch(&b, ')');
    snprintf(k->name, sizeof(k->name), "%s", strbuf_failed(&b) ? "python" : b.buf);
    strbuf_release(&b);
    *out = k;
    return trace_proc_for_pid(t, s->pid, &k->proc);
}

static int cmp_thread_time(const void *a, const void *b)
{
    const struct py_view_sample *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

static int frame_names(struct trace *t, const struct py_view *v)
{
    if (v->nframes && !(t->py_frames = calloc(v->nframes, sizeof(*t->py_frames))))
        return -ENOMEM;
    for (uint32_t i = 0; i < v->nframes; i++) {
        struct strbuf b;
        strbuf_init(&b);
        py_view_frame_text(v, i, &b);
        if (strbuf_failed(&b))
            return -ENOMEM;
        t->py_frames[t->npy_frames++] = strbuf_detach(&b);
    }
    return 0;
}

/* Lay out the on-CPU samples of the window, thread by thread. */
static int lay_out(struct trace *t, const struct py_run *pr, struct py_view *v)
{
    int rc = frame_names(t, v);
    array_sort(v->samples, v->nsamples, sizeof(*v->samples), cmp_thread_time);
    struct py_walk w = {.t = t, .v = v};
    w.interval_ns = v->interval_ns > 0 ? v->interval_ns : DEFAULT_INTERVAL_NS;
    int64_t prev = 0;
    for (uint32_t i = 0; i < v->nsamples && rc == 0; i++) {
        const struct py_view_sample *s = &v->samples[i];
        if (s->state != PY_ST_RUNNING || s->t_ns < t->from_ns || s->t_ns > t->to_ns)
            continue;
        t->py_samples++;
        if (!w.track || w.track->tid != s->tid || w.track->pid != s->pid) {
            if (w.track)
                close_from(&w, 0, prev + w.interval_ns);
            if ((rc = track_for(t, pr, s, &w.track)) < 0)
                break;
            w.nopen = 0;
        }
        rc = add_sample(&w, s, prev);
        prev = s->t_ns;
    }
    if (w.track)
        close_from(&w, 0, prev + w.interval_ns);
    return rc;
}

int trace_build_python(struct trace *t, struct strbuf *err)
{
    struct py_run pr;
    int rc = py_run_load(t->store, t->run, 0, &pr, err);
    if (rc == 0 && py_run_samples(&pr)) {
        struct py_view_filter f = {NULL, -1, 0, 0, 0, 1};
        struct py_view v;
        rc = py_view_build(&v, pr.src, pr.nprofs, &t->ev, &f);
        if (rc == 0)
            rc = lay_out(t, &pr, &v);
        if (rc < 0)
            strbuf_addf(err, "cannot lay out the Python samples of run %s: out of memory",
                        t->run->id);
        py_view_release(&v);
    }
    py_run_release(&pr);
    return rc;
}
