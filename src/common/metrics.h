/*
 * The catalog of metrics (metrics.def): every metric strobe records or
 * imports, with its unit, kind, label keys, source and help. A collector,
 * rule or reader names a metric by its METRIC_ id and takes the name and
 * unit from here, so a metric is spelled once and a rename cannot silently
 * leave a reader behind.
 *
 * Families ("app.*", "sagemaker.*") are rows too: their members are named
 * at run time after the prefix, and metric_lookup() finds the family for a
 * member's name.
 *
 * Every pointer returned here is to static storage.
 */
#ifndef STROBE_COMMON_METRICS_H
#define STROBE_COMMON_METRICS_H

#include <stddef.h>

enum metric_id {
#define METRIC(id, name, unit, kind, labels, source, help) METRIC_##id,
#include "common/metrics.def"
#undef METRIC
    METRIC_COUNT
};

enum metric_kind {
    METRIC_KIND_GAUGE,   /* a level, read as is */
    METRIC_KIND_RATE,    /* a counter's change per second */
    METRIC_KIND_SHARE,   /* a share of time, percent, from time counters */
    METRIC_KIND_COUNTER, /* a running total */
};

struct metric_info {
    const char *name; /* "proc.cpu"; a family ends in ".*" */
    const char *unit; /* as stored with the series: "pct", "bytes/s", "" */
    enum metric_kind kind;
    const char *labels; /* label keys joined by ',': "gpu,pid"; "" none */
    const char *source; /* "/proc/stat", "NVML", ... */
    const char *help;   /* one line */
};

/* The row of id (id < METRIC_COUNT). */
const struct metric_info *metric_info(enum metric_id id);
const char *metric_name(enum metric_id id);
const char *metric_unit(enum metric_id id);
/* "gauge", "rate", "share" or "counter". */
const char *metric_kind_name(enum metric_kind kind);

/* The id of name, or -1 when the catalog has none. A family member
 * ("app.loss") gives its family's id unless it has a row of its own. */
int metric_lookup(const char *name);

/* Whether id is a family ("app.*"); its members' names start with the
 * name less the '*', which is metric_family_prefix_len(id) bytes long. */
int metric_is_family(enum metric_id id);
size_t metric_family_prefix_len(enum metric_id id);
/* Whether name is a member of family id ("app.loss" of METRIC_APP). */
int metric_in_family(const char *name, enum metric_id id);

/* How a metric appears in OpenMetrics (serve/expo.h, docs/openmetrics.md):
 * "strobe_" and the name with '.' as '_', its unit word moved to a base-unit
 * suffix, the value scaled to that unit. */
struct metric_prom {
    char name[96];       /* the gauge (or counter) family: "strobe_cpu_util_ratio" */
    const char *unit;    /* its OpenMetrics unit: "ratio", "bytes", ..., "" none */
    double scale;        /* stored value times scale is the exposed value */
    int counter;         /* a running total: samples end in _total */
    char total_name[96]; /* a rate's integral as a counter family, "" when none */
    const char *total_unit;
    double total_scale; /* the integral of value times dt (seconds) times this */
};

/* The OpenMetrics form of id; a family ("app.*") gives "strobe_app", whose
 * members are told apart by a name label. */
void metric_prom(enum metric_id id, struct metric_prom *out);

#endif
