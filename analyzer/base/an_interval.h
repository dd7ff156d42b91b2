/* an_interval.h — confidence intervals over repeated runs: how much faster
 * or slower one setting is than another when each was run several times
 * (`compare A1 A2 A3 -- B1 B2 B3`, `sweep`). Each run gives one number (its
 * median step time); a run is the sample, never a step: the steps of one run
 * share its machine and are not independent samples of the setting.
 *
 * Method (docs/report-outputs.md, "Did it help?"): the logarithms of the
 * runs' numbers, Welch's t on their means, turned back into a ratio: B's
 * step time over A's, the ratio of the sides' geometric means, with its
 * interval. RATIONALE: with 3 runs a side no distribution-free interval
 * reaches 95% (the exact rank interval of 3 against 3 is the range of the
 * pairwise ratios at 90%, which is also what a percentile bootstrap of 3
 * runs gives); the t interval on the logarithms keeps 95% and is
 * deterministic. Logarithms: a setting changes step times by a factor, and
 * the factor is what the interval is of.
 *
 * Must never: allocate, use a random number, or give an interval for fewer
 * than 2 runs on a side.
 */
#ifndef AN_INTERVAL_H
#define AN_INTERVAL_H

#include <stddef.h>

/* Student's t distribution with df > 0 degrees of freedom (not necessarily
 * whole; INFINITY: the normal): P(T <= t). */
double an_t_cdf(double t, double df);

/* The t with P(T <= t) = p, for 0 < p < 1 (bisection on an_t_cdf, to a
 * relative 1e-12). */
double an_t_quantile(double p, double df);

/* One setting's runs: the geometric mean of n values (> 0) and its
 * two-sided interval at confidence conf; n >= 2 for an interval (else
 * lo = hi = the value, has_interval 0). */
typedef struct an_log_ci {
    size_t n;
    double center, lo, hi;
    double df;
    int has_interval;
} an_log_ci;

/* Fills out for values v[0..n). Returns 0, or -1 when n is 0 or a value is
 * not > 0 (out untouched then). */
int an_log_ci_of(const double *v, size_t n, double conf, an_log_ci *out);

/* B against A: ratio = geometric mean of b / geometric mean of a, and the
 * two-sided Welch interval [lo, hi] of that ratio at confidence conf.
 * has_interval only when both sides have >= 2 runs; else lo = hi = ratio.
 * df: Welch-Satterthwaite degrees of freedom (INFINITY when both sides
 * have no spread at all: then lo = hi = ratio). */
typedef struct an_ratio_ci {
    size_t na, nb;
    double ratio, lo, hi;
    double df, conf;
    int has_interval;
} an_ratio_ci;

/* Returns 0, or -1 when a side has no run or a value is not > 0. */
int an_ratio_ci_of(const double *a, size_t na, const double *b, size_t nb, double conf,
                   an_ratio_ci *out);

/* What an interval of B's step time over A's shows against the smallest
 * change worth calling, min_effect (a fraction: 0.02 = 2%). */
typedef enum an_change {
    AN_CHANGE_UNPROVEN = 0, /* the interval reaches inside (1 - m, 1 + m) and beyond */
    AN_CHANGE_FASTER,       /* hi < 1 - m: B faster by more than m, proven */
    AN_CHANGE_SLOWER,       /* lo > 1 + m: B slower by more than m, proven */
    AN_CHANGE_SAME,         /* 1 - m < lo and hi < 1 + m: no change as large as m, proven */
} an_change;

/* The class of ci (AN_CHANGE_UNPROVEN without an interval). */
an_change an_change_of(const an_ratio_ci *ci, double min_effect);

/* Which of k settings is fastest, and is that proven: each setting's runs
 * v[i][0..n[i]) (n[i] == 0: not a candidate), judged at look `look` (0: no
 * look yet, nothing proven) spending an_alpha_for_look(alpha, look) over
 * the candidates: the fastest (lowest geometric mean) against each other
 * candidate j, the interval of its step over j's at confidence
 * 1 - 2 alpha_l / candidates, in ci[j] and change[j] (AN_CHANGE_FASTER:
 * proven faster by more than min_effect). RATIONALE: among m equal
 * settings, the chance that one of them is called the fastest is at most
 * m times the one-sided error of an interval, (1 - conf) / 2. */
typedef enum an_proof {
    AN_PROOF_NONE = 0, /* no candidate */
    AN_PROOF_SINGLE,   /* one candidate */
    AN_PROOF_OPEN,     /* not proven: an interval does not clear the minimum effect */
    AN_PROOF_PROVEN,   /* faster than every other candidate by more than min_effect */
    AN_PROOF_TIE,      /* faster than some, within min_effect of the rest (proven), none open */
} an_proof;

typedef struct an_best {
    an_proof proof;
    int best, runner;  /* indices; -1 none */
    int candidates;
    double conf;       /* of each interval; 0 at look 0 */
} an_best;

/* ci and change: k entries each (the best's own left untouched). Returns
 * 0, or -1 when a value is not > 0. */
int an_best_of(const double *const *v, const size_t *n, int k, int look, double alpha,
               double min_effect, an_best *out, an_ratio_ci *ci, an_change *change);

/* The share of alpha the l-th look of a sequence of looks at growing data
 * may spend (l >= 1): alpha / 2^l, so that all looks together never spend
 * more than alpha, however many there are. */
double an_alpha_for_look(double alpha, int look);

#endif
