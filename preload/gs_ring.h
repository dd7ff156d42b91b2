/* gs_ring.h — the ring registry as the drainer (gs_writer.c) and the
 * lifecycle code see it. Hooks only need gs_emit() from gs_preload.h.
 *
 * Must never: be used by a hook; gs_ring_recycle only by the lock holder.
 */
#ifndef GS_RING_H
#define GS_RING_H

#include <stdint.h>

#include "gs_live.h"

/* RATIONALE: 4096 recording threads is far beyond a data loader's; threads
 * past it drop and count every event. */
#define GS_RING_MAX 4096u

/* Ring capacity: events rounded up to a power of two (64 .. 2^24). */
int gs_rings_init(uint64_t events);
/* Records a ring holds (GPUSTARVE_RING_EVENTS rounded up). */
uint64_t gs_ring_capacity(void);
uint32_t gs_ring_count(void);
gs_ring *gs_ring_at(uint32_t i); /* NULL while a slot is being published */
uint64_t gs_ring_dropped_noring(void);
/* Drainer: a dead, empty ring goes back to the free pool. */
void gs_ring_recycle(gs_ring *r);
/* Fork child: drop the forking thread's inherited events (the parent writes
 * them) and forget every other thread's ring. */
void gs_rings_after_fork_child(void);

#endif
