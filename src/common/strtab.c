#include "common/strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/hash.h"

static uint32_t strtab_hash(const void *ctx, uint32_t i)
{
    const char *s = ((const struct strtab *)ctx)->s[i];
    return hash_fnv1a(HASH_FNV1A_INIT, s, strlen(s));
}

int strtab_intern(struct strtab *t, const char *s, size_t len, uint32_t *index)
{
    if (hash_slots_reserve(&t->slots, &t->nslots, t->n, strtab_hash, t) < 0)
        return -ENOMEM;
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, s, len) & (t->nslots - 1);
    for (; t->slots[h]; h = (h + 1) & (t->nslots - 1)) {
        const char *c = t->s[t->slots[h] - 1];
        if (strncmp(c, s, len) == 0 && c[len] == '\0') {
            *index = t->slots[h] - 1;
            return 0;
        }
    }
    if (t->max && t->n >= t->max)
        return -ENOSPC;
    if (array_grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s), 64) < 0)
        return -ENOMEM;
    char *copy = strndup(s, len);
    if (!copy)
        return -ENOMEM;
    t->s[t->n] = copy;
    t->slots[h] = t->n + 1;
    *index = t->n++;
    return 1;
}

void strtab_release(struct strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slots);
    uint32_t max = t->max;
    memset(t, 0, sizeof(*t));
    t->max = max;
}
