/* an_stats.h — the one median and percentile every part of the analyzer
 * uses (steps, shares, advice inputs, compare, sweep).
 *
 * Must never: modify its input, or allocate more than one copy of it.
 */
#ifndef AN_STATS_H
#define AN_STATS_H

#include <stddef.h>

/* Median (p == 0.5: the mean of the two middle values when n is even) or
 * percentile (nearest rank on a sorted copy; p in [0,1]) of n values; 0 when
 * n == 0 (or when out of memory). Does not modify v. */
double an_percentile(const double *v, size_t n, double p);

#endif
