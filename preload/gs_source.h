/* gs_source.h — the fixed points at which the collector calls the GPU
 * sources registered through the seam (gs_source.c; the seam itself is
 * sink/gs_sink.h).
 *
 * Must never: be called on a hook's hot path (the CUDA hooks call
 * gs_sources_first_cuda_call once), or with the output lock held except
 * gs_sources_drain.
 */
#ifndef GS_SOURCE_H
#define GS_SOURCE_H

#include "gs_sink.h"

/* Each calls the operation of that name of every registered source that
 * has one (gs_source_ops, sink/gs_sink.h, says when). */
void gs_sources_first_cuda_call(void);
void gs_sources_flush(enum gs_flush_reason why, unsigned wait_ms);
void gs_sources_tick(void);
void gs_sources_drain(int final);
void gs_sources_after_fork_child(void);

#endif
