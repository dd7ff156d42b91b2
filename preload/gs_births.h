/* gs_births.h — the threads this process saw begin (gs_births.c): for each,
 * a CLOCK_MONOTONIC time before it existed, when each of its own clocks
 * (CPU time, run-queue delay, faults, storage reads) was therefore 0. The
 * writer's periodic sample writes it as the thread's first CPU record
 * (source birth, docs/trace-format.md "Thread CPU samples"), so a thread
 * the writer first sees late is still measured from its start.
 *
 * Must never: allocate, lock or make a system call (gs_birth_add runs in
 * the program's pthread_create and in a forked child before it returns).
 */
#ifndef GS_BIRTHS_H
#define GS_BIRTHS_H

#include <stdint.h>

/* Thread tid began after before_ns (any thread; a later birth of the same
 * tid replaces the earlier). Dropped when the table is full. */
void gs_birth_add(uint32_t tid, uint64_t before_ns);
/* The writer (output lock held): 1 and *before_ns when a birth of tid is
 * known, then forgotten; else 0. */
int gs_birth_take(uint32_t tid, uint64_t *before_ns);
/* In a forked child: the parent's births forgotten, the child's one
 * thread born after before_ns (taken in the parent before fork). */
void gs_births_after_fork_child(uint32_t tid, uint64_t before_ns);
/* 1 in a forked child (from gs_births_after_fork_child on): its first
 * thread's birth is known, and every thread it starts with pthread_create
 * joinable has one too. */
int gs_births_forked(void);

#endif
