/*
 * strobe trace RUN [-o FILE] [--format chrome|perfetto] [--steps A-B]
 * [--mode M]: one run's events, metrics and findings as one timeline
 * (render/trace.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "render/trace.h"

static const struct cli_usage trace_usage = {
    "trace",
    "usage: strobe trace [--store S] [-o FILE] [--format chrome|perfetto] [--steps A-B]\n"
    "                    [--mode train|eval|predict|global] RUN\n",
    "formats:\n"
    "  chrome:   Chrome trace-event JSON (default; FILE ending in .gz is compressed)\n"
    "  perfetto: Perfetto's protobuf TrackEvent format, with interned names\n",
    -1,
    0,
};

/* <name>.<ext> with what a file name cannot hold (/, control bytes, a
 * leading dot) replaced by '_'; the id when the run has no name. */
static char *default_path(const struct run_record *r, const char *ext)
{
    const char *base = r->name && *r->name ? r->name : r->id;
    size_t n = strlen(base);
    if (n > 200)
        n = 200;
    char *p = malloc(n + strlen(ext) + 1);
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)base[i];
        p[i] = c == '/' || c < 0x20 || c == 0x7f || (i == 0 && c == '.') ? '_' : (char)c;
    }
    strcpy(p + n, ext);
    return p;
}

static int write_trace(struct store *s, const struct run_record *r, const struct trace_options *o,
                       int perfetto, const char *path)
{
    struct stored_findings sf;
    if (stored_findings_load(s, r->id, &sf) < 0) {
        log_error("cannot read the findings of run %s: %s", r->id, s->err.buf);
        return CLI_EXIT_ERROR;
    }
    struct trace t;
    struct trace_sink k;
    struct strbuf err;
    strbuf_init(&err);
    int status = CLI_EXIT_ERROR;
    int rc = trace_build(s, r, o, sf.f, sf.n, &t, &err);
    if (rc < 0) {
        log_error("%s", err.len ? err.buf : "cannot build the trace");
        goto out_trace;
    }
    if (trace_sink_open(&k, path, &err) < 0) {
        log_error("%s", err.buf);
        goto out_trace;
    }
    rc = perfetto ? trace_write_perfetto(&t, &k) : trace_write_chrome(&t, &k);
    uint64_t bytes = k.bytes + k.buf.len;
    int closed = trace_sink_close(&k);
    if (t.read_failed) {
        log_error("cannot read the series of run %s: %s (%s is incomplete)", r->id,
                  s->err.len ? s->err.buf : "out of memory",
                  strcmp(path, "-") == 0 ? "the output" : path);
        goto out_trace;
    }
    if (closed < 0 || rc < 0) {
        log_error("cannot write '%s': %s", path, rc == -ENOMEM ? "out of memory" : "write error");
        goto out_trace;
    }
    if (t.corrupt_blocks)
        log_warn("%" PRIu64 " damaged block%s of run %s's series skipped", t.corrupt_blocks,
                 t.corrupt_blocks == 1 ? "" : "s", r->id);
    if (t.crowded)
        log_warn("%" PRIu64 " slice%s overlapped more than %d others on one thread: drawn on its "
                 "last lane, out of their nesting",
                 t.crowded, t.crowded == 1 ? "" : "s", TRACE_LANES_MAX - 1);
    if (t.too_deep)
        log_warn("%" PRIu64 " slice%s nested more than %d deep on one lane: in Perfetto's format "
                 "the innermost open one ends where a deeper one begins",
                 t.too_deep, t.too_deep == 1 ? "" : "s", TRACE_DEPTH_MAX);
    if (strcmp(path, "-") != 0)
        log_note("wrote %s: %" PRIu64 " slices, %" PRIu64 " instants, %" PRIu64
                 " counter points, %u findings (%.1f MiB%s)",
                 path, t.slices, t.instants, t.points, t.nfindings, (double)bytes / 1048576.0,
                 strlen(path) > 3 && strcmp(path + strlen(path) - 3, ".gz") == 0
                     ? " before compression"
                     : "");
    status = CLI_EXIT_OK;
out_trace:
    trace_release(&t);
    stored_findings_release(&sf);
    strbuf_release(&err);
    return status;
}

static int steps_option(const struct cli_option *opt, const char *arg)
{
    struct trace_options *o = opt->value;
    if (cli_parse_steps(arg, &o->step_from, &o->step_to) < 0) {
        log_error("bad --steps '%s': give A-B, steps counted from 1", arg);
        return -1;
    }
    return 0;
}

static int mode_option(const struct cli_option *opt, const char *arg)
{
    struct trace_options *o = opt->value;
    if ((o->mode = step_mode_parse(arg)) < 0) {
        log_error("bad --mode '%s': train, eval, predict or global", arg);
        return -1;
    }
    return 0;
}

int cmd_trace(struct cli_ctx *cli, int argc, char **argv)
{
    const char *path = NULL, *format = "chrome";
    struct trace_options o = {0, 0, -1};
    const struct cli_option opts[] = {
        CLI_OPT_STRING('o', "output", &path, "FILE",
                       "default <run name>.trace.json or .perfetto-trace in the\n"
                       "current directory; '-' writes to stdout"),
        CLI_OPT_STRING('f', "format", &format, "F", "chrome (the default) or perfetto"),
        CLI_OPT_CALLBACK(0, "steps", &o, "A-B",
                         "only the time from the start of step A to the end of step B",
                         steps_option),
        CLI_OPT_CALLBACK(0, "mode", &o, "M",
                         "whose step numbers --steps means: train, eval, predict or\n"
                         "global (default: the training steps, train and global)",
                         mode_option),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &trace_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    int perfetto = strcmp(format, "perfetto") == 0;
    if (!perfetto && strcmp(format, "chrome") != 0) {
        log_error("unknown trace format '%s' (chrome or perfetto)", format);
        return CLI_EXIT_USAGE;
    }
    if (cli->nargs != 1)
        return cli_usage_error(cli, &trace_usage, opts);
    if ((status = cli_open(cli)) >= 0)
        return status;
    const struct run_record *r = &cli->run;
    char *owned = path ? NULL : default_path(r, perfetto ? ".perfetto-trace" : ".trace.json");
    status = CLI_EXIT_ERROR;
    if (path || owned)
        status = write_trace(cli->store, r, &o, perfetto, path ? path : owned);
    free(owned);
    return status;
}
