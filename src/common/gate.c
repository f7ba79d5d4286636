#include "common/gate.h"

#include <errno.h>
#include <time.h>

#include "common/clock.h"

int stop_gate_init(struct stop_gate *g)
{
    atomic_init(&g->stop, 0);
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc)
        return -rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (!rc)
        rc = pthread_cond_init(&g->wake, &a);
    pthread_condattr_destroy(&a);
    if (rc)
        return -rc;
    pthread_mutex_init(&g->lock, NULL);
    return 0;
}

void stop_gate_release(struct stop_gate *g)
{
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
}

int stop_gate_sleep_until(struct stop_gate *g, int64_t due_mono_ns)
{
    struct timespec t = {(time_t)(due_mono_ns / NS_PER_S), (long)(due_mono_ns % NS_PER_S)};
    pthread_mutex_lock(&g->lock);
    /* the flag is read under the lock that stop_gate_stop signals under: a
     * stop between the read and the wait still wakes the wait */
    int rc = 0; /* a wake-up without a stop (spurious) waits on; a timeout or error ends */
    while (!atomic_load(&g->stop) && rc == 0)
        rc = pthread_cond_timedwait(&g->wake, &g->lock, &t);
    pthread_mutex_unlock(&g->lock);
    return atomic_load(&g->stop);
}

void stop_gate_stop(struct stop_gate *g)
{
    pthread_mutex_lock(&g->lock);
    atomic_store(&g->stop, 1);
    pthread_cond_broadcast(&g->wake);
    pthread_mutex_unlock(&g->lock);
}

int stop_gate_stopped(struct stop_gate *g)
{
    return atomic_load(&g->stop);
}

int stop_gate_stop_and_join(struct stop_gate *g, pthread_t thread, int64_t within_ns)
{
    stop_gate_stop(g);
    /* pthread_timedjoin_np waits to an absolute CLOCK_REALTIME time */
    int64_t until = clock_realtime_ns() + within_ns;
    struct timespec t = {(time_t)(until / NS_PER_S), (long)(until % NS_PER_S)};
    int rc;
    while ((rc = pthread_timedjoin_np(thread, NULL, &t)) == EINTR)
        ;
    if (rc == 0)
        return 0;
    pthread_detach(thread);
    return -ETIMEDOUT;
}
