/* gs_pinned.c — the pinned-host-memory registry.
 *
 * Responsible for: remembering every host range the program pinned through
 * the CUDA runtime (cudaHostAlloc, cudaMallocHost, cudaHostRegister) or the
 * driver API (cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister:
 * hook_cudrv.c) until it is released (cudaFreeHost, cudaHostUnregister,
 * cuMemFreeHost, cuMemHostUnregister), so that the copy hooks can say
 * whether a host pointer is pinned or pageable without calling CUDA. (The
 * analyzer checks that word against CUPTI's record of the same copy.)
 *
 * Layout: one sorted array of disjoint [start, end) intervals, read under a
 * sequence lock. Readers never write shared memory and never wait: they
 * retry a bounded number of times while a writer is active and then answer
 * "unknown". Writers (the alloc/free hooks: rare) serialise on a spin lock
 * held only for an insertion or removal (a memmove of the array). The array
 * lives in an mmap'd region that only grows (a bigger copy is published and
 * the old one kept mapped), so a reader that raced a growth reads stale but
 * mapped memory and its sequence check makes it retry.
 *
 * Must never: call CUDA, malloc, or block a reader; free memory a reader may
 * still be reading.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_pinned.h"

typedef struct pin_iv {
    _Atomic uint64_t start;
    _Atomic uint64_t end;
} pin_iv;

/* RATIONALE: 4096 ranges to start (64 KiB); PyTorch's caching host allocator
 * keeps at most a few thousand blocks. Growth doubles, up to 1M ranges; past
 * that new ranges are not recorded (their copies read as pageable). */
#define PIN_CAP0 4096u
#define PIN_CAP_MAX (1u << 20)
/* A reader that meets a writer this many times in a row gives up. */
#define PIN_READ_TRIES 64

static _Atomic uint64_t g_seq;          /* odd while a writer changes the array */
static pin_iv *_Atomic g_iv;            /* current array */
static _Atomic uint32_t g_n;            /* intervals in use */
static uint32_t g_cap;                  /* writer-only */
static atomic_flag g_wlock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t g_overflow;     /* ranges not recorded (array full) */

static void wlock(void)
{
    while (atomic_flag_test_and_set_explicit(&g_wlock, memory_order_acquire))
        syscall(SYS_sched_yield);
}

static void wunlock(void)
{
    atomic_flag_clear_explicit(&g_wlock, memory_order_release);
}

static pin_iv *map_array(uint32_t cap)
{
    long p = syscall(SYS_mmap, NULL, (size_t)cap * sizeof(pin_iv), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == -1 ? NULL : (pin_iv *)p;
}

/* Index of the first interval whose start is > a (0..n). */
static uint32_t upper_bound(const pin_iv *iv, uint32_t n, uint64_t a)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (atomic_load_explicit(&iv[mid].start, memory_order_relaxed) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int gs_pinned_lookup(const void *p, uint64_t *start, uint64_t *end)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    for (int tries = 0; tries < PIN_READ_TRIES; tries++) {
        uint64_t s1 = atomic_load_explicit(&g_seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        pin_iv *iv = atomic_load_explicit(&g_iv, memory_order_acquire);
        uint32_t n = atomic_load_explicit(&g_n, memory_order_relaxed);
        int found = 0;
        uint64_t s = 0, e = 0;
        if (iv && n) {
            uint32_t i = upper_bound(iv, n, a);
            if (i > 0) {
                s = atomic_load_explicit(&iv[i - 1].start, memory_order_relaxed);
                e = atomic_load_explicit(&iv[i - 1].end, memory_order_relaxed);
                found = a >= s && a < e;
            }
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&g_seq, memory_order_relaxed) != s1)
            continue;
        if (found) {
            if (start)
                *start = s;
            if (end)
                *end = e;
            return GS_PIN_PINNED;
        }
        return GS_PIN_PAGEABLE;
    }
    return GS_PIN_UNKNOWN;
}

/* Writer side: enter/leave the odd phase of the sequence lock. */
static void w_begin(void)
{
    atomic_store_explicit(&g_seq, atomic_load_explicit(&g_seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void w_end(void)
{
    atomic_store_explicit(&g_seq, atomic_load_explicit(&g_seq, memory_order_relaxed) + 1,
                          memory_order_release);
}

static void iv_copy(pin_iv *dst, const pin_iv *src)
{
    atomic_store_explicit(&dst->start, atomic_load_explicit(&src->start, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&dst->end, atomic_load_explicit(&src->end, memory_order_relaxed),
                          memory_order_relaxed);
}

int gs_pinned_add(const void *p, uint64_t len)
{
    uint64_t s = (uint64_t)(uintptr_t)p;
    if (!p || len == 0 || s + len < s)
        return -1;
    uint64_t e = s + len;
    wlock();
    pin_iv *iv = atomic_load_explicit(&g_iv, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&g_n, memory_order_relaxed);
    if (!iv || n == g_cap) {
        uint32_t cap = g_cap ? g_cap * 2 : PIN_CAP0;
        pin_iv *nv = cap <= PIN_CAP_MAX ? map_array(cap) : NULL;
        if (!nv) {
            wunlock();
            atomic_fetch_add_explicit(&g_overflow, 1, memory_order_relaxed);
            return -1;
        }
        for (uint32_t i = 0; i < n; i++)
            iv_copy(&nv[i], &iv[i]);
        /* RATIONALE: the old array stays mapped: a reader may be in it. */
        atomic_store_explicit(&g_iv, nv, memory_order_release);
        g_cap = cap;
        iv = nv;
    }
    uint32_t i = upper_bound(iv, n, s);
    w_begin();
    /* A new range replaces whatever overlapping ranges we still hold (their
     * release was not seen: e.g. freed through the driver API). */
    uint32_t lo = i;
    while (lo > 0 && atomic_load_explicit(&iv[lo - 1].end, memory_order_relaxed) > s)
        lo--;
    uint32_t hi = i;
    while (hi < n && atomic_load_explicit(&iv[hi].start, memory_order_relaxed) < e)
        hi++;
    /* [lo, hi) overlap and are replaced by one interval */
    uint32_t nn = n - (hi - lo) + 1;
    if (hi - lo != 1) {
        if (hi - lo == 0) {
            for (uint32_t k = n; k > lo; k--)
                iv_copy(&iv[k], &iv[k - 1]);
        } else {
            for (uint32_t k = hi; k < n; k++)
                iv_copy(&iv[k - (hi - lo) + 1], &iv[k]);
        }
    }
    atomic_store_explicit(&iv[lo].start, s, memory_order_relaxed);
    atomic_store_explicit(&iv[lo].end, e, memory_order_relaxed);
    atomic_store_explicit(&g_n, nn, memory_order_relaxed);
    w_end();
    wunlock();
    return 0;
}

int gs_pinned_remove(const void *p, uint64_t *len)
{
    uint64_t s = (uint64_t)(uintptr_t)p;
    wlock();
    pin_iv *iv = atomic_load_explicit(&g_iv, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&g_n, memory_order_relaxed);
    uint32_t i = iv ? upper_bound(iv, n, s) : 0;
    if (i == 0 || atomic_load_explicit(&iv[i - 1].start, memory_order_relaxed) != s) {
        wunlock();
        return -1;
    }
    i--;
    if (len)
        *len = atomic_load_explicit(&iv[i].end, memory_order_relaxed) - s;
    w_begin();
    for (uint32_t k = i + 1; k < n; k++)
        iv_copy(&iv[k - 1], &iv[k]);
    atomic_store_explicit(&g_n, n - 1, memory_order_relaxed);
    w_end();
    wunlock();
    return 0;
}

uint32_t gs_pinned_count(void)
{
    return atomic_load_explicit(&g_n, memory_order_relaxed);
}

void gs_pinned_after_fork_child(void)
{
    /* Another thread of the parent may have held the writer lock or been
     * between w_begin and w_end: the child has only this thread. */
    atomic_flag_clear(&g_wlock);
    uint64_t s = atomic_load(&g_seq);
    if (s & 1)
        atomic_store(&g_seq, s + 1);
}
