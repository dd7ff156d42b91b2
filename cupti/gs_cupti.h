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

/* The cuptiGetVersion values this build decodes (cupti_version.h lists
 * them): CUDA 11.8 is 18, 12.0 to 12.9 update 1 are 19 to 28, 13.x are
 * xxyyzz from 130000; 13.0 to 13.2 are accepted. The fields read sit at the
 * same offsets in every record version they write (Kernel4–11, Memcpy3–6,
 * Memset2–4, Synchronization 1–2, Device4–6: checked at build time in
 * gs_cupti_decode.c). */
#define GS_CUPTI_V11_8 18u
#define GS_CUPTI_V12_LAST 28u
#define GS_CUPTI_V13_FIRST 130000u
#define GS_CUPTI_V13_END 130300u

/* 1 when cuptiGetVersion's v is one this build decodes. */
int gs_cupti_version_ok(uint32_t v);

/* What gs_cupti_decode found. */
enum {
    GS_CUPTI_SKIP = 0,         /* a kind not recorded */
    GS_CUPTI_RECORD = 1,       /* *ev filled */
    GS_CUPTI_UNKNOWN_TIME = 2, /* a recorded kind whose start or end is 0 (unknown:
                                * unfinished work forced out by a flush): drop it */
};

/* Decode one CUPTI activity record into a trace event.
 *
 * Returns GS_CUPTI_RECORD when the record maps to a trace kind (GPU_KERNEL,
 * GPU_MEMCPY, GPU_MEMSET, GPU_SYNC, GPU_DEVICE): *ev is filled (tid 0,
 * ts/dur in the record's clock, which is ours through the timestamp
 * callback; ev->str 0) and *name is the kernel or device name to intern
 * into ev->str (NULL when none). GS_CUPTI_SKIP for a kind not recorded,
 * GS_CUPTI_UNKNOWN_TIME for a timed one without both times (ev untouched
 * in both cases). GPU_DEVICE records carry no time: ts 0, for the caller to
 * set. Pure: reads only *a. */
int gs_cupti_decode(const CUpti_Activity *a, gs_event *ev, const char **name);

/* Another CUPTI client called `what` (gs_cupti_guest.c), before the call
 * goes on: gpustarve gives CUPTI up (flush, disable, unsubscribe, one
 * warning) when it holds it, and never takes it after. */
void gs_cupti_foreign_call(const char *what);
/* `name` from the libcupti the source loaded; NULL when none is. */
void *gs_cupti_sym(const char *name);

/* CUPTI's memory kind (CUpti_ActivityMemoryKind) as GS_MEM_*. */
unsigned gs_cupti_mem_kind(unsigned cupti_kind);
/* CUPTI's memcpy kind (CUpti_ActivityMemcpyKind) as GS_DIR_*. */
unsigned gs_cupti_copy_dir(unsigned cupti_kind);

#endif
