/*
 * strobe top: the running runs of a store, live, one row each (every
 * node's run of a job in cluster mode), read from the snapshot each
 * recorder stores once a second (serve/expo.h). render/top_view.c makes
 * the numbers and the text; top_term.c owns the terminal.
 *
 * The live view reads the store and redraws once a second, and at once
 * on a key: a key never waits for the store's next read. With --once, or
 * when stdout or stdin is no terminal, it prints one table (or --json)
 * and ends, with no escapes.
 *
 * STROBE_TOP_FRAME_LOG=PATH appends a line to PATH at each redraw: the
 * tests count redraws with it, not by timing the screen.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/top_term.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "render/top_view.h"
#include "serve/expo.h"
#include "store/job.h"

#define TICK_MS 1000

static const struct cli_usage top_usage = {
    "top",
    "usage: strobe top [--store S] [--once] [--json]\n",
    "Keys: c CPU, m memory, g GPU, s step time, r steps/s, e elapsed, n name\n"
    "(or left, right, Tab) sort; up, down select; Enter the run's processes,\n"
    "GPUs, ranks and findings; Esc or Backspace back; q quit.\n",
    0,
    0,
};

/* The runs of one read of the store. */
struct top_runs {
    struct top_run *r;
    size_t n, cap;
    struct strbuf err; /* why the last read failed, or empty */
};

struct snapshot_ctx {
    struct top_run *t;
    int64_t now_ns;
    int rc;
};

static int take_snapshot(const struct run_text_record *tr, void *arg)
{
    struct snapshot_ctx *c = arg;
    c->rc = top_run_load(c->t, tr->data, tr->len, c->now_ns);
    return 0;
}

struct read_ctx {
    struct store *s;
    struct top_runs *runs;
    int64_t now_ns;
    int rc;
};

/* A running run: a row with its snapshot's numbers. A job's own run has
 * no recorder: its nodes have the rows. */
static int read_run(const struct run_record *r, void *arg)
{
    struct read_ctx *c = arg;
    if (run_record_is_job(r))
        return 0;
    struct top_runs *runs = c->runs;
    if (runs->n == runs->cap) {
        size_t cap = runs->cap ? runs->cap * 2 : 16;
        struct top_run *grown = realloc(runs->r, cap * sizeof(*grown));
        if (!grown)
            return c->rc = -ENOMEM;
        runs->r = grown;
        runs->cap = cap;
    }
    struct top_run *t = &runs->r[runs->n++];
    if (top_run_init(t, r->id, r->name, r->node ? r->node : r->host, r->start_ns) < 0)
        return c->rc = -ENOMEM;
    struct snapshot_ctx sc = {t, c->now_ns, 0};
    int rc = c->s->ops->run_text_get(c->s, r->id, EXPO_TEXT_KIND, take_snapshot, &sc);
    if (rc < 0 || sc.rc < 0)
        return c->rc = rc < 0 ? rc : sc.rc;
    return 0;
}

static void runs_clear(struct top_runs *runs)
{
    for (size_t i = 0; i < runs->n; i++)
        top_run_release(&runs->r[i]);
    runs->n = 0;
}

static void runs_release(struct top_runs *runs)
{
    runs_clear(runs);
    free(runs->r);
    strbuf_release(&runs->err);
}

/* Read the running runs anew. 0, or negative with runs->err saying why. */
static int runs_read(struct store *s, struct top_runs *runs, int64_t now_ns)
{
    runs_clear(runs);
    strbuf_reset(&runs->err);
    struct read_ctx c = {s, runs, now_ns, 0};
    int rc = s->ops->runs_where(s, RUNS_OF_STATUS, RUN_RUNNING, read_run, &c);
    if (rc >= 0 && c.rc < 0)
        rc = c.rc;
    if (rc < 0)
        strbuf_addf(&runs->err, "cannot read store '%s': %s", s->uri,
                    s->err.len ? s->err.buf : strerror(-rc));
    return rc;
}

/* ---- one shot ----------------------------------------------------------------------------- */

static int print_once(struct store *s, int json)
{
    struct top_runs runs = {0};
    strbuf_init(&runs.err);
    int64_t now = clock_realtime_ns();
    if (runs_read(s, &runs, now) < 0) {
        log_error("%s", runs.err.buf);
        runs_release(&runs);
        return CLI_EXIT_ERROR;
    }
    top_sort_runs(runs.r, runs.n, TOP_SORT_CPU);
    struct strbuf out;
    strbuf_init(&out);
    if (json) {
        top_json(&out, runs.r, runs.n, now);
    } else {
        int cols = 0, rows;
        if (isatty(STDOUT_FILENO))
            top_term_size(&cols, &rows);
        struct top_layout l = {.width = cols, .selected = -1, .now_ns = now, .sort = TOP_SORT_CPU};
        top_table_text(&out, runs.r, runs.n, &l);
    }
    int rc = cli_print(&out);
    strbuf_release(&out);
    runs_release(&runs);
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* ---- the live view ------------------------------------------------------------------------- */

struct live {
    struct store *s;
    struct top_runs runs;
    enum top_sort sort;
    char selected[RUN_ID_LEN + 1]; /* the selected run's id: it stays selected as rows move */
    int detail;                    /* showing the selected run's detail */
    int top;                       /* the first row shown */
    int64_t now_ns;
    int frame_fd; /* STROBE_TOP_FRAME_LOG, or -1 */
    unsigned long frames;
};

static int selected_row(const struct live *v)
{
    for (size_t i = 0; i < v->runs.n; i++)
        if (strcmp(v->runs.r[i].id, v->selected) == 0)
            return (int)i;
    return v->runs.n ? 0 : -1;
}

static void select_row(struct live *v, int row)
{
    if (row < 0 || (size_t)row >= v->runs.n)
        return;
    snprintf(v->selected, sizeof(v->selected), "%s", v->runs.r[row].id);
}

static void refresh(struct live *v)
{
    v->now_ns = clock_realtime_ns();
    runs_read(v->s, &v->runs, v->now_ns);
    top_sort_runs(v->runs.r, v->runs.n, v->sort);
    select_row(v, selected_row(v));
}

/* The first line: what is shown, and the keys. */
static void status_line(struct strbuf *frame, const struct live *v, int cols)
{
    struct strbuf line, uri;
    strbuf_init(&line);
    strbuf_init(&uri);
    store_uri_redact(v->s->uri, &uri);
    if (v->runs.err.len)
        strbuf_addf(&line, "strobe top: %s", v->runs.err.buf);
    else if (v->detail)
        strbuf_addf(&line, "strobe top  %s  Esc back  q quit", uri.buf);
    else
        strbuf_addf(&line,
                    "strobe top  %s  %zu running  sort %s  (c m g s r e n, arrows, Enter, q)",
                    uri.buf, v->runs.n, top_sort_name(v->sort));
    top_add_cell(frame, line.buf, cols);
    strbuf_release(&line);
    strbuf_release(&uri);
}

/* The body's lines, from line first on, as many as fit in rows. */
static void add_lines(struct strbuf *frame, const char *text, int first, int rows)
{
    int line = 0;
    for (const char *p = text; *p && line < first + rows; line++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (line >= first) {
            strbuf_adds(frame, "\r\n");
            strbuf_add(frame, p, len);
            strbuf_adds(frame, "\x1b[K");
        }
        p += len + (nl ? 1 : 0);
    }
}

static void log_frame(struct live *v)
{
    v->frames++;
    if (v->frame_fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof(line), "frame %lu %lld\n", v->frames,
                     (long long)clock_monotonic_ns());
    if (write(v->frame_fd, line, (size_t)n) < 0)
        v->frame_fd = -1; /* a test's log, not the view: stop logging */
}

static void draw(struct live *v)
{
    int cols, rows;
    top_term_size(&cols, &rows);
    struct strbuf frame, body;
    strbuf_init(&frame);
    strbuf_init(&body);
    strbuf_adds(&frame, "\x1b[H");
    status_line(&frame, v, cols);
    strbuf_adds(&frame, "\x1b[K");
    int row = selected_row(v);
    struct top_layout l = {
        .width = cols, .ansi = 1, .selected = row, .now_ns = v->now_ns, .sort = v->sort};
    int room = rows - 1;
    if (v->detail && row >= 0) {
        top_detail_text(&body, &v->runs.r[row], &l);
        add_lines(&frame, body.buf, 0, room);
    } else {
        v->detail = 0; /* its run ended: back to the table */
        top_table_text(&body, v->runs.r, v->runs.n, &l);
        /* the table's header stays; rows scroll to keep the selected one shown */
        int shown = room - 1;
        if (row >= 0 && row < v->top)
            v->top = row;
        if (row >= 0 && shown > 0 && row >= v->top + shown)
            v->top = row - shown + 1;
        if (v->top < 0 || (size_t)v->top >= v->runs.n)
            v->top = 0;
        add_lines(&frame, body.buf, 0, 1);
        const char *rest = strchr(body.buf, '\n');
        add_lines(&frame, rest ? rest + 1 : "", v->top, shown);
    }
    strbuf_adds(&frame, "\x1b[J");
    if (!strbuf_failed(&frame))
        top_term_write(frame.buf, frame.len);
    log_frame(v);
    strbuf_release(&frame);
    strbuf_release(&body);
}

/* What a key does. Returns 1 to quit. */
static int on_key(struct live *v, int key)
{
    int row = selected_row(v);
    int sort = top_sort_of_key(key);
    if (key == 'q' || key == 'Q')
        return 1;
    if (v->detail) {
        if (key == TOP_KEY_ESC || key == TOP_KEY_BACK || key == TOP_KEY_LEFT)
            v->detail = 0;
        return 0;
    }
    if (sort >= 0)
        v->sort = (enum top_sort)sort;
    else if (key == TOP_KEY_RIGHT || key == '\t')
        v->sort = (enum top_sort)((v->sort + 1) % TOP_SORT_COUNT);
    else if (key == TOP_KEY_LEFT)
        v->sort = (enum top_sort)((v->sort + TOP_SORT_COUNT - 1) % TOP_SORT_COUNT);
    else if (key == TOP_KEY_UP || key == 'k')
        select_row(v, row - 1);
    else if (key == TOP_KEY_DOWN || key == 'j')
        select_row(v, row + 1);
    else if (key == TOP_KEY_PGUP)
        select_row(v, row > 10 ? row - 10 : 0);
    else if (key == TOP_KEY_PGDN)
        select_row(v, row + 10 < (int)v->runs.n ? row + 10 : (int)v->runs.n - 1);
    else if (key == TOP_KEY_ENTER && row >= 0)
        v->detail = 1;
    top_sort_runs(v->runs.r, v->runs.n, v->sort);
    return 0;
}

static int run_live(struct store *s)
{
    struct live v = {.s = s, .sort = TOP_SORT_CPU, .frame_fd = -1};
    strbuf_init(&v.runs.err);
    const char *log_path = getenv("STROBE_TOP_FRAME_LOG");
    if (log_path && *log_path)
        v.frame_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int rc = top_term_enter();
    if (rc < 0) {
        log_error("cannot use the terminal: %s", strerror(-rc));
        runs_release(&v.runs);
        return CLI_EXIT_ERROR;
    }
    int64_t next_ms = 0;
    int quit = 0;
    while (!quit && !top_term_quit()) {
        int64_t now_ms = clock_monotonic_ns() / 1000000;
        if (now_ms >= next_ms) {
            refresh(&v);
            draw(&v);
            next_ms = now_ms + TICK_MS;
        }
        int key;
        top_term_key((int)(next_ms - now_ms), &key); /* a signal ends the wait early */
        if (key != TOP_KEY_NONE)
            quit = on_key(&v, key);
        if (!quit && (key != TOP_KEY_NONE || top_term_resized()))
            draw(&v); /* at once: a key never waits for the store's next read */
    }
    top_term_leave();
    if (v.frame_fd >= 0)
        close(v.frame_fd);
    runs_release(&v.runs);
    top_term_die();
    return CLI_EXIT_OK;
}

int cmd_top(struct cli_ctx *cli, int argc, char **argv)
{
    int once = 0, json = 0;
    const struct cli_option opts[] = {
        CLI_OPT_FLAG(0, "once", &once,
                     "print the table once and end (also when stdout is\n"
                     "no terminal)"),
        CLI_OPT_JSON(&json),
        CLI_OPT_END,
    };
    int status = cli_setup(cli, &top_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    /* display widths of names (wcwidth) need a UTF-8 character type */
    if (!setlocale(LC_CTYPE, ""))
        setlocale(LC_CTYPE, "C.UTF-8");
    if (once || json || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return print_once(cli->store, json);
    return run_live(cli->store);
}
