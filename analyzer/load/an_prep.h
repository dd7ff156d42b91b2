/* an_prep.h — a training thread's own batch preparation: the span from an
 * update of its model (its last `step_end` of class optimizer or backward)
 * to its next module forward (a `fetch_end` of class forward,
 * docs/trace-format.md), less the CUDA calls it made in between, as data
 * wait when nothing else in the span waited for data (docs/report-schema.md,
 * "Steps").
 *
 * Must never: read trace files, allocate, or give pieces that overlap the
 * thread's CUDA calls or each other.
 */
#ifndef AN_PREP_H
#define AN_PREP_H

#include <stdint.h>

#include "gs_trace.h"

/* A span cut more often is not a batch's preparation and counts no wait
 * (gs_trace.h says why; the collector samples the clocks at that many cuts). */
#define AN_PREP_PIECES GS_PREP_SAMPLED_CUTS

typedef struct an_prep {
    uint64_t t0;     /* the update's step_end; 0: none since the last forward */
    uint64_t from;   /* start of the piece open now */
    uint64_t waits;  /* the thread's data waits counted at t0 */
    uint32_t n;      /* pieces closed before `from` */
    uint32_t cut;    /* CUDA calls in the span */
    uint64_t piece[AN_PREP_PIECES][2];
} an_prep;

/* The thread updated its model at ts; `waits`: its data waits counted
 * when the span's wait may begin (the forward before, else ts). */
void an_prep_arm(an_prep *g, uint64_t ts, uint64_t waits);
/* A CUDA call of the thread over [s, e). */
void an_prep_cut(an_prep *g, uint64_t s, uint64_t e);
/* Its first forward after the update at ts, having counted `waits` data
 * waits: the span's pieces into out (AN_PREP_PIECES + 1 of them at most),
 * their number returned; 0 when the span counts no wait (no update since
 * the last forward, another data wait in it, longer than max_ns, or cut
 * into more than AN_PREP_PIECES). Disarms. */
unsigned an_prep_end(an_prep *g, uint64_t ts, uint64_t waits, uint64_t max_ns,
                     uint64_t out[][2]);

#endif
