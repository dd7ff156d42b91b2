/* an_events.h — the pass over one trace file, private to the analyzer's
 * loading: an_load.c reads the file and hands each decoded batch here;
 * an_events.c decides what every event counts for (an_run.h's counters,
 * timeline intervals, step-boundary candidates).
 *
 * Must never: be used outside an_load.c (the rest of the analyzer reads the
 * model, an_run.h, not events).
 */
#ifndef AN_EVENTS_H
#define AN_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "load/an_run.h"
#include "gs_trace.h"

typedef struct an_pass an_pass;

/* A pass filling process p (its header fields already set) from reader r
 * (strings are looked up there). Allocates; NULL when out of memory. */
an_pass *an_pass_new(an_proc *p, const an_opts *o, struct gs_reader *r);
/* Hand every swept piece of thread tid's timeline to fn (a second pass's
 * hooks); call before the first batch. */
void an_pass_watch(an_pass *c, uint32_t tid, an_piece_fn fn, void *ctx);
/* Hand hk->on_event (context hctx) each event that hk's filter
 * (event_kinds, small_bytes) lets through, in file order, just before the
 * pass takes it; call before the first batch. */
void an_pass_hook(an_pass *c, const an_hooks *hk, void *hctx);
/* Take one decoded batch, in file order. */
void an_pass_events(an_pass *c, const gs_event *ev, size_t n);
/* End of the file: ranges still open end at the last event; the timeline is
 * swept to its end and its totals stored in the process. */
void an_pass_finish(an_pass *c);
void an_pass_free(an_pass *c);

#endif
