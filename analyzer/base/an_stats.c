/* an_stats.c — median and percentile (an_stats.h).
 *
 * Must never: modify the caller's values, or take more than O(n log n)
 * time on any input (step times come from the trace).
 */
#include "base/an_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void swap_d(double *a, double *b)
{
    const double t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest of s[0..n) (0-based), s reordered: the value s[k] has
 * after sorting s. RATIONALE: a report takes a dozen medians of the steps
 * of every rank, after the files are read and on one thread; a selection
 * (Hoare partitions around a median of three) is O(n) where sorting is
 * O(n log n), and a step count that defeats the pivots (a hostile trace)
 * sorts what is left after 2 log2(n) + 8 partitions, so it is never worse
 * than a sort. Without NaN any k-th value is one number, whichever order
 * equal values end in; the caller sorts when a NaN or a -0.0 is present. */
static double select_kth(double *s, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    unsigned budget = 8;
    for (size_t m = n; m > 1; m >>= 1)
        budget += 2;
    while (hi > lo) {
        if (budget-- == 0) {
            qsort(s + lo, hi - lo + 1, sizeof *s, cmp_double);
            return s[k];
        }
        const size_t mid = lo + (hi - lo) / 2;
        if (s[mid] < s[lo])
            swap_d(&s[mid], &s[lo]);
        if (s[hi] < s[lo])
            swap_d(&s[hi], &s[lo]);
        if (s[hi] < s[mid])
            swap_d(&s[hi], &s[mid]);
        const double pivot = s[mid];
        /* s[lo] <= pivot <= s[hi] stop both scans inside [lo, hi] */
        size_t i = lo, j = hi;
        for (;;) {
            while (s[i] < pivot)
                i++;
            while (s[j] > pivot)
                j--;
            if (i >= j)
                break;
            swap_d(&s[i], &s[j]);
            i++;
            j--;
        }
        /* now s[lo..j] <= pivot <= s[j+1..hi] (i >= j) */
        if (i == j) {
            /* s[j] is the pivot, in its sorted place */
            if (k == j)
                return s[k];
            if (k < j)
                hi = j - 1;
            else
                lo = j + 1;
        } else if (k <= j) {
            hi = j;
        } else {
            lo = j + 1;
        }
    }
    return s[k];
}

double an_percentile(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return 0;
    memcpy(s, v, n * sizeof *s);
    int sort = 0;
    for (size_t i = 0; i < n; i++)
        sort |= isnan(s[i]) || (s[i] == 0 && signbit(s[i]));
    if (sort)
        qsort(s, n, sizeof *s, cmp_double);
    double r;
    if (p == 0.5) {
        const size_t h = n / 2;
        const double hi = sort ? s[h] : select_kth(s, n, h);
        if (n % 2) {
            r = hi;
        } else {
            /* the largest of s[0..h), which the selection left below s[h] */
            double lo = s[h - 1];
            if (!sort)
                for (size_t i = 0; i < h; i++)
                    if (s[i] > lo)
                        lo = s[i];
            r = (lo + hi) / 2;
        }
    } else {
        size_t k = (size_t)ceil(p * (double)n); /* nearest rank */
        k = k ? k - 1 : 0;
        r = sort ? s[k] : select_kth(s, n, k);
    }
    free(s);
    return r;
}
