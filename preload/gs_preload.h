/* gs_preload.h — the hook's hot path, shared by every hook file.
 *
 * Responsible for: the fixed-size record a hook appends (gs_rec), the inline
 * path that appends it to the calling thread's ring (gs_emit), the
 * per-thread nesting guard (gs_enter / gs_leave), the hook clock (gs_now),
 * and the few declarations these need inline (their out-of-line slow paths
 * live in gs_ring.c, gs_wake.c, gs_startup.c and gs_clock.c; the words
 * they read in gs_ring.c, gs_state.c and gs_clock.c). Every other
 * module of preload/ declares its functions in its own header.
 *
 * Must never: allocate, lock, or make a system call on the hot path (the
 * first event of a thread and a full ring take the out-of-line slow path);
 * include analyzer code; declare anything a hook does not need inline.
 */
#ifndef GS_PRELOAD_H
#define GS_PRELOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "gs_format.h"
#include "gs_live.h"
#include "gs_trace.h"

#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GS_EXPORT __attribute__((visibility("default")))
#define GS_TLS_IE __attribute__((tls_model("initial-exec")))
/* For the collector's own data that the hooks read: defined in this library
 * (hidden by -fvisibility=hidden), and declared so, so that a hook loads it
 * with one instruction relative to the code instead of first loading its
 * address from the GOT (docs/performance.md, "The hook's path"). */
#define GS_HIDDEN __attribute__((visibility("hidden")))

/* ---- the record a hook appends and the per-thread ring ------------------ */

/* gs_rec (64 bytes, one cache line) and gs_ring are defined with the live
 * file's layout (trace/gs_live.h): a thread's ring may sit in the run
 * directory's live file, so that what it holds survives the process. */

/* A record with the defaults of gs_event_clear: fd -1, offset -1. */
#define GS_REC_INIT(k, t0) {.kind = (k), .fd = -1, .offset = -1, .ts = (t0)}

/* gs_rec has no dev/stream/corr fields (gs_event has): the CUDA and NVTX
 * kinds park them in fields their kind does not carry; gs_rec_to_event
 * (trace/gs_live.c) lists them and moves them back. */

/* The calling thread's ring (NULL until its first event) and its nesting
 * depth (gs_ring.c). */
extern __thread gs_ring *gs_t_ring GS_TLS_IE;
extern __thread int gs_t_depth GS_TLS_IE;
extern GS_HIDDEN _Atomic int gs_on; /* 1 while hooks record (gs_state.c) */
/* 1 once the process said it is a loader worker (gpustarve_role): its reads
 * of regular files then carry their file position (gs_marker.c, hook_io.c) */
extern GS_HIDDEN _Atomic int gs_read_pos;

/* Slow path of gs_emit (gs_ring.c): attach a ring to the thread, or refresh
 * the cached tail and drop-and-count when the ring is really full. Keeps
 * errno. */
void gs_emit_slow(const gs_rec *r);
/* The calling thread is about to write slot, the first record of a page of its
 * ring g: when the collector has not mapped that page, counted as a first touch
 * the thread takes (gs_livefile.c). Nothing for a ring outside the live file. */
void gs_live_first_touch(gs_ring *g, const gs_rec *slot);
/* Wake the writer (gs_wake.c; one futex wake). Keeps errno. */
void gs_writer_poke(void);
/* Wake the writer to map more of a ring's slot (gs_wake.c): nothing while
 * the collector's threads have not started. Keeps errno. */
void gs_writer_poke_map(void);

/* Record h's slot of the calling thread's ring g, which it is about to write. */
static inline gs_rec *gs_ring_slot(gs_ring *g, uint64_t h)
{
    gs_rec *s = &g->ev[h & g->mask];
    if (GS_UNLIKELY(((uintptr_t)s & 4095u) == 0))
        gs_live_first_touch(g, s); /* a page's first record: maybe its first touch */
    return s;
}

/* The slot the calling thread's next record goes to, with *gp its ring and
 * *hp its head; NULL when the thread has no ring yet or the ring is full
 * (then the record goes to gs_emit_slow). The caller writes every field of
 * the slot, then calls gs_emit_publish.
 * RATIONALE: a hook that writes its fields straight into the slot stores each
 * once; one that builds a gs_rec on its stack and copies it stores them twice
 * and reloads them in 16-byte pieces the narrower stores cannot forward
 * (docs/performance.md, "The hook's path"). */
static inline gs_rec *gs_emit_slot(gs_ring **gp, uint64_t *hp)
{
    gs_ring *g = gs_t_ring;
    if (GS_UNLIKELY(!g))
        return NULL;
    const uint64_t h = atomic_load_explicit(&g->head, memory_order_relaxed);
    if (GS_UNLIKELY(h - g->cached_tail > g->mask))
        return NULL;
    *gp = g;
    *hp = h;
    return gs_ring_slot(g, h);
}

/* The slot gs_emit_slot gave is filled: hand it to the writer. */
static inline void gs_emit_publish(gs_ring *g, uint64_t h)
{
    atomic_store_explicit(&g->head, h + 1, memory_order_release);
    if (GS_UNLIKELY(h + 1 - g->cached_tail == (g->mask + 1) / 2))
        gs_writer_poke();
    if (GS_UNLIKELY(h + 1 == atomic_load_explicit(&g->map_poke, memory_order_relaxed)))
        gs_writer_poke_map();
}

/* Append one record to the calling thread's ring. Never blocks, never
 * allocates after the thread's first event; a full ring drops and counts. */
static inline void gs_emit(const gs_rec *r)
{
    gs_ring *g;
    uint64_t h;
    gs_rec *s = gs_emit_slot(&g, &h);
    if (GS_UNLIKELY(!s)) {
        gs_emit_slow(r);
        return;
    }
    *s = *r;
    gs_emit_publish(g, h);
}

/* ---- nesting guard ---------------------------------------------------------- */

/* Start the collector if it has not started (gs_startup.c); 1 when the
 * caller should record (guard now held). */
int gs_enter_slow(void);

/* The collector's threads, where they start late (docs/collector-safety.md,
 * "Threads started late"): started now, once (gs_startup.c). Only from a
 * call a signal handler may not make: pthread_create, the markers, NVTX, a
 * GPU source's start, and gs_safe_point's hooks. */
void gs_start_threads(void);
extern _Atomic int gs_threads_wanted; /* gs_wake.c */

/* A safe point (mmap, munmap, the pread family, stdio): the threads start
 * here once a poke has wanted them (a ring half full), outside the
 * collector's own calls. */
static inline void gs_safe_point(void)
{
    if (GS_UNLIKELY(atomic_load_explicit(&gs_threads_wanted, memory_order_relaxed)) &&
        !gs_t_depth)
        gs_start_threads();
}

/* gs_start_threads where the calling thread blocks no signal: in a signal
 * handler the signal it handles is blocked (gs_startup.c). */
void gs_start_threads_unmasked(void);

/* A call a signal handler may make (read, open, close): a safe point only
 * where the thread blocks no signal. */
static inline void gs_safe_point_unmasked(void)
{
    if (GS_UNLIKELY(atomic_load_explicit(&gs_threads_wanted, memory_order_relaxed)) &&
        !gs_t_depth)
        gs_start_threads_unmasked();
}

/* 1 when the caller should record (guard now held), 0 to pass through. */
static inline int gs_enter(void)
{
    if (gs_t_depth)
        return 0;
    if (GS_UNLIKELY(!atomic_load_explicit(&gs_on, memory_order_acquire)))
        return gs_enter_slow();
    gs_t_depth = 1;
    return 1;
}

static inline void gs_leave(void)
{
    gs_t_depth = 0;
}

/* ---- clock ------------------------------------------------------------------- */

extern GS_HIDDEN int gs_clock_tsc; /* 1: hooks stamp with rdtsc (gs_clock.c) */

static inline uint64_t gs_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Hook timestamp in hook-clock units (converted by the writer). */
static inline uint64_t gs_now(void)
{
#if defined(__x86_64__)
    if (GS_LIKELY(gs_clock_tsc))
        return __rdtsc();
#endif
    return gs_mono_ns();
}

/* ---- a hook's arguments ---------------------------------------------------------- */

/* Hide a pointer's origin from the optimiser so a NULL check on a parameter
 * declared nonnull by libc's headers is not folded away. */
static inline const void *gs_launder(const void *p)
{
    __asm__("" : "+r"(p));
    return p;
}

#endif
