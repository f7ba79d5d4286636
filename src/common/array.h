/*
 * Growing an array by doubling: the one helper behind every table that grows
 * one entry at a time (series definitions, event names, processes, ...).
 */
#ifndef STROBE_COMMON_ARRAY_H
#define STROBE_COMMON_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Make *items (of *cap elements of size bytes) hold at least need elements:
 * the capacity doubles from `first` until it does. The contents are kept.
 * 0, or -ENOMEM with *items and *cap unchanged.
 */
int array_grow(void **items, uint32_t *cap, uint32_t need, size_t size, uint32_t first);

#endif
