#include "common/metrics.h"

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
