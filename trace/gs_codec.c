/* gs_codec.c — the record codec: gs_event <-> the compact varint form inside
 * a raw (decompressed) frame, with the delta rules of docs/trace-format.md.
 *
 * Must never: allocate, read or write past the buffers it is given, or trust
 * a single byte of its input when decoding.
 */
#include <string.h>

#include "gs_runcols.h"
#include "gs_trace.h"

static inline uint64_t zz_enc(int64_t v)
{
    return gs_zz_enc(v);
}

static inline int64_t zz_dec(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline uint8_t *put_u(uint8_t *p, uint64_t v)
{
    return gs_put_u(p, v);
}

/* gs_put_u14 (gs_runcols.h): a run's gaps and durations */
static inline uint8_t *put_u14(uint8_t *p, uint64_t v)
{
    return gs_put_u14(p, v);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define GS_HAVE_PEXT 1
/* PEXT (BMI2) by inline assembly, so that the code around it needs no
 * target attribute and only the decoder chosen at run time executes it. */
static inline uint64_t pext64(uint64_t x, uint64_t mask)
{
    uint64_t r;
    __asm__("pextq %2, %1, %0" : "=r"(r) : "r"(x), "r"(mask));
    return r;
}
#else
#define GS_HAVE_PEXT 0
static inline uint64_t pext64(uint64_t x, uint64_t mask)
{
    (void)mask;
    return x; /* never called: use_pext() is 0 without GS_HAVE_PEXT */
}
#endif

/* What get_u may read from p on: 10 bytes at most, or one 8-byte load. */
#define VARINT_ROOM 10

/* Returns the number of bytes consumed, 0 on malformed/short input.
 * RATIONALE: most fields are one or two bytes (deltas, fds, kinds, zero
 * offsets); those take no loop. Longer ones (nanosecond times, sizes) are
 * read with one 8-byte load where 8 bytes remain: the first byte without a
 * continuation bit gives the length, and the 7-bit groups are packed either
 * by one PEXT (px: the CPU has a fast BMI2, see use_pext) or by three
 * mask-and-shift steps, so a length of 3 to 8 bytes costs no loop and no
 * branch on the length. The byte loop is left for the ends of frames and for
 * values of 9 or 10 bytes. */
static inline __attribute__((always_inline)) size_t get_u(const uint8_t *p, const uint8_t *end,
                                                          uint64_t *out, const int px,
                                                          const int roomy)
{
    /* roomy: the caller knows that at least VARINT_ROOM bytes are left */
    if (__builtin_expect((roomy || p < end) && p[0] < 0x80, 1)) {
        *out = p[0];
        return 1;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (px && (roomy || end - p >= 8)) {
        uint64_t x;
        memcpy(&x, p, 8);
        const uint64_t stop = ~x & 0x8080808080808080ull; /* bytes that end it */
        if (stop) {
            /* the bits up to the first stop bit, less the continuation bits */
            *out = pext64(x, (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full);
            return ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
        }
    }
#endif
    if ((roomy || p + 1 < end) && p[1] < 0x80) {
        *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        return 2;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!px && (roomy || end - p >= 8)) {
        uint64_t x;
        memcpy(&x, p, 8);
        const uint64_t stop = ~x & 0x8080808080808080ull; /* bytes that end it */
        if (stop) {
            const unsigned bits = (unsigned)__builtin_ctzll(stop) + 1; /* 8 * length */
            if (bits < 64)
                x &= (1ull << bits) - 1;
            x = (x & 0x007f007f007f007full) | (x & 0x7f007f007f007f00ull) >> 1;
            x = (x & 0x00003fff00003fffull) | (x & 0x3fff00003fff0000ull) >> 2;
            x = (x & 0x000000000fffffffull) | (x & 0x0fffffff00000000ull) >> 4;
            *out = x;
            return bits / 8;
        }
    }
#endif
    uint64_t v = 0;
    for (unsigned i = 0, shift = 0; i < 10 && (roomy || p + i < end); i++, shift += 7) {
        uint8_t b = p[i];
        if (i == 9 && b > 1)
            return 0;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

/* Whether the decoder packs varints with PEXT: the CPU has BMI2 and runs it
 * fast (AMD before family 19h, Zen 3, microcodes it: tens of times slower
 * than the shifts), unless gs_decode_portable() said not to. 0 until
 * checked, then 1 (no) or 2 (yes); relaxed atomics, as every thread that
 * checks finds the same. */
static int pext_state;

static int pext_check(void)
{
#if GS_HAVE_PEXT
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 8))) /* BMI2 */
        return 1;
    unsigned vb, vc, vd;
    if (!__get_cpuid(0, &a, &vb, &vc, &vd) || !__get_cpuid(1, &a, &b, &c, &d))
        return 1;
    unsigned family = (a >> 8) & 0xf;
    if (family == 0xf)
        family += (a >> 20) & 0xff;
    /* "AuthenticAMD" and "HygonGenuine" (ebx, edx, ecx) */
    const int amd = (vb == 0x68747541u && vd == 0x69746e65u && vc == 0x444d4163u) ||
                    (vb == 0x6f677948u && vd == 0x6e65476eu && vc == 0x656e6975u);
    return amd && family < 0x19 ? 1 : 2;
#else
    return 1;
#endif
}

static inline int use_pext(void)
{
    int s = __atomic_load_n(&pext_state, __ATOMIC_RELAXED);
    if (__builtin_expect(s == 0, 0)) {
        s = pext_check();
        __atomic_store_n(&pext_state, s, __ATOMIC_RELAXED);
    }
    return s == 2;
}

void gs_decode_portable(int on)
{
    __atomic_store_n(&pext_state, on ? 1 : pext_check(), __ATOMIC_RELAXED);
}

int gs_decode_uses_pext(void)
{
    return use_pext();
}

/* Field masks by kind, for the per-record paths (no call, no branch on
 * unknown kinds beyond the zero test). STRING and TID have mask 0 here. */
static const uint16_t k_fields[GS_K_MAX] = {
#define GS_X_FIELDS(n, id, s, f, c) [id] = (uint16_t)(f),
    GS_KIND_LIST(GS_X_FIELDS)
#undef GS_X_FIELDS
};
_Static_assert(GS_F_CORR <= 0xffff, "field masks fit 16 bits");

static inline int64_t next_offset(int64_t offset, int64_t ret, int64_t prev)
{
    if (offset < 0)
        return prev;
    return (int64_t)((uint64_t)offset + (uint64_t)(ret > 0 ? ret : 0));
}

/* A repeated event (REPEAT, or one of a REPEATS run): the last event again,
 * its start gap after the last one ended, its own duration, its offset
 * continuing where the last left off (docs/trace-format.md). */
static inline gs_event *repeat_of(gs_decoder *d, gs_event *ev, const gs_event *last, uint64_t gap,
                                  uint64_t dur)
{
    const uint64_t ref = last->ts + last->dur;
    *ev = *last;
    ev->stack = ev->stack_weight = 0;
    ev->ts = ref + (uint64_t)zz_dec(gap);
    ev->dur = dur;
    d->prev_ts = ev->ts;
    if (k_fields[last->kind] & GS_F_OFFSET) {
        ev->offset = d->next_off;
        d->next_off = next_offset(ev->offset, ev->ret, d->next_off);
    }
    return ev;
}

void gs_encoder_init(gs_encoder *e, uint8_t *buf, size_t cap)
{
    e->buf = buf;
    e->cap = cap;
    gs_encoder_reset(e);
}

void gs_encoder_reset(gs_encoder *e)
{
    e->len = 0;
    e->nrec = 0;
    e->prev_ts = 0;
    e->next_off = 0;
    e->prev_end = 0;
    e->last.valid = 0;
}

int gs_encode_tid(gs_encoder *e, uint32_t tid)
{
    if (e->cap - e->len < 1 + 10)
        return GS_ERR_FULL;
    uint8_t *p = e->buf + e->len;
    *p++ = GS_K_TID;
    p = put_u(p, tid);
    e->len = (size_t)(p - e->buf);
    e->nrec++;
    e->last.valid = 0; /* a REPEAT repeats an event of its own thread */
    return GS_OK;
}

int gs_encode_string(gs_encoder *e, uint32_t id, const char *s, size_t len)
{
    if (len > GS_STRING_MAX || id == 0)
        return GS_ERR_ARG;
    if (e->cap - e->len < 1 + 10 + 10 + len)
        return GS_ERR_FULL;
    uint8_t *p = e->buf + e->len;
    *p++ = GS_K_STRING;
    p = put_u(p, id);
    p = put_u(p, len);
    memcpy(p, s, len);
    p += len;
    e->len = (size_t)(p - e->buf);
    e->nrec++;
    return GS_OK;
}

int gs_encode_stack(gs_encoder *e, uint32_t id, const uint64_t *frames, size_t n)
{
    if (id == 0 || n == 0 || n > GS_STACK_FRAMES_MAX)
        return GS_ERR_ARG;
    if (e->cap - e->len < GS_STACK_MAX_ENCODED)
        return GS_ERR_FULL;
    uint8_t *p = e->buf + e->len;
    *p++ = GS_K_STACK;
    p = put_u(p, id);
    p = put_u(p, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        p = put_u(p, zz_enc((int64_t)(frames[i] - prev)));
        prev = frames[i];
    }
    e->len = (size_t)(p - e->buf);
    e->nrec++;
    return GS_OK;
}

/* The generic fields of one record, in their fixed order (the twin of
 * decode_fields below). Always inlined and called with constant masks for
 * the kinds a trace is mostly made of, so those get straight-line code. */
static inline __attribute__((always_inline)) uint8_t *
encode_fields(const unsigned f, uint8_t *p, const gs_event *ev, gs_encoder *e)
{
    if (f & GS_F_TS) {
        p = put_u(p, zz_enc((int64_t)(ev->ts - e->prev_ts)));
        e->prev_ts = ev->ts;
    }
    if (f & GS_F_DUR)
        p = put_u(p, ev->dur);
    if (f & GS_F_FD)
        p = put_u(p, zz_enc(ev->fd));
    if (f & GS_F_FDKIND)
        p = put_u(p, ev->fd_kind);
    if (f & GS_F_STR)
        p = put_u(p, ev->str);
    const uint64_t bytes = (f & GS_F_BYTES) ? ev->bytes : 0;
    if (f & GS_F_BYTES)
        p = put_u(p, bytes);
    if (f & GS_F_RET)
        p = put_u(p, zz_enc((int64_t)(bytes - (uint64_t)ev->ret)));
    if (f & GS_F_OFFSET) {
        p = put_u(p, zz_enc((int64_t)((uint64_t)ev->offset - (uint64_t)e->next_off)));
        e->next_off = next_offset(ev->offset, ev->ret, e->next_off);
    }
    if (f & GS_F_AUX)
        p = put_u(p, ev->aux);
    if (f & GS_F_AUX2)
        p = put_u(p, ev->aux2);
    if (f & GS_F_DEV)
        p = put_u(p, ev->dev);
    if (f & GS_F_STREAM)
        p = put_u(p, ev->stream);
    if (f & GS_F_CORR)
        p = put_u(p, ev->corr);
    return p;
}

/* 1 when ev may be written as a REPEAT of the frame's last event: the same
 * in every field the REPEAT takes from it, its offset (when the kind has
 * one) where the last one ended, and no call stack. */
static inline int repeats(const gs_encoder *e, const gs_event *ev, unsigned f)
{
    const gs_repeat_key *k = &e->last;
    return k->valid && k->kind == ev->kind && !ev->stack && k->fd == ev->fd &&
           k->str == ev->str && k->bytes == ev->bytes && k->ret == ev->ret &&
           k->fd_kind == ev->fd_kind && k->aux == ev->aux && k->aux2 == ev->aux2 &&
           k->dev == ev->dev && k->stream == ev->stream && k->corr == ev->corr &&
           (!(f & GS_F_OFFSET) || ev->offset == e->next_off);
}

static inline void remember(gs_encoder *e, const gs_event *ev, unsigned f)
{
    gs_repeat_key *k = &e->last;
    k->valid = (f & (GS_F_TS | GS_F_DUR)) == (GS_F_TS | GS_F_DUR);
    k->kind = ev->kind;
    k->fd = ev->fd;
    k->str = ev->str;
    k->bytes = ev->bytes;
    k->ret = ev->ret;
    k->fd_kind = ev->fd_kind;
    k->aux = ev->aux;
    k->aux2 = ev->aux2;
    k->dev = ev->dev;
    k->stream = ev->stream;
    k->corr = ev->corr;
}

int gs_encode_event(gs_encoder *e, const gs_event *ev)
{
    const unsigned f = ev->kind < GS_K_MAX ? k_fields[ev->kind] : 0;
    if (f == 0)
        return GS_ERR_KIND;
    if (e->cap - e->len < GS_EVENT_MAX_ENCODED)
        return GS_ERR_FULL;
    uint8_t *p = e->buf + e->len;
    if (repeats(e, ev, f)) {
        /* RATIONALE: a busy loader's reads are mostly the same call again
         * (same fd, size, result, the next offset): 3-5 bytes instead of
         * about 12, and zstd then costs about a third less and writes half
         * the bytes (docs/performance.md, "The record form") */
        *p++ = GS_K_REPEAT;
        p = put_u(p, zz_enc((int64_t)(ev->ts - e->prev_end)));
        p = put_u(p, ev->dur);
        e->prev_ts = ev->ts;
        e->prev_end = ev->ts + ev->dur;
        if (f & GS_F_OFFSET)
            e->next_off = next_offset(ev->offset, ev->ret, e->next_off);
        e->len = (size_t)(p - e->buf);
        e->nrec++;
        return GS_OK;
    }
    if (ev->stack) {
        /* the CALLSITE prefix: counted as a record of its own */
        *p++ = GS_K_CALLSITE;
        p = put_u(p, ev->stack);
        p = put_u(p, ev->stack_weight ? ev->stack_weight : 1);
        e->nrec++;
    }
    *p++ = (uint8_t)ev->kind;
    switch (f) { /* the masks decode_some specialises too */
    case GS_IO_FIELDS: /* read, close, stat */
        p = encode_fields(GS_IO_FIELDS, p, ev, e);
        break;
    case GS_IOO_FIELDS: /* pread */
        p = encode_fields(GS_IOO_FIELDS, p, ev, e);
        break;
    case GS_IO_FIELDS | GS_F_AUX: /* open, poll, readv, fread */
        p = encode_fields(GS_IO_FIELDS | GS_F_AUX, p, ev, e);
        break;
    default:
        p = encode_fields(f, p, ev, e);
        break;
    }
    remember(e, ev, f);
    e->prev_end = ev->ts + ev->dur;
    e->len = (size_t)(p - e->buf);
    e->nrec++;
    return GS_OK;
}

/* The next offset after n calls like the last, each moving it by ret (a
 * kind with an offset field, has_off): n steps of next_offset, in one step
 * when none passes INT64_MAX. */
static int64_t advance_offset(int has_off, int64_t off, int64_t ret, size_t n)
{
    uint64_t add;
    if (!has_off || off < 0 || ret <= 0)
        return off; /* next_offset leaves it as it is */
    if (!__builtin_mul_overflow((uint64_t)ret, (uint64_t)n, &add) &&
        add <= (uint64_t)INT64_MAX - (uint64_t)off)
        return off + (int64_t)add; /* n steps of ret, none past INT64_MAX */
    for (size_t i = 0; i < n; i++)
        off = next_offset(off, ret, off);
    return off;
}

/* The encoder after a run of n events written up to p (both run encoders):
 * the last event started at last_ts and ended at end, the offset moves on
 * n calls; returns n. */
static size_t end_run(gs_encoder *e, uint8_t *p, size_t n, uint64_t last_ts, uint64_t end)
{
    e->next_off =
        advance_offset(k_fields[e->last.kind] & GS_F_OFFSET, e->next_off, e->last.ret, n);
    e->prev_ts = last_ts;
    e->prev_end = end;
    e->len = (size_t)(p - e->buf);
    e->nrec += (uint32_t)n;
    return n;
}

size_t gs_encode_repeats(gs_encoder *e, const uint64_t *ts, const uint64_t *dur, size_t n)
{
    const size_t room = gs_encode_repeats_room(e);
    if (n > room)
        n = room;
    if (n == 0)
        return 0;
    uint8_t *p = e->buf + e->len;
    uint64_t end = e->prev_end;
    if (n == 1) {
        *p++ = GS_K_REPEAT;
        p = put_u(p, zz_enc((int64_t)(ts[0] - end)));
        p = put_u(p, dur[0]);
        end = ts[0] + dur[0];
    } else {
        /* RATIONALE: the column form (a REPEATS record, format 1.5): all the
         * gaps, then all the durations; zstd does a fifth less work on the
         * two columns than on interleaved REPEAT records, and they are a
         * byte shorter per event (docs/performance.md, "Runs straight from
         * the ring") */
        *p++ = GS_K_REPEATS;
        p = put_u(p, n);
        for (size_t i = 0; i < n; i++) {
            p = put_u14(p, zz_enc((int64_t)(ts[i] - end)));
            end = ts[i] + dur[i];
        }
        for (size_t i = 0; i < n; i++)
            p = put_u14(p, dur[i]);
    }
    return end_run(e, p, n, ts[n - 1], end);
}

size_t gs_encode_repeats_room(const gs_encoder *e)
{
    if (!e->last.valid || e->cap - e->len < 11)
        return 0;
    return (e->cap - e->len - 11) / GS_REPEAT_MAX_ENCODED;
}

/* RATIONALE: the bytes are gs_encode_repeats's for the same events (the
 * columns hold the same varints; a single event's REPEAT record is its kind,
 * gap and duration), so the two are interchangeable; tests/unit/test_codec.c
 * compares them. */
size_t gs_encode_repeats_cols(gs_encoder *e, const gs_runcols *c, size_t n)
{
    if (n == 0 || n > gs_encode_repeats_room(e))
        return 0;
    const size_t glen = (size_t)(c->gp - c->gaps), dlen = (size_t)(c->dp - c->durs);
    uint8_t *p = e->buf + e->len;
    if (n == 1) {
        *p++ = GS_K_REPEAT;
    } else {
        *p++ = GS_K_REPEATS;
        p = put_u(p, n);
    }
    memcpy(p, c->gaps, glen);
    p += glen;
    memcpy(p, c->durs, dlen);
    p += dlen;
    return end_run(e, p, n, c->last_ts, c->end);
}

#define GET_U(var)                                                             \
    do {                                                                       \
        size_t n_ = get_u(p, end, &(var), px, roomy);                          \
        if (n_ == 0)                                                           \
            return GS_ERR_CORRUPT;                                             \
        p += n_;                                                               \
    } while (0)

/* RATIONALE: a record's fields are at most 16 varints of at most 10 bytes;
 * where that many bytes and one more varint's room are left in the frame,
 * no varint of the record can reach its end, and get_u reads without
 * checking it (roomy). The last records of a frame are read with checks. */
#define RECORD_ROOM (16 * 10 + VARINT_ROOM)

/* The generic fields of one record, in their fixed order. Always inlined
 * and called with constant masks for the common kinds, so each of those gets
 * straight-line code instead of thirteen data-dependent branches.
 * Returns 0 or a negative gs_err. */
static inline __attribute__((always_inline)) int
decode_fields(const unsigned f, const uint8_t **pp, const uint8_t *end, gs_event *ev, gs_decoder *d,
              const int px, const int roomy)
{
    /* RATIONALE: fields go to locals and the event is stored once at the
     * end, so no field is written twice (default, then value). */
    const uint8_t *p = *pp;
    uint64_t v, ts = 0, dur = 0, bytes = 0, aux = 0, aux2 = 0, stream = 0, corr = 0;
    int64_t ret = 0, offset = -1;
    int32_t fd = -1;
    uint32_t str = 0, dev = 0;
    uint8_t fd_kind = 0;
    if (f & GS_F_TS) {
        GET_U(v);
        d->prev_ts += (uint64_t)zz_dec(v);
        ts = d->prev_ts;
    }
    if (f & GS_F_DUR)
        GET_U(dur);
    if (f & GS_F_FD) {
        GET_U(v);
        const int64_t x = zz_dec(v);
        if (x < INT32_MIN || x > INT32_MAX)
            return GS_ERR_CORRUPT;
        fd = (int32_t)x;
    }
    if (f & GS_F_FDKIND) {
        GET_U(v);
        if (v > 255)
            return GS_ERR_CORRUPT;
        fd_kind = (uint8_t)v;
    }
    if (f & GS_F_STR) {
        GET_U(v);
        if (v > UINT32_MAX)
            return GS_ERR_CORRUPT;
        str = (uint32_t)v;
    }
    if (f & GS_F_BYTES)
        GET_U(bytes);
    if (f & GS_F_RET) {
        GET_U(v);
        ret = (int64_t)(bytes - (uint64_t)zz_dec(v));
    }
    if (f & GS_F_OFFSET) {
        GET_U(v);
        offset = (int64_t)((uint64_t)d->next_off + (uint64_t)zz_dec(v));
        d->next_off = next_offset(offset, ret, d->next_off);
    }
    if (f & GS_F_AUX)
        GET_U(aux);
    if (f & GS_F_AUX2)
        GET_U(aux2);
    if (f & GS_F_DEV) {
        GET_U(v);
        if (v > UINT32_MAX)
            return GS_ERR_CORRUPT;
        dev = (uint32_t)v;
    }
    if (f & GS_F_STREAM)
        GET_U(stream);
    if (f & GS_F_CORR)
        GET_U(corr);
    ev->fd_kind = fd_kind;
    ev->fd = fd;
    ev->str = str;
    ev->ts = ts;
    ev->dur = dur;
    ev->bytes = bytes;
    ev->ret = ret;
    ev->offset = offset;
    ev->aux = aux;
    ev->aux2 = aux2;
    ev->stream = stream;
    ev->corr = corr;
    ev->dev = dev;
    *pp = p;
    return 0;
}

void gs_decoder_init(gs_decoder *d, const uint8_t *raw, size_t len, uint32_t nrec)
{
    *d = (gs_decoder){.p = raw, .end = raw + len, .left = nrec};
}

/* The next event of a REPEATS record into ev: its gap from the gap column,
 * its duration from *pp (the duration column). Returns 0 or a negative
 * gs_err. */
static inline __attribute__((always_inline)) int
decode_run_next(gs_decoder *d, const uint8_t **pp, gs_event *ev, const gs_event **last,
                const int px)
{
    const uint8_t *p = *pp;
    const uint8_t *const end = d->end;
    const int roomy = 0;
    uint64_t gap, dur;
    const size_t ng = get_u(d->run_g, d->run_gend, &gap, px, 0);
    if (ng == 0)
        return GS_ERR_CORRUPT;
    d->run_g += ng;
    GET_U(dur);
    d->run_left--;
    *last = repeat_of(d, ev, *last, gap, dur);
    *pp = p;
    return 0;
}

/* A REPEAT record (after its kind byte at *pp) into ev: the last event
 * again, a new start and duration. Returns 0 or a negative gs_err. */
static inline __attribute__((always_inline)) int
decode_repeat(gs_decoder *d, const uint8_t **pp, gs_event *ev, const gs_event **last,
              const int px)
{
    const uint8_t *p = *pp;
    const uint8_t *const end = d->end;
    const int roomy = 0;
    uint64_t gap, dur;
    if (end - p >= 2 * VARINT_ROOM) {
        const int roomy = 1;
        GET_U(gap);
        GET_U(dur);
    } else {
        GET_U(gap);
        GET_U(dur);
    }
    if (!*last || d->cs_stack)
        return GS_ERR_CORRUPT; /* nothing to repeat, or a stack on it */
    const unsigned lf = k_fields[(*last)->kind];
    if ((lf & (GS_F_TS | GS_F_DUR)) != (GS_F_TS | GS_F_DUR))
        return GS_ERR_CORRUPT;
    *last = repeat_of(d, ev, *last, gap, dur);
    *pp = p;
    return 0;
}

/* A STRING record (after its kind byte at *pp): handed to on_string.
 * Returns 0 or a negative gs_err. */
static inline __attribute__((always_inline)) int
decode_string(gs_decoder *d, const uint8_t **pp, gs_string_fn on_string, void *ctx, const int px)
{
    const uint8_t *p = *pp;
    const uint8_t *const end = d->end;
    const int roomy = 0;
    uint64_t id, slen;
    GET_U(id);
    GET_U(slen);
    if (id == 0 || id > UINT32_MAX || slen > GS_STRING_MAX || slen > (size_t)(end - p))
        return GS_ERR_CORRUPT;
    if (on_string)
        on_string(ctx, (uint32_t)id, (const char *)p, (size_t)slen);
    *pp = p + slen;
    return 0;
}

/* A STACK record (after its kind byte at *pp): its frames, handed to
 * on_stack. Returns 0 or a negative gs_err. */
static inline __attribute__((always_inline)) int
decode_stack(gs_decoder *d, const uint8_t **pp, gs_stack_fn on_stack, void *ctx, const int px)
{
    const uint8_t *p = *pp;
    const uint8_t *const end = d->end;
    const int roomy = 0;
    uint64_t frames[GS_STACK_FRAMES_MAX];
    uint64_t id, n, v, prev = 0;
    GET_U(id);
    GET_U(n);
    if (id == 0 || id > UINT32_MAX || n == 0 || n > GS_STACK_FRAMES_MAX)
        return GS_ERR_CORRUPT;
    for (uint64_t i = 0; i < n; i++) {
        GET_U(v);
        prev += (uint64_t)zz_dec(v);
        frames[i] = prev;
    }
    if (on_stack)
        on_stack(ctx, (uint32_t)id, frames, (size_t)n);
    *pp = p;
    return 0;
}

/* The records with their own layout (no fields in k_fields), after the
 * kind byte at *pp: TID, REPEATS, STRING, STACK, CALLSITE; any other kind
 * is unknown. Returns 0 or a negative gs_err. */
static inline __attribute__((always_inline)) int
decode_layout(gs_decoder *d, const unsigned kind, const uint8_t **pp, const gs_event **last,
              uint32_t *tid, gs_string_fn on_string, gs_stack_fn on_stack, void *ctx,
              const int px)
{
    const uint8_t *p = *pp;
    const uint8_t *const end = d->end;
    const int roomy = 0;
    uint64_t v;
    if (kind == GS_K_TID) {
        GET_U(v);
        if (v > UINT32_MAX)
            return GS_ERR_CORRUPT;
        *tid = (uint32_t)v;
        *last = NULL;
    } else if (kind == GS_K_REPEATS) {
        /* n events, each a REPEAT: n gaps, then n durations; the record
         * counts as n in the frame's records */
        uint64_t cnt;
        GET_U(cnt);
        if (cnt < 2 || cnt - 1 > d->left || !*last || d->cs_stack)
            return GS_ERR_CORRUPT;
        const unsigned lf = k_fields[(*last)->kind];
        if ((lf & (GS_F_TS | GS_F_DUR)) != (GS_F_TS | GS_F_DUR))
            return GS_ERR_CORRUPT;
        d->run_g = p;
        for (uint64_t i = 0; i < cnt; i++)
            GET_U(v); /* find where the durations start */
        d->run_gend = p;
        d->run_left = (uint32_t)cnt;
        d->left++; /* each of its events counts one, in decode_some */
    } else if (kind == GS_K_STRING) {
        return decode_string(d, pp, on_string, ctx, px);
    } else if (kind == GS_K_STACK) {
        return decode_stack(d, pp, on_stack, ctx, px);
    } else if (kind == GS_K_CALLSITE) {
        uint64_t id, w;
        GET_U(id);
        GET_U(w);
        if (id == 0 || id > UINT32_MAX || w == 0 || w > UINT32_MAX || d->cs_stack)
            return GS_ERR_CORRUPT;
        d->cs_stack = (uint32_t)id;
        d->cs_weight = (uint32_t)w;
        if (d->left == 0)
            return GS_ERR_CORRUPT; /* a CALLSITE is always followed by its event */
    } else {
        return GS_ERR_KIND;
    }
    *pp = p;
    return 0;
}

/* An event record of kind (its fields f) into ev, after the kind byte at
 * *pp, with the tid and the call site (CALLSITE) it carries. Returns 0 or a
 * negative gs_err. */
static inline __attribute__((always_inline)) int
decode_event(gs_decoder *d, const unsigned kind, const unsigned f, const uint8_t **pp,
             gs_event *ev, const uint32_t tid, const int px)
{
    const uint8_t *const end = d->end;
    /* decode_fields stores every field but these */
    ev->kind = (uint16_t)kind;
    ev->reserved = 0;
    ev->tid = tid;
    ev->reserved2 = 0;
    ev->stack = d->cs_stack;
    ev->stack_weight = d->cs_weight;
    d->cs_stack = d->cs_weight = 0;
    if (__builtin_expect(end - *pp < RECORD_ROOM, 0))
        return decode_fields(f, pp, end, ev, d, px, 0); /* near the frame's end */
    switch (f) { /* the masks of the kinds a trace is mostly made of */
    case GS_IO_FIELDS: /* read, close, stat */
        return decode_fields(GS_IO_FIELDS, pp, end, ev, d, px, 1);
    case GS_IOO_FIELDS: /* pread */
        return decode_fields(GS_IOO_FIELDS, pp, end, ev, d, px, 1);
    case GS_IO_FIELDS | GS_F_AUX: /* open, poll, readv, fread */
        return decode_fields(GS_IO_FIELDS | GS_F_AUX, pp, end, ev, d, px, 1);
    case GS_GPU_FIELDS | GS_F_STR: /* gpu_kernel */
        return decode_fields(GS_GPU_FIELDS | GS_F_STR, pp, end, ev, d, px, 1);
    case GS_GPU_FIELDS | GS_F_BYTES | GS_F_AUX: /* gpu_memcpy, gpu_memset */
        return decode_fields(GS_GPU_FIELDS | GS_F_BYTES | GS_F_AUX, pp, end, ev, d, px, 1);
    case GS_F_TS | GS_F_AUX | GS_F_AUX2: /* markers */
        return decode_fields(GS_F_TS | GS_F_AUX | GS_F_AUX2, pp, end, ev, d, px, 1);
    default:
        return decode_fields(f, pp, end, ev, d, px, 1);
    }
}

/* The body of gs_decode_some, made twice: with PEXT (px 1) and without. */
static inline __attribute__((always_inline)) long
decode_some(gs_decoder *d, gs_event *events, size_t max, uint32_t *tid, gs_string_fn on_string,
            gs_stack_fn on_stack, void *ctx, const int px)
{
    const uint8_t *p = d->p;
    const uint8_t *const end = d->end;
    size_t nev = 0;
    int err;
    /* the last event of the current tid run, for REPEAT: in events[] once
     * this call decoded one, else kept in d->prev by the previous call */
    const gs_event *last = d->have_prev ? &d->prev : NULL;
    while (d->left > 0 && nev < max) {
        d->left--;
        if (d->run_left > 0) {
            if ((err = decode_run_next(d, &p, &events[nev], &last, px)) != 0)
                return err;
            nev++;
            continue;
        }
        if (p >= end)
            return GS_ERR_CORRUPT;
        const unsigned kind = *p++;
        /* RATIONALE: REPEAT (the last event again, a new start and
         * duration) is most records of a reading loop: tested first, before
         * the field table and the other record layouts */
        if (kind == GS_K_REPEAT) {
            if ((err = decode_repeat(d, &p, &events[nev], &last, px)) != 0)
                return err;
            nev++;
            continue;
        }
        const unsigned f = k_fields[kind]; /* kind < 256 = GS_K_MAX */
        if (__builtin_expect(f == 0, 0)) {
            err = decode_layout(d, kind, &p, &last, tid, on_string, on_stack, ctx, px);
            if (err)
                return err;
            continue;
        }
        gs_event *ev = &events[nev++];
        if ((err = decode_event(d, kind, f, &p, ev, *tid, px)) != 0)
            return err;
        last = ev;
    }
    if (last && last != &d->prev)
        d->prev = *last;
    d->have_prev = last != NULL;
    d->p = p;
    if (d->left == 0 && p != end)
        return GS_ERR_CORRUPT;
    return (long)nev;
}

static __attribute__((noinline)) long decode_some_pext(gs_decoder *d, gs_event *events, size_t max,
                                                       uint32_t *tid, gs_string_fn on_string,
                                                       gs_stack_fn on_stack, void *ctx)
{
    return decode_some(d, events, max, tid, on_string, on_stack, ctx, 1);
}

static __attribute__((noinline)) long decode_some_shifts(gs_decoder *d, gs_event *events,
                                                         size_t max, uint32_t *tid,
                                                         gs_string_fn on_string,
                                                         gs_stack_fn on_stack, void *ctx)
{
    return decode_some(d, events, max, tid, on_string, on_stack, ctx, 0);
}

long gs_decode_some(gs_decoder *d, gs_event *events, size_t max, uint32_t *tid,
                    gs_string_fn on_string, gs_stack_fn on_stack, void *ctx)
{
    if (GS_HAVE_PEXT && use_pext())
        return decode_some_pext(d, events, max, tid, on_string, on_stack, ctx);
    return decode_some_shifts(d, events, max, tid, on_string, on_stack, ctx);
}

long gs_decode_frame(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events, size_t max,
                     uint32_t *tid, gs_string_fn on_string, void *ctx)
{
    return gs_decode_frame_cb(raw, len, nrec, events, max, tid, on_string, NULL, ctx);
}

long gs_decode_frame_cb(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events,
                        size_t max, uint32_t *tid, gs_string_fn on_string, gs_stack_fn on_stack,
                        void *ctx)
{
    gs_decoder d;
    gs_decoder_init(&d, raw, len, nrec);
    const long n = gs_decode_some(&d, events, max, tid, on_string, on_stack, ctx);
    if (n < 0 || d.left == 0)
        return n;
    /* events[] is full: what is left may only be records that are not events */
    gs_event extra;
    const long more = gs_decode_some(&d, &extra, 1, tid, on_string, on_stack, ctx);
    if (more < 0)
        return more;
    return more > 0 || d.left > 0 ? GS_ERR_CORRUPT : n;
}
