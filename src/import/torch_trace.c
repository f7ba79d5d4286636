#include "import/torch_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/steps.h"
#include "codec/events.h"
#include "common/array.h"
#include "common/strtab.h"
#include "import/input.h"
#include "import/json.h"
#include "record/event_block.h"

#define TRACE_MAX_BYTES   ((size_t)1 << 31) /* a larger file is refused, not half read */
#define NAME_MAX_BYTES    255               /* the event API's limit on a name */
#define EPOCH_2000_NS     (946684800LL * 1000000000LL)
#define MARKER_PREFIX     "ProfilerStep#"
#define MARKER_PREFIX_LEN (sizeof(MARKER_PREFIX) - 1)

/* ---- what a trace holds ---------------------------------------------------- */

struct tt_event {
    int64_t ts_ns, dur_ns; /* trace clock */
    uint32_t name;         /* index in names */
    uint32_t thread;       /* index in threads */
};

struct tt_marker {
    int64_t ts_ns, end_ns; /* trace clock */
    uint32_t step;         /* N of ProfilerStep#N */
    uint32_t thread;
    int64_t offset_ns; /* run time minus trace time, when matched */
    int matched;
};

struct tt_thread {
    int64_t pid, tid;     /* as in the trace; a string's is -(1 + its index in ids) */
    int pid_num, tid_num; /* the trace gave numbers */
    uint32_t ops;         /* op: events */
    uint32_t markers;
    int64_t out_pid, out_tid; /* where its events go in the run */
};

struct tt {
    struct strtab names; /* full event names, "op:aten::addmm" */
    struct strtab ids;   /* pid and tid strings */
    struct tt_event *ev;
    uint32_t nev, ev_cap;
    struct tt_marker *mk;
    uint32_t nmk, mk_cap;
    struct tt_thread *th;
    uint32_t nth, th_cap;
    int64_t base_ns;
    int has_base;
    struct torch_trace_result *res;
};

static void tt_release(struct tt *t)
{
    strtab_release(&t->names);
    strtab_release(&t->ids);
    free(t->ev);
    free(t->mk);
    free(t->th);
}

/* The name prefix for an event's category, or NULL for one not imported.
 * The legacy format has no categories: every event is an operator (or a
 * record_function label, which Kineto calls user_annotation). */
static const char *prefix_of(const char *cat)
{
    static const struct {
        const char *cat, *prefix;
    } map[] = {
        {"cpu_op", "op:"},         {"operator", "op:"},       {"user_annotation", "op:"},
        {"kernel", "kernel:"},     {"gpu_memcpy", "kernel:"}, {"gpu_memset", "kernel:"},
        {"cuda_runtime", "cuda:"}, {"cuda_driver", "cuda:"},  {"python_function", "py:"},
    };
    if (!cat)
        return "op:";
    for (size_t i = 0; i < ARRAY_SIZE(map); i++)
        if (strcmp(cat, map[i].cat) == 0)
            return map[i].prefix;
    return NULL;
}

/* prefix + name, cut to NAME_MAX_BYTES on a UTF-8 boundary (C++ kernel
 * names run to kilobytes), control bytes as '?'. */
static int intern_name(struct tt *t, const char *prefix, const char *name, uint32_t *out)
{
    char buf[NAME_MAX_BYTES + 1];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "%s%s", prefix, name);
    if (n > NAME_MAX_BYTES) {
        n = NAME_MAX_BYTES;
        while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
            n--; /* buf[n] continues a character: cut before its lead byte */
        buf[n] = '\0';
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
            buf[i] = '?';
    int rc = strtab_intern(&t->names, buf, n, out);
    return rc < 0 ? rc : 0;
}

/* A pid or tid: a number, or a string's stand-in (the legacy pid is "CPU
 * functions"). -EINVAL when missing or of another type. */
static int id_of(struct tt *t, const struct json *v, int64_t *out, int *is_num)
{
    if (v && json_scaled_i64(v, 0, out) == 0) {
        *is_num = 1;
        return 0;
    }
    const char *s = json_str(v);
    if (!s)
        return -EINVAL;
    uint32_t i;
    if (strtab_intern(&t->ids, s, strlen(s), &i) < 0)
        return -ENOMEM;
    *out = -1 - (int64_t)i;
    *is_num = 0;
    return 0;
}

static int thread_of(struct tt *t, const struct json *obj, uint32_t *out)
{
    int64_t pid = 0, tid = 0;
    int pid_num = 0, tid_num = 0, rc;
    if ((rc = id_of(t, json_get(obj, "pid"), &pid, &pid_num)) < 0 && rc != -EINVAL)
        return rc;
    if ((rc = id_of(t, json_get(obj, "tid"), &tid, &tid_num)) < 0 && rc != -EINVAL)
        return rc;
    for (uint32_t i = t->nth; i-- > 0;)
        if (t->th[i].pid == pid && t->th[i].tid == tid) {
            *out = i;
            return 0;
        }
    if (array_grow((void **)&t->th, &t->th_cap, t->nth + 1, sizeof(*t->th), 8) < 0)
        return -ENOMEM;
    t->th[t->nth] = (struct tt_thread){pid, tid, pid_num, tid_num, 0, 0, 0, 0};
    *out = t->nth++;
    return 0;
}

/* N of "ProfilerStep#N", or -1. */
static int64_t marker_step(const char *name)
{
    if (strncmp(name, MARKER_PREFIX, MARKER_PREFIX_LEN) != 0)
        return -1;
    const char *p = name + MARKER_PREFIX_LEN;
    int64_t n = 0;
    if (!*p)
        return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > UINT32_MAX / 10)
            return -1;
        n = n * 10 + (*p - '0');
    }
    return n <= UINT32_MAX ? n : -1;
}

/* One element of the event array: 0 (kept, ignored or counted bad), or
 * -ENOMEM. */
static int element(struct tt *t, const struct json *v)
{
    struct torch_trace_result *res = t->res;
    res->elements++;
    const char *ph = json_str(json_get(v, "ph"));
    const char *name = json_str(json_get(v, "name"));
    if (v->type != JSON_OBJECT || !ph) {
        res->bad++;
        return 0;
    }
    if (strcmp(ph, "X") != 0) { /* metadata, flows, instants, counters */
        res->ignored++;
        return 0;
    }
    int64_t ts, dur;
    if (!name || !*name || json_scaled_i64(json_get(v, "ts"), 3, &ts) < 0 ||
        json_scaled_i64(json_get(v, "dur"), 3, &dur) < 0 || dur < 0 || dur >= INT64_MAX / 4 ||
        ts <= INT64_MIN / 4 || ts >= INT64_MAX / 4) {
        res->bad++;
        return 0;
    }
    const char *prefix = prefix_of(json_str(json_get(v, "cat")));
    int64_t step = prefix && strcmp(prefix, "op:") == 0 ? marker_step(name) : -1;
    if (!prefix) {
        res->ignored++;
        return 0;
    }
    uint32_t thread;
    int rc = thread_of(t, v, &thread);
    if (rc < 0)
        return rc;
    if (step >= 0) {
        if (array_grow((void **)&t->mk, &t->mk_cap, t->nmk + 1, sizeof(*t->mk), 16) < 0)
            return -ENOMEM;
        t->mk[t->nmk++] = (struct tt_marker){ts, ts + dur, (uint32_t)step, thread, 0, 0};
        t->th[thread].markers++;
        res->markers++;
        return 0;
    }
    uint32_t id;
    if (intern_name(t, prefix, name, &id) < 0 ||
        array_grow((void **)&t->ev, &t->ev_cap, t->nev + 1, sizeof(*t->ev), 1024) < 0)
        return -ENOMEM;
    t->ev[t->nev++] = (struct tt_event){ts, dur, id, thread};
    t->th[thread].ops += prefix[0] == 'o';
    return 0;
}

static size_t skip_ws(const char *buf, size_t len, size_t pos)
{
    while (pos < len &&
           (buf[pos] == ' ' || buf[pos] == '\t' || buf[pos] == '\n' || buf[pos] == '\r'))
        pos++;
    return pos;
}

/* After a garbled element: the next place an element may begin, a '{'
 * after a comma ("}, {" in the legacy one-line files, "},\n  {" in
 * Kineto's). len when there is none. */
static size_t resync(const char *buf, size_t len, size_t pos)
{
    for (; pos < len; pos++) {
        if (buf[pos] != ',')
            continue;
        size_t j = skip_ws(buf, len, pos + 1);
        if (j < len && buf[j] == '{')
            return j;
    }
    return len;
}

/* The event array whose '[' is at *pos: every element that parses. Returns
 * 0 at its ']' (or at the end of a file cut short, res->cut set), -ENOMEM. */
static int event_array(struct tt *t, struct json_doc *d, const char *buf, size_t len, size_t *pos)
{
    size_t p = skip_ws(buf, len, *pos + 1);
    int garbled = 0; /* inside a garbled stretch: counted once */
    while (p < len) {
        if (buf[p] == ']') {
            *pos = p + 1;
            return 0;
        }
        struct json *v = NULL;
        size_t at = p;
        json_doc_reset(d);
        int rc = json_parse_value(d, buf, len, &p, &v);
        if (rc == -ENOMEM)
            return rc;
        /* the input ended inside the element: a file cut short, unless
         * another element begins after this one (an unclosed string in a
         * garbled element reads to the end) */
        if (rc == -ENODATA && resync(buf, len, at + 1) >= len) {
            t->res->cut = 1;
            break;
        }
        if (rc == 0) {
            p = skip_ws(buf, len, p);
            if (p < len && buf[p] != ',' && buf[p] != ']')
                rc = -EBADMSG; /* "{...} garbage": the element is not whole */
        }
        if (rc < 0) {
            t->res->bad += !garbled;
            t->res->elements += !garbled;
            garbled = 1;
            p = resync(buf, len, at + 1);
            continue;
        }
        garbled = 0;
        if ((rc = element(t, v)) < 0)
            return rc;
        if (p < len && buf[p] == ',')
            p = skip_ws(buf, len, p + 1);
    }
    if (p >= len && !garbled)
        t->res->cut = 1; /* no ']': the writer stopped */
    *pos = len;
    return 0;
}

/* Kineto's object: its traceEvents, and baseTimeNanoseconds wherever it
 * stands (before the events in torch 2, after them in some exporters). */
static int kineto_object(struct tt *t, struct json_doc *d, const char *buf, size_t len, size_t *pos)
{
    size_t p = skip_ws(buf, len, *pos + 1);
    while (p < len && buf[p] != '}') {
        struct json *key = NULL, *v = NULL;
        json_doc_reset(d);
        int rc = json_parse_value(d, buf, len, &p, &key);
        if (rc == 0 && key->type != JSON_STRING)
            rc = -EBADMSG;
        p = skip_ws(buf, len, p);
        if (rc == 0 && (p >= len || buf[p] != ':'))
            rc = p >= len ? -ENODATA : -EBADMSG;
        if (rc < 0)
            return rc;
        p = skip_ws(buf, len, p + 1);
        if (strcmp(key->str, "traceEvents") == 0 && p < len && buf[p] == '[') {
            if ((rc = event_array(t, d, buf, len, &p)) < 0)
                return rc;
            if (t->res->cut)
                return 0;
        } else {
            char kname[32];
            snprintf(kname, sizeof(kname), "%s", key->str);
            if ((rc = json_parse_value(d, buf, len, &p, &v)) < 0)
                return rc;
            if (strcmp(kname, "baseTimeNanoseconds") == 0 &&
                json_scaled_i64(v, 0, &t->base_ns) == 0)
                t->has_base = 1;
        }
        p = skip_ws(buf, len, p);
        if (p < len && buf[p] == ',')
            p = skip_ws(buf, len, p + 1);
    }
    *pos = p;
    return 0;
}

static int parse_trace(struct tt *t, const char *buf, size_t len, struct strbuf *err)
{
    struct json_doc d;
    json_doc_init(&d);
    size_t pos = skip_ws(buf, len, 0);
    int rc = 0;
    if (pos < len && buf[pos] == '[') {
        rc = event_array(t, &d, buf, len, &pos);
    } else if (pos < len && buf[pos] == '{') {
        t->res->kineto = 1;
        rc = kineto_object(t, &d, buf, len, &pos);
        /* the object broke off outside the events: what was read stands */
        if (rc == -ENODATA || rc == -EBADMSG) {
            t->res->cut |= rc == -ENODATA;
            t->res->bad += rc == -EBADMSG;
            rc = 0;
        }
    } else {
        strbuf_adds(err, "not a Chrome trace (neither a JSON array nor an object)");
        rc = -EBADMSG;
    }
    json_doc_release(&d);
    if (rc == -ENOMEM)
        strbuf_adds(err, strerror(ENOMEM));
    if (rc == 0 && !t->nev) {
        strbuf_adds(err, "no operator, kernel or Python function event in it");
        rc = -ENODATA;
    }
    return rc;
}

/* ---- the run the trace goes into ------------------------------------------ */

struct run_step {
    int64_t start_ns, end_ns;
    uint32_t step;
};

struct target {
    struct run_events re;
    int64_t pid;            /* the process of the steps the trace lines up with */
    int64_t step_tid;       /* its thread with the step spans; -1 none */
    struct run_step *steps; /* its steps, by start */
    uint32_t nsteps;
};

static int cmp_run_step(const void *a, const void *b)
{
    const struct run_step *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int has_proc(const struct run_events *e, int64_t pid)
{
    for (uint32_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].pid == pid)
            return 1;
    return 0;
}

static uint32_t step_spans(const struct run_events *e, const struct thread_events *th)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < th->n; i++)
        n += th->ev[i].kind == STROBE_EV_COMPLETE && th->ev[i].value >= 0 &&
             strcmp(run_events_name(e, th->ev[i].name), "step") == 0;
    return n;
}

/* The process the trace belongs to: the one named by the caller, else the
 * one a Kineto pid names, else the thread with the most steps (rank 0's
 * main thread in most runs). */
static void choose_target(struct target *g, const struct tt *t, int64_t pid_hint)
{
    const struct run_events *e = &g->re;
    g->pid = -1;
    g->step_tid = -1;
    if (pid_hint >= 0 && has_proc(e, pid_hint))
        g->pid = pid_hint;
    for (uint32_t i = 0; g->pid < 0 && i < t->nth; i++)
        if (t->th[i].pid_num && has_proc(e, t->th[i].pid))
            g->pid = t->th[i].pid;
    uint32_t best = 0;
    int64_t best_pid = -1;
    for (uint32_t i = 0; i < e->nthreads; i++) {
        uint32_t n = step_spans(e, &e->threads[i]);
        if ((g->pid < 0 || e->threads[i].pid == g->pid) && n > best) {
            best = n;
            best_pid = e->threads[i].pid;
            g->step_tid = e->threads[i].tid;
        }
    }
    if (g->pid < 0)
        g->pid = best_pid;
    for (uint32_t i = 0; g->pid < 0 && i < e->nprocs; i++)
        if (strcmp(e->procs[i].role, "main") == 0)
            g->pid = e->procs[i].pid;
    if (g->pid < 0 && e->nprocs)
        g->pid = e->procs[0].pid;
    for (uint32_t i = 0; g->pid < 0 && i < t->nth; i++) /* no framework events: the trace's pid */
        if (t->th[i].pid_num && t->th[i].pid >= 0)
            g->pid = t->th[i].pid;
    if (g->pid < 0)
        g->pid = 0;
}

static int load_steps(struct target *g)
{
    const struct run_events *e = &g->re;
    for (uint32_t i = 0; i < e->nthreads; i++) {
        const struct thread_events *th = &e->threads[i];
        if (th->pid != g->pid || th->tid != g->step_tid)
            continue;
        g->steps = malloc((step_spans(e, th) + 1) * sizeof(*g->steps));
        if (!g->steps)
            return -ENOMEM;
        for (uint32_t j = 0; j < th->n; j++) {
            const struct event *ev = &th->ev[j];
            if (ev->kind == STROBE_EV_COMPLETE && ev->value >= 0 &&
                strcmp(run_events_name(e, ev->name), "step") == 0)
                g->steps[g->nsteps++] =
                    (struct run_step){ev->ts_ns, ev->ts_ns + ev->value, ev->step};
        }
    }
    if (g->nsteps)
        qsort(g->steps, g->nsteps, sizeof(*g->steps), cmp_run_step);
    return 0;
}

static const struct run_step *step_numbered(const struct target *g, uint32_t n)
{
    for (uint32_t i = 0; i < g->nsteps; i++)
        if (g->steps[i].step == n)
            return &g->steps[i];
    return NULL;
}

/* The step a run time belongs to: the last one begun by then (steps tile
 * the loop), 0 before the first. */
static uint32_t step_at(const struct target *g, int64_t ts)
{
    uint32_t lo = 0, hi = g->nsteps;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->steps[mid].start_ns <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? g->steps[lo - 1].step : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_marker(const void *a, const void *b)
{
    const struct tt_marker *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* Marker N against recorded step N + shift: the matches' offsets into
 * offs (sorted), their count returned; marks the markers matched. */
static uint32_t match_markers(struct tt *t, const struct target *g, int shift, int64_t *offs)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->nmk; i++) {
        int64_t want = (int64_t)t->mk[i].step + shift;
        const struct run_step *st =
            want >= 0 && want <= UINT32_MAX ? step_numbered(g, (uint32_t)want) : NULL;
        t->mk[i].matched = 0;
        if (!st || __builtin_sub_overflow(st->start_ns, t->mk[i].ts_ns, &t->mk[i].offset_ns))
            continue;
        t->mk[i].matched = 1;
        offs[n++] = t->mk[i].offset_ns;
    }
    if (n)
        qsort(offs, n, sizeof(*offs), cmp_i64);
    return n;
}

static int64_t abs_diff(int64_t a, int64_t b)
{
    return a > b ? a - b : b - a; /* both within +-2^62 here */
}

/* Which recorded step marker N is. strobe's --torch-profile labels steps
 * with strobe's numbers, but torch.profiler's own schedule counts its
 * prof.step() calls from 0, one behind strobe's steps from 1. A trace with
 * a clock says which: the shift whose offset the clock agrees with to
 * within half a step. Without one, marker N is step N. */
static int marker_shift(struct tt *t, const struct target *g, int64_t clock, int64_t *offs)
{
    int best = 0;
    int64_t best_err = INT64_MAX;
    static const int shifts[] = {0, 1, -1};
    for (size_t k = 0; k < ARRAY_SIZE(shifts); k++) {
        uint32_t n = match_markers(t, g, shifts[k], offs);
        if (n && abs_diff(offs[n / 2], clock) < best_err) {
            best_err = abs_diff(offs[n / 2], clock);
            best = shifts[k];
        }
    }
    int64_t half_step =
        g->nsteps ? (g->steps[g->nsteps / 2].end_ns - g->steps[g->nsteps / 2].start_ns) / 2 : 0;
    return best_err < half_step ? best : 0;
}

/* The trace's clock on the run's: res->align and res->offset_ns. */
static int align(struct tt *t, const struct target *g, const struct run_record *r)
{
    struct torch_trace_result *res = t->res;
    int64_t *offs = malloc((t->nmk + 1) * sizeof(*offs));
    if (!offs)
        return -ENOMEM;
    if (t->nmk)
        qsort(t->mk, t->nmk, sizeof(*t->mk), cmp_marker);
    int64_t min_ts = INT64_MAX;
    for (uint32_t i = 0; i < t->nev; i++)
        min_ts = t->ev[i].ts_ns < min_ts ? t->ev[i].ts_ns : min_ts;
    int has_clock = t->has_base || min_ts >= EPOCH_2000_NS;
    int64_t clock = t->has_base ? t->base_ns : 0;
    res->marker_shift = t->nmk && has_clock ? marker_shift(t, g, clock, offs) : 0;
    uint32_t n = match_markers(t, g, res->marker_shift, offs);
    res->markers_matched = n;
    if (n) {
        res->align = TORCH_ALIGN_STEPS;
        res->offset_ns = offs[n / 2];
    } else if (has_clock) {
        res->align = t->has_base ? TORCH_ALIGN_BASE_TIME : TORCH_ALIGN_EPOCH;
        res->offset_ns = clock;
    } else {
        res->align = TORCH_ALIGN_RUN_START;
        res->offset_ns = r->start_ns;
    }
    free(offs);
    return 0;
}

/* Where each trace thread's events go in the run (see the header). */
static void map_threads(struct tt *t, const struct target *g)
{
    uint32_t main = UINT32_MAX;
    for (uint32_t i = 0; i < t->nth; i++) /* the markers' thread, else the most operators */
        if (main == UINT32_MAX || t->th[i].markers > t->th[main].markers ||
            (t->th[i].markers == t->th[main].markers && t->th[i].ops > t->th[main].ops))
            main = i;
    for (uint32_t i = 0; i < t->nth; i++) {
        struct tt_thread *th = &t->th[i];
        int os_tid = th->tid_num && th->tid >= 0 && th->tid < TORCH_TRACE_TID_BASE;
        th->out_pid = g->pid;
        if (i == main && g->step_tid >= 0) {
            th->out_tid = g->step_tid;
        } else if (os_tid && th->pid_num && has_proc(&g->re, th->pid)) {
            th->out_pid = th->pid; /* Kineto: the OS's own pid and tid */
            th->out_tid = th->tid;
        } else if (i == main && os_tid && th->pid_num && th->pid == g->pid) {
            th->out_tid = th->tid;
        } else {
            th->out_tid = TORCH_TRACE_TID_BASE + i;
        }
    }
}

/* The run time of trace event e: moved by the offset of the matched marker
 * around it on its thread, else by the median. */
static int event_time(const struct tt *t, const struct tt_event *e, int64_t offset, int64_t *out)
{
    uint32_t lo = 0, hi = t->nmk;
    while (lo < hi) { /* the last marker starting at or before e */
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->mk[mid].ts_ns <= e->ts_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo) {
        const struct tt_marker *m = &t->mk[lo - 1];
        if (m->matched && m->thread == e->thread && e->ts_ns < m->end_ns)
            offset = m->offset_ns;
    }
    return __builtin_add_overflow(e->ts_ns, offset, out) ? -ERANGE : 0;
}

/* ---- storing --------------------------------------------------------------- */

struct out_thread {
    int64_t pid, tid;
    struct event *ev;
    uint32_t n, cap;
};

static int cmp_event(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
    return (x->value < y->value) - (x->value > y->value); /* the outer (longer) first */
}

/* The run's id of every trace name: an existing one (a second import, or a
 * name strobe's capture also uses), else a new one after the largest. */
static int name_ids(struct store *s, const char *run_id, const struct tt *t,
                    const struct run_events *e, uint32_t *ids)
{
    uint32_t next = e->nnames + 1;
    for (uint32_t i = 0; i < t->names.n; i++) {
        ids[i] = 0;
        for (uint32_t j = 0; j < e->nnames && !ids[i]; j++)
            if (e->names[j] && strcmp(e->names[j], t->names.s[i]) == 0)
                ids[i] = j + 1;
        if (ids[i])
            continue;
        ids[i] = next++;
        int rc = s->ops->event_name_insert(s, run_id, ids[i], t->names.s[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int store_blocks(struct store *s, const char *run_id, const struct out_thread *outs,
                        uint32_t n)
{
    struct event_block_writer w;
    int rc = event_block_writer_init(&w);
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = event_block_writer_store(&w, s, run_id, outs[i].pid, outs[i].tid, outs[i].ev,
                                      outs[i].n);
    event_block_writer_release(&w);
    return rc;
}

/* The trace's events as the run's, one array per run thread. */
static int place_events(struct tt *t, const struct target *g, const struct run_record *r,
                        struct out_thread *outs)
{
    struct torch_trace_result *res = t->res;
    int64_t run_end = r->end_ns > 0 ? r->end_ns : r->last_ns;
    res->step_min = UINT32_MAX;
    for (uint32_t i = 0; i < t->nev; i++) {
        const struct tt_event *e = &t->ev[i];
        struct out_thread *o = &outs[e->thread];
        int64_t ts;
        if (event_time(t, e, res->offset_ns, &ts) < 0) {
            res->bad++;
            continue;
        }
        if (array_grow((void **)&o->ev, &o->cap, o->n + 1, sizeof(*o->ev), 256) < 0)
            return -ENOMEM;
        uint32_t step = step_at(g, ts);
        /* the trace's name index for now: the run's ids are defined later,
         * inside the transaction */
        o->ev[o->n++] = (struct event){ts, e->dur_ns, e->name, step, STROBE_EV_COMPLETE};
        res->imported++;
        res->outside_run += ts < r->start_ns || (run_end > 0 && ts > run_end);
        res->step_min = step < res->step_min ? step : res->step_min;
        res->step_max = step > res->step_max ? step : res->step_max;
    }
    if (!res->imported)
        res->step_min = 0;
    return 0;
}

/* Whether the run already holds operators of a trace on the threads and over
 * the time these would go: importing the same trace twice would count every
 * operator twice (in show's table, the report and the trace). */
static int already_imported(const struct target *g, const struct out_thread *outs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!outs[i].n)
            continue;
        int64_t lo = outs[i].ev[0].ts_ns, hi = lo;
        for (uint32_t j = 0; j < outs[i].n; j++)
            hi = outs[i].ev[j].ts_ns > hi ? outs[i].ev[j].ts_ns : hi;
        for (uint32_t k = 0; k < g->re.nthreads; k++) {
            const struct thread_events *te = &g->re.threads[k];
            if (te->pid != outs[i].pid || te->tid != outs[i].tid)
                continue;
            for (uint32_t j = 0; j < te->n; j++) {
                const char *name = run_events_name(&g->re, te->ev[j].name);
                if (name && strncmp(name, "op:", 3) == 0 && te->ev[j].ts_ns >= lo &&
                    te->ev[j].ts_ns <= hi)
                    return 1;
            }
        }
    }
    return 0;
}

static int store_trace(struct store *s, struct run_record *r, struct tt *t, struct target *g)
{
    uint32_t *ids = malloc((t->names.n + 1) * sizeof(*ids));
    struct out_thread *outs = calloc(t->nth + 1, sizeof(*outs));
    int rc = ids && outs ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < t->nth; i++) {
        outs[i].pid = t->th[i].out_pid;
        outs[i].tid = t->th[i].out_tid;
    }
    if (rc == 0)
        rc = place_events(t, g, r, outs);
    for (uint32_t i = 0; rc == 0 && i < t->nth; i++)
        if (outs[i].n)
            qsort(outs[i].ev, outs[i].n, sizeof(*outs[i].ev), cmp_event);
    if (rc == 0 && already_imported(g, outs, t->nth))
        rc = -EEXIST;
    if (rc == 0)
        rc = s->ops->begin(s);
    if (rc == 0) {
        rc = name_ids(s, r->id, t, &g->re, ids);
        /* the events carry the trace's name indexes: now the run's ids */
        for (uint32_t i = 0; rc == 0 && i < t->nth; i++)
            for (uint32_t j = 0; j < outs[i].n; j++)
                outs[i].ev[j].name = ids[outs[i].ev[j].name];
        if (rc == 0 && !has_proc(&g->re, g->pid)) {
            struct process_record p = {g->pid, -1, "torch.profiler", NULL, -1, -1, -1, -1};
            rc = s->ops->process_upsert(s, r->id, &p);
        }
        if (rc == 0)
            rc = store_blocks(s, r->id, outs, t->nth);
        r->events += (int64_t)t->res->imported;
        if (rc == 0)
            rc = s->ops->run_update(s, r);
        if (rc == 0)
            rc = s->ops->commit(s);
        if (rc < 0) {
            s->ops->rollback(s);
            r->events -= (int64_t)t->res->imported;
        }
    }
    for (uint32_t i = 0; outs && i < t->nth; i++)
        free(outs[i].ev);
    free(outs);
    free(ids);
    return rc;
}

int torch_trace_import(struct store *s, struct run_record *r, const char *path, int64_t pid_hint,
                       struct torch_trace_result *res, struct strbuf *err)
{
    memset(res, 0, sizeof(*res));
    struct tt t;
    memset(&t, 0, sizeof(t));
    t.res = res;
    char *buf = NULL;
    size_t len = 0;
    int rc = input_read_file(path, TRACE_MAX_BYTES, 0, &buf, &len);
    if (rc < 0)
        strbuf_adds(err, rc == -EFBIG ? "larger than 2 GiB" : strerror(-rc));
    if (rc == 0)
        rc = parse_trace(&t, buf, len, err);
    free(buf);
    if (rc < 0) {
        tt_release(&t);
        return rc;
    }
    struct target g;
    memset(&g, 0, sizeof(g));
    rc = run_events_load(s, r->id, &g.re);
    if (rc == 0) {
        choose_target(&g, &t, pid_hint);
        res->pid = g.pid;
        rc = load_steps(&g);
    }
    if (rc == 0)
        rc = align(&t, &g, r);
    if (rc == 0) {
        map_threads(&t, &g);
        rc = store_trace(s, r, &t, &g);
        if (rc == -EEXIST)
            strbuf_addf(err,
                        "run %s already has these operators (steps %u-%u of process %lld): "
                        "imported before; nothing stored",
                        r->id, res->step_min, res->step_max, (long long)res->pid);
        else if (rc < 0 && rc != -ENOMEM)
            strbuf_adds(err, s->err.len ? s->err.buf : strerror(-rc));
    }
    if (rc == -ENOMEM)
        strbuf_adds(err, strerror(ENOMEM));
    free(g.steps);
    run_events_release(&g.re);
    tt_release(&t);
    return rc;
}

static const char *align_text(enum torch_trace_align a)
{
    switch (a) {
    case TORCH_ALIGN_STEPS:
        return "ProfilerStep markers";
    case TORCH_ALIGN_BASE_TIME:
        return "the trace's baseTimeNanoseconds";
    case TORCH_ALIGN_EPOCH:
        return "the trace's own clock (us since the epoch)";
    case TORCH_ALIGN_RUN_START:
        return "the run's start (the trace has no clock)";
    }
    return "?";
}

void torch_trace_summary(const struct torch_trace_result *res, const char *path,
                         const struct run_record *r, struct strbuf *out)
{
    strbuf_addf(out,
                "imported %llu events of '%s' (%s format) into run %s, steps %u-%u; aligned by ",
                (unsigned long long)res->imported, path, res->kineto ? "Kineto" : "legacy", r->id,
                res->step_min, res->step_max);
    if (res->align == TORCH_ALIGN_STEPS)
        strbuf_addf(out, "%llu of %llu ProfilerStep markers",
                    (unsigned long long)res->markers_matched, (unsigned long long)res->markers);
    if (res->align == TORCH_ALIGN_STEPS && res->marker_shift)
        strbuf_addf(out, " (ProfilerStep#N is step N%+d, as the trace's clock says)",
                    res->marker_shift);
    else
        strbuf_adds(out, align_text(res->align));
    strbuf_addf(out, "; %llu skipped, %llu not imported", (unsigned long long)res->bad,
                (unsigned long long)res->ignored);
}

void torch_trace_warning(const struct torch_trace_result *res, const char *path, struct strbuf *out)
{
    if (res->cut)
        strbuf_addf(out,
                    "'%s' is cut short: the %llu events before the cut imported, %llu "
                    "garbled ones skipped",
                    path, (unsigned long long)res->imported, (unsigned long long)res->bad);
    else if (res->bad)
        strbuf_addf(out, "'%s': %llu garbled events skipped, %llu imported", path,
                    (unsigned long long)res->bad, (unsigned long long)res->imported);
    else if (res->align == TORCH_ALIGN_RUN_START)
        strbuf_addf(out,
                    "'%s' has no clock and no ProfilerStep#N marker of a recorded step: "
                    "placed at the run's start, times are approximate",
                    path);
    else if (res->outside_run)
        strbuf_addf(out, "'%s': %llu of %llu events lie outside the run's time (aligned by %s)",
                    path, (unsigned long long)res->outside_run, (unsigned long long)res->imported,
                    align_text(res->align));
}
