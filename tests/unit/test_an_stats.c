/* test_an_stats.c — the analyzer's median and percentile (analyzer/base/an_stats.h)
 * against a sorted copy: random values with many ties and without, sorted,
 * reversed, all equal, a pattern that defeats a median-of-three pivot, and
 * values with NaN or -0.0; every count from 1 to 300 and a few percentiles.
 * The answer must be the very double the sorted copy gives, and the input
 * must come back unchanged. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_stats.h"
#include "gs_check.h"

#define NMAX 300


static int cmp_ref(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What an_percentile says it computes, on a sorted copy. */
static double reference(const double *v, size_t n, double p)
{
    double s[NMAX];
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_ref);
    if (p == 0.5)
        return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    const size_t k = (size_t)ceil(p * (double)n);
    return s[k ? k - 1 : 0];
}

static void fill(double *v, size_t n, int shape)
{
    for (size_t i = 0; i < n; i++) {
        switch (shape) {
        case 0: v[i] = (double)(gs_check_rand() % 7); break;                   /* many ties */
        case 1: v[i] = (double)(gs_check_rand() >> 11) / 9007199254740992.0; break; /* distinct */
        case 2: v[i] = (double)i * 0.5; break;                          /* sorted */
        case 3: v[i] = (double)(n - i); break;                          /* reversed */
        case 4: v[i] = 42.0; break;                                     /* all equal */
        case 5: v[i] = (double)(i % 2 ? i : n - i); break;              /* organ pipe */
        default: /* first and last small, the middle ones large: the pivot of three
                  * is often the second smallest */
            v[i] = (double)((i * 7919) % (n + 1) + 1) * (i % 3 ? 1.0 : -1.0);
            break;
        }
    }
}

static void test_shapes(void)
{
    static const double ps[] = {0.5, 0.9, 0.1, 0.0, 1.0, 0.37, 0.99};
    double v[NMAX], keep[NMAX];
    int bad = 0, changed = 0;
    for (int shape = 0; shape < 7; shape++)
        for (size_t n = 1; n <= NMAX; n++) {
            fill(v, n, shape);
            memcpy(keep, v, n * sizeof *v);
            for (size_t j = 0; j < sizeof ps / sizeof *ps; j++) {
                const double got = an_percentile(v, n, ps[j]);
                const double want = reference(v, n, ps[j]);
                if (memcmp(&got, &want, sizeof got) != 0) {
                    if (!bad)
                        ASSERT_MSG(0, "shape %d n %zu p %g: %.17g, sorted copy %.17g", shape,
                                   n, ps[j], got, want);
                    bad++;
                }
            }
            changed += memcmp(keep, v, n * sizeof *v) != 0;
        }
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(changed, 0);
}

/* NaN and -0.0 have no one place among equal values: the answer is the
 * sorted copy's, as it always was. */
static void test_nan_and_negative_zero(void)
{
    double v[9] = {3, -0.0, 0.0, 1, -0.0, 2, 0.0, -1, 5};
    for (size_t n = 1; n <= 9; n++) {
        const double got = an_percentile(v, n, 0.5), want = reference(v, n, 0.5);
        ASSERT_TRUE(memcmp(&got, &want, sizeof got) == 0);
    }
    double w[5] = {1, NAN, 2, 3, 4};
    const double g = an_percentile(w, 5, 0.9), r = reference(w, 5, 0.9);
    ASSERT_TRUE(memcmp(&g, &r, sizeof g) == 0);
    ASSERT_TRUE(an_percentile(v, 0, 0.5) == 0);
}

/* Many steps, as a long run has: still the sorted copy's answer. */
static void test_large(void)
{
    const size_t n = 200001;
    double *v = malloc(n * sizeof *v), *s = malloc(n * sizeof *s);
    ASSERT_TRUE(v && s);
    if (!v || !s) {
        free(v);
        free(s);
        return;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (double)(gs_check_rand() % 100000) / 7.0;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_ref);
    ASSERT_TRUE(an_percentile(v, n, 0.5) == s[n / 2]);
    ASSERT_TRUE(an_percentile(v, n, 0.9) == s[(size_t)ceil(0.9 * (double)n) - 1]);
    free(v);
    free(s);
}

int main(void)
{
    test_shapes();
    test_nan_and_negative_zero();
    test_large();
    return gs_check_done("test_an_stats");
}
