/* gs_sink.c — the sink: what a GPU source calls of the collector
 * (sink/gs_sink.h), each function a thin door onto the collector's own
 * machinery.
 *
 * Responsible for: start-up from a source's entry point, the clock, the
 * nesting guard as hold/release, strings, the warning line and note
 * record, device events into the pending frame, waking and draining the
 * writer. (gs_sink_set_corr is the CUDA hooks': hook_cuda.c.)
 *
 * Must never: hold the output lock when it returns; let a source reach the
 * rings, locks or thread-local state directly.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gs_output.h"
#include "gs_preload.h"
#include "gs_sink.h"
#include "gs_startup.h"
#include "gs_state.h"
#include "gs_strings.h"
#include "gs_writer.h"

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

void gs_sink_put(const gs_event *ev)
{
    gs_put_event(0, ev);
}

void gs_sink_started(void)
{
    gs_start_threads(); /* where they start late: a GPU source needs the writer */
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
