#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/nodes.h"
#include "analyze/steps.h"
#include "cli/cli.h"
#include "store/job.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "common/label.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "store/points.h"

static const struct cli_usage show_usage = {
    "show", "usage: strobe show [--store S] [--json] RUN\n", NULL, 1, 0,
};

#define TOP_PROCESSES 10

struct metric_row {
    char *key; /* name, or name{labels} */
    char *name;
    char *labels;
    char *unit;
    char *meta;
    int64_t bytes;
    struct point_stats st;
    double last; /* the last value, NaN when none */
};

struct show_ctx {
    struct store *s;
    int64_t interval_ns; /* the run's: what a rate's first point covers */
    struct metric_row *rows;
    size_t n, cap;
    int64_t bytes; /* encoded bytes of all blocks */
    int64_t points;
    int failed;
    struct run_events ev;
    struct step_analysis steps;
    struct stored_findings findings;
    struct run_actions actions; /* what run --on-finding did */
    struct show_python *python; /* the Python hotspots, or NULL */
    struct run_list nodes;      /* a job's (store/job.h); none otherwise */
    /* each node's mean cpu.util and gpu.util (analyze/nodes.h), from the
     * statistics below: a row per node, one column */
    struct node_heat cpu, gpu;
    int multi; /* the series carry node=NAME: a run of several nodes */
};

/* Where the recorder read the process tree (proc.cpu's meta); NULL for runs
 * recorded before it said, or without the proc collector. */
static const char *tree_source(const struct show_ctx *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].key, metric_name(METRIC_PROC_CPU)) == 0 && c->rows[i].meta)
            return strstr(c->rows[i].meta, "\"source\":\"bpf\"")      ? "BPF"
                   : strstr(c->rows[i].meta, "\"source\":\"procfs\"") ? "procfs"
                                                                      : NULL;
    return NULL;
}

static int collect_series(const struct series_record *sr, void *arg)
{
    struct show_ctx *c = arg;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct metric_row *rows = realloc(c->rows, cap * sizeof(*rows));
        if (!rows)
            return -1;
        c->rows = rows;
        c->cap = cap;
    }
    struct metric_row *m = &c->rows[c->n];
    memset(m, 0, sizeof(*m));
    struct strbuf key;
    strbuf_init(&key);
    strbuf_adds(&key, sr->name);
    if (sr->labels[0])
        strbuf_addf(&key, "{%s}", sr->labels);
    m->key = strbuf_detach(&key);
    m->name = strdup(sr->name);
    m->labels = strdup(sr->labels);
    m->unit = strdup(sr->unit);
    m->meta = sr->meta ? strdup(sr->meta) : NULL;
    m->bytes = sr->bytes;
    c->bytes += sr->bytes;
    struct series_summary sum = {0};
    /* a second query while the series query steps: SQLite allows it */
    if (store_series_stats(c->s, sr->id, c->interval_ns, &sum) < 0)
        c->failed = 1;
    m->st = sum.st;
    c->points += (int64_t)sum.points;
    m->last = sum.last;
    c->n++;
    return 0;
}

static void rows_release(struct show_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->rows[i].key);
        free(c->rows[i].name);
        free(c->rows[i].labels);
        free(c->rows[i].unit);
        free(c->rows[i].meta);
    }
    free(c->rows);
}

static int is_rate(const char *unit)
{
    size_t n = strlen(unit);
    return n >= 2 && strcmp(unit + n - 2, "/s") == 0;
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_metric(struct json_writer *jw, const struct metric_row *m)
{
    jw_key(jw, m->key);
    jw_object_begin(jw);
    jw_kv_str(jw, "unit", m->unit);
    jw_kv_uint(jw, "count", m->st.count);
    jw_kv_num(jw, "mean", m->st.mean);
    jw_kv_num(jw, "p50", m->st.p50);
    jw_kv_num(jw, "p95", m->st.p95);
    jw_kv_num(jw, "max", m->st.max);
    jw_kv_num(jw, "min", m->st.min);
    jw_kv_num(jw, "last", m->last);
    if (is_rate(m->unit))
        jw_kv_num(jw, "total", m->st.integral);
    if (m->meta)
        jw_kv_raw(jw, "meta", m->meta);
    jw_end(jw);
}

static void json_gpus(struct json_writer *jw, const struct show_ctx *c)
{
    jw_key(jw, "gpus");
    jw_array_begin(jw);
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) == 0 &&
            c->rows[i].meta)
            jw_raw(jw, c->rows[i].meta);
    jw_end(jw);
}

/* The app.* series' last values, by name without the prefix. */
static void json_app(struct json_writer *jw, const struct show_ctx *c)
{
    jw_key(jw, "app");
    jw_object_begin(jw);
    for (size_t i = 0; i < c->n; i++)
        if (metric_in_family(c->rows[i].name, METRIC_APP))
            jw_kv_num(jw, c->rows[i].key + metric_family_prefix_len(METRIC_APP), c->rows[i].last);
    jw_end(jw);
}

/* Every series, one a line. */
static void json_metrics(struct json_writer *jw, const struct show_ctx *c)
{
    jw_key(jw, "metrics");
    jw_object_begin(jw);
    jw_lines(jw, "\n  ", "\n  ");
    for (size_t i = 0; i < c->n; i++)
        json_metric(jw, &c->rows[i]);
    jw_space(jw, "\n");
    jw_end(jw);
}

/* The machine and the job: where and what ran. */
static void json_host(struct json_writer *jw, const struct run_record *r)
{
    jw_kv_raw(jw, "command", r->command_json ? r->command_json : "[]");
    run_record_json_host(jw, r);
    if (r->git_dirty >= 0)
        jw_kv_bool(jw, "git_dirty", r->git_dirty);
    else
        jw_kv_null(jw, "git_dirty");
    run_record_json_versions(jw, r);
}

/* The whole --json document, appended to *out (strobe serve's run view too). */
static void show_json(struct strbuf *o, const struct run_record *r, const struct show_ctx *c)
{
    struct json_writer jw;
    jw_init(&jw, o);
    jw_object_begin(&jw);
    run_record_json_head(&jw, r);
    jw_kv_int(&jw, "samples", r->samples);
    jw_kv_int(&jw, "points", c->points);
    jw_kv_int(&jw, "missed", r->missed);
    jw_kv_int(&jw, "dropped", r->dropped);
    jw_kv_num(&jw, "bytes_per_sample", c->points ? (double)c->bytes / (double)c->points : 0.0);
    jw_kv_int(&jw, "stored_bytes", c->bytes);
    jw_kv_int(&jw, "interval_ns", r->interval_ns);
    json_host(&jw, r);
    jw_key(&jw, "tags");
    kv_list_json(&jw, &r->tags);
    jw_key(&jw, "params");
    kv_list_json(&jw, &r->params);
    jw_key(&jw, "env");
    kv_list_json(&jw, &r->env);
    if (run_record_is_job(r))
        job_nodes_json(&jw, r->join_key, &c->nodes, &c->cpu, &c->gpu);
    show_steps_json(&jw, r, &c->ev, &c->steps);
    show_python_json(&jw, c->python);
    jw_key(&jw, "findings");
    findings_json(&jw, c->findings.f, c->findings.n);
    run_actions_json(&jw, &c->actions);
    json_gpus(&jw, c);
    json_app(&jw, c);
    json_metrics(&jw, c);
    jw_end(&jw);
    jw_space(&jw, "\n");
}

/* ---- text ----------------------------------------------------------------- */

static const char *fmt_value(double v, const char *unit, char *buf, size_t cap)
{
    if (isnan(v))
        return "-";
    if (strcmp(unit, "bytes") == 0)
        return fmt_bytes(v, buf, cap);
    if (strcmp(unit, "bytes/s") == 0) {
        char tmp[32];
        snprintf(buf, cap, "%s/s", fmt_bytes(v, tmp, sizeof(tmp)));
        return buf;
    }
    if (strcmp(unit, "pct") == 0)
        snprintf(buf, cap, "%.1f%%", v);
    else
        snprintf(buf, cap, "%.3g", v);
    return buf;
}

/* A host's own series: no labels, or only the node of an imported
 * multi-node run (each node's host metrics are its main rows). */
static int host_level(const char *labels)
{
    return !labels[0] || (strncmp(labels, "node=", 5) == 0 && !strchr(labels, ','));
}

/* The head of a table of metrics; a NODE column in a run of several nodes. */
static void print_metric_head(const char *title, int multi)
{
    printf("\n  %-32s ", title);
    if (multi)
        printf("%-16s ", "NODE");
    printf("%12s %12s %12s %12s\n", "MEAN", "P50", "P95", "MAX");
}

/* A row: name{labels}, or in a run of several nodes name{other labels}
 * and the node in a column of its own. */
static void print_metric(const struct metric_row *m, int multi)
{
    char a[32], b[32], c[32], d[32];
    struct strbuf key, rest, node, shown;
    strbuf_init(&key);
    strbuf_init(&rest);
    strbuf_init(&node);
    strbuf_init(&shown);
    if (multi && labels_take(m->labels, "node", &rest, &node)) {
        strbuf_adds(&key, m->name);
        if (rest.len)
            strbuf_addf(&key, "{%s}", rest.buf);
        label_unescape(&shown, node.buf, node.len);
    } else {
        strbuf_adds(&key, m->key);
    }
    printf("  %-32s ", cli_visible(&rest, key.buf));
    if (multi)
        printf("%-16s ", cli_visible(&node, shown.buf));
    printf("%12s %12s %12s %12s\n", fmt_value(m->st.mean, m->unit, a, sizeof(a)),
           fmt_value(m->st.p50, m->unit, b, sizeof(b)), fmt_value(m->st.p95, m->unit, c, sizeof(c)),
           fmt_value(m->st.max, m->unit, d, sizeof(d)));
    strbuf_release(&key);
    strbuf_release(&rest);
    strbuf_release(&node);
    strbuf_release(&shown);
}

static const struct metric_row *find_row(const struct show_ctx *c, const char *name,
                                         const char *labels)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].name, name) == 0 && strcmp(c->rows[i].labels, labels) == 0)
            return &c->rows[i];
    return NULL;
}

static int cmp_cpu_desc(const void *a, const void *b)
{
    const struct metric_row *x = *(const struct metric_row *const *)a;
    const struct metric_row *y = *(const struct metric_row *const *)b;
    return (x->st.integral < y->st.integral) - (x->st.integral > y->st.integral);
}

/* Who a process was, from its framework events: "rank 1", "worker 0",
 * "main", or "-" for a process that wrote none. */
static void process_role(const struct show_ctx *c, long long pid, char *out, size_t cap)
{
    snprintf(out, cap, "-");
    for (uint32_t i = 0; i < c->ev.nprocs; i++) {
        const struct proc_info *p = &c->ev.procs[i];
        if (p->pid != pid)
            continue;
        if (p->worker_id >= 0)
            snprintf(out, cap, "worker %lld", (long long)p->worker_id);
        else if (p->rank >= 0)
            snprintf(out, cap, "rank %lld", (long long)p->rank);
        else if (p->role[0])
            snprintf(out, cap, "%s", p->role);
    }
}

/* The TOP_PROCESSES busiest of every process with a series, however many
 * there are (a fixed list once stopped at 4096 while saying "N seen"). */
/* A process's row: proc.cpu with a pid among its labels (a node's own
 * proc.cpu{node=a} is its tree). */
static int is_process(const struct metric_row *m)
{
    return strcmp(m->name, metric_name(METRIC_PROC_CPU)) == 0 &&
           (strncmp(m->labels, "pid=", 4) == 0 || strstr(m->labels, ",pid="));
}

/* A label's value as shown ("" when absent), into out. */
static const char *label_value(const char *labels, const char *key, struct strbuf *out)
{
    struct strbuf rest, value;
    strbuf_init(&rest);
    strbuf_init(&value);
    strbuf_reset(out);
    if (labels_take(labels, key, &rest, &value))
        label_unescape(out, value.buf, value.len);
    strbuf_release(&rest);
    strbuf_release(&value);
    return out->buf ? out->buf : "";
}

static void print_processes(const struct show_ctx *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += is_process(&c->rows[i]);
    if (!n)
        return;
    const struct metric_row **procs = malloc(n * sizeof(*procs));
    if (!procs) {
        printf("\nbusiest processes (%zu seen): not listed, out of memory\n", n);
        return;
    }
    n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (is_process(&c->rows[i]))
            procs[n++] = &c->rows[i];
    qsort(procs, n, sizeof(procs[0]), cmp_cpu_desc);
    printf("\nbusiest processes (%zu seen)\n  ", n);
    if (c->multi) /* the pids are each node's own */
        printf("%-16s ", "NODE");
    printf("%7s %7s  %-16s %-12s %10s %9s %9s %11s\n", "PID", "PPID", "COMM", "ROLE", "CPU TIME",
           "CPU MEAN", "CPU MAX", "RSS MAX");
    struct strbuf node, shown, id;
    strbuf_init(&node);
    strbuf_init(&shown);
    strbuf_init(&id);
    for (size_t i = 0; i < n && i < TOP_PROCESSES; i++) {
        char pid[16], ppid[16], comm[64], rss[32], t[32], role[32];
        cli_meta_field(procs[i]->meta, "pid", pid, sizeof(pid));
        cli_meta_field(procs[i]->meta, "ppid", ppid, sizeof(ppid));
        cli_meta_field(procs[i]->meta, "comm", comm, sizeof(comm));
        /* events number a node's pids as the run does (the pid label) */
        process_role(c, atoll(label_value(procs[i]->labels, "pid", &id)), role, sizeof(role));
        const struct metric_row *r =
            find_row(c, metric_name(METRIC_PROC_RSS_BYTES), procs[i]->labels);
        printf("  ");
        if (c->multi)
            printf("%-16s ", cli_visible(&shown, label_value(procs[i]->labels, "node", &node)));
        printf("%7s %7s  %-16.16s %-12s %10s %8.1f%% %8.1f%% %11s\n", pid, ppid, comm, role,
               fmt_duration(procs[i]->st.integral / 100.0, t, sizeof(t)),
               isnan(procs[i]->st.mean) ? 0.0 : procs[i]->st.mean,
               isnan(procs[i]->st.max) ? 0.0 : procs[i]->st.max,
               r ? fmt_bytes(r->st.max, rss, sizeof(rss)) : "-");
    }
    strbuf_release(&node);
    strbuf_release(&shown);
    strbuf_release(&id);
    free(procs);
}

/* Copy the JSON object at *p (which starts with '{') into out and move *p
 * past it; 0 when there is none or it does not fit. The collector writes
 * flat objects, so the first '}' outside a string ends it. */
static int next_object(const char **p, char *out, size_t cap)
{
    const char *s = *p;
    if (*s != '{')
        return 0;
    int in_string = 0;
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) {
        out[n++] = *s;
        if (in_string && *s == '\\' && s[1])
            out[n++] = *++s;
        else if (*s == '"')
            in_string = !in_string;
        else if (*s == '}' && !in_string)
            break;
    }
    if (*s != '}')
        return 0;
    out[n] = '\0';
    *p = s + 1;
    return 1;
}

/* One indented line per MIG device in a GPU's metadata ("mig":[...], the
 * collector's last field). */
static void print_mig_devices(const struct metric_row *m)
{
    const char *p = m->meta ? strstr(m->meta, "\"mig\":[") : NULL;
    if (!p)
        return;
    p += strlen("\"mig\":[");
    char obj[1024];
    while (next_object(&p, obj, sizeof(obj))) {
        char index[16], uuid[128], name[128], bytes[32], mem[32];
        cli_meta_field(obj, "index", index, sizeof(index));
        cli_meta_field(obj, "uuid", uuid, sizeof(uuid));
        cli_meta_field(obj, "name", name, sizeof(name));
        cli_meta_field(obj, "memory_total_bytes", bytes, sizeof(bytes));
        printf("             mig %s: %s, %s, %s\n", index, uuid, name,
               fmt_bytes(atof(bytes), mem, sizeof(mem)));
        if (*p == ',')
            p++;
    }
}

/* The GPUs, from the metadata the collector left on gpu.mem_total_bytes,
 * each with its MIG devices, and their per-device metrics (per-process ones
 * only in --json). */
static void print_gpus(const struct show_ctx *c)
{
    int header = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct metric_row *m = &c->rows[i];
        if (strcmp(m->name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) != 0 || !m->meta)
            continue;
        char index[16], name[128], uuid[128], driver[64], mem[32];
        cli_meta_field(m->meta, "index", index, sizeof(index));
        cli_meta_field(m->meta, "name", name, sizeof(name));
        cli_meta_field(m->meta, "uuid", uuid, sizeof(uuid));
        cli_meta_field(m->meta, "driver", driver, sizeof(driver));
        printf("%s %s: %s, %s, %s, driver %s\n", header++ ? "         " : "gpus     ", index, name,
               uuid, fmt_bytes(m->st.max, mem, sizeof(mem)), driver);
        print_mig_devices(m);
    }
    if (!header)
        return;
    print_metric_head("GPU METRIC", c->multi);
    for (size_t i = 0; i < c->n; i++) {
        const struct metric_row *m = &c->rows[i];
        if (strncmp(m->name, "gpu.", 4) == 0 && !strstr(m->labels, "pid=") &&
            strcmp(m->name, metric_name(METRIC_GPU_MEM_TOTAL_BYTES)) != 0)
            print_metric(m, c->multi);
    }
}

/* Disks and interfaces that saw traffic; idle ones only in --json. */
static void print_devices(const struct show_ctx *c)
{
    int header = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct metric_row *m = &c->rows[i];
        int device = strncmp(m->name, "disk.", 5) == 0 || strncmp(m->name, "net.", 4) == 0;
        if (!device || !m->labels[0] || !(m->st.max > 0))
            continue;
        if (!header++)
            print_metric_head("DEVICES WITH TRAFFIC", c->multi);
        print_metric(m, c->multi);
    }
}

/* The run's own lines; every stored string through cli_visible: names and
 * tags are checked when recorded, but not in a store another tool wrote,
 * and host, error and app names come from the machine and the job. */
/* A node's mean of a one-column heatmap, as a share ("-" without one). */
static const char *node_pct(const struct node_heat *h, const char *node, char *buf, size_t cap)
{
    int row = node ? node_heat_find(h, node) : -1;
    return fmt_value(row >= 0 ? node_heat_row_mean(h, (uint32_t)row) : NAN, "pct", buf, cap);
}

/* A job's nodes, one a line: the clock is the store's less the node's as
 * last measured, the error of that estimate half its round trip, and the
 * shift what the node added to its times (the offset at join). */
static void print_nodes(const struct run_record *job, const struct show_ctx *c)
{
    const struct run_list *nodes = &c->nodes;
    struct strbuf v1, v2;
    strbuf_init(&v1);
    strbuf_init(&v2);
    printf("nodes     %u, joined on %s\n", nodes->n, cli_visible(&v1, job->join_key));
    printf("  %-16s  %-8s  %-16s  %-9s  %8s  %8s  %6s  %6s  %8s  %s\n", "NODE", "RUN", "HOST",
           "STATUS", "START", "DURATION", "CPU", "GPU", "SAMPLES", "CLOCK (STORE - NODE)");
    for (uint32_t i = 0; i < nodes->n; i++) {
        const struct run_record *n = &nodes->items[i];
        char dur[32], cpu[32], gpu[32], clock[96] = "not measured";
        if (n->clock_rtt_ns > 0)
            snprintf(clock, sizeof(clock), "%+.3f ms (within %.3f), times shifted %+.3f ms",
                     (double)n->clock_offset_ns / 1e6, (double)n->clock_rtt_ns / 2e6,
                     (double)n->clock_shift_ns / 1e6);
        printf("  %-16s  %.8s  %-16s  %-9s  %+7.1fs  %8s  %6s  %6s  %8lld  %s\n",
               cli_visible(&v1, n->node ? n->node : "?"), n->id,
               cli_visible(&v2, n->host ? n->host : "?"), run_record_status(n),
               (double)(n->start_ns - job->start_ns) / 1e9,
               fmt_duration(run_record_duration_s(n), dur, sizeof(dur)),
               node_pct(&c->cpu, n->node, cpu, sizeof(cpu)),
               node_pct(&c->gpu, n->node, gpu, sizeof(gpu)), (long long)n->samples, clock);
    }
    strbuf_release(&v1);
    strbuf_release(&v2);
}

static void show_text(const struct run_record *r, const struct show_ctx *c)
{
    char start[32], dur[32], mem[32], iv[32];
    struct strbuf v1, v2, v3;
    strbuf_init(&v1);
    strbuf_init(&v2);
    strbuf_init(&v3);
    printf("run       %s  %s\n", r->id, cli_visible(&v1, r->name));
    if (r->experiment)
        printf("experiment %s\n", cli_visible(&v1, r->experiment));
    if (r->workload)
        printf("workload  %s\n", cli_visible(&v1, r->workload));
    printf("status    %s", run_record_status(r));
    if (r->signal)
        printf(" (signal %d)", r->signal);
    else if (r->exit_code >= 0)
        printf(" (exit %d)", r->exit_code);
    const struct run_action *stop = run_actions_stopper(&c->actions);
    if (stop && strcmp(r->status, RUN_STOPPED) == 0)
        printf(" by %s [%s]", cli_visible(&v1, stop->rule), cli_visible(&v2, stop->scope));
    if (r->error)
        printf(": %s", cli_visible(&v1, r->error));
    if (strcmp(run_record_status(r), RUN_LOST) == 0)
        /* what a reader needs to know of a run that will never finish */
        printf(" (its recorder, pid %lld, ended without closing the run: killed, or the "
               "machine went down; what follows is the data up to its last commit)",
               (long long)r->recorder_pid);
    printf("\ncommand   %s\n", cli_visible(&v1, r->command_json));
    printf("started   %s UTC, duration %s\n", fmt_time_utc(r->start_ns, start, sizeof(start)),
           fmt_duration(run_record_duration_s(r), dur, sizeof(dur)));
    printf("host      %s, Linux %s, %d x %s, %s\n", cli_visible(&v1, r->host ? r->host : "?"),
           cli_visible(&v2, r->kernel ? r->kernel : "?"), r->cpu_count,
           cli_visible(&v3, r->cpu_model ? r->cpu_model : "?"),
           fmt_bytes((double)r->mem_total_bytes, mem, sizeof(mem)));
    if (r->git_commit)
        printf("git       %.12s%s\n", cli_visible(&v1, r->git_commit),
               r->git_dirty > 0 ? " (dirty)" : "");
    if (r->python_version)
        printf("python    %s%s%s\n", cli_visible(&v1, r->python_version),
               r->torch_version ? ", torch " : "", cli_visible(&v2, r->torch_version));
    printf("samples   %lld every %s, %lld missed; %lld points in %lld bytes (%.2f B/point)\n",
           (long long)r->samples, fmt_duration((double)r->interval_ns / 1e9, iv, sizeof(iv)),
           (long long)r->missed, (long long)c->points, (long long)c->bytes,
           c->points ? (double)c->bytes / (double)c->points : 0.0);
    const char *source = tree_source(c);
    if (source)
        printf("          the process tree read through %s\n", source);
    for (size_t i = 0; i < r->params.n; i++)
        printf("param     %s=%s\n", cli_visible(&v1, r->params.items[i].key),
               cli_visible(&v2, r->params.items[i].value));
    for (size_t i = 0; i < r->tags.n; i++)
        printf("tag       %s=%s\n", cli_visible(&v1, r->tags.items[i].key),
               cli_visible(&v2, r->tags.items[i].value));
    if (run_record_is_job(r))
        print_nodes(r, c);
    show_steps_text(r, &c->ev, &c->steps);
    show_python_text(c->python);
    if (c->findings.n) {
        printf("findings  %u (strobe rules %.8s for every rule's verdict)\n", c->findings.n, r->id);
        findings_print_text(stdout, c->findings.f, c->findings.n, r->start_ns);
    }
    run_actions_print_text(&c->actions, r->start_ns);
    int apps = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!metric_in_family(c->rows[i].name, METRIC_APP))
            continue;
        char v[32];
        printf("%s %s = %s", apps++ ? "," : "app      ",
               cli_visible(&v1, c->rows[i].key + metric_family_prefix_len(METRIC_APP)),
               fmt_value(c->rows[i].last, "", v, sizeof(v)));
    }
    if (apps)
        printf("  (last values)\n");
    print_metric_head("METRIC", c->multi);
    size_t labelled = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!host_level(c->rows[i].labels))
            labelled++;
        else if (!metric_in_family(c->rows[i].name, METRIC_APP))
            print_metric(&c->rows[i], c->multi);
    }
    print_devices(c);
    print_processes(c);
    print_gpus(c);
    if (labelled)
        printf("\n%zu more series per core, device and process: 'strobe show --json' or "
               "'strobe export'\n",
               labelled);
    strbuf_release(&v1);
    strbuf_release(&v2);
    strbuf_release(&v3);
}

/* A store from before the rules has no findings table: none, not an error. */
static int load_findings(struct store *s, const char *run_id, struct stored_findings *out)
{
    if (stored_findings_load(s, run_id, out) < 0)
        stored_findings_release(out);
    return 0;
}

/* Everything show prints about r; show_release() after, even on failure. */
static int show_load(struct store *s, const struct run_record *r, struct show_ctx *c)
{
    *c = (struct show_ctx){.s = s, .interval_ns = r->interval_ns};
    node_heat_init(&c->cpu, METRIC_CPU_UTIL, 0, 1, 1);
    node_heat_init(&c->gpu, METRIC_GPU_UTIL, 0, 1, 1);
    if (s->ops->series_query(s, r->id, collect_series, c) < 0 || c->failed ||
        run_events_load(s, r->id, &c->ev) < 0 || step_analysis_run(&c->ev, &c->steps) < 0 ||
        show_python_load(s, r, &c->ev, &c->python) < 0 ||
        load_findings(s, r->id, &c->findings) < 0 || run_actions_load(s, r->id, &c->actions) < 0 ||
        (run_record_is_job(r) && store_job_nodes(s, r->id, &c->nodes) < 0))
        return -1;
    for (size_t i = 0; i < c->n; i++) {
        const struct metric_row *m = &c->rows[i];
        double sum = m->st.mean * (double)m->st.count;
        if (node_heat_add_series(&c->cpu, m->name, m->labels, sum, (int64_t)m->st.count, NULL) <
                0 ||
            node_heat_add_series(&c->gpu, m->name, m->labels, sum, (int64_t)m->st.count, NULL) < 0)
            return -1;
        c->multi |= strncmp(m->labels, "node=", 5) == 0 || strstr(m->labels, ",node=") != NULL;
    }
    return 0;
}

static void show_release(struct show_ctx *c)
{
    rows_release(c);
    stored_findings_release(&c->findings);
    run_actions_release(&c->actions);
    show_python_release(c->python);
    run_list_release(&c->nodes);
    node_heat_release(&c->cpu);
    node_heat_release(&c->gpu);
    step_analysis_release(&c->steps);
    run_events_release(&c->ev);
}

int cmd_show(struct cli_ctx *cli, int argc, char **argv)
{
    int json = 0;
    const struct cli_option opts[] = {CLI_OPT_JSON(&json), CLI_OPT_END};
    int status = cli_setup(cli, &show_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    struct run_record *r = &cli->run;
    struct show_ctx c;
    status = CLI_EXIT_ERROR;
    if (show_load(cli->store, r, &c) < 0)
        log_error("cannot read run %s: %s", r->id, cli->store->err.buf);
    else {
        status = CLI_EXIT_OK;
        if (json) {
            struct strbuf o;
            strbuf_init(&o);
            show_json(&o, r, &c);
            if (cli_print(&o) < 0)
                status = CLI_EXIT_ERROR;
            strbuf_release(&o);
        } else {
            show_text(r, &c);
        }
    }
    show_release(&c);
    return status;
}

int cli_show_json(struct store *s, const struct run_record *r, struct strbuf *out)
{
    struct show_ctx c;
    int rc = show_load(s, r, &c);
    if (rc == 0)
        show_json(out, r, &c);
    show_release(&c);
    return rc;
}
