/* gs_stacks.h — sampled call stacks for the I/O and CUDA copy hooks
 * (GPUSTARVE_STACKS=1), and the process's executable mappings that let the
 * analyzer symbolise them offline.
 *
 * Responsible for: deciding per call whether to unwind (first N calls of
 * each caller address, then 1 in M), unwinding (libunwind, local, bounded
 * depth), interning frame arrays into process-wide stack ids; for the
 * writer: the frames of an id, MAPPING records for the executable mappings
 * the stacks point into, the copy of Python's perf map at exit.
 *
 * Must never: allocate, lock or block on a hook's path (libunwind's
 * per-thread trace cache is mmap'd once per thread, at its first unwind, as
 * the ring is at its first event); be called with the guard clear.
 */
#ifndef GS_STACKS_H
#define GS_STACKS_H

#include <stdint.h>

#include "gs_preload.h"

/* gs_rec.stack: bits 0-14 the stack id, bit 15 set when the event is a
 * 1-in-M sample standing for M calls (only for callers beyond the site
 * table); otherwise the event stands for itself. */
#define GS_STACK_ID_MASK 0x7fffu
#define GS_STACK_SAMPLED 0x8000u
#define GS_STACK_IDS_MAX GS_STACK_ID_MASK /* ids 1..32767 per process image */

extern GS_HIDDEN int gs_stacks_on; /* set once at start-up; read by every hook */

/* The caller of a hook: its return address. Only valid in the hook itself
 * (or code inlined into it). */
#define GS_CALLER() __builtin_return_address(0)

/* Keeps errno. */
uint16_t gs_stack_slow(const void *caller);

/* The stack field for a record made by a hook called from `caller`: 0 when
 * stacks are off; the stack unwound now (first N calls of the caller, then
 * 1 in M), else the caller's last unwound stack. Guard held. */
static inline uint16_t gs_stack_take(const void *caller)
{
    if (GS_LIKELY(!gs_stacks_on))
        return 0;
    return gs_stack_slow(caller);
}

/* Start-up (outside any hook, guard held): take GPUSTARVE_STACK* as
 * gs_config.c read them, bring up libunwind and the tables. 0, or -1
 * (stacks stay off). */
int gs_stacks_init(void);
/* GPUSTARVE_STACK_EVERY: what a sampled event stands for. */
uint32_t gs_stacks_every(void);

/* ---- writer side (output lock held) ---- */

/* Frames (innermost first) of stack id; NULL when unknown. */
const uint64_t *gs_stack_frames(uint32_t id, uint32_t *n);
/* Before a STACK record is written: make sure the file has MAPPING records
 * for every executable mapping its frames point into (re-reading
 * /proc/self/maps when a frame is in no known mapping or objects were loaded
 * or unloaded since the last read). Writes them with put. */
void gs_maps_cover(const uint64_t *frames, uint32_t n, void (*put)(const gs_event *ev));
/* Fork child: its new file must define every mapping again. */
void gs_stacks_after_fork_child(void);
/* Copy /tmp/perf-<pid>.map (Python's perf map) next to the trace file as
 * <trace>.perfmap; no-op when stacks are off or there is none. */
void gs_perfmap_copy(const char *trace_path);

#endif
