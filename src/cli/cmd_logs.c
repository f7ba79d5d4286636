/*
 * strobe logs RUN: what the job printed (kept by strobe run's tees), and the
 * other texts kept with a run: its Python packages, lscpu, nvidia-smi -q.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "record/logtee.h"

static const struct cli_usage logs_usage = {
    "logs",
    "usage: strobe logs [--store S] [--stderr | --kind KIND | --list] [-f] RUN\n",
    "By default the job's stdout as strobe run kept it. Long output keeps its first\n"
    "256 KiB and last 768 KiB, with a note of what was cut.\n",
    1,
    0,
};

/* --stderr and --list: which text, as --kind says it (NULL: the list). */
static int kind_stderr(const struct cli_option *opt, const char *arg)
{
    (void)arg;
    *(const char **)opt->value = "stderr";
    return 0;
}

static int kind_list(const struct cli_option *opt, const char *arg)
{
    (void)arg;
    *(const char **)opt->value = NULL;
    return 0;
}

struct logs_ctx {
    const char *kind; /* NULL with --list */
    int found;
};

/* A job's texts are each node's, KIND@NODE (store/job.h): KIND alone
 * gives every node's, each under a header as tail(1) writes them. */
static const char *node_of_text(const char *kind, const char *want)
{
    size_t n = strlen(want);
    return strncmp(kind, want, n) == 0 && kind[n] == '@' ? kind + n + 1 : NULL;
}

static int print_text(const struct run_text_record *t, void *arg)
{
    struct logs_ctx *c = arg;
    const char *node;
    if (!c->kind) {
        printf("%-12s %10lld bytes%s\n", t->kind, (long long)t->bytes,
               t->bytes > (int64_t)t->len ? " (cut: the start and the end kept)" : "");
        c->found++;
    } else if (strcmp(t->kind, c->kind) == 0) {
        fwrite(t->data, 1, t->len, stdout);
        c->found++;
    } else if ((node = node_of_text(t->kind, c->kind))) {
        printf("%s==> node %s <==\n", c->found ? "\n" : "", node);
        fwrite(t->data, 1, t->len, stdout);
        if (t->len && t->data[t->len - 1] != '\n')
            putchar('\n');
        c->found++;
    }
    return 0;
}

/* ---- --follow ------------------------------------------------------------ */

struct follow_text {
    const char *kind;
    struct strbuf text;
    int64_t bytes; /* everything written, as of text; -1 while there is none */
};

static int take_text(const struct run_text_record *t, void *arg)
{
    struct follow_text *f = arg;
    if (strcmp(t->kind, f->kind) != 0)
        return 0;
    strbuf_reset(&f->text);
    if (strbuf_add(&f->text, t->data ? t->data : "", t->len) < 0)
        return -1;
    f->bytes = t->bytes;
    return 0;
}

/* Print what the text holds past the printed bytes; they are the newest, so
 * they are at its end, unless more went by between two stores than a text
 * keeps. */
static void print_new(const struct follow_text *f, int64_t *printed)
{
    if (f->bytes <= *printed)
        return;
    size_t from = log_text_tail_start(f->text.buf, f->text.len, f->bytes);
    int64_t fresh = f->bytes - *printed, have = (int64_t)(f->text.len - from);
    if (fresh > have) {
        if (*printed)
            printf("\n[strobe: %lld bytes went by between two stores and were not kept]\n",
                   (long long)(fresh - have));
        fresh = have;
    }
    fwrite(f->text.buf + f->text.len - fresh, 1, (size_t)fresh, stdout);
    fflush(stdout);
    *printed = f->bytes;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define FOLLOW_POLL_MS 1000
#define FOLLOW_LAST_MS 3000 /* after the end, how long the whole text may take to come */

/* Poll the run's text until the run ends (and its last text is in). */
static int follow(struct store *s, const char *id, const char *kind)
{
    struct follow_text f = {kind, {0}, -1};
    strbuf_init(&f.text);
    int64_t printed = 0;
    int rc = 0;
    for (;;) {
        struct run_record r;
        if (store_resolve_run(s, id, &r) < 0 || s->ops->run_texts_query(s, id, take_text, &f) < 0) {
            log_error("cannot read run %s: %s", id, s->err.buf);
            rc = -1;
            break;
        }
        int gone = run_record_recorder_gone(&r); /* it stores the whole text last */
        int recording = strcmp(r.status, RUN_RUNNING) == 0 && !gone; /* not lost */
        int64_t end_ns = r.end_ns;
        run_record_release(&r);
        print_new(&f, &printed);
        /* the recorder stores the whole text just after it marks the end:
         * it is in once the recorder has exited, or FOLLOW_LAST_MS after the
         * end where that cannot be told (another host) */
        if (!recording &&
            (gone || !end_ns || clock_realtime_ns() - end_ns > FOLLOW_LAST_MS * NS_PER_MS))
            break;
        nap_ms(recording ? FOLLOW_POLL_MS : FOLLOW_POLL_MS / 4);
    }
    strbuf_release(&f.text);
    return rc;
}

int cmd_logs(struct cli_ctx *cli, int argc, char **argv)
{
    struct logs_ctx c = {"stdout", 0};
    int follow_on = 0;
    const struct cli_option opts[] = {
        CLI_OPT_CALLBACK(0, "stderr", &c.kind, NULL, "the job's stderr", kind_stderr),
        CLI_OPT_STRING(0, "kind", &c.kind, "KIND",
                       "another text: stdout, stderr, packages, lscpu, nvidia-smi;\n"
                       "of a job's node, KIND@NODE (stdout@n1)"),
        CLI_OPT_CALLBACK(0, "list", &c.kind, NULL, "the texts the run has, with their sizes",
                         kind_list),
        CLI_OPT_FLAG('f', "follow", &follow_on,
                     "while the run records, print its output as it is stored\n"
                     "(every few seconds) until the run ends"),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &logs_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    struct store *s = cli->store;
    const struct run_record *r = &cli->run;
    status = CLI_EXIT_OK;
    if (follow_on && c.kind) {
        status = follow(s, r->id, c.kind) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    } else if (follow_on) {
        log_error("--follow follows one text: not with --list");
        status = CLI_EXIT_USAGE;
    } else if (s->ops->run_texts_query(s, r->id, print_text, &c) < 0) {
        log_error("cannot read the texts of run %s: %s", r->id, s->err.buf);
        status = CLI_EXIT_ERROR;
    } else if (!c.found && c.kind) {
        log_error("run %s '%s' has no %s kept", r->id, r->name ? r->name : "", c.kind);
        status = CLI_EXIT_ERROR;
    }
    fflush(stdout);
    return status;
}
