/* an_workers_model.c — num_workers from measured time (docs/report-schema.md,
 * "The model"): the run is described to the model (an_predict.h) from what
 * the threads' clocks measured (means per step: the model's step is the
 * mean step); the load of other processes (as threads, and as groups the
 * kernel shares the cores with first) and how much the scheduler favours
 * the trainer are fitted to the measured run-queue delays; the model must
 * reproduce the measured step; then it predicts the step for other counts
 * of workers, fewer and more, with each fit, with the cores shared alike,
 * and with the CPUs other processes' load left at its worst. Which count
 * to advise, and the notes where none, are an_choose.c's; where the model
 * does not reproduce the run, a note gives the `gpustarve sweep` command
 * that would settle it instead of a number.
 *
 * Must never: look at anything but its an_decide_in, or advise a setting
 * without a prediction that every way of sharing the cores says helps. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decide/an_choose.h"
#include "decide/an_decide.h"
#include "decide/an_predict.h"
#include "decide/an_replay_advice.h"

#define PAR_MIN_SHARE 0.05   /* intra-op CPU below this share of a step: a steady load */
#define SATURATED 0.95       /* busy share of the CPUs from which the machine had no idle CPU */
#define RUNQ_NOISE 0.02      /* run-queue delay per CPU time the model needs no other load for */
#define MAX_TRY AN_CHOOSE_MAX /* most workers tried */
#define MAX_WEIGHT 64.0      /* most the trainer's weight is fitted to */
#define WORKERS_IDLE 1.5     /* workers busy under 1/1.5 of their time are not the wait */
#define UNEVEN_P90 2.0       /* steps uneven: the 90th percentile this many medians, */
#define UNEVEN_MEAN 1.15     /* and the mean this many (the slow steps carry time) */
#define STORE_MIN_SHARE 0.05 /* storage reads under this share of a batch: no storage limit */
#define PAGE_CACHE_COPIES 1.5 /* storage bytes within this many copies' worth: the page
                               * cache served the rest */
#define OTHER_LOAD_SLACK 0.05 /* cores a CPU over the measured other load a fit may count */

static double pos(double x)
{
    return x > 0 ? x : 0;
}

typedef struct ctx {
    const an_decide_in *in;
    an_pred_in base; /* the run as measured, workers = current */
    int groups;      /* the other processes' load is groups (ext_groups), not threads */
    int *raised;     /* set when the measured load raised a fit (an_model_info.load_bound) */
    int *lowered;    /* set when it lowered one (an_model_info.load_capped) */
    /* the workers read the same bytes (an_decide_in.read_copies): a worker's
     * storage reads of a batch that grow with the count, rep_ms of them now,
     * by 1 + rep_rho (n - 1) for n workers */
    double rep_ms, rep_rho;
    /* and the storage's speed then follows the reads in flight
     * (an_decide_in.read_speed): speed_now at the count now */
    double speed_now;
} ctx;

/* A worker's storage reads of a batch with n workers less those with the
 * count now: the reads of bytes every worker reads grow with the count. */
static double replica_ms(const ctx *c, int n)
{
    const int cur = c->base.workers;
    if (c->rep_ms <= 0 || n < 1 || cur < 1)
        return 0;
    const double g = 1 + c->rep_rho * (n - 1), g_cur = 1 + c->rep_rho * (cur - 1);
    return c->rep_ms * (g / g_cur - 1);
}

/* The storage's speed (bytes per ns, all reads together) with k reads in
 * flight: between the counts measured, the nearest one outside them; 0
 * when none was. */
static double speed_at(const an_decide_in *in, double k)
{
    int lo = 0, hi = 0;
    for (int j = 1; j <= AN_READ_K; j++) {
        if (!(in->read_speed[j] > 0))
            continue;
        if (j <= k || !lo)
            lo = j;
        if (j >= k && !hi)
            hi = j;
    }
    if (!lo)
        return 0;
    if (!hi || hi == lo)
        return in->read_speed[lo];
    return in->read_speed[lo] + (in->read_speed[hi] - in->read_speed[lo]) * (k - lo) / (hi - lo);
}

/* How much longer the storage takes for the same bytes with n workers than
 * now: the reads in flight go with the count (as many a worker as now, at
 * least one), and the speed with them (1 where not measured). */
static double storage_slower(const ctx *c, int n)
{
    const int cur = c->base.workers;
    if (!(c->speed_now > 0) || n < 1 || cur < 1 || n == cur)
        return 1;
    const double s = speed_at(c->in, fmax(1, c->in->read_inflight * n / cur));
    return s > 0 ? c->speed_now / s : 1;
}

/* Modelled step with n workers; -1 when the model has no answer. */
static double model_step(const ctx *c, int n, double wt, double ext, an_pred_out *po)
{
    an_pred_in p = c->base;
    p.workers = n;
    const double rep = replica_ms(c, n);
    const double store = (p.w_store_ms + rep) * storage_slower(c, n);
    p.w_block_ms += store - p.w_store_ms;
    p.w_store_ms = store;
    p.t_weight = wt;
    p.ext_threads = c->groups ? 0 : ext;
    p.ext_groups = c->groups ? ext : 0;
    an_pred_out o;
    if (an_predict(&p, &o) < 0)
        return -1;
    if (po)
        *po = o;
    return o.step_ms;
}

/* What a fit matches: the model's run-queue delay per CPU second, or the
 * cores it gives other processes' load. */
enum fit_on { FIT_RUNQ, FIT_EXT_CORES };

static double fit_value(const an_pred_out *o, enum fit_on on)
{
    return on == FIT_RUNQ ? o->runq_per_cpu : o->ext_cores;
}

/* Other processes' runnable threads (or groups, c->groups) that make the
 * model's figure `on` (for the training thread and workers together, with
 * the trainer's weight wt and the current setting) what was measured: a
 * bisection over 0 to 4 x the CPUs; 0 when nothing was measured, or when a
 * run-queue delay within RUNQ_NOISE of the model's without any; the top
 * when even that is short of it. */
static double fit_others(const ctx *c, double wt, enum fit_on on, double meas)
{
    const int cur = c->base.workers;
    an_pred_out o;
    if (on == FIT_RUNQ ? meas < 0 : meas <= 0)
        return 0;
    if (model_step(c, cur, wt, 0, &o) < 0 || (on == FIT_RUNQ && meas <= o.runq_per_cpu + RUNQ_NOISE))
        return 0;
    double lo = 0, hi = 4 * c->base.cpus;
    if (model_step(c, cur, wt, hi, &o) < 0 || fit_value(&o, on) <= meas)
        return hi;
    for (int i = 0; i < 24; i++) {
        const double mid = (lo + hi) / 2;
        if (model_step(c, cur, wt, mid, &o) < 0)
            break;
        if (fit_value(&o, on) < meas)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* Other processes' threads (or groups) that make the model's run-queue
 * delay what was measured (rho_meas; 0 when the measured delay needs none). */
static double fit_ext(const ctx *c, double wt, double rho_meas)
{
    return fit_others(c, wt, FIT_RUNQ, rho_meas);
}

/* Other processes' threads (or groups) that take, in the model of the
 * current setting, the cores that other processes' load measurably took
 * (load, machine CPU time less the run's own); 0 when none. */
static double fit_ext_load(const ctx *c, double wt, double load)
{
    return fit_others(c, wt, FIT_EXT_CORES, load);
}

/* Other processes' load was measured, on the CPUs the model shares (not a
 * cgroup quota smaller than the affinity mask). */
static int load_usable(const an_decide_in *in)
{
    return in->other_load_cores >= 0 && fabs(in->host_cpus - in->cpus) < 0.5;
}

/* The fitted load of other processes held to what was measured (when it
 * was, on the CPUs the model shares): at least the load that takes the
 * cores other processes took, at most the load that takes them plus
 * OTHER_LOAD_SLACK a CPU.
 * RATIONALE: machine CPU time less the run's own counts every core the
 * other processes took, so a fit to run-queue delays that gives them more
 * counts what they did not take. On the quiet 2-CPU test VM the mixed
 * regime's 2.4% delay (just over RUNQ_NOISE) fitted 1.04 busy threads
 * where 0.02 cores were measured, and predicted 19.2 ms for 3 workers
 * that measured 15.1 ms (docs/testing.md, "The measured load as a ceiling, and 16 quiet rounds"). */
static double within_load(const ctx *c, double wt, double fitted)
{
    const an_decide_in *in = c->in;
    if (!load_usable(in))
        return fitted;
    const double load = fit_ext_load(c, wt, in->other_load_cores);
    if (load > fitted) {
        if (load > fitted + 1e-3 && c->raised)
            *c->raised = 1;
        return load;
    }
    const double top = fit_ext_load(c, wt, in->other_load_cores + OTHER_LOAD_SLACK * in->cpus);
    if (top < fitted) {
        if (top < fitted - 1e-3 && c->lowered)
            *c->lowered = 1;
        return top;
    }
    return fitted;
}

/* The trainer's weight that makes its run-queue delay against the
 * workers' what was measured (rt, rw: each over its CPU time), with the
 * other processes fitted for each weight; 1 when the trainer waited as
 * much as the workers or more, or either is unknown. */
static double fit_weight(const ctx *c, double rt, double rw, double rho, double *ext)
{
    *ext = fit_ext(c, 1, rho);
    if (c->base.workers == 0 || rt < 0 || rw <= 0 || rho <= RUNQ_NOISE)
        return 1;
    const double want = rt / rw; /* smaller: the trainer favoured */
    an_pred_out o;
    if (model_step(c, c->base.workers, 1, *ext, &o) < 0 || o.w_runq_per_cpu <= 0 ||
        o.t_runq_per_cpu / o.w_runq_per_cpu <= want)
        return 1;
    double lo = 0, hi = log(MAX_WEIGHT); /* in log space */
    for (int i = 0; i < 16; i++) {
        const double mid = (lo + hi) / 2, wt = exp(mid);
        const double e = fit_ext(c, wt, rho);
        if (model_step(c, c->base.workers, wt, e, &o) < 0 || o.w_runq_per_cpu <= 0)
            break;
        if (o.t_runq_per_cpu / o.w_runq_per_cpu > want)
            lo = mid;
        else
            hi = mid;
    }
    const double wt = exp((lo + hi) / 2);
    *ext = fit_ext(c, wt, rho);
    return wt;
}

/* The fitted model's ways of sharing the cores, with what each was fitted
 * to: thread by thread (c: the trainer's weight wt, other load ext), all
 * alike (weight 1, ext_fair; < 0: not simulated), group by group (cgrp:
 * ext_grp, its steps times scale_grp, the same run, the same error), and
 * the worst load (cw: the CPUs other processes left at their worst, not
 * yielding; NULL when not measured); scale is the model's error on the run
 * (measured step / modelled); fitted_low: the low end is the fitted way,
 * where the loader mostly sleeps (its CPU under AN_LOADER_CPU_BOUND of a
 * batch) or the other load yields (yields(): it is of the run's own
 * scheduling group, so no group stands between it and the run's threads),
 * else the larger of the fitted and the groups way.
 * RATIONALE: sharing by weight is how the kernel shares the cores among
 * threads that stay runnable; a thread that wakes from a sleep is placed
 * ahead of them and runs its short burst at once, group or no group. The
 * larger of the two ways (below) was chosen on loaders that burn CPU; a
 * thread pool whose threads sleep 24 ms and burn 4.3 ms a batch, on the
 * saturated 2-CPU test machine (1.88 of 2 CPUs busy with other load),
 * measured 8.9 ms with 9 threads where the fitted way said 8.9 and the
 * groups way 14.1 (docs/testing.md, "Truth tests beside a competing load");
 * beside one busy process of the run's session, 1 -> 2 spinning workers
 * measured 29.9, 29.5 and 30.0 ms where the fitted way said 29.9, 29.4 and
 * 31.3 and the groups way 32.5, 31.8 and 35.2 (the same section) */
typedef struct ways {
    const ctx *c, *cgrp, *cw;
    double wt, ext, ext_fair, ext_grp, scale_grp, scale;
    int fitted_low; /* the low end is the fitted way: a sleeper, or a load that yields */
} ways;

/* The steps of counts from 1 (0 when the training thread loads now) up
 * past the count now until 4 more in a row stop helping (at most MAX_TRY),
 * each way, into k (an_choose.h). Returns 0, or -1 when the count now
 * could not be simulated. */
static int fill_counts(const ways *w, an_counts *k)
{
    const ctx *c = w->c;
    an_ladder *l = &k->l;
    const int cur = c->base.workers;
    l->cur = cur;
    l->first = cur == 0 ? 0 : 1;
    l->top = l->first - 1;
    const int most = an_decide_one_thread(c->in, cur) ? 1 : MAX_TRY;
    double best = INFINITY;
    int at_best = cur;
    for (int n = l->first; n <= most; n++) {
        k->fit[n] = model_step(c, n, w->wt, w->ext, NULL);
        k->fair[n] = w->ext_fair >= 0 ? model_step(c, n, 1, w->ext_fair, NULL) : 0;
        k->grp[n] = model_step(w->cgrp, n, w->wt, w->ext_grp, NULL) * w->scale_grp;
        k->worst[n] = w->cw ? model_step(w->cw, n, w->wt, k->worst_ext, NULL) : 0;
        if (k->fit[n] <= 0 || (w->ext_fair >= 0 && k->fair[n] <= 0) || !(k->grp[n] > 0) ||
            (w->cw && k->worst[n] <= 0))
            break;
        l->top = n;
        l->lo[n] = (w->fitted_low ? k->fit[n] : fmax(k->fit[n], k->grp[n])) * w->scale;
        if (n != cur && n > 0 && an_interp_contended(c->in, &c->base, w->ext, l->lo[n]))
            l->lo[n] = fmax(l->lo[n], an_interp_floor(c->in, &c->base));
        l->hi[n] = w->cw ? fmax(k->worst[n] * w->scale, l->lo[n]) : l->lo[n];
        if (n <= cur)
            continue;
        const double v = l->lo[n] + l->hi[n];
        if (v < best * (1 - 1e-3)) {
            best = v;
            at_best = n;
        }
        if (n - at_best >= 4) /* more stopped helping */
            break;
    }
    return l->top >= cur ? 0 : -1;
}

/* Where the model let the storage serve only the reads the run had at once
 * and storage that serves any number would make the step shorter by more
 * than the model's error: a note with that step and the sweep that would
 * tell them apart (the load as measured). */
static void storage_note(const ways *w, double pred, an_decision *out)
{
    const ctx *c = w->c;
    if (c->base.store_par <= 0)
        return;
    ctx cu = *c, cgu = *w->cgrp;
    cu.base.store_par = cgu.base.store_par = 0;
    ways wu = *w;
    wu.c = &cu;
    wu.cgrp = &cgu;
    wu.cw = NULL;
    wu.ext_fair = -1;
    static an_counts k; /* RATIONALE: 3 KiB, reused; the analyzer is single-threaded */
    memset(&k, 0, sizeof k);
    int held;
    const int n = fill_counts(&wu, &k) < 0 ? -1 : an_choose_count(&k.l, AN_NEAR_BEST, 0, 0, &held);
    if (n <= c->base.workers || k.l.lo[n] >= (1 - AN_MODEL_ERROR) * pred)
        return;
    an_decide_sweep(c->in, out, c->base.workers, n);
    an_decide_note(out,
                   "the storage: a batch's reads (file I/O, page faults) take %.1f ms, and the "
                   "model lets it serve %.1f of them at once, as this run had; storage that "
                   "serves more at once (an NVMe drive, an object store) would give %.1f ms "
                   "with %s=%d; this would settle it: %s",
                   c->base.w_store_ms, c->base.store_par, k.l.lo[n],
                   an_count_name(c->in->loader_kind), n, out->model.sweep);
}

/* The model's first facts: the setting and the CPUs; nothing fitted yet. */
static void model_info_start(const an_decide_in *in, int cur, an_model_info *m)
{
    m->used = 1;
    m->cur = cur;
    m->cpus = in->cpus;
    snprintf(m->cpus_source, sizeof m->cpus_source, "%s", in->cpus_source);
    m->runq_per_cpu = -1;
    m->other_load_cores = -1;
    m->other_load_worst_cores = -1;
    m->free_cores = -1;
    m->saturated = -1;
    m->other_load_yields = -1;
    m->peers_same_cores = in->peers_same_cores;
    m->peers_other_cores = in->peers_other_cores;
}

/* Workers that read the same bytes (an_decide_replicated): their
 * positioned reads grow with the count (all of them read each byte:
 * rep_rho 1; none shares: 0), and the storage is shared by its speed in
 * all: one read at a time at the rate the reads had together, each byte
 * one worker reads delaying the others'.
 * RATIONALE: a worker fewer then reads less and faster; the reads the run
 * had at once at the speed measured (c->base.store_par, Little's law) would
 * make it read less at the same speed. On the 2-CPU VM an IterableDataset
 * whose 4 workers read every 2 MiB record (O_DIRECT) and kept every 4th
 * had a 20.2 ms mean step, and 2 workers 11.3 ms; from the first run the
 * model gave 2 workers 22.5 ms with the reads at once at the speed
 * measured (no faster than 4: 22.6), and 13.4 ms shared by the speed in
 * all (docs/report-schema.md, "The model"). That speed in all follows the
 * reads in flight (storage_slower): 2 workers' predicted steps within 15%
 * in 16 of 23 pairs of runs against 14 of 23 at the speed of the run
 * (docs/testing.md, "Workers that read the same bytes"). */
static void replicated(ctx *c, const an_decide_in *in, int cur)
{
    an_pred_in *b = &c->base;
    if (cur < 2 || !an_decide_replicated(in))
        return;
    const double solo = b->w_store_ms / b->store_par;
    b->w_block_ms -= b->w_store_ms - solo;
    b->w_store_ms = solo;
    b->store_par = 1;
    c->rep_ms = solo * pos(in->w_io_ms) / fmax(pos(in->w_io_ms) + pos(in->w_fault_ms), 1e-9) *
                in->read_positioned;
    c->rep_rho = fmin(1, (in->read_copies - 1) / (cur - 1));
    if (in->read_inflight > 0)
        c->speed_now = speed_at(in, in->read_inflight);
}

/* The run as measured, described to the model (c->base, workers = cur):
 * the training thread, the loading (the workers', or inline with none),
 * the storage and the trainer's other threads, per (mean) step. */
static void describe_run(ctx *c, const an_decide_in *in, double step, int cur, an_model_info *m)
{
    memset(c, 0, sizeof *c);
    c->in = in;
    an_pred_in *b = &c->base;
    b->cpus = in->cpus;
    b->other_cores = pos(in->other_cores);
    b->prefetch = in->prefetch > 0 ? in->prefetch : 2;
    b->workers = cur;
    /* the training thread: its CPU, its wait for the batch (simulated), and
     * the rest of its step off-CPU (a GPU sync, a sleep) */
    const double t_runq = pos(in->t_runq_ms);
    b->t_off_ms = pos(step - pos(in->t_cpu_ms) - t_runq - pos(in->t_blocked_ms));
    if (cur == 0) {
        /* loading inline: the fetch is the loading, blocked part and CPU */
        b->w_block_ms = pos(in->t_blocked_ms);
        b->w_cpu_ms = pos(in->t_receiving_ms);
        b->t_cpu_ms = pos(pos(in->t_cpu_ms) - b->w_cpu_ms);
    } else {
        b->w_block_ms = pos(in->w_io_ms) + pos(in->w_fault_ms) + pos(in->w_blocked_ms);
        b->w_cpu_ms = pos(in->w_cpu_ms);
        b->t_cpu_ms = pos(in->t_cpu_ms);
        /* RATIONALE: how many reads at once the storage serves at the
         * speed measured is a property of the device that one run does not
         * show; what it did show is the reads it had at once (one batch a
         * step, each reading store_ms: store_ms / step on average, Little's
         * law). The model serves no more than that, at least one: on the
         * 2-CPU test VM a cold memmap read at 0.98 GB/s with 1 worker and
         * at 0.96-1.17 GB/s in all with 2 to 8, where unbounded parallel
         * reads predicted 8.4-9.5 ms a step and 11-17.8 ms were measured
         * (docs/report-schema.md, "The model") */
        const double store = pos(in->w_io_ms) + pos(in->w_fault_ms);
        if (store >= STORE_MIN_SHARE * (b->w_block_ms + b->w_cpu_ms)) {
            b->w_store_ms = store;
            b->store_par = fmax(1, store / step);
            replicated(c, in, cur);
        }
    }
    m->store_ms = b->w_store_ms;
    m->store_par = b->store_par;
    /* the trainer's other threads: intra-op threads beside its CPU phase,
     * or (when small) a steady load */
    const double par_ms = pos(in->t_par_cores) * step;
    if (par_ms >= PAR_MIN_SHARE * step && b->t_cpu_ms > 0) {
        b->t_par_ms = par_ms;
        int k = (int)lround(par_ms / b->t_cpu_ms);
        b->t_par_threads = k < 1 ? 1 : k > (int)ceil(in->cpus) ? (int)ceil(in->cpus) : k;
    } else {
        b->other_cores += pos(in->t_par_cores);
    }
}

/* Run-queue delay per CPU time, measured: of the training thread and the
 * loader together (rho), of the trainer (rt) and of the workers (rw); -1
 * where unknown. */
typedef struct runq {
    double rho, rt, rw;
} runq;

/* The measured run-queue delays (-1: none to simulate). Where there are
 * none, the delays measured are latency, and c->base counts them so. */
static runq measured_runq(ctx *c, double step, int cur)
{
    const an_decide_in *in = c->in;
    an_pred_in *b = &c->base;
    runq q = {-1, -1, -1};
    const double cpu_meas = pos(in->t_cpu_ms) + (cur > 0 ? pos(in->w_cpu_ms) : 0);
    if (in->t_runq_ms >= 0 && (cur == 0 || in->w_runq_ms >= 0) && cpu_meas > 0) {
        q.rho = (pos(in->t_runq_ms) + (cur > 0 ? pos(in->w_runq_ms) : 0)) / cpu_meas;
        q.rt = in->t_cpu_ms > 0 ? pos(in->t_runq_ms) / in->t_cpu_ms : -1;
        q.rw = cur > 0 && in->w_cpu_ms > 0 ? pos(in->w_runq_ms) / in->w_cpu_ms : -1;
    }
    /* RATIONALE: run-queue delay of threads that hardly run says little */
    if (cpu_meas < 0.05 * step)
        q.rho = q.rt = q.rw = -1;
    if (q.rho < 0) {
        /* no contention to simulate: the delays measured are latency */
        b->w_block_ms += cur > 0 ? pos(in->w_runq_ms) : 0;
        b->t_off_ms += pos(in->t_runq_ms);
    }
    return q;
}

/* The other processes' load (as threads) and the trainer's weight fitted
 * to the delays q, with the trainer's weight fitted (*ext) and all alike
 * (*ext_fair), and the step the model gives the run with each. */
static void fit_load(const ctx *c, const runq *q, int cur, double *ext_fair, double *ext,
                     an_model_info *m)
{
    *ext_fair = within_load(c, 1, fit_ext(c, 1, q->rho));
    const double wt = fit_weight(c, q->rt, q->rw, q->rho, ext);
    *ext = within_load(c, wt, *ext);
    m->ext_threads = *ext;
    m->t_weight = wt;
    m->now_fit_ms = model_step(c, cur, wt, *ext, NULL);
    m->now_fair_ms = model_step(c, cur, 1, *ext_fair, NULL);
}

/* A trainer that waits longer than the model says while its workers idle
 * (each busy for under WORKERS_IDLE of the steps it has per batch) waits on
 * the handoff of batches that are ready (the pipe, the queue's feeder
 * thread), not on the workers: that wait is part of every step, whatever
 * the number of workers. Where so, the model counts it off-CPU, fits
 * again and says so. */
static void fit_handoff(ctx *c, const runq *q, double step, int cur, double *ext_fair,
                        double *ext, an_decision *out)
{
    const an_decide_in *in = c->in;
    an_model_info *m = &out->model;
    if (!(cur > 0 && in->w_wall_ms > 0 && in->w_wall_ms * WORKERS_IDLE <= cur * step &&
          m->now_fit_ms > 0 && m->now_fit_ms < step))
        return;
    /* RATIONALE: a handoff is part of every step; waits gathered in some
     * steps are slow batches that hold up the ones behind them (a
     * DataLoader returns them in order) while the workers, their
     * prefetch_factor batches made, idle: more workers or a deeper prefetch
     * let them run ahead (docs/report-schema.md, "The model"). The model
     * takes every batch as the mean one, so it does not reproduce such a
     * run, and says so with the sweep that settles it. */
    if (in->step_ms > 0 && in->step_p90_ms >= UNEVEN_P90 * in->step_ms &&
        step >= UNEVEN_MEAN * in->step_ms) {
        const int pf = in->prefetch > 0 ? in->prefetch : 2;
        if (in->loader_kind == AN_LOADER_DATALOADER)
            an_decide_note(out,
                           "the steps are uneven (median %.1f ms, 90th percentile %.1f ms, mean "
                           "%.1f ms) while the workers idle (each busy %.1f ms of the %.1f ms it "
                           "has per batch): slow batches hold up the ones behind them, and the "
                           "workers, %d batch%s each made ahead (prefetch_factor), wait; more "
                           "workers or a deeper prefetch_factor let them run ahead: gpustarve "
                           "sweep --prefetch-factor %d,%d,%d --steps 50 -- %s",
                           in->step_ms, in->step_p90_ms, step, in->w_wall_ms, cur * step, pf,
                           pf == 1 ? "" : "es", pf, 2 * pf, 4 * pf,
                           in->argv[0] ? in->argv : "COMMAND");
        return;
    }
    const double handoff = step - m->now_fit_ms;
    c->base.t_off_ms += handoff;
    fit_load(c, q, cur, ext_fair, ext, m);
    m->handoff_ms = handoff;
    an_decide_note(out,
                   "the trainer waits %.1f ms a step for batches its workers have ready "
                   "(each worker is busy %.1f ms of the %.1f ms it has per batch): the handoff "
                   "(pipe, queue), which more workers do not shorten",
                   handoff, in->w_wall_ms, cur * step);
}

/* The note on other processes' load: the contention measured (rho), or
 * the load measured, and the busy threads the model counts for it. */
static void load_note(const an_decide_in *in, double rho, int usable, an_decision *out)
{
    const an_model_info *m = &out->model;
    char load[160] = "";
    if (usable)
        snprintf(load, sizeof load,
                 " (other processes kept %.2f of them busy over the measured steps: machine CPU "
                 "time less the run's own, measured)",
                 in->other_load_cores);
    if (rho > RUNQ_NOISE)
        an_decide_note(out,
                       "CPU contention: the training thread and the loader waited for a CPU %.0f%% "
                       "as long as they ran (run-queue delay, measured); the model counts %.1f "
                       "busy thread%s of other processes on the %.4g CPUs%s",
                       100 * rho, m->ext_threads, fabs(m->ext_threads - 1) < 0.05 ? "" : "s",
                       in->cpus, load);
    else if (usable && in->other_load_cores >= 0.1)
        an_decide_note(out,
                       "other processes kept %.2f of the %.4g CPUs busy over the measured steps "
                       "(machine CPU time less the run's own, measured); the model counts %.1f "
                       "busy thread%s of them",
                       in->other_load_cores, in->cpus, m->ext_threads,
                       fabs(m->ext_threads - 1) < 0.05 ? "" : "s");
}

/* Whether other processes' load shares the CPUs with the run thread by
 * thread: the processes busy as `gpustarve run` started the program
 * (analyzer/cmd/run_peers.c) were, at least
 * PEERS_SAME_SHARE of their load, in the run's own scheduling group (its
 * session's autogroup, its cpu cgroup). 0 when they were not, or not
 * measured (the load is then taken to keep its cores at its worst).
 * RATIONALE: beside one busy process of the run's session, 1 -> 3
 * spinning loader threads made the step 50.0 -> 33.7 ms; beside the same
 * process in a session of its own, 51.2 -> 50.0 ms (2-CPU VM, 2026-12-05) */
#define PEERS_SAME_SHARE 0.8
#define PEERS_BUSY_MIN 0.1 /* cores: less, and the start said nothing of the load */
static int yields(const an_decide_in *in)
{
    const double same = in->peers_same_cores, other = in->peers_other_cores;
    if (same < 0 || other < 0 || same + other < PEERS_BUSY_MIN)
        return 0;
    return same >= PEERS_SAME_SHARE * (same + other);
}

/* The ends of the range (an_choose.h): the cores the loader may have with
 * the load as measured, and the CPUs other processes' load leaves at its
 * worst, for the worst model cw (c's run, no other load but those CPUs
 * fewer). worst_load stays -1 when the worst was not measured on the
 * model's CPUs.
 * RATIONALE: at its worst the other load is taken not to yield: more
 * threads of the run get no more cores in all than it left, as two
 * spinning loader threads got no more CPU than one on the saturated test
 * machine (docs/testing.md, "Six rounds on a saturated machine"); but at
 * least what one thread gets against that load as busy groups (the
 * kernel's fairness: c / (c + U) of a core on c CPUs), so a trainer that
 * needs little CPU is not starved in the model where it was not in the run */
static void range_ends(const ctx *c, double step, int usable, ctx *cw, an_counts *k,
                       an_model_info *m)
{
    const an_decide_in *in = c->in;
    const an_pred_in *b = &c->base;
    k->free_cores = k->worst_load = -1;
    m->free_cores = m->other_load_worst_cores = -1;
    m->other_load_yields = -1;
    k->worst_ext = 0;
    if (!usable)
        return;
    k->free_cores = pos(in->cpus - in->other_load_cores - (b->t_cpu_ms + b->t_par_ms) / step -
                        b->other_cores);
    m->free_cores = k->free_cores;
    if (in->other_load_worst_cores < 0)
        return;
    const double u = fmax(in->other_load_worst_cores, in->other_load_cores);
    k->worst_load = m->other_load_worst_cores = u;
    cw->groups = 0;
    cw->raised = cw->lowered = NULL;
    m->other_load_yields = yields(in);
    if (m->other_load_yields) {
        /* busy processes of the run's own scheduling group: u busy threads
         * that share every CPU with the run's thread by thread */
        k->worst_ext = fmax(u, k->ext);
        k->worst_cpus = m->worst_cpus = cw->base.cpus;
        return;
    }
    cw->base.cpus = fmax(in->cpus - u, in->cpus / (in->cpus + u));
    k->worst_cpus = m->worst_cpus = cw->base.cpus;
}

void an_decide_workers_model(const an_decide_in *in, an_decision *out)
{
    an_model_info *m = &out->model;
    /* the time per step: the mean (an_decide.h says why) */
    const double step = in->step_mean_ms > 0 ? in->step_mean_ms : in->step_ms;
    const long curl = in->cur_workers >= 0 ? in->cur_workers : (long)in->nworkers;
    const int cur = curl > MAX_TRY ? MAX_TRY : (int)curl;
    model_info_start(in, cur, m);
    if (step <= 0 || in->cpus <= 0)
        return;
    ctx c;
    describe_run(&c, in, step, cur, m);
    if (c.rep_ms > 0)
        an_decide_note(out,
                       "the %d workers read the same bytes: each byte they read with positioned "
                       "reads was read by %.1f of them at about the same time (as when each "
                       "worker of an IterableDataset reads every record and keeps its share), so "
                       "each worker's reading grows with their count; a split by which each "
                       "reads only its own records (its shards: get_worker_info) would read "
                       "each byte once",
                       cur, in->read_copies);
    /* RATIONALE: the storage read about one copy where the page cache
     * served the others (a file read through it, the first reader paying) */
    if (c.rep_ms > 0 && in->w_storage_share > 0 &&
        in->w_storage_share <= PAGE_CACHE_COPIES / in->read_copies)
        an_decide_note(out,
                       "the storage read %.0f%% of the bytes the workers read (one copy of "
                       "each would be %.0f%%): the page cache served the other copies, so what "
                       "grows with the workers' count is copying them and waiting at each "
                       "other's reads, not the storage's work (the model takes every copy as a "
                       "storage read)",
                       100 * in->w_storage_share, 100 / in->read_copies);
    /* other processes and the trainer's favour, from the measured
     * run-queue delays */
    const runq q = measured_runq(&c, step, cur);
    m->runq_per_cpu = q.rho;
    m->other_load_cores = in->other_load_cores;
    c.raised = &m->load_bound;
    c.lowered = &m->load_capped;
    const int usable = load_usable(in);
    if (usable && in->host_busy_cores >= 0)
        m->saturated = in->host_busy_cores >= SATURATED * in->host_cpus;
    double ext_fair, ext;
    fit_load(&c, &q, cur, &ext_fair, &ext, m); /* the model must reproduce the run */
    fit_handoff(&c, &q, step, cur, &ext_fair, &ext, out);
    load_note(in, q.rho, usable, out);
    const double wt_use = m->t_weight;
    const double now = m->now_fit_ms;
    /* the third way: the other processes' load as busy groups that the
     * kernel shares the cores with first (autogroups, one per session;
     * cgroups), fitted to the same delays: more threads of this process
     * then get less more CPU than one by one */
    ctx cgrp = c;
    cgrp.groups = 1;
    const double ext_grp =
        within_load(&cgrp, wt_use, q.rho < 0 ? 0 : fit_ext(&cgrp, wt_use, q.rho));
    m->ext_groups = ext_grp;
    const double now_grp = model_step(&cgrp, cur, wt_use, ext_grp, NULL);
    if (now <= 0 || fabs(step - now) > AN_MODEL_ERROR * step) {
        /* workers that read the same bytes: the counts below are the question */
        an_decide_sweep(in, out, cur, c.rep_ms > 0 ? cur - 1 : cur + 2);
        if (c.rep_ms <= 0 && an_advise_replay_workers(in, out)) {
            an_decide_note(out,
                           "the model does not reproduce this run (measured mean step %.1f ms, "
                           "modelled %.1f ms): it takes every batch as the mean one; the "
                           "num_workers advice is the replay's, of the run's own batches in order",
                           step, now);
            out->model.sweep[0] = '\0';
            return;
        }
        an_decide_note(out,
                       "the model does not reproduce this run (measured mean step %.1f ms, modelled "
                       "%.1f ms), so it predicts no change of %s; this would settle "
                       "it: %s",
                       step, now, an_count_name(in->loader_kind), m->sweep);
        return;
    }
    static an_counts k; /* RATIONALE: 3 KiB, reused; the analyzer is single-threaded */
    memset(&k, 0, sizeof k);
    k.step = step;
    k.scale = step / now;
    k.base = c.base;
    k.ext = ext;
    ctx cw = c;
    range_ends(&c, step, usable, &cw, &k, m);
    const int sleeper =
        c.base.w_cpu_ms < AN_LOADER_CPU_BOUND * (c.base.w_cpu_ms + c.base.w_block_ms);
    const ways w = {&c, &cgrp, k.worst_load >= 0 ? &cw : NULL, wt_use, ext, ext_fair,
                    ext_grp, now / now_grp, step / now, sleeper || m->other_load_yields == 1};
    if (fill_counts(&w, &k) < 0) {
        an_decide_note(out, "the model has no prediction for other counts here");
        return;
    }
    int held;
    const int n = an_choose_pick(&k, &held);
    if (n >= 0)
        storage_note(&w, k.l.lo[n], out);
    an_choose_advise(in, &k, n, held, out);
}
