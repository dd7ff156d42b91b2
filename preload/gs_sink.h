/* gs_sink.h — where preload/ and cupti/ meet: the few functions each side
 * offers the other.
 *
 * cupti/ is compiled into libgpustarve.so only when the CUDA headers were
 * found at build time, so preload/ refers to its functions weakly: a NULL
 * address means "built without CUPTI" and the caller skips the call. Both
 * sides are in the same shared object; nothing here is exported.
 *
 * Must never: carry CUDA or CUPTI types (preload/ is compiled without the
 * CUDA headers).
 */
#ifndef GS_SINK_H
#define GS_SINK_H

#include <stdint.h>

#include "gs_trace.h"

#define GS_WEAK __attribute__((weak, visibility("hidden")))

/* ---- offered by preload/ (gs_writer.c) ---- */

/* Encode one event of thread tid into the pending frame (output lock held).
 * Device records use tid 0. */
void gs_put_event(uint32_t tid, const gs_event *ev);

/* ---- offered by cupti/ (gs_cupti.c); weak: NULL when built without ---- */

/* Start the CUPTI collector unless already started or tried (once per
 * process image; later calls return at once). Called by the CUDA hooks at
 * the first CUDA call they see when the driver will not call
 * InitializeInjection for us. */
GS_WEAK void gs_gpu_start(void);
/* The hooks' first CUDA call: start the collector (gs_gpu_start) unless
 * the driver will call InitializeInjection; with no driver, warn once. */
GS_WEAK void gs_gpu_first_call(void);
/* 1 when this process image will be started through InitializeInjection
 * (CUDA_INJECTION64_PATH names this library). */
GS_WEAK int gs_gpu_injected(void);
/* Deliver CUPTI's buffers before the final drain, no lock of ours held.
 * how: 0 exit, 1 _exit, 2 fatal signal (done by the writer thread, waiting
 * at most wait_ms), 3 exec, 4 fork. */
GS_WEAK void gs_gpu_flush(int how, unsigned wait_ms);
/* Fork child: CUPTI belongs to the parent; drop what was queued. */
GS_WEAK void gs_gpu_after_fork_child(void);
/* Writer thread, once per period, no lock held: serve flush requests and
 * read CUPTI's dropped-record count. */
GS_WEAK void gs_gpu_writer_tick(void);
/* Writer, output lock held: decode queued CUPTI buffers into the frame,
 * GPU_DROPS when the dropped count moved (or final). */
GS_WEAK void gs_gpu_drain_locked(int final);

#endif
