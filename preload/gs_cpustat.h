/* gs_cpustat.h — the threads' own clocks (gs_cpustat.c): the sample a
 * thread takes of itself at a batch boundary, and the writer's periodic
 * sample of every thread.
 *
 * Must never: be called outside the nesting guard (gs_cpu_at_marker) or
 * outside the output lock, where the trace file lives (gs_cpu_periodic).
 */
#ifndef GS_CPUSTAT_H
#define GS_CPUSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_trace.h"

/* Read a small /proc file rel (relative to the directory fd dfd, or
 * AT_FDCWD) whole into buf, NUL-terminated, with raw syscalls and no
 * descriptor kept; its length, or -1. */
long gs_proc_read_at(int dfd, const char *rel, char *buf, size_t cap);
/* The same for one thread's file leaf (stat, comm, schedstat, io), read as
 * /proc/<tid>/task/<tid>/<leaf>, never under /proc/self/task (gs_cpustat.c
 * says why). */
long gs_task_read(uint32_t tid, const char *leaf, char *buf, size_t cap);

/* Append a CPU record (source marker) for the calling thread, stamped t0
 * (hook clock), or when t0 is 0 with the time right after its clocks were
 * read; returns the stamp: the marker record the caller appends next has
 * the same. RATIONALE: a thread can be preempted at each of the reads'
 * system call returns; a marker that opens a span (fetch_begin) is stamped
 * before them and one that closes it after, so that the span holds its
 * own markers' cost and any wait they met, as the program's own timing
 * of the call that holds the span does. Inside gs_enter/gs_leave; errno
 * is the caller's to keep. */
uint64_t gs_cpu_at_marker(uint64_t t0);
/* A training thread's own batch making (docs/trace-format.md, "Thread CPU
 * samples"): from its update (a step_end of class optimizer or backward)
 * to its first forward (a fetch_end of class forward), its first
 * GS_PREP_SAMPLED_CUTS CUDA calls carry a marker-source sample at both
 * ends, so the analyzer measures the span's pieces between them. on: 1 at
 * the update, 0 at the forward (and in a forked child). */
void gs_cpu_prep_arm(int on);
/* A CUDA call's start stamp: when the thread is armed, after a sample of
 * its clocks (the piece before the call ends there); else gs_now(). */
uint64_t gs_cpu_cut_begin(void);
/* The call's end stamp: gs_now(), then a sample stamped with it when its
 * begin took one (the next piece starts there). */
uint64_t gs_cpu_cut_end(void);
/* Where the periodic samples go: the writer's gs_put_event (output lock
 * held), an event of thread tid. */
typedef void (*gs_cpu_put_fn)(uint32_t tid, const gs_event *ev);
/* Put a CPU record (source periodic) for every thread of the process but
 * the collector's own, at most every 50 ms, and a HOST_CPU record of the
 * machine's CPU time at most every 200 ms, through put; now is
 * CLOCK_MONOTONIC ns. */
void gs_cpu_periodic(uint64_t now, gs_cpu_put_fn put);
/* 1 when gs_cpu_periodic(now) would sample (the drain reads its threads'
 * /proc stat files only then: docs/performance.md). */
int gs_cpu_periodic_due(uint64_t now);
/* The next gs_cpu_periodic samples whatever the time since the last (the
 * final drain of a process: a short-lived worker still gets two samples). */
void gs_cpu_periodic_force(void);

#endif
