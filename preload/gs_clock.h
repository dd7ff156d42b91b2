/* gs_clock.h — the hook clock's calibration: turning hook-clock stamps (TSC
 * ticks or CLOCK_MONOTONIC ns, gs_now in gs_preload.h) into CLOCK_MONOTONIC
 * nanoseconds (gs_clock.c).
 *
 * Must never: be used on a hook's path (the writer converts; hooks only
 * stamp).
 */
#ifndef GS_CLOCK_H
#define GS_CLOCK_H

#include <stdint.h>

#include "gs_preload.h"

/* Segments kept before the latest. RATIONALE: a stamp is converted by
 * the segment it falls in, as it was while that segment was the latest,
 * so that one stamp gives one time whichever pass converts it: a CUDA
 * call's CPU sample at its start is drained in one pass and the call's
 * record, stamped with the same tick, after it returns, often passes
 * later; converted by two segments they differed by a few ns and the
 * analyzer, which pairs them by equal times, lost the sample. 256 passes
 * (every 200 ms when nothing wakes the writer: 51 s). */
#define GS_CALIB_KEEP 256

typedef struct gs_calib_seg {
    uint64_t tsc0, mono0, tsc1, mono1, mult;
} gs_calib_seg;

/* Calibration between the hook clock and CLOCK_MONOTONIC (the writer owns
 * the process's one). */
typedef struct gs_calib {
    uint64_t tsc0, mono0; /* previous pair */
    uint64_t tsc1, mono1; /* latest pair */
    /* (mono1 - mono0) * 2^32 / (tsc1 - tsc0), 0 when unusable: the rate as
     * a multiplier, so that converting a stamp is a multiply and a shift
     * instead of a 128-bit division (docs/performance.md) */
    uint64_t mult;
    /* the segments before this one, a ring: old[(at - 1) % KEEP] the newest */
    gs_calib_seg old[GS_CALIB_KEEP];
    uint32_t nold, at;
} gs_calib;

/* Decide the clock (GPUSTARVE_CLOCK, CPU flags); sets gs_clock_tsc. */
void gs_clock_init(const char *mode);
/* Start a calibration at the current instant. */
void gs_calib_start(gs_calib *c);
/* Take a new (tsc, mono) pair; the segment is previous pair -> this pair. */
void gs_calib_point(gs_calib *c);
/* The exact conversions (gs_live_ts / gs_live_dur: what a reader of the
 * live file computes). */
uint64_t gs_calib_ts_exact(const gs_calib *c, uint64_t raw);
uint64_t gs_calib_dur_exact(const gs_calib *c, uint64_t raw);
/* gs_calib_ts outside its fast path: a stamp before the latest segment by
 * the kept segment it falls in (the oldest kept for one before them all),
 * else exact. */
uint64_t gs_calib_ts_slow(const gs_calib *c, uint64_t raw);

/* raw by the segment that starts at (tsc0, mono0) at rate mult: 1 and *ns
 * when raw lies within 2^32 ticks after tsc0 (a multiply and a shift), 0
 * else. The one formula for the latest segment and the kept ones, so that
 * a stamp converts alike by either. */
static inline int gs_calib_fast(uint64_t tsc0, uint64_t mono0, uint64_t mult, uint64_t raw,
                                uint64_t *ns)
{
    const uint64_t d = raw - tsc0;
    if (!(mult && raw >= tsc0 && d < (1ull << 32)))
        return 0;
    *ns = mono0 + (uint64_t)(((unsigned __int128)d * mult) >> 32);
    return 1;
}

/* Hook clock -> CLOCK_MONOTONIC ns. Within 2^32 ticks of the segment's
 * start (about a second; the writer takes a pair every flush) a multiply
 * and a shift, at most 1 ns below the exact conversion; before the
 * segment, by the segment the stamp fell in (GS_CALIB_KEEP); else exact. */
static inline uint64_t gs_calib_ts(const gs_calib *c, uint64_t raw)
{
    uint64_t ns;
    if (GS_LIKELY(gs_calib_fast(c->tsc0, c->mono0, c->mult, raw, &ns)))
        return ns;
    return gs_calib_ts_slow(c, raw);
}

static inline uint64_t gs_calib_dur(const gs_calib *c, uint64_t raw)
{
    if (GS_LIKELY(c->mult && raw < (1ull << 32)))
        return (uint64_t)(((unsigned __int128)raw * c->mult) >> 32);
    return gs_calib_dur_exact(c, raw);
}

/* A record's start and duration. A record that began before the latest
 * segment ends where its end converts as a stamp (the call's CPU sample at
 * its end has that stamp), not at its start plus a duration at today's
 * rate. */
static inline void gs_calib_span(const gs_calib *c, uint64_t raw_ts, uint64_t raw_dur,
                                 uint64_t *ts, uint64_t *dur)
{
    *ts = gs_calib_ts(c, raw_ts);
    if (GS_LIKELY(raw_ts >= c->tsc0)) {
        *dur = gs_calib_dur(c, raw_dur);
        return;
    }
    const uint64_t end = gs_calib_ts(c, raw_ts + raw_dur);
    *dur = end > *ts ? end - *ts : 0;
}

#endif
