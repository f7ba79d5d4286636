/*
 * strobe logs RUN: what the job printed (kept by strobe run's tees), and the
 * other texts kept with a run: its Python packages, lscpu, nvidia-smi -q.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "record/logtee.h"

static const char logs_usage[] =
    "usage: strobe logs [--store S] [--stderr | --kind KIND | --list] [-f] RUN\n"
    "\n"
    "  (default)     the job's stdout as strobe run kept it\n"
    "  --stderr      the job's stderr\n"
    "  --kind KIND   another text: stdout, stderr, packages, lscpu, nvidia-smi\n"
    "  --list        the texts the run has, with their sizes\n"
    "  -f, --follow  while the run records, print its output as it is stored (every\n"
    "                few seconds) until the run ends\n"
    "\n"
    "Long output keeps its first 256 KiB and last 768 KiB, with a note of what was cut.\n";

struct logs_ctx {
    const char *kind; /* NULL with --list */
    int found;
};

static int print_text(const struct run_text_record *t, void *arg)
{
    struct logs_ctx *c = arg;
    if (!c->kind) {
        printf("%-12s %10lld bytes%s\n", t->kind, (long long)t->bytes,
               t->bytes > (int64_t)t->len ? " (cut: the start and the end kept)" : "");
        c->found++;
    } else if (strcmp(t->kind, c->kind) == 0) {
        fwrite(t->data, 1, t->len, stdout);
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

int cmd_logs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"stderr", no_argument, NULL, 'e'},
        {"kind", required_argument, NULL, 'k'},
        {"list", no_argument, NULL, 'l'},
        {"follow", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *store_flag = NULL;
    struct logs_ctx c = {"stdout", 0};
    int ch;
    optind = 1;
    int follow_on = 0;
    while ((ch = cli_getopt("logs", argc, argv, "fh", opts)) != -1) {
        switch (ch) {
        case 's':
            store_flag = optarg;
            break;
        case 'e':
            c.kind = "stderr";
            break;
        case 'k':
            c.kind = optarg;
            break;
        case 'l':
            c.kind = NULL;
            break;
        case 'f':
            follow_on = 1;
            break;
        case 'h':
            fputs(logs_usage, stdout);
            return CLI_EXIT_OK;
        default:
            return CLI_EXIT_USAGE; /* cli_getopt said why */
        }
    }
    if (optind != argc - 1) {
        fputs(logs_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    struct store *s;
    if (cli_open_store(store_flag, 1, &s) < 0)
        return CLI_EXIT_ERROR;
    struct run_record r;
    int status = CLI_EXIT_OK;
    if (cli_resolve(s, argv[optind], &r) < 0) {
        store_close(s);
        return CLI_EXIT_ERROR;
    }
    if (follow_on && c.kind) {
        status = follow(s, r.id, c.kind) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    } else if (follow_on) {
        log_error("--follow follows one text: not with --list");
        status = CLI_EXIT_USAGE;
    } else if (s->ops->run_texts_query(s, r.id, print_text, &c) < 0) {
        log_error("cannot read the texts of run %s: %s", r.id, s->err.buf);
        status = CLI_EXIT_ERROR;
    } else if (!c.found && c.kind) {
        log_error("run %s '%s' has no %s kept", r.id, r.name ? r.name : "", c.kind);
        status = CLI_EXIT_ERROR;
    }
    fflush(stdout);
    run_record_release(&r);
    store_close(s);
    return status;
}
