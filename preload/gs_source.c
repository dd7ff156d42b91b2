/* gs_source.c — the collector's side of the seam with GPU sources
 * (sink/gs_sink.h): the sources it calls.
 *
 * Responsible for: the table of registered sources (gs_source_register)
 * and the fixed points at which the collector calls them (gs_sources_*:
 * first CUDA call, flush, tick, drain, after fork). What a source calls
 * back, the sink, is gs_sink.c.
 *
 * Must never: be called on a hook's hot path (the first-CUDA-call check is
 * the hook's, once); depend on anything of the collector's but the seam (a
 * source's operations are function pointers it registered).
 */
#include <stdatomic.h>
#include <stddef.h>

#include "gs_sink.h"
#include "gs_source.h"

static const gs_source_ops *_Atomic g_sources[GS_SOURCES_MAX];

int gs_source_register(const gs_source_ops *ops)
{
    for (unsigned i = 0; i < GS_SOURCES_MAX; i++) {
        const gs_source_ops *none = NULL;
        if (atomic_compare_exchange_strong(&g_sources[i], &none, ops))
            return 0;
        if (none == ops)
            return 0; /* registered already */
    }
    return -1;
}

/* ---- the fixed points ----------------------------------------------------------- */

/* RATIONALE: one macro for the five walks over the table: each is "for every
 * registered source that has this operation, call it". It hides no return. */
#define FOR_SOURCES(op, ...)                                                     \
    for (unsigned i_ = 0; i_ < GS_SOURCES_MAX; i_++) {                           \
        const gs_source_ops *s_ = atomic_load(&g_sources[i_]);                   \
        if (s_ && s_->op)                                                        \
            s_->op(__VA_ARGS__);                                                 \
    }

void gs_sources_first_cuda_call(void)
{
    FOR_SOURCES(first_cuda_call)
}

void gs_sources_flush(enum gs_flush_reason why, unsigned wait_ms)
{
    FOR_SOURCES(flush, why, wait_ms)
}

void gs_sources_tick(void)
{
    FOR_SOURCES(tick)
}

void gs_sources_drain(int final)
{
    FOR_SOURCES(drain, final)
}

void gs_sources_after_fork_child(void)
{
    FOR_SOURCES(after_fork_child)
}
