/* The rebuilt index of an open-addressing table (hash.h). */
#include <errno.h>
#include <stdlib.h>

#include "common/hash.h"

int hash_slots_reserve(uint32_t **slots, uint32_t *nslots, uint32_t count, hash_item_fn *hash,
                       const void *ctx)
{
    if ((count + 1) * 2 <= *nslots)
        return 0;
    uint32_t n = *nslots ? *nslots * 2 : 256;
    uint32_t *fresh = calloc(n, sizeof(*fresh));
    if (!fresh)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t h = hash(ctx, i) & (n - 1);
        while (fresh[h])
            h = (h + 1) & (n - 1);
        fresh[h] = i + 1;
    }
    free(*slots);
    *slots = fresh;
    *nslots = n;
    return 0;
}
