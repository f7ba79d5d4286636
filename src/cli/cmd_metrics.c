/*
 * strobe metrics: list the catalog of metrics (common/metrics.def), the
 * names strobe records and imports with their unit, kind, label keys,
 * source and help. --json for programs; --markdown writes the table that
 * docs/metrics.md holds (tests/integration/test_metrics_doc.py compares).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "common/strlist.h"

static const struct cli_usage metrics_usage = {
    "metrics", "usage: strobe metrics [--json | --markdown]\n", NULL, 0, 0,
};

static int add_label(const char *item, size_t len, void *arg)
{
    struct strbuf *o = arg;
    if (o->buf[o->len - 1] != '[')
        strbuf_addch(o, ',');
    return strbuf_add_json_strn(o, item, len);
}

/* labels "gpu,pid" as the JSON array ["gpu","pid"]; "" as [] */
static void json_labels(struct strbuf *o, const char *labels)
{
    strbuf_addch(o, '[');
    if (*labels)
        strlist_each(labels, add_label, o);
    strbuf_addch(o, ']');
}

/* ,"key":"value" (no comma first) */
static void json_field(struct strbuf *o, const char *key, const char *value)
{
    strbuf_addf(o, "%s\"%s\":", strcmp(key, "name") == 0 ? "" : ",", key);
    strbuf_add_json_str(o, value);
}

static void print_json(void)
{
    struct strbuf o;
    strbuf_init(&o);
    strbuf_addch(&o, '[');
    for (int i = 0; i < METRIC_COUNT; i++) {
        const struct metric_info *m = metric_info((enum metric_id)i);
        strbuf_adds(&o, i ? ",\n{" : "\n{");
        json_field(&o, "name", m->name);
        json_field(&o, "unit", m->unit);
        json_field(&o, "kind", metric_kind_name(m->kind));
        strbuf_adds(&o, ",\"labels\":");
        json_labels(&o, m->labels);
        json_field(&o, "source", m->source);
        json_field(&o, "help", m->help);
        strbuf_addch(&o, '}');
    }
    strbuf_adds(&o, "\n]\n");
    fwrite(o.buf, 1, o.len, stdout);
    strbuf_release(&o);
}

static void print_markdown(void)
{
    printf("| name | unit | kind | labels | source | help |\n"
           "|---|---|---|---|---|---|\n");
    for (int i = 0; i < METRIC_COUNT; i++) {
        const struct metric_info *m = metric_info((enum metric_id)i);
        printf("| `%s` | %s | %s | %s | %s | %s |\n", m->name, m->unit, metric_kind_name(m->kind),
               m->labels, m->source, m->help);
    }
}

static void print_text(void)
{
    printf("%-26s %-8s %-7s %-8s %s\n", "NAME", "UNIT", "KIND", "LABELS", "HELP");
    for (int i = 0; i < METRIC_COUNT; i++) {
        const struct metric_info *m = metric_info((enum metric_id)i);
        printf("%-26s %-8s %-7s %-8s %s\n", m->name, *m->unit ? m->unit : "-",
               metric_kind_name(m->kind), *m->labels ? m->labels : "-", m->help);
    }
}

int cmd_metrics(struct cli_ctx *cli, int argc, char **argv)
{
    int json = 0, markdown = 0;
    const struct cli_option opts[] = {
        CLI_OPT_FLAG(0, "json", &json, "one JSON array, an object per metric"),
        CLI_OPT_FLAG(0, "markdown", &markdown, "the table of docs/metrics.md"),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &metrics_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (json)
        print_json();
    else if (markdown)
        print_markdown();
    else
        print_text();
    return CLI_EXIT_OK;
}
