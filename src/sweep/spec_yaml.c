/*
 * radT's YAML experiment files, and strobe's extensions (spec.h,
 * docs/sweep.md), through libyaml's document loader: every node keeps its
 * line and column. A file is one group of keys, or a top level of defaults
 * with `workloads:`, a list of groups that each take those defaults. Each
 * group's parameters expand into workloads.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/clock.h"
#include "sweep/spec_internal.h"

/* The largest number of combinations a random draw picks from by shuffling
 * every index; past it, indexes are drawn and repeats thrown away. */
#define SHUFFLE_MAX 1000000
/* The deepest nesting of lists and mappings read. radT's files nest three
 * levels, strobe's five; libyaml's scanner checks every open flow level at
 * each token, so that a file nested 100000 deep took it 40 s. */
#define YAML_MAX_DEPTH 64

enum gkey {
    K_NAME,
    K_EXPERIMENT,
    K_WORKLOAD,
    K_COLLOCATION,
    K_MPS_THREADS,
    K_DEVICES,
    K_LISTENERS,
    K_FILE,
    K_COMMAND,
    K_PYTHON,
    K_METHOD,
    K_COUNT,
    K_SEED,
    K_RUNS,
    K_TIMEOUT,
    K_RETRIES,
    K_SHARE_DEVICES,
    K_REPORT,
    K_INTERVAL,
    K_RULES,
    K_RULE_INTERVAL,
    /* not plain values */
    K_PARAMETERS,
    K_ENV,
    K_ON_FINDING,
    K_RULE_PARAMS,
    /* the top level only */
    K_WORKLOADS,
    K_STATUS, /* radT's write-back: read past */
    K_PARENT,
    K_COUNT_
};

#define K_SCALARS K_PARAMETERS /* the keys before it hold one value */
_Static_assert(K_COUNT_ <= 32, "read_group keeps the keys seen in 32 bits");

static const char *const key_names[K_COUNT_] = {
    [K_NAME] = "name",
    [K_EXPERIMENT] = "experiment",
    [K_WORKLOAD] = "workload",
    [K_COLLOCATION] = "collocation",
    [K_MPS_THREADS] = "mps_threads",
    [K_DEVICES] = "devices",
    [K_LISTENERS] = "listeners",
    [K_FILE] = "file",
    [K_COMMAND] = "command",
    [K_PYTHON] = "python",
    [K_METHOD] = "method",
    [K_COUNT] = "count",
    [K_SEED] = "seed",
    [K_RUNS] = "runs",
    [K_TIMEOUT] = "timeout",
    [K_RETRIES] = "retries",
    [K_SHARE_DEVICES] = "share_devices",
    [K_REPORT] = "report",
    [K_INTERVAL] = "interval",
    [K_RULES] = "rules",
    [K_RULE_INTERVAL] = "rule_interval",
    [K_PARAMETERS] = "parameters",
    [K_ENV] = "env",
    [K_ON_FINDING] = "on_finding",
    [K_RULE_PARAMS] = "rule_params",
    [K_WORKLOADS] = "workloads",
    [K_STATUS] = "status",
    [K_PARENT] = "parent",
};
_Static_assert(sizeof(key_names) / sizeof(key_names[0]) == K_COUNT_, "a name for every key");

struct yaml_group {
    struct src_val v[K_SCALARS];
    yaml_node_t *parameters, *env, *on_finding, *rule_params;
    int line, col;
};

struct yaml_reader {
    struct spec_reader *rd;
    yaml_document_t doc;
    char **pool; /* texts made here (joined lists), freed at the end */
    size_t npool;
    int counter;         /* workloads named by number so far (radT's 000, 001, ...) */
    yaml_node_t *status; /* radT's write-back at the top, or NULL */
};

static int line_of(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

static int col_of(const yaml_node_t *n)
{
    return (int)n->start_mark.column + 1;
}

static int fail_node(struct yaml_reader *y, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_node(struct yaml_reader *y, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sweep_fail_at(y->rd, line_of(n), col_of(n), "%s", msg);
}

static yaml_node_t *node_at(struct yaml_reader *y, int index)
{
    return yaml_document_get_node(&y->doc, index);
}

static const char *pool_keep(struct yaml_reader *y, char *s)
{
    if (!s)
        return NULL;
    char **grown = realloc(y->pool, (y->npool + 1) * sizeof(*grown));
    if (!grown) {
        free(s);
        return NULL;
    }
    y->pool = grown;
    y->pool[y->npool++] = s;
    return s;
}

/* A scalar's text, placed where the text begins: after the quote of a
 * quoted one (its escapes are not counted). */
static struct src_val scalar_val(const yaml_node_t *n)
{
    yaml_scalar_style_t style = n->data.scalar.style;
    return (struct src_val){
        .text = (const char *)n->data.scalar.value,
        .line = line_of(n),
        .col = col_of(n),
        .quote = style == YAML_SINGLE_QUOTED_SCALAR_STYLE   ? '\''
                 : style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? '"'
                                                            : 0,
        .below = style == YAML_LITERAL_SCALAR_STYLE || style == YAML_FOLDED_SCALAR_STYLE,
    };
}

/* A value that may be a scalar or a list of scalars ("0+1" or [0, 1]),
 * as text joined with '+'. */
static int joined_val(struct yaml_reader *y, yaml_node_t *n, struct src_val *out)
{
    if (n->type == YAML_SCALAR_NODE) {
        *out = scalar_val(n);
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_node(y, n, "a value or a list of values is wanted here");
    struct strbuf sb;
    strbuf_init(&sb);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *item = node_at(y, *it);
        if (!item || item->type != YAML_SCALAR_NODE) {
            strbuf_release(&sb);
            return fail_node(y, item ? item : n, "a list of plain values is wanted here");
        }
        strbuf_addf(&sb, "%s%s", sb.len ? "+" : "", (const char *)item->data.scalar.value);
    }
    const char *text = strbuf_failed(&sb) ? NULL : pool_keep(y, strdup(sb.buf ? sb.buf : ""));
    strbuf_release(&sb);
    if (!text)
        return fail_node(y, n, "out of memory");
    *out = (struct src_val){.text = text, .line = line_of(n), .col = col_of(n)};
    return 0;
}

static enum gkey find_key(const char *name)
{
    int k = 0;
    while (k < K_COUNT_ && strcmp(key_names[k], name) != 0)
        k++;
    return (enum gkey)k;
}

static int set_key(struct yaml_reader *y, struct yaml_group *g, enum gkey k, yaml_node_t *value)
{
    switch (k) {
    case K_PARAMETERS:
        if (value->type != YAML_MAPPING_NODE)
            return fail_node(y, value, "parameters: a mapping of names to {values: [...]}");
        g->parameters = value;
        return 0;
    case K_ENV:
        if (value->type != YAML_MAPPING_NODE)
            return fail_node(y, value, "env: a mapping of variable names to values");
        g->env = value;
        return 0;
    case K_ON_FINDING:
    case K_RULE_PARAMS:
        if (value->type == YAML_MAPPING_NODE)
            return fail_node(y, value, "%s: %s, or a list of them", key_names[k],
                             k == K_ON_FINDING ? "RULE=ACTION" : "RULE.PARAM=VALUE");
        *(k == K_ON_FINDING ? &g->on_finding : &g->rule_params) = value;
        return 0;
    case K_DEVICES:
    case K_LISTENERS:
        return joined_val(y, value, &g->v[k]);
    default:
        if (value->type != YAML_SCALAR_NODE)
            return fail_node(y, value, "%s: one value is wanted here", key_names[k]);
        g->v[k] = scalar_val(value);
        return 0;
    }
}

/* Read a mapping's keys into g. top: the file's top level (experiment,
 * workloads, status and parent are allowed). */
static int read_group(struct yaml_reader *y, yaml_node_t *map, struct yaml_group *g, int top,
                      yaml_node_t **workloads)
{
    if (map->type != YAML_MAPPING_NODE)
        return fail_node(y, map, "a mapping of keys (name, file, parameters, ...) is wanted");
    g->line = line_of(map);
    g->col = col_of(map);
    uint32_t seen = 0; /* bit k: key k was given (libyaml keeps both of a repeated key) */
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = node_at(y, p->key), *value = node_at(y, p->value);
        if (!key || !value || key->type != YAML_SCALAR_NODE)
            return fail_node(y, key ? key : map, "a key must be a plain name");
        const char *name = (const char *)key->data.scalar.value;
        enum gkey k = find_key(name);
        if (k == K_COUNT_ || (!top && (k == K_WORKLOADS || k == K_STATUS || k == K_PARENT)))
            return fail_node(y, key,
                             "unknown key '%s' (name, experiment, workload, collocation, "
                             "mps_threads, devices, listeners, file, command, python, method, "
                             "count, seed, runs, timeout, retries, share_devices, report, "
                             "interval, rules, rule_interval, rule_params, parameters, env, "
                             "on_finding%s)",
                             name, top ? ", workloads" : "");
        if (seen & (UINT32_C(1) << k))
            return fail_node(y, key, "key '%s' is given twice", name);
        seen |= UINT32_C(1) << k;
        if (k == K_PARENT)
            continue;
        if (k == K_STATUS) {
            y->status = value->type == YAML_MAPPING_NODE ? value : NULL;
            continue;
        }
        if (k == K_WORKLOADS) {
            if (value->type != YAML_SEQUENCE_NODE)
                return fail_node(y, value, "workloads: a list of groups of keys");
            *workloads = value;
            continue;
        }
        if (set_key(y, g, k, value) < 0)
            return -1;
    }
    return 0;
}

/* g's keys over the defaults d. */
static void inherit(struct yaml_group *g, const struct yaml_group *d)
{
    for (int k = 0; k < K_SCALARS; k++)
        if (!g->v[k].text && k != K_WORKLOAD)
            g->v[k] = d->v[k];
    if (!g->parameters)
        g->parameters = d->parameters;
    if (!g->env)
        g->env = d->env;
    if (!g->on_finding)
        g->on_finding = d->on_finding;
    if (!g->rule_params)
        g->rule_params = d->rule_params;
}

/* ---- parameters ---- */

struct param {
    const char *key;
    yaml_node_t **values;
    size_t n;
};

struct param_set {
    struct param *p;
    size_t n;
};

static void params_release(struct param_set *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i].values);
    free(ps->p);
}

/* One parameter's values: {values: [...]}, {value: x}, a list or a value. */
static int param_values(struct yaml_reader *y, yaml_node_t *spec, struct param *out)
{
    yaml_node_t *list = spec;
    if (spec->type == YAML_MAPPING_NODE) {
        list = NULL;
        for (yaml_node_pair_t *p = spec->data.mapping.pairs.start; p < spec->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = node_at(y, p->key);
            const char *name =
                k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
            if (strcmp(name, "values") != 0 && strcmp(name, "value") != 0)
                return fail_node(y, k ? k : spec,
                                 "unknown key '%s' of parameter '%s' (values, value)", name,
                                 out->key);
            if (list)
                return fail_node(y, k, "parameter '%s' has both values and value", out->key);
            list = node_at(y, p->value);
        }
        if (!list)
            return fail_node(y, spec, "parameter '%s' has no values", out->key);
    }
    size_t n = list->type == YAML_SEQUENCE_NODE
                   ? (size_t)(list->data.sequence.items.top - list->data.sequence.items.start)
                   : 1;
    if (n == 0)
        return fail_node(y, list, "parameter '%s' has an empty list of values", out->key);
    out->values = calloc(n, sizeof(*out->values));
    if (!out->values)
        return fail_node(y, list, "out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *v = list->type == YAML_SEQUENCE_NODE
                             ? node_at(y, list->data.sequence.items.start[i])
                             : list;
        if (!v || v->type != YAML_SCALAR_NODE)
            return fail_node(y, v ? v : list,
                             "a value of parameter '%s' must be plain (a number "
                             "or a string)",
                             out->key);
        struct src_val at = scalar_val(v);
        if (sweep_check_name(y->rd, &at, "parameter value", at.text) < 0)
            return -1;
        out->values[out->n++] = v;
    }
    return 0;
}

static int read_params(struct yaml_reader *y, yaml_node_t *map, struct param_set *ps)
{
    if (!map)
        return 0;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    ps->p = calloc(n ? n : 1, sizeof(*ps->p));
    if (!ps->p)
        return fail_node(y, map, "out of memory");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(y, p->key), *v = node_at(y, p->value);
        if (!k || !v || k->type != YAML_SCALAR_NODE || !k->data.scalar.length)
            return fail_node(y, k ? k : map, "a parameter's name must be a plain name");
        struct param *par = &ps->p[ps->n++];
        par->key = (const char *)k->data.scalar.value;
        struct src_val at = scalar_val(k);
        if (sweep_check_name(y->rd, &at, "parameter name", par->key) < 0)
            return -1;
        for (size_t i = 0; i + 1 < ps->n; i++)
            if (strcmp(ps->p[i].key, par->key) == 0)
                return fail_node(y, k, "parameter '%s' is given twice", par->key);
        if (param_values(y, v, par) < 0)
            return -1;
    }
    return 0;
}

/* ---- drawing combinations ---- */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), without modulo bias. */
static uint64_t draw_below(uint64_t *state, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, r;
    do
        r = splitmix64(state);
    while (r >= limit);
    return r % n;
}

/* The combination indexes to run, in order: all of them for grid; count
 * of them (all when 0) drawn with seed for random. */
static int choose(struct yaml_reader *y, const struct yaml_group *g, uint64_t total, long count,
                  long seed, int random, uint64_t **out, size_t *n)
{
    size_t want = random && count > 0 && (uint64_t)count < total ? (size_t)count : (size_t)total;
    uint64_t *idx = calloc(want ? want : 1, sizeof(*idx));
    if (!idx)
        return sweep_fail_at(y->rd, g->line, 1, "out of memory");
    uint64_t state = (uint64_t)seed;
    if (!random) {
        for (size_t i = 0; i < want; i++)
            idx[i] = i;
    } else if (total <= SHUFFLE_MAX) { /* Fisher-Yates, stopped after want */
        uint64_t *all = calloc((size_t)total, sizeof(*all));
        if (!all) {
            free(idx);
            return sweep_fail_at(y->rd, g->line, 1, "out of memory");
        }
        for (uint64_t i = 0; i < total; i++)
            all[i] = i;
        for (size_t i = 0; i < want; i++) {
            uint64_t j = i + draw_below(&state, total - i), t = all[i];
            all[i] = all[j];
            all[j] = t;
            idx[i] = all[i];
        }
        free(all);
    } else { /* draws from a huge space, a repeat thrown away: the drawn
              * are kept (plus one) in a table at most half full */
        size_t cap = 64;
        while (cap < want * 2)
            cap *= 2;
        uint64_t *drawn = calloc(cap, sizeof(*drawn));
        if (!drawn) {
            free(idx);
            return sweep_fail_at(y->rd, g->line, 1, "out of memory");
        }
        for (size_t i = 0; i < want;) {
            uint64_t c = draw_below(&state, total);
            size_t k = (size_t)((c * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
            while (drawn[k] && drawn[k] != c + 1)
                k = (k + 1) & (cap - 1);
            if (!drawn[k]) {
                drawn[k] = c + 1;
                idx[i++] = c;
            }
        }
        free(drawn);
    }
    *out = idx;
    *n = want;
    return 0;
}

/* ---- groups into workloads ---- */

typedef int value_fn(struct yaml_reader *y, struct sweep_workload *w, const struct src_val *v);

/* fn on each value of a scalar or a list of scalars. */
static int each_value(struct yaml_reader *y, yaml_node_t *n, struct sweep_workload *w, value_fn *fn,
                      const char *what)
{
    size_t count = n->type == YAML_SEQUENCE_NODE
                       ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
                       : 1;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item =
            n->type == YAML_SEQUENCE_NODE ? node_at(y, n->data.sequence.items.start[i]) : n;
        if (!item || item->type != YAML_SCALAR_NODE)
            return fail_node(y, item ? item : n, "%s values only", what);
        struct src_val at = scalar_val(item);
        if (fn(y, w, &at) < 0)
            return -1;
    }
    return 0;
}

/* RULE.PARAM=VALUE: the shape here; strobe sweep checks the names. */
static int add_rule_param(struct yaml_reader *y, struct sweep_workload *w, const struct src_val *v)
{
    const char *dot = strchr(v->text, '.'), *eq = strchr(v->text, '=');
    if (!dot || !eq || dot > eq || dot == v->text)
        return sweep_fail_val(y->rd, v, "rule_params: '%s' is not RULE.PARAM=VALUE", v->text);
    return sweep_push_string(&w->rule_params, v->text) < 0
               ? sweep_fail_val(y->rd, v, "out of memory")
               : 0;
}

static int add_on_finding(struct yaml_reader *y, struct sweep_workload *w, const struct src_val *v)
{
    return sweep_add_on_finding(y->rd, w, v);
}

static int group_settings(struct yaml_reader *y, const struct yaml_group *g,
                          struct sweep_workload *w)
{
    struct spec_reader *rd = y->rd;
    long retries = 0;
    if (sweep_set_timeout(rd, &g->v[K_TIMEOUT], &w->timeout_ns) < 0 ||
        sweep_set_count(rd, &g->v[K_RETRIES], "retries", 0, 100, &retries) < 0)
        return -1;
    w->retries = (int)retries;
    const struct src_val *iv = &g->v[K_INTERVAL];
    if (sweep_given(iv) && (duration_parse(iv->text, &w->interval_ns) < 0 ||
                            w->interval_ns < NS_PER_MS || w->interval_ns > 60 * NS_PER_S))
        return sweep_fail_val(rd, iv, "interval '%s' is not a duration from 1ms to 60s", iv->text);
    for (int k = K_SHARE_DEVICES; k <= K_REPORT; k++) {
        const char *t = g->v[k].text;
        int *flag = k == K_SHARE_DEVICES ? &w->share_devices : &w->report;
        if (!t)
            continue;
        if (!strcmp(t, "true") || !strcmp(t, "yes") || !strcmp(t, "on"))
            *flag = 1;
        else if (!strcmp(t, "false") || !strcmp(t, "no") || !strcmp(t, "off"))
            *flag = 0;
        else
            return sweep_fail_val(rd, &g->v[k], "%s: true or false, not '%s'", key_names[k], t);
    }
    if (g->env)
        for (yaml_node_pair_t *p = g->env->data.mapping.pairs.start;
             p < g->env->data.mapping.pairs.top; p++) {
            yaml_node_t *k = node_at(y, p->key), *v = node_at(y, p->value);
            if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE)
                return fail_node(y, k ? k : g->env, "env: plain names and values only");
            struct src_val at = scalar_val(k);
            if (sweep_add_env(rd, w, &at, at.text, (const char *)v->data.scalar.value) < 0)
                return -1;
        }
    const struct src_val *ri = &g->v[K_RULE_INTERVAL];
    if (sweep_given(ri) && (duration_parse(ri->text, &w->rule_interval_ns) < 0 ||
                            w->rule_interval_ns < 100 * NS_PER_MS))
        return sweep_fail_val(rd, ri, "rule_interval '%s' is not a duration of 100ms or more",
                              ri->text);
    if (sweep_given(&g->v[K_RULES]) && !(w->rules = strdup(g->v[K_RULES].text)))
        return sweep_fail_val(rd, &g->v[K_RULES], "out of memory");
    if (g->rule_params &&
        each_value(y, g->rule_params, w, add_rule_param, "rule_params: RULE.PARAM=VALUE") < 0)
        return -1;
    if (g->on_finding &&
        each_value(y, g->on_finding, w, add_on_finding, "on_finding: RULE=ACTION") < 0)
        return -1;
    return 0;
}

/* Whether radT's status map says this combination finished: its values
 * read "FINISHED RUN_ID (--key value ...)", the parameters as radT passed
 * them. */
static int radt_finished(struct yaml_reader *y, const struct kv_list *params)
{
    if (!y->status)
        return 0;
    struct strbuf want;
    strbuf_init(&want);
    strbuf_addch(&want, '(');
    for (size_t i = 0; i < params->n; i++)
        strbuf_addf(&want, "%s--%s %s", i ? " " : "", params->items[i].key, params->items[i].value);
    strbuf_addch(&want, ')');
    int found = 0;
    for (yaml_node_pair_t *p = y->status->data.mapping.pairs.start;
         !found && p < y->status->data.mapping.pairs.top; p++) {
        yaml_node_t *v = node_at(y, p->value);
        const char *text =
            v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : "";
        const char *paren = strchr(text, '(');
        found =
            strncmp(text, "FINISHED", 8) == 0 && paren && want.buf && strcmp(paren, want.buf) == 0;
    }
    strbuf_release(&want);
    return found;
}

/* The workload's name: the group's `workload` (with the combination's
 * number when it has several), else radT's running number. */
static void workload_name(struct yaml_reader *y, const struct yaml_group *g, size_t combos,
                          size_t i, char *buf, size_t cap)
{
    const char *base = g->v[K_WORKLOAD].text;
    if (base && combos == 1)
        snprintf(buf, cap, "%s", base);
    else if (base)
        snprintf(buf, cap, "%s-%03zu", base, i);
    else
        snprintf(buf, cap, "%03d", y->counter++);
}

static int add_combination(struct yaml_reader *y, const struct yaml_group *g,
                           const struct param_set *ps, uint64_t index, const char *experiment,
                           const char *name, long runs)
{
    struct spec_reader *rd = y->rd;
    struct kv_list params = {0}, extras = {0};
    int rc = 0;
    /* each key's value from the mixed-radix index, the last key fastest */
    uint64_t rest = index;
    const char **chosen = calloc(ps->n ? ps->n : 1, sizeof(*chosen));
    if (!chosen)
        return sweep_fail_at(rd, g->line, 1, "out of memory");
    for (size_t k = ps->n; k-- > 0;) {
        chosen[k] = (const char *)ps->p[k].values[rest % ps->p[k].n]->data.scalar.value;
        rest /= ps->p[k].n;
    }
    for (size_t k = 0; k < ps->n && rc == 0; k++)
        if (kv_list_add(&params, ps->p[k].key, chosen[k]) < 0)
            rc = sweep_fail_at(rd, g->line, 1, "out of memory");
    free(chosen);
    /* the names strobe run will be given, where the file gives them */
    struct src_val wl_at =
        g->v[K_WORKLOAD].text ? g->v[K_WORKLOAD] : (struct src_val){.line = g->line, .col = g->col};
    const struct src_val *exp_at = g->v[K_EXPERIMENT].text ? &g->v[K_EXPERIMENT] : &g->v[K_NAME];
    if (rc == 0 && (sweep_check_name(rd, exp_at, "experiment name", experiment) < 0 ||
                    sweep_check_name(rd, &wl_at, "workload name", name) < 0))
        rc = -1;
    /* its place: where its name is written, else its group */
    const struct src_val *named = &g->v[K_WORKLOAD];
    struct sweep_workload *w =
        rc == 0 ? sweep_add_workload(rd, experiment, name, named->text ? named->line : g->line,
                                     named->text ? named->col : g->col)
                : NULL;
    if (!w || group_settings(y, g, w) < 0)
        rc = -1;
    if (rc == 0)
        w->file_finished = radt_finished(y, &params);
    for (long r = 0; r < runs && rc == 0; r++) {
        struct sweep_run *run = sweep_add_run(rd, w, g->line);
        char index_text[24], default_name[96];
        snprintf(index_text, sizeof(index_text), "%ld", r);
        if (runs > 1)
            snprintf(default_name, sizeof(default_name), "%.60s.%ld", name, r + 1);
        else
            snprintf(default_name, sizeof(default_name), "%.60s", name);
        kv_list_release(&extras);
        if (!run || kv_list_add(&extras, "workload", name) < 0 ||
            kv_list_add(&extras, "run", index_text) < 0) {
            rc = run ? sweep_fail_at(rd, g->line, 1, "out of memory") : -1;
            break;
        }
        struct run_source src = {
            .name = g->v[K_NAME],
            .workload = wl_at,
            .devices = g->v[K_DEVICES],
            .collocation = g->v[K_COLLOCATION],
            .mps_pct = g->v[K_MPS_THREADS],
            .listeners = g->v[K_LISTENERS],
            .file = g->v[K_FILE],
            .command = g->v[K_COMMAND],
            .python = g->v[K_PYTHON],
            .params = &params,
            .extras = &extras,
            .line = g->line,
            .col = g->col,
        };
        rc = sweep_build_run(rd, &src, name, default_name, run);
    }
    kv_list_release(&extras);
    kv_list_release(&params);
    return rc;
}

static int expand_group(struct yaml_reader *y, const struct yaml_group *g, const char *experiment)
{
    struct spec_reader *rd = y->rd;
    struct param_set ps = {0};
    long count = 0, seed = 0, runs = 1;
    const struct src_val *method = &g->v[K_METHOD];
    int random = method->text && strcmp(method->text, "random") == 0;
    int rc = 0;
    if (method->text && !random && strcmp(method->text, "grid") != 0)
        rc = sweep_fail_val(rd, method, "method '%s' is not grid or random", method->text);
    if (rc == 0 &&
        (sweep_set_count(rd, &g->v[K_COUNT], "count", 1, SWEEP_MAX_WORKLOADS, &count) < 0 ||
         sweep_set_count(rd, &g->v[K_SEED], "seed", 0, LONG_MAX, &seed) < 0 ||
         sweep_set_count(rd, &g->v[K_RUNS], "runs", 1, SWEEP_MAX_RUNS, &runs) < 0))
        rc = -1;
    if (rc == 0 && !random && (g->v[K_COUNT].text || g->v[K_SEED].text))
        rc = sweep_fail_val(rd, g->v[K_COUNT].text ? &g->v[K_COUNT] : &g->v[K_SEED],
                            "count and seed are for method: random");
    if (rc == 0)
        rc = read_params(y, g->parameters, &ps);
    uint64_t total = 1;
    for (size_t k = 0; rc == 0 && k < ps.n; k++) {
        if (total > UINT64_MAX / 2 / ps.p[k].n) {
            rc = sweep_fail_at(rd, line_of(g->parameters), col_of(g->parameters),
                               "the parameters make too many combinations");
            break;
        }
        total *= ps.p[k].n;
    }
    if (rc == 0 && !random && total > SWEEP_MAX_WORKLOADS)
        rc = sweep_fail_at(rd, g->parameters ? line_of(g->parameters) : g->line,
                           g->parameters ? col_of(g->parameters) : 1,
                           "the grid makes %llu workloads, more than %d: use method: random "
                           "with a count",
                           (unsigned long long)total, SWEEP_MAX_WORKLOADS);
    uint64_t *idx = NULL;
    size_t n = 0;
    if (rc == 0)
        rc = choose(y, g, total, count, seed, random, &idx, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char name[128];
        workload_name(y, g, n, i, name, sizeof(name));
        rc = add_combination(y, g, &ps, idx[i], experiment, name, runs);
    }
    free(idx);
    params_release(&ps);
    return rc;
}

static int read_document(struct yaml_reader *y)
{
    struct spec_reader *rd = y->rd;
    yaml_node_t *root = yaml_document_get_root_node(&y->doc);
    if (!root)
        return sweep_fail_at(rd, 1, 1, "the file is empty");
    struct yaml_group top = {0};
    yaml_node_t *workloads = NULL;
    if (read_group(y, root, &top, 1, &workloads) < 0)
        return -1;
    const struct src_val *exp = &top.v[K_EXPERIMENT];
    if (!sweep_given(exp) && !sweep_given(&top.v[K_NAME]))
        return sweep_fail_at(rd, line_of(root), col_of(root),
                             "the file has no experiment (nor a name to use instead)");
    const char *experiment = sweep_given(exp) ? exp->text : top.v[K_NAME].text;
    if (!(rd->spec->campaign = strdup(experiment)))
        return sweep_fail_at(rd, 1, 1, "out of memory");
    if (!workloads)
        return expand_group(y, &top, experiment);
    for (yaml_node_item_t *it = workloads->data.sequence.items.start;
         it < workloads->data.sequence.items.top; it++) {
        struct yaml_group g = {0};
        yaml_node_t *item = node_at(y, *it);
        if (!item || read_group(y, item, &g, 0, NULL) < 0)
            return item ? -1 : fail_node(y, workloads, "a broken list");
        inherit(&g, &top);
        const char *e = sweep_given(&g.v[K_EXPERIMENT]) ? g.v[K_EXPERIMENT].text : experiment;
        if (expand_group(y, &g, e) < 0)
            return -1;
    }
    if (workloads->data.sequence.items.top == workloads->data.sequence.items.start)
        return fail_node(y, workloads, "workloads: the list is empty");
    return 0;
}

/* libyaml's error at its place: a parser's mark, or for a reader's (a
 * byte that is not UTF-8, a control character) the byte's offset. */
static int parser_error(struct spec_reader *rd, const yaml_parser_t *parser, const char *data)
{
    int line = (int)parser->problem_mark.line + 1, col = (int)parser->problem_mark.column + 1;
    if (parser->error == YAML_READER_ERROR) {
        const unsigned char *u = (const unsigned char *)data;
        size_t at = parser->problem_offset, lead = at;
        while (lead > 0 && (u[lead - 1] & 0xc0) == 0x80)
            lead--;
        if (lead > 0 && u[lead - 1] >= 0xc0 && utf8_seq_len(u + lead - 1) == 0)
            at = lead - 1; /* a broken UTF-8 sequence: its first byte */
        size_t bom = strncmp(data, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
        struct src_val whole = {.text = data + bom, .line = 1, .col = 1};
        sweep_place_in(&whole, at - bom, &line, &col);
    }
    return sweep_fail_at(rd, line, col, "%s%s%s", parser->problem ? parser->problem : "not YAML",
                         parser->context ? " " : "", parser->context ? parser->context : "");
}

/* A first pass over the file's events: its syntax, its depth (before
 * libyaml's scanner slows down with it) and one document only (the
 * loader would read the first and leave the rest unsaid). */
static int check_syntax(struct spec_reader *rd, const char *data, size_t len)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return sweep_fail_at(rd, 1, 1, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    int depth = 0, documents = 0, rc = 0;
    for (int end = 0; !end && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(rd, &parser, data);
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > YAML_MAX_DEPTH)
                rc = sweep_fail_at(rd, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                                   "lists and mappings nested deeper than %d", YAML_MAX_DEPTH);
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        } else if (ev.type == YAML_DOCUMENT_START_EVENT && ++documents > 1) {
            rc = sweep_fail_at(rd, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                               "a second YAML document: an experiment file holds one");
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int sweep_read_yaml(struct spec_reader *rd)
{
    char *data = NULL;
    size_t len = 0;
    if (sweep_slurp(rd, &data, &len) < 0)
        return -1;
    struct yaml_reader y = {.rd = rd};
    yaml_parser_t parser;
    int rc = check_syntax(rd, data, len);
    if (rc == 0 && !yaml_parser_initialize(&parser))
        rc = sweep_fail_at(rd, 1, 1, "out of memory");
    if (rc == 0) {
        yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
        if (!yaml_parser_load(&parser, &y.doc)) {
            rc = parser_error(rd, &parser, data);
        } else {
            rc = read_document(&y);
            yaml_document_delete(&y.doc);
        }
        yaml_parser_delete(&parser);
    }
    free(data);
    for (size_t i = 0; i < y.npool; i++)
        free(y.pool[i]);
    free(y.pool);
    return rc;
}
