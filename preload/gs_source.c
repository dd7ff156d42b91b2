/* gs_source.c — the collector's side of the seam with GPU sources
 * (sink/gs_sink.h).
 *
 * Responsible for: the table of registered sources and the fixed points at
 * which the collector calls them (gs_sources_*: first CUDA call, flush,
 * tick, drain, after fork); the sink functions a source writes through,
 * each a thin door onto the collector's own machinery (strings, the
 * nesting guard, the writer, the warning line and note record).
 *
 * Must never: be called on a hook's hot path (the first-CUDA-call check is
 * the hook's, once); hold the output lock while calling a source's flush or
 * tick; let a source reach the rings, locks or thread-local state directly.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gs_collector.h"
#include "gs_preload.h"
#include "gs_sink.h"

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

/* ---- the sink ----------------------------------------------------------------- */

void gs_sink_init(void)
{
    gs_init();
}

int gs_sink_active(void)
{
    return atomic_load(&gs_on);
}

uint64_t gs_sink_now(void)
{
    return gs_mono_ns();
}

gs_sink_held gs_sink_hold(void)
{
    gs_sink_held h = {gs_t_depth, errno};
    gs_t_depth = 1;
    return h;
}

void gs_sink_release(gs_sink_held h)
{
    gs_t_depth = h.depth;
    errno = h.err;
}

void gs_sink_warn(enum gs_note_code code, const char *text)
{
    char line[GS_STRING_MAX + 64];
    int n = snprintf(line, sizeof line, "gpustarve: warning: %s\n", text);
    if (n > 0)
        gs_out_say(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    if (!atomic_load(&gs_on))
        return;
    gs_sink_held h = gs_sink_hold();
    gs_rec r = GS_REC_INIT(GS_K_NOTE, gs_now());
    r.str = gs_str_intern(text, strlen(text));
    r.aux = (uint64_t)code;
    gs_emit(&r);
    gs_sink_release(h);
}

uint32_t gs_sink_intern(const char *s, size_t len)
{
    return gs_str_intern(s, len);
}

const char *gs_sink_string(uint32_t id, uint32_t *len)
{
    return gs_str_get(id, len);
}

void gs_sink_set_corr(uint32_t corr)
{
    gs_t_cuda_corr = corr;
}

void gs_sink_put(const gs_event *ev)
{
    gs_put_event(0, ev);
}

void gs_sink_started(void)
{
    gs_writer_share_table();
}

void gs_sink_wake(void)
{
    gs_writer_poke();
}

void gs_sink_drain_now(void)
{
    gs_sink_held h = gs_sink_hold();
    if (atomic_load(&gs_on) && !gs_in_foreign_child() && gs_out_trylock_for(2000)) {
        if (!gs_writer_is_final())
            gs_drain_locked(0);
        gs_out_unlock();
    }
    gs_sink_release(h);
}
