/* sweep_judge.c — `gpustarve sweep`'s judgement over rounds: each
 * configuration's step time over its runs with its interval, the fastest,
 * and whether it is proven faster than every other by more than the minimum
 * effect (or proven tied with those it does not beat).
 *
 * RATIONALE (docs/python.md, "How sure"): the sweep looks after every round
 * and stops once the answer is clear, so each look may spend only part of
 * the error it may make: look l (after round l + 1) spends alpha / 2^l,
 * all looks together at most alpha (an_alpha_for_look); and the fastest of
 * k configurations is named only when its interval against each other one
 * clears the minimum effect (an_best_of, base/an_interval.h).
 *
 * Must never: name a winner on one run a configuration, or read a trace.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/an_stats.h"
#include "cmd/sweep.h"

void sw_summarize(sw_sweep *s)
{
    for (int i = 0; i < s->nc; i++) {
        sw_config *c = &s->cs[i];
        double dw[SW_MAX_VALUES], pg[SW_MAX_VALUES];
        unsigned n = 0;
        c->source = NULL;
        c->verdict[0] = '\0';
        for (int r = 0; r < s->rounds; r++) {
            const sw_metrics *m = &c->runs[r].m;
            const double st = sw_step(s, m);
            if (!m->ok || !(st > 0))
                continue;
            c->samples[n] = st;
            dw[n] = m->dw_share;
            pg[n] = m->pg_ms;
            if (n == 0 || st < c->step_min)
                c->step_min = st;
            if (n == 0 || st > c->step_max)
                c->step_max = st;
            c->source = !c->source || !strcmp(c->source, m->source) ? m->source : "mixed";
            n++;
        }
        c->nok = n;
        memset(&c->step, 0, sizeof c->step);
        if (!n || an_log_ci_of(c->samples, n, 0.95, &c->step) != 0)
            continue;
        /* the verdict of the run closest to the configuration's step time */
        double bestd = INFINITY;
        for (int r = 0; r < s->rounds; r++) {
            const sw_metrics *m = &c->runs[r].m;
            const double st = sw_step(s, m);
            if (m->ok && st > 0 && fabs(st - c->step.center) < bestd) {
                bestd = fabs(st - c->step.center);
                snprintf(c->verdict, sizeof c->verdict, "%s", m->verdict);
            }
        }
        c->dw_share = an_percentile(dw, n, 0.5);
        c->pg_ms = an_percentile(pg, n, 0.5);
    }
}

/* Why it is (not) proven, naming the first configuration that keeps it open. */
static void explain(const sw_sweep *s, sw_best *b, int nfaster, int nsame)
{
    const double me = 100 * s->min_effect;
    if (!strcmp(b->certainty, "proven")) {
        snprintf(b->why, sizeof b->why,
                 "faster than each other configuration by more than %.3g%% (%.4g%% intervals "
                 "over %d rounds)", me, 100 * b->conf, s->rounds);
        return;
    }
    if (!strcmp(b->certainty, "tie")) {
        snprintf(b->why, sizeof b->why,
                 "within %.3g%% of %d other configuration%s (proven), faster than the other %d",
                 me, nsame, nsame == 1 ? "" : "s", nfaster);
        return;
    }
    for (int i = 0; i < b->nvs; i++) {
        const sw_versus *v = &b->vs[i];
        if (v->change == AN_CHANGE_FASTER)
            continue;
        char l[256];
        sw_config_label(s, &s->cs[v->other], l, sizeof l);
        if (!v->ci.has_interval)
            snprintf(b->why, sizeof b->why,
                     "not proven: one measured run of it or of %s; an interval needs 2 or more", l);
        else
            snprintf(b->why, sizeof b->why,
                     "not proven: against %s its step is %+.1f%% (%.4g%% interval %+.1f%% to "
                     "%+.1f%%), which does not clear %.3g%%",
                     l, 100 * (v->ci.ratio - 1), 100 * b->conf, 100 * (v->ci.lo - 1),
                     100 * (v->ci.hi - 1), me);
        return;
    }
}

void sw_judge(const sw_sweep *s, int look, double alpha, sw_best *b)
{
    const double *v[SW_MAX_CONFIGS];
    size_t n[SW_MAX_CONFIGS];
    an_ratio_ci ci[SW_MAX_CONFIGS];
    an_change ch[SW_MAX_CONFIGS];
    memset(b, 0, sizeof *b);
    for (int i = 0; i < s->nc; i++) {
        const sw_config *c = &s->cs[i];
        v[i] = c->samples;
        n[i] = c->left_out ? 0 : c->nok; /* the configurations that can be compared */
    }
    an_best r;
    b->best = -1;
    b->certainty = "none";
    if (an_best_of(v, n, s->nc, look, alpha, s->min_effect, &r, ci, ch) != 0 || r.best < 0)
        return;
    b->best = r.best;
    if (r.proof == AN_PROOF_SINGLE) {
        b->certainty = "single";
        snprintf(b->why, sizeof b->why, "only one configuration was measured");
        return;
    }
    b->look = look;
    b->conf = r.conf;
    b->margin = 1 - s->cs[r.best].step.center / s->cs[r.runner].step.center;
    int nfaster = 0, nsame = 0;
    for (int i = 0; i < s->nc; i++) {
        if (i == r.best || !n[i])
            continue;
        b->vs[b->nvs++] = (sw_versus){.other = i, .ci = ci[i], .change = ch[i]};
        nfaster += ch[i] == AN_CHANGE_FASTER;
        nsame += ch[i] == AN_CHANGE_SAME;
    }
    b->certainty = r.proof == AN_PROOF_PROVEN ? "proven" : r.proof == AN_PROOF_TIE ? "tie"
                                                                                : "not_proven";
    if (look == 0)
        snprintf(b->why, sizeof b->why,
                 "not proven: one run each; with 2 rounds or more the sweep measures the spread "
                 "(%.0f%% less time per step than the runner-up here)",
                 100 * b->margin);
    else
        explain(s, b, nfaster, nsame);
}
