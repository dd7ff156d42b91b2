/* bench_median.h — the median the C benchmarks report (pread_loop,
 * bench_cuda, frame_cost): of n values, sorting them in place; the mean of
 * the middle two for an even n.
 *
 * Must never: be used by a test (benchmarks print numbers; tests assert
 * behaviour).
 */
#ifndef BENCH_MEDIAN_H
#define BENCH_MEDIAN_H

#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
