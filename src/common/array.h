/*
 * Growing an array by doubling: the one helper behind every table that grows
 * one entry at a time (series definitions, event names, processes, ...);
 * and sorting one that is usually in order already.
 */
#ifndef STROBE_COMMON_ARRAY_H
#define STROBE_COMMON_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/* The number of elements of array a. A pointer is refused at compile time
 * (as the Linux kernel's ARRAY_SIZE does): sizeof a pointer is not a count. */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]) + ARRAY_MUST_BE_ARRAY_(a))
#define ARRAY_MUST_BE_ARRAY_(a)                                                                    \
    (0 * sizeof(struct {                                                                           \
         int not_an_array_ : __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0])) ? -1 \
                                                                                              : 1; \
     }))

/*
 * Make *items (of *cap elements of size bytes) hold at least need elements:
 * the capacity doubles from `first` until it does. The contents are kept.
 * 0, or -ENOMEM with *items and *cap unchanged.
 */
int array_grow(void **items, uint32_t *cap, uint32_t need, size_t size, uint32_t first);

/*
 * qsort(base, n, size, cmp), but nothing when base is in order already (one
 * pass of n - 1 comparisons) or empty (qsort(NULL, 0) is undefined). glibc's
 * qsort is a merge sort that takes a copy of the array: 128 MB to sort the
 * phases of a million steps, which a thread records in order anyway.
 */
void array_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
