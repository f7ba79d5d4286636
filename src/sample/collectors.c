#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strlist.h"
#include "sample/collector.h"

extern const struct collector_ops collector_cpu, collector_mem, collector_psi, collector_disk,
    collector_net, collector_cgroup, collector_proc;

/* Order matters only for reading: host first, then the job's tree. */
const struct collector_ops *const collector_table[] = {
    &collector_cpu, &collector_mem,    &collector_psi,  &collector_disk,
    &collector_net, &collector_cgroup, &collector_proc, NULL,
};

static int is_collector(const char *name, size_t len)
{
    for (size_t i = 0; collector_table[i]; i++)
        if (strlen(collector_table[i]->name) == len &&
            memcmp(collector_table[i]->name, name, len) == 0)
            return 1;
    return 0;
}

static int check_name(const char *name, size_t len, void *why)
{
    if (is_collector(name, len))
        return 0;
    strbuf_addf(why, "'%.*s' is not a collector (known:", (int)len, name);
    for (size_t i = 0; collector_table[i]; i++)
        strbuf_addf(why, "%s %s", i ? "," : "", collector_table[i]->name);
    strbuf_addch(why, ')');
    return -EINVAL;
}

/* A misspelt name would otherwise leave that collector silently off; so
 * would an empty one ("" or "cpu,"), which strlist_split hands over too. */
int sampler_check_names(const char *only, struct strbuf *why)
{
    return strlist_split(only, check_name, why);
}

int sampler_init(struct sampler *s, const struct sample_env *env, struct series_table *series,
                 const char *only)
{
    size_t n = 0;
    while (collector_table[n])
        n++;
    s->slots = calloc(n, sizeof(*s->slots));
    if (!s->slots)
        return -ENOMEM;
    s->count = n;
    for (size_t i = 0; i < n; i++) {
        struct sampler_slot *slot = &s->slots[i];
        slot->ops = collector_table[i];
        if (only && !strlist_has(only, slot->ops->name, strlen(slot->ops->name)))
            continue;
        slot->state = calloc(1, slot->ops->state_size);
        if (!slot->state)
            return -ENOMEM;
        int rc = slot->ops->init(slot->state, env, series);
        if (rc == 0) {
            slot->enabled = 1;
        } else {
            log_note("collector '%s' is off: %s", slot->ops->name, err_str(rc));
            slot->ops->fini(slot->state);
        }
    }
    return 0;
}

void sampler_sample(struct sampler *s, struct sample_ctx *ctx)
{
    for (size_t i = 0; i < s->count; i++) {
        struct sampler_slot *slot = &s->slots[i];
        if (!slot->enabled)
            continue;
        /* each its own: the frame may be preempted between two collectors */
        ctx->read_ns = ctx->measure_reads ? clock_monotonic_ns() : ctx->mono_ns;
        if (slot->ops->sample(slot->state, ctx) < 0)
            slot->errors++;
    }
}

void sampler_release(struct sampler *s)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->slots[i].enabled)
            s->slots[i].ops->fini(s->slots[i].state);
        free(s->slots[i].state);
    }
    free(s->slots);
    s->slots = NULL;
    s->count = 0;
}
