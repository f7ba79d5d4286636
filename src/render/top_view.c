/*
 * strobe top's numbers and text (top_view.h).
 *
 * A snapshot is read into an expo_set and the families top shows are
 * picked out by the names docs/openmetrics.md gives them:
 *
 *   strobe_proc_cpu_ratio, strobe_proc_rss_bytes, strobe_proc_threads
 *       without a pid label: the tree; with one: a process (comm, role, rank)
 *   strobe_gpu_util_ratio, strobe_gpu_mem_used_bytes, strobe_gpu_mem_total_bytes,
 *   strobe_gpu_power_watts, strobe_gpu_temp_celsius       per gpu label
 *   strobe_step_duration_seconds{quantile}, strobe_steps_per_second  per rank
 *   strobe_finding_last_timestamp_seconds, strobe_finding_windows (_total)
 *
 * A job of several ranks has one row: its median step is the slowest
 * rank's (the others wait for it in synchronous training), and its rate is
 * the slowest rank's too, so the two describe the same rank. The GPU
 * column is the mean utilisation over the run's GPUs and the memory they
 * hold in all.
 *
 * Text widths are display columns, not bytes: a stored name is made
 * visible (control bytes escaped, strbuf_add_visible), then cut by each
 * character's wcwidth(), so CJK or emoji in a run name keep the columns
 * straight. wcwidth() needs a UTF-8 LC_CTYPE (cmd_top.c sets one); without
 * it every character counts one column.
 */
#include "render/top_view.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/array.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "serve/expo.h" /* EXPO_STALE_NS: stale as /metrics says */

#define LABEL_CAP 256 /* a label value top keeps; longer ones are cut */

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

static void clear_numbers(struct top_run *t)
{
    t->tree.cpu_ratio = t->tree.rss_bytes = t->tree.threads = NAN;
    t->gpu_util_ratio = t->gpu_mem_bytes = NAN;
    t->step_p50_s = t->steps_per_s = NAN;
    t->last = NULL;
}

int top_run_init(struct top_run *t, const char *id, const char *name, const char *node,
                 int64_t start_ns)
{
    memset(t, 0, sizeof(*t));
    clear_numbers(t);
    t->start_ns = start_ns;
    t->id = dup_or_empty(id);
    t->name = dup_or_empty(name);
    t->node = dup_or_empty(node);
    return t->id && t->name && t->node ? 0 : -ENOMEM;
}

static void release_detail(struct top_run *t)
{
    for (uint32_t i = 0; i < t->nprocs; i++) {
        free(t->procs[i].comm);
        free(t->procs[i].role);
        free(t->procs[i].rank);
    }
    for (uint32_t i = 0; i < t->ngpus; i++)
        free(t->gpus[i].gpu);
    for (uint32_t i = 0; i < t->nranks; i++)
        free(t->ranks[i].rank);
    for (uint32_t i = 0; i < t->nfindings; i++) {
        free(t->findings[i].rule);
        free(t->findings[i].severity);
        free(t->findings[i].scope);
    }
    free(t->procs);
    free(t->gpus);
    free(t->ranks);
    free(t->findings);
    t->procs = NULL;
    t->gpus = NULL;
    t->ranks = NULL;
    t->findings = NULL;
    t->nprocs = t->ngpus = t->nranks = t->nfindings = 0;
    t->cap_procs = t->cap_gpus = t->cap_ranks = t->cap_findings = 0;
    clear_numbers(t);
}

void top_run_release(struct top_run *t)
{
    release_detail(t);
    free(t->id);
    free(t->name);
    free(t->node);
    t->id = t->name = t->node = NULL;
}

/* ---- reading a snapshot ---------------------------------------------------------------- */

/* A label's value, or NULL (buf holds it). */
static const char *label(const struct expo_sample *s, const char *key, char *buf)
{
    return expo_label(s->labels, key, buf, LABEL_CAP);
}

/* Grow an array by one when it is under its bound: the new element, zeroed,
 * or NULL (dropped, counted). */
static void *append(struct top_run *t, void **items, uint32_t *n, uint32_t *cap, size_t size,
                    uint32_t bound)
{
    if (*n >= bound || array_grow(items, cap, *n + 1, size, 8) < 0) {
        t->dropped++;
        return NULL;
    }
    char *e = (char *)*items + (size_t)(*n)++ * size;
    memset(e, 0, size);
    return e;
}

static struct top_proc *proc_of(struct top_run *t, const struct expo_sample *s)
{
    char buf[LABEL_CAP], *end;
    const char *v = label(s, "pid", buf);
    if (!v)
        return NULL;
    long long pid = strtoll(v, &end, 10);
    if (end == v || *end)
        return NULL;
    for (uint32_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].pid == pid)
            return &t->procs[i];
    struct top_proc *p =
        append(t, (void **)&t->procs, &t->nprocs, &t->cap_procs, sizeof(*p), TOP_MAX_PROCS);
    if (!p)
        return NULL;
    p->pid = pid;
    p->cpu_ratio = p->rss_bytes = p->threads = NAN;
    const char *x;
    p->comm = (x = label(s, "comm", buf)) ? strdup(x) : NULL;
    p->role = (x = label(s, "role", buf)) ? strdup(x) : NULL;
    p->rank = (x = label(s, "rank", buf)) ? strdup(x) : NULL;
    return p;
}

static struct top_gpu *gpu_of(struct top_run *t, const struct expo_sample *s)
{
    char buf[LABEL_CAP], other[LABEL_CAP];
    const char *v = label(s, "gpu", buf);
    if (!v || label(s, "pid", other) || label(s, "mig", other))
        return NULL; /* a process's or a MIG device's share: not the GPU's */
    for (uint32_t i = 0; i < t->ngpus; i++)
        if (strcmp(t->gpus[i].gpu, v) == 0)
            return &t->gpus[i];
    struct top_gpu *g =
        append(t, (void **)&t->gpus, &t->ngpus, &t->cap_gpus, sizeof(*g), TOP_MAX_GPUS);
    if (!g)
        return NULL;
    g->gpu = strdup(v);
    g->util_ratio = g->mem_used_bytes = g->mem_total_bytes = g->power_watts = NAN;
    g->temp_celsius = NAN;
    return g->gpu ? g : NULL;
}

static struct top_rank *rank_of(struct top_run *t, const struct expo_sample *s)
{
    char buf[LABEL_CAP];
    const char *v = label(s, "rank", buf);
    if (!v)
        v = "";
    for (uint32_t i = 0; i < t->nranks; i++)
        if (strcmp(t->ranks[i].rank, v) == 0)
            return &t->ranks[i];
    struct top_rank *r =
        append(t, (void **)&t->ranks, &t->nranks, &t->cap_ranks, sizeof(*r), TOP_MAX_RANKS);
    if (!r)
        return NULL;
    r->rank = strdup(v);
    r->p50_s = r->p90_s = r->p99_s = r->steps = r->steps_per_s = NAN;
    return r->rank ? r : NULL;
}

static struct top_finding *finding_of(struct top_run *t, const struct expo_sample *s)
{
    char rule[LABEL_CAP], sev[LABEL_CAP], scope[LABEL_CAP];
    if (!label(s, "rule", rule))
        return NULL;
    if (!label(s, "severity", sev))
        sev[0] = '\0';
    if (!label(s, "scope", scope))
        scope[0] = '\0';
    for (uint32_t i = 0; i < t->nfindings; i++) {
        struct top_finding *f = &t->findings[i];
        if (!strcmp(f->rule, rule) && !strcmp(f->severity, sev) && !strcmp(f->scope, scope))
            return f;
    }
    struct top_finding *f = append(t, (void **)&t->findings, &t->nfindings, &t->cap_findings,
                                   sizeof(*f), TOP_MAX_FINDINGS);
    if (!f)
        return NULL;
    f->rule = strdup(rule);
    f->severity = strdup(sev);
    f->scope = strdup(scope);
    f->last_s = f->windows = NAN;
    return f->rule && f->severity && f->scope ? f : NULL;
}

/* Each sample of family name, with suffix, passed to fn. */
typedef void sample_fn(struct top_run *t, const struct expo_sample *s, void *field);
static void each(struct top_run *t, const struct expo_set *set, const char *name,
                 const char *suffix, sample_fn *fn, void *field)
{
    const struct expo_family *f = expo_set_find(set, name);
    for (uint32_t i = 0; f && i < f->n; i++)
        if (strcmp(f->samples[i].suffix, suffix) == 0)
            fn(t, &f->samples[i], field);
}

/* field: an offset into struct top_proc, cast through a pointer */
#define FIELD(type, member) ((void *)(uintptr_t)offsetof(type, member))
#define AT(obj, field)      ((double *)((char *)(obj) + (uintptr_t)(field)))

/* A series without a pid label is the tree's; with one, a process's. */
static void take_proc(struct top_run *t, const struct expo_sample *s, void *field)
{
    char buf[LABEL_CAP];
    struct top_proc *p = label(s, "pid", buf) ? proc_of(t, s) : &t->tree;
    if (p)
        *AT(p, field) = s->value;
}

static void take_gpu(struct top_run *t, const struct expo_sample *s, void *field)
{
    struct top_gpu *g = gpu_of(t, s);
    if (g)
        *AT(g, field) = s->value;
}

static void take_quantile(struct top_run *t, const struct expo_sample *s, void *field)
{
    (void)field;
    char buf[LABEL_CAP];
    const char *q = label(s, "quantile", buf);
    struct top_rank *r = q ? rank_of(t, s) : NULL;
    if (!r)
        return;
    double v = strtod(q, NULL);
    if (v == 0.5)
        r->p50_s = s->value;
    else if (v == 0.9)
        r->p90_s = s->value;
    else if (v == 0.99)
        r->p99_s = s->value;
}

static void take_rank(struct top_run *t, const struct expo_sample *s, void *field)
{
    struct top_rank *r = rank_of(t, s);
    if (r)
        *AT(r, field) = s->value;
}

static void take_finding(struct top_run *t, const struct expo_sample *s, void *field)
{
    struct top_finding *f = finding_of(t, s);
    if (f)
        *AT(f, field) = s->value;
}

/* The row's numbers from the detail. */
static void summarise(struct top_run *t)
{
    double util = 0, mem = 0;
    int nutil = 0, nmem = 0;
    for (uint32_t i = 0; i < t->ngpus; i++) {
        if (!isnan(t->gpus[i].util_ratio))
            util += t->gpus[i].util_ratio, nutil++;
        if (!isnan(t->gpus[i].mem_used_bytes))
            mem += t->gpus[i].mem_used_bytes, nmem++;
    }
    t->gpu_util_ratio = nutil ? util / nutil : NAN;
    t->gpu_mem_bytes = nmem ? mem : NAN;
    const struct top_rank *slowest = NULL;
    for (uint32_t i = 0; i < t->nranks; i++)
        if (!isnan(t->ranks[i].p50_s) && (!slowest || t->ranks[i].p50_s > slowest->p50_s))
            slowest = &t->ranks[i];
    t->step_p50_s = slowest ? slowest->p50_s : NAN;
    t->steps_per_s = slowest ? slowest->steps_per_s : NAN;
    for (uint32_t i = 0; !slowest && i < t->nranks; i++) {
        double v = t->ranks[i].steps_per_s; /* no step times yet: the slowest rate */
        if (!isnan(v) && (isnan(t->steps_per_s) || v < t->steps_per_s))
            t->steps_per_s = v;
    }
    t->last = NULL;
    for (uint32_t i = 0; i < t->nfindings; i++)
        if (!isnan(t->findings[i].last_s) && (!t->last || t->findings[i].last_s > t->last->last_s))
            t->last = &t->findings[i];
}

/* Fill the gaps the store's run record left (a run read from its snapshot
 * alone) from strobe_run_info and strobe_run_start_timestamp_seconds. */
static void take_run_info(struct top_run *t, const struct expo_set *set)
{
    const struct expo_family *info = expo_set_find(set, "strobe_run_info");
    const struct expo_family *start = expo_set_find(set, "strobe_run_start_timestamp_seconds");
    char buf[LABEL_CAP];
    if (info && info->n) {
        char **fields[] = {&t->id, &t->name, &t->node};
        const char *keys[] = {"run_id", "run_name", "node"};
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            const char *v = expo_label(info->samples[0].labels, keys[i], buf, sizeof(buf));
            char *copy = v && !**fields[i] ? strdup(v) : NULL;
            if (copy) {
                free(*fields[i]);
                *fields[i] = copy;
            }
        }
    }
    if (start && start->n && !t->start_ns && isfinite(start->samples[0].value))
        t->start_ns = (int64_t)(start->samples[0].value * 1e9);
}

static void take_all(struct top_run *t, const struct expo_set *set)
{
    each(t, set, "strobe_proc_cpu_ratio", "", take_proc, FIELD(struct top_proc, cpu_ratio));
    each(t, set, "strobe_proc_rss_bytes", "", take_proc, FIELD(struct top_proc, rss_bytes));
    each(t, set, "strobe_proc_threads", "", take_proc, FIELD(struct top_proc, threads));
    each(t, set, "strobe_gpu_util_ratio", "", take_gpu, FIELD(struct top_gpu, util_ratio));
    each(t, set, "strobe_gpu_mem_used_bytes", "", take_gpu, FIELD(struct top_gpu, mem_used_bytes));
    each(t, set, "strobe_gpu_mem_total_bytes", "", take_gpu,
         FIELD(struct top_gpu, mem_total_bytes));
    each(t, set, "strobe_gpu_power_watts", "", take_gpu, FIELD(struct top_gpu, power_watts));
    each(t, set, "strobe_gpu_temp_celsius", "", take_gpu, FIELD(struct top_gpu, temp_celsius));
    each(t, set, "strobe_step_duration_seconds", "", take_quantile, NULL);
    each(t, set, "strobe_step_duration_seconds", "_count", take_rank,
         FIELD(struct top_rank, steps));
    each(t, set, "strobe_steps_per_second", "", take_rank, FIELD(struct top_rank, steps_per_s));
    each(t, set, "strobe_finding_last_timestamp_seconds", "", take_finding,
         FIELD(struct top_finding, last_s));
    each(t, set, "strobe_finding_windows", "_total", take_finding,
         FIELD(struct top_finding, windows));
    take_run_info(t, set);
    summarise(t);
}

int top_run_load(struct top_run *t, const char *text, size_t len, int64_t now_ns)
{
    release_detail(t);
    t->stale = t->garbled = 0;
    struct expo_set set;
    expo_set_init(&set);
    int64_t ts = 0;
    int rc = expo_set_add_snapshot(&set, text, len, &ts);
    if (rc == -ENOMEM) {
        expo_set_release(&set);
        return rc;
    }
    t->snapshot_ns = rc < 0 ? 0 : ts;
    t->garbled = rc < 0;
    t->stale = rc == 0 && now_ns - ts > EXPO_STALE_NS;
    if (rc == 0)
        take_all(t, &set);
    if (t->stale) {
        take_run_info(t, &set);
        release_detail(t); /* old numbers are not shown as now's */
    }
    expo_set_release(&set);
    return 0;
}

/* ---- sorting --------------------------------------------------------------------------- */

static const struct {
    int key;
    const char *name;
} sorts[TOP_SORT_COUNT] = {
    [TOP_SORT_NAME] = {'n', "RUN"},        [TOP_SORT_CPU] = {'c', "CPU"},
    [TOP_SORT_MEM] = {'m', "RSS"},         [TOP_SORT_GPU] = {'g', "GPU"},
    [TOP_SORT_STEP] = {'s', "STEP P50"},   [TOP_SORT_RATE] = {'r', "STEPS/S"},
    [TOP_SORT_ELAPSED] = {'e', "ELAPSED"},
};

int top_sort_of_key(int key)
{
    for (int i = 0; i < TOP_SORT_COUNT; i++)
        if (sorts[i].key == key)
            return i;
    return -1;
}

const char *top_sort_name(enum top_sort s)
{
    return s < TOP_SORT_COUNT ? sorts[s].name : "";
}

static double sort_value(const struct top_run *t, enum top_sort s)
{
    switch (s) {
    case TOP_SORT_CPU:
        return t->tree.cpu_ratio;
    case TOP_SORT_MEM:
        return t->tree.rss_bytes;
    case TOP_SORT_GPU:
        return t->gpu_util_ratio;
    case TOP_SORT_STEP:
        return t->step_p50_s;
    case TOP_SORT_RATE:
        return t->steps_per_s;
    case TOP_SORT_ELAPSED:
        return t->start_ns ? -(double)t->start_ns : NAN; /* oldest first */
    default:
        return NAN;
    }
}

static enum top_sort sort_by; /* qsort has no argument: set just before */

static int by_name(const struct top_run *a, const struct top_run *b)
{
    int c = strcmp(a->name, b->name);
    if (!c)
        c = strcmp(a->node, b->node);
    return c ? c : strcmp(a->id, b->id);
}

static int compare_runs(const void *pa, const void *pb)
{
    const struct top_run *a = pa, *b = pb;
    double x = sort_value(a, sort_by), y = sort_value(b, sort_by);
    if (isnan(x) != isnan(y))
        return isnan(x) ? 1 : -1; /* runs without the number last */
    if (!isnan(x) && x != y)
        return x > y ? -1 : 1; /* the biggest first */
    return by_name(a, b);
}

void top_sort_runs(struct top_run *runs, size_t n, enum top_sort s)
{
    sort_by = s;
    if (n > 1)
        qsort(runs, n, sizeof(*runs), compare_runs);
    /* a moved run's last points into its own findings, which move with it */
}

/* ---- text ------------------------------------------------------------------------------ */

/* The code point of the valid UTF-8 sequence of n bytes at p. */
static wchar_t decode(const unsigned char *p, size_t n)
{
    static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t c = p[0] & lead_mask[n];
    for (size_t i = 1; i < n; i++)
        c = (c << 6) | (p[i] & 0x3f);
    return (wchar_t)c;
}

static int char_width(const unsigned char *p, size_t n)
{
    if (n == 1)
        return 1; /* visible ASCII: control bytes were escaped */
    int w = wcwidth(decode(p, n));
    return w < 0 ? 1 : w;
}

int top_add_cell(struct strbuf *out, const char *s, int cols)
{
    struct strbuf vis;
    strbuf_init(&vis);
    strbuf_add_visible(&vis, s);
    const unsigned char *p = (const unsigned char *)vis.buf;
    int used = 0;
    while (*p) {
        size_t n = utf8_seq_len(p);
        if (!n)
            n = 1; /* cannot happen after add_visible; never loop */
        int w = char_width(p, n);
        if (cols >= 0 && used + w > cols)
            break;
        strbuf_add(out, p, n);
        used += w;
        p += n;
    }
    for (; cols >= 0 && used < cols; used++)
        strbuf_addch(out, ' ');
    strbuf_release(&vis);
    return used;
}

/* The display width of s made visible. */
static int cell_width(const char *s)
{
    struct strbuf sink;
    strbuf_init(&sink);
    int w = top_add_cell(&sink, s, -1);
    strbuf_release(&sink);
    return w;
}

static const char *fmt_ratio_pct(double r, char *buf, size_t cap)
{
    if (isnan(r))
        return "-";
    snprintf(buf, cap, "%.0f%%", r * 100);
    return buf;
}

static const char *fmt_opt_bytes(double b, char *buf, size_t cap)
{
    return isnan(b) ? "-" : fmt_bytes(b, buf, cap);
}

static const char *fmt_step(double s, char *buf, size_t cap)
{
    return isnan(s) ? "-" : fmt_ns(s * 1e9, buf, cap);
}

static const char *fmt_rate(double r, char *buf, size_t cap)
{
    if (isnan(r))
        return "-";
    snprintf(buf, cap, r < 10 ? "%.2f" : "%.1f", r);
    return buf;
}

static const char *fmt_elapsed(const struct top_run *t, int64_t now_ns, char *buf, size_t cap)
{
    if (!t->start_ns || now_ns < t->start_ns)
        return "-";
    return fmt_duration((double)(now_ns - t->start_ns) / 1e9, buf, cap);
}

/* "rule severity scope" of the run's last finding, or what stands instead. */
static void finding_cell(struct strbuf *sb, const struct top_run *t)
{
    if (t->garbled)
        strbuf_adds(sb, "(garbled snapshot)");
    else if (!t->snapshot_ns)
        strbuf_adds(sb, "(no snapshot yet)");
    else if (t->stale)
        strbuf_adds(sb, "stale");
    else if (!t->last)
        strbuf_adds(sb, "-");
    else
        strbuf_addf(sb, "%s %s%s%s", t->last->rule, t->last->severity, t->last->scope[0] ? " " : "",
                    t->last->scope);
}

enum col { C_RUN, C_NODE, C_ELAPSED, C_CPU, C_RSS, C_GPU, C_GMEM, C_STEP, C_RATE, C_FIND, NCOL };

static const struct {
    const char *head;
    int right; /* numbers align right */
    int sort;  /* the sort it shows, or -1 */
} cols[NCOL] = {
    [C_RUN] = {"RUN", 0, TOP_SORT_NAME},
    [C_NODE] = {"NODE", 0, -1},
    [C_ELAPSED] = {"ELAPSED", 1, TOP_SORT_ELAPSED},
    [C_CPU] = {"CPU", 1, TOP_SORT_CPU},
    [C_RSS] = {"RSS", 1, TOP_SORT_MEM},
    [C_GPU] = {"GPU", 1, TOP_SORT_GPU},
    [C_GMEM] = {"GPU MEM", 1, -1},
    [C_STEP] = {"STEP P50", 1, TOP_SORT_STEP},
    [C_RATE] = {"STEPS/S", 1, TOP_SORT_RATE},
    [C_FIND] = {"LAST FINDING", 0, -1},
};

/* A run's cells (strings in cells[], each its own strbuf). */
static void row_cells(struct strbuf *cell, const struct top_run *t, int64_t now_ns)
{
    char buf[64];
    int live = t->snapshot_ns && !t->stale && !t->garbled;
    strbuf_addf(&cell[C_RUN], "%s %.8s", t->name, t->id);
    strbuf_adds(&cell[C_NODE], t->node[0] ? t->node : "-");
    strbuf_adds(&cell[C_ELAPSED], fmt_elapsed(t, now_ns, buf, sizeof(buf)));
    strbuf_adds(&cell[C_CPU], live ? fmt_ratio_pct(t->tree.cpu_ratio, buf, sizeof(buf)) : "-");
    strbuf_adds(&cell[C_RSS], live ? fmt_opt_bytes(t->tree.rss_bytes, buf, sizeof(buf)) : "-");
    strbuf_adds(&cell[C_GPU], live ? fmt_ratio_pct(t->gpu_util_ratio, buf, sizeof(buf)) : "-");
    strbuf_adds(&cell[C_GMEM], live ? fmt_opt_bytes(t->gpu_mem_bytes, buf, sizeof(buf)) : "-");
    strbuf_adds(&cell[C_STEP], live ? fmt_step(t->step_p50_s, buf, sizeof(buf)) : "-");
    strbuf_adds(&cell[C_RATE], live ? fmt_rate(t->steps_per_s, buf, sizeof(buf)) : "-");
    finding_cell(&cell[C_FIND], t);
}

/* Column widths: each its widest cell, then, to fit width, the run and
 * finding columns give way (the numbers never do). */
static void fit_widths(int *w, int width)
{
    if (width <= 0)
        return;
    int total = 0;
    for (int c = 0; c < NCOL; c++)
        total += w[c] + (c ? 2 : 0);
    int over = total - width;
    int shrink[] = {C_FIND, C_RUN, C_NODE};
    int floor_of[] = {12, 16, 8};
    for (size_t i = 0; i < ARRAY_SIZE(shrink) && over > 0; i++) {
        int c = shrink[i], give = w[c] - floor_of[i];
        if (give > over)
            give = over;
        if (give > 0)
            w[c] -= give, over -= give;
    }
}

static void add_line(struct strbuf *out, struct strbuf *cell, const int *w, const char *sgr,
                     const struct top_layout *l)
{
    if (l->ansi && sgr)
        strbuf_adds(out, sgr);
    size_t start = out->len;
    for (int c = 0; c < NCOL; c++) {
        if (c)
            strbuf_adds(out, "  ");
        int cw = cell_width(cell[c].buf);
        if (cols[c].right && cw <= w[c]) {
            for (int pad = w[c] - cw; pad > 0; pad--)
                strbuf_addch(out, ' ');
            top_add_cell(out, cell[c].buf, -1);
        } else {
            top_add_cell(out, cell[c].buf, w[c]);
        }
    }
    if (!l->ansi || !sgr) {
        while (out->len > start && out->buf[out->len - 1] == ' ')
            strbuf_truncate(out, out->len - 1); /* no trailing blanks in plain text */
    }
    if (l->ansi && sgr)
        strbuf_adds(out, "\x1b[m");
    strbuf_addch(out, '\n');
}

void top_table_text(struct strbuf *out, const struct top_run *runs, size_t n,
                    const struct top_layout *l)
{
    struct strbuf cell[NCOL];
    int w[NCOL];
    for (int c = 0; c < NCOL; c++) {
        strbuf_init(&cell[c]);
        w[c] = (int)strlen(cols[c].head) + (cols[c].sort == (int)l->sort ? 1 : 0);
    }
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < NCOL; c++)
            strbuf_reset(&cell[c]);
        row_cells(cell, &runs[i], l->now_ns);
        for (int c = 0; c < NCOL; c++) {
            int cw = cell_width(cell[c].buf);
            if (cw > w[c])
                w[c] = cw;
        }
    }
    fit_widths(w, l->width);
    for (int c = 0; c < NCOL; c++) {
        strbuf_reset(&cell[c]);
        strbuf_addf(&cell[c], "%s%s", cols[c].head, cols[c].sort == (int)l->sort ? "*" : "");
    }
    add_line(out, cell, w, "\x1b[1m", l);
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < NCOL; c++)
            strbuf_reset(&cell[c]);
        row_cells(cell, &runs[i], l->now_ns);
        add_line(out, cell, w, (int)i == l->selected ? "\x1b[7m" : NULL, l);
    }
    for (int c = 0; c < NCOL; c++)
        strbuf_release(&cell[c]);
}

/* A detail line, cut to the layout's width. */
__attribute__((format(printf, 3, 4))) static void
detail_line(struct strbuf *out, const struct top_layout *l, const char *fmt, ...)
{
    struct strbuf line;
    strbuf_init(&line);
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&line, fmt, ap);
    va_end(ap);
    top_add_cell(out, line.buf, l->width > 0 ? l->width : -1);
    while (out->len && out->buf[out->len - 1] == ' ')
        strbuf_truncate(out, out->len - 1);
    strbuf_addch(out, '\n');
    strbuf_release(&line);
}

static void detail_procs(struct strbuf *out, const struct top_run *t, const struct top_layout *l)
{
    char a[32], b[32];
    detail_line(out, l, "%-8s  %-16s  %-7s  %-5s  %6s  %10s  %7s", "PID", "COMM", "ROLE", "RANK",
                "CPU", "RSS", "THREADS");
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const struct top_proc *p = &t->procs[i];
        struct strbuf comm;
        strbuf_init(&comm);
        top_add_cell(&comm, p->comm ? p->comm : "-", 16);
        char threads[32] = "-";
        if (!isnan(p->threads))
            snprintf(threads, sizeof(threads), "%.0f", p->threads);
        detail_line(out, l, "%-8lld  %s  %-7.7s  %-5.5s  %6s  %10s  %7s", p->pid, comm.buf,
                    p->role ? p->role : "-", p->rank && p->rank[0] ? p->rank : "-",
                    fmt_ratio_pct(p->cpu_ratio, a, sizeof(a)),
                    fmt_opt_bytes(p->rss_bytes, b, sizeof(b)), threads);
        strbuf_release(&comm);
    }
}

static void detail_gpus(struct strbuf *out, const struct top_run *t, const struct top_layout *l)
{
    if (!t->ngpus)
        return;
    char a[32], b[32], c[32], p[32] = "-", k[32] = "-";
    detail_line(out, l, "%s", "");
    detail_line(out, l, "%-5s  %5s  %10s  %10s  %7s  %5s", "GPU", "UTIL", "MEM", "MEM TOTAL",
                "POWER", "TEMP");
    for (uint32_t i = 0; i < t->ngpus; i++) {
        const struct top_gpu *g = &t->gpus[i];
        strcpy(p, "-");
        strcpy(k, "-");
        if (!isnan(g->power_watts))
            snprintf(p, sizeof(p), "%.0f W", g->power_watts);
        if (!isnan(g->temp_celsius))
            snprintf(k, sizeof(k), "%.0f C", g->temp_celsius);
        detail_line(out, l, "%-5.5s  %5s  %10s  %10s  %7s  %5s", g->gpu,
                    fmt_ratio_pct(g->util_ratio, a, sizeof(a)),
                    fmt_opt_bytes(g->mem_used_bytes, b, sizeof(b)),
                    fmt_opt_bytes(g->mem_total_bytes, c, sizeof(c)), p, k);
    }
}

static void detail_ranks(struct strbuf *out, const struct top_run *t, const struct top_layout *l)
{
    if (!t->nranks)
        return;
    char a[32], b[32], c[32], d[32];
    detail_line(out, l, "%s", "");
    detail_line(out, l, "%-5s  %9s  %9s  %9s  %8s  %8s", "RANK", "STEP P50", "P90", "P99",
                "STEPS/S", "STEPS");
    for (uint32_t i = 0; i < t->nranks; i++) {
        const struct top_rank *r = &t->ranks[i];
        char steps[32] = "-";
        if (!isnan(r->steps))
            snprintf(steps, sizeof(steps), "%.0f", r->steps);
        detail_line(out, l, "%-5.5s  %9s  %9s  %9s  %8s  %8s", r->rank[0] ? r->rank : "-",
                    fmt_step(r->p50_s, a, sizeof(a)), fmt_step(r->p90_s, b, sizeof(b)),
                    fmt_step(r->p99_s, c, sizeof(c)), fmt_rate(r->steps_per_s, d, sizeof(d)),
                    steps);
    }
}

static void detail_findings(struct strbuf *out, const struct top_run *t, const struct top_layout *l)
{
    if (!t->nfindings)
        return;
    detail_line(out, l, "%s", "");
    detail_line(out, l, "%-8s  %8s  %-24s  %s", "SEVERITY", "AGO", "RULE", "SCOPE");
    for (uint32_t i = 0; i < t->nfindings; i++) {
        const struct top_finding *f = &t->findings[i];
        char ago[32] = "-";
        double s = (double)l->now_ns / 1e9 - f->last_s;
        if (!isnan(s))
            fmt_duration(s < 0 ? 0 : s, ago, sizeof(ago));
        detail_line(out, l, "%-8s  %8s  %-24s  %s", f->severity, ago, f->rule, f->scope);
    }
}

void top_detail_text(struct strbuf *out, const struct top_run *t, const struct top_layout *l)
{
    char el[32];
    struct strbuf find;
    strbuf_init(&find);
    finding_cell(&find, t);
    detail_line(out, l, "run %s %s  node %s  elapsed %s  last finding %s", t->name, t->id,
                t->node[0] ? t->node : "-", fmt_elapsed(t, l->now_ns, el, sizeof(el)), find.buf);
    strbuf_release(&find);
    detail_line(out, l, "%s", "");
    detail_procs(out, t, l);
    detail_gpus(out, t, l);
    detail_ranks(out, t, l);
    detail_findings(out, t, l);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_run(struct json_writer *jw, const struct top_run *t, int64_t now_ns)
{
    jw_object_begin(jw);
    jw_kv_str(jw, "id", t->id);
    jw_kv_str(jw, "name", t->name);
    jw_kv_str(jw, "node", t->node);
    jw_kv_int_or_null(jw, "start_ns", t->start_ns);
    jw_key(jw, "elapsed_s");
    jw_num(jw, t->start_ns ? (double)(now_ns - t->start_ns) / 1e9 : NAN);
    jw_key(jw, "snapshot_ns");
    if (t->snapshot_ns)
        jw_int(jw, t->snapshot_ns);
    else
        jw_null(jw);
    jw_kv_str(jw, "state",
              t->garbled        ? "garbled"
              : !t->snapshot_ns ? "waiting"
              : t->stale        ? "stale"
                                : "live");
    jw_kv_num(jw, "cpu_ratio", t->tree.cpu_ratio);
    jw_kv_num(jw, "rss_bytes", t->tree.rss_bytes);
    jw_kv_num(jw, "threads", t->tree.threads);
    jw_kv_num(jw, "gpu_util_ratio", t->gpu_util_ratio);
    jw_kv_num(jw, "gpu_mem_used_bytes", t->gpu_mem_bytes);
    jw_kv_num(jw, "step_p50_seconds", t->step_p50_s);
    jw_kv_num(jw, "steps_per_second", t->steps_per_s);
    jw_key(jw, "last_finding");
    if (t->last) {
        jw_object_begin(jw);
        jw_kv_str(jw, "rule", t->last->rule);
        jw_kv_str(jw, "severity", t->last->severity);
        jw_kv_str(jw, "scope", t->last->scope);
        jw_kv_num(jw, "last_seconds", t->last->last_s);
        jw_end(jw);
    } else {
        jw_null(jw);
    }
    jw_key(jw, "processes");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const struct top_proc *p = &t->procs[i];
        jw_object_begin(jw);
        jw_kv_int(jw, "pid", p->pid);
        jw_kv_str_or_null(jw, "comm", p->comm);
        jw_kv_str_or_null(jw, "role", p->role);
        jw_kv_str_or_null(jw, "rank", p->rank);
        jw_kv_num(jw, "cpu_ratio", p->cpu_ratio);
        jw_kv_num(jw, "rss_bytes", p->rss_bytes);
        jw_kv_num(jw, "threads", p->threads);
        jw_end(jw);
    }
    jw_end(jw);
    jw_key(jw, "gpus");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < t->ngpus; i++) {
        const struct top_gpu *g = &t->gpus[i];
        jw_object_begin(jw);
        jw_kv_str(jw, "gpu", g->gpu);
        jw_kv_num(jw, "util_ratio", g->util_ratio);
        jw_kv_num(jw, "mem_used_bytes", g->mem_used_bytes);
        jw_kv_num(jw, "mem_total_bytes", g->mem_total_bytes);
        jw_kv_num(jw, "power_watts", g->power_watts);
        jw_kv_num(jw, "temp_celsius", g->temp_celsius);
        jw_end(jw);
    }
    jw_end(jw);
    jw_key(jw, "ranks");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < t->nranks; i++) {
        const struct top_rank *r = &t->ranks[i];
        jw_object_begin(jw);
        jw_kv_str(jw, "rank", r->rank);
        jw_kv_num(jw, "step_p50_seconds", r->p50_s);
        jw_kv_num(jw, "step_p90_seconds", r->p90_s);
        jw_kv_num(jw, "step_p99_seconds", r->p99_s);
        jw_kv_num(jw, "steps_per_second", r->steps_per_s);
        jw_kv_num(jw, "steps", r->steps);
        jw_end(jw);
    }
    jw_end(jw);
    jw_key(jw, "findings");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < t->nfindings; i++) {
        const struct top_finding *f = &t->findings[i];
        jw_object_begin(jw);
        jw_kv_str(jw, "rule", f->rule);
        jw_kv_str(jw, "severity", f->severity);
        jw_kv_str(jw, "scope", f->scope);
        jw_kv_num(jw, "last_seconds", f->last_s);
        jw_kv_num(jw, "windows", f->windows);
        jw_end(jw);
    }
    jw_end(jw);
    jw_kv_int(jw, "dropped_series", t->dropped);
    jw_end(jw);
}

void top_json(struct strbuf *out, const struct top_run *runs, size_t n, int64_t now_ns)
{
    struct json_writer jw;
    jw_init(&jw, out);
    jw_object_begin(&jw);
    jw_kv_int(&jw, "now_ns", now_ns);
    jw_key(&jw, "runs");
    jw_array_begin(&jw);
    jw_lines(&jw, "\n ", "\n ");
    for (size_t i = 0; i < n; i++)
        json_run(&jw, &runs[i], now_ns);
    if (n)
        jw_space(&jw, "\n");
    jw_end(&jw);
    jw_end(&jw);
    jw_space(&jw, "\n");
}
