/* an_choose.c — the count of loaders to advise (an_choose.h): the count
 * best over the range of other processes' load, the cap the free cores put
 * on CPU-bound loaders, the checks a count must pass (a saving worth
 * advising, the ways of sharing the cores agreeing, never slower at the
 * worst load), and the notes that say why no count is advised.
 *
 * Must never: simulate, look at anything but its inputs, or divide by zero.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decide/an_choose.h"

static double pos(double x)
{
    return x > 0 ? x : 0;
}

/* A count that is slower than now at the worst load (beyond the model's
 * rounding) is no candidate. */
static int eligible(const an_ladder *l, int n)
{
    return n == l->cur || l->cur < l->first || l->cur > l->top ||
           l->hi[n] <= l->hi[l->cur] * (1 + 1e-6);
}

/* The count in [first, last] best over the range; -1 when none. */
static int best_in(const an_ladder *l, int first, int last, double near)
{
    double blo = INFINITY, bhi = INFINITY;
    for (int n = first; n <= last; n++)
        if (eligible(l, n)) {
            blo = fmin(blo, l->lo[n]);
            bhi = fmin(bhi, l->hi[n]);
        }
    if (!(blo > 0 && bhi > 0 && isfinite(blo) && isfinite(bhi)))
        return -1;
    for (int n = first; n <= last; n++)
        if (eligible(l, n) && l->lo[n] <= blo * (1 + near) && l->hi[n] <= bhi * (1 + near))
            return n;
    /* RATIONALE: the ends disagree (more loaders win only if the other load
     * yields them cores): the count that loses least at its worse end */
    int at = -1;
    double least = INFINITY;
    for (int n = first; n <= last; n++) {
        const double loss = fmax(l->lo[n] / blo, l->hi[n] / bhi);
        if (eligible(l, n) && loss < least * (1 - 1e-3)) {
            least = loss;
            at = n;
        }
    }
    return at;
}

int an_choose_count(const an_ladder *l, double near, int cap, double gain, int *held)
{
    *held = 0;
    if (l->first < 0 || l->first > l->top || l->top > AN_CHOOSE_MAX)
        return -1;
    const int n = best_in(l, l->first, l->top, near);
    /* a cap below the count now caps only an increase */
    int lim = cap > 0 ? (cap > l->cur ? cap : l->cur) : 0;
    if (n < 0 || !lim || n <= lim || lim < l->first)
        return n;
    /* RATIONALE: beyond the cap each loader more must itself help at both
     * ends, so that the model's small wiggles between many counts (a few
     * percent) do not carry the count far past the free cores */
    while (lim < n && l->lo[lim + 1] <= (1 - gain) * l->lo[lim] &&
           l->hi[lim + 1] <= (1 - gain) * l->hi[lim])
        lim++;
    if (lim >= n)
        return n; /* the range says it still helps */
    const int m = best_in(l, l->first, lim, near);
    if (m < 0)
        return n;
    *held = n;
    return m;
}

int an_choose_cap(double free_cores, double cpu_share, double cpu_bound)
{
    if (free_cores < 0 || !(cpu_share >= cpu_bound) || cpu_share <= 0)
        return 0;
    /* RATIONALE: 0.2 of a loader's core of slack for the noise of the
     * measured load (its CPU counters tick every 10 ms) */
    const int k = (int)floor(free_cores / cpu_share + 0.2);
    return k < 1 ? 1 : k;
}

/* The predictions kept in the model info: the counts from the chosen n
 * (when fewer than now) or now + 1 up to two past the larger of them, and
 * the last count simulated (top). */
static void keep_predictions(an_model_info *m, const an_counts *k, int n)
{
    const an_ladder *l = &k->l;
    const int from = n < l->cur + 1 ? n : l->cur + 1;
    const int to = (n > l->cur + 1 ? n : l->cur + 1) + 2;
    m->npred = 0;
    for (int j = l->first; j <= l->top && m->npred < AN_MODEL_NPRED; j++) {
        if (j == l->cur || ((j < from || j > to) && j != l->top))
            continue;
        m->pred[m->npred].workers = j;
        m->pred[m->npred].fit_ms = k->fit[j];
        m->pred[m->npred].fair_ms = k->fair[j];
        m->pred[m->npred].grp_ms = k->grp[j];
        m->pred[m->npred].worst_ms = k->worst[j];
        m->npred++;
    }
}

/* The count chosen and the step predicted with it, with the model's own
 * error on this run carried over: fitted (thr), all alike (fair), groups
 * (grp), the number the advice gives (pred: the range's low end) and the
 * step at the worst load (worst: its high end). */
typedef struct choice {
    int n;
    double thr, fair, grp, pred, worst;
} choice;

/* The best step the model found, and its count. */
static double best_step(const an_ladder *l, int *at)
{
    double best = INFINITY;
    *at = l->cur;
    for (int n = l->first; n <= l->top; n++)
        if (l->lo[n] < best) {
            best = l->lo[n];
            *at = n;
        }
    return best;
}

/* The CPUs are the limit: what a sample (or a batch) costs the loader, the
 * best step the free cores allow, and whose code sets the ceiling. */
static void cpu_limit_note(const an_decide_in *in, const an_counts *k, double cpu_need,
                           an_decision *out)
{
    const an_pred_in *b = &k->base;
    const char *name = an_count_name(in->loader_kind);
    char cost[200];
    if (in->batch_size > 0)
        snprintf(cost, sizeof cost, "each sample costs %.2f ms of the loader's CPU (__getitem__ "
                 "and collate, batch_size %d)", b->w_cpu_ms / in->batch_size, in->batch_size);
    else
        snprintf(cost, sizeof cost, "each batch costs %.1f ms of the loader's CPU", b->w_cpu_ms);
    int at;
    const double best = best_step(&k->l, &at);
    char cores[64] = "";
    if (k->free_cores >= 0)
        snprintf(cores, sizeof cores, " with %.1f free core%s", k->free_cores,
                 fabs(k->free_cores - 1) < 0.05 ? "" : "s");
    /* RATIONALE: whose CPU fills the cores says whose code sets the ceiling */
    const int loader = b->w_cpu_ms >= 0.5 * cpu_need;
    an_decide_note(out,
                   "more workers would not shorten the step: the CPUs are the limit (the loader "
                   "needs %.1f ms of CPU per batch and the trainer %.1f ms per step, on %.4g "
                   "CPUs%s); %s:%s the best step is %.1f ms (%s=%d); the ceiling is %s",
                   b->w_cpu_ms, b->t_cpu_ms + b->t_par_ms, in->cpus,
                   k->ext > 0.05 ? " shared with other processes" : "", cost, cores, best, name,
                   at,
                   loader ? "the loader's own code: make __getitem__ or the collate function "
                            "cheaper"
                          : "the CPU work of training and loading together");
}

double an_interp_floor(const an_decide_in *in, const an_pred_in *b)
{
    if (!in->interp_lock || in->loader_kind != AN_LOADER_THREADS)
        return 0;
    return b->t_cpu_ms + pos(in->t_runq_ms) + b->w_cpu_ms;
}

/* RATIONALE: beside one busy process on 2 CPUs the generator regime's
 * pool thread, preempted while it held the lock, held up the training
 * thread: advised 16.1 -> 14.0 ms, it measured 17.1, 17.0 and 16.6 ms
 * in 3 of 3 rounds, where on the quiet machine the same advice held
 * within 15% in 10 of 10 (2-vCPU VM, 2026-12-07, docs/testing.md) */
int an_interp_contended(const an_decide_in *in, const an_pred_in *b, double ext, double step_ms)
{
    if (an_interp_floor(in, b) <= 0 || step_ms <= 0)
        return 0;
    return (b->t_cpu_ms + b->t_par_ms + b->w_cpu_ms) / step_ms + pos(ext) > in->cpus;
}

/* Where no other count saves enough: what limits the step, in the model's
 * terms. */
static void limit_note(const an_decide_in *in, const an_counts *k, const choice *ch,
                       an_decision *out)
{
    const an_pred_in *b = &k->base;
    const double step = k->step;
    const double cpu_need = b->t_cpu_ms + b->t_par_ms + b->w_cpu_ms + b->other_cores * step;
    const double free_cpus = pos(in->cpus - k->ext);
    const double lock = an_interp_floor(in, b);
    if (lock >= 0.8 * step && an_interp_contended(in, b, k->ext, step))
        an_decide_note(out,
                       "more loader threads would not shorten the step: they share the Python "
                       "interpreter lock with the training thread, and with %.2f busy "
                       "thread%s of other processes on the %.4g CPUs a thread that holds it is "
                       "preempted: the training thread's CPU (%.1f ms a step, %.1f ms waiting "
                       "for a CPU) and the loading's (%.1f ms) run one at a time: %.1f ms",
                       k->ext, fabs(k->ext - 1) < 0.05 ? "" : "s", in->cpus, b->t_cpu_ms,
                       pos(in->t_runq_ms), b->w_cpu_ms, lock);
    else if (b->store_par > 0 && b->w_store_ms / b->store_par >= 0.8 * step)
        an_decide_note(out,
                       "more workers would not shorten the step: the storage is the limit "
                       "(a batch's reads take %.1f ms, and this run had %.1f of them at once)",
                       b->w_store_ms, b->store_par);
    else if (b->t_cpu_ms + b->t_off_ms >= 0.8 * step)
        an_decide_note(out,
                       "more workers would not shorten the step: the training thread's own "
                       "time is %.1f ms of it (CPU %.1f ms, of which receiving the batch %.1f "
                       "ms; off-CPU %.1f ms)",
                       b->t_cpu_ms + b->t_off_ms, b->t_cpu_ms, pos(in->t_receiving_ms),
                       b->t_off_ms);
    else if (free_cpus > 0 && cpu_need / free_cpus >= 0.8 * step)
        cpu_limit_note(in, k, cpu_need, out);
    else if (ch->n > k->l.cur)
        an_decide_note(out, "more workers would save under %.0f%% of a step (model: %.1f ms "
                            "with %d)",
                       100 * AN_WORKERS_MIN_SAVING, ch->pred, ch->n);
    else if (ch->n < k->l.cur)
        an_decide_note(out, "more workers would save under %.0f%% of a step, and fewer would do "
                            "as well: %s=%d gives %.1f ms (model), %.1f ms now with %d",
                       100 * AN_WORKERS_MIN_SAVING, an_count_name(in->loader_kind), ch->n,
                       ch->pred, step, k->l.cur);
    else
        an_decide_note(out, "neither more nor fewer workers would save %.0f%% of a step "
                            "(model: %.1f ms now, the best count)",
                       100 * AN_WORKERS_MIN_SAVING, ch->pred);
}

/* The trainer's weight fitted or all alike: where they disagree by more
 * than the model's error, or a way says slower than now (the groups way
 * too, unless the other load yields: it is of the run's own scheduling
 * group), no number: the sweep that would settle it. Returns 1 when so
 * (noted), else 0. */
static int ways_disagree(const an_decide_in *in, double step, int cur, const choice *ch,
                         an_decision *out)
{
    const double lo = fmin(ch->thr, ch->fair), hi = fmax(ch->thr, ch->fair);
    const double grp = out->model.other_load_yields == 1 ? 0 : ch->grp;
    if (!(hi - lo > AN_MODEL_ERROR * ch->thr || fmax(hi, grp) > step))
        return 0;
    an_decide_sweep(in, out, cur, ch->n);
    an_decide_note(out,
                   "%s=%d should help, but by how much depends on how the %.4g CPUs "
                   "are shared (%.1f ms as the run-queue delays measured say, %.1f ms if "
                   "shared alike, %.1f ms if other processes' load is shared group by group): "
                   "more than the model's %.0f%% error; this would settle it: %s",
                   an_count_name(in->loader_kind), ch->n, in->cpus, ch->thr, ch->fair, ch->grp,
                   100 * AN_MODEL_ERROR, out->model.sweep);
    return 1;
}

/* How far to trust the number the advice gives: the two ways of sharing
 * the cores where they differ, and a machine with no idle CPU. */
static void trust_notes(const an_decide_in *in, const an_counts *k, const choice *ch,
                        an_decision *out)
{
    const an_pred_in *b = &k->base;
    const char *name = an_count_name(in->loader_kind);
    if (ch->thr < (1 - AN_MODEL_ERROR) * ch->pred)
        an_decide_note(out,
                       "%s=%d: %.1f ms if the other processes' load is shared group by "
                       "group (other sessions, containers: autogroups, cgroups), as predicted; "
                       "%.1f ms if thread by thread (other processes of this session)",
                       name, ch->n, ch->grp, ch->thr);
    /* RATIONALE: with no idle CPU, what more threads win depends on how
     * they and the other processes sleep and wake, which one run does not
     * measure: in 6 rounds on the saturated 2-CPU test machine the advised
     * step missed the prediction by more than 15% in 15 of 27 comparisons
     * whose loader burns CPU, and in none of the 6 of a loader that sleeps
     * (docs/testing.md, "Six rounds on a saturated machine"); the number
     * stays (it is the model's best), and the report says how far to trust
     * it and what would settle it */
    if (out->model.saturated == 1 &&
        b->w_cpu_ms >= AN_LOADER_CPU_BOUND * (b->w_cpu_ms + b->w_block_ms)) {
        an_decide_sweep(in, out, k->l.cur, ch->n);
        an_decide_note(out,
                       "the machine had no idle CPU over the measured steps (%.2f of %.4g CPUs "
                       "busy, measured): there the step with %s=%d may miss the "
                       "prediction by more than %.0f%% either way; this would settle it under "
                       "one load: %s",
                       in->host_busy_cores, in->host_cpus, name, ch->n, 100 * AN_MODEL_ERROR,
                       out->model.sweep);
    }
}

/* A count above the free cores' that only the other load yielding would
 * make faster: said, with the range. */
static void held_note(const an_decide_in *in, const an_counts *k, int held, int n,
                      an_decision *out)
{
    an_model_info *m = &out->model;
    m->held_back = held;
    m->held_lo_ms = k->l.lo[held];
    m->held_hi_ms = k->l.hi[held];
    an_decide_note(out,
                   "%s=%d would give %.1f ms if other processes yield cores as in this run, "
                   "%.1f ms if their load stays at its worst (%.2f of the %.4g CPUs%s): its "
                   "loaders burn CPU and %.2f cores were free (other processes' load %.2f, "
                   "measured), and beyond %d each loader more does not help by %.0f%% at both "
                   "ends of the range",
                   an_count_name(in->loader_kind), held, k->l.lo[held], k->l.hi[held],
                   k->worst_load, in->cpus,
                   k->worst_ext > 0 ? ", shared thread by thread: its processes are of this "
                                      "run's scheduling group"
                                    : ", kept whatever the run's threads",
                   k->free_cores, in->other_load_cores, n > k->l.cur ? n : k->l.cur,
                   100 * AN_NEAR_BEST);
}

/* The advice: the count ch->n, with the step predicted, its range and why. */
static void advise(const an_decide_in *in, const an_counts *k, const choice *ch, an_decision *out)
{
    const an_pred_in *b = &k->base;
    const int n = ch->n;
    an_advice a = an_advice_count(in, 1, n, ch->pred, AN_BASE_MEAN, k->step);
    a.worst_step_ms = k->worst_load >= 0 ? ch->worst : 0;
    /* RATIONALE: loader threads of a Python trainer share its interpreter
     * lock, and the trace does not show which CPU time holds it: at worst
     * all of it, the training thread's and the loading's, runs one thread
     * at a time. A generator that tokenized text in Python beside a
     * CPU-bound trainer of many small ops gained nothing from a pool
     * thread (advised: 34.6 -> 29.0 ms), while one beside a trainer of
     * large matrix products went 16.3 -> 11.2 ms (2-vCPU VM, 2026-12-07;
     * docs/report-schema.md, "The model") */
    const double lock = an_interp_floor(in, b);
    if (lock > 0)
        a.lock_step_ms = fmax(ch->pred, lock);
    char store[96] = "";
    if (b->store_par > 0)
        snprintf(store, sizeof store, "; of it storage reads %.1f ms, %.1f at once", b->w_store_ms,
                 b->store_par);
    /* a why longer than its buffer (a long cpus_source) is cut, never overrun */
    if (snprintf(a.why, sizeof a.why,
             "a worker's batch takes %.1f ms blocked (I/O, faults, waits%s) and %.1f ms of CPU; "
             "the trainer %.1f ms of CPU and %.1f ms off-CPU per step, on %.4g CPUs (%s): "
             "%d worker%s give%s the step %.1f ms",
             b->w_block_ms, store, b->w_cpu_ms, b->t_cpu_ms + b->t_par_ms, b->t_off_ms, in->cpus,
             in->cpus_source, n, n == 1 ? "" : "s", n == 1 ? "s" : "", ch->pred) < 0)
        a.why[0] = '\0';
    out->advice[out->nadvice < AN_ADVICE_MAX ? out->nadvice++ : AN_ADVICE_MAX - 1] = a;
}

int an_choose_pick(const an_counts *k, int *held)
{
    const an_pred_in *b = &k->base;
    const int cap =
        an_choose_cap(k->free_cores, b->w_cpu_ms / fmax(b->w_cpu_ms + b->w_block_ms, 1e-9),
                      AN_LOADER_CPU_BOUND);
    return an_choose_count(&k->l, AN_NEAR_BEST, cap, AN_NEAR_BEST, held);
}

void an_choose_advise(const an_decide_in *in, const an_counts *k, int n, int held,
                      an_decision *out)
{
    an_model_info *m = &out->model;
    const an_ladder *l = &k->l;
    const double step = k->step;
    if (n < 0) {
        an_decide_note(out, "the model has no prediction for other counts here");
        return;
    }
    keep_predictions(m, k, n);
    const double s = k->scale;
    const choice ch = {n, k->fit[n] * s, k->fair[n] * s, k->grp[n] * s, l->lo[n], l->hi[n]};
    if (held)
        held_note(in, k, held, n, out);
    if (n == l->cur || step - ch.pred < AN_WORKERS_MIN_SAVING * step) {
        if (!held || n != l->cur)
            limit_note(in, k, &ch, out);
        return;
    }
    if (ways_disagree(in, step, l->cur, &ch, out))
        return;
    trust_notes(in, k, &ch, out);
    advise(in, k, &ch, out);
}
