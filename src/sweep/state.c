#include "sweep/state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/json_writer.h"
#include "import/json.h"

static void wl_release(struct wl_state *w)
{
    free(w->experiment);
    free(w->name);
    free(w->key);
    for (char **r = w->runs; r && *r; r++)
        free(*r);
    free(w->runs);
    free(w->devices);
    free(w->collocation);
    free(w->note);
}

void campaign_state_release(struct campaign_state *st)
{
    for (size_t i = 0; i < st->n; i++)
        wl_release(&st->w[i]);
    free(st->w);
    free(st->name);
    free(st->spec_hash);
    free(st->file);
    free(st->owner_host);
    memset(st, 0, sizeof(*st));
}

struct wl_state *campaign_state_find(struct campaign_state *st, const char *experiment,
                                     const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->w[i].name, name) == 0 && strcmp(st->w[i].experiment, experiment) == 0)
            return &st->w[i];
    return NULL;
}

struct wl_state *campaign_state_add(struct campaign_state *st, const char *experiment,
                                    const char *name, const char *key)
{
    struct wl_state *grown = realloc(st->w, (st->n + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    st->w = grown;
    struct wl_state *w = &st->w[st->n];
    memset(w, 0, sizeof(*w));
    snprintf(w->status, sizeof(w->status), "%s", WL_PENDING);
    w->experiment = strdup(experiment);
    w->name = strdup(name);
    w->key = strdup(key ? key : "");
    if (!w->experiment || !w->name || !w->key) {
        wl_release(w);
        return NULL;
    }
    st->n++;
    return w;
}

int wl_state_set_runs(struct wl_state *w, char ids[][RUN_ID_LEN + 1], size_t n)
{
    char **runs = calloc(n + 1, sizeof(*runs));
    if (!runs)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(runs[i] = strdup(ids[i]))) {
            for (size_t k = 0; k < i; k++)
                free(runs[k]);
            free(runs);
            return -ENOMEM;
        }
    for (char **r = w->runs; r && *r; r++)
        free(*r);
    free(w->runs);
    w->runs = runs;
    return 0;
}

static int replace_str(char **dst, const char *s)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && !copy)
        return -ENOMEM;
    free(*dst);
    *dst = copy;
    return 0;
}

int wl_state_set_note(struct wl_state *w, const char *note)
{
    return replace_str(&w->note, note);
}

int campaign_state_json(const struct campaign_state *st, struct strbuf *out)
{
    struct json_writer jw;
    jw_init(&jw, out);
    jw_object_begin(&jw);
    jw_kv_int(&jw, "version", 1);
    jw_key(&jw, "owner");
    jw_object_begin(&jw);
    jw_kv_int(&jw, "pid", st->owner_pid);
    jw_kv_str_or_null(&jw, "host", st->owner_host);
    jw_kv_str(&jw, "boot_id", st->owner.boot_id);
    jw_kv_int(&jw, "pid_ns", st->owner.pid_ns);
    jw_kv_int(&jw, "time_ns", st->owner.time_ns);
    jw_kv_int(&jw, "start_ticks", st->owner.start_ticks);
    jw_end(&jw);
    jw_key(&jw, "workloads");
    jw_array_begin(&jw);
    for (size_t i = 0; i < st->n; i++) {
        const struct wl_state *w = &st->w[i];
        jw_object_begin(&jw);
        jw_kv_str(&jw, "experiment", w->experiment);
        jw_kv_str(&jw, "name", w->name);
        jw_kv_str(&jw, "key", w->key);
        jw_kv_str(&jw, "status", w->status);
        jw_kv_int(&jw, "attempts", w->attempts);
        jw_key(&jw, "runs");
        jw_array_begin(&jw);
        for (char **r = w->runs; r && *r; r++)
            jw_str(&jw, *r);
        jw_end(&jw);
        jw_kv_int(&jw, "started_ns", w->started_ns);
        jw_kv_int(&jw, "ended_ns", w->ended_ns);
        jw_kv_str_or_null(&jw, "devices", w->devices);
        jw_kv_str_or_null(&jw, "collocation", w->collocation);
        jw_kv_str_or_null(&jw, "note", w->note);
        jw_end(&jw);
    }
    jw_end(&jw);
    jw_end(&jw);
    return jw_failed(&jw) ? -ENOMEM : 0;
}

static int64_t get_i64(const struct json *obj, const char *key)
{
    double v = 0;
    return json_num(json_get(obj, key), &v) == 0 ? (int64_t)v : 0;
}

static char *get_dup(const struct json *obj, const char *key)
{
    const char *s = json_str(json_get(obj, key));
    return s ? strdup(s) : NULL;
}

static int parse_workload(const struct json *o, struct campaign_state *out)
{
    const char *exp = json_str(json_get(o, "experiment")), *name = json_str(json_get(o, "name"));
    const char *status = json_str(json_get(o, "status"));
    if (!exp || !name || !status)
        return -EBADMSG;
    struct wl_state *w = campaign_state_add(out, exp, name, json_str(json_get(o, "key")));
    if (!w)
        return -ENOMEM;
    snprintf(w->status, sizeof(w->status), "%s", status);
    w->attempts = (int)get_i64(o, "attempts");
    w->started_ns = get_i64(o, "started_ns");
    w->ended_ns = get_i64(o, "ended_ns");
    w->devices = get_dup(o, "devices");
    w->collocation = get_dup(o, "collocation");
    w->note = get_dup(o, "note");
    const struct json *runs = json_get(o, "runs");
    size_t n = 0;
    for (const struct json *r = runs && runs->type == JSON_ARRAY ? runs->child : NULL; r;
         r = r->next)
        n++;
    w->runs = calloc(n + 1, sizeof(*w->runs));
    if (!w->runs)
        return -ENOMEM;
    n = 0;
    for (const struct json *r = runs && runs->type == JSON_ARRAY ? runs->child : NULL; r;
         r = r->next)
        if (json_str(r) && strlen(json_str(r)) == RUN_ID_LEN && !(w->runs[n++] = strdup(r->str)))
            return -ENOMEM;
    return 0;
}

int campaign_state_parse(const char *json, size_t len, struct campaign_state *out)
{
    struct json_doc doc;
    json_doc_init(&doc);
    struct json *root = NULL;
    int rc = json_parse(&doc, json, len, &root) == 0 && root->type == JSON_OBJECT ? 0 : -EBADMSG;
    const struct json *owner = rc == 0 ? json_get(root, "owner") : NULL;
    if (owner) {
        out->owner_pid = get_i64(owner, "pid");
        out->owner_host = get_dup(owner, "host");
        const char *boot = json_str(json_get(owner, "boot_id"));
        snprintf(out->owner.boot_id, sizeof(out->owner.boot_id), "%s", boot ? boot : "");
        out->owner.pid_ns = get_i64(owner, "pid_ns");
        out->owner.time_ns = get_i64(owner, "time_ns");
        out->owner.start_ticks = get_i64(owner, "start_ticks");
    }
    const struct json *wls = rc == 0 ? json_get(root, "workloads") : NULL;
    for (const struct json *o = wls && wls->type == JSON_ARRAY ? wls->child : NULL; o && rc == 0;
         o = o->next)
        rc = parse_workload(o, out);
    json_doc_release(&doc);
    return rc;
}

int campaign_state_of_record(const struct campaign_record *c, struct campaign_state *out)
{
    int rc = campaign_state_parse(c->state, strlen(c->state), out);
    out->name = strdup(c->name);
    out->spec_hash = strdup(c->spec_hash ? c->spec_hash : "");
    out->file = c->file ? strdup(c->file) : NULL;
    out->created_ns = c->created_ns;
    out->updated_ns = c->updated_ns;
    if (rc == 0 && (!out->name || !out->spec_hash))
        rc = -ENOMEM;
    return rc;
}

struct load_ctx {
    struct campaign_state *out;
    int rc;
};

static int on_campaign(const struct campaign_record *c, void *arg)
{
    struct load_ctx *ctx = arg;
    ctx->rc = campaign_state_of_record(c, ctx->out);
    return 0;
}

int campaign_state_load(struct store *s, const char *name, struct campaign_state *out)
{
    struct load_ctx ctx = {out, 0};
    int rc = s->ops->campaign_get(s, name, on_campaign, &ctx);
    return rc < 0 ? rc : ctx.rc;
}

int campaign_state_save(struct store *s, struct campaign_state *st)
{
    struct strbuf doc;
    strbuf_init(&doc);
    st->updated_ns = clock_realtime_ns();
    if (!st->created_ns)
        st->created_ns = st->updated_ns;
    int rc = campaign_state_json(st, &doc);
    struct campaign_record c = {
        .name = st->name,
        .spec_hash = st->spec_hash,
        .file = st->file,
        .created_ns = st->created_ns,
        .updated_ns = st->updated_ns,
        .state = doc.buf,
    };
    if (rc == 0)
        rc = s->ops->campaign_put(s, &c);
    strbuf_release(&doc);
    return rc;
}

enum procid_state campaign_owner_state(const struct campaign_state *st)
{
    if (st->owner_pid <= 0)
        return PROCID_GONE;
    struct utsname u;
    int same_host = st->owner_host && uname(&u) == 0 && strcmp(u.nodename, st->owner_host) == 0;
    return procid_check(&st->owner, st->owner_pid, same_host);
}

const char *wl_state_shown_as(const struct wl_state *w, enum procid_state owner)
{
    if (strcmp(w->status, WL_RUNNING) == 0 && owner == PROCID_GONE)
        return WL_LOST;
    return w->status;
}

const char *wl_state_shown(const struct campaign_state *st, const struct wl_state *w)
{
    if (strcmp(w->status, WL_RUNNING) != 0)
        return w->status;
    return wl_state_shown_as(w, campaign_owner_state(st));
}
