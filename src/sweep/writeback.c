#include "sweep/writeback.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "common/log.h"
#include "import/input.h"

/* "FINISHED", "FAILED", ...: radT's words for a workload's status. */
static void upper(const char *status, char *buf, size_t cap)
{
    size_t i = 0;
    for (; status[i] && i + 1 < cap; i++)
        buf[i] = (char)toupper((unsigned char)status[i]);
    buf[i] = '\0';
}

static int write_back_csv(const struct sweep_spec *spec, const struct campaign_state *st)
{
    size_t nrows = 0;
    for (size_t i = 0; i < spec->n; i++)
        for (size_t k = 0; k < spec->w[i].nruns; k++)
            if ((size_t)spec->w[i].runs[k].row > nrows)
                nrows = (size_t)spec->w[i].runs[k].row;
    char **status = calloc(nrows + 1, sizeof(*status));
    const char **run = calloc(nrows + 1, sizeof(*run));
    int rc = status && run ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < spec->n; i++) {
        const struct sweep_workload *w = &spec->w[i];
        const struct wl_state *ws =
            campaign_state_find((struct campaign_state *)st, w->experiment, w->name);
        if (!ws || strcmp(ws->status, WL_PENDING) == 0)
            continue;
        char word[16];
        upper(wl_state_shown(st, ws), word, sizeof(word));
        for (size_t k = 0; k < w->nruns; k++) {
            size_t row = (size_t)w->runs[k].row;
            if (asprintf(&status[row], "%s %s", word, w->runs[k].name) < 0)
                status[row] = NULL;
            run[row] = ws->runs && ws->runs[k] ? ws->runs[k] : NULL;
            for (size_t j = 0; ws->runs && j < k; j++)
                if (!ws->runs[j]) /* fewer ids than runs: none for the rest */
                    run[row] = NULL;
        }
    }
    struct strbuf err;
    strbuf_init(&err);
    if (rc == 0)
        rc = sweep_csv_rewrite(spec->path, (const char *const *)status, run, nrows, &err);
    if (rc < 0)
        log_warn("--write-back: %s", err.len ? err.buf : "out of memory");
    strbuf_release(&err);
    for (size_t i = 0; status && i <= nrows; i++)
        free(status[i]);
    free(status);
    free(run);
    return rc;
}

/* The file without a top-level `status:` block (its key line and the
 * indented or blank lines under it). */
static void drop_status_block(const char *text, struct strbuf *out)
{
    int in_block = 0;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        size_t next = len + (line[len] == '\n');
        if (strncmp(line, "status:", 7) == 0)
            in_block = 1;
        else if (in_block && len && line[0] != ' ' && line[0] != '\t' && line[0] != '#')
            in_block = 0;
        if (!in_block)
            strbuf_add(out, line, next);
        line += next;
    }
    if (out->len && out->buf[out->len - 1] != '\n')
        strbuf_addch(out, '\n');
}

static void yaml_quoted(struct strbuf *out, const char *s)
{
    strbuf_addch(out, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            strbuf_addch(out, '\\');
        if ((unsigned char)*p < 0x20)
            strbuf_addf(out, "\\x%02x", (unsigned char)*p);
        else
            strbuf_addch(out, *p);
    }
    strbuf_addch(out, '"');
}

/* radT's entry: number (a name of digits, as radT keys them) or quoted
 * name, then "STATUS RUN_ID (--key value ...)". */
static void status_entry(struct strbuf *out, const struct sweep_workload *w,
                         const struct wl_state *ws, const struct campaign_state *st)
{
    char word[16];
    upper(wl_state_shown(st, ws), word, sizeof(word));
    strbuf_adds(out, "  ");
    if (strspn(w->name, "0123456789") == strlen(w->name))
        strbuf_addf(out, "%ld", strtol(w->name, NULL, 10));
    else
        yaml_quoted(out, w->name);
    struct strbuf value;
    strbuf_init(&value);
    strbuf_addf(&value, "%s %s (", word, ws->runs && ws->runs[0] ? ws->runs[0] : "-");
    const struct kv_list *p = w->nruns ? &w->runs[0].params : NULL;
    for (size_t i = 0; p && i < p->n; i++)
        strbuf_addf(&value, "%s--%s %s", i ? " " : "", p->items[i].key, p->items[i].value);
    strbuf_addch(&value, ')');
    strbuf_adds(out, ": ");
    yaml_quoted(out, value.buf ? value.buf : "");
    strbuf_addch(out, '\n');
    strbuf_release(&value);
}

static int write_back_yaml(const struct sweep_spec *spec, const struct campaign_state *st)
{
    char *text = NULL;
    size_t len = 0;
    struct strbuf out;
    strbuf_init(&out);
    int rc = input_read_file(spec->path, SWEEP_MAX_FILE_BYTES, INPUT_REGULAR_ONLY, &text, &len);
    if (rc == 0) {
        drop_status_block(text, &out);
        strbuf_adds(&out, "status:\n");
        for (size_t i = 0; i < spec->n; i++) {
            const struct wl_state *ws = campaign_state_find((struct campaign_state *)st,
                                                            spec->w[i].experiment, spec->w[i].name);
            if (ws && strcmp(ws->status, WL_PENDING) != 0)
                status_entry(&out, &spec->w[i], ws, st);
        }
        rc = strbuf_failed(&out) ? -ENOMEM : file_replace(spec->path, &out);
    }
    if (rc < 0)
        log_warn("--write-back: cannot rewrite %s: %s", spec->path, strerror(-rc));
    free(text);
    strbuf_release(&out);
    return rc;
}

int sweep_write_back(const struct sweep_spec *spec, const struct campaign_state *st)
{
    return spec->format == SWEEP_CSV ? write_back_csv(spec, st) : write_back_yaml(spec, st);
}
