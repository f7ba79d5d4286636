/*
 * Comma-separated lists, as strobe's options and records write them
 * ("algo-1,algo-2", "CPUBottleneck,StepOutlier"): each item in turn, with
 * no copy. Empty items (",," or a trailing comma) are items too, of length 0.
 */
#ifndef STROBE_COMMON_STRLIST_H
#define STROBE_COMMON_STRLIST_H

#include <stddef.h>

/* One item: item[0..len), not NUL-terminated. Nonzero stops the walk. */
typedef int strlist_fn(const char *item, size_t len, void *arg);

/* Call fn on each item of list in order. 0, or fn's first nonzero result. */
int strlist_each(const char *list, strlist_fn *fn, void *arg);

/* Whether list holds an item equal to item[0..len). */
int strlist_has(const char *list, const char *item, size_t len);

#endif
