/* gs_ring.c — per-thread event rings and their registry.
 *
 * Responsible for: giving each recording thread a single-producer /
 * single-consumer ring of gs_rec (a slot of the live file when one is
 * allocated, so that the ring survives the process; else mmap'd anonymous on
 * the thread's first event), registered in a global lock-free array, the
 * slow path of gs_emit (attach, full ring: drop and count), marking a ring
 * dead when its thread exits (pthread key destructor) so the drainer can
 * empty and recycle it, and forgetting other threads' rings in a fork child.
 *
 * Must never: block or wait for the drainer, lock, or allocate except the
 * one mmap of a thread's first event; write to a ring of the parent's live
 * file from a fork child. The consumer side (tail) is touched only by
 * whoever holds the output lock (gs_writer.c).
 */
#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_livefile.h"
#include "gs_preload.h"
#include "gs_ring.h"

__thread gs_ring *gs_t_ring GS_TLS_IE;
__thread int gs_t_depth GS_TLS_IE;
static __thread int t_exiting GS_TLS_IE; /* key destructor ran: no new ring */

static gs_ring *_Atomic g_rings[GS_RING_MAX];
static _Atomic uint32_t g_nrings;
static _Atomic uint64_t g_dropped_noring; /* events of threads without a ring */
static uint64_t g_ring_cap = 32768;
static pthread_key_t g_key;
static int g_key_ok;

static void on_thread_exit(void *p)
{
    gs_ring *r = p;
    if (r && r == gs_t_ring) {
        gs_t_ring = NULL;
        t_exiting = 1;
        atomic_store_explicit(&r->state, GS_RING_DEAD, memory_order_release);
        gs_writer_poke();
    }
}

int gs_rings_init(uint64_t events)
{
    uint64_t cap = 64;
    while (cap < events && cap < (1ull << 24))
        cap <<= 1;
    g_ring_cap = cap;
    g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
    return 0;
}

static gs_ring *attach_slot(void);

static size_t ring_bytes(void)
{
    return sizeof(gs_ring) + g_ring_cap * sizeof(gs_rec);
}

static gs_ring *attach(void)
{
    gs_ring *r = attach_slot();
    if (r) {
        /* the live file's first pages, when this thread opened it */
        atomic_store_explicit(&r->own_faults, gs_live_open_faults(r->tid), memory_order_relaxed);
        memset(r->name0, 0, sizeof r->name0);
        prctl(PR_GET_NAME, r->name0, 0, 0, 0);
    }
    return r;
}

/* Take a free ring of the registry: pass 0 only rings in the live file,
 * pass 1 any. */
static gs_ring *reuse(uint32_t n, uint32_t tid, int pass)
{
    for (uint32_t i = 0; i < n && i < GS_RING_MAX; i++) {
        gs_ring *r = atomic_load_explicit(&g_rings[i], memory_order_acquire);
        uint32_t st = GS_RING_FREE;
        if (r && (pass || gs_live_owns(r)) &&
            atomic_load_explicit(&r->state, memory_order_relaxed) == GS_RING_FREE &&
            atomic_compare_exchange_strong_explicit(&r->state, &st, GS_RING_LIVE,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            r->tid = tid;
            r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            if (gs_live_owns(r))
                atomic_store_explicit(&r->map_poke, GS_LIVE_FIRST_POKE, memory_order_relaxed);
            return r;
        }
    }
    return NULL;
}

static gs_ring *attach_slot(void)
{
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    uint32_t n = atomic_load_explicit(&g_nrings, memory_order_acquire);
    gs_ring *had = reuse(n, tid, 0);
    if (had)
        return had;
    if (n >= GS_RING_MAX)
        return reuse(n, tid, 1);
    gs_ring *r = gs_live_ring_capacity() == g_ring_cap ? gs_live_slot() : NULL;
    int in_file = r != NULL;
    if (!r && (had = reuse(n, tid, 1)) != NULL)
        return had;
    if (!r) {
        long p = syscall(SYS_mmap, NULL, ring_bytes(), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == -1)
            return NULL;
        r = (gs_ring *)p;
        /* anonymous memory: its first touches are no file's page I/O */
        atomic_store_explicit(&r->mapped, UINT64_MAX, memory_order_relaxed);
    }
    r->mask = g_ring_cap - 1;
    r->tid = tid;
    if (in_file)
        atomic_store_explicit(&r->map_poke, GS_LIVE_FIRST_POKE, memory_order_relaxed);
    atomic_store_explicit(&r->state, GS_RING_LIVE, memory_order_release);
    uint32_t idx = atomic_fetch_add_explicit(&g_nrings, 1, memory_order_acq_rel);
    if (idx >= GS_RING_MAX) {
        if (in_file)
            atomic_store_explicit(&r->state, GS_RING_FREE, memory_order_release);
        else
            syscall(SYS_munmap, r, ring_bytes());
        return NULL;
    }
    atomic_store_explicit(&g_rings[idx], r, memory_order_release);
    return r;
}

static void emit_slow(const gs_rec *rec)
{
    gs_ring *g = gs_t_ring;
    if (!g) {
        if (!t_exiting)
            g = attach();
        if (!g) {
            atomic_fetch_add_explicit(&g_dropped_noring, 1, memory_order_relaxed);
            return;
        }
        gs_t_ring = g;
        if (g_key_ok)
            pthread_setspecific(g_key, g);
    }
    uint64_t h = atomic_load_explicit(&g->head, memory_order_relaxed);
    g->cached_tail = atomic_load_explicit(&g->tail, memory_order_acquire);
    uint64_t used = h - g->cached_tail;
    if (used > g->mask) {
        /* RATIONALE: one relaxed add on a line only this thread writes. */
        atomic_store_explicit(&g->dropped,
                              atomic_load_explicit(&g->dropped, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return;
    }
    *gs_ring_slot(g, h) = *rec;
    atomic_store_explicit(&g->head, h + 1, memory_order_release);
    if (used + 1 >= (g->mask + 1) / 2)
        gs_writer_poke();
}

/* The read hooks do not save errno around it (preload/hook_io.c): keep it. */
void gs_emit_slow(const gs_rec *rec)
{
    const int e = errno;
    emit_slow(rec);
    errno = e;
}

uint64_t gs_ring_capacity(void)
{
    return g_ring_cap;
}

uint32_t gs_ring_count(void)
{
    uint32_t n = atomic_load_explicit(&g_nrings, memory_order_acquire);
    return n < GS_RING_MAX ? n : GS_RING_MAX;
}

gs_ring *gs_ring_at(uint32_t i)
{
    return atomic_load_explicit(&g_rings[i], memory_order_acquire);
}

uint64_t gs_ring_dropped_noring(void)
{
    return atomic_load_explicit(&g_dropped_noring, memory_order_relaxed);
}

void gs_ring_recycle(gs_ring *r)
{
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
    atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&r->dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&r->map_poke, 0, memory_order_relaxed);
    atomic_store_explicit(&r->own_faults, 0, memory_order_relaxed); /* the next thread's own */
    r->cached_tail = 0;
    r->name_id = 0;
    r->faults = 0;
    r->tid = 0;
    atomic_store_explicit(&r->state, GS_RING_FREE, memory_order_release);
}

void gs_rings_after_fork_child(void)
{
    /* RATIONALE: rings in the live file are the parent's (its file, shared
     * pages): the child forgets them without a single store; anonymous rings
     * are private copies the child may reuse. The forking thread's own
     * undrained records are the parent's to write. */
    uint32_t n = gs_ring_count(), kept = 0;
    gs_ring *mine = gs_t_ring;
    if (mine && gs_live_owns(mine))
        gs_t_ring = NULL; /* attaches a slot of the child's own live file */
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (!r || gs_live_owns(r))
            continue;
        if (r == gs_t_ring) {
            uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
            atomic_store_explicit(&r->tail, h, memory_order_relaxed);
            atomic_store_explicit(&r->dropped, 0, memory_order_relaxed);
            r->cached_tail = h;
            r->tid = (uint32_t)syscall(SYS_gettid);
            r->name_id = 0;
            r->faults = 0;
            atomic_store_explicit(&r->own_faults, 0, memory_order_relaxed); /* the child's count */
        } else if (atomic_load_explicit(&r->state, memory_order_relaxed) != GS_RING_FREE) {
            gs_ring_recycle(r);
        }
        atomic_store_explicit(&g_rings[kept++], r, memory_order_relaxed);
    }
    for (uint32_t i = kept; i < n; i++)
        atomic_store_explicit(&g_rings[i], NULL, memory_order_relaxed);
    atomic_store_explicit(&g_nrings, kept, memory_order_release);
    atomic_store_explicit(&g_dropped_noring, 0, memory_order_relaxed);
}
