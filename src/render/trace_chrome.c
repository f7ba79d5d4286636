/*
 * Chrome's trace-event JSON ({"traceEvents":[...]}, the format chrome://tracing,
 * Perfetto's UI and speedscope read): complete events ("X") for slices,
 * instants ("i"), counters ("C") and metadata ("M") naming the processes and
 * threads. Times are µs since the run's start with three decimals, so no ns
 * is lost. Events are written with hand-rolled number formatting: printf
 * would cost most of the time (docs/trace.md has the figures).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render/trace.h"

/* Room for one event's fixed text and numbers, names excluded. */
#define EVENT_ROOM 192

struct chrome {
    struct trace *t; /* counts the counter points it reads */
    struct trace_sink *k;
    char **name_json; /* name id -> the name as a JSON string, quotes included */
    int first;        /* no event written yet: no comma before the next */
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

/* The comma and newline before an event. */
static int sep(struct chrome *c)
{
    int rc = strbuf_adds(&c->k->buf, c->first ? "\n" : ",\n");
    c->first = 0;
    return rc;
}

/* Room for n more bytes at the end of the buffer, after the separator, or
 * NULL. */
static char *reserve(struct chrome *c, size_t n)
{
    struct strbuf *o = &c->k->buf;
    if (sep(c) < 0 || strbuf_grow(o, n) < 0)
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
    struct strbuf *o = &c->k->buf;
    if (sep(c) < 0)
        return -ENOMEM;
    strbuf_addf(o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64, what, pid);
    if (tid >= 0)
        strbuf_addf(o, ",\"tid\":%" PRId64, tid);
    strbuf_addf(o, ",\"args\":{\"%s\":", key);
    int rc = str ? strbuf_add_json_str(o, str) : strbuf_addf(o, "%" PRId64, num);
    return rc ? rc : strbuf_adds(o, "}}");
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

/* Findings: global instants ("s":"g", a line across every track) on the
 * first node's metrics process, with what the rule said as args. */
static int write_findings(struct chrome *c)
{
    const struct trace *t = c->t;
    struct strbuf *o = &c->k->buf;
    int rc = 0;
    for (uint32_t i = 0; i < t->nfindings && rc == 0; i++) {
        const struct finding_record *f = &t->findings[t->finding_idx[i]];
        if (sep(c) < 0)
            return -ENOMEM;
        strbuf_adds(o, "{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"finding\",\"name\":");
        struct strbuf name;
        strbuf_init(&name);
        strbuf_addf(&name, "%s (%s)", f->rule ? f->rule : "", f->severity ? f->severity : "");
        strbuf_add_json_str(o, name.buf);
        strbuf_release(&name);
        char num[40];
        strbuf_addf(o, ",\"pid\":%" PRId64 ",\"tid\":0,\"ts\":", t->procs[0].pid);
        *put_us(num, f->start_ns - t->origin_ns) = '\0';
        strbuf_adds(o, num);
        strbuf_adds(o, ",\"args\":{\"rule\":");
        strbuf_add_json_str(o, f->rule);
        strbuf_adds(o, ",\"severity\":");
        strbuf_add_json_str(o, f->severity);
        strbuf_adds(o, ",\"scope\":");
        strbuf_add_json_str(o, f->scope);
        *put_us(num, f->end_ns - t->origin_ns) = '\0';
        strbuf_addf(o, ",\"end_us\":%s,\"evidence\":", num);
        strbuf_add_json_str(o, f->evidence);
        strbuf_adds(o, ",\"steps\":");
        strbuf_add_json_str(o, f->events);
        strbuf_adds(o, ",\"recommendation\":");
        strbuf_add_json_str(o, f->recommendation);
        rc = strbuf_adds(o, "}}");
        if (rc == 0)
            rc = trace_sink_flush(c->k, 0);
    }
    return rc;
}

/* What the run is, for readers of the file (viewers ignore it). */
static int write_other_data(struct chrome *c)
{
    const struct trace *t = c->t;
    struct strbuf *o = &c->k->buf;
    strbuf_adds(o, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"run_id\":");
    strbuf_add_json_str(o, t->run->id);
    strbuf_adds(o, ",\"run_name\":");
    strbuf_add_json_str(o, t->run->name);
    strbuf_addf(o, ",\"start_ns\":%" PRId64 ",\"strobe_time_unit\":\"us since start_ns\"",
                t->origin_ns);
    if (t->from_ns != INT64_MIN)
        strbuf_addf(o, ",\"window_ns\":[%" PRId64 ",%" PRId64 "]", t->from_ns, t->to_ns);
    strbuf_addf(o,
                ",\"slices\":%" PRIu64 ",\"instants\":%" PRIu64 ",\"counter_points\":%" PRIu64
                ",\"findings\":%" PRIu32 "}}\n",
                t->slices, t->instants, t->points, t->nfindings);
    return trace_sink_flush(c->k, 0);
}

static int make_names(struct chrome *c)
{
    const struct trace *t = c->t;
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
    struct chrome c = {t, k, NULL, 1};
    int rc = make_names(&c);
    if (rc == 0)
        rc = strbuf_adds(&k->buf, "{\"traceEvents\":[");
    if (rc == 0)
        rc = write_metadata(&c);
    for (uint32_t i = 0; i < t->nthreads && rc == 0; i++)
        rc = write_thread(&c, &t->threads[i]);
    for (uint32_t i = 0; i < t->ncounters && rc == 0; i++)
        rc = write_counter(&c, i);
    if (rc == 0)
        rc = write_findings(&c);
    if (rc == 0)
        rc = write_other_data(&c);
    if (c.name_json)
        for (uint32_t id = 0; id <= t->ev.nnames; id++)
            free(c.name_json[id]);
    free(c.name_json);
    return rc;
}
