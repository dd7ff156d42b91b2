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

/* Calibration between the hook clock and CLOCK_MONOTONIC (the writer owns
 * the process's one). */
typedef struct gs_calib {
    uint64_t tsc0, mono0; /* previous pair */
    uint64_t tsc1, mono1; /* latest pair */
    /* (mono1 - mono0) * 2^32 / (tsc1 - tsc0), 0 when unusable: the rate as
     * a multiplier, so that converting a stamp is a multiply and a shift
     * instead of a 128-bit division (docs/performance.md) */
    uint64_t mult;
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

/* Hook clock -> CLOCK_MONOTONIC ns. Within 2^32 ticks of the segment's
 * start (about a second; the writer takes a pair every flush) a multiply
 * and a shift, at most 1 ns below the exact conversion; else exact. */
static inline uint64_t gs_calib_ts(const gs_calib *c, uint64_t raw)
{
    const uint64_t d = raw - c->tsc0;
    if (GS_LIKELY(c->mult && raw >= c->tsc0 && d < (1ull << 32)))
        return c->mono0 + (uint64_t)(((unsigned __int128)d * c->mult) >> 32);
    return gs_calib_ts_exact(c, raw);
}

static inline uint64_t gs_calib_dur(const gs_calib *c, uint64_t raw)
{
    if (GS_LIKELY(c->mult && raw < (1ull << 32)))
        return (uint64_t)(((unsigned __int128)raw * c->mult) >> 32);
    return gs_calib_dur_exact(c, raw);
}

#endif
