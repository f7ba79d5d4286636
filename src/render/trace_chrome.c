/*
 * Chrome's trace-event JSON ({"traceEvents":[...]}, the format chrome://tracing,
 * Perfetto's UI and speedscope read): complete events ("X") for slices,
 * instants ("i"), counters ("C") and metadata ("M") naming the processes and
 * threads. Times are µs since the run's start with three decimals, so no ns
 * is lost. Slices, instants and counter points are written with hand-rolled
 * number formatting: printf would cost most of the time (docs/trace.md has
 * the figures); the rest goes through the JSON writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "render/trace.h"

/* Room for one event's fixed text and numbers, names excluded. */
#define EVENT_ROOM 192

struct chrome {
    struct trace *t; /* counts the counter points it reads */
    struct trace_sink *k;
    char **name_json;      /* name id -> the name as a JSON string, quotes included */
    char **py_json;        /* Python frame -> its text as a JSON string */
    struct json_writer jw; /* the document, on the sink's buffer; flushes keep its state */
};

static char *put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* ns as µs with three decimals: 1234567 -> 1234.567 */
static char *put_us(char *p, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        *p++ = '-';
    p = put_u64(p, a / 1000);
    unsigned frac = (unsigned)(a % 1000);
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    p[2] = (char)('0' + frac / 10 % 10);
    p[3] = (char)('0' + frac % 10);
    return p + 4;
}

/* A finite double, shortest of %.15g and %.17g that reads back the same;
 * integers (byte counts, most metrics) without printf. */
static char *put_double(char *p, double v)
{
    if (v == (double)(int64_t)v && v > -9e15 && v < 9e15)
        return put_i64(p, (int64_t)v);
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof(tmp), "%.17g", v);
    return put(p, tmp);
}

/* Room for n more bytes at the end of the buffer, after the separator, or
 * NULL. */
static char *reserve(struct chrome *c, size_t n)
{
    struct strbuf *o = &c->k->buf;
    jw_raw_begin(&c->jw);
    if (strbuf_grow(o, n) < 0)
        return NULL;
    return o->buf + o->len;
}

static int commit(struct chrome *c, char *end)
{
    struct strbuf *o = &c->k->buf;
    o->len = (size_t)(end - o->buf);
    o->buf[o->len] = '\0';
    return trace_sink_flush(c->k, 0);
}

/* A metadata event: {"ph":"M","name":what,"pid":P[,"tid":T],"args":{key:value}} */
static int meta(struct chrome *c, const char *what, int64_t pid, int64_t tid, const char *key,
                const char *str, int64_t num)
{
    struct json_writer *jw = &c->jw;
    jw_object_begin(jw);
    jw_kv_str(jw, "ph", "M");
    jw_kv_str(jw, "name", what);
    jw_kv_int(jw, "pid", pid);
    if (tid >= 0)
        jw_kv_int(jw, "tid", tid);
    jw_key(jw, "args");
    jw_object_begin(jw);
    if (str)
        jw_kv_str(jw, key, str);
    else
        jw_kv_int(jw, key, num);
    jw_end(jw);
    jw_end(jw);
    return jw_failed(jw);
}

static int write_metadata(struct chrome *c)
{
    const struct trace *t = c->t;
    int rc = 0;
    for (uint32_t i = 0; i < t->nprocs && rc == 0; i++) {
        const struct trace_proc *p = &t->procs[i];
        rc = meta(c, "process_name", p->pid, -1, "name", p->name, 0);
        if (rc == 0)
            rc = meta(c, "process_sort_index", p->pid, -1, "sort_index", NULL, p->sort);
        if (rc == 0 && t->nnodes > 1)
            rc = meta(c, "process_labels", p->pid, -1, "labels", t->nodes[p->node], 0);
    }
    for (uint32_t i = 0; i < t->nthreads && rc == 0; i++) {
        const struct trace_thread *th = &t->threads[i];
        rc = meta(c, "thread_name", th->pid, th->tid, "name", th->name, 0);
        if (rc == 0) /* the main thread first, then by tid */
            rc = meta(c, "thread_sort_index", th->pid, th->tid, "sort_index", NULL,
                      th->tid == th->pid ? 0 : th->tid);
    }
    for (uint32_t i = 0; i < t->npy_tracks && rc == 0; i++) {
        const struct trace_py_track *k = &t->py_tracks[i];
        int64_t tid = TRACE_PY_TID_BASE + k->tid;
        rc = meta(c, "thread_name", k->pid, tid, "name", k->name, 0);
        if (rc == 0) /* right after its thread */
            rc = meta(c, "thread_sort_index", k->pid, tid, "sort_index", NULL,
                      (k->tid == k->pid ? 0 : k->tid) + 1);
    }
    return rc;
}

static char *put_head(char *p, const char *ph, uint8_t cat, const char *name, int64_t pid,
                      int64_t tid)
{
    p = put(p, "{\"ph\":\"");
    p = put(p, ph);
    p = put(p, "\",\"cat\":\"");
    p = put(p, trace_cat_names[cat]);
    p = put(p, "\",\"name\":");
    p = put(p, name);
    p = put(p, ",\"pid\":");
    p = put_i64(p, pid);
    p = put(p, ",\"tid\":");
    return put_i64(p, tid);
}

static int write_thread(struct chrome *c, const struct trace_thread *th)
{
    const struct trace *t = c->t;
    for (uint32_t i = 0; i < th->nslices; i++) {
        const struct trace_slice *s = &th->slices[i];
        const char *name = c->name_json[s->name <= t->ev.nnames ? s->name : 0];
        char *p = reserve(c, EVENT_ROOM + strlen(name));
        if (!p)
            return -ENOMEM;
        p = put_head(p, "X", s->cat, name, th->pid, th->tid);
        p = put(p, ",\"ts\":");
        p = put_us(p, s->start_ns - t->origin_ns);
        p = put(p, ",\"dur\":");
        p = put_us(p, s->end_ns - s->start_ns);
        p = put(p, ",\"args\":{\"step\":");
        p = put_u64(p, s->step);
        p = put(p, s->open ? ",\"unfinished\":true}}" : "}}");
        int rc = commit(c, p);
        if (rc < 0)
            return rc;
    }
    for (uint32_t i = 0; i < th->ninstants; i++) {
        const struct trace_instant *in = &th->instants[i];
        const char *name = c->name_json[in->name <= t->ev.nnames ? in->name : 0];
        char *p = reserve(c, EVENT_ROOM + strlen(name));
        if (!p)
            return -ENOMEM;
        p = put_head(p, "i", in->cat, name, th->pid, th->tid);
        p = put(p, ",\"s\":\"t\",\"ts\":");
        p = put_us(p, in->ts_ns - t->origin_ns);
        p = put(p, ",\"args\":{\"step\":");
        p = put_u64(p, in->step);
        p = put(p, in->orphan_end ? ",\"span_end\":true}}" : "}}");
        int rc = commit(c, p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A Python track's slices; names are frame texts, each a JSON string. */
static int write_py_track(struct chrome *c, const struct trace_py_track *k)
{
    const struct trace *t = c->t;
    for (uint32_t i = 0; i < k->nslices; i++) {
        const struct trace_py_slice *s = &k->slices[i];
        const char *name = c->py_json[s->frame];
        char *p = reserve(c, EVENT_ROOM + strlen(name));
        if (!p)
            return -ENOMEM;
        p = put_head(p, "X", TRACE_CAT_PYTHON, name, k->pid, TRACE_PY_TID_BASE + k->tid);
        p = put(p, ",\"ts\":");
        p = put_us(p, s->start_ns - t->origin_ns);
        p = put(p, ",\"dur\":");
        p = put_us(p, s->end_ns - s->start_ns);
        p = put(p, ",\"args\":{\"depth\":");
        p = put_u64(p, s->depth);
        p = put(p, "}}");
        int rc = commit(c, p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

struct counter_out {
    struct chrome *c;
    const char *name_json;
    size_t name_len;
    int64_t pid;
};

static int write_counter_points(const struct point *pt, size_t n, void *arg)
{
    struct counter_out *o = arg;
    const struct trace *t = o->c->t;
    for (size_t i = 0; i < n; i++) {
        char *p = reserve(o->c, EVENT_ROOM + o->name_len);
        if (!p)
            return -ENOMEM;
        p = put(p, "{\"ph\":\"C\",\"name\":");
        p = put(p, o->name_json);
        p = put(p, ",\"pid\":");
        p = put_i64(p, o->pid);
        p = put(p, ",\"ts\":");
        p = put_us(p, pt[i].ts_ns - t->origin_ns);
        p = put(p, ",\"args\":{\"value\":");
        p = put_double(p, pt[i].value);
        p = put(p, "}}");
        int rc = commit(o->c, p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int write_counter(struct chrome *c, uint32_t ci)
{
    const struct trace_counter *k = &c->t->counters[ci];
    struct strbuf name;
    strbuf_init(&name);
    if (strbuf_add_json_str(&name, k->name) < 0)
        return -ENOMEM;
    struct counter_out o = {c, name.buf, name.len, c->t->procs[k->proc].pid};
    int rc = trace_counter_points(c->t, ci, write_counter_points, &o);
    strbuf_release(&name);
    return rc;
}

/* ns since the run's start as µs with three decimals, as key's value. */
static void kv_us(struct json_writer *jw, const char *key, const struct trace *t, int64_t ns)
{
    char num[40];
    *put_us(num, ns - t->origin_ns) = '\0';
    jw_key(jw, key);
    jw_raw(jw, num);
}

/* Findings: global instants ("s":"g", a line across every track) on the
 * first node's metrics process, with what the rule said as args. */
static int write_findings(struct chrome *c)
{
    const struct trace *t = c->t;
    struct json_writer *jw = &c->jw;
    int rc = 0;
    for (uint32_t i = 0; i < t->nfindings && rc == 0; i++) {
        const struct finding_record *f = &t->findings[t->finding_idx[i]];
        struct strbuf name;
        strbuf_init(&name);
        strbuf_addf(&name, "%s (%s)", f->rule ? f->rule : "", f->severity ? f->severity : "");
        jw_object_begin(jw);
        jw_kv_str(jw, "ph", "i");
        jw_kv_str(jw, "s", "g");
        jw_kv_str(jw, "cat", "finding");
        jw_kv_str(jw, "name", name.buf);
        strbuf_release(&name);
        jw_kv_int(jw, "pid", t->procs[0].pid);
        jw_kv_int(jw, "tid", 0);
        kv_us(jw, "ts", t, f->start_ns);
        jw_key(jw, "args");
        jw_object_begin(jw);
        jw_kv_str(jw, "rule", f->rule);
        jw_kv_str(jw, "severity", f->severity);
        jw_kv_str(jw, "scope", f->scope);
        kv_us(jw, "end_us", t, f->end_ns);
        jw_kv_str(jw, "evidence", f->evidence);
        jw_kv_str(jw, "steps", f->events);
        jw_kv_str(jw, "recommendation", f->recommendation);
        jw_end(jw);
        jw_end(jw);
        rc = jw_failed(jw);
        if (rc == 0)
            rc = trace_sink_flush(c->k, 0);
    }
    return rc;
}

/* The end of the event list, then what the run is, for readers of the file
 * (viewers ignore it). */
static int write_other_data(struct chrome *c)
{
    const struct trace *t = c->t;
    struct json_writer *jw = &c->jw;
    jw_space(jw, "\n");
    jw_end(jw);
    jw_kv_str(jw, "displayTimeUnit", "ns");
    jw_key(jw, "otherData");
    jw_object_begin(jw);
    jw_kv_str(jw, "run_id", t->run->id);
    jw_kv_str(jw, "run_name", t->run->name);
    jw_kv_int(jw, "start_ns", t->origin_ns);
    jw_kv_str(jw, "strobe_time_unit", "us since start_ns");
    if (t->from_ns != INT64_MIN) {
        jw_key(jw, "window_ns");
        jw_array_begin(jw);
        jw_int(jw, t->from_ns);
        jw_int(jw, t->to_ns);
        jw_end(jw);
    }
    jw_kv_uint(jw, "slices", t->slices);
    jw_kv_uint(jw, "instants", t->instants);
    jw_kv_uint(jw, "counter_points", t->points);
    jw_kv_uint(jw, "findings", t->nfindings);
    jw_kv_uint(jw, "python_samples", t->py_samples);
    jw_kv_uint(jw, "python_slices", t->py_slices);
    jw_end(jw);
    jw_end(jw);
    jw_space(jw, "\n");
    int rc = jw_failed(jw);
    return rc ? rc : trace_sink_flush(c->k, 0);
}

/* Each string of names[0..n) as a JSON string into *out. */
static int json_strings(char *const *names, uint32_t n, char ***out)
{
    if (!(*out = calloc(n + 1, sizeof(**out))))
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        struct strbuf b;
        strbuf_init(&b);
        if (strbuf_add_json_str(&b, names[i]) < 0)
            return -ENOMEM;
        (*out)[i] = strbuf_detach(&b);
    }
    return 0;
}

static int make_names(struct chrome *c)
{
    const struct trace *t = c->t;
    if (json_strings(t->py_frames, t->npy_frames, &c->py_json) < 0)
        return -ENOMEM;
    c->name_json = calloc(t->ev.nnames + 1, sizeof(*c->name_json));
    if (!c->name_json)
        return -ENOMEM;
    for (uint32_t id = 0; id <= t->ev.nnames; id++) {
        struct strbuf b;
        strbuf_init(&b);
        if (strbuf_add_json_str(&b, trace_name(t, id)) < 0)
            return -ENOMEM;
        c->name_json[id] = strbuf_detach(&b);
    }
    return 0;
}

int trace_write_chrome(struct trace *t, struct trace_sink *k)
{
    struct chrome c = {.t = t, .k = k};
    int rc = make_names(&c);
    jw_init(&c.jw, &k->buf);
    jw_object_begin(&c.jw);
    jw_key(&c.jw, "traceEvents");
    jw_array_begin(&c.jw); /* an event a line */
    jw_lines(&c.jw, "\n", "\n");
    if (rc == 0)
        rc = jw_failed(&c.jw);
    if (rc == 0)
        rc = write_metadata(&c);
    for (uint32_t i = 0; i < t->nthreads && rc == 0; i++)
        rc = write_thread(&c, &t->threads[i]);
    for (uint32_t i = 0; i < t->npy_tracks && rc == 0; i++)
        rc = write_py_track(&c, &t->py_tracks[i]);
    for (uint32_t i = 0; i < t->ncounters && rc == 0; i++)
        rc = write_counter(&c, i);
    if (rc == 0)
        rc = write_findings(&c);
    if (rc == 0)
        rc = write_other_data(&c);
    if (c.py_json)
        for (uint32_t i = 0; i < t->npy_frames; i++)
            free(c.py_json[i]);
    free(c.py_json);
    if (c.name_json)
        for (uint32_t id = 0; id <= t->ev.nnames; id++)
            free(c.name_json[id]);
    free(c.name_json);
    return rc;
}
