/* an_predict.c — the fluid simulation of an_predict.h: a trainer and its
 * loader workers, each a short cycle of phases (CPU work, which needs a
 * share of a core; blocking, which only takes time), on `cpus` cores shared
 * with the process's other threads and other processes' runnable threads,
 * in proportion to their weights.
 * Event-driven: between two phase ends every rate is constant, so the
 * simulation jumps from one to the next and is exact for its inputs
 * (docs/report-schema.md, "The model").
 *
 * Must never: look at anything but its inputs, run without bound, or divide
 * by zero.
 */
#include <math.h>
#include <string.h>

#include "decide/an_predict.h"

#define WARM_STEPS 10
#define MEASURED_STEPS 40
#define MAX_EVENTS 2000000
#define MAX_WORKERS 256
#define MAX_PAR 64
#define EPS 1e-9

enum { T_WAIT, T_LBLOCK, T_LCPU, T_CPU, T_OFF };
enum { W_IDLE, W_START, W_STORE, W_BLOCK, W_CPU };

typedef struct sim {
    const an_pred_in *in;
    int n, npar, cap;
    int queue, inprog;
    int tph;
    double trem, par[MAX_PAR];
    int wph[MAX_WORKERS];
    double wrem[MAX_WORKERS];
    double now;
    int steps;
    double t_first, t_last;
    double t_runq, t_cpu, w_runq, w_cpu; /* training thread, workers: measured steps */
    double ext_cpu;                      /* other processes' threads: measured steps */
} sim;

/* Weighted max-min fair shares of c cores: kt threads of weight wt and ko
 * threads of weight 1, each at most one core, and a steady demand u (weight
 * 1). Sets the share of one thread of each kind. */
static void share(double kt, double wt, double ko, double u, double c, double *st, double *so)
{
    *st = *so = 0;
    if (c <= 0)
        return;
    if (kt + ko + u <= c) {
        *st = *so = 1;
        return;
    }
    /* each gets min(cap, weight * L): find L by bisection */
    double lo = 0, hi = 1 / (wt < 1 ? wt : 1) + 1;
    for (int i = 0; i < 60; i++) {
        const double L = (lo + hi) / 2;
        const double used = kt * fmin(1, wt * L) + ko * fmin(1, L) + fmin(u, L);
        if (used > c)
            hi = L;
        else
            lo = L;
    }
    *st = fmin(1, wt * lo);
    *so = fmin(1, lo);
}

static int par_busy(const sim *s)
{
    for (int i = 0; i < s->npar; i++)
        if (s->par[i] > EPS)
            return 1;
    return 0;
}

static void step_done(sim *s)
{
    s->steps++;
    if (s->steps == WARM_STEPS)
        s->t_first = s->now;
    if (s->steps == WARM_STEPS + MEASURED_STEPS)
        s->t_last = s->now;
}

/* The trainer's own CPU part of a step begins: its thread and its
 * intra-op threads (the parallel part split evenly among them). */
static void trainer_cpu_start(sim *s)
{
    s->tph = T_CPU;
    s->trem = s->in->t_cpu_ms;
    for (int i = 0; i < s->npar; i++)
        s->par[i] = s->in->t_par_ms / s->npar;
}

/* The cores the process's runnable threads get between them against g
 * busy groups of other processes, each spread evenly over the c cores with
 * the process's weight: on each of the m = min(r, c) cores the process
 * runs on, its weight is 1/m of its own, so it gets (1/m) / (1/m + g/c)
 * of that core: m c / (c + m g) in all (r: its runnable threads, the
 * steady demand u counted as threads). */
static double group_cores(double r, double g, double c)
{
    const double m = fmin(r, c);
    if (m <= 0)
        return 0;
    return m * c / (c + m * g);
}

/* The storage part of a worker's blocking part (within it). */
static double store_ms(const an_pred_in *in)
{
    return in->w_store_ms <= 0 ? 0 : in->w_store_ms < in->w_block_ms ? in->w_store_ms : in->w_block_ms;
}

/* Start the phases that can start now; loops until nothing changes. */
static void settle(sim *s)
{
    const an_pred_in *in = s->in;
    for (int guard = 0; guard < 4 * (s->n + 8); guard++) {
        int changed = 0;
        for (int i = 0; i < s->n; i++) {
            if (s->wph[i] == W_START && s->wrem[i] <= EPS) {
                s->wph[i] = W_IDLE;
                changed = 1;
            }
            if (s->wph[i] == W_IDLE && s->queue + s->inprog < s->cap) {
                s->inprog++;
                s->wph[i] = W_STORE;
                s->wrem[i] = store_ms(in);
                changed = 1;
            }
            if (s->wph[i] == W_STORE && s->wrem[i] <= EPS) {
                s->wph[i] = W_BLOCK;
                s->wrem[i] = in->w_block_ms - store_ms(in);
                changed = 1;
            }
            if (s->wph[i] == W_BLOCK && s->wrem[i] <= EPS) {
                s->wph[i] = W_CPU;
                s->wrem[i] = in->w_cpu_ms;
                changed = 1;
            }
            if (s->wph[i] == W_CPU && s->wrem[i] <= EPS) {
                s->wph[i] = W_IDLE;
                s->inprog--;
                s->queue++;
                changed = 1;
            }
        }
        switch (s->tph) {
        case T_WAIT:
            if (s->n == 0) {
                s->tph = T_LBLOCK;
                s->trem = in->w_block_ms;
                changed = 1;
            } else if (s->queue > 0) {
                s->queue--;
                trainer_cpu_start(s);
                changed = 1;
            }
            break;
        case T_LBLOCK:
            if (s->trem <= EPS) {
                s->tph = T_LCPU;
                s->trem = in->w_cpu_ms;
                changed = 1;
            }
            break;
        case T_LCPU:
            if (s->trem <= EPS) {
                trainer_cpu_start(s);
                changed = 1;
            }
            break;
        case T_CPU:
            if (s->trem <= EPS && !par_busy(s)) {
                s->tph = T_OFF;
                s->trem = in->t_off_ms;
                changed = 1;
            }
            break;
        case T_OFF:
            if (s->trem <= EPS) {
                step_done(s);
                s->tph = T_WAIT;
                changed = 1;
            }
            break;
        }
        if (!changed)
            return;
    }
}

/* One simulation, worker i's first batch started phase x i / n of a
 * worker's unhindered batch late (0: all at once; 1: spread evenly over a
 * batch). */
static int simulate(const an_pred_in *in, double phase, an_pred_out *out)
{
    memset(out, 0, sizeof *out);
    static sim s; /* RATIONALE: 4 KiB of state, reused; the analyzer is single-threaded */
    memset(&s, 0, sizeof s);
    s.in = in;
    s.n = in->workers;
    const double batch = in->w_block_ms + in->w_cpu_ms;
    for (int i = 0; i < s.n && phase > 0; i++) {
        s.wph[i] = W_START;
        s.wrem[i] = phase * batch * i / s.n;
    }
    s.npar = in->t_par_ms > 0 ? (in->t_par_threads < 1 ? 1 : in->t_par_threads) : 0;
    if (s.npar > MAX_PAR)
        s.npar = MAX_PAR;
    s.cap = (in->prefetch < 1 ? 1 : in->prefetch) * s.n;
    s.tph = T_WAIT;
    const double ext = in->ext_threads > 0 ? in->ext_threads : 0;
    const double other = in->other_cores > 0 ? in->other_cores : 0;
    const double wt = in->t_weight > 0 ? in->t_weight : 1;
    const double groups = ext > 0 ? 0 : in->ext_groups > 0 ? in->ext_groups : 0;
    for (long ev = 0; ev < MAX_EVENTS && s.steps < WARM_STEPS + MEASURED_STEPS; ev++) {
        settle(&s);
        if (s.steps >= WARM_STEPS + MEASURED_STEPS)
            break;
        /* who runs: the training thread and its intra-op threads in their CPU
         * phase (or loading inline), workers in theirs */
        int t_main = (s.tph == T_CPU && s.trem > EPS) || s.tph == T_LCPU;
        int t_par = 0;
        if (s.tph == T_CPU)
            for (int i = 0; i < s.npar; i++)
                t_par += s.par[i] > EPS;
        int nw = 0;
        for (int i = 0; i < s.n; i++)
            nw += s.wph[i] == W_CPU;
        int ns = 0;
        for (int i = 0; i < s.n; i++)
            ns += s.wph[i] == W_STORE;
        /* the workers reading share the storage beyond store_par at once */
        const double rate_s = in->store_par > 0 && ns > in->store_par ? in->store_par / ns : 1;
        double share_t, share_w;
        double cores = in->cpus;
        if (groups > 0)
            cores = group_cores(t_main + t_par + nw + other, groups, in->cpus);
        share(t_main + t_par, wt, nw + ext, other, cores, &share_t, &share_w);
        /* the next phase end */
        double dt = INFINITY;
        if (s.tph == T_LBLOCK || s.tph == T_OFF)
            dt = fmin(dt, s.trem);
        if (t_main && share_t > 0)
            dt = fmin(dt, s.trem / share_t);
        if (s.tph == T_CPU && share_t > 0)
            for (int i = 0; i < s.npar; i++)
                if (s.par[i] > EPS)
                    dt = fmin(dt, s.par[i] / share_t);
        for (int i = 0; i < s.n; i++) {
            if (s.wph[i] == W_STORE)
                dt = fmin(dt, s.wrem[i] / rate_s);
            else if (s.wph[i] == W_BLOCK || s.wph[i] == W_START)
                dt = fmin(dt, s.wrem[i]);
            else if (s.wph[i] == W_CPU && share_w > 0)
                dt = fmin(dt, s.wrem[i] / share_w);
        }
        if (!isfinite(dt))
            return -1; /* nothing can move: no CPU for work that needs it */
        if (dt < 0)
            dt = 0;
        /* advance */
        if (s.steps >= WARM_STEPS) {
            if (t_main) {
                s.t_cpu += share_t * dt;
                s.t_runq += (1 - share_t) * dt;
            }
            s.w_cpu += nw * share_w * dt;
            s.w_runq += nw * (1 - share_w) * dt;
            s.ext_cpu += (groups > 0 ? in->cpus - cores : ext * share_w) * dt;
        }
        if (s.tph == T_LBLOCK || s.tph == T_OFF)
            s.trem -= dt;
        else if (t_main)
            s.trem -= share_t * dt;
        if (s.tph == T_CPU)
            for (int i = 0; i < s.npar; i++)
                if (s.par[i] > EPS)
                    s.par[i] -= share_t * dt;
        for (int i = 0; i < s.n; i++) {
            if (s.wph[i] == W_STORE)
                s.wrem[i] -= rate_s * dt;
            else if (s.wph[i] == W_BLOCK || s.wph[i] == W_START)
                s.wrem[i] -= dt;
            else if (s.wph[i] == W_CPU)
                s.wrem[i] -= share_w * dt;
        }
        s.now += dt;
    }
    if (s.steps < WARM_STEPS + MEASURED_STEPS || s.t_last <= s.t_first)
        return -1;
    out->step_ms = (s.t_last - s.t_first) / MEASURED_STEPS;
    const double cpu = s.t_cpu + s.w_cpu;
    out->runq_per_cpu = cpu > 0 ? (s.t_runq + s.w_runq) / cpu : 0;
    out->t_runq_per_cpu = s.t_cpu > 0 ? s.t_runq / s.t_cpu : 0;
    out->w_runq_per_cpu = s.w_cpu > 0 ? s.w_runq / s.w_cpu : 0;
    out->ext_cores = s.ext_cpu / (s.t_last - s.t_first);
    return 0;
}

/* RATIONALE: workers that share the storage keep the offsets between
 * their reads (shared alike, two readers started apart finish as far
 * apart), so the fluid simulation keeps whatever phases it starts them at:
 * all at once (their reads overlap every batch and the storage idles while
 * they all compute) or spread evenly over a batch (one reads while another
 * computes). The step is averaged over PHASES starts from all at once to
 * nearly even: on the 2-CPU test VM, 2 to 8 workers reading a cold memmap
 * measured steps between the two, nearer all at once for 3 and 4, and
 * offsets spread like random ones predicted 15.2 ms for 3 workers that
 * measured 18.5-21.2 ms (docs/report-schema.md, "The model"); without a
 * storage limit the phases do not matter and one run is enough */
#define PHASES 4

int an_predict(const an_pred_in *in, an_pred_out *out)
{
    memset(out, 0, sizeof *out);
    if (in->cpus <= 0 || in->workers < 0 || in->workers > MAX_WORKERS || in->t_cpu_ms < 0 ||
        in->t_off_ms < 0 || in->w_block_ms < 0 || in->w_cpu_ms < 0 || in->t_par_ms < 0 ||
        in->store_par < 0)
        return -1;
    if (in->t_cpu_ms + in->t_off_ms + in->t_par_ms + in->w_block_ms + in->w_cpu_ms <= 0)
        return -1;
    const int phases = in->store_par > 0 && in->w_store_ms > 0 && in->workers > 1 ? PHASES : 1;
    an_pred_out o, sum;
    memset(&sum, 0, sizeof sum);
    for (int k = 0; k < phases; k++) {
        if (simulate(in, (double)k / phases, &o) < 0)
            return -1;
        sum.step_ms += o.step_ms / phases;
        sum.runq_per_cpu += o.runq_per_cpu / phases;
        sum.t_runq_per_cpu += o.t_runq_per_cpu / phases;
        sum.w_runq_per_cpu += o.w_runq_per_cpu / phases;
        sum.ext_cores += o.ext_cores / phases;
    }
    *out = sum;
    return 0;
}
