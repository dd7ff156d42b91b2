/* gs_preload.h — the collector's internal event sink, shared by every file in
 * preload/ (and, later, cupti/ and the CUDA hooks).
 *
 * Responsible for: the fixed-size record a hook appends (gs_rec), the inline
 * hot path that appends it to the calling thread's ring (gs_emit), the
 * per-thread nesting guard (gs_enter / gs_leave), the hook clock (gs_now), the
 * fd-table lookups a hook needs, and the declarations that tie the collector's
 * files together.
 *
 * Must never: allocate, lock, or make a system call on the hot path (the
 * first event of a thread and a full ring take the out-of-line slow path);
 * include analyzer code.
 */
#ifndef GS_PRELOAD_H
#define GS_PRELOAD_H

#include <errno.h>
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

extern __thread gs_ring *gs_t_ring GS_TLS_IE;
/* CUPTI correlation id of the CUDA runtime call the thread is in, when the
 * collector's runtime callback saw it (0 = unknown); hook_cuda.c clears it
 * before a call and records it after. */
extern __thread uint32_t gs_t_cuda_corr GS_TLS_IE;
extern __thread int gs_t_depth GS_TLS_IE;
extern GS_HIDDEN _Atomic int gs_on; /* 1 while hooks record */

/* Records a ring holds (GPUSTARVE_RING_EVENTS rounded up). */
uint64_t gs_ring_capacity(void);
/* A ring slot in the live file (gs_livefile.c), or NULL (none allocated, or
 * no live file: the caller maps an anonymous ring). Lock-free. */
gs_ring *gs_live_slot(void);
/* Records a slot holds (the same for every slot); 0 without a live file. */
uint64_t gs_live_ring_capacity(void);
/* 1 when p lies in this process's live file mapping. */
int gs_live_owns(const void *p);
/* Log a newly interned string in the live file (best effort, lock-free). */
void gs_live_log_string(uint32_t id, const char *s, uint32_t len);

/* Slow path of gs_emit: attach a ring to the thread, or refresh the cached
 * tail and drop-and-count when the ring is really full. Keeps errno. */
void gs_emit_slow(const gs_rec *r);
/* Wake the writer (one futex wake). Keeps errno. */
void gs_writer_poke(void);

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
    return &g->ev[h & g->mask];
}

/* The slot gs_emit_slot gave is filled: hand it to the writer. */
static inline void gs_emit_publish(gs_ring *g, uint64_t h)
{
    atomic_store_explicit(&g->head, h + 1, memory_order_release);
    if (GS_UNLIKELY(h + 1 - g->cached_tail == (g->mask + 1) / 2))
        gs_writer_poke();
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

int gs_enter_slow(void);

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

extern GS_HIDDEN int gs_clock_tsc; /* 1: hooks stamp with rdtsc */

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

/* Calibration between the hook clock and CLOCK_MONOTONIC (writer-owned). */
typedef struct gs_calib {
    uint64_t tsc0, mono0; /* previous pair */
    uint64_t tsc1, mono1; /* latest pair */
    /* (mono1 - mono0) * 2^32 / (tsc1 - tsc0), 0 when unusable: the rate as
     * a multiplier, so that converting a stamp is a multiply and a shift
     * instead of a 128-bit division (docs/performance.md) */
    uint64_t mult;
} gs_calib;

/* Decide the clock (GPUSTARVE_CLOCK, CPU flags); sets gs_clock_tsc. */
void gs_clock_init(const char *mode);
/* Start a calibration at the current instant. */
void gs_calib_start(gs_calib *c);
/* Take a new (tsc, mono) pair; the segment is previous pair -> this pair. */
void gs_calib_point(gs_calib *c);
/* The exact conversions (gs_live_ts / gs_live_dur: what a reader of the
 * live file computes). */
uint64_t gs_calib_ts_exact(const gs_calib *c, uint64_t raw);
uint64_t gs_calib_dur_exact(const gs_calib *c, uint64_t raw);

/* Hook clock -> CLOCK_MONOTONIC ns. Within 2^32 ticks of the segment's
 * start (about a second; the writer takes a pair every flush) a multiply
 * and a shift, at most 1 ns below the exact conversion; else exact. */
static inline uint64_t gs_calib_ts(const gs_calib *c, uint64_t raw)
{
    const uint64_t d = raw - c->tsc0;
    if (GS_LIKELY(c->mult && raw >= c->tsc0 && d < (1ull << 32)))
        return c->mono0 + (uint64_t)(((unsigned __int128)d * c->mult) >> 32);
    return gs_calib_ts_exact(c, raw);
}

static inline uint64_t gs_calib_dur(const gs_calib *c, uint64_t raw)
{
    if (GS_LIKELY(c->mult && raw < (1ull << 32)))
        return (uint64_t)(((unsigned __int128)raw * c->mult) >> 32);
    return gs_calib_dur_exact(c, raw);
}

/* ---- fd table ------------------------------------------------------------------ */

#define GS_FD_MAX (1u << 20)
#define GS_FDW_VALID (1ull << 63)
#define GS_FDW_EPSTREAM (1ull << 62) /* epoll set holds a pipe or socket */
#define GS_FDW_KIND(w) ((unsigned)(((w) >> 32) & 7u))
#define GS_FDW_STR(w) ((uint32_t)(w))

extern GS_HIDDEN _Atomic uint64_t *gs_fdtab;

int gs_fdtab_init(void);
/* Classify an fd seen without an open (real fstat); returns its word. Keeps
 * errno. */
uint64_t gs_fd_classify(int fd);
void gs_fd_set(int fd, uint32_t str, unsigned kind);
/* Forget fd after a close, unless its entry changed since `seen` was read
 * (another thread reopened the number). */
void gs_fd_clear(int fd, uint64_t seen);
void gs_fd_copy(int from, int to);
/* Forget every fd in [first, last] (close_range, closefrom). */
void gs_fd_clear_range(unsigned first, unsigned last);
void gs_fd_mark_epstream(int epfd);
/* Kind of an open fd (one real fstat); GS_FDK_UNKNOWN when not open. */
unsigned gs_fd_kind_of(int fd);

/* fd table word of fd (classified on first use); 0 when out of range/bad. */
static inline uint64_t gs_fd_word(int fd)
{
    if ((unsigned)fd >= GS_FD_MAX)
        return 0;
    uint64_t w = atomic_load_explicit(&gs_fdtab[fd], memory_order_relaxed);
    if (GS_UNLIKELY(!(w & GS_FDW_VALID)))
        w = gs_fd_classify(fd);
    return w;
}

/* Fill r->fd, r->fd_kind and r->str from the fd table; returns the word. */
static inline uint64_t gs_fd_describe(int fd, gs_rec *r)
{
    uint64_t w = gs_fd_word(fd);
    r->fd = fd;
    r->fd_kind = (uint8_t)GS_FDW_KIND(w);
    r->str = GS_FDW_STR(w);
    return w;
}

/* File mmap table: ranges mapped from files, keyed by start address. */
int gs_maptab_init(void);
void gs_map_add(uintptr_t addr, uint64_t len, int fd, uint32_t str, unsigned kind);
/* Remove the range starting at addr; 1 and its fd/path when it was tracked. */
int gs_map_take(uintptr_t addr, int *fd, uint32_t *str, unsigned *kind);

/* ---- pinned host memory (gs_pinned.c) ------------------------------------------- */

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

/* ---- strings --------------------------------------------------------------------- */

int gs_strings_init(void);
/* Intern len bytes (truncated to GS_STRING_MAX); id >= 1, or 0 when full. */
uint32_t gs_str_intern(const char *s, size_t len);
/* Intern a NUL-terminated path; 0 for NULL. */
uint32_t gs_str_path(const char *path);
/* Intern a path relative to dirfd the way openat resolves it. */
uint32_t gs_str_path_at(int dirfd, const char *path);
/* Bytes and length of a string id; NULL when unknown. */
const char *gs_str_get(uint32_t id, uint32_t *len);
/* Largest id handed out so far (ids are 1..n). */
uint32_t gs_str_count(void);
/* Ids are below this bound (a live file's reader holds us to it). */
#define GS_STR_MAX_IDS (1u << 22)
_Static_assert(GS_STR_MAX_IDS <= GS_LIVE_STRING_IDS_MAX, "the reader keeps every logged id");

/* Hide a pointer's origin from the optimiser so a NULL check on a parameter
 * declared nonnull by libc's headers is not folded away. */
static inline const void *gs_launder(const void *p)
{
    __asm__("" : "+r"(p));
    return p;
}

/* Intern path only when the call could have read it (not EFAULT). */
static inline uint32_t gs_str_path_safe(const char *path, long ret, int err)
{
    const char *p = (const char *)gs_launder(path);
    if (!p || (ret < 0 && err == EFAULT))
        return 0;
    return gs_str_path(p);
}

#endif
