/* an_replay_advice.h — advice from the DataLoader's batches replayed in
 * order (model/an_replay.h; docs/report-schema.md, "Advice": the replay):
 * a deeper prefetch_factor, and the count of workers where the model,
 * which takes every batch as the mean one, does not reproduce the run.
 *
 * Must never: advise from a replay that does not give back the measured
 * steps within the model's error, or where the CPU a shorter step needs
 * does not fit in what other processes and threads leave.
 */
#ifndef AN_REPLAY_ADVICE_H
#define AN_REPLAY_ADVICE_H

#include "decide/an_decide.h"

#define AN_REPLAY_MIN_SAVING 0.05 /* a change must save >= 5% of a step */
#define AN_REPLAY_NEAR_BEST 0.9   /* the smallest change that saves this share of the best */
#define AN_REPLAY_CPU_ROOM 0.8    /* the CPU a step needs then, at most this share of the free */

/* A deeper prefetch_factor: an entry in out, or nothing. */
void an_advise_prefetch(const an_decide_in *in, an_decision *out);

/* num_workers from the replay, for a run the model does not reproduce:
 * adds the entry and a note and returns 1; 0 (nothing added) where the
 * replay gives no count. */
int an_advise_replay_workers(const an_decide_in *in, an_decision *out);

#endif
