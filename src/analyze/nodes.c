#include "analyze/nodes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/json_writer.h"
#include "common/label.h"
#include "store/job.h"

/* Whether key (len bytes) is one of the comma list of label keys. */
static int key_in(const char *list, const char *key, size_t len)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && memcmp(p, key, len) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

int node_series(const char *name, const char *labels, enum metric_id m, const char **node,
                size_t *node_len)
{
    if (strcmp(name, metric_name(m)) != 0)
        return 0;
    const char *found = "";
    size_t found_len = 0;
    int others = 0, device = 0;
    /* pairs are "k=v" joined by ','; a value's own ',' and '=' are escaped */
    for (const char *p = labels; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        size_t klen = eq ? (size_t)(eq - p) : n;
        if (klen == 4 && memcmp(p, "node", 4) == 0 && eq) {
            found = eq + 1;
            found_len = n - klen - 1;
        } else {
            others++;
            device +=
                klen == 3 && memcmp(p, "gpu", 3) == 0 && key_in(metric_info(m)->labels, "gpu", 3);
        }
        p += n + (p[n] == ',');
    }
    if (others > 1 || others != device)
        return 0;
    if (node) {
        *node = found;
        *node_len = found_len;
    }
    return 1;
}

int node_heat_init(struct node_heat *h, enum metric_id m, int64_t from_ns, int64_t bucket_ns,
                   uint32_t ncols)
{
    memset(h, 0, sizeof(*h));
    h->metric = m;
    h->from_ns = from_ns;
    h->bucket_ns = bucket_ns > 0 ? bucket_ns : 1;
    h->ncols = ncols ? ncols : 1;
    return 0;
}

void node_heat_release(struct node_heat *h)
{
    for (uint32_t i = 0; i < h->nrows; i++) {
        free(h->keys[i]);
        free(h->names[i]);
    }
    free(h->keys);
    free(h->names);
    free(h->nseries);
    free(h->sum);
    free(h->count);
    memset(h, 0, sizeof(*h));
}

static int grow_rows(struct node_heat *h)
{
    uint32_t cap = h->cap ? h->cap * 2 : 16;
    size_t cells = (size_t)cap * h->ncols;
    char **keys = realloc(h->keys, cap * sizeof(*keys));
    if (keys)
        h->keys = keys;
    char **names = realloc(h->names, cap * sizeof(*names));
    if (names)
        h->names = names;
    uint32_t *ns = realloc(h->nseries, cap * sizeof(*ns));
    if (ns)
        h->nseries = ns;
    double *sum = realloc(h->sum, cells * sizeof(*sum));
    if (sum)
        h->sum = sum;
    int64_t *count = realloc(h->count, cells * sizeof(*count));
    if (count)
        h->count = count;
    if (!keys || !names || !ns || !sum || !count)
        return -ENOMEM;
    h->cap = cap;
    return 0;
}

int node_heat_row(struct node_heat *h, const char *key, size_t len, const char *unnamed)
{
    /* a node's series come together, or in the same order for each GPU:
     * look from the last row found first */
    for (uint32_t k = 0; k < h->nrows; k++) {
        uint32_t i = (h->nrows - 1 + k) % h->nrows;
        if (strlen(h->keys[i]) == len && memcmp(h->keys[i], key, len) == 0) {
            h->nseries[i]++;
            return (int)i;
        }
    }
    if (h->nrows == h->cap && grow_rows(h) < 0)
        return -ENOMEM;
    struct strbuf name;
    strbuf_init(&name);
    if (len)
        label_unescape(&name, key, len);
    else
        strbuf_adds(&name, unnamed ? unnamed : "");
    char *k = strndup(key, len);
    if (!k || strbuf_failed(&name)) {
        free(k);
        strbuf_release(&name);
        return -ENOMEM;
    }
    uint32_t i = h->nrows++;
    h->keys[i] = k;
    h->names[i] = strbuf_detach(&name);
    h->nseries[i] = 1;
    for (uint32_t c = 0; c < h->ncols; c++) {
        h->sum[(size_t)i * h->ncols + c] = 0;
        h->count[(size_t)i * h->ncols + c] = 0;
    }
    return (int)i;
}

struct row_ref {
    const char *name;
    uint32_t i;
};

static int by_name(const void *a, const void *b)
{
    const struct row_ref *x = a, *y = b;
    int c = strverscmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

void node_heat_sort(struct node_heat *h)
{
    if (h->nrows < 2)
        return;
    struct row_ref *order = malloc(h->nrows * sizeof(*order));
    double *sum = malloc((size_t)h->nrows * h->ncols * sizeof(*sum));
    int64_t *count = malloc((size_t)h->nrows * h->ncols * sizeof(*count));
    char **keys = malloc(h->nrows * sizeof(*keys)), **names = malloc(h->nrows * sizeof(*names));
    uint32_t *ns = malloc(h->nrows * sizeof(*ns));
    if (order && sum && count && keys && names && ns) {
        for (uint32_t i = 0; i < h->nrows; i++)
            order[i] = (struct row_ref){h->names[i], i};
        qsort(order, h->nrows, sizeof(*order), by_name);
        size_t row = h->ncols;
        for (uint32_t k = 0; k < h->nrows; k++) {
            uint32_t i = order[k].i;
            keys[k] = h->keys[i];
            names[k] = h->names[i];
            ns[k] = h->nseries[i];
            memcpy(sum + k * row, h->sum + i * row, row * sizeof(*sum));
            memcpy(count + k * row, h->count + i * row, row * sizeof(*count));
        }
        free(h->keys);
        free(h->names);
        free(h->nseries);
        free(h->sum);
        free(h->count);
        h->keys = keys;
        h->names = names;
        h->nseries = ns;
        h->sum = sum;
        h->count = count;
        h->cap = h->nrows;
        keys = names = NULL;
        ns = NULL;
        sum = NULL;
        count = NULL;
    } /* out of memory: left in the order first seen */
    free(order);
    free(sum);
    free(count);
    free(keys);
    free(names);
    free(ns);
}

int node_heat_find(const struct node_heat *h, const char *name)
{
    for (uint32_t i = 0; h && i < h->nrows; i++)
        if (strcmp(h->names[i], name) == 0)
            return (int)i;
    return -1;
}

double node_heat_row_mean(const struct node_heat *h, uint32_t row)
{
    double sum = 0;
    int64_t count = 0;
    for (uint32_t c = 0; c < h->ncols; c++) {
        sum += h->sum[(size_t)row * h->ncols + c];
        count += h->count[(size_t)row * h->ncols + c];
    }
    return count ? sum / (double)count : NAN;
}

int node_heat_add_series(struct node_heat *h, const char *name, const char *labels, double sum,
                         int64_t count, const char *unnamed)
{
    const char *node;
    size_t len;
    if (!node_series(name, labels, h->metric, &node, &len))
        return 0;
    int row = node_heat_row(h, node, len, unnamed);
    if (row < 0)
        return row;
    node_heat_add(h, (uint32_t)row, 0, sum, count);
    return 0;
}

static void node_mean_json(struct json_writer *jw, const char *key, const struct node_heat *h,
                           const char *node)
{
    int row = node ? node_heat_find(h, node) : -1;
    jw_kv_num(jw, key, row >= 0 ? node_heat_row_mean(h, (uint32_t)row) : NAN);
}

void job_nodes_json(struct json_writer *jw, const char *join_key, const struct run_list *nodes,
                    const struct node_heat *cpu, const struct node_heat *gpu)
{
    jw_kv_str_or_null(jw, "join_key", join_key);
    jw_key(jw, "nodes");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < nodes->n; i++) {
        const struct run_record *n = &nodes->items[i];
        jw_object_begin(jw);
        jw_kv_str_or_null(jw, "node", n->node);
        jw_kv_str(jw, "run", n->id);
        jw_kv_str_or_null(jw, "host", n->host);
        jw_kv_str(jw, "status", run_record_status(n));
        jw_kv_int_or_null(jw, "exit_code", n->exit_code);
        jw_kv_int(jw, "start_ns", n->start_ns);
        jw_kv_num(jw, "duration_s", run_record_duration_s(n));
        jw_kv_int(jw, "samples", n->samples);
        if (n->clock_rtt_ns > 0) {
            jw_kv_int(jw, "clock_offset_ns", n->clock_offset_ns);
            jw_kv_int(jw, "clock_rtt_ns", n->clock_rtt_ns);
            jw_kv_int(jw, "clock_shift_ns", n->clock_shift_ns);
        } else {
            jw_kv_null(jw, "clock_offset_ns");
            jw_kv_null(jw, "clock_rtt_ns");
            jw_kv_null(jw, "clock_shift_ns");
        }
        node_mean_json(jw, "cpu_util_pct", cpu, n->node);
        node_mean_json(jw, "gpu_util_pct", gpu, n->node);
        jw_end(jw);
    }
    jw_end(jw);
}

/* v rounded to 0, 1 or 2 decimals, trailing zeros left out ("57.3",
 * "57"): in integers, as printf's float formatting took a fifth of a
 * heatmap request of 256 nodes x 1000 buckets. */
static void add_fixed(struct json_writer *jw, double v, int decimals)
{
    static const long long scale[] = {1, 10, 100};
    if (decimals > 2 || !(fabs(v) < 1e15)) {
        jw_rawf(jw, "%.*f", decimals, v);
        return;
    }
    long long q = llround(v * (double)scale[decimals]);
    char buf[48];
    int n = snprintf(buf, sizeof(buf), "%s%lld", q < 0 ? "-" : "", llabs(q) / scale[decimals]);
    long long frac = llabs(q) % scale[decimals];
    if (frac) {
        int d = decimals;
        while (frac % 10 == 0) {
            frac /= 10;
            d--;
        }
        snprintf(buf + n, sizeof(buf) - (size_t)n, ".%0*lld", d, frac);
    } else if (q == 0) {
        snprintf(buf, sizeof(buf), "0"); /* no "-0" */
    }
    jw_raw(jw, buf);
}

static void add_mean(struct json_writer *jw, double sum, int64_t count, int decimals)
{
    double v = count > 0 ? sum / (double)count : NAN;
    if (!isfinite(v))
        jw_null(jw);
    else if (decimals < 0)
        jw_rawf(jw, "%.4g", v);
    else
        add_fixed(jw, v, decimals);
}

void node_heat_json(struct json_writer *jw, const struct node_heat *h, int decimals)
{
    jw_kv_str(jw, "metric", metric_name(h->metric));
    jw_kv_str(jw, "unit", metric_unit(h->metric));
    jw_kv_int(jw, "from_ns", h->from_ns);
    jw_kv_int(jw, "bucket_ns", h->bucket_ns);
    jw_kv_uint(jw, "buckets", h->ncols);
    jw_key(jw, "nodes");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < h->nrows; i++)
        jw_str(jw, h->names[i]);
    jw_end(jw);
    jw_key(jw, "series");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < h->nrows; i++)
        jw_int(jw, h->nseries[i]);
    jw_end(jw);
    jw_key(jw, "node_mean");
    jw_array_begin(jw);
    for (uint32_t i = 0; i < h->nrows; i++)
        add_mean(jw, node_heat_row_mean(h, i), 1, -1);
    jw_end(jw);
    jw_key(jw, "mean");
    jw_array_begin(jw); /* a node a line */
    jw_lines(jw, "\n", "\n");
    for (uint32_t i = 0; i < h->nrows; i++) {
        jw_array_begin(jw);
        for (uint32_t c = 0; c < h->ncols; c++)
            add_mean(jw, h->sum[(size_t)i * h->ncols + c], h->count[(size_t)i * h->ncols + c],
                     decimals);
        jw_end(jw);
    }
    jw_end(jw);
}
