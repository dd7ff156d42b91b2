/* an_replay.h — a DataLoader's batches replayed in order: what the steps
 * would have been with a deeper prefetch_factor or more workers, from the
 * batch times the workers measured (docs/report-schema.md, "Advice": the
 * replay).
 *
 * A DataLoader returns its batches in order; each worker loads the batches
 * given to it one after another, and it is given a new one only when the
 * trainer takes one, prefetch_factor x num_workers batches outstanding in
 * all (torch.utils.data's _MultiProcessingDataLoaderIter). So a slow batch
 * holds up the ones behind it, and the workers, their batches made, wait.
 * The replay runs that rule over the run's own batches: each batch's time
 * in its worker (its fetch markers), the trainer's time between fetches,
 * and the hand-over (a batch done to the trainer having it), measured; it
 * must give back the measured steps before its other settings are
 * believed (the decision's rule, decide/an_replay_advice.c).
 *
 * Must never: use a batch it could not match to its worker's fetch (the
 * steps around it are left out), or a step of an iterator's first batch
 * (the workers' start, which no setting here changes).
 */
#ifndef AN_REPLAY_H
#define AN_REPLAY_H

#include <stddef.h>

#include "model/an_result.h"

/* The prefetch factors tried: the one in force times each of these. */
#define AN_REPLAY_FACTORS {2, 4, 8}
/* Of the trainer's batches, at least this share must match a worker's
 * fetch (its index, ended before the trainer had it) to replay. */
#define AN_REPLAY_MATCHED 0.9

/* One stretch of consecutive batches of one iterator: batch i took d[i] ms
 * in its worker (worker i % workers), the trainer spent comp[i] ms between
 * having batch i and asking for the next; worker w could start at start[w]
 * ms after the iterator's first request (its start-up). Returns the
 * replayed time from the trainer having batch 0 to having batch n - 1 (ms)
 * with prefetch_factor pf and hand-over recv ms; -1 on bad input. */
double an_replay_sim(const double *d, const double *comp, size_t n, const double *start,
                     int workers, int pf, double recv);

/* Replays res's DataLoader (its trainer's fetch markers, its worker
 * processes' batch markers) into res->replay; replay.ok 0 where it cannot
 * (no DataLoader workers, too few batches matched). */
void an_replay(an_result *res);

#endif
