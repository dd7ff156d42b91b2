/* gs_cupti.h — the CUPTI collector's internal interface: the record decoder
 * (a pure function, unit-tested with hand-built records) and the names the
 * collector's files share.
 *
 * Must never: be included by preload/ (CUDA types live here); declare
 * anything that calls into CUPTI from the decoder.
 */
#ifndef GS_CUPTI_H
#define GS_CUPTI_H

#include <cupti_activity.h>
#include <stdint.h>

#include "gs_trace.h"

/* Oldest and newest (exclusive) cuptiGetVersion this build decodes: the
 * record layouts read here (CUpti_ActivityKernel10, Memcpy6, Memset4,
 * Synchronization2, Device5) are those of CUPTI 13.x. */
#define GS_CUPTI_VERSION_MIN 130000u
#define GS_CUPTI_VERSION_END 140000u

/* Decode one CUPTI activity record into a trace event.
 *
 * Returns 1 when the record maps to a trace kind (GPU_KERNEL, GPU_MEMCPY,
 * GPU_MEMSET, GPU_SYNC, GPU_DEVICE): *ev is filled (tid 0, ts/dur in the
 * record's clock, which is ours through the timestamp callback; ev->str 0)
 * and *name is the kernel or device name to intern into ev->str (NULL when
 * none). Returns 0 for a kind not recorded (ev untouched). GPU_DEVICE
 * records carry no time: ts 0, for the caller to set. Pure: reads only *a. */
int gs_cupti_decode(const CUpti_Activity *a, gs_event *ev, const char **name);

/* CUPTI's memory kind (CUpti_ActivityMemoryKind) as GS_MEM_*. */
unsigned gs_cupti_mem_kind(unsigned cupti_kind);
/* CUPTI's memcpy kind (CUpti_ActivityMemcpyKind) as GS_DIR_*. */
unsigned gs_cupti_copy_dir(unsigned cupti_kind);

#endif
