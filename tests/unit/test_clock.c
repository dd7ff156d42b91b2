/* test_clock.c — the writer's conversion of hook-clock stamps to
 * CLOCK_MONOTONIC ns (preload/gs_clock.c, gs_calib_ts / gs_calib_dur): the
 * multiply-and-shift path against the exact 128-bit division a reader of
 * a live file uses (gs_live_ts / gs_live_dur), on made-up calibration
 * segments: never above the exact value, at most 1 ns below it, never
 * decreasing as the stamp grows; stamps outside the fast path's range
 * (before the segment, 2^32 ticks or more after it, long durations) take
 * the exact path; a segment without a usable rate converts exactly. */
#include "../../preload/gs_clock.c"

#include "gs_check.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t exact_ts(const gs_calib *c, uint64_t raw)
{
    return gs_live_ts(1, c->tsc0, c->mono0, c->tsc1, c->mono1, raw);
}

static uint64_t exact_dur(const gs_calib *c, uint64_t raw)
{
    return gs_live_dur(1, c->tsc0, c->mono0, c->tsc1, c->mono1, raw);
}

/* A segment of `ticks` ticks at `ghz` ticks per ns (as a ratio num/den). */
static void segment(gs_calib *c, uint64_t tsc0, uint64_t mono0, uint64_t ticks, uint64_t num,
                    uint64_t den)
{
    c->tsc0 = tsc0;
    c->mono0 = mono0;
    c->tsc1 = tsc0 + ticks;
    c->mono1 = mono0 + (uint64_t)((unsigned __int128)ticks * den / num);
    derive_mult(c);
}

static void test_fast_path_within_a_nanosecond(void)
{
    /* TSC rates from 0.5 to 5 GHz, segments of 1 ms to 10 s */
    static const uint64_t rate[][2] = {{1, 2}, {1, 1}, {2, 1}, {2400, 1000}, {2994, 1000},
                                       {3700, 1000}, {5, 1}};
    size_t bad = 0, fast = 0, not_monotonic = 0, dur_bad = 0;
    for (size_t k = 0; k < sizeof rate / sizeof rate[0]; k++) {
        for (int s = 0; s < 40; s++) {
            gs_calib c;
            segment(&c, rnd() >> 2, rnd() >> 4, 1000000 + rnd() % 30000000000ull, rate[k][0],
                    rate[k][1]);
            ASSERT_TRUE(c.mult != 0);
            uint64_t prev = 0;
            for (int i = 0; i < 2000; i++) {
                /* sorted stamps across and beyond the fast range */
                const uint64_t raw = c.tsc0 + (uint64_t)i * ((1ull << 33) / 2000) + rnd() % 1000;
                const uint64_t got = gs_calib_ts(&c, raw), want = exact_ts(&c, raw);
                fast += raw - c.tsc0 < (1ull << 32);
                bad += got > want || want - got > 1;
                not_monotonic += got < prev;
                prev = got;
                /* and one far after the segment (up to 2^44 ticks: hours) */
                const uint64_t far = c.tsc0 + rnd() % (1ull << 44);
                const uint64_t gf = gs_calib_ts(&c, far), wf = exact_ts(&c, far);
                bad += gf > wf || wf - gf > 1;
                const uint64_t d = rnd() % (1ull << (rnd() % 44));
                const uint64_t gd = gs_calib_dur(&c, d), wd = exact_dur(&c, d);
                dur_bad += gd > wd || wd - gd > 1;
            }
        }
    }
    ASSERT_TRUE(fast > 1000);
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(not_monotonic, 0);
    ASSERT_EQ(dur_bad, 0);
}

static void test_exact_outside_the_range(void)
{
    gs_calib c;
    segment(&c, 1ull << 40, 5000000000000ull, 600000000, 3, 1);
    /* before the segment, 2^32 ticks after, and a long duration: exact */
    const uint64_t before = c.tsc0 - 123456789, after = c.tsc0 + (1ull << 32) + 5;
    ASSERT_EQ(gs_calib_ts(&c, before), exact_ts(&c, before));
    ASSERT_EQ(gs_calib_ts(&c, after), exact_ts(&c, after));
    ASSERT_EQ(gs_calib_ts(&c, UINT64_MAX), exact_ts(&c, UINT64_MAX));
    ASSERT_EQ(gs_calib_ts(&c, c.tsc0 + (3ull << 40) + 7), exact_ts(&c, c.tsc0 + (3ull << 40) + 7));
    ASSERT_EQ(gs_calib_dur(&c, (3ull << 40) + 7), exact_dur(&c, (3ull << 40) + 7));
    ASSERT_EQ(gs_calib_dur(&c, 1ull << 40), exact_dur(&c, 1ull << 40));
    /* the segment's own ends are exact */
    ASSERT_EQ(gs_calib_ts(&c, c.tsc0), c.mono0);
    /* no segment yet (tsc1 == tsc0): no multiplier, the exact rules */
    c.tsc1 = c.tsc0;
    derive_mult(&c);
    ASSERT_EQ(c.mult, 0);
    ASSERT_EQ(gs_calib_ts(&c, c.tsc0 + 10), exact_ts(&c, c.tsc0 + 10));
    ASSERT_EQ(gs_calib_dur(&c, 10), 0);
    /* a rate too large for 32.32 fixed point (1 tick = 2^33 ns): exact */
    segment(&c, 1000, 1000, 4, 1, 1ull << 33);
    ASSERT_EQ(c.mult, 0);
    ASSERT_EQ(gs_calib_ts(&c, 1002), exact_ts(&c, 1002));
}

static void test_mono_clock_passes_through(void)
{
    gs_clock_tsc = 0;
    gs_calib c;
    segment(&c, 1000, 2000, 1000000, 3, 1);
    ASSERT_EQ(c.mult, 0);
    ASSERT_EQ(gs_calib_ts(&c, 123456789), 123456789);
    ASSERT_EQ(gs_calib_dur(&c, 4242), 4242);
    gs_clock_tsc = 1;
}

int main(void)
{
    gs_clock_tsc = 1; /* the conversions under test (the machine's own clock is not used) */
    test_fast_path_within_a_nanosecond();
    test_exact_outside_the_range();
    test_mono_clock_passes_through();
    return gs_check_done("test_clock");
}
