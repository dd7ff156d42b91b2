/* an_choose.h — which count of loaders (workers, threads) to advise, from
 * the step the model (an_workers_model.c) predicted for each count at the
 * two ends of a range: other processes' load as measured (lo) and as at its
 * worst in the run (hi) (docs/report-schema.md, "The model"). Fewer loaders
 * than now are counts like any other.
 *
 * Must never: simulate (the steps come in the counts), or prefer a count
 * that wins only at one end of the range.
 */
#ifndef AN_CHOOSE_H
#define AN_CHOOSE_H

#include "decide/an_decide.h"
#include "decide/an_predict.h"

#define AN_CHOOSE_MAX 64
#define AN_MODEL_ERROR 0.15 /* the truth tests hold predictions to this (tests/e2e) */
#define AN_NEAR_BEST 0.05   /* the fewest loaders within this of the best step */
#define AN_LOADER_CPU_BOUND 0.2 /* CPU share of a batch from which more loaders need CPU */

/* The predicted steps of counts first..top (the count now, cur, among
 * them); hi[n] >= lo[n]; where nothing was measured of the worst load,
 * hi = lo. */
typedef struct an_ladder {
    int first, top, cur;
    double lo[AN_CHOOSE_MAX + 1], hi[AN_CHOOSE_MAX + 1];
} an_ladder;

/* What the model predicted for each count, and what it was fitted to. */
typedef struct an_counts {
    /* the model's steps, unscaled: thread by thread (fit), all alike
     * (fair), group by group (grp, already scaled to the fitted way's step
     * now), and with the CPUs the other load left at its worst (worst; 0
     * when not measured) */
    double fit[AN_CHOOSE_MAX + 1], fair[AN_CHOOSE_MAX + 1], grp[AN_CHOOSE_MAX + 1],
        worst[AN_CHOOSE_MAX + 1];
    an_ladder l;          /* lo: the larger of fit and grp (fit alone for a loader that
                           * mostly sleeps), hi: worst, times scale */
    double scale;         /* measured step / modelled: the model's error on this run */
    double step;          /* the measured mean step */
    an_pred_in base;      /* the run as described to the model */
    double ext;           /* other processes' busy threads fitted */
    double free_cores;    /* cores the loaders may have: the CPUs less the measured
                           * load of other processes and the trainer's; -1 unknown */
    double worst_load;    /* other processes' load at its worst, cores; -1 unknown */
    double worst_cpus;    /* the CPUs it left (the worst model's); 0 none */
    double worst_ext;     /* the worst model's other busy threads, sharing the CPUs
                           * with the run's thread by thread (0: the load keeps its
                           * cores, worst_cpus are the run's) */
} an_counts;

/* The count best over the range, among those no slower than now at the
 * worst load: the fewest whose step is within `near` (a fraction) of the
 * best such count's at both ends; where no count is, the one whose larger
 * shortfall from the best at either end is least. Above
 * `cap` (the CPU-bound loaders the free cores hold; 0: no cap) each count
 * must beat the one below it by `gain` at both ends, else the choice is
 * the best count up to the last that did; *held gets the count held back
 * (0: none). Returns -1 when the ladder has no count. */
int an_choose_count(const an_ladder *l, double near, int cap, double gain, int *held);

/* The CPU-bound loaders `free_cores` hold, each busy `cpu_share` of its
 * batch on a core: at least 1; 0 (no cap) when the loader is not CPU-bound
 * (its CPU under `cpu_bound` of a batch) or the free cores are unknown (< 0). */
int an_choose_cap(double free_cores, double cpu_share, double cpu_bound);

/* The count to advise from the counts k: an_choose_count with the cap of
 * the free cores when the loader is CPU-bound (*held as there); -1 none. */
int an_choose_pick(const an_counts *k, int *held);

/* The advice for the count n that an_choose_pick gave (held: its *held),
 * or the notes that say why none: checked against the model's error and
 * the ways of sharing the cores; fills out->model.pred. */
void an_choose_advise(const an_decide_in *in, const an_counts *k, int n, int held,
                      an_decision *out);

/* Loader threads of a Python trainer (an_decide_in.interp_lock) share its
 * interpreter lock. The shortest step they can give when a thread holding
 * it is preempted: the training thread's CPU and run-queue delay and the
 * loading's CPU, one at a time (0: not such threads). Contended: the
 * threads that want a CPU for a step of step_ms (the trainer's, the
 * loading's, ext of other processes) are more than the CPUs
 * (an_choose.c). */
double an_interp_floor(const an_decide_in *in, const an_pred_in *b);
int an_interp_contended(const an_decide_in *in, const an_pred_in *b, double ext, double step_ms);

#endif
