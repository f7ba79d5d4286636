/*
 * A stop flag that wakes a sleeping thread: a sampler thread that sleeps to
 * absolute CLOCK_MONOTONIC deadlines (the GPU and DCGM threads, up to a
 * minute apart at --gpu-interval 60s) is stopped at once instead of at its
 * next deadline, so the end of a run never waits for one.
 */
#ifndef STROBE_COMMON_GATE_H
#define STROBE_COMMON_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/clock.h"

struct stop_gate {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    atomic_int stop;     /* set once by stop_gate_stop */
};

/* 0, or negative (-errno) when the condition variable cannot be made. */
int stop_gate_init(struct stop_gate *g);
void stop_gate_release(struct stop_gate *g);
/* Sleep until due_mono_ns (CLOCK_MONOTONIC ns). 1 when the gate is stopped
 * (before or during the sleep), else 0 at the deadline. */
int stop_gate_sleep_until(struct stop_gate *g, int64_t due_mono_ns);
/* Stop the gate and wake its sleeper; any thread, any number of times. */
void stop_gate_stop(struct stop_gate *g);
int stop_gate_stopped(struct stop_gate *g);
/* How long the end of a run waits for a sampler thread to end its round
 * (the GPU and DCGM threads). */
#define STOP_GATE_JOIN_NS (5 * NS_PER_S)
/* Stop the gate and join its thread, waiting at most within_ns. 0 when the
 * thread ended; -ETIMEDOUT when it did not (stuck in a driver's call that
 * never returns): it is then detached, and the caller must leave everything
 * it may still touch (the gate included) allocated until the process ends. */
int stop_gate_stop_and_join(struct stop_gate *g, pthread_t thread, int64_t within_ns);

#endif
