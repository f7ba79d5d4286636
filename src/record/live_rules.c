#include "record/live_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "record/on_finding.h"
#include "rules/replay.h"

static int32_t slot_of(struct live_rules *l, uint32_t index)
{
    if (index >= l->nslot) {
        uint32_t n = l->nslot ? l->nslot : 64;
        while (n <= index)
            n *= 2;
        int32_t *p = realloc(l->slot, n * sizeof(*p));
        if (!p)
            return -1;
        for (uint32_t i = l->nslot; i < n; i++)
            p[i] = -2;
        l->slot = p;
        l->nslot = n;
    }
    if (l->slot[index] == -2) {
        const struct series *s = &l->series->items[index];
        l->slot[index] = rules_series(l->e, s->name, s->labels);
    }
    return l->slot[index];
}

static void on_point(void *arg, uint32_t index, int64_t ts_ns, double value)
{
    struct live_rules *l = arg;
    int32_t slot = slot_of(l, index);
    if (slot >= 0)
        rules_put(l->e, slot, ts_ns, value);
}

static void on_span(void *arg, pid_t pid, pid_t tid, int64_t start_ns, int64_t end_ns,
                    uint32_t name_id, const char *name)
{
    struct live_rules *l = arg;
    rules_put_span(l->e, pid, tid, start_ns, end_ns, name_id, name);
}

static void on_proc(void *arg, pid_t pid, int64_t rank, int64_t worker_id)
{
    struct live_rules *l = arg;
    rules_put_process(l->e, pid, rank, worker_id);
}

/* One line per finding, when it first fires: what, where, why, what to do. */
static void announce_line(const struct finding *f)
{
    struct strbuf line;
    strbuf_init(&line);
    strbuf_addf(&line, "strobe: %s %s [%s]: %s%s%s\n", severity_names[f->severity], f->rule,
                f->scope, f->evidence ? f->evidence : "",
                f->recommendation && *f->recommendation ? " -> " : "",
                f->recommendation ? f->recommendation : "");
    if (line.buf)
        log_lines(line.buf, line.len); /* past the live line, as strobe's other lines */
    strbuf_release(&line);
}

/* A finding, when it first fires: its line, then what --on-finding does
 * about it. */
static void announce(const struct finding *f, void *arg)
{
    struct live_rules *l = arg;
    if (l->announce)
        announce_line(f);
    if (l->actions)
        on_finding_fire(l->actions, f);
}

int live_rules_open(struct live_rules *l, const struct rules_options *opts,
                    const struct rules_run_info *run, struct series_table *series,
                    struct event_sink *sink, struct strbuf *err)
{
    memset(l, 0, sizeof(*l));
    l->series = series;
    l->rules_list = opts->rules && *opts->rules ? opts->rules : "all";
    int rc = rules_engine_new(opts, run, &l->e, err);
    if (rc < 0 || !l->e)
        return rc;
    rules_engine_on_finding(l->e, announce, l);
    series->tap = on_point;
    series->tap_arg = l;
    sink->span_tap = on_span;
    sink->proc_tap = on_proc;
    sink->tap_arg = l;
    return 0;
}

void live_rules_tick(struct live_rules *l, int64_t now_ns)
{
    rules_tick(l->e, now_ns);
}

void live_rules_finish(struct live_rules *l, int64_t end_ns)
{
    rules_finish(l->e, end_ns);
    for (uint32_t i = 0; i < rules_warning_count(l->e); i++) /* what was left out, said */
        log_warn("%s", rules_warning_at(l->e, i));
}

int live_rules_save(struct live_rules *l, struct store *s, const char *run_id)
{
    return l->e ? rules_save(s, run_id, l->e, l->rules_list, "live") : 0;
}

void live_rules_names(const struct live_rules *l, char *out, size_t cap)
{
    uint32_t n;
    const struct finding *f = rules_findings(l->e, &n);
    size_t len = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < n && len < cap; i++) {
        int k = snprintf(out + len, cap - len, "%s%s (%s)", i ? ", " : "", f[i].rule, f[i].scope);
        if (k < 0)
            break;
        len += (size_t)k;
    }
}

void live_rules_close(struct live_rules *l)
{
    rules_engine_free(l->e);
    free(l->slot);
    memset(l, 0, sizeof(*l));
}
