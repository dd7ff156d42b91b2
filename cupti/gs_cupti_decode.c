/* gs_cupti_decode.c — CUPTI activity records to trace events.
 *
 * Responsible for: reading the CUPTI 13 record layouts (kernel, memcpy,
 * memset, synchronization, device) field by field into gs_event, with the
 * field meanings of docs/trace-format.md (direction and memory kinds
 * translated to GS_DIR_* / GS_MEM_*).
 *
 * Must never: call CUPTI, allocate, intern strings or touch global state:
 * it is a pure function over a const record, tested with hand-built ones
 * (tests/hooks/hk_cupti_decode.c).
 */
#include <string.h>

#include "gs_cupti.h"

unsigned gs_cupti_mem_kind(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return GS_MEM_PAGEABLE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return GS_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return GS_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return GS_MEM_MANAGED;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return GS_MEM_ARRAY;
    default: return GS_MEM_UNKNOWN;
    }
}

unsigned gs_cupti_copy_dir(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return GS_DIR_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return GS_DIR_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return GS_DIR_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return GS_DIR_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return GS_DIR_PTOP;
    default: return GS_DIR_UNKNOWN;
    }
}

static void span(gs_event *ev, uint64_t start, uint64_t end)
{
    ev->ts = start;
    ev->dur = end > start ? end - start : 0;
}

int gs_cupti_decode(const CUpti_Activity *a, gs_event *ev, const char **name)
{
    *name = NULL;
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_KERNEL;
        span(ev, k->start, k->end);
        ev->dev = k->deviceId;
        ev->stream = k->streamId;
        ev->corr = k->correlationId;
        *name = k->name;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_MEMCPY;
        span(ev, m->start, m->end);
        ev->dev = m->deviceId;
        ev->stream = m->streamId;
        ev->corr = m->correlationId;
        ev->bytes = m->bytes;
        ev->aux = gs_pack_gpu_copy(gs_cupti_copy_dir(m->copyKind), gs_cupti_mem_kind(m->srcKind),
                                   gs_cupti_mem_kind(m->dstKind));
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_MEMSET;
        span(ev, m->start, m->end);
        ev->dev = m->deviceId;
        ev->stream = m->streamId;
        ev->corr = m->correlationId;
        ev->bytes = m->bytes;
        ev->aux = gs_cupti_mem_kind(m->memoryKind);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        /* RATIONALE: the record names a context, not a device: dev stays 0. */
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_SYNC;
        span(ev, s->start, s->end);
        ev->stream = s->streamId;
        ev->corr = s->correlationId;
        ev->aux = (uint64_t)s->type;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_DEVICE;
        ev->dev = d->id;
        ev->bytes = d->globalMemorySize;
        ev->aux = d->numMultiprocessors;
        ev->aux2 = (uint64_t)d->computeCapabilityMajor * 10 + d->computeCapabilityMinor;
        *name = d->name;
        return 1;
    }
    default:
        return 0;
    }
}
