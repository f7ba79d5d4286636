/*
 * Stand-ins for the profile codec until src/pyprof/profile.c lands: weak,
 * so the real definitions win where both are linked. A store holds no
 * Python blocks before then, so load is never asked for one.
 */
#include "pyprof/profile.h"

#include <errno.h>
#include <string.h>

__attribute__((weak)) void py_profile_init(struct py_profile *p)
{
    memset(p, 0, sizeof(*p));
}

__attribute__((weak)) void py_profile_release(struct py_profile *p)
{
    memset(p, 0, sizeof(*p));
}

__attribute__((weak)) int py_profile_load(struct py_profile *p, int kind, const uint8_t *data,
                                          size_t len, struct strbuf *why)
{
    (void)p, (void)kind, (void)data, (void)len;
    strbuf_adds(why, "the profile codec is not built yet");
    return -EINVAL;
}
