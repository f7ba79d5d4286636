/*
 * strobe export --format sagemaker: a stored run written out in SageMaker
 * Debugger's profiler layout (docs/import.md): the inverse of sagemaker.c's
 * mapping, for the metrics SageMaker has, and every framework event.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analyze/steps.h"
#include "common/array.h"
#include "common/json_writer.h"
#include "common/metrics.h"
#include "common/label.h"
#include "common/strlist.h"
#include "import/json.h"
#include "import/sagemaker.h"
#include "import/sagemaker_format.h"
#include "store/points.h"

struct ex_series {
    int64_t id;
    char *name;
    char *labels; /* without node= */
    char *meta;
    uint32_t node;
    int out; /* index in outs, or -1 */
};

/* A SageMaker metric identity (Type, Name, Dimension) of one node. */
struct ex_out {
    char *type, *name, *dim;
};

struct ex_line {
    int64_t ts_ns;
    double value;
    uint32_t out;
};

struct ex_ctx {
    struct store *s;
    const struct run_record *r;
    const char *dir;
    struct strbuf *err;
    struct sagemaker_export_counts *c;
    char **nodes;
    uint32_t nnodes, nodes_cap;
    char *default_node;
    struct ex_series *series;
    uint32_t nseries, series_cap;
    struct ex_out *outs;
    uint32_t nouts, outs_cap;
};

static int mkdir_p(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return -ENOMEM;
    int rc = 0;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q)
            continue;
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0777) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *q = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

static int node_id(struct ex_ctx *x, const char *id, uint32_t *out)
{
    for (uint32_t i = 0; i < x->nnodes; i++)
        if (strcmp(x->nodes[i], id) == 0) {
            *out = i;
            return 0;
        }
    if (array_grow((void **)&x->nodes, &x->nodes_cap, x->nnodes + 1, sizeof(*x->nodes), 8) < 0 ||
        !(x->nodes[x->nnodes] = strdup(id)))
        return -ENOMEM;
    /* a node id goes into file names */
    for (char *p = x->nodes[x->nnodes]; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            *p = '_';
    *out = x->nnodes++;
    return 0;
}

/* labels without node=, and the node (default when none) */
static int split_node(struct ex_ctx *x, const char *labels, char **rest, uint32_t *node)
{
    struct strbuf o, escaped, id;
    strbuf_init(&o);
    strbuf_init(&escaped);
    strbuf_init(&id);
    int rc;
    if (labels_take(labels, "node", &o, &escaped) && escaped.len) {
        label_unescape(&id, escaped.buf, escaped.len);
        rc = id.err ? id.err : node_id(x, id.buf, node);
    } else {
        rc = node_id(x, x->default_node, node);
    }
    strbuf_release(&escaped);
    strbuf_release(&id);
    *rest = strbuf_detach(&o);
    return *rest ? rc : -ENOMEM;
}

static int collect_series(const struct series_record *sr, void *arg)
{
    struct ex_ctx *x = arg;
    if (array_grow((void **)&x->series, &x->series_cap, x->nseries + 1, sizeof(*x->series), 64) < 0)
        return -ENOMEM;
    struct ex_series *e = &x->series[x->nseries];
    memset(e, 0, sizeof(*e));
    e->id = sr->id;
    e->out = -1;
    e->name = strdup(sr->name);
    e->meta = sr->meta ? strdup(sr->meta) : NULL;
    int rc = split_node(x, sr->labels, &e->labels, &e->node);
    if (rc < 0 || !e->name || (sr->meta && !e->meta)) {
        free(e->name);
        free(e->labels);
        free(e->meta);
        return rc < 0 ? rc : -ENOMEM;
    }
    x->nseries++;
    return 0;
}

static int add_out(struct ex_ctx *x, const char *type, const char *name, const char *dim)
{
    if (array_grow((void **)&x->outs, &x->outs_cap, x->nouts + 1, sizeof(*x->outs), 64) < 0)
        return -ENOMEM;
    struct ex_out *o = &x->outs[x->nouts];
    o->type = strdup(type);
    o->name = strdup(name);
    o->dim = strdup(dim);
    if (!o->type || !o->name || !o->dim) {
        free(o->type);
        free(o->name);
        free(o->dim);
        return -ENOMEM;
    }
    return (int)x->nouts++;
}

static const struct ex_series *find_series(const struct ex_ctx *x, uint32_t node, const char *name,
                                           const char *labels_prefix)
{
    for (uint32_t i = 0; i < x->nseries; i++) {
        const struct ex_series *e = &x->series[i];
        if (e->node == node && strcmp(e->name, name) == 0 &&
            strncmp(e->labels, labels_prefix, strlen(labels_prefix)) == 0)
            return e;
    }
    return NULL;
}

/* The names an imported series came with, kept in its meta ({"Type",
 * "Name", "Dimension"}); -1 when it has none. */
static int out_from_meta(struct ex_ctx *x, const struct ex_series *e)
{
    struct json_doc doc;
    json_doc_init(&doc);
    struct json *v = NULL;
    int rc = -1;
    if (e->meta && json_parse(&doc, e->meta, strlen(e->meta), &v) == 0 &&
        json_str(json_get(v, "Type")) && json_str(json_get(v, "Name")) &&
        json_str(json_get(v, "Dimension")))
        rc = add_out(x, json_str(json_get(v, "Type")), json_str(json_get(v, "Name")),
                     json_str(json_get(v, "Dimension")));
    json_doc_release(&doc);
    return rc;
}

/* The SageMaker identity of a series, the inverse of the import's mapping;
 * -1 when SageMaker has no such metric. */
static int map_series(struct ex_ctx *x, const struct ex_series *e)
{
    char name[64];
    long i;
    if (strcmp(e->name, metric_name(METRIC_CPU_UTIL)) == 0 &&
        sscanf(e->labels, "core=%ld", &i) == 1) {
        snprintf(name, sizeof(name), "cpu%ld", i);
        return add_out(x, "cpu", name, "CPUUtilization");
    }
    if (strcmp(e->name, metric_name(METRIC_CPU_IOWAIT)) == 0) {
        if (sscanf(e->labels, "core=%ld", &i) == 1) {
            snprintf(name, sizeof(name), "cpu%ld", i);
            return add_out(x, "cpu", name, "I/OWaitPercentage");
        }
        /* the whole host's, where the cores' are not there to give it */
        if (!e->labels[0] && !find_series(x, e->node, metric_name(METRIC_CPU_IOWAIT), "core="))
            return add_out(x, "cpu", "cpu", "I/OWaitPercentage");
        return -1;
    }
    if ((strcmp(e->name, metric_name(METRIC_GPU_UTIL)) == 0 ||
         strcmp(e->name, metric_name(METRIC_GPU_MEM_UTIL)) == 0) &&
        sscanf(e->labels, "gpu=%ld", &i) == 1) {
        snprintf(name, sizeof(name), "gpu%ld", i);
        return add_out(x, "gpu", name,
                       strcmp(e->name, metric_name(METRIC_GPU_UTIL)) == 0 ? "GPUUtilization"
                                                                          : "GPUMemoryUtilization");
    }
    if (strcmp(e->name, metric_name(METRIC_MEM_USED_PCT)) == 0 && !e->labels[0])
        return add_out(x, "memory", "MemoryUsedPercent", "MemoryUsedPercent");
    int rc = out_from_meta(x, e);
    if (rc != -1 || strncmp(e->name, "net.", 4) == 0)
        return rc; /* an imported network series; a recording's interfaces have no equivalent */
    if (metric_in_family(e->name, METRIC_SAGEMAKER)) {
        /* else from its own name */
        const char *rest = e->name + metric_family_prefix_len(METRIC_SAGEMAKER);
        const char *dot = strchr(rest, '.');
        char type[64];
        snprintf(type, sizeof(type), "%.*s", dot ? (int)(dot - rest) : (int)strlen(rest), rest);
        const char *nm = strncmp(e->labels, "name=", 5) == 0 ? e->labels + 5 : "";
        return add_out(x, type, nm, dot ? dot + 1 : "");
    }
    return -1;
}

/* A finite double in its shortest round-trip form, as strbuf_add_json_num()
 * writes it, but searching from 15 digits: every double that round-trips in
 * fewer prints the same at %.15g (DBL_DIG), and the values of a metric file
 * mostly need 15 to 17 (searching from 6 took half of an export's time). */
static void add_value(struct json_writer *jw, double v)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        jw_rawf(jw, "%.0f", v);
        return;
    }
    char tmp[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    jw_raw(jw, tmp);
}

/* "1700000130.5": seconds with as many decimals as the ns need */
static void add_seconds(struct json_writer *jw, int64_t ns)
{
    int64_t s = ns / 1000000000, f = ns % 1000000000;
    if (f < 0) {
        s--;
        f += 1000000000;
    }
    char frac[16];
    snprintf(frac, sizeof(frac), "%09" PRId64, f);
    size_t n = 9;
    while (n > 1 && frac[n - 1] == '0')
        n--;
    frac[n] = '\0';
    jw_rawf(jw, "%" PRId64 ".%s", s, frac);
}

/* microseconds with up to three decimals */
static void add_us(struct json_writer *jw, int64_t ns)
{
    int64_t us = ns / 1000, f = ns % 1000;
    if (f < 0) {
        us--;
        f += 1000;
    }
    if (!f) {
        jw_int(jw, us);
        return;
    }
    char frac[8];
    snprintf(frac, sizeof(frac), "%03" PRId64, f);
    size_t n = 3;
    while (n > 1 && frac[n - 1] == '0')
        n--;
    frac[n] = '\0';
    jw_rawf(jw, "%" PRId64 ".%s", us, frac);
}

static void hour_dir(int64_t s, char out[16])
{
    time_t t = (time_t)s;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, 16, "%Y%m%d%H", &tm) == 0)
        snprintf(out, 16, "0000000000");
}

static int write_file(struct ex_ctx *x, const char *path, const struct strbuf *data)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        strbuf_addf(x->err, "cannot write '%s': %s", path, strerror(errno));
        return -errno;
    }
    int rc = strbuf_write(data, f);
    if (fclose(f) != 0 || rc < 0) {
        errno = rc < 0 ? -rc : errno;
        strbuf_addf(x->err, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -EIO;
    }
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const struct ex_line *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
    return (x->out > y->out) - (x->out < y->out);
}

static int push_line(struct ex_line **v, uint32_t *n, uint32_t *cap, int64_t ts, double value,
                     uint32_t out)
{
    if (array_grow((void **)v, cap, *n + 1, sizeof(**v), 4096) < 0)
        return -ENOMEM;
    (*v)[(*n)++] = (struct ex_line){ts, value, out};
    return 0;
}

/* One node's system metric lines, one file per minute. */
static int write_system_node(struct ex_ctx *x, uint32_t node, struct ex_line *v, uint32_t n)
{
    qsort(v, n, sizeof(*v), cmp_line);
    struct strbuf data, path;
    strbuf_init(&data);
    strbuf_init(&path);
    int rc = 0;
    int64_t minute = 0;
    for (uint32_t i = 0; i <= n && rc == 0; i++) {
        int64_t m = 0;
        if (i < n) {
            int64_t s = v[i].ts_ns / 1000000000 - (v[i].ts_ns % 1000000000 < 0);
            m = s - ((s % 60) + 60) % 60;
        }
        if (data.len && (i == n || m != minute)) {
            char hour[16];
            hour_dir(minute, hour);
            strbuf_reset(&path);
            strbuf_addf(&path, "%s/system/incremental/%s", x->dir, hour);
            if ((rc = mkdir_p(path.buf)) < 0) {
                strbuf_addf(x->err, "cannot create '%s': %s", path.buf, strerror(-rc));
                break;
            }
            strbuf_addf(&path, "/%" PRId64 ".%s.json", minute, x->nodes[node]);
            if ((rc = write_file(x, path.buf, &data)) < 0)
                break;
            x->c->system_files++;
            strbuf_reset(&data);
        }
        if (i == n)
            break;
        minute = m;
        const struct ex_out *o = &x->outs[v[i].out];
        struct json_writer jw; /* a line of JSON */
        jw_init(&jw, &data);
        jw_object_begin(&jw);
        jw_kv_str(&jw, "Type", o->type);
        jw_kv_str(&jw, "Name", o->name);
        jw_kv_str(&jw, "Dimension", o->dim);
        jw_key(&jw, "Value");
        add_value(&jw, v[i].value);
        jw_kv_str(&jw, "NodeId", x->nodes[node]);
        jw_key(&jw, "Timestamp");
        add_seconds(&jw, v[i].ts_ns);
        jw_end(&jw);
        jw_space(&jw, "\n");
        x->c->lines++;
    }
    strbuf_release(&data);
    strbuf_release(&path);
    return rc;
}

/* mem.used_pct from mem.used_bytes / mem.total_bytes at the same times, for
 * a node that has no mem.used_pct (a strobe recording). */
static int memory_pct(struct ex_ctx *x, uint32_t node, struct ex_line **v, uint32_t *n,
                      uint32_t *cap)
{
    if (find_series(x, node, metric_name(METRIC_MEM_USED_PCT), ""))
        return 0;
    const struct ex_series *used = NULL, *total = NULL;
    for (uint32_t i = 0; i < x->nseries; i++) {
        const struct ex_series *e = &x->series[i];
        if (e->node == node && !e->labels[0] &&
            strcmp(e->name, metric_name(METRIC_MEM_USED_BYTES)) == 0)
            used = e;
        if (e->node == node && !e->labels[0] &&
            strcmp(e->name, metric_name(METRIC_MEM_TOTAL_BYTES)) == 0)
            total = e;
    }
    if (!used || !total)
        return 0;
    int out = add_out(x, "memory", "MemoryUsedPercent", "MemoryUsedPercent");
    if (out < 0)
        return out;
    struct point_buf a, b;
    point_buf_init(&a);
    point_buf_init(&b);
    int rc = store_read_points(x->s, used->id, &a);
    if (rc == 0)
        rc = store_read_points(x->s, total->id, &b);
    for (size_t i = 0, j = 0; rc == 0 && i < a.n && j < b.n;) {
        if (a.p[i].ts_ns < b.p[j].ts_ns)
            i++;
        else if (a.p[i].ts_ns > b.p[j].ts_ns)
            j++;
        else {
            double pct = 100.0 * a.p[i].value / b.p[j].value;
            if (isfinite(pct))
                rc = push_line(v, n, cap, a.p[i].ts_ns, pct, (uint32_t)out);
            i++;
            j++;
        }
    }
    point_buf_release(&a);
    point_buf_release(&b);
    return rc;
}

static int export_system(struct ex_ctx *x)
{
    int rc = 0;
    for (uint32_t i = 0; i < x->nseries && rc == 0; i++) {
        x->series[i].out = map_series(x, &x->series[i]);
        if (x->series[i].out == -ENOMEM)
            rc = -ENOMEM;
        else if (x->series[i].out < 0)
            x->c->series_left_out++;
    }
    for (uint32_t node = 0; node < x->nnodes && rc == 0; node++) {
        struct ex_line *v = NULL;
        uint32_t n = 0, cap = 0;
        for (uint32_t i = 0; i < x->nseries && rc == 0; i++) {
            const struct ex_series *e = &x->series[i];
            if (e->node != node || e->out < 0)
                continue;
            struct point_buf pb;
            point_buf_init(&pb);
            rc = store_read_points(x->s, e->id, &pb);
            for (size_t j = 0; rc == 0 && j < pb.n; j++) {
                if (!isfinite(pb.p[j].value)) { /* JSON has no NaN or infinity */
                    x->c->skipped_points++;
                    continue;
                }
                rc = push_line(&v, &n, &cap, pb.p[j].ts_ns, pb.p[j].value, (uint32_t)e->out);
            }
            point_buf_release(&pb);
        }
        if (rc == 0)
            rc = memory_pct(x, node, &v, &n, &cap);
        if (rc == 0 && n)
            rc = write_system_node(x, node, v, n);
        free(v);
    }
    if (rc < 0 && !x->err->len)
        strbuf_addf(x->err, "%s", rc == -ENOMEM ? strerror(ENOMEM) : x->s->err.buf);
    return rc;
}

/* ---- framework events --------------------------------------------------------- */

/*
 * The layout smdebug's writer has (import/sagemaker.c says how it is read
 * back): a file per process per hour, named <end-us>_<N>-<node>_... with N
 * the process's rank, else its pid; in it the trace "pid" is a training
 * phase ("Step:ModeKeys.EVAL", "Forward", ...) and each event carries the OS
 * pid in args.pid.
 */
struct ex_ref {
    uint32_t writer; /* the process whose file it goes to */
    int64_t hour;
    uint32_t thread;
    uint32_t index;
};

static int cmp_ref(const void *a, const void *b)
{
    const struct ex_ref *x = a, *y = b;
    if (x->writer != y->writer)
        return (x->writer > y->writer) - (x->writer < y->writer);
    if (x->hour != y->hour)
        return (x->hour > y->hour) - (x->hour < y->hour);
    if (x->thread != y->thread)
        return (x->thread > y->thread) - (x->thread < y->thread);
    return (x->index > y->index) - (x->index < y->index);
}

static int64_t ev_end(const struct event *e)
{
    if (e->kind != STROBE_EV_COMPLETE || e->value <= 0)
        return e->ts_ns;
    int64_t end;
    return __builtin_add_overflow(e->ts_ns, e->value, &end) ? INT64_MAX : end;
}

/* The node of a process: the "@node" an import of several nodes gave its
 * comm, else the default one. comm_len: the part before it. */
static uint32_t proc_node(struct ex_ctx *x, const struct proc_info *p, size_t *comm_len)
{
    *comm_len = strlen(p->comm);
    const char *node = proc_import_node(p->comm, x->r->host, comm_len);
    uint32_t n = 0;
    node_id(x, node ? node : x->default_node, &n);
    return n;
}

/* smdebug's names for the modes of Step:ModeKeys.*, by enum step_mode */
static const char *const step_phases[STEP_MODE_COUNT] = {
    "Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL", "Step:ModeKeys.PREDICT", "Step:ModeKeys.GLOBAL"};

/* The training phase smdebug files an event under: the step's mode, the
 * phases its PyTorch hook and data loader name, "strobe" for the rest. */
static const char *phase_of(const char *name, int kind)
{
    static const struct {
        const char *name, *phase;
    } phases[] = {
        {"data", "DataLoaderIter"},
        {"dataloader.worker", "DataLoaderWorker"},
        {"forward", "Forward"},
        {"backward", "Backward(post-forward)"},
    };
    if (kind != STROBE_EV_COMPLETE && kind != STROBE_EV_SPAN_BEGIN && kind != STROBE_EV_SPAN_END)
        return "strobe";
    int mode = steps_mode_of(name);
    if (mode >= 0 && kind == STROBE_EV_COMPLETE)
        return step_phases[mode];
    for (size_t i = 0; i < ARRAY_SIZE(phases); i++)
        if (strcmp(name, phases[i].name) == 0)
            return phases[i].phase;
    return "strobe";
}

/* The phases of one file, numbered from 1 as they first appear (0 holds
 * the start time), each announced by a process_name event there. */
struct ex_phases {
    const char *name[16];
    uint32_t n;
};

static uint32_t phase_pid(struct ex_phases *ps, const char *phase, struct json_writer *jw)
{
    for (uint32_t i = 0; i < ps->n; i++)
        if (ps->name[i] == phase)
            return i + 1;
    if (ps->n == ARRAY_SIZE(ps->name))
        return ps->n; /* cannot happen: phase_of has fewer */
    ps->name[ps->n++] = phase;
    jw_object_begin(jw);
    jw_kv_str(jw, "name", "process_name");
    jw_kv_str(jw, "ph", "M");
    jw_kv_uint(jw, "pid", ps->n);
    jw_key(jw, "args");
    jw_object_begin(jw);
    jw_kv_str(jw, "name", phase);
    jw_end(jw);
    jw_end(jw);
    return ps->n;
}

static void trace_event(struct json_writer *jw, const struct run_events *e, const struct event *ev,
                        int64_t pid, int64_t tid, int64_t base_ns, struct ex_phases *ps,
                        struct sagemaker_export_counts *c)
{
    const char *name = run_events_name(e, ev->name);
    static const char ph[] = {
        [STROBE_EV_SPAN_BEGIN] = 'B', [STROBE_EV_SPAN_END] = 'E', [STROBE_EV_COMPLETE] = 'X',
        [STROBE_EV_INSTANT] = 'i',    [STROBE_EV_STEP] = 'i',     [STROBE_EV_COUNTER] = 'C'};
    char kind = ev->kind < sizeof(ph) ? ph[ev->kind] : 0;
    if (!kind)
        return;
    double value = 0;
    if (ev->kind == STROBE_EV_COUNTER) {
        memcpy(&value, &ev->value, sizeof(value));
        if (!isfinite(value)) {
            c->skipped_points++;
            return;
        }
    }
    const char *phase = phase_of(name, ev->kind);
    uint32_t phase_id = phase_pid(ps, phase, jw);
    int is_step = strncmp(phase, "Step:", 5) == 0;
    const char ph_name[2] = {kind, '\0'};
    jw_object_begin(jw);
    jw_kv_str(jw, "name", is_step ? phase : ev->kind == STROBE_EV_STEP ? "strobe.step" : name);
    jw_kv_str(jw, "ph", ph_name);
    /* base_ns is at most ts_ns; clamped for a run spanning more than int64 */
    uint64_t rel = (uint64_t)ev->ts_ns - (uint64_t)base_ns;
    jw_key(jw, "ts");
    add_us(jw, rel > INT64_MAX ? INT64_MAX : (int64_t)rel);
    if (ev->kind == STROBE_EV_COMPLETE) {
        jw_key(jw, "dur");
        add_us(jw, ev->value > 0 ? ev->value : 0);
    }
    if (kind == 'i')
        jw_kv_str(jw, "s", "t");
    jw_kv_uint(jw, "pid", phase_id);
    jw_kv_int(jw, "tid", tid);
    jw_key(jw, "args");
    jw_object_begin(jw);
    if (ev->kind == STROBE_EV_COUNTER) { /* every numeric arg is a counter */
        jw_key(jw, "value");
        add_value(jw, value);
    } else {
        jw_kv_int(jw, "pid", pid);
        if (is_step)
            jw_kv_uint(jw, "step_num", ev->step);
        else if (ev->kind == STROBE_EV_STEP)
            jw_kv_int(jw, "step_num", ev->value);
    }
    jw_end(jw);
    jw_end(jw);
    c->steps += is_step;
    c->events++;
}

/* What strobe knows of a process and smdebug does not write (its comm,
 * parent, rank, worker id): a metadata event smdebug's readers pass over. */
static void process_meta(struct json_writer *jw, const struct proc_info *p, size_t comm_len)
{
    jw_object_begin(jw);
    jw_kv_str(jw, "name", "strobe.process");
    jw_kv_str(jw, "ph", "M");
    jw_kv_int(jw, "pid", 0);
    jw_key(jw, "args");
    jw_object_begin(jw);
    jw_kv_int(jw, "pid", p->pid);
    char comm[64];
    snprintf(comm, sizeof(comm), "%.*s", (int)comm_len, p->comm);
    if (*comm)
        jw_kv_str(jw, "name", comm);
    const int64_t *fields[] = {&p->ppid, &p->rank, &p->local_rank, &p->world_size, &p->worker_id};
    static const char *const keys[] = {"ppid", "rank", "local_rank", "world_size", "worker_id"};
    for (size_t k = 0; k < 5; k++)
        if (*fields[k] >= 0)
            jw_kv_int(jw, keys[k], *fields[k]);
    jw_end(jw);
    jw_end(jw);
}

/* Where the events of each thread go. */
struct ex_threads {
    const uint32_t *node;   /* by thread: its node */
    const uint32_t *writer; /* by thread: its process's index, nprocs + thread without one */
    const size_t *comm_len; /* by process */
};

/* N of a writer's file names: its rank, else (a data-loader worker, or no
 * rank) its pid, as smdebug's get_node_id. */
static int64_t writer_prefix(const struct run_events *e, uint32_t writer, int64_t pid)
{
    if (writer >= e->nprocs)
        return pid;
    const struct proc_info *p = &e->procs[writer];
    return p->rank >= 0 && p->worker_id < 0 ? p->rank : p->pid;
}

/* One writer's events of one hour, refs[a..b), as one file. */
static int write_trace_file(struct ex_ctx *x, const struct run_events *e,
                            const struct ex_threads *th, uint32_t node, const struct ex_ref *refs,
                            uint32_t a, uint32_t b, struct strbuf *data, struct strbuf *path)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t i = a; i < b; i++) {
        const struct event *ev = &e->threads[refs[i].thread].ev[refs[i].index];
        if (ev->ts_ns < lo)
            lo = ev->ts_ns;
        if (ev_end(ev) > hi)
            hi = ev_end(ev);
    }
    /* a writer's first file starts at the run's start, as SageMaker's
     * profiler starts its timeline when the job starts */
    if ((a == 0 || refs[a - 1].writer != refs[a].writer) && x->r->start_ns > 0 &&
        x->r->start_ns < lo)
        lo = x->r->start_ns;
    int64_t base_us = lo / 1000 - (lo % 1000 < 0);
    int64_t end_us = hi / 1000 + (hi % 1000 > 0);
    uint32_t w = refs[a].writer;
    const struct thread_events *t0 = &e->threads[refs[a].thread];
    strbuf_reset(data);
    struct json_writer jw;
    jw_init(&jw, data);
    jw_array_begin(&jw); /* an event a line */
    jw_lines(&jw, "\n", "\n");
    jw_object_begin(&jw);
    jw_kv_str(&jw, "name", "process_name");
    jw_kv_str(&jw, "ph", "M");
    jw_kv_int(&jw, "pid", 0);
    jw_key(&jw, "args");
    jw_object_begin(&jw);
    jw_kv_int(&jw, "start_time_since_epoch_in_micros", base_us);
    jw_end(&jw);
    jw_end(&jw);
    if (w < e->nprocs)
        process_meta(&jw, &e->procs[w], th->comm_len[w]);
    struct ex_phases ps = {.n = 0};
    for (uint32_t i = a; i < b; i++) {
        const struct thread_events *t = &e->threads[refs[i].thread];
        trace_event(&jw, e, &t->ev[refs[i].index], t->pid, t->tid, base_us * 1000, &ps, x->c);
    }
    jw_space(&jw, "\n");
    jw_end(&jw);
    jw_space(&jw, "\n");
    char hour[16];
    hour_dir(hi / 1000000000 - (hi % 1000000000 < 0), hour);
    strbuf_reset(path);
    strbuf_addf(path, "%s/framework/pevents/%s", x->dir, hour);
    int rc = mkdir_p(path->buf);
    if (rc < 0) {
        strbuf_addf(x->err, "cannot create '%s': %s", path->buf, strerror(-rc));
        return rc;
    }
    strbuf_addf(path, "/%" PRId64 "_%" PRId64 "-%s_pythontimeline.json", end_us,
                writer_prefix(e, w, t0->pid), x->nodes[node]);
    if ((rc = write_file(x, path->buf, data)) == 0)
        x->c->trace_files++;
    return rc;
}

/* One node's events: a pythontimeline file per process per hour of their
 * end times. */
static int write_trace_node(struct ex_ctx *x, const struct run_events *e, uint32_t node,
                            const struct ex_threads *th)
{
    uint32_t n = 0, cap = 0;
    struct ex_ref *refs = NULL;
    for (uint32_t t = 0; t < e->nthreads; t++) {
        if (th->node[t] != node)
            continue;
        for (uint32_t i = 0; i < e->threads[t].n; i++) {
            if (array_grow((void **)&refs, &cap, n + 1, sizeof(*refs), 4096) < 0) {
                free(refs);
                return -ENOMEM;
            }
            int64_t end = ev_end(&e->threads[t].ev[i]);
            refs[n++] = (struct ex_ref){th->writer[t],
                                        end / 3600000000000LL - (end % 3600000000000LL < 0), t, i};
        }
    }
    if (n)
        qsort(refs, n, sizeof(*refs), cmp_ref);
    struct strbuf data, path;
    strbuf_init(&data);
    strbuf_init(&path);
    int rc = 0;
    for (uint32_t a = 0; a < n && rc == 0;) {
        uint32_t b = a;
        while (b < n && refs[b].writer == refs[a].writer && refs[b].hour == refs[a].hour)
            b++;
        rc = write_trace_file(x, e, th, node, refs, a, b, &data, &path);
        a = b;
    }
    strbuf_release(&data);
    strbuf_release(&path);
    free(refs);
    return rc;
}

static int export_framework(struct ex_ctx *x)
{
    struct run_events e;
    int rc = run_events_load(x->s, x->r->id, &e);
    if (rc < 0) {
        strbuf_addf(x->err, "%s", x->s->err.buf);
        return rc;
    }
    if (!e.nthreads) {
        run_events_release(&e);
        return 0;
    }
    uint32_t *thread_node = malloc(e.nthreads * sizeof(*thread_node));
    uint32_t *writer = malloc(e.nthreads * sizeof(*writer));
    uint32_t *proc_nodes = malloc((e.nprocs + 1) * sizeof(*proc_nodes));
    size_t *comm_len = malloc((e.nprocs + 1) * sizeof(*comm_len));
    if (!thread_node || !writer || !proc_nodes || !comm_len)
        rc = -ENOMEM;
    for (uint32_t p = 0; rc == 0 && p < e.nprocs; p++)
        proc_nodes[p] = proc_node(x, &e.procs[p], &comm_len[p]);
    for (uint32_t t = 0; rc == 0 && t < e.nthreads; t++) {
        uint32_t n = UINT32_MAX;
        writer[t] = e.nprocs + t;
        for (uint32_t p = 0; p < e.nprocs && n == UINT32_MAX; p++)
            if (e.procs[p].pid == e.threads[t].pid) {
                n = proc_nodes[p];
                writer[t] = p;
            }
        if (n == UINT32_MAX) /* events of a process with no row */
            rc = node_id(x, x->default_node, &n);
        thread_node[t] = n;
    }
    struct ex_threads th = {thread_node, writer, comm_len};
    for (uint32_t node = 0; rc == 0 && node < x->nnodes; node++)
        rc = write_trace_node(x, &e, node, &th);
    if (rc == -ENOMEM && !x->err->len)
        strbuf_adds(x->err, strerror(ENOMEM));
    free(thread_node);
    free(writer);
    free(proc_nodes);
    free(comm_len);
    run_events_release(&e);
    return rc;
}

static int add_known_node(const char *item, size_t len, void *arg)
{
    char *id = strndup(item, len);
    uint32_t index;
    int rc = id ? node_id(arg, id, &index) : -ENOMEM;
    free(id);
    return rc;
}

/* The nodes of an import of several (its host, "algo-1,algo-2"), so that a
 * process named by its node alone ("algo-2", a node with no metrics) finds
 * it. */
static int known_nodes(struct ex_ctx *x, const char *host)
{
    if (!host || !strchr(host, ','))
        return 0;
    return strlist_each(host, add_known_node, x);
}

int sagemaker_export(struct store *s, const struct run_record *r, const char *dir,
                     struct sagemaker_export_counts *counts, struct strbuf *err)
{
    memset(counts, 0, sizeof(*counts));
    struct ex_ctx x = {.s = s, .r = r, .dir = dir, .err = err, .c = counts};
    /* the node of what has none: the host of a one-node import, else
     * SageMaker's name for a job's first host */
    const char *source = kv_list_get(&r->tags, "source");
    int imported = source && strcmp(source, "sagemaker") == 0 && r->host && *r->host &&
                   !strchr(r->host, ',') && !strchr(r->host, '/');
    x.default_node = strdup(imported ? r->host : SM_DEFAULT_NODE);
    int rc = x.default_node ? mkdir_p(dir) : -ENOMEM;
    if (rc == 0 && source && strcmp(source, "sagemaker") == 0)
        rc = known_nodes(&x, r->host);
    if (rc < 0)
        strbuf_addf(err, "cannot create '%s': %s", dir, strerror(-rc));
    if (rc == 0 && (rc = s->ops->series_query(s, r->id, collect_series, &x)) < 0)
        strbuf_addf(err, "%s", rc == -ENOMEM ? strerror(ENOMEM) : s->err.buf);
    if (rc == 0)
        rc = export_system(&x);
    if (rc == 0)
        rc = export_framework(&x);
    for (uint32_t i = 0; i < x.nseries; i++) {
        free(x.series[i].name);
        free(x.series[i].labels);
        free(x.series[i].meta);
    }
    free(x.series);
    for (uint32_t i = 0; i < x.nouts; i++) {
        free(x.outs[i].type);
        free(x.outs[i].name);
        free(x.outs[i].dim);
    }
    free(x.outs);
    for (uint32_t i = 0; i < x.nnodes; i++)
        free(x.nodes[i]);
    free(x.nodes);
    free(x.default_node);
    return rc;
}
