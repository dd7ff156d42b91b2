/* gs_live.c — what a ring record means, shared by the collector's writer and
 * the reader's recovery from a live file (gs_live.h): the parked fields of
 * the CUDA and NVTX kinds, and the hook clock's conversion to ns.
 *
 * Must never: allocate, or trust a record beyond its fixed size.
 */
#include <string.h>

#include "gs_live.h"
#include "gs_trace.h"

/* gs_rec has no dev/stream/corr fields (gs_event has): the CUDA and NVTX
 * kinds park them in fields their kind does not carry. Per kind:
 *
 *   kind            dev     stream          corr    aux2 (gs_event)
 *   cuda_memcpy     fd      offset (u64)    aux2    -
 *   cuda_sync       fd      offset (u64)    aux2    aux (the event handle)
 *   nvtx_start      -       -               -       offset (the range id)
 *   nvtx_end        -       -               -       offset (the range id)
 *   cpu             aux2    ret bits 0-31   ret bits 32-63   offset (run-queue delay)
 *
 * (cpu: aux2 = major faults, ret = voluntary | involuntary context switches
 * << 32, each cut at 2^32 - 1 by the collector.)
 *
 * Every other field means what the format says (docs/trace-format.md).
 * After the move, fd and offset are -1 and the parked fields 0 again. */
void gs_rec_to_event(const gs_rec *x, gs_event *ev)
{
    gs_event_clear(ev);
    ev->kind = x->kind;
    ev->fd_kind = x->fd_kind;
    ev->fd = x->fd;
    ev->str = x->str;
    ev->ts = x->ts;
    ev->dur = x->dur;
    ev->bytes = x->bytes;
    ev->ret = x->ret;
    ev->offset = x->offset;
    ev->aux = x->aux;
    ev->aux2 = x->aux2;
    switch (x->kind) {
    case GS_K_CUDA_SYNC:
        ev->aux2 = x->aux;
        ev->aux = 0;
        /* fall through */
    case GS_K_CUDA_MEMCPY:
        ev->dev = (uint32_t)x->fd;
        ev->stream = (uint64_t)x->offset;
        ev->corr = x->aux2;
        ev->fd = -1;
        ev->offset = -1;
        if (x->kind == GS_K_CUDA_MEMCPY)
            ev->aux2 = 0;
        break;
    case GS_K_CPU:
        ev->dev = x->aux2;
        ev->stream = (uint64_t)x->ret & 0xffffffffu;
        ev->corr = (uint64_t)x->ret >> 32;
        ev->aux2 = (uint64_t)x->offset;
        ev->ret = 0;
        ev->offset = -1;
        break;
    case GS_K_NVTX_START:
    case GS_K_NVTX_END:
        ev->aux2 = (uint64_t)x->offset;
        ev->offset = -1;
        break;
    }
}

uint64_t gs_live_ts(int tsc, uint64_t tsc0, uint64_t mono0, uint64_t tsc1, uint64_t mono1,
                    uint64_t raw)
{
    if (!tsc)
        return raw;
    if (tsc1 <= tsc0 || mono1 < mono0)
        return mono1; /* no segment yet */
    /* unsigned 128-bit: each product of two 64-bit values fits; the result
     * saturates at 0 and 2^64 - 1 (a damaged or hostile live file) */
    const unsigned __int128 dm = mono1 - mono0, dt = tsc1 - tsc0;
    if (raw >= tsc0) {
        const unsigned __int128 q = (unsigned __int128)(raw - tsc0) * dm / dt;
        return q > (unsigned __int128)(UINT64_MAX - mono0) ? UINT64_MAX : mono0 + (uint64_t)q;
    }
    const unsigned __int128 q = (unsigned __int128)(tsc0 - raw) * dm / dt;
    return q >= mono0 ? 0 : mono0 - (uint64_t)q;
}

uint64_t gs_live_dur(int tsc, uint64_t tsc0, uint64_t mono0, uint64_t tsc1, uint64_t mono1,
                     uint64_t raw)
{
    if (!tsc)
        return raw;
    if (tsc1 <= tsc0 || mono1 < mono0)
        return 0;
    unsigned __int128 v = (unsigned __int128)raw * (mono1 - mono0) / (tsc1 - tsc0);
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}
