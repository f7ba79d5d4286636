/*
 * Snapshots and expositions (serve/expo.h).
 *
 * A snapshot read from a store may have been garbled or written by hand, and
 * one bad sample would make the whole exposition unreadable to Prometheus.
 * So a snapshot is checked line by line before anything of it joins a set:
 * names and label keys must be identifiers, label values well escaped,
 * values numbers. A snapshot that fails is left out whole.
 */
#include "serve/expo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

/* ---- the set's arena -------------------------------------------------------------------- */

struct expo_chunk {
    struct expo_chunk *next;
    size_t used, cap;
    char data[];
};

static char *arena_strndup(struct expo_set *set, const char *s, size_t n)
{
    struct expo_chunk *c = set->arena;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->next = set->arena;
        c->used = 0;
        c->cap = cap;
        set->arena = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    p[n] = '\0';
    c->used += n + 1;
    return p;
}

void expo_set_init(struct expo_set *set)
{
    memset(set, 0, sizeof(*set));
}

void expo_set_release(struct expo_set *set)
{
    for (uint32_t i = 0; i < set->n; i++)
        free(set->fam[i].samples);
    free(set->fam);
    free(set->slots);
    while (set->arena) {
        struct expo_chunk *next = set->arena->next;
        free(set->arena);
        set->arena = next;
    }
    memset(set, 0, sizeof(*set));
}

/* ---- families by name ------------------------------------------------------------------- */

static uint32_t name_slot(const struct expo_set *set, const char *name, size_t len)
{
    uint32_t mask = set->nslots - 1, i = hash_fnv1a(2166136261u, name, len) & mask;
    while (set->slots[i]) {
        const char *have = set->fam[set->slots[i] - 1].name;
        if (strncmp(have, name, len) == 0 && have[len] == '\0')
            break;
        i = (i + 1) & mask;
    }
    return i;
}

static int grow_slots(struct expo_set *set)
{
    uint32_t n = set->nslots ? set->nslots * 2 : 64;
    uint32_t *old = set->slots, old_n = set->nslots;
    set->slots = calloc(n, sizeof(*set->slots));
    if (!set->slots) {
        set->slots = old;
        return -ENOMEM;
    }
    set->nslots = n;
    for (uint32_t i = 0; i < old_n; i++)
        if (old[i]) {
            const char *name = set->fam[old[i] - 1].name;
            set->slots[name_slot(set, name, strlen(name))] = old[i];
        }
    free(old);
    return 0;
}

const struct expo_family *expo_set_find(const struct expo_set *set, const char *name)
{
    if (!set->nslots)
        return NULL;
    uint32_t i = name_slot(set, name, strlen(name));
    return set->slots[i] ? &set->fam[set->slots[i] - 1] : NULL;
}

/* ---- reading a snapshot ----------------------------------------------------------------- */

static const char *const type_names[] = {"gauge", "counter", "summary", "info"};

/* One line's fields, split at tabs (at most max; the last keeps the rest). */
struct fields {
    const char *f[5];
    size_t len[5];
    int n;
};

static void split(const char *line, size_t len, int max, struct fields *out)
{
    out->n = 0;
    while (out->n < max - 1) {
        const char *tab = memchr(line, '\t', len);
        if (!tab)
            break;
        out->f[out->n] = line;
        out->len[out->n++] = (size_t)(tab - line);
        len -= (size_t)(tab - line) + 1;
        line = tab + 1;
    }
    out->f[out->n] = line;
    out->len[out->n++] = len;
}

static int is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident(const char *s, size_t n)
{
    if (!n || !is_ident_start(s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_ident_start(s[i]) && !(s[i] >= '0' && s[i] <= '9'))
            return 0;
    return 1;
}

/* `key="value",...` with only \\ \" \n escapes; "-" is none. */
static int labels_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = i;
        while (i < n && s[i] != '=')
            i++;
        if (i + 1 >= n || !is_ident(s + k, i - k) || s[i + 1] != '"')
            return 0;
        for (i += 2; i < n && s[i] != '"'; i++)
            if ((s[i] == '\\' && (i + 1 >= n || !strchr("\\\"n", s[++i]))) ||
                (unsigned char)s[i] < 0x20)
                return 0;
        if (i >= n)
            return 0; /* unterminated */
        i++;
        if (i < n && s[i++] != ',')
            return 0;
        if (i == n && s[n - 1] == ',')
            return 0;
    }
    return 1;
}

static int parse_value(const char *s, size_t n, double *out)
{
    char buf[64];
    if (!n || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "-Inf") == 0 || strcmp(buf, "NaN") == 0) {
        *out = buf[0] == 'N' ? NAN : buf[0] == '+' ? INFINITY : -INFINITY;
        return 0;
    }
    char *end;
    *out = strtod(buf, &end);
    return *end || !isfinite(*out) ? -1 : 0;
}

static int parse_type(const char *s, size_t n)
{
    for (int t = 0; t < 4; t++)
        if (strlen(type_names[t]) == n && memcmp(type_names[t], s, n) == 0)
            return t;
    return -1;
}

static int dash(const char *s, size_t n)
{
    return n == 1 && s[0] == '-';
}

static int suffix_ok(const char *s, size_t n)
{
    return dash(s, n) || (n > 1 && s[0] == '_' && is_ident(s, n));
}

/* A help line has no control byte but tab, and only OpenMetrics' escapes. */
static int help_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
            return 0;
        if (s[i] == '\\' && (i + 1 >= n || !strchr("\\n", s[++i])))
            return 0;
    }
    return 1;
}

/* Check one line (after the first); 'F' and 'S' only, a sample after a family. */
static int line_ok(const char *line, size_t len, int *have_family)
{
    struct fields f;
    if (len >= 2 && line[0] == 'F' && line[1] == '\t') {
        split(line + 2, len - 2, 4, &f);
        *have_family = 1;
        return f.n == 4 && is_ident(f.f[0], f.len[0]) && parse_type(f.f[1], f.len[1]) >= 0 &&
               (dash(f.f[2], f.len[2]) || is_ident(f.f[2], f.len[2])) && help_ok(f.f[3], f.len[3]);
    }
    if (len >= 2 && line[0] == 'S' && line[1] == '\t' && *have_family) {
        const char *rest = line + 2;
        size_t n = len - 2;
        const char *t1 = memchr(rest, '\t', n), *t2 = rest + n;
        while (t2 > rest && t2[-1] != '\t')
            t2--;
        double v;
        return t1 && t2 - 1 > t1 && suffix_ok(rest, (size_t)(t1 - rest)) &&
               (dash(t1 + 1, (size_t)(t2 - 1 - t1 - 1)) ||
                labels_ok(t1 + 1, (size_t)(t2 - 1 - t1 - 1))) &&
               parse_value(t2, (size_t)(rest + n - t2), &v) == 0;
    }
    return 0;
}

/* The first line: the magic, a space, the time. */
static int parse_head(const char *line, size_t len, int64_t *ts_ns)
{
    size_t m = strlen(EXPO_SNAPSHOT_MAGIC);
    if (len <= m + 1 || memcmp(line, EXPO_SNAPSHOT_MAGIC, m) != 0 || line[m] != ' ')
        return -1;
    int64_t ts = 0;
    for (size_t i = m + 1; i < len; i++) {
        if (line[i] < '0' || line[i] > '9' || ts > (INT64_MAX - 9) / 10)
            return -1;
        ts = ts * 10 + (line[i] - '0');
    }
    *ts_ns = ts;
    return 0;
}

/* Visit each line after the first; fn returns non-zero to stop. */
typedef int line_fn(const char *line, size_t len, void *arg);

static int each_line(const char *text, size_t len, line_fn *fn, void *arg)
{
    const char *nl = memchr(text, '\n', len);
    const char *p = nl ? nl + 1 : text + len, *end = text + len;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
        int rc = fn(p, n, arg);
        if (rc)
            return rc;
        p += n + 1;
    }
    return 0;
}

static int check_line(const char *line, size_t len, void *arg)
{
    return line_ok(line, len, arg) ? 0 : -EINVAL;
}

static struct expo_family *family_get(struct expo_set *set, const struct fields *f)
{
    if ((set->n + 1) * 2 > set->nslots && grow_slots(set) < 0)
        return NULL;
    uint32_t slot = name_slot(set, f->f[0], f->len[0]);
    if (set->slots[slot])
        return &set->fam[set->slots[slot] - 1];
    if (set->n == set->cap) {
        uint32_t cap = set->cap ? set->cap * 2 : 64;
        struct expo_family *p = realloc(set->fam, cap * sizeof(*p));
        if (!p)
            return NULL;
        set->fam = p;
        set->cap = cap;
    }
    struct expo_family *fam = &set->fam[set->n];
    memset(fam, 0, sizeof(*fam));
    fam->name = arena_strndup(set, f->f[0], f->len[0]);
    fam->type = (enum expo_type)parse_type(f->f[1], f->len[1]);
    fam->unit = dash(f->f[2], f->len[2]) ? "" : arena_strndup(set, f->f[2], f->len[2]);
    fam->help = arena_strndup(set, f->f[3], f->len[3]);
    if (!fam->name || !fam->unit || !fam->help)
        return NULL;
    set->slots[slot] = ++set->n;
    return fam;
}

static int sample_add(struct expo_set *set, struct expo_family *fam, const char *line, size_t len)
{
    const char *t1 = memchr(line, '\t', len), *t2 = line + len;
    while (t2[-1] != '\t')
        t2--;
    size_t sn = (size_t)(t1 - line), ln = (size_t)(t2 - 1 - t1 - 1);
    if (fam->n == fam->cap) {
        uint32_t cap = fam->cap ? fam->cap * 2 : 8;
        struct expo_sample *p = realloc(fam->samples, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        fam->samples = p;
        fam->cap = cap;
    }
    struct expo_sample *s = &fam->samples[fam->n];
    s->suffix = dash(line, sn) ? "" : arena_strndup(set, line, sn);
    s->labels = dash(t1 + 1, ln) ? "" : arena_strndup(set, t1 + 1, ln);
    if (!s->suffix || !s->labels || parse_value(t2, (size_t)(line + len - t2), &s->value) < 0)
        return -ENOMEM;
    fam->n++;
    set->samples++;
    return 0;
}

struct adding {
    struct expo_set *set;
    struct expo_family *fam;
};

static int add_line(const char *line, size_t len, void *arg)
{
    struct adding *a = arg;
    if (line[0] == 'F') {
        struct fields f;
        split(line + 2, len - 2, 4, &f);
        a->fam = family_get(a->set, &f);
        return a->fam ? 0 : -ENOMEM;
    }
    return sample_add(a->set, a->fam, line + 2, len - 2);
}

int expo_snapshot_time(const char *text, size_t len, int64_t *ts_ns)
{
    const char *nl = memchr(text, '\n', len);
    return parse_head(text, nl ? (size_t)(nl - text) : len, ts_ns) < 0 ? -EINVAL : 0;
}

int expo_set_add_snapshot(struct expo_set *set, const char *text, size_t len, int64_t *ts_ns)
{
    int64_t ts;
    if (expo_snapshot_time(text, len, &ts) < 0)
        return -EINVAL;
    int have_family = 0;
    int rc = each_line(text, len, check_line, &have_family);
    if (rc < 0)
        return rc;
    if (ts_ns)
        *ts_ns = ts;
    struct adding a = {set, NULL};
    return each_line(text, len, add_line, &a);
}

/* ---- writing an exposition -------------------------------------------------------------- */

static void add_value(struct strbuf *o, double v)
{
    if (isnan(v)) {
        strbuf_adds(o, "NaN");
        return;
    }
    if (isinf(v)) {
        strbuf_adds(o, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char buf[40];
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v) /* the shortest that reads back the same */
        snprintf(buf, sizeof(buf), "%.17g", v);
    strbuf_adds(o, buf);
}

/* The name a 0.0.4 TYPE line gives: a counter's and an info's are their
 * samples'. */
static const char *text_type_suffix(enum expo_type t)
{
    return t == EXPO_COUNTER ? "_total" : t == EXPO_INFO ? "_info" : "";
}

static void write_meta(const struct expo_family *fam, int openmetrics, struct strbuf *o)
{
    if (openmetrics) {
        strbuf_addf(o, "# TYPE %s %s\n", fam->name, type_names[fam->type]);
        if (*fam->unit)
            strbuf_addf(o, "# UNIT %s %s\n", fam->name, fam->unit);
        strbuf_addf(o, "# HELP %s %s\n", fam->name, fam->help);
        return;
    }
    const char *sfx = text_type_suffix(fam->type);
    strbuf_addf(o, "# HELP %s%s %s\n", fam->name, sfx, fam->help);
    strbuf_addf(o, "# TYPE %s%s %s\n", fam->name, sfx,
                fam->type == EXPO_INFO ? "gauge" : type_names[fam->type]);
}

void expo_set_write(const struct expo_set *set, int openmetrics, struct strbuf *o)
{
    for (uint32_t i = 0; i < set->n; i++) {
        const struct expo_family *fam = &set->fam[i];
        if (!fam->n)
            continue;
        write_meta(fam, openmetrics, o);
        for (uint32_t k = 0; k < fam->n; k++) {
            const struct expo_sample *s = &fam->samples[k];
            strbuf_adds(o, fam->name);
            strbuf_adds(o, s->suffix);
            if (*s->labels)
                strbuf_addf(o, "{%s}", s->labels);
            strbuf_addch(o, ' ');
            add_value(o, s->value);
            strbuf_addch(o, '\n');
        }
    }
    if (openmetrics)
        strbuf_adds(o, "# EOF\n");
}

int expo_accepts_openmetrics(const char *accept)
{
    return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

const char *expo_label(const char *labels, const char *key, char *buf, size_t cap)
{
    size_t klen = strlen(key);
    const char *p = labels;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq || eq[1] != '"')
            return NULL;
        int match = (size_t)(eq - p) == klen && memcmp(p, key, klen) == 0;
        size_t n = 0;
        for (p = eq + 2; *p && *p != '"'; p++) {
            char c = *p;
            if (c == '\\' && p[1]) {
                c = *++p == 'n' ? '\n' : *p;
            }
            if (match && n + 1 < cap)
                buf[n++] = c;
        }
        if (match) {
            if (cap)
                buf[n] = '\0';
            return buf;
        }
        if (*p == '"')
            p++;
        if (*p == ',')
            p++;
    }
    return NULL;
}

/* ---- writing a snapshot ----------------------------------------------------------------- */

void expo_snap_begin(struct strbuf *o, int64_t ts_ns)
{
    strbuf_addf(o, "%s %lld\n", EXPO_SNAPSHOT_MAGIC, (long long)ts_ns);
}

void expo_snap_family(struct strbuf *o, const char *name, enum expo_type type, const char *unit,
                      const char *help)
{
    strbuf_addf(o, "F\t%s\t%s\t%s\t", name, type_names[type], unit && *unit ? unit : "-");
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            strbuf_adds(o, "\\\\");
        else if (*p == '\n')
            strbuf_adds(o, "\\n");
        else if ((unsigned char)*p >= 0x20 || *p == '\t')
            strbuf_addch(o, *p);
    }
    strbuf_addch(o, '\n');
}

void expo_snap_sample(struct strbuf *o, const char *suffix, const char *labels, double value)
{
    strbuf_addf(o, "S\t%s\t%s\t", suffix && *suffix ? suffix : "-", *labels ? labels : "-");
    add_value(o, value);
    strbuf_addch(o, '\n');
}

void expo_label_add(struct strbuf *labels, const char *key, const char *value)
{
    if (labels->len)
        strbuf_addch(labels, ',');
    strbuf_addf(labels, "%s=\"", key);
    /* Prometheus refuses a scrape with a value that is not UTF-8: a byte
     * that starts no well-formed sequence becomes U+FFFD, and so does a
     * control byte, which neither format can escape */
    for (const char *p = value; *p;) {
        size_t n = utf8_seq_len((const unsigned char *)p);
        if (*p == '\\' || *p == '"') {
            strbuf_addch(labels, '\\');
            strbuf_addch(labels, *p);
        } else if (*p == '\n') {
            strbuf_adds(labels, "\\n");
        } else if (n && (unsigned char)*p >= 0x20) {
            strbuf_add(labels, p, n);
        } else {
            strbuf_adds(labels, "\xef\xbf\xbd");
        }
        p += n ? n : 1;
    }
    strbuf_addch(labels, '"');
}
