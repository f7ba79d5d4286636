#include "common/strlist.h"

#include <string.h>

int strlist_each(const char *list, strlist_fn *fn, void *arg)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        int rc = fn(p, n, arg);
        if (rc)
            return rc;
        p += n + (p[n] == ',');
    }
    return 0;
}

struct want {
    const char *item;
    size_t len;
};

static int equal(const char *item, size_t len, void *arg)
{
    const struct want *w = arg;
    return len == w->len && memcmp(item, w->item, len) == 0;
}

int strlist_has(const char *list, const char *item, size_t len)
{
    struct want w = {item, len};
    return strlist_each(list, equal, &w) == 1;
}
