#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json_writer.h"
#include "common/label.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strlist.h"
#include "import/sagemaker.h"
#include "store/points.h"

static const struct cli_usage export_usage = {
    "export",
    "usage: strobe export [--store S] --format csv|jsonl [--metric GLOB]... [-o FILE] RUN\n"
    "       strobe export [--store S] --format sagemaker -o DIR RUN\n",
    "formats:\n"
    "  csv:   time_ns,metric,value   (metric as name{labels})\n"
    "  jsonl: "
    "{\"time_ns\":...,\"metric\":\"cpu.util\",\"labels\":{\"core\":\"0\"},\"value\":...}\n"
    "  sagemaker: SageMaker Debugger's profiler layout under DIR (system/, framework/)\n",
    -1,
    0,
};

struct export_ctx {
    struct store *s;
    FILE *out;
    int jsonl;
    char **globs;
    char *matched; /* per glob: it matched a series */
    int nglobs;
    int failed;
    struct strbuf line;
    const char *key;        /* the series being written: name{labels} */
    struct strbuf json_mid; /* its JSON members between the time and the value */
};

/* Whether a series is exported; every glob that takes it is marked. */
static int wanted(struct export_ctx *c, const char *name, const char *key)
{
    if (!c->nglobs)
        return 1;
    int any = 0;
    for (int i = 0; i < c->nglobs; i++)
        if (fnmatch(c->globs[i], key, 0) == 0 || fnmatch(c->globs[i], name, 0) == 0)
            any = c->matched[i] = 1;
    return any;
}

/* A --metric that took nothing is most likely misspelt: say so, once each. */
static void warn_unmatched(const struct export_ctx *c, const char *run_id)
{
    for (int i = 0; i < c->nglobs; i++)
        if (!c->matched[i])
            log_warn("--metric '%s' matches no series of run %s", c->globs[i], run_id);
}

/* CSV field: quoted when it holds a comma, quote or newline (RFC 4180). */
static void csv_field(struct strbuf *o, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        strbuf_adds(o, s);
        return;
    }
    strbuf_addch(o, '"');
    for (; *s; s++) {
        if (*s == '"')
            strbuf_addch(o, '"');
        strbuf_addch(o, *s);
    }
    strbuf_addch(o, '"');
}

struct labels_out {
    struct json_writer *jw;
    struct strbuf k, v; /* the pair unescaped */
};

static int label_json(const char *key, size_t key_len, const char *value, size_t value_len,
                      void *arg)
{
    struct labels_out *l = arg;
    strbuf_reset(&l->k);
    strbuf_reset(&l->v);
    label_unescape(&l->k, key, key_len);
    label_unescape(&l->v, value, value_len);
    jw_kv_str(l->jw, l->k.buf, l->v.buf);
    return 0;
}

/* labels "a=1,b=2" as a JSON object, each key and value unescaped
 * (common/label.h: an interface "x,y=z" is stored as iface=x%2Cy%3Dz) */
static void labels_json(struct json_writer *jw, const char *labels)
{
    struct labels_out l = {.jw = jw};
    strbuf_init(&l.k);
    strbuf_init(&l.v);
    jw_object_begin(jw);
    if (labels)
        strlist_each_pair(labels, label_json, &l);
    jw_end(jw);
    strbuf_release(&l.k);
    strbuf_release(&l.v);
}

/* JSON has no NaN or infinity: they are written as the strings "nan", "inf"
 * and "-inf", so an unlimited cgroup limit is not mistaken for a gap. */
static void json_value(struct json_writer *jw, double v)
{
    if (isnan(v))
        jw_str(jw, "nan");
    else if (isinf(v))
        jw_str(jw, v > 0 ? "inf" : "-inf");
    else
        jw_num(jw, v);
}

static void csv_value(struct strbuf *o, double v)
{
    if (isnan(v))
        strbuf_adds(o, "nan");
    else if (isinf(v))
        strbuf_adds(o, v > 0 ? "inf" : "-inf");
    else
        strbuf_add_json_num(o, v);
}

/* --format sagemaker: a directory, not a stream (import/sagemaker.h). */
static int export_sagemaker(struct store *s, const struct run_record *r, const char *dir)
{
    struct sagemaker_export_counts n;
    struct strbuf err;
    strbuf_init(&err);
    int rc = sagemaker_export(s, r, dir, &n, &err);
    if (rc < 0)
        log_error("export of run %s failed: %s", r->id, err.buf);
    else
        log_note("exported run %s to '%s': %llu system files (%llu lines), %llu trace files "
                 "(%llu events, %llu steps); %llu series have no SageMaker equivalent, %llu "
                 "non-finite values left out",
                 r->id, dir, (unsigned long long)n.system_files, (unsigned long long)n.lines,
                 (unsigned long long)n.trace_files, (unsigned long long)n.events,
                 (unsigned long long)n.steps, (unsigned long long)n.series_left_out,
                 (unsigned long long)n.skipped_points);
    strbuf_release(&err);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* One block's points of c->sr as lines; nonzero (stop) when output fails. */
static int export_points(const struct point *p, size_t n, void *arg)
{
    struct export_ctx *c = arg;
    struct strbuf *o = &c->line;
    for (size_t i = 0; i < n; i++) {
        strbuf_reset(o);
        if (c->jsonl) {
            struct json_writer jw;
            jw_init(&jw, o);
            jw_object_begin(&jw);
            jw_kv_int(&jw, "time_ns", p[i].ts_ns);
            jw_raw_members(&jw, c->json_mid.buf);
            jw_key(&jw, "value");
            json_value(&jw, p[i].value);
            jw_end(&jw);
            jw_space(&jw, "\n");
        } else {
            strbuf_addf(o, "%lld,", (long long)p[i].ts_ns);
            csv_field(o, c->key);
            strbuf_addch(o, ',');
            csv_value(o, p[i].value);
            strbuf_addch(o, '\n');
        }
        int rc = strbuf_write(o, c->out);
        if (rc < 0) {
            errno = -rc; /* said by the caller */
            c->failed = 1;
            return 1;
        }
    }
    return 0;
}

static int export_series(const struct series_record *sr, void *arg)
{
    struct export_ctx *c = arg;
    struct strbuf key;
    strbuf_init(&key);
    strbuf_adds(&key, sr->name);
    if (sr->labels[0])
        strbuf_addf(&key, "{%s}", sr->labels);
    if (!wanted(c, sr->name, key.buf)) {
        strbuf_release(&key);
        return 0;
    }
    c->key = key.buf;
    /* the metric and its labels, unescaped, once a series, not once a point */
    strbuf_reset(&c->json_mid);
    struct json_writer mid;
    jw_init_members(&mid, &c->json_mid);
    jw_kv_str(&mid, "metric", sr->name);
    jw_key(&mid, "labels");
    labels_json(&mid, sr->labels);
    if (strbuf_failed(&key) || jw_failed(&mid)) {
        errno = ENOMEM; /* said by the caller */
        c->failed = 1;
        strbuf_release(&key);
        return 1;
    }
    uint64_t corrupt = 0;
    /* a block at a time: a long series is never held whole */
    if (store_each_block_points(c->s, sr->id, export_points, c, &corrupt) < 0)
        c->failed = 1;
    if (corrupt)
        log_warn("series %s: %llu damaged block%s skipped", key.buf, (unsigned long long)corrupt,
                 corrupt == 1 ? "" : "s");
    strbuf_release(&key);
    return c->failed ? 1 : 0;
}

/* globs and matched: room for every --metric, which argc bounds */
static int export_main(struct cli_ctx *cli, int argc, char **argv, char **globs, char *matched)
{
    const char *format = NULL, *path = NULL;
    struct cli_list metrics = {(const char **)globs, 0, argc};
    const struct cli_option opts[] = {
        CLI_OPT_STRING('f', "format", &format, "F", "csv, jsonl or sagemaker"),
        CLI_OPT_LIST('m', "metric", &metrics, "GLOB",
                     "only the series whose name matches (repeatable)"),
        CLI_OPT_STRING('o', "output", &path, "FILE", "where it goes (default or '-': stdout)"),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &export_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (path && strcmp(path, "-") == 0)
        path = NULL; /* stdout, as trace and report take it */
    struct export_ctx c;
    memset(&c, 0, sizeof(c));
    c.globs = globs;
    c.matched = matched;
    c.nglobs = metrics.n;
    int sagemaker = format && strcmp(format, "sagemaker") == 0;
    if (!format || (strcmp(format, "csv") != 0 && strcmp(format, "jsonl") != 0 && !sagemaker) ||
        cli->nargs != 1 || (sagemaker && (!path || c.nglobs))) {
        if (format && strcmp(format, "csv") != 0 && strcmp(format, "jsonl") != 0 && !sagemaker)
            log_error("unknown export format '%s' (csv, jsonl or sagemaker)", format);
        else if (sagemaker && !path)
            log_error("--format sagemaker writes a directory: give it with -o DIR");
        else if (sagemaker && c.nglobs)
            log_error("--metric does not apply to --format sagemaker");
        return cli_usage_error(cli, &export_usage, opts);
    }
    if ((status = cli_open(cli)) >= 0)
        return status;
    c.s = cli->store;
    struct run_record *r = &cli->run;
    c.jsonl = strcmp(format, "jsonl") == 0;
    status = CLI_EXIT_ERROR;
    if (sagemaker) {
        status = export_sagemaker(c.s, r, path);
    } else {
        c.out = path ? fopen(path, "w") : stdout;
        if (!c.out) {
            log_error("cannot write '%s': %s", path, strerror(errno));
        } else {
            strbuf_init(&c.line);
            strbuf_init(&c.json_mid);
            if (!c.jsonl)
                fputs("time_ns,metric,value\n", c.out);
            int rc = c.s->ops->series_query(c.s, r->id, export_series, &c);
            if (fflush(c.out) != 0 || (path && fclose(c.out) != 0))
                c.failed = 1;
            if (rc < 0 || c.failed)
                log_error("export of run %s failed: %s", r->id,
                          rc < 0 ? c.s->err.buf : strerror(errno));
            else
                status = CLI_EXIT_OK;
            if (status == CLI_EXIT_OK)
                warn_unmatched(&c, r->id);
            strbuf_release(&c.line);
            strbuf_release(&c.json_mid);
        }
    }
    return status;
}

int cmd_export(struct cli_ctx *cli, int argc, char **argv)
{
    /* not a fixed array: a 65th --metric was dropped without a word, and
     * its series with it */
    char **globs = calloc((size_t)argc + 1, sizeof(*globs));
    char *matched = calloc((size_t)argc + 1, 1);
    if (!globs || !matched) {
        free(globs);
        free(matched);
        log_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    int status = export_main(cli, argc, argv, globs, matched);
    free(globs);
    free(matched);
    return status;
}
