/* gs_codec.c — the record codec: gs_event <-> the compact varint form inside
 * a raw (decompressed) frame, with the delta rules of docs/trace-format.md.
 *
 * Must never: allocate, read or write past the buffers it is given, or trust
 * a single byte of its input when decoding.
 */
#include <string.h>

#include "gs_trace.h"

static inline uint64_t zz_enc(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t zz_dec(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline uint8_t *put_u(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Returns the number of bytes consumed, 0 on malformed/short input. */
static inline size_t get_u(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0, shift = 0; i < 10 && p + i < end; i++, shift += 7) {
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

/* Field masks by kind, for the per-record paths (no call, no branch on
 * unknown kinds beyond the zero test). STRING and TID have mask 0 here. */
static const uint16_t k_fields[GS_K_MAX] = {
#define GS_X_FIELDS(n, id, s, f) [id] = (uint16_t)(f),
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

int gs_encode_event(gs_encoder *e, const gs_event *ev)
{
    const unsigned f = ev->kind < GS_K_MAX ? k_fields[ev->kind] : 0;
    if (f == 0)
        return GS_ERR_KIND;
    if (e->cap - e->len < GS_EVENT_MAX_ENCODED)
        return GS_ERR_FULL;
    uint8_t *p = e->buf + e->len;
    if (ev->stack) {
        /* the CALLSITE prefix: counted as a record of its own */
        *p++ = GS_K_CALLSITE;
        p = put_u(p, ev->stack);
        p = put_u(p, ev->stack_weight ? ev->stack_weight : 1);
        e->nrec++;
    }
    *p++ = (uint8_t)ev->kind;
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
    e->len = (size_t)(p - e->buf);
    e->nrec++;
    return GS_OK;
}

#define GET_U(var)                                                             \
    do {                                                                       \
        size_t n_ = get_u(p, end, &(var));                                     \
        if (n_ == 0)                                                           \
            return GS_ERR_CORRUPT;                                             \
        p += n_;                                                               \
    } while (0)

long gs_decode_frame(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events, size_t max,
                     uint32_t *tid, gs_string_fn on_string, void *ctx)
{
    return gs_decode_frame_cb(raw, len, nrec, events, max, tid, on_string, NULL, ctx);
}

long gs_decode_frame_cb(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events,
                        size_t max, uint32_t *tid, gs_string_fn on_string, gs_stack_fn on_stack,
                        void *ctx)
{
    const uint8_t *p = raw;
    const uint8_t *end = raw + len;
    uint64_t prev_ts = 0;
    int64_t next_off = 0;
    size_t nev = 0;
    uint32_t cs_stack = 0, cs_weight = 0; /* pending CALLSITE */
    uint64_t frames[GS_STACK_FRAMES_MAX];
    for (uint32_t r = 0; r < nrec; r++) {
        if (p >= end)
            return GS_ERR_CORRUPT;
        const unsigned kind = *p++;
        uint64_t v;
        if (kind == GS_K_TID) {
            GET_U(v);
            if (v > UINT32_MAX)
                return GS_ERR_CORRUPT;
            *tid = (uint32_t)v;
            continue;
        }
        if (kind == GS_K_STRING) {
            uint64_t id, slen;
            GET_U(id);
            GET_U(slen);
            if (id == 0 || id > UINT32_MAX || slen > GS_STRING_MAX || slen > (size_t)(end - p))
                return GS_ERR_CORRUPT;
            if (on_string)
                on_string(ctx, (uint32_t)id, (const char *)p, (size_t)slen);
            p += slen;
            continue;
        }
        if (kind == GS_K_STACK) {
            uint64_t id, n, prev = 0;
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
            continue;
        }
        if (kind == GS_K_CALLSITE) {
            uint64_t id, w;
            GET_U(id);
            GET_U(w);
            if (id == 0 || id > UINT32_MAX || w == 0 || w > UINT32_MAX || cs_stack)
                return GS_ERR_CORRUPT;
            cs_stack = (uint32_t)id;
            cs_weight = (uint32_t)w;
            if (r + 1 >= nrec)
                return GS_ERR_CORRUPT; /* a CALLSITE is always followed by its event */
            continue;
        }
        const unsigned f = k_fields[kind]; /* kind < 256 = GS_K_MAX */
        if (f == 0)
            return GS_ERR_KIND;
        if (nev >= max)
            return GS_ERR_CORRUPT;
        gs_event *ev = &events[nev++];
        *ev = (gs_event){.kind = (uint16_t)kind, .fd = -1, .offset = -1, .tid = *tid,
                         .stack = cs_stack, .stack_weight = cs_weight};
        cs_stack = cs_weight = 0;
        if (f & GS_F_TS) {
            GET_U(v);
            prev_ts += (uint64_t)zz_dec(v);
            ev->ts = prev_ts;
        }
        if (f & GS_F_DUR)
            GET_U(ev->dur);
        if (f & GS_F_FD) {
            GET_U(v);
            const int64_t fd = zz_dec(v);
            if (fd < INT32_MIN || fd > INT32_MAX)
                return GS_ERR_CORRUPT;
            ev->fd = (int32_t)fd;
        }
        if (f & GS_F_FDKIND) {
            GET_U(v);
            if (v > 255)
                return GS_ERR_CORRUPT;
            ev->fd_kind = (uint8_t)v;
        }
        if (f & GS_F_STR) {
            GET_U(v);
            if (v > UINT32_MAX)
                return GS_ERR_CORRUPT;
            ev->str = (uint32_t)v;
        }
        if (f & GS_F_BYTES)
            GET_U(ev->bytes);
        if (f & GS_F_RET) {
            GET_U(v);
            ev->ret = (int64_t)(ev->bytes - (uint64_t)zz_dec(v));
        }
        if (f & GS_F_OFFSET) {
            GET_U(v);
            ev->offset = (int64_t)((uint64_t)next_off + (uint64_t)zz_dec(v));
            next_off = next_offset(ev->offset, ev->ret, next_off);
        }
        if (f & GS_F_AUX)
            GET_U(ev->aux);
        if (f & GS_F_AUX2)
            GET_U(ev->aux2);
        if (f & GS_F_DEV) {
            GET_U(v);
            if (v > UINT32_MAX)
                return GS_ERR_CORRUPT;
            ev->dev = (uint32_t)v;
        }
        if (f & GS_F_STREAM)
            GET_U(ev->stream);
        if (f & GS_F_CORR)
            GET_U(ev->corr);
    }
    if (p != end)
        return GS_ERR_CORRUPT;
    return (long)nev;
}
