/* gs_writer.h — the background writer and everything that holds the output
 * lock (gs_writer.c): draining the rings into frames, records made outside
 * the rings, the writer thread.
 *
 * Must never: be called from a hook (hooks only wake the writer:
 * gs_writer_poke, gs_preload.h and gs_wake.c).
 */
#ifndef GS_WRITER_H
#define GS_WRITER_H

#include <stdint.h>

#include "gs_clock.h"
#include "gs_trace.h"

int gs_writer_init(void);
int gs_writer_start(void);
/* Blocks of the live file for ahead more threads' rings, now (output lock
 * taken): a process whose threads start late starts several at once. */
void gs_writer_prepare_threads(uint32_t ahead);
/* Wait up to ms ms until the newest writer thread runs its own code. Fork
 * calls it first: a thread still starting may be inside the allocator (a
 * sanitizer runtime allocates there), and a child must not inherit that
 * allocator's lock taken. */
void gs_writer_wait_started(unsigned ms);
void gs_writer_stop(void);
void gs_writer_after_fork_child(void);
/* A GPU source started (its tick and drain call a library that may use the
 * program's descriptors): the writer runs in the program's descriptor table
 * from now on. Call from a thread of the program's table. */
void gs_writer_share_table(void);
/* The output lock: whoever writes to the trace file or drains the rings
 * holds it (the writer, exit paths, exec and fork; never a hook). */
void gs_out_lock(void);
/* Lock with a bounded wait; 0 when not taken (held too long or by us). */
int gs_out_trylock_for(unsigned ms);
void gs_out_unlock(void);
/* Drain every ring into frames and write them (lock held). final: write a
 * DROPS record even when the counts did not change. */
void gs_drain_locked(int final);
/* 1 while no GPU source has started and the writer runs in a descriptor
 * table of its own: a whole drain may then run on the file thread
 * (gs_out_run), the source's calls need no other thread. */
int gs_writer_alone(void);
/* After the EXIT record: the writer writes nothing more. */
void gs_writer_set_final(void);
/* Events not written because output failed, so far. */
uint64_t gs_writer_lost(void);
/* The hook clock's calibration (output lock held, or before the writer). */
const gs_calib *gs_writer_calib(void);
int gs_writer_is_final(void);
/* Encode one event of thread tid into the pending frame (lock held);
 * device records use tid 0. */
void gs_put_event(uint32_t tid, const gs_event *ev);
/* Compress and write the pending frame (lock held). */
void gs_frame_flush_locked(void);

#endif
