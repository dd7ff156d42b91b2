/* an_spread.c — how far the input-bound share could move from step to
 * step: a 95% interval around input_bound_share, so that a share near a
 * verdict band's edge is called borderline instead of flipping label from
 * one run to the next (docs/report-schema.md, "Summary numbers").
 *
 * input_bound_share is the larger of two estimates (an_attrib.c); each gets
 * its interval, and the interval of the larger is [larger of the lows,
 * larger of the highs]:
 *   - share.idle_data_wait = sum(d) / sum(t), a ratio of sums: the ratio
 *     estimator's standard error sqrt(sum((d_i - r t_i)^2) / (n (n - 1))) /
 *     mean(t), times 1.96;
 *   - the median of d_i / t_i: the distribution-free interval between the
 *     order statistics n/2 -+ 0.98 sqrt(n) (the binomial's normal
 *     approximation).
 *
 * Must never: read anything but the measured steps, or divide by zero.
 */
#include <math.h>
#include <stdlib.h>

#include "model/an_model.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void an_input_share_interval(an_result *res)
{
    res->input_share_lo = res->input_share_hi = res->input_share;
    const size_t n = res->measured;
    if (n < 2)
        return;
    double *x = malloc(n * sizeof *x);
    if (!x)
        return;
    double sum_d = 0, sum_t = 0;
    size_t m = 0;
    for (size_t i = 0; i < res->nsteps && m < n; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        const double t = (double)(s->v.t1 - s->v.t0), d = (double)s->v.idle_dw;
        x[m++] = t > 0 ? d / t : 0;
        sum_d += d;
        sum_t += t;
    }
    if (m < 2 || sum_t <= 0) {
        free(x);
        return;
    }
    /* the ratio of sums */
    const double r = sum_d / sum_t, mean_t = sum_t / (double)m;
    double ss = 0;
    for (size_t i = 0, j = 0; i < res->nsteps && j < m; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        const double e = (double)s->v.idle_dw - r * (double)(s->v.t1 - s->v.t0);
        ss += e * e;
        j++;
    }
    const double se = sqrt(ss / ((double)m * (double)(m - 1))) / mean_t;
    const double lo_r = r - 1.96 * se, hi_r = r + 1.96 * se;
    /* the median of the per-step shares */
    qsort(x, m, sizeof *x, cmp_double);
    const double half = 0.98 * sqrt((double)m);
    long j = (long)floor((double)m / 2 - half), k = (long)ceil((double)m / 2 + half) - 1;
    if (j < 0)
        j = 0;
    if (k > (long)m - 1)
        k = (long)m - 1;
    if (k < j)
        k = j;
    const double lo_m = x[j], hi_m = x[k];
    free(x);
    double lo = lo_r > lo_m ? lo_r : lo_m, hi = hi_r > hi_m ? hi_r : hi_m;
    if (lo < 0)
        lo = 0;
    if (hi > 1)
        hi = 1;
    /* the point estimate always lies inside its interval */
    res->input_share_lo = lo < res->input_share ? lo : res->input_share;
    res->input_share_hi = hi > res->input_share ? hi : res->input_share;
}
