#include "common/strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/hash.h"

static int strtab_rehash(struct strtab *t)
{
    uint32_t nslots = t->nslots ? t->nslots * 2 : 256;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, t->s[i], strlen(t->s[i])) & (nslots - 1);
        while (slots[h])
            h = (h + 1) & (nslots - 1);
        slots[h] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int strtab_intern(struct strtab *t, const char *s, size_t len, uint32_t *index)
{
    if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t) < 0)
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
