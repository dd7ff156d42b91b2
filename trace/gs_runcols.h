/* gs_runcols.h — a run of repeated events (a REPEAT or REPEATS record,
 * docs/trace-format.md) built column by column as its events come, so that a
 * writer turning ring records into a run encodes each event in the same pass
 * that checks it, with no array of times in between; and the varint helpers
 * the codec (gs_codec.c) writes with.
 *
 * Responsible for: the bytes of one event of a run: its gap (zigzag varint
 * of its start minus the end of the event before) into the gap column, its
 * duration (varint) into the duration column. gs_encode_repeats_cols
 * (gs_codec.c) puts the two columns into the frame.
 *
 * Must never: write past what its caller reserved (at most
 * GS_RUNCOLS_MAX_VARINT bytes per value and one byte more per column);
 * depend on anything but the C library.
 */
#ifndef GS_RUNCOLS_H
#define GS_RUNCOLS_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the longest varint (64 bits, 7 per byte). */
#define GS_RUNCOLS_MAX_VARINT 10

static inline uint64_t gs_zz_enc(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* LEB128 varint; returns the byte after it. */
static inline uint8_t *gs_put_u(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* gs_put_u for values mostly below 2^14 (a run's gaps and durations): no
 * branch on the length there. It may write one byte past the value, which
 * the caller's room covers. */
static inline uint8_t *gs_put_u14(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v < 0x4000, 1)) {
        const unsigned two = v >= 0x80;
        p[0] = (uint8_t)(v | (uint64_t)two << 7);
        p[1] = (uint8_t)(v >> 7);
        return p + 1 + two;
    }
    return gs_put_u(p, v);
}

/* A run being built: two caller-owned columns of room for n events each of
 * n * GS_RUNCOLS_MAX_VARINT + 1 bytes. */
typedef struct gs_runcols {
    uint8_t *gaps, *durs; /* the columns' first bytes */
    uint8_t *gp, *dp;     /* the next byte of each */
    uint64_t end;         /* ts + dur of the event before (the frame's last, at first) */
    uint64_t last_ts;     /* ts of the last event added */
} gs_runcols;

/* Start a run after an event that ended at prev_end (gs_encoder.prev_end). */
static inline void gs_runcols_start(gs_runcols *c, uint8_t *gaps, uint8_t *durs, uint64_t prev_end)
{
    c->gaps = c->gp = gaps;
    c->durs = c->dp = durs;
    c->end = prev_end;
    c->last_ts = 0;
}

/* The next event of the run: start ts, duration dur (ns). The macro form
 * works on the caller's locals (gp, dp, end, last_ts: a gs_runcols's gp, dp,
 * end and last_ts), which a compiler keeps in registers in a loop where a
 * struct's fields may go through memory. */
#define GS_RUNCOLS_ADD(gp, dp, end, last_ts, ts, dur)                          \
    do {                                                                       \
        const uint64_t ts_ = (ts), dur_ = (dur);                               \
        (gp) = gs_put_u14((gp), gs_zz_enc((int64_t)(ts_ - (end))));            \
        (dp) = gs_put_u14((dp), dur_);                                         \
        (end) = ts_ + dur_;                                                    \
        (last_ts) = ts_;                                                       \
    } while (0)

static inline void gs_runcols_add(gs_runcols *c, uint64_t ts, uint64_t dur)
{
    GS_RUNCOLS_ADD(c->gp, c->dp, c->end, c->last_ts, ts, dur);
}

#endif
