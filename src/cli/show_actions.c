/*
 * strobe show: what strobe run --on-finding did, from the run's "actions"
 * text (a JSON array the recorder writes, record/on_finding.h). The text is
 * read as outside input: an element that is not an action is left out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "common/strbuf.h"
#include "import/json.h"
#include "record/on_finding.h"

static int take_actions_text(const struct run_text_record *t, void *arg)
{
    if (strcmp(t->kind, ON_FINDING_TEXT_KIND) == 0)
        strbuf_add(arg, t->data, t->len);
    return 0;
}

static char *member_str(const struct json *o, const char *key)
{
    const char *s = json_str(json_get(o, key));
    return strdup(s ? s : "");
}

static int member_true(const struct json *o, const char *key)
{
    const struct json *v = json_get(o, key);
    return v && v->type == JSON_TRUE;
}

/* One element of the array into x; 0 when it is no action (left out). */
static int add_action(struct run_actions *x, const struct json *o)
{
    int64_t at_ns;
    if (!json_str(json_get(o, "rule")) || !json_str(json_get(o, "action")) ||
        json_scaled_i64(json_get(o, "at_ns"), 0, &at_ns) < 0)
        return 0;
    if (array_grow((void **)&x->a, &x->cap, x->n + 1, sizeof(*x->a), 4) < 0)
        return -ENOMEM;
    struct run_action *a = &x->a[x->n++];
    *a = (struct run_action){member_str(o, "rule"),   member_str(o, "severity"),
                             member_str(o, "scope"),  member_str(o, "action"),
                             member_str(o, "result"), at_ns,
                             member_true(o, "ok"),    member_true(o, "stopped_run")};
    return a->rule && a->severity && a->scope && a->action && a->result ? 0 : -ENOMEM;
}

int run_actions_load(struct store *s, const char *run_id, struct run_actions *out)
{
    memset(out, 0, sizeof(*out));
    struct strbuf text;
    strbuf_init(&text);
    int rc = s->ops->run_texts_query(s, run_id, take_actions_text, &text);
    struct json_doc d;
    json_doc_init(&d);
    struct json *root = NULL;
    if (rc == 0 && text.len && json_parse(&d, text.buf, text.len, &root) == 0 &&
        root->type == JSON_ARRAY)
        for (const struct json *o = root->child; o && rc == 0; o = o->next)
            rc = add_action(out, o);
    json_doc_release(&d);
    strbuf_release(&text);
    return rc < 0 ? rc : 0;
}

void run_actions_release(struct run_actions *x)
{
    for (uint32_t i = 0; i < x->n; i++) {
        free(x->a[i].rule);
        free(x->a[i].severity);
        free(x->a[i].scope);
        free(x->a[i].action);
        free(x->a[i].result);
    }
    free(x->a);
    memset(x, 0, sizeof(*x));
}

const struct run_action *run_actions_stopper(const struct run_actions *x)
{
    for (uint32_t i = 0; i < x->n; i++)
        if (x->a[i].stopped_run)
            return &x->a[i];
    return NULL;
}

void run_actions_print_text(const struct run_actions *x, int64_t start_ns)
{
    if (!x->n)
        return;
    printf("actions   %u (run --on-finding)\n", x->n);
    for (uint32_t i = 0; i < x->n; i++) {
        const struct run_action *a = &x->a[i];
        char at[32];
        printf("  +%-7s ", fmt_duration((double)(a->at_ns - start_ns) / 1e9, at, sizeof(at)));
        cli_put_visible(stdout, a->rule);
        printf(" [");
        cli_put_visible(stdout, a->scope);
        printf("] ");
        cli_put_visible(stdout, a->action);
        printf(": ");
        cli_put_visible(stdout, a->result);
        printf("%s\n", a->ok ? "" : " (failed)");
    }
}

static void action_json(struct json_writer *jw, const struct run_action *a)
{
    jw_object_begin(jw);
    jw_kv_str(jw, "rule", a->rule);
    jw_kv_str(jw, "severity", a->severity);
    jw_kv_str(jw, "scope", a->scope);
    jw_kv_str(jw, "action", a->action);
    jw_kv_int(jw, "at_ns", a->at_ns);
    jw_kv_bool(jw, "ok", a->ok);
    jw_kv_bool(jw, "stopped_run", a->stopped_run);
    jw_kv_str(jw, "result", a->result);
    jw_end(jw);
}

void run_actions_json(struct json_writer *jw, const struct run_actions *x)
{
    const struct run_action *stop = run_actions_stopper(x);
    jw_key(jw, "stopped_by");
    if (stop)
        action_json(jw, stop);
    else
        jw_null(jw);
    jw_key(jw, "actions");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < x->n; i++)
        action_json(jw, &x->a[i]);
    jw_end(jw);
}
