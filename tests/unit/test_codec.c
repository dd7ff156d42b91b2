/* test_codec.c — the record codec and the file reader: round trips of every
 * kind, delta rules at their edges, truncation at and inside every frame,
 * damaged bytes, version and magic checks. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "gs_check.h"
#include "gs_runcols.h"
#include "gs_trace.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void random_event(gs_event *ev, unsigned kind, uint64_t *ts)
{
    gs_event_clear(ev);
    const unsigned f = gs_kind_fields(kind);
    ev->kind = (uint16_t)kind;
    *ts += rnd() % 100000;
    if (f & GS_F_TS)
        ev->ts = (rnd() % 8 == 0) ? *ts - rnd() % 50000 : *ts; /* some go backwards */
    if (f & GS_F_DUR)
        ev->dur = rnd() % 4 == 0 ? rnd() : rnd() % 5000;
    if (f & GS_F_FD)
        ev->fd = (int32_t)(rnd() % 2000) - 100;
    if (f & GS_F_FDKIND)
        ev->fd_kind = (uint8_t)(rnd() % 6);
    if (f & GS_F_STR)
        ev->str = (uint32_t)(rnd() % 50);
    if (f & GS_F_BYTES)
        ev->bytes = rnd() % 3 == 0 ? rnd() : 4096;
    if (f & GS_F_RET)
        ev->ret = rnd() % 3 == 0 ? (int64_t)rnd() : (rnd() % 2 ? 4096 : -1);
    if (f & GS_F_OFFSET)
        ev->offset = rnd() % 5 == 0 ? -1 : (int64_t)(rnd() >> 1);
    if (f & GS_F_AUX)
        ev->aux = rnd() % 2 ? rnd() : 0;
    if (f & GS_F_AUX2)
        ev->aux2 = rnd() % 2 ? rnd() : 7;
    if (f & GS_F_DEV)
        ev->dev = (uint32_t)(rnd() % 8);
    if (f & GS_F_STREAM)
        ev->stream = rnd() % 2 ? rnd() : 7;
    if (f & GS_F_CORR)
        ev->corr = rnd() % 100000;
}

static int same(const gs_event *a, const gs_event *b)
{
    return a->kind == b->kind && a->fd_kind == b->fd_kind && a->fd == b->fd && a->str == b->str &&
           a->ts == b->ts && a->dur == b->dur && a->bytes == b->bytes && a->ret == b->ret &&
           a->offset == b->offset && a->aux == b->aux && a->aux2 == b->aux2 && a->tid == b->tid &&
           a->dev == b->dev && a->stream == b->stream && a->corr == b->corr;
}

static unsigned all_kinds[GS_K_MAX];
static unsigned nkinds;

static void test_kind_table(void)
{
    for (unsigned k = 0; k < GS_K_MAX; k++)
        if (gs_kind_known(k) && gs_kind_fields(k))
            all_kinds[nkinds++] = k;
    ASSERT_TRUE(nkinds > 40);
    ASSERT_EQ(gs_kind_by_name("pread64"), GS_K_PREAD64);
    ASSERT_TRUE(strcmp(gs_kind_name(GS_K_READ_CHK), "__read_chk") == 0);
    ASSERT_TRUE(gs_kind_name(200) == NULL);
    ASSERT_EQ(gs_kind_by_name("nosuch"), 0);
    ASSERT_TRUE(strcmp(gs_fdkind_name(GS_FDK_PIPE), "pipe") == 0);
    ASSERT_TRUE(strcmp(gs_fdkind_name(99), "unknown") == 0);
    /* every kind carrying RET or OFFSET also carries TS: decoders rely on a
     * time for every event */
    for (unsigned i = 0; i < nkinds; i++)
        ASSERT_TRUE(gs_kind_fields(all_kinds[i]) & GS_F_TS);
}

static uint8_t raw[GS_FRAME_RAW_MAX];
static gs_event evs_in[20000], evs_out[20000];

static void test_round_trip(void)
{
    gs_encoder e;
    gs_encoder_init(&e, raw, sizeof raw);
    uint64_t ts = 1000000000ull;
    size_t n = 0;
    ASSERT_EQ(gs_encode_tid(&e, 4242), GS_OK);
    ASSERT_EQ(gs_encode_string(&e, 7, "/data/x.bin", 11), GS_OK);
    for (; n < 20000; n++) {
        if (n == 10000)
            ASSERT_EQ(gs_encode_tid(&e, 77), GS_OK);
        random_event(&evs_in[n], all_kinds[rnd() % nkinds], &ts);
        evs_in[n].tid = n < 10000 ? 4242 : 77;
        ASSERT_TRUE(gs_encode_event(&e, &evs_in[n]) == GS_OK || !"encode");
    }
    uint32_t tid = 0;
    struct {
        int calls;
        char s[64];
    } strs = {0, ""};
    long got = gs_decode_frame(raw, e.len, e.nrec, evs_out, 20000, &tid, NULL, NULL);
    ASSERT_EQ(got, 20000);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !same(&evs_in[i], &evs_out[i]);
    ASSERT_EQ(bad, 0);
    (void)strs;
    /* a record count that disagrees with the bytes is corruption */
    ASSERT_TRUE(gs_decode_frame(raw, e.len, e.nrec + 1, evs_out, 20000, &tid, NULL, NULL) < 0);
    ASSERT_TRUE(gs_decode_frame(raw, e.len, e.nrec - 1, evs_out, 20000, &tid, NULL, NULL) < 0);
    ASSERT_TRUE(gs_decode_frame(raw, e.len - 1, e.nrec, evs_out, 20000, &tid, NULL, NULL) < 0);
}

static void test_edges(void)
{
    gs_encoder e;
    uint8_t small[64];
    gs_encoder_init(&e, small, sizeof small);
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_PREAD;
    ev.ts = UINT64_MAX;
    ev.dur = UINT64_MAX;
    ev.fd = INT32_MIN;
    ev.bytes = UINT64_MAX;
    ev.ret = INT64_MIN;
    ev.offset = INT64_MAX;
    /* not enough room for a worst-case record: refused, nothing written */
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_ERR_FULL);
    ASSERT_EQ(e.len, 0);
    gs_encoder_init(&e, raw, sizeof raw);
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    ASSERT_TRUE(e.len <= GS_EVENT_MAX_ENCODED);
    gs_event out;
    uint32_t tid = 0;
    ASSERT_EQ(gs_decode_frame(raw, e.len, 1, &out, 1, &tid, NULL, NULL), 1);
    ASSERT_TRUE(same(&ev, &out));
    /* unknown kinds cannot be encoded and are refused by the decoder */
    ev.kind = 200;
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_ERR_KIND);
    uint8_t bogus[2] = {200, 0};
    ASSERT_EQ(gs_decode_frame(bogus, 2, 1, &out, 1, &tid, NULL, NULL), GS_ERR_KIND);
    /* strings: id 0 and oversize refused */
    ASSERT_EQ(gs_encode_string(&e, 0, "x", 1), GS_ERR_ARG);
    static char big[GS_STRING_MAX + 1];
    ASSERT_EQ(gs_encode_string(&e, 1, big, sizeof big), GS_ERR_ARG);
    /* an over-long varint is corruption, not a crash */
    uint8_t longv[16] = {GS_K_TID, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1};
    ASSERT_EQ(gs_decode_frame(longv, 12, 1, &out, 1, &tid, NULL, NULL), GS_ERR_CORRUPT);
    /* sequential preads: offset deltas are zero, so records stay tiny */
    gs_encoder_init(&e, raw, sizeof raw);
    for (int i = 0; i < 1000; i++) {
        gs_event_clear(&ev);
        ev.kind = GS_K_PREAD64;
        ev.ts = 5000000 + (uint64_t)i * 1500;
        ev.dur = 700;
        ev.fd = 3;
        ev.fd_kind = GS_FDK_FILE;
        ev.str = 1;
        ev.bytes = 4096;
        ev.ret = 4096;
        ev.offset = (int64_t)i * 4096;
        gs_encode_event(&e, &ev);
    }
    /* kind, ts(2), dur(2), fd, fdkind, str, bytes(2), ret, offset = 12 */
    ASSERT_TRUE(e.len <= 12 * 1000 + 16);
}

/* Varints of every length (1 to 10 bytes) and malformed ones, each as the
 * TID record of a frame ending right after it, or padded with 8 more
 * bytes: the PEXT decoder (where the CPU has one) and the portable one give
 * the same value, the same length or the same error. */
static long decode_tid(const uint8_t *buf, size_t len, uint32_t nrec, uint32_t *tid, int portable)
{
    gs_decode_portable(portable);
    gs_event out[2];
    *tid = 0;
    const long r = gs_decode_frame(buf, len, nrec, out, 2, tid, NULL, NULL);
    gs_decode_portable(0);
    return r;
}

static void test_varints(void)
{
    uint8_t buf[32];
    int checked = 0;
    for (unsigned len = 1; len <= 11; len++) {
        for (int trial = 0; trial < 200; trial++) {
            /* len - 1 bytes with the continuation bit, then one without */
            memset(buf, 0xaa, sizeof buf);
            buf[0] = GS_K_TID;
            for (unsigned i = 0; i < len; i++)
                buf[1 + i] = (uint8_t)((rnd() & 0x7f) | (i + 1 < len ? 0x80 : 0));
            if (trial == 0)
                for (unsigned i = 0; i < len; i++)
                    buf[1 + i] = i + 1 < len ? 0xff : 0x7f; /* the largest */
            if (trial == 1)
                for (unsigned i = 0; i < len; i++)
                    buf[1 + i] = i + 1 < len ? 0x80 : 0x00; /* zeros, over-long */
            for (int pad = 0; pad <= 8; pad += 8) {
                /* frames of one record (the varint, then pad bytes that make
                 * it corrupt: bytes left over) and the varint cut short */
                for (size_t cut = 0; cut <= 1; cut++) {
                    const size_t n = 1 + len + (size_t)pad - cut;
                    uint32_t t1, t2;
                    const long a = decode_tid(buf, n, 1, &t1, 0);
                    const long b = decode_tid(buf, n, 1, &t2, 1);
                    ASSERT_EQ(a, b);
                    if (a >= 0)
                        ASSERT_EQ(t1, t2);
                    checked++;
                }
                if (pad == 0 && len <= 5) {
                    /* a value that fits 32 bits decodes: the PEXT decoder
                     * read 8 bytes only where they are in the frame */
                    uint32_t t1;
                    uint64_t v = 0;
                    for (unsigned i = 0; i < len; i++)
                        v |= (uint64_t)(buf[1 + i] & 0x7f) << (7 * i);
                    if (v <= UINT32_MAX) {
                        ASSERT_EQ(decode_tid(buf, 1 + len, 1, &t1, 0), 0);
                        ASSERT_EQ(t1, (uint32_t)v);
                    }
                }
            }
        }
    }
    ASSERT_TRUE(checked > 4000);
    /* the same varints as a marker's time, with the frame's end right after
     * the record (read with checks) or 200 bytes of TID records after it
     * (read without: no varint of the record can reach the end) */
    ASSERT_EQ(gs_kind_fields(GS_K_STEP_BEGIN), GS_F_TS | GS_F_AUX | GS_F_AUX2);
    static uint8_t fr[400];
    int agreed = 0;
    for (unsigned len = 1; len <= 11; len++) {
        for (int trial = 0; trial < 100; trial++) {
            size_t n = 0;
            fr[n++] = GS_K_STEP_BEGIN;
            for (unsigned i = 0; i < len; i++)
                fr[n++] = (uint8_t)((trial == 0 ? 0x7f : trial == 1 ? 0 : rnd() & 0x7f) |
                                    (i + 1 < len ? 0x80 : 0));
            fr[n++] = 3; /* aux */
            fr[n++] = 4; /* aux2 */
            const size_t rec = n;
            for (int k = 0; k < 100; k++) {
                fr[n++] = GS_K_TID;
                fr[n++] = 5;
            }
            for (int portable = 0; portable <= 1; portable++) {
                gs_event a, b[2];
                uint32_t tid = 0;
                gs_decode_portable(portable);
                const long ra = gs_decode_frame(fr, rec, 1, &a, 1, &tid, NULL, NULL);
                const long rb = gs_decode_frame(fr, n, 101, b, 2, &tid, NULL, NULL);
                gs_decode_portable(0);
                ASSERT_EQ(ra, rb);
                ASSERT_EQ(ra, len <= 9 || (len == 10 && fr[10] <= 1) ? 1 : GS_ERR_CORRUPT);
                if (ra == 1 && rb == 1) {
                    ASSERT_TRUE(same(&a, &b[0]));
                    ASSERT_EQ(a.aux, 3);
                    ASSERT_EQ(a.aux2, 4);
                }
                agreed++;
            }
        }
    }
    ASSERT_EQ(agreed, 2200);
    /* the fields of random events, long and short, through both decoders */
    gs_encoder e;
    gs_encoder_init(&e, raw, sizeof raw);
    uint64_t ts = 1000000000ull;
    ASSERT_EQ(gs_encode_tid(&e, 5), GS_OK);
    for (size_t n = 0; n < 5000; n++) {
        random_event(&evs_in[n], all_kinds[rnd() % nkinds], &ts);
        evs_in[n].tid = 5;
        ASSERT_EQ(gs_encode_event(&e, &evs_in[n]), GS_OK);
    }
    for (int portable = 0; portable <= 1; portable++) {
        uint32_t tid = 0;
        gs_decode_portable(portable);
        if (portable)
            ASSERT_EQ(gs_decode_uses_pext(), 0);
        memset(evs_out, 0, 5000 * sizeof evs_out[0]);
        ASSERT_EQ(gs_decode_frame(raw, e.len, e.nrec, evs_out, 20000, &tid, NULL, NULL), 5000);
        size_t bad = 0;
        for (size_t i = 0; i < 5000; i++)
            bad += !same(&evs_in[i], &evs_out[i]);
        ASSERT_EQ(bad, 0);
    }
    gs_decode_portable(0);
}

/* A pread like the loop of bench/pread_loop makes: call i of a sequential
 * reader of fd 3. */
static void seq_pread(gs_event *ev, int i, uint32_t tid)
{
    gs_event_clear(ev);
    ev->kind = GS_K_PREAD;
    ev->tid = tid;
    ev->ts = 5000000 + (uint64_t)i * 1500 + (uint64_t)(rnd() % 300);
    ev->dur = 600 + rnd() % 900;
    ev->fd = 3;
    ev->fd_kind = GS_FDK_FILE;
    ev->str = 1;
    ev->bytes = 4096;
    ev->ret = 4096;
    ev->offset = (int64_t)i * 4096;
}

/* Decode a frame in pieces of `step` events: the REPEAT state crosses
 * gs_decode_some calls. Returns the events or a negative gs_err. */
static long decode_in_steps(const uint8_t *buf, size_t len, uint32_t nrec, size_t step)
{
    gs_decoder d;
    gs_decoder_init(&d, buf, len, nrec);
    uint32_t tid = 0;
    size_t n = 0;
    while (d.left > 0) {
        const long got = gs_decode_some(&d, evs_out + n, step, &tid, NULL, NULL, NULL);
        if (got < 0)
            return got;
        n += (size_t)got;
    }
    return (long)n;
}

static void test_repeat(void)
{
    gs_encoder e;
    gs_event ev, out[4];
    uint32_t tid = 0;
    /* sequential preads of one thread: one full record, then REPEATs of
     * kind, gap and dur only (at most 1 + 2 + 2 bytes here) */
    gs_encoder_init(&e, raw, sizeof raw);
    ASSERT_EQ(gs_encode_tid(&e, 9), GS_OK);
    size_t n = 0;
    for (int i = 0; i < 1000; i++, n++) {
        seq_pread(&evs_in[n], i, 9);
        ASSERT_EQ(gs_encode_event(&e, &evs_in[n]), GS_OK);
    }
    ASSERT_TRUE(e.len <= 2 + 12 + 999 * 5);
    /* then another thread (a TID ends what a REPEAT may repeat), a read at
     * another offset (a full record), calls with a stack (never repeated),
     * a failed call, and a marker (no duration: nothing to repeat) */
    ASSERT_EQ(gs_encode_tid(&e, 10), GS_OK);
    for (int i = 0; i < 300; i++, n++) {
        seq_pread(&evs_in[n], i, 10);
        if (i == 50)
            evs_in[n].offset = 1 << 30;
        if (i >= 100 && i < 110) {
            evs_in[n].stack = 3;
            evs_in[n].stack_weight = 64;
        }
        if (i == 200)
            evs_in[n].ret = -1;
        if (i == 250) {
            gs_event_clear(&evs_in[n]);
            evs_in[n].kind = GS_K_STEP_BEGIN;
            evs_in[n].tid = 10;
            evs_in[n].ts = 9000000;
            evs_in[n].aux = 4;
        }
        ASSERT_EQ(gs_encode_event(&e, &evs_in[n]), GS_OK);
    }
    const size_t steps[] = {20000, 1, 7, 999};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec, steps[k]), (long)n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !same(&evs_in[i], &evs_out[i]) || evs_in[i].stack != evs_out[i].stack ||
                   (evs_in[i].stack && evs_in[i].stack_weight != evs_out[i].stack_weight);
        ASSERT_EQ(bad, 0);
    }
    /* the same events with every other one repeated under other fields:
     * random kinds round-trip exactly, repeats or not */
    gs_encoder_init(&e, raw, sizeof raw);
    uint64_t ts = 1000000;
    for (n = 0; n < 10000; n++) {
        if (n % 2 && gs_kind_fields(evs_in[n - 1].kind) & GS_F_DUR) {
            evs_in[n] = evs_in[n - 1];
            evs_in[n].ts += evs_in[n].dur + rnd() % 3000;
            evs_in[n].dur = rnd() % 2000;
            if (evs_in[n].offset >= 0 && evs_in[n].ret > 0 &&
                evs_in[n].offset <= INT64_MAX - evs_in[n].ret && rnd() % 2)
                evs_in[n].offset += evs_in[n].ret;
        } else {
            random_event(&evs_in[n], all_kinds[rnd() % nkinds], &ts);
        }
        evs_in[n].tid = 0;
        ASSERT_TRUE(gs_encode_event(&e, &evs_in[n]) == GS_OK || !"encode");
    }
    ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec, 3), (long)n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !same(&evs_in[i], &evs_out[i]);
    ASSERT_EQ(bad, 0);
    /* a REPEAT with nothing before it, after a TID, after a CALLSITE or
     * after an event without a duration is corruption */
    const uint8_t first[] = {GS_K_REPEAT, 2, 100};
    ASSERT_EQ(gs_decode_frame(first, sizeof first, 1, out, 4, &tid, NULL, NULL), GS_ERR_CORRUPT);
    gs_encoder_init(&e, raw, sizeof raw);
    seq_pread(&ev, 0, 0);
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    ASSERT_EQ(gs_encode_tid(&e, 5), GS_OK);
    raw[e.len] = GS_K_REPEAT, raw[e.len + 1] = 2, raw[e.len + 2] = 100;
    ASSERT_EQ(gs_decode_frame(raw, e.len + 3, e.nrec + 1, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    gs_encoder_init(&e, raw, sizeof raw);
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    const uint8_t cs_rep[] = {GS_K_CALLSITE, 1, 1, GS_K_REPEAT, 2, 100};
    memcpy(raw + e.len, cs_rep, sizeof cs_rep);
    ASSERT_EQ(gs_decode_frame(raw, e.len + sizeof cs_rep, e.nrec + 2, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    gs_encoder_init(&e, raw, sizeof raw);
    gs_event_clear(&ev);
    ev.kind = GS_K_STEP_END;
    ev.ts = 77;
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    ev.ts = 78;
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK); /* written in full */
    ASSERT_EQ(gs_decode_frame(raw, e.len, e.nrec, out, 4, &tid, NULL, NULL), 2);
    ASSERT_EQ(out[1].ts, 78);
    raw[e.len] = GS_K_REPEAT, raw[e.len + 1] = 2, raw[e.len + 2] = 100;
    ASSERT_EQ(gs_decode_frame(raw, e.len + 3, e.nrec + 1, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
}

/* Encode events[from..to) (all repeats of the one before from) as one
 * gs_encode_repeats call. */
static void put_run(gs_encoder *e, const gs_event *evs, size_t from, size_t to)
{
    static uint64_t ts[20000], dur[20000];
    for (size_t i = from; i < to; i++)
        ts[i - from] = evs[i].ts, dur[i - from] = evs[i].dur;
    ASSERT_EQ(gs_encode_repeats(e, ts, dur, to - from), to - from);
}

static void test_repeats(void)
{
    gs_encoder e;
    gs_event out[4];
    uint32_t tid = 0;
    /* runs of 1 (a REPEAT), 2, 3, 777 and 4000 sequential preads, each
     * after a full record (a read at another offset, a failed call, another
     * thread); a run may also follow a run */
    gs_encoder_init(&e, raw, sizeof raw);
    ASSERT_EQ(gs_encode_tid(&e, 9), GS_OK);
    const size_t runs[] = {1, 2, 3, 777, 4000, 5, 60};
    size_t n = 0;
    int64_t off = 0;
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        const uint32_t t = k < 4 ? 9 : 11;
        if (k == 4)
            ASSERT_EQ(gs_encode_tid(&e, 11), GS_OK);
        seq_pread(&evs_in[n], (int)n, t);
        evs_in[n].offset = off = (int64_t)k << 30;
        if (k == 2)
            evs_in[n].ret = -1; /* a failed call: its repeats keep the offset */
        ASSERT_EQ(gs_encode_event(&e, &evs_in[n]), GS_OK);
        n++;
        const size_t from = n;
        for (size_t i = 0; i < runs[k]; i++, n++) {
            seq_pread(&evs_in[n], (int)n, t);
            evs_in[n].ret = evs_in[n - 1].ret;
            if (evs_in[n - 1].ret > 0)
                off += evs_in[n - 1].ret;
            evs_in[n].offset = off;
        }
        if (k == 5) { /* a run right after a run */
            put_run(&e, evs_in, from, from + 2);
            put_run(&e, evs_in, from + 2, n);
        } else {
            put_run(&e, evs_in, from, n);
        }
    }
    /* 4000 repeats in 2 to 4 bytes each, plus a record and a count */
    ASSERT_TRUE(e.len < 20 * 7 + 4 * (n - 7));
    const size_t steps[] = {20000, 1, 7, 999, 2};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec, steps[s]), (long)n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !same(&evs_in[i], &evs_out[i]) || evs_out[i].stack != 0;
        ASSERT_EQ(bad, 0);
    }
    /* the same events one at a time (REPEAT records): as many records, in
     * more bytes */
    gs_encoder e2;
    static uint8_t raw2[1 << 20];
    gs_encoder_init(&e2, raw2, sizeof raw2);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || evs_out[i].tid != evs_out[i - 1].tid)
            ASSERT_EQ(gs_encode_tid(&e2, evs_out[i].tid), GS_OK);
        ASSERT_EQ(gs_encode_event(&e2, &evs_out[i]), GS_OK);
    }
    ASSERT_EQ(e2.nrec, e.nrec);
    ASSERT_TRUE(e.len < e2.len);

    /* every truncation of the frame, and every record count but the right
     * one, is corruption, never a crash */
    size_t caught = 0, cuts = 0;
    for (size_t len = 0; len < e.len; len += (len < 200 || len > e.len - 200) ? 1 : 37, cuts++)
        caught += decode_in_steps(raw, len, e.nrec, 64) < 0;
    ASSERT_EQ(caught, cuts);
    ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec + 1, 64), GS_ERR_CORRUPT);
    ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec - 1, 64), GS_ERR_CORRUPT);
    ASSERT_EQ(decode_in_steps(raw, e.len, e.nrec - 3000, 64), GS_ERR_CORRUPT);
    /* flipped bits: an error or other events, never a crash or a read past
     * the frame (test-san runs this under AddressSanitizer) */
    static uint8_t flip[1 << 20];
    for (size_t pos = 0; pos < e.len; pos += (pos < 300 ? 1 : 53)) {
        memcpy(flip, raw, e.len);
        flip[pos] ^= (uint8_t)(1u << (pos % 8));
        (void)decode_in_steps(flip, e.len, e.nrec, 100);
    }

    /* a REPEATS first in a frame, after a TID, after a CALLSITE, after an
     * event without a duration, or of fewer than 2 events is corruption */
    const uint8_t first[] = {GS_K_REPEATS, 2, 2, 4, 100, 100};
    ASSERT_EQ(gs_decode_frame(first, sizeof first, 2, out, 4, &tid, NULL, NULL), GS_ERR_CORRUPT);
    gs_event ev;
    gs_encoder_init(&e, raw, sizeof raw);
    seq_pread(&ev, 0, 0);
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    const size_t at = e.len;
    memcpy(raw + at, first, sizeof first);
    ASSERT_EQ(gs_decode_frame(raw, at + sizeof first, 3, out, 4, &tid, NULL, NULL), 3);
    ASSERT_EQ(out[2].offset, 8192);
    ASSERT_EQ(out[2].ts, out[1].ts + out[1].dur + 2);
    raw[at + 1] = 1; /* a count of 1: REPEAT's job */
    ASSERT_EQ(gs_decode_frame(raw, at + 4, 2, out, 4, &tid, NULL, NULL), GS_ERR_CORRUPT);
    raw[at + 1] = 3; /* more events than the frame's records */
    ASSERT_EQ(gs_decode_frame(raw, at + sizeof first, 3, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    ASSERT_EQ(gs_encode_tid(&e, 5), GS_OK);
    memcpy(raw + e.len, first, sizeof first);
    ASSERT_EQ(gs_decode_frame(raw, e.len + sizeof first, e.nrec + 2, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    gs_encoder_init(&e, raw, sizeof raw);
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    const uint8_t cs_rep[] = {GS_K_CALLSITE, 1, 1, GS_K_REPEATS, 2, 2, 4, 100, 100};
    memcpy(raw + e.len, cs_rep, sizeof cs_rep);
    ASSERT_EQ(gs_decode_frame(raw, e.len + sizeof cs_rep, e.nrec + 3, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    gs_encoder_init(&e, raw, sizeof raw);
    gs_event_clear(&ev);
    ev.kind = GS_K_STEP_END;
    ev.ts = 77;
    ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
    memcpy(raw + e.len, first, sizeof first);
    ASSERT_EQ(gs_decode_frame(raw, e.len + sizeof first, e.nrec + 2, out, 4, &tid, NULL, NULL),
              GS_ERR_CORRUPT);
    /* the encoder: nothing to repeat after a marker (no duration) or a TID;
     * a buffer near full takes what fits */
    uint64_t many[40];
    for (int i = 0; i < 40; i++)
        many[i] = 6000000 + 100 * (uint64_t)i;
    ASSERT_EQ(gs_encode_repeats(&e, many, many, 3), 0);
    uint8_t small[GS_EVENT_MAX_ENCODED + 40];
    gs_encoder_init(&e, small, sizeof small);
    ASSERT_EQ(gs_encode_event(&e, &evs_in[0]), GS_OK);
    ASSERT_EQ(gs_encode_tid(&e, 3), GS_OK);
    ASSERT_EQ(gs_encode_repeats(&e, many, many, 3), 0);
    gs_encoder_init(&e, small, sizeof small);
    ASSERT_EQ(gs_encode_event(&e, &evs_in[0]), GS_OK);
    const size_t put = gs_encode_repeats(&e, many, many, 40);
    ASSERT_TRUE(put >= 2 && put < 40);
    ASSERT_TRUE(e.len <= sizeof small);
    ASSERT_EQ(gs_decode_frame(small, e.len, e.nrec, evs_out, 40, &tid, NULL, NULL),
              (long)(1 + put));
    ASSERT_EQ(evs_out[put].dur, many[put - 1]);
}

/* A run built column by column (gs_runcols.h, what the collector's drain
 * does) is written as gs_encode_repeats writes it: two encoders fed the same
 * runs end byte-identical, with gaps and durations across every varint
 * length, negative gaps, a single event (a REPEAT record) and a run after a
 * run; gs_encode_repeats_cols takes no more than gs_encode_repeats_room. */
static void test_repeats_cols(void)
{
    static uint8_t ra[1 << 16], rb[1 << 16];
    static uint8_t gaps[500 * GS_RUNCOLS_MAX_VARINT + 1], durs[500 * GS_RUNCOLS_MAX_VARINT + 1];
    static const uint64_t vals[] = {0,     1,     63,      64,        127,       128,
                                    8191,  8192,  16383,   16384,     1u << 20,  1ull << 40,
                                    3000,  700,   (1u << 21) - 1, 1u << 28, 99, 12345};
    const size_t nv = sizeof vals / sizeof vals[0];
    gs_encoder a, b;
    gs_encoder_init(&a, ra, sizeof ra);
    gs_encoder_init(&b, rb, sizeof rb);
    ASSERT_EQ(gs_encode_tid(&a, 5), GS_OK);
    ASSERT_EQ(gs_encode_tid(&b, 5), GS_OK);
    ASSERT_EQ(gs_encode_repeats_room(&b), 0); /* nothing to repeat after a TID */
    gs_runcols c;
    gs_runcols_start(&c, gaps, durs, b.prev_end);
    gs_runcols_add(&c, 1, 1);
    ASSERT_EQ(gs_encode_repeats_cols(&b, &c, 1), 0);
    ASSERT_EQ(b.len, a.len);
    gs_event ev;
    seq_pread(&ev, 0, 5);
    ASSERT_EQ(gs_encode_event(&a, &ev), GS_OK);
    ASSERT_EQ(gs_encode_event(&b, &ev), GS_OK);
    const size_t runs[] = {1, 2, 3, 500, 1, 40};
    uint64_t rts[500], rdur[500], end = ev.ts + ev.dur;
    size_t total = 1, v = 0;
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        for (size_t i = 0; i < runs[k]; i++, v++) {
            const uint64_t gap = vals[v % nv], dur = vals[(v * 7 + 3) % nv];
            /* every third gap negative (a call starting before the last ended) */
            rts[i] = v % 3 == 2 && gap < end ? end - gap : end + gap;
            rdur[i] = dur;
            end = rts[i] + dur;
        }
        ASSERT_EQ(gs_encode_repeats(&a, rts, rdur, runs[k]), runs[k]);
        gs_runcols_start(&c, gaps, durs, b.prev_end);
        for (size_t i = 0; i < runs[k]; i++)
            gs_runcols_add(&c, rts[i], rdur[i]);
        ASSERT_EQ(gs_encode_repeats_cols(&b, &c, runs[k]), runs[k]);
        ASSERT_EQ(b.len, a.len);
        ASSERT_EQ(memcmp(ra, rb, a.len), 0);
        ASSERT_EQ(b.nrec, a.nrec);
        ASSERT_EQ(b.prev_ts, a.prev_ts);
        ASSERT_EQ(b.prev_end, a.prev_end);
        ASSERT_EQ(b.next_off, a.next_off);
        total += runs[k];
    }
    uint32_t tid = 0;
    ASSERT_EQ(gs_decode_frame(rb, b.len, b.nrec, evs_out, 600, &tid, NULL, NULL), (long)total);
    ASSERT_EQ(evs_out[total - 1].ts, rts[39]);
    ASSERT_EQ(evs_out[total - 1].dur, rdur[39]);
    ASSERT_EQ(evs_out[total - 1].offset, (int64_t)(total - 1) * 4096);
    /* a frame near full: the room is what gs_encode_repeats would take */
    uint8_t small[GS_EVENT_MAX_ENCODED + 80];
    gs_encoder_init(&a, small, sizeof small);
    ASSERT_EQ(gs_encode_event(&a, &ev), GS_OK);
    const size_t room = gs_encode_repeats_room(&a);
    ASSERT_TRUE(room >= 1 && room < 40);
    uint64_t big[40];
    for (int i = 0; i < 40; i++)
        big[i] = (1ull << 62) + (uint64_t)i;
    gs_runcols_start(&c, gaps, durs, a.prev_end);
    for (size_t i = 0; i <= room; i++)
        gs_runcols_add(&c, big[i], big[i]);
    const size_t len = a.len;
    ASSERT_EQ(gs_encode_repeats_cols(&a, &c, room + 1), 0);
    ASSERT_EQ(a.len, len);
    gs_runcols_start(&c, gaps, durs, a.prev_end);
    for (size_t i = 0; i < room; i++)
        gs_runcols_add(&c, big[i], big[i]);
    ASSERT_EQ(gs_encode_repeats_cols(&a, &c, room), room);
    ASSERT_TRUE(a.len <= sizeof small);
    ASSERT_TRUE(gs_encode_repeats_room(&a) < room);
    ASSERT_EQ(gs_decode_frame(small, a.len, a.nrec, evs_out, 40, &tid, NULL, NULL),
              (long)(1 + room));
    ASSERT_EQ(evs_out[room].dur, big[room - 1]);
    gs_encoder_init(&b, small, sizeof small);
    ASSERT_EQ(gs_encode_event(&b, &ev), GS_OK);
    ASSERT_EQ(gs_encode_repeats(&b, big, big, 40), room);
}

/* ---- files ------------------------------------------------------------- */

static char tmpdir[] = "/tmp/gs_codec_XXXXXX";

static size_t write_header(int fd, uint16_t major)
{
    uint8_t buf[1024];
    const char argv[] = "python\0train.py\0";
    gs_proc_info pi = {.pid = 1234, .ppid = 1, .mono_ns = 5, .real_ns = 6, .rank = 3,
                       .local_rank = -1, .world_size = 8, .host = "node7", .argc = 2,
                       .argv = argv, .argv_len = sizeof argv - 1};
    long n = gs_header_build(buf, sizeof buf, &pi);
    ASSERT_TRUE(n > 0);
    if (major != GS_VERSION_MAJOR)
        ((gs_file_header *)buf)->version_major = major;
    ASSERT_EQ(write(fd, buf, (size_t)n), n);
    return (size_t)n;
}

/* Writes a file of nframes frames of 551 events each (500 random preads,
 * then one and a run of 50 repeats of it); returns the offsets of
 * the frame boundaries in bounds[0..nframes]. */
static int store_frames; /* write_trace stores its frames (gs_frame_store) */

static void write_trace(const char *path, int nframes, size_t *bounds, uint16_t major)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_TRUE(fd >= 0);
    rng_state = 0x2545f4914f6cdd1dull; /* same bytes every time */
    size_t off = write_header(fd, major);
    bounds[0] = off;
    void *cctx = gs_frame_cctx_new(3);
    ASSERT_TRUE(cctx != NULL);
    static uint8_t out[1 << 20];
    uint64_t ts = 1;
    for (int f = 0; f < nframes; f++) {
        gs_encoder e;
        gs_encoder_init(&e, raw, 1 << 20);
        gs_encode_tid(&e, (uint32_t)(100 + f));
        char s[32];
        int sl = snprintf(s, sizeof s, "/data/%d", f);
        gs_encode_string(&e, (uint32_t)(f + 1), s, (size_t)sl);
        for (int i = 0; i < 500; i++) {
            gs_event ev;
            random_event(&ev, GS_K_PREAD, &ts);
            ev.str = (uint32_t)(f + 1);
            gs_encode_event(&e, &ev);
        }
        /* and a sequential reader's run (a REPEATS record) */
        gs_event ev;
        seq_pread(&ev, 0, 0);
        ev.ts = ts;
        ASSERT_EQ(gs_encode_event(&e, &ev), GS_OK);
        uint64_t rts[50], rdur[50];
        for (int i = 0; i < 50; i++)
            rts[i] = ts + 2000 * (uint64_t)(i + 1), rdur[i] = 500 + rnd() % 900;
        ASSERT_EQ(gs_encode_repeats(&e, rts, rdur, 50), 50);
        long n = store_frames ? gs_frame_store(raw, e.len, e.nrec, out, sizeof out) :
                                gs_frame_compress(cctx, raw, e.len, e.nrec, out, sizeof out);
        ASSERT_TRUE(n > 0);
        ASSERT_EQ(write(fd, out, (size_t)n), n);
        off += (size_t)n;
        bounds[f + 1] = off;
    }
    gs_frame_cctx_free(cctx);
    close(fd);
}

/* Reads a file to its end; returns frames read and the final status. */
static uint64_t events_hash;
static int read_all(const char *path, int *frames, size_t *events, int *status, uint64_t *unread)
{
    events_hash = 1469598103934665603ull;
    gs_reader *r;
    int err = gs_reader_open(&r, path);
    if (err < 0)
        return err;
    *frames = 0;
    *events = 0;
    const gs_event *ev;
    size_t n;
    while ((*status = gs_reader_next_frame(r, &ev, &n)) == 1) {
        if (gs_reader_recovering(r)) {
            /* the reader's closing records: a damaged file's DROPS says
             * how many records its damaged frames held */
            for (size_t i = 0; i < n; i++)
                ASSERT_TRUE(ev[i].kind == GS_K_DROPS && ev[i].aux2 > 0);
            continue;
        }
        (*frames)++;
        *events += n;
        const uint8_t *p = (const uint8_t *)ev;
        for (size_t i = 0; i < n * sizeof *ev; i++)
            events_hash = (events_hash ^ p[i]) * 1099511628211ull;
        for (size_t i = 0; i < n; i++)
            if (ev[i].str && !gs_reader_string(r, ev[i].str))
                *status = -100; /* string used before definition */
        if (*status < 0)
            break;
    }
    *unread = gs_reader_unread(r);
    const gs_proc_info *pi = gs_reader_info(r);
    ASSERT_EQ(pi->pid, 1234);
    ASSERT_TRUE(strcmp(pi->host, "node7") == 0);
    ASSERT_EQ(pi->argc, 2);
    ASSERT_TRUE(strcmp(pi->argv + strlen(pi->argv) + 1, "train.py") == 0);
    ASSERT_EQ(pi->rank, 3);
    ASSERT_EQ(pi->local_rank, -1);
    gs_reader_close(r);
    return GS_OK;
}

/* Events of a file read in batches equal those read a frame at a time. */
static void test_batches(const char *path, size_t want_events)
{
    gs_reader *a, *b;
    ASSERT_EQ(gs_reader_open(&a, path), GS_OK);
    ASSERT_EQ(gs_reader_open(&b, path), GS_OK);
    static gs_event whole[4000];
    size_t nw = 0, nb = 0, batches = 0, bad = 0;
    const gs_event *ev;
    size_t n;
    while (gs_reader_next_frame(a, &ev, &n) == 1)
        for (size_t i = 0; i < n && nw < 4000; i++)
            whole[nw++] = ev[i];
    int rc;
    while ((rc = gs_reader_next_batch(b, &ev, &n)) == 1) {
        batches++;
        ASSERT_TRUE(n <= GS_READ_BATCH);
        for (size_t i = 0; i < n; i++, nb++)
            bad += nb >= nw || !same(&ev[i], &whole[nb]) ||
                   (ev[i].str && !gs_reader_string(b, ev[i].str));
    }
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(nw, want_events);
    ASSERT_EQ(nb, nw);
    ASSERT_EQ(bad, 0);
    ASSERT_TRUE(batches > 1);
    ASSERT_EQ(gs_reader_unread(b), 0);
    gs_reader_close(a);
    gs_reader_close(b);
}

/* Stored frames (zstd raw blocks with a checksum) decompress with libzstd
 * to exactly their bytes, at every size around the 128 KiB block; a flipped
 * byte of the content fails zstd's checksum. */
static void test_frame_store(void)
{
    static uint8_t src[300000], out[300200], back[300000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(rnd() >> 13);
    const size_t lens[] = {0, 1, 3, 4, 7, 8, 31, 32, 33, 100, 4096, 131071, 131072, 131073,
                           262144, 262145, sizeof src};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        const size_t len = lens[k];
        long n = gs_frame_store(src, len, 7, out, sizeof out);
        ASSERT_TRUE(n > 0 && (size_t)n <= gs_frame_bound(len));
        gs_frame_header fh;
        memcpy(&fh, out, sizeof fh);
        ASSERT_EQ(fh.magic, GS_FRAME_MAGIC);
        ASSERT_EQ(fh.comp_size, (uint32_t)n - sizeof fh);
        ASSERT_EQ(fh.raw_size, (uint32_t)len);
        ASSERT_EQ(fh.nrec, 7);
        ASSERT_EQ(ZSTD_getFrameContentSize(out + sizeof fh, fh.comp_size), len);
        size_t got = ZSTD_decompress(back, sizeof back, out + sizeof fh, fh.comp_size);
        ASSERT_TRUE(!ZSTD_isError(got));
        ASSERT_EQ(got, len);
        ASSERT_TRUE(memcmp(back, src, len) == 0);
        if (len > 0) {
            out[sizeof fh + 12 + len / 2] ^= 0x10; /* a byte of the content */
            got = ZSTD_decompress(back, sizeof back, out + sizeof fh, fh.comp_size);
            ASSERT_TRUE(ZSTD_isError(got));
        }
        ASSERT_EQ(gs_frame_store(src, len, 7, out, (size_t)n - 1), GS_ERR_FULL);
    }
}

static void test_files(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/t.gst", tmpdir);
    size_t bounds[6];
    write_trace(path, 5, bounds, GS_VERSION_MAJOR);
    int frames, status;
    size_t events;
    uint64_t unread;
    ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_OK);
    ASSERT_EQ(frames, 5);
    ASSERT_EQ(events, 5 * 551);
    ASSERT_EQ(status, 0);
    ASSERT_EQ(unread, 0);
    test_batches(path, 5 * 551);

    /* truncation at every frame boundary: clean end, whole frames kept */
    for (int b = 0; b <= 5; b++) {
        ASSERT_EQ(truncate(path, (off_t)bounds[b]), 0);
        ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_OK);
        ASSERT_EQ(frames, b);
        ASSERT_EQ(status, 0);
        write_trace(path, 5, bounds, GS_VERSION_MAJOR);
    }
    /* truncation inside frames (header and payload): frames before it kept,
     * GS_ERR_TRUNCATED, unread = bytes of the partial frame */
    for (int b = 0; b < 5; b++) {
        const size_t cuts[] = {bounds[b] + 1, bounds[b] + 15, bounds[b] + 16, bounds[b] + 40,
                               bounds[b + 1] - 1};
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            ASSERT_EQ(truncate(path, (off_t)cuts[c]), 0);
            ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_OK);
            ASSERT_EQ(frames, b);
            ASSERT_EQ(status, GS_ERR_TRUNCATED);
            ASSERT_EQ(unread, cuts[c] - bounds[b]);
            write_trace(path, 5, bounds, GS_VERSION_MAJOR);
        }
    }
    /* truncation inside the file header */
    ASSERT_EQ(truncate(path, 100), 0);
    ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_ERR_TRUNCATED);
    ASSERT_EQ(truncate(path, 3), 0);
    ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_ERR_MAGIC);

    /* a flipped byte in every position of frame 2: never a crash, frames
     * before it always read, the damage always detected */
    write_trace(path, 3, bounds, GS_VERSION_MAJOR);
    ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_OK);
    const uint64_t good_hash = events_hash;
    int detected = 0, tried = 0;
    for (size_t pos = bounds[1]; pos < bounds[2]; pos += 3) {
        int fd = open(path, O_RDWR);
        uint8_t b;
        ASSERT_EQ(pread(fd, &b, 1, (off_t)pos), 1);
        uint8_t x = b ^ 0x5a;
        ASSERT_EQ(pwrite(fd, &x, 1, (off_t)pos), 1);
        ASSERT_EQ(read_all(path, &frames, &events, &status, &unread), GS_OK);
        tried++;
        /* zstd may ignore a flipped padding bit: then the events must be
         * exactly the original ones */
        if ((status < 0 && frames == 1) || (status == 0 && events_hash == good_hash))
            detected++;
        else
            fprintf(stderr, "undetected flip at %zu (frame at %zu): status %d frames %d\n", pos, bounds[1], status, frames);
        ASSERT_EQ(pwrite(fd, &b, 1, (off_t)pos), 1);
        close(fd);
    }
    ASSERT_EQ(detected, tried);

    /* version mismatch and garbage */
    write_trace(path, 1, bounds, GS_VERSION_MAJOR + 1);
    gs_reader *r;
    ASSERT_EQ(gs_reader_open(&r, path), GS_ERR_VERSION);
    ASSERT_TRUE(r == NULL);
    int fd = open(path, O_WRONLY | O_TRUNC);
    ASSERT_EQ(write(fd, "this is not a trace file at all, just some text\n", 48), 48);
    close(fd);
    ASSERT_EQ(gs_reader_open(&r, path), GS_ERR_MAGIC);
    ASSERT_EQ(gs_reader_open(&r, "/nonexistent/file.gst"), GS_ERR_IO);
    unlink(path);
}

int main(void)
{
    ASSERT_TRUE(mkdtemp(tmpdir) != NULL);
    test_kind_table();
    test_round_trip();
    test_edges();
    test_varints();
    test_repeat();
    test_repeats();
    test_repeats_cols();
    /* the same through the decoder without PEXT (where the CPU has one) */
    gs_decode_portable(1);
    test_round_trip();
    test_repeat();
    test_repeats();
    gs_decode_portable(0);
    test_frame_store();
    test_files();
    store_frames = 1; /* the same with every frame stored */
    test_files();
    rmdir(tmpdir);
    return gs_check_done("test_codec");
}
