/* an_interval.c — Student's t distribution and the Welch interval of a
 * ratio of geometric means over runs (an_interval.h).
 *
 * Responsible for: the regularised incomplete beta function (Lentz's
 * continued fraction), t's distribution function and its inverse, the
 * intervals, and what an interval shows against a minimum effect.
 *
 * Must never: allocate, draw a random number, or depend on anything but libm.
 */
#include "base/an_interval.h"

#include <assert.h>
#include <math.h>

/* The continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        const double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b), the regularised incomplete beta function, 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    const double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    /* the fraction converges fast for x < (a + 1) / (a + b + 2); else by symmetry */
    if (x < (a + 1) / (a + b + 2))
        return exp(lbt) * beta_cf(a, b, x) / a;
    return 1 - exp(lbt) * beta_cf(b, a, 1 - x) / b;
}

/* P(T > t) for t >= 0: computed as itself, not as 1 - cdf, so that the
 * quantiles far in the tail keep their digits. */
static double t_tail(double t, double df)
{
    if (isinf(df))
        return 0.5 * erfc(t / sqrt(2.0));
    if (t == 0)
        return 0.5;
    return 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));
}

double an_t_cdf(double t, double df)
{
    assert(df > 0);
    return t >= 0 ? 1 - t_tail(t, df) : t_tail(-t, df);
}

double an_t_quantile(double p, double df)
{
    assert(p > 0 && p < 1 && df > 0);
    if (p == 0.5)
        return 0;
    if (p < 0.5)
        return -an_t_quantile(1 - p, df);
    const double q = 1 - p; /* the tail beyond the quantile */
    double lo = 0, hi = 1;
    while (t_tail(hi, df) > q && hi < 1e300)
        hi *= 2;
    for (int i = 0; i < 2000 && hi - lo > 1e-13 * hi; i++) {
        const double mid = lo + (hi - lo) / 2;
        if (t_tail(mid, df) > q)
            lo = mid;
        else
            hi = mid;
    }
    return lo + (hi - lo) / 2;
}

/* Mean and variance (n - 1 in the denominator; 0 for n < 2) of log v. */
static int log_moments(const double *v, size_t n, double *mean, double *var)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] > 0) || isinf(v[i]))
            return -1;
        s += log(v[i]);
    }
    *mean = s / (double)n;
    double q = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = log(v[i]) - *mean;
        q += d * d;
    }
    *var = n > 1 ? q / (double)(n - 1) : 0;
    return 0;
}

int an_log_ci_of(const double *v, size_t n, double conf, an_log_ci *out)
{
    assert(conf > 0 && conf < 1);
    double m, var;
    if (!n || log_moments(v, n, &m, &var) < 0)
        return -1;
    out->n = n;
    out->center = out->lo = out->hi = exp(m);
    out->df = n > 1 ? (double)(n - 1) : 0;
    out->has_interval = n > 1;
    if (n > 1) {
        const double half = an_t_quantile(0.5 + conf / 2, out->df) * sqrt(var / (double)n);
        out->lo = exp(m - half);
        out->hi = exp(m + half);
    }
    return 0;
}

int an_ratio_ci_of(const double *a, size_t na, const double *b, size_t nb, double conf,
                   an_ratio_ci *out)
{
    assert(conf > 0 && conf < 1);
    double ma, va, mb, vb;
    if (!na || !nb || log_moments(a, na, &ma, &va) < 0 || log_moments(b, nb, &mb, &vb) < 0)
        return -1;
    const double d = mb - ma;
    out->na = na;
    out->nb = nb;
    out->conf = conf;
    out->ratio = out->lo = out->hi = exp(d);
    out->df = 0;
    out->has_interval = na > 1 && nb > 1;
    if (!out->has_interval)
        return 0;
    const double sa = va / (double)na, sb = vb / (double)nb, se2 = sa + sb;
    if (se2 <= 0) {
        out->df = INFINITY; /* no spread at all: the point is the interval */
        return 0;
    }
    /* Welch-Satterthwaite; a side with no spread adds nothing to either sum */
    out->df = se2 * se2 / (sa * sa / (double)(na - 1) + sb * sb / (double)(nb - 1));
    const double half = an_t_quantile(0.5 + conf / 2, out->df) * sqrt(se2);
    out->lo = exp(d - half);
    out->hi = exp(d + half);
    return 0;
}

an_change an_change_of(const an_ratio_ci *ci, double min_effect)
{
    assert(min_effect >= 0 && min_effect < 1);
    if (!ci->has_interval)
        return AN_CHANGE_UNPROVEN;
    if (ci->hi < 1 - min_effect)
        return AN_CHANGE_FASTER;
    if (ci->lo > 1 + min_effect)
        return AN_CHANGE_SLOWER;
    if (ci->lo > 1 - min_effect && ci->hi < 1 + min_effect)
        return AN_CHANGE_SAME;
    return AN_CHANGE_UNPROVEN;
}

double an_alpha_for_look(double alpha, int look)
{
    assert(look >= 1);
    return ldexp(alpha, -(look < 1000 ? look : 1000));
}

/* The geometric mean of n > 0 values, or NAN when one is not > 0. */
static double gmean(const double *v, size_t n)
{
    double m, var;
    return log_moments(v, n, &m, &var) == 0 ? exp(m) : NAN;
}

int an_best_of(const double *const *v, const size_t *n, int k, int look, double alpha,
               double min_effect, an_best *out, an_ratio_ci *ci, an_change *change)
{
    assert(k >= 0 && look >= 0);
    out->best = out->runner = -1;
    out->candidates = 0;
    out->conf = 0;
    out->proof = AN_PROOF_NONE;
    double cb = 0, cr = 0; /* the best's and the runner-up's geometric means */
    for (int i = 0; i < k; i++) {
        if (!n[i])
            continue;
        const double c = gmean(v[i], n[i]);
        if (isnan(c))
            return -1;
        out->candidates++;
        if (out->best < 0 || c < cb) {
            out->runner = out->best;
            cr = cb;
            out->best = i;
            cb = c;
        } else if (out->runner < 0 || c < cr) {
            out->runner = i;
            cr = c;
        }
    }
    if (out->candidates < 2) {
        out->proof = out->candidates ? AN_PROOF_SINGLE : AN_PROOF_NONE;
        return 0;
    }
    const int b = out->best;
    if (look > 0)
        out->conf = 1 - 2 * an_alpha_for_look(alpha, look) / out->candidates;
    int open = 0, same = 0;
    for (int j = 0; j < k; j++) {
        if (j == b || !n[j])
            continue;
        change[j] = AN_CHANGE_UNPROVEN;
        if (look > 0) {
            an_ratio_ci_of(v[j], n[j], v[b], n[b], out->conf, &ci[j]);
            change[j] = an_change_of(&ci[j], min_effect);
        } else {
            const double r = cb / gmean(v[j], n[j]);
            ci[j] = (an_ratio_ci){.na = n[j], .nb = n[b], .ratio = r, .lo = r, .hi = r};
        }
        open += change[j] != AN_CHANGE_FASTER && change[j] != AN_CHANGE_SAME;
        same += change[j] == AN_CHANGE_SAME;
    }
    out->proof = open ? AN_PROOF_OPEN : same ? AN_PROOF_TIE : AN_PROOF_PROVEN;
    return 0;
}
