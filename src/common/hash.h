/*
 * FNV-1a, 32 bits: the hash of strobe's open-addressing tables (names,
 * series keys, threads). Not for anything an attacker could aim at a table
 * to make it slow: the tables it indexes are bounded, and the keys come from
 * one run's own files.
 */
#ifndef STROBE_COMMON_HASH_H
#define STROBE_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HASH_FNV1A_INIT 2166136261u /* the offset basis: h for the first call */

/* h extended by data[0..n). Chain calls to hash a key of several fields. */
static inline uint32_t hash_fnv1a(uint32_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* h extended by s and its NUL, so that chained strings ("ab","c" and
 * "a","bc") hash apart. */
static inline uint32_t hash_fnv1a_str(uint32_t h, const char *s)
{
    return hash_fnv1a(h, s, strlen(s) + 1);
}

/*
 * The index of an open-addressing table of items 0..count-1: *nslots slots
 * (a power of two), each 0 (empty) or i + 1 for item i, probed linearly.
 * Make room for one more item at most half full: when count + 1 would pass
 * half, the index doubles (from 256) and is rebuilt from hash(ctx, i) of
 * each item. 0, or -ENOMEM with the index unchanged.
 */
typedef uint32_t hash_item_fn(const void *ctx, uint32_t i);
int hash_slots_reserve(uint32_t **slots, uint32_t *nslots, uint32_t count, hash_item_fn *hash,
                       const void *ctx);

#endif
