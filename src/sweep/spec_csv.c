/*
 * radT's CSV experiment files (spec.h): RFC 4180 fields (quotes, doubled
 * quotes, line breaks inside quotes), a header naming the columns in any
 * order, blanks after a comma skipped as pandas' skipinitialspace does.
 * Each field keeps its line and column for messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "sweep/spec_internal.h"
#include "sweep/writeback.h"

enum csv_col {
    COL_EXPERIMENT,
    COL_WORKLOAD,
    COL_NAME,
    COL_STATUS,
    COL_RUN,
    COL_DEVICES,
    COL_COLLOCATION,
    COL_FILE,
    COL_LISTENERS,
    COL_PARAMS,
    /* strobe's */
    COL_COMMAND,
    COL_TIMEOUT,
    COL_RETRIES,
    COL_ENV,
    COL_ON_FINDING,
    COL_COUNT
};

static const char *const col_names[COL_COUNT] = {
    "Experiment", "Workload", "Name",    "Status",  "Run",     "Devices", "Collocation", "File",
    "Listeners",  "Params",   "Command", "Timeout", "Retries", "Env",     "OnFinding",
};

struct csv_row {
    struct src_val f[COL_COUNT]; /* text NULL: the column is absent */
    int line;
};

struct csv_parser {
    const char *p, *end;
    int line, col;
};

static void advance(struct csv_parser *cp)
{
    if (*cp->p == '\n') {
        cp->line++;
        cp->col = 1;
    } else {
        cp->col++;
    }
    cp->p++;
}

/* One field into out (its start in *line, *col; *quoted when it opens
 * with a quote). 1 when the record goes on (a comma followed), 0 at its
 * end, -1 on an unclosed quote. */
static int read_field(struct csv_parser *cp, struct strbuf *out, int *line, int *col, int *quoted)
{
    strbuf_reset(out);
    while (cp->p < cp->end && (*cp->p == ' ' || *cp->p == '\t'))
        advance(cp);
    *line = cp->line;
    *col = cp->col;
    *quoted = cp->p < cp->end && *cp->p == '"';
    if (*quoted) { /* *col stays at the quote: sweep_place_in counts past it */
        advance(cp);
        for (;;) {
            if (cp->p >= cp->end)
                return -1;
            if (*cp->p == '"' && cp->p + 1 < cp->end && cp->p[1] == '"') {
                strbuf_addch(out, '"');
                advance(cp);
                advance(cp);
            } else if (*cp->p == '"') {
                advance(cp);
                break;
            } else {
                strbuf_addch(out, *cp->p);
                advance(cp);
            }
        }
    }
    size_t kept = out->len; /* blanks inside the quotes are the field's */
    while (cp->p < cp->end && *cp->p != ',' && *cp->p != '\n') {
        if (*cp->p != '\r')
            strbuf_addch(out, *cp->p);
        advance(cp);
    }
    while (out->len > kept && (out->buf[out->len - 1] == ' ' || out->buf[out->len - 1] == '\t'))
        strbuf_truncate(out, out->len - 1);
    if (cp->p < cp->end && *cp->p == ',') {
        advance(cp);
        return 1;
    }
    if (cp->p < cp->end)
        advance(cp); /* the newline */
    return 0;
}

/* Every field of the file, row by row: fields[i] with places. */
struct csv_cells {
    char **text;
    int *line, *col;
    char *quote; /* '"' where the cell is quoted, else 0 */
    size_t n, cap;
    size_t *row_start; /* index of each row's first cell; rows + 1 entries */
    size_t rows, rows_cap;
};

static int cells_push(struct csv_cells *c, const char *text, int line, int col, int quoted)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        char **t = realloc(c->text, cap * sizeof(*t));
        int *l = t ? realloc(c->line, cap * sizeof(*l)) : NULL;
        int *k = l ? realloc(c->col, cap * sizeof(*k)) : NULL;
        char *q = k ? realloc(c->quote, cap * sizeof(*q)) : NULL;
        if (t)
            c->text = t;
        if (l)
            c->line = l;
        if (k)
            c->col = k;
        if (q)
            c->quote = q;
        if (!t || !l || !k || !q)
            return -ENOMEM;
        c->cap = cap;
    }
    if (!(c->text[c->n] = strdup(text)))
        return -ENOMEM;
    c->line[c->n] = line;
    c->col[c->n] = col;
    c->quote[c->n] = quoted ? '"' : 0;
    c->n++;
    return 0;
}

static int rows_push(struct csv_cells *c)
{
    if (c->rows + 2 > c->rows_cap) {
        size_t cap = c->rows_cap ? c->rows_cap * 2 : 16;
        size_t *r = realloc(c->row_start, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        c->row_start = r;
        c->rows_cap = cap;
    }
    c->row_start[c->rows] = c->n;
    return 0;
}

static void cells_release(struct csv_cells *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->text[i]);
    free(c->text);
    free(c->line);
    free(c->col);
    free(c->quote);
    free(c->row_start);
}

/* Split the file into rows of cells; blank lines are skipped. */
static int split_cells(struct spec_reader *rd, const char *data, size_t len, struct csv_cells *c)
{
    struct csv_parser cp = {.p = data, .end = data + len, .line = 1, .col = 1};
    struct strbuf field;
    strbuf_init(&field);
    int rc = 0;
    while (rc == 0 && cp.p < cp.end) {
        if (*cp.p == '\n' || (*cp.p == '\r' && cp.p + 1 < cp.end && cp.p[1] == '\n')) {
            advance(&cp);
            continue;
        }
        if (rows_push(c) < 0) {
            rc = sweep_fail_at(rd, cp.line, 1, "out of memory");
            break;
        }
        int more = 1, line, col, quoted;
        while (more == 1 && rc == 0) {
            more = read_field(&cp, &field, &line, &col, &quoted);
            if (more < 0)
                rc = sweep_fail_at(rd, line, col, "a quoted field is never closed");
            else if (strbuf_failed(&field) ||
                     cells_push(c, field.buf ? field.buf : "", line, col, quoted) < 0)
                rc = sweep_fail_at(rd, line, col, "out of memory");
        }
        c->rows++;
        c->row_start[c->rows] = c->n;
    }
    strbuf_release(&field);
    return rc;
}

/* The header's columns: map[i] is the column of cell i, each known once. */
static int read_header(struct spec_reader *rd, const struct csv_cells *c, int *map, int *where)
{
    for (int k = 0; k < COL_COUNT; k++)
        where[k] = -1;
    for (size_t i = 0; i < c->row_start[1]; i++) {
        int k = 0;
        while (k < COL_COUNT && strcasecmp(col_names[k], c->text[i]) != 0)
            k++;
        if (k == COL_COUNT)
            return sweep_fail_at(rd, c->line[i], c->col[i],
                                 "unknown column '%s' (radT's: Experiment, Workload, Name, "
                                 "Status, Run, Devices, Collocation, File, Listeners, Params; "
                                 "strobe's: Command, Timeout, Retries, Env, OnFinding)",
                                 c->text[i]);
        if (where[k] >= 0)
            return sweep_fail_at(rd, c->line[i], c->col[i], "column '%s' is given twice",
                                 col_names[k]);
        where[k] = (int)i;
        map[i] = k;
    }
    if (where[COL_WORKLOAD] < 0)
        return sweep_fail_at(rd, 1, 1, "the header has no Workload column");
    if (where[COL_FILE] < 0 && where[COL_COMMAND] < 0)
        return sweep_fail_at(rd, 1, 1, "the header has neither a File nor a Command column");
    return 0;
}

static int status_finished(const struct src_val *v)
{
    return v->text && strstr(v->text, "FINISHED") != NULL;
}

/* A workload-wide column (Timeout, Retries, Env, OnFinding): every row of
 * the workload that gives it must give the same. */
static int same_as_first(struct spec_reader *rd, const struct src_val *first,
                         const struct src_val *v, const char *col)
{
    if (!sweep_given(v) || !sweep_given(first) || strcmp(first->text, v->text) == 0)
        return 0;
    return sweep_fail_val(rd, v, "%s '%s' differs from '%s' in the same workload (line %d)", col,
                          v->text, first->text, first->line);
}

static int env_words(struct spec_reader *rd, struct sweep_workload *w, const struct src_val *v)
{
    if (!sweep_given(v))
        return 0;
    char *copy = strdup(v->text), *save = NULL;
    int rc = copy ? 0 : sweep_fail_val(rd, v, "out of memory");
    for (char *tok = copy ? strtok_r(copy, " ;", &save) : NULL; tok && rc == 0;
         tok = strtok_r(NULL, " ;", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            rc = sweep_fail_val(rd, v, "Env '%s' is not KEY=VALUE", tok);
        else {
            *eq = '\0';
            rc = sweep_add_env(rd, w, v, tok, eq + 1);
        }
    }
    free(copy);
    return rc;
}

static int workload_settings(struct spec_reader *rd, struct sweep_workload *w,
                             const struct csv_row *row)
{
    long retries = 0;
    int rc = sweep_set_timeout(rd, &row->f[COL_TIMEOUT], &w->timeout_ns);
    if (rc == 0)
        rc = sweep_set_count(rd, &row->f[COL_RETRIES], "Retries", 0, 100, &retries);
    w->retries = (int)retries;
    if (rc == 0)
        rc = env_words(rd, w, &row->f[COL_ENV]);
    if (rc == 0)
        rc = sweep_add_on_finding(rd, w, &row->f[COL_ON_FINDING]);
    return rc;
}

/* The file's base name less its extension: the campaign of a file without
 * an Experiment column. */
static char *base_stem(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    return strndup(base, dot ? (size_t)(dot - base) : strlen(base));
}

/* The campaign's name: its experiments, each once, joined by '+'. */
static int set_campaign(struct spec_reader *rd)
{
    struct sweep_spec *s = rd->spec;
    struct sweep_index seen = {.by_experiment = 1};
    struct strbuf name;
    strbuf_init(&name);
    int failed = 0;
    for (size_t i = 0; i < s->n && !failed; i++)
        if (!sweep_index_find(&seen, s, s->w[i].experiment, NULL)) {
            failed = sweep_index_add(&seen, s, i) < 0;
            strbuf_addf(&name, "%s%s", name.len ? "+" : "", s->w[i].experiment);
        }
    s->campaign = failed || strbuf_failed(&name) ? NULL : strdup(name.buf ? name.buf : "");
    strbuf_release(&name);
    sweep_index_release(&seen);
    return s->campaign ? 0 : sweep_fail_at(rd, 1, 1, "out of memory");
}

/* names: the workloads so far, by experiment and name. */
static int add_row(struct spec_reader *rd, const struct csv_row *row, const char *stem,
                   struct csv_row *first_rows, struct sweep_index *names, int rowno)
{
    const struct src_val *wl = &row->f[COL_WORKLOAD];
    if (!sweep_given(wl))
        return sweep_fail_val(rd, wl, "the row has no Workload");
    const char *experiment =
        sweep_given(&row->f[COL_EXPERIMENT]) ? row->f[COL_EXPERIMENT].text : stem;
    struct sweep_workload *w = sweep_index_find(names, rd->spec, experiment, wl->text);
    int fresh = !w;
    if (fresh &&
        ((sweep_given(&row->f[COL_EXPERIMENT]) &&
          sweep_check_name(rd, &row->f[COL_EXPERIMENT], "experiment name", experiment) < 0) ||
         sweep_check_name(rd, wl, "workload name", wl->text) < 0))
        return -1;
    if (fresh && !(w = sweep_add_workload(rd, experiment, wl->text, row->line, wl->col)))
        return -1;
    if (fresh && sweep_index_add(names, rd->spec, rd->spec->n - 1) < 0)
        return sweep_fail_at(rd, row->line, 1, "out of memory");
    size_t wi = (size_t)(w - rd->spec->w);
    if (fresh) {
        first_rows[wi] = *row;
        w->file_finished = status_finished(&row->f[COL_STATUS]);
        if (workload_settings(rd, w, row) < 0)
            return -1;
    } else {
        w->file_finished &= status_finished(&row->f[COL_STATUS]);
        static const enum csv_col wide[] = {COL_TIMEOUT, COL_RETRIES, COL_ENV, COL_ON_FINDING};
        for (size_t k = 0; k < sizeof(wide) / sizeof(wide[0]); k++)
            if (same_as_first(rd, &first_rows[wi].f[wide[k]], &row->f[wide[k]],
                              col_names[wide[k]]) < 0)
                return -1;
    }
    struct sweep_run *run = sweep_add_run(rd, w, row->line);
    if (!run)
        return -1;
    char default_name[64], index[16];
    snprintf(default_name, sizeof(default_name), "%.40s.%zu", w->name, w->nruns);
    snprintf(index, sizeof(index), "%zu", w->nruns - 1);
    struct kv_list extras = {0};
    if (kv_list_add(&extras, "workload", w->name) < 0 || kv_list_add(&extras, "run", index) < 0) {
        kv_list_release(&extras);
        return sweep_fail_at(rd, row->line, 1, "out of memory");
    }
    struct run_source src = {
        .name = row->f[COL_NAME],
        .workload = *wl,
        .devices = row->f[COL_DEVICES],
        .collocation = row->f[COL_COLLOCATION],
        .listeners = row->f[COL_LISTENERS],
        .file = row->f[COL_FILE],
        .command = row->f[COL_COMMAND],
        .args = row->f[COL_PARAMS],
        .extras = &extras,
        .row = rowno,
        .line = row->line,
        .col = 1,
    };
    int rc = sweep_build_run(rd, &src, w->name, default_name, run);
    kv_list_release(&extras);
    return rc;
}

/* Row r has as many fields as the header: else an error at its first
 * field too many, or at the row when it has too few. */
static int check_row_shape(struct spec_reader *rd, const struct csv_cells *c, size_t r)
{
    size_t ncols = c->row_start[1], from = c->row_start[r], to = c->row_start[r + 1];
    if (to - from == ncols)
        return 0;
    size_t at = to - from > ncols ? from + ncols : from;
    return sweep_fail_at(rd, c->line[at], to - from > ncols ? c->col[at] : 1,
                         "the row has %zu fields, the header %zu", to - from, ncols);
}

static int read_rows(struct spec_reader *rd, const struct csv_cells *c, const int *map)
{
    char *stem = base_stem(rd->spec->path);
    struct csv_row *first_rows = calloc(c->rows, sizeof(*first_rows));
    struct sweep_index names = {0};
    int rc = (!stem || !first_rows) ? sweep_fail_at(rd, 1, 1, "out of memory") : 0;
    for (size_t r = 1; rc == 0 && r < c->rows; r++) {
        size_t from = c->row_start[r], to = c->row_start[r + 1];
        if ((rc = check_row_shape(rd, c, r)) < 0)
            break;
        struct csv_row row = {.line = c->line[from]};
        for (size_t i = from; i < to; i++)
            row.f[map[i - from]] = (struct src_val){
                .text = c->text[i], .line = c->line[i], .col = c->col[i], .quote = c->quote[i]};
        rc = add_row(rd, &row, stem, first_rows, &names, (int)r);
    }
    sweep_index_release(&names);
    free(first_rows);
    free(stem);
    return rc;
}

/* The file's cells, for the reader and the write-back alike: a file with
 * a NUL byte or no row is refused, a byte order mark skipped. *data (the
 * caller frees it, also after a failure) holds the text the cells came
 * from. */
static int read_cells(struct spec_reader *rd, char **data, struct csv_cells *c)
{
    size_t len = 0;
    if (sweep_slurp(rd, data, &len) < 0)
        return -1;
    const char *text = *data;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* a UTF-8 byte order mark */
        text += 3;
        len -= 3;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        struct src_val whole = {.text = text, .line = 1, .col = 1};
        int line, col;
        sweep_place_in(&whole, (size_t)(nul - text), &line, &col);
        return sweep_fail_at(rd, line, col, "the file holds a NUL byte: not a CSV file");
    }
    int rc = split_cells(rd, text, len, c);
    if (rc == 0 && c->rows == 0)
        rc = sweep_fail_at(rd, 1, 1, "the file is empty");
    return rc;
}

int sweep_read_csv(struct spec_reader *rd)
{
    char *data = NULL;
    struct csv_cells c = {0};
    int rc = read_cells(rd, &data, &c);
    int *map = rc == 0 ? calloc(c.row_start[1] + 1, sizeof(*map)) : NULL;
    int where[COL_COUNT];
    if (rc == 0 && !map)
        rc = sweep_fail_at(rd, 1, 1, "out of memory");
    if (rc == 0)
        rc = read_header(rd, &c, map, where);
    if (rc == 0)
        rc = read_rows(rd, &c, map);
    if (rc == 0)
        rc = set_campaign(rd);
    free(map);
    cells_release(&c);
    free(data);
    return rc;
}

/* ---- write-back (writeback.h) ---- */

static void put_cell(struct strbuf *out, const char *text)
{
    int quote = strpbrk(text, ",\"\n\r") != NULL || (text[0] == ' ' || text[0] == '\t') ||
                (text[0] && (text[strlen(text) - 1] == ' ' || text[strlen(text) - 1] == '\t'));
    if (!quote) {
        strbuf_adds(out, text);
        return;
    }
    strbuf_addch(out, '"');
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            strbuf_addch(out, '"');
        strbuf_addch(out, *p);
    }
    strbuf_addch(out, '"');
}

/* The rewritten file's text, from its cells. */
static void rewrite_cells(const struct csv_cells *c, const int *where, const char *const *status,
                          const char *const *run, size_t nrows, struct strbuf *out)
{
    size_t ncols = c->row_start[1];
    for (size_t r = 0; r < c->rows; r++) {
        size_t from = c->row_start[r];
        for (size_t i = 0; i < ncols; i++) {
            const char *text = c->text[from + i];
            if (r > 0 && r <= nrows && (int)i == where[COL_STATUS] && status[r])
                text = status[r];
            if (r > 0 && r <= nrows && (int)i == where[COL_RUN] && run[r])
                text = run[r];
            if (i)
                strbuf_addch(out, ',');
            put_cell(out, text);
        }
        for (int k = COL_STATUS; k <= COL_RUN; k++) /* columns the header lacked */
            if (where[k] < 0) {
                const char *const *v = k == COL_STATUS ? status : run;
                strbuf_addch(out, ',');
                put_cell(out, r == 0 ? col_names[k] : r <= nrows && v[r] ? v[r] : "");
            }
        strbuf_addch(out, '\n');
    }
}

int sweep_csv_rewrite(const char *path, const char *const *status, const char *const *run,
                      size_t nrows, struct strbuf *err)
{
    struct sweep_spec spec = {.path = (char *)path};
    struct sweep_env env = {0};
    struct spec_reader rd = {.spec = &spec, .env = &env, .err = err};
    char *data = NULL;
    struct csv_cells c = {0};
    int rc = read_cells(&rd, &data, &c);
    int *map = rc == 0 ? calloc(c.row_start[1] + 1, sizeof(*map)) : NULL, where[COL_COUNT];
    if (rc == 0 && !map)
        rc = sweep_fail_at(&rd, 1, 1, "out of memory");
    if (rc == 0)
        rc = read_header(&rd, &c, map, where);
    /* the file may have changed since the plan was read: a row that does
     * not fit the header would be written from its neighbours' cells */
    for (size_t r = 1; rc == 0 && r < c.rows; r++)
        rc = check_row_shape(&rd, &c, r);
    struct strbuf out;
    strbuf_init(&out);
    if (rc == 0) {
        rewrite_cells(&c, where, status, run, nrows, &out);
        rc = strbuf_failed(&out) ? -1 : 0;
    }
    int werr = rc == 0 ? file_replace(path, &out) : 0;
    if (werr < 0) {
        strbuf_reset(err);
        strbuf_addf(err, "cannot write %s: %s", path, strerror(-werr));
        rc = -1;
    }
    strbuf_release(&out);
    free(map);
    cells_release(&c);
    free(data);
    return rc;
}
