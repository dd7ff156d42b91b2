/* an_attrib.h — where a step's time goes: the attribution of one step
 * [t0, t1) into GPU busy classes and GPU idle cut by what the training
 * thread was doing, and the eight summary shares the report prints.
 *
 * The timeline engine (an_timeline.h) accrues time per class; a step is the
 * difference of two of its snapshots (an_stepv_from_snaps). The shares of a
 * whole run (an_summarize, an_result.h) are sums and medians of these.
 * Every rule is written down in docs/report-schema.md.
 *
 * Must never: read trace files or know where steps come from (an_steps.c).
 */
#ifndef AN_ATTRIB_H
#define AN_ATTRIB_H

#include <stdint.h>

#include "decide/an_shares.h"
#include "load/an_timeline.h"

/* One step's attribution; the parts sum to t1 - t0. */
typedef struct an_stepv {
    uint64_t t0, t1;
    uint64_t busy[AN_NBUSY]; /* ns, disjoint (priority order of enum an_busy) */
    uint64_t idle_dw;        /* GPU idle, training thread in data wait */
    uint64_t idle_pg;        /* GPU idle, in a pageable copy call (not data wait) */
    uint64_t idle_host;      /* GPU idle, anything else */
    /* beside the split (not one of its parts): the training thread inside a
     * batch fetch, GPU busy or idle; idle_dw takes only the GPU-idle part of
     * that, plus the thread's waits and file calls outside its fetches */
    uint64_t fetch;
} an_stepv;

/* The attribution of [a.t, b.t) from two snapshots of the same slot.
 * idle_host takes the rest, so the parts always sum to t1 - t0; fetch is at
 * most t1 - t0. */
void an_stepv_from_snaps(an_stepv *v, const an_snap *a, const an_snap *b);
uint64_t an_stepv_busy(const an_stepv *v);

/* The share a piece of the timeline (enum an_piece, an_timeline.h) counts
 * in: its busy class's, or its idle cause's. */
int an_piece_share(unsigned piece);
/* The ns of share k in one step. */
uint64_t an_stepv_part(const an_stepv *v, int k);

#endif
