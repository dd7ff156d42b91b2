/* gs_pinned.h — the registry of pinned (page-locked) host memory the CUDA
 * hooks saw allocated or registered (gs_pinned.c), asked whether a copy's
 * host pointer is pinned.
 *
 * Must never: make a lookup wait (lock-free; writers take a short lock).
 */
#ifndef GS_PINNED_H
#define GS_PINNED_H

#include <stdint.h>

enum { GS_PIN_UNKNOWN = 0, GS_PIN_PAGEABLE = 1, GS_PIN_PINNED = 2 };

/* Classify a host pointer: GS_PIN_PINNED when it lies in a range registered
 * with gs_pinned_add (and *start, *end, when not NULL, hold that range),
 * GS_PIN_PAGEABLE when not, GS_PIN_UNKNOWN when writers kept changing the
 * registry while we looked. Lock-free; never waits. */
int gs_pinned_lookup(const void *p, uint64_t *start, uint64_t *end);
/* Record [p, p+len) as pinned (replaces overlapping ranges); 0, or -1 when
 * the registry is full or the range is empty. Takes a short writer lock. */
int gs_pinned_add(const void *p, uint64_t len);
/* Forget the range that starts at p; 0 (and *len) or -1 when unknown. */
int gs_pinned_remove(const void *p, uint64_t *len);
uint32_t gs_pinned_count(void);
void gs_pinned_after_fork_child(void);

#endif
