#include "common/select.h"

static void swap_double(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/*
 * Put the k-th smallest of v[lo, hi) at v[k], everything before it no
 * larger and everything after no smaller (quickselect). The partition is
 * three-way, so a series of few distinct values (a flat RSS, 0 and 100 %)
 * takes one pass, and the pivot the median of three. Expected linear time,
 * where a sort cost a run of 10 M points a second and a half in strobe show
 * and a 500-value window per GPU per rule most of an offline evaluation.
 */
void select_kth(double *v, size_t lo, size_t hi, size_t k)
{
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi - 1];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        /* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (v[i] < pivot)
                swap_double(&v[lt++], &v[i++]);
            else if (v[i] > pivot)
                swap_double(&v[i], &v[--gt]);
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return; /* v[k] is the pivot, in place */
    }
}
