/* test_clock.c — the writer's conversion of hook-clock stamps to
 * CLOCK_MONOTONIC ns (preload/gs_clock.c, gs_calib_ts / gs_calib_dur): the
 * multiply-and-shift path against the exact 128-bit division a reader of
 * a live file uses (gs_live_ts / gs_live_dur), on made-up calibration
 * segments: never above the exact value, at most 1 ns below it, never
 * decreasing as the stamp grows; stamps outside the fast path's range
 * (before the segment, 2^32 ticks or more after it, long durations) take
 * the exact path, or the kept segment they fell in (one stamp, one time in
 * every pass); a segment without a usable rate converts exactly. */
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
    memset(c, 0, sizeof *c); /* no earlier segment kept */
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

/* The writer takes a pair at each pass, after every ring's head: each
 * stamp it drains lies in the latest segment or before it. A stamp gets
 * the same time in every later pass (a call's CPU sample drained in one
 * pass, the call's record with the same tick in a later one), while the
 * rate moves from segment to segment (here up to 1 in 10^4, a clock being
 * slewed); a record that began segments ago ends at its end's own time. */
static void test_one_stamp_one_time_in_every_pass(void)
{
    enum { PASSES = GS_CALIB_KEEP + 60, PER = 4 };
    static uint64_t raw[PASSES][PER], then[PASSES][PER];
    gs_calib c;
    const uint64_t ticks = 600000000; /* 200 ms at 3 GHz */
    segment(&c, 1ull << 40, 5000000000000ull, ticks, 3, 1);
    size_t changed = 0, span_bad = 0, moved = 0;
    for (int k = 0; k < PASSES; k++) {
        /* drained in pass k: stamps of the latest segment, converted now */
        for (int j = 0; j < PER; j++) {
            raw[k][j] = c.tsc0 + rnd() % (c.tsc1 - c.tsc0);
            then[k][j] = gs_calib_ts(&c, raw[k][j]);
        }
        /* what an earlier pass converted converts the same now, within
         * the segments kept; a record begun then ends at its end's time */
        for (int b = k - 1; b >= 0 && b >= k - (GS_CALIB_KEEP - 1); b--) {
            for (int j = 0; j < PER; j++) {
                changed += gs_calib_ts(&c, raw[b][j]) != then[b][j];
                const uint64_t end = c.tsc0 + rnd() % (c.tsc1 - c.tsc0);
                uint64_t ts, dur;
                gs_calib_span(&c, raw[b][j], end - raw[b][j], &ts, &dur);
                span_bad += ts != then[b][j] || ts + dur != gs_calib_ts(&c, end);
            }
        }
        /* the next pass's pair: 200 ms, the rate off by up to 1e-4 */
        const uint64_t t = c.tsc1 + ticks, m = c.mono1 + ticks / 3 - 10000 + rnd() % 20001;
        calib_push(&c, t, m);
        moved += c.tsc1 == t;
    }
    ASSERT_EQ(moved, PASSES);
    ASSERT_EQ(c.nold, GS_CALIB_KEEP);
    ASSERT_EQ(changed, 0);
    ASSERT_EQ(span_bad, 0);
    /* without the kept segments the same stamps would have moved: the
     * test sees the difference it guards against */
    gs_calib bare = c;
    bare.nold = 0;
    size_t differ = 0;
    for (int b = PASSES - 2; b >= PASSES - 40; b--)
        differ += gs_calib_ts(&bare, raw[b][0]) != then[b][0];
    ASSERT_TRUE(differ > 30);
    /* a stamp before every kept segment: the oldest kept converts it */
    const gs_calib_seg *oldest = &c.old[c.at];
    const uint64_t ancient = oldest->tsc0 - 12345;
    ASSERT_EQ(gs_calib_ts(&c, ancient), seg_ts(oldest, ancient));
    /* a pair with no time passed keeps the segments as they were */
    calib_push(&c, c.tsc1, c.mono1 + 5);
    ASSERT_EQ(c.nold, GS_CALIB_KEEP);
    ASSERT_EQ(c.tsc1, c.old[(c.at + GS_CALIB_KEEP - 1) % GS_CALIB_KEEP].tsc1 + ticks);
}

int main(void)
{
    gs_clock_tsc = 1; /* the conversions under test (the machine's own clock is not used) */
    test_fast_path_within_a_nanosecond();
    test_exact_outside_the_range();
    test_mono_clock_passes_through();
    test_one_stamp_one_time_in_every_pass();
    return gs_check_done("test_clock");
}
