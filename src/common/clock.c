#include "common/array.h"
#include "common/clock.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* $STROBE_TEST_CLOCK_SKEW_NS, read once: a test's skew of this process's
 * wall clock, so that two recorders on one machine act as nodes whose
 * clocks disagree (cluster mode). 0 without it. */
static int64_t realtime_skew(void)
{
    static _Atomic int64_t skew = INT64_MIN;
    int64_t v = atomic_load_explicit(&skew, memory_order_relaxed);
    if (v == INT64_MIN) {
        const char *e = getenv("STROBE_TEST_CLOCK_SKEW_NS");
        v = e ? strtoll(e, NULL, 10) : 0;
        atomic_store_explicit(&skew, v, memory_order_relaxed);
    }
    return v;
}

int64_t clock_realtime_ns(void)
{
    return read_clock(CLOCK_REALTIME) + realtime_skew();
}

int64_t clock_monotonic_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

int64_t clock_thread_cpu_ns(void)
{
    return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

int64_t clock_process_cpu_ns(void)
{
    return read_clock(CLOCK_PROCESS_CPUTIME_ID);
}

static const struct {
    const char *suffix;
    double ns;
} duration_units[] = {
    {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"", 1e6},
};

const char *decimal_parse(const char *text, double *out)
{
    const char *p = text;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == text)
        return NULL;
    if (*p == '.') {
        const char *frac = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == frac)
            return NULL;
    }
    /* only digits and one point got here, so strtod reads no hex, exponent,
     * sign, space or inf; a digit string too long for a double overflows */
    errno = 0;
    double v = strtod(text, NULL);
    if (errno || !isfinite(v))
        return NULL;
    *out = v;
    return p;
}

int duration_parse(const char *text, int64_t *out_ns)
{
    double v;
    const char *end = decimal_parse(text, &v);
    if (!end)
        return -EINVAL;
    for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
        if (strcmp(end, duration_units[i].suffix) != 0)
            continue;
        double ns = v * duration_units[i].ns;
        if (ns > 9.2e18)
            return -EINVAL;
        *out_ns = (int64_t)llround(ns);
        return 0;
    }
    return -EINVAL;
}
