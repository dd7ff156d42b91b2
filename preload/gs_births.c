/* gs_births.c — the threads this process saw begin (gs_births.h).
 *
 * Responsible for: a fixed table of (tid, time before the thread existed),
 * filled by the thread that starts a thread (hook_thread.c) and by a forked
 * child for its own first thread (gs_lifecycle.c), read once per tid by the
 * writer's periodic sample (gs_cpustat.c).
 *
 * RATIONALE: a thread's counters are 0 when the kernel makes it (a new
 * task's CPU time, run-queue delay, fault counts and I/O accounting start
 * at 0, a forked child's first thread included), so a time taken before
 * its creation is a sample of it that costs no read of /proc. Without one,
 * a thread is measured only from the writer's first sample of it: a
 * forked worker's writer then had to sample at once as it started, on the
 * other CPU, while the worker copied its parent's pages, and each of those
 * copy-on-write faults interrupted that CPU to flush its TLB
 * (docs/performance.md, "A forked Python worker").
 *
 * Must never: allocate, lock or make a system call.
 */
#include "gs_births.h"

#include <stdatomic.h>

#define BIRTH_CAP 512u /* a power of two */
#define TOMB 0xffffffffu /* a slot whose birth the writer took */

static _Atomic uint32_t g_tid[BIRTH_CAP];
static _Atomic uint64_t g_before[BIRTH_CAP]; /* 0: not written yet, or taken */
static _Atomic int g_forked;

static uint32_t home(uint32_t tid)
{
    return (tid * 2654435761u) & (BIRTH_CAP - 1);
}

void gs_birth_add(uint32_t tid, uint64_t before_ns)
{
    if (!tid || tid == TOMB || !before_ns)
        return;
    uint32_t h = home(tid), free_slot = BIRTH_CAP;
    for (uint32_t n = 0; n < BIRTH_CAP; n++, h = (h + 1) & (BIRTH_CAP - 1)) {
        uint32_t t = atomic_load(&g_tid[h]);
        if (t == tid) {
            atomic_store(&g_before[h], before_ns);
            return;
        }
        if (t == TOMB && free_slot == BIRTH_CAP)
            free_slot = h;
        if (t == 0) {
            if (free_slot == BIRTH_CAP)
                free_slot = h;
            break;
        }
    }
    if (free_slot == BIRTH_CAP)
        return; /* full: this thread is measured from its first sample */
    uint32_t expect = atomic_load(&g_tid[free_slot]);
    if ((expect == 0 || expect == TOMB) &&
        atomic_compare_exchange_strong(&g_tid[free_slot], &expect, tid))
        atomic_store(&g_before[free_slot], before_ns);
    /* else another thread took the slot at once: dropped, as when full */
}

int gs_birth_take(uint32_t tid, uint64_t *before_ns)
{
    uint32_t h = home(tid);
    for (uint32_t n = 0; n < BIRTH_CAP; n++, h = (h + 1) & (BIRTH_CAP - 1)) {
        uint32_t t = atomic_load(&g_tid[h]);
        if (t == 0)
            return 0;
        if (t != tid)
            continue;
        const uint64_t b = atomic_exchange(&g_before[h], 0);
        atomic_store(&g_tid[h], TOMB);
        if (!b)
            return 0;
        *before_ns = b;
        return 1;
    }
    return 0;
}

void gs_births_after_fork_child(uint32_t tid, uint64_t before_ns)
{
    /* only the slots in use are written: a page the child never writes
     * stays shared with its parent */
    for (uint32_t i = 0; i < BIRTH_CAP; i++) {
        if (atomic_load_explicit(&g_tid[i], memory_order_relaxed))
            atomic_store_explicit(&g_tid[i], 0, memory_order_relaxed);
        if (atomic_load_explicit(&g_before[i], memory_order_relaxed))
            atomic_store_explicit(&g_before[i], 0, memory_order_relaxed);
    }
    atomic_store(&g_forked, 1);
    gs_birth_add(tid, before_ns);
}

int gs_births_forked(void)
{
    return atomic_load(&g_forked);
}
