/*
 * Findings as the read-side commands print them (strobe show, strobe
 * rules): most severe first, each with its time range from the run's start,
 * its evidence, what the framework events show, and the recommendation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json_writer.h"
#include "common/fmt.h"
#include "common/strbuf.h"

static int severity_rank(const char *s)
{
    static const char *const order[] = {"high", "medium", "low", "info"};
    for (int i = 0; i < 4; i++)
        if (s && strcmp(s, order[i]) == 0)
            return i;
    return 4;
}

static const struct finding_record *sort_base;

static int cmp_finding(const void *a, const void *b)
{
    const struct finding_record *x = &sort_base[*(const uint32_t *)a];
    const struct finding_record *y = &sort_base[*(const uint32_t *)b];
    int d = severity_rank(x->severity) - severity_rank(y->severity);
    if (d)
        return d;
    if (x->start_ns != y->start_ns)
        return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
    return (*(const uint32_t *)a > *(const uint32_t *)b) -
           (*(const uint32_t *)a < *(const uint32_t *)b);
}

void findings_print_text(FILE *out, const struct finding_record *f, uint32_t n, int64_t start_ns)
{
    if (!n)
        return;
    uint32_t *order = malloc(n * sizeof(*order));
    if (!order)
        return;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    sort_base = f;
    qsort(order, n, sizeof(*order), cmp_finding);
    for (uint32_t k = 0; k < n; k++) {
        const struct finding_record *x = &f[order[k]];
        fprintf(out, "  %-6s ", x->severity ? x->severity : "");
        cli_put_visible(out, x->rule);
        fprintf(out, " [");
        cli_put_visible(out, x->scope);
        char when[48];
        fprintf(out, "] %s\n",
                fmt_offset_range((double)(x->start_ns - start_ns) / 1e9,
                                 (double)(x->end_ns - start_ns) / 1e9, when, sizeof(when)));
        fprintf(out, "         ");
        cli_put_visible(out, x->evidence);
        fputc('\n', out);
        if (x->events && *x->events) {
            fprintf(out, "         steps: ");
            cli_put_visible(out, x->events);
            fputc('\n', out);
        }
        if (x->recommendation && *x->recommendation) {
            fprintf(out, "         -> ");
            cli_put_visible(out, x->recommendation);
            fputc('\n', out);
        }
    }
    free(order);
}

void findings_json(struct json_writer *jw, const struct finding_record *f, uint32_t n)
{
    jw_array_begin(jw);
    for (uint32_t i = 0; i < n; i++) {
        const struct finding_record *x = &f[i];
        jw_object_begin(jw);
        jw_kv_str(jw, "rule", x->rule);
        jw_kv_str(jw, "severity", x->severity);
        jw_kv_int(jw, "start_ns", x->start_ns);
        jw_kv_int(jw, "end_ns", x->end_ns);
        jw_kv_str(jw, "scope", x->scope);
        jw_kv_str(jw, "evidence", x->evidence); /* NULL: "" */
        jw_kv_str_or_null(jw, "events", x->events);
        jw_kv_str(jw, "recommendation", x->recommendation);
        jw_end(jw);
    }
    jw_end(jw);
}

/* ---- loading stored findings ------------------------------------------------ */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int keep_finding(const struct finding_record *f, void *arg)
{
    struct stored_findings *sf = arg;
    if (sf->n == sf->cap) {
        uint32_t cap = sf->cap ? sf->cap * 2 : 8;
        struct finding_record *p = realloc(sf->f, cap * sizeof(*p));
        if (!p)
            return -1;
        sf->f = p;
        sf->cap = cap;
    }
    struct finding_record *x = &sf->f[sf->n++];
    x->rule = dup_or_null(f->rule);
    x->severity = dup_or_null(f->severity);
    x->scope = dup_or_null(f->scope);
    x->start_ns = f->start_ns;
    x->end_ns = f->end_ns;
    x->evidence = dup_or_null(f->evidence);
    x->events = dup_or_null(f->events);
    x->recommendation = dup_or_null(f->recommendation);
    return 0;
}

int stored_findings_load(struct store *s, const char *run_id, struct stored_findings *out)
{
    memset(out, 0, sizeof(*out));
    return s->ops->findings_query(s, run_id, keep_finding, out);
}

void stored_findings_release(struct stored_findings *sf)
{
    for (uint32_t i = 0; i < sf->n; i++) {
        struct finding_record *x = &sf->f[i];
        free((char *)x->rule);
        free((char *)x->severity);
        free((char *)x->scope);
        free((char *)x->evidence);
        free((char *)x->events);
        free((char *)x->recommendation);
    }
    free(sf->f);
    memset(sf, 0, sizeof(*sf));
}
