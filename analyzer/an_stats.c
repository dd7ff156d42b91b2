/* an_stats.c — median and percentile (an_stats.h).
 *
 * Must never: modify the caller's values.
 */
#include "an_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double an_percentile(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return 0;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double r;
    if (p == 0.5) {
        r = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    } else {
        size_t k = (size_t)ceil(p * (double)n); /* nearest rank */
        r = s[k ? k - 1 : 0];
    }
    free(s);
    return r;
}
