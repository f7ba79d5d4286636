#include "common/array.h"
#include "store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/err.h"
#include "common/json_writer.h"

#include "store/backend.h"

int kv_list_add(struct kv_list *l, const char *key, const char *value)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct kv *items = realloc(l->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        l->items = items;
        l->cap = cap;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    l->items[l->n].key = k;
    l->items[l->n].value = v;
    l->n++;
    return 0;
}

void kv_list_json(struct json_writer *jw, const struct kv_list *l)
{
    jw_object_begin(jw);
    for (size_t i = 0; i < l->n; i++)
        jw_kv_str(jw, l->items[i].key, l->items[i].value);
    jw_end(jw);
}

const char *kv_list_get(const struct kv_list *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    return NULL;
}

void kv_list_release(struct kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    memset(l, 0, sizeof(*l));
}

void run_record_init(struct run_record *r)
{
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    r->git_dirty = -1;
    r->recorder.start_ticks = -1;
}

void run_record_release(struct run_record *r)
{
    char **strings[] = {
        &r->name,           &r->experiment,    &r->workload,       &r->command_json, &r->cwd,
        &r->user,           &r->host,          &r->kernel,         &r->cpu_model,    &r->git_commit,
        &r->python_version, &r->torch_version, &r->strobe_version, &r->error,        &r->parent_id,
        &r->node,           &r->join_key};
    for (size_t i = 0; i < ARRAY_SIZE(strings); i++)
        free(*strings[i]);
    kv_list_release(&r->tags);
    kv_list_release(&r->params);
    kv_list_release(&r->env);
    run_record_init(r);
}

double run_record_duration_s(const struct run_record *r)
{
    int64_t end = r->end_ns ? r->end_ns : r->last_ns;
    return end > r->start_ns ? (double)(end - r->start_ns) / 1e9 : 0.0;
}

static int dup_or_null(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -ENOMEM : 0;
}

static int kv_copy(struct kv_list *dst, const struct kv_list *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (kv_list_add(dst, src->items[i].key, src->items[i].value) < 0)
            return -ENOMEM;
    return 0;
}

int run_record_copy(struct run_record *dst, const struct run_record *src)
{
    *dst = *src;
    memset(&dst->tags, 0, sizeof(dst->tags));
    memset(&dst->params, 0, sizeof(dst->params));
    memset(&dst->env, 0, sizeof(dst->env));
    int rc = 0;
    rc |= dup_or_null(&dst->name, src->name);
    rc |= dup_or_null(&dst->experiment, src->experiment);
    rc |= dup_or_null(&dst->workload, src->workload);
    rc |= dup_or_null(&dst->command_json, src->command_json);
    rc |= dup_or_null(&dst->cwd, src->cwd);
    rc |= dup_or_null(&dst->user, src->user);
    rc |= dup_or_null(&dst->host, src->host);
    rc |= dup_or_null(&dst->kernel, src->kernel);
    rc |= dup_or_null(&dst->cpu_model, src->cpu_model);
    rc |= dup_or_null(&dst->git_commit, src->git_commit);
    rc |= dup_or_null(&dst->python_version, src->python_version);
    rc |= dup_or_null(&dst->torch_version, src->torch_version);
    rc |= dup_or_null(&dst->strobe_version, src->strobe_version);
    rc |= dup_or_null(&dst->error, src->error);
    rc |= dup_or_null(&dst->parent_id, src->parent_id);
    rc |= dup_or_null(&dst->node, src->node);
    rc |= dup_or_null(&dst->join_key, src->join_key);
    rc |= kv_copy(&dst->tags, &src->tags);
    rc |= kv_copy(&dst->params, &src->params);
    rc |= kv_copy(&dst->env, &src->env);
    return rc ? -ENOMEM : 0;
}

int store_blocks_put_each(struct store *s, const struct block_put *blocks, size_t n)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = s->ops->block_upsert(s, blocks[i].series_id, &blocks[i].st, blocks[i].data,
                                  blocks[i].len);
    return rc;
}

const char *store_default_uri(const char *flag)
{
    if (flag && *flag)
        return flag;
    const char *env = getenv("STROBE_STORE");
    return env && *env ? env : "strobe.db";
}

int store_open(const char *uri, int readonly, struct store **out, struct strbuf *err)
{
    int rc = store_uri_is_postgres(uri) ? store_postgres_open(uri, readonly, out, err)
                                        : store_sqlite_open(uri, readonly, out, err);
    if (rc < 0)
        return rc;
    if (!((*out)->open_uri = strdup(uri))) {
        store_close(*out);
        *out = NULL;
        if (err)
            strbuf_adds(err, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    free(s->open_uri);
    s->ops->close(s);
}

struct resolve_ctx {
    const char *ref;
    size_t ref_len;
    struct run_record *out;
    int by_id;     /* matches by exact id */
    int by_prefix; /* matches by id prefix */
    int by_name;   /* newest run with this name found */
    struct run_record prefix_match;
};

static int resolve_visit(const struct run_record *r, void *arg)
{
    struct resolve_ctx *c = arg;
    /* a job's node runs (cluster mode) answer to their id alone: 'last' and
     * a name mean the job, which the nodes share their name with */
    int node_run = r->parent_id != NULL;
    if (node_run && strcmp(r->id, c->ref) != 0 &&
        (c->ref_len < 4 || strncmp(r->id, c->ref, c->ref_len) != 0))
        return 0;
    if (strcmp(c->ref, RUN_REF_LAST) == 0) {
        c->by_name = 1;
        run_record_copy(c->out, r);
        return 1; /* newest first: the first one is the last run */
    }
    if (strcmp(r->id, c->ref) == 0) {
        run_record_release(c->out);
        run_record_copy(c->out, r);
        c->by_id = 1;
        return 1;
    }
    if (!c->by_name && r->name && strcmp(r->name, c->ref) == 0) {
        run_record_copy(c->out, r);
        c->by_name = 1;
    }
    if (c->ref_len >= 4 && strncmp(r->id, c->ref, c->ref_len) == 0) {
        if (c->by_prefix++ == 0)
            run_record_copy(&c->prefix_match, r);
    }
    return 0;
}

static int looks_like_id(const char *ref)
{
    size_t n = 0;
    while (ref[n] && strchr("0123456789abcdef", ref[n]))
        n++;
    return n == RUN_ID_LEN && !ref[n];
}

static int take_first(const struct run_record *r, void *arg)
{
    return run_record_copy(arg, r) < 0 ? -ENOMEM : 1;
}

int store_resolve_run(struct store *s, const char *ref, struct run_record *out)
{
    struct resolve_ctx c;
    memset(&c, 0, sizeof(c));
    c.ref = ref;
    c.ref_len = strlen(ref);
    c.out = out;
    run_record_init(out);
    if (looks_like_id(ref) && s->ops->runs_where(s, RUNS_OF_ID, ref, take_first, out) == 0 &&
        out->id[0])
        return 0; /* one index lookup, not a read of every run (a dashboard's every request) */
    run_record_release(out);
    run_record_init(&c.prefix_match);
    int rc = s->ops->runs_query(s, NULL, resolve_visit, &c);
    if (rc < 0) {
        run_record_release(&c.prefix_match);
        return rc;
    }
    if (c.by_id || c.by_name) {
        run_record_release(&c.prefix_match);
        return 0;
    }
    if (c.by_prefix == 1) {
        *out = c.prefix_match;
        return 0;
    }
    run_record_release(&c.prefix_match);
    return c.by_prefix > 1 ? -STROBE_EAMBIGUOUS : -STROBE_ENOTFOUND;
}

int run_record_recorder_gone(const struct run_record *r)
{
    struct utsname u;
    if (r->recorder_pid <= 0)
        return 0;
    int same_host = r->host && uname(&u) == 0 && strcmp(u.nodename, r->host) == 0;
    return procid_check(&r->recorder, r->recorder_pid, same_host) == PROCID_GONE;
}

const char *run_record_workload(const struct run_record *r)
{
    if (r->workload)
        return r->workload;
    const char *w = kv_list_get(&r->tags, "workload");
    return w ? w : kv_list_get(&r->params, "workload");
}

void run_record_json_head(struct json_writer *jw, const struct run_record *r)
{
    jw_kv_str(jw, "id", r->id);
    jw_kv_str_or_null(jw, "name", r->name);
    jw_kv_str_or_null(jw, "experiment", r->experiment);
    jw_kv_str_or_null(jw, "workload", run_record_workload(r));
    jw_kv_str(jw, "status", run_record_status(r));
    jw_kv_int_or_null(jw, "exit_code", r->exit_code);
    jw_kv_int(jw, "signal", r->signal);
    jw_kv_int(jw, "start_ns", r->start_ns);
    if (r->end_ns)
        jw_kv_int(jw, "end_ns", r->end_ns);
    else
        jw_kv_null(jw, "end_ns");
    jw_kv_num(jw, "duration_s", run_record_duration_s(r));
}

void run_record_json_host(struct json_writer *jw, const struct run_record *r)
{
    jw_kv_str_or_null(jw, "cwd", r->cwd);
    jw_kv_str_or_null(jw, "user", r->user);
    jw_kv_str_or_null(jw, "host", r->host);
    jw_kv_str_or_null(jw, "kernel", r->kernel);
    jw_kv_str_or_null(jw, "cpu_model", r->cpu_model);
    jw_kv_int(jw, "cpu_count", r->cpu_count);
    jw_kv_int(jw, "mem_total_bytes", r->mem_total_bytes);
    jw_kv_str_or_null(jw, "git_commit", r->git_commit);
}

void run_record_json_versions(struct json_writer *jw, const struct run_record *r)
{
    jw_kv_str_or_null(jw, "python_version", r->python_version);
    jw_kv_str_or_null(jw, "torch_version", r->torch_version);
    jw_kv_str_or_null(jw, "strobe_version", r->strobe_version);
    jw_kv_str_or_null(jw, "error", r->error);
}

const char *run_record_status(const struct run_record *r)
{
    if (strcmp(r->status, RUN_RUNNING) != 0)
        return r->status[0] ? r->status : "unknown";
    return run_record_recorder_gone(r) ? RUN_LOST : r->status;
}
