/* Selection: the k-th smallest of an array without sorting it (percentiles
 * of a run's points, quantiles of the rules' windows). */
#ifndef STROBE_COMMON_SELECT_H
#define STROBE_COMMON_SELECT_H

#include <stddef.h>

/* Put the k-th smallest of v[lo, hi) at v[k] (lo <= k < hi), everything in
 * [lo, k) no larger and everything in (k, hi) no smaller. No NaN in v. */
void select_kth(double *v, size_t lo, size_t hi, size_t k);

#endif
