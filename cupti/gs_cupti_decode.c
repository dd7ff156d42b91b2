/* gs_cupti_decode.c — CUPTI activity records to trace events.
 *
 * Responsible for: reading the CUPTI record layouts (kernel, memcpy,
 * memset, synchronization, device) of every CUPTI gpustarve accepts (CUDA
 * 11.8, 12.x, 13.0–13.2) field by field into gs_event, with the field
 * meanings of docs/trace-format.md (direction and memory kinds translated to
 * GS_DIR_* / GS_MEM_*); which CUPTI API versions those are.
 *
 * One struct per kind is read, whatever version CUPTI wrote: each field read
 * sits at the same offset in every record version those CUPTIs write, which
 * the _Static_asserts below check at build time against the structs the
 * headers declare (the older ones in cupti_activity_deprecated.h; Kernel11
 * and Device6 only in CUPTI 13.2's headers, checked when building with
 * them: tests/hooks/rules.mk does).
 *
 * Must never: call CUPTI, allocate, intern strings or touch global state:
 * it is a pure function over a const record, tested with hand-built ones
 * (tests/hooks/hk_cupti_decode.c).
 */
#include <stddef.h>
#include <string.h>

#include "gs_cupti.h"

/* ---- layouts -------------------------------------------------------------------- */

/* The structs read: the newest declared by every header set we build with. */
typedef CUpti_ActivityKernel10 rd_kernel;
typedef CUpti_ActivityMemcpy6 rd_memcpy;
typedef CUpti_ActivityMemset4 rd_memset;
typedef CUpti_ActivitySynchronization2 rd_sync;
typedef CUpti_ActivityDevice5 rd_device;

#define SAME_AT(rd, other, field)                                                       \
    _Static_assert(offsetof(rd, field) == offsetof(other, field) &&                     \
                       sizeof(((rd *)0)->field) == sizeof(((other *)0)->field),         \
                   #other "." #field " is not where " #rd " has it")

#define KERNEL_AT(v)                                                                    \
    SAME_AT(rd_kernel, v, kind);                                                        \
    SAME_AT(rd_kernel, v, start);                                                       \
    SAME_AT(rd_kernel, v, end);                                                         \
    SAME_AT(rd_kernel, v, deviceId);                                                    \
    SAME_AT(rd_kernel, v, streamId);                                                    \
    SAME_AT(rd_kernel, v, correlationId);                                               \
    SAME_AT(rd_kernel, v, name)
KERNEL_AT(CUpti_ActivityKernel4);
KERNEL_AT(CUpti_ActivityKernel5);
KERNEL_AT(CUpti_ActivityKernel6);
KERNEL_AT(CUpti_ActivityKernel7);
KERNEL_AT(CUpti_ActivityKernel8);
KERNEL_AT(CUpti_ActivityKernel9);
#if CUPTI_API_VERSION >= 130200
KERNEL_AT(CUpti_ActivityKernel11);
#endif

#define MEMCPY_AT(v)                                                                    \
    SAME_AT(rd_memcpy, v, kind);                                                        \
    SAME_AT(rd_memcpy, v, copyKind);                                                    \
    SAME_AT(rd_memcpy, v, srcKind);                                                     \
    SAME_AT(rd_memcpy, v, dstKind);                                                     \
    SAME_AT(rd_memcpy, v, bytes);                                                       \
    SAME_AT(rd_memcpy, v, start);                                                       \
    SAME_AT(rd_memcpy, v, end);                                                         \
    SAME_AT(rd_memcpy, v, deviceId);                                                    \
    SAME_AT(rd_memcpy, v, streamId);                                                    \
    SAME_AT(rd_memcpy, v, correlationId)
MEMCPY_AT(CUpti_ActivityMemcpy3);
MEMCPY_AT(CUpti_ActivityMemcpy4);
MEMCPY_AT(CUpti_ActivityMemcpy5);

#define MEMSET_AT(v)                                                                    \
    SAME_AT(rd_memset, v, kind);                                                        \
    SAME_AT(rd_memset, v, bytes);                                                       \
    SAME_AT(rd_memset, v, start);                                                       \
    SAME_AT(rd_memset, v, end);                                                         \
    SAME_AT(rd_memset, v, deviceId);                                                    \
    SAME_AT(rd_memset, v, streamId);                                                    \
    SAME_AT(rd_memset, v, correlationId);                                               \
    SAME_AT(rd_memset, v, memoryKind)
MEMSET_AT(CUpti_ActivityMemset2);
MEMSET_AT(CUpti_ActivityMemset3);

#define SYNC_AT(v)                                                                      \
    SAME_AT(rd_sync, v, kind);                                                          \
    SAME_AT(rd_sync, v, type);                                                          \
    SAME_AT(rd_sync, v, start);                                                         \
    SAME_AT(rd_sync, v, end);                                                           \
    SAME_AT(rd_sync, v, streamId);                                                      \
    SAME_AT(rd_sync, v, correlationId)
SYNC_AT(CUpti_ActivitySynchronization);

#define DEVICE_AT(v)                                                                    \
    SAME_AT(rd_device, v, kind);                                                        \
    SAME_AT(rd_device, v, id);                                                          \
    SAME_AT(rd_device, v, globalMemorySize);                                            \
    SAME_AT(rd_device, v, numMultiprocessors);                                          \
    SAME_AT(rd_device, v, computeCapabilityMajor);                                      \
    SAME_AT(rd_device, v, computeCapabilityMinor);                                      \
    SAME_AT(rd_device, v, name)
DEVICE_AT(CUpti_ActivityDevice4);
#if CUPTI_API_VERSION >= 130200
DEVICE_AT(CUpti_ActivityDevice6);
#endif

/* ---- versions ------------------------------------------------------------------ */

int gs_cupti_version_ok(uint32_t v)
{
    return (v >= GS_CUPTI_V11_8 && v <= GS_CUPTI_V12_LAST) ||
           (v >= GS_CUPTI_V13_FIRST && v < GS_CUPTI_V13_END);
}

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
        const rd_kernel *k = (const rd_kernel *)a;
        if (!k->start || !k->end)
            return GS_CUPTI_UNKNOWN_TIME;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_KERNEL;
        span(ev, k->start, k->end);
        ev->dev = k->deviceId;
        ev->stream = k->streamId;
        ev->corr = k->correlationId;
        *name = k->name;
        return GS_CUPTI_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const rd_memcpy *m = (const rd_memcpy *)a;
        if (!m->start || !m->end)
            return GS_CUPTI_UNKNOWN_TIME;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_MEMCPY;
        span(ev, m->start, m->end);
        ev->dev = m->deviceId;
        ev->stream = m->streamId;
        ev->corr = m->correlationId;
        ev->bytes = m->bytes;
        ev->aux = gs_pack_gpu_copy(gs_cupti_copy_dir(m->copyKind), gs_cupti_mem_kind(m->srcKind),
                                   gs_cupti_mem_kind(m->dstKind));
        return GS_CUPTI_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const rd_memset *m = (const rd_memset *)a;
        if (!m->start || !m->end)
            return GS_CUPTI_UNKNOWN_TIME;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_MEMSET;
        span(ev, m->start, m->end);
        ev->dev = m->deviceId;
        ev->stream = m->streamId;
        ev->corr = m->correlationId;
        ev->bytes = m->bytes;
        ev->aux = gs_cupti_mem_kind(m->memoryKind);
        return GS_CUPTI_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        /* RATIONALE: the record names a context, not a device: dev stays 0. */
        const rd_sync *s = (const rd_sync *)a;
        if (!s->start || !s->end)
            return GS_CUPTI_UNKNOWN_TIME;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_SYNC;
        span(ev, s->start, s->end);
        ev->stream = s->streamId;
        ev->corr = s->correlationId;
        ev->aux = (uint64_t)s->type;
        return GS_CUPTI_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const rd_device *d = (const rd_device *)a;
        gs_event_clear(ev);
        ev->kind = GS_K_GPU_DEVICE;
        ev->dev = d->id;
        ev->bytes = d->globalMemorySize;
        ev->aux = d->numMultiprocessors;
        ev->aux2 = (uint64_t)d->computeCapabilityMajor * 10 + d->computeCapabilityMinor;
        *name = d->name;
        return GS_CUPTI_RECORD;
    }
    default:
        return GS_CUPTI_SKIP;
    }
}
