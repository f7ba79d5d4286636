/*
 * Comma-separated lists, as strobe's options and records write them
 * ("algo-1,algo-2", "CPUBottleneck,StepOutlier"): each item in turn, with
 * no copy. Empty items (",," or a trailing comma) are items too, of length 0,
 * except that strlist_each ends the list at a trailing comma, so "" has no
 * items; strlist_split counts every comma, for lists where an empty item is
 * an error to report. Labels ("node=algo-1,gpu=0") are lists whose items are
 * key=value pairs; strlist_each_pair and strlist_value read them.
 */
#ifndef STROBE_COMMON_STRLIST_H
#define STROBE_COMMON_STRLIST_H

#include <stddef.h>

/* One item: item[0..len), not NUL-terminated. Nonzero stops the walk. */
typedef int strlist_fn(const char *item, size_t len, void *arg);

/* Call fn on each item of list in order. 0, or fn's first nonzero result. */
int strlist_each(const char *list, strlist_fn *fn, void *arg);

/* As strlist_each over list[0..len), which need not be NUL-terminated: a
 * field inside a line ("rw,memory,cpu" in /proc/self/mountinfo). */
int strlist_each_n(const char *list, size_t len, strlist_fn *fn, void *arg);

/* As strlist_each, but n commas make n+1 items: "" is one empty item and
 * "a," ends with one. */
int strlist_split(const char *list, strlist_fn *fn, void *arg);

/* Whether list holds an item equal to item[0..len). */
int strlist_has(const char *list, const char *item, size_t len);

/* As strlist_has over list[0..list_len), not NUL-terminated. */
int strlist_has_n(const char *list, size_t list_len, const char *item, size_t len);

/* Item number index (from 0) of list as strlist_each counts them, its
 * length in *len; NULL when the list is shorter. Points into list. */
const char *strlist_nth(const char *list, size_t index, size_t *len);

/* One pair: key[0..key_len) and value[0..value_len), neither NUL-terminated
 * nor unescaped. Nonzero stops the walk. */
typedef int strlist_pair_fn(const char *key, size_t key_len, const char *value, size_t value_len,
                            void *arg);

/* Call fn on each item of list that holds '=', split at its first '='; items
 * without one are skipped. 0, or fn's first nonzero result. */
int strlist_each_pair(const char *list, strlist_pair_fn *fn, void *arg);

/* The value of the first item "key=..." of list, its length in *len; NULL
 * when there is none or list is NULL. Points into list. */
const char *strlist_value(const char *list, const char *key, size_t *len);

#endif
