/* strobe report: a run's profiler report as one HTML file (render/report.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/fmt.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "render/report.h"

static const struct cli_usage report_usage = {
    "report",
    "usage: strobe report [--store S] [-o FILE] RUN\n",
    "One HTML file that works offline: summary, system usage, charts on one time axis,\n"
    "steps, phases, data loader, findings, environment (docs/report.md).\n",
    1,
    0,
};

int cmd_report(struct cli_ctx *cli, int argc, char **argv)
{
    const char *out = NULL;
    const struct cli_option opts[] = {
        CLI_OPT_STRING('o', "output", &out, "FILE",
                       "where to write it (default <run name>.report.html here;\n"
                       "- for stdout)"),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &report_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    const struct run_record *r = &cli->run;
    char name[256];
    if (!out)
        out = report_file_name(r, ".report.html", name, sizeof(name));
    struct strbuf err;
    strbuf_init(&err);
    struct report_stats st;
    status = CLI_EXIT_ERROR;
    if (report_write(cli->store, r, out, &st, &err) < 0) {
        log_error("%s", err.buf);
    } else {
        char sz[32];
        if (strcmp(out, "-") != 0)
            fprintf(stderr, "strobe: report of run %.8s: %s (%s)\n", r->id, out,
                    fmt_bytes((double)st.bytes, sz, sizeof(sz)));
        status = CLI_EXIT_OK;
    }
    strbuf_release(&err);
    return status;
}

/* <dir of the store>/reports/, made if missing: reports of runs that tests
 * and scripts make in scratch directories stay beside their store instead of
 * piling up in the working directory. A PostgreSQL store has no directory:
 * ./reports/. */
static int default_report_path(const char *store_uri, const struct run_record *r,
                               struct strbuf *out)
{
    const char *slash = store_uri_is_postgres(store_uri) ? NULL : strrchr(store_uri, '/');
    if (slash)
        strbuf_add(out, store_uri, (size_t)(slash - store_uri) + 1);
    strbuf_adds(out, "reports");
    if (mkdir(out->buf, 0777) < 0 && errno != EEXIST)
        return -errno;
    char name[256], suffix[32];
    snprintf(suffix, sizeof(suffix), "-%.8s.html", r->id);
    strbuf_addf(out, "/%s", report_file_name(r, suffix, name, sizeof(name)));
    return 0;
}

void cli_run_report(const char *store_uri, const char *run_id, const char *path)
{
    struct strbuf err, where;
    strbuf_init(&err);
    strbuf_init(&where);
    struct store *s = NULL;
    struct run_record r;
    run_record_init(&r);
    int rc = store_open(store_uri, 1, &s, &err);
    if (rc == 0 && (rc = store_resolve_run(s, run_id, &r)) < 0)
        strbuf_addf(&err, "run %s is not in the store", run_id);
    if (rc == 0 && !path && (rc = default_report_path(store_uri, &r, &where)) < 0)
        strbuf_addf(&err, "cannot make '%s': %s", where.buf, strerror(-rc));
    if (rc == 0)
        rc = report_write(s, &r, path ? path : where.buf, NULL, &err);
    if (rc < 0)
        log_warn("no report: %s; 'strobe report %.8s' tries again", err.buf, run_id);
    else
        log_note("report: %s", path ? path : where.buf);
    run_record_release(&r);
    store_close(s);
    strbuf_release(&where);
    strbuf_release(&err);
}
