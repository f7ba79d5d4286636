/*
 * Per-client request rate limit: a token bucket per client address (rate
 * tokens a second, at most burst saved up), in a fixed table so that a flood
 * of addresses costs no memory; a new address takes the slot of the one
 * idle longest among the few it hashes to. Thread-safe.
 */
#ifndef STROBE_SERVE_RATELIMIT_H
#define STROBE_SERVE_RATELIMIT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define RATELIMIT_SLOTS 1024
#define RATELIMIT_WAYS  8 /* slots a key may live in */

struct ratelimit_slot {
    uint8_t key[17]; /* address bytes and their length; len 0: free */
    double tokens;
    int64_t last_ns;
};

struct ratelimit {
    pthread_mutex_t lock;
    double rate_per_s;
    double burst;
    struct ratelimit_slot slot[RATELIMIT_SLOTS];
};

/* rate_per_s <= 0 turns the limit off. */
void ratelimit_init(struct ratelimit *r, double rate_per_s, double burst);
void ratelimit_release(struct ratelimit *r);

/* 1 when the client with key[0..len) (len <= 16) may make a request at
 * now_ns (which takes one token), 0 when it is over its rate. */
int ratelimit_allow(struct ratelimit *r, const void *key, size_t len, int64_t now_ns);

#endif
