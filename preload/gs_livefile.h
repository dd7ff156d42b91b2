/* gs_livefile.h — the collector's side of the live file (gs_livefile.c;
 * the layout is trace/gs_live.h): ring slots for the threads, the log of
 * interned strings, the calibration and counters a reader needs, how the
 * process ended.
 *
 * Must never: lock or allocate on a hook's path (gs_live_slot and
 * gs_live_log_string take what they need with one compare-and-swap).
 */
#ifndef GS_LIVEFILE_H
#define GS_LIVEFILE_H

#include <stdint.h>

#include "gs_clock.h"
#include "gs_live.h"

/* Create and map <trace>.live for rings of ring_capacity records: 0; 1 when
 * the free space (*avail bytes) allowed fewer ring slots or less string log
 * than asked (gs_space.h; none at all leaves the file its header page and
 * the rings anonymous); -1 when the file system cannot hold one at all
 * (rings stay anonymous). */
int gs_live_open(const char *trace_path, uint32_t exec_seq, uint64_t ring_capacity,
                 const gs_calib *cal, uint64_t *avail);
gs_live_header *gs_live(void);

/* ---- the hooks' side (lock-free) ---- */

/* A ring slot in the live file, or NULL (none allocated, or no live file:
 * the caller maps an anonymous ring). */
gs_ring *gs_live_slot(void);
/* Records a slot holds (the same for every slot); 0 without a live file. */
uint64_t gs_live_ring_capacity(void);
/* 1 when p lies in this process's live file mapping. */
int gs_live_owns(const void *p);
/* Writer, each pass: map the pages of ring r's slot ahead of its head, so that the
 * thread's own stores do not take the first-touch faults (counted as its own page-
 * fault I/O otherwise); nothing for a ring outside the live file. */
void gs_live_keep_ahead(gs_ring *r, uint64_t head);
/* A slot's ring as a thread takes it: map_poke a few records in, inside the
 * page mapped when the slot was set aside, so that the writer maps ahead of
 * a new thread at once rather than at its next flush. */
#define GS_LIVE_FIRST_POKE 32u
/* Writer, each pass: the same for the string log, ahead of what is used. */
void gs_live_keep_log_ahead(void);
/* The major faults thread tid took opening the live file (its header, the
 * first slots' and the log's first pages mapped), once: for the first ring the
 * thread takes, as pages of the live file it touched first (gs_ring.c). 0 for
 * any other thread, and after the first call that returned them. */
uint64_t gs_live_open_faults(uint32_t tid);
/* Log a newly interned string in the live file (best effort), from the thread
 * whose ring is g (NULL: none yet), which counts a page of the log it touches
 * first as its own (gs_ring's own_faults). */
void gs_live_log_string(gs_ring *g, uint32_t id, const char *s, uint32_t len);

/* ---- the writer's side (output lock held) ---- */

/* 1 when spare slots or log need disk blocks allocated. */
int gs_live_needs_blocks(void);
/* What gs_live_alloc_blocks says of the free space: cut 1 when it refused
 * some blocks (gs_space.h), avail the free bytes then; ahead (set by the
 * caller): ring slots to have blocks for past those in use, 0 for the
 * usual few. */
typedef struct gs_live_space {
    int cut;
    uint64_t avail;
    uint32_t ahead;
} gs_live_space;
/* Allocate them, as far as the free space allows; run where the trace file
 * lives (gs_out_run: it opens the live file). arg: NULL or a gs_live_space. */
void gs_live_alloc_blocks(void *arg);
void gs_live_calib(const gs_calib *c);
void gs_live_counts(uint64_t dropped_base, uint64_t lost, uint32_t stack_every);

/* ---- the end ---- */

/* How the process ended (enum gs_live_end); async-signal-safe. */
void gs_live_end(unsigned how, uint32_t status);
/* Everything is in the trace file: the live file goes. */
void gs_live_remove(void);
/* The process ends with events it could not write: the live file becomes
 * its header page alone (the counts), and the blocks set aside for slots
 * and log go back when the process ends. Run where the trace file lives
 * (gs_out_run), arg unused. */
void gs_live_keep_header(void *arg);
/* Tracing stopped before this process recorded anything: the live file
 * goes (unlinked and unmapped), so no reader takes the process for killed. */
void gs_live_discard(void);
/* Fork child: unmap the parent's live file without touching it. */
void gs_live_after_fork_child(void);

#endif
