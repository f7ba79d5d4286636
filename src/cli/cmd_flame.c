/*
 * strobe flame RUN [--role R] [--phase P] [--steps A-B] [--idle] [--pid P]
 * [--format collapsed|svg|json|html] [-o FILE]: a run's Python stack
 * samples as a flame graph (pyprof/view.h). It reads the store, so it works
 * while the run records.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "pyprof/view.h"
#include "render/flame_html.h"
#include "render/flame_svg.h"

static const struct cli_usage flame_usage = {
    "flame",
    "usage: strobe flame [--store S] [--role R] [--phase P] [--steps A-B] [--idle] [--pid P]\n"
    "                    [--format collapsed|svg|json|html] [-o FILE] RUN\n",
    "formats:\n"
    "  collapsed: 'frame;frame;frame count' lines, root first (flamegraph.pl, speedscope)\n"
    "  svg:       a static flame graph\n"
    "  json:      the flame data (docs/cli.md), every state, for the page and scripts\n"
    "  html:      an interactive flame graph page\n",
    1,
    0,
};

struct flame_opts {
    struct py_view_filter f;
    const char *phase, *format, *path;
    long pid;
};

static int steps_option(const struct cli_option *opt, const char *arg)
{
    struct py_view_filter *f = opt->value;
    if (cli_parse_steps(arg, &f->step_from, &f->step_to) < 0) {
        log_error("bad --steps '%s': give A-B, steps counted from 1", arg);
        return -1;
    }
    return 0;
}

static int no_samples(const struct run_record *r)
{
    log_error("run %s has no Python samples: record with --py-sample RATE or --py-profile A-B",
              r->id);
    return CLI_EXIT_ERROR;
}

/* The document the format asks for, into out. */
static int render(const struct py_view *v, const struct run_record *r, const struct flame_opts *o,
                  struct strbuf *out)
{
    if (strcmp(o->format, "json") == 0 || strcmp(o->format, "html") == 0)
        return py_view_json(v, r->id, &o->f, out);
    if (strcmp(o->format, "collapsed") == 0)
        return py_view_collapsed(v, &o->f, out);
    struct strbuf lines, title;
    strbuf_init(&lines);
    strbuf_init(&title);
    strbuf_addf(&title, "%s (%s)", r->name && *r->name ? r->name : r->id, r->id);
    if (o->f.role)
        strbuf_addf(&title, " role %s", o->f.role);
    if (o->phase)
        strbuf_addf(&title, " phase %s", o->phase);
    if (o->f.step_from)
        strbuf_addf(&title, " steps %u-%u", o->f.step_from, o->f.step_to);
    strbuf_adds(&title, o->f.idle ? ", all states" : ", on-CPU");
    int rc = py_view_collapsed(v, &o->f, &lines);
    if (rc == 0)
        rc = flame_svg_write(lines.len ? lines.buf : "", title.buf, out);
    strbuf_release(&lines);
    strbuf_release(&title);
    return rc;
}

static int write_out(const struct strbuf *doc, const struct flame_opts *o)
{
    FILE *f = o->path && strcmp(o->path, "-") != 0 ? fopen(o->path, "wb") : stdout;
    if (!f) {
        log_error("cannot write '%s': %s", o->path, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    int rc = strcmp(o->format, "html") == 0 ? flame_html_write(doc, f)
                                            : (strbuf_write(doc, f) < 0 ? -EIO : 0);
    int closed = f == stdout ? fflush(f) : fclose(f);
    if (rc == -EIO || (rc == 0 && closed != 0)) {
        log_error("cannot write '%s'", o->path ? o->path : "stdout");
        return CLI_EXIT_ERROR;
    }
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

static int flame(struct store *s, const struct run_record *r, const struct flame_opts *o)
{
    struct py_run pr;
    struct strbuf err, doc;
    strbuf_init(&err);
    strbuf_init(&doc);
    struct py_view v;
    memset(&v, 0, sizeof(v));
    int status = CLI_EXIT_ERROR;
    if (py_run_load(s, r, 1, &pr, &err) < 0) {
        log_error("%s", err.buf);
        goto out;
    }
    if (!py_run_samples(&pr)) {
        status = no_samples(r);
        goto out;
    }
    if (py_view_build(&v, pr.src, pr.nprofs, &pr.ev, &o->f) < 0 || render(&v, r, o, &doc) < 0) {
        log_error("cannot lay out the samples of run %s: out of memory", r->id);
        goto out;
    }
    if (pr.bad_blocks)
        log_warn("%llu damaged block%s of run %s's Python samples skipped",
                 (unsigned long long)pr.bad_blocks, pr.bad_blocks == 1 ? "" : "s", r->id);
    if (!v.selected)
        log_warn("no sample of run %s matches the filters", r->id);
    status = write_out(&doc, o);
out:
    py_view_release(&v);
    py_run_release(&pr);
    strbuf_release(&err);
    strbuf_release(&doc);
    return status;
}

int cmd_flame(struct cli_ctx *cli, int argc, char **argv)
{
    struct flame_opts o = {{NULL, -1, 0, 0, 0, 0}, NULL, "collapsed", NULL, 0};
    const struct cli_option opts[] = {
        CLI_OPT_STRING(0, "role", &o.f.role, "R",
                       "only these processes: main, rank N, worker N, child, or the\n"
                       "words a label holds ('worker': every worker)"),
        CLI_OPT_STRING(0, "phase", &o.phase, "P",
                       "only this phase: data, forward, backward, optimizer, comm,\n"
                       "other, none or eval"),
        CLI_OPT_CALLBACK(0, "steps", &o.f, "A-B", "only the samples of training steps A to B",
                         steps_option),
        CLI_OPT_FLAG(0, "idle", &o.f.idle,
                     "waiting threads too (lock, io, sleep, gpu, wait), not only\n"
                     "running ones"),
        CLI_OPT_INT(0, "pid", &o.pid, "P", "only this process (as strobe show lists it)", 1,
                    INT32_MAX, "a process id"),
        CLI_OPT_STRING('f', "format", &o.format, "F", "collapsed (the default), svg, json or html"),
        CLI_OPT_STRING('o', "output", &o.path, "FILE", "write to FILE (default stdout)"),
        CLI_OPT_END,
    };
    int status = cli_parse(cli, &flame_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    static const char *const formats[] = {"collapsed", "svg", "json", "html"};
    int known = 0;
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        known |= strcmp(o.format, formats[i]) == 0;
    if (!known) {
        log_error("unknown flame format '%s' (collapsed, svg, json or html)", o.format);
        return CLI_EXIT_USAGE;
    }
    if (o.phase && (o.f.phase = py_phase_parse(o.phase)) < 0) {
        log_error("bad --phase '%s': data, forward, backward, optimizer, comm, other, none or eval",
                  o.phase);
        return CLI_EXIT_USAGE;
    }
    if (o.f.role && !*o.f.role) {
        log_error("bad --role '': give a label such as main, rank 0 or worker");
        return CLI_EXIT_USAGE;
    }
    o.f.pid = o.pid;
    if ((status = cli_open(cli)) >= 0)
        return status;
    return flame(cli->store, &cli->run, &o);
}
