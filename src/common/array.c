#include "common/array.h"

#include <errno.h>
#include <stdlib.h>

int array_grow(void **items, uint32_t *cap, uint32_t need, size_t size, uint32_t first)
{
    if (need <= *cap)
        return 0;
    uint64_t n = *cap ? *cap : (first ? first : 1);
    while (n < need)
        n *= 2;
    if (n > UINT32_MAX)
        return -ENOMEM;
    void *p = realloc(*items, (size_t)n * size);
    if (!p)
        return -ENOMEM;
    *items = p;
    *cap = (uint32_t)n;
    return 0;
}

void array_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = base;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0)
        i++;
    if (i < n)
        qsort(base, n, size, cmp);
}
