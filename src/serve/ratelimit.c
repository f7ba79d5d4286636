#include <string.h>

#include "common/hash.h"
#include "serve/ratelimit.h"

void ratelimit_init(struct ratelimit *r, double rate_per_s, double burst)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    r->rate_per_s = rate_per_s;
    r->burst = burst < 1 ? 1 : burst;
}

void ratelimit_release(struct ratelimit *r)
{
    pthread_mutex_destroy(&r->lock);
}

/* The slot of key, or a fresh one in place of the longest idle. */
static struct ratelimit_slot *slot_for(struct ratelimit *r, const uint8_t *key, size_t len)
{
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, key, len);
    struct ratelimit_slot *oldest = NULL;
    for (uint32_t i = 0; i < RATELIMIT_WAYS; i++) {
        struct ratelimit_slot *s = &r->slot[(h + i) % RATELIMIT_SLOTS];
        if (s->key[16] == len && memcmp(s->key, key, len) == 0)
            return s;
        if (!oldest || s->last_ns < oldest->last_ns)
            oldest = s;
    }
    memset(oldest, 0, sizeof(*oldest));
    memcpy(oldest->key, key, len);
    oldest->key[16] = (uint8_t)len;
    oldest->tokens = r->burst;
    return oldest;
}

int ratelimit_allow(struct ratelimit *r, const void *key, size_t len, int64_t now_ns)
{
    if (r->rate_per_s <= 0)
        return 1;
    if (len > 16)
        len = 16;
    pthread_mutex_lock(&r->lock);
    struct ratelimit_slot *s = slot_for(r, key, len);
    if (s->last_ns && now_ns > s->last_ns) {
        s->tokens += (double)(now_ns - s->last_ns) / 1e9 * r->rate_per_s;
        if (s->tokens > r->burst)
            s->tokens = r->burst;
    }
    s->last_ns = now_ns;
    int ok = s->tokens >= 1.0;
    if (ok)
        s->tokens -= 1.0;
    pthread_mutex_unlock(&r->lock);
    return ok;
}
