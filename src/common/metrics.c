#include "common/metrics.h"

#include <stdio.h>
#include <string.h>

static const struct metric_info catalog[METRIC_COUNT] = {
#define METRIC(id, name, unit, kind, labels, source, help)                                         \
    [METRIC_##id] = {name, unit, METRIC_KIND_##kind, labels, source, help},
#include "common/metrics.def"
#undef METRIC
};

const struct metric_info *metric_info(enum metric_id id)
{
    return &catalog[id];
}

const char *metric_name(enum metric_id id)
{
    return catalog[id].name;
}

const char *metric_unit(enum metric_id id)
{
    return catalog[id].unit;
}

const char *metric_kind_name(enum metric_kind kind)
{
    static const char *const names[] = {
        [METRIC_KIND_GAUGE] = "gauge",
        [METRIC_KIND_RATE] = "rate",
        [METRIC_KIND_SHARE] = "share",
        [METRIC_KIND_COUNTER] = "counter",
    };
    return names[kind];
}

int metric_is_family(enum metric_id id)
{
    size_t n = strlen(catalog[id].name);
    return n > 0 && catalog[id].name[n - 1] == '*';
}

size_t metric_family_prefix_len(enum metric_id id)
{
    return strlen(catalog[id].name) - 1;
}

int metric_in_family(const char *name, enum metric_id id)
{
    return strncmp(name, catalog[id].name, metric_family_prefix_len(id)) == 0;
}

int metric_lookup(const char *name)
{
    int family = -1;
    for (int i = 0; i < METRIC_COUNT; i++) {
        if (metric_is_family((enum metric_id)i)) {
            if (family < 0 && metric_in_family(name, (enum metric_id)i))
                family = i;
        } else if (strcmp(catalog[i].name, name) == 0) {
            return i;
        }
    }
    return family;
}

/* ---- OpenMetrics names ------------------------------------------------------------------ */

/* A catalog unit as a base-unit suffix (docs/openmetrics.md's table): the
 * name's own unit word is cut off first, then the suffix appended. */
struct prom_unit {
    const char *unit;      /* the catalog's */
    const char *cut[2];    /* the name's unit words, longest first */
    const char *suffix;    /* appended to the gauge's name */
    const char *prom_unit; /* # UNIT, "" none */
    double scale;
    const char *total;      /* a rate's counter: the suffix before _total; NULL none */
    const char *total_unit; /* its # UNIT */
};

static const struct prom_unit prom_units[] = {
    {"pct", {"_pct", NULL}, "_ratio", "ratio", 0.01, NULL, NULL},
    {"bytes", {"_bytes", NULL}, "_bytes", "bytes", 1, NULL, NULL},
    {"bytes/s", {"_bytes_per_s", "_per_s"}, "_bytes_per_second", "", 1, "_bytes", "bytes"},
    {"pages/s", {"_per_s", NULL}, "_pages_per_second", "", 1, "_pages", ""},
    {"1/s", {"_per_s", NULL}, "_per_second", "", 1, "", ""},
    {"W", {"_w", NULL}, "_watts", "watts", 1, NULL, NULL},
    {"C", {"_c", NULL}, "_celsius", "celsius", 1, NULL, NULL},
    {"MHz", {"_mhz", NULL}, "_hertz", "hertz", 1e6, NULL, NULL},
    {"J", {"_j", NULL}, "_joules", "joules", 1, NULL, NULL},
};

static const struct prom_unit *prom_unit_of(const char *unit)
{
    for (size_t i = 0; i < sizeof(prom_units) / sizeof(prom_units[0]); i++)
        if (strcmp(prom_units[i].unit, unit) == 0)
            return &prom_units[i];
    return NULL;
}

/* "strobe_" and name with '.' as '_' (the recorder's own "strobe." as
 * "recorder_"), less a trailing cut word, into out. */
static void prom_base(const char *name, const struct prom_unit *u, char *out, size_t cap)
{
    const char *rest = strncmp(name, "strobe.", 7) == 0 ? name + 7 : name;
    size_t n = (size_t)snprintf(out, cap, "strobe_%s%s", rest != name ? "recorder_" : "", rest);
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        if (out[i] == '.')
            out[i] = '_';
    for (int c = 0; u && c < 2 && u->cut[c]; c++) {
        size_t k = strlen(u->cut[c]);
        if (n > k && strcmp(out + n - k, u->cut[c]) == 0) {
            out[n - k] = '\0';
            return;
        }
    }
}

void metric_prom(enum metric_id id, struct metric_prom *out)
{
    const struct metric_info *m = &catalog[id];
    const struct prom_unit *u = prom_unit_of(m->unit);
    memset(out, 0, sizeof(*out));
    out->scale = u ? u->scale : 1;
    out->unit = u ? u->prom_unit : "";
    out->counter = m->kind == METRIC_KIND_COUNTER;
    out->total_unit = "";
    if (metric_is_family(id)) {
        snprintf(out->name, sizeof(out->name), "strobe_%.*s", (int)metric_family_prefix_len(id) - 1,
                 m->name);
        return;
    }
    char base[80];
    if (id == METRIC_PROC_COUNT) /* Prometheus keeps _count for summaries and histograms */
        snprintf(base, sizeof(base), "strobe_proc_processes");
    else
        prom_base(m->name, u, base, sizeof(base));
    size_t bl = strlen(base);
    if (!u && bl > 6 && strcmp(base + bl - 6, "_per_s") == 0) /* app.samples_per_s */
        snprintf(base + bl - 6, sizeof(base) - (bl - 6), "_per_second");
    snprintf(out->name, sizeof(out->name), "%s%s", base, u ? u->suffix : "");
    if (u && u->total && m->kind == METRIC_KIND_RATE) {
        snprintf(out->total_name, sizeof(out->total_name), "%s%s", base, u->total);
        out->total_unit = u->total_unit;
        out->total_scale = 1;
    } else if (id == METRIC_PROC_CPU || id == METRIC_STROBE_CPU) {
        /* percent of one core: its integral is CPU seconds */
        snprintf(out->total_name, sizeof(out->total_name), "%s_seconds", base);
        out->total_unit = "seconds";
        out->total_scale = 0.01;
    }
}
