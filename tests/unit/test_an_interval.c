/* test_an_interval.c — intervals over runs (analyzer/base/an_interval.h):
 * Student's t against reference values (its quantiles solved with mpmath
 * at 40 digits, its distribution function from scipy.stats.t), the Welch interval of a ratio of geometric means and a one-sample
 * interval against the same computed by numpy and scipy, what an interval
 * shows against a minimum effect, the looks' shares of alpha, and the method
 * itself on generated runs: identical settings are called a change in at
 * most about 5% of trials however noisy the runs, and a 30% change with 3
 * quiet runs a side is found. Every run is generated from the fixed
 * sequence of gs_check_rand: the same counts every time. */
#include <math.h>
#include <stdint.h>

#include "base/an_interval.h"
#include "gs_check.h"

#define CLOSE(x, want, rel) ASSERT_MSG(fabs((double)(x) - (want)) <= (rel) * fabs((double)(want)), \
                                       "%s = %.17g, want %.17g", #x, (double)(x), (double)(want))

static void test_t_quantile(void)
{
    static const struct { double p, df, t; } ref[] = {
        {0.975, 1, 12.706204736174693},  {0.975, 2, 4.3026527297494618},
        {0.975, 2.5, 3.5746548420036818}, {0.975, 4, 2.7764451051977935},
        {0.975, 10, 2.2281388519862742},  {0.975, 30, 2.0422724563012379},
        {0.995, 3, 5.8409093097333554},   {0.9875, 2, 6.2053468165707058},
        {0.99, 7.3, 2.9639404475838964},  {0.6, 5, 0.26718086570414507},
        {0.975, 200, 1.971896223633909},
    };
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) {
        CLOSE(an_t_quantile(ref[i].p, ref[i].df), ref[i].t, 1e-11);
        CLOSE(an_t_quantile(1 - ref[i].p, ref[i].df), -ref[i].t, 1e-11);
    }
    CLOSE(an_t_quantile(0.975, INFINITY), 1.959963984540054, 1e-9);
    ASSERT_TRUE(an_t_quantile(0.5, 3) == 0);
}

static void test_t_cdf(void)
{
    static const struct { double t, df, p; } ref[] = {
        {1.0, 1, 0.7500000000000002}, {2.0, 3, 0.9303370157205785},
        {-1.5, 4.5, 0.10010954282807658}, {0.0, 2, 0.5}, {10, 2, 0.9950737714883371},
    };
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++)
        CLOSE(an_t_cdf(ref[i].t, ref[i].df), ref[i].p, 1e-12);
    /* the inverse is the inverse */
    for (double df = 1; df < 40; df *= 1.7)
        for (double p = 0.001; p < 1; p += 0.0997)
            CLOSE(an_t_cdf(an_t_quantile(p, df), df), p, 1e-10);
}

static void test_ratio(void)
{
    an_ratio_ci c;
    const double a1[] = {100, 104, 98}, b1[] = {70, 72, 69.5};
    ASSERT_EQ(an_ratio_ci_of(a1, 3, b1, 3, 0.95, &c), 0);
    ASSERT_TRUE(c.has_interval && c.na == 3 && c.nb == 3);
    CLOSE(c.ratio, 0.7004631755548331, 1e-12);
    CLOSE(c.lo, 0.6585367809925056, 1e-9);
    CLOSE(c.hi, 0.7450588554353575, 1e-9);
    CLOSE(c.df, 3.334100636537139, 1e-12);
    ASSERT_EQ(an_change_of(&c, 0.02), AN_CHANGE_FASTER);
    /* B over A, so A over B is its inverse */
    an_ratio_ci r;
    ASSERT_EQ(an_ratio_ci_of(b1, 3, a1, 3, 0.95, &r), 0);
    CLOSE(r.lo, 1 / c.hi, 1e-12);
    ASSERT_EQ(an_change_of(&r, 0.02), AN_CHANGE_SLOWER);

    const double a2[] = {10, 12, 11, 13, 9}, b2[] = {10.5, 11, 12.5};
    ASSERT_EQ(an_ratio_ci_of(a2, 5, b2, 3, 0.95, &c), 0);
    CLOSE(c.ratio, 1.0361247324223215, 1e-12);
    CLOSE(c.lo, 0.8444052724343312, 1e-9);
    CLOSE(c.hi, 1.2713734698058947, 1e-9);
    CLOSE(c.df, 5.910211445080704, 1e-12);
    ASSERT_EQ(an_change_of(&c, 0.02), AN_CHANGE_UNPROVEN);

    const double a3[] = {100, 100, 100}, b3[] = {101, 99, 100.5};
    ASSERT_EQ(an_ratio_ci_of(a3, 3, b3, 3, 0.99, &c), 0);
    CLOSE(c.lo, 0.9436045511139143, 1e-9);
    CLOSE(c.hi, 1.0632247064802034, 1e-9);
    CLOSE(c.df, 2.0, 1e-12);
    ASSERT_EQ(an_change_of(&c, 0.02), AN_CHANGE_UNPROVEN);
    ASSERT_EQ(an_change_of(&c, 0.10), AN_CHANGE_SAME);

    /* no spread at all: the point is the interval */
    const double b4[] = {50, 50, 50};
    ASSERT_EQ(an_ratio_ci_of(a3, 3, b4, 3, 0.95, &c), 0);
    ASSERT_TRUE(c.has_interval && isinf(c.df) && c.lo == c.ratio && c.hi == c.ratio);
    CLOSE(c.ratio, 0.5, 1e-15);
    /* one run a side: a ratio, never an interval, never a proven change */
    ASSERT_EQ(an_ratio_ci_of(a1, 1, b4, 1, 0.95, &c), 0);
    ASSERT_TRUE(!c.has_interval && c.lo == c.ratio && c.hi == c.ratio);
    CLOSE(c.ratio, 0.5, 1e-15);
    ASSERT_EQ(an_change_of(&c, 0.02), AN_CHANGE_UNPROVEN);
    ASSERT_EQ(an_ratio_ci_of(a1, 3, b4, 1, 0.95, &c), 0);
    ASSERT_TRUE(!c.has_interval);
    /* no run, or a value that is no step time */
    ASSERT_EQ(an_ratio_ci_of(a1, 0, b4, 3, 0.95, &c), -1);
    const double bad[] = {10, 0, 12};
    ASSERT_EQ(an_ratio_ci_of(a1, 3, bad, 3, 0.95, &c), -1);
    const double neg[] = {10, -1};
    ASSERT_EQ(an_ratio_ci_of(neg, 2, a1, 3, 0.95, &c), -1);
}

static void test_one_sample(void)
{
    an_log_ci c;
    const double v[] = {20, 22, 21, 25};
    ASSERT_EQ(an_log_ci_of(v, 4, 0.95, &c), 0);
    CLOSE(c.center, 21.923152000292212, 1e-12);
    CLOSE(c.lo, 18.823065182122104, 1e-9);
    CLOSE(c.hi, 25.533811256436987, 1e-9);
    ASSERT_TRUE(c.has_interval && c.df == 3);
    ASSERT_EQ(an_log_ci_of(v, 1, 0.95, &c), 0);
    ASSERT_TRUE(!c.has_interval && c.lo == c.center && c.hi == c.center);
    CLOSE(c.center, 20, 1e-15);
    ASSERT_EQ(an_log_ci_of(v, 0, 0.95, &c), -1);
}

static void test_looks(void)
{
    double sum = 0;
    for (int l = 1; l <= 60; l++) {
        const double a = an_alpha_for_look(0.05, l);
        ASSERT_TRUE(a > 0 && a < 0.05);
        sum += a;
    }
    ASSERT_TRUE(sum <= 0.05);
    CLOSE(an_alpha_for_look(0.05, 1), 0.025, 1e-15);
    CLOSE(an_alpha_for_look(0.05, 3), 0.00625, 1e-15);
}

/* ---- the method on generated runs ------------------------------------------------- */

static double uniform(void)
{
    return ((double)(gs_check_rand() >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

/* A run's median step time, on a machine whose noise is: 0 quiet (2%
 * spread), 1 another process whose load changes from run to run (0 to 1.5
 * of 2 CPUs, costing the run up to +150%), 2 another process present in
 * half the runs (+100%), 3 a steady competing load (8% spread). */
static double run_ms(double base, int noise)
{
    switch (noise) {
    case 0: return base * exp(0.02 * normal());
    case 1: return base * (1 + 1.5 * uniform() * (0.5 + 0.5 * uniform()));
    case 2: return base * (uniform() < 0.5 ? 2.0 : 1.0) * exp(0.02 * normal());
    default: return base * exp(0.08 * normal());
    }
}

/* Of trials trials with n runs a side, A at 100 ms and B at 100 * ratio:
 * how many the interval called FASTER, SLOWER. */
static void trials(int trials, size_t n, double ratio, int noise, int *faster, int *slower)
{
    double a[8], b[8];
    *faster = *slower = 0;
    for (int t = 0; t < trials; t++) {
        for (size_t i = 0; i < n; i++) {
            a[i] = run_ms(100, noise);
            b[i] = run_ms(100 * ratio, noise);
        }
        an_ratio_ci c;
        if (an_ratio_ci_of(a, n, b, n, 0.95, &c) != 0)
            continue;
        const an_change ch = an_change_of(&c, 0.02);
        *faster += ch == AN_CHANGE_FASTER;
        *slower += ch == AN_CHANGE_SLOWER;
    }
}

static void test_method(void)
{
    int f, s;
    for (int noise = 0; noise < 4; noise++) {
        for (size_t n = 3; n <= 5; n += 2) {
            /* identical settings: a change called in at most ~5% (95% interval) */
            trials(2000, n, 1.0, noise, &f, &s);
            ASSERT_MSG(f + s <= 110, "noise %d, %zu runs a side: %d of 2000 identical pairs "
                                     "called a change", noise, n, f + s);
            /* and it is never one-sided: a machine's noise favours neither */
            ASSERT_MSG(f <= 70 && s <= 70, "noise %d: %d faster, %d slower", noise, f, s);
        }
    }
    /* a real 30% change: found with 3 quiet runs a side, and with 5 beside a
     * steady load, in at least 95% of trials; never called slower */
    trials(1000, 3, 0.7, 0, &f, &s);
    ASSERT_MSG(f >= 950 && s == 0, "quiet, 3 runs: %d of 1000 found", f);
    trials(1000, 5, 0.7, 3, &f, &s);
    ASSERT_MSG(f >= 950 && s == 0, "steady load, 5 runs: %d of 1000 found", f);
}

static void test_best_fixed(void)
{
    const double a[] = {20, 20.4, 19.8}, b[] = {10, 10.1, 9.9}, c[] = {10, 10, 10},
                 d[] = {10, 10, 10}, e[] = {30, 29, 31};
    const double *v[4];
    size_t n[4];
    an_ratio_ci ci[4];
    an_change ch[4];
    an_best r;
    /* the second is fastest, and after one round nothing is proven */
    v[0] = a, v[1] = b, v[2] = e;
    n[0] = n[1] = n[2] = 3;
    ASSERT_EQ(an_best_of(v, n, 3, 0, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_TRUE(r.best == 1 && r.runner == 0 && r.candidates == 3 && r.conf == 0);
    ASSERT_EQ(r.proof, AN_PROOF_OPEN);
    CLOSE(ci[0].ratio, cbrt((10.0 * 10.1 * 9.9) / (20 * 20.4 * 19.8)), 1e-12);
    /* at the first look: proven, each interval at 1 - 2 (0.05 / 2) / 3 */
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_EQ(r.proof, AN_PROOF_PROVEN);
    CLOSE(r.conf, 1 - 0.05 / 3, 1e-12);
    ASSERT_TRUE(ch[0] == AN_CHANGE_FASTER && ch[2] == AN_CHANGE_FASTER && ci[0].hi < 0.98);
    /* a setting left out (no runs) is no candidate */
    n[2] = 0;
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_TRUE(r.candidates == 2 && r.proof == AN_PROOF_PROVEN);
    /* two the same, both faster than the third: a tie, proven */
    v[0] = c, v[1] = d, v[2] = e;
    n[2] = 3;
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_EQ(r.proof, AN_PROOF_TIE);
    ASSERT_TRUE(r.best == 0 && ch[1] == AN_CHANGE_SAME && ch[2] == AN_CHANGE_FASTER);
    /* one run of a setting: never proven against it */
    n[1] = 1;
    v[0] = a, v[1] = b;
    ASSERT_EQ(an_best_of(v, n, 3, 2, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_TRUE(r.best == 1 && r.proof == AN_PROOF_OPEN && !ci[0].has_interval);
    /* one candidate, none */
    n[0] = n[1] = 0;
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_TRUE(r.proof == AN_PROOF_SINGLE && r.best == 2);
    n[2] = 0;
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), 0);
    ASSERT_TRUE(r.proof == AN_PROOF_NONE && r.best == -1);
    const double bad[] = {1, 0};
    v[0] = bad;
    n[0] = 2;
    ASSERT_EQ(an_best_of(v, n, 3, 1, 0.05, 0.02, &r, ci, ch), -1);
}

/* A sweep of k settings over up to 6 rounds, looking after each from the
 * second and stopping at a proven answer: with settings[i] the step ratio
 * of setting i, how many of trials named a winner, and how many named
 * setting `want`. */
static void sweeps(int trials, int k, const double *settings, int noise, int want, int *named,
                   int *right)
{
    double runs[4][6];
    *named = *right = 0;
    for (int t = 0; t < trials; t++) {
        for (int r = 0; r < 6; r++) {
            for (int i = 0; i < k; i++)
                runs[i][r] = run_ms(100 * settings[i], noise);
            if (r == 0)
                continue;
            const double *v[4] = {runs[0], runs[1], runs[2], runs[3]};
            const size_t n[4] = {(size_t)r + 1, (size_t)r + 1, (size_t)r + 1, (size_t)r + 1};
            an_ratio_ci ci[4];
            an_change ch[4];
            an_best b;
            an_best_of(v, n, k, r, 0.05, 0.02, &b, ci, ch);
            if (b.proof == AN_PROOF_PROVEN) {
                (*named)++;
                *right += b.best == want;
                break;
            }
            if (b.proof == AN_PROOF_TIE)
                break;
        }
    }
}

static void test_best_sequential(void)
{
    static const double same[] = {1, 1, 1}, clear[] = {1, 0.7, 1.05};
    int named, right;
    for (int noise = 0; noise < 4; noise++) {
        /* identical settings, looked at after every round: a winner named in
         * at most ~5% of sweeps (all looks together spend 5%) */
        sweeps(1000, 3, same, noise, -1, &named, &right);
        ASSERT_MSG(named <= 55, "noise %d: %d of 1000 sweeps of identical settings named a "
                                "winner", noise, named);
    }
    /* one setting 30% faster: named, and the right one, in >= 95% on a quiet
     * machine and beside a steady load */
    sweeps(500, 3, clear, 0, 1, &named, &right);
    ASSERT_MSG(right >= 475 && right == named, "quiet: %d of 500 named, %d right", named, right);
    sweeps(500, 3, clear, 3, 1, &named, &right);
    ASSERT_MSG(right >= 475 && right == named, "steady load: %d of 500 named, %d right", named,
               right);
}

int main(void)
{
    test_t_quantile();
    test_t_cdf();
    test_ratio();
    test_one_sample();
    test_looks();
    test_method();
    test_best_fixed();
    test_best_sequential();
    return gs_check_done("test_an_interval");
}
