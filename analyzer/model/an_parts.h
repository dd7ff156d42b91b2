/* an_parts.h — the one way a thread's clock samples cut a stretch of its
 * time into the parts of a loader's batch (docs/report-schema.md,
 * "Measured time"), shared by the loaders' measured time (an_cputime.c)
 * and the training thread's own (an_trainer_time.c):
 *
 *   dt = io + wait + cpu + runq + fault + blk
 *
 * io: wall time inside hooked file calls; wait: inside hooked waits on
 * pipes and sockets; cpu: the thread's CPU outside both; runq: runnable,
 * waiting for a CPU; fault: off-CPU in sample intervals with major faults
 * that read storage; blk: the rest (sleep, locks, anything not hooked).
 *
 * Must never: read trace files, print, or divide by zero.
 */
#ifndef AN_PARTS_H
#define AN_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "load/an_samples.h"

/* RATIONALE: x86-64 and most arm64 kernels; the trace does not carry the
 * page size; a major fault brings in at least a page. */
#define AN_PAGE_BYTES 4096.0

typedef struct an_parts {
    double dt, io, wait, cpu, runq, fault, blk, dcpu, maj, nv, niv, storage, fbytes;
    int runq_known, maj_known, sw_known, storage_known;
} an_parts;

/* Add the interval between two consecutive samples x, y of log l. */
void an_parts_interval(const an_cpu_log *l, const an_cpu_sample *x, const an_cpu_sample *y,
                       an_parts *acc);
/* Add every interval between samples from t0 to t1 (both the times of
 * samples of l); returns 0 when l has no sample at either. */
int an_parts_span(const an_cpu_log *l, uint64_t t0, uint64_t t1, an_parts *acc);

/* Add p's parts to acc's. */
void an_parts_add(an_parts *acc, const an_parts *p);

struct an_loader_time;
/* t's six parts, each the mean (its *_mean_ms) and the median over k
 * batches of v[0..5] (wall, io, cpu, runq, fault, blocked; ms); runq and
 * fault -1 where tot says they were not measured. */
void an_parts_stats(struct an_loader_time *t, double *const v[6], size_t k, const an_parts *tot);

/* The mean and the median (base/an_stats.h) of n values; -1 for none. */
double an_mean(const double *v, size_t n);
double an_median(const double *v, size_t n);

static inline double an_dmin(double a, double b)
{
    return a < b ? a : b;
}

static inline double an_dpos(double a)
{
    return a > 0 ? a : 0;
}

#endif
